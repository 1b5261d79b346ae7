"""What a RayJob deletes: its cluster and submitter Job between attempts and on suspend, and what its deletion
strategy says once the job has ended (KubeRay v1.6.1 ``rayjob_controller.go``: ``deleteClusterResources``,
``deleteSubmitterJob``, ``handleDeletionRules``, ``handleLegacyDeletionPolicy``, ``handleShutdownAfterJobFinishes``,
``executeDeletionPolicy``).

Once a job is ``Complete`` or ``Failed``:

* ``clusterSelector`` mode deletes nothing, whatever the spec says (KubeRay accepts DeleteSelf rules there and never
  runs them).
* With the ``RayJobDeletionPolicy`` gate and ``deletionStrategy.deletionRules``: every rule whose condition matches
  the outcome is due ``ttlSeconds`` after ``endTime``; of the rules due and not done yet, the most far-reaching one
  runs (DeleteSelf > DeleteCluster > DeleteWorkers > DeleteNone), and the pass comes back 2 s after the next rule is
  due. DeleteWorkers suspends every worker group of the cluster.
* With the legacy ``onSuccess``/``onFailure``: the policy for SUCCEEDED or FAILED (nothing for any other job status)
  runs ``ttlSecondsAfterFinished`` after ``endTime``.
* Else with ``shutdownAfterJobFinishes``: after ``ttlSecondsAfterFinished`` the cluster is deleted, or the RayJob
  itself with the operator's ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES=true``. The submitter Job is kept, so its logs
  stay readable.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS, RAYJOBS
from raykube.builders import gowrites
from raykube.controllers.base import Result, reported, sent
from raykube.controllers.rayjob.context import JobContext, WithDeps
from raykube.kube import objects, times
from raykube.kube.errors import ApiError
from raykube.kube.resources import JOBS

DELETE_SELF = "DeleteSelf"
DELETE_CLUSTER = "DeleteCluster"
DELETE_WORKERS = "DeleteWorkers"
DELETE_NONE = "DeleteNone"
_IMPACT = {DELETE_SELF: 4, DELETE_CLUSTER: 3, DELETE_WORKERS: 2, DELETE_NONE: 1}
_SLACK = 2.0  # KubeRay requeues 2 s after the next deletion is due


def _not_found(exc: ApiError) -> bool:
    return exc.not_found


class Cleanup(WithDeps):
    # ------------------------------------------------------------------------------------------------ attempts
    async def delete_cluster(self, ctx: JobContext) -> bool:
        """The job's cluster is gone (True), or its deletion was asked for or is under way (False)."""
        if ctx.selector_mode:
            return True
        name = ctx.cluster_name
        cluster = self.cache.get(RAYCLUSTERS, ctx.namespace, name) if name else None
        if cluster is None:
            return True
        if objects.terminating(cluster):
            return False
        went = await reported(
            self.recorder,
            ctx.obj,
            "Delete",
            sent(self.api.delete(RAYCLUSTERS, name, ctx.namespace)),
            done=(c.EVENT_DELETED_RAYCLUSTER, f"Deleted cluster {ctx.namespace}/{name}"),
            failed=(c.EVENT_FAILED_TO_DELETE_RAYCLUSTER, f"Failed to delete cluster {ctx.namespace}/{name}"),
            sep=": ",
            tolerate=_not_found,
        )
        return went is None  # None: it was already gone

    async def delete_submitter_job(self, ctx: JobContext) -> bool:
        """The submitter Job ``<rayjob>`` is gone (True), or its deletion is under way (False). HTTPMode and
        SidecarMode have none."""
        if ctx.mode in (c.SUBMISSION_MODE_HTTP, c.SUBMISSION_MODE_SIDECAR):
            return True
        job = self.cache.get(JOBS, ctx.namespace, ctx.name)
        if job is None:
            return True
        if objects.terminating(job):
            return False
        where = f"{ctx.namespace}/{ctx.name}"
        went = await reported(
            self.recorder,
            ctx.obj,
            "Delete",
            sent(self.api.delete(JOBS, ctx.name, ctx.namespace, propagation="Background")),
            done=(c.EVENT_DELETED_RAYJOB_SUBMITTER, f"Deleted submitter K8s Job {where}"),
            failed=(c.EVENT_FAILED_TO_DELETE_RAYJOB_SUBMITTER, f"Failed to delete submitter K8s Job {where}"),
            sep=": ",
            tolerate=_not_found,
        )
        return went is None  # None: it was already gone

    # ------------------------------------------------------------------------------------------------ finished
    async def after_finish(self, ctx: JobContext) -> Result:
        if ctx.selector_mode:
            return Result()
        strategy = ctx.spec.deletion_strategy
        if self.options.gate(c.GATE_RAYJOB_DELETION_POLICY) and strategy is not None:
            if strategy.deletion_rules:
                return await self._rules(ctx)
            return await self._legacy(ctx)
        if ctx.spec.shutdown_after_job_finishes:
            wait = self._wait(ctx, ctx.spec.ttl_seconds_after_finished or 0)
            if wait is not None:
                return Result(wait)
            if self.options.delete_rayjob_after_finish:
                await self._delete_self(ctx)
            else:
                await self.delete_cluster(ctx)
        return Result()

    def _ended(self, ctx: JobContext) -> dt.datetime:
        return times.parse_time(ctx.status.get("endTime")) or self.clock()

    def _wait(self, ctx: JobContext, ttl: int) -> float | None:
        """Seconds until ``endTime + ttl`` plus KubeRay's 2 s of slack, or None when it has passed."""
        due = self._ended(ctx) + dt.timedelta(seconds=ttl)
        now = self.clock()
        return None if now >= due else (due - now).total_seconds() + _SLACK

    async def _legacy(self, ctx: JobContext) -> Result:
        strategy = ctx.spec.deletion_strategy
        assert strategy is not None  # noqa: S101 - the caller checked
        job_status = ctx.status.get("jobStatus")
        chosen = (
            strategy.on_success
            if job_status == "SUCCEEDED"
            else strategy.on_failure
            if job_status == "FAILED"
            else None
        )
        policy = chosen.policy if chosen is not None else None
        if policy is None or policy == DELETE_NONE:
            return Result()
        wait = self._wait(ctx, ctx.spec.ttl_seconds_after_finished or 0)
        if wait is not None:
            return Result(wait)
        await self._execute(ctx, policy)
        return Result()

    async def _rules(self, ctx: JobContext) -> Result:
        strategy = ctx.spec.deletion_strategy
        if strategy is None or not strategy.deletion_rules:
            return Result()
        status = ctx.status
        now = self.clock()
        earliest: dt.datetime | None = None
        overdue: list[str] = []
        for rule in strategy.deletion_rules:
            cond = rule.condition
            matches = (cond.job_status is not None and cond.job_status == status.get("jobStatus")) or (
                cond.job_deployment_status is not None
                and cond.job_deployment_status == status.get("jobDeploymentStatus")
            )
            if not matches:
                continue
            due = self._ended(ctx) + dt.timedelta(seconds=cond.ttl_seconds or 0)
            if now < due:
                earliest = due if earliest is None or due < earliest else earliest
            elif not self._done(ctx, rule.policy):
                overdue.append(rule.policy)
        if overdue:
            strongest = max(overdue, key=lambda policy: _IMPACT[policy])  # max keeps the first of equals
            await self._execute(ctx, strongest)
        if earliest is not None:
            return Result((earliest - now).total_seconds() + _SLACK)
        return Result()

    def _done(self, ctx: JobContext, policy: str) -> bool:
        """KubeRay ``isDeletionActionCompleted``."""
        if policy == DELETE_NONE:
            return True
        if policy == DELETE_SELF:
            return False
        cluster = self.cache.get(RAYCLUSTERS, ctx.namespace, ctx.cluster_name)
        if cluster is None or objects.terminating(cluster):
            return True
        if policy == DELETE_WORKERS:
            groups = (cluster.get("spec") or {}).get("workerGroupSpecs") or []
            return all(group.get("suspend") for group in groups)
        return False

    async def _execute(self, ctx: JobContext, policy: str) -> None:
        if policy == DELETE_CLUSTER:
            await self.delete_cluster(ctx)
        elif policy == DELETE_WORKERS:
            await self._suspend_workers(ctx)
        elif policy == DELETE_SELF:
            await self._delete_self(ctx)

    async def _suspend_workers(self, ctx: JobContext) -> None:
        cluster = self.cache.get(RAYCLUSTERS, ctx.namespace, ctx.cluster_name)
        if cluster is None:
            return
        name = objects.name(cluster)
        body: dict[str, Any] = copy.deepcopy(dict(cluster))
        for group in (body.get("spec") or {}).get("workerGroupSpecs") or []:
            group["suspend"] = True
        body = gowrites.as_kuberay_writes("RayCluster", body)  # KubeRay's Update of its Go object
        where = f"{ctx.namespace}/{name}"
        await reported(
            self.recorder,
            ctx.obj,
            "Update",
            self.api.replace(RAYCLUSTERS, name, body, ctx.namespace),
            done=(
                c.EVENT_UPDATED_RAYCLUSTER,
                f"Set the `suspend` field to true for all worker groups in cluster {where}",
            ),
            failed=(c.EVENT_FAILED_TO_UPDATE_RAYCLUSTER, f"Failed to suspend worker groups in cluster {where}"),
            sep=": ",
        )

    async def _delete_self(self, ctx: JobContext) -> None:
        await self.api.delete(RAYJOBS, ctx.name, ctx.namespace, missing_ok=True)

"""The RayJob reconciler: run one Ray job on a RayCluster it creates (or an existing one), as KubeRay v1.6.1 does.

KubeRay's ``ray-operator/controllers/ray/rayjob_controller.go``, re-implemented. Every pass reads the RayJob from the
cache and acts on ``status.jobDeploymentStatus``:

``""`` (New)
    add the finalizer ``ray.io/rayjob-finalizer``; pick the job id (``spec.jobId`` or ``<rayjob>-<rand5>``) and the
    cluster name (the ``clusterSelector``'s, or ``<rayjob>-<rand5>``); ``Initializing``, ``startTime`` now.
``Initializing``
    suspend → ``Suspending``; the active and pre-running deadlines → ``Failed``; create the RayCluster; wait for it to
    be ``ready`` (mirroring its status); the dashboard URL of its head Service; InteractiveMode → ``Waiting``;
    K8sJobMode creates the submitter Job; → ``Running``.
``Waiting`` (InteractiveMode)
    until the user sets ``spec.jobId``; only the pre-running deadline applies.
``Running``
    suspend, the active deadline, the grace period after the Ray job ended; recreate a deleted cluster; the RayJob's
    head Service ``<rayjob>-head-svc``; the submitter (Job or sidecar container) finished or failed; then the job's
    status from the dashboard (HTTPMode submits it here) → ``Complete`` / ``Failed``.
``Suspending`` / ``Retrying``
    delete the cluster and the submitter Job; once both are gone, release the batch scheduler's reservation (v1.7.0:
    a failure fails the pass, so the reset waits for it), then reset → ``Suspended`` / ``""`` (a new cluster and job
    id: one attempt of ``backoffLimit``).
``Suspended``
    ``spec.suspend: false`` → ``""``.
``Complete`` / ``Failed``
    the deletion rules, the legacy deletion policies, or ``shutdownAfterJobFinishes`` with
    ``ttlSecondsAfterFinished`` (:mod:`raykube.controllers.rayjob.cleanup`); then, whatever happened, the batch
    scheduler's reservation is resized to what is left (a failure is only logged).

The status is written through ``/status`` only when KubeRay would (``jobStatus``, ``jobDeploymentStatus`` or the
mirrored cluster status changed), with ``failed``/``succeeded`` counted and ``Failed`` turned into ``Retrying`` in the
same write. Validation failures are ``ValidationFailed``, which, as in KubeRay, nothing leaves (delete and recreate the
RayJob). Deleting a RayJob whose job is still running stops the job through the dashboard first.
"""

from __future__ import annotations

import copy
import datetime as dt
import logging
from collections.abc import Callable, Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.dashboard import JOB_FAILED, DashboardError, JobInfo, is_job_terminal
from raykube.api.resources import RAYCLUSTERS, RAYJOBS, RayJob
from raykube.api.validation import FieldError, validate_rayjob
from raykube.builders import gowrites, names
from raykube.builders.status import status_needs_update
from raykube.controllers.base import Deps, Registration, Result
from raykube.controllers.rayjob.children import Children
from raykube.controllers.rayjob.cleanup import Cleanup
from raykube.controllers.rayjob.context import (
    COMPLETE,
    CONTROLLER,
    FAILED,
    INITIALIZING,
    NEW,
    REASON_DEADLINE_EXCEEDED,
    REASON_GRACE_PERIOD_EXCEEDED,
    REASON_PRE_RUNNING_DEADLINE_EXCEEDED,
    REASON_STATUS_CHECK_TIMEOUT,
    REASON_VALIDATION_FAILED,
    REQUEUE,
    RETRYING,
    RUNNING,
    SUSPENDED,
    SUSPENDING,
    VALIDATION_FAILED,
    WAITING,
    WARNING,
    JobContext,
    Obj,
    RayJobError,
    WithDeps,
    go_time,
)
from raykube.controllers.rayjob.submission import CHECK_FAILURE_START, Submission
from raykube.controllers.watches import CREATED_BY_SELECTOR
from raykube.kube import objects, times
from raykube.kube.resources import JOBS, SERVICES

log = logging.getLogger(__package__)  # raykube.controllers.rayjob, the controller's logger


def _always(old: Obj | None, new: Obj | None) -> bool:
    return True


def registration(options: object = None) -> Registration:
    """KubeRay ``RayJobReconciler.SetupWithManager``: ``For(RayJob)`` with no predicate (its own status writes start
    another pass), ``Owns(RayCluster, Service, batch/v1 Job)``."""
    return (
        Registration.named(CONTROLLER, recorder=c.RAYJOB_CONTROLLER_NAME)
        .for_(RAYJOBS)
        .with_predicate(_always)
        .owns(RAYCLUSTERS)
        .owns(SERVICES, index_labels=(c.RAY_CLUSTER_LABEL,))
        .owns(JOBS, label_selector=CREATED_BY_SELECTOR)
        .complete(RayJobReconciler)
    )


class RayJobReconciler(WithDeps):
    def __init__(self, deps: Deps, *, random: Callable[[], str] = names.random_suffix) -> None:
        super().__init__(deps)
        self.job_metrics = deps.job_metrics
        self.random = random
        self.cleanup = Cleanup(deps)
        self.children = Children(deps)
        self.submission = Submission(deps)

    # -------------------------------------------------------------------------------------------------- entry
    async def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.cache.get(RAYJOBS, namespace, name)
        if obj is None:
            if self.job_metrics:
                self.job_metrics.forget_job(name, namespace)
            return Result()
        spec = obj.get("spec") or {}
        managed_by = spec.get("managedBy") if isinstance(spec, Mapping) else None
        if managed_by and managed_by != c.MANAGED_BY_KUBERAY:
            return Result()
        if objects.terminating(obj):
            return await self._deleting(obj)
        return await self._reconcile_live(obj, namespace, name)

    async def _reconcile_live(self, obj: Obj, namespace: str, name: str) -> Result:
        status: dict[str, Any] = copy.deepcopy(dict(obj.get("status") or {}))
        errors = validate_rayjob(obj, features=self.options.features)
        if errors:
            return await self._invalid(obj, status, errors[0])
        job = RayJob.model_validate(obj)
        if job.spec is None:  # validation requires a spec
            raise RayJobError("the RayJob has no spec")
        ctx = JobContext(obj, job, job.spec, namespace, name, status)
        state = str(status.get("jobDeploymentStatus") or NEW)
        handlers = {
            NEW: self._new,
            INITIALIZING: self._initializing,
            WAITING: self._waiting,
            RUNNING: self._running,
            SUSPENDING: self._delete_resources,
            RETRYING: self._delete_resources,
            SUSPENDED: self._suspended,
            COMPLETE: self._finished,
            FAILED: self._finished,
        }
        handler = handlers.get(state)
        if handler is None:  # ValidationFailed included: KubeRay's "Unknown JobDeploymentStatus" branch
            log.info("unknown JobDeploymentStatus %r; looking again in %.0fs", state, REQUEUE)
            return Result(REQUEUE)
        early = await handler(ctx)
        if early is not None:
            return early
        self._count(ctx)
        await self._write(obj, ctx.status)
        return Result(REQUEUE)

    async def _invalid(self, obj: Obj, status: dict[str, Any], error: FieldError) -> Result:
        reason = (
            c.EVENT_INVALID_RAYJOB_METADATA
            if error.path.startswith("metadata")
            else c.EVENT_INVALID_RAYJOB_STATUS
            if error.path.startswith("status")
            else c.EVENT_INVALID_RAYJOB_SPEC
        )
        self.recorder.event(
            obj, WARNING, reason, "Validate", f"{objects.namespace(obj)}/{objects.name(obj)}: {error.message}"
        )
        status.update(jobDeploymentStatus=VALIDATION_FAILED, reason=REASON_VALIDATION_FAILED, message=error.message)
        await self._write(obj, status)
        return Result()

    # -------------------------------------------------------------------------------------------------- states
    async def _new(self, ctx: JobContext) -> Result | None:
        if c.RAYJOB_FINALIZER not in objects.finalizers(ctx.obj):
            # KubeRay's Update of the Go object: the spec as Go writes it, so the generation bumps as KubeRay's does
            body = gowrites.finalizer_update("RayJob", ctx.obj, c.RAYJOB_FINALIZER)
            updated = await self.api.replace(RAYJOBS, ctx.name, body, ctx.namespace)
            ctx.status["_resourceVersion"] = objects.resource_version(updated)
        status = ctx.status
        if not status.get("jobId") or not status.get("rayClusterName") or not status.get("jobStatus"):
            if ctx.mode != c.SUBMISSION_MODE_INTERACTIVE and not status.get("jobId"):
                status["jobId"] = ctx.spec.job_id or f"{ctx.name}-{self.random()}"
            if not status.get("rayClusterName"):
                selected = (ctx.spec.cluster_selector or {}).get(c.RAY_JOB_CLUSTER_SELECTOR_KEY)
                status["rayClusterName"] = selected or f"{ctx.name}-{self.random()}"
            status["jobStatus"] = ""
            status["jobDeploymentStatus"] = INITIALIZING
            status["startTime"] = times.format_time(self.clock())
        return None

    async def _initializing(self, ctx: JobContext) -> Result | None:
        if ctx.spec.suspend:
            ctx.status["jobDeploymentStatus"] = SUSPENDING
            return None
        if self._deadline_passed(ctx) or self._pre_running_deadline_passed(ctx):
            return None
        await self.children.batch_on_submission(ctx)
        cluster = await self.children.get_or_create_cluster(ctx)
        if cluster is None:
            return Result(REQUEUE)  # created, or in the API server but not yet in the cache
        if not ctx.status.get("dashboardURL"):
            cluster_status = dict(cluster.get("status") or {})
            if cluster_status.get("state") != c.CLUSTER_STATE_READY:
                ctx.status["rayClusterStatus"] = cluster_status
                return None
            ctx.status["dashboardURL"] = self.children.dashboard_url(cluster)
        if ctx.mode == c.SUBMISSION_MODE_INTERACTIVE:
            ctx.status["jobDeploymentStatus"] = WAITING
            return None
        if ctx.mode == c.SUBMISSION_MODE_K8S_JOB:
            await self.children.create_submitter_job(ctx, cluster)
        ctx.status["jobDeploymentStatus"] = RUNNING
        return None

    async def _waiting(self, ctx: JobContext) -> Result | None:
        if self._pre_running_deadline_passed(ctx):
            return None
        if not ctx.spec.job_id:
            return Result(REQUEUE)  # no status write until the user submits
        ctx.status["jobId"] = ctx.spec.job_id
        ctx.status["jobDeploymentStatus"] = RUNNING
        return None

    async def _running(self, ctx: JobContext) -> Result | None:
        if ctx.spec.suspend:
            ctx.status["jobDeploymentStatus"] = SUSPENDING
            return None
        if (
            self._deadline_passed(ctx)
            or self._grace_period_passed(ctx)
            or self.submission.status_check_timed_out(ctx, self.options.rayjob_status_check_timeout_seconds)
        ):
            return None
        cluster = await self.children.get_or_create_cluster(ctx)
        if cluster is None:
            return Result(REQUEUE)
        if not ctx.selector_mode:
            await self.children.reconcile_head_service(ctx, cluster)
        finished_at: dt.datetime | None = None
        if ctx.mode in (c.SUBMISSION_MODE_K8S_JOB, c.SUBMISSION_MODE_SIDECAR):
            failed, finished_at = self.submission.check_submitter(ctx, cluster)
            if failed or self.submission.submitter_timed_out(ctx, finished_at):
                return None
        info = await self.submission.job_info(ctx, cluster, finished_at)
        if isinstance(info, JobInfo):
            self.submission.observe(ctx, cluster, info, finished_at)
            return None
        return info

    async def _delete_resources(self, ctx: JobContext) -> Result | None:
        """Suspending and Retrying: the cluster and the submitter Job go first, then the batch scheduler's objects are
        cleaned up (KubeRay v1.7.0: a failure raises, the pass is retried and the attempt not reset yet); then the
        attempt is reset."""
        cluster_gone = await self.cleanup.delete_cluster(ctx)
        job_gone = await self.cleanup.delete_submitter_job(ctx)
        if not (cluster_gone and job_gone):
            return Result(REQUEUE)
        await self.children.cleanup_batch_scheduler(ctx)
        status = ctx.status
        for key in ("rayClusterName", "dashboardURL", "jobId", "message", "reason", "jobStatus"):
            status[key] = ""
        status["rayClusterStatus"] = {}
        status["rayJobInfo"] = {}
        status.pop(CHECK_FAILURE_START, None)
        status["jobDeploymentStatus"] = SUSPENDED if status.get("jobDeploymentStatus") == SUSPENDING else NEW
        return None

    async def _suspended(self, ctx: JobContext) -> Result | None:
        if ctx.spec.suspend:
            return Result()
        ctx.status["jobStatus"] = ""
        ctx.status["jobDeploymentStatus"] = NEW
        return None

    async def _finished(self, ctx: JobContext) -> Result:
        """Complete and Failed: the deletion strategy, then (KubeRay's ``defer``: also when it failed) the batch
        scheduler's clean-up, whose failure is logged and does not fail the pass."""
        try:
            return await self.cleanup.after_finish(ctx)
        finally:
            await self._cleanup_batch_scheduler_logged(ctx)

    async def _cleanup_batch_scheduler_logged(self, ctx: JobContext) -> None:
        failure: RayJobError | None = None
        try:
            await self.children.cleanup_batch_scheduler(ctx)
        except RayJobError as exc:
            failure = exc
        if failure is not None:
            log.error("Failed to cleanup batch scheduler resources: %s", failure)

    # -------------------------------------------------------------------------------------------------- checks
    def _started(self, ctx: JobContext) -> dt.datetime | None:
        return times.parse_time(ctx.status.get("startTime"))

    def _deadline_passed(self, ctx: JobContext) -> bool:
        seconds, started = ctx.spec.active_deadline_seconds, self._started(ctx)
        if seconds is None or started is None or self.clock() < started + dt.timedelta(seconds=seconds):
            return False
        ctx.status.update(
            jobDeploymentStatus=FAILED,
            reason=REASON_DEADLINE_EXCEEDED,
            message=f"The RayJob has passed the activeDeadlineSeconds. StartTime: {go_time(started)}. "
            f"ActiveDeadlineSeconds: {seconds}",
        )
        return True

    def _pre_running_deadline_passed(self, ctx: JobContext) -> bool:
        seconds, started = ctx.spec.pre_running_deadline_seconds, self._started(ctx)
        if seconds is None or started is None or self.clock() < started + dt.timedelta(seconds=seconds):
            return False
        ctx.status.update(
            jobDeploymentStatus=FAILED,
            reason=REASON_PRE_RUNNING_DEADLINE_EXCEEDED,
            message=f"The RayJob has passed the preRunningDeadlineSeconds. StartTime: {go_time(started)}. "
            f"PreRunningDeadlineSeconds: {seconds}",
        )
        return True

    def _grace_period_passed(self, ctx: JobContext) -> bool:
        status = ctx.status
        ended = times.parse_time((status.get("rayJobInfo") or {}).get("endTime"))
        if not is_job_terminal(str(status.get("jobStatus") or "")) or ended is None:
            return False
        if self.clock() < ended + dt.timedelta(seconds=self.options.rayjob_transition_grace_seconds):
            return False
        status.update(
            jobDeploymentStatus=FAILED if status.get("jobStatus") == JOB_FAILED else COMPLETE,
            reason=REASON_GRACE_PERIOD_EXCEEDED,
            message="JobDeploymentStatus does not transition to Complete or Failed within the grace period after "
            "JobStatus reaches a terminal state.",
        )
        return True

    # -------------------------------------------------------------------------------------------------- status
    def _count(self, ctx: JobContext) -> None:
        """KubeRay ``checkBackoffLimitAndUpdateStatusIfNeeded``: count the outcome; a failure with attempts left
        becomes ``Retrying`` in the same write (not after a deadline)."""
        status = ctx.status
        status["failed"] = int(status.get("failed") or 0)
        status["succeeded"] = int(status.get("succeeded") or 0)
        state = status.get("jobDeploymentStatus")
        if state == FAILED:
            status["failed"] += 1
        if state == COMPLETE and status.get("jobStatus") == "SUCCEEDED":
            status["succeeded"] += 1
        limit = ctx.spec.backoff_limit
        if (
            state == FAILED
            and limit is not None
            and status["failed"] < limit + 1
            and status.get("reason") not in (REASON_DEADLINE_EXCEEDED, REASON_STATUS_CHECK_TIMEOUT)
        ):
            status["jobDeploymentStatus"] = RETRYING

    async def _write(self, obj: Obj, new: dict[str, Any]) -> None:
        """KubeRay ``updateRayJobStatus``: only when jobStatus, jobDeploymentStatus or the mirrored cluster status
        changed; ``endTime`` set on the write that ends the job; the run's duration observed when it ends or is to
        be retried."""
        old = obj.get("status") or {}
        version = new.pop("_resourceVersion", None)
        before, after = str(old.get("jobDeploymentStatus") or ""), str(new.get("jobDeploymentStatus") or "")
        changed = (
            old.get("jobStatus", "") != new.get("jobStatus", "")
            or before != after
            # both as KubeRay's Go objects hold them: what was stored, and what would be
            or status_needs_update(
                old.get("rayClusterStatus") or {},
                gowrites.status_as_kuberay_writes("RayJob", new).get("rayClusterStatus") or {},
            )
            or _time_changed(old.get(CHECK_FAILURE_START), new.get(CHECK_FAILURE_START))
        )
        if not changed:
            return
        if after in (COMPLETE, FAILED):
            new["endTime"] = times.format_time(self.clock())
        body = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "metadata": {**objects.meta(obj), "resourceVersion": version or objects.resource_version(obj)},
            "status": gowrites.status_as_kuberay_writes("RayJob", new),  # KubeRay's Status().Update of its Go object
        }
        await self.api.replace(RAYJOBS, objects.name(obj), body, objects.namespace(obj), subresource="status")
        started = times.parse_time(new.get("startTime"))
        if self.job_metrics and before not in (COMPLETE, FAILED) and after in (COMPLETE, FAILED, RETRYING) and started:
            self.job_metrics.observe_job_duration(
                objects.name(obj),
                objects.namespace(obj),
                objects.uid(obj),
                deployment_status=after,
                retry_count=int(old.get("failed") or 0),
                seconds=(self.clock() - started).total_seconds(),
            )

    # -------------------------------------------------------------------------------------------------- deletion
    async def _deleting(self, obj: Obj) -> Result:
        """KubeRay: a RayJob being deleted whose job has not ended has it stopped; then the finalizer goes and the
        garbage collector removes the cluster, the Service and the Job."""
        finalizers = objects.finalizers(obj)
        if c.RAYJOB_FINALIZER not in finalizers:
            return Result()
        status = obj.get("status") or {}
        if not is_job_terminal(str(status.get("jobStatus") or "")):
            namespace = objects.namespace(obj)
            cluster = self.cache.get(RAYCLUSTERS, namespace, str(status.get("rayClusterName") or ""))
            if self.dashboards is not None:
                target = cluster or {"metadata": {"namespace": namespace, "name": status.get("rayClusterName", "")}}
                try:
                    dashboard = await self.dashboards.for_cluster(target, str(status.get("dashboardURL") or ""))
                except DashboardError as exc:
                    raise RayJobError(str(exc)) from exc
                try:
                    await dashboard.stop_job(str(status.get("jobId") or ""))
                except DashboardError as exc:
                    log.info("stopping the Ray job of a deleted RayJob failed: %s", exc)
        remaining = [f for f in finalizers if f != c.RAYJOB_FINALIZER]
        patch = [
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "replace", "path": "/metadata/finalizers", "value": remaining},
        ]
        await self.api.patch(RAYJOBS, objects.name(obj), patch, objects.namespace(obj), patch_type="json")
        return Result(REQUEUE)


def _time_changed(old: object, new: object) -> bool:
    """KubeRay ``jobStatusCheckFailureStartTimeChanged``: set or cleared, or a different instant."""
    if old is None or new is None:
        return (old is None) != (new is None)
    return times.parse_time(str(old)) != times.parse_time(str(new))

"""What a RayJob creates, as KubeRay v1.6.1 ``rayjob_controller.go`` creates it: its RayCluster
(``getOrCreateRayClusterInstance``) and the dashboard URL of its head Service, the RayJob's ``<rayjob>-head-svc``,
the K8sJobMode submitter Job (``createK8sJobIfNeed``), and the batch scheduler's objects (Volcano's PodGroup) on
submission and on clean-up (v1.7.0: when the job ends and between attempts). The deletions are
:mod:`raykube.controllers.rayjob.cleanup`'s.
"""

from __future__ import annotations

import copy
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS, RayCluster
from raykube.builders import batch, gowrites
from raykube.builders import rayjob as rj
from raykube.controllers.base import reported
from raykube.controllers.rayjob.context import (
    NORMAL,
    WARNING,
    JobContext,
    Obj,
    RayJobError,
    WithDeps,
    _exists,
    _job_error,
)
from raykube.controllers.watches import cached_head_service
from raykube.kube import objects
from raykube.kube.errors import ApiError
from raykube.kube.resources import JOBS, SERVICES


class Children(WithDeps):
    """The RayJob reconciler's creates and updates; every method works on one pass's :class:`JobContext`."""

    # -------------------------------------------------------------------------------------------------- batch scheduler
    async def batch_on_submission(self, ctx: JobContext) -> None:
        """KubeRay ``DoBatchSchedulingOnSubmission`` (Volcano: the RayJob's PodGroup, before its cluster). A RayJob
        on an existing cluster cannot be gang scheduled: the pass fails, as in KubeRay."""
        plugin = batch.get(self.options.batch_scheduler)
        if plugin is None:
            return
        try:
            desired = plugin.rayjob_objects(ctx.job)
        except batch.BatchSchedulingError as exc:
            raise RayJobError(str(exc)) from exc
        await self._sync_batch_objects(plugin, ctx.namespace, desired)

    async def cleanup_batch_scheduler(self, ctx: JobContext) -> None:
        """KubeRay v1.7.0 ``cleanupBatchSchedulerResources``: the scheduler's objects resized to what is left of the
        cluster (Volcano: the PodGroup, zeroed once the cluster is gone), so the scheduler frees the rest. A Normal
        ``BatchSchedulerCleanedUp`` event when anything was written; on failure a Warning
        ``FailedToCleanupBatchScheduler`` and :class:`RayJobError` (the Suspending/Retrying caller requeues on it,
        the Complete/Failed one only logs it)."""
        plugin = batch.get(self.options.batch_scheduler)
        if plugin is None:
            return
        where = f"{ctx.namespace}/{ctx.name}"
        try:
            live = self.cache.get(RAYCLUSTERS, ctx.namespace, ctx.cluster_name) if ctx.cluster_name else None
            cluster = RayCluster.model_validate(live) if live is not None else None
            changed = await self._sync_batch_objects(
                plugin, ctx.namespace, plugin.rayjob_completion_objects(ctx.job, cluster)
            )
        except (ApiError, batch.BatchSchedulingError, ValueError) as exc:
            note = f"Failed to cleanup batch scheduler resources for RayJob {where}: {exc}"
            self.recorder.event(ctx.obj, WARNING, c.EVENT_FAILED_TO_CLEANUP_BATCH_SCHEDULER, "Cleanup", note)
            raise RayJobError(f"failed to cleanup batch scheduler resources: {exc}") from exc
        if changed:
            note = f"Cleaned up batch scheduler resources for RayJob {where}"
            self.recorder.event(ctx.obj, NORMAL, c.EVENT_BATCH_SCHEDULER_CLEANED_UP, "Cleanup", note)

    async def _sync_batch_objects(
        self, plugin: batch.BatchScheduler, namespace: str, desired: list[dict[str, Any]]
    ) -> bool:
        """KubeRay ``syncPodGroup``: create what is missing (AlreadyExists is fine: the cache is behind), bring
        ``minMember``/``minResources`` in step. True when anything was written."""
        kinds = {(kind.api_version, kind.kind): kind for kind in plugin.kinds}
        changed = False
        for body in desired:
            res = kinds[(body["apiVersion"], body["kind"])]
            live = self.cache.get(res, namespace, objects.name(body))
            if live is None:
                try:
                    await self.api.create(res, body, namespace)
                except ApiError as exc:
                    if exc.reason != "AlreadyExists":
                        raise
                    continue
                changed = True
                continue
            update = plugin.updated(live, body)
            if update is not None:
                await self.api.replace(res, objects.name(body), update, namespace)
                changed = True
        return changed

    # -------------------------------------------------------------------------------------------------- children
    async def get_or_create_cluster(self, ctx: JobContext) -> Obj | None:
        """KubeRay ``getOrCreateRayClusterInstance``: the cluster named in the status; created (never updated) when it
        is missing, unless it was selected (then it is an error). None right after creating it."""
        name = ctx.cluster_name
        found = self.cache.get(RAYCLUSTERS, ctx.namespace, name)
        if found is not None:
            return found
        if ctx.selector_mode:
            note = (
                f"RayCluster {ctx.namespace}/{name} set in the clusterSelector is not found. It must be created "
                "manually"
            )
            self.recorder.event(ctx.obj, WARNING, c.EVENT_RAYCLUSTER_NOT_FOUND, "Validate", note)
            raise RayJobError(f"clusterSelector mode is enabled, but RayCluster {ctx.namespace}/{name} is not found")
        body = gowrites.as_kuberay_writes(  # KubeRay creates it from its Go struct
            "RayCluster",
            rj.rayjob_cluster(ctx.job, name, self.options, job_id=str(ctx.status.get("jobId") or ""), dashboard_url=""),
        )
        return await reported(
            self.recorder,
            ctx.obj,
            "Create",
            self.api.create(RAYCLUSTERS, body, ctx.namespace),
            done=(c.EVENT_CREATED_RAYCLUSTER, f"Created RayCluster {ctx.namespace}/{name}"),
            failed=(c.EVENT_FAILED_TO_CREATE_RAYCLUSTER, f"Failed to create RayCluster {ctx.namespace}/{name}"),
            sep=": ",
            tolerate=_exists,
            raise_as=_job_error,
        )

    def dashboard_url(self, cluster: Obj) -> str:
        """KubeRay ``FetchHeadServiceURL(cluster, "dashboard")``, from the cluster's head Service in the cache."""
        service_name, head_service = cached_head_service(self.cache, cluster)
        if head_service is None:
            raise RayJobError(f"the head Service {objects.namespace(cluster)}/{service_name} is not found")
        try:
            return rj.dashboard_url(head_service, cluster_domain=self.options.cluster_domain)
        except rj.RayJobBuildError as exc:
            raise RayJobError(str(exc)) from exc

    async def create_submitter_job(self, ctx: JobContext, cluster: Obj) -> None:
        if self.cache.get(JOBS, ctx.namespace, ctx.name) is not None:
            return
        try:
            body = rj.submitter_job(
                ctx.job,
                RayCluster.model_validate(cluster),
                self.options,
                job_id=str(ctx.status.get("jobId") or ""),
                dashboard_url=str(ctx.status.get("dashboardURL") or ""),
            )
        except rj.RayJobBuildError as exc:
            raise RayJobError(str(exc)) from exc
        where = f"{ctx.namespace}/{ctx.name}"
        await reported(
            self.recorder,
            ctx.obj,
            "Create",
            self.api.create(JOBS, body, ctx.namespace),
            done=(c.EVENT_CREATED_RAYJOB_SUBMITTER, f"Created Kubernetes Job {where}"),
            failed=(c.EVENT_FAILED_TO_CREATE_RAYJOB_SUBMITTER, f"Failed to create new Kubernetes Job {where}"),
            sep=": ",
            tolerate=_exists,
            raise_as=_job_error,
        )

    async def reconcile_head_service(self, ctx: JobContext, cluster: Obj) -> None:
        """``<rayjob>-head-svc``: created in Running; updated only when it points at another cluster (a retry)."""
        desired = rj.rayjob_head_service(ctx.job, RayCluster.model_validate(cluster), self.options)
        name = objects.name(desired)
        where = f"{ctx.namespace}/{name}"
        live = self.cache.get(SERVICES, ctx.namespace, name)
        if live is None:
            await reported(
                self.recorder,
                ctx.obj,
                "Create",
                self.api.create(SERVICES, desired, ctx.namespace),
                done=(c.EVENT_CREATED_SERVICE, f"Created the service {where}"),
                failed=(c.EVENT_FAILED_TO_CREATE_SERVICE, f"Failed to create the service {where}"),
                tolerate=_exists,
                raise_as=_job_error,
            )
            return
        have = ((live.get("spec") or {}).get("selector") or {}).get(c.RAY_CLUSTER_LABEL)
        want = ((desired.get("spec") or {}).get("selector") or {}).get(c.RAY_CLUSTER_LABEL)
        if have == want:
            return
        body = copy.deepcopy(dict(live))
        spec = copy.deepcopy(desired["spec"])
        if (live.get("spec") or {}).get("clusterIP"):
            spec["clusterIP"] = live["spec"]["clusterIP"]
        body["spec"] = spec
        await reported(
            self.recorder,
            ctx.obj,
            "Update",
            self.api.replace(SERVICES, name, body, ctx.namespace),
            done=(c.EVENT_UPDATED_SERVICE, f"Updated the service {where}"),
            failed=(c.EVENT_FAILED_TO_UPDATE_SERVICE, f"Failed to update the service {where}"),
            raise_as=_job_error,
        )

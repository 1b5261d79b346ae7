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
    delete the cluster and the submitter Job; once both are gone, reset → ``Suspended`` / ``""`` (a new cluster and
    job id: one attempt of ``backoffLimit``).
``Suspended``
    ``spec.suspend: false`` → ``""``.
``Complete`` / ``Failed``
    the deletion rules, the legacy deletion policies, or ``shutdownAfterJobFinishes`` with
    ``ttlSecondsAfterFinished`` (:mod:`raykube.controllers.rayjob_cleanup`).

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
from dataclasses import dataclass
from typing import Any

from raykube.api import constants as c
from raykube.api.dashboard import JOB_FAILED, DashboardError, JobInfo, is_job_terminal
from raykube.api.rayjob import RayJobSpec
from raykube.api.resources import RAYCLUSTERS, RAYJOBS, RayCluster, RayJob
from raykube.api.validation import FieldError, validate_rayjob
from raykube.builders import batch, names
from raykube.builders import rayjob as rj
from raykube.builders.status import status_needs_update
from raykube.controllers.base import Context, Deps, Registration, Result, reported
from raykube.controllers.rayjob_cleanup import Cleanup
from raykube.controllers.watches import CREATED_BY_SELECTOR, cached_head_service
from raykube.kube import objects, times
from raykube.kube.errors import ApiError
from raykube.kube.resources import JOBS, PODS, SERVICES

log = logging.getLogger(__name__)

CONTROLLER = "rayjob"  # controller-runtime's name for KubeRay's RayJob controller (metrics, work queue)
REQUEUE = 3.0  # KubeRay RayJobDefaultRequeueDuration
SUBMITTER_FINISHED_TIMEOUT = 30.0  # KubeRay DefaultSubmitterFinishedTimeout
NORMAL = c.EVENT_TYPE_NORMAL
WARNING = c.EVENT_TYPE_WARNING

# jobDeploymentStatus values and status.reason values (api/constants.py: KubeRay's rayjob_types.go).
NEW = c.JOB_DEPLOYMENT_STATUS_NEW
INITIALIZING = c.JOB_DEPLOYMENT_STATUS_INITIALIZING
RUNNING = c.JOB_DEPLOYMENT_STATUS_RUNNING
COMPLETE = c.JOB_DEPLOYMENT_STATUS_COMPLETE
FAILED = c.JOB_DEPLOYMENT_STATUS_FAILED
VALIDATION_FAILED = c.JOB_DEPLOYMENT_STATUS_VALIDATION_FAILED
SUSPENDING = c.JOB_DEPLOYMENT_STATUS_SUSPENDING
SUSPENDED = c.JOB_DEPLOYMENT_STATUS_SUSPENDED
RETRYING = c.JOB_DEPLOYMENT_STATUS_RETRYING
WAITING = c.JOB_DEPLOYMENT_STATUS_WAITING
REASON_SUBMISSION_FAILED = c.JOB_REASON_SUBMISSION_FAILED
REASON_DEADLINE_EXCEEDED = c.JOB_REASON_DEADLINE_EXCEEDED
REASON_PRE_RUNNING_DEADLINE_EXCEEDED = c.JOB_REASON_PRE_RUNNING_DEADLINE_EXCEEDED
REASON_APP_FAILED = c.JOB_REASON_APP_FAILED
REASON_GRACE_PERIOD_EXCEEDED = c.JOB_REASON_GRACE_PERIOD_EXCEEDED
REASON_VALIDATION_FAILED = c.JOB_REASON_VALIDATION_FAILED

Obj = Mapping[str, Any]


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


@dataclass(frozen=True)
class JobContext(Context[RayJob, RayJobSpec]):
    """One pass over one valid RayJob; ``status`` is this pass's working copy of the status (written at the end)."""

    status: dict[str, Any]

    @property
    def job(self) -> RayJob:
        return self.model

    @property
    def mode(self) -> str:
        return self.spec.submission_mode or c.SUBMISSION_MODE_K8S_JOB

    @property
    def selector_mode(self) -> bool:
        """``clusterSelector`` mode: run on an existing cluster, create and own nothing."""
        return bool((self.spec.cluster_selector or {}).get(c.RAY_JOB_CLUSTER_SELECTOR_KEY)) and (
            self.spec.ray_cluster_spec is None
        )

    @property
    def cluster_name(self) -> str:
        return str(self.status.get("rayClusterName") or "")


class RayJobError(Exception):
    """A pass that could not finish; the runtime retries it with back-off (KubeRay's error-requeue)."""


def _exists(exc: ApiError) -> bool:
    """AlreadyExists: the cache has not caught up with an earlier create."""
    return exc.already_exists


def _job_error(note: str, _exc: ApiError) -> RayJobError:
    """A failed write fails the pass with the note of its Warning event."""
    return RayJobError(note)


def go_time(moment: dt.datetime) -> str:
    """A ``*metav1.Time`` printed with Go's ``%v``: ``2006-01-02 15:04:05 +0000 UTC`` (fraction only when set)."""
    utc = moment.astimezone(dt.UTC)
    fraction = f".{utc.microsecond:06d}".rstrip("0") if utc.microsecond else ""
    return f"{utc:%Y-%m-%d %H:%M:%S}{fraction} +0000 UTC"


class RayJobReconciler:
    def __init__(self, deps: Deps, *, random: Callable[[], str] = names.random_suffix) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.options = deps.options
        self.clock = deps.clock
        self.dashboards = deps.dashboards
        self.job_metrics = deps.job_metrics
        self.random = random
        self.cleanup = Cleanup(deps)

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
            finalizers = objects.finalizers(ctx.obj)
            patch = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": objects.resource_version(ctx.obj)},
                {"op": "add", "path": "/metadata/finalizers", "value": [*finalizers, c.RAYJOB_FINALIZER]},
            ]
            updated = await self.api.patch(RAYJOBS, ctx.name, patch, ctx.namespace, patch_type="json")
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
        await self._batch_on_submission(ctx)
        cluster = await self._get_or_create_cluster(ctx)
        if cluster is None:
            return Result(REQUEUE)  # created, or in the API server but not yet in the cache
        if not ctx.status.get("dashboardURL"):
            cluster_status = dict(cluster.get("status") or {})
            if cluster_status.get("state") != c.CLUSTER_STATE_READY:
                ctx.status["rayClusterStatus"] = cluster_status
                return None
            ctx.status["dashboardURL"] = self._dashboard_url(cluster)
        if ctx.mode == c.SUBMISSION_MODE_INTERACTIVE:
            ctx.status["jobDeploymentStatus"] = WAITING
            return None
        if ctx.mode == c.SUBMISSION_MODE_K8S_JOB:
            await self._create_submitter_job(ctx, cluster)
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
        if self._deadline_passed(ctx) or self._grace_period_passed(ctx):
            return None
        cluster = await self._get_or_create_cluster(ctx)
        if cluster is None:
            return Result(REQUEUE)
        if not ctx.selector_mode:
            await self._reconcile_head_service(ctx, cluster)
        finished_at: dt.datetime | None = None
        if ctx.mode in (c.SUBMISSION_MODE_K8S_JOB, c.SUBMISSION_MODE_SIDECAR):
            failed, finished_at = self._check_submitter(ctx, cluster)
            if failed or self._submitter_timed_out(ctx, finished_at):
                return None
        info = await self._job_info(ctx, cluster, finished_at)
        if isinstance(info, JobInfo):
            self._observe(ctx, cluster, info, finished_at)
            return None
        return info

    def _submitter_timed_out(self, ctx: JobContext, finished_at: dt.datetime | None) -> bool:
        """KubeRay ``checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded``: the submitter ended 30 s ago and the Ray
        job is still not terminal."""
        if finished_at is None or (self.clock() - finished_at).total_seconds() < SUBMITTER_FINISHED_TIMEOUT:
            return False
        ctx.status.update(
            jobStatus=JOB_FAILED,
            jobDeploymentStatus=FAILED,
            reason=REASON_GRACE_PERIOD_EXCEEDED,
            message=f"The RayJob submitter finished at {finished_at:%Y-%m-%d %H:%M:%S} but the ray job did not "
            f"reach terminal state within {SUBMITTER_FINISHED_TIMEOUT:.0f}s",
        )
        return True

    def _observe(self, ctx: JobContext, cluster: Obj, info: JobInfo, finished_at: dt.datetime | None) -> None:
        """The Ray job's state into the status: terminal (with a finished submitter, where there is one) is
        ``Complete``, or ``Failed``/``AppFailed`` for a FAILED job."""
        status = ctx.status
        terminal = is_job_terminal(info.status)
        if ctx.mode in (c.SUBMISSION_MODE_K8S_JOB, c.SUBMISSION_MODE_SIDECAR):
            terminal = terminal and finished_at is not None
        state, reason = RUNNING, ""
        if terminal:
            state, reason = (FAILED, REASON_APP_FAILED) if info.status == JOB_FAILED else (COMPLETE, "")
        status.update(
            jobDeploymentStatus=state,
            rayClusterStatus=dict(cluster.get("status") or {}),
            jobStatus=info.status,
            reason=reason,
            message=info.message,
        )
        job_info = dict(status.get("rayJobInfo") or {})
        if info.start_time:
            job_info["startTime"] = times.format_time(dt.datetime.fromtimestamp(info.start_time / 1000, dt.UTC))
        if info.end_time:
            job_info["endTime"] = times.format_time(dt.datetime.fromtimestamp(info.end_time / 1000, dt.UTC))
        status["rayJobInfo"] = job_info

    async def _delete_resources(self, ctx: JobContext) -> Result | None:
        """Suspending and Retrying: the cluster and the submitter Job go first; then the attempt is reset."""
        cluster_gone = await self.cleanup.delete_cluster(ctx)
        job_gone = await self.cleanup.delete_submitter_job(ctx)
        if not (cluster_gone and job_gone):
            return Result(REQUEUE)
        status = ctx.status
        for key in ("rayClusterName", "dashboardURL", "jobId", "message", "reason", "jobStatus"):
            status[key] = ""
        status["rayClusterStatus"] = {}
        status["rayJobInfo"] = {}
        status["jobDeploymentStatus"] = SUSPENDED if status.get("jobDeploymentStatus") == SUSPENDING else NEW
        return None

    async def _suspended(self, ctx: JobContext) -> Result | None:
        if ctx.spec.suspend:
            return Result()
        ctx.status["jobStatus"] = ""
        ctx.status["jobDeploymentStatus"] = NEW
        return None

    async def _finished(self, ctx: JobContext) -> Result:
        result = await self.cleanup.after_finish(ctx)
        await self._batch_on_completion(ctx)
        return result

    # -------------------------------------------------------------------------------------------------- batch scheduler
    async def _batch_on_submission(self, ctx: JobContext) -> None:
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

    async def _batch_on_completion(self, ctx: JobContext) -> None:
        """KubeRay ``batchSchedulerOnCompletion`` (every pass of a finished RayJob): the PodGroup resized to what is
        left of the cluster, so the scheduler frees the rest; an event when it changed, a Warning when it failed."""
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
            return
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

    def _check_submitter(self, ctx: JobContext, cluster: Obj) -> tuple[bool, dt.datetime | None]:
        """KubeRay ``checkSubmitterAndUpdateStatusIfNeeded``: (the submitter failed, when it finished)."""
        if ctx.mode == c.SUBMISSION_MODE_K8S_JOB:
            return self._check_submitter_job(ctx)
        return self._check_sidecar(ctx, cluster)

    def _submitter_failed(self, ctx: JobContext, message: str) -> None:
        """AppFailed when the Ray job itself was seen failing, else SubmissionFailed with ``message``."""
        if ctx.status.get("jobStatus") == JOB_FAILED:
            ctx.status.update(jobDeploymentStatus=FAILED, reason=REASON_APP_FAILED)
        else:
            ctx.status.update(jobDeploymentStatus=FAILED, reason=REASON_SUBMISSION_FAILED, message=message)

    def _check_submitter_job(self, ctx: JobContext) -> tuple[bool, dt.datetime | None]:
        job = self.cache.get(JOBS, ctx.namespace, ctx.name)
        if job is None:  # KubeRay: an error-requeue, for good if someone deleted the Job
            raise RayJobError(f"the submitter Job {ctx.namespace}/{ctx.name} is not found")
        finished_at: dt.datetime | None = None
        for cond in (job.get("status") or {}).get("conditions") or []:
            if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
                finished_at = times.parse_time(cond.get("lastTransitionTime"))
                break
        failed = objects.condition(job, "Failed")
        if failed is None or failed.get("status") != "True":
            return False, finished_at
        message = f"Job submission has failed. Reason: {failed.get('reason', '')}. Message: {failed.get('message', '')}"
        self._submitter_failed(ctx, message)
        return True, finished_at

    def _check_sidecar(self, ctx: JobContext, cluster: Obj) -> tuple[bool, dt.datetime | None]:
        labels = {c.RAY_CLUSTER_LABEL: objects.name(cluster), c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD}
        heads = self.cache.list(PODS, ctx.namespace, labels)
        if len(heads) > 1:
            raise RayJobError(f"found multiple heads. filter labels ray.io/cluster={objects.name(cluster)}")
        if not heads:
            ctx.status.update(jobDeploymentStatus=FAILED, reason=REASON_APP_FAILED, message="Ray head pod not found.")
            return True, None
        for container in (heads[0].get("status") or {}).get("containerStatuses") or []:
            if container.get("name") != c.SUBMITTER_CONTAINER_NAME:
                continue
            terminated = (container.get("state") or {}).get("terminated")
            if not terminated:
                return False, None
            finished = times.parse_time(terminated.get("finishedAt"))
            code = int(terminated.get("exitCode") or 0)
            if code == 0:
                return False, finished
            self._submitter_failed(
                ctx,
                f"Ray head pod container {c.SUBMITTER_CONTAINER_NAME} terminated with exit code {code}: "
                f"{terminated.get('reason', '')}",
            )
            return True, finished
        return False, None

    async def _job_info(
        self, ctx: JobContext, cluster: Obj, finished_at: dt.datetime | None
    ) -> JobInfo | Result | None:
        """The Ray job's info; a Result to end the pass (HTTPMode just submitted), or None when the status says what
        happened (the submitter finished without a job)."""
        if self.dashboards is None:
            raise RayJobError("no dashboard client is configured")
        dashboard = await self.dashboards.for_cluster(cluster, str(ctx.status.get("dashboardURL") or ""))
        job_id = str(ctx.status.get("jobId") or "")
        try:
            return await dashboard.get_job_info(job_id)
        except DashboardError as exc:
            if not exc.not_found:
                raise RayJobError(f"GetJobInfo of {job_id}: {exc}") from exc
            if ctx.mode == c.SUBMISSION_MODE_HTTP:
                try:
                    await dashboard.submit_job(rj.submit_request(ctx.job, job_id))
                except DashboardError as submit_error:
                    raise RayJobError(f"SubmitJob of {job_id}: {submit_error}") from submit_error
                return Result(REQUEUE)
            if finished_at is not None:
                ctx.status.update(
                    jobDeploymentStatus=FAILED,
                    reason=REASON_APP_FAILED,
                    message="Submitter completed but Ray job not found in RayCluster.",
                )
                return None
            raise RayJobError(str(exc)) from exc

    # -------------------------------------------------------------------------------------------------- children
    async def _get_or_create_cluster(self, ctx: JobContext) -> Obj | None:
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
            self.recorder.event(ctx.obj, WARNING, c.EVENT_RAYCLUSTER_NOT_FOUND, "Create", note)
            raise RayJobError(f"clusterSelector mode is enabled, but RayCluster {ctx.namespace}/{name} is not found")
        body = rj.rayjob_cluster(
            ctx.job, name, self.options, job_id=str(ctx.status.get("jobId") or ""), dashboard_url=""
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

    def _dashboard_url(self, cluster: Obj) -> str:
        """KubeRay ``FetchHeadServiceURL(cluster, "dashboard")``, from the cluster's head Service in the cache."""
        service_name, head_service = cached_head_service(self.cache, cluster)
        if head_service is None:
            raise RayJobError(f"the head Service {objects.namespace(cluster)}/{service_name} is not found")
        try:
            return rj.dashboard_url(head_service, cluster_domain=self.options.cluster_domain)
        except rj.RayJobBuildError as exc:
            raise RayJobError(str(exc)) from exc

    async def _create_submitter_job(self, ctx: JobContext, cluster: Obj) -> None:
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

    async def _reconcile_head_service(self, ctx: JobContext, cluster: Obj) -> None:
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
            and status.get("reason") != REASON_DEADLINE_EXCEEDED
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
            or status_needs_update(old.get("rayClusterStatus") or {}, new.get("rayClusterStatus") or {})
        )
        if not changed:
            return
        if after in (COMPLETE, FAILED):
            new["endTime"] = times.format_time(self.clock())
        body = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "metadata": {**objects.meta(obj), "resourceVersion": version or objects.resource_version(obj)},
            "status": {k: v for k, v in new.items() if v is not None},
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

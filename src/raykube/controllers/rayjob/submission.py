"""Following a RayJob's submission, as KubeRay v1.7.0 ``rayjob_controller.go`` does in Running: whether the
submitter (the K8sJobMode Job, or the SidecarMode container on the head) failed or finished
(``checkSubmitterAndUpdateStatusIfNeeded``, ``checkSubmitterFinishedTimeoutAndUpdateStatusIfNeeded``), the Ray job's
info from the dashboard (where HTTPMode submits the job), and the Ray job's state into the status.

Failing status checks (v1.7.0): the first failed ``GetJobInfo`` (or HTTPMode resubmission) sets
``status.jobStatusCheckFailureStartTime`` and is written; later failures only requeue; a good check clears it; once
it is older than ``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS`` (300) the RayJob fails with ``JobStatusCheckTimeoutExceeded``
(:meth:`Submission.status_check_timed_out`), which, like ``DeadlineExceeded``, is never retried.

With the ``SidecarSubmitterRestart`` gate (v1.7.0) the SidecarMode submitter container restarts on failure, so a
failed exit no longer fails the RayJob: only a submitter that has restarted ``submitterConfig.backoffLimit`` times
(2 without) does, with ``SubmissionFailed`` (``AppFailed`` when the Ray job was seen FAILED).
"""

from __future__ import annotations

import datetime as dt
import logging

from raykube.api import constants as c
from raykube.api.dashboard import JOB_FAILED, DashboardError, JobInfo, is_job_terminal
from raykube.builders import rayjob as rj
from raykube.controllers.base import Result
from raykube.controllers.rayjob.context import (
    COMPLETE,
    FAILED,
    REASON_APP_FAILED,
    REASON_GRACE_PERIOD_EXCEEDED,
    REASON_STATUS_CHECK_TIMEOUT,
    REASON_SUBMISSION_FAILED,
    REQUEUE,
    RUNNING,
    SUBMITTER_FINISHED_TIMEOUT,
    JobContext,
    Obj,
    RayJobError,
    WithDeps,
)
from raykube.kube import objects, times
from raykube.kube.resources import JOBS, PODS

log = logging.getLogger(__name__)

CHECK_FAILURE_START = "jobStatusCheckFailureStartTime"


class Submission(WithDeps):
    """The RayJob reconciler's reads of the submitter and the dashboard in Running, written into ``ctx.status``."""

    def check_submitter(self, ctx: JobContext, cluster: Obj) -> tuple[bool, dt.datetime | None]:
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
            if container.get("name") == c.SUBMITTER_CONTAINER_NAME:
                return self._check_sidecar_container(ctx, container)
        return False, None

    def _check_sidecar_container(self, ctx: JobContext, container: Obj) -> tuple[bool, dt.datetime | None]:
        """The submitter container's status: without SidecarSubmitterRestart a failed exit fails the RayJob
        (``checkSidecarContainerStatus``), with it only running out of restarts does; finished when terminated."""
        terminated = (container.get("state") or {}).get("terminated")
        finished = times.parse_time(terminated.get("finishedAt")) if terminated else None
        if self.options.gate(c.GATE_SIDECAR_SUBMITTER_RESTART):
            if not self._restarts_exhausted(ctx, container):
                return False, finished
            self._submitter_failed(
                ctx,
                f"Ray head pod submitter container {c.SUBMITTER_CONTAINER_NAME} terminated after exceeding the "
                "maximum restart count",
            )
            return True, finished
        code = int(terminated.get("exitCode") or 0) if terminated else 0
        if code == 0:
            return False, finished
        self._submitter_failed(
            ctx,
            f"Ray head pod container {c.SUBMITTER_CONTAINER_NAME} terminated with exit code {code}: "
            f"{terminated.get('reason', '') if terminated else ''}",
        )
        return True, finished

    @staticmethod
    def _restarts_exhausted(ctx: JobContext, container: Obj) -> bool:
        """KubeRay v1.7.0 ``checkIsRestartCountExceeded`` (SidecarSubmitterRestart): once the submitter has
        terminated at least once (``lastState.terminated``) and is not now a clean exit, its ``restartCount`` has
        reached ``submitterConfig.backoffLimit`` (2 without)."""
        if not (container.get("lastState") or {}).get("terminated"):
            return False
        terminated = (container.get("state") or {}).get("terminated")
        if terminated and int(terminated.get("exitCode") or 0) == 0:
            return False
        config = ctx.spec.submitter_config
        limit = c.SUBMITTER_DEFAULT_BACKOFF_LIMIT
        if config is not None and config.backoff_limit is not None:
            limit = config.backoff_limit
        return int(container.get("restartCount") or 0) >= limit

    def submitter_timed_out(self, ctx: JobContext, finished_at: dt.datetime | None) -> bool:
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

    async def job_info(self, ctx: JobContext, cluster: Obj, finished_at: dt.datetime | None) -> JobInfo | Result | None:
        """The Ray job's info; a Result to end the pass (HTTPMode just submitted), or None when the status says what
        happened (the submitter finished without a job)."""
        if self.dashboards is None:
            raise RayJobError("no dashboard client is configured")
        dashboard = await self.dashboards.for_cluster(cluster, str(ctx.status.get("dashboardURL") or ""))
        job_id = str(ctx.status.get("jobId") or "")
        try:
            info = await dashboard.get_job_info(job_id)
        except DashboardError as exc:
            if not exc.not_found:
                log.info("GetJobInfo of %s failed: %s", job_id, exc)
                return None if self._record_check_failure(ctx) else Result(REQUEUE)
            if ctx.mode == c.SUBMISSION_MODE_HTTP:
                try:
                    await dashboard.submit_job(rj.submit_request(ctx.job, job_id))
                except DashboardError as submit_error:
                    log.info("SubmitJob of %s failed: %s", job_id, submit_error)
                    return None if self._record_check_failure(ctx) else Result(REQUEUE)
                return None if ctx.status.pop(CHECK_FAILURE_START, None) is not None else Result(REQUEUE)
            if finished_at is not None:
                ctx.status.update(
                    jobDeploymentStatus=FAILED,
                    reason=REASON_APP_FAILED,
                    message="Submitter completed but Ray job not found in RayCluster.",
                )
                return None
            return Result(REQUEUE)  # KubeRay: not found before the submitter finished is a plain requeue
        ctx.status.pop(CHECK_FAILURE_START, None)  # a good check resets the timer
        return info

    def _record_check_failure(self, ctx: JobContext) -> bool:
        """``recordJobStatusCheckFailure``: the first failure's time; True when it was just set (write it)."""
        if ctx.status.get(CHECK_FAILURE_START):
            return False
        ctx.status[CHECK_FAILURE_START] = times.format_time(self.clock())
        return True

    def status_check_timed_out(self, ctx: JobContext, timeout_seconds: int) -> bool:
        """``checkJobStatusCheckTimeoutAndUpdateStatusIfNeeded``: the checks have failed for the whole timeout."""
        started = times.parse_time(ctx.status.get(CHECK_FAILURE_START))
        if started is None or self.clock() < started + dt.timedelta(seconds=timeout_seconds):
            return False
        ctx.status.update(
            jobDeploymentStatus=FAILED,
            reason=REASON_STATUS_CHECK_TIMEOUT,
            message=f"Job status checks have been failing since {started:%Y-%m-%d %H:%M:%S}; exceeded timeout of "
            f"{timeout_seconds}s",
        )
        return True

    def observe(self, ctx: JobContext, cluster: Obj, info: JobInfo, finished_at: dt.datetime | None) -> None:
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

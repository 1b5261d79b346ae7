"""What the RayJob controller's modules share: one pass's :class:`JobContext`, the ``jobDeploymentStatus`` and
``status.reason`` names, KubeRay's requeue and timeout constants, and :class:`RayJobError`.

The underscored names are private to this package, not to this module: the other modules import them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from raykube.api import constants as c
from raykube.api.rayjob import RayJobSpec
from raykube.api.resources import RayJob
from raykube.controllers.base import Context, Deps
from raykube.kube.errors import ApiError

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
REASON_STATUS_CHECK_TIMEOUT = c.JOB_REASON_STATUS_CHECK_TIMEOUT_EXCEEDED

Obj = Mapping[str, Any]


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


class WithDeps:
    """The dependencies (:class:`Deps`) the RayJob reconciler and its parts (children, submission, cleanup) keep."""

    def __init__(self, deps: Deps) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.options = deps.options
        self.clock = deps.clock
        self.dashboards = deps.dashboards


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

"""Ray's dashboard REST API as KubeRay's controllers use it: job submission and status (``/api/jobs/``).

The shapes follow Ray's Job REST API (``ray.dashboard.modules.job``: ``JobDetails``, ``JobSubmitRequest``) as KubeRay
v1.6.1 reads and writes them (``ray-operator/controllers/ray/utils/types/dashboard_httpclient.go``,
``utils/dashboardclient/dashboard_httpclient.go``). Pure data: the HTTP client lives in the runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

# Ray's JobStatus values (KubeRay apis/ray/v1 rayjob_types.go JobStatus).
JOB_PENDING: Final = "PENDING"
JOB_RUNNING: Final = "RUNNING"
JOB_STOPPED: Final = "STOPPED"
JOB_SUCCEEDED: Final = "SUCCEEDED"
JOB_FAILED: Final = "FAILED"
# KubeRay rayjob_types.go IsJobTerminal.
TERMINAL_JOB_STATUSES: Final = frozenset({JOB_STOPPED, JOB_SUCCEEDED, JOB_FAILED})
# The dashboard's answer to a second submission with the same id (a 500 whose body says so).
DUPLICATE_SUBMISSION_TEXT: Final = "Please use a different submission_id"


def is_job_terminal(status: str) -> bool:
    return status in TERMINAL_JOB_STATUSES


@dataclass(frozen=True)
class JobInfo:
    """``GET /api/jobs/<id>``: the fields KubeRay reads (times are Unix milliseconds, 0 when unknown)."""

    status: str = ""
    message: str = ""
    start_time: int = 0
    end_time: int = 0
    job_id: str = ""
    submission_id: str = ""
    entrypoint: str = ""
    error_type: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    runtime_env: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> JobInfo:
        def text(key: str) -> str:
            value = body.get(key)
            return "" if value is None else str(value)

        def millis(key: str) -> int:
            value = body.get(key)
            return int(value) if isinstance(value, int | float) and value > 0 else 0

        metadata = body.get("metadata")
        runtime_env = body.get("runtime_env")
        return cls(
            status=text("status"),
            message=text("message"),
            start_time=millis("start_time"),
            end_time=millis("end_time"),
            job_id=text("job_id"),
            submission_id=text("submission_id"),
            entrypoint=text("entrypoint"),
            error_type=text("error_type"),
            metadata={str(k): str(v) for k, v in metadata.items()} if isinstance(metadata, Mapping) else {},
            runtime_env=dict(runtime_env) if isinstance(runtime_env, Mapping) else {},
        )


class DashboardError(Exception):
    """A dashboard call that failed; ``not_found`` for a job the cluster does not know (HTTP 404), which KubeRay
    reports as ``Job <id> does not exist on the cluster`` and its callers treat as "not submitted yet"."""

    def __init__(self, message: str, *, status: int = 0, not_found: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.not_found = not_found


class DuplicateSubmission(DashboardError):
    """``POST /api/jobs/`` for a submission id the cluster already has."""

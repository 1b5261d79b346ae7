"""A RayJob whose status the operator can no longer read, on real Ray (process nodes).

ray-project/kuberay#1489 (PR#1583: a RayJob stuck in FailedToGetJobStatus while port 8265 was blocked) and PR#4916
(KubeRay v1.7.0: such a RayJob fails with ``JobStatusCheckTimeoutExceeded`` once the checks have failed for
``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS``). Here the head's dashboard is stopped (SIGSTOP) while a RayJob runs: its
port stays open and nothing answers, so the operator's job-info queries time out, and, with the timeout at 20 s (the
operator's environment, as the Helm chart's ``env`` sets it), the RayJob fails with that reason. ``raykube doctor
rayjob/NAME`` names the stuck dashboard (R14, what the head's own probe saw inside the Pod) as the root cause and the
failed RayJob (J05) under it.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
from lightkube import AsyncClient

from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.doctor_support import assert_fires
from tests.integration.process import ProcessSandbox
from tests.integration.test_chapter_workloads import RAYJOB
from tests.integration.test_doctor_inside import head_of, ray_process_of, small_cluster
from tests.integration.test_process_runtime import RAY_READY, RAYCLUSTER, wait_cluster

CLUSTER = "stuckdash"
JOB = "sleeper"


def dashboard_of(pod_ip: str) -> int:
    """The PID of the Ray dashboard (``dashboard/dashboard.py``) whose GCS address is ``pod_ip``."""
    return ray_process_of(pod_ip, b"dashboard/dashboard.py", b"--gcs-address=")


def sleeper() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": JOB},
        "spec": {
            "entrypoint": "python -c 'import time; time.sleep(900)'",
            "submissionMode": "HTTPMode",
            "clusterSelector": {"ray.io/cluster": CLUSTER},
        },
    }


async def job_status(pkube: AsyncClient, ns: str) -> dict[str, Any]:
    return dict((await pkube.get(RAYJOB, JOB, namespace=ns)).get("status") or {})


@pytest.mark.operator_env({"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "20"})
async def test_a_dashboard_that_stops_answering_fails_a_running_rayjob_and_is_named_as_its_cause(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    await pkube.create(RAYCLUSTER.from_dict(small_cluster(CLUSTER, workers=0)), namespace=ns)
    await wait_cluster(pkube, ns, CLUSTER, lambda s: s.get("state") == "ready", "ready")
    await pkube.create(RAYJOB.from_dict(sleeper()), namespace=ns)  # type: ignore[call-overload]

    async def running() -> bool | NotYet:
        status = await job_status(pkube, ns)
        state = (status.get("jobDeploymentStatus"), status.get("jobStatus"))
        return True if state == ("Running", "RUNNING") else NotYet(str(state))

    await wait_for(running, RAY_READY, what="the RayJob running", interval=1.0)
    head = await head_of(pkube, ns, CLUSTER)
    dashboard = dashboard_of(str(head.status.podIP))  # type: ignore[union-attr]
    os.kill(dashboard, signal.SIGSTOP)
    try:

        async def timed_out() -> dict[str, Any] | NotYet:
            status = await job_status(pkube, ns)
            if status.get("jobDeploymentStatus") == "Failed":
                return status
            return NotYet(f"{status.get('jobDeploymentStatus')}, checks failing since "
                          f"{status.get('jobStatusCheckFailureStartTime')}")  # fmt: skip

        status = await wait_for(timed_out, RAY_READY, what="the RayJob failed by its status checks", interval=2.0)
        assert status.get("reason") == "JobStatusCheckTimeoutExceeded", status
        assert status.get("jobStatus") == "RUNNING", status  # Ray's own job never ended: only its checks did

        code, report = proc.doctor(ns, f"rayjob/{JOB}", "--starting-grace", "0")
        assert code == 1
        roots = [f for f in report["findings"] if not f.get("causedBy") and f["severity"] in ("error", "critical")]
        assert_fires(roots, "R14", context=str([(f["rule"], f["title"]) for f in roots]))
        assert [f["rule"] for f in roots] == ["R14"], [(f["rule"], f["title"]) for f in roots]
        (r14,) = roots
        assert "dashboard accepts connections on 8265" in r14["title"], r14["title"]
        seen = {e.get("path"): str(e.get("value")) for e in r14["evidence"] if e["source"] == "ray"}
        assert "timed out" in seen.get("GET http://127.0.0.1:8265/api/gcs_healthz", ""), seen
        (j05,) = [f for f in report["findings"] if f["rule"] == "J05"]
        assert "JobStatusCheckTimeoutExceeded" in j05["title"] and r14["id"] in j05["causedBy"], j05
    finally:
        os.kill(dashboard, signal.SIGCONT)

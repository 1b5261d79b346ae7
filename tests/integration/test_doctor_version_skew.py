"""A worker group on another Ray version than the head, on real Ray (process nodes).

ray-project/kuberay#1224: Pods of one RayCluster on different Ray images. The 2.51.0 worker's wait-gcs-ready (its
own Ray) refuses the 2.52.0 GCS ("RuntimeError: Ray version mismatch: cluster has Ray version 2.52.0 but local Ray
version is 2.51.0", seen here) and the worker never leaves Init:0/1. ``raykube doctor`` names R06 as the root
cause with Ray's own line from that init container's log, and the worker waiting for the GCS (E01) under it; the
group on the head's version beside it joined and is not named (the near miss).
"""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import AsyncClient

from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.doctor_support import assert_fires
from tests.integration.process import ProcessSandbox
from tests.integration.test_doctor_inside import small_cluster
from tests.integration.test_process_runtime import RAY_READY, RAYCLUSTER

CLUSTER = "skew"
OLDER = "rayproject/ray:2.51.0"


def skewed() -> dict[str, Any]:
    body = small_cluster(CLUSTER, workers=1)
    same = body["spec"]["workerGroupSpecs"][0]
    older = {**same, "groupName": "older", "template": {"spec": {"containers": [
        {**same["template"]["spec"]["containers"][0], "image": OLDER}]}}}  # fmt: skip
    body["spec"]["workerGroupSpecs"].append(older)
    return body


# Minutes of real Ray with a second Ray version's venv: make test stays under 20 minutes on 2 cores without it;
# make conformance runs it (pytest -m long). Its rule change is unit-tested in test_doctor_inside.py.
@pytest.mark.long
async def test_a_worker_group_on_another_ray_version_is_named_from_rays_own_line(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    await pkube.create(RAYCLUSTER.from_dict(skewed()), namespace=ns)

    # KubeRay's wait-gcs-ready (the worker's own Ray) refuses the head's version and keeps the worker in Init:0/1,
    # saying so in its log: R06 is the root cause, the worker waiting for the GCS (E01) hangs under it.
    async def named() -> dict[str, Any] | NotYet:
        code, report = proc.doctor(ns, f"raycluster/{CLUSTER}", "--starting-grace", "0")
        roots = [f for f in report["findings"] if not f.get("causedBy") and f["severity"] in ("error", "critical")]
        if code == 1 and any(f["rule"] == "R06" for f in roots):
            return report
        return NotYet(f"exit {code}, roots {[(f['rule'], f['title']) for f in roots]}")

    report = await wait_for(named, RAY_READY, what="R06 from the 2.51.0 worker's own line", interval=5.0)
    roots = [f for f in report["findings"] if not f.get("causedBy") and f["severity"] in ("error", "critical")]
    assert [f["rule"] for f in roots] == ["R06"], [(f["rule"], f["title"]) for f in roots]
    (r06,) = roots
    lines = [str(e.get("value")) for e in r06["evidence"] if e["source"] == "log"]
    assert any("version mismatch" in line.lower() and "2.51.0" in line for line in lines), r06["evidence"]
    assert "older" in r06["object"]["name"], r06["object"]
    assert_fires([f for f in report["findings"] if f.get("causedBy")], "E01")
    assert not [f for f in report["findings"] if f["rule"] == "R06" and "-w-worker-" in f["object"]["name"]]

"""A demand Ray's autoscaler can never place, on real Ray with KubeRay's autoscaler sidecar (process nodes).

ray-project/ray#27910, ray-project/kuberay#653: a task asks for more than any worker group's Pod gives Ray, the
autoscaler logs "No available node types can fulfill resource request" and adds nothing, and the job waits without
an error. Here a RayJob's task asks for 8 CPUs on a cluster whose workers give Ray 1 (250m rounds up to 1, as
KubeRay passes it to ``ray start``): ``raykube doctor`` names G10 as the root cause, with the autoscaler's own line
from the head's session logs (Ray 2.52's sidecar runs autoscaler v2: ``events/event_AUTOSCALER.log``), the pending
demand from ``ray status`` and each group's logical resources. Then the fix the finding gives (a group whose Pods
give Ray 8 CPUs, here ``rayStartParams num-cpus``): the autoscaler adds that Pod, the task runs, the RayJob succeeds
and G10 is quiet (the near miss: the same cluster, the same old log line).
"""

from __future__ import annotations

from typing import Any

from lightkube import AsyncClient
from lightkube.types import PatchType

from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.doctor_support import assert_fires, assert_quiet
from tests.integration.process import ProcessSandbox
from tests.integration.test_chapter_workloads import RAYJOB
from tests.integration.test_process_runtime import RAY_READY, RAYCLUSTER, container, pod_of, status, wait_cluster

IMAGE = "rayproject/ray:2.52.0"
NAME = "scaled"
# One task that needs 8 logical CPUs; it prints its answer once placed.
ENTRYPOINT = (
    "python -c \"import ray; ray.init(); f = ray.remote(num_cpus=8)(lambda: 'placed'); print(ray.get(f.remote()))\""
)


def autoscaled_cluster() -> dict[str, Any]:
    small = {"limits": {"cpu": "250m", "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "512Mi"}}
    head = {"containers": [{"name": "ray-head", "image": IMAGE, "resources": small}]}
    worker = {"containers": [{"name": "ray-worker", "image": IMAGE, "resources": small}]}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": NAME},
        "spec": {
            "rayVersion": "2.52.0",
            "enableInTreeAutoscaling": True,
            "autoscalerOptions": {"idleTimeoutSeconds": 600},
            "headGroupSpec": {"rayStartParams": {"num-cpus": "0"}, "template": {"spec": head}},
            "workerGroupSpecs": [
                {"groupName": "small", "replicas": 0, "minReplicas": 0, "maxReplicas": 2, "rayStartParams": {},
                 "template": {"spec": worker}},
            ],
        },
    }  # fmt: skip


def rayjob() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "wants-eight"},
        "spec": {
            "entrypoint": ENTRYPOINT,
            "submissionMode": "HTTPMode",
            "clusterSelector": {"ray.io/cluster": NAME},
        },
    }


async def test_a_demand_no_worker_group_can_hold_is_the_root_cause_until_a_group_fits(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    await pkube.create(RAYCLUSTER.from_dict(autoscaled_cluster()), namespace=ns)
    await wait_cluster(pkube, ns, NAME, lambda s: s.get("state") == "ready", "ready")
    await pkube.create(RAYJOB.from_dict(rayjob()), namespace=ns)

    async def named() -> dict[str, Any] | NotYet:
        code, report = proc.doctor(ns, f"raycluster/{NAME}")
        found = [f for f in report["findings"] if f["rule"] == "G10"]
        return (
            report if found and code == 1 else NotYet(f"exit {code}, rules {[f['rule'] for f in report['findings']]}")
        )

    # The autoscaler logs its line within a few of its 10 s loops once the job's task is waiting.
    report = await wait_for(named, RAY_READY, what="G10 from the autoscaler's line", interval=5.0)
    roots = [f for f in report["findings"] if not f.get("causedBy") and f["severity"] in ("error", "critical")]
    assert_fires(roots, "G10", context=str([(f["rule"], f["title"]) for f in roots]))
    (g10,) = [f for f in roots if f["rule"] == "G10"]
    assert "{'CPU': 8.0}" in g10["title"], g10["title"]
    seen = {e.get("path"): str(e.get("value")) for e in g10["evidence"]}
    # Ray 2.52's sidecar runs autoscaler v2, which says it in events/event_AUTOSCALER.log (v1: monitor.log).
    said = [v for p, v in seen.items() if ("AUTOSCALER" in str(p) or "monitor" in str(p)) and "can fulfill" in v]
    assert said, seen
    assert seen["spec.workerGroupSpecs[0] (small) gives Ray"].startswith("CPU 1,"), seen
    assert seen["spec.headGroupSpec gives Ray"].startswith("CPU 0,"), seen
    assert "{'CPU': 8.0}" in seen.get("ray status: pending demand", ""), seen

    # The finding's fix: the group's Pods give Ray 8 CPUs. The autoscaler reads the RayCluster again, adds one, the
    # task runs there and the RayJob succeeds; the old line stays in the log and G10 is quiet.
    patch = {"spec": {"workerGroupSpecs": [{**autoscaled_cluster()["spec"]["workerGroupSpecs"][0],
                                            "rayStartParams": {"num-cpus": "8"}}]}}  # fmt: skip
    await pkube.patch(RAYCLUSTER, NAME, patch, namespace=ns, patch_type=PatchType.MERGE)

    async def succeeded() -> bool | NotYet:
        job = await pkube.get(RAYJOB, "wants-eight", namespace=ns)
        status = dict(job.get("status") or {})
        return True if status.get("jobStatus") == "SUCCEEDED" else NotYet(str(status.get("jobStatus")))

    await wait_for(succeeded, RAY_READY, what="the RayJob to succeed on the new worker", interval=2.0)
    _, report = proc.doctor(ns, f"raycluster/{NAME}")
    assert_quiet(report["findings"], "G10")


async def test_an_autoscaler_without_the_worker_group_field_stops_and_is_named_until_the_field_is_there(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    """G11 on real Ray: a head-only RayCluster with the autoscaler on and no ``workerGroupSpecs`` at all (what a
    head-only RayService in the demo first had). Ray's autoscaler reads ``spec["workerGroupSpecs"]`` with no default,
    its container stops at start with ``KeyError: 'workerGroupSpecs'`` and restarts, and the head Pod is not Ready:
    ``raykube doctor`` names G11 as the root cause with the container's restarts. With ``workerGroupSpecs: []`` (the
    fix the finding gives) the cluster becomes ready and G11 is quiet."""
    body = autoscaled_cluster()
    body["metadata"]["name"] = "headonly"
    del body["spec"]["workerGroupSpecs"]
    await pkube.create(RAYCLUSTER.from_dict(body), namespace=ns)
    head = await pod_of(pkube, ns, "head")

    async def stopped() -> dict[str, Any] | NotYet:
        autoscaler = container(await status(pkube, ns, head), "autoscaler")
        return autoscaler if autoscaler.get("restartCount") else NotYet(f"autoscaler: {autoscaler.get('state')}")

    await wait_for(stopped, RAY_READY, what="the autoscaler container to stop and restart", interval=2.0)
    previous = proc.kubectl("logs", "-n", ns, head, "-c", "autoscaler", "--previous").stdout
    assert "KeyError: 'workerGroupSpecs'" in previous, previous[-1500:]
    code, report = proc.doctor(ns, "raycluster/headonly")
    roots = [f for f in report["findings"] if not f.get("causedBy") and f["severity"] in ("error", "critical")]
    assert code == 1 and [f["rule"] for f in roots] == ["G11"], [(f["rule"], f["title"]) for f in roots]
    assert_fires(roots, "G11")
    seen = {e.get("path"): e.get("value") for e in roots[0]["evidence"]}
    assert seen["spec.workerGroupSpecs"] == "absent" and seen["status.containerStatuses[autoscaler].restartCount"]

    await pkube.patch(RAYCLUSTER, "headonly", {"spec": {"workerGroupSpecs": []}}, namespace=ns,
                      patch_type=PatchType.MERGE)  # fmt: skip
    await wait_cluster(pkube, ns, "headonly", lambda s: s.get("state") == "ready", "ready once the field is there")
    _, report = proc.doctor(ns, "raycluster/headonly")
    assert_quiet(report["findings"], "G11")

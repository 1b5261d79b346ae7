"""RayJobs on process nodes with real Ray: raykube's RayJob controller from ``kubectl apply`` to ``SUCCEEDED``.

The operator runs in the test process, outside the cluster, so it reaches each cluster's dashboard through the API
server (``--use-kubernetes-proxy``), as KubeRay must when it runs outside a cluster. The submitter Pod runs KubeRay's
``ray job submit`` command from the Ray venv on a process node.

The last tests run on the kwok sandbox (no Ray): what the API server and its Job controller make of the submitters
KubeRay v1.7.0 builds (the K8sJobMode Pods' labels, the SidecarSubmitterRestart container on Kubernetes 1.36).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from lightkube import AsyncClient
from lightkube.codecs import from_dict
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.core_v1 import Event, Pod

from raykube.api import constants as c
from raykube.api.resources import RAYJOBS
from raykube.kube.client import Kube
from raykube.kube.resources import JOBS, PODS
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.support import operator_on

IMAGE = "rayproject/ray:2.52.0"
DONE = 420.0  # generous: a Ray head and a job on two loaded cores
RayJobRes = create_namespaced_resource("ray.io", "v1", "RayJob", "rayjobs")
RayClusterRes = create_namespaced_resource("ray.io", "v1", "RayCluster", "rayclusters")


def rayjob(name: str, entrypoint: str, **spec: Any) -> dict[str, Any]:
    head = {
        "name": "ray-head",
        "image": IMAGE,
        "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {
            "entrypoint": entrypoint,
            "rayClusterSpec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
            },
            **spec,
        },
    }


async def job_status(kube: AsyncClient, ns: str, name: str) -> dict[str, Any]:
    obj = await kube.get(RayJobRes, name, namespace=ns)
    return dict(obj.to_dict().get("status") or {})


async def wait_job(
    kube: AsyncClient, ns: str, name: str, states: tuple[str, ...], what: str, seconds: float = DONE
) -> dict[str, Any]:
    async def predicate() -> dict[str, Any] | NotYet:
        status = await job_status(kube, ns, name)
        summary = {k: status.get(k) for k in ("jobDeploymentStatus", "jobStatus", "reason", "message", "failed")}
        return status if status.get("jobDeploymentStatus") in states else NotYet(json.dumps(summary))

    found: dict[str, Any] = await wait_for(predicate, seconds, what=f"RayJob {ns}/{name} {what}")
    return found


# Ray's own client, run by the head Pod's Ray venv inside the Pod (its network namespace: the dashboard on loopback).
RAY_JOBS = """
import json, ray
from ray.job_submission import JobSubmissionClient
jobs = JobSubmissionClient("http://127.0.0.1:8265").list_jobs()
listed = [{"submission_id": j.submission_id, "status": j.status.value, "entrypoint": j.entrypoint} for j in jobs]
print(json.dumps({"ray": ray.__version__, "jobs": listed}))
"""


async def ray_jobs(proc: ProcessSandbox, kube: AsyncClient, ns: str, cluster: str) -> dict[str, Any]:
    """``JobSubmissionClient.list_jobs()`` as the head Pod of ``cluster`` answers it (``kubectl exec``), with the
    version of the Ray that ran the client."""
    labels: dict[str, Any] = {"ray.io/cluster": cluster, "ray.io/node-type": "head"}
    [head] = [p.metadata.name async for p in kube.list(Pod, namespace=ns, labels=labels) if p.metadata]
    run = await asyncio.to_thread(proc.kubectl, "exec", "-n", ns, str(head), "--", "python", "-c", RAY_JOBS)
    assert run.returncode == 0, run.stdout[-1000:] + run.stderr[-2000:]
    seen: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return seen


async def test_a_rayjob_runs_to_succeeded_and_prints_kuberays_columns(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    entry = "python -c \"import ray; ray.init(); print('resources', ray.cluster_resources()['CPU'])\""
    await pkube.create(from_dict(rayjob("hello", entry)), namespace=ns)  # type: ignore[call-overload]
    status = await wait_job(pkube, ns, "hello", ("Complete", "Failed"), "to finish")
    assert (status["jobDeploymentStatus"], status["jobStatus"], status["succeeded"]) == ("Complete", "SUCCEEDED", 1)
    assert status["jobId"].startswith("hello-") and status["rayClusterName"].startswith("hello-")
    assert status["dashboardURL"] == f"{status['rayClusterName']}-head-svc.{ns}.svc.cluster.local:8265"
    assert status["startTime"] and status["endTime"] and status["rayJobInfo"]["endTime"]

    logs = proc.kubectl("logs", "-n", ns, "job/hello")
    assert "resources 1.0" in logs.stdout, logs.stdout[-2000:] + logs.stderr
    table = proc.kubectl("get", "rayjob", "-n", ns, "hello").stdout.split("\n")
    assert table[0].split() == ["NAME", "JOB", "STATUS", "DEPLOYMENT", "STATUS", "RAY", "CLUSTER", "NAME", "START",
                                "TIME", "END", "TIME", "AGE"]  # fmt: skip
    assert table[1].split()[:3] == ["hello", "SUCCEEDED", "Complete"]

    # The Ray job itself, as Ray's dashboard reports it through the head Service the RayJob made.
    path = f"/api/v1/namespaces/{ns}/services/hello-head-svc:dashboard/proxy/api/jobs/{status['jobId']}"
    raw = proc.kubectl("get", "--raw", path)
    assert json.loads(raw.stdout)["status"] == "SUCCEEDED", raw.stderr
    # And as Ray's JobSubmissionClient lists it, in the head Pod: the one job, under the RayJob's id and status.
    seen = await ray_jobs(proc, pkube, ns, status["rayClusterName"])
    assert [(j["submission_id"], j["status"]) for j in seen["jobs"]] == [(status["jobId"], status["jobStatus"])]
    assert seen["ray"] == IMAGE.rpartition(":")[2]  # the image's Ray: the process runtime's venv for it


async def test_a_failing_entrypoint_is_retried_on_new_clusters_then_app_failed(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    """backoffLimit 1: two attempts, the second on a new cluster made once the first is deleted; ``failed: 2``."""
    body = rayjob("fails", "python -c 'import sys; sys.exit(3)'", backoffLimit=1, shutdownAfterJobFinishes=True)
    await pkube.create(from_dict(body), namespace=ns)  # type: ignore[call-overload]
    status = await wait_job(pkube, ns, "fails", ("Failed",), "to fail twice", seconds=2 * DONE)
    assert (status["jobStatus"], status["reason"], status["failed"]) == ("FAILED", "AppFailed", 2)
    assert "exit code 3" in status["message"]

    async def clusters_gone() -> bool | NotYet:
        left = [c.metadata.name async for c in pkube.list(RayClusterRes, namespace=ns)]  # type: ignore[union-attr]
        return True if not left else NotYet(f"RayClusters left: {left}")

    await wait_for(clusters_gone, 120, what="shutdownAfterJobFinishes to delete the last cluster")

    # One cluster after another: the RayJob's events name two clusters, the first deleted before the second is made.
    events = sorted(
        (e for e in [ev async for ev in pkube.list(Event, namespace=ns)] if e.involvedObject.name == "fails"),
        key=lambda e: (e.eventTime or e.firstTimestamp, e.metadata.name if e.metadata else ""),
    )
    created = [
        ((e.message or "").rpartition("/")[2], e.eventTime or e.firstTimestamp)  # events.k8s.io/v1: no firstTimestamp
        for e in events
        if e.reason == "CreatedRayCluster"
    ]
    deleted = [
        ((e.message or "").rpartition("/")[2], e.eventTime or e.firstTimestamp)
        for e in events
        if e.reason == "DeletedRayCluster"
    ]
    assert len({name for name, _ in created}) == 2, [(e.reason, e.message) for e in events]
    assert [name for name, _ in deleted[:1]] == [name for name, _ in created[:1]], (created, deleted)
    for (_, gone), (_, made) in zip(deleted[:1], created[1:], strict=True):
        assert gone is not None and made is not None and gone <= made, (created, deleted)


async def test_http_mode_submits_through_the_dashboard(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    body = rayjob("http", "python -c 'print(6 * 7)'", submissionMode="HTTPMode")
    await pkube.create(from_dict(body), namespace=ns)  # type: ignore[call-overload]
    status = await wait_job(pkube, ns, "http", ("Complete", "Failed"), "to finish")
    assert (status["jobDeploymentStatus"], status["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert proc.kubectl("get", "job", "-n", ns, "http").returncode != 0  # HTTPMode has no submitter Job


# ---------------------------------------------------------------------------------------------------- kwok sandbox

ORIGINATED = {
    "ray.io/originated-from-cr-name": "labelled",
    "ray.io/originated-from-crd": "RayJob",
    "app.kubernetes.io/created-by": "kuberay-operator",
}


async def rayjob_status(kube: Kube, namespace: str, name: str, key: str) -> str:
    async def value() -> str | NotYet:
        current = await kube.get(RAYJOBS, name, namespace)
        found = (current.get("status") or {}).get(key)
        return str(found) if found else NotYet(f"no status.{key} yet: {current.get('status')}")

    found: str = await wait_for(value, 90, what=f"RayJob {namespace}/{name} status.{key}")
    return found


async def test_the_k8s_job_submitter_waits_for_gcs_and_its_pods_carry_the_rayjobs_labels(
    runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    """KubeRay v1.7.0 RJ-2 and RJ-4: the submitter Job's Pod template (a user's, with labels of its own) gets
    ``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd: RayJob`` and
    ``app.kubernetes.io/created-by: kuberay-operator`` over the user's, the Pod the Job controller makes carries
    them, and its command first waits for the dashboard's ``api/gcs_healthz`` at the RayJob's dashboard URL."""
    body = rayjob("labelled", "python -c 'print(1)'")
    user_labels = {"team": "a", "app.kubernetes.io/created-by": "me"}
    body["spec"]["submitterPodTemplate"] = {
        "metadata": {"labels": user_labels},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "mine", "image": IMAGE}]},
    }
    await runtime_kube.create(RAYJOBS, body, namespace)
    url = await rayjob_status(runtime_kube, namespace, "labelled", "dashboardURL")

    async def submitter_pods() -> list[dict[str, Any]] | NotYet:
        listed = await runtime_kube.list(PODS, namespace, label_selector="ray.io/originated-from-crd=RayJob")
        pods = [p for p in listed.items if p["metadata"].get("labels", {}).get("job-name") == "labelled"]
        return pods or NotYet("the Job controller has made no submitter Pod yet")

    pods = await wait_for(submitter_pods, 90, what="the submitter Job's Pod")
    job = await runtime_kube.get(JOBS, "labelled", namespace)
    template = job["spec"]["template"]
    labels = template["metadata"]["labels"]  # the API server adds the Job's own (job-name, controller-uid)
    assert {k: labels.get(k) for k in (*ORIGINATED, "team")} == {"team": "a", **ORIGINATED}
    for pod in pods:
        assert {k: pod["metadata"]["labels"].get(k) for k in (*ORIGINATED, "team")} == {"team": "a", **ORIGINATED}
    (command,) = template["spec"]["containers"][0]["args"]
    wait = (
        f"until python -c \"import urllib.request; r=urllib.request.urlopen('http://{url}/api/gcs_healthz', "
        "timeout=10); exit(0 if b'success' in r.read() else 1)\" >/dev/null 2>&1 ; do echo "
        f'"Waiting for Ray Dashboard GCS to become healthy at http://{url} ..." ; sleep 2 ; done ; if ! ray job status '
    )
    assert command.startswith(wait), command


async def test_sidecar_submitter_restart_gives_the_submitter_container_on_failure(
    kubeconfig: Path, runtime_kube: Kube, namespace: str, ray_crds: list[str]
) -> None:
    """KubeRay v1.7.0 RJ-6 on Kubernetes 1.36 (ContainerRestartRules): with SidecarSubmitterRestart the API server
    takes the head Pod whose ``ray-job-submitter`` container has ``restartPolicy: OnFailure`` (the Pod's own stays
    Never) and whose command submits idempotently."""
    async with operator_on(kubeconfig, namespace, c.GATE_SIDECAR_SUBMITTER_RESTART):
        await runtime_kube.create(RAYJOBS, rayjob("restartable", "python -c 'print(1)'", submissionMode="SidecarMode"),
                                  namespace)  # fmt: skip
        cluster = await rayjob_status(runtime_kube, namespace, "restartable", "rayClusterName")

        async def head() -> dict[str, Any] | NotYet:
            selector = f"ray.io/cluster={cluster},ray.io/node-type=head"
            listed = await runtime_kube.list(PODS, namespace, label_selector=selector)
            return listed.items[0] if listed.items else NotYet("no head Pod yet")

        pod = await wait_for(head, 90, what=f"the head Pod of {cluster}")
        assert pod["spec"]["restartPolicy"] == "Never"
        submitter = pod["spec"]["containers"][1]
        assert (submitter["name"], submitter.get("restartPolicy")) == ("ray-job-submitter", "OnFailure")
        assert "; if ! ray job status --address http://127.0.0.1:8265 " in submitter["args"][0]
        assert pod["spec"]["containers"][0].get("restartPolicy") is None
        state = await rayjob_status(runtime_kube, namespace, "restartable", "jobDeploymentStatus")
        assert state in ("Initializing", "Running"), state  # the Pod was taken: no creation error failed the RayJob

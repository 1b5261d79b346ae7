"""The chapter's workloads on its cluster (process nodes, real Ray): data from the object store, the Kubernetes API.

The chapter's objects (``examples/01``..``04``, the object store ``03b``) in a test namespace, the Secret naming
the object store there: ``raykube doctor`` exits 0 while the cluster starts and finds nothing once it is ready (inside
Ray too: ``ray status`` lists 3 nodes and 3 CPUs, the workers reach the object store), the dashboard answers through the
head Service, a Job shaped as KubeRay's RayJob submitter runs a Ray job, then what ``make demo`` plays on the cluster:

* a dataset uploaded from the head with boto3 and nothing but the Pod's envFrom credentials, read by
  ``examples/05b-rayjob-s3.yaml`` with ``ray.data.read_csv("s3://...")`` on the workers, the job's sums equal to those
  computed here, and the summary it wrote with boto3 read back;
* ``examples/05c-rayjob-kube-api.yaml``, a Ray task listing Pods with its ServiceAccount token: FAILED with the API
  server's 403 while the Ray Pods' ServiceAccount has no Role, ``raykube doctor rayjob/...`` naming the account,
  verb and resource refused; SUCCEEDED after ``examples/08-ray-workload-rbac.yaml`` (a namespace Role and
  RoleBinding), the listing holding the cluster's Pods.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
from lightkube import AsyncClient
from lightkube.codecs import from_dict
from lightkube.generic_resource import create_namespaced_resource

from raykube.cli import demo_workloads as data
from raykube.doctor.model import at_least
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.doctor_support import assert_fires
from tests.integration.process import ProcessSandbox
from tests.integration.test_object_store import READY, minio_pod
from tests.integration.test_process_runtime import (
    RAY_READY,
    a_submitter_job_runs_a_ray_job,
    moved,
    pod_of,
    port_forward,
    ray_nodes,
    seed,
    wait_cluster,
)

EXAMPLES = Path(__file__).parents[2] / "examples"
RAYJOB = create_namespaced_resource("ray.io", "v1", "RayJob", "rayjobs")
JOB_DONE = 420.0  # generous: the job starts its driver and tasks on a busy two-core machine


async def apply(pkube: AsyncClient, namespace: str, documents: list[dict[str, Any]]) -> None:
    for doc in documents:
        await pkube.create(from_dict(doc), namespace=namespace)  # type: ignore[call-overload]


async def finished(pkube: AsyncClient, namespace: str, name: str) -> dict[str, Any]:
    async def done() -> dict[str, Any] | NotYet:
        status = dict((await pkube.get(RAYJOB, name, namespace=namespace)).get("status") or {})
        state = (status.get("jobDeploymentStatus"), status.get("jobStatus"))
        return status if state[0] in ("Complete", "Failed") else NotYet(f"{state}: {status.get('message')}")

    result: dict[str, Any] = await wait_for(done, JOB_DONE, what=f"RayJob {namespace}/{name} to finish")
    return result


def job_logs(proc: ProcessSandbox, namespace: str, name: str) -> str:
    return proc.kubectl("logs", "-n", namespace, f"job/{name}").stdout


async def the_seed_is_healthy_on_real_ray(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> tuple[str, list[str]]:
    await apply(pkube, ns, seed(ns))
    await pod_of(pkube, ns, "head")
    # raykube doctor while it starts (default --starting-grace): progress, exit 0, whatever the in-Pod checks meet.
    code, report = proc.doctor(ns, "raycluster/raycluster-demo")
    assert code == 0, [(f["id"], f["title"]) for f in report["findings"] if at_least(f["severity"], "warning")]
    status = await wait_cluster(pkube, ns, "raycluster-demo", lambda s: s.get("state") == "ready", "ready")
    assert status["readyWorkerReplicas"] == 2
    await minio_pod(pkube, ns)
    head = await pod_of(pkube, ns, "head")
    workers = sorted(
        line.split("/", 1)[1]
        for line in proc.kubectl("get", "pods", "-n", ns, "-l", "ray.io/node-type=worker", "-o", "name").stdout.split()
    )

    async def three_nodes() -> str | NotYet:
        run = proc.kubectl("exec", "-n", ns, head, "--", "ray", "status")
        out = run.stdout
        return out if ray_nodes(out) == 3 and "/3.0 CPU" in out else NotYet(out[-600:] or run.stderr[-600:])

    out = await wait_for(three_nodes, 120, what="`ray status` on the head to list 3 nodes")
    assert "/3.0 CPU" in out  # one CPU from each Pod's limits (KubeRay's --num-cpus)

    # raykube doctor once it is ready, inside Ray too (ray status, ports, DNS and TCP from a worker, the object store
    # the Secret names): healthy.
    code, report = proc.doctor(ns, "raycluster/raycluster-demo", "--starting-grace", "0")
    serious = [(f["id"], f["title"]) for f in report["findings"] if at_least(f["severity"], "warning")]
    assert code == 0 and not serious, serious
    assert report["environment"]["inPodChecks"] == "ran in 2 Pods (pods/exec allowed)"
    assert not any("ray status" in n["what"] for n in report["notChecked"])
    assert "Ray runtime started." in proc.kubectl("logs", "-n", ns, head).stdout

    async with port_forward(proc, ns, "svc/raycluster-demo-head-svc", 8265) as port:

        async def version() -> dict[str, Any] | NotYet:
            try:
                async with httpx2.AsyncClient(trust_env=False, timeout=10) as http:
                    answer = await http.get(f"http://127.0.0.1:{port}/api/version")
                    return dict(answer.json())
            except (httpx2.HTTPError, ValueError) as exc:
                return NotYet(str(exc))

        info = await wait_for(version, 60, what="the dashboard's /api/version through the head Service")
    assert info["ray_version"] == "2.52.0"

    return head, workers


async def the_data_act(proc: ProcessSandbox, pkube: AsyncClient, ns: str, head: str, workers: list[str]) -> None:
    async def uploaded() -> dict[str, Any] | NotYet:
        run = proc.kubectl("exec", "-n", ns, head, "--", "python", "-c", data.UPLOAD, data.upload_argument())
        lines = run.stdout.strip().splitlines()
        if run.returncode != 0 or not lines:
            return NotYet(f"exit {run.returncode}: {(run.stderr or run.stdout)[-600:]}")
        result: dict[str, Any] = json.loads(lines[-1])
        return result

    listing = await wait_for(uploaded, READY, what="the dataset uploaded from the head with boto3")
    assert sorted(key for key, _ in listing["objects"]) == sorted(data.parts()), listing
    assert listing["endpoint"] == f"http://minio.{ns}.svc.cluster.local:9000"  # from envFrom, nowhere else

    await apply(pkube, ns, moved("05b-rayjob-s3.yaml", ns))
    status = await finished(pkube, ns, "rayjob-s3")
    logs = job_logs(proc, ns, "rayjob-s3")
    assert status.get("jobStatus") == "SUCCEEDED", (status.get("message"), logs[-2000:])
    summary = data.summary_line(logs)
    assert summary is not None and data.differences(summary) == [], (summary, logs[-1500:])
    assert set(summary["hosts"]) & set(workers), (summary["hosts"], workers)  # the workers read
    back = proc.kubectl("exec", "-n", ns, head, "--", "python", "-c", data.READ_RESULT, data.BUCKET, data.RESULT_KEY)
    assert json.loads(back.stdout.strip().splitlines()[-1]) == summary, back


async def the_kube_api_act(proc: ProcessSandbox, pkube: AsyncClient, ns: str, head: str, workers: list[str]) -> None:
    await apply(pkube, ns, moved("05c-rayjob-kube-api.yaml", ns))
    status = await finished(pkube, ns, "rayjob-kube-api")
    account = f"system:serviceaccount:{ns}:default"
    logs = job_logs(proc, ns, "rayjob-kube-api")
    assert status.get("jobStatus") == "FAILED", status
    # The task's error is in the job's output (status.message holds only its last lines: Ray's shutdown, with
    # RAY_LOG_TO_STDERR=1 from the chapter's ConfigMap).
    assert "403 Forbidden" in logs and f'User "{account}" cannot list resource "pods"' in logs, logs[-1500:]
    _, report = proc.doctor(ns, "rayjob/rayjob-kube-api")
    assert_fires(report, "J07")
    [found] = [f for f in report["findings"] if f["rule"] == "J07"]
    assert found["title"].endswith(f"({account}) may not list pods in namespace {ns}"), found["title"]
    assert found["severity"] == "error" and "denied now" in json.dumps(found["evidence"]), found
    assert "ClusterRole" not in " ".join(found["remediation"]), found  # a namespace Role, never a ClusterRole

    await apply(pkube, ns, moved("08-ray-workload-rbac.yaml", ns))
    await pkube.delete(RAYJOB, "rayjob-kube-api", namespace=ns)

    async def gone() -> bool | NotYet:
        names = [j["metadata"]["name"] async for j in pkube.list(RAYJOB, namespace=ns)]
        return "rayjob-kube-api" not in names or NotYet(f"RayJobs {names}")

    await wait_for(gone, RAY_READY, what="the refused RayJob deleted")
    await apply(pkube, ns, moved("05c-rayjob-kube-api.yaml", ns))
    status = await finished(pkube, ns, "rayjob-kube-api")
    logs = job_logs(proc, ns, "rayjob-kube-api")
    assert status.get("jobStatus") == "SUCCEEDED", (status.get("message"), logs[-1500:])
    assert head in logs and all(w in logs for w in workers), logs[-1500:]
    _, report = proc.doctor(ns, "rayjob/rayjob-kube-api")
    assert not [f for f in report["findings"] if f["rule"] == "J07"], report["findings"]


async def test_the_chapter_runs_on_real_ray_reads_its_dataset_from_the_object_store_and_lists_pods_once_allowed(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    head, workers = await the_seed_is_healthy_on_real_ray(proc, pkube, ns)
    # The same ready cluster (one start for all of the chapter keeps make test short): a submitter Job's Ray job, then
    # the chapter's data and Kubernetes API workloads.
    await a_submitter_job_runs_a_ray_job(proc, pkube, ns)
    await the_data_act(proc, pkube, ns, head, workers)
    await the_kube_api_act(proc, pkube, ns, head, workers)

"""KubeRay v1.6.1's RayJob samples on process nodes with real Ray: each one that can run here reaches ``SUCCEEDED``.

Every ``ray-job.*.yaml`` of KubeRay's ``config/samples`` is either in ``RUNNABLE`` (applied with ``kubectl apply``,
all its documents, in a namespace watched by raykube's operator, and must end ``Complete`` / ``SUCCEEDED``) or in
``NOT_RUNNABLE`` with the reason, and a test checks that the two cover the folder, so a sample a later KubeRay adds
cannot be skipped silently. The reasons are checked too: a sample that stops needing PyPI shows up as a failure here.
The runs of the ``RUNNABLE`` samples take about 40 s each and are marked long (``make conformance``); the listing
check and the InteractiveMode sample are in ``make test``.

The sandbox has no route off the machine (a Pod's network namespace has no default route), so a sample whose Ray job
installs packages from PyPI (``runtimeEnvYAML`` ``pip``), fetches a ``working_dir`` from GitHub or reads S3 cannot
succeed; neither can one that asks for GPUs or TPUs, or for a batch scheduler the sandbox does not run.

A sample is adapted only as a user with a small machine would adapt it (``fit_small_nodes``): lower resource
requests. Its entrypoint, submission mode, runtime env, limits and everything else are kept.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient
from lightkube.resources.core_v1 import Pod

from raykube.golang.quantity import parse_quantity
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.integration.test_rayjob import RayClusterRes, ray_jobs, wait_job
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"
Docs = list[dict[str, Any]]


def documents(path: Path) -> Docs:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# ------------------------------------------------------------------------------------------- what runs, what not
def _runtime_env(docs: Docs) -> dict[str, Any]:
    """The Ray job's runtime env: ``runtimeEnvYAML``, or the ``--runtime-env-json`` a custom submitter passes."""
    spec = rayjob_of(docs)["spec"]
    env = dict(yaml.safe_load(spec.get("runtimeEnvYAML") or "{}") or {})
    for container in (spec.get("submitterPodTemplate") or {}).get("spec", {}).get("containers", []):
        for flag, value in itertools.pairwise(container.get("args") or []):
            if flag == "--runtime-env-json":
                env |= json.loads(value)
    return env


def pip_from_pypi(docs: Docs) -> bool:
    return bool(_runtime_env(docs).get("pip"))


def working_dir_url(docs: Docs) -> bool:
    return str(_runtime_env(docs).get("working_dir", "")).startswith("https://")


def asks_for(resource: str) -> Callable[[Docs], bool]:
    def check(docs: Docs) -> bool:
        return any(resource in (c.get("resources") or {}).get("limits", {}) for c in containers(docs))

    return check


def kind_present(kind: str) -> Callable[[Docs], bool]:
    return lambda docs: any(d["kind"] == kind for d in docs)


def label_present(prefix: str) -> Callable[[Docs], bool]:
    return lambda docs: any(k.startswith(prefix) for k in rayjob_of(docs)["metadata"].get("labels") or {})


def interactive(docs: Docs) -> bool:
    spec = rayjob_of(docs)["spec"]
    return spec.get("submissionMode") == "InteractiveMode" and not spec.get("entrypoint")


def long_loop(docs: Docs) -> bool:
    return bool(re.search(r"range\(\s*600\s*\)[\s\S]*time\.sleep\(1\)", rayjob_of(docs)["spec"]["entrypoint"]))


def custom_submitter_image(docs: Docs) -> bool:
    template = rayjob_of(docs)["spec"].get("submitterPodTemplate") or {}
    return any(not c["image"].startswith("rayproject/") for c in template.get("spec", {}).get("containers", []))


def reads_the_internet(docs: Docs) -> bool:
    scripts = " ".join(v for d in docs if d["kind"] == "ConfigMap" for v in (d.get("data") or {}).values())
    return bool(re.search(r"(s3|https?)://", scripts))


PYPI = ("its runtime env pip-installs packages from PyPI (pip in runtimeEnvYAML or --runtime-env-json)", pip_from_pypi)
TPU = ("asks for TPUs (google.com/tpu) on GKE TPU node pools", asks_for("google.com/tpu"))
GITHUB = ("its runtime env's working_dir is a GitHub archive URL, and pip needs PyPI", working_dir_url)

# Each sample that cannot run here, with every reason; each reason is a claim about the sample, checked below.
NOT_RUNNABLE: dict[str, list[tuple[str, Callable[[Docs], bool]]]] = {
    "ray-job.batch-inference.yaml": [
        ("asks for 4 GPUs (nvidia.com/gpu) on a GKE T4 node, 54 CPUs and 54Gi", asks_for("nvidia.com/gpu")),
        ("its script reads images from S3 and a model from Hugging Face", reads_the_internet),
    ],
    "ray-job.custom-head-svc.yaml": [PYPI],
    "ray-job.light-weight-submitter.yaml": [
        (
            "its submitter image quay.io/kuberay/submitter is not a Ray image, which the process runtime cannot run",
            custom_submitter_image,
        ),
        PYPI,
    ],
    "ray-job.modin.yaml": [PYPI, ("its script downloads a CSV from modin-datasets.intel.com", reads_the_internet)],
    "ray-job.resources.yaml": [PYPI],
    "ray-job.sample.yaml": [PYPI],
    "ray-job.shutdown.yaml": [PYPI],
    "ray-job.sidecar-mode.yaml": [PYPI],
    "ray-job.tpu-v6e-16-multihost.yaml": [TPU, GITHUB],
    "ray-job.tpu-v6e-256-multihost.yaml": [TPU, GITHUB],
    "ray-job.tpu-v6e-singlehost.yaml": [TPU, GITHUB],
    "ray-job.volcano-scheduler-queue.yaml": [
        ("needs Volcano installed (its Queue CRD and scheduler)", kind_present("Queue")),
        PYPI,
    ],
    "ray-job.yunikorn-scheduler.yaml": [
        ("needs Apache YuniKorn installed (its queue root.test)", label_present("yunikorn.apache.org/")),
        PYPI,
    ],
}

# The samples that run here, with a line the Ray job prints (seen in the submitter Job's logs).
RUNNABLE: dict[str, str] = {
    "ray-job.deletion-rules.yaml": "ray.cluster_resources(): {",
    "ray-job.use-existing-raycluster.yaml": "'CPU': ",
}

# A RayCluster a sample selects (clusterSelector) but does not bring, and the sample that gives it. No v1.6.1 sample
# has a RayCluster named ray-cluster-kuberay (the name KubeRay's ray-cluster Helm chart gives a release named
# ray-cluster); the RayCluster quickstart sample, renamed, is what a user following the samples would apply.
PROVIDED_CLUSTERS = {"ray-cluster-kuberay": "ray-cluster.sample.yaml"}


# Samples that run here, each in a test of its own below: InteractiveMode (the test does the person's part) and the
# Kueue toy sample, whose Ray job loops for 600 s on purpose (marked long: `make conformance` runs it, not `make test`).
RUNNABLE_ELSEWHERE: dict[str, Callable[[Docs], bool]] = {
    "ray-job.interactive-mode.yaml": interactive,
    "ray-job.kueue-toy-sample.yaml": long_loop,
}


def test_every_v161_rayjob_sample_runs_or_is_listed_with_a_reason() -> None:
    names = sorted(p.name for p in SAMPLES.glob("ray-job.*.yaml"))
    assert len(names) >= 17, f"expected KubeRay v1.6.1's RayJob samples under {SAMPLES}, found {names}"
    for name, check in RUNNABLE_ELSEWHERE.items():
        assert check(documents(SAMPLES / name)), f"{name} changed: see its test"
    assert not set(RUNNABLE) & set(NOT_RUNNABLE)
    assert sorted([*RUNNABLE, *NOT_RUNNABLE, *RUNNABLE_ELSEWHERE]) == names
    wrong = [
        f"{name}: {reason}"
        for name, reasons in NOT_RUNNABLE.items()
        for reason, holds in reasons
        if not holds(documents(SAMPLES / name))
    ]
    assert wrong == [], "reasons that no longer hold (the sample may run now):\n" + "\n".join(wrong)
    for name in RUNNABLE:  # and no runnable sample has one of those reasons
        docs = documents(SAMPLES / name)
        assert not (pip_from_pypi(docs) or working_dir_url(docs) or asks_for("nvidia.com/gpu")(docs)), name


# ------------------------------------------------------------------------------------------- the adaptation
# The process fixture's nodes hold 2 CPU and 3Gi each (tests/integration/conftest.py). A sample asks for up to 1 CPU
# and 5Gi per Pod; no container may request more than this here, so a head, a worker and the submitter fit beside
# what an earlier test's namespace still holds while it terminates.
REQUEST_CAP = {"cpu": "500m", "memory": "1Gi"}


def fit_small_nodes(docs: Docs, cap: dict[str, str] = REQUEST_CAP) -> Docs:
    """The sample as a user on a small machine applies it: each container's CPU and memory *requests* lowered to at
    most ``cap`` (a request only limits hold defaults to is written out). Limits stay, so Ray's logical resources,
    which KubeRay derives from them (``--num-cpus``, ``--memory``), are the sample's own; nothing else changes."""
    fitted: Docs = copy.deepcopy(docs)
    for container in containers(fitted):
        resources = container.setdefault("resources", {})
        requests = resources.setdefault("requests", {})
        for name, most in cap.items():
            asked = requests.get(name, (resources.get("limits") or {}).get(name))
            if asked is not None and parse_quantity(asked).value > parse_quantity(most).value:
                requests[name] = most
    return fitted


def pod_templates(docs: Docs) -> list[dict[str, Any]]:
    templates = []
    for doc in docs:
        cluster = doc["spec"].get("rayClusterSpec") if doc["kind"] == "RayJob" else doc.get("spec")
        if doc["kind"] in ("RayJob", "RayCluster") and cluster:
            groups = [cluster["headGroupSpec"], *(cluster.get("workerGroupSpecs") or [])]
            templates += [g["template"] for g in groups]
        if doc["kind"] == "RayJob" and doc["spec"].get("submitterPodTemplate"):
            templates.append(doc["spec"]["submitterPodTemplate"])
    return templates


def containers(docs: Docs) -> list[dict[str, Any]]:
    specs = [t.get("spec") or {} for t in pod_templates(docs)]
    return [c for s in specs for c in [*(s.get("initContainers") or []), *(s.get("containers") or [])]]


def rayjob_of(docs: Docs) -> dict[str, Any]:
    [job] = [d for d in docs if d["kind"] == "RayJob"]
    return job


def test_fit_small_nodes_lowers_requests_only() -> None:
    docs = documents(SAMPLES / "ray-job.deletion-rules.yaml")
    fitted = fit_small_nodes(docs)
    head, worker = containers(fitted)
    assert head["resources"] == {"limits": {"cpu": "1", "memory": "5Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}
    assert worker["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "1Gi"},
    }
    assert containers(docs)[0]["resources"]["requests"] == {"cpu": "1", "memory": "2Gi"}  # a copy
    for c in containers(fitted):  # limits only: the request Kubernetes would default from them, lowered
        c["resources"] = {"limits": {"cpu": "250m", "memory": "2Gi"}}
    assert containers(fit_small_nodes(fitted))[0]["resources"]["requests"] == {"memory": "1Gi"}
    assert rayjob_of(fitted)["spec"]["entrypoint"] == rayjob_of(docs)["spec"]["entrypoint"]


# ------------------------------------------------------------------------------------------- running one
def prerequisites(docs: Docs) -> Docs:
    """The RayCluster a ``clusterSelector`` names when the sample does not bring it (``PROVIDED_CLUSTERS``)."""
    wanted = (rayjob_of(docs)["spec"].get("clusterSelector") or {}).get("ray.io/cluster")
    brought = {d["metadata"]["name"] for d in docs if d["kind"] == "RayCluster"}
    if not wanted or wanted in brought:
        return []
    assert wanted in PROVIDED_CLUSTERS, f"no sample provides the RayCluster {wanted} the sample selects"
    [cluster] = [d for d in documents(SAMPLES / PROVIDED_CLUSTERS[wanted]) if d["kind"] == "RayCluster"]
    cluster["metadata"]["name"] = wanted
    return [cluster]


async def apply(proc: ProcessSandbox, ns: str, docs: Docs, file: Path) -> None:
    await asyncio.to_thread(file.write_text, yaml.safe_dump_all(docs, sort_keys=False))
    run = await asyncio.to_thread(proc.kubectl, "apply", "-n", ns, "-f", str(file))
    assert run.returncode == 0, run.stderr


async def wait_ready(kube: AsyncClient, ns: str, name: str) -> None:
    async def ready() -> bool | NotYet:
        status = (await kube.get(RayClusterRes, name, namespace=ns)).to_dict().get("status") or {}
        return True if status.get("state") == "ready" else NotYet(json.dumps(status)[:600])

    await wait_for(ready, 300, what=f"RayCluster {ns}/{name} to be ready")


def dig(obj: dict[str, Any], json_path: str) -> Any:
    for key in json_path.strip(".").split("."):
        obj = obj.get(key) if isinstance(obj, dict) else None  # type: ignore[assignment]
    return obj


def printer_columns() -> list[dict[str, Any]]:
    """KubeRay v1.6.1's ``kubectl get rayjob`` columns: its CRD's additionalPrinterColumns (served version v1)."""
    crd = yaml.safe_load((KUBERAY_V161 / "crd" / "ray.io_rayjobs.yaml").read_text())
    [v1] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return list(v1["additionalPrinterColumns"])


# About 40 s each on 2 cores: `make conformance` runs them (pytest -m long). make test keeps a RayJob on real Ray
# through test_rayjob.py (K8sJobMode and HTTPMode to SUCCEEDED, retries), the InteractiveMode sample below and
# `kubectl ray job submit`.
@pytest.mark.long
@pytest.mark.parametrize("sample", list(RUNNABLE), ids=lambda n: n.removeprefix("ray-job.").removesuffix(".yaml"))
async def test_the_sample_reaches_succeeded(
    sample: str, proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager, tmp_path: Path
) -> None:
    docs = fit_small_nodes(documents(SAMPLES / sample))
    before = fit_small_nodes(prerequisites(docs))
    for cluster in before:
        await apply(proc, ns, [cluster], tmp_path / "prerequisite.yaml")
        await wait_ready(pkube, ns, cluster["metadata"]["name"])
    await apply(proc, ns, docs, tmp_path / sample)  # every document of the sample (ConfigMaps with the script too)
    name = rayjob_of(docs)["metadata"]["name"]

    status = await wait_job(pkube, ns, name, ("Complete", "Failed"), "to finish")
    assert (status["jobDeploymentStatus"], status["jobStatus"]) == ("Complete", "SUCCEEDED"), status

    # `kubectl get rayjob` shows KubeRay's columns, each with the RayJob's value at the column's JSONPath.
    table = (await asyncio.to_thread(proc.kubectl, "get", "rayjob", "-n", ns)).stdout.splitlines()
    rayjob = json.loads((await asyncio.to_thread(proc.kubectl, "get", "rayjob", "-n", ns, name, "-o", "json")).stdout)
    columns = printer_columns()
    assert table[0].split() == ["NAME", *(word for c in columns for word in c["name"].upper().split())]
    strings = [str(dig(rayjob, c["jsonPath"])) for c in columns if c["type"] == "string"]
    assert table[1].split()[: 1 + len(strings)] == [name, *strings], table
    assert len(table) == 2

    logs = await asyncio.to_thread(proc.kubectl, "logs", "-n", ns, f"job/{name}")
    assert RUNNABLE[sample] in logs.stdout, logs.stdout[-2000:] + logs.stderr

    # Ray's own JobSubmissionClient, in the head Pod, lists the job under the RayJob's id with its status.
    seen = await ray_jobs(proc, pkube, ns, status["rayClusterName"])
    assert [(j["submission_id"], j["status"]) for j in seen["jobs"]] == [(status["jobId"], status["jobStatus"])]
    head_image = containers([*before, *docs])[0]["image"]  # the cluster's head container comes first
    assert seen["ray"] == head_image.rpartition(":")[2], (seen, head_image)


# ------------------------------------------------------------------------------------------- the other two
SUBMIT = """
import sys
from ray.job_submission import JobSubmissionClient
print(JobSubmissionClient("http://127.0.0.1:8265").submit_job(entrypoint="python -c 'print(6 * 7)'",
                                                               submission_id=sys.argv[1]))
"""


async def test_the_interactive_mode_sample_waits_for_the_job_a_person_submits(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager, tmp_path: Path
) -> None:
    """``ray-job.interactive-mode.yaml``: the cluster comes up and the RayJob waits (``Waiting``); the person's part,
    done here: submit a job to the cluster (Ray's JobSubmissionClient in the head Pod), then set ``spec.jobId``; the
    RayJob follows that job to ``SUCCEEDED``."""
    sample = "ray-job.interactive-mode.yaml"
    docs = fit_small_nodes(documents(SAMPLES / sample))
    await apply(proc, ns, docs, tmp_path / sample)
    name = rayjob_of(docs)["metadata"]["name"]
    waiting = await wait_job(pkube, ns, name, ("Waiting",), "to wait for a job id")
    assert waiting.get("jobId", "") == ""

    labels = {"ray.io/cluster": waiting["rayClusterName"], "ray.io/node-type": "head"}
    [head] = [p.metadata.name async for p in pkube.list(Pod, namespace=ns, labels=labels) if p.metadata]
    job_id = f"{name}-by-hand"
    run = await asyncio.to_thread(proc.kubectl, "exec", "-n", ns, str(head), "--", "python", "-c", SUBMIT, job_id)
    assert run.returncode == 0 and job_id in run.stdout, run.stdout[-1000:] + run.stderr[-2000:]
    patch = json.dumps({"spec": {"jobId": job_id}})
    run = await asyncio.to_thread(proc.kubectl, "patch", "rayjob", "-n", ns, name, "--type=merge", "-p", patch)
    assert run.returncode == 0, run.stderr

    status = await wait_job(pkube, ns, name, ("Complete", "Failed"), "to follow the job to its end")
    assert (status["jobDeploymentStatus"], status["jobStatus"], status["jobId"]) == ("Complete", "SUCCEEDED", job_id)
    seen = await ray_jobs(proc, pkube, ns, status["rayClusterName"])
    assert [(j["submission_id"], j["status"]) for j in seen["jobs"]] == [(job_id, "SUCCEEDED")]


@pytest.mark.long
@pytest.mark.timeout(1500)  # the job alone runs 600 s, more than the suite's 600 s per test
async def test_the_kueue_toy_sample_runs_its_ten_minute_job_to_succeeded(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager, tmp_path: Path
) -> None:
    """``ray-job.kueue-toy-sample.yaml`` (``generateName``; a Ray job printing the cluster's resources once a second
    for 600 s) reaches ``SUCCEEDED``. Without Kueue installed it is an ordinary RayJob."""
    sample = "ray-job.kueue-toy-sample.yaml"
    docs = fit_small_nodes(documents(SAMPLES / sample))
    [rayjob] = [d for d in docs if d["kind"] == "RayJob"]
    file = tmp_path / sample
    await asyncio.to_thread(file.write_text, yaml.safe_dump(rayjob, sort_keys=False))
    created = await asyncio.to_thread(proc.kubectl, "create", "-n", ns, "-f", str(file), "-o", "name")
    assert created.returncode == 0, created.stderr
    name = created.stdout.strip().rpartition("/")[2]
    status = await wait_job(pkube, ns, name, ("Complete", "Failed"), "to finish its 600 s job", seconds=1200)
    assert (status["jobDeploymentStatus"], status["jobStatus"]) == ("Complete", "SUCCEEDED"), status
    logs = await asyncio.to_thread(proc.kubectl, "logs", "-n", ns, f"job/{name}")
    assert "iter: 599" in logs.stdout, logs.stdout[-2000:]

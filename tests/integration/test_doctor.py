"""`raykube doctor` against the sandbox: every failure the seed chapter names, broken on a real cluster that way.

Each test breaks the seed's RayCluster (1 head + 2 workers, env from a ConfigMap and a Secret, a shared PVC) the way
the chapter describes, then asserts the doctor's root cause (its rule id) and that the consequences hang under it.

kwok makes every scheduled Pod Running and Ready and runs no container, so it cannot fail a mount, a pull or a
readiness probe. For those, the Pods are pinned (nodeSelector) to a Node that kwok does not manage
(:func:`kubelet_node`), where nothing writes their status, and the test writes what a kubelet would: the Pod status
through the ``pods/status`` subresource and core/v1 Events with ``source.component: kubelet``. A head Running but not
Ready is written on a kwok node (kwok leaves Running Pods alone).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from lightkube import ApiError, AsyncClient
from lightkube.codecs import from_dict
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Node, Pod, Secret, Service
from lightkube.types import PatchType

from raykube.api import constants as c
from raykube.api import rbac
from raykube.api.config import OperatorConfig
from raykube.api.resources import RAYCLUSTERS, RAYJOBS, RAYSERVICES
from raykube.doctor import dump as dumps
from raykube.doctor.gather import Scope
from raykube.doctor.model import Evidence, Finding, Report, at_least
from raykube.doctor.render import JSON_SCHEMA, render_text
from raykube.doctor.run import Options, diagnose, diagnose_live
from raykube.kube.client import Kube
from raykube.kube.resources import EVENTS, NETWORK_POLICIES
from raykube.runtime.manager import Manager
from raykube.runtime.operator import Operator
from raykube.waiting import NotYet, wait_for
from tests.doctor_support import assert_fires, assert_quiet, findings_by_rule, findings_of, record
from tests.integration.test_raycluster_controller import (
    CLUSTER,
    cluster_pods,
    create_seed_dependencies,
    seed_cluster,
    wait_ready,
)
from tests.support import RunningSandbox, operator_on

CLUSTER_ROLE = create_global_resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles")
CLUSTER_ROLE_BINDING = create_global_resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings"
)
ROLE = create_namespaced_resource("rbac.authorization.k8s.io", "v1", "Role", "roles")
ROLE_BINDING = create_namespaced_resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
DOCTOR_WAIT = 90  # seconds: the scheduler, the operator and the EndpointSlice controller all have to act first


# --------------------------------------------------------------------------------------------------------------------
# Running the doctor
# --------------------------------------------------------------------------------------------------------------------


async def run_doctor(kubeconfig: Path, namespace: str, name: str | None = CLUSTER, **options: Any) -> Report:
    """The doctor in-process, as `raykube doctor raycluster/NAME -n NS` (or `--all -n NS` when name is None), with
    no starting grace: the tests break clusters made a moment ago and want the verdict on them as they are."""
    client = Kube.from_config(kubeconfig)
    targets = ((namespace, name),) if name is not None else None
    options.setdefault("options", Options(starting_grace=0))
    try:
        report, _ = await diagnose_live(client, Scope(namespaces=(namespace,), targets=targets), **options)
    finally:
        await client.close()
    return report


def roots(report: Report) -> list[Finding]:
    return [f for f in report.findings if not f.caused_by and (f.causes or at_least(f.severity, "error"))]


def consequences(report: Report, finding: Finding) -> set[str]:
    """Rule ids of everything that follows from ``finding`` (transitively)."""
    by_id = {f.id: f for f in report.findings}
    found: set[str] = set()
    stack = list(finding.causes)
    while stack:
        child = by_id[stack.pop()]
        if child.rule not in found or child.causes:
            found.add(child.rule)
            stack.extend(child.causes)
    return found


def root_named(report: Report, rule: str) -> Finding:
    matching = [f for f in roots(report) if f.rule == rule]
    assert matching, f"no root cause {rule}; roots: {[f.rule for f in roots(report)]}\n{render_text(report)}"
    record(rule)
    return matching[0]


async def wait_diagnosis(
    kubeconfig: Path, namespace: str, check: Callable[[Report], bool], what: str, name: str | None = CLUSTER
) -> Report:
    """Run the doctor until ``check`` holds (the cluster's state settles through several controllers)."""

    async def attempt() -> Report | NotYet:
        report = await run_doctor(kubeconfig, namespace, name)
        if check(report):
            return report
        return NotYet(f"roots {[(f.rule, f.title) for f in roots(report)]}")

    return await wait_for(attempt, DOCTOR_WAIT, what=what, max_interval=2.0)


def has_root(
    rule: str,
    *,
    with_consequences: frozenset[str] | set[str] = frozenset(),
    titled: str = "",
    with_evidence: Callable[[Evidence], bool] | None = None,
) -> Callable[[Report], bool]:
    """The report has a root cause of ``rule`` (whose title contains ``titled``) with these consequences under it and,
    given ``with_evidence``, a piece of evidence it accepts (evidence such as events can arrive after the cause).
    Once it holds, the rule and its consequences are recorded as asserted firing (tests/doctor_support.py)."""

    def check(report: Report) -> bool:
        held = any(
            f.rule == rule
            and titled in f.title
            and set(with_consequences) <= consequences(report, f)
            and (with_evidence is None or any(with_evidence(e) for e in f.evidence))
            for f in roots(report)
        )
        if held:
            record(rule, *with_consequences)
        return held

    return check


def cli(*args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command as `kubectl raykube` runs it (the kubectl-raykube entry point: raykube.cli.doctor)."""
    argv = [sys.executable, "-m", "raykube.cli.doctor", *args]
    if args[:1] == ("doctor",):
        argv += ["--starting-grace", "0"]  # judge the just-made clusters as they are (see run_doctor)
    if kubeconfig is not None:
        argv += ["--kubeconfig", str(kubeconfig)]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "200"}
    )


# --------------------------------------------------------------------------------------------------------------------
# Breaking things
# --------------------------------------------------------------------------------------------------------------------


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def ray_container(cluster: dict[str, Any], group: str = "head") -> dict[str, Any]:
    spec = cluster["spec"]
    template = spec["headGroupSpec"]["template"] if group == "head" else spec["workerGroupSpecs"][0]["template"]
    container: dict[str, Any] = template["spec"]["containers"][0]
    return container


def pin_to(cluster: dict[str, Any], node: str) -> dict[str, Any]:
    """The cluster with every Pod template pinned to ``node``."""
    pinned = copy.deepcopy(cluster)
    for template in [pinned["spec"]["headGroupSpec"]["template"]] + [
        g["template"] for g in pinned["spec"]["workerGroupSpecs"]
    ]:
        template["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return pinned


@pytest.fixture
async def kubelet_node(kube: AsyncClient, namespace: str) -> AsyncIterator[str]:
    """A Ready Node that kwok does not manage: Pods scheduled there keep the status the test writes, as if a kubelet
    reported it. Its Pods are force-deleted and the Node removed afterwards."""
    name = f"kubelet-{namespace}"[:63].rstrip("-")
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "raykube.io/doctor-test": "true"}
    await kube.create(from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}))
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    status = {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
             "lastHeartbeatTime": _now(), "lastTransitionTime": _now()},
        ],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
    }  # fmt: skip
    await kube.patch(Node.Status, name, {"status": status}, patch_type=PatchType.MERGE)

    async def schedulable() -> bool | NotYet:
        node = await kube.get(Node, name)
        taints = [t.key for t in (node.spec.taints if node.spec else None) or []]
        return True if not taints else NotYet(f"taints {taints}")

    await wait_for(schedulable, 60, what=f"node {name} to be schedulable")
    try:
        yield name
    finally:
        async for pod in kube.list(Pod, namespace=namespace, fields={"spec.nodeName": name}):
            if pod.metadata and pod.metadata.name:
                try:
                    await kube.delete(Pod, pod.metadata.name, namespace=namespace, grace_period=0)
                except ApiError as exc:
                    if exc.status.code != 404:
                        raise
        await kube.delete(Node, name)


async def kubelet_reports(
    kube: AsyncClient,
    pod: dict[str, Any],
    *,
    phase: str,
    containers: dict[str, dict[str, Any]],
    init: dict[str, dict[str, Any]] | None = None,
    ready: bool = False,
    initialized: bool = True,
    ip: str | None = None,
) -> None:
    """Write a Pod's status as its kubelet would: phase, conditions, container states (``{"waiting": {...}}``)."""
    name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
    now = _now()
    not_ready = [n for n, state in containers.items() if "running" not in state or not ready]
    condition = "True" if ready else "False"
    conditions = [
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": now},
        {"type": "Initialized", "status": "True" if initialized else "False", "lastTransitionTime": now,
         **({} if initialized else {"reason": "ContainersNotInitialized",
                                    "message": f"containers with incomplete status: {sorted(init or {})}"})},
        {"type": "Ready", "status": condition, "lastTransitionTime": now,
         **({} if ready else {"reason": "ContainersNotReady",
                              "message": f"containers with unready status: [{' '.join(not_ready)}]"})},
        {"type": "ContainersReady", "status": condition, "lastTransitionTime": now,
         **({} if ready else {"reason": "ContainersNotReady",
                              "message": f"containers with unready status: [{' '.join(not_ready)}]"})},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
    ]  # fmt: skip
    images = {ct["name"]: ct["image"] for ct in pod["spec"]["containers"] + pod["spec"].get("initContainers", [])}

    def statuses(states: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {"name": n, "image": images[n], "imageID": "", "ready": ready and "running" in s, "restartCount": 0,
             "started": "running" in s, "state": s}
            for n, s in states.items()
        ]  # fmt: skip

    status: dict[str, Any] = {
        "phase": phase,
        "conditions": conditions,
        "hostIP": "127.0.0.1",
        "podIP": ip
        or (pod.get("status") or {}).get("podIP")
        or f"10.245.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250 + 1}",
        "startTime": now,
        "containerStatuses": statuses(containers),
    }
    if init is not None:
        status["initContainerStatuses"] = statuses(init)
    await kube.patch(Pod.Status, name, {"status": status}, namespace=namespace, patch_type=PatchType.MERGE)


async def kubelet_event(
    kube: AsyncClient, pod: dict[str, Any], reason: str, message: str, *, count: int = 1, type_: str = "Warning"
) -> None:
    """A core/v1 Event about the Pod, as the kubelet records it."""
    meta = pod["metadata"]
    now = _now()
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "namespace": meta["namespace"],
                           "uid": meta["uid"]},
        "reason": reason,
        "message": message,
        "type": type_,
        "count": count,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "source": {"component": "kubelet", "host": pod["spec"].get("nodeName", "")},
        "reportingComponent": "kubelet",
        "reportingInstance": pod["spec"].get("nodeName", ""),
    }  # fmt: skip
    await kube.create(from_dict(event), namespace=meta["namespace"])


async def scheduled_pods(runtime_kube: Kube, namespace: str, count: int, name: str = CLUSTER) -> list[dict[str, Any]]:
    """Wait until the cluster has ``count`` Pods, all bound to a node; return them."""

    async def check() -> list[dict[str, Any]] | NotYet:
        pods = await cluster_pods(runtime_kube, namespace, name)
        bound = [p for p in pods if p["spec"].get("nodeName")]
        return pods if len(bound) == count == len(pods) else NotYet(f"{len(bound)}/{len(pods)} bound of {count}")

    return await wait_for(check, 60, what=f"{count} Pods of {name} bound to a node")


def head_of(pods: list[dict[str, Any]]) -> dict[str, Any]:
    [head] = [p for p in pods if p["metadata"]["labels"][c.RAY_NODE_TYPE_LABEL] == c.NODE_TYPE_HEAD]
    return head


def workers_in(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if p["metadata"]["labels"][c.RAY_NODE_TYPE_LABEL] == c.NODE_TYPE_WORKER]


def waiting_for_gcs() -> dict[str, dict[str, Any]]:
    return {c.WAIT_GCS_READY_INIT_CONTAINER: {"running": {"startedAt": _now()}}}


# --------------------------------------------------------------------------------------------------------------------
# The healthy seed cluster
# --------------------------------------------------------------------------------------------------------------------


async def ready_seed(kube: AsyncClient, runtime_kube: Kube, namespace: str, name: str = CLUSTER) -> None:
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(name), namespace)
    await wait_ready(runtime_kube, namespace, workers=2, name=name)


async def test_the_healthy_seed_cluster_exits_0_with_nothing_warning_or_worse(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await ready_seed(kube, runtime_kube, namespace)

    report = await wait_diagnosis(
        kubeconfig, namespace, lambda r: r.exit_code() == 0, "the healthy seed cluster to be diagnosed healthy"
    )
    assert not [f for f in report.findings if at_least(f.severity, "warning")], render_text(report)

    result = cli("doctor", f"raycluster/{CLUSTER}", "-n", namespace, kubeconfig=kubeconfig)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"RayCluster {namespace}/{CLUSTER}: HEALTHY" in result.stdout
    assert "Not checked: " in result.stdout

    as_json = cli("doctor", f"raycluster/{CLUSTER}", "-n", namespace, "-o", "json", kubeconfig=kubeconfig)
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, JSON_SCHEMA)
    assert document["summary"]["status"] == "Healthy"
    assert document["targets"][0]["name"] == CLUSTER


# --------------------------------------------------------------------------------------------------------------------
# "RayCluster 一直 Pending": scheduling, volumes, configuration, images
# --------------------------------------------------------------------------------------------------------------------


async def test_workers_pending_because_they_ask_for_more_cpu_than_any_node_has(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    body = seed_cluster()
    ray_container(body, "workers")["resources"] = {"requests": {"cpu": "16", "memory": "1Gi"},
                                                   "limits": {"cpu": "16", "memory": "1Gi"}}  # fmt: skip
    await runtime_kube.create(RAYCLUSTERS, body, namespace)

    # The doctor names B02 from the nodes' capacity alone; the scheduler's event may come a moment later.
    schedulers_event = has_root(
        "B02",
        with_consequences={"X03", "X01"},
        titled="can never be scheduled",
        with_evidence=lambda e: e.reason == "FailedScheduling" and "Insufficient cpu" in (e.message or ""),
    )
    report = await wait_diagnosis(
        kubeconfig, namespace, schedulers_event, "B02 with the workers missing and the scheduler's event"
    )
    root = root_named(report, "B02")
    assert "can never be scheduled" in root.title and "cpu=16" in root.title, root.title
    assert report.exit_code() == 1


async def test_a_pvc_pending_on_a_missing_storage_class_explains_the_pending_pods(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "fast-data"},
             "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "fast-ssd",
                      "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    await kube.create(from_dict(claim), namespace=namespace)
    body = seed_cluster()
    for group in (body["spec"]["headGroupSpec"], body["spec"]["workerGroupSpecs"][0]):
        group["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = "fast-data"
    await runtime_kube.create(RAYCLUSTERS, body, namespace)

    report = await wait_diagnosis(
        kubeconfig, namespace, has_root("B04", with_consequences={"X02", "X03", "X01"}), "B04 over the Pending Pods"
    )
    root = root_named(report, "B04")
    assert 'StorageClass "fast-ssd" does not exist' in root.title, root.title
    assert_quiet(report, "B02", "B03")  # the scheduler's reason is the volume


async def test_an_rwo_claim_mounted_by_several_pods_is_not_shared_storage(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "rwo-data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    await kube.create(from_dict(claim), namespace=namespace)
    body = seed_cluster()
    for group in (body["spec"]["headGroupSpec"], body["spec"]["workerGroupSpecs"][0]):
        group["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = "rwo-data"
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    await wait_ready(runtime_kube, namespace, workers=2)

    report = await wait_diagnosis(kubeconfig, namespace, has_root("B09"), "B09 for the shared RWO claim")
    root = root_named(report, "B09")
    assert "ReadWriteOnce" in root.title and "3 Ray Pods" in root.title, root.title


async def test_a_missing_secret_in_envfrom_is_the_root_of_create_container_config_errors(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, kubelet_node: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await kube.delete(Secret, "minio-credentials", namespace=namespace)
    await runtime_kube.create(RAYCLUSTERS, pin_to(seed_cluster(), kubelet_node), namespace)
    pods = await scheduled_pods(runtime_kube, namespace, 3)
    message = 'secret "minio-credentials" not found'
    for pod in pods:
        if pod is head_of(pods):
            states = {"ray-head": {"waiting": {"reason": "CreateContainerConfigError", "message": message}}}
            await kubelet_reports(kube, pod, phase="Pending", containers=states)
        else:
            init = {c.WAIT_GCS_READY_INIT_CONTAINER: {"waiting": {"reason": "CreateContainerConfigError",
                                                                  "message": message}}}  # fmt: skip
            states = {"ray-worker": {"waiting": {"reason": "PodInitializing"}}}
            await kubelet_reports(kube, pod, phase="Pending", containers=states, init=init, initialized=False)
        await kubelet_event(kube, pod, "Failed", f"Error: {message}", count=4)

    report = await wait_diagnosis(
        kubeconfig, namespace, has_root("C07", with_consequences={"C09", "X02", "X03", "X01"}), "C07 over the Pods"
    )
    root = root_named(report, "C07")
    assert root.object.kind == "Secret" and root.object.name == "minio-credentials"
    assert any("CreateContainerConfigError" in str(e.value) for e in root.evidence)


async def test_a_missing_configmap_key_in_env_is_found_from_the_objects_before_any_pod_reports_it(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    body = seed_cluster()
    reference = {"name": "RAY_GRAFANA_HOST", "valueFrom": {"configMapKeyRef": {"name": "ray-env", "key": "GRAFANA"}}}
    for group in ("head", "workers"):
        ray_container(body, group)["env"] = [reference]
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    await wait_ready(runtime_kube, namespace, workers=2)  # kwok starts them anyway: no Pod reports the error

    report = await wait_diagnosis(kubeconfig, namespace, has_root("C08"), "C08 for the missing key")
    root = root_named(report, "C08")
    assert (root.object.kind, root.object.name, root.severity) == ("ConfigMap", "ray-env", "error")
    assert 'no key "GRAFANA"' in root.title
    assert report.exit_code() == 1


async def test_a_dev_shm_of_its_own_smaller_than_the_object_store_is_named_from_the_stored_cluster(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    """ray-project/ray#14616, ray-project/kuberay#201: the workers mount their own 64Mi memory emptyDir at /dev/shm
    (Docker's default size), so KubeRay adds no ``shared-mem`` volume and Ray keeps its object store (about 30% of the
    1Gi limit) in /tmp. Planted from the spec, on kwok: on process nodes Ray does not see the memory limit and keeps
    every store in /tmp (docs/sandbox.md), so what Ray did there tells nothing. Near miss: the same with 512Mi."""
    await create_seed_dependencies(kube, namespace)

    def with_own_shm(name: str, size: str) -> dict[str, Any]:
        body = seed_cluster(name, workers=1)
        spec = body["spec"]["workerGroupSpecs"][0]["template"]["spec"]
        spec["volumes"].append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": size}})
        ray_container(body, "workers")["volumeMounts"].append({"name": "dshm", "mountPath": "/dev/shm"})
        return body

    await runtime_kube.create(RAYCLUSTERS, with_own_shm("smallshm", "64Mi"), namespace)
    await runtime_kube.create(RAYCLUSTERS, with_own_shm("bigshm", "512Mi"), namespace)

    async def worker_volumes() -> list[str] | NotYet:
        pods = [p async for p in kube.list(Pod, namespace=namespace, labels={"ray.io/cluster": "smallshm"})]
        workers = [p for p in pods if (p.metadata.labels or {}).get("ray.io/node-type") == "worker"]  # type: ignore[union-attr]
        return [v.name for v in workers[0].spec.volumes or []] if workers else NotYet("no worker Pod yet")  # type: ignore[union-attr]

    volumes = await wait_for(worker_volumes, 60, what="smallshm's worker Pod")
    assert "dshm" in volumes and c.SHARED_MEMORY_VOLUME_NAME not in volumes, volumes  # KubeRay's rule, kept

    report = await run_doctor(kubeconfig, namespace, "smallshm")
    found = findings_by_rule(report, "H01")["H01"]
    assert "mounts its own /dev/shm (dshm, 64Mi), smaller than Ray's default object store (about 307Mi" in found.title
    sizes = {e.path: e.value for e in found.evidence}
    assert sizes["spec.workerGroupSpecs[0].template.spec.volumes[dshm].emptyDir.sizeLimit"] == "64Mi", sizes
    assert_quiet(await run_doctor(kubeconfig, namespace, "bigshm"), "H01")


async def test_an_image_pull_failure_on_the_head_keeps_workers_waiting_for_the_gcs(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, kubelet_node: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    body = pin_to(seed_cluster(), kubelet_node)
    ray_container(body, "head")["image"] = "rayproject/ray:2.52.O"
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    pods = await scheduled_pods(runtime_kube, namespace, 3)
    head = head_of(pods)
    pull = 'Back-off pulling image "rayproject/ray:2.52.O"'
    await kubelet_reports(
        kube,
        head,
        phase="Pending",
        containers={"ray-head": {"waiting": {"reason": "ImagePullBackOff", "message": pull}}},
    )
    await kubelet_event(
        kube,
        head,
        "Failed",
        'Failed to pull image "rayproject/ray:2.52.O": rpc error: code = '
        'NotFound desc = failed to resolve reference "docker.io/rayproject/ray:2.52.O": not found',
    )
    await kubelet_event(kube, head, "BackOff", pull, count=7, type_="Normal")
    for worker in workers_in(pods):
        await kubelet_reports(
            kube, worker, phase="Pending", containers={"ray-worker": {"waiting": {"reason": "PodInitializing"}}},
            init=waiting_for_gcs(), initialized=False,
        )  # fmt: skip

    report = await wait_diagnosis(
        kubeconfig, namespace, has_root("C01", with_consequences={"X02", "E01", "X03", "X01"}), "C01 → E01"
    )
    root = root_named(report, "C01")
    assert "rayproject/ray:2.52.O" in root.title
    by_rule = findings_by_rule(report, "E01")
    assert by_rule["E01"].title.startswith("2 workers wait for the GCS"), by_rule["E01"].title


async def test_failed_mount_written_by_the_kubelet_is_the_root_cause(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, kubelet_node: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, pin_to(seed_cluster(), kubelet_node), namespace)
    pods = await scheduled_pods(runtime_kube, namespace, 3)
    mount = ('MountVolume.SetUp failed for volume "shared-data" : mount failed: exit status 32: mount.nfs: '
             "Connection timed out")  # fmt: skip
    for pod in pods:
        if pod is head_of(pods):
            await kubelet_reports(
                kube, pod, phase="Pending", containers={"ray-head": {"waiting": {"reason": "ContainerCreating"}}}
            )
        else:
            await kubelet_reports(
                kube, pod, phase="Pending", containers={"ray-worker": {"waiting": {"reason": "PodInitializing"}}},
                init={c.WAIT_GCS_READY_INIT_CONTAINER: {"waiting": {"reason": "PodInitializing"}}}, initialized=False,
            )  # fmt: skip
        await kubelet_event(kube, pod, "FailedMount", mount, count=5)

    report = await wait_diagnosis(
        kubeconfig, namespace, has_root("B10", with_consequences={"X02", "X03", "X01"}), "B10 over the Pods"
    )
    root = root_named(report, "B10")
    assert "shared-data" in root.title and "ray-shared-data" in root.title, root.title


# --------------------------------------------------------------------------------------------------------------------
# "Head 起来了 Worker 连不上" and "Dashboard 打不开"
# --------------------------------------------------------------------------------------------------------------------


async def test_head_running_but_not_ready_is_a_failing_probe(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await ready_seed(kube, runtime_kube, namespace)
    head = head_of(await cluster_pods(runtime_kube, namespace))
    await kubelet_reports(kube, head, phase="Running", containers={"ray-head": {"running": {"startedAt": _now()}}})
    await kubelet_event(
        kube, head, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503", count=12
    )

    report = await wait_diagnosis(
        kubeconfig, namespace, has_root("D02", with_consequences={"X02", "F07"}), "D02 over the head"
    )
    root = root_named(report, "D02")
    assert "Readiness probe failed" in root.title
    assert "B05" in consequences(report, root)  # the state stays "ready": KubeRay's state is sticky


async def test_an_edited_head_service_selector_empties_the_endpoints_and_cuts_off_workers(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await ready_seed(kube, runtime_kube, namespace)
    selector = {c.RAY_ID_LABEL: f"{CLUSTER}-head-old"}
    await kube.patch(Service, f"{CLUSTER}-head-svc", {"spec": {"selector": selector}}, namespace=namespace)

    report = await wait_diagnosis(
        kubeconfig, namespace, has_root("F06", with_consequences={"F02", "E01", "F07"}), "F06 → F02 → E01, F07"
    )
    root = root_named(report, "F06")
    assert f"{c.RAY_ID_LABEL}={CLUSTER}-head-old" in root.title


async def test_a_deleted_head_service_cuts_off_workers_and_the_dashboard(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await ready_seed(kube, runtime_kube, namespace)
    await operator.stop()  # else it recreates the Service at once, as KubeRay does
    await kube.delete(Service, f"{CLUSTER}-head-svc", namespace=namespace)

    report = await wait_diagnosis(
        kubeconfig, namespace, has_root("F05", with_consequences={"E01", "F07"}), "F05 → E01, F07"
    )
    assert root_named(report, "F05").object.name == f"{CLUSTER}-head-svc"


# --------------------------------------------------------------------------------------------------------------------
# Operator and RBAC, spec validity
# --------------------------------------------------------------------------------------------------------------------


async def test_without_an_operator_the_missing_pods_hang_under_operator_missing(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, ray_crds: list[str]
) -> None:
    async def no_operator() -> bool | NotYet:  # other tests' operators go with their namespaces
        found = [
            f"{d.metadata.namespace}/{d.metadata.name}"
            async for d in kube.list(Deployment, namespace="*", labels={c.K8S_APP_NAME_LABEL: "kuberay-operator"})
            if d.metadata is not None
        ]
        return True if not found else NotYet(f"operator Deployments {found}")

    await wait_for(no_operator, 180, what="a sandbox without an operator Deployment")
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)

    def settled(report: Report) -> bool:  # with --starting-grace 0 (run_doctor), no operator is an error at once
        chained = has_root("A01", with_consequences={"A12", "X02", "X03", "F05", "X01"})(report)
        # ... and the seed's PVC is bound by then (until the provisioner binds it, B04 is a second root cause)
        return chained and root_named(report, "A01").severity == "error" and len(roots(report)) == 1

    report = await wait_diagnosis(kubeconfig, namespace, settled, "A01 as the only root cause, an error")
    root = root_named(report, "A01")
    assert root.confidence == "confirmed"
    assert [f.rule for f in roots(report)] == ["A01"], render_text(report)


def _operator_deployment(namespace: str, args: list[str]) -> dict[str, Any]:
    labels = {c.K8S_APP_NAME_LABEL: "kuberay-operator", "app.kubernetes.io/component": c.COMPONENT_NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": c.OPERATOR_DEPLOYMENT_NAME, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {c.K8S_APP_NAME_LABEL: "kuberay-operator"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": c.OPERATOR_DEPLOYMENT_NAME,
                    "containers": [{"name": "kuberay-operator", "image": "ghcr.io/raykube/raykube-operator:0.1.0",
                                    "command": ["raykube", "operator"], "args": args}],
                },
            },
        },
    }  # fmt: skip


FAILED_HEAD, CONTROLLER = c.EVENT_FAILED_TO_CREATE_HEAD_POD, c.RAYCLUSTER_CONTROLLER_NAME


async def test_rbac_forbidden_for_the_operator_service_account(
    sandbox: RunningSandbox, kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str,
    ray_crds: list[str], tmp_path: Path,
) -> None:  # fmt: skip
    """The operator runs (in-process) as its ServiceAccount, whose ClusterRole lacks `create pods`; its Deployment
    (which kwok keeps Ready) tells the doctor which ServiceAccount to review."""
    role = f"doctor-{namespace}"[:63]
    without_create = [
        dataclasses.replace(r, verbs=tuple(v for v in r.verbs if v != "create")) if r.resources == ("pods",) else r
        for r in rbac.OPERATOR_RULES
    ]
    await kube.create(from_dict({"apiVersion": "v1", "kind": "ServiceAccount",
                                 "metadata": {"name": c.OPERATOR_DEPLOYMENT_NAME}}), namespace=namespace)  # fmt: skip
    await kube.create(CLUSTER_ROLE.from_dict(rbac.cluster_role(role, without_create)))
    await kube.create(
        CLUSTER_ROLE_BINDING.from_dict(
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
             "subjects": [{"kind": "ServiceAccount", "name": c.OPERATOR_DEPLOYMENT_NAME, "namespace": namespace}]}
        )
    )  # fmt: skip
    args = [f"--watch-namespace={namespace}", "--enable-leader-election=false"]
    await kube.create(from_dict(_operator_deployment(namespace, args)), namespace=namespace)
    sa_kubeconfig = await sandbox.sandbox.service_account_kubeconfig(
        namespace, c.OPERATOR_DEPLOYMENT_NAME, tmp_path / "operator.kubeconfig"
    )
    config = OperatorConfig(kubeconfig=sa_kubeconfig, enable_leader_election=False, probe_addr="127.0.0.1:0",
                            watch_namespaces=(namespace,))  # fmt: skip
    running_operator = Operator(config)
    stop = asyncio.Event()
    running = asyncio.create_task(running_operator.run(stop))
    try:
        await create_seed_dependencies(kube, namespace)
        await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
        # The RBAC rules may name A02 before the operator's first refused create.
        refusal = has_root(
            "A02",
            with_consequences={"B01", "X02", "X01"},
            with_evidence=lambda e: "cannot create" in str(e.value) and '"pods"' in str(e.value),
        )
        report = await wait_diagnosis(kubeconfig, namespace, refusal, "A02 → B01 → X02, with the refusal")
        root = root_named(report, "A02")
        assert root.object.kind == "ServiceAccount" and root.object.name == c.OPERATOR_DEPLOYMENT_NAME
        b01 = findings_of(report, "B01")[0]
        assert "forbidden" in b01.title

        # Its ClusterRole alone (no leader-election Role here) lets it write its events.k8s.io/v1 Events (EV-1).
        async def refusal_event() -> list[dict[str, Any]] | NotYet:
            listed = (await runtime_kube.list(EVENTS, namespace)).items
            found = [e for e in listed if (e["reason"], e["reportingController"]) == (FAILED_HEAD, CONTROLLER)]
            return found or NotYet(f"events {sorted({e['reason'] for e in listed})}")

        await wait_for(refusal_event, 30, what="the operator's FailedToCreateHeadPod event")
    finally:
        stop.set()
        await running
        await running_operator.kube.close()
        for res, name in ((CLUSTER_ROLE_BINDING, role), (CLUSTER_ROLE, role)):
            await kube.delete(res, name)
        await kube.delete(Deployment, c.OPERATOR_DEPLOYMENT_NAME, namespace=namespace)

        async def gone() -> bool | NotYet:
            try:
                await kube.get(Deployment, c.OPERATOR_DEPLOYMENT_NAME, namespace=namespace)
            except ApiError:
                return True
            return NotYet("the operator Deployment still exists")

        await wait_for(gone, 60, what="the test's operator Deployment to go")


async def test_an_invalid_spec_is_the_root_cause_and_nothing_is_created(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    body = seed_cluster(resources={"CPU": "1"}, rayStartParams={"num-cpus": "1"})
    await runtime_kube.create(RAYCLUSTERS, body, namespace)

    def confirmed(report: Report) -> bool:  # the operator's InvalidRayClusterSpec event agrees with the validator
        return has_root("A05", with_consequences={"X02", "X03"})(report) and root_named(report, "A05").confidence == (
            "confirmed"
        )

    report = await wait_diagnosis(kubeconfig, namespace, confirmed, "A05, confirmed by the operator's event")
    root = root_named(report, "A05")
    assert any(e.reason == c.EVENT_INVALID_RAYCLUSTER_SPEC for e in root.evidence)
    assert "rayStartParams" in root.title


# --------------------------------------------------------------------------------------------------------------------
# --all, dumps, permissions, the CLI
# --------------------------------------------------------------------------------------------------------------------


async def test_all_diagnoses_every_raycluster_in_the_namespace(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await ready_seed(kube, runtime_kube, namespace, "healthy")
    greedy = seed_cluster("greedy")
    ray_container(greedy, "workers")["resources"] = {"requests": {"cpu": "16"}, "limits": {"cpu": "16"}}
    await runtime_kube.create(RAYCLUSTERS, greedy, namespace)
    keyless = seed_cluster("keyless")
    ray_container(keyless, "head")["env"] = [
        {"name": "X", "valueFrom": {"secretKeyRef": {"name": "minio-credentials", "key": "MISSING"}}}
    ]
    await runtime_kube.create(RAYCLUSTERS, keyless, namespace)

    def settled(report: Report) -> bool:
        rules = {t.name: {f.rule for f in roots(report) if f.cluster == t} for t in report.targets}
        return (
            rules.get("healthy") == set()
            and "B02" in rules.get("greedy", set())
            and "C08" in rules.get("keyless", set())
        )

    report = await wait_diagnosis(kubeconfig, namespace, settled, "three clusters, three verdicts", name=None)
    assert_fires(roots(report), "B02", "C08")
    assert [t.name for t in report.targets] == ["greedy", "healthy", "keyless"]

    result = cli("doctor", "--all", "-n", namespace, "-o", "json", kubeconfig=kubeconfig)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    statuses = {t["name"]: t["status"] for t in document["targets"]}
    assert statuses == {"greedy": "Unhealthy", "healthy": "Healthy", "keyless": "Unhealthy"}
    assert document["summary"]["unhealthyClusters"] == 2


async def test_dump_then_from_dump_gives_the_same_findings(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager, tmp_path: Path
) -> None:
    await create_seed_dependencies(kube, namespace)
    await ready_seed(kube, runtime_kube, namespace)
    await kube.patch(Service, f"{CLUSTER}-head-svc", {"spec": {"selector": {c.RAY_ID_LABEL: "nobody"}}},
                     namespace=namespace)  # fmt: skip
    await wait_diagnosis(kubeconfig, namespace, has_root("F06", with_consequences={"F02"}), "the selector to bite")

    client = Kube.from_config(kubeconfig)
    try:
        live, snap = await diagnose_live(
            client,
            Scope(namespaces=(namespace,), targets=((namespace, CLUSTER),)),
            Options(starting_grace=0),
            dump_to=tmp_path / "dump",
        )
    finally:
        await client.close()
    offline = diagnose(dumps.read(tmp_path / "dump", targets=((namespace, CLUSTER),)), Options(starting_grace=0))

    def summary(report: Report) -> list[tuple[str, str, str, list[str]]]:
        return [(f.id, f.severity, f.title, f.caused_by) for f in report.findings]

    assert summary(offline) == summary(live)
    assert render_text(offline).replace("· dump ·", "· live ·") == render_text(live)
    secrets = (tmp_path / "dump" / "secrets.yaml").read_text()
    assert "minio-credentials" in secrets and base64.b64encode(b"minio123").decode() not in secrets

    result = cli(
        "doctor", f"raycluster/{CLUSTER}", "-n", namespace, "--from-dump", str(tmp_path / "dump"), "-o", "json"
    )
    assert result.returncode == 1, result.stderr
    assert [f["id"] for f in json.loads(result.stdout)["findings"]] == [f.id for f in live.findings]
    assert snap.source == "live"


async def test_a_user_who_may_not_read_secrets_gets_a_not_checked_line(
    sandbox: RunningSandbox, kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager, tmp_path: Path
) -> None:
    await create_seed_dependencies(kube, namespace)
    await ready_seed(kube, runtime_kube, namespace)
    readable = {
        "": ["pods", "events", "services", "configmaps", "persistentvolumeclaims", "resourcequotas"],
        "ray.io": ["rayclusters"],
        "discovery.k8s.io": ["endpointslices"],
        "apps": ["deployments"],
        "autoscaling": ["horizontalpodautoscalers"],
        "networking.k8s.io": ["ingresses", "networkpolicies"],
    }
    await kube.create(from_dict({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "viewer"}}),
                      namespace=namespace)  # fmt: skip
    await kube.create(
        ROLE.from_dict({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "viewer"},
                        "rules": [{"apiGroups": [g], "resources": r, "verbs": ["get", "list"]}
                                  for g, r in readable.items()]}),
        namespace=namespace,
    )  # fmt: skip
    await kube.create(
        ROLE_BINDING.from_dict({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                                "metadata": {"name": "viewer"},
                                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "viewer"},
                                "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": namespace}]}),
        namespace=namespace,
    )  # fmt: skip
    viewer = await sandbox.sandbox.service_account_kubeconfig(namespace, "viewer", tmp_path / "viewer.kubeconfig")

    result = cli("doctor", f"raycluster/{CLUSTER}", "-n", namespace, kubeconfig=viewer)
    assert result.returncode == 0, result.stdout + result.stderr  # still diagnosed: healthy, with what it missed
    assert "Traceback" not in result.stderr
    not_checked = next(line for line in result.stdout.splitlines() if line.startswith("Not checked:"))
    assert "secrets (forbidden: cannot list secrets" in not_checked
    assert "nodes (forbidden" in not_checked

    as_json = json.loads(
        cli("doctor", f"raycluster/{CLUSTER}", "-n", namespace, "-o", "json", kubeconfig=viewer).stdout
    )
    assert any(n["what"] == "secrets" for n in as_json["notChecked"])


def _unreachable_copy(kubeconfig: Path, path: Path) -> Path:
    """The kubeconfig pointing at a port nothing listens on."""
    text = kubeconfig.read_text()
    server = next(line.split("server:", 1)[1].strip() for line in text.splitlines() if "server:" in line)
    path.write_text(text.replace(server, "https://127.0.0.1:9"))
    return path


async def test_the_cli_exit_codes_for_usage_errors_and_missing_targets(
    kubeconfig: Path, namespace: str, ray_crds: list[str], tmp_path: Path
) -> None:
    assert cli("doctor", "cronjob/x", "-n", namespace, kubeconfig=kubeconfig).returncode == 2
    cron = cli("doctor", "raycronjob/x", "-n", namespace, kubeconfig=kubeconfig)
    assert cron.returncode == 3 and f"RayCronJob {namespace}/x not found" in cron.stdout, cron.stdout
    absent = cli("doctor", "rayjob/x", "-n", namespace, kubeconfig=kubeconfig)
    assert absent.returncode == 3 and f"RayJob {namespace}/x not found" in absent.stdout, absent.stdout
    assert cli("doctor", "-n", namespace, kubeconfig=kubeconfig).returncode == 2
    assert cli("doctor", "raycluster/x", "-o", "yaml", kubeconfig=kubeconfig).returncode == 2
    missing = cli("doctor", "raycluster/nope", "-n", namespace, kubeconfig=kubeconfig)
    assert missing.returncode == 3, missing.stdout + missing.stderr
    assert f"RayCluster {namespace}/nope not found" in missing.stdout
    unreachable = _unreachable_copy(kubeconfig, tmp_path / "unreachable.kubeconfig")
    down = cli("doctor", "raycluster/x", "-n", namespace, kubeconfig=unreachable)
    assert down.returncode == 3, down.stdout + down.stderr
    assert "cannot reach the API server" in down.stderr


# --------------------------------------------------------------------------------------------------------------------
# RayJobs and RayServices: the cluster's root cause, named first in their own section
# --------------------------------------------------------------------------------------------------------------------


async def test_a_rayjob_whose_workers_can_never_fit_names_its_clusters_root_cause_first(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    """`raykube doctor rayjob/NAME`: the RayJob stays Initializing because the RayCluster it made cannot schedule
    its workers; the RayJob's section starts with that cluster's root cause (B02), the wait (J03) under it."""
    await create_seed_dependencies(kube, namespace)
    spec = seed_cluster()["spec"]
    group = spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    group["resources"] = {"requests": {"cpu": "16", "memory": "1Gi"}, "limits": {"cpu": "16", "memory": "1Gi"}}
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "train"},
           "spec": {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": spec}}  # fmt: skip
    await runtime_kube.create(RAYJOBS, job, namespace)

    async def diagnosed() -> str | NotYet:
        run = cli("doctor", "rayjob/train", "-n", namespace, kubeconfig=kubeconfig)
        section = run.stdout.split(f"RayJob {namespace}/train:", 1)[-1].split("\nRayCluster ", 1)[0]
        # A second root cause can show for a moment while the cluster starts (seen, not identified): wait for B02 alone.
        alone = "Root cause (in what it runs on)" in section
        if (
            run.returncode == 1
            and alone
            and "UNSCHEDULABLE_RESOURCES" in section
            and "RAYJOB_WAITING_FOR_CLUSTER" in section
        ):
            return section
        return NotYet(f"exit {run.returncode}: {run.stdout[-800:]}")

    section = await wait_for(diagnosed, DOCTOR_WAIT, what="the RayJob's section with B02 first", max_interval=2.0)
    assert "Root cause (in what it runs on)" in section, section
    assert section.index("UNSCHEDULABLE_RESOURCES") < section.index("RAYJOB_WAITING_FOR_CLUSTER"), section
    as_json = json.loads(cli("doctor", "rayjob/train", "-n", namespace, "-o", "json", kubeconfig=kubeconfig).stdout)
    kinds = [t["kind"] for t in as_json["targets"]]
    assert kinds == ["RayJob", "RayCluster"], kinds
    [job_target] = [t for t in as_json["targets"] if t["kind"] == "RayJob"]
    by_id = {f["id"]: f for f in as_json["findings"]}
    assert [by_id[i]["rule"] for i in job_target["rootCauses"]] == ["B02"]
    assert_fires(as_json, "B02")


async def test_an_incremental_upgrade_without_the_gateway_api_is_named_before_anything_is_made(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    """A RayService with KubeRay v1.7.0's default-on ``NewClusterWithIncrementalUpgrade`` on an API server that serves
    no Gateway API (this sandbox's kwok nodes): the operator's pass fails before any cluster, as v1.7.0's does, and
    ``raykube doctor rayservice/NAME`` names that (U01) while the RayService shows nothing."""
    await create_seed_dependencies(kube, namespace)
    options = {"gatewayClassName": "istio", "stepSizePercent": 20, "intervalSeconds": 10, "maxSurgePercent": 40}
    service = {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "serve"},
               "spec": {"serveConfigV2": "applications: []", "rayClusterConfig": seed_cluster()["spec"],
                        "upgradeStrategy": {"type": c.RAYSERVICE_UPGRADE_INCREMENTAL,
                                            "clusterUpgradeOptions": options}}}  # fmt: skip
    await runtime_kube.create(RAYSERVICES, service, namespace)

    async def diagnosed() -> dict[str, Any] | NotYet:
        run = cli("doctor", "rayservice/serve", "-n", namespace, "-o", "json", kubeconfig=kubeconfig)
        report = json.loads(run.stdout) if run.stdout.startswith("{") else {}
        rules = [f["rule"] for f in report.get("findings") or []]
        return report if run.returncode == 1 and "U01" in rules else NotYet(f"exit {run.returncode}: {rules}")

    report = await wait_for(diagnosed, DOCTOR_WAIT, what="U01 for the RayService", max_interval=2.0)
    [target] = [t for t in report["targets"] if t["kind"] == "RayService"]
    by_id = {f["id"]: f for f in report["findings"]}
    assert [by_id[i]["rule"] for i in target["rootCauses"]] == ["U01"], target
    assert_fires(report, "U01")
    assert (await runtime_kube.list(RAYCLUSTERS, namespace)).items == []  # the pass failed before any cluster


async def test_a_cluster_that_is_starting_is_progress_not_a_problem(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    """From its creation until it is ready, the chapter's healthy cluster gets exit 0 and no finding at warning or
    above from the doctor with its default starting grace: "not Ready yet" is progress then."""
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
    runs: list[Report] = []

    # The test's operator runs in-process, without the Deployment a real install has: A01 would rightly say so
    # until the first reconcile; everything else is judged as a user's doctor run would.
    options = Options(skip=frozenset({"A01"}))

    async def ready_and_never_alarmed() -> bool | NotYet:
        report = await run_doctor(kubeconfig, namespace, options=options)
        runs.append(report)
        loud = [f"{f.rule} {f.severity}: {f.title}" for f in report.findings if at_least(f.severity, "warning")]
        assert report.exit_code() == 0 and not loud, render_text(report)
        state = ((await runtime_kube.get(RAYCLUSTERS, CLUSTER, namespace)).get("status") or {}).get("state")
        return True if state == "ready" else NotYet(f"state {state!r}")

    await wait_for(ready_and_never_alarmed, DOCTOR_WAIT, what="the cluster ready, the doctor calm", max_interval=0.5)
    assert runs


# --------------------------------------------------------------------------------------------------------------------
# NetworkPolicies: judged from the objects (the sandbox enforces none)
# --------------------------------------------------------------------------------------------------------------------


async def _network_policy(kube: Kube, name: str, namespace: str, spec: dict[str, Any]) -> None:
    body = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name}, "spec": spec}
    await kube.create(NETWORK_POLICIES, body, namespace)


def _evidence_names(policy: str) -> Callable[[Evidence], bool]:
    return lambda e: e.object is not None and e.object.kind == "NetworkPolicy" and e.object.name == policy


async def test_planted_network_policies_that_deny_dns_and_ray_ports_are_the_root_causes(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Manager
) -> None:
    """A ready seed cluster, then two policies as users write them: the workers' egress admits only the cluster's
    Pods (no DNS: E06), and the head admits only the GCS port by its name (every other Ray port cut: E03). The
    API server stores them with its defaults (policyTypes, TCP), which the doctor reads back."""
    await create_seed_dependencies(kube, namespace)
    await ready_seed(kube, runtime_kube, namespace)
    cluster = {"matchLabels": {c.RAY_CLUSTER_LABEL: CLUSTER}}
    workers = {"matchLabels": {c.RAY_CLUSTER_LABEL: CLUSTER, c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_WORKER}}
    head = {"matchLabels": {c.RAY_CLUSTER_LABEL: CLUSTER, c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD}}
    to_cluster = {"to": [{"podSelector": cluster}]}
    gcs_only = {"from": [{"podSelector": cluster}], "ports": [{"port": "gcs-server"}]}
    await _network_policy(
        runtime_kube,
        "workers-egress",
        namespace,
        {"podSelector": workers, "policyTypes": ["Egress"], "egress": [to_cluster]},
    )
    await _network_policy(runtime_kube, "head-gcs-only", namespace, {"podSelector": head, "ingress": [gcs_only]})

    def both(report: Report) -> bool:
        return has_root("E06", titled="workers-egress", with_evidence=_evidence_names("workers-egress"))(
            report
        ) and has_root("E03", titled="head-gcs-only", with_evidence=_evidence_names("head-gcs-only"))(report)

    report = await wait_diagnosis(kubeconfig, namespace, both, "E06 and E03 over the planted policies")
    no_dns = root_named(report, "E06")
    assert no_dns.title == (
        f"NetworkPolicy workers-egress allows workers of group workers no DNS: they cannot resolve {CLUSTER}-head-svc "
        "and never join"
    )
    ports = root_named(report, "E03")
    assert "(dashboard 8265, client 10001 and Ray's other ports)" in ports.title, ports.title
    assert_quiet(report, "E07")  # no RayJob or RayService reads this cluster's dashboard

    # Fixed as the findings say (a second policy adds DNS; the head admits the cluster on every port): quiet.
    dns = {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}
    await _network_policy(
        runtime_kube, "workers-dns", namespace, {"podSelector": workers, "policyTypes": ["Egress"], "egress": [dns]}
    )
    from_cluster = {"from": [{"podSelector": cluster}]}
    await _network_policy(
        runtime_kube, "head-from-cluster", namespace, {"podSelector": head, "ingress": [from_cluster]}
    )
    await wait_diagnosis(
        kubeconfig,
        namespace,
        lambda r: not {"E03", "E06", "E07"} & {f.rule for f in r.findings},
        "no NetworkPolicy finding once the policies admit what Ray needs",
    )


async def test_kuberays_own_deny_all_policies_leave_dns_out_until_the_spec_adds_it(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, ray_crds: list[str]
) -> None:
    """The operator with the RayClusterNetworkPolicy gate makes KubeRay v1.7.0's policies for ``mode: DenyAll``:
    they keep the cluster's Pods together (no E03) and add no DNS rule (E06, as v1.7.0 really does); once
    spec.networkPolicy carries the DNS rule the operator rewrites them and the doctor is quiet."""
    async with operator_on(kubeconfig, namespace, c.GATE_RAYCLUSTER_NETWORK_POLICY, concurrency=2):
        await create_seed_dependencies(kube, namespace)
        body = seed_cluster()
        body["spec"]["networkPolicy"] = {"mode": c.NETWORK_POLICY_DENY_ALL}
        await runtime_kube.create(RAYCLUSTERS, body, namespace)
        await wait_ready(runtime_kube, namespace, workers=2)

        report = await wait_diagnosis(
            kubeconfig,
            namespace,
            has_root("E06", titled=f"{CLUSTER}-head", with_evidence=_evidence_names(f"{CLUSTER}-workers-workers")),
            "E06 over the operator's own policies",
        )
        found = root_named(report, "E06")
        assert "KubeRay v1.7.0's own policies add no DNS rule" in found.explanation
        assert "spec.networkPolicy.head.egressRules" in found.remediation[0]
        assert_quiet(report, "E03", "E07")

        kube_dns = {"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}
        ports = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
        dns = {"egressRules": [{"to": [kube_dns], "ports": ports}]}
        patch = {"spec": {"networkPolicy": {"mode": c.NETWORK_POLICY_DENY_ALL, "head": dns, "worker": dns}}}
        await runtime_kube.patch(RAYCLUSTERS, CLUSTER, patch, namespace)
        await wait_diagnosis(
            kubeconfig,
            namespace,
            lambda r: not {"E03", "E06", "E07"} & {f.rule for f in r.findings},
            "no NetworkPolicy finding once the spec has the DNS rule",
        )

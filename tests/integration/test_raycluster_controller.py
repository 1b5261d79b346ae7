"""The RayCluster controller, in-process, against the sandbox: the seed's cluster, scaling, workersToDelete,
self-healing, suspend and resume, and cleanup through owner references."""

from __future__ import annotations

import base64
import socket
from collections.abc import Mapping
from typing import Any

from lightkube import AsyncClient
from lightkube.codecs import from_dict
from lightkube.resources.discovery_v1 import EndpointSlice

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import EVENTS, PODS, SERVICES
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for

CLUSTER = "seed"
RAY_IMAGE = "rayproject/ray:2.52.0"


def seed_cluster(name: str = CLUSTER, workers: int = 2, **group: Any) -> dict[str, Any]:
    """The seed chapter's cluster: 1 head + N workers, env from a ConfigMap and a Secret, a PVC at /home/ray/shared."""

    def template(container: str, cpu: str, memory: str) -> dict[str, Any]:
        return {
            "spec": {
                "containers": [
                    {
                        "name": container,
                        "image": RAY_IMAGE,
                        "resources": {
                            "limits": {"cpu": cpu, "memory": memory},
                            "requests": {"cpu": cpu, "memory": memory},
                        },
                        "envFrom": [
                            {"configMapRef": {"name": "ray-env"}},
                            {"secretRef": {"name": "minio-credentials"}},
                        ],
                        "volumeMounts": [{"name": "shared-data", "mountPath": "/home/ray/shared"}],
                    }
                ],
                "volumes": [{"name": "shared-data", "persistentVolumeClaim": {"claimName": "ray-shared-data"}}],
            }
        }

    head = template("ray-head", "1", "2Gi")
    head["spec"]["containers"][0]["ports"] = [
        {"name": "gcs-server", "containerPort": 6379},
        {"name": "dashboard", "containerPort": 8265},
        {"name": "client", "containerPort": 10001},
    ]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": head},
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": 0,
                    "maxReplicas": 10,
                    "rayStartParams": {},
                    "template": template("ray-worker", "1", "1Gi"),
                    **group,
                }
            ],
        },
    }


async def create_seed_dependencies(kube: AsyncClient, namespace: str) -> None:
    for body in (
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ray-env"},
            "data": {"RAY_LOG_TO_STDERR": "1", "RAY_object_store_memory": "1000000000"},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "minio-credentials"},
            "data": {
                "AWS_ACCESS_KEY_ID": base64.b64encode(b"minio").decode(),
                "AWS_SECRET_ACCESS_KEY": base64.b64encode(b"minio123").decode(),
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "ray-shared-data"},
            "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    ):
        await kube.create(from_dict(body), namespace=namespace)


def _ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return status.get("phase") == "Running" and conditions.get("Ready") == "True"


async def cluster_pods(kube: Kube, namespace: str, name: str = CLUSTER) -> list[dict[str, Any]]:
    result = await kube.list(PODS, namespace, label_selector=f"ray.io/cluster={name}")
    return [p for p in result.items if not p["metadata"].get("deletionTimestamp")]


def workers_of(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]


async def wait_ready(kube: Kube, namespace: str, workers: int, name: str = CLUSTER) -> dict[str, Any]:
    """Wait until the cluster is ready with exactly 1 head and ``workers`` workers, all Running and Ready."""

    async def check() -> dict[str, Any] | NotYet:
        cluster = await kube.get(RAYCLUSTERS, name, namespace)
        pods = await cluster_pods(kube, namespace, name)
        status = cluster.get("status") or {}
        heads = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
        summary = (
            f"state={status.get('state')} available={status.get('availableWorkerReplicas')} "
            f"pods={[(p['metadata']['name'], (p.get('status') or {}).get('phase')) for p in pods]}"
        )
        if status.get("state") != "ready" or len(heads) != 1 or len(workers_of(pods)) != workers:
            return NotYet(summary)
        if not all(_ready(p) for p in pods) or status.get("availableWorkerReplicas") != workers:
            return NotYet(summary)
        return cluster

    return await wait_for(check, 90, what=f"RayCluster {name} ready with 1 head + {workers} workers")


async def test_the_seed_cluster_becomes_ready_with_its_service_endpoints(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)

    cluster = await wait_ready(runtime_kube, namespace, workers=2)

    pods = await cluster_pods(runtime_kube, namespace)
    [head] = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    status = cluster["status"]
    assert status["desiredWorkerReplicas"] == 2
    assert status["readyWorkerReplicas"] == 2
    assert status["head"]["podName"] == head["metadata"]["name"]
    assert status["head"]["podIP"] == head["status"]["podIP"]
    assert status["head"]["serviceName"] == f"{CLUSTER}-head-svc"
    assert status["head"]["serviceIP"] == head["status"]["podIP"]  # headless: the head Pod's IP
    assert status["observedGeneration"] == cluster["metadata"]["generation"]
    assert status["desiredCPU"] == "3"
    assert status["desiredMemory"] == "4Gi"
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["HeadPodReady"] == "True"
    assert conditions["RayClusterProvisioned"] == "True"
    for pod in pods:
        container = pod["spec"]["containers"][0]
        assert {"configMapRef": {"name": "ray-env"}} in container["envFrom"]
        assert {"name": "shared-data", "mountPath": "/home/ray/shared"} in container["volumeMounts"]
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
    # The operator's cache keeps of each Pod's spec only what it reads (controllers.watches.cached_pod), and the
    # status above was computed from those Pods.
    cached = operator.cache.list(PODS, namespace, {"ray.io/cluster": CLUSTER})
    assert sorted(p["metadata"]["name"] for p in cached) == sorted(p["metadata"]["name"] for p in pods)
    for pod in cached:
        assert set(pod["spec"]) == {"restartPolicy", "containers"}
        assert set(pod["spec"]["containers"][0]) <= {"name", "ports"}
        assert pod["status"]["phase"] == "Running"

    service = await runtime_kube.get(SERVICES, f"{CLUSTER}-head-svc", namespace)
    assert service["spec"]["clusterIP"] == "None"

    async def endpoint_has_head() -> list[str] | NotYet:
        addresses = [
            address
            async for s in kube.list(
                EndpointSlice, namespace=namespace, labels={"kubernetes.io/service-name": f"{CLUSTER}-head-svc"}
            )
            for endpoint in s.endpoints or []
            for address in endpoint.addresses
        ]
        return addresses if addresses == [head["status"]["podIP"]] else NotYet(f"endpoints {addresses}")

    await wait_for(endpoint_has_head, 60, what="the head Service's EndpointSlice to hold the head Pod IP")

    async def events() -> list[dict[str, Any]] | NotYet:
        listed = (await runtime_kube.list(EVENTS, namespace)).items
        mine = [
            e
            for e in listed
            if e["regarding"]["kind"] == "RayCluster" and e["reportingController"] == "raycluster-controller"
        ]
        reasons = {e["reason"] for e in mine}
        wanted = {"CreatedService", "CreatedHeadPod", "CreatedWorkerPod"}
        return mine if wanted <= reasons else NotYet(f"events {sorted(reasons)}")

    mine = await wait_for(events, 30, what="KubeRay's events about the cluster")
    # Written as KubeRay v1.7.0 writes them, through events.k8s.io/v1 (a core/v1 Event has no eventTime, and a
    # deprecatedSource): with eventTime, the Create action and reportingInstance <controller>-<hostname>.
    assert [e["reason"] for e in mine if not e.get("eventTime") or e.get("deprecatedSource")] == []
    assert {e["action"] for e in mine if e["reason"] in ("CreatedService", "CreatedHeadPod", "CreatedWorkerPod")} == {
        "Create"
    }
    assert {e["reportingInstance"] for e in mine} == {f"raycluster-controller-{socket.gethostname()}"}


async def test_scaling_follows_replicas_up_and_down(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
    await wait_ready(runtime_kube, namespace, workers=2)

    for replicas in (5, 1):
        patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": replicas}]
        await runtime_kube.patch(RAYCLUSTERS, CLUSTER, patch, namespace, patch_type="json")
        cluster = await wait_ready(runtime_kube, namespace, workers=replicas)
        assert cluster["status"]["desiredWorkerReplicas"] == replicas
    [survivor] = workers_of(await cluster_pods(runtime_kube, namespace))
    assert survivor["metadata"]["labels"]["ray.io/worker-group-replica-index"] in {"0", "1", "2", "3", "4"}


async def test_workers_to_delete_removes_exactly_the_named_pods_and_is_left_in_place(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(workers=3), namespace)
    await wait_ready(runtime_kube, namespace, workers=3)
    names = sorted(p["metadata"]["name"] for p in workers_of(await cluster_pods(runtime_kube, namespace)))
    doomed, kept = names[:2], names[2]

    # What the Ray autoscaler sends: one JSON patch with the new count and the Pods to remove.
    patch = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 1},
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/scaleStrategy", "value": {"workersToDelete": doomed}},
    ]
    await runtime_kube.patch(RAYCLUSTERS, CLUSTER, patch, namespace, patch_type="json")

    await wait_ready(runtime_kube, namespace, workers=1)
    remaining = [p["metadata"]["name"] for p in workers_of(await cluster_pods(runtime_kube, namespace))]
    assert remaining == [kept]
    cluster = await runtime_kube.get(RAYCLUSTERS, CLUSTER, namespace)
    assert cluster["spec"]["workerGroupSpecs"][0]["scaleStrategy"]["workersToDelete"] == doomed  # never cleared


async def test_deleted_worker_and_head_pods_come_back(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
    await wait_ready(runtime_kube, namespace, workers=2)
    pods = await cluster_pods(runtime_kube, namespace)
    victims = [
        next(p["metadata"]["name"] for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == kind)
        for kind in ("worker", "head")
    ]
    for victim in victims:
        await runtime_kube.delete(PODS, victim, namespace)

    async def replaced() -> bool | NotYet:
        now = {p["metadata"]["name"] for p in await cluster_pods(runtime_kube, namespace)}
        return (not (now & set(victims)) and len(now) == 3) or NotYet(f"pods {sorted(now)}")

    await wait_for(replaced, 60, what="deleted Pods to be replaced")
    await wait_ready(runtime_kube, namespace, workers=2)


async def test_suspend_deletes_every_pod_and_resume_brings_them_back(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
    await wait_ready(runtime_kube, namespace, workers=2)

    await runtime_kube.patch(RAYCLUSTERS, CLUSTER, {"spec": {"suspend": True}}, namespace)

    async def suspended() -> dict[str, Any] | NotYet:
        cluster = await runtime_kube.get(RAYCLUSTERS, CLUSTER, namespace)
        pods = await cluster_pods(runtime_kube, namespace)
        state = (cluster.get("status") or {}).get("state")
        return cluster if state == "suspended" and not pods else NotYet(f"state={state}, {len(pods)} pods")

    cluster = await wait_for(suspended, 60, what="the cluster to be suspended with no Pods")
    conditions = {c["type"]: c["status"] for c in cluster["status"]["conditions"]}
    assert conditions["RayClusterSuspended"] == "True"
    assert conditions["RayClusterSuspending"] == "False"

    await runtime_kube.patch(RAYCLUSTERS, CLUSTER, {"spec": {"suspend": False}}, namespace)
    await wait_ready(runtime_kube, namespace, workers=2)


async def test_deleting_the_raycluster_removes_every_child(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
    await wait_ready(runtime_kube, namespace, workers=2)

    await runtime_kube.delete(RAYCLUSTERS, CLUSTER, namespace)

    async def gone() -> bool | NotYet:
        pods = (await runtime_kube.list(PODS, namespace, label_selector=f"ray.io/cluster={CLUSTER}")).items
        try:
            await runtime_kube.get(SERVICES, f"{CLUSTER}-head-svc", namespace)
        except ApiError as exc:
            if exc.not_found and not pods:
                return True
        return NotYet(f"{len(pods)} pods and the head Service remain")

    # The garbage collector learns about a new CRD from discovery, which it re-reads every 30 s or so.
    await wait_for(gone, 120, what="Pods and Service to be garbage-collected")


async def test_multi_host_groups_are_created_and_replaced_a_whole_replica_at_a_time(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, seed_cluster(workers=2, numOfHosts=2), namespace)
    await wait_ready(runtime_kube, namespace, workers=4)

    def replicas(pods: list[dict[str, Any]]) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for pod in workers_of(pods):
            labels = pod["metadata"]["labels"]
            grouped.setdefault(labels["ray.io/worker-group-replica-name"], []).append(
                labels["ray.io/replica-host-index"]
            )
        return {name: sorted(hosts) for name, hosts in grouped.items()}

    before = replicas(await cluster_pods(runtime_kube, namespace))
    assert sorted(before.values()) == [["0", "1"], ["0", "1"]]
    assert all(name.startswith("workers-") for name in before)
    await runtime_kube.get(SERVICES, f"{CLUSTER}-headless", namespace)  # multi-host groups get a headless Service

    victim_replica = sorted(before)[0]
    [victim] = [
        p["metadata"]["name"]
        for p in workers_of(await cluster_pods(runtime_kube, namespace))
        if p["metadata"]["labels"]["ray.io/worker-group-replica-name"] == victim_replica
        and p["metadata"]["labels"]["ray.io/replica-host-index"] == "0"
    ]
    await runtime_kube.delete(PODS, victim, namespace)

    async def replaced() -> dict[str, list[str]] | NotYet:
        now = replicas(await cluster_pods(runtime_kube, namespace))
        complete = victim_replica not in now and len(now) == 2 and all(h == ["0", "1"] for h in now.values())
        return now if complete else NotYet(f"replicas {now}")

    after = await wait_for(replaced, 60, what="the broken replica to be replaced whole")
    assert sorted(before)[1] in after  # the healthy replica was left alone

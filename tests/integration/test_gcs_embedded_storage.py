"""The embedded (rocksdb) GCS fault-tolerance backend on the real control plane (kwok nodes, the sandbox's PVC
provisioner), with KubeRay v1.7.0's ``GCSFaultToleranceEmbeddedStorage`` gate on: the operator makes
``<cluster>-gcs-pvc`` with v1.7.0's labels and owner, the head Pod mounts it, the garbage collector deletes it with
the cluster, and ``storage.deletionPolicy: Retain`` keeps it (a same-named cluster made later adopts it). As KubeRay's
own ``TestRayClusterEmbeddedGCSFaultToleranceWiring``, this checks the operator's part only: whether Ray's GCS then
stores its state in RocksDB is up to the Ray version in the image."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.rbac import LEADER_ELECTION_RULES, OPERATOR_RULES
from raykube.api.resources import RAYCLUSTERS
from raykube.builders.options import BuildOptions
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import EVENTS, PERSISTENT_VOLUME_CLAIMS, PODS
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for

NAME = "embedded-gcs"
PVC = f"{NAME}-gcs-pvc"


def raycluster(storage: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}
    spec: dict[str, Any] = {
        "rayVersion": "2.52.0",
        "gcsFaultToleranceOptions": {"backend": "rocksdb", "storage": storage},
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
    }
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": NAME}, "spec": spec}


@pytest.fixture
async def gcs_operator(kubeconfig: Path, namespace: str, ray_crds: list[str]) -> AsyncIterator[Manager]:
    """The operator with ``--feature-gates=GCSFaultToleranceEmbeddedStorage=true``, its client held to the operator's
    RBAC (so the claim's create, get, update, list and watch are proven granted)."""
    client = Kube.from_config(kubeconfig, qps=200, burst=400, rules=OPERATOR_RULES + LEADER_ELECTION_RULES)
    options = BuildOptions(features={**BuildOptions().features, c.GATE_GCS_FT_EMBEDDED_STORAGE: True})
    manager = Manager(client, options=options, namespaces=[namespace], reconcile_concurrency=2)
    await asyncio.wait_for(manager.start(), 60)
    try:
        yield manager
    finally:
        await manager.stop()
        await client.close()


async def _get(kube: Kube, res: Any, name: str, namespace: str) -> Mapping[str, Any] | None:
    try:
        return await kube.get(res, name, namespace)
    except ApiError as exc:
        if exc.not_found:
            return None
        raise


async def wait_claim(kube: Kube, namespace: str, *, owned: bool) -> Mapping[str, Any]:
    async def claim() -> Mapping[str, Any] | NotYet:
        found = await _get(kube, PERSISTENT_VOLUME_CLAIMS, PVC, namespace)
        if found is None:
            return NotYet(f"no claim {PVC} yet")
        refs = objects.meta(found).get("ownerReferences") or []
        return found if bool(refs) == owned else NotYet(f"owner references: {refs}")

    return await wait_for(claim, 60, what=f"claim {PVC} ({'owned' if owned else 'not owned'})")


async def wait_head(kube: Kube, namespace: str, *, present: bool = True) -> Mapping[str, Any] | None:
    selector = f"{c.RAY_CLUSTER_LABEL}={NAME},{c.RAY_NODE_TYPE_LABEL}={c.NODE_TYPE_HEAD}"

    async def head() -> Mapping[str, Any] | bool | NotYet:
        items = (await kube.list(PODS, namespace, label_selector=selector)).items
        if present:
            return items[0] if items else NotYet("no head Pod yet")
        return True if not items else NotYet(f"head Pods left: {[objects.name(p) for p in items]}")

    found = await wait_for(head, 90, what="the head Pod" if present else "the head Pod to be garbage-collected")
    return found if isinstance(found, Mapping) else None


async def wait_cluster_gone(kube: Kube, namespace: str) -> None:
    async def gone() -> bool | NotYet:
        return True if await _get(kube, RAYCLUSTERS, NAME, namespace) is None else NotYet("the RayCluster is there")

    await wait_for(gone, 60, what="the RayCluster to be deleted")


async def test_the_claim_is_made_mounted_and_goes_with_the_cluster(
    gcs_operator: Manager, runtime_kube: Kube, namespace: str
) -> None:
    kube = runtime_kube
    cluster = await kube.create(RAYCLUSTERS, raycluster({"size": "1Gi", "accessModes": ["ReadWriteOnce"]}), namespace)
    pvc = await wait_claim(kube, namespace, owned=True)
    assert objects.labels(pvc) == {c.RAY_CLUSTER_LABEL: NAME}
    refs = objects.meta(pvc)["ownerReferences"]
    assert [(r["kind"], r["name"], r["uid"], r["controller"]) for r in refs] == [
        ("RayCluster", NAME, objects.uid(cluster), True)
    ]
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert pvc["spec"]["resources"]["requests"] == {"storage": "1Gi"}

    head = await wait_head(kube, namespace)
    assert head is not None
    ray = head["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in ray.get("env") or []}
    assert env[c.RAY_GCS_STORAGE] == "rocksdb" and env[c.RAY_GCS_STORAGE_PATH] == "/data/gcs"
    assert c.RAY_REDIS_ADDRESS not in env
    assert {"name": "gcs-storage", "mountPath": "/data/gcs"} in [
        {k: m[k] for k in ("name", "mountPath")} for m in ray["volumeMounts"]
    ]
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": PVC}} in head["spec"]["volumes"]
    assert objects.annotations(head)[c.RAY_FT_ENABLED_ANNOTATION] == "true"
    live = await kube.get(RAYCLUSTERS, NAME, namespace)
    assert c.GCS_FT_REDIS_CLEANUP_FINALIZER not in objects.finalizers(live)

    async def created() -> list[tuple[str, str, str]] | NotYet:  # written after the objects (a CI run met it)
        events = (await kube.list(EVENTS, namespace)).items
        found = [(e["type"], e["action"], e["note"]) for e in events if e.get("reason") == c.EVENT_CREATED_PVC]
        return found or NotYet("no CreatedPVC event yet")

    assert await wait_for(created, 30, what="the CreatedPVC event") == [
        ("Normal", "Create", f"Created GCS storage PVC {namespace}/{PVC}")
    ]

    await kube.delete(RAYCLUSTERS, NAME, namespace)

    async def claim_gone() -> bool | NotYet:
        found = await _get(kube, PERSISTENT_VOLUME_CLAIMS, PVC, namespace)
        return True if found is None else NotYet(f"claim still there: {objects.meta(found).get('finalizers')}")

    await wait_for(claim_gone, 120, what=f"the garbage collector to delete {PVC}")


async def test_a_retained_claim_outlives_the_cluster_and_is_adopted_by_the_next(
    gcs_operator: Manager, runtime_kube: Kube, namespace: str
) -> None:
    kube = runtime_kube
    await kube.create(RAYCLUSTERS, raycluster({"deletionPolicy": "Retain"}), namespace)
    pvc = await wait_claim(kube, namespace, owned=False)
    assert objects.labels(pvc) == {c.RAY_CLUSTER_LABEL: NAME}
    await wait_head(kube, namespace)

    await kube.delete(RAYCLUSTERS, NAME, namespace)
    await wait_cluster_gone(kube, namespace)
    await wait_head(kube, namespace, present=False)  # the garbage collector has dealt with the cluster's dependents
    kept = await kube.get(PERSISTENT_VOLUME_CLAIMS, PVC, namespace)
    assert objects.uid(kept) == objects.uid(pvc) and not objects.terminating(kept)

    # A same-named cluster without Retain: the claim (and the store on it) is adopted, now owned by the new cluster.
    cluster = await kube.create(RAYCLUSTERS, raycluster({}), namespace)
    adopted = await wait_claim(kube, namespace, owned=True)
    assert objects.uid(adopted) == objects.uid(pvc)
    assert [r["uid"] for r in objects.meta(adopted)["ownerReferences"]] == [objects.uid(cluster)]

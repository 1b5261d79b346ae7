"""Reconcile table tests of the embedded (rocksdb) GCS store's claim and finalizer (KubeRay v1.7.0
``reconcileGCSStoragePVC``, the stale Redis finalizer on deletion; inventory RC-5), over FakeKube, with the
``GCSFaultToleranceEmbeddedStorage`` gate on. What only a real API server shows (the garbage collector deleting the
owned claim, keeping the retained one) is in tests/integration/test_gcs_embedded_storage.py."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS
from raykube.builders.options import BuildOptions
from raykube.controllers.base import Result
from raykube.controllers.raycluster import ReconcileError
from raykube.kube.fake import FakeKube
from raykube.kube.resources import JOBS, PERSISTENT_VOLUME_CLAIMS, PODS
from tests.unit.test_controllers_raycluster import NAME, NOW, NS, RESOURCES, World, assert_writes, raycluster

GATE_ON = BuildOptions(features={**BuildOptions().features, c.GATE_GCS_FT_EMBEDDED_STORAGE: True})
PVC = f"{NAME}-gcs-pvc"
PVCS = "persistentvolumeclaims"
OWN_REF = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": NAME, "uid": "cluster-uid", "controller": True,
           "blockOwnerDeletion": True}  # fmt: skip
CREATED = (c.EVENT_TYPE_NORMAL, c.EVENT_CREATED_PVC, "Create", f"Created GCS storage PVC {NS}/{PVC}")


def rocksdb(storage: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    ft: dict[str, Any] = {"backend": "rocksdb"}
    if storage is not None:
        ft["storage"] = storage
    body = raycluster(gcsFaultToleranceOptions=ft)
    body["metadata"].update(meta)
    return body


def world(cluster: dict[str, Any], *extra: dict[str, Any], options: BuildOptions = GATE_ON, **kw: Any) -> World:
    return World(FakeKube([cluster, *extra], resources=RESOURCES, clock=lambda: NOW, **kw), options=options)


def claim(spec: dict[str, Any] | None = None, refs: list[dict[str, Any]] | None = None, **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": PVC, "namespace": NS, "labels": {c.RAY_CLUSTER_LABEL: NAME}, **meta}
    if refs is not None:
        metadata["ownerReferences"] = refs
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": spec
        or {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "standard",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def events(w: World) -> list[tuple[str, str, str, str]]:
    return [(e.type, e.reason, e.action, e.note) for e in w.fake.events if "PVC" in e.reason]


def stored_claim(w: World, name: str = PVC) -> dict[str, Any]:
    found = w.fake.stored(PERSISTENT_VOLUME_CLAIMS, NS, name)
    assert found is not None, f"no claim {name}"
    return found


# ------------------------------------------------------------------------------------------------ a new cluster


async def test_a_new_cluster_gets_its_claim_after_the_services_and_before_the_pods() -> None:
    w = world(rocksdb())
    await w.reconcile()
    creates = [(x.resource, x.name) for x in w.fake.writes_of("create")]
    assert creates.index((PVCS, PVC)) > creates.index(("services", f"{NAME}-head-svc"))
    assert creates.index((PVCS, PVC)) < [r for r, _ in creates].index("pods")
    assert events(w) == [CREATED]
    body = stored_claim(w)
    assert body["metadata"]["labels"] == {c.RAY_CLUSTER_LABEL: NAME}
    assert body["metadata"]["ownerReferences"] == [OWN_REF]
    assert body["spec"] == {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    # No Redis cleanup finalizer for the embedded backend: the Pods came in the same pass.
    assert "finalizers" not in w.cluster["metadata"]
    head = next(p for p in w.fake.all(PODS, NS) if p["metadata"]["labels"][c.RAY_NODE_TYPE_LABEL] == "head")
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": PVC}} in head["spec"]["volumes"]


async def test_the_next_pass_leaves_an_unchanged_claim_alone() -> None:
    w = world(rocksdb())
    await w.reconcile()
    w.clear()
    await w.reconcile()
    assert w.fake.writes_of(verb=None, resource=PVCS) == []
    assert events(w) == []


async def test_a_retained_claim_is_created_without_an_owner() -> None:
    w = world(rocksdb({"deletionPolicy": "Retain", "size": "3Gi", "storageClassName": "fast"}))
    await w.reconcile()
    body = stored_claim(w)
    assert "ownerReferences" not in body["metadata"]
    assert body["spec"]["storageClassName"] == "fast"
    assert body["spec"]["resources"] == {"requests": {"storage": "3Gi"}}
    assert events(w) == [CREATED]


async def test_with_the_gate_off_rocksdb_is_refused_and_nothing_is_made() -> None:
    w = world(rocksdb(), options=BuildOptions())
    assert await w.reconcile() == Result()
    assert w.fake.writes == []
    assert w.fake.reasons() == [c.EVENT_INVALID_RAYCLUSTER_SPEC]
    assert "GCSFaultToleranceEmbeddedStorage feature gate" in w.fake.events[0].note


# ------------------------------------------------------------------------------------------------ a user's claim


async def test_a_users_claim_that_is_missing_is_a_warning_and_the_pass_goes_on() -> None:
    w = world(rocksdb({"claimName": "shared-gcs"}))
    await w.reconcile()
    note = (
        'GcsFaultToleranceOptions.Storage.ClaimName "shared-gcs" not found in namespace team; '
        "the head Pod will not start until it exists"
    )
    assert events(w) == [(c.EVENT_TYPE_WARNING, c.EVENT_FAILED_TO_CREATE_PVC, "Validate", note)]
    assert w.fake.writes_of(verb=None, resource=PVCS) == []
    assert w.fake.writes_of("create", "pods")  # the head Pod is made; it waits for its claim


async def test_a_users_claim_that_exists_is_neither_touched_nor_owned() -> None:
    theirs = claim(name="shared-gcs", labels={})
    w = world(rocksdb({"claimName": "shared-gcs"}), theirs)
    await w.reconcile()
    assert events(w) == []
    assert w.fake.writes_of(verb=None, resource=PVCS) == []


# ------------------------------------------------------------------------------------------------ an existing claim


@dataclass(frozen=True)
class Case:
    name: str
    storage: dict[str, Any] | None
    refs: list[dict[str, Any]] | None
    writes: list[tuple[str, str, str]]
    refs_after: list[dict[str, Any]] | None
    drift: str = ""
    spec: dict[str, Any] | None = field(default=None)


CASES = [
    Case("owned, in step", None, [OWN_REF], [], [OWN_REF]),
    Case("retained, unowned", {"deletionPolicy": "Retain"}, None, [], None),
    Case("left unowned (a Retain cluster recreated): adopted", None, None, [("update", PVCS, PVC)], [OWN_REF]),
    Case("owned, policy now Retain: released", {"deletionPolicy": "Retain"}, [OWN_REF], [("update", PVCS, PVC)], []),
    Case(
        "a bigger size asked for: a drift warning, never a rewrite",
        {"size": "2Gi"},
        [OWN_REF],
        [],
        [OWN_REF],
        drift="requested size 2Gi != current 1Gi",
    ),
    Case(
        "another class and access modes: both named",
        {"storageClassName": "fast", "accessModes": ["ReadWriteMany"]},
        None,
        [("update", PVCS, PVC)],
        [OWN_REF],
        drift="storageClassName fast != current standard; accessModes [ReadWriteMany] != current [ReadWriteOnce]",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
async def test_an_existing_claim_is_adopted_as_it_is(case: Case) -> None:
    w = world(rocksdb(case.storage), claim(case.spec, case.refs))
    await w.reconcile()
    assert_writes_of_claims(w, case.writes)
    if case.drift:
        note = (
            f"GCS storage PVC {NS}/{PVC} already exists and cannot be reconfigured in place ({case.drift}); "
            "delete the PVC to recreate it with the new settings"
        )
        assert events(w) == [(c.EVENT_TYPE_WARNING, c.EVENT_FAILED_TO_CREATE_PVC, "Update", note)]
    else:
        assert events(w) == []
    assert stored_claim(w)["metadata"].get("ownerReferences") == case.refs_after
    assert stored_claim(w)["spec"] == claim(case.spec)["spec"]  # never rewritten


def assert_writes_of_claims(w: World, expected: list[tuple[str, str, str]]) -> None:
    got = [x for x in w.fake.writes if x.resource == PVCS]
    assert [(x.verb, x.resource, x.name) for x in got] == expected


async def test_a_claim_another_controller_owns_fails_the_pass() -> None:
    other = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "db-uid", "controller": True}
    w = world(rocksdb(), claim(refs=[other]))
    with pytest.raises(ReconcileError, match="already owned by another StatefulSet controller db"):
        await w.reconcile()
    assert_writes_of_claims(w, [])


async def test_a_create_answered_already_exists_adopts_the_claim() -> None:
    """The cache has not seen the claim yet: the create says AlreadyExists, the claim is read and owned."""
    w = world(rocksdb(), claim(refs=None), lagging=True)
    w.fake._cached.pop((PERSISTENT_VOLUME_CLAIMS, NS, PVC))
    await w.reconcile()
    assert_writes_of_claims(w, [("update", PVCS, PVC)])
    assert stored_claim(w)["metadata"]["ownerReferences"] == [OWN_REF]
    assert events(w) == []


async def test_a_failed_create_is_a_warning_with_the_api_servers_message_and_fails_the_pass() -> None:
    w = world(rocksdb())
    w.fake.fail("create", PERSISTENT_VOLUME_CLAIMS, code=403, reason="Forbidden", message="exceeded quota: pvcs")
    with pytest.raises(ReconcileError, match="exceeded quota"):
        await w.reconcile()
    note = f"Failed to create GCS storage PVC {NS}/{PVC}, exceeded quota: pvcs"
    assert events(w) == [(c.EVENT_TYPE_WARNING, c.EVENT_FAILED_TO_CREATE_PVC, "Create", note)]
    assert w.fake.writes_of("create", "pods") == []  # as KubeRay: the Pods wait for the claim


# ------------------------------------------------------------------------------------------------ deletion


def _deleting(finalizers: list[str]) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        body["metadata"].update(deletionTimestamp="2026-12-03T11:59:30Z", finalizers=finalizers)

    return change


async def test_a_stale_redis_finalizer_is_removed_on_deletion_without_a_cleanup_job() -> None:
    """A cluster that had the Redis backend (and its finalizer) and now has rocksdb: nothing to clean, so the
    finalizer goes and the deletion completes (KubeRay v1.7.0)."""
    body = rocksdb()
    _deleting([c.GCS_FT_REDIS_CLEANUP_FINALIZER])(body)
    w = world(body)
    assert await w.reconcile() == Result()
    assert_writes(w, [("patch", "rayclusters", NAME)])
    assert w.fake.all(JOBS, NS) == []
    assert w.fake.stored(RAYCLUSTERS, NS, NAME) is None  # its last finalizer gone, so is the cluster


async def test_a_deleted_rocksdb_cluster_keeps_other_finalizers() -> None:
    body = rocksdb()
    _deleting(["example.com/keep", c.GCS_FT_REDIS_CLEANUP_FINALIZER])(body)
    w = world(body)
    await w.reconcile()
    assert w.cluster["metadata"]["finalizers"] == ["example.com/keep"]
    assert copy.deepcopy(w.fake.all(JOBS, NS)) == []

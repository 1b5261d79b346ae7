"""The RayCluster controller with KubeRay v1.7.0's ``kubernetes-was-v1alpha2`` batch scheduler (BS-1, gate
``KubernetesWAS``): one pass over an in-memory API server (``raykube.kube.fake.FakeKube``) holding the cluster and
the given Workload and PodGroup, and the scheduling writes it makes, the error that ends it, and whether Pods came.

The sandbox's Kubernetes 1.36 kube-apiserver does not serve ``scheduling.k8s.io/v1alpha2`` (an alpha API, off unless
``--runtime-config`` and the ``GenericWorkload`` feature gate turn it on), so these tables are the proof."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS
from raykube.builders import was
from raykube.builders.options import BuildOptions
from raykube.controllers.base import Deps, OwnWrites, StatusPacer
from raykube.controllers.expectations import ScaleExpectations
from raykube.controllers.raycluster import RayClusterReconciler, ReconcileError, registration
from raykube.kube.fake import FakeKube
from raykube.kube.resources import (
    INGRESSES,
    JOBS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
)

NS, NAME, UID = "team", "demo", "cluster-uid"
NOW = dt.datetime(2026, 12, 3, 12, 0, 0, tzinfo=dt.UTC)
RESOURCES = (RAYCLUSTERS, PODS, SERVICES, SERVICE_ACCOUNTS, ROLES, ROLE_BINDINGS, JOBS, SECRETS, INGRESSES,
             PERSISTENT_VOLUME_CLAIMS, was.WORKLOADS, was.PODGROUPS)  # fmt: skip
OPTIONS = BuildOptions(
    batch_scheduler=c.BATCH_SCHEDULER_KUBERNETES_WAS, features={**c.FEATURE_GATE_DEFAULTS, c.GATE_KUBERNETES_WAS: True}
)
GANG = {c.RAY_GANG_SCHEDULING_ENABLED_LABEL: "True"}
PG = f"{NAME}-cluster"
FINALIZER = "scheduling.k8s.io/podgroup-protection"
OWNER = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": NAME, "uid": UID, "controller": True,
         "blockOwnerDeletion": True}  # fmt: skip


def raycluster(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    ray = {"name": "ray", "image": "rayproject/ray:2.52.0"}
    body: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": NAME, "namespace": NS, "uid": UID, "generation": 1, "labels": labels},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [ray]}}},
            "workerGroupSpecs": [
                {"groupName": "workers", "replicas": 2, "minReplicas": 0, "maxReplicas": 5, "numOfHosts": 1,
                 "rayStartParams": {}, "template": {"spec": {"containers": [ray]}}},
            ],
        },
    }  # fmt: skip
    body["spec"].update(spec)
    return body


def workload(
    min_count: int = 3, *, owner: dict[str, Any] = OWNER, template: str = "cluster", **meta: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": NAME, "namespace": NS, "uid": "workload-uid", "ownerReferences": [owner], **meta},
        "spec": {"podGroupTemplates": [{"name": template, "schedulingPolicy": {"gang": {"minCount": min_count}}}]},
    }


def podgroup(min_count: int = 3, *, owner: dict[str, Any] = OWNER, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": PG, "namespace": NS, "uid": "podgroup-uid", "ownerReferences": [owner], **meta},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


FOREIGN = {**OWNER, "uid": "someone-else"}
TERMINATING: dict[str, Any] = {"deletionTimestamp": "2026-12-03T11:00:00Z", "finalizers": [FINALIZER]}


@dataclass(frozen=True)
class Case:
    id: str
    labels: dict[str, str]
    live: tuple[dict[str, Any], ...]
    writes: list[tuple[str, str, str]]  # (verb, resource, name) of the scheduling writes, in order
    error: str | None  # the message the pass fails with
    spec: dict[str, Any] | None = None


def _stale(what: str) -> str:
    return f"deleted stale {what}, will retry after deletion completes"


CASES = [
    Case("gang-creates-workload-then-podgroup", GANG, (),
         [("create", "workloads", NAME), ("create", "podgroups", PG)], None),
    Case("in-step-nothing-to-write", GANG, (workload(), podgroup()), [], None),
    Case("only-the-podgroup-missing", GANG, (workload(),), [("create", "podgroups", PG)], None),
    Case("stale-podgroup-loses-its-finalizer-and-goes", GANG, (workload(), podgroup(2, finalizers=[FINALIZER])),
         [("update", "podgroups", PG), ("delete", "podgroups", PG)], _stale(f"PodGroup {NS}/{PG}")),
    Case("stale-workload-goes-after-its-podgroup", GANG, (workload(2), podgroup(2)), [("delete", "podgroups", PG)],
         f"deleted PodGroup {NS}/{PG} before replacing stale Workload, will retry after deletion completes"),
    Case("stale-workload-template-name", GANG, (workload(template="other"),), [("delete", "workloads", NAME)],
         _stale(f"Workload {NS}/{NAME}")),
    Case("foreign-workload-is-an-error", GANG, (workload(owner=FOREIGN),), [],
         f"Workload {NS}/{NAME} already exists and is not owned by this RayCluster; rename it or use a different "
         "RayCluster name to avoid the collision"),
    Case("foreign-podgroup-is-an-error", GANG, (workload(), podgroup(owner=FOREIGN)), [],
         f"PodGroup {NS}/{PG} already exists and is not owned by this RayCluster; rename it or use a different "
         "RayCluster name to avoid the collision"),
    Case("terminating-workload-waits", GANG, (workload(deletionTimestamp="2026-12-03T11:00:00Z",
                                                       finalizers=["x"]),), [],
         f"Workload {NS}/{NAME} is being deleted, will retry"),
    Case("terminating-podgroup-loses-its-finalizer", GANG, (workload(), podgroup(**TERMINATING)),
         [("update", "podgroups", PG)], f"PodGroup {NS}/{PG} is being deleted, will retry"),
    Case("no-gang-label-nothing-made", {}, (), [], None),
    Case("gang-label-false-nothing-made", {c.RAY_GANG_SCHEDULING_ENABLED_LABEL: "false"}, (), [], None),
    Case("autoscaling-nothing-made", GANG, (), [], None, {"enableInTreeAutoscaling": True}),
    Case("label-gone-podgroup-deleted-first", {}, (workload(), podgroup(finalizers=[FINALIZER])),
         [("update", "podgroups", PG), ("delete", "podgroups", PG)],
         f"waiting for PodGroup {NS}/{PG} to finish deleting"),
    Case("label-gone-then-the-workload", {}, (workload(),), [("delete", "workloads", NAME)], None),
    Case("label-gone-foreign-objects-left-alone", {}, (workload(owner=FOREIGN), podgroup(owner=FOREIGN)), [], None),
]  # fmt: skip


def _reconciler(fake: FakeKube) -> RayClusterReconciler:
    deps = Deps(fake.api, fake.cache, fake.recorder, OPTIONS, clock=lambda: NOW)
    return RayClusterReconciler(deps, expectations=ScaleExpectations(), own=OwnWrites(), pacer=StatusPacer(0.0))


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
async def test_one_pass_makes_kuberays_scheduling_writes(case: Case) -> None:
    fake = FakeKube([raycluster(case.labels, **(case.spec or {}))], resources=RESOURCES, clock=lambda: NOW)
    for obj in case.live:
        fake.add(copy.deepcopy(obj))
    if case.error is None:
        await _reconciler(fake).reconcile(NS, NAME)
    else:
        with pytest.raises(ReconcileError) as failed:
            await _reconciler(fake).reconcile(NS, NAME)
        assert str(failed.value) == case.error
    scheduling = [(w.verb, w.resource, w.name) for w in fake.writes if w.resource in ("workloads", "podgroups")]
    assert scheduling == case.writes
    assert bool(fake.all(PODS, NS)) is (case.error is None)  # a failed scheduling pass creates no Pod


async def test_a_gang_scheduled_cluster_gets_kuberays_objects_before_its_pods_and_they_point_at_the_podgroup() -> None:
    fake = FakeKube([raycluster(GANG)], resources=RESOURCES, clock=lambda: NOW)
    await _reconciler(fake).reconcile(NS, NAME)
    creates = [w.resource for w in fake.writes_of("create")]
    assert creates.index("workloads") < creates.index("podgroups") < creates.index("pods")
    stored_workload = fake.stored(was.WORKLOADS, NS, NAME)
    stored_podgroup = fake.stored(was.PODGROUPS, NS, PG)
    assert stored_workload is not None and stored_podgroup is not None
    assert stored_workload["metadata"]["labels"] == {"ray.io/cluster": NAME}
    assert stored_workload["metadata"]["ownerReferences"] == [OWNER]
    assert stored_workload["spec"] == {
        "controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": NAME},
        "podGroupTemplates": [{"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 3}}}],
    }
    assert stored_podgroup["metadata"]["ownerReferences"] == [OWNER]
    assert stored_podgroup["spec"] == {
        "podGroupTemplateRef": {"workload": {"workloadName": NAME, "podGroupTemplateName": "cluster"}},
        "schedulingPolicy": {"gang": {"minCount": 3}},
    }
    created = fake.all(PODS, NS)
    assert len(created) == 3
    for pod in created:
        assert pod["spec"]["schedulerName"] == "default-scheduler"
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": PG}


async def test_without_the_gang_label_pods_keep_the_default_scheduling() -> None:
    fake = FakeKube([raycluster({})], resources=RESOURCES, clock=lambda: NOW)
    await _reconciler(fake).reconcile(NS, NAME)
    for pod in fake.all(PODS, NS):
        assert "schedulerName" not in pod["spec"] and "schedulingGroup" not in pod["spec"]


async def test_a_failed_create_stops_the_pass_with_kuberays_words() -> None:
    fake = FakeKube([raycluster(GANG)], resources=RESOURCES, clock=lambda: NOW)
    fake.fail("create", was.WORKLOADS, code=403, reason="Forbidden", message="forbidden")
    with pytest.raises(ReconcileError, match=f"^failed to create Workload {NS}/{NAME}: .*forbidden"):
        await _reconciler(fake).reconcile(NS, NAME)
    assert fake.all(PODS, NS) == []


def test_the_controller_watches_both_kinds_and_names_the_missing_api() -> None:
    owned = registration(OPTIONS).owned
    assert [w.res for w in owned[-2:]] == [was.WORKLOADS, was.PODGROUPS]
    for watch in owned[-2:]:
        assert watch.missing_hint is not None
        assert watch.missing_hint.startswith(
            "no served scheduling.k8s.io API version available for kubernetes-was-v1alpha2: "
            "scheduling.k8s.io/v1alpha2 API is not available: "
        )

"""The ``kubernetes-was-v1alpha2`` plugin's pure parts (BS-1): the gang's size, which parents it decorates, and the
plan steps a FakeKube pass cannot tell apart (tests/unit/test_controllers_raycluster_was.py has the passes)."""

from __future__ import annotations

from typing import Any

from raykube.api.resources import RayCluster, RayJob
from raykube.builders import was
from tests.unit.test_controllers_raycluster_was import GANG, PG, podgroup, raycluster, workload

PLUGIN = was.KubernetesWAS()


def cluster(labels: dict[str, str] = GANG, **spec: Any) -> RayCluster:
    return RayCluster.model_validate(raycluster(labels, **spec))


def test_min_count_is_the_head_and_every_desired_worker_host() -> None:
    groups = [
        {"groupName": "a", "replicas": 9, "minReplicas": 1, "maxReplicas": 4, "numOfHosts": 2, "rayStartParams": {},
         "template": {"spec": {"containers": [{"name": "ray", "image": "r"}]}}},
        {"groupName": "b", "replicas": 3, "minReplicas": 0, "maxReplicas": 5, "suspend": True, "rayStartParams": {},
         "template": {"spec": {"containers": [{"name": "ray", "image": "r"}]}}},
    ]  # fmt: skip
    assert PLUGIN.min_count(cluster(workerGroupSpecs=groups)) == 1 + 4 * 2  # replicas clamped to max; b suspended


def test_a_terminating_podgroup_without_its_finalizer_is_only_waited_for() -> None:
    plan = PLUGIN.plan(cluster(), workload(), podgroup(deletionTimestamp="2026-12-03T11:00:00Z", finalizers=["x"]))
    assert plan == was.Plan((), f"PodGroup team/{PG} is being deleted, will retry")


def test_deletes_carry_the_live_uid() -> None:
    plan = PLUGIN.plan(cluster(), workload(), podgroup(2))
    assert plan.steps == (was.Delete(was.PODGROUPS, PG, "podgroup-uid", f"failed to delete PodGroup team/{PG}"),)


def test_rayjob_children_and_objects_are_left_alone() -> None:
    rayjob = RayJob.model_validate(
        {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j", "namespace": "team", "labels": GANG},
         "spec": {"entrypoint": "python x.py"}}
    )  # fmt: skip
    template = {"metadata": {}, "spec": {"containers": [{"name": "submitter"}]}}
    assert PLUGIN.decorate_pod(rayjob, "submittergroup", template) == template
    assert PLUGIN.rayjob_objects(rayjob) == []

"""Reconcile table tests: given the cache, one RayCluster pass makes exactly these writes and events.

Each case starts from a RayCluster that the reconciler itself brought up on an in-memory API server
(``raykube.kube.fake.FakeKube``: head Service, head Pod, two workers, all Running and Ready, status ``ready``), changes
one thing, runs one pass and compares the writes (verb, resource, name glob, in order) and the event reasons. What
only a real API server shows (owner references and the garbage collector, watches, admission) is tested on the
sandbox in ``tests/integration/test_raycluster_controller.py``.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS
from raykube.builders import gowrites, names, pods
from raykube.builders.options import BuildOptions
from raykube.controllers import raycluster as raycluster_controller
from raykube.controllers.base import Deps, OwnWrites, Result, StatusPacer
from raykube.controllers.expectations import ScaleExpectations
from raykube.controllers.raycluster import REQUEUE_QUIET, RayClusterReconciler, ReconcileError, registration
from raykube.kube import objects
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
    Resource,
)

NS, NAME = "team", "demo"
NOW = dt.datetime(2026, 12, 3, 12, 0, 0, tzinfo=dt.UTC)
PVCS = PERSISTENT_VOLUME_CLAIMS
PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups")
RESOURCES = (RAYCLUSTERS, PODS, SERVICES, SERVICE_ACCOUNTS, ROLES, ROLE_BINDINGS, JOBS, SECRETS, INGRESSES, PVCS,
             PODGROUPS)  # fmt: skip
STATUS = ("patch", "rayclusters/status", NAME)


def _container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "rayproject/ray:2.52.0", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}}


def raycluster(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": NAME, "namespace": NS, "uid": "cluster-uid", "generation": 1},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [_container("ray-head")]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": 2,
                    "minReplicas": 0,
                    "maxReplicas": 5,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [_container("ray-worker")]}},
                }
            ],
        },
    }
    body["spec"].update(spec)
    return body


@dataclass
class World:
    """A FakeKube with one RayCluster, and the reconciler that works on it."""

    fake: FakeKube
    options: BuildOptions = field(default_factory=BuildOptions)
    expectations: ScaleExpectations = field(default_factory=ScaleExpectations)
    own: OwnWrites = field(default_factory=OwnWrites)
    pacer: StatusPacer = field(default_factory=lambda: StatusPacer(0.0))

    @property
    def reconciler(self) -> RayClusterReconciler:
        deps = Deps(self.fake.api, self.fake.cache, self.fake.recorder, self.options, clock=lambda: NOW)
        return RayClusterReconciler(deps, expectations=self.expectations, own=self.own, pacer=self.pacer)

    async def reconcile(self) -> Result:
        return await self.reconciler.reconcile(NS, NAME)

    @property
    def cluster(self) -> dict[str, Any]:
        found = self.fake.stored(RAYCLUSTERS, NS, NAME)
        assert found is not None
        return found

    def edit(self, change: Callable[[dict[str, Any]], None]) -> None:
        """Change the stored cluster the way ``kubectl edit`` would (a new generation)."""
        body = copy.deepcopy(self.cluster)
        change(body)
        body["metadata"]["generation"] = body["metadata"].get("generation", 1) + 1
        self.fake.add(body)

    def pods(self, **labels: str) -> list[dict[str, Any]]:
        return [p for p in self.fake.all(PODS, NS) if all(objects.labels(p).get(k) == v for k, v in labels.items())]

    def workers(self) -> list[dict[str, Any]]:
        return sorted(self.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_WORKER}), key=objects.name)

    def set_pod(self, pod: dict[str, Any], **status: Any) -> None:
        updated = copy.deepcopy(pod)
        updated.setdefault("status", {}).update(status)
        self.fake.add(updated, PODS)

    def run_all_pods(self) -> None:
        """What the kubelet would report: every Pod Running and Ready, with an IP."""
        for index, pod in enumerate(self.fake.all(PODS, NS)):
            self.set_pod(
                pod,
                phase="Running",
                podIP=f"10.0.0.{index + 10}",
                conditions=[{"type": "Ready", "status": "True"}],
                containerStatuses=[
                    {"name": ctr["name"], "ready": True, "state": {"running": {}}} for ctr in pod["spec"]["containers"]
                ],
            )
        for svc in self.fake.all(SERVICES, NS):
            self.fake.add({**svc, "spec": {**svc["spec"], "clusterIP": svc["spec"].get("clusterIP") or "10.96.0.10"}})

    def writes(self) -> list[str]:
        return [str(w) for w in self.fake.writes]

    def clear(self) -> None:
        self.fake.writes.clear()
        self.fake.events.clear()


def new_world(cluster: dict[str, Any] | None = None, **kwargs: Any) -> World:
    return World(FakeKube([cluster or raycluster()], resources=RESOURCES, clock=lambda: NOW), **kwargs)


async def ready_world(cluster: dict[str, Any] | None = None, **kwargs: Any) -> World:
    """A cluster the reconciler brought up, its Pods Running and Ready, status ``ready``, nothing recorded yet."""
    world = new_world(cluster, **kwargs)
    await world.reconcile()
    world.run_all_pods()
    await world.reconcile()
    assert world.cluster["status"]["state"] == c.CLUSTER_STATE_READY, world.cluster.get("status")
    world.clear()
    return world


def assert_writes(world: World, expected: list[tuple[str, str, str]]) -> None:
    got = world.fake.writes
    described = "\n  ".join(str(w) for w in got)
    assert len(got) == len(expected), f"expected {len(expected)} writes, got {len(got)}:\n  {described}"
    for write, (verb, resource, name) in zip(got, expected, strict=True):
        assert write.matches(verb, resource, name), f"expected {verb} {resource} {name}, got {write}\n  {described}"


# ---------------------------------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Case:
    name: str
    change: Callable[[World], None]
    writes: list[tuple[str, str, str]]
    events: list[str]
    requeue: float | None = 2.0
    options: BuildOptions = field(default_factory=BuildOptions)


def _replicas(n: int) -> Callable[[World], None]:
    def change(world: World) -> None:
        world.edit(lambda body: body["spec"]["workerGroupSpecs"][0].update(replicas=n))

    return change


def _autoscaling_replicas(n: int) -> Callable[[World], None]:
    def change(world: World) -> None:
        def edit(body: dict[str, Any]) -> None:
            body["spec"]["enableInTreeAutoscaling"] = True
            body["spec"]["workerGroupSpecs"][0]["replicas"] = n

        world.edit(edit)

    return change


def _workers_to_delete(names: Callable[[World], list[str]], replicas: int) -> Callable[[World], None]:
    def change(world: World) -> None:
        doomed = names(world)
        world.edit(
            lambda body: body["spec"]["workerGroupSpecs"][0].update(
                replicas=replicas, scaleStrategy={"workersToDelete": doomed}
            )
        )

    return change


def _fail_worker(restart_policy: str, phase: str, terminated: bool) -> Callable[[World], None]:
    def change(world: World) -> None:
        pod = world.workers()[0]
        pod = {**pod, "spec": {**pod["spec"], "restartPolicy": restart_policy}}
        state = {"terminated": {"exitCode": 1}} if terminated else {"running": {}}
        world.set_pod(pod, phase=phase, containerStatuses=[{"name": "ray-worker", "state": state}])

    return change


def _terminating_worker(world: World) -> None:
    pod = copy.deepcopy(world.workers()[0])
    pod["metadata"]["deletionTimestamp"] = "2026-12-03T11:59:00Z"
    pod["metadata"]["finalizers"] = ["test/hold"]
    world.fake.add(pod, PODS)


def _group_suspend(world: World) -> None:
    world.edit(lambda body: body["spec"]["workerGroupSpecs"][0].update(suspend=True))


def _nothing(world: World) -> None:
    return None


CASES = [
    Case("settled: nothing to do", _nothing, [], [], requeue=REQUEUE_QUIET),
    Case(
        "scale up 2 -> 4 creates two workers (slow start 1, then 1)",
        _replicas(4),
        [("create", "pods", f"{NAME}-workers-worker-*"), ("create", "pods", f"{NAME}-workers-worker-*"), STATUS],
        [c.EVENT_CREATED_WORKER_POD, c.EVENT_CREATED_WORKER_POD],
    ),
    Case(
        "scale up past maxReplicas is clamped to it",
        _replicas(9),
        [("create", "pods", "*")] * 3 + [STATUS],
        [c.EVENT_CREATED_WORKER_POD] * 3,
    ),
    Case(
        "scale down 2 -> 1 without the autoscaler deletes one worker",
        _replicas(1),
        [("delete", "pods", f"{NAME}-workers-worker-*"), STATUS],
        [c.EVENT_DELETED_WORKER_POD],
    ),
    Case(
        "scale down to 0 deletes every worker",
        _replicas(0),
        [("delete", "pods", "*"), ("delete", "pods", "*"), STATUS],
        [c.EVENT_DELETED_WORKER_POD] * 2,
    ),
    Case(
        "scale down with in-tree autoscaling leaves surplus Pods to the autoscaler",
        _autoscaling_replicas(1),
        [
            ("create", "serviceaccounts", NAME),
            ("create", "roles", NAME),
            ("create", "rolebindings", NAME),
            STATUS,
        ],
        [c.EVENT_CREATED_SERVICE_ACCOUNT, c.EVENT_CREATED_ROLE, c.EVENT_CREATED_ROLE_BINDING],
    ),
    Case(
        "workersToDelete deletes the named worker (by uid) and no replacement when replicas dropped",
        _workers_to_delete(lambda w: [objects.name(w.workers()[0])], replicas=1),
        [("delete", "pods", "*"), STATUS],
        [c.EVENT_DELETED_WORKER_POD],
    ),
    Case(
        "workersToDelete with unchanged replicas deletes, then replaces",
        _workers_to_delete(lambda w: [objects.name(w.workers()[1])], replicas=2),
        [("delete", "pods", "*"), ("create", "pods", f"{NAME}-workers-worker-*"), STATUS],
        [c.EVENT_DELETED_WORKER_POD, c.EVENT_CREATED_WORKER_POD],
    ),
    Case(
        "workersToDelete never touches a Pod outside the group",
        _workers_to_delete(lambda w: ["someone-elses-pod", objects.name(w.pods(**{"ray.io/node-type": "head"})[0])], 2),
        [],
        [],
        requeue=REQUEUE_QUIET,
    ),
    Case(
        "a Failed worker is deleted and the pass fails",
        _fail_worker("Always", "Failed", terminated=True),
        [("delete", "pods", "*"), STATUS],
        [c.EVENT_DELETED_WORKER_POD],
        requeue=None,
    ),
    Case(
        "a Running worker whose ray container ended is deleted only with restartPolicy Never",
        _fail_worker("Never", "Running", terminated=True),
        [("delete", "pods", "*"), STATUS],
        [c.EVENT_DELETED_WORKER_POD],
        requeue=None,
    ),
    Case(
        "a Running worker whose ray container ended is left to the kubelet with restartPolicy Always",
        _fail_worker("Always", "Running", terminated=True),
        [],
        [],
        requeue=REQUEUE_QUIET,
    ),
    Case(
        "a worker being deleted still counts (KubeRay v1.6.1): no replacement until it is gone",
        _terminating_worker,
        [],
        [],
        requeue=REQUEUE_QUIET,  # the Pod's deletion event brings the cluster back
    ),
    Case(
        "scale down 2 -> 1 while one worker is already being deleted deletes nothing more",
        lambda world: (_terminating_worker(world), _replicas(1)(world)),
        [STATUS],  # the desired count changed; no Pod is deleted
        [],
    ),
    Case(
        "a suspended worker group loses its Pods in one collection delete",
        _group_suspend,
        [("deletecollection", "pods", f"{c.RAY_CLUSTER_LABEL}={NAME},{c.RAY_NODE_GROUP_LABEL}=workers"), STATUS],
        [c.EVENT_DELETED_WORKER_POD],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_one_pass_from_a_ready_cluster(case: Case) -> None:
    world = await ready_world(options=case.options)
    case.change(world)
    if case.requeue is None:
        with pytest.raises(ReconcileError):
            await world.reconcile()
    else:
        result = await world.reconcile()
        assert result.requeue_after == case.requeue
    assert_writes(world, case.writes)
    assert world.fake.reasons() == case.events


# ---------------------------------------------------------------------------------------------------- creation


async def test_a_new_cluster_gets_its_service_head_workers_and_status_in_one_pass() -> None:
    world = new_world()
    result = await world.reconcile()
    assert_writes(
        world,
        [
            ("create", "services", f"{NAME}-head-svc"),
            ("create", "pods", f"{NAME}-head-*"),
            ("create", "pods", f"{NAME}-workers-worker-*"),
            ("create", "pods", f"{NAME}-workers-worker-*"),
            STATUS,
        ],
    )
    assert world.fake.reasons() == [
        c.EVENT_CREATED_SERVICE,
        c.EVENT_CREATED_HEAD_POD,
        c.EVENT_CREATED_WORKER_POD,
        c.EVENT_CREATED_WORKER_POD,
    ]
    assert result.requeue_after == 2.0
    head = world.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD})[0]
    assert head == {**head, **{k: v for k, v in pods.head_pod(_model(world), world.options).items() if k != "metadata"}}


def _model(world: World) -> Any:
    from raykube.api.resources import RayCluster  # noqa: PLC0415

    return RayCluster.model_validate(world.cluster)


async def test_a_lagging_cache_never_creates_duplicates_while_expectations_are_unmet() -> None:
    world = World(FakeKube([raycluster()], resources=RESOURCES, lagging=True, clock=lambda: NOW))
    await world.reconcile()
    assert len(world.fake.writes_of("create", "pods")) == 3
    world.clear()
    result = await world.reconcile()  # the cache has not seen the new Pods yet
    assert world.fake.writes_of("create", "pods") == []
    assert result.requeue_after == 2.0
    world.fake.sync()
    world.clear()
    await world.reconcile()  # now it has: expectations are met, and there is nothing to create
    assert world.fake.writes_of("create", "pods") == []
    assert world.expectations.pending((NS, NAME)) == 0


async def test_a_pass_before_the_cache_has_its_status_write_does_not_send_it_again() -> None:
    world = World(FakeKube([raycluster()], resources=RESOURCES, lagging=True, clock=lambda: NOW))
    await world.reconcile()
    world.fake.sync()
    world.run_all_pods()
    world.clear()
    await world.reconcile()
    assert len(world.fake.writes_of("patch", "rayclusters/status")) == 1
    world.clear()
    await world.reconcile()  # the cache still holds the RayCluster as it was before that write
    assert world.fake.writes == []
    world.fake.sync()
    await world.reconcile()  # caught up: the remembered write is dropped, and there is still nothing to write
    assert world.fake.writes == []
    assert len(world.own) == 0


async def test_paced_progress_writes_wait_while_a_new_state_goes_out_at_once() -> None:
    now = [100.0]
    world = new_world(pacer=StatusPacer(2.0, clock=lambda: now[0]))
    result = await world.reconcile()  # Pods created, all Pending: the first status goes out at once
    assert len(world.fake.writes_of("patch", "rayclusters/status")) == 1
    world.clear()
    now[0] += 0.5
    head = world.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD})[0]
    world.set_pod(head, phase="Running", podIP="10.0.0.9")
    result = await world.reconcile()  # the head has an IP: progress only, due 2 s after the last write
    assert world.fake.writes_of("patch", "rayclusters/status") == []
    assert result.requeue_after == 1.5
    world.run_all_pods()
    await world.reconcile()  # ready: a new state is written at once, carrying everything learned meanwhile
    assert len(world.fake.writes_of("patch", "rayclusters/status")) == 1
    assert world.cluster["status"]["state"] == c.CLUSTER_STATE_READY
    assert world.cluster["status"]["head"]["podIP"]
    world.clear()
    world.set_pod(world.workers()[0], conditions=[{"type": "Ready", "status": "False"}])
    result = await world.reconcile()  # a worker not Ready any more, right after the last write: waits 2 s
    assert world.fake.writes_of("patch", "rayclusters/status") == []
    assert result.requeue_after == 2.0
    now[0] += 2.0
    await world.reconcile()
    assert len(world.fake.writes_of("patch", "rayclusters/status")) == 1
    assert world.cluster["status"]["readyWorkerReplicas"] == 1


async def test_in_a_crowd_a_cluster_that_comes_up_within_the_pace_gets_one_status_write() -> None:
    now = [100.0]
    pacer = StatusPacer(2.0, clock=lambda: now[0], rate=10.0, max_interval=300.0)
    for i in range(99):
        pacer.settled(("ns", f"other{i}"), False)  # 99 others coming up, and this one: a pace of 10 s
    world = new_world(pacer=pacer)
    result = await world.reconcile()  # Pods created, all Pending: progress only, and the pacer is crowded
    assert world.fake.writes_of("patch", "rayclusters/status") == []
    assert result.requeue_after == 10.0
    now[0] += 4.0
    world.run_all_pods()
    await world.reconcile()  # ready: one write carries the state and everything the first one would have
    assert len(world.fake.writes_of("patch", "rayclusters/status")) == 1
    status = world.cluster["status"]
    assert status["state"] == c.CLUSTER_STATE_READY and status["head"]["podIP"] and status["desiredWorkerReplicas"]


def test_the_progress_pace_grows_with_the_clusters_coming_up_and_is_capped() -> None:
    now = [0.0]
    pacer = StatusPacer(2.0, clock=lambda: now[0], rate=10.0, max_interval=60.0)
    keys = [("ns", f"c{i}") for i in range(1000)]
    assert pacer.pace() == 2.0  # nothing coming up: a lone cluster's pace
    for key in keys[:50]:
        pacer.settled(key, False)
    assert pacer.pace() == 5.0  # 50 clusters share 10 progress writes a second
    pacer.wrote(keys[0], "uid")
    assert pacer.due_in(keys[0], "uid") == 5.0
    assert pacer.due_in(keys[1], "uid") == 5.0  # its first status in a crowd: a pace after its first pass
    now[0] += 1.0
    assert pacer.due_in(keys[1], "uid") == 4.0  # counted from that first pass, not from every pass
    pacer.wrote(keys[1], "uid")
    for key in keys:
        pacer.settled(key, False)
    assert pacer.pace() == 60.0  # 1,000 would be 100 s: capped, so progress is never more than a minute late
    pacer.wrote(keys[1], "uid")
    for key in keys[2:]:
        pacer.settled(key, True)  # ready or suspended
    assert pacer.pace() == 2.0
    assert pacer.due_in(keys[1], "uid") == 60.0  # the last of a crowd keeps the pace it had at its last write
    lone = ("ns", "lone")
    pacer.settled(lone, False)
    assert pacer.due_in(lone, "uid") == 0.0  # a lone cluster's first status: at once, as KubeRay's
    pacer.forget(keys[0])  # deleted
    quiet = StatusPacer(0.0, rate=10.0)
    quiet.settled(keys[0], False)
    assert quiet.pace() == 0.0 and quiet.due_in(keys[0], "uid") == 0.0  # interval 0: every change at once


async def test_a_lagging_cache_never_deletes_twice() -> None:
    world = await ready_world(expectations=ScaleExpectations())
    world.fake.lagging = True
    world.fake.sync()
    _replicas(1)(world)
    world.fake.sync()
    await world.reconcile()
    assert len(world.fake.writes_of("delete", "pods")) == 1
    world.clear()
    await world.reconcile()  # the deleted Pod is still in the cache
    assert world.fake.writes_of("delete", "pods") == []


async def test_a_failed_head_pod_create_is_a_warning_event_and_a_replica_failure() -> None:
    world = new_world()
    world.fake.fail("create", PODS, name=f"{NAME}-head-*", code=403, reason="Forbidden", message="quota exceeded")
    with pytest.raises(ReconcileError):
        await world.reconcile()
    assert world.fake.reasons() == [c.EVENT_CREATED_SERVICE, c.EVENT_FAILED_TO_CREATE_HEAD_POD]
    assert "quota exceeded" in world.fake.events[-1].note
    failure = next(x for x in world.cluster["status"]["conditions"] if x["type"] == c.CONDITION_REPLICA_FAILURE)
    assert failure["status"] == "True"
    assert failure["reason"] == c.REASON_FAILED_CREATE_HEAD_POD
    # KubeRay's errors.Join(ErrFailedCreateHeadPod, err).Error(): the marker, a newline, the API server's message
    assert failure["message"] == f"{c.REASON_FAILED_CREATE_HEAD_POD}\nquota exceeded"


async def test_an_unhealthy_head_is_deleted_and_recreated_next_pass() -> None:
    world = await ready_world()
    head = world.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD})[0]
    world.set_pod(head, phase="Failed")
    with pytest.raises(ReconcileError):
        await world.reconcile()
    assert world.fake.reasons() == [c.EVENT_DELETED_HEAD_POD]
    world.clear()
    await world.reconcile()
    assert [w.name.startswith(f"{NAME}-head-") for w in world.fake.writes_of("create", "pods")] == [True]


# ---------------------------------------------------------------------------------------------------- suspend


async def test_suspend_goes_suspending_then_deletes_then_suspended() -> None:
    world = await ready_world()
    world.edit(lambda body: body["spec"].update(suspend=True))
    await world.reconcile()
    assert_writes(world, [STATUS])  # Suspending first; nothing deleted yet
    assert world.cluster["status"]["conditions"][-1]["type"] == "RayClusterSuspending"
    world.clear()
    await world.reconcile()
    assert_writes(world, [("deletecollection", "pods", f"{c.RAY_CLUSTER_LABEL}={NAME}"), STATUS])
    assert world.fake.reasons() == [c.EVENT_DELETED_POD]
    world.clear()
    await world.reconcile()
    assert world.cluster["status"]["state"] == c.CLUSTER_STATE_SUSPENDED
    world.clear()
    await world.reconcile()
    assert world.fake.writes == []  # suspended and quiet: no Pod is created


# ---------------------------------------------------------------------------------------------------- upgrades


async def test_recreate_deletes_every_pod_when_the_spec_hash_changes() -> None:
    world = await ready_world(raycluster(upgradeStrategy={"type": "Recreate"}))
    world.edit(lambda body: body["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(
        image="rayproject/ray:2.53.0"))  # fmt: skip
    await world.reconcile()
    assert_writes(world, [("deletecollection", "pods", f"{c.RAY_CLUSTER_LABEL}={NAME}"), STATUS])
    assert world.fake.reasons() == [c.EVENT_DELETED_POD]
    assert "Recreate" in world.fake.events[0].note


async def test_a_head_pod_of_another_kuberay_version_is_restamped_not_recreated() -> None:
    """KubeRay shouldRecreatePodsForUpgrade: after an operator upgrade (v1.6.1 Pods, v1.7.0's priority: 0 default in
    the spec, so another hash) the head Pod gets the current hash and version, and no Pod goes."""
    world = await ready_world(raycluster(upgradeStrategy={"type": "Recreate"}))
    [head] = world.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD})
    head["metadata"]["annotations"][c.RAY_KUBERAY_VERSION_ANNOTATION] = "v1.6.1"
    head["metadata"]["annotations"][c.RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION] = "OLDHASH"
    world.fake.add(head, PODS)
    world.clear()
    await world.reconcile()
    assert world.fake.writes_of("deletecollection") == []
    assert [str(w) for w in world.fake.writes_of("patch", "pods")] == [f"patch pods {NS}/{objects.name(head)}"]
    [head] = world.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD})
    annotations = head["metadata"]["annotations"]
    assert annotations[c.RAY_KUBERAY_VERSION_ANNOTATION] == c.KUBERAY_VERSION
    assert annotations[c.RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION] != "OLDHASH"
    world.clear()
    await world.reconcile()  # now current: nothing to do
    assert world.fake.writes_of("deletecollection") == [] and world.fake.writes_of("patch", "pods") == []


async def test_recreate_keeps_pods_when_only_replicas_change() -> None:
    world = await ready_world(raycluster(upgradeStrategy={"type": "Recreate"}))
    _replicas(3)(world)
    await world.reconcile()
    assert world.fake.writes_of("deletecollection") == []
    assert len(world.fake.writes_of("create", "pods")) == 1


async def test_a_cluster_is_validated_once_per_resource_version(monkeypatch: pytest.MonkeyPatch) -> None:
    world = await ready_world()
    reconciler = world.reconciler  # one reconciler across passes, as the operator's
    seen: list[str] = []
    validate = raycluster_controller.validate_raycluster

    def counting(obj: Any, **kwargs: Any) -> Any:
        seen.append(obj["metadata"]["resourceVersion"])
        return validate(obj, **kwargs)

    monkeypatch.setattr(raycluster_controller, "validate_raycluster", counting)
    for _ in range(3):
        await reconciler.reconcile(NS, NAME)  # nothing changed: validated once
    assert len(seen) == 1
    world.edit(lambda body: body["spec"]["workerGroupSpecs"].append(body["spec"]["workerGroupSpecs"][0]))
    world.clear()
    await reconciler.reconcile(NS, NAME)  # a new version is validated again: now invalid (groups not unique)
    assert len(seen) == 2 and seen[0] != seen[1]
    assert world.fake.reasons() == [c.EVENT_INVALID_RAYCLUSTER_SPEC]


# ------------------------------------------------------------------------------------------------- left alone


async def test_an_invalid_spec_is_a_warning_event_and_nothing_else() -> None:
    cluster = raycluster()
    cluster["spec"]["workerGroupSpecs"].append(copy.deepcopy(cluster["spec"]["workerGroupSpecs"][0]))
    world = new_world(cluster)
    result = await world.reconcile()
    assert result == Result()
    assert world.fake.writes == []
    assert world.fake.reasons() == [c.EVENT_INVALID_RAYCLUSTER_SPEC]
    assert "spec.workerGroupSpecs[1]" in world.fake.events[0].note
    assert "unique" in world.fake.events[0].note


async def test_a_cluster_managed_by_another_controller_is_left_alone() -> None:
    world = new_world(raycluster(managedBy="kueue.x-k8s.io/multikueue"))
    assert await world.reconcile() == Result()
    assert world.fake.writes == []
    assert world.fake.events == []


async def test_a_deleted_cluster_is_left_to_the_garbage_collector() -> None:
    world = await ready_world()
    world.edit(lambda body: body["metadata"].update(deletionTimestamp="2026-12-03T12:00:00Z"))
    assert await world.reconcile() == Result()
    assert world.fake.writes == []


async def test_a_cluster_gone_from_the_cache_forgets_its_expectations() -> None:
    world = World(FakeKube([raycluster()], resources=RESOURCES, lagging=True, clock=lambda: NOW))
    await world.reconcile()
    assert world.expectations.pending((NS, NAME)) == 3
    world.fake._cached.clear()
    assert await world.reconcile() == Result()
    assert world.expectations.pending((NS, NAME)) == 0


async def test_a_provisioned_cluster_with_head_restart_disabled_gets_no_new_head() -> None:
    world = await ready_world(
        raycluster() | {"metadata": {**raycluster()["metadata"],
                                     "annotations": {c.RAY_DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION: "true"}}}
    )  # fmt: skip
    head = world.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD})[0]
    await world.fake.api.delete(PODS, objects.name(head), NS)
    world.clear()
    await world.reconcile()
    assert world.fake.writes_of("create", "pods") == []


# ---------------------------------------------------------------------------------------------------- other children


async def test_gcs_ft_with_redis_adds_the_finalizer_first_and_creates_nothing_else() -> None:
    cluster = raycluster(gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    world = new_world(cluster)
    assert await world.reconcile() == Result(2.0)
    assert_writes(world, [("update", "rayclusters", NAME)])
    assert world.cluster["metadata"]["finalizers"] == [c.GCS_FT_REDIS_CLEANUP_FINALIZER]
    # KubeRay's Update of its Go object: the spec as Go writes it, so the generation bumps (2 in the differential)
    assert world.cluster["metadata"]["generation"] == 2
    assert world.cluster["spec"] == gowrites.as_kuberay_writes("RayCluster", cluster)["spec"] != cluster["spec"]
    assert world.cluster["spec"]["workerGroupSpecs"][0]["scaleStrategy"] == {}


async def test_gcs_ft_finalizer_on_a_spec_already_as_go_writes_it_keeps_the_generation() -> None:
    cluster = gowrites.as_kuberay_writes("RayCluster", raycluster(gcsFaultToleranceOptions={"redisAddress": "r:6379"}))
    world = new_world(cluster)
    await world.reconcile()
    assert world.cluster["metadata"]["finalizers"] == [c.GCS_FT_REDIS_CLEANUP_FINALIZER]
    assert world.cluster["metadata"]["generation"] == 1


async def test_a_multi_host_group_gets_a_headless_worker_service() -> None:
    cluster = raycluster()
    cluster["spec"]["workerGroupSpecs"][0].update(numOfHosts=2, replicas=1)
    world = new_world(cluster)
    await world.reconcile()
    services = [w.name for w in world.fake.writes_of("create", "services")]
    assert services == [f"{NAME}-head-svc", names.headless_service_name(NAME)]


async def test_volcano_podgroup_is_created_before_any_pod() -> None:
    world = new_world(options=BuildOptions(batch_scheduler=c.BATCH_SCHEDULER_VOLCANO))
    await world.reconcile()
    creates = [w.resource for w in world.fake.writes_of("create")]
    assert creates.index("podgroups") < creates.index("pods")


async def test_two_head_services_fail_the_pass() -> None:
    world = await ready_world()
    svc = copy.deepcopy(world.fake.all(SERVICES, NS)[0])
    svc["metadata"] = {**svc["metadata"], "name": "another-head-svc", "uid": "other"}
    world.fake.add(svc, SERVICES)
    with pytest.raises(ReconcileError, match="2 head Services"):
        await world.reconcile()


# ---------------------------------------------------------------------------------------------------- registration


def test_the_registration_watches_what_kuberays_controller_owns() -> None:
    reg = registration(BuildOptions())
    assert reg.kind == RAYCLUSTERS
    assert reg.recorder == c.RAYCLUSTER_CONTROLLER_NAME
    owned = [w.res for w in reg.owned]
    assert owned == [PODS, SERVICES, SERVICE_ACCOUNTS, ROLES, ROLE_BINDINGS, JOBS, SECRETS, INGRESSES, PVCS]
    # Every Ingress is cached, as KubeRay's: an unlabelled one holding the dashboard Ingress's name must be seen.
    assert [w.label_selector for w in reg.owned if w.res == INGRESSES] == [None]
    # Every PVC too (KubeRay v1.7.0 Owns(PersistentVolumeClaim)): a user's unlabelled storage.claimName must be seen.
    assert [w.label_selector for w in reg.owned if w.res == PVCS] == [None]
    volcano = registration(BuildOptions(batch_scheduler=c.BATCH_SCHEDULER_VOLCANO))
    assert [w.res.kind for w in volcano.owned][-1] == "PodGroup"
    assert volcano.owned[-1].missing_hint is not None


def test_routing_ignores_status_only_updates_and_follows_controller_owner_references() -> None:
    reg = registration(BuildOptions())
    old = raycluster()
    status_only = copy.deepcopy(old) | {"status": {"state": "ready"}}
    assert reg.key_for_primary("MODIFIED", old, status_only) is None
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"] = {"team": "a"}
    assert reg.key_for_primary("MODIFIED", old, relabelled) == (NS, NAME)
    pod = {"metadata": {"namespace": NS, "ownerReferences": [
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": NAME, "uid": "u", "controller": True}]}}  # fmt: skip
    assert reg.key_for_owned(None, pod) == (NS, NAME)
    not_controller = copy.deepcopy(pod)
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    assert reg.key_for_owned(None, not_controller) is None


async def test_gcs_ft_deletion_runs_the_redis_cleanup_job_then_drops_the_finalizer() -> None:
    world = new_world(raycluster(gcsFaultToleranceOptions={"redisAddress": "redis:6379"}))
    await world.reconcile()  # adds the finalizer
    world.edit(lambda body: body["metadata"].update(deletionTimestamp="2026-12-03T11:59:30Z"))
    world.clear()
    assert await world.reconcile() == Result(2.0)
    assert_writes(world, [("create", "jobs", f"{NAME}-redis-cleanup")])
    assert world.fake.reasons() == [c.EVENT_CREATED_REDIS_CLEANUP_JOB]
    job = world.fake.all(JOBS, NS)[0]
    # Built from buildHeadPod: not createHeadPod's Recreate hash and version annotations (KubeRay v1.7.0).
    assert c.RAY_KUBERAY_VERSION_ANNOTATION not in job["spec"]["template"]["metadata"].get("annotations", {})
    world.fake.add({**job, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}, JOBS)
    world.clear()
    assert await world.reconcile() == Result()
    assert_writes(world, [("patch", "rayclusters", NAME)])
    assert world.fake.stored(RAYCLUSTERS, NS, NAME) is None  # its last finalizer is gone, and so is the cluster


async def test_a_user_named_autoscaler_service_account_that_is_missing_fails_the_pass() -> None:
    cluster = raycluster(enableInTreeAutoscaling=True)
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "my-sa"
    world = new_world(cluster)
    with pytest.raises(ReconcileError, match="my-sa"):
        await world.reconcile()
    assert world.fake.reasons() == [c.EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND]
    assert world.fake.writes_of("create", "pods") == []


def test_the_pod_cache_keeps_what_the_controllers_read_and_drops_the_rest() -> None:
    from raykube.api.resources import RayCluster  # noqa: PLC0415
    from raykube.builders import pods as pod_builder  # noqa: PLC0415
    from raykube.controllers.watches import cached_pod  # noqa: PLC0415

    model = RayCluster.model_validate(raycluster())
    full = pod_builder.head_pod(model, BuildOptions())
    full["spec"]["restartPolicy"] = "Never"
    full["status"] = {
        "phase": "Running",
        "podIP": "10.0.0.7",
        "containerStatuses": [{"name": "ray-head", "state": {"terminated": {"exitCode": 1}}}],
    }
    before = copy.deepcopy(full)
    kept = cached_pod(copy.deepcopy(full))
    assert kept["metadata"] == before["metadata"]
    assert kept["status"] == before["status"]
    assert set(kept["spec"]) == {"restartPolicy", "containers"}
    assert [ctr["name"] for ctr in kept["spec"]["containers"]] == [ctr["name"] for ctr in before["spec"]["containers"]]
    assert kept["spec"]["containers"][0]["ports"] == before["spec"]["containers"][0]["ports"]
    assert "env" not in kept["spec"]["containers"][0]
    assert pod_builder.should_delete_pod(kept) is pod_builder.should_delete_pod(before) is True
    assert len(json.dumps(kept)) < len(json.dumps(before)) / 2


# ------------------------------------------------------------------------------------------------- dashboard Ingress
INGRESS = f"{NAME}-head-ingress"
INGRESS_KEY = f"{NS}/{INGRESS}"


def _ingress_on(body: dict[str, Any]) -> None:
    body["spec"]["headGroupSpec"]["enableIngress"] = True


def _v16_ingress(world: World, *, owned: bool = True, labelled: bool = True) -> dict[str, Any]:
    """The dashboard Ingress as KubeRay v1.6.x made it (path ``/<cluster>/(.*)``, ``Exact``), owned by the cluster or
    not, labelled ``ray.io/cluster`` (in the operator's cache) or not."""
    from raykube.api.resources import RayCluster  # noqa: PLC0415
    from raykube.builders import children  # noqa: PLC0415

    desired = children.head_ingress(RayCluster.model_validate(world.cluster))
    assert desired is not None
    body: dict[str, Any] = json.loads(json.dumps(desired))
    body["metadata"]["ownerReferences"][0]["uid"] = objects.uid(world.cluster) if owned else "someone-else"
    if not labelled:
        body["metadata"].pop("labels")
        body["metadata"].pop("ownerReferences")
    body["spec"]["rules"][0]["http"]["paths"][0].update(path=f"/{NAME}/(.*)", pathType="Exact")
    return body


async def _ingress_world(*, owned: bool = True, labelled: bool = True) -> World:
    """A ready cluster with ``enableIngress`` on and a v1.6.x Ingress under its Ingress name."""
    world = await ready_world(raycluster())
    world.edit(_ingress_on)
    await world.reconcile()  # creates the v1.7.0 Ingress
    stale = _v16_ingress(world, owned=owned, labelled=labelled)
    await world.fake.api.delete(INGRESSES, INGRESS, NS)
    world.fake.add(stale)
    world.clear()
    return world


def _path(ingress: dict[str, Any] | None) -> tuple[str, str]:
    assert ingress is not None
    path = ingress["spec"]["rules"][0]["http"]["paths"][0]
    return path["path"], path["pathType"]


async def test_enabling_the_ingress_creates_it_with_kuberays_note() -> None:
    world = await ready_world()
    world.edit(_ingress_on)
    await world.reconcile()
    assert [w for w in world.writes() if "ingresses" in w] == [f"create ingresses {INGRESS_KEY}"]
    [event] = world.fake.events
    assert (event.type, event.reason, event.action, event.note) == (
        "Normal",
        c.EVENT_CREATED_INGRESS,
        "Create",
        f"Created ingress {INGRESS_KEY}",
    )
    assert _path(world.fake.stored(INGRESSES, NS, INGRESS)) == ("/", "Prefix")


async def test_a_v16_ingress_owned_by_the_cluster_is_rewritten_on_the_first_pass() -> None:
    world = await _ingress_world()
    await world.reconcile()
    assert_writes(world, [("update", "ingresses", INGRESS)])
    [event] = world.fake.events
    assert (event.type, event.reason, event.action, event.note) == (
        "Normal",
        c.EVENT_UPDATED_INGRESS,
        "Update",
        f"Updated ingress {INGRESS_KEY}",
    )
    assert _path(world.fake.stored(INGRESSES, NS, INGRESS)) == ("/", "Prefix")
    world.clear()
    await world.reconcile()  # in step now: nothing more
    assert world.fake.writes == []
    assert world.fake.events == []


async def test_an_ingress_class_set_by_admission_is_adopted_not_fought() -> None:
    world = await ready_world()
    world.edit(_ingress_on)
    await world.reconcile()
    live = copy.deepcopy(world.fake.stored(INGRESSES, NS, INGRESS))
    assert live is not None
    live["spec"]["ingressClassName"] = "nginx"  # the DefaultIngressClass admission plugin's doing
    world.fake.add(live)
    world.clear()
    await world.reconcile()
    assert world.fake.writes == []
    assert world.fake.events == []


@pytest.mark.parametrize("labelled", [True, False], ids=["labelled ray.io/cluster", "a user's, unlabelled"])
async def test_an_ingress_of_another_owner_is_left_alone_with_a_warning_every_pass(labelled: bool) -> None:
    world = await _ingress_world(owned=False, labelled=labelled)
    before = copy.deepcopy(world.fake.stored(INGRESSES, NS, INGRESS))
    for _ in range(2):
        await world.reconcile()
        assert world.fake.writes == []
        [event] = world.fake.events
        assert (event.type, event.reason, event.action, event.note) == (
            "Warning",
            c.EVENT_FAILED_TO_CREATE_INGRESS,
            "Create",
            f"Ingress {INGRESS_KEY} already exists and is not owned by this RayCluster; not modifying it",
        )
        world.clear()
    assert world.fake.stored(INGRESSES, NS, INGRESS) == before


async def test_a_failed_ingress_update_is_a_warning_and_fails_the_pass() -> None:
    world = await _ingress_world()
    world.fake.fail("update", INGRESSES, code=422, reason="Invalid", message="spec.rules: Invalid value")
    with pytest.raises(ReconcileError):
        await world.reconcile()
    ingress_events = [e for e in world.fake.events if "Ingress" in e.reason]
    assert [(e.type, e.reason, e.action, e.note) for e in ingress_events] == [
        (
            "Warning",
            c.EVENT_FAILED_TO_UPDATE_INGRESS,
            "Update",
            f"Failed updating ingress {INGRESS_KEY}, spec.rules: Invalid value",
        )
    ]
    assert _path(world.fake.stored(INGRESSES, NS, INGRESS)) == (f"/{NAME}/(.*)", "Exact")


async def test_an_ingress_update_on_a_stale_copy_is_left_to_the_next_pass_without_a_warning() -> None:
    world = await _ingress_world()
    world.fake.fail("update", INGRESSES, code=409, reason="Conflict", message="the object has been modified", times=1)
    await world.reconcile()
    assert world.fake.events == []
    await world.reconcile()
    assert world.fake.reasons() == [c.EVENT_UPDATED_INGRESS]


# ------------------------------------------------------------------------------------------------- autoscaler v1
def _autoscaler_cluster(version: str | None, policies: list[str | None]) -> dict[str, Any]:
    """Autoscaling on (``autoscalerOptions.version`` as given), one worker group per entry of ``policies`` (the
    template's restartPolicy, or none)."""
    body = raycluster(enableInTreeAutoscaling=True)
    if version is not None:
        body["spec"]["autoscalerOptions"] = {"version": version}
    template_group = body["spec"]["workerGroupSpecs"][0]
    body["spec"]["workerGroupSpecs"] = []
    for index, policy in enumerate(policies):
        group = copy.deepcopy(template_group)
        group["groupName"] = f"g{index + 1}"
        if policy is not None:
            group["template"]["spec"]["restartPolicy"] = policy
        body["spec"]["workerGroupSpecs"].append(group)
    return body


_V1_NOTE = (
    f"RayCluster spec warning {NS}/{NAME}: restartPolicy for worker groups [g1, g3] should be Never or unset when "
    "using autoscaler V1"
)


@pytest.mark.parametrize(
    ("version", "policies", "autoscaling", "note"),
    [
        pytest.param("v1", ["Always", "Never", "OnFailure", None], True, _V1_NOTE, id="v1: g1 and g3, in spec order"),
        pytest.param("v1", ["Never", None], True, None, id="v1: Never or unset is fine"),
        pytest.param(None, ["Always"], True, None, id="version unset: no warning (only an explicit v1)"),
        pytest.param("v1", ["Always"], False, None, id="autoscaling off: no warning"),
    ],
)  # KubeRay v1.7.0 rayClusterReconcile, after ValidateRayClusterSpec
async def test_autoscaler_v1_restart_policy_warning_on_every_pass(
    version: str | None, policies: list[str | None], autoscaling: bool, note: str | None
) -> None:
    body = _autoscaler_cluster(version, policies)
    body["spec"]["enableInTreeAutoscaling"] = autoscaling
    world = new_world(body)
    for _ in range(2):
        await world.reconcile()
        warnings = [
            (e.type, e.action, e.note) for e in world.fake.events if e.reason == c.EVENT_INVALID_RAYCLUSTER_SPEC
        ]
        assert warnings == ([("Warning", "Validate", note)] if note else [])
        # The pass goes on: the head Pod is there (made by the first pass).
        assert world.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD})
        world.clear()

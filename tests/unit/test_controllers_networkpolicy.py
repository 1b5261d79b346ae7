"""NetworkPolicy reconcile table tests on an in-memory API server (KubeRay v1.7.0 ``networkpolicy_controller.go``:
create, update, stale deletion, deletion of them all when ``spec.networkPolicy`` goes, the name collision, skipped
clusters, the events and their actions, registration behind the RayClusterNetworkPolicy gate)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS
from raykube.builders.options import BuildOptions
from raykube.controllers.base import Deps, Result
from raykube.controllers.networkpolicy import (
    NetworkPolicyError,
    NetworkPolicyReconciler,
    generation_changed,
    registration,
)
from raykube.kube import objects
from raykube.kube.errors import ApiError
from raykube.kube.fake import FakeKube, RecordedEvent
from raykube.kube.resources import NETWORK_POLICIES
from raykube.runtime.manager import default_registrations

NS, NAME, UID = "team", "raycluster", "cluster-uid"
HEAD, SMALL, GPU = f"{NAME}-head", f"{NAME}-workers-small-group", f"{NAME}-workers-gpu-group"
REGARDING = f"RayCluster {NS}/{NAME}"
DNS_EGRESS = {"to": [{"namespaceSelector": {}}], "ports": [{"protocol": "UDP", "port": 53}]}


def raycluster(network_policy: dict[str, Any] | None = None, *, groups: tuple[str, ...] = ("small-group", "gpu-group"),
               **spec: Any) -> dict[str, Any]:  # fmt: skip
    container = {"name": "ray", "image": "rayproject/ray:2.52.0"}
    body: dict[str, Any] = {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        "workerGroupSpecs": [
            {
                "groupName": g,
                "replicas": 1,
                "minReplicas": 0,
                "maxReplicas": 5,
                "rayStartParams": {},
                "template": {"spec": {"containers": [container]}},
            }
            for g in groups
        ],
        **spec,
    }
    if network_policy is not None:
        body["networkPolicy"] = network_policy
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": NAME, "namespace": NS, "uid": UID, "generation": 1}, "spec": body}  # fmt: skip


def world(*extra: dict[str, Any], cluster: dict[str, Any] | None = None, lagging: bool = False) -> FakeKube:
    first = cluster if cluster is not None else raycluster({})
    return FakeKube([first, *extra], resources=(RAYCLUSTERS, NETWORK_POLICIES), lagging=lagging)


async def reconcile(fake: FakeKube) -> Result:
    return await NetworkPolicyReconciler(Deps(fake.api, fake.cache, fake.recorder)).reconcile(NS, NAME)


def set_spec(fake: FakeKube, cluster: dict[str, Any]) -> None:
    stored = fake.stored(RAYCLUSTERS, NS, NAME)
    assert stored is not None
    stored["spec"] = cluster["spec"]
    stored["metadata"]["generation"] += 1


def policy_names(fake: FakeKube) -> list[str]:
    return sorted(objects.name(p) for p in fake.all(NETWORK_POLICIES, NS))


def event(reason: str, action: str, note: str, type_: str = "Normal") -> RecordedEvent:
    return RecordedEvent(REGARDING, type_, reason, action, note)


def foreign_policy(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}}  # fmt: skip


async def test_first_pass_creates_the_head_and_each_groups_policy_with_created_events() -> None:
    fake = world()
    assert await reconcile(fake) == Result()
    assert [str(w) for w in fake.writes] == [
        f"create networkpolicies {NS}/{HEAD}",
        f"create networkpolicies {NS}/{SMALL}",
        f"create networkpolicies {NS}/{GPU}",
    ]
    assert fake.events == [
        event("CreatedNetworkPolicy", "Create", f"Created NetworkPolicy {NS}/{name}") for name in (HEAD, SMALL, GPU)
    ]
    head = fake.stored(NETWORK_POLICIES, NS, HEAD)
    assert head is not None
    assert head["metadata"]["ownerReferences"][0]["uid"] == UID
    assert head["spec"]["policyTypes"] == ["Ingress", "Egress"]


async def test_a_pass_with_nothing_changed_writes_nothing() -> None:
    fake = world()
    await reconcile(fake)
    fake.writes.clear()
    fake.events.clear()
    await reconcile(fake)
    assert fake.writes == []
    assert fake.events == []


async def test_a_spec_change_updates_the_policies_that_differ() -> None:
    fake = world()
    await reconcile(fake)
    fake.writes.clear()
    fake.events.clear()
    set_spec(fake, raycluster({"worker": {"egressRules": [DNS_EGRESS]}}))
    await reconcile(fake)
    assert [str(w) for w in fake.writes] == [
        f"update networkpolicies {NS}/{SMALL}",
        f"update networkpolicies {NS}/{GPU}",
    ]
    assert fake.events == [
        event("UpdatedNetworkPolicy", "Update", f"Updated NetworkPolicy {NS}/{n}") for n in (SMALL, GPU)
    ]
    small = fake.stored(NETWORK_POLICIES, NS, SMALL)
    assert small is not None
    assert small["spec"]["egress"][1] == DNS_EGRESS
    assert small["metadata"]["uid"]  # updated in place, not recreated


async def test_a_label_taken_off_or_added_is_put_back() -> None:
    fake = world()
    await reconcile(fake)
    head = fake.stored(NETWORK_POLICIES, NS, HEAD)
    assert head is not None
    head["metadata"]["labels"]["someone"] = "else"
    fake.writes.clear()
    await reconcile(fake)
    assert [str(w) for w in fake.writes] == [f"update networkpolicies {NS}/{HEAD}"]
    head = fake.stored(NETWORK_POLICIES, NS, HEAD)
    assert head is not None and "someone" not in head["metadata"]["labels"]


async def test_a_removed_worker_groups_policy_is_deleted_and_an_unowned_labelled_one_kept() -> None:
    fake = world(foreign_policy(f"{NAME}-workers-foreign", **{c.RAY_CLUSTER_LABEL: NAME}))
    await reconcile(fake)
    fake.writes.clear()
    fake.events.clear()
    set_spec(fake, raycluster({}, groups=("small-group",)))
    await reconcile(fake)
    assert [str(w) for w in fake.writes] == [f"delete networkpolicies {NS}/{GPU}"]
    assert fake.events == [event("DeletedNetworkPolicy", "Delete", f"Deleted NetworkPolicy {NS}/{GPU}")]
    assert policy_names(fake) == sorted([HEAD, SMALL, f"{NAME}-workers-foreign"])


async def test_without_network_policy_every_owned_policy_is_deleted() -> None:
    fake = world(foreign_policy("other", **{c.RAY_CLUSTER_LABEL: NAME}))
    await reconcile(fake)
    fake.events.clear()
    set_spec(fake, raycluster(None))
    await reconcile(fake)
    assert policy_names(fake) == ["other"]
    assert sorted(e.reason for e in fake.events) == ["DeletedNetworkPolicy"] * 3


@pytest.mark.parametrize("lagging", [False, True], ids=["cached", "create-answers-already-exists"])
async def test_a_same_named_policy_the_cluster_does_not_own_is_a_collision(lagging: bool) -> None:
    fake = world(foreign_policy(HEAD), lagging=lagging)
    with pytest.raises(NetworkPolicyError, match=f"NetworkPolicy {NS}/{HEAD} already exists and is not owned"):
        await reconcile(fake)
    assert fake.events == [
        event(
            "NetworkPolicyNameCollision",
            "Validate",
            f"NetworkPolicy {NS}/{HEAD} already exists and is not owned by this RayCluster, network isolation will not "
            "be applied. Rename the existing NetworkPolicy or use a different RayCluster name to avoid the collision",
            "Warning",
        )
    ]
    assert fake.writes == []  # the pass stops there, as KubeRay's: no worker policy either
    foreign = fake.stored(NETWORK_POLICIES, NS, HEAD)
    assert foreign is not None and foreign["spec"] == foreign_policy(HEAD)["spec"]


async def test_an_owned_policy_the_cache_has_not_seen_is_compared_after_already_exists() -> None:
    fake = world(lagging=True)
    await reconcile(fake)  # the cache shows none of the three
    fake.writes.clear()
    fake.events.clear()
    await reconcile(fake)  # creates answer AlreadyExists; the policies read back are up to date
    assert fake.writes == []
    assert fake.events == []


@pytest.mark.parametrize(
    ("verb", "reason", "action", "prepare"),
    [
        ("create", "FailedToCreateNetworkPolicy", "Create", None),
        ("update", "FailedToUpdateNetworkPolicy", "Update", {"worker": {"egressRules": [DNS_EGRESS]}}),
        ("delete", "FailedToDeleteNetworkPolicy", "Delete", "drop-gpu"),
    ],
)
async def test_a_refused_write_is_a_warning_naming_the_policy_and_fails_the_pass(
    verb: str, reason: str, action: str, prepare: Any
) -> None:
    fake = world()
    target = HEAD if verb == "create" else (GPU if prepare == "drop-gpu" else SMALL)
    if verb != "create":
        await reconcile(fake)
        set_spec(fake, raycluster({}, groups=("small-group",)) if prepare == "drop-gpu" else raycluster(prepare))
    fake.events.clear()
    fake.fail(verb, NETWORK_POLICIES, name=target, message="denied")
    with pytest.raises(ApiError, match="denied"):
        await reconcile(fake)
    what = {"create": "create", "update": "update", "delete": "delete"}[verb]
    assert fake.events[-1] == event(reason, action, f"Failed to {what} NetworkPolicy {NS}/{target}: denied", "Warning")


async def test_a_policy_already_gone_when_deleted_is_fine() -> None:
    fake = world()
    await reconcile(fake)
    set_spec(fake, raycluster(None))
    fake.events.clear()
    fake.fail("delete", NETWORK_POLICIES, name=HEAD, code=404, reason="NotFound", message="gone")
    await reconcile(fake)
    assert sorted(e.reason for e in fake.events) == ["DeletedNetworkPolicy"] * 2


@pytest.mark.parametrize(
    "cluster",
    [
        pytest.param(raycluster({}, managedBy=c.MANAGED_BY_MULTIKUEUE), id="managed-by-multikueue"),
        pytest.param(
            {
                **raycluster({}),
                "metadata": {
                    **raycluster({})["metadata"],
                    "deletionTimestamp": "2026-12-06T00:00:00Z",
                    "finalizers": ["x"],
                },
            },
            id="being-deleted",
        ),
    ],
)
async def test_clusters_being_deleted_or_managed_elsewhere_are_left_alone(cluster: dict[str, Any]) -> None:
    fake = world(cluster=cluster)
    assert await reconcile(fake) == Result()
    assert fake.writes == []
    assert fake.events == []


async def test_a_cluster_managed_by_kuberay_explicitly_is_reconciled_and_a_gone_one_is_not() -> None:
    fake = world(cluster=raycluster({}, managedBy=c.MANAGED_BY_KUBERAY))
    await reconcile(fake)
    assert len(policy_names(fake)) == 3
    empty = FakeKube([], resources=(RAYCLUSTERS, NETWORK_POLICIES))
    assert await reconcile(empty) == Result()
    assert empty.writes == []


async def test_a_policy_changed_by_hand_is_put_back_on_the_owned_objects_event() -> None:
    fake = world()
    await reconcile(fake)
    live = fake.stored(NETWORK_POLICIES, NS, HEAD)
    assert live is not None
    wanted = copy.deepcopy(live["spec"])
    live["spec"]["ingress"] = []
    fake.events.clear()
    await reconcile(fake)
    head = fake.stored(NETWORK_POLICIES, NS, HEAD)
    assert head is not None and head["spec"] == wanted
    assert fake.reasons() == ["UpdatedNetworkPolicy"]


# ------------------------------------------------------------------------------------------------ registration
def test_registration_is_kuberays_networkpolicy_controller() -> None:
    reg = registration()
    assert (reg.name, reg.recorder) == ("networkpolicy", "networkpolicy-controller")
    assert reg.kind == RAYCLUSTERS
    assert [w.res for w in reg.owned] == [NETWORK_POLICIES]
    assert reg.primary_changed is generation_changed


def test_only_a_generation_change_of_the_rayclusters_starts_a_pass() -> None:
    old = raycluster({})
    relabelled = copy.deepcopy(old)
    relabelled["metadata"]["labels"] = {"ray.io/job-submission-mode": "K8sJobMode"}
    relabelled["status"] = {"state": "ready"}
    newer = copy.deepcopy(old)
    newer["metadata"]["generation"] = 2
    assert not generation_changed(old, relabelled)
    assert generation_changed(old, newer)
    assert generation_changed(None, old) and generation_changed(old, None)
    reg = registration()
    assert reg.key_for_primary("MODIFIED", old, relabelled) is None
    assert reg.key_for_primary("MODIFIED", old, newer) == (NS, NAME)


def test_the_manager_runs_it_only_with_the_rayclusternetworkpolicy_gate() -> None:
    def names(options: BuildOptions) -> list[str]:
        return [r.name for r in default_registrations(options)]

    assert "networkpolicy" not in names(BuildOptions())
    gate_on = BuildOptions(features={**BuildOptions().features, c.GATE_RAYCLUSTER_NETWORK_POLICY: True})
    assert names(gate_on)[-1] == "networkpolicy"

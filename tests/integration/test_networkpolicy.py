"""RayCluster NetworkPolicies on the real control plane (kwok nodes), with KubeRay v1.7.0's ``RayClusterNetworkPolicy``
gate on: the head's and each worker group's policy appear with v1.7.0's content, follow spec changes (a policy the
API server has defaulted is not rewritten), go when their group or ``spec.networkPolicy`` goes, and a same-named
policy the cluster does not own is left alone with a ``NetworkPolicyNameCollision`` warning. Whether traffic is
actually blocked is up to a CNI that enforces NetworkPolicies, which the sandbox does not run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import EVENTS, NETWORK_POLICIES
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.support import operator_on

NAME = "isolated"
HEAD, SMALL, EXTRA = f"{NAME}-head", f"{NAME}-workers-small-group", f"{NAME}-workers-extra-group"
DNS_EGRESS = {"to": [{"namespaceSelector": {}}], "ports": [{"protocol": "UDP", "port": 53}]}
CLIENT_INGRESS = {"from": [{"podSelector": {"matchLabels": {"role": "client"}}}], "ports": [{"port": 10001}]}


def group(name: str) -> dict[str, Any]:
    container = {"name": "ray-worker", "image": "rayproject/ray:2.52.0"}
    return {"groupName": name, "replicas": 0, "minReplicas": 0, "maxReplicas": 2, "rayStartParams": {},
            "template": {"spec": {"containers": [container]}}}  # fmt: skip


def raycluster(network_policy: dict[str, Any] | None) -> dict[str, Any]:
    container = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}
    spec: dict[str, Any] = {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        "workerGroupSpecs": [group("small-group")],
    }
    if network_policy is not None:
        spec["networkPolicy"] = network_policy
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": NAME}, "spec": spec}


@pytest.fixture
async def np_operator(kubeconfig: Path, namespace: str, ray_crds: list[str]) -> AsyncIterator[Manager]:
    """The operator with ``--feature-gates=RayClusterNetworkPolicy=true``, its client held to the operator's RBAC."""
    async with operator_on(kubeconfig, namespace, c.GATE_RAYCLUSTER_NETWORK_POLICY, concurrency=2) as manager:
        assert "networkpolicy" in [ctl.name for ctl in manager.controllers]
        yield manager


async def policies(kube: Kube, namespace: str) -> dict[str, Mapping[str, Any]]:
    listed = await kube.list(NETWORK_POLICIES, namespace)
    return {objects.name(p): p for p in listed.items}


async def reasons(kube: Kube, namespace: str) -> list[tuple[str, str]]:
    listed = await kube.list(EVENTS, namespace)
    return [(str(e.get("reason")), str(e.get("note") or "")) for e in listed.items]


def same_cluster() -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {"ray.io/cluster": NAME}}}


async def test_policies_follow_the_spec_and_go_with_it(
    np_operator: Manager, runtime_kube: Kube, namespace: str
) -> None:
    kube = runtime_kube
    config = {"head": {"ingressRules": [CLIENT_INGRESS]}, "worker": {"egressRules": [DNS_EGRESS]}}
    cluster = await kube.create(RAYCLUSTERS, raycluster(config), namespace)

    async def both() -> dict[str, Mapping[str, Any]] | NotYet:
        found = await policies(kube, namespace)
        return found if {HEAD, SMALL} <= set(found) else NotYet(f"policies so far: {sorted(found)}")

    found = await wait_for(both, 60, what="the head's and small-group's NetworkPolicies")
    head, small = found[HEAD], found[SMALL]
    owner = head["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o["uid"], o["controller"]) for o in owner] == [
        ("RayCluster", NAME, objects.uid(cluster), True)
    ]
    assert objects.labels(head) == {"ray.io/cluster": NAME, "ray.io/group": "headgroup",
                                    "app.kubernetes.io/name": "kuberay",
                                    "app.kubernetes.io/created-by": "kuberay-operator"}  # fmt: skip
    client_ingress = {**CLIENT_INGRESS, "ports": [{"port": 10001, "protocol": "TCP"}]}  # the API server's default
    assert head["spec"] == {
        "podSelector": {"matchLabels": {"ray.io/cluster": NAME, "ray.io/node-type": "head"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [same_cluster()]}, client_ingress],
        "egress": [{"to": [same_cluster()]}],
    }
    assert small["spec"] == {
        "podSelector": {
            "matchLabels": {"ray.io/cluster": NAME, "ray.io/node-type": "worker", "ray.io/group": "small-group"}
        },
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [same_cluster()]}],
        "egress": [{"to": [same_cluster()]}, DNS_EGRESS],
    }
    head_version = objects.resource_version(head)

    # A new worker group: its policy appears, and the head's, which the API server defaulted (TCP), is left as it is.
    await kube.patch(RAYCLUSTERS, NAME, {"spec": {"workerGroupSpecs": [group("small-group"), group("extra-group")]}},
                     namespace)  # fmt: skip

    async def extra() -> dict[str, Mapping[str, Any]] | NotYet:
        found = await policies(kube, namespace)
        return found if EXTRA in found else NotYet(f"policies so far: {sorted(found)}")

    found = await wait_for(extra, 60, what="the extra group's NetworkPolicy")
    assert objects.labels(found[EXTRA])["ray.io/group"] == "extra-group"
    assert objects.resource_version(found[HEAD]) == head_version, "the head's policy was rewritten with no change"

    async def extra_created() -> list[tuple[str, str]] | NotYet:
        seen = await reasons(kube, namespace)
        created = (c.EVENT_CREATED_NETWORK_POLICY, f"Created NetworkPolicy {namespace}/{EXTRA}")
        return seen if created in seen else NotYet("no CreatedNetworkPolicy event for the extra group yet")

    # The head's policy comes before the group's in a pass, and its events before the group's.
    seen = await wait_for(extra_created, 30, what="the extra group's CreatedNetworkPolicy event")
    updated = [note for reason, note in seen if reason == c.EVENT_UPDATED_NETWORK_POLICY]
    assert updated == [], "a policy equal but for the API server's defaults (TCP) was updated"

    # DenyAllIngress: no egress part any more; the group gone: its policy goes.
    patch = {
        "spec": {
            "networkPolicy": {"mode": "DenyAllIngress", "worker": None},
            "workerGroupSpecs": [group("small-group")],
        }
    }
    await kube.patch(RAYCLUSTERS, NAME, patch, namespace)

    async def ingress_only() -> dict[str, Mapping[str, Any]] | NotYet:
        found = await policies(kube, namespace)
        if set(found) != {HEAD, SMALL}:
            return NotYet(f"policies: {sorted(found)}")
        types = {name: p["spec"].get("policyTypes") for name, p in found.items()}
        return found if all(t == ["Ingress"] for t in types.values()) else NotYet(f"policy types: {types}")

    found = await wait_for(ingress_only, 60, what="DenyAllIngress policies, the extra group's gone")
    assert "egress" not in found[HEAD]["spec"] and "egress" not in found[SMALL]["spec"]

    # networkPolicy removed: every policy of the cluster goes.
    await kube.patch(RAYCLUSTERS, NAME, {"spec": {"networkPolicy": None}}, namespace)

    async def none_left() -> bool | NotYet:
        found = await policies(kube, namespace)
        return True if not found else NotYet(f"policies left: {sorted(found)}")

    await wait_for(none_left, 60, what="every NetworkPolicy deleted")

    async def all_events() -> list[tuple[str, str]] | NotYet:
        # events.k8s.io/v1 as client-go writes them: deletes of one pass (the same RayCluster resourceVersion) are one
        # Event whose series counts them, noted with the first policy's name; EXTRA went in an earlier pass.
        seen = await reasons(kube, namespace)
        listed = (await kube.list(EVENTS, namespace)).items
        deleted = [e for e in listed if e.get("reason") == c.EVENT_DELETED_NETWORK_POLICY]
        notes = {str(e.get("note")) for e in deleted}
        total = sum(int((e.get("series") or {}).get("count") or 1) for e in deleted)
        want = {f"Deleted NetworkPolicy {namespace}/{n}" for n in (HEAD, SMALL, EXTRA)}
        done = total >= len(want) and notes <= want and f"Deleted NetworkPolicy {namespace}/{EXTRA}" in notes
        return seen if done else NotYet(f"DeletedNetworkPolicy events: {sorted(notes)}, {total} in all")

    seen = await wait_for(all_events, 30, what="the DeletedNetworkPolicy events")
    assert (c.EVENT_CREATED_NETWORK_POLICY, f"Created NetworkPolicy {namespace}/{HEAD}") in seen
    assert (c.EVENT_UPDATED_NETWORK_POLICY, f"Updated NetworkPolicy {namespace}/{HEAD}") in seen


async def test_a_same_named_policy_not_owned_by_the_cluster_is_left_alone_with_a_warning(
    np_operator: Manager, runtime_kube: Kube, namespace: str
) -> None:
    kube = runtime_kube
    foreign = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": HEAD},
               "spec": {"podSelector": {"matchLabels": {"app": "other"}}, "policyTypes": ["Ingress"]}}  # fmt: skip
    created = await kube.create(NETWORK_POLICIES, foreign, namespace)
    await kube.create(RAYCLUSTERS, raycluster({}), namespace)
    note = (
        f"NetworkPolicy {namespace}/{HEAD} already exists and is not owned by this RayCluster, network isolation will "
        "not be applied. Rename the existing NetworkPolicy or use a different RayCluster name to avoid the collision"
    )

    async def collision() -> bool | NotYet:
        seen = await reasons(kube, namespace)
        return True if (c.EVENT_NETWORK_POLICY_NAME_COLLISION, note) in seen else NotYet(f"events: {seen}")

    await wait_for(collision, 60, what="the NetworkPolicyNameCollision warning")
    listed = await kube.list(EVENTS, namespace)
    [warning] = [e for e in listed.items if e.get("reason") == c.EVENT_NETWORK_POLICY_NAME_COLLISION][:1]
    assert warning["type"] == "Warning"
    assert warning["regarding"]["kind"] == "RayCluster" and warning["regarding"]["name"] == NAME
    live = await kube.get(NETWORK_POLICIES, HEAD, namespace)
    assert objects.resource_version(live) == objects.resource_version(created)  # untouched
    assert live["spec"] == created["spec"]
    with pytest.raises(ApiError) as missing:  # the pass stopped at the head's: no worker policy either
        await kube.get(NETWORK_POLICIES, SMALL, namespace)
    assert missing.value.not_found

"""The doctor checks the operator may write Events through the API its version writes them with (EV-1): raykube and
KubeRay v1.7.0 write events.k8s.io/v1 Events, KubeRay before v1.7.0 core/v1 ones."""

from __future__ import annotations

import dataclasses

import pytest

from raykube.doctor.access import checks_for
from raykube.doctor.model import OperatorInfo


def operator(implementation: str, image: str) -> OperatorInfo:
    return OperatorInfo(
        namespace="kuberay-operator",
        name="kuberay-operator",
        implementation=implementation,
        image=image,
        ready=True,
        ready_replicas=1,
        replicas=1,
        watch_namespaces=(),
        service_account="kuberay-operator",
        feature_gates={},
        leader_election=True,
        leader_election_namespace="kuberay-operator",
    )


def event_checks(op: OperatorInfo) -> set[tuple[str, str, str]]:
    return {(a.verb, a.group, a.namespace) for a in checks_for(op, ["ray"]) if a.resource == "events"}


@pytest.mark.parametrize(
    ("implementation", "image"),
    [("raykube", "ghcr.io/raykube/raykube-operator:0.1.0"), ("kuberay", "quay.io/kuberay/operator:v1.7.0")],
)
def test_an_operator_that_writes_events_k8s_io_events_is_checked_for_them(implementation: str, image: str) -> None:
    assert event_checks(operator(implementation, image)) == {
        ("create", "events.k8s.io", "ray"),
        ("patch", "events.k8s.io", "ray"),
        # leader election keeps core events, in its own namespace
        ("create", "", "kuberay-operator"),
        ("patch", "", "kuberay-operator"),
    }


def test_kuberay_before_v170_is_checked_for_core_events() -> None:
    assert event_checks(operator("kuberay", "quay.io/kuberay/operator:v1.6.1")) == {
        ("create", "", "ray"),
        ("patch", "", "ray"),
        ("create", "", "kuberay-operator"),
        ("patch", "", "kuberay-operator"),
    }


def network_policy_checks(op: OperatorInfo) -> set[tuple[str, str]]:
    return {(a.verb, a.namespace) for a in checks_for(op, ["ray"]) if a.resource == "networkpolicies"}


def test_networkpolicies_are_checked_only_with_the_network_policy_gate_on() -> None:
    """KubeRay v1.7.0's NetworkPolicy controller (gate RayClusterNetworkPolicy) lists, watches and writes them; with
    the gate off nothing does, and KubeRay v1.6.1's ClusterRole has no such rule."""
    assert network_policy_checks(operator("kuberay", "quay.io/kuberay/operator:v1.6.1")) == set()
    assert network_policy_checks(operator("raykube", "ghcr.io/raykube/raykube-operator:0.1.0")) == set()
    gated = dataclasses.replace(
        operator("raykube", "ghcr.io/raykube/raykube-operator:0.1.0"), feature_gates={"RayClusterNetworkPolicy": True}
    )
    verbs = {"create", "delete", "get", "list", "update", "watch"}
    assert network_policy_checks(gated) == {(v, "ray") for v in verbs} | {("list", ""), ("watch", "")}

"""Kubernetes NetworkPolicy semantics as the doctor judges them (:mod:`raykube.doctor.facts.netpol`), as tables: who a
policy selects and in which direction, which peers and ports a rule admits, policies adding up, and a connection
needing the sender's egress and the receiver's ingress. ``None`` is "cannot tell from the objects"."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from raykube.doctor.facts import netpol as np

NS = "ml"
HEAD = np.Endpoint(
    namespace=NS,
    labels={"ray.io/cluster": "seed", "ray.io/node-type": "head"},
    ip="10.244.0.11",
    ports={"gcs-server": (6379, "TCP"), "dashboard": (8265, "TCP"), "dns-ish": (53, "UDP")},
    what="the head",
)
WORKER = np.Endpoint(
    namespace=NS, labels={"ray.io/cluster": "seed", "ray.io/node-type": "worker"}, ip="10.244.0.12", what="worker"
)
OPERATOR = np.Endpoint(namespace="kuberay-operator", labels={"app.kubernetes.io/name": "kuberay-operator"})
NO_IP = np.Endpoint(namespace=NS, labels={"ray.io/cluster": "seed"})


def policy(spec: dict[str, Any], name: str = "p", namespace: str = NS) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}  # fmt: skip


SELECT_HEAD = {"matchLabels": {"ray.io/node-type": "head"}}


@pytest.mark.parametrize(
    ("selector", "labels", "complete", "expected"),
    [
        ({}, {}, True, True),  # {} selects every Pod
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, True, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"}, True, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True, True),
        # Only some labels known (a namespace's): a requirement on another key cannot be judged...
        ({"matchLabels": {"team": "ml"}}, {np.NAMESPACE_NAME_LABEL: "ml"}, False, None),
        # ...unless a known one already fails.
        ({"matchLabels": {np.NAMESPACE_NAME_LABEL: "x", "team": "ml"}}, {np.NAMESPACE_NAME_LABEL: "ml"}, False, False),
        ({"matchLabels": {np.NAMESPACE_NAME_LABEL: "ml"}}, {np.NAMESPACE_NAME_LABEL: "ml"}, False, True),
    ],
)
def test_label_selectors(
    selector: dict[str, Any], labels: dict[str, str], complete: bool, expected: bool | None
) -> None:
    assert np.selector_matches(selector, labels, complete=complete) is expected


@pytest.mark.parametrize(
    ("peer", "endpoint", "expected"),
    [
        ({"podSelector": {}}, WORKER, True),  # every Pod of the policy's namespace
        ({"podSelector": {}}, OPERATOR, False),  # not of another namespace
        ({"podSelector": {"matchLabels": {"ray.io/cluster": "other"}}}, WORKER, False),
        ({"namespaceSelector": {}}, OPERATOR, True),  # every Pod of every namespace
        ({"namespaceSelector": {"matchLabels": {np.NAMESPACE_NAME_LABEL: "kuberay-operator"}},
          "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kuberay-operator"}}}, OPERATOR, True),
        ({"namespaceSelector": {"matchLabels": {np.NAMESPACE_NAME_LABEL: "kuberay-operator"}},
          "podSelector": {"matchLabels": {"app": "other"}}}, OPERATOR, False),
        ({"namespaceSelector": {"matchLabels": {"team": "platform"}}}, OPERATOR, None),  # labels not listed
        ({"ipBlock": {"cidr": "10.244.0.0/16"}}, WORKER, True),
        ({"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.0.0/24"]}}, WORKER, False),
        ({"ipBlock": {"cidr": "192.168.0.0/16"}}, WORKER, False),
        ({"ipBlock": {"cidr": "fd00::/8"}}, WORKER, False),  # another family
        ({"ipBlock": {"cidr": "10.244.0.0/16"}}, NO_IP, None),  # the address is not known
        ({"ipBlock": {"cidr": "0.0.0.0/0"}}, NO_IP, True),  # every address
        ({"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}}, NO_IP, None),
        ({"podSelector": {}}, dataclasses.replace(WORKER, host_network=True), None),  # the node's address: the CNI's
    ],
)  # fmt: skip
def test_peers(peer: dict[str, Any], endpoint: np.Endpoint, expected: bool | None) -> None:
    assert np.peer_matches(peer, NS, endpoint) is expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"podSelector": {}}, ["Ingress"]),
        ({"podSelector": {}, "egress": [{}]}, ["Ingress", "Egress"]),
        ({"podSelector": {}, "policyTypes": ["Egress"]}, ["Egress"]),
    ],
)
def test_policy_types_default_as_the_api_server_does(spec: dict[str, Any], expected: list[str]) -> None:
    assert np.policy_types(spec) == expected


# One ingress policy on the head with these rules; what reaches the head from WORKER on TCP: (port 6379, every port).
INGRESS_CASES: list[tuple[str, list[dict[str, Any]], bool | None, bool | None]] = [
    ("deny all (no rules)", [], False, False),
    ("empty rule: anyone, every port", [{}], True, True),
    ("the cluster's Pods, no ports", [{"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "seed"}}}]}],
     True, True),
    ("another cluster's Pods", [{"from": [{"podSelector": {"matchLabels": {"ray.io/cluster": "x"}}}]}], False, False),
    ("port 6379 only", [{"ports": [{"port": 6379}]}], True, False),
    ("a range", [{"ports": [{"port": 6000, "endPort": 7000}]}], True, False),
    ("named port, resolved on the head", [{"ports": [{"port": "gcs-server"}]}], True, False),
    ("named port the head does not have", [{"ports": [{"port": "redis"}]}], False, False),
    ("UDP only", [{"ports": [{"protocol": "UDP"}]}], False, False),
    ("every TCP port (protocol, no port)", [{"ports": [{"protocol": "TCP"}]}], True, True),
    ("two ranges that cover every port", [{"ports": [{"port": 1, "endPort": 6379}]},
                                          {"ports": [{"port": 6380, "endPort": 65535}]}], True, True),
    ("a namespace label not known", [{"from": [{"namespaceSelector": {"matchLabels": {"team": "ml"}}}]}], None, None),
]  # fmt: skip


@pytest.mark.parametrize(("rules", "gcs", "every"), [c[1:] for c in INGRESS_CASES], ids=[c[0] for c in INGRESS_CASES])
def test_what_an_ingress_policy_on_the_head_admits(
    rules: list[dict[str, Any]], gcs: bool | None, every: bool | None
) -> None:
    policies = [policy({"podSelector": SELECT_HEAD, "policyTypes": ["Ingress"], "ingress": rules})]
    access = np.direction_access(policies, HEAD, WORKER, np.INGRESS)
    assert access.restricted
    assert (access.port(6379), access.every_port) == (gcs, every)


def test_a_pod_no_policy_selects_is_unrestricted_and_policies_add_up() -> None:
    other = policy({"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress", "Egress"]})
    egress_only = policy({"podSelector": SELECT_HEAD, "policyTypes": ["Egress"]})
    for policies in ([], [other], [egress_only]):  # none selects the head for Ingress
        access = np.direction_access(policies, HEAD, WORKER, np.INGRESS)
        assert not access.restricted and access.every_port is True
    host = dataclasses.replace(HEAD, host_network=True)  # policies' effect on host-network Pods: the CNI's, not judged
    assert not np.direction_access([policy({"podSelector": {}})], host, WORKER, np.INGRESS).restricted
    elsewhere = policy({"podSelector": {}, "policyTypes": ["Ingress"]}, namespace="other")
    assert not np.direction_access([elsewhere], HEAD, WORKER, np.INGRESS).restricted  # another namespace's

    deny = policy({"podSelector": SELECT_HEAD, "policyTypes": ["Ingress"]}, name="deny")
    allow = policy({"podSelector": {}, "ingress": [{"ports": [{"port": 6379}]}]}, name="allow-gcs")
    access = np.direction_access([deny, allow], HEAD, WORKER, np.INGRESS)
    assert [p["metadata"]["name"] for p in access.policies] == ["deny", "allow-gcs"]
    assert access.port(6379) is True and access.port(8265) is False  # the allow adds up; the deny takes nothing


def test_named_ports_of_an_egress_rule_resolve_on_the_receiver() -> None:
    policies = [policy({"podSelector": {"matchLabels": {"ray.io/node-type": "worker"}}, "policyTypes": ["Egress"],
                        "egress": [{"ports": [{"port": "dashboard"}]}]})]  # fmt: skip
    access = np.direction_access(policies, WORKER, HEAD, np.EGRESS)
    assert access.port(8265) is True and access.port(6379) is False


def test_a_connection_needs_the_senders_egress_and_the_receivers_ingress() -> None:
    head_in = policy({"podSelector": SELECT_HEAD, "ingress": [{"ports": [{"port": 6000, "endPort": 9000}]}]})
    worker_out = policy({"podSelector": {"matchLabels": {"ray.io/node-type": "worker"}}, "policyTypes": ["Egress"],
                         "egress": [{"ports": [{"port": 8000, "endPort": 10001}]}]})  # fmt: skip

    def lookup(namespace: str) -> list[dict[str, Any]] | None:
        return [head_in, worker_out] if namespace == NS else None

    egress, ingress, both = np.connection(lookup, WORKER, HEAD)
    assert (egress.port(6379), ingress.port(6379), both.port(6379)) == (False, True, False)
    assert (egress.port(10001), ingress.port(10001), both.port(10001)) == (True, False, False)
    assert both.port(8265) is True and np.format_ranges(both.sure) == "8000-9000"
    # A namespace whose policies were not read counts as having none: the operator's egress is not judged.
    egress, ingress, both = np.connection(lookup, OPERATOR, HEAD)
    assert not egress.restricted and ingress.restricted and both.port(8265) is True


def test_dns_to_anywhere_or_to_kube_dns_by_labels() -> None:
    kube_dns = np.Endpoint(namespace="kube-system", labels={"k8s-app": "kube-dns"},
                           ports={"dns": (53, "UDP"), "dns-tcp": (53, "TCP")})  # fmt: skip
    select = {"podSelector": {}, "policyTypes": ["Egress"]}
    cases: list[tuple[list[dict[str, Any]], bool | None, bool | None]] = [
        ([], False, False),
        ([{"ports": [{"port": 53, "protocol": "UDP"}]}], True, False),
        ([{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 53, "protocol": "UDP"},
                                                                 {"port": 53, "protocol": "TCP"}]}], True, True),
        ([{"to": [{"namespaceSelector": {"matchLabels": {np.NAMESPACE_NAME_LABEL: "kube-system"}},
                   "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
           "ports": [{"port": "dns", "protocol": "UDP"}, {"port": "dns-tcp"}]}], True, True),
        ([{"to": [{"ipBlock": {"cidr": "10.96.0.10/32"}}], "ports": [{"port": 53, "protocol": "UDP"}]}], None, False),
        ([{"to": [{"podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}]}], False, False),  # in ml, not kube-system
    ]  # fmt: skip
    for rules, udp, tcp in cases:
        policies = [policy({**select, "egress": rules})]
        got = (
            np.direction_access(policies, WORKER, kube_dns, np.EGRESS, np.UDP).port(53),
            np.direction_access(policies, WORKER, kube_dns, np.EGRESS, np.TCP).port(53),
        )
        assert got == (udp, tcp), rules

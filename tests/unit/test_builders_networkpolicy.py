"""The NetworkPolicies of a RayCluster as KubeRay v1.7.0 builds them (``networkpolicy_controller.go`` and its unit
tests: per mode, custom rules, the RayJob submitter rule, the dashboard port, names), and the "needs update"
comparison."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RayCluster
from raykube.builders import networkpolicy as np

NS, NAME, UID = "team", "raycluster", "cluster-uid"
SAME_CLUSTER = {"podSelector": {"matchLabels": {"ray.io/cluster": NAME}}}
OWNER = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": NAME, "uid": UID, "controller": True,
         "blockOwnerDeletion": True}  # fmt: skip
DNS_EGRESS = {"to": [{"namespaceSelector": {}}], "ports": [{"protocol": "UDP", "port": 53}]}
METRICS_INGRESS = {"from": [{"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}], "ports": [{"port": 8080}]}


def raycluster(network_policy: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    container = {"name": "ray", "image": "rayproject/ray:2.52.0"}
    group = {"groupName": "small-group", "replicas": 1, "minReplicas": 0, "maxReplicas": 5, "rayStartParams": {},
             "template": {"spec": {"containers": [container]}}}  # fmt: skip
    spec: dict[str, Any] = {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        "workerGroupSpecs": [group, {**group, "groupName": "gpu-group"}],
    }
    if network_policy is not None:
        spec["networkPolicy"] = network_policy
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": NAME, "namespace": NS, "uid": UID, **metadata}, "spec": spec}  # fmt: skip


def model(obj: dict[str, Any]) -> RayCluster:
    return RayCluster.model_validate(obj)


def test_deny_all_head_and_worker_policies_as_kuberay_builds_them() -> None:
    head, small, gpu = np.network_policies(model(raycluster({})))
    assert head == {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": "raycluster-head",
            "namespace": NS,
            "labels": {
                "ray.io/cluster": NAME,
                "ray.io/group": "headgroup",
                "app.kubernetes.io/name": "kuberay",
                "app.kubernetes.io/created-by": "kuberay-operator",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "podSelector": {"matchLabels": {"ray.io/cluster": NAME, "ray.io/node-type": "head"}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [SAME_CLUSTER]}],
            "egress": [{"to": [SAME_CLUSTER]}],
        },
    }
    assert objects_names([head, small, gpu]) == ["raycluster-head", "raycluster-workers-small-group",
                                                 "raycluster-workers-gpu-group"]  # fmt: skip
    assert small["metadata"]["labels"]["ray.io/group"] == "small-group"
    assert small["spec"] == {
        "podSelector": {
            "matchLabels": {"ray.io/cluster": NAME, "ray.io/node-type": "worker", "ray.io/group": "small-group"}
        },
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [SAME_CLUSTER]}],
        "egress": [{"to": [SAME_CLUSTER]}],
    }


def objects_names(policies: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in policies]


@pytest.mark.parametrize(
    ("mode", "types"),
    [
        (None, ["Ingress", "Egress"]),
        ("DenyAll", ["Ingress", "Egress"]),
        ("DenyAllIngress", ["Ingress"]),
        ("DenyAllEgress", ["Egress"]),
    ],
)
def test_the_mode_picks_the_policy_types_and_only_their_rules(mode: str | None, types: list[str]) -> None:
    config: dict[str, Any] = {} if mode is None else {"mode": mode}
    for policy in np.network_policies(model(raycluster(config))):
        spec = policy["spec"]
        assert spec["policyTypes"] == types
        assert ("ingress" in spec) is ("Ingress" in types)
        assert ("egress" in spec) is ("Egress" in types)


def test_user_rules_are_appended_head_to_head_worker_to_groups_and_a_group_entry_replaces_worker() -> None:
    config = {
        "head": {"ingressRules": [METRICS_INGRESS], "egressRules": [DNS_EGRESS]},
        "worker": {"egressRules": [DNS_EGRESS]},
        "workerGroups": [{"groupName": "gpu-group", "ingressRules": [METRICS_INGRESS]}],
    }
    head, small, gpu = np.network_policies(model(raycluster(config)))
    assert head["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}, METRICS_INGRESS]
    assert head["spec"]["egress"] == [{"to": [SAME_CLUSTER]}, DNS_EGRESS]
    assert small["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}]  # no head rule leaks into a worker
    assert small["spec"]["egress"] == [{"to": [SAME_CLUSTER]}, DNS_EGRESS]  # networkPolicy.worker
    assert gpu["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}, METRICS_INGRESS]
    assert gpu["spec"]["egress"] == [{"to": [SAME_CLUSTER]}]  # its entry replaces worker's, not merged


def test_worker_rules_do_not_leak_into_the_head() -> None:
    head = np.head_network_policy(model(raycluster({"worker": {"ingressRules": [METRICS_INGRESS]}})))
    assert head["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}]


RAYJOB_OWNER = {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "my-job", "uid": "job-uid", "controller": True}
SUBMITTER_RULE = {
    "from": [
        {
            "podSelector": {
                "matchLabels": {"ray.io/originated-from-cr-name": "my-job", "ray.io/originated-from-crd": "RayJob"}
            }
        }
    ],
    "ports": [{"protocol": "TCP", "port": 8265}],
}


@pytest.mark.parametrize(
    ("labels", "owners", "submitter"),
    [
        ({"ray.io/job-submission-mode": "K8sJobMode"}, [RAYJOB_OWNER], True),
        ({"ray.io/job-submission-mode": "SidecarMode"}, [RAYJOB_OWNER], False),
        ({}, [RAYJOB_OWNER], False),
        ({"ray.io/job-submission-mode": "K8sJobMode"}, [], False),
        ({"ray.io/job-submission-mode": "K8sJobMode"}, [{**RAYJOB_OWNER, "controller": False}], False),
        ({"ray.io/job-submission-mode": "K8sJobMode"}, [{**RAYJOB_OWNER, "apiVersion": "other.io/v1"}], False),
        ({"ray.io/job-submission-mode": "K8sJobMode"}, [{**RAYJOB_OWNER, "kind": "RayService"}], False),
    ],
)
def test_the_head_admits_a_k8sjobmode_rayjobs_submitter_on_the_dashboard_port(
    labels: dict[str, str], owners: list[dict[str, Any]], submitter: bool
) -> None:
    obj = raycluster({}, labels=labels, ownerReferences=owners)
    head, small, _ = np.network_policies(model(obj))
    expected = [{"from": [SAME_CLUSTER]}, *([SUBMITTER_RULE] if submitter else [])]
    assert head["spec"]["ingress"] == expected
    assert small["spec"]["ingress"] == [{"from": [SAME_CLUSTER]}]  # workers never


@pytest.mark.parametrize(
    ("param", "port"),
    [(None, 8265), ("9265", 9265), ("+9265", 9265), ("x", 8265), (" 9265", 8265), ("2147483648", 8265)],
)
def test_the_dashboard_port_is_the_ray_start_param_when_it_parses(param: str | None, port: int) -> None:
    obj = raycluster({}, labels={"ray.io/job-submission-mode": "K8sJobMode"}, ownerReferences=[RAYJOB_OWNER])
    if param is not None:
        obj["spec"]["headGroupSpec"]["rayStartParams"]["dashboard-port"] = param
    assert np.dashboard_port(model(obj)) == port
    head = np.head_network_policy(model(obj))
    assert head["spec"]["ingress"][1]["ports"] == [{"protocol": "TCP", "port": port}]


def test_no_network_policy_no_policies_and_long_names_are_used_as_given() -> None:
    assert np.network_policies(model(raycluster())) == []
    long_name = "a" * 47
    obj = raycluster({})
    obj["metadata"]["name"] = long_name
    names = objects_names(np.network_policies(model(obj)))
    assert names == [f"{long_name}-head", f"{long_name}-workers-small-group", f"{long_name}-workers-gpu-group"]


def test_the_builder_does_not_share_the_clusters_rules() -> None:
    obj = raycluster({"head": {"ingressRules": [METRICS_INGRESS]}})
    cluster = model(obj)
    head = np.head_network_policy(cluster)
    head["spec"]["ingress"][1]["ports"].append({"port": 1})
    assert np.head_network_policy(cluster)["spec"]["ingress"][1] == METRICS_INGRESS


# ------------------------------------------------------------------------------------------------ needs update
def as_stored(policy: dict[str, Any]) -> dict[str, Any]:
    """What the API server hands back: defaults applied (TCP), empty lists dropped, server fields added."""
    stored = copy.deepcopy(policy)
    stored["metadata"].update({"uid": "np-uid", "resourceVersion": "7", "generation": 1})
    for key in ("ingress", "egress"):
        for rule in stored["spec"].get(key, []):
            for port in rule.get("ports", []):
                port.setdefault("protocol", "TCP")
            for peers in ("from", "to"):
                if rule.get(peers) == []:
                    del rule[peers]
    return stored


def test_a_stored_policy_equal_but_for_defaults_needs_no_update() -> None:
    config = {"head": {"ingressRules": [METRICS_INGRESS, {"from": [], "ports": [{"port": 10001}]}]}}
    head = np.head_network_policy(model(raycluster(config)))
    assert head["spec"]["ingress"][1]["ports"] == [{"port": 8080}]  # no protocol: the API server adds TCP
    assert not np.needs_update(as_stored(head), head)


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p["spec"]["ingress"].pop(),
        lambda p: p["spec"].update(policyTypes=["Ingress"]),
        lambda p: p["spec"]["ingress"][0]["ports"][0].update(protocol="UDP"),
        lambda p: p["metadata"]["labels"].update(extra="label"),
        lambda p: p["metadata"]["labels"].pop(c.K8S_CREATED_BY_LABEL),
        lambda p: p["spec"]["podSelector"]["matchLabels"].update({"ray.io/node-type": "worker"}),
    ],
    ids=["rule-missing", "policy-types", "protocol", "label-added", "label-removed", "selector"],
)
def test_a_changed_spec_or_labels_needs_an_update(change: Any) -> None:
    config = {"head": {"ingressRules": [METRICS_INGRESS]}}
    head = np.head_network_policy(model(raycluster(config)))
    head["spec"]["ingress"] = head["spec"]["ingress"][1:]  # the user's rule first, so index 0 has a port
    live = as_stored(head)
    change(live)
    assert np.needs_update(live, head)


def test_normalized_spec_gives_every_port_without_a_protocol_tcp_and_keeps_the_others() -> None:
    spec: dict[str, Any] = {
        "ingress": [{"ports": [{"port": 1}, {"protocol": "SCTP", "port": 2}]}],
        "egress": [{"to": []}],
    }
    assert np.normalized_spec(spec) == {
        "ingress": [{"ports": [{"port": 1, "protocol": "TCP"}, {"protocol": "SCTP", "port": 2}]}],
        "egress": [{"to": []}],
    }
    assert spec["ingress"][0]["ports"][0] == {"port": 1}  # not mutated

"""The NetworkPolicies KubeRay v1.7.0 makes for a RayCluster with ``spec.networkPolicy`` (gate
RayClusterNetworkPolicy), as plain dicts ready to POST (``networkpolicy_controller.go``).

* ``<cluster>-head`` selects the head Pod (``ray.io/cluster``, ``ray.io/node-type=head``);
* ``<cluster>-workers-<group>``, one per worker group, selects that group's workers (``ray.io/group`` too).

Both carry ``ray.io/cluster``, ``ray.io/group`` (``headgroup`` for the head), ``app.kubernetes.io/name=kuberay`` and
``app.kubernetes.io/created-by=kuberay-operator``, and a controller ownerReference to the RayCluster.

The mode (``spec.networkPolicy.mode``, default ``DenyAll``) picks the policy types: Ingress for DenyAll and
DenyAllIngress, Egress for DenyAll and DenyAllEgress. Each type gets the base rule (from/to every Pod of the cluster,
all ports), then the user's rules: ``networkPolicy.head`` for the head, for a group its ``workerGroups`` entry or else
``networkPolicy.worker``. The head's ingress also admits the RayJob submitter on the dashboard port (TCP,
``rayStartParams["dashboard-port"]`` or 8265) when the cluster was made by a RayJob in K8sJobMode (the label
``ray.io/job-submission-mode=K8sJobMode`` and a ray.io RayJob controller ownerReference): Pods labelled
``ray.io/originated-from-cr-name=<rayjob>, ray.io/originated-from-crd=RayJob``. No DNS rule is added: under
DenyAll/DenyAllEgress users add one themselves, as with KubeRay.

:func:`needs_update` is KubeRay's comparison of a live policy with the desired one (spec and labels, a port without a
protocol read as TCP, which is what the API server stores). One difference: KubeRay compares Go structs, where a
user rule's empty list (``from: []``) differs from the absent list the API server hands back, so such a rule is
rewritten on every pass; here empty lists and maps compare equal to absent ones.

Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import NetworkPolicyConfig, NetworkPolicyRules
from raykube.api.resources import RayCluster
from raykube.builders import names
from raykube.golang.strconv import parse_int

API_VERSION = "networking.k8s.io/v1"
KIND = "NetworkPolicy"
POLICY_TYPE_INGRESS = "Ingress"
POLICY_TYPE_EGRESS = "Egress"
PROTOCOL_TCP = "TCP"
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
# Go pointers to a LabelSelector: an empty one is written as {} ("every Pod" / "every namespace"), never dropped.
_KEPT_EMPTY = frozenset({"podSelector", "namespaceSelector"})


def head_name(cluster_name: str) -> str:
    """KubeRay ``headNetworkPolicyName``."""
    return f"{cluster_name}-head"


def worker_group_name(cluster_name: str, group_name: str) -> str:
    """KubeRay ``workerGroupNetworkPolicyName``."""
    return f"{cluster_name}-workers-{group_name}"


def _cluster_name(cluster: RayCluster) -> str:
    return str(cluster.metadata.get("name", ""))


def _config(cluster: RayCluster) -> NetworkPolicyConfig | None:
    return cluster.spec.network_policy if cluster.spec is not None else None


def mode(config: NetworkPolicyConfig) -> str:
    """The mode, ``DenyAll`` when unset."""
    return str(config.mode or c.NETWORK_POLICY_DENY_ALL)


def _restricts_ingress(mode_: str) -> bool:
    return mode_ in (c.NETWORK_POLICY_DENY_ALL, c.NETWORK_POLICY_DENY_ALL_INGRESS)


def _restricts_egress(mode_: str) -> bool:
    return mode_ in (c.NETWORK_POLICY_DENY_ALL, c.NETWORK_POLICY_DENY_ALL_EGRESS)


def _labels(cluster: RayCluster, group: str) -> dict[str, str]:
    return {
        c.RAY_CLUSTER_LABEL: _cluster_name(cluster),
        c.RAY_NODE_GROUP_LABEL: group,
        c.K8S_APP_NAME_LABEL: c.APPLICATION_NAME,
        c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME,
    }


def _metadata(cluster: RayCluster, name: str, group: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    namespace = cluster.metadata.get("namespace")
    if namespace:
        meta["namespace"] = str(namespace)
    meta["labels"] = _labels(cluster, group)
    meta["ownerReferences"] = [
        names.owner_reference(c.KIND_RAYCLUSTER, _cluster_name(cluster), str(cluster.metadata.get("uid", "")))
    ]
    return meta


def _same_cluster_peer(cluster: RayCluster) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {c.RAY_CLUSTER_LABEL: _cluster_name(cluster)}}}


def _base_ingress(cluster: RayCluster) -> list[dict[str, Any]]:
    return [{"from": [_same_cluster_peer(cluster)]}]


def _base_egress(cluster: RayCluster) -> list[dict[str, Any]]:
    return [{"to": [_same_cluster_peer(cluster)]}]


def dashboard_port(cluster: RayCluster) -> int:
    """KubeRay ``getHeadPort(instance, "dashboard-port", 8265)``: the head's ``rayStartParams`` value when it parses as
    a 32-bit integer (``strconv.ParseInt(s, 10, 32)``), else 8265."""
    params = cluster.spec.head_group_spec.ray_start_params if cluster.spec is not None else None
    text = (params or {}).get(c.DASHBOARD_PORT_RAY_START_PARAM)
    if text is not None:
        number = parse_int(str(text), 10, signed=True)
        if number is not None and _INT32_MIN <= number <= _INT32_MAX:
            return number
    return c.DEFAULT_DASHBOARD_PORT


def submitter_peer(cluster: RayCluster) -> dict[str, Any] | None:
    """KubeRay ``buildRayJobPeer``: the K8sJobMode submitter Pods of the RayJob that controls this cluster, or None."""
    if (cluster.metadata.get("labels") or {}).get(c.RAY_JOB_SUBMISSION_MODE_LABEL) != c.SUBMISSION_MODE_K8S_JOB:
        return None
    for ref in cluster.metadata.get("ownerReferences") or []:
        if (
            ref.get("kind") == c.KIND_RAYJOB
            and ref.get("controller") is True
            and str(ref.get("apiVersion", "")).startswith(f"{c.API_GROUP}/")
        ):
            labels = {
                c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: str(ref.get("name", "")),
                c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYJOB,
            }
            return {"podSelector": {"matchLabels": labels}}
    return None


def _head_ingress(cluster: RayCluster) -> list[dict[str, Any]]:
    rules = _base_ingress(cluster)
    peer = submitter_peer(cluster)
    if peer is not None:
        rules.append({"from": [peer], "ports": [{"protocol": PROTOCOL_TCP, "port": dashboard_port(cluster)}]})
    return rules


def _user_rules(rules: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    return [copy.deepcopy(dict(rule)) for rule in rules or ()]


def _policy(
    cluster: RayCluster,
    *,
    name: str,
    group: str,
    selector: Mapping[str, str],
    ingress: list[dict[str, Any]] | None,
    egress: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {"matchLabels": dict(selector)}}
    policy_types = [t for t, rules in ((POLICY_TYPE_INGRESS, ingress), (POLICY_TYPE_EGRESS, egress)) if rules]
    spec["policyTypes"] = policy_types
    if ingress:
        spec["ingress"] = ingress
    if egress:
        spec["egress"] = egress
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": _metadata(cluster, name, group), "spec": spec}


def head_network_policy(cluster: RayCluster) -> dict[str, Any]:
    """KubeRay ``buildHeadNetworkPolicy``."""
    config = _config(cluster)
    if config is None:
        raise ValueError(f"RayCluster {_cluster_name(cluster)!r} has no spec.networkPolicy")
    mode_ = mode(config)
    custom = config.head
    ingress = egress = None
    if _restricts_ingress(mode_):
        ingress = _head_ingress(cluster) + _user_rules(custom.ingress_rules if custom else None)
    if _restricts_egress(mode_):
        egress = _base_egress(cluster) + _user_rules(custom.egress_rules if custom else None)
    selector = {c.RAY_CLUSTER_LABEL: _cluster_name(cluster), c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD}
    name = head_name(_cluster_name(cluster))
    return _policy(cluster, name=name, group=c.HEAD_GROUP_NAME, selector=selector, ingress=ingress, egress=egress)


def worker_group_rules(config: NetworkPolicyConfig, group_name: str) -> NetworkPolicyRules | None:
    """KubeRay ``workerGroupCustomRules``: the group's ``workerGroups`` entry (it replaces ``worker``), else
    ``worker``."""
    for entry in config.worker_groups or ():
        if entry.group_name == group_name:
            return entry
    return config.worker


def worker_group_network_policy(cluster: RayCluster, group_name: str) -> dict[str, Any]:
    """KubeRay ``buildWorkerGroupNetworkPolicy``."""
    config = _config(cluster)
    if config is None:
        raise ValueError(f"RayCluster {_cluster_name(cluster)!r} has no spec.networkPolicy")
    mode_ = mode(config)
    custom = worker_group_rules(config, group_name)
    ingress = egress = None
    if _restricts_ingress(mode_):
        ingress = _base_ingress(cluster) + _user_rules(custom.ingress_rules if custom else None)
    if _restricts_egress(mode_):
        egress = _base_egress(cluster) + _user_rules(custom.egress_rules if custom else None)
    selector = {
        c.RAY_CLUSTER_LABEL: _cluster_name(cluster),
        c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_WORKER,
        c.RAY_NODE_GROUP_LABEL: group_name,
    }
    name = worker_group_name(_cluster_name(cluster), group_name)
    return _policy(cluster, name=name, group=group_name, selector=selector, ingress=ingress, egress=egress)


def network_policies(cluster: RayCluster) -> list[dict[str, Any]]:
    """Every NetworkPolicy the cluster should have, the head's first, then one per worker group in spec order; none
    without ``spec.networkPolicy``."""
    if _config(cluster) is None or cluster.spec is None:
        return []
    groups = [group.group_name for group in cluster.spec.worker_group_specs or ()]
    return [head_network_policy(cluster), *(worker_group_network_policy(cluster, g) for g in groups)]


# ------------------------------------------------------------------------------------------------ comparison
def _port_with_tcp(port: Any) -> Any:
    if isinstance(port, Mapping) and port.get("protocol") is None:
        return {**port, "protocol": PROTOCOL_TCP}
    return port


def _with_tcp(rules: Any) -> Any:
    if not isinstance(rules, list):
        return rules
    out = []
    for rule in rules:
        if isinstance(rule, Mapping) and isinstance(rule.get("ports"), list):
            ports = [_port_with_tcp(port) for port in rule["ports"]]
            out.append({**rule, "ports": ports})
        else:
            out.append(rule)
    return out


def normalized_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """KubeRay ``normalizeNetworkPolicyPorts``: every ingress and egress port without a protocol gets TCP (the API
    server's default)."""
    out = dict(spec)
    for key in ("ingress", "egress"):
        if key in out:
            out[key] = _with_tcp(out[key])
    return out


def _compact(value: Any, key: str = "") -> Any:
    """``value`` as Go's ``omitempty`` would write it back: no nulls, no empty lists or maps (but an empty label
    selector, a Go pointer, stays)."""
    if isinstance(value, Mapping):
        out = {}
        for k, item in value.items():
            kept = _compact(item, str(k))
            if kept is None or (kept in ([], {}) and k not in _KEPT_EMPTY):
                continue
            out[str(k)] = kept
        return out
    if isinstance(value, list):
        return [_compact(v, key) for v in value]
    return value


def needs_update(live: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the live policy differs from the desired one in its spec (ports' protocols normalised to TCP) or its
    labels (exactly: a label someone added is taken off again)."""
    live_spec = _compact(normalized_spec(live.get("spec") or {}))
    want_spec = _compact(normalized_spec(desired.get("spec") or {}))
    live_labels = dict((live.get("metadata") or {}).get("labels") or {})
    want_labels = dict((desired.get("metadata") or {}).get("labels") or {})
    return bool(live_spec != want_spec or live_labels != want_labels)

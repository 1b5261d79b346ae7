"""The permissions the operator's ServiceAccount needs, as SubjectAccessReview checks.

The data is derived at import time from the operator's own rules, :data:`raykube.api.rbac.OPERATOR_RULES` (what the
RayCluster controller calls, in every watched namespace) and :data:`raykube.api.rbac.LEADER_ELECTION_RULES` (in the
leader-election namespace only). Those rules are the single source the Helm chart's ClusterRole is generated from,
and KubeRay's own ClusterRole (``ray-operator/config/rbac/role.yaml`` and ``leader_election_role.yaml`` at v1.7.0)
is a superset of them (both write events.k8s.io/v1 Events): a denied check is a real gap for raykube, and for KubeRay
too. A KubeRay operator older than v1.7.0 writes core/v1 Events instead (its ClusterRole grants core ``events``, not
``events.k8s.io``), so for one the doctor checks those. ``networkpolicies`` are checked only for an operator with
the RayClusterNetworkPolicy gate on: nothing else lists them, and KubeRay before v1.7.0 has no such rule. The doctor
never reads the chart's files: an installed package has none.

An operator that watches every namespace lists and watches at the cluster scope, so for it the ``list`` and
``watch`` checks are also made without a namespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Final

from raykube.api.constants import GATE_RAYCLUSTER_NETWORK_POLICY
from raykube.api.rbac import LEADER_ELECTION_RULES, OPERATOR_RULES, Rule
from raykube.doctor.model import OperatorInfo


@dataclass(frozen=True)
class AccessCheck:
    verb: str
    group: str
    resource: str
    subresource: str
    namespace: str  # "" = cluster scope


@dataclass(frozen=True)
class Permission:
    verb: str
    group: str
    resource: str
    subresource: str


def _expand(rules: Sequence[Rule]) -> tuple[Permission, ...]:
    out: list[Permission] = []
    for rule in rules:
        for resource in rule.resources:
            name, _, sub = resource.partition("/")
            out.extend(Permission(verb, rule.group, name, sub) for verb in rule.verbs)
    return tuple(out)


# What the RayCluster controller needs in each namespace it watches.
OPERATOR_ACCESS: Final = _expand(OPERATOR_RULES)
# What leader election needs in the leader-election namespace.
LEADER_ELECTION_ACCESS: Final = _expand(LEADER_ELECTION_RULES)
# Verbs an informer uses; at the cluster scope for an operator that watches every namespace.
WATCH_VERBS: Final = ("list", "watch")


EVENTS_GROUP: Final = "events.k8s.io"
NETWORKING_GROUP: Final = "networking.k8s.io"


def writes_core_events(op: OperatorInfo) -> bool:
    """KubeRay's operator before v1.7.0 (an image tagged v1.6 or older): its controllers write core/v1 Events."""
    return op.implementation == "kuberay" and re.search(r":v?1\.[0-6](\.\d+)?$", op.image) is not None


def needs_network_policies(op: OperatorInfo) -> bool:
    """The NetworkPolicy controller runs: the RayClusterNetworkPolicy gate is on (KubeRay v1.7.0, alpha, off)."""
    return bool(op.feature_gates.get(GATE_RAYCLUSTER_NETWORK_POLICY))


def operator_access(op: OperatorInfo) -> tuple[Permission, ...]:
    """What ``op``'s controllers need: :data:`OPERATOR_ACCESS`, with core ``events`` for an operator that writes
    core/v1 Events instead of events.k8s.io/v1 ones, and ``networkpolicies`` only with the RayClusterNetworkPolicy
    gate on (KubeRay before v1.7.0 has neither the controller nor the rule)."""
    access = OPERATOR_ACCESS
    if not needs_network_policies(op):
        access = tuple(p for p in access if (p.group, p.resource) != (NETWORKING_GROUP, "networkpolicies"))
    if not writes_core_events(op):
        return access
    return tuple(replace(p, group="") if (p.group, p.resource) == (EVENTS_GROUP, "events") else p for p in access)


def checks_for(op: OperatorInfo, namespaces: Sequence[str], *, cluster_scope: bool = False) -> Iterator[AccessCheck]:
    """The reviews for one operator: its rules in each of ``namespaces`` (or once at the cluster scope), the
    informers' list/watch at the cluster scope when it watches everything, and leader election."""
    scopes = [""] if cluster_scope else list(namespaces)
    access = operator_access(op)
    for namespace in scopes:
        for p in access:
            yield AccessCheck(p.verb, p.group, p.resource, p.subresource, namespace)
    if not op.watch_namespaces and not cluster_scope:
        for p in access:
            if p.verb in WATCH_VERBS:
                yield AccessCheck(p.verb, p.group, p.resource, p.subresource, "")
    if op.leader_election:
        for p in LEADER_ELECTION_ACCESS:
            yield AccessCheck(p.verb, p.group, p.resource, p.subresource, op.leader_election_namespace)

"""Kubernetes NetworkPolicy semantics, judged from the objects alone (the sandbox enforces none: docs/sandbox.md).

The rules of ``networking.k8s.io/v1`` as the API documents them:

* A policy selects the Pods of its own namespace that its ``spec.podSelector`` matches (``{}``: every Pod).
* Its types are ``spec.policyTypes``; left out, Ingress, plus Egress when it has ``egress`` rules (the API server's
  default).
* A Pod that no policy of a type selects is unrestricted in that direction. One that some do may only receive (send)
  what at least one rule of one of them admits: policies are additive, they never deny what another allows.
* A rule admits a peer when its ``from`` (``to``) is absent or empty (anyone), or one of its peers matches: an
  ``ipBlock`` (the address in ``cidr`` and in no ``except``), a ``podSelector`` alone (Pods of the policy's namespace),
  a ``namespaceSelector`` alone (every Pod of the matching namespaces) or both (those Pods of those namespaces).
* And the port when its ``ports`` is absent or empty (every port), or an entry matches: ``protocol`` (TCP when left
  out), ``port`` absent (every port of the protocol), a number (up to ``endPort``), or a name, resolved against the
  container ports of the Pod that receives the traffic.
* A connection from A to B needs both A's egress and B's ingress to admit it.

What the objects cannot say is answered ``None`` ("cannot tell"), never guessed: a namespace's labels other than
``kubernetes.io/metadata.name`` (the doctor does not list Namespaces), an ``ipBlock`` for a Pod whose address is
unknown (unless the block is every address), a host-network Pod (the API leaves policies' effect on those to the
CNI). The rules report only what is certain, so an unknown reads as "may be
allowed".

Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from raykube.doctor.snapshot import Obj
from raykube.kube import objects

Direction = Literal["Ingress", "Egress"]
INGRESS: Final[Direction] = "Ingress"
EGRESS: Final[Direction] = "Egress"
TCP: Final = "TCP"
UDP: Final = "UDP"
# Kubernetes sets this label on every Namespace (v1.21+), so it is the one namespace label known without listing them.
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
MAX_PORT: Final = 65535
EVERY_PORT: Final = ((1, MAX_PORT),)

Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, inclusive


@dataclass(frozen=True)
class Endpoint:
    """One side of a connection. A Pod has a namespace; ``namespace=None`` is an address outside every Pod.

    ``namespace_labels``: the labels of its namespace when known (None: only ``kubernetes.io/metadata.name``);
    ``ports``: its named container ports, ``name -> (number, protocol)``, what a named port in a policy resolves to.
    """

    namespace: str | None
    labels: Mapping[str, str] = field(default_factory=dict)
    ip: str | None = None
    namespace_labels: Mapping[str, str] | None = None
    ports: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    what: str = ""  # how the findings name it ("workers of group gpu", "the operator")
    host_network: bool = False  # policies' effect on host-network Pods is left to the CNI: never judged

    def known_namespace_labels(self) -> dict[str, str]:
        labels = dict(self.namespace_labels or {})
        if self.namespace is not None:
            labels.setdefault(NAMESPACE_NAME_LABEL, self.namespace)
        return labels


def pod_endpoint(pod: Mapping[str, Any], what: str = "") -> Endpoint:
    """A Pod object as an :class:`Endpoint`: its namespace, labels, IP and named container ports."""
    ports: dict[str, tuple[int, str]] = {}
    spec = pod.get("spec") or {}
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        for port in container.get("ports") or []:
            name, number = port.get("name"), port.get("containerPort")
            if name and isinstance(number, int):
                ports.setdefault(str(name), (number, str(port.get("protocol") or TCP)))
    ip = (pod.get("status") or {}).get("podIP")
    return Endpoint(
        namespace=objects.namespace(pod) or None,
        labels=dict(objects.labels(pod)),
        ip=str(ip) if ip else None,
        ports=ports,
        what=what,
        host_network=bool(spec.get("hostNetwork")),
    )


# ------------------------------------------------------------------------------------------------ three-valued logic
def _and(*values: bool | None) -> bool | None:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values: Iterable[bool | None]) -> bool | None:
    seen_unknown = False
    for value in values:
        if value is True:
            return True
        seen_unknown = seen_unknown or value is None
    return None if seen_unknown else False


# ------------------------------------------------------------------------------------------------ selectors
def _requirement(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[str(key)] in values
    if op == "NotIn":
        return not present or labels[str(key)] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    return False  # an operator the API server would have refused


def selector_matches(
    selector: Mapping[str, Any] | None, labels: Mapping[str, str], *, complete: bool = True
) -> bool | None:
    """A ``LabelSelector`` against ``labels`` (``{}`` matches everything). With ``complete=False`` only some of the
    object's labels are known: a requirement on an unknown key answers None unless a known one already fails."""
    selector = selector or {}
    results: list[bool | None] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        if not complete and key not in labels:
            results.append(None)
        else:
            results.append(labels.get(str(key)) == value)
    for expression in selector.get("matchExpressions") or []:
        if not complete and expression.get("key") not in labels:
            results.append(None)
        else:
            results.append(_requirement(expression, labels))
    return _and(*results)


def _ip_in_block(block: Mapping[str, Any], ip: str | None) -> bool | None:
    try:
        network = ipaddress.ip_network(str(block.get("cidr") or ""), strict=False)
        excepts = [ipaddress.ip_network(str(e), strict=False) for e in block.get("except") or []]
    except ValueError:
        return False  # the API server refuses an invalid CIDR; nothing matches it
    if ip is None:
        # An unknown address is surely inside a block of every address (0.0.0.0/0, ::/0) that excepts nothing.
        return True if network.prefixlen == 0 and not excepts else None
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return None
    if address.version != network.version or address not in network:
        return False
    return not any(address.version == e.version and address in e for e in excepts)


def peer_matches(peer: Mapping[str, Any], policy_namespace: str, endpoint: Endpoint) -> bool | None:
    """Whether a ``NetworkPolicyPeer`` of a policy in ``policy_namespace`` matches ``endpoint``."""
    if endpoint.host_network:
        return None  # its traffic carries the node's address: whether any peer matches it is up to the CNI
    if "ipBlock" in peer:
        return _ip_in_block(peer.get("ipBlock") or {}, endpoint.ip)
    has_pods, has_namespaces = "podSelector" in peer, "namespaceSelector" in peer
    if not has_pods and not has_namespaces:
        return False  # an empty peer is refused by the API server
    if endpoint.namespace is None:
        return False  # selectors match Pods only
    if has_namespaces:
        in_namespace = selector_matches(
            peer.get("namespaceSelector"),
            endpoint.known_namespace_labels(),
            complete=endpoint.namespace_labels is not None,
        )
    else:
        in_namespace = endpoint.namespace == policy_namespace
    pods = selector_matches(peer.get("podSelector"), endpoint.labels) if has_pods else True
    return _and(in_namespace, pods)


# ------------------------------------------------------------------------------------------------ port ranges
def _normalise(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted((max(1, lo), min(MAX_PORT, hi)) for lo, hi in ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _intersect(a: Ranges, b: Ranges) -> Ranges:
    out = []
    for alo, ahi in a:
        for blo, bhi in b:
            lo, hi = max(alo, blo), min(ahi, bhi)
            if lo <= hi:
                out.append((lo, hi))
    return _normalise(out)


def _contains(ranges: Ranges, port: int) -> bool:
    return any(lo <= port <= hi for lo, hi in ranges)


def format_ranges(ranges: Ranges) -> str:
    if not ranges:
        return "none"
    return ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)


def _rule_ports(ports: Sequence[Mapping[str, Any]] | None, protocol: str, receiver: Endpoint) -> Ranges:
    """The ports of ``protocol`` a rule's ``ports`` admits (named ports resolved against the receiving Pod)."""
    if not ports:
        return EVERY_PORT
    out: list[tuple[int, int]] = []
    for item in ports:
        if str(item.get("protocol") or TCP) != protocol:
            continue
        value, end = item.get("port"), item.get("endPort")
        if value is None:
            return EVERY_PORT
        if isinstance(value, str) and not value.isdigit():
            named = receiver.ports.get(value)
            if named is not None and named[1] == protocol:
                out.append((named[0], named[0]))
            continue
        number = int(value)
        out.append((number, int(end) if isinstance(end, int) and end >= number else number))
    return _normalise(out)


# ------------------------------------------------------------------------------------------------ evaluation
def policy_types(spec: Mapping[str, Any]) -> list[str]:
    """A policy's types as the API server defaults them: Ingress always, Egress when it has egress rules."""
    types = spec.get("policyTypes")
    if types:
        return [str(t) for t in types]
    return [INGRESS, *([EGRESS] if spec.get("egress") else [])]


def selects(policy: Mapping[str, Any], pod: Endpoint, direction: Direction) -> bool:
    """The policy applies to ``pod`` in ``direction``: same namespace, its podSelector matches, the type is listed."""
    spec = policy.get("spec") or {}
    return (
        pod.namespace is not None
        and not pod.host_network
        and objects.namespace(policy) == pod.namespace
        and direction in policy_types(spec)
        and selector_matches(spec.get("podSelector"), pod.labels) is True
    )


@dataclass(frozen=True)
class Access:
    """What one direction (or a whole connection) admits between two endpoints, for one protocol.

    ``restricted``: some policy selects the Pod in that direction (``policies``). ``sure``: the ports certainly
    admitted; ``maybe``: those that may be (a peer that cannot be judged), ``sure`` included.
    """

    restricted: bool
    policies: tuple[Obj, ...] = ()
    sure: Ranges = EVERY_PORT
    maybe: Ranges = EVERY_PORT

    def port(self, number: int) -> bool | None:
        if _contains(self.sure, number):
            return True
        return None if _contains(self.maybe, number) else False

    @property
    def every_port(self) -> bool | None:
        if self.sure == EVERY_PORT:
            return True
        return None if self.maybe == EVERY_PORT else False


UNRESTRICTED: Final = Access(restricted=False)


def direction_access(
    policies: Iterable[Obj], pod: Endpoint, peer: Endpoint, direction: Direction, protocol: str = TCP
) -> Access:
    """What ``pod``'s policies of ``direction`` admit to or from ``peer``: Ingress, ``peer`` sends to ``pod``;
    Egress, ``pod`` sends to ``peer``. Named ports resolve against the receiving side."""
    selecting = tuple(p for p in policies if selects(p, pod, direction))
    if not selecting:
        return UNRESTRICTED
    receiver = pod if direction == INGRESS else peer
    key, peers_key = ("ingress", "from") if direction == INGRESS else ("egress", "to")
    sure: list[tuple[int, int]] = []
    maybe: list[tuple[int, int]] = []
    for policy in selecting:
        namespace = objects.namespace(policy)
        for rule in (policy.get("spec") or {}).get(key) or []:
            peers = rule.get(peers_key)
            admitted = True if not peers else _or(peer_matches(p, namespace, peer) for p in peers)
            if admitted is False:
                continue
            ports = _rule_ports(rule.get("ports"), protocol, receiver)
            maybe.extend(ports)
            if admitted is True:
                sure.extend(ports)
    return Access(True, selecting, _normalise(sure), _normalise(maybe))


PolicyLookup = Callable[[str], Sequence[Obj] | None]


def connection(
    lookup: PolicyLookup, source: Endpoint, target: Endpoint, protocol: str = TCP
) -> tuple[Access, Access, Access]:
    """(egress of ``source``, ingress of ``target``, both together) for traffic from ``source`` to ``target``.
    ``lookup(namespace)`` gives a namespace's policies, None when they were not read (that side then counts as
    unrestricted: only what was read is judged)."""
    egress = ingress = UNRESTRICTED
    if source.namespace is not None and (found := lookup(source.namespace)) is not None:
        egress = direction_access(found, source, target, EGRESS, protocol)
    if target.namespace is not None and (found := lookup(target.namespace)) is not None:
        ingress = direction_access(found, target, source, INGRESS, protocol)
    both = Access(
        egress.restricted or ingress.restricted,
        egress.policies + ingress.policies,
        _intersect(egress.sure, ingress.sure),
        _intersect(egress.maybe, ingress.maybe),
    )
    return egress, ingress, both

"""NetworkPolicies that break a RayCluster, judged statically (:mod:`raykube.doctor.facts.netpol`): a policy that
selects a Ray Pod and, with its policy types, denies traffic Ray needs.

* E06: an egress policy on Ray Pods with no rule to DNS (UDP and TCP 53, to kube-dns or anywhere): workers cannot
  resolve ``<cluster>-head-svc`` and stay in ``wait-gcs-ready``.
* E03: the cluster's Pods cannot reach each other on every port (GCS 6379, dashboard 8265, client 10001, and the
  random ports of the raylet, object manager and workers).
* E07: the head's dashboard port cannot be reached from the operator (RayJob and RayService status checks) or from a
  K8sJobMode RayJob's submitter Pods (``ray job submit``).

KubeRay v1.7.0's own policies (gate RayClusterNetworkPolicy, ``raykube.builders.networkpolicy``) always admit the
cluster's Pods to each other and a K8sJobMode submitter to the dashboard, so E03 and the submitter half of E07 stay
quiet on them. They add no DNS rule and no rule for the operator, on purpose (``networkpolicy_controller.go``): under
``DenyAll``/``DenyAllEgress`` without a user DNS rule E06 fires, and under ``DenyAll``/``DenyAllIngress`` the
operator's status checks of a RayJob's or RayService's cluster are cut off (E07), which is what v1.7.0 really does.

Only what is certain is reported: a peer that cannot be judged (a namespace label the doctor does not know, an
``ipBlock`` for an address it does not know) counts as allowing, and a namespace whose policies were not read counts
as having none. Findings are ``likely``: a policy blocks only where the CNI enforces policies.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from raykube.api import constants as c
from raykube.builders import pods as build_pods
from raykube.builders.options import BuildOptions
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import ClusterView
from raykube.doctor.facts import netpol as np
from raykube.doctor.model import Evidence, Finding, OperatorInfo
from raykube.doctor.rules.base import (
    STAGE_DOWNSTREAM,
    STAGE_SERVICE,
    checker,
    field_evidence,
    finding,
    listing,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

NETPOL = rule(
    "E03",
    "NETWORK_POLICY_BLOCKS",
    STAGE_SERVICE,
    "A NetworkPolicy keeps the Ray Pods of one cluster from reaching each other on every port",
    ["ray-project/kuberay#1282", "ray-project/kuberay#4638"],
)
DNS = rule(
    "E06",
    "NETWORK_POLICY_BLOCKS_DNS",
    STAGE_SERVICE,
    "An egress NetworkPolicy on Ray Pods allows no DNS (UDP/TCP 53): the head Service's name does not resolve",
    ["ray-project/kuberay#4638", "kuberay ray-operator/config/samples/ray-cluster.network-policy-deny-all.yaml"],
)
DASHBOARD = rule(
    "E07",
    "NETWORK_POLICY_BLOCKS_DASHBOARD",
    STAGE_DOWNSTREAM,
    "A NetworkPolicy keeps the operator or a RayJob's submitter from the head's dashboard port",
    ["ray-project/kuberay#4638"],
)

DNS_PORT: Final = 53
# kube-dns and CoreDNS Pods in kube-system carry k8s-app=kube-dns; their container ports are named dns (UDP) and
# dns-tcp (TCP). Their address is not known here, so only a rule to them by labels, or to anywhere, is certain.
KUBE_DNS: Final = np.Endpoint(
    namespace="kube-system",
    labels={"k8s-app": "kube-dns"},
    ports={"dns": (DNS_PORT, np.UDP), "dns-tcp": (DNS_PORT, np.TCP)},
    what="kube-dns",
)
DNS_RULE: Final = (
    "to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}, "
    "podSelector: {matchLabels: {k8s-app: kube-dns}}}], ports: [{protocol: UDP, port: 53}, {protocol: TCP, port: 53}]"
)


@dataclass(frozen=True)
class Member:
    """One group of the cluster (the head, or a worker group) by one representative Pod."""

    group: str
    endpoint: np.Endpoint
    replicas: int

    @property
    def head(self) -> bool:
        return self.group == c.HEAD_GROUP_NAME


def _lookup(snap: Snapshot) -> np.PolicyLookup:
    def lookup(namespace: str) -> Sequence[Obj] | None:
        if snap.namespaces is not None and namespace not in snap.namespaces:
            return None
        return snap.in_namespace(s.NETWORKPOLICIES, namespace)

    return lookup


def _judged(snap: Snapshot) -> Iterator[tuple[np.PolicyLookup, ClusterView]]:
    """The clusters whose NetworkPolicies are judged, with the policy lookup: none when policies were not read (a
    Not checked line says why) or there are none (nothing is restricted); never a suspended, deleted or externally
    managed cluster."""
    if not snap.has(s.NETWORKPOLICIES) or not snap.all(s.NETWORKPOLICIES):
        return
    lookup = _lookup(snap)
    for view in facts.cluster_views(snap):
        if not (view.suspended or view.managed_elsewhere or view.deleting):
            yield lookup, view


def _built(view: ClusterView, group_index: int | None) -> Obj | None:
    """The Pod the operator would make, for a group that has none yet (its labels and container ports)."""
    if view.model is None:
        return None
    try:
        if group_index is None:
            pod = build_pods.head_pod(view.model, BuildOptions())
        else:
            pod = build_pods.worker_pod(view.model, group_index, BuildOptions(), replica_index=0)
    except Exception:  # a spec the builders refuse: its own rule (A05) says why
        return None
    pod.setdefault("metadata", {})["namespace"] = view.namespace
    return pod


def members(view: ClusterView) -> list[Member]:
    """The head and each worker group with a Pod (or wanting one), each by one Pod: a live one, else the one the
    operator would make. Cached per cluster (the three checkers share it)."""
    cache: dict[str, list[Member]] = view.snap.extra.setdefault("netpol_members", {})
    if view.key not in cache:
        cache[view.key] = _members(view)
    return cache[view.key]


def _members(view: ClusterView) -> list[Member]:
    out: list[Member] = []
    head = view.head if view.head is not None else _built(view, None)
    if head is not None:
        out.append(Member(c.HEAD_GROUP_NAME, np.pod_endpoint(head, "the head"), 1))
    for group in view.groups:
        pod = next(iter(group.live_pods), None)
        wanted = max(group.desired or 0, len(group.live_pods))
        if pod is None and wanted > 0:
            pod = _built(view, group.index)
        if pod is not None:
            out.append(Member(group.name, np.pod_endpoint(pod, f"workers of group {group.name}"), wanted))
    return out


def _selector_text(selector: Mapping[str, Any] | None) -> str:
    selector = selector or {}
    terms = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    terms += [
        f"{e.get('key')} {e.get('operator')} {tuple(e.get('values') or ())}".rstrip(" ()")
        for e in selector.get("matchExpressions") or []
    ]
    return ", ".join(terms) or "{} (every Pod)"


def _labels_text(labels: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items()) or "no labels"


def _kuberay_made(policy: Obj) -> bool:
    return objects.labels(policy).get(c.K8S_CREATED_BY_LABEL) == c.COMPONENT_NAME and any(
        ref.get("kind") == c.KIND_RAYCLUSTER for ref in objects.meta(policy).get("ownerReferences") or []
    )


def _policy_evidence(policies: Sequence[Obj], key: str, member: np.Endpoint) -> list[Evidence]:
    """Each policy's selector that matched the Pod, and its rules of ``key`` (``ingress``/``egress``)."""
    out: list[Evidence] = []
    for policy in policies[:3]:
        ref = facts.ref(policy, "NetworkPolicy")
        spec = policy.get("spec") or {}
        out.append(
            field_evidence(
                ref,
                f"spec.podSelector (selects {member.what}; policyTypes {np.policy_types(spec)})",
                _selector_text(spec.get("podSelector")),
            )
        )
        out.append(field_evidence(ref, f"spec.{key}", spec.get(key) or []))
    return out


def _unique(policies: Iterable[Obj]) -> list[Obj]:
    """Policies once each, in order (they are dicts: by identity)."""
    seen: dict[int, Obj] = {}
    for policy in policies:
        seen.setdefault(id(policy), policy)
    return list(seen.values())


def _names(policies: Sequence[Obj]) -> list[str]:
    return list(dict.fromkeys(objects.name(p) for p in policies))


def _subject(policies: Sequence[Obj], verb: str) -> str:
    """``NetworkPolicy a keeps`` / ``NetworkPolicies a, b keep``."""
    names = _names(policies)
    if len(names) == 1:
        return f"NetworkPolicy {names[0]} {verb}s"
    return f"NetworkPolicies {listing(names)} {verb}"


def _owned_fix(policies: Sequence[Obj], where: str, rule_text: str) -> str:
    """How to add a rule: in spec.networkPolicy for KubeRay's own policies (the operator rewrites them), else in the
    policy or a policy of its own (policies add up)."""
    if any(_kuberay_made(p) for p in policies):
        return (
            f"The operator made {listing(_names([p for p in policies if _kuberay_made(p)]))} from "
            f"spec.networkPolicy and rewrites edits to it: add the rule to spec.networkPolicy.{where} ({rule_text}), "
            "or add a NetworkPolicy of your own that allows it (policies add up)."
        )
    return f"Add the rule to {listing(_names(policies))} ({rule_text}), or a NetworkPolicy of your own that allows it."


# ------------------------------------------------------------------------------------------------ E06: DNS
@checker(DNS)
def check_dns(snap: Snapshot) -> Iterator[Finding]:
    for lookup, view in _judged(snap):
        cut: list[tuple[Member, bool | None, bool | None, tuple[Obj, ...]]] = []
        blocked_at_dns: list[Obj] = []  # ingress policies in kube-system that shut kube-dns itself
        for member in members(view):
            egress_udp, ingress_udp, udp = np.connection(lookup, member.endpoint, KUBE_DNS, np.UDP)
            egress_tcp, ingress_tcp, tcp = np.connection(lookup, member.endpoint, KUBE_DNS, np.TCP)
            udp_ok, tcp_ok = udp.port(DNS_PORT), tcp.port(DNS_PORT)
            if udp_ok is False or tcp_ok is False:
                cut.append((member, udp_ok, tcp_ok, egress_udp.policies or egress_tcp.policies))
                blocked_at_dns += [*ingress_udp.policies, *ingress_tcp.policies]
        if not cut:
            continue
        workers_cut = [m for m, udp_ok, _, _ in cut if udp_ok is False and not m.head]
        policies = _unique([*(p for _, _, _, ps in cut for p in ps), *blocked_at_dns])
        evidence: list[Evidence] = []
        if blocked_at_dns:
            evidence += _policy_evidence(_unique(blocked_at_dns), "ingress", KUBE_DNS)
        for member, udp_ok, tcp_ok, selecting in cut:
            missing = " and ".join(p for p, ok in (("UDP 53", udp_ok), ("TCP 53", tcp_ok)) if ok is False)
            evidence += _policy_evidence(selecting, "egress", member.endpoint)
            evidence.append(
                field_evidence(
                    view.ref,
                    f"{member.endpoint.what} → kube-dns",
                    f"no rule admits {missing} to kube-dns (kube-system, k8s-app=kube-dns) or to anywhere",
                    "static",
                )
            )
        whom = " and ".join(m.endpoint.what for m, _, _, _ in cut)
        only_tcp = all(udp_ok is not False for _, udp_ok, _, _ in cut)
        kuberay = [p for p in policies if _kuberay_made(p)]
        effects = {t.dns(view.key, m.group) for m, udp_ok, _, _ in cut if udp_ok is False}
        for member in workers_cut:
            effects |= {t.gcs(view.key), t.workers(view.key, member.group)}
        yield finding(
            DNS,
            cluster=view.ref,
            obj=facts.ref(policies[0], "NetworkPolicy") if policies else view.ref,
            severity="error" if workers_cut else "warning",
            confidence="likely",
            title=f"{_subject(policies, 'allow')} {whom} no DNS"
            + (" over TCP (UDP 53 is allowed)" if only_tcp else "")
            + (
                f": they cannot resolve {view.head_service_name} and never join"
                if workers_cut
                else ": answers too long for UDP fail"
                if only_tcp
                else ": the head resolves no name (a GCS fault tolerance Redis, runtime environments, the job's own)"
            ),
            evidence=evidence,
            explanation="An egress policy that selects a Pod lets it send only what one of its rules admits. Workers "
            f"reach the GCS by the name {view.head_service_name}.{view.namespace}.svc, so without UDP (and TCP, for "
            f"long answers) port 53 to the cluster DNS the init container {c.WAIT_GCS_READY_INIT_CONTAINER} loops on "
            '"Waiting for GCS to be ready" and the workers never join.'
            + (
                " KubeRay v1.7.0's own policies add no DNS rule on purpose (the operator does not assume how DNS is "
                "deployed): under DenyAll and DenyAllEgress every RayCluster needs one."
                if kuberay
                else ""
            ),
            remediation=[_owned_fix(policies, "head.egressRules and worker.egressRules", DNS_RULE)],
            effects=effects,
        )


# ------------------------------------------------------------------------------------------------ E03: Ray <-> Ray
@dataclass(frozen=True)
class _Path:
    source: Member
    target: Member
    egress: np.Access
    ingress: np.Access
    both: np.Access
    ports: tuple[tuple[str, int], ...]  # the named Ray ports of the target that are denied

    def describe(self) -> str:
        named = ", ".join(f"{name} {port}" for name, port in self.ports)
        return f"{self.source.endpoint.what} → {self.target.endpoint.what} ({named + ' and ' if named else ''}" + (
            "Ray's other ports)"
        )


def _head_ports(view: ClusterView) -> tuple[tuple[str, int], ...]:
    return (("GCS", view.gcs_port), ("dashboard", view.dashboard_port), ("client", view.client_port))


def _paths(view: ClusterView, lookup: np.PolicyLookup) -> list[_Path]:
    found: list[_Path] = []
    group = members(view)
    for source in group:
        for target in group:
            if source is target and (source.head or source.replicas < 2):
                continue  # a Pod talks to itself over loopback, which no policy governs
            egress, ingress, both = np.connection(lookup, source.endpoint, target.endpoint, np.TCP)
            if both.every_port is not False:
                continue
            named = _head_ports(view) if target.head else ()
            ports = tuple((name, port) for name, port in named if both.port(port) is False)
            found.append(_Path(source, target, egress, ingress, both, ports))
    return found


@checker(NETPOL)
def check_ray_paths(snap: Snapshot) -> Iterator[Finding]:
    for lookup, view in _judged(snap):
        paths = _paths(view, lookup)
        if not paths:
            continue
        evidence: list[Evidence] = []
        blamed: list[Obj] = []
        seen: set[tuple[str, str]] = set()
        directions: set[str] = set()
        for path in paths:
            sides = [
                (access, key, member)
                for access, key, member in (
                    (path.egress, "egress", path.source),
                    (path.ingress, "ingress", path.target),
                )
                if access.restricted and access.every_port is False
            ] or [
                (access, key, member)
                for access, key, member in (
                    (path.egress, "egress", path.source),
                    (path.ingress, "ingress", path.target),
                )
                if access.restricted
            ]
            for access, key, member in sides:
                blamed += access.policies
                directions.add(key)
                if (key, member.group) not in seen:
                    seen.add((key, member.group))
                    evidence += _policy_evidence(access.policies, key, member.endpoint)
            evidence.append(
                field_evidence(
                    view.ref,
                    f"{path.source.endpoint.what} → {path.target.endpoint.what} (TCP)",
                    f"admitted ports: {np.format_ranges(path.both.sure)}; Ray needs every port",
                    "static",
                )
            )
        policies = _unique(blamed)
        gcs_cut = [p.source for p in paths if p.target.head and ("GCS", view.gcs_port) in p.ports]
        effects = {t.ray_network(view.key), t.runs_on(view.key)}
        for member in gcs_cut:
            effects |= {t.gcs(view.key), *([] if member.head else [t.workers(view.key, member.group)])}
        cluster_peer = f"{{podSelector: {{matchLabels: {{{c.RAY_CLUSTER_LABEL}: {view.name}}}}}}}"
        wanted = " and ".join(
            text for key, text in (("ingress", "ingress from"), ("egress", "egress to")) if key in directions
        )
        yield finding(
            NETPOL,
            cluster=view.ref,
            obj=facts.ref(policies[0], "NetworkPolicy") if policies else view.ref,
            severity="error",
            confidence="likely",
            title=f"{_subject(policies, 'keep')} the Ray Pods of {view.name} from each other: "
            + "; ".join(p.describe() for p in paths[:2])
            + (f" and {len(paths) - 2} more paths" if len(paths) > 2 else ""),
            evidence=evidence,
            explanation="Ray nodes talk to each other on many ports: the GCS "
            f"({view.gcs_port}), the dashboard ({view.dashboard_port}) and client ({view.client_port}) on the head, "
            "and, between every pair of Pods, the raylet, object manager, dashboard agent and worker ports, which "
            "Ray picks at random. A policy that selects a Ray Pod admits only what one of its rules (or another "
            "policy's) lists, in each direction; a connection needs the sender's egress and the receiver's ingress. "
            + (
                "Without the GCS port workers stay in wait-gcs-ready; "
                if gcs_cut
                else "With the GCS reachable the workers join, "
            )
            + "with the other ports cut, tasks, object transfers and `ray status` fail.",
            remediation=[
                _owned_fix(
                    policies,
                    "head and worker rules",
                    f"{wanted} {cluster_peer} on every port, no ports list",
                ),
                "KubeRay's own policies (spec.networkPolicy, gate RayClusterNetworkPolicy) always admit the "
                "cluster's Pods to each other.",
            ],
            effects=effects,
        )


# ------------------------------------------------------------------------------------------------ E07: the dashboard
# A RayJob done with its cluster: the operator reads its dashboard no more (a Failed one may have failed for that).
_DONE: Final = frozenset({c.JOB_DEPLOYMENT_STATUS_COMPLETE})


def _workloads(snap: Snapshot, view: ClusterView) -> tuple[list[Obj], list[Obj]]:
    """The RayJobs (not Complete) and RayServices (any in the namespace) that run on this cluster."""
    clusters = snap.in_namespace(s.RAYCLUSTERS, view.namespace)
    jobs = [
        j
        for j in snap.in_namespace(s.RAYJOBS, view.namespace)
        if view.name in s.workload_cluster_names(j, clusters)
        and (j.get("status") or {}).get("jobDeploymentStatus") not in _DONE
    ]
    services = [
        r
        for r in snap.in_namespace(s.RAYSERVICES, view.namespace)
        if view.name in s.workload_cluster_names(r, clusters)
    ]
    return jobs, services


def _operator_endpoint(snap: Snapshot, op: OperatorInfo) -> np.Endpoint:
    what = f"the operator ({op.namespace}/{op.name})"
    pods = [p for p in facts.operator_pods(snap, op) if not facts.terminating(p)]
    if pods:
        return np.pod_endpoint(pods[0], what)
    deployment = snap.get(s.DEPLOYMENTS, op.namespace, op.name) or {}
    template = (deployment.get("spec") or {}).get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    return np.Endpoint(namespace=op.namespace, labels=dict(labels), what=what)


def _submitter_endpoint(job: Obj) -> np.Endpoint:
    """The K8sJobMode submitter Pods: the template's labels with KubeRay's (raykube.builders.rayjob.submitters)."""
    spec = job.get("spec") or {}
    template_labels = ((spec.get("submitterPodTemplate") or {}).get("metadata") or {}).get("labels") or {}
    labels = {
        **{str(k): str(v) for k, v in template_labels.items()},
        c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: objects.name(job),
        c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYJOB,
        c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME,
    }
    return np.Endpoint(
        namespace=objects.namespace(job), labels=labels, what=f'the submitter of RayJob "{objects.name(job)}"'
    )


def _dashboard_rule(source: np.Endpoint, head_namespace: str, port: int) -> str:
    """An ingress rule for the head admitting ``source`` on the dashboard port, written as YAML flow."""
    keys = (c.K8S_APP_NAME_LABEL, c.RAY_ORIGINATED_FROM_CR_NAME_LABEL, c.RAY_ORIGINATED_FROM_CRD_LABEL)
    wanted = {k: v for k, v in source.labels.items() if k in keys} or dict(source.labels)
    peer = "podSelector: {matchLabels: {" + ", ".join(f"{k}: {v}" for k, v in wanted.items()) + "}}"
    if source.namespace != head_namespace:
        peer = f"namespaceSelector: {{matchLabels: {{{np.NAMESPACE_NAME_LABEL}: {source.namespace}}}}}, " + peer
    return f"from: [{{{peer}}}], ports: [{{protocol: TCP, port: {port}}}]"


@checker(DASHBOARD)
def check_dashboard_reach(snap: Snapshot) -> Iterator[Finding]:
    for lookup, view in _judged(snap):
        jobs, services = _workloads(snap, view)
        if not jobs and not services:
            continue  # the operator reads a plain RayCluster's dashboard for nothing
        head = next((m for m in members(view) if m.head), None)
        if head is None:
            continue
        port = view.dashboard_port
        sources: list[tuple[np.Endpoint, list[Obj], str]] = []
        workloads = [*jobs, *services]
        names = listing(f'{w.get("kind")} "{objects.name(w)}"' for w in workloads)
        read = " or ".join(what for what, there in (("job", jobs), ("Serve", services)) if there)
        for op in view.ops:
            sources.append(
                (
                    _operator_endpoint(snap, op),
                    workloads,
                    f"{names}: the operator cannot read {read} status"
                    + (f" (the RayJob fails with {c.JOB_REASON_STATUS_CHECK_TIMEOUT_EXCEEDED})" if jobs else ""),
                )
            )
        for job in jobs:
            mode = str((job.get("spec") or {}).get("submissionMode") or c.SUBMISSION_MODE_K8S_JOB)
            if mode == c.SUBMISSION_MODE_K8S_JOB:
                sources.append(
                    (_submitter_endpoint(job), [job], "`ray job submit` fails and the submitter Job retries")
                )
        for source, affected, consequence in sources:
            egress, ingress, both = np.connection(lookup, source, head.endpoint, np.TCP)
            if both.port(port) is not False:
                continue
            evidence: list[Evidence] = []
            policies: list[Obj] = []
            fixes: list[str] = []
            if ingress.port(port) is False:
                evidence += _policy_evidence(ingress.policies, "ingress", head.endpoint)
                policies += ingress.policies
                rule_text = _dashboard_rule(source, view.namespace, port)
                fixes.append(_owned_fix(ingress.policies, "head.ingressRules", rule_text))
            if egress.port(port) is False:
                evidence += _policy_evidence(egress.policies, "egress", source)
                policies += egress.policies
                fixes.append(
                    f"Let {source.what} out: an egress rule in {listing(_names(egress.policies))} (namespace "
                    f"{source.namespace}) to Pods labelled {c.RAY_CLUSTER_LABEL}={view.name}, "
                    f"{c.RAY_NODE_TYPE_LABEL}={c.NODE_TYPE_HEAD} in namespace {view.namespace}, TCP {port}."
                )
            evidence.append(
                field_evidence(
                    view.ref,
                    f"{source.what} → the head's dashboard (TCP {port})",
                    f"no rule admits it (its Pods: {_labels_text(source.labels)} in namespace {source.namespace})",
                    "static",
                )
            )
            effects = {t.runs_on(view.key)} | {
                t.job_dashboard(s.key_of(w)) for w in affected if w.get("kind") == c.KIND_RAYJOB
            }
            kuberay = any(_kuberay_made(p) for p in policies)
            yield finding(
                DASHBOARD,
                cluster=view.ref,
                obj=facts.ref(policies[0], "NetworkPolicy") if policies else view.ref,
                severity="error",
                confidence="likely",
                title=f"{_subject(policies, 'keep')} {source.what} from the head's dashboard port "
                f"{port}: {consequence}",
                evidence=evidence,
                explanation="The operator follows a RayJob's job and a RayService's Serve applications through the "
                "head's dashboard (HTTP on the dashboard port, from its own Pod), and a K8sJobMode submitter runs "
                "`ray job submit` against it. A policy that selects the head admits only what its ingress rules list."
                + (
                    " KubeRay v1.7.0's own policies admit a K8sJobMode submitter but leave the operator out on "
                    "purpose: platforms add it to spec.networkPolicy.head.ingressRules."
                    if kuberay
                    else ""
                ),
                remediation=fixes,
                effects=effects,
            )

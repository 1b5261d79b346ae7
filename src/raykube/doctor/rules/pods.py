"""Pods: created at all (quota, Pod Security, admission), scheduled (resources, placement, GPUs), on a live node.

Scheduling is read from the scheduler's own words (``PodScheduled=False`` / ``FailedScheduling``:
``0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector. preemption:
...``), split into its reasons, and cross-checked with the objects: the Pod's requests against the largest node's
allocatable tell "can never fit" from "no room right now", and the nodeSelector against the nodes' labels says which
label no node has. The same static checks run on the Pod templates before any Pod exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from raykube.api import constants as c
from raykube.builders import names
from raykube.builders.groups import is_gpu_resource_name
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import ClusterView
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import (
    STAGE_CREATE,
    STAGE_PLACEMENT,
    checker,
    field_evidence,
    finding,
    listing,
    plural,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.golang.quantity import Quantity, format_quantity
from raykube.kube import objects

CREATE_REJECTED = rule(
    "B01",
    "POD_CREATE_REJECTED",
    STAGE_CREATE,
    "The API server rejects the operator's Pods (Pod Security, admission webhook, RBAC)",
    ["ray-project/kuberay#670", "ray docs pod-security"],
)
QUOTA_EXCEEDED = rule(
    "B07", "QUOTA_EXCEEDED", STAGE_CREATE, "A ResourceQuota rejects the Ray Pods", ["ray-project/kuberay#603"]
)
UNSCHEDULABLE_RESOURCES = rule(
    "B02",
    "UNSCHEDULABLE_RESOURCES",
    STAGE_PLACEMENT,
    "Pods stay Pending: they request more CPU/memory than a node has free (or than any node has)",
    ["ray-project/kuberay#2188", "ray docs rayservice-troubleshooting (Issue 8)"],
)
UNSCHEDULABLE_PLACEMENT = rule(
    "B03",
    "UNSCHEDULABLE_PLACEMENT",
    STAGE_PLACEMENT,
    "Pods stay Pending: nodeSelector/affinity match no node, or taints are not tolerated",
    ["ray-project/kuberay#2188", "pangeo-data/pangeo-cloud-federation#260"],
)
GPU_UNSCHEDULABLE = rule(
    "G07",
    "GPU_UNSCHEDULABLE",
    STAGE_PLACEMENT,
    "GPU Pods stay Pending: no node advertises (enough of) the GPU resource",
    ["ray-project/kuberay#321", "ray-project/kuberay#1108"],
)
SCHEDULING_GATED = rule(
    "B11", "SCHEDULING_GATED", STAGE_PLACEMENT, "Pods are held by scheduling gates (Kueue, a gang scheduler)"
)
NODE_NOT_READY = rule("N01", "NODE_NOT_READY", STAGE_PLACEMENT, "Ray Pods sit on a node that is gone or not Ready")
POD_FAILED = rule("P02", "POD_FAILED_OR_EVICTED", STAGE_PLACEMENT, "Ray Pods ended Failed (evicted, deadline, ...)")
LIMITRANGE_DEFAULTED = rule(
    "B13",
    "LIMITRANGE_DEFAULTED",
    STAGE_PLACEMENT,
    "A LimitRange gave the Ray container requests or limits its template does not set (Ray sizes itself from them)",
)
NODE_PRESSURE = rule(
    "N02",
    "NODE_PRESSURE",
    STAGE_PLACEMENT,
    "Ray Pods sit on a node under memory, disk or PID pressure: the kubelet evicts Pods and admits no new ones",
)
PREEMPTED = rule(
    "N03",
    "RAY_PODS_PREEMPTED",
    STAGE_PLACEMENT,
    "Ray Pods were preempted by Pods of a higher priority (the scheduler evicted them to make room)",
)
# The kubelet's node conditions that evict Pods (Kubernetes: node-pressure eviction).
PRESSURE_CONDITIONS = ("MemoryPressure", "DiskPressure", "PIDPressure")
# The scheduler's event on a preempted Pod, and the DisruptionTarget condition reason it sets (Kubernetes >= 1.26).
PREEMPTED_EVENT = "Preempted"
PREEMPTION_REASON = "PreemptionByScheduler"

# Kubernetes scheduler: the condition and event it writes for a Pod it cannot place.
FAILED_SCHEDULING = "FailedScheduling"
# cluster-autoscaler's events on a Pending Pod.
AUTOSCALER_EVENTS = ("TriggeredScaleUp", "NotTriggerScaleUp", "FailedScaleUp")

_ITEM = re.compile(r"^(?:(\d+)\s+)?(.*)$", re.S)
_INSUFFICIENT = re.compile(r"Insufficient ([^\s.,;]+(?:\.[^\s.,;]+)*)")
_TAINT = re.compile(r"taint \{([^}]*)\}")


@dataclass
class SchedulingVerdict:
    """What the scheduler said, sorted into the categories the rules care about."""

    message: str
    resources: dict[str, int] = field(default_factory=dict)  # resource -> number of nodes short of it
    selector: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    affinity: int = 0
    unschedulable_nodes: int = 0
    volume: bool = False
    other: list[str] = field(default_factory=list)


def parse_scheduler_message(message: str) -> SchedulingVerdict:
    """Split ``0/N nodes are available: a, b, c. preemption: ...`` into its reasons (older phrasings too)."""
    verdict = SchedulingVerdict(message)
    body = message.split(" preemption:", 1)[0].strip()
    body = body.split("nodes are available:", 1)[-1].strip().rstrip(".")
    for raw in re.split(r",\s*(?=\d+ |pod has|persistentvolumeclaim)", body):
        match = _ITEM.match(raw.strip())
        count = int(match.group(1)) if match and match.group(1) else 1
        text = match.group(2) if match else raw
        lowered = text.lower()
        if (found := _INSUFFICIENT.search(text)) is not None:
            verdict.resources[found.group(1)] = verdict.resources.get(found.group(1), 0) + count
        elif "too many pods" in lowered:
            verdict.resources["pods"] = verdict.resources.get("pods", 0) + count
        elif "node affinity/selector" in lowered or "node selector" in lowered:
            verdict.selector += count
        elif "taint" in lowered:
            taint = _TAINT.search(text)
            key = taint.group(1) if taint else text
            verdict.taints[key] = verdict.taints.get(key, 0) + count
        elif "affinity" in lowered or "topology spread" in lowered:
            verdict.affinity += count
        elif "were unschedulable" in lowered:
            verdict.unschedulable_nodes += count
        elif "persistentvolumeclaim" in lowered or "volume" in lowered:
            verdict.volume = True
        elif text.strip():
            verdict.other.append(text.strip())
    return verdict


def unscheduled(snap: Snapshot, pod: Obj) -> tuple[str, Obj | None] | None:
    """(scheduler message, its event) of a Pod the scheduler could not place, or None."""
    if facts.terminating(pod) or (pod.get("spec") or {}).get("nodeName") or facts.phase(pod) != facts.PHASE_PENDING:
        return None
    cond = facts.conditions(pod).get(facts.POD_SCHEDULED)
    events = facts.latest_events(snap.events_for(pod), FAILED_SCHEDULING)
    if cond is not None and cond.get("status") == "False" and cond.get("reason") == facts.REASON_UNSCHEDULABLE:
        return str(cond.get("message") or (facts.event_message(events[0]) if events else "")), (
            events[0] if events else None
        )
    if events:
        return facts.event_message(events[0]), events[0]
    return None


# --- nodes ----------------------------------------------------------------------------------------------------------


def _allocatable(node: Mapping[str, Any]) -> dict[str, Quantity]:
    out = {}
    for name, value in ((node.get("status") or {}).get("allocatable") or {}).items():
        amount = facts.quantity(value)
        if amount is not None:
            out[str(name)] = amount
    return out


def _tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration.get("key") == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and (toleration.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def _blocking_taints(node: Mapping[str, Any], spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tolerations = spec.get("tolerations") or []
    return [
        taint
        for taint in (node.get("spec") or {}).get("taints") or []
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint)
    ]


def _selector_ok(node: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    labels = objects.labels(node)
    return all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {}).items())


def _fmt(amount: Quantity) -> str:
    return format_quantity(amount)


@dataclass
class FitCheck:
    """Pod requests against node allocatable, ignoring what other Pods use."""

    requests: dict[str, Quantity]
    never: list[tuple[str, Quantity, Quantity | None, str]]  # resource, request, largest allocatable, node
    placeable_nodes: list[str]  # nodes that pass nodeSelector and taints
    missing_labels: dict[str, str]  # nodeSelector entries no node has


def fit_check(nodes: Sequence[Obj], spec: Mapping[str, Any]) -> FitCheck:
    requests = {k: v for k, v in facts.pod_requests(spec).items() if v.value > 0}
    placeable = [n for n in nodes if _selector_ok(n, spec) and not _blocking_taints(n, spec)]
    missing = {
        k: str(v)
        for k, v in (spec.get("nodeSelector") or {}).items()
        if not any(objects.labels(n).get(k) == v for n in nodes)
    }
    candidates = placeable or list(nodes)
    never: list[tuple[str, Quantity, Quantity | None, str]] = []
    for resource, amount in sorted(requests.items()):
        best: tuple[Quantity | None, str] = (None, "")
        for node in candidates:
            have = _allocatable(node).get(resource)
            if have is not None and (best[0] is None or have.value > best[0].value):
                best = (have, objects.name(node))
        if best[0] is None and resource not in ("cpu", "memory", "ephemeral-storage", "pods"):
            never.append((resource, amount, None, ""))
        elif best[0] is not None and amount.value > best[0].value:
            never.append((resource, amount, best[0], best[1]))
    if not never and candidates and requests:
        fits_one = any(
            all((_allocatable(n).get(r) or Quantity(Fraction(0))).value >= a.value for r, a in requests.items())
            for n in candidates
        )
        if not fits_one:
            never.append(("cpu+memory", Quantity(), None, "no single node has all of it"))
    return FitCheck(requests, never, [objects.name(n) for n in placeable], missing)


def _requests_text(requests: Mapping[str, Quantity]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in sorted(requests.items()))


def _never_text(never: Sequence[tuple[str, Quantity, Quantity | None, str]]) -> list[str]:
    out = []
    for resource, amount, largest, node in never:
        if resource == "cpu+memory":
            out.append(f"no single node has all of the requests ({node})")
        elif largest is None:
            out.append(f"requests {resource}={_fmt(amount)} but no node advertises {resource}")
        else:
            out.append(f"requests {resource}={_fmt(amount)} but the largest node ({node}) allocates {_fmt(largest)}")
    return out


# --- creation ---------------------------------------------------------------------------------------------------


def _quota_evidence(snap: Snapshot, namespace: str) -> list[Evidence]:
    out = []
    for quota in snap.in_namespace(s.QUOTAS, namespace):
        status = quota.get("status") or {}
        hard, used = status.get("hard") or {}, status.get("used") or {}
        for name in sorted(hard):
            out.append(
                field_evidence(
                    facts.ref(quota, "ResourceQuota"),
                    f"status.used/hard[{name}]",
                    f"{used.get(name, '0')}/{hard[name]}",
                )
            )
    return out


def _classify_rejection(message: str) -> tuple[str, str]:
    lowered = message.lower()
    if "exceeded quota" in lowered:
        return "quota", "A ResourceQuota in the namespace has no room for the Pod's requests or limits."
    if "podsecurity" in lowered:
        return "psa", (
            "Pod Security Admission rejects the Pod: the namespace enforces a profile (often restricted) that the "
            "Pod template does not meet."
        )
    if "cannot create resource" in lowered and "forbidden" in lowered:
        return "rbac", "The operator's ServiceAccount may not create Pods (RBAC)."
    if "admission webhook" in lowered:
        return "webhook", "A validating or mutating admission webhook denies the Pod."
    if "must specify limits" in lowered or "minimum" in lowered or "maximum" in lowered:
        return "limitrange", "A LimitRange in the namespace rejects the Pod's resources."
    return "other", "The API server rejects the Pod the operator creates."


@checker(CREATE_REJECTED, QUOTA_EXCEEDED)
def check_creation(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        if view.suspended or view.managed_elsewhere:
            continue
        events = view.operator_events or view.events
        replica_failure = facts.conditions(view.obj).get(c.CONDITION_REPLICA_FAILURE)
        failing = replica_failure is not None and replica_failure.get("status") == "True"
        targets: list[tuple[str, list[str]]] = []
        if view.head is None:
            head_events = facts.latest_events(events, c.EVENT_FAILED_TO_CREATE_HEAD_POD)
            if head_events or (
                failing and replica_failure and replica_failure.get("reason") == c.REASON_FAILED_CREATE_HEAD_POD
            ):
                targets.append((c.HEAD_GROUP_NAME, [t.create_head(view.key)]))
        worker_events = facts.latest_events(events, c.EVENT_FAILED_TO_CREATE_WORKER_POD)
        for group in view.groups:
            if len(group.live_pods) >= (group.desired or 0):
                continue
            prefix = names.worker_pod_generate_name(view.name, group.name)
            named = [e for e in worker_events if prefix in facts.event_message(e)]
            if (
                named
                or worker_events
                or (failing and replica_failure and replica_failure.get("reason") == c.REASON_FAILED_CREATE_WORKER_POD)
            ):
                targets.append((group.name, [t.create_workers(view.key, group.name)]))
        if not targets:
            continue
        head_failures = facts.latest_events(events, c.EVENT_FAILED_TO_CREATE_HEAD_POD)
        for group_name, symptoms in targets:
            chosen = head_failures if group_name == c.HEAD_GROUP_NAME else worker_events
            message = facts.event_message(chosen[0]) if chosen else str((replica_failure or {}).get("message") or "")
            kind, explanation = _classify_rejection(message)
            evidence = [facts.event_evidence(e, view.ref, snap.now) for e in chosen[:2]]
            if replica_failure is not None and failing:
                evidence.append(
                    field_evidence(
                        view.ref,
                        "status.conditions[ReplicaFailure]",
                        f"{replica_failure.get('reason')}: {replica_failure.get('message')}",
                        "cr.status",
                    )
                )
            what = "head Pod" if group_name == c.HEAD_GROUP_NAME else f"worker Pods of group {group_name}"
            if kind == "quota":
                yield finding(
                    QUOTA_EXCEEDED,
                    cluster=view.ref,
                    obj=view.ref,
                    severity="error",
                    title=f"A ResourceQuota rejects the {what}",
                    evidence=evidence + _quota_evidence(snap, view.namespace),
                    explanation=explanation,
                    remediation=[
                        "Raise the ResourceQuota (`kubectl describe quota -n "
                        f"{view.namespace}`) or lower the Pods' requests and limits."
                    ],
                    symptoms=symptoms,
                    effects=symptoms,
                )
                continue
            remediation = {
                "psa": [
                    "Give every container a restricted-compatible securityContext (allowPrivilegeEscalation: "
                    "false, runAsNonRoot, seccompProfile RuntimeDefault, capabilities drop ALL); see KubeRay's "
                    "config/security/ray-cluster.pod-security.yaml."
                ],
                "rbac": ["Grant the operator's ServiceAccount `create pods` (re-sync its ClusterRole/Role)."],
                "webhook": ["Read the webhook's message in the event and fix the template, or the webhook."],
            }.get(kind, ["Read the event's message and fix what it names."])
            yield finding(
                CREATE_REJECTED,
                cluster=view.ref,
                obj=view.ref,
                severity="error",
                title=f"The API server rejects the {what}" + (f": {message[:160]}" if message else ""),
                evidence=evidence,
                explanation=explanation,
                remediation=remediation,
                symptoms=symptoms,
                effects=symptoms,
            )


# --- scheduling -------------------------------------------------------------------------------------------------


def _pod_tokens(pods: Sequence[Obj]) -> set[str]:
    out: set[str] = set()
    for pod in pods:
        out |= t.pod_down(s.key_of(pod))
    return out


def _group_tokens(view: ClusterView, group: str) -> set[str]:
    return {t.head(view.key)} if group == c.HEAD_GROUP_NAME else {t.workers(view.key, group)}


@checker(UNSCHEDULABLE_RESOURCES, UNSCHEDULABLE_PLACEMENT, GPU_UNSCHEDULABLE)
def check_scheduling(snap: Snapshot) -> Iterator[Finding]:
    nodes = snap.all(s.NODES) if snap.has(s.NODES) else []
    for view in facts.cluster_views(snap):
        if view.suspended:
            continue
        for group, path, template in view.templates():
            pods = view.pods_of_group(group)
            stuck = [(p, u) for p in pods if (u := unscheduled(snap, p)) is not None]
            if stuck:
                yield from _unschedulable(snap, view, group, stuck, nodes)
            elif not pods and nodes:
                yield from _static_fit(view, group, path, template, nodes)


def _unschedulable(  # noqa: PLR0912 - one branch per kind of scheduler reason
    snap: Snapshot, view: ClusterView, group: str, stuck: list[tuple[Obj, tuple[str, Obj | None]]], nodes: list[Obj]
) -> Iterator[Finding]:
    pods = [p for p, _ in stuck]
    first_pod, (message, event) = stuck[0]
    verdict = parse_scheduler_message(message)
    pod_ref = facts.ref(first_pod, "Pod")
    base: list[Evidence] = [
        field_evidence(pod_ref, "status.conditions[PodScheduled]", f"False/{facts.REASON_UNSCHEDULABLE}", "pod.status")
    ]
    if event is not None:
        base.append(facts.event_evidence(event, pod_ref, snap.now))
    elif message:
        base.append(field_evidence(pod_ref, "status.conditions[PodScheduled].message", message, "pod.status"))
    autoscaler = facts.latest_events(snap.events_for(first_pod), *AUTOSCALER_EVENTS)
    base += [facts.event_evidence(e, pod_ref, snap.now) for e in autoscaler[:1]]
    what = "The head Pod" if group == c.HEAD_GROUP_NAME else f"{plural(len(pods), 'worker Pod')} of group {group}"
    effects = _pod_tokens(pods) | _group_tokens(view, group)
    spec = facts.pod_spec(first_pod)
    fit = fit_check(nodes, spec) if nodes else None
    if verdict.resources:
        gpu = [r for r in verdict.resources if is_gpu_resource_name(r)]
        spec_rule = GPU_UNSCHEDULABLE if gpu else UNSCHEDULABLE_RESOURCES
        evidence = list(base)
        if fit is not None:
            evidence.append(
                field_evidence(
                    pod_ref, "spec.containers[*].resources (requests)", _requests_text(fit.requests), "pod.spec"
                )
            )
            evidence += [
                field_evidence(None, "requests vs node allocatable", text, "node") for text in _never_text(fit.never)
            ]
        never = bool(fit and fit.never)
        resources = ", ".join(sorted(verdict.resources))
        if never:
            title = f"{what} can never be scheduled: {_never_text(fit.never)[0] if fit else resources}"
        else:
            title = f"{what} cannot be scheduled now: not enough free {resources} on any node"
        yield finding(
            spec_rule,
            cluster=view.ref,
            obj=pod_ref,
            severity="error",
            confidence="confirmed" if (never or fit is None) else "likely",
            title=title,
            evidence=evidence,
            explanation=(
                "No node is large enough, so waiting will not help: the Pods stay Pending until the requests "
                "shrink or bigger nodes join."
                if never
                else "Nodes are big enough but other Pods hold the capacity; the Pods wait until room frees up or "
                "the cluster autoscaler adds a node" + (" (it has reacted, see its event)." if autoscaler else ".")
            )
            + (" GPU Pods also need the device plugin, which makes nodes advertise the GPU resource." if gpu else ""),
            remediation=[
                f"Lower the requests in {('spec.headGroupSpec' if group == c.HEAD_GROUP_NAME else 'the worker group')}"
                ".template (and num-cpus/memory in rayStartParams), or add larger nodes / a node pool.",
                "Check the Ray autoscaler's maxReplicas against what the cluster can hold.",
            ],
            effects=effects,
        )
    placement = verdict.selector or verdict.taints or verdict.affinity or verdict.unschedulable_nodes
    if placement or (verdict.other and not verdict.resources and not verdict.volume):
        evidence = list(base)
        if spec.get("nodeSelector"):
            evidence.append(field_evidence(pod_ref, "spec.nodeSelector", spec.get("nodeSelector"), "pod.spec"))
        if fit is not None and fit.missing_labels:
            evidence.append(
                field_evidence(
                    None,
                    "nodes with these labels",
                    f"none has {', '.join(f'{k}={v}' for k, v in fit.missing_labels.items())}",
                    "node",
                )
            )
        if verdict.taints:
            evidence.append(field_evidence(pod_ref, "spec.tolerations", spec.get("tolerations") or [], "pod.spec"))
        reasons = []
        if verdict.selector:
            reasons.append("nodeSelector/affinity matches no node")
        if verdict.taints:
            reasons.append(f"untolerated taints {', '.join(sorted(verdict.taints))}")
        if verdict.affinity:
            reasons.append("pod (anti-)affinity or topology spread")
        if verdict.unschedulable_nodes:
            reasons.append("nodes cordoned")
        reasons += verdict.other[:1]
        yield finding(
            UNSCHEDULABLE_PLACEMENT,
            cluster=view.ref,
            obj=pod_ref,
            severity="error",
            title=f"{what} cannot be placed: {'; '.join(reasons)}",
            evidence=evidence,
            explanation="The scheduler finds no node the Pods may run on, whatever the free capacity.",
            remediation=[
                "Fix the nodeSelector/affinity labels in the group's template to labels nodes have "
                "(`kubectl get nodes --show-labels`), or add tolerations for the nodes' taints "
                "(GPU nodes usually carry nvidia.com/gpu:NoSchedule)."
            ],
            effects=effects,
        )


def _static_fit(
    view: ClusterView, group: str, path: str, template: Mapping[str, Any], nodes: list[Obj]
) -> Iterator[Finding]:
    """Before any Pod exists (nobody creates them yet): will they fit once created?"""
    if group != c.HEAD_GROUP_NAME and not any((g.desired or 0) > 0 for g in view.groups if g.name == group):
        return
    spec = facts.pod_spec(template)
    fit = fit_check(nodes, spec)
    what = "The head Pod" if group == c.HEAD_GROUP_NAME else f"Worker Pods of group {group}"
    tokens = _group_tokens(view, group)
    if fit.never:
        gpu = any(is_gpu_resource_name(r) for r, *_ in fit.never)
        yield finding(
            GPU_UNSCHEDULABLE if gpu else UNSCHEDULABLE_RESOURCES,
            cluster=view.ref,
            obj=view.ref,
            severity="error",
            confidence="likely",
            title=f"{what} will never fit on a node: {_never_text(fit.never)[0]}",
            evidence=[
                field_evidence(
                    view.ref, f"{path}.spec.containers[*].resources", _requests_text(fit.requests), "cr.spec"
                ),
                *(field_evidence(None, "requests vs node allocatable", x, "node") for x in _never_text(fit.never)),
            ],
            explanation="Checked from the template: once created, these Pods stay Pending.",
            remediation=["Lower the template's requests or add larger nodes."],
            effects=tokens,
        )
    if fit.missing_labels:
        yield finding(
            UNSCHEDULABLE_PLACEMENT,
            cluster=view.ref,
            obj=view.ref,
            severity="error",
            confidence="likely",
            title=f"{what} will match no node: no node is labelled "
            + ", ".join(f"{k}={v}" for k, v in fit.missing_labels.items()),
            evidence=[field_evidence(view.ref, f"{path}.spec.nodeSelector", spec.get("nodeSelector"), "cr.spec")],
            remediation=["Fix the nodeSelector, or label the nodes the Pods should use."],
            effects=tokens,
        )


@checker(LIMITRANGE_DEFAULTED)
def check_limit_range_defaults(snap: Snapshot) -> Iterator[Finding]:
    if not snap.has(s.LIMITRANGES):
        return
    for view in facts.cluster_views(snap):
        defaults: dict[tuple[str, str], tuple[str, Obj]] = {}  # (requests|limits, resource) -> (value, LimitRange)
        for limit_range in snap.in_namespace(s.LIMITRANGES, view.namespace):
            for item in (limit_range.get("spec") or {}).get("limits") or []:
                if item.get("type") not in (None, "Container"):
                    continue
                for field_name, kind in (("default", "limits"), ("defaultRequest", "requests")):
                    for resource, value in (item.get(field_name) or {}).items():
                        defaults.setdefault((kind, str(resource)), (str(value), limit_range))
        if not defaults:
            continue
        for group, path, template in view.templates():
            pods = [p for p in view.pods_of_group(group) if not facts.terminating(p)]
            if not pods:
                continue
            wanted = facts.ray_container(facts.pod_spec(template)).get("resources") or {}
            got = facts.ray_container(facts.pod_spec(pods[0])).get("resources") or {}
            added = [
                (kind, resource, value, defaults[(kind, resource)])
                for kind in ("limits", "requests")
                for resource, value in (got.get(kind) or {}).items()
                if resource in ("cpu", "memory")
                and resource not in (wanted.get(kind) or {})
                and (kind, resource) in defaults
                # a request copied from the template's limit is Kubernetes' own defaulting, not the LimitRange's
                and not (kind == "requests" and resource in (wanted.get("limits") or {}))
            ]
            if not added:
                continue
            names = listing(sorted({objects.name(lr) for *_, (_, lr) in added}))
            yield finding(
                LIMITRANGE_DEFAULTED,
                cluster=view.ref,
                obj=facts.ref(pods[0], "Pod"),
                severity="warning",
                title=f"Group {group}: LimitRange {names} set "
                + ", ".join(f"{kind}.{resource}={value}" for kind, resource, value, _ in added)
                + " on the Ray container, which its template leaves unset",
                evidence=[
                    field_evidence(
                        facts.ref(pods[0], "Pod"), f"spec.containers[0].resources.{kind}.{resource}", value, "pod.spec"
                    )
                    for kind, resource, value, _ in added
                ]
                + [field_evidence(view.ref, f"{path}.spec.containers[0].resources", wanted or "unset", "cr.spec")],
                explanation="KubeRay passes the Ray container's CPU and memory limits to `ray start` (--num-cpus, "
                "--memory) and Ray sizes its object store from the memory; a default the namespace adds decides "
                "how much Ray uses and where the kubelet OOM-kills, without appearing in the RayCluster.",
                remediation=[
                    "Set requests and limits for CPU and memory in every Ray container template (requests = limits), "
                    "so the LimitRange's defaults do not apply."
                ],
            )


@checker(NODE_PRESSURE, PREEMPTED)
def check_pressure_and_preemption(snap: Snapshot) -> Iterator[Finding]:
    nodes = {objects.name(n): n for n in snap.all(s.NODES)} if snap.has(s.NODES) else {}
    for view in facts.cluster_views(snap):
        by_node: dict[str, list[Obj]] = {}
        for pod in view.pods:
            if name := (pod.get("spec") or {}).get("nodeName"):
                by_node.setdefault(str(name), []).append(pod)
        for node_name, pods in sorted(by_node.items()):
            node = nodes.get(node_name)
            pressing = {k: v for k, v in facts.conditions(node or {}).items() if k in PRESSURE_CONDITIONS}
            pressing = {k: v for k, v in pressing.items() if v.get("status") == "True"}
            if not pressing:
                continue
            node_ref = ObjectRef("Node", node_name)
            yield finding(
                NODE_PRESSURE,
                cluster=view.ref,
                obj=node_ref,
                severity="warning",
                title=f"Node {node_name} is under {' and '.join(sorted(pressing))} with "
                f"{plural(len(pods), 'Ray Pod')} on it",
                evidence=[
                    field_evidence(node_ref, f"status.conditions[{k}]", v.get("message") or "True", "node")
                    for k, v in sorted(pressing.items())
                ]
                + [field_evidence(facts.ref(p, "Pod"), "spec.nodeName", node_name) for p in pods[:3]],
                explanation="Under pressure the kubelet evicts Pods (lowest priority and furthest above their "
                "requests first: Ray Pods without requests = limits go early) and admits no new ones. Ray workers "
                "evicted mid-job lose their tasks and objects; a head evicted takes the cluster down.",
                remediation=[
                    f"kubectl describe node {node_name}",
                    "Give Ray Pods requests = limits (Guaranteed QoS); for DiskPressure, mind /tmp/ray and the "
                    "object store's spilling directory (an emptyDir with a sizeLimit, or a volume).",
                ],
                effects=_pod_tokens(pods),
            )
        preempted = []
        for pod in view.pods:
            target = facts.conditions(pod).get("DisruptionTarget") or {}
            events = [e for e in view.snap.events_for(pod) if e.get("reason") == PREEMPTED_EVENT]
            if target.get("reason") == PREEMPTION_REASON or events:
                preempted.append((pod, target.get("message") or (facts.event_message(events[0]) if events else "")))
        if preempted:
            yield finding(
                PREEMPTED,
                cluster=view.ref,
                obj=facts.ref(preempted[0][0], "Pod"),
                severity="warning",
                title=f"{plural(len(preempted), 'Ray Pod')} preempted for higher-priority Pods: "
                f"{listing(objects.name(p) for p, _ in preempted)}",
                evidence=[
                    field_evidence(facts.ref(p, "Pod"), "preempted", message or PREEMPTION_REASON, "pod.status")
                    for p, message in preempted[:3]
                ],
                explanation="The scheduler evicts lower-priority Pods to place a higher-priority one. KubeRay "
                "recreates the Ray Pods, which then wait for room; a preempted head restarts the whole cluster.",
                remediation=[
                    "Give the Ray Pods a PriorityClass (template spec.priorityClassName) that matches their "
                    "importance, or run them on nodes the preempting workloads do not use."
                ],
                effects=_pod_tokens([p for p, _ in preempted]),
            )


@checker(SCHEDULING_GATED, NODE_NOT_READY, POD_FAILED)
def check_pod_placement(snap: Snapshot) -> Iterator[Finding]:
    nodes = {objects.name(n): n for n in snap.all(s.NODES)} if snap.has(s.NODES) else None
    for view in facts.cluster_views(snap):
        gated = [p for p in view.pods if (p.get("spec") or {}).get("schedulingGates") and not facts.terminating(p)]
        if gated:
            gates = sorted(
                {str(g.get("name")) for p in gated for g in (p.get("spec") or {}).get("schedulingGates") or []}
            )
            yield finding(
                SCHEDULING_GATED,
                cluster=view.ref,
                obj=facts.ref(gated[0], "Pod"),
                severity="info",
                title=f"{plural(len(gated), 'Pod')} held by scheduling gates {', '.join(gates)}",
                evidence=[
                    field_evidence(facts.ref(p, "Pod"), "spec.schedulingGates", gates, "pod.spec") for p in gated[:3]
                ],
                explanation="A queue (Kueue) or gang scheduler admits these Pods when it decides to; until then "
                "they are Pending by design.",
                effects=_pod_tokens(gated),
            )
        if nodes is not None:
            by_node: dict[str, list[Obj]] = {}
            for pod in view.pods:
                node_name = (pod.get("spec") or {}).get("nodeName")
                if node_name and not facts.terminating(pod):
                    by_node.setdefault(str(node_name), []).append(pod)
            for node_name, pods in sorted(by_node.items()):
                node = nodes.get(node_name)
                ready = facts.condition_true(node, "Ready") if node is not None else False
                if ready:
                    continue
                node_ref = ObjectRef("Node", node_name)
                evidence = [
                    field_evidence(
                        node_ref,
                        "status.conditions[Ready]",
                        (facts.conditions(node).get("Ready") or {}).get("status", "absent")
                        if node is not None
                        else "the Node does not exist",
                        "node",
                    )
                ]
                yield finding(
                    NODE_NOT_READY,
                    cluster=view.ref,
                    obj=node_ref,
                    severity="error",
                    title=f"{plural(len(pods), 'Ray Pod')} on node {node_name}, which is "
                    + ("gone" if node is None else "not Ready"),
                    evidence=evidence
                    + [field_evidence(facts.ref(p, "Pod"), "spec.nodeName", node_name) for p in pods[:3]],
                    explanation="The kubelet on that node does not report, so its Pods neither run nor get replaced "
                    "until the node recovers or the Pods are evicted.",
                    remediation=[f"kubectl describe node {node_name}; drain or delete the node if it is gone."],
                    effects=_pod_tokens(pods),
                )
        failed = [p for p in view.pods if facts.phase(p) == c.POD_PHASE_FAILED and not facts.terminating(p)]
        if failed:
            reason = str((failed[0].get("status") or {}).get("reason") or "Failed")
            yield finding(
                POD_FAILED,
                cluster=view.ref,
                obj=facts.ref(failed[0], "Pod"),
                severity="warning",
                title=f"{plural(len(failed), 'Ray Pod')} ended {reason}: {listing(objects.name(p) for p in failed)}",
                evidence=[
                    field_evidence(
                        facts.ref(p, "Pod"),
                        "status.reason/message",
                        f"{(p.get('status') or {}).get('reason')}: {(p.get('status') or {}).get('message')}",
                        "pod.status",
                    )
                    for p in failed[:3]
                ],
                explanation="KubeRay deletes failed Ray Pods and creates new ones; repeated evictions point at node "
                "pressure (memory, disk).",
                effects=_pod_tokens(failed),
            )

"""The symptoms a user sees first: the head is not Ready, a worker group is short, the RayCluster is not ready (or
says ``ready`` while it is not). They carry the evidence of the Pods' state; correlation hangs them under the root
cause that explains them, or leaves them as the root when the doctor found none."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import ClusterView, GroupView
from raykube.doctor.model import Evidence, Finding
from raykube.doctor.rules.base import (
    STAGE_DOWNSTREAM,
    STAGE_HEAD,
    STAGE_WORKERS,
    checker,
    field_evidence,
    finding,
    plural,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

HEAD_NOT_READY = rule("X02", "HEAD_NOT_READY", STAGE_HEAD, "The head Pod is missing, Pending or not Ready")
WORKERS_MISSING = rule(
    "X03", "WORKERS_MISSING", STAGE_WORKERS, "A worker group has fewer Ready Pods than desired (and why)"
)
CLUSTER_NOT_READY = rule("X01", "CLUSTER_NOT_READY", STAGE_DOWNSTREAM, "The RayCluster is not ready")
STATE_LIES = rule(
    "B05",
    "STATE_READY_BUT_NOT_READY",
    STAGE_DOWNSTREAM,
    "status.state says ready, but Pods are not (the state is sticky)",
    ["ray-project/kuberay#2188"],
)


def pod_summary(pod: Mapping[str, Any]) -> str:
    """What `kubectl get pod` would show in STATUS, with the reason that explains it."""
    if facts.terminating(pod):
        return "Terminating"
    for state in facts.container_states(pod):
        if state.state == "waiting" and state.reason:
            return f"{'Init:' if state.init else ''}{state.reason}"
        if state.init and state.state == "running":
            return f"Init:running ({state.name})"
    phase = facts.phase(pod)
    scheduled = facts.conditions(pod).get(facts.POD_SCHEDULED) or {}
    if phase == facts.PHASE_PENDING and scheduled.get("status") == "False":
        return f"Pending ({scheduled.get('reason')})"
    ready = facts.conditions(pod).get(c.POD_CONDITION_READY) or {}
    if phase == c.POD_PHASE_RUNNING and ready.get("status") != "True":
        return "Running, not Ready"
    return phase


def _pod_tokens(pod: Obj) -> set[str]:
    key = s.key_of(pod)
    tokens = {t.pod_ready(key)}
    if facts.phase(pod) == facts.PHASE_PENDING:
        tokens.add(t.pod_run(key))
    return tokens


def _head_evidence(pod: Obj) -> list[Evidence]:
    ref = facts.ref(pod, "Pod")
    evidence = [field_evidence(ref, "status", pod_summary(pod), "pod.status")]
    for type_ in (facts.POD_SCHEDULED, c.POD_CONDITION_READY):
        cond = facts.conditions(pod).get(type_)
        if cond is not None and cond.get("status") != "True":
            text = f"{cond.get('status')}/{cond.get('reason') or ''}" + (
                f": {cond.get('message')}" if cond.get("message") else ""
            )
            evidence.append(field_evidence(ref, f"status.conditions[{type_}]", text, "pod.status"))
    return evidence


def head_down(view: ClusterView) -> bool:
    return view.head is None or not facts.is_ready(view.head)


def short_groups(view: ClusterView) -> list[GroupView]:
    return [g for g in view.groups if (g.desired or 0) > len(g.ready_pods)]


@checker(HEAD_NOT_READY)
def check_head(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        if view.suspended or view.managed_elsewhere or view.deleting or not head_down(view):
            continue
        head = view.head
        effects = {t.gcs(view.key), t.dashboard(view.key), t.cluster_ready(view.key)}
        if head is None:
            head_status = view.status.get("head") or {}
            yield finding(
                HEAD_NOT_READY,
                cluster=view.ref,
                obj=view.ref,
                severity="error",
                title="There is no head Pod",
                evidence=[
                    field_evidence(
                        None,
                        f"pods -l {c.RAY_CLUSTER_LABEL}={view.name},{c.RAY_NODE_TYPE_LABEL}=head",
                        "none",
                        "pod.status",
                    ),
                    field_evidence(view.ref, "status.head.podName", head_status.get("podName") or "unset", "cr.status"),
                ],
                explanation="Everything hangs off the head: the GCS, the dashboard, the workers' address.",
                symptoms={t.head(view.key), t.create_head(view.key)},
                effects=effects | {t.endpoints(view.key)},
            )
            continue
        key = s.key_of(head)
        if not (head.get("status") or {}).get("podIP"):
            effects.add(t.endpoints(view.key))
        yield finding(
            HEAD_NOT_READY,
            cluster=view.ref,
            obj=facts.ref(head, "Pod"),
            severity="error",
            title=f"The head Pod is {pod_summary(head)}",
            evidence=_head_evidence(head),
            explanation="Until the head is Running and Ready the GCS and the dashboard do not answer, workers cannot "
            "join, and the RayCluster is not ready.",
            remediation=[f"kubectl describe pod {objects.name(head)} -n {view.namespace} | grep -A5 Events"],
            symptoms={t.head(view.key), t.pod_ready(key)} | _pod_tokens(head),
            effects=effects,
        )


def _why_fewer(snap: Snapshot, view: ClusterView, group: GroupView) -> list[Evidence]:
    spec = group.spec
    evidence = [
        field_evidence(
            view.ref,
            f"{group.path}.replicas/minReplicas/maxReplicas",
            f"{spec.get('replicas')}/{spec.get('minReplicas')}/{spec.get('maxReplicas')} → desired {group.desired}",
            "cr.spec",
        ),
    ]
    return evidence


@checker(WORKERS_MISSING)
def check_workers(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        if view.suspended or view.managed_elsewhere or view.deleting:
            continue
        for group in short_groups(view):
            desired = group.desired or 0
            live, ready = group.live_pods, group.ready_pods
            not_ready = [p for p in live if not facts.is_ready(p)]
            symptoms = {t.workers(view.key, group.name)}
            if len(live) < desired:
                symptoms.add(t.create_workers(view.key, group.name))
            for pod in not_ready:
                symptoms |= _pod_tokens(pod)
            evidence = _why_fewer(snap, view, group)
            evidence.append(field_evidence(view.ref, "pods (live/ready)", f"{len(live)}/{len(ready)}", "pod.status"))
            evidence += [
                field_evidence(facts.ref(p, "Pod"), "status", pod_summary(p), "pod.status") for p in not_ready[:3]
            ]
            missing = desired - len(live)
            parts = []
            if missing > 0:
                parts.append(f"{missing} not created")
            if not_ready:
                parts.append(f"{len(not_ready)} not Ready")
            yield finding(
                WORKERS_MISSING,
                cluster=view.ref,
                obj=view.ref,
                severity="error",
                title=f"Worker group {group.name} has {len(ready)} of {desired} workers Ready ({', '.join(parts)})",
                evidence=evidence,
                explanation="`ray status` would show fewer worker nodes (and less CPU/memory) than the spec asks "
                "for. Check whether replicas were changed (HPA, by hand, the autoscaler) and whether the nodes have "
                "room for the Pods.",
                remediation=[
                    f"kubectl get pods -n {view.namespace} -l {c.RAY_CLUSTER_LABEL}={view.name},"
                    f"{c.RAY_NODE_GROUP_LABEL}={group.name} -o wide"
                ],
                symptoms=symptoms,
                effects={t.cluster_ready(view.key)},
            )


@checker(CLUSTER_NOT_READY, STATE_LIES)
def check_cluster(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        if view.suspended or view.managed_elsewhere or view.deleting:
            continue
        head = head_down(view)
        short = short_groups(view)
        if not head and not short:
            continue
        state = view.status.get("state")
        conditions = facts.conditions(view.obj)
        evidence = [field_evidence(view.ref, "status.state", state or "unset", "cr.status")]
        for type_ in (c.CONDITION_HEAD_POD_READY, c.CONDITION_RAYCLUSTER_PROVISIONED, c.CONDITION_REPLICA_FAILURE):
            cond = conditions.get(type_)
            if cond is not None:
                evidence.append(
                    field_evidence(
                        view.ref,
                        f"status.conditions[{type_}]",
                        f"{cond.get('status')}/{cond.get('reason')}",
                        "cr.status",
                    )
                )
        counters = {
            k: view.status.get(k)
            for k in ("desiredWorkerReplicas", "availableWorkerReplicas", "readyWorkerReplicas")
            if k in view.status
        }
        if counters:
            evidence.append(field_evidence(view.ref, "status (workers desired/available/ready)", counters, "cr.status"))
        what = []
        if head:
            what.append("the head is not Ready")
        if short:
            what.append(f"{plural(len(short), 'worker group')} short of Ready workers")
        if state == c.CLUSTER_STATE_READY:
            yield finding(
                STATE_LIES,
                cluster=view.ref,
                obj=view.ref,
                severity="warning",
                title=f"status.state says ready, but {' and '.join(what)}",
                evidence=evidence,
                explanation="KubeRay keeps state=ready once the cluster was ready, until it is suspended; read the "
                "HeadPodReady condition and the Pods instead.",
                symptoms={t.cluster_ready(view.key)},
            )
            continue
        yield finding(
            CLUSTER_NOT_READY,
            cluster=view.ref,
            obj=view.ref,
            severity="error",
            title=f"The RayCluster is not ready: {' and '.join(what)}",
            evidence=evidence,
            explanation="`kubectl get raycluster` shows no STATUS ready until the head and every desired worker "
            "are Running and Ready.",
            symptoms={t.cluster_ready(view.key)},
            effects={t.runs_on(view.key)},
        )

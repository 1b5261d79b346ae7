"""Why a worker group wants fewer workers than the user expects: an HPA on the RayCluster, replicas clamped to
min/max, ``workersToDelete`` nobody clears, replicas edited after creation (read from ``managedFields``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.model import Finding
from raykube.doctor.rules.base import STAGE_SPEC, checker, field_evidence, finding, listing, rule
from raykube.doctor.snapshot import Snapshot
from raykube.kube import objects

HPA = rule(
    "G04",
    "HPA_ON_RAY",
    STAGE_SPEC,
    "A HorizontalPodAutoscaler targets the RayCluster",
    ["ray-project/ray#44704", "ray-project/ray PR#27504"],
)
CLAMPED = rule(
    "G02",
    "REPLICAS_CLAMPED",
    STAGE_SPEC,
    "replicas lies outside [minReplicas, maxReplicas] and is clamped",
    ["ray-project/ray#50868"],
)
TO_DELETE = rule("G08", "WORKERS_TO_DELETE_PENDING", STAGE_SPEC, "scaleStrategy.workersToDelete lists Pods to delete")
REPLICAS_CHANGED = rule(
    "G09",
    "REPLICAS_CHANGED",
    STAGE_SPEC,
    "The worker groups were changed after creation (HPA, kubectl edit, the autoscaler, GitOps)",
    ["ray-project/kuberay#1120"],
)


@checker(HPA)
def check_hpa(snap: Snapshot) -> Iterator[Finding]:
    if not snap.has(s.HPAS):
        return
    for view in facts.cluster_views(snap):
        for hpa in snap.in_namespace(s.HPAS, view.namespace):
            target = (hpa.get("spec") or {}).get("scaleTargetRef") or {}
            if target.get("kind") != view.ref.kind or target.get("name") != view.name:
                continue
            ref = facts.ref(hpa, "HorizontalPodAutoscaler")
            spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
            evidence = [
                field_evidence(ref, "spec.scaleTargetRef", f"{target.get('kind')}/{target.get('name')}"),
                field_evidence(
                    ref, "spec.minReplicas/maxReplicas", f"{spec.get('minReplicas')}/{spec.get('maxReplicas')}"
                ),
                field_evidence(
                    ref,
                    "status.currentReplicas/desiredReplicas",
                    f"{status.get('currentReplicas')}/{status.get('desiredReplicas')}",
                ),
            ]
            for type_, cond in sorted(facts.conditions(hpa).items()):
                if cond.get("status") == "False":
                    evidence.append(
                        field_evidence(
                            ref, f"status.conditions[{type_}]", f"{cond.get('reason')}: {cond.get('message')}"
                        )
                    )
            yield finding(
                HPA,
                cluster=view.ref,
                obj=ref,
                severity="warning",
                title=f"HorizontalPodAutoscaler {objects.name(hpa)} targets this RayCluster, which it cannot scale",
                evidence=evidence,
                explanation="The RayCluster CRD (KubeRay's, and raykube's) has no scale subresource, so an HPA "
                "cannot read or change its replicas: it reports AbleToScale=False (FailedGetScale) and does "
                "nothing. It neither adds nor removes workers; whoever expects it to is waiting in vain. Ray's "
                "own autoscaler scales by pending tasks and drains idle nodes.",
                remediation=["Delete the HPA and set spec.enableInTreeAutoscaling: true with min/maxReplicas."],
            )


@checker(CLAMPED, TO_DELETE)
def check_group_settings(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        for group in view.groups:
            spec = group.spec
            replicas = spec.get("replicas")
            low, high = spec.get("minReplicas", 0), spec.get("maxReplicas")
            if (
                isinstance(replicas, int)
                and isinstance(low, int)
                and isinstance(high, int)
                and not low <= replicas <= high
            ):
                yield finding(
                    CLAMPED,
                    cluster=view.ref,
                    obj=view.ref,
                    severity="info",
                    title=f"Group {group.name}: replicas {replicas} is outside [{low}, {high}], so KubeRay wants "
                    f"{group.desired}",
                    evidence=[
                        field_evidence(view.ref, f"{group.path}.replicas", replicas, "cr.spec"),
                        field_evidence(view.ref, f"{group.path}.minReplicas/maxReplicas", f"{low}/{high}", "cr.spec"),
                    ],
                    explanation="KubeRay clamps replicas into [minReplicas, maxReplicas] "
                    "(GetWorkerGroupDesiredReplicas).",
                    remediation=["Set replicas within the bounds, or move the bound."],
                )
            doomed = list(((spec.get("scaleStrategy") or {}).get("workersToDelete")) or [])
            if doomed:
                names = {objects.name(p) for p in group.pods}
                existing = [n for n in doomed if n in names]
                short = (group.desired or 0) > len(group.ready_pods)
                yield finding(
                    TO_DELETE,
                    cluster=view.ref,
                    obj=view.ref,
                    severity="info" if view.autoscaling else "warning",
                    title=f"Group {group.name}: scaleStrategy.workersToDelete lists {listing(doomed)}",
                    evidence=[
                        field_evidence(view.ref, f"{group.path}.scaleStrategy.workersToDelete", doomed, "cr.spec"),
                        field_evidence(view.ref, "of which exist", existing or "none", "pod.status"),
                    ],
                    explanation="The operator deletes the Pods named here on every pass and never clears the list; "
                    "the Ray autoscaler owns it"
                    + ("." if view.autoscaling else ", but autoscaling is off, so nobody will clear it."),
                    remediation=["Remove the list (kubectl edit) unless the autoscaler manages it."],
                    effects={t.workers(view.key, group.name)} if short and existing else set(),
                )


def _touches_groups(entry: Mapping[str, Any]) -> bool:
    fields = ((entry.get("fieldsV1") or {}).get("f:spec")) or {}
    return "f:workerGroupSpecs" in fields


@checker(REPLICAS_CHANGED)
def check_managed_fields(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        if view.generation <= 1:
            continue
        entries = [e for e in objects.meta(view.obj).get("managedFields") or [] if _touches_groups(e)]
        created = objects.meta(view.obj).get("creationTimestamp")
        later = [e for e in entries if e.get("time") and e.get("time") != created]
        if not later:
            continue
        latest = max(later, key=lambda e: str(e.get("time")))
        history = [
            field_evidence(
                view.ref,
                "metadata.managedFields[spec.workerGroupSpecs]",
                f"{e.get('manager')} {e.get('operation')} at {e.get('time')}",
                "cr.spec",
            )
            for e in sorted(entries, key=lambda e: str(e.get("time")))
        ]
        yield finding(
            REPLICAS_CHANGED,
            cluster=view.ref,
            obj=view.ref,
            severity="info",
            title=f"The worker groups were last changed by {latest.get('manager')} ({latest.get('operation')}) "
            f"{facts.human_age(facts.seconds_since(latest.get('time'), snap.now))} ago",
            evidence=[*history[-3:], field_evidence(view.ref, "metadata.generation", view.generation, "cr.spec")],
            explanation="If there are fewer workers than you expect, the replicas may have been edited (by hand, a "
            "GitOps tool reverting them, or the Ray autoscaler).",
        )

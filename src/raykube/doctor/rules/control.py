"""Control plane: the CRD, the operator (installed, Ready, watching, allowed), the spec, reconciliation.

The operator is judged by what it did, not only by whether a Deployment exists: a RayCluster whose status is current
(``observedGeneration`` = ``generation``) is being reconciled, whoever does it (an operator started with
``raykube operator run`` outside the cluster has no Deployment), so a missing Deployment is then only a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.validation import validate_raycluster
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import AccessResult, ClusterView
from raykube.doctor.model import Evidence, Finding, ObjectRef, OperatorInfo
from raykube.doctor.rules.base import (
    STAGE_OPERATOR,
    STAGE_PLATFORM,
    STAGE_RECONCILE,
    STAGE_SPEC,
    checker,
    field_evidence,
    finding,
    listing,
    rule,
)
from raykube.doctor.snapshot import Snapshot
from raykube.kube import objects

CRD_MISSING = rule("A13", "CRD_MISSING", STAGE_PLATFORM, "The RayCluster CRD is not installed or not established")
CRD_SKEW = rule(
    "A03",
    "CRD_VERSION_SKEW",
    STAGE_PLATFORM,
    "The RayCluster CRD does not serve ray.io/v1 or lacks fields the operator supports",
    ["ray-project/kuberay#3133", "ray docs upgrade-guide"],
)
OPERATOR_MISSING = rule(
    "A01",
    "OPERATOR_MISSING",
    STAGE_OPERATOR,
    "No KubeRay operator Deployment, and nothing reconciles the RayCluster",
    ["ray docs helm-chart-rbac", "ray-project/kuberay-helm#27"],
)
OPERATOR_RBAC = rule(
    "A02",
    "OPERATOR_RBAC_FORBIDDEN",
    STAGE_OPERATOR,
    "The operator's ServiceAccount lacks permissions it needs (SubjectAccessReview)",
    ["ray-project/kuberay#440", "ray-project/kuberay#1706", "bitnami/charts#30648"],
)
OPERATOR_NOT_READY = rule("A10", "OPERATOR_NOT_READY", STAGE_OPERATOR, "The operator Deployment has no Ready Pod")
OPERATOR_NOT_WATCHING = rule(
    "A11",
    "OPERATOR_NOT_WATCHING_NAMESPACE",
    STAGE_OPERATOR,
    "No operator watches the RayCluster's namespace (--watch-namespace)",
    ["ray docs helm-chart-rbac"],
)
SPEC_INVALID = rule(
    "A05",
    "SPEC_INVALID",
    STAGE_SPEC,
    "The RayCluster fails KubeRay's validation",
    ["ray-project/kuberay#2210"],
)
SPEC_NOT_APPLIED = rule(
    "A07",
    "SPEC_CHANGE_NOT_APPLIED",
    STAGE_SPEC,
    "Pods run another image than the spec asks for",
    ["ray-project/kuberay#155"],
)
DELETE_STUCK = rule(
    "A09",
    "DELETE_STUCK_FINALIZER",
    STAGE_SPEC,
    "The RayCluster is stuck terminating on a finalizer",
    ["ray-project/kuberay#4721"],
)
NOT_RECONCILED = rule(
    "A12",
    "CR_NOT_RECONCILED",
    STAGE_RECONCILE,
    "The operator has not reconciled the RayCluster (no status, or observedGeneration behind)",
)
SUSPENDED = rule(
    "B06",
    "SUSPENDED_OR_QUEUED",
    STAGE_SPEC,
    "The RayCluster or a worker group is suspended, or another controller (Kueue) owns it",
    ["ray-project/kuberay#4767"],
)

# A fresh RayCluster gets this long before "not reconciled" is an error rather than a note.
RECONCILE_GRACE_SECONDS = 30
# Snapshot.extra key: the run's --starting-grace (raykube.doctor.run.diagnose puts it there).
STARTING_GRACE_KEY = "starting_grace"
# A RayCluster terminating longer than this is stuck.
DELETE_GRACE_SECONDS = 300


def _creation_effects(view: ClusterView) -> set[str]:
    """What a cluster that nobody reconciles lacks: its head, its workers, its head Service."""
    effects = {t.create_head(view.key), t.create_service(view.key)}
    effects |= {t.create_workers(view.key, g.name) for g in view.groups if (g.desired or 0) > 0}
    return effects


def _op_ref(op: OperatorInfo) -> ObjectRef:
    return ObjectRef("Deployment", op.name, op.namespace)


def _op_evidence(snap: Snapshot, op: OperatorInfo) -> list[Evidence]:
    ref = _op_ref(op)
    evidence = [
        field_evidence(ref, "status.readyReplicas", op.ready_replicas, "operator"),
        field_evidence(ref, "spec.template.spec.containers[0].image", op.image, "operator"),
    ]
    # raykube's operator exits at start-up on flags its parser refuses (the same parser read them here); KubeRay's
    # own accepts more (controller-runtime's --zap-* flags, kai-scheduler), so its flags are only read, not judged.
    if op.implementation == "raykube":
        evidence += [
            field_evidence(
                ref, "spec.template.spec.containers[0].args", f"refused by raykube operator: {p}", "operator"
            )
            for p in op.flag_problems
        ]
    for pod in facts.operator_pods(snap, op):
        pod_ref = facts.ref(pod, "Pod")
        evidence.append(field_evidence(pod_ref, "status.phase", facts.phase(pod), "pod.status"))
        for state in facts.container_states(pod):
            if state.state != "running" or not state.ready:
                value = state.reason or state.state
                if state.restarts:
                    value = f"{value} (restarts: {state.restarts}, last: {state.last_reason or '-'})"
                evidence.append(field_evidence(pod_ref, f"{state.path}.state", value, "pod.status"))
        for event in facts.latest_events(snap.events_for(pod))[:3]:
            if event.get("type") == "Warning":
                evidence.append(facts.event_evidence(event, pod_ref, snap.now))
    return evidence


def _activity(view: ClusterView) -> Evidence:
    if view.observed_generation is not None:
        return field_evidence(view.ref, "status.observedGeneration", view.observed_generation, "cr.status")
    if view.status:
        return field_evidence(view.ref, "status.state", view.status.get("state") or "set", "cr.status")
    return field_evidence(view.ref, f"events from {c.RAYCLUSTER_CONTROLLER_NAME}", len(view.operator_events), "event")


def _deployments_listed(snap: Snapshot) -> bool:
    return snap.has(s.DEPLOYMENTS) and not any(n.what == "operator Deployment" for n in snap.not_checked)


def _only_pre_v170_kuberay(snap: Snapshot) -> bool:
    """Every operator found is KubeRay's with an image tagged v1.6 or older (``quay.io/kuberay/operator:v1.6.1``)."""
    found = facts.operators(snap)
    return bool(found) and all(
        op.implementation == "kuberay" and re.search(r":v?1\.[0-6](\.\d+)?$", op.image) for op in found
    )


@checker(CRD_MISSING, CRD_SKEW)
def check_crd(snap: Snapshot) -> Iterator[Finding]:
    if not snap.has(s.CRDS):
        return
    crds = snap.all(s.CRDS)
    crd_ref = ObjectRef("CustomResourceDefinition", s.RAYCLUSTER_CRD_NAME)
    if not crds:
        yield finding(
            CRD_MISSING,
            cluster=None,
            obj=crd_ref,
            severity="critical",
            title=f"The RayCluster CRD {s.RAYCLUSTER_CRD_NAME} is not installed",
            evidence=[field_evidence(crd_ref, "metadata.name", "NotFound", "object")],
            explanation="Without the CRD the API server knows no RayCluster: `kubectl apply` fails with "
            '"no matches for kind "RayCluster" in version "ray.io/v1"" and no operator can start.',
            remediation=[
                "Install the CRDs first: `raykube crd install` (or KubeRay's `kubectl create -k "
                '"github.com/ray-project/kuberay/ray-operator/config/crd?ref=<version>"`), then the operator.'
            ],
        )
        return
    crd = crds[0]
    established = facts.condition_true(crd, "Established")
    versions = {str(v.get("name")): v for v in (crd.get("spec") or {}).get("versions") or []}
    served = sorted(n for n, v in versions.items() if v.get("served"))
    if established is False:
        yield finding(
            CRD_MISSING,
            cluster=None,
            obj=crd_ref,
            severity="critical",
            title=f"The RayCluster CRD {s.RAYCLUSTER_CRD_NAME} is not Established",
            evidence=[field_evidence(crd_ref, "status.conditions[Established]", facts.conditions(crd)["Established"])],
            remediation=["Read the CRD's conditions (`kubectl describe crd rayclusters.ray.io`) and re-install it."],
        )
    v1 = versions.get("v1")
    if v1 is None or not v1.get("served"):
        yield finding(
            CRD_SKEW,
            cluster=None,
            obj=crd_ref,
            severity="critical",
            title="The RayCluster CRD does not serve ray.io/v1",
            evidence=[field_evidence(crd_ref, "spec.versions[*].name (served)", served)],
            explanation="KubeRay 1.0 and later (and raykube) read and write ray.io/v1; a CRD from KubeRay 0.x only "
            "serves v1alpha1, so the operator cannot list RayClusters.",
            remediation=[
                "Upgrade the CRDs to the operator's version before (never after) the operator; "
                "Helm does not upgrade CRDs."
            ],
        )
        return
    schema = (((v1.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}).get("spec") or {}
    known = set((schema.get("properties") or {}).keys())
    if schema.get("x-kubernetes-preserve-unknown-fields") or not known:
        return
    expected = [f.alias or name for name, f in RayClusterSpec.model_fields.items()]
    if _only_pre_v170_kuberay(snap):  # its CRD need not carry what v1.7.0 added
        expected = [name for name in expected if name not in c.RAYCLUSTER_SPEC_FIELDS_SINCE_V170]
    lacking = [name for name in expected if name not in known]
    if lacking:
        yield finding(
            CRD_SKEW,
            cluster=None,
            obj=crd_ref,
            severity="warning",
            title=f"The RayCluster CRD is older than the operator: it lacks spec.{', spec.'.join(lacking)}",
            evidence=[
                field_evidence(crd_ref, "spec.versions[v1].schema.openAPIV3Schema.properties.spec", f"no {n}")
                for n in lacking
            ],
            explanation="The API server prunes fields its schema does not know, so these settings vanish from "
            "every RayCluster the moment it is stored, silently.",
            remediation=[
                "Upgrade the CRDs to match the operator (`raykube crd install`, or KubeRay's "
                "`kubectl replace -k` of config/crd at the operator's version)."
            ],
        )


def _denied_for(results: Iterable[AccessResult], op: OperatorInfo, namespace: str) -> list[AccessResult]:
    user = facts.service_account_user(op.namespace, op.service_account)
    return [
        r
        for r in results
        if r.user == user
        and not r.allowed
        and (r.namespace in (namespace, "") or (op.leader_election and r.namespace == op.leader_election_namespace))
    ]


def _rbac_effects(view: ClusterView, denied: list[AccessResult]) -> set[str]:
    effects: set[str] = set()
    for result in denied:
        if result.group == c.API_GROUP or result.verb in ("list", "watch") or result.resource == "leases":
            effects |= {t.reconcile(view.key), *_creation_effects(view)}
        elif result.resource == "pods" and result.verb == "create":
            effects.add(t.create_head(view.key))
            effects |= {t.create_workers(view.key, g.name) for g in view.groups}
        elif result.resource == "services" and result.verb == "create":
            effects.add(t.create_service(view.key))
    return effects


@checker(OPERATOR_MISSING, OPERATOR_NOT_WATCHING, OPERATOR_NOT_READY, OPERATOR_RBAC)
def check_operator(snap: Snapshot) -> Iterator[Finding]:
    if not snap.has(s.DEPLOYMENTS):
        return
    every = facts.operators(snap)
    reviews = facts.access(snap)
    for view in facts.cluster_views(snap):
        if view.managed_elsewhere:
            continue
        reconciled = view.operator_active
        effects = {t.reconcile(view.key)}
        age = view.age_seconds
        # No operator at all is a fact whatever the cluster's age; the grace only allows for an install under way,
        # and --starting-grace shorter than it (0: judge now) shortens it.
        grace = min(RECONCILE_GRACE_SECONDS, float(snap.extra.get(STARTING_GRACE_KEY, RECONCILE_GRACE_SECONDS)))
        young = age is not None and age < grace
        if not every:
            if reconciled:
                yield finding(
                    OPERATOR_MISSING,
                    cluster=view.ref,
                    obj=view.ref,
                    severity="info",
                    confidence="likely",
                    title="No operator Deployment found, yet the RayCluster is reconciled: "
                    "the operator runs outside the cluster",
                    evidence=[_activity(view)],
                    explanation="Something keeps the status current (for example `raykube operator run` on a "
                    "workstation), but no Deployment labelled as the KubeRay operator exists, so its health and "
                    "RBAC were not checked.",
                )
                continue
            yield finding(
                OPERATOR_MISSING,
                cluster=view.ref,
                obj=view.ref,
                severity="warning" if young else "error",
                confidence="confirmed" if _deployments_listed(snap) and not young else "likely",
                title="No KubeRay operator is installed: nothing reconciles this RayCluster"
                + (f" (created {facts.human_age(age)} ago)" if young else ""),
                evidence=[
                    field_evidence(
                        None,
                        "deployments (app.kubernetes.io/name in kuberay-operator,kuberay; "
                        f"name {c.OPERATOR_DEPLOYMENT_NAME})",
                        "none in any namespace",
                        "operator",
                    ),
                    field_evidence(view.ref, "status", view.obj.get("status") or "absent", "cr.status"),
                ],
                explanation="A RayCluster is only a record until the operator turns it into Pods and Services; "
                "with no operator it stays without status, Pods or head Service forever.",
                remediation=[
                    "Install the operator: `raykube install` (or `helm install kuberay-operator "
                    "kuberay/kuberay-operator -n kuberay-operator --create-namespace`).",
                    "Then check it: `kubectl get deploy -A -l app.kubernetes.io/name=kuberay-operator`.",
                ],
                effects=effects,
            )
            continue
        if not view.ops:
            evidence = [
                field_evidence(
                    _op_ref(op), f"args {c.OPERATOR_WATCH_NAMESPACE_FLAG}", ",".join(op.watch_namespaces), "operator"
                )
                for op in every
            ]
            yield finding(
                OPERATOR_NOT_WATCHING,
                cluster=view.ref,
                obj=view.ref,
                severity="info" if reconciled else "error",
                confidence="confirmed",
                title=f'No operator watches the namespace "{view.namespace}"'
                + (" (yet the RayCluster is reconciled by something else)" if reconciled else ""),
                evidence=evidence,
                explanation="An operator only sees RayClusters in the namespaces it watches; elsewhere "
                "`kubectl get raycluster` shows blank DESIRED/AVAILABLE/STATUS columns and nothing happens.",
                remediation=[
                    f'Add "{view.namespace}" to the chart value watchNamespace (the operator\'s '
                    f"{c.OPERATOR_WATCH_NAMESPACE_FLAG}), or install it cluster-wide (singleNamespaceInstall=false).",
                ],
                effects=set() if reconciled else effects,
            )
            continue
        ready = [op for op in view.ops if op.ready]
        if not ready:
            yield finding(
                OPERATOR_NOT_READY,
                cluster=view.ref,
                obj=_op_ref(view.ops[0]),
                severity="error",
                title=f"The operator {view.ops[0].namespace}/{view.ops[0].name} has no Ready Pod",
                evidence=[e for op in view.ops for e in _op_evidence(snap, op)],
                explanation="While no operator Pod is Ready nothing creates, repairs or updates Ray Pods, "
                "and the RayCluster's status goes stale.",
                remediation=[
                    f"kubectl -n {view.ops[0].namespace} describe deploy/{view.ops[0].name}; "
                    f"kubectl -n {view.ops[0].namespace} logs deploy/{view.ops[0].name}",
                ],
                effects=effects | (set() if reconciled else _creation_effects(view)),
            )
        for op in view.ops:
            denied = _denied_for(reviews, op, view.namespace)
            if not denied:
                continue
            user = facts.service_account_user(op.namespace, op.service_account)
            rbac_effects = _rbac_effects(view, denied)
            working = (
                view.reconciled
                and view.head is not None
                and all(len(g.live_pods) >= (g.desired or 0) for g in view.groups)
            )
            yield finding(
                OPERATOR_RBAC,
                cluster=view.ref,
                obj=ObjectRef("ServiceAccount", op.service_account, op.namespace),
                severity="error" if rbac_effects and not working else "warning",
                title=f"The operator's ServiceAccount may not {listing(_verbs(denied), 4)}"
                + (" (yet this RayCluster is reconciled and has its Pods)" if working else ""),
                evidence=[
                    Evidence(
                        source="rbac",
                        object=ObjectRef("ServiceAccount", op.service_account, op.namespace),
                        path=f"{r.verb} {r.resource_text}",
                        value=f'{user} cannot {r.verb} resource "{r.resource_text}" {r.scope_text}',
                    )
                    for r in denied
                ],
                explanation="The operator's requests fail with 403 forbidden (its log shows `... is forbidden: "
                f'User "{user}" cannot ...`), so the RayCluster gets no Pods or Services or no status.',
                remediation=[
                    "Re-sync the operator's ClusterRole/Role with its version: `raykube install` or `helm upgrade` "
                    "of the chart that matches the operator image; avoid third-party charts with stale rules.",
                    f"Check with: kubectl auth can-i --as={user} <verb> <resource> -n {view.namespace}",
                ],
                effects=rbac_effects,
            )


def _verbs(denied: list[AccessResult]) -> list[str]:
    return list(dict.fromkeys(f"{r.verb} {r.resource_text}" for r in denied))


@checker(SPEC_INVALID)
def check_spec(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        features: dict[str, bool] = {}
        for op in view.ops:
            features.update(op.feature_gates)
        errors = [
            e for e in validate_raycluster(view.obj, features=features or None) if not e.path.startswith("status")
        ]
        events = facts.latest_events(
            view.operator_events or view.events,
            c.EVENT_INVALID_RAYCLUSTER_SPEC,
            c.EVENT_INVALID_RAYCLUSTER_METADATA,
        )
        if not errors and not events:
            continue
        accepted = view.reconciled and view.observed_generation is not None and not events
        evidence = [field_evidence(view.ref, e.path, e.message, "cr.spec") for e in errors]
        evidence += [facts.event_evidence(e, view.ref, snap.now) for e in events[:3]]
        yield finding(
            SPEC_INVALID,
            cluster=view.ref,
            obj=view.ref,
            severity="warning" if accepted else "error",
            confidence="confirmed" if events else "likely",
            title="The RayCluster spec is invalid: "
            + (errors[0].message if errors else "see the operator's event")
            + (" (the running operator accepted it)" if accepted else ""),
            evidence=evidence,
            explanation="KubeRay validates a RayCluster before reconciling it; an invalid one gets a Warning "
            "event (InvalidRayClusterSpec) and nothing else: no status, no Pods.",
            remediation=[f"Fix {e.path}: {e.message}" for e in errors[:5]] or ["Fix the field the event names."],
            effects=set() if accepted else {t.reconcile(view.key), *_creation_effects(view)},
        )


@checker(NOT_RECONCILED)
def check_reconciled(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        if view.reconciled or view.deleting:
            continue
        age = view.age_seconds
        young = age is not None and age < RECONCILE_GRACE_SECONDS
        observed = view.observed_generation
        if young and observed is None and view.operator_active:
            continue  # its first pass is under way (its events or Pods are there); the status comes at its end
        evidence = [
            field_evidence(view.ref, "metadata.generation", view.generation, "cr.status"),
            field_evidence(
                view.ref, "status.observedGeneration", observed if observed is not None else "absent", "cr.status"
            ),
            field_evidence(view.ref, f"events from {c.RAYCLUSTER_CONTROLLER_NAME}", len(view.operator_events), "event"),
        ]
        yield finding(
            NOT_RECONCILED,
            cluster=view.ref,
            obj=view.ref,
            severity="info" if young else "error",
            confidence="confirmed",
            title=(
                "The operator has not reconciled this RayCluster"
                + (f" (created {facts.human_age(age)} ago)" if young else "")
                if observed is None
                else f"The operator has not reconciled generation {view.generation} (last seen {observed})"
            ),
            evidence=evidence,
            explanation="`kubectl get raycluster` shows empty DESIRED/AVAILABLE/STATUS columns: no operator has "
            "acted on this RayCluster, so it has no Pods and no head Service."
            + (
                f" The operator {listing(f'{o.namespace}/{o.name}' for o in view.ops)} is Ready and watches this "
                "namespace, so it is running but not reconciling: its log says why."
                if any(o.ready for o in view.ops)
                else ""
            ),
            remediation=[
                *(f"kubectl logs -n {o.namespace} deploy/{o.name} | grep {view.name}" for o in view.ops if o.ready),
                "Find out why no operator acts on it (a finding above names the cause when the doctor sees it).",
            ],
            symptoms={t.reconcile(view.key)},
            effects=_creation_effects(view),
        )


@checker(SPEC_NOT_APPLIED)
def check_images(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        for group, path, template in view.templates():
            wanted = str(facts.ray_container(facts.pod_spec(template)).get("image") or "")
            stale = [
                p
                for p in view.pods_of_group(group)
                if wanted and str(facts.ray_container(facts.pod_spec(p)).get("image") or "") != wanted
            ]
            if not stale:
                continue
            running = str(facts.ray_container(facts.pod_spec(stale[0])).get("image") or "")
            recreate = (view.spec.get("upgradeStrategy") or {}).get("type") == c.RAYCLUSTER_UPGRADE_RECREATE
            yield finding(
                SPEC_NOT_APPLIED,
                cluster=view.ref,
                obj=facts.ref(stale[0], "Pod"),
                severity="warning",
                title=f"{len(stale)} Pod(s) of {group} run {running}, the spec asks for {wanted}",
                evidence=[
                    field_evidence(view.ref, f"{path}.spec.containers[0].image", wanted, "cr.spec"),
                    *(
                        field_evidence(
                            facts.ref(p, "Pod"),
                            "spec.containers[0].image",
                            str(facts.ray_container(facts.pod_spec(p)).get("image")),
                        )
                        for p in stale[:3]
                    ),
                ],
                explanation="KubeRay applies only replica changes to existing Pods"
                + (
                    "; with upgradeStrategy Recreate the operator should replace them soon."
                    if recreate
                    else ", unless spec.upgradeStrategy.type is Recreate."
                ),
                remediation=["Set spec.upgradeStrategy.type: Recreate, delete the Pods, or recreate the RayCluster."],
            )


@checker(DELETE_STUCK)
def check_deleting(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        if not view.deleting:
            continue
        since = facts.seconds_since(objects.meta(view.obj).get("deletionTimestamp"), snap.now) or 0
        finalizers = list(objects.meta(view.obj).get("finalizers") or [])
        if since < DELETE_GRACE_SECONDS or not finalizers:
            continue
        redis = c.GCS_FT_REDIS_CLEANUP_FINALIZER in finalizers
        yield finding(
            DELETE_STUCK,
            cluster=view.ref,
            obj=view.ref,
            severity="error",
            title=f"The RayCluster has been terminating for {facts.human_age(since)}, held by {', '.join(finalizers)}",
            evidence=[
                field_evidence(view.ref, "metadata.finalizers", finalizers, "cr.spec"),
                *(facts.event_evidence(e, view.ref, snap.now) for e in facts.latest_events(view.events)[:3]),
            ],
            explanation=(
                "The GCS fault-tolerance finalizer waits for a Redis cleanup Job; if that Job cannot be "
                "created or fails, the RayCluster never goes."
                if redis
                else "A controller that owns this finalizer has not removed it."
            ),
            remediation=[
                "Fix what blocks the cleanup (see the events); as a last resort: kubectl patch raycluster "
                f"{view.name} -n {view.namespace} --type json -p "
                '\'[{"op":"remove","path":"/metadata/finalizers"}]\''
            ],
        )


@checker(SUSPENDED)
def check_suspended(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        if view.managed_elsewhere:
            yield finding(
                SUSPENDED,
                cluster=view.ref,
                obj=view.ref,
                severity="info",
                title=f"Reconciled by {view.spec.get('managedBy')}, not by the KubeRay operator",
                evidence=[field_evidence(view.ref, "spec.managedBy", view.spec.get("managedBy"), "cr.spec")],
                explanation="The operator leaves RayClusters managed by another controller alone.",
                effects={t.reconcile(view.key), *_creation_effects(view)},
            )
        elif view.suspended:
            yield finding(
                SUSPENDED,
                cluster=view.ref,
                obj=view.ref,
                severity="info",
                title="The RayCluster is suspended: it has no Pods on purpose",
                evidence=[field_evidence(view.ref, "spec.suspend", view.spec.get("suspend"), "cr.spec")],
                remediation=["Set spec.suspend: false to resume (Kueue does this when it admits the workload)."],
            )
        else:
            for group in view.groups:
                if group.spec.get("suspend"):
                    yield finding(
                        SUSPENDED,
                        cluster=view.ref,
                        obj=view.ref,
                        severity="info",
                        title=f"Worker group {group.name} is suspended",
                        evidence=[field_evidence(view.ref, f"{group.path}.suspend", True, "cr.spec")],
                    )

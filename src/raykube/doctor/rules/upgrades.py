"""A RayService's incremental upgrade (``NewClusterWithIncrementalUpgrade``, KubeRay v1.7.0) and ``spec.suspend``.

The incremental upgrade moves traffic through a Gateway (``<rs>-gateway``) and an HTTPRoute (``<rs>-httproute``)
that a Gateway API implementation must program; when it does not, KubeRay's pass fails or the traffic stays where it
is, and nothing on the RayService says why. These rules read the Gateway API objects (when the API server serves
them) and the RayService's status:

* the Gateway API not served at all (the pass fails before any cluster is made, as in v1.7.0);
* the GatewayClass the upgrade options name missing or not accepted by any controller;
* the Gateway not Accepted/Programmed, the HTTPRoute not Accepted or its backends not resolved;
* an upgrade stuck at a step: the pending cluster is ready, yet its traffic share has not moved for several
  intervals;
* a suspended RayService (nothing runs or serves until ``spec.suspend`` is false), and one stuck suspending.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import (
    STAGE_RECONCILE,
    STAGE_SPEC,
    STAGE_WORKLOAD,
    checker,
    field_evidence,
    finding,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects
from raykube.kube.resources import Resource

GATEWAY_API_MISSING = rule(
    "U01",
    "GATEWAY_API_NOT_SERVED",
    STAGE_RECONCILE,
    "A RayService upgrades incrementally but the API server serves no Gateway API (gateway.networking.k8s.io/v1)",
)
GATEWAY_CLASS_MISSING = rule(
    "U02",
    "GATEWAY_CLASS_NOT_READY",
    STAGE_RECONCILE,
    "The GatewayClass an incremental upgrade names does not exist or no controller accepted it",
)
GATEWAY_NOT_PROGRAMMED = rule(
    "U03",
    "GATEWAY_NOT_PROGRAMMED",
    STAGE_WORKLOAD,
    "The RayService's Gateway is not Accepted or not Programmed by its Gateway API implementation",
)
ROUTE_NOT_ACCEPTED = rule(
    "U04",
    "HTTPROUTE_NOT_ACCEPTED",
    STAGE_WORKLOAD,
    "The RayService's HTTPRoute is not Accepted by its Gateway or its backends (the serve Services) do not resolve",
)
UPGRADE_STALLED = rule(
    "U05",
    "INCREMENTAL_UPGRADE_STALLED",
    STAGE_WORKLOAD,
    "An incremental upgrade's traffic share has not moved for several intervals though the pending cluster is ready",
)
SUSPENDED = rule(
    "U06",
    "RAYSERVICE_SUSPENDED",
    STAGE_SPEC,
    "The RayService is suspended (spec.suspend), or has been suspending for long: nothing runs or serves",
)

# A step is late after this many intervalSeconds without a move (and never before this many seconds).
STALLED_INTERVALS: Final = 3
STALLED_MIN_SECONDS: Final = 60.0
SUSPENDING_SLOW_SECONDS: Final = 120.0


def _gateway(namespace: str, service: str) -> str:
    return f"gateway:{namespace}/{service}"


def _route(namespace: str, service: str) -> str:
    return f"httproute:{namespace}/{service}"


def _traffic(namespace: str, service: str) -> str:
    return f"traffic:{namespace}/{service}"


def _options(service: Obj) -> Mapping[str, Any] | None:
    if not facts.incremental_upgrade(service):
        return None
    return ((service.get("spec") or {}).get("upgradeStrategy") or {}).get("clusterUpgradeOptions") or {}


def _conditions(obj: Obj | None) -> dict[str, Mapping[str, Any]]:
    return {str(x.get("type")): x for x in ((obj or {}).get("status") or {}).get("conditions") or []}


def _text(condition: Mapping[str, Any] | None) -> str:
    if not condition:
        return "no such condition yet"
    text = f"{condition.get('status')}/{condition.get('reason') or ''}"
    return text + (f": {condition['message']}" if condition.get("message") else "")


def _not_true(conditions: Mapping[str, Mapping[str, Any]], *types: str) -> list[str]:
    return [kind for kind in types if (conditions.get(kind) or {}).get("status") != "True"]


def _forbidden(snap: Snapshot, resource: Resource) -> bool:
    return any(str(resource) in n.what for n in snap.not_checked)


@checker(GATEWAY_API_MISSING, GATEWAY_CLASS_MISSING, GATEWAY_NOT_PROGRAMMED, ROUTE_NOT_ACCEPTED)
def check_gateway(snap: Snapshot) -> Iterator[Finding]:
    for service in snap.rayservices:
        options = _options(service)
        if options is None:
            continue
        ref = facts.ref(service, c.KIND_RAYSERVICE)
        namespace, name = objects.namespace(service), objects.name(service)
        strategy = field_evidence(ref, "spec.upgradeStrategy.type", c.RAYSERVICE_UPGRADE_INCREMENTAL, "cr.spec")
        if not snap.has(s.GATEWAYS):
            if _forbidden(snap, s.GATEWAYS):
                continue  # not read: the not-checked line says why
            yield finding(
                GATEWAY_API_MISSING,
                cluster=ref,
                obj=ref,
                severity="error",
                title=f"RayService {name} upgrades through a Gateway, but this cluster serves no Gateway API",
                evidence=[strategy, field_evidence(ref, "GET /apis/gateway.networking.k8s.io/v1", "404", "object")],
                explanation="NewClusterWithIncrementalUpgrade makes a Gateway and an HTTPRoute; without their CRDs "
                "(and an implementation that programs them) KubeRay's pass fails on every try, before it makes any "
                "cluster, and the RayService stays as it is.",
                remediation=[
                    "Install a Gateway API implementation (its CRDs and controller: Istio, Envoy Gateway, Traefik, "
                    "...), then restart the operator (it looks for the API when it starts); or set "
                    "spec.upgradeStrategy.type to NewCluster.",
                ],
                effects={_gateway(namespace, name), _route(namespace, name), _traffic(namespace, name)},
            )
            continue
        class_name = str(options.get("gatewayClassName") or "")
        if class_name and snap.has(s.GATEWAYCLASSES):
            found = snap.get(s.GATEWAYCLASSES, None, class_name)
            missing = _not_true(_conditions(found), "Accepted") if found is not None else ["exists"]
            if missing:
                seen = "no such GatewayClass" if found is None else _text(_conditions(found).get("Accepted"))
                yield finding(
                    GATEWAY_CLASS_MISSING,
                    cluster=ref,
                    obj=ref,
                    severity="error",
                    title=f"GatewayClass {class_name} of RayService {name}'s upgrade is "
                    + ("missing" if found is None else "not accepted by any controller"),
                    evidence=[
                        field_evidence(
                            ref, "spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName", class_name, "cr.spec"
                        ),
                        field_evidence(
                            ObjectRef("GatewayClass", class_name, ""), "status.conditions[Accepted]", seen, "object"
                        ),
                        *(
                            field_evidence(
                                ObjectRef("GatewayClass", objects.name(g), ""),
                                "spec.controllerName",
                                (g.get("spec") or {}).get("controllerName"),
                                "object",
                            )
                            for g in snap.all(s.GATEWAYCLASSES)[:3]
                        ),
                    ],
                    explanation="The Gateway KubeRay makes names this class; no controller programs a Gateway of a "
                    "class that does not exist or that it did not accept, so the traffic never moves.",
                    remediation=[
                        "Name an existing class (kubectl get gatewayclass) in "
                        "spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName."
                    ],
                    effects={_gateway(namespace, name), _traffic(namespace, name)},
                )
                continue
        yield from _gateway_and_route(snap, service, ref)


def _gateway_and_route(snap: Snapshot, service: Obj, ref: ObjectRef) -> Iterator[Finding]:
    namespace, name = objects.namespace(service), objects.name(service)
    gateway = snap.get(s.GATEWAYS, namespace, f"{name}-gateway")
    if gateway is not None:
        conditions = _conditions(gateway)
        bad = _not_true(conditions, "Accepted", "Programmed")
        if bad:
            gref = ObjectRef("Gateway", objects.name(gateway), namespace)
            yield finding(
                GATEWAY_NOT_PROGRAMMED,
                cluster=ref,
                obj=gref,
                severity="error",
                title=f"Gateway {objects.name(gateway)} is not {' or '.join(bad)}: "
                + _text(conditions.get(bad[0]))[:160],
                evidence=[
                    field_evidence(gref, f"status.conditions[{k}]", _text(conditions.get(k)), "object")
                    for k in ("Accepted", "Programmed")
                ],
                explanation="The Gateway API implementation has not taken the RayService's Gateway (its class, "
                "its listener's port, its addresses): no request reaches either cluster through it, and the "
                "upgrade's traffic steps have nowhere to go.",
                remediation=[
                    f"kubectl describe gateway {objects.name(gateway)} -n {namespace}; read the "
                    "implementation's controller logs."
                ],
                symptoms={_gateway(namespace, name)},
                effects={_route(namespace, name), _traffic(namespace, name)},
            )
    route = snap.get(s.HTTPROUTES, namespace, f"{name}-httproute")
    if route is None:
        return
    rref = ObjectRef("HTTPRoute", objects.name(route), namespace)
    evidence: list[Evidence] = []
    bad_kinds: list[str] = []
    for parent in (route.get("status") or {}).get("parents") or []:
        conditions = {str(x.get("type")): x for x in parent.get("conditions") or []}
        for kind in _not_true(conditions, "Accepted", "ResolvedRefs"):
            bad_kinds.append(kind)
            parent_name = (parent.get("parentRef") or {}).get("name")
            evidence.append(
                field_evidence(
                    rref, f"status.parents[{parent_name}].conditions[{kind}]", _text(conditions.get(kind)), "object"
                )
            )
    if evidence:
        yield finding(
            ROUTE_NOT_ACCEPTED,
            cluster=ref,
            obj=rref,
            severity="error",
            title=f"HTTPRoute {objects.name(route)} is not {' or '.join(dict.fromkeys(bad_kinds))}: "
            + str(evidence[0].value)[:160],
            evidence=evidence,
            explanation="The route carries the weights KubeRay moves from the active to the pending cluster's serve "
            "Service; a route its Gateway did not accept, or whose backends do not resolve, moves nothing.",
            remediation=[f"kubectl describe httproute {objects.name(route)} -n {namespace}"],
            symptoms={_route(namespace, name)},
            effects={_traffic(namespace, name)},
        )


@checker(UPGRADE_STALLED)
def check_stalled(snap: Snapshot) -> Iterator[Finding]:
    for service in snap.rayservices:
        options = _options(service)
        if options is None:
            continue
        status = service.get("status") or {}
        pending, active = status.get("pendingServiceStatus") or {}, status.get("activeServiceStatus") or {}
        cluster_name = str(pending.get("rayClusterName") or "")
        if not cluster_name or int(pending.get("trafficRoutedPercent") or 0) >= 100:
            continue
        cluster = snap.get(s.RAYCLUSTERS, objects.namespace(service), cluster_name)
        if cluster is None or (cluster.get("status") or {}).get("state") != c.CLUSTER_STATE_READY:
            continue  # S05 says the pending cluster is not ready
        interval = float(options.get("intervalSeconds") or 0) or 1.0
        since = facts.seconds_since(pending.get("lastTrafficMigratedTime"), snap.now)
        if since is None or since < max(STALLED_INTERVALS * interval, STALLED_MIN_SECONDS):
            continue
        ref = facts.ref(service, c.KIND_RAYSERVICE)
        namespace, name = objects.namespace(service), objects.name(service)
        share = int(pending.get("trafficRoutedPercent") or 0)
        yield finding(
            UPGRADE_STALLED,
            cluster=ref,
            obj=ref,
            severity="error",
            title=f"RayService {name}'s incremental upgrade is stuck at {share}% to {cluster_name} for "
            f"{facts.human_age(since)} (a step every {interval:g}s)",
            evidence=[
                field_evidence(ref, "status.pendingServiceStatus.trafficRoutedPercent", share, "cr.status"),
                field_evidence(
                    ref, "status.pendingServiceStatus.targetCapacity", pending.get("targetCapacity"), "cr.status"
                ),
                field_evidence(
                    ref,
                    "status.pendingServiceStatus.lastTrafficMigratedTime",
                    pending.get("lastTrafficMigratedTime"),
                    "cr.status",
                ),
                field_evidence(
                    ref,
                    "status.activeServiceStatus.trafficRoutedPercent",
                    active.get("trafficRoutedPercent"),
                    "cr.status",
                ),
                field_evidence(
                    ObjectRef(c.KIND_RAYCLUSTER, cluster_name, namespace),
                    "status.state",
                    c.CLUSTER_STATE_READY,
                    "cr.status",
                ),
            ],
            explanation="KubeRay moves stepSizePercent of the traffic every intervalSeconds once the pending "
            "cluster is ready and its Serve applications run, up to its targetCapacity; a share that stays put "
            "means the step cannot be applied (the HTTPRoute or Gateway), the pending side's capacity does not grow "
            "(maxSurgePercent, its applications), or the operator is not reconciling the RayService.",
            remediation=[
                f"kubectl get httproute {name}-httproute -n {namespace} -o yaml (the backendRefs' weights)",
                f"kubectl describe rayservice {name} -n {namespace} (events, UpgradeInProgress)",
            ],
            symptoms={_traffic(namespace, name)},
        )


@checker(SUSPENDED)
def check_suspended(snap: Snapshot) -> Iterator[Finding]:
    for service in snap.rayservices:
        conditions = _conditions(service)
        suspended, suspending = (
            conditions.get(c.CONDITION_RAYSERVICE_SUSPENDED),
            conditions.get(c.CONDITION_RAYSERVICE_SUSPENDING),
        )
        ref = facts.ref(service, c.KIND_RAYSERVICE)
        name, namespace = objects.name(service), objects.namespace(service)
        asked = bool((service.get("spec") or {}).get("suspend"))
        if (suspending or {}).get("status") == "True":
            since = facts.seconds_since((suspending or {}).get("lastTransitionTime"), snap.now)
            if since is None or since < SUSPENDING_SLOW_SECONDS:
                continue
            left = [
                objects.name(x)
                for x in snap.in_namespace(s.RAYCLUSTERS, namespace)
                if any(
                    o.get("kind") == c.KIND_RAYSERVICE and o.get("name") == name
                    for o in objects.meta(x).get("ownerReferences") or []
                )
            ]
            yield finding(
                SUSPENDED,
                cluster=ref,
                obj=ref,
                severity="warning",
                title=f"RayService {name} has been suspending for {facts.human_age(since)}"
                + (f": RayClusters left {', '.join(left)}" if left else ""),
                evidence=[
                    field_evidence(ref, "status.conditions[Suspending]", _text(suspending), "cr.status"),
                    field_evidence(ref, "spec.suspend", asked, "cr.spec"),
                ],
                explanation="KubeRay deletes the RayService's clusters, its serve and head Services and its Gateway "
                "objects, then marks it Suspended; a cluster that is not going away (a finalizer, the operator "
                "not running) keeps it suspending.",
                remediation=[f"`raykube doctor raycluster/{left[0]} -n {namespace}` (why it is not deleted)"]
                if left
                else [f"kubectl describe rayservice {name} -n {namespace}"],
                symptoms={f"suspending:{namespace}/{name}"},
            )
        elif (suspended or {}).get("status") == "True" and asked:
            yield finding(
                SUSPENDED,
                cluster=ref,
                obj=ref,
                severity="info",
                title=f"RayService {name} is suspended: no RayCluster, nothing serves until spec.suspend is false",
                evidence=[
                    field_evidence(ref, "spec.suspend", True, "cr.spec"),
                    field_evidence(ref, "status.conditions[Suspended]", _text(suspended), "cr.status"),
                ],
                explanation="A suspended RayService keeps its spec and nothing else; resuming starts it from "
                "scratch (Ready goes back to Initializing, so the initializing timeout counts again).",
                remediation=[
                    f'kubectl patch rayservice {name} -n {namespace} --type merge -p \'{{"spec":{{"suspend":false}}}}\''
                ],
            )

"""The head's network identity: the head Service exists, selects the head Pod, its EndpointSlices hold the head's
address; and the two symptoms users see: workers that cannot reach the GCS, and a dashboard that will not open.
NetworkPolicies are judged in :mod:`raykube.doctor.rules.policies`.

Workers reach the GCS at ``<head-svc>.<ns>.svc.<domain>:6379``. KubeRay's head Service is headless with
``publishNotReadyAddresses``, so its EndpointSlices hold the head's IP as soon as it has one, Ready or not: an empty
EndpointSlice means no head Pod with an IP matches the selector (the seed's "Endpoints 为空").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import ClusterView
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import (
    STAGE_DOWNSTREAM,
    STAGE_ENDPOINTS,
    STAGE_GCS,
    STAGE_SERVICE,
    checker,
    field_evidence,
    finding,
    plural,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

SERVICE_MISSING = rule(
    "F05", "HEAD_SERVICE_MISSING", STAGE_SERVICE, "The head Service does not exist", ["ray docs troubleshooting"]
)
SELECTOR_MISMATCH = rule(
    "F06", "HEAD_SERVICE_SELECTOR_MISMATCH", STAGE_SERVICE, "The head Service's selector does not match the head Pod"
)
PORT_MISSING = rule(
    "F08", "HEAD_SERVICE_PORT_MISSING", STAGE_SERVICE, "The head Service lacks the GCS or dashboard port"
)
NO_ENDPOINTS = rule(
    "F02",
    "HEAD_SERVICE_NO_ENDPOINTS",
    STAGE_ENDPOINTS,
    "The head Service's EndpointSlices hold no address of the head Pod",
    ["ray-project/ray#25909", "k8sgpt service analyzer"],
)
WORKERS_NO_GCS = rule(
    "E01",
    "WORKER_WAITING_FOR_GCS",
    STAGE_GCS,
    "Workers cannot reach the GCS on the head (Init:0/1 in wait-gcs-ready)",
    ["ray-project/kuberay#1187", "ray-project/kuberay#2519", "ray-project/ray#40562"],
)
DASHBOARD = rule(
    "F07",
    "DASHBOARD_UNREACHABLE",
    STAGE_DOWNSTREAM,
    "`kubectl port-forward svc/<head-svc> 8265` (or the Ingress) cannot reach the dashboard",
)


def dashboard_port(view: ClusterView) -> int:
    return view.dashboard_port


def gcs_port(view: ClusterView) -> int:
    return view.gcs_port


def _has_port(service: Mapping[str, Any], number: int, name: str) -> bool:
    for port in (service.get("spec") or {}).get("ports") or []:
        if port.get("name") == name or port.get("port") == number or port.get("targetPort") in (number, name):
            return True
    return False


def endpoint_addresses(snap: Snapshot, view: ClusterView, service: Obj) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    for sl in snap.endpointslices_for(view.namespace, objects.name(service)):
        for endpoint in sl.get("endpoints") or []:
            ready = (endpoint.get("conditions") or {}).get("ready") is not False
            out.extend((str(a), ready) for a in endpoint.get("addresses") or [])
    return out


def _gcs_tokens(view: ClusterView) -> set[str]:
    return {t.gcs(view.key), t.dashboard(view.key)}


def _service_state(snap: Snapshot, view: ClusterView) -> dict[str, Any]:
    """Cached per cluster: what is wrong with the head Service (shared by the Service, GCS and dashboard rules)."""
    cache: dict[str, dict[str, Any]] = snap.extra.setdefault("service_state", {})
    if view.key in cache:
        return cache[view.key]
    state: dict[str, Any] = {"missing": False, "mismatch": {}, "no_endpoints": False, "dashboard_port": True}
    service = view.head_service
    head = view.head
    if not snap.has(s.SERVICES):
        cache[view.key] = state
        return state
    if service is None:
        state["missing"] = True
    else:
        selector: Mapping[str, str] = (service.get("spec") or {}).get("selector") or {}
        wanted = objects.labels(head) if head is not None else view.head_service_selector
        if head is not None:
            state["mismatch"] = {k: v for k, v in selector.items() if wanted.get(k) != v}
        else:
            state["mismatch"] = {k: v for k, v in selector.items() if k in wanted and wanted[k] != v}
        if not selector:
            state["mismatch"] = {"(selector)": "none"}
        state["dashboard_port"] = _has_port(service, dashboard_port(view), c.DASHBOARD_PORT_NAME)
        state["gcs_port"] = _has_port(service, gcs_port(view), c.GCS_SERVER_PORT_NAME)
        state["headless"] = (service.get("spec") or {}).get("clusterIP") == c.CLUSTER_IP_NONE
        if snap.has(s.ENDPOINTSLICES):
            addresses = endpoint_addresses(snap, view, service)
            publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
            usable = [a for a, ready in addresses if ready or publish]
            head_ip = str(((head or {}).get("status") or {}).get("podIP") or "")
            state["addresses"] = usable
            state["no_endpoints"] = not usable or bool(head_ip and head_ip not in usable and state["mismatch"])
    cache[view.key] = state
    return state


@checker(SERVICE_MISSING, SELECTOR_MISMATCH, PORT_MISSING, NO_ENDPOINTS)
def check_service(snap: Snapshot) -> Iterator[Finding]:
    if not snap.has(s.SERVICES):
        return
    for view in facts.cluster_views(snap):
        if view.suspended or view.managed_elsewhere:
            continue
        state = _service_state(snap, view)
        service = view.head_service
        if state["missing"]:
            events = facts.latest_events(view.operator_events or view.events, c.EVENT_FAILED_TO_CREATE_SERVICE)
            yield finding(
                SERVICE_MISSING,
                cluster=view.ref,
                obj=ObjectRef("Service", view.head_service_name, view.namespace),
                severity="error",
                title=f'The head Service "{view.head_service_name}" does not exist',
                evidence=[
                    field_evidence(
                        ObjectRef("Service", view.head_service_name, view.namespace), "metadata.name", "NotFound"
                    ),
                    field_evidence(
                        None,
                        "services labelled " + ",".join(f"{k}={v}" for k, v in view.head_service_selector.items()),
                        "none",
                    ),
                ]
                + [facts.event_evidence(e, view.ref, snap.now) for e in events[:2]],
                explanation="Workers find the GCS through this Service's DNS name and port-forwards go through it. "
                "The operator creates it when no Service carries the head Service labels, so one that stays "
                "missing means the operator is not reconciling, or fails to create it.",
                remediation=[
                    "Let the operator recreate it (check the operator is running and may create services); "
                    f"then `kubectl get svc {view.head_service_name} -n {view.namespace}`."
                ],
                symptoms={t.create_service(view.key)},
                effects={t.endpoints(view.key), *_gcs_tokens(view)},
            )
            continue
        if service is None:
            continue
        svc_ref = facts.ref(service, "Service")
        if state["mismatch"]:
            head = view.head
            labels = objects.labels(head) if head is not None else view.head_service_selector
            yield finding(
                SELECTOR_MISMATCH,
                cluster=view.ref,
                obj=svc_ref,
                severity="error",
                confidence="confirmed" if head is not None else "likely",
                title=f'The head Service "{objects.name(service)}" selects '
                + ", ".join(f"{k}={v}" for k, v in sorted(state["mismatch"].items()))
                + (
                    ", which the head Pod does not carry"
                    if head is not None
                    else ", which KubeRay's head Pods do not carry"
                ),
                evidence=[
                    field_evidence(svc_ref, "spec.selector", (service.get("spec") or {}).get("selector"), "object"),
                    field_evidence(
                        facts.ref(head, "Pod") if head is not None else view.ref,
                        "metadata.labels" if head is not None else "head Pod labels (expected)",
                        {k: labels.get(k) for k in state["mismatch"]},
                        "pod.spec",
                    ),
                ],
                explanation="A Service sends traffic only to Pods carrying every label of its selector; this one "
                "matches no head Pod, so its EndpointSlices are empty and its DNS name resolves to nothing. KubeRay "
                "never updates an existing head Service, so an edited selector stays broken.",
                remediation=[
                    f"Restore the selector ({', '.join(f'{k}={v}' for k, v in view.head_service_selector.items())}),"
                    f" or delete the Service so the operator recreates it: kubectl delete svc "
                    f"{objects.name(service)} -n {view.namespace}"
                ],
                effects={t.endpoints(view.key), *_gcs_tokens(view)},
            )
        if not state["dashboard_port"] or (not state.get("gcs_port", True) and not state.get("headless")):
            missing = []
            if not state.get("gcs_port", True) and not state.get("headless"):
                missing.append(f"GCS {gcs_port(view)}")
            if not state["dashboard_port"]:
                missing.append(f"dashboard {dashboard_port(view)}")
            effects = set()
            if not state["dashboard_port"]:
                effects.add(t.dashboard(view.key))
            if not state.get("gcs_port", True) and not state.get("headless"):
                effects.add(t.gcs(view.key))
            yield finding(
                PORT_MISSING,
                cluster=view.ref,
                obj=svc_ref,
                severity="error" if t.gcs(view.key) in effects else "warning",
                title=f'The head Service "{objects.name(service)}" has no {" or ".join(missing)} port',
                evidence=[
                    field_evidence(
                        svc_ref,
                        "spec.ports",
                        [
                            {k: p.get(k) for k in ("name", "port", "targetPort") if k in p}
                            for p in (service.get("spec") or {}).get("ports") or []
                        ],
                    )
                ],
                explanation="KubeRay takes the Service's ports from the head container's ports; a custom headService "
                "or container ports without these leave them out, and port-forwards to the Service fail.",
                remediation=[
                    "Declare the port in the head container (name dashboard, containerPort 8265; "
                    "name gcs-server, 6379) or in headGroupSpec.headService."
                ],
                effects=effects,
            )
        if state["no_endpoints"]:
            head = view.head
            head_ip = ((head or {}).get("status") or {}).get("podIP")
            yield finding(
                NO_ENDPOINTS,
                cluster=view.ref,
                obj=svc_ref,
                severity="error",
                title=f'The head Service "{objects.name(service)}" has no endpoint for the head Pod',
                evidence=[
                    field_evidence(
                        svc_ref,
                        "endpointslices (kubernetes.io/service-name)",
                        state.get("addresses") or "no addresses",
                        "object",
                    ),
                    field_evidence(facts.ref(head, "Pod"), "status.podIP", head_ip or "none yet", "pod.status")
                    if head is not None
                    else field_evidence(None, "head Pod", "none", "pod.status"),
                ],
                explanation="Empty endpoints mean the problem is in the head Pod (missing, not scheduled, no IP) or "
                "in the selector, not in the Service: `kubectl get endpoints` shows <none>, workers cannot resolve "
                "the head and port-forwards fail.",
                remediation=[
                    f"kubectl get endpointslices -n {view.namespace} -l kubernetes.io/service-name="
                    f"{objects.name(service)}; then fix the head Pod or the selector (see the cause above)."
                ],
                symptoms={t.endpoints(view.key)},
                effects=_gcs_tokens(view),
            )


def _waiting_for_gcs(pod: Obj) -> facts.ContainerState | None:
    for state in facts.container_states(pod):
        if state.init and state.name == c.WAIT_GCS_READY_INIT_CONTAINER and state.state == "running":
            return state
    return None


@checker(WORKERS_NO_GCS, DASHBOARD)
def check_reachability(snap: Snapshot) -> Iterator[Finding]:  # noqa: PLR0912 - one branch per broken link
    for view in facts.cluster_views(snap):
        if view.suspended or view.managed_elsewhere or view.deleting:
            continue
        state = _service_state(snap, view)
        head = view.head
        head_ready = head is not None and facts.is_ready(head)
        path_broken = state["missing"] or bool(state["mismatch"]) or state["no_endpoints"]
        waiting = [(p, st) for g in view.groups for p in g.live_pods if (st := _waiting_for_gcs(p)) is not None]
        fqdn = f"{view.head_service_name}.{view.namespace}.svc.{c.DEFAULT_CLUSTER_DOMAIN}:{gcs_port(view)}"
        if waiting or (path_broken and any((g.desired or 0) > 0 for g in view.groups)):
            pods = [p for p, _ in waiting]
            effects: set[str] = set()
            for pod in pods:
                effects |= {t.pod_ready(s.key_of(pod)), t.workers(view.key, facts.group_of(pod))}
            evidence: list[Evidence] = [
                field_evidence(
                    facts.ref(p, "Pod"),
                    f"{st.path}.state",
                    st.state + (f" ({st.reason})" if st.reason else ""),
                    "pod.status",
                )
                for p, st in waiting[:3]
            ]
            evidence.append(field_evidence(view.ref, "GCS address of the workers", fqdn, "static"))
            why = []
            if not head_ready:
                why.append("the head is not Ready")
            if path_broken:
                why.append("the head Service gives no address")
            yield finding(
                WORKERS_NO_GCS,
                cluster=view.ref,
                obj=facts.ref(pods[0], "Pod") if pods else view.ref,
                severity="error",
                confidence="confirmed" if waiting else "likely",
                title=(
                    f"{plural(len(pods), 'worker')} wait for the GCS" if pods else "New workers cannot reach the GCS"
                )
                + (f": {' and '.join(why)}" if why else ""),
                evidence=evidence,
                explanation=f"Workers start `ray start --address={fqdn}` only after the init container "
                f'{c.WAIT_GCS_READY_INIT_CONTAINER} reaches the GCS; they stay Init:0/1 ("Waiting for GCS to be '
                'ready") and, once started, raylets report "Failed to connect to GCS". Fix the head and its '
                "Service first: workers follow.",
                remediation=[
                    f"kubectl logs {objects.name(pods[0])} -n {view.namespace} -c {c.WAIT_GCS_READY_INIT_CONTAINER}"
                    if pods
                    else f"kubectl get endpoints {view.head_service_name} -n {view.namespace}"
                ],
                symptoms={t.gcs(view.key)},
                effects=effects,
            )
        head_params = view.head_spec.get("rayStartParams") or {}
        reasons = []
        if head is None:
            reasons.append("there is no head Pod")
        elif not head_ready:
            reasons.append("the head is not Ready")
        if state["missing"]:
            reasons.append("the head Service does not exist")
        elif state["mismatch"] or state["no_endpoints"]:
            reasons.append("the head Service has no endpoint")
        if snap.has(s.SERVICES) and not state["missing"] and not state["dashboard_port"]:
            reasons.append("the head Service has no dashboard port")
        if str(head_params.get("include-dashboard") or "").lower() == "false":
            reasons.append("the dashboard is disabled")
        if not reasons:
            continue
        port = dashboard_port(view)
        yield finding(
            DASHBOARD,
            cluster=view.ref,
            obj=view.ref,
            severity="error",
            title=f"The dashboard will not open: {'; '.join(reasons)}",
            evidence=[field_evidence(view.ref, "dashboard", f"svc/{view.head_service_name}:{port}", "static")],
            explanation="`kubectl port-forward svc/" + view.head_service_name + f" {port}:{port}` needs a Service "
            "with the dashboard port and an endpoint on a head whose dashboard listens on 0.0.0.0.",
            remediation=[
                "Fix the cause above; to reach a head that runs but is not Ready, port-forward to the Pod: "
                f"kubectl port-forward pod/<head-pod> {port}:{port} -n {view.namespace}"
            ],
            symptoms={t.dashboard(view.key)},
        )

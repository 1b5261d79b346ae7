"""Security (the SEC rules of ``docs/doctor.md``): the dashboard and Ray ports exposed without authentication,
credentials in plain spec, privileged Pods, Ingress without TLS, token auth off, no NetworkPolicy. Values of sensitive
variables are never printed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from raykube.api import constants as c
from raykube.api.validation import ray_version_at_least
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor.facts import REDACTED, SENSITIVE_ENV, ClusterView
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import STAGE_ADVISORY, checker, field_evidence, finding, listing, rule
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

EXPOSED = rule(
    "SEC01",
    "DASHBOARD_EXPOSED_NO_AUTH",
    STAGE_ADVISORY,
    "The dashboard / Jobs API is reachable from outside the cluster without authentication",
    ["CVE-2023-48022", "ray-project/kuberay PR#1413", "ray-project/kuberay#4115"],
)
PORTS_EXPOSED = rule(
    "SEC02",
    "RAY_PORTS_EXPOSED",
    STAGE_ADVISORY,
    "GCS, client or agent ports are exposed through LoadBalancer/NodePort/hostPort",
    ["ray-project/ray PR#49080"],
)
NO_TOKEN = rule(
    "SEC03", "TOKEN_AUTH_DISABLED", STAGE_ADVISORY, "Ray token authentication is off", ["ray docs kuberay-auth"]
)
PLAIN_CREDENTIALS = rule(
    "SEC05", "CREDENTIALS_IN_PLAIN_SPEC", STAGE_ADVISORY, "Credentials written as literal values in the spec"
)
PRIVILEGED = rule("SEC06", "PRIVILEGED_RAY_PODS", STAGE_ADVISORY, "Ray Pods run privileged or in the host's namespaces")
NO_ISOLATION = rule(
    "SEC08",
    "NO_NETWORK_ISOLATION",
    STAGE_ADVISORY,
    "No NetworkPolicy selects the Ray Pods",
    ["ray-project/kuberay PR#4638"],
)
NO_TLS = rule("SEC09", "INGRESS_NO_TLS", STAGE_ADVISORY, "An Ingress to the head has no TLS")

EXTERNAL_TYPES = ("LoadBalancer", "NodePort")
# Annotations that make a LoadBalancer internal (reachable from the VPC/VNet only), per cloud provider's docs.
INTERNAL_LB_ANNOTATIONS: Final = {
    "service.beta.kubernetes.io/aws-load-balancer-internal": ("true",),
    "service.beta.kubernetes.io/aws-load-balancer-scheme": ("internal",),
    "networking.gke.io/load-balancer-type": ("internal",),
    "cloud.google.com/load-balancer-type": ("internal",),
    "service.beta.kubernetes.io/azure-load-balancer-internal": ("true",),
    "service.beta.kubernetes.io/oci-load-balancer-internal": ("true",),
    "service.beta.kubernetes.io/alibaba-cloud-loadbalancer-address-type": ("intranet",),
}
# Ingress annotations that put authentication (or an internal-only scheme) in front of the backend.
INGRESS_AUTH_ANNOTATIONS: Final = {
    "nginx.ingress.kubernetes.io/auth-url": None,  # external auth (oauth2-proxy and the like)
    "nginx.ingress.kubernetes.io/auth-type": None,  # basic/digest
    "alb.ingress.kubernetes.io/auth-type": ("cognito", "oidc"),
    "alb.ingress.kubernetes.io/scheme": ("internal",),
}


def _internal_lb(service: Mapping[str, Any]) -> str | None:
    """Why a LoadBalancer Service is not on the internet: an internal-LB annotation, or source ranges without
    0.0.0.0/0; None when nothing says so."""
    annotations = objects.meta(service).get("annotations") or {}
    for key, values in INTERNAL_LB_ANNOTATIONS.items():
        if str(annotations.get(key, "")).strip().lower() in values:
            return f"{key}: {annotations[key]}"
    ranges = (service.get("spec") or {}).get("loadBalancerSourceRanges") or []
    if ranges and not {"0.0.0.0/0", "::/0"} & set(ranges):
        return f"loadBalancerSourceRanges {', '.join(ranges[:3])}"
    return None


def _ingress_guard(ingress: Mapping[str, Any]) -> str | None:
    annotations = objects.meta(ingress).get("annotations") or {}
    for key, values in INGRESS_AUTH_ANNOTATIONS.items():
        value = str(annotations.get(key, "")).strip()
        if value and (values is None or value.lower() in values):
            return f"{key}: {value}"
    return None


RAY_PRIVATE_PORTS = {
    c.DEFAULT_GCS_SERVER_PORT: "GCS",
    c.DEFAULT_CLIENT_PORT: "Ray client",
    c.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT: "dashboard agent",
}
DANGEROUS_CAPABILITIES = frozenset({"SYS_ADMIN", "NET_ADMIN", "ALL", "SYS_PTRACE", "SYS_MODULE"})
# Ray token auth needs Ray 2.52 (KubeRay validation.go), also the first version where it can be turned on.
TOKEN_AUTH_SINCE = c.MIN_RAY_VERSION_TOKEN_AUTH


def auth_enabled(view: ClusterView) -> bool:
    """KubeRay IsAuthEnabled: authOptions.mode == token (an empty authOptions is off), or the user's env says so."""
    if (view.spec.get("authOptions") or {}).get("mode") == c.AUTH_MODE_TOKEN:
        return True
    container = facts.ray_container(facts.pod_spec(view.head_template))
    return any(
        e.get("name") == c.RAY_AUTH_MODE_ENV and e.get("value") == c.AUTH_MODE_TOKEN for e in container.get("env") or []
    )


def _head_services(snap: Snapshot, view: ClusterView) -> list[Obj]:
    head = view.head
    labels = objects.labels(head) if head is not None else view.head_service_selector
    out = []
    for service in snap.in_namespace(s.SERVICES, view.namespace):
        selector = (service.get("spec") or {}).get("selector") or {}
        if service is view.head_service or (selector and all(labels.get(k) == v for k, v in selector.items())):
            out.append(service)
    return out


def _port_of(port: Mapping[str, Any]) -> int | None:
    target = port.get("targetPort")
    if isinstance(target, int):
        return target
    value = port.get("port")
    return value if isinstance(value, int) else None


def _ingresses_to(snap: Snapshot, view: ClusterView) -> list[tuple[Obj, Any]]:
    out = []
    for ingress in snap.in_namespace(s.INGRESSES, view.namespace):
        spec = ingress.get("spec") or {}
        backends = [spec.get("defaultBackend") or {}]
        for rule_ in spec.get("rules") or []:
            backends += [p.get("backend") or {} for p in (rule_.get("http") or {}).get("paths") or []]
        for backend in backends:
            service = backend.get("service") or {}
            if service.get("name") == view.head_service_name:
                port = service.get("port") or {}
                out.append((ingress, port.get("number") or port.get("name")))
    return out


@checker(EXPOSED, PORTS_EXPOSED, NO_TOKEN, NO_TLS)
def check_exposure(snap: Snapshot) -> Iterator[Finding]:  # noqa: PLR0912 - one branch per exposure
    for view in facts.cluster_views(snap):
        auth = auth_enabled(view)
        dashboard_exposed: list[Evidence] = []
        guarded: list[Evidence] = []  # reachable beyond the cluster, but only from the network or after a login
        private_exposed: list[Evidence] = []
        for service in _head_services(snap, view) if snap.has(s.SERVICES) else []:
            kind = (service.get("spec") or {}).get("type") or c.SERVICE_TYPE_CLUSTER_IP
            if kind not in EXTERNAL_TYPES:
                continue
            ref = facts.ref(service, "Service")
            for port in (service.get("spec") or {}).get("ports") or []:
                number = _port_of(port)
                if number == c.DEFAULT_DASHBOARD_PORT or port.get("name") == c.DASHBOARD_PORT_NAME:
                    internal = _internal_lb(service) if kind == "LoadBalancer" else None
                    value = f"{kind} port {port.get('port')}" + (f" (internal: {internal})" if internal else "")
                    (guarded if internal else dashboard_exposed).append(field_evidence(ref, "spec.type/ports", value))
                elif number in RAY_PRIVATE_PORTS:
                    private_exposed.append(
                        field_evidence(
                            ref, "spec.type/ports", f"{kind} port {port.get('port')} ({RAY_PRIVATE_PORTS[number]})"
                        )
                    )
        service_type = view.head_spec.get("serviceType")
        if service_type in EXTERNAL_TYPES and not dashboard_exposed:
            dashboard_exposed.append(
                field_evidence(view.ref, "spec.headGroupSpec.serviceType", service_type, "cr.spec")
            )
        if snap.has(s.INGRESSES):
            for ingress, port in _ingresses_to(snap, view):
                ref = facts.ref(ingress, "Ingress")
                if port in (c.DEFAULT_DASHBOARD_PORT, c.DASHBOARD_PORT_NAME):
                    guard = _ingress_guard(ingress)
                    value = f"{view.head_service_name}:{port}" + (f" (behind {guard})" if guard else "")
                    (guarded if guard else dashboard_exposed).append(
                        field_evidence(ref, "spec.rules[*].backend", value)
                    )
                if not (ingress.get("spec") or {}).get("tls"):
                    yield finding(
                        NO_TLS,
                        cluster=view.ref,
                        obj=ref,
                        severity="warning",
                        title=f"Ingress {objects.name(ingress)} to the head has no TLS",
                        evidence=[field_evidence(ref, "spec.tls", "unset")],
                        explanation="The dashboard (and any auth token) travel in clear text.",
                        remediation=["Add spec.tls with a certificate (cert-manager)."],
                    )
        for _group, path, template in view.templates():
            for index, port in enumerate(facts.ray_container(facts.pod_spec(template)).get("ports") or []):
                if port.get("hostPort") and port.get("containerPort") in {*RAY_PRIVATE_PORTS, c.DEFAULT_DASHBOARD_PORT}:
                    private_exposed.append(
                        field_evidence(
                            view.ref,
                            f"{path}.spec.containers[0].ports[{index}].hostPort",
                            port.get("hostPort"),
                            "cr.spec",
                        )
                    )
        if (dashboard_exposed or guarded) and not auth:
            yield finding(
                EXPOSED,
                cluster=view.ref,
                obj=view.ref,
                # Behind an internal load balancer or an authenticating Ingress it is not open to the internet,
                # but everyone on that network (or with a login) can still run code: a warning, not critical.
                severity="critical" if dashboard_exposed else "warning",
                title=(
                    "The Ray dashboard and Jobs API are exposed outside the cluster without authentication"
                    if dashboard_exposed
                    else "The Ray dashboard and Jobs API are reachable beyond the cluster (internal load balancer or "
                    "authenticating Ingress) without Ray's token authentication"
                ),
                evidence=[
                    *dashboard_exposed,
                    *guarded,
                    field_evidence(
                        view.ref,
                        "spec.authOptions.mode",
                        (view.spec.get("authOptions") or {}).get("mode") or "unset",
                        "cr.spec",
                    ),
                ],
                explanation="Anyone who reaches port 8265 can submit a job, which runs arbitrary code in the cluster "
                "(ShadowRay, CVE-2023-48022, exploited in the wild).",
                remediation=[
                    "Keep the head Service ClusterIP and use `kubectl port-forward`/`kubectl ray session`;",
                    "enable token auth (spec.authOptions.mode: token, Ray ≥ 2.52);",
                    "if it must be reachable, put an internal-only load balancer or an authenticating proxy in front.",
                ],
            )
        if private_exposed:
            yield finding(
                PORTS_EXPOSED,
                cluster=view.ref,
                obj=view.ref,
                severity="critical",
                title="Ray's internal ports are exposed outside the cluster",
                evidence=private_exposed,
                explanation="The GCS (6379), Ray client (10001) and dashboard agent (52365, the Serve PUT API) accept "
                "unauthenticated calls that execute code; an auth proxy on 8265 does not protect them.",
                remediation=[
                    "Expose only what users need (the dashboard behind auth), keep the rest ClusterIP; "
                    "no hostPort on Ray containers."
                ],
            )
        version = view.spec.get("rayVersion") or facts.image_ray_version(
            str(facts.ray_container(facts.pod_spec(view.head_template)).get("image") or "")
        )
        if not auth and version and ray_version_at_least(version, TOKEN_AUTH_SINCE):
            yield finding(
                NO_TOKEN,
                cluster=view.ref,
                obj=view.ref,
                severity="info",
                title=f"Ray token authentication is off (Ray {version} supports spec.authOptions.mode: token)",
                evidence=[
                    field_evidence(view.ref, "spec.authOptions", view.spec.get("authOptions") or "unset", "cr.spec")
                ],
                explanation="Anyone who can reach the head (a port-forward, any Pod in the cluster) can submit jobs. "
                "Note that `authOptions: {}` means off.",
                remediation=["spec.authOptions: {mode: token} (KubeRay generates the Secret)."],
            )


@checker(PLAIN_CREDENTIALS, PRIVILEGED)
def check_pod_security(snap: Snapshot) -> Iterator[Finding]:  # noqa: PLR0912 - one branch per risky setting
    for view in facts.cluster_views(snap):
        plain: list[Evidence] = []
        risky: list[Evidence] = []
        for _group, path, template in view.templates():
            spec = facts.pod_spec(template)
            for cpath, container in facts.containers(spec):
                for index, env in enumerate(container.get("env") or []):
                    name = str(env.get("name") or "")
                    if env.get("value") and SENSITIVE_ENV.search(name):
                        plain.append(
                            field_evidence(view.ref, f"{path}.{cpath}.env[{index}] {name}", REDACTED, "cr.spec")
                        )
                context = container.get("securityContext") or {}
                if context.get("privileged"):
                    risky.append(
                        field_evidence(view.ref, f"{path}.{cpath}.securityContext.privileged", True, "cr.spec")
                    )
                added = set((context.get("capabilities") or {}).get("add") or []) & DANGEROUS_CAPABILITIES
                if added:
                    risky.append(
                        field_evidence(
                            view.ref, f"{path}.{cpath}.securityContext.capabilities.add", sorted(added), "cr.spec"
                        )
                    )
            for key in ("hostPID", "hostIPC", "hostNetwork"):
                if spec.get(key):
                    risky.append(field_evidence(view.ref, f"{path}.spec.{key}", True, "cr.spec"))
            for volume in spec.get("volumes") or []:
                if "hostPath" in volume:
                    risky.append(
                        field_evidence(
                            view.ref,
                            f"{path}.spec.volumes[{volume.get('name')}].hostPath",
                            (volume.get("hostPath") or {}).get("path"),
                            "cr.spec",
                        )
                    )
        options = view.spec.get("gcsFaultToleranceOptions") or {}
        if (options.get("redisPassword") or {}).get("value"):
            plain.append(
                field_evidence(view.ref, "spec.gcsFaultToleranceOptions.redisPassword.value", REDACTED, "cr.spec")
            )
        if (view.head_spec.get("rayStartParams") or {}).get(c.RAY_START_REDIS_PASSWORD_PARAM):
            plain.append(
                field_evidence(view.ref, "spec.headGroupSpec.rayStartParams.redis-password", REDACTED, "cr.spec")
            )
        if plain:
            yield finding(
                PLAIN_CREDENTIALS,
                cluster=view.ref,
                obj=view.ref,
                severity="warning",
                title=f"{len(plain)} credential(s) written as literal values in the RayCluster spec",
                evidence=plain,
                explanation="Anyone who may read the RayCluster or its Pods reads these.",
                remediation=[
                    "Use valueFrom.secretKeyRef (or redisPassword.valueFrom); for cloud credentials prefer "
                    "workload identity (IRSA, GKE Workload Identity)."
                ],
            )
        if risky:
            yield finding(
                PRIVILEGED,
                cluster=view.ref,
                obj=view.ref,
                severity="warning",
                title="Ray Pods run privileged or share the host's namespaces: "
                + listing(sorted({e.path.rsplit(".", 1)[-1] if e.path else "" for e in risky})),
                evidence=risky,
                explanation="Code submitted to Ray runs with these rights; a job can escape to the node. GPU and RDMA "
                "setups sometimes need capabilities: keep only what they need.",
                remediation=["Drop privileged/host* settings; see KubeRay's restricted Pod Security sample."],
            )


@checker(NO_ISOLATION)
def check_isolation(snap: Snapshot) -> Iterator[Finding]:
    if not snap.has(s.NETWORKPOLICIES):
        return
    for view in facts.cluster_views(snap):
        if view.head is None:
            continue
        labels = objects.labels(view.head)
        policies = snap.in_namespace(s.NETWORKPOLICIES, view.namespace)
        if any(facts.selector_matches((p.get("spec") or {}).get("podSelector") or {}, labels) for p in policies):
            continue
        yield finding(
            NO_ISOLATION,
            cluster=view.ref,
            obj=view.ref,
            severity="info",
            title="No NetworkPolicy selects the Ray Pods: any Pod in the cluster can reach the GCS and dashboard",
            evidence=[
                field_evidence(
                    ObjectRef("NetworkPolicy", "*", view.namespace), "spec.podSelector", "none matches the head Pod"
                )
            ],
            remediation=[
                "Allow ingress to ray.io/cluster=" + view.name + " Pods from the cluster's own Pods (and "
                "from the namespaces that need the dashboard) only."
            ],
        )

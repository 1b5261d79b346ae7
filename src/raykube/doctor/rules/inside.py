"""What the in-Pod checks (``--exec``) found inside Ray: the failures where every object looks right.

They read :attr:`~raykube.doctor.snapshot.Snapshot.inside` (see :mod:`raykube.doctor.facts.inside`) and fire only
on what was observed there: a name that does not resolve from a worker, a port a worker cannot connect to, a Ray
port that listens on localhost only, ``ray start`` failing on a port already taken, log lines that say the versions
differ or authentication failed or the memory monitor killed work, Ready Pods whose raylet is not in ``ray
status``. The object store the workers' environment names is :mod:`raykube.doctor.rules.objectstore`'s. Without
``--exec`` they say nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import inside as fi
from raykube.doctor.facts.cluster import ClusterView
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import (
    STAGE_DOWNSTREAM,
    STAGE_GCS,
    STAGE_SERVICE,
    STAGE_START,
    STAGE_WORKERS,
    STAGE_WORKLOAD,
    checker,
    field_evidence,
    finding,
    listing,
    plural,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

NODE_MISSING = rule(
    "R01",
    "RAY_NODE_MISSING",
    STAGE_WORKERS,
    "A Ready Pod's raylet is not a node of the Ray cluster (ray status)",
    ["ray-project/kuberay#2412"],
)
NAME_UNRESOLVED = rule(
    "E02",
    "HEAD_DNS_UNRESOLVABLE",
    STAGE_SERVICE,
    "A worker cannot resolve the head Service's name (in-Pod DNS; the operator's CLUSTER_DOMAIN)",
    ["ray-project/kuberay PR#938", "ray-project/kuberay PR#951"],
)
PORT_UNREACHABLE = rule(
    "R03",
    "HEAD_PORT_UNREACHABLE",
    STAGE_GCS,
    "A worker cannot connect to the GCS, dashboard or client port of the head (blocked on the way)",
    ["ray-project/kuberay#1578"],
)
NODE_PORTS_BLOCKED = rule(
    "R13",
    "RAY_NODE_PORTS_BLOCKED",
    STAGE_DOWNSTREAM,
    "A worker reaches the head's GCS but not its other Ray ports (node manager, object manager, agents, workers)",
    ["ray-project/ray#32215", "ray-project/ray PR#32831"],
)
HEALTH_HUNG = rule(
    "R14",
    "RAY_HEALTH_ENDPOINT_HUNG",
    STAGE_START,
    "A health endpoint the head's probes call accepts connections but does not answer (the dashboard or agent stuck)",
    ["ray-project/ray#63574", "ray-project/ray#47637"],
)
LOOPBACK = rule(
    "R04",
    "RAY_PORT_ON_LOCALHOST",
    STAGE_START,
    "A Ray port on the head listens on localhost only, or not at all",
    ["ray-project/ray#25909"],
)
PORT_IN_USE = rule(
    "R05",
    "RAY_PORT_IN_USE",
    STAGE_START,
    "ray start failed: a port Ray needs is already taken in the Pod (Address already in use)",
    ["ray-project/ray#31393"],
)
GCS_FAILED = rule(
    "D03",
    "GCS_FAILED",
    STAGE_START,
    "The GCS on the head failed (crashed or was killed): the cluster is unusable (logs)",
    ["ray-project/ray#44704", "ray-project/ray#36651"],
)
VERSION = rule(
    "R06",
    "RAY_VERSION_MISMATCH",
    STAGE_START,
    "Ray's logs say the Ray or Python versions of the Pods differ",
    ["ray-project/kuberay#1224"],
)
AUTH = rule(
    "E05",
    "AUTH_TOKEN_MISSING_OR_MISMATCHED",
    STAGE_GCS,
    "Ray's token authentication refuses connections: a token missing or not the cluster's (logs)",
    ["ray-project/ray#59453"],
)
MEMORY_MONITOR = rule(
    "R08",
    "RAY_MEMORY_MONITOR_KILLS",
    STAGE_WORKLOAD,
    "Ray's memory monitor killed tasks or actors (logs)",
    ["ray-project/ray#36345"],
)
RESOURCES = rule(
    "R09",
    "RAY_RESOURCES_SHORT",
    STAGE_DOWNSTREAM,
    "ray status shows less CPU or memory than the RayCluster's status.desiredCPU/desiredMemory, or demands that wait",
)


def pod_ref(pod: Obj) -> ObjectRef:
    return facts.ref(pod, "Pod")


def _log_evidence(snap: Snapshot, pod: Obj, key: str, limit: int = 2) -> list[Evidence]:
    hits = [h for h in fi.log_hits(snap, pod) if h.sign.key == key]
    # The newest lines, without repeats (a crash loop writes the same line each restart).
    seen: dict[str, fi.LogHit] = {}
    for hit in reversed(hits):
        seen.setdefault(_shape(hit.line), hit)
    return [
        Evidence(source="log", object=pod_ref(pod), path=h.source, value=h.line) for h in list(seen.values())[:limit]
    ]


def _shape(line: str) -> str:
    """A log line without its timestamps and numbers, to spot repeats."""
    return "".join(ch for ch in line if not ch.isdigit())[:160]


def _ports(view: ClusterView) -> dict[int, str]:
    return {view.gcs_port: "GCS", view.dashboard_port: "dashboard", view.client_port: "Ray client"}


def workers_of(view: ClusterView, pod: Obj) -> tuple[str, list[Obj]]:
    group = facts.group_of(pod)
    pods = next((g.live_pods for g in view.groups if g.name == group), [pod])
    return group, pods


def probed_workers(view: ClusterView) -> Iterator[tuple[Obj, Mapping[str, Any], str]]:
    for pod in view.pods:
        entry = view.snap.inside.get(s.key_of(pod)) or {}
        result = entry.get("probe")
        if entry.get("role") == "worker" and isinstance(result, Mapping):
            yield pod, result, str(entry.get("container") or "")


@checker(NAME_UNRESOLVED, PORT_UNREACHABLE)
def check_worker_paths(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        head = view.head
        head_result = fi.probe(snap, head) if head is not None else None
        for pod, result, container in probed_workers(view):
            group, group_pods = workers_of(view, pod)
            ray_nodes = {t.ray_node(s.key_of(p)) for p in group_pods}
            where = f"from {objects.name(pod)} (container {container})"
            resolved: Mapping[str, Any] = result.get("resolve") or {}
            failed = {host: r["error"] for host, r in resolved.items() if isinstance(r, Mapping) and r.get("error")}
            domain = result.get("domain")
            if failed:
                host, error = next(iter(failed.items()))
                evidence = [
                    field_evidence(pod_ref(pod), f"getaddrinfo({host})", error, "ray"),
                    field_evidence(pod_ref(pod), "/etc/resolv.conf nameservers", result.get("nameservers"), "ray"),
                    field_evidence(
                        pod_ref(pod), "spec.dnsPolicy", (pod.get("spec") or {}).get("dnsPolicy"), "pod.spec"
                    ),
                    *_gcs_log_lines(snap, pod),
                ]
                fixes = [f"kubectl exec {objects.name(pod)} -n {view.namespace} -c {container} -- getent hosts {host}"]
                if domain is None:
                    why = "its resolv.conf has no search entry of the cluster's DNS: the Pod does not use cluster DNS"
                    fixes.insert(0, "Use dnsPolicy ClusterFirst (or ClusterFirstWithHostNet with hostNetwork).")
                elif domain != c.DEFAULT_CLUSTER_DOMAIN:
                    why = f"the cluster's DNS domain is {domain}"
                    fixes.insert(
                        0, f"Set {c.CLUSTER_DOMAIN_ENV}={domain} in the operator's environment (Helm value env)."
                    )
                else:
                    why = "the cluster DNS does not answer it from this Pod"
                    fixes.insert(
                        0,
                        "Check the Pod's dnsPolicy/dnsConfig, that CoreDNS runs, and that no egress NetworkPolicy "
                        "blocks UDP/TCP 53 from the Ray Pods.",
                    )
                yield finding(
                    NAME_UNRESOLVED,
                    cluster=view.ref,
                    obj=pod_ref(pod),
                    severity="error",
                    title=f"Worker group {group} cannot resolve the head Service's name: {why}",
                    evidence=evidence,
                    explanation="Workers reach the GCS by the head Service's DNS name; when it does not resolve "
                    f'they stay in {c.WAIT_GCS_READY_INIT_CONTAINER} ("Waiting for GCS to be ready") although the '
                    "head, its Service and its endpoints are all fine.",
                    remediation=fixes,
                    symptoms={t.create_service(view.key), t.dns(view.key, group)},
                    effects={t.gcs(view.key), t.workers(view.key, group), *ray_nodes},
                )
                continue
            blocked = [(h, p, e) for h, p, e in fi.service_connects(result, head) if e]
            if not blocked or head is None or not facts.is_ready(head):
                continue  # a head that is not Ready explains a refused port: the object rules say why
            names = _ports(view)
            gcs_blocked = any(p == view.gcs_port for _, p, _ in blocked)
            heard = {p: fi.listeners(head_result, p) for _, p, _ in blocked} if head_result else {}
            evidence = [field_evidence(pod_ref(pod), f"connect {h}:{p}", e, "ray") for h, p, e in blocked]
            if heard:
                evidence += [
                    field_evidence(facts.ref(head, "Pod"), f"listening on port {p}", addrs or "nothing", "ray")
                    for p, addrs in heard.items()
                ]
            if any(not addrs or fi.loopback_only(addrs) for addrs in heard.values()):
                continue  # the head does not listen there (R04/R05 say why), nothing blocks the way
            policies = (
                [objects.name(np) for np in snap.in_namespace(s.NETWORKPOLICIES, view.namespace)]
                if snap.has(s.NETWORKPOLICIES)
                else []
            )
            ports = ", ".join(f"{p} ({names.get(p, 'port')})" for _, p, _ in blocked)
            yield finding(
                PORT_UNREACHABLE,
                cluster=view.ref,
                obj=pod_ref(pod),
                severity="error" if gcs_blocked else "warning",
                title=f"Worker group {group} cannot connect to the head on {ports} although the head listens "
                "there: something between the Pods drops or rejects it",
                evidence=[*evidence, *_gcs_log_lines(snap, pod)],
                explanation="The name resolves and the head listens on its Pod address, yet the connection fails "
                f"{where}: a NetworkPolicy (or a CNI/host firewall, a service mesh sidecar) is in the way. Ray needs "
                "the GCS port from every worker, and many more ports between all Ray Pods.",
                remediation=[
                    (
                        f"Allow the Ray Pods to reach each other: NetworkPolicies in {view.namespace}: "
                        f"{listing(policies)} (kubectl describe networkpolicy -n {view.namespace})"
                        if policies
                        else "No NetworkPolicy here: look at the CNI's policies, host firewalls or a mesh sidecar "
                        "that intercepts the Pod's traffic."
                    ),
                    f"kubectl exec {objects.name(pod)} -n {view.namespace} -c {container} -- "
                    f"python3 -c \"import socket; socket.create_connection(('{blocked[0][0]}', {blocked[0][1]}), 3)\"",
                ],
                effects=(
                    {t.gcs(view.key), t.workers(view.key, group), *ray_nodes}
                    if gcs_blocked
                    else {t.dashboard(view.key)}
                ),
                symptoms={t.ray_network(view.key)},
            )


@checker(NODE_PORTS_BLOCKED)
def check_node_ports(snap: Snapshot) -> Iterator[Finding]:
    """The head's other listening ports, tried from each probed worker (the probe is given them once the head's
    sockets are read): only a connection dropped or rejected on the way counts; a refused one (nothing listens any
    more: a worker process that ended) does not."""
    for view in facts.cluster_views(snap):
        head = view.head
        if head is None or not facts.is_ready(head):
            continue
        for pod, result, container in probed_workers(view):
            service = fi.service_connects(result, head)
            if any(e for _, _, e in service):
                continue  # the head's own ports are blocked already: R03 says so
            blocked = [(h, p, e) for h, p, e in fi.node_connects(result, head) if e and fi.blocked_on_the_way(e)]
            if not blocked:
                continue
            group, _ = workers_of(view, pod)
            names = fi.node_port_names(view.head_spec.get("rayStartParams") or {})
            ports = ", ".join(f"{p}" + (f" ({names[p]})" if p in names else "") for _, p, _ in blocked[:8])
            more = f" and {len(blocked) - 8} more" if len(blocked) > 8 else ""
            yield finding(
                NODE_PORTS_BLOCKED,
                cluster=view.ref,
                obj=pod_ref(pod),
                severity="error",
                title=f"Worker group {group} reaches the head's GCS but not its Ray ports {ports}{more}: tasks "
                "that move objects or run across nodes hang",
                evidence=[
                    *(field_evidence(pod_ref(pod), f"connect {h}:{p}", e, "ray") for h, p, e in blocked[:8]),
                    field_evidence(
                        pod_ref(head), "listening (not localhost)", sorted({p for _, p, _ in blocked}), "ray"
                    ),
                ],
                explanation="Ray's nodes talk to each other on many more ports than the head Service's three: "
                "each raylet's node manager and object manager, the agents, and one port per worker process, most "
                "of them chosen at random. A policy that lets the workers reach only the GCS, dashboard and client "
                "ports (or a firewall between nodes) lets the cluster start and look healthy; then a task whose "
                "arguments or results live on another node, or that is leased a worker there, waits forever.",
                remediation=[
                    f"Allow all TCP between the Ray Pods of {view.ref.name}: a NetworkPolicy rule (ingress and egress) "
                    f"whose peer is podSelector ray.io/cluster={view.ref.name} and that names no ports, as KubeRay's "
                    "networkPolicy DenyAll mode writes it; or pin the ports (rayStartParams node-manager-port, "
                    "object-manager-port, min-worker-port/max-worker-port) and allow those.",
                    f"kubectl exec {objects.name(pod)} -n {view.namespace} -c {container} -- python3 -c "
                    f"\"import socket; socket.create_connection(('{blocked[0][0]}', {blocked[0][1]}), 3)\"",
                ],
                symptoms={t.ray_network(view.key)},
                effects={t.runs_on(view.key)},
            )


@checker(HEALTH_HUNG)
def check_health_endpoints(snap: Snapshot) -> Iterator[Finding]:
    """What the head's probes ask, asked from inside the head: an endpoint whose port listens but whose GET times out
    is a process that is stopped or stuck, and the reason the probes fail (D02 hangs under it)."""
    for view in facts.cluster_views(snap):
        head = view.head
        result = fi.probe(snap, head) if head is not None else None
        if head is None or result is None:
            continue
        hung = fi.hung_endpoints(result)
        if not hung:
            continue
        agent = any(fi.RAYLET_HEALTH_PATH in url for url, _, _ in hung)
        what = "dashboard agent" if agent else "dashboard"
        ref = pod_ref(head)
        evidence = [field_evidence(ref, f"GET {url}", error, "ray") for url, _, error in hung]
        evidence += [field_evidence(ref, f"listening on port {p}", fi.listeners(result, p), "ray") for _, p, _ in hung]
        answered = [
            field_evidence(ref, f"GET {url}", seen.get("status"), "ray")
            for url, seen in (result.get("http") or {}).items()
            if isinstance(seen, Mapping) and seen.get("status")
        ]
        yield finding(
            HEALTH_HUNG,
            cluster=view.ref,
            obj=ref,
            severity="error",
            title=f"The head's {what} accepts connections on {', '.join(str(p) for _, p, _ in hung)} but does not "
            "answer its health check: it is stuck, so the head's probes fail",
            evidence=[*evidence, *answered],
            explanation="KubeRay's readiness and liveness probes ask the dashboard agent (the raylet's health) and "
            "the dashboard (the GCS's). The port is open, so the process is there, yet no answer comes: it is "
            "stopped, deadlocked or starved. The GCS and the raylet may be fine; the head goes not Ready (Services "
            "drop it, RayJobs wait) and the liveness probe restarts it after failureThreshold x period, taking the "
            "whole Ray cluster down with it.",
            remediation=[
                f"kubectl exec {objects.name(head)} -n {view.namespace} -- "
                f"tail -n 50 /tmp/ray/session_latest/logs/{'dashboard_agent' if agent else 'dashboard'}.log",
                f"kubectl exec {objects.name(head)} -n {view.namespace} -- ps -eo pid,stat,etime,args "
                "(a T state is a stopped process, D one stuck on I/O)",
                "Ray 2.11 to 2.37 has an agent that hangs once a job is created (ray-project/ray#47637): upgrade.",
            ],
            # The operator's job-status checks and a submitter's calls go to the dashboard too: a RayJob that
            # failed them (JobStatusCheckTimeoutExceeded) hangs under a stuck dashboard, not under the agent.
            effects={t.pod_ready(s.key_of(head)), t.head(view.key)}
            | (
                set()
                if agent
                else {t.job_dashboard(s.key_of(j)) for j in fi.rayjobs_on(snap, view.namespace, view.ref.name)}
            ),
        )


def _gcs_log_lines(snap: Snapshot, pod: Obj) -> list[Evidence]:
    return _log_evidence(snap, pod, "gcs-unreachable", limit=1)


@checker(LOOPBACK, PORT_IN_USE)
def check_head_ports(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        head = view.head
        if head is None:
            continue
        head_key = s.key_of(head)
        taken = _log_evidence(snap, head, "port-in-use")
        head_tokens = {t.ray_start(head_key), t.pod_ready(head_key), t.head(view.key), t.gcs(view.key)}
        if taken:
            others = [
                str(ctr.get("name"))
                for ctr in (head.get("spec") or {}).get("containers") or []
                if ctr.get("name") != facts.ray_container(head.get("spec") or {}).get("name")
            ]
            result = fi.probe(snap, head)
            holders = (
                [
                    field_evidence(
                        pod_ref(head), f"listening on port {view.gcs_port}", fi.listeners(result, view.gcs_port), "ray"
                    )
                ]
                if result and fi.listeners(result, view.gcs_port)
                else []
            )
            yield finding(
                PORT_IN_USE,
                cluster=view.ref,
                obj=pod_ref(head),
                severity="critical",
                title="The head's ray start fails: a port Ray needs is already in use in the Pod"
                + (f" (other containers in the Pod: {listing(others)})" if others else ""),
                evidence=[*taken, *holders],
                explanation="All containers of a Pod share one network namespace: a sidecar (a Redis, a metrics "
                "exporter, a proxy) or a second process listening on 6379, 8265, 10001 or another Ray port makes "
                "the GCS (or another Ray component) fail to bind, and `ray start` exits or the GCS crashes.",
                remediation=[
                    "Move the other listener to a free port, or give Ray other ports in rayStartParams "
                    "(port, dashboard-port, ray-client-server-port).",
                    f"kubectl logs {objects.name(head)} -n {view.namespace} --all-containers --previous",
                ],
                effects=head_tokens,
            )
            continue
        result = fi.probe(snap, head)
        if result is None or not facts.is_ready(head):
            continue
        names = _ports(view)
        params = view.head_spec.get("rayStartParams") or {}
        for port, what in names.items():
            addrs = fi.listeners(result, port)
            if not fi.loopback_only(addrs):
                continue
            if what == "dashboard" and str(params.get("dashboard-host", "")).strip() in (
                "127.0.0.1",
                "localhost",
                "::1",
            ):
                continue  # F01 says it from the spec, with the fix
            yield finding(
                LOOPBACK,
                cluster=view.ref,
                obj=pod_ref(head),
                severity="error" if what == "GCS" else "warning",
                title=f"The head's {what} port {port} listens on {listing(addrs)} only: other Pods cannot reach it",
                evidence=[field_evidence(pod_ref(head), f"listening on port {port}", addrs, "ray")],
                explanation="A socket bound to the loopback address answers only inside the Pod; the head Service "
                "and the workers connect to the Pod's address. Something in the container's command or environment "
                "binds Ray to localhost (--node-ip-address, --dashboard-host, a RAY_* variable).",
                remediation=["Let Ray bind to the Pod IP (KubeRay's defaults); remove the localhost override."],
                effects={t.gcs(view.key)} if what == "GCS" else {t.dashboard(view.key)},
            )


_SIGKILLED: Final = re.compile(r"gcs_server \[exit code=-9\b")


@checker(GCS_FAILED)
def check_gcs_failed(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        head = view.head
        if head is None or _log_evidence(snap, head, "port-in-use", 1):
            continue  # R05 names the cause of that one
        crashed = _log_evidence(snap, head, "gcs-crash")
        if not crashed:
            continue
        head_key = s.key_of(head)
        killed = any(_SIGKILLED.search(str(e.value)) for e in crashed)
        how = "was killed (SIGKILL: the kernel's OOM killer, or kill -9)" if killed else "failed"
        yield finding(
            GCS_FAILED,
            cluster=view.ref,
            obj=pod_ref(head),
            severity="critical",
            title=f"The GCS on the head {how}: raylets lose it and the cluster cannot schedule anything",
            evidence=crashed,
            explanation="Without GCS fault tolerance the GCS, the head Pod and the whole cluster share one fate: "
            "workers' raylets exit after failing to reach it, and every job and actor is lost. The quoted line is "
            "the GCS's own last word; gcs_server.out/.err in the head hold the rest.",
            remediation=[
                f"kubectl exec {objects.name(head)} -n {view.namespace} -- tail -n 100 {fi.LOG_DIR}/gcs_server.out",
                "Give the head more memory (GCS state grows with actors, tasks and nodes); enable GCS fault "
                "tolerance (gcsFaultToleranceOptions with an external Redis) so a restart keeps the cluster.",
            ],
            effects={t.ray_start(head_key), t.pod_ready(head_key), t.head(view.key), t.gcs(view.key)},
        )


def _gcs_wait(view: ClusterView, evidence: Sequence[Evidence]) -> set[str]:
    """The GCS wait of the workers, when the line came from wait-gcs-ready: KubeRay's init container checks the Ray
    version and the token before it lets Ray start, so that is why the worker waits for the GCS (E01 hangs under)."""
    said = any(str(e.path).endswith(f"-c {c.WAIT_GCS_READY_INIT_CONTAINER}") for e in evidence)
    return {t.gcs(view.key)} if said else set()


@checker(VERSION, AUTH, MEMORY_MONITOR)
def check_log_signs(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        for spec, key, severity in ((VERSION, "version-mismatch", "error"), (AUTH, "auth", "error")):
            pods = [p for p in view.pods if _log_evidence(snap, p, key, 1)]
            if not pods:
                continue
            evidence = [e for p in pods[:2] for e in _log_evidence(snap, p, key, 1)]
            if spec is VERSION:
                images = sorted({str(facts.ray_container(p.get("spec") or {}).get("image")) for p in view.pods})
                evidence.append(field_evidence(view.ref, "images of the Ray Pods", images, "pod.spec"))
            yield finding(
                spec,
                cluster=view.ref,
                obj=pod_ref(pods[0]),
                severity=severity,  # type: ignore[arg-type]
                title=(
                    f"Ray's logs in {plural(len(pods), 'Pod')} say the versions differ"
                    if spec is VERSION
                    else f"Ray refuses connections for authentication in {plural(len(pods), 'Pod')}"
                ),
                evidence=evidence,
                explanation=(
                    "Every Ray Pod (and every client: ray job submit, Ray Client) must run the same Ray and Python "
                    "versions; a worker or driver with another one cannot join."
                    if spec is VERSION
                    else "With token authentication every Ray process and client needs the cluster's token; one "
                    "started without it (or with an old one) is refused."
                ),
                remediation=(
                    ["Use one image (same Ray and Python) for the head and every worker group, and set rayVersion."]
                    if spec is VERSION
                    else [
                        "Give every Pod and client the same token: spec.authOptions (KubeRay mounts the Secret); "
                        "ray job submit needs RAY_AUTH_TOKEN."
                    ]
                ),
                effects={t.ray_start(s.key_of(p)) for p in pods} | {t.runs_on(view.key)} | _gcs_wait(view, evidence),
            )
        pods = [p for p in view.pods if _log_evidence(snap, p, "oom", 1)]
        if pods:
            yield finding(
                MEMORY_MONITOR,
                cluster=view.ref,
                obj=pod_ref(pods[0]),
                severity="warning",
                title=f"Ray's memory monitor killed tasks or actors in {plural(len(pods), 'Pod')}",
                evidence=[e for p in pods[:2] for e in _log_evidence(snap, p, "oom", 1)],
                explanation="Before the kernel OOM-kills a container, Ray kills the newest retriable tasks when "
                "the node's memory passes RAY_memory_usage_threshold (0.95): jobs slow down or fail with "
                "OutOfMemoryError, and the Pods stay Running.",
                remediation=[
                    "Give the Pods more memory (requests = limits), ask for memory in the tasks (memory=...), or "
                    "lower their concurrency."
                ],
                effects={t.runs_on(view.key)},
            )


@checker(NODE_MISSING, RESOURCES)
def check_ray_status(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        head = view.head
        if head is None or not facts.is_ready(head):
            continue
        read = fi.ray_status(snap, head)
        if read is None:
            continue
        status, _ = read
        ready = [p for p in view.pods if facts.is_ready(p) and not facts.terminating(p)]
        missing: list[Obj]
        if status.nodes:
            missing = [p for p in ready if objects.name(p) not in status.nodes]
        else:  # a Ray that does not name its nodes: compare the counts
            missing = ready[status.live :] if status.live < len(ready) else []
        head_ref = pod_ref(head)
        summary = field_evidence(
            head_ref,
            "ray status -v",
            f"{plural(status.live, 'live node')}: "
            + (
                listing(sorted(status.nodes), 6)
                if status.nodes
                else listing(f"{n} {k}" for k, n in status.counts.items())
            ),
            "ray",
        )
        if missing:
            evidence = [summary, *[field_evidence(pod_ref(p), "status", "Ready", "pod.status") for p in missing[:3]]]
            evidence += [field_evidence(head_ref, "ray status: recent failure", f, "ray") for f in status.failures[:2]]
            for pod in missing[:2]:
                evidence += _gcs_log_lines(snap, pod)
            yield finding(
                NODE_MISSING,
                cluster=view.ref,
                obj=pod_ref(missing[0]),
                severity="error",
                title=f"{plural(len(missing), 'Ready Pod')} ({listing(objects.name(p) for p in missing)}) "
                f"{'is' if len(missing) == 1 else 'are'} not in the Ray cluster: ray status shows "
                f"{status.live} of {len(ready)} nodes",
                evidence=evidence,
                explanation="A Pod's readiness probe checks its own raylet; a raylet that registered with another "
                "GCS, lost its GCS connection, or died after start leaves a Ready Pod that Ray cannot use. Tasks "
                "and actors that need its resources wait.",
                remediation=[
                    f"kubectl logs {objects.name(missing[0])} -n {view.namespace} | grep -i gcs",
                    f"kubectl delete pod {objects.name(missing[0])} -n {view.namespace}  # the operator recreates it",
                ],
                symptoms={t.ray_node(s.key_of(p)) for p in missing},
                effects={t.runs_on(view.key)},
            )
            continue
        short = _short_resources(view, status)
        if short or status.demands:
            yield finding(
                RESOURCES,
                cluster=view.ref,
                obj=view.ref,
                severity="warning",
                title="Ray has "
                + (" and ".join(short) if short else "resource demands it cannot place now")
                + (f"; {plural(len(status.demands), 'pending demand')}" if short and status.demands else ""),
                evidence=[
                    summary,
                    *[
                        field_evidence(head_ref, "ray status: total", total[2], "ray")
                        for total in status.totals.values()
                    ],
                    *[field_evidence(head_ref, "ray status: pending demand", d, "ray") for d in status.demands[:3]],
                ],
                explanation="status.desiredCPU/desiredMemory add up the Pods' requests; Ray counts what each "
                "raylet registered (num-cpus, memory in rayStartParams override them). Demands that no node type "
                "can hold wait forever unless the autoscaler can add a node that fits.",
                remediation=["kubectl exec " + objects.name(head) + f" -n {view.namespace} -- ray status -v"],
                effects={t.runs_on(view.key)},
            )


def _short_resources(view: ClusterView, status: fi.RayStatus) -> list[str]:
    out = []
    wanted: Sequence[tuple[str, str, str]] = (("desiredCPU", "CPU", "CPU"), ("desiredMemory", "memory", "memory"))
    for field_name, resource, label in wanted:
        desired = facts.quantity(view.status.get(field_name))
        total = status.totals.get(resource)
        if desired is None or total is None or desired.value <= 0:
            continue
        if total[1] < float(desired.value) * 0.99:
            out.append(f"{label} {total[2].split()[0].split('/')[1]} of the {view.status.get(field_name)} desired")
    return out

"""Ray containers that started: crashing, OOM-killed, Running but not Ready (probes), and the settings that make
``ray start`` fail on the head (GCS fault tolerance's Redis, ports, the dashboard host)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.validation import ray_version_at_least
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import ClusterView
from raykube.doctor.facts import inside as fi
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import (
    STAGE_START,
    checker,
    field_evidence,
    finding,
    plural,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

OOM = rule(
    "D01",
    "OOM_KILLED",
    STAGE_START,
    "A Ray container was OOM-killed (exit 137)",
    ["ray-project/kuberay#4287", "ray-project/kuberay#3897"],
)
HEAD_PROBE = rule(
    "D02",
    "HEAD_PROBE_FAILING",
    STAGE_START,
    "The head is Running but not Ready: its readiness probe fails",
    ["ray-project/kuberay#3799", "ray-project/kuberay#2413"],
)
REDIS = rule(
    "D04",
    "GCS_FT_REDIS_UNREACHABLE",
    STAGE_START,
    "GCS fault tolerance points at a Redis the cluster cannot reach",
    ["ray-project/ray#40562", "ray-project/ray#36792"],
)
PORTS = rule("D06", "PORT_CONFLICT", STAGE_START, "Ray ports collide (rayStartParams, container ports, hostNetwork)")
CRASH = rule("D07", "CRASH_LOOP_BACKOFF", STAGE_START, "A Ray container keeps crashing (CrashLoopBackOff)")
HEAD_RESTARTED = rule(
    "D09",
    "HEAD_RESTARTED",
    STAGE_START,
    "The head's Ray container restarted: without GCS fault tolerance the cluster's jobs and actors went with it",
)
WORKER_PROBE = rule(
    "D08", "WORKER_PROBE_FAILING", STAGE_START, "Workers are Running but not Ready while the head is Ready"
)
DASHBOARD_LOCALHOST = rule(
    "F01",
    "DASHBOARD_BOUND_LOCALHOST",
    STAGE_START,
    "The dashboard listens on localhost only (rayStartParams dashboard-host)",
    ["ray-project/ray#25909"],
)
DASHBOARD_DISABLED = rule(
    "F10", "DASHBOARD_DISABLED", STAGE_START, "The dashboard is disabled (rayStartParams include-dashboard: false)"
)

# Kubernetes kubelet: the event reason of a failing probe, and the waiting reason of a crash loop.
UNHEALTHY = "Unhealthy"
CRASH_LOOP = "CrashLoopBackOff"
OOM_KILLED = "OOMKilled"
# Ray 2.11.0-2.37.x: the dashboard agent hangs and the probes fail (fixed by ray-project/ray#47721).
AGENT_HANG_VERSIONS = ("2.11.0", "2.38.0")
LOCALHOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# Ray `ray start` flags that take a port.
PORT_PARAMS = (
    "port",
    "dashboard-port",
    "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port",
    "metrics-export-port",
    "ray-client-server-port",
    "node-manager-port",
    "object-manager-port",
    "runtime-env-agent-port",
)
# KubeRay utils/constant.go defaults of the ports above (the head listens on all; workers on agent and metrics).
_DEFAULT_PORTS: Mapping[str, int] = {
    "port": c.DEFAULT_GCS_SERVER_PORT,
    "dashboard-port": c.DEFAULT_DASHBOARD_PORT,
    "ray-client-server-port": c.DEFAULT_CLIENT_PORT,
    "dashboard-agent-listen-port": c.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT,
    "metrics-export-port": c.DEFAULT_METRICS_PORT,
}
_WORKER_PORTS = ("dashboard-agent-listen-port", "metrics-export-port")
_HOST_PORT = re.compile(r"^(?:rediss?://)?(?:[^@/]*@)?([^:/]+)(?::(\d+))?")


def _pod_tokens(view: ClusterView, pods: list[Obj]) -> set[str]:
    out: set[str] = set()
    for pod in pods:
        out.add(t.pod_ready(s.key_of(pod)))
        out.add(
            t.head(view.key) if facts.node_type(pod) == c.NODE_TYPE_HEAD else t.workers(view.key, facts.group_of(pod))
        )
    return out


@checker(OOM, CRASH)
def check_crashes(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        oom: list[tuple[Obj, facts.ContainerState]] = []
        crash: list[tuple[Obj, facts.ContainerState]] = []
        for pod in view.pods:
            if facts.terminating(pod):
                continue
            for state in facts.container_states(pod):
                if OOM_KILLED in (state.last_reason, state.reason):
                    oom.append((pod, state))
                elif state.reason == CRASH_LOOP:
                    crash.append((pod, state))
        if oom:
            pods = list({s.key_of(p): p for p, _ in oom}.values())
            head = any(facts.node_type(p) == c.NODE_TYPE_HEAD for p in pods)
            pod, state = oom[0]
            limits = {
                str(ct.get("name")): (ct.get("resources") or {}).get("limits", {}).get("memory")
                for _, ct in facts.containers(facts.pod_spec(pod))
            }
            yield finding(
                OOM,
                cluster=view.ref,
                obj=facts.ref(pod, "Pod"),
                severity="error" if head else "warning",
                title=f"{'The head' if head else plural(len(pods), 'worker')} was OOM-killed "
                f"(container {state.name}, memory limit {limits.get(state.name) or 'none'})",
                evidence=[
                    field_evidence(
                        facts.ref(p, "Pod"),
                        f"{st.path}.lastState.terminated",
                        f"{st.last_reason or st.reason} exit {st.last_exit_code or st.exit_code} "
                        f"(restarts: {st.restarts})",
                        "pod.status",
                    )
                    for p, st in oom[:3]
                ],
                explanation="The kernel killed the container for exceeding its memory limit. On the head this takes "
                "the GCS down (without GCS fault tolerance the whole cluster's state), and workers fall back to "
                "waiting for the GCS.",
                remediation=[
                    'Give the head at least 4Gi (requests = limits), set num-cpus: "0" on the head of big '
                    "clusters so no tasks run there; lower the object store or the workload's memory."
                ],
                effects=_pod_tokens(view, pods) | ({t.gcs(view.key)} if head else set()),
            )
        if crash:
            pods = list({s.key_of(p): p for p, _ in crash}.values())
            pod, state = crash[0]
            last = f"last exit {state.last_exit_code} {state.last_reason}".strip()
            head = any(facts.node_type(p) == c.NODE_TYPE_HEAD for p in pods)
            yield finding(
                CRASH,
                cluster=view.ref,
                obj=facts.ref(pod, "Pod"),
                severity="error",
                title=f"{plural(len(pods), 'Ray Pod')} in CrashLoopBackOff (container {state.name}, {last}, "
                f"{state.restarts} restarts)",
                evidence=[
                    field_evidence(
                        facts.ref(p, "Pod"),
                        f"{st.path}",
                        f"waiting {st.reason}; lastState {st.last_reason} exit {st.last_exit_code}"
                        + (f": {st.last_message[:200]}" if st.last_message else ""),
                        "pod.status",
                    )
                    for p, st in crash[:3]
                ],
                explanation="`ray start` (or the container's command) exits right after starting: a bad command or "
                "rayStartParams, a port in use, a GCS that fails to start, or a missing dependency.",
                remediation=[
                    f"kubectl logs {objects.name(pod)} -n {view.namespace} -c {state.name} --previous",
                    "On the head: /tmp/ray/session_latest/logs/gcs_server.out and raylet.out.",
                ],
                symptoms={t.ray_start(s.key_of(p)) for p in pods},
                effects=_pod_tokens(view, pods) | ({t.gcs(view.key)} if head else set()),
            )


def _dashboard_seen_inside(view: ClusterView) -> list[Evidence]:
    """With --exec: where the head's dashboard port listens, and what a worker got connecting to it."""
    port = view.dashboard_port
    out = []
    for pod in view.pods:
        result = fi.probe(view.snap, pod)
        if result is None:
            continue
        if facts.node_type(pod) == c.NODE_TYPE_HEAD:
            addrs = fi.listeners(result, port) or "nothing"
            out.append(field_evidence(facts.ref(pod, "Pod"), f"listening on port {port}", addrs, "ray"))
        for host, number, error in result.get("connect") or []:
            if number == port:
                out.append(field_evidence(facts.ref(pod, "Pod"), f"connect {host}:{number}", error or "ok", "ray"))
    return out


def _probe_text(container: Mapping[str, Any]) -> str:
    probe = container.get("readinessProbe") or {}
    if "httpGet" in probe:
        get = probe["httpGet"]
        return f"httpGet {get.get('path')} port {get.get('port')}"
    if "exec" in probe:
        return "exec " + " ".join(str(x) for x in (probe["exec"].get("command") or []))[:240]
    if "tcpSocket" in probe:
        return f"tcpSocket port {probe['tcpSocket'].get('port')}"
    return "none"


def _not_ready_running(pod: Obj) -> list[facts.ContainerState]:
    if facts.phase(pod) != c.POD_PHASE_RUNNING or facts.is_ready(pod) or facts.terminating(pod):
        return []
    return [st for st in facts.container_states(pod) if not st.init and st.state == "running" and not st.ready]


@checker(HEAD_PROBE, WORKER_PROBE)
def check_probes(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        head = view.head
        states = _not_ready_running(head) if head is not None else []
        if head is not None and states:
            ref = facts.ref(head, "Pod")
            ray = facts.ray_container(facts.pod_spec(head))
            cond = facts.conditions(head).get(c.POD_CONDITION_READY) or {}
            evidence: list[Evidence] = [
                field_evidence(
                    ref,
                    "status.conditions[Ready]",
                    f"{cond.get('status')}/{cond.get('reason')}: {cond.get('message') or ''}".rstrip(": "),
                    "pod.status",
                ),
                *(field_evidence(ref, f"{st.path}.ready", False, "pod.status") for st in states),
                field_evidence(ref, "spec.containers[0].readinessProbe", _probe_text(ray), "pod.spec"),
            ]
            unhealthy = facts.latest_events(snap.events_for(head), UNHEALTHY)
            evidence += [facts.event_evidence(e, ref, snap.now) for e in unhealthy[:2]]
            version = facts.image_ray_version(str(ray.get("image") or ""))
            hang = (
                version is not None
                and ray_version_at_least(version, AGENT_HANG_VERSIONS[0])
                and not ray_version_at_least(version, AGENT_HANG_VERSIONS[1])
            )
            yield finding(
                HEAD_PROBE,
                cluster=view.ref,
                obj=ref,
                severity="error",
                confidence="confirmed" if unhealthy else "likely",
                title="The head is Running but not Ready"
                + (f": {facts.event_message(unhealthy[0])[:140]}" if unhealthy else " (its readiness probe fails)"),
                evidence=evidence,
                explanation="The probe asks the raylet and the GCS (through the dashboard agent) whether they are "
                "healthy; while it fails, `ray start --head` did not come up: a port in use, the GCS failing to "
                "start, or the dashboard agent stuck"
                + (f" (Ray {version} is in 2.11-2.37, whose agent hangs: upgrade)" if hang else "")
                + ". The liveness probe restarts the head after failureThreshold x period.",
                remediation=[
                    f"kubectl logs {objects.name(head)} -n {view.namespace} -c {ray.get('name') or 'ray-head'}",
                    f"kubectl exec {objects.name(head)} -n {view.namespace} -- ray status; "
                    "check /tmp/ray/session_latest/logs/gcs_server.out and dashboard_agent.log",
                ],
                symptoms={t.pod_ready(s.key_of(head))},
                effects={t.pod_ready(s.key_of(head)), t.head(view.key), t.gcs(view.key)},
            )
        if head is None or not facts.is_ready(head):
            continue
        for group in view.groups:
            stuck = [p for p in group.live_pods if _not_ready_running(p)]
            if not stuck:
                continue
            ref = facts.ref(stuck[0], "Pod")
            events = facts.latest_events(snap.events_for(stuck[0]), UNHEALTHY)
            yield finding(
                WORKER_PROBE,
                cluster=view.ref,
                obj=ref,
                severity="error",
                confidence="confirmed" if events else "likely",
                title=f"{plural(len(stuck), 'worker')} of group {group.name} Running but not Ready",
                evidence=[
                    field_evidence(facts.ref(p, "Pod"), "status.conditions[Ready]", "False", "pod.status")
                    for p in stuck[:3]
                ]
                + [facts.event_evidence(e, ref, snap.now) for e in events[:2]],
                explanation="The worker's raylet does not answer its health check although the head is Ready.",
                remediation=[f"kubectl logs {objects.name(stuck[0])} -n {view.namespace}; check raylet.out on it."],
                symptoms={t.pod_ready(s.key_of(p)) for p in stuck},
                effects=_pod_tokens(view, stuck),
            )


def _redis_address(view: ClusterView) -> tuple[str, str] | None:
    options = view.spec.get("gcsFaultToleranceOptions") or {}
    if options.get("redisAddress"):
        return str(options["redisAddress"]), "spec.gcsFaultToleranceOptions.redisAddress"
    container = facts.ray_container(facts.pod_spec(view.head_template))
    for index, env in enumerate(container.get("env") or []):
        if env.get("name") == c.RAY_REDIS_ADDRESS and env.get("value"):
            return str(env["value"]), f"spec.headGroupSpec.template.spec.containers[0].env[{index}]"
    return None


@checker(REDIS)
def check_redis(snap: Snapshot) -> Iterator[Finding]:  # noqa: PLR0912 - one branch per form of Redis address
    if not snap.has(s.SERVICES):
        return
    for view in facts.cluster_views(snap):
        found = _redis_address(view)
        if found is None:
            continue
        address, path = found
        match = _HOST_PORT.match(address.split(",")[0].strip())
        if match is None:
            continue
        host = match.group(1)
        parts = host.split(".")
        if len(parts) > 1 and parts[1] == "svc":
            continue
        if len(parts) == 1 or (len(parts) >= 3 and parts[2] == "svc"):
            name, namespace = parts[0], (parts[1] if len(parts) > 1 else view.namespace)
        elif len(parts) == 2 and not parts[1].isdigit():
            name, namespace = parts
        else:
            continue  # an IP or an outside host name: not checked
        if snap.namespaces is not None and namespace not in snap.namespaces:
            continue
        service = snap.get(s.SERVICES, namespace, name)
        service_ref = ObjectRef("Service", name, namespace)
        problem = None
        evidence = [field_evidence(view.ref, path, address, "cr.spec")]
        if service is None:
            problem = f'the Redis Service "{name}" does not exist in {namespace}'
            evidence.append(field_evidence(service_ref, "metadata.name", "NotFound"))
        elif snap.has(s.ENDPOINTSLICES) and (service.get("spec") or {}).get("selector"):
            addresses = [
                a
                for sl in snap.endpointslices_for(namespace, name)
                for ep in sl.get("endpoints") or []
                if (ep.get("conditions") or {}).get("ready") is not False
                for a in ep.get("addresses") or []
            ]
            if not addresses:
                problem = f'the Redis Service "{name}" has no ready endpoints'
                evidence.append(field_evidence(service_ref, "endpointslices", "no ready address"))
        if problem is None:
            continue
        head = view.head
        effects = {t.gcs(view.key), t.head(view.key)}
        if head is not None:
            effects.add(t.pod_ready(s.key_of(head)))
        yield finding(
            REDIS,
            cluster=view.ref,
            obj=service_ref,
            severity="error",
            title=f"GCS fault tolerance uses Redis at {address}, but {problem}",
            evidence=evidence,
            explanation="With GCS fault tolerance the head's GCS stores its state in Redis; when Redis is "
            "unreachable the GCS does not start, the head never gets Ready and workers wait for the GCS.",
            remediation=[
                "Fix the Redis Service (its Pods, selector) or spec.gcsFaultToleranceOptions.redisAddress; "
                "check the password Secret in redisPassword.valueFrom."
            ],
            effects=effects,
        )


@checker(PORTS, DASHBOARD_LOCALHOST, DASHBOARD_DISABLED)
def check_static_ports(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        head_params: Mapping[str, Any] = view.head_spec.get("rayStartParams") or {}
        for group, path, template in view.templates():
            params = (
                head_params
                if group == c.HEAD_GROUP_NAME
                else next((g.spec.get("rayStartParams") or {} for g in view.groups if g.name == group), {})
            )
            defaults = (
                _DEFAULT_PORTS
                if group == c.HEAD_GROUP_NAME
                else {k: v for k, v in _DEFAULT_PORTS.items() if k in _WORKER_PORTS}
            )
            effective = {k: str(v) for k, v in defaults.items()}
            effective.update({k: str(params[k]).strip() for k in PORT_PARAMS if k in params})
            by_port: dict[str, list[str]] = {}
            for key, value in effective.items():
                by_port.setdefault(value, []).append(key)
            clashes = {
                p: [f"rayStartParams.{k}" + ("" if k in params else " (default)") for k in keys]
                for p, keys in by_port.items()
                if len(keys) > 1 and any(k in params for k in keys)
            }
            spec = facts.pod_spec(template)
            host_network = bool(spec.get("hostNetwork"))
            if clashes or (host_network and group != c.HEAD_GROUP_NAME):
                evidence = [
                    field_evidence(view.ref, f"{path}.spec", f"port {p}: {', '.join(w)}", "cr.spec")
                    for p, w in sorted(clashes.items())
                ]
                if host_network:
                    evidence.append(field_evidence(view.ref, f"{path}.spec.hostNetwork", True, "cr.spec"))
                yield finding(
                    PORTS,
                    cluster=view.ref,
                    obj=view.ref,
                    severity="error" if clashes else "warning",
                    title=f"Group {group}: "
                    + (
                        f"Ray ports collide ({', '.join(sorted(clashes))})"
                        if clashes
                        else "hostNetwork with fixed Ray ports: two workers on one node collide"
                    ),
                    evidence=evidence,
                    explanation='Two Ray components cannot listen on one port; `ray start` exits ("address already '
                    'in use") or one component silently fails.',
                    remediation=["Give every Ray port a distinct value; avoid hostNetwork for Ray Pods."],
                )
        host = str(head_params.get("dashboard-host") or "").strip()
        if host in LOCALHOSTS:
            yield finding(
                DASHBOARD_LOCALHOST,
                cluster=view.ref,
                obj=view.ref,
                severity="error",
                title=f"The dashboard listens on {host} only: nothing reaches it through the head Service",
                evidence=[
                    field_evidence(view.ref, "spec.headGroupSpec.rayStartParams.dashboard-host", host, "cr.spec"),
                    *_dashboard_seen_inside(view),
                ],
                explanation="KubeRay sets --dashboard-host=0.0.0.0 only when unset. Bound to localhost, everything "
                "that reaches the dashboard over the network is refused: the head Service's address from other "
                "Pods (a RayJob's submitter, `ray job submit --address http://<head-svc>:8265`, KubeRay's own "
                "RayJob and RayService calls), Ingresses. `kubectl port-forward` (to the Service or the Pod) still "
                "works: it connects to localhost inside the Pod.",
                remediation=[
                    "Remove dashboard-host from rayStartParams (and protect the dashboard with authOptions "
                    "token auth instead)."
                ],
                effects={t.dashboard(view.key)},
            )
        if str(head_params.get("include-dashboard") or "").strip().lower() == "false":
            yield finding(
                DASHBOARD_DISABLED,
                cluster=view.ref,
                obj=view.ref,
                severity="warning",
                title="The dashboard is disabled (include-dashboard: false): no dashboard, no Jobs API",
                evidence=[
                    field_evidence(view.ref, "spec.headGroupSpec.rayStartParams.include-dashboard", "false", "cr.spec")
                ],
                explanation="Without the dashboard there is no Jobs API (RayJob submission) and the head's "
                "readiness probe's GCS check has nothing to ask.",
                remediation=["Remove include-dashboard from rayStartParams."],
                effects={t.dashboard(view.key)},
            )


@checker(HEAD_RESTARTED)
def check_head_restarted(snap: Snapshot) -> Iterator[Finding]:
    """A head whose Ray container ended and was started again, and is not crash-looping or OOM-killed (D07, D01 say
    more of those): ``ray start --block`` exits when any Ray process of the head dies (GCS, raylet, dashboard), and
    the new container starts a new, empty GCS. Why it ended is rarely in its log: ray start's last lines stay in
    Python's stdout buffer (it leaves through ``os._exit``) unless the output is unbuffered."""
    for view in facts.cluster_views(snap):
        head = view.head
        if head is None or facts.terminating(head):
            continue
        name = str(facts.ray_container(facts.pod_spec(head)).get("name") or "")
        ft = str(objects.annotations(head).get(c.RAY_FT_ENABLED_ANNOTATION, "")).lower() == "true"
        for state in facts.container_states(head):
            if state.init or state.name != name or state.restarts < 1 or state.reason == CRASH_LOOP:
                continue
            if OOM_KILLED in (state.last_reason, state.reason):
                continue
            ref = facts.ref(head, "Pod")
            lost = "GCS fault tolerance kept its state" if ft else "its jobs, actors and placement groups were lost"
            yield finding(
                HEAD_RESTARTED,
                cluster=view.ref,
                obj=ref,
                severity="info" if ft else "warning",
                title=f"The head's Ray container restarted {plural(state.restarts, 'time')} (last exit "
                f"{state.last_exit_code} {state.last_reason}): {lost}",
                evidence=[
                    field_evidence(ref, f"{state.path}.restartCount", state.restarts, "pod.status"),
                    field_evidence(
                        ref,
                        f"{state.path}.lastState.terminated",
                        f"{state.last_reason} exit {state.last_exit_code}",
                        "pod.status",
                    ),
                    field_evidence(
                        ref, f"metadata.annotations[{c.RAY_FT_ENABLED_ANNOTATION}]", str(ft).lower(), "object"
                    ),
                ],
                explanation="`ray start --block` ends when a Ray process of the head dies (the GCS, the raylet, the "
                "dashboard), and the kubelet starts the container again with a new, empty GCS: workers join it, but "
                "what ran on the old one is gone unless GCS fault tolerance keeps it. Which process died is in the "
                "previous container's log only when Python's output is unbuffered.",
                remediation=[
                    f"kubectl logs {objects.name(head)} -n {view.namespace} -c {name} --previous",
                    "Set PYTHONUNBUFFERED=1 in the head container so ray start's last words (which Ray process "
                    "exited, with its exit code) reach the log; give the head more memory if the GCS was "
                    "OOM-killed; enable GCS fault tolerance (gcsFaultToleranceOptions) to keep the state across "
                    "restarts.",
                ],
                symptoms={t.ray_start(s.key_of(head))},  # ray start ended: under what says why (D03, R05)
            )

"""Look inside Ray (``--exec``): one exec per Pod runs :mod:`raykube.doctor.probe_script`, and the logs of Pods that
are not well are read, cheapest first.

Per RayCluster diagnosed, concurrently and within a time budget:

* the head (its Ray container running): ``ray status -v``, the sockets that listen (6379/8265/10001 on which
  address), the health endpoints its probes call (the dashboard agent's and the dashboard's, on 127.0.0.1), the
  matching lines of ``/tmp/ray/session_latest/logs/{gcs_server,raylet,dashboard,monitor}*``;
* one Pod per worker group (one still waiting in ``wait-gcs-ready`` first, then one not Ready, then any): resolve the
  head Service with the cluster's DNS domain as the Pod sees it, and TCP connect to the GCS, dashboard and client
  ports, and (once its Ray runs) to the head Pod's other listening ports, read from the head first; from the init
  container when that is where the Pod waits; and when the Pod's environment names an object store
  (``AWS_ENDPOINT_URL``, as envFrom gives it from the chapter's Secret), that store as the Pod sees it: the name, the
  port, a signed ListBuckets with the Pod's keys, and the buckets its RayJobs name in ``s3://`` URLs;
* ``kubectl logs`` of every Ray Pod that is not Ready or has restarted (``--previous`` after a restart, and
  ``wait-gcs-ready``): only lines that match :data:`raykube.doctor.facts.inside.LOG_PATTERN` are kept.

Nothing here prints an environment value or a Secret: the probe masks credential values in what it returns, and
only matching log lines (masked again) are kept. What could not be done becomes a ``NotChecked`` line, never an
error of the run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor.facts import inside as fi
from raykube.doctor.facts.cluster import ClusterView
from raykube.doctor.facts.reviews import FORBIDDEN
from raykube.doctor.gather import review_access
from raykube.doctor.model import NotChecked
from raykube.doctor.probe_script import SCRIPT
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import PODS, SELF_SUBJECT_ACCESS_REVIEWS

ExecMode = Literal["auto", "on", "off"]

# Ray's session logs the probe reads: the GCS, raylet, dashboard and autoscaler v1 (monitor.*) logs, and autoscaler
# v2's events (events/event_AUTOSCALER.log, one JSON event per line: where v2 says a request is infeasible).
LOG_GLOBS: Final = (
    *(f"{fi.LOG_DIR}/{name}*" for name in ("gcs_server", "raylet", "dashboard", "monitor")),
    f"{fi.LOG_DIR}/events/event_AUTOSCALER.log",
)
RAY_STATUS: Final = ("ray", "status", "-v")
# At most this many Pods per RayCluster have their logs read (the head and the worst of each group come first).
MAX_LOG_PODS: Final = 6
LOG_TAIL: Final = 400
CONCURRENCY: Final = 8
SUBMITTER_LINES: Final = 8  # the last lines of a failed submitter Pod: the error is at the end
RAY_JOB_FAILED: Final = "FAILED"  # Ray's JobStatus of a job whose entrypoint failed (a RayJob's status.jobStatus)
WHAT: Final = "in-Pod checks (ray status, listening ports, DNS and TCP from workers, Ray logs)"


@dataclass(frozen=True)
class Budget:
    exec_timeout: float = 15.0  # one probe, ``ray status`` included
    status_timeout: float = 8.0
    connect_timeout: float = 2.0


async def _allowed(client: Kube, namespace: str) -> list[str]:
    """What the caller may not do in ``namespace`` of what the in-Pod checks need (empty: all allowed)."""
    missing = []
    for verb, sub in (("create", "exec"), ("get", "log")):
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {
                "resourceAttributes": {"namespace": namespace, "verb": verb, "resource": "pods", "subresource": sub}
            },
        }
        answer = await client.create(SELF_SUBJECT_ACCESS_REVIEWS, body)
        if not (answer.get("status") or {}).get("allowed"):
            missing.append(f"{verb} pods/{sub}")
    return missing


def _container_state(pod: Obj, name: str, init: bool = False) -> Mapping[str, Any]:
    key = "initContainerStatuses" if init else "containerStatuses"
    for status in (pod.get("status") or {}).get(key) or []:
        if status.get("name") == name:
            state: Mapping[str, Any] = status
            return state
    return {}


def _running(pod: Obj, name: str, init: bool = False) -> bool:
    return "running" in ((_container_state(pod, name, init).get("state")) or {})


def _ray_container_name(pod: Obj) -> str:
    return str(facts.ray_container(pod.get("spec") or {}).get("name") or "")


def _probe_target(group_pods: Sequence[Obj]) -> tuple[Obj, str] | None:
    """The Pod of a worker group to probe from, and its container: one waiting for the GCS (from that init
    container), then one whose Ray container runs but is not Ready, then a Ready one."""
    live = [p for p in group_pods if not facts.terminating(p)]
    for pod in live:
        if _running(pod, c.WAIT_GCS_READY_INIT_CONTAINER, init=True):
            return pod, c.WAIT_GCS_READY_INIT_CONTAINER
    ranked = sorted(live, key=lambda p: (facts.is_ready(p), objects.name(p)))
    for pod in ranked:
        name = _ray_container_name(pod)
        if name and _running(pod, name):
            return pod, name
    return None


def _redact(pod: Obj) -> list[str]:
    """Names of the environment variables that come from Secrets (their values are masked in what is returned)."""
    names = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        for env in container.get("env") or []:
            if ((env.get("valueFrom") or {}).get("secretKeyRef")) is not None:
                names.append(str(env.get("name")))
    return names


def _short(message: str) -> str:
    """An exec error without the command line it may repeat (kwok's "cmd wait: <the whole script>: signal ...")."""
    for marker in ("cmd wait: ", "cmd start: "):
        if marker in message:
            return message.split(marker, 1)[0] + message.rsplit(": ", 1)[-1][:200]
    return message[:300]


def _sick(pod: Obj) -> bool:
    if not facts.is_ready(pod):
        return True
    return any(int(st.get("restartCount") or 0) > 0 for st in (pod.get("status") or {}).get("containerStatuses") or [])


class _Inside:
    def __init__(self, client: Kube, budget: Budget) -> None:
        self.client = client
        self.budget = budget
        self.results: dict[str, dict[str, Any]] = {}
        self.problems: list[str] = []
        self.gate = asyncio.Semaphore(CONCURRENCY)

    def entry(self, pod: Obj, role: str) -> dict[str, Any]:
        return self.results.setdefault(
            s.key_of(pod), {"role": role, "container": None, "probe": None, "error": None, "logs": []}
        )

    async def probe(self, pod: Obj, container: str, role: str, args: Mapping[str, Any]) -> None:
        entry = self.entry(pod, role)
        entry["container"] = container
        payload = json.dumps(args)
        async with self.gate:
            for python in ("python3", "python"):
                try:
                    run = await self.client.exec(
                        PODS,
                        objects.name(pod),
                        objects.namespace(pod),
                        [python, "-c", SCRIPT, payload],
                        container=container,
                        timeout=self.budget.exec_timeout,
                    )
                except ApiError as exc:
                    if "not found" in exc.message and python == "python3":
                        continue  # no python3 on PATH: try python
                    entry["error"] = f"exec in {container}: {exc.code} {_short(exc.message)}"
                    return
                except TimeoutError:
                    entry["error"] = f"exec in {container}: no answer within {self.budget.exec_timeout:g}s"
                    return
                try:
                    result = json.loads(run.stdout)
                    entry["probe"] = {k: v for k, v in result.items() if k != "logs"}
                    entry["logs"] += [
                        {"source": f"{fi.LOG_DIR}/{name}", "line": fi.mask(str(line))}
                        for name, line in result.get("logs") or []
                    ]
                except (ValueError, AttributeError, TypeError):
                    last = (run.stderr.strip().splitlines() or [""])[-1]
                    entry["error"] = f"exec in {container}: exit {run.exit_code}: {fi.mask(last[-300:])}"
                return

    async def logs(self, pod: Obj, role: str) -> None:
        entry = self.entry(pod, role)
        wanted: list[tuple[str, bool]] = []
        name = _ray_container_name(pod)
        state = _container_state(pod, name)
        if state.get("state", {}).get("running") or state.get("state", {}).get("terminated"):
            wanted.append((name, False))
        if int(state.get("restartCount") or 0) > 0:
            wanted.append((name, True))
        init = _container_state(pod, c.WAIT_GCS_READY_INIT_CONTAINER, init=True)
        if init.get("state", {}).get("running") or init.get("state", {}).get("terminated"):
            wanted.append((c.WAIT_GCS_READY_INIT_CONTAINER, False))
        for container, previous in wanted:
            async with self.gate:
                try:
                    text = await self.client.logs(
                        PODS,
                        objects.name(pod),
                        objects.namespace(pod),
                        container=container,
                        previous=previous,
                        tail_lines=LOG_TAIL,
                    )
                except (ApiError, OSError):
                    continue  # a log that is not there (yet, or any more) says nothing
            source = f"kubectl logs -c {container}" + (" --previous" if previous else "")
            entry["logs"] += [{"source": source, "line": line} for line in fi.matching_lines(text)]

    async def submitter_logs(self, pod: Obj) -> None:
        """The last lines of a failed submitter Pod (``ray job submit`` and the job's own output end there)."""
        entry = self.entry(pod, "submitter")
        async with self.gate:
            try:
                text = await self.client.logs(PODS, objects.name(pod), objects.namespace(pod), tail_lines=LOG_TAIL)
            except (ApiError, OSError):
                return
        lines = [line for line in text.splitlines() if line.strip()]
        # The API server's Forbidden anywhere in the tail (a job's own error is not always in its last lines: Ray
        # writes its shutdown after it), then the last lines.
        refused = [line for line in lines[:-SUBMITTER_LINES] if FORBIDDEN.search(line)][-SUBMITTER_LINES:]
        source = f"kubectl logs {objects.name(pod)}"
        entry["logs"] += [
            {"source": source, "line": fi.mask(fi.excerpt(line, 0))} for line in refused + lines[-SUBMITTER_LINES:]
        ]

    async def head_listening(self, head: Obj | None) -> list[Any]:
        """The sockets the head listens on, from a probe that does nothing else (it answers at once; the head's
        own probe waits for ``ray status``)."""
        if head is None or not _running(head, _ray_container_name(head)) or not facts.is_ready(head):
            return []
        async with self.gate:
            try:
                run = await self.client.exec(
                    PODS,
                    objects.name(head),
                    objects.namespace(head),
                    ["python3", "-c", SCRIPT, json.dumps({"timeout": self.budget.connect_timeout})],
                    container=_ray_container_name(head),
                    timeout=self.budget.exec_timeout,
                )
                return list(json.loads(run.stdout).get("listening") or [])
            except (ApiError, TimeoutError, ValueError, AttributeError):
                return []  # the head's own probe says what went wrong

    async def workers(self, view: ClusterView, base: Mapping[str, Any], buckets: Sequence[str]) -> None:
        """One probe per worker group: the head Service's name and ports, the object store, and the head Pod's
        other Ray ports (read from the head first)."""
        service = f"{view.head_service_name}.{view.namespace}.svc"
        ports = [view.gcs_port, view.dashboard_port, view.client_port]
        head_ip = str(((view.head or {}).get("status") or {}).get("podIP") or "")
        listening = await self.head_listening(view.head) if head_ip else []
        node_ports = fi.node_ports({"listening": listening}, ports)
        probes = []
        for group in view.groups:
            target = _probe_target(group.pods)
            if target is None:
                continue
            pod, container = target
            args = {
                **base,
                "redact": _redact(pod),
                "service": service,
                "namespace": view.namespace,
                "connect": [["{service}", port] for port in ports],
                "s3": {"buckets": list(buckets)},  # only where the Pod's env names a store (AWS_ENDPOINT_URL)
            }
            if container == c.WAIT_GCS_READY_INIT_CONTAINER:
                args["logs"] = []  # Ray has not started in this Pod yet
            else:
                args["connect"] += [[head_ip, port] for port in node_ports]
            probes.append(self.probe(pod, container, "worker", args))
        await asyncio.gather(*probes)

    def cluster_jobs(self, view: ClusterView, buckets: Sequence[str] = ()) -> list[Any]:
        jobs: list[Any] = []
        head = view.head
        base = {"pattern": fi.LOG_PATTERN, "logs": list(LOG_GLOBS), "timeout": self.budget.connect_timeout}
        if head is not None and _running(head, _ray_container_name(head)):
            args = {
                **base,
                "redact": _redact(head),
                "status": list(RAY_STATUS),
                "status_timeout": self.budget.status_timeout,
                "http": fi.health_urls(view.head_spec.get("rayStartParams") or {}, view.dashboard_port),
            }
            jobs.append(self.probe(head, _ray_container_name(head), "head", args))
        jobs.append(self.workers(view, base, buckets))
        sick = [p for p in view.pods if not facts.terminating(p) and _sick(p)]
        sick.sort(key=lambda p: (facts.node_type(p) != c.NODE_TYPE_HEAD, objects.name(p)))
        for pod in sick[:MAX_LOG_PODS]:
            role = "head" if facts.node_type(pod) == c.NODE_TYPE_HEAD else "worker"
            jobs.append(self.logs(pod, role))
        return jobs


async def look_inside(
    client: Kube, snap: Snapshot, mode: ExecMode, *, named: bool, budget: Budget | None = None
) -> None:
    """Fill ``snap.inside`` and ``snap.inside_note`` (and ``not_checked``) for the RayClusters ``snap`` diagnoses.

    ``mode`` "auto" runs where the caller may create ``pods/exec`` and the run names its targets (``--all`` asks for
    ``--exec``); "on" runs wherever allowed."""
    views = facts.cluster_views(snap)
    if mode == "auto" and not named:
        snap.inside_note = "off: with --all they run only with --exec"
        snap.not_checked.append(NotChecked(WHAT, "--all runs them only with --exec"))
        return
    if not views and not failed_submitter_pods(snap):
        return
    inside = _Inside(client, budget or Budget())
    refused: dict[str, list[str]] = {}
    namespaces = sorted({v.namespace for v in views} | {objects.namespace(p) for p in failed_submitter_pods(snap)})
    try:
        answers = await asyncio.gather(*(_allowed(client, ns) for ns in namespaces))
    except ApiError as exc:
        answers = [[f"a SelfSubjectAccessReview ({exc.code} {exc.message[:120]})"] for _ in namespaces]
    refused = {ns: missing for ns, missing in zip(namespaces, answers, strict=True) if missing}
    jobs = [
        job
        for view in views
        if view.namespace not in refused
        for job in inside.cluster_jobs(view, fi.buckets_for(snap, view.namespace, view.ref.name))
    ]
    jobs += [inside.submitter_logs(pod) for pod in failed_submitter_pods(snap) if objects.namespace(pod) not in refused]
    await asyncio.gather(*jobs)
    snap.inside = inside.results
    await _review_refusals(client, snap)
    ran = sum(1 for e in inside.results.values() if e.get("probe") is not None)
    notes = []
    if jobs:
        pods = f"{ran} Pod" + ("" if ran == 1 else "s")
        notes.append(f"ran in {pods}" + (" (pods/exec allowed)" if mode == "auto" else " (--exec)"))
    for ns, missing in refused.items():
        reason = f"you may not {' or '.join(missing)} in {ns}"
        notes.append(f"not in {ns}: {reason}")
        snap.not_checked.append(NotChecked(f"{WHAT} in {ns}", reason))
    by_error: dict[str, list[str]] = {}
    for key, entry in inside.results.items():
        if entry.get("error"):
            by_error.setdefault(str(entry["error"]), []).append(key)
    for error, keys in by_error.items():  # one line per distinct error (kwok's fake Pods all answer alike)
        shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        snap.not_checked.append(NotChecked(f"in-Pod checks of {shown}", error))
    snap.inside_note = "; ".join(notes)


async def _review_refusals(client: Kube, snap: Snapshot) -> None:
    """A SubjectAccessReview for each ServiceAccount refusal the submitters' logs quote that the gather did not
    review (it reads only status.message), so the rule can say whether it is refused still."""
    done = {(r.user, r.namespace, r.verb, r.group, r.resource, r.subresource) for r in facts.access(snap)}
    wanted: dict[tuple[str, str, str, str, str, str], None] = {}
    for entry in snap.inside.values():
        if entry.get("role") != "submitter":
            continue
        for item in entry.get("logs") or []:
            for r in facts.refusals(str(item.get("line"))):
                key = (r.user, r.namespace, r.verb, r.group, r.resource, r.subresource)
                if r.service_account is not None and key not in done:
                    wanted[key] = None
    if not wanted:
        return
    try:
        answers = await asyncio.gather(*(review_access(client, key) for key in wanted))
    except ApiError as exc:
        snap.not_checked.append(NotChecked("the workload's refused permissions now", f"{exc.code} {exc.message[:120]}"))
        return
    snap.objects.setdefault(s.ACCESS_REVIEWS.plural, []).extend(answers)


def failed_submitter_pods(snap: Snapshot) -> list[Obj]:
    """The newest failed Pod of each failing K8sJobMode submitter Job of the RayJobs diagnosed."""
    out = []
    for job in snap.rayjobs:
        mode = str((job.get("spec") or {}).get("submissionMode") or c.SUBMISSION_MODE_K8S_JOB)
        submitter = snap.get(s.JOBS, objects.namespace(job), objects.name(job))
        if mode != c.SUBMISSION_MODE_K8S_JOB or submitter is None:
            continue
        # A Ray job that FAILED may leave a submitter that succeeded (`ray job logs --follow` exits 0): its log
        # holds the job's output all the same.
        app_failed = (job.get("status") or {}).get("jobStatus") == RAY_JOB_FAILED
        if not int((submitter.get("status") or {}).get("failed") or 0) and not app_failed:
            continue
        pods = [
            p
            for p in snap.in_namespace(s.PODS, objects.namespace(job))
            if any(objects.labels(p).get(label) == objects.name(submitter) for label in c.JOB_NAME_LABELS)
            and (facts.phase(p) == c.POD_PHASE_FAILED or app_failed)
        ]
        pods.sort(key=lambda p: str(objects.meta(p).get("creationTimestamp") or ""), reverse=True)
        out += pods[:1]
    return out

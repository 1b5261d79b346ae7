"""Benchmark: one RayJob from creation to SUCCEEDED on process nodes, raykube's operator against KubeRay's
(the release ``--kuberay`` names: v1.7.0 by default, ``benchmarks/kuberay.py``).

What a run measures. The driver creates a RayJob shaped like KubeRay's ``config/samples/ray-job.sample.yaml`` (1 head
+ the ``small-group`` of 1 worker, K8sJobMode, ``shutdownAfterJobFinishes: true``, Ray 2.52.0) whose entrypoint
needs no internet (``python -c "import ray; ray.init(); print(ray.cluster_resources())"``: the sample's
``runtimeEnvYAML`` would pip-install packages and its ConfigMap script imports ``requests``), and records:

* **seconds** from the create request to the first RayJob version with ``status.jobStatus == SUCCEEDED`` and
  ``status.jobDeploymentStatus == Complete``, as the driver's watch sees it;
* **CPU seconds** of the operator process (``utime + stime`` of ``/proc/<pid>/stat``, all its threads; the PID is the
  one this benchmark started) over that same interval; also its CPU to start (process start to workers running) and
  until the cleanup is done;
* **requests** the operator sent over that same interval, by verb and resource, from kube-apiserver's audit log (the
  sandbox's admin's requests that are not the driver's; client-go's ``rest_client_requests_total`` is recorded too,
  but KubeRay's misses its dashboard client's requests through the API server's proxy), and its **reconciles** per
  controller (``controller_runtime_reconcile_total`` on its ``/metrics``, which both export);
* **phases**: seconds from the create to the first time the driver's watches saw each milestone (RayCluster created
  and ready, head/worker/submitter Pods created, Running, Ready, Succeeded, the submitter Job created and done, each
  ``jobDeploymentStatus``/``jobStatus``, the RayCluster deleted and its Pods gone), which is where a difference
  between the operators shows; of these, four are the operator's own reaction times (create -> RayCluster, RayCluster
  -> head Pod, RayCluster ready -> submitter Job, submitter Job done -> ``Complete``), the rest is Ray;
* **cleanup seconds**: from SUCCEEDED to the RayCluster deleted by the operator (``shutdownAfterJobFinishes``) and
  every Ray Pod gone (the process runtime stopped Ray), so nothing of one run is left running into the next.

How. One process sandbox (``bench-rayjob`` under the usual state directory, so other users of the machine see it;
2 process nodes of 4 CPU / 16Gi, free ports on 127.0.0.1) for the whole invocation, with that KubeRay's CRDs
(``--crds raykube`` installs raykube's instead; the same set serves both operators). Runs alternate, raykube first
(raykube 1, kuberay 1, raykube 2, ...), so load drift on a shared machine hits both; each run has a fresh namespace,
and exactly one operator runs at a time: the run's operator is started as a sandbox extra process, the driver waits
until its log says its reconcile workers run (raykube: ``caches synced; N reconcile worker(s) running``, KubeRay:
controller-runtime's ``Starting workers`` from ``controllers.RayJob``; both mean leading and caches synced),
measures, deletes the RayJob (the operator removes its finalizer), then stops the operator by the PID it started
(``Sandbox.stop_extra``: SIGTERM only while ``/proc/<pid>/cmdline`` is the argv it started) and deletes the
namespace, waiting until it is gone. The sandbox is stopped and removed at the end, also on an error, Ctrl-C or
SIGTERM; the operators' and the sandbox's logs are copied to ``.reports/bench-rayjob/<time>/`` first.

Both operators run the same way: host processes with the sandbox's admin kubeconfig (not a ServiceAccount: the same
credentials for both), ``--use-kubernetes-proxy`` (host processes cannot resolve cluster DNS: the dashboard calls go
through the API server's service proxy), watching all namespaces, leader election on with its Lease in the run's
namespace (fresh, so no one waits for a stale Lease to expire), ``--reconcile-concurrency=1`` (KubeRay's default;
raykube's own default is 10), the same ``--feature-gates`` (KubeRay v1.7.0's defaults, spelled out), QPS/burst left
at their common defaults (100/200), ``--enable-metrics`` and the metrics and probe servers on free 127.0.0.1 ports.
KubeRay's operator is the binary of the chosen release (``benchmarks/kuberay.py``; built here
first if missing); raykube's is ``python -m raykube.cli.main operator`` from this checkout's working tree (the
result records the commit and the files that differ from it).

    .tools/bin/uv run --no-sync python -m benchmarks.rayjob [--runs 3] [--crds kuberay|raykube]

Needs root (process nodes). Appends one JSON line per invocation to benchmarks/results/rayjob.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from benchmarks import append_line
from benchmarks.kuberay import KubeRay, kuberay
from benchmarks.kuberay import add_option as add_kuberay_option
from benchmarks.scale import AUDIT_POLICY, AuditLog, Profiler, resource_of, summarize_profile
from raykube import __version__
from raykube.api import constants as c
from raykube.api.crd import load_generated
from raykube.api.resources import RAYCLUSTERS, RAYJOBS
from raykube.kube import times
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.informer import Informer
from raykube.kube.resources import JOBS, NAMESPACES, PODS
from raykube.runtime.crds import install_crds
from raykube.sandbox import NodePool, Ports, Sandbox, SandboxConfig, versions
from raykube.sandbox.kubelet.network import preflight
from raykube.sandbox.pki import CLIENTS
from raykube.waiting import NotYet, wait_for

ROOT = Path(__file__).parents[1]
RESULTS = Path(__file__).parent / "results" / "rayjob.jsonl"
REPORTS = ROOT / ".reports" / "bench-rayjob"
SANDBOX = "bench-rayjob"
OPERATORS = ("raykube", "kuberay")
RAY_VERSION = "2.52.0"
IMAGE = f"rayproject/ray:{RAY_VERSION}"
ENTRYPOINT = 'python -c "import ray; ray.init(); print(ray.cluster_resources())"'
RAYJOB = "rayjob-sample"
RECONCILE_CONCURRENCY = 1  # KubeRay's default
FEATURE_GATES = ",".join(f"{gate}={str(on).lower()}" for gate, on in c.FEATURE_GATE_DEFAULTS.items())
NODES = NodePool(count=2, cpu="4", memory="16Gi")
DONE = "SUCCEEDED+Complete"
# What an operator logs once its reconcile workers run (leading, caches synced).
READY_MARKERS: dict[str, Callable[[str], bool]] = {
    "raykube": lambda line: "reconcile worker(s) running per controller" in line and "rayjob" in line,
    "kuberay": lambda line: "Starting workers" in line and '"logger":"controllers.RayJob"' in line,
}
# The operator's own reaction times, (from milestone, to milestone): the rest of a run is Ray starting and running.
REACTIONS = {
    "create -> RayCluster created": ("", "raycluster created"),
    "RayCluster created -> head Pod created": ("raycluster created", "head pod created"),
    "RayCluster ready -> submitter Job created": ("raycluster ready", "submitter job created"),
    "submitter Job succeeded -> Complete": ("submitter job succeeded", "rayjob Complete"),
}
OPERATOR_READY_TIMEOUT = 120.0
JOB_TIMEOUT = 900.0
CLEANUP_TIMEOUT = 300.0


def rayjob() -> dict[str, Any]:
    """KubeRay's ray-job.sample.yaml without the ConfigMap and the runtime env (both need the internet)."""
    head = {
        "name": "ray-head",
        "image": IMAGE,
        "ports": [{"containerPort": 6379, "name": "gcs-server"}, {"containerPort": 8265, "name": "dashboard"},
                  {"containerPort": 10001, "name": "client"}],
        "resources": {"limits": {"cpu": "1", "memory": "5Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
    }  # fmt: skip
    worker = {"name": "ray-worker", "image": IMAGE, "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "200m"}}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": RAYJOB},
        "spec": {
            "entrypoint": ENTRYPOINT,
            "shutdownAfterJobFinishes": True,
            "rayClusterSpec": {
                "rayVersion": RAY_VERSION,
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
                "workerGroupSpecs": [{"replicas": 1, "minReplicas": 1, "maxReplicas": 5, "groupName": "small-group",
                                      "rayStartParams": {}, "template": {"spec": {"containers": [worker]}}}],
            },
        },
    }  # fmt: skip


def reactions(marks: Mapping[str, float]) -> dict[str, float]:
    return {
        name: round(marks[to] - (marks[since] if since else 0.0), 2)
        for name, (since, to) in REACTIONS.items()
        if to in marks and (not since or since in marks)
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (all its threads) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def operator_counts(metrics_port: int) -> dict[str, Any]:
    """What the operator's ``/metrics`` counted so far: requests sent (client-go's ``rest_client_requests_total``,
    every verb and code) and reconciles per controller (controller-runtime's ``controller_runtime_reconcile_total``,
    every result). Both operators export both under these names. Read synchronously (a watch callback calls it at
    the moment it sees the milestone; 127.0.0.1, a few ms)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
        exposition = response.read().decode()
    requests, reconciles = 0.0, Counter[str]()
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "rest_client_requests_total":
                requests += sample.value
            elif sample.name == "controller_runtime_reconcile_total":
                reconciles[sample.labels.get("controller", "")] += int(sample.value)
    return {"requests": int(requests), "reconciles": dict(reconciles)}


def counts_between(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """ "``operator_counts`` over an interval: requests, reconciles (total, and per controller that ran)."""
    reconciles = {
        name: n - before["reconciles"].get(name, 0)
        for name, n in sorted(after["reconciles"].items())
        if n - before["reconciles"].get(name, 0)
    }
    return {
        # What the operator's client-go metric counted: not comparable between the two. KubeRay's misses the
        # requests of the HTTP client it builds for the dashboard through the API server's proxy; raykube's counts
        # every request. The audit log's count (requests_of_operator) is the comparison.
        "operator_requests_own_metric": after["requests"] - before["requests"],
        "operator_reconciles": sum(reconciles.values()),
        "operator_reconciles_by_controller": reconciles,
    }


def operator_flags(kubeconfig: str, namespace: str, probe_port: str, metrics_port: str) -> list[str]:
    """The same flags for both operators; only the program differs."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--leader-election-namespace={namespace}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        "--enable-metrics",
        f"--metrics-addr=127.0.0.1:{metrics_port}",
        f"--reconcile-concurrency={RECONCILE_CONCURRENCY}",
        f"--feature-gates={FEATURE_GATES}",
        "--use-kubernetes-proxy",
    ]


# The KubeRay these runs compare with (--kuberay; benchmarks/kuberay.py), chosen once in main().
CHOSEN: list[KubeRay] = []
# The running invocation's kube-apiserver audit log (process_sandbox sets it).
AUDIT: list[AuditLog] = []
ADMIN_USER = CLIENTS["admin"][0]  # the sandbox admin's name, the user both operators run as here
DRIVER_AGENT = "raykube-bench-"  # the driver's user agent (process_sandbox's Kube): not an operator's request


def audit_mark() -> int:
    return AUDIT[0].mark() if AUDIT else 0


def _operator_events(start: int, end: int) -> list[dict[str, Any]]:
    """The operator's audit events between two marks: the sandbox's admin's requests that are not the driver's (only
    one operator runs at a time, and both use the admin's credentials)."""
    if not AUDIT:
        return []
    return [
        event
        for event in AUDIT[0].events(start, end)
        if (event.get("user") or {}).get("username", "") == ADMIN_USER
        and not str(event.get("userAgent", "")).startswith(DRIVER_AGENT)
    ]


def _seconds(event: Mapping[str, Any]) -> float:
    """How long kube-apiserver took to answer (``stageTimestamp - requestReceivedTimestamp``)."""
    received, answered = (times.parse_time(event.get(k)) for k in ("requestReceivedTimestamp", "stageTimestamp"))
    if received is None or answered is None:
        return 0.0
    return (answered - received).total_seconds()


def requests_of_operator(start: int, end: int) -> dict[str, Any]:
    """The operator's requests between two audit marks, read once: their total (``operator_requests``), per
    ``"verb resource"``, most first (``operator_requests_by``; a watch counts when it ends, the audit log writing a
    request once answered), and the slowest answers, watches left out (``operator_slowest_requests``: with one
    reconcile worker, a pass waiting on one, such as a health check through the API server's proxy to a Pod that does
    not answer yet, holds every other pass of its controller)."""
    events = _operator_events(start, end)
    by = dict(Counter(f"{e.get('verb')} {resource_of(e)}" for e in events).most_common())
    slowest = sorted((e for e in events if e.get("verb") != "watch"), key=_seconds, reverse=True)[:5]
    return {
        "operator_requests": sum(by.values()),
        "operator_requests_by": by,
        "operator_slowest_requests": [
            [f"{e.get('verb')} {resource_of(e)}", round(_seconds(e), 2), (e.get("responseStatus") or {}).get("code")]
            for e in slowest
        ],
    }


# --profile DIR: py-spy samples raykube's operator over each measured interval into DIR (chosen once in main()).
PROFILE_DIR: list[Path] = []
PROFILE_RATE = 200


def reference() -> KubeRay:
    if not CHOSEN:
        raise RuntimeError("no KubeRay chosen: call use_kuberay() first (main does, from --kuberay)")
    return CHOSEN[0]


def use_kuberay(version: str) -> KubeRay:
    """Build (if missing) and choose KubeRay ``version`` for this invocation's runs."""
    CHOSEN[:] = [kuberay(version)]
    return CHOSEN[0]


def versions_record(**extra: str) -> dict[str, str]:
    """What a process-node benchmark's line says of the versions it ran."""
    return {
        "raykube": __version__,
        **reference().record(),
        "kubernetes": versions.KUBERNETES_VERSION,
        "ray": RAY_VERSION,
        **extra,
    }


def start(args: argparse.Namespace) -> Callable[[str], None]:
    """A process-node benchmark's start: refuse a machine that cannot run process nodes, choose the KubeRay of
    ``--kuberay``; the progress reporter (stderr)."""
    problems = preflight()
    if problems:
        raise SystemExit("process nodes are not possible here: " + "; ".join(problems))
    use_kuberay(args.kuberay)
    PROFILE_DIR[:] = [Path(args.profile).resolve()] if getattr(args, "profile", None) else []

    def report(message: str) -> None:
        print(message, file=sys.stderr, flush=True)  # noqa: T201

    return report


def add_profile_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", metavar="DIR", help="sample raykube's operator with py-spy over each measured "
                        "interval (raw stacks in DIR, the top frames in the result line)")  # fmt: skip


def operator_argv(operator: str, kubeconfig: Path, namespace: str, metrics_port: int) -> list[str]:
    program = (
        [sys.executable, "-m", "raykube.cli.main", "operator"] if operator == "raykube" else [str(reference().binary)]
    )
    return [*program, *operator_flags(str(kubeconfig), namespace, str(free_port()), str(metrics_port))]


# --------------------------------------------------------------------------------------------------- watching
def _pod_role(pod: Mapping[str, Any]) -> str | None:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if node_type := labels.get(c.RAY_NODE_TYPE_LABEL):
        return str(node_type)
    if labels.get("batch.kubernetes.io/job-name") or labels.get("job-name"):
        return "submitter"
    return None


@dataclass
class Timeline:
    """What the driver's watches saw of one run, in seconds since the RayJob's create request."""

    pid: int
    metrics_port: int
    started: float = 0.0
    marks: dict[str, float] = field(default_factory=dict)
    cpu_done: float | None = None
    counts_done: dict[str, Any] | None = None
    audit_done: int | None = None
    final_status: dict[str, Any] = field(default_factory=dict)
    failure: str | None = None

    def mark(self, name: str) -> None:
        if self.started and name not in self.marks:
            self.marks[name] = round(time.monotonic() - self.started, 2)

    def on_rayjob(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if new is None or event == "DELETED":
            return
        status = new.get("status") or {}
        deployment, job = status.get("jobDeploymentStatus"), status.get("jobStatus")
        if deployment:
            self.mark(f"rayjob {deployment}")
        if job:
            self.mark(f"job {job}")
        if job == "SUCCEEDED" and deployment == "Complete" and DONE not in self.marks:
            self.cpu_done = cpu_seconds(self.pid)
            self.counts_done = operator_counts(self.metrics_port)
            self.audit_done = audit_mark()
            self.mark(DONE)
            kept = ("jobId", "rayClusterName", "startTime", "endTime", "rayJobInfo", "succeeded", "failed")
            self.final_status = {k: status[k] for k in kept if k in status}
        if deployment in ("Failed", "ValidationFailed") and self.failure is None:
            self.failure = f"jobDeploymentStatus {deployment}: {status.get('reason')} {status.get('message')}"

    def on_cluster(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if event == "DELETED":
            self.mark("raycluster deleted")
            return
        if new is None:
            return
        self.mark("raycluster created")
        if (new.get("metadata") or {}).get("deletionTimestamp"):
            self.mark("raycluster deleting")
        if (new.get("status") or {}).get("state") == "ready":
            self.mark("raycluster ready")

    def on_pod(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        pod = new or old
        role = _pod_role(pod) if pod is not None else None
        if role is None or pod is None:
            return
        if event == "DELETED":
            self.mark(f"{role} pod deleted")
            return
        self.mark(f"{role} pod created")
        status = pod.get("status") or {}
        if status.get("phase") in ("Running", "Succeeded"):
            self.mark(f"{role} pod {str(status['phase']).lower()}")
        if any(x.get("type") == "Ready" and x.get("status") == "True" for x in status.get("conditions") or []):
            self.mark(f"{role} pod ready")

    def on_job(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if new is None or event == "DELETED":
            return
        self.mark("submitter job created")
        if int((new.get("status") or {}).get("succeeded") or 0) >= 1:
            self.mark("submitter job succeeded")


@contextlib.asynccontextmanager
async def watching(kube: Kube, namespace: str, timeline: Timeline) -> AsyncIterator[Informer]:
    """Informers on the run's RayJob, RayCluster, Pods and Jobs feeding ``timeline``; yields the Pod informer."""
    handlers = ((RAYJOBS, timeline.on_rayjob), (RAYCLUSTERS, timeline.on_cluster), (PODS, timeline.on_pod),
                (JOBS, timeline.on_job))  # fmt: skip
    informers = []
    for res, handler in handlers:
        informer = Informer(kube, res, namespace=namespace)
        informer.add_handler(handler)
        informers.append(informer)
    tasks = [asyncio.create_task(i.run()) for i in informers]
    try:
        await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in informers)), 60)
        yield informers[2]
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


# --------------------------------------------------------------------------------------------------- one run
class Run:
    """One measured run of ``operator`` in a namespace of its own (``benchmarks.rayservice`` runs its own kind)."""

    prefix = "bench-rayjob"
    markers = READY_MARKERS

    def __init__(self, sandbox: Sandbox, kubeconfig: Path, driver: Kube, operator: str, index: int) -> None:
        self.sandbox = sandbox
        self.kubeconfig = kubeconfig
        self.driver = driver
        self.operator = operator
        self.index = index
        self.namespace = f"{self.prefix}-{operator}-{index}-{uuid.uuid4().hex[:5]}"
        self.process = f"{operator}-operator-{index}"
        self.log = sandbox.layout.log(self.process)
        self.metrics_port = free_port()

    def check_alive(self) -> None:
        if self.sandbox.running_extra(self.process) is None:
            tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:]) if self.log.exists() else ""
            raise RuntimeError(f"the {self.operator} operator exited; end of {self.log}:\n{tail}")

    def workers_running(self) -> bool | NotYet:
        self.check_alive()
        marker = self.markers[self.operator]
        lines = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return True if any(marker(line) for line in lines) else NotYet("its reconcile workers do not run yet")

    async def run(self) -> dict[str, Any]:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
        await self.driver.create(NAMESPACES, namespace)
        load_before = os.getloadavg()[0]
        argv = operator_argv(self.operator, self.kubeconfig, self.namespace, self.metrics_port)
        record = await self.sandbox.start_extra(self.process, argv, env=dict(os.environ))
        try:
            started = time.monotonic()
            await wait_for(self.workers_running, OPERATOR_READY_TIMEOUT, what=f"the {self.operator} operator's "
                           "reconcile workers", max_interval=0.2)  # fmt: skip
            startup = {"seconds": round(time.monotonic() - started, 2), "cpu_seconds": cpu_seconds(record.pid)}
            profiler = self.profiler(record.pid)
            try:
                result = await self.measure(record.pid)
            finally:
                if profiler is not None:
                    await profiler.stop()
            if profiler is not None:
                result["profile"] = {"raw": str(profiler.out), **summarize_profile(profiler.out, top=15)}
            await self.delete_subject()
            self.check_alive()
        finally:
            await self.sandbox.stop_extra(self.process)
        await self.delete_namespace()
        return {
            "operator": self.operator,
            "run": self.index,
            "namespace": self.namespace,
            **result,
            "startup": startup,
            "load_1m_before": round(load_before, 2),
        }

    def profiler(self, pid: int) -> Profiler | None:
        """py-spy on raykube's operator for the measured interval, with ``--profile`` (KubeRay is Go: not sampled)."""
        if not PROFILE_DIR or self.operator != "raykube":
            return None
        return Profiler(pid, PROFILE_DIR[0] / f"{self.namespace}.raw", PROFILE_RATE)

    async def measure(self, pid: int) -> dict[str, Any]:
        timeline = Timeline(pid, self.metrics_port)
        async with watching(self.driver, self.namespace, timeline) as pods:
            cpu_start, counts_start, audit_start = cpu_seconds(pid), operator_counts(self.metrics_port), audit_mark()
            timeline.started = time.monotonic()
            await self.driver.create(RAYJOBS, rayjob(), self.namespace)

            def succeeded() -> bool | NotYet:
                self.check_alive()
                if timeline.failure is not None:
                    raise RuntimeError(f"the RayJob failed with the {self.operator} operator: {timeline.failure}")
                if DONE in timeline.marks:
                    return True
                seen = [m for m in timeline.marks if m.startswith(("rayjob ", "job "))]
                return NotYet(f"seen so far: {', '.join(seen) or 'no status'}")

            await wait_for(succeeded, JOB_TIMEOUT, what=f"the RayJob to succeed ({self.operator})", max_interval=0.5)
            assert timeline.cpu_done is not None  # noqa: S101 - set with the DONE mark
            assert timeline.counts_done is not None  # noqa: S101 - set with the DONE mark
            assert timeline.audit_done is not None  # noqa: S101 - set with the DONE mark

            def cleaned_up() -> bool | NotYet:
                self.check_alive()
                ray_pods = [p for p in pods.list(self.namespace) if _pod_role(p) in ("head", "worker")]
                if "raycluster deleted" in timeline.marks and not ray_pods:
                    return True
                return NotYet(f"RayCluster deleted: {'raycluster deleted' in timeline.marks}; {len(ray_pods)} Ray Pods")

            await wait_for(cleaned_up, CLEANUP_TIMEOUT, what=f"the RayCluster and its Pods gone ({self.operator})")
            timeline.mark("cleanup done")
            cpu_cleaned, counts_cleaned = cpu_seconds(pid), operator_counts(self.metrics_port)
        seconds = timeline.marks[DONE]
        return {
            "seconds": seconds,
            "cpu_seconds": round(timeline.cpu_done - cpu_start, 2),
            "cleanup_seconds": round(timeline.marks["cleanup done"] - seconds, 2),
            "cpu_seconds_with_cleanup": round(cpu_cleaned - cpu_start, 2),
            **counts_between(counts_start, timeline.counts_done),
            **requests_of_operator(audit_start, timeline.audit_done),
            "with_cleanup": counts_between(counts_start, counts_cleaned),
            "phases": dict(sorted(timeline.marks.items(), key=lambda kv: kv[1])),
            "reactions": reactions(timeline.marks),
            "final_status": timeline.final_status,
        }

    async def delete_subject(self) -> None:
        """Delete the RayJob while its operator runs: the operator removes its finalizer."""
        await self.driver.delete(RAYJOBS, RAYJOB, self.namespace)

        async def gone() -> bool | NotYet:
            self.check_alive()
            left = await self.driver.get_or_none(RAYJOBS, RAYJOB, self.namespace)
            return True if left is None else NotYet(f"finalizers {(left.get('metadata') or {}).get('finalizers')}")

        await wait_for(gone, CLEANUP_TIMEOUT, what=f"the RayJob deleted ({self.operator})")

    async def delete_namespace(self) -> None:
        with contextlib.suppress(ApiError):
            await self.driver.delete(NAMESPACES, self.namespace)

        async def gone() -> bool | NotYet:
            left = await self.driver.get_or_none(NAMESPACES, self.namespace)
            return True if left is None else NotYet(f"namespace {self.namespace} still there")

        await wait_for(gone, CLEANUP_TIMEOUT, what=f"namespace {self.namespace} gone", max_interval=2.0)


# --------------------------------------------------------------------------------------------------- the whole
def summary(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": round(statistics.median(values), 2), "max": max(values)}


def git_revision() -> dict[str, Any]:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()  # fmt: skip

    try:
        changed = git("diff", "--name-only", "HEAD").splitlines()
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(changed), "changed_files": changed}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None, "changed_files": []}


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    return {"hostname": platform.node(), "cpus": os.cpu_count(), "cpu_model": model, "memory_gib": memory,
            "python": platform.python_version(), "kernel": platform.release()}  # fmt: skip


def crds(which: str) -> dict[str, dict[str, Any]]:
    return load_generated() if which == "raykube" else reference().crds()


@contextlib.asynccontextmanager
async def process_sandbox(
    name: str, nodes: NodePool, which_crds: str, reports: Path, report: Callable[[str], None], *, gateway: bool = False
) -> AsyncIterator[tuple[Sandbox, Path, Kube]]:
    """A fresh process sandbox ``name`` with ``which_crds`` installed: (sandbox, admin kubeconfig, the driver's
    client); with ``gateway``, Traefik too (``raykube sandbox up --gateway``). Afterwards, also on an error, it is
    stopped and removed, its logs (the operators' too) copied first to ``reports/<time>/``."""
    sandbox = Sandbox.named(name)
    if sandbox.load_state() is not None:
        raise SystemExit(f"a sandbox {name!r} exists already ({sandbox.layout.root}): another run? If not, "
                         f"`raykube sandbox down --name {name}`")  # fmt: skip
    logs = reports / time.strftime("%Y%m%dT%H%M%S")
    # kube-apiserver's audit log (every request at level Metadata, as benchmarks.scale keeps it): what each operator
    # sent, by verb and resource, kept beside the logs.
    audit_dir = logs.with_name(f"{logs.name}-audit")
    audit_dir.mkdir(parents=True, exist_ok=True)
    (audit_dir / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
    audit = (f"--audit-policy-file={audit_dir / 'audit-policy.yaml'}", f"--audit-log-path={audit_dir / 'audit.log'}",
             "--audit-log-maxsize=100000")  # fmt: skip
    AUDIT[:] = [AuditLog(audit_dir / "audit.log")]
    config = SandboxConfig(name=name, ports=Ports.free(), nodes=nodes, runtime="process", gateway=gateway,
                           extra_args={"kube-apiserver": audit})  # fmt: skip
    try:
        up = await sandbox.up(config, report)
        report(f"sandbox {name!r} is up in {up.seconds:.1f}s")
        driver = Kube.from_config(up.kubeconfig, qps=50, burst=100, user_agent=f"raykube-{name}")
        try:
            await install_crds(driver, crds(which_crds))
            yield sandbox, up.kubeconfig, driver
        finally:
            await driver.close()
    finally:
        await sandbox.down(report, keep_logs=True)
        with contextlib.suppress(OSError):
            shutil.copytree(sandbox.layout.logs, logs)
            report(f"logs of the sandbox and the operators: {logs}")
        shutil.rmtree(sandbox.layout.root, ignore_errors=True)


async def main_async(runs: int, which_crds: str, report: Callable[[str], None]) -> dict[str, Any]:
    samples: list[dict[str, Any]] = []
    async with process_sandbox(SANDBOX, NODES, which_crds, REPORTS, report) as (sandbox, kubeconfig, driver):
        for index in range(1, runs + 1):
            for operator in OPERATORS:
                report(f"run {index}/{runs}: {operator} (load {os.getloadavg()[0]:.2f})")
                sample = await Run(sandbox, kubeconfig, driver, operator, index).run()
                report(f"  {sample['seconds']:.1f} s to SUCCEEDED, {sample['cpu_seconds']:.2f} operator CPU-s; "
                       f"cleanup {sample['cleanup_seconds']:.1f} s")  # fmt: skip
                samples.append(sample)
    by_operator = {op: [s for s in samples if s["operator"] == op] for op in OPERATORS}
    result: dict[str, Any] = {
        "benchmark": "rayjob",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "git": git_revision(),
        "versions": versions_record(),
        "settings": {
            "runs": runs,
            "order": "alternating, raykube first",
            "crds": which_crds,
            "nodes": {"process": NODES.count, "cpu": NODES.cpu, "memory": NODES.memory},
            "rayjob": "ray-job.sample.yaml shape: 1 head + 1 worker (small-group), K8sJobMode, "
            "shutdownAfterJobFinishes, no runtime env",
            "entrypoint": ENTRYPOINT,
            "operator_flags": operator_flags("<sandbox admin kubeconfig>", "<run namespace>", "<free>", "<free>"),
            "raykube_sampled_by": f"py-spy --rate {PROFILE_RATE} --nonblocking" if PROFILE_DIR else None,
        },
        "runs": samples,
        "summary": {
            op: {
                "seconds": summary([s["seconds"] for s in got]),
                "cpu_seconds": summary([s["cpu_seconds"] for s in got]),
                "operator_requests": summary([s["operator_requests"] for s in got]),
                "operator_reconciles": summary([s["operator_reconciles"] for s in got]),
                "cleanup_seconds": summary([s["cleanup_seconds"] for s in got]),
                "startup_cpu_seconds": summary([s["startup"]["cpu_seconds"] for s in got]),
                "reactions_median": {
                    name: round(statistics.median(values), 2)
                    for name in REACTIONS
                    if (values := [s["reactions"][name] for s in got if name in s["reactions"]])
                },
            }
            for op, got in by_operator.items()
            if got
        },
    }
    if all(by_operator.values()):
        mine, theirs = result["summary"]["raykube"], result["summary"]["kuberay"]
        result["ratio_raykube_to_kuberay"] = {
            "seconds_median": round(mine["seconds"]["median"] / theirs["seconds"]["median"], 3),
            "cpu_seconds_median": round(mine["cpu_seconds"]["median"] / max(theirs["cpu_seconds"]["median"], 0.01), 3),
        }
    result["phase_medians"] = {
        op: {
            name: round(statistics.median(values), 2)
            for name in dict.fromkeys(k for s in got for k in s["phases"])
            if len(values := [s["phases"][name] for s in got if name in s["phases"]]) == len(got)
        }
        for op, got in by_operator.items()
        if got
    }
    return result


def print_tables(result: Mapping[str, Any]) -> None:
    rows = [("", "seconds to SUCCEEDED (min / median / max)", "operator CPU-s (min / median / max)")]
    for op, got in result["summary"].items():
        sec, cpu = got["seconds"], got["cpu_seconds"]
        rows.append((op, f"{sec['min']:.1f} / {sec['median']:.1f} / {sec['max']:.1f}",
                     f"{cpu['min']:.2f} / {cpu['median']:.2f} / {cpu['max']:.2f}"))  # fmt: skip
    if ratio := result.get("ratio_raykube_to_kuberay"):
        rows.append(("raykube/kuberay", f"{ratio['seconds_median']:.2f}x (medians)",
                     f"{ratio['cpu_seconds_median']:.2f}x (medians)"))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())  # noqa: T201
    print("\noperator requests and reconciles to SUCCEEDED (medians):")  # noqa: T201
    for op, got in result["summary"].items():
        requests, reconciles = got["operator_requests"]["median"], got["operator_reconciles"]["median"]
        print(f"  {op}: {requests:g} requests, {reconciles:g} reconciles")  # noqa: T201
    print("\noperator reactions (medians, seconds):")  # noqa: T201
    for op, got in result["summary"].items():
        shown = ", ".join(f"{name} {value:.2f}" for name, value in got["reactions_median"].items())
        print(f"  {op}: {shown}")  # noqa: T201
    medians = result["phase_medians"]
    names = sorted({n for phases in medians.values() for n in phases},
                   key=lambda n: min(p.get(n, 1e9) for p in medians.values()))  # fmt: skip
    print("\nphase medians, seconds since the RayJob's create:")  # noqa: T201
    print(f"  {'milestone':<28}" + "".join(f"{op:>10}" for op in medians))  # noqa: T201
    for name in names:
        cells = "".join(f"{medians[op][name]:>10.2f}" if name in medians[op] else f"{'-':>10}" for op in medians)
        print(f"  {name:<28}{cells}")  # noqa: T201


async def cancellable(work: Any) -> Any:
    """Run ``work`` so that SIGTERM cancels it: the operator and the sandbox are then still stopped."""
    task = asyncio.ensure_future(work)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per operator (alternating)")
    parser.add_argument("--crds", choices=["kuberay", "raykube"], default="kuberay", help="the CRDs both run with")
    add_kuberay_option(parser)
    add_profile_option(parser)
    args = parser.parse_args()
    report = start(args)

    result = asyncio.run(cancellable(main_async(args.runs, args.crds, report)))
    append_line(RESULTS, result)
    print_tables(result)
    print(f"\nappended to {RESULTS.relative_to(ROOT)}")  # noqa: T201


if __name__ == "__main__":
    main()

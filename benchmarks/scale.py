"""Benchmark: N RayClusters (1 head + 3 workers each) to ready, raykube against a bare-client floor.

Target (issue 10), at client QPS 100 / burst 200 on 2 cores: every cluster ``status.state: ready`` within 1.3x the
floor, operator CPU at most 2x KubeRay's 35-45 CPU-seconds, peak RSS under 300 MB, and no API write that changes
nothing. KubeRay v1.6.1 on the same kind of machine: about 167 s at its default reconcile concurrency 1, 104 s at 10.

Each invocation uses one sandbox (a fresh one on free ports in a temporary directory, 10 kwok nodes of 256 CPU /
1,000 Pods, unless ``--sandbox DIR``) and runs, each in its own namespace:

* **floor**: a bare client in its own process (``--floor-client``), with raykube's HTTP client at the same QPS/burst
  and no operator logic: for every RayCluster it sees it creates the same head Service, head Pod and 3 worker Pods
  (raykube's builders), and writes ``status.state: ready`` once when its 4 Pods are Running and Ready;
* **raykube**: ``raykube operator`` in its own process with its default settings (leader election on, reconcile
  concurrency 10 unless ``--reconcile-concurrency``), ``--qps``/``--burst`` as given and metrics on a free loopback
  port.

The driver creates the N RayClusters as fast as its own (unthrottled) client allows, watches them, and measures:
seconds from the first create to every cluster ready; the process's CPU seconds and peak RSS (``/proc``); API requests
by verb and resource (the operator's ``raykube_api_requests_total``); then deletes the RayClusters and times until
every Pod is gone (the garbage collector's work, the same for both).

**No-op writes.** Only the operator writes a RayCluster after its creation (its status) and its leader Lease, so the
driver watches both and compares: ``unchanged`` = the operator's successful PATCH/PUT requests minus the MODIFIED
events they caused (the API server does not bump resourceVersion, and sends no event, for a write that changes
nothing); ``timestamp_only`` = MODIFIED events whose only difference from the previous version is
``status.lastUpdateTime`` (a write that carried nothing else). Event series patches always bump ``series.count``.

    .venv/bin/python -m benchmarks.scale [--clusters 1000] [--only raykube|floor] [--reconcile-concurrency N]
        [--qps 100] [--burst 200] [--sandbox DIR] [--extra-arg COMPONENT=--flag] [--profile DIR]

Appends one JSON line per invocation to benchmarks/results/scale.jsonl and draws ready clusters over time for the
runs to benchmarks/results/scale-ready-<N>.png. ``--profile DIR`` samples the operator with py-spy (raw stacks in
DIR, a summary on stdout).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from prometheus_client.parser import text_string_to_metric_families

from raykube.api import constants as c
from raykube.api.config import DEFAULT_RECONCILE_CONCURRENCY
from raykube.api.crd import load_generated
from raykube.api.resources import RAYCLUSTERS, RayCluster
from raykube.builders import pods as pod_builder
from raykube.builders import services as service_builder
from raykube.builders.options import BuildOptions
from raykube.builders.status import is_running_and_ready
from raykube.controllers.raycluster import POD_SELECTOR
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.informer import Informer
from raykube.kube.resources import LEASES, NAMESPACES, PODS, SERVICES
from raykube.runtime.crds import install_crds
from raykube.runtime.metrics import Metrics
from raykube.sandbox import NodePool, Ports, Sandbox, SandboxConfig, versions
from raykube.waiting import NotYet, wait_for

RESULTS = Path(__file__).parent / "results" / "scale.jsonl"
PLOTS = Path(__file__).parent / "results"
WORKERS = 3
TARGET_RATIO = 1.3
IN_FLIGHT = 64  # the floor's concurrent requests: well above what QPS 100 needs at the API server's latency
TARGET_CPU_SECONDS = 2 * 45.0
TARGET_RSS_MIB = 300 * 1e6 / 2**20  # 300 MB
KUBERAY = {"ready_seconds": {"concurrency_1": 167, "concurrency_10": 104}, "cpu_seconds": [35, 45],
           "peak_rss_mb": [250, 265], "floor_seconds": 59}  # fmt: skip
LEADER_LEASE = "ray-operator-leader"
log = logging.getLogger("benchmarks.scale")


def cluster(name: str) -> dict[str, Any]:
    def template(container: str) -> dict[str, Any]:
        resources = {"cpu": "100m", "memory": "128Mi"}
        return {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.52.0",
                                         "resources": {"requests": resources, "limits": resources}}]}}  # fmt: skip

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
            "workerGroupSpecs": [{"groupName": "workers", "replicas": WORKERS, "minReplicas": 0, "maxReplicas": 10,
                                  "rayStartParams": {}, "template": template("ray-worker")}],
        },
    }  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --------------------------------------------------------------------------------------------------- processes
class Process:
    """A child process of this benchmark, measured through /proc and stopped by its PID only."""

    def __init__(self, argv: Sequence[str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.popen.pid

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def peak_rss_mib(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    async def stop(self, grace: float = 30.0) -> None:
        if self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            await asyncio.to_thread(self.popen.wait, grace)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            await asyncio.to_thread(self.popen.wait, 10)


class Profiler:
    """py-spy sampling one PID into raw (collapsed) stacks."""

    def __init__(self, pid: int, out: Path, rate: int) -> None:
        self.out = out
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        argv = [py_spy, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw", "--nonblocking",
                "--output", str(out)]  # fmt: skip
        self.popen = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            await asyncio.to_thread(self.popen.wait, 60)


def summarize_profile(raw: Path, top: int = 25) -> dict[str, list[tuple[str, float]]]:
    """Self and inclusive share of samples per function, from py-spy's raw stacks."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        frames = stack.split(";")
        total += samples
        own[frames[-1]] += samples
        for frame in set(frames):
            inclusive[frame] += samples
    if not total:
        return {"self": [], "inclusive": []}

    def share(counter: Counter[str]) -> list[tuple[str, float]]:
        return [(frame, round(100 * n / total, 1)) for frame, n in counter.most_common(top)]

    return {"self": share(own), "inclusive": share(inclusive)}


# --------------------------------------------------------------------------------------------------- metrics
def scrape(text: str) -> dict[str, int]:
    """``raykube_api_requests_total`` as ``{"verb resource code": count}``."""
    counts: dict[str, int] = {}
    for family in text_string_to_metric_families(text):
        if family.name != "raykube_api_requests":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                key = f"{sample.labels['verb']} {sample.labels['resource']} {sample.labels['code']}"
                counts[key] = counts.get(key, 0) + int(sample.value)
    return counts


def by_verb_resource(counts: Mapping[str, int]) -> dict[str, int]:
    """``{"verb resource": n}`` over all codes, watches excluded (they are streams, not requests)."""
    merged: Counter[str] = Counter()
    for key, n in counts.items():
        verb, resource, _ = key.split(" ")
        merged[f"{verb} {resource}"] += n
    return dict(sorted(merged.items()))


def successful_writes(counts: Mapping[str, int], resource: str) -> int:
    return sum(
        n
        for key, n in counts.items()
        if (parts := key.split(" "))[0] in ("patch", "update") and parts[1] == resource and parts[2].startswith("2")
    )


# --------------------------------------------------------------------------------------------------- watching
def _substance(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    status = {k: v for k, v in (obj.get("status") or {}).items() if k != "lastUpdateTime"}
    return {**obj, "metadata": meta, "status": status}


@dataclass
class Observer:
    """What the driver sees of the RayClusters and the leader Lease in one run's namespace."""

    started: float = 0.0
    ready_at: dict[str, float] = field(default_factory=dict)
    cluster_modified: int = 0
    timestamp_only: int = 0
    lease_modified: int = 0
    deleting: bool = False

    def on_cluster(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if new is None or self.deleting or (new.get("metadata") or {}).get("deletionTimestamp"):
            return
        if event == "MODIFIED" and old is not None:
            self.cluster_modified += 1
            if _substance(old) == _substance(new):
                self.timestamp_only += 1
        name = str((new.get("metadata") or {}).get("name"))
        if (new.get("status") or {}).get("state") == "ready" and name not in self.ready_at:
            self.ready_at[name] = time.monotonic() - self.started

    def on_lease(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if event == "MODIFIED" and not self.deleting:
            self.lease_modified += 1


@contextlib.asynccontextmanager
async def informers(*running: Informer) -> AsyncIterator[None]:
    tasks = [asyncio.create_task(i.run()) for i in running]
    try:
        await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in running)), 60)
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


# --------------------------------------------------------------------------------------------------- the floor
class Floor:
    """The bare client: the same Service and Pods per RayCluster, one status write when its Pods are ready."""

    def __init__(self, kubeconfig: Path, namespace: str, *, qps: float, burst: int) -> None:
        self.metrics = Metrics()
        self.kube = Kube.from_config(kubeconfig, qps=qps, burst=burst, observer=self.metrics,
                                     user_agent="raykube-bench-floor")  # fmt: skip
        self.namespace = namespace
        self.options = BuildOptions()
        self.clusters = Informer(self.kube, RAYCLUSTERS, namespace=namespace)
        self.pods = Informer(self.kube, PODS, namespace=namespace, label_selector=POD_SELECTOR,
                             index_labels=(c.RAY_CLUSTER_LABEL,))  # fmt: skip
        self.clusters.add_handler(self.on_cluster)
        self.pods.add_handler(self.on_pod)
        self.seen: set[str] = set()
        self.done: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.stop = asyncio.Event()
        self.in_flight = asyncio.Semaphore(IN_FLIGHT)

    def spawn(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def send(self, what: str, call: Callable[[], Awaitable[Any]]) -> None:
        """One request, at most IN_FLIGHT at once (as the operator's workers bound theirs), retried on a transport
        error or a server error a busy API server gives (a client that gave up would never finish the run)."""
        for attempt in range(10):
            async with self.in_flight:
                try:
                    await call()
                except ApiError as exc:
                    if exc.code < 500 and exc.code != 429:
                        log.warning("floor: %s failed: %s", what, exc)
                        return
                except (httpx2.TransportError, OSError) as exc:
                    log.info("floor: %s: %s, retrying", what, type(exc).__name__)
                else:
                    return
            await asyncio.sleep(0.1 * 2**attempt)  # back-off before a retry
        log.error("floor: %s failed 10 times; stopping", what)
        self.stop.set()

    async def create(self, res: Any, body: Mapping[str, Any]) -> None:
        await self.send(f"create {res}", lambda: self.kube.create(res, body, self.namespace))

    async def ready(self, name: str) -> None:
        patch = {"status": {"state": "ready"}}
        await self.send(
            f"status of {name}", lambda: self.kube.patch(RAYCLUSTERS, name, patch, self.namespace, subresource="status")
        )

    def on_cluster(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        name = str(((new or {}).get("metadata") or {}).get("name", ""))
        if new is None or name in self.seen:
            return
        self.seen.add(name)
        try:
            model = RayCluster.model_validate(new)
            bodies = [service_builder.head_service(model, self.options), pod_builder.head_pod(model, self.options)]
            bodies += [pod_builder.worker_pod(model, 0, self.options, replica_index=i) for i in range(WORKERS)]
        except Exception:
            log.exception("floor: cannot build the objects of %s; stopping", name)
            self.stop.set()  # the driver sees the process end and fails at once, rather than waiting for its timeout
            return
        self.spawn(self.create(SERVICES, bodies[0]))
        for body in bodies[1:]:
            self.spawn(self.create(PODS, body))

    def on_pod(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        labels = (((new or old) or {}).get("metadata") or {}).get("labels") or {}
        name = str(labels.get(c.RAY_CLUSTER_LABEL, ""))
        if not name or name in self.done:
            return
        members = self.pods.list(self.namespace, {c.RAY_CLUSTER_LABEL: name})
        if len(members) == WORKERS + 1 and all(is_running_and_ready(p) for p in members):
            self.done.add(name)
            self.spawn(self.ready(name))

    async def run(self, ready_file: Path, report: Path) -> None:
        """Serve until SIGTERM; touch ``ready_file`` once synced, then write the request counts to ``report``."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        async with informers(self.clusters, self.pods):
            ready_file.touch()
            await self.stop.wait()
        counts = _counts_with_code(self.metrics)
        report.write_text(json.dumps({f"{v} {r} {code}": n for (v, r, code), n in counts.items()}))
        await self.kube.close()


def _counts_with_code(metrics: Metrics) -> dict[tuple[str, str, str], int]:
    counts: dict[tuple[str, str, str], int] = {}
    for metric in metrics.api_requests.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                key = (sample.labels["verb"], sample.labels["resource"], sample.labels["code"])
                counts[key] = counts.get(key, 0) + int(sample.value)
    return counts


# --------------------------------------------------------------------------------------------------- one run
@dataclass
class Settings:
    clusters: int
    qps: float
    burst: int
    concurrency: int | None
    timeout: float
    profile: Path | None
    profile_rate: int


class Run:
    """One measured run of ``kind`` (raykube or the floor) in a namespace of its own."""

    def __init__(self, kind: str, kubeconfig: Path, settings: Settings, workdir: Path) -> None:
        self.kind = kind
        self.kubeconfig = kubeconfig
        self.settings = settings
        self.workdir = workdir
        self.driver = Kube.from_config(
            kubeconfig, qps=2000, burst=4000, user_agent="raykube-bench-driver", timeout=600.0
        )  # deleting 1,000 RayClusters in one request takes a while
        self.namespace = f"bench-{kind}-{uuid.uuid4().hex[:6]}"
        self.observer = Observer()
        self.http = httpx2.AsyncClient(trust_env=False, timeout=10.0)
        self.metrics_url = ""
        self.ready_file = workdir / "floor.ready"
        self.report = workdir / f"{kind}-requests.json"
        self.process: Process | None = None
        self.profiler: Profiler | None = None
        self.loads: list[float] = []

    def argv(self) -> list[str]:
        settings, kubeconfig = self.settings, self.kubeconfig
        if self.kind == "floor":
            return [sys.executable, "-m", "benchmarks.scale", "--floor-client", f"--kubeconfig={kubeconfig}",
                    f"--namespace={self.namespace}", f"--qps={settings.qps:g}", f"--burst={settings.burst}",
                    f"--ready-file={self.ready_file}", f"--report={self.report}"]  # fmt: skip
        metrics_port, probe_port = free_port(), free_port()
        self.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        argv = [sys.executable, "-m", "raykube.cli.main", "operator", f"--kubeconfig={kubeconfig}",
                f"--watch-namespace={self.namespace}", f"--leader-election-namespace={self.namespace}",
                "--enable-metrics", f"--metrics-addr=127.0.0.1:{metrics_port}",
                f"--health-probe-bind-address=127.0.0.1:{probe_port}", f"--qps={settings.qps:g}",
                f"--burst={settings.burst}"]  # fmt: skip
        if settings.concurrency is not None:
            argv.append(f"--reconcile-concurrency={settings.concurrency}")
        return argv

    @property
    def proc(self) -> Process:
        assert self.process is not None  # noqa: S101 - started by run()
        return self.process

    def check_alive(self) -> None:
        if not self.proc.alive():
            raise RuntimeError(f"{self.kind} exited with {self.proc.popen.returncode}:\n{self.proc.tail()}")

    async def scraped(self) -> dict[str, int]:
        if self.kind == "floor":
            return {k: int(v) for k, v in json.loads(self.report.read_text()).items()}
        return scrape((await self.http.get(self.metrics_url)).text)

    async def started(self) -> bool | NotYet:
        self.check_alive()
        if self.kind == "floor":
            return True if self.ready_file.exists() else NotYet("floor client not synced")
        try:
            text = (await self.http.get(self.metrics_url)).text
        except httpx2.HTTPError as exc:
            return NotYet(f"metrics not served yet: {exc}")
        return True if f'leader_election_master_status{{name="{LEADER_LEASE}"}} 1.0' in text else NotYet("not leading")

    async def sample_load(self) -> None:
        while True:
            self.loads.append(os.getloadavg()[0])
            await asyncio.sleep(5)  # a sampling period, not a wait for state

    def all_ready(self) -> bool | NotYet:
        self.check_alive()
        done = len(self.observer.ready_at)
        return True if done == self.settings.clusters else NotYet(f"{done}/{self.settings.clusters} RayClusters ready")

    async def create_all(self) -> float:
        """Create the RayClusters, 50 requests at a time; seconds it took."""
        self.observer.started = time.monotonic()
        n = self.settings.clusters
        for start in range(0, n, 50):
            await asyncio.gather(*(self.driver.create(RAYCLUSTERS, cluster(f"rc-{i:04d}"), self.namespace)
                                   for i in range(start, min(n, start + 50))))  # fmt: skip
        return time.monotonic() - self.observer.started

    async def noop_writes(self) -> tuple[dict[str, int], dict[str, int]]:
        """The operator's requests so far, and its writes that changed nothing (see the module docstring)."""
        requests: dict[str, int] = {}
        observer = self.observer

        async def caught_up() -> bool | NotYet:
            nonlocal requests
            requests = await self.scraped()
            writes = successful_writes(requests, str(RAYCLUSTERS))
            seen = observer.cluster_modified
            return True if seen >= writes else NotYet(f"{writes} status writes, {seen} changes seen")

        # Let the watch catch up with the last writes; what it never sees is a write that changed nothing.
        with contextlib.suppress(TimeoutError):
            await wait_for(caught_up, 10, what="the watch to see every status write", max_interval=0.5)
        observer.deleting = True
        unchanged = max(0, successful_writes(requests, str(RAYCLUSTERS)) - observer.cluster_modified)
        unchanged += max(0, successful_writes(requests, str(LEASES)) - observer.lease_modified)
        return requests, {"unchanged": unchanged, "timestamp_only": observer.timestamp_only}

    async def delete_all(self) -> float:
        """Delete every RayCluster; seconds until every Pod is gone."""
        deleting = time.monotonic()
        driver, namespace = self.driver, self.namespace
        n = self.settings.clusters
        # One DELETE each, 50 at a time, as they were created (a single deletecollection of 1,000 custom resources
        # outlives the API server's request timeout on 2 cores). The garbage collector removes the Pods.
        for start in range(0, n, 50):
            await asyncio.gather(*(driver.delete(RAYCLUSTERS, f"rc-{i:04d}", namespace)
                                   for i in range(start, min(n, start + 50))))  # fmt: skip

        async def pods_gone() -> bool | NotYet:
            page = await driver.request("list", "GET", PODS, PODS.path(namespace), params={"limit": 1})
            left = len(page.get("items") or []) + int((page.get("metadata") or {}).get("remainingItemCount") or 0)
            return True if left == 0 else NotYet(f"{left} Pods left")

        await wait_for(pods_gone, self.settings.timeout, what=f"every Pod of {self.kind} gone", max_interval=1.0)
        return time.monotonic() - deleting

    async def run(self) -> dict[str, Any]:
        await self.driver.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": self.namespace}})  # fmt: skip
        watched = Informer(self.driver, RAYCLUSTERS, namespace=self.namespace)
        watched.add_handler(self.observer.on_cluster)
        lease = Informer(self.driver, LEASES, namespace=self.namespace)
        lease.add_handler(self.observer.on_lease)
        self.process = Process(self.argv(), self.workdir / f"{self.kind}.log")
        try:
            async with informers(watched, lease):
                return await self.measure()
        finally:
            if self.profiler is not None:
                await self.profiler.stop()
            await self.proc.stop()
            await self.http.aclose()
            with contextlib.suppress(ApiError):
                await self.driver.delete(NAMESPACES, self.namespace)
            await self.driver.close()

    async def measure(self) -> dict[str, Any]:
        settings, proc = self.settings, self.proc
        await wait_for(self.started, 120, what=f"the {self.kind} process to start", max_interval=0.5)
        cpu_idle = proc.cpu_seconds()
        if settings.profile is not None and self.kind == "raykube":
            stamp = time.strftime("%Y%m%dT%H%M%S")
            self.profiler = Profiler(proc.pid, settings.profile / f"raykube-{settings.clusters}-{stamp}.txt",
                                     settings.profile_rate)  # fmt: skip
        sampler = asyncio.create_task(self.sample_load())
        load_before = os.getloadavg()
        created_seconds = await self.create_all()
        await wait_for(self.all_ready, settings.timeout, what=f"{settings.clusters} RayClusters ready ({self.kind})",
                       max_interval=1.0)  # fmt: skip
        ready = sorted(self.observer.ready_at.values())
        cpu_ready, rss_ready = proc.cpu_seconds() - cpu_idle, proc.peak_rss_mib()
        requests_ready, noop = await self.noop_writes() if self.kind == "raykube" else ({}, {})
        delete_seconds = await self.delete_all()
        sampler.cancel()
        cpu_total, rss_peak = proc.cpu_seconds() - cpu_idle, proc.peak_rss_mib()
        if self.kind == "floor":
            await proc.stop()  # it writes its request counts as it ends
        requests_total = await self.scraped()
        n = settings.clusters
        result: dict[str, Any] = {
            "ready_seconds": round(ready[-1], 1),
            "ready_quantiles": {q: round(ready[min(n - 1, int(n * float(q)))], 1) for q in ("0.1", "0.5", "0.9")},
            "created_seconds": round(created_seconds, 1),
            "delete_seconds": round(delete_seconds, 1),
            "cpu_seconds": {"to_ready": round(cpu_ready, 1), "with_deletion": round(cpu_total, 1)},
            "peak_rss_mib": {"at_ready": round(rss_ready, 1), "overall": round(rss_peak, 1)},
            "requests_to_ready": by_verb_resource(requests_ready or requests_total),
            "requests_total": sum(requests_total.values()),
            "load": {
                "before": [round(x, 2) for x in load_before],
                "mean_1m": round(sum(self.loads) / max(1, len(self.loads)), 2),
            },
            "curve": ready,
        }
        if self.kind == "raykube":
            result["noop_writes"] = noop
            result["requests_with_deletion"] = by_verb_resource(requests_total)
        if self.profiler is not None:
            result["profile"] = str(self.profiler.out)
        return result


# --------------------------------------------------------------------------------------------------- sandbox
@contextlib.asynccontextmanager
async def a_sandbox(existing: Path | None, nodes: int, extra: Mapping[str, tuple[str, ...]]) -> AsyncIterator[Path]:
    if existing is not None:
        yield Sandbox.at(existing).status().kubeconfig
        return
    with tempfile.TemporaryDirectory(prefix="raykube-bench-") as root:
        sandbox = Sandbox.named("bench", Path(root))
        pool = NodePool(count=nodes, cpu="256", memory="1Ti", pods=1000)
        config = SandboxConfig(name="bench", ports=Ports.free(), nodes=pool, extra_args=extra)
        result = await sandbox.up(config)
        try:
            yield result.kubeconfig
        finally:
            await sandbox.down()


def plot(runs: Mapping[str, Mapping[str, Any]], settings: Settings, path: Path) -> None:
    import matplotlib  # noqa: PLC0415 - a dev dependency, only for the plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, axes = plt.subplots(figsize=(8, 5))
    for kind, run in runs.items():
        curve = run["curve"]
        axes.step([0.0, *curve], range(len(curve) + 1), where="post", label=f"{kind}: {run['ready_seconds']:.0f} s")
    axes.set_xlabel("seconds since the first RayCluster was created")
    axes.set_ylabel("RayClusters ready")
    concurrency = settings.concurrency or f"{DEFAULT_RECONCILE_CONCURRENCY} (the default)"
    axes.set_title(f"{settings.clusters} RayClusters (1 head + {WORKERS} workers) to ready\n"
                   f"QPS {settings.qps:g}/burst {settings.burst}, reconcile concurrency {concurrency}")  # fmt: skip
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    settings = Settings(args.clusters, args.qps, args.burst, args.reconcile_concurrency, args.timeout, args.profile,
                        args.profile_rate)  # fmt: skip
    extra: dict[str, tuple[str, ...]] = {}
    for item in args.extra_arg:
        component, _, flag = item.partition("=")
        extra[component] = (*extra.get(component, ()), flag)
    kinds = [args.only] if args.only else ["floor", "raykube"]
    runs: dict[str, dict[str, Any]] = {}
    async with a_sandbox(args.sandbox, args.nodes, extra) as kubeconfig:
        installer = Kube.from_config(kubeconfig)
        await install_crds(installer, load_generated())
        await installer.close()
        with tempfile.TemporaryDirectory(prefix="raykube-scale-") as work:
            for kind in kinds:
                runs[kind] = await Run(kind, kubeconfig, settings, Path(work)).run()
                print(f"{kind}: {runs[kind]['ready_seconds']} s to ready", file=sys.stderr)  # noqa: T201
    result: dict[str, Any] = {
        "benchmark": "scale",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "versions": {"kubernetes": versions.KUBERNETES_VERSION, "kwok": versions.KWOK_VERSION},
        "settings": {
            "clusters": args.clusters,
            "workers_per_cluster": WORKERS,
            "qps": args.qps,
            "burst": args.burst,
            "reconcile_concurrency": args.reconcile_concurrency or DEFAULT_RECONCILE_CONCURRENCY,
            "reconcile_concurrency_is_default": args.reconcile_concurrency in (None, DEFAULT_RECONCILE_CONCURRENCY),
            "nodes": args.nodes,
            "sandbox_extra_args": {k: list(v) for k, v in extra.items()},
        },
        "kuberay_reference": KUBERAY,
    }
    if args.clusters > 0:
        path = PLOTS / f"scale-ready-{args.clusters}.png"
        plot(runs, settings, path)
        result["plot"] = str(path.relative_to(Path(__file__).parent.parent))
    for kind, run in runs.items():
        result[kind] = {k: v for k, v in run.items() if k != "curve"}
    if "raykube" in runs and "floor" in runs:
        ratio = runs["raykube"]["ready_seconds"] / runs["floor"]["ready_seconds"]
        result["ratio_to_floor"] = round(ratio, 2)
    if "raykube" in runs:
        raykube = runs["raykube"]
        result["targets"] = {
            "ratio_to_floor": TARGET_RATIO,
            "cpu_seconds": TARGET_CPU_SECONDS,
            "peak_rss_mib": round(TARGET_RSS_MIB, 1),
            "noop_writes": 0,
        }
        result["meets_target"] = {
            "ratio_to_floor": result.get("ratio_to_floor", 0) <= TARGET_RATIO if "floor" in runs else None,
            "cpu_seconds": raykube["cpu_seconds"]["to_ready"] <= TARGET_CPU_SECONDS,
            "peak_rss_mib": raykube["peak_rss_mib"]["overall"] < TARGET_RSS_MIB,
            "noop_writes": sum(raykube["noop_writes"].values()) == 0,
        }
    return result


async def cancellable(work: Any) -> Any:
    """Run ``work`` so that SIGTERM cancels it: the sandbox and the processes it started are then still stopped."""
    task = asyncio.ensure_future(work)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--only", choices=["floor", "raykube"], default=None)
    parser.add_argument("--qps", type=float, default=100.0)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--reconcile-concurrency", type=int, default=None, help="default: the operator's default")
    parser.add_argument("--nodes", type=int, default=10, help="kwok nodes of 256 CPU / 1Ti / 1,000 Pods")
    parser.add_argument("--timeout", type=float, default=1200.0, help="for each wait (ready, Pods gone)")
    parser.add_argument("--sandbox", type=Path, default=None, help="reuse a running sandbox (its state directory)")
    parser.add_argument("--extra-arg", action="append", default=[], metavar="COMPONENT=--flag",
                        help="extra flag for a sandbox component (fresh sandbox only)")  # fmt: skip
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR", help="py-spy the operator into DIR")
    parser.add_argument("--profile-rate", type=int, default=50, help="py-spy samples per second")
    # The floor's own process (started by the benchmark):
    parser.add_argument("--floor-client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--namespace", help=argparse.SUPPRESS)
    parser.add_argument("--ready-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--report", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_client:
        floor = Floor(args.kubeconfig, args.namespace, qps=args.qps, burst=args.burst)
        asyncio.run(floor.run(args.ready_file, args.report))
        return
    result = asyncio.run(cancellable(main_async(args)))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as results:
        results.write(json.dumps(result) + "\n")
    print(json.dumps(result, indent=2))  # noqa: T201 - a benchmark reports on stdout
    if args.profile is not None and "raykube" in result and "profile" in result["raykube"]:
        summary = summarize_profile(Path(result["raykube"]["profile"]))
        for title, rows in summary.items():
            print(f"\nprofile, {title} (% of samples):")  # noqa: T201
            for frame, share in rows:
                print(f"  {share:5.1f}  {frame}")  # noqa: T201


if __name__ == "__main__":
    main()

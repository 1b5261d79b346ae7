"""Benchmark: N RayClusters (1 head + 3 workers each) to ready, side by side: a bare-client floor, raykube, and
KubeRay (v1.7.0 unless ``--kuberay`` says another) at its default reconcile concurrency (1) and at 10, all in one
invocation.

Targets (issue 21), at client QPS 100 / burst 200 for every client on 2 cores, N = 1,000: raykube at most 0.8x
KubeRay's best time of the same invocation and 1.3x a floor that sits within 10% of its QPS bound; fewer API requests
per cluster than KubeRay; operator CPU at most KubeRay's; peak RSS at most 200 MB. No reference number is typed in:
every figure compared is measured in the same invocation.

Each contender runs on a **fresh sandbox** (free loopback ports, a temporary directory, ``--nodes`` kwok nodes of 256
CPU / 1,000 Pods) with kube-apiserver's audit log on (every request at level Metadata), so the API server itself
counts each client's requests by user. The contender runs as its own ServiceAccount (``bench/operator``, bound to
cluster-admin: the same authorization work for all) and with the same ``--qps``/``--burst``. The operators apply them
per resource type (controller-runtime's client has a token bucket per group-version-kind, so KubeRay's flags mean
that, and raykube's mean the same); the floor's client has one bucket for all its writes, the issue's floor. Every run
reports ``qps_bound_seconds``, the shortest time those buckets allow for the requests the API server counted, and
its ``off_bound``:

* **floor**: a bare client in its own process (``--floor-client``) with no operator logic: for every RayCluster it
  sees it creates the same head Service, head Pod and 3 worker Pods (raykube's builders), and writes
  ``status.state: ready`` once those creates are answered: 6 writes per cluster, so its bound is
  ``(6N - burst) / QPS`` seconds and the report gives its distance from it;
* **floor-ready**: the same client writing ``status.state: ready`` only once the cluster's 4 Pods are Running and
  Ready (the wait the operators have, with no logic; informative, no target);
* **raykube**: ``raykube operator`` in its own process with its defaults (leader election on, reconcile concurrency
  10 unless ``raykube-c<N>``), raykube's CRDs;
* **kuberay-c1**, **kuberay-c10**: KubeRay's operator with ``--reconcile-concurrency`` 1 or 10 and KubeRay's CRDs,
  of the release ``--kuberay`` names (v1.7.0 by default, built from its tag's checkout; v1.6.x from the Go module
  proxy; ``benchmarks/kuberay.py``), recorded in the result's ``versions``;
* **raykube/<flag>=<value>**: raykube's operator with that flag too (``raykube/diagnose-after=1m``: what the
  diagnosis loop costs);
* **raykube@<git ref>**: raykube's operator as of another commit (a temporary git worktree of this repository, on
  ``PYTHONPATH``), so a change and what came before it run in one invocation, on the same machine at the same time.

**Rounds** (``--repeat``): each round starts one contender further on in the list, so none always runs first or
after the same other one; with two rounds or more the report adds each contender's median over the rounds and the
comparison of those medians. Each measurement starts once the machine is quiet (at least 80% idle over 3 s, read
from ``/proc/stat``; the run records whether it got there): what ran before it (the previous sandbox going down,
this one coming up) does not count against it.

**Where the time goes.** On 2 cores the run is CPU-bound: every run reports ``cpu_bound_seconds``, the CPU seconds of
the contender, of every control-plane component and of the driver from the first create to the last cluster ready,
over the machine's cores. A contender's time to ready sits close to it, so what a contender costs the API server,
the controllers and kwok is time, as much as its own CPU.

One driver for all: it creates the N RayClusters (50 requests at a time, as fast as its own unthrottled client
allows), watches them, and measures seconds from the first create to every cluster ``status.state: ready``; the
contender's CPU seconds and peak RSS and each control-plane component's CPU seconds (``/proc``); the API requests of
every user to ready, and the contender's by verb and resource (the audit log); then deletes the RayClusters and times
until every Pod is gone (the garbage collector's work; ``--no-delete`` skips this, as the 10,000 run does).

**No-op writes.** Only the contender writes a RayCluster after its creation (its status) and its leader Lease, so the
driver watches both and compares: ``unchanged`` = the contender's successful PATCH/PUT requests (audit log) minus
the MODIFIED events they caused (the API server does not bump resourceVersion, and sends no event, for a write that
changes nothing); ``timestamp_only`` = MODIFIED events whose only difference from the previous version is
``status.lastUpdateTime``.

    .tools/bin/uv run --no-sync python -m benchmarks.scale [--clusters 1000] [--contenders floor,raykube,...]
        [--repeat 1] [--qps 100] [--burst 200] [--nodes 10] [--no-delete] [--profile DIR]
        [--apiserver-profile DIR] [--apiserver-profile-seconds 50]

Appends one JSON line per invocation to benchmarks/results/scale.jsonl (``"schema": 2``; earlier lines are the
raykube-against-floor runs of before), and one per contender as soon as it is measured to
benchmarks/results/scale-partial.jsonl (so a stopped invocation keeps what it measured; a contender that timed out
is recorded with how far it got), and draws ready clusters
over time for every run to benchmarks/results/scale-ready-<N>.png. ``--profile DIR`` samples raykube with py-spy (raw
stacks in DIR, a summary on stdout). ``--apiserver-profile DIR`` starts every sandbox's kube-apiserver with
``--profiling=true`` and keeps its CPU profile (Go pprof, ``--apiserver-profile-seconds`` from the first create) of
each run in DIR, with the share of its samples in watches, creates, patches, updates, managedFields, the audit log,
the etcd client and Go's garbage collector in the run's ``apiserver_profile`` (read with ``go tool pprof``, if Go
is on PATH).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx2
import yaml
from prometheus_client.parser import text_string_to_metric_families

from benchmarks import append_line
from benchmarks.kuberay import KubeRay, kuberay
from benchmarks.kuberay import add_option as add_kuberay_option
from raykube.api import constants as c
from raykube.api.config import DEFAULT_RECONCILE_CONCURRENCY
from raykube.api.crd import load_generated
from raykube.api.resources import RAYCLUSTERS, RayCluster
from raykube.builders import pods as pod_builder
from raykube.builders import services as service_builder
from raykube.builders.options import BuildOptions
from raykube.builders.status import is_running_and_ready
from raykube.controllers.watches import POD_SELECTOR
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.informer import Informer
from raykube.kube.resources import CLUSTER_ROLE_BINDINGS, LEASES, NAMESPACES, PODS, SERVICE_ACCOUNTS, SERVICES
from raykube.runtime.crds import install_crds
from raykube.sandbox import Binaries, NodePool, Ports, Sandbox, SandboxConfig, versions
from raykube.sandbox.build import find_go
from raykube.sandbox.errors import ToolchainError
from raykube.waiting import NotYet, WaitTimeout, wait_for

RESULTS = Path(__file__).parent / "results" / "scale.jsonl"
PARTIAL = Path(__file__).parent / "results" / "scale-partial.jsonl"  # each contender as it finishes (keep_partial)
PLOTS = Path(__file__).parent / "results"
SCHEMA = 2
WORKERS = 3
# A measurement starts once the machine is at least QUIET_IDLE idle over QUIET_WINDOW seconds, or after QUIET_TIMEOUT
# (a machine that never gets there is measured anyway, and the run says so).
QUIET_IDLE = 0.8
QUIET_WINDOW = 3.0
QUIET_TIMEOUT = 180.0
IN_FLIGHT = 64  # the floor's concurrent requests: well above what QPS 100 needs at the API server's latency
CONTENDERS = ("floor", "floor-ready", "raykube", "kuberay-c1", "kuberay-c10")
TARGETS = {"to_kuberay_best": 0.8, "to_floor": 1.3, "floor_off_bound": 0.10, "peak_rss_mb": 200.0}
NAMESPACE = "bench"
ACCOUNT = "operator"
USER = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
LEADER_LEASE = "ray-operator-leader"  # KubeRay's and raykube's leader election Lease
COMPONENTS = ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok")
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    # One line per request, written when it is answered (a watch: when it ends).
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [{"level": "Metadata"}],
}
log = logging.getLogger("benchmarks.scale")
AUDIT_TAIL = 1 << 20  # bytes read back from the audit log's end to find its last whole line (a line is a few kB)


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

    def __init__(self, argv: Sequence[str], log: Path, env: Mapping[str, str] | None = None) -> None:
        self.log = log
        with log.open("wb") as out:
            self.popen = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env and {**os.environ, **env}
            )
        self.pid = self.popen.pid

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.pid)

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
        out.parent.mkdir(parents=True, exist_ok=True)  # py-spy does not make the directory
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        argv = [py_spy, "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw", "--nonblocking",
                "--output", str(out)]  # fmt: skip
        self.popen = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGINT)
            await asyncio.to_thread(self.popen.wait, 60)


class ApiServerProfile:
    """kube-apiserver's CPU profile over a fixed window (Go's pprof, ``/debug/pprof/profile``; the sandbox starts it
    with ``--profiling=true`` for this), fetched by kubectl as the sandbox's admin into a ``.pb.gz`` file."""

    def __init__(self, kubeconfig: Path, out: Path, seconds: float) -> None:
        self.out = out
        out.parent.mkdir(parents=True, exist_ok=True)
        kubectl = Binaries.from_cache().kubectl
        argv = [str(kubectl), f"--kubeconfig={kubeconfig}", "get", "--raw",
                f"/debug/pprof/profile?seconds={max(1, round(seconds))}"]  # fmt: skip
        with out.open("wb") as sink:
            self.popen = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL)

    async def wait(self, within: float) -> bool:
        """True once the profile is written whole (given up after ``within`` seconds)."""
        try:
            code = await asyncio.to_thread(self.popen.wait, within)
        except subprocess.TimeoutExpired:
            self.stop()
            return False
        return code == 0

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            self.popen.wait(10)


# Where kube-apiserver's CPU goes, by the handler (or runtime part) on the stack: (name, pprof focus, pprof ignore).
APISERVER_PARTS = (
    ("watches (encode, send)", r"handlers\.\(\*WatchServer\)\.HandleHTTP", ""),
    ("creates", r"handlers\.CreateResource", ""),
    ("patches", r"handlers\.PatchResource|handlers\.\(\*patcher\)\.patchResource", ""),
    ("updates", r"handlers\.UpdateResource", ""),
    ("gets and lists", r"handlers\.(GetResource|ListResource)", r"WatchServer"),
    ("managedFields", r"managedfields/internal\.\(\*FieldManager\)", ""),
    ("audit log", r"k8s\.io/apiserver/pkg/audit\.|plugin/pkg/audit", ""),
    ("etcd client", r"go\.etcd\.io/etcd/client", ""),
    ("Go GC (background marking)", r"runtime\.gcBgMarkWorker", ""),
)


PPROF_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "mins": 60.0, "hrs": 3600.0}


def pprof_accounted(top: str) -> tuple[float, float] | None:
    """Seconds under the focus and seconds in the whole profile, from ``go tool pprof -top``'s header line
    (``Showing nodes accounting for 8.52s, 16.98% of 50.18s total``)."""
    found = re.search(r"accounting for ([0-9.]+)([a-zµ]+), [0-9.]+% of ([0-9.]+)([a-zµ]+) total", top)
    if found is None or found[2] not in PPROF_UNITS or found[4] not in PPROF_UNITS:
        return None
    return float(found[1]) * PPROF_UNITS[found[2]], float(found[3]) * PPROF_UNITS[found[4]]


def summarize_apiserver_profile(path: Path) -> dict[str, float] | None:
    """Share (%) of kube-apiserver's CPU samples under each of ``APISERVER_PARTS``, and the samples' seconds, read
    with ``go tool pprof`` (None without Go). The parts overlap: a create's managedFields are in both."""
    try:
        go = find_go(purpose="the benchmark reads kube-apiserver's profile with `go tool pprof`").path
    except ToolchainError:
        return None
    if not path.exists() or not path.stat().st_size:
        return None
    shares: dict[str, float] = {}
    total = 0.0
    for name, focus, ignore in APISERVER_PARTS:
        argv = [go, "tool", "pprof", "-top", "-nodefraction=0", "-nodecount=0", f"-focus={focus}"]
        argv += [f"-ignore={ignore}"] if ignore else []
        top = subprocess.run([*argv, str(path)], capture_output=True, text=True, check=False).stdout
        part, whole = pprof_accounted(top) or (0.0, 0.0)
        total = total or whole
        shares[name] = round(100 * part / whole, 1) if whole else 0.0
    return {"cpu_seconds_sampled": round(total, 1), **shares}


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
    lease_holder: str = ""
    deleting: bool = False
    # Per RayCluster, each status write seen: (seconds, the status fields it changed), for --trace.
    writes: dict[str, list[tuple[float, list[str]]]] = field(default_factory=dict)

    def on_cluster(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if new is None or self.deleting or (new.get("metadata") or {}).get("deletionTimestamp"):
            return
        name = str((new.get("metadata") or {}).get("name"))
        if event == "MODIFIED" and old is not None:
            self.cluster_modified += 1
            if _substance(old) == _substance(new):
                self.timestamp_only += 1
            before, after = old.get("status") or {}, new.get("status") or {}
            changed = sorted(k for k in {*before, *after} - {"lastUpdateTime"} if before.get(k) != after.get(k))
            self.writes.setdefault(name, []).append((round(time.monotonic() - self.started, 2), changed))
        if (new.get("status") or {}).get("state") == "ready" and name not in self.ready_at:
            self.ready_at[name] = time.monotonic() - self.started

    def on_lease(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if event == "MODIFIED" and not self.deleting:
            self.lease_modified += 1
        if new is not None and (new.get("metadata") or {}).get("name") == LEADER_LEASE:
            self.lease_holder = str((new.get("spec") or {}).get("holderIdentity") or "")


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
    """The bare client: the same Service and Pods per RayCluster, then one status write: at once when its creates
    have been answered (``floor``: nothing can be ready before its writes are done), or when its Pods are Running and
    Ready (``floor-ready``: the same wait the operators have)."""

    def __init__(self, kubeconfig: Path, namespace: str, *, qps: float, burst: int, wait_ready: bool) -> None:
        self.wait_ready = wait_ready
        self.kube = Kube.from_config(kubeconfig, qps=qps, burst=burst, user_agent="raykube-bench-floor")
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
        self.spawn(self.make(name, bodies))

    async def make(self, name: str, bodies: Sequence[Mapping[str, Any]]) -> None:
        await asyncio.gather(self.create(SERVICES, bodies[0]), *(self.create(PODS, body) for body in bodies[1:]))
        if not self.wait_ready:
            await self.ready(name)

    def on_pod(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        if not self.wait_ready:
            return
        labels = (((new or old) or {}).get("metadata") or {}).get("labels") or {}
        name = str(labels.get(c.RAY_CLUSTER_LABEL, ""))
        if not name or name in self.done:
            return
        members = self.pods.list(self.namespace, {c.RAY_CLUSTER_LABEL: name})
        if len(members) == WORKERS + 1 and all(is_running_and_ready(p) for p in members):
            self.done.add(name)
            self.spawn(self.ready(name))

    async def run(self, ready_file: Path) -> None:
        """Serve until SIGTERM; touch ``ready_file`` once synced."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop.set)
        async with informers(self.clusters, *([self.pods] if self.wait_ready else [])):
            ready_file.touch()
            await self.stop.wait()
        await self.kube.close()


# --------------------------------------------------------------------------------------------------- the audit log
def resource_of(event: Mapping[str, Any]) -> str:
    """``pods``, ``pods/binding``, ``rayclusters.ray.io/status``: resource, API group, subresource."""
    ref = event.get("objectRef") or {}
    name = str(ref.get("resource") or event.get("requestURI", "?").split("?")[0])
    if ref.get("apiGroup"):
        name = f"{name}.{ref['apiGroup']}"
    return f"{name}/{ref['subresource']}" if ref.get("subresource") else name


class AuditLog:
    """kube-apiserver's audit log (JSON lines, one per answered request): read in slices by byte offset."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self) -> int:
        """The offset just past the last whole line: kube-apiserver may be writing a line as the mark is taken, and a
        slice must never cut one."""
        if not self.path.exists():
            return 0
        with self.path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            back = min(size, AUDIT_TAIL)
            file.seek(size - back)
            tail = file.read(back)
        return size - back + tail.rfind(b"\n") + 1  # 0 past the start when no line has ended yet

    def events(self, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        with self.path.open("rb") as file:
            file.seek(start)
            data = file.read() if end is None else file.read(end - start)
        data = data[: data.rfind(b"\n") + 1]  # whole lines only: the last one may still be being written
        return [json.loads(line) for line in data.splitlines() if line.strip()]


def requests_of(events: Iterable[Mapping[str, Any]], user: str) -> dict[str, int]:
    """``{"verb resource": n}`` of ``user``'s requests; watches left out (streams, not requests)."""
    counts: Counter[str] = Counter()
    for event in events:
        if (event.get("user") or {}).get("username") == user and event.get("verb") != "watch":
            counts[f"{event.get('verb')} {resource_of(event)}"] += 1
    return dict(sorted(counts.items()))


# Requests each operator sends through a client of its own, so not through the rate limit of its writes:
# controller-runtime's event recorder and leader-election lock each build their own client; raykube's Kube.sibling.
OWN_CLIENT_RESOURCES = ("events", "leases.coordination.k8s.io")


def qps_bound(requests: Mapping[str, int], *, qps: float, burst: int, per_resource: bool) -> float:
    """The shortest time the client-side rate limit allows for ``requests`` (``{"verb resource": n}``): all through
    one token bucket (the floor's client), or with ``per_resource`` the fullest of one bucket per resource type (the
    operators': controller-runtime's client, so KubeRay's ``--qps``/``--burst``, and raykube's as KubeRay's); Events
    and Lease renewals, on clients of their own, left out."""
    by_resource: Counter[str] = Counter()
    for key, count in requests.items():
        resource = key.split(" ", 1)[-1].split("/")[0]
        if resource not in OWN_CLIENT_RESOURCES:
            by_resource[resource if per_resource else ""] += count
    return max((max(0.0, n - burst) / qps for n in by_resource.values()), default=0.0)


def successful_writes(events: Iterable[Mapping[str, Any]], user: str, resource: str) -> int:
    """``user``'s PATCH/PUT requests answered 2xx on ``resource`` (any subresource), e.g. ``rayclusters.ray.io``."""
    return sum(
        1
        for e in events
        if (e.get("user") or {}).get("username") == user
        and e.get("verb") in ("patch", "update")
        and resource_of(e).split("/")[0] == resource
        and 200 <= int((e.get("responseStatus") or {}).get("code") or 0) < 300
    )


def by_user(events: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Requests per user (the API server's load, by client), watches left out, most first."""
    counts = Counter(str((e.get("user") or {}).get("username")) for e in events if e.get("verb") != "watch")
    return dict(counts.most_common())


KWOK_USER = "kwok-controller"


def control_plane_strain(events: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """How hard the run was on the local control plane's own clients, from the audit log: watches that ended (a watch
    is logged when it ends; under load kube-apiserver closes a watcher that cannot keep up, and the client watches
    again, or lists everything again when its place is gone) and lists, per user; and kwok's Pod status patches, with
    how many were refused (a Pod it marked ready a second time from an event it saw again, with a second Pod IP). Runs
    where kwok had to catch up this way cost several CPU-seconds more, whatever the contender."""
    watches: Counter[str] = Counter()
    lists: Counter[str] = Counter()
    kwok: Counter[str] = Counter()
    for event in events:
        user, verb = str((event.get("user") or {}).get("username")), event.get("verb")
        if verb == "watch":
            watches[user] += 1
        elif verb == "list":
            lists[user] += 1
        elif user == KWOK_USER and verb == "patch" and resource_of(event) == "pods/status":
            code = int((event.get("responseStatus") or {}).get("code") or 0)
            kwok["ok" if 200 <= code < 300 else "refused"] += 1
    return {
        "watches_ended": dict(watches.most_common()),
        "lists": dict(lists.most_common()),
        "kwok_pod_status_patches": {"ok": kwok["ok"], "refused": kwok["refused"]},
    }


# --------------------------------------------------------------------------------------------------- contenders
@dataclass(frozen=True)
class Contender:
    """``floor``, ``raykube`` (its default concurrency) or ``raykube-c<N>``, ``kuberay-c<N>``; ``raykube@<git ref>``:
    raykube's operator as of that commit (a temporary git worktree), to compare a change with what came before in one
    invocation, rounds rotated."""

    name: str
    kind: str
    concurrency: int | None
    wait_ready: bool = False  # the floor's: its status write waits for its Pods
    ref: str | None = None
    flags: tuple[str, ...] = ()  # raykube/<flag>=<value>: the operator run with --<flag>=<value> too

    @property
    def slug(self) -> str:
        """The name as a file name."""
        return re.sub(r"[^\w.@=-]", "+", self.name)

    @classmethod
    def parse(cls, text: str) -> Contender:
        base, *flags = text.split("/")
        if flags:
            if not base.startswith("raykube") or not all("=" in f and not f.startswith("-") for f in flags):
                raise argparse.ArgumentTypeError(
                    f"only raykube takes flags, as raykube/<flag>=<value>, e.g. raykube/diagnose-after=1m ({text!r})"
                )
            return replace(cls.parse(base), name=text, flags=tuple(f"--{f}" for f in flags))
        if text == "floor-ready":
            return cls(text, "floor", None, wait_ready=True)
        if text.startswith("raykube@"):
            if not (ref := text.removeprefix("raykube@")):
                raise argparse.ArgumentTypeError(f"raykube@ needs a git ref, e.g. raykube@HEAD~1 ({text!r})")
            return cls(text, "raykube", None, ref=ref)
        kind, _, rest = text.partition("-c")
        if kind not in ("floor", "raykube", "kuberay") or (rest and not rest.isdigit()) or (kind == "floor" and rest):
            raise argparse.ArgumentTypeError(
                f"a contender is floor, floor-ready, raykube[-c<N>] or kuberay-c<N>, got {text!r}"
            )
        if kind == "kuberay" and not rest:
            raise argparse.ArgumentTypeError(f"say KubeRay's reconcile concurrency: kuberay-c1, kuberay-c10 ({text!r})")
        return cls(text, kind, int(rest) if rest else None)


@dataclass
class Settings:
    clusters: int
    qps: float
    burst: int
    nodes: int
    timeout: float
    profile: Path | None
    profile_rate: int
    apiserver_profile: Path | None = None  # --apiserver-profile: kube-apiserver's CPU profiles go here
    apiserver_profile_seconds: float = 50.0
    delete: bool = True  # time the deletion too (--no-delete: at 10,000 it would double the run)
    sources: Mapping[str, Path] = field(default_factory=dict)  # raykube@<ref>: that commit's src/ (a git worktree)
    kuberay: KubeRay | None = None  # the kuberay-c<N> contenders' release (--kuberay)


class Run:
    """One measured run of a contender on its own fresh sandbox."""

    def __init__(self, contender: Contender, settings: Settings, *, kubeconfig: Path, account: Path,
                 workdir: Path, sandbox: Sandbox, audit: AuditLog) -> None:  # fmt: skip
        self.contender = contender
        self.kind = contender.kind
        self.kubeconfig = kubeconfig  # the sandbox's admin
        self.account = account  # the contender's kubeconfig (ServiceAccount bench/operator)
        self.settings = settings
        self.workdir = workdir
        self.sandbox = sandbox
        self.audit = audit
        self.driver = Kube.from_config(kubeconfig, qps=2000, burst=4000, user_agent="raykube-bench-driver",
                                       timeout=600.0)  # fmt: skip
        self.namespace = NAMESPACE
        self.observer = Observer()
        self.ready_file = workdir / "floor.ready"
        self.process: Process | None = None
        self.metrics_addr = ""  # an operator's --metrics-addr (the floor has none)
        self.metrics_text = ""  # its /metrics as last read
        self.profiler: Profiler | None = None
        self.apiserver_profile: ApiServerProfile | None = None
        self.loads: list[float] = []

    def argv(self) -> list[str]:
        settings, account, contender = self.settings, self.account, self.contender
        limits = [f"--qps={settings.qps:g}", f"--burst={settings.burst}"]
        if self.kind == "floor":
            return [sys.executable, "-m", "benchmarks.scale", "--floor-client", f"--kubeconfig={account}",
                    f"--namespace={self.namespace}", f"--ready-file={self.ready_file}", *limits,
                    *(["--wait-ready"] if contender.wait_ready else [])]  # fmt: skip
        metrics, probes = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
        self.metrics_addr = metrics
        common = [f"--kubeconfig={account}", f"--watch-namespace={self.namespace}",
                  f"--leader-election-namespace={self.namespace}", f"--metrics-addr={metrics}",
                  f"--health-probe-bind-address={probes}", *limits]  # fmt: skip
        if contender.concurrency is not None:
            common.append(f"--reconcile-concurrency={contender.concurrency}")
        if self.kind == "kuberay":
            if settings.kuberay is None:
                raise RuntimeError("a kuberay contender needs Settings.kuberay (--kuberay)")
            return [str(settings.kuberay.binary), *common]
        return [sys.executable, "-m", "raykube.cli.main", "operator", "--enable-metrics", *common, *contender.flags]

    async def reconcile_passes(self) -> dict[tuple[str, str], int] | None:
        """The operator's reconcile passes so far, per controller and result, from its /metrics (raykube and KubeRay
        both export controller-runtime's ``controller_runtime_reconcile_total``); None for the floor, or unreadable."""
        if not self.metrics_addr:
            return None
        try:
            async with httpx2.AsyncClient(timeout=10.0) as client:
                response = await client.get(f"http://{self.metrics_addr}/metrics")
            response.raise_for_status()
        except httpx2.HTTPError as exc:
            log.warning("%s: /metrics unreadable (%s); no reconcile counts", self.contender.name, exc)
            return None
        self.metrics_text = response.text
        return reconcile_totals(response.text)

    @property
    def proc(self) -> Process:
        assert self.process is not None  # noqa: S101 - started by run()
        return self.process

    def check_alive(self) -> None:
        if not self.proc.alive():
            raise RuntimeError(f"{self.contender.name} exited with {self.proc.popen.returncode}:\n{self.proc.tail()}")

    def started(self) -> bool | NotYet:
        self.check_alive()
        if self.kind == "floor":
            return True if self.ready_file.exists() else NotYet("floor client not synced")
        return True if self.observer.lease_holder else NotYet("no leader yet")

    async def sample_load(self) -> None:
        while True:
            self.loads.append(os.getloadavg()[0])
            await asyncio.sleep(5)  # a sampling period, not a wait for state

    def all_ready(self) -> bool | NotYet:
        self.check_alive()
        done = len(self.observer.ready_at)
        return True if done == self.settings.clusters else NotYet(f"{done}/{self.settings.clusters} RayClusters ready")

    def component_cpu(self) -> dict[str, float]:
        seconds: dict[str, float] = {}
        for component in self.sandbox.status().components:
            if component.component in COMPONENTS and component.running:
                seconds[component.component] = cpu_seconds(component.pid)
        return seconds

    async def create_all(self) -> float:
        """Create the RayClusters, 50 requests at a time; seconds it took."""
        self.observer.started = time.monotonic()
        n = self.settings.clusters
        for start in range(0, n, 50):
            await asyncio.gather(*(self.driver.create(RAYCLUSTERS, cluster(f"rc-{i:05d}"), self.namespace)
                                   for i in range(start, min(n, start + 50))))  # fmt: skip
        return time.monotonic() - self.observer.started

    async def noop_writes(self, mark: int) -> dict[str, int]:
        """The contender's writes that changed nothing (see the module docstring), up to the audit ``mark``."""
        observer = self.observer
        events = self.audit.events(0, mark)
        writes = successful_writes(events, USER, str(RAYCLUSTERS))

        def caught_up() -> bool | NotYet:
            seen = observer.cluster_modified
            return True if seen >= writes else NotYet(f"{writes} status writes, {seen} changes seen")

        # Let the watch catch up with the last writes; what it never sees is a write that changed nothing.
        with contextlib.suppress(TimeoutError):
            await wait_for(caught_up, 10, what="the watch to see every status write", max_interval=0.5)
        observer.deleting = True
        unchanged = max(0, writes - observer.cluster_modified)
        unchanged += max(0, successful_writes(events, USER, str(LEASES)) - observer.lease_modified)
        return {"unchanged": unchanged, "timestamp_only": observer.timestamp_only}

    async def delete_all(self) -> float:
        """Delete every RayCluster; seconds until every Pod is gone."""
        deleting = time.monotonic()
        driver, namespace = self.driver, self.namespace
        n = self.settings.clusters
        # One DELETE each, 50 at a time, as they were created (a single deletecollection of 1,000 custom resources
        # outlives the API server's request timeout on 2 cores). The garbage collector removes the Pods.
        for start in range(0, n, 50):
            await asyncio.gather(*(driver.delete(RAYCLUSTERS, f"rc-{i:05d}", namespace)
                                   for i in range(start, min(n, start + 50))))  # fmt: skip

        async def pods_gone() -> bool | NotYet:
            page = await driver.request("list", "GET", PODS, PODS.path(namespace), params={"limit": 1})
            left = len(page.get("items") or []) + int((page.get("metadata") or {}).get("remainingItemCount") or 0)
            return True if left == 0 else NotYet(f"{left} Pods left")

        await wait_for(pods_gone, self.settings.timeout, what=f"every Pod gone ({self.contender.name})",
                       max_interval=1.0)  # fmt: skip
        return time.monotonic() - deleting

    async def run(self) -> dict[str, Any]:
        watched = Informer(self.driver, RAYCLUSTERS, namespace=self.namespace)
        watched.add_handler(self.observer.on_cluster)
        lease = Informer(self.driver, LEASES, namespace=self.namespace)
        lease.add_handler(self.observer.on_lease)
        ref = self.contender.ref
        env = {"PYTHONPATH": str(self.settings.sources[ref])} if ref else None
        self.process = Process(self.argv(), self.workdir / f"{self.contender.slug}.log", env)
        try:
            async with informers(watched, lease):
                return await self.measure()
        finally:
            if self.profiler is not None:
                await self.profiler.stop()
            if self.apiserver_profile is not None:
                self.apiserver_profile.stop()
            await self.proc.stop()
            await self.driver.close()

    async def measure(self) -> dict[str, Any]:
        settings, proc, n = self.settings, self.proc, self.settings.clusters
        await wait_for(self.started, 120, what=f"{self.contender.name} to start", max_interval=0.5)
        idle = CpuIdle()
        try:
            await wait_for(idle.quiet, QUIET_TIMEOUT, what="the machine to be quiet", max_interval=1.0)
            quiet = True
        except WaitTimeout:
            quiet = False
        cpu_idle, components_idle = proc.cpu_seconds(), self.component_cpu()
        driver_idle = own_cpu_seconds()
        start_mark = self.audit.mark()
        passes_idle = await self.reconcile_passes()
        self.start_profiles()
        sampler = asyncio.create_task(self.sample_load())
        load_before = os.getloadavg()
        created_seconds = await self.create_all()
        await wait_for(self.all_ready, settings.timeout, what=f"{n} RayClusters ready ({self.contender.name})",
                       max_interval=1.0)  # fmt: skip
        ready_mark = self.audit.mark()
        passes_ready = await self.reconcile_passes()
        ready = sorted(self.observer.ready_at.values())
        cpu_ready, rss_ready = proc.cpu_seconds() - cpu_idle, proc.peak_rss_mib()
        components = {k: round(v - components_idle.get(k, 0.0), 1) for k, v in self.component_cpu().items()}
        components["driver"] = round(own_cpu_seconds() - driver_idle, 1)
        if self.profiler is not None:
            await self.profiler.stop()
        noop = await self.noop_writes(ready_mark) if self.kind != "floor" else {}
        delete_seconds = await self.delete_all() if settings.delete else None
        sampler.cancel()
        cpu_total, rss_peak = proc.cpu_seconds() - cpu_idle, proc.peak_rss_mib()
        to_ready = self.audit.events(start_mark, ready_mark)
        after = self.audit.events(ready_mark)
        requests = requests_of(to_ready, USER)
        result: dict[str, Any] = {
            "ready_seconds": round(ready[-1], 1),
            "ready_quantiles": {q: round(ready[min(n - 1, int(n * float(q)))], 1) for q in ("0.1", "0.5", "0.9")},
            "created_seconds": round(created_seconds, 1),
            "delete_seconds": round(delete_seconds, 1) if delete_seconds is not None else None,
            "cpu_seconds": {"to_ready": round(cpu_ready, 1), "with_deletion": round(cpu_total, 1)},
            "peak_rss_mb": {"at_ready": round(rss_ready * 2**20 / 1e6, 1), "overall": round(rss_peak * 2**20 / 1e6, 1)},
            "component_cpu_seconds_to_ready": components,
            # Everything that ran, over the cores there are: on 2 cores the run is CPU-bound, and this is about its time
            "cpu_bound_seconds": round((cpu_ready + sum(components.values())) / (os.cpu_count() or 1), 1),
            "requests_to_ready": requests,
            "requests_per_cluster_to_ready": round(sum(requests.values()) / n, 2),
            "requests_with_deletion": sum(requests_of([*to_ready, *after], USER).values()),
            "requests_by_user_to_ready": by_user(to_ready),
            "control_plane_strain_to_ready": control_plane_strain(to_ready),
            "load": {
                "quiet_before": quiet,
                "idle_before": round(idle.last_share, 2),
                "before": [round(x, 2) for x in load_before],
                "mean_1m": round(sum(self.loads) / max(1, len(self.loads)), 2),
            },
            "curve": ready,
            "status_changes": status_changes(self.observer.writes),
        }
        if noop:
            result["noop_writes"] = noop
        if diagnosis := diagnosis_totals(self.metrics_text):  # raykube's: what its --diagnose-after loop did
            result["diagnosis_to_ready"] = diagnosis
        if passes_ready is not None and passes_idle is not None:
            passes = {key: count - passes_idle.get(key, 0) for key, count in passes_ready.items()}
            result["reconciles_to_ready"] = {
                f"{ctl} {res}": count for (ctl, res), count in sorted(passes.items()) if count
            }
            raycluster_passes = sum(count for (ctl, _), count in passes.items() if "raycluster" in ctl.lower())
            result["raycluster_reconciles_per_cluster_to_ready"] = round(raycluster_passes / n, 2)
        # What the rate limit alone would allow for the requests the API server counted: the floor's one bucket, the
        # operators' one per resource type. Above it, a contender's time is what the machine's CPU allows.
        bound = qps_bound(requests, qps=settings.qps, burst=settings.burst, per_resource=self.kind != "floor")
        result["qps_bound_seconds"] = round(bound, 1)
        result["off_bound"] = round(ready[-1] / bound - 1, 3) if bound else None
        if self.profiler is not None:
            result["profile"] = str(self.profiler.out)
        if self.apiserver_profile is not None:
            result["apiserver_profile"] = await self.finish_apiserver_profile(self.apiserver_profile)
        return result

    def start_profiles(self) -> None:
        """py-spy on raykube (``--profile``) and kube-apiserver's CPU profile (``--apiserver-profile``), from now."""
        settings, n = self.settings, self.settings.clusters
        stamp = time.strftime("%Y%m%dT%H%M%S")
        if settings.profile is not None and self.kind == "raykube":
            out = settings.profile / f"raykube-{n}-{stamp}.txt"
            self.profiler = Profiler(self.proc.pid, out, settings.profile_rate)
        if settings.apiserver_profile is not None:
            out = settings.apiserver_profile / f"kube-apiserver-{self.contender.slug}-{n}-{stamp}.pb.gz"
            self.apiserver_profile = ApiServerProfile(self.kubeconfig, out, settings.apiserver_profile_seconds)

    async def finish_apiserver_profile(self, profile: ApiServerProfile) -> dict[str, Any]:
        seconds = self.settings.apiserver_profile_seconds
        whole = await profile.wait(seconds + 60)
        parts = summarize_apiserver_profile(profile.out) if whole else None
        return {"path": str(profile.out), "seconds": seconds, "whole": whole, "parts": parts}


def reconcile_totals(exposition: str) -> dict[tuple[str, str], int]:
    """``controller_runtime_reconcile_total`` per (controller, result) from a Prometheus text exposition."""
    totals: Counter[tuple[str, str]] = Counter()
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == "controller_runtime_reconcile_total":
                totals[sample.labels.get("controller", ""), sample.labels.get("result", "")] += int(sample.value)
    return dict(totals)


def diagnosis_totals(exposition: str) -> dict[str, int]:
    """``--diagnose-after``'s counters (passes, diagnoses, RootCause Events) from a Prometheus text exposition: zeros
    when raykube runs without the flag (its metrics are always registered), empty for KubeRay."""
    names = ("raykube_diagnosis_passes", "raykube_diagnoses", "raykube_root_cause_events")
    return {
        family.name: int(sum(s.value for s in family.samples if s.name.endswith("_total")))
        for family in text_string_to_metric_families(exposition)
        if family.name in names
    }


def status_changes(writes: Mapping[str, Sequence[tuple[float, list[str]]]]) -> dict[str, Any]:
    """What the RayClusters' status writes changed, as the driver's watch saw them: writes per cluster, and how
    often each combination of fields changed together in one write (most common first)."""
    together = Counter(" ".join(keys) or "(nothing but lastUpdateTime)" for seen in writes.values() for _, keys in seen)
    per_cluster = Counter(len(seen) for seen in writes.values())
    return {
        "writes_per_cluster": dict(sorted(per_cluster.items())),
        "fields_changed_together": dict(together.most_common(12)),
    }


class CpuIdle:
    """The machine's idle share (``/proc/stat``: idle + iowait over all time) over windows of at least ``window``
    seconds: a contender is measured only once what came before it (the previous sandbox going down, this one
    coming up, the operator's first lists) has stopped using the machine."""

    def __init__(self, window: float = QUIET_WINDOW) -> None:
        self.window = window
        self._last = self._read()
        self.last_share = 0.0

    @staticmethod
    def _read() -> tuple[float, int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        return time.monotonic(), fields[3] + fields[4], sum(fields)

    def quiet(self) -> bool | NotYet:
        now, idle, total = self._read()
        since, last_idle, last_total = self._last
        if now - since < self.window:
            return NotYet(f"idle {self.last_share:.0%} over the last window")
        self._last = (now, idle, total)
        self.last_share = (idle - last_idle) / (total - last_total) if total > last_total else 1.0
        return True if self.last_share >= QUIET_IDLE else NotYet(f"machine {self.last_share:.0%} idle")


def own_cpu_seconds() -> float:
    """This process's CPU seconds: the driver (its creates and watches) runs here."""
    times = os.times()
    return times.user + times.system


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------------------------------- sandbox
@contextlib.asynccontextmanager
async def a_sandbox(contender: Contender, settings: Settings, root: Path) -> AsyncIterator[tuple[Sandbox, Path, Path]]:
    """A fresh sandbox with the audit log on, the contender's CRDs and the ``bench/operator`` account; yields the
    sandbox, the admin kubeconfig and the account's kubeconfig."""
    policy = root / "audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    audit = ("--audit-log-maxsize=100000", f"--audit-policy-file={policy}", f"--audit-log-path={root / 'audit.log'}")
    # After the sandbox's own --profiling=false, so this one wins:
    profiling = ("--profiling=true",) if settings.apiserver_profile is not None else ()
    sandbox = Sandbox.named("bench", root / "sandbox")
    pool = NodePool(count=settings.nodes, cpu="256", memory="1Ti", pods=1000)
    config = SandboxConfig(
        name="bench", ports=Ports.free(), nodes=pool, extra_args={"kube-apiserver": (*audit, *profiling)},
        client_qps=settings.qps, client_burst=settings.burst,  # "every client": kube-controller-manager, kube-scheduler
    )  # fmt: skip
    result = await sandbox.up(config)
    try:
        admin = Kube.from_config(result.kubeconfig)
        try:
            kuberay = settings.kuberay
            await install_crds(admin, kuberay.crds() if contender.kind == "kuberay" and kuberay else load_generated())
            await admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
            await admin.create(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                  "metadata": {"name": ACCOUNT}}, NAMESPACE)  # fmt: skip
            binding = {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "bench-operator"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
            }
            await admin.create(CLUSTER_ROLE_BINDINGS, binding)
        finally:
            await admin.close()
        account = await sandbox.service_account_kubeconfig(NAMESPACE, ACCOUNT, root / "operator.kubeconfig")
        yield sandbox, result.kubeconfig, account
    finally:
        await sandbox.down()


async def run_one(contender: Contender, settings: Settings) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"raykube-bench-{contender.slug}-") as work:
        root = Path(work)
        async with a_sandbox(contender, settings, root) as (sandbox, kubeconfig, account):
            audit = AuditLog(root / "audit.log")
            run = Run(
                contender, settings, kubeconfig=kubeconfig, account=account, workdir=root, sandbox=sandbox, audit=audit
            )
            return await run.run()


# --------------------------------------------------------------------------------------------------- report
def plot(rounds: Sequence[Mapping[str, Mapping[str, Any]]], settings: Settings, path: Path) -> None:
    import matplotlib  # noqa: PLC0415 - a dev dependency, only for the plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, axes = plt.subplots(figsize=(9, 5.5))
    colours = {
        "floor": "tab:gray",
        "floor-ready": "tab:green",
        "raykube": "tab:blue",
        "kuberay-c1": "tab:red",
        "kuberay-c10": "tab:orange",
    }
    for index, runs in enumerate(rounds):
        for name, run in runs.items():
            curve = run["curve"]
            label = f"{name}: {run['ready_seconds']:.0f} s" + (f" (run {index + 1})" if len(rounds) > 1 else "")
            axes.step([0.0, *curve], range(len(curve) + 1), where="post", label=label, color=colours.get(name),
                      linestyle="-" if index == 0 else "--")  # fmt: skip
    axes.set_xlabel("seconds since the first RayCluster was created")
    axes.set_ylabel("RayClusters ready")
    title = f"{settings.clusters} RayClusters (1 head + {WORKERS} workers) to ready, each on a fresh sandbox"
    axes.set_title(
        f"{title}\nQPS {settings.qps:g}/burst {settings.burst} for every client, {settings.nodes} kwok nodes"
    )
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def compare(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """raykube against the floor and KubeRay's best of the same round, with the issue's targets."""
    out: dict[str, Any] = {}
    raykube = runs.get("raykube")
    kuberay = [run for name, run in runs.items() if name.startswith("kuberay")]
    best = min(kuberay, key=lambda run: run["ready_seconds"]) if kuberay else None
    floor = runs.get("floor")
    if raykube is None:
        return out
    meets: dict[str, bool] = {"peak_rss_mb": raykube["peak_rss_mb"]["overall"] <= TARGETS["peak_rss_mb"]}
    if best is not None:
        out["to_kuberay_best"] = round(raykube["ready_seconds"] / best["ready_seconds"], 2)
        meets["to_kuberay_best"] = out["to_kuberay_best"] <= TARGETS["to_kuberay_best"]
        fewest = min(run["requests_per_cluster_to_ready"] for run in kuberay)
        meets["fewer_requests_per_cluster"] = raykube["requests_per_cluster_to_ready"] < fewest
        least = min(run["cpu_seconds"]["to_ready"] for run in kuberay)
        meets["cpu_at_most_kuberay"] = raykube["cpu_seconds"]["to_ready"] <= least
    if "floor-ready" in runs:  # the same wait for Pods as the operators, no logic: informative, no target
        floor_ready = runs["floor-ready"]["ready_seconds"]
        out["to_floor_ready"] = round(raykube["ready_seconds"] / floor_ready, 2)
        if best is not None:  # where an operator that cost nothing beyond the minimum writes would stand
            out["floor_ready_to_kuberay_best"] = round(floor_ready / best["ready_seconds"], 2)
    if floor is not None:
        out["to_floor"] = round(raykube["ready_seconds"] / floor["ready_seconds"], 2)
        meets["to_floor"] = out["to_floor"] <= TARGETS["to_floor"]
        meets["floor_near_bound"] = abs(floor.get("off_bound") or 0) <= TARGETS["floor_off_bound"]
    out["meets_target"] = meets
    return out


def median_runs(rounds: Sequence[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per contender, the median over the rounds of what :func:`compare` and :func:`table` read."""
    out: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(name for runs in rounds for name in runs):
        runs = [runs[name] for runs in rounds if name in runs]
        median = {
            "rounds": len(runs),
            "ready_seconds": _median(runs, "ready_seconds"),
            "ready_quantiles": {"0.5": _median(runs, "ready_quantiles", "0.5")},
            "cpu_seconds": {"to_ready": _median(runs, "cpu_seconds", "to_ready")},
            "peak_rss_mb": {"overall": _median(runs, "peak_rss_mb", "overall")},
            "requests_per_cluster_to_ready": _median(runs, "requests_per_cluster_to_ready"),
            "component_cpu_seconds_to_ready": {
                k: _median(runs, "component_cpu_seconds_to_ready", k)
                for k in sorted({k for run in runs for k in run["component_cpu_seconds_to_ready"]})
            },
            "cpu_bound_seconds": _median(runs, "cpu_bound_seconds"),
        }
        if all("off_bound" in run for run in runs):
            median["off_bound"] = _median(runs, "off_bound")
        out[name] = median
    return out


def _median(runs: Sequence[Mapping[str, Any]], *path: str) -> float:
    """The median of one figure (``path`` into each run; a missing or null figure counts 0)."""

    def figure(run: Mapping[str, Any]) -> float:
        value: Any = run
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        return float(value or 0.0)

    return round(statistics.median(figure(run) for run in runs), 2)


def table(rounds: Sequence[Mapping[str, Mapping[str, Any]]], median: Mapping[str, Mapping[str, Any]] | None = None
          ) -> str:  # fmt: skip
    """One row per run (in the order the contenders ran), then the medians over the rounds."""
    rows = [("run", "contender", "to ready", "p50", "ΣCPU/cores", "CPU s", "peak RSS MB", "requests/cluster",
             "apiserver CPU s", "etcd CPU s")]  # fmt: skip
    labelled = [(str(index + 1), runs) for index, runs in enumerate(rounds)]
    for label, runs in [*labelled, *([("median", median)] if median else [])]:
        for name, run in runs.items():
            comp = run["component_cpu_seconds_to_ready"]
            p50 = run["ready_quantiles"]["0.5"]
            rows.append((label, name, f"{run['ready_seconds']:.1f} s", f"{p50:.1f} s",
                         f"{run.get('cpu_bound_seconds', 0):.1f} s", f"{run['cpu_seconds']['to_ready']:.1f}",
                         f"{run['peak_rss_mb']['overall']:.0f}", f"{run['requests_per_cluster_to_ready']:.2f}",
                         f"{comp.get('kube-apiserver', 0):.1f}", f"{comp.get('etcd', 0):.1f}"))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def keep_partial(args: argparse.Namespace, round_: int, name: str, run: dict[str, Any]) -> None:
    """Append one contender's result to PARTIAL as soon as it is measured: a long invocation (10,000 clusters takes
    about an hour per contender on 2 cores) that is stopped before its end keeps what it measured."""
    line = {
        "benchmark": "scale",
        "schema": SCHEMA,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {"clusters": args.clusters, "qps": args.qps, "burst": args.burst, "nodes": args.nodes},
        "round": round_,
        "contender": name,
        "run": {k: v for k, v in run.items() if k != "curve"},
    }
    append_line(PARTIAL, line)


@contextlib.contextmanager
def checkouts(refs: Iterable[str]) -> Iterator[dict[str, Path]]:
    """Each git ref's ``src/`` in a temporary worktree of this repository (removed afterwards)."""
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="raykube-bench-refs-") as tmp:
        sources: dict[str, Path] = {}
        try:
            for index, ref in enumerate(dict.fromkeys(refs)):
                tree = Path(tmp) / str(index)
                subprocess.run(["git", "-C", str(repo), "worktree", "add", "--quiet", "--detach", str(tree), ref],
                               check=True)  # fmt: skip
                sources[ref] = tree / "src"
            yield sources
        finally:
            for source in sources.values():
                subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(source.parent)],
                               check=False)  # fmt: skip


async def main_async(args: argparse.Namespace, sources: Mapping[str, Path] | None = None) -> dict[str, Any]:
    settings = Settings(args.clusters, args.qps, args.burst, args.nodes, args.timeout, args.profile,
                        args.profile_rate, apiserver_profile=args.apiserver_profile,
                        apiserver_profile_seconds=args.apiserver_profile_seconds, delete=not args.no_delete,
                        sources=sources or {}, kuberay=args.kuberay_ref)  # fmt: skip
    contenders: list[Contender] = args.contenders
    rounds: list[dict[str, dict[str, Any]]] = []
    for index in range(args.repeat):
        runs: dict[str, dict[str, Any]] = {}
        # Each round starts one contender further on, so that no contender always runs first or right after the
        # same other one; the report keeps the order in which they ran.
        shift = index % len(contenders)
        for contender in [*contenders[shift:], *contenders[:shift]]:
            say(f"run {index + 1}/{args.repeat}: {contender.name} ...")
            try:
                runs[contender.name] = await run_one(contender, settings)
            except WaitTimeout as exc:  # a contender that did not finish is a result too: how far it got
                keep_partial(args, index + 1, contender.name, {"completed": False, "timed_out": str(exc)})
                raise
            say(f"  {contender.name}: {runs[contender.name]['ready_seconds']} s to ready")
            keep_partial(args, index + 1, contender.name, runs[contender.name])
        rounds.append(runs)
    result: dict[str, Any] = {
        "benchmark": "scale",
        "schema": SCHEMA,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **environment(settings.kuberay),
        "settings": {
            "clusters": args.clusters,
            "workers_per_cluster": WORKERS,
            "qps": args.qps,
            "burst": args.burst,
            "nodes": args.nodes,
            "deletion_timed": not args.no_delete,
            "contenders": [c_.name for c_ in contenders],
            "raykube_default_concurrency": DEFAULT_RECONCILE_CONCURRENCY,
        },
        "targets": TARGETS,
        "runs": [
            {name: {k: v for k, v in run.items() if k != "curve"} for name, run in runs.items()} for runs in rounds
        ],
        "comparison": [compare(runs) for runs in rounds],
    }
    if len(rounds) > 1:
        medians = median_runs(rounds)
        result["median"] = medians
        result["median_comparison"] = compare(medians)
    if args.clusters > 0:
        path = PLOTS / f"scale-ready-{args.clusters}.png"
        plot(rounds, settings, path)
        result["plot"] = str(path.relative_to(Path(__file__).parent.parent))
    result["table"] = table(rounds, result.get("median"))
    return result


def environment(kuberay: KubeRay | None) -> dict[str, Any]:
    """The machine and the versions a kwok benchmark's line records (KubeRay's when one ran)."""
    return {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "versions": {
            "kubernetes": versions.KUBERNETES_VERSION,
            "kwok": versions.KWOK_VERSION,
            **(kuberay.record() if kuberay else {}),
            # The sandbox's build of each (its recipe revision): kwok r2 is patch_kwok_watch's (sandbox/build.py).
            "builds": [artifact.dirname for artifact in versions.ARTIFACTS],
        },
    }


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)  # noqa: T201 - progress of a long benchmark


async def cancellable(work: Any) -> Any:
    """Run ``work`` so that SIGTERM cancels it: the sandbox and the processes it started are then still stopped."""
    task = asyncio.ensure_future(work)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await task


def contender_list(text: str) -> list[Contender]:
    return [Contender.parse(part.strip()) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=1000)
    default = ",".join(CONTENDERS)
    parser.add_argument("--contenders", type=contender_list, default=contender_list(default),
                        help=f"floor, floor-ready, raykube[-c<N>][/flag=value], kuberay-c<N>; default "
                             f"{default}")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every contender")
    add_kuberay_option(parser)
    parser.add_argument("--qps", type=float, default=100.0)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=10, help="kwok nodes of 256 CPU / 1Ti / 1,000 Pods")
    parser.add_argument("--timeout", type=float, default=1800.0, help="for each wait (ready, Pods gone)")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR", help="py-spy raykube into DIR")
    parser.add_argument(
        "--no-delete",
        action="store_true",
        help="do not delete the RayClusters and time the Pods' removal (the sandbox goes anyway)",
    )
    parser.add_argument("--profile-rate", type=int, default=50, help="py-spy samples per second")
    parser.add_argument("--apiserver-profile", type=Path, default=None, metavar="DIR",
                        help="kube-apiserver's CPU profile (Go pprof) of every run into DIR")  # fmt: skip
    parser.add_argument("--apiserver-profile-seconds", type=float, default=50.0,
                        help="how long each kube-apiserver profile samples, from the first create")  # fmt: skip
    # The floor's own process (started by the benchmark):
    parser.add_argument("--floor-client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--namespace", help=argparse.SUPPRESS)
    parser.add_argument("--ready-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--wait-ready", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_client:
        floor = Floor(args.kubeconfig, args.namespace, qps=args.qps, burst=args.burst, wait_ready=args.wait_ready)
        asyncio.run(floor.run(args.ready_file))
        return
    # KubeRay's operator (built if missing) and CRDs, when a contender is KubeRay.
    args.kuberay_ref = kuberay(args.kuberay) if any(c_.kind == "kuberay" for c_ in args.contenders) else None
    with checkouts(c_.ref for c_ in args.contenders if c_.ref) as sources:
        result = asyncio.run(cancellable(main_async(args, sources)))
    append_line(RESULTS, result)
    print(json.dumps({k: v for k, v in result.items() if k != "table"}, indent=2))  # noqa: T201
    print("\n" + result["table"])  # noqa: T201
    for index, comparison in enumerate(result["comparison"]):
        print(f"run {index + 1}: {json.dumps(comparison)}")  # noqa: T201
    if "median_comparison" in result:
        print(f"median: {json.dumps(result['median_comparison'])}")  # noqa: T201
    for runs in result["runs"]:
        run = runs.get("raykube") or {}
        if "profile" in run:
            summary = summarize_profile(Path(run["profile"]))
            for title, rows in summary.items():
                print(f"\nprofile, {title} (% of samples):")  # noqa: T201
                for frame, share in rows:
                    print(f"  {share:5.1f}  {frame}")  # noqa: T201
    for index, runs in enumerate(result["runs"]):
        for name, run in runs.items():
            parts = (run.get("apiserver_profile") or {}).get("parts")
            if parts:
                shown = ", ".join(f"{k} {v}%" for k, v in parts.items() if k != "cpu_seconds_sampled")
                sampled = parts["cpu_seconds_sampled"]
                print(f"\nkube-apiserver, run {index + 1}, {name}: {sampled} CPU-s sampled; {shown}")  # noqa: T201


if __name__ == "__main__":
    main()

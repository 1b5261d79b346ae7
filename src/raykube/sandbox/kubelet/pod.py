"""One Pod on a process node, from scheduled to deleted: what a kubelet's pod worker does.

``PodWorker.run``:

1. **Sandbox**: the Pod's directory, the pause process (network/UTS/IPC/mount namespaces, tmpfs volumes), ``eth0``
   on the bridge with an IP from the node's range, ``/etc/hosts``, ``/etc/resolv.conf`` and ``/etc/hostname``, then
   the volumes (a ``FailedMount`` is retried until it resolves or the Pod goes), and kwok's ``Logs``, ``Exec`` and
   ``PortForward`` objects for the Pod (``kubectl logs|exec|port-forward``; as a kubelet does, any port something
   listens on in the Pod can be forwarded, declared or not: it is added to the PortForward when seen listening).
2. **Init containers** in order, each to completion (restarted per ``restartPolicy``; ``restartPolicy: Always`` ones
   are sidecars that keep running once started).
3. **Containers**, each in its own task: image -> venv by the kubelet's pull rules (``ErrImagePull``,
   ``ImagePullBackOff``, ``ErrImageNeverPull``), env (``CreateContainerConfigError`` starts nothing), the process,
   probes (startup gates liveness and readiness; liveness and startup failures restart it), exit codes and
   ``lastState``, restarts per ``restartPolicy`` with the kubelet's back-off (``CrashLoopBackOff``).
4. **Termination** when the Pod is deleted: ``preStop``, SIGTERM, the grace period, SIGKILL; then the sandbox goes,
   a last status with a terminal phase (Succeeded or Failed) and each container's exit code and times is written and
   the Pod object is deleted with grace 0, as the kubelet confirms a deletion (a finalizer, such as the Job
   controller's, keeps it readable).

Status is written by one publisher task, from the state here, whenever it changes (merge patch of ``/status``); the
phase and conditions follow the kubelet's rules in :mod:`~raykube.sandbox.kubelet.podstatus`. Events go to the
node's :class:`~raykube.kube.events.EventRecorder` (queued, never awaited).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from raykube.kube import objects, times
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.events import EventRecorder
from raykube.kube.resources import PODS, Resource
from raykube.sandbox.kubelet import images, network, nstools, podstatus, probes, volumes
from raykube.sandbox.kubelet.env import ContainerConfigError, NodeCapacity, command_line, container_env
from raykube.sandbox.kwok import EXECS, LOGS, PORT_FORWARDS

log = logging.getLogger("raykube.sandbox.kubelet.pod")

BACKOFF_START = 10.0
BACKOFF_MAX = 300.0
BACKOFF_RESET_AFTER = 600.0  # a container that ran this long restarts without back-off
CONFIG_RETRY = 5.0
SYNC_RETRY = 10.0  # the kubelet's pod worker syncs a Pod again this long after a failed sync (backOffPeriod)
MOUNT_RETRY = 3.0
SHUTDOWN_GRACE = 2.0  # when the runtime itself stops (sandbox down), Pods get this long
FIELD_MANAGER = "raykube-process-runtime"
DEFAULT_GRACE = 30
PORT_SCAN_INTERVAL = 2.0  # how often the TCP ports listened on in a Pod are looked for, for kubectl port-forward
_TCP_LISTEN = "0A"  # the state column of /proc/net/tcp for LISTEN


class Host(Protocol):
    """What a Pod worker needs from the runtime."""

    kube: Kube
    image_store: images.ImageStore
    net: network.PodNetwork
    dns_ip: str
    nstools_path: Path
    hide_paths: list[str]
    shutting_down: bool

    def service_env(self, namespace: str, enable_links: bool) -> dict[str, str]: ...

    async def configmap(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    async def secret(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def new_venv(self, venv: Path) -> None: ...


@dataclass
class Node:
    name: str
    index: int
    pool: network.IpPool
    capacity: NodeCapacity
    recorder: EventRecorder  # the node's kubelet's: source component "kubelet", host the node
    host_ip: str = "127.0.0.1"


def _consume(task: asyncio.Task[Any]) -> None:
    """Retrieve a finished background task's outcome, so that asyncio does not report it as never retrieved."""
    if not task.cancelled():
        task.exception()


class Terminating(Exception):
    """The Pod is being deleted (or the runtime stops): stop what you are doing."""


class ImageError(Exception):
    """No image to run a container with: the waiting ``reason`` (ErrImagePull, ImagePullBackOff, ErrImageNeverPull)
    and ``message`` its status shows."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@dataclass
class Container:
    spec: dict[str, Any]
    kind: str  # init | sidecar | main
    dir: Path
    restart_count: int = 0
    state: dict[str, Any] = field(default_factory=dict)
    last_state: dict[str, Any] = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    container_id: str = ""
    image_id: str = ""
    pid: int = 0
    start_time: int = 0
    monitor: asyncio.subprocess.Process | None = None
    env: dict[str, str] = field(default_factory=dict)
    failures: int = 0  # restarts in a row without a long run, for the back-off
    started_monotonic: float = 0.0
    run_dir: Path = Path()
    runnable: images.Runnable | None = None
    runs: int = 0  # processes started so far; run N logs to N.log
    probe_tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def field_path(self) -> str:
        return f"spec.{'initContainers' if self.kind != 'main' else 'containers'}{{{self.name}}}"

    @property
    def running(self) -> bool:
        return "running" in self.state

    def log_file(self, run: int) -> Path:
        return self.dir / "logs" / f"{run}.log"

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "name": self.name,
            "image": self.spec.get("image", ""),
            "imageID": self.image_id,
            "ready": self.ready,
            "restartCount": self.restart_count,
            "started": self.started,
            "state": self.state,
            "lastState": self.last_state,
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status


def _backoff(failures: int) -> float:
    if failures <= 0:
        return 0.0
    return float(min(BACKOFF_START * 2 ** (failures - 1), BACKOFF_MAX))


class PodWorker:
    def __init__(self, host: Host, node: Node, pod: Mapping[str, Any], pods_root: Path) -> None:
        self.host = host
        self.node = node
        self.pod = pod
        meta = pod["metadata"]
        self.uid = str(meta["uid"])
        self.namespace = str(meta["namespace"])
        self.name = str(meta["name"])
        self.dir = pods_root / self.uid
        self.ip = ""
        self.pause: asyncio.subprocess.Process | None = None
        self.pause_pid = 0
        self.veth = network.veth_name(self.uid)
        self.sandbox_ready = False
        self.forwarded: frozenset[int] = frozenset()  # the ports kwok's PortForward for the Pod lists
        self.volumes: dict[str, Path] = {}
        spec = pod["spec"]
        self.containers: dict[str, Container] = {}
        for init in spec.get("initContainers") or []:
            kind = "sidecar" if init.get("restartPolicy") == "Always" else "init"
            self.containers[init["name"]] = Container(
                init, kind, self.dir / "containers" / init["name"], state={"waiting": {"reason": "PodInitializing"}}
            )
        has_init = any(c.kind == "init" for c in self.containers.values())
        for container in spec["containers"]:
            reason = "PodInitializing" if has_init else "ContainerCreating"
            self.containers[container["name"]] = Container(
                container, "main", self.dir / "containers" / container["name"], state={"waiting": {"reason": reason}}
            )
        for c in self.containers.values():
            if c.kind != "main":
                c.state = {"waiting": {"reason": "PodInitializing"}}
        self.terminating = asyncio.Event()
        self.gone = False  # the Pod object no longer exists
        self.grace: float | None = None
        self.dirty = asyncio.Event()
        self.changed = asyncio.Event()
        self.terminal_phase: str | None = None
        self.deleting = False  # the Pod's deletion was requested (not the runtime stopping)
        self.stopped = False  # its containers and sandbox are stopped for good
        self._conditions: list[dict[str, Any]] = []
        self.start_time = times.format_time()
        self.initialized = False
        self._published: dict[str, Any] | None = None
        self._warned: set[tuple[str, str]] = set()
        self.pull_backoff = images.PullBackOff()  # the kubelet's is per node, keyed by Pod uid and image: the same
        self.pull_errors: dict[str, str] = {}  # image -> its last pull error, for the ImagePullBackOff message

    # ------------------------------------------------------------------------------------------------ inputs
    def update(self, pod: Mapping[str, Any]) -> None:
        self.pod = pod
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") and not self.terminating.is_set():
            grace = meta.get("deletionGracePeriodSeconds")
            self.grace = float(grace) if grace is not None else None
            self.deleting = True
            self.terminating.set()
        if pod["spec"].get("readinessGates"):
            self._mark()  # Ready follows the gates' conditions, which others set

    def deleted(self) -> None:
        self.gone = True
        self.deleting = True
        self.grace = 0.0
        self.terminating.set()

    def stop(self) -> None:
        """The runtime stops: take everything down quickly."""
        self.grace = SHUTDOWN_GRACE
        self.terminating.set()

    # ------------------------------------------------------------------------------------------------ helpers
    def _mark(self) -> None:
        self.dirty.set()
        self.changed.set()

    def _event(self, kind: str, reason: str, message: str, container: Container | None = None) -> None:
        """Queue an Event about the Pod (or one of its containers: ``involvedObject.fieldPath``) as its node's kubelet.

        A kubelet's core/v1 Events have no ``action``, so none is given. The Pod from a list has no kind or apiVersion
        (the API server leaves them out of list items): the reference gets them here.
        """
        regarding = {"apiVersion": "v1", "kind": "Pod", "metadata": objects.meta(self.pod)}
        field_path = container.field_path if container else ""
        self.node.recorder.event(regarding, kind, reason, "", message, field_path=field_path)

    def _warn_once(self, reason: str, message: str, container: Container | None = None) -> None:
        key = (reason, message)
        if key not in self._warned:
            self._warned.add(key)
            self._event("Warning", reason, message, container)

    async def _sleep_or_terminate(self, seconds: float) -> None:
        """Sleep ``seconds`` unless the Pod starts terminating first (then raise Terminating)."""
        if self.terminating.is_set():
            raise Terminating
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.terminating.wait(), seconds)
        if self.terminating.is_set():
            raise Terminating

    def _grace_seconds(self) -> float:
        if self.grace is not None:
            return self.grace
        return float(self.pod["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE))

    # ------------------------------------------------------------------------------------------------ main
    async def run(self) -> None:
        publisher = asyncio.create_task(self._publisher(), name=f"status {self.namespace}/{self.name}")
        ports: asyncio.Task[None] | None = None
        self._mark()
        try:
            await self._create_sandbox()
            ports = asyncio.create_task(self._forward_listening_ports(), name=f"ports {self.namespace}/{self.name}")
            await self._initialize()
            await self._run_containers()
            if not self.terminating.is_set():  # the Pod ended for good: free its sandbox, keep its status
                await self._shutdown()
                self._mark()
                await self.terminating.wait()
        except Terminating:
            pass
        except Exception:
            log.exception("pod %s/%s failed in the runtime", self.namespace, self.name)
            self._event("Warning", "FailedSync", "the process runtime failed on this Pod; see its log")
            await self.terminating.wait()
        finally:
            await self._shutdown()
            self._mark()
            await asyncio.sleep(0)
            for task in (publisher, ports):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if not self.gone and not self.host.shutting_down and self.terminating.is_set():
                await self._publish()
                with contextlib.suppress(ApiError):  # as the kubelet confirms a deletion: grace 0, this uid only
                    await self.host.kube.delete(PODS, self.name, self.namespace, uid=self.uid, grace_period_seconds=0)
            self.node.recorder.forget(self.uid)
            if self.ip:
                self.node.pool.release(self.ip)
            if not self.host.shutting_down:
                volumes.remove_pod_dir(self.dir)

    # ------------------------------------------------------------------------------------------------ sandbox
    async def _create_sandbox(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        spec_file = self.dir / "pause-spec.json"
        ready = self.dir / "pause.json"
        shm = self.dir / "shm"
        memory = [{"path": str(shm), "sizeBytes": 64 * 1024 * 1024}]
        memory += [m.to_json() for m in volumes.memory_volumes(self.pod, self.dir)]
        spec_file.write_text(json.dumps({"hostname": self.hostname, "tmpfs": memory, "readyFile": str(ready)}))
        self.pause = await _spawn_helper(self.host.nstools_path, "pause", spec_file, self.dir / "pause.log")
        await _wait_file(ready, self.pause, 30, "the Pod sandbox")
        self.pause_pid = int(json.loads(ready.read_text())["pid"])
        self.ip = self.node.pool.take()
        await network.attach(self.host.net, self.pause_pid, self.veth, self.ip)
        self._write_etc_files()
        self.sandbox_ready = True
        self._mark()
        await self._mount_volumes()
        await self._kwok_objects()

    @property
    def hostname(self) -> str:
        return str(self.pod["spec"].get("hostname") or self.name)[:63]

    def _write_etc_files(self) -> None:
        spec = self.pod["spec"]
        etc = self.dir / "etc"
        etc.mkdir(exist_ok=True)
        lines = [
            "# Kubernetes-managed hosts file (raykube process runtime).",
            "127.0.0.1\tlocalhost",
            "::1\tlocalhost ip6-localhost ip6-loopback",
            "fe00::0\tip6-localnet",
            "fe00::0\tip6-mcastprefix",
            "fe00::1\tip6-allnodes",
            "fe00::2\tip6-allrouters",
        ]
        if subdomain := spec.get("subdomain"):
            fqdn = f"{self.hostname}.{subdomain}.{self.namespace}.svc.cluster.local"
            lines.append(f"{self.ip}\t{fqdn}\t{self.hostname}")
        else:
            lines.append(f"{self.ip}\t{self.hostname}")
        for alias in spec.get("hostAliases") or []:
            lines.append(f"{alias.get('ip')}\t{' '.join(alias.get('hostnames') or [])}")
        (etc / "hosts").write_text("\n".join(lines) + "\n")
        search = [f"{self.namespace}.svc.cluster.local", "svc.cluster.local", "cluster.local"]
        nameservers = [self.host.dns_ip]
        options = ["ndots:5"]
        dns_config = spec.get("dnsConfig") or {}
        if spec.get("dnsPolicy") == "None":
            search, nameservers, options = [], [], []
        search += list(dns_config.get("searches") or [])
        nameservers += list(dns_config.get("nameservers") or [])
        for option in dns_config.get("options") or []:
            options.append(f"{option['name']}:{option['value']}" if option.get("value") else option["name"])
        resolv = [f"search {' '.join(search)}"] if search else []
        resolv += [f"nameserver {ns}" for ns in nameservers]
        if options:
            resolv.append(f"options {' '.join(options)}")
        (etc / "resolv.conf").write_text("\n".join(resolv) + "\n")
        (etc / "hostname").write_text(self.hostname + "\n")

    async def _mount_volumes(self) -> None:
        context = volumes.VolumeContext(
            self.pod,
            self.dir,
            self.host.kube,
            self.ip,
            self.node.host_ip,
            self.node.capacity,
            self.host.configmap,
            self.host.secret,
            self.node.name,
        )
        last = ""
        reported = 0.0
        while True:
            try:
                self.volumes = await volumes.prepare(context)
            except volumes.VolumeError as exc:
                message = str(exc)
                if message != last or time.monotonic() - reported > 60:
                    self._event("Warning", "FailedMount", message)
                    last, reported = message, time.monotonic()
            else:
                return
            await self._sleep_or_terminate(MOUNT_RETRY)

    async def _kwok_objects(self) -> None:
        """kwok serves ``kubectl logs|exec|port-forward`` for the Pod from these (owned by the Pod: GC removes
        them with it)."""
        execs = [
            {
                "containers": [c.name],
                "local": {"envs": [{"name": nstools.EXEC_TARGET_ENV, "value": str(c.dir)}]},
            }
            for c in self.containers.values()
        ]
        await self._apply_kwok(EXECS, {"execs": execs})
        self.forwarded = self._declared_ports()
        if self.forwarded:
            await self._apply_forwards(self.forwarded)
        await self._kwok_logs()

    async def _apply_kwok(self, res: Resource, spec: Mapping[str, Any]) -> None:
        owner = [{"apiVersion": "v1", "kind": "Pod", "name": self.name, "uid": self.uid}]
        meta = {"name": self.name, "namespace": self.namespace, "ownerReferences": owner}
        body = {"apiVersion": res.api_version, "kind": res.kind, "metadata": meta, "spec": spec}
        await self.host.kube.apply(res, body, self.namespace, field_manager=FIELD_MANAGER)

    def _declared_ports(self) -> frozenset[int]:
        return frozenset(
            int(port["containerPort"])
            for c in self.containers.values()
            for port in c.spec.get("ports") or []
            if (port.get("protocol") or "TCP") == "TCP"
        )

    async def _apply_forwards(self, ports: frozenset[int]) -> None:
        """kwok's PortForward for ``ports``: each one through nstools into the Pod's network namespace. kwok's
        command forward is told no port, hence one entry per port."""
        command = [sys.executable, "-S", str(self.host.nstools_path), "port-forward", str(self.pause_pid)]
        forwards = [{"ports": [port], "command": [*command, str(port)]} for port in sorted(ports)]
        await self._apply_kwok(PORT_FORWARDS, {"forwards": forwards})

    async def _forward_listening_ports(self) -> None:
        """A kubelet forwards any port of the Pod's network namespace, declared in ``ports`` or not (KubeRay's
        quickstart forwards the serve port 8000 no container declares). kwok forwards only listed ports, so the
        TCP ports something listens on are added to the Pod's PortForward as they appear."""
        while not self.terminating.is_set():
            listening = await asyncio.to_thread(listening_ports, self.pause_pid)
            if listening - self.forwarded:
                wanted = self.forwarded | listening
                with contextlib.suppress(ApiError):
                    await self._apply_forwards(wanted)
                    self.forwarded = wanted
            with contextlib.suppress(Terminating):
                await self._sleep_or_terminate(PORT_SCAN_INTERVAL)

    async def _kwok_logs(self) -> None:
        owner = [{"apiVersion": "v1", "kind": "Pod", "name": self.name, "uid": self.uid}]
        entries = []
        for c in self.containers.values():
            entry: dict[str, Any] = {
                "containers": [c.name],
                "logsFile": str(c.log_file(max(c.runs - 1, 0))),
                "follow": True,
            }
            if c.runs > 1:
                entry["previousLogsFile"] = str(c.log_file(c.runs - 2))
            entries.append(entry)
        body = {
            "apiVersion": LOGS.api_version,
            "kind": LOGS.kind,
            "metadata": {"name": self.name, "namespace": self.namespace, "ownerReferences": owner},
            "spec": {"logs": entries},
        }
        with contextlib.suppress(ApiError):
            await self.host.kube.apply(LOGS, body, self.namespace, field_manager=FIELD_MANAGER)

    # ------------------------------------------------------------------------------------------------ phases
    async def _initialize(self) -> None:
        policy = self.pod["spec"].get("restartPolicy", "Always")
        for c in [c for c in self.containers.values() if c.kind in ("init", "sidecar")]:
            if c.kind == "sidecar":
                asyncio.create_task(self._runner(c), name=f"sidecar {c.name}")  # noqa: RUF006 - ends with the Pod
                while not (c.running and c.started):
                    await self._wait_change()
                continue
            while True:
                code = await self._run_once_unless_terminating(c)
                if code == 0:
                    break
                if policy == "Never":
                    self.terminal_phase = podstatus.FAILED
                    self._mark()
                    for other in self.containers.values():
                        if other.kind == "main":
                            other.state = {"waiting": {"reason": "PodInitializing"}}
                    await self.terminating.wait()
                    raise Terminating
                await self._back_off(c)
        self.initialized = True
        for c in self.containers.values():
            if c.kind == "main":
                c.state = {"waiting": {"reason": "ContainerCreating"}}
        self._mark()

    async def _run_containers(self) -> None:
        tasks = [
            asyncio.create_task(self._runner(c), name=f"container {c.name}")
            for c in self.containers.values()
            if c.kind == "main"
        ]
        done_waiter = asyncio.create_task(self.terminating.wait())
        try:
            pending = {*tasks, done_waiter}
            while True:
                finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if done_waiter in finished:
                    break
                if all(t.done() for t in tasks):  # every container ended for good (restartPolicy)
                    for task in tasks:
                        if not task.cancelled() and (exc := task.exception()) and not isinstance(exc, Terminating):
                            raise exc
                    self.terminal_phase = self._phase()
                    self._mark()
                    break
        finally:
            done_waiter.cancel()

    async def _run_once_unless_terminating(self, c: Container) -> int:
        """Run init container ``c`` once, but raise Terminating as soon as the Pod terminates: the kubelet kills a
        running init container when its Pod is deleted (here ``_shutdown`` does, as for the main containers, whose run
        also goes on until then) rather than waiting for it to end by itself, which a loop waiting for a dead head's
        GCS never does."""
        run = asyncio.create_task(self._run_once(c), name=f"init container {c.name}")
        stop = asyncio.create_task(self.terminating.wait())
        try:
            await asyncio.wait({run, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if run.done():
            return run.result()
        run.add_done_callback(_consume)  # ends once _shutdown has stopped the container
        raise Terminating

    async def _wait_change(self) -> None:
        self.changed.clear()
        waiter = asyncio.create_task(self.changed.wait())
        stop = asyncio.create_task(self.terminating.wait())
        try:
            await asyncio.wait({waiter, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            stop.cancel()
        if self.terminating.is_set():
            raise Terminating

    async def _runner(self, c: Container) -> None:
        policy = "Always" if c.kind == "sidecar" else self.pod["spec"].get("restartPolicy", "Always")
        while not self.terminating.is_set():
            code = await self._run_once(c)
            if self.terminating.is_set():
                return
            if policy == "Never" or (policy == "OnFailure" and code == 0):
                return
            await self._back_off(c)

    async def _back_off(self, c: Container) -> None:
        ran = time.monotonic() - c.started_monotonic if c.started_monotonic else 0.0
        c.failures = 1 if ran >= BACKOFF_RESET_AFTER else c.failures + 1
        delay = _backoff(c.failures - 1)
        if delay > 0:
            message = (
                f"back-off {int(delay)}s restarting failed container={c.name} "
                f"pod={self.name}_{self.namespace}({self.uid})"
            )
            c.state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
            self._mark()
            self._event(
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {c.name} in pod {self.name}_{self.namespace}({self.uid})",
                c,
            )
            await self._sleep_or_terminate(delay)

    # ------------------------------------------------------------------------------------------------ one run
    async def _run_once(self, c: Container) -> int:
        """Start ``c`` (retrying what keeps it from starting) and wait for it to exit; its exit code."""
        await self._prepare(c)
        code = await self._start(c)
        if code is None:
            self._start_probes(c)
            try:
                code = await self._wait_exit(c)
            finally:
                for task in c.probe_tasks:
                    task.cancel()
                c.probe_tasks.clear()
        c.ready = False
        c.started = False
        self._mark()
        return code

    async def _prepare(self, c: Container) -> None:
        """Image and configuration, retried (with the kubelet's waiting reasons) until both are fine. As the kubelet
        does before every start of a container, each attempt ensures the image by the pull policy first. A failed
        image is retried at the kubelet's pace: its pod worker syncs again ``SYNC_RETRY`` after an error, and the
        image's back-off decides whether that sync pulls (``ErrImagePull`` when it fails) or not
        (``ImagePullBackOff``)."""
        while True:
            if self.terminating.is_set():
                raise Terminating
            try:
                c.runnable = await self._ensure_image(c)
            except ImageError as exc:
                c.state = {"waiting": {"reason": exc.reason, "message": exc.message}}
                self._mark()
                self._event("Warning", "Failed", f"Error: {exc.reason}", c)
                await self._sleep_or_terminate(SYNC_RETRY)
                continue
            try:
                c.env = await self._environment(c)
            except ContainerConfigError as exc:
                c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(exc)}}
                self._mark()
                self._event("Warning", "Failed", f"Error: {exc}", c)
                await self._sleep_or_terminate(CONFIG_RETRY)
            else:
                return

    async def _ensure_image(self, c: Container) -> images.Runnable:
        """The kubelet's ``EnsureImageExists``: the pull policy, the back-off, the pull (making the venv), with the
        kubelet's events (``Pulling``, ``Pulled``, ``Failed``, ``BackOff``, ``ErrImageNeverPull``). ImageError with
        the waiting reason and message when there is no image to run."""
        reference = str(c.spec.get("image") or "")
        store = self.host.image_store
        parsed: images.Image | images.ImageNotFound
        try:
            parsed = images.parse(reference)
        except images.ImageNotFound as exc:
            parsed = exc
        image = None if isinstance(parsed, images.ImageNotFound) else parsed
        present = image is not None and store.present(image)
        policy = images.pull_policy(c.spec)
        if not images.should_pull(policy, present):
            if image is None or not present:
                message = f'Container image "{reference}" is not present with pull policy of Never'
                self._event("Warning", "ErrImageNeverPull", message, c)
                raise ImageError("ErrImageNeverPull", message)
            runnable = await store.ensure(image, lambda _: None)
            message = f'Container image "{reference}" already present on machine ({self._mapping(runnable, [])})'
            return self._pulled(c, image, runnable, message)
        if self.pull_backoff.in_backoff(reference, time.monotonic()):
            message = f'Back-off pulling image "{reference}"'
            self._event("Normal", "BackOff", message, c)
            previous = self.pull_errors.get(reference)
            raise ImageError("ImagePullBackOff", f"{message}: {previous}" if previous else message)
        self.pull_errors.pop(reference, None)
        self._event("Normal", "Pulling", f'Pulling image "{reference}"', c)
        started = time.monotonic()
        notes: list[str] = []
        try:
            if isinstance(parsed, images.ImageNotFound):
                raise parsed
            runnable = await store.ensure(parsed, notes.append)
        except (images.ImageNotFound, images.InstallFailed) as exc:
            self._event("Warning", "Failed", f'Failed to pull image "{reference}": {exc}', c)
            self.pull_backoff.next(reference, time.monotonic())
            self.pull_errors[reference] = f"ErrImagePull: {exc}"
            raise ImageError("ErrImagePull", str(exc)) from exc
        self.pull_backoff.gc(time.monotonic())
        took = images.go_duration(time.monotonic() - started)
        message = (
            f'Successfully pulled image "{reference}" in {took} ({took} including waiting) '
            f"({self._mapping(runnable, notes)})"
        )
        return self._pulled(c, parsed, runnable, message)

    @staticmethod
    def _mapping(runnable: images.Runnable, notes: list[str]) -> str:
        """What the image runs as, for the ``Pulled`` event: the venv, and what differs from the real image."""
        extra = [n for n in notes if "nearest" in n]
        if runnable.image.note:
            extra.append(runnable.image.note)
        suffix = f"; {'; '.join(extra)}" if extra else ""
        return f"{runnable.description}{suffix}"

    def _pulled(self, c: Container, image: images.Image, runnable: images.Runnable, message: str) -> images.Runnable:
        self.host.new_venv(runnable.venv)
        self._event("Normal", "Pulled", message, c)
        if runnable.version != image.version:
            self._warn_once(
                "ImageVersionMapped",
                f'"{image.reference}" runs Ray {runnable.version}, the nearest version installable for Python '
                f"{images.python_version()} (Ray {image.version} is not)",
                c,
            )
        c.image_id = f"raykube-venv://{runnable.venv}"
        return runnable

    async def _environment(self, c: Container) -> dict[str, str]:
        spec = self.pod["spec"]
        kubelet_env = await container_env(
            self.pod,
            c.spec,
            pod_ip=self.ip,
            host_ip=self.node.host_ip,
            configmap=self.host.configmap,
            secret=self.host.secret,
            services=self.host.service_env(self.namespace, spec.get("enableServiceLinks", True) is not False),
            node=self.node.capacity,
        )
        if c.runnable is None:
            raise RuntimeError(f"container {c.name}: no image prepared")
        return {**c.runnable.env, "HOSTNAME": self.hostname, **kubelet_env}

    async def _start(self, c: Container) -> int | None:
        """Start the process: None once it runs, else the exit code of a start that failed (``StartError``)."""
        runnable = c.runnable
        if runnable is None:
            raise RuntimeError(f"container {c.name}: no image prepared")
        try:
            mounts = volumes.container_mounts(c.spec, self.volumes, c.env)
        except ContainerConfigError as exc:
            c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(exc)}}
            self._mark()
            self._event("Warning", "Failed", f"Error: {exc}", c)
            await self._sleep_or_terminate(CONFIG_RETRY)
            return 1
        argv = command_line(c.spec, c.env, list(runnable.entrypoint), list(runnable.cmd))
        run = c.runs
        c.runs += 1
        run_dir = c.dir / f"run-{run}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (c.dir / "logs").mkdir(parents=True, exist_ok=True)
        spec = {
            "pausePid": self.pause_pid,
            "stateDir": str(run_dir),
            "logFile": str(c.log_file(run)),
            "layerDir": str(run_dir / "layer"),
            "rootDir": str(run_dir / "root"),
            "hostPaths": runnable.host_paths,
            "shm": str(self.dir / "shm"),
            "tmp": str(run_dir / "tmp"),
            "mounts": mounts,
            "etc": {name: str(self.dir / "etc" / name) for name in ("hosts", "resolv.conf", "hostname")},
            "mkdirs": [runnable.working_dir, "/tmp"],  # noqa: S108 - the container's own /tmp
            "hide": self.host.hide_paths,
            "workingDir": c.spec.get("workingDir") or runnable.working_dir,
            "argv": argv,
            "env": c.env,
        }
        (run_dir / "spec.json").write_text(json.dumps(spec))
        (c.dir / "env.json").write_text(json.dumps(c.env))
        c.container_id = f"raykube://{self.uid[:8]}-{c.name}-{run}"
        c.run_dir = run_dir
        c.monitor = await _spawn_helper(self.host.nstools_path, "run", run_dir / "spec.json", run_dir / "monitor.log")
        (run_dir / "monitor.json").write_text(
            json.dumps({"pid": c.monitor.pid, "startTime": nstools.start_time(c.monitor.pid)})
        )
        started_file, exit_file = run_dir / "started.json", run_dir / "exit.json"
        await _wait_any_file((started_file, exit_file), c.monitor, 60, f"container {c.name}")
        for link in ("started.json", "exit.json"):
            (c.dir / link).unlink(missing_ok=True)
        if not started_file.exists():  # the monitor could not even create the container
            await c.monitor.wait()
            return await self._exited(c, json.loads(exit_file.read_text()))
        started = json.loads(started_file.read_text())
        c.pid, c.start_time = int(started["pid"]), int(started.get("startTime") or 0)
        (c.dir / "started.json").symlink_to(started_file)
        c.started_monotonic = time.monotonic()
        c.state = {"running": {"startedAt": _api_time(started["startedAt"])}}
        c.started = "startupProbe" not in c.spec
        c.ready = c.started and "readinessProbe" not in c.spec
        self._mark()
        await self._kwok_logs()
        self._event("Normal", "Created", f"Created container: {c.name}", c)
        self._event("Normal", "Started", f"Started container {c.name}", c)
        await self._post_start(c)
        return None

    async def _post_start(self, c: Container) -> None:
        hook = ((c.spec.get("lifecycle") or {}).get("postStart") or {}).get("exec")
        if not hook:
            return
        code, output = await probes.run_in_container(self._target(c), hook.get("command") or [], 60)
        if code != 0:
            message = f"PostStartHook failed: {output.decode(errors='replace').strip()}"
            self._event("Warning", "FailedPostStartHook", message, c)
            asyncio.create_task(self._kill(c, self._grace_seconds()))  # noqa: RUF006 - ends with the container

    def _target(self, c: Container) -> probes.Target:
        return probes.Target(self.ip, c.pid, c.env, c.spec.get("ports") or [])

    async def _wait_exit(self, c: Container) -> int:
        if c.monitor is None:
            raise RuntimeError(f"container {c.name}: not started")
        await c.monitor.wait()
        try:
            result = json.loads((c.run_dir / "exit.json").read_text())
        except (OSError, ValueError):
            # The monitor died without a word (killed, or a bug): say what it left in its log.
            trace = _tail(c.run_dir / "monitor.log", 20)
            log.warning(
                "monitor of %s/%s %s exited %s without an exit status: %s",
                self.namespace,
                self.name,
                c.name,
                c.monitor.returncode,
                trace,
            )
            result = {"exitCode": 137, "monitorError": trace}  # finished now
        with contextlib.suppress(OSError):
            (c.dir / "exit.json").unlink(missing_ok=True)
            (c.dir / "exit.json").symlink_to(c.run_dir / "exit.json")
        return await self._exited(c, result)

    async def _exited(self, c: Container, result: Mapping[str, Any]) -> int:
        """Record how the run ended (``terminated`` state, and ``lastState`` once it is restarted)."""
        code, terminated = self._terminated(c, result)
        if not self.terminating.is_set() and self._will_restart(c, code):
            c.restart_count += 1
            c.last_state = {"terminated": terminated}
        self._mark()
        await self._kwok_logs()
        return code

    def _terminated(self, c: Container, result: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """Set ``c``'s ``terminated`` state from how its run ended (the monitor's ``exit.json``): exit code, reason,
        start and finish times, as a kubelet reports them (a death by signal is the exit code 128 + N; the API's
        ``signal`` field stays unset, as the kubelet leaves it)."""
        finished = _api_time(result.get("finishedAt"))
        terminated: dict[str, Any]
        if result.get("startError"):
            code = 128
            message = f"failed to start the container process: {result['startError']}"
            terminated = {"exitCode": code, "reason": "StartError", "message": message}
            self._event("Warning", "Failed", f"Error: {message}", c)
        else:
            code = int(result.get("exitCode", 137))
            terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}
            if code != 0 and c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
                terminated["message"] = _log_tail(c.log_file(c.runs - 1), 80)
        terminated.update(
            startedAt=_api_time(result.get("startedAt") or finished),
            finishedAt=finished,
            containerID=c.container_id,
        )
        c.state = {"terminated": terminated}
        c.pid = 0
        return code, terminated

    def _will_restart(self, c: Container, code: int) -> bool:
        if c.kind == "sidecar":
            return True
        policy = self.pod["spec"].get("restartPolicy", "Always")
        return policy == "Always" or (policy == "OnFailure" and code != 0)

    # ------------------------------------------------------------------------------------------------ probes
    def _start_probes(self, c: Container) -> None:
        if startup := c.spec.get("startupProbe"):
            c.probe_tasks.append(asyncio.create_task(self._probe_loop(c, "Startup", startup)))
        else:
            self._after_startup(c)

    def _after_startup(self, c: Container) -> None:
        for kind, key in (("Liveness", "livenessProbe"), ("Readiness", "readinessProbe")):
            if spec := c.spec.get(key):
                c.probe_tasks.append(asyncio.create_task(self._probe_loop(c, kind, spec)))

    async def _probe_loop(self, c: Container, kind: str, spec: Mapping[str, Any]) -> None:
        period = float(spec.get("periodSeconds") or 10)
        success_threshold = int(spec.get("successThreshold") or 1)
        failure_threshold = int(spec.get("failureThreshold") or 3)
        await asyncio.sleep(float(spec.get("initialDelaySeconds") or 0))
        successes = failures = 0
        run = c.runs
        while c.running and c.runs == run and not self.terminating.is_set():
            result = await probes.probe(spec, self._target(c))
            if not c.running or c.runs != run or self.terminating.is_set():
                return
            if result.ok:
                successes, failures = successes + 1, 0
                if successes >= success_threshold:
                    if kind == "Readiness" and not c.ready:
                        c.ready = True
                        self._mark()
                    elif kind == "Startup":
                        c.started = True
                        c.ready = "readinessProbe" not in c.spec
                        self._mark()
                        self._after_startup(c)
                        return
            else:
                successes, failures = 0, failures + 1
                self._event("Warning", "Unhealthy", f"{kind} probe failed: {result.message.strip()}", c)
                if failures >= failure_threshold:
                    if kind == "Readiness":
                        if c.ready:
                            c.ready = False
                            self._mark()
                    else:
                        reason = "liveness" if kind == "Liveness" else "startup"
                        self._event(
                            "Normal", "Killing", f"Container {c.name} failed {reason} probe, will be restarted", c
                        )
                        grace = spec.get("terminationGracePeriodSeconds")
                        await self._kill(c, float(grace) if grace is not None else self._grace_seconds())
                        return
            await asyncio.sleep(period)

    # ------------------------------------------------------------------------------------------------ stopping
    async def _kill(self, c: Container, grace: float) -> None:
        """preStop, SIGTERM, ``grace`` seconds, SIGKILL (the kubelet's killContainer)."""
        monitor = c.monitor
        if monitor is None or monitor.returncode is not None or not c.pid:
            return
        deadline = time.monotonic() + grace
        hook = ((c.spec.get("lifecycle") or {}).get("preStop") or {}).get("exec")
        if hook and grace > 0 and nstools.alive(c.pid, c.start_time):
            await probes.run_in_container(self._target(c), hook.get("command") or [], grace)
        if nstools.alive(c.pid, c.start_time):
            with contextlib.suppress(ProcessLookupError):
                os.kill(c.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(monitor.wait()), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            if nstools.alive(c.pid, c.start_time):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(c.pid, signal.SIGKILL)
            await monitor.wait()

    async def _shutdown(self) -> None:
        grace = self._grace_seconds()
        running = [c for c in self.containers.values() if c.monitor is not None and c.monitor.returncode is None]
        if running and not self.gone and not self.host.shutting_down:
            for c in running:
                self._event("Normal", "Killing", f"Stopping container {c.name}", c)
        # Main containers first, then sidecars, as the kubelet orders termination.
        mains = [c for c in running if c.kind != "sidecar"]
        await asyncio.gather(*(self._kill(c, grace) for c in mains))
        await asyncio.gather(*(self._kill(c, min(grace, SHUTDOWN_GRACE)) for c in running if c.kind == "sidecar"))
        for c in self.containers.values():
            if c.running:  # killed: its runner may not have seen the exit yet; how it ended is in its exit.json
                self._terminated(c, _exit_result(c))
            c.ready = False
        if self.pause is not None and self.pause.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.pause.kill()
            await self.pause.wait()
        self.sandbox_ready = False
        self.stopped = self.terminating.is_set()

    # ------------------------------------------------------------------------------------------------ status
    def _statuses(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The init containers' (sidecars among them) and the regular containers' statuses, in spec order."""
        inits = [c.status() for c in self.containers.values() if c.kind != "main"]
        mains = [c.status() for c in self.containers.values() if c.kind == "main"]
        return inits, mains

    def _phase(self) -> str:
        if self.terminal_phase:
            return self.terminal_phase
        inits, mains = self._statuses()
        terminal = self.deleting and self.stopped  # stopped for good: the status manager's TerminatePod
        return podstatus.phase(self.pod["spec"], inits, mains, initialized=self.initialized, terminal=terminal)

    def status(self) -> dict[str, Any]:
        """The status to publish, by the kubelet's rules (:mod:`~raykube.sandbox.kubelet.podstatus`)."""
        phase = self._phase()
        inits, mains = self._statuses()
        current = self.pod.get("status") or {}
        current_conditions = current.get("conditions") or []
        generated = podstatus.conditions(
            self.pod["spec"],
            phase,
            inits,
            mains,
            sandbox_ready=self.sandbox_ready,
            initialized=self.initialized,
            current=current_conditions,
        )
        # A condition keeps its transition time while its status stays: from what was generated last, else from the
        # Pod as it is (the scheduler's PodScheduled; a previous runtime's conditions).
        self._conditions = podstatus.with_transition_times(
            generated, [*self._conditions, *current_conditions], times.format_time()
        )
        return podstatus.pod_status(
            pod_phase=phase,
            conditions=self._conditions,
            init_statuses=inits,
            statuses=mains,
            host_ip=self.node.host_ip,
            pod_ip=self.ip,
            start_time=self.start_time,
            qos_class=str(current.get("qosClass") or ""),
        )

    async def _publish(self) -> None:
        status = self.status()
        comparable = json.dumps(status, sort_keys=True)
        if self._published is not None and json.dumps(self._published, sort_keys=True) == comparable:
            return
        try:
            updated = await self.host.kube.patch(
                PODS, self.name, {"status": status}, self.namespace, subresource="status"
            )
            self._published = status
            if updated.get("metadata", {}).get("uid") == self.uid:
                self.pod = {**self.pod, "status": updated.get("status", {})}
        except ApiError as exc:
            if exc.not_found:
                self.deleted()
            else:
                log.warning("status of %s/%s: %s", self.namespace, self.name, exc)
                self.dirty.set()
                await asyncio.sleep(1)

    async def _publisher(self) -> None:
        while True:
            await self.dirty.wait()
            self.dirty.clear()
            await self._publish()


def listening_ports(pid: int) -> frozenset[int]:
    """The TCP ports listened on in the network namespace of ``pid`` (``/proc/<pid>/net/tcp`` and ``tcp6``)."""
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == _TCP_LISTEN:
                ports.add(int(fields[1].rpartition(":")[2], 16))
    return frozenset(ports)


async def _spawn_helper(nstools_path: Path, command: str, spec: Path, log_file: Path) -> asyncio.subprocess.Process:
    """``python -S nstools.py COMMAND SPEC`` in a session of its own, its stderr to ``log_file``."""
    with log_file.open("wb") as err:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-S",
            str(nstools_path),
            command,
            str(spec),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
        )


def _exit_result(c: Container) -> dict[str, Any]:
    """What the monitor of ``c``'s last run wrote in its ``exit.json``; if nothing, a kill now (137)."""
    try:
        return dict(json.loads((c.run_dir / "exit.json").read_text()))
    except (OSError, ValueError):
        return {"exitCode": 137, "startedAt": (c.state.get("running") or {}).get("startedAt")}


def _api_time(stamp: object) -> str:
    """A time the container helper wrote (RFC 3339 with nanoseconds) as the API's ``metav1.Time``; now if none."""
    return times.format_time(times.parse_time(stamp))


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _log_tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a CRI log, without their timestamp, stream and tag."""
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return "\n".join(line.split(" ", 3)[-1] for line in text)


async def _wait_file(path: Path, proc: asyncio.subprocess.Process, timeout: float, what: str) -> None:
    await _wait_any_file((path,), proc, timeout, what)


async def _wait_any_file(paths: tuple[Path, ...], proc: asyncio.subprocess.Process, timeout: float, what: str) -> None:
    """Until one of ``paths`` exists (the helper process writes it), or fail if the helper dies first."""
    from raykube.waiting import wait_for  # noqa: PLC0415 - keep the import graph of this module small

    def written() -> bool:
        if any(p.exists() for p in paths):
            return True
        if proc.returncode is not None:
            raise RuntimeError(f"{what}: the helper exited with {proc.returncode} before it was ready")
        return False

    await wait_for(written, timeout, what=what, interval=0.005, max_interval=0.05)

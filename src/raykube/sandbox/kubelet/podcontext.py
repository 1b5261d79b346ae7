"""What the parts of one Pod's worker share (:mod:`~raykube.sandbox.kubelet.pod`): the runtime and node it runs on,
the Pod object as last seen, the signal that it terminates, the signal that its status changed, its Events, and the
state of each of its containers.

The parts are the Pod sandbox (:mod:`~raykube.sandbox.kubelet.podsandbox`), one runner per container
(:mod:`~raykube.sandbox.kubelet.containers`, with image pulls in :mod:`~raykube.sandbox.kubelet.imagepull`) and the
worker itself, which orders them, terminates the Pod and publishes its status.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.events import EventRecorder
from raykube.sandbox.kubelet import images, network
from raykube.sandbox.kubelet.env import NodeCapacity

FIELD_MANAGER = "raykube-process-runtime"
DEFAULT_GRACE = 30


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


class Terminating(Exception):
    """The Pod is being deleted (or the runtime stops): stop what you are doing."""


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

    # What kwok's Logs names for ``kubectl logs`` and ``kubectl logs --previous``: links that never move, pointed at
    # run N's and run N-1's files as run N starts. kwok opens the path on each request, so the logs a user reads agree
    # with the restartCount the status shows at once; naming the run files in kwok's Logs instead needed an apply per
    # restart, which kwok saw later than the Pod's status (a loaded run read the run before as ``--previous``).
    @property
    def current_log(self) -> Path:
        return self.dir / "logs" / "current.log"

    @property
    def previous_log(self) -> Path:
        return self.dir / "logs" / "previous.log"

    def point_logs(self, run: int) -> None:
        """Point ``current.log`` at run ``run``'s file and ``previous.log`` at the run before it, each in one rename."""
        for link, target in ((self.current_log, run), (self.previous_log, run - 1)):
            if target < 0:
                continue
            staged = link.with_name(f".{link.name}.new")
            staged.unlink(missing_ok=True)
            staged.symlink_to(f"{target}.log")
            staged.replace(link)

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


class PodContext:
    """One Pod as its worker's parts see it: identity, the Pod object as last seen (``pod``, replaced on updates),
    ``terminating`` (set once it is deleted or the runtime stops, with the ``grace`` to give it), ``mark`` (its status
    changed: publish it) and its Events."""

    def __init__(self, host: Host, node: Node, pod: Mapping[str, Any], pods_root: Path) -> None:
        self.host = host
        self.node = node
        self.pod = pod
        meta = pod["metadata"]
        self.uid = str(meta["uid"])
        self.namespace = str(meta["namespace"])
        self.name = str(meta["name"])
        self.dir = pods_root / self.uid
        self.terminating = asyncio.Event()
        self.grace: float | None = None
        self.dirty = asyncio.Event()  # for the status publisher
        self.changed = asyncio.Event()  # for whoever waits for a container to change
        self._warned: set[tuple[str, str]] = set()

    def mark(self) -> None:
        self.dirty.set()
        self.changed.set()

    def event(self, kind: str, reason: str, message: str, container: Container | None = None) -> None:
        """Queue an Event about the Pod (or one of its containers: ``involvedObject.fieldPath``) as its node's kubelet.

        A kubelet's core/v1 Events have no ``action``, so none is given. The Pod from a list has no kind or apiVersion
        (the API server leaves them out of list items): the reference gets them here.
        """
        regarding = {"apiVersion": "v1", "kind": "Pod", "metadata": objects.meta(self.pod)}
        field_path = container.field_path if container else ""
        self.node.recorder.event(regarding, kind, reason, "", message, field_path=field_path)

    def warn_once(self, reason: str, message: str, container: Container | None = None) -> None:
        key = (reason, message)
        if key not in self._warned:
            self._warned.add(key)
            self.event("Warning", reason, message, container)

    async def sleep_or_terminate(self, seconds: float) -> None:
        """Sleep ``seconds`` unless the Pod starts terminating first (then raise Terminating)."""
        if self.terminating.is_set():
            raise Terminating
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.terminating.wait(), seconds)
        if self.terminating.is_set():
            raise Terminating

    def grace_seconds(self) -> float:
        if self.grace is not None:
            return self.grace
        return float(self.pod["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE))

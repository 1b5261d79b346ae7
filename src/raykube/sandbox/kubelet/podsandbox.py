"""A Pod's sandbox on a process node: step 1 of :class:`~raykube.sandbox.kubelet.pod.PodWorker`.

The Pod's directory, the pause process (network/UTS/IPC/mount namespaces, tmpfs volumes), ``eth0`` on the bridge with
an IP from the node's range, ``/etc/hosts``, ``/etc/resolv.conf`` and ``/etc/hostname``, then the volumes (a
``FailedMount`` is retried until it resolves or the Pod goes), and kwok's ``Logs``, ``Exec`` and ``PortForward``
objects for the Pod (``kubectl logs|exec|port-forward``; as a kubelet does, any port something listens on in the Pod
can be forwarded, declared or not: it is added to the PortForward when seen listening).

Also the helpers that start ``nstools.py`` (the pause process here, a container's monitor in
:mod:`~raykube.sandbox.kubelet.containers`) and wait for the file that says it is ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from raykube.kube.errors import ApiError
from raykube.kube.resources import Resource
from raykube.sandbox.kubelet import network, nstools, volumes
from raykube.sandbox.kubelet.podcontext import FIELD_MANAGER, Container, PodContext, Terminating
from raykube.sandbox.kwok import EXECS, LOGS, PORT_FORWARDS

log = logging.getLogger("raykube.sandbox.kubelet.podsandbox")

MOUNT_RETRY = 3.0
# The kubelet's sync period (--sync-frequency, 1 minute): projected volumes are brought up to date at least this
# often; a change of a ConfigMap or Secret they project does it at once (the runtime's watch sets sources_changed).
VOLUME_RESYNC = 60.0
PORT_SCAN_INTERVAL = 2.0  # how often the TCP ports listened on in a Pod are looked for, for kubectl port-forward
_TCP_LISTEN = "0A"  # the state column of /proc/net/tcp for LISTEN


class PodSandbox:
    """The sandbox of one Pod, whose containers' state is ``containers`` (for kwok's Exec, Logs and PortForward)."""

    def __init__(self, ctx: PodContext, containers: Mapping[str, Container]) -> None:
        self.ctx = ctx
        self.containers = containers
        self.dir = ctx.dir
        self.ip = ""
        self.pause: asyncio.subprocess.Process | None = None
        self.pause_pid = 0
        self.veth = network.veth_name(ctx.uid)
        self.ready = False
        self.forwarded: frozenset[int] = frozenset()  # the ports kwok's PortForward for the Pod lists
        self.volumes: dict[str, Path] = {}
        # Set by the runtime when a ConfigMap or Secret this Pod's volumes project changes (refresh_volumes waits).
        self.sources_changed = asyncio.Event()

    async def create(self) -> None:
        ctx = self.ctx
        self.dir.mkdir(parents=True, exist_ok=True)
        spec_file = self.dir / "pause-spec.json"
        ready = self.dir / "pause.json"
        shm = self.dir / "shm"
        memory = [{"path": str(shm), "sizeBytes": 64 * 1024 * 1024}]
        memory += [m.to_json() for m in volumes.memory_volumes(ctx.pod, self.dir)]
        spec_file.write_text(json.dumps({"hostname": self.hostname, "tmpfs": memory, "readyFile": str(ready)}))
        self.pause = await spawn_helper(ctx.host.nstools_path, "pause", spec_file, self.dir / "pause.log")
        await wait_file(ready, self.pause, 30, "the Pod sandbox")
        self.pause_pid = int(json.loads(ready.read_text())["pid"])
        self.ip = ctx.node.pool.take()
        await network.attach(ctx.host.net, self.pause_pid, self.veth, self.ip)
        self._write_etc_files()
        self.ready = True
        ctx.mark()
        await self._mount_volumes()
        await self._kwok_objects()

    async def stop(self) -> None:
        """Kill the pause process (the containers are stopped already)."""
        if self.pause is not None and self.pause.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.pause.kill()
            await self.pause.wait()
        self.ready = False

    def release(self, *, remove_dir: bool) -> None:
        """The Pod is gone: give its IP back to the node's range and (unless the runtime stops) remove its directory."""
        if self.ip:
            self.ctx.node.pool.release(self.ip)
        if remove_dir:
            volumes.remove_pod_dir(self.dir)

    @property
    def hostname(self) -> str:
        return str(self.ctx.pod["spec"].get("hostname") or self.ctx.name)[:63]

    def _write_etc_files(self) -> None:
        spec = self.ctx.pod["spec"]
        namespace = self.ctx.namespace
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
            fqdn = f"{self.hostname}.{subdomain}.{namespace}.svc.cluster.local"
            lines.append(f"{self.ip}\t{fqdn}\t{self.hostname}")
        else:
            lines.append(f"{self.ip}\t{self.hostname}")
        for alias in spec.get("hostAliases") or []:
            lines.append(f"{alias.get('ip')}\t{' '.join(alias.get('hostnames') or [])}")
        (etc / "hosts").write_text("\n".join(lines) + "\n")
        search = [f"{namespace}.svc.cluster.local", "svc.cluster.local", "cluster.local"]
        nameservers = [self.ctx.host.dns_ip]
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

    def _volume_context(self) -> volumes.VolumeContext:
        ctx = self.ctx
        return volumes.VolumeContext(
            ctx.pod,
            self.dir,
            ctx.host.kube,
            self.ip,
            ctx.node.host_ip,
            ctx.node.capacity,
            ctx.host.configmap,
            ctx.host.secret,
            ctx.node.name,
        )

    async def refresh_volumes(self) -> None:
        """While the Pod runs (the worker cancels this task when it ends): rewrite its configMap, secret, downwardAPI
        and projected volumes when a source changes, and at least every ``VOLUME_RESYNC`` seconds, as the kubelet's
        sync does. Each rewrite is an atomic ``..data`` swap (:func:`~raykube.sandbox.kubelet.volumes.write_atomic`);
        an unchanged payload is left alone."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.sources_changed.wait(), VOLUME_RESYNC)
            self.sources_changed.clear()
            try:
                changed = await volumes.refresh(self._volume_context())
            except Exception as exc:  # the next change or resync retries
                log.warning("refreshing the volumes of %s/%s failed: %s", self.ctx.namespace, self.ctx.name, exc)
                continue
            if changed:
                log.info("updated volumes %s of %s/%s", ", ".join(changed), self.ctx.namespace, self.ctx.name)

    async def _mount_volumes(self) -> None:
        ctx = self.ctx
        context = self._volume_context()
        last = ""
        reported = 0.0
        while True:
            try:
                self.volumes = await volumes.prepare(context)
            except volumes.VolumeError as exc:
                message = str(exc)
                if message != last or time.monotonic() - reported > 60:
                    ctx.event("Warning", "FailedMount", message)
                    last, reported = message, time.monotonic()
            else:
                return
            await ctx.sleep_or_terminate(MOUNT_RETRY)

    # ------------------------------------------------------------------------------------------------ kwok
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
        await self.kwok_logs()

    def _owner(self) -> list[dict[str, str]]:
        return [{"apiVersion": "v1", "kind": "Pod", "name": self.ctx.name, "uid": self.ctx.uid}]

    async def _apply_kwok(self, res: Resource, spec: Mapping[str, Any]) -> None:
        meta = {"name": self.ctx.name, "namespace": self.ctx.namespace, "ownerReferences": self._owner()}
        body = {"apiVersion": res.api_version, "kind": res.kind, "metadata": meta, "spec": spec}
        await self.ctx.host.kube.apply(res, body, self.ctx.namespace, field_manager=FIELD_MANAGER)

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
        command = [sys.executable, "-S", str(self.ctx.host.nstools_path), "port-forward", str(self.pause_pid)]
        forwards = [{"ports": [port], "command": [*command, str(port)]} for port in sorted(ports)]
        await self._apply_kwok(PORT_FORWARDS, {"forwards": forwards})

    async def forward_listening_ports(self) -> None:
        """A kubelet forwards any port of the Pod's network namespace, declared in ``ports`` or not (KubeRay's
        quickstart forwards the serve port 8000 no container declares). kwok forwards only listed ports, so the
        TCP ports something listens on are added to the Pod's PortForward as they appear."""
        while not self.ctx.terminating.is_set():
            listening = await asyncio.to_thread(listening_ports, self.pause_pid)
            if listening - self.forwarded:
                wanted = self.forwarded | listening
                with contextlib.suppress(ApiError):
                    await self._apply_forwards(wanted)
                    self.forwarded = wanted
            with contextlib.suppress(Terminating):
                await self.ctx.sleep_or_terminate(PORT_SCAN_INTERVAL)

    async def kwok_logs(self) -> None:
        """kwok's Logs for the Pod: each container's current log and its previous run's, as links that never move
        (``Container.point_logs``). ``--previous`` before a restart reads a link not made yet: an error, as on a
        kubelet."""
        entries = [
            {
                "containers": [c.name],
                "logsFile": str(c.current_log),
                "previousLogsFile": str(c.previous_log),
                "follow": True,
            }
            for c in self.containers.values()
        ]
        body = {
            "apiVersion": LOGS.api_version,
            "kind": LOGS.kind,
            "metadata": {"name": self.ctx.name, "namespace": self.ctx.namespace, "ownerReferences": self._owner()},
            "spec": {"logs": entries},
        }
        with contextlib.suppress(ApiError):
            await self.ctx.host.kube.apply(LOGS, body, self.ctx.namespace, field_manager=FIELD_MANAGER)


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


async def spawn_helper(nstools_path: Path, command: str, spec: Path, log_file: Path) -> asyncio.subprocess.Process:
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


async def wait_file(path: Path, proc: asyncio.subprocess.Process, timeout: float, what: str) -> None:
    await wait_any_file((path,), proc, timeout, what)


async def wait_any_file(paths: tuple[Path, ...], proc: asyncio.subprocess.Process, timeout: float, what: str) -> None:
    """Until one of ``paths`` exists (the helper process writes it), or fail if the helper dies first."""
    from raykube.waiting import wait_for  # noqa: PLC0415 - keep the import graph of this module small

    def written() -> bool:
        if any(p.exists() for p in paths):
            return True
        if proc.returncode is not None:
            raise RuntimeError(f"{what}: the helper exited with {proc.returncode} before it was ready")
        return False

    await wait_for(written, timeout, what=what, interval=0.005, max_interval=0.05)

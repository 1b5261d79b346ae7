"""One sandbox instance: bring the control plane up, report its status, and take it down again.

An instance lives in one directory (``<state root>/sandboxes/<name>``, see :func:`state_root`): its PKI, kubeconfigs,
etcd data, volumes, per-component logs, and ``sandbox.json`` recording its configuration and the processes it
started. ``up`` starts etcd, then kube-apiserver, then the controller manager, scheduler, kwok and the volume
provisioner together, creates the fake Nodes and the default StorageClass, and returns once Nodes are Ready and
untainted, the ``default`` ServiceAccount exists and the provisioner holds its Lease: the point at which a
Deployment's Pods schedule and a PVC binds. With ``cert_manager`` it then installs cert-manager's CRDs (its module's
``deploy/crds``, from the build cache) and starts cert-manager's controller, returning once its informers synced. With
``gateway`` it installs the Gateway API CRDs (from the Traefik build in the cache) and runs Traefik as a Deployment on
the process nodes (``sandbox/gateway.py``), returning once Traefik has accepted the GatewayClass ``traefik``.
``down`` stops exactly the processes in ``sandbox.json`` that still run the command line recorded there, and removes
the directory.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx2
import yaml

from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import CRDS, LEASES, NODES, PODS, SERVICE_ACCOUNTS, SERVICES, STORAGE_CLASSES
from raykube.sandbox import gateway as sandbox_gateway
from raykube.sandbox import kwok, pki, ports, process, versions
from raykube.sandbox.build import require_built, tail
from raykube.sandbox.components import (
    CERT_MANAGER,
    COMPONENTS,
    KWOK_TAINT,
    PROCESS_RUNTIME,
    Binaries,
    Layout,
    SandboxConfig,
    argv,
    scheduler_config,
)
from raykube.sandbox.errors import ComponentFailed, SandboxError
from raykube.sandbox.process import ProcessRecord
from raykube.sandbox.provisioner import LEASE_NAME, LEASE_NAMESPACE, holder_identity
from raykube.waiting import NotYet, WaitTimeout, wait_for

Report = Callable[[str], None]
RUNTIME_LEASE = "raykube-process-runtime"  # held by the process runtime in kube-system while it works

STARTUP_TIMEOUT = {  # generous: these bound a failure, they are not speed targets (see `make bench`)
    "etcd": 30.0,
    "kube-apiserver": 120.0,
    "kube-controller-manager": 60.0,
    "kube-scheduler": 60.0,
    "kwok": 60.0,
    "provisioner": 60.0,
    PROCESS_RUNTIME: 60.0,
    CERT_MANAGER: 60.0,
}
CLUSTER_READY_TIMEOUT = 90.0
GATEWAY_READY_TIMEOUT = 180.0  # Traefik's Pod started (its image is built: `up` checked) and its provider synced
# cert-manager first (nothing depends on it), then the process runtime: it stops the Pods' processes.
STOP_ORDER = (CERT_MANAGER, PROCESS_RUNTIME, *reversed(COMPONENTS))


def check_process_runtime() -> None:
    """Raise SandboxError saying why this machine cannot run process nodes (root, namespaces, tools)."""
    from raykube.sandbox.kubelet.network import preflight  # noqa: PLC0415 - only process sandboxes need it

    problems = preflight()
    if problems:
        raise SandboxError(
            "this machine cannot run process nodes:\n  - " + "\n  - ".join(problems),
            hint="run `raykube sandbox up` without --runtime process for kwok nodes (Pods are simulated)",
        )


def state_root() -> Path:
    """``$RAYKUBE_STATE_DIR``, else ``$XDG_STATE_HOME/raykube``, else ``~/.local/state/raykube``."""
    if explicit := os.environ.get("RAYKUBE_STATE_DIR"):
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "raykube"


@dataclass(frozen=True)
class State:
    """What ``sandbox.json`` records."""

    config: SandboxConfig
    processes: tuple[ProcessRecord, ...]
    started_at: float
    # Processes started for the sandbox's users (the demo's operator, say): stopped by ``down`` like the rest.
    extras: tuple[ProcessRecord, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "config": self.config.to_json(),
            "processes": [p.to_json() for p in self.processes],
            "extras": [p.to_json() for p in self.extras],
            "startedAt": self.started_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> State:
        return cls(
            SandboxConfig.from_json(data["config"]),
            tuple(ProcessRecord.from_json(p) for p in data["processes"]),
            float(data["startedAt"]),
            tuple(ProcessRecord.from_json(p) for p in data.get("extras", [])),
        )


@dataclass(frozen=True)
class ComponentStatus:
    component: str
    pid: int
    running: bool
    listeners: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Status:
    name: str
    directory: Path
    kubeconfig: Path
    state: State | None
    components: tuple[ComponentStatus, ...]
    extras: tuple[ComponentStatus, ...] = ()

    @property
    def running(self) -> tuple[str, ...]:
        return tuple(c.component for c in self.components if c.running)

    @property
    def stopped(self) -> tuple[str, ...]:
        return tuple(c.component for c in self.components if not c.running)

    @property
    def up(self) -> bool:
        return self.state is not None and set(self.running) == set(self.state.config.components)


@dataclass(frozen=True)
class UpResult:
    kubeconfig: Path
    already_running: bool
    seconds: float
    config: SandboxConfig


def _conditions(obj: Mapping[str, Any]) -> dict[str, str]:
    return {str(c.get("type")): str(c.get("status")) for c in (obj.get("status") or {}).get("conditions") or []}


def _ssl_context(layout: Layout, client: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(layout.pki / "ca.crt"))
    if client:
        context.load_cert_chain(layout.pki / f"{client}.crt", layout.pki / f"{client}.key")
    return context


class Sandbox:
    """A named local control plane. Construct with :meth:`named` or :meth:`at`; nothing starts until :meth:`up`."""

    def __init__(self, layout: Layout, name: str) -> None:
        self.layout = layout
        self.name = name

    @classmethod
    def named(cls, name: str = "default", root: Path | None = None) -> Sandbox:
        SandboxConfig(name=name)  # validates the name before it becomes a path
        return cls(Layout((root or state_root()) / "sandboxes" / name), name)

    @classmethod
    def at(cls, directory: Path) -> Sandbox:
        """The sandbox whose files are in ``directory`` (for tests that reuse a running one)."""
        state = Sandbox(Layout(directory), directory.name).load_state()
        return cls(Layout(directory), state.config.name if state else directory.name)

    # ----------------------------------------------------------------------------------------------- state
    def load_state(self) -> State | None:
        try:
            return State.from_json(json.loads(self.layout.state_file.read_text()))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise SandboxError(
                f"{self.layout.state_file} is not a sandbox state file ({exc})",
                hint=f"stop any processes it started by hand, then remove {self.layout.root}",
            ) from exc

    def _save_state(self, state: State) -> None:
        self.layout.root.mkdir(parents=True, exist_ok=True)
        tmp = self.layout.state_file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(state.to_json(), indent=2) + "\n")
        tmp.replace(self.layout.state_file)

    def status(self) -> Status:
        state = self.load_state()

        def describe(records: tuple[ProcessRecord, ...]) -> tuple[ComponentStatus, ...]:
            return tuple(
                ComponentStatus(
                    p.component,
                    p.pid,
                    running := process.is_running(p),
                    tuple(ports.listeners(p.pid)) if running else (),
                )
                for p in records
            )

        if state is None:
            return Status(self.name, self.layout.root, self.layout.kubeconfig, None, ())
        return Status(
            self.name,
            self.layout.root,
            self.layout.kubeconfig,
            state,
            describe(state.processes),
            describe(state.extras),
        )

    # ----------------------------------------------------------------------------------------------- extras
    def running_extra(self, name: str) -> ProcessRecord | None:
        """The running extra process ``name``, if any."""
        state = self.load_state()
        for record in state.extras if state else ():
            if record.component == name and process.is_running(record):
                return record
        return None

    async def start_extra(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> ProcessRecord:
        """Start a process that belongs with this sandbox (logs in ``logs/<name>.log``, stopped by ``down``);
        if one named ``name`` already runs, return it instead."""
        state = self.load_state()
        if state is None:
            raise SandboxError(f"sandbox {self.name!r} is not running")
        running = self.running_extra(name)
        if running is not None:
            return running
        record = await process.spawn(name, argv, self.layout.log(name), self.layout.root, env=env)
        others = tuple(p for p in state.extras if p.component != name)
        self._save_state(replace(state, extras=(*others, record)))
        return record

    async def stop_extra(self, name: str) -> bool:
        """Stop the extra process ``name``; False if it was not running."""
        state = self.load_state()
        if state is None:
            return False
        stopped = False
        for record in state.extras:
            if record.component == name:
                stopped = await process.terminate(record) or stopped
        self._save_state(replace(state, extras=tuple(p for p in state.extras if p.component != name)))
        return stopped

    # ----------------------------------------------------------------------------------------------- faults
    async def restart(
        self, component: str, *, crash: bool = False, while_down: Callable[[], Awaitable[object]] | None = None
    ) -> ProcessRecord:
        """Stop one control-plane component (SIGTERM to the PID this sandbox recorded, as a restart by its
        supervisor would; SIGKILL with ``crash``), run ``while_down`` if given, start it again with the same
        arguments and wait until it is healthy. Data survives (etcd keeps its directory). For fault tests: the
        kube-apiserver restart that drops every watch."""
        state = self.load_state()
        if state is None:
            raise SandboxError(f"sandbox {self.name!r} is not running")
        old = next((r for r in state.processes if r.component == component), None)
        if old is None or component == PROCESS_RUNTIME:
            raise SandboxError(f"sandbox {self.name!r} has no restartable component {component!r}")
        config = state.config
        await process.terminate(old, crash=crash)
        if while_down is not None:
            await while_down()
        env = None
        if component == "kwok" and config.runtime == "process":
            env = {**os.environ, "PATH": str(self.layout.exec_bin)}  # as `up` starts it
        record = await process.spawn(
            component, argv(component, config, self.layout, Binaries.from_cache()), self.layout.log(component),
            self.layout.root, env=env,
        )  # fmt: skip
        self._save_state(replace(state, processes=tuple(record if r is old else r for r in state.processes)))
        checks = {
            "etcd": self._etcd_ready(config),
            "kube-apiserver": self._apiserver_ready(config),
            "kube-controller-manager": self._https_healthy(config.ports.kube_controller_manager),
            "kube-scheduler": self._https_healthy(config.ports.kube_scheduler),
            "kwok": self._http_healthy(config.ports.kwok),
        }
        if component in checks:
            await self._wait_healthy(record, checks[component])
        return record

    async def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (as the API server's periodic compaction does, but
        now): every watch from an older resourceVersion that reaches etcd then ends with 410 Gone. Returns the
        revision. etcd's JSON gateway on its loopback client port; no etcdctl needed."""
        state = self.load_state()
        if state is None:
            raise SandboxError(f"sandbox {self.name!r} is not running")
        base = f"http://{ports.HOST}:{state.config.ports.etcd}/v3/kv"
        async with httpx2.AsyncClient(trust_env=False, timeout=30) as http:
            answer = await http.post(f"{base}/range", json={"key": base64.b64encode(b"/").decode(), "limit": 1})
            answer.raise_for_status()
            revision = int(answer.json()["header"]["revision"])
            compacted = await http.post(f"{base}/compaction", json={"revision": str(revision), "physical": True})
            compacted.raise_for_status()
        return revision

    # ----------------------------------------------------------------------------------------------- up
    async def up(self, config: SandboxConfig, report: Report = lambda _: None, cache: Path | None = None) -> UpResult:
        """Start the control plane, or report that it already runs (and change nothing)."""
        started = time.monotonic()
        current = self.status()
        if current.state is not None and current.running:
            if current.up:
                return UpResult(self.layout.kubeconfig, True, 0.0, current.state.config)
            raise SandboxError(
                f"sandbox {self.name!r} is only partly running: {', '.join(current.running)} up, "
                f"{', '.join(current.stopped) or 'nothing'} down",
                hint=f"run `raykube sandbox down --name {self.name}` first, then `up` again (logs: {self.layout.logs})",
            )
        if config.name != self.name:
            raise ValueError(f"config is for sandbox {config.name!r}, not {self.name!r}")
        require_built((versions.KUBERNETES, versions.ETCD, versions.KWOK), cache)
        if config.cert_manager:
            require_built((versions.CERT_MANAGER,), cache, hint="run `raykube sandbox build --cert-manager`")
        if config.gateway:
            require_built((versions.TRAEFIK,), cache, hint="run `raykube sandbox build --gateway`")
        ports.check_free(config.ports)
        if config.runtime == "process":
            check_process_runtime()
        bins = Binaries.from_cache(cache)
        self._prepare_files(config, bins)
        if config.runtime == "process":
            self._prepare_process_runtime(config, cache)
        records: list[ProcessRecord] = []
        state_started = time.time()

        async def start(component: str) -> ProcessRecord:
            env = None
            if component == "kwok" and config.runtime == "process":
                # kwok runs `kubectl exec` commands by name from PATH: only the runtime's exec-bin (see kubelet).
                env = {**os.environ, "PATH": str(self.layout.exec_bin)}
            record = await process.spawn(
                component,
                argv(component, config, self.layout, bins),
                self.layout.log(component),
                self.layout.root,
                env=env,
            )
            records.append(record)
            self._save_state(State(config, tuple(records), state_started))
            return record

        try:
            report("starting etcd")
            await self._wait_healthy(await start("etcd"), self._etcd_ready(config))
            report("starting kube-apiserver")
            await self._wait_healthy(await start("kube-apiserver"), self._apiserver_ready(config))
            async with self._client() as client:
                await self._start_the_rest(client, config, start, report)
                await self._create_cluster_objects(client, config)
                await self._wait_cluster_ready(client, config, records)
                if config.cert_manager:
                    await self._start_cert_manager(client, bins, start, report)
                if config.gateway:
                    await self._install_gateway(client, cache, report)
            self._check_loopback_only(records)
        except BaseException:
            for record in reversed(records):
                await process.terminate(record, grace=5)
            raise
        return UpResult(self.layout.kubeconfig, False, time.monotonic() - started, config)

    async def _start_the_rest(
        self,
        client: Kube,
        config: SandboxConfig,
        start: Callable[[str], Awaitable[ProcessRecord]],
        report: Report,
    ) -> None:
        """Everything after the API server, started together; returns once each is healthy."""
        group = ["kube-controller-manager", "kube-scheduler", "kwok", "provisioner"]
        if config.runtime == "process":
            report("installing kwok's Exec, Logs and PortForward CRDs and the kube-dns Service")
            await self._create_process_objects(client, config)
            group.append(PROCESS_RUNTIME)
            report(
                "starting kube-controller-manager, kube-scheduler, kwok, the volume provisioner and the "
                f"process runtime ({config.nodes.count} process node(s))"
            )
        else:
            report("starting kube-controller-manager, kube-scheduler, kwok and the volume provisioner")
        rest = [await start(c) for c in group]
        checks = {
            "kube-controller-manager": self._https_healthy(config.ports.kube_controller_manager),
            "kube-scheduler": self._https_healthy(config.ports.kube_scheduler),
            "kwok": self._http_healthy(config.ports.kwok),
        }
        for record in rest:
            if record.component == "provisioner":
                checks["provisioner"] = self._provisioner_ready(client, record)
            elif record.component == PROCESS_RUNTIME:
                checks[PROCESS_RUNTIME] = self._lease_held(client, RUNTIME_LEASE, f"{RUNTIME_LEASE}/pid-{record.pid}")
        await asyncio.gather(*(self._wait_healthy(r, checks[r.component]) for r in rest))
        if config.runtime == "process":
            kwok_nodes = f"{config.kwok_nodes} tainted kwok node(s) and " if config.kwok_nodes else ""
            report(f"creating {kwok_nodes}the default StorageClass (the process runtime registered its nodes)")
        else:
            report(f"creating {config.nodes.count} kwok node(s) and the default StorageClass")

    def _prepare_files(self, config: SandboxConfig, bins: Binaries) -> None:
        layout = self.layout
        shutil.rmtree(layout.etcd_data, ignore_errors=True)  # every `up` starts from an empty cluster
        shutil.rmtree(layout.volumes, ignore_errors=True)
        for directory in (layout.root, layout.logs, layout.volumes, layout.component_kubeconfig("x").parent):
            directory.mkdir(parents=True, exist_ok=True)
        layout.root.chmod(0o700)
        authority = pki.ensure_pki(layout.pki, config.service_ip)
        pki.write_kubeconfig(
            layout.kubeconfig, pki.kubeconfig(authority, config.server, "admin", f"raykube-{config.name}")
        )
        layout.cert_manager_ready.unlink(missing_ok=True)
        for component in (
            "kube-controller-manager",
            "kube-scheduler",
            "kwok",
            "provisioner",
            PROCESS_RUNTIME,
            CERT_MANAGER,
        ):
            pki.write_kubeconfig(
                layout.component_kubeconfig(component),
                pki.kubeconfig(authority, config.server, component, f"raykube-{config.name}"),
            )
        layout.scheduler_config.write_text(yaml.safe_dump(scheduler_config(layout, config), sort_keys=False))
        layout.kwok_config.write_text(kwok.kwok_config(bins))

    # ----------------------------------------------------------------------------------------------- health
    async def _wait_healthy(self, record: ProcessRecord, check: Callable[[], Awaitable[bool | NotYet]]) -> None:
        log = self.layout.log(record.component)

        async def healthy() -> bool | NotYet:
            if not process.is_running(record):
                raise ComponentFailed(
                    f"{record.component} exited while the sandbox was starting; the end of {log}:",
                    detail=tail(log, 25),
                    hint=f"full log: {log}",
                )
            return await check()

        try:
            await wait_for(healthy, STARTUP_TIMEOUT[record.component], what=f"{record.component} to become healthy")
        except WaitTimeout as exc:
            raise ComponentFailed(
                f"{record.component} did not become healthy in {exc.timeout:g}s ({exc.last!r}); the end of {log}:",
                detail=tail(log, 25),
                hint=f"full log: {log}",
            ) from exc

    @staticmethod
    async def _get(url: str, context: ssl.SSLContext | None = None) -> bool | NotYet:
        try:
            async with httpx2.AsyncClient(verify=context or False, trust_env=False, timeout=5) as http:
                response = await http.get(url)
        except httpx2.HTTPError as exc:
            return NotYet(f"GET {url}: {exc.__class__.__name__}")
        return True if response.status_code == 200 else NotYet(f"GET {url}: HTTP {response.status_code}")

    def _etcd_ready(self, config: SandboxConfig) -> Callable[[], Awaitable[bool | NotYet]]:
        return lambda: self._get(f"http://{ports.HOST}:{config.ports.etcd}/readyz")

    def _apiserver_ready(self, config: SandboxConfig) -> Callable[[], Awaitable[bool | NotYet]]:
        context = _ssl_context(self.layout, "admin")
        return lambda: self._get(f"{config.server}/readyz", context)

    def _https_healthy(self, port: int) -> Callable[[], Awaitable[bool | NotYet]]:
        context = _ssl_context(self.layout, None)
        return lambda: self._get(f"https://{ports.HOST}:{port}/healthz", context)

    def _http_healthy(self, port: int) -> Callable[[], Awaitable[bool | NotYet]]:
        return lambda: self._get(f"http://{ports.HOST}:{port}/healthz")

    @classmethod
    def _provisioner_ready(cls, client: Kube, record: ProcessRecord) -> Callable[[], Awaitable[bool | NotYet]]:
        return cls._lease_held(client, LEASE_NAME, holder_identity(record.pid))

    @staticmethod
    def _lease_held(client: Kube, name: str, holder: str) -> Callable[[], Awaitable[bool | NotYet]]:
        async def check() -> bool | NotYet:
            try:
                lease = await client.get(LEASES, name, LEASE_NAMESPACE)
            except ApiError as exc:
                return NotYet(f"lease {LEASE_NAMESPACE}/{name}: {exc.reason}")
            current = (lease.get("spec") or {}).get("holderIdentity")
            return True if current == holder else NotYet(f"lease held by {current!r}")

        return check

    @contextlib.asynccontextmanager
    async def _client(self) -> AsyncIterator[Kube]:
        client = Kube.from_config(self.layout.kubeconfig, user_agent="raykube-sandbox")
        try:
            yield client
        finally:
            await client.close()

    # ----------------------------------------------------------------------------------------------- objects
    @staticmethod
    async def _create_cluster_objects(client: Kube, config: SandboxConfig) -> None:
        taints = [dict(KWOK_TAINT)] if config.runtime == "process" else None

        async def create_node(index: int) -> None:
            body = kwok.fake_node(index, config.nodes, taints=taints)
            await client.create(NODES, body)
            # Whether create keeps .status of a Node is not a contract; the status subresource is.
            await client.patch(NODES, body["metadata"]["name"], {"status": body["status"]}, subresource="status")

        count = config.nodes.count if config.runtime == "kwok" else config.kwok_nodes
        await asyncio.gather(*(create_node(i) for i in range(count)))
        await client.create(STORAGE_CLASSES, kwok.default_storage_class())

    async def _create_process_objects(self, client: Kube, config: SandboxConfig) -> None:
        """kwok's CRDs for per-Pod exec/logs/port-forward (Established before kwok starts) and the kube-dns
        Service, which reserves the DNS ClusterIP that process-node Pods' resolv.conf names."""
        for crd in kwok.debugging_crds():
            await client.create(CRDS, crd)

        async def established() -> bool | NotYet:
            for crd in kwok.debugging_crds():
                got = await client.get(CRDS, crd["metadata"]["name"])
                if _conditions(got).get("Established") != "True":
                    return NotYet(f"CRD {crd['metadata']['name']} not Established yet")
            return True

        await wait_for(established, 60, what="kwok's CRDs to be Established")
        service = kwok.dns_service(config.dns_ip)
        await client.create(SERVICES, service, service["metadata"]["namespace"])

    async def _start_cert_manager(
        self, client: Kube, bins: Binaries, start: Callable[[str], Awaitable[ProcessRecord]], report: Report
    ) -> None:
        """cert-manager's CRDs (Established first: its informers list them), then its controller, until its
        informers have synced (it creates the ready file then)."""
        report(f"installing cert-manager v{versions.CERT_MANAGER_VERSION}'s CRDs and starting its controller")
        await _install_crds(client, sorted(bins.cert_manager_crds.glob("*.yaml")), "cert-manager's CRDs")
        ready = self.layout.cert_manager_ready

        async def synced() -> bool | NotYet:
            return ready.exists() or NotYet(f"{ready} not written yet (informers syncing)")

        await self._wait_healthy(await start(CERT_MANAGER), synced)

    async def _install_gateway(self, client: Kube, cache: Path | None, report: Report) -> None:
        """The Gateway API CRDs of the Traefik build (Established first: Traefik's informers list them), then
        Traefik's objects, until Traefik has accepted its GatewayClass (its provider runs and can write status)."""
        built = sandbox_gateway.built(versions.TRAEFIK_VERSION, cache or versions.cache_root())
        if built is None:
            raise SandboxError(
                f"traefik v{versions.TRAEFIK_VERSION} is not built", hint="run `raykube sandbox build --gateway`"
            )
        report(f"installing the Gateway API CRDs and Traefik v{versions.TRAEFIK_VERSION} (GatewayClass traefik)")
        await _install_crds(client, built.crds, "the Gateway API CRDs")
        for obj in sandbox_gateway.manifests():
            await client.create(sandbox_gateway.resource_of(obj), obj, obj["metadata"].get("namespace"))

        async def accepted() -> bool | NotYet:
            gateway_class = await client.get(sandbox_gateway.GATEWAY_CLASSES, sandbox_gateway.GATEWAY_CLASS)
            if _conditions(gateway_class).get("Accepted") == "True":
                return True
            pods = (await client.list(PODS, sandbox_gateway.NAMESPACE)).items
            states = [[c.get("state") for c in (p.get("status") or {}).get("containerStatuses") or []] for p in pods]
            return NotYet(f"GatewayClass {sandbox_gateway.GATEWAY_CLASS} not Accepted yet; Traefik's Pods: {states}")

        await wait_for(accepted, GATEWAY_READY_TIMEOUT, what="Traefik to accept the GatewayClass traefik")

    def _prepare_process_runtime(self, config: SandboxConfig, cache: Path | None) -> None:
        from raykube.sandbox.kubelet import network  # noqa: PLC0415 - only process sandboxes need it
        from raykube.sandbox.kubelet.main import NodeConfig, RuntimeConfig  # noqa: PLC0415

        shutil.rmtree(self.layout.kubelet, ignore_errors=True)
        self.layout.kubelet.mkdir(parents=True)
        self.layout.exec_bin.mkdir()
        subnet = network.reserve_subnet()
        runtime = RuntimeConfig(
            kubeconfig=self.layout.component_kubeconfig(PROCESS_RUNTIME),
            state_dir=self.layout.kubelet,
            sandbox_root=self.layout.root,
            cache_dir=cache or versions.cache_root(),
            nodes=tuple(
                NodeConfig(kwok.process_node_name(i), i, config.nodes.cpu, config.nodes.memory, config.nodes.pods)
                for i in range(config.nodes.count)
            ),
            network=network.PodNetwork(network.bridge_name(self.layout.root), subnet, config.service_cidr),
            dns_ip=config.dns_ip,
            apiserver_port=config.ports.apiserver,
            kubelet_port=config.ports.kwok,
        )
        self.layout.kubelet_config.write_text(json.dumps(runtime.to_json(), indent=2) + "\n")

    async def _wait_cluster_ready(self, client: Kube, config: SandboxConfig, records: list[ProcessRecord]) -> None:
        async def nodes_ready() -> bool | NotYet:
            for record in records:
                if not process.is_running(record):
                    log = self.layout.log(record.component)
                    raise ComponentFailed(
                        f"{record.component} exited while the sandbox was starting; the end of {log}:",
                        detail=tail(log, 25),
                    )
            waiting = []
            for node in (await client.list(NODES)).items:
                conditions = _conditions(node)
                taints = [str(t.get("key")) for t in (node.get("spec") or {}).get("taints") or []]
                if conditions.get("Ready") != "True" or any(t.startswith("node.kubernetes.io/") for t in taints):
                    name = (node.get("metadata") or {}).get("name") or "?"
                    waiting.append(f"{name} (Ready={conditions.get('Ready')}, taints={taints})")
            return True if not waiting else NotYet("nodes not ready: " + ", ".join(waiting))

        async def default_service_account() -> bool | NotYet:
            try:
                await client.get(SERVICE_ACCOUNTS, "default", "default")
            except ApiError:
                return NotYet("ServiceAccount default/default does not exist yet (kube-controller-manager)")
            return True

        try:
            await wait_for(nodes_ready, CLUSTER_READY_TIMEOUT, what="kwok nodes to be Ready and untainted")
            await wait_for(default_service_account, CLUSTER_READY_TIMEOUT, what="the default ServiceAccount")
        except WaitTimeout as exc:
            raise ComponentFailed(
                f"the control plane started but the cluster is not usable: {exc}",
                hint=f"look at {self.layout.logs}/kwok.log and kube-controller-manager.log",
            ) from exc

    @staticmethod
    def _check_loopback_only(records: list[ProcessRecord]) -> None:
        for record in records:
            outside = [f"{a}:{p}" for a, p in ports.listeners(record.pid) if a != ports.HOST]
            if outside:
                raise SandboxError(
                    f"{record.component} listens outside 127.0.0.1 on {', '.join(outside)}; "
                    "the sandbox refuses to run like that"
                )

    # ----------------------------------------------------------------------------------------------- down
    async def down(self, report: Report = lambda _: None, *, keep_logs: bool = False) -> list[str]:
        """Stop the processes this sandbox started and remove its directory. Returns the components stopped."""
        state = self.load_state()
        if state is None:
            if self.layout.root.exists() and not keep_logs:
                shutil.rmtree(self.layout.root)
            return []
        stopped = []
        for extra in state.extras:
            if await process.terminate(extra):
                stopped.append(extra.component)
                report(f"stopped {extra.component} (pid {extra.pid})")
        by_component = {p.component: p for p in state.processes}
        for component in STOP_ORDER:
            record = by_component.get(component)
            if record is None:
                continue
            if await process.terminate(record, grace=60 if component == PROCESS_RUNTIME else 15):
                stopped.append(component)
                report(f"stopped {component} (pid {record.pid})")
            elif Path(f"/proc/{record.pid}").exists():
                report(f"pid {record.pid} no longer runs {component}; left it alone")
        if state.config.runtime == "process" or self.layout.kubelet.exists():
            self._stop_runtime_leftovers(report)
        self._remove_files(keep_logs=keep_logs)
        return stopped

    def _remove_files(self, *, keep_logs: bool) -> None:
        if keep_logs:
            for entry in self.layout.root.iterdir():
                if entry != self.layout.logs:
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        else:
            shutil.rmtree(self.layout.root, ignore_errors=True)

    def _stop_runtime_leftovers(self, report: Report) -> None:
        """The process runtime stops its Pods itself; this is for when it could not (it crashed, or was killed)."""
        from raykube.sandbox.kubelet import cleanup, network  # noqa: PLC0415 - only process sandboxes need it

        for done in cleanup.stop_leftovers(self.layout.kubelet, network.bridge_name(self.layout.root)):
            report(f"process runtime leftovers: {done}")

    async def service_account_kubeconfig(
        self, namespace: str, name: str, path: Path, *, expiration_seconds: int = 86400
    ) -> Path:
        """A kubeconfig that authenticates as ServiceAccount ``namespace/name`` with a bound token (TokenRequest),
        so a process outside the cluster runs with exactly that account's RBAC. The account must exist."""
        state = self.load_state()
        if state is None:
            raise SandboxError(f"sandbox {self.name!r} is not running")
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"audiences": [], "expirationSeconds": expiration_seconds},
        }
        async with self._client() as client:
            response = await client.create(SERVICE_ACCOUNTS, request, namespace, name=name, subresource="token")
        token = (response.get("status") or {}).get("token")
        if not token:
            raise SandboxError(f"the API server issued no token for ServiceAccount {namespace}/{name}")
        cluster = f"raykube-{self.name}"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster,
                    "cluster": {
                        "server": state.config.server,
                        "certificate-authority-data": base64.b64encode(
                            (self.layout.pki / "ca.crt").read_bytes()
                        ).decode(),
                    },
                }
            ],
            "users": [{"name": f"{namespace}-{name}", "user": {"token": token}}],
            "contexts": [
                {
                    "name": f"{cluster}-{name}",
                    "context": {"cluster": cluster, "user": f"{namespace}-{name}", "namespace": namespace},
                }
            ],
            "current-context": f"{cluster}-{name}",
        }
        return pki.write_kubeconfig(path, config)

    def shell_env(self, cache: Path | None = None) -> str:
        """Shell lines that point kubectl (the sandbox's own build, first on PATH) at this sandbox."""
        return f"export KUBECONFIG={self.layout.kubeconfig}\nexport PATH={Binaries.from_cache(cache).path_dir}:$PATH\n"


async def _install_crds(client: Kube, files: Sequence[Path], what: str) -> None:
    """Create the CRDs of ``files`` and wait until each is Established (the informers of what comes next list them)."""
    names = []
    for path in files:
        for crd in yaml.safe_load_all(path.read_text()):
            if crd:
                await client.create(CRDS, crd)
                names.append(crd["metadata"]["name"])

    async def established() -> bool | NotYet:
        for name in names:
            if _conditions(await client.get(CRDS, name)).get("Established") != "True":
                return NotYet(f"CRD {name} not Established yet")
        return True

    await wait_for(established, 60, what=f"{what} to be Established")

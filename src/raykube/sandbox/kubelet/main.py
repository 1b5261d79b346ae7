"""The process runtime: the kubelet of the sandbox's process nodes.

Run by the sandbox as ``python -m raykube.sandbox.kubelet --config <state>/kubelet/config.json``. It

* checks the machine can host process nodes, and stops what a previous runtime of this sandbox left behind;
* creates the bridge and the services sandbox, serves cluster DNS and the ClusterIP proxy there;
* registers its Nodes (Ready, with a Pod CIDR each) and renews their Leases;
* watches Services and EndpointSlices (DNS, proxy, service environment variables) and Pods; a Pod bound to one of
  its Nodes gets a :class:`~raykube.sandbox.kubelet.pod.PodWorker`;
* on SIGTERM stops every Pod (short grace: the whole sandbox is going), the services sandbox and the bridge.

It holds the Lease ``kube-system/raykube-process-runtime`` while it works (what ``sandbox up`` waits for). Its only
listeners are in the services sandbox's network namespace; in the host's it listens on nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import re
import signal
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raykube.kube import objects, times
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.events import CORE_EVENTS_API, EventRecorder
from raykube.kube.informer import Informer
from raykube.kube.resources import CONFIGMAPS, ENDPOINT_SLICES, LEASES, NODES, PODS, SECRETS, SERVICES
from raykube.sandbox.kubelet import cleanup, images, network, nstools, podstatus, volumes
from raykube.sandbox.kubelet.dns import DnsServer
from raykube.sandbox.kubelet.env import NodeCapacity, service_env
from raykube.sandbox.kubelet.pod import FIELD_MANAGER, Node, PodWorker
from raykube.sandbox.kubelet.podsandbox import spawn_helper, wait_file
from raykube.sandbox.kubelet.services import ClusterIpProxy, ServiceTable

log = logging.getLogger("raykube.sandbox.kubelet")

LEASE_NAME = "raykube-process-runtime"
LEASE_NAMESPACE = "kube-system"
# The client-side rate limit of a kubelet (the defaults of its --kube-api-qps and --kube-api-burst); the User-Agent
# and field manager are FIELD_MANAGER.
KUBE_API_QPS = 50.0
KUBE_API_BURST = 100
NODE_LEASE_SECONDS = 40
RENEW_SECONDS = 10
NODE_STATUS_SECONDS = 60
RUNTIME_LABEL = "raykube.io/runtime"
NODE_TYPE_LABEL = "type"
KUBELET_VERSION = "v1.36.3"
_EXEC_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


@dataclass(frozen=True)
class NodeConfig:
    name: str
    index: int
    cpu: str
    memory: str
    pods: int


@dataclass(frozen=True)
class RuntimeConfig:
    kubeconfig: Path
    state_dir: Path  # <sandbox>/kubelet
    sandbox_root: Path
    cache_dir: Path
    nodes: tuple[NodeConfig, ...]
    network: network.PodNetwork
    dns_ip: str
    apiserver_port: int
    kubelet_port: int  # kwok's server: the apiserver sends logs/exec/port-forward of our Pods there

    def to_json(self) -> dict[str, Any]:
        return {
            "kubeconfig": str(self.kubeconfig),
            "stateDir": str(self.state_dir),
            "sandboxRoot": str(self.sandbox_root),
            "cacheDir": str(self.cache_dir),
            "nodes": [n.__dict__ for n in self.nodes],
            "network": self.network.to_json(),
            "dnsIP": self.dns_ip,
            "apiserverPort": self.apiserver_port,
            "kubeletPort": self.kubelet_port,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuntimeConfig:
        return cls(
            Path(data["kubeconfig"]),
            Path(data["stateDir"]),
            Path(data["sandboxRoot"]),
            Path(data["cacheDir"]),
            tuple(NodeConfig(**n) for n in data["nodes"]),
            network.PodNetwork.from_json(data["network"]),
            data["dnsIP"],
            int(data["apiserverPort"]),
            int(data["kubeletPort"]),
        )


def node_body(node: NodeConfig, cfg: RuntimeConfig) -> dict[str, Any]:
    capacity = {"cpu": node.cpu, "memory": node.memory, "pods": str(node.pods), "ephemeral-storage": "100Gi"}
    cidr = cfg.network.node_cidr(node.index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node.name,
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": node.name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "process",
                NODE_TYPE_LABEL: "process",
                RUNTIME_LABEL: "process",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": node.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": cfg.kubelet_port}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "raykube-process://0.1.0",
                "kernelVersion": os.uname().release,
                "kubeProxyVersion": "",
                "kubeletVersion": KUBELET_VERSION,
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "raykube process runtime",
                "systemUUID": "",
            },
        },
    }


def node_conditions(since: str) -> list[dict[str, Any]]:
    now = times.format_time()

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": since,
        }

    return [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status (raykube process runtime)"),
    ]


class NetnsSockets:
    """Creates listening sockets inside another network namespace: one thread lives in it (setns is per thread)."""

    def __init__(self, pid: int) -> None:
        def enter() -> None:
            fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
            try:
                nstools.setns(fd, nstools.CLONE_NEWNET)
            finally:
                os.close(fd)

        self.executor = concurrent.futures.ThreadPoolExecutor(1, "netns", initializer=enter)

    async def listen(self, host: str, port: int, kind: int = socket.SOCK_STREAM) -> socket.socket:
        def make() -> socket.socket:
            sock = socket.socket(socket.AF_INET, kind)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, port))
                if kind == socket.SOCK_STREAM:
                    sock.listen(128)
                sock.setblocking(False)
            except OSError:
                sock.close()
                raise
            return sock

        return await asyncio.get_running_loop().run_in_executor(self.executor, make)

    def close(self) -> None:
        self.executor.shutdown(wait=False)


def pod_action(pod: Mapping[str, Any], *, deleted: bool, running: bool, finished: bool) -> str:
    """What an informer event of a Pod on one of our Nodes asks: ``forget`` (the object is gone), ``update`` (its
    worker runs), ``confirm`` (a finished Pod being deleted: delete it with grace 0, as the kubelet confirms),
    ``start`` (a new Pod to run) or ``ignore``. A Pod whose worker already ended is never started again, even from an
    event older than its last status (still ``Running``): a second worker would publish containers that never ran."""
    if deleted:
        return "forget"
    if running:
        return "update"
    if finished or (pod.get("status") or {}).get("phase") in podstatus.TERMINAL:
        return "confirm" if objects.terminating(pod) else "ignore"
    return "start"


@dataclass
class Runtime:
    cfg: RuntimeConfig
    kube: Kube = field(init=False)
    image_store: images.ImageStore = field(init=False)
    table: ServiceTable = field(default_factory=ServiceTable)
    workers: dict[str, tuple[PodWorker, asyncio.Task[None]]] = field(default_factory=dict)
    # The uids whose worker ended (stopped for good, its last status published) while the object stays (a finalizer):
    # as the kubelet's pod workers remember a finished pod, an older event of it must not start it again.
    finished: set[str] = field(default_factory=set)
    shutting_down: bool = False
    nodes: dict[str, Node] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.kube = Kube.from_config(
            self.cfg.kubeconfig, user_agent=FIELD_MANAGER, qps=KUBE_API_QPS, burst=KUBE_API_BURST
        )
        self.image_store = images.ImageStore(self.cfg.cache_dir)
        self.net = self.cfg.network
        self.dns_ip = self.cfg.dns_ip
        self.nstools_path = Path(nstools.__file__).resolve()
        self.hide_paths = [str(self.cfg.sandbox_root)]
        self.exec_bin = self.cfg.state_dir / "exec-bin"
        self.stop_event = asyncio.Event()
        self.services_pause: asyncio.subprocess.Process | None = None
        self._linked_dirs: set[str] = set()
        for node in self.cfg.nodes:
            self.nodes[node.name] = Node(
                node.name,
                node.index,
                network.IpPool(self.net.node_cidr(node.index)),
                NodeCapacity(cpu=node.cpu, memory=node.memory),
                # One recorder per node, as each kubelet has its own (with its own client's rate limit).
                EventRecorder(self.kube.sibling(), "kubelet", instance=node.name, api=CORE_EVENTS_API),
            )

    # ------------------------------------------------------------------------------------------------ host API
    def service_env(self, namespace: str, enable_links: bool) -> dict[str, str]:
        return service_env(list(self.table.services.values()), namespace, enable_links)

    async def configmap(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return await self.kube.get_or_none(CONFIGMAPS, name, namespace)

    async def secret(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return await self.kube.get_or_none(SECRETS, name, namespace)

    def new_venv(self, venv: Path) -> None:
        self._link_commands([venv / "bin"])

    # ------------------------------------------------------------------------------------------------ exec-bin
    def _link_commands(self, directories: list[Path]) -> None:
        """kwok runs ``kubectl exec`` commands by name from its PATH, which is only ``exec-bin``: a symlink per
        command name, all to one wrapper that enters the container named by the Pod's Exec object."""
        self.exec_bin.mkdir(parents=True, exist_ok=True)
        wrapper = self.exec_bin / ".raykube-exec"
        if not wrapper.exists():
            wrapper.write_text(
                f"#!{sys.executable} -S\n"
                "import sys\n"
                f"sys.path.insert(0, {str(self.nstools_path.parent)!r})\n"
                "import nstools\n"
                "nstools.main(sys.argv)\n"
            )
            wrapper.chmod(0o755)
        for directory in directories:
            if str(directory) in self._linked_dirs or not directory.is_dir():
                continue
            self._linked_dirs.add(str(directory))
            for entry in directory.iterdir():
                link = self.exec_bin / entry.name
                if not _EXEC_NAME.match(entry.name) or link.exists() or link.is_symlink():
                    continue
                if entry.is_file() and os.access(entry, os.X_OK):
                    link.symlink_to(wrapper.name)

    # ------------------------------------------------------------------------------------------------ run
    async def run(self) -> None:
        problems = network.preflight()
        if problems:
            raise SystemExit("cannot run process nodes on this machine:\n  - " + "\n  - ".join(problems))
        self.cfg.state_dir.mkdir(parents=True, exist_ok=True)
        for done in cleanup.stop_leftovers(self.cfg.state_dir, self.net.bridge):
            log.info("previous runtime's leftovers: %s", done)
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop_event.set)
        host_path = [Path(p) for p in os.environ.get("PATH", "").split(":") if p]
        self._link_commands([*host_path, *(p / "bin" for p in sorted(self.image_store.root.glob("*-py*")))])
        await network.create_bridge(self.net)
        sockets: NetnsSockets | None = None
        dns = DnsServer(self.table.resolve)
        proxy: ClusterIpProxy | None = None
        tasks: list[asyncio.Task[Any]] = []
        recorders = [asyncio.create_task(n.recorder.run(), name=f"events {n.name}") for n in self.nodes.values()]
        try:
            services_pid = await self._services_sandbox()
            sockets = NetnsSockets(services_pid)
            await dns.start(
                await sockets.listen(self.dns_ip, 53, socket.SOCK_DGRAM), await sockets.listen(self.dns_ip, 53)
            )
            proxy = ClusterIpProxy(self.table, sockets.listen, ("127.0.0.1", self.cfg.apiserver_port), self.dns_ip)
            await self._register_nodes()
            informers, pods = self._informers()
            tasks += [asyncio.create_task(i.run()) for i in informers]
            await asyncio.gather(*(i.synced.wait() for i in informers))
            tasks.append(asyncio.create_task(pods.run()))
            tasks.append(asyncio.create_task(self._proxy_sync(proxy)))
            tasks.append(asyncio.create_task(self._heartbeat()))
            log.info("process runtime up: nodes %s, pod network %s", ", ".join(self.nodes), self.net.subnet)
            await self.stop_event.wait()
        finally:
            self.shutting_down = True
            for task in tasks:
                task.cancel()
            await self._stop_pods()
            await self._stop_recorders(recorders)
            await dns.stop()
            if proxy is not None:
                await proxy.close()
            if sockets is not None:
                sockets.close()
            if self.services_pause is not None and self.services_pause.returncode is None:
                self.services_pause.kill()
                await self.services_pause.wait()
            await network.delete_bridge(self.net.bridge)
            with contextlib.suppress(Exception):
                await self.kube.close()
            log.info("process runtime stopped")

    async def _stop_recorders(self, tasks: list[asyncio.Task[None]]) -> None:
        """Stop the nodes' event recorders, then send what they still hold."""
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for node in self.nodes.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(node.recorder.flush(), 10)

    def _informers(self) -> tuple[list[Informer], Informer]:
        """The Services' and EndpointSlices' informers (DNS, proxy, service links), the ConfigMaps' and Secrets'
        (volume refresh), and the Pods'."""
        services = Informer(self.kube, SERVICES)
        services.add_handler(self.table.on_service)
        slices = Informer(self.kube, ENDPOINT_SLICES)
        slices.add_handler(self.table.on_slice)
        # Every bound Pod (kwok's nodes' too: the handler keeps those of our nodes), as a kubelet watches
        # spec.nodeName=<its node>.
        pods = Informer(self.kube, PODS, field_selector="spec.nodeName!=")
        pods.add_handler(self._on_pod)
        # A kubelet watches the ConfigMaps and Secrets its Pods' volumes project, to refresh the files.
        configmaps = Informer(self.kube, CONFIGMAPS)
        configmaps.add_handler(lambda _, old, new: self._on_volume_source("configMap", new or old))
        secrets = Informer(self.kube, SECRETS)
        secrets.add_handler(lambda _, old, new: self._on_volume_source("secret", new or old))
        return [services, slices, configmaps, secrets], pods

    async def _services_sandbox(self) -> int:
        directory = self.cfg.state_dir / "services"
        directory.mkdir(parents=True, exist_ok=True)
        spec, ready = directory / "pause-spec.json", directory / "pause.json"
        ready.unlink(missing_ok=True)
        spec.write_text(json.dumps({"hostname": "raykube-services", "tmpfs": [], "readyFile": str(ready)}))
        self.services_pause = await spawn_helper(self.nstools_path, "pause", spec, directory / "pause.log")
        await wait_file(ready, self.services_pause, 30, "the services sandbox")
        pid = int(json.loads(ready.read_text())["pid"])
        await network.attach(
            self.net, pid, network.veth_name(f"services-{self.net.bridge}"), self.net.services_ip, services_sandbox=True
        )
        return pid

    async def _register_nodes(self) -> None:
        since = times.format_time()
        for node in self.cfg.nodes:
            body = node_body(node, self.cfg)
            if await self.kube.get_or_none(NODES, node.name) is None:
                await self.kube.create(NODES, {**body, "status": {}})
            status = {**body["status"], "conditions": node_conditions(since)}
            await self.kube.patch(NODES, node.name, {"status": status}, subresource="status")
        self._since = since
        await self._renew_leases()

    async def _renew_leases(self) -> None:
        now = times.format_micro_time()
        leases = [(name, "kube-node-lease", name, NODE_LEASE_SECONDS) for name in self.nodes]
        leases.append((LEASE_NAME, LEASE_NAMESPACE, f"{LEASE_NAME}/pid-{os.getpid()}", 30))
        for name, namespace, holder, seconds in leases:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": seconds, "renewTime": now},
            }
            await self.kube.apply(LEASES, body, namespace, field_manager=FIELD_MANAGER)

    async def _heartbeat(self) -> None:
        elapsed = 0
        while True:
            await asyncio.sleep(RENEW_SECONDS)
            elapsed += RENEW_SECONDS
            try:
                await self._renew_leases()
                if elapsed >= NODE_STATUS_SECONDS:
                    elapsed = 0
                    for name in self.nodes:
                        await self.kube.patch(
                            NODES,
                            name,
                            {"status": {"conditions": node_conditions(self._since)}},
                            patch_type="strategic",
                            subresource="status",
                        )
            except Exception as exc:  # keep beating; a missed renewal is what the lease is for
                log.warning("heartbeat failed: %s", exc)

    async def _proxy_sync(self, proxy: ClusterIpProxy) -> None:
        while True:
            self.table.changed.clear()
            try:
                await proxy.sync()
            except Exception as exc:  # the next change retries
                log.warning("ClusterIP proxy sync failed: %s", exc)
            await self.table.changed.wait()

    # ------------------------------------------------------------------------------------------------ pods
    def _on_pod(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """Informer handler. A new incarnation under the same name comes as DELETED (the old uid) then ADDED."""
        pod = new if new is not None else old
        if pod is None or self.shutting_down:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name not in self.nodes:
            return
        uid = objects.uid(pod)
        action = pod_action(pod, deleted=new is None, running=uid in self.workers, finished=uid in self.finished)
        if action == "forget":
            self.finished.discard(uid)
            if uid in self.workers:
                self.workers[uid][0].deleted()
        elif action == "update":
            self.workers[uid][0].update(pod)
        elif action == "confirm":
            asyncio.create_task(self._confirm_deletion(pod))  # noqa: RUF006 - fire and forget
        elif action == "start":
            worker = PodWorker(self, self.nodes[node_name], pod, self.cfg.state_dir / "pods")
            worker.update(pod)
            task = asyncio.create_task(worker.run(), name=f"pod {objects.namespace(pod)}/{objects.name(pod)}")
            self.workers[uid] = (worker, task)
            task.add_done_callback(lambda _: self._worker_ended(uid))

    def _worker_ended(self, uid: str) -> None:
        self.workers.pop(uid, None)
        self.finished.add(uid)

    def _on_volume_source(self, kind: str, obj: Mapping[str, Any] | None) -> None:
        """A ConfigMap or Secret changed: each running Pod whose volumes project it refreshes them."""
        if obj is None:
            return
        source, namespace = (kind, objects.name(obj)), objects.namespace(obj)
        for worker, _ in self.workers.values():
            if worker.ctx.namespace == namespace and source in volumes.sources(worker.pod):
                worker.sandbox.sources_changed.set()

    async def _confirm_deletion(self, pod: Mapping[str, Any]) -> None:
        name, namespace = objects.name(pod), objects.namespace(pod)
        with contextlib.suppress(ApiError):
            await self.kube.delete(PODS, name, namespace, uid=objects.uid(pod), grace_period_seconds=0)

    async def _stop_pods(self) -> None:
        for worker, _ in list(self.workers.values()):
            worker.stop()
        tasks = [task for _, task in list(self.workers.values())]
        if tasks:
            await asyncio.wait(tasks, timeout=60)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m raykube.sandbox.kubelet", description=__doc__)
    parser.add_argument("--config", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    cfg = RuntimeConfig.from_json(json.loads(args.config.read_text()))
    asyncio.run(Runtime(cfg).run())


if __name__ == "__main__":
    main()

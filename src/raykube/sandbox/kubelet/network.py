"""The process runtime's network: one Linux bridge on the host, a veth per Pod, Pod IPs from a private range.

Layout for a sandbox whose Pod network is ``10.244.240.0/20`` (chosen at ``up`` so two sandboxes never overlap):

* bridge ``rkb<hash>`` on the host with ``10.244.240.1/20``: the host reaches every Pod IP through it (probes,
  port-forward), and nothing else goes through it;
* the services sandbox (a network namespace of its own) at ``10.244.240.2``: the ClusterIP range is local there
  (``ip route add local 10.96.0.0/16 dev lo``), so the cluster DNS server (``10.96.0.10:53``) and the ClusterIP
  proxy listen inside it and nowhere else;
* process node ``i`` hands out Pod IPs from ``10.244.(241+i).0/24``; every Pod gets ``eth0`` with its IP and the
  whole ``/20`` on-link (Pods reach each other directly over the bridge) and one more route: the service range via
  ``10.244.240.2``. There is no default route: a Pod cannot send a packet off the machine.

Everything here is undone by killing the namespaces' processes (a veth goes with its namespace) and deleting the
bridge, which ``raykube sandbox down`` does even when the runtime died.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import ipaddress
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

POD_NETWORK_CANDIDATES = tuple(f"10.244.{third}.0/20" for third in range(240, 127, -16))


class NetworkError(Exception):
    pass


@dataclass(frozen=True)
class PodNetwork:
    """The addresses of one sandbox's process-node network."""

    bridge: str
    subnet: str  # e.g. 10.244.240.0/20
    service_cidr: str  # e.g. 10.96.0.0/16

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.subnet)

    @property
    def prefix(self) -> int:
        return self.network.prefixlen

    @property
    def gateway(self) -> str:
        return str(self.network.network_address + 1)

    @property
    def services_ip(self) -> str:
        return str(self.network.network_address + 2)

    def node_cidr(self, index: int) -> str:
        """The /24 that process node ``index`` hands out Pod IPs from (the first /24 holds the infrastructure)."""
        blocks = list(self.network.subnets(new_prefix=24))
        if not 0 <= index < len(blocks) - 1:
            raise ValueError(f"the pod network {self.subnet} has room for {len(blocks) - 1} process nodes")
        return str(blocks[index + 1])

    def to_json(self) -> dict[str, str]:
        return {"bridge": self.bridge, "subnet": self.subnet, "serviceCIDR": self.service_cidr}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> PodNetwork:
        return cls(data["bridge"], data["subnet"], data["serviceCIDR"])


def bridge_name(sandbox_root: Path) -> str:
    return "rkb" + hashlib.sha256(str(sandbox_root).encode()).hexdigest()[:8]


def veth_name(pod_uid: str) -> str:
    return "rkv" + hashlib.sha256(pod_uid.encode()).hexdigest()[:8]


def host_routes() -> list[ipaddress.IPv4Network]:
    """The IPv4 destinations the host routes somewhere (any table), to pick a Pod network that overlaps none."""
    found: list[ipaddress.IPv4Network] = []
    try:
        out = subprocess.run(
            ["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True, check=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return found
    for line in out.splitlines():
        words = line.split()
        if not words:
            continue
        target = words[1] if words[0] in ("local", "broadcast", "unicast", "blackhole", "unreachable") else words[0]
        if target == "default":
            continue
        try:
            found.append(ipaddress.IPv4Network(target, strict=False))
        except ValueError:
            continue
    return found


def choose_subnet(taken: Iterable[ipaddress.IPv4Network], candidates: Iterable[str] = POD_NETWORK_CANDIDATES) -> str:
    taken = list(taken)
    for candidate in candidates:
        network = ipaddress.IPv4Network(candidate)
        if not any(network.overlaps(other) for other in taken):
            return candidate
    raise NetworkError(
        "no free Pod network for process nodes: every candidate "
        f"({', '.join(candidates)}) overlaps a route of this machine"
    )


# Where sandboxes starting at the same time reserve the Pod network each chose, until its bridge's route shows it.
RESERVATIONS = Path("/run/raykube/pod-networks")
RESERVATION_SECONDS = 600.0  # a sandbox's bridge exists long before this; then host_routes() shows the network


def _reserved(directory: Path, now: float) -> list[ipaddress.IPv4Network]:
    out = []
    for entry in directory.glob("*.json"):
        try:
            held = json.loads(entry.read_text())
            os.kill(int(held["pid"]), 0)  # the process that reserved it is still there
        except (OSError, ValueError, KeyError, TypeError):
            entry.unlink(missing_ok=True)
            continue
        if now - float(held.get("at") or 0) > RESERVATION_SECONDS:
            entry.unlink(missing_ok=True)
            continue
        out.append(ipaddress.IPv4Network(str(held["network"])))
    return out


def reserve_subnet(directory: Path = RESERVATIONS) -> str:
    """:func:`choose_subnet` among the host's routes and the networks other sandboxes reserved a moment ago (two
    process sandboxes started together, as `make test`'s workers do, would otherwise see the same network free);
    the choice is reserved in turn, under a host-wide lock."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        now = time.time()
        chosen = choose_subnet([*host_routes(), *_reserved(directory, now)])
        record = {"network": chosen, "pid": os.getpid(), "at": now}
        (directory / f"{chosen.replace('/', '_')}.json").write_text(json.dumps(record))
        return chosen


def preflight() -> list[str]:
    """Why this machine cannot run process nodes (empty when it can)."""
    problems = []
    if os.geteuid() != 0:
        problems.append(
            "process nodes need root (they create network namespaces, a bridge and mounts); run as root, "
            "or use the default kwok nodes"
        )
    for tool, package in (("ip", "iproute2"), ("nsenter", "util-linux"), ("unshare", "util-linux")):
        if shutil.which(tool) is None:
            problems.append(f"`{tool}` is not on PATH (install {package})")
    if not Path("/proc/self/ns/net").exists():
        problems.append("this kernel has no network namespaces (/proc/self/ns/net is missing)")
    try:
        filesystems = Path("/proc/filesystems").read_text()
    except OSError:
        filesystems = ""
    for fs in ("overlay", "tmpfs"):
        if fs not in filesystems.split():
            problems.append(f"the kernel lacks the {fs} filesystem (not in /proc/filesystems; try `modprobe {fs}`)")
    if not problems and shutil.which("unshare"):
        probe = subprocess.run(
            ["unshare", "--net", "--mount", "--uts", "--ipc", "--pid", "--fork", "true"],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
        if probe.returncode != 0:
            problems.append(
                "creating namespaces is not allowed here (`unshare --net --mount --uts --ipc --pid true` failed: "
                f"{probe.stderr.strip() or probe.returncode}); a container without CAP_SYS_ADMIN cannot host "
                "process nodes"
            )
    return problems


async def ip(*args: str, namespace_pid: int | None = None, check: bool = True) -> str:
    argv = ["ip", *args]
    if namespace_pid is not None:
        argv = ["nsenter", f"--target={namespace_pid}", "--net", "--", *argv]
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if check and proc.returncode != 0:
        raise NetworkError(f"`{' '.join(argv)}` failed: {err.decode().strip()}")
    return out.decode()


async def ip_batch(commands: list[str], namespace_pid: int | None = None) -> None:
    """Several ``ip`` commands in one process (``ip -batch -``), optionally inside a namespace."""
    argv = ["ip", "-batch", "-"]
    if namespace_pid is not None:
        argv = ["nsenter", f"--target={namespace_pid}", "--net", "--", *argv]
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate("\n".join(commands).encode() + b"\n")
    if proc.returncode != 0:
        raise NetworkError(f"`ip -batch` ({'; '.join(commands)}) failed: {err.decode().strip()}")


async def link_exists(name: str) -> bool:
    return bool((await ip("-o", "link", "show", "dev", name, check=False)).strip())


async def create_bridge(net: PodNetwork) -> None:
    if await link_exists(net.bridge):
        await delete_bridge(net.bridge)
    await ip_batch(
        [
            f"link add {net.bridge} type bridge stp_state 0",
            f"addr add {net.gateway}/{net.prefix} dev {net.bridge}",
            f"link set {net.bridge} up",
        ]
    )


async def delete_bridge(name: str) -> None:
    await ip("link", "del", "dev", name, check=False)


def delete_bridge_sync(name: str) -> bool:
    """Delete the bridge if it exists (for ``down`` when the runtime is gone). True if it was there."""
    shown = subprocess.run(
        ["ip", "-o", "link", "show", "dev", name], capture_output=True, text=True, check=False, timeout=10
    )
    if shown.returncode != 0 or not shown.stdout.strip():
        return False
    subprocess.run(["ip", "link", "del", "dev", name], capture_output=True, check=False, timeout=10)
    return True


async def attach(net: PodNetwork, pid: int, veth: str, address: str, *, services_sandbox: bool = False) -> None:
    """Give the network namespace of ``pid`` an ``eth0`` on the bridge with ``address``."""
    await ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", str(pid))
    await ip_batch([f"link set {veth} master {net.bridge}", f"link set {veth} up"])
    commands = [
        "link set lo up",
        f"addr add {address}/{net.prefix} dev eth0",
        "link set eth0 up",
    ]
    if services_sandbox:
        commands.append(f"route add local {net.service_cidr} dev lo")
    else:
        commands.append(f"route add {net.service_cidr} via {net.services_ip} dev eth0")
    await ip_batch(commands, namespace_pid=pid)


class IpPool:
    """The free addresses of one process node's /24 (.1 to .254)."""

    def __init__(self, cidr: str) -> None:
        self.network = ipaddress.IPv4Network(cidr)
        self.used: set[str] = set()

    def take(self) -> str:
        for host in self.network.hosts():
            address = str(host)
            if address not in self.used:
                self.used.add(address)
                return address
        raise NetworkError(f"no free Pod IP left in {self.network}")

    def release(self, address: str) -> None:
        self.used.discard(address)

"""The sandbox's TCP ports (all on 127.0.0.1), checking that they are free, and naming who holds a busy one."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

from raykube.sandbox.errors import PortInUseError

HOST = "127.0.0.1"
DEFAULT_PORT_BASE = 16440


@dataclass(frozen=True)
class Ports:
    """One port per listener, all bound to 127.0.0.1."""

    etcd: int
    etcd_peer: int
    apiserver: int
    kube_controller_manager: int
    kube_scheduler: int
    kwok: int

    @classmethod
    def from_base(cls, base: int = DEFAULT_PORT_BASE) -> Ports:
        """Seven consecutive ports from ``base``: etcd, etcd peer, (spare), API server, KCM, scheduler, kwok."""
        if not 1024 <= base <= 65535 - 7:
            raise ValueError(f"--port-base must be between 1024 and {65535 - 7}, got {base}")
        return cls(base, base + 1, base + 3, base + 4, base + 5, base + 6)

    @classmethod
    def free(cls) -> Ports:
        """Seven consecutive free ports outside the kernel's ephemeral range (for sandboxes that must not collide
        with anything, such as the tests'). Outside that range no outgoing connection can take one of them between
        this check and the moment the components bind them."""
        low, high = ephemeral_port_range()
        span = (10000, low - 8) if low > 11000 else (high + 1, 65535 - 8)
        chooser = random.SystemRandom()
        for _ in range(500):
            base = chooser.randrange(*span)
            if all(port_is_free(base + offset) for offset in range(7)):
                return cls.from_base(base)
        raise RuntimeError(f"found no seven consecutive free ports in {span[0]}-{span[1]}")

    def by_component(self) -> dict[str, int]:
        return {name.replace("_", "-"): port for name, port in asdict(self).items()}


def ephemeral_port_range() -> tuple[int, int]:
    """The range the kernel picks local ports of outgoing connections from (Linux default 32768-60999)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def port_is_free(port: int, host: str = HOST) -> bool:
    """Whether a listener could bind ``host:port`` now (SO_REUSEADDR, as Go's listeners use it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes of TCP listeners on ``port`` (any address, IPv4 or IPv6), from /proc/net/tcp{,6}."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A is TCP_LISTEN
                inodes.add(inode)
    return inodes


def process_description(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"pid {pid}"
    command = " ".join(a.decode(errors="replace") for a in argv if a)
    if len(command) > 160:
        command = command[:157] + "..."
    return f"pid {pid} ({command})"


def port_holder(port: int) -> str:
    """Who listens on ``port``: "pid 123 (command line)", or the best we can say when /proc hides it."""
    inodes = _listening_inodes(port)
    if not inodes:
        return "another socket (no listener found in /proc/net/tcp; a connection may still hold the port)"
    targets = {f"socket:[{inode}]" for inode in inodes}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in targets:
                        return process_description(int(entry.name))
    return "a process this user cannot inspect (another user's? try `sudo ss -ltnp`)"


def check_free(ports: Ports) -> None:
    """Raise :class:`PortInUseError` for the first busy port, naming the component and the holder."""
    for component, port in ports.by_component().items():
        if not port_is_free(port):
            raise PortInUseError(port, component, port_holder(port))


def _socket_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def _decode_address(hex_address: str) -> str:
    if len(hex_address) == 8:  # IPv4, little-endian
        return socket.inet_ntop(socket.AF_INET, bytes.fromhex(hex_address)[::-1])
    raw = bytes.fromhex(hex_address)  # IPv6: four little-endian 32-bit words
    return socket.inet_ntop(socket.AF_INET6, b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4)))


def listeners(pid: int) -> list[tuple[str, int]]:
    """The TCP addresses that process ``pid`` listens on, as ``(address, port)``."""
    inodes = _socket_inodes(pid)
    found: list[tuple[str, int]] = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    address, port = fields[1].rsplit(":", 1)
                    found.append((_decode_address(address), int(port, 16)))
    return sorted(set(found))

"""Services for process-node Pods: the name table behind cluster DNS, and a ClusterIP proxy.

kube-proxy would program iptables in the host's network namespace (and this machine may have no iptables at all);
the process runtime instead makes the whole service range local to its services sandbox and runs a userspace TCP
proxy there: one listener per ``ClusterIP:port``, each connection forwarded to a ready endpoint of the Service
(round robin over its EndpointSlices), or for ``default/kubernetes`` to the API server on 127.0.0.1. UDP ClusterIP
ports are not proxied (cluster DNS answers on its own address).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from raykube.kube import objects
from raykube.sandbox.kubelet.dns import ZONE, pod_address

log = logging.getLogger("raykube.sandbox.kubelet.services")

Key = tuple[str, str]
SocketFactory = Callable[[str, int], Awaitable[socket.socket]]


class ServiceTable:
    """Services and EndpointSlices of the whole cluster, as the informers see them (their objects: read-only)."""

    def __init__(self) -> None:
        self.services: dict[Key, Mapping[str, Any]] = {}
        self.slices: dict[Key, Mapping[str, Any]] = {}
        self.changed = asyncio.Event()

    @staticmethod
    def _track(
        table: dict[Key, Mapping[str, Any]], old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
    ) -> None:
        if new is not None:
            table[objects.key(new)] = new
        elif old is not None:
            table.pop(objects.key(old), None)

    def on_service(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """Informer handler for Services."""
        self._track(self.services, old, new)
        self.changed.set()

    def on_slice(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        """Informer handler for EndpointSlices."""
        self._track(self.slices, old, new)
        self.changed.set()

    def slices_of(self, namespace: str, service: str) -> list[Mapping[str, Any]]:
        return [
            s
            for (ns, _), s in self.slices.items()
            if ns == namespace
            and ((s.get("metadata") or {}).get("labels") or {}).get("kubernetes.io/service-name") == service
        ]

    def endpoints(self, namespace: str, service: str, *, include_not_ready: bool = False) -> list[dict[str, Any]]:
        found = []
        for item in self.slices_of(namespace, service):
            if item.get("addressType", "IPv4") != "IPv4":
                continue
            for endpoint in item.get("endpoints") or []:
                conditions = endpoint.get("conditions") or {}
                ready = conditions.get("ready") is not False
                if ready or include_not_ready or conditions.get("serving"):
                    found.append(endpoint)
        return found

    def resolve(self, name: str) -> list[str] | None:  # noqa: PLR0911 - one answer per kind of name
        """The A records of ``name`` (None: no such name), as CoreDNS's kubernetes plugin answers them."""
        name = name.rstrip(".").lower()
        if not name.endswith("." + ZONE):
            return None
        labels = name[: -len(ZONE) - 1].split(".")
        if len(labels) == 3 and labels[2] == "pod":
            return pod_address(name)
        if len(labels) not in (3, 4) or labels[-1] != "svc":
            return None
        if len(labels) == 3:
            service_name, namespace = labels[0], labels[1]
            hostname = None
        else:
            hostname, service_name, namespace = labels[0], labels[1], labels[2]
        service = self.services.get((namespace, service_name))
        if service is None:
            return None
        spec = service.get("spec") or {}
        cluster_ip = spec.get("clusterIP")
        if hostname is None and cluster_ip and cluster_ip != "None":
            return [cluster_ip]
        publish_all = bool(spec.get("publishNotReadyAddresses"))
        addresses: list[str] = []
        for endpoint in self.endpoints(namespace, service_name, include_not_ready=publish_all):
            if hostname is not None and endpoint.get("hostname") != hostname:
                continue
            addresses.extend(endpoint.get("addresses") or [])
        if hostname is not None and not addresses:
            return None
        return sorted(set(addresses))

    def upstreams(self, namespace: str, service: str, port: Mapping[str, Any]) -> list[tuple[str, int]]:
        """Where a connection to ``port`` of the Service may go: (ready endpoint IP, endpoint port)."""
        found: list[tuple[str, int]] = []
        for item in self.slices_of(namespace, service):
            ports = [p for p in item.get("ports") or [] if (p.get("name") or "") == (port.get("name") or "")]
            if not ports or ports[0].get("port") is None:
                continue
            for endpoint in item.get("endpoints") or []:
                if (endpoint.get("conditions") or {}).get("ready") is False:
                    continue
                found.extend((address, int(ports[0]["port"])) for address in endpoint.get("addresses") or [])
        return sorted(set(found))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()


class ClusterIpProxy:
    """One TCP listener per ClusterIP port inside the services sandbox, kept in step with the Services."""

    def __init__(
        self, table: ServiceTable, make_socket: SocketFactory, apiserver: tuple[str, int], dns_ip: str
    ) -> None:
        self.table = table
        self.dns_ip = dns_ip  # served by the DNS server itself, not proxied
        self.make_socket = make_socket
        self.apiserver = apiserver
        self.listeners: dict[tuple[str, int], tuple[asyncio.Server, Key, dict[str, Any]]] = {}
        self._round_robin = itertools.count()

    def wanted(self) -> dict[tuple[str, int], tuple[Key, dict[str, Any]]]:
        wanted = {}
        for key, service in self.table.services.items():
            spec = service.get("spec") or {}
            ip = spec.get("clusterIP")
            if not ip or ip in ("None", self.dns_ip):
                continue
            for port in spec.get("ports") or []:
                if (port.get("protocol") or "TCP") == "TCP":
                    wanted[(ip, int(port["port"]))] = (key, port)
        return wanted

    async def sync(self) -> None:
        wanted = self.wanted()
        for address in set(self.listeners) - set(wanted):
            server, _, _ = self.listeners.pop(address)
            server.close()
        for address, (key, port) in wanted.items():
            if address in self.listeners:
                server, _, _ = self.listeners[address]
                self.listeners[address] = (server, key, port)
                continue
            try:
                sock = await self.make_socket(*address)
            except OSError as exc:
                log.warning("cannot listen on ClusterIP %s:%d: %s", *address, exc)
                continue
            server = await asyncio.start_server(functools.partial(self._serve, address), sock=sock)
            self.listeners[address] = (server, key, port)

    async def _serve(
        self, address: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        entry = self.listeners.get(address)
        if entry is None:
            writer.close()
            return
        _, (namespace, name), port = entry
        if (namespace, name) == ("default", "kubernetes"):
            targets = [self.apiserver]
        else:
            targets = self.table.upstreams(namespace, name, port)
        if not targets:
            writer.close()  # a kube-proxy would REJECT: no endpoints
            return
        start = next(self._round_robin)
        upstream = None
        for offset in range(len(targets)):
            host, target_port = targets[(start + offset) % len(targets)]
            try:
                upstream = await asyncio.wait_for(asyncio.open_connection(host, target_port), 5)
                break
            except (OSError, TimeoutError):
                continue
        if upstream is None:
            writer.close()
            return
        up_reader, up_writer = upstream
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()
            writer.close()

    async def close(self) -> None:
        for server, _, _ in self.listeners.values():
            server.close()
        self.listeners.clear()

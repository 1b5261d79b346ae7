"""Cluster DNS for process-node Pods: ``<svc>.<ns>.svc.cluster.local`` answered from Services and EndpointSlices.

A small authoritative server for ``cluster.local`` only (what CoreDNS's ``kubernetes`` plugin answers, minus SRV):

* ``<svc>.<ns>.svc.cluster.local`` -> the ClusterIP, or for a headless Service the addresses of its ready
  endpoints (all endpoints with ``publishNotReadyAddresses``);
* ``<hostname>.<svc>.<ns>.svc.cluster.local`` -> that endpoint of a headless Service;
* ``<a-b-c-d>.<ns>.pod.cluster.local`` -> ``a.b.c.d``.

Other names get NXDOMAIN at once: there is no upstream resolver, because a Pod's traffic never leaves the machine.
It listens on UDP and TCP port 53 of the DNS ClusterIP inside the services sandbox (see ``network.py``), which is
what every Pod's ``/etc/resolv.conf`` names, so Ray's gRPC resolver (c-ares, which reads ``resolv.conf`` and ignores
``/etc/hosts``) finds the head Service without special environment variables.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

log = logging.getLogger("raykube.sandbox.kubelet.dns")

TYPE_A = 1
TYPE_AAAA = 28
CLASS_IN = 1
NOERROR = 0
FORMERR = 1
NXDOMAIN = 3
NOTIMP = 4
TTL = 5
UDP_LIMIT = 512
ZONE = "cluster.local"


@dataclass(frozen=True)
class Question:
    name: str
    qtype: int
    qclass: int
    end: int  # offset just past the question


def parse_question(packet: bytes) -> Question:
    if len(packet) < 12:
        raise ValueError("short packet")
    offset = 12
    labels = []
    while True:
        if offset >= len(packet):
            raise ValueError("truncated name")
        length = packet[offset]
        offset += 1
        if length == 0:
            break
        if length & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(packet[offset : offset + length].decode("ascii", errors="replace"))
        offset += length
    if offset + 4 > len(packet):
        raise ValueError("truncated question")
    qtype, qclass = struct.unpack("!HH", packet[offset : offset + 4])
    return Question(".".join(labels).lower(), qtype, qclass, offset + 4)


def build_response(packet: bytes, question: Question, rcode: int, addresses: list[str], *, limit: int | None) -> bytes:
    (query_id, flags) = struct.unpack("!HH", packet[:4])
    recursion_desired = flags & 0x0100
    answers = b"".join(
        struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, TTL, 4) + ipaddress.IPv4Address(address).packed
        for address in addresses
    )
    truncated = 0
    count = len(addresses)
    header_question = packet[12 : question.end]
    if limit is not None and 12 + len(header_question) + len(answers) > limit:
        fit = max(0, (limit - 12 - len(header_question)) // 16)
        answers, count, truncated = answers[: fit * 16], fit, 0x0200
    response_flags = 0x8000 | 0x0400 | truncated | recursion_desired | (rcode & 0xF)  # QR, AA
    header = struct.pack("!HHHHHH", query_id, response_flags, 1, count, 0, 0)
    return header + header_question + answers


Resolver = Callable[[str], list[str] | None]  # name -> addresses; None: no such name


def answer(packet: bytes, resolve: Resolver, *, limit: int | None) -> bytes | None:
    try:
        question = parse_question(packet)
    except ValueError:
        if len(packet) >= 12:
            query_id = struct.unpack("!H", packet[:2])[0]
            return struct.pack("!HHHHHH", query_id, 0x8000 | FORMERR, 0, 0, 0, 0)
        return None
    if question.qclass != CLASS_IN:
        return build_response(packet, question, NOTIMP, [], limit=limit)
    addresses = resolve(question.name)
    if addresses is None:
        return build_response(packet, question, NXDOMAIN, [], limit=limit)
    if question.qtype != TYPE_A:  # the name exists but has no records of that type (AAAA, SRV, ...)
        return build_response(packet, question, NOERROR, [], limit=limit)
    return build_response(packet, question, NOERROR, addresses, limit=limit)


def pod_address(name: str) -> list[str] | None:
    """``10-244-241-2.<ns>.pod.cluster.local`` -> ["10.244.241.2"] (CoreDNS's ``pods insecure``)."""
    labels = name.split(".")
    if len(labels) != 5 or labels[2] != "pod":
        return None
    try:
        return [str(ipaddress.IPv4Address(labels[0].replace("-", ".")))]
    except ValueError:
        return None


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        response = answer(data, self.resolve, limit=UDP_LIMIT)
        if response is not None and self.transport is not None:
            self.transport.sendto(response, addr)


class DnsServer:
    """Serves ``resolve`` on an already bound UDP socket and a listening TCP socket."""

    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.Server | None = None

    async def start(self, udp: socket.socket, tcp: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(lambda: _Udp(self.resolve), sock=udp)
        self._udp = transport
        self._tcp = await asyncio.start_server(self._serve_tcp, sock=tcp)

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack("!H", await reader.readexactly(2))[0]
                response = answer(await reader.readexactly(size), self.resolve, limit=None)
                if response is None:
                    break
                writer.write(struct.pack("!H", len(response)) + response)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        if self._udp is not None:
            self._udp.close()
        if self._tcp is not None:
            self._tcp.close()
            await self._tcp.wait_closed()

"""Cluster DNS of the process runtime: the wire format, and names answered from Services and EndpointSlices."""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Any

from raykube.sandbox.kubelet.dns import NXDOMAIN, TYPE_A, TYPE_AAAA, DnsServer, answer, parse_question
from raykube.sandbox.kubelet.services import ServiceTable


def query(name: str, qtype: int = TYPE_A, query_id: int = 0x1234) -> bytes:
    labels = b"".join(bytes([len(part)]) + part.encode() for part in name.split("."))
    return struct.pack("!HHHHHH", query_id, 0x0100, 1, 0, 0, 0) + labels + b"\0" + struct.pack("!HH", qtype, 1)


def decode(response: bytes) -> tuple[int, int, list[str]]:
    query_id, flags, _, count, _, _ = struct.unpack("!HHHHHH", response[:12])
    question = parse_question(response)
    offset = question.end
    addresses = []
    for _ in range(count):
        _, rtype, _, _, length = struct.unpack("!HHHIH", response[offset : offset + 12])
        offset += 12
        if rtype == TYPE_A:
            addresses.append(socket.inet_ntoa(response[offset : offset + length]))
        offset += length
    return query_id, flags & 0xF, addresses


def table() -> ServiceTable:
    t = ServiceTable()
    t.on_service(
        "ADDED",
        None,
        {
            "metadata": {"namespace": "ns", "name": "demo-head-svc"},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "ports": [{"port": 6379}]},
        },
    )
    t.on_service(
        "ADDED",
        None,
        {"metadata": {"namespace": "ns", "name": "web"}, "spec": {"clusterIP": "10.96.1.2", "ports": [{"port": 80}]}},
    )
    t.on_service(
        "ADDED",
        None,
        {"metadata": {"namespace": "ns", "name": "strict"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}},
    )

    def endpoints(service: str, *items: tuple[str, bool, str | None]) -> dict[str, Any]:
        return {
            "metadata": {"namespace": "ns", "name": f"{service}-x", "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4",
            "ports": [{"name": "", "port": 6379}],
            "endpoints": [
                {"addresses": [ip], "conditions": {"ready": ready}, **({"hostname": host} if host else {})}
                for ip, ready, host in items
            ],
        }

    t.on_slice("ADDED", None, endpoints("demo-head-svc", ("10.244.241.2", False, "head")))
    t.on_slice("ADDED", None, endpoints("strict", ("10.244.241.3", True, None), ("10.244.241.4", False, None)))
    return t


def test_names_resolve_as_coredns_answers_them() -> None:
    t = table()
    assert t.resolve("demo-head-svc.ns.svc.cluster.local") == ["10.244.241.2"]  # publishNotReadyAddresses
    assert t.resolve("head.demo-head-svc.ns.svc.cluster.local") == ["10.244.241.2"]
    assert t.resolve("web.ns.svc.cluster.local.") == ["10.96.1.2"]
    assert t.resolve("strict.ns.svc.cluster.local") == ["10.244.241.3"]  # only ready endpoints
    assert t.resolve("10-244-241-9.ns.pod.cluster.local") == ["10.244.241.9"]
    assert t.resolve("nope.ns.svc.cluster.local") is None
    assert t.resolve("web.ns.svc.cluster.local.ns.svc.cluster.local") is None  # a search-list miss
    assert t.resolve("example.com") is None


def test_wire_answers() -> None:
    t = table()
    query_id, rcode, addresses = decode(answer(query("web.ns.svc.cluster.local"), t.resolve, limit=512) or b"")
    assert (query_id, rcode, addresses) == (0x1234, 0, ["10.96.1.2"])
    _, rcode, addresses = decode(answer(query("web.ns.svc.cluster.local", TYPE_AAAA), t.resolve, limit=512) or b"")
    assert (rcode, addresses) == (0, [])  # the name exists, without IPv6 records
    _, rcode, _ = decode(answer(query("pypi.org"), t.resolve, limit=512) or b"")
    assert rcode == NXDOMAIN


def test_truncates_over_udp() -> None:
    many = [f"10.244.241.{i}" for i in range(1, 60)]
    response = answer(query("big.ns.svc.cluster.local"), lambda _: many, limit=512) or b""
    assert len(response) <= 512
    assert struct.unpack("!H", response[2:4])[0] & 0x0200  # TC


async def test_server_answers_over_udp_and_tcp_on_loopback() -> None:
    t = table()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    server = DnsServer(t.resolve)
    await server.start(udp, tcp)
    try:
        loop = asyncio.get_running_loop()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
            client.setblocking(False)
            await loop.sock_connect(client, udp.getsockname())
            await loop.sock_sendall(client, query("web.ns.svc.cluster.local"))
            data = await asyncio.wait_for(loop.sock_recv(client, 512), 5)
        assert decode(data)[2] == ["10.96.1.2"]
        reader, writer = await asyncio.open_connection(*tcp.getsockname())
        packet = query("demo-head-svc.ns.svc.cluster.local")
        writer.write(struct.pack("!H", len(packet)) + packet)
        size = struct.unpack("!H", await reader.readexactly(2))[0]
        assert decode(await reader.readexactly(size))[2] == ["10.244.241.2"]
        writer.close()
        await writer.wait_closed()
    finally:
        await server.stop()

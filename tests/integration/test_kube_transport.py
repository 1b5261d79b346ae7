"""kube/transport.py against a real socket: an HTTP server on 127.0.0.1 that misbehaves on purpose.

What callers rely on, through httpx2 on aiohttp and through Direct alike: a stalled watch ends in
``httpx2.ReadTimeout`` (the informer re-watches on it), a body cut short and a refused connection are ``httpx2``
transport errors (the informer and the probes retry on those), a response closed before its end never goes back to
the pool, connections are reused, and gzip bodies decode. Direct also sends the client's credentials, and reads a
token file again when the server answers 401.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from lightkube.config.client_adapter import BearerAuth, BearerTokenFileAuth

from raykube.kube.client import Kube
from raykube.kube.resources import SERVICES
from raykube.kube.transport import AiohttpTransport, Direct

pytestmark = pytest.mark.integration

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.port = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


@asynccontextmanager
async def serving(
    handler: Handler, auth: httpx2.Auth | None = None
) -> AsyncIterator[tuple[Server, httpx2.AsyncClient]]:
    server = Server(handler)
    listener = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    client = httpx2.AsyncClient(
        base_url=f"http://127.0.0.1:{server.port}",
        transport=AiohttpTransport(verify=False, max_connections=4),
        timeout=httpx2.Timeout(5.0),
        auth=auth,
    )
    try:
        yield server, client
    finally:
        await client.aclose()
        listener.close()
        await listener.wait_closed()


async def _request(reader: asyncio.StreamReader) -> bytes:
    """One request's head (the tests send no bodies)."""
    return await reader.readuntil(b"\r\n\r\n")


def _answer(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in (f"Content-Length: {len(body)}", *headers))
    return b"HTTP/1.1 200 OK\r\n" + head.encode() + b"\r\n" + body


def _heads(head: bytes) -> dict[str, str]:
    """A request's header fields by lower-case name, and its request line as ``request``."""
    first, *lines = head.decode("latin-1").split("\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if line)}
    return {**fields, "request": first}


# The servers' behaviours, shared by the tests of both paths (httpx2 on aiohttp, Direct).
def _keep_alive(seen: list[dict[str, str]]) -> Handler:
    """Answer every request on one connection with gzipped JSON, noting each request's head in ``seen``."""

    async def keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            seen.append(_heads(await _request(reader)))
            writer.write(_answer(gzip.compress(b'{"ok": true}'), "Content-Encoding: gzip"))
            await writer.drain()

    return keep_alive


async def _stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A stream that sends two lines and then nothing; ``/gone`` is answered 410 instead."""
    head = await _request(reader)
    if head.startswith(b"GET /gone"):
        writer.write(b'HTTP/1.1 410 Gone\r\nContent-Length: 12\r\n\r\n{"code":410}')
        await writer.drain()
        return
    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n{}\n{}\n\r\n")
    await writer.drain()
    await reader.read()  # until the client gives up


async def _cut(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A body that ends before its Content-Length."""
    await _request(reader)
    writer.write(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial"')
    await writer.drain()


async def _endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """``/watch`` is a stream that never ends; anything else a short answer on a kept-open connection."""
    head = await _request(reader)
    if head.startswith(b"GET /watch"):
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{}\n\r\n")
        await writer.drain()
        await reader.read()
        return
    writer.write(_answer(b"{}"))
    await writer.drain()
    await reader.read()


async def _hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await _request(reader)  # and close without an answer


async def test_connections_are_reused_and_gzip_is_decoded() -> None:
    async with serving(_keep_alive([])) as (server, client):
        for _ in range(3):
            response = await client.get("/api")
            assert response.status_code == 200
            assert response.json() == {"ok": True}
        assert server.connections == 1


async def test_a_stalled_stream_ends_in_read_timeout() -> None:
    async with serving(_stall) as (_, client):
        received: list[bytes] = []

        async def watch() -> None:
            async with client.stream("GET", "/watch", timeout=httpx2.Timeout(5.0, read=0.5)) as response:
                async for chunk in response.aiter_bytes():
                    received.append(chunk)

        with pytest.raises(httpx2.ReadTimeout):
            await watch()
        assert b"".join(received) == b"{}\n{}\n"  # what arrived before the stall was delivered


async def test_a_body_cut_short_is_a_transport_error() -> None:
    async with serving(_cut) as (_, client):
        with pytest.raises(httpx2.TransportError):
            await client.get("/api")


async def test_a_refused_connection_is_a_connect_error() -> None:
    async with serving(lambda reader, writer: _request(reader)) as (server, _):
        port = server.port
    client = httpx2.AsyncClient(transport=AiohttpTransport(verify=False, max_connections=1))
    try:
        with pytest.raises(httpx2.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/api")  # the listener is closed
    finally:
        await client.aclose()


async def test_a_stream_closed_before_its_end_is_not_pooled() -> None:
    async with serving(_endless) as (server, client):
        async with client.stream("GET", "/watch") as response:
            async for _ in response.aiter_bytes():
                break  # the caller stops reading a watch (a cancelled informer)
        assert (await client.get("/api")).status_code == 200
        assert server.connections == 2  # the half-read watch's connection was dropped, not handed out again


async def test_a_connection_closed_unanswered_is_tried_once() -> None:
    async with serving(_hang_up) as (server, client):
        with pytest.raises(httpx2.TransportError):
            await client.get("/api")  # idempotent: aiohttp alone would send it again
        assert server.connections == 1  # retrying is the caller's (its backoff), not the transport's


# ------------------------------------------------------------------------------------------ Direct (the hot path)
@asynccontextmanager
async def direct(handler: Handler, auth: httpx2.Auth | None = None) -> AsyncIterator[tuple[Server, Direct]]:
    async with serving(handler, auth) as (server, client):
        client.headers["User-Agent"] = "raykube-tests"
        transport = AiohttpTransport(verify=False, max_connections=4)
        try:
            yield server, Direct(transport, client, timeout=5.0)
        finally:
            await transport.aclose()


async def test_direct_reuses_connections_decodes_gzip_and_sends_the_clients_headers() -> None:
    seen: list[dict[str, str]] = []
    async with direct(_keep_alive(seen), BearerAuth("t0ken")) as (server, client):
        for _ in range(3):
            reply = await client.request("GET", "/api", params={"limit": 5, "watch": True}, content=None, headers={})
            assert reply.status_code == 200
            assert json.loads(reply.content) == {"ok": True}
        assert server.connections == 1
    assert seen[0]["request"] == "GET /api?limit=5&watch=true HTTP/1.1"  # booleans as httpx2 writes them
    assert seen[0]["authorization"] == "Bearer t0ken"
    assert seen[0]["user-agent"] == "raykube-tests"
    assert seen[0]["accept"] == "application/json"
    assert "gzip" in seen[0]["accept-encoding"]


async def test_direct_reads_a_token_file_again_after_a_401_and_tries_once_more(tmp_path: Path) -> None:
    tokens: list[str] = []

    async def only_good(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            tokens.append(_heads(await _request(reader)).get("authorization", ""))
            if tokens[-1] == "Bearer good":
                writer.write(_answer(b"{}"))
            else:
                writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\n{}")
            await writer.drain()

    token = tmp_path / "token"
    token.write_text("old\n")
    async with direct(only_good, BearerTokenFileAuth(str(token))) as (_, client):
        token.write_text("good\n")  # the kubelet rotated it
        assert (await client.request("GET", "/api", params={}, content=None, headers={})).status_code == 200
        assert tokens == ["Bearer old", "Bearer good"]
        assert (await client.request("GET", "/api", params={}, content=None, headers={})).status_code == 200
        assert tokens[-1] == "Bearer good"  # kept, not read for every request
    async with direct(only_good, BearerAuth("fixed")) as (_, client):
        tokens.clear()
        assert (await client.request("GET", "/api", params={}, content=None, headers={})).status_code == 401
        assert tokens == ["Bearer fixed"]  # a fixed token is not sent again


async def test_direct_a_stalled_stream_ends_in_read_timeout_and_a_refusal_is_read_whole() -> None:
    async with direct(_stall) as (_, client):
        received: list[bytes] = []

        async def watch() -> None:
            async with client.stream("/watch", params={"watch": "true"}, connect=5.0, read=0.5) as (refused, chunks):
                assert refused is None
                async for chunk in chunks:
                    received.append(chunk)

        with pytest.raises(httpx2.ReadTimeout):
            await watch()
        assert b"".join(received) == b"{}\n{}\n"  # what arrived before the stall was delivered
        async with client.stream("/gone", params={}, connect=5.0, read=0.5) as (refused, _):
            assert refused is not None
            assert (refused.status_code, refused.content) == (410, b'{"code":410}')


async def test_direct_transport_errors_are_httpx2_ones() -> None:
    async with direct(_cut) as (server, client):
        with pytest.raises(httpx2.TransportError):
            await client.request("GET", "/api", params={}, content=None, headers={})
        port = server.port
    async with direct(_cut) as (_, client):
        client._base = f"http://127.0.0.1:{port}"  # the first server's listener is closed
        with pytest.raises(httpx2.ConnectError):
            await client.request("GET", "/api", params={}, content=None, headers={})


async def test_direct_a_stream_closed_before_its_end_is_not_pooled_and_nothing_is_retried() -> None:
    async with direct(_endless) as (server, client):
        async with client.stream("/watch", params={}, connect=5.0, read=5.0) as (_, chunks):
            async for _ in chunks:
                break  # the caller stops reading a watch (a cancelled informer)
        assert (await client.request("GET", "/api", params={}, content=None, headers={})).status_code == 200
        assert server.connections == 2  # the half-read watch's connection was dropped, not handed out again

    async with direct(_hang_up) as (server, client):
        with pytest.raises(httpx2.TransportError):
            await client.request("GET", "/api", params={}, content=None, headers={})
        assert server.connections == 1  # retrying is the caller's (its backoff), not the transport's


async def test_kube_send_on_direct_keeps_the_paths_query_and_reads_the_answer_whole() -> None:
    """The dashboard's requests through the API server's proxy: a path with its own query (GetServeDetails'
    ``?api_type=declarative``), sent by Kube.send on Direct, arrives with that query; the answer carries its reason."""
    seen: list[dict[str, str]] = []
    async with direct(_keep_alive(seen)) as (_, client):
        kube = Kube(httpx2.AsyncClient(base_url="http://unused.invalid"), direct=client)
        path = "/api/v1/namespaces/team/services/demo-head-svc:dashboard/proxy/api/serve/applications/"
        reply = await kube.send("get", "GET", SERVICES, f"{path}?api_type=declarative", subresource="proxy")
        assert (reply.status_code, reply.reason_phrase, json.loads(reply.content)) == (200, "OK", {"ok": True})
        await kube.send("get", "GET", SERVICES, path, params={"timeout": None}, subresource="proxy")
    assert [s["request"] for s in seen] == [
        f"GET {path}?api_type=declarative HTTP/1.1",
        f"GET {path} HTTP/1.1",
    ]

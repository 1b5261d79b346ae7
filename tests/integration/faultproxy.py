"""A faulty API server: a small HTTP proxy on 127.0.0.1 between the operator and the sandbox's kube-apiserver.

The operator is given a kubeconfig that points at the proxy (plain HTTP on loopback, no credentials); the proxy sends
each request on to the real API server with the sandbox's admin credentials and streams the answer back (watches
included, chunk by chunk). What it does to each request is :attr:`FaultProxy.fault` (only to the paths that contain
:attr:`FaultProxy.scope`, when set), which a test changes while the operator runs:

* ``None``: pass it through;
* :class:`Throttle`: answer ``429 Too Many Requests`` with ``Retry-After`` (as API Priority and Fairness does);
* :class:`Fail`: answer a 5xx (with ``Retry-After`` when given);
* :class:`Refuse`: close the connection without an answer (a crashed or restarting server);
* :class:`Delay`: wait, then pass it through (a slow server).

:meth:`FaultProxy.cut` also ends every open stream at once (the watches see their connection drop). Every request is
recorded (time, method, path, query, the answer's status, the fault it met), so a test can count what the operator
sent while the server misbehaved: that is how "no hot loop" is measured, not assumed.

No extra argument to kube-apiserver is needed, and nothing leaves loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import yaml

from raykube.kube.client import Kube
from tests import rbac_usage

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade"}


@dataclass(frozen=True)
class Throttle:
    retry_after: int = 1


@dataclass(frozen=True)
class Fail:
    status: int = 503
    retry_after: int | None = None


@dataclass(frozen=True)
class Refuse:
    pass


@dataclass(frozen=True)
class Delay:
    seconds: float


Fault = Throttle | Fail | Refuse | Delay | None


@dataclass(frozen=True)
class Seen:
    at: float  # time.monotonic()
    method: str
    path: str
    query: dict[str, str]
    status: int  # 0: refused, no answer
    fault: str

    @property
    def watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")

    @property
    def write(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE")


@dataclass
class FaultProxy:
    upstream: Kube  # the sandbox's admin client: its connection pool and credentials carry the requests on
    fault: Fault = None
    scope: str = ""  # the fault meets only requests whose path contains this ("" for all), e.g. "/leases/"
    seen: list[Seen] = field(default_factory=list)
    gone: list[float] = field(default_factory=list)  # when a watch answered 410 Gone (an ERROR event in its stream)
    port: int = 0
    _server: asyncio.Server | None = None
    _streams: set[asyncio.StreamWriter] = field(default_factory=set)

    async def start(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def kubeconfig(self, path: Path, namespace: str = "default") -> Path:
        """A kubeconfig for the operator: the proxy's address, no credentials (the proxy adds them)."""
        server = f"http://127.0.0.1:{self.port}"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "faulty", "cluster": {"server": server}}],
            "users": [{"name": "nobody", "user": {}}],
            "contexts": [
                {"name": "faulty", "context": {"cluster": "faulty", "user": "nobody", "namespace": namespace}}
            ],
            "current-context": "faulty",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def cut(self) -> None:
        """End every open connection now (watches included)."""
        for writer in list(self._streams):
            writer.transport.abort()
        self._streams.clear()

    def since(self, start: float, end: float | None = None) -> list[Seen]:
        return [s for s in self.seen if s.at >= start and (end is None or s.at < end)]

    # ------------------------------------------------------------------------------------------------ serving
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._streams.add(writer)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, httpx2.HTTPError):
            pass  # the client or the API server went away: so does this connection
        finally:
            self._streams.discard(writer)
            writer.transport.abort()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, _ = request_line.split(" ", 2)
        headers = {}
        for line in header_lines:
            if ":" in line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length") or 0))
        url = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        fault = self.fault if self.scope in url.path else None

        def record(status: int) -> None:
            self.seen.append(Seen(time.monotonic(), method, url.path, query, status, type(fault).__name__))
            if 200 <= status < 300:
                rbac_usage.count_request(method, url.path, query)  # what the operator process was allowed to do

        if isinstance(fault, Refuse):
            record(0)
            return False
        if isinstance(fault, Throttle | Fail):
            status = 429 if isinstance(fault, Throttle) else fault.status
            retry = fault.retry_after
            reason = "TooManyRequests" if status == 429 else "InternalError"
            payload = json.dumps(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "code": status,
                    "reason": reason,
                    "message": f"the fault proxy answers {status}",
                }
            ).encode()
            extra = f"Retry-After: {retry}\r\n" if retry is not None else ""
            writer.write(
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                f"{extra}\r\n".encode()
                + payload
            )
            await writer.drain()
            record(status)
            return True
        if isinstance(fault, Delay):
            await asyncio.sleep(fault.seconds)
        sent = {k: v for k, v in headers.items() if k not in _HOP_BY_HOP and k not in ("host", "authorization")}
        timeout = None if query.get("watch") in ("true", "1") else 60.0
        async with self.upstream.http.stream(
            method, url.path, params=query, content=body or None, headers=sent, timeout=timeout
        ) as response:
            record(response.status_code)
            lines = [f"HTTP/1.1 {response.status_code} {response.reason_phrase}"]
            lines += [f"{k}: {v}" for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP]
            lines.append("Transfer-Encoding: chunked")
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            watching = query.get("watch") in ("true", "1")
            async for chunk in response.aiter_raw():
                if watching and b'"type":"ERROR"' in chunk and b'"code":410' in chunk:
                    self.gone.append(time.monotonic())
                if chunk:
                    writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return True


@contextlib.asynccontextmanager
async def fault_proxy(kubeconfig: Path) -> AsyncIterator[FaultProxy]:
    """A running proxy to the API server of ``kubeconfig`` (stopped, its connections cut, on exit)."""
    upstream = Kube.from_config(kubeconfig, qps=10_000, burst=10_000, timeout=60.0)
    proxy = await FaultProxy(upstream).start()
    try:
        yield proxy
    finally:
        await proxy.stop()
        await upstream.close()

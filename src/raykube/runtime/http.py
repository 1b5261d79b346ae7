"""A small HTTP/1.1 server for the operator's health probes and metrics (GET only, one response per connection).

KubeRay serves ``/healthz`` and ``/readyz`` on ``--health-probe-bind-address`` (default ``:8082``) and ``/metrics``
on ``--metrics-addr`` (default ``:8080``). Addresses are Go style: ``:8080`` means every interface (as in a Pod),
``127.0.0.1:8080`` one, and port ``0`` lets the kernel choose (the bound port is in :attr:`HttpServer.port`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger(__name__)

Handler = Callable[[], Awaitable[tuple[int, str, bytes]]]  # -> (status, content type, body)
_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error", 503: "Unavailable"}


def split_address(address: str) -> tuple[str | None, int]:
    """``:8080`` -> (None, 8080) for all interfaces; ``127.0.0.1:8080`` -> ("127.0.0.1", 8080)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address {address!r} must look like HOST:PORT or :PORT")
    return (host.strip("[]") or None), int(port)


class HttpServer:
    def __init__(self, address: str, routes: Mapping[str, Handler]) -> None:
        self.host, self.port = split_address(address)
        self.routes = dict(routes)
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("serving %s on %s:%d", ", ".join(sorted(self.routes)), self.host or "*", self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, _, rest = request.decode("latin-1").partition(" ")
            path = rest.partition(" ")[0].partition("?")[0]
            handler = self.routes.get(path)
            if method not in ("GET", "HEAD"):
                status, kind, body = 405, "text/plain", b"method not allowed\n"
            elif handler is None:
                status, kind, body = 404, "text/plain", b"not found\n"
            else:
                try:
                    status, kind, body = await handler()
                except Exception:
                    log.exception("handler for %s failed", path)
                    status, kind, body = 500, "text/plain", b"internal error\n"
            head = (
                f"HTTP/1.1 {status} {_REASONS.get(status, 'OK')}\r\nContent-Type: {kind}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + (b"" if method == "HEAD" else body))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

"""An httpx2 transport that sends through aiohttp: httpx2's API above, aiohttp's connection pool and C HTTP parser
below.

Why: the client's own CPU is the operator's largest cost at scale, and most of it was the HTTP stack under httpx2
(httpcore2, anyio, h11). ``benchmarks/kube_client.py`` measures it: on the sandbox, 2,000 creates and 2,000 patches at
10 in flight, with a watch taking their 4,000 events, cost the client a median 1.11 ms of CPU per request through
httpx2's default transport and 0.65 ms through this one. The split is the ``httpx-aiohttp`` package's (httpx for
the high-level features, aiohttp for the socket-level messaging), written here for httpx2 in a few lines.

What stays httpx2's: the client API, base URL, auth, headers, cookies, redirects (not followed), content decoding
(gzip from the API server) and the exceptions callers catch, which this module maps aiohttp's onto. What aiohttp
does: connections (a pool of at most ``max_connections``, idle ones closed after ``IDLE_SECONDS``), TLS, HTTP/1.1
framing and chunked bodies (a watch is one endless chunked body). A request that upgrades the connection (the
WebSocket of ``pods/exec``) goes through httpx2's own transport, which hands the upgraded stream back to httpx2.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import aiohttp
import httpx2

# client-go's transport closes a connection idle this long (net/http's DefaultTransport IdleConnTimeout, which
# k8s.io/apimachinery/pkg/util/net SetTransportDefaults keeps); aiohttp's own default is 15 s.
IDLE_SECONDS = 90.0

# Hop-by-hop and framing headers: aiohttp writes its own from the URL and the body.
_NOT_FORWARDED = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection"})


@contextmanager
def _mapped(request: httpx2.Request) -> Iterator[None]:
    """aiohttp's exceptions as the httpx2 ones callers already handle (the informer, the probes, the benchmark)."""
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx2.ConnectTimeout(str(exc) or "connect timed out", request=request) from exc
    except TimeoutError as exc:  # aiohttp's SocketTimeoutError (sock_read) and pool waits
        raise httpx2.ReadTimeout(str(exc) or "read timed out", request=request) from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx2.ConnectError(str(exc), request=request) from exc
    except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
        raise httpx2.RemoteProtocolError(str(exc), request=request) from exc
    except aiohttp.ClientError as exc:
        raise httpx2.ReadError(str(exc) or type(exc).__name__, request=request) from exc


class _Body(httpx2.AsyncByteStream):
    """A response body as it arrives; closing it before its end drops the connection instead of pooling it."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx2.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped(self._request):
            async for chunk in self._response.content.iter_any():
                yield chunk

    async def aclose(self) -> None:
        self._response.release()  # back to the pool when read to its end, else closed


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """httpx2 requests sent by one aiohttp session, created on first use in the running event loop."""

    def __init__(self, *, verify: ssl.SSLContext | bool, max_connections: int) -> None:
        self._ssl: ssl.SSLContext | bool = verify
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._upgrades = httpx2.AsyncHTTPTransport(verify=verify, trust_env=False)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(
                ssl=self._ssl, limit=self._max_connections, limit_per_host=0, keepalive_timeout=IDLE_SECONDS
            )
            # No cookies (httpx2 keeps them), no decompression (httpx2 decodes by Content-Encoding), no proxies from
            # the environment (the API server is reached directly).
            session = aiohttp.ClientSession(
                connector=connector, cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False, trust_env=False
            )
            # aiohttp sends an idempotent request again, once, when its connection closes unanswered. Retrying is
            # the caller's: the informer backs off, a reconcile is requeued, and client-go retries only on
            # Retry-After; each try is one request at the API server (tests/integration/test_api_faults.py counts
            # them). aiohttp's own test client turns it off the same way (aiohttp/test_utils.py).
            session._retry_connection = False
            self._session = session
        return self._session

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if "upgrade" in request.headers:
            return await self._upgrades.handle_async_request(request)
        timeouts = request.extensions.get("timeout") or {}
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=timeouts.get("pool"),
            sock_connect=timeouts.get("connect"),
            sock_read=timeouts.get("read"),
        )
        headers = [
            (key.decode("latin-1"), value.decode("latin-1"))
            for key, value in request.headers.raw
            if key.lower() not in _NOT_FORWARDED
        ]
        content = await request.aread()
        with _mapped(request):
            response = await self._open().request(
                request.method,
                str(request.url),
                headers=headers,
                data=content or None,
                allow_redirects=False,
                timeout=timeout,
            )
        return httpx2.Response(
            response.status,
            headers=list(response.raw_headers),
            stream=_Body(response, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode("latin-1")},
        )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
        await self._upgrades.aclose()

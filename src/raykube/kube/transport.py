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

:class:`Direct` goes one step further for the client's hot path (JSON requests and watches): it sends on the same
aiohttp session without building httpx2's Request and Response objects at all, which cost as much client CPU again as
aiohttp's own work (``benchmarks/kube_client.py``, ``direct`` against ``aiohttp``). Everything else (exec, logs, the
API server's proxy, a kubeconfig whose credentials are not a token or a client certificate) stays on httpx2.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import aiohttp
import httpx2
from lightkube.config.client_adapter import BearerAuth, BearerTokenFileAuth

# client-go's transport closes a connection idle this long (net/http's DefaultTransport IdleConnTimeout, which
# k8s.io/apimachinery/pkg/util/net SetTransportDefaults keeps); aiohttp's own default is 15 s.
IDLE_SECONDS = 90.0

# Hop-by-hop and framing headers: aiohttp writes its own from the URL and the body.
_NOT_FORWARDED = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection"})


@contextmanager
def _mapped(request: httpx2.Request | None) -> Iterator[None]:
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

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _chunks(self._response, self._request)

    async def aclose(self) -> None:
        self._response.release()  # back to the pool when read to its end, else closed


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """httpx2 requests sent by one aiohttp session, created on first use in the running event loop."""

    def __init__(self, *, verify: ssl.SSLContext | bool, max_connections: int) -> None:
        self._ssl: ssl.SSLContext | bool = verify
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._upgrades = httpx2.AsyncHTTPTransport(verify=verify, trust_env=False)

    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session every request goes through (:class:`Direct`'s too)."""
        return self._open()

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


@dataclass(frozen=True)
class Reply:
    """A whole answer read by :class:`Direct`: what the client's callers read of an ``httpx2.Response``."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    @property
    def reason_phrase(self) -> str:
        """The status's standard phrase (``Not Found``), as httpx2 gives it; empty for a code without one."""
        try:
            return HTTPStatus(self.status_code).phrase
        except ValueError:
            return ""


def _query(params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Query parameters as httpx2 writes them: booleans as ``true``/``false`` (yarl refuses them)."""
    if not params:
        return None
    return {k: ("true" if v is True else "false" if v is False else v) for k, v in params.items()}


# The credentials Direct sends itself: a bearer token, fixed or read from a file (in a Pod: the ServiceAccount's,
# which the kubelet rotates; lightkube reads it again when the API server answers 401, as client-go's does). A client
# certificate is in the TLS context already. Any other httpx2.Auth keeps its requests on httpx2.
_HEADER_AUTHS = (BearerAuth, BearerTokenFileAuth)


class Direct:
    """JSON requests and watch streams sent straight on an :class:`AiohttpTransport`'s session, with the httpx2
    client's base URL, User-Agent and credentials (:meth:`supports` says whether it can send them)."""

    def __init__(self, transport: AiohttpTransport, client: httpx2.AsyncClient, timeout: float) -> None:
        self._transport = transport
        self._base = str(client.base_url).rstrip("/")
        self._auth = client.auth if isinstance(client.auth, _HEADER_AUTHS) else None
        self._headers: dict[str, str] = {
            "User-Agent": client.headers.get("User-Agent", "raykube"),
            "Accept": "application/json",
            "Accept-Encoding": "gzip",  # as client-go's transport asks; aiohttp decodes it
        }
        if self._auth is not None:
            self._authorize(refused=False)
        self._timeout = aiohttp.ClientTimeout(total=None, connect=timeout, sock_connect=timeout, sock_read=timeout)

    @staticmethod
    def supports(auth: httpx2.Auth | None) -> bool:
        """Whether Direct can send these credentials itself (else the client's requests all stay on httpx2)."""
        return auth is None or isinstance(auth, _HEADER_AUTHS)

    def _authorize(self, *, refused: bool) -> bool:
        """Take the Authorization header from the auth's own flow; after a 401 (``refused``), from its second step,
        where a token file is read again. True when the header changed."""
        if self._auth is None:
            return False
        probe = httpx2.Request("GET", self._base)
        flow = self._auth.auth_flow(probe)
        next(flow)
        if refused:
            try:
                flow.send(httpx2.Response(401, request=probe))
            except StopIteration:
                return False  # a fixed token: nothing to read again
        before = self._headers.get("Authorization")
        self._headers["Authorization"] = probe.headers["Authorization"]
        return self._headers["Authorization"] != before

    def _send_headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        return {**self._headers, **extra} if extra else self._headers

    async def request(
        self, method: str, path: str, *, params: Mapping[str, Any], content: bytes | None, headers: Mapping[str, str]
    ) -> Reply:
        """Send one request and read its whole answer; one more try with a token read again after a 401."""
        reply = await self._once(method, path, params, content, headers)
        if reply.status_code == 401 and self._authorize(refused=True):
            reply = await self._once(method, path, params, content, headers)
        return reply

    async def _once(
        self, method: str, path: str, params: Mapping[str, Any], content: bytes | None, headers: Mapping[str, str]
    ) -> Reply:
        with _mapped(None):
            async with self._transport.session().request(
                method,
                self._base + path,
                params=_query(params),
                data=content,
                headers=self._send_headers(headers),
                allow_redirects=False,
                timeout=self._timeout,
                auto_decompress=True,
            ) as response:
                return Reply(response.status, response.headers, await response.read())

    @asynccontextmanager
    async def stream(
        self, path: str, *, params: Mapping[str, Any], connect: float, read: float
    ) -> AsyncIterator[tuple[Reply | None, AsyncIterator[bytes]]]:
        """A GET whose body is read as it arrives (a watch): the whole answer when its status is 400 or more (else
        None), and the body's chunks. Leaving the block early closes the connection instead of pooling it."""
        timeout = aiohttp.ClientTimeout(total=None, connect=connect, sock_connect=connect, sock_read=read)
        with _mapped(None):
            response = await self._transport.session().get(
                self._base + path,
                params=_query(params),
                headers=self._headers,
                allow_redirects=False,
                timeout=timeout,
                auto_decompress=True,
            )
        try:
            if response.status >= 400:
                with _mapped(None):
                    content = await response.read()
                yield Reply(response.status, response.headers, content), _chunks(response)
            else:
                yield None, _chunks(response)
        finally:
            response.release()  # back to the pool when read to its end, else closed


async def _chunks(response: aiohttp.ClientResponse, request: httpx2.Request | None = None) -> AsyncIterator[bytes]:
    """A body's chunks as they arrive, aiohttp's errors raised as httpx2's."""
    with _mapped(request):
        async for chunk in response.content.iter_any():
            yield chunk

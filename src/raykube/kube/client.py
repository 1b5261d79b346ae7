"""A small, dict-native asynchronous Kubernetes client: the one every part of raykube talks to the API server with.

Why not lightkube's client: the operator lists and watches thousands of Pods and only ever needs them
as plain JSON (typed models cost decoding time and would drop fields a newer Kubernetes adds), its informers need
explicit control of ``resourceVersion``, bookmarks and 410 handling (lightkube's watch silently restarts without a
relist, which loses deletions), and every request must go through one client-side rate limiter and be counted by
verb and resource. lightkube still does what it is good at: reading kubeconfig / in-cluster config and building the
authenticated ``httpx2`` client this module sends requests with (on aiohttp's connections: transport.py). JSON is
decoded with msgspec, several times faster than the standard library on Pod lists.

What the client uses lives beside it: :mod:`.config` (kubeconfig and in-cluster loading, the connection),
:mod:`.decode` (msgspec decoding, slim watch events, a watch's lines), :mod:`.ratelimit` (the token bucket and
``Retry-After``) and :mod:`.podexec` (the exec streaming protocol); their public names are importable from here too.
What is left, :class:`Kube`, is one unit on purpose: every verb (get, list, watch, create, patch, apply, replace,
delete, exec, logs) goes through the same RBAC check, rate limiter, retry and observer of one client, and splitting
the verbs apart would only scatter that one path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx2
import msgspec
from httpx2.websockets import WebSocketDisconnect, WebSocketUpgradeError

from raykube.kube.config import connect
from raykube.kube.decode import _decode, _decode_head_plain, _encode, _lines, _slim_event
from raykube.kube.errors import ApiError, OutsideRbac
from raykube.kube.podexec import _ERROR, _STDERR, _STDOUT, EXEC_DRAIN_SECONDS, EXEC_PROTOCOLS, ExecResult, exec_status
from raykube.kube.ratelimit import MAX_RETRIES, TokenBucket, retry_after
from raykube.kube.rbac import Rule, allows
from raykube.kube.resources import Resource
from raykube.kube.transport import Direct, Reply

# The API server's /version endpoint, as a "resource" for the rate limiter and the request metrics only.
VERSION_ENDPOINT = Resource("", "", "Version", "version", namespaced=False)

__all__ = [
    "EXEC_DRAIN_SECONDS",
    "EXEC_PROTOCOLS",
    "MAX_RETRIES",
    "PATCH_TYPES",
    "ExecResult",
    "Kube",
    "ListResult",
    "RequestObserver",
    "TokenBucket",
    "WatchEvent",
    "exec_status",
    "retry_after",
]

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


log = logging.getLogger(__name__)
_Answer = TypeVar("_Answer", httpx2.Response, Reply)


class RequestObserver(Protocol):
    """Told about every request (for metrics); ``code`` is 0 when no response came back."""

    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None: ...


@dataclass(frozen=True)
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str


def _upgrade_error(response: httpx2.Response) -> ApiError:
    """The API server's refusal of a WebSocket upgrade: its Status when the body was read, else the code alone."""
    try:
        return _error(response)
    except httpx2.StreamError:
        return ApiError(response.status_code, response.reason_phrase, "the API server refused the exec stream", {})


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED, BOOKMARK
    object: dict[str, Any]


def _outgoing(
    params: Mapping[str, Any] | None, body: Any, content_type: str, headers: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], bytes | None, dict[str, str]]:
    """A request's query (None values left out), its body as bytes (JSON unless bytes already) and its headers
    (``Content-Type`` with a body)."""
    content = None if body is None else (body if isinstance(body, bytes) else _encode(body))
    sent = dict(headers or {})
    if content is not None:
        sent["Content-Type"] = content_type
    return {k: v for k, v in (params or {}).items() if v is not None}, content, sent


def _error(response: httpx2.Response | Reply) -> ApiError:
    try:
        body = _decode(response.content) if response.content else {}
    except msgspec.DecodeError:
        body = {"message": response.text[:500]}
    if not isinstance(body, dict):
        body = {"message": str(body)[:500]}
    error = ApiError(response.status_code, str(body.get("reason", "")), str(body.get("message", "")), body)
    error.retry_after = retry_after(response)
    return error


class Kube:
    """JSON in, JSON out; every call rate limited and observed."""

    def __init__(
        self,
        http: httpx2.AsyncClient,
        *,
        qps: float = 100.0,
        burst: int = 200,
        observer: RequestObserver | None = None,
        field_manager: str = "raykube-operator",
        rules: Sequence[Rule] | None = None,
        namespace: str = "default",
        per_resource: bool = False,
        direct: Direct | None = None,
    ) -> None:
        self.http = http
        # JSON requests and watches straight on aiohttp (transport.py), when the client was built on it
        self.direct = direct
        self.qps = qps
        self.burst = burst
        TokenBucket.check(qps, burst)  # now, not at the first request on some resource
        # client-go's clientset shares one token bucket between all its resources; controller-runtime's client (so
        # KubeRay's --qps/--burst) builds a REST client, and so a bucket, per resource type: ``per_resource``.
        self.per_resource = per_resource
        self._buckets: dict[tuple[str, str, str], TokenBucket] = {}
        self.observer = observer
        self.field_manager = field_manager
        self.rules = rules  # when set, refuse calls these RBAC rules do not allow (tests run the operator so)
        self.namespace = namespace  # the kubeconfig context's namespace (in a Pod: its own), as kubectl defaults to

    def _check(self, verb: str, res: Resource, subresource: str | None) -> None:
        if self.rules is None:
            return
        resource = f"{res.plural}/{subresource}" if subresource else res.plural
        if not allows(self.rules, verb, res.group, resource):
            raise OutsideRbac(
                f"{self.field_manager} called {verb} on {resource} (API group {res.group!r}), which its RBAC rules "
                "do not allow (for the operator: add the rule to raykube.api.rbac and run `make manifests`)"
            )

    @classmethod
    def from_config(
        cls,
        kubeconfig: Path | None = None,
        *,
        context: str | None = None,
        qps: float = 100.0,
        burst: int = 200,
        observer: RequestObserver | None = None,
        user_agent: str = "raykube-operator",
        timeout: float = 30.0,
        rules: Sequence[Rule] | None = None,
        field_manager: str | None = None,
        per_resource: bool = False,
    ) -> Kube:
        """From a kubeconfig file, else ``$KUBECONFIG`` / ``~/.kube/config``, else the in-cluster ServiceAccount;
        ``context`` (default: the current one) also gives :attr:`namespace`. ``per_resource``: a token bucket of
        ``qps``/``burst`` per resource type (controller-runtime's), else one for the whole client (a clientset's)."""
        connection = connect(kubeconfig, context=context, burst=burst, user_agent=user_agent, timeout=timeout)
        return cls(
            connection.http,
            qps=qps,
            burst=burst,
            observer=observer,
            rules=rules,
            field_manager=field_manager or user_agent,
            namespace=connection.namespace,
            per_resource=per_resource,
            direct=connection.direct,
        )

    def limiter(self, res: Resource) -> TokenBucket:
        """The token bucket a request on ``res`` (or one of its subresources) takes from: the client's only one, or
        with ``per_resource`` the one of ``res``'s group, version and kind, made at the first request on it."""
        key = (res.group, res.version, res.kind) if self.per_resource else ("", "", "")
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(self.qps, self.burst)
        return bucket

    def sibling(self, *, qps: float | None = None, burst: int | None = None) -> Kube:
        """A client on the same connections and credentials with rate limiters of its own (by default the same QPS,
        burst and per-resource choice).

        As controller-runtime, where the event recorder and the leader-election lock each build their own client
        from the manager's rest config, so each gets its own client-go token bucket: KubeRay's Events and Lease
        renewals never wait behind (or slow down) its Pod and status writes. Close only the original.
        """
        return Kube(
            self.http,
            qps=self.qps if qps is None else qps,
            burst=self.burst if burst is None else burst,
            observer=self.observer,
            field_manager=self.field_manager,
            rules=self.rules,
            namespace=self.namespace,
            per_resource=self.per_resource,
            direct=self.direct,
        )

    async def close(self) -> None:
        await self.http.aclose()

    # ------------------------------------------------------------------------------------------------- core
    async def send(
        self,
        verb: str,
        method: str,
        res: Resource,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        subresource: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx2.Response | Reply:
        """One request, checked against the RBAC rules, rate limited and observed; the response whatever its status
        (for the API server's proxy subresources, whose bodies are the proxied service's, not Statuses), read
        whole: straight on aiohttp when the client was built on it (:class:`Reply`), else httpx2's.

        A 429 or 5xx answer with ``Retry-After`` is sent again after that many seconds, up to
        :data:`MAX_RETRIES` times, as client-go does: the server said it did not act and when to come back (API
        Priority and Fairness answers so). Each attempt takes a token from the rate limiter and is observed."""
        self._check(verb, res, subresource)
        query, content, sent = _outgoing(params, body, content_type, headers)
        direct = self.direct
        if direct is not None:
            return await self._retried(
                verb, res, lambda: direct.request(method, path, params=query, content=content, headers=sent)
            )
        # None, not {}, without parameters: httpx2 replaces a path's own query with the params it is given
        # (the dashboard's ``?api_type=declarative`` through the API server's proxy).
        return await self._retried(
            verb,
            res,
            lambda: self.http.request(method, path, params=query or None, content=content, headers=sent or None),
        )

    async def _retried(self, verb: str, res: Resource, once: Callable[[], Awaitable[_Answer]]) -> _Answer:
        """``once()`` rate limited and observed, and sent again while the answer says when to (:meth:`send`)."""
        attempt = 0
        while True:
            await self.limiter(res).acquire()
            started = time.monotonic()
            code = 0
            try:
                response = await once()
                code = response.status_code
            finally:
                if self.observer:
                    self.observer.observe(verb, str(res), code, time.monotonic() - started)
            wait = retry_after(response)
            if wait is None or attempt >= MAX_RETRIES:
                return response
            attempt += 1
            log.info("%s %s: the API server answered %d, retry after %ss (attempt %d)", verb, res, code, wait, attempt)
            await asyncio.sleep(wait)

    async def request(
        self,
        verb: str,
        method: str,
        res: Resource,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        subresource: str | None = None,
        decode: Callable[[bytes], Any] = _decode,
    ) -> Any:
        """:meth:`send`, raising :class:`ApiError` for a status of 400 or more, else the body read by ``decode``."""
        response = await self.send(
            verb, method, res, path, params=params, body=body, content_type=content_type, subresource=subresource
        )
        if response.status_code >= 400:
            raise _error(response)
        return decode(response.content) if response.content else None

    async def server_version(self) -> Any:
        """``GET /version`` (client-go discovery ``ServerVersion``): ``gitVersion`` and the rest. Every client may read
        it (the ``system:public-info-viewer`` ClusterRole), so the RBAC rules this client checks do not govern it."""
        query, content, sent = _outgoing(None, None, "application/json")
        direct = self.direct
        if direct is None:
            response: httpx2.Response | Reply = await self._retried(
                "get", VERSION_ENDPOINT, lambda: self.http.request("GET", "/version", headers=sent or None)
            )
        else:
            response = await self._retried(
                "get",
                VERSION_ENDPOINT,
                lambda: direct.request("GET", "/version", params=query, content=content, headers=sent),
            )
        if response.status_code >= 400:
            raise _error(response)
        return _decode(response.content) if response.content else None

    async def get(
        self, res: Resource, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "get", "GET", res, res.path(namespace, name, subresource), subresource=subresource
        )
        return result

    async def get_or_none(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        try:
            return await self.get(res, name, namespace)
        except ApiError as exc:
            if exc.not_found:
                return None
            raise

    async def list(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        chunk: int = 500,
        keep: Callable[[dict[str, Any]], bool] | None = None,
    ) -> ListResult:
        """Every object, paging with ``limit``/``continue``; the list's resourceVersion for a following watch.

        ``keep``: only the objects it accepts are kept, page by page (what a field selector cannot say, without
        holding the whole list at once)."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        version = ""
        while True:
            page = await self.request(
                "list",
                "GET",
                res,
                res.path(namespace),
                params={
                    "labelSelector": label_selector,
                    "fieldSelector": field_selector,
                    "limit": chunk,
                    "continue": token,
                },
            )
            found = page.get("items") or []
            items.extend(found if keep is None else (item for item in found if keep(item)))
            meta = page.get("metadata") or {}
            version = meta.get("resourceVersion", version)
            token = meta.get("continue")
            if not token:
                return ListResult(items, version)

    async def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int = 300,
        inactivity: float = 90.0,
        opened: Callable[[], None] | None = None,
        managed_fields: bool = True,
    ) -> AsyncIterator[WatchEvent]:
        """Events after ``resource_version``, with bookmarks. Ends when the server closes the watch (after
        ``timeout_seconds``); raises ApiError(410) when the version is too old, and ``httpx2.ReadTimeout`` when
        nothing, not even a bookmark, arrived for ``inactivity`` seconds (the API server bookmarks every minute).
        ``opened`` is called once the server has accepted the watch. Without ``managed_fields`` the objects come
        without metadata.managedFields, decoded faster (an informer's cache drops them anyway)."""
        self._check("watch", res, None)
        await self.limiter(res).acquire()
        params: dict[str, str | int] = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": resource_version,
            "timeoutSeconds": timeout_seconds,
        }
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        started = time.monotonic()
        code = 0
        try:
            async with self._stream(res.path(namespace), params, inactivity) as (refused, chunks):
                code = 200 if refused is None else refused.status_code
                if refused is not None:
                    raise _error(refused)
                if opened is not None:
                    opened()  # the server accepted the watch: events flow from here on
                async for line in _lines(chunks):
                    event = _decode(line) if managed_fields else _slim_event(line, res)
                    kind = event.get("type")
                    obj = event.get("object") or {}
                    if kind == "ERROR":
                        raise ApiError(
                            int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", "")), obj
                        )
                    yield WatchEvent(str(kind), obj)
        finally:
            if self.observer:
                self.observer.observe("watch", str(res), code, time.monotonic() - started)

    @asynccontextmanager
    async def _stream(
        self, path: str, params: Mapping[str, Any], inactivity: float
    ) -> AsyncIterator[tuple[httpx2.Response | Reply | None, AsyncIterator[bytes]]]:
        """A watch's answer: the whole of it when refused (status 400 or more, else None), and its body's chunks."""
        if self.direct is not None:
            async with self.direct.stream(path, params=params, connect=10.0, read=inactivity) as answer:
                yield answer
            return
        timeout = httpx2.Timeout(connect=10.0, read=inactivity, write=10.0, pool=10.0)
        async with self.http.stream("GET", path, params=params, timeout=timeout) as response:
            if response.status_code >= 400:
                await response.aread()
                yield response, response.aiter_bytes()
            else:
                yield None, response.aiter_bytes()

    # ------------------------------------------------------------------------------------------------- writes
    async def create(
        self,
        res: Resource,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        name: str | None = None,
        subresource: str | None = None,
        whole: bool = True,
    ) -> dict[str, Any]:
        """POST ``body``; with ``name`` and ``subresource``, to a subresource (``serviceaccounts/token``). The
        created object, or without ``whole`` only its apiVersion, kind and metadata but managedFields (its name, when
        ``generateName`` chose it): a Pod's answer is then read in a quarter of the time."""
        result: dict[str, Any] = await self.request(
            "create",
            "POST",
            res,
            res.path(namespace, name, subresource),
            body=body,
            subresource=subresource,
            decode=_decode if whole else _decode_head_plain,
        )
        return result

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if patch_type == "apply":
            params = {"fieldManager": field_manager or self.field_manager, "force": "true" if force else None}
        elif field_manager:
            params = {"fieldManager": field_manager}
        result: dict[str, Any] = await self.request(
            "patch",
            "PATCH",
            res,
            res.path(namespace, name, subresource),
            params=params,
            body=patch,
            content_type=PATCH_TYPES[patch_type],
            subresource=subresource,
        )
        return result

    async def apply(
        self, res: Resource, body: Mapping[str, Any], namespace: str | None = None, *, field_manager: str | None = None
    ) -> dict[str, Any]:
        """Server-side apply ``body`` (forced: this manager takes ownership of the fields it sets)."""
        name = str((body.get("metadata") or {}).get("name") or "")
        return await self.patch(res, name, body, namespace, patch_type="apply", field_manager=field_manager, force=True)

    async def replace(
        self,
        res: Resource,
        name: str,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """PUT the whole object; ``metadata.resourceVersion`` in ``body`` makes it conditional (409 if stale)."""
        result: dict[str, Any] = await self.request(
            "update", "PUT", res, res.path(namespace, name, subresource), body=body, subresource=subresource
        )
        return result

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
        grace_period_seconds: int | None = None,
        missing_ok: bool = False,
    ) -> None:
        """Delete one object; ``uid`` deletes only that incarnation (409 if the name now holds another one)."""
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        try:
            await self.request("delete", "DELETE", res, res.path(namespace, name), body=body)
        except ApiError as exc:
            if not (missing_ok and exc.not_found):
                raise

    async def exec(
        self,
        res: Resource,
        name: str,
        namespace: str,
        command: Sequence[str],
        *,
        container: str | None = None,
        timeout: float = 10.0,  # noqa: ASYNC109 - the whole exec's deadline, as in kubectl's --request-timeout
        limit: int = 1 << 20,
    ) -> ExecResult:
        """Run ``command`` in a container of Pod ``name`` (``kubectl exec``), over the API server's WebSocket
        protocol, with no stdin and no TTY; its output (at most ``limit`` bytes of each stream) and exit code.

        Raises :class:`ApiError` when the API server or the container runtime refuses (403 without ``create
        pods/exec``, 404, 400 for a container that is not running) and :class:`TimeoutError` after ``timeout``."""
        self._check("create", res, "exec")
        await self.limiter(res).acquire()
        params: list[tuple[str, str | int | float | bool | None]] = [("command", part) for part in command]
        params += [("stdout", "true"), ("stderr", "true")]
        if container:
            params.append(("container", container))
        started = time.monotonic()
        code = 0
        out = [bytearray(), bytearray()]
        status: bytes | None = None
        try:
            async with asyncio.timeout(timeout):
                try:
                    async with self.http.websocket(
                        res.path(namespace, name, "exec"), subprotocols=EXEC_PROTOCOLS, params=params
                    ) as ws:
                        code = 101
                        # Until the server closes: the Status may come before the last stdout frames (kube-apiserver
                        # forwards each stream of the kubelet's connection on its own), so it does not end the read;
                        # after it, a server that does not close within EXEC_DRAIN_SECONDS is taken as done.
                        while True:
                            try:
                                if status is None:
                                    message = await ws.receive_bytes()
                                else:
                                    try:
                                        async with asyncio.timeout(EXEC_DRAIN_SECONDS):
                                            message = await ws.receive_bytes()
                                    except TimeoutError:
                                        break
                            except WebSocketDisconnect:  # closed: after the Status, the end; without, it was cut
                                break
                            channel, body = message[0], message[1:]
                            if channel in (_STDOUT, _STDERR):
                                buffer = out[channel - 1]
                                buffer += body[: max(0, limit - len(buffer))]
                            elif channel == _ERROR:
                                status = body
                except WebSocketUpgradeError as exc:  # the API server answered with a Status, not a stream
                    code = exc.response.status_code
                    raise _upgrade_error(exc.response) from None
                except BaseExceptionGroup as group:  # the WebSocket's task group wraps what went wrong in it
                    raise group.exceptions[0] if len(group.exceptions) == 1 else group from None
            exit_code = -1 if status is None else exec_status(status)
            raw = bytes(out[0])
            return ExecResult(raw.decode(errors="replace"), out[1].decode(errors="replace"), exit_code, raw)
        finally:
            if self.observer:
                self.observer.observe("create", f"{res}/exec", code, time.monotonic() - started)

    async def logs(
        self,
        res: Resource,
        name: str,
        namespace: str,
        *,
        container: str | None = None,
        previous: bool = False,
        tail_lines: int | None = None,
        limit_bytes: int | None = None,
    ) -> str:
        """A container's log (``kubectl logs``); ``previous`` for the instance before its last restart."""
        response = await self.send(
            "get",
            "GET",
            res,
            res.path(namespace, name, "log"),
            params={
                "container": container,
                "previous": "true" if previous else None,
                "tailLines": tail_lines,
                "limitBytes": limit_bytes,
            },
            subresource="log",
        )
        if response.status_code >= 400:
            raise _error(response)
        return response.content.decode(errors="replace")

    async def delete_collection(self, res: Resource, namespace: str, labels: Mapping[str, str]) -> None:
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        await self.request(
            "deletecollection",
            "DELETE",
            res,
            res.path(namespace),
            params={"labelSelector": selector},
            body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
        )

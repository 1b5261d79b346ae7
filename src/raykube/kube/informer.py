"""Informers: a local, indexed, eventually consistent copy of one resource type, kept current by list + watch.

The loop, as client-go's reflector runs it:

1. **List** (paged) and replace the store; handlers see the difference as ADDED / MODIFIED / DELETED, so a relist
   after a long disconnect still reports what was deleted meanwhile. ``synced`` is set after the first list.
2. **Watch** from the list's resourceVersion with ``allowWatchBookmarks`` (the API server then sends a bookmark about
   every minute, which moves our resourceVersion forward without any object changing) and a server-side timeout
   drawn from 5 to 10 minutes, so the watches of many informers do not all end at once.
3. When the watch ends normally, watch again from the last resourceVersion seen. On **410 Gone** the version has
   been compacted away: relist. When nothing at all, not even a bookmark, arrives for 90 s the connection is presumed
   dead (the "watch silently freezes" failure of long-lived HTTP streams, kopf #614/#957): reconnect from the last
   version. Other errors back off exponentially with jitter (0.2 s to 30 s), never sooner than a ``Retry-After``
   the server sent, and retry; a success (an event, a list, or a watch that stayed open 2 s) resets the delay, and
   when one informer of a client gets through again the others waiting out a back-off try again at once.
4. While a synced informer is cut off, :attr:`Informer.stale` is True (the manager holds reconciles meanwhile).

Handlers are called ``handler(event, old, new)`` with event ADDED / MODIFIED / DELETED. An object whose name now
holds a new incarnation (another uid: deleted and created again while the watch was away) is reported as DELETED
then ADDED, never as a MODIFIED that changes uid, so handlers keyed by uid (the process kubelet's Pod workers) see
the old one end.

Objects are stored without ``metadata.managedFields`` (often half of a Pod's JSON, never read by raykube). Stored
objects are shared with every reader: treat them as read-only. :class:`ObjectCache` answers reads across the
informers of several namespaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import httpx2

from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import Resource

log = logging.getLogger(__name__)

# A watch open this long (seconds) before it failed resets the back-off, as an event would.
HEALTHY_WATCH = 2.0

Handler = Callable[[str, Mapping[str, Any] | None, Mapping[str, Any] | None], None]
Key = objects.Key


class Backoff:
    """Exponential back-off with full jitter between ``base`` and ``cap`` seconds."""

    def __init__(self, base: float = 0.2, cap: float = 30.0) -> None:
        self.base = base
        self.cap = cap
        self.failures = 0

    def next(self) -> float:
        self.failures += 1
        ceiling = min(self.cap, self.base * 2 ** (self.failures - 1))
        return random.uniform(ceiling / 2, ceiling)  # noqa: S311 - jitter, not cryptography

    def reset(self) -> None:
        self.failures = 0


class _Reachability:
    """Per client: whether its informers are getting through, so the others can stop waiting out a back-off once
    the server is back. ``generation`` counts the returns: a lost list or watch followed by a success (at most one
    a second, so a server that flaps cannot make the informers wake each other in a loop)."""

    def __init__(self) -> None:
        self.generation = 0
        self.lost = False
        self._at = 0.0
        self._event = asyncio.Event()

    def failed(self) -> int:
        self.lost = True
        return self.generation

    def succeeded(self) -> None:
        now = time.monotonic()
        if not self.lost or now - self._at < 1.0:
            return
        self.lost = False
        self._at = now
        self.generation += 1
        self._event.set()  # wakes every waiter, even one that has not started waiting on it yet ...
        self._event = asyncio.Event()  # ... and the next wait waits on a fresh one

    async def wait_past(self, generation: int, delay: float) -> None:
        """Sleep ``delay`` seconds, or less if the server came back after ``generation``."""
        deadline = time.monotonic() + delay
        while True:
            event = self._event  # taken before the check: a return after it sets this very event
            remaining = deadline - time.monotonic()
            if self.generation != generation or remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)


_REACHABILITY: weakref.WeakKeyDictionary[Kube, _Reachability] = weakref.WeakKeyDictionary()


def _reachability(kube: Kube) -> _Reachability:
    return _REACHABILITY.setdefault(kube, _Reachability())


_key = objects.key
_version = objects.resource_version


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    (obj.get("metadata") or {}).pop("managedFields", None)
    return obj


class Informer:
    """One resource type (optionally one namespace and a label selector), listed, watched and indexed."""

    def __init__(
        self,
        kube: Kube,
        res: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        index_labels: Sequence[str] = (),
        inactivity: float = 90.0,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.kube = kube
        self.res = res
        # Applied to every object as it arrives, after managedFields are stripped: drops what no reader needs, so
        # the cache holds less (it must keep metadata.name, namespace, uid and resourceVersion).
        self.transform = transform
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.inactivity = inactivity
        self.idle_rewatches = 0
        self.synced = asyncio.Event()
        self.resource_version = ""
        self._objects: dict[Key, dict[str, Any]] = {}
        self._by_namespace: dict[str, set[Key]] = {}
        self._index_labels = tuple(index_labels)
        self._by_label: dict[str, dict[tuple[str, str], set[Key]]] = {label: {} for label in self._index_labels}
        self._handlers: list[Handler] = []
        self.relists = 0  # how many times the store was rebuilt from a list (observability, tests)
        # Set by a failed list or watch (monotonic), cleared when a list succeeds or a watch is open again: the
        # store may meanwhile be missing changes (a deletion, say), and :attr:`stale` tells the manager so.
        self.lost_at: float | None = None
        self._opened_at: float | None = None
        self._lost_generation = 0

    @property
    def stale(self) -> bool:
        """Synced once, but cut off from the API server now: what it holds may be out of date."""
        return self.synced.is_set() and self.lost_at is not None

    def _opened(self) -> None:
        self.lost_at = None
        self._opened_at = time.monotonic()
        _reachability(self.kube).succeeded()

    async def _pause(self, delay: float, *, wake: bool = True) -> None:
        """Sleep ``delay`` seconds of back-off; with ``wake``, end early when another informer of the same client
        got through after this one failed (the server is back: waiting out a 30 s back-off would only delay the
        recovery)."""
        if wake:
            await _reachability(self.kube).wait_past(self._lost_generation, delay)
        else:
            await asyncio.sleep(delay)

    def _lost(self, backoff: Backoff) -> None:
        """The list or watch failed. A watch that had stayed open a while counts as a success for the back-off
        (a quiet resource gets no event to reset it), so one outage does not leave the next reconnect 30 s away."""
        if self._opened_at is not None and time.monotonic() - self._opened_at >= HEALTHY_WATCH:
            backoff.reset()
        self._opened_at = None
        if self.lost_at is None:
            self.lost_at = time.monotonic()
        self._lost_generation = _reachability(self.kube).failed()

    def __repr__(self) -> str:
        scope = f" in {self.namespace}" if self.namespace else ""
        return f"<Informer {self.res}{scope} selector={self.label_selector!r} objects={len(self._objects)}>"

    # ----------------------------------------------------------------------------------------------- reading
    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._objects.get((namespace, name))

    def list(self, namespace: str | None = None, labels: Mapping[str, str] | None = None) -> list[Mapping[str, Any]]:
        """Objects in ``namespace`` (all if None) whose labels include ``labels``; uses an index when it can."""
        wanted = dict(labels or {})
        candidates: Iterable[Key]
        indexed = next((label for label in self._index_labels if label in wanted), None)
        if indexed is not None and namespace is not None:
            candidates = self._by_label[indexed].get((namespace, wanted[indexed]), ())
        elif namespace is not None:
            candidates = self._by_namespace.get(namespace, ())
        else:
            candidates = self._objects.keys()
        found: list[Mapping[str, Any]] = []
        for key in candidates:
            obj = self._objects[key]
            have = (obj.get("metadata") or {}).get("labels") or {}
            if all(have.get(k) == v for k, v in wanted.items()):
                found.append(obj)
        return found

    def __len__(self) -> int:
        return len(self._objects)

    # ----------------------------------------------------------------------------------------------- store
    def _index(self, key: Key, obj: Mapping[str, Any], add: bool) -> None:
        namespace = key[0]
        if add:
            self._by_namespace.setdefault(namespace, set()).add(key)
        else:
            keys = self._by_namespace.get(namespace)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_namespace[namespace]
        labels = (obj.get("metadata") or {}).get("labels") or {}
        for label in self._index_labels:
            value = labels.get(label)
            if value is None:
                continue
            bucket = self._by_label[label]
            if add:
                bucket.setdefault((namespace, value), set()).add(key)
            else:
                members = bucket.get((namespace, value))
                if members is not None:
                    members.discard(key)
                    if not members:
                        del bucket[(namespace, value)]

    def _put(self, obj: dict[str, Any]) -> None:
        """Store ``obj`` and tell the handlers: ADDED, MODIFIED, or DELETED + ADDED for a new incarnation."""
        key = _key(obj)
        old = self._objects.get(key)
        if old is not None:
            self._index(key, old, add=False)
        self._objects[key] = obj
        self._index(key, obj, add=True)
        if old is None:
            self._dispatch("ADDED", None, obj)
        elif objects.uid(old) != objects.uid(obj):
            self._dispatch("DELETED", old, None)
            self._dispatch("ADDED", None, obj)
        else:
            self._dispatch("MODIFIED", old, obj)

    def _remove(self, key: Key) -> Mapping[str, Any] | None:
        old = self._objects.pop(key, None)
        if old is not None:
            self._index(key, old, add=False)
        return old

    def _dispatch(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        for handler in self._handlers:
            try:
                handler(event, old, new)
            except Exception:
                log.exception("informer handler failed for %s %s", self.res, event)

    def _ingest(self, obj: dict[str, Any]) -> dict[str, Any]:
        strip_managed_fields(obj)
        return self.transform(obj) if self.transform is not None else obj

    def _apply(self, event: str, obj: dict[str, Any]) -> None:
        obj = self._ingest(obj)
        if event == "DELETED":
            old = self._remove(_key(obj))
            self._dispatch("DELETED", old, None)
            return
        if _version(self._objects.get(_key(obj))) == _version(obj):
            return  # the same version again (a watch restarted from an older point): nothing happened
        self._put(obj)

    async def _relist(self) -> str:
        result = await self.kube.list(
            self.res, self.namespace, label_selector=self.label_selector, field_selector=self.field_selector
        )
        fresh = {_key(obj): self._ingest(obj) for obj in result.items}
        gone = [key for key in self._objects if key not in fresh]
        for key in gone:
            self._dispatch("DELETED", self._remove(key), None)
        for obj in fresh.values():
            if _version(self._objects.get(_key(obj))) != _version(obj):
                self._put(obj)
        self.relists += 1
        self.lost_at = None
        _reachability(self.kube).succeeded()
        self.synced.set()
        return result.resource_version

    # ----------------------------------------------------------------------------------------------- loop
    async def run(self) -> None:
        """List and watch until cancelled."""
        backoff = Backoff()
        version: str | None = None
        while True:
            try:
                if version is None:
                    version = await self._relist()
                    self.resource_version = version
                    backoff.reset()
                async for event in self.kube.watch(
                    self.res,
                    self.namespace,
                    resource_version=version,
                    label_selector=self.label_selector,
                    field_selector=self.field_selector,
                    timeout_seconds=random.randint(300, 600),  # noqa: S311 - spreading load, not cryptography
                    inactivity=self.inactivity,
                    opened=self._opened,
                    managed_fields=False,  # never kept (_ingest): not decoded either
                ):
                    new_version = _version(event.object)
                    if event.type != "BOOKMARK":
                        self._apply(event.type, event.object)
                    if new_version:
                        version = self.resource_version = new_version
                    backoff.reset()
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                self._lost(backoff)
                if exc.gone:
                    log.info("%s: resourceVersion %s is too old; relisting", self.res, version)
                    version = None
                    continue
                delay = max(backoff.next(), exc.retry_after or 0.0)  # the server's Retry-After is a floor
                log.warning("%s: list/watch failed (%s); retrying in %.1fs", self.res, exc, delay)
                await self._pause(delay, wake=exc.retry_after is None)
            except httpx2.ReadTimeout:
                # Nothing, not even a bookmark, for `inactivity` seconds: a quiet resource or a stalled stream.
                # Watch again from the same version at once; a server that is really gone fails the next connect.
                self.idle_rewatches += 1
                log.debug("%s: no watch event for %.0fs; watching again from %s", self.res, self.inactivity, version)
            except (httpx2.HTTPError, OSError, ValueError) as exc:
                self._lost(backoff)
                delay = backoff.next()
                log.warning(
                    "%s: watch interrupted (%s: %s); retrying in %.1fs", self.res, type(exc).__name__, exc, delay
                )
                await self._pause(delay)


class ObjectCache:
    """Reads across informers: one or more per resource (one per watched namespace, or one for all)."""

    def __init__(self, informers: Iterable[Informer] = ()) -> None:
        self._informers: dict[Resource, list[Informer]] = {}
        for informer in informers:
            self.register(informer)

    def register(self, informer: Informer) -> None:
        self._informers.setdefault(informer.res, []).append(informer)

    def informers(self, res: Resource | None = None) -> list[Informer]:
        if res is not None:
            return list(self._informers.get(res, []))
        return [i for group in self._informers.values() for i in group]

    def _for(self, res: Resource, namespace: str) -> list[Informer]:
        return [i for i in self._informers.get(res, []) if i.namespace in (None, namespace)]

    def get(self, res: Resource, namespace: str, name: str) -> Mapping[str, Any] | None:
        for informer in self._for(res, namespace):
            found = informer.get(namespace, name)
            if found is not None:
                return found
        return None

    def list(self, res: Resource, namespace: str, labels: Mapping[str, str]) -> Sequence[Mapping[str, Any]]:
        found: list[Mapping[str, Any]] = []
        for informer in self._for(res, namespace):
            found.extend(informer.list(namespace, labels))
        return found

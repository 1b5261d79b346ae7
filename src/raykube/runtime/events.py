"""Kubernetes Events through ``events.k8s.io/v1``, as client-go's new event recorder writes them.

* Recording never blocks a reconcile: events go on a queue that a background task sends.
* A repeat of the same event (same object, type, reason, action and note) within 6 minutes becomes a ``series``
  update (count and lastObservedTime) on the event already written, instead of a new object.
* A spam filter per object and reason (a token bucket of 25, refilled one every 5 minutes, as client-go's) drops
  floods, so a crash-looping cluster cannot fill etcd with events.
* Failures to write an event are logged and dropped: events are best effort in Kubernetes, never a reason to fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from raykube.controllers.ports import EVENTS, ApiError
from raykube.runtime.kube import Kube

log = logging.getLogger(__name__)

SERIES_WINDOW = 6 * 60.0
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
QUEUE_LIMIT = 1000


def micro_time(moment: dt.datetime | None = None) -> str:
    """``MicroTime`` as the API server writes it: RFC 3339 in UTC with microseconds."""
    return (moment or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class _Pending:
    regarding: Mapping[str, Any]
    type: str
    reason: str
    action: str
    note: str
    stamp: float


@dataclass
class _Series:
    namespace: str
    name: str
    count: int
    last: float


class EventRecorder:
    """Records events for one reporting controller (``raycluster-controller``, as KubeRay names it)."""

    def __init__(self, kube: Kube, controller: str, instance: str | None = None) -> None:
        self.kube = kube
        self.controller = controller
        self.instance = (instance or f"{controller}-{socket.gethostname()}")[:128]
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(QUEUE_LIMIT)
        self._series: dict[tuple[str, str, str, str, str], _Series] = {}
        self._tokens: dict[tuple[str, str], tuple[float, float]] = {}
        self.sent = 0
        self.dropped = 0

    # Recorder protocol ------------------------------------------------------------------------------------------
    def event(self, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str) -> None:
        uid = str((regarding.get("metadata") or {}).get("uid", ""))
        if not self._allow(uid, reason):
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(_Pending(regarding, type_, reason, action, note[:1024], time.monotonic()))
        except asyncio.QueueFull:
            self.dropped += 1

    def _allow(self, uid: str, reason: str) -> bool:
        now = time.monotonic()
        tokens, stamp = self._tokens.get((uid, reason), (float(SPAM_BURST), now))
        tokens = min(SPAM_BURST, tokens + (now - stamp) / SPAM_REFILL_SECONDS)
        if tokens < 1:
            self._tokens[(uid, reason)] = (tokens, now)
            return False
        self._tokens[(uid, reason)] = (tokens - 1, now)
        return True

    # Sending ----------------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """Send queued events until cancelled."""
        while True:
            pending = await self._queue.get()
            try:
                await self._send(pending)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # best effort, as Kubernetes treats events
                name = (pending.regarding.get("metadata") or {}).get("name")
                log.warning("dropping event %s for %s: %s", pending.reason, name, exc)
            else:
                self.sent += 1

    async def flush(self) -> None:
        """Send everything queued now (used at shutdown)."""
        while not self._queue.empty():
            pending = self._queue.get_nowait()
            with contextlib.suppress(Exception):
                await self._send(pending)

    async def _send(self, pending: _Pending) -> None:
        regarding = pending.regarding
        meta = regarding.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        key = (str(meta.get("uid", "")), pending.type, pending.reason, pending.action, pending.note)
        series = self._series.get(key)
        now = dt.datetime.now(dt.UTC)
        if series is not None and pending.stamp - series.last < SERIES_WINDOW:
            series.count += 1
            series.last = pending.stamp
            patch = {"series": {"count": series.count, "lastObservedTime": micro_time(now)}}
            try:
                await self.kube.patch(EVENTS, series.name, patch, series.namespace)
            except ApiError as exc:
                if not exc.not_found:
                    raise
            else:
                return
        name = f"{meta.get('name', 'object')}.{time.time_ns():x}"
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(now),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": pending.action,
            "reason": pending.reason,
            "type": pending.type,
            "note": pending.note,
            "regarding": {
                "apiVersion": regarding.get("apiVersion"),
                "kind": regarding.get("kind"),
                "namespace": meta.get("namespace"),
                "name": meta.get("name"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
        }
        await self.kube.create(EVENTS, body, namespace)
        self._series[key] = _Series(namespace, name, 1, pending.stamp)
        if len(self._series) > 10_000:  # forget the oldest half; a new event is then simply created again
            for old in sorted(self._series, key=lambda k: self._series[k].last)[:5_000]:
                del self._series[old]

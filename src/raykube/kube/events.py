"""Kubernetes Events, as client-go's recorders write them: one recorder for the operator and the process kubelet.

* ``v1`` (``CORE_EVENTS_API``, what a kubelet and KubeRay write: controller-runtime's ``GetEventRecorderFor`` is
  client-go's ``record`` package): ``involvedObject`` (with ``fieldPath``, e.g. the container), ``message``,
  ``source.component``/``source.host`` (also as ``reportingComponent``/``reportingInstance``),
  ``first``/``lastTimestamp``, repeats as a growing ``count``. raykube's controllers and its kubelet write these.
* ``events.k8s.io/v1`` (``EVENTS_API``, client-go's newer ``events`` package): ``regarding``, ``note``,
  ``reportingController``/``reportingInstance``, ``eventTime``, repeats as a ``series``.

Either way:

* Recording never blocks the caller: events go on a queue that :meth:`EventRecorder.run` sends in the background,
  one at a time (as client-go's broadcaster). A full queue drops new events, as client-go's does.
* With ``room`` (the operator's recorders) each event first waits for what ``room`` awaits: until the operator is not
  behind (its controller's work queue is short and the rate limiter of its Pod writes at least half full), so Events
  use only what the operator's own work leaves over. During a burst of new clusters they queue (and past the queue's
  limit are dropped) instead of taking the API server's time from the writes that bring clusters up.
* A repeat of the same event (same object and field, type, reason, action and note) updates the event already
  written instead of creating a new object: within 6 minutes as a series (client-go's ``events`` package), or, for
  core/v1, as a growing count however far apart the repeats are (client-go's ``record`` correlator, which remembers
  recent events with no time limit). The name is ``<object>.<hex ns>``, as client-go names events.
* core/v1 Events carry ``action`` only when one is given: a kubelet's have none.
* A spam filter per object and reason (a token bucket of 25, refilled one every 5 minutes, as client-go's) drops
  floods, so a crash-looping Pod or cluster cannot fill etcd with events.
* Failures to write an event are logged and dropped: events are best effort in Kubernetes, never a reason to fail.
* With ``log_events`` (the operator's recorders) each event is also a log line at info, the note as the message:
  what the operator did to which object reads from ``kubectl logs deploy/kuberay-operator`` too, with the
  reconcile's keys (``RayCluster``, ``namespace``, ``reconcileID``) that :mod:`raykube.runtime.logs` adds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from raykube.kube import objects, times
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import CORE_EVENTS, EVENTS

log = logging.getLogger(__name__)

EventsApi = Literal["events.k8s.io/v1", "v1"]
EVENTS_API: EventsApi = "events.k8s.io/v1"
CORE_EVENTS_API: EventsApi = "v1"

NORMAL = "Normal"
WARNING = "Warning"
SERIES_WINDOW = 6 * 60.0
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
QUEUE_LIMIT = 1000
NOTE_LIMIT = 1024  # events.k8s.io/v1 validation: note is at most 1 kB


@dataclass(frozen=True)
class _Pending:
    regarding: Mapping[str, Any]
    type: str
    reason: str
    action: str
    note: str
    field_path: str
    stamp: float


@dataclass
class _Series:
    namespace: str
    name: str
    count: int
    last: float


MAX_NAME = 253  # a Kubernetes object name (DNS subdomain)


class EventRecorder:
    """Records events for one reporter: a controller (``raycluster-controller``) or a component (``kubelet``)."""

    def __init__(
        self,
        kube: Kube,
        controller: str,
        instance: str | None = None,
        *,
        api: EventsApi = EVENTS_API,
        log_events: bool = False,
        room: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.kube = kube
        self.room = room
        self.controller = controller
        self.log_events = log_events
        self._log = logging.getLogger(f"raykube.{controller}")  # e.g. raykube.raycluster-controller
        self.instance = (instance or f"{controller}-{socket.gethostname()}")[:128]
        self.api = api
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(QUEUE_LIMIT)
        self._series: dict[tuple[str, str, str, str, str, str], _Series] = {}
        self._tokens: dict[tuple[str, str], tuple[float, float]] = {}
        self.sent = 0
        self.dropped = 0
        self.pending = 0  # queued or being sent: 0 once every event recorded so far reached the API server (or failed)

    # Recorder protocol ------------------------------------------------------------------------------------------
    def event(
        self,
        regarding: Mapping[str, Any],
        type_: str,
        reason: str,
        action: str,
        note: str,
        *,
        field_path: str = "",
    ) -> None:
        """Queue an event about ``regarding`` (``field_path``: the part of it, e.g. ``spec.containers{ray-head}``)."""
        if self.log_events:
            about = f"{regarding.get('kind', '')} {objects.namespace(regarding)}/{objects.name(regarding)}"
            extra = {"event": {"type": type_, "reason": reason, "object": about.strip(), "reporter": self.controller}}
            (self._log.warning if type_ == WARNING else self._log.info)(note, extra=extra)
        if not self._allow(objects.uid(regarding), reason):
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(
                _Pending(regarding, type_, reason, action, note[:NOTE_LIMIT], field_path, time.monotonic())
            )
        except asyncio.QueueFull:
            self.dropped += 1
        else:
            self.pending += 1

    def forget(self, uid: str) -> None:
        """Drop what is remembered about an object that is gone."""
        self._series = {k: v for k, v in self._series.items() if k[0] != uid}
        self._tokens = {k: v for k, v in self._tokens.items() if k[0] != uid}

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
                if self.room is not None:
                    await self.room()
                await self._send(pending)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # best effort, as Kubernetes treats events
                log.warning("dropping event %s for %s: %s", pending.reason, objects.name(pending.regarding), exc)
            else:
                self.sent += 1
            finally:
                self.pending -= 1

    async def flush(self) -> None:
        """Send everything queued now (used at shutdown)."""
        while not self._queue.empty():
            pending = self._queue.get_nowait()
            try:
                with contextlib.suppress(Exception):
                    await self._send(pending)
            finally:
                self.pending -= 1

    async def _send(self, pending: _Pending) -> None:
        regarding = pending.regarding
        namespace = objects.namespace(regarding) or "default"
        key = (objects.uid(regarding), pending.field_path, pending.type, pending.reason, pending.action, pending.note)
        series = self._series.get(key)
        if series is not None and (self.api == CORE_EVENTS_API or pending.stamp - series.last < SERIES_WINDOW):
            series.count += 1
            series.last = pending.stamp
            try:
                await self._repeat(series)
            except ApiError as exc:
                if not exc.not_found:
                    raise
            else:
                return
        # client-go's "<name>.<unix nanos in hex>", with the name cut so the whole fits an object name (253): an event
        # about an object whose name is already 253 characters long must still be written.
        suffix = f".{time.time_ns():x}"
        name = (objects.name(regarding) or "object")[: MAX_NAME - len(suffix)].rstrip(".-") + suffix
        if self.api == CORE_EVENTS_API:
            await self.kube.create(CORE_EVENTS, self._core_event(name, namespace, pending), namespace)
        else:
            await self.kube.create(EVENTS, self._event(name, namespace, pending), namespace)
        self._series[key] = _Series(namespace, name, 1, pending.stamp)
        if len(self._series) > 10_000:  # forget the oldest half; a new event is then simply created again
            for old in sorted(self._series, key=lambda k: self._series[k].last)[:5_000]:
                del self._series[old]

    async def _repeat(self, series: _Series) -> None:
        if self.api == CORE_EVENTS_API:
            patch: dict[str, Any] = {"count": series.count, "lastTimestamp": times.format_time()}
            await self.kube.patch(CORE_EVENTS, series.name, patch, series.namespace)
        else:
            patch = {"series": {"count": series.count, "lastObservedTime": times.format_micro_time()}}
            await self.kube.patch(EVENTS, series.name, patch, series.namespace)

    @staticmethod
    def _reference(regarding: Mapping[str, Any], field_path: str) -> dict[str, Any]:
        meta = objects.meta(regarding)
        ref = {
            "apiVersion": regarding.get("apiVersion"),
            "kind": regarding.get("kind"),
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        if field_path:
            ref["fieldPath"] = field_path
        return ref

    def _event(self, name: str, namespace: str, pending: _Pending) -> dict[str, Any]:
        return {
            "apiVersion": EVENTS_API,
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": times.format_micro_time(),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": pending.action,
            "reason": pending.reason,
            "type": pending.type,
            "note": pending.note,
            "regarding": self._reference(pending.regarding, pending.field_path),
        }

    def _core_event(self, name: str, namespace: str, pending: _Pending) -> dict[str, Any]:
        now = times.format_time()
        event = {
            "apiVersion": CORE_EVENTS_API,
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": self._reference(pending.regarding, pending.field_path),
            "reason": pending.reason,
            "message": pending.note,
            "type": pending.type,
            "source": {"component": self.controller, "host": self.instance},
            "reportingComponent": self.controller,
            "reportingInstance": self.instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        if pending.action:
            event["action"] = pending.action
        return event

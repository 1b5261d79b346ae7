"""Kubernetes Events, as client-go's recorders write them: one recorder for the operator and the process kubelet.

* ``v1`` (``CORE_EVENTS_API``, what a kubelet writes, and KubeRay up to v1.6: client-go's ``record`` package):
  ``involvedObject`` (with ``fieldPath``, e.g. the container), ``message``, ``source.component``/``source.host``
  (also as ``reportingComponent``/``reportingInstance``), ``first``/``lastTimestamp``, repeats as a growing
  ``count``. The sandbox's kubelet writes these.
* ``events.k8s.io/v1`` (``EVENTS_API``, what KubeRay v1.7.0's controllers write: controller-runtime's
  ``GetEventRecorder`` is client-go's ``tools/events`` package): ``regarding``, ``note``, ``action``,
  ``reportingController``/``reportingInstance`` (``<controller>-<hostname>``), ``eventTime`` (when it was
  recorded), repeats as a ``series``. raykube's controllers write these. The API server serves the same objects
  through core/v1 too (``message``, ``involvedObject``, ``reportingComponent``, ``series``), so a reader of core/v1
  Events still finds them.

Either way:

* Recording never blocks the caller: events go on a queue that :meth:`EventRecorder.run` sends in the background,
  one at a time (as client-go's broadcaster). A full queue drops new events, as client-go's does.
* With ``room`` (the operator's recorders) each event first waits for what ``room`` awaits: until the operator is not
  behind (its controller's work queue is short and the rate limiter of its Pod writes at least half full), so Events
  use only what the operator's own work leaves over. During a burst of new clusters they queue (and past the queue's
  limit are dropped) instead of taking the API server's time from the writes that bring clusters up.
* A repeat updates the event already written instead of creating a new object:

  * events.k8s.io/v1 (client-go's ``events`` broadcaster): a repeat is the same object reference (uid, field and
    resourceVersion), type, reason and action, whatever its note (the first note stays). The first repeat writes
    ``series`` (count 2, ``lastObservedTime``) at once; later ones only count, and the count is written when the
    series ends (no repeat for 6 minutes, looked at every 6 minutes) and every 30 minutes while it goes on. An event
    not repeated within about 6 minutes is forgotten: the next one is a new object.
  * core/v1 (client-go's ``record`` correlator, which remembers recent events with no time limit): the same object
    and field, type, reason, action and message; each repeat writes the growing count at once.

* The name is ``<object>.<hex unix nanos>``, as client-go names events, or a random UUID when that is not a valid
  object name (client-go's ``GenerateEventName``: an object whose name is already 253 characters long).
* core/v1 Events carry ``action`` only when one is given: a kubelet's have none.
* core/v1 only: a spam filter per object and reason (a token bucket of 25, refilled one every 5 minutes, as the
  ``record`` package's) drops floods, so a crash-looping Pod cannot fill etcd with events. client-go's ``events``
  package has none (its series fold the repeats).
* Failures to write an event are logged and dropped: events are best effort in Kubernetes, never a reason to fail.
* With ``log_events`` (the operator's recorders) each event is also a log line at info, the note as the message:
  what the operator did to which object reads from ``kubectl logs deploy/kuberay-operator`` too, with the
  reconcile's keys (``RayCluster``, ``namespace``, ``reconcileID``) that :mod:`raykube.runtime.logs` adds.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import re
import socket
import time
import uuid
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
SERIES_WINDOW = 6 * 60.0  # client-go events: finishTime, and how often the broadcaster looks for ended series
SERIES_REFRESH = 30 * 60.0  # client-go events: refreshTime, how often a running series' count is written
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
QUEUE_LIMIT = 1000
NOTE_LIMIT = 1024  # events.k8s.io/v1 validation: note is at most 1 kB
MAX_NAME = 253  # a Kubernetes object name (DNS subdomain)
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def event_name(regarding_name: str, unix_nanos: int) -> str:
    """client-go's ``GenerateEventName``: ``<name>.<hex unix nanos>``, or a random UUID when that is not a valid
    object name (too long, or the regarding name has characters a name may not)."""
    name = f"{regarding_name}.{unix_nanos:x}"
    if len(name) > MAX_NAME or not _SUBDOMAIN.fullmatch(name):
        return str(uuid.uuid4())
    return name


@dataclass(frozen=True)
class _Pending:
    regarding: Mapping[str, Any]
    type: str
    reason: str
    action: str
    note: str
    field_path: str
    stamp: float  # time.monotonic() when recorded
    wall_ns: int  # time.time_ns() when recorded: eventTime and the name


@dataclass
class _Series:
    namespace: str
    name: str
    count: int
    last: float  # monotonic time of the last repeat
    first: float = 0.0  # monotonic time of the first
    body: dict[str, Any] | None = None  # events.k8s.io/v1: the event as first written (re-created if deleted)
    observed: str = ""  # events.k8s.io/v1: series.lastObservedTime


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
        if self.api == CORE_EVENTS_API and not self._allow(objects.uid(regarding), reason):
            self.dropped += 1
            return
        try:
            note = note[:NOTE_LIMIT]
            self._queue.put_nowait(
                _Pending(regarding, type_, reason, action, note, field_path, time.monotonic(), time.time_ns())
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
        """Send queued events until cancelled (and, for events.k8s.io/v1, end and refresh series on their clock)."""
        keeper = asyncio.create_task(self._keep_series()) if self.api == EVENTS_API else None
        try:
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
        finally:
            if keeper is not None:
                keeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await keeper

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
        if self.api == CORE_EVENTS_API:
            await self._send_core(pending)
        else:
            await self._send_event(pending)

    def _remember(self, key: tuple[str, str, str, str, str, str], series: _Series) -> None:
        self._series[key] = series
        if len(self._series) > 10_000:  # forget the oldest half; a new event is then simply created again
            for old in sorted(self._series, key=lambda k: self._series[k].last)[:5_000]:
                del self._series[old]

    # events.k8s.io/v1 (client-go tools/events) ---------------------------------------------------------------------
    async def _send_event(self, pending: _Pending) -> None:
        regarding = pending.regarding
        version = str(objects.meta(regarding).get("resourceVersion") or "")
        key = (objects.uid(regarding), pending.field_path, pending.type, pending.reason, pending.action, version)
        series = self._series.get(key)
        if series is not None:
            series.count += 1
            series.last = pending.stamp
            series.observed = times.format_micro_time()
            if series.count == 2:  # the first repeat is written now; later ones when the series ends or refreshes
                await self._write_series(series)
            return
        namespace = objects.namespace(regarding) or "default"
        name = event_name(objects.name(regarding), pending.wall_ns)
        body = self._event(name, namespace, pending)
        # remembered before it is written, as client-go's cache: a repeat patches (or re-creates) it either way
        self._remember(key, _Series(namespace, name, 1, pending.stamp, pending.stamp, body))
        await self.kube.create(EVENTS, body, namespace)

    async def _write_series(self, series: _Series) -> None:
        """Write ``series``' count; the event is created again (with it) when it was deleted meanwhile."""
        written = {"count": series.count, "lastObservedTime": series.observed or times.format_micro_time()}
        try:
            await self.kube.patch(EVENTS, series.name, {"series": written}, series.namespace)
        except ApiError as exc:
            if not exc.not_found or series.body is None:
                raise
            await self.kube.create(EVENTS, {**series.body, "series": written}, series.namespace)

    async def finish_series(self, now: float | None = None) -> None:
        """client-go's ``finishSeries``: write the final count of every series not repeated for ``SERIES_WINDOW`` and
        forget it; forget a single event older than that (its next repeat is a new event)."""
        now = time.monotonic() if now is None else now
        for key, series in list(self._series.items()):
            if now - (series.last if series.count > 1 else series.first) <= SERIES_WINDOW:
                continue
            if series.count > 1:
                try:
                    await self._write_series(series)
                except Exception as exc:  # best effort
                    log.warning("dropping the final count of event %s: %s", series.name, exc)
            if self._series.get(key) is series:
                del self._series[key]

    async def refresh_series(self) -> None:
        """client-go's ``refreshExistingEventSeries``: write the count of every running series."""
        for series in list(self._series.values()):
            if series.count > 1:
                try:
                    await self._write_series(series)
                except Exception as exc:  # best effort
                    log.warning("could not refresh event %s: %s", series.name, exc)

    async def _keep_series(self) -> None:
        refreshed = time.monotonic()
        while True:
            await asyncio.sleep(SERIES_WINDOW)
            await self.finish_series()
            if time.monotonic() - refreshed >= SERIES_REFRESH:
                refreshed = time.monotonic()
                await self.refresh_series()

    def _event(self, name: str, namespace: str, pending: _Pending) -> dict[str, Any]:
        return {
            "apiVersion": EVENTS_API,
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": times.format_micro_time(dt.datetime.fromtimestamp(pending.wall_ns / 1e9, dt.UTC)),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": pending.action,
            "reason": pending.reason,
            "type": pending.type,
            "note": pending.note,
            "regarding": self._reference(pending.regarding, pending.field_path),
        }

    # core/v1 (client-go tools/record) ------------------------------------------------------------------------------
    async def _send_core(self, pending: _Pending) -> None:
        regarding = pending.regarding
        namespace = objects.namespace(regarding) or "default"
        key = (objects.uid(regarding), pending.field_path, pending.type, pending.reason, pending.action, pending.note)
        series = self._series.get(key)
        if series is not None:
            series.count += 1
            series.last = pending.stamp
            try:
                patch = {"count": series.count, "lastTimestamp": times.format_time()}
                await self.kube.patch(CORE_EVENTS, series.name, patch, series.namespace)
            except ApiError as exc:
                if not exc.not_found:
                    raise
            else:
                return
        name = event_name(objects.name(regarding) or "object", pending.wall_ns)
        await self.kube.create(CORE_EVENTS, self._core_event(name, namespace, pending), namespace)
        self._remember(key, _Series(namespace, name, 1, pending.stamp, pending.stamp))

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

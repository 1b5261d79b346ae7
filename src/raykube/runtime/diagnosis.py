"""``--diagnose-after``: the doctor's root cause, recorded by the operator on what stays not ready.

raykube's own, off by default (KubeRay has nothing like it, so a drop-in's behaviour is unchanged): a RayCluster,
RayJob or RayService that has not been ready (running, for a RayJob) for ``--diagnose-after`` gets one Warning Event,
reason ``RootCause``, whose message is the doctor's root cause: its code, rule, title and first fix. The Event is
recorded again only when the root cause changes; an object that becomes ready is forgotten, so a later breakage is
told afresh.

The loop reads the operator's informer caches to find what is due (no request for that), then asks a
:class:`Diagnoser` about at most :data:`MAX_PER_PASS` objects a pass: the never-diagnosed first, then those diagnosed
longest ago, each at most once per ``--diagnose-after``. The runtime knows nothing of the doctor (the layers forbid it):
``raykube operator`` passes the doctor's diagnoser in (:mod:`raykube.cli.rootcause`), which reads only what that one
object needs, objects only, never exec into a Pod.

Which objects are not ready, and since when, is pure (:func:`not_ready_since`, :func:`due`); so is what to record
(:func:`to_record`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS, RAYJOBS, RAYSERVICES
from raykube.kube import objects
from raykube.kube.events import WARNING, EventRecorder
from raykube.kube.informer import ObjectCache
from raykube.kube.resources import PODS
from raykube.kube.times import parse_time
from raykube.runtime.metrics import Metrics

log = logging.getLogger(__name__)

# The Event's reason, and the controller name it is reported by (``kubectl describe`` shows it under From).
REASON: Final = "RootCause"
ACTION: Final = "Diagnose"
REPORTER: Final = "raykube-doctor"
# At most this many diagnoses a pass: a burst of broken objects is worked off over several passes.
MAX_PER_PASS: Final = 20
# How often the loop looks (seconds): a tenth of --diagnose-after, between these bounds.
MIN_INTERVAL: Final = 2.0
MAX_INTERVAL: Final = 30.0
# A RayJob is running (or has ended) in these deployment statuses (KubeRay's JobDeploymentStatus); any other, or none
# yet, is "not running".
RAYJOB_STARTED: Final = frozenset({"Running", "Complete", "Failed", "Suspending", "Suspended", "ValidationFailed"})
KINDS: Final = (c.KIND_RAYCLUSTER, c.KIND_RAYJOB, c.KIND_RAYSERVICE)


@dataclass(frozen=True)
class RootCause:
    """The doctor's root cause for one object: what the Event says."""

    code: str  # UNSCHEDULABLE_RESOURCES
    rule: str  # B02
    title: str
    fix: str = ""

    def key(self) -> str:
        """Which root cause this is: its rule, not its title, whose counts change while the cause stays (the Pods
        the operator has made so far, the nodes' free room)."""
        return f"{self.code} ({self.rule})"

    def message(self) -> str:
        text = f"{self.key()}: {self.title}"
        return f"{text}. Fix: {self.fix}" if self.fix else text


class Diagnoser(Protocol):
    async def root_cause(self, kind: str, namespace: str, name: str) -> RootCause | None:
        """The root cause of ``kind namespace/name`` not being ready, or None when the doctor finds none."""
        ...


@dataclass(frozen=True)
class Subject:
    kind: str
    namespace: str
    name: str
    uid: str
    since: datetime  # not ready since
    obj: Mapping[str, Any] = field(compare=False, repr=False)


@dataclass
class Memory:
    """What the loop remembers of one object (by uid): when it last diagnosed it and the Event it last recorded."""

    diagnosed_at: float  # monotonic
    recorded: str | None = None  # the key (RootCause.key) of the last RootCause Event, None if none was recorded
    about: str = ""  # "RayCluster ns/name", for the log


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    return any(
        isinstance(cond, Mapping) and cond.get("type") == "Ready" and cond.get("status") == "True"
        for cond in (pod.get("status") or {}).get("conditions") or ()
    )


def _cluster_since(
    obj: Mapping[str, Any], created: datetime | None, pods: Sequence[Mapping[str, Any]]
) -> datetime | None:
    """KubeRay keeps ``state: ready`` once a cluster was ready, so a ready cluster whose Pods are not all Ready (a
    scale-up the nodes cannot hold, a worker that crashes) is not ready since its oldest such Pod was created."""
    status = obj.get("status") or {}
    state = str(status.get("state") or "")
    if state == "suspended" or (obj.get("spec") or {}).get("suspend") is True:
        return None
    if state != "ready":
        return (parse_time((status.get("stateTransitionTimes") or {}).get(state)) if state else None) or created
    waiting = [
        parse_time(objects.meta(pod).get("creationTimestamp"))
        for pod in pods
        if not _pod_ready(pod) and not objects.meta(pod).get("deletionTimestamp")
    ]
    return min((moment for moment in waiting if moment is not None), default=None)


def _job_since(obj: Mapping[str, Any], created: datetime | None, _: Sequence[Mapping[str, Any]]) -> datetime | None:
    started = str((obj.get("status") or {}).get("jobDeploymentStatus") or "") in RAYJOB_STARTED
    return None if started or (obj.get("spec") or {}).get("suspend") is True else created


def _service_since(obj: Mapping[str, Any], created: datetime | None, _: Sequence[Mapping[str, Any]]) -> datetime | None:
    if (obj.get("spec") or {}).get("suspend") is True:
        return None
    ready = _condition(obj, "Ready")
    if ready is not None and ready.get("status") == "True":
        return None
    return (parse_time(ready.get("lastTransitionTime")) if ready is not None else None) or created


_Since = Callable[[Mapping[str, Any], datetime | None, Sequence[Mapping[str, Any]]], datetime | None]
_SINCE: Final[Mapping[str, _Since]] = {
    c.KIND_RAYCLUSTER: _cluster_since,
    c.KIND_RAYJOB: _job_since,
    c.KIND_RAYSERVICE: _service_since,
}


def not_ready_since(kind: str, obj: Mapping[str, Any], pods: Sequence[Mapping[str, Any]] = ()) -> datetime | None:
    """When ``obj`` became not ready, or None when it is ready (or suspended, or a RayJob that has started or ended).

    * RayCluster: ``status.state`` is not ``ready`` (KubeRay's ClusterState), since the time ``stateTransitionTimes``
      gives its current state, else its creation; or it is, and one of its ``pods`` is not Ready, since the oldest
      such Pod was created. A suspended cluster is left alone.
    * RayJob: ``status.jobDeploymentStatus`` is none of :data:`RAYJOB_STARTED`; since its creation.
    * RayService: its ``Ready`` condition is not True and it is not suspended; since the condition's last transition,
      else its creation.

    An object being deleted is left alone."""
    meta = objects.meta(obj)
    if meta.get("deletionTimestamp"):
        return None
    since = _SINCE.get(kind)
    if since is None:
        raise ValueError(f"not a kind the operator diagnoses: {kind}")
    return since(obj, parse_time(meta.get("creationTimestamp")), pods)


def subjects(
    kind: str,
    items: Iterable[Mapping[str, Any]],
    pods_of: Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]] = lambda _: (),
) -> list[Subject]:
    """The objects of ``kind`` that are not ready, with since when (``pods_of``: a RayCluster's Pods)."""
    out = []
    for obj in items:
        since = not_ready_since(kind, obj, pods_of(obj) if kind == c.KIND_RAYCLUSTER else ())
        if since is not None:
            out.append(Subject(kind, objects.namespace(obj), objects.name(obj), objects.uid(obj), since, obj))
    return out


def due(
    candidates: Iterable[Subject],
    memory: Mapping[str, Memory],
    *,
    now: datetime,
    monotonic: float,
    after: float,
    limit: int = MAX_PER_PASS,
) -> list[Subject]:
    """The subjects to diagnose this pass: not ready for at least ``after`` seconds and not diagnosed in the last
    ``after`` seconds; the never-diagnosed first (the longest not ready first), then those diagnosed longest ago."""
    ready: list[tuple[tuple[int, float, float], Subject]] = []
    for subject in candidates:
        if (now - subject.since).total_seconds() < after:
            continue
        seen = memory.get(subject.uid)
        if seen is not None and monotonic - seen.diagnosed_at < after:
            continue
        order = (0, subject.since.timestamp(), 0.0) if seen is None else (1, seen.diagnosed_at, 0.0)
        ready.append((order, subject))
    ready.sort(key=lambda pair: (pair[0], pair[1].kind, pair[1].namespace, pair[1].name))
    return [subject for _, subject in ready[:limit]]


def to_record(cause: RootCause | None, previous: Memory | None) -> str | None:
    """The Event message to record for a diagnosis: the root cause's, unless that root cause (its rule) is the one
    recorded last."""
    if cause is None:
        return None
    if previous is not None and previous.recorded == cause.key():
        return None
    return cause.message()


def interval_for(after: float) -> float:
    return min(MAX_INTERVAL, max(MIN_INTERVAL, after / 10))


class DiagnosisLoop:
    """Runs in the leader only (the manager starts it with the workers)."""

    def __init__(
        self,
        cache: ObjectCache,
        diagnoser: Diagnoser,
        recorder: EventRecorder,
        after: float,
        *,
        metrics: Metrics | None = None,
    ) -> None:
        if after <= 0:
            raise ValueError(f"--diagnose-after must be positive, got {after}")
        self.metrics = metrics
        self.cache = cache
        self.diagnoser = diagnoser
        self.recorder = recorder
        self.after = after
        self.interval = interval_for(after)
        self.memory: dict[str, Memory] = {}
        self.diagnosed = 0  # diagnoses made (for the benchmarks and tests)
        self.recorded = 0  # RootCause Events recorded

    def pods_of(self, cluster: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
        labels = {c.RAY_CLUSTER_LABEL: objects.name(cluster)}
        return self.cache.list(PODS, objects.namespace(cluster), labels)

    def candidates(self) -> list[Subject]:
        found: list[Subject] = []
        for kind, res in ((c.KIND_RAYCLUSTER, RAYCLUSTERS), (c.KIND_RAYJOB, RAYJOBS), (c.KIND_RAYSERVICE, RAYSERVICES)):
            for informer in self.cache.informers(res):
                found += subjects(kind, informer.list(), self.pods_of)
        return found

    async def pass_once(self, now: datetime | None = None) -> list[Subject]:
        """One look: forget what is ready or gone, diagnose what is due, record what changed. Returns the due."""
        candidates = self.candidates()
        alive = {s.uid for s in candidates}
        for uid in [uid for uid in self.memory if uid not in alive]:
            log.info("%s is ready (or gone): forgotten", self.memory.pop(uid).about)
        chosen = due(
            candidates, self.memory, now=now or datetime.now(UTC), monotonic=time.monotonic(), after=self.after
        )
        if self.metrics is not None:
            self.metrics.diagnosis_passes.inc()
            self.metrics.diagnoses.inc(len(chosen))
        for subject in chosen:
            try:
                cause = await self.diagnoser.root_cause(subject.kind, subject.namespace, subject.name)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a diagnosis that fails must not stop the loop, nor the operator
                log.warning("diagnosing %s %s/%s failed: %s", subject.kind, subject.namespace, subject.name, exc)
                cause = None
            self.diagnosed += 1
            about = f"{subject.kind} {subject.namespace}/{subject.name}"
            previous = self.memory.get(subject.uid)
            message = to_record(cause, previous)
            recorded = previous.recorded if previous is not None else None
            if message is not None and cause is not None:
                regarding = {**subject.obj, "kind": subject.kind, "apiVersion": c.API_VERSION}
                self.recorder.event(regarding, WARNING, REASON, ACTION, message)
                self.recorded += 1
                if self.metrics is not None:
                    self.metrics.root_cause_events.inc()
                recorded = cause.key()
            said = "recorded" if message is not None else "unchanged" if cause is not None else "no root cause found"
            log.info("diagnosed %s: %s (%s)", about, cause.message() if cause else "-", said)
            self.memory[subject.uid] = Memory(time.monotonic(), recorded, about)
        return chosen

    async def run(self) -> None:
        log.info("diagnosing what stays not ready for %.0fs (--diagnose-after)", self.after)
        sender = asyncio.create_task(self.recorder.run(), name="events diagnosis")
        try:
            while True:
                try:
                    await self.pass_once()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("a diagnosis pass failed")
                await asyncio.sleep(self.interval)
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            await self.recorder.flush()

"""The controller skeleton: what a controller registers, what a reconcile pass is given, what it returns.

controller-runtime's shape, in Python. A controller is one :class:`Registration`, built the way a Go controller is
(``ctrl.NewControllerManagedBy(mgr).For(&RayCluster{}).Owns(&Pod{})...``)::

    Registration.named("raycluster", recorder="raycluster-controller")
        .for_(RAYCLUSTERS)
        .owns(PODS, label_selector=..., index_labels=(RAY_CLUSTER_LABEL,))
        .owns(SERVICES, index_labels=(RAY_CLUSTER_LABEL,))
        .complete(lambda deps: RayClusterReconciler(deps))

The runtime's manager turns registrations into informers (one per resource and namespace, shared by every
controller that watches the resource), routes each informer event to the work queue of the controller it concerns
(the primary object's own key, unless :attr:`Registration.primary_changed` says the update is status-only; an owned
object's key is its controller owner reference of the primary kind), and runs ``reconcile_concurrency`` workers per
controller. A reconciler sees the world only through :class:`Deps` (the ``Api``, ``Cache`` and ``Recorder``
protocols of :mod:`raykube.controllers.ports`), so a table test can hand it ``raykube.kube.fake.FakeKube`` instead.

Every write a controller reports goes through :func:`reported`: the write, then a Normal Event, or on an API error a
Warning Event whose note ends in the API server's message (unless the error is one the caller tolerates), as KubeRay's
controllers do.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar, overload

from raykube.api import constants as c
from raykube.builders.options import BuildOptions
from raykube.controllers.ports import Api, Cache, Dashboards, JobMetrics, Recorder, ServeProxies
from raykube.kube import objects
from raykube.kube.errors import ApiError
from raykube.kube.resources import Resource

Obj = Mapping[str, Any]
Key = tuple[str, str]  # (namespace, name) of the primary object

REQUEUE_SOON = 2.0  # KubeRay DefaultRequeueDuration


@dataclass(frozen=True)
class Result:
    """What a pass asks for: look again after ``requeue_after`` seconds, or only on the next event (None)."""

    requeue_after: float | None = None


class Reconciler(Protocol):
    async def reconcile(self, namespace: str, name: str) -> Result: ...


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass(frozen=True)
class Deps:
    """What the manager gives every reconciler it builds."""

    api: Api
    cache: Cache
    recorder: Recorder
    options: BuildOptions = field(default_factory=BuildOptions)
    clock: Callable[[], dt.datetime] = now_utc
    dashboards: Dashboards | None = None  # Ray dashboards (the RayJob and RayService controllers)
    job_metrics: JobMetrics | None = None  # kuberay_job_execution_duration_seconds (with --enable-metrics)
    serve_proxies: ServeProxies | None = None  # head Pods' Ray Serve proxy health (the RayService controller)


@dataclass(frozen=True)
class Watch:
    """A watched resource and how its informer is filtered (server side) and indexed (client side)."""

    res: Resource
    label_selector: str | None = None
    index_labels: tuple[str, ...] = ()
    # Set for a type the API server serves only once something is installed (a batch scheduler's CRD): the operator
    # lists it at start-up and, if it is not served, stops with this message instead of waiting for a sync.
    missing_hint: str | None = None
    # What the cache keeps of each object (``Informer(transform=)``); None keeps it all. One per resource: every
    # controller that watches the resource must declare the same function.
    transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None


def generation_or_metadata_changed(old: Obj | None, new: Obj | None) -> bool:
    """The primary-object predicate KubeRay's controllers use (``GenerationChangedPredicate`` or label or annotation
    changes, plus the start of a deletion): an update that only changed ``status`` starts no pass, so a controller's
    own status writes do not wake it again."""
    if old is None or new is None:
        return True
    before, after = objects.meta(old), objects.meta(new)
    return any(before.get(k) != after.get(k) for k in ("generation", "labels", "annotations", "deletionTimestamp"))


@dataclass(frozen=True)
class Registration:
    """One controller: the kind it reconciles, the kinds it owns, and how to build its reconciler."""

    name: str  # controller-runtime's controller name: the metrics' `controller` label and the work queue's name
    recorder: str  # the reporting controller of its events (KubeRay: "raycluster-controller")
    primary: Watch | None = None
    owned: tuple[Watch, ...] = ()
    # Read from the cache but never routed (controller-runtime's client reads through an informer it starts on first
    # use; here it is declared): the RayService controller's head Pods and EndpointSlices.
    reads: tuple[Watch, ...] = ()
    primary_changed: Callable[[Obj | None, Obj | None], bool] = generation_or_metadata_changed
    build: Callable[[Deps], Reconciler] | None = None

    @classmethod
    def named(cls, name: str, *, recorder: str) -> Registration:
        return cls(name, recorder)

    def for_(
        self, res: Resource, *, label_selector: str | None = None, index_labels: tuple[str, ...] = ()
    ) -> Registration:
        return replace(self, primary=Watch(res, label_selector, index_labels))

    def owns(
        self,
        res: Resource,
        *,
        label_selector: str | None = None,
        index_labels: tuple[str, ...] = (),
        missing_hint: str | None = None,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> Registration:
        watch = Watch(res, label_selector, index_labels, missing_hint, transform)
        return replace(self, owned=(*self.owned, watch))

    def reads_(
        self,
        res: Resource,
        *,
        label_selector: str | None = None,
        index_labels: tuple[str, ...] = (),
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> Registration:
        """A resource the reconciler reads from the cache without reacting to its events."""
        return replace(self, reads=(*self.reads, Watch(res, label_selector, index_labels, transform=transform)))

    def with_predicate(self, changed: Callable[[Obj | None, Obj | None], bool]) -> Registration:
        return replace(self, primary_changed=changed)

    def complete(self, build: Callable[[Deps], Reconciler]) -> Registration:
        if self.primary is None:
            raise ValueError(f"controller {self.name}: for_() names the kind it reconciles; it was not called")
        return replace(self, build=build)

    @property
    def kind(self) -> Resource:
        if self.primary is None:
            raise ValueError(f"controller {self.name} has no primary kind")
        return self.primary.res

    @property
    def watches(self) -> tuple[Watch, ...]:
        return (*((self.primary,) if self.primary else ()), *self.owned, *self.reads)

    def new_reconciler(self, deps: Deps) -> Reconciler:
        if self.build is None:
            raise ValueError(f"controller {self.name}: complete() was not called")
        return self.build(deps)

    # Event routing -----------------------------------------------------------------------------------------------
    def key_for_primary(self, event: str, old: Obj | None, new: Obj | None) -> Key | None:
        obj = new or old
        if obj is None or (event == "MODIFIED" and not self.primary_changed(old, new)):
            return None
        return objects.key(obj)

    def key_for_owned(self, old: Obj | None, new: Obj | None) -> Key | None:
        kind = self.kind
        return objects.controller_of(new, kind.kind, kind.group) or objects.controller_of(old, kind.kind, kind.group)


SpecT = TypeVar("SpecT")
ModelT = TypeVar("ModelT")


@dataclass(frozen=True)
class Context(Generic[ModelT, SpecT]):
    """One reconcile pass over one object: the live object from the cache, its validated model with a spec that is
    there (validation guarantees it), and where it lives. Read-only: ``obj`` is shared with the cache."""

    obj: Obj
    model: ModelT
    spec: SpecT
    namespace: str
    name: str

    @property
    def key(self) -> Key:
        return self.namespace, self.name

    @property
    def uid(self) -> str:
        return objects.uid(self.obj)

    @property
    def annotations(self) -> Mapping[str, str]:
        return objects.annotations(self.obj)


class OwnWrites:
    """The objects this controller's own writes returned, newer than the cache until the cache catches up.

    A pass that starts before the informer has delivered the previous pass's status write would compute the status
    from the old one and send the same write again: a write that changes nothing, one per lagging pass. client-go
    answers this with a mutation cache compared by integer ``resourceVersion`` (``NewIntegerResourceVersionMutation
    Cache``); this is that, for one kind. :meth:`newest` returns the remembered object while its resourceVersion is
    above the cached one (same uid), and forgets it as soon as the cache has caught up, the object is gone, or a
    resourceVersion is not an integer (then the cache is all there is, as before).
    """

    def __init__(self) -> None:
        self._objects: dict[Key, Obj] = {}

    def remember(self, obj: Obj) -> None:
        self._objects[objects.key(obj)] = obj

    def newest(self, key: Key, cached: Obj | None) -> Obj | None:
        written = self._objects.get(key)
        if written is None:
            return cached
        if cached is not None and objects.uid(written) == objects.uid(cached):
            try:
                ahead = int(objects.meta(written).get("resourceVersion") or 0) > int(
                    objects.meta(cached).get("resourceVersion") or 0
                )
            except ValueError:
                ahead = False
            if ahead:
                return written
        del self._objects[key]
        return cached

    def __len__(self) -> int:
        return len(self._objects)


class StatusPacer:
    """At most one *progress* status write per object every ``interval`` seconds, and, while many objects are coming
    up at once, at most about ``rate`` progress writes a second across all of them.

    While a cluster comes up its Pods change many times a second (scheduled, started, Ready, one after another), and
    every pass that sees a new ready count would write the status again. A write that only reports progress
    (``raykube.builders.status.progress_only``) waits until the object's pace has passed since its last status write,
    and the pass asks to run again when it is due, so the write that then goes out carries everything learned
    meanwhile. A write that moves the object along (a new ``state``, a failure, a suspend condition) goes out at
    once. Nothing is lost: the end state is the same, only intermediate counts show up later.

    The first status write of a lone object goes out at once (users see the cluster being provisioned, as with
    KubeRay). In a crowd (the pace above ``interval``) it waits the pace too, counted from the object's first pass:
    a cluster that comes up within it then gets one status write, its ready one, instead of two.

    The pace is ``interval`` for a lone object and grows with the number of objects still coming up (``unsettled``):
    ``unsettled / rate`` seconds, at most ``max_interval``; an object keeps the pace it had at its last write if that
    is longer (the last clusters of a crowd are not rushed once the others are ready). A thousand clusters created
    together then share about ``rate`` progress writes a second instead of each writing every ``interval``: their
    progress yields to the Pod creates and ready writes that share the operator's rate limit and the API server's
    CPU, which is how KubeRay's status writes thin out under load too (its passes queue behind each other). An
    interval of 0 writes every change at once (KubeRay's behaviour on a quiet cluster).
    """

    def __init__(
        self,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        rate: float = math.inf,
        max_interval: float | None = None,
    ) -> None:
        self.interval = interval
        self.rate = rate
        self.max_interval = max(interval, max_interval if max_interval is not None else interval)
        self.clock = clock
        # key -> (uid, monotonic time of the object's last status write, or of its first pass when that was deferred
        # in a crowd, the pace then)
        self._since: dict[Key, tuple[str, float, float]] = {}
        self._unsettled: set[Key] = set()

    def pace(self) -> float:
        """Seconds between two progress writes of one object now."""
        return min(self.max_interval, max(self.interval, len(self._unsettled) / self.rate))

    def due_in(self, key: Key, uid: str) -> float:
        """Seconds until a progress write for this object may go out (0: now)."""
        if self.interval <= 0:
            return 0.0
        since = self._since.get(key)
        if since is None or since[0] != uid:
            # Nothing written for this object yet: at once while the pacer is not crowded, else a pace after the
            # object's first pass (counted as if it had written then).
            pace = self.pace()
            if pace <= self.interval:
                return 0.0
            since = self._since[key] = (uid, self.clock(), pace)
        return max(0.0, since[1] + max(since[2], self.pace()) - self.clock())

    def settled(self, key: Key, settled: bool) -> None:
        """Whether the object has arrived (a cluster ready or suspended) or is still coming up."""
        if settled:
            self._unsettled.discard(key)
        elif self.interval > 0:
            self._unsettled.add(key)

    def wrote(self, key: Key, uid: str) -> None:
        if self.interval > 0:
            self._since[key] = (uid, self.clock(), self.pace())

    def forget(self, key: Key) -> None:
        self._since.pop(key, None)
        self._unsettled.discard(key)


# Writes and their events ---------------------------------------------------------------------------------------------
T = TypeVar("T")
Report = tuple[str, str]  # an Event's (reason, note)


@overload
async def reported(
    recorder: Recorder,
    obj: Obj,
    action: str,
    write: Awaitable[T],
    *,
    done: Report | Callable[[T], Report] | None,
    failed: Report | None,
    sep: str = ", ",
    tolerate: None = None,
    raise_as: Callable[[str, ApiError], Exception] | None = None,
) -> T: ...


@overload
async def reported(
    recorder: Recorder,
    obj: Obj,
    action: str,
    write: Awaitable[T],
    *,
    done: Report | Callable[[T], Report] | None,
    failed: Report | None,
    sep: str = ", ",
    tolerate: Callable[[ApiError], bool],
    raise_as: Callable[[str, ApiError], Exception] | None = None,
) -> T | None: ...


async def reported(
    recorder: Recorder,
    obj: Obj,
    action: str,
    write: Awaitable[T],
    *,
    done: Report | Callable[[T], Report] | None,
    failed: Report | None,
    sep: str = ", ",
    tolerate: Callable[[ApiError], bool] | None = None,
    raise_as: Callable[[str, ApiError], Exception] | None = None,
) -> T | None:
    """Await ``write`` (a create, replace, patch or delete through the ``Api``) and report it on ``obj``, as KubeRay's
    controllers do; the write's answer, or None when it failed with an error ``tolerate`` accepts.

    * It went through: a Normal event ``done`` (reason, note), or ``done(answer)`` when the note needs the answer
      (the name of an object created with ``generateName``); no event when ``done`` is None.
    * ``tolerate(error)`` is true (the object already exists, is gone, changed meanwhile; the cache has not caught
      up): None, no event.
    * Any other ``ApiError``: a Warning event with ``failed``'s reason and its note joined by ``sep`` to the API
      server's message (``"Failed to create ..., <message>"``; no event when ``failed`` is None), then
      ``raise_as(note, error)`` is raised from the error, or the error itself without ``raise_as``. ``note`` is the
      Warning's note (the API server's message when ``failed`` is None).

    Both events carry ``action``. Anything but an ``ApiError`` passes through untouched.
    """
    try:
        answer = await write
    except ApiError as exc:
        if tolerate is not None and tolerate(exc):
            return None
        note = f"{exc.message or exc}"
        if failed is not None:
            reason, what = failed
            note = f"{what}{sep}{note}"
            recorder.event(obj, c.EVENT_TYPE_WARNING, reason, action, note)
        if raise_as is None:
            raise
        raise raise_as(note, exc) from exc
    if done is not None:
        reason, note = done(answer) if callable(done) else done
        recorder.event(obj, c.EVENT_TYPE_NORMAL, reason, action, note)
    return answer


async def sent(write: Awaitable[None]) -> bool:
    """``write`` (a delete, which answers nothing), then True: so that :func:`reported` of a delete tells a write that
    went through (True) from a tolerated error (None)."""
    await write
    return True

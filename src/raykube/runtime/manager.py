"""The operator's runtime: controllers from their registrations, informers, the cache, work queues and workers.

A :class:`Manager` is given :class:`~raykube.controllers.base.Registration` s (:func:`default_registrations`: the
RayCluster, RayJob and RayService controllers', and RayCronJob's and NetworkPolicy's behind their feature gates) and
builds, as controller-runtime's manager does:

* **informers**: one per watched resource and namespace, shared by every controller that watches it. Two
  controllers watching one resource must agree on its label selector (the cache would otherwise hold two partial
  copies); their index labels are merged.
* **event routing**: an event of a controller's primary kind queues that object, unless the controller's predicate
  says nothing it reacts to changed (KubeRay: status-only updates start no pass); an event of an owned kind queues the
  object named by its controller owner reference of the primary kind.
* **per controller**: a work queue (never one key to two workers), an event recorder with its own rate limiter (as
  client-go's), its reconciler (built from :class:`~raykube.controllers.base.Deps`), and ``reconcile_concurrency``
  workers. A worker requeues as the reconciler asks (``requeue_after``) or, on an error, with per-key exponential
  back-off.
* **no pass on a stale cache**: while any informer that had synced is cut off from the API server (its watch failed
  and no list or watch has succeeded since), workers hold their keys and look again every ``STALE_RECHECK``
  seconds, for up to ``STALE_HOLD_LIMIT`` seconds (then the outage is taken as lasting, and work goes on). Its
  store may be missing a deletion, and acting on it could recreate the Pods of a RayCluster deleted meanwhile (seen
  on a kube-apiserver restart, tests/integration/test_api_faults.py). controller-runtime does not hold; the end state
  is the same, minus the wrong writes.

:meth:`Manager.preflight` first lists every watch that declares a ``missing_hint`` (Volcano's PodGroups with
``--batch-scheduler=volcano``): an informer for a type the API server does not serve would never sync, so the
operator stops at start-up with the hint instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS, RAYJOBS, RAYSERVICES
from raykube.builders.options import BuildOptions
from raykube.controllers.base import Deps, Key, Reconciler, Registration, Watch
from raykube.controllers.networkpolicy import registration as networkpolicy_registration
from raykube.controllers.raycluster import registration as raycluster_registration
from raykube.controllers.raycluster_mtls import registration as raycluster_mtls_registration
from raykube.controllers.raycronjob import registration as raycronjob_registration
from raykube.controllers.rayjob import registration as rayjob_registration
from raykube.controllers.rayservice import registration as rayservice_registration
from raykube.kube.client import Kube, TokenBucket
from raykube.kube.errors import ApiError
from raykube.kube.events import EVENTS_API, SPAM_BURST, EventRecorder
from raykube.kube.informer import Informer, ObjectCache
from raykube.kube.resources import PODS, Resource
from raykube.runtime.dashboard import HttpDashboards
from raykube.runtime.diagnosis import DiagnosisLoop
from raykube.runtime.logs import reconcile_context
from raykube.runtime.metrics import Metrics
from raykube.runtime.queue import WorkQueue

log = logging.getLogger(__name__)

# While an informer that had synced has lost its watch, reconciles wait and look again this often (seconds), for at
# most STALE_HOLD_LIMIT seconds per outage.
STALE_RECHECK = 0.5
# The operator's Events get this share of its client QPS (a tenth, as its progress status writes; KubeRay's broadcaster,
# one event at a time, sent about 9 a second to a 1,000-cluster burst on 2 cores, benchmarks/results/scale.jsonl).
EVENTS_QPS_SHARE = 0.1
# ... and are sent only while the rate limiter of its Pod writes is at least this full (events_room).
EVENTS_SPARE_SHARE = 0.5
STALE_HOLD_LIMIT = 60.0


def events_room(queue: WorkQueue[Key], workers: int, writes: TokenBucket) -> Callable[[], Awaitable[None]]:
    """What each of a controller's Events waits for before it is sent: the controller is not behind (at most as many
    keys wait in its queue as it has workers to take them) and its Pod writes (the budget a burst of new clusters
    drains) leave their rate limiter at least half full. During a burst of new clusters the Events wait (and past the
    recorder's queue limit are dropped, as client-go's) instead of taking the API server's time from the passes that
    bring clusters up; they go out once the burst is worked off."""

    async def room() -> None:
        await queue.wait_below(workers)
        await writes.spare(writes.burst * EVENTS_SPARE_SHARE)

    return room


class StartupError(RuntimeError):
    """The operator cannot run as configured (the message says what to do)."""


@dataclass
class ReconcileStats:
    total: int = 0
    errors: int = 0
    seconds: list[float] = field(default_factory=list)  # drained by the metrics collector


@dataclass
class Controller:
    """A registration brought to life: its queue, recorder, reconciler and statistics."""

    registration: Registration
    queue: WorkQueue[Key]
    recorder: EventRecorder
    reconciler: Reconciler
    stats: ReconcileStats = field(default_factory=ReconcileStats)

    @property
    def name(self) -> str:
        return self.registration.name


def default_registrations(options: BuildOptions) -> list[Registration]:
    """The controllers the operator runs: RayCluster, RayJob, RayService and, each only with its feature gate (as
    KubeRay v1.7.0 starts them), RayCronJob, NetworkPolicy and RayClusterMTLS (that one also only when cert-manager
    was found at start-up, :func:`api_served`: its Issuer and Certificate informers would never sync without it)."""
    registrations = [raycluster_registration(options), rayjob_registration(options), rayservice_registration(options)]
    if options.gate(c.GATE_RAY_CRON_JOB):
        registrations.append(raycronjob_registration(options))
    if options.gate(c.GATE_RAYCLUSTER_NETWORK_POLICY):
        registrations.append(networkpolicy_registration(options))
    if options.gate(c.GATE_RAYCLUSTER_MTLS) and options.cert_manager_available:
        registrations.append(raycluster_mtls_registration(options))
    return registrations


async def api_served(kube: Kube, res: Resource) -> bool:
    """Whether the API server serves ``res``'s group version (KubeRay v1.7.0 main.go ``certManagerAPIAvailable``:
    discovery lists it). Any error reads as not served, as there. KubeRay reads every group's resources and also
    gives up when an unrelated aggregated API fails to answer; this asks for the one group version only."""
    try:
        found = await kube.request("get", "GET", res, f"/apis/{res.group}/{res.version}")
    except ApiError as exc:
        if not exc.not_found:
            log.info("discovery of %s/%s failed: %s", res.group, res.version, exc)
        return False
    except Exception as exc:  # a connection error: KubeRay's discovery client gives up the same way
        log.info("discovery of %s/%s failed: %s", res.group, res.version, exc)
        return False
    return isinstance(found, Mapping) and found.get("groupVersion") == res.api_version


def _merge_watches(registrations: Sequence[Registration]) -> dict[Resource, Watch]:
    merged: dict[Resource, Watch] = {}
    for reg in registrations:
        for watch in reg.watches:
            seen = merged.get(watch.res)
            if seen is None:
                merged[watch.res] = watch
                continue
            if seen.label_selector != watch.label_selector:
                raise ValueError(
                    f"controllers watch {watch.res} with different label selectors ({seen.label_selector!r} and "
                    f"{watch.label_selector!r}); the cache holds one copy per resource, so they must agree"
                )
            if seen.transform is not watch.transform:
                raise ValueError(
                    f"controllers watch {watch.res} with different transforms; the cache holds one copy per resource, "
                    "so they must keep the same fields"
                )
            labels = tuple(dict.fromkeys((*seen.index_labels, *watch.index_labels)))
            hint = seen.missing_hint or watch.missing_hint
            merged[watch.res] = Watch(watch.res, watch.label_selector, labels, hint, seen.transform)
    return merged


class Manager:
    def __init__(
        self,
        kube: Kube,
        *,
        options: BuildOptions | None = None,
        namespaces: Sequence[str] | None = None,
        reconcile_concurrency: int = 1,
        identity: str | None = None,
        metrics: Metrics | None = None,
        registrations: Sequence[Registration] | None = None,
        use_kubernetes_proxy: bool = False,
    ) -> None:
        if reconcile_concurrency < 1:
            raise ValueError(f"--reconcile-concurrency must be at least 1, got {reconcile_concurrency}")
        self.kube = kube
        self.options = options or BuildOptions()
        self.namespaces: Sequence[str | None] = list(namespaces) if namespaces else [None]
        self.concurrency = reconcile_concurrency
        self.identity = identity or f"raykube-{uuid.uuid4().hex[:8]}"
        self.metrics = metrics
        self.cache = ObjectCache()
        self.informers: list[Informer] = []
        self._held_for: Informer | None = None  # the stale informer reconciles are held for, if any
        self._gave_up_on: set[Informer] = set()  # stale for longer than STALE_HOLD_LIMIT: no longer held for
        regs = list(registrations) if registrations is not None else default_registrations(self.options)
        self.watches = _merge_watches(regs)
        self.hints = {w.res: w.missing_hint for w in self.watches.values() if w.missing_hint}
        self._preflight_done = False
        self._stopping = False  # set first thing in stop(): nothing starts after it (a stop during start-up)

        # The Ray dashboards (RayJob, RayService): direct, or through the API server with --use-kubernetes-proxy.
        self.dashboards = HttpDashboards(kube, use_kubernetes_proxy=use_kubernetes_proxy)
        self.controllers: list[Controller] = []
        for reg in regs:
            # events.k8s.io/v1 Events, as KubeRay v1.7.0's (controller-runtime's GetEventRecorder: client-go's events
            # package, reportingController the recorder's name, reportingInstance "<name>-<hostname>"), off the hot
            # path: a rate limiter of their own at a tenth of the operator's QPS (burst: client-go's per-object spam
            # burst), and sent only while the controller keeps up (events_room).
            events_client = kube.sibling(qps=kube.qps * EVENTS_QPS_SHARE, burst=SPAM_BURST)
            queue: WorkQueue[Key] = WorkQueue(reg.name)
            room = events_room(queue, self.concurrency, kube.limiter(PODS))
            recorder = EventRecorder(events_client, reg.recorder, api=EVENTS_API, log_events=True, room=room)
            deps = Deps(
                kube,
                self.cache,
                recorder,
                self.options,
                dashboards=self.dashboards,
                job_metrics=self.metrics,
                serve_proxies=self.dashboards,
            )
            self.controllers.append(Controller(reg, queue, recorder, reg.new_reconciler(deps)))

        for namespace in self.namespaces:
            for watch in self.watches.values():
                informer = Informer(
                    kube,
                    watch.res,
                    namespace=namespace,
                    label_selector=watch.label_selector,
                    index_labels=watch.index_labels,
                    transform=watch.transform,
                )
                for ctl in self.controllers:
                    self._route(informer, ctl)
                self.cache.register(informer)
                self.informers.append(informer)

        if metrics is not None:
            metrics.watch_clusters(self.cache.informers(RAYCLUSTERS))
            metrics.watch_jobs(self.cache.informers(RAYJOBS))
            metrics.watch_services(self.cache.informers(RAYSERVICES))
            for ctl in self.controllers:
                metrics.watch_queue(ctl.queue)
                metrics.max_concurrent.labels(ctl.name).set(reconcile_concurrency)
        # --diagnose-after (raykube.runtime.diagnosis): set by the operator, run by the leader beside the workers.
        self.diagnosis: DiagnosisLoop | None = None
        self.synced = asyncio.Event()  # every informer has listed once
        self.ready = asyncio.Event()  # caches synced and workers running
        self._tasks: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------------------------------------- routing
    @staticmethod
    def _route(informer: Informer, ctl: Controller) -> None:
        reg = ctl.registration
        if informer.res == reg.kind:

            def on_primary(event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
                key = reg.key_for_primary(event, old, new)
                if key is not None:
                    ctl.queue.add(key)

            informer.add_handler(on_primary)
        if any(w.res == informer.res for w in reg.owned):

            def on_owned(event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
                key = reg.key_for_owned(old, new)
                if key is not None:
                    ctl.queue.add(key)

            informer.add_handler(on_owned)

    # ------------------------------------------------------------------------------------------------- compat
    @property
    def controller(self) -> Controller:
        """The first (today: the only) controller."""
        return self.controllers[0]

    @property
    def queue(self) -> WorkQueue[Key]:
        return self.controller.queue

    @property
    def stats(self) -> ReconcileStats:
        return self.controller.stats

    @property
    def recorder(self) -> EventRecorder:
        return self.controller.recorder

    # ------------------------------------------------------------------------------------------------- running
    def _hold_if_stale(self, ctl: Controller, key: Key) -> bool:
        """True (and ``key`` queued again) while an informer that had synced has lost its watch, for at most
        ``STALE_HOLD_LIMIT`` seconds: one cut off longer is not an outage that ends (a permission taken away, a type
        no longer served), and the operator goes on with the cache it has rather than stop for good."""
        now = time.monotonic()
        stale = None
        for informer in self.informers:
            if informer.stale:
                if now - (informer.lost_at or now) < STALE_HOLD_LIMIT:
                    stale = informer
                    break
                if informer not in self._gave_up_on:
                    log.warning(
                        "%s has been cut off for over %.0fs; reconciling on its cache, which may be out of date",
                        informer,
                        STALE_HOLD_LIMIT,
                    )
                    self._gave_up_on.add(informer)
            else:
                self._gave_up_on.discard(informer)
        if stale is None:
            if self._held_for is not None:
                log.info("every informer is watching again; reconciling")
                self._held_for = None
            return False
        # A cache that lost its watch may miss a deletion: acting on it would, say, recreate the Pods of a RayCluster
        # that is gone. Hold every pass until the informer is back (it relists on 410).
        if self._held_for is not stale:
            log.warning("%s lost its watch; holding reconciles until it is back", stale)
            self._held_for = stale
        ctl.queue.done(key)
        ctl.queue.add_after(key, STALE_RECHECK)
        return True

    async def _worker(self, ctl: Controller) -> None:
        metrics = self.metrics
        while True:
            key = await ctl.queue.get()
            if key is None:
                return
            if self._hold_if_stale(ctl, key):
                continue
            started = time.monotonic()
            outcome = "success"
            token = reconcile_context.set(
                {ctl.registration.kind.kind: key[1], "namespace": key[0], "reconcileID": str(uuid.uuid4())}
            )
            if metrics:
                metrics.active_workers.labels(ctl.name).inc()
            try:
                result = await ctl.reconciler.reconcile(*key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                outcome = "error"
                ctl.stats.errors += 1
                delay = ctl.queue.add_rate_limited(key)
                log.warning("reconcile failed: %s; retrying in %.2fs", exc, delay)
            else:
                ctl.queue.forget(key)
                if result.requeue_after is not None:
                    outcome = "requeue_after"
                    ctl.queue.add_after(key, result.requeue_after)
            finally:
                seconds = time.monotonic() - started
                ctl.stats.total += 1
                ctl.stats.seconds.append(seconds)
                if metrics:
                    metrics.active_workers.labels(ctl.name).dec()
                    metrics.reconcile_total.labels(ctl.name, outcome).inc()
                    metrics.reconcile_time.labels(ctl.name).observe(seconds)
                    if outcome == "error":
                        metrics.reconcile_errors.labels(ctl.name).inc()
                reconcile_context.reset(token)
                ctl.queue.done(key)

    async def preflight(self) -> None:
        """Refuse to start when a watched type that needs installing (a batch scheduler's CRD) is not served."""
        if self._preflight_done:
            return
        namespace = self.namespaces[0]
        for res, hint in self.hints.items():
            try:
                await self.kube.request("list", "GET", res, res.path(namespace), params={"limit": 1})
            except ApiError as exc:
                if not exc.not_found:
                    raise StartupError(
                        f"cannot list {res.plural}.{res.group}: {exc} (the operator's RBAC needs list and watch on "
                        "them)"
                    ) from exc
                raise StartupError(hint) from exc
        self._preflight_done = True

    async def start_caches(self) -> None:
        """Start the informers and wait for their first lists (a standby keeps warm caches this way)."""
        await self.preflight()
        if self._stopping:
            return
        if not self._tasks:
            self._tasks = [asyncio.create_task(i.run(), name=f"informer {i.res}") for i in self.informers]
        await asyncio.gather(*(i.synced.wait() for i in self.informers))
        self.synced.set()

    async def start_workers(self) -> None:
        """Start sending events and reconciling (the leader does this; caches must be synced)."""
        await self.synced.wait()
        if self._stopping:
            return
        for ctl in self.controllers:
            self._tasks.append(asyncio.create_task(ctl.recorder.run(), name=f"events {ctl.name}"))
            self._tasks += [
                asyncio.create_task(self._worker(ctl), name=f"worker {ctl.name} {n}") for n in range(self.concurrency)
            ]
        if self.diagnosis is not None:
            self._tasks.append(asyncio.create_task(self.diagnosis.run(), name="diagnosis"))
        self.ready.set()
        log.info(
            "caches synced; %d reconcile worker(s) running per controller (%s)",
            self.concurrency,
            ", ".join(ctl.name for ctl in self.controllers),
        )

    def shutdown_queues(self) -> None:
        """No new reconcile starts from this moment (in-flight passes finish)."""
        for ctl in self.controllers:
            ctl.queue.shutdown()

    async def start(self) -> None:
        """Start informers and the event senders, wait for the caches, then start the workers."""
        await self.start_caches()
        await self.start_workers()

    async def stop(self, grace: float = 10.0) -> None:
        """Stop taking work, let in-flight reconciles finish (up to ``grace`` seconds), then stop everything.

        A stop may come while :meth:`start_caches` or :meth:`start_workers` is still to run (the operator's own tasks
        start them): once stopping, they start nothing, so no informer or worker outlives the stop."""
        self._stopping = True
        self.shutdown_queues()
        workers = [t for t in self._tasks if t.get_name().startswith("worker")]
        if workers:
            await asyncio.wait(workers, timeout=grace)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for ctl in self.controllers:
            await ctl.recorder.flush()
        await self.dashboards.close()
        self._tasks = []

    async def run(self, stop: asyncio.Event) -> None:
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.stop()

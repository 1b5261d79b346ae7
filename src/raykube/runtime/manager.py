"""The operator's runtime: informers, the cache the reconcilers read, the work queue and its workers.

``Manager.run()`` starts an informer per watched resource and namespace (RayClusters; Pods restricted to KubeRay's
node types, as KubeRay's own cache is; Services), waits for their first lists, then runs
``reconcile_concurrency`` workers. Every informer event is mapped to the key of the RayCluster it concerns:

* a RayCluster event → that cluster, unless only its status changed (KubeRay reconciles on generation, label and
  annotation changes of the CR itself, so its own status writes do not cause another pass);
* a Pod or Service event → the RayCluster named by its controller owner reference (``ray.io`` kind RayCluster).

With a ``--batch-scheduler`` whose plugin creates objects (Volcano's PodGroups), those are watched too (KubeRay's
``Owns``), and :meth:`Manager.preflight` first checks that the API server serves them: without Volcano's CRD the
informer could never sync, so the operator stops at start-up with a message saying what to install.

A worker takes a key, runs the reconciler, and requeues as it asks (``requeue_after``) or, on an error, with
per-key exponential back-off. The queue never gives one key to two workers at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from raykube.api import constants as c
from raykube.builders import batch
from raykube.builders.options import BuildOptions
from raykube.controllers.expectations import ScaleExpectations
from raykube.controllers.ports import (
    INGRESSES,
    JOBS,
    PODS,
    RAYCLUSTERS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    ApiError,
    Resource,
    resource_of,
)
from raykube.controllers.raycluster import CONTROLLER_NAME, RayClusterReconciler
from raykube.runtime.events import EventRecorder
from raykube.runtime.informer import Informer
from raykube.runtime.kube import Kube
from raykube.runtime.logs import reconcile_context
from raykube.runtime.metrics import CONTROLLER, Metrics
from raykube.runtime.queue import WorkQueue

log = logging.getLogger(__name__)

Key = tuple[str, str]

# KubeRay internal/managercache: only Ray Pods are cached, so unrelated Pods cost no memory.
POD_SELECTOR = f"{c.RAY_NODE_TYPE_LABEL} in ({','.join(c.CACHED_POD_NODE_TYPES)})"


@dataclass
class ReconcileStats:
    total: int = 0
    errors: int = 0
    seconds: list[float] = field(default_factory=list)  # drained by the metrics collector


class InformerCache:
    """The ``Cache`` the reconcilers read: one or more informers per resource (one per watched namespace)."""

    def __init__(self) -> None:
        self._informers: dict[Resource, list[Informer]] = {}

    def register(self, informer: Informer) -> None:
        self._informers.setdefault(informer.res, []).append(informer)

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


class StartupError(RuntimeError):
    """The operator cannot run as configured (the message says what to do)."""


def _owner_cluster(obj: Mapping[str, Any] | None) -> Key | None:
    meta = (obj or {}).get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        is_cluster = ref.get("kind") == c.KIND_RAYCLUSTER and str(ref.get("apiVersion", "")).startswith(c.API_GROUP)
        if is_cluster and ref.get("controller"):
            return str(meta.get("namespace", "")), str(ref.get("name", ""))
    return None


def _spec_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    if old is None or new is None:
        return True
    before, after = old.get("metadata") or {}, new.get("metadata") or {}
    return any(before.get(k) != after.get(k) for k in ("generation", "labels", "annotations", "deletionTimestamp"))


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
    ) -> None:
        if reconcile_concurrency < 1:
            raise ValueError(f"--reconcile-concurrency must be at least 1, got {reconcile_concurrency}")
        self.kube = kube
        self.options = options or BuildOptions()
        self.namespaces: Sequence[str | None] = list(namespaces) if namespaces else [None]
        self.concurrency = reconcile_concurrency
        self.identity = identity or f"raykube-{uuid.uuid4().hex[:8]}"
        self.cache = InformerCache()
        self.queue: WorkQueue[Key] = WorkQueue("raycluster")
        self.recorder = EventRecorder(kube.sibling(), CONTROLLER_NAME)  # its own rate limiter, as client-go's
        self.expectations = ScaleExpectations()
        self.reconciler = RayClusterReconciler(
            kube, self.cache, self.recorder, self.options, expectations=self.expectations
        )
        self.stats = ReconcileStats()
        self.informers: list[Informer] = []
        plugin = batch.get(self.options.batch_scheduler)
        self.batch_resources = [resource_of(kind) for kind in (plugin.kinds if plugin else ())]
        self._preflight_done = False
        for namespace in self.namespaces:
            clusters = Informer(kube, RAYCLUSTERS, namespace=namespace)
            pods = Informer(
                kube, PODS, namespace=namespace, label_selector=POD_SELECTOR, index_labels=(c.RAY_CLUSTER_LABEL,)
            )
            svcs = Informer(kube, SERVICES, namespace=namespace, index_labels=(c.RAY_CLUSTER_LABEL,))
            created_by = f"{c.K8S_CREATED_BY_LABEL}={c.COMPONENT_NAME}"
            owned = [
                # What the operator creates around a cluster: few objects, each filtered the way KubeRay's cache
                # filters Jobs (created-by) or by the cluster label.
                Informer(kube, SERVICE_ACCOUNTS, namespace=namespace, label_selector=created_by),
                Informer(kube, ROLES, namespace=namespace, label_selector=created_by),
                Informer(kube, ROLE_BINDINGS, namespace=namespace, label_selector=created_by),
                Informer(kube, JOBS, namespace=namespace, label_selector=created_by),
                Informer(kube, SECRETS, namespace=namespace, label_selector=c.RAY_CLUSTER_LABEL),
                Informer(kube, INGRESSES, namespace=namespace, label_selector=c.RAY_CLUSTER_LABEL),
                # The batch scheduler's objects (Volcano PodGroups): not labelled, so all of them, as KubeRay.
                *(Informer(kube, res, namespace=namespace) for res in self.batch_resources),
            ]
            clusters.add_handler(self._on_cluster)
            for informer in (pods, svcs, *owned):
                informer.add_handler(self._on_child)
            for informer in (clusters, pods, svcs, *owned):
                self.cache.register(informer)
                self.informers.append(informer)
        self.metrics = metrics
        if metrics is not None:
            metrics.watch_clusters([i for i in self.informers if i.res == RAYCLUSTERS])
            metrics.watch_queue(self.queue)
            metrics.max_concurrent.labels(CONTROLLER).set(reconcile_concurrency)
        self.synced = asyncio.Event()  # every informer has listed once
        self.ready = asyncio.Event()  # caches synced and workers running
        self._tasks: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------------------------------------- events
    def _on_cluster(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        obj = new or old
        if obj is None or (event == "MODIFIED" and not _spec_changed(old, new)):
            return
        meta = obj.get("metadata") or {}
        self.queue.add((str(meta.get("namespace", "")), str(meta.get("name", ""))))

    def _on_child(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        key = _owner_cluster(new) or _owner_cluster(old)
        if key is not None:
            self.queue.add(key)

    # ------------------------------------------------------------------------------------------------- running
    async def _worker(self) -> None:
        while True:
            key = await self.queue.get()
            if key is None:
                return
            started = time.monotonic()
            outcome = "success"
            token = reconcile_context.set({"RayCluster": key[1], "namespace": key[0], "reconcileID": str(uuid.uuid4())})
            if self.metrics:
                self.metrics.active_workers.labels(CONTROLLER).inc()
            try:
                result = await self.reconciler.reconcile(*key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                outcome = "error"
                self.stats.errors += 1
                delay = self.queue.add_rate_limited(key)
                log.warning("reconcile failed: %s; retrying in %.2fs", exc, delay)
            else:
                self.queue.forget(key)
                if result.requeue_after is not None:
                    outcome = "requeue_after"
                    self.queue.add_after(key, result.requeue_after)
            finally:
                seconds = time.monotonic() - started
                self.stats.total += 1
                self.stats.seconds.append(seconds)
                if self.metrics:
                    self.metrics.active_workers.labels(CONTROLLER).dec()
                    self.metrics.reconcile_total.labels(CONTROLLER, outcome).inc()
                    self.metrics.reconcile_time.labels(CONTROLLER).observe(seconds)
                    if outcome == "error":
                        self.metrics.reconcile_errors.labels(CONTROLLER).inc()
                reconcile_context.reset(token)
                self.queue.done(key)

    async def preflight(self) -> None:
        """Refuse to start when the batch scheduler's object types are not served (its CRDs are not installed)."""
        if self._preflight_done:
            return
        namespace = self.namespaces[0]
        for res in self.batch_resources:
            try:
                await self.kube.request("list", "GET", res, res.path(namespace), params={"limit": 1})
            except ApiError as exc:
                if not exc.not_found:
                    raise StartupError(
                        f"--batch-scheduler={self.options.batch_scheduler}: cannot list {res.plural}.{res.group}: "
                        f"{exc} (the operator's RBAC needs list and watch on them)"
                    ) from exc
                raise StartupError(
                    f"--batch-scheduler={self.options.batch_scheduler} needs {res.kind} objects "
                    f"({res.plural}.{res.group}/{res.version}), which the API server does not serve: install "
                    f"{self.options.batch_scheduler} (its CRDs) first, or run without --batch-scheduler"
                ) from exc
        self._preflight_done = True

    async def start_caches(self) -> None:
        """Start the informers and wait for their first lists (a standby keeps warm caches this way)."""
        await self.preflight()
        if not self._tasks:
            self._tasks = [asyncio.create_task(i.run(), name=f"informer {i.res}") for i in self.informers]
        await asyncio.gather(*(i.synced.wait() for i in self.informers))
        self.synced.set()

    async def start_workers(self) -> None:
        """Start sending events and reconciling (the leader does this; caches must be synced)."""
        await self.synced.wait()
        self._tasks.append(asyncio.create_task(self.recorder.run(), name="events"))
        self._tasks += [asyncio.create_task(self._worker(), name=f"worker {n}") for n in range(self.concurrency)]
        self.ready.set()
        log.info("caches synced; %d reconcile worker(s) running", self.concurrency)

    async def start(self) -> None:
        """Start informers and the event sender, wait for the caches, then start the workers."""
        await self.start_caches()
        await self.start_workers()

    async def stop(self, grace: float = 10.0) -> None:
        """Stop taking work, let in-flight reconciles finish (up to ``grace`` seconds), then stop everything."""
        self.queue.shutdown()
        workers = [t for t in self._tasks if t.get_name().startswith("worker")]
        if workers:
            await asyncio.wait(workers, timeout=grace)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.recorder.flush()
        self._tasks = []

    async def run(self, stop: asyncio.Event) -> None:
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.stop()

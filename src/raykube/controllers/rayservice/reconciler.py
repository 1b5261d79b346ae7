"""The RayService reconciler: Ray Serve applications on a RayCluster it creates, upgraded blue/green, as KubeRay v1.7.0.

KubeRay's ``ray-operator/controllers/ray/rayservice_controller.go`` ``Reconcile``, re-implemented over the pure layer
:mod:`raykube.builders.rayservice` (which maps each decision to its Go function). A pass, in KubeRay's order, every
normal exit coming back after 2 s:

1. the RayService from the cache (gone: the end); ``spec.managedBy`` naming another controller: the end, no status;
2. the serve-config cache forgets clusters that are neither active nor pending; clusters of this RayService that are
   neither are deleted ``rayClusterDeletionDelaySeconds`` (default 60) after this reconciler first saw them so (an
   in-memory timer, as KubeRay's: an operator restart restarts it); a RayService being deleted has every cluster
   deleted at once, and its finalizer ``ray.io/rayservice-finalizer`` removed once none is left (KubeRay v1.6.2);
   one without the finalizer gets it, and the pass ends there;
3. validation (:func:`raykube.api.validation.validate_rayservice`): a Warning ``InvalidRayServiceMetadata`` /
   ``InvalidRayServiceSpec``, ``Ready=False/ValidationFailed`` written, and no requeue (a spec fix starts a pass);
4. ``Ready=False/InitializingTimeout`` is terminal: only that clean-up runs (requeue while clusters remain);
5. the clusters: the pending one named in the status is created (``<rs>-<rand5>``, chosen by the previous pass), else
   the active and pending ones are updated in place when KubeRay would (operator version, worker groups appended;
   the cluster's own ``spec.suspend`` is kept: ``rayClusterConfig.suspend`` is only applied at creation, v1.7.0);
6. each cluster's head Pod gets ``ray.io/serve`` from its Serve proxy's ``/-/healthz`` (``"false"`` with
   ``excludeHeadPodFromServeSvc``); a cluster without a head Pod yet fails the pass ("found 0 head"), as KubeRay's;
7. Serve, once the head Pod is ready: the applications are read from the dashboard, and the config PUT when KubeRay
   would (a per-cluster cache of what was sent, an LRU of 1000 RayServices), for the pending cluster, else the active
   one unless a new cluster is about to be prepared;
8. when a cluster's applications are all RUNNING: ``<rs>-head-svc`` and ``<rs>-serve-svc`` are created or switched
   to it (the pending cluster first: the switch-over);
9. the status: cluster statuses, application statuses, promotion of pending → active once the Services point at it,
   a new pending cluster name when the goal hash has changed (``shouldPrepareNewCluster``), ``numServeEndpoints``
   from the serve Service's EndpointSlices, the conditions (Ready, UpgradeInProgress, the initializing timeout with
   its Warning event) and ``serviceStatus``; written to ``/status`` only when KubeRay would
   (``InconsistentRayServiceStatuses``).

Upgrade strategies: ``NewCluster`` (and unset, unless the operator's ``ENABLE_ZERO_DOWNTIME`` is ``false``),
``None``, and ``NewClusterWithIncrementalUpgrade`` (gate ``RayServiceIncrementalUpgrade``, beta and on in v1.7.0:
:mod:`~raykube.controllers.rayservice.upgrade`). ``spec.suspend`` runs right after validation
(:mod:`~raykube.controllers.rayservice.suspend`) and ends the pass while Suspending or Suspended is True.
The ``kuberay_service_*`` metrics are computed at scrape time from the informers (``runtime/metrics.py``), as
KubeRay's are.

Differences kept small and deliberate: the deletion timers are keyed by namespace and name (KubeRay: the cluster
name alone); the head Pod's label is set with a merge patch of the label (KubeRay: an Update of the whole Pod, which
a stale cache makes conflict); where KubeRay panics (the two Services point at different clusters) the pass fails.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from raykube.api import constants as c
from raykube.api.dashboard import DashboardError
from raykube.api.resources import RAYCLUSTERS, RAYSERVICES, RayService
from raykube.api.validation import FieldError, validate_rayservice
from raykube.builders import gowrites, names
from raykube.builders import rayjob as rj
from raykube.builders import rayservice as rs
from raykube.builders.options import BuildOptions
from raykube.builders.status import StatusError, head_pod, is_running_and_ready
from raykube.controllers.base import Deps, Registration, Result, reported
from raykube.controllers.rayservice.context import (
    ACTIVE,
    CONTROLLER,
    NORMAL,
    PENDING,
    REQUEUE,
    SERVICE_NAME_LABEL,
    WARNING,
    Obj,
    RayServiceError,
    ServiceContext,
    WithDeps,
    as_cluster,
    service_error,
    serving_port,
)
from raykube.controllers.rayservice.suspend import Suspender
from raykube.controllers.rayservice.upgrade import Upgrade
from raykube.controllers.watches import POD_SELECTOR, cached_head_service, cached_pod
from raykube.kube import objects, times
from raykube.kube.errors import ApiError
from raykube.kube.resources import ENDPOINT_SLICES, GATEWAYS, HTTPROUTES, PODS, SERVICES

log = logging.getLogger(__name__)


def generation_labels_or_annotations_changed(old: Obj | None, new: Obj | None) -> bool:
    """KubeRay's predicate on RayServices: ``GenerationChanged OR LabelChanged OR AnnotationChanged``; its own
    status writes start no pass (the 2 s requeue drives the rest)."""
    if old is None or new is None:
        return True
    before, after = objects.meta(old), objects.meta(new)
    return any(before.get(k) != after.get(k) for k in ("generation", "labels", "annotations"))


def registration(options: object = None) -> Registration:
    """KubeRay ``RayServiceReconciler.SetupWithManager``: ``For(RayService)`` with its predicate, ``Owns(RayCluster,
    Service)``. Head Pods and the serve Services' EndpointSlices are read from the cache without starting passes
    (KubeRay's client reads them through informers too, and does not watch them)."""
    reg = (
        Registration.named(CONTROLLER, recorder=c.RAYSERVICE_CONTROLLER_NAME)
        .for_(RAYSERVICES)
        .with_predicate(generation_labels_or_annotations_changed)
        .owns(RAYCLUSTERS)
        .owns(SERVICES, index_labels=(c.RAY_CLUSTER_LABEL,))
        .reads_(PODS, label_selector=POD_SELECTOR, index_labels=(c.RAY_CLUSTER_LABEL,), transform=cached_pod)
        # Only the serve Services' slices: the EndpointSlice controller copies a Service's labels onto its slices, and
        # every serve Service carries ray.io/serve (builders.rayservice.serve_service), no head Service does. The head
        # and worker Services of a thousand RayClusters then cost the cache nothing.
        .reads_(ENDPOINT_SLICES, label_selector=c.RAY_SERVE_LABEL, index_labels=(SERVICE_NAME_LABEL,))
    )
    # KubeRay v1.7.0 reads Gateways and HTTPRoutes through its client's cache and does not watch them (no Owns);
    # here they are read from informers, started only where the gate is on and the API was served at start-up.
    if (
        isinstance(options, BuildOptions)
        and options.gate(c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE)
        and options.gateway_api_available
    ):
        reg = reg.reads_(GATEWAYS).reads_(HTTPROUTES)
    return reg.complete(RayServiceReconciler)


class RayServiceReconciler(WithDeps):
    def __init__(self, deps: Deps, *, random: Callable[[], str] = names.random_suffix) -> None:
        super().__init__(deps)
        self.suspender = Suspender(deps)
        self.upgrade = Upgrade(deps)
        self.random = random
        # KubeRay ServeConfigs: "<ns>/<rs>" -> {cluster name: the serveConfigV2 last PUT to it}, an LRU of 1000.
        self.serve_configs: OrderedDict[str, dict[str, str]] = OrderedDict()
        # KubeRay RayClusterDeletionTimestamps: when a dangling cluster may be deleted.
        self.deletion_times: dict[tuple[str, str], datetime] = {}
        # (namespace, name) -> the (uid, resourceVersion) last validated and what validation said of it
        self.validated: dict[tuple[str, str], tuple[tuple[str, str], list[FieldError]]] = {}

    # -------------------------------------------------------------------------------------------------- entry
    async def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.cache.get(RAYSERVICES, namespace, name)
        if obj is None:
            self.validated.pop((namespace, name), None)
            return Result()
        spec = obj.get("spec")
        managed_by = spec.get("managedBy") if isinstance(spec, Mapping) else None
        if managed_by is not None and managed_by != c.MANAGED_BY_KUBERAY:  # utils.ManagedByExternalController
            return Result()
        original: dict[str, Any] = objects.copy_json(dict(obj.get("status") or {}))
        # KubeRay v1.6.2: clean-up, then the finalizer, then validation.
        try:
            model: RayService | None = RayService.model_validate(obj)
        except ValidationError:
            model = None  # the validator names the field below
        to_clean = False
        ctx: ServiceContext | None = None
        if model is not None and model.spec is not None:
            ctx = ServiceContext(obj, model, model.spec, namespace, name, original, objects.copy_json(original))
            # neither reads nor changes the working status: the pass goes on with this context
            self._clean_up_serve_config_cache(ctx)
            to_clean = await self._clean_up_clusters(ctx)
        ended = await self._finalizer_pass(obj, to_clean=to_clean)
        if ended is not None:
            return ended
        errors = self._validate(obj)
        if errors or ctx is None:
            error = errors[0] if errors else FieldError("spec", "the RayService has no valid spec")
            return await self._invalid(obj, objects.copy_json(original), error)
        return await self._reconcile_valid(ctx, to_clean=to_clean)

    def _validate(self, obj: Obj) -> list[FieldError]:
        """:func:`validate_rayservice` (metadata and spec, under this operator's gates), once per version of the
        RayService: a pass every 2 s reads the same object until something in it changes its resourceVersion."""
        version = (objects.uid(obj), objects.resource_version(obj))
        where = objects.key(obj)
        known = self.validated.get(where)
        if known is not None and known[0] == version and all(version):
            return known[1]
        errors = validate_rayservice(obj, features=self.gates)
        self.validated[where] = (version, errors)
        return errors

    async def _finalizer_pass(self, obj: Obj, *, to_clean: bool) -> Result | None:
        """KubeRay v1.6.2: a RayService being deleted waits for its clusters, then loses its finalizer; one without
        the finalizer gets it. The pass's result when it ends here, else None."""
        if objects.terminating(obj):
            if to_clean:
                return Result(REQUEUE)  # "waiting for RayClusters to be deleted"
            await self._set_finalizer(obj, present=False)
            return Result()
        if c.RAYSERVICE_FINALIZER not in objects.finalizers(obj):
            await self._set_finalizer(obj, present=True)
            return Result(REQUEUE)
        return None

    async def _set_finalizer(self, obj: Obj, *, present: bool) -> None:
        """Add or remove ``ray.io/rayservice-finalizer`` (KubeRay v1.6.2 ``controllerutil.AddFinalizer`` /
        ``RemoveFinalizer`` and an Update). The add is KubeRay's Update of its Go object (the spec as Go writes it,
        which bumps ``metadata.generation`` as KubeRay's does: RS-5); the removal, on a RayService being deleted, a
        JSON patch guarded by what was read."""
        finalizers = objects.finalizers(obj)
        if (c.RAYSERVICE_FINALIZER in finalizers) == present:
            return
        if present:
            body = gowrites.finalizer_update("RayService", obj, c.RAYSERVICE_FINALIZER)
            await self.api.replace(RAYSERVICES, objects.name(obj), body, objects.namespace(obj))
            return
        else:
            patch = [
                {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
                {
                    "op": "replace",
                    "path": "/metadata/finalizers",
                    "value": [f for f in finalizers if f != c.RAYSERVICE_FINALIZER],
                },
            ]
        await self.api.patch(RAYSERVICES, objects.name(obj), patch, objects.namespace(obj), patch_type="json")

    async def _reconcile_valid(self, ctx: ServiceContext, *, to_clean: bool) -> Result:
        original = ctx.original
        ctx, suspended = await self._suspend_pass(ctx)
        if suspended is not None:
            return suspended
        if rs.is_initializing_timeout(ctx.status):  # terminal: only the clean-up above
            return Result(REQUEUE) if to_clean else Result()

        try:
            active, pending = await self._reconcile_clusters(ctx)
        except ApiError as exc:
            if exc.not_found:  # client.IgnoreNotFound
                return Result(REQUEUE)
            raise RayServiceError(str(exc)) from exc
        except rs.RayServiceBuildError as exc:
            raise RayServiceError(str(exc)) from exc

        self.upgrade.rollback_state(ctx, active, pending)  # v1.7.0: before any serving decision
        incremental = rs.incremental_upgrade_enabled(ctx.service, self.gates)
        exclude = bool(ctx.spec.exclude_head_pod_from_serve_svc)
        await self._update_head_pod_serve_label(ctx, active, exclude=exclude)
        await self._update_head_pod_serve_label(ctx, pending, exclude=exclude)

        active_ready = pending_ready = False
        active_apps: dict[str, Any] | None = None
        pending_apps: dict[str, Any] | None = None
        if pending is not None:
            pending_ready, pending_apps = await self._reconcile_serve(ctx, pending)
        # The active cluster: alone and up to date, or beside the pending one in an incremental upgrade (both serve).
        if active is not None and (
            (pending is None and not self._should_prepare(ctx, active, None, serving=False))
            or (pending is not None and incremental)
        ):
            active_ready, active_apps = await self._reconcile_serve(ctx, active)

        route: Obj | None = None
        if incremental:
            await self.upgrade.per_cluster_serve_service(ctx, active)
            await self.upgrade.per_cluster_serve_service(ctx, pending)
            gateway = await self.upgrade.reconcile_gateway(ctx)
            route = await self.upgrade.reconcile_httproute(ctx, gateway, active, pending, pending_ready=pending_ready)

        head_svc: Obj | None = None
        serve_svc: Obj | None = None
        if pending_ready or active_ready:
            # During an incremental upgrade the pending cluster serves through its own Service and the HTTPRoute.
            target = pending if pending_ready and not self._incremental_in_progress(ctx) else active
            if target is None:  # a ready side has a cluster
                raise RayServiceError("no cluster to point the Services at")
            head_svc = await self._reconcile_service(ctx, target, head=True)
            serve_svc = await self._reconcile_service(ctx, target, head=False)

        self._calculate_status(
            ctx,
            head_svc=head_svc,
            serve_svc=serve_svc,
            active=active,
            pending=pending,
            active_apps=active_apps,
            pending_apps=pending_apps,
            route=route,
        )
        if rs.status_needs_update(original, ctx.status, incremental_gate=self._incremental_gate):
            await self._write(ctx.obj, ctx.status)
        return Result(REQUEUE)

    async def _suspend_pass(self, ctx: ServiceContext) -> tuple[ServiceContext, Result | None]:
        """KubeRay v1.7.0 ``handleSuspend``, its status written at once when it changed (``updateStatusIfChanged``):
        the context to go on with (the RayService as written) and, while ``Suspending`` or ``Suspended`` is True,
        the pass's result (the pass ends there)."""
        phase = rs.suspend_phase(ctx.original, suspend=bool(ctx.spec.suspend))
        if phase is rs.SuspendPhase.RUNNING:
            return ctx, None
        stamp = times.format_time(self.clock())
        generation = int(objects.meta(ctx.obj).get("generation") or 0)
        result = Result(REQUEUE)
        failure: RayServiceError | None = None
        status: dict[str, Any] = objects.copy_json(ctx.status)
        if phase is rs.SuspendPhase.SUSPENDED:
            result = Result()
        elif phase is rs.SuspendPhase.REQUESTED:
            status = rs.suspend_requested(ctx.status, generation=generation, stamp=stamp)
        elif phase is rs.SuspendPhase.RESUMING:
            status = rs.resumed(ctx.status, generation=generation, stamp=stamp)
        else:
            try:
                done = await self.suspender.delete_owned(ctx)
            except RayServiceError as exc:
                failure = exc
            else:
                status = (rs.suspend_completed if done else rs.suspend_waiting)(ctx.status, stamp=stamp)
        ctx.status.clear()
        ctx.status.update(status)
        if rs.status_needs_update(ctx.original, ctx.status, incremental_gate=self._incremental_gate):
            written = await self._write(ctx.obj, ctx.status)
            ctx = dataclasses.replace(ctx, obj=written)
        if failure is not None:
            raise failure
        return ctx, (result if rs.suspend_is_operative(ctx.status) else None)

    def _incremental_in_progress(self, ctx: ServiceContext) -> bool:
        return rs.incremental_upgrade_enabled(ctx.service, self.gates) and _is_true(
            ctx.status, c.CONDITION_UPGRADE_IN_PROGRESS
        )

    @property
    def _incremental_gate(self) -> bool:
        return self.options.gate(c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE)

    async def _invalid(self, obj: Obj, status: dict[str, Any], error: FieldError) -> Result:
        """KubeRay: a Warning event, ``Ready=False/ValidationFailed`` with the error, written at once; no requeue."""
        reason = (
            c.EVENT_INVALID_RAYSERVICE_METADATA
            if error.path.startswith("metadata")
            else c.EVENT_INVALID_RAYSERVICE_SPEC
        )
        note = f"{objects.namespace(obj)}/{objects.name(obj)}: {error.message}"
        self.recorder.event(obj, WARNING, reason, "Validate", note)
        stamp = times.format_time(self.clock())
        rs.set_condition(
            status, c.CONDITION_RAYSERVICE_READY, "False", c.REASON_RAYSERVICE_VALIDATION_FAILED, error.message,
            stamp=stamp,
        )  # fmt: skip
        await self._write(obj, status)
        return Result()

    # -------------------------------------------------------------------------------------------------- clean-up
    def _cache_key(self, ctx: ServiceContext) -> str:
        return f"{ctx.namespace}/{ctx.name}"

    def _clean_up_serve_config_cache(self, ctx: ServiceContext) -> None:
        """KubeRay ``cleanUpServeConfigCache``: forget what was sent to clusters that are neither active nor pending
        (the lookup counts as a use of the RayService's entry, as ``lru.Cache.Get`` does)."""
        key = self._cache_key(ctx)
        configs = self.serve_configs.get(key)
        if configs is None:
            return
        self.serve_configs.move_to_end(key)
        keep = (ctx.side(ACTIVE), ctx.side(PENDING))
        for cluster in [name for name in configs if name not in keep]:
            del configs[cluster]

    def _cached_config(self, ctx: ServiceContext, cluster: str) -> str:
        key = self._cache_key(ctx)
        configs = self.serve_configs.get(key)
        if configs is None:
            return ""
        self.serve_configs.move_to_end(key)
        return configs.get(cluster, "")

    def _cache_config(self, ctx: ServiceContext, cluster: str) -> None:
        """KubeRay ``cacheServeConfig``: an empty ``serveConfigV2`` is never cached **[Q]** (it is PUT every pass)."""
        config = ctx.spec.serve_config_v2 or ""
        if not config:
            return
        key = self._cache_key(ctx)
        configs = self.serve_configs.setdefault(key, {})
        self.serve_configs.move_to_end(key)
        configs[cluster] = config
        while len(self.serve_configs) > c.SERVE_CONFIG_LRU_SIZE:
            self.serve_configs.popitem(last=False)

    async def _clean_up_clusters(self, ctx: ServiceContext) -> bool:
        """KubeRay ``cleanUpRayClusterInstance``: each cluster of this RayService that is neither active nor pending
        is deleted once the deletion delay has passed since this reconciler first saw it so. Returns whether any
        such cluster remains."""
        labels = {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: ctx.name, c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYSERVICE}
        deleting = objects.terminating(ctx.obj)  # KubeRay v1.6.2: every cluster goes at once
        delay = ctx.spec.ray_cluster_deletion_delay_seconds
        seconds = c.RAYSERVICE_DEFAULT_CLUSTER_DELETION_DELAY_SECONDS if delay is None else int(delay)
        keep = () if deleting else (ctx.side(ACTIVE), ctx.side(PENDING))
        now = self.clock()
        remaining = False
        for cluster in self.cache.list(RAYCLUSTERS, ctx.namespace, labels):
            cluster_name = objects.name(cluster)
            if cluster_name in keep:
                continue
            remaining = True
            key = (ctx.namespace, cluster_name)
            deadline = self.deletion_times.get(key)
            if deadline is None and not deleting:
                self.deletion_times[key] = now + timedelta(seconds=seconds)
                log.info("dangling RayCluster %s scheduled for deletion in %ss", cluster_name, seconds)
                continue
            if not deleting and deadline is not None and not now > deadline:
                continue
            where = f"{ctx.namespace}/{cluster_name}"
            await reported(
                self.recorder,
                ctx.obj,
                "Delete",
                self.api.delete(RAYCLUSTERS, cluster_name, ctx.namespace, propagation="Background"),
                done=(c.EVENT_DELETED_RAYCLUSTER, f"Deleted the RayCluster {where}"),
                failed=(c.EVENT_FAILED_TO_DELETE_RAYCLUSTER, f"Failed to delete the RayCluster {where}"),
                sep=": ",
                raise_as=service_error,
            )
        return remaining

    # -------------------------------------------------------------------------------------------------- clusters
    async def _reconcile_clusters(self, ctx: ServiceContext) -> tuple[Obj | None, Obj | None]:
        """KubeRay ``reconcileRayCluster``: the active and pending clusters named in the status; the pending one is
        created when it does not exist (and nothing else is done then), else both are updated in place when
        ``shouldUpdateCluster`` says so."""
        active_name, pending_name = ctx.side(ACTIVE), ctx.side(PENDING)
        active = self.cache.get(RAYCLUSTERS, ctx.namespace, active_name) if active_name else None
        pending = self.cache.get(RAYCLUSTERS, ctx.namespace, pending_name) if pending_name else None
        if pending_name and pending is None:
            return active, await self._create_cluster(ctx, pending_name)
        if active is not None and rs.should_update_cluster(ctx.service, as_cluster(active), active=True):
            active = await self._update_cluster(ctx, active, "active")
        if pending is not None and rs.should_update_cluster(ctx.service, as_cluster(pending), active=False):
            pending = await self._update_cluster(ctx, pending, "pending")
        return active, pending

    async def _create_cluster(self, ctx: ServiceContext, cluster_name: str) -> Obj:
        body = gowrites.as_kuberay_writes(
            "RayCluster", rs.rayservice_cluster(ctx.service, cluster_name, gates=self.gates)
        )
        where = f"{ctx.namespace}/{cluster_name}"
        return await reported(
            self.recorder,
            ctx.obj,
            "Create",
            self.api.create(RAYCLUSTERS, body, ctx.namespace),
            done=(c.EVENT_CREATED_RAYCLUSTER, f"Created the RayCluster {where}"),
            failed=(c.EVENT_FAILED_TO_CREATE_RAYCLUSTER, f"Failed to create the RayCluster {where}"),
            sep=": ",
        )

    async def _update_cluster(self, ctx: ServiceContext, live: Obj, which: str) -> Obj:
        """``modifyRayCluster`` + Update: spec, labels and annotations replaced by the goal's **[Q]**."""
        cluster_name = objects.name(live)
        goal = rs.rayservice_cluster(ctx.service, cluster_name, gates=self.gates)
        body = gowrites.as_kuberay_writes("RayCluster", rs.updated_cluster(live, goal))
        where = f"{ctx.namespace}/{cluster_name}"
        return await reported(
            self.recorder,
            ctx.obj,
            "Update",
            self.api.replace(RAYCLUSTERS, cluster_name, body, ctx.namespace),
            done=(c.EVENT_UPDATED_RAYCLUSTER, f"Updated the {which} RayCluster {where}"),
            failed=(c.EVENT_FAILED_TO_UPDATE_RAYCLUSTER, f"Failed to update the {which} RayCluster {where}"),
            sep=": ",
        )

    def _should_prepare(self, ctx: ServiceContext, active: Obj | None, pending: Obj | None, *, serving: bool) -> bool:
        return rs.should_prepare_new_cluster(
            ctx.service,
            as_cluster(active) if active is not None else None,
            as_cluster(pending) if pending is not None else None,
            pending_serving=serving,
            gates=self.gates,
            zero_downtime_env=self.options.enable_zero_downtime,
            status=ctx.status,
        )

    # -------------------------------------------------------------------------------------------------- head Pod
    def _head_pod(self, cluster: Obj) -> Obj | None:
        """KubeRay ``GetRayClusterHeadPod`` from the cache."""
        labels = {c.RAY_CLUSTER_LABEL: objects.name(cluster), c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD}
        try:
            return head_pod(as_cluster(cluster), self.cache.list(PODS, objects.namespace(cluster), labels))
        except StatusError as exc:
            raise RayServiceError(str(exc)) from exc

    async def _update_head_pod_serve_label(self, ctx: ServiceContext, cluster: Obj | None, *, exclude: bool) -> None:
        """KubeRay ``updateHeadPodServeLabel``: ``ray.io/serve`` on the head Pod is whether its Serve proxy is healthy
        (``"false"`` without asking when the head is excluded from the serve Service)."""
        if cluster is None:
            return
        pod = self._head_pod(cluster)
        if pod is None:
            raise RayServiceError(
                f"found 0 head. cluster name {objects.name(cluster)}, namespace {objects.namespace(cluster)}"
            )
        new = c.RAY_SERVE_LABEL_FALSE
        if not exclude:
            if self.serve_proxies is None:
                raise RayServiceError("no Serve proxy health client is configured")
            healthy = await self.serve_proxies.proxy_healthy(pod, serving_port(pod))
            new = c.RAY_SERVE_LABEL_TRUE if healthy else c.RAY_SERVE_LABEL_FALSE
        if objects.labels(pod).get(c.RAY_SERVE_LABEL) == new:
            return
        where = f"{objects.namespace(pod)}/{objects.name(pod)}"
        patch = {"metadata": {"labels": {c.RAY_SERVE_LABEL: new}}}
        await reported(
            self.recorder,
            ctx.obj,
            "Update",
            self.api.patch(PODS, objects.name(pod), patch, objects.namespace(pod)),
            done=(c.EVENT_UPDATED_HEAD_POD_SERVE_LABEL, f'Updated the serve label to "{new}" for the Head Pod {where}'),
            failed=(
                c.EVENT_FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL,
                f'Failed to update the serve label to "{new}" for the Head Pod {where}',
            ),
            sep=": ",
            raise_as=service_error,
        )

    # -------------------------------------------------------------------------------------------------- Serve
    def _head_ready(self, cluster: Obj) -> bool:
        """``HeadPodReady`` is True (gate ``RayClusterStatusConditions``), else the head Pod is Running and Ready."""
        if self.options.gate(c.GATE_RAYCLUSTER_STATUS_CONDITIONS):
            cond = objects.condition(cluster, c.CONDITION_HEAD_POD_READY)
            return cond is not None and cond.get("status") == "True"
        try:
            pod = self._head_pod(cluster)
        except RayServiceError:
            return False
        return pod is not None and is_running_and_ready(pod)

    def _dashboard_url(self, cluster: Obj) -> str:
        """KubeRay ``FetchHeadServiceURL(cluster, "dashboard")`` from the cluster's head Service in the cache."""
        service_name, service = cached_head_service(self.cache, cluster)
        if service is None:
            raise RayServiceError(f'services "{service_name}" not found')
        try:
            return rj.dashboard_url(service, cluster_domain=self.options.cluster_domain)
        except rj.RayJobBuildError as exc:
            raise RayServiceError(str(exc)) from exc

    async def _reconcile_serve(self, ctx: ServiceContext, cluster: Obj) -> tuple[bool, dict[str, Any] | None]:
        """KubeRay ``reconcileServe``: once the head Pod is ready, read the applications (``isReady``: at least one,
        all RUNNING, as read *before* any PUT) and PUT the config when ``checkIfNeedSubmitServeApplications`` says."""
        if not self._head_ready(cluster):
            return False, None
        url = self._dashboard_url(cluster)
        if self.dashboards is None:
            raise RayServiceError("no dashboard client is configured")
        try:
            dashboard = await self.dashboards.for_cluster(cluster, url)
        except DashboardError as exc:
            raise RayServiceError(str(exc)) from exc
        cluster_name = objects.name(cluster)
        cached = self._cached_config(ctx, cluster_name)
        try:
            body = await dashboard.get_serve_details()
        except DashboardError as exc:
            raise RayServiceError(rs.GET_SERVE_STATUS_ERROR.format(err=f"failed to get serve details: {exc}")) from exc
        try:
            ready, applications = rs.serve_application_statuses(body)
        except rs.RayServiceBuildError as exc:
            raise RayServiceError(str(exc)) from exc
        config = ctx.spec.serve_config_v2 or ""
        submit, reason = rs.need_submit_serve_applications(cached, config, applications)
        log.info("checkIfNeedSubmitServeApplications on %s: %s (%s)", cluster_name, submit, reason)
        upgrading = self._incremental_in_progress(ctx)
        rolling_back = rs.incremental_upgrade_enabled(ctx.service, self.gates) and _is_true(
            ctx.status, c.CONDITION_ROLLBACK_IN_PROGRESS
        )
        is_active = cluster_name == ctx.status_side(ACTIVE)
        # v1.7.0: the active cluster keeps its config during an upgrade, the pending one during a rollback.
        skip = (is_active and upgrading and not rolling_back) or (not is_active and rolling_back)
        if submit and not skip:
            await self._update_serve_deployment(ctx, dashboard, cluster_name, config)
        if upgrading:
            await self.upgrade.target_capacity(ctx, cluster, dashboard, self._cached_config(ctx, cluster_name))
        return ready, applications

    async def _update_serve_deployment(
        self, ctx: ServiceContext, dashboard: Any, cluster_name: str, config: str
    ) -> None:
        where = f"{ctx.namespace}/{cluster_name}"
        capacity = None
        if rs.incremental_upgrade_enabled(ctx.service, self.gates):  # the side's target_capacity, when it has one
            for side in (ACTIVE, PENDING):
                entry = ctx.status.get(side) or {}
                if entry.get("rayClusterName") == cluster_name and entry.get("targetCapacity") is not None:
                    capacity = int(entry["targetCapacity"])
                    break
        try:
            await dashboard.update_deployments(rs.serve_config_body(config, target_capacity=capacity))
        except (DashboardError, rs.RayServiceBuildError) as exc:
            err = rs.UPDATE_SERVE_APPLICATIONS_ERROR.format(err=exc) if isinstance(exc, DashboardError) else str(exc)
            note = f"Failed to update serve applications to the RayCluster {where}: {err}"
            self.recorder.event(ctx.obj, WARNING, c.EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS, "Update", note)
            raise RayServiceError(err) from exc
        self._cache_config(ctx, cluster_name)
        note = f"Updated serve applications to the RayCluster {where}"
        self.recorder.event(ctx.obj, NORMAL, c.EVENT_UPDATED_SERVE_APPLICATIONS, "Update", note)

    # -------------------------------------------------------------------------------------------------- Services
    async def _reconcile_service(self, ctx: ServiceContext, cluster: Obj, *, head: bool) -> Obj:
        """KubeRay ``reconcileServices``: create the head (or serve) Service pointing at ``cluster``; one that exists
        is updated only when its ``ray.io/cluster`` selector differs (the switch-over), its ``clusterIP`` kept."""
        model = as_cluster(cluster)
        try:
            desired = (
                rs.head_service(ctx.service, model, self.options) if head else rs.serve_service(ctx.service, model)
            )
        except rs.RayServiceBuildError as exc:
            raise RayServiceError(str(exc)) from exc
        name = objects.name(desired)
        where = f"{ctx.namespace}/{name}"
        live = self.cache.get(SERVICES, ctx.namespace, name)
        if live is None:
            return await reported(
                self.recorder,
                ctx.obj,
                "Create",
                self.api.create(SERVICES, desired, ctx.namespace),
                done=(c.EVENT_CREATED_SERVICE, f"Created the service {where}"),
                failed=(c.EVENT_FAILED_TO_CREATE_SERVICE, f"Failed to create the service {where}"),
                raise_as=service_error,
            )
        body = rs.switched_service(live, desired)
        if body is None:
            return live
        return await reported(
            self.recorder,
            ctx.obj,
            "Update",
            self.api.replace(SERVICES, name, body, ctx.namespace),
            done=(c.EVENT_UPDATED_SERVICE, f"Updated the service {where}"),
            failed=(c.EVENT_FAILED_TO_UPDATE_SERVICE, f"Failed to update the service {where}"),
            raise_as=service_error,
        )

    # -------------------------------------------------------------------------------------------------- status
    def _calculate_status(
        self,
        ctx: ServiceContext,
        *,
        head_svc: Obj | None,
        serve_svc: Obj | None,
        active: Obj | None,
        pending: Obj | None,
        active_apps: dict[str, Any] | None,
        pending_apps: dict[str, Any] | None,
        route: Obj | None = None,
    ) -> None:
        """KubeRay ``calculateStatus`` into ``ctx.status``; with the incremental upgrade also the traffic read back
        from the HTTPRoute, its promotion and rollback rules, the new pending side's target capacity, and the serve
        endpoints of both clusters' own serve Services."""
        status = ctx.status
        status["observedGeneration"] = int(objects.meta(ctx.obj).get("generation") or 0)
        for side, cluster, apps in ((ACTIVE, active, active_apps), (PENDING, pending, pending_apps)):
            entry = dict(status.get(side) or {})
            entry["rayClusterStatus"] = objects.copy_json(dict((cluster or {}).get("status") or {}))
            if apps:
                entry["applicationStatuses"] = objects.copy_json(apps)
            else:
                entry.pop("applicationStatuses", None)
            status[side] = entry
        serving = False
        incremental = rs.incremental_upgrade_enabled(ctx.service, self.gates)
        if head_svc is not None and serve_svc is not None:
            if incremental:
                self._traffic_from_route(status, route, pending_exists=pending is not None)
            try:
                promoted, serving = rs.promote(
                    status, head_svc, serve_svc, incremental=incremental, pending_exists=pending is not None
                )
            except rs.RayServiceBuildError as exc:
                raise RayServiceError(str(exc)) from exc
            status.clear()
            status.update(promoted)
        if _is_true(status, c.CONDITION_ROLLBACK_IN_PROGRESS) and rs.rollback_complete(
            status, pending_head_ready=pending is not None and _is_true(pending, c.CONDITION_HEAD_POD_READY)
        ):
            completed = rs.rollback_completed(status, stamp=times.format_time(self.clock()))
            status.clear()
            status.update(completed)
            pending = None
        if self._should_prepare(ctx, active, pending, serving=serving):
            cluster_name = rs.new_cluster_name(ctx.service, suffix=self.random())
            status[PENDING] = rs.new_pending_side(status, cluster_name, incremental=incremental)
            log.info("preparing a new pending RayCluster %s", cluster_name)
        serve_services = [rs.serve_service_name(ctx.service)]
        if incremental and active is not None:  # the per-cluster serve Services carry the traffic
            serve_services = [names.serve_service_name(objects.name(active))]
        if incremental and pending is not None:
            serve_services.append(names.serve_service_name(objects.name(pending)))
        try:
            status["numServeEndpoints"] = sum(
                rs.num_serve_endpoints(self.cache.list(ENDPOINT_SLICES, ctx.namespace, {SERVICE_NAME_LABEL: svc}))
                for svc in serve_services
            )
        except rs.RayServiceBuildError as exc:
            raise RayServiceError(str(exc)) from exc
        conditioned, event = rs.calculate_conditions(status, annotations=ctx.annotations, now=self.clock())
        if event is not None:
            self.recorder.event(ctx.obj, WARNING, c.EVENT_RAYSERVICE_INITIALIZING_TIMEOUT, "Reconcile", event)
        conditioned["serviceStatus"] = rs.service_status(conditioned)
        status.clear()
        status.update(conditioned)

    def _traffic_from_route(self, status: dict[str, Any], route: Obj | None, *, pending_exists: bool) -> None:
        """``GetWeightsFromHTTPRoute`` into each side's ``trafficRoutedPercent``; a changed weight stamps that side's
        ``lastTrafficMigratedTime`` (the interval of the next step counts from it)."""
        active_weight, pending_weight = rs.route_weights(route, status)
        stamp = times.format_time(self.clock())
        for side, weight, present in ((ACTIVE, active_weight, True), (PENDING, pending_weight, pending_exists)):
            if weight < 0 or not present:
                continue
            entry = status.setdefault(side, {})
            old = entry.get("trafficRoutedPercent")
            entry["trafficRoutedPercent"] = weight
            if weight != (-1 if old is None else int(old)):
                entry["lastTrafficMigratedTime"] = stamp

    async def _write(self, obj: Obj, status: dict[str, Any]) -> Obj:
        """``Status().Update`` with ``lastUpdateTime`` now, on the version read (a conflict fails the pass)."""
        status["lastUpdateTime"] = times.format_time(self.clock())
        body = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "metadata": {**objects.meta(obj), "resourceVersion": objects.resource_version(obj)},
            "status": gowrites.status_as_kuberay_writes("RayService", status),  # as KubeRay's Go object writes it
        }
        try:
            return await self.api.replace(
                RAYSERVICES, objects.name(obj), body, objects.namespace(obj), subresource="status"
            )
        except ApiError as exc:
            raise RayServiceError(f"failed to update the RayService status: {exc.message or exc}") from exc


def _is_true(obj: Mapping[str, Any], type_: str) -> bool:
    """``meta.IsStatusConditionTrue`` on a status (``conditions``) or an object (``status.conditions``)."""
    conditions = obj.get("conditions") if "conditions" in obj else (obj.get("status") or {}).get("conditions")
    return any(x.get("type") == type_ and x.get("status") == "True" for x in conditions or [])

"""The RayCluster reconciler: make the Pods and Services of one RayCluster match its spec, then write its status.

Level-triggered: every pass reads the whole current state from the cache and acts on the difference, whatever event
caused it, so a missed or duplicated event costs nothing but a pass. The pass follows KubeRay v1.6.1's order
(``ray-operator/controllers/ray/raycluster_controller.go``, ``rayClusterReconcile``):

1. Gone from the cache → forget its expectations. ``managedBy`` another controller → leave it alone.
2. Invalid (``raykube.api.validation``) → a ``Warning InvalidRayClusterSpec``/``InvalidRayClusterMetadata`` event,
   nothing else. Valid, with autoscaler ``v1`` chosen and worker groups whose ``restartPolicy`` is not ``Never`` →
   a ``Warning InvalidRayClusterSpec`` on every pass, which goes on (KubeRay v1.7.0). Being deleted → nothing (owner
   references let the garbage collector remove the children).
3. The head Service (created once, never updated: a user's edits to it are not fought over), the headless worker
   Service of multi-host groups, the serve Service when asked for by annotation; then the claim of the embedded
   (rocksdb) GCS store (KubeRay v1.7.0 ``reconcileGCSStoragePVC``, :mod:`raykube.controllers.children`).
4. Pods: suspend (delete all, then stop), Recreate upgrades, the batch scheduler's objects (Volcano's PodGroup:
   created if missing, its ``minMember``/``minResources`` kept in step; ``raykube.builders.batch``), the head Pod, then
   each worker group in spec order:
   unhealthy Pods, ``scaleStrategy.workersToDelete`` (deleted every pass, never cleared: the autoscaler owns the
   list), then create or delete to reach ``clamp(replicas, min, max) * numOfHosts``. Surplus Pods are deleted only
   when in-tree autoscaling is off. Pods being deleted still count, as KubeRay v1.6.1 lists them: a replacement
   comes once the old Pod is gone (so a replica index is never held twice). Scale expectations keep a lagging cache
   from causing duplicates.
5. Status, computed from the cache by ``raykube.builders.status`` and written through the ``/status`` subresource as a
   merge patch, only when something KubeRay compares changed.

The pass returns when to look again: soon (2 s) while things are moving, in 5 minutes when all is quiet, or it raises
:class:`ReconcileError`, which the runtime retries with exponential back-off.

:func:`registration` is how the runtime learns what this controller watches (the RayCluster, and the Pods, Services,
autoscaler RBAC objects, Jobs, Secrets, Ingresses, PersistentVolumeClaims and batch scheduler objects it owns). Every
pass works on one :class:`ClusterContext`: the live object, its validated model and spec, and the cluster's children
in the cache.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec, WorkerGroupSpec
from raykube.api.resources import RAYCLUSTERS, RayCluster
from raykube.api.validation import FieldError, validate_raycluster
from raykube.builders import batch, certificates, groups, names, pods, services, spechash, status, tls, was
from raykube.builders.options import BuildOptions
from raykube.builders.patch import merge_patch
from raykube.controllers.base import (
    REQUEUE_SOON,
    Context,
    Deps,
    OwnWrites,
    Registration,
    Report,
    Result,
    StatusPacer,
    reported,
    sent,
)
from raykube.controllers.children import ChildError, Children
from raykube.controllers.expectations import ScaleExpectations
from raykube.controllers.ports import Cache
from raykube.controllers.watches import CREATED_BY_SELECTOR, POD_SELECTOR, cached_pod
from raykube.kube import objects
from raykube.kube.errors import ApiError
from raykube.kube.resources import (
    CERTIFICATES,
    INGRESSES,
    JOBS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
    Resource,
)

log = logging.getLogger(__name__)

CONTROLLER = "raycluster"  # controller-runtime's name for KubeRay's RayCluster controller (metrics, work queue)
REQUEUE_QUIET = 300.0  # KubeRay RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV default
# At most one status write that only reports progress per cluster in this many seconds (StatusPacer): KubeRay's
# DefaultRequeueDuration, the delay it gives a cluster that is coming up.
STATUS_PACE = REQUEUE_SOON
# ... and, while many clusters come up at once, about this many progress writes a second across them all (a tenth of
# the default client QPS), each cluster's never further apart than KubeRay's own periodic pass (StatusPacer's rate
# and max_interval).
STATUS_PROGRESS_RATE = 10.0
STATUS_PACE_MAX = REQUEUE_QUIET
_SETTLED_STATES = (c.CLUSTER_STATE_READY, c.CLUSTER_STATE_SUSPENDED)
NORMAL = c.EVENT_TYPE_NORMAL
WARNING = c.EVENT_TYPE_WARNING

Obj = Mapping[str, Any]


def registration(options: BuildOptions) -> Registration:
    """What the RayCluster controller reconciles and owns (KubeRay ``SetupWithManager``: ``For(RayCluster)``,
    ``Owns(Pod, Service)`` and the objects it creates around them), and how its reconciler is built."""
    reg = (
        Registration.named(CONTROLLER, recorder=c.RAYCLUSTER_CONTROLLER_NAME)
        .for_(RAYCLUSTERS)
        .owns(PODS, label_selector=POD_SELECTOR, index_labels=(c.RAY_CLUSTER_LABEL,), transform=cached_pod)
        .owns(SERVICES, index_labels=(c.RAY_CLUSTER_LABEL,))
        # What the operator creates around a cluster: few objects, each filtered the way KubeRay's cache filters
        # Jobs (created-by) or by the cluster label.
        .owns(SERVICE_ACCOUNTS, label_selector=CREATED_BY_SELECTOR)
        .owns(ROLES, label_selector=CREATED_BY_SELECTOR)
        .owns(ROLE_BINDINGS, label_selector=CREATED_BY_SELECTOR)
        .owns(JOBS, label_selector=CREATED_BY_SELECTOR)
        .owns(SECRETS, label_selector=c.RAY_CLUSTER_LABEL)
        # Every Ingress, as KubeRay's cache: v1.7.0 reads the dashboard Ingress by name, and one of that name the
        # cluster does not control (a user's, unlabelled) must be seen to be reported and left alone.
        .owns(INGRESSES)
        # Every PVC, as KubeRay v1.7.0's Owns(PersistentVolumeClaim): the embedded GCS store's claim, and a user's
        # storage.claimName (unlabelled) that must be seen to be found.
        .owns(PERSISTENT_VOLUME_CLAIMS)
    )
    plugin = batch.get(options.batch_scheduler)
    for res in plugin.kinds if plugin else ():
        # The batch scheduler's objects (Volcano PodGroups, WAS Workloads and PodGroups): all of them, as KubeRay.
        hint = (
            f"--batch-scheduler={options.batch_scheduler} needs {res.kind} objects ({res.plural}.{res.group}/"
            f"{res.version}), which the API server does not serve: install {options.batch_scheduler} (its CRDs) "
            "first, or run without --batch-scheduler"
        )
        reg = reg.owns(res, missing_hint=plugin.missing_api if isinstance(plugin, was.KubernetesWAS) else hint)
    expectations = ScaleExpectations()  # one per controller: it outlives every pass
    own = OwnWrites()  # the same
    pacer = StatusPacer(STATUS_PACE, rate=STATUS_PROGRESS_RATE, max_interval=STATUS_PACE_MAX)
    return reg.complete(lambda deps: RayClusterReconciler(deps, expectations=expectations, own=own, pacer=pacer))


@dataclass(frozen=True)
class ClusterContext(Context[RayCluster, RayClusterSpec]):
    """One pass over one valid RayCluster; the children are read from the cache when asked for (it moves as the
    pass writes, and the status at the end must see what the pass created)."""

    cache: Cache

    @property
    def cluster(self) -> RayCluster:
        return self.model

    @property
    def all_pods_selector(self) -> dict[str, str]:
        return {c.RAY_CLUSTER_LABEL: self.name}

    def pods(self, **labels: str) -> Sequence[Obj]:
        """The cluster's Pods in the cache (with these labels too)."""
        return self.cache.list(PODS, self.namespace, {c.RAY_CLUSTER_LABEL: self.name, **labels})

    def group_pods(self, group: str) -> list[Obj]:
        return [
            p
            for p in self.pods()
            if objects.labels(p).get(c.RAY_NODE_GROUP_LABEL) == group
            and objects.labels(p).get(c.RAY_NODE_TYPE_LABEL) == c.NODE_TYPE_WORKER
        ]

    def head_services(self) -> Sequence[Obj]:
        return self.cache.list(SERVICES, self.namespace, services.head_service_selector(self.cluster))

    def group(self, index: int) -> WorkerGroupSpec:
        groups_ = self.spec.worker_group_specs
        if not groups_ or index >= len(groups_):
            raise ReconcileError(f"worker group {index} does not exist")
        return groups_[index]

    @property
    def autoscaling(self) -> bool:
        return pods.is_autoscaling_enabled(self.spec)


class ReconcileError(Exception):
    """A pass that could not finish; ``failure`` feeds the ReplicaFailure condition."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.failure = status.ReconcileFailure(message, reason)


def _replica_failure(marker: str | None, exc: Exception) -> ReconcileError:
    """The error of a failed Pod create or delete. KubeRay returns ``errors.Join(<marker>, err)``, so its
    ReplicaFailure condition's message is the marker, a newline and the error's text: for an API error, the Status
    message (``StatusError.Error()``: ``pods "x-head-" is forbidden: ...``), without raykube's code and reason."""
    text = exc.message if isinstance(exc, ApiError) and exc.message else str(exc)
    return ReconcileError(f"{marker}\n{text}", marker) if marker else ReconcileError(str(exc))


class _NotYet(Exception):
    """Expectations not met yet: stop this pass quietly and look again soon."""


def _exists(exc: ApiError) -> bool:
    """AlreadyExists: the cache has not caught up with an earlier create."""
    return exc.already_exists


def _free_indices(used: set[str | None], count: int) -> list[int]:
    """The ``count`` lowest replica indices not in ``used`` (label values are strings)."""
    free: list[int] = []
    candidate = 0
    while len(free) < count:
        if str(candidate) not in used:
            free.append(candidate)
        candidate += 1
    return free


async def slow_start(items: Sequence[Obj], create: Callable[[Obj], Awaitable[None]]) -> None:
    """Create ``items`` in batches of 1, 2, 4, ... whose requests run at once, as Kubernetes' ReplicaSet controller
    does (``slowStartBatch``): many Pods take a few round trips instead of one each, and a failing create (a quota,
    an admission webhook) fails after one request rather than after all of them. The first failure of a batch is
    raised once the batch has finished; later batches are not started."""
    done, size = 0, 1
    while done < len(items):
        chunk = items[done : done + size]
        results = await asyncio.gather(*(create(item) for item in chunk), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        done += len(chunk)
        size *= 2


def _requeue(changed: bool | float, waiting: bool) -> float:
    """When to look again after a pass: soon after a status write, or while waiting for the cache; when a paced
    status write is due (``changed`` is then its delay; Pod events bring the cluster back before that anyway); else
    after the quiet period."""
    if changed is True:
        return REQUEUE_SOON
    if changed is False:
        return REQUEUE_SOON if waiting else REQUEUE_QUIET
    return min(changed, REQUEUE_SOON) if waiting else changed


def _validation_message(errors: Sequence[FieldError]) -> str:
    return "; ".join(f"{e.path}: {e.message}" for e in errors)


class RayClusterReconciler:
    def __init__(
        self,
        deps: Deps,
        *,
        expectations: ScaleExpectations | None = None,
        own: OwnWrites | None = None,
        pacer: StatusPacer | None = None,
    ) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.options = deps.options
        self.clock = deps.clock
        self.expectations = expectations or ScaleExpectations()
        self.own = own if own is not None else OwnWrites()  # status writes the cache has not delivered yet
        self.pacer = pacer if pacer is not None else StatusPacer(0.0)  # table tests: every change written at once
        self.children = Children(deps)
        # key -> (resourceVersion, its validation errors): most passes (a Pod changed) see the same RayCluster again
        self._validated: dict[tuple[str, str], tuple[str, list[FieldError]]] = {}

    # -------------------------------------------------------------------------------------------------- entry
    async def reconcile(self, namespace: str, name: str) -> Result:  # noqa: PLR0911 - KubeRay's early exits, in order
        obj = self.own.newest((namespace, name), self.cache.get(RAYCLUSTERS, namespace, name))
        if obj is None:
            self.expectations.forget((namespace, name))
            self.pacer.forget((namespace, name))
            self._validated.pop((namespace, name), None)
            return Result()
        spec = obj.get("spec") or {}
        managed_by = spec.get("managedBy") if isinstance(spec, Mapping) else None
        if managed_by and managed_by != c.MANAGED_BY_KUBERAY:
            return Result()
        errors = self._validate((namespace, name), obj)
        if errors:
            metadata = [e for e in errors if e.path.startswith("metadata")]
            reason = c.EVENT_INVALID_RAYCLUSTER_METADATA if metadata else c.EVENT_INVALID_RAYCLUSTER_SPEC
            self.recorder.event(obj, WARNING, reason, "Validate", _validation_message(metadata or errors))
            return Result()
        cluster = RayCluster.model_validate(obj)
        if cluster.spec is None:  # validation requires a spec; this keeps the type checker honest
            raise ReconcileError("the RayCluster has no spec")
        self._warn_autoscaler_v1_restart_policy(obj, cluster.spec, namespace, name)
        if tls.tls_enabled(cluster.spec, self.options) and not self.options.cert_manager_available:
            note = (  # KubeRay v1.7.0: checked after validation, once at start-up (main.go certManagerAPIAvailable)
                f"The RayCluster spec is invalid {namespace}/{name}: tlsOptions requires cert-manager, but "
                "cert-manager is not installed"
            )
            self.recorder.event(obj, WARNING, c.EVENT_INVALID_RAYCLUSTER_SPEC, "Validate", note)
            return Result()
        ctx = ClusterContext(obj, cluster, cluster.spec, namespace, name, self.cache)
        if objects.terminating(obj):
            requeue = await self.children.finalize(ctx)  # GCS FT Redis cleanup, if the finalizer is on
            return Result(requeue)
        if await self.children.ensure_finalizer(ctx):
            return Result(REQUEUE_SOON)  # as KubeRay: Pods come in the next pass, once the finalizer is stored

        failure: status.ReconcileFailure | None = None
        waiting = False
        try:
            await self.children.autoscaler_rbac(ctx)
            await self.children.ingress(ctx)
            await self.children.auth_secret(ctx)
            await self._reconcile_services(ctx)
            await self.children.gcs_storage_pvc(ctx)
            await self._reconcile_pods(ctx)
        except _NotYet:
            waiting = True
        except ReconcileError as exc:
            failure = exc.failure
        except (ChildError, ApiError) as exc:
            failure = status.ReconcileFailure(str(exc))

        changed = await self._update_status(ctx, failure)
        if failure is not None:
            raise ReconcileError(failure.message, failure.reason)
        return Result(_requeue(changed, waiting))

    def _warn_autoscaler_v1_restart_policy(self, obj: Obj, spec: RayClusterSpec, namespace: str, name: str) -> None:
        """KubeRay v1.7.0: on every pass of a valid cluster (the pass goes on), a Warning when autoscaler v1 is chosen
        explicitly and worker groups set a restartPolicy other than Never."""
        found = groups.autoscaler_v1_restart_policy_groups(spec)
        if found:
            note = (
                f"RayCluster spec warning {namespace}/{name}: restartPolicy for worker groups [{', '.join(found)}] "
                "should be Never or unset when using autoscaler V1"
            )
            self.recorder.event(obj, WARNING, c.EVENT_INVALID_RAYCLUSTER_SPEC, "Validate", note)

    def _validate(self, key: tuple[str, str], obj: Obj) -> list[FieldError]:
        """``validate_raycluster``, once per resourceVersion of the object (the API server gives every change of it
        a new one; an object without one, as in table tests, is validated every time)."""
        version = str(objects.meta(obj).get("resourceVersion") or "")
        seen = self._validated.get(key)
        if version and seen is not None and seen[0] == version:
            return seen[1]
        errors = list(validate_raycluster(obj, features=self.options.features))
        if version:
            self._validated[key] = (version, errors)
        return errors

    # -------------------------------------------------------------------------------------------------- writes
    async def _create(
        self, ctx: ClusterContext, res: Resource, body: Obj, *, done: Callable[[Obj], Report] | None = None
    ) -> dict[str, Any] | None:
        """Create ``body``; its apiVersion, kind and metadata (the callers want its name), or None when it already
        exists (the cache has not caught up yet). ``done`` is the Normal event of a create (:func:`reported`); a
        failure is raised as it is, without an event."""
        write = self.api.create(res, body, ctx.namespace, whole=False)
        return await reported(self.recorder, ctx.obj, "Create", write, done=done, failed=None, tolerate=_exists)

    async def _create_reported(
        self,
        ctx: ClusterContext,
        res: Resource,
        body: Obj,
        *,
        done: Callable[[Obj], Report],
        failed: Report,
        marker: str | None = None,
    ) -> dict[str, Any] | None:
        """:meth:`_create`; a failure becomes the ``(reason, note)`` Warning event and a :class:`ReconcileError`
        carrying the ReplicaFailure ``marker``."""
        return await reported(
            self.recorder,
            ctx.obj,
            "Create",
            self.api.create(res, body, ctx.namespace, whole=False),
            done=done,
            failed=failed,
            tolerate=_exists,
            raise_as=lambda _note, exc: _replica_failure(marker, exc),
        )

    async def _delete_pod(self, ctx: ClusterContext, pod: Obj, group: str) -> bool:
        """Delete ``pod`` (only that incarnation: uid precondition); False if it was already gone."""
        try:
            await self.api.delete(PODS, objects.name(pod), ctx.namespace, uid=objects.uid(pod) or None)
        except ApiError as exc:
            if exc.not_found or exc.conflict:
                return False
            raise
        self.expectations.expect_delete(ctx.key, group, objects.name(pod))
        return True

    # -------------------------------------------------------------------------------------------------- services
    async def _reconcile_services(self, ctx: ClusterContext) -> None:
        namespace = ctx.namespace
        existing = ctx.head_services()
        if len(existing) > 1:
            names = ", ".join(sorted(objects.name(s) for s in existing))
            raise ReconcileError(f"found {len(existing)} head Services for the RayCluster: {names}")

        def created_service(created: Obj) -> Report:
            return c.EVENT_CREATED_SERVICE, f"Created service {namespace}/{objects.name(created)}"

        if not existing:
            body = services.head_service(ctx.cluster, self.options)
            failed = (c.EVENT_FAILED_TO_CREATE_SERVICE, f"Failed to create service {namespace}/{objects.name(body)}")
            await self._create_reported(ctx, SERVICES, body, done=created_service, failed=failed)

        headless = services.headless_worker_service(ctx.cluster)
        if headless is not None and not self.cache.list(SERVICES, namespace, objects.labels(headless)):
            await self._create(ctx, SERVICES, headless, done=created_service)

        if services.serve_service_enabled(ctx.cluster):
            serve = services.serve_service(ctx.cluster)
            if serve is None:
                raise ReconcileError(services.SERVE_PORT_MISSING_MESSAGE)
            if self.cache.get(SERVICES, namespace, objects.name(serve)) is None:
                await self._create(ctx, SERVICES, serve)  # KubeRay creates the serve Service without an event

    # -------------------------------------------------------------------------------------------------- pods
    async def _reconcile_pods(self, ctx: ClusterContext) -> None:
        namespace, name, spec = ctx.namespace, ctx.name, ctx.spec
        everything = ctx.all_pods_selector

        if status.is_suspending(ctx.cluster, options=self.options):
            if ctx.pods():
                await self.api.delete_collection(PODS, namespace, everything)
                note = f"Deleted Pods for RayCluster {namespace}/{name} due to suspension"
                self.recorder.event(ctx.obj, NORMAL, c.EVENT_DELETED_POD, "Delete", note)
            self.expectations.forget(ctx.key)
            return
        if status.is_suspended(ctx.cluster, options=self.options) or spec.suspend:
            return  # suspended; or suspend just requested: this pass's status sets Suspending, the next one deletes

        all_pods = ctx.pods()
        heads = [p for p in all_pods if objects.labels(p).get(c.RAY_NODE_TYPE_LABEL) == c.NODE_TYPE_HEAD]

        if await self._should_recreate_pods(ctx, heads):
            await self.api.delete_collection(PODS, namespace, everything)
            self.expectations.forget(ctx.key)
            note = f"Deleted Pods for RayCluster {namespace}/{name} due to spec change with Recreate upgradeStrategy"
            self.recorder.event(ctx.obj, NORMAL, c.EVENT_DELETED_POD, "Delete", note)
            return

        await self._reconcile_batch_objects(ctx)
        waiting = not await self._reconcile_head(ctx, heads)
        for index, group in enumerate(spec.worker_group_specs or []):
            group_pods = [
                p
                for p in all_pods
                if objects.labels(p).get(c.RAY_NODE_GROUP_LABEL) == group.group_name
                and objects.labels(p).get(c.RAY_NODE_TYPE_LABEL) == c.NODE_TYPE_WORKER
            ]
            if not self.expectations.satisfied(ctx.key, group.group_name, {objects.name(p) for p in group_pods}):
                waiting = True
                continue
            await self._reconcile_group(ctx, index, group_pods)
        if waiting:
            raise _NotYet

    async def _should_recreate_pods(self, ctx: ClusterContext, heads: list[Obj]) -> bool:
        """KubeRay ``shouldRecreatePodsForUpgrade``: with ``upgradeStrategy: Recreate``, whether the first head Pod's
        recreate hash differs from the spec's. A head Pod stamped by another KubeRay version (an operator upgrade, or
        a swap from KubeRay) is not a spec change: it gets the current hash and version, and nothing is recreated;
        the hash itself changes across releases (v1.7.0's CRDs default ``priority: 0`` into every worker group)."""
        spec = ctx.cluster.spec
        if spec is None or spec.upgrade_strategy is None or spec.upgrade_strategy.type != c.RAYCLUSTER_UPGRADE_RECREATE:
            return False
        if not heads:
            return False
        wanted = spechash.cluster_spec_hash(spec)
        head = heads[0]
        annotations = objects.annotations(head)
        version = annotations.get(c.RAY_KUBERAY_VERSION_ANNOTATION)
        if version and version != self.options.kuberay_version:
            patch = {
                "metadata": {
                    "annotations": {
                        c.RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION: wanted,
                        c.RAY_KUBERAY_VERSION_ANNOTATION: self.options.kuberay_version,
                    }
                }
            }
            try:
                await self.api.patch(PODS, objects.name(head), patch, ctx.namespace, patch_type="merge")
            except ApiError as exc:  # KubeRay logs it and goes on
                log.info(
                    "updating the annotations of head Pod %s after a KubeRay version change: %s",
                    objects.name(head),
                    exc,
                )
            return False
        have = annotations.get(c.RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION)
        return bool(have) and have != wanted

    async def _reconcile_batch_objects(self, ctx: ClusterContext) -> None:
        """KubeRay ``DoBatchSchedulingOnSubmission``: the batch scheduler's objects exist, and are in step, before
        any Pod is created. A failure fails the pass (no event, as in KubeRay); the retry comes with back-off."""
        plugin = batch.get(self.options.batch_scheduler)
        if plugin is None:
            return
        if isinstance(plugin, was.KubernetesWAS):  # immutable objects: replaced, never updated
            await self.children.was_objects(ctx, plugin)
            return
        try:
            desired = plugin.objects(ctx.cluster)
        except batch.BatchSchedulingError as exc:
            raise ReconcileError(str(exc)) from exc
        kinds = {(kind.api_version, kind.kind): kind for kind in plugin.kinds}
        for body in desired:
            res = kinds[(body["apiVersion"], body["kind"])]
            live = self.cache.get(res, ctx.namespace, objects.name(body))
            if live is None:
                await self._create(ctx, res, body)  # AlreadyExists: the cache has not seen it yet
                continue
            update = plugin.updated(live, body)
            if update is not None:
                await self.api.replace(res, objects.name(body), update, ctx.namespace)  # 409 if stale: retried

    async def _reconcile_head(self, ctx: ClusterContext, heads: Sequence[Obj]) -> bool:
        """Returns False while the head's expectations are not met yet."""
        namespace = ctx.namespace
        if not self.expectations.satisfied(ctx.key, c.HEAD_GROUP_NAME, {objects.name(p) for p in heads}):
            return False
        live = [p for p in heads if not objects.terminating(p)]
        if len(live) > 1:
            raise ReconcileError(f"{len(live)} head Pods found for the RayCluster; there must be one")
        if live:
            head = live[0]
            if pods.should_delete_pod(head):
                if await self._delete_pod(ctx, head, c.HEAD_GROUP_NAME):
                    note = (
                        f"Deleted head Pod {namespace}/{objects.name(head)}; Pod status: "
                        f"{(head.get('status') or {}).get('phase', '')}; Pod restart policy: "
                        f"{(head.get('spec') or {}).get('restartPolicy', '')}"
                    )
                    self.recorder.event(ctx.obj, NORMAL, c.EVENT_DELETED_HEAD_POD, "Delete", note)
                raise ReconcileError(f"deleted unhealthy head Pod {namespace}/{objects.name(head)}")
            return True
        if heads:
            return True  # the old head is still terminating; create the new one when it is gone
        provisioned = objects.condition_true(ctx.obj, c.CONDITION_RAYCLUSTER_PROVISIONED)
        if provisioned and ctx.annotations.get(c.RAY_DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION) == "true":
            return True
        await self._check_mtls_ready(ctx)
        body = pods.head_pod(ctx.cluster, self.options)
        target = objects.name(body) or objects.meta(body).get("generateName", "")
        failed = (c.EVENT_FAILED_TO_CREATE_HEAD_POD, f"Failed to create head Pod {namespace}/{target}")
        created = await self._create_reported(
            ctx,
            PODS,
            body,
            done=lambda pod: (c.EVENT_CREATED_HEAD_POD, f"Created head Pod {namespace}/{objects.name(pod)}"),
            failed=failed,
            marker=c.REASON_FAILED_CREATE_HEAD_POD,
        )
        if created is not None:
            self.expectations.expect_create(ctx.key, c.HEAD_GROUP_NAME, objects.name(created))
        return True

    async def _reconcile_group(self, ctx: ClusterContext, index: int, group_pods: Sequence[Obj]) -> None:
        namespace, name = ctx.namespace, ctx.name
        group = ctx.group(index)
        live = [p for p in group_pods if not objects.terminating(p)]

        if group.suspend:
            if live:
                await self.api.delete_collection(
                    PODS, namespace, {c.RAY_CLUSTER_LABEL: name, c.RAY_NODE_GROUP_LABEL: group.group_name}
                )
                self.expectations.forget(ctx.key, group.group_name)
                note = (
                    f"Deleted all pods for suspended worker group {group.group_name} in RayCluster {namespace}/{name}"
                )
                self.recorder.event(ctx.obj, NORMAL, c.EVENT_DELETED_WORKER_POD, "Delete", note)
            return

        if group.num_of_hosts > 1 and self.options.gate(c.GATE_RAY_MULTI_HOST_INDEXING):
            await self._reconcile_multi_host(ctx, index, group_pods)
            return

        unhealthy = [p for p in live if pods.should_delete_pod(p)]
        for pod in unhealthy:
            if await self._delete_pod(ctx, pod, group.group_name):
                note = f"Deleted worker Pod {namespace}/{objects.name(pod)}"
                self.recorder.event(ctx.obj, NORMAL, c.EVENT_DELETED_WORKER_POD, "Delete", note)
        if unhealthy:
            raise ReconcileError(f"delete {len(unhealthy)} unhealthy worker Pods")

        deleted = await self._delete_requested(ctx, group, live)
        # Pods on their way out count, as in KubeRay: their replacements come when they are gone.
        running = sorted((p for p in group_pods if objects.name(p) not in deleted), key=objects.name)
        diff = groups.desired_worker_replicas(group) - len(running)
        if diff > 0:
            await self._check_mtls_ready(ctx)
            await self._scale_up(ctx, index, running, diff)
        elif diff < 0 and (self.options.random_pod_delete or not ctx.autoscaling):
            leaving = sum(1 for p in running if objects.terminating(p))  # already going: no second delete
            surplus = [p for p in running if not objects.terminating(p)][: max(0, -diff - leaving)]
            for pod in surplus:
                if await self._delete_pod(ctx, pod, group.group_name):
                    note = f"Deleted Pod {namespace}/{objects.name(pod)}"
                    self.recorder.event(ctx.obj, NORMAL, c.EVENT_DELETED_WORKER_POD, "Delete", note)

    async def _delete_requested(self, ctx: ClusterContext, group: WorkerGroupSpec, live: Sequence[Obj]) -> set[str]:
        """Delete the group's Pods named in ``scaleStrategy.workersToDelete``; the names deleted.

        Only names of this group's Pods are honoured, so a stray name can never delete another cluster's Pod; a name
        not in the cache is already gone (KubeRay ignores NotFound the same way). The list is never cleared: the
        autoscaler owns it.
        """
        namespace = ctx.namespace
        wanted = set((group.scale_strategy.workers_to_delete if group.scale_strategy else None) or [])
        by_name = {objects.name(p): p for p in live}
        deleted: set[str] = set()
        for pod_name in sorted(wanted & by_name.keys()):
            went = await reported(
                self.recorder,
                ctx.obj,
                "Delete",
                sent(self.api.delete(PODS, pod_name, namespace, uid=objects.uid(by_name[pod_name]) or None)),
                done=(c.EVENT_DELETED_WORKER_POD, f"Deleted pod {namespace}/{pod_name}"),
                failed=(c.EVENT_FAILED_TO_DELETE_WORKER_POD, f"Failed deleting worker Pod {namespace}/{pod_name}"),
                tolerate=lambda exc: exc.not_found or exc.conflict,  # gone, or another incarnation: not ours
                raise_as=lambda _note, exc: _replica_failure(c.REASON_FAILED_DELETE_WORKER_POD, exc),
            )
            deleted.add(pod_name)
            if went:
                self.expectations.expect_delete(ctx.key, group.group_name, pod_name)
        return deleted

    async def _reconcile_multi_host(self, ctx: ClusterContext, index: int, group_pods: Sequence[Obj]) -> None:
        """A group of multi-host replicas (TPU slices): Pods are created and deleted a whole replica at a time.

        As KubeRay's ``reconcileMultiHostWorkerGroup``: an incomplete replica, one with an unhealthy host, or one
        with a host named in workersToDelete is deleted whole (and the pass ends with an error, so the next pass
        starts from the new state); then missing replicas are created, each with a new name ``<group>-<rand5>``, the
        lowest free replica index and host indices 0..numOfHosts-1; surplus replicas are deleted whole only without
        the autoscaler.
        """
        namespace = ctx.namespace
        group = ctx.group(index)
        hosts = group.num_of_hosts
        replicas: dict[str, list[Obj]] = {}
        for pod in group_pods:  # Pods being deleted included, as KubeRay lists them
            replicas.setdefault(objects.labels(pod).get(c.RAY_WORKER_REPLICA_NAME_LABEL, ""), []).append(pod)
        doomed_names = set((group.scale_strategy.workers_to_delete if group.scale_strategy else None) or [])
        broken = {
            replica
            for replica, members in replicas.items()
            if not replica
            or len(members) < hosts
            or any(pods.should_delete_pod(p) for p in members)
            or any(objects.name(p) in doomed_names for p in members)
        }
        for replica in sorted(broken):
            for pod in replicas.pop(replica):
                if await self._delete_pod(ctx, pod, group.group_name):
                    note = f"Deleted worker Pod {namespace}/{objects.name(pod)}"
                    self.recorder.event(ctx.obj, NORMAL, c.EVENT_DELETED_WORKER_POD, "Delete", note)
        if broken:
            raise ReconcileError(f"deleted {len(broken)} incomplete, unhealthy or requested replica group(s)")

        desired = groups.desired_worker_replicas(group)
        if desired % hosts:
            raise ReconcileError(f"desired {desired} workers is not a multiple of numOfHosts {hosts}")
        missing = desired // hosts - len(replicas)
        used = {objects.labels(m[0]).get(c.RAY_WORKER_REPLICA_INDEX_LABEL) for m in replicas.values()}
        if missing > 0:
            await self._check_mtls_ready(ctx)
        for replica_index in _free_indices(used, missing):
            await self._create_replica(ctx, index, replica_index, f"{group.group_name}-{names.random_suffix()}")
        if missing < 0 and (self.options.random_pod_delete or not ctx.autoscaling):
            for replica in sorted(replicas)[:-missing]:
                for pod in replicas[replica]:
                    if await self._delete_pod(ctx, pod, group.group_name):
                        note = f"Deleted Pod {namespace}/{objects.name(pod)}"
                        self.recorder.event(ctx.obj, NORMAL, c.EVENT_DELETED_WORKER_POD, "Delete", note)

    async def _create_replica(self, ctx: ClusterContext, index: int, replica_index: int, replica_name: str) -> None:
        """Create the ``numOfHosts`` Pods of one multi-host replica."""
        group = ctx.group(index)
        bodies = [
            pods.worker_pod(
                ctx.cluster,
                index,
                self.options,
                replica_index=replica_index,
                replica_name=replica_name,
                host_index=host,
            )
            for host in range(group.num_of_hosts)
        ]
        await slow_start(bodies, lambda body: self._create_worker(ctx, group, body))

    async def _check_mtls_ready(self, ctx: ClusterContext) -> None:
        """KubeRay v1.7.0 ``checkMTLSSecretsReady`` before any Ray Pod is created, with TLS on: both leaf Certificates
        Ready at their generation and their Secrets holding tls.crt, tls.key and ca.crt, else the pass fails (retried
        with back-off). Read from the API server: the cache holds neither cert-manager's objects nor its Secrets."""
        if not tls.tls_enabled(ctx.spec, self.options):
            return
        found: dict[Resource, dict[str, Obj | None]] = {CERTIFICATES: {}, SECRETS: {}}
        for head in (True, False):
            for res, name in ((CERTIFICATES, tls.tls_cert_name(ctx.name, head=head)),
                              (SECRETS, tls.tls_secret_name(ctx.name, head=head))):  # fmt: skip
                try:
                    found[res][name] = await self.api.get(res, name, ctx.namespace)
                except ApiError as exc:
                    if not exc.not_found:
                        raise ReconcileError(f"mTLS secrets not ready: {name}: {exc}") from exc
                    found[res][name] = None
        problem = certificates.leaf_problem(ctx.name, found[CERTIFICATES], found[SECRETS])
        if problem is not None:
            raise ReconcileError(f"mTLS secrets not ready: {problem}")

    async def _create_worker(self, ctx: ClusterContext, group: WorkerGroupSpec, body: Obj) -> None:
        failed = (
            c.EVENT_FAILED_TO_CREATE_WORKER_POD,
            f"Failed to create worker Pod for the cluster {ctx.namespace}/{ctx.name}",
        )
        created = await self._create_reported(
            ctx,
            PODS,
            body,
            done=lambda pod: (c.EVENT_CREATED_WORKER_POD, f"Created worker Pod {ctx.namespace}/{objects.name(pod)}"),
            failed=failed,
            marker=c.REASON_FAILED_CREATE_WORKER_POD,
        )
        if created is not None:
            self.expectations.expect_create(ctx.key, group.group_name, objects.name(created))

    async def _scale_up(self, ctx: ClusterContext, index: int, running: Sequence[Obj], count: int) -> None:
        """Create ``count`` workers; each takes the lowest free ``ray.io/worker-group-replica-index``."""
        group = ctx.group(index)
        indices: list[int | None] = [None] * count
        if self.options.gate(c.GATE_RAY_MULTI_HOST_INDEXING):
            used = {objects.labels(p).get(c.RAY_WORKER_REPLICA_INDEX_LABEL) for p in running}
            indices = list(_free_indices(used, count))
        bodies = [pods.worker_pod(ctx.cluster, index, self.options, replica_index=i) for i in indices]
        await slow_start(bodies, lambda body: self._create_worker(ctx, group, body))

    # -------------------------------------------------------------------------------------------------- status
    async def _update_status(self, ctx: ClusterContext, failure: status.ReconcileFailure | None) -> bool | float:
        """Write the status if it changed: True if written (or not computable yet), False if unchanged, or the
        seconds until a paced progress write is due (:class:`StatusPacer`)."""
        try:
            new = status.calculate_status(
                ctx.cluster, ctx.pods(), ctx.head_services(), failure=failure, now=self.clock(), options=self.options
            )
        except status.StatusError as exc:
            # As KubeRay: no status this pass (typically the new head Service is not in the cache yet; its
            # informer event brings the cluster straight back).
            log.debug("no status for %s/%s yet: %s", ctx.namespace, ctx.name, exc)
            return True
        old = ctx.obj.get("status")
        self.pacer.settled(ctx.key, new.get("state") in _SETTLED_STATES)
        if not status.status_needs_update(old, new):
            return False
        patch = merge_patch(old, new)
        if not patch:
            return False
        if failure is None and status.progress_only(old, new):
            due = self.pacer.due_in(ctx.key, ctx.uid)
            if due > 0:
                return due
        written = await self.api.patch(RAYCLUSTERS, ctx.name, {"status": patch}, ctx.namespace, subresource="status")
        self.own.remember(written)
        self.pacer.wrote(ctx.key, ctx.uid)
        return True

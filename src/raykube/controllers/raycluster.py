"""The RayCluster reconciler: make the Pods and Services of one RayCluster match its spec, then write its status.

Level-triggered: every pass reads the whole current state from the cache and acts on the difference, whatever event
caused it, so a missed or duplicated event costs nothing but a pass. The pass follows KubeRay's order
(``shared/research/kuberay.md`` §4):

1. Gone from the cache → forget its expectations. ``managedBy`` another controller → leave it alone.
2. Invalid (``raykube.api.validation``) → a ``Warning InvalidRayClusterSpec``/``InvalidRayClusterMetadata`` event,
   nothing else. Being deleted → nothing (owner references let the garbage collector remove the children).
3. The head Service (created once, never updated: a user's edits to it are not fought over), the headless worker
   Service of multi-host groups, the serve Service when asked for by annotation.
4. Pods: suspend (delete all, then stop), Recreate upgrades, the batch scheduler's objects (Volcano's PodGroup:
   created if missing, its ``minMember``/``minResources`` kept in step; ``raykube.builders.batch``), the head Pod, then
   each worker group in spec order:
   unhealthy Pods, ``scaleStrategy.workersToDelete`` (deleted every pass, never cleared: the autoscaler owns the
   list), then create or delete to reach ``clamp(replicas, min, max) * numOfHosts``. Surplus Pods are deleted only
   when in-tree autoscaling is off. Pods with a deletionTimestamp are not counted. Scale expectations keep a lagging
   cache from causing duplicates.
5. Status, computed from the cache by ``raykube.builders.status`` and written through the ``/status`` subresource as a
   merge patch, only when something KubeRay compares changed.

The pass returns when to look again: soon (2 s) while things are moving, in 5 minutes when all is quiet, or it raises
:class:`ReconcileError`, which the runtime retries with exponential back-off.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import WorkerGroupSpec
from raykube.api.resources import RayCluster
from raykube.api.validation import FieldError, validate_raycluster
from raykube.builders import batch, groups, pods, services, status
from raykube.builders.options import BuildOptions
from raykube.builders.patch import merge_patch
from raykube.controllers.children import ChildError, Children
from raykube.controllers.expectations import ScaleExpectations
from raykube.controllers.ports import PODS, RAYCLUSTERS, SERVICES, Api, ApiError, Cache, Recorder, resource_of

log = logging.getLogger(__name__)

CONTROLLER_NAME = "raycluster-controller"  # KubeRay's reporting controller for RayCluster events
REQUEUE_SOON = 2.0  # KubeRay DefaultRequeueDuration
REQUEUE_QUIET = 300.0  # KubeRay RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV default

NORMAL = "Normal"
WARNING = "Warning"


@dataclass(frozen=True)
class Result:
    requeue_after: float | None = None


class ReconcileError(Exception):
    """A pass that could not finish; ``failure`` feeds the ReplicaFailure condition."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.failure = status.ReconcileFailure(message, reason)


class _NotYet(Exception):
    """Expectations not met yet: stop this pass quietly and look again soon."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    labels: Mapping[str, str] = _meta(obj).get("labels") or {}
    return labels


def _terminating(obj: Mapping[str, Any]) -> bool:
    return _meta(obj).get("deletionTimestamp") is not None


_RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery util/rand.String's alphabet


def _rand5() -> str:
    return "".join(secrets.choice(_RAND_ALPHABET) for _ in range(5))


def _free_indices(used: set[str | None], count: int) -> list[int]:
    """The ``count`` lowest replica indices not in ``used`` (label values are strings)."""
    free: list[int] = []
    candidate = 0
    while len(free) < count:
        if str(candidate) not in used:
            free.append(candidate)
        candidate += 1
    return free


async def slow_start(
    items: Sequence[Mapping[str, Any]], create: Callable[[Mapping[str, Any]], Awaitable[None]]
) -> None:
    """Create ``items`` in batches of 1, 2, 4, ... whose requests run at once, as Kubernetes' ReplicaSet controller
    does (``slowStartBatch``): many Pods take a few round trips instead of one each, and a failing create (a quota,
    an admission webhook) fails after one request rather than after all of them. The first failure of a batch is
    raised once the batch has finished; later batches are not started."""
    done, size = 0, 1
    while done < len(items):
        batch = items[done : done + size]
        results = await asyncio.gather(*(create(item) for item in batch), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        done += len(batch)
        size *= 2


def _autoscaling(cluster: RayCluster) -> bool:
    return cluster.spec is not None and pods.is_autoscaling_enabled(cluster.spec)


def _validation_message(errors: Sequence[FieldError]) -> str:
    return "; ".join(f"{e.path}: {e.message}" for e in errors)


class RayClusterReconciler:
    def __init__(
        self,
        api: Api,
        cache: Cache,
        recorder: Recorder,
        options: BuildOptions | None = None,
        *,
        expectations: ScaleExpectations | None = None,
        clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.api = api
        self.cache = cache
        self.recorder = recorder
        self.options = options or BuildOptions()
        self.expectations = expectations or ScaleExpectations()
        self.clock = clock
        self.children = Children(api, cache, recorder, self.options, clock=clock)

    # -------------------------------------------------------------------------------------------------- entry
    async def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.cache.get(RAYCLUSTERS, namespace, name)
        if obj is None:
            self.expectations.forget((namespace, name))
            return Result()
        spec = obj.get("spec") or {}
        managed_by = spec.get("managedBy") if isinstance(spec, Mapping) else None
        if managed_by and managed_by != c.MANAGED_BY_KUBERAY:
            return Result()
        errors = validate_raycluster(obj, features=self.options.features)
        if errors:
            metadata = [e for e in errors if e.path.startswith("metadata")]
            reason = "InvalidRayClusterMetadata" if metadata else "InvalidRayClusterSpec"
            self.recorder.event(obj, WARNING, reason, "Validate", _validation_message(metadata or errors))
            return Result()
        cluster = RayCluster.model_validate(obj)
        if _terminating(obj):
            requeue = await self.children.finalize(obj, cluster)  # GCS FT Redis cleanup, if the finalizer is on
            return Result(requeue)
        if await self.children.ensure_finalizer(obj, cluster):
            return Result(REQUEUE_SOON)  # as KubeRay: Pods come in the next pass, once the finalizer is stored

        failure: status.ReconcileFailure | None = None
        waiting = False
        try:
            await self.children.autoscaler_rbac(obj, cluster)
            await self.children.ingress(obj, cluster)
            await self.children.auth_secret(obj, cluster)
            await self._reconcile_services(obj, cluster)
            await self._reconcile_pods(obj, cluster)
        except _NotYet:
            waiting = True
        except ReconcileError as exc:
            failure = exc.failure
        except ChildError as exc:
            failure = status.ReconcileFailure(str(exc))
        except ApiError as exc:
            failure = status.ReconcileFailure(str(exc))

        changed = await self._update_status(obj, cluster, failure)
        if failure is not None:
            raise ReconcileError(failure.message, failure.reason)
        return Result(REQUEUE_SOON if changed or waiting else REQUEUE_QUIET)

    # -------------------------------------------------------------------------------------------------- services
    async def _create(self, obj: Mapping[str, Any], res: Any, body: Mapping[str, Any]) -> dict[str, Any] | None:
        """Create ``body``; None when it already exists (the cache has not caught up yet)."""
        try:
            return await self.api.create(res, body, _meta(obj).get("namespace"))
        except ApiError as exc:
            if exc.conflict and exc.reason == "AlreadyExists":
                return None
            raise

    async def _create_reported(
        self,
        obj: Mapping[str, Any],
        res: Any,
        body: Mapping[str, Any],
        *,
        failed: tuple[str, str],
        marker: str | None = None,
    ) -> dict[str, Any] | None:
        """:meth:`_create`; a failure becomes the ``(reason, note)`` Warning event and a :class:`ReconcileError`
        carrying the ReplicaFailure ``marker``."""
        try:
            return await self._create(obj, res, body)
        except ApiError as exc:
            reason, note = failed
            self.recorder.event(obj, WARNING, reason, "Create", f"{note}, {exc.message or exc}")
            raise ReconcileError(str(exc), marker) from exc

    async def _reconcile_services(self, obj: Mapping[str, Any], cluster: RayCluster) -> None:
        namespace = str(_meta(obj)["namespace"])
        existing = self.cache.list(SERVICES, namespace, services.head_service_selector(cluster))
        if len(existing) > 1:
            names = ", ".join(sorted(_name(s) for s in existing))
            raise ReconcileError(f"found {len(existing)} head Services for the RayCluster: {names}")
        if not existing:
            body = services.head_service(cluster, self.options)
            failed = ("FailedToCreateService", f"Failed to create service {namespace}/{_name(body)}")
            created = await self._create_reported(obj, SERVICES, body, failed=failed)
            if created is not None:
                self.recorder.event(
                    obj, NORMAL, "CreatedService", "Create", f"Created service {namespace}/{_name(created)}"
                )

        headless = services.headless_worker_service(cluster)
        if headless is not None and not self.cache.list(SERVICES, namespace, _labels(headless)):
            created = await self._create(obj, SERVICES, headless)
            if created is not None:
                self.recorder.event(
                    obj, NORMAL, "CreatedService", "Create", f"Created service {namespace}/{_name(created)}"
                )

        if services.serve_service_enabled(cluster):
            serve = services.serve_service(cluster)
            if serve is None:
                raise ReconcileError(services.SERVE_PORT_MISSING_MESSAGE)
            if self.cache.get(SERVICES, namespace, _name(serve)) is None:
                await self._create(obj, SERVICES, serve)  # KubeRay creates the serve Service without an event

    # -------------------------------------------------------------------------------------------------- pods
    async def _delete_pod(self, obj: Mapping[str, Any], pod: Mapping[str, Any], group: str) -> bool:
        """Delete ``pod`` (only that incarnation: uid precondition); False if it was already gone."""
        namespace = str(_meta(obj)["namespace"])
        key = (namespace, _name(obj))
        try:
            await self.api.delete(PODS, _name(pod), namespace, uid=_meta(pod).get("uid"))
        except ApiError as exc:
            if exc.not_found or exc.conflict:
                return False
            raise
        self.expectations.expect_delete(key, group, _name(pod))
        return True

    async def _reconcile_pods(self, obj: Mapping[str, Any], cluster: RayCluster) -> None:
        namespace = str(_meta(obj)["namespace"])
        name = _name(obj)
        key = (namespace, name)
        spec = cluster.spec
        if spec is None:
            raise ReconcileError("the RayCluster has no spec")
        everything = {c.RAY_CLUSTER_LABEL: name}

        if status.is_suspending(cluster, options=self.options):
            if self.cache.list(PODS, namespace, everything):
                await self.api.delete_collection(PODS, namespace, everything)
                self.recorder.event(
                    obj,
                    NORMAL,
                    "DeletedPod",
                    "Delete",
                    f"Deleted Pods for RayCluster {namespace}/{name} due to suspension",
                )
            self.expectations.forget(key)
            return
        if status.is_suspended(cluster, options=self.options) or spec.suspend:
            return  # suspended; or suspend just requested: this pass's status sets Suspending, the next one deletes

        all_pods = self.cache.list(PODS, namespace, everything)
        heads = [p for p in all_pods if _labels(p).get(c.RAY_NODE_TYPE_LABEL) == c.NODE_TYPE_HEAD]

        if spec.upgrade_strategy is not None and spec.upgrade_strategy.type == c.RAYCLUSTER_UPGRADE_RECREATE:
            wanted = pods.cluster_spec_hash(spec)
            for head in heads:
                have = (_meta(head).get("annotations") or {}).get(c.RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION)
                if have and have != wanted:
                    await self.api.delete_collection(PODS, namespace, everything)
                    self.expectations.forget(key)
                    note = (
                        f"Deleted Pods for RayCluster {namespace}/{name} due to spec change with Recreate "
                        "upgradeStrategy"
                    )
                    self.recorder.event(obj, NORMAL, "DeletedPod", "Delete", note)
                    return

        await self._reconcile_batch_objects(obj, cluster)
        waiting = not await self._reconcile_head(obj, cluster, heads)
        for index, group in enumerate(spec.worker_group_specs or []):
            group_pods = [
                p
                for p in all_pods
                if _labels(p).get(c.RAY_NODE_GROUP_LABEL) == group.group_name
                and _labels(p).get(c.RAY_NODE_TYPE_LABEL) == c.NODE_TYPE_WORKER
            ]
            if not self.expectations.satisfied(key, group.group_name, {_name(p) for p in group_pods}):
                waiting = True
                continue
            await self._reconcile_group(obj, cluster, index, group_pods)
        if waiting:
            raise _NotYet

    async def _reconcile_batch_objects(self, obj: Mapping[str, Any], cluster: RayCluster) -> None:
        """KubeRay ``DoBatchSchedulingOnSubmission``: the batch scheduler's objects exist, and are in step, before
        any Pod is created. A failure fails the pass (no event, as in KubeRay); the retry comes with back-off."""
        plugin = batch.get(self.options.batch_scheduler)
        if plugin is None:
            return
        namespace = str(_meta(obj)["namespace"])
        try:
            desired = plugin.objects(cluster)
        except batch.BatchSchedulingError as exc:
            raise ReconcileError(str(exc)) from exc
        kinds = {(kind.api_version, kind.kind): kind for kind in plugin.kinds}
        for body in desired:
            res = resource_of(kinds[(body["apiVersion"], body["kind"])])
            live = self.cache.get(res, namespace, _name(body))
            if live is None:
                await self._create(obj, res, body)  # AlreadyExists: the cache has not seen it yet
                continue
            update = plugin.updated(live, body)
            if update is not None:
                await self.api.replace(res, _name(body), update, namespace)  # 409 if stale: the pass is retried

    async def _reconcile_head(
        self, obj: Mapping[str, Any], cluster: RayCluster, heads: Sequence[Mapping[str, Any]]
    ) -> bool:
        """Returns False while the head's expectations are not met yet."""
        namespace = str(_meta(obj)["namespace"])
        key = (namespace, _name(obj))
        if not self.expectations.satisfied(key, c.HEAD_GROUP_NAME, {_name(p) for p in heads}):
            return False
        live = [p for p in heads if not _terminating(p)]
        if len(live) > 1:
            raise ReconcileError(f"{len(live)} head Pods found for the RayCluster; there must be one")
        if live:
            head = live[0]
            if pods.should_delete_pod(head):
                if await self._delete_pod(obj, head, c.HEAD_GROUP_NAME):
                    self.recorder.event(
                        obj,
                        NORMAL,
                        "DeletedHeadPod",
                        "Delete",
                        f"Deleted head Pod {namespace}/{_name(head)}; Pod status: "
                        f"{(head.get('status') or {}).get('phase', '')}; Pod restart policy: "
                        f"{(head.get('spec') or {}).get('restartPolicy', '')}",
                    )
                raise ReconcileError(f"deleted unhealthy head Pod {namespace}/{_name(head)}")
            return True
        if heads:
            return True  # the old head is still terminating; create the new one when it is gone
        annotations = _meta(obj).get("annotations") or {}
        provisioned = any(
            cond.get("type") == c.CONDITION_RAYCLUSTER_PROVISIONED and cond.get("status") == "True"
            for cond in ((obj.get("status") or {}).get("conditions") or [])
        )
        if provisioned and annotations.get(c.RAY_DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION) == "true":
            return True
        body = pods.head_pod(cluster, self.options)
        target = _name(body) or _meta(body).get("generateName", "")
        failed = ("FailedToCreateHeadPod", f"Failed to create head Pod {namespace}/{target}")
        created = await self._create_reported(obj, PODS, body, failed=failed, marker=c.REASON_FAILED_CREATE_HEAD_POD)
        if created is not None:
            self.expectations.expect_create(key, c.HEAD_GROUP_NAME, _name(created))
            self.recorder.event(
                obj, NORMAL, "CreatedHeadPod", "Create", f"Created head Pod {namespace}/{_name(created)}"
            )
        return True

    async def _reconcile_group(
        self, obj: Mapping[str, Any], cluster: RayCluster, index: int, group_pods: Sequence[Mapping[str, Any]]
    ) -> None:
        namespace = str(_meta(obj)["namespace"])
        name = _name(obj)
        group = self._group(cluster, index)
        live = [p for p in group_pods if not _terminating(p)]

        if group.suspend:
            if live:
                await self.api.delete_collection(
                    PODS, namespace, {c.RAY_CLUSTER_LABEL: name, c.RAY_NODE_GROUP_LABEL: group.group_name}
                )
                self.expectations.forget((namespace, name), group.group_name)
                self.recorder.event(
                    obj,
                    NORMAL,
                    "DeletedWorkerPod",
                    "Delete",
                    f"Deleted all pods for suspended worker group {group.group_name} in RayCluster {namespace}/{name}",
                )
            return

        if group.num_of_hosts > 1 and self.options.gate(c.GATE_RAY_MULTI_HOST_INDEXING):
            await self._reconcile_multi_host(obj, cluster, index, live)
            return

        unhealthy = [p for p in live if pods.should_delete_pod(p)]
        for pod in unhealthy:
            if await self._delete_pod(obj, pod, group.group_name):
                note = f"Deleted worker Pod {namespace}/{_name(pod)}"
                self.recorder.event(obj, NORMAL, "DeletedWorkerPod", "Delete", note)
        if unhealthy:
            raise ReconcileError(f"delete {len(unhealthy)} unhealthy worker Pods")

        deleted = await self._delete_requested(obj, group, live)
        running = sorted((p for p in live if _name(p) not in deleted), key=_name)
        diff = groups.desired_worker_replicas(group) - len(running)
        if diff > 0:
            await self._scale_up(obj, cluster, index, running, diff)
        elif diff < 0 and (self.options.random_pod_delete or not _autoscaling(cluster)):
            for pod in running[:-diff]:
                if await self._delete_pod(obj, pod, group.group_name):
                    self.recorder.event(
                        obj, NORMAL, "DeletedWorkerPod", "Delete", f"Deleted Pod {namespace}/{_name(pod)}"
                    )

    @staticmethod
    def _group(cluster: RayCluster, index: int) -> WorkerGroupSpec:
        groups_ = cluster.spec.worker_group_specs if cluster.spec else None
        if not groups_:
            raise ReconcileError(f"worker group {index} does not exist")
        return groups_[index]

    async def _delete_requested(
        self, obj: Mapping[str, Any], group: WorkerGroupSpec, live: Sequence[Mapping[str, Any]]
    ) -> set[str]:
        """Delete the group's Pods named in ``scaleStrategy.workersToDelete``; the names deleted.

        Only names of this group's Pods are honoured, so a stray name can never delete another cluster's Pod; a name
        not in the cache is already gone (KubeRay ignores NotFound the same way). The list is never cleared: the
        autoscaler owns it.
        """
        namespace = str(_meta(obj)["namespace"])
        key = (namespace, _name(obj))
        wanted = set((group.scale_strategy.workers_to_delete if group.scale_strategy else None) or [])
        by_name = {_name(p): p for p in live}
        deleted: set[str] = set()
        for pod_name in sorted(wanted & by_name.keys()):
            try:
                await self.api.delete(PODS, pod_name, namespace, uid=_meta(by_name[pod_name]).get("uid"))
            except ApiError as exc:
                if exc.not_found or exc.conflict:
                    deleted.add(pod_name)
                    continue
                self.recorder.event(
                    obj,
                    WARNING,
                    "FailedToDeleteWorkerPod",
                    "Delete",
                    f"Failed deleting worker Pod {namespace}/{pod_name}, {exc.message or exc}",
                )
                raise ReconcileError(str(exc), c.REASON_FAILED_DELETE_WORKER_POD) from exc
            deleted.add(pod_name)
            self.expectations.expect_delete(key, group.group_name, pod_name)
            self.recorder.event(obj, NORMAL, "DeletedWorkerPod", "Delete", f"Deleted pod {namespace}/{pod_name}")
        return deleted

    async def _reconcile_multi_host(
        self, obj: Mapping[str, Any], cluster: RayCluster, index: int, live: Sequence[Mapping[str, Any]]
    ) -> None:
        """A group of multi-host replicas (TPU slices): Pods are created and deleted a whole replica at a time.

        As KubeRay's ``reconcileMultiHostWorkerGroup``: an incomplete replica, one with an unhealthy host, or one
        with a host named in workersToDelete is deleted whole (and the pass ends with an error, so the next pass
        starts from the new state); then missing replicas are created, each with a new name ``<group>-<rand5>``, the
        lowest free replica index and host indices 0..numOfHosts-1; surplus replicas are deleted whole only without
        the autoscaler.
        """
        namespace = str(_meta(obj)["namespace"])
        _name(obj)
        group = self._group(cluster, index)
        hosts = group.num_of_hosts
        replicas: dict[str, list[Mapping[str, Any]]] = {}
        for pod in live:
            replicas.setdefault(_labels(pod).get(c.RAY_WORKER_REPLICA_NAME_LABEL, ""), []).append(pod)
        doomed_names = set((group.scale_strategy.workers_to_delete if group.scale_strategy else None) or [])
        broken = {
            replica
            for replica, members in replicas.items()
            if not replica
            or len(members) < hosts
            or any(pods.should_delete_pod(p) for p in members)
            or any(_name(p) in doomed_names for p in members)
        }
        for replica in sorted(broken):
            for pod in replicas.pop(replica):
                if await self._delete_pod(obj, pod, group.group_name):
                    note = f"Deleted worker Pod {namespace}/{_name(pod)}"
                    self.recorder.event(obj, NORMAL, "DeletedWorkerPod", "Delete", note)
        if broken:
            raise ReconcileError(f"deleted {len(broken)} incomplete, unhealthy or requested replica group(s)")

        desired = groups.desired_worker_replicas(group)
        if desired % hosts:
            raise ReconcileError(f"desired {desired} workers is not a multiple of numOfHosts {hosts}")
        missing = desired // hosts - len(replicas)
        used = {_labels(m[0]).get(c.RAY_WORKER_REPLICA_INDEX_LABEL) for m in replicas.values()}
        for replica_index in _free_indices(used, missing):
            await self._create_replica(obj, cluster, index, replica_index, f"{group.group_name}-{_rand5()}")
        if missing < 0 and (self.options.random_pod_delete or not _autoscaling(cluster)):
            for replica in sorted(replicas)[:-missing]:
                for pod in replicas[replica]:
                    if await self._delete_pod(obj, pod, group.group_name):
                        self.recorder.event(
                            obj, NORMAL, "DeletedWorkerPod", "Delete", f"Deleted Pod {namespace}/{_name(pod)}"
                        )

    async def _create_replica(
        self, obj: Mapping[str, Any], cluster: RayCluster, index: int, replica_index: int, replica_name: str
    ) -> None:
        """Create the ``numOfHosts`` Pods of one multi-host replica."""
        group = self._group(cluster, index)
        bodies = [
            pods.worker_pod(
                cluster, index, self.options, replica_index=replica_index, replica_name=replica_name, host_index=host
            )
            for host in range(group.num_of_hosts)
        ]
        await slow_start(bodies, lambda body: self._create_worker(obj, group, body))

    async def _create_worker(self, obj: Mapping[str, Any], group: WorkerGroupSpec, body: Mapping[str, Any]) -> None:
        namespace = str(_meta(obj)["namespace"])
        name = _name(obj)
        failed = ("FailedToCreateWorkerPod", f"Failed to create worker Pod for the cluster {namespace}/{name}")
        created = await self._create_reported(obj, PODS, body, failed=failed, marker=c.REASON_FAILED_CREATE_WORKER_POD)
        if created is not None:
            self.expectations.expect_create((namespace, name), group.group_name, _name(created))
            note = f"Created worker Pod {namespace}/{_name(created)}"
            self.recorder.event(obj, NORMAL, "CreatedWorkerPod", "Create", note)

    async def _scale_up(
        self, obj: Mapping[str, Any], cluster: RayCluster, index: int, running: Sequence[Mapping[str, Any]], count: int
    ) -> None:
        """Create ``count`` workers; each takes the lowest free ``ray.io/worker-group-replica-index``."""
        group = self._group(cluster, index)
        indices: list[int | None] = [None] * count
        if self.options.gate(c.GATE_RAY_MULTI_HOST_INDEXING):
            used = {_labels(p).get(c.RAY_WORKER_REPLICA_INDEX_LABEL) for p in running}
            indices = list(_free_indices(used, count))
        bodies = [pods.worker_pod(cluster, index, self.options, replica_index=i) for i in indices]
        await slow_start(bodies, lambda body: self._create_worker(obj, group, body))

    # -------------------------------------------------------------------------------------------------- status
    async def _update_status(
        self, obj: Mapping[str, Any], cluster: RayCluster, failure: status.ReconcileFailure | None
    ) -> bool:
        namespace = str(_meta(obj)["namespace"])
        name = _name(obj)
        all_pods = self.cache.list(PODS, namespace, {c.RAY_CLUSTER_LABEL: name})
        head_services = self.cache.list(SERVICES, namespace, services.head_service_selector(cluster))
        try:
            new = status.calculate_status(
                cluster, all_pods, head_services, failure=failure, now=self.clock(), options=self.options
            )
        except status.StatusError as exc:
            # As KubeRay: no status this pass (typically the new head Service is not in the cache yet; its
            # informer event brings the cluster straight back).
            log.debug("no status for %s/%s yet: %s", namespace, name, exc)
            return True
        old = obj.get("status")
        if not status.status_needs_update(old, new):
            return False
        patch = merge_patch(old, new)
        if not patch:
            return False
        await self.api.patch(RAYCLUSTERS, name, {"status": patch}, namespace, subresource="status")
        return True

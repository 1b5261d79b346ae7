"""The objects around a RayCluster's Pods: the autoscaler's ServiceAccount, Role and RoleBinding, the dashboard
Ingress, the auth Secret, and GCS fault tolerance's Redis cleanup finalizer and Job (KubeRay v1.7.0
``ray-operator/controllers/ray/raycluster_controller.go`` with ``common/rbac.go``, ``common/ingress.go``,
``common/job.go``).

KubeRay's behaviour, kept here:

* autoscaler RBAC objects are created if missing and never updated; a ServiceAccount the head template names is
  the user's: never created, and its absence is a ``Warning AutoscalerServiceAccountNotFound`` and an error;
* the Ingress (v1.7.0) is read by name, created if missing, and kept in step (labels, annotations, spec: a v1.6.x
  Ingress gets the new path on the first pass); one this cluster does not own is left alone with a
  ``Warning FailedToCreateIngress`` on every pass;
* the auth Secret is created once, with 32 random bytes, and never rotated; its value never reaches a log or event;
* with Redis GCS FT the first pass adds the finalizer ``ray.io/gcs-ft-redis-cleanup-finalizer`` and creates no Pods;
  on deletion the Pods go (head first), then a cleanup Job runs, and the finalizer is removed when the Job finishes
  or when ``ray.io/gcs-ft-deletion-timeout`` seconds (default 300) have passed since the deletion
  (``Warning ForceDeletedStuckCluster``). ``ENABLE_GCS_FT_REDIS_CLEANUP=false`` turns all of that off;
* with the embedded ``rocksdb`` backend (v1.7.0, gate ``GCSFaultToleranceEmbeddedStorage``) there is no Redis to clean:
  no finalizer, and one left from an earlier Redis backend is removed when the cluster is deleted. Its claim
  (``raykube.builders.gcs_storage``): a user's ``storage.claimName`` is only looked for in the cache (a
  ``Warning FailedToCreatePVC`` when missing; the head Pod waits for it); else ``<cluster>-gcs-pvc`` is created
  (``Normal CreatedPVC``), or adopted when it exists (drift in what cannot change in place is a
  ``Warning FailedToCreatePVC``, never a rewrite), and its controller owner reference follows
  ``storage.deletionPolicy`` (none for ``Retain``, so the claim outlives the cluster).
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS
from raykube.builders import children, gcs_storage, gowrites, pods, was
from raykube.controllers.base import Deps, reported
from raykube.golang.duration import duration_string
from raykube.golang.errors import GoError
from raykube.golang.strconv import atoi, quote
from raykube.kube import objects, times
from raykube.kube.errors import ApiError
from raykube.kube.resources import (
    INGRESSES,
    JOBS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    Resource,
)

if TYPE_CHECKING:
    from raykube.controllers.raycluster import ClusterContext

WARNING = c.EVENT_TYPE_WARNING
DELETION_REQUEUE = 10.0  # KubeRay: while a head Pod still exists during deletion
JOB_REQUEUE = 2.0
_SERVICE_ACCOUNT_EVENTS = (c.EVENT_CREATED_SERVICE_ACCOUNT, c.EVENT_FAILED_TO_CREATE_SERVICE_ACCOUNT)
_ROLE_EVENTS = (c.EVENT_CREATED_ROLE, c.EVENT_FAILED_TO_CREATE_ROLE)
_ROLE_BINDING_EVENTS = (c.EVENT_CREATED_ROLE_BINDING, c.EVENT_FAILED_TO_CREATE_ROLE_BINDING)


class ChildError(Exception):
    """A child object could not be made; the pass stops with this message."""


def _random_token() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


def _conflict(exc: ApiError) -> bool:
    return exc.conflict


def _already_exists(exc: ApiError) -> bool:
    return exc.already_exists


class Children:
    def __init__(self, deps: Deps, *, token: Callable[[], str] = _random_token) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.options = deps.options
        self.clock = deps.clock
        self.token = token

    async def _create_once(
        self, ctx: ClusterContext, res: Resource, body: Mapping[str, Any], reasons: tuple[str, str], kind: str
    ) -> None:
        """Create ``body`` unless the cache has it; ``reasons`` are the events' on success and on failure, whose notes
        name ``kind`` as KubeRay's do ("Created service account ns/name", "Failed creating role ns/name, <error>")."""
        created, failed = reasons
        namespace = ctx.namespace
        name = objects.name(body)
        if self.cache.get(res, namespace, name) is not None:
            return
        await reported(
            self.recorder,
            ctx.obj,
            "Create",
            self.api.create(res, body, namespace),
            done=(created, f"Created {kind} {namespace}/{name}"),
            failed=(failed, f"Failed creating {kind} {namespace}/{name}"),
            tolerate=_conflict,  # exists; the cache has not caught up
        )

    # ------------------------------------------------------------------------------------------ autoscaler RBAC
    async def autoscaler_rbac(self, ctx: ClusterContext) -> None:
        if not ctx.autoscaling:
            return
        cluster, namespace = ctx.cluster, ctx.namespace
        account = children.autoscaler_service_account_name(cluster)
        if children.autoscaler_service_account_is_users(cluster):
            if self.cache.get(SERVICE_ACCOUNTS, namespace, account) is None:
                try:
                    await self.api.get(SERVICE_ACCOUNTS, account, namespace)
                except ApiError as exc:
                    if not exc.not_found:
                        raise
                    note = (
                        f"Autoscaler ServiceAccount {namespace}/{account} named by the head Pod template does "
                        "not exist; create it"
                    )
                    reason = c.EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND
                    self.recorder.event(ctx.obj, WARNING, reason, "Validate", note)
                    raise ChildError(note) from exc
        else:
            body = children.autoscaler_service_account(cluster)
            await self._create_once(ctx, SERVICE_ACCOUNTS, body, _SERVICE_ACCOUNT_EVENTS, "service account")
        await self._create_once(ctx, ROLES, children.autoscaler_role(cluster), _ROLE_EVENTS, "role")
        body = children.autoscaler_role_binding(cluster)
        await self._create_once(ctx, ROLE_BINDINGS, body, _ROLE_BINDING_EVENTS, "role binding")

    # ------------------------------------------------------------------------------------------ ingress
    async def ingress(self, ctx: ClusterContext) -> None:
        """KubeRay v1.7.0 ``reconcileIngressKubernetes``: the dashboard Ingress by name from the cache (which holds
        every Ingress, as KubeRay's), created if missing, left alone (with a Warning) when the cluster does not
        control it, else updated to the desired one."""
        desired = children.head_ingress(ctx.cluster)
        if desired is None:
            return
        namespace = ctx.namespace
        name = objects.name(desired)
        live = self.cache.get(INGRESSES, namespace, name)
        if live is None:
            await reported(
                self.recorder,
                ctx.obj,
                "Create",
                self.api.create(INGRESSES, desired, namespace),
                done=(c.EVENT_CREATED_INGRESS, f"Created ingress {namespace}/{name}"),
                failed=(c.EVENT_FAILED_TO_CREATE_INGRESS, f"Failed creating ingress {namespace}/{name}"),
                tolerate=_already_exists,  # the cache has not caught up; the next pass reads it
            )
            return
        if not objects.owned_by(live, ctx.uid):
            note = f"Ingress {namespace}/{name} already exists and is not owned by this RayCluster; not modifying it"
            self.recorder.event(ctx.obj, WARNING, c.EVENT_FAILED_TO_CREATE_INGRESS, "Create", note)
            return
        body = children.updated_ingress(live, desired)
        if body is None:
            return
        await reported(
            self.recorder,
            ctx.obj,
            "Update",
            self.api.replace(INGRESSES, name, body, namespace),
            done=(c.EVENT_UPDATED_INGRESS, f"Updated ingress {namespace}/{name}"),
            failed=(c.EVENT_FAILED_TO_UPDATE_INGRESS, f"Failed updating ingress {namespace}/{name}"),
            # A stale cache (the Ingress changed since it was read): no Warning, the next pass compares again.
            tolerate=_conflict,
        )

    # ------------------------------------------------------------------------------------------ auth secret
    async def auth_secret(self, ctx: ClusterContext) -> None:
        if not children.needs_auth_secret(ctx.cluster):
            return
        namespace = ctx.namespace
        body = children.auth_secret(ctx.cluster, self.token())
        name = objects.name(body)
        if self.cache.get(SECRETS, namespace, name) is not None:
            return
        try:
            await self.api.create(SECRETS, body, namespace)  # KubeRay creates it without an event
        except ApiError as exc:
            if not exc.conflict:
                raise ChildError(
                    f"creating the auth Secret {namespace}/{name} failed: {exc.code} {exc.reason}"
                ) from None

    # ------------------------------------------------------------------------------------------ GCS FT
    def cleanup_enabled(self, ctx: ClusterContext) -> bool:
        """Redis GCS FT with cleanup on: the embedded backend has no Redis to clean (KubeRay v1.7.0)."""
        return (
            children.gcs_ft_enabled(ctx.cluster)
            and not gcs_storage.embedded(ctx.spec)
            and self.options.gcs_ft_redis_cleanup
        )

    async def gcs_storage_pvc(self, ctx: ClusterContext) -> None:
        """KubeRay v1.7.0 ``reconcileGCSStoragePVC``: the claim of the embedded (rocksdb) GCS store, between the
        Services and the Pods."""
        cluster = ctx.cluster
        if not children.gcs_ft_enabled(cluster) or not gcs_storage.embedded(ctx.spec):
            return
        namespace = ctx.namespace
        name = gcs_storage.claim_name(cluster)
        live = self.cache.get(PERSISTENT_VOLUME_CLAIMS, namespace, name)
        if gcs_storage.users_claim(cluster):  # the user's: looked for, never created nor owned
            if live is None:
                note = (
                    f"GcsFaultToleranceOptions.Storage.ClaimName {quote(name)} not found in namespace {namespace}; "
                    "the head Pod will not start until it exists"
                )
                self.recorder.event(ctx.obj, WARNING, c.EVENT_FAILED_TO_CREATE_PVC, "Validate", note)
            return
        desired = gcs_storage.pvc(cluster)
        if live is not None:
            drift = gcs_storage.pvc_drift(desired, live)
            if drift:
                note = (
                    f"GCS storage PVC {namespace}/{name} already exists and cannot be reconfigured in place ({drift}); "
                    "delete the PVC to recreate it with the new settings"
                )
                self.recorder.event(ctx.obj, WARNING, c.EVENT_FAILED_TO_CREATE_PVC, "Update", note)
            await self._own_gcs_storage_pvc(ctx, live)
            return
        desired = gcs_storage.owned_as_wanted(cluster, desired) or desired  # owned unless Retain
        created = await reported(
            self.recorder,
            ctx.obj,
            "Create",
            self.api.create(PERSISTENT_VOLUME_CLAIMS, desired, namespace),
            done=(c.EVENT_CREATED_PVC, f"Created GCS storage PVC {namespace}/{name}"),
            failed=(c.EVENT_FAILED_TO_CREATE_PVC, f"Failed to create GCS storage PVC {namespace}/{name}"),
            tolerate=_already_exists,
        )
        if created is None:  # AlreadyExists: the cache has not seen it yet; adopt it as KubeRay does
            live = await self.api.get(PERSISTENT_VOLUME_CLAIMS, name, namespace)
            await self._own_gcs_storage_pvc(ctx, live)

    async def _own_gcs_storage_pvc(self, ctx: ClusterContext, live: Mapping[str, Any]) -> None:
        """``reconcileGCSStoragePVCOwnerRef``: the cluster's controller reference on the claim follows
        ``deletionPolicy``; an Update without an event, as KubeRay's."""
        try:
            body = gcs_storage.owned_as_wanted(ctx.cluster, live)
        except gcs_storage.OwnershipError as exc:
            raise ChildError(str(exc)) from None
        if body is not None:
            await self.api.replace(PERSISTENT_VOLUME_CLAIMS, objects.name(live), body, ctx.namespace)

    async def ensure_finalizer(self, ctx: ClusterContext) -> bool:
        """Add the Redis cleanup finalizer; True when it was just added (the pass then stops, as KubeRay's)."""
        finalizers = objects.finalizers(ctx.obj)
        if not self.cleanup_enabled(ctx) or c.GCS_FT_REDIS_CLEANUP_FINALIZER in finalizers:
            return False
        # KubeRay's Update of its Go object: the spec as Go writes it, so the generation bumps as KubeRay's does
        body = gowrites.finalizer_update("RayCluster", ctx.obj, c.GCS_FT_REDIS_CLEANUP_FINALIZER)
        await self.api.replace(RAYCLUSTERS, ctx.name, body, ctx.namespace)
        return True

    async def _remove_finalizer(self, ctx: ClusterContext) -> None:
        finalizers = objects.finalizers(ctx.obj)
        if c.GCS_FT_REDIS_CLEANUP_FINALIZER not in finalizers:
            return
        remaining = [f for f in finalizers if f != c.GCS_FT_REDIS_CLEANUP_FINALIZER]
        patch = [
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "replace", "path": "/metadata/finalizers", "value": remaining},
        ]
        await self.api.patch(RAYCLUSTERS, ctx.name, patch, ctx.namespace, patch_type="json")

    async def finalize(self, ctx: ClusterContext) -> float | None:
        """The deletion of a cluster that carries the Redis cleanup finalizer; seconds to requeue, or None when done.

        A RocksDB cluster, or one where cleanup is off, just has the finalizer removed."""
        if c.GCS_FT_REDIS_CLEANUP_FINALIZER not in objects.finalizers(ctx.obj):
            return None
        if not self.cleanup_enabled(ctx):
            await self._remove_finalizer(ctx)
            return None
        namespace, name = ctx.namespace, ctx.name
        for node_type in (c.NODE_TYPE_HEAD, c.NODE_TYPE_WORKER):
            selector = {c.RAY_CLUSTER_LABEL: name, c.RAY_NODE_TYPE_LABEL: node_type}
            if any(not objects.terminating(p) for p in self.cache.list(PODS, namespace, selector)):
                await self.api.delete_collection(PODS, namespace, selector)
        if ctx.pods(**{c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD}):
            return DELETION_REQUEUE
        age = self._deletion_age(ctx)
        if age is not None and age >= self._deletion_timeout(ctx):
            # KubeRay v1.6.2 forceRemoveGCSFTFinalizer: the cleanup Job is stuck; let the deletion proceed.
            await self._remove_finalizer(ctx)
            storage_ns = ctx.annotations.get(c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION, "")
            note = (
                f"Force-removed GCS FT finalizer after {duration_string(int(age.total_seconds() * 1e9))} due to Redis "
                f"cleanup timeout; Redis storage namespace {quote(storage_ns)} may need manual cleanup"
            )
            self.recorder.event(ctx.obj, WARNING, c.EVENT_FORCE_DELETED_STUCK_CLUSTER, "Cleanup", note)
            return None
        return await self._cleanup_job(ctx)

    async def _cleanup_job(self, ctx: ClusterContext) -> float | None:
        """Run the Redis cleanup Job once; remove the finalizer when it has finished."""
        namespace = ctx.namespace
        job_name = children.redis_cleanup_job_name(ctx.cluster)
        job = self.cache.get(JOBS, namespace, job_name)
        if job is not None:
            if any(objects.condition_true(job, kind) for kind in ("Complete", "Failed", "FailureTarget")):
                await self._remove_finalizer(ctx)
                return None
            return JOB_REQUEUE
        head = pods.build_head_pod(ctx.cluster, self.options)
        body = children.redis_cleanup_job(ctx.cluster, head, login_shell=self.options.login_shell)
        await reported(
            self.recorder,
            ctx.obj,
            "Create",
            self.api.create(JOBS, body, namespace),
            done=(c.EVENT_CREATED_REDIS_CLEANUP_JOB, f"Created Redis cleanup Job {namespace}/{job_name}"),
            failed=(
                c.EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB,
                f"Failed to create Redis cleanup Job {namespace}/{job_name}",
            ),
            tolerate=_conflict,
        )
        return JOB_REQUEUE

    @staticmethod
    def _deletion_timeout(ctx: ClusterContext) -> timedelta:
        """KubeRay ``getGCSFTDeletionTimeout``: the annotation's whole seconds when ``strconv.Atoi`` reads a positive
        number from it, else the default."""
        seconds = c.GCS_FT_DEFAULT_DELETION_TIMEOUT_SECONDS
        text = ctx.annotations.get(c.RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION)
        if text is not None:
            try:
                parsed = atoi(str(text))
            except GoError:
                parsed = 0
            if parsed > 0:
                seconds = parsed
        return timedelta(seconds=seconds)

    def _deletion_age(self, ctx: ClusterContext) -> timedelta | None:
        deleted = times.parse_time(objects.meta(ctx.obj).get("deletionTimestamp"))
        return None if deleted is None else self.clock() - deleted

    async def was_objects(self, ctx: ClusterContext, plugin: was.KubernetesWAS) -> None:
        """KubeRay v1.7.0 ``kubernetes-was-v1alpha2`` ``DoBatchSchedulingOnSubmission``: the plugin's plan over the
        cached Workload and PodGroup (:meth:`raykube.builders.was.KubernetesWAS.plan`), its writes in order (NotFound
        is fine; AlreadyExists on a create too: the cache has not seen it yet), then its error, which fails the pass
        (retried with back-off, as KubeRay requeues on it). A failed write stops the pass with KubeRay's words."""
        workload = self.cache.get(was.WORKLOADS, ctx.namespace, ctx.name)
        podgroup = self.cache.get(was.PODGROUPS, ctx.namespace, plugin.podgroup_name(ctx.name))
        plan = plugin.plan(ctx.cluster, workload, podgroup)
        for step in plan.steps:
            try:
                if isinstance(step, was.Create):
                    await self.api.create(step.res, step.body, ctx.namespace, whole=False)
                elif isinstance(step, was.RemoveFinalizer):
                    await self.api.replace(step.res, objects.name(step.body), step.body, ctx.namespace)
                else:
                    await self.api.delete(step.res, step.name, ctx.namespace, uid=step.uid, missing_ok=True)
            except ApiError as exc:
                if exc.not_found or (isinstance(step, was.Create) and exc.already_exists):
                    continue
                raise ChildError(f"{step.failure}: {exc}") from exc
        if plan.error is not None:
            raise ChildError(plan.error)

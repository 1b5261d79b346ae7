"""The objects around a RayCluster's Pods: the autoscaler's ServiceAccount, Role and RoleBinding, the dashboard
Ingress, the auth Secret, and GCS fault tolerance's Redis cleanup finalizer and Job (``kuberay.md`` §3.11-§3.15, §4).

KubeRay's behaviour, kept here:

* autoscaler RBAC objects are created if missing and never updated; a ServiceAccount the head template names is
  the user's: never created, and its absence is a ``Warning AutoscalerServiceAccountNotFound`` and an error;
* the Ingress is kept in step (labels, annotations, spec); one this cluster does not own is left alone with a
  ``Warning FailedToCreateIngress``;
* the auth Secret is created once, with 32 random bytes, and never rotated; its value never reaches a log or event;
* with Redis GCS FT the first pass adds the finalizer ``ray.io/gcs-ft-redis-cleanup-finalizer`` and creates no Pods;
  on deletion the Pods go (head first), then a cleanup Job runs, and the finalizer is removed when the Job finishes
  or when ``ray.io/gcs-ft-deletion-timeout`` seconds (default 300) have passed since the deletion
  (``Warning ForceDeletedStuckCluster``). ``ENABLE_GCS_FT_REDIS_CLEANUP=false`` turns all of that off.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RayCluster
from raykube.builders import children, pods
from raykube.builders.options import BuildOptions
from raykube.controllers.ports import (
    INGRESSES,
    JOBS,
    PODS,
    RAYCLUSTERS,
    ROLE_BINDINGS,
    ROLES,
    SECRETS,
    SERVICE_ACCOUNTS,
    Api,
    ApiError,
    Cache,
    Recorder,
    Resource,
)

NORMAL = "Normal"
WARNING = "Warning"
DELETION_REQUEUE = 10.0  # KubeRay: while a head Pod still exists during deletion
JOB_REQUEUE = 2.0


class ChildError(Exception):
    """A child object could not be made; the pass stops with this message."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def _owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid and ref.get("controller") for ref in _meta(obj).get("ownerReferences") or [])


class Children:
    def __init__(
        self,
        api: Api,
        cache: Cache,
        recorder: Recorder,
        options: BuildOptions,
        *,
        clock: Callable[[], dt.datetime],
        token: Callable[[], str] = lambda: base64.b64encode(secrets.token_bytes(32)).decode(),
    ) -> None:
        self.api = api
        self.cache = cache
        self.recorder = recorder
        self.options = options
        self.clock = clock
        self.token = token

    async def _create_once(
        self, obj: Mapping[str, Any], res: Resource, body: Mapping[str, Any], reason: str, kind: str
    ) -> None:
        namespace = str(_meta(obj)["namespace"])
        name = str(body["metadata"]["name"])
        if self.cache.get(res, namespace, name) is not None:
            return
        try:
            await self.api.create(res, body, namespace)
        except ApiError as exc:
            if exc.conflict:
                return  # exists; the cache has not caught up
            self.recorder.event(obj, WARNING, f"FailedToCreate{reason}", "Create",
                                f"Failed to create {kind} {namespace}/{name}, {exc.message or exc}")  # fmt: skip
            raise
        self.recorder.event(obj, NORMAL, f"Created{reason}", "Create", f"Created {kind} {namespace}/{name}")

    # ------------------------------------------------------------------------------------------ autoscaler RBAC
    async def autoscaler_rbac(self, obj: Mapping[str, Any], cluster: RayCluster) -> None:
        if cluster.spec is None or not pods.is_autoscaling_enabled(cluster.spec):
            return
        namespace = str(_meta(obj)["namespace"])
        account = children.autoscaler_service_account_name(cluster)
        if children.autoscaler_service_account_is_users(cluster):
            if self.cache.get(SERVICE_ACCOUNTS, namespace, account) is None:
                try:
                    await self.api.get(SERVICE_ACCOUNTS, account, namespace)
                except ApiError as exc:
                    if not exc.not_found:
                        raise
                    note = (f"Autoscaler ServiceAccount {namespace}/{account} named by the head Pod template does "
                            "not exist; create it")  # fmt: skip
                    self.recorder.event(obj, WARNING, "AutoscalerServiceAccountNotFound", "Create", note)
                    raise ChildError(note) from exc
        else:
            await self._create_once(obj, SERVICE_ACCOUNTS, children.autoscaler_service_account(cluster),
                                    "ServiceAccount", "ServiceAccount")  # fmt: skip
        await self._create_once(obj, ROLES, children.autoscaler_role(cluster), "Role", "Role")
        await self._create_once(obj, ROLE_BINDINGS, children.autoscaler_role_binding(cluster), "RoleBinding",
                                "RoleBinding")  # fmt: skip

    # ------------------------------------------------------------------------------------------ ingress
    async def ingress(self, obj: Mapping[str, Any], cluster: RayCluster) -> None:
        desired = children.head_ingress(cluster)
        if desired is None:
            return
        namespace = str(_meta(obj)["namespace"])
        name = str(desired["metadata"]["name"])
        live = self.cache.get(INGRESSES, namespace, name)
        if live is None:
            await self._create_once(obj, INGRESSES, desired, "Ingress", "Ingress")
            return
        if not _owned_by(live, str(_meta(obj).get("uid", ""))):
            self.recorder.event(
                obj,
                WARNING,
                "FailedToCreateIngress",
                "Create",
                f"Ingress {namespace}/{name} exists and is not owned by this RayCluster; left alone",
            )
            return
        if not children.ingress_needs_update(live, desired):
            return
        body = json.loads(json.dumps(desired))
        body["metadata"]["resourceVersion"] = _meta(live).get("resourceVersion")
        if "ingressClassName" not in body["spec"] and (live.get("spec") or {}).get("ingressClassName"):
            body["spec"]["ingressClassName"] = live["spec"]["ingressClassName"]
        try:
            await self.api.replace(INGRESSES, name, body, namespace)
        except ApiError as exc:
            if exc.conflict:
                return  # changed meanwhile; the next pass compares again
            self.recorder.event(obj, WARNING, "FailedToUpdateIngress", "Update",
                                f"Failed to update Ingress {namespace}/{name}, {exc.message or exc}")  # fmt: skip
            raise
        self.recorder.event(obj, NORMAL, "UpdatedIngress", "Update", f"Updated Ingress {namespace}/{name}")

    # ------------------------------------------------------------------------------------------ auth secret
    async def auth_secret(self, obj: Mapping[str, Any], cluster: RayCluster) -> None:
        if not children.needs_auth_secret(cluster):
            return
        namespace = str(_meta(obj)["namespace"])
        body = children.auth_secret(cluster, self.token())
        name = str(body["metadata"]["name"])
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
    def cleanup_enabled(self, cluster: RayCluster) -> bool:
        return children.gcs_ft_enabled(cluster) and self.options.gcs_ft_redis_cleanup

    async def ensure_finalizer(self, obj: Mapping[str, Any], cluster: RayCluster) -> bool:
        """Add the Redis cleanup finalizer; True when it was just added (the pass then stops, as KubeRay's)."""
        finalizers = list(_meta(obj).get("finalizers") or [])
        if not self.cleanup_enabled(cluster) or c.GCS_FT_REDIS_CLEANUP_FINALIZER in finalizers:
            return False
        patch = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": _meta(obj).get("resourceVersion")},
            {"op": "add", "path": "/metadata/finalizers", "value": [*finalizers, c.GCS_FT_REDIS_CLEANUP_FINALIZER]},
        ]
        await self.api.patch(RAYCLUSTERS, str(_meta(obj)["name"]), patch, str(_meta(obj)["namespace"]),
                             patch_type="json")  # fmt: skip
        return True

    async def _remove_finalizer(self, obj: Mapping[str, Any]) -> None:
        finalizers = list(_meta(obj).get("finalizers") or [])
        if c.GCS_FT_REDIS_CLEANUP_FINALIZER not in finalizers:
            return
        remaining = [f for f in finalizers if f != c.GCS_FT_REDIS_CLEANUP_FINALIZER]
        patch = [
            {"op": "test", "path": "/metadata/finalizers", "value": finalizers},
            {"op": "replace", "path": "/metadata/finalizers", "value": remaining},
        ]
        await self.api.patch(RAYCLUSTERS, str(_meta(obj)["name"]), patch, str(_meta(obj)["namespace"]),
                             patch_type="json")  # fmt: skip

    async def finalize(self, obj: Mapping[str, Any], cluster: RayCluster) -> float | None:
        """The deletion of a cluster that carries the Redis cleanup finalizer; seconds to requeue, or None when done.

        A RocksDB cluster, or one where cleanup is off, just has the finalizer removed."""
        if c.GCS_FT_REDIS_CLEANUP_FINALIZER not in (_meta(obj).get("finalizers") or []):
            return None
        if not self.cleanup_enabled(cluster):
            await self._remove_finalizer(obj)
            return None
        namespace = str(_meta(obj)["namespace"])
        name = str(_meta(obj)["name"])
        for node_type in (c.NODE_TYPE_HEAD, c.NODE_TYPE_WORKER):
            selector = {c.RAY_CLUSTER_LABEL: name, c.RAY_NODE_TYPE_LABEL: node_type}
            if any(_meta(p).get("deletionTimestamp") is None for p in self.cache.list(PODS, namespace, selector)):
                await self.api.delete_collection(PODS, namespace, selector)
        if self.cache.list(PODS, namespace, {c.RAY_CLUSTER_LABEL: name, c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD}):
            return DELETION_REQUEUE
        if self._timed_out(obj):
            await self._remove_finalizer(obj)
            self.recorder.event(obj, WARNING, "ForceDeletedStuckCluster", "Delete",
                                f"RayCluster {namespace}/{name} was not cleaned up from Redis within the deletion "
                                f"timeout; removed finalizer {c.GCS_FT_REDIS_CLEANUP_FINALIZER}")  # fmt: skip
            return None
        return await self._cleanup_job(obj, cluster)

    async def _cleanup_job(self, obj: Mapping[str, Any], cluster: RayCluster) -> float | None:
        """Run the Redis cleanup Job once; remove the finalizer when it has finished."""
        namespace = str(_meta(obj)["namespace"])
        job_name = children.redis_cleanup_job_name(cluster)
        job = self.cache.get(JOBS, namespace, job_name)
        if job is not None:
            finished = {
                cond.get("type")
                for cond in (job.get("status") or {}).get("conditions") or []
                if cond.get("status") == "True"
            } & {"Complete", "Failed", "FailureTarget"}
            if finished:
                await self._remove_finalizer(obj)
                return None
            return JOB_REQUEUE
        body = children.redis_cleanup_job(cluster, pods.head_pod(cluster, self.options))
        try:
            await self.api.create(JOBS, body, namespace)
        except ApiError as exc:
            if not exc.conflict:
                self.recorder.event(obj, WARNING, "FailedToCreateRedisCleanupJob", "Create",
                                    f"Failed to create Redis cleanup Job {namespace}/{job_name}, "
                                    f"{exc.message or exc}")  # fmt: skip
                raise
        else:
            self.recorder.event(obj, NORMAL, "CreatedRedisCleanupJob", "Create",
                                f"Created Redis cleanup Job {namespace}/{job_name}")  # fmt: skip
        return JOB_REQUEUE

    def _timed_out(self, obj: Mapping[str, Any]) -> bool:
        annotations = _meta(obj).get("annotations") or {}
        try:
            timeout = float(annotations.get(c.RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION,
                                            c.GCS_FT_DEFAULT_DELETION_TIMEOUT_SECONDS))  # fmt: skip
        except ValueError:
            timeout = float(c.GCS_FT_DEFAULT_DELETION_TIMEOUT_SECONDS)
        stamp = _meta(obj).get("deletionTimestamp")
        if not isinstance(stamp, str):
            return False
        deleted = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        return (self.clock() - deleted).total_seconds() >= timeout

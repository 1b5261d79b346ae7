"""``spec.suspend`` of a RayService: KubeRay v1.7.0 ``handleSuspend`` and ``deleteRayServiceOwnedResources``.

The status moves as :mod:`raykube.builders.rayservice.suspend` says; this part deletes (Background) what a suspended
RayService must not keep: every RayCluster and every Service labelled ``ray.io/originated-from-cr-name=<rs>,
ray.io/originated-from-crd=RayService`` (the head and serve Services; the incremental upgrade's per-cluster serve
Services go with their cluster), and with the incremental upgrade the Gateway ``<rs>-gateway`` and HTTPRoute
``<rs>-httproute``. An object already terminating counts as remaining; a delete answered NotFound counts as done
(its Normal event is still sent, as KubeRay's).
"""

from __future__ import annotations

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS
from raykube.builders import rayservice as rs
from raykube.controllers.rayservice.context import (
    NORMAL,
    WARNING,
    Obj,
    RayServiceError,
    ServiceContext,
    WithDeps,
    gateway_api_missing,
)
from raykube.kube import objects
from raykube.kube.errors import ApiError
from raykube.kube.resources import GATEWAYS, HTTPROUTES, SERVICES, Resource


class Suspender(WithDeps):
    """Deletes a suspending RayService's objects."""

    async def delete_owned(self, ctx: ServiceContext) -> bool:
        """``deleteRayServiceOwnedResources``: delete what remains; True when nothing remained."""
        labels = {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: ctx.name, c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYSERVICE}
        clusters = self.cache.list(RAYCLUSTERS, ctx.namespace, labels)
        for cluster in clusters:
            await self._delete(
                ctx, RAYCLUSTERS, cluster, done=c.EVENT_DELETED_RAYCLUSTER, failed=c.EVENT_FAILED_TO_DELETE_RAYCLUSTER
            )
        services = self.cache.list(SERVICES, ctx.namespace, labels)
        for service in services:
            await self._delete(
                ctx, SERVICES, service, done=c.EVENT_DELETED_SERVICE, failed=c.EVENT_FAILED_TO_DELETE_SERVICE
            )
        remaining = bool(clusters) or bool(services)
        if not rs.incremental_upgrade_enabled(ctx.service, self.gates):
            return not remaining
        gateway = self._gateway_object(GATEWAYS, ctx.namespace, rs.gateway_name(ctx.service))
        if gateway is not None:
            remaining = True
            await self._delete(
                ctx, GATEWAYS, gateway, done=c.EVENT_DELETED_GATEWAY, failed=c.EVENT_FAILED_TO_DELETE_GATEWAY
            )
        route = self._gateway_object(HTTPROUTES, ctx.namespace, rs.httproute_name(ctx.service))
        if route is not None:
            remaining = True
            await self._delete(
                ctx, HTTPROUTES, route, done=c.EVENT_DELETED_HTTPROUTE, failed=c.EVENT_FAILED_TO_DELETE_HTTPROUTE
            )
        return not remaining

    def _gateway_object(self, res: Resource, namespace: str, name: str) -> Obj | None:
        """A Gateway API object from the cache; the pass fails as KubeRay's does when the API is not served."""
        if not self.options.gateway_api_available:
            raise RayServiceError(gateway_api_missing(res.kind))
        return self.cache.get(res, namespace, name)

    async def _delete(self, ctx: ServiceContext, res: Resource, obj: Obj, *, done: str, failed: str) -> None:
        """Delete (Background) unless already terminating; NotFound counts as deleted."""
        if objects.terminating(obj):
            return
        where = f"{objects.namespace(obj)}/{objects.name(obj)}"
        try:
            await self.api.delete(res, objects.name(obj), objects.namespace(obj), propagation="Background")
        except ApiError as exc:
            if not exc.not_found:
                note = f"Failed to delete the {res.kind} {where} during suspend: {exc.message or exc}"
                self.recorder.event(ctx.obj, WARNING, failed, "Delete", note)
                raise RayServiceError(note) from exc
        self.recorder.event(ctx.obj, NORMAL, done, "Delete", f"Deleted the {res.kind} {where} during suspend")

"""The incremental upgrade of a RayService (``NewClusterWithIncrementalUpgrade``, gate ``RayServiceIncrementalUpgrade``,
beta and on in KubeRay v1.7.0): the writes of ``reconcileRollbackState``, ``reconcilePerClusterServeService``,
``reconcileGateway``, ``reconcileHTTPRoute`` and ``reconcileServeTargetCapacity``; what they decide is
:mod:`raykube.builders.rayservice.gateway`.

The Gateway API objects are read from the cache, which holds them only when ``gateway.networking.k8s.io/v1`` was
served at start-up (:attr:`BuildOptions.gateway_api_available`). Without it, KubeRay's client finds no such kind:
the pass fails at the Gateway, before any status is computed, so no RayCluster is ever created and no status written
(raykube fails the same way, with the same message).
"""

from __future__ import annotations

from typing import Any

from raykube.api import constants as c
from raykube.builders import rayservice as rs
from raykube.builders.rayservice.clusters import goal_cluster_hash
from raykube.controllers.base import reported
from raykube.controllers.rayservice.context import (
    NORMAL,
    WARNING,
    Obj,
    RayServiceError,
    ServiceContext,
    WithDeps,
    as_cluster,
    gateway_api_missing,
    service_error,
)
from raykube.golang import goyaml
from raykube.golang.errors import GoError
from raykube.kube import objects, times
from raykube.kube.errors import ApiError
from raykube.kube.resources import GATEWAYS, HTTPROUTES, SERVICES, Resource


class Upgrade(WithDeps):
    """The incremental upgrade's writes for one RayService pass."""

    def _read(self, res: Resource, ctx: ServiceContext, name: str) -> Obj | None:
        if not self.options.gateway_api_available:
            raise RayServiceError(gateway_api_missing(res.kind))
        return self.cache.get(res, ctx.namespace, name)

    def rollback_state(self, ctx: ServiceContext, active: Obj | None, pending: Obj | None) -> None:
        """Before any serving decision, during an upgrade: no active cluster is a Warning ``RollbackImpossible``
        (every pass); with both clusters, ``RollbackInProgress`` follows the goal spec (into ``ctx.status``)."""
        if not rs.incremental_upgrade_enabled(ctx.service, self.gates):
            return
        conditions = ctx.status.get("conditions") or []
        if not any(x.get("type") == c.CONDITION_UPGRADE_IN_PROGRESS and x.get("status") == "True" for x in conditions):
            return
        if active is None:
            note = "Active cluster not found, rollback cannot be initiated"
            self.recorder.event(ctx.obj, WARNING, c.EVENT_ROLLBACK_IMPOSSIBLE, "Reconcile", note)
            return
        if pending is None:
            return
        hash_key = c.RAY_HASH_WITHOUT_REPLICAS_ANNOTATION
        new = rs.rollback_state(
            ctx.status,
            goal_hash=goal_cluster_hash(ctx.service),
            active_hash=objects.annotations(active).get(hash_key, ""),
            pending_hash=objects.annotations(pending).get(hash_key, ""),
            stamp=times.format_time(self.clock()),
        )
        ctx.status.clear()
        ctx.status.update(new)

    async def per_cluster_serve_service(self, ctx: ServiceContext, cluster: Obj | None) -> None:
        """``reconcilePerClusterServeService``: ``<cluster>-serve-svc``, owned by the cluster, created when missing
        (never updated; no event, as KubeRay's)."""
        if cluster is None:
            return
        try:
            desired = rs.serve_service(ctx.service, as_cluster(cluster), incremental=True)
        except rs.RayServiceBuildError as exc:
            raise RayServiceError(str(exc)) from exc
        if self.cache.get(SERVICES, ctx.namespace, objects.name(desired)) is not None:
            return
        try:
            await self.api.create(SERVICES, desired, ctx.namespace)
        except ApiError as exc:
            raise RayServiceError(exc.message or str(exc)) from exc

    async def reconcile_gateway(self, ctx: ServiceContext) -> Obj:
        """``reconcileGateway``: create ``<rs>-gateway``, or update its spec when ``IsGatewayEqual`` says it
        drifted."""
        try:
            desired = rs.gateway(ctx.service)
        except rs.RayServiceBuildError as exc:
            raise RayServiceError(str(exc)) from exc
        name = objects.name(desired)
        where = f"{ctx.namespace}/{name}"
        live = self._read(GATEWAYS, ctx, name)
        if live is None:
            return await reported(
                self.recorder, ctx.obj, "Create", self.api.create(GATEWAYS, desired, ctx.namespace),
                done=(c.EVENT_CREATED_GATEWAY, f"Created Gateway for RayService {where}"),
                failed=(c.EVENT_FAILED_TO_CREATE_GATEWAY, f"Failed to create Gateway for RayService {where}"),
                sep=": ", raise_as=service_error,
            )  # fmt: skip
        if rs.gateway_equal(live, desired):
            return live
        body = {**live, "spec": desired["spec"]}
        return await reported(
            self.recorder, ctx.obj, "Update", self.api.replace(GATEWAYS, name, body, ctx.namespace),
            done=(c.EVENT_UPDATED_GATEWAY, f"Updated the Gateway {where}"),
            failed=(c.EVENT_FAILED_TO_UPDATE_GATEWAY, f"Failed to update the Gateway {where}"),
            sep=": ", raise_as=service_error,
        )  # fmt: skip

    async def reconcile_httproute(
        self, ctx: ServiceContext, gateway: Obj, active: Obj | None, pending: Obj | None, *, pending_ready: bool
    ) -> Obj | None:
        """``reconcileHTTPRoute``: none before there is an active cluster; else ``<rs>-httproute`` with this pass's
        weights, created, or updated when ``IsHTTPRouteEqual`` says it differs."""
        if active is None:
            return None
        try:
            weights = rs.traffic_weights(ctx.service, ctx.status, pending_ready=pending_ready, now=self.clock())
            desired = rs.httproute(ctx.service, gateway, active, pending, weights)
        except rs.RayServiceBuildError as exc:
            raise RayServiceError(str(exc)) from exc
        name = objects.name(desired)
        where = f"{ctx.namespace}/{name}"
        live = self._read(HTTPROUTES, ctx, name)
        if live is None:
            return await reported(
                self.recorder, ctx.obj, "Create", self.api.create(HTTPROUTES, desired, ctx.namespace),
                done=(c.EVENT_CREATED_HTTPROUTE, f"Created HTTPRoute for RayService {where}"),
                failed=(c.EVENT_FAILED_TO_CREATE_HTTPROUTE, f"Failed to create the HTTPRoute for RayService {where}"),
                sep=": ", raise_as=service_error,
            )  # fmt: skip
        if rs.httproute_equal(live, desired):
            return live
        body = {**live, "spec": desired["spec"]}
        return await reported(
            self.recorder, ctx.obj, "Update", self.api.replace(HTTPROUTES, name, body, ctx.namespace),
            done=(c.EVENT_UPDATED_HTTPROUTE, f"Updated the HTTPRoute {where}"),
            failed=(c.EVENT_FAILED_TO_UPDATE_HTTPROUTE, f"Failed to update the HTTPRoute {where}"),
            sep=": ", raise_as=service_error,
        )  # fmt: skip

    async def target_capacity(self, ctx: ServiceContext, cluster: Obj, dashboard: Any, cached: str) -> None:
        """During an upgrade, ``checkIfNeedTargetCapacityUpdate`` then ``reconcileServeTargetCapacity`` for one
        cluster: its next ``target_capacity`` PUT (the cached config, else the spec's, with ``target_capacity``)
        and recorded on its side of ``ctx.status``; a config that already says that capacity is not sent again."""
        gateway = self._read(GATEWAYS, ctx, rs.gateway_name(ctx.service))
        route = self._read(HTTPROUTES, ctx, rs.httproute_name(ctx.service))
        needed, _reason = rs.target_capacity_update(ctx.status, gateway, route)
        if not needed:
            return
        cluster_name = objects.name(cluster)
        where = f"{ctx.namespace}/{cluster_name}"
        try:
            status, goal = rs.goal_target_capacity(ctx.service, ctx.status, cluster_name)
            ctx.status.clear()
            ctx.status.update(status)
            if goal is not None and not _says_capacity(cached or ctx.spec.serve_config_v2 or "", goal):
                body = rs.serve_config_body(cached or ctx.spec.serve_config_v2, target_capacity=goal)
                try:
                    await dashboard.update_deployments(body)
                except Exception as exc:
                    raise RayServiceError(rs.UPDATE_SERVE_APPLICATIONS_ERROR.format(err=exc)) from exc
                for side in ("activeServiceStatus", "pendingServiceStatus"):
                    if (ctx.status.get(side) or {}).get("rayClusterName") == cluster_name:
                        ctx.status[side]["targetCapacity"] = goal
                        break
        except (RayServiceError, rs.RayServiceBuildError) as exc:
            note = f"Failed to update target_capacity of serve applications to the RayCluster {where}: {exc}"
            self.recorder.event(ctx.obj, WARNING, c.EVENT_FAILED_TO_UPDATE_TARGET_CAPACITY, "Update", note)
            raise RayServiceError(str(exc)) from exc
        note = f"Updated target_capacity of serve applications to to the RayCluster {where}"  # KubeRay's "to to"
        self.recorder.event(ctx.obj, NORMAL, c.EVENT_UPDATED_SERVE_TARGET_CAPACITY, "Update", note)


def _says_capacity(config: str, goal: int) -> bool:
    """``applyServeTargetCapacity``'s early exit: the config's ``target_capacity`` is a float64 once read by Go's YAML
    reader (an integer text reads as int64 and never matches **[Q]**) whose int32 is ``goal``."""
    try:
        value = goyaml.yaml_to_value(config)
    except GoError:
        return False
    found = value.get("target_capacity") if isinstance(value, dict) else None
    return isinstance(found, float) and int(found) == goal

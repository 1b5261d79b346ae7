"""The incremental upgrade (``upgradeStrategy.type: NewClusterWithIncrementalUpgrade``, gate
``RayServiceIncrementalUpgrade``, beta and on in KubeRay v1.7.0), as pure functions over the RayService and its status
(a wire dict), after KubeRay v1.7.0 ``rayservice_controller.go`` and ``utils/util.go``:

* the objects: :func:`gateway` (``createGateway``: ``<rs>-gateway``, one HTTP listener ``http``:80 of the spec's
  ``gatewayClassName``) and :func:`httproute` (``createHTTPRoute``: ``<rs>-httproute`` on that Gateway, path prefix
  ``/`` to the active and pending clusters' ``<cluster>-serve-svc`` with their weights), both owned by the RayService;
  :func:`gateway_equal` / :func:`httproute_equal` (``IsGatewayEqual`` / ``IsHTTPRouteEqual``: only what KubeRay
  manages), :func:`gateway_ready` / :func:`httproute_ready`, :func:`route_weights` (``GetWeightsFromHTTPRoute``);
* the stepping: :func:`traffic_weights` (``calculateTrafficRoutedPercent``: ``stepSizePercent`` every
  ``intervalSeconds``, capped by the receiving side's target capacity), :func:`target_capacity_update`
  (``checkIfNeedTargetCapacityUpdate``) and :func:`goal_target_capacity` (``reconcileServeTargetCapacity``:
  ``maxSurgePercent`` at a time, the pending side up first, then the active side down);
* the end: :func:`upgrade_complete` (promotion once the active side's capacity is 0 and the pending side carries
  100%), :func:`rollback_state` (``reconcileRollbackState``, reason ``DesiredClusterSpecChanged``) and
  :func:`rollback_complete` (``shouldCompleteIncrementalRollback``, v1.7.0: also when the pending head is not ready).

KubeRay's quirk kept **[Q]**: :func:`route_weights` matches a backend to a side by substring of the cluster name.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from typing import Any, Final

from raykube.api import constants as c
from raykube.api.rayservice import ClusterUpgradeOptions
from raykube.api.resources import RayService
from raykube.builders import names
from raykube.builders.rayservice.common import (
    _FALSE,
    _TRUE,
    RayServiceBuildError,
    _conditions,
    _is_true,
    _name,
    _namespace,
    _rayservice_owner,
    _side_name,
    _spec,
)
from raykube.builders.rayservice.status import set_condition
from raykube.kube import times

__all__ = [
    "gateway",
    "gateway_equal",
    "gateway_name",
    "gateway_ready",
    "goal_target_capacity",
    "httproute",
    "httproute_equal",
    "httproute_name",
    "httproute_ready",
    "new_pending_side",
    "rollback_complete",
    "rollback_completed",
    "rollback_state",
    "route_weights",
    "serve_port",
    "target_capacity_update",
    "traffic_weights",
    "upgrade_complete",
]

ACTIVE: Final = "activeServiceStatus"
PENDING: Final = "pendingServiceStatus"
_MISSING_OPTIONS: Final = "Missing RayService ClusterUpgradeOptions during upgrade."


def gateway_name(rayservice: RayService) -> str:
    """``<rs>-gateway``."""
    return f"{_name(rayservice)}-gateway"


def httproute_name(rayservice: RayService) -> str:
    """``<rs>-httproute``."""
    return f"{_name(rayservice)}-httproute"


def upgrade_options(rayservice: RayService) -> ClusterUpgradeOptions | None:
    """``GetRayServiceClusterUpgradeOptions``."""
    strategy = _spec(rayservice).upgrade_strategy
    return strategy.cluster_upgrade_options if strategy is not None else None


def _options(rayservice: RayService, message: str = _MISSING_OPTIONS) -> ClusterUpgradeOptions:
    options = upgrade_options(rayservice)
    if options is None:
        raise RayServiceBuildError(message)
    return options


def _metadata(rayservice: RayService, name: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    namespace = _namespace(rayservice)
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["ownerReferences"] = [_rayservice_owner(rayservice)]
    return metadata


def gateway(rayservice: RayService) -> dict[str, Any]:
    """``createGateway`` with ``SetControllerReference``: the Gateway ``<rs>-gateway``."""
    options = _options(rayservice)
    listener = {
        "name": c.GATEWAY_LISTENER_NAME,
        "protocol": c.GATEWAY_LISTENER_PROTOCOL,
        "port": c.GATEWAY_LISTENER_PORT,
    }
    return {
        "apiVersion": c.GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": _metadata(rayservice, gateway_name(rayservice)),
        "spec": {"gatewayClassName": options.gateway_class_name, "listeners": [listener]},
    }


def serve_port(cluster: Mapping[str, Any] | None) -> int:
    """``common.GetServePort``: the head container's port named ``serve``, else 8000."""
    spec = (cluster or {}).get("spec") or {}
    containers = ((((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec")) or {}).get("containers")
    if not containers:
        return c.DEFAULT_SERVING_PORT
    for port in containers[c.RAY_CONTAINER_INDEX].get("ports") or []:
        if port.get("name") == c.SERVING_PORT_NAME:
            return int(port.get("containerPort") or 0)
    return c.DEFAULT_SERVING_PORT


def _backend(cluster: Mapping[str, Any], namespace: str, weight: int) -> dict[str, Any]:
    cluster_name = str((cluster.get("metadata") or {}).get("name") or "")
    return {
        "name": names.serve_service_name(cluster_name),
        "namespace": namespace,
        "port": serve_port(cluster),
        "weight": weight,
    }


def httproute(
    rayservice: RayService,
    gateway_obj: Mapping[str, Any],
    active: Mapping[str, Any],
    pending: Mapping[str, Any] | None,
    weights: tuple[int, int],
) -> dict[str, Any]:
    """``createHTTPRoute`` with ``SetControllerReference``: ``<rs>-httproute`` attached to the Gateway, every path
    (prefix ``/``) to the active cluster's ``<cluster>-serve-svc`` and, when there is one, the pending cluster's, with
    the ``weights`` (active, pending) of :func:`traffic_weights`."""
    gw_meta = gateway_obj.get("metadata") or {}
    namespace = str(gw_meta.get("namespace") or "")
    backends = [_backend(active, namespace, weights[0])]
    if pending is not None:
        backends.append(_backend(pending, namespace, weights[1]))
    metadata = _metadata(rayservice, httproute_name(rayservice))
    metadata["namespace"] = namespace
    return {
        "apiVersion": c.GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": metadata,
        "spec": {
            "parentRefs": [{"name": str(gw_meta.get("name") or ""), "namespace": namespace}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": backends}],
        },
    }


def gateway_equal(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """``IsGatewayEqual``: the class name, and each listener's name, protocol and port."""
    old, new = existing.get("spec") or {}, desired.get("spec") or {}
    if (old.get("gatewayClassName") or "") != (new.get("gatewayClassName") or ""):
        return False
    old_listeners, new_listeners = old.get("listeners") or [], new.get("listeners") or []
    if len(old_listeners) != len(new_listeners):
        return False
    keys = ("name", "protocol", "port")
    return all(
        [a.get(k) for k in keys] == [b.get(k) for k in keys] for a, b in zip(old_listeners, new_listeners, strict=True)
    )


def _backend_key(ref: Mapping[str, Any]) -> tuple[str, str, int, int]:
    return (
        str(ref.get("name") or ""),
        str(ref.get("namespace") or ""),
        int(ref["weight"]) if ref.get("weight") is not None else 1,
        int(ref.get("port") or 0),
    )


def httproute_equal(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:  # noqa: PLR0911 - field by field
    """``IsHTTPRouteEqual`` (v1.7.0): hostnames, parent refs (name, namespace), and per rule the matches, the filters
    and each backend's name, namespace, weight (unset: 1) and port."""
    old, new = existing.get("spec") or {}, desired.get("spec") or {}
    if (old.get("hostnames") or []) != (new.get("hostnames") or []):
        return False
    old_parents, new_parents = old.get("parentRefs") or [], new.get("parentRefs") or []
    if len(old_parents) != len(new_parents):
        return False
    for a, b in zip(old_parents, new_parents, strict=True):
        if (a.get("name") or "", a.get("namespace") or "") != (b.get("name") or "", b.get("namespace") or ""):
            return False
    old_rules, new_rules = old.get("rules") or [], new.get("rules") or []
    if len(old_rules) != len(new_rules):
        return False
    for a, b in zip(old_rules, new_rules, strict=True):
        if a.get("matches") != b.get("matches") or (a.get("filters") or []) != (b.get("filters") or []):
            return False
        old_refs, new_refs = a.get("backendRefs") or [], b.get("backendRefs") or []
        if [_backend_key(r) for r in old_refs] != [_backend_key(r) for r in new_refs]:
            return False
    return True


def gateway_ready(gateway_obj: Mapping[str, Any] | None) -> bool:
    """``IsGatewayReady``: ``Accepted`` and ``Programmed`` are True."""
    conditions = ((gateway_obj or {}).get("status") or {}).get("conditions") or []
    return _is_true(conditions, "Accepted") and _is_true(conditions, "Programmed")


def httproute_ready(gateway_obj: Mapping[str, Any], route: Mapping[str, Any] | None) -> bool:
    """``IsHTTPRouteReady``: the route's status for this Gateway (by name, and namespace when given) has
    ``Accepted`` and ``ResolvedRefs`` True."""
    gw_meta = gateway_obj.get("metadata") or {}
    for parent in ((route or {}).get("status") or {}).get("parents") or []:
        ref = parent.get("parentRef") or {}
        if ref.get("name") != gw_meta.get("name"):
            continue
        if ref.get("namespace") is not None and ref.get("namespace") != gw_meta.get("namespace"):
            continue
        conditions = parent.get("conditions") or []
        if _is_true(conditions, "Accepted") and _is_true(conditions, "ResolvedRefs"):
            return True
    return False


def route_weights(route: Mapping[str, Any] | None, status: Mapping[str, Any]) -> tuple[int, int]:
    """``GetWeightsFromHTTPRoute``: the weights of the backends whose names contain the active and the pending
    cluster's names, -1 for a side not found (or no route yet)."""
    active_name, pending_name = _side_name(status, ACTIVE), _side_name(status, PENDING)
    active = pending = -1
    rules = ((route or {}).get("spec") or {}).get("rules") or []
    if not rules:
        return active, pending
    for ref in rules[0].get("backendRefs") or []:
        backend = str(ref.get("name") or "")
        weight = int(ref.get("weight") or 0)
        if active_name and active_name in backend:
            active = weight
        if pending_name and pending_name in backend:
            pending = weight
    return active, pending


def _side(status: Mapping[str, Any], side: str) -> Mapping[str, Any]:
    return status.get(side) or {}


def _int(side: Mapping[str, Any], key: str, default: int) -> int:
    value = side.get(key)
    return default if value is None else int(value)


def _rolling_back(status: Mapping[str, Any]) -> bool:
    return _is_true(_conditions(status), c.CONDITION_ROLLBACK_IN_PROGRESS)


def traffic_weights(
    rayservice: RayService, status: Mapping[str, Any], *, pending_ready: bool, now: dt.datetime
) -> tuple[int, int]:
    """``calculateTrafficRoutedPercent``: the (active, pending) weights of the HTTPRoute this pass. From the current
    ``trafficRoutedPercent`` (active 100, pending 0 when unset), once ``intervalSeconds`` have passed since the
    receiving side's ``lastTrafficMigratedTime``: ``stepSizePercent`` more to the pending side (only when it is
    ready), capped by its ``targetCapacity``; during a rollback to the active side, capped by its capacity. Nothing
    moves once the receiving side's weight equals its target capacity."""
    active_side, pending_side = _side(status, ACTIVE), _side(status, PENDING)
    active = _int(active_side, "trafficRoutedPercent", 100)
    pending = _int(pending_side, "trafficRoutedPercent", 0)
    options = _options(rayservice, "ClusterUpgradeOptions are not set during upgrade.")
    pending_capacity = _int(pending_side, "targetCapacity", 0)
    active_capacity = _int(active_side, "targetCapacity", 100)
    rolling_back = _rolling_back(status)
    if (pending == pending_capacity and not rolling_back) or (rolling_back and active == active_capacity):
        return active, pending
    last = times.parse_time((active_side if rolling_back else pending_side).get("lastTrafficMigratedTime"))
    if last is not None and now - last < dt.timedelta(seconds=int(options.interval_seconds)):
        return active, pending
    step = int(options.step_size_percent)
    if rolling_back:
        active = min(100, active + step, active_capacity)
        return active, 100 - active
    if pending_ready:
        pending = min(100, pending + step, pending_capacity)
        return 100 - pending, pending
    return active, pending


def target_capacity_update(  # noqa: PLR0911 - one return per reason KubeRay gives
    status: Mapping[str, Any],
    gateway_obj: Mapping[str, Any] | None,
    route: Mapping[str, Any] | None,
) -> tuple[bool, str]:
    """``checkIfNeedTargetCapacityUpdate``: whether to step a cluster's ``target_capacity`` this pass, and why.
    ``gateway_obj`` / ``route`` None: not found (KubeRay's Get error)."""
    if not _side_name(status, ACTIVE) or not _side_name(status, PENDING):
        return False, "Both active and pending RayCluster instances are required for NewClusterWithIncrementalUpgrade."
    if gateway_obj is None:
        return False, "Failed to retrieve Gateway for RayService: not found"
    if not gateway_ready(gateway_obj):
        return False, "Gateway for RayService NewClusterWithIncrementalUpgrade is not ready."
    if route is None:
        return False, "Failed to retrieve HTTPRoute for RayService: not found"
    if not httproute_ready(gateway_obj, route):
        return False, "HTTPRoute for RayService NewClusterWithIncrementalUpgrade is not ready."
    active_side, pending_side = _side(status, ACTIVE), _side(status, PENDING)
    if active_side.get("targetCapacity") is None or active_side.get("trafficRoutedPercent") is None:
        return True, "Active RayServiceStatus missing TargetCapacity or TrafficRoutedPercent."
    if pending_side.get("targetCapacity") is None or pending_side.get("trafficRoutedPercent") is None:
        return True, "Pending RayServiceStatus missing TargetCapacity or TrafficRoutedPercent."
    active_capacity, pending_capacity = int(active_side["targetCapacity"]), int(pending_side["targetCapacity"])
    if _rolling_back(status):
        if active_capacity == 100 and pending_capacity == 0:
            return False, "Rollback complete: all traffic has been restored to the active cluster."
        return True, "Rollback in progress: traffic is being restored to the active cluster."
    if active_capacity == 0 and pending_capacity == 100:
        return False, (
            "All traffic has migrated to the upgraded cluster and NewClusterWithIncrementalUpgrade is complete."
        )
    if pending_capacity < 100 or int(pending_side["trafficRoutedPercent"]) < 100:
        return True, "Pending RayCluster has not finished scaling up."
    return True, "Active RayCluster TargetCapacity has not finished scaling down."


def goal_target_capacity(  # noqa: PLR0911 - one return per case of KubeRay's
    rayservice: RayService, status: Mapping[str, Any], cluster_name: str
) -> tuple[dict[str, Any], int | None]:
    """``reconcileServeTargetCapacity`` for ``cluster_name``: the status with unset capacities defaulted (active 100,
    pending 0, kept even when nothing is sent) and the ``target_capacity`` to send that cluster, or None.

    Upgrade, once the pending side's traffic has caught up with its capacity: with the capacities summing to more
    than 100 the active side goes down by ``maxSurgePercent``, else the pending side goes up by it. Rollback, once the
    active side's traffic has caught up with its capacity: the pending side down, else the active side up."""
    new = copy.deepcopy(dict(status))
    active_side = new.setdefault(ACTIVE, {})
    pending_side = new.setdefault(PENDING, {})
    if active_side.get("targetCapacity") is None:
        active_side["targetCapacity"] = 100
    if pending_side.get("targetCapacity") is None:
        pending_side["targetCapacity"] = 0
    active, pending = int(active_side["targetCapacity"]), int(pending_side["targetCapacity"])
    options = _options(rayservice, "Missing RayService ClusterUpgradeOptions during upgrade")
    surge = 100 if options.max_surge_percent is None else int(options.max_surge_percent)
    is_active = cluster_name == _side_name(new, ACTIVE)
    is_pending = cluster_name == _side_name(new, PENDING)
    if _rolling_back(new):
        if active != _int(active_side, "trafficRoutedPercent", 0):
            return new, None
        if active + pending > 100:
            return new, (max(0, pending - surge) if is_pending else None)
        return new, (min(100, active + surge) if is_active else None)
    if pending != _int(pending_side, "trafficRoutedPercent", 0):
        return new, None
    if is_active:
        return new, (max(0, active - surge) if active + pending > 100 else None)
    if is_pending:
        return new, (min(100, pending + surge) if active + pending <= 100 else None)
    return new, None


def upgrade_complete(status: Mapping[str, Any], *, pending_exists: bool) -> bool:
    """``IsIncrementalUpgradeComplete``: a pending cluster, the active side's capacity 0, the pending side's traffic
    100%."""
    return (
        pending_exists
        and _int(_side(status, ACTIVE), "targetCapacity", -1) == 0
        and _int(_side(status, PENDING), "trafficRoutedPercent", -1) == 100
    )


def rollback_complete(status: Mapping[str, Any], *, pending_head_ready: bool) -> bool:
    """``shouldCompleteIncrementalRollback`` (v1.7.0): the active side back at capacity and traffic 100, and the
    pending side at 0/0 or its head not ready (a broken pending cluster does not hold the rollback up)."""
    active_side, pending_side = _side(status, ACTIVE), _side(status, PENDING)
    pending_drained = (
        _int(pending_side, "targetCapacity", -1) == 0 and _int(pending_side, "trafficRoutedPercent", -1) == 0
    )
    return (
        _int(active_side, "targetCapacity", -1) == 100
        and _int(active_side, "trafficRoutedPercent", -1) == 100
        and (not pending_head_ready or pending_drained)
    )


def rollback_state(
    status: Mapping[str, Any], *, goal_hash: str, active_hash: str, pending_hash: str, stamp: str
) -> dict[str, Any]:
    """``reconcileRollbackState`` during an upgrade: the goal back at the active cluster's spec starts a rollback
    ("Goal state reverted to original cluster, rolling back."); at the pending cluster's, it cancels one (the
    condition is removed); any third spec starts one too ("Goal state changed mid-upgrade, rolling back to original
    cluster."), both ``RollbackInProgress=True/DesiredClusterSpecChanged``."""
    new = copy.deepcopy(dict(status))
    rolling_back = _rolling_back(new)
    if goal_hash == active_hash:
        message = "Goal state reverted to original cluster, rolling back."
    elif goal_hash == pending_hash:
        if rolling_back:
            new["conditions"] = [
                cond for cond in new.get("conditions") or [] if cond.get("type") != c.CONDITION_ROLLBACK_IN_PROGRESS
            ]
        return new
    else:
        message = "Goal state changed mid-upgrade, rolling back to original cluster."
    if not rolling_back:
        set_condition(
            new, c.CONDITION_ROLLBACK_IN_PROGRESS, _TRUE, c.REASON_DESIRED_CLUSTER_SPEC_CHANGED, message, stamp=stamp
        )
    return new


def rollback_completed(status: Mapping[str, Any], *, stamp: str) -> dict[str, Any]:
    """The rollback done: the pending side emptied (its cluster goes after the deletion delay), ``RollbackInProgress``
    removed, ``UpgradeInProgress=False/NoPendingCluster``."""
    new = copy.deepcopy(dict(status))
    new[PENDING] = {}
    new["conditions"] = [x for x in new.get("conditions") or [] if x.get("type") != c.CONDITION_ROLLBACK_IN_PROGRESS]
    set_condition(
        new,
        c.CONDITION_UPGRADE_IN_PROGRESS,
        _FALSE,
        c.REASON_NO_PENDING_CLUSTER,
        "Rollback complete, active Ray cluster exists and no pending Ray cluster",
        stamp=stamp,
    )
    return new


def new_pending_side(status: Mapping[str, Any], cluster_name: str, *, incremental: bool) -> dict[str, Any]:
    """The pending side ``calculateStatus`` starts for a new cluster; with the incremental upgrade its
    ``targetCapacity``: 100 for the RayService's first cluster (unless the active side has one), 0 for an
    upgrade's (v1.7.0: whenever an active cluster exists)."""
    side: dict[str, Any] = {"rayClusterName": cluster_name}
    if incremental:
        active = _side(status, ACTIVE)
        if active.get("rayClusterName"):
            side["targetCapacity"] = 0
        elif active.get("targetCapacity") is None:
            side["targetCapacity"] = 100
    return side

"""What the RayService controller decides and writes, as KubeRay v1.6.1 does, as pure functions over the CR models
and plain dicts: no I/O, inputs never mutated. The controller reads the cache and the dashboard, calls these, and
writes what they return.

One module per part of ``ray-operator/controllers/ray/rayservice_controller.go``, each mapping its functions to
KubeRay's and listing the quirks it keeps (**[Q]**):

* :mod:`~raykube.builders.rayservice.clusters`: the RayService's RayCluster (its name, the spec hashes, the in-place
  update, when to prepare a new cluster, the upgrade strategy switches);
* :mod:`~raykube.builders.rayservice.services`: the head and serve Services and switching them to another cluster;
* :mod:`~raykube.builders.rayservice.serve`: the serve config the dashboard is sent and the application statuses it
  answers with;
* :mod:`~raykube.builders.rayservice.status`: the conditions, the promotion of the pending cluster, and when the status
  is written;
* :mod:`~raykube.builders.rayservice.suspend`: ``spec.suspend``'s conditions (KubeRay v1.7.0);
* :mod:`~raykube.builders.rayservice.common`: :class:`RayServiceBuildError` and the readers the others share.

* :mod:`~raykube.builders.rayservice.gateway`: KubeRay v1.7.0's ``NewClusterWithIncrementalUpgrade``: the Gateway and
  HTTPRoute, the traffic and ``target_capacity`` steps, promotion and rollback (with
  :func:`incremental_upgrade_enabled`, the per-cluster serve Service of ``serve_service(..., incremental=True)``,
  ``target_capacity`` in :func:`serve_config_body`).

Every public name is re-exported here, so the controller reads ``rs.promote(...)`` after
``from raykube.builders import rayservice as rs``.
"""

from raykube.builders.rayservice.clusters import (
    cluster_spec_hash_equal,
    goal_cluster_hash,
    incremental_upgrade_enabled,
    new_cluster_name,
    partial_cluster_hash,
    rayservice_cluster,
    should_prepare_new_cluster,
    should_update_cluster,
    updated_cluster,
    zero_downtime_upgrade_enabled,
)
from raykube.builders.rayservice.common import RayServiceBuildError
from raykube.builders.rayservice.gateway import (
    gateway,
    gateway_equal,
    gateway_name,
    gateway_ready,
    goal_target_capacity,
    httproute,
    httproute_equal,
    httproute_name,
    httproute_ready,
    new_pending_side,
    rollback_complete,
    rollback_completed,
    rollback_state,
    route_weights,
    serve_port,
    target_capacity_update,
    traffic_weights,
    upgrade_complete,
)
from raykube.builders.rayservice.serve import (
    GET_SERVE_STATUS_ERROR,
    UPDATE_SERVE_APPLICATIONS_ERROR,
    need_submit_serve_applications,
    serve_application_statuses,
    serve_config_body,
)
from raykube.builders.rayservice.services import (
    head_service,
    head_service_name,
    serve_service,
    serve_service_name,
    service_cluster,
    switched_service,
)
from raykube.builders.rayservice.status import (
    calculate_conditions,
    initializing_timeout,
    is_initializing_timeout,
    num_serve_endpoints,
    promote,
    service_status,
    set_condition,
    status_needs_update,
)
from raykube.builders.rayservice.suspend import (
    SuspendPhase,
    resumed,
    suspend_completed,
    suspend_is_operative,
    suspend_phase,
    suspend_requested,
    suspend_waiting,
)

__all__ = [
    "GET_SERVE_STATUS_ERROR",
    "UPDATE_SERVE_APPLICATIONS_ERROR",
    "RayServiceBuildError",
    "SuspendPhase",
    "calculate_conditions",
    "cluster_spec_hash_equal",
    "gateway",
    "gateway_equal",
    "gateway_name",
    "gateway_ready",
    "goal_cluster_hash",
    "goal_target_capacity",
    "head_service",
    "head_service_name",
    "httproute",
    "httproute_equal",
    "httproute_name",
    "httproute_ready",
    "incremental_upgrade_enabled",
    "initializing_timeout",
    "is_initializing_timeout",
    "need_submit_serve_applications",
    "new_cluster_name",
    "new_pending_side",
    "num_serve_endpoints",
    "partial_cluster_hash",
    "promote",
    "rayservice_cluster",
    "resumed",
    "rollback_complete",
    "rollback_completed",
    "rollback_state",
    "route_weights",
    "serve_application_statuses",
    "serve_config_body",
    "serve_port",
    "serve_service",
    "serve_service_name",
    "service_cluster",
    "service_status",
    "set_condition",
    "should_prepare_new_cluster",
    "should_update_cluster",
    "status_needs_update",
    "suspend_completed",
    "suspend_is_operative",
    "suspend_phase",
    "suspend_requested",
    "suspend_waiting",
    "switched_service",
    "target_capacity_update",
    "traffic_weights",
    "updated_cluster",
    "upgrade_complete",
    "zero_downtime_upgrade_enabled",
]

"""RayService (``ray.io/v1``): Ray Serve applications and the RayClusters that serve them, as in KubeRay v1.6.1."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from raykube.api.raycluster import RayClusterSpec, RayClusterStatus
from raykube.api.schema import (
    ConditionList,
    CrdRequired,
    Int32,
    Int64,
    ManagedBy,
    RayModel,
    Schema,
    ServiceObject,
    Time,
)


class ClusterUpgradeOptions(RayModel):
    """Incremental upgrade through the Gateway API: how much traffic moves, how fast."""

    max_surge_percent: Int32 | None = Field(100, description="Capacity the new cluster may add at once, percent.")
    step_size_percent: Int32 = Field(description="Traffic moved to the new cluster per step, percent.")
    interval_seconds: Int32 = Field(description="Seconds between steps.")
    gateway_class_name: str = Field(description="GatewayClass of the Gateway that splits traffic.")


class RayServiceUpgradeStrategy(RayModel):
    type: str | None = Field(None, description="NewCluster (default), NewClusterWithIncrementalUpgrade or None.")
    cluster_upgrade_options: ClusterUpgradeOptions | None = None


class RayServiceSpec(RayModel):
    """The desired state of a Ray Serve deployment."""

    ray_cluster_deletion_delay_seconds: Annotated[Int32, Schema(minimum=0)] | None = Field(
        None, description="Seconds before an old cluster is deleted after an upgrade (KubeRay uses 60)."
    )
    service_unhealthy_second_threshold: Int32 | None = Field(None, description="Deprecated; ignored.")
    deployment_unhealthy_second_threshold: Int32 | None = Field(None, description="Deprecated; ignored.")
    serve_service: ServiceObject | None = Field(None, description="The Service in front of Serve.")
    upgrade_strategy: RayServiceUpgradeStrategy | None = None
    serve_config_v2: str | None = Field(None, description="Serve config (YAML), as `serve build` writes it.")
    # Required by KubeRay's v1 schema but not by its v1alpha1 (see RAYSERVICE.v1alpha1_optional). Optional in
    # Python, so an object created through v1alpha1 still parses; the validator reports it missing.
    ray_cluster_config: Annotated[RayClusterSpec, CrdRequired()] | None = Field(
        None, description="The cluster that runs Serve."
    )
    exclude_head_pod_from_serve_svc: bool | None = None
    managed_by: ManagedBy | None = None


class ServeDeploymentStatus(RayModel):
    status: str | None = None
    message: str | None = None
    health_last_update_time: Time | None = None  # v1alpha1 only


class AppStatus(RayModel):
    status: str | None = None
    message: str | None = None
    health_last_update_time: Time | None = None  # v1alpha1 only
    serve_deployment_statuses: dict[str, ServeDeploymentStatus] | None = None


class RayServiceStatus(RayModel):
    """One of the (active or pending) clusters of a RayService, and its Serve applications."""

    application_statuses: dict[str, AppStatus] | None = None
    target_capacity: Int32 | None = None
    traffic_routed_percent: Int32 | None = None
    last_traffic_migrated_time: Time | None = None
    ray_cluster_name: str | None = None
    ray_cluster_status: RayClusterStatus | None = None


class RayServiceStatuses(RayModel):
    conditions: ConditionList | None = None
    last_update_time: Time | None = None
    service_status: str | None = None
    active_service_status: RayServiceStatus | None = None
    pending_service_status: RayServiceStatus | None = None
    num_serve_endpoints: Int32 | None = None
    observed_generation: Int64 | None = None

"""RayService (``ray.io/v1``): Ray Serve applications and the RayClusters that serve them, as in KubeRay v1.7.0."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from raykube.api.raycluster import RayClusterSpec, RayClusterStatus
from raykube.api.schema import (
    V1_ONLY,
    V1ALPHA1_ONLY,
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

    ray_cluster_deletion_delay_seconds: Annotated[Annotated[Int32, Schema(minimum=0)] | None, V1_ONLY] = Field(
        None, description="Seconds before an old cluster is deleted after an upgrade (KubeRay uses 60)."
    )
    service_unhealthy_second_threshold: Int32 | None = Field(None, description="Deprecated; ignored.")
    deployment_unhealthy_second_threshold: Int32 | None = Field(None, description="Deprecated; ignored.")
    serve_service: ServiceObject | None = Field(None, description="The Service in front of Serve.")
    upgrade_strategy: Annotated[RayServiceUpgradeStrategy | None, V1_ONLY] = None
    serve_config_v2: str | None = Field(None, description="Serve config (YAML), as `serve build` writes it.")
    # Required by KubeRay's v1 schema but not by its v1alpha1 (see RAYSERVICE.v1alpha1_optional). Optional in
    # Python, so an object created through v1alpha1 still parses; the validator reports it missing.
    ray_cluster_config: Annotated[RayClusterSpec, CrdRequired()] | None = Field(
        None, description="The cluster that runs Serve."
    )
    exclude_head_pod_from_serve_svc: Annotated[bool | None, V1_ONLY] = None
    managed_by: Annotated[ManagedBy | None, V1_ONLY] = None
    suspend: Annotated[bool | None, V1_ONLY] = Field(
        None, description="Delete every resource of the RayService until set back to false (v1.7)."
    )


class ServeDeploymentStatus(RayModel):
    status: str | None = None
    message: str | None = None
    health_last_update_time: Annotated[Time | None, V1ALPHA1_ONLY] = None


class AppStatus(RayModel):
    status: str | None = None
    message: str | None = None
    health_last_update_time: Annotated[Time | None, V1ALPHA1_ONLY] = None
    serve_deployment_statuses: dict[str, ServeDeploymentStatus] | None = None


class RayServiceStatus(RayModel):
    """One of the (active or pending) clusters of a RayService, and its Serve applications."""

    application_statuses: dict[str, AppStatus] | None = None
    target_capacity: Annotated[Int32 | None, V1_ONLY] = None
    traffic_routed_percent: Annotated[Int32 | None, V1_ONLY] = None
    last_traffic_migrated_time: Annotated[Time | None, V1_ONLY] = None
    ray_cluster_name: str | None = None
    ray_cluster_status: RayClusterStatus | None = None


class RayServiceStatuses(RayModel):
    conditions: Annotated[ConditionList | None, V1_ONLY] = None
    last_update_time: Time | None = None
    service_status: str | None = None
    active_service_status: RayServiceStatus | None = None
    pending_service_status: RayServiceStatus | None = None
    num_serve_endpoints: Annotated[Int32 | None, V1_ONLY] = None
    observed_generation: Int64 | None = None

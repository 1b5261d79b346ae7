"""RayCluster (``ray.io/v1``): spec and status, field for field as KubeRay v1.7.0 defines them.

Field names, types, defaults and enums follow KubeRay's ``ray-operator/apis/ray/v1/raycluster_types.go`` as published
in its v1.7.0 CRD; tests/unit/test_api_crd_v170.py proves the generated schema equal to v1.7.0's, path for path, in
both versions (``V1_ONLY`` marks what KubeRay added after it froze ``v1alpha1``), and
tests/unit/test_api_crd_compat.py that everything v1.6.1's accepted is still accepted. Descriptions are ours.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from raykube.api import constants as c
from raykube.api.schema import (
    CEL,
    V1_ONLY,
    ConditionList,
    CrdRequired,
    EnvFromSource,
    EnvVar,
    EnvVarSource,
    IngressTLS,
    Int32,
    Int64,
    ManagedBy,
    NetworkPolicyEgressRule,
    NetworkPolicyIngressRule,
    PodTemplateSpec,
    Quantity,
    RayModel,
    ResourceRequirements,
    Schema,
    SecurityContext,
    ServiceObject,
    Time,
    VolumeMount,
)

MAX_INT32 = 2147483647


class IngressOptions(RayModel):
    """Options of the dashboard Ingress made when ``headGroupSpec.enableIngress`` is true."""

    host: str | None = Field(None, description="Host name of the Ingress rule; any host when empty.")
    path: str | None = Field(None, description='Path of the Ingress rule (KubeRay defaults it to "/").')
    path_type: Literal[c.INGRESS_PATH_TYPES] | None = Field(  # type: ignore[valid-type]
        None, description='Path type of the Ingress rule (KubeRay defaults to "Prefix").'
    )
    tls: list[IngressTLS] | None = Field(None, description="TLS settings of the Ingress.")


class HeadGroupSpec(RayModel):
    """The head: exactly one Pod, plus the head Service."""

    template: PodTemplateSpec = Field(description="Pod template of the head Pod. Its first container runs Ray.")
    ray_start_params: Annotated[dict[str, str], CrdRequired(versions=("v1alpha1",))] | None = Field(
        None, description="Flags for `ray start --head`, as strings."
    )
    service_type: str | None = Field(
        None, description="Type of the head Service: ClusterIP (default, made headless), NodePort or LoadBalancer."
    )
    head_service: ServiceObject | None = Field(
        None, description="A Service whose name, type, labels, annotations and ports are merged into the head Service."
    )
    enable_ingress: bool | None = Field(None, description="Create an Ingress to the dashboard.")
    ingress_options: Annotated[IngressOptions | None, V1_ONLY] = None
    resources: Annotated[dict[str, str] | None, V1_ONLY] = Field(
        None, description="Ray resources of the head (CPU, memory, GPU, custom), overriding what the Pod requests."
    )
    labels: Annotated[dict[str, str] | None, V1_ONLY] = Field(
        None, description="Ray node labels of the head, also added to its Pod."
    )


class ScaleStrategy(RayModel):
    """What the Ray autoscaler asks of a worker group beyond a replica count."""

    workers_to_delete: list[str] | None = Field(
        None, description="Pods to delete; the operator deletes them on every reconcile, the autoscaler clears it."
    )


class WorkerGroupSpec(RayModel):
    """A group of identical worker Pods."""

    group_name: str = Field(description="Name of the group, unique in the cluster.")
    replicas: Int32 | None = Field(0, description="Desired number of workers (of replica groups if numOfHosts > 1).")
    min_replicas: Annotated[Int32, CrdRequired()] = Field(0, description="Lower bound for the autoscaler.")
    max_replicas: Annotated[Int32, CrdRequired()] = Field(MAX_INT32, description="Upper bound for the autoscaler.")
    num_of_hosts: Annotated[Int32, V1_ONLY] = Field(
        1, description="Pods per replica (multi-host groups, such as TPU slices)."
    )
    idle_timeout_seconds: Annotated[Int32 | None, V1_ONLY] = Field(
        None, description="Seconds a worker may be idle before the autoscaler (v2) removes it."
    )
    ray_start_params: Annotated[dict[str, str], CrdRequired(versions=("v1alpha1",))] | None = Field(
        None, description="Flags for `ray start` on each worker."
    )
    template: PodTemplateSpec = Field(description="Pod template of the workers. Its first container runs Ray.")
    scale_strategy: ScaleStrategy | None = None
    suspend: Annotated[bool | None, V1_ONLY] = Field(
        None, description="Delete every Pod of this group (used by RayJob DeleteWorkers)."
    )
    resources: Annotated[dict[str, str] | None, V1_ONLY] = Field(
        None, description="Ray resources of each worker, overriding the Pod's."
    )
    labels: Annotated[dict[str, str] | None, V1_ONLY] = Field(
        None, description="Ray node labels of each worker, also added to its Pods."
    )
    priority: Annotated[Int32 | None, V1_ONLY] = Field(
        0, description="Preference of the autoscaler (v2, Ray 2.56 and later) for this group; higher scales up first."
    )


class AutoscalerOptions(RayModel):
    """Settings of the Ray autoscaler sidecar added to the head Pod when in-tree autoscaling is on."""

    resources: ResourceRequirements | None = None
    image: str | None = Field(None, description="Autoscaler image; the head's Ray image when empty.")
    image_pull_policy: str | None = None
    security_context: SecurityContext | None = None
    idle_timeout_seconds: Int32 | None = Field(None, description="Seconds before an idle worker is removed.")
    upscaling_mode: Literal["Default", "Aggressive", "Conservative"] | None = None
    version: Annotated[Literal["v1", "v2"] | None, V1_ONLY] = Field(
        None, description="Autoscaler generation; Ray chooses when empty."
    )
    env: list[EnvVar] | None = None
    env_from: list[EnvFromSource] | None = None
    volume_mounts: list[VolumeMount] | None = None
    command: Annotated[list[str] | None, V1_ONLY] = Field(None, description="Replaces the sidecar's command.")
    args: Annotated[list[str] | None, V1_ONLY] = Field(None, description="Replaces the sidecar's arguments.")


class RedisCredential(RayModel):
    """A Redis credential, given as a value or taken from a Secret, ConfigMap or field."""

    value: str | None = None
    value_from: EnvVarSource | None = None


class GcsEmbeddedStorage(RayModel):
    """The volume of the embedded (RocksDB) GCS store: an existing claim, or a claim the operator makes."""

    claim_name: str | None = Field(None, description="An existing PersistentVolumeClaim, used as it is.")
    size: Quantity | None = Field(None, description="Size of the claim the operator makes (1Gi when empty).")
    storage_class_name: str | None = Field(None, description="StorageClass of that claim; the default when empty.")
    access_modes: list[str] | None = Field(None, description="Access modes of that claim ([ReadWriteOnce] if empty).")
    sub_path: str | None = Field(None, description="Mount this subdirectory of the volume instead of its root.")
    deletion_policy: Literal[c.GCS_STORAGE_DELETION_POLICIES] | None = Field(  # type: ignore[valid-type]
        None, description="DeleteWithCluster (default) or Retain: what happens to the claim with the cluster."
    )


class GcsFaultToleranceOptions(RayModel):
    """GCS fault tolerance: state kept in an external Redis, or (v1.7) in an embedded RocksDB on a volume."""

    backend: (
        Annotated[
            Literal[c.GCS_FT_BACKENDS],  # type: ignore[valid-type]
            CEL("self == oldSelf", "gcsFaultToleranceOptions.backend is immutable"),
        ]
        | None
    ) = Field(None, description="redis (default) or rocksdb; immutable.")
    redis_address: str | None = Field(None, description="Address of the Redis that stores GCS state, host:port.")
    redis_username: RedisCredential | None = None
    redis_password: RedisCredential | None = None
    external_storage_namespace: str | None = Field(
        None, description="Key namespace in Redis; the RayCluster's UID when empty."
    )
    storage: GcsEmbeddedStorage | None = Field(None, description="The volume of the rocksdb backend.")


class HistoryServerCollectorOptions(RayModel):
    """The history-server collector sidecar the operator adds to every Ray Pod."""

    image: str | None = None
    image_pull_policy: str | None = None
    resources: ResourceRequirements | None = None
    env: list[EnvVar] | None = None


class HistoryServerOptions(RayModel):
    collector_options: HistoryServerCollectorOptions | None = None


class NetworkPolicyRules(RayModel):
    """Rules added to the base policy (which always admits the cluster's own Pods)."""

    ingress_rules: list[NetworkPolicyIngressRule] | None = None
    egress_rules: list[NetworkPolicyEgressRule] | None = None


class WorkerGroupNetworkPolicyRules(NetworkPolicyRules):
    """The rules of one worker group, replacing ``networkPolicy.worker`` for it."""

    group_name: str = Field(description="A workerGroupSpecs[].groupName.")


class NetworkPolicyConfig(RayModel):
    """NetworkPolicies for the head and the workers (the RayClusterNetworkPolicy gate)."""

    mode: Literal[c.NETWORK_POLICY_MODES] | None = Field(  # type: ignore[valid-type]
        c.NETWORK_POLICY_DENY_ALL, description="DenyAll, DenyAllIngress or DenyAllEgress."
    )
    head: NetworkPolicyRules | None = None
    worker: NetworkPolicyRules | None = None
    worker_groups: (
        Annotated[
            list[WorkerGroupNetworkPolicyRules],
            Schema(**{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ("groupName",)}),
        ]
        | None
    ) = None


class TLSOptions(RayModel):
    """mTLS between Ray processes, with certificates from cert-manager (the RayClusterMTLS gate)."""

    enabled: bool | None = None


class AuthOptions(RayModel):
    """Token authentication of Ray's dashboard and APIs (Ray 2.52 and later)."""

    mode: Literal["disabled", "token"] | None = None
    secret_name: str | None = Field(None, description="Secret holding the token; generated when empty.")
    enable_k8s_token_auth: bool | None = Field(None, alias="enableK8sTokenAuth")


class UpgradeStrategy(RayModel):
    type: Literal["Recreate", "None"] | None = Field(
        None, description="Recreate deletes every Pod when the Pod templates change; None leaves them."
    )


class RayClusterSpec(RayModel):
    """The desired state of a Ray cluster."""

    head_group_spec: HeadGroupSpec
    worker_group_specs: list[WorkerGroupSpec] | None = None
    ray_version: str | None = Field(None, description="Ray version in the images; selects probes and features.")
    enable_in_tree_autoscaling: bool | None = Field(None, description="Run the Ray autoscaler as a head sidecar.")
    autoscaler_options: AutoscalerOptions | None = None
    head_service_annotations: dict[str, str] | None = None
    gcs_fault_tolerance_options: Annotated[GcsFaultToleranceOptions | None, V1_ONLY] = None
    auth_options: Annotated[AuthOptions | None, V1_ONLY] = None
    suspend: bool | None = Field(None, description="Delete every Pod of the cluster until set back to false.")
    managed_by: Annotated[ManagedBy | None, V1_ONLY] = Field(
        None, description="The controller that reconciles this cluster; immutable."
    )
    upgrade_strategy: Annotated[UpgradeStrategy | None, V1_ONLY] = None
    history_server_options: Annotated[HistoryServerOptions | None, V1_ONLY] = None
    network_policy: Annotated[NetworkPolicyConfig | None, V1_ONLY] = None
    tls_options: Annotated[TLSOptions | None, V1_ONLY] = None


class HeadInfo(RayModel):
    pod_ip: str | None = Field(None, alias="podIP")
    service_ip: str | None = Field(None, alias="serviceIP")
    pod_name: Annotated[str | None, V1_ONLY] = None
    service_name: Annotated[str | None, V1_ONLY] = None


class RayClusterStatus(RayModel):
    """What the operator last observed; written only through the status subresource."""

    state: str | None = Field(None, description="ready, suspended or failed (deprecated in favour of conditions).")
    reason: str | None = None
    desired_cpu: Quantity | None = Field(None, alias="desiredCPU")
    desired_memory: Quantity | None = None
    desired_gpu: Quantity | None = Field(None, alias="desiredGPU")
    desired_tpu: Quantity | None = Field(None, alias="desiredTPU")
    min_worker_replicas: Int32 | None = None
    max_worker_replicas: Int32 | None = None
    desired_worker_replicas: Int32 | None = None
    available_worker_replicas: Int32 | None = None
    ready_worker_replicas: Int32 | None = None
    last_update_time: Annotated[Time, Schema(nullable=True)] | None = None  # +nullable in KubeRay
    state_transition_times: Annotated[dict[str, Time] | None, V1_ONLY] = None
    endpoints: dict[str, str] | None = None
    head: HeadInfo | None = None
    conditions: Annotated[ConditionList | None, V1_ONLY] = None
    observed_generation: Int64 | None = None

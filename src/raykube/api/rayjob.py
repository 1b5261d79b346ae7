"""RayJob (``ray.io/v1``): a Ray job and, usually, the RayCluster it runs on, as KubeRay v1.7.0 defines them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from raykube.api.raycluster import RayClusterSpec, RayClusterStatus
from raykube.api.schema import (
    CEL,
    V1_ONLY,
    CrdRequired,
    Int32,
    Int64,
    ManagedBy,
    PodTemplateSpec,
    RayModel,
    Schema,
    Time,
)

DeletionPolicyType = Literal["DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone"]


class DeletionPolicy(RayModel):
    policy: DeletionPolicyType | None = None


class DeletionCondition(RayModel):
    """When a deletion rule applies: a terminal job status or deployment status, plus a delay."""

    job_status: Literal["SUCCEEDED", "FAILED"] | None = None
    job_deployment_status: Literal["Failed"] | None = None
    ttl_seconds: Annotated[Int32, Schema(minimum=0)] = Field(0, description="Seconds after the job ends.")


DeletionConditionRules = Annotated[
    DeletionCondition,
    CEL(
        "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
        "JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition.",
    ),
    CEL(
        "has(self.jobStatus) || has(self.jobDeploymentStatus)",
        "the deletion condition requires either the JobStatus or the JobDeploymentStatus field.",
    ),
]


class DeletionRule(RayModel):
    policy: DeletionPolicyType
    condition: DeletionConditionRules


class DeletionStrategy(RayModel):
    """What to delete once the job ends: legacy onSuccess/onFailure, or a list of rules."""

    on_success: DeletionPolicy | None = None
    on_failure: DeletionPolicy | None = None
    deletion_rules: Annotated[list[DeletionRule], Schema(minItems=1, **{"x-kubernetes-list-type": "atomic"})] | None = (
        None
    )


DeletionStrategyRules = Annotated[
    DeletionStrategy,
    CEL(
        "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
        "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same "
        "deletionStrategy",
    ),
    CEL(
        "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
        "deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)",
    ),
]


class SubmitterConfig(RayModel):
    backoff_limit: Int32 | None = Field(None, description="Retries of the submitter Job (KubeRay uses 2 if unset).")


class RayJobSpec(RayModel):
    """The desired state of a Ray job."""

    active_deadline_seconds: Annotated[Int32 | None, V1_ONLY] = Field(
        None, description="Seconds the job may run before it fails."
    )
    backoff_limit: Annotated[Int32 | None, V1_ONLY] = Field(
        0, description="Times to retry the whole job on a new cluster."
    )
    ray_cluster_spec: RayClusterSpec | None = Field(None, description="The cluster to create for this job.")
    submitter_pod_template: PodTemplateSpec | None = None
    metadata: dict[str, str] | None = Field(None, description="Metadata attached to the Ray job.")
    cluster_selector: dict[str, str] | None = Field(
        None, description="Run on an existing RayCluster (label ray.io/cluster) instead of creating one."
    )
    submitter_config: Annotated[SubmitterConfig | None, V1_ONLY] = None
    managed_by: Annotated[ManagedBy | None, V1_ONLY] = None
    deletion_strategy: Annotated[DeletionStrategyRules | None, V1_ONLY] = None
    entrypoint: Annotated[str, CrdRequired(versions=("v1alpha1",))] | None = Field(
        None, description="The command that starts the job."
    )
    runtime_env_yaml: str | None = Field(None, alias="runtimeEnvYAML", description="Ray runtime environment (YAML).")
    job_id: str | None = Field(None, description="Submission ID of the job; generated when empty.")
    submission_mode: Annotated[str | None, V1_ONLY] = Field(
        "K8sJobMode", description="K8sJobMode, HTTPMode, InteractiveMode or SidecarMode."
    )
    entrypoint_resources: str | None = Field(None, description="Custom resources of the entrypoint, as JSON.")
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    ttl_seconds_after_finished: Int32 | None = Field(0, description="Seconds to keep the cluster after the job.")
    shutdown_after_job_finishes: bool | None = Field(None, description="Delete the cluster when the job ends.")
    suspend: bool | None = Field(None, description="Suspend the job (for queueing systems such as Kueue).")
    pre_running_deadline_seconds: Annotated[Annotated[Int32, Schema(minimum=1)] | None, V1_ONLY] = Field(
        None, description="Seconds the job may take to start running."
    )


class RayJobInfo(RayModel):
    start_time: Time | None = None
    end_time: Time | None = None


class RayJobStatus(RayModel):
    job_id: str | None = None
    ray_cluster_name: str | None = None
    dashboard_url: str | None = Field(None, alias="dashboardURL")
    job_status: str | None = None
    job_deployment_status: str | None = None
    reason: Annotated[str | None, V1_ONLY] = None
    message: str | None = None
    start_time: Time | None = None
    end_time: Time | None = None
    succeeded: Annotated[Int32 | None, V1_ONLY] = 0
    failed: Annotated[Int32 | None, V1_ONLY] = 0
    ray_cluster_status: RayClusterStatus | None = None
    ray_job_info: Annotated[RayJobInfo | None, V1_ONLY] = None
    observed_generation: Int64 | None = None
    job_status_check_failure_start_time: Annotated[Time | None, V1_ONLY] = Field(
        None, description="When the dashboard's job status checks began failing; cleared by a good check."
    )

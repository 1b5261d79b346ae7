"""Names, values and limits that raykube shares with KubeRay, Ray and Kubernetes.

A flat module of documented constants and nothing else. Each one names where its contract comes from, so that a
change upstream can be traced to the line that has to follow it. The KubeRay paths are under ``ray-operator/`` in
``github.com/ray-project/kuberay``.

It is one unit on purpose, however long: it is the one place to look up every name raykube shares with KubeRay or
Ray, and to check a new one against those already there, and each constant carries its own source, so splitting it
would only spread that lookup over several files. Sections headed ``# --- title (source) ---`` group the constants
by what they belong to; the source in a heading cites the constants under it that have no comment of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

# --- API group, version and kinds -------------------------------------------------------------------------------

# KubeRay apis/ray/v1/groupversion_info.go: the group and the storage version of every CRD.
API_GROUP: Final = "ray.io"
# KubeRay apis/ray/v1: the served and stored version.
API_VERSION: Final = "ray.io/v1"
# KubeRay v1.7.0 apis/ray/v1alpha1 (+kubebuilder:deprecatedversion): the warning the API server returns to every
# client of the frozen v1alpha1 version; {kind} is RayCluster, RayJob or RayService.
V1ALPHA1_DEPRECATION_WARNING: Final = (
    "ray.io/v1alpha1 {kind} is deprecated; use ray.io/v1 {kind}. v1alpha1 receives no new fields and will be "
    "unavailable in KubeRay 1.9."
)
# KubeRay apis/ray/v1/raycluster_types.go: kind of a RayCluster.
KIND_RAYCLUSTER: Final = "RayCluster"
# KubeRay apis/ray/v1/rayjob_types.go: kind of a RayJob.
KIND_RAYJOB: Final = "RayJob"
# KubeRay apis/ray/v1/rayservice_types.go: kind of a RayService.
KIND_RAYSERVICE: Final = "RayService"
# KubeRay apis/ray/v1/raycronjob_types.go: kind of a RayCronJob (alpha, behind the RayCronJob gate).
KIND_RAYCRONJOB: Final = "RayCronJob"

# --- Name limits (KubeRay controllers/ray/utils/constant.go) ----------------------------------------------------

# KubeRay utils/constant.go MaxRayClusterNameLength: 63 - len("-serve-svc").
MAX_RAYCLUSTER_NAME_LENGTH: Final = 53
# KubeRay utils/constant.go MaxRayJobNameLength: the RayCluster limit minus the "-<5 random>" suffix.
MAX_RAYJOB_NAME_LENGTH: Final = 47
# KubeRay utils/constant.go MaxRayServiceNameLength: the RayCluster limit minus the "-<5 random>" suffix.
MAX_RAYSERVICE_NAME_LENGTH: Final = 47
# KubeRay v1.7.0 utils/constant.go MaxRayCronJobNameLength: each RayJob is named "<cron>-<Unix minute>" (dash and up
# to 10 digits, raycronjob_controller.go getRayJobName), which must stay within MAX_RAYJOB_NAME_LENGTH.
MAX_RAYCRONJOB_NAME_LENGTH: Final = MAX_RAYJOB_NAME_LENGTH - 11

# Kubernetes apimachinery util/validation: the longest DNS-1035 label.
DNS1035_LABEL_MAX_LENGTH: Final = 63
# Kubernetes apimachinery util/validation: the longest DNS-1123 label.
DNS1123_LABEL_MAX_LENGTH: Final = 63
# Kubernetes apimachinery util/validation: the longest DNS-1123 subdomain (a label key prefix).
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
# Kubernetes apimachinery util/validation: the longest name part of a qualified name (a label key).
QUALIFIED_NAME_MAX_LENGTH: Final = 63
# Kubernetes apimachinery util/validation: the longest label value.
LABEL_VALUE_MAX_LENGTH: Final = 63
# Kubernetes apiserver generateName: the API server appends this many random characters.
GENERATE_NAME_SUFFIX_LENGTH: Final = 5

# --- Annotations (KubeRay utils/constant.go) --------------------------------------------------------------------

# KubeRay utils/constant.go RayFTEnabledAnnotationKey: deprecated way to turn on GCS fault tolerance.
RAY_FT_ENABLED_ANNOTATION: Final = "ray.io/ft-enabled"
# KubeRay utils/constant.go RayExternalStorageNSAnnotationKey: Redis namespace of GCS FT (deprecated form).
RAY_EXTERNAL_STORAGE_NS_ANNOTATION: Final = "ray.io/external-storage-namespace"
# KubeRay utils/constant.go RayServiceInitializingTimeoutAnnotation: "30m" or "1800" before a RayService fails.
RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION: Final = "ray.io/initializing-timeout"

# --- Labels (KubeRay utils/constant.go) -------------------------------------------------------------------------

# KubeRay utils/constant.go RayClusterLabelKey; also RayJobClusterSelectorKey, the clusterSelector key of a RayJob.
RAY_CLUSTER_LABEL: Final = "ray.io/cluster"
# KubeRay utils/constant.go RayOriginatedFromCRDLabelKey: kind of the CR that created a RayCluster.
RAY_ORIGINATED_FROM_CRD_LABEL: Final = "ray.io/originated-from-crd"

# --- managedBy (KubeRay apis/ray/v1 *_types.go, CEL on spec.managedBy) ------------------------------------------

# KubeRay apis/ray/v1 KubeRayController: the operator reconciles CRs without managedBy or with this value.
MANAGED_BY_KUBERAY: Final = "ray.io/kuberay-operator"
# KubeRay apis/ray/v1 MultiKueueController: the operator leaves these CRs to MultiKueue.
MANAGED_BY_MULTIKUEUE: Final = "kueue.x-k8s.io/multikueue"
# KubeRay apis/ray/v1 *_types.go CEL rule: the only values spec.managedBy may take.
MANAGED_BY_VALUES: Final = (MANAGED_BY_KUBERAY, MANAGED_BY_MULTIKUEUE)

# --- Environment variables --------------------------------------------------------------------------------------

# KubeRay utils/constant.go RAY_REDIS_ADDRESS; read by Ray's GCS as the external Redis address.
RAY_REDIS_ADDRESS: Final = "RAY_REDIS_ADDRESS"
# KubeRay utils/constant.go REDIS_PASSWORD; expanded by KubeRay into --redis-password.
REDIS_PASSWORD: Final = "REDIS_PASSWORD"  # noqa: S105 - a name, not a secret
# KubeRay utils/constant.go REDIS_USERNAME; expanded by KubeRay into --redis-username.
REDIS_USERNAME: Final = "REDIS_USERNAME"
# KubeRay utils/constant.go RAY_ENABLE_AUTOSCALER_V2; Ray autoscaler switch between v1 and v2.
RAY_ENABLE_AUTOSCALER_V2: Final = "RAY_enable_autoscaler_v2"
# KubeRay utils/constant.go RAY_ENABLE_AUTOSCALER_V2 check: the values that turn autoscaler v2 on.
RAY_ENABLE_AUTOSCALER_V2_TRUE_VALUES: Final = ("1", "true")
# KubeRay utils/constant.go KUBERAY_GEN_AUTOSCALER_START_CMD; KubeRay-managed env of the autoscaler sidecar.
KUBERAY_GEN_AUTOSCALER_START_CMD: Final = "KUBERAY_GEN_AUTOSCALER_START_CMD"
# KubeRay utils/constant.go RAY_GCS_STORAGE; Ray GCS storage backend (set to "rocksdb" by KubeRay).
RAY_GCS_STORAGE: Final = "RAY_gcs_storage"
# KubeRay utils/constant.go RAY_GCS_STORAGE_PATH; Ray GCS RocksDB directory.
RAY_GCS_STORAGE_PATH: Final = "RAY_gcs_storage_path"
# KubeRay utils/constant.go RAY_USE_TLS; Ray gRPC TLS switch, managed by KubeRay with tlsOptions.
RAY_USE_TLS: Final = "RAY_USE_TLS"
# KubeRay utils/constant.go RAY_TLS_SERVER_CERT; Ray TLS certificate path, managed by KubeRay with tlsOptions.
RAY_TLS_SERVER_CERT: Final = "RAY_TLS_SERVER_CERT"
# KubeRay utils/constant.go RAY_TLS_SERVER_KEY; Ray TLS key path, managed by KubeRay with tlsOptions.
RAY_TLS_SERVER_KEY: Final = "RAY_TLS_SERVER_KEY"
# KubeRay utils/constant.go RAY_TLS_CA_CERT; Ray TLS CA path, managed by KubeRay with tlsOptions.
RAY_TLS_CA_CERT: Final = "RAY_TLS_CA_CERT"
# KubeRay utils/validation.go validateTLSOptions: the env vars a user may not set when TLS is on.
RAY_TLS_ENV_VARS: Final = (RAY_USE_TLS, RAY_TLS_SERVER_CERT, RAY_TLS_SERVER_KEY, RAY_TLS_CA_CERT)

# --- Pod template conventions -----------------------------------------------------------------------------------

# KubeRay utils/constant.go RayContainerIndex: the Ray container is always containers[0].
RAY_CONTAINER_INDEX: Final = 0
# KubeRay utils/constant.go GCSStorageVolumeName: head volume of the embedded (RocksDB) GCS store.
GCS_STORAGE_VOLUME_NAME: Final = "gcs-storage"
# KubeRay utils/constant.go GCSStorageMountPath: where the RocksDB GCS store is mounted on the head.
GCS_STORAGE_MOUNT_PATH: Final = "/data/gcs"
# KubeRay utils/constant.go GCSStorageRocksDBValue: the RAY_gcs_storage value that selects the embedded store.
GCS_STORAGE_ROCKSDB_VALUE: Final = "rocksdb"
# KubeRay utils/constant.go GCSStoragePVCSuffix: the operator-managed claim is <cluster>-gcs-pvc.
GCS_STORAGE_PVC_SUFFIX: Final = "-gcs-pvc"
# KubeRay utils/constant.go GCSStorageDefaultSize: the size of that claim when storage.size is not set.
GCS_STORAGE_DEFAULT_SIZE: Final = "1Gi"
# KubeRay common/gcs_ft.go BuildGCSStoragePVC: the access modes of that claim when storage.accessModes is empty.
GCS_STORAGE_DEFAULT_ACCESS_MODES: Final = ("ReadWriteOnce",)
# KubeRay utils/constant.go RayTLSVolumeName: the TLS secret volume KubeRay adds with tlsOptions.
RAY_TLS_VOLUME_NAME: Final = "ray-tls"
# KubeRay utils/constant.go RayTLSCertMountPath: where the TLS secret volume is mounted.
RAY_TLS_CERT_MOUNT_PATH: Final = "/etc/ray/tls"
# KubeRay utils/constant.go CollectorContainerName: the history-server collector sidecar.
COLLECTOR_CONTAINER_NAME: Final = "ray-history-collector"
# KubeRay v1.7.0 common/pod.go BuildCollectorContainer: the collector's defaults (pull policy, resources) and the
# port it takes Ray events on; head collectors reach the dashboard at RAY_DASHBOARD_ADDRESS unless the user sets it.
COLLECTOR_DEFAULT_PULL_POLICY: Final = "IfNotPresent"
COLLECTOR_DEFAULT_LIMITS: Final[Mapping[str, str]] = MappingProxyType({"cpu": "200m", "memory": "256Mi"})
COLLECTOR_DEFAULT_REQUESTS: Final[Mapping[str, str]] = MappingProxyType({"cpu": "50m", "memory": "64Mi"})
COLLECTOR_EVENTS_PORT: Final = "8084"
COLLECTOR_HEAD_DASHBOARD_ADDRESS: Final = "http://localhost:8265"
COLLECTOR_ROLE_HEAD: Final = "Head"
COLLECTOR_ROLE_WORKER: Final = "Worker"
# KubeRay v1.7.0 utils/constant.go: the collector's env names (the ones KubeRay manages, and the storage settings
# validateCollectorOptions checks).
POD_IP_ENV: Final = "POD_IP"
RAY_ROLE_ENV: Final = "RAY_ROLE"
OWNER_KIND_ENV: Final = "OWNER_KIND"
OWNER_NAME_ENV: Final = "OWNER_NAME"
EVENTS_PORT_ENV: Final = "EVENTS_PORT"
STORAGE_BACKEND_ENV: Final = "STORAGE_BACKEND"
GCS_BUCKET_ENV: Final = "GCS_BUCKET"
S3_REGION_ENV: Final = "S3_REGION"
AZURE_STORAGE_CONNECTION_STRING_ENV: Final = "AZURE_STORAGE_CONNECTION_STRING"
AZURE_STORAGE_ACCOUNT_URL_ENV: Final = "AZURE_STORAGE_ACCOUNT_URL"
AZURE_STORAGE_AUTH_MODE_ENV: Final = "AZURE_STORAGE_AUTH_MODE"
ALIYUN_OSS_ENVS: Final = ("OSS_BUCKET", "OSS_ENDPOINT", "OSS_REGION")  # KubeRay ALIYUN_BUCKET/_ENDPOINT/_REGION
# KubeRay v1.7.0 utils/validation.go validateCollectorOptions: the collector env a user may not set, in its order.
COLLECTOR_MANAGED_ENVS: Final = (
    POD_IP_ENV,
    "FQ_RAY_IP",
    "RAY_CLUSTER_NAME",
    "RAY_CLUSTER_NAMESPACE",
    RAY_ROLE_ENV,
    OWNER_KIND_ENV,
    OWNER_NAME_ENV,
    EVENTS_PORT_ENV,
)
# KubeRay v1.7.0 common/pod.go setContainerEnvVars: what a Ray container with a collector beside it gets (each if
# absent), so Ray exports its events to the collector.
DEFAULT_RAY_EXPOSABLE_EVENT_TYPES: Final = (
    "TASK_DEFINITION_EVENT,TASK_LIFECYCLE_EVENT,ACTOR_TASK_DEFINITION_EVENT,TASK_PROFILE_EVENT,"
    "DRIVER_JOB_DEFINITION_EVENT,DRIVER_JOB_LIFECYCLE_EVENT,ACTOR_DEFINITION_EVENT,ACTOR_LIFECYCLE_EVENT,"
    "NODE_DEFINITION_EVENT,NODE_LIFECYCLE_EVENT"
)
RAY_EVENT_ENVS: Final = (
    ("RAY_enable_ray_event", "true"),
    ("RAY_enable_core_worker_ray_event_to_aggregator", "true"),
    ("RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR", "http://localhost:8084/v1/events"),
    ("RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES", DEFAULT_RAY_EXPOSABLE_EVENT_TYPES),
    ("RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES", DEFAULT_RAY_EXPOSABLE_EVENT_TYPES),
)
# Kubernetes core/v1 PodSpec.restartPolicy: the only value autoscaler v2 and SidecarMode allow besides unset.
RESTART_POLICY_NEVER: Final = "Never"

# --- rayStartParams keys (Ray `ray start` flags, as KubeRay reads them) -----------------------------------------

# Ray `ray start`: the flags that declare a node's resources; exclusive with a group's `resources` in KubeRay.
RAY_START_RESOURCE_PARAMS: Final = ("num-cpus", "num-gpus", "memory", "resources")
# Ray `ray start --labels`; KubeRay rejects it in rayStartParams in favour of a group's `labels`.
RAY_START_LABELS_PARAM: Final = "labels"
# Ray `ray start --redis-password`; not allowed with gcsFaultToleranceOptions in KubeRay.
RAY_START_REDIS_PASSWORD_PARAM: Final = "redis-password"  # noqa: S105 - a name, not a secret
# Ray `ray start --redis-username`; KubeRay allows it only through gcsFaultToleranceOptions.redisUsername.
RAY_START_REDIS_USERNAME_PARAM: Final = "redis-username"

# --- Ray versions that gate KubeRay features (KubeRay utils/validation.go) --------------------------------------

# KubeRay utils/validation.go: authOptions.mode "token" needs this Ray version or later.
MIN_RAY_VERSION_TOKEN_AUTH: Final = "2.52.0"  # noqa: S105 - a version, not a secret
# KubeRay utils/validation.go: authOptions.enableK8sTokenAuth needs this Ray version or later.
MIN_RAY_VERSION_K8S_TOKEN_AUTH: Final = "2.55.0"  # noqa: S105 - a version, not a secret
# KubeRay utils/validation.go: workerGroupSpecs[].priority needs this Ray version or later.
MIN_RAY_VERSION_WORKER_GROUP_PRIORITY: Final = "2.56.0"

# --- Enumerations of the ray.io/v1 API (KubeRay apis/ray/v1 *_types.go) -----------------------------------------

# KubeRay apis/ray/v1 raycluster_types.go AuthMode enum.
AUTH_MODE_DISABLED: Final = "disabled"
# KubeRay apis/ray/v1 raycluster_types.go AuthMode enum.
AUTH_MODE_TOKEN: Final = "token"  # noqa: S105 - an enum value, not a secret
# KubeRay apis/ray/v1 raycluster_types.go AuthMode: the CRD enum.
AUTH_MODES: Final = (AUTH_MODE_DISABLED, AUTH_MODE_TOKEN)
# KubeRay apis/ray/v1 raycluster_types.go AutoscalerVersion enum.
AUTOSCALER_VERSION_V1: Final = "v1"
# KubeRay apis/ray/v1 raycluster_types.go AutoscalerVersion enum.
AUTOSCALER_VERSION_V2: Final = "v2"
# KubeRay apis/ray/v1 raycluster_types.go AutoscalerVersion: the CRD enum.
AUTOSCALER_VERSIONS: Final = (AUTOSCALER_VERSION_V1, AUTOSCALER_VERSION_V2)
# KubeRay apis/ray/v1 raycluster_types.go UpscalingMode: the CRD enum (read by the Ray autoscaler).
UPSCALING_MODES: Final = ("Default", "Aggressive", "Conservative")
# KubeRay apis/ray/v1 raycluster_types.go RayClusterUpgradeType enum.
RAYCLUSTER_UPGRADE_RECREATE: Final = "Recreate"
# KubeRay apis/ray/v1 raycluster_types.go RayClusterUpgradeType enum.
RAYCLUSTER_UPGRADE_NONE: Final = "None"
# KubeRay apis/ray/v1 raycluster_types.go RayClusterUpgradeType: the CRD enum.
RAYCLUSTER_UPGRADE_TYPES: Final = (RAYCLUSTER_UPGRADE_RECREATE, RAYCLUSTER_UPGRADE_NONE)
# KubeRay apis/ray/v1 raycluster_types.go GcsFaultToleranceBackend enum (default when unset).
GCS_FT_BACKEND_REDIS: Final = "redis"
# KubeRay apis/ray/v1 raycluster_types.go GcsFaultToleranceBackend enum.
GCS_FT_BACKEND_ROCKSDB: Final = "rocksdb"
# KubeRay apis/ray/v1 raycluster_types.go GcsFaultToleranceBackend: the CRD enum.
GCS_FT_BACKENDS: Final = (GCS_FT_BACKEND_REDIS, GCS_FT_BACKEND_ROCKSDB)
# KubeRay apis/ray/v1 raycluster_types.go GCSStorageDeletionPolicy: the CRD enum.
GCS_STORAGE_DELETION_POLICIES: Final = ("DeleteWithCluster", "Retain")
# KubeRay apis/ray/v1 raycluster_types.go RetainGCSStorageDeletionPolicy: the claim outlives the cluster (no owner).
GCS_STORAGE_RETAIN: Final = "Retain"
# KubeRay apis/ray/v1 raycluster_types.go NetworkPolicyMode enum (the CRD default).
NETWORK_POLICY_DENY_ALL: Final = "DenyAll"
# KubeRay apis/ray/v1 raycluster_types.go NetworkPolicyMode enum.
NETWORK_POLICY_DENY_ALL_INGRESS: Final = "DenyAllIngress"
# KubeRay apis/ray/v1 raycluster_types.go NetworkPolicyMode enum.
NETWORK_POLICY_DENY_ALL_EGRESS: Final = "DenyAllEgress"
# KubeRay apis/ray/v1 raycluster_types.go NetworkPolicyMode: the CRD enum.
NETWORK_POLICY_MODES: Final = (NETWORK_POLICY_DENY_ALL, NETWORK_POLICY_DENY_ALL_INGRESS, NETWORK_POLICY_DENY_ALL_EGRESS)
# KubeRay v1.7.0 apis/ray/v1 raycluster_types.go: the RayClusterSpec fields v1.7.0 added (a KubeRay v1.6 operator
# neither knows nor needs them in its CRD).
RAYCLUSTER_SPEC_FIELDS_SINCE_V170: Final = ("historyServerOptions", "networkPolicy", "tlsOptions")
# KubeRay apis/ray/v1 raycluster_types.go IngressPathType: the CRD enum.
INGRESS_PATH_TYPES: Final = ("Exact", "Prefix", "ImplementationSpecific")

# KubeRay apis/ray/v1 rayjob_types.go JobSubmissionMode (the CRD default).
SUBMISSION_MODE_K8S_JOB: Final = "K8sJobMode"
# KubeRay apis/ray/v1 rayjob_types.go JobSubmissionMode.
SUBMISSION_MODE_HTTP: Final = "HTTPMode"
# KubeRay apis/ray/v1 rayjob_types.go JobSubmissionMode.
SUBMISSION_MODE_INTERACTIVE: Final = "InteractiveMode"
# KubeRay apis/ray/v1 rayjob_types.go JobSubmissionMode.
SUBMISSION_MODE_SIDECAR: Final = "SidecarMode"
# KubeRay apis/ray/v1 rayjob_types.go JobSubmissionMode: every mode the controller implements.
SUBMISSION_MODES: Final = (
    SUBMISSION_MODE_K8S_JOB,
    SUBMISSION_MODE_HTTP,
    SUBMISSION_MODE_INTERACTIVE,
    SUBMISSION_MODE_SIDECAR,
)
# KubeRay apis/ray/v1 rayjob_types.go DeletionPolicyType.
DELETE_CLUSTER: Final = "DeleteCluster"
# KubeRay apis/ray/v1 rayjob_types.go DeletionPolicyType.
DELETE_WORKERS: Final = "DeleteWorkers"
# KubeRay apis/ray/v1 rayjob_types.go DeletionPolicyType.
DELETE_SELF: Final = "DeleteSelf"
# KubeRay apis/ray/v1 rayjob_types.go DeletionPolicyType.
DELETE_NONE: Final = "DeleteNone"
# KubeRay apis/ray/v1 rayjob_types.go DeletionPolicyType: the CRD enum.
DELETION_POLICIES: Final = (DELETE_CLUSTER, DELETE_WORKERS, DELETE_SELF, DELETE_NONE)
# KubeRay utils/validation.go validateTTLConsistency: TTLs must not decrease along this order.
DELETION_TTL_ORDER: Final = (DELETE_WORKERS, DELETE_CLUSTER, DELETE_SELF)
# KubeRay apis/ray/v1 rayjob_types.go DeletionCondition.jobStatus: the CRD enum.
DELETION_CONDITION_JOB_STATUSES: Final = ("SUCCEEDED", "FAILED")
# KubeRay apis/ray/v1 rayjob_types.go DeletionCondition.jobDeploymentStatus: the CRD enum.
DELETION_CONDITION_JOB_DEPLOYMENT_STATUSES: Final = ("Failed",)
# KubeRay apis/ray/v1 rayjob_types.go JobDeploymentStatusWaiting: only valid in InteractiveMode.
JOB_DEPLOYMENT_STATUS_WAITING: Final = "Waiting"
# KubeRay apis/ray/v1 rayjob_types.go JobDeploymentStatus: the other values of status.jobDeploymentStatus.
JOB_DEPLOYMENT_STATUS_NEW: Final = ""
JOB_DEPLOYMENT_STATUS_INITIALIZING: Final = "Initializing"
JOB_DEPLOYMENT_STATUS_RUNNING: Final = "Running"
JOB_DEPLOYMENT_STATUS_COMPLETE: Final = "Complete"
JOB_DEPLOYMENT_STATUS_FAILED: Final = "Failed"
JOB_DEPLOYMENT_STATUS_VALIDATION_FAILED: Final = "ValidationFailed"
JOB_DEPLOYMENT_STATUS_SUSPENDING: Final = "Suspending"
JOB_DEPLOYMENT_STATUS_SUSPENDED: Final = "Suspended"
JOB_DEPLOYMENT_STATUS_RETRYING: Final = "Retrying"
# KubeRay apis/ray/v1 rayjob_types.go JobFailedReason: the values of status.reason.
JOB_REASON_SUBMISSION_FAILED: Final = "SubmissionFailed"
JOB_REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
JOB_REASON_PRE_RUNNING_DEADLINE_EXCEEDED: Final = "PreRunningDeadlineExceeded"
JOB_REASON_APP_FAILED: Final = "AppFailed"
JOB_REASON_GRACE_PERIOD_EXCEEDED: Final = "JobDeploymentStatusTransitionGracePeriodExceeded"
JOB_REASON_VALIDATION_FAILED: Final = "ValidationFailed"
# KubeRay v1.7.0 rayjob_types.go: the dashboard's job status checks kept failing for longer than the timeout below.
JOB_REASON_STATUS_CHECK_TIMEOUT_EXCEEDED: Final = "JobStatusCheckTimeoutExceeded"

# KubeRay apis/ray/v1 rayservice_types.go RayServiceUpgradeType.
RAYSERVICE_UPGRADE_NEW_CLUSTER: Final = "NewCluster"
# KubeRay apis/ray/v1 rayservice_types.go RayServiceUpgradeType.
RAYSERVICE_UPGRADE_INCREMENTAL: Final = "NewClusterWithIncrementalUpgrade"
# KubeRay apis/ray/v1 rayservice_types.go RayServiceUpgradeType.
RAYSERVICE_UPGRADE_NONE: Final = "None"

# KubeRay apis/ray/v1 raycluster_types.go RayClusterSuspending condition type.
CONDITION_RAYCLUSTER_SUSPENDING: Final = "RayClusterSuspending"
# KubeRay apis/ray/v1 raycluster_types.go RayClusterSuspended condition type.
CONDITION_RAYCLUSTER_SUSPENDED: Final = "RayClusterSuspended"

# --- CRD defaults the API server fills in (KubeRay apis/ray/v1 *_types.go kubebuilder:default) ------------------

# KubeRay apis/ray/v1 raycluster_types.go WorkerGroupSpec.MinReplicas default.
DEFAULT_MIN_REPLICAS: Final = 0
# KubeRay apis/ray/v1 raycluster_types.go WorkerGroupSpec.MaxReplicas default (max int32).
DEFAULT_MAX_REPLICAS: Final = 2147483647
# KubeRay apis/ray/v1 rayservice_types.go ClusterUpgradeOptions.MaxSurgePercent default.
DEFAULT_MAX_SURGE_PERCENT: Final = 100

# --- Feature gates (KubeRay ray-operator/pkg/features/features.go) ----------------------------------------------

# KubeRay v1.7.0 pkg/features: status conditions on RayCluster (beta, on).
GATE_RAYCLUSTER_STATUS_CONDITIONS: Final = "RayClusterStatusConditions"
# KubeRay v1.7.0 pkg/features: RayJob deletionStrategy and worker-group suspend (beta, on).
GATE_RAYJOB_DELETION_POLICY: Final = "RayJobDeletionPolicy"
# KubeRay v1.7.0 pkg/features: replica-index labels on worker Pods (beta, on).
GATE_RAY_MULTI_HOST_INDEXING: Final = "RayMultiHostIndexing"
# KubeRay v1.7.0 pkg/features: RayService NewClusterWithIncrementalUpgrade (beta and on since v1.7.0; alpha, off, in
# v1.6.1).
GATE_RAYSERVICE_INCREMENTAL_UPGRADE: Final = "RayServiceIncrementalUpgrade"
# KubeRay v1.7.0 pkg/features: the RayCronJob controller (alpha, off).
GATE_RAY_CRON_JOB: Final = "RayCronJob"
# KubeRay v1.7.0 pkg/features, new in v1.7.0, all alpha and off: the SidecarMode submitter restarted in place, the
# RayCluster's NetworkPolicies, the rocksdb GCS backend, mTLS through cert-manager, the history-server collector, and
# Kubernetes workload-aware scheduling. (v1.7.0 removed v1.6.1's AsyncJobInfoQuery: naming it, even =false, stops
# the operator with "unrecognized feature gate", in KubeRay and in raykube.)
GATE_SIDECAR_SUBMITTER_RESTART: Final = "SidecarSubmitterRestart"
GATE_RAYCLUSTER_NETWORK_POLICY: Final = "RayClusterNetworkPolicy"
GATE_GCS_FT_EMBEDDED_STORAGE: Final = "GCSFaultToleranceEmbeddedStorage"
GATE_RAYCLUSTER_MTLS: Final = "RayClusterMTLS"
GATE_RAYCLUSTER_HISTORY_SERVER: Final = "RayClusterHistoryServer"
GATE_KUBERNETES_WAS: Final = "KubernetesWAS"

# KubeRay v1.7.0 main.go: with SidecarSubmitterRestart on, the API server must be at least this version (the
# per-container restartPolicy the submitter gets is beta, on by default, from Kubernetes 1.35), else the operator exits.
MIN_K8S_VERSION_SIDECAR_SUBMITTER_RESTART: Final = (1, 35, 0)

# raykube's own list: the v1.7.0 gates whose features raykube does not build yet. Turning one on is refused at
# start-up (raykube.api.config), as an unimplemented batch scheduler is, rather than accepting the fields and silently
# making none of their objects. Empty since every v1.7.0 gate is built; kept for the next release's gates.
UNIMPLEMENTED_FEATURE_GATES: Final[tuple[str, ...]] = ()

# KubeRay v1.7.0 pkg/features/features.go defaultFeatureGates: its eleven gates and their defaults, in its order.
FEATURE_GATE_DEFAULTS: Final[Mapping[str, bool]] = MappingProxyType(
    {
        GATE_RAYCLUSTER_STATUS_CONDITIONS: True,
        GATE_RAYJOB_DELETION_POLICY: True,
        GATE_RAY_MULTI_HOST_INDEXING: True,
        GATE_RAYSERVICE_INCREMENTAL_UPGRADE: True,
        GATE_RAY_CRON_JOB: False,
        GATE_SIDECAR_SUBMITTER_RESTART: False,
        GATE_RAYCLUSTER_NETWORK_POLICY: False,
        GATE_GCS_FT_EMBEDDED_STORAGE: False,
        GATE_RAYCLUSTER_MTLS: False,
        GATE_RAYCLUSTER_HISTORY_SERVER: False,
        GATE_KUBERNETES_WAS: False,
    }
)

# --- Versions raykube reports as KubeRay ------------------------------------------------------------------------

# KubeRay utils/constant.go KUBERAY_VERSION: stamped into the ray.io/kuberay-version annotation (head Pods, a
# RayService's RayClusters) and into RAY_USAGE_STATS_EXTRA_TAGS. raykube reproduces KubeRay v1.7.0's generated
# objects, so it reports that release; a RayService's active cluster stamped with another version is updated in
# place once (shouldUpdateCluster), as KubeRay v1.7.0 does after an upgrade.
KUBERAY_VERSION: Final = "v1.7.0"

# --- Labels on generated objects (KubeRay utils/constant.go, common/pod.go labelPod) ----------------------------

# KubeRay utils/constant.go RayNodeLabelKey: "yes" on every Ray Pod.
RAY_IS_RAY_NODE_LABEL: Final = "ray.io/is-ray-node"
# KubeRay utils/constant.go RayNodeTypeLabelKey: head, worker or redis-cleanup.
RAY_NODE_TYPE_LABEL: Final = "ray.io/node-type"
# KubeRay utils/constant.go RayNodeGroupLabelKey: headgroup or the worker group's name.
RAY_NODE_GROUP_LABEL: Final = "ray.io/group"
# KubeRay utils/constant.go RayIDLabelKey: CheckLabel("<cluster>-head") or CheckLabel("<cluster>-worker").
RAY_ID_LABEL: Final = "ray.io/identifier"
# KubeRay utils/constant.go KubernetesApplicationNameLabelKey; value ApplicationName.
K8S_APP_NAME_LABEL: Final = "app.kubernetes.io/name"
# KubeRay utils/constant.go KubernetesCreatedByLabelKey; value ComponentName.
K8S_CREATED_BY_LABEL: Final = "app.kubernetes.io/created-by"
# KubeRay utils/constant.go ApplicationName: value of app.kubernetes.io/name.
APPLICATION_NAME: Final = "kuberay"
# KubeRay utils/constant.go ComponentName: value of app.kubernetes.io/created-by (also the Job cache filter).
COMPONENT_NAME: Final = "kuberay-operator"
# KubeRay utils/constant.go RayServeLabelKey: Pods that may receive Serve traffic ("true"/"false").
RAY_SERVE_LABEL: Final = "ray.io/serve"
# KubeRay utils/constant.go RayWorkerReplicaIndexKey (gate RayMultiHostIndexing): lowest free index in the group.
RAY_WORKER_REPLICA_INDEX_LABEL: Final = "ray.io/worker-group-replica-index"
# KubeRay utils/constant.go RayWorkerReplicaNameKey: "<group>-<rand5>" shared by the hosts of one replica.
RAY_WORKER_REPLICA_NAME_LABEL: Final = "ray.io/worker-group-replica-name"
# KubeRay utils/constant.go RayHostIndexKey: 0..numOfHosts-1 within a multi-host replica.
RAY_HOST_INDEX_LABEL: Final = "ray.io/replica-host-index"
# KubeRay utils/constant.go RayOriginatedFromCRNameLabelKey: name of the CR that created an object.
RAY_ORIGINATED_FROM_CR_NAME_LABEL: Final = "ray.io/originated-from-cr-name"
# KubeRay utils/constant.go RayJobSubmissionModeLabelKey: on RayClusters a RayJob creates.
RAY_JOB_SUBMISSION_MODE_LABEL: Final = "ray.io/job-submission-mode"
# KubeRay utils/constant.go HeadlessServiceLabelKey: on the multi-host headless worker Service.
RAY_HEADLESS_WORKER_SVC_LABEL: Final = "ray.io/headless-worker-svc"
# KubeRay utils/constant.go: ray.io/node-type values.
NODE_TYPE_HEAD: Final = "head"
NODE_TYPE_WORKER: Final = "worker"
NODE_TYPE_REDIS_CLEANUP: Final = "redis-cleanup"
# KubeRay utils/constant.go RayNodeHeadGroupLabelValue: ray.io/group of the head.
HEAD_GROUP_NAME: Final = "headgroup"
# KubeRay internal/managercache: the operator only caches Pods with these node types.
CACHED_POD_NODE_TYPES: Final = (NODE_TYPE_HEAD, NODE_TYPE_WORKER, NODE_TYPE_REDIS_CLEANUP)

# --- Annotations on generated objects (KubeRay utils/constant.go) -----------------------------------------------

# KubeRay utils/constant.go UpgradeStrategyRecreateHashKey: hash of the spec without replicas, on the head Pod.
RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION: Final = "ray.io/upgrade-strategy-recreate-hash"
# KubeRay utils/constant.go KubeRayVersion: the operator version that built the head Pod.
RAY_KUBERAY_VERSION_ANNOTATION: Final = "ray.io/kuberay-version"
# KubeRay utils/constant.go RayOverwriteContainerCmdAnnotationKey: keep the user's container command.
RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION: Final = "ray.io/overwrite-container-cmd"
# KubeRay utils/constant.go EnableServeServiceKey: create <cluster>-serve-svc for a bare RayCluster.
RAY_ENABLE_SERVE_SERVICE_ANNOTATION: Final = "ray.io/enable-serve-service"
# KubeRay utils/constant.go GCSFaultToleranceDeletionTimeoutKey: seconds before the Redis finalizer is forced off.
RAY_GCS_FT_DELETION_TIMEOUT_ANNOTATION: Final = "ray.io/gcs-ft-deletion-timeout"
# KubeRay utils/constant.go DisableProvisionedHeadRestartAnnotationKey (set by RayJob SidecarMode).
RAY_DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION: Final = "ray.io/disable-provisioned-head-restart"
# KubeRay utils/constant.go: set on RayService clusters.
RAY_HASH_WITHOUT_REPLICAS_ANNOTATION: Final = "ray.io/hash-without-replicas-and-workers-to-delete"
RAY_NUM_WORKER_GROUPS_ANNOTATION: Final = "ray.io/num-worker-groups"
# KubeRay utils/constant.go GCSFaultToleranceRedisCleanupFinalizer.
GCS_FT_REDIS_CLEANUP_FINALIZER: Final = "ray.io/gcs-ft-redis-cleanup-finalizer"

# --- Ports and rayStartParams defaults (KubeRay utils/constant.go) ----------------------------------------------

# KubeRay utils/constant.go DefaultGcsServerPort / GcsServerPortName.
DEFAULT_GCS_SERVER_PORT: Final = 6379
GCS_SERVER_PORT_NAME: Final = "gcs-server"
# KubeRay utils/constant.go DefaultDashboardPort / DashboardPortName.
DEFAULT_DASHBOARD_PORT: Final = 8265
DASHBOARD_PORT_NAME: Final = "dashboard"
# KubeRay utils/constant.go DefaultClientPort / ClientPortName (Ray client server).
DEFAULT_CLIENT_PORT: Final = 10001
CLIENT_PORT_NAME: Final = "client"
# KubeRay utils/constant.go DefaultMetricsPort / MetricsPortName; also --metrics-export-port.
DEFAULT_METRICS_PORT: Final = 8080
METRICS_PORT_NAME: Final = "metrics"
# KubeRay utils/constant.go DefaultServingPort / ServingPortName (Ray Serve proxy).
DEFAULT_SERVING_PORT: Final = 8000
SERVING_PORT_NAME: Final = "serve"
# KubeRay utils/constant.go DefaultDashboardAgentListenPort: --dashboard-agent-listen-port, probe target.
DEFAULT_DASHBOARD_AGENT_LISTEN_PORT: Final = 52365
# KubeRay utils/constant.go: the head Service's ports when the head container declares none.
DEFAULT_HEAD_SERVICE_PORTS: Final[Mapping[str, int]] = MappingProxyType(
    {
        CLIENT_PORT_NAME: DEFAULT_CLIENT_PORT,
        GCS_SERVER_PORT_NAME: DEFAULT_GCS_SERVER_PORT,
        DASHBOARD_PORT_NAME: DEFAULT_DASHBOARD_PORT,
        METRICS_PORT_NAME: DEFAULT_METRICS_PORT,
        SERVING_PORT_NAME: DEFAULT_SERVING_PORT,
    }
)
# KubeRay common/service.go: every head Service port carries this appProtocol.
HEAD_SERVICE_APP_PROTOCOL: Final = "tcp"
# KubeRay utils/constant.go DefaultDomainName; overridden by the operator env CLUSTER_DOMAIN.
DEFAULT_CLUSTER_DOMAIN: Final = "cluster.local"

# --- Environment variables set on Ray containers (KubeRay utils/constant.go, common/pod.go) ---------------------

RAY_CLUSTER_NAME_ENV: Final = "RAY_CLUSTER_NAME"
RAY_CLUSTER_NAMESPACE_ENV: Final = "RAY_CLUSTER_NAMESPACE"
RAY_CLOUD_INSTANCE_ID_ENV: Final = "RAY_CLOUD_INSTANCE_ID"
RAY_NODE_TYPE_NAME_ENV: Final = "RAY_NODE_TYPE_NAME"
KUBERAY_GEN_RAY_START_CMD_ENV: Final = "KUBERAY_GEN_RAY_START_CMD"
RAY_PORT_ENV: Final = "RAY_PORT"
RAY_ADDRESS_ENV: Final = "RAY_ADDRESS"
FQ_RAY_IP_ENV: Final = "FQ_RAY_IP"
RAY_IP_ENV: Final = "RAY_IP"  # deprecated in KubeRay, still set
RAY_USAGE_STATS_KUBERAY_IN_USE_ENV: Final = "RAY_USAGE_STATS_KUBERAY_IN_USE"
RAY_USAGE_STATS_EXTRA_TAGS_ENV: Final = "RAY_USAGE_STATS_EXTRA_TAGS"
RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE_ENV: Final = "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"
RAY_HEAD_POD_NAME_ENV: Final = "RAY_HEAD_POD_NAME"
KUBERAY_CRD_VER_ENV: Final = "KUBERAY_CRD_VER"
RAY_EXTERNAL_STORAGE_NAMESPACE_ENV: Final = "RAY_external_storage_namespace"
RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_ENV: Final = "RAY_gcs_rpc_server_reconnect_timeout_s"
RAY_AUTH_MODE_ENV: Final = "RAY_AUTH_MODE"
# Ray's dashboard (ray/dashboard/consts.py, Ray 2.52): how long the head's dashboard waits for each of its module
# subprocesses (default 30 s); a dashboard that misses it exits, and the head's probes fail until it is restarted.
RAY_DASHBOARD_MODULE_READY_TIMEOUT_ENV: Final = "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT"
RAY_AUTH_TOKEN_ENV: Final = "RAY_AUTH_TOKEN"  # noqa: S105 - a name, not a secret
RAY_START_ULIMIT_ENV: Final = "RAY_START_ULIMIT_OPEN_FILES"
# KubeRay common/pod.go: prefix of every generated container command (args[0]).
ULIMIT_PREFIX: Final = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; "
# KubeRay common/pod.go: the generated container command (["/bin/bash", "-lc", "--"] with ENABLE_LOGIN_SHELL).
RAY_CONTAINER_COMMAND: Final = ("/bin/bash", "-c", "--")

# --- Init container, sidecars, volumes (KubeRay utils/constant.go, common/pod.go) -------------------------------

# KubeRay common/pod.go: the init container injected into worker Pods.
WAIT_GCS_READY_INIT_CONTAINER: Final = "wait-gcs-ready"
# KubeRay utils/constant.go AutoscalerContainerName.
AUTOSCALER_CONTAINER_NAME: Final = "autoscaler"
# KubeRay utils/constant.go SharedMemoryVolumeName / SharedMemoryVolumeMountPath.
SHARED_MEMORY_VOLUME_NAME: Final = "shared-mem"
SHARED_MEMORY_MOUNT_PATH: Final = "/dev/shm"  # noqa: S108 - a path inside the Pod
# Ray ray/_private/ray_constants.py DEFAULT_OBJECT_STORE_MEMORY_PROPORTION (2.x): without object-store-memory the
# object store takes this share of the memory available when Ray starts (on a node, under the container's cgroup
# limit); ray/_private/services.py determine_plasma_store_config keeps it in /dev/shm only when /dev/shm holds all of
# it, else in /tmp with "WARNING: The object store is using /tmp instead of /dev/shm".
RAY_DEFAULT_OBJECT_STORE_MEMORY_PROPORTION: Final = 0.3
# KubeRay utils/constant.go RayLogVolumeName / RayLogVolumeMountPath (autoscaler and collector).
RAY_LOG_VOLUME_NAME: Final = "ray-logs"
RAY_LOG_MOUNT_PATH: Final = "/tmp/ray"  # noqa: S108 - a path inside the Pod

# --- Probes (KubeRay utils/constant.go) -------------------------------------------------------------------------

# KubeRay utils/constant.go: defaults of the injected probes.
DEFAULT_LIVENESS_INITIAL_DELAY_SECONDS: Final = 30
DEFAULT_READINESS_INITIAL_DELAY_SECONDS: Final = 10
DEFAULT_HEAD_PROBE_TIMEOUT_SECONDS: Final = 5
DEFAULT_WORKER_PROBE_TIMEOUT_SECONDS: Final = 2
DEFAULT_PROBE_PERIOD_SECONDS: Final = 5
DEFAULT_PROBE_SUCCESS_THRESHOLD: Final = 1
DEFAULT_LIVENESS_FAILURE_THRESHOLD: Final = 120
DEFAULT_READINESS_FAILURE_THRESHOLD: Final = 10
SERVE_WORKER_READINESS_FAILURE_THRESHOLD: Final = 1
# KubeRay common/pod.go: from this Ray version on the probes are httpGet /api/healthz on the agent port.
MIN_RAY_VERSION_HTTP_PROBES: Final = "2.53.0"
RAY_HEALTHZ_PATH: Final = "/api/healthz"
RAY_LOCAL_RAYLET_HEALTHZ_PATH: Final = "/api/local_raylet_healthz"
RAY_GCS_HEALTHZ_PATH: Final = "/api/gcs_healthz"
RAY_SERVE_HEALTHZ_PATH: Final = "/-/healthz"

# --- Cluster status (KubeRay apis/ray/v1 raycluster_types.go) ---------------------------------------------------

CLUSTER_STATE_READY: Final = "ready"
CLUSTER_STATE_SUSPENDED: Final = "suspended"
CONDITION_HEAD_POD_READY: Final = "HeadPodReady"
CONDITION_RAYCLUSTER_PROVISIONED: Final = "RayClusterProvisioned"
CONDITION_REPLICA_FAILURE: Final = "ReplicaFailure"
REASON_HEAD_POD_RUNNING_AND_READY: Final = "HeadPodRunningAndReady"
REASON_HEAD_POD_NOT_FOUND: Final = "HeadPodNotFound"
REASON_ALL_PODS_READY_FIRST_TIME: Final = "AllPodRunningAndReadyFirstTime"
REASON_PODS_PROVISIONING: Final = "RayClusterPodsProvisioning"
# KubeRay utils/constant.go ErrFailed* (errRayClusterReplicaFailure): the reasons of the ReplicaFailure condition.
REASON_FAILED_CREATE_HEAD_POD: Final = "FailedCreateHeadPod"
REASON_FAILED_DELETE_HEAD_POD: Final = "FailedDeleteHeadPod"
REASON_FAILED_CREATE_WORKER_POD: Final = "FailedCreateWorkerPod"
REASON_FAILED_DELETE_WORKER_POD: Final = "FailedDeleteWorkerPod"
REASON_FAILED_DELETE_ALL_PODS: Final = "FailedDeleteAllPods"

# --- Operator environment switches (KubeRay utils/constant.go; read with os.Getenv) -----------------------------

# KubeRay common/pod.go EnableInitContainerInjectionEnvKey.
ENABLE_INIT_CONTAINER_INJECTION_ENV: Final = "ENABLE_INIT_CONTAINER_INJECTION"
ENABLE_PROBES_INJECTION_ENV: Final = "ENABLE_PROBES_INJECTION"
ENABLE_RANDOM_POD_DELETE_ENV: Final = "ENABLE_RANDOM_POD_DELETE"
ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE_ENV: Final = "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE"
ENABLE_LOGIN_SHELL_ENV: Final = "ENABLE_LOGIN_SHELL"
ENABLE_DETERMINISTIC_HEAD_POD_NAME_ENV: Final = "ENABLE_DETERMINISTIC_HEAD_POD_NAME"
# KubeRay utils/util.go ClusterDomainEnvKey.
CLUSTER_DOMAIN_ENV: Final = "CLUSTER_DOMAIN"

# --- Pod builders (KubeRay v1.6.1 controllers/ray/common/pod.go, utils/constant.go) ------------------------------

# KubeRay v1.7.0 common/pod.go BuildPod: the ulimit put before the generated `ray start`, joined by "; " (v1.6.1 had
# a fixed "ulimit -n 65536"; v1.7.0 reads RAY_START_ULIMIT_OPEN_FILES from the container's env, PR #4860).
RAY_START_ULIMIT_CMD: Final = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}"
# KubeRay utils/constant.go LOCAL_HOST: the host of RAY_ADDRESS on the head.
LOCAL_HOST: Final = "127.0.0.1"
# KubeRay utils/constant.go DefaultWorkerRayGcsReconnectTimeoutS: RAY_gcs_rpc_server_reconnect_timeout_s on workers.
DEFAULT_WORKER_GCS_RECONNECT_TIMEOUT_S: Final = "600"
# KubeRay utils/constant.go: env KubeRay adds (each only if absent) to clusters a RayService created.
RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO_ENV: Final = "RAY_timeout_ms_task_wait_for_death_info"
RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS_ENV: Final = "RAY_gcs_server_request_timeout_seconds"
RAY_SERVE_KV_TIMEOUT_S_ENV: Final = "RAY_SERVE_KV_TIMEOUT_S"
# KubeRay utils/constant.go RAY_ENABLE_K8S_TOKEN_AUTH_ENV_VAR: set instead of RAY_AUTH_TOKEN with enableK8sTokenAuth.
RAY_ENABLE_K8S_TOKEN_AUTH_ENV: Final = "RAY_ENABLE_K8S_TOKEN_AUTH"  # noqa: S105 - a name, not a secret
# KubeRay utils/constant.go RAY_AUTH_TOKEN_SECRET_KEY: the key of the auth Secret that holds the token.
RAY_AUTH_TOKEN_SECRET_KEY: Final = "auth_token"  # noqa: S105 - a key name, not a secret
# KubeRay utils/constant.go RayTokenVolumeName / RayTokenMountPath: the projected service-account token volume of
# K8s token auth (authOptions.enableK8sTokenAuth, in the v1.6.1 CRD).
RAY_TOKEN_VOLUME_NAME: Final = "ray-token"  # noqa: S105 - a volume name, not a secret
RAY_TOKEN_MOUNT_PATH: Final = "/var/run/secrets/ray.io/serviceaccount"  # noqa: S105 - a path, not a secret
# KubeRay common/pod.go PlasmaDirectoryParamKey: with this rayStartParams key no /dev/shm volume is injected.
PLASMA_DIRECTORY_PARAM: Final = "plasma-directory"
# KubeRay common/pod.go customAcceleratorToRayResourceMap: container limit → Ray custom resource in --resources.
CUSTOM_ACCELERATOR_RAY_RESOURCES: Final[Mapping[str, str]] = MappingProxyType(
    {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}
)
# KubeRay common/pod.go BuildAutoscalerContainer: the autoscaler sidecar's only argument, and (v1.7.0) the value of
# its KUBERAY_GEN_AUTOSCALER_START_CMD env, so that autoscalerOptions.args can refer to it.
AUTOSCALER_START_CMD: Final = (
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)
# KubeRay common/pod.go BuildAutoscalerContainer: the value of KUBERAY_CRD_VER.
KUBERAY_CRD_VERSION: Final = "v1"
# KubeRay common/pod.go BuildAutoscalerContainer: the sidecar's CPU and memory (limits = requests).
AUTOSCALER_DEFAULT_CPU: Final = "500m"
AUTOSCALER_DEFAULT_MEMORY: Final = "512Mi"
# KubeRay common/pod.go DefaultWorkerPodTemplate: wait-gcs-ready's CPU and memory (limits = requests).
WAIT_GCS_READY_CPU: Final = "200m"
WAIT_GCS_READY_MEMORY: Final = "256Mi"
# KubeRay utils/constant.go EnableRayClusterServingServiceTrue/False: ray.io/serve on RayService Pods.
RAY_SERVE_LABEL_TRUE: Final = "true"
RAY_SERVE_LABEL_FALSE: Final = "false"
# Kubernetes core/v1 PodPhase values KubeRay's shouldDeletePod reads.
POD_PHASE_RUNNING: Final = "Running"
POD_PHASE_SUCCEEDED: Final = "Succeeded"
POD_PHASE_FAILED: Final = "Failed"

# --- Services and status (KubeRay v1.6.1 common/service.go, raycluster_controller.go calculateStatus, utils/util.go) --

# Kubernetes core/v1 ServiceSpec.clusterIP that makes a Service headless (corev1.ClusterIPNone).
CLUSTER_IP_NONE: Final = "None"
# Kubernetes core/v1 ServiceType: the type KubeRay makes headless unless ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE=true.
SERVICE_TYPE_CLUSTER_IP: Final = "ClusterIP"
# KubeRay utils GenerateServeServiceLabel: ray.io/serve on <cluster>-serve-svc is "<cluster>" + this suffix.
SERVE_SERVICE_LABEL_SUFFIX: Final = "-serve"
# Kubernetes core/v1 PodConditionType Ready: what KubeRay's readiness checks and HeadPodReady read.
POD_CONDITION_READY: Final = "Ready"
# Kubernetes kubelet reason of a Ready=False Pod condition; KubeRay FindHeadPodReadyCondition replaces it by the
# first waiting/terminated container's reason in HeadPodReady.
POD_REASON_CONTAINERS_NOT_READY: Final = "ContainersNotReady"
# KubeRay apis/ray/v1 raycluster_types.go UnknownReason: HeadPodReady's reason when the head Pod has no Ready condition.
REASON_UNKNOWN: Final = "Unknown"
# Kubernetes core/v1 ResourceCPU / ResourceMemory: the resources behind status.desiredCPU / desiredMemory.
RESOURCE_CPU: Final = "cpu"
RESOURCE_MEMORY: Final = "memory"
# KubeRay raycluster_controller.go calculateStatus: the resource summed into status.desiredTPU.
TPU_RESOURCE_NAME: Final = "google.com/tpu"
# KubeRay utils IsGPUResourceKey: a resource name ending in this counts towards status.desiredGPU ...
GPU_RESOURCE_SUFFIX: Final = "gpu"
# ... and so does one matching this (Go regexp.MatchString, unanchored at the start: NVIDIA MIG slices).
NVIDIA_MIG_RESOURCE_PATTERN: Final = r"nvidia\.com/mig-\d+g\.\d+gb$"

# --- Events the RayCluster controller records (KubeRay utils/constant.go K8sEventType; raycluster_controller.go) --
# Appended for `raykube doctor`, which reads these events and may not import raykube.controllers.

# KubeRay raycluster_controller.go: the reporting controller (source.component) of RayCluster events (core/v1).
RAYCLUSTER_CONTROLLER_NAME: Final = "raycluster-controller"
# KubeRay utils/constant.go K8sEventType: a spec/metadata/status that fails utils/validation.go.
EVENT_INVALID_RAYCLUSTER_SPEC: Final = "InvalidRayClusterSpec"
EVENT_INVALID_RAYCLUSTER_METADATA: Final = "InvalidRayClusterMetadata"
EVENT_INVALID_RAYCLUSTER_STATUS: Final = "InvalidRayClusterStatus"
# KubeRay utils/constant.go K8sEventType: Services, Pods, Ingresses and PVCs the controller creates or deletes.
EVENT_CREATED_SERVICE: Final = "CreatedService"
EVENT_FAILED_TO_CREATE_SERVICE: Final = "FailedToCreateService"
EVENT_CREATED_HEAD_POD: Final = "CreatedHeadPod"
EVENT_FAILED_TO_CREATE_HEAD_POD: Final = "FailedToCreateHeadPod"
EVENT_DELETED_HEAD_POD: Final = "DeletedHeadPod"
EVENT_FAILED_TO_DELETE_HEAD_POD: Final = "FailedToDeleteHeadPod"
EVENT_CREATED_WORKER_POD: Final = "CreatedWorkerPod"
EVENT_FAILED_TO_CREATE_WORKER_POD: Final = "FailedToCreateWorkerPod"
EVENT_DELETED_WORKER_POD: Final = "DeletedWorkerPod"
EVENT_FAILED_TO_DELETE_WORKER_POD: Final = "FailedToDeleteWorkerPod"
EVENT_DELETED_POD: Final = "DeletedPod"
EVENT_CREATED_INGRESS: Final = "CreatedIngress"
EVENT_FAILED_TO_CREATE_INGRESS: Final = "FailedToCreateIngress"
EVENT_CREATED_PVC: Final = "CreatedPVC"
EVENT_FAILED_TO_CREATE_PVC: Final = "FailedToCreatePVC"
# KubeRay utils/constant.go K8sEventType: the Ray autoscaler's ServiceAccount, Role and RoleBinding.
EVENT_CREATED_SERVICE_ACCOUNT: Final = "CreatedServiceAccount"
EVENT_FAILED_TO_CREATE_SERVICE_ACCOUNT: Final = "FailedToCreateServiceAccount"
EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND: Final = "AutoscalerServiceAccountNotFound"
EVENT_CREATED_ROLE: Final = "CreatedRole"
EVENT_FAILED_TO_CREATE_ROLE: Final = "FailedToCreateRole"
EVENT_CREATED_ROLE_BINDING: Final = "CreatedRoleBinding"
EVENT_FAILED_TO_CREATE_ROLE_BINDING: Final = "FailedToCreateRoleBinding"
# KubeRay utils/constant.go K8sEventType: GCS fault tolerance's Redis cleanup Job.
EVENT_CREATED_REDIS_CLEANUP_JOB: Final = "CreatedRedisCleanupJob"
EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB: Final = "FailedToCreateRedisCleanupJob"
# raykube's own, with no K8sEventType in KubeRay v1.6.1 (which logs these cases instead): an Ingress brought back in
# step with the cluster, and the Redis cleanup finalizer forced off after ray.io/gcs-ft-deletion-timeout.
EVENT_UPDATED_INGRESS: Final = "UpdatedIngress"
EVENT_FAILED_TO_UPDATE_INGRESS: Final = "FailedToUpdateIngress"
EVENT_FORCE_DELETED_STUCK_CLUSTER: Final = "ForceDeletedStuckCluster"
# Kubernetes Event.type (core/v1 and events.k8s.io/v1).
EVENT_TYPE_NORMAL: Final = "Normal"
EVENT_TYPE_WARNING: Final = "Warning"
# --- The RayJob controller (KubeRay v1.6.1 rayjob_controller.go, utils/constant.go) ------------------------------

# KubeRay utils/constant.go RayJobStopJobFinalizer: stops the Ray job before a RayJob goes away.
RAYJOB_FINALIZER: Final = "ray.io/rayjob-finalizer"
# KubeRay v1.6.2 utils/constant.go RayServiceFinalizer: held until every RayCluster of the RayService is gone.
RAYSERVICE_FINALIZER: Final = "ray.io/rayservice-finalizer"
# KubeRay utils/constant.go RayJobClusterSelectorKey: the clusterSelector key naming the RayCluster to run on.
RAY_JOB_CLUSTER_SELECTOR_KEY: Final = "ray.io/cluster"
# KubeRay utils/constant.go DEFAULT_RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS and its env override.
DEFAULT_RAYJOB_TRANSITION_GRACE_SECONDS: Final = 300
RAYJOB_TRANSITION_GRACE_PERIOD_ENV: Final = "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS"
# KubeRay v1.7.0 utils/constant.go DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS and its env override (a positive
# integer; anything else gives the default): how long GetJobInfo may keep failing before the RayJob fails.
DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: Final = 300
RAYJOB_STATUS_CHECK_TIMEOUT_ENV: Final = "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"
# KubeRay utils/constant.go: "true" makes shutdownAfterJobFinishes delete the RayJob, not only its cluster.
DELETE_RAYJOB_CR_AFTER_JOB_FINISHES_ENV: Final = "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES"
# KubeRay utils/constant.go K8sEventType: what the RayJob controller reports.
EVENT_INVALID_RAYJOB_SPEC: Final = "InvalidRayJobSpec"
EVENT_INVALID_RAYJOB_METADATA: Final = "InvalidRayJobMetadata"
EVENT_INVALID_RAYJOB_STATUS: Final = "InvalidRayJobStatus"
EVENT_CREATED_RAYJOB_SUBMITTER: Final = "CreatedRayJobSubmitter"
EVENT_DELETED_RAYJOB_SUBMITTER: Final = "DeletedRayJobSubmitter"
EVENT_FAILED_TO_CREATE_RAYJOB_SUBMITTER: Final = "FailedToCreateRayJobSubmitter"
EVENT_FAILED_TO_DELETE_RAYJOB_SUBMITTER: Final = "FailedToDeleteRayJobSubmitter"
EVENT_CREATED_RAYCLUSTER: Final = "CreatedRayCluster"
EVENT_UPDATED_RAYCLUSTER: Final = "UpdatedRayCluster"
EVENT_DELETED_RAYCLUSTER: Final = "DeletedRayCluster"
EVENT_FAILED_TO_CREATE_RAYCLUSTER: Final = "FailedToCreateRayCluster"
EVENT_FAILED_TO_DELETE_RAYCLUSTER: Final = "FailedToDeleteRayCluster"
EVENT_FAILED_TO_UPDATE_RAYCLUSTER: Final = "FailedToUpdateRayCluster"
EVENT_RAYCLUSTER_NOT_FOUND: Final = "RayClusterNotFound"
EVENT_UPDATED_SERVICE: Final = "UpdatedService"
EVENT_FAILED_TO_UPDATE_SERVICE: Final = "FailedToUpdateService"
EVENT_BATCH_SCHEDULER_CLEANED_UP: Final = "BatchSchedulerCleanedUp"
EVENT_FAILED_TO_CLEANUP_BATCH_SCHEDULER: Final = "FailedToCleanupBatchScheduler"

# KubeRay rayjob_controller.go / rayservice_controller.go: the reporting controllers of RayJob and RayService events.
RAYJOB_CONTROLLER_NAME: Final = "rayjob-controller"
RAYSERVICE_CONTROLLER_NAME: Final = "rayservice-controller"

# --- The RayCronJob controller (KubeRay v1.6.1 raycronjob_controller.go, utils/constant.go; alpha, gated) --------

# KubeRay raycronjob_controller.go GetEventRecorderFor: the reporting controller of RayCronJob events.
RAYCRONJOB_CONTROLLER_NAME: Final = "raycronjob-controller"
# KubeRay utils/constant.go RayCronJobNameLabelKey: on each RayJob a RayCronJob creates (and so on its RayCluster).
RAY_CRONJOB_NAME_LABEL: Final = "ray.io/cronjob-name"
# Kubernetes' Job controller (pkg/controller/job): the label it puts on a Job's Pods (batch.kubernetes.io/job-name
# since 1.27, and the legacy job-name it still sets); how a RayJob's submitter Pods are found.
JOB_NAME_LABELS: Final = ("batch.kubernetes.io/job-name", "job-name")
# KubeRay utils/constant.go RayCronJobTimestampAnnotationKey: the tick a RayJob was created for (UTC, RFC 3339).
RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: Final = "ray.io/cronjob-scheduled-timestamp"
# KubeRay utils/constant.go K8sEventType: what the RayCronJob controller reports.
EVENT_INVALID_RAYCRONJOB_SPEC: Final = "InvalidRayCronJobSpec"
EVENT_SUSPENDED_RAYCRONJOB: Final = "SuspendedRayCronJob"

# --- The NetworkPolicy controller (KubeRay v1.7.0 networkpolicy_controller.go, utils/constant.go; alpha, gated) ----

# KubeRay v1.7.0 networkpolicy_controller.go GetEventRecorder: the reporting controller of its events.
NETWORKPOLICY_CONTROLLER_NAME: Final = "networkpolicy-controller"
# KubeRay v1.7.0 networkpolicy_controller.go getHeadPort: the rayStartParams key of the head's dashboard port.
DASHBOARD_PORT_RAY_START_PARAM: Final = "dashboard-port"
# KubeRay v1.7.0 utils/constant.go K8sEventType: what the NetworkPolicy controller reports.
EVENT_CREATED_NETWORK_POLICY: Final = "CreatedNetworkPolicy"
EVENT_UPDATED_NETWORK_POLICY: Final = "UpdatedNetworkPolicy"
EVENT_DELETED_NETWORK_POLICY: Final = "DeletedNetworkPolicy"
EVENT_FAILED_TO_CREATE_NETWORK_POLICY: Final = "FailedToCreateNetworkPolicy"
EVENT_FAILED_TO_UPDATE_NETWORK_POLICY: Final = "FailedToUpdateNetworkPolicy"
EVENT_FAILED_TO_DELETE_NETWORK_POLICY: Final = "FailedToDeleteNetworkPolicy"
EVENT_NETWORK_POLICY_NAME_COLLISION: Final = "NetworkPolicyNameCollision"

# --- mTLS through cert-manager (KubeRay v1.7.0 raycluster_mtls_controller.go, common/pod.go, utils/; alpha, gated) --

# KubeRay v1.7.0 main.go certManagerAPIAvailable: the group version whose being served turns the mTLS controller on.
CERT_MANAGER_GROUP: Final = "cert-manager.io"
CERT_MANAGER_GROUP_VERSION: Final = "cert-manager.io/v1"
# KubeRay v1.7.0 NewRayClusterMTLSController GetEventRecorder: the reporting controller of its events.
RAYCLUSTER_MTLS_CONTROLLER_NAME: Final = "raycluster-mtls-controller"
# KubeRay v1.7.0 common/pod.go configureTLS: the init container that waits for the Pod's IP in its certificate.
WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER: Final = "wait-for-tls-ip-san"
WAIT_FOR_TLS_IP_SAN_CPU: Final = "50m"
WAIT_FOR_TLS_IP_SAN_MEMORY: Final = "64Mi"
# KubeRay v1.7.0 utils/constant.go: the cert-manager objects' name prefixes ("<prefix>-<cluster>"; the CA Secret is
# "<cluster>-ca-secret-<uid[:8]>").
RAY_SELF_SIGNED_ISSUER_PREFIX: Final = "ray-selfsigned-issuer"
RAY_CA_CERTIFICATE_PREFIX: Final = "ray-ca-certificate"
RAY_CA_ISSUER_PREFIX: Final = "ray-ca-issuer"
RAY_HEAD_CERT_PREFIX: Final = "ray-head-cert"
RAY_WORKER_CERT_PREFIX: Final = "ray-worker-cert"
RAY_HEAD_SECRET_PREFIX: Final = "ray-head-secret"  # noqa: S105 - a name prefix, not a credential
RAY_WORKER_SECRET_PREFIX: Final = "ray-worker-secret"  # noqa: S105 - a name prefix, not a credential
RAY_CA_SECRET_PREFIX: Final = "ca-secret"  # noqa: S105 - a name prefix, not a credential
# KubeRay v1.7.0 raycluster_controller.go checkMTLSSecretsReady: the keys each leaf Secret must hold.
TLS_SECRET_KEYS: Final = ("tls.crt", "tls.key", "ca.crt")
# KubeRay v1.7.0 utils/constant.go K8sEventType: what the mTLS controller reports.
EVENT_MTLS_PKI_READY: Final = "MTLSPKIReady"
EVENT_MTLS_CERTS_NOT_READY: Final = "MTLSCertsNotReady"
EVENT_MTLS_FAILED_TO_RECONCILE: Final = "MTLSFailedToReconcile"
EVENT_MTLS_CERTIFICATES_UPDATED: Final = "MTLSCertificatesUpdated"
EVENT_MTLS_CERTIFICATE_EXPIRING_SOON: Final = "MTLSCertificateExpiringSoon"

# --- RayJob submission (KubeRay v1.6.1 rayjob_controller.go, common/job.go, utils/constant.go) ------------------

# KubeRay utils/constant.go SubmitterContainerName: the submitter container (K8sJobMode Job, SidecarMode head sidecar).
SUBMITTER_CONTAINER_NAME: Final = "ray-job-submitter"
# KubeRay utils/constant.go RayNodeSubmitterGroupLabelValue: the group name batch schedulers get for the submitter.
SUBMITTER_GROUP_NAME: Final = "submittergroup"
# KubeRay common/job.go GetDefaultSubmitterContainer: the default submitter container's limits and requests.
SUBMITTER_DEFAULT_LIMITS: Final[Mapping[str, str]] = MappingProxyType({"cpu": "1", "memory": "1Gi"})
SUBMITTER_DEFAULT_REQUESTS: Final[Mapping[str, str]] = MappingProxyType({"cpu": "500m", "memory": "200Mi"})
# KubeRay rayjob_controller.go createNewK8sJob: the submitter Job's backoffLimit without spec.submitterConfig.
SUBMITTER_DEFAULT_BACKOFF_LIMIT: Final = 2
# KubeRay v1.7.0 rayjob_controller.go getSubmitterContainer: with the SidecarSubmitterRestart gate the SidecarMode
# submitter container gets this per-container restartPolicy (Kubernetes 1.35+ ContainerRestartRules); the head Pod's
# own restartPolicy stays Never. submitterConfig.backoffLimit (default SUBMITTER_DEFAULT_BACKOFF_LIMIT) then bounds
# its restartCount.
SUBMITTER_CONTAINER_RESTART_POLICY: Final = "OnFailure"
# KubeRay rayjob_controller.go configureSubmitterContainer: bash options of the submitter command ("-ce", or "-cel"
# with ENABLE_LOGIN_SHELL), given to utils.GetContainerCommand.
SUBMITTER_SHELL_OPTIONS: Final = "e"
# KubeRay rayjob_controller.go PythonUnbufferedEnvVarName: "1" on the submitter, for real-time logs.
PYTHONUNBUFFERED_ENV: Final = "PYTHONUNBUFFERED"
# KubeRay utils/constant.go RAY_DASHBOARD_ADDRESS / RAY_JOB_SUBMISSION_ID: the submitter's dashboard and job id.
RAY_DASHBOARD_ADDRESS_ENV: Final = "RAY_DASHBOARD_ADDRESS"
RAY_JOB_SUBMISSION_ID_ENV: Final = "RAY_JOB_SUBMISSION_ID"
# KubeRay v1.7.0 utils/constant.go BasePythonHealthCommand: both submitters (K8sJobMode since v1.7.0) wait for the
# dashboard's GCS with this (Python % slots for the full URL and the urlopen timeout).
BASE_PYTHON_HEALTH_COMMAND: Final = (
    "python -c \"import urllib.request; r=urllib.request.urlopen('%s', timeout=%d); "
    "exit(0 if b'success' in r.read() else 1)\""
)
# KubeRay utils/constant.go RayDashboardGCSHealthPath: the dashboard path BASE_PYTHON_HEALTH_COMMAND polls.
RAY_DASHBOARD_GCS_HEALTH_PATH: Final = "api/gcs_healthz"
# KubeRay v1.7.0 utils/constant.go RayDashboardGCSHealthCheckTimeoutSeconds: the urlopen timeout of that wait (v1.6.1
# used DefaultReadinessProbeFailureThreshold, also 10).
RAY_DASHBOARD_GCS_HEALTH_CHECK_TIMEOUT_SECONDS: Final = 10
# KubeRay v1.7.0 common/job.go BuildJobSubmitCommand: SidecarMode polls the dashboard on localhost (the address it
# submits to is 127.0.0.1); K8sJobMode polls "<dashboard address>/<path>".
SIDECAR_GCS_HEALTH_URL_FORMAT: Final = "http://localhost:{port}/{path}"
# KubeRay v1.7.0 common/job.go getMetadataJSONForSubmitCommand: --metadata-json needs this Ray version (Masterminds
# semver ">= 2.6.0") when rayClusterSpec.rayVersion is set; unset (or clusterSelector) is taken as recent enough.
MIN_RAY_VERSION_JOB_METADATA: Final = "2.6.0"
# KubeRay utils/util.go GenerateRayJobId / GenerateRayClusterName: the random suffix (k8s.io/apimachinery
# util/rand.String: 5 characters from this alphabet, which has no vowels and no 0, 1, 3).
RANDOM_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
RANDOM_SUFFIX_LENGTH: Final = 5

# --- How the operator is deployed (KubeRay helm-chart/kuberay-operator, ray-operator/config/default, main.go) ------

# KubeRay helm-chart/kuberay-operator: Deployment, ServiceAccount and ClusterRole name (fullnameOverride default).
OPERATOR_DEPLOYMENT_NAME: Final = "kuberay-operator"
# KubeRay docs (helm install kuberay-operator ... --namespace kuberay-operator): the usual operator namespace.
OPERATOR_DEFAULT_NAMESPACE: Final = "kuberay-operator"
# KubeRay helm chart (app.kubernetes.io/name=kuberay-operator) and kustomize install (=kuberay): operator Pod labels.
OPERATOR_APP_NAME_LABEL_VALUES: Final = ("kuberay-operator", "kuberay")
# KubeRay main.go flag: the namespaces to watch (comma-separated; all when empty), as the doctor names it. All the
# operator's flags are parsed by raykube.api.config.
OPERATOR_WATCH_NAMESPACE_FLAG: Final = "--watch-namespace"

# --- Objects around the cluster (KubeRay common/rbac.go, ingress.go, job.go; utils/constant.go) ------------------

# KubeRay utils/constant.go: the key of the generated auth Secret that holds the token.
AUTH_TOKEN_SECRET_KEY: Final = "auth_token"  # noqa: S105 - a key name, not a secret
# KubeRay common/ingress.go: the cluster annotation that picks the Ingress class (and is not copied onto it).
INGRESS_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
# KubeRay utils/constant.go GCS_FT_REDIS_CLEANUP_DEADLINE default: activeDeadlineSeconds of the cleanup Job.
GCS_FT_REDIS_CLEANUP_DEADLINE_SECONDS: Final = 300
# KubeRay common/job.go: requests and limits of the Redis cleanup Job's container.
GCS_FT_REDIS_CLEANUP_RESOURCES: Final[Mapping[str, str]] = MappingProxyType({"cpu": "200m", "memory": "256Mi"})
# KubeRay v1.7.0 raycluster_controller.go buildRedisCleanupJob: the Ray container's one argument (after
# GetContainerCommand), the prefix and then one of the two calls: with ``username=`` only when the head's Ray container
# has REDIS_USERNAME in its env. ``password`` falls back to ``''`` (Ray's cleanup_redis_storage takes a str: None, from
# an address without a password, raises a TypeError); False from the call exits 1 (the Job fails, its Pod's log says).
REDIS_CLEANUP_ARGS_PREFIX: Final = (
    'echo "To get more information about manually deleting the storage namespace in Redis and removing the '
    "RayCluster's finalizer, please check https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft."
    'html for more details." && python -c "from ray._private.gcs_utils import cleanup_redis_storage; '
    "from urllib.parse import urlparse; import os; import sys; "
    "redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; "
    "redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; "
    "parsed = urlparse(redis_address); "
)
_REDIS_CLEANUP_REST: Final = (
    "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', "
    "storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\""
)
REDIS_CLEANUP_CALL: Final = (
    "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, "  # no username
    + _REDIS_CLEANUP_REST
)
REDIS_CLEANUP_CALL_WITH_USERNAME: Final = (
    "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, "
    "username=os.getenv('REDIS_USERNAME', parsed.username), " + _REDIS_CLEANUP_REST
)
# KubeRay raycluster_controller.go: seconds after deletion before the Redis cleanup finalizer is forced off.
GCS_FT_DEFAULT_DELETION_TIMEOUT_SECONDS: Final = 300
# KubeRay common/rbac.go BuildRole: what the Ray autoscaler's Role grants in the cluster's namespace.
AUTOSCALER_ROLE_RULES: Final = (
    MappingProxyType({"apiGroups": ("",), "resources": ("pods",), "verbs": ("get", "list", "watch", "patch")}),
    MappingProxyType({"apiGroups": ("",), "resources": ("pods/resize",), "verbs": ("patch",)}),
    MappingProxyType({"apiGroups": ("ray.io",), "resources": ("rayclusters",), "verbs": ("get", "patch")}),
)
# KubeRay utils/constant.go: "false" turns off the GCS FT Redis cleanup finalizer and Job.
ENABLE_GCS_FT_REDIS_CLEANUP_ENV: Final = "ENABLE_GCS_FT_REDIS_CLEANUP"

# --- Batch schedulers (KubeRay batchscheduler/*, main.go --batch-scheduler; docs.ray.io "KubeRay integration with
# Volcano" / "... with Apache YuniKorn"; volcano.sh/apis; yunikorn-k8shim) ---------------------------------------

# KubeRay main.go --batch-scheduler / Configuration.batchScheduler: the plugin names KubeRay v1.6.1 accepts, exactly
# those ray-operator/apis/config/v1alpha1/config_utils.go ValidateBatchSchedulerConfig lets through: each plugin's
# GetPluginName() in ray-operator/controllers/ray/batchscheduler/{volcano,yunikorn,kai-scheduler,scheduler-plugins}
# (main.go's --batch-scheduler help text lists only volcano, yunikorn and kai-scheduler).
BATCH_SCHEDULER_VOLCANO: Final = "volcano"
BATCH_SCHEDULER_YUNIKORN: Final = "yunikorn"
BATCH_SCHEDULER_KAI: Final = "kai-scheduler"
BATCH_SCHEDULER_SCHEDULER_PLUGINS: Final = "scheduler-plugins"
KUBERAY_BATCH_SCHEDULERS: Final = (
    BATCH_SCHEDULER_VOLCANO,
    BATCH_SCHEDULER_YUNIKORN,
    BATCH_SCHEDULER_KAI,
    BATCH_SCHEDULER_SCHEDULER_PLUGINS,
)
# The ones raykube implements: the names of raykube.builders.batch.PLUGINS but kubernetes-was-v1alpha2, which its
# gate chooses (a unit test keeps the two in step), which the operator's configuration (raykube.api.config) accepts
# without importing the builders. The other KubeRay names are refused at start-up.
RAYKUBE_BATCH_SCHEDULERS: Final = (BATCH_SCHEDULER_VOLCANO, BATCH_SCHEDULER_YUNIKORN)
# KubeRay v1.7.0 batchscheduler/kubernetes-was (gate KubernetesWAS): Kubernetes' own workload-aware scheduling,
# selected by the gate alone (never by --batch-scheduler, which it excludes). Its plugin name, and the
# scheduling.k8s.io/v1alpha2 objects it keeps per gang-scheduled RayCluster (Kubernetes 1.36 k8s.io/api
# scheduling/v1alpha2: Workload, PodGroup; served only with the GenericWorkload feature gate and that alpha API on).
BATCH_SCHEDULER_KUBERNETES_WAS: Final = "kubernetes-was-v1alpha2"
WAS_GROUP: Final = "scheduling.k8s.io"
WAS_VERSION: Final = "v1alpha2"
KIND_WAS_WORKLOAD: Final = "Workload"
WAS_WORKLOADS_PLURAL: Final = "workloads"
KIND_WAS_PODGROUP: Final = "PodGroup"
WAS_PODGROUPS_PLURAL: Final = "podgroups"
# The Workload's one PodGroupTemplate (the whole cluster, head and every worker, is one gang) and the PodGroup's
# name suffix: <cluster>-cluster.
WAS_POD_GROUP_TEMPLATE_NAME: Final = "cluster"
# Kubernetes keeps a PodGroup while Pods reference it with this finalizer; KubeRay removes it before its own deletes.
WAS_PODGROUP_PROTECTION_FINALIZER: Final = "scheduling.k8s.io/podgroup-protection"
# k8s.io/api core/v1 DefaultSchedulerName: the schedulerName the WAS plugin puts on Pods.
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
# KubeRay utils/constant.go RayPriorityClassName: RayCluster label → PodGroup priorityClassName, copied onto Pods.
RAY_PRIORITY_CLASS_NAME_LABEL: Final = "ray.io/priority-class-name"
# KubeRay utils/constant.go RayGangSchedulingEnabled: present (any value) turns on YuniKorn task groups.
RAY_GANG_SCHEDULING_ENABLED_LABEL: Final = "ray.io/gang-scheduling-enabled"
# KubeRay utils/constant.go RaySchedulerName: per-cluster scheduler label of KubeRay < v1.5; v1.6.1 ignores it.
RAY_SCHEDULER_NAME_LABEL: Final = "ray.io/scheduler-name"
# volcano.sh/apis scheduling/v1beta1: the PodGroup API KubeRay's Volcano plugin writes.
VOLCANO_SCHEDULING_GROUP: Final = "scheduling.volcano.sh"
VOLCANO_PODGROUP_API_VERSION: Final = "scheduling.volcano.sh/v1beta1"
KIND_VOLCANO_PODGROUP: Final = "PodGroup"
VOLCANO_PODGROUPS_PLURAL: Final = "podgroups"
# volcano.sh/apis scheduling/v1beta1 PodGroupPending: the phase KubeRay writes into a new PodGroup.
VOLCANO_PODGROUP_PHASE_PENDING: Final = "Pending"
# KubeRay volcano plugin: PodGroup name "ray-<cluster or originating RayJob>-pg".
VOLCANO_PODGROUP_NAME_FORMAT: Final = "ray-{name}-pg"
# KubeRay volcano QueueNameLabelKey: RayCluster label → PodGroup spec.queue, copied onto Pods.
VOLCANO_QUEUE_NAME_LABEL: Final = "volcano.sh/queue-name"
# KubeRay volcano NetworkTopologyModeLabelKey / ...HighestTierAllowedLabelKey (kuberay#4105): PodGroup networkTopology.
VOLCANO_NETWORK_TOPOLOGY_MODE_LABEL: Final = "volcano.sh/network-topology-mode"
VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL: Final = "volcano.sh/network-topology-highest-tier-allowed"
# volcano.sh/apis scheduling/v1beta1 KubeGroupNameAnnotationKey: the Pod's PodGroup.
VOLCANO_GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
# volcano.sh/apis batch/v1alpha1 TaskSpecKey: the Pod's task (KubeRay: headgroup or the worker group's name).
VOLCANO_TASK_SPEC_ANNOTATION: Final = "volcano.sh/task-spec"
# KubeRay yunikorn plugin RayApplicationIDLabelName / RayApplicationQueueLabelName: RayCluster labels users set.
YUNIKORN_APP_ID_LABEL: Final = "yunikorn.apache.org/app-id"
YUNIKORN_QUEUE_LABEL: Final = "yunikorn.apache.org/queue"
# KubeRay yunikorn plugin YuniKornPodApplicationIDLabelName / YuniKornPodQueueLabelName: the Pod labels the
# yunikorn-k8shim reads (KubeRay translates the two labels above into these).
YUNIKORN_POD_APPLICATION_ID_LABEL: Final = "applicationId"
YUNIKORN_POD_QUEUE_LABEL: Final = "queue"
# KubeRay yunikorn plugin / yunikorn-k8shim: the task groups of a gang (JSON) and the Pod's own task group.
YUNIKORN_TASK_GROUPS_ANNOTATION: Final = "yunikorn.apache.org/task-groups"
YUNIKORN_TASK_GROUP_NAME_ANNOTATION: Final = "yunikorn.apache.org/task-group-name"

# --- The RayService controller (KubeRay v1.6.1 rayservice_controller.go, apis/ray/v1/rayservice_types.go,
# utils/constant.go, utils/dashboardclient/dashboard_httpclient.go) ---------------------------------------------

# KubeRay rayservice_controller.go ServiceDefaultRequeueDuration: every normal exit of a pass comes back after this.
RAYSERVICE_REQUEUE_SECONDS: Final = 2
# KubeRay rayservice_controller.go RayClusterDeletionDelayDuration: spec.rayClusterDeletionDelaySeconds when unset.
RAYSERVICE_DEFAULT_CLUSTER_DELETION_DELAY_SECONDS: Final = 60
# KubeRay rayservice_controller.go ENABLE_ZERO_DOWNTIME: "false" (any case) turns off new clusters when
# spec.upgradeStrategy.type is unset.
ENABLE_ZERO_DOWNTIME_ENV: Final = "ENABLE_ZERO_DOWNTIME"
# KubeRay utils/constant.go ServeConfigLRUSize: RayServices kept in the controller's serve-config cache.
SERVE_CONFIG_LRU_SIZE: Final = 1000
# KubeRay utils/constant.go DefaultServeAppName: the name an application without one ("") is reported under.
DEFAULT_SERVE_APP_NAME: Final = "default"
# KubeRay dashboard_httpclient.go DeployPathV2 / ServeDetailsPath + APITypeParam: the Serve REST API of Ray's dashboard
# (PUT the config; GET the declarative applications' details).
SERVE_APPLICATIONS_PATH: Final = "/api/serve/applications/"
SERVE_DETAILS_API_TYPE: Final = "declarative"
# KubeRay apis/ray/v1 rayservice_types.go ServiceStatus: status.serviceStatus when Ready is True ("" otherwise).
RAYSERVICE_STATUS_RUNNING: Final = "Running"
# KubeRay apis/ray/v1 rayservice_types.go RayServiceConditionType.
CONDITION_RAYSERVICE_READY: Final = "Ready"
CONDITION_UPGRADE_IN_PROGRESS: Final = "UpgradeInProgress"
CONDITION_ROLLBACK_IN_PROGRESS: Final = "RollbackInProgress"
# KubeRay v1.7.0 apis/ray/v1 rayservice_types.go: spec.suspend's conditions (RayServiceSuspending / Suspended).
CONDITION_RAYSERVICE_SUSPENDING: Final = "Suspending"
CONDITION_RAYSERVICE_SUSPENDED: Final = "Suspended"
# KubeRay apis/ray/v1 rayservice_types.go RayServiceConditionReason.
REASON_RAYSERVICE_INITIALIZING: Final = "Initializing"
REASON_RAYSERVICE_INITIALIZING_TIMEOUT: Final = "InitializingTimeout"
REASON_ZERO_SERVE_ENDPOINTS: Final = "ZeroServeEndpoints"
REASON_NON_ZERO_SERVE_ENDPOINTS: Final = "NonZeroServeEndpoints"
REASON_BOTH_ACTIVE_PENDING_CLUSTERS_EXIST: Final = "BothActivePendingClustersExist"
REASON_NO_PENDING_CLUSTER: Final = "NoPendingCluster"
REASON_NO_ACTIVE_CLUSTER: Final = "NoActiveCluster"
REASON_RAYSERVICE_VALIDATION_FAILED: Final = "ValidationFailed"
# KubeRay v1.7.0 renamed v1.6.1's TargetClusterChanged (RollbackInProgress while an incremental upgrade's goal moved).
REASON_DESIRED_CLUSTER_SPEC_CHANGED: Final = "DesiredClusterSpecChanged"
# KubeRay v1.7.0 rayservice_types.go: the reasons of spec.suspend's conditions.
REASON_SUSPEND_REQUESTED: Final = "SuspendRequested"
REASON_SUSPEND_IN_PROGRESS: Final = "SuspendInProgress"
REASON_SUSPEND_COMPLETE: Final = "SuspendComplete"
REASON_RAYSERVICE_RESUMED: Final = "RayServiceResumed"
# KubeRay apis/ray/v1 rayservice_types.go ApplicationStatusEnum (Ray Serve's ApplicationStatus).
SERVE_APP_NOT_STARTED: Final = "NOT_STARTED"
SERVE_APP_DEPLOYING: Final = "DEPLOYING"
SERVE_APP_RUNNING: Final = "RUNNING"
SERVE_APP_DEPLOY_FAILED: Final = "DEPLOY_FAILED"
SERVE_APP_DELETING: Final = "DELETING"
SERVE_APP_UNHEALTHY: Final = "UNHEALTHY"
# KubeRay apis/ray/v1 rayservice_types.go DeploymentStatusEnum (Ray Serve's DeploymentStatus).
SERVE_DEPLOYMENT_UPDATING: Final = "UPDATING"
SERVE_DEPLOYMENT_HEALTHY: Final = "HEALTHY"
SERVE_DEPLOYMENT_UNHEALTHY: Final = "UNHEALTHY"
SERVE_DEPLOYMENT_UPSCALING: Final = "UPSCALING"
SERVE_DEPLOYMENT_DOWNSCALING: Final = "DOWNSCALING"
# KubeRay utils/constant.go GatewayListenerPortName / DefaultGatewayListenerPort: the incremental upgrade's Gateway.
GATEWAY_LISTENER_NAME: Final = "http"
GATEWAY_LISTENER_PORT: Final = 80
# KubeRay v1.7.0 rayservice_controller.go createGateway: the listener's protocol (gwv1.HTTPProtocolType), and the
# Gateway API version its objects are written in (sigs.k8s.io/gateway-api/apis/v1).
GATEWAY_LISTENER_PROTOCOL: Final = "HTTP"
GATEWAY_API_GROUP: Final = "gateway.networking.k8s.io"
GATEWAY_API_VERSION: Final = "gateway.networking.k8s.io/v1"
# KubeRay utils/constant.go K8sEventType: what the RayService controller reports besides the RayCluster and Service
# reasons above (CreatedRayCluster, UpdatedService, ...).
EVENT_INVALID_RAYSERVICE_SPEC: Final = "InvalidRayServiceSpec"
EVENT_INVALID_RAYSERVICE_METADATA: Final = "InvalidRayServiceMetadata"
EVENT_RAYSERVICE_INITIALIZING_TIMEOUT: Final = "RayServiceInitializingTimeout"
EVENT_UPDATED_HEAD_POD_SERVE_LABEL: Final = "UpdatedHeadPodServeLabel"
EVENT_FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL: Final = "FailedToUpdateHeadPodServeLabel"
EVENT_UPDATED_SERVE_APPLICATIONS: Final = "UpdatedServeApplications"
EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS: Final = "FailedToUpdateServeApplications"
EVENT_UPDATED_SERVE_TARGET_CAPACITY: Final = "UpdatedServeTargetCapacity"
EVENT_FAILED_TO_UPDATE_TARGET_CAPACITY: Final = "FailedToUpdateTargetCapacity"
EVENT_CREATED_GATEWAY: Final = "CreatedGateway"
EVENT_UPDATED_GATEWAY: Final = "UpdatedGateway"
EVENT_FAILED_TO_CREATE_GATEWAY: Final = "FailedToCreateGateway"
EVENT_FAILED_TO_UPDATE_GATEWAY: Final = "FailedToUpdateGateway"
EVENT_CREATED_HTTPROUTE: Final = "CreatedHTTPRoute"
EVENT_UPDATED_HTTPROUTE: Final = "UpdatedHTTPRoute"
EVENT_FAILED_TO_CREATE_HTTPROUTE: Final = "FailedToCreateHTTPRoute"
EVENT_FAILED_TO_UPDATE_HTTPROUTE: Final = "FailedToUpdateHTTPRoute"
# KubeRay v1.7.0 utils/constant.go: a suspended RayService's deletions, and an incremental upgrade that cannot roll
# back (its active cluster is gone).
EVENT_DELETED_SERVICE: Final = "DeletedService"
EVENT_FAILED_TO_DELETE_SERVICE: Final = "FailedToDeleteService"
EVENT_DELETED_GATEWAY: Final = "DeletedGateway"
EVENT_FAILED_TO_DELETE_GATEWAY: Final = "FailedToDeleteGateway"
EVENT_DELETED_HTTPROUTE: Final = "DeletedHTTPRoute"
EVENT_FAILED_TO_DELETE_HTTPROUTE: Final = "FailedToDeleteHTTPRoute"
EVENT_ROLLBACK_IMPOSSIBLE: Final = "RollbackImpossible"

# --- The kubectl plugin (KubeRay kubectl-plugin/pkg/util/constant.go, pkg/cmd/*; v1.6.1) -------------------------

# kubectl-plugin/pkg/util/constant.go: the field manager of its server-side applies (create cluster, job submit).
KUBECTL_RAY_FIELD_MANAGER: Final = "ray-kubectl-plugin"
# kubectl-plugin/pkg/util/constant.go RayVersion / RayImage: what `create cluster` and `job submit` default to.
KUBECTL_RAY_DEFAULT_RAY_VERSION: Final = "2.52.0"
KUBECTL_RAY_DEFAULT_IMAGE: Final = "rayproject/ray:2.52.0"
# kubectl-plugin/pkg/util/generation: the container names and head ports of the RayCluster it generates.
KUBECTL_RAY_HEAD_CONTAINER: Final = "ray-head"
KUBECTL_RAY_WORKER_CONTAINER: Final = "ray-worker"
KUBECTL_RAY_DEFAULT_GROUP: Final = "default-group"
KUBECTL_RAY_HEAD_PORTS: Final = (("gcs-server", 6379), ("dashboard", 8265), ("client", 10001))
# kubectl-plugin/pkg/cmd/session: the local ports `session` forwards, per kind, with the names it prints.
KUBECTL_RAY_SESSION_PORTS: Final[Mapping[str, tuple[tuple[str, int], ...]]] = MappingProxyType(
    {
        "raycluster": (("Ray Dashboard", 8265), ("Ray Interactive Client", 10001)),
        "rayjob": (("Ray Dashboard", 8265),),
        "rayservice": (("Ray Dashboard", 8265), ("Ray Serve", 8000)),
    }
)
# kubectl-plugin/pkg/cmd/log: the directory `log` copies out of every Ray Pod (Ray's session log directory).
RAY_SESSION_LOGS_DIR: Final = "/tmp/ray/session_latest/logs/"  # noqa: S108 - a path inside the Ray Pod
# kubectl-plugin/pkg/cmd/job: Ray's job submission ids ("raysubmit_" + 16 of these characters).
RAY_SUBMISSION_ID_PREFIX: Final = "raysubmit_"
RAY_SUBMISSION_ID_ALPHABET: Final = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ123456789"
# kubectl-plugin/pkg/util/constant.go: the extended resources its tables count as GPUs and TPUs.
NVIDIA_GPU_RESOURCE_NAME: Final = "nvidia.com/gpu"
# kubectl-plugin/pkg/util/constant.go: the node selectors a TPU worker group needs, and where to read about them.
GKE_TPU_ACCELERATOR_SELECTOR: Final = "cloud.google.com/gke-tpu-accelerator"
GKE_TPU_TOPOLOGY_SELECTOR: Final = "cloud.google.com/gke-tpu-topology"
GKE_TPU_DOCS: Final = "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus#availability"

"""Names, values and limits that raykube shares with KubeRay, Ray and Kubernetes.

A flat module of documented constants and nothing else. Each one names where its contract comes from, so that a
change upstream can be traced to the line that has to follow it. The KubeRay paths are under ``ray-operator/`` in
``github.com/ray-project/kuberay``.
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
# KubeRay utils/constant.go MaxRayCronJobNameLength: keeps the child RayJob name "<cron>-<minutes>" valid.
MAX_RAYCRONJOB_NAME_LENGTH: Final = 36

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
# KubeRay utils/constant.go RayTLSVolumeName: the TLS secret volume KubeRay adds with tlsOptions.
RAY_TLS_VOLUME_NAME: Final = "ray-tls"
# KubeRay utils/constant.go RayTLSCertMountPath: where the TLS secret volume is mounted.
RAY_TLS_CERT_MOUNT_PATH: Final = "/etc/ray/tls"
# KubeRay utils/constant.go CollectorContainerName: the history-server collector sidecar.
COLLECTOR_CONTAINER_NAME: Final = "ray-history-collector"
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
# KubeRay apis/ray/v1 raycluster_types.go NetworkPolicyMode enum (the CRD default).
NETWORK_POLICY_DENY_ALL: Final = "DenyAll"
# KubeRay apis/ray/v1 raycluster_types.go NetworkPolicyMode enum.
NETWORK_POLICY_DENY_ALL_INGRESS: Final = "DenyAllIngress"
# KubeRay apis/ray/v1 raycluster_types.go NetworkPolicyMode enum.
NETWORK_POLICY_DENY_ALL_EGRESS: Final = "DenyAllEgress"
# KubeRay apis/ray/v1 raycluster_types.go NetworkPolicyMode: the CRD enum.
NETWORK_POLICY_MODES: Final = (NETWORK_POLICY_DENY_ALL, NETWORK_POLICY_DENY_ALL_INGRESS, NETWORK_POLICY_DENY_ALL_EGRESS)
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

# KubeRay pkg/features: status conditions on RayCluster (beta).
GATE_RAYCLUSTER_STATUS_CONDITIONS: Final = "RayClusterStatusConditions"
# KubeRay pkg/features: RayJob deletionStrategy and worker-group suspend (beta).
GATE_RAYJOB_DELETION_POLICY: Final = "RayJobDeletionPolicy"
# KubeRay pkg/features: replica-index labels on worker Pods (beta).
GATE_RAY_MULTI_HOST_INDEXING: Final = "RayMultiHostIndexing"
# KubeRay pkg/features: RayService NewClusterWithIncrementalUpgrade (beta).
GATE_RAYSERVICE_INCREMENTAL_UPGRADE: Final = "RayServiceIncrementalUpgrade"
# KubeRay pkg/features: the RayCronJob controller (alpha).
GATE_RAY_CRON_JOB: Final = "RayCronJob"
# KubeRay pkg/features: restartable SidecarMode submitter (alpha).
GATE_SIDECAR_SUBMITTER_RESTART: Final = "SidecarSubmitterRestart"
# KubeRay pkg/features: spec.networkPolicy (alpha).
GATE_RAYCLUSTER_NETWORK_POLICY: Final = "RayClusterNetworkPolicy"
# KubeRay pkg/features: gcsFaultToleranceOptions.backend "rocksdb" (alpha).
GATE_GCS_FT_EMBEDDED_STORAGE: Final = "GCSFaultToleranceEmbeddedStorage"
# KubeRay pkg/features: spec.tlsOptions, mTLS through cert-manager (alpha).
GATE_RAYCLUSTER_MTLS: Final = "RayClusterMTLS"
# KubeRay pkg/features: spec.historyServerOptions, the collector sidecar (alpha).
GATE_RAYCLUSTER_HISTORY_SERVER: Final = "RayClusterHistoryServer"
# KubeRay pkg/features: Kubernetes workload-aware scheduling (alpha).
GATE_KUBERNETES_WAS: Final = "KubernetesWAS"

# KubeRay pkg/features/features.go defaultFeatureGates: each gate's default.
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

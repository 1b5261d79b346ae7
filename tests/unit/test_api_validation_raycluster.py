"""RayCluster validation, checked as a table of invalid RayClusters and their exact (path, message) pairs, with the
variations it accepts and the spec validators the controllers reuse."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api.validation import FieldError, validate, validate_raycluster_spec, validate_raycluster_upgrade_strategy
from tests.unit.validation_support import DELETE, Case, case_params, cluster_spec, mutated

DNS1035_REASON = (
    "[a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
    "'[a-z]([-a-z0-9]*[a-z0-9])?')]"
)
LABEL_VALUE_REASON = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
LABEL_KEY_REASON = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

HEAD = "spec.headGroupSpec"
HEAD_CONTAINER = "spec.headGroupSpec.template.spec.containers[0]"
W0 = "spec.workerGroupSpecs[0]"
W1 = "spec.workerGroupSpecs[1]"
AUTOSCALING_V2 = {"spec.enableInTreeAutoscaling": True, "spec.autoscalerOptions": {"version": "v2"}}
SUSPENDED_CONDITIONS = [
    {"type": "RayClusterSuspending", "status": "True"},
    {"type": "RayClusterSuspended", "status": "True"},
]


HISTORY = {"RayClusterHistoryServer": True}
COLLECTOR = "spec.historyServerOptions.collectorOptions"
SIDECAR = {"name": "ray-history-collector", "image": "c"}
S3_ENV = ({"name": "STORAGE_BACKEND", "value": "S3"}, {"name": "S3_REGION", "value": "us-west-2"})


def collector_options(*env: dict[str, Any]) -> dict[str, Any]:
    return {"collectorOptions": {"image": "collector:v1", "env": list(env)}}


# --- The table -----------------------------------------------------------------------------------------------------
# (id, kind, changes to the valid base, feature gates, every (path, message) expected)

CASES: list[Case] = [
    # RayCluster metadata
    (
        "raycluster-name-too-long",
        "RayCluster",
        {"metadata.name": "a" * 54},
        None,
        [("metadata.name", "RayCluster name should be no more than 53 characters")],
    ),
    (
        "raycluster-name-not-dns1035",
        "RayCluster",
        {"metadata.name": "1-cluster"},
        None,
        [("metadata.name", f"RayCluster name should be a valid DNS1035 label: {DNS1035_REASON}")],
    ),
    (
        "raycluster-generate-name-too-long",
        "RayCluster",
        {"metadata.name": DELETE, "metadata.generateName": "a" * 49},
        None,
        [("metadata.generateName", "RayCluster name should be no more than 53 characters")],
    ),
    # Containers and groups
    (
        "head-without-containers",
        "RayCluster",
        {f"{HEAD}.template.spec.containers": []},
        None,
        [(f"{HEAD}.template.spec.containers", "headGroupSpec should have at least one container")],
    ),
    (
        "worker-without-containers",
        "RayCluster",
        {f"{W1}.template.spec.containers": []},
        None,
        [(f"{W1}.template.spec.containers", "workerGroupSpec should have at least one container")],
    ),
    (
        "head-group-missing",
        "RayCluster",
        {"spec.headGroupSpec": DELETE},
        None,
        [("spec.headGroupSpec", "Required value")],
    ),
    (
        "duplicate-group-names",
        "RayCluster",
        {f"{W1}.groupName": "small-group"},
        None,
        [(W1, "worker group names must be unique")],
    ),
    ("empty-group-name", "RayCluster", {f"{W1}.groupName": ""}, None, [(f"{W1}.groupName", "must be non-empty")]),
    ("missing-group-name", "RayCluster", {f"{W1}.groupName": DELETE}, None, [(f"{W1}.groupName", "Required value")]),
    # Replicas
    (
        "min-greater-than-max",
        "RayCluster",
        {f"{W1}.minReplicas": 5, f"{W1}.maxReplicas": 2},
        None,
        [(f"{W1}.minReplicas", "worker group gpu-group has minReplicas 5 greater than maxReplicas 2")],
    ),
    (
        "negative-min",
        "RayCluster",
        {f"{W1}.minReplicas": -1},
        None,
        [(f"{W1}.minReplicas", "worker group gpu-group has negative minReplicas -1")],
    ),
    (
        "negative-max",
        "RayCluster",
        {f"{W1}.maxReplicas": -1},
        None,
        [
            (f"{W1}.maxReplicas", "worker group gpu-group has negative maxReplicas -1"),
            (f"{W1}.minReplicas", "worker group gpu-group has minReplicas 0 greater than maxReplicas -1"),
        ],
    ),
    (
        "min-unset-without-autoscaling",
        "RayCluster",
        {f"{W1}.minReplicas": None},
        None,
        [
            (
                f"{W1}.minReplicas",
                "worker group gpu-group must set both minReplicas and maxReplicas when autoscaling is disabled",
            )
        ],
    ),
    # Group resources and labels
    (
        "worker-resources-and-ray-start-params",
        "RayCluster",
        {f"{W0}.rayStartParams": {"num-cpus": "1"}, f"{W0}.resources": {"CPU": "1"}},
        None,
        [
            (
                f"{W0}.resources",
                "resource fields should not be set in both rayStartParams and Resources for small-group group; "
                "please use only one",
            )
        ],
    ),
    (
        "head-resources-and-ray-start-params",
        "RayCluster",
        {f"{HEAD}.rayStartParams": {"memory": "1000"}, f"{HEAD}.resources": {"memory": "1Gi"}},
        None,
        [
            (
                f"{HEAD}.resources",
                "resource fields should not be set in both rayStartParams and Resources for Head group; "
                "please use only one",
            )
        ],
    ),
    (
        "ray-start-params-labels",
        "RayCluster",
        {f"{HEAD}.rayStartParams": {"labels": "tier=a"}},
        None,
        [
            (
                f"{HEAD}.rayStartParams[labels]",
                "rayStartParams['labels'] is not supported for Head group; please use the top-level Labels field "
                "instead",
            )
        ],
    ),
    (
        "invalid-label-value",
        "RayCluster",
        {f"{W0}.labels": {"tier": "bad value!"}},
        None,
        [
            (
                f"{W0}.labels[tier]",
                f"invalid label value for key 'tier' in small-group group: 'bad value!', error: {LABEL_VALUE_REASON}",
            )
        ],
    ),
    (
        "invalid-label-key",
        "RayCluster",
        {f"{W0}.labels": {"-tier": "a"}},
        None,
        [(f"{W0}.labels[-tier]", f"invalid label key for small-group group: '-tier', error: {LABEL_KEY_REASON}")],
    ),
    # Autoscaler
    (
        "idle-timeout-without-autoscaler-v2",
        "RayCluster",
        {"spec.enableInTreeAutoscaling": True, f"{W0}.idleTimeoutSeconds": 30},
        None,
        [
            (
                f"{W0}.idleTimeoutSeconds",
                "worker group small-group: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set "
                ".spec.autoscalerOptions.version to 'v2' (or set RAY_enable_autoscaler_v2 environment variable to "
                "'true' in the head pod if using KubeRay < 1.4.0)",
            )
        ],
    ),
    (
        "autoscaler-v2-env-without-autoscaling",
        "RayCluster",
        {f"{HEAD_CONTAINER}.env": [{"name": "RAY_enable_autoscaler_v2", "value": "true"}]},
        None,
        [
            (
                f"{HEAD_CONTAINER}.env[0]",
                "environment variable RAY_enable_autoscaler_v2 cannot be set to 'true' when enableInTreeAutoscaling "
                "is false. Please set enableInTreeAutoscaling: true to use autoscaler v2",
            )
        ],
    ),
    (
        "autoscaler-version-and-env",
        "RayCluster",
        {
            "spec.enableInTreeAutoscaling": True,
            "spec.autoscalerOptions": {"version": "v1"},
            f"{HEAD_CONTAINER}.env": [{"name": "RAY_enable_autoscaler_v2", "value": "1"}],
        },
        None,
        [
            (
                "spec.autoscalerOptions.version",
                "both .spec.autoscalerOptions.version and head Pod env var RAY_enable_autoscaler_v2 are set, please "
                "only use the former",
            )
        ],
    ),
    (
        "autoscaler-v2-head-restart-policy",
        "RayCluster",
        {**AUTOSCALING_V2, f"{HEAD}.template.spec.restartPolicy": "Always"},
        None,
        [
            (
                f"{HEAD}.template.spec.restartPolicy",
                "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
            )
        ],
    ),
    (
        "autoscaler-v2-worker-restart-policy",
        "RayCluster",
        {**AUTOSCALING_V2, f"{W1}.template.spec.restartPolicy": "OnFailure"},
        None,
        [
            (
                f"{W1}.template.spec.restartPolicy",
                "restartPolicy for worker group gpu-group should be Never or unset when using autoscaler V2",
            )
        ],
    ),
    (
        "autoscaler-env-sets-generated-command",
        "RayCluster",
        {"spec.autoscalerOptions": {"env": [{"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": "x"}]}},
        None,
        [
            (
                "spec.autoscalerOptions.env[0]",
                "autoscalerOptions.env must not contain KUBERAY_GEN_AUTOSCALER_START_CMD: it is managed by KubeRay "
                "and injected automatically into the autoscaler container",
            )
        ],
    ),
    (
        "priority-needs-ray-2.56",
        "RayCluster",
        {**AUTOSCALING_V2, f"{W0}.priority": 5},
        None,
        [
            (
                "spec.rayVersion",
                "worker group small-group: priority is set, but minimum Ray version is 2.56.0, got 2.52.0",
            )
        ],
    ),
    # GCS fault tolerance
    (
        "ft-annotation-and-options",
        "RayCluster",
        {
            "metadata.annotations": {"ray.io/ft-enabled": "true"},
            "spec.gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
        },
        None,
        [
            (
                "spec.gcsFaultToleranceOptions",
                "ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. Please use only "
                "GcsFaultToleranceOptions to configure GCS fault tolerance",
            )
        ],
    ),
    (
        "redis-address-env-without-ft",
        "RayCluster",
        {f"{HEAD_CONTAINER}.env": [{"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}]},
        None,
        [
            (
                f"{HEAD_CONTAINER}.env[0]",
                "RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions "
                "is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance",
            )
        ],
    ),
    (
        "redis-password-param-with-ft-options",
        "RayCluster",
        {
            "spec.gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
            f"{HEAD}.rayStartParams": {"redis-password": "secret"},
        },
        None,
        [
            (
                f"{HEAD}.rayStartParams[redis-password]",
                "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - use "
                "GcsFaultToleranceOptions.RedisPassword instead",
            )
        ],
    ),
    (
        "redis-password-env-with-ft-options",
        "RayCluster",
        {
            "spec.gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
            f"{HEAD_CONTAINER}.env": [{"name": "REDIS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s"}}}],
        },
        None,
        [
            (
                f"{HEAD_CONTAINER}.env[0]",
                "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - use "
                "GcsFaultToleranceOptions.RedisPassword instead",
            )
        ],
    ),
    (
        "redis-address-env-with-ft-options",
        "RayCluster",
        {
            "spec.gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
            f"{HEAD_CONTAINER}.env": [{"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}],
        },
        None,
        [
            (
                f"{HEAD_CONTAINER}.env[0]",
                "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - use "
                "GcsFaultToleranceOptions.RedisAddress instead",
            )
        ],
    ),
    (
        "external-storage-annotation-with-ft-options",
        "RayCluster",
        {
            "metadata.annotations": {"ray.io/external-storage-namespace": "ns"},
            "spec.gcsFaultToleranceOptions": {"redisAddress": "redis:6379"},
        },
        None,
        [
            (
                "metadata.annotations[ray.io/external-storage-namespace]",
                "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.ExternalStorageNamespace instead",
            )
        ],
    ),
    (
        "redis-username-param",
        "RayCluster",
        {f"{HEAD}.rayStartParams": {"redis-username": "admin"}},
        None,
        [
            (
                f"{HEAD}.rayStartParams[redis-username]",
                "cannot set redis username in rayStartParams or environment variables - use "
                "GcsFaultToleranceOptions.RedisUsername instead",
            )
        ],
    ),
    (
        "rocksdb-backend-needs-gate",
        "RayCluster",
        {"spec.gcsFaultToleranceOptions": {"backend": "rocksdb"}},
        None,
        [
            (
                "spec.gcsFaultToleranceOptions.backend",
                "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') "
                "requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled",
            )
        ],
    ),
    (
        "rocksdb-backend-with-redis-address",
        "RayCluster",
        {"spec.gcsFaultToleranceOptions": {"backend": "rocksdb", "redisAddress": "redis:6379"}},
        {"GCSFaultToleranceEmbeddedStorage": True},
        [
            (
                "spec.gcsFaultToleranceOptions.redisAddress",
                "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'",
            )
        ],
    ),
    # Group suspension
    (
        "group-suspend-without-deletion-policy-gate",
        "RayCluster",
        {f"{W0}.suspend": True},
        {"RayJobDeletionPolicy": False},
        [
            (
                f"{W0}.suspend",
                "worker group small-group can be suspended only when the RayJobDeletionPolicy feature gate is enabled",
            )
        ],
    ),
    (
        "group-suspend-with-autoscaling",
        "RayCluster",
        {"spec.enableInTreeAutoscaling": True, f"{W0}.suspend": True},
        None,
        [(f"{W0}.suspend", "worker group small-group cannot be suspended with Autoscaler enabled")],
    ),
    # Authentication
    (
        "token-auth-ray-too-old",
        "RayCluster",
        {"spec.authOptions": {"mode": "token"}, "spec.rayVersion": "2.51.0"},
        None,
        [("spec.rayVersion", "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.51.0")],
    ),
    (
        "token-auth-ray-version-unset",
        "RayCluster",
        {"spec.authOptions": {"mode": "token"}, "spec.rayVersion": DELETE},
        None,
        [
            (
                "spec.rayVersion",
                "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required",
            )
        ],
    ),
    (
        "token-auth-ray-version-unparsable",
        "RayCluster",
        {"spec.authOptions": {"mode": "token"}, "spec.rayVersion": "latest"},
        None,
        [
            (
                "spec.rayVersion",
                "authOptions.mode is 'token' but RayVersion format is invalid: latest, could not parse \"latest\" as "
                "version",
            )
        ],
    ),
    (
        "k8s-token-auth-ray-too-old",
        "RayCluster",
        {"spec.authOptions": {"mode": "token", "enableK8sTokenAuth": True}, "spec.rayVersion": "2.54.0"},
        None,
        [
            (
                "spec.rayVersion",
                "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got 2.54.0",
            )
        ],
    ),
    (
        "k8s-token-auth-with-secret-name",
        "RayCluster",
        {
            "spec.authOptions": {"mode": "token", "enableK8sTokenAuth": True, "secretName": "token"},
            "spec.rayVersion": "2.55.0",
        },
        None,
        [
            (
                "spec.authOptions.secretName",
                "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
            )
        ],
    ),
    # Feature-gated fields
    (
        "network-policy-needs-gate",
        "RayCluster",
        {"spec.networkPolicy": {"mode": "DenyAll"}},
        None,
        [("spec.networkPolicy", "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled")],
    ),
    (
        "network-policy-egress-rules-under-deny-ingress",
        "RayCluster",
        {"spec.networkPolicy": {"mode": "DenyAllIngress", "head": {"egressRules": [{}]}}},
        {"RayClusterNetworkPolicy": True},
        [
            (
                "spec.networkPolicy.head.egressRules",
                'networkPolicy.head.egressRules cannot be set when mode is "DenyAllIngress" (egress is not restricted)',
            )
        ],
    ),
    (
        "network-policy-ingress-rules-under-deny-egress",
        "RayCluster",
        {
            "spec.networkPolicy": {
                "mode": "DenyAllEgress",
                "worker": {"ingressRules": [{}]},
                "workerGroups": [{"groupName": "small-group", "ingressRules": [{}]}],
            }
        },
        {"RayClusterNetworkPolicy": True},
        [
            (
                "spec.networkPolicy.worker.ingressRules",
                'networkPolicy.worker.ingressRules cannot be set when mode is "DenyAllEgress" (ingress is not '
                "restricted)",
            ),
            (
                "spec.networkPolicy.workerGroups[0].ingressRules",
                'networkPolicy.workerGroups["small-group"].ingressRules cannot be set when mode is "DenyAllEgress" '
                "(ingress is not restricted)",
            ),
        ],
    ),
    (
        # KubeRay v1.7.0's order: every group name before the workerGroups entries.
        "network-policy-group-names",
        "RayCluster",
        {
            f"{W1}.groupName": "GPU-Group",
            "spec.networkPolicy": {
                "mode": "DenyAllIngress",
                "workerGroups": [{"groupName": "samll-group", "egressRules": [{}]}],
            },
        },
        {"RayClusterNetworkPolicy": True},
        [
            (
                f"{W1}.groupName",
                'worker group name "GPU-Group" must be a valid DNS1123 label when networkPolicy is enabled (it is '
                "embedded in the NetworkPolicy name): [a lowercase RFC 1123 label must consist of lower case "
                "alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
                "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]",
            ),
            (
                "spec.networkPolicy.workerGroups[0].egressRules",
                'networkPolicy.workerGroups["samll-group"].egressRules cannot be set when mode is "DenyAllIngress" '
                "(egress is not restricted)",
            ),
            (
                "spec.networkPolicy.workerGroups[0].groupName",
                'networkPolicy.workerGroups["samll-group"] does not match any group name in workerGroupSpecs',
            ),
        ],
    ),
    (
        "tls-needs-gate",
        "RayCluster",
        {"spec.tlsOptions": {"enabled": True}},
        None,
        [("spec.tlsOptions", "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled")],
    ),
    (
        "history-server-needs-gate",
        "RayCluster",
        {"spec.historyServerOptions": {"collectorOptions": {"image": "collector:latest"}}},
        None,
        [("spec.historyServerOptions", "RayClusterHistoryServer feature gate is not enabled")],
    ),
    # VAL-4 with the gate on: validateCollectorOptions, then the reserved container name, in v1.7.0's order
    (
        "history-server-needs-collector-options",
        "RayCluster",
        {"spec.historyServerOptions": {}},
        HISTORY,
        [("spec.historyServerOptions.collectorOptions", "historyServerOptions.collectorOptions must be set")],
    ),
    (
        "history-server-collector-needs-image-and-a-literal-backend",
        "RayCluster",
        {"spec.historyServerOptions": {"collectorOptions": {"env": [{"name": "STORAGE_BACKEND", "valueFrom": {}}]}}},
        HISTORY,
        [
            (f"{COLLECTOR}.image", "historyServerOptions.collectorOptions.image must be set"),
            (
                f"{COLLECTOR}.env[0]",
                "STORAGE_BACKEND environment variable must be set with a literal string value in "
                "historyServerOptions.collectorOptions.env",
            ),
        ],
    ),
    (
        "history-server-collector-env-managed-by-kuberay",
        "RayCluster",
        {
            "spec.historyServerOptions": collector_options(
                {"name": "EVENTS_PORT", "value": "1"}, {"name": "POD_IP", "value": "1.2.3.4"}, *S3_ENV
            )
        },
        HISTORY,
        [
            (
                f"{COLLECTOR}.env[1]",
                "historyServerOptions.collectorOptions.env must not contain POD_IP: it is managed by KubeRay and "
                "injected automatically into the collector container",
            ),
            (
                f"{COLLECTOR}.env[0]",
                "historyServerOptions.collectorOptions.env must not contain EVENTS_PORT: it is managed by KubeRay and "
                "injected automatically into the collector container",
            ),
        ],
    ),
    *(
        (
            f"history-server-backend-{backend.lower()}-{missing.lower()}",
            "RayCluster",
            {"spec.historyServerOptions": collector_options({"name": "STORAGE_BACKEND", "value": backend}, *env)},
            HISTORY,
            [(f"{COLLECTOR}.env", message)],
        )
        for backend, missing, env, message in [
            ("gcs", "GCS_BUCKET", [], "GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS"),
            (
                "S3",
                "S3_REGION",
                [{"name": "S3_REGION", "value": ""}],
                "S3_REGION environment variable must be set when STORAGE_BACKEND is S3",
            ),
            (
                "AliyunOSS",
                "OSS_ENDPOINT",
                [{"name": "OSS_BUCKET", "value": "b"}, {"name": "OSS_REGION", "value": "r"}],
                "OSS_ENDPOINT environment variable must be set when STORAGE_BACKEND is ALIYUNOSS",
            ),
            (
                "AZUREBLOB",
                "either",
                [],
                "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL "
                "environment variable must be set when STORAGE_BACKEND is AZUREBLOB",
            ),
            (
                "azureblob",
                "connection",
                [
                    {"name": "AZURE_STORAGE_AUTH_MODE", "value": " Connection_String "},
                    {"name": "AZURE_STORAGE_ACCOUNT_URL", "value": "https://a"},
                ],
                "AZURE_STORAGE_CONNECTION_STRING "
                "environment variable must be set when STORAGE_BACKEND is AZUREBLOB and AZURE_STORAGE_AUTH_MODE is "
                "connection_string",
            ),
            (
                "AZUREBLOB",
                "account",
                [{"name": "AZURE_STORAGE_AUTH_MODE", "value": "workload_identity"}],
                "AZURE_STORAGE_ACCOUNT_URL environment variable must be set when STORAGE_BACKEND is AZUREBLOB and "
                "AZURE_STORAGE_AUTH_MODE is workload_identity",
            ),
        ]
    ),
    (
        "history-server-reserved-container-name",
        "RayCluster",
        {
            "spec.historyServerOptions": collector_options(*S3_ENV),
            f"{HEAD}.template.spec.containers": [{"name": "ray-head", "image": "r"}, SIDECAR],
            f"{W0}.template.spec.containers": [{"name": "ray-worker", "image": "r"}, SIDECAR],
        },
        HISTORY,
        [
            (
                f"{HEAD}.template.spec.containers[1].name",
                "head pod template must not define a container with name 'ray-history-collector' when history "
                "server collector options are enabled",
            ),
            (
                f"{W0}.template.spec.containers[1].name",
                "worker group small-group pod template must not define a container with name "
                "'ray-history-collector' when history server collector options are enabled",
            ),
        ],
    ),
    # CRD/CEL rules and the RayCluster controller's own checks
    (
        "managed-by-unknown",
        "RayCluster",
        {"spec.managedBy": "someone-else"},
        None,
        [
            (
                "spec.managedBy",
                "the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'",
            )
        ],
    ),
    (
        "upgrade-strategy-on-cluster-of-rayjob",
        "RayCluster",
        {"metadata.labels": {"ray.io/originated-from-crd": "RayJob"}, "spec.upgradeStrategy": {"type": "Recreate"}},
        None,
        [("spec.upgradeStrategy.type", "upgradeStrategy cannot be set when RayCluster is created by RayJob")],
    ),
    (
        "upgrade-strategy-unknown-type",
        "RayCluster",
        {"spec.upgradeStrategy": {"type": "Rolling"}},
        None,
        [
            (
                "spec.upgradeStrategy.type",
                "The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value Rolling is invalid, valid options are "
                "Recreate or None",
            )
        ],
    ),
    (
        "status-suspending-and-suspended",
        "RayCluster",
        {"status.conditions": SUSPENDED_CONDITIONS},
        None,
        [
            (
                "status.conditions",
                "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should "
                "not be both true",
            )
        ],
    ),
]


@pytest.mark.parametrize(("kind", "changes", "features", "expected"), case_params(CASES))
def test_invalid_spec_gives_kuberays_error(
    kind: str, changes: dict[str, Any], features: dict[str, bool] | None, expected: list[tuple[str, str]]
) -> None:
    obj = mutated(kind, changes)
    assert validate(obj, features=features) == [FieldError(path, message) for path, message in expected]


# --- Valid input gives no errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"spec.enableInTreeAutoscaling": True, f"{W1}.minReplicas": None}, id="autoscaling-min-unset"),
        pytest.param({f"{W1}.minReplicas": DELETE, f"{W1}.maxReplicas": DELETE}, id="crd-defaults-min-max"),
        pytest.param({f"{W0}.replicas": 9}, id="replicas-above-max-is-clamped"),
        pytest.param({f"{W0}.replicas": -3}, id="replicas-below-min-is-clamped"),
        pytest.param({"spec.authOptions": {"mode": "token"}, "spec.rayVersion": "2.52.0rc1"}, id="rc-version"),
        pytest.param({"spec.authOptions": {"mode": "token"}, "spec.rayVersion": "2.52"}, id="two-part-version"),
        pytest.param({"spec.authOptions": {"mode": "disabled"}, "spec.rayVersion": DELETE}, id="auth-disabled"),
        pytest.param(
            {"metadata.annotations": {"ray.io/ft-enabled": "true"}, f"{HEAD}.rayStartParams": {"redis-password": "x"}},
            id="deprecated-ft-with-password-param",
        ),
        pytest.param({**AUTOSCALING_V2, f"{W0}.idleTimeoutSeconds": 30}, id="idle-timeout-with-v2"),
        pytest.param({"spec.managedBy": "kueue.x-k8s.io/multikueue"}, id="managed-by-multikueue"),
        pytest.param({"metadata.labels": {"team": "ml"}, "spec.upgradeStrategy": {"type": "Recreate"}}, id="recreate"),
    ],
)
def test_accepted_raycluster_variations(changes: dict[str, Any]) -> None:
    assert validate(mutated("RayCluster", changes)) == []


def test_gated_fields_pass_with_their_gates() -> None:
    obj = mutated(
        "RayCluster",
        {
            "spec.networkPolicy": {"mode": "DenyAllEgress", "workerGroups": [{"groupName": "gpu-group"}]},
            "spec.tlsOptions": {"enabled": True},
            "spec.historyServerOptions": collector_options(*S3_ENV),
            "spec.gcsFaultToleranceOptions": {"backend": "rocksdb", "storage": {"size": "1Gi"}},
        },
    )
    gates = {
        "RayClusterNetworkPolicy": True,
        "RayClusterMTLS": True,
        "RayClusterHistoryServer": True,
        "GCSFaultToleranceEmbeddedStorage": True,
    }
    assert validate(obj, features=gates) == []


# --- Several errors at once ----------------------------------------------------------------------------------------


def test_every_error_is_reported_not_just_the_first() -> None:
    obj = mutated(
        "RayCluster",
        {
            "metadata.name": "x" * 60,
            f"{HEAD}.template.spec.containers": [],
            f"{W0}.minReplicas": 7,
            f"{W1}.groupName": "small-group",
            "spec.networkPolicy": {},
        },
    )
    errors = validate(obj)
    assert [e.path for e in errors] == [
        "metadata.name",
        f"{HEAD}.template.spec.containers",
        f"{W0}.minReplicas",
        W1,
        "spec.networkPolicy",
    ]
    assert errors[2].message == "worker group small-group has minReplicas 7 greater than maxReplicas 5"


# --- Garbage input -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param(
            {f"{W0}.replicas": "3"},
            FieldError(f"{W0}.replicas", "must be of type integer, not string"),
            id="string-replicas",
        ),
        pytest.param(
            {"spec.workerGroupSpecs": {"small-group": {}}},
            FieldError("spec.workerGroupSpecs", "must be of type array, not object"),
            id="groups-as-a-dict",
        ),
        pytest.param(
            {"spec.workerGroupSpecs[1]": "gpu-group"},
            FieldError(W1, "must be of type object, not string"),
            id="group-as-a-string",
        ),
        pytest.param(
            {"spec.headGroupSpec": ["head"]},
            FieldError(HEAD, "must be of type object, not array"),
            id="head-as-a-list",
        ),
        pytest.param(
            {f"{HEAD}.rayStartParams": {"num-cpus": 1}},
            FieldError(f"{HEAD}.rayStartParams[num-cpus]", "must be of type string, not integer"),
            id="unquoted-ray-start-param",
        ),
        pytest.param(
            {f"{HEAD_CONTAINER}.env": "RAY_REDIS_ADDRESS=x"},
            FieldError(f"{HEAD_CONTAINER}.env", "must be of type array, not string"),
            id="env-as-a-string",
        ),
        pytest.param(
            {"spec.enableInTreeAutoscaling": "yes"},
            FieldError("spec.enableInTreeAutoscaling", "must be of type boolean, not string"),
            id="string-bool",
        ),
        pytest.param(
            {"metadata": ["raycluster-sample"]},
            FieldError("metadata", "must be of type object, not array"),
            id="metadata-as-a-list",
        ),
        pytest.param(
            {"spec.autoscalerOptions": {"version": "v3"}},
            FieldError("spec.autoscalerOptions.version", 'Unsupported value: "v3": supported values: "v1", "v2"'),
            id="enum",
        ),
    ],
)
def test_wrongly_typed_fields_give_errors(changes: dict[str, Any], expected: FieldError) -> None:
    assert expected in validate(mutated("RayCluster", changes))


# --- Pieces the controllers reuse ----------------------------------------------------------------------------------


def test_cluster_spec_validator_takes_a_path_and_a_message_prefix() -> None:
    spec = cluster_spec()
    spec["workerGroupSpecs"][0]["maxReplicas"] = -1
    errors = validate_raycluster_spec(spec, path="spec.template", message_prefix="P: ")
    assert errors == [
        FieldError(
            "spec.template.workerGroupSpecs[0].maxReplicas", "P: worker group small-group has negative maxReplicas -1"
        ),
        FieldError(
            "spec.template.workerGroupSpecs[0].minReplicas",
            "P: worker group small-group has minReplicas 1 greater than maxReplicas -1",
        ),
    ]


def test_upgrade_strategy_check_for_a_cluster_template() -> None:
    spec = {**cluster_spec(), "upgradeStrategy": {"type": "Recreate"}}
    errors = validate_raycluster_upgrade_strategy(spec, labels={"ray.io/originated-from-crd": "RayService"})
    assert errors == [
        FieldError(
            "spec.upgradeStrategy.type", "upgradeStrategy cannot be set when RayCluster is created by RayService"
        )
    ]


def test_a_backend_setting_from_a_secret_counts_as_set() -> None:
    """validateCollectorOptions: a storage setting is set with a value or a valueFrom (STORAGE_BACKEND itself must
    be a literal)."""
    bucket = {"name": "GCS_BUCKET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "bucket"}}}
    options = collector_options({"name": "STORAGE_BACKEND", "value": "GCS"}, bucket)
    assert validate(mutated("RayCluster", {"spec.historyServerOptions": options}), features=HISTORY) == []

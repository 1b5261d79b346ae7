"""KubeRay's validation rules, checked as a table of invalid custom resources and their exact (path, message) pairs."""

from __future__ import annotations

import copy
import itertools
import re
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raykube.api.validation import (
    FieldError,
    parse_ray_version,
    ray_version_at_least,
    validate,
    validate_raycluster,
    validate_raycluster_spec,
    validate_raycluster_upgrade_strategy,
    validate_raycronjob,
    validate_rayjob,
    validate_rayservice,
    validate_update,
)
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"
RAY_KINDS = ("RayCluster", "RayJob", "RayService", "RayCronJob")
CRON_ON = {"RayCronJob": True}

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


# --- Valid minimal custom resources --------------------------------------------------------------------------------


def cluster_spec() -> dict[str, Any]:
    """A valid RayCluster spec: a head and two worker groups."""
    return {
        "rayVersion": "2.52.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "small-group",
                "replicas": 1,
                "minReplicas": 1,
                "maxReplicas": 5,
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}},
            },
            {
                "groupName": "gpu-group",
                "replicas": 0,
                "minReplicas": 0,
                "maxReplicas": 2,
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}},
            },
        ],
    }


def raycluster() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "raycluster-sample", "namespace": "default"},
        "spec": cluster_spec(),
    }


def rayjob() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rayjob-sample", "namespace": "default"},
        "spec": {"entrypoint": "python /home/ray/samples/sample_code.py", "rayClusterSpec": cluster_spec()},
    }


def rayservice() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "rayservice-sample", "namespace": "default"},
        "spec": {
            "serveConfigV2": "applications:\n  - name: app\n    import_path: app:deployment\n",
            "rayClusterConfig": cluster_spec(),
        },
    }


def raycronjob() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "raycronjob-sample", "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "entrypoint": "python /home/ray/samples/sample_code.py",
                "shutdownAfterJobFinishes": True,
                "rayClusterSpec": cluster_spec(),
            },
        },
    }


BASES = {"RayCluster": raycluster, "RayJob": rayjob, "RayService": rayservice, "RayCronJob": raycronjob}
DELETE = object()
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def mutated(kind: str, changes: dict[str, Any]) -> dict[str, Any]:
    """The valid base of ``kind`` with each ``path: value`` of ``changes`` applied (``DELETE`` removes the key)."""
    obj = BASES[kind]()
    for path, value in changes.items():
        keys: list[str | int] = [name if name else int(index) for name, index in _TOKEN.findall(path)]
        target: Any = obj
        for key, following in itertools.pairwise(keys):
            if isinstance(key, str) and key not in target:
                target[key] = [] if isinstance(following, int) else {}
            target = target[key]
        last = keys[-1]
        if value is DELETE:
            del target[last]
        else:
            target[last] = copy.deepcopy(value)
    return obj


HEAD = "spec.headGroupSpec"
HEAD_CONTAINER = "spec.headGroupSpec.template.spec.containers[0]"
W0 = "spec.workerGroupSpecs[0]"
W1 = "spec.workerGroupSpecs[1]"
JOB_CLUSTER = "spec.rayClusterSpec"
SVC_CLUSTER = "spec.rayClusterConfig"
RULE = {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}
AUTOSCALING_V2 = {"spec.enableInTreeAutoscaling": True, "spec.autoscalerOptions": {"version": "v2"}}
INCREMENTAL = {"type": "NewClusterWithIncrementalUpgrade"}
UPGRADE_OPTIONS = {"gatewayClassName": "istio", "stepSizePercent": 10, "intervalSeconds": 30}
SUSPENDED_CONDITIONS = [
    {"type": "RayClusterSuspending", "status": "True"},
    {"type": "RayClusterSuspended", "status": "True"},
]


# --- The table -----------------------------------------------------------------------------------------------------
# (id, kind, changes to the valid base, feature gates, every (path, message) expected)

CASES: list[tuple[str, str, dict[str, Any], dict[str, bool] | None, list[tuple[str, str]]]] = [
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
    # RayJob
    (
        "rayjob-name-too-long",
        "RayJob",
        {"metadata.name": "j" * 48},
        None,
        [("metadata.name", "The RayJob metadata is invalid: RayJob name should be no more than 47 characters")],
    ),
    (
        "rayjob-suspend-without-shutdown",
        "RayJob",
        {"spec.suspend": True},
        None,
        [
            (
                "spec.suspend",
                "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be "
                "suspended",
            )
        ],
    ),
    (
        "rayjob-ttl-without-shutdown",
        "RayJob",
        {"spec.ttlSecondsAfterFinished": 10},
        None,
        [
            (
                "spec.ttlSecondsAfterFinished",
                "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot have "
                "TTLSecondsAfterFinished",
            )
        ],
    ),
    (
        "rayjob-without-cluster-spec-or-selector",
        "RayJob",
        {"spec.rayClusterSpec": DELETE},
        None,
        [("spec.rayClusterSpec", "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set")],
    ),
    (
        "rayjob-selector-with-suspend",
        "RayJob",
        {
            "spec.rayClusterSpec": DELETE,
            "spec.clusterSelector": {"ray.io/cluster": "shared"},
            "spec.shutdownAfterJobFinishes": True,
            "spec.suspend": True,
        },
        None,
        [
            (
                "spec.suspend",
                "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation",
            )
        ],
    ),
    (
        "rayjob-selector-in-sidecar-mode",
        "RayJob",
        {
            "spec.rayClusterSpec": DELETE,
            "spec.clusterSelector": {"ray.io/cluster": "shared"},
            "spec.submissionMode": "SidecarMode",
        },
        None,
        [("spec.submissionMode", "ClusterSelector is not supported in SidecarMode")],
    ),
    (
        "rayjob-selector-with-backoff-limit",
        "RayJob",
        {"spec.rayClusterSpec": DELETE, "spec.clusterSelector": {"ray.io/cluster": "shared"}, "spec.backoffLimit": 2},
        None,
        [("spec.backoffLimit", "The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode")],
    ),
    (
        "rayjob-selector-without-cluster-name",
        "RayJob",
        {"spec.rayClusterSpec": DELETE, "spec.clusterSelector": {"team": "a"}},
        None,
        [("spec.clusterSelector[ray.io/cluster]", "cluster name in ClusterSelector should not be empty")],
    ),
    (
        "rayjob-interactive-with-backoff-limit",
        "RayJob",
        {"spec.submissionMode": "InteractiveMode", "spec.backoffLimit": 1},
        None,
        [("spec.backoffLimit", "The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode")],
    ),
    (
        "rayjob-sidecar-with-submitter-template",
        "RayJob",
        {"spec.submissionMode": "SidecarMode", "spec.submitterPodTemplate": {"spec": {"containers": []}}},
        None,
        [("spec.submitterPodTemplate", "Currently, SidecarMode doesn't support SubmitterPodTemplate")],
    ),
    (
        "rayjob-sidecar-head-restart-policy",
        "RayJob",
        {"spec.submissionMode": "SidecarMode", f"{JOB_CLUSTER}.headGroupSpec.template.spec.restartPolicy": "Always"},
        None,
        [
            (
                f"{JOB_CLUSTER}.headGroupSpec.template.spec.restartPolicy",
                "restartPolicy for head Pod should be Never or unset when using SidecarMode",
            )
        ],
    ),
    (
        "rayjob-unknown-submission-mode",
        "RayJob",
        {"spec.submissionMode": "BatchMode"},
        None,
        [
            (
                "spec.submissionMode",
                'Unsupported value: "BatchMode": supported values: "K8sJobMode", "HTTPMode", "InteractiveMode", '
                '"SidecarMode"',
            )
        ],
    ),
    (
        "rayjob-cluster-spec-error-is-prefixed",
        "RayJob",
        {f"{JOB_CLUSTER}.workerGroupSpecs[1].minReplicas": 5, f"{JOB_CLUSTER}.workerGroupSpecs[1].maxReplicas": 2},
        None,
        [
            (
                f"{JOB_CLUSTER}.workerGroupSpecs[1].minReplicas",
                "The RayJob spec is invalid: worker group gpu-group has minReplicas 5 greater than maxReplicas 2",
            )
        ],
    ),
    (
        "rayjob-k8s-token-auth",
        "RayJob",
        {
            f"{JOB_CLUSTER}.authOptions": {"mode": "token", "enableK8sTokenAuth": True},
            f"{JOB_CLUSTER}.rayVersion": "2.55.0",
        },
        None,
        [
            (
                f"{JOB_CLUSTER}.authOptions.enableK8sTokenAuth",
                "The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob",
            )
        ],
    ),
    (
        "rayjob-deletion-rules-with-shutdown",
        "RayJob",
        {"spec.shutdownAfterJobFinishes": True, "spec.deletionStrategy": {"deletionRules": [RULE]}},
        None,
        [
            (
                "spec.deletionStrategy.deletionRules",
                "The RayJob spec is invalid: spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are "
                "mutually exclusive",
            )
        ],
    ),
    (
        "rayjob-legacy-and-rules",
        "RayJob",
        {
            "spec.deletionStrategy": {
                "onSuccess": {"policy": "DeleteCluster"},
                "onFailure": {"policy": "DeleteCluster"},
                "deletionRules": [RULE],
            }
        },
        None,
        [
            (
                "spec.deletionStrategy",
                "The RayJob spec is invalid: Cannot use both legacy onSuccess/onFailure fields and deletionRules "
                "simultaneously",
            )
        ],
    ),
    (
        "rayjob-legacy-needs-both",
        "RayJob",
        {"spec.deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}}},
        None,
        [
            (
                "spec.deletionStrategy",
                "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy "
                "deletion policy fields of DeletionStrategy",
            )
        ],
    ),
    (
        "rayjob-legacy-delete-none-with-shutdown",
        "RayJob",
        {
            "spec.shutdownAfterJobFinishes": True,
            "spec.deletionStrategy": {"onSuccess": {"policy": "DeleteNone"}, "onFailure": {"policy": "DeleteCluster"}},
        },
        None,
        [
            (
                "spec.deletionStrategy.onSuccess.policy",
                "The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while deletion policy is "
                "'DeleteNone'",
            )
        ],
    ),
    (
        "rayjob-duplicate-deletion-rules",
        "RayJob",
        {"spec.deletionStrategy": {"deletionRules": [RULE, RULE]}},
        None,
        [
            (
                "spec.deletionStrategy.deletionRules[1]",
                "deletionRules[1]: duplicate rule for DeletionPolicyType 'DeleteCluster' and JobStatus 'SUCCEEDED'",
            )
        ],
    ),
    (
        "rayjob-delete-workers-with-autoscaling",
        "RayJob",
        {
            f"{JOB_CLUSTER}.enableInTreeAutoscaling": True,
            "spec.deletionStrategy": {
                "deletionRules": [{"policy": "DeleteWorkers", "condition": {"jobStatus": "FAILED"}}]
            },
        },
        None,
        [
            (
                "spec.deletionStrategy.deletionRules[0].policy",
                "deletionRules[0]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled",
            )
        ],
    ),
    (
        "rayjob-delete-cluster-with-selector",
        "RayJob",
        {
            "spec.rayClusterSpec": DELETE,
            "spec.clusterSelector": {"ray.io/cluster": "shared"},
            "spec.deletionStrategy": {"deletionRules": [RULE]},
        },
        None,
        [
            (
                "spec.deletionStrategy.deletionRules[0].policy",
                "deletionRules[0]: DeletionPolicyType 'DeleteCluster' not supported when ClusterSelector is set",
            )
        ],
    ),
    (
        "rayjob-deletion-ttls-out-of-order",
        "RayJob",
        {
            "spec.deletionStrategy": {
                "deletionRules": [
                    {"policy": "DeleteWorkers", "condition": {"jobStatus": "FAILED", "ttlSeconds": 60}},
                    {"policy": "DeleteCluster", "condition": {"jobStatus": "FAILED", "ttlSeconds": 30}},
                ]
            }
        },
        None,
        [
            (
                "spec.deletionStrategy.deletionRules",
                "for JobStatus 'FAILED': DeleteCluster TTL (30) must be >= DeleteWorkers TTL (60)",
            )
        ],
    ),
    (
        "rayjob-deletion-condition-with-both-statuses",
        "RayJob",
        {
            "spec.deletionStrategy": {
                "deletionRules": [
                    {"policy": "DeleteSelf", "condition": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed"}}
                ]
            }
        },
        None,
        [
            (
                "spec.deletionStrategy.deletionRules[0].condition",
                "deletionRules[0]: cannot set both JobStatus and JobDeploymentStatus at the same time",
            )
        ],
    ),
    (
        "rayjob-deletion-strategy-needs-gate",
        "RayJob",
        {"spec.deletionStrategy": {"deletionRules": [RULE]}},
        {"RayJobDeletionPolicy": False},
        [("spec.deletionStrategy", "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy")],
    ),
    (
        "rayjob-negative-backoff-limit",
        "RayJob",
        {"spec.backoffLimit": -1},
        None,
        [("spec.backoffLimit", "The RayJob spec is invalid: backoffLimit must be a positive integer")],
    ),
    (
        "rayjob-zero-active-deadline",
        "RayJob",
        {"spec.activeDeadlineSeconds": 0},
        None,
        [
            (
                "spec.activeDeadlineSeconds",
                "The RayJob spec is invalid: activeDeadlineSeconds must be a positive integer",
            )
        ],
    ),
    (
        "rayjob-runtime-env-not-a-mapping",
        "RayJob",
        {"spec.runtimeEnvYAML": "- pip\n- conda"},
        None,
        [
            (
                "spec.runtimeEnvYAML",
                "failed to unmarshal RuntimeEnvYAML: - pip\n- conda: json: cannot unmarshal array into Go value of "
                "type map[string]interface {}",
            )
        ],
    ),
    (
        "rayjob-waiting-outside-interactive-mode",
        "RayJob",
        {"status.jobDeploymentStatus": "Waiting"},
        None,
        [
            (
                "status.jobDeploymentStatus",
                "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not "
                "InteractiveMode",
            )
        ],
    ),
    # RayService
    (
        "rayservice-name-too-long",
        "RayService",
        {"metadata.name": "s" * 48},
        None,
        [("metadata.name", "The RayService metadata is invalid: RayService name should be no more than 47 characters")],
    ),
    (
        "rayservice-head-service-name",
        "RayService",
        {f"{SVC_CLUSTER}.headGroupSpec.headService": {"metadata": {"name": "my-head"}}},
        None,
        [
            (
                f"{SVC_CLUSTER}.headGroupSpec.headService.metadata.name",
                "The RayService spec is invalid: spec.rayClusterConfig.headGroupSpec.headService.metadata.name should "
                "not be set",
            )
        ],
    ),
    (
        "rayservice-cluster-config-error-is-prefixed",
        "RayService",
        {f"{SVC_CLUSTER}.headGroupSpec.template.spec.containers": []},
        None,
        [
            (
                f"{SVC_CLUSTER}.headGroupSpec.template.spec.containers",
                "The RayService spec is invalid: headGroupSpec should have at least one container",
            )
        ],
    ),
    (
        "rayservice-cluster-config-missing",
        "RayService",
        {"spec.rayClusterConfig": DELETE},
        None,
        [("spec.rayClusterConfig", "Required value")],
    ),
    (
        "rayservice-unknown-upgrade-type",
        "RayService",
        {"spec.upgradeStrategy": {"type": "Rolling"}},
        None,
        [
            (
                "spec.upgradeStrategy.type",
                "The RayService spec is invalid: Spec.UpgradeStrategy.Type value Rolling is invalid, valid options are "
                "NewClusterWithIncrementalUpgrade, NewCluster, or None",
            )
        ],
    ),
    (
        "rayservice-negative-deletion-delay",
        "RayService",
        {"spec.rayClusterDeletionDelaySeconds": -1},
        None,
        [
            (
                "spec.rayClusterDeletionDelaySeconds",
                "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, "
                "got -1",
            )
        ],
    ),
    (
        "rayservice-incremental-upgrade-without-autoscaling",
        "RayService",
        {"spec.upgradeStrategy": {**INCREMENTAL, "clusterUpgradeOptions": UPGRADE_OPTIONS}},
        None,
        [
            (
                f"{SVC_CLUSTER}.enableInTreeAutoscaling",
                "The RayService spec is invalid: Ray Autoscaler is required for NewClusterWithIncrementalUpgrade",
            )
        ],
    ),
    (
        "rayservice-incremental-upgrade-without-options",
        "RayService",
        {f"{SVC_CLUSTER}.enableInTreeAutoscaling": True, "spec.upgradeStrategy": INCREMENTAL},
        None,
        [
            (
                "spec.upgradeStrategy.clusterUpgradeOptions",
                "The RayService spec is invalid: ClusterUpgradeOptions are required for "
                "NewClusterWithIncrementalUpgrade",
            )
        ],
    ),
    (
        "rayservice-incremental-step-above-surge",
        "RayService",
        {
            f"{SVC_CLUSTER}.enableInTreeAutoscaling": True,
            "spec.upgradeStrategy": {
                **INCREMENTAL,
                "clusterUpgradeOptions": {**UPGRADE_OPTIONS, "maxSurgePercent": 10, "stepSizePercent": 20},
            },
        },
        None,
        [
            (
                "spec.upgradeStrategy.clusterUpgradeOptions.stepSizePercent",
                "The RayService spec is invalid: stepSizePercent must be less than or equal to maxSurgePercent",
            )
        ],
    ),
    (
        "rayservice-initializing-timeout-not-positive",
        "RayService",
        {"metadata.annotations": {"ray.io/initializing-timeout": "0s"}},
        None,
        [
            (
                "metadata.annotations[ray.io/initializing-timeout]",
                "The RayService metadata is invalid: RayService annotations is invalid: annotation "
                "ray.io/initializing-timeout must be a positive duration, got: 0s",
            )
        ],
    ),
    (
        "rayservice-initializing-timeout-unparsable",
        "RayService",
        {"metadata.annotations": {"ray.io/initializing-timeout": "soon"}},
        None,
        [
            (
                "metadata.annotations[ray.io/initializing-timeout]",
                "The RayService metadata is invalid: RayService annotations is invalid: annotation "
                "ray.io/initializing-timeout has invalid format: soon. Expected Go duration format (e.g., '5m', '1h') "
                "or positive integer seconds",
            )
        ],
    ),
    # RayCronJob
    (
        "raycronjob-needs-gate",
        "RayCronJob",
        {},
        None,
        [("kind", "RayCronJob requires the RayCronJob feature gate to be enabled")],
    ),
    (
        "raycronjob-name-too-long",
        "RayCronJob",
        {"metadata.name": "c" * 37},
        CRON_ON,
        [("metadata.name", "RayCronJob name should be no more than 36 characters")],
    ),
    (
        "raycronjob-schedule-with-time-zone",
        "RayCronJob",
        {"spec.schedule": "CRON_TZ=UTC 0 * * * *"},
        CRON_ON,
        [("spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")],
    ),
    (
        "raycronjob-minute-out-of-range",
        "RayCronJob",
        {"spec.schedule": "61 * * * *"},
        CRON_ON,
        [("spec.schedule", "invalid cron schedule: end of range (61) above maximum (59): 61")],
    ),
    (
        "raycronjob-four-fields",
        "RayCronJob",
        {"spec.schedule": "* * * *"},
        CRON_ON,
        [("spec.schedule", "invalid cron schedule: expected exactly 5 fields, found 4: [* * * *]")],
    ),
    (
        "raycronjob-empty-time-zone",
        "RayCronJob",
        {"spec.timeZone": ""},
        CRON_ON,
        [
            (
                "spec.timeZone",
                "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator",
            )
        ],
    ),
    (
        "raycronjob-unknown-time-zone",
        "RayCronJob",
        {"spec.timeZone": "Mars/Olympus_Mons"},
        CRON_ON,
        [("spec.timeZone", "invalid time zone: unknown time zone Mars/Olympus_Mons")],
    ),
    (
        "raycronjob-job-template-error-is-prefixed",
        "RayCronJob",
        {"spec.jobTemplate.shutdownAfterJobFinishes": False, "spec.jobTemplate.suspend": True},
        CRON_ON,
        [
            (
                "spec.jobTemplate.suspend",
                "invalid RayJob template: The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to "
                "false is not allowed to be suspended",
            )
        ],
    ),
    (
        "raycronjob-cluster-error-is-prefixed-twice",
        "RayCronJob",
        {
            "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[1].minReplicas": 5,
            "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[1].maxReplicas": 2,
        },
        CRON_ON,
        [
            (
                "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[1].minReplicas",
                "invalid RayJob template: The RayJob spec is invalid: worker group gpu-group has minReplicas 5 greater "
                "than maxReplicas 2",
            )
        ],
    ),
]


@pytest.mark.parametrize(
    ("kind", "changes", "features", "expected"),
    [pytest.param(kind, changes, features, expected, id=name) for name, kind, changes, features, expected in CASES],
)
def test_invalid_spec_gives_kuberays_error(
    kind: str, changes: dict[str, Any], features: dict[str, bool] | None, expected: list[tuple[str, str]]
) -> None:
    obj = mutated(kind, changes)
    assert validate(obj, features=features) == [FieldError(path, message) for path, message in expected]


def test_the_table_is_large_and_its_ids_unique() -> None:
    names = [name for name, *_ in CASES]
    assert len(names) >= 40
    assert len(set(names)) == len(names)


# --- Valid input gives no errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", RAY_KINDS)
def test_valid_bases_give_no_errors(kind: str) -> None:
    assert validate(BASES[kind](), features=CRON_ON) == []


def _sample_documents() -> list[Any]:
    params = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        with path.open() as stream:
            for index, document in enumerate(yaml.safe_load_all(stream)):
                if isinstance(document, dict) and document.get("kind") in RAY_KINDS:
                    params.append(pytest.param(document, id=f"{path.name}#{index}"))
    return params


SAMPLE_DOCUMENTS = _sample_documents()


@pytest.mark.skipif(not SAMPLE_DOCUMENTS, reason=f"no KubeRay samples at {SAMPLES}")
@pytest.mark.parametrize("document", SAMPLE_DOCUMENTS)
def test_kuberay_samples_give_no_errors(document: dict[str, Any]) -> None:
    assert validate(document, features=CRON_ON) == []


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
            "spec.historyServerOptions": {"collectorOptions": {"image": "collector:latest"}},
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


def test_rayjob_reports_its_own_and_its_clusters_errors() -> None:
    obj = mutated(
        "RayJob",
        {"spec.suspend": True, "spec.backoffLimit": -2, f"{JOB_CLUSTER}.workerGroupSpecs[0].template.spec": {}},
    )
    assert validate(obj) == [
        FieldError(
            "spec.suspend",
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be "
            "suspended",
        ),
        FieldError(
            f"{JOB_CLUSTER}.workerGroupSpecs[0].template.spec.containers",
            "The RayJob spec is invalid: workerGroupSpec should have at least one container",
        ),
        FieldError("spec.backoffLimit", "The RayJob spec is invalid: backoffLimit must be a positive integer"),
    ]


# --- Garbage input -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param([1, 2], [FieldError("", "must be of type object, not array")], id="list"),
        pytest.param("RayCluster", [FieldError("", "must be of type object, not string")], id="string"),
        pytest.param(None, [FieldError("", "must be of type object, not null")], id="none"),
        pytest.param({}, [FieldError("kind", "Required value")], id="no-kind"),
        pytest.param(
            {"kind": "RayThing"},
            [
                FieldError(
                    "kind",
                    'Unsupported value: "RayThing": supported values: "RayCluster", "RayJob", "RayService", '
                    '"RayCronJob"',
                )
            ],
            id="unknown-kind",
        ),
        pytest.param({"kind": 7}, [FieldError("kind", "must be of type string, not integer")], id="kind-not-a-string"),
    ],
)
def test_garbage_objects_give_errors(obj: object, expected: list[FieldError]) -> None:
    assert validate(obj) == expected


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


def test_kind_specific_validators_check_the_kind() -> None:
    assert FieldError("kind", 'expected "RayJob", got "RayCluster"') in validate_rayjob(raycluster())
    assert validate_raycluster(raycluster()) == []
    assert validate_rayservice(rayservice()) == []
    assert validate_raycronjob(raycronjob(), features=CRON_ON) == []


def test_api_version_must_be_v1() -> None:
    obj = {**raycluster(), "apiVersion": "ray.io/v1alpha1"}
    assert validate(obj)[0] == FieldError(
        "apiVersion", 'Unsupported value: "ray.io/v1alpha1": supported values: "ray.io/v1"'
    )


def test_updates_keep_managed_by_and_gcs_backend() -> None:
    old = mutated("RayCluster", {"spec.managedBy": "ray.io/kuberay-operator", "spec.gcsFaultToleranceOptions": {}})
    new = copy.deepcopy(old)
    new["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    new["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb"}
    old["spec"]["gcsFaultToleranceOptions"] = {"backend": "redis"}
    assert validate_update(old, new) == [
        FieldError("spec.gcsFaultToleranceOptions.backend", "gcsFaultToleranceOptions.backend is immutable"),
        FieldError("spec.managedBy", "the managedBy field is immutable"),
    ]
    assert validate_update(old, old) == []


def test_field_error_prints_path_and_message() -> None:
    assert str(FieldError("spec.suspend", "bad")) == "spec.suspend: bad"
    assert str(FieldError("", "must be of type object, not array")) == "must be of type object, not array"


@pytest.mark.parametrize(
    ("version", "parsed"),
    [
        ("2.52.0", (2, 52, 0)),
        ("2.52", (2, 52)),
        ("2.52.0rc1", (2, 52, 0)),
        ("v2.53.1", (2, 53, 1)),
        ("2.9.3-py310", (2, 9, 3)),
        ("", None),
        ("2", None),
        ("latest", None),
        ("02.1.0", None),
    ],
)
def test_ray_versions_parse_like_kuberay(version: str, parsed: tuple[int, ...] | None) -> None:
    assert parse_ray_version(version) == parsed


@pytest.mark.parametrize(
    ("version", "minimum", "expected"),
    [
        ("2.52.0", "2.52.0", True),
        ("2.52", "2.52.0", True),
        ("2.52.0rc1", "2.52.0", True),
        ("2.51.9", "2.52.0", False),
        ("2.100.0", "2.53.0", True),
        (None, "2.53.0", False),
        ("nightly", "2.53.0", False),
    ],
)
def test_ray_version_at_least_treats_unknown_versions_as_old(version: str | None, minimum: str, expected: bool) -> None:
    assert ray_version_at_least(version, minimum) is expected


# --- Nothing ever raises -------------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
VALIDATORS = (validate, validate_raycluster, validate_rayjob, validate_rayservice, validate_raycronjob)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=JSON)
def test_arbitrary_json_never_raises(obj: object) -> None:
    for validator in VALIDATORS:
        assert all(isinstance(e, FieldError) for e in validator(obj, features=CRON_ON))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value, so that a replacement can land anywhere in a valid custom resource."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(RAY_KINDS), data=st.data())
def test_any_field_replaced_by_any_json_never_raises(kind: str, data: st.DataObject) -> None:
    obj = BASES[kind]()
    path = data.draw(st.sampled_from(_paths(obj)[1:]))
    target: Any = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = data.draw(JSON)
    errors = validate(obj, features=CRON_ON)
    assert all(isinstance(e, FieldError) and isinstance(e.path, str) for e in errors)

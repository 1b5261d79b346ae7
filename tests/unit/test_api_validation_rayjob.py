"""RayJob validation, checked as a table of invalid RayJobs and their exact (path, message) pairs."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api.validation import FieldError, validate
from tests.unit.validation_support import DELETE, Case, case_params, mutated

JOB_CLUSTER = "spec.rayClusterSpec"
RULE = {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED"}}


# --- The table -----------------------------------------------------------------------------------------------------
# (id, kind, changes to the valid base, feature gates, every (path, message) expected)

CASES: list[Case] = [
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
]


@pytest.mark.parametrize(("kind", "changes", "features", "expected"), case_params(CASES))
def test_invalid_spec_gives_kuberays_error(
    kind: str, changes: dict[str, Any], features: dict[str, bool] | None, expected: list[tuple[str, str]]
) -> None:
    obj = mutated(kind, changes)
    assert validate(obj, features=features) == [FieldError(path, message) for path, message in expected]


# --- Several errors at once ----------------------------------------------------------------------------------------


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

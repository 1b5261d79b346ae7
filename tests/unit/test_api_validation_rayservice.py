"""RayService validation, checked as a table of invalid RayServices and their exact (path, message) pairs."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.validation import FieldError, validate
from tests.unit.validation_support import DELETE, Case, case_params, mutated

SVC_CLUSTER = "spec.rayClusterConfig"
INCREMENTAL = {"type": "NewClusterWithIncrementalUpgrade"}
UPGRADE_OPTIONS = {"gatewayClassName": "istio", "stepSizePercent": 10, "intervalSeconds": 30}


# --- The table -----------------------------------------------------------------------------------------------------
# (id, kind, changes to the valid base, feature gates, every (path, message) expected)

# KubeRay v1.6.1: NewClusterWithIncrementalUpgrade needs the RayServiceIncrementalUpgrade gate (alpha, off).
INCREMENTAL_GATE = {c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE: True}

CASES: list[Case] = [
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
        INCREMENTAL_GATE,
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
        INCREMENTAL_GATE,
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
        INCREMENTAL_GATE,
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
]


@pytest.mark.parametrize(("kind", "changes", "features", "expected"), case_params(CASES))
def test_invalid_spec_gives_kuberays_error(
    kind: str, changes: dict[str, Any], features: dict[str, bool] | None, expected: list[tuple[str, str]]
) -> None:
    obj = mutated(kind, changes)
    assert validate(obj, features=features) == [FieldError(path, message) for path, message in expected]

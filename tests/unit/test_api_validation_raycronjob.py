"""RayCronJob validation, checked as a table of invalid RayCronJobs and their exact (path, message) pairs."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api.validation import FieldError, validate
from tests.unit.validation_support import CRON_ON, Case, case_params, mutated

# --- The table -----------------------------------------------------------------------------------------------------
# (id, kind, changes to the valid base, feature gates, every (path, message) expected)

CASES: list[Case] = [
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
        "raycronjob-schedule-prefix-and-time-zone",
        "RayCronJob",
        {"spec.schedule": "CRON_TZ=UTC 0 * * * *", "spec.timeZone": "UTC"},
        CRON_ON,
        [("spec.schedule", "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")],
    ),
    (
        "raycronjob-time-zone-bad-location",
        "RayCronJob",
        {"spec.timeZone": "Mars/Olympus_Mons"},
        CRON_ON,
        [("spec.timeZone", "invalid time zone: unknown time zone Mars/Olympus_Mons")],
    ),
    (
        # v1.7.0 refuses TZ= anywhere in the schedule (v1.6.1 accepted a TZ=/CRON_TZ= prefix).
        "raycronjob-schedule-tz-prefix",
        "RayCronJob",
        {"spec.schedule": "TZ=UTC 0 * * * *"},
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


@pytest.mark.parametrize(("kind", "changes", "features", "expected"), case_params(CASES))
def test_invalid_spec_gives_kuberays_error(
    kind: str, changes: dict[str, Any], features: dict[str, bool] | None, expected: list[tuple[str, str]]
) -> None:
    obj = mutated(kind, changes)
    assert validate(obj, features=features) == [FieldError(path, message) for path, message in expected]

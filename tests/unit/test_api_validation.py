"""KubeRay's validation across kinds: dispatch by ``kind``, valid objects and KubeRay's samples, garbage input,
updates, Ray versions, and that nothing ever raises.

Each kind's table of invalid objects and their exact (path, message) pairs is in ``test_api_validation_<kind>.py``;
:data:`CASES` joins them (``tests/integration/test_crds_on_sandbox.py`` also runs it on a live API server).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raykube.api import constants as c
from raykube.api.resources import KINDS
from raykube.api.validation import (
    VALIDATORS,
    FieldError,
    parse_ray_version,
    ray_version_at_least,
    validate,
    validate_raycluster,
    validate_raycronjob,
    validate_rayjob,
    validate_rayservice,
    validate_update,
    validator_for,
)
from tests.support import KUBERAY_V161
from tests.unit.test_api_validation_raycluster import CASES as RAYCLUSTER_CASES
from tests.unit.test_api_validation_raycronjob import CASES as RAYCRONJOB_CASES
from tests.unit.test_api_validation_rayjob import CASES as RAYJOB_CASES
from tests.unit.test_api_validation_rayservice import CASES as RAYSERVICE_CASES
from tests.unit.validation_support import (
    BASES,
    CRON_ON,
    RAY_KINDS,
    Case,
    mutated,
    raycluster,
    raycronjob,
    rayservice,
)

SAMPLES = KUBERAY_V161 / "samples"
CASES: list[Case] = [*RAYCLUSTER_CASES, *RAYJOB_CASES, *RAYSERVICE_CASES, *RAYCRONJOB_CASES]


# --- The whole table -----------------------------------------------------------------------------------------------


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


# --- Dispatch by kind ----------------------------------------------------------------------------------------------


KIND_VALIDATORS = {
    "RayCluster": validate_raycluster,
    "RayJob": validate_rayjob,
    "RayService": validate_rayservice,
    "RayCronJob": validate_raycronjob,
}


def test_the_table_of_validators_has_exactly_the_four_crd_kinds() -> None:
    assert list(VALIDATORS) == [c.KIND_RAYCLUSTER, c.KIND_RAYJOB, c.KIND_RAYSERVICE, c.KIND_RAYCRONJOB]
    assert set(VALIDATORS) == {kind.name for kind in KINDS}


@pytest.mark.parametrize("kind", RAY_KINDS)
def test_validate_dispatches_on_kind(kind: str) -> None:
    assert VALIDATORS[kind] is KIND_VALIDATORS[kind]
    assert validator_for(kind) is KIND_VALIDATORS[kind]
    obj = mutated(kind, {"metadata.name": "n" * 60})
    errors = validate(obj, features=CRON_ON)
    assert errors == KIND_VALIDATORS[kind](obj, features=CRON_ON)
    assert errors[0].path == "metadata.name"
    assert f"{kind} name should be no more than" in errors[0].message


def test_validate_reports_an_unknown_kind_by_name_and_validator_for_raises() -> None:
    [error] = validate({"apiVersion": "ray.io/v1", "kind": "RayThing"})
    assert error.path == "kind"
    assert '"RayThing"' in error.message
    with pytest.raises(ValueError, match="'RayThing'"):
        validator_for("RayThing")


# --- Pieces shared by every kind -----------------------------------------------------------------------------------


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
ENTRY_POINTS = (validate, *VALIDATORS.values())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=JSON)
def test_arbitrary_json_never_raises(obj: object) -> None:
    for validator in ENTRY_POINTS:
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

"""KubeRay's validation of RayCluster, RayJob, RayService and RayCronJob, as pure functions over plain dicts.

Every validator takes a custom resource exactly as read from the API server or from YAML (camelCase keys, Pod
templates as plain dicts) and returns a list of :class:`FieldError` naming *every* problem it finds, where KubeRay
stops at the first one. Input of any shape is accepted: a missing field is read as unset, a field of the wrong type is
reported, and nothing raises. Message texts are KubeRay's (users grep for them); where KubeRay has no message of its
own the text says so and names the field. ``features`` overrides the KubeRay feature-gate defaults in
:data:`raykube.api.constants.FEATURE_GATE_DEFAULTS`.

One module per kind, each with its rules listed in its docstring: :mod:`.raycluster` (its groups, GCS fault
tolerance and options checks in :mod:`.raycluster_groups`, :mod:`.raycluster_gcs`, :mod:`.raycluster_options`),
:mod:`.rayjob`, :mod:`.rayservice`, :mod:`.raycronjob`; :mod:`.common` holds :class:`FieldError`, the typed reads and
the name and version checks they share; :mod:`.update` the CEL transition rules (:func:`validate_update`).
:data:`VALIDATORS` maps each kind to its whole-object validator and :func:`validate` picks one by the object's
``kind``.

Sources. "validation.go" is KubeRay v1.6.1 ``ray-operator/controllers/ray/utils/validation.go`` (what the
controllers check before reconciling; its failures are the ``Invalid*`` events and the RayJob ``ValidationFailed``
state). "v1.7.0" marks a rule that file (or a CRD) has only from KubeRay v1.7.0 on: the networkPolicy, tlsOptions,
historyServerOptions and rocksdb rules among others, implemented ahead of the v1.6.1 objects raykube builds. "CRD"
is a constraint of the CRD schema (enums, ``required``, ``minimum``) or a CEL rule in it: the API server enforces
those at admission, and they are implemented here too so that a dump or a YAML file can be checked offline; their
messages follow the API server's ("Required value", ``Unsupported value: "x": supported values: ...``) or quote the
CEL message. "webhook" is KubeRay's optional validating webhook (``ray-operator/pkg/webhooks/v1``). "own" marks a
rule or a message KubeRay does not have.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Protocol

from raykube.api import constants as c
from raykube.api.validation.common import (
    _REQUIRED,
    FieldError,
    _Errors,
    _type_name,
    _unsupported,
    _View,
    parse_ray_version,
    ray_version_at_least,
)
from raykube.api.validation.raycluster import (
    validate_raycluster,
    validate_raycluster_metadata,
    validate_raycluster_spec,
    validate_raycluster_status,
    validate_raycluster_upgrade_strategy,
)
from raykube.api.validation.raycronjob import (
    validate_raycronjob,
    validate_raycronjob_metadata,
    validate_raycronjob_spec,
)
from raykube.api.validation.rayjob import (
    validate_rayjob,
    validate_rayjob_metadata,
    validate_rayjob_spec,
    validate_rayjob_status,
)
from raykube.api.validation.rayservice import (
    validate_rayservice,
    validate_rayservice_metadata,
    validate_rayservice_spec,
)
from raykube.api.validation.update import validate_update

__all__ = [
    "VALIDATORS",
    "FieldError",
    "Validator",
    "parse_ray_version",
    "ray_version_at_least",
    "validate",
    "validate_raycluster",
    "validate_raycluster_metadata",
    "validate_raycluster_spec",
    "validate_raycluster_status",
    "validate_raycluster_upgrade_strategy",
    "validate_raycronjob",
    "validate_raycronjob_metadata",
    "validate_raycronjob_spec",
    "validate_rayjob",
    "validate_rayjob_metadata",
    "validate_rayjob_spec",
    "validate_rayjob_status",
    "validate_rayservice",
    "validate_rayservice_metadata",
    "validate_rayservice_spec",
    "validate_update",
    "validator_for",
]


class Validator(Protocol):
    """A whole-object validator: :func:`validate_raycluster`, :func:`validate_rayjob` and the like."""

    def __call__(self, obj: object, /, *, features: Mapping[str, bool] | None = None) -> list[FieldError]: ...


# The whole-object validator of each ray.io kind, in the order the "kind" error lists them.
VALIDATORS: Final[Mapping[str, Validator]] = MappingProxyType(
    {
        c.KIND_RAYCLUSTER: validate_raycluster,
        c.KIND_RAYJOB: validate_rayjob,
        c.KIND_RAYSERVICE: validate_rayservice,
        c.KIND_RAYCRONJOB: validate_raycronjob,
    }
)


def validator_for(kind: str) -> Validator:
    """The validator of ``kind``; a ``ValueError`` naming it when it is not a ray.io kind (a caller's mistake).

    :func:`validate` instead reports an unknown ``kind`` as a :class:`FieldError`, since it is the input's mistake.
    """
    try:
        return VALIDATORS[kind]
    except KeyError:
        raise ValueError(f"no validator for kind {kind!r}: expected one of {', '.join(VALIDATORS)}") from None


def validate(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Validate any ``ray.io`` custom resource, chosen by its ``kind``."""
    errs = _Errors()
    if not isinstance(obj, Mapping):
        errs.schema("", f"must be of type object, not {_type_name(obj)}")
        return errs.items
    root = _View(errs, obj, "")
    kind = root.opt_text("kind")
    api_version = root.opt_text("apiVersion")
    if api_version is not None and api_version != c.API_VERSION:
        errs.schema("apiVersion", _unsupported(api_version, (c.API_VERSION,)))
    if root.raw("kind") is None:
        errs.schema("kind", _REQUIRED)
        return errs.items
    validator = VALIDATORS.get(kind) if kind is not None else None
    if validator is None:
        if kind is not None:
            errs.schema("kind", _unsupported(kind, tuple(VALIDATORS)))
        return errs.items
    return errs.items + validator(obj, features=features)

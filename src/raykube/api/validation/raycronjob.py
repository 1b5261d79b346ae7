"""RayCronJob validation: the feature gate, metadata and spec (with its RayJob ``jobTemplate``).

Mirrors ``ValidateRayCronJobSpec`` of KubeRay v1.7.0 ``ray-operator/controllers/ray/utils/validation.go`` (a name
short enough for its RayJobs' names, a ``schedule`` without ``TZ`` that robfig/cron's ``ParseStandard`` accepts, a
known ``timeZone``, and a ``jobTemplate`` that passes ``ValidateRayJobSpec``, its messages prefixed "invalid RayJob
template: "), plus the rules of the RayCronJob CRD and two of raykube's own. Tags as in :mod:`raykube.api.validation`.

* the kind needs the RayCronJob gate (own: KubeRay's controller is simply not started without it).
* the name is at most 36 characters (v1.7.0: each RayJob is ``<cron>-<Unix minute>``, a valid RayJob name of at
  most 47) and a DNS-1035 label (own); with ``generateName`` the length counts the 5 characters the API server
  appends.
* ``schedule`` (required, CRD) must not contain ``TZ`` at all (v1.7.0: "cannot use TZ or CRON_TZ in schedule, use
  timeZone field instead"; v1.6.1 accepted a ``TZ=<zone>``/``CRON_TZ=<zone>`` prefix, so a RayCronJob that used one
  is refused after the upgrade and must move the zone to ``timeZone``), and is a standard 5-field cron expression or
  descriptor (:mod:`raykube.api.cron`, robfig/cron's error texts).
* ``timeZone`` (v1.7.0) is non-empty and a known IANA zone. This is the one lookup outside the input in the
  validators: the zone is found in the system time-zone database through :mod:`zoneinfo`, as KubeRay looks it up in
  the copy embedded in its binary.
* ``jobTemplate`` (required, CRD) is a valid RayJob spec (:mod:`.rayjob`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Final

from raykube.api import constants as c
from raykube.api import cron
from raykube.api.validation.common import (
    _REQUIRED,
    FieldError,
    _check_name,
    _Errors,
    _gates,
    _read_metadata,
    _root,
    _View,
)
from raykube.api.validation.rayjob import _check_rayjob_spec

__all__ = ["validate_raycronjob", "validate_raycronjob_metadata", "validate_raycronjob_spec"]

_RAYCRONJOB_TEMPLATE_INVALID: Final = "invalid RayJob template: "


def _cron_error(schedule: str) -> str:
    """Why robfig/cron's ``ParseStandard`` rejects ``schedule`` (its own error text), or ``""``."""
    try:
        cron.parse(schedule)
    except cron.CronError as error:
        return str(error)
    return ""


@functools.lru_cache(maxsize=256)
def _time_zone_error(name: str) -> str:
    """Why Go's ``time.LoadLocation`` rejects ``name``, or ``""``."""
    try:
        cron.load_location(name)
    except cron.CronError as error:
        return str(error)
    return ""


# --------------------------------------------------------------------------------------------------------------------
# RayCronJob
# --------------------------------------------------------------------------------------------------------------------


def validate_raycronjob_metadata(metadata: object, *, path: str = "metadata") -> list[FieldError]:
    """RayCronJob name rules: KubeRay's length limit, plus DNS-1035 syntax (own message)."""
    errs = _Errors()
    view, _, _ = _read_metadata(errs, metadata, path)
    _check_name(errs, view, kind=c.KIND_RAYCRONJOB, limit=c.MAX_RAYCRONJOB_NAME_LENGTH, prefix="")
    return errs.items


def _check_raycronjob_spec(errs: _Errors, spec_value: object, *, gates: Mapping[str, bool], path: str) -> None:
    spec = _View.of(errs, spec_value, path)
    spec.flag("suspend")
    schedule = spec.opt_text("schedule")
    if spec.present and not spec.has("schedule"):
        errs.schema(spec.at("schedule"), _REQUIRED)
    elif schedule is not None:
        if "TZ" in schedule:
            errs.kuberay(spec.at("schedule"), "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
        else:
            reason = _cron_error(schedule)
            if reason:
                errs.kuberay(spec.at("schedule"), f"invalid cron schedule: {reason}")
    time_zone = spec.opt_text("timeZone")
    if time_zone is not None:
        if time_zone == "":
            errs.kuberay(
                spec.at("timeZone"),
                "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator",
            )
        else:
            reason = _time_zone_error(time_zone)
            if reason:
                errs.kuberay(spec.at("timeZone"), f"invalid time zone: {reason}")
    if spec.present and not spec.has("jobTemplate"):
        errs.schema(spec.at("jobTemplate"), _REQUIRED)
    elif spec.has("jobTemplate"):
        _check_rayjob_spec(
            errs.wrapped(_RAYCRONJOB_TEMPLATE_INVALID),
            spec.raw("jobTemplate"),
            annotations={},
            annotations_path=spec.at("jobTemplate"),
            gates=gates,
            path=spec.at("jobTemplate"),
        )


def validate_raycronjob_spec(
    spec: object, *, features: Mapping[str, bool] | None = None, path: str = "spec", message_prefix: str = ""
) -> list[FieldError]:
    """The RayCronJob spec rules (``ValidateRayCronJobSpec``), including its ``jobTemplate``."""
    errs = _Errors()
    _check_raycronjob_spec(errs.wrapped(message_prefix), spec, gates=_gates(features), path=path)
    return errs.items


def validate_raycronjob(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule for a whole RayCronJob: the feature gate, metadata and spec (with its RayJob template)."""
    errs = _Errors()
    root = _root(errs, obj, c.KIND_RAYCRONJOB)
    if root is None:
        return errs.items
    gates = _gates(features)
    if not gates.get(c.GATE_RAY_CRON_JOB, False):
        errs.schema("kind", f"RayCronJob requires the {c.GATE_RAY_CRON_JOB} feature gate to be enabled")
    metadata, _, _ = _read_metadata(errs, root.raw("metadata"), "metadata")
    _check_name(errs, metadata, kind=c.KIND_RAYCRONJOB, limit=c.MAX_RAYCRONJOB_NAME_LENGTH, prefix="")
    spec_value = root.raw("spec")
    _check_raycronjob_spec(errs, {} if spec_value is None else spec_value, gates=gates, path="spec")
    return errs.items

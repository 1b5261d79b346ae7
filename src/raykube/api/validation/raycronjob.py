"""RayCronJob validation: the feature gate, metadata and spec (with its RayJob ``jobTemplate``).

Mirrors ``ValidateRayCronJobSpec`` of KubeRay v1.6.1 ``ray-operator/controllers/ray/utils/validation.go`` (a
``schedule`` robfig/cron's ``ParseStandard`` accepts, and a ``jobTemplate`` that passes ``ValidateRayJobSpec``, its
messages prefixed "invalid RayJob template: "), plus the rules of the RayCronJob CRD and those KubeRay v1.7.0 added
to ``ValidateRayCronJobSpec`` (marked v1.7.0). Tags as in :mod:`raykube.api.validation`.

* the kind needs the RayCronJob gate (own: KubeRay's controller is simply not started without it).
* the name is at most 36 characters (v1.7.0, so the child RayJob ``<cron>-<minutes>`` stays valid) and a DNS-1035
  label (own message: KubeRay does not check, but the child RayJob's name must be one); with ``generateName`` the
  length counts the 5 characters the API server appends (own).
* ``schedule`` (required, CRD) does not contain ``TZ`` (v1.7.0) and is a standard 5-field cron expression or
  descriptor, with robfig/cron's error texts.
* ``timeZone`` is non-empty and a known IANA zone (v1.7.0). This is the one lookup outside the input in the
  validators: the zone is found in the system time-zone database through :mod:`zoneinfo`, as KubeRay looks it up in
  the copy embedded in its binary.
* ``jobTemplate`` (required, CRD) is a valid RayJob spec (:mod:`.rayjob`).
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from collections.abc import Mapping
from typing import Final

from raykube.api import constants as c
from raykube.api.validation.common import (
    _REQUIRED,
    FieldError,
    _check_name,
    _Errors,
    _gates,
    _go_atoi,
    _go_list,
    _go_parse_duration,
    _Invalid,
    _read_metadata,
    _root,
    _View,
)
from raykube.api.validation.rayjob import _check_rayjob_spec

__all__ = ["validate_raycronjob", "validate_raycronjob_metadata", "validate_raycronjob_spec"]

_RAYCRONJOB_TEMPLATE_INVALID: Final = "invalid RayJob template: "


# --------------------------------------------------------------------------------------------------------------------
# robfig/cron schedules and Go time zones
# --------------------------------------------------------------------------------------------------------------------

_MONTH_NAMES: Final = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug"])} | {
    m: i + 9 for i, m in enumerate(["sep", "oct", "nov", "dec"])
}
_DOW_NAMES: Final = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# minute, hour, day of month, month, day of week (robfig/cron v3 bounds)
_CRON_FIELDS: Final[tuple[tuple[int, int, Mapping[str, int]], ...]] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTH_NAMES),
    (0, 6, _DOW_NAMES),
)
# Go's unicode.IsSpace, which strings.Fields splits on: Python's \s less the separators U+001C..U+001F.
_GO_SPACE_RE: Final = re.compile(r"(?:(?![\x1c-\x1f])\s)+")
_CRON_DESCRIPTORS: Final = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def _cron_number(text: str, names: Mapping[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    try:
        number = _go_atoi(text)
    except _Invalid as error:
        raise _Invalid(f"failed to parse int from {text}: {error}") from None
    if number < 0:
        raise _Invalid(f"negative number ({number}) not allowed: {text}")
    return number


def _check_cron_range(expr: str, low: int, high: int, names: Mapping[str, int]) -> None:
    """One comma-separated part of a cron field (``a``, ``a-b``, ``*``, each with an optional ``/step``)."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _cron_number(low_and_high[0], names)
        if len(low_and_high) > 2:
            raise _Invalid(f"too many hyphens: {expr}")
        end = _cron_number(low_and_high[1], names) if len(low_and_high) == 2 else start
    if len(range_and_step) > 2:
        raise _Invalid(f"too many slashes: {expr}")
    step = _cron_number(range_and_step[1], {}) if len(range_and_step) == 2 else 1
    if len(range_and_step) == 2 and len(low_and_high) == 1:
        end = high
    problems = (
        (start < low, f"beginning of range ({start}) below minimum ({low}): {expr}"),
        (end > high, f"end of range ({end}) above maximum ({high}): {expr}"),
        (start > end, f"beginning of range ({start}) beyond end of range ({end}): {expr}"),
        (step == 0, f"step of range should be a positive number: {expr}"),
    )
    for failed, message in problems:
        if failed:
            raise _Invalid(message)


def _check_cron_descriptor(schedule: str) -> None:
    every = "@every "
    if schedule.startswith(every):
        try:
            _go_parse_duration(schedule[len(every) :])
        except _Invalid as error:
            raise _Invalid(f"failed to parse duration {schedule}: {error}") from None
    elif schedule not in _CRON_DESCRIPTORS:
        raise _Invalid(f"unrecognized descriptor: {schedule}")


def _check_cron(schedule: str) -> None:
    """Parse ``schedule`` as robfig/cron's ``ParseStandard`` does; raises :class:`_Invalid` with its error text."""
    if not schedule:
        raise _Invalid("empty spec string")
    if schedule.startswith("@"):
        _check_cron_descriptor(schedule)
        return
    fields = [field for field in _GO_SPACE_RE.split(schedule) if field]
    if len(fields) != len(_CRON_FIELDS):
        raise _Invalid(f"expected exactly {len(_CRON_FIELDS)} fields, found {len(fields)}: {_go_list(fields)}")
    for text, (low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        for expr in (part for part in text.split(",") if part):
            _check_cron_range(expr, low, high, names)


def _cron_error(schedule: str) -> str:
    """Why robfig/cron's ``ParseStandard`` rejects ``schedule`` (its own error text), or ``""``."""
    try:
        _check_cron(schedule)
    except _Invalid as error:
        return str(error)
    return ""


@functools.lru_cache(maxsize=256)
def _time_zone_error(name: str) -> str:
    """Why Go's ``time.LoadLocation`` rejects ``name``, or ``""``."""
    if name in ("UTC", "Local"):
        return ""
    if ".." in name or name.startswith(("/", "\\")):
        return "time: invalid location name"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {name}"
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

"""``spec.suspend`` of a RayService, as KubeRay v1.7.0 ``rayservice_controller.go`` ``handleSuspend`` moves its
status (``suspendIsOperative`` is :func:`suspend_is_operative`), over the status as a wire dict. Pure: the controller
deletes the RayService's objects and writes what these return.

The states, kept in the conditions ``Suspending`` and ``Suspended`` (only these functions set them):

* running, ``spec.suspend`` true: :func:`suspend_requested` commits ``Suspending=True/SuspendRequested`` and empties
  both sides; nothing is deleted in that pass (the persisted condition is the commit point);
* ``Suspending`` True: the objects are deleted whatever ``spec.suspend`` says now; :func:`suspend_waiting` while any
  remains (terminating ones count), then :func:`suspend_completed` (``Suspended=True/SuspendComplete``);
* ``Suspended`` True and ``spec.suspend`` false: :func:`resumed`; Ready and UpgradeInProgress are removed and added
  again as ``False/Initializing`` (a fresh ``lastTransitionTime`` re-arms the initializing timeout), and the pass goes
  on as usual.

KubeRay's quirk kept **[Q]**: ``RollbackInProgress`` (False) appears on every RayService that was suspended, with or
without the incremental upgrade.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from enum import Enum
from typing import Any, Final

from raykube.api import constants as c
from raykube.builders.rayservice.common import _FALSE, _TRUE, _conditions, _is_true
from raykube.builders.rayservice.status import set_condition

__all__ = [
    "SuspendPhase",
    "resumed",
    "suspend_completed",
    "suspend_is_operative",
    "suspend_phase",
    "suspend_requested",
    "suspend_waiting",
]

_RESUMED_MESSAGE: Final = "RayService is initializing after resuming from suspend."
_DELETED_MESSAGE: Final = "All owned resources have been deleted."


class SuspendPhase(Enum):
    """What ``handleSuspend`` does this pass."""

    RUNNING = "running"  # not suspended, no suspend asked: nothing
    REQUESTED = "requested"  # commit Suspending
    SUSPENDING = "suspending"  # delete, then wait or complete
    SUSPENDED = "suspended"  # stay suspended: the pass ends, no requeue
    RESUMING = "resuming"  # leave Suspended, then the usual pass


def suspend_is_operative(status: Mapping[str, Any]) -> bool:
    """``suspendIsOperative``: ``Suspending`` or ``Suspended`` is True; the pass then ends after the status write."""
    conditions = _conditions(status)
    return _is_true(conditions, c.CONDITION_RAYSERVICE_SUSPENDING) or _is_true(
        conditions, c.CONDITION_RAYSERVICE_SUSPENDED
    )


def suspend_phase(status: Mapping[str, Any], *, suspend: bool) -> SuspendPhase:
    """Which branch of ``handleSuspend`` runs, from the status as read and ``spec.suspend``."""
    conditions = _conditions(status)
    if _is_true(conditions, c.CONDITION_RAYSERVICE_SUSPENDED):
        return SuspendPhase.SUSPENDED if suspend else SuspendPhase.RESUMING
    if _is_true(conditions, c.CONDITION_RAYSERVICE_SUSPENDING):
        return SuspendPhase.SUSPENDING
    return SuspendPhase.REQUESTED if suspend else SuspendPhase.RUNNING


def suspend_requested(status: Mapping[str, Any], *, generation: int, stamp: str) -> dict[str, Any]:
    """``observedGeneration`` = the generation; ``Suspending=True/SuspendRequested``; Ready, UpgradeInProgress and
    RollbackInProgress ``False/SuspendInProgress``; both sides, ``numServeEndpoints`` and ``serviceStatus`` reset."""
    new = copy.deepcopy(dict(status))
    new["observedGeneration"] = generation
    set_condition(
        new,
        c.CONDITION_RAYSERVICE_SUSPENDING,
        _TRUE,
        c.REASON_SUSPEND_REQUESTED,
        "Spec.Suspend is true; will delete all Kubernetes resources owned by this RayService.",
        stamp=stamp,
    )
    _not_serving(new, c.REASON_SUSPEND_IN_PROGRESS, "RayService is suspending.", stamp)
    new["activeServiceStatus"] = {}
    new["pendingServiceStatus"] = {}
    new["numServeEndpoints"] = 0
    new["serviceStatus"] = ""
    return new


def suspend_waiting(status: Mapping[str, Any], *, stamp: str) -> dict[str, Any]:
    """Objects remain: ``Suspending=True/SuspendInProgress``."""
    new = copy.deepcopy(dict(status))
    set_condition(
        new,
        c.CONDITION_RAYSERVICE_SUSPENDING,
        _TRUE,
        c.REASON_SUSPEND_IN_PROGRESS,
        "Waiting for all Kubernetes resources owned by this RayService to be deleted.",
        stamp=stamp,
    )
    return new


def suspend_completed(status: Mapping[str, Any], *, stamp: str) -> dict[str, Any]:
    """Nothing remains: ``Suspending=False`` and ``Suspended=True`` (``SuspendComplete``); Ready, UpgradeInProgress
    and RollbackInProgress ``False/SuspendComplete``."""
    new = copy.deepcopy(dict(status))
    set_condition(
        new, c.CONDITION_RAYSERVICE_SUSPENDING, _FALSE, c.REASON_SUSPEND_COMPLETE, _DELETED_MESSAGE, stamp=stamp
    )
    set_condition(
        new, c.CONDITION_RAYSERVICE_SUSPENDED, _TRUE, c.REASON_SUSPEND_COMPLETE, _DELETED_MESSAGE, stamp=stamp
    )
    _not_serving(new, c.REASON_SUSPEND_COMPLETE, "RayService is suspended.", stamp)
    return new


def resumed(status: Mapping[str, Any], *, generation: int, stamp: str) -> dict[str, Any]:
    """``observedGeneration`` = the generation; ``Suspended=False/RayServiceResumed``; Ready and UpgradeInProgress
    removed, then added ``False/Initializing`` (new ``lastTransitionTime``: the initializing timeout starts again)."""
    new = copy.deepcopy(dict(status))
    new["observedGeneration"] = generation
    set_condition(
        new,
        c.CONDITION_RAYSERVICE_SUSPENDED,
        _FALSE,
        c.REASON_RAYSERVICE_RESUMED,
        "Spec.Suspend is false; RayService has resumed.",
        stamp=stamp,
    )
    for type_ in (c.CONDITION_RAYSERVICE_READY, c.CONDITION_UPGRADE_IN_PROGRESS):
        new["conditions"] = [cond for cond in new.get("conditions") or [] if cond.get("type") != type_]
        set_condition(new, type_, _FALSE, c.REASON_RAYSERVICE_INITIALIZING, _RESUMED_MESSAGE, stamp=stamp)
    return new


def _not_serving(status: dict[str, Any], reason: str, ready_message: str, stamp: str) -> None:
    set_condition(status, c.CONDITION_RAYSERVICE_READY, _FALSE, reason, ready_message, stamp=stamp)
    set_condition(status, c.CONDITION_UPGRADE_IN_PROGRESS, _FALSE, reason, "No upgrade in progress.", stamp=stamp)
    set_condition(status, c.CONDITION_ROLLBACK_IN_PROGRESS, _FALSE, reason, "No rollback in progress.", stamp=stamp)

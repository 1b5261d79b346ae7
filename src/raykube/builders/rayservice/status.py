"""The RayService's status, as KubeRay v1.6.1 computes it (``ray-operator/controllers/ray/rayservice_controller.go``:
``calculateStatus``, ``calculateConditions``, ``markFailedOnInitializingTimeout``,
``utils.InconsistentRayServiceStatuses``), over the status as a wire dict (camelCase, Go's ``omitempty``):

* :func:`promote` is ``reconcilePromotionAndServingStatus`` (NewCluster / None); :func:`num_serve_endpoints`
  ``calculateNumServeEndpointsFromSlices``; :func:`calculate_conditions` ``calculateConditions`` with the
  initializing timeout (:func:`initializing_timeout`, ``getInitializingTimeout``); :func:`service_status` the
  ``serviceStatus`` printer column; :func:`is_initializing_timeout`; :func:`status_needs_update`.

KubeRay's quirk kept **[Q]**: Ready depends on the serve endpoint count only, never on application health.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from raykube.api import constants as c
from raykube.builders.rayservice.common import (
    _FALSE,
    _TRUE,
    _UNKNOWN,
    RayServiceBuildError,
    _conditions,
    _find,
    _is_true,
    _side_name,
)
from raykube.builders.rayservice.services import service_cluster
from raykube.golang.duration import duration_string, parse_duration
from raykube.golang.errors import GoError
from raykube.golang.strconv import atoi
from raykube.kube import objects, times

__all__ = [
    "calculate_conditions",
    "initializing_timeout",
    "is_initializing_timeout",
    "num_serve_endpoints",
    "promote",
    "service_status",
    "set_condition",
    "status_needs_update",
]

_MAX_INT32: Final = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INITIALIZING_MESSAGE: Final = "RayService is initializing"


def set_condition(status: dict[str, Any], type_: str, value: str, reason: str, message: str, *, stamp: str) -> None:
    """KubeRay's ``setCondition``: ``meta.SetStatusCondition`` with ``observedGeneration`` =
    ``status.observedGeneration``; a new condition is appended with ``lastTransitionTime = stamp``, an existing one
    changes its time only when its status changes. Mutates ``status`` (a working copy)."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    generation = int(status.get("observedGeneration") or 0)
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") != value:
                cond["status"] = value
                cond["lastTransitionTime"] = stamp
            cond["reason"] = reason
            cond["message"] = message
            if generation:
                cond["observedGeneration"] = generation
            else:
                cond.pop("observedGeneration", None)
            return
    new: dict[str, Any] = {"type": type_, "status": value}
    if generation:
        new["observedGeneration"] = generation
    new.update(lastTransitionTime=stamp, reason=reason, message=message)
    conditions.append(new)


def initializing_timeout(annotations: Mapping[str, str] | None) -> int | None:
    """``getInitializingTimeout``: ``ray.io/initializing-timeout`` in nanoseconds, read as a Go duration (``30m``)
    or else as integer seconds (``1800``); None when absent, empty or neither (validation refuses those, and
    non-positive values, before this is reached)."""
    text = (annotations or {}).get(c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION, "")
    if not text:
        return None
    try:
        return parse_duration(text)
    except GoError:
        pass
    try:
        seconds = atoi(text)
    except GoError:
        return None
    nanos = seconds * 1_000_000_000
    return ((nanos + 2**63) % 2**64) - 2**63  # time.Duration(seconds) * time.Second wraps like int64


def is_initializing_timeout(status: Mapping[str, Any] | None) -> bool:
    """``isInitializingTimeout``: Ready is ``False/InitializingTimeout``, the terminal state."""
    cond = _find(_conditions(status or {}), c.CONDITION_RAYSERVICE_READY)
    return (
        cond is not None
        and cond.get("status") == _FALSE
        and cond.get("reason") == c.REASON_RAYSERVICE_INITIALIZING_TIMEOUT
    )


def num_serve_endpoints(endpoint_slices: Sequence[Mapping[str, Any]]) -> int:
    """``calculateNumServeEndpointsFromSlices`` over the EndpointSlices labelled
    ``kubernetes.io/service-name=<serve Service>``: the distinct ``targetRef.uid`` of endpoints whose
    ``conditions.ready`` is true (an endpoint without targetRef or uid does not count). Above MaxInt32 KubeRay fails
    the pass: :class:`RayServiceBuildError`."""
    uids = {
        str((endpoint.get("targetRef") or {}).get("uid"))
        for slice_ in endpoint_slices
        for endpoint in slice_.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready") is True and (endpoint.get("targetRef") or {}).get("uid")
    }
    if len(uids) > _MAX_INT32:
        raise RayServiceBuildError("numServeEndpoints exceeds math.MaxInt32")
    return len(uids)


def calculate_conditions(
    status: Mapping[str, Any], *, annotations: Mapping[str, str] | None, now: datetime
) -> tuple[dict[str, Any], str | None]:
    """``calculateConditions`` on a status whose ``numServeEndpoints``, ``observedGeneration`` and cluster names are
    this pass's: a new status and, when the initializing timeout fired, the message of KubeRay's Warning event
    ``RayServiceInitializingTimeout`` (None otherwise).

    * No condition yet: Ready and UpgradeInProgress ``False/Initializing``.
    * Ready: ``True/NonZeroServeEndpoints`` with endpoints; else ``False/ZeroServeEndpoints`` if it was True; else the
      initializing timeout: with a valid annotation and Ready ``False/Initializing`` for at least the timeout (since
      its ``lastTransitionTime``), both cluster names are cleared and Ready becomes ``False/InitializingTimeout``.
    * UpgradeInProgress: ``True/BothActivePendingClustersExist``, ``False/NoPendingCluster`` with only an active
      cluster, else ``Unknown/NoActiveCluster`` unless its reason is ``Initializing`` or ``InitializingTimeout``.
    """
    new = objects.copy_json(dict(status))
    stamp = times.format_time(now)
    event: str | None = None
    if not new.get("conditions"):
        new["conditions"] = []
        for type_ in (c.CONDITION_RAYSERVICE_READY, c.CONDITION_UPGRADE_IN_PROGRESS):
            set_condition(new, type_, _FALSE, c.REASON_RAYSERVICE_INITIALIZING, _INITIALIZING_MESSAGE, stamp=stamp)
    if int(new.get("numServeEndpoints") or 0) > 0:
        set_condition(
            new,
            c.CONDITION_RAYSERVICE_READY,
            _TRUE,
            c.REASON_NON_ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints is greater than 0",
            stamp=stamp,
        )
    elif _is_true(new["conditions"], c.CONDITION_RAYSERVICE_READY):
        set_condition(
            new,
            c.CONDITION_RAYSERVICE_READY,
            _FALSE,
            c.REASON_ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints dropped to 0",
            stamp=stamp,
        )
    else:
        event = _mark_failed_on_initializing_timeout(new, annotations, now, stamp)

    active, pending = _side_name(new, "activeServiceStatus"), _side_name(new, "pendingServiceStatus")
    if active and pending:
        set_condition(
            new,
            c.CONDITION_UPGRADE_IN_PROGRESS,
            _TRUE,
            c.REASON_BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            "Both active and pending Ray clusters exist",
            stamp=stamp,
        )
    elif active:
        set_condition(
            new,
            c.CONDITION_UPGRADE_IN_PROGRESS,
            _FALSE,
            c.REASON_NO_PENDING_CLUSTER,
            "Active Ray cluster exists and no pending Ray cluster",
            stamp=stamp,
        )
    else:
        cond = _find(new["conditions"], c.CONDITION_UPGRADE_IN_PROGRESS)
        keep = (c.REASON_RAYSERVICE_INITIALIZING, c.REASON_RAYSERVICE_INITIALIZING_TIMEOUT)
        if cond is None or cond.get("reason") not in keep:
            set_condition(
                new,
                c.CONDITION_UPGRADE_IN_PROGRESS,
                _UNKNOWN,
                c.REASON_NO_ACTIVE_CLUSTER,
                "No active Ray cluster exists, and the RayService is not initializing. "
                "Please open a GitHub issue in the KubeRay repository.",
                stamp=stamp,
            )
    return new, event


def _mark_failed_on_initializing_timeout(
    status: dict[str, Any], annotations: Mapping[str, str] | None, now: datetime, stamp: str
) -> str | None:
    timeout = initializing_timeout(annotations)
    ready = _find(status["conditions"], c.CONDITION_RAYSERVICE_READY)
    if timeout is None or ready is None:
        return None
    if ready.get("status") != _FALSE or ready.get("reason") != c.REASON_RAYSERVICE_INITIALIZING:
        return None
    since = times.parse_time(ready.get("lastTransitionTime"))
    elapsed = _nanoseconds(now - since) if since is not None else _nanoseconds(now - _GO_ZERO_TIME)
    if elapsed < timeout:
        return None
    for side in ("activeServiceStatus", "pendingServiceStatus"):
        if isinstance(status.get(side), dict):
            status[side].pop("rayClusterName", None)
    timeout_text, elapsed_text = duration_string(timeout), duration_string(elapsed)
    set_condition(
        status,
        c.CONDITION_RAYSERVICE_READY,
        _FALSE,
        c.REASON_RAYSERVICE_INITIALIZING_TIMEOUT,
        f"RayService failed to become ready within the configured timeout of {timeout_text}. "
        f"Time spent initializing: {elapsed_text}",
        stamp=stamp,
    )
    return f"RayService initializing timeout exceeded after {elapsed_text} (configured timeout: {timeout_text})"


_GO_ZERO_TIME: Final = datetime(1, 1, 1, tzinfo=times.UTC)


def _nanoseconds(delta: timedelta) -> int:
    """A timedelta in nanoseconds, saturated to int64 as Go's ``time.Sub`` is."""
    nanos = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
    return max(_INT64_MIN, min(_INT64_MAX, nanos))


def service_status(status: Mapping[str, Any]) -> str:
    """``status.serviceStatus`` (the ``service status`` printer column): ``Running`` iff Ready is True, else ``""``."""
    return c.RAYSERVICE_STATUS_RUNNING if _is_true(_conditions(status), c.CONDITION_RAYSERVICE_READY) else ""


def promote(
    status: Mapping[str, Any],
    head_svc: Mapping[str, Any],
    serve_svc: Mapping[str, Any],
    *,
    incremental: bool = False,
    pending_exists: bool = False,
) -> tuple[dict[str, Any], bool]:
    """``reconcilePromotionAndServingStatus``: for NewCluster and None, when the Services point at a cluster that is
    not the active one, the pending side becomes active (whole) and pending is emptied; with the incremental upgrade
    (``incremental``), during an upgrade once ``IsIncrementalUpgradeComplete`` and no rollback runs, else when there is
    no active cluster yet. Returns the new status and
    whether the Services point at the pending cluster (as named before promotion). Where KubeRay panics (the two
    Services disagree, or point at neither cluster) :class:`RayServiceBuildError`."""
    target = service_cluster(head_svc)
    if target != service_cluster(serve_svc):
        raise RayServiceBuildError("headSvc and serveSvc are not pointing to the same cluster")
    pending, active = _side_name(status, "pendingServiceStatus"), _side_name(status, "activeServiceStatus")
    if target not in (pending, active):
        raise RayServiceBuildError("clusterName from services is not equal to pendingCluster or activeCluster")
    new = objects.copy_json(dict(status))
    if incremental:  # v1.7.0: once the traffic has moved, never during a rollback; the first cluster at once
        conditions = _conditions(status)
        if _is_true(conditions, c.CONDITION_UPGRADE_IN_PROGRESS):
            should = not _is_true(conditions, c.CONDITION_ROLLBACK_IN_PROGRESS) and (
                pending_exists
                and int((status.get("activeServiceStatus") or {}).get("targetCapacity", -1)) == 0
                and int((status.get("pendingServiceStatus") or {}).get("trafficRoutedPercent", -1)) == 100
            )
        else:
            should = not active and bool(pending)
    else:
        should = active != target
    if should:
        new["activeServiceStatus"] = new.get("pendingServiceStatus") or {}
        new["pendingServiceStatus"] = {}
    return new, target == pending


def _entry_differs(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return any((old.get(key) or "") != (new.get(key) or "") for key in ("status", "message"))


def _statuses_differ(old: Mapping[str, Any], new: Mapping[str, Any], children: str | None) -> bool:
    """Two maps of application (``children`` = their deployments' key) or deployment statuses, compared as
    ``inconsistentRayServiceStatus`` does: sizes, names, status and message, then the children."""
    if len(old) != len(new):
        return True
    for name, entry in new.items():
        before = old.get(name)
        if before is None or _entry_differs(before, entry):
            return True
        if children and _statuses_differ(before.get(children) or {}, entry.get(children) or {}, None):
            return True
    return False


def _side_differs(old: Mapping[str, Any], new: Mapping[str, Any], *, incremental_gate: bool) -> bool:
    if (old.get("rayClusterName") or "") != (new.get("rayClusterName") or ""):
        return True
    apps_old, apps_new = old.get("applicationStatuses") or {}, new.get("applicationStatuses") or {}
    if _statuses_differ(apps_old, apps_new, "serveDeploymentStatuses"):
        return True
    # [Q] With the incremental gate on, KubeRay compares these *int32 / *metav1.Time pointers by address: a status
    # read back and the one being computed never share them, so a side where one is set always counts as changed.
    keys = ("trafficRoutedPercent", "targetCapacity", "lastTrafficMigratedTime")
    return incremental_gate and any(old.get(key) is not None or new.get(key) is not None for key in keys)


def status_needs_update(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], *, incremental_gate: bool = False
) -> bool:
    """``utils.InconsistentRayServiceStatuses``: write when ``serviceStatus``, ``numServeEndpoints`` or the
    conditions changed, or on either side the cluster name or an application's or deployment's status or message
    (``rayClusterStatus`` alone never causes a write)."""
    old = old or {}
    if (old.get("serviceStatus") or "") != (new.get("serviceStatus") or ""):
        return True
    if int(old.get("numServeEndpoints") or 0) != int(new.get("numServeEndpoints") or 0):
        return True
    if (old.get("conditions") or []) != (new.get("conditions") or []):
        return True
    return any(
        _side_differs(old.get(side) or {}, new.get(side) or {}, incremental_gate=incremental_gate)
        for side in ("activeServiceStatus", "pendingServiceStatus")
    )

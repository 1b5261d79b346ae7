"""A RayCluster's status as KubeRay computes it after each reconcile pass (``raycluster_controller.go``
``calculateStatus``), whether it must be written (``utils.InconsistentRayClusterStatus``) and the suspend state the
reconciler acts on (``utils.FindRayClusterSuspendStatus``).

:func:`calculate_status` is pure: the old status (``cluster.status``), the cluster's Pods (every Pod labelled
``ray.io/cluster=<name>``, in any phase, terminating ones included, as KubeRay's cache lists them), the head
Service(s) found by ``services.head_service_selector``, what went wrong in the pass, and the time. It returns the new
status as KubeRay would write it to the status subresource, camelCase, with Go's ``omitempty`` applied: zero replica
counters, an empty ``reason``/``state``, empty maps and an empty condition list are left out, while the four
``desired*`` quantities, ``head`` and ``lastUpdateTime`` are always there. Fields of the old status that KubeRay's
types do not know are dropped, as KubeRay's Go structs drop them.

The pass computes, in KubeRay's order:

1. ``ReplicaFailure`` (with the ``RayClusterStatusConditions`` gate): set True with the failure's marker as reason and
   its message when the pass failed with one of the markers; left as it was when it failed without one; removed
   when the pass succeeded.
2. ``observedGeneration``, the five replica counters (``groups``), the desired resources.
3. ``state``: ``ready`` when the pass succeeded, there are exactly ``desiredWorkerReplicas + 1`` Pods and every one is
   Running with no Ready condition other than True (``reason`` is then cleared). Otherwise the old state stays:
   ``ready`` is sticky until the cluster is suspended.
4. Conditions (gate on): ``HeadPodReady``, ``RayClusterProvisioned``, then ``RayClusterSuspended`` /
   ``RayClusterSuspending``. A condition keeps its ``lastTransitionTime`` unless its status changes
   (``meta.SetStatusCondition``); a new one is appended, so the list keeps the order conditions first appeared in.
5. ``state = suspended`` when ``spec.suspend`` is true and there is no Pod left.
6. ``endpoints`` from the first head Service (nodePort, else targetPort), merged into the old ones: KubeRay never
   removes an endpoint.
7. ``head``: the head Pod's name and IP; the Service's name and clusterIP, or the head Pod's IP for a headless one.
8. ``lastUpdateTime = now``; ``stateTransitionTimes[state] = now`` when the state changed.

KubeRay fails the whole calculation, and writes no status in that pass, when it finds several head Pods, no head
Service, several head Services or a head Service without a clusterIP: :class:`StatusError` here.

Details of KubeRay v1.6.1's code and tests (``controllers/ray/raycluster_controller.go``, ``utils/util.go``,
``utils/consistency.go``) that are easy to get wrong:

* "Every Pod Running and Ready": ``CheckAllPodsRunning`` rejects any Ready condition that is not True, so
  ``Ready=Unknown`` blocks ``ready`` and ``RayClusterProvisioned`` too; a Pod without a Ready condition passes.
* ``ReplicaFailure`` is set with a marker and removed when the pass succeeded; a failed pass whose error has no
  marker leaves it untouched.
* Zero counters are absent from the written status (Go ``omitempty``), so ``ray-cluster.autoscaler.yaml``'s
  ``desiredWorkerReplicas 0`` is no ``desiredWorkerReplicas`` key at all.
* Suspended groups are left out of ``maxWorkerReplicas`` as well (see ``groups``).
* ``HeadPodReady`` when the Pod's Ready condition says ``ContainersNotReady``: the reason becomes that of the first
  container status that is waiting or terminated, and ``"<container>: <its message>"`` is appended to the message
  after ``"; "`` (``firstNotReadyContainerStatus``, kuberay#4196). Where that container's reason is empty, KubeRay
  copies the empty reason, which the CRD refuses (a condition's ``reason`` has ``minLength: 1``); we keep
  ``ContainersNotReady`` then.
* ``status_needs_update`` compares the conditions whole, ``lastTransitionTime`` included, like KubeRay's
  ``reflect.DeepEqual``. That is the same as ignoring it: a condition's time only moves when its status does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RayCluster
from raykube.builders.groups import (
    desired_resources,
    is_gpu_resource_name,
    total_desired_workers,
    total_max_workers,
    total_min_workers,
)
from raykube.builders.options import BuildOptions
from raykube.golang.quantity import ZERO, Quantity, format_quantity
from raykube.kube import objects
from raykube.kube.times import format_time

# KubeRay calculateStatus: condition messages.
MESSAGE_HEAD_POD_NOT_FOUND = "Head Pod not found"
MESSAGE_ALL_PODS_READY_FIRST_TIME = "All Ray Pods are ready for the first time"
MESSAGE_PODS_PROVISIONING = "RayCluster Pods are being provisioned for first time"
MESSAGE_SUSPENDED = "RayCluster has been suspended"

# The RayClusterStatus fields of KubeRay v1.6.1 (apis/ray/v1/raycluster_types.go); others are dropped on write.
STATUS_FIELDS = frozenset(
    {
        "state",
        "reason",
        "desiredCPU",
        "desiredMemory",
        "desiredGPU",
        "desiredTPU",
        "minWorkerReplicas",
        "maxWorkerReplicas",
        "desiredWorkerReplicas",
        "availableWorkerReplicas",
        "readyWorkerReplicas",
        "lastUpdateTime",
        "stateTransitionTimes",
        "endpoints",
        "head",
        "conditions",
        "observedGeneration",
    }
)
_CONDITION_FIELDS = ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")
_COUNTERS = (
    "readyWorkerReplicas",
    "availableWorkerReplicas",
    "desiredWorkerReplicas",
    "minWorkerReplicas",
    "maxWorkerReplicas",
)
_TRUE = "True"
_FALSE = "False"


@dataclass(frozen=True)
class ReconcileFailure:
    """What went wrong in this reconcile pass. ``reason`` is the ReplicaFailure marker the error carries
    (``FailedCreateHeadPod``, ``FailedDeleteHeadPod``, ``FailedCreateWorkerPod``, ``FailedDeleteWorkerPod``,
    ``FailedDeleteAllPods``) or None for any other error; ``message`` is the error's text."""

    message: str
    reason: str | None = None


class StatusError(RuntimeError):
    """KubeRay's calculateStatus failed: it writes no status in this pass and requeues."""


# --- small readers of Pod and Service dicts -------------------------------------------------------------------------


def _pod_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    return pod.get("status") or {}


def _phase(pod: Mapping[str, Any]) -> str:
    return str(_pod_status(pod).get("phase") or "")


def _pod_conditions(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(_pod_status(pod).get("conditions") or [])


def _is_worker(pod: Mapping[str, Any]) -> bool:
    return objects.labels(pod).get(c.RAY_NODE_TYPE_LABEL) == c.NODE_TYPE_WORKER


def is_running_and_ready(pod: Mapping[str, Any]) -> bool:
    """KubeRay ``IsRunningAndReady``: phase Running and a Ready condition that is True."""
    if _phase(pod) != c.POD_PHASE_RUNNING:
        return False
    return any(
        cond.get("type") == c.POD_CONDITION_READY and cond.get("status") == _TRUE for cond in _pod_conditions(pod)
    )


def all_pods_running(pods: Sequence[Mapping[str, Any]]) -> bool:
    """KubeRay ``CheckAllPodsRunning``: at least one Pod, every Pod Running, no Ready condition other than True
    (a Pod without a Ready condition passes)."""
    if not pods:
        return False
    for pod in pods:
        if _phase(pod) != c.POD_PHASE_RUNNING:
            return False
        for cond in _pod_conditions(pod):
            if cond.get("type") == c.POD_CONDITION_READY and cond.get("status") != _TRUE:
                return False
    return True


def ready_worker_replicas(pods: Sequence[Mapping[str, Any]]) -> int:
    """KubeRay ``CalculateReadyReplicas``: worker Pods Running with Ready=True."""
    return sum(1 for pod in pods if _is_worker(pod) and is_running_and_ready(pod))


def available_worker_replicas(pods: Sequence[Mapping[str, Any]]) -> int:
    """KubeRay ``CalculateAvailableReplicas``: worker Pods Running, ready or not."""
    return sum(1 for pod in pods if _is_worker(pod) and _phase(pod) == c.POD_PHASE_RUNNING)


def head_pod(cluster: RayCluster, pods: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """KubeRay ``GetRayClusterHeadPod``: the one Pod labelled as the head, None if there is none."""
    heads = [pod for pod in pods if objects.labels(pod).get(c.RAY_NODE_TYPE_LABEL) == c.NODE_TYPE_HEAD]
    if len(heads) > 1:
        name = cluster.metadata.get("name")
        raise StatusError(f"found multiple heads. cluster name {name}, {len(heads)} head Pods")
    return heads[0] if heads else None


# --- conditions -------------------------------------------------------------------------------------------------


def set_condition(
    conditions: list[dict[str, Any]], type_: str, status: str, reason: str, message: str, *, stamp: str
) -> None:
    """``meta.SetStatusCondition`` for a condition without observedGeneration: a new type is appended with
    ``lastTransitionTime = stamp``; an existing one changes its time only when its status changes."""
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") != status:
                cond["status"] = status
                cond["lastTransitionTime"] = stamp
            cond["reason"] = reason
            cond["message"] = message
            cond.pop("observedGeneration", None)
            return
    conditions.append(
        {"type": type_, "status": status, "lastTransitionTime": stamp, "reason": reason, "message": message}
    )


def _is_true(conditions: Sequence[Mapping[str, Any]], type_: str) -> bool:
    return any(cond.get("type") == type_ and cond.get("status") == _TRUE for cond in conditions)


def suspend_status(conditions: Sequence[Mapping[str, Any]] | None) -> str | None:
    """KubeRay ``FindRayClusterSuspendStatus``: the first of RayClusterSuspending / RayClusterSuspended that is True."""
    for cond in conditions or []:
        if cond.get("type") in (c.CONDITION_RAYCLUSTER_SUSPENDING, c.CONDITION_RAYCLUSTER_SUSPENDED) and (
            cond.get("status") == _TRUE
        ):
            return str(cond["type"])
    return None


def head_pod_ready_condition(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    """KubeRay ``FindHeadPodReadyCondition``: (status, reason, message) of ``HeadPodReady`` for a head Pod."""
    status, reason, message = _FALSE, c.REASON_UNKNOWN, ""
    for cond in _pod_conditions(pod):
        if cond.get("type") != c.POD_CONDITION_READY:
            continue
        status = str(cond.get("status") or "")
        message = str(cond.get("message") or "")
        found = str(cond.get("reason") or "")
        if status == _TRUE and not found:
            found = c.REASON_HEAD_POD_RUNNING_AND_READY
        if found:
            reason = found
        break
    if reason == c.POD_REASON_CONTAINERS_NOT_READY:
        for container in _pod_status(pod).get("containerStatuses") or []:
            state = container.get("state") or {}
            detail = state.get("waiting") if state.get("waiting") is not None else state.get("terminated")
            if detail is None:
                continue
            if detail.get("reason"):
                reason = str(detail["reason"])
            note = f"{container.get('name', '')}: {detail.get('message') or ''}"
            message = f"{message}; {note}" if message else note
            break
    return status, reason, message


# --- the status -------------------------------------------------------------------------------------------------


def _old_status(cluster: RayCluster) -> dict[str, Any]:
    if cluster.status is None:
        return {}
    wire = cluster.status.to_wire()  # new containers (pydantic's dump), never the cached object's: no copy needed
    old = {key: value for key, value in wire.items() if key in STATUS_FIELDS}
    if "conditions" in old:
        old["conditions"] = [
            {key: cond[key] for key in _CONDITION_FIELDS if key in cond} for cond in old["conditions"] or []
        ]
    return old


def _put(status: dict[str, Any], key: str, value: Any) -> None:
    """Go ``omitempty``: zero numbers, empty strings and empty collections are left out."""
    if value:
        status[key] = value
    else:
        status.pop(key, None)


def _gpu_total(resources: Mapping[str, Quantity]) -> Quantity:
    total = ZERO
    for name in sorted(resources):  # KubeRay walks a Go map; the order only matters for mixed formats
        if is_gpu_resource_name(name) and not resources[name].is_zero:
            total = total + resources[name]
    return total


def _endpoints(old: Mapping[str, str] | None, service: Mapping[str, Any]) -> dict[str, str]:
    endpoints = dict(old or {})
    for port in (service.get("spec") or {}).get("ports") or []:
        name = port.get("name")
        if not name:
            continue
        node_port = port.get("nodePort")
        target = port.get("targetPort")
        if node_port:
            endpoints[name] = str(node_port)
        elif isinstance(target, int) and target:
            endpoints[name] = str(target)
        elif isinstance(target, str) and target:
            endpoints[name] = target
    return endpoints


def _head_service_ip(
    cluster: RayCluster, services: Sequence[Mapping[str, Any]], head: Mapping[str, Any] | None
) -> tuple[str, str]:
    name = cluster.metadata.get("name")
    if not services:
        raise StatusError(f"unable to find head service. cluster name {name}")
    if len(services) > 1:
        raise StatusError(f"found multiple head services. cluster name {name}")
    service = services[0]
    service_name = str((service.get("metadata") or {}).get("name") or "")
    cluster_ip = str((service.get("spec") or {}).get("clusterIP") or "")
    if not cluster_ip:
        raise StatusError(f"head service IP is empty. cluster name {name}")
    if cluster_ip == c.CLUSTER_IP_NONE:
        return (str(_pod_status(head).get("podIP") or "") if head else ""), service_name
    return cluster_ip, service_name


def calculate_status(
    cluster: RayCluster,
    pods: Sequence[Mapping[str, Any]],
    head_services: Sequence[Mapping[str, Any]],
    *,
    failure: ReconcileFailure | None,
    now: datetime,
    options: BuildOptions,
) -> dict[str, Any]:
    """The status KubeRay computes for ``cluster`` after a pass that ended with ``failure`` (see the module docs).

    Raises :class:`StatusError` where KubeRay's calculation fails (several head Pods; not exactly one head Service, or
    one without a clusterIP): the status must then not be written.
    """
    if cluster.spec is None:
        raise StatusError(f"RayCluster {cluster.metadata.get('name')!r} has no spec")
    spec = cluster.spec
    old = _old_status(cluster)
    new = _old_status(cluster)  # a second dump is a deep copy, and much cheaper than copy.deepcopy
    stamp = format_time(now)
    gate = options.gate(c.GATE_RAYCLUSTER_STATUS_CONDITIONS)
    conditions: list[dict[str, Any]] = [dict(cond) for cond in new.get("conditions") or []]

    if gate:
        if failure is None:
            conditions = [cond for cond in conditions if cond.get("type") != c.CONDITION_REPLICA_FAILURE]
        elif failure.reason:
            set_condition(conditions, c.CONDITION_REPLICA_FAILURE, _TRUE, failure.reason, failure.message, stamp=stamp)

    _put(new, "observedGeneration", int(cluster.metadata.get("generation") or 0))
    desired_workers = total_desired_workers(spec)
    counters = (
        ready_worker_replicas(pods),
        available_worker_replicas(pods),
        desired_workers,
        total_min_workers(spec),
        total_max_workers(spec),
    )
    for key, value in zip(_COUNTERS, counters, strict=True):
        _put(new, key, value)

    resources = desired_resources(spec)
    new["desiredCPU"] = format_quantity(resources.get(c.RESOURCE_CPU, ZERO))
    new["desiredMemory"] = format_quantity(resources.get(c.RESOURCE_MEMORY, ZERO))
    new["desiredGPU"] = format_quantity(_gpu_total(resources))
    new["desiredTPU"] = format_quantity(resources.get(c.TPU_RESOURCE_NAME, ZERO))

    old_state = str(old.get("state") or "")
    state = old_state
    if failure is None and len(pods) == desired_workers + 1 and all_pods_running(pods):
        state = c.CLUSTER_STATE_READY
        new.pop("reason", None)

    head = head_pod(cluster, pods)
    if gate:
        if head is None:
            not_found = (_FALSE, c.REASON_HEAD_POD_NOT_FOUND, MESSAGE_HEAD_POD_NOT_FOUND)
            set_condition(conditions, c.CONDITION_HEAD_POD_READY, *not_found, stamp=stamp)
        else:
            set_condition(conditions, c.CONDITION_HEAD_POD_READY, *head_pod_ready_condition(head), stamp=stamp)
        _suspend_conditions(conditions, cluster, pods, stamp)

    if spec.suspend and not pods:
        state = c.CLUSTER_STATE_SUSPENDED

    if head_services:
        _put(new, "endpoints", _endpoints(new.get("endpoints"), head_services[0]))
    service_ip, service_name = _head_service_ip(cluster, head_services, head)
    head_info = {
        "podIP": str(_pod_status(head).get("podIP") or "") if head else "",
        "serviceIP": service_ip,
        "podName": str((head.get("metadata") or {}).get("name") or "") if head else "",
        "serviceName": service_name,
    }
    new["head"] = {key: value for key, value in head_info.items() if value}

    new["lastUpdateTime"] = stamp
    if state != old_state:
        transitions = dict(new.get("stateTransitionTimes") or {})
        transitions[state] = stamp
        new["stateTransitionTimes"] = transitions
    _put(new, "state", state)
    _put(new, "conditions", conditions)
    return new


def _suspend_conditions(
    conditions: list[dict[str, Any]], cluster: RayCluster, pods: Sequence[Mapping[str, Any]], stamp: str
) -> None:
    """RayClusterProvisioned and the two suspend conditions (calculateStatus, gate on)."""
    suspend = cluster.spec.suspend if cluster.spec is not None else None
    current = suspend_status(conditions)
    if not _is_true(conditions, c.CONDITION_RAYCLUSTER_PROVISIONED) and current != c.CONDITION_RAYCLUSTER_SUSPENDED:
        if all_pods_running(pods):
            provisioned = (_TRUE, c.REASON_ALL_PODS_READY_FIRST_TIME, MESSAGE_ALL_PODS_READY_FIRST_TIME)
        else:
            provisioned = (_FALSE, c.REASON_PODS_PROVISIONING, MESSAGE_PODS_PROVISIONING)
        set_condition(conditions, c.CONDITION_RAYCLUSTER_PROVISIONED, *provisioned, stamp=stamp)

    suspending, suspended = c.CONDITION_RAYCLUSTER_SUSPENDING, c.CONDITION_RAYCLUSTER_SUSPENDED
    if current == suspending:
        if not pods:
            provisioned = (_FALSE, c.REASON_PODS_PROVISIONING, MESSAGE_SUSPENDED)
            set_condition(conditions, c.CONDITION_RAYCLUSTER_PROVISIONED, *provisioned, stamp=stamp)
            set_condition(conditions, suspending, _FALSE, suspending, "", stamp=stamp)
            set_condition(conditions, suspended, _TRUE, suspended, "", stamp=stamp)
    elif current == suspended:
        if suspend is False:  # only an explicit false resumes; an unset field leaves the cluster suspended
            set_condition(conditions, suspended, _FALSE, suspended, "", stamp=stamp)
    else:
        set_condition(conditions, suspended, _FALSE, suspended, "", stamp=stamp)
        set_condition(conditions, suspending, _TRUE if suspend else _FALSE, suspending, "", stamp=stamp)


def status_needs_update(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """KubeRay ``InconsistentRayClusterStatus``: write only when state, reason, one of the five replica counters,
    endpoints, head or the conditions changed. Desired resources, ``lastUpdateTime``, ``observedGeneration`` and
    ``stateTransitionTimes`` alone never cause a write."""
    before = old or {}
    if (before.get("state") or "") != (new.get("state") or ""):
        return True
    if (before.get("reason") or "") != (new.get("reason") or ""):
        return True
    if any(int(before.get(key) or 0) != int(new.get(key) or 0) for key in _COUNTERS):
        return True
    if dict(before.get("endpoints") or {}) != dict(new.get("endpoints") or {}):
        return True
    if _present(before.get("head")) != _present(new.get("head")):
        return True
    return list(before.get("conditions") or []) != list(new.get("conditions") or [])


# Conditions that only report a cluster coming up: a change in them alone may wait for the next paced write.
_PROGRESS_CONDITIONS = frozenset({c.CONDITION_HEAD_POD_READY, c.CONDITION_RAYCLUSTER_PROVISIONED})


def progress_only(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether ``new`` differs from ``old`` only in what reports progress (replica counters, endpoints, head, the
    HeadPodReady and RayClusterProvisioned conditions, another condition appearing as False), not in ``state``,
    ``reason`` or any other condition (ReplicaFailure, the suspend conditions: writes that move a cluster along, which
    must go out at once)."""
    before = old or {}
    if any((before.get(key) or "") != (new.get(key) or "") for key in ("state", "reason")):
        return False

    def others(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
        conditions = status.get("conditions") or []
        return {str(cond.get("type")): cond for cond in conditions if cond.get("type") not in _PROGRESS_CONDITIONS}

    had, has = others(before), others(new)
    for type_ in {*had, *has}:
        was, now = had.get(type_), has.get(type_)
        if was == now:
            continue
        # A condition that is (or was) True moves the cluster along; one reported False for the first time does not.
        if (was or {}).get("status") == _TRUE or (now or {}).get("status") == _TRUE or was is not None:
            return False
    return True


def _present(mapping: Mapping[str, Any] | None) -> dict[str, Any]:
    return {key: value for key, value in (mapping or {}).items() if value}


def is_suspending(cluster: RayCluster, *, options: BuildOptions | None = None) -> bool:
    """Whether ``reconcilePods`` deletes every Pod of the cluster this pass: the RayClusterSuspending condition is
    True, or, with the RayClusterStatusConditions gate off, ``spec.suspend`` is true."""
    gate = (options or BuildOptions()).gate(c.GATE_RAYCLUSTER_STATUS_CONDITIONS)
    conditions = cluster.status.conditions if cluster.status is not None else None
    if suspend_status(conditions) == c.CONDITION_RAYCLUSTER_SUSPENDING:
        return True
    return not gate and bool(cluster.spec is not None and cluster.spec.suspend)


def is_suspended(cluster: RayCluster, *, options: BuildOptions | None = None) -> bool:
    """Whether ``reconcilePods`` stops early because the cluster is suspended: with the gate on, the
    RayClusterSuspended condition is True. With the gate off KubeRay has no such state (``spec.suspend`` keeps
    deleting Pods through :func:`is_suspending`), so this is False.

    With the gate on, ``reconcilePods`` also stops, without deleting anything, when ``spec.suspend`` is true but
    neither condition is set yet: this pass's status sets RayClusterSuspending and the next pass deletes the Pods."""
    gate = (options or BuildOptions()).gate(c.GATE_RAYCLUSTER_STATUS_CONDITIONS)
    conditions = cluster.status.conditions if cluster.status is not None else None
    return gate and suspend_status(conditions) == c.CONDITION_RAYCLUSTER_SUSPENDED

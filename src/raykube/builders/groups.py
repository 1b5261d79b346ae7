"""Replica and resource arithmetic over a RayCluster's worker groups, as KubeRay's ``utils/util.go`` does it.

* :func:`desired_worker_replicas` is ``GetWorkerGroupDesiredReplicas``: the Pods one group should have.
* :func:`total_desired_workers`, :func:`total_min_workers` and :func:`total_max_workers` are
  ``CalculateDesiredReplicas``, ``CalculateMinReplicas`` and ``CalculateMaxReplicas`` (``status.*WorkerReplicas``).
* :func:`pod_resources`, :func:`desired_resources` and :func:`min_resources` are ``CalculatePodResource``,
  ``CalculateDesiredResources`` (``status.desiredCPU`` etc.) and ``CalculateMinResources`` (a batch scheduler's
  reservation), as KubeRay v1.7.0 computes them: a group's Pod resources times ``replicas`` (unset: 0) or
  ``minReplicas``, times ``numOfHosts``, in one exact product (Go ``int64``, no ``int32`` wrap-around), suspended
  groups left out of both; the template is never changed (v1.6.1's ``CalculatePodResource`` wrote limit-only
  resources into the container's requests).

KubeRay computes in Go ``int32``. The desired and minimum totals therefore wrap around on overflow exactly like
KubeRay's (only absurd specs get there); the maximum total saturates at 2^31-1, as KubeRay v1.6.1 does
(``TestCalculateMaxReplicasOverflow``: default ``maxReplicas`` times ``numOfHosts > 1`` used to come out negative).

Details that follow v1.6.1's ``utils/util.go`` and ``utils/util_test.go`` to the letter:

* The clamp is "unset or below min → min, else above max → max", in that order, so ``minReplicas > maxReplicas``
  gives ``minReplicas`` when ``replicas`` is unset or below it, and ``maxReplicas`` otherwise. KubeRay's validation
  (``ValidateRayClusterSpec``) rejects such a spec before any of this runs, so it never reaches a status.
* Suspended groups count for nothing in the desired, minimum *and* maximum totals (``TestCalculateMinAndMaxReplicas``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import MAX_INT32, RayClusterSpec, WorkerGroupSpec
from raykube.golang.quantity import Quantity, parse_quantity

_MIG = re.compile(c.NVIDIA_MIG_RESOURCE_PATTERN)
_INT32_SPAN = 2**32
_INT32_MIN = -(2**31)


def int32(value: int) -> int:
    """Go ``int32`` wrap-around of an exact integer."""
    return (value - _INT32_MIN) % _INT32_SPAN + _INT32_MIN


def _suspended(group: WorkerGroupSpec) -> bool:
    return bool(group.suspend)


def desired_worker_replicas(group: WorkerGroupSpec) -> int:
    """``GetWorkerGroupDesiredReplicas``: ``clamp(replicas ?? minReplicas, min, max) * numOfHosts``, 0 if suspended."""
    if _suspended(group):
        return 0
    low, high = group.min_replicas, group.max_replicas
    if group.replicas is None or group.replicas < low:
        replicas = low
    elif group.replicas > high:
        replicas = high
    else:
        replicas = group.replicas
    return int32(replicas * group.num_of_hosts)


def _groups(spec: RayClusterSpec) -> list[WorkerGroupSpec]:
    return list(spec.worker_group_specs or [])


def total_desired_workers(spec: RayClusterSpec) -> int:
    """``CalculateDesiredReplicas``: the worker Pods the cluster should have (``status.desiredWorkerReplicas``)."""
    total = 0
    for group in _groups(spec):
        total = int32(total + desired_worker_replicas(group))
    return total


def total_min_workers(spec: RayClusterSpec) -> int:
    """``CalculateMinReplicas``: Σ ``minReplicas * numOfHosts`` over groups that are not suspended."""
    total = 0
    for group in _groups(spec):
        if not _suspended(group):
            total = int32(total + int32(group.min_replicas * group.num_of_hosts))
    return total


def total_max_workers(spec: RayClusterSpec) -> int:
    """``CalculateMaxReplicas``: Σ ``maxReplicas * numOfHosts`` over groups not suspended, saturating at 2^31-1."""
    total = sum(group.max_replicas * group.num_of_hosts for group in _groups(spec) if not _suspended(group))
    return min(total, MAX_INT32)


def is_gpu_resource_name(name: str) -> bool:
    """KubeRay ``IsGPUResourceKey``: ``*gpu`` (``nvidia.com/gpu``, ``amd.com/gpu``) or an NVIDIA MIG slice."""
    return name.endswith(c.GPU_RESOURCE_SUFFIX) or _MIG.search(name) is not None


def pod_resources(template: Mapping[str, Any] | None) -> dict[str, Quantity]:
    """``CalculatePodResource``: per resource name, Σ over the template's containers (not init containers) of the
    request, or of the limit where the container requests nothing of that resource. ``template`` is only read."""
    containers = (((template or {}).get("spec") or {}).get("containers")) or []
    total: dict[str, Quantity] = {}
    for container in containers:
        resources = (container or {}).get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        merged = {name: value for name, value in limits.items() if name not in requests}
        merged = {**requests, **merged}
        for name, value in merged.items():
            quantity = parse_quantity(value)
            total[name] = total[name] + quantity if name in total else quantity
    return total


def _scaled(quantity: Quantity, times: int) -> Quantity:
    """Go ``Quantity.Mul(int64)``: exact, in the quantity's own format (0 and negative factors included)."""
    return Quantity(quantity.value * times, quantity.format)


def _head_plus_groups(spec: RayClusterSpec, count: Callable[[WorkerGroupSpec], int]) -> dict[str, Quantity]:
    """The head Pod's resources plus, for each group that is not suspended, its Pod's resources times
    ``count(group) * numOfHosts`` (KubeRay v1.7.0 ``calculatePodResources`` with ``int64(numOfHosts) * int64(n)``)."""
    total = dict(pod_resources(spec.head_group_spec.template))
    for group in _groups(spec):
        if _suspended(group):
            continue
        times = count(group) * group.num_of_hosts
        for name, quantity in pod_resources(group.template).items():
            added = _scaled(quantity, times)
            total[name] = total[name] + added if name in total else added
    return total


def desired_resources(spec: RayClusterSpec) -> dict[str, Quantity]:
    """``CalculateDesiredResources``: the head's resources and each group's ``replicas * numOfHosts`` times over.
    ``replicas`` is taken as written (0 when unset: v1.7.0 dereferences it with a default), *not* clamped to
    min/max as the replica counters are."""
    return _head_plus_groups(spec, lambda group: group.replicas or 0)


def min_resources(spec: RayClusterSpec) -> dict[str, Quantity]:
    """``CalculateMinResources``: the head's resources and each group's ``minReplicas * numOfHosts`` times over
    (what a batch scheduler must reserve when the autoscaler is on); suspended groups count for nothing (v1.7.0)."""
    return _head_plus_groups(spec, lambda group: group.min_replicas)


def autoscaler_v1_restart_policy_groups(spec: RayClusterSpec) -> list[str]:
    """KubeRay v1.7.0 ``rayClusterReconcile``: with in-tree autoscaling and ``autoscalerOptions.version: v1`` set
    explicitly, the worker groups (in spec order) whose template sets a ``restartPolicy`` other than ``Never`` (the
    v1 autoscaler expects a failed worker Pod to go away, not to be restarted in place)."""
    options = spec.autoscaler_options
    if spec.enable_in_tree_autoscaling is not True or options is None or options.version != c.AUTOSCALER_VERSION_V1:
        return []
    found = []
    for group in _groups(spec):
        policy = (group.template.get("spec") or {}).get("restartPolicy")
        if policy and policy != c.RESTART_POLICY_NEVER:
            found.append(group.group_name)
    return found

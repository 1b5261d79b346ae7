"""Pod facts: phase, readiness (KubeRay's ``utils.IsRunningAndReady``, via :mod:`raykube.builders.status`), the
Ray labels that tie a Pod to its RayCluster group, container states, and what the scheduler reserves for a Pod
(requests, with :mod:`raykube.golang.quantity`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from raykube.api import constants as c
from raykube.builders.status import is_running_and_ready
from raykube.golang.quantity import Quantity, QuantityError, parse_quantity
from raykube.kube import objects

# Kubernetes core/v1 Pod conditions and phases the rules read.
POD_SCHEDULED: Final = "PodScheduled"
POD_INITIALIZED: Final = "Initialized"
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULING_GATED: Final = "SchedulingGated"
PHASE_PENDING: Final = "Pending"


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or PHASE_PENDING)


def is_ready(pod: Mapping[str, Any]) -> bool:
    return is_running_and_ready(pod)


def node_type(pod: Mapping[str, Any]) -> str:
    return str(objects.labels(pod).get(c.RAY_NODE_TYPE_LABEL) or "")


def group_of(pod: Mapping[str, Any]) -> str:
    return str(objects.labels(pod).get(c.RAY_NODE_GROUP_LABEL) or "")


def pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Pod spec of a Pod or of a Pod template."""
    spec: Mapping[str, Any] = obj.get("spec") or {}
    return spec


@dataclass(frozen=True)
class ContainerState:
    name: str
    init: bool
    ready: bool
    restarts: int
    state: str  # waiting | running | terminated | unknown
    reason: str
    message: str
    exit_code: int | None
    last_reason: str
    last_exit_code: int | None
    last_message: str
    path: str  # status.containerStatuses[name]


def container_states(pod: Mapping[str, Any]) -> list[ContainerState]:
    status = pod.get("status") or {}
    out: list[ContainerState] = []
    for field_name, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        for item in status.get(field_name) or []:
            state = item.get("state") or {}
            kind, detail = next(((k, v) for k, v in state.items() if isinstance(v, Mapping)), ("unknown", {}))
            last = ((item.get("lastState") or {}).get("terminated")) or {}
            out.append(
                ContainerState(
                    name=str(item.get("name") or ""),
                    init=init,
                    ready=bool(item.get("ready")),
                    restarts=int(item.get("restartCount") or 0),
                    state=kind,
                    reason=str(detail.get("reason") or ""),
                    message=str(detail.get("message") or ""),
                    exit_code=detail.get("exitCode"),
                    last_reason=str(last.get("reason") or ""),
                    last_exit_code=last.get("exitCode"),
                    last_message=str(last.get("message") or ""),
                    path=f"status.{field_name}[{item.get('name')}]",
                )
            )
    return out


def containers(spec: Mapping[str, Any], *, init: bool = True) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, container) of a Pod spec's init containers then containers."""
    fields = ("initContainers", "containers") if init else ("containers",)
    for field_name in fields:
        for index, container in enumerate(spec.get(field_name) or []):
            yield f"spec.{field_name}[{index}]", container or {}


def ray_container(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    items = spec.get("containers") or []
    return items[c.RAY_CONTAINER_INDEX] if items else {}


def quantity(value: object) -> Quantity | None:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Quantity]:
    """What the scheduler reserves for a Pod: Σ containers' requests (a limit stands in for a missing request), and
    each init container's when larger (``max(Σ containers, max init)`` per resource)."""
    total: dict[str, Quantity] = {}
    for _, container in containers(spec, init=False):
        for name, amount in container_requests(container).items():
            total[name] = total[name] + amount if name in total else amount
    for _, container in ((p, ct) for p, ct in containers(spec) if ".initContainers[" in p):
        for name, amount in container_requests(container).items():
            if name not in total or amount.value > total[name].value:
                total[name] = amount
    return total


def container_requests(container: Mapping[str, Any]) -> dict[str, Quantity]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    out: dict[str, Quantity] = {}
    for name, value in merged.items():
        amount = quantity(value)
        if amount is not None:
            out[str(name)] = amount
    return out

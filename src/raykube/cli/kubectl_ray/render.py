"""What ``kubectl ray`` prints, as pure functions of the objects it read: tables, ages and YAML.

The tables are KubeRay v1.6.1's plugin tables (``kubectl-plugin/pkg/cmd/get``), printed the way kubectl's
human-readable printer prints them: upper-case headers, columns padded to their widest cell plus three spaces (six at
least), the last column unpadded, and nothing at all for an empty table.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from raykube.api import constants as c
from raykube.golang.quantity import ZERO, Quantity, QuantityError, multiply, parse_quantity, sum_quantities
from raykube.kube.times import parse_time

INT32_MAX = 2**31 - 1  # what `get workergroup` shows for a group without maxReplicas

CLUSTER_COLUMNS = (
    "Name", "Namespace", "Desired Workers", "Available Workers", "CPUs", "GPUs", "TPUs", "Memory", "Condition",
    "Status", "Age",
)  # fmt: skip
WORKERGROUP_COLUMNS = ("Name", "Min", "Max", "Replicas", "CPUs", "GPUs", "TPUs", "Memory", "Cluster")
NODE_COLUMNS = ("Name", "CPUs", "GPUs", "TPUs", "Memory", "Cluster", "Type", "Worker Group", "Age")
# The condition `get cluster` shows: the first of these that is True (kubectl-plugin/pkg/util/conditions.go).
CONDITION_ORDER = (
    "RayClusterProvisioned",
    "HeadPodReady",
    "ReplicaFailure",
    c.CONDITION_RAYCLUSTER_SUSPENDED,
    c.CONDITION_RAYCLUSTER_SUSPENDING,
)


def table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """kubectl's table: headers upper-cased, cells tab-aligned (min width 6, padding 3); '' for no rows."""
    body = [[_cell(value) for value in row] for row in rows]
    if not body:
        return ""
    lines = [[name.upper() for name in columns], *body]
    widths = [max(6, max(len(line[i]) for line in lines) + 3) for i in range(len(columns) - 1)]
    out = []
    for line in lines:
        out.append("".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)) + line[-1])
    return "\n".join(out) + "\n"


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    for stop in ("\n", "\r", "\f"):
        if stop in text:
            text = text.split(stop, 1)[0] + "..."
    return text.replace("\x1b", "^[")


def age(created: object, now: dt.datetime) -> str:
    """``metadata.creationTimestamp`` as kubectl's AGE column shows it (``duration.HumanDuration``)."""
    moment = parse_time(created)
    if moment is None:
        return "<unknown>"
    return human_duration((now - moment).total_seconds())


def human_duration(seconds: float) -> str:  # noqa: PLR0911 - one return per row of kubectl's table
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``: ``59s``, ``2m30s``, ``60m``, ``3h``, ``2y``."""
    if seconds < -1:
        return "<invalid>"
    s = max(0, int(seconds))
    minutes, hours = s // 60, s // 3600
    if s < 120:
        return f"{s}s"
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    years, days = hours // 24 // 365, hours // 24 % 365
    if hours < 24 * 365 * 8:
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{years}y"


# ------------------------------------------------------------------------------------------------- get cluster
def relevant_condition(status: Mapping[str, Any]) -> str:
    true = {cond.get("type") for cond in status.get("conditions") or [] if cond.get("status") == "True"}
    return next((kind for kind in CONDITION_ORDER if kind in true), "")


def cluster_row(cluster: Mapping[str, Any], now: dt.datetime) -> list[object]:
    meta, status = cluster.get("metadata") or {}, cluster.get("status") or {}
    return [
        meta.get("name", ""),
        meta.get("namespace", ""),
        status.get("desiredWorkerReplicas") or 0,
        status.get("availableWorkerReplicas") or 0,
        status.get("desiredCPU") or "0",
        status.get("desiredGPU") or "0",
        status.get("desiredTPU") or "0",
        status.get("desiredMemory") or "0",
        relevant_condition(status),
        status.get("state") or "",
        age(meta.get("creationTimestamp"), now),
    ]


# ------------------------------------------------------------------------------------------------- get workergroup
def _quantity(value: object) -> Quantity:
    try:
        return parse_quantity(value)  # type: ignore[arg-type]
    except (QuantityError, TypeError, ValueError):
        return ZERO


def pod_template_resources(template: Mapping[str, Any]) -> dict[str, Quantity]:
    """One Pod's resources as the plugin counts them: every container's requests, plus what only its limits name."""
    totals: dict[str, list[Quantity]] = {}
    for container in (template.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        for name, value in merged.items():
            totals.setdefault(name, []).append(_quantity(value))
    return {name: sum_quantities(values) for name, values in totals.items()}


def _is_ready_worker(pod: Mapping[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    status = pod.get("status") or {}
    ready = any(cond.get("type") == "Ready" and cond.get("status") == "True" for cond in status.get("conditions") or [])
    return labels.get(c.RAY_NODE_TYPE_LABEL) == c.NODE_TYPE_WORKER and status.get("phase") == "Running" and ready


def workergroup_row(
    cluster: Mapping[str, Any], group: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], all_namespaces: bool
) -> list[object]:
    meta = cluster.get("metadata") or {}
    replicas = int(group.get("replicas") or 0)
    per_pod = {} if group.get("suspend") else pod_template_resources(group.get("template") or {})
    total = {name: multiply(value, replicas) for name, value in per_pod.items()}
    max_replicas = group.get("maxReplicas")
    row: list[object] = [
        group.get("groupName", ""),
        group.get("minReplicas") or 0,
        INT32_MAX if max_replicas is None else max_replicas,
        f"{sum(1 for pod in pods if _is_ready_worker(pod))}/{replicas}",
        total.get("cpu", ZERO),
        total.get(c.NVIDIA_GPU_RESOURCE_NAME, ZERO),
        total.get(c.TPU_RESOURCE_NAME, ZERO),
        total.get("memory", ZERO),
        meta.get("name", ""),
    ]
    return [meta.get("namespace", ""), *row] if all_namespaces else row


# ------------------------------------------------------------------------------------------------- get node
def node_row(pod: Mapping[str, Any], now: dt.datetime, all_namespaces: bool) -> list[object]:
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    requests = (containers[0].get("resources") or {}).get("requests") or {}
    row: list[object] = [
        meta.get("name", ""),
        *(_quantity(requests.get(name, "0")) for name in ("cpu", c.NVIDIA_GPU_RESOURCE_NAME, c.TPU_RESOURCE_NAME)),
        _quantity(requests.get("memory", "0")),
        labels.get(c.RAY_CLUSTER_LABEL, ""),
        labels.get(c.RAY_NODE_TYPE_LABEL, ""),
        labels.get(c.RAY_NODE_GROUP_LABEL, ""),
        age(meta.get("creationTimestamp"), now),
    ]
    return [meta.get("namespace", ""), *row] if all_namespaces else row


# ------------------------------------------------------------------------------------------------- YAML
class _Dumper(yaml.SafeDumper):
    """go-yaml v2's look: keys sorted, lists not indented under their key, strings that read as another type in
    double quotes (``cpu: "2"``)."""


# What go-yaml v2 also reads as a bool or a number, where PyYAML reads a string: y/n, 1e3 (no dot), 0o17.
_GO_NOT_STR = re.compile(r"[yYnN]|[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|0o[0-7]+")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    implicit = dumper.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    quoted = value == "" or implicit != "tag:yaml.org,2002:str" or _GO_NOT_STR.fullmatch(value) is not None
    style = '"' if quoted else ("|" if "\n" in value else None)
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def to_yaml(obj: Mapping[str, Any]) -> str:
    return yaml.dump(dict(obj), Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=80)

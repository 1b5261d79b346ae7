"""The ``ray start`` command KubeRay generates for a Ray container, and the container command around it.

Behaviour of KubeRay v1.6.1 ``controllers/ray/common/pod.go`` (``setMissingRayStartParams``,
``updateRayStartParamsResources``, ``updateRayStartParamsLabels``, ``generateRayStartCommand``,
``addWellKnownAcceleratorResources``, ``convertParamMap``) and ``utils/util.go`` (``GetContainerCommand``),
re-implemented over plain dicts, with the quirks that ``common/pod_test.go`` pins kept on purpose: double spaces
between flags and a trailing space, ``block`` forced on, CPUs rounded up, memory and accelerators from limits only.

Every function that "fills" rayStartParams mutates the dict it is given, as KubeRay mutates its map; callers pass a
private copy.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from raykube.api import constants as c
from raykube.golang import gojson
from raykube.golang.quantity import QuantityError, parse_quantity

__all__ = [
    "container_command",
    "convert_param_map",
    "generate_ray_start_command",
    "go_json",
    "is_gpu_resource_key",
    "quantity_value",
    "set_missing_ray_start_params",
    "update_params_from_group_labels",
    "update_params_from_group_resources",
]

# KubeRay v1.7.0 common/pod.go convertParamMap: keys whose "true"/"false" value is passed as --key=value
# (include-log-monitor is v1.7.0's, PR #4857: "false" turns Ray's log monitor off).
_BOOLEAN_VALUED_PARAMS = frozenset({"log-color", "include-dashboard", "include-log-monitor"})
# KubeRay utils/resources.go IsGPUResourceKey: Nvidia MIG slices such as nvidia.com/mig-2g.32gb.
_MIG_GPU_KEY = re.compile(r"nvidia\.com/mig-[0-9]+g\.[0-9]+gb\Z")
_QUOTES_AND_SPACES = "'\"` "


# --------------------------------------------------------------------------------------------------------------------
# Quantities and Go's JSON
# --------------------------------------------------------------------------------------------------------------------


def _parse(value: object) -> Fraction | None:
    """The exact value of a quantity, or None when absent or unparsable (KubeRay would never see such a value)."""
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse_quantity(value).value
    except QuantityError:
        return None


def quantity_value(value: Fraction) -> int:
    """``Quantity.Value()``: the integer value rounded up, away from zero (``500m`` → 1, ``1500m`` → 2)."""
    return math.ceil(value) if value >= 0 else -math.ceil(-value)


def go_json(resources: Mapping[str, float]) -> str:
    """``json.Marshal`` of a Go ``map[string]float64``: keys sorted, no spaces, Go's number format."""
    return gojson.json_marshal({key: float(value) for key, value in resources.items()})


def _resources_param(resources: Mapping[str, float]) -> str:
    """The ``resources`` flag value KubeRay writes: the JSON wrapped in single quotes."""
    return f"'{go_json(resources)}'"


# --------------------------------------------------------------------------------------------------------------------
# rayStartParams
# --------------------------------------------------------------------------------------------------------------------


def is_gpu_resource_key(key: str) -> bool:
    """KubeRay ``IsGPUResourceKey``: a key ending in ``gpu``, or an Nvidia MIG slice."""
    return key.endswith("gpu") or _MIG_GPU_KEY.search(key) is not None


def update_params_from_group_resources(params: dict[str, str], resources: Mapping[str, str] | None) -> None:
    """``updateRayStartParamsResources``: a group's ``resources`` override ``num-cpus``/``memory``/``num-gpus`` and
    replace ``resources`` with the remaining keys as JSON. Names are compared in lower case; unparsable quantities are
    skipped."""
    if not resources:
        return
    custom: dict[str, float] = {}
    for name, quantity in resources.items():
        value = _parse(quantity)
        if value is None:
            continue
        normalized = name.lower()
        if normalized == "cpu":
            params["num-cpus"] = str(quantity_value(value))
        elif normalized == "memory":
            params["memory"] = str(quantity_value(value))
        elif is_gpu_resource_key(normalized):
            params["num-gpus"] = str(quantity_value(value))
        else:
            custom[name] = float(value)
    if custom:
        params["resources"] = _resources_param(custom)


def update_params_from_group_labels(params: dict[str, str], labels: Mapping[str, str] | None) -> None:
    """``updateRayStartParamsLabels``: a group's ``labels`` become ``labels=k1=v1,k2=v2`` (keys sorted)."""
    if labels:
        params[c.RAY_START_LABELS_PARAM] = ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def set_missing_ray_start_params(params: dict[str, str], *, head: bool, head_port: str, fqdn: str) -> None:
    """``setMissingRayStartParams``: the worker's ``address``, the head's ``dashboard-host``, the metrics export port,
    ``block`` (always forced on) and the dashboard agent port. Values the user set win, except ``block``."""
    if head:
        params.setdefault("dashboard-host", "0.0.0.0")  # noqa: S104 - the dashboard must listen on the Pod IP
    else:
        params.setdefault("address", f"{fqdn}:{head_port}")
    params.setdefault("metrics-export-port", str(c.DEFAULT_METRICS_PORT))
    params["block"] = "true"
    params.setdefault("dashboard-agent-listen-port", str(c.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT))


def _existing_resources(params: Mapping[str, str]) -> dict[str, float] | None:
    """``getResourcesMap``: the JSON in ``resources`` (quotes trimmed), {} when absent, None when not a JSON object of
    numbers (KubeRay then skips the accelerator step, GPUs included)."""
    text = params.get("resources")
    if text is None:
        return {}
    try:
        parsed = json.loads(text.strip(_QUOTES_AND_SPACES))
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    values: dict[str, float] = {}
    for key, value in parsed.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        values[key] = float(value)
    return values


def _add_accelerators(params: dict[str, str], limits: Mapping[str, Any]) -> None:
    """``addWellKnownAcceleratorResources``: ``num-gpus`` from the first GPU limit (keys sorted), and the first TPU or
    Neuron limit into the ``resources`` JSON unless it already names one of them."""
    if not limits:
        return
    existing = _existing_resources(params)
    if existing is None:
        return
    accelerators = c.CUSTOM_ACCELERATOR_RAY_RESOURCES
    accelerator_added = any(name in existing for name in accelerators.values())
    for key in sorted(limits):
        value = _parse(limits[key])
        if value is None or value == 0:
            continue
        if "num-gpus" not in params and is_gpu_resource_key(key):
            params["num-gpus"] = str(quantity_value(value))
        if not accelerator_added and key in accelerators:
            if accelerators[key] not in existing:
                existing[accelerators[key]] = float(value)
                params["resources"] = _resources_param(existing)
            accelerator_added = True


def _fill_cpu_and_memory(params: dict[str, str], resources: Mapping[str, Any]) -> None:
    limits: Mapping[str, Any] = resources.get("limits") or {}
    requests: Mapping[str, Any] = resources.get("requests") or {}
    if "num-cpus" not in params:
        for source in (limits, requests):  # the request only when the limit is absent or zero
            cpu = _parse(source.get("cpu"))
            if cpu:
                params["num-cpus"] = str(quantity_value(cpu))
                break
    if "memory" not in params:
        memory = _parse(limits.get("memory"))
        if memory:
            params["memory"] = str(quantity_value(memory))


def convert_param_map(params: Mapping[str, str]) -> str:
    """``convertParamMap``: `` --key `` for a true switch, nothing for a false one, `` --key=value `` otherwise; keys
    sorted. Every fragment keeps its leading and trailing space."""
    flags: list[str] = []
    for key in sorted(params):
        value = params[key]
        if value.lower() in {"true", "false"} and key not in _BOOLEAN_VALUED_PARAMS:
            if value.lower() == "true":
                flags.append(f" --{key} ")
        else:
            flags.append(f" --{key}={value} ")
    return "".join(flags)


def generate_ray_start_command(params: dict[str, str], *, head: bool, resources: Mapping[str, Any] | None) -> str:
    """``generateRayStartCommand``: fill ``num-cpus``, ``memory``, ``num-gpus`` and accelerators from the Ray
    container's resources where absent, then serialise. ``params`` ends up as the final rayStartParams."""
    resources = resources or {}
    _fill_cpu_and_memory(params, resources)
    _add_accelerators(params, resources.get("limits") or {})
    prefix = "ray start --head " if head else "ray start "
    return prefix + convert_param_map(params)


def container_command(*, login_shell: bool, options: str = "") -> list[str]:
    """``GetContainerCommand``: ``/bin/bash -c<options> --``, with ``l`` appended when ENABLE_LOGIN_SHELL is true
    (``-cl``; the RayJob submitter passes ``e``: ``-ce``, ``-cel``)."""
    return ["/bin/bash", "-c" + options + ("l" if login_shell else ""), "--"]

"""HTTPMode: the operator submits the job itself, with the request KubeRay v1.6.1 sends.

* :func:`submit_request_body` is the HTTPMode ``POST /api/jobs/`` body (``dashboardclient.ConvertRayJobToReq`` and
  ``json.Marshal`` of ``utils/types.RayJobRequest``), byte for byte; :func:`submit_request` is the same body as the
  Ray dashboard reads it.

The entrypoint is sent as written (K8sJobMode's command trims it).
"""

from __future__ import annotations

import json
from typing import Any

from raykube.api.resources import RayJob
from raykube.builders.rayjob.common import (
    RayJobBuildError,
    _float32,
    _job_id,
    _spec,
)
from raykube.golang import gojson, goyaml
from raykube.golang.errors import GoError

__all__ = ["submit_request", "submit_request_body"]


class _JsonNumber(str):
    """A JSON number's text, kept so Go's messages can quote it."""

    __slots__ = ()


_JSON_KINDS = {str: "string", bool: "bool", list: "array", dict: "object", _JsonNumber: "number"}


def _json_kind(value: Any) -> str:
    return "null" if value is None else _JSON_KINDS.get(type(value), type(value).__name__)


def _reject_constant(text: str) -> Any:
    raise ValueError(f"invalid character {text[0]!r} looking for beginning of value")


def _entrypoint_resources(text: str) -> dict[str, float]:
    """``json.Unmarshal(entrypointResources, &map[string]float32)``: each value the nearest float32 to its text;
    ``null`` values are 0; a non-object, non-number or out-of-range value is Go's error."""
    try:
        parsed = json.loads(text, parse_int=_JsonNumber, parse_float=_JsonNumber, parse_constant=_reject_constant)
    except ValueError as error:
        raise RayJobBuildError(str(error)) from None
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise RayJobBuildError(f"json: cannot unmarshal {_json_kind(parsed)} into Go value of type map[string]float32")
    resources: dict[str, float] = {}
    for key, value in parsed.items():
        if value is None:
            resources[key] = 0.0
            continue
        if not isinstance(value, _JsonNumber):
            raise RayJobBuildError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type float32")
        try:
            resources[key] = gojson.float32_from_json(str(value))
        except GoError as error:
            raise RayJobBuildError(str(error)) from None
    return resources


def _sorted_maps(value: Any) -> Any:
    """Data decoded into Go's ``map[string]any``, laid out for :func:`gojson.json_marshal` with ``sort_keys=False``."""
    if isinstance(value, dict):
        return {key: _sorted_maps(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_maps(item) for item in value]
    return value


def _runtime_env(text: str) -> dict[str, Any]:
    """``UnmarshalRuntimeEnvYAML``: ``sigs.k8s.io/yaml.Unmarshal`` into a ``map[string]any`` (every number a
    float64, as Go's JSON decoder makes them)."""
    try:
        value = json.loads(goyaml.yaml_to_json(text), parse_int=float)
    except GoError as error:
        message = f"failed to unmarshal RuntimeEnvYAML: {text}: error converting YAML to JSON: {error}"
        raise RayJobBuildError(message) from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RayJobBuildError(
            f"failed to unmarshal RuntimeEnvYAML: {text}: error unmarshaling JSON: while decoding JSON: "
            f"json: cannot unmarshal {_json_kind(value)} into Go value of type types.RuntimeEnvType"
        )
    return value


def submit_request_body(rayjob: RayJob, job_id: str | None = None) -> bytes:
    """The HTTPMode ``POST /api/jobs/`` body, byte for byte as KubeRay sends it: ``RayJobRequest``'s fields in its
    order, each left out when empty or zero (``omitempty``) except ``entrypoint`` (as written, not trimmed);
    ``runtime_env`` from ``runtimeEnvYAML`` with float64 numbers, ``metadata``, ``entrypoint_resources`` parsed from
    its JSON text into float32 values, ``submission_id`` (``job_id``, else ``status.jobId``), and
    ``entrypoint_num_cpus``/``entrypoint_num_gpus`` as float32 (``0.1`` is sent as ``0.1``)."""
    spec = _spec(rayjob)
    body: dict[str, Any] = {}
    runtime_env = _runtime_env(spec.runtime_env_yaml) if spec.runtime_env_yaml else {}
    if runtime_env:
        body["runtime_env"] = _sorted_maps(runtime_env)
    if spec.metadata:
        body["metadata"] = _sorted_maps(dict(spec.metadata))
    resources = _entrypoint_resources(spec.entrypoint_resources) if spec.entrypoint_resources else {}
    if resources:
        body["entrypoint_resources"] = {key: gojson.Float32(resources[key]) for key in sorted(resources)}
    body["entrypoint"] = spec.entrypoint or ""
    submission_id = _job_id(rayjob, job_id)
    if submission_id:
        body["submission_id"] = submission_id
    for key, value, field in (
        ("entrypoint_num_cpus", spec.entrypoint_num_cpus, "entrypointNumCpus"),
        ("entrypoint_num_gpus", spec.entrypoint_num_gpus, "entrypointNumGpus"),
    ):
        number = _float32(value, field)
        if number != 0:
            body[key] = gojson.Float32(number)
    try:
        return gojson.json_marshal(body, sort_keys=False).encode()
    except GoError as error:
        raise RayJobBuildError(str(error)) from None


def submit_request(rayjob: RayJob, job_id: str | None = None) -> dict[str, Any]:
    """:func:`submit_request_body` as the Ray dashboard reads it (``json.loads``): float32 values appear as their
    shortest decimal (``0.1``), whole runtime-env numbers as ints. POST the body itself to send KubeRay's bytes."""
    parsed: dict[str, Any] = json.loads(submit_request_body(rayjob, job_id=job_id))
    return parsed

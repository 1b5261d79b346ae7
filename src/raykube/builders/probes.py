"""The liveness and readiness probes KubeRay injects into a Ray container.

Behaviour of KubeRay v1.6.1 ``controllers/ray/common/pod.go`` ``initLivenessAndReadinessProbe``:

* a probe is added only when the container has none of that kind (the caller also honours ENABLE_PROBES_INJECTION);
* Ray 2.53.0 or later (``version.ParseGeneric``; an unset or unparsable version counts as older) gets
  ``httpGet /api/healthz`` on the dashboard agent port; older Ray gets ``bash -c`` running ``wget`` checks joined with
  `` && ``: the raylet check on every node, plus the GCS check on the head. The GCS check's ``-T 10`` is KubeRay's
  readiness failure threshold reused as a timeout, a quirk kept on purpose;
* a RayService worker's readiness probe is always exec, the raylet check plus the Serve proxy check on the container
  port named ``serve`` (default 8000), with failureThreshold 1;
* ports come from the final rayStartParams (``dashboard-agent-listen-port``, ``dashboard-port``); a value that is not
  an int32 falls back to the default.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.validation import ray_version_at_least

__all__ = ["inject_probes"]

_INT32 = re.compile(r"[+-]?[0-9]+\Z")
_INT32_MAX = 2**31 - 1


def _port(params: Mapping[str, str], key: str, default: int) -> int:
    """``strconv.ParseInt(value, 10, 32)`` of a rayStartParams value, else the default."""
    text = params.get(key)
    if text is None or _INT32.match(text) is None:
        return default
    value = int(text)
    return value if -_INT32_MAX - 1 <= value <= _INT32_MAX else default


def _wget(timeout: int, port: int, path: str) -> str:
    """KubeRay utils/constant.go ``BaseWgetHealthCommand`` (paths without their leading slash)."""
    return f"wget --tries 1 -T {timeout} -q -O- http://localhost:{port}/{path.lstrip('/')} | grep success"


def _exec(commands: list[str]) -> dict[str, Any]:
    return {"exec": {"command": ["bash", "-c", " && ".join(commands)]}}


def _serve_port(container: Mapping[str, Any]) -> int:
    """``FindContainerPort(container, "serve", 8000)``."""
    for port in container.get("ports") or []:
        if port.get("name") == c.SERVING_PORT_NAME:
            return int(port.get("containerPort", c.DEFAULT_SERVING_PORT))
    return c.DEFAULT_SERVING_PORT


def inject_probes(
    container: dict[str, Any], *, head: bool, from_rayservice: bool, params: Mapping[str, str], ray_version: str | None
) -> None:
    """Add the liveness and readiness probes the Ray ``container`` lacks (mutates it)."""
    agent_port = _port(params, "dashboard-agent-listen-port", c.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT)
    dashboard_port = _port(params, "dashboard-port", c.DEFAULT_DASHBOARD_PORT)
    raylet = _wget(c.DEFAULT_WORKER_PROBE_TIMEOUT_SECONDS, agent_port, c.RAY_LOCAL_RAYLET_HEALTHZ_PATH)
    commands = [raylet]
    if head:
        commands.append(_wget(c.DEFAULT_READINESS_FAILURE_THRESHOLD, dashboard_port, c.RAY_GCS_HEALTHZ_PATH))
    if ray_version_at_least(ray_version, c.MIN_RAY_VERSION_HTTP_PROBES):
        handler: dict[str, Any] = {"httpGet": {"path": c.RAY_HEALTHZ_PATH, "port": agent_port}}
    else:
        handler = _exec(commands)
    timeout = c.DEFAULT_HEAD_PROBE_TIMEOUT_SECONDS if head else c.DEFAULT_WORKER_PROBE_TIMEOUT_SECONDS

    if container.get("livenessProbe") is None:
        container["livenessProbe"] = {
            "initialDelaySeconds": c.DEFAULT_LIVENESS_INITIAL_DELAY_SECONDS,
            "timeoutSeconds": timeout,
            "periodSeconds": c.DEFAULT_PROBE_PERIOD_SECONDS,
            "successThreshold": c.DEFAULT_PROBE_SUCCESS_THRESHOLD,
            "failureThreshold": c.DEFAULT_LIVENESS_FAILURE_THRESHOLD,
            **copy.deepcopy(handler),
        }

    if container.get("readinessProbe") is None:
        readiness: dict[str, Any] = {
            "initialDelaySeconds": c.DEFAULT_READINESS_INITIAL_DELAY_SECONDS,
            "timeoutSeconds": timeout,
            "periodSeconds": c.DEFAULT_PROBE_PERIOD_SECONDS,
            "successThreshold": c.DEFAULT_PROBE_SUCCESS_THRESHOLD,
            "failureThreshold": c.DEFAULT_READINESS_FAILURE_THRESHOLD,
            **copy.deepcopy(handler),
        }
        if from_rayservice and not head:
            # The Serve proxy check: "-T 10" is KubeRay's readiness initial delay reused as a timeout.
            serve = _wget(c.DEFAULT_READINESS_INITIAL_DELAY_SECONDS, _serve_port(container), c.RAY_SERVE_HEALTHZ_PATH)
            readiness.pop("httpGet", None)
            readiness.update(_exec([raylet, serve]))
            readiness["failureThreshold"] = c.SERVE_WORKER_READINESS_FAILURE_THRESHOLD
        container["readinessProbe"] = readiness

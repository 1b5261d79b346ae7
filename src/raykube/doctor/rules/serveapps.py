"""Serve applications of a RayService that fail: ``DEPLOY_FAILED`` or ``UNHEALTHY`` in its status, with Serve's
message and the deployments that are not settling; one whose ``runtime_env`` could not be installed is named as such,
with the application's ``runtime_env`` from ``spec.serveConfigV2`` (:mod:`raykube.doctor.facts.serve`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor.facts import serve
from raykube.doctor.model import Finding
from raykube.doctor.rules.base import STAGE_WORKLOAD, checker, field_evidence, finding, rule
from raykube.doctor.snapshot import Snapshot
from raykube.kube import objects

SERVE_APP_FAILED = rule(
    "S03",
    "SERVE_APPLICATION_FAILED",
    STAGE_WORKLOAD,
    "A Serve application is DEPLOY_FAILED or UNHEALTHY (its runtime_env that cannot be installed named as such)",
    ["ray-project/kuberay#510", "ray-project/ray#26209"],
)
FAILED_APP_STATUSES: Final = (c.SERVE_APP_DEPLOY_FAILED, c.SERVE_APP_UNHEALTHY)
# Ray Serve DeploymentStatus values of a deployment that is fine or on its way (KubeRay's DeploymentStatusEnum).
SETTLING_DEPLOYMENT_STATUSES: Final = (
    None,
    c.SERVE_DEPLOYMENT_HEALTHY,
    c.SERVE_DEPLOYMENT_UPDATING,
    c.SERVE_DEPLOYMENT_UPSCALING,
    c.SERVE_DEPLOYMENT_DOWNSCALING,
)


@checker(SERVE_APP_FAILED)
def check_serve_applications(snap: Snapshot) -> Iterator[Finding]:
    for service in snap.rayservices:
        ref = facts.ref(service, c.KIND_RAYSERVICE)
        status: Mapping[str, Any] = service.get("status") or {}
        for side in ("activeServiceStatus", "pendingServiceStatus"):
            cluster = str((status.get(side) or {}).get("rayClusterName") or "")
            apps = (status.get(side) or {}).get("applicationStatuses") or {}
            for app_name, app in sorted(apps.items()):
                state = str((app or {}).get("status") or "")
                if state not in FAILED_APP_STATUSES:
                    continue
                evidence = [field_evidence(ref, f"status.{side}.applicationStatuses[{app_name}].status", state,
                                           "cr.status")]  # fmt: skip
                if (app or {}).get("message"):
                    evidence.append(field_evidence(ref, f"status.{side}.applicationStatuses[{app_name}].message",
                                                   _clip(str(app["message"])), "cr.status"))  # fmt: skip
                for deployment, info in sorted(((app or {}).get("serveDeploymentStatuses") or {}).items()):
                    if (info or {}).get("status") not in SETTLING_DEPLOYMENT_STATUSES:
                        text = f"{info.get('status')}" + (
                            f": {_clip(str(info['message']))}" if info.get("message") else ""
                        )
                        evidence.append(
                            field_evidence(ref, f"...serveDeploymentStatuses[{deployment}]", text, "cr.status")
                        )
                env = serve.application_runtime_env(service, app_name)
                installing = env is not None and serve.runtime_env_failed(str((app or {}).get("message") or ""))
                if installing:
                    evidence.append(field_evidence(ref, f"spec.serveConfigV2 {app_name}.runtime_env", dict(env or {}),
                                                   "cr.spec"))  # fmt: skip
                title = f"Serve application {app_name} is {state} on RayCluster {cluster}"
                yield finding(
                    SERVE_APP_FAILED,
                    cluster=ref,
                    obj=ref,
                    severity="error",
                    title=title + (": its runtime_env could not be installed" if installing else ""),
                    evidence=evidence,
                    explanation=_RUNTIME_ENV_WHY if installing else _DEPLOY_WHY,
                    remediation=[
                        _RUNTIME_ENV_FIX
                        if installing
                        else f"`kubectl -n {objects.namespace(service)} exec <head of {cluster}> -- serve status`, "
                        "and the Serve logs in the head at /tmp/ray/session_latest/logs/serve/."
                    ],
                )


_DEPLOY_WHY: Final = (
    "Ray Serve could not deploy the application or its replicas fail their health checks: the import path, the code "
    "(a runtime_env working_dir or pip install that needs the internet), or a replica that crashes or asks for "
    "resources no node has."
)
_RUNTIME_ENV_WHY: Final = (
    "Ray sets up an application's runtime_env (downloads working_dir and py_modules, installs pip or uv packages) on "
    "each node before its replicas start; when that fails nothing of the application runs. The URL or index must be "
    "reachable from every Ray Pod, not only from where the config was written."
)
_RUNTIME_ENV_FIX: Final = (
    "Put the code in the image or in a store the Pods reach (an object store in the cluster), or fix the URL or "
    "package name; the runtime env agent's log in the head (/tmp/ray/session_latest/logs/runtime_env_setup-*.log) "
    "says what failed."
)


def _clip(text: str, limit: int = 300) -> str:
    """A message as evidence: a Python traceback (what Serve reports for an application that fails to build) by its
    last line, the exception, which is what tells the cause; anything else cut at ``limit`` characters."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if "Traceback (most recent call last)" in text and lines:
        text = f"{lines[-1]} (the last line of a {len(lines)}-line traceback)"
    return text if len(text) <= limit else text[: limit - 1] + "…"

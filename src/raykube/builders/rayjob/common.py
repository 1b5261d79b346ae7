"""What the RayJob builders share: :class:`RayJobBuildError`, the names KubeRay generates, the dashboard URL, typed
reads of the RayJob (its spec, and the status values the builders take as arguments when given), and the labels and
owner reference of what a RayJob owns.

* :func:`dashboard_url` is ``utils.FetchHeadServiceURL``; :func:`new_job_id` and :func:`new_cluster_name` are
  ``utils.GenerateRayJobId`` and ``utils.GenerateRayClusterName`` (``controllers/ray/utils/util.go``).

The underscored names are private to this package, not to this module: the other modules import them.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.rayjob import RayJobSpec
from raykube.api.resources import RayCluster, RayJob
from raykube.builders import names
from raykube.golang import gojson
from raykube.golang.errors import GoError

__all__ = ["RayJobBuildError", "dashboard_url", "new_cluster_name", "new_job_id"]


class RayJobBuildError(ValueError):
    """KubeRay cannot build this object from the RayJob; the message is KubeRay's error where it has one."""


def _name(obj: RayJob | RayCluster) -> str:
    return str(obj.metadata.get("name") or "")


def _namespace(obj: RayJob | RayCluster) -> str | None:
    namespace = obj.metadata.get("namespace")
    return str(namespace) if namespace else None


def _spec(rayjob: RayJob) -> RayJobSpec:
    if rayjob.spec is None:
        raise RayJobBuildError(f"RayJob {_name(rayjob)!r} has no spec")
    return rayjob.spec


def _mode(rayjob: RayJob) -> str:
    return _spec(rayjob).submission_mode or ""


def _job_id(rayjob: RayJob, job_id: str | None) -> str:
    if job_id is not None:
        return job_id
    return (rayjob.status.job_id if rayjob.status is not None else None) or ""


def _dashboard_url(rayjob: RayJob, url: str | None) -> str:
    if url is not None:
        return url
    return (rayjob.status.dashboard_url if rayjob.status is not None else None) or ""


def new_job_id(rayjob: RayJob, rng: random.Random | None = None) -> str:
    """``GenerateRayJobId``: ``<rayjob>-<5 random characters>``, the submission id when ``spec.jobId`` is empty."""
    return f"{_name(rayjob)}-{names.random_suffix(rng)}"


def new_cluster_name(rayjob: RayJob, rng: random.Random | None = None) -> str:
    """``GenerateRayClusterName``: ``<rayjob>-<5 random characters>``, the RayCluster the RayJob creates (a new one
    on every retry)."""
    return f"{_name(rayjob)}-{names.random_suffix(rng)}"


def dashboard_url(
    head_service: Mapping[str, Any],
    *,
    cluster_domain: str = c.DEFAULT_CLUSTER_DOMAIN,
    port_name: str = c.DASHBOARD_PORT_NAME,
) -> str:
    """``FetchHeadServiceURL``: ``<svc>.<ns>.svc.<domain>:<port>`` of the RayCluster's head Service (the live one,
    named :func:`raykube.builders.names.head_service_name`), the port being its first one named ``port_name``; no
    scheme. ``cluster_domain`` is the operator's ``CLUSTER_DOMAIN`` (``BuildOptions.cluster_domain``)."""
    metadata = head_service.get("metadata") or {}
    for port in (head_service.get("spec") or {}).get("ports") or []:
        if port.get("name") == port_name:
            fqdn = names.service_fqdn(str(metadata.get("name", "")), str(metadata.get("namespace", "")), cluster_domain)
            return f"{fqdn}:{int(port.get('port', 0))}"
    raise RayJobBuildError(f"{port_name} port is not found")


def _float32(value: float | None, field: str) -> float:
    """The float32 KubeRay holds for a RayJob number field (0 when unset)."""
    if value is None:
        return 0.0
    try:
        return gojson.float32_from_json(value)
    except GoError as error:
        raise RayJobBuildError(f"spec.{field}: {error}") from None


def _rayjob_owner(rayjob: RayJob) -> dict[str, Any]:
    return names.owner_reference(c.KIND_RAYJOB, _name(rayjob), str(rayjob.metadata.get("uid", "")))


def _originated_labels(rayjob: RayJob) -> dict[str, str]:
    return {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: _name(rayjob), c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYJOB}

"""What the RayService builders share: :class:`RayServiceBuildError`, typed reads of the RayService and its status
(a wire dict), and the labels and owner reference every object made for a RayService carries.

The underscored names are private to this package, not to this module: the other modules import them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.rayservice import RayServiceSpec
from raykube.api.resources import RayCluster, RayService
from raykube.builders import names

__all__ = ["RayServiceBuildError"]

_TRUE, _FALSE, _UNKNOWN = "True", "False", "Unknown"


class RayServiceBuildError(ValueError):
    """KubeRay cannot build this from the RayService; the message is KubeRay's error (the reconcile then fails)."""


def _name(obj: RayService | RayCluster) -> str:
    return str(obj.metadata.get("name") or "")


def _namespace(obj: RayService | RayCluster) -> str | None:
    namespace = obj.metadata.get("namespace")
    return str(namespace) if namespace else None


def _spec(rayservice: RayService) -> RayServiceSpec:
    if rayservice.spec is None:
        raise RayServiceBuildError(f"RayService {_name(rayservice)!r} has no spec")
    return rayservice.spec


def _cluster_config(rayservice: RayService) -> RayClusterSpec:
    config = _spec(rayservice).ray_cluster_config
    if config is None:
        raise RayServiceBuildError(f"RayService {_name(rayservice)!r} has no rayClusterConfig")
    return config


def _status(rayservice: RayService) -> dict[str, Any]:
    return rayservice.status.to_wire() if rayservice.status is not None else {}


def _conditions(status: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(status.get("conditions") or [])


def _find(conditions: Sequence[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    return next((cond for cond in conditions if cond.get("type") == type_), None)


def _is_true(conditions: Sequence[Mapping[str, Any]], type_: str) -> bool:
    """``meta.IsStatusConditionTrue``."""
    cond = _find(conditions, type_)
    return cond is not None and cond.get("status") == _TRUE


def _side_name(status: Mapping[str, Any], side: str) -> str:
    return str((status.get(side) or {}).get("rayClusterName") or "")


def _rayservice_owner(rayservice: RayService) -> dict[str, Any]:
    return names.owner_reference(c.KIND_RAYSERVICE, _name(rayservice), str(rayservice.metadata.get("uid", "")))


def _originated_labels(name: str) -> dict[str, str]:
    return {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: name, c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYSERVICE}

"""Facts about any object: a reference to it for evidence, its ``status.conditions`` by type (the Kubernetes API
conventions' condition list: None when the condition is not there at all), and whether it is being deleted
(:func:`raykube.kube.objects.terminating`). Names, namespaces and labels are read with :mod:`raykube.kube.objects`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.doctor.model import ObjectRef
from raykube.kube import objects

_TRUE = "True"


def ref(obj: Mapping[str, Any], kind: str | None = None) -> ObjectRef:
    return ObjectRef(kind or str(obj.get("kind") or ""), objects.name(obj), objects.namespace(obj) or None)


def conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(cond.get("type")): cond for cond in (obj.get("status") or {}).get("conditions") or []}


def condition_true(obj: Mapping[str, Any], type_: str) -> bool | None:
    cond = conditions(obj).get(type_)
    return None if cond is None else cond.get("status") == _TRUE


# Whether an object is being deleted: the kube layer's own helper, under the facts' vocabulary.
terminating = objects.terminating


def incremental_upgrade(service: Mapping[str, Any]) -> bool:
    """A RayService that upgrades through the Gateway API (KubeRay v1.7.0's ``NewClusterWithIncrementalUpgrade``)."""
    strategy = (service.get("spec") or {}).get("upgradeStrategy") or {}
    return strategy.get("type") == c.RAYSERVICE_UPGRADE_INCREMENTAL

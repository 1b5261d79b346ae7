"""Facts about any object: a reference to it for evidence, its ``status.conditions`` by type (the Kubernetes API
conventions' condition list), and whether it is being deleted (``metadata.deletionTimestamp``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raykube.doctor import snapshot as s
from raykube.doctor.model import ObjectRef

_TRUE = "True"


def ref(obj: Mapping[str, Any], kind: str | None = None) -> ObjectRef:
    return ObjectRef(kind or str(obj.get("kind") or ""), s.name_of(obj), s.namespace_of(obj) or None)


def conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(cond.get("type")): cond for cond in (obj.get("status") or {}).get("conditions") or []}


def condition_true(obj: Mapping[str, Any], type_: str) -> bool | None:
    cond = conditions(obj).get(type_)
    return None if cond is None else cond.get("status") == _TRUE


def terminating(obj: Mapping[str, Any]) -> bool:
    return s.meta(obj).get("deletionTimestamp") is not None

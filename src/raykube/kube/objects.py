"""Reading Kubernetes objects held as plain JSON dicts: metadata, labels, owners, deletion.

Objects from an informer are shared with its store; these helpers never mutate what they are given. (No
``from __future__ import annotations`` here: it would shadow :func:`annotations`.)
"""

import copy
from collections.abc import Mapping
from typing import Any

Obj = Mapping[str, Any]
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
_SCALARS = (str, int, float, bool, type(None))


def copy_json(value: Any) -> Any:
    """A deep copy of JSON data (what the API server sends: dicts, lists, strings, numbers, booleans, null), as
    ``copy.deepcopy`` makes it but several times faster (no memo: a dict reached twice becomes two copies); anything
    else in it is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if kind is list:
        return [copy_json(v) for v in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


def meta(obj: Obj | None) -> Mapping[str, Any]:
    found: Mapping[str, Any] = (obj or {}).get("metadata") or {}
    return found


def name(obj: Obj | None) -> str:
    return str(meta(obj).get("name") or "")


def namespace(obj: Obj | None) -> str:
    return str(meta(obj).get("namespace") or "")


def key(obj: Obj | None) -> Key:
    return namespace(obj), name(obj)


def uid(obj: Obj | None) -> str:
    return str(meta(obj).get("uid") or "")


def resource_version(obj: Obj | None) -> str:
    return str(meta(obj).get("resourceVersion") or "")


def labels(obj: Obj | None) -> Mapping[str, str]:
    found: Mapping[str, str] = meta(obj).get("labels") or {}
    return found


def annotations(obj: Obj | None) -> Mapping[str, str]:
    found: Mapping[str, str] = meta(obj).get("annotations") or {}
    return found


def finalizers(obj: Obj | None) -> list[str]:
    return [str(f) for f in meta(obj).get("finalizers") or []]


def terminating(obj: Obj | None) -> bool:
    """Deletion has been requested (``metadata.deletionTimestamp`` is set)."""
    return meta(obj).get("deletionTimestamp") is not None


def controller_of(obj: Obj | None, kind: str, group: str) -> Key | None:
    """(namespace, name) of the object's controller owner when it is of ``kind`` in API ``group``."""
    for ref in meta(obj).get("ownerReferences") or []:
        api_version = str(ref.get("apiVersion", ""))
        ref_group = api_version.rpartition("/")[0] if "/" in api_version else ""
        if ref.get("controller") and ref.get("kind") == kind and ref_group == group:
            return namespace(obj), str(ref.get("name", ""))
    return None


def owned_by(obj: Obj | None, owner_uid: str) -> bool:
    """The object's controller owner reference points at ``owner_uid``."""
    return any(ref.get("uid") == owner_uid and ref.get("controller") for ref in meta(obj).get("ownerReferences") or [])


def owner_reference(owner: Obj, *, block_owner_deletion: bool = True) -> dict[str, Any]:
    """A controller owner reference to ``owner`` (as controller-runtime's SetControllerReference writes it)."""
    return {
        "apiVersion": owner.get("apiVersion"),
        "kind": owner.get("kind"),
        "name": name(owner),
        "uid": uid(owner),
        "controller": True,
        "blockOwnerDeletion": block_owner_deletion,
    }


def condition(obj: Obj | None, type_: str) -> Mapping[str, Any] | None:
    """``status.conditions[type=type_]``."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_:
            found: Mapping[str, Any] = cond
            return found
    return None


def condition_true(obj: Obj | None, type_: str) -> bool:
    cond = condition(obj, type_)
    return cond is not None and cond.get("status") == "True"

"""JSON merge patches (RFC 7386) computed from an old and a new document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def merge_patch(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that turns ``old`` into ``new``: changed keys with their new value, removed keys as None.

    Lists are replaced whole (merge patch has no list semantics); nested objects are diffed recursively. An empty
    result means the documents are equal.
    """
    old = old or {}
    patch: dict[str, Any] = {}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            inner = merge_patch(before, value)
            if inner:
                patch[key] = inner
        elif key not in old or before != value:
            patch[key] = value
    for key in old:
        if key not in new:
            patch[key] = None
    return patch

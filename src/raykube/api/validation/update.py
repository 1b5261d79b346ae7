"""The CEL transition rules of the four CRDs, checked when an object is updated: ``managedBy`` and
``gcsFaultToleranceOptions.backend`` may not change once set.

The rules are ``x-kubernetes-validations`` of KubeRay's CRDs (``ray-operator/config/crd/bases/ray.io_*.yaml``; the
backend rule is in the v1.7.0 RayCluster CRD, not in v1.6.1's), which the API server enforces on update; they are
implemented here so that two dumps of an object can be compared offline.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from raykube.api import constants as c
from raykube.api.validation.common import FieldError, _Errors

__all__ = ["validate_update"]


def _cluster_spec_paths(kind: str) -> Iterator[tuple[str, ...]]:
    if kind == c.KIND_RAYCLUSTER:
        yield ("spec",)
    elif kind == c.KIND_RAYJOB:
        yield ("spec", "rayClusterSpec")
    elif kind == c.KIND_RAYSERVICE:
        yield ("spec", "rayClusterConfig")
    elif kind == c.KIND_RAYCRONJOB:
        yield ("spec", "jobTemplate", "rayClusterSpec")


def _dig(value: object, keys: Sequence[str]) -> object:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def validate_update(old: object, new: object) -> list[FieldError]:
    """The CEL transition rules checked when ``old`` is updated to ``new``: immutable ``managedBy`` and GCS backend."""
    errs = _Errors()
    kind = _dig(new, ("kind",))
    if not isinstance(kind, str):
        return errs.items
    managed_by_paths: list[tuple[str, ...]] = []
    if kind in (c.KIND_RAYJOB, c.KIND_RAYSERVICE):
        managed_by_paths.append(("spec", "managedBy"))
    if kind == c.KIND_RAYCRONJOB:
        managed_by_paths.append(("spec", "jobTemplate", "managedBy"))
    for cluster in _cluster_spec_paths(kind):
        managed_by_paths.append((*cluster, "managedBy"))
        before = _dig(old, (*cluster, "gcsFaultToleranceOptions", "backend"))
        after = _dig(new, (*cluster, "gcsFaultToleranceOptions", "backend"))
        if before is not None and after is not None and before != after:
            errs.schema(
                ".".join((*cluster, "gcsFaultToleranceOptions", "backend")),
                "gcsFaultToleranceOptions.backend is immutable",
            )
    for keys in managed_by_paths:
        before = _dig(old, keys)
        after = _dig(new, keys)
        if before is not None and after is not None and before != after:
            errs.schema(".".join(keys), "the managedBy field is immutable")
    return errs.items

"""What the controllers share of the cache's shape: the label selectors and transforms of the watches several of them
register, and the cache look-ups they make alike.

The runtime's manager merges two controllers' watches of one resource into one informer only when their selector and
transform are the same (the same function object for a transform), so these live here, once, and every controller
imports them from here: a controller module imports none of its siblings (an import-linter contract in
pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.builders import names
from raykube.controllers.ports import Cache
from raykube.kube import objects
from raykube.kube.resources import SERVICES

Obj = Mapping[str, Any]

# KubeRay internal/managercache: only Ray Pods are cached, so unrelated Pods cost no memory.
POD_SELECTOR = f"{c.RAY_NODE_TYPE_LABEL} in ({','.join(c.CACHED_POD_NODE_TYPES)})"
# KubeRay's cache filters the Jobs it creates by this label; the autoscaler RBAC objects carry it too.
CREATED_BY_SELECTOR = f"{c.K8S_CREATED_BY_LABEL}={c.COMPONENT_NAME}"

# What the operator reads of a cached Pod's spec (the rest, most of a Pod, is dropped as it arrives: 4,000 Pods cost
# about 17 KB each in full). Readers: builders.pods.should_delete_pod (restartPolicy, the Ray container's name),
# the RayService controller's serve port (containers[*].ports), events (restartPolicy). metadata and status stay.
_POD_SPEC_KEPT = ("restartPolicy",)


def cached_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """A Pod as the cache keeps it: metadata and status whole, of the spec only what a controller reads, the
    containers in their order with their names and ports."""
    spec = pod.get("spec")
    if isinstance(spec, dict):
        kept: dict[str, Any] = {key: spec[key] for key in _POD_SPEC_KEPT if key in spec}
        containers = spec.get("containers")
        if isinstance(containers, list):
            kept["containers"] = [
                {key: ctr[key] for key in ("name", "ports") if key in ctr} if isinstance(ctr, dict) else ctr
                for ctr in containers
            ]
        pod["spec"] = kept
    return pod


def cached_head_service(cache: Cache, cluster: Obj) -> tuple[str, Obj | None]:
    """The name of ``cluster``'s head Service (``headGroupSpec.headService`` or the default) and the Service as the
    cache has it (None: not there yet): where KubeRay's ``FetchHeadServiceURL`` looks."""
    head_spec = ((cluster.get("spec") or {}).get("headGroupSpec") or {}).get("headService")
    service_name = names.head_service_name(objects.name(cluster), head_spec)
    return service_name, cache.get(SERVICES, objects.namespace(cluster), service_name)

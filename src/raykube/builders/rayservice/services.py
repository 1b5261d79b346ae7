"""The RayService's Services, as KubeRay v1.6.1 builds and switches them
(``ray-operator/controllers/ray/common/service.go``, ``reconcileServices`` in ``rayservice_controller.go``).

* :func:`head_service` is ``BuildHeadServiceForRayService``: the target cluster's head Service (ports, headless rule,
  custom ``headService``) renamed ``<rs>-head-svc``, labels replaced by the RayService's, owned by the RayService.
* :func:`serve_service` is ``BuildServeServiceForRayService`` (``BuildServeService(rs, cluster, true)``):
  ``<rs>-serve-svc`` (or ``serveService.metadata.name``) selecting ``ray.io/cluster=<cluster>, ray.io/serve=true``;
  with ``incremental=True`` the per-cluster ``<cluster>-serve-svc`` of the incremental upgrade.
* :func:`switched_service` is the update ``reconcileServices`` sends when a Service must point at another cluster;
  :func:`service_cluster` is ``utils.GetRayClusterNameFromService``.
* :func:`head_service_name` and :func:`serve_service_name` are the names they are created and looked up by.

KubeRay's quirks kept **[Q]**:

* The serve Service's ports come from the *target cluster*'s head container, its type from the *RayService's*
  ``rayClusterConfig``; with a custom ``serveService``, user ports whose names match no detected ``serve``/``serve-*``
  port are dropped (kept as given when no port is detected).
* A Service that exists is only updated when its ``ray.io/cluster`` selector differs: other drift is never repaired.

Where KubeRay's output depends on Go map order (the serve Service's ports), we sort by name, one of its orders.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RayCluster, RayService
from raykube.builders import names, services
from raykube.builders.options import BuildOptions
from raykube.builders.rayservice.common import (
    RayServiceBuildError,
    _cluster_config,
    _name,
    _namespace,
    _originated_labels,
    _rayservice_owner,
    _spec,
)

__all__ = [
    "head_service",
    "head_service_name",
    "serve_service",
    "serve_service_name",
    "service_cluster",
    "switched_service",
]


def head_service_name(rayservice: RayService) -> str:
    """``<rs>-head-svc`` (``GenerateHeadServiceName(RayServiceCRD, ...)``)."""
    return names.default_head_service_name(_name(rayservice))


def serve_service_name(rayservice: RayService) -> str:
    """``RayServiceServeServiceNamespacedName``: ``serveService.metadata.name``, else ``<rs>-serve-svc``; the
    EndpointSlices of this name are what ``numServeEndpoints`` counts."""
    custom = ((_spec(rayservice).serve_service or {}).get("metadata") or {}).get("name")
    return str(custom) if custom else names.serve_service_name(_name(rayservice))


def head_service(rayservice: RayService, cluster: RayCluster, options: BuildOptions) -> dict[str, Any]:
    """``BuildHeadServiceForRayService`` plus the controller reference ``reconcileServices`` sets: the head Service
    of ``cluster`` (``BuildServiceForHeadPod`` with no labels and no annotations), named ``<rs>-head-svc`` in the
    RayService's namespace, labels ``ray.io/originated-from-*``, ``ray.io/node-type: head`` and
    ``ray.io/identifier: <rs>-head``, selecting the cluster's head Pod, owned by the RayService."""
    service = services.service_for_head_pod(cluster, options)
    metadata = dict(service["metadata"])
    name = _name(rayservice)
    metadata["name"] = head_service_name(rayservice)
    namespace = _namespace(rayservice)
    if namespace is not None:
        metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)
    metadata["labels"] = {
        **_originated_labels(name),
        c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD,
        c.RAY_ID_LABEL: names.head_identifier(name),
    }
    owner = _rayservice_owner(rayservice)
    cluster_uid = str(cluster.metadata.get("uid", ""))
    kept = [ref for ref in metadata.get("ownerReferences") or [] if ref.get("uid") not in (cluster_uid, owner["uid"])]
    metadata["ownerReferences"] = [*kept, owner]
    return {**service, "metadata": metadata}


def serve_service(rayservice: RayService, cluster: RayCluster, *, incremental: bool = False) -> dict[str, Any]:
    """``BuildServeService(rs, cluster, true)``, owned as ``reconcileServices`` owns it.

    Default: ``<rs>-serve-svc`` in the RayService's namespace, labels ``ray.io/originated-from-*`` and
    ``ray.io/serve: <rs>-serve``, selector ``ray.io/cluster: <cluster>, ray.io/serve: "true"``, the cluster head's
    ``serve``/``serve-*`` ports (no appProtocol; the defaults' ``serve 8000`` when the head declares no port), type
    ``rayClusterConfig.headGroupSpec.serviceType``. No serve port and no custom ``serveService``:
    :class:`RayServiceBuildError` with :data:`raykube.builders.services.SERVE_PORT_MISSING_MESSAGE`.

    With ``spec.serveService``: a copy of it with the selector forced, the labels above laid over its own, name and
    type defaulted, namespace forced, and (when ports were detected) each detected port replaced by the user port of
    the same name, other user ports dropped.

    ``incremental``: the per-cluster ``<cluster>-serve-svc`` (labels name the cluster, ``serveService`` ignored, owned
    by the cluster), as ``reconcilePerClusterServeService`` creates it."""
    spec = _spec(rayservice)
    base = _name(cluster) if incremental else _name(rayservice)
    labels = {
        c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: base,
        c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYSERVICE,
        c.RAY_SERVE_LABEL: base + c.SERVE_SERVICE_LABEL_SUFFIX,
    }
    selector = {c.RAY_CLUSTER_LABEL: _name(cluster), c.RAY_SERVE_LABEL: c.RAY_SERVE_LABEL_TRUE}
    default_name = names.serve_service_name(base)
    namespace = _namespace(rayservice)
    service_type = _cluster_config(rayservice).head_group_spec.service_type or ""
    detected = sorted(
        (name, port) for name, port in services.service_ports(cluster).items() if services.is_serving_port(name)
    )
    ports: list[dict[str, Any]] = [{"name": name, "port": port} for name, port in detected]
    owner = (
        names.owner_reference(c.KIND_RAYCLUSTER, _name(cluster), str(cluster.metadata.get("uid", "")))
        if incremental
        else _rayservice_owner(rayservice)
    )
    custom = None if incremental else spec.serve_service
    if not ports and custom is None:
        raise RayServiceBuildError(services.SERVE_PORT_MISSING_MESSAGE)

    if custom is not None:
        service: dict[str, Any] = copy.deepcopy(dict(custom))
        metadata: dict[str, Any] = dict(service.get("metadata") or {})
        body: dict[str, Any] = dict(service.get("spec") or {})
        body["selector"] = selector
        if ports:
            by_name = {str(port.get("name") or ""): port for port in body.get("ports") or []}
            body["ports"] = [copy.deepcopy(by_name.get(str(port["name"]), port)) for port in ports]
        metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
        metadata["name"] = metadata.get("name") or default_name
        if namespace is not None:
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        if not body.get("type") and service_type:
            body["type"] = service_type
        others = [ref for ref in metadata.get("ownerReferences") or [] if ref.get("uid") != owner["uid"]]
        metadata["ownerReferences"] = [*others, owner]
        service.update(apiVersion="v1", kind="Service", metadata=metadata, spec=body)
        return service

    metadata = {"name": default_name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = labels
    metadata["ownerReferences"] = [owner]
    body = {"selector": selector, "ports": ports}
    if service_type:
        body["type"] = service_type
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": body}


def service_cluster(service: Mapping[str, Any] | None) -> str:
    """``GetRayClusterNameFromService``: the ``ray.io/cluster`` of the Service's selector, ``""`` without one."""
    return str((((service or {}).get("spec") or {}).get("selector") or {}).get(c.RAY_CLUSTER_LABEL) or "")


def switched_service(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """What ``reconcileServices`` does with a Service that exists: None (leave it, whatever else differs **[Q]**)
    when its ``ray.io/cluster`` selector is the desired one; otherwise the Update body, the live Service with its
    ``spec`` replaced by the desired spec carrying the live ``clusterIP``."""
    if service_cluster(desired) == service_cluster(existing):
        return None
    spec = copy.deepcopy(dict(desired.get("spec") or {}))
    cluster_ip = (existing.get("spec") or {}).get("clusterIP")
    if cluster_ip:
        spec["clusterIP"] = cluster_ip
    else:
        spec.pop("clusterIP", None)
    updated = copy.deepcopy(dict(existing))
    updated["spec"] = spec
    return updated

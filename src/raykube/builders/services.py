"""The Services KubeRay creates for a RayCluster, as plain dicts ready to POST (``common/service.go``).

* :func:`head_service` is ``BuildServiceForHeadPod`` as the RayCluster controller calls it (``reconcileHeadService``):
  the head Service, default or merged with ``headGroupSpec.headService``; :func:`service_for_head_pod` is
  ``BuildServiceForHeadPod`` itself, which the RayJob (``raykube.builders.rayjob``) and RayService builders relabel.
* :func:`head_service_selector` is the label set KubeRay lists Services by to decide whether the head Service exists
  (it never updates one that does) and to find it for ``status.endpoints`` and ``status.head``.
* :func:`headless_worker_service` is ``BuildHeadlessServiceForRayCluster`` (multi-host groups only).
* :func:`serve_service` is ``BuildServeServiceForRayCluster`` (annotation ``ray.io/enable-serve-service: "true"``).

Every Service carries a controller ownerReference to the RayCluster, which KubeRay's ``createService`` adds.

Ports come from the head Pod template's first container: every named port keeps its name, an unnamed one is called
``<containerPort>-port`` (a later port with the same name replaces an earlier one, as in KubeRay's Go map). A head
without ports gets KubeRay's defaults (client 10001, gcs-server 6379, dashboard 8265, metrics 8080, serve 8000);
``metrics 8080`` is added whenever no port is named ``metrics``.

The serve Service takes every head port named ``serve`` or ``serve-*`` (``serve-grpc``), as v1.6.1's
``isServingPort`` does (kuberay#4558 is in the v1.6.1 tag; ``common/service_test.go`` checks ``serve-grpc``).

Where we cannot follow KubeRay exactly:

* **Port order.** KubeRay appends its ports to a custom head Service's in Go map order, and builds the serve
  Service's ports in Go map order too; both are random from one run to the next. We sort them by name, one of the
  orders KubeRay can produce.

Names are used as given: since KubeRay v1.4 validates RayCluster names to at most 53 characters, ``createService`` no
longer has to shorten ``<cluster>-head-svc`` and friends, and neither do we.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.resources import RayCluster
from raykube.builders import names
from raykube.builders.options import BuildOptions

# KubeRay BuildServeService: the error it returns, which stops the reconcile, when the serve Service has no port.
SERVE_PORT_MISSING_MESSAGE = (
    "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') "
    "in the Ray head container; otherwise, the Kubernetes service for Ray Serve will not be created."
)


def _name(cluster: RayCluster) -> str:
    return str(cluster.metadata.get("name", ""))


def _namespace(cluster: RayCluster) -> str | None:
    namespace = cluster.metadata.get("namespace")
    return str(namespace) if namespace else None


def _owner_reference(cluster: RayCluster) -> dict[str, Any]:
    return names.owner_reference(c.KIND_RAYCLUSTER, _name(cluster), str(cluster.metadata.get("uid", "")))


def _metadata(cluster: RayCluster, name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    namespace = _namespace(cluster)
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(labels)
    metadata["ownerReferences"] = [_owner_reference(cluster)]
    return metadata


def _spec(cluster: RayCluster) -> RayClusterSpec:
    if cluster.spec is None:
        raise ValueError(f"RayCluster {_name(cluster)!r} has no spec")
    return cluster.spec


def _head_template(cluster: RayCluster) -> Mapping[str, Any]:
    return _spec(cluster).head_group_spec.template or {}


def service_ports(cluster: RayCluster) -> dict[str, int]:
    """KubeRay ``getServicePorts``: port name → number, from the head's Ray container or the defaults, plus metrics."""
    containers = (_head_template(cluster).get("spec") or {}).get("containers") or []
    ports: dict[str, int] = {}
    if containers:
        for port in (containers[c.RAY_CONTAINER_INDEX] or {}).get("ports") or []:
            number = int(port.get("containerPort", 0))
            ports[str(port.get("name") or f"{number}-port")] = number
    if not ports:
        ports = dict(c.DEFAULT_HEAD_SERVICE_PORTS)
    ports.setdefault(c.METRICS_PORT_NAME, c.DEFAULT_METRICS_PORT)
    return ports


def head_service_selector(cluster: RayCluster) -> dict[str, str]:
    """The labels KubeRay lists the head Service by (``RayClusterHeadServiceListOptions``)."""
    name = _name(cluster)
    return {
        c.RAY_CLUSTER_LABEL: name,
        c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD,
        c.RAY_ID_LABEL: names.head_identifier(name),
    }


def head_service_labels(cluster: RayCluster, *, template: bool = True) -> dict[str, str]:
    """Labels and selector of the head Service: KubeRay's ``HeadServiceLabels``, with ``app.kubernetes.io/name`` taken
    from the head Pod template's labels when it sets one (``reconcileHeadService``; not with ``template=False``)."""
    labels = {
        **head_service_selector(cluster),
        c.K8S_APP_NAME_LABEL: c.APPLICATION_NAME,
        c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME,
    }
    template_labels = (_head_template(cluster).get("metadata") or {}).get("labels") or {}
    if template and c.K8S_APP_NAME_LABEL in template_labels:
        labels[c.K8S_APP_NAME_LABEL] = str(template_labels[c.K8S_APP_NAME_LABEL])
    return labels


def _head_ports(cluster: RayCluster) -> list[dict[str, Any]]:
    return [
        {"name": name, "port": port, "appProtocol": c.HEAD_SERVICE_APP_PROTOCOL}
        for name, port in sorted(service_ports(cluster).items())
    ]


def head_service(cluster: RayCluster, options: BuildOptions) -> dict[str, Any]:
    """The head Service KubeRay creates when none matches :func:`head_service_selector` (``reconcileHeadService``).

    Default: ``<cluster>-head-svc``, ports sorted by name, type ``headGroupSpec.serviceType``, annotations
    ``spec.headServiceAnnotations``. A ClusterIP (or untyped) Service is headless (``clusterIP: None``,
    ``publishNotReadyAddresses: true``) unless the operator runs with ``ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE=true``.

    With ``headGroupSpec.headService``: a copy of it, with the selector forced to KubeRay's, the annotations of
    ``headServiceAnnotations`` laid over its own, KubeRay's ports appended after its own, KubeRay's labels laid over
    its own, name defaulted, namespace forced to the cluster's and type defaulted to ``serviceType``. It is never made
    headless.
    """
    template_labels = (_head_template(cluster).get("metadata") or {}).get("labels") or {}
    labels = {key: str(template_labels[key]) for key in (c.K8S_APP_NAME_LABEL,) if key in template_labels}
    return service_for_head_pod(
        cluster, options, labels=labels, annotations=_spec(cluster).head_service_annotations or {}
    )


def service_for_head_pod(
    cluster: RayCluster,
    options: BuildOptions,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """KubeRay ``BuildServiceForHeadPod(cluster, labels, annotations)``, with a controller owner reference to the
    cluster (KubeRay's ``createService`` adds it). The selector and labels are KubeRay's ``HeadServiceLabels``, each
    value taken from ``labels`` where it has the key (other keys of ``labels`` are ignored). The RayJob and RayService
    head Services start from this with no labels and no annotations."""
    cluster_spec = _spec(cluster)
    head = cluster_spec.head_group_spec
    given = labels or {}
    selector = {key: given.get(key, value) for key, value in head_service_labels(cluster, template=False).items()}
    default_name = names.head_service_name(_name(cluster), None)
    service_type = head.service_type or ""
    ports = _head_ports(cluster)

    if head.head_service is not None:
        return _custom_head_service(
            cluster,
            head.head_service,
            labels=selector,
            annotations=dict(annotations or {}),
            ports=ports,
            default_name=default_name,
            service_type=service_type,
        )

    metadata = _metadata(cluster, default_name, selector)
    if annotations:
        metadata["annotations"] = dict(annotations)
    spec: dict[str, Any] = {"selector": dict(selector), "ports": ports}
    if service_type:
        spec["type"] = service_type
    if not options.head_cluster_ip_service and service_type in ("", c.SERVICE_TYPE_CLUSTER_IP):
        spec["clusterIP"] = c.CLUSTER_IP_NONE
        spec["publishNotReadyAddresses"] = True
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def _custom_head_service(
    cluster: RayCluster,
    custom: Mapping[str, Any],
    *,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    ports: list[dict[str, Any]],
    default_name: str,
    service_type: str,
) -> dict[str, Any]:
    service: dict[str, Any] = copy.deepcopy(dict(custom))
    metadata: dict[str, Any] = dict(service.get("metadata") or {})
    spec: dict[str, Any] = dict(service.get("spec") or {})
    spec["selector"] = dict(labels)
    metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
    if not metadata["annotations"]:
        del metadata["annotations"]
    spec["ports"] = [*(spec.get("ports") or []), *ports]
    metadata["labels"] = {**(metadata.get("labels") or {}), **labels}
    metadata["name"] = metadata.get("name") or default_name
    namespace = _namespace(cluster)
    if namespace is not None:
        metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)
    if not spec.get("type") and service_type:
        spec["type"] = service_type
    owner = _owner_reference(cluster)
    others = [ref for ref in metadata.get("ownerReferences") or [] if ref.get("uid") != owner["uid"]]
    metadata["ownerReferences"] = [*others, owner]
    service["apiVersion"] = "v1"
    service["kind"] = "Service"
    service["metadata"] = metadata
    service["spec"] = spec
    return service


def headless_worker_service(cluster: RayCluster) -> dict[str, Any] | None:
    """``<cluster>-headless``, for the hosts of multi-host replicas to find each other; None when no group has
    ``numOfHosts > 1`` (suspended groups count). KubeRay creates it if no Service carries
    ``ray.io/headless-worker-svc=<cluster>`` and never updates it."""
    if cluster.spec is None or not any(g.num_of_hosts > 1 for g in cluster.spec.worker_group_specs or []):
        return None
    name = _name(cluster)
    metadata = _metadata(cluster, names.headless_service_name(name), {c.RAY_HEADLESS_WORKER_SVC_LABEL: name})
    spec = {
        "clusterIP": c.CLUSTER_IP_NONE,
        "selector": {c.RAY_CLUSTER_LABEL: name, c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_WORKER},
        "type": c.SERVICE_TYPE_CLUSTER_IP,
        "publishNotReadyAddresses": True,
    }
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def serve_service_enabled(cluster: RayCluster) -> bool:
    """KubeRay reconciles ``<cluster>-serve-svc`` only with the annotation ``ray.io/enable-serve-service: "true"``."""
    annotations = cluster.metadata.get("annotations") or {}
    return annotations.get(c.RAY_ENABLE_SERVE_SERVICE_ANNOTATION) == "true"


def is_serving_port(name: str) -> bool:
    """KubeRay ``isServingPort``: ``serve`` itself or ``serve-<anything>`` (``serve-grpc``)."""
    return name == c.SERVING_PORT_NAME or name.startswith(c.SERVING_PORT_NAME + "-")


def serve_service(cluster: RayCluster) -> dict[str, Any] | None:
    """``<cluster>-serve-svc``: the head's ``serve`` and ``serve-*`` ports, selecting every Pod of the cluster.

    None when the annotation ``ray.io/enable-serve-service: "true"`` is absent (KubeRay does not reconcile it), and
    None too when the head declares ports but none named ``serve`` or ``serve-*``. In that case KubeRay's
    ``BuildServeService`` fails with :data:`SERVE_PORT_MISSING_MESSAGE` and the reconcile stops there (no Pods are
    created in that pass): the controller must treat ``None`` with :func:`serve_service_enabled` true as that error. A
    head without any ports gets the default ``serve 8000`` and so does get a serve Service.
    """
    if not serve_service_enabled(cluster):
        return None
    ports = {name: port for name, port in service_ports(cluster).items() if is_serving_port(name)}
    if not ports:
        return None
    name = _name(cluster)
    labels = {
        c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: name,
        c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYCLUSTER,
        c.RAY_SERVE_LABEL: name + c.SERVE_SERVICE_LABEL_SUFFIX,
    }
    spec: dict[str, Any] = {
        "selector": {c.RAY_CLUSTER_LABEL: name},
        "ports": [{"name": name, "port": port} for name, port in sorted(ports.items())],
    }
    service_type = _spec(cluster).head_group_spec.service_type
    if service_type:
        spec["type"] = service_type
    metadata = _metadata(cluster, names.serve_service_name(name), labels)
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}

"""What the RayService controller decides and writes, as KubeRay v1.6.1 does, as pure functions over the CR models
and plain dicts: no I/O, inputs never mutated. The controller reads the cache and the dashboard, calls these, and
writes what they return.

Clusters (``ray-operator/controllers/ray/rayservice_controller.go``):

* :func:`new_cluster_name` is ``utils.GenerateRayClusterName``: ``<rs>-<5 random characters>``, drawn in
  ``calculateStatus`` each time a new pending cluster is needed.
* :func:`rayservice_cluster` is ``constructRayClusterForRayService`` (called by ``createRayClusterInstance`` and by
  the in-place update): every RayService label plus ``ray.io/originated-from-cr-name`` /
  ``ray.io/originated-from-crd: RayService``; every RayService annotation plus
  ``ray.io/hash-without-replicas-and-workers-to-delete`` (:func:`goal_cluster_hash`), ``ray.io/num-worker-groups``
  and ``ray.io/kuberay-version: v1.6.1``; a copy of ``rayClusterConfig``; owned by the RayService.
* :func:`goal_cluster_hash` / :func:`partial_cluster_hash` / :func:`cluster_spec_hash_equal` are
  ``utils.GenerateHashWithoutReplicasAndWorkersToDelete`` of ``rayClusterConfig`` as stored (no defaulting) and
  ``isClusterSpecHashEqual`` (full, and partial: the goal cut to the cluster's ``ray.io/num-worker-groups``).
* :func:`should_update_cluster` is ``shouldUpdateCluster``, :func:`updated_cluster` ``modifyRayCluster``.
* :func:`should_prepare_new_cluster` is ``shouldPrepareNewCluster`` with ``isZeroDowntimeUpgradeEnabled``
  (:func:`zero_downtime_upgrade_enabled`).

Services (``ray-operator/controllers/ray/common/service.go``, ``reconcileServices``):

* :func:`head_service` is ``BuildHeadServiceForRayService``: the target cluster's head Service (ports, headless rule,
  custom ``headService``) renamed ``<rs>-head-svc``, labels replaced by the RayService's, owned by the RayService.
* :func:`serve_service` is ``BuildServeServiceForRayService`` (``BuildServeService(rs, cluster, true)``):
  ``<rs>-serve-svc`` (or ``serveService.metadata.name``) selecting ``ray.io/cluster=<cluster>, ray.io/serve=true``;
  with ``incremental=True`` the per-cluster ``<cluster>-serve-svc`` of the incremental upgrade.
* :func:`switched_service` is the update ``reconcileServices`` sends when a Service must point at another cluster;
  :func:`service_cluster` is ``utils.GetRayClusterNameFromService``.

Serve (``reconcileServe``, ``updateServeDeployment``, ``getAndCheckServeStatus``):

* :func:`serve_config_body` is the ``PUT /api/serve/applications/`` body: ``serveConfigV2`` read by
  ``k8s.io/apimachinery/pkg/util/yaml.Unmarshal`` into a ``map[string]any`` (integers as int64, other numbers as
  float64) and written by ``encoding/json`` (keys sorted), byte for byte.
* :func:`need_submit_serve_applications` is ``checkIfNeedSubmitServeApplications``, with KubeRay's reasons.
* :func:`serve_application_statuses` is ``GetMultiApplicationStatus`` + ``getAndCheckServeStatus`` over the body of
  ``GET /api/serve/applications/?api_type=declarative``: ``(isReady, applicationStatuses)``.

Status (``calculateStatus``, ``calculateConditions``, ``markFailedOnInitializingTimeout``,
``utils.InconsistentRayServiceStatuses``), over the status as a wire dict (camelCase, Go's ``omitempty``):

* :func:`promote` is ``reconcilePromotionAndServingStatus`` (NewCluster / None); :func:`num_serve_endpoints`
  ``calculateNumServeEndpointsFromSlices``; :func:`calculate_conditions` ``calculateConditions`` with the
  initializing timeout (:func:`initializing_timeout`, ``getInitializingTimeout``); :func:`service_status` the
  ``serviceStatus`` printer column; :func:`is_initializing_timeout`; :func:`status_needs_update`.

KubeRay's quirks kept **[Q]**:

* The in-place update replaces the cluster's spec, labels and annotations whole: worker ``replicas`` set by the
  autoscaler are overwritten, labels another controller added are dropped.
* A change of worker ``replicas``/``minReplicas``/``maxReplicas`` alone leaves the hash equal and never reaches an
  existing cluster.
* A ``ray.io/num-worker-groups`` annotation that does not parse makes the partial hash "equal" (an in-place update
  of a spec that may have changed anywhere).
* KubeRay does not set ``ray.io/enable-serve-service`` on the clusters it creates (the RayService builds its own
  serve Service); the annotation reaches a cluster only when the RayService itself carries it, copied like any other.
* The serve Service's ports come from the *target cluster*'s head container, its type from the *RayService's*
  ``rayClusterConfig``; with a custom ``serveService``, user ports whose names match no detected ``serve``/``serve-*``
  port are dropped (kept as given when no port is detected).
* A Service that exists is only updated when its ``ray.io/cluster`` selector differs: other drift is never repaired.
* An application named ``""`` is reported as ``default``; Ready depends on the serve endpoint count only, never on
  application health.

Where KubeRay's output depends on Go map order (the serve Service's ports), we sort by name, one of its orders.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.rayservice import RayServiceSpec, RayServiceUpgradeStrategy
from raykube.api.resources import RayCluster, RayService
from raykube.builders import names, services
from raykube.builders.options import BuildOptions
from raykube.builders.pods import cluster_spec_hash
from raykube.golang import gojson, goyaml
from raykube.golang.duration import duration_string, parse_duration
from raykube.golang.errors import GoError
from raykube.golang.strconv import atoi
from raykube.kube import times

__all__ = [
    "GET_SERVE_STATUS_ERROR",
    "UPDATE_SERVE_APPLICATIONS_ERROR",
    "RayServiceBuildError",
    "calculate_conditions",
    "cluster_spec_hash_equal",
    "goal_cluster_hash",
    "head_service",
    "head_service_name",
    "incremental_upgrade_enabled",
    "initializing_timeout",
    "is_initializing_timeout",
    "need_submit_serve_applications",
    "new_cluster_name",
    "num_serve_endpoints",
    "partial_cluster_hash",
    "promote",
    "rayservice_cluster",
    "serve_application_statuses",
    "serve_config_body",
    "serve_service",
    "serve_service_name",
    "service_cluster",
    "service_status",
    "set_condition",
    "should_prepare_new_cluster",
    "should_update_cluster",
    "status_needs_update",
    "switched_service",
    "updated_cluster",
    "zero_downtime_upgrade_enabled",
]

# KubeRay getAndCheckServeStatus: the error wrapped around a failed GET of the applications (then an error-requeue).
GET_SERVE_STATUS_ERROR: Final = (
    "failed to get Serve application statuses from the dashboard. If you observe this error consistently, please "
    "check https://docs.ray.io/en/latest/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html for more "
    "details. err: {err}"
)
# KubeRay updateServeDeployment: the error wrapped around a failed PUT of the serve config.
UPDATE_SERVE_APPLICATIONS_ERROR: Final = (
    'fail to create / update Serve applications. If you observe this error consistently, please check "Issue 5: '
    'Fail to create / update Serve applications." in '
    "https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html"
    "#kuberay-raysvc-troubleshoot for more details. err: {err}"
)
_MAX_INT32: Final = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_TRUE, _FALSE, _UNKNOWN = "True", "False", "Unknown"
_INITIALIZING_MESSAGE: Final = "RayService is initializing"


class RayServiceBuildError(ValueError):
    """KubeRay cannot build this from the RayService; the message is KubeRay's error (the reconcile then fails)."""


# --------------------------------------------------------------------------------------------------------------------
# Names and switches
# --------------------------------------------------------------------------------------------------------------------


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


def new_cluster_name(rayservice: RayService, suffix: str | None = None, rng: random.Random | None = None) -> str:
    """``GenerateRayClusterName``: ``<rs>-<suffix>``, the suffix 5 random characters unless given."""
    return f"{_name(rayservice)}-{suffix if suffix is not None else names.random_suffix(rng)}"


def head_service_name(rayservice: RayService) -> str:
    """``<rs>-head-svc`` (``GenerateHeadServiceName(RayServiceCRD, ...)``)."""
    return names.default_head_service_name(_name(rayservice))


def serve_service_name(rayservice: RayService) -> str:
    """``RayServiceServeServiceNamespacedName``: ``serveService.metadata.name``, else ``<rs>-serve-svc``; the
    EndpointSlices of this name are what ``numServeEndpoints`` counts."""
    custom = ((_spec(rayservice).serve_service or {}).get("metadata") or {}).get("name")
    return str(custom) if custom else names.serve_service_name(_name(rayservice))


def incremental_upgrade_enabled(rayservice: RayService, gates: Mapping[str, bool]) -> bool:
    """``IsIncrementalUpgradeEnabled``: gate ``RayServiceIncrementalUpgrade`` on and ``upgradeStrategy.type``
    ``NewClusterWithIncrementalUpgrade``. (KubeRay dereferences a missing type and panics; here it is false.)"""
    if not gates.get(c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE, False):
        return False
    strategy = _spec(rayservice).upgrade_strategy
    return strategy is not None and strategy.type == c.RAYSERVICE_UPGRADE_INCREMENTAL


def zero_downtime_upgrade_enabled(
    strategy: RayServiceUpgradeStrategy | None, *, gates: Mapping[str, bool], env: str | None = None
) -> bool:
    """``isZeroDowntimeUpgradeEnabled``: with ``upgradeStrategy.type`` set, true for ``NewCluster`` (and, gate on,
    ``NewClusterWithIncrementalUpgrade``); unset, true unless ``env`` (the operator's ``ENABLE_ZERO_DOWNTIME``) is
    ``false`` in any case."""
    if strategy is not None and strategy.type is not None:
        allowed = {c.RAYSERVICE_UPGRADE_NEW_CLUSTER}
        if gates.get(c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE, False):
            allowed.add(c.RAYSERVICE_UPGRADE_INCREMENTAL)
        return strategy.type in allowed
    return (env or "").lower() != "false"


# --------------------------------------------------------------------------------------------------------------------
# The RayCluster: hash, construction, in-place update, new cluster
# --------------------------------------------------------------------------------------------------------------------


def goal_cluster_hash(rayservice: RayService) -> str:
    """``GenerateHashWithoutReplicasAndWorkersToDelete(spec.rayClusterConfig)``, the spec as stored."""
    return cluster_spec_hash(_cluster_config(rayservice), defaulted=False)


def partial_cluster_hash(rayservice: RayService, num_worker_groups: int) -> str | None:
    """The hash of ``rayClusterConfig`` cut to its first ``num_worker_groups`` worker groups; None when it has fewer
    (KubeRay then compares against ``""``, never equal)."""
    config = _cluster_config(rayservice)
    groups = config.worker_group_specs or []
    if len(groups) < num_worker_groups:
        return None
    wire = config.to_wire()
    if "workerGroupSpecs" in wire:
        wire["workerGroupSpecs"] = wire["workerGroupSpecs"][:num_worker_groups]
    return cluster_spec_hash(RayClusterSpec.model_validate(wire), defaulted=False)


def cluster_spec_hash_equal(rayservice: RayService, cluster: RayCluster, *, partial: bool) -> bool:
    """``isClusterSpecHashEqual``: the cluster's ``ray.io/hash-without-replicas-and-workers-to-delete`` against the
    goal's full hash, or (``partial``) the hash of the goal cut to the cluster's ``ray.io/num-worker-groups``. **[Q]**
    An annotation ``strconv.Atoi`` cannot read makes the partial comparison true."""
    annotations = cluster.metadata.get("annotations") or {}
    cluster_hash = str(annotations.get(c.RAY_HASH_WITHOUT_REPLICAS_ANNOTATION, ""))
    if not partial:
        return cluster_hash == goal_cluster_hash(rayservice)
    try:
        count = atoi(str(annotations.get(c.RAY_NUM_WORKER_GROUPS_ANNOTATION, "")))
    except GoError:
        return True
    if count < 0:  # Go slices [:negative] and panics; no cluster KubeRay made has one
        raise RayServiceBuildError(f"slice bounds out of range [:{count}]")
    goal = partial_cluster_hash(rayservice, count)
    return cluster_hash == (goal or "")


def should_update_cluster(rayservice: RayService, cluster: RayCluster | None, *, active: bool) -> bool:
    """``shouldUpdateCluster``: an in-place update of the active (``active``) or pending cluster when

    * (active only, and not while ``UpgradeInProgress`` is True) its ``ray.io/kuberay-version`` is not v1.6.1;
    * ``rayClusterConfig.suspend`` differs from the cluster's ``spec.suspend`` (nil is false);
    * the full hash differs and the partial hash is equal (worker groups appended at the end)."""
    if cluster is None:
        return False
    if active:
        if _is_true(_conditions(_status(rayservice)), c.CONDITION_UPGRADE_IN_PROGRESS):
            return False
        version = (cluster.metadata.get("annotations") or {}).get(c.RAY_KUBERAY_VERSION_ANNOTATION, "")
        if version != c.KUBERAY_VERSION:
            return True
    cluster_suspend = bool(cluster.spec.suspend) if cluster.spec is not None else False
    if bool(_cluster_config(rayservice).suspend) != cluster_suspend:
        return True
    if cluster_spec_hash_equal(rayservice, cluster, partial=False):
        return False
    return cluster_spec_hash_equal(rayservice, cluster, partial=True)


def should_prepare_new_cluster(
    rayservice: RayService,
    active: RayCluster | None,
    pending: RayCluster | None,
    *,
    pending_serving: bool,
    gates: Mapping[str, bool],
    zero_downtime_env: str | None = None,
) -> bool:
    """``shouldPrepareNewCluster``: false while the Services point at the pending cluster (``pending_serving``) or a
    rollback is in progress; true with no cluster at all; else false when the pending (or, without one, the active)
    cluster's hash equals the goal, fully or partially; else :func:`zero_downtime_upgrade_enabled`."""
    if pending_serving or _is_true(_conditions(_status(rayservice)), c.CONDITION_ROLLBACK_IN_PROGRESS):
        return False
    cluster = pending if pending is not None else active
    if cluster is None:
        return True
    if cluster_spec_hash_equal(rayservice, cluster, partial=False):
        return False
    if cluster_spec_hash_equal(rayservice, cluster, partial=True):
        return False
    return zero_downtime_upgrade_enabled(_spec(rayservice).upgrade_strategy, gates=gates, env=zero_downtime_env)


def _rayservice_owner(rayservice: RayService) -> dict[str, Any]:
    return names.owner_reference(c.KIND_RAYSERVICE, _name(rayservice), str(rayservice.metadata.get("uid", "")))


def _originated_labels(name: str) -> dict[str, str]:
    return {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: name, c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYSERVICE}


def rayservice_cluster(
    rayservice: RayService, cluster_name: str, *, gates: Mapping[str, bool] | None = None
) -> dict[str, Any]:
    """``constructRayClusterForRayService``: the RayCluster ``cluster_name`` as KubeRay creates it (and rebuilds it
    for an in-place update). With the incremental upgrade enabled and an active cluster, every worker group's
    ``replicas`` is left out (the autoscaler sizes the new cluster)."""
    config = _cluster_config(rayservice)
    labels = {**(rayservice.metadata.get("labels") or {}), **_originated_labels(_name(rayservice))}
    annotations = {
        **(rayservice.metadata.get("annotations") or {}),
        c.RAY_HASH_WITHOUT_REPLICAS_ANNOTATION: goal_cluster_hash(rayservice),
        c.RAY_NUM_WORKER_GROUPS_ANNOTATION: str(len(config.worker_group_specs or [])),
        c.RAY_KUBERAY_VERSION_ANNOTATION: c.KUBERAY_VERSION,
    }
    spec = config.to_wire()  # a deep copy of what is stored
    if incremental_upgrade_enabled(rayservice, gates or {}) and _side_name(_status(rayservice), "activeServiceStatus"):
        for group in spec.get("workerGroupSpecs") or []:
            group.pop("replicas", None)
    metadata: dict[str, Any] = {"name": cluster_name}
    namespace = _namespace(rayservice)
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = labels
    metadata["annotations"] = annotations
    metadata["ownerReferences"] = [_rayservice_owner(rayservice)]
    return {"apiVersion": c.API_VERSION, "kind": c.KIND_RAYCLUSTER, "metadata": metadata, "spec": spec}


def updated_cluster(current: Mapping[str, Any], goal: Mapping[str, Any]) -> dict[str, Any]:
    """``modifyRayCluster``: the live cluster (the Update body, resourceVersion kept) with its ``spec``, ``labels`` and
    ``annotations`` replaced by the goal's (:func:`rayservice_cluster` of the same name). **[Q]** Replaced whole."""
    cur_meta, goal_meta = current.get("metadata") or {}, goal.get("metadata") or {}
    if (cur_meta.get("name"), cur_meta.get("namespace")) != (goal_meta.get("name"), goal_meta.get("namespace")):
        raise RayServiceBuildError(
            "currentCluster and goalCluster have different names or namespaces: "
            f"{cur_meta.get('namespace', '')}/{cur_meta.get('name', '')} != "
            f"{goal_meta.get('namespace', '')}/{goal_meta.get('name', '')}"
        )
    metadata = copy.deepcopy(dict(cur_meta))
    for key in ("labels", "annotations"):
        if goal_meta.get(key):
            metadata[key] = dict(goal_meta[key])
        else:
            metadata.pop(key, None)
    updated = copy.deepcopy(dict(current))
    updated["metadata"] = metadata
    updated["spec"] = copy.deepcopy(goal.get("spec"))
    return updated


# --------------------------------------------------------------------------------------------------------------------
# Services
# --------------------------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------------------------
# Serve applications
# --------------------------------------------------------------------------------------------------------------------


def serve_config_body(serve_config_v2: str | None, *, target_capacity: int | None = None) -> bytes:
    """``updateServeDeployment``'s body: ``serveConfigV2`` (YAML) as Go's JSON with sorted keys, byte for byte
    (``{}`` for an empty config); ``target_capacity`` is added when given (the incremental upgrade). A config that
    is not a YAML mapping raises :class:`RayServiceBuildError` with the error KubeRay returns (no event then)."""
    text = serve_config_v2 or ""
    try:
        value = goyaml.yaml_to_value(text)
        gojson.json_marshal(value)  # YAMLToJSON fails on what JSON cannot hold (NaN, infinities)
    except GoError as error:
        raise RayServiceBuildError(f"error converting YAML to JSON: {error}") from None
    if value is not None and not isinstance(value, dict):
        kind = gojson.json_kind(value)
        raise RayServiceBuildError(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
            f"{kind} into Go value of type map[string]interface {{}}"
        )
    config: dict[str, Any] = gojson.preserve_ints(value) if value else {}
    if target_capacity is not None:
        config["target_capacity"] = target_capacity
    return gojson.json_marshal(config).encode()


def need_submit_serve_applications(
    cached: str, serve_config_v2: str, applications: Mapping[str, Any] | None
) -> tuple[bool, str]:
    """``checkIfNeedSubmitServeApplications(cached, spec.serveConfigV2, applications read this pass)``: submit when
    nothing is cached for the cluster (``""``: a new cluster, an operator restart; **[Q]** an empty config is never
    cached, so it is PUT every pass), when the cluster reports no application (a head restarted without GCS FT), or
    when the cached text differs (a plain string comparison). Returns KubeRay's reason with the answer."""
    if cached == "":
        return True, "Nothing has been cached for the cluster."
    if not applications:
        return True, (
            "No Serve application found in the RayCluster. "
            "A possible reason is that the head Pod crashed and GCS FT was not enabled."
        )
    if cached != serve_config_v2:
        return True, "Current V2 Serve config doesn't match cached Serve config."
    return False, "Current V2 Serve config matches cached Serve config."


def serve_application_statuses(body: str | bytes) -> tuple[bool, dict[str, dict[str, Any]]]:
    """``getAndCheckServeStatus`` over the dashboard's ``GET /api/serve/applications/?api_type=declarative`` body:
    ``(isReady, applicationStatuses)``, the latter as it goes into ``status.*ServiceStatus.applicationStatuses``
    (``status``, ``message``, ``serveDeploymentStatuses`` with each deployment's ``status`` and ``message``, empty
    values left out as Go's ``omitempty`` does). Ready means at least one application and every one ``RUNNING``.
    An application named ``""`` is reported as ``default``. A body KubeRay cannot decode raises
    :class:`RayServiceBuildError` with KubeRay's whole message (:data:`GET_SERVE_STATUS_ERROR`)."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        parsed = gojson.decode(text)
        details = gojson.decode_struct(parsed, ("applications",), "utiltypes.ServeDetails") or {}
        applications = gojson.decode_map(details.get("applications"), "ServeDetails.applications")
        statuses: dict[str, dict[str, Any]] = {}
        ready = True
        decoded_apps: dict[str, dict[str, Any]] = {}
        for app_name, raw_app in applications:  # a repeated key: the last one wins, as in a Go map
            app = (
                gojson.decode_struct(raw_app, ("deployments", "name", "status", "message"), "ServeApplicationDetails")
                or {}
            )
            deployments: dict[str, dict[str, str]] = {}
            for dep_name, raw_dep in gojson.decode_map(app.get("deployments"), "ServeApplicationDetails.deployments"):
                dep = gojson.decode_struct(raw_dep, ("name", "status", "message"), "ServeDeploymentDetails") or {}
                deployments[dep_name] = {
                    "status": gojson.decode_string(dep.get("status"), "ServeDeploymentStatus.status"),
                    "message": gojson.decode_string(dep.get("message"), "ServeDeploymentStatus.message"),
                }
            decoded_apps[app_name] = {
                "status": gojson.decode_string(app.get("status"), "ServeApplicationStatus.status"),
                "message": gojson.decode_string(app.get("message"), "ServeApplicationStatus.message"),
                "deployments": deployments,
            }
    except ValueError:  # a syntax error, or a GoError: a type Go's decoder refuses
        err = f"failed to get serve details: GetServeDetails failed. Failed to unmarshal bytes: {text}"
        raise RayServiceBuildError(GET_SERVE_STATUS_ERROR.format(err=err)) from None
    for app_name, app in decoded_apps.items():
        if app["status"] != c.SERVE_APP_RUNNING:
            ready = False
        entry: dict[str, Any] = {}
        deployments_out = {name: _omit_empty(dep) for name, dep in app["deployments"].items()}
        if deployments_out:
            entry["serveDeploymentStatuses"] = deployments_out
        entry.update(_omit_empty({"status": app["status"], "message": app["message"]}))
        statuses[app_name or c.DEFAULT_SERVE_APP_NAME] = entry
    return ready and bool(statuses), statuses


def _omit_empty(values: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in values.items() if value}


# --------------------------------------------------------------------------------------------------------------------
# Status
# --------------------------------------------------------------------------------------------------------------------


def set_condition(status: dict[str, Any], type_: str, value: str, reason: str, message: str, *, stamp: str) -> None:
    """KubeRay's ``setCondition``: ``meta.SetStatusCondition`` with ``observedGeneration`` =
    ``status.observedGeneration``; a new condition is appended with ``lastTransitionTime = stamp``, an existing one
    changes its time only when its status changes. Mutates ``status`` (a working copy)."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    generation = int(status.get("observedGeneration") or 0)
    for cond in conditions:
        if cond.get("type") == type_:
            if cond.get("status") != value:
                cond["status"] = value
                cond["lastTransitionTime"] = stamp
            cond["reason"] = reason
            cond["message"] = message
            if generation:
                cond["observedGeneration"] = generation
            else:
                cond.pop("observedGeneration", None)
            return
    new: dict[str, Any] = {"type": type_, "status": value}
    if generation:
        new["observedGeneration"] = generation
    new.update(lastTransitionTime=stamp, reason=reason, message=message)
    conditions.append(new)


def initializing_timeout(annotations: Mapping[str, str] | None) -> int | None:
    """``getInitializingTimeout``: ``ray.io/initializing-timeout`` in nanoseconds, read as a Go duration (``30m``)
    or else as integer seconds (``1800``); None when absent, empty or neither (validation refuses those, and
    non-positive values, before this is reached)."""
    text = (annotations or {}).get(c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION, "")
    if not text:
        return None
    try:
        return parse_duration(text)
    except GoError:
        pass
    try:
        seconds = atoi(text)
    except GoError:
        return None
    nanos = seconds * 1_000_000_000
    return ((nanos + 2**63) % 2**64) - 2**63  # time.Duration(seconds) * time.Second wraps like int64


def is_initializing_timeout(status: Mapping[str, Any] | None) -> bool:
    """``isInitializingTimeout``: Ready is ``False/InitializingTimeout``, the terminal state."""
    cond = _find(_conditions(status or {}), c.CONDITION_RAYSERVICE_READY)
    return (
        cond is not None
        and cond.get("status") == _FALSE
        and cond.get("reason") == c.REASON_RAYSERVICE_INITIALIZING_TIMEOUT
    )


def num_serve_endpoints(endpoint_slices: Sequence[Mapping[str, Any]]) -> int:
    """``calculateNumServeEndpointsFromSlices`` over the EndpointSlices labelled
    ``kubernetes.io/service-name=<serve Service>``: the distinct ``targetRef.uid`` of endpoints whose
    ``conditions.ready`` is true (an endpoint without targetRef or uid does not count). Above MaxInt32 KubeRay fails
    the pass: :class:`RayServiceBuildError`."""
    uids = {
        str((endpoint.get("targetRef") or {}).get("uid"))
        for slice_ in endpoint_slices
        for endpoint in slice_.get("endpoints") or []
        if (endpoint.get("conditions") or {}).get("ready") is True and (endpoint.get("targetRef") or {}).get("uid")
    }
    if len(uids) > _MAX_INT32:
        raise RayServiceBuildError("numServeEndpoints exceeds math.MaxInt32")
    return len(uids)


def calculate_conditions(
    status: Mapping[str, Any], *, annotations: Mapping[str, str] | None, now: datetime
) -> tuple[dict[str, Any], str | None]:
    """``calculateConditions`` on a status whose ``numServeEndpoints``, ``observedGeneration`` and cluster names are
    this pass's: a new status and, when the initializing timeout fired, the message of KubeRay's Warning event
    ``RayServiceInitializingTimeout`` (None otherwise).

    * No condition yet: Ready and UpgradeInProgress ``False/Initializing``.
    * Ready: ``True/NonZeroServeEndpoints`` with endpoints; else ``False/ZeroServeEndpoints`` if it was True; else the
      initializing timeout: with a valid annotation and Ready ``False/Initializing`` for at least the timeout (since
      its ``lastTransitionTime``), both cluster names are cleared and Ready becomes ``False/InitializingTimeout``.
    * UpgradeInProgress: ``True/BothActivePendingClustersExist``, ``False/NoPendingCluster`` with only an active
      cluster, else ``Unknown/NoActiveCluster`` unless its reason is ``Initializing`` or ``InitializingTimeout``.
    """
    new = copy.deepcopy(dict(status))
    stamp = times.format_time(now)
    event: str | None = None
    if not new.get("conditions"):
        new["conditions"] = []
        for type_ in (c.CONDITION_RAYSERVICE_READY, c.CONDITION_UPGRADE_IN_PROGRESS):
            set_condition(new, type_, _FALSE, c.REASON_RAYSERVICE_INITIALIZING, _INITIALIZING_MESSAGE, stamp=stamp)
    if int(new.get("numServeEndpoints") or 0) > 0:
        set_condition(
            new,
            c.CONDITION_RAYSERVICE_READY,
            _TRUE,
            c.REASON_NON_ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints is greater than 0",
            stamp=stamp,
        )
    elif _is_true(new["conditions"], c.CONDITION_RAYSERVICE_READY):
        set_condition(
            new,
            c.CONDITION_RAYSERVICE_READY,
            _FALSE,
            c.REASON_ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints dropped to 0",
            stamp=stamp,
        )
    else:
        event = _mark_failed_on_initializing_timeout(new, annotations, now, stamp)

    active, pending = _side_name(new, "activeServiceStatus"), _side_name(new, "pendingServiceStatus")
    if active and pending:
        set_condition(
            new,
            c.CONDITION_UPGRADE_IN_PROGRESS,
            _TRUE,
            c.REASON_BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            "Both active and pending Ray clusters exist",
            stamp=stamp,
        )
    elif active:
        set_condition(
            new,
            c.CONDITION_UPGRADE_IN_PROGRESS,
            _FALSE,
            c.REASON_NO_PENDING_CLUSTER,
            "Active Ray cluster exists and no pending Ray cluster",
            stamp=stamp,
        )
    else:
        cond = _find(new["conditions"], c.CONDITION_UPGRADE_IN_PROGRESS)
        keep = (c.REASON_RAYSERVICE_INITIALIZING, c.REASON_RAYSERVICE_INITIALIZING_TIMEOUT)
        if cond is None or cond.get("reason") not in keep:
            set_condition(
                new,
                c.CONDITION_UPGRADE_IN_PROGRESS,
                _UNKNOWN,
                c.REASON_NO_ACTIVE_CLUSTER,
                "No active Ray cluster exists, and the RayService is not initializing. "
                "Please open a GitHub issue in the KubeRay repository.",
                stamp=stamp,
            )
    return new, event


def _mark_failed_on_initializing_timeout(
    status: dict[str, Any], annotations: Mapping[str, str] | None, now: datetime, stamp: str
) -> str | None:
    timeout = initializing_timeout(annotations)
    ready = _find(status["conditions"], c.CONDITION_RAYSERVICE_READY)
    if timeout is None or ready is None:
        return None
    if ready.get("status") != _FALSE or ready.get("reason") != c.REASON_RAYSERVICE_INITIALIZING:
        return None
    since = times.parse_time(ready.get("lastTransitionTime"))
    elapsed = _nanoseconds(now - since) if since is not None else _nanoseconds(now - _GO_ZERO_TIME)
    if elapsed < timeout:
        return None
    for side in ("activeServiceStatus", "pendingServiceStatus"):
        if isinstance(status.get(side), dict):
            status[side].pop("rayClusterName", None)
    timeout_text, elapsed_text = duration_string(timeout), duration_string(elapsed)
    set_condition(
        status,
        c.CONDITION_RAYSERVICE_READY,
        _FALSE,
        c.REASON_RAYSERVICE_INITIALIZING_TIMEOUT,
        f"RayService failed to become ready within the configured timeout of {timeout_text}. "
        f"Time spent initializing: {elapsed_text}",
        stamp=stamp,
    )
    return f"RayService initializing timeout exceeded after {elapsed_text} (configured timeout: {timeout_text})"


_GO_ZERO_TIME: Final = datetime(1, 1, 1, tzinfo=times.UTC)


def _nanoseconds(delta: timedelta) -> int:
    """A timedelta in nanoseconds, saturated to int64 as Go's ``time.Sub`` is."""
    nanos = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
    return max(_INT64_MIN, min(_INT64_MAX, nanos))


def service_status(status: Mapping[str, Any]) -> str:
    """``status.serviceStatus`` (the ``service status`` printer column): ``Running`` iff Ready is True, else ``""``."""
    return c.RAYSERVICE_STATUS_RUNNING if _is_true(_conditions(status), c.CONDITION_RAYSERVICE_READY) else ""


def promote(
    status: Mapping[str, Any], head_svc: Mapping[str, Any], serve_svc: Mapping[str, Any]
) -> tuple[dict[str, Any], bool]:
    """``reconcilePromotionAndServingStatus`` for NewCluster and None: when the Services point at a cluster that is
    not the active one, the pending side becomes active (whole) and pending is emptied. Returns the new status and
    whether the Services point at the pending cluster (as named before promotion). Where KubeRay panics (the two
    Services disagree, or point at neither cluster) :class:`RayServiceBuildError`."""
    target = service_cluster(head_svc)
    if target != service_cluster(serve_svc):
        raise RayServiceBuildError("headSvc and serveSvc are not pointing to the same cluster")
    pending, active = _side_name(status, "pendingServiceStatus"), _side_name(status, "activeServiceStatus")
    if target not in (pending, active):
        raise RayServiceBuildError("clusterName from services is not equal to pendingCluster or activeCluster")
    new = copy.deepcopy(dict(status))
    if active != target:
        new["activeServiceStatus"] = new.get("pendingServiceStatus") or {}
        new["pendingServiceStatus"] = {}
    return new, target == pending


def _entry_differs(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return any((old.get(key) or "") != (new.get(key) or "") for key in ("status", "message"))


def _statuses_differ(old: Mapping[str, Any], new: Mapping[str, Any], children: str | None) -> bool:
    """Two maps of application (``children`` = their deployments' key) or deployment statuses, compared as
    ``inconsistentRayServiceStatus`` does: sizes, names, status and message, then the children."""
    if len(old) != len(new):
        return True
    for name, entry in new.items():
        before = old.get(name)
        if before is None or _entry_differs(before, entry):
            return True
        if children and _statuses_differ(before.get(children) or {}, entry.get(children) or {}, None):
            return True
    return False


def _side_differs(old: Mapping[str, Any], new: Mapping[str, Any], *, incremental_gate: bool) -> bool:
    if (old.get("rayClusterName") or "") != (new.get("rayClusterName") or ""):
        return True
    apps_old, apps_new = old.get("applicationStatuses") or {}, new.get("applicationStatuses") or {}
    if _statuses_differ(apps_old, apps_new, "serveDeploymentStatuses"):
        return True
    # [Q] With the incremental gate on, KubeRay compares these *int32 / *metav1.Time pointers by address: a status
    # read back and the one being computed never share them, so a side where one is set always counts as changed.
    keys = ("trafficRoutedPercent", "targetCapacity", "lastTrafficMigratedTime")
    return incremental_gate and any(old.get(key) is not None or new.get(key) is not None for key in keys)


def status_needs_update(
    old: Mapping[str, Any] | None, new: Mapping[str, Any], *, incremental_gate: bool = False
) -> bool:
    """``utils.InconsistentRayServiceStatuses``: write when ``serviceStatus``, ``numServeEndpoints`` or the
    conditions changed, or on either side the cluster name or an application's or deployment's status or message
    (``rayClusterStatus`` alone never causes a write)."""
    old = old or {}
    if (old.get("serviceStatus") or "") != (new.get("serviceStatus") or ""):
        return True
    if int(old.get("numServeEndpoints") or 0) != int(new.get("numServeEndpoints") or 0):
        return True
    if (old.get("conditions") or []) != (new.get("conditions") or []):
        return True
    return any(
        _side_differs(old.get(side) or {}, new.get(side) or {}, incremental_gate=incremental_gate)
        for side in ("activeServiceStatus", "pendingServiceStatus")
    )

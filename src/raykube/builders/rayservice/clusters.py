"""The RayService's RayCluster, as KubeRay v1.6.1 ``ray-operator/controllers/ray/rayservice_controller.go`` names,
builds, compares and updates it.

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
* :func:`incremental_upgrade_enabled` is ``IsIncrementalUpgradeEnabled``.

KubeRay's quirks kept **[Q]**:

* The in-place update replaces the cluster's spec, labels and annotations whole: worker ``replicas`` set by the
  autoscaler are overwritten, labels another controller added are dropped.
* A change of worker ``replicas``/``minReplicas``/``maxReplicas`` alone leaves the hash equal and never reaches an
  existing cluster.
* A ``ray.io/num-worker-groups`` annotation that does not parse makes the partial hash "equal" (an in-place update
  of a spec that may have changed anywhere).
* KubeRay does not set ``ray.io/enable-serve-service`` on the clusters it creates (the RayService builds its own
  serve Service); the annotation reaches a cluster only when the RayService itself carries it, copied like any other.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.rayservice import RayServiceUpgradeStrategy
from raykube.api.resources import RayCluster, RayService
from raykube.builders import names
from raykube.builders.rayservice.common import (
    RayServiceBuildError,
    _cluster_config,
    _conditions,
    _is_true,
    _name,
    _namespace,
    _originated_labels,
    _rayservice_owner,
    _side_name,
    _spec,
    _status,
)
from raykube.builders.spechash import spec_hash_of_wire
from raykube.golang.errors import GoError
from raykube.golang.strconv import atoi

__all__ = [
    "cluster_spec_hash_equal",
    "goal_cluster_hash",
    "incremental_upgrade_enabled",
    "new_cluster_name",
    "partial_cluster_hash",
    "rayservice_cluster",
    "should_prepare_new_cluster",
    "should_update_cluster",
    "updated_cluster",
    "zero_downtime_upgrade_enabled",
]


def new_cluster_name(rayservice: RayService, suffix: str | None = None, rng: random.Random | None = None) -> str:
    """``GenerateRayClusterName``: ``<rs>-<suffix>``, the suffix 5 random characters unless given."""
    return f"{_name(rayservice)}-{suffix if suffix is not None else names.random_suffix(rng)}"


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


def _config_for_hashing(rayservice: RayService) -> dict[str, Any]:
    """KubeRay v1.7.0 ``rayClusterSpecForHashing``: ``rayClusterConfig`` without ``suspend``, which reaches the
    RayCluster only when it is created (later changes are Kueue's business, not a reason to update or upgrade)."""
    wire = _cluster_config(rayservice).to_wire()
    wire.pop("suspend", None)
    return wire


def goal_cluster_hash(rayservice: RayService) -> str:
    """``GenerateHashWithoutReplicasAndWorkersToDelete(rayClusterSpecForHashing(...))``, the spec as stored."""
    return spec_hash_of_wire(_config_for_hashing(rayservice), defaulted=False)


def partial_cluster_hash(rayservice: RayService, num_worker_groups: int) -> str | None:
    """The hash of ``rayClusterConfig`` (less ``suspend``) cut to its first ``num_worker_groups`` worker groups; None
    when it has fewer (KubeRay then compares against ``""``, never equal)."""
    groups = _cluster_config(rayservice).worker_group_specs or []
    if len(groups) < num_worker_groups:
        return None
    wire = _config_for_hashing(rayservice)
    if "workerGroupSpecs" in wire:
        wire["workerGroupSpecs"] = wire["workerGroupSpecs"][:num_worker_groups]
    return spec_hash_of_wire(wire, defaulted=False)


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

    * (active only, and not while ``UpgradeInProgress`` is True) its ``ray.io/kuberay-version`` is not this
      operator's (v1.7.0);
    * the full hash differs and the partial hash is equal (worker groups appended at the end).

    KubeRay v1.7.0 no longer updates a cluster because ``rayClusterConfig.suspend`` differs from its ``spec.suspend``
    (v1.6.1 did): ``suspend`` reaches a cluster only when it is created, later it is Kueue's."""
    if cluster is None:
        return False
    if active:
        if _is_true(_conditions(_status(rayservice)), c.CONDITION_UPGRADE_IN_PROGRESS):
            return False
        version = (cluster.metadata.get("annotations") or {}).get(c.RAY_KUBERAY_VERSION_ANNOTATION, "")
        if version != c.KUBERAY_VERSION:
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
    status: Mapping[str, Any] | None = None,
) -> bool:
    """``shouldPrepareNewCluster``: false while the Services point at the pending cluster (``pending_serving``) or a
    rollback is in progress; true with no cluster at all; else false when the pending (or, without one, the active)
    cluster's hash equals the goal, fully or partially; else :func:`zero_downtime_upgrade_enabled`. ``status``: this
    pass's working status (KubeRay reads the object it is changing), else the RayService's."""
    current = _status(rayservice) if status is None else status
    if pending_serving or _is_true(_conditions(current), c.CONDITION_ROLLBACK_IN_PROGRESS):
        return False
    cluster = pending if pending is not None else active
    if cluster is None:
        return True
    if cluster_spec_hash_equal(rayservice, cluster, partial=False):
        return False
    if cluster_spec_hash_equal(rayservice, cluster, partial=True):
        return False
    return zero_downtime_upgrade_enabled(_spec(rayservice).upgrade_strategy, gates=gates, env=zero_downtime_env)


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
    ``annotations`` replaced by the goal's (:func:`rayservice_cluster` of the same name). **[Q]** Replaced whole, but
    for ``spec.suspend``, which keeps the live cluster's (KubeRay v1.7.0: set at creation only, then Kueue's)."""
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
    spec = copy.deepcopy(dict(goal.get("spec") or {}))
    spec.pop("suspend", None)
    live_spec = current.get("spec") or {}
    if "suspend" in live_spec:
        spec["suspend"] = live_spec["suspend"]
    updated["spec"] = spec
    return updated

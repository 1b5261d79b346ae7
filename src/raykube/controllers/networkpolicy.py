"""The NetworkPolicy reconciler: a RayCluster's ``spec.networkPolicy`` made into NetworkPolicies, as KubeRay v1.7.0
does (alpha, gated).

KubeRay's ``ray-operator/controllers/ray/networkpolicy_controller.go``, re-implemented: a controller of its own
(``networkpolicy``, events from ``networkpolicy-controller``) that the manager registers only with
``--feature-gates=RayClusterNetworkPolicy=true``. It watches RayClusters (a pass only when the generation changes,
KubeRay's ``GenerationChangedPredicate``) and the NetworkPolicies they own. A pass:

1. A RayCluster that is gone, being deleted, or ``managedBy`` another controller: nothing (the garbage collector takes
   the policies of a deleted cluster, through their ownerReferences).
2. No ``spec.networkPolicy``: every policy labelled ``ray.io/cluster=<cluster>`` that the cluster controls is deleted.
3. Otherwise the head's policy, then each worker group's (:mod:`raykube.builders.networkpolicy`), one after another:
   created when missing (``Normal CreatedNetworkPolicy``); when one exists and the cluster controls it, updated (spec
   and labels) if it differs (``Normal UpdatedNetworkPolicy``); one the cluster does not control is left alone with a
   ``Warning NetworkPolicyNameCollision`` and the pass fails there (retried with back-off, as KubeRay's error return).
   Then the cluster's policies for worker groups no longer in the spec are deleted (``Normal DeletedNetworkPolicy``).

A write the API server refuses gets ``Warning FailedTo{Create,Update,Delete}NetworkPolicy "... <ns>/<name>: <error>"``
and fails the pass. Events carry KubeRay v1.7.0's actions: Create, Update, Delete, and Validate for the collision.

Unlike KubeRay, which POSTs every policy on every pass and reads it back on AlreadyExists, the informer cache says
which exist: a pass that changes nothing writes nothing. The cache holds only policies labelled ``ray.io/cluster``;
a same-named one without that label is found by the create's AlreadyExists and a read.

KubeRay v1.7.0 does not validate the RayCluster here (the RayCluster controller does, and refuses ``networkPolicy``
without the gate), and neither does this controller.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS, RayCluster
from raykube.builders import networkpolicy as np
from raykube.controllers.base import Deps, Registration, Result, reported, sent
from raykube.kube import objects
from raykube.kube.errors import ApiError
from raykube.kube.resources import NETWORK_POLICIES

log = logging.getLogger(__name__)

CONTROLLER = "networkpolicy"  # controller-runtime's name for KubeRay v1.7.0's NetworkPolicy controller

Obj = Mapping[str, Any]


class NetworkPolicyError(Exception):
    """A pass could not bring the policies in line; the manager retries it with back-off."""


def generation_changed(old: Obj | None, new: Obj | None) -> bool:
    """controller-runtime's ``GenerationChangedPredicate`` on updates: only a new ``metadata.generation`` (a spec
    change) starts a pass; label, annotation and status changes do not."""
    if old is None or new is None:
        return True
    return objects.meta(old).get("generation") != objects.meta(new).get("generation")


def registration(options: object = None) -> Registration:
    """KubeRay v1.7.0 ``NetworkPolicyController.SetupWithManager``: ``For(RayCluster, GenerationChanged)``,
    ``Owns(NetworkPolicy)``, named ``networkpolicy``."""
    return (
        Registration.named(CONTROLLER, recorder=c.NETWORKPOLICY_CONTROLLER_NAME)
        .for_(RAYCLUSTERS)
        .owns(NETWORK_POLICIES, label_selector=c.RAY_CLUSTER_LABEL, index_labels=(c.RAY_CLUSTER_LABEL,))
        .with_predicate(generation_changed)
        .complete(NetworkPolicyReconciler)
    )


def _not_found(exc: ApiError) -> bool:
    return exc.not_found


def _already_exists(exc: ApiError) -> bool:
    return exc.already_exists


class NetworkPolicyReconciler:
    def __init__(self, deps: Deps) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder

    async def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.cache.get(RAYCLUSTERS, namespace, name)
        if obj is None or objects.terminating(obj):
            return Result()
        raw_spec = obj.get("spec")
        spec: Obj = raw_spec if isinstance(raw_spec, Mapping) else {}
        managed_by = spec.get("managedBy")
        if managed_by and managed_by != c.MANAGED_BY_KUBERAY:
            log.info("RayCluster %s/%s: skipping, managed by %s", namespace, name, managed_by)
            return Result()
        if spec.get("networkPolicy") is None:
            await self._delete_stale(obj, set())
            return Result()
        try:
            cluster = RayCluster.model_validate(obj)
        except ValidationError as exc:
            log.warning("RayCluster %s/%s: cannot read spec.networkPolicy: %s", namespace, name, exc)
            return Result()
        desired = np.network_policies(cluster)
        for policy in desired:
            await self._create_or_update(obj, policy)
        await self._delete_stale(obj, {objects.name(p) for p in desired})
        return Result()

    async def _create_or_update(self, cluster: Obj, desired: dict[str, Any]) -> None:
        namespace, name = objects.namespace(cluster), objects.name(desired)
        live = self.cache.get(NETWORK_POLICIES, namespace, name)
        if live is None:
            created = await reported(
                self.recorder,
                cluster,
                "Create",
                self.api.create(NETWORK_POLICIES, desired, namespace),
                done=(c.EVENT_CREATED_NETWORK_POLICY, f"Created NetworkPolicy {namespace}/{name}"),
                failed=(c.EVENT_FAILED_TO_CREATE_NETWORK_POLICY, f"Failed to create NetworkPolicy {namespace}/{name}"),
                sep=": ",
                tolerate=_already_exists,
            )
            if created is not None:
                return
            live = await self.api.get(NETWORK_POLICIES, name, namespace)  # not in the cache: unlabelled, or lagging
        if not objects.owned_by(live, objects.uid(cluster)):
            self.recorder.event(
                cluster,
                c.EVENT_TYPE_WARNING,
                c.EVENT_NETWORK_POLICY_NAME_COLLISION,
                "Validate",
                f"NetworkPolicy {namespace}/{name} already exists and is not owned by this RayCluster, network "
                "isolation will not be applied. Rename the existing NetworkPolicy or use a different RayCluster name "
                "to avoid the collision",
            )
            raise NetworkPolicyError(
                f"NetworkPolicy {namespace}/{name} already exists and is not owned by this RayCluster"
            )
        if not np.needs_update(live, desired):
            return
        body = copy.deepcopy(dict(live))
        body["spec"] = np.normalized_spec(desired["spec"])
        body["metadata"]["labels"] = dict(desired["metadata"]["labels"])
        await reported(
            self.recorder,
            cluster,
            "Update",
            self.api.replace(NETWORK_POLICIES, name, body, namespace),
            done=(c.EVENT_UPDATED_NETWORK_POLICY, f"Updated NetworkPolicy {namespace}/{name}"),
            failed=(c.EVENT_FAILED_TO_UPDATE_NETWORK_POLICY, f"Failed to update NetworkPolicy {namespace}/{name}"),
            sep=": ",
        )

    async def _delete_stale(self, cluster: Obj, keep: set[str]) -> None:
        """KubeRay ``deleteStaleNetworkPolicies``: the cluster's policies (by label, then by controller reference)
        whose names are not in ``keep``; one already gone is fine."""
        namespace = objects.namespace(cluster)
        listed = self.cache.list(NETWORK_POLICIES, namespace, {c.RAY_CLUSTER_LABEL: objects.name(cluster)})
        for policy in listed:
            name = objects.name(policy)
            if name in keep or not objects.owned_by(policy, objects.uid(cluster)):
                continue
            await reported(
                self.recorder,
                cluster,
                "Delete",
                sent(self.api.delete(NETWORK_POLICIES, name, namespace)),
                done=(c.EVENT_DELETED_NETWORK_POLICY, f"Deleted NetworkPolicy {namespace}/{name}"),
                failed=(c.EVENT_FAILED_TO_DELETE_NETWORK_POLICY, f"Failed to delete NetworkPolicy {namespace}/{name}"),
                sep=": ",
                tolerate=_not_found,
            )

"""KubeRay v1.7.0's ``kubernetes-was-v1alpha2`` batch scheduler (gate ``KubernetesWAS``, off by default): Kubernetes'
own workload-aware scheduling gang-schedules a RayCluster through ``scheduling.k8s.io/v1alpha2`` objects
(``batchscheduler/kubernetes-was``; Kubernetes 1.36 with the ``GenericWorkload`` feature gate and that alpha API on).

Pure, like every builder: a :class:`~raykube.api.resources.RayCluster` (and what the cache holds) in, objects and
steps out; no I/O.

* It acts on a RayCluster labelled ``ray.io/gang-scheduling-enabled=true`` (any case) without in-tree autoscaling
  (v1.7.0 does not gang-schedule with the autoscaler yet); on any other cluster it only cleans up what it made.
* Objects (each with a controller owner reference to the RayCluster and the label ``ray.io/cluster``): a ``Workload``
  named like the cluster, whose ``spec.controllerRef`` points back at it, with one PodGroupTemplate ``cluster``
  whose gang policy has ``minCount`` = 1 (the head) + the desired workers; and a ``PodGroup`` ``<cluster>-cluster``
  that references that template with the same policy.
* Pods (:meth:`KubernetesWAS.decorate_pod`, RayCluster parents only): ``schedulerName: default-scheduler`` and
  ``spec.schedulingGroup.podGroupName: <cluster>-cluster``. A RayJob's children are left alone.
* Both objects are immutable in v1alpha2: :meth:`KubernetesWAS.plan` replaces a stale one by deleting it (with a
  UID precondition; the PodGroup first, after removing Kubernetes' ``scheduling.k8s.io/podgroup-protection``
  finalizer) and failing the pass with v1.7.0's "will retry" message, so a later pass recreates it. A same-named
  object the cluster does not control is an error, never touched.

The RayCluster controller runs the plan (``DoBatchSchedulingOnSubmission``) before it creates Pods and watches both
kinds (KubeRay ``Owns``). The RayJob controller creates nothing for it (v1.7.0's plugin ignores RayJobs).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from raykube.api import constants as c
from raykube.api.resources import RayCluster, RayJob
from raykube.builders import groups, names
from raykube.kube import objects
from raykube.kube.resources import Resource

__all__ = ["Create", "Delete", "KubernetesWAS", "Plan", "RemoveFinalizer", "Step"]

WORKLOADS = Resource(c.WAS_GROUP, c.WAS_VERSION, c.KIND_WAS_WORKLOAD, c.WAS_WORKLOADS_PLURAL)
PODGROUPS = Resource(c.WAS_GROUP, c.WAS_VERSION, c.KIND_WAS_PODGROUP, c.WAS_PODGROUPS_PLURAL)


@dataclass(frozen=True)
class Create:
    res: Resource
    body: dict[str, Any]
    failure: str  # what a failed write is reported as, before the API's error


@dataclass(frozen=True)
class RemoveFinalizer:
    """An update of ``body`` (the live object without the PodGroup protection finalizer); NotFound is fine."""

    res: Resource
    body: dict[str, Any]
    failure: str


@dataclass(frozen=True)
class Delete:
    """A delete with a UID precondition; NotFound is fine."""

    res: Resource
    name: str
    uid: str
    failure: str


Step = Create | RemoveFinalizer | Delete


@dataclass(frozen=True)
class Plan:
    """The writes to make, in order, then ``error`` (when set) fails the pass: KubeRay returns it from
    ``DoBatchSchedulingOnSubmission`` and the reconcile is retried."""

    steps: tuple[Step, ...] = ()
    error: str | None = None


class KubernetesWAS:
    """The ``kubernetes-was-v1alpha2`` plugin (one PodGroup gang per RayCluster)."""

    name: ClassVar[str] = c.BATCH_SCHEDULER_KUBERNETES_WAS
    scheduler_name: ClassVar[str] = c.DEFAULT_SCHEDULER_NAME
    kinds: ClassVar[tuple[Resource, ...]] = (WORKLOADS, PODGROUPS)
    # KubeRay v1.7.0 selectProvider's error when discovery does not list scheduling.k8s.io/v1alpha2 (client-go's 404
    # text after it); raykube stops at start-up with it (the RayCluster controller's missing_hint).
    missing_api: ClassVar[str] = (
        f"no served scheduling.k8s.io API version available for {c.BATCH_SCHEDULER_KUBERNETES_WAS}: "
        "scheduling.k8s.io/v1alpha2 API is not available: the server could not find the requested resource "
        "(Kubernetes 1.36+ serves it with --runtime-config=scheduling.k8s.io/v1alpha2=true and the GenericWorkload "
        "feature gate)"
    )

    @staticmethod
    def active(cluster: RayCluster) -> bool:
        """``schedulingSkipReason`` is empty: gang scheduling asked for (label ``true``, any case), no autoscaler."""
        labels: Mapping[str, str] = cluster.metadata.get("labels") or {}
        if str(labels.get(c.RAY_GANG_SCHEDULING_ENABLED_LABEL, "")).lower() != "true":
            return False
        return cluster.spec is None or cluster.spec.enable_in_tree_autoscaling is not True

    @staticmethod
    def podgroup_name(cluster_name: str) -> str:
        return f"{cluster_name}-{c.WAS_POD_GROUP_TEMPLATE_NAME}"

    @staticmethod
    def min_count(cluster: RayCluster) -> int:
        """The head and every desired worker (``1 + CalculateDesiredReplicas``)."""
        spec = cluster.spec
        return groups.int32(1 + (groups.total_desired_workers(spec) if spec is not None else 0))

    # ----------------------------------------------------------------------------------------- BatchScheduler
    def decorate_pod(self, parent: RayCluster | RayJob, group: str, pod: Mapping[str, Any]) -> dict[str, Any]:
        new = copy.deepcopy(dict(pod))
        if not isinstance(parent, RayCluster) or not self.active(parent):
            return new
        spec = new.setdefault("spec", {})
        spec["schedulerName"] = self.scheduler_name
        spec["schedulingGroup"] = {"podGroupName": self.podgroup_name(str(parent.metadata.get("name") or ""))}
        return new

    def objects(self, cluster: RayCluster) -> list[dict[str, Any]]:
        """The Workload and the PodGroup the cluster should have (none when the plugin skips it)."""
        if not self.active(cluster):
            return []
        meta = cluster.metadata
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        policy = {"gang": {"minCount": self.min_count(cluster)}}
        common = {
            "namespace": namespace,
            "labels": {c.RAY_CLUSTER_LABEL: name},
            "ownerReferences": [names.owner_reference(c.KIND_RAYCLUSTER, name, str(meta.get("uid") or ""))],
        }
        workload = {
            "apiVersion": WORKLOADS.api_version,
            "kind": WORKLOADS.kind,
            "metadata": {"name": name, **copy.deepcopy(common)},
            "spec": {
                "controllerRef": {"apiGroup": c.API_GROUP, "kind": c.KIND_RAYCLUSTER, "name": name},
                "podGroupTemplates": [
                    {"name": c.WAS_POD_GROUP_TEMPLATE_NAME, "schedulingPolicy": copy.deepcopy(policy)}
                ],
            },
        }
        template_ref = {"workloadName": name, "podGroupTemplateName": c.WAS_POD_GROUP_TEMPLATE_NAME}
        podgroup = {
            "apiVersion": PODGROUPS.api_version,
            "kind": PODGROUPS.kind,
            "metadata": {"name": self.podgroup_name(name), **copy.deepcopy(common)},
            "spec": {"podGroupTemplateRef": {"workload": template_ref}, "schedulingPolicy": policy},
        }
        return [workload, podgroup]

    def rayjob_objects(self, rayjob: RayJob) -> list[dict[str, Any]]:
        return []  # v1.7.0's plugin acts on RayClusters only

    def rayjob_completion_objects(self, rayjob: RayJob, cluster: RayCluster | None) -> list[dict[str, Any]]:
        return []

    def updated(self, live: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
        return None  # immutable: replaced through plan(), never updated

    # ----------------------------------------------------------------------------------------- the reconcile
    def plan(self, cluster: RayCluster, workload: Mapping[str, Any] | None, podgroup: Mapping[str, Any] | None) -> Plan:
        """What ``DoBatchSchedulingOnSubmission`` does, given the live Workload and PodGroup of the cluster's names
        (None: absent): sync them when the plugin acts on the cluster, else clean up the ones it controls."""
        meta = cluster.metadata
        name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
        live = _Live(
            workload,
            podgroup,
            str(meta.get("uid") or ""),
            workload_key=f"{namespace}/{name}",
            podgroup_key=f"{namespace}/{self.podgroup_name(name)}",
        )
        if not self.active(cluster):
            return _cleanup(live)
        desired_workload, desired_podgroup = self.objects(cluster)
        want = self.min_count(cluster)
        steps: list[Step] = []
        if workload is None:
            steps.append(Create(WORKLOADS, desired_workload, f"failed to create Workload {live.workload_key}"))
        else:
            stop = _check_workload(live, workload, want)
            if stop is not None:
                return stop
        return _sync_podgroup(live, steps, desired_podgroup, want)


@dataclass(frozen=True)
class _Live:
    """The cluster's live Workload and PodGroup (by name) and what is needed to judge them."""

    workload: Mapping[str, Any] | None
    podgroup: Mapping[str, Any] | None
    uid: str  # the RayCluster's
    workload_key: str  # namespace/name, as the messages name them
    podgroup_key: str

    @property
    def own_podgroup(self) -> Mapping[str, Any] | None:
        podgroup = self.podgroup
        return podgroup if podgroup is not None and objects.owned_by(podgroup, self.uid) else None


def _cleanup(live: _Live) -> Plan:
    """``deleteSchedulingResources``: the PodGroup it controls first (the pass fails until it is gone), then the
    Workload it controls. Objects of the same names it does not control are left alone."""
    podgroup = live.own_podgroup
    if podgroup is not None:
        return Plan(
            _delete_podgroup(podgroup, live.podgroup_key),
            f"waiting for PodGroup {live.podgroup_key} to finish deleting",
        )
    workload = live.workload
    if workload is None or not objects.owned_by(workload, live.uid):
        return Plan()
    if objects.terminating(workload):
        return Plan(error=f"Workload {live.workload_key} is being deleted, will retry")
    return Plan((_delete(WORKLOADS, workload, f"failed to delete Workload {live.workload_key}"),))


def _check_workload(live: _Live, workload: Mapping[str, Any], want: int) -> Plan | None:
    """``syncWorkload`` on a live Workload: None when it is in step, else the plan that ends the pass (a foreign or
    terminating one is an error; a stale one goes, its PodGroup first)."""
    if not objects.owned_by(workload, live.uid):
        return Plan(error=_foreign("Workload", live.workload_key))
    if objects.terminating(workload):
        return Plan(error=f"Workload {live.workload_key} is being deleted, will retry")
    if not _workload_stale(workload, want):
        return None
    podgroup = live.own_podgroup
    if podgroup is not None:
        return Plan(
            _delete_podgroup(podgroup, live.podgroup_key),
            f"deleted PodGroup {live.podgroup_key} before replacing stale Workload, will retry after deletion "
            "completes",
        )
    return Plan(
        (_delete(WORKLOADS, workload, f"failed to delete stale Workload {live.workload_key}"),),
        f"deleted stale Workload {live.workload_key}, will retry after deletion completes",
    )


def _sync_podgroup(live: _Live, steps: list[Step], desired: dict[str, Any], want: int) -> Plan:
    """``syncPodGroup`` after the Workload's ``steps``: create it, or leave it, or replace a stale one."""
    podgroup, key = live.podgroup, live.podgroup_key
    if podgroup is None:
        return Plan((*steps, Create(PODGROUPS, desired, f"failed to create PodGroup {key}")))
    if not objects.owned_by(podgroup, live.uid):
        return Plan(tuple(steps), _foreign("PodGroup", key))
    if objects.terminating(podgroup):
        return Plan((*steps, *_delete_podgroup(podgroup, key)), f"PodGroup {key} is being deleted, will retry")
    if _gang_min_count(podgroup.get("spec")) == want:
        return Plan(tuple(steps))
    return Plan(
        (*steps, *_delete_podgroup(podgroup, key)),
        f"deleted stale PodGroup {key}, will retry after deletion completes",
    )


def _foreign(kind: str, key: str) -> str:
    return (
        f"{kind} {key} already exists and is not owned by this RayCluster; rename it or use a different RayCluster "
        "name to avoid the collision"
    )


def _gang_min_count(holder: Any) -> int | None:
    """``schedulingPolicy.gang.minCount`` of a PodGroup spec or a PodGroupTemplate (None without a gang policy)."""
    policy = holder.get("schedulingPolicy") if isinstance(holder, Mapping) else None
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    count = gang.get("minCount") if isinstance(gang, Mapping) else None
    return count if isinstance(count, int) else None


def _workload_stale(workload: Mapping[str, Any], want: int) -> bool:
    """``isWorkloadStale``: not exactly one template, or it is not ``cluster`` with a gang of ``want``."""
    templates = (workload.get("spec") or {}).get("podGroupTemplates") or []
    if len(templates) != 1:
        return True
    template = templates[0]
    return template.get("name") != c.WAS_POD_GROUP_TEMPLATE_NAME or _gang_min_count(template) != want


def _delete(res: Resource, live: Mapping[str, Any], failure: str) -> Delete:
    return Delete(res, objects.name(live), objects.uid(live), failure)


def _delete_podgroup(podgroup: Mapping[str, Any], key: str) -> tuple[Step, ...]:
    """``deletePodGroup``: drop the protection finalizer (an update), then delete unless deletion is under way."""
    steps: list[Step] = []
    finalizers = objects.finalizers(podgroup)
    if c.WAS_PODGROUP_PROTECTION_FINALIZER in finalizers:
        body = copy.deepcopy(dict(podgroup))
        body["metadata"]["finalizers"] = [f for f in finalizers if f != c.WAS_PODGROUP_PROTECTION_FINALIZER]
        steps.append(RemoveFinalizer(PODGROUPS, body, f"failed to remove finalizer from PodGroup {key}"))
    if not objects.terminating(podgroup):
        steps.append(_delete(PODGROUPS, podgroup, f"failed to delete PodGroup {key}"))
    return tuple(steps)

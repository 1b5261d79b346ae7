"""Batch schedulers: what KubeRay v1.7.0's ``--batch-scheduler`` plugins add to a RayCluster's Pods, and the extra
objects (Volcano's PodGroup) they create around it.

A plugin is pure, like every builder here: a :class:`~raykube.api.resources.RayCluster` in, objects out.

* :meth:`BatchScheduler.decorate_pod` is KubeRay's ``AddMetadataToChildResource``: labels, annotations and
  ``spec.schedulerName`` on a Pod the Pod builders made (``group`` is ``headgroup`` or the worker group's name). The
  Pod builders call it last, when :class:`~raykube.builders.options.BuildOptions` names a scheduler, so
  ``pods.head_pod``/``pods.worker_pod`` return exactly what is POSTed. The parent may also be a
  :class:`~raykube.api.resources.RayJob`: the RayJob builders decorate the submitter's Pod template (group
  ``submittergroup``) and, with :func:`decorate_metadata` (labels and annotations only), the RayCluster a K8sJobMode
  RayJob creates (group ``""``), as KubeRay's RayJob controller does.
* :meth:`BatchScheduler.objects` is what ``DoBatchSchedulingOnSubmission`` keeps in the cluster: the objects to
  create before any Pod (each with a controller owner reference to the RayCluster, so the garbage collector removes
  them with it), and :meth:`BatchScheduler.updated` says how a live one is brought back in step.
* :attr:`BatchScheduler.kinds` are the types of those objects, so the runtime can watch them (KubeRay ``Owns``) and
  the RBAC rules (``raykube.api.rbac``) can grant them.

One plugin per operator, chosen with ``--batch-scheduler`` (KubeRay v1.5+ applies it to every RayCluster; the
``ray.io/scheduler-name`` label of older KubeRay versions is ignored, as v1.6.1 ignores it). Implemented:

**volcano** — a PodGroup ``ray-<cluster>-pg`` (``scheduling.volcano.sh/v1beta1``) with ``minMember`` = head + the
desired workers (``clamp(replicas, min, max) * numOfHosts`` over groups that are not suspended), or + the minimum
workers when in-tree autoscaling is on; ``minResources`` = the head Pod's resources plus, for each group that is not
suspended, its Pod resources times ``replicas * numOfHosts`` (unset ``replicas``: 0; ``minReplicas * numOfHosts``
with autoscaling, where v1.7.0 also leaves suspended groups out), requests winning over limits per container, as
``status.desiredCPU`` is computed; ``queue`` from the cluster label ``volcano.sh/queue-name``,
``priorityClassName`` from ``ray.io/priority-class-name``, ``networkTopology`` from
``volcano.sh/network-topology-mode`` and ``volcano.sh/network-topology-highest-tier-allowed``; the cluster's
annotations copied onto it; ``status.phase: Pending``. Kept in step afterwards: ``minMember`` and ``minResources``
only (the other fields are set once, at creation). Pods get the annotations ``scheduling.k8s.io/group-name`` (the
PodGroup) and ``volcano.sh/task-spec`` (their group), the cluster's ``volcano.sh/queue-name`` and
``ray.io/priority-class-name`` labels, and ``schedulerName: volcano``. A RayCluster created by a RayJob
(``ray.io/originated-from-crd: RayJob``) gets no PodGroup of its own: its Pods point at ``ray-<rayjob>-pg``, which
the RayJob controller makes (:meth:`Volcano.rayjob_objects`: a PodGroup for the RayJob parent, with the
submitter's resources).

**yunikorn** — no objects. Pods get ``schedulerName: yunikorn`` and the labels ``applicationId`` and ``queue`` from
the cluster's ``yunikorn.apache.org/app-id`` and ``yunikorn.apache.org/queue``. With the cluster label
``ray.io/gang-scheduling-enabled`` (present, whatever its value) they also get ``yunikorn.apache.org/task-group-name``
(their group) and ``yunikorn.apache.org/task-groups``: the cluster's own annotation of that name when it has one (a
RayJob puts it there), else a JSON list with ``headgroup`` (``minMember`` 1) and one entry per worker group
(``minMember`` = ``minReplicas * numOfHosts``), and for a RayJob parent a last one, ``submittergroup`` (``minMember``
1, the submitter template's Pod), each with its Pod's ``minResource``, ``nodeSelector``, ``affinity`` and
``tolerations``, serialised as Go's ``encoding/json`` does (KubeRay's field order, no spaces, ``<>&`` escaped).

**kubernetes-was-v1alpha2** (v1.7.0, gate ``KubernetesWAS``, which selects it and excludes ``--batch-scheduler``) —
Kubernetes' own gang scheduling through ``scheduling.k8s.io/v1alpha2`` Workload and PodGroup objects:
:mod:`raykube.builders.was`.

KubeRay's ``kai-scheduler`` and ``scheduler-plugins`` are not implemented; the operator refuses to start with them
(``raykube.api.config``) rather than let their Pods go to the default scheduler unnoticed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.resources import RayCluster, RayJob
from raykube.builders import groups, names, submitter
from raykube.builders.was import KubernetesWAS
from raykube.golang import gojson
from raykube.golang.errors import GoError
from raykube.golang.quantity import Quantity, QuantityError, format_quantity, parse_quantity
from raykube.golang.strconv import atoi
from raykube.kube.resources import Resource

__all__ = [
    "PLUGINS",
    "BatchScheduler",
    "BatchSchedulingError",
    "Parent",
    "Volcano",
    "YuniKorn",
    "decorate_metadata",
    "decorate_pod",
    "get",
    "go_json",
]


# The object a child is decorated for (KubeRay AddMetadataToChildResource's ``parent``): the RayCluster for its Pods,
# the RayJob for the RayCluster it creates (K8sJobMode) and for its submitter's Pod template.
Parent = RayCluster | RayJob


class BatchSchedulingError(ValueError):
    """The cluster asks for something its scheduler's objects cannot express (the reconcile pass fails with it)."""


class BatchScheduler(Protocol):
    """One ``--batch-scheduler`` plugin. Pure: no I/O, inputs never mutated."""

    name: ClassVar[str]  # the --batch-scheduler value
    kinds: ClassVar[tuple[Resource, ...]]  # the types objects() returns

    def decorate_pod(self, parent: Parent, group: str, pod: Mapping[str, Any]) -> dict[str, Any]:
        """``pod`` (a Pod or a Pod template) with this scheduler's labels, annotations and schedulerName for
        ``parent`` (a new dict)."""
        ...

    def objects(self, cluster: RayCluster) -> list[dict[str, Any]]:
        """The objects to create before the cluster's Pods (none when the scheduler needs none)."""
        ...

    def rayjob_objects(self, rayjob: RayJob) -> list[dict[str, Any]]:
        """The objects to create for a RayJob before its cluster (KubeRay ``DoBatchSchedulingOnSubmission``)."""
        ...

    def rayjob_completion_objects(self, rayjob: RayJob, cluster: RayCluster | None) -> list[dict[str, Any]]:
        """The same objects once the RayJob has ended, sized for what is left of its cluster (``None``: gone)
        (KubeRay ``CleanupOnCompletion``)."""
        ...

    def updated(self, live: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
        """``live`` brought in step with ``desired`` (to PUT back), or None when nothing KubeRay syncs differs."""
        ...


# --------------------------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------------------------


def _labels(parent: Parent) -> Mapping[str, str]:
    labels: Mapping[str, str] = parent.metadata.get("labels") or {}
    return labels


def _annotations(parent: Parent) -> Mapping[str, str]:
    annotations: Mapping[str, str] = parent.metadata.get("annotations") or {}
    return annotations


def _copy_pod(pod: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str], dict[str, str], dict[str, Any]]:
    """A deep copy of ``pod`` and its (created if missing) labels, annotations and spec."""
    new = copy.deepcopy(dict(pod))
    meta = new.setdefault("metadata", {})
    return new, meta.setdefault("labels", {}), meta.setdefault("annotations", {}), new.setdefault("spec", {})


def _tidy(pod: dict[str, Any]) -> dict[str, Any]:
    """Drop the labels/annotations maps :func:`_copy_pod` added when nothing went into them."""
    meta = pod["metadata"]
    for key in ("labels", "annotations"):
        if not meta.get(key):
            meta.pop(key, None)
    return pod


def _copy_label(parent: Parent, source: str, target: dict[str, str], key: str) -> None:
    """KubeRay ``populateLabelsFromObject``: copy a parent label to the child when it is set and not empty."""
    value = _labels(parent).get(source)
    if value:
        target[key] = value


def _resource_map(resources: Mapping[str, Quantity]) -> dict[str, str]:
    """A ``corev1.ResourceList`` as JSON: canonical quantities, keys sorted (Go marshals maps sorted)."""
    return {name: format_quantity(resources[name]) for name in sorted(resources)}


def go_json(value: Any) -> str:
    """Go ``json.Marshal`` of already-ordered data (a struct's field order, maps sorted by the caller): no spaces,
    non-ASCII as is, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped."""
    return gojson.json_marshal(value, sort_keys=False)


def _resources_equal(live: Any, desired: Mapping[str, str]) -> bool:
    """``quotav1.Equals``: the same resource names with equal quantities (by value, not by spelling)."""
    if not isinstance(live, Mapping) or set(live) != set(desired):
        return False
    try:
        return all(parse_quantity(live[name]).value == parse_quantity(desired[name]).value for name in desired)
    except QuantityError:
        return False


# --------------------------------------------------------------------------------------------------------------------
# Volcano
# --------------------------------------------------------------------------------------------------------------------


class Volcano:
    """KubeRay's ``volcano`` plugin (``batchscheduler/volcano``): a PodGroup per RayCluster, Pods pointed at it."""

    name: ClassVar[str] = c.BATCH_SCHEDULER_VOLCANO
    scheduler_name: ClassVar[str] = c.BATCH_SCHEDULER_VOLCANO  # spec.schedulerName of the Pods
    podgroup: ClassVar[Resource] = Resource(
        c.VOLCANO_SCHEDULING_GROUP,
        c.VOLCANO_PODGROUP_API_VERSION.rpartition("/")[2],
        c.KIND_VOLCANO_PODGROUP,
        c.VOLCANO_PODGROUPS_PLURAL,
    )
    kinds: ClassVar[tuple[Resource, ...]] = (podgroup,)

    @staticmethod
    def podgroup_name(parent: Parent) -> str:
        """``ray-<name>-pg``; for a cluster a RayJob created, the RayJob's name (its PodGroup covers the submitter)."""
        labels = _labels(parent)
        name = str(parent.metadata.get("name") or "")
        if labels.get(c.RAY_ORIGINATED_FROM_CRD_LABEL) == c.KIND_RAYJOB:
            name = labels.get(c.RAY_ORIGINATED_FROM_CR_NAME_LABEL) or name
        return c.VOLCANO_PODGROUP_NAME_FORMAT.format(name=name)

    @staticmethod
    def gang(cluster: RayCluster) -> tuple[int, dict[str, Quantity]]:
        """``(minMember, minResources)``: head + desired workers and their resources, or the minimum ones when the
        in-tree autoscaler is on (KubeRay ``calculatePodGroupParams``)."""
        spec = cluster.spec
        if spec is None:
            raise BatchSchedulingError("the RayCluster has no spec")
        return Volcano.gang_of(spec)

    @staticmethod
    def gang_of(spec: RayClusterSpec) -> tuple[int, dict[str, Quantity]]:
        if spec.enable_in_tree_autoscaling is True:
            return groups.int32(groups.total_min_workers(spec) + 1), groups.min_resources(spec)
        return groups.int32(groups.total_desired_workers(spec) + 1), groups.desired_resources(spec)

    def decorate_pod(self, parent: Parent, group: str, pod: Mapping[str, Any]) -> dict[str, Any]:
        new, labels, annotations, spec = _copy_pod(pod)
        _copy_label(parent, c.VOLCANO_QUEUE_NAME_LABEL, labels, c.VOLCANO_QUEUE_NAME_LABEL)
        _copy_label(parent, c.RAY_PRIORITY_CLASS_NAME_LABEL, labels, c.RAY_PRIORITY_CLASS_NAME_LABEL)
        annotations[c.VOLCANO_GROUP_NAME_ANNOTATION] = self.podgroup_name(parent)
        annotations[c.VOLCANO_TASK_SPEC_ANNOTATION] = group
        spec["schedulerName"] = self.scheduler_name
        return _tidy(new)

    def objects(self, cluster: RayCluster) -> list[dict[str, Any]]:
        if _labels(cluster).get(c.RAY_ORIGINATED_FROM_CRD_LABEL) == c.KIND_RAYJOB:
            return []  # the RayJob's PodGroup (KubeRay's RayJob controller) covers this cluster
        return [self.podgroup_object(cluster)]

    def podgroup_object(self, cluster: RayCluster) -> dict[str, Any]:
        """The PodGroup as KubeRay creates it for a RayCluster (``createPodGroup``)."""
        min_member, min_resources = self.gang(cluster)
        return self._podgroup(cluster, c.KIND_RAYCLUSTER, min_member, min_resources)

    def rayjob_objects(self, rayjob: RayJob) -> list[dict[str, Any]]:
        """KubeRay ``handleRayJob``: one PodGroup ``ray-<rayjob>-pg`` for the RayJob's cluster, owned by the RayJob.
        ``minMember`` counts the cluster's Pods only (the submitter waits for the cluster, so a gang that waited
        for the submitter would never start); ``minResources`` adds the submitter's (K8sJobMode: its Pod template,
        SidecarMode: the default submitter container; HTTPMode and InteractiveMode have none)."""
        spec = rayjob.spec
        if spec is None or spec.ray_cluster_spec is None:
            raise BatchSchedulingError(
                f"gang scheduling does not support RayJob {rayjob.metadata.get('namespace', '')}/"
                f"{rayjob.metadata.get('name', '')} referencing an existing RayCluster"
            )
        min_member, resources = self.gang_of(spec.ray_cluster_spec)
        mode = spec.submission_mode or c.SUBMISSION_MODE_K8S_JOB
        extra: dict[str, Quantity] = {}
        try:
            if mode == c.SUBMISSION_MODE_K8S_JOB:
                extra = groups.pod_resources(submitter.submitter_pod_template(spec, spec.ray_cluster_spec))
            elif mode == c.SUBMISSION_MODE_SIDECAR:
                container = submitter.default_submitter_container(spec.ray_cluster_spec)
                extra = groups.pod_resources({"spec": {"containers": [container]}})
        except submitter.SubmitterError as exc:
            raise BatchSchedulingError(str(exc)) from exc
        total = dict(resources)
        for name, quantity in extra.items():
            total[name] = total[name] + quantity if name in total else quantity
        return [self._podgroup(rayjob, c.KIND_RAYJOB, min_member, total)]

    def rayjob_completion_objects(self, rayjob: RayJob, cluster: RayCluster | None) -> list[dict[str, Any]]:
        """KubeRay ``CleanupOnCompletion``: the RayJob's PodGroup resized to what its cluster still holds (workers
        a ``DeleteWorkers`` rule suspended no longer count; a deleted or terminating cluster counts nothing), so
        Volcano releases the reservation. Nothing for a ``clusterSelector`` RayJob or before a cluster is named."""
        spec = rayjob.spec
        status = rayjob.status
        if spec is None or spec.cluster_selector or status is None or not status.ray_cluster_name:
            return []
        min_member, resources = 0, dict[str, Quantity]()
        if cluster is not None and cluster.spec is not None and not cluster.metadata.get("deletionTimestamp"):
            min_member, resources = self.gang_of(cluster.spec)
        return [self._podgroup(rayjob, c.KIND_RAYJOB, min_member, resources)]

    def _podgroup(
        self, owner: Parent, owner_kind: str, min_member: int, min_resources: Mapping[str, Quantity]
    ) -> dict[str, Any]:
        """``createPodGroup``: named for the owner, its annotations copied, queue, priority class and network
        topology from its labels, a controller reference to it, phase Pending."""
        labels = _labels(owner)
        name = self.podgroup_name(owner)
        namespace = str(owner.metadata.get("namespace") or "")
        spec: dict[str, Any] = {"minMember": min_member, "minResources": _resource_map(min_resources)}
        if c.VOLCANO_NETWORK_TOPOLOGY_MODE_LABEL in labels:
            mode = labels[c.VOLCANO_NETWORK_TOPOLOGY_MODE_LABEL]
            topology: dict[str, Any] = {"mode": mode} if mode else {}
            if c.VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL in labels:
                text = labels[c.VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL]
                try:
                    topology["highestTierAllowed"] = atoi(text)
                except GoError as error:
                    raise BatchSchedulingError(
                        f"failed to convert {c.VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL} label to int: "
                        f"{error} for podgroup {name} in namespace {namespace}"
                    ) from None
            spec["networkTopology"] = topology
        if labels.get(c.VOLCANO_QUEUE_NAME_LABEL):
            spec["queue"] = labels[c.VOLCANO_QUEUE_NAME_LABEL]
        if labels.get(c.RAY_PRIORITY_CLASS_NAME_LABEL):
            spec["priorityClassName"] = labels[c.RAY_PRIORITY_CLASS_NAME_LABEL]
        owner_ref = names.owner_reference(
            owner_kind, str(owner.metadata.get("name") or ""), str(owner.metadata.get("uid") or "")
        )
        metadata: dict[str, Any] = {"name": name, "namespace": namespace, "ownerReferences": [owner_ref]}
        if _annotations(owner):
            metadata["annotations"] = dict(_annotations(owner))
        return {
            "apiVersion": self.podgroup.api_version,
            "kind": self.podgroup.kind,
            "metadata": metadata,
            "spec": spec,
            "status": {"phase": c.VOLCANO_PODGROUP_PHASE_PENDING},
        }

    def updated(self, live: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
        """KubeRay ``syncPodGroup``: only ``minMember`` and ``minResources`` are kept in step."""
        live_spec = live.get("spec") or {}
        want = desired.get("spec") or {}
        if live_spec.get("minMember") == want["minMember"] and _resources_equal(
            live_spec.get("minResources"), want["minResources"]
        ):
            return None
        new = copy.deepcopy(dict(live))
        new_spec = new.setdefault("spec", {})
        new_spec["minMember"] = want["minMember"]
        new_spec["minResources"] = dict(want["minResources"])
        return new


# --------------------------------------------------------------------------------------------------------------------
# YuniKorn
# --------------------------------------------------------------------------------------------------------------------


class YuniKorn:
    """KubeRay's ``yunikorn`` plugin (``batchscheduler/yunikorn``): Pod labels, and task groups for gang scheduling."""

    name: ClassVar[str] = c.BATCH_SCHEDULER_YUNIKORN
    scheduler_name: ClassVar[str] = c.BATCH_SCHEDULER_YUNIKORN
    kinds: ClassVar[tuple[Resource, ...]] = ()

    @staticmethod
    def gang_scheduling(parent: Parent) -> bool:
        """KubeRay ``isGangSchedulingEnabled``: the label is present; its value is not looked at ("false" too)."""
        return c.RAY_GANG_SCHEDULING_ENABLED_LABEL in _labels(parent)

    @staticmethod
    def task_groups(parent: Parent) -> list[dict[str, Any]]:
        """KubeRay ``newTaskGroupsFromRayClusterSpec``: the head group, then every worker group in spec order; for a
        RayJob (``newTaskGroupsFromRayJobSpec``) those of its ``rayClusterSpec``, then ``submittergroup`` (one Pod,
        the resources of the submitter template)."""
        spec = parent.spec.ray_cluster_spec if isinstance(parent, RayJob) and parent.spec else parent.spec
        if not isinstance(spec, RayClusterSpec):
            # KubeRay dereferences the nil rayClusterSpec of a clusterSelector RayJob (a panic the controller
            # recovers from); no gang can be formed.
            raise BatchSchedulingError(f"the {type(parent).__name__} has no RayCluster spec")
        entries = [_task_group(c.HEAD_GROUP_NAME, 1, spec.head_group_spec.template)]
        for group in spec.worker_group_specs or []:
            min_member = groups.int32(group.min_replicas * group.num_of_hosts)
            entries.append(_task_group(group.group_name, min_member, group.template))
        if isinstance(parent, RayJob) and parent.spec is not None:
            try:
                template = submitter.submitter_pod_template(parent.spec, spec)
            except submitter.SubmitterError as error:
                raise BatchSchedulingError(str(error)) from None
            entries.append(_task_group(c.SUBMITTER_GROUP_NAME, 1, template))
        return entries

    def task_groups_annotation(self, parent: Parent) -> str:
        """The ``yunikorn.apache.org/task-groups`` value: the parent's own, else computed from its spec."""
        own = _annotations(parent).get(c.YUNIKORN_TASK_GROUPS_ANNOTATION)
        return own or go_json(self.task_groups(parent))

    def decorate_pod(self, parent: Parent, group: str, pod: Mapping[str, Any]) -> dict[str, Any]:
        new, labels, annotations, spec = _copy_pod(pod)
        _copy_label(parent, c.YUNIKORN_APP_ID_LABEL, labels, c.YUNIKORN_POD_APPLICATION_ID_LABEL)
        _copy_label(parent, c.YUNIKORN_QUEUE_LABEL, labels, c.YUNIKORN_POD_QUEUE_LABEL)
        spec["schedulerName"] = self.scheduler_name
        if self.gang_scheduling(parent):
            annotations[c.YUNIKORN_TASK_GROUPS_ANNOTATION] = self.task_groups_annotation(parent)
            if group:
                annotations[c.YUNIKORN_TASK_GROUP_NAME_ANNOTATION] = group
        return _tidy(new)

    def objects(self, cluster: RayCluster) -> list[dict[str, Any]]:
        return []  # YuniKorn forms the gang from the Pods' annotations; nothing to create

    def rayjob_objects(self, rayjob: RayJob) -> list[dict[str, Any]]:
        return []

    def rayjob_completion_objects(self, rayjob: RayJob, cluster: RayCluster | None) -> list[dict[str, Any]]:
        return []

    def updated(self, live: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
        return None


def _task_group(name: str, min_member: int, template: Mapping[str, Any] | None) -> dict[str, Any]:
    """One YuniKorn ``TaskGroup`` in the field order of KubeRay's Go struct (``minResource``, ``nodeSelector``,
    ``affinity``, ``name``, ``tolerations``, ``minMember``), empty optional fields left out (``omitempty``)."""
    pod_spec: Mapping[str, Any] = (template or {}).get("spec") or {}
    entry: dict[str, Any] = {"minResource": _resource_map(groups.pod_resources(template))}
    node_selector = pod_spec.get("nodeSelector")
    if node_selector:
        entry["nodeSelector"] = {key: node_selector[key] for key in sorted(node_selector)}
    if pod_spec.get("affinity") is not None:
        entry["affinity"] = pod_spec["affinity"]
    entry["name"] = name
    if pod_spec.get("tolerations"):
        entry["tolerations"] = [_toleration(t) for t in pod_spec["tolerations"]]
    entry["minMember"] = min_member
    return entry


_TOLERATION_FIELDS = ("key", "operator", "value", "effect", "tolerationSeconds")  # corev1.Toleration field order


def _toleration(toleration: Mapping[str, Any]) -> dict[str, Any]:
    """A toleration with Go's field order; empty strings dropped as ``omitempty`` drops them."""
    ordered = {key: toleration[key] for key in _TOLERATION_FIELDS if toleration.get(key) not in (None, "")}
    ordered.update({key: value for key, value in toleration.items() if key not in _TOLERATION_FIELDS})
    return ordered


# --------------------------------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------------------------------

# KubernetesWAS is chosen by its feature gate, never by --batch-scheduler (raykube.api.config).
PLUGINS: Mapping[str, BatchScheduler] = {plugin.name: plugin for plugin in (Volcano(), YuniKorn(), KubernetesWAS())}


def get(name: str) -> BatchScheduler | None:
    """The plugin called ``name``; None for ``""`` (no batch scheduler). Unknown names raise ``KeyError`` (the
    operator's configuration refuses them before anything is built)."""
    if not name:
        return None
    return PLUGINS[name]


def decorate_pod(name: str, parent: Parent, group: str, pod: dict[str, Any]) -> dict[str, Any]:
    """``pod`` (a Pod or a Pod template) with the metadata of the batch scheduler ``name`` for ``parent`` (unchanged
    when ``name`` is empty)."""
    plugin = get(name)
    return pod if plugin is None else plugin.decorate_pod(parent, group, pod)


def decorate_metadata(name: str, parent: Parent, group: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """KubeRay ``AddMetadataToChildResource`` on a child that is neither a Pod nor a Pod template (the RayCluster a
    K8sJobMode RayJob creates): the plugin's labels and annotations only, since KubeRay sets ``schedulerName`` on
    Pods and Pod templates alone. A new dict; ``obj`` itself when ``name`` is empty."""
    plugin = get(name)
    if plugin is None:
        return dict(obj)
    decorated = plugin.decorate_pod(parent, group, {"metadata": obj.get("metadata") or {}})
    new = copy.deepcopy(dict(obj))
    new["metadata"] = decorated["metadata"]
    return new

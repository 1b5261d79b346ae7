"""The object graph the doctor reasons about, gathered once: every rule is a pure function of a :class:`Snapshot`.

A snapshot is a set of plain dicts per resource type (exactly what ``kubectl get -o json`` shows, minus
``managedFields`` outside RayClusters and minus every value of a Secret or ConfigMap, of which only the keys are
kept), plus what could not be read (:class:`~raykube.doctor.model.NotChecked`) and the moment it was taken. It
comes from the API server (:mod:`raykube.doctor.gather`) or from a directory of YAML (:mod:`raykube.doctor.dump`);
the rules cannot tell the difference.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Final

from raykube.api import addresses as ray
from raykube.api import constants as c
from raykube.doctor.model import NotChecked
from raykube.kube import objects
from raykube.kube import resources as r
from raykube.kube.resources import Resource

Obj = dict[str, Any]

# Kubernetes discovery.k8s.io/v1: the label that ties an EndpointSlice to its Service.
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
# Kubernetes storage.k8s.io: the annotation that marks the default StorageClass.
DEFAULT_STORAGE_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
# kubectl apply: keeps the whole applied object, Secret data included, so it is dropped from Secrets.
LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
# The CRD the doctor reads (KubeRay config/crd/bases/ray.io_rayclusters.yaml).
RAYCLUSTER_CRD_NAME: Final = f"rayclusters.{c.API_GROUP}"


# The resource types the doctor reads: the one table (raykube.kube.resources, and raykube.api.resources for ray.io),
# under the names the rules use.
RAYCLUSTERS: Final = ray.RAYCLUSTERS
RAYJOBS: Final = ray.RAYJOBS
RAYSERVICES: Final = ray.RAYSERVICES
RAYCRONJOBS: Final = ray.RAYCRONJOBS
JOBS: Final = r.JOBS
PODS: Final = r.PODS
EVENTS: Final = r.CORE_EVENTS
SERVICES: Final = r.SERVICES
ENDPOINTSLICES: Final = r.ENDPOINT_SLICES
CONFIGMAPS: Final = r.CONFIGMAPS
SECRETS: Final = r.SECRETS
PVCS: Final = r.PERSISTENT_VOLUME_CLAIMS
HPAS: Final = r.HORIZONTAL_POD_AUTOSCALERS
QUOTAS: Final = r.RESOURCE_QUOTAS
LIMITRANGES: Final = r.LIMIT_RANGES
INGRESSES: Final = r.INGRESSES
NETWORKPOLICIES: Final = r.NETWORK_POLICIES
DEPLOYMENTS: Final = r.DEPLOYMENTS
NODES: Final = r.NODES
STORAGECLASSES: Final = r.STORAGE_CLASSES
CRDS: Final = r.CRDS
ACCESS_REVIEWS: Final = r.SUBJECT_ACCESS_REVIEWS
GATEWAYS: Final = r.GATEWAYS
HTTPROUTES: Final = r.HTTPROUTES
# The operator never reads GatewayClasses (its Gateway only names one): the doctor's own type.
GATEWAYCLASSES: Final = Resource(
    c.GATEWAY_API_GROUP, "v1", "GatewayClass", "gatewayclasses", namespaced=False, spec_status=True
)

# Namespaced types listed once per namespace in scope (the operator's Deployments are looked up separately).
NAMESPACED_TYPES: Final = (
    RAYCLUSTERS,
    RAYJOBS,
    RAYSERVICES,
    RAYCRONJOBS,
    JOBS,
    PODS,
    EVENTS,
    SERVICES,
    ENDPOINTSLICES,
    CONFIGMAPS,
    SECRETS,
    PVCS,
    HPAS,
    QUOTAS,
    LIMITRANGES,
    INGRESSES,
    NETWORKPOLICIES,
    GATEWAYS,
    HTTPROUTES,
)
CLUSTER_TYPES: Final = (NODES, STORAGECLASSES, GATEWAYCLASSES)
ALL_TYPES: Final = (*NAMESPACED_TYPES, DEPLOYMENTS, *CLUSTER_TYPES, CRDS, ACCESS_REVIEWS)
BY_KEY: Final[Mapping[str, Resource]] = {t.plural: t for t in ALL_TYPES}
# The custom resources that make RayClusters, each a possible target (``rayjob/NAME``, ``rayservice/NAME``,
# ``raycronjob/NAME``: a RayCronJob's are the RayJobs it made).
WORKLOAD_TYPES: Final = (RAYJOBS, RAYSERVICES, RAYCRONJOBS)
# Types read when their CRD may be missing (an older KubeRay's, or none): a 404 reads as "none of them".
OPTIONAL_CRD_TYPES: Final = frozenset({RAYCLUSTERS.plural, RAYJOBS.plural, RAYSERVICES.plural, RAYCRONJOBS.plural})
# How many of a RayCronJob's RayJobs (the newest) a ``raycronjob/NAME`` run diagnoses.
CRON_RAYJOBS: Final = 3
# Types of an API the API server may not serve at all (the Gateway API's): a 404 leaves them unread, quietly (the rules
# that need them say so), and a dump without them is not incomplete.
OPTIONAL_API_TYPES: Final = frozenset({GATEWAYS.plural, HTTPROUTES.plural, GATEWAYCLASSES.plural})
# Types whose absence stops the core rules (exit code 3).
CORE_TYPES: Final = frozenset({RAYCLUSTERS.plural, PODS.plural})


def type_of(obj: Mapping[str, Any]) -> Resource | None:
    """The resource type of an object by its apiVersion group and kind (any version of the group)."""
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    kind = obj.get("kind")
    for candidate in ALL_TYPES:
        if candidate.kind == kind and candidate.group == group:
            return candidate
    return None


def _keys_only(values: object) -> dict[str, str] | None:
    if not isinstance(values, Mapping):
        return None
    return dict.fromkeys(sorted(str(k) for k in values), "")


def sanitize(resource: Resource, obj: Mapping[str, Any]) -> Obj:
    """The object as the doctor keeps it: apiVersion/kind set, no managedFields (except on RayClusters, whose field
    managers tell who last changed the replicas), Secrets and ConfigMaps reduced to their keys."""
    out: Obj = dict(obj)
    out.setdefault("apiVersion", resource.api_version)
    out.setdefault("kind", resource.kind)
    meta = dict(out.get("metadata") or {})
    if resource is not RAYCLUSTERS:
        meta.pop("managedFields", None)
    if resource in (SECRETS, CONFIGMAPS):
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED_ANNOTATION}
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
        for key in ("data", "stringData", "binaryData"):
            if key in out:
                kept = _keys_only(out[key])
                if kept is None:
                    out.pop(key)
                else:
                    out[key] = kept
    out["metadata"] = meta
    return out


def key_of(obj: Mapping[str, Any]) -> str:
    """``<namespace>/<name>`` (or ``<name>`` for a cluster-scoped object)."""
    namespace = objects.namespace(obj)
    return f"{namespace}/{objects.name(obj)}" if namespace else objects.name(obj)


@dataclass
class Snapshot:
    """Everything one doctor run looks at. ``gathered`` names the types that were read (possibly empty);
    a type not in it was not read at all, and ``not_checked`` says why."""

    objects: dict[str, list[Obj]]
    gathered: frozenset[str]
    not_checked: list[NotChecked]
    now: datetime
    source: str  # "live" | "dump"
    namespaces: tuple[str, ...] | None = None  # None: every namespace
    targets: tuple[tuple[str, str], ...] | None = None  # (namespace, name) asked for; None: every RayCluster
    # (kind, namespace, name) of the RayJobs and RayServices asked for; None: every one in scope
    workloads: tuple[tuple[str, str, str], ...] | None = None
    # What was read inside Ray Pods (``--exec``), by Pod key; see :mod:`raykube.doctor.facts.inside`.
    inside: dict[str, Any] = field(default_factory=dict)
    # How the in-Pod checks went ("ran in 3 Pods ...", "off: ..."); empty when they were not considered.
    inside_note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def has(self, resource: Resource) -> bool:
        return resource.plural in self.gathered

    def all(self, resource: Resource) -> list[Obj]:
        return self.objects.get(resource.plural, [])

    def in_namespace(self, resource: Resource, namespace: str) -> list[Obj]:
        return self._by_namespace(resource.plural).get(namespace, [])

    def get(self, resource: Resource, namespace: str | None, name: str) -> Obj | None:
        return self._by_name(resource.plural).get((namespace or "", name))

    def _by_namespace(self, key: str) -> dict[str, list[Obj]]:
        cache: dict[str, dict[str, list[Obj]]] = self.__dict__.setdefault("_ns_index", {})
        if key not in cache:
            index: dict[str, list[Obj]] = defaultdict(list)
            for obj in self.objects.get(key, []):
                index[objects.namespace(obj)].append(obj)
            cache[key] = dict(index)
        return cache[key]

    def _by_name(self, key: str) -> dict[tuple[str, str], Obj]:
        cache: dict[str, dict[tuple[str, str], Obj]] = self.__dict__.setdefault("_name_index", {})
        if key not in cache:
            cache[key] = {(objects.namespace(o), objects.name(o)): o for o in self.objects.get(key, [])}
        return cache[key]

    # --- indexes the rules share ----------------------------------------------------------------------------------

    @cached_property
    def rayclusters(self) -> list[Obj]:
        """The RayClusters to diagnose: those asked for, and those of the RayJobs and RayServices asked for."""
        clusters = self.all(RAYCLUSTERS)
        if self.targets is not None:
            wanted = set(self.targets)
            for workload in (*self.rayjobs, *self.rayservices):
                wanted |= {(objects.namespace(workload), name) for name in workload_cluster_names(workload, clusters)}
            clusters = [o for o in clusters if (objects.namespace(o), objects.name(o)) in wanted]
        return sorted(clusters, key=lambda o: (objects.namespace(o), objects.name(o)))

    def _workloads(self, resource: Resource) -> list[Obj]:
        found = self.all(resource)
        if self.workloads is not None:
            wanted = {(ns, name) for kind, ns, name in self.workloads if kind == resource.kind}
            found = [o for o in found if (objects.namespace(o), objects.name(o)) in wanted]
        return sorted(found, key=lambda o: (objects.namespace(o), objects.name(o)))

    @cached_property
    def rayjobs(self) -> list[Obj]:
        """The RayJobs asked for, and the newest :data:`CRON_RAYJOBS` of each RayCronJob asked for."""
        found = self._workloads(RAYJOBS)
        if self.workloads is None:
            return found
        crons = {(objects.namespace(o), objects.name(o)) for o in self.raycronjobs}
        made: dict[tuple[str, str], list[Obj]] = defaultdict(list)
        for job in self.all(RAYJOBS):
            cron = objects.labels(job).get(c.RAY_CRONJOB_NAME_LABEL)
            if cron and (objects.namespace(job), cron) in crons:
                made[(objects.namespace(job), cron)].append(job)
        seen = {(objects.namespace(o), objects.name(o)) for o in found}
        for jobs in made.values():
            jobs.sort(key=lambda o: str(objects.meta(o).get("creationTimestamp") or ""), reverse=True)
            found += [j for j in jobs[:CRON_RAYJOBS] if (objects.namespace(j), objects.name(j)) not in seen]
        return sorted(found, key=lambda o: (objects.namespace(o), objects.name(o)))

    @cached_property
    def raycronjobs(self) -> list[Obj]:
        return self._workloads(RAYCRONJOBS)

    @cached_property
    def rayservices(self) -> list[Obj]:
        return self._workloads(RAYSERVICES)

    @cached_property
    def ray_pods(self) -> dict[tuple[str, str], list[Obj]]:
        """Pods by (namespace, ``ray.io/cluster`` label)."""
        index: dict[tuple[str, str], list[Obj]] = defaultdict(list)
        for pod in self.all(PODS):
            cluster = objects.labels(pod).get(c.RAY_CLUSTER_LABEL)
            if cluster:
                index[(objects.namespace(pod), cluster)].append(pod)
        for pods in index.values():
            pods.sort(key=objects.name)
        return dict(index)

    @cached_property
    def _events_by_uid(self) -> dict[str, list[Obj]]:
        index: dict[str, list[Obj]] = defaultdict(list)
        for event in self.all(EVENTS):
            uid = (event.get("involvedObject") or event.get("regarding") or {}).get("uid")
            if uid:
                index[str(uid)].append(event)
        return dict(index)

    @cached_property
    def _events_by_name(self) -> dict[tuple[str, str, str], list[Obj]]:
        index: dict[tuple[str, str, str], list[Obj]] = defaultdict(list)
        for event in self.all(EVENTS):
            involved = event.get("involvedObject") or event.get("regarding") or {}
            key = (str(involved.get("kind") or ""), str(involved.get("namespace") or ""), str(involved.get("name")))
            index[key].append(event)
        return dict(index)

    def events_for(self, obj: Mapping[str, Any]) -> list[Obj]:
        """Events whose involved object is ``obj``: by UID, else by kind, namespace and name (events written without
        a UID, or by tools that do not know it)."""
        found: dict[int, Obj] = {}
        uid = objects.meta(obj).get("uid")
        if uid:
            for event in self._events_by_uid.get(str(uid), []):
                found[id(event)] = event
        by_name = (str(obj.get("kind") or ""), objects.namespace(obj), objects.name(obj))
        for event in self._events_by_name.get(by_name, []):
            involved_uid = (event.get("involvedObject") or event.get("regarding") or {}).get("uid")
            if not uid or not involved_uid or involved_uid == uid:
                found[id(event)] = event
        return list(found.values())

    def endpointslices_for(self, namespace: str, service: str) -> list[Obj]:
        return [
            s
            for s in self.in_namespace(ENDPOINTSLICES, namespace)
            if objects.labels(s).get(SERVICE_NAME_LABEL) == service
        ]

    @cached_property
    def default_storage_class(self) -> Obj | None:
        for sc in self.all(STORAGECLASSES):
            if (objects.meta(sc).get("annotations") or {}).get(DEFAULT_STORAGE_CLASS_ANNOTATION) == "true":
                return sc
        return None

    def pods_mounting(self, namespace: str, claim: str) -> list[Obj]:
        return [
            pod
            for pod in self.in_namespace(PODS, namespace)
            if any(
                ((v.get("persistentVolumeClaim") or {}).get("claimName")) == claim
                for v in (pod.get("spec") or {}).get("volumes") or []
            )
        ]


def workload_cluster_names(workload: Mapping[str, Any], clusters: Iterable[Mapping[str, Any]] = ()) -> list[str]:
    """The RayClusters a RayJob or RayService runs on: a RayJob's ``status.rayClusterName`` (or the cluster its
    ``clusterSelector`` names), a RayService's active and pending clusters and any other it made that still exists
    (labelled ``ray.io/originated-from-cr-name``/``-crd``, such as an old cluster awaiting its deletion delay)."""
    status = workload.get("status") or {}
    spec = workload.get("spec") or {}
    names: list[str] = []
    if workload.get("kind") == c.KIND_RAYJOB:
        names += [str(status.get("rayClusterName") or ""), str((spec.get("clusterSelector") or {}).get(
            c.RAY_CLUSTER_LABEL) or "")]  # fmt: skip
    else:
        for key in ("activeServiceStatus", "pendingServiceStatus"):
            names.append(str((status.get(key) or {}).get("rayClusterName") or ""))
        for cluster in clusters:
            labels = objects.labels(cluster)
            if (
                objects.namespace(cluster) == objects.namespace(workload)
                and labels.get(c.RAY_ORIGINATED_FROM_CRD_LABEL) == c.KIND_RAYSERVICE
                and labels.get(c.RAY_ORIGINATED_FROM_CR_NAME_LABEL) == objects.name(workload)
            ):
                names.append(objects.name(cluster))
    return list(dict.fromkeys(n for n in names if n))


def build(
    by_type: Mapping[str, Iterable[Mapping[str, Any]]],
    *,
    gathered: Iterable[str],
    not_checked: Iterable[NotChecked],
    now: datetime,
    source: str,
    namespaces: tuple[str, ...] | None = None,
    targets: tuple[tuple[str, str], ...] | None = None,
    workloads: tuple[tuple[str, str, str], ...] | None = None,
) -> Snapshot:
    """A snapshot from raw objects per type key: sanitized, de-duplicated by UID (or namespace/name), sorted."""
    kept: dict[str, list[Obj]] = {}
    for key, items in by_type.items():
        resource = BY_KEY[key]
        seen: dict[str, Obj] = {}
        for item in items:
            obj = sanitize(resource, item)
            identity = str(objects.meta(obj).get("uid") or key_of(obj) or id(obj))
            seen[identity] = obj
        kept[key] = sorted(seen.values(), key=lambda o: (objects.namespace(o), objects.name(o)))
    return Snapshot(
        objects=kept,
        gathered=frozenset(gathered),
        not_checked=list(not_checked),
        now=now,
        source=source,
        namespaces=namespaces,
        targets=targets,
        workloads=workloads,
    )

"""One RayCluster as the rules see it: :class:`ClusterView` with its parsed spec, head and worker Pods per group
(:class:`GroupView`), the desired worker counts (KubeRay's ``utils.GetWorkerGroupDesiredReplicas``, via
:mod:`raykube.builders.groups`), its head Service (KubeRay's ``utils.GenerateHeadServiceName`` and
``common.RayClusterHeadServiceListOptions``, via :mod:`raykube.builders.names` and :mod:`raykube.builders.services`)
and what the operator did."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

from pydantic import ValidationError

from raykube.api import constants as c
from raykube.api.raycluster import WorkerGroupSpec
from raykube.api.resources import RayCluster
from raykube.builders import command, names
from raykube.builders import groups as build_groups
from raykube.builders import services as build_services
from raykube.doctor import snapshot as s
from raykube.doctor.facts.objects import condition_true, terminating
from raykube.doctor.facts.operators import operators
from raykube.doctor.facts.pods import group_of, is_ready, node_type, ray_container
from raykube.doctor.facts.times import seconds_since
from raykube.doctor.model import ObjectRef, OperatorInfo
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects


@dataclass
class GroupView:
    name: str
    index: int
    spec: Mapping[str, Any]
    model: WorkerGroupSpec | None
    desired: int | None  # KubeRay GetWorkerGroupDesiredReplicas; None when the group does not parse
    pods: list[Obj]

    @property
    def template(self) -> Mapping[str, Any]:
        value: Mapping[str, Any] = self.spec.get("template") or {}
        return value

    @property
    def path(self) -> str:
        return f"spec.workerGroupSpecs[{self.index}]"

    @property
    def live_pods(self) -> list[Obj]:
        return [p for p in self.pods if not terminating(p)]

    @property
    def ready_pods(self) -> list[Obj]:
        return [p for p in self.live_pods if is_ready(p)]


@dataclass
class ClusterView:
    obj: Obj
    snap: Snapshot
    model: RayCluster | None
    groups: list[GroupView]
    pods: list[Obj]
    ops: list[OperatorInfo] = field(default_factory=list)

    @property
    def name(self) -> str:
        return objects.name(self.obj)

    @property
    def namespace(self) -> str:
        return objects.namespace(self.obj)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(c.KIND_RAYCLUSTER, self.name, self.namespace)

    @property
    def spec(self) -> Mapping[str, Any]:
        value: Mapping[str, Any] = self.obj.get("spec") or {}
        return value

    @property
    def status(self) -> Mapping[str, Any]:
        value: Mapping[str, Any] = self.obj.get("status") or {}
        return value

    @property
    def head_spec(self) -> Mapping[str, Any]:
        value: Mapping[str, Any] = self.spec.get("headGroupSpec") or {}
        return value

    @property
    def head_template(self) -> Mapping[str, Any]:
        value: Mapping[str, Any] = self.head_spec.get("template") or {}
        return value

    @property
    def head_pods(self) -> list[Obj]:
        return [p for p in self.pods if node_type(p) == c.NODE_TYPE_HEAD and not terminating(p)]

    @property
    def head(self) -> Obj | None:
        heads = self.head_pods
        return heads[0] if heads else None

    def start_port(self, param: str, default: int) -> int:
        """A port of the head's ``ray start`` (``rayStartParams``), else KubeRay's default."""
        value = (self.head_spec.get("rayStartParams") or {}).get(param)
        try:
            return int(value) if value is not None else default
        except (TypeError, ValueError):
            return default

    @property
    def gcs_port(self) -> int:
        return self.start_port("port", c.DEFAULT_GCS_SERVER_PORT)

    @property
    def dashboard_port(self) -> int:
        return self.start_port("dashboard-port", c.DEFAULT_DASHBOARD_PORT)

    @property
    def client_port(self) -> int:
        return self.start_port("ray-client-server-port", c.DEFAULT_CLIENT_PORT)

    @property
    def age_seconds(self) -> float | None:
        return seconds_since(objects.meta(self.obj).get("creationTimestamp"), self.snap.now)

    @property
    def suspended(self) -> bool:
        return bool(self.spec.get("suspend")) or bool(condition_true(self.obj, c.CONDITION_RAYCLUSTER_SUSPENDED))

    @property
    def managed_elsewhere(self) -> bool:
        managed_by = self.spec.get("managedBy")
        return bool(managed_by) and managed_by != c.MANAGED_BY_KUBERAY

    @property
    def deleting(self) -> bool:
        return terminating(self.obj)

    @property
    def generation(self) -> int:
        return int(objects.meta(self.obj).get("generation") or 1)

    @property
    def observed_generation(self) -> int | None:
        value = self.status.get("observedGeneration")
        return int(value) if value is not None else None

    @cached_property
    def events(self) -> list[Obj]:
        return self.snap.events_for(self.obj)

    @property
    def operator_events(self) -> list[Obj]:
        return [
            e
            for e in self.events
            if (e.get("reportingComponent") or e.get("reportingController") or (e.get("source") or {}).get("component"))
            == c.RAYCLUSTER_CONTROLLER_NAME
        ]

    @property
    def reconciled(self) -> bool:
        """The operator wrote a status for this generation (or, for operators that write no observedGeneration, any
        status at all)."""
        observed = self.observed_generation
        if observed is not None:
            return observed >= self.generation
        return bool(self.status)

    @property
    def operator_active(self) -> bool:
        """Some operator acts on this RayCluster: a status, its events, or Pods it owns."""
        return self.reconciled or bool(self.operator_events) or any(_owned_by(p, self.obj) for p in self.pods)

    @property
    def head_service_name(self) -> str:
        return names.head_service_name(self.name, self.head_spec.get("headService"))

    @cached_property
    def head_service(self) -> Obj | None:
        """The Service KubeRay would find: by name, else by the labels KubeRay lists head Services by."""
        found = self.snap.get(s.SERVICES, self.namespace, self.head_service_name)
        if found is not None:
            return found
        wanted = self.head_service_selector
        for service in self.snap.in_namespace(s.SERVICES, self.namespace):
            labels = objects.labels(service)
            if all(labels.get(k) == v for k, v in wanted.items()):
                return service
        return None

    @property
    def head_service_selector(self) -> dict[str, str]:
        if self.model is not None:
            return build_services.head_service_selector(self.model)
        return {
            c.RAY_CLUSTER_LABEL: self.name,
            c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD,
            c.RAY_ID_LABEL: names.head_identifier(self.name),
        }

    @property
    def desired_workers(self) -> int:
        return sum(g.desired or 0 for g in self.groups)

    @property
    def autoscaling(self) -> bool:
        return bool(self.spec.get("enableInTreeAutoscaling"))

    def templates(self) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
        """(group name, spec path, pod template) of the head and every worker group."""
        yield c.HEAD_GROUP_NAME, "spec.headGroupSpec.template", self.head_template
        for group in self.groups:
            yield group.name, f"{group.path}.template", group.template

    def pods_of_group(self, group: str) -> list[Obj]:
        if group == c.HEAD_GROUP_NAME:
            return self.head_pods
        return [p for g in self.groups if g.name == group for p in g.live_pods]


def _owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = objects.meta(owner).get("uid")
    return bool(uid) and any(o.get("uid") == uid for o in objects.meta(obj).get("ownerReferences") or [])


def _parse_cluster(obj: Mapping[str, Any]) -> RayCluster | None:
    try:
        return RayCluster.model_validate(obj)
    except (ValidationError, ValueError, TypeError):
        return None


def cluster_view(snap: Snapshot, obj: Obj, ops: list[OperatorInfo] | None = None) -> ClusterView:
    namespace, name = objects.namespace(obj), objects.name(obj)
    pods = list(snap.ray_pods.get((namespace, name), []))
    model = _parse_cluster(obj)
    groups: list[GroupView] = []
    for index, spec in enumerate((obj.get("spec") or {}).get("workerGroupSpecs") or []):
        if not isinstance(spec, Mapping):
            continue
        group_name = str(spec.get("groupName") or f"#{index}")
        try:
            group_model: WorkerGroupSpec | None = WorkerGroupSpec.model_validate(spec)
        except (ValidationError, ValueError, TypeError):
            group_model = None
        desired = build_groups.desired_worker_replicas(group_model) if group_model is not None else None
        members = [p for p in pods if node_type(p) == c.NODE_TYPE_WORKER and group_of(p) == group_name]
        groups.append(GroupView(group_name, index, spec, group_model, desired, members))
    view = ClusterView(obj=obj, snap=snap, model=model, groups=groups, pods=pods)
    view.ops = [o for o in (ops if ops is not None else operators(snap)) if o.watches(namespace)]
    return view


def cluster_views(snap: Snapshot) -> list[ClusterView]:
    cached: list[ClusterView] | None = snap.extra.get("cluster_views")
    if cached is None:
        ops = operators(snap)
        cached = [cluster_view(snap, obj, ops) for obj in snap.rayclusters]
        snap.extra["cluster_views"] = cached
    return cached


_QUOTES: Final = "'\" "
_PARAM_RESOURCES: Final = (("num-cpus", "CPU"), ("num-gpus", "GPU"), ("memory", "memory"))


def ray_resources(group: Mapping[str, Any], *, head: bool) -> dict[str, float]:
    """The logical resources one Pod of ``group`` (a worker group, or the head group) registers with Ray, as KubeRay
    writes them into ``ray start``: rayStartParams (``num-cpus``, ``num-gpus``, ``memory``, ``resources``), the
    group's ``resources``, else the Ray container's limits (for CPU its request when there is no limit). A resource
    missing from the answer is one Ray detects itself when it starts (CPU with neither: the node's cores)."""
    params = {str(k): str(v) for k, v in (group.get("rayStartParams") or {}).items()}
    command.update_params_from_group_resources(params, group.get("resources"))
    spec = (group.get("template") or {}).get("spec") or {}
    command.generate_ray_start_command(params, head=head, resources=ray_container(spec).get("resources") or {})
    offer: dict[str, float] = {}
    for param, name in _PARAM_RESOURCES:
        if param in params:
            with contextlib.suppress(ValueError):
                offer[name] = float(params[param].strip(_QUOTES))
    with contextlib.suppress(ValueError, AttributeError):
        # As the shell hands it to Ray: KubeRay's samples write '"{\"TPU\": 4}"' (escaped quotes inside quotes).
        custom = json.loads(params.get("resources", "{}").strip(_QUOTES).replace('\\"', '"') or "{}")
        offer.update({str(k): float(v) for k, v in custom.items() if isinstance(v, int | float)})
    return offer

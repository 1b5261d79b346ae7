"""Facts the rules share, derived from a :class:`~raykube.doctor.snapshot.Snapshot` without I/O.

* Pod readers: phase, readiness, container states, requests, what a Pod references (ConfigMaps, Secrets, PVCs).
* Event readers: count and last time of an event whichever API wrote it (core/v1 or events.k8s.io/v1).
* :class:`ClusterView`: one RayCluster with its parsed spec, its head and worker Pods per group, the desired worker
  counts (KubeRay's own arithmetic from :mod:`raykube.builders.groups`), its head Service and what the operator did.
* :func:`operators`: the operator Deployments (raykube's chart or KubeRay's), their readiness and watched namespaces.
* :func:`access`: the results of the SubjectAccessReviews made for the operator's ServiceAccount.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Final

from pydantic import ValidationError

from raykube.api import constants as c
from raykube.api.raycluster import WorkerGroupSpec
from raykube.api.resources import RayCluster
from raykube.builders import groups as build_groups
from raykube.builders import names
from raykube.builders import services as build_services
from raykube.builders.quantity import Quantity, QuantityError, parse_quantity
from raykube.builders.status import is_running_and_ready
from raykube.doctor import snapshot as s
from raykube.doctor.model import Evidence, ObjectRef, OperatorInfo
from raykube.doctor.snapshot import Obj, Snapshot

# Kubernetes core/v1 Pod conditions and phases the rules read.
POD_SCHEDULED: Final = "PodScheduled"
POD_INITIALIZED: Final = "Initialized"
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULING_GATED: Final = "SchedulingGated"
PHASE_PENDING: Final = "Pending"

_TRUE = "True"
# Kubernetes recommended label: the component of an application (KubeRay's operator Pods carry kuberay-operator).
COMPONENT_LABEL: Final = "app.kubernetes.io/component"


# --------------------------------------------------------------------------------------------------------------------
# Time
# --------------------------------------------------------------------------------------------------------------------


def parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_since(value: object, now: datetime) -> float | None:
    moment = parse_time(value)
    return None if moment is None else (now - moment).total_seconds()


def human_age(seconds: float | None) -> str | None:
    """kubectl's short age: 45s, 3m, 2h, 5d."""
    if seconds is None:
        return None
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# --------------------------------------------------------------------------------------------------------------------
# Objects and references
# --------------------------------------------------------------------------------------------------------------------


def ref(obj: Mapping[str, Any], kind: str | None = None) -> ObjectRef:
    return ObjectRef(kind or str(obj.get("kind") or ""), s.name_of(obj), s.namespace_of(obj) or None)


def conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(cond.get("type")): cond for cond in (obj.get("status") or {}).get("conditions") or []}


def condition_true(obj: Mapping[str, Any], type_: str) -> bool | None:
    cond = conditions(obj).get(type_)
    return None if cond is None else cond.get("status") == _TRUE


# --------------------------------------------------------------------------------------------------------------------
# Pods
# --------------------------------------------------------------------------------------------------------------------


def phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or PHASE_PENDING)


def terminating(obj: Mapping[str, Any]) -> bool:
    return s.meta(obj).get("deletionTimestamp") is not None


def is_ready(pod: Mapping[str, Any]) -> bool:
    return is_running_and_ready(pod)


def node_type(pod: Mapping[str, Any]) -> str:
    return str(s.labels_of(pod).get(c.RAY_NODE_TYPE_LABEL) or "")


def group_of(pod: Mapping[str, Any]) -> str:
    return str(s.labels_of(pod).get(c.RAY_NODE_GROUP_LABEL) or "")


def pod_spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The Pod spec of a Pod or of a Pod template."""
    spec: Mapping[str, Any] = obj.get("spec") or {}
    return spec


@dataclass(frozen=True)
class ContainerState:
    name: str
    init: bool
    ready: bool
    restarts: int
    state: str  # waiting | running | terminated | unknown
    reason: str
    message: str
    exit_code: int | None
    last_reason: str
    last_exit_code: int | None
    last_message: str
    path: str  # status.containerStatuses[name]


def container_states(pod: Mapping[str, Any]) -> list[ContainerState]:
    status = pod.get("status") or {}
    out: list[ContainerState] = []
    for field_name, init in (("initContainerStatuses", True), ("containerStatuses", False)):
        for item in status.get(field_name) or []:
            state = item.get("state") or {}
            kind, detail = next(((k, v) for k, v in state.items() if isinstance(v, Mapping)), ("unknown", {}))
            last = ((item.get("lastState") or {}).get("terminated")) or {}
            out.append(
                ContainerState(
                    name=str(item.get("name") or ""),
                    init=init,
                    ready=bool(item.get("ready")),
                    restarts=int(item.get("restartCount") or 0),
                    state=kind,
                    reason=str(detail.get("reason") or ""),
                    message=str(detail.get("message") or ""),
                    exit_code=detail.get("exitCode"),
                    last_reason=str(last.get("reason") or ""),
                    last_exit_code=last.get("exitCode"),
                    last_message=str(last.get("message") or ""),
                    path=f"status.{field_name}[{item.get('name')}]",
                )
            )
    return out


def containers(spec: Mapping[str, Any], *, init: bool = True) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, container) of a Pod spec's init containers then containers."""
    fields = ("initContainers", "containers") if init else ("containers",)
    for field_name in fields:
        for index, container in enumerate(spec.get(field_name) or []):
            yield f"spec.{field_name}[{index}]", container or {}


def ray_container(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    items = spec.get("containers") or []
    return items[c.RAY_CONTAINER_INDEX] if items else {}


def quantity(value: object) -> Quantity | None:
    if value is None or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Quantity]:
    """What the scheduler reserves for a Pod: Σ containers' requests (a limit stands in for a missing request), and
    each init container's when larger (``max(Σ containers, max init)`` per resource)."""
    total: dict[str, Quantity] = {}
    for _, container in containers(spec, init=False):
        for name, amount in container_requests(container).items():
            total[name] = total[name] + amount if name in total else amount
    for _, container in ((p, ct) for p, ct in containers(spec) if ".initContainers[" in p):
        for name, amount in container_requests(container).items():
            if name not in total or amount.value > total[name].value:
                total[name] = amount
    return total


def container_requests(container: Mapping[str, Any]) -> dict[str, Quantity]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    out: dict[str, Quantity] = {}
    for name, value in merged.items():
        amount = quantity(value)
        if amount is not None:
            out[str(name)] = amount
    return out


def claim_names(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(volume name, claim name) of every PVC volume of a Pod spec."""
    out = []
    for volume in spec.get("volumes") or []:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim:
            out.append((str(volume.get("name") or ""), str(claim)))
    return out


@dataclass(frozen=True)
class ConfigRef:
    """A reference from a Pod spec to a ConfigMap or Secret (and maybe one key of it)."""

    kind: str  # ConfigMap | Secret
    name: str
    key: str | None
    optional: bool
    path: str  # spec.containers[0].envFrom[1].secretRef


def config_refs(spec: Mapping[str, Any]) -> list[ConfigRef]:  # noqa: PLR0912 - one branch per kind of reference
    """Every ConfigMap and Secret a Pod spec needs: env valueFrom, envFrom, volumes (configMap, secret, projected)
    and imagePullSecrets (those are optional to the kubelet, which only warns)."""
    out: list[ConfigRef] = []
    for path, container in containers(spec):
        for index, env in enumerate(container.get("env") or []):
            source = env.get("valueFrom") or {}
            for field_name, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                selector = source.get(field_name)
                if isinstance(selector, Mapping) and selector.get("name"):
                    out.append(
                        ConfigRef(
                            kind,
                            str(selector["name"]),
                            str(selector.get("key")) if selector.get("key") is not None else None,
                            bool(selector.get("optional")),
                            f"{path}.env[{index}].valueFrom.{field_name}",
                        )
                    )
        for index, env_from in enumerate(container.get("envFrom") or []):
            for field_name, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                selector = env_from.get(field_name)
                if isinstance(selector, Mapping) and selector.get("name"):
                    out.append(
                        ConfigRef(
                            kind,
                            str(selector["name"]),
                            None,
                            bool(selector.get("optional")),
                            f"{path}.envFrom[{index}].{field_name}",
                        )
                    )
    for index, volume in enumerate(spec.get("volumes") or []):
        base = f"spec.volumes[{index}]"
        config_map = volume.get("configMap")
        if isinstance(config_map, Mapping) and config_map.get("name"):
            out.extend(_volume_refs("ConfigMap", config_map, str(config_map["name"]), f"{base}.configMap"))
        secret = volume.get("secret")
        if isinstance(secret, Mapping) and secret.get("secretName"):
            out.extend(_volume_refs("Secret", secret, str(secret["secretName"]), f"{base}.secret"))
        for source_index, source in enumerate((volume.get("projected") or {}).get("sources") or []):
            for field_name, kind in (("configMap", "ConfigMap"), ("secret", "Secret")):
                selector = source.get(field_name)
                if isinstance(selector, Mapping) and selector.get("name"):
                    path = f"{base}.projected.sources[{source_index}].{field_name}"
                    out.extend(_volume_refs(kind, selector, str(selector["name"]), path))
    return out


def _volume_refs(kind: str, source: Mapping[str, Any], name: str, path: str) -> list[ConfigRef]:
    optional = bool(source.get("optional"))
    items = source.get("items") or []
    if not items:
        return [ConfigRef(kind, name, None, optional, path)]
    return [ConfigRef(kind, name, str(item.get("key")), optional, f"{path}.items[{i}]") for i, item in enumerate(items)]


# --------------------------------------------------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------------------------------------------------


def event_count(event: Mapping[str, Any]) -> int:
    series = event.get("series") or {}
    return int(series.get("count") or event.get("count") or 1)


def event_time(event: Mapping[str, Any]) -> str | None:
    series = event.get("series") or {}
    for value in (
        series.get("lastObservedTime"),
        event.get("lastTimestamp"),
        event.get("eventTime"),
        event.get("firstTimestamp"),
        s.meta(event).get("creationTimestamp"),
    ):
        if value:
            return str(value)
    return None


def event_message(event: Mapping[str, Any]) -> str:
    return str(event.get("message") or event.get("note") or "")


def event_evidence(event: Mapping[str, Any], obj: ObjectRef, now: datetime) -> Evidence:
    last = event_time(event)
    moment = parse_time(last)
    return Evidence(
        source="event",
        object=obj,
        reason=str(event.get("reason") or ""),
        message=event_message(event),
        count=event_count(event),
        last_seen=format_time(moment) if moment else None,
        age=human_age((now - moment).total_seconds()) if moment else None,
    )


def latest_events(events: Sequence[Obj], *reasons: str) -> list[Obj]:
    """The events with one of ``reasons`` (all when none given), newest first, one per (reason, message)."""
    chosen: dict[tuple[str, str], Obj] = {}
    for event in events:
        reason = str(event.get("reason") or "")
        if reasons and reason not in reasons:
            continue
        key = (reason, event_message(event))
        if key not in chosen or (event_time(event) or "") > (event_time(chosen[key]) or ""):
            chosen[key] = event
    return sorted(chosen.values(), key=lambda e: event_time(e) or "", reverse=True)


# --------------------------------------------------------------------------------------------------------------------
# Operators
# --------------------------------------------------------------------------------------------------------------------


def _flag(args: Sequence[str], flag: str) -> str | None:
    """The value of ``--flag=value`` or ``--flag value`` in an argv (the last one wins, as Go's flag package)."""
    found = None
    for index, arg in enumerate(args):
        if arg == flag and index + 1 < len(args):
            found = args[index + 1]
        elif arg.startswith(flag + "="):
            found = arg[len(flag) + 1 :]
    return found


def _argv(container: Mapping[str, Any]) -> list[str]:
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    # `sh -c "manager --watch-namespace=a"`: split shell strings too, so the flags are found either way.
    out: list[str] = []
    for arg in argv:
        if " " in arg and "--" in arg:
            try:
                out.extend(shlex.split(arg))
            except ValueError:
                out.append(arg)
        else:
            out.append(arg)
    return out


def _feature_gates(text: str | None) -> dict[str, bool]:
    gates: dict[str, bool] = {}
    for item in (text or "").split(","):
        name, _, value = item.partition("=")
        if name.strip():
            gates[name.strip()] = value.strip().lower() in ("true", "1", "t")
    return gates


def is_operator_deployment(deployment: Mapping[str, Any]) -> bool:
    """An operator Deployment: by name, or by the labels of raykube's and KubeRay's charts and kustomize install
    (``app.kubernetes.io/name=kuberay-operator``, or ``app.kubernetes.io/component=kuberay-operator``)."""
    template_meta = ((deployment.get("spec") or {}).get("template") or {}).get("metadata") or {}
    labels = {**(template_meta.get("labels") or {}), **s.labels_of(deployment)}
    return (
        s.name_of(deployment) == c.OPERATOR_DEPLOYMENT_NAME
        or labels.get(c.K8S_APP_NAME_LABEL) == c.OPERATOR_APP_NAME_LABEL_VALUES[0]
        or labels.get(COMPONENT_LABEL) == c.COMPONENT_NAME
    )


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    match = selector.get("matchLabels") or {}
    if any(labels.get(k) != v for k, v in match.items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, op, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        present = key in labels
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and present and labels.get(key) in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def operators(snap: Snapshot) -> list[OperatorInfo]:
    found: list[OperatorInfo] = []
    for deployment in snap.all(s.DEPLOYMENTS):
        if not is_operator_deployment(deployment):
            continue
        spec = deployment.get("spec") or {}
        template = (spec.get("template") or {}).get("spec") or {}
        container = ray_container(template)
        argv = _argv(container)
        watch = _flag(argv, c.OPERATOR_WATCH_NAMESPACE_FLAG) or ""
        leader = _flag(argv, c.OPERATOR_ENABLE_LEADER_ELECTION_FLAG)
        namespace = s.namespace_of(deployment)
        status = deployment.get("status") or {}
        selector = spec.get("selector") or {}
        pods = [
            p
            for p in snap.in_namespace(s.PODS, namespace)
            if selector_matches(selector, s.labels_of(p)) and not terminating(p)
        ]
        ready_pods = sum(1 for p in pods if is_ready(p))
        ready_replicas = ready_pods if pods else int(status.get("readyReplicas") or 0)
        image = str(container.get("image") or "")
        implementation = "raykube" if ("raykube" in image or (argv[:1] == ["raykube"])) else "kuberay"
        found.append(
            OperatorInfo(
                namespace=namespace,
                name=s.name_of(deployment),
                implementation=implementation,
                image=image,
                ready=ready_replicas > 0,
                ready_replicas=ready_replicas,
                replicas=int(spec.get("replicas") or 0) if "replicas" in spec else 1,
                watch_namespaces=tuple(n.strip() for n in watch.split(",") if n.strip()),
                service_account=str(template.get("serviceAccountName") or template.get("serviceAccount") or "default"),
                feature_gates=_feature_gates(_flag(argv, c.OPERATOR_FEATURE_GATES_FLAG)),
                leader_election=(leader or str(c.OPERATOR_LEADER_ELECTION_DEFAULT)).lower() in ("true", "1", "t"),
                leader_election_namespace=_flag(argv, c.OPERATOR_LEADER_ELECTION_NAMESPACE_FLAG) or namespace,
            )
        )
    return sorted(found, key=lambda o: (o.namespace, o.name))


def operator_pods(snap: Snapshot, operator: OperatorInfo) -> list[Obj]:
    deployment = snap.get(s.DEPLOYMENTS, operator.namespace, operator.name) or {}
    selector = (deployment.get("spec") or {}).get("selector") or {}
    return [p for p in snap.in_namespace(s.PODS, operator.namespace) if selector_matches(selector, s.labels_of(p))]


# --------------------------------------------------------------------------------------------------------------------
# Access reviews (the operator's RBAC)
# --------------------------------------------------------------------------------------------------------------------


def service_account_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


@dataclass(frozen=True)
class AccessResult:
    user: str
    namespace: str  # "" for cluster scope
    verb: str
    group: str
    resource: str
    subresource: str
    allowed: bool
    reason: str

    @property
    def resource_text(self) -> str:
        name = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        return f"{name}.{self.group}" if self.group else name

    @property
    def scope_text(self) -> str:
        return f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"


def access(snap: Snapshot) -> list[AccessResult]:
    out = []
    for review in snap.all(s.ACCESS_REVIEWS):
        spec = review.get("spec") or {}
        attributes = spec.get("resourceAttributes") or {}
        status = review.get("status") or {}
        out.append(
            AccessResult(
                user=str(spec.get("user") or ""),
                namespace=str(attributes.get("namespace") or ""),
                verb=str(attributes.get("verb") or ""),
                group=str(attributes.get("group") or ""),
                resource=str(attributes.get("resource") or ""),
                subresource=str(attributes.get("subresource") or ""),
                allowed=bool(status.get("allowed")),
                reason=str(status.get("reason") or status.get("evaluationError") or ""),
            )
        )
    return out


# --------------------------------------------------------------------------------------------------------------------
# One RayCluster
# --------------------------------------------------------------------------------------------------------------------


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
        return s.name_of(self.obj)

    @property
    def namespace(self) -> str:
        return s.namespace_of(self.obj)

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

    @property
    def age_seconds(self) -> float | None:
        return seconds_since(s.meta(self.obj).get("creationTimestamp"), self.snap.now)

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
        return int(s.meta(self.obj).get("generation") or 1)

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
            labels = s.labels_of(service)
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
    uid = s.meta(owner).get("uid")
    return bool(uid) and any(o.get("uid") == uid for o in s.meta(obj).get("ownerReferences") or [])


def _parse_cluster(obj: Mapping[str, Any]) -> RayCluster | None:
    try:
        return RayCluster.model_validate(obj)
    except (ValidationError, ValueError, TypeError):
        return None


def cluster_view(snap: Snapshot, obj: Obj, ops: list[OperatorInfo] | None = None) -> ClusterView:
    namespace, name = s.namespace_of(obj), s.name_of(obj)
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


# --------------------------------------------------------------------------------------------------------------------
# Versions and images
# --------------------------------------------------------------------------------------------------------------------

_RAY_TAG = re.compile(r"(?:^|[^\d])(\d+\.\d+\.\d+)")


def image_ray_version(image: str) -> str | None:
    """The Ray version in a ``rayproject/ray``-style tag (``2.52.0``, ``2.52.0-py311-gpu``); None if the image has
    no tag or a digest only."""
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        tail = tail.split("@", 1)[0]
    if ":" not in tail:
        return None
    tag = tail.split(":", 1)[1]
    match = _RAY_TAG.search(tag)
    return match.group(1) if match else None


SENSITIVE_ENV: Final = re.compile(
    r"(?i)password|passwd|token|secret|bearer|credential|private_key|AWS_SECRET_ACCESS_KEY|GOOGLE_APPLICATION_CREDENTIALS"
    r"|AZURE_.+KEY|OCI_CLI_KEY_CONTENT"
)
REDACTED: Final = "<redacted>"

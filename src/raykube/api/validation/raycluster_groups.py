"""RayCluster validation, the groups: the Pod template fields the rules read, the head group and the worker groups.

Part of :mod:`.raycluster` (whose docstring lists the rules and their KubeRay sources), split off by seam; its
:func:`~raykube.api.validation.raycluster._check_cluster_spec` calls these checks in KubeRay's order. Here: the
``template`` reads (:class:`_Template`, also what :mod:`.rayjob` and :mod:`.rayservice` see of the head Pod), the
head group's and each worker group's reads with their CRD requirements, and ``ValidateRayClusterSpec``'s group rules:
at least one container, ``resources`` against the rayStartParams, ``labels`` (``validateRayGroupResources``,
``validateRayGroupLabels``), ``minReplicas``/``maxReplicas``, unique group names (webhook), worker
``idleTimeoutSeconds`` (``validateWorkerGroupIdleTimeout``) and ``priority`` (v1.7.0, ``validateWorkerGroupPriority``),
worker ``suspend``; and :func:`_check_version_gate`, KubeRay's Ray version check that the auth rules share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from raykube.api import constants as c
from raykube.api.validation.common import (
    _REQUIRED,
    _child,
    _Errors,
    _index,
    _key,
    _label_value_errors,
    _parse_generic_version,
    _qualified_name_errors,
    _type_name,
    _version_less,
    _View,
)

# --------------------------------------------------------------------------------------------------------------------
# Pod templates: the few fields the rules look at
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _EnvVar:
    path: str
    name: str
    value: str
    value_from: bool = False  # valueFrom is set


@dataclass(frozen=True, slots=True)
class _Mount:
    path: str
    name: str
    mount_path: str


@dataclass(frozen=True, slots=True)
class _Container:
    path: str
    name: str
    env: tuple[_EnvVar, ...]
    mounts: tuple[_Mount, ...]

    def env_var(self, name: str) -> _EnvVar | None:
        return next((e for e in self.env if e.name == name), None)


@dataclass(frozen=True, slots=True)
class _Template:
    path: str
    present: bool
    containers: tuple[_Container, ...]
    restart_policy: str
    volumes: tuple[tuple[str, str], ...]

    @property
    def spec_path(self) -> str:
        return _child(self.path, "spec")

    @property
    def ray_container(self) -> _Container | None:
        return self.containers[c.RAY_CONTAINER_INDEX] if self.containers else None

    def ray_env(self, name: str) -> _EnvVar | None:
        container = self.ray_container
        return None if container is None else container.env_var(name)


def _read_env(view: _View, key: str) -> tuple[_EnvVar, ...]:
    out = []
    for item in view.objects(key):
        value_from = item.obj("valueFrom").present
        out.append(_EnvVar(item.path, item.text("name"), item.text("value"), value_from))
    return tuple(out)


def _read_mounts(view: _View, key: str) -> tuple[_Mount, ...]:
    return tuple(_Mount(m.path, m.text("name"), m.text("mountPath")) for m in view.objects(key))


def _read_container(view: _View) -> _Container:
    return _Container(view.path, view.text("name"), _read_env(view, "env"), _read_mounts(view, "volumeMounts"))


def _read_template(group: _View) -> _Template:
    template = group.obj("template")
    spec = template.obj("spec")
    containers = tuple(_read_container(v) for v in spec.objects("containers"))
    volumes = tuple((v.path, v.text("name")) for v in spec.objects("volumes"))
    return _Template(template.path, template.present, containers, spec.text("restartPolicy"), volumes)


# --------------------------------------------------------------------------------------------------------------------
# Head and worker groups
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Group:
    path: str
    label: str
    ray_start_params_path: str
    ray_start_params: dict[str, str]
    resources: dict[str, str]
    labels: dict[str, str]
    template: _Template
    suspend: bool = False
    min_replicas: int | None = None
    max_replicas: int | None = None
    idle_timeout_seconds: int | None = None
    priority: int | None = None


def _read_group(view: _View, label: str) -> _Group:
    ray_start_params = view.string_map("rayStartParams")
    return _Group(
        path=view.path,
        label=label,
        ray_start_params_path=view.at("rayStartParams"),
        ray_start_params=ray_start_params,
        resources=view.string_map("resources"),
        labels=view.string_map("labels"),
        template=_read_template(view),
    )


def _replicas(view: _View, key: str, default: int) -> int | None:
    """A CRD-defaulted int32: absent reads as the default the API server stores, explicit null as unset."""
    if not view.has_key(key):
        return default
    return view.integer(key)


def _read_head(errs: _Errors, spec: _View) -> tuple[_Group, _View]:
    """The head group and its ``headService`` view."""
    head_view = spec.obj("headGroupSpec")
    if not head_view.present:
        errs.schema(head_view.path, _REQUIRED)
    elif not head_view.has("template"):
        errs.schema(head_view.at("template"), _REQUIRED)
    head = _read_group(head_view, "Head")
    head_view.text("serviceType")
    head_view.opt_flag("enableIngress")
    head_view.obj("ingressOptions").enum("pathType", c.INGRESS_PATH_TYPES)
    return head, head_view.obj("headService")


def _read_worker(errs: _Errors, view: _View) -> _Group:
    """One worker group, with its type checks and CRD requirements."""
    name = view.opt_text("groupName")
    if view.raw("groupName") is None:
        errs.schema(view.at("groupName"), _REQUIRED)
    elif name == "":
        errs.schema(view.at("groupName"), "must be non-empty")
    if not view.has("template"):
        errs.schema(view.at("template"), _REQUIRED)
    view.integer("replicas")
    view.integer("numOfHosts")
    scale = view.obj("scaleStrategy")
    for i, worker in enumerate(scale.array("workersToDelete") or []):
        if not isinstance(worker, str):
            errs.schema(_index(scale.at("workersToDelete"), i), f"must be of type string, not {_type_name(worker)}")
    base = _read_group(view, name or "")
    return _Group(
        path=base.path,
        label=base.label,
        ray_start_params_path=base.ray_start_params_path,
        ray_start_params=base.ray_start_params,
        resources=base.resources,
        labels=base.labels,
        template=base.template,
        suspend=view.flag("suspend"),
        min_replicas=_replicas(view, "minReplicas", c.DEFAULT_MIN_REPLICAS),
        max_replicas=_replicas(view, "maxReplicas", c.DEFAULT_MAX_REPLICAS),
        idle_timeout_seconds=view.integer("idleTimeoutSeconds"),
        priority=view.integer("priority"),
    )


def _check_group_common(errs: _Errors, group: _Group, *, is_head: bool) -> None:
    if group.template.present and not group.template.containers:
        which = "headGroupSpec" if is_head else "workerGroupSpec"
        errs.kuberay(_child(group.template.spec_path, "containers"), f"{which} should have at least one container")

    if group.resources and any(group.ray_start_params.get(p) for p in c.RAY_START_RESOURCE_PARAMS):
        errs.kuberay(
            _child(group.path, "resources"),
            f"resource fields should not be set in both rayStartParams and Resources for {group.label} group; "
            "please use only one",
        )

    if c.RAY_START_LABELS_PARAM in group.ray_start_params:
        errs.kuberay(
            _key(group.ray_start_params_path, c.RAY_START_LABELS_PARAM),
            f"rayStartParams['labels'] is not supported for {group.label} group; "
            "please use the top-level Labels field instead",
        )
    labels_path = _child(group.path, "labels")
    for key in sorted(group.labels):
        value = group.labels[key]
        for reason in _qualified_name_errors(key):
            errs.kuberay(_key(labels_path, key), f"invalid label key for {group.label} group: '{key}', error: {reason}")
        for reason in _label_value_errors(value):
            errs.kuberay(
                _key(labels_path, key),
                f"invalid label value for key '{key}' in {group.label} group: '{value}', error: {reason}",
            )


def _check_replicas(errs: _Errors, group: _Group, *, autoscaling: bool) -> None:
    low, high = group.min_replicas, group.max_replicas
    if not autoscaling and (low is None or high is None):
        missing = "minReplicas" if low is None else "maxReplicas"
        errs.kuberay(
            _child(group.path, missing),
            f"worker group {group.label} must set both minReplicas and maxReplicas when autoscaling is disabled",
        )
    if low is not None and low < 0:
        errs.kuberay(_child(group.path, "minReplicas"), f"worker group {group.label} has negative minReplicas {low}")
    if high is not None and high < 0:
        errs.kuberay(_child(group.path, "maxReplicas"), f"worker group {group.label} has negative maxReplicas {high}")
    if low is not None and high is not None and low > high:
        errs.kuberay(
            _child(group.path, "minReplicas"),
            f"worker group {group.label} has minReplicas {low} greater than maxReplicas {high}",
        )


def _autoscaler_v2_by_env(head: _Template) -> bool:
    env = head.ray_env(c.RAY_ENABLE_AUTOSCALER_V2)
    return env is not None and env.value in c.RAY_ENABLE_AUTOSCALER_V2_TRUE_VALUES


def _check_version_gate(
    errs: _Errors, path: str, ray_version: str, minimum: str, *, unset: str, invalid: str, too_old: str
) -> bool:
    """KubeRay's three-way Ray version check: not specified, unparsable, or older than ``minimum``; True if none."""
    if ray_version == "":
        errs.kuberay(path, unset)
        return False
    parsed, error = _parse_generic_version(ray_version)
    if parsed is None:
        errs.kuberay(path, f"{invalid}: {ray_version}, {error}")
        return False
    wanted, _ = _parse_generic_version(minimum)
    if wanted is not None and _version_less(parsed, wanted):
        errs.kuberay(path, f"{too_old} is {minimum}, got {ray_version}")
        return False
    return True


def _check_worker_extras(
    errs: _Errors, group: _Group, *, ray_version: str, ray_version_path: str, autoscaler_v2: bool
) -> None:
    idle = group.idle_timeout_seconds
    if idle is not None:
        if idle < 0:
            errs.kuberay(
                _child(group.path, "idleTimeoutSeconds"),
                f"worker group {group.label}: idleTimeoutSeconds must be non-negative, got {idle}",
            )
        elif not autoscaler_v2:
            errs.kuberay(
                _child(group.path, "idleTimeoutSeconds"),
                f"worker group {group.label}: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. "
                "Please set .spec.autoscalerOptions.version to 'v2' (or set "
                f"{c.RAY_ENABLE_AUTOSCALER_V2} environment variable to 'true' in the head pod if using "
                "KubeRay < 1.4.0)",
            )
    priority = group.priority
    if priority:
        version_ok = _check_version_gate(
            errs,
            ray_version_path,
            ray_version,
            c.MIN_RAY_VERSION_WORKER_GROUP_PRIORITY,
            unset=f"worker group {group.label}: priority is set, but RayVersion was not specified. "
            f"Ray version {c.MIN_RAY_VERSION_WORKER_GROUP_PRIORITY} or later is required",
            invalid=f"worker group {group.label}: priority is set, but RayVersion format is invalid",
            too_old=f"worker group {group.label}: priority is set, but minimum Ray version",
        )
        if version_ok and not autoscaler_v2:
            errs.kuberay(
                _child(group.path, "priority"),
                f"worker group {group.label}: priority is set to {priority}, but autoscaler v2 is not enabled. "
                "Priority is only supported with autoscaler v2 enabled",
            )


def _check_workers(
    errs: _Errors, spec: _View, *, autoscaling: bool, ray_version: str, autoscaler_v2: bool
) -> list[_Group]:
    """Read and check every worker group; returns them for the cluster-wide rules."""
    workers: list[_Group] = []
    seen_names: set[str] = set()
    for view in spec.objects("workerGroupSpecs"):
        group = _read_worker(errs, view)
        name = view.raw("groupName")
        if isinstance(name, str):
            if name in seen_names:
                errs.schema(view.path, "worker group names must be unique")
            seen_names.add(name)
        workers.append(group)
        _check_group_common(errs, group, is_head=False)
        _check_replicas(errs, group, autoscaling=autoscaling)
        _check_worker_extras(
            errs, group, ray_version=ray_version, ray_version_path=spec.at("rayVersion"), autoscaler_v2=autoscaler_v2
        )
    return workers


def _check_group_suspend(
    errs: _Errors, workers: Sequence[_Group], *, autoscaling: bool, gates: Mapping[str, bool]
) -> None:
    for group in (g for g in workers if g.suspend):
        if not gates.get(c.GATE_RAYJOB_DELETION_POLICY, False):
            errs.kuberay(
                _child(group.path, "suspend"),
                f"worker group {group.label} can be suspended only when the {c.GATE_RAYJOB_DELETION_POLICY} feature "
                "gate is enabled",
            )
        if autoscaling:
            errs.kuberay(
                _child(group.path, "suspend"), f"worker group {group.label} cannot be suspended with Autoscaler enabled"
            )

"""RayCluster validation: metadata, spec, upgrade strategy and status.

Mirrors KubeRay v1.6.1 ``ray-operator/controllers/ray/utils/validation.go``: ``ValidateRayClusterMetadata``,
``ValidateRayClusterSpec`` (with ``validateRayGroupResources``, ``validateRayGroupLabels`` and
``validateWorkerGroupIdleTimeout``), ``ValidateRayClusterUpgradeOptions`` and ``ValidateRayClusterStatus``, plus the
rules of the RayCluster CRD and of the webhook (``ray-operator/pkg/webhooks/v1/raycluster_webhook.go``). The spec
rules also run on a RayJob's ``spec.rayClusterSpec`` and a RayService's ``spec.rayClusterConfig``, whose messages
KubeRay prefixes with "The RayJob spec is invalid: " / "The RayService spec is invalid: "; :mod:`.rayjob` and
:mod:`.rayservice` call :func:`_check_cluster_spec` for that. Tags as in :mod:`raykube.api.validation`; "v1.7.0"
marks a rule of KubeRay v1.7.0's validation.go (or CRD) that v1.6.1 does not have.

Metadata: the name is at most 53 characters and a DNS-1035 label (``ValidateRayClusterMetadata``); with
``generateName`` the length counts the 5 characters the API server appends (own).

Spec (``ValidateRayClusterSpec`` unless noted):

* ``headGroupSpec`` and every ``template`` are required (CRD); the head and each worker group have ≥ 1 container.
* worker group ``groupName`` is required (CRD) and non-empty (own: KubeRay accepts ""), names are unique (webhook).
* without in-tree autoscaling ``minReplicas`` and ``maxReplicas`` must be set; a key that is absent is read as its
  CRD default (0 and 2147483647, as the API server stores it), so only an explicit ``null`` is unset.
* ``minReplicas`` ≥ 0, ``maxReplicas`` ≥ 0, ``minReplicas`` ≤ ``maxReplicas``. ``replicas`` outside
  ``[minReplicas, maxReplicas]`` is not an error: KubeRay clamps it (``GetWorkerGroupDesiredReplicas``).
* a group's ``resources`` and the rayStartParams ``num-cpus``/``num-gpus``/``memory``/``resources`` are exclusive;
  ``rayStartParams.labels`` is forbidden; group ``labels`` are valid Kubernetes label keys and values.
* worker ``idleTimeoutSeconds`` ≥ 0 and needs autoscaler v2 (``autoscalerOptions.version: v2`` or the head env
  ``RAY_enable_autoscaler_v2`` = 1/true); a non-zero ``priority`` needs rayVersion ≥ 2.56.0 and autoscaler v2
  (v1.7.0, ``validateWorkerGroupPriority``).
* the ``ray.io/ft-enabled`` annotation together with ``gcsFaultToleranceOptions``; ``RAY_REDIS_ADDRESS`` on the head
  without GCS FT; with ``gcsFaultToleranceOptions``: no ``redis-password`` rayStartParam, no ``REDIS_PASSWORD`` or
  ``RAY_REDIS_ADDRESS`` head env, no ``ray.io/external-storage-namespace`` annotation; a Redis username only through
  ``gcsFaultToleranceOptions.redisUsername``.
* backend ``rocksdb`` needs the GCSFaultToleranceEmbeddedStorage gate, no Redis fields, ``storage.claimName``
  exclusive with size/storageClassName/accessModes, no ``RAY_gcs_storage*`` env, no ``gcs-storage`` volume or
  ``/data/gcs`` mount on the head; ``storage`` only with ``rocksdb`` (v1.7.0, ``validateGcsFaultToleranceBackend``).
  Backend immutability is CEL (see :func:`raykube.api.validation.validate_update`).
* worker ``suspend`` needs the RayJobDeletionPolicy gate and is not allowed with autoscaling.
* ``RAY_enable_autoscaler_v2`` = 1/true on the head without autoscaling; with autoscaling, that env together with
  ``autoscalerOptions.version``; autoscaler v2 needs ``restartPolicy`` Never or unset on the head and every worker.
* ``autoscalerOptions.idleTimeoutSeconds`` ≥ 0; ``autoscalerOptions.env`` must not set
  ``KUBERAY_GEN_AUTOSCALER_START_CMD`` (v1.7.0).
* ``historyServerOptions`` needs the RayClusterHistoryServer gate, ``collectorOptions`` and its ``image``, and no
  container named ``ray-history-collector`` in any template (v1.7.0, with ``validateCollectorOptions``).
* ``authOptions.mode: token`` needs rayVersion ≥ 2.52.0 (unset and unparsable versions are errors);
  ``enableK8sTokenAuth`` needs mode token, rayVersion ≥ 2.55.0 and no ``secretName``; K8s token auth is not
  supported for RayJob or RayService (``ValidateRayJobSpec``, ``ValidateRayServiceSpec``).
* ``networkPolicy`` needs the RayClusterNetworkPolicy gate; its ingress/egress rules must match the mode, its
  ``workerGroups`` must name existing groups, and group names must then be DNS-1123 labels (v1.7.0,
  ``validateNetworkPolicy``).
* ``tlsOptions`` needs the RayClusterMTLS gate; with TLS enabled no ``RAY_USE_TLS``/``RAY_TLS_*`` env and no
  ``ray-tls`` volume mount or ``/etc/ray/tls`` mount path in the head, worker or autoscaler containers (v1.7.0,
  ``validateTLSOptions``).
* ``managedBy`` is ``ray.io/kuberay-operator`` or ``kueue.x-k8s.io/multikueue`` (CEL), and immutable (CEL, see
  :func:`raykube.api.validation.validate_update`). Enums of ``authOptions.mode``, ``autoscalerOptions.version``/
  ``upscalingMode`` and an embedded ``upgradeStrategy.type`` (CRD), and of ``gcsFaultToleranceOptions.backend``,
  ``storage.deletionPolicy``, ``networkPolicy.mode`` and ``ingressOptions.pathType`` (v1.7.0 CRD).

Object (RayCluster controller): ``upgradeStrategy.type`` is Recreate or None, and may not be set on a cluster whose
``ray.io/originated-from-crd`` label is RayJob or RayService (``ValidateRayClusterUpgradeOptions``); status
conditions RayClusterSuspending and RayClusterSuspended are not both True (``ValidateRayClusterStatus``).

Ray versions compare like apimachinery's ``version.ParseGeneric``: at least two dotted numbers, anything after the
numbers ignored ("2.52", "2.52.0rc1" = 2.52.0); unset or unparsable versions fail the auth and priority checks with
KubeRay's "was not specified" / "format is invalid" messages.

Not implemented: the history-server collector's storage-backend env checks (the env names were not confirmed), and
rules KubeRay enforces only at reconcile time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from raykube.api import constants as c
from raykube.api.validation.common import (
    _REQUIRED,
    FieldError,
    _check_managed_by,
    _check_name,
    _child,
    _dns1123_label_errors,
    _Errors,
    _gates,
    _index,
    _key,
    _label_value_errors,
    _parse_generic_version,
    _qualified_name_errors,
    _read_metadata,
    _root,
    _string_map,
    _type_name,
    _version_less,
    _View,
)
from raykube.golang.fmt import sprint_strings
from raykube.golang.strconv import quote

__all__ = [
    "validate_raycluster",
    "validate_raycluster_metadata",
    "validate_raycluster_spec",
    "validate_raycluster_status",
    "validate_raycluster_upgrade_strategy",
]


# --------------------------------------------------------------------------------------------------------------------
# Pod templates: the few fields the rules look at
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _EnvVar:
    path: str
    name: str
    value: str


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
        item.obj("valueFrom")
        out.append(_EnvVar(item.path, item.text("name"), item.text("value")))
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
# RayCluster spec
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


@dataclass(frozen=True, slots=True)
class _ClusterSummary:
    """What RayJob and RayService rules need to know of their embedded cluster spec."""

    autoscaling: bool
    head_template: _Template
    k8s_token_auth: bool
    k8s_token_auth_path: str
    head_service_name: str
    head_service_name_path: str


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


def _check_gcs_ft(
    errs: _Errors,
    spec: _View,
    head: _Group,
    *,
    annotations: Mapping[str, str],
    annotations_path: str,
    gates: Mapping[str, bool],
) -> None:
    ft_view = spec.obj("gcsFaultToleranceOptions")
    has_options = ft_view.present
    head_template = head.template
    if annotations.get(c.RAY_FT_ENABLED_ANNOTATION, "") != "" and has_options:
        errs.kuberay(
            ft_view.path,
            f"{c.RAY_FT_ENABLED_ANNOTATION} annotation and GcsFaultToleranceOptions are both set. "
            "Please use only GcsFaultToleranceOptions to configure GCS fault tolerance",
        )
    ft_enabled = annotations.get(c.RAY_FT_ENABLED_ANNOTATION, "").lower() == "true" or has_options
    redis_address_env = head_template.ray_env(c.RAY_REDIS_ADDRESS)
    if not ft_enabled and redis_address_env is not None:
        errs.kuberay(
            redis_address_env.path,
            f"{c.RAY_REDIS_ADDRESS} is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions "
            "is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance",
        )
    if has_options:
        if head.ray_start_params.get(c.RAY_START_REDIS_PASSWORD_PARAM):
            errs.kuberay(
                _key(head.ray_start_params_path, c.RAY_START_REDIS_PASSWORD_PARAM),
                "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.RedisPassword instead",
            )
        password_env = head_template.ray_env(c.REDIS_PASSWORD)
        if password_env is not None:
            errs.kuberay(
                password_env.path,
                "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.RedisPassword instead",
            )
        if redis_address_env is not None:
            errs.kuberay(
                redis_address_env.path,
                "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.RedisAddress instead",
            )
        if annotations.get(c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION, ""):
            errs.kuberay(
                _key(annotations_path, c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION),
                "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.ExternalStorageNamespace instead",
            )
    _check_gcs_ft_backend(errs, ft_view, head_template, gates)

    username_message = (
        "cannot set redis username in rayStartParams or environment variables - "
        "use GcsFaultToleranceOptions.RedisUsername instead"
    )
    if head.ray_start_params.get(c.RAY_START_REDIS_USERNAME_PARAM):
        errs.kuberay(_key(head.ray_start_params_path, c.RAY_START_REDIS_USERNAME_PARAM), username_message)
    username_env = head_template.ray_env(c.REDIS_USERNAME)
    if username_env is not None:
        errs.kuberay(username_env.path, username_message)


def _check_gcs_ft_backend(errs: _Errors, ft: _View, head: _Template, gates: Mapping[str, bool]) -> None:
    """Types of the options, and the backend rules (``validateGcsFaultToleranceBackend``)."""
    backend = ft.enum("backend", c.GCS_FT_BACKENDS)
    for key in ("redisAddress", "externalStorageNamespace"):
        ft.text(key)
    for key in ("redisUsername", "redisPassword"):
        credential = ft.obj(key)
        credential.text("value")
        credential.obj("valueFrom")
    storage = ft.obj("storage")
    for key in ("claimName", "storageClassName", "subPath"):
        storage.text(key)
    storage.array("accessModes")
    storage.enum("deletionPolicy", c.GCS_STORAGE_DELETION_POLICIES)
    if not ft.present:
        return
    if backend != c.GCS_FT_BACKEND_ROCKSDB:
        if storage.present:
            errs.kuberay(
                storage.path,
                "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - "
                "it only applies to the 'rocksdb' backend",
            )
        return
    if not gates.get(c.GATE_GCS_FT_EMBEDDED_STORAGE, False):
        errs.kuberay(
            ft.at("backend"),
            "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') "
            f"requires the {c.GATE_GCS_FT_EMBEDDED_STORAGE} feature gate to be enabled",
        )
    _check_rocksdb(errs, ft, storage, head)


def _check_rocksdb(errs: _Errors, ft: _View, storage: _View, head: _Template) -> None:
    """The embedded backend: no Redis fields, a consistent ``storage``, and no KubeRay-managed env or volume."""
    redis_address = ft.text("redisAddress")
    external_ns = ft.text("externalStorageNamespace")
    for present, key, field in (
        (redis_address != "", "redisAddress", "RedisAddress"),
        (ft.has("redisUsername"), "redisUsername", "RedisUsername"),
        (ft.has("redisPassword"), "redisPassword", "RedisPassword"),
        (external_ns != "", "externalStorageNamespace", "ExternalStorageNamespace"),
    ):
        if present:
            errs.kuberay(ft.at(key), f"cannot set GcsFaultToleranceOptions.{field} when backend is 'rocksdb'")
    if storage.text("claimName") and (
        storage.has("size") or storage.opt_text("storageClassName") is not None or storage.array("accessModes")
    ):
        errs.kuberay(
            storage.at("claimName"),
            "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, "
            "and accessModes",
        )
    for name in (c.RAY_GCS_STORAGE, c.RAY_GCS_STORAGE_PATH):
        env = head.ray_env(name)
        if env is not None:
            errs.kuberay(
                env.path,
                f"cannot set `{c.RAY_GCS_STORAGE}` or `{c.RAY_GCS_STORAGE_PATH}` env var in head Pod when the "
                "embedded GCS FT backend is used - these are managed by KubeRay",
            )
    container = head.ray_container
    for mount in container.mounts if container is not None else ():
        if mount.mount_path == c.GCS_STORAGE_MOUNT_PATH or mount.name == c.GCS_STORAGE_VOLUME_NAME:
            errs.kuberay(
                mount.path,
                f"cannot set a volume mount named {quote(c.GCS_STORAGE_VOLUME_NAME)} or mounted at "
                f"{c.GCS_STORAGE_MOUNT_PATH} in the head container when the embedded GCS FT backend is used - "
                "it is managed by KubeRay",
            )
    for volume_path, volume_name in head.volumes:
        if volume_name == c.GCS_STORAGE_VOLUME_NAME:
            errs.kuberay(
                volume_path,
                f"cannot set a volume named {quote(c.GCS_STORAGE_VOLUME_NAME)} in the head Pod when the "
                "embedded GCS FT backend is used - it is managed by KubeRay",
            )


def _check_history_server(
    errs: _Errors, spec: _View, head: _Group, workers: Sequence[_Group], gates: Mapping[str, bool]
) -> None:
    options = spec.obj("historyServerOptions")
    collector = options.obj("collectorOptions")
    image = collector.opt_text("image")
    collector.opt_text("imagePullPolicy")
    collector.obj("resources")
    _read_env(collector, "env")
    if not options.present:
        return
    if not gates.get(c.GATE_RAYCLUSTER_HISTORY_SERVER, False):
        errs.kuberay(options.path, f"{c.GATE_RAYCLUSTER_HISTORY_SERVER} feature gate is not enabled")
    if not collector.present:
        errs.kuberay(collector.path, "historyServerOptions.collectorOptions must be set")
        return
    if not image:
        errs.kuberay(collector.at("image"), "historyServerOptions.collectorOptions.image must be set")
    for container in head.template.containers:
        if container.name == c.COLLECTOR_CONTAINER_NAME:
            errs.kuberay(
                _child(container.path, "name"),
                f"head pod template must not define a container with name '{c.COLLECTOR_CONTAINER_NAME}' when "
                "history server collector options are enabled",
            )
    for worker in workers:
        for container in worker.template.containers:
            if container.name == c.COLLECTOR_CONTAINER_NAME:
                errs.kuberay(
                    _child(container.path, "name"),
                    f"worker group {worker.label} pod template must not define a container with name "
                    f"'{c.COLLECTOR_CONTAINER_NAME}' when history server collector options are enabled",
                )


def _check_auth(errs: _Errors, spec: _View, ray_version: str) -> tuple[bool, str]:
    """Auth rules; returns whether K8s token auth is on and the path of its switch."""
    auth = spec.obj("authOptions")
    mode = auth.enum("mode", c.AUTH_MODES)
    k8s_token_auth = auth.flag("enableK8sTokenAuth")
    secret_name = auth.text("secretName")
    k8s_path = auth.at("enableK8sTokenAuth")
    if not auth.present:
        return False, k8s_path
    if mode == c.AUTH_MODE_TOKEN:
        version_ok = _check_version_gate(
            errs,
            spec.at("rayVersion"),
            ray_version,
            c.MIN_RAY_VERSION_TOKEN_AUTH,
            unset="authOptions.mode is 'token' but RayVersion was not specified. "
            f"Ray version {c.MIN_RAY_VERSION_TOKEN_AUTH} or later is required",
            invalid="authOptions.mode is 'token' but RayVersion format is invalid",
            too_old="authOptions.mode is 'token' but minimum Ray version",
        )
        if k8s_token_auth and version_ok:
            _check_version_gate(
                errs,
                spec.at("rayVersion"),
                ray_version,
                c.MIN_RAY_VERSION_K8S_TOKEN_AUTH,
                unset="",
                invalid="",
                too_old="authOptions.enableK8sTokenAuth is enabled but minimum Ray version",
            )
        if k8s_token_auth and secret_name:
            errs.kuberay(
                auth.at("secretName"),
                "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
            )
    elif k8s_token_auth:
        errs.kuberay(k8s_path, "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'")
    return k8s_token_auth, k8s_path


def _check_network_policy(errs: _Errors, spec: _View, workers: Sequence[_Group], gates: Mapping[str, bool]) -> None:
    policy = spec.obj("networkPolicy")
    mode = policy.enum("mode", c.NETWORK_POLICY_MODES) or c.NETWORK_POLICY_DENY_ALL
    rule_sets: list[tuple[str, _View]] = [("networkPolicy.head", policy.obj("head"))]
    rule_sets.append(("networkPolicy.worker", policy.obj("worker")))
    per_group: list[tuple[str, str, _View]] = []
    for item in policy.objects("workerGroups"):
        name = item.text("groupName")
        if not item.has("groupName"):
            errs.schema(item.at("groupName"), _REQUIRED)
        per_group.append((name, f"networkPolicy.workerGroups[{quote(name)}]", item))
    if not policy.present:
        return
    if not gates.get(c.GATE_RAYCLUSTER_NETWORK_POLICY, False):
        errs.kuberay(
            policy.path,
            f"spec.networkPolicy requires the {c.GATE_RAYCLUSTER_NETWORK_POLICY} feature gate to be enabled",
        )
    quoted_mode = quote(mode)
    for label, rules in [*rule_sets, *((label, view) for _, label, view in per_group)]:
        ingress = rules.array("ingressRules")
        egress = rules.array("egressRules")
        if mode == c.NETWORK_POLICY_DENY_ALL_EGRESS and ingress:
            errs.kuberay(
                rules.at("ingressRules"),
                f"{label}.ingressRules cannot be set when mode is {quoted_mode} (ingress is not restricted)",
            )
        if mode == c.NETWORK_POLICY_DENY_ALL_INGRESS and egress:
            errs.kuberay(
                rules.at("egressRules"),
                f"{label}.egressRules cannot be set when mode is {quoted_mode} (egress is not restricted)",
            )
    group_names = set()
    for worker in workers:
        reasons = _dns1123_label_errors(worker.label)
        if reasons:
            errs.kuberay(
                _child(worker.path, "groupName"),
                f"worker group name {quote(worker.label)} must be a valid DNS1123 label when networkPolicy is "
                f"enabled (it is embedded in the NetworkPolicy name): {sprint_strings(reasons)}",
            )
        group_names.add(worker.label)
    for name, label, item in per_group:
        if name not in group_names:
            errs.kuberay(item.at("groupName"), f"{label} does not match any group name in workerGroupSpecs")


def _check_tls(
    errs: _Errors,
    spec: _View,
    head: _Group,
    workers: Sequence[_Group],
    *,
    autoscaler: _View,
    gates: Mapping[str, bool],
) -> None:
    tls = spec.obj("tlsOptions")
    enabled = tls.flag("enabled")
    if not tls.present:
        return
    if not gates.get(c.GATE_RAYCLUSTER_MTLS, False):
        errs.kuberay(tls.path, f"spec.tlsOptions requires the {c.GATE_RAYCLUSTER_MTLS} feature gate to be enabled")
    if not enabled:
        return
    managed = "- the operator manages TLS configuration automatically"
    places: list[tuple[str, _Container | None]] = [("head Pod", head.template.ray_container)]
    places += [(f"worker group {quote(w.label)}", w.template.ray_container) for w in workers]
    for where, container in places:
        if container is None:
            continue
        for name in c.RAY_TLS_ENV_VARS:
            env = container.env_var(name)
            if env is not None:
                errs.kuberay(
                    env.path, f"cannot set {name} environment variable in {where} when tlsOptions is set {managed}"
                )
        _check_tls_mounts(errs, container.mounts, where, managed)
    if autoscaler.present:
        for env in _read_env(autoscaler, "env"):
            if env.name in c.RAY_TLS_ENV_VARS:
                errs.kuberay(
                    env.path,
                    f"cannot set {env.name} environment variable in autoscalerOptions.env when tlsOptions is set "
                    "- the operator manages TLS configuration for the autoscaler automatically",
                )
        _check_tls_mounts(errs, _read_mounts(autoscaler, "volumeMounts"), "autoscalerOptions.volumeMounts", managed)


def _check_tls_mounts(errs: _Errors, mounts: Sequence[_Mount], where: str, managed: str) -> None:
    for mount in mounts:
        if mount.name == c.RAY_TLS_VOLUME_NAME:
            errs.kuberay(
                mount.path,
                f"cannot use volume mount named {quote(c.RAY_TLS_VOLUME_NAME)} in {where} when tlsOptions is set "
                f"{managed}",
            )
        elif mount.mount_path == c.RAY_TLS_CERT_MOUNT_PATH:
            errs.kuberay(
                mount.path,
                f"cannot use volume mount at path {quote(c.RAY_TLS_CERT_MOUNT_PATH)} in {where} when tlsOptions "
                f"is set {managed}",
            )


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


def _check_autoscaler(
    errs: _Errors, autoscaler: _View, head: _Template, workers: Sequence[_Group], *, autoscaling: bool
) -> None:
    version = autoscaler.enum("version", c.AUTOSCALER_VERSIONS)
    idle = autoscaler.integer("idleTimeoutSeconds")
    v2_env = head.ray_env(c.RAY_ENABLE_AUTOSCALER_V2)
    if not autoscaling and v2_env is not None and v2_env.value in c.RAY_ENABLE_AUTOSCALER_V2_TRUE_VALUES:
        errs.kuberay(
            v2_env.path,
            f"environment variable {c.RAY_ENABLE_AUTOSCALER_V2} cannot be set to '{v2_env.value}' when "
            "enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use autoscaler v2",
        )
    if autoscaling and version is not None and v2_env is not None:
        errs.kuberay(
            autoscaler.at("version"),
            f"both .spec.autoscalerOptions.version and head Pod env var {c.RAY_ENABLE_AUTOSCALER_V2} are set, "
            "please only use the former",
        )
    if autoscaling and version == c.AUTOSCALER_VERSION_V2:
        if head.restart_policy not in ("", c.RESTART_POLICY_NEVER):
            errs.kuberay(
                _child(head.spec_path, "restartPolicy"),
                "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
            )
        for group in workers:
            if group.template.restart_policy not in ("", c.RESTART_POLICY_NEVER):
                errs.kuberay(
                    _child(group.template.spec_path, "restartPolicy"),
                    f"restartPolicy for worker group {group.label} should be Never or unset when using autoscaler V2",
                )
    if idle is not None and idle < 0:
        errs.kuberay(
            autoscaler.at("idleTimeoutSeconds"),
            f"autoscalerOptions.idleTimeoutSeconds must be non-negative, got {idle}",
        )
    for env in _read_env(autoscaler, "env"):
        if env.name == c.KUBERAY_GEN_AUTOSCALER_START_CMD:
            errs.kuberay(
                env.path,
                f"autoscalerOptions.env must not contain {c.KUBERAY_GEN_AUTOSCALER_START_CMD}: it is managed by "
                "KubeRay and injected automatically into the autoscaler container",
            )


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


def _check_cluster_spec(
    errs: _Errors,
    spec_value: object,
    *,
    annotations: Mapping[str, str],
    annotations_path: str,
    gates: Mapping[str, bool],
    path: str,
    embedded: bool,
) -> _ClusterSummary:
    """Every RayCluster spec rule; ``embedded`` when the spec is a RayJob's or RayService's cluster template."""
    spec = _View.of(errs, spec_value, path)
    _check_managed_by(errs, spec)
    ray_version = spec.text("rayVersion")
    autoscaling = spec.flag("enableInTreeAutoscaling")
    spec.flag("suspend")
    spec.string_map("headServiceAnnotations")
    autoscaler = spec.obj("autoscalerOptions")
    autoscaler.enum("upscalingMode", c.UPSCALING_MODES)
    if embedded:
        spec.obj("upgradeStrategy").enum("type", c.RAYCLUSTER_UPGRADE_TYPES)

    head, head_service = _read_head(errs, spec)
    _check_group_common(errs, head, is_head=True)
    autoscaler_v2 = autoscaler.enum("version", c.AUTOSCALER_VERSIONS) == c.AUTOSCALER_VERSION_V2
    workers = _check_workers(
        errs,
        spec,
        autoscaling=autoscaling,
        ray_version=ray_version,
        autoscaler_v2=autoscaler_v2 or _autoscaler_v2_by_env(head.template),
    )
    _check_gcs_ft(errs, spec, head, annotations=annotations, annotations_path=annotations_path, gates=gates)
    _check_group_suspend(errs, workers, autoscaling=autoscaling, gates=gates)
    _check_autoscaler(errs, autoscaler, head.template, workers, autoscaling=autoscaling)
    _check_history_server(errs, spec, head, workers, gates)
    k8s_token_auth, k8s_token_auth_path = _check_auth(errs, spec, ray_version)
    _check_network_policy(errs, spec, workers, gates)
    _check_tls(errs, spec, head, workers, autoscaler=autoscaler, gates=gates)

    return _ClusterSummary(
        autoscaling=autoscaling,
        head_template=head.template,
        k8s_token_auth=k8s_token_auth,
        k8s_token_auth_path=k8s_token_auth_path,
        head_service_name=head_service.obj("metadata").text("name"),
        head_service_name_path=_child(head_service.at("metadata"), "name"),
    )


# --------------------------------------------------------------------------------------------------------------------
# Metadata, spec, upgrade strategy and status
# --------------------------------------------------------------------------------------------------------------------


def validate_raycluster_metadata(metadata: object, *, path: str = "metadata") -> list[FieldError]:
    """RayCluster name rules (``ValidateRayClusterMetadata``)."""
    errs = _Errors()
    view, _, _ = _read_metadata(errs, metadata, path)
    _check_name(errs, view, kind=c.KIND_RAYCLUSTER, limit=c.MAX_RAYCLUSTER_NAME_LENGTH, prefix="")
    return errs.items


def validate_raycluster_spec(
    spec: object,
    *,
    annotations: Mapping[str, str] | None = None,
    features: Mapping[str, bool] | None = None,
    path: str = "spec",
    message_prefix: str = "",
    annotations_path: str = "metadata.annotations",
    embedded: bool = False,
) -> list[FieldError]:
    """The RayCluster spec rules (``ValidateRayClusterSpec``), for a RayCluster or an embedded cluster template.

    ``annotations`` are those of the CR that owns the spec (the RayCluster, RayJob or RayService); KubeRay prefixes
    the messages of an embedded spec with ``message_prefix`` (for example "The RayJob spec is invalid: ").
    ``embedded`` adds the CRD enum check of ``upgradeStrategy.type``, which a RayCluster gets from
    :func:`validate_raycluster_upgrade_strategy` with KubeRay's own message instead.
    """
    errs = _Errors()
    _check_cluster_spec(
        errs.wrapped(message_prefix),
        spec,
        annotations=_string_map(annotations),
        annotations_path=annotations_path,
        gates=_gates(features),
        path=path,
        embedded=embedded,
    )
    return errs.items


def validate_raycluster_upgrade_strategy(
    spec: object, *, labels: Mapping[str, str] | None = None, path: str = "spec"
) -> list[FieldError]:
    """``upgradeStrategy`` of a RayCluster (``ValidateRayClusterUpgradeOptions``).

    ``labels`` are the RayCluster's: with ``ray.io/originated-from-crd`` RayJob or RayService the strategy may not be
    set at all. Call it with those labels to check a RayJob's or RayService's cluster template ahead of time.
    """
    errs = _Errors()
    _check_upgrade_strategy(errs, _View.of(errs, spec, path), _string_map(labels))
    return errs.items


def _check_upgrade_strategy(errs: _Errors, spec: _View, labels: Mapping[str, str]) -> None:
    upgrade = spec.obj("upgradeStrategy")
    upgrade_type = upgrade.opt_text("type")
    if upgrade_type is None:
        return
    if upgrade_type not in c.RAYCLUSTER_UPGRADE_TYPES:
        errs.kuberay(
            upgrade.at("type"),
            f"The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value {upgrade_type} is invalid, valid "
            f"options are {c.RAYCLUSTER_UPGRADE_RECREATE} or {c.RAYCLUSTER_UPGRADE_NONE}",
        )
    creator = labels.get(c.RAY_ORIGINATED_FROM_CRD_LABEL, "")
    if creator in (c.KIND_RAYJOB, c.KIND_RAYSERVICE):
        errs.kuberay(upgrade.at("type"), f"upgradeStrategy cannot be set when RayCluster is created by {creator}")


def validate_raycluster_status(status: object, *, path: str = "status") -> list[FieldError]:
    """RayCluster status consistency (``ValidateRayClusterStatus``)."""
    errs = _Errors()
    view = _View.of(errs, status, path)
    true_conditions = set()
    for condition in view.objects("conditions"):
        if condition.text("status") == "True":
            true_conditions.add(condition.text("type"))
    if {c.CONDITION_RAYCLUSTER_SUSPENDING, c.CONDITION_RAYCLUSTER_SUSPENDED} <= true_conditions:
        errs.kuberay(
            view.at("conditions"),
            "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should "
            "not be both true",
        )
    return errs.items


def validate_raycluster(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule for a whole RayCluster: metadata, spec, upgrade strategy and status."""
    errs = _Errors()
    root = _root(errs, obj, c.KIND_RAYCLUSTER)
    if root is None:
        return errs.items
    metadata, annotations, labels = _read_metadata(errs, root.raw("metadata"), "metadata")
    _check_name(errs, metadata, kind=c.KIND_RAYCLUSTER, limit=c.MAX_RAYCLUSTER_NAME_LENGTH, prefix="")
    spec_value = root.raw("spec")
    _check_cluster_spec(
        errs,
        {} if spec_value is None else spec_value,
        annotations=annotations,
        annotations_path="metadata.annotations",
        gates=_gates(features),
        path="spec",
        embedded=False,
    )
    _check_upgrade_strategy(errs, _View(errs, spec_value if isinstance(spec_value, Mapping) else None, "spec"), labels)
    for error in validate_raycluster_status(root.raw("status")):
        errs.kuberay(error.path, error.message)
    return errs.items

"""The head and worker Pods KubeRay creates for a RayCluster, as plain dicts ready to POST.

Pure functions: a :class:`~raykube.api.resources.RayCluster` and :class:`~raykube.builders.options.BuildOptions` in,
a complete ``v1`` Pod out (metadata with ``generateName`` or ``name``, the cluster's namespace, labels, annotations
and a controller ``ownerReferences`` entry; the spec). The input model and its template dicts are never mutated; no
I/O, no clock, no randomness (a multi-host replica name is chosen by the caller).

The behaviour is KubeRay **v1.7.0**'s (``controllers/ray/common/pod.go`` ``DefaultHeadPodTemplate``,
``DefaultWorkerPodTemplate``, ``BuildPod``; ``raycluster_controller.go`` ``buildHeadPod``/``buildWorkerPod``,
``shouldDeletePod``; ``utils/util.go``) and pinned by its tests (``common/pod_test.go``). The ``ray start`` command
lives in :mod:`raykube.builders.command`, the probes in :mod:`raykube.builders.probes`.

Build order, head: template copy → name/namespace → group ``resources``/``labels`` into rayStartParams → labels →
missing rayStartParams → annotations → autoscaler (``no-monitor``, service account, sidecar, v2 or v1 env and
restartPolicy) → GCS fault tolerance → metrics port → token auth → mTLS → history collector → operator head sidecars →
default Pod labels/annotations → ``BuildPod`` (``ray.io/serve``, ``/dev/shm``, ``/tmp/ray``, command and args,
init-container env, Ray container env, probes) → the recreate hash and KubeRay version annotations → owner reference
→ batch-scheduler metadata. Workers: the same, with the ``wait-gcs-ready`` init container first and the multi-host
labels after the labels.

What v1.7.0 changed from v1.6.1 on every cluster, and raykube follows:

* ``args[0]`` starts with ``ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; `` (v1.6.1: ``ulimit -n 65536; ``).
* The autoscaler sidecar carries ``KUBERAY_GEN_AUTOSCALER_START_CMD`` (its own start command), and
  ``autoscalerOptions.command``/``args`` replace its command and args (PR #4835).
* ``autoscalerOptions.version: v1`` adds ``RAY_enable_autoscaler_v2=false`` to the head's Ray container (PR #4810),
  as v2 adds ``=true``.
* ``rayStartParams`` ``include-log-monitor`` keeps ``=true``/``=false`` like ``log-color`` and ``include-dashboard``
  (PR #4857), so ``"false"`` turns Ray's log monitor off.
* ``BuildOptions.default_pod_labels``/``default_pod_annotations`` (the Configuration's, PR #4987) are applied only
  where a key is missing: after ``labelPod`` (KubeRay's labels, then the template's and the group's), the replica
  index labels and KubeRay's template annotations, so all of those win; before ``BuildPod``'s ``ray.io/serve`` and
  ``createHeadPod``'s annotations, which win over them. The Redis cleanup Job, built from :func:`build_head_pod`,
  carries them too.

GCS fault tolerance with the embedded ``rocksdb`` backend (gate ``GCSFaultToleranceEmbeddedStorage``): the head gets
:mod:`raykube.builders.gcs_storage`'s env, mount and claim volume instead of the Redis settings.

mTLS (``RayClusterMTLS``): :mod:`raykube.builders.tls`, after token auth (and on the autoscaler sidecar before the
user's overrides). The history-server collector sidecar (``RayClusterHistoryServer``): :mod:`raykube.builders.history`,
after mTLS; ``BuildPod`` then shares ``/tmp/ray`` with it and gives the Ray container the event-export env.

K8s token auth (``authOptions.enableK8sTokenAuth``): ``RAY_ENABLE_K8S_TOKEN_AUTH=true`` instead of ``RAY_AUTH_TOKEN``,
and the projected ``ray-token`` volume mounted read-only at ``/var/run/secrets/ray.io/serviceaccount``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import (
    AuthOptions,
    AutoscalerOptions,
    GcsFaultToleranceOptions,
    RayClusterSpec,
    RedisCredential,
    WorkerGroupSpec,
)
from raykube.api.resources import RayCluster
from raykube.builders import batch, gcs_storage, history, names, tls
from raykube.builders.command import (
    container_command,
    generate_ray_start_command,
    set_missing_ray_start_params,
    update_params_from_group_labels,
    update_params_from_group_resources,
)
from raykube.builders.options import BuildOptions
from raykube.builders.probes import inject_probes
from raykube.builders.spechash import cluster_spec_hash
from raykube.golang.quantity import QuantityError, canonical

__all__ = [
    "add_ray_token_volume",
    "cluster_spec_hash",
    "head_pod",
    "is_autoscaling_enabled",
    "ray_start_command",
    "set_token_auth_env",
    "should_delete_pod",
    "worker_pod",
]

# KubeRay v1.6.1 common/pod.go DefaultWorkerPodTemplate: the wait-gcs-ready script, byte for byte (a Go raw string:
# leading newline, tab indentation, trailing newline and four tabs). Formatted with the head FQDN and port, twice.
_WAIT_GCS_READY_SCRIPT = (
    "\n"
    "\t\t\t\t\tSECONDS=0\n"
    "\t\t\t\t\twhile true; do\n"
    "\t\t\t\t\t\tif (( SECONDS <= 120 )); then\n"
    "\t\t\t\t\t\t\tif ray health-check --address {address} > /dev/null 2>&1; then\n"
    '\t\t\t\t\t\t\t\techo "GCS is ready."\n'
    "\t\t\t\t\t\t\t\tbreak\n"
    "\t\t\t\t\t\t\tfi\n"
    '\t\t\t\t\t\t\techo "$SECONDS seconds elapsed: Waiting for GCS to be ready."\n'
    "\t\t\t\t\t\telse\n"
    "\t\t\t\t\t\t\tif ray health-check --address {address}; then\n"
    '\t\t\t\t\t\t\t\techo "GCS is ready. Any error messages above can be safely ignored."\n'
    "\t\t\t\t\t\t\t\tbreak\n"
    "\t\t\t\t\t\t\tfi\n"
    '\t\t\t\t\t\t\techo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, refer to '
    'the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."\n'
    "\t\t\t\t\t\tfi\n"
    "\t\t\t\t\t\tsleep 5\n"
    "\t\t\t\t\tdone\n"
    "\t\t\t\t"
)

# KubeRay common/pod.go labelPod: labels a template cannot override.
_PROTECTED_LABELS = frozenset({c.RAY_NODE_TYPE_LABEL, c.RAY_NODE_GROUP_LABEL, c.RAY_CLUSTER_LABEL})
# KubeRay utils/util.go GetCRDType: the creator kinds KubeRay knows; anything else counts as RayCluster.
_CREATOR_KINDS = frozenset({c.KIND_RAYCLUSTER, c.KIND_RAYJOB, c.KIND_RAYSERVICE})


# --------------------------------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------------------------------


def is_autoscaling_enabled(spec: RayClusterSpec) -> bool:
    """KubeRay ``IsAutoscalingEnabled``: ``enableInTreeAutoscaling`` is true."""
    return spec.enable_in_tree_autoscaling is True


def ray_start_command(cluster: RayCluster, group_index: int | None, options: BuildOptions) -> str:
    """The exact ``ray start ...`` KubeRay puts in ``KUBERAY_GEN_RAY_START_CMD`` (``group_index`` None: the head)."""
    ctx = _Context.of(cluster, options)
    if group_index is None:
        template, params = ctx.spec.head_group_spec.template, _head_params(ctx)
    else:
        group = ctx.group(group_index)
        template, params = group.template, _worker_params(ctx, group_index)
    containers = (template.get("spec") or {}).get("containers") or [{}]
    return generate_ray_start_command(params, head=group_index is None, resources=containers[0].get("resources"))


def head_pod(cluster: RayCluster, options: BuildOptions) -> dict[str, Any]:
    """The head Pod KubeRay creates for ``cluster`` (``createHeadPod``): :func:`build_head_pod` with the Recreate hash
    and ``ray.io/kuberay-version`` annotations and the batch scheduler's metadata."""
    pod = build_head_pod(cluster, options)
    pod_annotations: dict[str, str] = pod["metadata"].setdefault("annotations", {})
    spec_hash = cluster_spec_hash(_Context.of(cluster, options).spec)
    pod_annotations[c.RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION] = spec_hash
    pod_annotations[c.RAY_KUBERAY_VERSION_ANNOTATION] = options.kuberay_version
    return batch.decorate_pod(options.batch_scheduler, cluster, c.HEAD_GROUP_NAME, pod)


def build_head_pod(cluster: RayCluster, options: BuildOptions) -> dict[str, Any]:
    """KubeRay ``buildHeadPod``: the head Pod before ``createHeadPod`` adds its annotations and the batch scheduler
    its metadata. The Redis cleanup Job is built from it (with the operator's default Pod labels and annotations)."""
    ctx = _Context.of(cluster, options)
    head = ctx.spec.head_group_spec
    meta, spec = _copy_template(head.template)
    if options.deterministic_head_pod_name:
        meta["name"] = names.head_pod_deterministic_name(ctx.name)
    else:
        meta["generateName"] = names.head_pod_generate_name(ctx.name)
    meta["namespace"] = ctx.namespace
    params = _head_params(ctx)
    meta["labels"] = _pod_labels(ctx, c.NODE_TYPE_HEAD, c.HEAD_GROUP_NAME, meta.get("labels"), head.labels)
    annotations = _template_annotations(ctx, meta)
    ray = spec["containers"][c.RAY_CONTAINER_INDEX]
    autoscaling = is_autoscaling_enabled(ctx.spec)
    if autoscaling:
        _add_autoscaler(ctx, spec, ray)
    annotations[c.RAY_FT_ENABLED_ANNOTATION] = "true" if ctx.ft_enabled else "false"
    if ctx.ft_enabled and gcs_storage.embedded(ctx.spec):
        gcs_storage.add_to_head(cluster, spec, ray)
    elif ctx.ft_enabled:
        _add_head_ft(ctx, ray, annotations)
    _add_metrics_port(ray)
    if ctx.auth is not None:
        _add_token_auth(ctx, spec, ctx.auth)
    if tls.tls_enabled(ctx.spec, options):
        tls.configure_tls(spec, ctx.name, head=True)
    _add_collector(ctx, spec, head=True)
    _append_copies(spec, options.head_sidecar_containers)
    return _build_pod(ctx, meta, annotations, spec, params, head=True, autoscaling=autoscaling)


def worker_pod(
    cluster: RayCluster,
    group_index: int,
    options: BuildOptions,
    *,
    replica_index: int | None = None,
    replica_name: str | None = None,
    host_index: int | None = None,
) -> dict[str, Any]:
    """A worker Pod of ``spec.workerGroupSpecs[group_index]`` (``buildWorkerPod``).

    With the RayMultiHostIndexing gate on (the default) ``replica_index`` is required: the lowest free
    ``ray.io/worker-group-replica-index`` in the group, put on every worker. For ``numOfHosts > 1`` the caller also
    passes ``replica_name`` (``<group>-<rand5>``, shared by the hosts of one replica) and ``host_index``
    (``0..numOfHosts-1``). With the gate off these are ignored.
    """
    ctx = _Context.of(cluster, options)
    group = ctx.group(group_index)
    meta, spec = _copy_template(group.template)
    meta["generateName"] = names.worker_pod_generate_name(ctx.name, group.group_name)
    meta["namespace"] = ctx.namespace
    ray = spec["containers"][c.RAY_CONTAINER_INDEX]
    if options.init_container_injection:
        spec["initContainers"] = [*(spec.get("initContainers") or []), _wait_gcs_ready(ctx, ray)]
    meta.pop("name", None)  # several replicas: the API server names each from generateName
    params = _worker_params(ctx, group_index)
    labels = _pod_labels(ctx, c.NODE_TYPE_WORKER, group.group_name, meta.get("labels"), group.labels)
    if options.gate(c.GATE_RAY_MULTI_HOST_INDEXING):
        labels.update(_multi_host_labels(group.num_of_hosts, replica_index, replica_name, host_index))
    meta["labels"] = labels
    annotations = _template_annotations(ctx, meta)
    if ctx.ft_enabled:
        _append_env_if_absent(ray, c.RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_ENV, c.DEFAULT_WORKER_GCS_RECONNECT_TIMEOUT_S)
    _add_metrics_port(ray)
    if is_autoscaling_enabled(ctx.spec) and ctx.autoscaler_v2:
        spec["restartPolicy"] = c.RESTART_POLICY_NEVER
    if ctx.auth is not None:
        _add_token_auth(ctx, spec, ctx.auth)
    if tls.tls_enabled(ctx.spec, options):
        tls.configure_tls(spec, ctx.name, head=False)
    _add_collector(ctx, spec, head=False)
    _append_copies(spec, options.worker_sidecar_containers)
    pod = _build_pod(ctx, meta, annotations, spec, params, head=False, autoscaling=is_autoscaling_enabled(ctx.spec))
    return batch.decorate_pod(options.batch_scheduler, cluster, group.group_name, pod)


def should_delete_pod(pod: Mapping[str, Any]) -> bool:
    """KubeRay ``shouldDeletePod``: a Failed or Succeeded Pod goes; a Running Pod whose Ray container (by the name of
    ``containers[0]``) has terminated goes only when its restartPolicy is Never (otherwise the kubelet restarts it)."""
    status: Mapping[str, Any] = pod.get("status") or {}
    phase = status.get("phase")
    if phase in (c.POD_PHASE_FAILED, c.POD_PHASE_SUCCEEDED):
        return True
    spec: Mapping[str, Any] = pod.get("spec") or {}
    containers = spec.get("containers") or []
    if phase != c.POD_PHASE_RUNNING or not containers:
        return False
    ray_name = containers[c.RAY_CONTAINER_INDEX].get("name")
    terminated = None
    for container_status in status.get("containerStatuses") or []:
        if container_status.get("name") == ray_name:
            terminated = (container_status.get("state") or {}).get("terminated")
            break
    return terminated is not None and spec.get("restartPolicy") == c.RESTART_POLICY_NEVER


# --------------------------------------------------------------------------------------------------------------------
# What every step needs to know about the cluster
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    name: str
    namespace: str
    uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: RayClusterSpec
    options: BuildOptions
    fqdn: str  # <head service>.<namespace>.svc.<cluster domain>
    head_port: str  # head rayStartParams "port", else 6379 (KubeRay GetHeadPort)
    creator: str  # RayCluster, RayJob or RayService (label ray.io/originated-from-crd)

    @classmethod
    def of(cls, cluster: RayCluster, options: BuildOptions) -> _Context:
        if cluster.spec is None:
            raise ValueError("the RayCluster has no spec")
        metadata = cluster.metadata
        name = str(metadata.get("name") or "")
        namespace = str(metadata.get("namespace") or "")
        labels: Mapping[str, str] = metadata.get("labels") or {}
        spec = cluster.spec
        service = names.head_service_name(name, spec.head_group_spec.head_service)
        creator = labels.get(c.RAY_ORIGINATED_FROM_CRD_LABEL, "")
        return cls(
            name=name,
            namespace=namespace,
            uid=str(metadata.get("uid") or ""),
            labels=labels,
            annotations=metadata.get("annotations") or {},
            spec=spec,
            options=options,
            fqdn=names.service_fqdn(service, namespace, options.cluster_domain),
            head_port=(spec.head_group_spec.ray_start_params or {}).get("port", str(c.DEFAULT_GCS_SERVER_PORT)),
            creator=creator if creator in _CREATOR_KINDS else c.KIND_RAYCLUSTER,
        )

    def group(self, index: int) -> WorkerGroupSpec:
        groups = self.spec.worker_group_specs or []
        if not 0 <= index < len(groups):
            raise IndexError(f"the RayCluster has no worker group at index {index} ({len(groups)} groups)")
        return groups[index]

    @property
    def ft_enabled(self) -> bool:
        """KubeRay ``IsGCSFaultToleranceEnabled``: annotation ``ray.io/ft-enabled: true`` or FT options set."""
        annotation = str(self.annotations.get(c.RAY_FT_ENABLED_ANNOTATION, "")).lower() == "true"
        return annotation or self.spec.gcs_fault_tolerance_options is not None

    @property
    def auth(self) -> AuthOptions | None:
        """The auth options when token auth is on (KubeRay ``IsAuthEnabled``: mode ``token``)."""
        options = self.spec.auth_options
        return options if options is not None and options.mode == c.AUTH_MODE_TOKEN else None

    @property
    def autoscaler_v2(self) -> bool:
        """KubeRay ``IsAutoscalingV2Enabled``: ``autoscalerOptions.version: v2``."""
        options = self.spec.autoscaler_options
        return options is not None and options.version == c.AUTOSCALER_VERSION_V2

    @property
    def ray_ip(self) -> str:
        """KubeRay ``ExtractRayIPFromFQDN``: the head service name (deprecated RAY_IP)."""
        return self.fqdn.split(".")[0]


# --------------------------------------------------------------------------------------------------------------------
# rayStartParams
# --------------------------------------------------------------------------------------------------------------------


def _head_params(ctx: _Context) -> dict[str, str]:
    """The head's rayStartParams before the resource flags: group resources and labels, the missing defaults,
    ``no-monitor`` with the autoscaler, and the Redis credentials of GCS fault tolerance."""
    head = ctx.spec.head_group_spec
    params = dict(head.ray_start_params or {})
    update_params_from_group_resources(params, head.resources)
    update_params_from_group_labels(params, head.labels)
    set_missing_ray_start_params(params, head=True, head_port=ctx.head_port, fqdn=ctx.fqdn)
    if is_autoscaling_enabled(ctx.spec):
        params["no-monitor"] = "true"
    options = ctx.spec.gcs_fault_tolerance_options
    if ctx.ft_enabled and options is not None and not gcs_storage.embedded(ctx.spec):
        if options.redis_username is not None:
            params[c.RAY_START_REDIS_USERNAME_PARAM] = f"${c.REDIS_USERNAME}"
        if options.redis_password is not None:
            params[c.RAY_START_REDIS_PASSWORD_PARAM] = f"${c.REDIS_PASSWORD}"
    return params


def _worker_params(ctx: _Context, group_index: int) -> dict[str, str]:
    group = ctx.group(group_index)
    params = dict(group.ray_start_params or {})
    update_params_from_group_resources(params, group.resources)
    update_params_from_group_labels(params, group.labels)
    set_missing_ray_start_params(params, head=False, head_port=ctx.head_port, fqdn=ctx.fqdn)
    return params


# --------------------------------------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------------------------------------


def _copy_template(template: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    copied = copy.deepcopy(dict(template))
    meta: dict[str, Any] = copied.get("metadata") or {}
    spec: dict[str, Any] = copied.get("spec") or {}
    if not spec.get("containers"):
        raise ValueError("the Pod template has no containers (KubeRay validation requires at least one)")
    return meta, spec


def _pod_labels(
    ctx: _Context,
    node_type: str,
    group: str,
    template_labels: Mapping[str, str] | None,
    group_labels: Mapping[str, str] | None,
) -> dict[str, str]:
    """``labelPod`` over the template labels merged with the group's ``labels`` (the latter win)."""
    identifier = names.head_identifier(ctx.name) if node_type == c.NODE_TYPE_HEAD else names.worker_identifier(ctx.name)
    labels = {
        c.RAY_IS_RAY_NODE_LABEL: "yes",
        c.RAY_CLUSTER_LABEL: ctx.name,
        c.RAY_NODE_TYPE_LABEL: node_type,
        c.RAY_NODE_GROUP_LABEL: group,
        c.RAY_ID_LABEL: identifier,
        c.K8S_APP_NAME_LABEL: c.APPLICATION_NAME,
        c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME,
    }
    overrides = {**(template_labels or {}), **(group_labels or {})}
    labels.update({key: value for key, value in overrides.items() if key not in _PROTECTED_LABELS})
    return labels


def _multi_host_labels(
    hosts: int, replica_index: int | None, replica_name: str | None, host_index: int | None
) -> dict[str, str]:
    """The RayMultiHostIndexing labels: the replica index on every worker, name and host index for multi-host."""
    if replica_index is None:
        raise ValueError("replica_index is required while the RayMultiHostIndexing feature gate is on")
    labels = {c.RAY_WORKER_REPLICA_INDEX_LABEL: str(replica_index)}
    if hosts > 1:
        if replica_name is None or host_index is None:
            raise ValueError("replica_name and host_index are required for a worker group with numOfHosts > 1")
        labels[c.RAY_WORKER_REPLICA_NAME_LABEL] = replica_name
        labels[c.RAY_HOST_INDEX_LABEL] = str(host_index)
    return labels


def _template_annotations(ctx: _Context, meta: Mapping[str, Any]) -> dict[str, str]:
    """``initTemplateAnnotations``: the template's annotations, plus ``ray.io/overwrite-container-cmd: "true"`` when
    the cluster carries it."""
    annotations = dict(meta.get("annotations") or {})
    if str(ctx.annotations.get(c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION, "")).lower() == "true":
        annotations[c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION] = "true"
    return annotations


def _fill_missing(target: dict[str, str], defaults: Mapping[str, str]) -> None:
    for key, value in defaults.items():
        target.setdefault(key, value)


# --------------------------------------------------------------------------------------------------------------------
# Containers, env and volumes
# --------------------------------------------------------------------------------------------------------------------


def _env_entry(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def _field_env(name: str, field_path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def _has_env(container: Mapping[str, Any], name: str) -> bool:
    return any(entry.get("name") == name for entry in container.get("env") or [])


def _append_env(container: dict[str, Any], *entries: dict[str, Any]) -> None:
    container["env"] = [*(container.get("env") or []), *entries]


def _append_env_if_absent(container: dict[str, Any], name: str, value: str) -> None:
    if not _has_env(container, name):
        _append_env(container, _env_entry(name, value))


def _append_copies(spec: dict[str, Any], containers: Iterable[Mapping[str, Any]]) -> None:
    extra = [copy.deepcopy(dict(container)) for container in containers]
    if extra:
        spec["containers"] = [*spec["containers"], *extra]


def _add_metrics_port(ray: dict[str, Any]) -> None:
    """A ``metrics`` port (8080) for Prometheus, unless the Ray container already names one ``metrics``."""
    ports = ray.get("ports") or []
    if not any(port.get("name") == c.METRICS_PORT_NAME for port in ports):
        ray["ports"] = [*ports, {"name": c.METRICS_PORT_NAME, "containerPort": c.DEFAULT_METRICS_PORT}]


def _resources(cpu: str, memory: str) -> dict[str, Any]:
    return {"limits": {"cpu": cpu, "memory": memory}, "requests": {"cpu": cpu, "memory": memory}}


def _add_autoscaler(ctx: _Context, spec: dict[str, Any], ray: dict[str, Any]) -> None:
    """In-tree autoscaling on the head: service account, the ``autoscaler`` sidecar, v2 env and restartPolicy."""
    account = ((ctx.spec.head_group_spec.template.get("spec") or {}).get("serviceAccountName")) or ctx.name
    spec["serviceAccountName"] = names.check_name(str(account))
    sidecar = _autoscaler_container(ctx, ray.get("image"))
    spec["containers"] = [*spec["containers"], sidecar]
    if ctx.autoscaler_v2:
        _append_env(ray, _env_entry(c.RAY_ENABLE_AUTOSCALER_V2, "true"))
        spec["restartPolicy"] = c.RESTART_POLICY_NEVER
    elif _autoscaler_version(ctx) == c.AUTOSCALER_VERSION_V1:  # v1.7.0 setAutoscalerV1EnvVars (PR #4810)
        _append_env(ray, _env_entry(c.RAY_ENABLE_AUTOSCALER_V2, "false"))


def _autoscaler_version(ctx: _Context) -> str | None:
    options = ctx.spec.autoscaler_options
    return None if options is None else options.version


def _autoscaler_container(ctx: _Context, image: Any) -> dict[str, Any]:
    """``BuildAutoscalerContainer``, the auth env, the TLS env and mount, then ``mergeAutoscalerOverrides``."""
    container: dict[str, Any] = {
        "name": c.AUTOSCALER_CONTAINER_NAME,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "env": [
            _field_env(c.RAY_CLUSTER_NAME_ENV, f"metadata.labels['{c.RAY_CLUSTER_LABEL}']"),
            _field_env(c.RAY_CLUSTER_NAMESPACE_ENV, "metadata.namespace"),
            _field_env(c.RAY_HEAD_POD_NAME_ENV, "metadata.name"),
            _env_entry(c.KUBERAY_CRD_VER_ENV, c.KUBERAY_CRD_VERSION),
            _env_entry(c.KUBERAY_GEN_AUTOSCALER_START_CMD, c.AUTOSCALER_START_CMD),
        ],
        "command": container_command(login_shell=ctx.options.login_shell),
        "args": [c.AUTOSCALER_START_CMD],
        "resources": _resources(c.AUTOSCALER_DEFAULT_CPU, c.AUTOSCALER_DEFAULT_MEMORY),
    }
    if ctx.auth is not None:
        set_token_auth_env(ctx.name, container, ctx.auth)
    if tls.tls_enabled(ctx.spec, ctx.options):
        tls.set_container_tls_config(container)
    options = ctx.spec.autoscaler_options
    if options is not None:
        _merge_autoscaler_overrides(container, options)
    for key in ("image", "imagePullPolicy"):  # Go omits empty strings
        if not container.get(key):
            container.pop(key, None)
    return container


def _merge_autoscaler_overrides(container: dict[str, Any], options: AutoscalerOptions) -> None:
    """``mergeAutoscalerOverrides``: resources, image, pull policy and security context replace; env, envFrom and
    volume mounts are appended."""
    if options.resources is not None:
        container["resources"] = copy.deepcopy(options.resources)
    if options.image is not None:
        container["image"] = options.image
    if options.image_pull_policy is not None:
        container["imagePullPolicy"] = options.image_pull_policy
    for key, extra in (("env", options.env), ("envFrom", options.env_from), ("volumeMounts", options.volume_mounts)):
        if extra:
            container[key] = [*(container.get(key) or []), *copy.deepcopy(extra)]
    if options.security_context is not None:
        container["securityContext"] = copy.deepcopy(options.security_context)
    if options.command:  # v1.7.0 (PR #4835)
        container["command"] = list(options.command)
    if options.args:
        container["args"] = list(options.args)


def _credential_env(name: str, credential: RedisCredential) -> dict[str, Any]:
    """An env var from a Redis credential: its value and/or valueFrom, as Go's EnvVar marshals them."""
    entry: dict[str, Any] = {"name": name}
    if credential.value:
        entry["value"] = credential.value
    if credential.value_from is not None:
        entry["valueFrom"] = copy.deepcopy(credential.value_from)
    return entry


def _add_head_ft(ctx: _Context, ray: dict[str, Any], annotations: dict[str, str]) -> None:
    """GCS fault tolerance on the head, Redis backend (``configureRedisFT``)."""
    options: GcsFaultToleranceOptions | None = ctx.spec.gcs_fault_tolerance_options
    storage_ns = ctx.uid
    if c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION in ctx.annotations:
        storage_ns = str(ctx.annotations[c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION])
    if options is not None and options.external_storage_namespace:
        storage_ns = options.external_storage_namespace
    annotations[c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION] = storage_ns
    _append_env_if_absent(ray, c.RAY_EXTERNAL_STORAGE_NAMESPACE_ENV, storage_ns)
    if options is not None:
        _append_env(ray, _env_entry(c.RAY_REDIS_ADDRESS, options.redis_address or ""))
        if options.redis_username is not None:
            _append_env(ray, _credential_env(c.REDIS_USERNAME, options.redis_username))
        if options.redis_password is not None:
            _append_env(ray, _credential_env(c.REDIS_PASSWORD, options.redis_password))
        return
    # Annotation-only FT with a literal redis-password: the Redis cleanup Job reads it from REDIS_PASSWORD.
    password = (ctx.spec.head_group_spec.ray_start_params or {}).get(c.RAY_START_REDIS_PASSWORD_PARAM)
    if password is not None and not _has_env(ray, c.REDIS_PASSWORD):
        _append_env(ray, _env_entry(c.REDIS_PASSWORD, password))


def set_token_auth_env(cluster: str, container: dict[str, Any], auth: AuthOptions) -> None:
    """``SetContainerTokenAuthEnvVars``: RAY_AUTH_MODE=token, then the token from the auth Secret (``secretName``, else
    ``CheckName(cluster)``), or with K8s token auth RAY_ENABLE_K8S_TOKEN_AUTH=true and the ``ray-token`` mount. Each
    only if absent. Also used for the RayJob submitter."""
    _append_env_if_absent(container, c.RAY_AUTH_MODE_ENV, c.AUTH_MODE_TOKEN)
    if auth.enable_k8s_token_auth is True:
        _append_env_if_absent(container, c.RAY_ENABLE_K8S_TOKEN_AUTH_ENV, "true")
        mounts = container.get("volumeMounts") or []
        if not any(mount.get("name") == c.RAY_TOKEN_VOLUME_NAME for mount in mounts):
            mount = {"name": c.RAY_TOKEN_VOLUME_NAME, "mountPath": c.RAY_TOKEN_MOUNT_PATH, "readOnly": True}
            container["volumeMounts"] = [*mounts, mount]
        return
    secret = auth.secret_name or names.check_name(cluster)
    if not _has_env(container, c.RAY_AUTH_TOKEN_ENV):
        selector = {"secretKeyRef": {"name": secret, "key": c.RAY_AUTH_TOKEN_SECRET_KEY}}
        _append_env(container, {"name": c.RAY_AUTH_TOKEN_ENV, "valueFrom": selector})


def add_ray_token_volume(spec: dict[str, Any]) -> None:
    """``AddRayTokenVolume``: the projected service-account token volume ``ray-token``, unless one has that name."""
    volumes = spec.get("volumes") or []
    if not any(volume.get("name") == c.RAY_TOKEN_VOLUME_NAME for volume in volumes):
        projected = {"sources": [{"serviceAccountToken": {"path": "token"}}]}
        spec["volumes"] = [*volumes, {"name": c.RAY_TOKEN_VOLUME_NAME, "projected": projected}]


def _add_token_auth(ctx: _Context, spec: dict[str, Any], auth: AuthOptions) -> None:
    """``configureTokenAuth``: the Ray container, the token volume (K8s token auth) and ``wait-gcs-ready``."""
    set_token_auth_env(ctx.name, spec["containers"][c.RAY_CONTAINER_INDEX], auth)
    if auth.enable_k8s_token_auth is True:
        add_ray_token_volume(spec)
    for init in spec.get("initContainers") or []:
        if init.get("name") == c.WAIT_GCS_READY_INIT_CONTAINER:
            set_token_auth_env(ctx.name, init, auth)


def _add_collector(ctx: _Context, spec: dict[str, Any], *, head: bool) -> None:
    """The history-server collector sidecar (:mod:`raykube.builders.history`), with token auth's env and mount."""
    options = history.collector_options(ctx.spec, gate=ctx.options.gate(c.GATE_RAYCLUSTER_HISTORY_SERVER))
    if options is None:
        return
    sidecar = history.collector_container(
        options, head=head, cluster=ctx.name, namespace=ctx.namespace, fqdn=ctx.fqdn, cluster_labels=ctx.labels
    )
    if ctx.auth is not None:
        set_token_auth_env(ctx.name, sidecar, ctx.auth)
    spec["containers"] = [*spec["containers"], sidecar]


def _wait_gcs_ready(ctx: _Context, ray: Mapping[str, Any]) -> dict[str, Any]:
    """The ``wait-gcs-ready`` init container: the Ray container's image, pull policy, security context, user env and
    mounts; a loop on ``ray health-check`` against the head; 200m / 256Mi."""
    address = f"{ctx.fqdn}:{ctx.head_port}"
    init: dict[str, Any] = {
        "name": c.WAIT_GCS_READY_INIT_CONTAINER,
        "image": ray.get("image"),
        "imagePullPolicy": ray.get("imagePullPolicy"),
        "command": container_command(login_shell=ctx.options.login_shell),
        "args": [_WAIT_GCS_READY_SCRIPT.format(address=address)],
        "securityContext": copy.deepcopy(ray.get("securityContext")),
        "env": copy.deepcopy(ray.get("env")),
        "volumeMounts": copy.deepcopy(ray.get("volumeMounts")),
        "resources": _resources(c.WAIT_GCS_READY_CPU, c.WAIT_GCS_READY_MEMORY),
    }
    # Go omits empty strings and lists and nil pointers; a security context that is set, even {}, is kept.
    for key in ("image", "imagePullPolicy", "env", "volumeMounts"):
        if not init[key]:
            del init[key]
    if init["securityContext"] is None:
        del init["securityContext"]
    return init


def _add_empty_dir(
    container: dict[str, Any], spec: dict[str, Any], volume: str, mount_path: str, *, memory: bool
) -> None:
    """``addEmptyDir``: unless something is already mounted at ``mount_path``, add the emptyDir volume (if no volume
    of that name exists) and mount it. A memory-backed one is sized by the container's memory limit, else request."""
    mounts = container.get("volumeMounts") or []
    if any(mount.get("mountPath") == mount_path for mount in mounts):
        return
    volumes = spec.get("volumes") or []
    if not any(existing.get("name") == volume for existing in volumes):
        empty_dir: dict[str, Any] = {}
        if memory:
            empty_dir["medium"] = "Memory"
            size = _memory_limit_or_request(container)
            if size is not None:
                empty_dir["sizeLimit"] = size
        spec["volumes"] = [*volumes, {"name": volume, "emptyDir": empty_dir}]
    container["volumeMounts"] = [*mounts, {"mountPath": mount_path, "name": volume}]


def _memory_limit_or_request(container: Mapping[str, Any]) -> Any:
    """``findMemoryReqOrLimit`` (the limit wins), in the canonical form the API server stores."""
    resources: Mapping[str, Any] = container.get("resources") or {}
    for kind in ("limits", "requests"):
        values: Mapping[str, Any] = resources.get(kind) or {}
        if "memory" in values:
            try:
                return canonical(values["memory"])
            except QuantityError:
                return values["memory"]
    return None


def _ray_container_env(ctx: _Context, ray: dict[str, Any], *, head: bool, start_command: str) -> None:
    """``setContainerEnvVars``: operator default envs, then KubeRay's own, in KubeRay's order."""
    for default in ctx.options.default_container_envs:
        if not _has_env(ray, str(default.get("name"))):
            _append_env(ray, copy.deepcopy(dict(default)))
    ip = c.LOCAL_HOST if head else ctx.fqdn
    if not head:
        _append_env(ray, _env_entry(c.FQ_RAY_IP_ENV, ctx.fqdn), _env_entry(c.RAY_IP_ENV, ctx.ray_ip))
    _append_env(
        ray,
        _field_env(c.RAY_CLUSTER_NAME_ENV, f"metadata.labels['{c.RAY_CLUSTER_LABEL}']"),
        _field_env(c.RAY_CLUSTER_NAMESPACE_ENV, "metadata.namespace"),
        _field_env(c.RAY_CLOUD_INSTANCE_ID_ENV, "metadata.name"),
        _field_env(c.RAY_NODE_TYPE_NAME_ENV, f"metadata.labels['{c.RAY_NODE_GROUP_LABEL}']"),
        _env_entry(c.KUBERAY_GEN_RAY_START_CMD_ENV, start_command),
    )
    _append_env_if_absent(ray, c.RAY_PORT_ENV, ctx.head_port)
    if ctx.creator == c.KIND_RAYSERVICE:
        _append_env_if_absent(ray, c.RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO_ENV, "0")
        _append_env_if_absent(ray, c.RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS_ENV, "5")
        _append_env_if_absent(ray, c.RAY_SERVE_KV_TIMEOUT_S_ENV, "5")
    _append_env_if_absent(ray, c.RAY_ADDRESS_ENV, f"{ip}:{ctx.head_port}")
    _append_env_if_absent(ray, c.RAY_USAGE_STATS_KUBERAY_IN_USE_ENV, "1")
    if head:
        tags = f"kuberay_version={ctx.options.kuberay_version};kuberay_crd={ctx.creator}"
        _append_env(ray, _env_entry(c.RAY_USAGE_STATS_EXTRA_TAGS_ENV, tags))
    _append_env_if_absent(ray, c.RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE_ENV, "1")


def _user_command(ray: Mapping[str, Any]) -> str:
    """``convertCmdToString`` of the user's command then args: each element as `` <elem> ``."""
    parts = [*(ray.get("command") or []), *(ray.get("args") or [])]
    return "".join(f" {part} " for part in parts)


# --------------------------------------------------------------------------------------------------------------------
# BuildPod
# --------------------------------------------------------------------------------------------------------------------


def _build_pod(
    ctx: _Context,
    meta: dict[str, Any],
    annotations: dict[str, str],
    spec: dict[str, Any],
    params: dict[str, str],
    *,
    head: bool,
    autoscaling: bool,
) -> dict[str, Any]:
    """Default metadata, then ``BuildPod``, then the owner reference."""
    labels: dict[str, str] = meta["labels"]
    _fill_missing(labels, ctx.options.default_pod_labels)
    _fill_missing(annotations, ctx.options.default_pod_annotations)
    if ctx.creator == c.KIND_RAYSERVICE:
        labels[c.RAY_SERVE_LABEL] = c.RAY_SERVE_LABEL_FALSE if head else c.RAY_SERVE_LABEL_TRUE
    ray = spec["containers"][c.RAY_CONTAINER_INDEX]
    if c.PLASMA_DIRECTORY_PARAM not in params:
        _add_empty_dir(ray, spec, c.SHARED_MEMORY_VOLUME_NAME, c.SHARED_MEMORY_MOUNT_PATH, memory=True)
    if head and autoscaling:
        sidecar = next(x for x in spec["containers"] if x.get("name") == c.AUTOSCALER_CONTAINER_NAME)
        _add_empty_dir(ray, spec, c.RAY_LOG_VOLUME_NAME, c.RAY_LOG_MOUNT_PATH, memory=False)
        _add_empty_dir(sidecar, spec, c.RAY_LOG_VOLUME_NAME, c.RAY_LOG_MOUNT_PATH, memory=False)
    collector = history.has_collector(spec, gate=ctx.options.gate(c.GATE_RAYCLUSTER_HISTORY_SERVER))
    if collector is not None:  # the collector reads Ray's logs
        _add_empty_dir(ray, spec, c.RAY_LOG_VOLUME_NAME, c.RAY_LOG_MOUNT_PATH, memory=False)
        _add_empty_dir(collector, spec, c.RAY_LOG_VOLUME_NAME, c.RAY_LOG_MOUNT_PATH, memory=False)

    user_command = _user_command(ray)
    start_command = generate_ray_start_command(params, head=head, resources=ray.get("resources"))
    overwrite = str(annotations.get(c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION, "")).lower() == "true"
    if not overwrite and "ray start" not in user_command:
        generated = f"{c.RAY_START_ULIMIT_CMD}; {start_command}"
        ray["command"] = container_command(login_shell=ctx.options.login_shell)
        ray["args"] = [f"{user_command} && {generated}" if user_command else generated]

    for init in spec.get("initContainers") or []:
        _append_env(init, _env_entry(c.FQ_RAY_IP_ENV, ctx.fqdn), _env_entry(c.RAY_IP_ENV, ctx.ray_ip))
    _ray_container_env(ctx, ray, head=head, start_command=start_command)
    if collector is not None:
        history.add_ray_event_env(ray)
    if ctx.options.probes_injection:
        inject_probes(
            ray,
            head=head,
            from_rayservice=ctx.creator == c.KIND_RAYSERVICE,
            params=params,
            ray_version=ctx.spec.ray_version,
        )

    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    owner = names.owner_reference(c.KIND_RAYCLUSTER, ctx.name, ctx.uid)
    meta["ownerReferences"] = [*(meta.get("ownerReferences") or []), owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


# --------------------------------------------------------------------------------------------------------------------
# Hash helpers

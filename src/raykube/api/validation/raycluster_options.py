"""RayCluster validation, the cluster-wide options: ``autoscalerOptions``, ``historyServerOptions``, ``authOptions``,
``networkPolicy`` and ``tlsOptions``.

Part of :mod:`.raycluster` (whose docstring lists the rules and their KubeRay sources), split off by seam; its
:func:`~raykube.api.validation.raycluster._check_cluster_spec` calls these checks after the groups and GCS fault
tolerance, in ``ValidateRayClusterSpec``'s order: autoscaler (with the autoscaler v2 restartPolicy rule over the head
and every worker), history server (v1.7.0, ``validateCollectorOptions``), auth, network policy (v1.7.0,
``validateNetworkPolicy``) and TLS (v1.7.0, ``validateTLSOptions``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from raykube.api import constants as c
from raykube.api.validation.common import (
    _REQUIRED,
    _child,
    _dns1123_label_errors,
    _Errors,
    _View,
)
from raykube.api.validation.raycluster_groups import (
    _check_version_gate,
    _Container,
    _EnvVar,
    _Group,
    _Mount,
    _read_env,
    _read_mounts,
    _Template,
)
from raykube.golang.fmt import sprint_strings
from raykube.golang.strconv import quote


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


def _check_history_server(
    errs: _Errors, spec: _View, head: _Group, workers: Sequence[_Group], gates: Mapping[str, bool]
) -> None:
    options = spec.obj("historyServerOptions")
    collector = options.obj("collectorOptions")
    image = collector.opt_text("image")
    collector.opt_text("imagePullPolicy")
    collector.obj("resources")
    env = _read_env(collector, "env")
    if not options.present:
        return
    if not gates.get(c.GATE_RAYCLUSTER_HISTORY_SERVER, False):
        errs.kuberay(options.path, f"{c.GATE_RAYCLUSTER_HISTORY_SERVER} feature gate is not enabled")
        return  # v1.7.0 checks nothing more without the gate
    if not collector.present:
        errs.kuberay(collector.path, "historyServerOptions.collectorOptions must be set")
        return
    if not image:
        errs.kuberay(collector.at("image"), "historyServerOptions.collectorOptions.image must be set")
    _check_collector_env(errs, collector.at("env"), {entry.name: entry for entry in env})
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


def _check_collector_env(errs: _Errors, env_path: str, env: Mapping[str, _EnvVar]) -> None:
    """``validateCollectorOptions`` on ``collectorOptions.env`` (by name, the last entry of a name winning): no env
    KubeRay manages, a literal ``STORAGE_BACKEND``, and the settings its backend needs (set: a value or valueFrom)."""
    for name in c.COLLECTOR_MANAGED_ENVS:
        if name in env:
            errs.kuberay(
                env[name].path,
                f"historyServerOptions.collectorOptions.env must not contain {name}: it is managed by KubeRay and "
                "injected automatically into the collector container",
            )
    backend_env = env.get(c.STORAGE_BACKEND_ENV)
    if backend_env is None or not backend_env.value:
        errs.kuberay(
            backend_env.path if backend_env is not None else env_path,
            f"{c.STORAGE_BACKEND_ENV} environment variable must be set with a literal string value in "
            "historyServerOptions.collectorOptions.env",
        )
        return

    def missing(name: str) -> bool:
        entry = env.get(name)
        return entry is None or not (entry.value or entry.value_from)

    backend = backend_env.value.upper()  # Go strings.ToUpper: ASCII letters are what matter here
    where = f"when {c.STORAGE_BACKEND_ENV} is {backend}"
    required: tuple[str, ...] = ()
    if backend == "GCS":
        required = (c.GCS_BUCKET_ENV,)
    elif backend == "S3":
        required = (c.S3_REGION_ENV,)
    elif backend == "ALIYUNOSS":
        required = c.ALIYUN_OSS_ENVS
    elif backend == "AZUREBLOB":
        connection, account, mode_env = (
            c.AZURE_STORAGE_CONNECTION_STRING_ENV,
            c.AZURE_STORAGE_ACCOUNT_URL_ENV,
            c.AZURE_STORAGE_AUTH_MODE_ENV,
        )
        mode_entry = env.get(mode_env)
        mode = mode_entry.value.strip().lower() if mode_entry is not None else ""
        if mode == "connection_string" and missing(connection):
            message = f"{connection} environment variable must be set {where} and {mode_env} is connection_string"
            errs.kuberay(env_path, message)
        elif mode in ("workload_identity", "default") and missing(account):
            errs.kuberay(env_path, f"{account} environment variable must be set {where} and {mode_env} is {mode}")
        elif (
            mode not in ("connection_string", "workload_identity", "default")
            and missing(connection)
            and missing(account)
        ):
            errs.kuberay(env_path, f"either {connection} or {account} environment variable must be set {where}")
    for name in required:
        if missing(name):
            errs.kuberay(env_path, f"{name} environment variable must be set {where}")


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

    def check_rules(label: str, rules: _View) -> None:
        if mode == c.NETWORK_POLICY_DENY_ALL_EGRESS and rules.array("ingressRules"):
            errs.kuberay(
                rules.at("ingressRules"),
                f"{label}.ingressRules cannot be set when mode is {quoted_mode} (ingress is not restricted)",
            )
        if mode == c.NETWORK_POLICY_DENY_ALL_INGRESS and rules.array("egressRules"):
            errs.kuberay(
                rules.at("egressRules"),
                f"{label}.egressRules cannot be set when mode is {quoted_mode} (egress is not restricted)",
            )

    # validateNetworkPolicy's order: head, worker, every group name, then each workerGroups entry.
    for label, rules in rule_sets:
        check_rules(label, rules)
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
        check_rules(label, item)
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
        return  # v1.7.0 validateTLSOptions checks nothing more without the gate (IsTLSEnabled is false)
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

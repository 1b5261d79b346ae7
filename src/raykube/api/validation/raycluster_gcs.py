"""RayCluster validation, GCS fault tolerance: ``gcsFaultToleranceOptions``, the Redis settings it replaces, and
its backend.

Part of :mod:`.raycluster` (whose docstring lists the rules and their KubeRay sources), split off by seam; its
:func:`~raykube.api.validation.raycluster._check_cluster_spec` calls :func:`_check_gcs_ft` after the worker groups, as
``ValidateRayClusterSpec`` does. Here: the ``ray.io/ft-enabled`` annotation against the options, ``RAY_REDIS_ADDRESS``
without them, the Redis password, address, username and external storage namespace set elsewhere than in the options,
and the embedded ``rocksdb`` backend's rules (v1.7.0, ``validateGcsFaultToleranceBackend``).
"""

from __future__ import annotations

from collections.abc import Mapping

from raykube.api import constants as c
from raykube.api.validation.common import (
    _Errors,
    _key,
    _View,
)
from raykube.api.validation.raycluster_groups import (
    _Group,
    _Template,
)
from raykube.golang.strconv import quote


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

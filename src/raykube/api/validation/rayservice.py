"""RayService validation: metadata and spec (with its ``rayClusterConfig``).

Mirrors KubeRay v1.6.1 ``ray-operator/controllers/ray/utils/validation.go``: ``ValidateRayServiceMetadata`` (with
``validateInitializingTimeout``) and ``ValidateRayServiceSpec`` (with ``ValidateClusterUpgradeOptions``), plus the
rules of the RayService CRD. The embedded cluster spec is checked by
:func:`raykube.api.validation.raycluster._check_cluster_spec`, its messages prefixed
"The RayService spec is invalid: ". Tags as in :mod:`raykube.api.validation`; "v1.7.0" marks a rule of KubeRay
v1.7.0's validation.go that v1.6.1 does not have.

Metadata (``ValidateRayServiceMetadata``): the name is at most 47 characters and a DNS-1035 label (with
``generateName`` the length counts the 5 characters the API server appends: own); the
``ray.io/initializing-timeout`` annotation is a positive Go duration or a positive integer.

Spec (``ValidateRayServiceSpec``): ``rayClusterConfig`` is required (CRD) and valid, without K8s token auth; its
``headGroupSpec.headService.metadata.name`` is not set; ``upgradeStrategy.type`` is NewCluster,
NewClusterWithIncrementalUpgrade or None; ``rayClusterDeletionDelaySeconds`` ≥ 0; with the incremental upgrade (and
its gate on, ``ValidateClusterUpgradeOptions``): autoscaling on, ``clusterUpgradeOptions`` set,
``0 ≤ maxSurgePercent ≤ 100``, ``0 ≤ stepSizePercent ≤ 100`` and ``stepSizePercent ≤ maxSurgePercent`` (the last
v1.7.0), ``intervalSeconds`` > 0, ``gatewayClassName`` set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from raykube.api import constants as c
from raykube.api.validation.common import (
    _REQUIRED,
    FieldError,
    _check_managed_by,
    _check_name,
    _child,
    _Errors,
    _gates,
    _key,
    _read_metadata,
    _root,
    _string_map,
    _View,
)
from raykube.api.validation.raycluster import _check_cluster_spec, _ClusterSummary
from raykube.golang.duration import parse_duration
from raykube.golang.errors import GoError
from raykube.golang.strconv import atoi

__all__ = ["validate_rayservice", "validate_rayservice_metadata", "validate_rayservice_spec"]

_RAYSERVICE_SPEC_INVALID: Final = "The RayService spec is invalid: "


def validate_rayservice_metadata(metadata: object, *, path: str = "metadata") -> list[FieldError]:
    """RayService name rules and the initializing-timeout annotation (``ValidateRayServiceMetadata``)."""
    errs = _Errors()
    view, annotations, _ = _read_metadata(errs, metadata, path)
    prefix = "The RayService metadata is invalid: "
    _check_name(errs, view, kind=c.KIND_RAYSERVICE, limit=c.MAX_RAYSERVICE_NAME_LENGTH, prefix=prefix)
    timeout = annotations.get(c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION, "")
    if timeout:
        reason = _initializing_timeout_error(timeout)
        if reason:
            errs.kuberay(
                _key(view.at("annotations"), c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION),
                f"{prefix}RayService annotations is invalid: {reason}",
            )
    return errs.items


def _initializing_timeout_error(value: str) -> str:
    key = c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION
    try:
        duration = parse_duration(value)
    except GoError:
        pass
    else:
        return f"annotation {key} must be a positive duration, got: {value}" if duration <= 0 else ""
    try:
        seconds = atoi(value)
    except GoError:
        pass
    else:
        return f"annotation {key} must be a positive integer (seconds), got: {value}" if seconds <= 0 else ""
    return (
        f"annotation {key} has invalid format: {value}. "
        "Expected Go duration format (e.g., '5m', '1h') or positive integer seconds"
    )


def _check_incremental_upgrade(errs: _Errors, upgrade: _View, *, autoscaling: bool, autoscaling_path: str) -> None:
    if not autoscaling:
        errs.kuberay(autoscaling_path, "Ray Autoscaler is required for NewClusterWithIncrementalUpgrade")
    options = upgrade.obj("clusterUpgradeOptions")
    max_surge = options.integer("maxSurgePercent")
    step = options.integer("stepSizePercent")
    interval = options.integer("intervalSeconds")
    gateway_class = options.text("gatewayClassName")
    if not options.present:
        errs.kuberay(options.path, "ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade")
        return
    if max_surge is None:
        max_surge = c.DEFAULT_MAX_SURGE_PERCENT
    surge_ok = 0 <= max_surge <= 100
    if not surge_ok:
        errs.kuberay(options.at("maxSurgePercent"), "maxSurgePercent must be between 0 and 100")
    if step is None or not 0 <= step <= 100:
        errs.kuberay(options.at("stepSizePercent"), "stepSizePercent must be between 0 and 100")
    elif surge_ok and step > max_surge:
        errs.kuberay(options.at("stepSizePercent"), "stepSizePercent must be less than or equal to maxSurgePercent")
    if interval is None or interval <= 0:
        errs.kuberay(options.at("intervalSeconds"), "intervalSeconds must be greater than 0")
    if not gateway_class:
        errs.kuberay(
            options.at("gatewayClassName"), "gatewayClassName is required for NewClusterWithIncrementalUpgrade"
        )


def _check_rayservice_spec(
    errs: _Errors,
    spec_value: object,
    *,
    annotations: Mapping[str, str],
    annotations_path: str,
    gates: Mapping[str, bool],
    path: str,
) -> None:
    spec = _View.of(errs, spec_value, path)
    _check_managed_by(errs, spec)
    spec.text("serveConfigV2")
    spec.obj("serveService")
    spec.flag("excludeHeadPodFromServeSvc")
    spec.flag("suspend")
    spec.integer("serviceUnhealthySecondThreshold")
    spec.integer("deploymentUnhealthySecondThreshold")
    deletion_delay = spec.integer("rayClusterDeletionDelaySeconds")
    upgrade = spec.obj("upgradeStrategy")
    upgrade_type = upgrade.opt_text("type")

    summary: _ClusterSummary | None = None
    if spec.present and not spec.has("rayClusterConfig"):
        errs.schema(spec.at("rayClusterConfig"), _REQUIRED)
    cluster_errs = _Errors()
    if spec.has("rayClusterConfig"):
        summary = _check_cluster_spec(
            cluster_errs.wrapped(errs.prefix + _RAYSERVICE_SPEC_INVALID),
            spec.raw("rayClusterConfig"),
            annotations=annotations,
            annotations_path=annotations_path,
            gates=gates,
            path=spec.at("rayClusterConfig"),
            embedded=True,
        )
    if summary is not None and summary.k8s_token_auth:
        errs.kuberay(
            summary.k8s_token_auth_path,
            "The RayService spec is invalid: K8s token auth mode is currently not supported for RayService",
        )
    errs.extend(cluster_errs)
    if summary is not None and summary.head_service_name:
        errs.kuberay(
            summary.head_service_name_path,
            "The RayService spec is invalid: spec.rayClusterConfig.headGroupSpec.headService.metadata.name should "
            "not be set",
        )
    valid_types = (c.RAYSERVICE_UPGRADE_INCREMENTAL, c.RAYSERVICE_UPGRADE_NEW_CLUSTER, c.RAYSERVICE_UPGRADE_NONE)
    if upgrade_type is not None and upgrade_type not in valid_types:
        errs.kuberay(
            upgrade.at("type"),
            f"The RayService spec is invalid: Spec.UpgradeStrategy.Type value {upgrade_type} is invalid, valid options "
            f"are {valid_types[0]}, {valid_types[1]}, or {valid_types[2]}",
        )
    if deletion_delay is not None and deletion_delay < 0:
        errs.kuberay(
            spec.at("rayClusterDeletionDelaySeconds"),
            "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, "
            f"got {deletion_delay}",
        )
    if upgrade_type == c.RAYSERVICE_UPGRADE_INCREMENTAL and gates.get(c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE, False):
        _check_incremental_upgrade(
            errs.wrapped(_RAYSERVICE_SPEC_INVALID),
            upgrade,
            autoscaling=summary is not None and summary.autoscaling,
            autoscaling_path=_child(spec.at("rayClusterConfig"), "enableInTreeAutoscaling"),
        )
    else:
        options = upgrade.obj("clusterUpgradeOptions")
        for key in ("maxSurgePercent", "stepSizePercent", "intervalSeconds"):
            options.integer(key)
        options.text("gatewayClassName")


def validate_rayservice_spec(
    spec: object,
    *,
    annotations: Mapping[str, str] | None = None,
    features: Mapping[str, bool] | None = None,
    path: str = "spec",
    message_prefix: str = "",
    annotations_path: str = "metadata.annotations",
) -> list[FieldError]:
    """The RayService spec rules (``ValidateRayServiceSpec``), including its ``rayClusterConfig``."""
    errs = _Errors()
    _check_rayservice_spec(
        errs.wrapped(message_prefix),
        spec,
        annotations=_string_map(annotations),
        annotations_path=annotations_path,
        gates=_gates(features),
        path=path,
    )
    return errs.items


def validate_rayservice(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule for a whole RayService: metadata and spec (with its cluster template)."""
    errs = _Errors()
    root = _root(errs, obj, c.KIND_RAYSERVICE)
    if root is None:
        return errs.items
    for error in validate_rayservice_metadata(root.raw("metadata")):
        errs.kuberay(error.path, error.message)
    _, annotations, _ = _read_metadata(_Errors(), root.raw("metadata"), "metadata")
    spec_value = root.raw("spec")
    _check_rayservice_spec(
        errs,
        {} if spec_value is None else spec_value,
        annotations=annotations,
        annotations_path="metadata.annotations",
        gates=_gates(features),
        path="spec",
    )
    return errs.items

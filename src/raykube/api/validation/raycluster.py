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
* ``historyServerOptions`` needs the RayClusterHistoryServer gate, ``collectorOptions`` and its ``image``; its env
  may not set what KubeRay injects (``POD_IP``, ``FQ_RAY_IP``, ``RAY_CLUSTER_NAME``, ...), must set
  ``STORAGE_BACKEND`` literally and the settings that backend needs (GCS, S3, AZUREBLOB by auth mode, ALIYUNOSS);
  no container named ``ray-history-collector`` in any template (v1.7.0, ``validateCollectorOptions``).
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

Not implemented: rules KubeRay enforces only at reconcile time.

Layout. This module holds the public validators and :func:`_check_cluster_spec`, which runs every spec check in the
order of ``ValidateRayClusterSpec`` (the order of the messages follows it, and is compared with KubeRay's); the checks
live beside it, by seam: :mod:`.raycluster_groups` (the Pod template reads, the head and worker groups, replicas,
worker idle timeout, priority and suspend), :mod:`.raycluster_gcs` (GCS fault tolerance and its backend) and
:mod:`.raycluster_options` (autoscaler, history server, auth, network policy, TLS).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from raykube.api import constants as c
from raykube.api.validation.common import (
    FieldError,
    _check_managed_by,
    _check_name,
    _child,
    _Errors,
    _gates,
    _read_metadata,
    _root,
    _string_map,
    _View,
)
from raykube.api.validation.raycluster_gcs import _check_gcs_ft
from raykube.api.validation.raycluster_groups import (
    _autoscaler_v2_by_env,
    _check_group_common,
    _check_group_suspend,
    _check_workers,
    _read_head,
    _Template,
)
from raykube.api.validation.raycluster_options import (
    _check_auth,
    _check_autoscaler,
    _check_history_server,
    _check_network_policy,
    _check_tls,
)

__all__ = [
    "validate_raycluster",
    "validate_raycluster_metadata",
    "validate_raycluster_spec",
    "validate_raycluster_status",
    "validate_raycluster_upgrade_strategy",
]


# --------------------------------------------------------------------------------------------------------------------
# The spec: every check, in KubeRay's order
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _ClusterSummary:
    """What RayJob and RayService rules need to know of their embedded cluster spec."""

    autoscaling: bool
    head_template: _Template
    k8s_token_auth: bool
    k8s_token_auth_path: str
    head_service_name: str
    head_service_name_path: str


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

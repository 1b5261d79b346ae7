"""The embedded (RocksDB) GCS fault-tolerance backend: what it puts on the head Pod, and the PersistentVolumeClaim
that holds the store (KubeRay v1.7.0 ``common/pod.go`` ``configureEmbeddedFT``, ``common/gcs_ft.go``
``BuildGCSStoragePVC``, ``raycluster_controller.go`` ``reconcileGCSStoragePVC`` and its helpers,
``utils/util.go`` ``IsGCSFaultToleranceEmbedded``/``GetGCSStoragePVCName``; gate ``GCSFaultToleranceEmbeddedStorage``,
alpha and off, without which validation refuses ``backend: rocksdb``).

Pure: a :class:`~raykube.api.resources.RayCluster` in, dicts out; the controller (``raykube.controllers.children``)
decides what to write.

* Head Pod, with ``gcsFaultToleranceOptions.backend: rocksdb``: ``RAY_gcs_storage=rocksdb`` and
  ``RAY_gcs_storage_path=/data/gcs`` on the Ray container (each only if absent), a ``gcs-storage`` mount at
  ``/data/gcs`` (with ``storage.subPath``), and the Pod volume ``gcs-storage`` on the claim ``storage.claimName`` or
  ``<cluster>-gcs-pvc``. No Redis env, no external-storage-namespace annotation. Workers are not touched here (they
  keep ``RAY_gcs_rpc_server_reconnect_timeout_s``, as with Redis).
* The claim the operator makes when ``claimName`` is not set: label ``ray.io/cluster``; ``storage.accessModes`` or
  ``[ReadWriteOnce]``; ``storage.storageClassName`` (none: the cluster's default class); ``storage.size`` or ``1Gi``.
  It is owned by the RayCluster (garbage-collected with it) unless ``storage.deletionPolicy: Retain``.
* A claim that already exists is adopted as it is; :func:`pvc_drift` names what differs in the fields Kubernetes
  cannot change in place (size, an explicitly set storageClassName, accessModes as a set), in v1.7.0's words.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import GcsEmbeddedStorage, RayClusterSpec
from raykube.api.resources import RayCluster
from raykube.builders import names
from raykube.golang.quantity import QuantityError, marshaled, parse_quantity

__all__ = [
    "OwnershipError",
    "add_to_head",
    "claim_name",
    "embedded",
    "owned_as_wanted",
    "pvc",
    "pvc_drift",
    "retain_on_deletion",
    "users_claim",
]


class OwnershipError(Exception):
    """The claim is controlled by another object (controller-runtime's ``AlreadyOwnedError``)."""


def embedded(spec: RayClusterSpec | None) -> bool:
    """``IsGCSFaultToleranceEmbedded``: GCS FT options with ``backend: rocksdb``."""
    options = spec.gcs_fault_tolerance_options if spec is not None else None
    return options is not None and options.backend == c.GCS_FT_BACKEND_ROCKSDB


def _storage(cluster: RayCluster) -> GcsEmbeddedStorage | None:
    options = cluster.spec.gcs_fault_tolerance_options if cluster.spec is not None else None
    return options.storage if options is not None else None


def _cluster_name(cluster: RayCluster) -> str:
    return str(cluster.metadata.get("name") or "")


def users_claim(cluster: RayCluster) -> bool:
    """``storage.claimName`` is set: the user's claim, never created, owned or deleted by the operator."""
    storage = _storage(cluster)
    return storage is not None and bool(storage.claim_name)


def claim_name(cluster: RayCluster) -> str:
    """``GetGCSStoragePVCName``: ``storage.claimName``, else ``<cluster>-gcs-pvc``."""
    storage = _storage(cluster)
    if storage is not None and storage.claim_name:
        return storage.claim_name
    return _cluster_name(cluster) + c.GCS_STORAGE_PVC_SUFFIX


def retain_on_deletion(cluster: RayCluster) -> bool:
    """``storage.deletionPolicy: Retain``: the operator's claim carries no owner reference and outlives the cluster."""
    storage = _storage(cluster)
    return storage is not None and storage.deletion_policy == c.GCS_STORAGE_RETAIN


def add_to_head(cluster: RayCluster, pod_spec: dict[str, Any], ray: dict[str, Any]) -> None:
    """``configureEmbeddedFT``: the backend's env, mount and volume on a head Pod ``pod_spec`` whose Ray container is
    ``ray`` (both changed in place)."""
    env = list(ray.get("env") or [])
    for name, value in (
        (c.RAY_GCS_STORAGE, c.GCS_STORAGE_ROCKSDB_VALUE),
        (c.RAY_GCS_STORAGE_PATH, c.GCS_STORAGE_MOUNT_PATH),
    ):
        if not any(entry.get("name") == name for entry in env):
            env.append({"name": name, "value": value})
    ray["env"] = env
    storage = _storage(cluster)
    mount: dict[str, Any] = {"name": c.GCS_STORAGE_VOLUME_NAME, "mountPath": c.GCS_STORAGE_MOUNT_PATH}
    if storage is not None and storage.sub_path:
        mount["subPath"] = storage.sub_path
    ray["volumeMounts"] = [*(ray.get("volumeMounts") or []), mount]
    volume = {"name": c.GCS_STORAGE_VOLUME_NAME, "persistentVolumeClaim": {"claimName": claim_name(cluster)}}
    pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), volume]


def pvc(cluster: RayCluster) -> dict[str, Any]:
    """``BuildGCSStoragePVC``: the claim the operator makes, without an owner reference (the caller decides)."""
    storage = _storage(cluster)
    access_modes = list(storage.access_modes) if storage is not None and storage.access_modes else None
    size = storage.size if storage is not None and storage.size is not None else c.GCS_STORAGE_DEFAULT_SIZE
    spec: dict[str, Any] = {
        "accessModes": access_modes or list(c.GCS_STORAGE_DEFAULT_ACCESS_MODES),
        "resources": {"requests": {"storage": marshaled(size)}},
    }
    if storage is not None and storage.storage_class_name is not None:
        spec["storageClassName"] = storage.storage_class_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim_name(cluster),
            "namespace": cluster.metadata.get("namespace"),
            "labels": {c.RAY_CLUSTER_LABEL: _cluster_name(cluster)},
        },
        "spec": spec,
    }


def _requested(claim: Mapping[str, Any]) -> tuple[Any, str]:
    """The claim's requests.storage: its value (for comparing) and Go's ``Quantity.String()`` (for the message)."""
    text = (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    if text is None:
        return 0, "0"
    try:
        return parse_quantity(text).value, marshaled(text)
    except QuantityError:  # not something the API server stores; compare it as text
        return str(text), str(text)


def _go_list(values: Any) -> str:
    """Go's ``%v`` of a string slice: ``[a b]``."""
    return "[" + " ".join(str(v) for v in values or []) + "]"


def pvc_drift(desired: Mapping[str, Any], live: Mapping[str, Any]) -> str:
    """``gcsStoragePVCDrift``: what differs between the claim wanted and the live one in the fields that cannot be
    changed in place, joined by ``; ``; empty when nothing does. storageClassName is compared only when set (the
    API server writes the default class into a claim that named none)."""
    diffs: list[str] = []
    want_value, want_text = _requested(desired)
    got_value, got_text = _requested(live)
    if want_value != got_value:
        diffs.append(f"requested size {want_text} != current {got_text}")
    want_spec, got_spec = desired.get("spec") or {}, live.get("spec") or {}
    want_class, got_class = want_spec.get("storageClassName"), got_spec.get("storageClassName")
    if want_class is not None and want_class != got_class:
        shown = "<default>" if got_class is None else got_class
        diffs.append(f"storageClassName {want_class} != current {shown}")
    want_modes, got_modes = list(want_spec.get("accessModes") or []), list(got_spec.get("accessModes") or [])
    if sorted(want_modes) != sorted(got_modes):
        diffs.append(f"accessModes {_go_list(want_modes)} != current {_go_list(got_modes)}")
    return "; ".join(diffs)


def _refers_to_cluster(ref: Mapping[str, Any], cluster: RayCluster) -> bool:
    """controller-runtime's ``referSameObject``: same API group, kind and name (not uid)."""
    group = str(ref.get("apiVersion", "")).rpartition("/")[0]
    return group == c.API_GROUP and ref.get("kind") == c.KIND_RAYCLUSTER and ref.get("name") == _cluster_name(cluster)


def owned_as_wanted(cluster: RayCluster, live: Mapping[str, Any]) -> dict[str, Any] | None:
    """``reconcileGCSStoragePVCOwnerRef``: the live operator-managed claim with its owner references changed to follow
    ``deletionPolicy`` (the cluster's controller reference removed for Retain, set otherwise), or None when they
    already do. Raises :class:`OwnershipError` when another object controls the claim."""
    uid = str(cluster.metadata.get("uid") or "")
    refs = [dict(r) for r in (live.get("metadata") or {}).get("ownerReferences") or []]
    controlled = any(r.get("controller") and r.get("uid") == uid for r in refs)
    retain = retain_on_deletion(cluster)
    if retain and controlled:
        kept = [r for r in refs if not (r.get("controller") and r.get("uid") == uid)]
    elif not retain and not controlled:
        other = next((r for r in refs if r.get("controller") and not _refers_to_cluster(r, cluster)), None)
        if other is not None:
            meta = live.get("metadata") or {}
            raise OwnershipError(
                f"Object {meta.get('namespace', '')}/{meta.get('name', '')} is already owned by another "
                f"{other.get('kind', '')} controller {other.get('name', '')}"
            )
        # SetControllerReference: a reference to the same cluster (an earlier incarnation's uid) is replaced
        kept = [r for r in refs if not _refers_to_cluster(r, cluster)]
        kept.append(names.owner_reference(c.KIND_RAYCLUSTER, _cluster_name(cluster), uid))
    else:
        return None
    body = copy.deepcopy(dict(live))
    body["metadata"] = {**body.get("metadata", {}), "ownerReferences": kept}
    return body

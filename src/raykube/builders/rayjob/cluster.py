"""The RayJob's RayCluster and head Service, as KubeRay v1.6.1 builds them.

* :func:`rayjob_cluster` is ``constructRayClusterForRayJob`` (``ray-operator/controllers/ray/rayjob_controller.go``)
  plus the batch scheduler's metadata ``getOrCreateRayClusterInstance`` adds in K8sJobMode: the RayCluster
  ``<rayjob>-<rand5>`` with the RayJob's labels and annotations, a copy of ``spec.rayClusterSpec`` and, in
  SidecarMode, the submitter container on the head.
* :func:`rayjob_head_service` is ``common.BuildHeadServiceForRayJob`` (``controllers/ray/common/service.go``):
  ``<rayjob>-head-svc``, the cluster's head Service relabelled for the RayJob and owned by it.

KubeRay's quirk kept:

* In SidecarMode ``RAY_DASHBOARD_ADDRESS`` is empty (the cluster is built before the dashboard URL is known), the
  head gets ``restartPolicy: Never`` (with the v1.7.0 ``SidecarSubmitterRestart`` gate too: only the submitter
  container's own ``restartPolicy`` says OnFailure), and no batch scheduler metadata goes on the cluster (K8sJobMode
  only).
"""

from __future__ import annotations

from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RayCluster, RayJob
from raykube.builders import batch, names, services
from raykube.builders.options import BuildOptions
from raykube.builders.rayjob.common import (
    RayJobBuildError,
    _mode,
    _name,
    _namespace,
    _originated_labels,
    _rayjob_owner,
    _spec,
)
from raykube.builders.rayjob.submitters import sidecar_container

__all__ = ["rayjob_cluster", "rayjob_head_service"]


def rayjob_cluster(
    rayjob: RayJob,
    cluster_name: str,
    options: BuildOptions,
    *,
    job_id: str | None = None,
    dashboard_url: str | None = None,
) -> dict[str, Any]:
    """The RayCluster ``cluster_name`` (``status.rayClusterName``) KubeRay creates for a RayJob: every RayJob label plus
    ``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd: RayJob`` and ``ray.io/job-submission-mode``;
    every RayJob annotation (plus ``ray.io/disable-provisioned-head-restart: "true"`` in SidecarMode); a copy of
    ``spec.rayClusterSpec`` as stored; owned by the RayJob. SidecarMode appends :func:`sidecar_container` to the head
    and sets the head's ``restartPolicy: Never``; K8sJobMode adds the batch scheduler's labels and annotations."""
    spec = _spec(rayjob)
    if spec.ray_cluster_spec is None:
        raise RayJobBuildError(f"RayJob {_name(rayjob)!r} has no rayClusterSpec to create a RayCluster from")
    mode = _mode(rayjob)
    labels = {
        **(rayjob.metadata.get("labels") or {}),
        **_originated_labels(rayjob),
        c.RAY_JOB_SUBMISSION_MODE_LABEL: mode,
    }
    annotations = dict(rayjob.metadata.get("annotations") or {})
    if mode == c.SUBMISSION_MODE_SIDECAR:
        annotations[c.RAY_DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION] = "true"
    metadata: dict[str, Any] = {"name": cluster_name}
    namespace = _namespace(rayjob)
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    metadata["ownerReferences"] = [_rayjob_owner(rayjob)]
    cluster_spec = spec.ray_cluster_spec.to_wire()  # a deep copy of what is stored

    if mode == c.SUBMISSION_MODE_SIDECAR:
        sidecar = sidecar_container(
            rayjob, cluster_name, spec.ray_cluster_spec, options, job_id=job_id, dashboard_url=dashboard_url
        )
        head_spec = cluster_spec["headGroupSpec"]["template"].setdefault("spec", {})
        head_spec["containers"] = [*(head_spec.get("containers") or []), sidecar]
        head_spec["restartPolicy"] = c.RESTART_POLICY_NEVER

    cluster = {"apiVersion": c.API_VERSION, "kind": c.KIND_RAYCLUSTER, "metadata": metadata, "spec": cluster_spec}
    if mode == c.SUBMISSION_MODE_K8S_JOB:
        cluster = batch.decorate_metadata(options.batch_scheduler, rayjob, "", cluster)
    return cluster


def rayjob_head_service(rayjob: RayJob, cluster: RayCluster, options: BuildOptions) -> dict[str, Any]:
    """``<rayjob>-head-svc``: the head Service of ``cluster`` (``BuildServiceForHeadPod`` with no labels and no
    annotations: ports, type, headless rule and a custom ``headService`` as for the cluster's own), moved to the
    RayJob's name and namespace, its labels replaced by ``ray.io/originated-from-*``, ``ray.io/node-type: head`` and
    ``ray.io/identifier: <rayjob>-head``, owned by the RayJob. The selector still picks the cluster's head Pod, which
    is what the RayJob controller compares to move the Service to a new cluster after a retry."""
    service = services.service_for_head_pod(cluster, options)
    metadata = dict(service["metadata"])
    rayjob_name = _name(rayjob)
    metadata["name"] = names.default_head_service_name(rayjob_name)
    namespace = _namespace(rayjob)
    if namespace is not None:
        metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)
    metadata["labels"] = {
        **_originated_labels(rayjob),
        c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD,
        c.RAY_ID_LABEL: names.head_identifier(rayjob_name),
    }
    owner = _rayjob_owner(rayjob)
    cluster_uid = str(cluster.metadata.get("uid", ""))
    kept = [ref for ref in metadata.get("ownerReferences") or [] if ref.get("uid") not in (cluster_uid, owner["uid"])]
    metadata["ownerReferences"] = [*kept, owner]
    return {**service, "metadata": metadata}

"""The RayJob submitter's Pod template before KubeRay configures it: ``GetSubmitterTemplate`` and
``GetDefaultSubmitterContainer`` of KubeRay v1.6.1 ``ray-operator/controllers/ray/common/job.go``.

A module of its own because two builders need it: :mod:`raykube.builders.rayjob` (the submitter Job and the
SidecarMode container) and :mod:`raykube.builders.batch` (YuniKorn's ``submittergroup`` task group, whose resources are
those of this template).
"""

from __future__ import annotations

import copy
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.rayjob import RayJobSpec


class SubmitterError(ValueError):
    """The submitter cannot be built from this spec (KubeRay would panic on an index out of range)."""


def head_image(cluster_spec: RayClusterSpec) -> str:
    """The image of the head template's Ray container (``containers[0]``; ``""`` when it names none)."""
    containers = (cluster_spec.head_group_spec.template.get("spec") or {}).get("containers") or []
    if not containers:
        raise SubmitterError("the head template has no containers, so the submitter has no image")
    return str(containers[c.RAY_CONTAINER_INDEX].get("image") or "")


def default_submitter_container(cluster_spec: RayClusterSpec) -> dict[str, Any]:
    """``GetDefaultSubmitterContainer``: ``ray-job-submitter`` with the head's image (against version mismatches),
    limits 1 CPU / 1Gi, requests 500m / 200Mi."""
    container: dict[str, Any] = {"name": c.SUBMITTER_CONTAINER_NAME}
    image = head_image(cluster_spec)
    if image:
        container["image"] = image
    container["resources"] = {
        "limits": dict(c.SUBMITTER_DEFAULT_LIMITS),
        "requests": dict(c.SUBMITTER_DEFAULT_REQUESTS),
    }
    return container


def submitter_pod_template(rayjob_spec: RayJobSpec, cluster_spec: RayClusterSpec | None) -> dict[str, Any]:
    """``GetSubmitterTemplate``: a deep copy of ``submitterPodTemplate`` as the user wrote it (nothing defaulted, not
    even ``restartPolicy``), else ``restartPolicy: Never`` and :func:`default_submitter_container` of
    ``cluster_spec`` (the RayCluster the job runs on: the generated one, or the one ``clusterSelector`` names)."""
    if rayjob_spec.submitter_pod_template is not None:
        return copy.deepcopy(dict(rayjob_spec.submitter_pod_template))
    if cluster_spec is None:
        raise SubmitterError("the default submitter needs a RayCluster spec for its image")
    return {
        "spec": {"containers": [default_submitter_container(cluster_spec)], "restartPolicy": c.RESTART_POLICY_NEVER}
    }

"""What a RayJob makes, as KubeRay makes it (its submitters as v1.7.0 builds them), as plain dicts ready to POST.
Pure: no I/O, inputs never mutated.

One module per thing made, each mapping its functions to KubeRay's and listing the quirks it keeps:

* :mod:`~raykube.builders.rayjob.cluster`: the RayJob's RayCluster and its ``<rayjob>-head-svc``;
* :mod:`~raykube.builders.rayjob.submitters`: the K8sJobMode submitter Job and the SidecarMode submitter container
  (their Pod template before KubeRay configures it is :mod:`raykube.builders.submitter`, shared with the batch
  schedulers);
* :mod:`~raykube.builders.rayjob.submit_command`: the ``ray job submit`` command those submitters run;
* :mod:`~raykube.builders.rayjob.httpmode`: the HTTPMode ``POST /api/jobs/`` request, sent by the operator itself;
* :mod:`~raykube.builders.rayjob.common`: :class:`RayJobBuildError`, the generated names, the dashboard URL and the
  readers the others share.

Where KubeRay reads ``status.jobId`` and ``status.dashboardURL``, the builders take ``job_id`` and ``dashboard_url``
arguments, so the controller can build with the values it is about to write; left out (None), they are read from the
RayJob's status as KubeRay does.

Errors KubeRay returns (the submitter is then never created, the reconcile fails) raise :class:`RayJobBuildError` with
KubeRay's message; where KubeRay would panic (a head template without containers), the message is ours.
"""

from raykube.builders.rayjob.cluster import rayjob_cluster, rayjob_head_service
from raykube.builders.rayjob.common import RayJobBuildError, dashboard_url, new_cluster_name, new_job_id
from raykube.builders.rayjob.httpmode import submit_request, submit_request_body
from raykube.builders.rayjob.submit_command import (
    METADATA_VERSION_MESSAGE,
    k8s_job_submit_command,
    metadata_json,
    runtime_env_json,
    sidecar_submit_command,
    submit_command_tokens,
)
from raykube.builders.rayjob.submitters import sidecar_container, submitter_job, submitter_template

__all__ = [
    "METADATA_VERSION_MESSAGE",
    "RayJobBuildError",
    "dashboard_url",
    "k8s_job_submit_command",
    "metadata_json",
    "new_cluster_name",
    "new_job_id",
    "rayjob_cluster",
    "rayjob_head_service",
    "runtime_env_json",
    "sidecar_container",
    "sidecar_submit_command",
    "submit_command_tokens",
    "submit_request",
    "submit_request_body",
    "submitter_job",
    "submitter_template",
]

"""The RayJob's submitters, as KubeRay v1.7.0 ``ray-operator/controllers/ray/rayjob_controller.go`` configures
them: the K8sJobMode Job and the SidecarMode container on the head, both from the template of
:mod:`raykube.builders.submitter` and running :func:`~raykube.builders.rayjob.submit_command.submit_command_tokens`.

* :func:`submitter_job` is ``createK8sJobIfNeed`` + ``getSubmitterTemplate`` + ``createNewK8sJob``: the K8sJobMode
  submitter, a ``batch/v1`` Job named like the RayJob.
* :func:`submitter_template` is ``getSubmitterTemplate`` with ``configureSubmitterContainer``: since v1.7.0 its Pod
  template carries ``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd: RayJob`` and
  ``app.kubernetes.io/created-by: kuberay-operator``, over whatever the user's template says.
* :func:`sidecar_container` is ``getSubmitterContainer``; with the ``SidecarSubmitterRestart`` gate (v1.7.0) the
  container gets ``restartPolicy: OnFailure`` and the idempotent command.

KubeRay's quirks kept:

* The submitter env is appended whatever the template already has (duplicates possible); a user template's
  ``args`` are replaced whenever its container has no ``command``; a user ``submitterPodTemplate`` is used as given
  (no ``restartPolicy`` added, so the API server refuses the Job when it has none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import AuthOptions, RayClusterSpec
from raykube.api.resources import RayCluster, RayJob
from raykube.builders import batch, pods, submitter
from raykube.builders.command import container_command
from raykube.builders.options import BuildOptions
from raykube.builders.rayjob.common import (
    RayJobBuildError,
    _dashboard_url,
    _job_id,
    _name,
    _namespace,
    _originated_labels,
    _rayjob_owner,
    _spec,
)
from raykube.builders.rayjob.submit_command import submit_command_tokens

__all__ = ["sidecar_container", "submitter_job", "submitter_template"]


def _env(name: str, value: str) -> dict[str, Any]:
    """A ``corev1.EnvVar`` as Go marshals it: ``value`` is ``omitempty``."""
    return {"name": name, "value": value} if value else {"name": name}


def _configure_submitter(
    container: dict[str, Any],
    rayjob: RayJob,
    mode: str,
    *,
    cluster_name: str,
    auth: AuthOptions | None,
    job_id: str,
    dashboard_url: str,
    options: BuildOptions,
) -> None:
    """``configureSubmitterContainer``: the command (K8sJobMode: only when the container has none), the env, and
    token auth when the cluster has ``authOptions.mode: token``."""
    tokens = submit_command_tokens(
        rayjob,
        mode,
        job_id=job_id,
        dashboard_url=dashboard_url,
        sidecar_restart=options.gate(c.GATE_SIDECAR_SUBMITTER_RESTART),
    )
    if not container.get("command") or mode == c.SUBMISSION_MODE_SIDECAR:
        container["command"] = container_command(login_shell=options.login_shell, options=c.SUBMITTER_SHELL_OPTIONS)
        container["args"] = [" ".join(tokens)]
    container["env"] = [
        *(container.get("env") or []),
        _env(c.PYTHONUNBUFFERED_ENV, "1"),
        _env(c.RAY_DASHBOARD_ADDRESS_ENV, dashboard_url),
        _env(c.RAY_JOB_SUBMISSION_ID_ENV, job_id),
    ]
    if auth is not None and auth.mode == c.AUTH_MODE_TOKEN:
        pods.set_token_auth_env(cluster_name, container, auth)


def sidecar_container(
    rayjob: RayJob,
    cluster_name: str,
    cluster_spec: RayClusterSpec,
    options: BuildOptions,
    *,
    job_id: str | None = None,
    dashboard_url: str | None = None,
) -> dict[str, Any]:
    """``getSubmitterContainer``: the SidecarMode submitter container for the head of ``cluster_name`` (whose spec is
    ``cluster_spec``): the default submitter container, always KubeRay's command, the env, token auth; with the
    ``SidecarSubmitterRestart`` gate, ``restartPolicy: OnFailure`` (only this container restarts; the head Pod's
    ``restartPolicy`` stays ``Never``)."""
    try:
        container = submitter.default_submitter_container(cluster_spec)
    except submitter.SubmitterError as error:
        raise RayJobBuildError(str(error)) from None
    _configure_submitter(
        container,
        rayjob,
        c.SUBMISSION_MODE_SIDECAR,
        cluster_name=cluster_name,
        auth=cluster_spec.auth_options,
        job_id=_job_id(rayjob, job_id),
        dashboard_url=_dashboard_url(rayjob, dashboard_url),
        options=options,
    )
    if options.gate(c.GATE_SIDECAR_SUBMITTER_RESTART):
        container["restartPolicy"] = c.SUBMITTER_CONTAINER_RESTART_POLICY
    return container


def submitter_template(
    rayjob: RayJob,
    cluster: RayCluster,
    options: BuildOptions,
    *,
    job_id: str | None = None,
    dashboard_url: str | None = None,
) -> dict[str, Any]:
    """``getSubmitterTemplate``: the K8sJobMode submitter's Pod template for the RayCluster the job runs on (the one it
    created, or the one ``clusterSelector`` names: the default image is that cluster's head image, the auth that
    cluster's), labelled ``ray.io/originated-from-cr-name``, ``ray.io/originated-from-crd: RayJob`` and
    ``app.kubernetes.io/created-by: kuberay-operator`` (these win over the user's labels of the same keys). No batch
    scheduler metadata (see :func:`submitter_job`)."""
    spec = _spec(rayjob)
    try:
        template = submitter.submitter_pod_template(spec, cluster.spec)
    except submitter.SubmitterError as error:
        raise RayJobBuildError(str(error)) from None
    pod_spec = template.setdefault("spec", {})
    containers = pod_spec.get("containers") or []
    if not containers:
        raise RayJobBuildError("spec.submitterPodTemplate has no containers")
    auth = cluster.spec.auth_options if cluster.spec is not None else None
    _configure_submitter(
        containers[c.RAY_CONTAINER_INDEX],
        rayjob,
        c.SUBMISSION_MODE_K8S_JOB,
        cluster_name=_name(cluster),
        auth=auth,
        job_id=_job_id(rayjob, job_id),
        dashboard_url=_dashboard_url(rayjob, dashboard_url),
        options=options,
    )
    if auth is not None and auth.enable_k8s_token_auth is True:  # KubeRay IsK8sAuthEnabled: the mode is not looked at
        pods.add_ray_token_volume(pod_spec)
    metadata = template.setdefault("metadata", {})
    metadata["labels"] = {
        **(metadata.get("labels") or {}),
        **_originated_labels(rayjob),
        c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME,
    }
    return template


def _metadata(rayjob: RayJob, name: str, labels: Mapping[str, str]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    namespace = _namespace(rayjob)
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(labels)
    metadata["ownerReferences"] = [_rayjob_owner(rayjob)]
    return metadata


def submitter_job(
    rayjob: RayJob,
    cluster: RayCluster,
    options: BuildOptions,
    *,
    job_id: str | None = None,
    dashboard_url: str | None = None,
) -> dict[str, Any]:
    """The K8sJobMode submitter Job ``<rayjob>``: labels ``ray.io/originated-from-*`` and
    ``app.kubernetes.io/created-by=kuberay-operator`` (KubeRay's Job cache only sees Jobs with it), owned by the
    RayJob, ``backoffLimit`` from ``spec.submitterConfig`` (2 without), the template of :func:`submitter_template`
    with the batch scheduler's metadata for group ``submittergroup``. No other Job field is set."""
    spec = _spec(rayjob)
    template = submitter_template(rayjob, cluster, options, job_id=job_id, dashboard_url=dashboard_url)
    template = batch.decorate_pod(options.batch_scheduler, rayjob, c.SUBMITTER_GROUP_NAME, template)
    backoff_limit = c.SUBMITTER_DEFAULT_BACKOFF_LIMIT
    if spec.submitter_config is not None and spec.submitter_config.backoff_limit is not None:
        backoff_limit = spec.submitter_config.backoff_limit
    labels = {**_originated_labels(rayjob), c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(rayjob, _name(rayjob), labels),
        "spec": {"backoffLimit": backoff_limit, "template": template},
    }

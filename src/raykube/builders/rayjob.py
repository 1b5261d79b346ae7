"""What a RayJob makes, as KubeRay v1.6.1 makes it, as plain dicts ready to POST. Pure: no I/O, inputs never mutated.

* :func:`rayjob_cluster` is ``constructRayClusterForRayJob`` (``ray-operator/controllers/ray/rayjob_controller.go``)
  plus the batch scheduler's metadata ``getOrCreateRayClusterInstance`` adds in K8sJobMode: the RayCluster
  ``<rayjob>-<rand5>`` with the RayJob's labels and annotations, a copy of ``spec.rayClusterSpec`` and, in
  SidecarMode, the submitter container on the head.
* :func:`rayjob_head_service` is ``common.BuildHeadServiceForRayJob`` (``controllers/ray/common/service.go``):
  ``<rayjob>-head-svc``, the cluster's head Service relabelled for the RayJob and owned by it.
* :func:`submitter_job` is ``createK8sJobIfNeed`` + ``getSubmitterTemplate`` + ``createNewK8sJob``: the K8sJobMode
  submitter, a ``batch/v1`` Job named like the RayJob.
* :func:`submit_command_tokens` is ``common.BuildJobSubmitCommand`` (``controllers/ray/common/job.go``);
  :func:`k8s_job_submit_command` and :func:`sidecar_submit_command` join its tokens into the submitter's one
  argument, as ``configureSubmitterContainer`` does.
* :func:`submit_request_body` is the HTTPMode ``POST /api/jobs/`` body (``dashboardclient.ConvertRayJobToReq`` and
  ``json.Marshal`` of ``utils/types.RayJobRequest``), byte for byte; :func:`submit_request` is the same body as the
  Ray dashboard reads it.
* :func:`dashboard_url` is ``utils.FetchHeadServiceURL``; :func:`new_job_id` and :func:`new_cluster_name` are
  ``utils.GenerateRayJobId`` and ``utils.GenerateRayClusterName`` (``controllers/ray/utils/util.go``).

Where KubeRay reads ``status.jobId`` and ``status.dashboardURL``, the builders take ``job_id`` and ``dashboard_url``
arguments, so the controller can build with the values it is about to write; left out (None), they are read from the
RayJob's status as KubeRay does.

KubeRay's quirks kept (``rayjob_controller.go``, ``common/job.go`` at v1.6.1):

* The submitter env is appended whatever the template already has (duplicates possible); a user template's
  ``args`` are replaced whenever its container has no ``command``; a user ``submitterPodTemplate`` is used as given
  (no ``restartPolicy`` added, so the API server refuses the Job when it has none).
* In SidecarMode ``RAY_DASHBOARD_ADDRESS`` is empty (the cluster is built before the dashboard URL is known), the
  head gets ``restartPolicy: Never``, and no batch scheduler metadata goes on the cluster (K8sJobMode only).
* ``--metadata-json`` needs ``rayClusterSpec`` (silently dropped in clusterSelector mode) and a Ray version of at least
  2.6.0 by Masterminds semver's rules: ``2.6``, ``v2.6.0`` and ``02.6.0`` pass, ``2.7.0-rc1`` does not.
* K8sJobMode trims the entrypoint (``strings.TrimSpace``); HTTPMode sends it as written.

Errors KubeRay returns (the submitter is then never created, the reconcile fails) raise :class:`RayJobBuildError` with
KubeRay's message; where KubeRay would panic (a head template without containers), the message is ours.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import AuthOptions, RayClusterSpec
from raykube.api.rayjob import RayJobSpec
from raykube.api.resources import RayCluster, RayJob
from raykube.builders import batch, names, pods, services, submitter
from raykube.builders.command import container_command
from raykube.builders.options import BuildOptions
from raykube.golang import gojson, goyaml, strconv
from raykube.golang.errors import GoError
from raykube.golang.strings import trim_space

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

# KubeRay common/job.go GetMetadataJson: the error when rayVersion is below 2.6.0.
METADATA_VERSION_MESSAGE = "the Ray version must be at least 2.6.0 to use the metadata field"
_HTTP = "http://"


class RayJobBuildError(ValueError):
    """KubeRay cannot build this object from the RayJob; the message is KubeRay's error where it has one."""


# --------------------------------------------------------------------------------------------------------------------
# Names and status values
# --------------------------------------------------------------------------------------------------------------------


def _name(obj: RayJob | RayCluster) -> str:
    return str(obj.metadata.get("name") or "")


def _namespace(obj: RayJob | RayCluster) -> str | None:
    namespace = obj.metadata.get("namespace")
    return str(namespace) if namespace else None


def _spec(rayjob: RayJob) -> RayJobSpec:
    if rayjob.spec is None:
        raise RayJobBuildError(f"RayJob {_name(rayjob)!r} has no spec")
    return rayjob.spec


def _mode(rayjob: RayJob) -> str:
    return _spec(rayjob).submission_mode or ""


def _job_id(rayjob: RayJob, job_id: str | None) -> str:
    if job_id is not None:
        return job_id
    return (rayjob.status.job_id if rayjob.status is not None else None) or ""


def _dashboard_url(rayjob: RayJob, url: str | None) -> str:
    if url is not None:
        return url
    return (rayjob.status.dashboard_url if rayjob.status is not None else None) or ""


def new_job_id(rayjob: RayJob, rng: random.Random | None = None) -> str:
    """``GenerateRayJobId``: ``<rayjob>-<5 random characters>``, the submission id when ``spec.jobId`` is empty."""
    return f"{_name(rayjob)}-{names.random_suffix(rng)}"


def new_cluster_name(rayjob: RayJob, rng: random.Random | None = None) -> str:
    """``GenerateRayClusterName``: ``<rayjob>-<5 random characters>``, the RayCluster the RayJob creates (a new one
    on every retry)."""
    return f"{_name(rayjob)}-{names.random_suffix(rng)}"


def dashboard_url(
    head_service: Mapping[str, Any],
    *,
    cluster_domain: str = c.DEFAULT_CLUSTER_DOMAIN,
    port_name: str = c.DASHBOARD_PORT_NAME,
) -> str:
    """``FetchHeadServiceURL``: ``<svc>.<ns>.svc.<domain>:<port>`` of the RayCluster's head Service (the live one,
    named :func:`raykube.builders.names.head_service_name`), the port being its first one named ``port_name``; no
    scheme. ``cluster_domain`` is the operator's ``CLUSTER_DOMAIN`` (``BuildOptions.cluster_domain``)."""
    metadata = head_service.get("metadata") or {}
    for port in (head_service.get("spec") or {}).get("ports") or []:
        if port.get("name") == port_name:
            fqdn = names.service_fqdn(str(metadata.get("name", "")), str(metadata.get("namespace", "")), cluster_domain)
            return f"{fqdn}:{int(port.get('port', 0))}"
    raise RayJobBuildError(f"{port_name} port is not found")


# --------------------------------------------------------------------------------------------------------------------
# The submit command
# --------------------------------------------------------------------------------------------------------------------

# Masterminds semver v3.4.0 looseSemVerRegex, which NewVersion uses (CoerceNewVersion is on by default).
_LOOSE_SEMVER = re.compile(
    r"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?"
)
_UINT64_MAX = (1 << 64) - 1


def _semver_segment(text: str) -> int:
    """``strconv.ParseUint(text, 10, 64)`` as Masterminds semver reports its failure."""
    value = int(text)
    if value > _UINT64_MAX:
        raise RayJobBuildError(
            f'error parsing version segment: strconv.ParseUint: parsing "{text}": value out of range'
        )
    return value


def _ray_version_at_least_2_6(version: str) -> bool:
    """Masterminds semver ``NewVersion(version)`` checked against ``>= 2.6.0``: a pre-release never satisfies a
    constraint without one. Raises :class:`RayJobBuildError` with the library's message when it cannot parse."""
    match = _LOOSE_SEMVER.fullmatch(version)
    if match is None:
        raise RayJobBuildError("invalid semantic version")
    major = _semver_segment(match.group(1))
    minor = _semver_segment(match.group(2)[1:]) if match.group(2) else 0
    patch = _semver_segment(match.group(3)[1:]) if match.group(3) else 0
    prerelease = match.group(5) or ""
    for part in prerelease.split(".") if prerelease else ():
        if part.isdigit() and len(part) > 1 and part.startswith("0"):
            raise RayJobBuildError("version segment starts with 0")
    return not prerelease and (major, minor, patch) >= (2, 6, 0)


def metadata_json(metadata: Mapping[str, str], ray_version: str) -> str:
    """``GetMetadataJson``: the metadata as Go's JSON (keys sorted), or :class:`RayJobBuildError` with KubeRay's
    ``failed to parse Ray version: <v>: <err>`` or :data:`METADATA_VERSION_MESSAGE`."""
    try:
        recent = _ray_version_at_least_2_6(ray_version)
    except RayJobBuildError as error:
        raise RayJobBuildError(f"failed to parse Ray version: {ray_version}: {error}") from None
    if not recent:
        raise RayJobBuildError(METADATA_VERSION_MESSAGE)
    return gojson.json_marshal(dict(metadata))


def runtime_env_json(rayjob: RayJob) -> str:
    """``getRuntimeEnvJson``: ``runtimeEnvYAML`` as JSON (``sigs.k8s.io/yaml.YAMLToJSON``), ``""`` when empty."""
    text = _spec(rayjob).runtime_env_yaml or ""
    if not text:
        return ""
    try:
        return goyaml.yaml_to_json(text)
    except GoError as error:
        raise RayJobBuildError(str(error)) from None


def _float32(value: float | None, field: str) -> float:
    """The float32 KubeRay holds for a RayJob number field (0 when unset)."""
    if value is None:
        return 0.0
    try:
        return gojson.float32_from_json(value)
    except GoError as error:
        raise RayJobBuildError(f"spec.{field}: {error}") from None


def _head_container(cluster_spec: RayClusterSpec | None) -> Mapping[str, Any]:
    containers = ((cluster_spec.head_group_spec.template.get("spec") or {}) if cluster_spec else {}).get("containers")
    if not containers:
        raise RayJobBuildError("the RayJob's rayClusterSpec has no head container")
    container: Mapping[str, Any] = containers[c.RAY_CONTAINER_INDEX]
    return container


def _dashboard_port(cluster_spec: RayClusterSpec | None) -> int:
    """``FindContainerPort(head container, "dashboard", 8265)``."""
    for port in _head_container(cluster_spec).get("ports") or []:
        if port.get("name") == c.DASHBOARD_PORT_NAME:
            return int(port.get("containerPort", 0))
    return c.DEFAULT_DASHBOARD_PORT


def submit_command_tokens(
    rayjob: RayJob,
    mode: str,
    *,
    job_id: str | None = None,
    dashboard_url: str | None = None,
    dashboard_port: int | None = None,
) -> list[str]:
    """``BuildJobSubmitCommand(rayjob, mode)``: the shell tokens of the submitter, for K8sJobMode (a status check
    against ``dashboard_url``, then ``ray job submit --no-wait`` and ``ray job logs --follow``) or SidecarMode (a wait
    for the dashboard's GCS health on ``127.0.0.1:<dashboard_port>``, then a blocking ``ray job submit``).
    ``dashboard_port`` defaults to the head container's port named ``dashboard`` (8265 when none)."""
    spec = _spec(rayjob)
    job = _job_id(rayjob, job_id)
    if mode == c.SUBMISSION_MODE_SIDECAR:
        port = dashboard_port if dashboard_port is not None else _dashboard_port(spec.ray_cluster_spec)
        address = f"{_HTTP}{c.LOCAL_HOST}:{port}"
    elif mode == c.SUBMISSION_MODE_K8S_JOB:
        address = _dashboard_url(rayjob, dashboard_url)
        if not address.startswith(_HTTP):
            address = _HTTP + address
    else:
        raise RayJobBuildError(f"unsupported submission mode for job submit command: {mode}")

    tokens: list[str] = []
    if mode == c.SUBMISSION_MODE_SIDECAR:
        health = c.BASE_PYTHON_HEALTH_COMMAND % (
            port,
            c.RAY_DASHBOARD_GCS_HEALTH_PATH,
            c.DEFAULT_READINESS_FAILURE_THRESHOLD,
        )
        waiting = strconv.quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ...")
        tokens += ["until", health, ">/dev/null", "2>&1", ";", "do", "echo", waiting, ";", "sleep", "2", ";", "done"]
        tokens.append(";")
    else:
        tokens += ["if", "!", "ray", "job", "status", "--address", address, job, ">/dev/null", "2>&1", ";", "then"]
    tokens += ["ray", "job", "submit", "--address", address]
    if mode == c.SUBMISSION_MODE_K8S_JOB:
        tokens.append("--no-wait")

    tokens += _submit_options(rayjob, job)
    tokens += ["--", trim_space(spec.entrypoint or ""), ";"]
    if mode == c.SUBMISSION_MODE_K8S_JOB:
        tokens += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job]
    return tokens


def _submit_options(rayjob: RayJob, job: str) -> list[str]:
    """The ``ray job submit`` options after the address: runtime env, metadata, submission id, entrypoint resources."""
    spec = _spec(rayjob)
    tokens: list[str] = []
    runtime_env = runtime_env_json(rayjob)
    if runtime_env:
        tokens += ["--runtime-env-json", strconv.quote(runtime_env)]
    if spec.metadata and spec.ray_cluster_spec is not None:
        metadata = metadata_json(spec.metadata, spec.ray_cluster_spec.ray_version or "")
        tokens += ["--metadata-json", strconv.quote(metadata)]
    if job:
        tokens += ["--submission-id", job]
    cpus = _float32(spec.entrypoint_num_cpus, "entrypointNumCpus")
    if cpus > 0:
        tokens += ["--entrypoint-num-cpus", strconv.format_float(cpus, "f", 6, 32)]
    gpus = _float32(spec.entrypoint_num_gpus, "entrypointNumGpus")
    if gpus > 0:
        tokens += ["--entrypoint-num-gpus", strconv.format_float(gpus, "f", 6, 32)]
    if spec.entrypoint_resources:
        tokens += ["--entrypoint-resources", strconv.quote(spec.entrypoint_resources)]
    return tokens


def k8s_job_submit_command(rayjob: RayJob, *, dashboard_url: str | None = None, job_id: str | None = None) -> str:
    """The K8sJobMode submitter's one argument: :func:`submit_command_tokens` joined by spaces."""
    return " ".join(
        submit_command_tokens(rayjob, c.SUBMISSION_MODE_K8S_JOB, job_id=job_id, dashboard_url=dashboard_url)
    )


def sidecar_submit_command(rayjob: RayJob, *, job_id: str | None = None, dashboard_port: int | None = None) -> str:
    """The SidecarMode submitter's one argument: :func:`submit_command_tokens` joined by spaces."""
    return " ".join(
        submit_command_tokens(rayjob, c.SUBMISSION_MODE_SIDECAR, job_id=job_id, dashboard_port=dashboard_port)
    )


# --------------------------------------------------------------------------------------------------------------------
# The submitter container and Job
# --------------------------------------------------------------------------------------------------------------------


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
    tokens = submit_command_tokens(rayjob, mode, job_id=job_id, dashboard_url=dashboard_url)
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
    ``cluster_spec``): the default submitter container, always KubeRay's command, the env, token auth."""
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
    cluster's). No batch scheduler metadata (see :func:`submitter_job`)."""
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
    return template


def _rayjob_owner(rayjob: RayJob) -> dict[str, Any]:
    return names.owner_reference(c.KIND_RAYJOB, _name(rayjob), str(rayjob.metadata.get("uid", "")))


def _originated_labels(rayjob: RayJob) -> dict[str, str]:
    return {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: _name(rayjob), c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYJOB}


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


# --------------------------------------------------------------------------------------------------------------------
# The RayCluster and the head Service
# --------------------------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------------------------
# HTTPMode: the submit request
# --------------------------------------------------------------------------------------------------------------------


class _JsonNumber(str):
    """A JSON number's text, kept so Go's messages can quote it."""

    __slots__ = ()


_JSON_KINDS = {str: "string", bool: "bool", list: "array", dict: "object", _JsonNumber: "number"}


def _json_kind(value: Any) -> str:
    return "null" if value is None else _JSON_KINDS.get(type(value), type(value).__name__)


def _reject_constant(text: str) -> Any:
    raise ValueError(f"invalid character {text[0]!r} looking for beginning of value")


def _entrypoint_resources(text: str) -> dict[str, float]:
    """``json.Unmarshal(entrypointResources, &map[string]float32)``: each value the nearest float32 to its text;
    ``null`` values are 0; a non-object, non-number or out-of-range value is Go's error."""
    try:
        parsed = json.loads(text, parse_int=_JsonNumber, parse_float=_JsonNumber, parse_constant=_reject_constant)
    except ValueError as error:
        raise RayJobBuildError(str(error)) from None
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise RayJobBuildError(f"json: cannot unmarshal {_json_kind(parsed)} into Go value of type map[string]float32")
    resources: dict[str, float] = {}
    for key, value in parsed.items():
        if value is None:
            resources[key] = 0.0
            continue
        if not isinstance(value, _JsonNumber):
            raise RayJobBuildError(f"json: cannot unmarshal {_json_kind(value)} into Go value of type float32")
        try:
            resources[key] = gojson.float32_from_json(str(value))
        except GoError as error:
            raise RayJobBuildError(str(error)) from None
    return resources


def _sorted_maps(value: Any) -> Any:
    """Data decoded into Go's ``map[string]any``, laid out for :func:`gojson.json_marshal` with ``sort_keys=False``."""
    if isinstance(value, dict):
        return {key: _sorted_maps(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_maps(item) for item in value]
    return value


def _runtime_env(text: str) -> dict[str, Any]:
    """``UnmarshalRuntimeEnvYAML``: ``sigs.k8s.io/yaml.Unmarshal`` into a ``map[string]any`` (every number a
    float64, as Go's JSON decoder makes them)."""
    try:
        value = json.loads(goyaml.yaml_to_json(text), parse_int=float)
    except GoError as error:
        message = f"failed to unmarshal RuntimeEnvYAML: {text}: error converting YAML to JSON: {error}"
        raise RayJobBuildError(message) from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RayJobBuildError(
            f"failed to unmarshal RuntimeEnvYAML: {text}: error unmarshaling JSON: while decoding JSON: "
            f"json: cannot unmarshal {_json_kind(value)} into Go value of type types.RuntimeEnvType"
        )
    return value


def submit_request_body(rayjob: RayJob, job_id: str | None = None) -> bytes:
    """The HTTPMode ``POST /api/jobs/`` body, byte for byte as KubeRay sends it: ``RayJobRequest``'s fields in its
    order, each left out when empty or zero (``omitempty``) except ``entrypoint`` (as written, not trimmed);
    ``runtime_env`` from ``runtimeEnvYAML`` with float64 numbers, ``metadata``, ``entrypoint_resources`` parsed from
    its JSON text into float32 values, ``submission_id`` (``job_id``, else ``status.jobId``), and
    ``entrypoint_num_cpus``/``entrypoint_num_gpus`` as float32 (``0.1`` is sent as ``0.1``)."""
    spec = _spec(rayjob)
    body: dict[str, Any] = {}
    runtime_env = _runtime_env(spec.runtime_env_yaml) if spec.runtime_env_yaml else {}
    if runtime_env:
        body["runtime_env"] = _sorted_maps(runtime_env)
    if spec.metadata:
        body["metadata"] = _sorted_maps(dict(spec.metadata))
    resources = _entrypoint_resources(spec.entrypoint_resources) if spec.entrypoint_resources else {}
    if resources:
        body["entrypoint_resources"] = {key: gojson.Float32(resources[key]) for key in sorted(resources)}
    body["entrypoint"] = spec.entrypoint or ""
    submission_id = _job_id(rayjob, job_id)
    if submission_id:
        body["submission_id"] = submission_id
    for key, value, field in (
        ("entrypoint_num_cpus", spec.entrypoint_num_cpus, "entrypointNumCpus"),
        ("entrypoint_num_gpus", spec.entrypoint_num_gpus, "entrypointNumGpus"),
    ):
        number = _float32(value, field)
        if number != 0:
            body[key] = gojson.Float32(number)
    try:
        return gojson.json_marshal(body, sort_keys=False).encode()
    except GoError as error:
        raise RayJobBuildError(str(error)) from None


def submit_request(rayjob: RayJob, job_id: str | None = None) -> dict[str, Any]:
    """:func:`submit_request_body` as the Ray dashboard reads it (``json.loads``): float32 values appear as their
    shortest decimal (``0.1``), whole runtime-env numbers as ints. POST the body itself to send KubeRay's bytes."""
    parsed: dict[str, Any] = json.loads(submit_request_body(rayjob, job_id=job_id))
    return parsed

"""The command the RayJob's submitters run (KubeRay v1.7.0 ``ray-operator/controllers/ray/common/job.go``).

* :func:`submit_command_tokens` is ``common.BuildJobSubmitCommand`` (``controllers/ray/common/job.go``);
  :func:`k8s_job_submit_command` and :func:`sidecar_submit_command` join its tokens into the submitter's one
  argument, as ``configureSubmitterContainer`` does.
* :func:`metadata_json` is ``getMetadataJSONForSubmitCommand``, :func:`runtime_env_json` ``getRuntimeEnvJson``.

v1.7.0: both modes first wait for the dashboard's GCS health (K8sJobMode through the dashboard URL, SidecarMode on
localhost); ``--metadata-json`` is also sent in clusterSelector mode and with no ``rayVersion``; with the
``SidecarSubmitterRestart`` gate the SidecarMode submitter uses K8sJobMode's idempotent form (its container restarts).

KubeRay's quirks kept:

* A ``rayClusterSpec.rayVersion`` that is set must be at least 2.6.0 for ``--metadata-json``, by Masterminds semver's
  rules: ``2.6``, ``v2.6.0`` and ``02.6.0`` pass, ``2.7.0-rc1`` does not.
* K8sJobMode trims the entrypoint (``strings.TrimSpace``); HTTPMode sends it as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.resources import RayJob
from raykube.builders.rayjob.common import (
    RayJobBuildError,
    _dashboard_url,
    _float32,
    _job_id,
    _spec,
)
from raykube.golang import gojson, goyaml, strconv
from raykube.golang.errors import GoError
from raykube.golang.strings import trim_space

__all__ = [
    "METADATA_VERSION_MESSAGE",
    "k8s_job_submit_command",
    "metadata_json",
    "runtime_env_json",
    "sidecar_submit_command",
    "submit_command_tokens",
]

# KubeRay v1.7.0 common/job.go getMetadataJSONForSubmitCommand: the error when rayVersion is below 2.6.0.
METADATA_VERSION_MESSAGE = "the Ray version must be at least 2.6.0 to use the metadata field"
_HTTP = "http://"

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
    """``getMetadataJSONForSubmitCommand``: the metadata as Go's JSON (keys sorted). ``ray_version`` is
    ``rayClusterSpec.rayVersion`` (``""`` when unset or in clusterSelector mode: the cluster is taken to be recent
    enough); one that is set and cannot be parsed or is below 2.6.0 raises :class:`RayJobBuildError` with KubeRay's
    ``failed to parse Ray version: <v>: <err>`` or :data:`METADATA_VERSION_MESSAGE`."""
    if ray_version:
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
    sidecar_restart: bool = False,
) -> list[str]:
    """``BuildJobSubmitCommand(rayjob, mode)``: the shell tokens of the submitter. Both modes first wait until the
    dashboard's ``api/gcs_healthz`` answers ``success`` (K8sJobMode at ``dashboard_url``, SidecarMode at
    ``localhost:<dashboard_port>``). K8sJobMode, whose Job may run the command again, then submits idempotently (a
    status check, ``ray job submit --no-wait``, ``ray job logs --follow``); SidecarMode runs a blocking
    ``ray job submit`` against ``127.0.0.1:<dashboard_port>``, or the idempotent form when ``sidecar_restart`` (the
    ``SidecarSubmitterRestart`` gate: its container restarts on failure). ``dashboard_port`` defaults to the head
    container's port named ``dashboard`` (8265 when none)."""
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

    if mode == c.SUBMISSION_MODE_SIDECAR:
        health_url = c.SIDECAR_GCS_HEALTH_URL_FORMAT.format(port=port, path=c.RAY_DASHBOARD_GCS_HEALTH_PATH)
    else:
        health_url = f"{address}/{c.RAY_DASHBOARD_GCS_HEALTH_PATH}"
    health = c.BASE_PYTHON_HEALTH_COMMAND % (health_url, c.RAY_DASHBOARD_GCS_HEALTH_CHECK_TIMEOUT_SECONDS)
    waiting = strconv.quote(f"Waiting for Ray Dashboard GCS to become healthy at {address} ...")
    tokens = ["until", health, ">/dev/null", "2>&1", ";", "do", "echo", waiting, ";", "sleep", "2", ";", "done", ";"]

    idempotent = mode == c.SUBMISSION_MODE_K8S_JOB or sidecar_restart
    if idempotent:
        tokens += ["if", "!", "ray", "job", "status", "--address", address, job, ">/dev/null", "2>&1", ";", "then"]
    tokens += ["ray", "job", "submit", "--address", address]
    if idempotent:
        tokens.append("--no-wait")

    tokens += _submit_options(rayjob, job)
    tokens += ["--", trim_space(spec.entrypoint or ""), ";"]
    if idempotent:
        tokens += ["fi", ";", "ray", "job", "logs", "--address", address, "--follow", job]
    return tokens


def _submit_options(rayjob: RayJob, job: str) -> list[str]:
    """The ``ray job submit`` options after the address: runtime env, metadata, submission id, entrypoint resources."""
    spec = _spec(rayjob)
    tokens: list[str] = []
    runtime_env = runtime_env_json(rayjob)
    if runtime_env:
        tokens += ["--runtime-env-json", strconv.quote(runtime_env)]
    if spec.metadata:
        version = spec.ray_cluster_spec.ray_version if spec.ray_cluster_spec is not None else None
        metadata = metadata_json(spec.metadata, version or "")
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


def sidecar_submit_command(
    rayjob: RayJob, *, job_id: str | None = None, dashboard_port: int | None = None, sidecar_restart: bool = False
) -> str:
    """The SidecarMode submitter's one argument: :func:`submit_command_tokens` joined by spaces."""
    return " ".join(
        submit_command_tokens(
            rayjob,
            c.SUBMISSION_MODE_SIDECAR,
            job_id=job_id,
            dashboard_port=dashboard_port,
            sidecar_restart=sidecar_restart,
        )
    )

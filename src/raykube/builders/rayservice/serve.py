"""The RayService's Serve applications, as KubeRay v1.6.1 sends them to the dashboard and reads them back
(``ray-operator/controllers/ray/rayservice_controller.go``: ``reconcileServe``, ``updateServeDeployment``,
``getAndCheckServeStatus``).

* :func:`serve_config_body` is the ``PUT /api/serve/applications/`` body: ``serveConfigV2`` read by
  ``k8s.io/apimachinery/pkg/util/yaml.Unmarshal`` into a ``map[string]any`` (YAML to JSON, then a number with an
  integer text as int64, others as float64) and written by ``encoding/json`` (keys sorted), byte for byte: Go's
  answers for 651 configs in tests/vectors/serve_config.json (tools/govectors, ``make vectors``).
* :func:`need_submit_serve_applications` is ``checkIfNeedSubmitServeApplications``, with KubeRay's reasons.
* :func:`serve_application_statuses` is ``GetMultiApplicationStatus`` + ``getAndCheckServeStatus`` over the body of
  ``GET /api/serve/applications/?api_type=declarative``: ``(isReady, applicationStatuses)``.

KubeRay's quirk kept **[Q]**: an application named ``""`` is reported as ``default``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from raykube.api import constants as c
from raykube.builders.rayservice.common import RayServiceBuildError
from raykube.golang import gojson, goyaml
from raykube.golang.errors import GoError

__all__ = [
    "GET_SERVE_STATUS_ERROR",
    "UPDATE_SERVE_APPLICATIONS_ERROR",
    "need_submit_serve_applications",
    "serve_application_statuses",
    "serve_config_body",
]

# KubeRay getAndCheckServeStatus: the error wrapped around a failed GET of the applications (then an error-requeue).
GET_SERVE_STATUS_ERROR: Final = (
    "failed to get Serve application statuses from the dashboard. If you observe this error consistently, please "
    "check https://docs.ray.io/en/latest/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html for more "
    "details. err: {err}"
)
# KubeRay updateServeDeployment: the error wrapped around a failed PUT of the serve config.
UPDATE_SERVE_APPLICATIONS_ERROR: Final = (
    'fail to create / update Serve applications. If you observe this error consistently, please check "Issue 5: '
    'Fail to create / update Serve applications." in '
    "https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html"
    "#kuberay-raysvc-troubleshoot for more details. err: {err}"
)


def serve_config_body(serve_config_v2: str | None, *, target_capacity: int | None = None) -> bytes:
    """``updateServeDeployment``'s body: ``serveConfigV2`` (YAML) as Go's JSON with sorted keys, byte for byte
    (``{}`` for an empty config); ``target_capacity`` is added when given (the incremental upgrade). A config that
    is not a YAML mapping raises :class:`RayServiceBuildError` with the error KubeRay returns (no event then)."""
    text = serve_config_v2 or ""
    try:
        value = goyaml.yaml_to_value(text)
        document = gojson.json_marshal(value)  # YAMLToJSON fails on what JSON cannot hold (NaN, infinities)
    except GoError as error:
        raise RayServiceBuildError(f"error converting YAML to JSON: {error}") from None
    if value is not None and not isinstance(value, dict):
        kind = gojson.json_kind(value)
        raise RayServiceBuildError(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
            f"{kind} into Go value of type map[string]interface {{}}"
        )
    # The JSON read back as Go reads it into the map: a number with an integer text is an int64 (so -0.0 is 0).
    config: dict[str, Any] = gojson.preserve_ints(json.loads(document)) if value else {}
    if target_capacity is not None:
        config["target_capacity"] = target_capacity
    return gojson.json_marshal(config).encode()


def need_submit_serve_applications(
    cached: str, serve_config_v2: str, applications: Mapping[str, Any] | None
) -> tuple[bool, str]:
    """``checkIfNeedSubmitServeApplications(cached, spec.serveConfigV2, applications read this pass)``: submit when
    nothing is cached for the cluster (``""``: a new cluster, an operator restart; **[Q]** an empty config is never
    cached, so it is PUT every pass), when the cluster reports no application (a head restarted without GCS FT), or
    when the cached text differs (a plain string comparison). Returns KubeRay's reason with the answer."""
    if cached == "":
        return True, "Nothing has been cached for the cluster."
    if not applications:
        return True, (
            "No Serve application found in the RayCluster. "
            "A possible reason is that the head Pod crashed and GCS FT was not enabled."
        )
    if cached != serve_config_v2:
        return True, "Current V2 Serve config doesn't match cached Serve config."
    return False, "Current V2 Serve config matches cached Serve config."


def serve_application_statuses(body: str | bytes) -> tuple[bool, dict[str, dict[str, Any]]]:
    """``getAndCheckServeStatus`` over the dashboard's ``GET /api/serve/applications/?api_type=declarative`` body:
    ``(isReady, applicationStatuses)``, the latter as it goes into ``status.*ServiceStatus.applicationStatuses``
    (``status``, ``message``, ``serveDeploymentStatuses`` with each deployment's ``status`` and ``message``, empty
    values left out as Go's ``omitempty`` does). Ready means at least one application and every one ``RUNNING``.
    An application named ``""`` is reported as ``default``. A body KubeRay cannot decode raises
    :class:`RayServiceBuildError` with KubeRay's whole message (:data:`GET_SERVE_STATUS_ERROR`)."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        parsed = gojson.decode(text)
        details = gojson.decode_struct(parsed, ("applications",), "utiltypes.ServeDetails") or {}
        applications = gojson.decode_map(details.get("applications"), "ServeDetails.applications")
        statuses: dict[str, dict[str, Any]] = {}
        ready = True
        decoded_apps: dict[str, dict[str, Any]] = {}
        for app_name, raw_app in applications:  # a repeated key: the last one wins, as in a Go map
            app = (
                gojson.decode_struct(raw_app, ("deployments", "name", "status", "message"), "ServeApplicationDetails")
                or {}
            )
            deployments: dict[str, dict[str, str]] = {}
            for dep_name, raw_dep in gojson.decode_map(app.get("deployments"), "ServeApplicationDetails.deployments"):
                dep = gojson.decode_struct(raw_dep, ("name", "status", "message"), "ServeDeploymentDetails") or {}
                deployments[dep_name] = {
                    "status": gojson.decode_string(dep.get("status"), "ServeDeploymentStatus.status"),
                    "message": gojson.decode_string(dep.get("message"), "ServeDeploymentStatus.message"),
                }
            decoded_apps[app_name] = {
                "status": gojson.decode_string(app.get("status"), "ServeApplicationStatus.status"),
                "message": gojson.decode_string(app.get("message"), "ServeApplicationStatus.message"),
                "deployments": deployments,
            }
    except ValueError:  # a syntax error, or a GoError: a type Go's decoder refuses
        err = f"failed to get serve details: GetServeDetails failed. Failed to unmarshal bytes: {text}"
        raise RayServiceBuildError(GET_SERVE_STATUS_ERROR.format(err=err)) from None
    for app_name, app in decoded_apps.items():
        if app["status"] != c.SERVE_APP_RUNNING:
            ready = False
        entry: dict[str, Any] = {}
        deployments_out = {name: _omit_empty(dep) for name, dep in app["deployments"].items()}
        if deployments_out:
            entry["serveDeploymentStatuses"] = deployments_out
        entry.update(_omit_empty({"status": app["status"], "message": app["message"]}))
        statuses[app_name or c.DEFAULT_SERVE_APP_NAME] = entry
    return ready and bool(statuses), statuses


def _omit_empty(values: Mapping[str, str]) -> dict[str, str]:
    return {key: value for key, value in values.items() if value}

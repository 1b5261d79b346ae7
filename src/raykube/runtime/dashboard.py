"""The Ray dashboard client KubeRay's RayJob and RayService controllers talk to: jobs and Serve over HTTP.

As KubeRay v1.6.1 (``ray-operator/controllers/ray/utils/dashboardclient/dashboard_httpclient.go``, built per
reconcile by ``utils.GetRayDashboardClientFunc``):

* **Direct** (the default): ``http://<dashboardURL>`` where the URL is ``<head-svc>.<ns>.svc.<domain>:<port>``, with
  a 2 s timeout. This needs the operator to resolve cluster DNS, which an operator running inside the cluster can.
* **Through the API server** (``--use-kubernetes-proxy``):
  ``/api/v1/namespaces/<ns>/services/<head-svc>:dashboard/proxy/...`` on the operator's own Kubernetes client, so an
  operator running outside the cluster (a laptop, the sandbox's tests) reaches the dashboard too. The head Service is
  ``status.head.serviceName``, else the generated name. RBAC: ``services/proxy`` get and create.
* **Auth**: with ``authOptions.mode: token`` every client reads the token from the cluster's Secret (the user's
  ``secretName`` or the generated one, key ``auth_token``) and sends ``x-ray-authorization: Bearer <token>``. The
  token never reaches a log, an event or an error message.

Serve (the RayService controller): ``PUT /api/serve/applications/`` with the config as JSON
(``UpdateDeployments``) and ``GET /api/serve/applications/?api_type=declarative`` (``GetServeDetails``, the body
returned as it came: ``raykube.builders.rayservice.serve_application_statuses`` reads it as Go's decoder does). The
head Pod's Serve proxy health (``httpproxy_httpclient.go`` ``CheckProxyActorHealth``): ``GET
http://<podIP>:<serve port>/-/healthz`` with a 2 s timeout, or with ``--use-kubernetes-proxy``
``/api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy/-/healthz`` (RBAC ``pods/proxy`` get); healthy is exactly HTTP 200,
and no auth header is sent.

Errors are :class:`~raykube.api.dashboard.DashboardError` with KubeRay's texts; a job the cluster does not know is
``not_found``.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Mapping
from typing import Any

import httpx2

from raykube.api import constants as c
from raykube.api.dashboard import (
    DUPLICATE_SUBMISSION_TEXT,
    DashboardError,
    DuplicateSubmission,
    JobInfo,
    is_job_terminal,
)
from raykube.builders import names
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import PODS, SECRETS, SERVICES

log = logging.getLogger(__name__)

DIRECT_TIMEOUT = 2.0  # KubeRay dashboard_httpclient.go: http.Client{Timeout: 2 * time.Second}
AUTH_HEADER = "x-ray-authorization"  # Ray's token auth header (ray._private.authentication)


def _body_text(content: bytes) -> str:
    return content.decode("utf-8", "replace")


class _Transport:
    """Where the dashboard's requests go: straight to it, or through the API server's service proxy."""

    async def send(self, method: str, path: str, body: Any = None) -> tuple[int, str, bytes]:
        raise NotImplementedError


class _Direct(_Transport):
    def __init__(self, http: httpx2.AsyncClient, base: str, headers: Mapping[str, str]) -> None:
        self.http = http
        self.base = base
        self.headers = dict(headers)

    async def send(self, method: str, path: str, body: Any = None) -> tuple[int, str, bytes]:
        content = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {**self.headers, **({"Content-Type": "application/json"} if body is not None else {})}
        try:
            response = await self.http.request(method, self.base + path, content=content, headers=headers)
        except httpx2.HTTPError as exc:
            raise DashboardError(f"{method} {self.base}{path}: {type(exc).__name__}: {exc}") from exc
        return response.status_code, f"{response.status_code} {response.reason_phrase}", response.content


class _Proxy(_Transport):
    def __init__(self, kube: Kube, namespace: str, service: str, headers: Mapping[str, str]) -> None:
        self.kube = kube
        self.prefix = SERVICES.path(namespace, f"{service}:{c.DASHBOARD_PORT_NAME}", "proxy")
        self.headers = dict(headers)

    async def send(self, method: str, path: str, body: Any = None) -> tuple[int, str, bytes]:
        verb = {"GET": "get", "PUT": "update"}.get(method, "create")
        try:
            response = await self.kube.send(
                verb, method, SERVICES, self.prefix + path, body=body, subresource="proxy", headers=self.headers
            )
        except httpx2.HTTPError as exc:
            raise DashboardError(f"{method} {self.prefix}{path}: {type(exc).__name__}: {exc}") from exc
        return response.status_code, f"{response.status_code} {response.reason_phrase}", response.content


class HttpDashboard:
    """One cluster's dashboard (the ``Dashboard`` protocol of ``raykube.controllers.ports``)."""

    def __init__(self, transport: _Transport) -> None:
        self.transport = transport

    async def get_job_info(self, job_id: str) -> JobInfo:
        code, _, content = await self.transport.send("GET", f"/api/jobs/{job_id}")
        if code == 404:
            raise DashboardError(f"Job {job_id} does not exist on the cluster", status=404, not_found=True)
        try:  # as KubeRay, other statuses are not checked: the body must be a job
            body = json.loads(content)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise DashboardError(f"GetJobInfo fail: {_body_text(content)}", status=code)
        return JobInfo.from_json(body)

    async def submit_job(self, request: Mapping[str, Any]) -> str:
        code, status, content = await self.transport.send("POST", "/api/jobs/", dict(request))
        text = _body_text(content)
        if not 200 <= code < 300:
            submission_id = str(request.get("submission_id") or "")
            if code == 500 and DUPLICATE_SUBMISSION_TEXT in text:
                raise DuplicateSubmission(
                    f"submission ID '{submission_id}' already used, {DUPLICATE_SUBMISSION_TEXT}", status=code
                )
            raise DashboardError(f"SubmitJob fail: {status} {text}", status=code)
        try:
            return str(json.loads(content).get("job_id") or "")
        except (ValueError, AttributeError) as exc:
            raise DashboardError(f"SubmitJob fail: {status} {text}", status=code) from exc

    async def stop_job(self, job_id: str) -> None:
        code, status, content = await self.transport.send("POST", f"/api/jobs/{job_id}/stop")
        try:
            stopped = bool(json.loads(content).get("stopped"))
        except (ValueError, AttributeError) as exc:
            raise DashboardError(f"StopJob fail: {status} {_body_text(content)}", status=code) from exc
        if stopped:
            return
        info = await self.get_job_info(job_id)
        if not is_job_terminal(info.status):
            raise DashboardError(f"failed to stop job: {info}")

    # ------------------------------------------------------------------------------------------------ Serve
    async def update_deployments(self, config_json: bytes) -> None:
        """``UpdateDeployments``: PUT the Serve config (JSON bytes); any status outside 2xx is an error."""
        code, status, content = await self.transport.send("PUT", c.SERVE_APPLICATIONS_PATH, config_json)
        if not 200 <= code < 300:
            raise DashboardError(f"UpdateDeployments fail: {status} {_body_text(content)}", status=code)

    async def get_serve_details(self) -> bytes:
        """``GetServeDetails``: the body of ``GET /api/serve/applications/?api_type=declarative``; a status outside
        2xx is an error (the body is decoded by the caller)."""
        path = f"{c.SERVE_APPLICATIONS_PATH}?api_type={c.SERVE_DETAILS_API_TYPE}"
        code, status, content = await self.transport.send("GET", path)
        if not 200 <= code < 300:
            raise DashboardError(f"GetServeDetails fail: {status} {_body_text(content)}", status=code)
        return content


class HttpDashboards:
    """Builds the dashboard client of a RayCluster (the ``Dashboards`` protocol)."""

    def __init__(self, kube: Kube, *, use_kubernetes_proxy: bool = False) -> None:
        self.kube = kube
        self.use_kubernetes_proxy = use_kubernetes_proxy
        self._http: httpx2.AsyncClient | None = None

    def _direct_http(self) -> httpx2.AsyncClient:
        if self._http is None:
            # trust_env=False: no proxy from the environment between the operator and a Ray head.
            self._http = httpx2.AsyncClient(timeout=DIRECT_TIMEOUT, trust_env=False)
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def _auth_headers(self, cluster: Mapping[str, Any]) -> dict[str, str]:
        auth = ((cluster.get("spec") or {}).get("authOptions")) or {}
        if auth.get("mode") != c.AUTH_MODE_TOKEN:
            return {}
        namespace = objects.namespace(cluster)
        name = str(auth.get("secretName") or names.check_name(objects.name(cluster)))
        try:
            secret = await self.kube.get(SECRETS, name, namespace)
        except ApiError as exc:
            raise DashboardError(f"failed to get auth secret {namespace}/{name}: {exc}") from exc
        encoded = (secret.get("data") or {}).get(c.AUTH_TOKEN_SECRET_KEY)
        if encoded is None:
            raise DashboardError(
                f"auth token key '\"{c.AUTH_TOKEN_SECRET_KEY}\"' not found in secret {namespace}/{name}"
            )
        token = base64.b64decode(encoded).decode()
        return {AUTH_HEADER: f"Bearer {token}"}

    async def for_cluster(self, cluster: Mapping[str, Any], dashboard_url: str) -> HttpDashboard:
        headers = await self._auth_headers(cluster)
        if self.use_kubernetes_proxy:
            head = ((cluster.get("status") or {}).get("head") or {}).get("serviceName")
            spec_head = ((cluster.get("spec") or {}).get("headGroupSpec") or {}).get("headService")
            service = str(head or names.head_service_name(objects.name(cluster), spec_head))
            return HttpDashboard(_Proxy(self.kube, objects.namespace(cluster), service, headers))
        base = dashboard_url if dashboard_url.startswith(("http://", "https://")) else f"http://{dashboard_url}"
        return HttpDashboard(_Direct(self._direct_http(), base.rstrip("/"), headers))

    async def proxy_healthy(self, pod: Mapping[str, Any], port: int) -> bool:
        """KubeRay ``CheckProxyActorHealth`` on a head Pod: its Serve proxy's ``/-/healthz`` answers 200 (direct to
        the Pod IP with a 2 s timeout, or through the API server's pods proxy). Any error is "not healthy"."""
        try:
            if self.use_kubernetes_proxy:
                path = PODS.path(objects.namespace(pod), f"{objects.name(pod)}:{port}", "proxy")
                response = await self.kube.send(
                    "get", "GET", PODS, path + c.RAY_SERVE_HEALTHZ_PATH, subresource="proxy"
                )
            else:
                ip = str((pod.get("status") or {}).get("podIP") or "")
                if not ip:  # KubeRay asks http://:<port>/-/healthz, which fails
                    return False
                response = await self._direct_http().get(f"http://{ip}:{port}{c.RAY_SERVE_HEALTHZ_PATH}")
        except (httpx2.HTTPError, ApiError) as exc:
            log.debug("the Serve proxy of %s is not healthy: %s", objects.name(pod), exc)
            return False
        return bool(response.status_code == 200)

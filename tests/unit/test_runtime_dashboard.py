"""The dashboard client against a scripted HTTP peer: KubeRay's requests, answers and error texts."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from raykube.api.dashboard import DashboardError, DuplicateSubmission
from raykube.kube.client import Kube
from raykube.kube.rbac import Rule
from raykube.runtime.dashboard import HttpDashboards

Handler = Callable[[httpx2.Request], httpx2.Response]
CLUSTER: dict[str, Any] = {"metadata": {"name": "demo", "namespace": "team"}, "spec": {}}


def _kube(handler: Handler, rules: tuple[Rule, ...] | None = None) -> Kube:
    return Kube(httpx2.AsyncClient(transport=httpx2.MockTransport(handler), base_url="https://api"), rules=rules)


def _direct(dashboards: HttpDashboards, handler: Handler) -> None:
    dashboards._http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def test_direct_job_info_reads_the_job() -> None:
    seen: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        body = {"status": "RUNNING", "message": "m", "start_time": 1700000000000, "job_id": "raysubmit", "x": 1}
        return httpx2.Response(200, json=body)

    dashboards = HttpDashboards(_kube(answer))
    _direct(dashboards, answer)
    dashboard = await dashboards.for_cluster(CLUSTER, "demo-head-svc.team.svc.cluster.local:8265")
    info = await dashboard.get_job_info("job-1")
    assert seen == ["http://demo-head-svc.team.svc.cluster.local:8265/api/jobs/job-1"]
    assert (info.status, info.message, info.start_time, info.end_time) == ("RUNNING", "m", 1700000000000, 0)


async def test_a_missing_job_is_not_found_with_kuberays_text() -> None:
    dashboards = HttpDashboards(_kube(lambda r: httpx2.Response(500)))
    _direct(dashboards, lambda request: httpx2.Response(404, text="Job not found"))
    dashboard = await dashboards.for_cluster(CLUSTER, "h:8265")
    with pytest.raises(DashboardError, match="Job job-1 does not exist on the cluster") as caught:
        await dashboard.get_job_info("job-1")
    assert caught.value.not_found


async def test_a_body_that_is_not_a_job_is_an_error() -> None:
    dashboards = HttpDashboards(_kube(lambda r: httpx2.Response(500)))
    _direct(dashboards, lambda request: httpx2.Response(502, text="bad gateway"))
    dashboard = await dashboards.for_cluster(CLUSTER, "h:8265")
    with pytest.raises(DashboardError, match="GetJobInfo fail: bad gateway"):
        await dashboard.get_job_info("job-1")


async def test_submit_posts_the_request_and_returns_the_job_id() -> None:
    posted: list[Any] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        posted.append((request.method, request.url.path, request.headers["content-type"], json.loads(request.content)))
        return httpx2.Response(200, json={"job_id": "job-1", "submission_id": "job-1"})

    dashboards = HttpDashboards(_kube(answer))
    _direct(dashboards, answer)
    dashboard = await dashboards.for_cluster(CLUSTER, "h:8265")
    assert await dashboard.submit_job({"entrypoint": "python x.py", "submission_id": "job-1"}) == "job-1"
    assert posted == [
        ("POST", "/api/jobs/", "application/json", {"entrypoint": "python x.py", "submission_id": "job-1"})
    ]


async def test_a_duplicate_submission_is_told_apart() -> None:
    dashboards = HttpDashboards(_kube(lambda r: httpx2.Response(500)))
    text = "Job with submission_id job-1 already exists. Please use a different submission_id."
    _direct(dashboards, lambda request: httpx2.Response(500, text=text))
    dashboard = await dashboards.for_cluster(CLUSTER, "h:8265")
    with pytest.raises(DuplicateSubmission, match="submission ID 'job-1' already used"):
        await dashboard.submit_job({"entrypoint": "x", "submission_id": "job-1"})


async def test_stop_that_did_not_stop_a_finished_job_is_fine_and_a_running_one_is_an_error() -> None:
    status = {"value": "SUCCEEDED"}

    def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/stop"):
            return httpx2.Response(200, json={"stopped": False})
        return httpx2.Response(200, json={"status": status["value"]})

    dashboards = HttpDashboards(_kube(answer))
    _direct(dashboards, answer)
    dashboard = await dashboards.for_cluster(CLUSTER, "h:8265")
    await dashboard.stop_job("job-1")
    status["value"] = "RUNNING"
    with pytest.raises(DashboardError, match="failed to stop job"):
        await dashboard.stop_job("job-1")


async def test_token_auth_reads_the_secret_and_sends_the_header_and_never_shows_the_token() -> None:
    token = "s3cr3t-token"  # noqa: S105 - a test value
    headers: list[str | None] = []

    def api(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/api/v1/namespaces/team/secrets/demo"
        data = {"auth_token": base64.b64encode(token.encode()).decode()}
        return httpx2.Response(200, json={"metadata": {"name": "demo"}, "data": data})

    def dashboard_answer(request: httpx2.Request) -> httpx2.Response:
        headers.append(request.headers.get("x-ray-authorization"))
        return httpx2.Response(200, json={"status": "PENDING"})

    dashboards = HttpDashboards(_kube(api))
    _direct(dashboards, dashboard_answer)
    cluster = {**CLUSTER, "spec": {"authOptions": {"mode": "token"}}}
    dashboard = await dashboards.for_cluster(cluster, "h:8265")
    await dashboard.get_job_info("job-1")
    assert headers == [f"Bearer {token}"]


async def test_token_auth_without_the_secret_or_its_key_names_them() -> None:
    cluster = {**CLUSTER, "spec": {"authOptions": {"mode": "token", "secretName": "mine"}}}
    missing = HttpDashboards(_kube(lambda r: httpx2.Response(404, json={"reason": "NotFound", "message": "gone"})))
    with pytest.raises(DashboardError, match="failed to get auth secret team/mine"):
        await missing.for_cluster(cluster, "h:8265")
    no_key = HttpDashboards(_kube(lambda r: httpx2.Response(200, json={"metadata": {}, "data": {}})))
    with pytest.raises(DashboardError, match="""auth token key '"auth_token"' not found in secret team/mine"""):
        await no_key.for_cluster(cluster, "h:8265")


async def test_through_the_api_server_proxy_with_the_status_head_service() -> None:
    paths: list[tuple[str, str]] = []

    def api(request: httpx2.Request) -> httpx2.Response:
        paths.append((request.method, request.url.path))
        return httpx2.Response(200, json={"status": "SUCCEEDED", "end_time": 1700000001000})

    rules = (Rule("", ("services/proxy",), ("get", "create")),)
    dashboards = HttpDashboards(_kube(api, rules), use_kubernetes_proxy=True)
    cluster = {**CLUSTER, "status": {"head": {"serviceName": "custom-head"}}}
    dashboard = await dashboards.for_cluster(cluster, "ignored:8265")
    info = await dashboard.get_job_info("job-1")
    assert info.end_time == 1700000001000
    assert paths == [("GET", "/api/v1/namespaces/team/services/custom-head:dashboard/proxy/api/jobs/job-1")]
    fallback = await dashboards.for_cluster(CLUSTER, "ignored:8265")
    await fallback.get_job_info("job-2")
    assert paths[-1][1] == "/api/v1/namespaces/team/services/demo-head-svc:dashboard/proxy/api/jobs/job-2"


# ---------------------------------------------------------------------------------------------------- Serve


async def test_serve_put_and_get_are_kuberays_requests_and_errors() -> None:
    seen: list[tuple[str, str, bytes, str]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append((request.method, str(request.url), request.content, request.headers.get("content-type", "")))
        if request.method == "PUT":
            return httpx2.Response(200)
        return httpx2.Response(200, text='{"applications":{}}')

    dashboards = HttpDashboards(_kube(answer))
    _direct(dashboards, answer)
    dashboard = await dashboards.for_cluster(CLUSTER, "demo-head-svc.team.svc.cluster.local:8265")
    await dashboard.update_deployments(b'{"applications":[]}')
    assert await dashboard.get_serve_details() == b'{"applications":{}}'
    base = "http://demo-head-svc.team.svc.cluster.local:8265/api/serve/applications/"
    assert seen == [
        ("PUT", base, b'{"applications":[]}', "application/json"),
        ("GET", f"{base}?api_type=declarative", b"", ""),
    ]

    _direct(dashboards, lambda request: httpx2.Response(500, text="boom"))
    failing = await dashboards.for_cluster(CLUSTER, "h:8265")
    with pytest.raises(DashboardError, match=r"^UpdateDeployments fail: 500 Internal Server Error boom$"):
        await failing.update_deployments(b"{}")
    with pytest.raises(DashboardError, match=r"^GetServeDetails fail: 500 Internal Server Error boom$"):
        await failing.get_serve_details()


async def test_serve_put_through_the_api_server_proxy_is_an_update() -> None:
    paths: list[tuple[str, str]] = []

    def api(request: httpx2.Request) -> httpx2.Response:
        paths.append((request.method, request.url.path))
        return httpx2.Response(200)

    rules = (Rule("", ("services/proxy",), ("get", "create", "update")),)
    dashboards = HttpDashboards(_kube(api, rules), use_kubernetes_proxy=True)
    dashboard = await dashboards.for_cluster(CLUSTER, "ignored:8265")
    await dashboard.update_deployments(b"{}")
    assert paths == [("PUT", "/api/v1/namespaces/team/services/demo-head-svc:dashboard/proxy/api/serve/applications/")]


async def test_serve_details_through_the_api_server_proxy_keep_the_declarative_query() -> None:
    urls: list[str] = []

    def api(request: httpx2.Request) -> httpx2.Response:
        urls.append(str(request.url))
        return httpx2.Response(200, text='{"applications":{}}')

    rules = (Rule("", ("services/proxy",), ("get",)),)
    dashboards = HttpDashboards(_kube(api, rules), use_kubernetes_proxy=True)
    dashboard = await dashboards.for_cluster(CLUSTER, "ignored:8265")
    assert await dashboard.get_serve_details() == b'{"applications":{}}'
    proxy = "https://api/api/v1/namespaces/team/services/demo-head-svc:dashboard/proxy"
    assert urls == [f"{proxy}/api/serve/applications/?api_type=declarative"]


POD: dict[str, Any] = {"metadata": {"name": "demo-head-x", "namespace": "team"}, "status": {"podIP": "10.244.0.9"}}


async def test_the_serve_proxy_is_healthy_on_exactly_200() -> None:
    seen: list[str] = []

    def answer(code: int) -> Handler:
        def handler(request: httpx2.Request) -> httpx2.Response:
            seen.append(str(request.url))
            return httpx2.Response(code, text="success")

        return handler

    dashboards = HttpDashboards(_kube(answer(500)))
    _direct(dashboards, answer(200))
    assert await dashboards.proxy_healthy(POD, 8000)
    assert seen == ["http://10.244.0.9:8000/-/healthz"]
    _direct(dashboards, answer(204))
    assert not await dashboards.proxy_healthy(POD, 8000)

    def unreachable(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    _direct(dashboards, unreachable)
    assert not await dashboards.proxy_healthy(POD, 8000)


async def test_the_serve_proxy_through_the_api_server_is_the_pods_proxy() -> None:
    paths: list[str] = []

    def api(request: httpx2.Request) -> httpx2.Response:
        paths.append(request.url.path)
        return httpx2.Response(200)

    dashboards = HttpDashboards(_kube(api, (Rule("", ("pods/proxy",), ("get",)),)), use_kubernetes_proxy=True)
    assert await dashboards.proxy_healthy(POD, 8000)
    assert paths == ["/api/v1/namespaces/team/pods/demo-head-x:8000/proxy/-/healthz"]


async def test_a_head_pod_without_an_ip_is_not_healthy() -> None:
    dashboards = HttpDashboards(_kube(lambda r: httpx2.Response(200)))
    _direct(dashboards, lambda request: httpx2.Response(200))
    assert not await dashboards.proxy_healthy({"metadata": {"name": "h", "namespace": "team"}, "status": {}}, 8000)

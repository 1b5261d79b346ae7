"""The operator's client: watch stream line splitting, slim decoding, its own rate limiters, slow-start creation."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from raykube.api.resources import RAYCLUSTERS
from raykube.controllers.raycluster import slow_start
from raykube.kube.client import MAX_RETRIES, Kube
from raykube.kube.decode import _decode_head_plain, _lines, _slim_event
from raykube.kube.errors import ApiError
from raykube.kube.resources import CONFIGMAPS, NODES, PODS, SERVICE_ACCOUNTS, SERVICES

events = st.lists(st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"x")), max_size=20)


async def _chunks(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    start = 0
    for cut in sorted({c % (len(data) + 1) for c in cuts}):
        yield data[start:cut]
        start = cut
    yield data[start:]


async def _collect(data: bytes, cuts: list[int]) -> list[bytes]:
    return [line async for line in _lines(_chunks(data, cuts))]


@given(events, st.lists(st.integers(min_value=0, max_value=2000), max_size=30), st.booleans())
def test_lines_are_the_same_however_the_stream_is_cut(lines: list[bytes], cuts: list[int], final_newline: bool) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    expected = [line for line in data.split(b"\n") if line.strip()]
    assert asyncio.run(_collect(data, cuts)) == expected


def test_blank_lines_between_events_are_skipped() -> None:
    assert asyncio.run(_collect(b'{"a":1}\n\n \n{"b":2}', [3, 9])) == [b'{"a":1}', b'{"b":2}']


@pytest.mark.parametrize("per_resource", [False, True])
def test_a_sibling_shares_the_connection_but_not_the_rate_limiter(per_resource: bool) -> None:
    kube = Kube(object(), qps=5, burst=7, per_resource=per_resource)  # type: ignore[arg-type]
    twin = kube.sibling()
    assert twin.http is kube.http
    assert twin.limiter(NODES) is not kube.limiter(NODES)
    assert (twin.limiter(NODES).qps, twin.limiter(NODES).burst, twin.per_resource) == (5, 7, per_resource)


def test_a_client_shares_one_token_bucket_between_resources_as_a_clientset() -> None:
    kube = Kube(object(), qps=5, burst=7)  # type: ignore[arg-type]
    assert kube.limiter(PODS) is kube.limiter(SERVICES) is kube.limiter(RAYCLUSTERS)


async def test_per_resource_a_burst_of_pod_writes_leaves_the_other_resources_budgets_whole() -> None:
    """controller-runtime's client (KubeRay's --qps/--burst): a token bucket per group-version-kind, shared by its
    subresources (a RayCluster's status writes take from the RayClusters' bucket)."""
    kube = Kube(object(), qps=1, burst=3, per_resource=True)  # type: ignore[arg-type]
    assert kube.limiter(PODS) is kube.limiter(PODS)
    assert len({id(kube.limiter(r)) for r in (PODS, SERVICES, RAYCLUSTERS, SERVICE_ACCOUNTS)}) == 4
    for _ in range(3):
        await kube.limiter(PODS).acquire()
    assert kube.limiter(PODS).saved() < 1
    assert kube.limiter(SERVICES).saved() == pytest.approx(3)
    assert kube.limiter(RAYCLUSTERS).saved() == pytest.approx(3)


def test_a_bad_rate_limit_is_refused_when_the_client_is_made() -> None:
    with pytest.raises(ValueError, match="qps must be > 0"):
        Kube(object(), qps=0, burst=7, per_resource=True)  # type: ignore[arg-type]


def _kubeconfig(path: Path, namespace: str | None) -> Path:
    context: dict[str, str] = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": "ctx", "context": context},
                    {"name": "other", "context": {"cluster": "c", "user": "u"}},
                ],
                "current-context": "ctx",
            }
        )
    )
    return path


@pytest.mark.parametrize(("namespace", "expected"), [("team-a", "team-a"), (None, "default")])
async def test_the_context_namespace_is_the_clients_default(
    tmp_path: Path, namespace: str | None, expected: str
) -> None:
    kube = Kube.from_config(_kubeconfig(tmp_path / "config", namespace))
    try:
        assert kube.namespace == expected
        assert kube.sibling().namespace == expected
    finally:
        await kube.close()


async def test_a_named_context_gives_its_own_namespace(tmp_path: Path) -> None:
    kube = Kube.from_config(_kubeconfig(tmp_path / "config", "team-a"), context="other")
    try:
        assert kube.namespace == "default"
    finally:
        await kube.close()


async def test_subresource_writes_go_to_the_subresource_path() -> None:
    seen: list[tuple[str, str, str, Any]] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else None
        seen.append((request.method, request.url.path, request.headers.get("content-type", ""), body))
        return httpx2.Response(201, json={"status": {"token": "abc"}})

    kube = Kube(httpx2.AsyncClient(transport=httpx2.MockTransport(answer), base_url="https://api"))
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": []}}
    issued = await kube.create(SERVICE_ACCOUNTS, request, "ns", name="sa", subresource="token")
    await kube.patch(NODES, "node-0", {"status": {"phase": "Running"}}, subresource="status")
    await kube.close()
    assert issued["status"] == {"token": "abc"}
    assert seen == [
        ("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", "application/json", request),
        ("PATCH", "/api/v1/nodes/node-0/status", "application/merge-patch+json", {"status": {"phase": "Running"}}),
    ]


def _answers(*responses: tuple[int, dict[str, str]]) -> tuple[Kube, list[str]]:
    """A client whose server gives these (status, headers) answers in turn, then 201; and the methods it saw."""
    seen: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.method)
        code, headers = responses[len(seen) - 1] if len(seen) <= len(responses) else (201, {})
        body = {"kind": "Status", "reason": "TooManyRequests", "message": "slow down"} if code >= 400 else {}
        return httpx2.Response(code, json=body, headers=headers)

    return Kube(httpx2.AsyncClient(transport=httpx2.MockTransport(answer), base_url="https://api")), seen


async def test_a_429_or_5xx_with_retry_after_is_sent_again_as_client_go_does() -> None:
    kube, seen = _answers((429, {"Retry-After": "0"}), (503, {"Retry-After": "0"}))
    assert await kube.create(NODES, {"metadata": {"name": "n"}}) == {}
    assert seen == ["POST", "POST", "POST"]  # a write too: the server said it did not act


@pytest.mark.parametrize(
    "headers",
    [{}, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, {"Retry-After": "-1"}],
    ids=["none", "date", "neg"],
)
async def test_without_a_retry_after_in_seconds_the_error_is_raised_at_once(headers: dict[str, str]) -> None:
    kube, seen = _answers((503, headers))
    with pytest.raises(ApiError) as caught:
        await kube.create(NODES, {"metadata": {"name": "n"}})
    assert (caught.value.code, caught.value.retry_after, seen) == (503, None, ["POST"])


async def test_retries_stop_after_ten_and_the_error_carries_the_servers_wait() -> None:
    kube, seen = _answers(*[(429, {"Retry-After": "0"})] * (MAX_RETRIES + 5))
    with pytest.raises(ApiError) as caught:
        await kube.get(NODES, "n")
    assert (caught.value.code, caught.value.retry_after, len(seen)) == (429, 0.0, MAX_RETRIES + 1)


async def test_a_400_with_retry_after_is_not_retried() -> None:
    kube, seen = _answers((409, {"Retry-After": "0"}))
    with pytest.raises(ApiError):
        await kube.get(NODES, "n")
    assert seen == ["GET"]


@pytest.mark.parametrize(("count", "batches"), [(0, []), (1, [1]), (3, [1, 2]), (7, [1, 2, 4]), (10, [1, 2, 4, 3])])
def test_slow_start_doubles_its_batches(count: int, batches: list[int]) -> None:
    running = 0
    seen: list[int] = []

    async def create(item: Mapping[str, Any]) -> None:
        nonlocal running
        running += 1
        await asyncio.sleep(0)
        seen.append(running)
        await asyncio.sleep(0)
        running -= 1

    asyncio.run(slow_start([{"i": i} for i in range(count)], create))
    sizes: list[int] = []
    for size in batches:
        sizes.append(max(seen[:size]))
        seen = seen[size:]
    assert sizes == batches


def test_slow_start_stops_after_the_first_failing_batch() -> None:
    created: list[int] = []

    async def create(item: Mapping[str, Any]) -> None:
        created.append(item["i"])
        if item["i"] == 1:
            raise RuntimeError("quota exceeded")

    with pytest.raises(RuntimeError, match="quota"):
        asyncio.run(slow_start([{"i": i} for i in range(8)], create))
    assert sorted(created) == [0, 1, 2]  # batch 1 (item 0), batch 2 (items 1, 2) fails; nothing after it


# ---------------------------------------------------------------------------------- slim decoding (no managedFields)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
_META_KEYS = ("name", "generateName", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
              "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
              "finalizers", "selfLink")  # fmt: skip
_metas = st.dictionaries(st.sampled_from(_META_KEYS), _json, max_size=6)
_MANAGED = [{"manager": "kwok", "operation": "Update", "fieldsV1": {"f:status": {'k:{"type":"Ready"}': {".": {}}}}}]


@given(meta=_metas, spec=st.none() | _json, status=st.none() | _json, managed=st.booleans(), kind=st.sampled_from(
    ["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]))  # fmt: skip
def test_slim_watch_events_are_the_generic_decode_without_managed_fields(
    meta: dict[str, Any], spec: Any, status: Any, managed: bool, kind: str
) -> None:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(meta)}
    if managed:
        obj["metadata"]["managedFields"] = _MANAGED
    if spec is not None:
        obj["spec"] = spec
    if status is not None:
        obj["status"] = status
    line = json.dumps({"type": kind, "object": obj}).encode()
    expected = json.loads(line)
    expected["object"]["metadata"].pop("managedFields", None)
    assert _slim_event(line, PODS) == expected  # field by field (a spec/status resource)
    assert _slim_event(line, CONFIGMAPS) == expected  # decoded whole, the field dropped


def test_slim_keeps_every_field_of_other_shapes_and_the_status_of_an_error() -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "managedFields": _MANAGED},
              "data": {"a": "b"}, "immutable": True}  # fmt: skip
    event = _slim_event(json.dumps({"type": "ADDED", "object": config}).encode(), CONFIGMAPS)
    assert event["object"] == {**config, "metadata": {"name": "c"}}
    gone = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "too old",
            "reason": "Expired", "code": 410}  # fmt: skip
    assert _slim_event(json.dumps({"type": "ERROR", "object": gone}).encode(), PODS)["object"] == gone


@given(meta=_metas)
def test_a_creates_head_is_its_type_and_metadata_without_managed_fields(meta: dict[str, Any]) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {**meta, "managedFields": _MANAGED},
           "spec": {"containers": [{"name": "ray-head"}]}, "status": {"phase": "Pending"}}  # fmt: skip
    assert _decode_head_plain(json.dumps(pod).encode()) == {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


async def test_the_server_version_is_read_whatever_the_rbac_rules() -> None:
    """``GET /version`` (OP-3 reads its gitVersion): every client may read it, so the client's rules do not gate it."""
    seen: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(f"{request.method} {request.url.path}")
        return httpx2.Response(200, json={"major": "1", "minor": "36", "gitVersion": "v1.36.3"})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer), base_url="https://api")
    kube = Kube(http, rules=())
    assert (await kube.server_version())["gitVersion"] == "v1.36.3"
    await kube.close()
    assert seen == ["GET /version"]

"""The process runtime's Kubernetes client: plain JSON over the sandbox's ``httpx2`` connection.

The sandbox may not use the operator's client (``raykube.runtime``), and lightkube's typed models would drop fields
the runtime must copy back verbatim; this is the handful of calls a kubelet makes, on dicts.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx2
from lightkube import KubeConfig
from lightkube.config.client_adapter import ConnectionParams


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message


def _error(response: httpx2.Response) -> ApiError:
    try:
        body = response.json()
    except ValueError:
        body = {"message": response.text[:500]}
    if not isinstance(body, dict):
        body = {"message": str(body)[:500]}
    return ApiError(response.status_code, str(body.get("reason", "")), str(body.get("message", "")))


def path(api_version: str, plural: str, namespace: str | None = None, name: str | None = None) -> str:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    parts = [base]
    if namespace:
        parts.append(f"namespaces/{namespace}")
    parts.append(plural)
    if name:
        parts.append(name)
    return "/".join(parts)


class Api:
    def __init__(self, http: httpx2.AsyncClient) -> None:
        self.http = http

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path, user_agent: str = "raykube-process-runtime") -> Api:
        single = KubeConfig.from_file(kubeconfig).get()
        if single is None:
            raise ValueError(f"{kubeconfig} has no current context")
        params = ConnectionParams(timeout=httpx2.Timeout(30.0), trust_env=False)
        http = httpx2.AsyncClient(**params.httpx_params(single), limits=httpx2.Limits(max_connections=64))
        http.headers["User-Agent"] = user_agent
        return cls(http)

    async def close(self) -> None:
        await self.http.aclose()

    async def request(
        self,
        method: str,
        url: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        content_type: str = "application/json",
    ) -> Any:
        response = await self.http.request(
            method,
            url,
            content=json.dumps(body).encode() if body is not None else None,
            params={k: v for k, v in (params or {}).items() if v is not None},
            headers={"Content-Type": content_type} if body is not None else None,
        )
        if response.status_code >= 400:
            raise _error(response)
        return response.json() if response.content else None

    async def get(self, url: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", url)
        return result

    async def get_or_none(self, url: str) -> dict[str, Any] | None:
        try:
            return await self.get(url)
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    async def list(self, url: str, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", url, params=params)
        return result

    async def create(self, url: str, body: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("POST", url, body=body)
        return result

    async def patch(self, url: str, patch: Any, *, kind: str = "merge") -> dict[str, Any]:
        content_type = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }[kind]
        result: dict[str, Any] = await self.request("PATCH", url, body=patch, content_type=content_type)
        return result

    async def apply(self, url: str, body: Mapping[str, Any], field_manager: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "PATCH",
            url,
            body=body,
            params={"fieldManager": field_manager, "force": "true"},
            content_type="application/apply-patch+yaml",
        )
        return result

    async def delete(self, url: str, body: Mapping[str, Any] | None = None) -> None:
        try:
            await self.request("DELETE", url, body=body)
        except ApiError as exc:
            if exc.code != 404:
                raise

    async def watch(
        self, url: str, resource_version: str, *, timeout_seconds: int = 300, **params: Any
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(type, object) pairs until the server ends the watch; raises ApiError for an ERROR event (410 Gone)."""
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
            **params,
        }
        timeout = httpx2.Timeout(connect=10.0, read=timeout_seconds + 30.0, write=10.0, pool=10.0)
        async with self.http.stream(
            "GET", url, params={k: v for k, v in query.items() if v is not None}, timeout=timeout
        ) as response:
            if response.status_code >= 400:
                await response.aread()
                raise _error(response)
            async for line in response.aiter_lines():
                if not line:
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    raise ApiError(int(obj.get("code", 500)), str(obj.get("reason", "")), str(obj.get("message", "")))
                yield str(event.get("type")), obj

"""What a reconciler needs from the world, as Protocols the runtime (and, in table tests, ``FakeKube``) implements.

The layers run ``cli → runtime → controllers → builders → api → kube``: the runtime (informers, work queue, event
recorder) is *above* the controllers and wires them up, so the controllers state their needs here and never import
the runtime. ``raykube.kube.Kube`` is an :class:`Api`, ``raykube.kube.informer.ObjectCache`` a :class:`Cache`,
``raykube.kube.events.EventRecorder`` a :class:`Recorder`; ``raykube.kube.fake.FakeKube`` is all three in memory.

Objects are plain JSON dicts exactly as the API server sends them. Objects from a :class:`Cache` are shared with the
cache: never mutate them; copy first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from raykube.api.dashboard import JobInfo
from raykube.kube.resources import Resource


class Api(Protocol):
    """Writes and uncached reads."""

    async def get(
        self, res: Resource, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> dict[str, Any]: ...

    async def create(
        self,
        res: Resource,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        name: str | None = None,
        subresource: str | None = None,
        whole: bool = True,
    ) -> dict[str, Any]: ...

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]: ...

    async def replace(
        self,
        res: Resource,
        name: str,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]: ...

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
        grace_period_seconds: int | None = None,
        missing_ok: bool = False,
    ) -> None: ...

    async def delete_collection(self, res: Resource, namespace: str, labels: Mapping[str, str]) -> None: ...


class Cache(Protocol):
    """Objects the informers have seen; eventually consistent with the API server."""

    def get(self, res: Resource, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(self, res: Resource, namespace: str, labels: Mapping[str, str]) -> Sequence[Mapping[str, Any]]: ...


class Recorder(Protocol):
    """Kubernetes Events about an object."""

    def event(
        self,
        regarding: Mapping[str, Any],
        type_: str,
        reason: str,
        action: str,
        note: str,
        *,
        field_path: str = "",
    ) -> None: ...


class Dashboard(Protocol):
    """One Ray cluster's dashboard (KubeRay ``RayDashboardClientInterface``); errors are ``DashboardError``."""

    async def get_job_info(self, job_id: str) -> JobInfo: ...

    async def submit_job(self, request: Mapping[str, Any]) -> str: ...

    async def stop_job(self, job_id: str) -> None: ...

    async def update_deployments(self, config_json: bytes) -> None:
        """``PUT /api/serve/applications/`` (the RayService controller's Serve config)."""

    async def get_serve_details(self) -> bytes:
        """The body of ``GET /api/serve/applications/?api_type=declarative``."""


class Dashboards(Protocol):
    """Makes the dashboard client of a RayCluster (direct, or through the API server's service proxy with
    ``--use-kubernetes-proxy``), with the cluster's auth token when it has one."""

    async def for_cluster(self, cluster: Mapping[str, Any], dashboard_url: str) -> Dashboard: ...


class ServeProxies(Protocol):
    """The health of a head Pod's Ray Serve proxy (KubeRay ``RayHttpProxyClient.CheckProxyActorHealth``): ``GET
    /-/healthz`` on the Pod's serve port answered 200, directly or through the API server's pods proxy."""

    async def proxy_healthy(self, pod: Mapping[str, Any], port: int) -> bool: ...


class JobMetrics(Protocol):
    """What the RayJob controller reports besides its status (KubeRay ``RayJobMetricsManager``)."""

    def observe_job_duration(
        self, name: str, namespace: str, uid: str, *, deployment_status: str, retry_count: int, seconds: float
    ) -> None: ...

    def forget_job(self, name: str, namespace: str) -> None: ...

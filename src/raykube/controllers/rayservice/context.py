"""What the parts of the RayService reconciler share: one pass's :class:`ServiceContext`, the error that fails a
pass, the dependencies each part keeps, and small readers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from raykube.api import constants as c
from raykube.api.rayservice import RayServiceSpec
from raykube.api.resources import RayCluster, RayService
from raykube.controllers.base import Context, Deps
from raykube.kube.errors import ApiError

CONTROLLER = "rayservice"  # controller-runtime's name for KubeRay's RayService controller (metrics, work queue)
REQUEUE = float(c.RAYSERVICE_REQUEUE_SECONDS)  # KubeRay ServiceDefaultRequeueDuration
SERVICE_NAME_LABEL = "kubernetes.io/service-name"  # discoveryv1.LabelServiceName
NORMAL = c.EVENT_TYPE_NORMAL
WARNING = c.EVENT_TYPE_WARNING
ACTIVE, PENDING = "activeServiceStatus", "pendingServiceStatus"

Obj = Mapping[str, Any]


class RayServiceError(Exception):
    """A pass that could not finish; the runtime retries it with back-off (KubeRay's error-requeue)."""


@dataclass(frozen=True)
class ServiceContext(Context[RayService, RayServiceSpec]):
    """One pass over one valid RayService; ``original`` is its status as read, ``status`` this pass's working copy."""

    original: dict[str, Any]
    status: dict[str, Any]

    @property
    def service(self) -> RayService:
        return self.model

    def status_side(self, which: str) -> str:
        """The cluster name of a side of this pass's working status."""
        return str((self.status.get(which) or {}).get("rayClusterName") or "")

    def side(self, which: str) -> str:
        """The cluster name of a side of the status as read (``rayClusterName``)."""
        return str((self.original.get(which) or {}).get("rayClusterName") or "")


class WithDeps:
    """The dependencies (:class:`Deps`) the RayService reconciler and its parts (suspend, incremental upgrade) keep."""

    def __init__(self, deps: Deps) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.options = deps.options
        self.clock = deps.clock
        self.dashboards = deps.dashboards
        self.serve_proxies = deps.serve_proxies

    @property
    def gates(self) -> Mapping[str, bool]:
        return self.options.features


def gateway_api_missing(kind: str) -> str:
    """The error KubeRay's client answers when asked for a Gateway API kind the API server does not serve (its
    RESTMapper's ``NoKindMatchError``): the pass fails with it."""
    return f'no matches for kind "{kind}" in version "gateway.networking.k8s.io/v1"'


def service_error(note: str, _exc: ApiError) -> RayServiceError:
    """A failed write fails the pass with the note of its Warning event."""
    return RayServiceError(note)


def as_cluster(obj: Obj) -> RayCluster:
    return RayCluster.model_validate(obj)


def serving_port(pod: Obj) -> int:
    """KubeRay ``FindContainerPort(head container, "serve", 8000)``."""
    containers = (pod.get("spec") or {}).get("containers") or []
    if containers:
        for port in containers[c.RAY_CONTAINER_INDEX].get("ports") or []:
            if port.get("name") == c.SERVING_PORT_NAME:
                return int(port.get("containerPort") or c.DEFAULT_SERVING_PORT)
    return c.DEFAULT_SERVING_PORT

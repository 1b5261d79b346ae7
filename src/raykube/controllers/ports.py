"""What a reconciler needs from the world, as interfaces the runtime implements.

The layers run ``cli → runtime → controllers → build → api``: the runtime (HTTP client, informers, work queue, event
recorder) is *above* the controllers and wires them up, so the controllers state their needs here and never import
the runtime. Tests can satisfy these protocols with the real runtime against the sandbox; nothing here does I/O.

Objects are plain JSON dicts exactly as the API server sends them. Objects from a :class:`Cache` are shared with the
cache: never mutate them; copy first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from raykube.api import constants as c
from raykube.builders.batch import ObjectKind


@dataclass(frozen=True)
class Resource:
    """A Kubernetes resource type and how to address it."""

    group: str  # "" for the core API
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


PODS = Resource("", "v1", "Pod", "pods")
SERVICES = Resource("", "v1", "Service", "services")
SECRETS = Resource("", "v1", "Secret", "secrets")
CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps")
SERVICE_ACCOUNTS = Resource("", "v1", "ServiceAccount", "serviceaccounts")
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False)
EVENTS = Resource("events.k8s.io", "v1", "Event", "events")
LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases")
JOBS = Resource("batch", "v1", "Job", "jobs")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "Role", "roles")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
INGRESSES = Resource("networking.k8s.io", "v1", "Ingress", "ingresses")
RAYCLUSTERS = Resource(c.API_GROUP, "v1", c.KIND_RAYCLUSTER, "rayclusters")
RAYJOBS = Resource(c.API_GROUP, "v1", c.KIND_RAYJOB, "rayjobs")
RAYSERVICES = Resource(c.API_GROUP, "v1", c.KIND_RAYSERVICE, "rayservices")


def resource_of(kind: ObjectKind) -> Resource:
    """The ``Resource`` of a type a batch scheduler plugin creates (Volcano's PodGroup)."""
    return Resource(kind.group, kind.version, kind.kind, kind.plural)


class ApiError(Exception):
    """A non-2xx answer from the API server, with its Status."""

    def __init__(self, code: int, reason: str = "", message: str = "", body: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}" if reason else f"{code}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.body = dict(body or {})

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def conflict(self) -> bool:
        """409: AlreadyExists on create, Conflict on a stale resourceVersion."""
        return self.code == 409

    @property
    def gone(self) -> bool:
        """410: a watch or list resourceVersion too old to serve."""
        return self.code == 410


class Api(Protocol):
    """Writes and uncached reads."""

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]: ...

    async def create(self, res: Resource, body: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]: ...

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
        self, res: Resource, name: str, body: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]: ...

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
    ) -> None: ...

    async def delete_collection(self, res: Resource, namespace: str, labels: Mapping[str, str]) -> None: ...


class Cache(Protocol):
    """Objects the informers have seen; eventually consistent with the API server."""

    def get(self, res: Resource, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(self, res: Resource, namespace: str, labels: Mapping[str, str]) -> Sequence[Mapping[str, Any]]: ...


class Recorder(Protocol):
    """Kubernetes Events about an object (events.k8s.io/v1)."""

    def event(self, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str) -> None: ...

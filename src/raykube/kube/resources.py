"""Kubernetes resource types as the REST API addresses them, and the built-in ones raykube reads or writes.

The ray.io resources live with their models in :mod:`raykube.api.resources`.
"""

from __future__ import annotations

from dataclasses import dataclass


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
NODES = Resource("", "v1", "Node", "nodes", namespaced=False)
CORE_EVENTS = Resource("", "v1", "Event", "events")
ENDPOINTS = Resource("", "v1", "Endpoints", "endpoints")
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims")
PERSISTENT_VOLUMES = Resource("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False)
EVENTS = Resource("events.k8s.io", "v1", "Event", "events")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices")
LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases")
JOBS = Resource("batch", "v1", "Job", "jobs")
DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "Role", "roles")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
INGRESSES = Resource("networking.k8s.io", "v1", "Ingress", "ingresses")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies")
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "StorageClass", "storageclasses", namespaced=False)
CRDS = Resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False)
SELF_SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", namespaced=False
)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)

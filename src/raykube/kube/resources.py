"""Kubernetes resource types as the REST API addresses them, and the built-in ones raykube reads or writes.

This is the one resource table: the operator, the doctor, the CLI and the sandbox all address built-in types through
these constants. The ray.io resources live with their models in :mod:`raykube.api.resources`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Resource:
    """A Kubernetes resource type and how to address it."""

    group: str  # "" for the core API
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    # Its objects hold apiVersion, kind, metadata, spec and status and nothing else (a Pod, a Service, a custom
    # resource with a structural schema of that shape; not a ConfigMap, Secret, Event or EndpointSlice): the client
    # may then decode them field by field, skipping metadata.managedFields without building it (client.py, slim).
    spec_status: bool = field(default=False, compare=False)
    # What a user may type for it besides the plural (kubectl's short names and the singular): the doctor's targets
    # and the file names of a dump.
    short_names: tuple[str, ...] = field(default=(), compare=False)

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


PODS = Resource("", "v1", "Pod", "pods", spec_status=True, short_names=("pod", "po"))
SERVICES = Resource("", "v1", "Service", "services", spec_status=True, short_names=("service", "svc"))
SECRETS = Resource("", "v1", "Secret", "secrets", short_names=("secret",))
CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", short_names=("configmap", "cm"))
SERVICE_ACCOUNTS = Resource("", "v1", "ServiceAccount", "serviceaccounts", short_names=("serviceaccount", "sa"))
NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False, spec_status=True, short_names=("ns",))
NODES = Resource("", "v1", "Node", "nodes", namespaced=False, spec_status=True, short_names=("node", "no"))
CORE_EVENTS = Resource("", "v1", "Event", "events", short_names=("event", "ev"))
ENDPOINTS = Resource("", "v1", "Endpoints", "endpoints")
PERSISTENT_VOLUME_CLAIMS = Resource(
    "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", spec_status=True, short_names=("pvc", "pvcs")
)
PERSISTENT_VOLUMES = Resource("", "v1", "PersistentVolume", "persistentvolumes", namespaced=False, spec_status=True)
RESOURCE_QUOTAS = Resource("", "v1", "ResourceQuota", "resourcequotas", short_names=("resourcequota", "quota"))
LIMIT_RANGES = Resource("", "v1", "LimitRange", "limitranges", short_names=("limitrange", "limits"))
EVENTS = Resource("events.k8s.io", "v1", "Event", "events")
ENDPOINT_SLICES = Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", short_names=("endpointslice",))
LEASES = Resource("coordination.k8s.io", "v1", "Lease", "leases", spec_status=True)
JOBS = Resource("batch", "v1", "Job", "jobs", spec_status=True, short_names=("job",))
DEPLOYMENTS = Resource(
    "apps", "v1", "Deployment", "deployments", spec_status=True, short_names=("deployment", "deploy")
)
HORIZONTAL_POD_AUTOSCALERS = Resource(
    "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", short_names=("hpa",)
)
ROLES = Resource("rbac.authorization.k8s.io", "v1", "Role", "roles")
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
INGRESSES = Resource(
    "networking.k8s.io", "v1", "Ingress", "ingresses", spec_status=True, short_names=("ingress", "ing")
)
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", short_names=("netpol",))
# cert-manager's (KubeRay v1.7.0's mTLS: served only where cert-manager is installed).
CERTIFICATES = Resource(
    "cert-manager.io", "v1", "Certificate", "certificates", spec_status=True, short_names=("certificate", "cert")
)
ISSUERS = Resource("cert-manager.io", "v1", "Issuer", "issuers", spec_status=True, short_names=("issuer",))
# The Gateway API's (KubeRay v1.7.0's RayService incremental upgrade: served only where its CRDs are installed).
GATEWAYS = Resource("gateway.networking.k8s.io", "v1", "Gateway", "gateways", spec_status=True, short_names=("gtw",))
HTTPROUTES = Resource("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes", spec_status=True)
STORAGE_CLASSES = Resource(
    "storage.k8s.io", "v1", "StorageClass", "storageclasses", namespaced=False, short_names=("sc",)
)
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    namespaced=False,
    short_names=("crd",),
)
SELF_SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", namespaced=False
)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False
)

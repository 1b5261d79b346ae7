"""The four ray.io kinds: their whole-object models and what their CRDs declare (names, versions, columns).

Printer columns, served versions and categories follow KubeRay v1.6.1's CRDs, so `kubectl get raycluster` prints
what KubeRay users and their scripts expect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from raykube.api import addresses
from raykube.api.raycluster import RayClusterSpec, RayClusterStatus
from raykube.api.raycronjob import RayCronJobSpec, RayCronJobStatus
from raykube.api.rayjob import RayJobSpec, RayJobStatus
from raykube.api.rayservice import RayServiceSpec, RayServiceStatuses
from raykube.api.schema import RayModel
from raykube.kube.resources import Resource

GROUP = addresses.GROUP
VERSION = addresses.VERSION
API_VERSION = f"{GROUP}/{VERSION}"


class _Object(RayModel):
    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class RayCluster(_Object):
    spec: RayClusterSpec | None = None
    status: RayClusterStatus | None = None


class RayJob(_Object):
    spec: RayJobSpec | None = None
    status: RayJobStatus | None = None


class RayService(_Object):
    spec: RayServiceSpec | None = None
    status: RayServiceStatuses | None = None


class RayCronJob(_Object):
    spec: RayCronJobSpec | None = None
    status: RayCronJobStatus | None = None


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    json_path: str
    type: str
    priority: int = 0

    def to_crd(self) -> dict[str, Any]:
        column: dict[str, Any] = {"jsonPath": self.json_path, "name": self.name, "type": self.type}
        if self.priority:
            column["priority"] = self.priority
        return column


@dataclass(frozen=True)
class Kind:
    """One ray.io kind and how its CRD presents it."""

    name: str
    plural: str
    model: type[_Object]
    columns: tuple[PrinterColumn, ...]
    served_v1alpha1: bool
    v1alpha1_columns: bool  # KubeRay shows printer columns on v1alpha1 only for RayCluster
    description: str
    v1alpha1_optional: tuple[str, ...] = ()  # fields v1 requires and v1alpha1 does not, as dotted paths

    @property
    def singular(self) -> str:
        return self.name.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"

    @property
    def list_kind(self) -> str:
        return f"{self.name}List"

    @property
    def resource(self) -> Resource:
        return addresses.BY_KIND[self.name]


_AGE = PrinterColumn("age", ".metadata.creationTimestamp", "date")

RAYCLUSTER = Kind(
    "RayCluster",
    "rayclusters",
    RayCluster,
    (
        PrinterColumn("desired workers", ".status.desiredWorkerReplicas", "integer"),
        PrinterColumn("available workers", ".status.availableWorkerReplicas", "integer"),
        PrinterColumn("cpus", ".status.desiredCPU", "string"),
        PrinterColumn("memory", ".status.desiredMemory", "string"),
        PrinterColumn("gpus", ".status.desiredGPU", "string"),
        PrinterColumn("tpus", ".status.desiredTPU", "string", priority=1),
        PrinterColumn("status", ".status.state", "string"),
        _AGE,
        PrinterColumn("head pod IP", ".status.head.podIP", "string", priority=1),
        PrinterColumn("head service IP", ".status.head.serviceIP", "string", priority=1),
    ),
    served_v1alpha1=True,
    v1alpha1_columns=True,
    description="RayCluster is a Ray cluster on Kubernetes: one head Pod, groups of worker Pods, a head Service.",
)
RAYJOB = Kind(
    "RayJob",
    "rayjobs",
    RayJob,
    (
        PrinterColumn("job status", ".status.jobStatus", "string"),
        PrinterColumn("deployment status", ".status.jobDeploymentStatus", "string"),
        PrinterColumn("ray cluster name", ".status.rayClusterName", "string"),
        PrinterColumn("start time", ".status.startTime", "string"),
        PrinterColumn("end time", ".status.endTime", "string"),
        _AGE,
    ),
    served_v1alpha1=True,
    v1alpha1_columns=False,
    description="RayJob runs a Ray job, on a RayCluster it creates for the job or on an existing one.",
)
RAYSERVICE = Kind(
    "RayService",
    "rayservices",
    RayService,
    (
        PrinterColumn("service status", ".status.serviceStatus", "string"),
        PrinterColumn("num serve endpoints", ".status.numServeEndpoints", "string"),
    ),
    served_v1alpha1=True,
    v1alpha1_columns=False,
    description="RayService runs Ray Serve applications and upgrades their RayCluster without downtime.",
    v1alpha1_optional=("spec.rayClusterConfig",),
)
RAYCRONJOB = Kind(
    "RayCronJob",
    "raycronjobs",
    RayCronJob,
    (
        PrinterColumn("schedule", ".spec.schedule", "string"),
        PrinterColumn("timezone", ".spec.timeZone", "string"),
        PrinterColumn("last schedule", ".status.lastScheduleTime", "date"),
        _AGE,
        PrinterColumn("suspend", ".spec.suspend", "boolean"),
    ),
    served_v1alpha1=False,
    v1alpha1_columns=False,
    description="RayCronJob creates a RayJob on a cron schedule (alpha; KubeRay's RayCronJob feature gate).",
)

KINDS = (RAYCLUSTER, RAYJOB, RAYSERVICE, RAYCRONJOB)

# How the API server addresses them (the storage version, v1).
RAYCLUSTERS = RAYCLUSTER.resource
RAYJOBS = RAYJOB.resource
RAYSERVICES = RAYSERVICE.resource
RAYCRONJOBS = RAYCRONJOB.resource

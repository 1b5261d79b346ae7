"""Facts the rules share, derived from a :class:`~raykube.doctor.snapshot.Snapshot` without I/O (docs/architecture.md,
"The doctor").

* :mod:`.times`: Kubernetes timestamps and kubectl-style ages.
* :mod:`.objects`: references, conditions and deletion of any object.
* :mod:`.pods`: phase, readiness, container states, requests.
* :mod:`.references`: what a Pod spec references (ConfigMaps, Secrets, PVCs).
* :mod:`.events`: count and last time of an event whichever API wrote it (core/v1 or events.k8s.io/v1).
* :mod:`.operators`: the operator Deployments (raykube's chart or KubeRay's), their readiness and watched namespaces.
* :mod:`.reviews`: the results of the SubjectAccessReviews made for the operator's ServiceAccount.
* :mod:`.cluster`: :class:`ClusterView`, one RayCluster with its parsed spec, its head and worker Pods per group, the
  desired worker counts (KubeRay's own arithmetic from :mod:`raykube.builders.groups`), its head Service and what the
  operator did.
* :mod:`.images`: the Ray version in an image tag; environment names whose values are redacted.

Everything is re-exported here, so rules read ``facts.cluster_views(snap)`` or ``from raykube.doctor.facts import
ClusterView`` whichever module a fact lives in.
"""

from __future__ import annotations

from raykube.doctor.facts.cluster import ClusterView, GroupView, cluster_view, cluster_views, ray_resources
from raykube.doctor.facts.events import event_count, event_evidence, event_message, event_time, latest_events
from raykube.doctor.facts.images import REDACTED, SENSITIVE_ENV, image_ray_version
from raykube.doctor.facts.objects import condition_true, conditions, incremental_upgrade, ref, terminating
from raykube.doctor.facts.operators import (
    COMPONENT_LABEL,
    is_operator_deployment,
    operator_pods,
    operators,
    selector_matches,
)
from raykube.doctor.facts.pods import (
    PHASE_PENDING,
    POD_INITIALIZED,
    POD_SCHEDULED,
    REASON_SCHEDULING_GATED,
    REASON_UNSCHEDULABLE,
    ContainerState,
    container_requests,
    container_states,
    containers,
    group_of,
    is_ready,
    node_type,
    phase,
    pod_requests,
    pod_spec,
    quantity,
    ray_container,
)
from raykube.doctor.facts.references import ConfigRef, claim_names, config_refs
from raykube.doctor.facts.reviews import AccessResult, Refusal, access, refusals, service_account_user
from raykube.doctor.facts.times import format_time, human_age, parse_time, seconds_since

__all__ = [
    "COMPONENT_LABEL",
    "PHASE_PENDING",
    "POD_INITIALIZED",
    "POD_SCHEDULED",
    "REASON_SCHEDULING_GATED",
    "REASON_UNSCHEDULABLE",
    "REDACTED",
    "SENSITIVE_ENV",
    "AccessResult",
    "ClusterView",
    "ConfigRef",
    "ContainerState",
    "GroupView",
    "Refusal",
    "access",
    "claim_names",
    "cluster_view",
    "cluster_views",
    "condition_true",
    "conditions",
    "config_refs",
    "container_requests",
    "container_states",
    "containers",
    "event_count",
    "event_evidence",
    "event_message",
    "event_time",
    "format_time",
    "group_of",
    "human_age",
    "image_ray_version",
    "incremental_upgrade",
    "is_operator_deployment",
    "is_ready",
    "latest_events",
    "node_type",
    "operator_pods",
    "operators",
    "parse_time",
    "phase",
    "pod_requests",
    "pod_spec",
    "quantity",
    "ray_container",
    "ray_resources",
    "ref",
    "refusals",
    "seconds_since",
    "selector_matches",
    "service_account_user",
    "terminating",
]

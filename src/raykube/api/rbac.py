"""The operator's RBAC, in one place: every API call the operator makes must be allowed by these rules.

The rules are least privilege: exactly the (API group, resource, verb) triples the code calls, nothing KubeRay grants
for features raykube does not implement yet, and no ``get`` where the operator only reads its informer caches (list
and watch); ``get`` on pods and RayClusters stays because the autoscaler's Role grants it. ``make reliability``
counts which triples the whole test run called (tests/rbac_usage.py).

They are rendered into the Helm chart's ClusterRole (or the per-namespace Roles of a single-namespace install) and
the leader-election Role (``raykube rbac generate`` writes ``helm/raykube-operator/files/*.yaml``; a test fails when
those files are stale). A :class:`~raykube.kube.client.Kube` client built with ``rules=`` refuses, before sending
it, any request these rules do not allow, and the tests run the operator that way, so a new API call without a new
rule fails a test instead of failing in a user's cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from raykube.api import constants as c
from raykube.kube.rbac import Rule, allows

__all__ = [  # Rule and allows are re-exported: the rules here are made of them
    "BATCH_SCHEDULER_RULES",
    "DIAGNOSIS_CLUSTER_RULES",
    "DIAGNOSIS_RULES",
    "LEADER_ELECTION_RULES",
    "OPERATOR_RULES",
    "Rule",
    "allows",
    "cluster_role",
    "operator_rules",
    "policy_rules",
    "role",
]

# What the RayCluster, RayJob, RayCronJob and RayService controllers call (raykube.controllers.raycluster, the
# .rayjob package, .raycronjob, .rayservice; raykube.runtime.manager, raykube.kube.events, raykube.runtime.dashboard).
OPERATOR_RULES: tuple[Rule, ...] = (
    # patch: a RayService head Pod's ray.io/serve label. pods/resize is never called by the operator itself:
    # Kubernetes lets it create the autoscaler's Role (which grants it, and patch) only if it holds them (RBAC
    # escalation prevention).
    Rule("", ("pods",), ("create", "delete", "deletecollection", "get", "list", "patch", "watch")),
    Rule("", ("pods/resize",), ("patch",)),
    # update: a RayJob's head Service follows the cluster of its latest attempt; delete: a suspended RayService's
    # head and serve Services (KubeRay v1.7.0 handleSuspend).
    Rule("", ("services",), ("create", "delete", "list", "update", "watch")),
    # --use-kubernetes-proxy: the Ray dashboard through the API server (GET job info and Serve applications, POST
    # submit and stop, PUT the Serve config), and a RayService head Pod's Serve proxy health (GET /-/healthz).
    Rule("", ("services/proxy",), ("create", "get", "update")),
    Rule("", ("pods/proxy",), ("get",)),
    # A RayService's serve endpoints (numServeEndpoints), read from an informer.
    Rule("discovery.k8s.io", ("endpointslices",), ("list", "watch")),
    Rule("", ("serviceaccounts",), ("create", "get", "list", "watch")),
    # update: the mTLS controller's ownerReference from a cert-manager Secret to its Certificate; delete: as KubeRay
    # v1.7.0's chart grants it (RayClusterMTLS).
    Rule("", ("secrets",), ("create", "delete", "get", "list", "update", "watch")),
    # delete: a RayJob's submitter Job between attempts and on suspend.
    Rule("batch", ("jobs",), ("create", "delete", "list", "watch")),
    Rule("networking.k8s.io", ("ingresses",), ("create", "list", "update", "watch")),
    # The embedded (rocksdb) GCS store's claim (KubeRay v1.7.0 Owns(PersistentVolumeClaim), granted always as its
    # role.yaml does): created, adopted with get when a create answers AlreadyExists, its owner reference updated to
    # follow storage.deletionPolicy. Never deleted by the operator: the garbage collector does that.
    Rule("", ("persistentvolumeclaims",), ("create", "get", "list", "update", "watch")),
    Rule("rbac.authorization.k8s.io", ("roles", "rolebindings"), ("create", "list", "watch")),
    # events.k8s.io/v1 Events, as KubeRay v1.7.0 writes them (create; patch: a repeat's series). Not core events:
    # KubeRay v1.7.0's ClusterRole dropped them, so an operator writing core/v1 Events there is forbidden.
    Rule("events.k8s.io", ("events",), ("create", "patch")),
    # patch: the GCS FT finalizer removed, and the autoscaler's Role grants get/patch on RayClusters (see above).
    # create/delete/update: a RayJob's cluster (created, deleted between attempts, worker groups suspended); update:
    # the GCS FT finalizer added (KubeRay's Update of its Go object).
    Rule(c.API_GROUP, ("rayclusters",), ("create", "delete", "get", "list", "patch", "update", "watch")),
    Rule(c.API_GROUP, ("rayclusters/status",), ("patch",)),
    # update: the RayJob finalizer added (KubeRay's Update of its Go object); patch: the finalizer removed; delete:
    # DeleteSelf and DELETE_RAYJOB_CR_AFTER_JOB_FINISHES; create: a RayCronJob's.
    Rule(c.API_GROUP, ("rayjobs",), ("create", "delete", "list", "patch", "update", "watch")),
    Rule(c.API_GROUP, ("rayjobs/status",), ("update",)),
    # The RayCronJob controller runs only with its feature gate; its rules are granted always, as KubeRay's role.yaml
    # grants them (so turning the gate on needs no RBAC change).
    Rule(c.API_GROUP, ("raycronjobs",), ("list", "watch")),
    Rule(c.API_GROUP, ("raycronjobs/status",), ("update",)),
    # The RayService controller (the dashboard's Serve calls are services/proxy; the head Pod's label, pods patch;
    # the RayService finalizer of KubeRay v1.6.2: update adds it, as KubeRay's Update of its Go object; patch removes
    # it).
    Rule(c.API_GROUP, ("rayservices",), ("list", "patch", "update", "watch")),
    Rule(c.API_GROUP, ("rayservices/status",), ("update",)),
    # Setting blockOwnerDeletion on children needs update on the owner's finalizers where the
    # OwnerReferencesPermissionEnforcement admission plugin runs (OpenShift, for one).
    Rule(
        c.API_GROUP,
        ("rayclusters/finalizers", "rayjobs/finalizers", "raycronjobs/finalizers", "rayservices/finalizers"),
        ("update",),
    ),
    # The NetworkPolicy controller (raykube.controllers.networkpolicy) runs only with the RayClusterNetworkPolicy
    # gate; its rule is granted always, as KubeRay v1.7.0's role.yaml grants it. get: a same-named policy the cache
    # does not hold (a create answered AlreadyExists).
    Rule("networking.k8s.io", ("networkpolicies",), ("create", "delete", "get", "list", "update", "watch")),
    # The RayClusterMTLS controller (raykube.controllers.raycluster_mtls; gate and cert-manager) and the RayCluster
    # controller's wait for its certificates (get); granted always, as KubeRay v1.7.0's role.yaml grants them.
    Rule(c.CERT_MANAGER_GROUP, ("certificates",), ("create", "get", "list", "update", "watch")),
    Rule(c.CERT_MANAGER_GROUP, ("certificates/status",), ("get",)),
    Rule(c.CERT_MANAGER_GROUP, ("issuers",), ("create", "get", "list", "watch")),
    # A RayService's incremental upgrade (gate RayServiceIncrementalUpgrade, on): its Gateway and HTTPRoute, created,
    # updated, read, deleted on suspend; the verbs of KubeRay v1.7.0's kubebuilder markers, granted always as there.
    Rule(c.GATEWAY_API_GROUP, ("gateways", "httproutes"), ("create", "delete", "get", "list", "update", "watch")),
)

# What the --batch-scheduler plugins add (raykube.builders.batch): their objects are created, watched (KubeRay ``Owns``)
# and updated. Granted only when that scheduler is chosen, as KubeRay's chart grants podgroups only for
# batchScheduler.name=volcano (or the deprecated batchScheduler.enabled). YuniKorn creates nothing.
BATCH_SCHEDULER_RULES: Mapping[str, tuple[Rule, ...]] = {
    c.BATCH_SCHEDULER_VOLCANO: (
        Rule(c.VOLCANO_SCHEDULING_GROUP, (c.VOLCANO_PODGROUPS_PLURAL,), ("create", "list", "update", "watch")),
    ),
    # KubernetesWAS (v1.7.0, chosen by its gate; KubeRay's chart adds the rule with that gate, HELM-6): immutable
    # objects, so stale ones are deleted (UID precondition) and recreated; update only drops the PodGroup finalizer.
    c.BATCH_SCHEDULER_KUBERNETES_WAS: (
        Rule(
            c.WAS_GROUP,
            (c.WAS_PODGROUPS_PLURAL, c.WAS_WORKLOADS_PLURAL),
            ("create", "delete", "list", "update", "watch"),
        ),
    ),
}


# What --diagnose-after adds (raykube.runtime.diagnosis, the doctor's narrow gather in raykube.doctor.gather): reads
# of what a root cause can be found in and the operator itself never lists. Granted only with the chart's
# diagnoseAfter, so a drop-in install's RBAC stays KubeRay's. Nothing is written but the Events the operator already
# may create; no pods/exec.
DIAGNOSIS_RULES: tuple[Rule, ...] = (
    Rule("", ("configmaps", "events", "limitranges", "resourcequotas"), ("list",)),
    Rule("autoscaling", ("horizontalpodautoscalers",), ("list",)),
)
# ... and its cluster-scoped reads, in the ClusterRole only: a single-namespace install's Roles cannot grant them, and
# the doctor then says what it could not check (Nodes, StorageClasses) instead.
DIAGNOSIS_CLUSTER_RULES: tuple[Rule, ...] = (
    Rule("", ("nodes",), ("list",)),
    Rule("storage.k8s.io", ("storageclasses",), ("list",)),
    Rule(c.GATEWAY_API_GROUP, ("gatewayclasses",), ("list",)),
    Rule("apiextensions.k8s.io", ("customresourcedefinitions",), ("get",)),
)


def operator_rules(batch_scheduler: str = "", *, diagnosis: bool = False) -> tuple[Rule, ...]:
    """The operator's rules with ``--batch-scheduler=<batch_scheduler>`` ("" for none), and with ``--diagnose-after``
    (``diagnosis``)."""
    extra = DIAGNOSIS_RULES + DIAGNOSIS_CLUSTER_RULES if diagnosis else ()
    return OPERATOR_RULES + BATCH_SCHEDULER_RULES.get(batch_scheduler, ()) + extra


# What leader election calls, in the leader-election namespace only (raykube.runtime.leader). core/v1 events stay, as
# in KubeRay's leader-election Role (client-go's leader election may record core Events; v1.7.0 kept the rule).
LEADER_ELECTION_RULES: tuple[Rule, ...] = (
    Rule("coordination.k8s.io", ("leases",), ("create", "get", "update")),
    Rule("", ("events",), ("create", "patch")),
)


def cluster_role(name: str, rules: Sequence[Rule], labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "rules": [rule.to_policy_rule() for rule in rules],
    }


def role(name: str, namespace: str, rules: Sequence[Rule], labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "rules": [rule.to_policy_rule() for rule in rules],
    }


def policy_rules(rules: Sequence[Rule]) -> list[dict[str, Any]]:
    """The ``rules:`` list of a Role or ClusterRole."""
    return [rule.to_policy_rule() for rule in rules]

"""The Helm chart's RBAC rule files are exactly what raykube.api.rbac generates."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from raykube.api import rbac
from raykube.cli.rbac import rendered
from raykube.kube.client import Kube
from raykube.kube.errors import OutsideRbac
from raykube.kube.resources import Resource
from tests import rbac_usage

FILES = Path(__file__).resolve().parents[2] / "helm" / "raykube-operator" / "files"


def test_the_chart_rule_files_are_current() -> None:
    for name, text in rendered().items():
        assert (FILES / name).read_text() == text, f"{name} is stale: run `raykube rbac generate`"


def test_rules_allow_exactly_what_they_list() -> None:
    assert rbac.allows(rbac.OPERATOR_RULES, "create", "", "pods")
    assert not rbac.allows(rbac.OPERATOR_RULES, "update", "", "pods")
    assert not rbac.allows(rbac.OPERATOR_RULES, "create", "apps", "pods")
    assert rbac.allows(rbac.OPERATOR_RULES, "patch", "ray.io", "rayclusters/status")
    # A RayCluster's spec is replaced only by a RayJob's DeleteWorkers rule (it suspends every worker group).
    assert rbac.allows(rbac.OPERATOR_RULES, "update", "ray.io", "rayclusters")
    assert rbac.allows(rbac.OPERATOR_RULES, "update", "ray.io", "rayjobs/status")
    # A RayJob or RayService is updated whole once: KubeRay's Update of its Go object that adds the finalizer.
    assert rbac.allows(rbac.OPERATOR_RULES, "update", "ray.io", "rayjobs")
    assert rbac.allows(rbac.OPERATOR_RULES, "update", "ray.io", "rayservices")
    assert not rbac.allows(rbac.OPERATOR_RULES, "update", "ray.io", "raycronjobs")


def test_batch_scheduler_rules_come_only_with_their_scheduler() -> None:
    assert rbac.operator_rules() == rbac.OPERATOR_RULES
    assert rbac.operator_rules("yunikorn") == rbac.OPERATOR_RULES  # YuniKorn creates nothing
    assert not rbac.allows(rbac.OPERATOR_RULES, "create", "scheduling.volcano.sh", "podgroups")
    volcano = rbac.operator_rules("volcano")
    for verb in ("create", "list", "update", "watch"):
        assert rbac.allows(volcano, verb, "scheduling.volcano.sh", "podgroups")
    assert not rbac.allows(volcano, "delete", "scheduling.volcano.sh", "podgroups")  # the GC deletes them
    assert (FILES / "batch-scheduler-volcano-rules.yaml").exists()
    # KubernetesWAS (its gate chooses it): immutable objects, deleted and recreated; update drops a finalizer
    was = rbac.operator_rules("kubernetes-was-v1alpha2")
    for resource in ("workloads", "podgroups"):
        assert not rbac.allows(rbac.OPERATOR_RULES, "create", "scheduling.k8s.io", resource)
        for verb in ("create", "delete", "list", "update", "watch"):
            assert rbac.allows(was, verb, "scheduling.k8s.io", resource)
        assert not rbac.allows(was, "patch", "scheduling.k8s.io", resource)
    assert (FILES / "batch-scheduler-kubernetes-was-v1alpha2-rules.yaml").exists()


@pytest.mark.parametrize("triple", sorted(rbac_usage.granted()), ids=lambda t: " ".join(x or "core" for x in t))
def test_without_any_one_granted_permission_its_call_is_refused_by_name(triple: tuple[str, str, str]) -> None:
    """Remove one (verb, group, resource) from the rules: a call needing it is refused, naming verb and resource.
    (The test run counts which of these the operator calls: the RBAC row of docs/reliability.md.)"""
    verb, group, resource = triple
    rules = rbac_usage.GRANTED_RULES
    reduced = [
        replace(r, verbs=tuple(v for v in r.verbs if v != verb)) if r.group == group and resource in r.resources else r
        for r in rules
    ]
    plural, _, subresource = resource.partition("/")
    res = Resource(group, "v1", "Any", plural)
    # field_manager: not the operator's, so these calls are not counted as the operator's use (tests/rbac_usage.py)
    full, less = (Kube(object(), rules=r, field_manager="raykube-tests") for r in (rules, reduced))  # type: ignore[arg-type]
    full._check(verb, res, subresource or None)
    with pytest.raises(OutsideRbac, match=f"called {verb} on {re.escape(resource)} "):
        less._check(verb, res, subresource or None)


@pytest.mark.parametrize(
    ("method", "path", "query", "triple"),
    [
        ("GET", "/api/v1/namespaces/n/pods", {"watch": "true"}, ("watch", "", "pods")),
        ("GET", "/api/v1/namespaces/n/pods", {}, ("list", "", "pods")),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/n/leases/l", {}, ("get", "coordination.k8s.io", "leases")),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/n/leases/l", {}, ("update", "coordination.k8s.io", "leases")),
        ("PATCH", "/apis/ray.io/v1/namespaces/n/rayclusters/c/status", {}, ("patch", "ray.io", "rayclusters/status")),
        ("DELETE", "/api/v1/namespaces/n/pods", {}, ("deletecollection", "", "pods")),
        ("POST", "/api/v1/namespaces/n/events", {}, ("create", "", "events")),
        ("GET", "/api/v1/nodes", {}, ("list", "", "nodes")),
        ("GET", "/version", {}, None),
    ],
)
def test_a_request_path_maps_to_the_rbac_triple_the_authorizer_checks(
    method: str, path: str, query: dict[str, str], triple: tuple[str, str, str] | None
) -> None:
    assert rbac_usage.triple_of(method, path, query) == triple

"""The Helm chart's RBAC rule files are exactly what raykube.api.rbac generates."""

from __future__ import annotations

from pathlib import Path

from raykube.api import rbac
from raykube.cli.rbac import rendered

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
    assert not rbac.allows(rbac.OPERATOR_RULES, "update", "ray.io", "rayjobs")  # the spec is never replaced


def test_batch_scheduler_rules_come_only_with_their_scheduler() -> None:
    assert rbac.operator_rules() == rbac.OPERATOR_RULES
    assert rbac.operator_rules("yunikorn") == rbac.OPERATOR_RULES  # YuniKorn creates nothing
    assert not rbac.allows(rbac.OPERATOR_RULES, "create", "scheduling.volcano.sh", "podgroups")
    volcano = rbac.operator_rules("volcano")
    for verb in ("create", "list", "update", "watch"):
        assert rbac.allows(volcano, verb, "scheduling.volcano.sh", "podgroups")
    assert not rbac.allows(volcano, "delete", "scheduling.volcano.sh", "podgroups")  # the GC deletes them
    assert (FILES / "batch-scheduler-volcano-rules.yaml").exists()

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
    assert not rbac.allows(rbac.OPERATOR_RULES, "patch", "ray.io", "rayclusters")  # the spec is never written

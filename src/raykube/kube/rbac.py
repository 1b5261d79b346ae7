"""RBAC PolicyRules as data: what a set of rules allows, and their wire form (``rbac.authorization.k8s.io/v1``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rule:
    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def allows(self, verb: str, group: str, resource: str) -> bool:
        return group == self.group and resource in self.resources and verb in self.verbs

    def to_policy_rule(self) -> dict[str, Any]:
        return {"apiGroups": [self.group], "resources": list(self.resources), "verbs": list(self.verbs)}


def allows(rules: Iterable[Rule], verb: str, group: str, resource: str) -> bool:
    return any(rule.allows(verb, group, resource) for rule in rules)

"""Rule coverage that means "fires": the doctor tests assert rule ids through these helpers, which record each rule
they saw in the findings the doctor returned.

* :func:`assert_fires`, :func:`one_finding`, :func:`findings_of`, :func:`findings_by_rule` assert that a rule is
  among the actual findings (of a :class:`~raykube.doctor.model.Report`, a list of findings, or the JSON of a report)
  and only then add it to :data:`FIRED`, this process's set of "rules seen firing under an assertion".
* :func:`assert_quiet` is the near miss: the rules are not among the findings (nothing is recorded).
* :func:`record` is for checks that assert by other means: a ``wait_for`` predicate once it held, a golden file once
  the output matched it (:func:`record_rendered_json`).

At the end of the run ``tests/rule_coverage.py`` gathers :data:`FIRED` from every pytest-xdist worker and fails the
session if a rule of the catalogue never fired under an assertion: that a test writes a rule id is not enough.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from raykube.doctor.model import Finding, Report

FIRED: set[str] = set()  # the rules some test of this process asserted firing, in the findings the doctor returned

# A Report, its findings, the JSON of a report (``to_json``, ``raykube doctor -o json``) or its findings.
Found = Report | Iterable[Finding] | Mapping[str, Any] | Iterable[Mapping[str, Any]]


def _rules(found: Found) -> list[str]:
    if isinstance(found, Report):
        return [f.rule for f in found.findings]
    if isinstance(found, Mapping):
        return [str(f["rule"]) for f in found["findings"]]
    return [f.rule if isinstance(f, Finding) else str(f["rule"]) for f in found]


def _findings(found: Report | Iterable[Finding]) -> list[Finding]:
    return list(found.findings if isinstance(found, Report) else found)


def record(*rules: str) -> None:
    """Note rules a test has just asserted firing by other means (a predicate that held, a golden file that matched)."""
    FIRED.update(rules)


def assert_fires(found: Found, *rules: str, context: str = "") -> None:
    """Each of ``rules`` is among the findings; then they are recorded as asserted firing."""
    seen = _rules(found)
    missing = [rule for rule in rules if rule not in seen]
    assert not missing, f"{', '.join(missing)} did not fire; the findings: {sorted(set(seen))}" + (
        f"\n{context}" if context else ""
    )
    record(*rules)


def assert_quiet(found: Found, *rules: str, context: str = "") -> None:
    """None of ``rules`` is among the findings (a near miss, a healthy case); nothing is recorded."""
    seen = _rules(found)
    loud = [rule for rule in rules if rule in seen]
    assert not loud, f"{', '.join(loud)} fired; the findings: {sorted(set(seen))}" + (f"\n{context}" if context else "")


def findings_of(found: Report | Iterable[Finding], rule: str) -> list[Finding]:
    """The findings of ``rule``, at least one (recorded)."""
    findings = _findings(found)
    assert_fires(findings, rule)
    return [f for f in findings if f.rule == rule]


def one_finding(found: Report | Iterable[Finding], rule: str) -> Finding:
    """The one finding of ``rule`` (recorded); fails if there is none or more than one."""
    matching = findings_of(found, rule)
    assert len(matching) == 1, f"{rule} fired {len(matching)} times: {[f.title for f in matching]}"
    return matching[0]


def findings_by_rule(found: Report | Iterable[Finding], *rules: str) -> dict[str, Finding]:
    """Rule -> its (last) finding, after asserting that each of ``rules`` fired (recorded)."""
    findings = _findings(found)
    assert_fires(findings, *rules)
    return {f.rule: f for f in findings}


def record_rendered_json(text: str) -> set[str]:
    """Record the rules of the findings in a rendered JSON report (a golden file the output just matched)."""
    rules = set(_rules(json.loads(text)))
    record(*rules)
    return rules


def never_fired(catalogue: Iterable[str], fired: Iterable[str]) -> list[str]:
    """The rules of ``catalogue`` no test asserted firing, sorted."""
    seen = set(fired)
    return sorted(rule for rule in catalogue if rule not in seen)

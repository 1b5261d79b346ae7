"""JUnit XML: a ``<testsuite>`` per subject (what is cluster-wide, then each target), a ``<testcase>`` per rule the
run checked on it, ``classname`` the subject's kind/namespace/name and ``name`` the rule id and code.

A testcase *fails* when its rule found something on the subject at or above ``--fail-on`` (default ``error``:
critical and error fail), so the failures of the report agree with the doctor's exit code; a finding below it
(a warning, info) leaves the testcase passing with the finding in ``<system-out>``. A testcase whose only findings
the ignore file took out is ``<skipped>`` with the reason; a rule that raised is an ``<error>``; a target that was
not found is a suite with one erroring testcase.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any, Final

from raykube.doctor.formats.common import (
    Document,
    JsonFinding,
    catalogue,
    evidence_line,
    ignored_of,
    path_of,
    subjects,
    summary_line,
)
from raykube.doctor.model import SEVERITY_RANK

SUITES: Final = "raykube doctor"
# What XML 1.0 cannot hold at all, not even escaped (a log line's ANSI escapes, NULs): shown as U+FFFD.
NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _x(text: str) -> str:
    return NOT_XML.sub("\ufffd", text)


def _details(findings: list[JsonFinding]) -> str:
    lines: list[str] = []
    for f in findings:
        lines.append(f"[{f['id']}] {f['severity']} {f['code']}: {f['title']}")
        lines.append(f"  object: {path_of(f['object'])}")
        lines += [f"  evidence: {evidence_line(e)}" for e in f.get("evidence", [])]
        lines += [f"  fix: {fix}" for fix in f.get("remediation", [])]
        lines += [f"  caused by: {', '.join(f['causedBy'])}"] if f.get("causedBy") else []
    return _x("\n".join(lines))


def _testcase(
    suite: ET.Element, classname: str, rule_code: tuple[str, str], found: list[JsonFinding], context: Mapping[str, Any]
) -> str:
    """Add one testcase; say how it ended: ``passed``, ``failure``, ``error`` or ``skipped``."""
    rule, code = rule_code
    case = ET.SubElement(suite, "testcase", classname=classname, name=f"{rule} {code}".strip(), time="0")
    failing = [f for f in found if SEVERITY_RANK[f["severity"]] >= SEVERITY_RANK[context["failOn"]]]
    if rule in context["errors"]:
        ET.SubElement(case, "error", message=_x(context["errors"][rule]), type="RuleError")
        return "error"
    if failing:
        worst = max(failing, key=lambda f: SEVERITY_RANK[f["severity"]])
        element = ET.SubElement(case, "failure", message=_x(summary_line(failing[0])), type=worst["severity"])
        element.text = _details(found)
        return "failure"
    if found:
        ET.SubElement(case, "system-out").text = _details(found)
        return "passed"
    ignored = [i for i in context["ignored"] if i["rule"] == rule]
    if ignored:
        reasons = "; ".join(dict.fromkeys(f"ignored: {i['reason']}" for i in ignored))
        ET.SubElement(case, "skipped", message=_x(reasons))
        return "skipped"
    return "passed"


def to_junit(document: Document) -> str:
    """The JUnit XML of a ``doctor.raykube.io/v1`` document."""
    codes = {rule: code for rule, (code, _) in catalogue().items()}
    checked = list(document.get("metadata", {}).get("rules") or [])
    seen = [f["rule"] for f in [*document.get("findings", []), *document.get("ignored", [])]]
    rules = list(dict.fromkeys([*checked, *seen]))
    errors = {
        rule.strip(): f"rule {r['rule']} failed: {r['error']}"
        for r in document.get("ruleErrors", [])
        for rule in str(r["rule"]).split(",")
    }
    root = ET.Element("testsuites", name=SUITES)
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    timestamp = str(document.get("metadata", {}).get("capturedAt", ""))
    for subject, findings in subjects(document):
        classname = path_of(subject)
        suite = ET.SubElement(root, "testsuite", name=classname, timestamp=timestamp)
        context = {"failOn": document["summary"]["failOn"], "errors": errors, "ignored": ignored_of(document, subject)}
        counts = dict.fromkeys(totals, 0)
        for rule in rules:
            found = [f for f in findings if f["rule"] == rule]
            ended = _testcase(suite, classname, (rule, codes.get(rule, "")), found, context)
            counts["tests"] += 1
            if ended != "passed":
                counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[ended]] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for missing in document.get("missingTargets", []):
        classname = path_of(missing)
        suite = ET.SubElement(root, "testsuite", name=classname, timestamp=timestamp, tests="1", errors="1")
        suite.set("failures", "0")
        suite.set("skipped", "0")
        case = ET.SubElement(suite, "testcase", classname=classname, name="found", time="0")
        ET.SubElement(case, "error", message=f"{classname} not found", type="NotFound")
        totals["tests"] += 1
        totals["errors"] += 1
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

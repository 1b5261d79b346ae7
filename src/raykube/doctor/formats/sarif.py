"""SARIF 2.1.0 (OASIS): one run of the tool ``raykube doctor``, a reporting descriptor per rule that found
something, a result per finding located by logical locations (the Kubernetes object as kind/namespace/name).

Severity maps to ``level``: critical and error → ``error``, warning → ``warning``, info → ``note``. Findings the
ignore file took out are results too, with an external suppression carrying the reason (SARIF's own way to say
"accepted"). What could not be checked and rules that raised are tool execution notifications.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from raykube.doctor.formats.common import (
    DOCS_URL,
    Document,
    JsonFinding,
    catalogue,
    path_of,
    rule_url,
    summary_line,
)

SCHEMA_URI: Final = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME: Final = "raykube doctor"
LEVELS: Final[Mapping[str, str]] = {"critical": "error", "error": "error", "warning": "warning", "info": "note"}


def _rule(rule: str, findings: list[JsonFinding], summaries: Mapping[str, str]) -> dict[str, Any]:
    fixes = list(dict.fromkeys(fix for f in findings for fix in f.get("remediation", [])))
    help_text = "\n".join(fixes) or "See the rule's documentation."
    return {
        "id": rule,
        "name": findings[0]["code"],
        "shortDescription": {"text": summaries.get(rule, findings[0]["title"])},
        "help": {"text": help_text},
        "helpUri": rule_url(rule),
        "defaultConfiguration": {"level": LEVELS[findings[0]["severity"]]},
        "properties": {"code": findings[0]["code"]},
    }


def _location(ref: Mapping[str, Any]) -> dict[str, Any]:
    named = {key: ref[key] for key in ("kind", "namespace", "name") if ref.get(key) is not None}
    return {
        "logicalLocations": [
            {"name": str(ref["name"]), "fullyQualifiedName": path_of(ref), "kind": "resource", "properties": named}
        ]
    }


def _result(finding: JsonFinding, index: int, reason: str | None = None) -> dict[str, Any]:
    properties: dict[str, Any] = {"id": finding["id"], "code": finding["code"], "severity": finding["severity"]}
    for key in ("confidence", "explanation", "remediation", "causedBy", "causes"):
        if finding.get(key):
            properties[key] = finding[key]
    if finding.get("cluster"):
        properties["subject"] = path_of(finding["cluster"])
    result: dict[str, Any] = {
        "ruleId": finding["rule"],
        "ruleIndex": index,
        "level": LEVELS[finding["severity"]],
        "message": {"text": summary_line(finding)},
        "locations": [_location(finding["object"])],
        "partialFingerprints": {"raykubeDoctor/v1": f"{finding['rule']}:{path_of(finding['object'])}"},
        "properties": properties,
    }
    if reason is not None:
        result["suppressions"] = [{"kind": "external", "status": "accepted", "justification": reason}]
    return result


def to_sarif(document: Document) -> dict[str, Any]:
    """The SARIF log of a ``doctor.raykube.io/v1`` document."""
    findings = list(document.get("findings", []))
    ignored = list(document.get("ignored", []))
    by_rule: dict[str, list[JsonFinding]] = {}
    for finding in [*findings, *ignored]:
        by_rule.setdefault(finding["rule"], []).append(finding)
    summaries = {rule: summary for rule, (_, summary) in catalogue().items()}
    rules = [_rule(rule, found, summaries) for rule, found in by_rule.items()]
    index = {rule: n for n, rule in enumerate(by_rule)}
    results = [_result(f, index[f["rule"]]) for f in findings]
    results += [_result(i, index[i["rule"]], reason=i["reason"]) for i in ignored]
    notes = [
        {"level": "warning", "message": {"text": f"not checked: {n['what']} ({n['reason']})"}}
        for n in document.get("notChecked", [])
    ]
    notes += [
        {"level": "error", "message": {"text": f"rule {r['rule']} failed: {r['error']}"}}
        for r in document.get("ruleErrors", [])
    ]
    summary = document.get("summary", {})
    invocation: dict[str, Any] = {
        "executionSuccessful": not document.get("ruleErrors"),
        "exitCode": summary.get("exitCode", 0),
        "endTimeUtc": document["metadata"]["capturedAt"],
    }
    if notes:
        invocation["toolExecutionNotifications"] = notes
    run = {
        "tool": {"driver": {"name": TOOL_NAME, "informationUri": DOCS_URL, "rules": rules}},
        "invocations": [invocation],
        "results": results,
        "properties": {"apiVersion": document["apiVersion"], "status": summary.get("status")},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render_sarif(document: Document) -> str:
    return json.dumps(to_sarif(document), indent=2, ensure_ascii=False) + "\n"

"""Render a report: human text (root causes first, then consequences, warnings, info, and a "Not checked" line) and
the ``doctor.raykube.io/v1`` JSON document (schema: :data:`raykube.doctor.schema.JSON_SCHEMA`, documented in
``docs/doctor.md``; the other formats are derived from that document: :mod:`raykube.doctor.formats`).

The text is built as plain lines of styled segments, so the same function gives the golden files (no style) and
the terminal output (rich styles, dropped by rich itself when stdout is not a TTY or ``NO_COLOR`` is set).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from rich.console import Console
from rich.text import Text

from raykube.doctor.correlate import root_of
from raykube.doctor.model import (
    REPORT_KIND,
    SCHEMA_VERSION,
    Evidence,
    Finding,
    ObjectRef,
    Report,
    at_least,
)
from raykube.doctor.schema import JSON_SCHEMA

__all__ = ["JSON_SCHEMA", "render_json", "render_text", "text_lines", "to_json"]

ICONS: Final = {"critical": "✖", "error": "✖", "warning": "▲", "info": "●"}
STYLES: Final = {"critical": "bold red", "error": "red", "warning": "yellow", "info": "cyan"}
MAX_MESSAGE: Final = 220

Line = list[tuple[str, str]]


def _clip(text: str, limit: int = MAX_MESSAGE) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


def evidence_text(e: Evidence) -> str:
    if e.source == "event" and e.reason is not None:
        count = f" ×{e.count}" if e.count and e.count > 1 else ""  # noqa: RUF001 - as kubectl shows repeats
        when = f" ({e.age} ago)" if e.age else ""
        where = f"{e.object} " if e.object is not None else ""
        return _clip(f"{where}event {e.reason}{count}{when}: {e.message}")
    where = f"{e.object} " if e.object is not None else ""
    if e.path is None:
        return _clip(f"{where}{_value(e.value)}")
    return _clip(f"{where}{e.path} = {_value(e.value)}")


def object_path(ref: ObjectRef | None) -> str:
    """``kind/namespace/name`` (``kind/name`` without a namespace): what an ignore file's ``object`` matches, and a
    JUnit ``classname``."""
    if ref is None:
        return "cluster-wide"
    return "/".join(part for part in (ref.kind, ref.namespace, ref.name) if part is not None)


def _counts_text(findings: Sequence[Finding]) -> str:
    parts = []
    for severity in ("critical", "error", "warning", "info"):
        n = sum(1 for f in findings if f.severity == severity)
        if n and severity != "info":
            parts.append(f"{n} {severity}{'s' if n != 1 and severity != 'critical' else ''}")
    return ", ".join(parts)


def _status(findings: Sequence[Finding], fail_on: str) -> str:
    if any(at_least(f.severity, fail_on) for f in findings):
        return "UNHEALTHY"
    if any(at_least(f.severity, "warning") for f in findings):
        return "DEGRADED"
    return "HEALTHY"


def _finding_lines(f: Finding, indent: str, *, full: bool, by_id: dict[str, Finding]) -> list[Line]:
    lines: list[Line] = []
    head: Line = [
        (indent, ""),
        (f"{ICONS[f.severity]} ", STYLES[f.severity]),
        (f"[{f.id}] ", "bold"),
        (f"{f.code} ", "dim"),
        (f.title, ""),
    ]
    if f.caused_by:
        head.append((f"  ← caused by {', '.join(f.caused_by)}", "dim"))
    lines.append(head)
    pad = indent + "    "
    if f.object is not None and full:
        where = f"{f.object}" + (f" (ns {f.object.namespace})" if f.object.namespace else "")
        lines.append([(pad, ""), ("object    ", "dim"), (where, "")])
    evidence = f.evidence if full else f.evidence[:2]
    for index, e in enumerate(evidence):
        label = "evidence  " if index == 0 else "          "
        lines.append([(pad, ""), (label, "dim"), (evidence_text(e), "")])
    if full:
        if f.explanation:
            lines.append([(pad, ""), ("why       ", "dim"), (_clip(f.explanation, 400), "")])
        for index, fix in enumerate(f.remediation):
            lines.append([(pad, ""), ("fix       " if index == 0 else "          ", "dim"), (_clip(fix, 300), "")])
        if f.refs:
            lines.append([(pad, ""), ("see       ", "dim"), (", ".join(f.refs), "")])
        lines.append([(pad, ""), ("confidence", "dim"), (f" {f.confidence}", "dim")])
    return lines


def _descendants(root: Finding, by_id: dict[str, Finding], shown: set[str]) -> list[Finding]:
    """The consequences under ``root`` not shown yet (marked shown), in chain order: nearest links first."""
    out: list[Finding] = []
    stack = list(reversed(root.causes))
    while stack:
        child = by_id.get(stack.pop())
        if child is None or child.id in shown:
            continue
        shown.add(child.id)
        out.append(child)
        stack.extend(reversed(child.causes))
    order = {f.id: i for i, f in enumerate(by_id.values())}
    return sorted(out, key=lambda f: (f.stage, order[f.id]))


def external_roots(findings: Sequence[Finding], report: Report) -> list[Finding]:
    """The root causes of ``findings`` that belong to another subject: a RayJob stuck because its RayCluster's
    workers cannot be scheduled has its root cause in the RayCluster's findings."""
    by_id = {f.id: f for f in report.findings}
    subjects = {f.cluster for f in findings}
    roots: dict[str, Finding] = {}
    for finding in findings:
        if finding.caused_by:
            for root in root_of(finding, by_id):
                if root.cluster not in subjects:
                    roots[root.id] = root
    return list(roots.values())


def _external_root_lines(findings: list[Finding], report: Report, shown: set[str]) -> list[Line]:
    """A RayJob's or RayService's root causes found in its RayClusters, each with the findings here it explains."""
    by_id = {f.id: f for f in report.findings}
    elsewhere = external_roots(findings, report)
    if not elsewhere:
        return []
    heading = "Root cause" + ("s" if len(elsewhere) > 1 else "")
    lines: list[Line] = [[(heading, "bold underline"), (" (in what it runs on)", "dim")]]
    for root in elsewhere:
        if root.cluster is not None:
            where = f"{root.cluster.kind} {root.cluster.namespace}/{root.cluster.name}"
            lines.append([("  in ", "dim"), (where, "")])
        lines.extend(_finding_lines(root, "  ", full=True, by_id=by_id))
        mine = [f for f in findings if f.id not in shown and root in root_of(f, by_id)]
        if mine:
            lines.append([("      consequences here", "bold")])
            for child in sorted(mine, key=lambda f: f.stage):
                lines.extend(_finding_lines(child, "      ", full=True, by_id=by_id))
                shown.add(child.id)
    return lines


def hidden_info(report: Report, verbose: bool = False) -> list[Finding]:
    """What the default text output leaves out: info findings that stand alone (hygiene and advisories such as SEC03,
    SEC08, G09), unless ``-v`` or ``--fail-on info``. Progress on a starting cluster and consequences stay."""
    if verbose or report.fail_on == "info":
        return []
    return [
        f
        for f in report.findings
        if f.severity == "info" and not f.caused_by and not f.causes and not f.title.startswith("Starting (")
    ]


def _subject_lines(title: str, findings: list[Finding], report: Report, hidden: set[str]) -> list[Line]:
    by_id = {f.id: f for f in report.findings}
    status = _status(findings, report.fail_on)
    counts = _counts_text(findings)
    style = {"UNHEALTHY": "bold red", "DEGRADED": "bold yellow", "HEALTHY": "bold green"}[status]
    lines: list[Line] = [[(f"{title}: ", "bold"), (status, style), (f" ({counts})" if counts else "", "")]]
    roots = [f for f in findings if not f.caused_by and (f.causes or at_least(f.severity, "error"))]
    shown: set[str] = set()
    lines += _external_root_lines(findings, report, shown)
    if roots:
        lines.append([("Root cause" + ("s" if len(roots) > 1 else ""), "bold underline")])
        for root in roots:
            lines.extend(_finding_lines(root, "  ", full=True, by_id=by_id))
            shown.add(root.id)
            descendants = _descendants(root, by_id, shown)
            if descendants:
                lines.append([("      consequences", "bold")])
                for child in descendants:
                    lines.extend(_finding_lines(child, "      ", full=False, by_id=by_id))
            listed = {d.id for d in descendants}
            also = [child for child in root.causes if child not in listed]
            if also:
                lines.append([("      also explains ", "dim"), (", ".join(also), "")])
    shown |= hidden
    for label, severity in (("Warnings", "warning"), ("Info", "info")):
        rest = [f for f in findings if f.id not in shown and f.severity == severity and not f.caused_by]
        if rest:
            lines.append([(label, "bold underline")])
            for f in rest:
                lines.extend(_finding_lines(f, "  ", full=severity == "warning", by_id=by_id))
                shown.add(f.id)
    leftover = [f for f in findings if f.id not in shown]
    if leftover:
        lines.append([("Other consequences", "bold underline")])
        for f in leftover:
            lines.extend(_finding_lines(f, "  ", full=False, by_id=by_id))
    if not [f for f in findings if f.id not in hidden]:
        lines.append([("  ✓ ", "green"), ("no problems found", "")])
    return lines


def _notes(report: Report) -> list[Line]:
    """Rules that failed, how the in-Pod checks went, what the ignore file took out, what was not checked."""
    lines: list[Line] = []
    for failure in report.rule_failures:
        lines.append([("! ", "bold red"), (f"rule {failure.rule} failed: {failure.error}", "")])
    if report.in_pod:
        lines.append([("In-Pod checks: ", "bold"), (report.in_pod, "")])
    for ignored in report.ignored:
        f = ignored.finding
        lines.append([("ignored: ", "bold"), (f"{f.code} on {object_path(f.object)} — {ignored.reason}", "dim")])
    if report.not_checked:
        lines.append([("Not checked: ", "bold"), ("; ".join(str(n) for n in report.not_checked), "")])
    return lines


def text_lines(report: Report, verbose: bool = False) -> list[Line]:
    lines: list[Line] = []
    env = []
    for op in report.operators:
        state = "Ready" if op.ready else "not Ready"
        watch = ",".join(op.watch_namespaces) or "all namespaces"
        env.append(f"operator {op.namespace}/{op.name} ({op.implementation}, {state}, watching {watch})")
    if report.crd_versions:
        env.append(f"CRD ray.io {'/'.join(report.crd_versions)}")
    header = f"raykube doctor · {report.source} · {report.captured_at}"
    lines.append([(header, "bold")] + ([(" · " + " · ".join(env), "dim")] if env else []))
    lines.append([])
    hidden_findings = hidden_info(report, verbose)
    hidden = {f.id for f in hidden_findings}
    global_findings = report.for_cluster(None)
    if global_findings:
        lines.extend(_subject_lines("Cluster-wide", global_findings, report, hidden))
        lines.append([])
    for target in report.targets:
        title = f"{target.kind} {target.namespace}/{target.name}"
        lines.extend(_subject_lines(title, report.for_cluster(target), report, hidden))
        lines.append([])
    for missing in report.missing_targets:
        lines.append([("✖ ", "bold red"), (f"{missing.kind} {missing.namespace}/{missing.name} not found", "bold")])
        lines.append([])
    if not report.targets and not report.missing_targets and not global_findings:
        lines.append([("No RayCluster found in scope.", "bold")])
        lines.append([])
    lines += _notes(report)
    if hidden_findings:
        rules = ", ".join(sorted({f.rule for f in hidden_findings}))
        lines.append([("Not shown: ", "bold"), (f"{len(hidden_findings)} info ({rules}); -v shows them", "dim")])
    unhealthy = sum(1 for t in report.targets if _status(report.for_cluster(t), report.fail_on) == "UNHEALTHY")
    kinds: dict[str, int] = {}
    for target in report.targets:
        kinds[target.kind] = kinds.get(target.kind, 0) + 1
    checked = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in kinds.items()) or "0 RayClusters"
    lines.append(
        [
            ("Summary: ", "bold"),
            (
                f"{checked} checked, {unhealthy} unhealthy · exit {report.exit_code()} (--fail-on {report.fail_on})",
                "",
            ),
        ]
    )
    return lines


def render_text(report: Report, verbose: bool = False) -> str:
    """Plain text, no styles (golden files, logs)."""
    return "\n".join("".join(text for text, _ in line).rstrip() for line in text_lines(report, verbose)) + "\n"


def print_text(report: Report, console: Console, verbose: bool = False) -> None:
    for line in text_lines(report, verbose):
        console.print(Text.assemble(*line) if line else Text(""), soft_wrap=True)


def _target_json(target: ObjectRef, report: Report) -> dict[str, Any]:
    findings = report.for_cluster(target)
    counts = report.counts(findings)
    return {
        **target.to_json(),
        "status": _status(findings, report.fail_on).capitalize(),
        "worst": report.worst(findings),
        "counts": counts,
        "rootCauses": [f.id for f in external_roots(findings, report)]
        + [f.id for f in findings if not f.caused_by and (f.causes or at_least(f.severity, "error"))],
    }


def to_json(report: Report) -> dict[str, Any]:
    return {
        "apiVersion": SCHEMA_VERSION,
        "kind": REPORT_KIND,
        "metadata": {"capturedAt": report.captured_at, "source": report.source, "rules": list(report.rules)},
        "summary": {
            "status": report.status(),
            "exitCode": report.exit_code(),
            "failOn": report.fail_on,
            "worst": report.worst(),
            "counts": report.counts(),
            "clusters": sum(1 for t in report.targets if t.kind == "RayCluster"),
            "unhealthyClusters": sum(
                1
                for t in report.targets
                if t.kind == "RayCluster" and _status(report.for_cluster(t), report.fail_on) == "UNHEALTHY"
            ),
            "workloads": sum(1 for t in report.targets if t.kind != "RayCluster"),
        },
        "environment": {
            "operators": [op.to_json() for op in report.operators],
            "crdVersions": list(report.crd_versions),
            **({"inPodChecks": report.in_pod} if report.in_pod else {}),
        },
        "targets": [_target_json(t, report) for t in report.targets],
        "missingTargets": [m.to_json() for m in report.missing_targets],
        "findings": [f.to_json() for f in report.findings],
        "notChecked": [n.to_json() for n in report.not_checked],
        "ruleErrors": [r.to_json() for r in report.rule_failures],
        "ignored": [i.to_json() for i in report.ignored],
    }


def render_json(report: Report) -> str:
    return json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"

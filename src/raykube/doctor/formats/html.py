"""One self-contained HTML page of a report: inline CSS, no JavaScript, nothing loaded from elsewhere, so it can be
attached to a ticket or mailed. Per subject, the root causes come first, each with the consequences it explains
listed under it, then the other findings; each finding shows its object, evidence, explanation and fix. Every value
from the document is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any, Final

from raykube.doctor.formats.common import Document, JsonFinding, evidence_line, ignored_of, path_of, subjects

CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#1d2330;padding:0 1em}
h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:1px solid #ccd;padding-bottom:.2em;margin-top:2em}
h3{font-size:1em;margin:1.2em 0 .4em}.meta,.dim{color:#667}
.finding{border-left:4px solid #99a;padding:.3em .8em;margin:.5em 0;background:#f7f8fa}
.critical,.error{border-color:#c62828}.warning{border-color:#e0a000}.info{border-color:#1e88a8}
.consequences{margin-left:1.5em}.badge{font-weight:600;text-transform:uppercase;font-size:.8em}
.status-Unhealthy{color:#c62828}.status-Degraded{color:#b07800}.status-Healthy{color:#2e7d32}
dl{display:grid;grid-template-columns:7em 1fr;margin:.3em 0}dt{color:#667}dd{margin:0}
code{font:12px ui-monospace,monospace;overflow-wrap:anywhere}ul{margin:.2em 0;padding-left:1.2em}
"""


def _e(value: Any) -> str:
    return escape(str(value), quote=True)


def _finding(f: JsonFinding, *, role: str) -> str:
    severity = str(f["severity"])
    rows = [f"<dt>object</dt><dd><code>{_e(path_of(f['object']))}</code></dd>"]
    evidence = "".join(f"<li><code>{_e(evidence_line(e))}</code></li>" for e in f.get("evidence", []))
    if evidence:
        rows.append(f"<dt>evidence</dt><dd><ul>{evidence}</ul></dd>")
    if f.get("explanation"):
        rows.append(f"<dt>why</dt><dd>{_e(f['explanation'])}</dd>")
    fixes = "".join(f"<li>{_e(fix)}</li>" for fix in f.get("remediation", []))
    if fixes:
        rows.append(f"<dt>fix</dt><dd><ul>{fixes}</ul></dd>")
    if f.get("causedBy"):
        rows.append(f"<dt>caused by</dt><dd>{_e(', '.join(f['causedBy']))}</dd>")
    return (
        f'<div class="finding {_e(severity)}" id="{_e(f["id"])}" data-role="{_e(role)}">'
        f'<div><span class="badge">{_e(severity)}</span> <b>[{_e(f["id"])}]</b> '
        f'<span class="dim">{_e(f["code"])}</span> {_e(f["title"])}</div><dl>{"".join(rows)}</dl></div>'
    )


def _descendants(root: JsonFinding, by_id: Mapping[str, JsonFinding], shown: set[str]) -> list[JsonFinding]:
    """What ``root`` explains, directly or through others, not shown yet (marked shown now), nearest first."""
    out: list[JsonFinding] = []
    queue = list(root.get("causes", []))
    while queue:
        child = by_id.get(queue.pop(0))
        if child is None or child["id"] in shown:
            continue
        shown.add(child["id"])
        out.append(child)
        queue += child.get("causes", [])
    return out


def _subject(document: Document, subject: Mapping[str, Any] | None, findings: list[JsonFinding]) -> str:
    by_id = {f["id"]: f for f in document.get("findings", [])}
    status = str(subject.get("status", "")) if subject else ""
    title = "Cluster-wide" if subject is None else path_of(subject)
    parts = [f'<section><h2>{_e(title)} <span class="status-{_e(status)}">{_e(status)}</span></h2>']
    root_ids = list(subject.get("rootCauses", [])) if subject else []
    if subject is None:
        root_ids = [
            f["id"]
            for f in findings
            if not f.get("causedBy") and (f.get("causes") or f["severity"] in ("critical", "error"))
        ]
    shown: set[str] = set()
    roots = [by_id[i] for i in dict.fromkeys(root_ids) if i in by_id]
    if roots:
        parts.append("<h3>Root causes</h3>")
    mine = {f["id"] for f in findings}
    for root in roots:
        shown.add(root["id"])
        parts.append(_finding(root, role="root"))
        before = set(shown)
        below = [f for f in _descendants(root, by_id, shown) if f["id"] in mine]
        also = [i for i in root.get("causes", []) if i in before]  # shown under an earlier root cause
        if below or also:
            parts.append('<div class="consequences"><h3>Consequences</h3>')
            parts += [_finding(f, role="consequence") for f in below]
            parts += [f'<p class="dim">also explains {_e(", ".join(also))}</p>'] if also else []
            parts.append("</div>")
    rest = [f for f in findings if f["id"] not in shown]
    if rest:
        parts.append("<h3>Other findings</h3>")
        parts += [_finding(f, role="other") for f in rest]
    if not findings:
        parts.append("<p>No problems found.</p>")
    ignored = ignored_of(document, subject)
    if ignored:
        items = "".join(
            f"<li>{_e(i['code'])} on <code>{_e(path_of(i['object']))}</code> — {_e(i['reason'])}</li>" for i in ignored
        )
        parts.append(f"<h3>Ignored</h3><ul>{items}</ul>")
    parts.append("</section>")
    return "".join(parts)


def to_html(document: Document) -> str:
    """The HTML page of a ``doctor.raykube.io/v1`` document."""
    summary = document.get("summary", {})
    meta = document.get("metadata", {})
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>raykube doctor: {_e(summary.get('status', ''))}</title><style>{CSS}</style></head><body>"
        f"<h1>raykube doctor: {_e(summary.get('status', ''))}</h1>"
        f'<p class="meta">{_e(meta.get("source", ""))} · {_e(meta.get("capturedAt", ""))} · exit '
        f"{_e(summary.get('exitCode', ''))} (--fail-on {_e(summary.get('failOn', ''))})</p>"
    )
    body = [_subject(document, subject, found) for subject, found in subjects(document) if subject or found]
    notes = [f"{path_of(m)} not found" for m in document.get("missingTargets", [])]
    notes += [f"rule {r['rule']} failed: {r['error']}" for r in document.get("ruleErrors", [])]
    notes += [f"not checked: {n['what']} ({n['reason']})" for n in document.get("notChecked", [])]
    tail = f"<h2>Notes</h2><ul>{''.join(f'<li>{_e(n)}</li>' for n in notes)}</ul>" if notes else ""
    return head + "".join(body) + tail + "</body></html>\n"

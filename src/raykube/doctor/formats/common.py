"""What the formats share: the document's subjects and their findings, evidence as one line, object paths."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from raykube.doctor.model import Evidence, ObjectRef
from raykube.doctor.render import evidence_text

Document = Mapping[str, Any]
JsonFinding = Mapping[str, Any]

# Where each rule is explained: its row in the Rules table of docs/doctor.md (anchor ``rule-<id>``).
DOCS_URL: Final = "https://raykube.io/docs/doctor.md"
CLUSTER_WIDE: Final = "cluster-wide"


def catalogue() -> Mapping[str, tuple[str, str]]:
    """Each rule id's ``(code, summary)``."""
    from raykube.doctor.rules import CATALOGUE  # noqa: PLC0415 - importing the rules registers them all

    return {rule: (spec.code, spec.summary) for rule, spec in CATALOGUE.items()}


def rule_url(rule: str) -> str:
    return f"{DOCS_URL}#rule-{rule.lower()}"


def path_of(ref: Mapping[str, Any] | None) -> str:
    """``kind/namespace/name`` (``kind/name`` for a cluster-scoped object; ``cluster-wide`` for none)."""
    if not ref:
        return CLUSTER_WIDE
    return "/".join(str(ref[key]) for key in ("kind", "namespace", "name") if ref.get(key) is not None)


def _key(ref: Mapping[str, Any] | None) -> tuple[str, str, str] | None:
    if not ref:
        return None
    return (str(ref["kind"]), str(ref.get("namespace") or ""), str(ref["name"]))


def subjects(document: Document) -> list[tuple[Mapping[str, Any] | None, list[JsonFinding]]]:
    """Each subject (a target, and ``None`` for what is cluster-wide) with its findings, in the document's order."""
    by_subject: dict[tuple[str, str, str] | None, list[JsonFinding]] = {}
    for finding in document.get("findings", []):
        by_subject.setdefault(_key(finding.get("cluster")), []).append(finding)
    out: list[tuple[Mapping[str, Any] | None, list[JsonFinding]]] = [(None, by_subject.pop(None, []))]
    for target in document.get("targets", []):
        out.append((target, by_subject.pop(_key(target), [])))
    out += [(findings[0].get("cluster"), findings) for findings in by_subject.values()]  # none so far: kept safe
    return out


def ignored_of(document: Document, subject: Mapping[str, Any] | None) -> list[JsonFinding]:
    return [i for i in document.get("ignored", []) if _key(i.get("cluster")) == _key(subject)]


def evidence_line(evidence: Mapping[str, Any]) -> str:
    """One evidence entry of the document as the text output shows it."""
    ref = evidence.get("object")
    return evidence_text(
        Evidence(
            source=evidence["source"],
            object=ObjectRef(ref["kind"], ref["name"], ref.get("namespace")) if ref else None,
            path=evidence.get("path"),
            value=evidence.get("value"),
            reason=evidence.get("reason"),
            message=evidence.get("message"),
            count=evidence.get("count"),
            last_seen=evidence.get("lastSeen"),
            age=evidence.get("age"),
        )
    )


def summary_line(finding: JsonFinding, limit: int = 2) -> str:
    """The title, then its first evidence: what a one-line consumer (a SARIF message, a JUnit failure) shows."""
    lines = [evidence_line(e) for e in finding.get("evidence", [])[:limit]]
    return str(finding["title"]) + ("" if not lines else " — " + "; ".join(lines))

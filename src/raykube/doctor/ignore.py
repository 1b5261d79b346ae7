"""The ignore file (``.raykube-doctor.yaml``): findings a team has accepted, taken out of the results.

::

    ignore:
      - rule: SEC03                      # a rule id or its code (TOKEN_AUTH_DISABLED)
        object: RayCluster/ml/dev-.*     # a regular expression over the whole kind/namespace/name (optional: any)
        reason: dev clusters run without auth behind the VPN

An ignored finding leaves ``findings`` (so it counts for neither the summary nor the exit code) and is listed in
``ignored`` with its reason; what it explained is no longer said to be caused by it. A file that does not say this
is refused with the file and the field named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from raykube.doctor.model import Ignored, Report
from raykube.doctor.render import object_path
from raykube.doctor.rules import CATALOGUE

DEFAULT_FILE: Final = ".raykube-doctor.yaml"
FIELDS: Final = ("rule", "object", "reason")


class IgnoreFileError(ValueError):
    """The ignore file cannot be read, or an entry is not ``{rule, object, reason}``."""


@dataclass(frozen=True)
class IgnoreEntry:
    rule: str  # a rule id (B02) or a code (UNSCHEDULABLE_RESOURCES)
    object: re.Pattern[str]
    reason: str

    def matches(self, rule: str, code: str, path: str) -> bool:
        return self.rule in (rule, code) and self.object.fullmatch(path) is not None


def _entry(index: int, raw: Any, where: str) -> IgnoreEntry:
    field = f"{where}: ignore[{index}]"
    if not isinstance(raw, dict):
        raise IgnoreFileError(f"{field}: give a mapping with rule, object and reason, not {raw!r}")
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise IgnoreFileError(f"{field}.{unknown[0]}: unknown field (use {', '.join(FIELDS)})")
    rule = raw.get("rule")
    if not isinstance(rule, str) or not rule.strip():
        raise IgnoreFileError(f"{field}.rule: give a rule id (B02) or its code (UNSCHEDULABLE_RESOURCES)")
    rule = rule.strip().upper()
    if rule not in CATALOGUE and rule not in {spec.code for spec in CATALOGUE.values()}:
        raise IgnoreFileError(f"{field}.rule: {rule!r} is neither a rule id nor a code of raykube doctor")
    pattern = raw.get("object", ".*")
    if not isinstance(pattern, str):
        raise IgnoreFileError(f"{field}.object: give a regular expression over kind/namespace/name, not {pattern!r}")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise IgnoreFileError(f"{field}.object: {pattern!r} is not a regular expression: {exc}") from None
    reason = raw.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise IgnoreFileError(f"{field}.reason: say why the finding is ignored")
    return IgnoreEntry(rule, compiled, reason.strip())


def parse(text: str, where: str = DEFAULT_FILE) -> list[IgnoreEntry]:
    """The entries of an ignore file's text; ``where`` names the file in errors."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise IgnoreFileError(f"{where}: not YAML: {exc}") from None
    if document is None:
        return []
    if not isinstance(document, dict) or set(document) - {"ignore"}:
        raise IgnoreFileError(f"{where}: the file is a mapping with one key, ignore (a list of rule/object/reason)")
    entries = document.get("ignore") or []
    if not isinstance(entries, list):
        raise IgnoreFileError(f"{where}: ignore: give a list of entries with rule, object and reason")
    return [_entry(index, raw, where) for index, raw in enumerate(entries)]


def load(path: Path | None, *, cwd: Path | None = None) -> list[IgnoreEntry]:
    """The entries of ``path`` (it must exist), or of ``.raykube-doctor.yaml`` in ``cwd`` when there is one."""
    if path is None:
        path = (cwd or Path.cwd()) / DEFAULT_FILE
        if not path.is_file():
            return []
    try:
        text = path.read_text()
    except OSError as exc:
        raise IgnoreFileError(f"{path}: cannot read the ignore file: {exc.strerror or exc}") from None
    return parse(text, str(path))


def apply(report: Report, entries: Sequence[IgnoreEntry]) -> Report:
    """Move the findings an entry matches from ``report.findings`` to ``report.ignored`` (in place; returned)."""
    if not entries:
        return report
    kept = []
    for finding in report.findings:
        path = object_path(finding.object)
        entry = next((e for e in entries if e.matches(finding.rule, finding.code, path)), None)
        if entry is None:
            kept.append(finding)
        else:
            report.ignored.append(Ignored(finding, entry.reason))
    gone = {i.finding.id for i in report.ignored}
    for finding in kept:
        finding.caused_by = [i for i in finding.caused_by if i not in gone]
        finding.causes = [i for i in finding.causes if i not in gone]
    report.findings = kept
    return report

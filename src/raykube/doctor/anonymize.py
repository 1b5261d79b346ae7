"""``--anonymize``: a report to share without the names in it.

Every name and namespace of an object the report mentions, the names of nodes and worker groups, every label value
in the evidence, and every IPv4 address is replaced by a token, the same one for the same input wherever it appears (a
title, an evidence message, an object reference, a token of the correlation), so the relations stay readable:
``ns-1``, ``name-3``, ``label-2``, ``192.0.2.7`` (IPs from the documentation range, RFC 5737). The rule ids, codes,
severities, Kubernetes kinds, field paths and remediation wording stay. Container images are left as they are.

The mapping is collected from the ``doctor.raykube.io/v1`` document and applied to the report before any format
renders it, so text, JSON, SARIF, JUnit, HTML and the Prometheus textfile all say the same tokens.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from raykube.doctor.model import Report
from raykube.doctor.render import to_json

# Namespaces every cluster has: they say nothing about whose cluster it is and keep the report readable.
WELL_KNOWN_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
# Fields whose values are the doctor's own vocabulary (rule ids, severities, kinds, links), never a user's names.
KEEP_FIELDS: Final = frozenset(
    {
        "kind",
        "rule",
        "code",
        "severity",
        "confidence",
        "id",
        "caused_by",
        "causes",
        "source",
        "captured_at",
        "fail_on",
        "implementation",
        "image",
        "refs",
        "rules",
        "stage",
    }
)
IPV4: Final = re.compile(r"(?<![0-9.])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![0-9])")
LABEL_PATH: Final = re.compile(r"labels|selector", re.IGNORECASE)
# What a Kubernetes name or label value may look like: anything else (a phrase, "*") is the doctor's wording.
NAME: Final = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?")


def _refs(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every object reference (a mapping with kind and name) in a JSON document."""
    if isinstance(node, Mapping):
        if isinstance(node.get("kind"), str) and isinstance(node.get("name"), str):
            yield node
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class Anonymizer:
    """The mapping of one run: originals to tokens, collected from a report's JSON document."""

    def __init__(self) -> None:
        self.tokens: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._pattern: re.Pattern[str] | None = None

    def _add(self, original: str, category: str) -> None:
        if not NAME.fullmatch(original) or original in self.tokens or original in WELL_KNOWN_NAMESPACES:
            return
        self._counts[category] = self._counts.get(category, 0) + 1
        self.tokens[original] = f"{category}-{self._counts[category]}"
        self._pattern = None

    def collect(self, document: Mapping[str, Any], mentioned: Iterable[str] = ()) -> Anonymizer:
        """Learn the names of ``document`` (a ``doctor.raykube.io/v1`` report: its object references, operators and
        label values in evidence), namespaces first, then ``mentioned`` (:attr:`Report.mentioned`)."""
        refs = list(_refs(document))
        operators = document.get("environment", {}).get("operators", [])
        for ref in refs:
            self._add(str(ref.get("namespace") or ""), "ns")
        for op in operators:
            for namespace in [op.get("namespace"), *op.get("watchNamespaces", [])]:
                self._add(str(namespace or ""), "ns")
        for ref in refs:
            self._add(str(ref["name"]), "name")
        for op in operators:
            self._add(str(op.get("serviceAccount") or ""), "name")
        for finding in [*document.get("findings", []), *document.get("ignored", [])]:
            for evidence in finding.get("evidence", []):
                if LABEL_PATH.search(str(evidence.get("path") or "")):
                    for value in _strings(evidence.get("value")):
                        self._add(value, "label")
        for name in mentioned:
            self._add(name, "name")
        return self

    def ip(self, address: str) -> str:
        try:
            ipaddress.IPv4Address(address)
        except ValueError:
            return address  # 999.1.2.3 is no address
        if address not in self.tokens:
            n = self._counts["ip"] = self._counts.get("ip", 0) + 1
            self.tokens[address] = f"192.0.{2 + (n - 1) // 254}.{(n - 1) % 254 + 1}"
        return self.tokens[address]

    def text(self, value: str) -> str:
        """``value`` with every known name (as a whole word: ``-`` and ``.`` separate) and every IPv4 replaced."""
        names = [k for k in self.tokens if not IPV4.fullmatch(k)]
        if names and self._pattern is None:
            alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
            self._pattern = re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])")
        if self._pattern is not None:
            value = self._pattern.sub(lambda m: self.tokens[m.group(0)], value)
        return IPV4.sub(lambda m: self.ip(m.group(0)), value)

    def report(self, report: Report) -> Report:
        """A copy of ``report`` with every user-given string replaced (the doctor's own vocabulary kept)."""
        result: Report = _walk(report, self.text)
        return result


def _walk(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return text(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: _walk(getattr(value, f.name), text)
            for f in dataclasses.fields(value)
            if f.init and f.name not in KEEP_FIELDS
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, (list, tuple, frozenset)):
        return type(value)(_walk(item, text) for item in value)
    if isinstance(value, dict):
        return {_walk(k, text): _walk(v, text) for k, v in value.items()}
    return value


def anonymize(report: Report) -> Report:
    """``report`` with its names, namespaces, label values and IPs replaced consistently (see the module's doc)."""
    return Anonymizer().collect(to_json(report), report.mentioned).report(report)

"""What the doctor reports: findings with evidence, what it could not check, and the report around them.

A :class:`Finding` is one diagnosed problem (or noteworthy fact) about one object, found by one rule. Besides what
users read (title, evidence, explanation, remediation, refs) it carries two sets of *tokens* that
:mod:`raykube.doctor.correlate` uses to chain findings into cause and consequence:

* ``symptoms``: what this finding *is* an instance of, e.g. ``pod-ready:ns/seed-head-x`` ("that Pod is not Ready")
  or ``head:ns/seed`` ("the cluster's head is not Ready");
* ``effects``: what this finding *explains*, e.g. an unbound PVC explains ``pod-run:`` and ``pod-ready:`` of every
  Pod mounting it.

Finding B is caused by finding A when A's effects meet B's symptoms and A sits earlier in the chain (a smaller
``stage``). The vocabulary of tokens is in :mod:`raykube.doctor.tokens`.

The JSON form of everything here is the ``doctor.raykube.io/v1`` schema documented in ``docs/doctor.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

Severity = Literal["critical", "error", "warning", "info"]
Confidence = Literal["confirmed", "likely", "possible"]
EvidenceSource = Literal[
    "cr.spec",
    "cr.status",
    "pod.spec",
    "pod.status",
    "event",
    "rbac",
    "static",
    "object",
    "node",
    "operator",
    "ray",  # read inside a Ray Pod (--exec): ray status, listening sockets, DNS and TCP from a worker
    "log",  # a container's or Ray's log line
]

SEVERITIES: Final[tuple[Severity, ...]] = ("critical", "error", "warning", "info")
SEVERITY_RANK: Final[Mapping[str, int]] = {name: rank for rank, name in enumerate(reversed(SEVERITIES))}
CONFIDENCES: Final[tuple[Confidence, ...]] = ("confirmed", "likely", "possible")

SCHEMA_VERSION: Final = "doctor.raykube.io/v1"
REPORT_KIND: Final = "DoctorReport"


def at_least(severity: str, threshold: str) -> bool:
    """True when ``severity`` is ``threshold`` or worse (critical > error > warning > info)."""
    return SEVERITY_RANK[severity] >= SEVERITY_RANK[threshold]


@dataclass(frozen=True, order=True)
class ObjectRef:
    kind: str
    name: str
    namespace: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.namespace is not None:
            out["namespace"] = self.namespace
        return out

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class Evidence:
    """One observed fact. ``path``/``value`` for a field, ``reason``/``message``/``count`` for an event."""

    source: EvidenceSource
    object: ObjectRef | None = None
    path: str | None = None
    value: Any = None
    reason: str | None = None
    message: str | None = None
    count: int | None = None
    last_seen: str | None = None  # RFC 3339
    age: str | None = None  # "2m" before the snapshot was taken

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source}
        if self.object is not None:
            out["object"] = self.object.to_json()
        for key, value in (
            ("path", self.path),
            ("value", self.value),
            ("reason", self.reason),
            ("message", self.message),
            ("count", self.count),
            ("lastSeen", self.last_seen),
            ("age", self.age),
        ):
            if value is not None:
                out[key] = value
        return out


@dataclass
class Finding:
    rule: str  # "B02"
    code: str  # "UNSCHEDULABLE_RESOURCES"
    severity: Severity
    confidence: Confidence
    title: str
    object: ObjectRef
    cluster: ObjectRef | None
    stage: int
    evidence: list[Evidence] = field(default_factory=list)
    explanation: str = ""
    remediation: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    symptoms: frozenset[str] = frozenset()
    effects: frozenset[str] = frozenset()
    # Filled in by correlate():
    id: str = ""
    caused_by: list[str] = field(default_factory=list)
    causes: list[str] = field(default_factory=list)

    @property
    def is_consequence(self) -> bool:
        return bool(self.caused_by)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "rule": self.rule,
            "code": self.code,
            "severity": self.severity,
            "confidence": self.confidence,
            "title": self.title,
            "object": self.object.to_json(),
        }
        if self.cluster is not None:
            out["cluster"] = self.cluster.to_json()
        out["evidence"] = [e.to_json() for e in self.evidence]
        out["explanation"] = self.explanation
        out["remediation"] = list(self.remediation)
        out["refs"] = list(self.refs)
        out["causedBy"] = list(self.caused_by)
        out["causes"] = list(self.causes)
        return out


@dataclass(frozen=True)
class NotChecked:
    """Something the doctor could not look at, and why (a forbidden list, a missing file in a dump, ...)."""

    what: str
    reason: str
    core: bool = False  # without it the core rules cannot run: exit code 3

    def to_json(self) -> dict[str, Any]:
        return {"what": self.what, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.what} ({self.reason})"


@dataclass(frozen=True)
class RuleFailure:
    """A rule that raised: the report still prints, the rule is named, the exit code is 4."""

    rule: str
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "error": self.error}


@dataclass(frozen=True)
class Ignored:
    """A finding an entry of the ignore file (``.raykube-doctor.yaml``) took out of the results, and why."""

    finding: Finding
    reason: str

    def to_json(self) -> dict[str, Any]:
        f = self.finding
        out: dict[str, Any] = {"id": f.id, "rule": f.rule, "code": f.code, "severity": f.severity, "title": f.title}
        out["object"] = f.object.to_json()
        if f.cluster is not None:
            out["cluster"] = f.cluster.to_json()
        out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class OperatorInfo:
    """An operator Deployment the doctor found (raykube's chart or KubeRay's own)."""

    namespace: str
    name: str
    implementation: str  # "raykube" | "kuberay"
    image: str
    ready: bool
    ready_replicas: int
    replicas: int
    watch_namespaces: tuple[str, ...]  # empty: every namespace
    service_account: str
    feature_gates: Mapping[str, bool]
    leader_election: bool
    leader_election_namespace: str
    # What the operator's flag parser (raykube.api.config.read_flags) refuses in the container's args.
    flag_problems: tuple[str, ...] = ()

    def watches(self, namespace: str) -> bool:
        return not self.watch_namespaces or namespace in self.watch_namespaces

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "implementation": self.implementation,
            "image": self.image,
            "ready": self.ready,
            "readyReplicas": self.ready_replicas,
            "replicas": self.replicas,
            "watchNamespaces": list(self.watch_namespaces),
            "serviceAccount": self.service_account,
        }


@dataclass
class Report:
    """The result of one doctor run over one or more RayClusters."""

    targets: list[ObjectRef]
    findings: list[Finding]
    not_checked: list[NotChecked]
    rule_failures: list[RuleFailure]
    operators: list[OperatorInfo]
    crd_versions: list[str]
    source: str  # "live" | "dump"
    captured_at: str
    fail_on: Severity = "error"
    missing_targets: list[ObjectRef] = field(default_factory=list)
    in_pod: str = ""  # how the in-Pod checks went (--exec), empty when they were not considered
    rules: list[str] = field(default_factory=list)  # the rule ids run (after --only, --skip, --no-security)
    ignored: list[Ignored] = field(default_factory=list)  # what the ignore file took out of ``findings``
    # Names the findings' text may say beyond their object references (nodes, worker groups): what --anonymize also
    # replaces. Not part of the JSON document.
    mentioned: list[str] = field(default_factory=list)

    def for_cluster(self, ref: ObjectRef | None) -> list[Finding]:
        return [f for f in self.findings if f.cluster == ref]

    def worst(self, findings: Sequence[Finding] | None = None) -> Severity | None:
        ranked = sorted(
            (f.severity for f in (self.findings if findings is None else findings)), key=SEVERITY_RANK.__getitem__
        )
        return ranked[-1] if ranked else None

    def counts(self, findings: Sequence[Finding] | None = None) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(SEVERITIES, 0)
        for finding in self.findings if findings is None else findings:
            counts[finding.severity] += 1
        return counts

    @property
    def incomplete(self) -> bool:
        return bool(self.missing_targets) or any(n.core for n in self.not_checked)

    def exit_code(self) -> int:
        """0 healthy, 1 a finding at or above ``fail_on``, 3 incomplete, 4 a rule failed (``docs/doctor.md``)."""
        if any(at_least(f.severity, self.fail_on) for f in self.findings):
            return 1
        if self.incomplete:
            return 3
        if self.rule_failures:
            return 4
        return 0

    def status(self) -> str:
        code = self.exit_code()
        return {0: "Healthy", 1: "Unhealthy", 3: "Incomplete", 4: "RuleError"}[code]

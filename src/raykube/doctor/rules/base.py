"""The rule catalogue and the helpers every rule module uses.

A *rule* is an entry of :data:`CATALOGUE`: a stable id (``B02``), a code (``UNSCHEDULABLE_RESOURCES``), the stage of
the chain it belongs to, a one-line summary and references. A *checker* is a pure function ``Snapshot ->
Iterable[Finding]`` registered with :func:`checker`; one checker may emit findings of several related rules (the
ConfigMap, Secret and key rules share one walk over the Pod templates). Checkers never do I/O and never raise on odd
input: a missing field reads as unset. If one raises anyway, :func:`raykube.doctor.run.diagnose` reports the rules it
owns as errored and goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from raykube.doctor.model import Confidence, Evidence, EvidenceSource, Finding, ObjectRef, Severity
from raykube.doctor.snapshot import Snapshot

# Stages of the chain, in the order a RayCluster comes up. Causes are ordered before their consequences, and when
# two findings would explain each other the earlier stage wins.
STAGE_PLATFORM: Final = 0  # CRD
STAGE_OPERATOR: Final = 1  # operator installed, Ready, watching, allowed
STAGE_SPEC: Final = 2  # the CR itself: valid, suspended, deleting
STAGE_RECONCILE: Final = 3  # the operator acts on it
STAGE_CREATE: Final = 4  # Pods and Services created
STAGE_PLACEMENT: Final = 5  # scheduling, volumes, ConfigMaps/Secrets, images, nodes
STAGE_START: Final = 6  # containers start and become Ready
STAGE_HEAD: Final = 7  # the head Pod
STAGE_SERVICE: Final = 8  # the head Service
STAGE_ENDPOINTS: Final = 9  # its EndpointSlices
STAGE_GCS: Final = 10  # workers reach the GCS
STAGE_WORKERS: Final = 11  # the worker groups
STAGE_DOWNSTREAM: Final = 12  # the dashboard, the cluster's readiness
STAGE_WORKLOAD: Final = 13  # what runs on the cluster: a RayJob's job, a RayService's Serve applications
STAGE_ADVISORY: Final = 14  # security and hygiene, outside the chain


@dataclass(frozen=True)
class RuleSpec:
    id: str
    code: str
    stage: int
    summary: str
    refs: tuple[str, ...] = ()


CATALOGUE: dict[str, RuleSpec] = {}

Checker = Callable[[Snapshot], Iterable[Finding]]


@dataclass(frozen=True)
class RegisteredChecker:
    name: str
    rules: tuple[str, ...]
    func: Checker


CHECKERS: list[RegisteredChecker] = []


def rule(rule_id: str, code: str, stage: int, summary: str, refs: Iterable[str] = ()) -> RuleSpec:
    if rule_id in CATALOGUE:
        raise ValueError(f"rule {rule_id} is defined twice")
    spec = RuleSpec(rule_id, code, stage, summary, tuple(refs))
    CATALOGUE[rule_id] = spec
    return spec


def checker(*specs: RuleSpec) -> Callable[[Checker], Checker]:
    """Register a checker that emits findings of ``specs``."""

    def register(func: Checker) -> Checker:
        CHECKERS.append(RegisteredChecker(f"{func.__module__}.{func.__name__}", tuple(s.id for s in specs), func))
        return func

    return register


def finding(
    spec: RuleSpec,
    *,
    cluster: ObjectRef | None,
    obj: ObjectRef,
    severity: Severity,
    title: str,
    evidence: Iterable[Evidence] = (),
    explanation: str = "",
    remediation: Iterable[str] = (),
    confidence: Confidence = "confirmed",
    symptoms: Iterable[str] = (),
    effects: Iterable[str] = (),
    refs: Iterable[str] = (),
    stage: int | None = None,
) -> Finding:
    return Finding(
        rule=spec.id,
        code=spec.code,
        severity=severity,
        confidence=confidence,
        title=title,
        object=obj,
        cluster=cluster,
        stage=spec.stage if stage is None else stage,
        evidence=list(evidence),
        explanation=explanation,
        remediation=list(remediation),
        refs=list(dict.fromkeys([*spec.refs, *refs])),
        symptoms=frozenset(symptoms),
        effects=frozenset(effects),
    )


def field_evidence(obj: ObjectRef | None, path: str, value: Any, source: EvidenceSource = "object") -> Evidence:
    return Evidence(source=source, object=obj, path=path, value=value)


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def listing(items: Iterable[str], limit: int = 3) -> str:
    values = list(items)
    shown = ", ".join(values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def first(mapping: Mapping[str, Any] | None, *keys: str) -> Any:
    current: Any = mapping or {}
    for key in keys:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current

"""Chain findings into causes and consequences, and order them root causes first.

1. Every finding gets a stable id, ``<rule>-<n>``, numbered in a deterministic order (cluster, stage, rule, object,
   title), so the same snapshot always gives the same ids.
2. Finding A *explains* finding B when one of A's ``effects`` is one of B's ``symptoms``
   (:mod:`raykube.doctor.tokens`).
3. Edges only go forward in the chain order (stage, then findings without symptoms (pure causes) before findings
   with, then rule id), which keeps the graph acyclic: of two findings that would explain each other the earlier
   one wins.
4. Transitive reduction: B's ``caused_by`` keeps only its nearest causes (if A explains C and C explains B, B is
   caused by C only), so consequences hang under the link just before them and, through it, under the root cause.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from raykube.doctor.model import SEVERITY_RANK, Finding


def _order_key(f: Finding) -> tuple[str, int, int, str, str, str, str]:
    cluster = f"{f.cluster.namespace}/{f.cluster.name}" if f.cluster is not None else ""
    return (cluster, f.stage, 1 if f.symptoms else 0, f.rule, f.object.kind, f.object.name, f.title)


def _chain_key(f: Finding) -> tuple[int, int, str, str, str]:
    return (f.stage, 1 if f.symptoms else 0, f.rule, f.object.name, f.title)


def correlate(findings: Sequence[Finding]) -> list[Finding]:
    """Fill in ``id``, ``caused_by`` and ``causes``; return the findings in display order (see :func:`ordered`)."""
    items = sorted(findings, key=_order_key)
    counters: dict[str, int] = defaultdict(int)
    for finding in items:
        counters[finding.rule] += 1
        finding.id = f"{finding.rule}-{counters[finding.rule]}"
        finding.caused_by = []
        finding.causes = []

    rank = {id(f): i for i, f in enumerate(sorted(items, key=_chain_key))}
    by_symptom: dict[str, list[Finding]] = defaultdict(list)
    for finding in items:
        for token in finding.symptoms:
            by_symptom[token].append(finding)

    parents: dict[int, set[int]] = defaultdict(set)  # id(child) -> {id(parent)}
    by_identity = {id(f): f for f in items}
    for cause in items:
        for token in cause.effects:
            for effect in by_symptom.get(token, []):
                if effect is not cause and rank[id(cause)] < rank[id(effect)]:
                    parents[id(effect)].add(id(cause))

    ancestors: dict[int, set[int]] = {}
    for finding in sorted(items, key=lambda f: rank[id(f)]):
        mine: set[int] = set()
        for parent in parents.get(id(finding), ()):
            mine.add(parent)
            mine |= ancestors[parent]
        ancestors[id(finding)] = mine

    for finding in items:
        direct = parents.get(id(finding), set())
        nearest = {p for p in direct if not any(p in ancestors[q] for q in direct if q != p)}
        finding.caused_by = [by_identity[p].id for p in sorted(nearest, key=lambda p: rank[p])]
        for parent in nearest:
            by_identity[parent].causes.append(finding.id)
    rank_of_id = {f.id: rank[id(f)] for f in items}
    for finding in items:
        finding.causes.sort(key=rank_of_id.__getitem__)
    return ordered(items)


def ordered(findings: Sequence[Finding]) -> list[Finding]:
    """Display order per cluster: root causes (worst first), each followed by its consequences depth-first; then
    the findings that neither cause nor follow anything, worst first."""
    by_id = {f.id: f for f in findings}
    clusters: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        key = f"{finding.cluster.namespace}/{finding.cluster.name}" if finding.cluster is not None else ""
        clusters[key].append(finding)
    out: list[Finding] = []

    def visit(f: Finding, seen: set[str]) -> None:
        if f.id in seen:
            return
        seen.add(f.id)
        out.append(f)
        for child in f.causes:  # a consequence in another subject (a RayJob's, of its cluster) is listed there
            if child in by_id and by_id[child].cluster == f.cluster:
                visit(by_id[child], seen)

    for key in sorted(clusters):
        group = clusters[key]
        seen: set[str] = set()

        roots = [f for f in group if not f.caused_by and f.causes]
        roots.sort(key=lambda f: (-SEVERITY_RANK[f.severity], _chain_key(f)))
        for root in roots:
            visit(root, seen)
        rest = [f for f in group if f.id not in seen and not f.caused_by]
        rest.sort(key=lambda f: (-SEVERITY_RANK[f.severity], _chain_key(f)))
        for f in rest:
            visit(f, seen)
        for f in sorted((f for f in group if f.id not in seen), key=_chain_key):
            visit(f, seen)
    return out


def root_of(finding: Finding, by_id: dict[str, Finding]) -> list[Finding]:
    """The root causes a finding ultimately follows from (itself when it is a root)."""
    if not finding.caused_by:
        return [finding]
    roots: dict[str, Finding] = {}
    for parent in finding.caused_by:
        if parent in by_id:
            for root in root_of(by_id[parent], by_id):
                roots[root.id] = root
    return list(roots.values())

"""raykube's cluster_spec_hash is KubeRay v1.7.0's GenerateHashWithoutReplicasAndWorkersToDelete, byte for byte.

The module proxy does not serve ray-operator v1.7.0, so ``make test`` cannot build its hash function; KubeRay's
answers come from tests/vectors/kuberay_hash_v170.json, written by tools/kuberay/generate.py from a v1.7.0 checkout
(which also writes the Go struct table raykube's hash reads, src/raykube/golang/gostructs.py). Each case has KubeRay's
two hashes of a spec: as read (the RayService controller's) and after setDefaults (the RayCluster controller's).

* Spec cases hold the spec itself (drawn from tests/hash_specs.py's strategies, and a few on which v1.6.1 answers
  otherwise): raykube must agree on every one.
* Sample cases name a spec of v1.7.0's samples only by file, index and the sha256 of its canonical JSON (the file holds
  none of KubeRay's sample content). Those whose spec is also one of v1.6.1's samples (which ``make test`` fetches
  from the module proxy) are compared, as written and with v1.7.0's CRD default ``priority: 0``; at least
  :data:`MIN_SAMPLE_MATCHES` must be, so the check cannot quietly compare nothing (the count is the
  ``samples_compared`` property of the JUnit report).
"""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from raykube.builders import spechash
from raykube.golang import gostructs
from tests import hash_specs
from tests.support import KUBERAY_V161

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "kuberay_hash_v170.json"
ROUNDTRIP = VECTORS.with_name("kuberay_roundtrip_v170.json")
REGENERATE = "regenerate with tools/kuberay/generate.py (tools/kuberay/README.md); never edit the file by hand"
# v1.7.0's samples whose spec is one of v1.6.1's (plain or +priority): 135 when the file was written.
MIN_SAMPLE_MATCHES = 100


@dataclass(frozen=True)
class Divergence:
    """Cases where raykube knowingly hashes otherwise than KubeRay v1.7.0: which ones, and why."""

    reason: str
    applies: Callable[[dict[str, Any]], bool]


# None today. A case a divergence covers is counted apart, never as agreeing; one that no longer shows fails the
# tests until it is removed from here.
DIVERGENCES: tuple[Divergence, ...] = ()


@cache
def _vectors() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))
    assert data["count"] == len(data["cases"]), f"count {data['count']}, {len(data['cases'])} cases; {REGENERATE}"
    return data


def _cases(kind: str) -> list[dict[str, Any]]:
    return [case for case in _vectors()["cases"] if kind in case]


@cache
def _v161_samples() -> dict[str, dict[str, Any]]:
    """v1.6.1's sample specs, as written and with priority: 0 added, by their input_sha256."""
    found = {}
    for _, spec in hash_specs.sample_specs(KUBERAY_V161 / "samples"):
        for variant in (spec, hash_specs.with_priority_default(spec)):
            if variant is not None:
                found[hash_specs.input_sha256(variant)] = variant
    return found


def disagreement(case: dict[str, Any], spec_text: str) -> str | None:
    """What raykube answers otherwise than KubeRay for the case (whose spec, as served, is ``spec_text``)."""
    try:
        got = hash_specs.raykube_hashes(spec_text)
    except Exception as error:  # any failure to hash is a disagreement, reported with the case
        return f"raykube fails: {error!r}"
    expected = (case["served"], case["defaulted"])
    return None if got == expected else f"raykube (served, defaulted) {got}, KubeRay {expected}"


@dataclass
class Outcome:
    compared: int = 0
    mismatches: list[str] = field(default_factory=list)
    diverged: dict[str, int] = field(default_factory=dict)  # divergence reason -> cases it explains


def compare_all(cases: list[tuple[dict[str, Any], str]]) -> Outcome:
    """Every case against raykube: the disagreements no divergence explains, and how often each divergence shows."""
    outcome = Outcome(diverged=dict.fromkeys((d.reason for d in DIVERGENCES), 0))
    for case, text in cases:
        outcome.compared += 1
        problem = disagreement(case, text)
        if problem is None:
            continue
        reason = next((d.reason for d in DIVERGENCES if d.applies(case)), None)
        if reason is not None:
            outcome.diverged[reason] += 1
        else:
            name = case.get("sample") or case["spec"]
            outcome.mismatches.append(f"{name}: {problem}")
    return outcome


def _assert_agrees(outcome: Outcome) -> None:
    shown = "\n".join(outcome.mismatches[:20])
    assert not outcome.mismatches, (
        f"{len(outcome.mismatches)} of {outcome.compared} cases disagree with KubeRay v1.7.0:\n{shown}"
    )
    stale = [reason for reason, count in outcome.diverged.items() if count == 0]
    assert not stale, f"these known divergences no longer show; remove them from DIVERGENCES: {stale}"


# --------------------------------------------------------------------------------------------------- the file
def test_vectors_are_kuberay_v170_and_match_the_struct_table() -> None:
    header = _vectors()
    assert header["kuberay"] == "v1.7.0"
    counts = header["counts"]
    assert counts["samples"] + counts["samples_priority"] == len(_cases("sample"))
    spec_cases = _cases("spec")
    for strategy in ("SPEC_V170", "SPEC_V170_ADDED", "SPEC_V161"):
        assert counts[strategy] == sum(1 for c in spec_cases if c.get("strategy") == strategy) >= 200, strategy
    assert counts["v161_differences"] == sum(1 for c in spec_cases if "why" in c)
    assert counts["SPEC_V170"] >= 500
    assert counts["samples"] >= 80
    # the table raykube hashes with comes from the same generator run, at the same commit
    table = Path(gostructs.__file__).read_text(encoding="utf-8")
    module_lines = [line.removeprefix("#   ") for line in table.splitlines() if line.startswith("#   ")]
    assert module_lines == header["modules"], REGENERATE
    assert f"ray-operator v1.7.0 (a checkout at commit {header['commit']})" in module_lines[0]


# How many of each strategy's first draws make test compares with the committed spec cases: an edit to a strategy, to a
# constant it reads or a new Hypothesis changes the draws from the first ones on (all of them: 19 s on an idle core, so
# `tools/kuberay/generate.py --check`, which make conformance runs first, compares every draw).
FIRST_DRAWS = 60


def test_the_spec_cases_are_what_the_strategies_draw_today() -> None:
    """The generator's draws depend on tests/hash_specs.py and the constants it reads: when either changes, the files
    no longer hold what re-running the generator writes, and a claim nobody can reproduce is not evidence. (The Go
    round-trip vectors encode the first SPEC_V170 draws, each as a RayCluster, a RayJob's and a RayService's.)"""
    spec_cases = _cases("spec")
    roundtrip = json.loads(ROUNDTRIP.read_text(encoding="utf-8"))["cases"]
    clusters = [case["object"]["spec"] for case in roundtrip if case.get("strategy") and case["kind"] == "RayCluster"]
    assert clusters, "the round-trip vectors hold no drawn spec"
    drawn = hash_specs.drawn(first=max(FIRST_DRAWS, len(clusters)))
    for name, specs in drawn.items():
        committed = [case["spec"] for case in spec_cases if case.get("strategy") == name][: len(specs)]
        today = [hash_specs.served(spec) for spec in specs]
        stale = sum(1 for a, b in zip(committed, today, strict=True) if a != b)
        assert committed == today, (
            f"{stale} of the first {name} specs are no longer what the strategy draws: {REGENERATE}"
        )
    today = [json.loads(hash_specs.served(spec)) for spec in drawn["SPEC_V170"][: len(clusters)]]
    assert clusters == today, f"the round-trip vectors' drawn specs are no longer the SPEC_V170 draws: {REGENERATE}"


def test_the_committed_draws_are_as_many_as_the_strategies_ask() -> None:
    spec_cases = _cases("spec")
    for name, count in hash_specs.STRATEGIES.items():
        assert sum(1 for case in spec_cases if case.get("strategy") == name) == count, REGENERATE


# --------------------------------------------------------------------------------------------------- the cases
def test_every_spec_case_hash_is_kuberays() -> None:
    cases = _cases("spec")
    _assert_agrees(compare_all([(case, case["spec"]) for case in cases]))


def test_the_remembered_hash_of_a_spec_as_read_is_kuberays(monkeypatch: pytest.MonkeyPatch) -> None:
    """spec_hash_of_wire, the RayService controller's hash remembered by the spec's content, answers KubeRay's hash
    as read for every spec case: computed, then from the memo, then computed again once the memo dropped it."""
    monkeypatch.setattr(spechash, "_memo", OrderedDict())
    monkeypatch.setattr(spechash, "MEMO_SIZE", 4)
    cases = _cases("spec")
    assert len(cases) > spechash.MEMO_SIZE
    for _ in range(2):
        for case in cases:
            wire = json.loads(case["spec"])
            assert spechash.spec_hash_of_wire(wire, defaulted=False) == case["served"], case["spec"]
            assert spechash.spec_hash_of_wire(wire, defaulted=False) == case["served"], "from the memo"
            assert spechash.spec_hash_of_wire(wire, defaulted=True) == case["defaulted"], case["spec"]
            assert wire == json.loads(case["spec"]), "the caller's spec is left as it was"
        assert len(spechash._memo) == spechash.MEMO_SIZE


def test_sample_cases_shared_with_v161_hash_as_kuberays(record_property: Callable[[str, object], None]) -> None:
    shared = _v161_samples()
    matched = [
        (case, hash_specs.served(shared[case["input_sha256"]]))
        for case in _cases("sample")
        if case["input_sha256"] in shared
    ]
    record_property("samples_compared", len(matched))
    assert len(matched) >= MIN_SAMPLE_MATCHES, (
        f"only {len(matched)} of the {len(_cases('sample'))} v1.7.0 sample cases are v1.6.1 samples too "
        f"(of {len(shared)} under {KUBERAY_V161 / 'samples'}); expected at least {MIN_SAMPLE_MATCHES}"
    )
    assert any(case["sample"].endswith("+priority") for case, _ in matched)
    _assert_agrees(compare_all(matched))


def test_v161_differences_are_real() -> None:
    """The specs the file says v1.6.1 hashes otherwise (tests/integration/test_kuberay_hash.py checks the v1.6.1
    answers live): the two releases do differ there, and raykube is v1.7.0."""
    differences = _cases("why")
    assert differences
    for case in differences:
        assert case["v161"] != [case["served"], case["defaulted"]], case["why"]
        assert disagreement(case, case["spec"]) is None, case["why"]


# --------------------------------------------------------------------------------------------------- the check
def _altered(hash_value: str) -> str:
    """Another valid-looking hash: the first character changed."""
    return ("1" if hash_value[0] != "1" else "2") + hash_value[1:]


@pytest.mark.parametrize("field", ["served", "defaulted"])
def test_an_altered_hash_fails_the_comparison(field: str) -> None:
    spec_case = copy.deepcopy(_cases("spec")[-1])
    assert disagreement(spec_case, spec_case["spec"]) is None
    spec_case[field] = _altered(spec_case[field])
    assert disagreement(spec_case, spec_case["spec"]) is not None
    outcome = compare_all([(spec_case, spec_case["spec"])])
    assert outcome.mismatches

    shared = _v161_samples()
    sample_case = copy.deepcopy(next(case for case in _cases("sample") if case["input_sha256"] in shared))
    text = hash_specs.served(shared[sample_case["input_sha256"]])
    assert disagreement(sample_case, text) is None
    sample_case[field] = _altered(sample_case[field])
    with pytest.raises(AssertionError, match="1 of 1 cases disagree"):
        _assert_agrees(compare_all([(sample_case, text)]))


def test_an_altered_spec_fails_the_comparison() -> None:
    case = copy.deepcopy(next(c for c in _cases("spec") if '"priority":' in c["spec"]))
    spec = json.loads(case["spec"])
    group = next(g for g in spec["workerGroupSpecs"] if isinstance(g, dict) and "priority" in g)
    group["priority"] = 7 if group["priority"] != 7 else 8
    assert disagreement(case, hash_specs.served(spec)) is not None

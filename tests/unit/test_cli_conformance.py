from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from raykube.api.config import parse_feature_gates
from raykube.cli import conformance
from raykube.cli.conformance import (
    binary_args,
    failed,
    parse_operators,
    parse_suites,
    raykube_feature_gates,
    sandbox_name,
)
from raykube.sandbox.conformance import SUITES, V161_E2E_FEATURE_GATES, Source, SuiteRun
from raykube.sandbox.gotest import parse


def test_suites_default_dedupe_and_refuse_unknown_names() -> None:
    assert parse_suites([]) == (SUITES["raycluster"],)
    assert parse_suites(["rayjob,raycluster", "rayjob"]) == (SUITES["rayjob"], SUITES["raycluster"])
    with pytest.raises(ValueError, match="unknown suite"):
        parse_suites(["raycluster,nope"])


def test_binary_args_select_and_skip() -> None:
    args = binary_args(SUITES["rayservice"], "TestRayServiceValidation", "90m")
    assert args[:3] == ["-test.v", "-test.count=1", "-test.timeout=90m"]
    assert "-test.run=TestRayServiceValidation" in args
    skip = next(a for a in args if a.startswith("-test.skip="))
    assert "|^TestRayServiceGCSFaultTolerance$|" in skip
    assert "^TestRayServiceManagedBy$/^Successful_creation_of_RayService,_managed_by_Kuberay_Operator$" in skip
    # The GCS fault tolerance tests run in the default suite: their redis:7.4 Pod runs a real Redis here.
    assert binary_args(SUITES["raycluster"], None, "90m") == ["-test.v", "-test.count=1", "-test.timeout=90m"]
    assert binary_args(SUITES["rayjob"], None, "30m") == ["-test.v", "-test.count=1", "-test.timeout=30m"]


def test_the_operator_accepts_kuberay_e2e_feature_gates() -> None:
    gates = parse_feature_gates(V161_E2E_FEATURE_GATES)
    assert gates["RayMultiHostIndexing"] is True
    assert len(gates) == 5
    assert raykube_feature_gates(V161_E2E_FEATURE_GATES) == (V161_E2E_FEATURE_GATES, ())


def test_every_v170_e2e_gate_is_kept_and_one_raykube_does_not_build_would_be_left_off_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """KubeRay v1.7.0's e2e CI turns on gates raykube now builds, so all are kept; a gate raykube did not build would
    stop it at start-up, so the run would leave it off and the page would name it."""
    v170 = (
        "RayCronJob=true,RayClusterMTLS=true,GCSFaultToleranceEmbeddedStorage=true,RayClusterHistoryServer=true,"
        "KubernetesWAS=false"
    )
    assert raykube_feature_gates(v170) == (v170, ())
    assert parse_feature_gates(v170) == {
        "RayCronJob": True,
        "RayClusterMTLS": True,
        "GCSFaultToleranceEmbeddedStorage": True,
        "RayClusterHistoryServer": True,
        "KubernetesWAS": False,
    }
    monkeypatch.setattr(conformance, "UNIMPLEMENTED_FEATURE_GATES", ("RayClusterHistoryServer", "KubernetesWAS"))
    kept, dropped = raykube_feature_gates(v170)
    assert kept == "RayCronJob=true,RayClusterMTLS=true,GCSFaultToleranceEmbeddedStorage=true,KubernetesWAS=false"
    assert dropped == ("RayClusterHistoryServer",)


def test_both_operators_by_default_and_unknown_ones_refused() -> None:
    assert parse_operators("raykube,kuberay") == ("raykube", "kuberay")
    assert parse_operators(" kuberay ,kuberay") == ("kuberay",)
    for bad in ("", "raykube,go"):
        with pytest.raises(ValueError, match="--operator"):
            parse_operators(bad)


def test_a_suite_the_release_has_no_package_for_is_refused() -> None:
    assert parse_suites(["raycluster"], ("e2e",)) == (SUITES["raycluster"],)
    with pytest.raises(ValueError, match="kuberneteswas"):
        parse_suites(["kuberneteswas"], ("e2e", "e2erayjob"))


def test_one_sandbox_per_operator() -> None:
    assert sandbox_name("raykube") == "conformance"
    assert sandbox_name("kuberay") == "conformance-kuberay"


def test_failed_when_a_test_failed_or_the_binary_did() -> None:
    def run(output: str, code: int) -> SuiteRun:
        return SuiteRun(SUITES["raycluster"], "raykube", None, parse("e2e", output), {}, {}, 1.0, code, "now")

    passed = "=== RUN   TestA\n--- PASS: TestA (1.00s)\n"
    assert not failed([run(passed, 0)])
    assert failed([run(passed, 1)])  # e.g. a panic after the last test, or a build problem
    assert failed([run("=== RUN   TestA\n--- FAIL: TestA (1.00s)\n", 1)])
    assert failed([run("=== RUN   TestA\npanic: test timed out after 1m0s\n", 2)])


def test_the_tree_stays_clean_when_a_run_only_rewrote_what_runs_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run rewrites docs/conformance.md and README.md's date, the differential its page, its results line and
    README.md's count; the next run (another suite) is still on a clean tree. Any other change to README.md, or to
    another file, is not clean."""

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    readme = tmp_path / "README.md"
    readme.write_text(
        "intro\n<!-- conformance:date -->last run 2026-12-03<!-- /conformance:date -->\n"
        "<!-- differential:count -->7 of 9 equal<!-- /differential:count -->\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "conformance.md").write_text("results\n")
    (tmp_path / "docs" / "differential.md").write_text("objects\n")
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "differential.jsonl").write_text("{}\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "start")
    monkeypatch.setattr(conformance, "repository_root", lambda: tmp_path)

    assert conformance.source_tree().clean
    readme.write_text(readme.read_text().replace("2026-12-03", "2026-12-06").replace("7 of", "8 of"))
    (tmp_path / "docs" / "conformance.md").write_text("results, rewritten\n")
    (tmp_path / "docs" / "differential.md").write_text("objects, rewritten\n")
    (tmp_path / "benchmarks" / "results" / "differential.jsonl").write_text("{}\n{}\n")
    assert conformance.source_tree().clean
    (tmp_path / "docs" / "other.md").write_text("new\n")
    assert not conformance.source_tree().clean
    (tmp_path / "docs" / "other.md").unlink()
    readme.write_text(readme.read_text().replace("intro", "intro, edited"))
    assert not conformance.source_tree().clean


def test_the_versions_line_says_local_changes_exactly_when_the_source_line_is_unclean(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(conformance, "source_tree", lambda: Source("0ac1da1bac000a5a9b73a0386bd3cd986bcee6b2", True))
    assert conformance.raykube_revision().endswith("(commit 0ac1da1bac00)")
    monkeypatch.setattr(conformance, "source_tree", lambda: Source("0ac1da1bac000a5a9b73a0386bd3cd986bcee6b2", False))
    assert conformance.raykube_revision().endswith("(commit 0ac1da1bac00 with local changes)")
    monkeypatch.setattr(conformance, "source_tree", lambda: Source("", False))
    assert "commit" not in conformance.raykube_revision()

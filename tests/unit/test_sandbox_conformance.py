from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from raykube.sandbox import versions
from raykube.sandbox.build import is_built, missing_artifacts
from raykube.sandbox.conformance import (
    DEFAULT_SUITE,
    SUITES,
    E2EBuild,
    SuiteRun,
    markdown_section,
    package_path,
    table_rows,
    update_document,
    upstream_defaults,
    upstream_go_line,
    wrapper_go_mod,
)
from raykube.sandbox.errors import NotBuiltError
from raykube.sandbox.gotest import parse

OUTPUT = """\
=== RUN   TestRayClusterSuspend
    raycluster_test.go:90: [2026-12-03T15:22:03Z] Created RayCluster
--- PASS: TestRayClusterSuspend (61.25s)
=== RUN   TestRayClusterScalingDown
    raycluster_test.go:200:
        Expected
            <int>: 2
        to equal
            <int>: 1
--- FAIL: TestRayClusterScalingDown (30.00s)
"""


def run(suite: str = DEFAULT_SUITE, run_filter: str | None = None, operator: str = "raykube") -> SuiteRun:
    return SuiteRun(
        suite=SUITES[suite],
        operator=operator,
        run=run_filter,
        tests=parse("e2e", OUTPUT),
        env={"KUBERAY_TEST_RAY_IMAGE": "rayproject/ray:2.52.0"},
        versions={"KubeRay e2e tests": "v1.6.1"},
        seconds=91.3,
        exit_code=1,
        started_at="2026-12-03 15:20 UTC",
    )


def test_optional_artifacts_are_not_built_by_the_sandbox_build(tmp_path: Path) -> None:
    assert not set(versions.OPTIONAL_ARTIFACTS) & set(versions.ARTIFACTS)
    assert missing_artifacts(tmp_path) == list(versions.ARTIFACTS)
    assert versions.KUBERAY_E2E.dirname == f"kuberay-e2e-v{versions.KUBERAY_VERSION}-r1"
    assert versions.KUBERAY_OPERATOR.dirname == f"kuberay-operator-v{versions.KUBERAY_VERSION}-r1"
    assert "e2e.test" in versions.KUBERAY_E2E.files
    assert "e2erayjob.test" in versions.KUBERAY_E2E.files


def test_wrapper_module_keeps_upstream_go_line() -> None:
    assert upstream_go_line("module x\n\ngo 1.25.0\n\nrequire (\n)\n") == "go 1.25.0"
    assert wrapper_go_mod("go 1.25.0") == "module raykube.local/kuberay-e2e\n\ngo 1.25.0\n"
    assert package_path("e2erayjob") == "github.com/ray-project/kuberay/ray-operator/test/e2erayjob"


def test_default_suite_skips_exactly_the_tests_that_cannot_run_here() -> None:
    suite = SUITES[DEFAULT_SUITE]
    assert suite.package == "e2e"
    pattern = suite.skip_pattern()
    assert pattern is not None
    for name in ("TestRayClusterGCSFaultTolerance", "TestGcsFaultToleranceOptions", "TestGcsFaultToleranceAnnotations"):
        assert re.search(pattern, name)
    for name in ("TestRayClusterSuspend", "TestRayClusterGCSFaultToleranceX", "TestRayClusterManagedBy"):
        assert not re.search(pattern, name)
    assert SUITES["rayjob"].package == "e2erayjob"
    assert SUITES["rayjob"].skip_pattern() is None


def test_upstream_defaults_are_read_from_the_module(tmp_path: Path) -> None:
    support = tmp_path / "test" / "support"
    support.mkdir(parents=True)
    (support / "defaults.go").write_text(
        'package support\n\nconst (\n\tRayVersion            = "2.52.0"\n'
        '\tRayImage              = "rayproject/ray:2.52.0"\n)\n'
    )
    (support / "support.go").write_text(
        "\tTestTimeoutShort  = 1 * time.Minute\n\tTestTimeoutMedium = 2 * time.Minute\n"
        "\tTestTimeoutLong   = 5 * time.Minute\n"
    )
    defaults = upstream_defaults(tmp_path)
    assert defaults.ray_image == "rayproject/ray:2.52.0"
    assert defaults.ray_version == "2.52.0"
    assert defaults.timeouts == {
        "KUBERAY_TEST_TIMEOUT_SHORT": "1m",
        "KUBERAY_TEST_TIMEOUT_MEDIUM": "2m",
        "KUBERAY_TEST_TIMEOUT_LONG": "5m",
    }


def test_e2e_build_needs_the_binaries_and_the_module_sources(tmp_path: Path) -> None:
    with pytest.raises(NotBuiltError, match="not built"):
        E2EBuild.from_cache(tmp_path)
    directory = versions.artifact_dir(versions.KUBERAY_E2E, tmp_path)
    directory.mkdir(parents=True)
    for name in versions.KUBERAY_E2E.files:
        (directory / name).write_text("")
    (directory / ".complete").write_text("{}")
    (directory / "module.json").write_text(json.dumps({"module": "m@v1", "dir": str(tmp_path / "gone")}))
    assert is_built(versions.KUBERAY_E2E, tmp_path)
    with pytest.raises(NotBuiltError, match="go mod download"):
        E2EBuild.from_cache(tmp_path)
    (tmp_path / "gone").mkdir()
    build = E2EBuild.from_cache(tmp_path)
    assert build.binary("e2e") == directory / "e2e.test"
    assert build.package_dir("e2erayservice") == tmp_path / "gone" / "test" / "e2erayservice"


def test_table_rows_and_markdown_section() -> None:
    rows = table_rows(run().tests)
    assert rows == [
        ("e2e", "TestRayClusterSuspend", "", "PASS", "61.2", ""),
        ("e2e", "TestRayClusterScalingDown", "", "FAIL", "30.0", "Expected <int>: 2 to equal <int>: 1"),
    ]
    text = markdown_section(run())
    assert "| e2e | TestRayClusterScalingDown |  | FAIL | 30.0 | Expected <int>: 2 to equal <int>: 1 |" in text
    assert "1 fail, 1 pass" in text
    assert "`KUBERAY_TEST_RAY_IMAGE=rayproject/ray:2.52.0`" in text
    assert "KubeRay e2e tests v1.6.1" in text
    assert "`TestGcsFaultToleranceOptions`, `TestRayClusterGCSFaultTolerance`: deploys Redis" in text


def test_update_document_replaces_only_the_suites_own_section() -> None:
    document = "# Title\n\nHand-written text.\n"
    once = update_document(document, run())
    assert once.startswith(document)
    assert once.count("<!-- conformance:begin raycluster -->") == 1
    with_other = update_document(once, run("rayjob"))
    again = update_document(with_other, run())
    assert again == with_other
    assert again.count("<!-- conformance:begin rayjob -->") == 1
    assert again.index("begin raycluster") < again.index("begin rayjob")
    reference = update_document(again, run(operator="kuberay"))
    assert reference.startswith(again.rstrip("\n"))
    assert "<!-- conformance:begin raycluster@kuberay -->" in reference
    assert "### Suite `raycluster` against KubeRay's own operator (kuberay)" in reference
    assert "### Suite `raycluster` against raykube" in reference
    reference_first = update_document(update_document(document, run(operator="kuberay")), run())
    assert reference_first.index("begin raycluster -->") < reference_first.index("begin raycluster@kuberay")


def test_a_subtest_that_cannot_run_here_is_skipped_alone_in_go_form() -> None:
    """Go splits -test.skip on unbracketed ``|`` into alternatives and each on ``/`` into levels; a subtest's
    spaces are underscores in the name it matches."""
    pattern = SUITES["rayservice"].skip_pattern()
    assert pattern is not None
    alternatives = pattern.split("|")
    assert "^TestRedeployRayServe$" in alternatives
    assert "^TestRayServiceManagedBy$/^Successful_creation_of_RayService,_managed_by_Kuberay_Operator$" in alternatives
    assert not any(a in ("^TestRayServiceManagedBy$", "^TestRayServiceValidation$") for a in alternatives)
    assert not any("TestRayServiceInitializingTimeoutTerminalFailure" in a for a in alternatives)

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest

from raykube.cli.conformance import readme_comparison
from raykube.sandbox import versions
from raykube.sandbox.build import is_built, missing_artifacts
from raykube.sandbox.conformance import (
    DEFAULT_SUITE,
    PLUGIN_VERSION_VARIABLE,
    SUITES,
    E2EBuild,
    SuiteRun,
    _checkout_recipes,
    comparison_block,
    comparisons,
    markdown_section,
    package_path,
    proxy_release,
    recorded_runs,
    release,
    served_by_proxy,
    table_rows,
    update_document,
    upstream_defaults,
    upstream_go_line,
    wrapper_go_mod,
)
from raykube.sandbox.errors import NotBuiltError, SandboxError
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


def test_default_suite_runs_every_test_of_its_package_gcs_fault_tolerance_included() -> None:
    """The three GCS fault tolerance tests of test/e2e deploy redis:7.4, which runs a real Redis on process nodes
    (sandbox/redis.py): nothing of the package is left out any more."""
    suite = SUITES[DEFAULT_SUITE]
    assert suite.package == "e2e"
    assert suite.not_here == {} and suite.skip_pattern() is None
    assert SUITES["rayjob"].package == "e2erayjob"
    assert SUITES["rayjob"].skip_pattern() is None


def test_a_skip_pattern_matches_exactly_the_tests_that_cannot_run_here() -> None:
    pattern = SUITES["rayservice"].skip_pattern()
    assert pattern is not None
    for name in ("TestRayServiceGCSFaultTolerance", "TestStaticRayService"):
        assert re.search(pattern, name)
    for name in ("TestRayServiceValidation", "TestRayServiceGCSFaultToleranceX", "TestStaticRayServiceX"):
        assert not re.search(pattern, name)
    assert "Redis" not in SUITES["rayservice"].not_here["TestRayServiceGCSFaultTolerance"]


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
    assert "Not run here" not in text  # the default suite leaves nothing of its package out
    serve = markdown_section(run("rayservice"))
    line = next(x for x in serve.splitlines() if "`TestRayServiceGCSFaultTolerance`" in x)
    assert "Not run here:" in serve and "`TestStaticRayService`" in line and "Redis" not in line


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


def _checkout(root: Path, version: str = "v1.7.0") -> Path:
    """A folder shaped like a KubeRay checkout: what :func:`release` reads from one."""
    operator = root / "ray-operator"
    (operator / "controllers" / "ray" / "utils").mkdir(parents=True)
    (operator / "go.mod").write_text("module github.com/ray-project/kuberay/ray-operator\n\ngo 1.26.0\n")
    (operator / "controllers" / "ray" / "utils" / "constant.go").write_text(
        f'package utils\n\nconst (\n\t// the build version\n\tKUBERAY_VERSION = "{version}"\n)\n'
    )
    overlay = operator / "config" / "overlays" / "test-overrides"
    overlay.mkdir(parents=True)
    (overlay / "deployment-override.yaml").write_text(
        "args:\n        - --feature-gates=RayCronJob=true,SidecarSubmitterRestart=true\n"
    )
    for package in ("e2e", "e2erayjob", "support"):
        (operator / "test" / package).mkdir(parents=True)
    (operator / "test" / "e2e" / "raycluster_test.go").write_text("package e2e\n")
    (operator / "test" / "e2erayjob" / "rayjob_test.go").write_text("package e2erayjob\n")
    (operator / "test" / "support" / "support.go").write_text("package support\n")
    return root


def test_a_checkout_is_a_release_keyed_by_its_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = _checkout(tmp_path / "kuberay")
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    subprocess.run(
        ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
         "-m", "tag"], check=True,
    )  # fmt: skip
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout
    monkeypatch.setenv("KUBERAY_SRC", str(checkout))
    rel = release("v1.7.0")
    assert rel.version == "1.7.0" and rel.checkout == checkout.resolve() and rel.commit == commit.strip()
    assert rel.packages == ("e2e", "e2erayjob")  # support holds no tests
    assert rel.feature_gates == "RayCronJob=true,SidecarSubmitterRestart=true"
    assert rel.e2e.dirname == f"kuberay-e2e-v1.7.0-{rel.commit[:12]}-r{versions.CONFORMANCE_RECIPE_REVISION}"
    assert rel.e2e.files == ("e2e.test", "e2erayjob.test", "module.json")
    assert rel.operator.files == ("ray-operator",)
    assert rel.crd_dir() == checkout.resolve() / "ray-operator" / "config" / "crd" / "bases"
    assert rel.origin() == f"v1.7.0 (built from a checkout at commit {rel.commit[:12]})"
    # Its kubectl plugin, for the differential test of `kubectl ray`: `go build ./cmd` in kubectl-plugin/ (the root
    # module), the version stamped where `kubectl ray version` reads it.
    assert rel.plugin is not None and rel.plugin.files == ("kubectl-ray",)
    assert rel.plugin.dirname == f"kubectl-ray-v1.7.0-{rel.commit[:12]}-r{versions.CONFORMANCE_RECIPE_REVISION}"
    assert rel.plugin not in rel.artifacts  # built only when a test asks for it
    calls: list[tuple[tuple[str, ...], Path]] = []

    class Go:
        def run(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
            calls.append((args, cwd))
            return ""

    recipe = _checkout_recipes(rel, rel.checkout)[rel.plugin.name]
    recipe(Go(), tmp_path, tmp_path / "out")  # type: ignore[arg-type]
    [(args, cwd)] = calls
    assert cwd == checkout.resolve() / "kubectl-plugin"
    assert args[0] == "build" and args[-1] == "./cmd" and str(tmp_path / "out" / "kubectl-ray") in args
    assert f"-X {PLUGIN_VERSION_VARIABLE}=v1.7.0" in next(a for a in args if a.startswith("-ldflags="))


def test_a_checkout_of_another_release_or_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"builds KubeRay v1\.6\.2, not v1\.7\.0"):
        release("1.7.0", _checkout(tmp_path / "old", "v1.6.2"))
    with pytest.raises(SandboxError, match=r"is not a checkout of github\.com/ray-project/kuberay"):
        release("1.7.0", tmp_path)


def test_v161_comes_from_the_module_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERAY_SRC", raising=False)
    assert release("1.6.1") == proxy_release()
    assert proxy_release().e2e == versions.KUBERAY_E2E and proxy_release().checkout is None


def test_raykube_is_compared_with_kuberay_only_within_one_invocation() -> None:
    """The page says which tests KubeRay passes and raykube does not, from sections of the same command only."""
    kuberay_output = OUTPUT.replace("--- FAIL: TestRayClusterScalingDown", "--- PASS: TestRayClusterScalingDown")
    theirs = dataclasses.replace(run(operator="kuberay"), tests=parse("e2e", kuberay_output), invocation="A")
    document = update_document(update_document("# page\n", dataclasses.replace(run(), invocation="A")), theirs)
    [found] = comparisons(document)
    assert found.kuberay_passed == ("TestRayClusterSuspend", "TestRayClusterScalingDown")
    assert found.raykube_missed == ("TestRayClusterScalingDown",)
    assert "not against raykube: `TestRayClusterScalingDown`" in found.line()
    assert [r.invocation for r in recorded_runs(document)] == ["A", "A"]
    # raykube's section from another command: no comparison
    later = update_document(document, dataclasses.replace(run(), invocation="B"))
    assert comparisons(later) == []
    assert "No suite has raykube's and KubeRay's results from the same invocation" in comparison_block(later)
    # and when raykube passes what KubeRay passes, it says none
    same = update_document(later, dataclasses.replace(run(), tests=parse("e2e", kuberay_output), invocation="A"))
    assert "not against raykube: none." in comparison_block(same)


SUBTESTS = """\
=== RUN   TestRayJobSidecarMode
=== RUN   TestRayJobSidecarMode/Successful_RayJob
=== RUN   TestRayJobSidecarMode/Failing_RayJob
    rayjob_sidecar_mode_test.go:99: Timed out after 120.001s.
=== RUN   TestRayJobSidecarMode/Restart
--- FAIL: TestRayJobSidecarMode (144.22s)
    --- PASS: TestRayJobSidecarMode/Successful_RayJob (24.18s)
    --- FAIL: TestRayJobSidecarMode/Failing_RayJob (120.01s)
    --- FAIL: TestRayJobSidecarMode/Restart (0.00s)
"""


def test_a_top_level_test_failing_on_both_still_shows_the_subtests_only_kuberay_passes() -> None:
    """TestRayJobSidecarMode fails on both operators, but one of its subtests only against raykube: the comparison
    says so, and README's sentence too (a top-level comparison alone would hide it)."""
    kuberay_output = SUBTESTS.replace(
        "--- FAIL: TestRayJobSidecarMode/Failing_RayJob", "--- PASS: TestRayJobSidecarMode/Failing_RayJob"
    )
    mine = dataclasses.replace(run(), tests=parse("e2erayjob", SUBTESTS), invocation="A")
    theirs = dataclasses.replace(run(operator="kuberay"), tests=parse("e2erayjob", kuberay_output), invocation="A")
    document = update_document(update_document("# page\n", mine), theirs)
    [found] = comparisons(document)
    assert found.raykube_missed == ()
    assert found.kuberay_subtests_passed == (
        "TestRayJobSidecarMode/Successful_RayJob",
        "TestRayJobSidecarMode/Failing_RayJob",
    )
    assert found.raykube_subtests_missed == ("TestRayJobSidecarMode/Failing_RayJob",)
    said = "Subtests: KubeRay passes 2, raykube 1; passed against KubeRay and not against raykube: "
    assert said + "`TestRayJobSidecarMode/Failing_RayJob`." in found.line()
    assert "but not 1 of the 2 subtests KubeRay passes" in readme_comparison(document)


def test_releases_the_module_proxy_serves_come_from_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """v1.6.x from the module proxy (v1.6.2 for the live swap), v1.7.x only from a checkout (the proxy refuses it)."""
    monkeypatch.setenv("KUBERAY_SRC", "/nowhere")  # the checkout of v1.7.0: not used for a release the proxy serves
    v162 = release("v1.6.2")
    assert v162.checkout is None and v162.version == "1.6.2"
    assert v162.operator.dirname == f"kuberay-operator-v1.6.2-r{versions.CONFORMANCE_RECIPE_REVISION}"
    assert served_by_proxy("1.6.2") and served_by_proxy("1.5.1") and not served_by_proxy("1.7.0")

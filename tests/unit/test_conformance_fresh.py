"""docs/conformance.md is evidence only while it describes the operator as it is.

Every raykube section of the page must come from a clean tree at a commit that already holds the last change to the
operator's code (``src/raykube/{controllers,builders,kube,runtime}``), and README must quote the date and commit of
those runs. Changing the operator therefore means running ``make conformance`` again (the page records what it ran
on; see ``raykube.sandbox.conformance.Source``). The KubeRay sections are the reference and are not held to raykube's
commits.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from raykube.cli.conformance import README_COMPARISON, README_DATE, readme_comparison, readme_sentence
from raykube.sandbox.conformance import DEFAULT_SUITE, RecordedRun, recorded_runs

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "conformance.md"
README = ROOT / "README.md"
OPERATOR_CODE = tuple(f"src/raykube/{part}" for part in ("controllers", "builders", "kube", "runtime"))


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def history() -> None:
    if git("rev-parse", "--git-dir").returncode != 0:
        pytest.fail(
            f"{ROOT} is not a git checkout: the conformance page's commits can only be checked against history "
            "(run the tests from a clone)"
        )
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.fail(f"{ROOT} is a shallow clone: the commits docs/conformance.md names may be missing (clone fully)")


def raykube_runs() -> list[RecordedRun]:
    runs = [r for r in recorded_runs(PAGE.read_text()) if r.operator == "raykube"]
    assert runs, "docs/conformance.md has no raykube section"
    return runs


def last_operator_change() -> str:
    result = git("log", "-1", "--format=%H", "HEAD", "--", *OPERATOR_CODE)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.usefixtures("history")
def test_every_raykube_run_is_from_a_clean_tree_at_a_commit_in_history() -> None:
    for run in raykube_runs():
        assert run.commit, f"docs/conformance.md: the {run.suite} run does not record its commit (re-run it)"
        assert run.clean, f"docs/conformance.md: the {run.suite} run was on a tree with local changes (re-run it)"
        found = git("merge-base", "--is-ancestor", run.commit, "HEAD")
        assert found.returncode == 0, f"docs/conformance.md: the {run.suite} run's commit {run.commit} is not in HEAD"


@pytest.mark.usefixtures("history")
def test_no_raykube_run_is_older_than_the_operator_code() -> None:
    change = last_operator_change()
    stale = [
        f"{run.suite} (at {run.commit[:12]})"
        for run in raykube_runs()
        if git("merge-base", "--is-ancestor", change, run.commit).returncode != 0
    ]
    assert not stale, (
        f"docs/conformance.md is older than the operator: {', '.join(stale)} ran before {change[:12]} changed "
        f"{', '.join(OPERATOR_CODE)}; run `make conformance SUITE=raycluster,rayjob,raycronjob,rayservice` again"
    )


def test_readme_quotes_the_date_and_commit_of_the_runs() -> None:
    """README quotes what `make conformance` writes there: the default suite's raykube run (readme_sentence)."""
    page = PAGE.read_text()
    expected = readme_sentence(page)
    assert expected.startswith("last run ") and " at commit " in expected, (
        f"docs/conformance.md's {DEFAULT_SUITE} run against raykube records no date and commit"
    )
    quoted = README_DATE.search(README.read_text())
    assert quoted, "README.md does not quote the conformance runs (<!-- conformance:date -->)"
    assert quoted.group(0) == f"<!-- conformance:date -->{expected}<!-- /conformance:date -->", (
        f"README.md quotes {quoted.group(0)!r}, docs/conformance.md says {expected!r}"
    )
    compared = README_COMPARISON.search(README.read_text())
    assert compared, "README.md does not quote the comparison with KubeRay (<!-- conformance:comparison -->)"
    assert compared.group(0) == (
        f"<!-- conformance:comparison -->{readme_comparison(page)}<!-- /conformance:comparison -->"
    ), "README.md's comparison with KubeRay is not the page's: run `make conformance` (it rewrites both)"


DIFFERENTIAL = ROOT / "docs" / "differential.md"
DIFFERENTIAL_RUN = re.compile(r"raykube: \S+ \(commit (?P<commit>[0-9a-f]{12,40})(?P<dirty> with local changes)?\)")


@pytest.mark.usefixtures("history")
def test_the_differential_is_from_a_clean_tree_holding_the_operator_code() -> None:
    """docs/differential.md (``raykube conformance --objects``) is evidence on the same terms as the e2e runs."""
    found = DIFFERENTIAL_RUN.search(DIFFERENTIAL.read_text())
    assert found, (
        "docs/differential.md does not say which raykube commit it ran (re-run `make conformance SUITE=objects`)"
    )
    assert not found["dirty"], (
        "docs/differential.md was written from a tree with local changes: re-run it on a clean one"
    )
    commit = git("rev-parse", found["commit"]).stdout.strip()
    assert git("merge-base", "--is-ancestor", commit, "HEAD").returncode == 0, f"{found['commit']} is not in HEAD"
    change = last_operator_change()
    assert git("merge-base", "--is-ancestor", change, commit).returncode == 0, (
        f"docs/differential.md ran at {found['commit']}, before {change[:12]} changed the operator: "
        "run `make conformance SUITE=objects` again"
    )

"""The reliability ledger and the CI skip policy, each run on a small suite of its own (pytest's ``pytester``).

A scenario that fails, errs in setup, is skipped or passes without its row shows ❌; one whose test was removed shows
❌ "missing" in a whole run; the summary at the top says so; a whole run with a missing scenario fails. With
``CI=true`` a skip fails unless allowed. The rows travel from pytest-xdist workers through part files.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.ci_allowed_skips import TAG, CiSkips, allowed_reason
from tests.ledger import EXPECTED, FAIL, NEUTRAL, PASS, Ledger, Scenario, read_parts, write_part

CONFTEST = """
import pytest
from tests.ci_allowed_skips import CiSkips
from tests.ledger import LedgerPlugin, Scenario, install

EXPECTED = {{
    "Passes": Scenario(),
    "Deliberately broken": Scenario(),
    "Breaks in setup": Scenario(),
    "Silent": Scenario(),
    "Skipped": Scenario(),
    "Removed": Scenario(),
    "Full only": Scenario(full_only=True),
    "Whole run": Scenario(whole_run_only=True),
}}


def finish(book, used):
    book.record("Whole run", "the whole run", 1, "counted", "all counted", ok=True)


def pytest_configure(config):
    config.addinivalue_line("markers", "reliability(scenario): a scenario of the ledger")
    install(config, LedgerPlugin(EXPECTED, {profile!r}, finish=finish))
    if {ci!r}:
        config.pluginmanager.register(CiSkips({{"*::test_allowed_skip": "nothing to hide"}}), "raykube-ci-skips")


@pytest.fixture
def sandbox():
    raise RuntimeError("the sandbox did not start")
"""

SUITE = """
import pytest


@pytest.mark.reliability("Passes")
def test_passes(ledger):
    ledger.record("Passes", "did it", 3, "it held", "held 3 times")


@pytest.mark.reliability("Deliberately broken")
def test_broken(ledger):
    ledger.record("Deliberately broken", "did it", 1, "it held", "looked fine")
    assert 1 + 1 == 3, "the deliberate break"


@pytest.mark.reliability("Breaks in setup")
def test_setup_breaks(sandbox, ledger):
    ledger.record("Breaks in setup", "never", 1, "-", "never")


@pytest.mark.reliability("Silent")
def test_silent(ledger):
    pass


@pytest.mark.reliability("Skipped")
def test_skipped(ledger):
    pytest.skip("this machine cannot run process nodes")


@pytest.mark.reliability("Full only")
def test_full_only(ledger):
    ledger.record("Full only", "the long one", 1, "it held", "held")
"""

GREEN = """
import pytest


@pytest.mark.reliability("Passes")
def test_passes(ledger):
    ledger.record("Passes", "did it", 3, "it held", "held 3 times")
"""


def run(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    suite: str,
    *args: str,
    profile: str = "short",
    ci: bool = False,
) -> tuple[pytest.RunResult, str]:
    """Run ``suite`` with the ledger plugin; the result and the reliability report's Markdown."""
    report = pytester.path / "reports" / "reliability.md"
    monkeypatch.setenv("RAYKUBE_RELIABILITY_REPORT", str(report))
    pytester.makeconftest(CONFTEST.format(profile=profile, ci=ci))
    pytester.makepyfile(test_suite=suite)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:asyncio", *args)
    return result, report.read_text() if report.exists() else ""


def row(markdown: str, scenario: str) -> str:
    rows = [line for line in markdown.splitlines() if line.startswith(f"| {scenario} |")]
    assert len(rows) == 1, f"{scenario}: {rows}"
    return rows[0]


def outcome(markdown: str, scenario: str) -> str:
    return row(markdown, scenario).rstrip(" |").rsplit(" | ", 1)[1]


def test_a_broken_scenario_and_a_removed_one_show_red(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, markdown = run(pytester, monkeypatch, SUITE)
    result.assert_outcomes(passed=2, failed=1, errors=1, skipped=1, deselected=1)
    assert outcome(markdown, "Passes") == f"{PASS} held 3 times"
    assert row(markdown, "Passes") == "| Passes | did it | 3 | it held | ✅ held 3 times |"
    assert outcome(markdown, "Deliberately broken").startswith(f"{FAIL} failed: AssertionError: the deliberate break")
    assert "(it had recorded: looked fine)" in outcome(markdown, "Deliberately broken")
    assert outcome(markdown, "Breaks in setup") == f"{FAIL} error in setup: RuntimeError: the sandbox did not start"
    assert outcome(markdown, "Silent") == f"{FAIL} passed without recording its row (ledger.record)"
    assert outcome(markdown, "Skipped") == f"{FAIL} skipped: this machine cannot run process nodes"
    assert outcome(markdown, "Removed") == f"{FAIL} missing: its test did not run"
    assert outcome(markdown, "Full only") == f"{NEUTRAL} not in the short profile (make reliability runs it)"
    assert outcome(markdown, "Whole run") == f"{PASS} all counted"
    summary = markdown.splitlines()[2]
    assert summary == (
        f"**{FAIL} 5 of 8 scenarios did not pass:** Deliberately broken; Breaks in setup; Silent; Skipped; Removed."
    )
    result.stdout.fnmatch_lines(["*reliability ledger*", "*5 reliability scenario(s) did not pass*"])


def test_a_missing_scenario_fails_a_whole_run_that_passed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, markdown = run(pytester, monkeypatch, GREEN)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for scenario in ("Deliberately broken", "Breaks in setup", "Silent", "Skipped", "Removed"):
        assert outcome(markdown, scenario) == f"{FAIL} missing: its test did not run"
    assert markdown.splitlines()[2].startswith(f"**{FAIL} 5 of 8 scenarios did not pass:**")


def test_a_skipped_scenario_is_red_but_fails_the_run_only_under_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    passing = ("Passes", "Deliberately broken", "Breaks in setup", "Silent", "Removed")
    test = '\n\n@pytest.mark.reliability("{0}")\ndef test_{1}(ledger):\n    ledger.record("{0}", "d", 1, "c", "o")\n'
    suite = "import pytest\n" + "".join(test.format(name, i) for i, name in enumerate(passing))
    suite += '\n\n@pytest.mark.reliability("Skipped")\ndef test_skipped():\n    pytest.skip("no root")\n'
    result, markdown = run(pytester, monkeypatch, suite)
    result.assert_outcomes(passed=5, skipped=1)
    assert result.ret == pytest.ExitCode.OK  # pytest shows the skip; the row says what it means
    assert outcome(markdown, "Skipped") == f"{FAIL} skipped: no root"
    assert markdown.splitlines()[2] == f"**{FAIL} 1 of 8 scenarios did not pass:** Skipped."
    result, markdown = run(pytester, monkeypatch, suite, ci=True)
    result.assert_outcomes(passed=5, failed=1)
    assert outcome(markdown, "Skipped") == f"{FAIL} failed: CI=true and this test skipped: no root"


def test_a_partial_run_shows_the_scenarios_it_did_not_select_as_such(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, markdown = run(pytester, monkeypatch, SUITE, "-k", "passes")
    result.assert_outcomes(passed=1, deselected=5)
    assert result.ret == pytest.ExitCode.OK
    assert outcome(markdown, "Removed") == f"{NEUTRAL} not selected in this run"
    assert outcome(markdown, "Whole run") == f"{NEUTRAL} not selected in this run"  # the RBAC row: whole runs only
    assert markdown.splitlines()[2] == f"**{PASS} 1 of 8 scenarios passed** (7 not run here: see the rows marked —)."


def test_the_full_profile_runs_the_full_only_scenarios(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, markdown = run(pytester, monkeypatch, SUITE, profile="full")
    result.assert_outcomes(passed=3, failed=1, errors=1, skipped=1)
    assert outcome(markdown, "Full only") == f"{PASS} held"
    result, markdown = run(pytester, monkeypatch, GREEN, profile="full")
    assert outcome(markdown, "Full only") == f"{FAIL} missing: its test did not run"


def test_a_scenario_marker_must_name_an_expected_scenario(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = GREEN + '\n\n@pytest.mark.reliability("Typo")\ndef test_typo(ledger):\n    pass\n'
    result, _ = run(pytester, monkeypatch, suite)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*test_typo: 'Typo' is not in tests/ledger.py EXPECTED*"])


def test_a_row_recorded_by_a_test_not_marked_with_its_scenario_is_not_confirmed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = GREEN + '\n\ndef test_unmarked(ledger):\n    ledger.record("Removed", "x", 1, "y", "z")\n'
    result, markdown = run(pytester, monkeypatch, suite)
    result.assert_outcomes(passed=2)
    assert outcome(markdown, "Removed").startswith(f"{FAIL} not confirmed: recorded by `test_suite.py::test_unmarked`")


def test_with_ci_true_a_skip_fails_unless_it_is_allowed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = SUITE + textwrap.dedent("""

        def test_allowed_skip():
            pytest.skip("a reason to skip")


        @pytest.mark.skipif(True, reason="no Go")
        def test_skipif():
            pass
        """)
    result, markdown = run(pytester, monkeypatch, suite, "-rA", ci=True)
    result.assert_outcomes(passed=2, failed=2, errors=2, skipped=1, deselected=1)
    assert f"a reason to skip {TAG}nothing to hide]" in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*CI=true and this test skipped: this machine cannot run process nodes",
            "*CI=true and this test skipped: no Go",
        ]
    )
    assert (
        outcome(markdown, "Skipped")
        == f"{FAIL} failed: CI=true and this test skipped: this machine cannot run process nodes"
    )


def test_ci_is_on_when_the_environment_says_so() -> None:
    assert CiSkips.wanted({"CI": "true"}) and CiSkips.wanted({"CI": "1"})
    assert not CiSkips.wanted({}) and not CiSkips.wanted({"CI": "false"}) and not CiSkips.wanted({"CI": ""})
    assert allowed_reason("tests/x.py::test_a[1]", {"tests/x.py::test_a*": "why"}) == "why"
    assert allowed_reason("tests/x.py::test_b", {"tests/x.py::test_a*": "why"}) is None


def test_a_row_takes_its_verdict_from_the_test_not_from_the_caller() -> None:
    book = Ledger()
    scenario = next(iter(EXPECTED))
    with pytest.raises(ValueError, match="leave ok out"):  # outside a test a row needs its verdict
        book.record(scenario, "d", 1, "c", "o")
    book.running = "tests/x.py::test_x"
    with pytest.raises(ValueError, match="leave ok out"):  # inside a test the outcome is the verdict
        book.record(scenario, "d", 1, "c", "o", ok=True)
    with pytest.raises(ValueError, match="not an expected scenario"):
        book.record("Not a scenario", "d", 1, "c", "o")
    book.record(scenario, "d", 1, "c", "o")
    assert book.rows[0].ok is None


def test_rows_travel_from_workers_through_part_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYKUBE_RELIABILITY_REPORT", str(tmp_path / "reliability.md"))
    expected = {"A": Scenario(), "B": Scenario(), "C": Scenario()}
    one, two = Ledger(expected=expected), Ledger(expected=expected)
    one.running = two.running = "t::test"
    one.record("A", "d", 2, "c", "fine", details=[("case", "what")])
    one.passed("t::test", "A")
    two.failed("t::other", "B", "failed: boom")
    write_part("gw0", one, {"get||pods": 2})
    write_part("gw1", two, {"get||pods": 1})
    rows, used = read_parts()
    assert used == {"get||pods": 3}
    book = Ledger(expected=expected, whole=True)
    book.add_json(rows)
    marks = {row.scenario: mark for row, mark in book.table()}
    assert marks == {"A": PASS, "B": FAIL, "C": FAIL}
    assert book.rows[0].details == [("case", "what")] and book.rows[1].repetitions is None
    assert book.failing() == ["B", "C"]

"""The reliability ledger: what each fault or bad-input scenario did, how often, what it checked, and how it ended.

Every scenario is declared once, in :data:`EXPECTED`, and its test carries ``@pytest.mark.reliability("<scenario>")``.
The test records its row with the session's ``ledger`` fixture (``ledger.record(...)``, no verdict): the row is
provisional until :class:`LedgerPlugin` sees the test's outcome. A pass confirms it (✅); a failure or error in setup,
call or teardown, or a skip, turns the scenario's row ❌ with the one-line reason, whether or not the test got as far
as recording; a test that passes without recording its row is ❌ too. At the end of the session the rows are written
as a Markdown table to ``$RAYKUBE_RELIABILITY_REPORT`` (``make reliability`` points it at ``docs/reliability.md``;
``make test`` at ``.reports/reliability.md``), one row at least per expected scenario: after a whole run
(:func:`whole_run`) a scenario no test recorded is ❌ "missing", and the session fails. The table is generated from
the run, never typed.

``$RAYKUBE_RELIABILITY_PROFILE`` picks the size: ``short`` (the default, what ``make test`` runs in its budget) or
``full`` (``make reliability``). A scenario declared ``full_only`` is deselected (not skipped) in the short profile and
shows as "— not in the short profile".

With pytest-xdist each worker leaves its rows in a part file (:func:`write_part`); the controller reads them
(:func:`read_parts`) and writes the one report.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Generator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

PROFILE = os.environ.get("RAYKUBE_RELIABILITY_PROFILE", "short")
FULL = PROFILE == "full"


@dataclass(frozen=True)
class Scenario:
    full_only: bool = False  # its test runs only in the full profile (make reliability); make test deselects it
    whole_run_only: bool = False  # recorded at the end of a whole run, by no single test (the RBAC row)


RBAC_SCENARIO = "Each RBAC permission the operator is granted is used"

# Every scenario of docs/reliability.md, in its order. A scenario stays here when its test is deleted or renamed:
# then the table shows it ❌ "missing" until the test is back or the scenario is removed from this list on purpose.
EXPECTED: Mapping[str, Scenario] = {
    "A slow, throttling, failing or refusing API server": Scenario(),
    "kube-apiserver restart and etcd compaction mid-burst": Scenario(),
    "Bad input: malformed and hostile RayClusters": Scenario(),
    "The operator's Pod is restricted": Scenario(),
    "Leader handover and failover under load (two replicas)": Scenario(),
    "Operator SIGKILL, again and again, while clusters scale": Scenario(),
    "Process nodes: the head's raylet hangs (SIGSTOP)": Scenario(full_only=True),
    "Process nodes: the head's raylet is killed (SIGKILL)": Scenario(),
    "Process nodes: a worker Pod, then the head Pod, deleted": Scenario(full_only=True),
    "Watch stall": Scenario(),
    "Secrets never leak": Scenario(),
    RBAC_SCENARIO: Scenario(whole_run_only=True),
}

PASS, FAIL, NEUTRAL = "✅", "❌", "—"


@dataclass
class Row:
    scenario: str
    done: str  # what was done
    repetitions: int | None  # None: nothing was repeated (a row saying why the scenario did not pass or run)
    checks: str
    outcome: str
    ok: bool | None  # None: provisional, until the outcome of the test that recorded it (``test``) confirms it
    details: list[tuple[str, str]] = field(default_factory=list)  # (case, what happened), listed under the table
    test: str = ""  # node id of the test that recorded the row ("" for a row of the whole run)
    reported: bool = False  # ❌ because its test failed, erred or skipped: pytest reports that outcome itself


@dataclass
class Ledger:
    rows: list[Row] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    expected: Mapping[str, Scenario] = field(default_factory=lambda: EXPECTED)
    profile: str = PROFILE
    whole: bool = False  # the run took every test (set at the end): an expected scenario without a row is ❌
    running: str = ""  # node id of the test running now (set by LedgerPlugin); rows recorded now belong to it

    def record(
        self,
        scenario: str,
        done: str,
        repetitions: int,
        checks: str,
        outcome: str,
        *,
        details: list[tuple[str, str]] | None = None,
        ok: bool | None = None,
    ) -> None:
        """Record a row of ``scenario`` (one of :attr:`expected`). From a test, leave ``ok`` out: the test's outcome
        decides. ``ok`` is for a row no test owns, computed at the end of the run (the RBAC row)."""
        if scenario not in self.expected:
            raise ValueError(f"{scenario!r} is not an expected scenario (tests/ledger.py EXPECTED)")
        if (ok is None) != bool(self.running):
            raise ValueError(
                f"a row of {scenario!r}: from a test, the test's outcome is the verdict (leave ok out); "
                "outside a test, give it (ok=)"
            )
        self.rows.append(Row(scenario, done, repetitions, checks, outcome, ok, list(details or []), self.running))

    # ------------------------------------------------------------------ verdicts (LedgerPlugin, from test outcomes)
    def passed(self, test: str, scenario: str | None) -> None:
        """``test`` passed: its provisional rows stand; a scenario test that recorded nothing is ❌."""
        mine = [row for row in self.rows if row.test == test]
        for row in mine:
            if row.ok is None and row.scenario == scenario:
                row.ok = True
        if scenario is not None and not any(row.scenario == scenario for row in mine):
            self._failure_row(test, scenario, "passed without recording its row (ledger.record)")

    def failed(self, test: str, scenario: str | None, reason: str) -> None:
        """``test`` failed, errored or skipped (``reason`` says which and why): its scenario's rows are ❌."""
        mine = [row for row in self.rows if row.test == test]
        for row in mine:
            row.ok, row.reported = False, True
            row.outcome = f"{reason} (it had recorded: {row.outcome})"
        if scenario is not None and not any(row.scenario == scenario for row in mine):
            self._failure_row(test, scenario, reason, reported=True)

    def _failure_row(self, test: str, scenario: str, reason: str, *, reported: bool = False) -> None:
        self.rows.append(Row(scenario, f"`{test}`", None, "—", reason, False, [], test, reported))

    # ------------------------------------------------------------------ the table
    def table(self) -> list[tuple[Row, str]]:
        """Each row with its mark, expected scenarios first (in order, a placeholder row for one without rows)."""
        shown: list[tuple[Row, str]] = []
        for name, scenario in self.expected.items():
            rows = [row for row in self.rows if row.scenario == name]
            if rows:
                shown += [(row, _mark(row)) for row in rows]
                continue
            if not self.whole:
                why, mark = "not selected in this run", NEUTRAL
            elif scenario.full_only and self.profile != "full":
                why, mark = "not in the short profile (make reliability runs it)", NEUTRAL
            else:
                why, mark = "missing: its test did not run", FAIL
            shown.append((Row(name, "—", None, "—", why, mark == NEUTRAL), mark))
        shown += [(row, FAIL) for row in self.rows if row.scenario not in self.expected]
        return shown

    def failing(self, *, unreported: bool = False) -> list[str]:
        """The scenarios with a ❌ row, each once, in table order; with ``unreported``, only those whose ❌ no test
        outcome shows (missing, not confirmed, passed without its row)."""
        rows = [row for row, mark in self.table() if mark == FAIL and not (unreported and row.reported)]
        return list(dict.fromkeys(row.scenario for row in rows))

    def summary(self) -> str:
        failing = self.failing()
        total = len(self.expected)
        if failing:
            return f"**{FAIL} {len(failing)} of {total} scenarios did not pass:** " + "; ".join(failing) + "."
        shown = {row.scenario for row, mark in self.table() if mark == PASS}
        rest = total - len(shown)
        return f"**{PASS} {len(shown)} of {total} scenarios passed**" + (
            f" ({rest} not run here: see the rows marked {NEUTRAL})." if rest else "."
        )

    def markdown(self) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started))
        lines = [
            "# Reliability",
            "",
            self.summary(),
            "",
            f"Generated by the run of {stamp} (profile `{self.profile}`, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}) from the tests that record into the ledger (`tests/ledger.py`). "
            "`make reliability` runs the whole suite with the full profile and rewrites this file;",
            "`make test` runs the short profile and writes `.reports/reliability.md`. Every scenario declared in "
            "`tests/ledger.py` has a row: ❌ when its test failed, erred, was skipped or did not run.",
            "",
            "| Scenario | What was done | Repetitions | Checks | Outcome |",
            "|---|---|---|---|---|",
        ]
        for row, mark in self.table():
            reps = "—" if row.repetitions is None else str(row.repetitions)
            outcome = row.outcome
            if row.ok is None:
                outcome = (
                    f"not confirmed: recorded by `{row.test}`, whose outcome did not confirm it (not marked with this "
                    f"scenario, or it did not finish): {outcome}"
                )
            cells = (row.scenario, row.done, reps, row.checks, f"{mark} {outcome}")
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        for row, _ in self.table():
            if row.details:
                lines += ["", f"## {row.scenario}: each case", "", "| Case | What happened |", "|---|---|"]
                lines += [f"| {_cell(case)} | {_cell(what)} |" for case, what in row.details]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ parts and the report
    def to_json(self) -> list[dict[str, object]]:
        return [asdict(row) for row in self.rows]

    def add_json(self, rows: list[dict[str, Any]]) -> None:
        for data in rows:
            row = dict(data)
            details = [(str(case), str(what)) for case, what in row.pop("details", []) or []]
            self.rows.append(Row(**row, details=details))

    def write(self) -> Path | None:
        target = os.environ.get("RAYKUBE_RELIABILITY_REPORT")
        if not target or not (self.rows or self.whole):
            return None
        path = Path(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.markdown())
        return path


def _mark(row: Row) -> str:
    return PASS if row.ok else FAIL


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# The -m expressions of a whole run: the long tests are make conformance's, the browser ones make browser's.
WHOLE_RUN_MARKERS = ("", "not long", "not long and not browser")


def whole_run(config: pytest.Config) -> bool:
    """The run took every test but the long and the browser ones: no paths, no -k, at most ``-m 'not long and not
    browser'`` (``make test``, ``make reliability``)."""
    given = config.args_source == pytest.Config.ArgsSource.ARGS  # else pytest filled in testpaths or the current dir
    paths = [a for a in config.args if not a.startswith("-")] if given else []
    default = [str(p) for p in config.getini("testpaths")]
    markers = (config.getoption("markexpr") or "").strip()
    return paths in ([], default) and not config.getoption("keyword") and markers in WHOLE_RUN_MARKERS


# --------------------------------------------------------------------------------------------------- parts
def parts_dir() -> Path | None:
    """Where the workers of a parallel run (pytest-xdist) leave their rows and RBAC counts for the controller."""
    target = os.environ.get("RAYKUBE_RELIABILITY_REPORT")
    return Path(target).parent / ".ledger-parts" if target else None


def write_part(name: str, ledger: Ledger | None, used: dict[str, int]) -> None:
    where = parts_dir()
    if where is None:
        return
    where.mkdir(parents=True, exist_ok=True)
    rows = ledger.to_json() if ledger is not None else []
    (where / f"{name}.json").write_text(json.dumps({"rows": rows, "used": used}))


def read_parts() -> tuple[list[dict[str, object]], dict[str, int]]:
    """Every worker's rows and RBAC counts (the part files are removed once read)."""
    where = parts_dir()
    rows: list[dict[str, object]] = []
    used: dict[str, int] = {}
    if where is None or not where.is_dir():
        return rows, used
    for part in sorted(where.glob("*.json")):
        data = json.loads(part.read_text())
        rows += data["rows"]
        for key, count in data["used"].items():
            used[key] = used.get(key, 0) + count
        part.unlink()
    where.rmdir()
    return rows, used


# --------------------------------------------------------------------------------------------------- the plugin
def scenario_of(item: pytest.Item) -> str | None:
    """The scenario a test is marked with (``@pytest.mark.reliability("<scenario>")``), or None."""
    marker = item.get_closest_marker("reliability")
    if marker is None:
        return None
    if len(marker.args) != 1 or not isinstance(marker.args[0], str) or marker.kwargs:
        raise pytest.UsageError(f"{item.nodeid}: write @pytest.mark.reliability(<a scenario of tests/ledger.py>)")
    return marker.args[0]


def one_line(report: pytest.TestReport) -> str:
    """The one-line reason of a failed or skipped report."""
    longrepr: Any = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, "Skipped: reason")
        text = str(longrepr[2]).removeprefix("Skipped: ")
    else:
        crash = getattr(longrepr, "reprcrash", None)
        text = str(crash.message) if crash is not None else str(longrepr or "")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "no message")
    return first if len(first) <= 300 else first[:299] + "…"


PLUGIN = "raykube-ledger"


@pytest.fixture(scope="session")
def ledger(request: pytest.FixtureRequest) -> Ledger:
    """The reliability ledger of this run (:class:`LedgerPlugin`); the report is written when the session ends."""
    plugin = request.config.pluginmanager.get_plugin(PLUGIN)
    assert isinstance(plugin, LedgerPlugin), "no LedgerPlugin: register one with tests.ledger.install"
    return plugin.book


def install(config: pytest.Config, plugin: LedgerPlugin) -> None:
    """Register ``plugin`` and the ``ledger`` fixture (this module)."""
    config.pluginmanager.register(plugin, PLUGIN)
    config.pluginmanager.register(sys.modules[__name__], f"{PLUGIN}-fixture")


class LedgerPlugin:
    """Turns test outcomes into ledger verdicts and writes the report; registered by ``tests/conftest.py``.

    ``used`` gives this process's RBAC counts for the part file; ``finish`` adds the rows of a whole run (the RBAC
    row) from the counts of every worker."""

    def __init__(
        self,
        expected: Mapping[str, Scenario] = EXPECTED,
        profile: str = PROFILE,
        *,
        used: Callable[[], dict[str, int]] = dict,
        finish: Callable[[Ledger, dict[str, int]], None] | None = None,
    ) -> None:
        self.book = Ledger(expected=expected, profile=profile)
        self.used = used
        self.finish = finish
        self.problem: str | None = None

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """Check every scenario marker names an expected scenario; deselect full-only ones in the short profile."""
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            scenario = scenario_of(item)
            if scenario is not None and scenario not in self.book.expected:
                raise pytest.UsageError(f"{item.nodeid}: {scenario!r} is not in tests/ledger.py EXPECTED")
            full_only = scenario is not None and self.book.expected[scenario].full_only
            (dropped if full_only and self.book.profile != "full" else kept).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.book.running = item.nodeid
        try:
            return (yield)
        finally:
            self.book.running = ""

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # the outermost: it sees the report as the other hooks leave it
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        scenario = scenario_of(item)
        if report.failed:
            what = {"setup": "error in setup", "teardown": "error in teardown"}.get(report.when, "failed")
            self.book.failed(item.nodeid, scenario, f"{what}: {one_line(report)}")
        elif report.skipped:
            self.book.failed(item.nodeid, scenario, f"skipped: {one_line(report)}")
        elif report.when == "call":
            self.book.passed(item.nodeid, scenario)
        return report

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The controller (or the one process) drops part files an interrupted run left, before workers write."""
        where = parts_dir()
        if getattr(session.config, "workerinput", None) is None and where is not None and where.is_dir():
            for part in where.glob("*.json"):
                part.unlink()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None:  # a pytest-xdist worker: the controller writes the report
            write_part(str(workerinput["workerid"]), self.book, self.used())
            return
        used: dict[str, int] = {}
        if getattr(config.option, "numprocesses", None):  # the controller: every worker's rows
            rows, used = read_parts()
            self.book.add_json(rows)
        self.book.whole = whole_run(config)
        if self.book.whole and self.finish is not None:
            self.finish(self.book, used)
        self.book.write()
        failing = self.book.failing()
        # A whole run fails when a scenario is ❌ and no test's outcome says so (a failed test fails it already; a
        # skip does under CI=true, tests/ci_allowed_skips.py).
        if self.book.whole and self.book.failing(unreported=True) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if failing:
            self.problem = f"{len(failing)} reliability scenario(s) did not pass: " + "; ".join(failing)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.problem is not None:
            terminalreporter.section("reliability ledger", red=True)
            terminalreporter.write_line(self.problem, red=True)

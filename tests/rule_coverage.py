"""Every doctor rule fired under some test's assertion: checked at the end of the run, from what the tests recorded.

The doctor tests assert rule ids through :mod:`tests.doctor_support`, which records each rule it saw among the actual
findings in ``doctor_support.FIRED``. Each pytest-xdist worker hands its set to the controller (``workeroutput``);
when the session ends, the controller (or the one process) compares the union with the catalogue and, if a rule
never fired under an assertion, fails the session (exit status 1) and names the rules in the summary.

The check runs only when the run took every test that could assert the rules:

* a whole run (``tests/rbac_usage.whole_run``: ``make test``, ``make reliability``): every rule of the catalogue;
* every unit test (``pytest -m unit``, ``make unit``, ``pytest tests/unit``; the browser ones may be left out): every
  rule but :data:`INTEGRATION_ONLY`, the rules only a test on the sandbox makes fire.

Not with ``-k``, ``--lf``, ``--deselect``, ``--sw``, ``--collect-only``, nor after a run stopped early (``-x``,
``--maxfail``).
Registered by ``pytest_plugins`` in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import pytest

from raykube.doctor.rules import CATALOGUE
from tests import doctor_support, rbac_usage

Scope = Literal["whole", "unit"] | None
WORKER_KEY = "raykube_doctor_rules_fired"

# Rules no unit test makes fire: only a test on the sandbox (tests/integration) asserts them. Empty today.
INTEGRATION_ONLY: frozenset[str] = frozenset()

_FAILURE = pytest.StashKey[str]()


def scope(config: pytest.Config) -> Scope:
    """Which rules this run must have seen firing: all (a whole run), the unit-testable ones, or none."""
    skipping = ("keyword", "lf", "deselect", "stepwise", "stepwise_skip", "collectonly", "setuponly", "setupplan")
    if any(config.getoption(name, None) for name in skipping):
        return None
    if rbac_usage.whole_run(config):
        return "whole"
    given = getattr(config, "args_source", pytest.Config.ArgsSource.ARGS) == pytest.Config.ArgsSource.ARGS
    paths = [str(Path(a)) for a in config.args if not a.startswith("-")] if given else []  # else pytest filled them
    default = [str(Path(p)) for p in config.getini("testpaths")]
    markers = (config.getoption("markexpr") or "").strip()
    if (paths in ([], default) and markers in ("unit", "unit and not browser")) or (
        paths == [str(Path("tests/unit"))] and markers in ("", "unit", "not long", "not browser")
    ):
        return "unit"
    return None


def expected(run: Scope, catalogue: Iterable[str] = CATALOGUE) -> list[str]:
    if run is None:
        return []
    return sorted(rule for rule in catalogue if run == "whole" or rule not in INTEGRATION_ONLY)


def failure(run: Scope, fired: Iterable[str], catalogue: Iterable[str] = CATALOGUE) -> str | None:
    """The message naming the rules that never fired under an assertion, or None when each did."""
    missing = doctor_support.never_fired(expected(run, catalogue), fired)
    if not missing:
        return None
    what = "the whole run" if run == "whole" else "the unit tests"
    return (
        f"doctor rule coverage: {len(missing)} rule(s) of the catalogue never fired under a test's assertion in "
        f"{what}: {', '.join(missing)}. Assert them with tests/doctor_support.py (assert_fires, one_finding, ...) "
        "on the findings the doctor returns; a rule id written in a test is not enough."
    )


def settle(session: Any, run: Scope, fired: Iterable[str], catalogue: Iterable[str] = CATALOGUE) -> str | None:
    """Fail ``session`` (exit status 1) when a rule never fired; not after a run stopped early or interrupted."""
    if run is None or session.shouldfail or session.shouldstop:
        return None
    if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return None
    message = failure(run, fired, catalogue)
    if message is not None:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return message


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A pytest-xdist worker finished: add the rules it saw firing (controller side)."""
    doctor_support.FIRED.update(getattr(node, "workeroutput", {}).get(WORKER_KEY, ()))


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller checks
        workeroutput[WORKER_KEY] = sorted(doctor_support.FIRED)
        return
    message = settle(session, scope(config), doctor_support.FIRED)
    if message is not None:
        config.stash[_FAILURE] = message


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    message = config.stash.get(_FAILURE, None)
    if message is not None:
        terminalreporter.section("doctor rule coverage", red=True)
        terminalreporter.write_line(message, red=True)

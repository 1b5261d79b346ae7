"""No silent skip in CI: with ``CI=true`` a skipped test fails, unless :data:`ALLOWED` names it with a reason.

Every skip in this suite says a prerequisite is missing — root and ``ip``/``nsenter``/``unshare`` for process nodes,
Go for KubeRay's hash function, KubeRay's samples that ``make sandbox-build`` fetches, a Python package — and CI
(``.ci/run``, which sets ``CI=true``) must not pass on a machine that lacks one: 39 process-node tests skipping would
hide that the real-Ray half of the suite never ran. So the policy covers every skip, unit tests included (their only
skips are for the KubeRay samples ``make test`` fetches first). Tests that run only in the full reliability profile
are deselected in the short one (``tests/ledger.py``), not skipped, so they need no entry.

An allowed skip stays a skip; its reason gets ``[allowed in CI: <why>]``, which ``.ci/run`` prints in its summary
(and ``.ci/run`` fails on any skip in the JUnit report without it). Registered by ``tests/conftest.py`` when
:meth:`CiSkips.wanted`.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Generator, Mapping
from typing import Any

import pytest

# Node id (an fnmatch pattern) -> why skipping it in CI hides nothing. Empty: each skip of the suite today is a
# missing prerequisite (make test's preflight demands root, ip, nsenter, unshare and Go; its sandbox-build step
# fetches KubeRay's samples).
ALLOWED: Mapping[str, str] = {}

TAG = "[allowed in CI: "


def allowed_reason(nodeid: str, allowed: Mapping[str, str] = ALLOWED) -> str | None:
    """The reason ``nodeid`` may skip (``--dist loadgroup`` reports it with its ``@<xdist group>``, dropped here)."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        nodeid = nodeid[: nodeid.rfind("@")]
    return next((why for pattern, why in allowed.items() if fnmatch.fnmatchcase(nodeid, pattern)), None)


class CiSkips:
    def __init__(self, allowed: Mapping[str, str] = ALLOWED) -> None:
        self.allowed = allowed

    @staticmethod
    def wanted(environ: Mapping[str, str] = os.environ) -> bool:
        return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")

    @pytest.hookimpl(wrapper=True, trylast=True)  # the innermost wrapper: the ledger's sees the failure it makes
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        self._judge(report)
        return report

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_make_collect_report(self) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        report = yield
        self._judge(report)  # a module skipped as a whole (pytest.skip(allow_module_level=True), importorskip)
        return report

    def _judge(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):
            return
        longrepr: Any = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            path, line, text = longrepr
        else:
            path, line, text = report.fspath, None, str(longrepr)
        reason = str(text).removeprefix("Skipped: ")
        why = allowed_reason(report.nodeid, self.allowed)
        if why is not None:
            report.longrepr = (path, line, f"Skipped: {reason} {TAG}{why}]")
            return
        report.outcome = "failed"
        report.longrepr = (
            f"CI=true and this test skipped: {reason}\n"
            "A skip in CI hides a missing prerequisite: provide it (make test's preflight names what it needs), or "
            "allow this skip in tests/ci_allowed_skips.py with the reason it hides nothing."
        )

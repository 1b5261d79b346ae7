"""make test's layout (tests/conftest.py): the kwok tests on one pytest-xdist worker and the process-node tests in
two halves on the others, each worker bringing up one sandbox. It rests on ``--dist loadgroup`` honouring the
``xdist_group`` markers the conftest adds, which two things broke without a sound: pytest 9.2 (pytest-xdist 3.8 still
renames the nodeids the old way, pytest-dev/pytest-xdist#1386) and a collection hook that ran after xdist's. Every
worker then ran both kinds of tests and brought up both sandboxes. This checks the mechanism end to end."""

from __future__ import annotations

import re

import pytest

CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)  # as tests/conftest.py's
def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(item.name.split("_")[1]))
"""


def test_loadgroup_runs_each_group_on_one_worker(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        "import pytest\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_a_x(i): pass\n"
        "@pytest.mark.parametrize('i', range(4))\n"
        "def test_b_x(i): pass\n"
    )
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=8)
    workers: dict[str, set[str]] = {}
    for worker, group in re.findall(r"\[(gw\d)\] .*PASSED .*::test_\w+\[\d\]@(\w+)", result.stdout.str()):
        workers.setdefault(group, set()).add(worker)
    assert sorted(workers) == ["a", "b"], result.stdout.str()
    assert all(len(ran_on) == 1 for ran_on in workers.values()), workers

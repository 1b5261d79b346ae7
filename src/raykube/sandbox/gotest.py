"""Read the output of a Go test binary run with ``-test.v``: which tests and subtests ran, their result and time, and
for a failure the first line that says why.

The format (``go help testflag``, and the ``testing`` package's "chatty" printer since Go 1.20)::

    === RUN   TestA                      a test (or subtest, ``TestA/sub_name``) starts
    === PAUSE TestA/sub                  a parallel subtest waits for its parent to return
    === CONT  TestA/sub                  ... and resumes
    === NAME  TestA                      the lines that follow are this test's output again
        file_test.go:42: message         t.Log/t.Error output, continuation lines indented further
    --- FAIL: TestA/sub (1.23s)          its result (indented four spaces per level for subtests)
    panic: test timed out after 30m0s    the binary ended early: tests still running have no result

Output lines belong to the test named by the last ``===`` header. Subtest names have spaces replaced by ``_``.
:class:`GoTestOutput` is fed line by line (so a runner can report results as they come) and is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
NO_RESULT = "NO RESULT"  # the binary ended (panic, timeout, signal) while the test ran

_HEADER = re.compile(r"^=== (?P<what>RUN|PAUSE|CONT|NAME)\s+(?P<name>\S+)\s*$")
_RESULT = re.compile(r"^\s*--- (?P<result>PASS|FAIL|SKIP): (?P<name>\S+) \((?P<seconds>\d+(?:\.\d+)?)s\)\s*$")
_LOG = re.compile(r"^\s+(?P<where>[\w.\-]+\.go:\d+): ?(?P<message>.*)$")
# support.LogWithTimestamp: t.Logf("[%s] %s", time.Now().Format(time.RFC3339), ...): progress, not a failure.
_PROGRESS = re.compile(r"^\[\d{4}-\d\d-\d\dT[\d:]+(?:Z|[+-]\d\d:\d\d)\] ")
_PANIC = re.compile(r"^panic: ")
_MAX_REASON = 240


@dataclass
class GoTest:
    """One test or subtest of one package."""

    package: str
    name: str  # ``TestA`` or ``TestA/sub_name`` (Go's own spelling)
    result: str = NO_RESULT
    seconds: float | None = None
    output: list[str] = field(default_factory=list)
    # Set by GoTestOutput.finish when the test's own output says nothing: what ended the binary (NO_RESULT), or which
    # subtest failed (a FAIL that only propagates a subtest's).
    note: str = ""

    @property
    def test(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def subtest(self) -> str:
        return self.name.split("/", 1)[1] if "/" in self.name else ""

    @property
    def reason(self) -> str:
        """For a failure its first error line (for a skip, the skip message); empty otherwise."""
        if self.result == PASS:
            return ""
        return first_error(self.output) or self.note


def first_error(lines: Iterable[str]) -> str:
    """The first log entry that is not ``LogWithTimestamp`` progress, as one short line.

    Gomega and testify put their message on the lines after ``file.go:NN:``: for testify the ``Error:`` line is
    taken (not its ``Error Trace:``), for Gomega the first few lines (``Timed out after 120s. Expected ...``)."""
    entries: list[list[str]] = []
    for line in lines:
        log = _LOG.match(line)
        if log:
            entries.append([log["message"].strip()])
        elif entries and line.strip():
            entries[-1].append(line.strip())
        elif _PANIC.match(line):
            entries.append([line.strip()])
    for entry in entries:
        if _PROGRESS.match(entry[0]):
            continue
        body = [part for part in entry if part]
        testify = [part for part in body if part.startswith("Error:")]
        if testify:
            index = body.index(testify[0])
            words = [testify[0].removeprefix("Error:").strip(), *body[index + 1 : index + 3]]
            words = [w for w in words if not w.startswith(("Test:", "Messages:", "Error Trace:"))]
            return _short(" ".join(words))
        return _short(" ".join(_until_dump(body[:6])))
    return ""


def _until_dump(parts: list[str]) -> list[str]:
    """Gomega prints whole objects (``<[]v1.Pod | len:4, cap:4>: [`` then hundreds of lines): keep what precedes."""
    kept = []
    for part in parts:
        if part.endswith(("[", "{")):
            kept.append(part[:-1].rstrip() + " …")
            break
        kept.append(part)
    return kept


def _short(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"


class GoTestOutput:
    """The tests of one package's ``-test.v`` output, in the order they started."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.tests: dict[str, GoTest] = {}
        self._current: GoTest | None = None
        self.ended_by = ""

    def _test(self, name: str) -> GoTest:
        if name not in self.tests:
            self.tests[name] = GoTest(self.package, name)
        return self.tests[name]

    def feed(self, line: str) -> GoTest | None:
        """Take one line (without its newline); return the test whose result it gave, if it gave one."""
        line = line.rstrip("\n")
        if header := _HEADER.match(line):
            self._current = self._test(header["name"])
            return None
        if result := _RESULT.match(line):
            test = self._test(result["name"])
            test.result = result["result"]
            test.seconds = float(result["seconds"])
            return test
        if _PANIC.match(line) and not self.ended_by:
            self.ended_by = line.strip()
        if self._current is not None:
            self._current.output.append(line)
        return None

    def finish(self) -> list[GoTest]:
        """Every test seen. One without a result is NO_RESULT, noted with what ended the binary; a FAIL whose own
        output has no error is noted with the subtests that failed."""
        for test in self.tests.values():
            if test.result == NO_RESULT:
                test.note = self.ended_by or "the test binary ended before this test did"
            elif test.result == FAIL:
                failed = [
                    t.name.removeprefix(test.name + "/")
                    for t in self.tests.values()
                    if t.name.startswith(test.name + "/")
                    and t.result in (FAIL, NO_RESULT)
                    and "/" not in t.name.removeprefix(test.name + "/")
                ]
                if failed:
                    test.note = "failed subtest(s): " + ", ".join(failed)
        return list(self.tests.values())


def parse(package: str, text: str) -> list[GoTest]:
    output = GoTestOutput(package)
    for line in text.splitlines():
        output.feed(line)
    return output.finish()

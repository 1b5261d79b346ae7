"""What the Serve client of ``examples/serve/client.yaml`` logged: one line per request,
``<unix time sent> <seconds to answer> <HTTP code, 0 when none came> <first word of the answer>``.

Read by ``raykube demo`` (its RayService act) and ``benchmarks/rayservice.py`` to count what a user calling the serve
Service saw while a RayService changed: requests sent, failed, and the longest time without an answer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

CLIENT_POD = "serve-client"  # examples/serve/client.yaml's Pod


@dataclass(frozen=True)
class Answer:
    sent: float
    seconds: float
    code: int
    word: str

    @property
    def ok(self) -> bool:
        return self.code == 200

    @property
    def done(self) -> float:
        return self.sent + self.seconds


def parse_log(text: str) -> list[Answer]:
    """The client's lines (others, such as a traceback, are skipped)."""
    answers = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            try:
                answers.append(Answer(float(parts[0]), float(parts[1]), int(parts[2]), parts[3]))
            except ValueError:
                continue
    return answers


def window(answers: list[Answer], start: float, end: float) -> dict[str, Any]:
    """What the client saw of requests sent in [start, end): counts, and the longest time without an answer (from
    the last successful answer before ``start``, so an outage that begins at once is counted whole)."""
    inside = [a for a in answers if start <= a.sent < end]
    failed = [a for a in inside if not a.ok]
    before = [a.done for a in answers if a.ok and a.done < start]
    done = sorted([*before[-1:], *(a.done for a in inside if a.ok)])
    gaps = [b - a for a, b in itertools.pairwise(done)]
    return {
        "requests": len(inside),
        "failed": len(failed),
        "failures": sorted({f"{a.code} {a.word}" for a in failed}),
        "longest_gap_seconds": round(max(gaps, default=0.0), 2),
        "slowest_answer_seconds": round(max((a.seconds for a in inside if a.ok), default=0.0), 2),
        "window_seconds": round(end - start, 1),
    }

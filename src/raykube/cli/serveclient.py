"""What the Serve client of ``examples/serve/client.yaml`` logged: one line per request,
``<unix time sent> <seconds to answer> <HTTP code, 0 when none came> <first word of the answer>``.

Read by ``raykube demo`` (its RayService acts), ``benchmarks/rayservice.py`` and ``benchmarks/incremental.py`` to count
what a user calling the serve Service (or the Gateway) saw while a RayService changed: requests sent, failed, the
longest time without an answer, and during an incremental upgrade the share answered by the new cluster over time
beside the HTTPRoute's weight for it (:func:`curve`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
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


def backend_weights(route: Mapping[str, Any] | None) -> dict[str, int]:
    """An HTTPRoute's first rule: each backend Service's name and weight (what the client's traffic follows)."""
    refs = (((route or {}).get("spec") or {}).get("rules") or [{}])[0].get("backendRefs") or []
    return {str(r.get("name")): int(r.get("weight") or 0) for r in refs}


def curve(
    answers: Sequence[Answer],
    start: float,
    end: float,
    new_word: str,
    weights: Sequence[tuple[float, int]],
    bucket: float = 5.0,
) -> list[dict[str, Any]]:
    """Per ``bucket`` seconds from ``start``: answers, failed, the share of good answers with ``new_word`` (the new
    cluster's greeting), and the HTTPRoute weight of the new cluster last seen in that bucket (``weights``: (time,
    weight), in order)."""
    rows = []
    t = start
    while t < end:
        inside = [a for a in answers if t <= a.sent < t + bucket]
        good = [a for a in inside if a.ok]
        seen = [w for at, w in weights if at < t + bucket]
        rows.append(
            {
                "t": round(t - start, 1),
                "requests": len(inside),
                "failed": len(inside) - len(good),
                "new_share": round(sum(a.word == new_word for a in good) / len(good), 2) if good else None,
                "new_weight": seen[-1] if seen else None,
            }
        )
        t += bucket
    return rows


def distinct(weights: Sequence[tuple[float, int]]) -> list[int]:
    """The weights in the order they were first seen, each once in a row."""
    out: list[int] = []
    for _, w in weights:
        if not out or out[-1] != w:
            out.append(w)
    return out


def curve_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """:func:`curve` as a table."""
    lines = ["    t s  requests  failed  new share  new weight"]
    for row in rows:
        share = "-" if row["new_share"] is None else f"{row['new_share']:.2f}"
        weight = "-" if row["new_weight"] is None else str(row["new_weight"])
        lines.append(f"  {row['t']:5.1f}  {row['requests']:8d}  {row['failed']:6d}  {share:>9}  {weight:>10}")
    return lines

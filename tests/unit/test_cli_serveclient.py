"""How the demo and the RayService benchmark read the Serve client's log: requests, failures, longest gap."""

from __future__ import annotations

from raykube.cli.serveclient import parse_log, window


def test_the_longest_gap_runs_from_the_last_answer_before_the_window_through_an_outage() -> None:
    log = "\n".join(
        [
            "100.0 0.01 200 Hello",  # before the window: the last good answer it counts from
            "100.1 0.01 200 Hello",
            "100.2 2.00 0 TimeoutError",  # the outage
            "102.3 0.01 0 ConnectionRefusedError",
            "102.5 0.05 200 Hi",
            "102.6 0.01 200 Hi",
            "garbage line",
            "103.0 0.01 503 -",
        ]
    )
    answers = parse_log(log)
    assert len(answers) == 7
    seen = window(answers, 100.15, 103.1)
    assert seen["requests"] == 5
    assert seen["failed"] == 3
    assert seen["failures"] == ["0 ConnectionRefusedError", "0 TimeoutError", "503 -"]
    assert seen["longest_gap_seconds"] == round(102.55 - 100.11, 2)
    assert seen["slowest_answer_seconds"] == 0.05


def test_a_window_without_trouble_has_gaps_of_the_pacing() -> None:
    answers = parse_log("\n".join(f"{10 + i * 0.1:.3f} 0.005 200 Hello" for i in range(30)))
    seen = window(answers, 10.5, 12.0)
    assert (seen["requests"], seen["failed"]) == (15, 0)
    assert seen["longest_gap_seconds"] <= 0.11

"""Every benchmark figure README.md and docs/ quote is computed from its line in benchmarks/results/
(``benchmarks/figures.py``): a figure edited by hand, a number with no line behind it, and a typed line all fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks.figures import BLOCKS, FigureError, Results, check, documents, tokens

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def test_every_quoted_figure_comes_from_its_result_line() -> None:
    problems = check(documents())
    assert not problems, "\n".join(
        [*problems, "fix the text, or the figure's source in benchmarks/figures.py; never a result line"]
    )


def test_every_block_is_quoted_and_checked() -> None:
    texts = documents()
    for name in BLOCKS:
        assert sum(f"<!-- figures: {name} -->" in t for t in texts.values()) == 1, name


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("**67.8 / 63.1 s**", "**66.8 / 63.1 s**"),  # the 1,000-cluster table
        ("raykube took 0.83x KubeRay's time", "raykube took 0.80x KubeRay's time"),  # a ratio in the prose
        ("| 519.6 s | 484.8 s |", "| 519.6 s | 480.0 s |"),  # the 10,000-cluster table
        ("longest gap 0.22 s; new answer", "longest gap 0.21 s; new answer"),  # the RayService table
        ("Ready in 18.3 s (min 18.3", "Ready in 17.3 s (min 18.3"),  # process nodes
        ("| 67.8 / 63.1 s | 81.2 / 75.6 s", "| 67.8 / 61.3 s | 81.2 / 75.6 s"),  # README's summary table
    ],
)
def test_a_figure_edited_by_hand_is_reported(before: str, after: str) -> None:
    texts = documents()
    document = holding(texts, before)
    texts[document] = texts[document].replace(before, after)
    problems = check(texts)
    assert problems
    assert any(document in p and "prints" in p for p in problems), problems


def test_a_number_added_to_a_block_is_reported() -> None:
    texts = documents()
    before = "and 1.17x / 1.09x the floor's"
    document = holding(texts, before)
    texts[document] = texts[document].replace(before, before + " (and 0.5x in a run nobody recorded)")
    assert check(texts)


def holding(texts: dict[str, str], text: str) -> str:
    """The one document that prints ``text``, once."""
    found = [name for name, body in texts.items() if text in body]
    assert len(found) == 1 and texts[found[0]].count(text) == 1, (text, found)
    return found[0]


def test_a_benchmark_figure_outside_a_block_is_reported() -> None:
    texts = documents()
    texts["README.md"] += "\nNow `make bench` says raykube took 61.0 s and 0.75x KubeRay's time.\n"
    problems = check(texts)
    assert any("outside a figures block" in p and "61.0 s" in p for p in problems), problems


def test_the_unmeasured_10000_figures_are_gone() -> None:
    texts = documents()
    for figure in ("529 of 10,000", "1,621 MB", "1,075 s", "3,341 s", "37,080"):
        assert not any(figure in t for t in texts.values()), figure


def test_a_typed_line_backs_nothing(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text(
        json.dumps({"at": "A", "typed": ["kuberay"], "kuberay": {"seconds": 1.0}})
        + "\n"
        + json.dumps({"at": "B", "seconds": 2.0})
        + "\n"
    )
    results = Results(tmp_path)
    with pytest.raises(FigureError, match="typed"):
        results.line("x.jsonl", "A")
    assert results.line("x.jsonl", "B").fig("seconds").text == "2.0"
    with pytest.raises(FigureError, match="exactly 1"):
        results.line("x.jsonl", "C")


def test_the_early_scale_lines_with_typed_kuberay_figures_are_marked() -> None:
    for line in (RESULTS / "scale.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "kuberay_reference" in record:
            assert record.get("typed") == ["kuberay_reference"], record["at"]
            with pytest.raises(FigureError, match="typed"):
                Results().line("scale.jsonl", record["at"])


def test_tokens() -> None:
    text = (
        "At 10,000 (QPS 500) on 2026-12-06 at 22:13 UTC, f676731, `--qps 5`, KubeRay v1.6.1: 0.83x, 25-30% <!-- 9 -->"
    )
    assert tokens(text) == ["10,000", "500", "2026-12-06", "22:13", "0.83", "25", "30"]

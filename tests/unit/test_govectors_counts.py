"""The counts tools/govectors/README.md quotes are what a run of the comparison gives: every family's cases, how many
agree with Go, and how many each known divergence explains. Edit the table by hand, or let the vectors change without
updating it, and this fails; `make vectors` prints the numbers to copy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.vectors import compare

README = Path(__file__).resolve().parents[2] / "tools" / "govectors" / "README.md"
_ROW = re.compile(r"^\| `(?P<family>\w+)` \|.*\| (?P<cases>[^|]+) \| (?P<agreed>[^|]+) \|$", re.MULTILINE)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def quoted(text: str) -> dict[str, tuple[int, int, int]]:
    """family -> (cases, agreed, known divergences) as the README's table prints them."""
    rows: dict[str, tuple[int, int, int]] = {}
    for row in _ROW.finditer(text):
        cases = _number(re.match(r"[\d,]+", row["cases"].strip()).group(0))  # type: ignore[union-attr]
        agreed_text = row["agreed"].strip()
        known = re.fullmatch(r"([\d,]+) \+ ([\d,]+) known", agreed_text)
        agreed, divergent = (_number(known[1]), _number(known[2])) if known else (_number(agreed_text), 0)
        rows[row["family"]] = (cases, agreed, divergent)
    return rows


def test_the_table_lists_every_family() -> None:
    assert sorted(quoted(README.read_text())) == sorted(compare.FAMILIES)


@pytest.mark.parametrize("family", compare.FAMILIES)
def test_quoted_counts_are_the_runs(family: str) -> None:
    result = compare.run(family)
    measured = (result.total, result.agreed, sum(result.diverged.values()))
    assert quoted(README.read_text())[family] == measured, (
        f"tools/govectors/README.md quotes {quoted(README.read_text())[family]} (cases, agreed, known) for {family}; "
        f"the comparison gives {measured}: copy what `make vectors` prints"
    )


def test_an_edited_count_is_caught() -> None:
    text = README.read_text().replace("| 8,025 (25 + 8,000) | 8,025 |", "| 8,025 (25 + 8,000) | 8,024 |")
    assert quoted(text)["cron"][1] == 8024 != quoted(README.read_text())["cron"][1]

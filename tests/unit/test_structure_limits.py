"""The room sizes issue 41 set, kept: README is a user's page, docs/architecture.md is about the architecture, and a
module past 800 lines says in its docstring why it is one unit (the words "one unit")."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_LINES = 300
ARCHITECTURE_LINES = 600
MODULE_LINES = 800


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_readme_and_architecture_stay_short() -> None:
    assert lines(ROOT / "README.md") < README_LINES, "README.md: move detail to docs/ (it is the users' first page)"
    assert lines(ROOT / "docs" / "architecture.md") < ARCHITECTURE_LINES, (
        "docs/architecture.md: keep it about the architecture; measurements go to docs/scale.md"
    )


def test_a_long_module_says_why_it_is_one_unit() -> None:
    long = []
    for path in sorted((ROOT / "src" / "raykube").rglob("*.py")):
        if lines(path) <= MODULE_LINES:
            continue
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        if "one unit" not in " ".join(docstring.split()).lower():
            long.append(f"{path.relative_to(ROOT)} ({lines(path)} lines)")
    assert not long, f"split these, or say in the module docstring why each is one unit: {', '.join(long)}"

"""raykube's benchmarks (``make bench``): each appends one JSON line per invocation to ``benchmarks/results/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def append_line(path: Path, record: Any) -> None:
    """``record`` as one JSON line at the end of ``path`` (created with its folder if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write(json.dumps(record) + "\n")

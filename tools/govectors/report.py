"""Print, per vector family, how many of Go's answers raykube agrees with (``make vectors`` runs it).

    uv run --no-sync python tools/govectors/report.py

Exits 1 when a case disagrees that no known divergence (tests/vectors/compare.py DIVERGENCES) explains.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.vectors import compare


def main() -> int:
    failed = False
    for name in compare.FAMILIES:
        result = compare.run(name)
        unit = "code points" if name == "golang_isprint" else "cases"
        line = f"{name:<20} {result.total:>9,} {unit}, {result.agreed:>9,} agreed"
        for reason, count in result.diverged.items():
            line += f"\n{'':<20} {count:>9,} known divergence: {reason}"
        sys.stdout.write(line + "\n")
        for mismatch in result.mismatches[:10]:
            sys.stdout.write(f"{'':<20} DISAGREES {mismatch[:300]}\n")
        stale = [reason for reason, count in result.diverged.items() if count == 0]
        failed = failed or bool(result.mismatches) or bool(stale)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: the CPU of one reconcile pass that changes nothing, per controller, in-process.

Why it exists: a RayService is reconciled every 2 s for as long as it lives (KubeRay's requeue), and so is a
RayCluster while it comes up; what one such pass costs the operator, apart from its requests, is pure Python and can be
measured without a cluster. The passes run on the reconcile table tests' in-memory API server (``FakeKube``), with the
tests' own set-ups: ``serving_world()`` (tests/unit/test_controllers_rayservice.py: one RayService whose cluster is
up, its Serve app RUNNING, Ready with 2 endpoints) and ``ready_world()`` (tests/unit/test_controllers_raycluster.py:
a RayCluster with its head and worker Pods Running and Ready, status ``ready``). After warm-up passes, ``--rounds``
rounds of ``--passes`` passes each; the figure is the fastest round's CPU (``time.process_time``) per pass, the
least disturbed by anything else on the machine. No requests: the dashboard and the Serve proxy are the tests' fakes.

``--baseline REF`` measures the same in a git worktree at ``REF`` (made in a temporary folder and removed after), with
the harness of that commit, in the same invocation, so a change's effect is measured on one machine at one time.

    uv run python -m benchmarks.passes [--passes 300] [--rounds 7] [--baseline REF]

Appends one JSON line per invocation to benchmarks/results/passes.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import append_line
from benchmarks.rayjob import git_revision, machine

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "passes.jsonl"

# Run in a child Python whose path starts with one tree's src/ and root, so each tree's own code and harness run.
MEASURE = """
import asyncio, json, sys, time
from tests.unit import test_controllers_raycluster as rc, test_controllers_rayservice as rs
passes, rounds = int(sys.argv[1]), int(sys.argv[2])

async def fastest(make):
    world = await make()
    for _ in range(50):
        await world.reconcile()
    best = None
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(passes):
            await world.reconcile()
        spent = (time.process_time() - started) / passes * 1000
        best = spent if best is None else min(best, spent)
    assert not world.fake.writes, "a steady pass wrote something"
    return round(best, 3)

async def main():
    print(json.dumps({"rayservice": await fastest(rs.serving_world), "raycluster": await fastest(rc.ready_world)}))

asyncio.run(main())
"""


def measure(tree: Path, passes: int, rounds: int) -> dict[str, float]:
    """CPU ms per steady pass of each controller, with ``tree``'s code and test harness."""
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(passes), str(rounds)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"measuring in {tree} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def at_commit(ref: str, passes: int, rounds: int) -> tuple[str, dict[str, float]]:
    """The measure in a temporary worktree at ``ref``: (its full commit, the figures)."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", ref], capture_output=True, text=True, check=True)
    full = commit.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bench-passes-") as folder:
        tree = Path(folder) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), full], check=True)
        try:
            return full, measure(tree, passes, rounds)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=300, help="passes per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds; the fastest counts")
    parser.add_argument("--baseline", metavar="REF", help="also measure this commit, in a temporary worktree")
    args = parser.parse_args(argv)
    record: dict[str, Any] = {
        "benchmark": "passes",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        "git": git_revision(),
        "settings": {"passes": args.passes, "rounds": args.rounds, "figure": "fastest round, CPU ms per pass"},
        "cpu_ms_per_pass": measure(ROOT, args.passes, args.rounds),
    }
    if args.baseline:
        commit, figures = at_commit(args.baseline, args.passes, args.rounds)
        record["baseline"] = {"ref": args.baseline, "commit": commit, "cpu_ms_per_pass": figures}
    for controller, spent in record["cpu_ms_per_pass"].items():
        before = record.get("baseline", {}).get("cpu_ms_per_pass", {}).get(controller)
        print(f"{controller:<11} {spent:.3f} ms per pass" + (f" (baseline {before:.3f})" if before else ""))  # noqa: T201 - a benchmark reports on stdout
    append_line(RESULTS, record)
    print(f"appended to {RESULTS.relative_to(ROOT)}")  # noqa: T201


if __name__ == "__main__":
    main()

"""Benchmark: the operator at rest, raykube against KubeRay, in one invocation (issue 46).

A platform team pays for an operator all day, and most of the day nothing changes. For each number of RayClusters
(``--clusters 0,100,1000``) and each contender (``raykube`` with its defaults, ``kuberay-c1``: KubeRay at its default
reconcile concurrency), on a **fresh sandbox** as ``benchmarks.scale`` makes them (kwok nodes, kube-apiserver's audit
log on, the contender as the ServiceAccount ``bench/operator``, client QPS 100 / burst 200): the contender starts,
the RayClusters (1 head + 3 workers each) are created and become ready, the machine is left to settle (at least 80%
idle over 3 s), and then the contender is **measured over a window** (``--window``, 600 s by default) in which nobody
changes anything:

* **CPU seconds** of the operator process (``utime + stime``, all threads) and of each control-plane component (what
  its watches and requests cost them);
* **wakeups**: the operator's voluntary context switches (summed over its threads in ``/proc/<pid>/task``), how often
  it blocks and is woken; involuntary ones too;
* **requests** it sent, by verb and resource, as the API server's audit log counts them (watches are streams, not
  counted; a watch that ends and is started again shows as its list or its new watch's request);
* **RSS** at the window's end, and its peak so far.

Each size's contenders run in turn, a fresh sandbox each, their order rotated from size to size; one JSON line per
invocation goes to ``benchmarks/results/rest.jsonl`` (each run also to ``rest-partial.jsonl`` as it ends). KubeRay's
operator and CRDs are the release ``--kuberay`` names (``benchmarks.scale``'s, see there).

    .tools/bin/uv run --no-sync python -m benchmarks.rest [--clusters 0,100,1000] [--window 600] [--kuberay 1.7.0]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import append_line
from benchmarks.kuberay import add_option as add_kuberay_option
from benchmarks.kuberay import kuberay as kuberay_reference
from benchmarks.scale import (
    QUIET_TIMEOUT,
    USER,
    AuditLog,
    Contender,
    CpuIdle,
    Run,
    Settings,
    a_sandbox,
    by_user,
    contender_list,
    environment,
    requests_of,
    say,
)
from raykube.waiting import WaitTimeout, wait_for

RESULTS = Path(__file__).parent / "results" / "rest.jsonl"
PARTIAL = Path(__file__).parent / "results" / "rest-partial.jsonl"
SCHEMA = 1
CONTENDERS = ("raykube", "kuberay-c1")
# Issue 46: at rest with 1,000 ready clusters, raykube's CPU seconds and RSS at most KubeRay's.
TARGETS = {"cpu_to_kuberay": 1.0, "rss_to_kuberay": 1.0}


def context_switches(pid: int) -> tuple[int, int]:
    """Voluntary and involuntary context switches of every live thread of ``pid``."""
    voluntary = involuntary = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "status").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        for line in text.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                voluntary += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                involuntary += int(line.split()[1])
    return voluntary, involuntary


def rss_mb(pid: int) -> tuple[float, float]:
    """Resident and peak resident memory of ``pid`` in MB (10^6 bytes)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(rest.split()[0]) * 1024 / 1e6
    return round(found.get("VmRSS", 0.0), 1), round(found.get("VmHWM", 0.0), 1)


class RestRun(Run):
    """A :class:`benchmarks.scale.Run` whose measurement is the window at rest after every cluster is ready."""

    window: float = 600.0

    async def measure(self) -> dict[str, Any]:
        n, proc = self.settings.clusters, self.proc
        await wait_for(self.started, 120, what=f"{self.contender.name} to start", max_interval=0.5)
        started = time.monotonic()
        if n:
            await self.create_all()
            await wait_for(self.all_ready, self.settings.timeout, what=f"{n} RayClusters ready", max_interval=1.0)
        settle = time.monotonic()
        idle = CpuIdle()
        try:
            await wait_for(idle.quiet, QUIET_TIMEOUT, what="the machine to be quiet", max_interval=1.0)
            quiet = True
        except WaitTimeout:
            quiet = False
        cpu0, switches0, components0 = proc.cpu_seconds(), context_switches(proc.pid), self.component_cpu()
        mark, begun = self.audit.mark(), time.monotonic()
        while (left := self.window - (time.monotonic() - begun)) > 0:  # the window itself is the measurement
            self.check_alive()
            await asyncio.sleep(min(left, 10.0))
        seconds = time.monotonic() - begun
        cpu, switches, components = proc.cpu_seconds() - cpu0, context_switches(proc.pid), self.component_cpu()
        rss, peak = rss_mb(proc.pid)
        events = self.audit.events(mark, self.audit.mark())
        requests = requests_of(events, USER)
        return {
            "ready_seconds": round(settle - started, 1),
            "quiet_before": quiet,
            "window_seconds": round(seconds, 1),
            "cpu_seconds": round(cpu, 2),
            "cpu_percent": round(100 * cpu / seconds, 3),
            "wakeups": {
                "voluntary": switches[0] - switches0[0],
                "involuntary": switches[1] - switches0[1],
                "voluntary_per_second": round((switches[0] - switches0[0]) / seconds, 1),
            },
            "requests": requests,
            "requests_per_minute": round(60 * sum(requests.values()) / seconds, 2),
            "requests_by_user": by_user(events),
            "rss_mb": rss,
            "peak_rss_mb": peak,
            "component_cpu_seconds": {k: round(v - components0.get(k, 0.0), 2) for k, v in components.items()},
        }


async def rest_one(contender: Contender, settings: Settings, window: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"raykube-rest-{contender.slug}-") as work:
        root = Path(work)
        async with a_sandbox(contender, settings, root) as (sandbox, kubeconfig, account):
            run = RestRun(contender, settings, kubeconfig=kubeconfig, account=account, workdir=root, sandbox=sandbox,
                          audit=AuditLog(root / "audit.log"))  # fmt: skip
            run.window = window
            return await run.run()


def compare(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """raykube against KubeRay at one size: the ratios of CPU, wakeups, requests and RSS, and the targets."""
    ours = next((r for name, r in runs.items() if name.startswith("raykube")), None)
    theirs = next((r for name, r in runs.items() if name.startswith("kuberay")), None)
    if ours is None or theirs is None:
        return {}

    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 2) if b else None

    cpu = ratio(ours["cpu_seconds"], theirs["cpu_seconds"])
    rss = ratio(ours["rss_mb"], theirs["rss_mb"])
    return {
        "cpu_to_kuberay": cpu,
        "wakeups_to_kuberay": ratio(ours["wakeups"]["voluntary"], theirs["wakeups"]["voluntary"]),
        "requests_to_kuberay": ratio(ours["requests_per_minute"], theirs["requests_per_minute"]),
        "rss_to_kuberay": rss,
        "meets_target": {
            "cpu_to_kuberay": cpu is not None and cpu <= TARGETS["cpu_to_kuberay"],
            "rss_to_kuberay": rss is not None and rss <= TARGETS["rss_to_kuberay"],
        },
    }


def table(sizes: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    head = ("clusters", "contender", "CPU s", "CPU %", "wakeups/s", "req/min", "RSS MB")
    rows = ["{:>8}  {:<12} {:>7} {:>7} {:>9} {:>8} {:>7}".format(*head)]
    for size, runs in sizes.items():
        for name, r in runs.items():
            rows.append(
                f"{size:>8}  {name:<12} {r['cpu_seconds']:>7.2f} {r['cpu_percent']:>7.3f} "
                f"{r['wakeups']['voluntary_per_second']:>9.1f} {r['requests_per_minute']:>8.2f} {r['rss_mb']:>7.1f}"
            )
    return rows


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    contenders: Sequence[Contender] = args.contenders
    kuberay = kuberay_reference(args.kuberay)
    sizes: dict[str, dict[str, dict[str, Any]]] = {}
    for index, clusters in enumerate(args.clusters):
        settings = Settings(clusters, args.qps, args.burst, args.nodes, args.timeout, None, 0, delete=False,
                            kuberay=kuberay)  # fmt: skip
        shift = index % len(contenders)
        runs: dict[str, dict[str, Any]] = {}
        for contender in [*contenders[shift:], *contenders[:shift]]:
            say(f"{clusters} clusters: {contender.name} at rest for {args.window:.0f} s ...")
            runs[contender.name] = await rest_one(contender, settings, args.window)
            append_line(PARTIAL, {"benchmark": "rest", "schema": SCHEMA, "at": now(), "clusters": clusters,
                                  "contender": contender.name, "run": runs[contender.name]})  # fmt: skip
            say(f"  {contender.name}: {runs[contender.name]['cpu_seconds']} CPU-s")
        sizes[str(clusters)] = runs
    result: dict[str, Any] = {
        "benchmark": "rest",
        "schema": SCHEMA,
        "at": now(),
        **environment(kuberay),
        "settings": {
            "clusters": args.clusters,
            "window_seconds": args.window,
            "qps": args.qps,
            "burst": args.burst,
            "nodes": args.nodes,
            "contenders": [c_.name for c_ in contenders],
        },
        "targets": TARGETS,
        "sizes": sizes,
        "comparison": {size: compare(runs) for size, runs in sizes.items()},
    }
    result["table"] = table(sizes)
    return result


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def sizes_list(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--clusters: numbers and commas, e.g. 0,100,1000 ({text!r})") from exc
    if not sizes or any(n < 0 for n in sizes):
        raise argparse.ArgumentTypeError(f"--clusters: one or more numbers of 0 or more ({text!r})")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=sizes_list, default=sizes_list("0,100,1000"))
    parser.add_argument("--window", type=float, default=600.0, help="seconds measured at rest")
    parser.add_argument("--contenders", type=contender_list, default=contender_list(",".join(CONTENDERS)))
    add_kuberay_option(parser)
    parser.add_argument("--qps", type=float, default=100.0)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    result = asyncio.run(main_async(args))
    append_line(RESULTS, result)
    print("\n".join(result["table"]))  # noqa: T201
    print({size: c_.get("meets_target") for size, c_ in result["comparison"].items()})  # noqa: T201


if __name__ == "__main__":
    main()

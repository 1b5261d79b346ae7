"""Every benchmark figure that README.md and docs/*.md quote, computed from its line in ``benchmarks/results/``.

A quoted block is marked in the Markdown, on lines of their own between paragraphs::

    <!-- figures: scale-1000 -->
    ... paragraphs and tables ...
    <!-- /figures -->

and ``BLOCKS["scale-1000"]`` here returns, in reading order, every number that block prints: each computed from a
result line (picked by its file and its ``at`` time) and formatted as the text prints it (Python's ``format``, as
the benchmarks print their own tables), or a constant that is no measurement (with the reason). The check
(``python -m benchmarks.figures``, and ``tests/unit/test_result_figures.py``) compares the two lists number by
number, so a figure edited by hand, a number added without a source and a figure whose line is gone all fail.

What counts as a number: digits with optional thousands commas and decimals (``1,000``, ``58.1``; ``0.83x`` and
``25-30%`` give ``0.83``, ``25`` and ``30``), a date (``2026-12-05``) and a clock time (``22:13``) as one each.
Not counted: inline code spans, HTML comments, version strings (``v1.6.1``) and commit hashes.

A line that carries ``"typed"`` (figures written by hand into the line, not measured by the invocation that wrote
it) backs nothing: asking for it is an error. Outside the blocks, a paragraph that cites a benchmark
(``benchmarks/`` or ``make bench``) and prints a measured-looking figure (a number with s, MB, GB, GiB, kB, CPU-s
or x) is reported as unbacked, except in a section marked ``<!-- figures: diary -->`` (a benchmark diary whose
prose is not checked; everything it says must still come from a line, by its own account).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCUMENTS = ("README.md", "docs/*.md")
GENERATED = ("docs/conformance.md", "docs/reliability.md")  # written by their own runs (make conformance/reliability)
DIARY = "<!-- figures: diary -->"

_BEGIN = re.compile(r"^<!-- figures: ([\w.-]+) -->$", re.MULTILINE)
_END = "<!-- /figures -->"
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_VERSION = re.compile(r"\bv\d+(?:\.\d+)+\b")
_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
_TOKEN = re.compile(
    r"\d{4}-\d{2}-\d{2}|\b\d{1,2}:\d{2}\b|(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])\d+(?:\.\d+)?"
)
_MEASURED = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)? ?(?:s|ms|MB|GB|GiB|MiB|kB|CPU-s|x)(?![\w-])")


class FigureError(Exception):
    """A figure that cannot be backed: its line is missing, ambiguous or typed."""


@dataclass(frozen=True)
class Figure:
    """One number as the text must print it, and where it comes from."""

    text: str
    source: str
    at_least: float | None = None  # set when the text prints an upper bound ("within 0.7 s"): any text >= this

    def matches(self, token: str) -> bool:
        if self.at_least is None:
            return token == self.text
        try:
            return float(token.replace(",", "")) >= self.at_least
        except ValueError:
            return False


# --------------------------------------------------------------------------------------------------- results
class Results:
    """The lines of ``benchmarks/results/*.jsonl``, found by file and ``at``."""

    def __init__(self, folder: Path = RESULTS) -> None:
        self.folder = folder
        self._cache: dict[str, list[dict[str, Any]]] = {}

    def lines(self, file: str) -> list[dict[str, Any]]:
        if file not in self._cache:
            path = self.folder / file
            if not path.exists():
                raise FigureError(f"{path} does not exist")
            self._cache[file] = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        return self._cache[file]

    def line(self, file: str, at: str) -> Line:
        found = [x for x in self.lines(file) if x.get("at") == at]
        if len(found) != 1:
            raise FigureError(f'{file}: {len(found)} lines with "at": {at!r}, want exactly 1')
        if found[0].get("typed"):
            raise FigureError(f"{file} at {at} is marked typed ({found[0]['typed']}): it backs no figure")
        return Line(f"{file}@{at}", found[0])


@dataclass(frozen=True)
class Line:
    name: str
    data: dict[str, Any]

    def get(self, path: str) -> Any:
        """``path`` as dotted keys and list indexes: ``median.raykube.ready_quantiles.0\\.5``, ``runs.0.floor``."""
        value: Any = self.data
        for part in re.split(r"(?<!\\)\.", path):
            key = part.replace("\\.", ".")
            try:
                value = value[int(key)] if isinstance(value, list) else value[key]
            except (KeyError, IndexError, ValueError, TypeError) as exc:
                raise FigureError(f"{self.name}: no {path}") from exc
        return value

    def fig(self, path: str, spec: str = ".1f", scale: float = 1.0) -> Figure:
        number = self.get(path)
        return Figure(format(number if scale == 1.0 else number * scale, spec), f"{self.name} {path}")


def const(text: str, why: str) -> Figure:
    """A number in a block that is no measurement (a setting of KubeRay's, a count of words)."""
    return Figure(text, f"constant: {why}")


def value(number: float, spec: str, source: str) -> Figure:
    return Figure(format(number, spec), source)


def bound(number: float, source: str) -> Figure:
    """The text prints an upper bound of ``number``."""
    return Figure("", f"{source} (at most the printed number)", at_least=number)


def same(*figures: Figure) -> Figure:
    """One printed number that stands for several figures ("0.83x in both"): they must print alike."""
    if len({f.text for f in figures}) != 1:
        return Figure("<differ: " + " / ".join(f.text for f in figures) + ">", "; ".join(f.source for f in figures))
    return Figure(figures[0].text, "; ".join(f.source for f in figures))


def date(line: Line) -> Figure:
    return Figure(str(line.get("at"))[:10], f"{line.name} at (date)")


def clock(line: Line) -> Figure:
    return Figure(str(line.get("at"))[11:16], f"{line.name} at (UTC time)")


# --------------------------------------------------------------------------------------------------- blocks
def process_cluster(r: Results) -> list[Figure]:
    one = r.line("process-cluster.jsonl", "2026-12-03T06:53:00Z")
    three = r.line("process-cluster.jsonl", "2026-12-04T04:16:00Z")
    return [
        one.fig("machine.cpus", "d"),
        one.fig("ready_seconds.median"),
        const("10", "KubeRay's readiness-probe initialDelaySeconds"),
        one.fig("pods_pss_mib.median", ".2f", 1 / 1024),
        date(three),
        three.fig("settings.runs", "d"),
        three.fig("ready_seconds.median"),
        three.fig("ready_seconds.min"),
        three.fig("ready_seconds.max"),
        three.fig("pods_pss_peak_mib.max", ".2f", 1 / 1024),
        three.fig("doctor_seconds.--exec.median", ".2f"),
        three.fig("doctor_seconds.--no-exec.median", ".2f"),
        value(three.get("ready_seconds.median") - one.get("ready_seconds.median"), ".0f", "the two lines' difference"),
        one.fig("ready_seconds.median"),
        const("5", "the sleep of KubeRay's wait-gcs-ready loop"),
    ]


_WAITING = ("floor-ready", "raykube", "kuberay-c10")


def _row(lines: Sequence[Line], contender: str) -> list[Figure]:
    columns = (
        ("ready_seconds", ".1f"),
        ("ready_quantiles.0\\.5", ".1f"),
        ("cpu_seconds.to_ready", ".1f"),
        ("peak_rss_mb.overall", ".0f"),
        ("requests_per_cluster_to_ready", ".2f"),
    )
    return [line.fig(f"median.{contender}.{path}", spec) for path, spec in columns for line in lines]


def scale_1000(r: Results) -> list[Figure]:
    t = r.line("scale.jsonl", "2026-12-05T22:13:16Z")
    u = r.line("scale.jsonl", "2026-12-05T22:48:49Z")
    g = r.line("scale.jsonl", "2026-12-05T12:11:57Z")  # invocation G: QPS 25, 500 clusters, one rate limit for all
    h = r.line("scale.jsonl", "2026-12-05T12:57:54Z")  # invocation H: the same, a limit per resource type
    c1 = r.line("scale.jsonl", "2026-12-05T00:11:51Z")  # the last invocation with KubeRay at concurrency 1
    json_1 = r.line("codec-probe.jsonl", "2026-12-06T01:45:18Z")
    proto_1 = r.line("codec-probe.jsonl", "2026-12-06T01:46:09Z")
    proto_2 = r.line("codec-probe.jsonl", "2026-12-06T01:46:58Z")
    json_2 = r.line("codec-probe.jsonl", "2026-12-06T01:47:48Z")
    both = (t, u)
    rounds = [run for line in both for run in line.get("comparison")]
    half_sooner = sorted(
        1 - line.get("median.raykube.ready_quantiles.0\\.5") / line.get("median.kuberay-c10.ready_quantiles.0\\.5")
        for line in both
    )
    off_cpu = max(
        abs(run[c]["ready_seconds"] - run[c]["cpu_bound_seconds"]) for line in both for run in line.get("runs")
        for c in _WAITING
    )  # fmt: skip

    def spread(line: Line, contender: str) -> float:
        times = [run[contender]["ready_seconds"] for run in line.get("runs") if contender in run]
        return max(times) - min(times)

    def kuberay_range(line: Line) -> list[Figure]:
        times = [run["kuberay-c10"]["ready_seconds"] for run in line.get("runs")]
        return [value(min(times), ".1f", f"{line.name} min kuberay-c10"), value(max(times), ".1f", f"{line.name} max")]

    contenders = ("floor", "floor-ready", "raykube", "kuberay-c10")
    return [
        t.fig("settings.clusters", ",d"),
        const("1", "one head per RayCluster"),
        t.fig("settings.workers_per_cluster", "d"),
        t.fig("settings.qps", ".0f"),
        t.fig("settings.burst", "d"),
        t.fig("machine.cpus", "d"),
        date(t),
        clock(t),
        clock(u),
        *[f for c in contenders[:3] for f in _row(both, c)],
        const("10", "the reconcile concurrency of the KubeRay contender kuberay-c10"),
        *_row(both, "kuberay-c10"),
        same(t.fig("median_comparison.to_kuberay_best", ".2f"), u.fig("median_comparison.to_kuberay_best", ".2f")),
        value(min(x["to_kuberay_best"] for x in rounds), ".2f", "T and U rounds' comparison min"),
        value(max(x["to_kuberay_best"] for x in rounds), ".2f", "T and U rounds' comparison max"),
        t.fig("median_comparison.to_floor", ".2f"),
        u.fig("median_comparison.to_floor", ".2f"),
        value(half_sooner[0] * 100, ".0f", "1 - raykube's p50 / KubeRay's, U"),
        value(half_sooner[1] * 100, ".0f", "1 - raykube's p50 / KubeRay's, T"),
        t.fig("median_comparison.floor_ready_to_kuberay_best", ".2f"),
        u.fig("median_comparison.floor_ready_to_kuberay_best", ".2f"),
        t.fig("median_comparison.to_floor_ready", ".2f"),
        u.fig("median_comparison.to_floor_ready", ".2f"),
        t.fig("machine.cpus", "d"),
        bound(off_cpu, "T and U runs' largest |ready_seconds - cpu_bound_seconds| of a waiting contender"),
        *kuberay_range(t),
        *kuberay_range(u),
        bound(max(spread(x, c) for x in both for c in contenders), "largest spread of a contender's rounds"),
        bound(max(spread(x, "raykube") for x in both), "largest spread of raykube's rounds"),
        g.fig("median_comparison.to_kuberay_best", ".2f"),
        g.fig("settings.qps", ".0f"),
        g.fig("settings.clusters", "d"),
        g.fig("median.raykube.ready_seconds"),
        g.fig("median.kuberay-c10.ready_seconds"),
        h.fig("median_comparison.to_kuberay_best", ".2f"),
        h.fig("median.raykube.ready_seconds"),
        h.fig("median.kuberay-c10.ready_seconds"),
        const("1", "KubeRay's default reconcile concurrency"),
        c1.fig("runs.0.kuberay-c1.ready_seconds"),
        c1.fig("runs.1.kuberay-c1.ready_seconds"),
        json_1.fig("pods", ",d"),
        json_1.fig("cpu_seconds.kube-apiserver"),
        json_2.fig("cpu_seconds.kube-apiserver"),
        proto_1.fig("cpu_seconds.kube-apiserver"),
        proto_2.fig("cpu_seconds.kube-apiserver"),
    ]


def scale_10000(r: Results) -> list[Figure]:
    w = r.line("scale.jsonl", "2026-12-06T01:00:07Z")
    clusters = w.get("settings.clusters")
    pods = clusters * (1 + w.get("settings.workers_per_cluster"))
    components = w.get("runs.0.raykube.component_cpu_seconds_to_ready")
    everything = sum(components.values()) + w.get("runs.0.raykube.cpu_seconds.to_ready")
    row = ("ready_seconds", "ready_quantiles.0\\.5", "peak_rss_mb.overall", "cpu_seconds.to_ready")
    specs = (",.1f", ",.1f", ",.0f", ",.1f")
    floor = [w.fig(f"runs.0.floor.{p}", s) for p, s in zip(row, specs, strict=True)]
    raykube = [w.fig(f"runs.0.raykube.{p}", s) for p, s in zip(row, specs, strict=True)]
    return [
        w.fig("settings.clusters", ",d"),
        w.fig("settings.qps", ".0f"),
        w.fig("settings.burst", ",d"),
        w.fig("settings.nodes", "d"),
        date(w),
        *floor,
        *raykube[:3],
        value(w.get("runs.0.raykube.peak_rss_mb.overall") * 1000 / clusters, ".0f", f"{w.name} peak RSS / clusters"),
        raykube[3],
        value(clusters, ",d", f"{w.name} settings.clusters"),
        value(pods, ",d", f"{w.name} clusters x (1 + workers_per_cluster)"),
        value(components["kube-controller-manager"], ",.1f", f"{w.name} kube-controller-manager CPU"),
        value(components["kube-scheduler"], ",.1f", f"{w.name} kube-scheduler CPU"),
        value(everything, ",.1f", f"{w.name} all components' and raykube's CPU"),
        w.fig("runs.0.raykube.cpu_seconds.to_ready"),
    ]


def rayjob(r: Results) -> list[Figure]:
    j = r.line("rayjob.jsonl", "2026-12-07T17:11:55Z")
    figures = [
        const("1", "the sample's one head"),
        const("1", "the sample's small-group of one worker"),
        const("1", "--reconcile-concurrency=1 in the line's settings.operator_flags: KubeRay's default"),
        j.fig("settings.runs", "d"),
        j.fig("machine.cpus", "d"),
        date(j),
        clock(j),
    ]
    for key, spec in (("seconds", ".1f"), ("cpu_seconds", ".2f"), ("operator_reconciles", "g"),
                      ("startup_cpu_seconds", ".2f")):  # fmt: skip
        figures += [j.fig(f"summary.{op}.{key}.median", spec) for op in ("raykube", "kuberay")]
    return figures


def rayservice(r: Results) -> list[Figure]:
    s = r.line("rayservice.jsonl", "2026-12-08T01:05:26Z")
    every = re.search(r"every ([\d.]+) s", s.get("settings.client"))
    if every is None:
        raise FigureError(f"{s.name}: settings.client names no request interval")
    figures = [
        Figure(every.group(1), f"{s.name} settings.client"),
        s.fig("machine.cpus", "d"),
        s.fig("settings.runs", "d"),
    ]
    for phase, fields in (
        ("in_place", (("requests", "d"), ("failed", "d"), ("longest_gap_seconds", ".2f"),
                      ("seconds_to_new_answer", ".1f"))),
        ("new_cluster", (("requests", ",d"), ("failed", "d"), ("longest_gap_seconds", ".2f"),
                         ("seconds_to_switch", ".1f"), ("seconds_to_old_cluster_deleted", ".1f"))),
    ):  # fmt: skip
        for operator in ("raykube", "kuberay"):
            figures += [s.fig(f"summary.{operator}.{phase}.{f}", spec) for f, spec in fields]
    for operator in ("raykube", "kuberay"):
        figures += [
            s.fig(f"summary.{operator}.head_pod_deleted.longest_gap_seconds"),
            s.fig(f"summary.{operator}.head_pod_deleted.seconds_to_recovered"),
            s.fig(f"summary.{operator}.head_pod_deleted.failed", "d"),
            s.fig(f"summary.{operator}.head_pod_deleted.requests", "d"),
        ]
    figures += [s.fig(f"summary.{op}.seconds_to_ready_median") for op in ("raykube", "kuberay")]
    figures += [s.fig(f"summary.{op}.cpu_seconds_median", ".2f") for op in ("raykube", "kuberay")]
    switches = [run["phases"]["new_cluster"]["seconds_to_switch"] for run in s.get("runs")]
    figures += [
        Figure(every.group(1), f"{s.name} settings.client"),
        value(min(switches), ".1f", f"{s.name} runs.*.phases.new_cluster.seconds_to_switch (min)"),
        value(max(switches), ".1f", f"{s.name} runs.*.phases.new_cluster.seconds_to_switch (max)"),
        value(
            s.get("summary.raykube.cpu_seconds_median") / s.get("summary.kuberay.cpu_seconds_median"),
            ".2f",
            f"{s.name} raykube's CPU median / KubeRay's",
        ),
        const("2", "the RayService controllers' requeue interval"),
    ]
    return figures


def passes(r: Results) -> list[Figure]:
    p = r.line("passes.jsonl", "2026-12-07T20:55:29Z")
    return [
        p.fig("settings.rounds", "d"),
        p.fig("settings.passes", "d"),
        date(p),
        clock(p),
        p.fig("machine.cpus", "d"),
        p.fig("baseline.cpu_ms_per_pass.rayservice", ".2f"),
        p.fig("cpu_ms_per_pass.rayservice", ".2f"),
        p.fig("baseline.cpu_ms_per_pass.raycluster", ".2f"),
        p.fig("cpu_ms_per_pass.raycluster", ".2f"),
    ]


def doctor(r: Results) -> list[Figure]:
    d = r.line("doctor-all.jsonl", "2026-12-07T14:18:22Z")
    p = r.line("process-cluster.jsonl", "2026-12-07T14:24:11Z")
    pods_in = re.search(r"in (\d+) Pods", p.get("doctor_in_pod_checks"))
    if pods_in is None:
        raise FigureError(f"{p.name}: doctor_in_pod_checks names no Pod count")
    pods = d.get("settings.clusters") * (1 + d.get("settings.workers_per_cluster"))
    return [
        d.fig("settings.clusters", "d"),
        d.fig("machine.cpus", "d"),
        date(d),
        d.fig("settings.runs", "d"),
        d.fig("doctor_seconds.median", ".3f"),
        d.fig("doctor_seconds.max", ".3f"),
        d.fig("settings.clusters", "d"),
        value(pods, "d", f"{d.name} clusters x (1 + workers_per_cluster)"),
        d.fig("target_seconds", ".1f"),
        p.fig("machine.cpus", "d"),
        date(p),
        p.fig("doctor_seconds.--exec.median", ".2f"),
        p.fig("doctor_seconds.--exec.max", ".2f"),
        p.fig("doctor_seconds.--exec.exit_codes.0", "d"),
        Figure(pods_in.group(1), f"{p.name} doctor_in_pod_checks"),
        p.fig("doctor_seconds.--no-exec.median", ".2f"),
        p.fig("target.doctor_exec_seconds", ".0f"),
    ]


def rest(r: Results) -> list[Figure]:
    line = r.line("rest.jsonl", "2026-12-07T09:16:02Z")
    sizes = line.get("settings.clusters")
    both = ("raykube", "kuberay-c1")

    def pair(size: int, path: str, spec: str) -> list[Figure]:
        return [line.fig(f"sizes.{size}.{c}.{path}", spec) for c in both]

    rows: list[Figure] = []
    for size in sizes:
        rows.append(value(size, ",d", f"{line.name} settings.clusters"))
        rows += pair(size, "cpu_seconds", ".2f")
        rows += pair(size, "wakeups.voluntary_per_second", ".1f")
        rows += pair(size, "requests_per_minute", ".1f")
        rows += pair(size, "rss_mb", ".1f")
    big = sizes[-1]
    lease = "requests.update leases\\.coordination\\.k8s\\.io"
    events = "requests.{} events\\.events\\.k8s\\.io"
    return [
        *[value(n, ",d", f"{line.name} settings.clusters") for n in sizes],
        const("1", "one head per RayCluster"),
        const("3", "the workers of each RayCluster (benchmarks.scale WORKERS)"),
        line.fig("settings.window_seconds", ".0f"),
        const("1", "KubeRay's default reconcile concurrency"),
        line.fig("machine.cpus", "d"),
        date(line),
        clock(line),
        *rows,
        value(big, ",d", f"{line.name} the largest size"),
        line.fig(f"comparison.{big}.cpu_to_kuberay", ".2f"),
        line.fig(f"comparison.{big}.rss_to_kuberay", ".1f"),
        const("40", "about: KubeRay's wakeups per second at 0 and 100 clusters, rounded"),
        const("2", "the leader election's renewal period (KubeRay's and raykube's retry period)"),
        same(*[line.fig(f"sizes.{big}.{c}.{lease}", "d") for c in both]),
        line.fig(f"sizes.{big}.kuberay-c1.{events.format('patch')}", "d"),
        const("6", "minutes: client-go's events package ends a series after this long without a repeat"),
        line.fig(f"sizes.{big}.raykube.{events.format('patch')}", "d"),
        line.fig(f"sizes.{big}.raykube.{events.format('create')}", "d"),
        value(big, ",d", f"{line.name} the largest size"),
    ]


def incremental(r: Results) -> list[Figure]:
    line = r.line("incremental.jsonl", "2026-12-07T09:28:40Z")
    up = line.get("settings.upgrade")
    runs = {run["operator"]: run for run in line.get("runs")}

    def phase(op: str, name: str, key: str, spec: str) -> Figure:
        return value(runs[op]["phases"][name][key], spec, f"{line.name} runs[{op}].phases.{name}.{key}")

    def weights(op: str, name: str) -> list[Figure]:
        seen = runs[op]["phases"][name]["weights_seen"]
        return [value(w, "d", f"{line.name} runs[{op}].phases.{name}.weights_seen") for w in seen]

    def shares(op: str, weight: int) -> list[Figure]:
        found = [row["new_share"] for row in runs[op]["phases"]["upgrade"]["curve"] if row["new_weight"] == weight]
        return [value(min(found), ".2f", f"{line.name} {op} curve at {weight}"), value(max(found), ".2f", "max")]

    ops = ("raykube", "kuberay")
    return [
        value(up["maxSurgePercent"], "d", f"{line.name} settings.upgrade.maxSurgePercent"),
        value(up["stepSizePercent"], "d", f"{line.name} settings.upgrade.stepSizePercent"),
        value(up["intervalSeconds"], "d", f"{line.name} settings.upgrade.intervalSeconds"),
        const("0.1", "the client's pacing (examples/serve/client.yaml)"),
        date(line),
        clock(line),
        *[f for op in ops for f in (phase(op, "upgrade", "requests", "d"), phase(op, "upgrade", "failed", "d"),
                                    phase(op, "upgrade", "longest_gap_seconds", "g"))],
        *[f for op in ops for f in weights(op, "upgrade")],
        *[phase(op, "upgrade", "seconds_to_promoted", ".1f") for op in ops],
        *[f for op in ops for f in (phase(op, "rollback", "requests", "d"), phase(op, "rollback", "failed", "d"),
                                    phase(op, "rollback", "longest_gap_seconds", "g"))],
        *[f for op in ops for f in (*weights(op, "rollback"),
                                    phase(op, "rollback", "abandoned_answers_after_settled", "d"))],
        *[value(runs[op]["cpu_seconds"], ".2f", f"{line.name} runs[{op}].cpu_seconds") for op in ops],
        const("5", "the curve's bucket (benchmarks.incremental BUCKET_SECONDS)"),
        *[f for w in (25, 50, 75) for f in (*shares("raykube", w), value(w, "d", "the weight"))],
        value(runs["raykube"]["cpu_seconds"] / runs["kuberay"]["cpu_seconds"], ".2f", "raykube's CPU / KubeRay's"),
    ]  # fmt: skip


def readme_summary(r: Results) -> list[Figure]:
    """README's short table: a few figures of scale-1000, scale-10000, rayservice, doctor, rest and incremental,
    from the same lines."""
    t = r.line("scale.jsonl", "2026-12-05T22:13:16Z")
    u = r.line("scale.jsonl", "2026-12-05T22:48:49Z")
    w = r.line("scale.jsonl", "2026-12-06T01:00:07Z")
    s = r.line("rayservice.jsonl", "2026-12-08T01:05:26Z")
    d = r.line("doctor-all.jsonl", "2026-12-07T14:18:22Z")
    idle = r.line("rest.jsonl", "2026-12-07T09:16:02Z")
    inc = r.line("incremental.jsonl", "2026-12-07T09:28:40Z")
    every = re.search(r"every ([\d.]+) s", s.get("settings.client"))
    if every is None:
        raise FigureError(f"{s.name}: settings.client names no request interval")

    def both(path: str, spec: str) -> list[Figure]:
        return [t.fig(path, spec), u.fig(path, spec)]

    return [
        t.fig("machine.cpus", "d"),
        t.fig("settings.clusters", ",d"),
        const("1", "one head per RayCluster"),
        t.fig("settings.workers_per_cluster", "d"),
        *both("median.raykube.ready_seconds", ".1f"),
        *both("median.kuberay-c10.ready_seconds", ".1f"),
        const("10", "the reconcile concurrency of the KubeRay contender kuberay-c10"),
        *both("median.raykube.cpu_seconds.to_ready", ".1f"),
        *both("median.kuberay-c10.cpu_seconds.to_ready", ".1f"),
        *both("median.raykube.peak_rss_mb.overall", ".0f"),
        *both("median.kuberay-c10.peak_rss_mb.overall", ".0f"),
        w.fig("settings.clusters", ",d"),
        w.fig("runs.0.raykube.ready_seconds", ",.1f"),
        Figure(every.group(1), f"{s.name} settings.client"),
        s.fig("settings.runs", "d"),
        s.fig("summary.raykube.new_cluster.failed", "d"),
        s.fig("summary.raykube.new_cluster.requests", ",d"),
        s.fig("summary.kuberay.new_cluster.failed", "d"),
        s.fig("summary.kuberay.new_cluster.requests", ",d"),
        d.fig("settings.clusters", "d"),
        d.fig("settings.runs", "d"),
        d.fig("doctor_seconds.median", ".3f"),
        value(1000, ",d", f"{idle.name} the size quoted (sizes.1000)"),
        idle.fig("settings.window_seconds", ".0f"),
        idle.fig("sizes.1000.raykube.cpu_seconds", ".2f"),
        idle.fig("sizes.1000.raykube.rss_mb", ".1f"),
        idle.fig("sizes.1000.kuberay-c1.cpu_seconds", ".2f"),
        idle.fig("sizes.1000.kuberay-c1.rss_mb", ".1f"),
        const("0.1", "the client's pacing (examples/serve/client.yaml)"),
        *[inc.fig(f"summary.{op}.upgrade.{k}", "d") for op in ("raykube", "kuberay") for k in ("failed", "requests")],
    ]


def diagnose_after(r: Results) -> list[Figure]:
    """docs/doctor.md: what --diagnose-after costs at 1,000 RayClusters, the same operator with and without it."""
    x = r.line("scale.jsonl", "2026-12-07T14:17:32Z")
    on, off = "raykube/diagnose-after=20s", "raykube"
    runs = [run[on]["diagnosis_to_ready"] for run in x.get("runs")]
    diagnoses = {run["raykube_diagnoses"] for run in runs}
    passes = {run["raykube_diagnosis_passes"] for run in runs}
    if len(diagnoses) != 1 or len(passes) != 1:
        raise FigureError(f"{x.name}: the rounds made different numbers of diagnoses or passes: {runs}")
    made = diagnoses.pop()

    def extra(path: str) -> float:
        return float(x.get(f"median.{on}.{path}") - x.get(f"median.{off}.{path}"))

    cpu, requests = extra("cpu_seconds.to_ready"), extra("requests_per_cluster_to_ready")
    events = sorted(run["raykube_root_cause_events"] for run in runs)
    return [
        x.fig("settings.clusters", ",d"),
        const("1", "one head per RayCluster"),
        x.fig("settings.workers_per_cluster", "d"),
        x.fig("machine.cpus", "d"),
        date(x),
        x.fig(f"median.{on}.rounds", "d"),
        const("20", "the flag's value in the contender's name"),
        value(made, "d", f"{x.name} runs.*.{on}.diagnosis_to_ready.raykube_diagnoses"),
        const("20", "MAX_PER_PASS, raykube.runtime.diagnosis"),
        value(passes.pop(), "d", f"{x.name} runs.*.{on}.diagnosis_to_ready.raykube_diagnosis_passes"),
        value(cpu / made, ".2f", f"{x.name} median CPU-s to ready, {on} minus {off}, per diagnosis"),
        value(requests * x.get("settings.clusters") / made, ".0f", f"{x.name} median requests, the same"),
        x.fig(f"median.{off}.cpu_seconds.to_ready", ".1f"),
        x.fig(f"median.{on}.cpu_seconds.to_ready", ".1f"),
        x.fig(f"median.{off}.peak_rss_mb.overall", ".0f"),
        x.fig(f"median.{on}.peak_rss_mb.overall", ".0f"),
        x.fig(f"median.{off}.requests_per_cluster_to_ready", ".2f"),
        x.fig(f"median.{on}.requests_per_cluster_to_ready", ".2f"),
        x.fig(f"median.{on}.ready_seconds", ".1f"),
        x.fig(f"median.{off}.ready_seconds", ".1f"),
        *[value(n, "d", f"{x.name} runs.*.{on}.diagnosis_to_ready.raykube_root_cause_events") for n in events],
    ]


BLOCKS: dict[str, Callable[[Results], list[Figure]]] = {
    "process-cluster": process_cluster,
    "scale-1000": scale_1000,
    "scale-10000": scale_10000,
    "rayjob": rayjob,
    "rayservice": rayservice,
    "passes": passes,
    "doctor": doctor,
    "readme-summary": readme_summary,
    "rest": rest,
    "incremental": incremental,
    "diagnose-after": diagnose_after,
}


# --------------------------------------------------------------------------------------------------- the check
@dataclass(frozen=True)
class Block:
    document: str
    name: str
    line: int  # 1-based line of the begin marker
    text: str


def tokens(text: str) -> list[str]:
    """The numbers ``text`` prints, in order (see the module's docstring for what counts)."""
    for pattern in (_COMMENT, _CODE_SPAN, _VERSION, _HASH):
        text = pattern.sub(" ", text)
    return _TOKEN.findall(text)


def blocks(document: str, text: str) -> tuple[list[Block], list[str]]:
    found, problems = [], []
    for match in _BEGIN.finditer(text):
        if match.group(1) == "diary":
            continue
        end = text.find(_END, match.end())
        line = text.count("\n", 0, match.start()) + 1
        if end < 0:
            problems.append(f"{document}:{line}: figures block {match.group(1)!r} has no {_END}")
            continue
        found.append(Block(document, match.group(1), line, text[match.end() : end]))
    return found, problems


def check_block(block: Block, expected: Sequence[Figure]) -> list[str]:
    printed = tokens(block.text)
    where = f"{block.document}:{block.line} figures block {block.name!r}"
    problems = []
    for i, (token, figure) in enumerate(zip(printed, expected, strict=False)):
        if not figure.matches(token):
            want = f"at least {figure.at_least:g}" if figure.at_least is not None else repr(figure.text)
            problems.append(f"{where}: number {i + 1} prints {token!r}, {figure.source} gives {want}")
    if len(printed) > len(expected):
        problems.append(f"{where}: numbers with no figure behind them: {printed[len(expected) :]}")
    if len(expected) > len(printed):
        problems.append(f"{where}: figures the text does not print: {[f.source for f in expected[len(printed) :]]}")
    return problems


def unbacked(document: str, text: str) -> list[str]:
    """Paragraphs outside blocks and diaries that cite a benchmark and print a measured-looking number."""
    problems = []
    lines = text.splitlines()
    inside = diary = fence = False
    diary_level = 0
    paragraph: list[tuple[int, str]] = []

    def flush() -> None:
        body = " ".join(x for _, x in paragraph)
        if paragraph and re.search(r"benchmarks/|make bench", body):
            figures = _MEASURED.findall(_CODE_SPAN.sub(" ", body))
            if figures:
                problems.append(
                    f"{document}:{paragraph[0][0]}: a benchmark's figures outside a figures block: {figures}"
                )
        paragraph.clear()

    for number, line in enumerate(lines, 1):
        heading = re.match(r"^(#+) ", line)
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        if heading and diary and len(heading.group(1)) <= diary_level:
            diary = False
        if line.strip() == DIARY:
            diary, diary_level = True, _section_level(lines, number)
        if _BEGIN.match(line):
            flush()
            inside = True
        elif line.strip() == _END:
            inside = False
        elif not line.strip() or heading:
            flush()
        elif not inside and not diary:
            if re.match(r"^\s*(?:[-*]|\d+\.) ", line):  # a list item is a paragraph of its own
                flush()
            paragraph.append((number, line))
    flush()
    return problems


def _section_level(lines: Sequence[str], number: int) -> int:
    for line in reversed(lines[: number - 1]):
        heading = re.match(r"^(#+) ", line)
        if heading:
            return len(heading.group(1))
    return 1


def documents(root: Path = ROOT) -> dict[str, str]:
    paths = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    return {
        str(p.relative_to(root)): p.read_text()
        for p in paths
        if str(p.relative_to(root)) not in GENERATED
    }  # fmt: skip


def check(texts: dict[str, str], results: Results | None = None) -> list[str]:
    """Every problem with the figures of ``texts`` (document name -> Markdown); empty when all are backed."""
    results = results or Results()
    problems: list[str] = []
    used: dict[str, str] = {}
    for document, text in texts.items():
        found, unclosed = blocks(document, text)
        problems += unclosed + unbacked(document, text)
        for block in found:
            if block.name not in BLOCKS:
                problems.append(
                    f"{block.document}:{block.line}: no figures named {block.name!r} in benchmarks/figures.py"
                )
                continue
            if block.name in used:
                problems.append(
                    f"{block.document}:{block.line}: figures {block.name!r} already quoted in {used[block.name]}"
                )
            used[block.name] = block.document
            try:
                expected = BLOCKS[block.name](results)
            except FigureError as exc:
                problems.append(f"{block.document}:{block.line} figures block {block.name!r}: {exc}")
                continue
            problems += check_block(block, expected)
    problems += [f"benchmarks/figures.py: figures {name!r} quoted nowhere" for name in BLOCKS if name not in used]
    return problems


def main() -> int:
    problems = check(documents())
    for problem in problems:
        sys.stdout.write(problem + "\n")
    sys.stdout.write("every figure is backed by its result line\n" if not problems else f"{len(problems)} problem(s)\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

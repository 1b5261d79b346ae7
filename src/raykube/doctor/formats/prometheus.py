"""``--prometheus-textfile PATH``: the findings as gauges for node_exporter's textfile collector.

* ``raykube_doctor_findings{rule, severity, namespace, kind}``: how many findings of that rule and severity the run
  reported on objects of that kind in that namespace (``namespace=""`` for cluster-scoped objects);
* ``raykube_doctor_last_run_timestamp_seconds``: when the run ended, so an alert can tell a stale file from a
  healthy one.

The file is written atomically (a temporary file in the same directory, then a rename), as the collector needs: it
never reads half a file.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from raykube.doctor.formats.common import Document

FINDINGS: Final = "raykube_doctor_findings"
LAST_RUN: Final = "raykube_doctor_last_run_timestamp_seconds"


class _Report(Collector):
    def __init__(self, document: Document, now: float) -> None:
        self.document = document
        self.now = now

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts: Counter[tuple[str, str, str, str]] = Counter(
            (f["rule"], f["severity"], str(f["object"].get("namespace") or ""), f["object"]["kind"])
            for f in self.document.get("findings", [])
        )
        findings = GaugeMetricFamily(
            FINDINGS,
            "Findings of the last raykube doctor run, by rule, severity, and the namespace and kind of the object.",
            labels=["rule", "severity", "namespace", "kind"],
        )
        for labels, count in sorted(counts.items()):
            findings.add_metric(list(labels), count)
        yield findings
        yield GaugeMetricFamily(LAST_RUN, "When the last raykube doctor run ended (Unix time).", value=self.now)


def to_prometheus(document: Document, now: float | None = None) -> str:
    """The textfile (Prometheus text exposition format) of a ``doctor.raykube.io/v1`` document."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Report(document, time.time() if now is None else now))
    return generate_latest(registry).decode()


def write_textfile(path: Path, document: Document, now: float | None = None) -> None:
    """Write :func:`to_prometheus` to ``path`` atomically: a temporary file beside it, then a rename over it."""
    text = to_prometheus(document, now)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(tmp, 0o644)  # the collector runs as another user; mkstemp's 0600 would hide the file from it
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

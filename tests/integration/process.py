"""The process sandbox the process-node tests share (its fixtures are in ``tests/integration/conftest.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raykube.sandbox import Binaries, Sandbox


@dataclass(frozen=True)
class ProcessSandbox:
    sandbox: Sandbox
    kubeconfig: Path
    root: Path

    def kubectl(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Binaries.from_cache().kubectl), *args],
            env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def doctor(self, namespace: str, target: str, *extra: str) -> tuple[int, dict[str, Any]]:
        """``raykube doctor TARGET -n NAMESPACE -o json`` as a user runs it (a fresh process, default options: the
        in-Pod checks run where the caller may exec); the exit code and the report."""
        run = subprocess.run(
            [sys.executable, "-m", "raykube.cli.main", "doctor", target, "-n", namespace, "-o", "json",
             "--kubeconfig", str(self.kubeconfig), *extra],
            capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
        assert run.stdout, run.stderr
        report: dict[str, Any] = json.loads(run.stdout)
        return run.returncode, report

    def at_failure(self, namespace: str) -> str:
        """What a person would look at when a test on this sandbox fails: every Pod and where it runs, what each node
        has allocated, the namespace's events, and ``raykube doctor`` (text) on each Ray object in it."""
        pods = self._run_text("get", "pods", "-A", "-o", "wide")
        nodes = self._run_text("describe", "nodes").splitlines()
        allocated = [line for line in nodes if line.startswith("Name:") or line.startswith(("  cpu ", "  memory "))]
        events = self._run_text("get", "events", "-n", namespace, "--sort-by=.lastTimestamp")
        parts = [
            f"$ kubectl get pods -A -o wide\n{pods}",
            "$ kubectl describe nodes (allocated)\n" + "\n".join(allocated),
            f"$ kubectl -n {namespace} get events\n{events}",
        ]
        listed = self._run_text("get", "rayclusters,rayjobs,rayservices", "-n", namespace, "-o", "name").split()
        names = [name for name in listed if name.startswith("ray") and ".ray.io/" in name]
        for name in names[:6]:  # raycluster.ray.io/NAME
            kind, _, short = name.partition("/")
            target = f"{kind.split('.')[0]}/{short}"
            run = subprocess.run(
                [sys.executable, "-m", "raykube.cli.main", "doctor", target, "-n", namespace,
                 "--kubeconfig", str(self.kubeconfig)],
                capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "160"},
            )  # fmt: skip
            parts.append(f"$ raykube doctor {target} -n {namespace}\n{run.stdout.rstrip()}")
        return "\n\n".join(parts)

    def _run_text(self, *args: str) -> str:
        try:
            run = self.kubectl(*args, timeout=30)
        except subprocess.TimeoutExpired:
            return "(kubectl timed out)"
        return (run.stdout or run.stderr).rstrip()

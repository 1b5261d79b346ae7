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

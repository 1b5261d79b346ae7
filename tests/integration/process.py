"""The process sandbox the process-node tests share (its fixtures are in ``tests/integration/conftest.py``)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

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

"""Helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from raykube.sandbox import Sandbox
from raykube.sandbox.reference import kuberay_reference


@dataclass(frozen=True)
class RunningSandbox:
    sandbox: Sandbox
    kubeconfig: Path
    owned: bool  # started by this test run (and taken down by it)
    state_root: Path  # what RAYKUBE_STATE_DIR must be for the CLI to find it


def raykube(*args: str, state_root: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, against the sandboxes under ``state_root``."""
    return subprocess.run(
        [sys.executable, "-m", "raykube.cli.main", *args],
        env={**os.environ, "RAYKUBE_STATE_DIR": str(state_root), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _stderr(message: str) -> None:
    sys.stderr.write(f"• {message}\n")


# KubeRay v1.6.1's CRDs (crd/) and config/samples (samples/): $RAYKUBE_KUBERAY_DIR, else fetched once into the cache
# from the Go module proxy (``raykube sandbox build`` does it too), so a fresh clone needs nothing beside it.
KUBERAY_V161 = kuberay_reference(_stderr)

"""Helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from raykube.sandbox import Sandbox


@dataclass(frozen=True)
class RunningSandbox:
    sandbox: Sandbox
    kubeconfig: Path
    owned: bool  # started by this test run (and taken down by it)
    state_root: Path  # what RAYKUBE_STATE_DIR must be for the CLI to find it


def raykube(*args: str, state_root: Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would, against the sandboxes under ``state_root``."""
    return subprocess.run(
        [sys.executable, "-m", "raykube.cli.main", *args],
        env={**os.environ, "RAYKUBE_STATE_DIR": str(state_root), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def shared_dir() -> Path:
    """The project's shared material (``../shared`` next to the checkout, or ``$RAYKUBE_SHARED``)."""
    path = Path(os.environ.get("RAYKUBE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
    if not path.is_dir():
        raise FileNotFoundError(f"{path} is missing: tests read KubeRay's CRDs and samples from it")
    return path


KUBERAY_V161 = shared_dir() / "kuberay" / "v1.6.1"

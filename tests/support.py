"""Helpers shared by tests (fixtures live in conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from raykube.api.rbac import LEADER_ELECTION_RULES, OPERATOR_RULES
from raykube.builders.options import BuildOptions
from raykube.kube.client import Kube
from raykube.runtime.manager import Manager
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


@contextlib.asynccontextmanager
async def operator_on(
    kubeconfig: Path, namespace: str, *gates: str, concurrency: int = 4, use_kubernetes_proxy: bool = False
) -> AsyncIterator[Manager]:
    """The operator, in-process, watching only ``namespace``, with ``gates`` on besides v1.7.0's defaults; stopped at
    the end. Its client refuses any call outside the operator's RBAC rules, so what a test exercises proves the
    generated RBAC sufficient."""
    client = Kube.from_config(kubeconfig, qps=200, burst=400, rules=OPERATOR_RULES + LEADER_ELECTION_RULES)
    options = BuildOptions(features={**BuildOptions().features, **dict.fromkeys(gates, True)})
    manager = Manager(
        client,
        options=options,
        namespaces=[namespace],
        reconcile_concurrency=concurrency,
        use_kubernetes_proxy=use_kubernetes_proxy,
    )
    await asyncio.wait_for(manager.start(), 60)
    try:
        yield manager
    finally:
        await manager.stop()
        await client.close()

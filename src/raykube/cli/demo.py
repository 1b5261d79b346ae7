"""``raykube demo``: the main job.

For now (until the seed's RayCluster walkthrough lands, issue 9) it brings the local sandbox up, building it the
first time, and shows its nodes with the sandbox's own kubectl, as the README promises.
"""

from __future__ import annotations

import asyncio
import os
import subprocess

from raykube.cli.output import err, fail, out, progress, success
from raykube.cli.sandbox import ensure_built
from raykube.sandbox import Binaries, Sandbox, SandboxConfig, SandboxError


def demo() -> None:
    """Bring the local Kubernetes up (building it the first time) and show `kubectl get nodes`."""
    ensure_built()
    sandbox = Sandbox.named("default")
    try:
        result = asyncio.run(sandbox.up(SandboxConfig(name="default"), progress))
    except SandboxError as exc:
        fail(str(exc))
    if result.already_running:
        success("the sandbox was already up; reusing it")
    else:
        success(f"the sandbox is up in {result.seconds:.1f}s")
    kubectl = Binaries.from_cache().kubectl
    command = [str(kubectl), "get", "nodes", "-o", "wide"]
    err.print("\n[bold]$ kubectl get nodes -o wide[/bold]")
    completed = subprocess.run(command, env={**os.environ, "KUBECONFIG": str(result.kubeconfig)}, check=False)
    if completed.returncode != 0:
        fail(f"kubectl get nodes failed (exit {completed.returncode})")
    out.print()
    out.print("Use it yourself:")
    out.print('  eval "$(uv run raykube sandbox env)"   # KUBECONFIG and the sandbox\'s kubectl')
    out.print("  kubectl get nodes")
    out.print("Stop it with `make demo-down` (or `uv run raykube sandbox down`).")

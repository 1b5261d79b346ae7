"""``raykube demo``: the main job.

For now (until the seed's RayCluster walkthrough lands, issue 9) it brings the local sandbox up, building it the
first time, and shows its nodes with the sandbox's own kubectl, as the README promises.
"""

from __future__ import annotations

import os
import subprocess
from typing import Annotated

import typer

from raykube.cli.output import err, fail, out
from raykube.cli.sandbox import NameOption, bring_up
from raykube.sandbox.components import Binaries, SandboxConfig
from raykube.sandbox.ports import DEFAULT_PORT_BASE, Ports


def demo(
    name: NameOption = "default",
    port_base: Annotated[int, typer.Option(help="First of the sandbox's seven 127.0.0.1 ports.")] = DEFAULT_PORT_BASE,
) -> None:
    """Bring the local Kubernetes up (building it the first time) and show `kubectl get nodes`."""
    try:
        config = SandboxConfig(name=name, ports=Ports.from_base(port_base))
    except ValueError as exc:
        fail(str(exc), code=2)
    result = bring_up(config)
    kubectl = Binaries.from_cache().kubectl
    command = [str(kubectl), "get", "nodes", "-o", "wide"]
    err.print("\n[bold]$ kubectl get nodes -o wide[/bold]")
    completed = subprocess.run(command, env={**os.environ, "KUBECONFIG": str(result.kubeconfig)}, check=False)
    if completed.returncode != 0:
        fail(f"kubectl get nodes failed (exit {completed.returncode})")
    out.print()
    out.print("Use it yourself:")
    flag = "" if name == "default" else f" --name {name}"
    out.print(f'  eval "$(uv run raykube sandbox env{flag})"   # KUBECONFIG and the sandbox\'s kubectl')
    out.print("  kubectl get nodes")
    out.print(f"Stop it with `make demo-down` (or `uv run raykube sandbox down{flag}`).")

"""The README's main command, as a user runs it (on its own sandbox, so it never touches one that is running)."""

from __future__ import annotations

from pathlib import Path

from raykube.sandbox import Ports, Sandbox
from tests.support import raykube


def test_demo_brings_the_sandbox_up_and_shows_ready_kwok_nodes(tmp_path: Path) -> None:
    base = str(Ports.free().etcd)
    try:
        first = raykube("demo", "--name", "e2e", "--port-base", base, state_root=tmp_path)
        assert first.returncode == 0, first.stderr
        assert "kubectl get nodes" in first.stderr
        node_lines = [line for line in first.stdout.splitlines() if line.startswith("kwok-node-")]
        assert len(node_lines) == 2
        assert all(line.split()[1] == "Ready" for line in node_lines), node_lines

        again = raykube("demo", "--name", "e2e", "--port-base", base, state_root=tmp_path)
        assert again.returncode == 0, again.stderr
        assert "already up" in again.stderr
    finally:
        down = raykube("sandbox", "down", "--name", "e2e", state_root=tmp_path)
    assert down.returncode == 0, down.stderr
    assert not Sandbox.named("e2e", tmp_path).layout.root.exists()

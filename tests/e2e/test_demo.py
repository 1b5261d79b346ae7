"""The README's main command, as a user runs it, on its own sandbox (so it never touches one that is running):
the seed's cluster ready with 1 head + 2 workers, the head Service's endpoint equal to the head Pod's IP, doctor
healthy, then broken, diagnosed and recovered; a second run reuses the sandbox."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from raykube.sandbox import Ports, Sandbox
from raykube.sandbox.kubelet import network
from tests.support import raykube


def test_the_demo_plays_the_chapter_and_a_second_run_reuses_the_sandbox(tmp_path: Path) -> None:
    base = str(Ports.free().etcd)
    try:
        first = raykube("demo", "--name", "e2e", "--port-base", base, "--runtime", "kwok", state_root=tmp_path)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        output = first.stdout
        assert "1 head + 2 workers Running and Ready" in output
        assert "the head Service's endpoint is the head Pod's IP" in output
        assert "doctor: healthy (exit 0)" in output
        assert "doctor's root cause:" in output
        assert "recovered" in output
        assert "on kwok nodes its Pod runs nothing, so the acts that read and write it" in output
        assert "The demo finished: every check above held." in output

        second = raykube("demo", "--name", "e2e", "--port-base", base, "--runtime", "kwok", state_root=tmp_path)
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
        assert "already up" in second.stderr
    finally:
        down = raykube("sandbox", "down", "--name", "e2e", state_root=tmp_path)
    assert down.returncode == 0, down.stderr
    assert not Sandbox.named("e2e", tmp_path).layout.root.exists()


@pytest.mark.long  # minutes of real Ray (a RayJob, two RayService upgrades): make conformance runs it
@pytest.mark.timeout(1900)  # the demo's own limit below, not the suite's 600 s (a first run builds its images)
def test_the_demo_on_process_nodes_runs_the_operator_in_its_pod_and_ray_itself(tmp_path: Path) -> None:
    if problems := network.preflight():
        pytest.skip("this machine cannot run process nodes: " + "; ".join(problems))
    try:
        run = raykube("demo", "--name", "e2e-proc", "--port-base", str(Ports.free().etcd), "--runtime", "process",
                      state_root=tmp_path, timeout=1800)  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        output = run.stdout
        assert "$ kubectl -n kuberay-operator get pods -o wide" in output
        assert "is Running 1/1 on process-node-" in output
        assert "$ kubectl -n kuberay-operator logs deploy/kuberay-operator | grep raycluster-demo" in output
        assert '"msg": "Created head Pod raykube-demo/raycluster-demo-head-' in output
        assert "Ray's own view: 3 nodes joined the head's GCS" in output
        assert "is Ready behind Service minio" in output
        assert "ray.data read all 4000 rows from s3:// (the sums match those computed here)" in output
        assert "the job's summary is in s3://demo-data/results/summary.json" in output
        assert "the task was refused: 403 Forbidden" in output and "doctor names the ServiceAccount" in output
        assert "the same task now lists the namespace's Pods with its own token" in output
        # KubeRay v1.7's incremental upgrade through the sandbox's Traefik: stepped, nothing failed.
        assert "Serve answers through the Gateway at http://" in output
        stepped = r"the new cluster's weight went (\d+ -> )+100; \d+ requests through the Gateway, 0 failed"
        assert re.search(stepped, output), output[-3000:]
        assert "The demo finished: every check above held." in output
    finally:
        down = raykube("sandbox", "down", "--name", "e2e-proc", state_root=tmp_path)
    assert down.returncode == 0, down.stderr

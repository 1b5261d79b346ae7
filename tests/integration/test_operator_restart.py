"""Restart safety: an operator killed with SIGKILL in the middle of creating 20 clusters, then started again, ends
with exactly the desired Pods: no duplicates (the fresh cache is listed before anything is created) and no orphans."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.resources import PODS
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import seed_cluster

CLUSTERS = 20
WORKERS = 2


@pytest.fixture
def start_operator(kubeconfig: Path, namespace: str, ray_crds: list[str], tmp_path: Path) -> Iterator[object]:
    """Starts ``raykube operator run`` for this test's namespace; stops whatever still runs afterwards."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(*flags: str) -> subprocess.Popen[bytes]:
        command = [
            sys.executable,
            "-m",
            "raykube.cli.main",
            "operator",
            "--kubeconfig",
            str(kubeconfig),
            "--health-probe-bind-address=127.0.0.1:0",
        ]
        with (tmp_path / f"operator-{len(processes)}.log").open("wb") as log:  # the child keeps its own copy
            process = subprocess.Popen(
                [*command, "--watch-namespace", namespace, *flags],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ},
            )
        processes.append(process)
        return process

    yield start
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def test_sigkill_mid_creation_then_restart_ends_with_exactly_the_desired_pods(
    runtime_kube: Kube, namespace: str, start_operator: object
) -> None:
    start = start_operator
    assert callable(start)
    # Slow the first operator down (5 requests/s) so the kill lands in the middle of creating Pods.
    first = start("--qps", "5", "--burst", "1", "--enable-leader-election=false")
    for index in range(CLUSTERS):
        body = seed_cluster(f"c{index:02d}", workers=WORKERS)
        for template in (body["spec"]["headGroupSpec"]["template"], body["spec"]["workerGroupSpecs"][0]["template"]):
            template["spec"].pop("volumes")  # no PVC/ConfigMap/Secret needed for this test
            container = template["spec"]["containers"][0]
            container.pop("volumeMounts")
            container.pop("envFrom")
            tiny = {"cpu": "100m", "memory": "128Mi"}  # 60 Pods must fit on the sandbox's nodes
            container["resources"] = {"limits": tiny, "requests": tiny}
        await runtime_kube.create(RAYCLUSTERS, body, namespace)

    async def some_pods() -> int | NotYet:
        count = len((await runtime_kube.list(PODS, namespace)).items)
        return count if count >= 10 else NotYet(f"{count} pods")

    created = await wait_for(some_pods, 120, what="the first operator to create some Pods")
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert created < CLUSTERS * (1 + WORKERS), "the kill came too late to prove anything"

    start("--reconcile-concurrency", "4", "--enable-leader-election=false")

    async def all_ready() -> bool | NotYet:
        clusters = (await runtime_kube.list(RAYCLUSTERS, namespace)).items
        ready = [c for c in clusters if (c.get("status") or {}).get("state") == "ready"]
        return len(ready) == CLUSTERS or NotYet(f"{len(ready)}/{CLUSTERS} ready")

    await wait_for(all_ready, 180, what="all clusters ready after the restart")
    pods = [p for p in (await runtime_kube.list(PODS, namespace)).items if not p["metadata"].get("deletionTimestamp")]
    per_cluster = collections.Counter(
        (p["metadata"]["labels"]["ray.io/cluster"], p["metadata"]["labels"]["ray.io/node-type"]) for p in pods
    )
    expected = {(f"c{i:02d}", kind): n for i in range(CLUSTERS) for kind, n in (("head", 1), ("worker", WORKERS))}
    assert dict(per_cluster) == expected

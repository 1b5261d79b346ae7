"""A live swap with KubeRay v1.7.0: objects made by KubeRay (v1.6.2, or v1.7.0) → raykube → KubeRay v1.7.0.

The path a team takes: KubeRay made their objects (on v1.6.2, or already on v1.7.0), they swap to raykube, and later
back to KubeRay v1.7.0. On process nodes (real Ray) KubeRay's operator of the maker's release, with that release's
CRDs, brings up a RayCluster with ``upgradeStrategy: Recreate``, a RayJob whose job runs for minutes, and a RayService
with the local Serve app that a client Pod calls every 0.1 s. Then, as a user swaps operators: KubeRay stopped,
raykube's CRDs installed and raykube started on the same objects; after its passes over each kind, raykube stopped,
KubeRay v1.7.0's CRDs installed and KubeRay v1.7.0 started, and it too makes its passes. At each step:

* the same RayClusters, Pods (uid, no restart), Services (uid, ClusterIP, selector) and submitter Jobs;
* the RayJob still RUNNING with the same job id, the RayService still Ready on the same cluster;
* no Warning event after the first swap, from anyone;
* the client never failed.

What makes this hold: the spec hash computed as v1.7.0 computes it, and the re-stamp, not the recreation, of a
Recreate cluster's head Pod stamped by another KubeRay version (the ``priority: 0`` default of v1.7.0's CRD changes
every v1.6.x hash). Marked long (``make conformance``): it needs KubeRay v1.7.0's operator, built from
``KUBERAY_SRC`` or a clone of the tag (``raykube.sandbox.conformance.release``), and v1.6.2's from the module proxy.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.request
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient

from raykube.api.crd import load_generated
from raykube.cli.serveclient import CLIENT_POD, parse_log, window
from raykube.kube.client import Kube
from raykube.runtime.crds import install_crds
from raykube.runtime.manager import Manager
from raykube.sandbox import versions
from raykube.sandbox.conformance import Release, build_optional, release
from raykube.sandbox.ports import Ports
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.integration.test_kuberay_swap import rayservice_example
from tests.integration.test_kuberay_swap import snapshot as swap_snapshot
from tests.integration.test_process_runtime import create
from tests.integration.test_rayjob import DONE, IMAGE, job_status, rayjob
from tests.integration.test_rayservice import service_status, wait_ready
from tests.integration.test_serve import SERVE_READY, serve_app

TARGET = "1.7.0"
PASSES = {"raycluster": 3, "rayjob": 5, "rayservice": 5}  # passes over each kind before a step's snapshot
# The gates both KubeRay releases know, at v1.7.0's defaults for the objects made here (RayCronJob plays no part).
GATES = "RayClusterStatusConditions=true,RayJobDeletionPolicy=true,RayMultiHostIndexing=true"


def recreate_cluster(name: str) -> dict[str, Any]:
    head = {
        "name": "ray-head",
        "image": IMAGE,
        "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "1Gi"}},
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": IMAGE.rpartition(":")[2],
            "upgradeStrategy": {"type": "Recreate"},
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
        },
    }


def kuberay_argv(rel: Release, kubeconfig: str, namespace: str, metrics: int) -> list[str]:
    return [
        str(versions.binary(rel.operator)),
        f"--kubeconfig={kubeconfig}",
        f"--watch-namespace={namespace}",
        "--enable-leader-election=false",
        "--use-kubernetes-proxy",
        f"--metrics-addr=127.0.0.1:{metrics}",
        "--health-probe-bind-address=127.0.0.1:0",
        f"--feature-gates={GATES}",
    ]


def reconciles(metrics_text: str) -> dict[str, float]:
    """controller-runtime's ``controller_runtime_reconcile_total`` summed per controller (``raycluster``, ...)."""
    totals: dict[str, float] = {}
    for line in metrics_text.splitlines():
        match = re.match(r"controller_runtime_reconcile_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$", line)
        if not match:
            continue
        controller = re.search(r'controller="([^"]+)"', match["labels"])
        if controller:
            totals[controller[1]] = totals.get(controller[1], 0.0) + float(match["value"])
    return totals


def enough(done: dict[str, float]) -> bool | NotYet:
    short = {kind: done.get(kind, 0) for kind, least in PASSES.items() if done.get(kind, 0) < least}
    return True if not short else NotYet(f"passes so far: {done}")


async def install(proc: ProcessSandbox, crds: dict[str, dict[str, Any]]) -> None:
    installer = Kube.from_config(proc.kubeconfig)
    try:
        await install_crds(installer, crds)
    finally:
        await installer.close()


def release_crds(rel: Release) -> dict[str, dict[str, Any]]:
    return {
        str(doc["metadata"]["name"]): doc
        for path in sorted(rel.crd_dir().glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    }


async def run_kuberay(proc: ProcessSandbox, rel: Release, ns: str, then: Callable[[], Awaitable[float]]) -> float:
    """KubeRay ``rel``'s operator on this namespace until it has made its passes over every kind, then ``then()``;
    the operator is stopped either way."""
    port = Ports.free().etcd
    name = f"kuberay-{rel.version}"
    await proc.sandbox.start_extra(name, kuberay_argv(rel, str(proc.kubeconfig), ns, port), env=dict(os.environ))
    try:

        async def passes() -> bool | NotYet:
            if proc.sandbox.running_extra(name) is None:
                raise AssertionError(f"KubeRay v{rel.version} exited: {proc.sandbox.layout.log(name)}")
            try:
                text = await asyncio.to_thread(
                    lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
                )
            except OSError as exc:
                return NotYet(f"metrics: {exc}")
            return enough(reconciles(text))

        await wait_for(passes, SERVE_READY, what=f"KubeRay v{rel.version}'s passes over every kind")
        return await then()
    finally:
        await proc.sandbox.stop_extra(name)


def snapshot(proc: ProcessSandbox, ns: str) -> dict[str, Any]:
    """test_kuberay_swap's snapshot (RayClusters, Pods with restarts, Services) and the submitter Jobs."""
    jobs = json.loads(proc.kubectl("get", "jobs", "-n", ns, "-o", "json").stdout)["items"]
    return {**swap_snapshot(proc, ns), "jobs": sorted((x["metadata"]["name"], x["metadata"]["uid"]) for x in jobs)}


def warnings_since(proc: ProcessSandbox, ns: str, since: float) -> list[str]:
    """Warning events (core/v1 view: it shows events.k8s.io/v1 ones too) last seen at or after ``since``."""
    found = []
    for event in json.loads(proc.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]:
        if event.get("type") != "Warning":
            continue
        stamp = event.get("lastTimestamp") or event.get("eventTime") or event["metadata"]["creationTimestamp"]
        seen = time.mktime(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        if seen >= since - 1:
            who = event.get("reportingComponent") or (event.get("source") or {}).get("component", "")
            found.append(f"{who} {event['involvedObject'].get('kind')}/{event['involvedObject'].get('name')}: "
                         f"{event.get('reason')}: {event.get('message')}")  # fmt: skip
    return found


async def job_running(pkube: AsyncClient, ns: str, name: str) -> dict[str, Any]:
    async def running() -> dict[str, Any] | NotYet:
        status = await job_status(pkube, ns, name)
        return status if status.get("jobStatus") == "RUNNING" else NotYet(json.dumps(status, default=str)[:300])

    result: dict[str, Any] = await wait_for(running, DONE, what=f"RayJob {ns}/{name} RUNNING")
    return result


class Swap:
    """The objects of one swap and what is checked at each step."""

    def __init__(self, proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
        self.proc, self.pkube, self.ns = proc, pkube, ns
        self.before: dict[str, Any] = {}
        self.service: dict[str, Any] = {}
        self.job: dict[str, Any] = {}

    def answers(self) -> list[Any]:
        return parse_log(self.proc.kubectl("logs", "-n", self.ns, CLIENT_POD).stdout)

    async def answered(self, since: float, what: str, count: int = 20) -> float:
        async def enough_answers() -> float | NotYet:
            good = [a for a in self.answers() if a.ok and a.sent >= since]
            return good[count - 1].done if len(good) >= count else NotYet(f"{len(good)} answers since {since}")

        done: float = await wait_for(enough_answers, 120, what=what)
        return done

    async def make(self, rel: Release) -> None:
        """KubeRay ``rel`` with its own CRDs makes the objects and brings them up; then it is stopped."""
        await install(self.proc, release_crds(rel))
        service, client = rayservice_example(self.ns)
        name, port = f"kuberay-{rel.version}", Ports.free().etcd
        argv = kuberay_argv(rel, str(self.proc.kubeconfig), self.ns, port)
        await self.proc.sandbox.start_extra(name, argv, env=dict(os.environ))
        try:
            await create(self.pkube, self.ns, serve_app(self.ns))
            await create(self.pkube, self.ns, service)
            await create(self.pkube, self.ns, recreate_cluster("recreate"))
            sleeper = "python -c \"import time; print('working', flush=True); time.sleep(1800)\""
            await create(self.pkube, self.ns, rayjob("swap-job", sleeper))
            self.service = await wait_ready(self.pkube, self.ns, "rayservice-demo")
            self.job = await job_running(self.pkube, self.ns, "swap-job")
            await create(self.pkube, self.ns, client)
            await self.answered(0.0, f"the client answered under KubeRay v{rel.version}")
            self.before = snapshot(self.proc, self.ns)
        finally:
            assert await self.proc.sandbox.stop_extra(name), f"KubeRay v{rel.version}'s operator was not running"

    async def unchanged(self, step: str) -> None:
        assert snapshot(self.proc, self.ns) == self.before, f"{step}: objects changed"
        job = await job_status(self.pkube, self.ns, "swap-job")
        assert (job.get("jobStatus"), job.get("jobId")) == ("RUNNING", self.job["jobId"]), (step, job)
        final = await service_status(self.pkube, self.ns, "rayservice-demo")
        active = final["activeServiceStatus"]["rayClusterName"]
        assert active == self.service["activeServiceStatus"]["rayClusterName"], step
        assert not (final.get("pendingServiceStatus") or {}).get("rayClusterName"), (step, final)
        ready = next(c for c in final["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True", (step, ready)

    async def under_raykube(self) -> None:
        """raykube, with its CRDs (v1.7.0's), on the same objects, until it has made its passes."""
        await install(self.proc, load_generated())
        kube = Kube.from_config(self.proc.kubeconfig)
        manager = Manager(kube, namespaces=[self.ns], use_kubernetes_proxy=True)
        await asyncio.wait_for(manager.start(), 60)
        try:
            controllers = {ctl.name: ctl for ctl in manager.controllers}

            async def passes() -> bool | NotYet:
                return enough({n: float(ctl.stats.total) for n, ctl in controllers.items()})

            await wait_for(passes, SERVE_READY, what="raykube's passes over every kind")
            await self.answered(time.time(), "the client answered under raykube")
            await self.unchanged("under raykube")
        finally:
            await manager.stop()
            await kube.close()


@pytest.mark.long
@pytest.mark.timeout(3000)
@pytest.mark.parametrize("maker", ["1.6.2", TARGET])
async def test_objects_made_by_kuberay_survive_a_swap_to_raykube_and_back_to_kuberay_v170(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, maker: str
) -> None:
    made_by, target = release(maker), release(TARGET)
    for rel in (made_by, target):
        await asyncio.to_thread(build_optional, lambda _: None, (rel.operator,), None, rel)
    swap = Swap(proc, pkube, ns)
    await swap.make(made_by)
    swapped = time.time()
    await swap.under_raykube()
    await install(proc, release_crds(target))

    async def check() -> float:
        end = await swap.answered(time.time(), f"the client answered under KubeRay v{TARGET}")
        await swap.unchanged(f"back under KubeRay v{TARGET}")
        return end

    end = await run_kuberay(proc, target, ns, check)
    assert warnings_since(proc, ns, swapped) == []
    seen = window(swap.answers(), swapped - 30, end)
    assert seen["requests"] > 100 and seen["failed"] == 0, seen


def test_reconcile_totals_are_read_per_controller() -> None:
    text = "\n".join(
        (
            "# TYPE controller_runtime_reconcile_total counter",
            'controller_runtime_reconcile_total{controller="raycluster",result="success"} 4',
            'controller_runtime_reconcile_total{controller="raycluster",result="requeue"} 2',
            'controller_runtime_reconcile_total{controller="rayjob",result="success"} 1',
            'controller_runtime_reconcile_errors_total{controller="rayjob"} 9',
        )
    )
    assert reconciles(text) == {"raycluster": 6.0, "rayjob": 1.0}
    assert isinstance(enough({"raycluster": 6.0, "rayjob": 1.0}), NotYet)
    assert enough({"raycluster": 3.0, "rayjob": 5.0, "rayservice": 5.0}) is True

"""Replacing KubeRay v1.6.1 by raykube under a serving RayService changes nothing a user sees.

KubeRay's own operator (built from the Go module proxy) brings a RayService with the local Serve app to Ready on
process nodes while a client in the cluster calls its serve Service every 0.1 s. Then KubeRay's operator is stopped
and raykube's started on the same objects, as a user swapping operators would. Once raykube has reconciled the
RayService several times: the same RayCluster (uid), no pending cluster, the same Pods (uids, no restart), the same
Services (uid, ClusterIP, selector), the RayService still Ready, and the client never failed. This holds because
raykube computes KubeRay's cluster hash byte for byte (``golang/gojson.py``); with a different hash every
RayService would be upgraded to a new cluster at the swap.

Marked long (``make conformance``): it needs KubeRay's operator binary (built here if missing, about 2 minutes).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient

from raykube.api import constants as c
from raykube.api.crd import load_generated
from raykube.cli.serveclient import CLIENT_POD, parse_log, window
from raykube.kube.client import Kube
from raykube.runtime.crds import install_crds
from raykube.runtime.manager import Manager
from raykube.sandbox import versions
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.integration.test_process_runtime import create
from tests.integration.test_rayservice import service_status, wait_ready
from tests.integration.test_serve import EXAMPLES, SERVE_READY, serve_app

KUBERAY = "kuberay-operator"
# The gates KubeRay v1.6.1's operator knows (it refuses the six v1.7.0 added); they get raykube's values.
KUBERAY_V161_GATES = frozenset(
    {"RayClusterStatusConditions", "RayJobDeletionPolicy", "RayMultiHostIndexing", "RayServiceIncrementalUpgrade",
     "RayCronJob"}
)  # fmt: skip


def kuberay_argv(kubeconfig: str, namespace: str) -> list[str]:
    """KubeRay's operator on the host: the sandbox's admin kubeconfig, this namespace only, no leader election,
    its dashboard calls through the API server (host processes do not resolve cluster DNS)."""
    gates = ",".join(
        f"{gate}={str(on).lower()}" for gate, on in c.FEATURE_GATE_DEFAULTS.items() if gate in KUBERAY_V161_GATES
    )
    return [
        str(versions.binary(versions.KUBERAY_OPERATOR)),
        f"--kubeconfig={kubeconfig}",
        f"--watch-namespace={namespace}",
        "--enable-leader-election=false",
        "--use-kubernetes-proxy",
        "--metrics-addr=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        f"--feature-gates={gates}",
    ]


def rayservice_example(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    service = yaml.safe_load((EXAMPLES / "07-rayservice.yaml").read_text())
    client = yaml.safe_load((EXAMPLES / "serve" / "client.yaml").read_text())
    for body in (service, client):
        body["metadata"]["namespace"] = namespace
    return service, client


def snapshot(proc: ProcessSandbox, ns: str) -> dict[str, Any]:
    """What must not change: each object's uid, and what users and tools read from it."""

    def items(kind: str) -> list[dict[str, Any]]:
        return list(json.loads(proc.kubectl("get", kind, "-n", ns, "-o", "json").stdout)["items"])

    return {
        "rayclusters": sorted((x["metadata"]["name"], x["metadata"]["uid"]) for x in items("rayclusters")),
        "pods": sorted(
            (
                x["metadata"]["name"],
                x["metadata"]["uid"],
                tuple(s.get("restartCount", 0) for s in x["status"].get("containerStatuses") or []),
            )
            for x in items("pods")
        ),
        "services": sorted(
            (
                x["metadata"]["name"],
                x["metadata"]["uid"],
                x["spec"].get("clusterIP"),
                json.dumps(x["spec"].get("selector"), sort_keys=True),
            )
            for x in items("services")
        ),
    }


@pytest.mark.long
@pytest.mark.timeout(1500)
async def test_swapping_kuberay_for_raykube_under_a_serving_rayservice_changes_nothing(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str
) -> None:
    from raykube.sandbox.conformance import build_optional  # noqa: PLC0415

    await asyncio.to_thread(build_optional, lambda _: None, (versions.KUBERAY_OPERATOR,))
    installer = Kube.from_config(proc.kubeconfig)
    try:
        await install_crds(installer, load_generated())
    finally:
        await installer.close()

    await proc.sandbox.start_extra(KUBERAY, kuberay_argv(str(proc.kubeconfig), ns), env=dict(os.environ))
    try:
        service, client = rayservice_example(ns)
        await create(pkube, ns, serve_app(ns))
        await create(pkube, ns, service)
        status = await wait_ready(pkube, ns, "rayservice-demo")
        await create(pkube, ns, client)

        def answers() -> list[Any]:
            return parse_log(proc.kubectl("logs", "-n", ns, CLIENT_POD).stdout)

        async def answered(since: float, count: int = 20) -> float | NotYet:
            good = [a for a in answers() if a.ok and a.sent >= since]
            return good[count - 1].done if len(good) >= count else NotYet(f"{len(good)} answers since {since}")

        await wait_for(lambda: answered(0.0), 120, what="the client answered under KubeRay")
        before = snapshot(proc, ns)
    finally:
        assert await proc.sandbox.stop_extra(KUBERAY), "KubeRay's operator was not running"
    swapped = time.time()

    client_kube = Kube.from_config(proc.kubeconfig)
    manager = Manager(client_kube, namespaces=[ns], use_kubernetes_proxy=True)
    await asyncio.wait_for(manager.start(), 60)
    try:
        controllers = {ctl.name: ctl for ctl in manager.controllers}

        async def settled() -> bool | NotYet:
            # a fresh operator: its first passes (the initial list) count; KubeRay's RayService requeue is 2 s
            done = {name: ctl.stats.total for name, ctl in controllers.items()}
            if done.get("rayservice", 0) >= 5 and done.get("raycluster", 0) >= 1:
                return True
            return NotYet(f"passes since the swap: {done}")

        await wait_for(settled, SERVE_READY, what="raykube's passes over the RayService")
        settled_at = time.time()
        end = await wait_for(lambda: answered(settled_at), 60, what="the client answered under raykube")
        after = snapshot(proc, ns)
        final = await service_status(pkube, ns, "rayservice-demo")
    finally:
        await manager.stop()
        await client_kube.close()

    assert after == before
    assert final["activeServiceStatus"]["rayClusterName"] == status["activeServiceStatus"]["rayClusterName"]
    assert not (final.get("pendingServiceStatus") or {}).get("rayClusterName")
    ready = next(c for c in final["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True", ready
    seen = window(answers(), swapped - 30, end)
    assert seen["requests"] > 50 and seen["failed"] == 0, seen

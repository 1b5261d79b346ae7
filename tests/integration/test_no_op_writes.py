"""A settled RayCluster costs no API writes: passes that find nothing to do write nothing (issue 10's rule, which
the scale benchmark also measures at 1,000 clusters)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lightkube import AsyncClient
from lightkube.resources.core_v1 import Pod

from raykube.api.rbac import LEADER_ELECTION_RULES, OPERATOR_RULES
from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.resources import PODS
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import CLUSTER, create_seed_dependencies, seed_cluster, wait_ready

WRITES = {"create", "update", "patch", "delete", "deletecollection"}


class Requests:
    """Every request the operator's client sends, as (verb, resource, code)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, int]] = []

    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None:
        self.seen.append((verb, resource, code))

    def writes(self, since: int = 0) -> list[tuple[str, str, int]]:
        return [r for r in self.seen[since:] if r[0] in WRITES and r[1] != "leases.coordination.k8s.io"]


@pytest.fixture
async def counted(kubeconfig: Path, namespace: str, ray_crds: list[str]) -> AsyncIterator[tuple[Manager, Requests]]:
    """The operator in-process with every request it sends recorded (its client keeps to its RBAC rules)."""
    requests = Requests()
    client = Kube.from_config(kubeconfig, observer=requests, rules=OPERATOR_RULES + LEADER_ELECTION_RULES)
    manager = Manager(client, namespaces=[namespace], reconcile_concurrency=4)
    await asyncio.wait_for(manager.start(), 60)
    try:
        yield manager, requests
    finally:
        await manager.stop()
        await client.close()


async def test_a_settled_cluster_is_reconciled_without_writes(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, counted: tuple[Manager, Requests]
) -> None:
    manager, requests = counted
    api = runtime_kube  # the test's own requests go through a client of its own, not the operator's
    await create_seed_dependencies(kube, namespace)
    await api.create(RAYCLUSTERS, seed_cluster(), namespace)
    await wait_ready(api, namespace, workers=2)
    key = (namespace, CLUSTER)

    async def one_pass() -> int:
        """Force one more reconcile of the cluster; the writes it made."""
        before, mark = manager.stats.total, len(requests.seen)
        manager.queue.add(key)

        def passed() -> bool | NotYet:
            done = manager.stats.total > before and not manager.queue.processing and not len(manager.queue)
            return True if done else NotYet(f"{manager.stats.total - before} passes since the request")

        await wait_for(passed, 30, what="a reconcile pass of the RayCluster")
        return len(requests.writes(mark))

    async def settled() -> bool | NotYet:
        writes = await one_pass()
        return True if writes == 0 else NotYet(f"the last pass still wrote {writes} times")

    await wait_for(settled, 60, what="a pass with nothing left to do")
    cluster_version = (await api.get(RAYCLUSTERS, CLUSTER, namespace))["metadata"]["resourceVersion"]
    mark = len(requests.seen)
    for _ in range(5):
        await one_pass()
    # A child's event (a label nobody manages) also starts a pass; it must not write either.
    head = (await api.list(PODS, namespace, label_selector="ray.io/node-type=head")).items[0]["metadata"]["name"]
    await kube.patch(Pod, head, {"metadata": {"labels": {"example.com/touched": "yes"}}}, namespace=namespace)
    await one_pass()

    assert requests.writes(mark) == []
    assert (await api.get(RAYCLUSTERS, CLUSTER, namespace))["metadata"]["resourceVersion"] == cluster_version

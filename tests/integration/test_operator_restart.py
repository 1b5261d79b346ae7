"""Restart safety: an operator killed with SIGKILL in the middle of creating 20 clusters, then started again, ends
with exactly the desired Pods: no duplicates (the fresh cache is listed before anything is created) and no orphans."""

from __future__ import annotations

import collections
import signal
from typing import Any

import pytest

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.resources import PODS
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import seed_cluster
from tests.ledger import FULL, Ledger

CLUSTERS = 20
WORKERS = 2
# The repeated-kill scenario: (clusters, kills) per profile.
BURST_CLUSTERS, KILLS = (50, 10) if FULL else (10, 3)


def tiny_cluster(name: str, workers: int) -> dict[str, Any]:
    """The seed cluster without its volumes and env sources, with small requests (many fit on the sandbox)."""
    body = seed_cluster(name, workers=workers)
    for template in (body["spec"]["headGroupSpec"]["template"], body["spec"]["workerGroupSpecs"][0]["template"]):
        template["spec"].pop("volumes")
        container = template["spec"]["containers"][0]
        container.pop("volumeMounts")
        container.pop("envFrom")
        tiny = {"cpu": "100m", "memory": "128Mi"}
        container["resources"] = {"limits": tiny, "requests": tiny}
    return body


async def test_sigkill_mid_creation_then_restart_ends_with_exactly_the_desired_pods(
    runtime_kube: Kube, namespace: str, start_operator: object
) -> None:
    start = start_operator
    assert callable(start)
    # Slow the first operator down (5 requests/s) so the kill lands in the middle of creating Pods.
    first = start("--qps", "5", "--burst", "1", "--enable-leader-election=false")
    for index in range(CLUSTERS):  # no PVC/ConfigMap/Secret needed; 60 Pods must fit on the sandbox's nodes
        await runtime_kube.create(RAYCLUSTERS, tiny_cluster(f"c{index:02d}", WORKERS), namespace)

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


async def _live_pods(kube: Kube, namespace: str) -> list[dict[str, Any]]:
    return [p for p in (await kube.list(PODS, namespace)).items if not p["metadata"].get("deletionTimestamp")]


async def converged(
    kube: Kube, namespace: str, desired: dict[str, int], ignore: frozenset[str] = frozenset()
) -> dict[tuple[str, str], int] | NotYet:
    """The Pod counts per (cluster, node type) once every cluster in ``desired`` (name -> workers) is ready with
    exactly 1 head and its workers and no other Pod (but those of the clusters in ``ignore``) lives in the
    namespace; NotYet (saying what is off) before."""
    clusters = {c["metadata"]["name"]: c for c in (await kube.list(RAYCLUSTERS, namespace)).items}
    ready = [n for n in desired if ((clusters.get(n) or {}).get("status") or {}).get("state") == "ready"]
    pods = [p for p in await _live_pods(kube, namespace) if p["metadata"]["labels"]["ray.io/cluster"] not in ignore]
    counts = collections.Counter(
        (p["metadata"]["labels"]["ray.io/cluster"], p["metadata"]["labels"]["ray.io/node-type"]) for p in pods
    )
    wanted = {(n, kind): k for n, w in desired.items() for kind, k in (("head", 1), ("worker", w)) if k}
    if len(ready) == len(desired) and dict(counts) == wanted:
        return dict(counts)
    wrong = {k: (counts.get(k, 0), wanted.get(k, 0)) for k in set(counts) | set(wanted)
             if counts.get(k, 0) != wanted.get(k, 0)}  # fmt: skip
    return NotYet(f"{len(ready)}/{len(desired)} ready; Pods (have, want) off: {dict(list(wrong.items())[:6])}")


@pytest.mark.reliability("Operator SIGKILL, again and again, while clusters scale")
async def test_repeated_sigkills_while_clusters_scale_leave_exactly_the_desired_pods(
    runtime_kube: Kube, namespace: str, start_operator: object, ledger: Ledger
) -> None:
    """SIGKILL the operator again and again at moments it is mid-work (each after it created more Pods), while
    RayClusters are created, scaled up and down, and deleted; restart it each time. In the end: every cluster ready
    with exactly its desired Pods, no duplicate, no Pod of a deleted cluster, none the spec wanted deleted."""
    start = start_operator
    assert callable(start)
    kube = runtime_kube
    flags = ("--qps", "20", "--burst", "5", "--enable-leader-election=false")
    operator = start(*flags)
    desired = {f"b{i:02d}": 1 + (i % 3) for i in range(BURST_CLUSTERS)}
    for name, workers in desired.items():
        await kube.create(RAYCLUSTERS, tiny_cluster(name, workers), namespace)
    deleted: list[str] = []
    kills = 0
    for round_ in range(KILLS):
        before = len(await _live_pods(kube, namespace))

        async def progressed(before: int = before) -> int | NotYet:
            count = len(await _live_pods(kube, namespace))
            return count if count != before else NotYet(f"{count} Pods, as at the last kill")

        await wait_for(progressed, 120, what=f"the operator to create or delete Pods before kill {round_ + 1}")
        operator.send_signal(signal.SIGKILL)
        operator.wait(10)
        kills += 1
        # While it is down: scale some clusters up, some down, and delete one.
        for offset, name in enumerate(sorted(desired)[round_ :: max(1, KILLS)][:4]):
            cluster = await kube.get(RAYCLUSTERS, name, namespace)
            workers = max(0, desired[name] + (2 if offset % 2 == 0 else -1))
            cluster["spec"]["workerGroupSpecs"][0]["replicas"] = workers
            await kube.replace(RAYCLUSTERS, name, cluster, namespace)
            desired[name] = workers
        victim = sorted(desired)[-1]
        await kube.delete(RAYCLUSTERS, victim, namespace)
        deleted.append(victim)
        del desired[victim]
        operator = start(*flags)

    counts = await wait_for(
        lambda: converged(kube, namespace, desired), 240, what="every cluster ready with exactly its desired Pods"
    )
    assert operator.poll() is None, "the last operator exited"
    assert not any(cluster in deleted for cluster, _ in counts), "Pods of a deleted cluster remain"
    ledger.record(
        "Operator SIGKILL, again and again, while clusters scale",
        f"{BURST_CLUSTERS} RayClusters (1 head + 1-3 workers, kwok) created at once; the operator SIGKILLed {kills} "
        "times, each after it had changed the Pod count; while it was down 4 clusters scaled up or down and one "
        "deleted; restarted each time",
        kills,
        "every remaining cluster ready with exactly its desired head and workers (no duplicate, none the spec "
        "wanted deleted), no Pod of a deleted cluster, the last operator still running",
        f"converged: {len(desired)} clusters, {sum(counts.values())} Pods as desired; {len(deleted)} deleted",
    )

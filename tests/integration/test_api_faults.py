"""A misbehaving API server: throttling (429 + Retry-After), 5xx, refused connections and slow answers, through
a fault proxy (tests/integration/faultproxy.py) between the operator process and the sandbox's kube-apiserver.

While each fault lasts, clusters are scaled behind the operator's back; the proxy counts every request the operator
sends. Checked: a ``Retry-After`` is honoured (no watch is sent again sooner), the operator backs off instead of
looping (its request rate stays far under its own QPS limit, and falls while the fault lasts), it never exits, and once
the server heals every cluster converges to exactly its desired Pods.
"""

from __future__ import annotations

import collections
import itertools
import math
import time
from pathlib import Path
from typing import Any

import pytest

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import EVENTS, PODS
from raykube.waiting import NotYet, wait_for
from tests.integration.faultproxy import Delay, Fail, Fault, FaultProxy, Refuse, Seen, Throttle, fault_proxy
from tests.integration.test_operator_restart import _live_pods, converged, tiny_cluster
from tests.ledger import FULL, Ledger
from tests.support import RunningSandbox

CLUSTERS = 10 if FULL else 4
WINDOW = 12.0 if FULL else 4.0  # seconds each fault lasts
QPS = 100 if FULL else 50  # the operator's own client limit in the fault test: a hot loop would run at it


def _describe(fault: Fault) -> str:
    match fault:
        case Throttle(retry_after=seconds):
            return f"429 with Retry-After {seconds}s"
        case Fail(status=status, retry_after=None):
            return f"{status} without Retry-After"
        case Fail(status=status, retry_after=seconds):
            return f"{status} with Retry-After {seconds}s"
        case Refuse():
            return "connections closed unanswered"
        case Delay(seconds=seconds):
            return f"every answer {seconds:g}s late"
    return "healthy"


def _watch_key(seen: Seen) -> tuple[str, str, str]:
    return (seen.path, seen.query.get("labelSelector", ""), seen.query.get("fieldSelector", ""))


def _earliest_rewatch(requests: list[Seen]) -> float | None:
    """The shortest gap between a refused watch and the next watch of the same resource."""
    by_key: dict[tuple[str, str, str], list[Seen]] = collections.defaultdict(list)
    for seen in requests:
        if seen.watch:
            by_key[_watch_key(seen)].append(seen)
    gaps = [b.at - a.at for seq in by_key.values() for a, b in itertools.pairwise(seq) if a.status >= 400]
    return min(gaps) if gaps else None


async def _scale(kube: Kube, namespace: str, name: str, replicas: int) -> None:
    """Set the first group's replicas as a user's client does: read, change, write, again on a 409 (the operator
    may write the cluster's status between the read and the write)."""

    async def written() -> bool | NotYet:
        cluster = await kube.get(RAYCLUSTERS, name, namespace)
        cluster["spec"]["workerGroupSpecs"][0]["replicas"] = replicas
        try:
            await kube.replace(RAYCLUSTERS, name, cluster, namespace)
        except ApiError as exc:
            if exc.conflict:
                return NotYet(f"409 on {name}: {exc.message}")
            raise
        return True

    await wait_for(written, 30, what=f"RayCluster {name} scaled to {replicas}")


@pytest.mark.reliability("A slow, throttling, failing or refusing API server")
async def test_a_throttling_failing_refusing_and_slow_api_server_is_backed_off_from_and_recovered_from(
    runtime_kube: Kube, kubeconfig: Path, namespace: str, start_operator: Any, tmp_path: Path, ledger: Ledger
) -> None:
    kube = runtime_kube
    async with fault_proxy(kubeconfig) as proxy:
        faulty = proxy.kubeconfig(tmp_path / "faulty.kubeconfig", namespace)
        operator = start_operator(
            "--enable-leader-election=false", "--qps", str(QPS), "--burst", str(QPS), kubeconfig=faulty
        )
        desired = {f"f{i}": 1 for i in range(CLUSTERS)}
        for name, workers in desired.items():
            await kube.create(RAYCLUSTERS, tiny_cluster(name, workers), namespace)
        await wait_for(lambda: converged(kube, namespace, desired), 120, what="every cluster ready before the faults")

        outcomes: list[str] = []
        details: list[tuple[str, str]] = []
        faults: list[Fault] = [Throttle(2), Fail(503), Fail(500, retry_after=1), Refuse(), Delay(1.0)]
        for round_, fault in enumerate(faults):
            started = time.monotonic()
            proxy.fault = fault
            proxy.cut()  # open watches drop too, so they must come back through the fault
            # Behind the operator's back: scale two clusters (one up, one down).
            for offset, name in enumerate(sorted(desired)[round_ % CLUSTERS :][:2]):
                desired[name] = 2 if offset == 0 else 0
                await _scale(kube, namespace, name, desired[name])

            def window_over(started: float = started) -> bool | NotYet:
                met = [s for s in proxy.since(started) if s.fault != "NoneType"]
                if time.monotonic() - started < WINDOW or not met:
                    return NotYet(f"{len(met)} requests met the fault")
                return True

            await wait_for(window_over, WINDOW + 60, what=f"{WINDOW:g}s of {_describe(fault)}")
            proxy.fault = None
            healed = time.monotonic()
            during = proxy.since(started, healed)
            await wait_for(
                lambda: converged(kube, namespace, desired), 180, what=f"convergence after {_describe(fault)}"
            )
            recovered = time.monotonic() - healed
            assert operator.poll() is None, f"the operator exited during {_describe(fault)}"

            seconds = healed - started
            rate = len(during) / seconds
            half = started + seconds / 2
            first, second = (sum(1 for s in during if s.at < half), sum(1 for s in during if s.at >= half))
            assert rate < QPS / 2, f"{_describe(fault)}: {rate:.1f} requests/s, near the QPS limit: a hot loop"
            # Each informer backs off exponentially from 0.2 s: a few tries per resource, not one per moment.
            per_resource = collections.Counter(_watch_key(s) for s in during if s.method == "GET")
            worst = max(per_resource.values(), default=0)
            assert worst <= 3 + math.log2(seconds / 0.2), f"{_describe(fault)}: {worst} tries of one resource"
            retry = fault.retry_after if isinstance(fault, Throttle | Fail) else None
            if retry is not None:
                # The server sets the pace: a try, then one every Retry-After at most (more tries in the second half
                # than in the first is that pace, with a window only a few Retry-Afters long, not a hot loop).
                assert worst <= 2 + seconds / retry, f"{_describe(fault)}: {worst} tries of one resource"
            elif not isinstance(fault, Delay):
                assert second <= first + 3, f"{_describe(fault)}: {first} then {second} requests: no back-off"
            earliest = _earliest_rewatch(during)
            if retry is not None and earliest is not None:
                assert earliest >= retry - 0.05, f"{_describe(fault)}: a watch came back after {earliest:.2f}s"
            writes = sum(1 for s in during if s.write)
            line = (
                f"{len(during)} requests in {seconds:.0f}s ({rate:.1f}/s; {first} in the first half, {second} in the "
                f"second; at most {worst} to one resource; {writes} writes)"
                + (f", watches again after ≥ {earliest:.1f}s" if retry is not None and earliest is not None else "")
                + f"; converged {recovered:.1f}s after it healed"
            )
            details.append((_describe(fault), line))
            outcomes.append(f"{_describe(fault)}: {rate:.1f} req/s, recovered in {recovered:.0f}s")

    ledger.record(
        "A slow, throttling, failing or refusing API server",
        f"{CLUSTERS} RayClusters (kwok), the operator (QPS {QPS}) talking through a fault proxy; 5 faults of "
        f"{WINDOW:g}s each (429 + Retry-After, 503, 500 + Retry-After, connections closed, 1 s delay), open watches "
        "cut at the start of each, two clusters scaled behind the operator's back during each",
        len(faults),
        "request rate under half the QPS limit and falling while the fault lasts (without Retry-After), at most 3 + "
        "log2(window / 0.2 s) tries per resource (exponential back-off, no hot loop) and with Retry-After at most "
        "2 + window / Retry-After; no watch sent again sooner than Retry-After; the "
        "operator never exits; afterwards every cluster has exactly its desired Pods",
        "; ".join(outcomes),
        details=details,
    )


@pytest.mark.reliability("kube-apiserver restart and etcd compaction mid-burst")
async def test_a_kube_apiserver_restart_with_etcd_compacted_makes_every_watch_relist_and_nothing_is_done_twice(
    sandbox: RunningSandbox,
    runtime_kube: Kube,
    kubeconfig: Path,
    namespace: str,
    start_operator: Any,
    tmp_path: Path,
    ledger: Ledger,
) -> None:
    """Mid-burst, the operator is cut off; behind its back a RayCluster is deleted, a worker Pod is deleted and a
    cluster scaled; kube-apiserver crashes (SIGKILL) and starts again, with etcd compacted to its newest revision
    while it is down. The
    operator's watches then resume from versions that no longer exist: each ends with 410 Gone and its informer
    relists, which is how the missed deletions are seen. Nothing may be created twice."""
    kube = runtime_kube
    async with fault_proxy(kubeconfig) as proxy:
        faulty = proxy.kubeconfig(tmp_path / "faulty.kubeconfig", namespace)
        operator = start_operator("--enable-leader-election=false", kubeconfig=faulty)
        desired = {f"r{i:02d}": 1 for i in range(CLUSTERS)}
        for name, workers in desired.items():
            await kube.create(RAYCLUSTERS, tiny_cluster(name, workers), namespace)
        await wait_for(lambda: converged(kube, namespace, desired), 120, what="the first clusters ready")
        burst = {f"s{i:02d}": 2 for i in range(CLUSTERS)}  # the burst the restart lands in
        for name, workers in burst.items():
            await kube.create(RAYCLUSTERS, tiny_cluster(name, workers), namespace)
        desired |= burst
        proxy.fault = Refuse()
        proxy.cut()
        cut_at = time.monotonic()

        # Behind its back: a cluster deleted, a worker Pod deleted, a cluster scaled up.
        doomed, hurt, grown = sorted(desired)[:3]
        await kube.delete(RAYCLUSTERS, doomed, namespace)
        del desired[doomed]
        workers = [p for p in await _live_pods(kube, namespace)
                   if p["metadata"]["labels"].get("ray.io/cluster") == hurt
                   and p["metadata"]["labels"].get("ray.io/node-type") == "worker"]  # fmt: skip
        await kube.delete(PODS, workers[0]["metadata"]["name"], namespace)
        desired[grown] = 3
        await _scale(kube, namespace, grown, 3)

        compacted: list[int] = []

        async def compact() -> None:
            compacted.append(await sandbox.sandbox.compact_etcd())

        down_at = time.monotonic()
        await sandbox.sandbox.restart("kube-apiserver", crash=True, while_down=compact)
        restart_seconds = time.monotonic() - down_at

        before = {p["metadata"]["uid"] for p in await _live_pods(kube, namespace)}
        proxy.fault = None
        healed = time.monotonic()
        await wait_for(
            lambda: converged(kube, namespace, desired, ignore=frozenset({doomed})), 180, what="the operator's repair"
        )
        recovered = time.monotonic() - healed
        # The deleted cluster's Pods go with Kubernetes' garbage collector, on its own schedule.
        counts = await wait_for(lambda: converged(kube, namespace, desired), 180, what="the deleted cluster collected")
        collected = time.monotonic() - healed
        assert operator.poll() is None, "the operator exited"

        pod_creates, made, relists, gone = await _nothing_done_twice(proxy, kube, namespace, healed, before)

    ledger.record(
        "kube-apiserver restart and etcd compaction mid-burst",
        f"{CLUSTERS} ready RayClusters and a burst of {CLUSTERS} more; the operator cut off (its watches dropped); "
        "behind its back one RayCluster deleted, a worker Pod deleted, a cluster scaled up; kube-apiserver killed "
        "(SIGKILL), etcd compacted to its newest revision, kube-apiserver started again; then the operator let through",
        1,
        "watches end with 410 Gone and the informers relist; the deleted Pod is made again, the deleted cluster "
        "stays gone; every Pod create succeeds and makes a Pod that was missing (nothing done twice); every cluster "
        "ends with exactly its desired Pods; the operator never exits",
        f"API server down {restart_seconds:.1f}s (etcd compacted at revision {compacted[0]}); {len(gone)} watches "
        f"answered 410, relists {dict(sorted(relists.items()))}; {len(pod_creates)} Pod creates for {len(made)} "
        f"missing Pods, 0 refused; {len(desired)} clusters with their Pods {recovered:.1f}s after the operator was "
        f"let through (cut off for {healed - cut_at:.0f}s); {sum(counts.values())} Pods, exactly those desired, "
        f"once the garbage collector took the deleted cluster's ({collected:.1f}s)",
    )


async def _nothing_done_twice(
    proxy: FaultProxy, kube: Kube, namespace: str, healed: float, before: set[str]
) -> tuple[list[Seen], set[str], collections.Counter[str], list[float]]:
    """After the operator was let through: watches ended with 410, the informers relisted, and every Pod create
    succeeded and made a Pod that was missing (compared with the Pods' uids ``before``)."""
    after = proxy.since(healed)
    made = {p["metadata"]["uid"] for p in await _live_pods(kube, namespace)} - before
    pod_creates = [s for s in after if s.method == "POST" and s.path.endswith("/pods")]
    refused_creates = [s for s in pod_creates if s.status >= 400]
    relists = collections.Counter(  # GETs of a whole collection in the namespace, not watches: lists
        s.path.rsplit("/", 1)[-1] for s in after if s.method == "GET" and not s.watch
        and s.path.split("/")[-2] == namespace
    )  # fmt: skip
    gone = [t for t in proxy.gone if t >= healed]
    assert gone, "no watch ended with 410 Gone: the fault did not happen"
    assert relists["pods"] >= 1 and relists["rayclusters"] >= 1, f"no relist: {dict(relists)}"
    assert not refused_creates, f"creates refused (done twice?): {[(s.path, s.status) for s in refused_creates]}"
    if len(pod_creates) != len(made):  # say which: the Created* Events name every Pod made
        live = {p["metadata"]["name"] for p in await _live_pods(kube, namespace)}
        notes = [str(e.get("note")) for e in (await kube.list(EVENTS, namespace)).items]
        again = [n.rsplit("/", 1)[-1] for n in notes if " Pod " in n and n.rsplit("/", 1)[-1] not in live]
        pytest.fail(f"{len(pod_creates)} Pod creates for {len(made)} new Pods; made and gone again: {again}")
    return pod_creates, made, relists, gone

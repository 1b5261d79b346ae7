"""Leader election under load, audited: two operator processes, each talking to the API server through a proxy of
its own (tests/integration/faultproxy.py), so every write is known by who sent it and when.

1. **SIGTERM the leader** mid-burst: it finishes its in-flight passes, releases the Lease, and the standby takes over
   within a couple of seconds (its retry period), well under the 15 s lease duration.
2. **Partition the leader from its Lease** (only its Lease requests fail; it could still write everything else): it
   must stop writing on its own before the Lease expires for the standby (renew deadline 10 s < lease 15 s), exit 1,
   and the standby takes over after the lease duration.

Both times: no write from a standby, the old leader's last write before the new leader's first (exactly one writer
at every moment), and every cluster ends with exactly its desired Pods.
"""

from __future__ import annotations

import contextlib
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.resources import LEASES, PODS
from raykube.sandbox.ports import Ports
from raykube.waiting import NotYet, wait_for
from tests.integration.faultproxy import FaultProxy, Refuse, Seen, fault_proxy
from tests.integration.test_operator_product import _curl
from tests.integration.test_operator_restart import converged, tiny_cluster
from tests.ledger import FULL, Ledger

CLUSTERS = 30 if FULL else 6
LEASE = "ray-operator-leader"
LEASE_DURATION = 15.0  # controller-runtime's default, raykube's too (raykube.runtime.leader)


async def _is_leader(port: int) -> bool | None:
    """What the replica's /metrics says (None: not answering yet)."""
    code, body = await _curl(f"http://127.0.0.1:{port}/metrics")
    if code != 200:
        return None
    return f'leader_election_master_status{{name="{LEASE}"}} 1.0' in body


async def _reconciles(port: int) -> float:
    _, body = await _curl(f"http://127.0.0.1:{port}/metrics")
    return sum(float(m) for m in re.findall(r"^controller_runtime_reconcile_total\{[^}]*\} (\S+)$", body, re.M))


async def _reconciled(port: int) -> float | NotYet:
    done = await _reconciles(port)
    return done if done > 0 else NotYet("no pass finished yet")


def _writes(proxy: FaultProxy, since: float = 0.0) -> list[Seen]:
    """What this operator changed: every write but its Lease's (Events included)."""
    return [s for s in proxy.since(since) if s.write and "/leases" not in s.path]


class Replica:
    def __init__(self, start: Any, proxy: FaultProxy, tmp_path: Path, namespace: str, name: str) -> None:
        self.port = Ports.free().etcd
        self.proxy = proxy
        self.started = time.monotonic()
        self.process = start(
            "--enable-leader-election=true", f"--leader-election-namespace={namespace}", "--enable-metrics",
            f"--metrics-addr=127.0.0.1:{self.port}",
            kubeconfig=proxy.kubeconfig(tmp_path / f"{name}.kubeconfig", namespace),
        )  # fmt: skip

    async def leading(self) -> bool | NotYet:
        state = await _is_leader(self.port)
        return True if state else NotYet(f"leader: {state}")

    async def standing_by(self) -> bool | NotYet:
        state = await _is_leader(self.port)
        return True if state is False else NotYet(f"leader: {state}")


async def _scale(kube: Kube, namespace: str, desired: dict[str, int], names: list[str]) -> None:
    # A JSON patch of one field, as `kubectl patch` sends it: no resourceVersion, so the leader's status writes in
    # between cannot make it a 409 (a get-then-replace here raced the new leader's first status write in CI).
    for name in names:
        desired[name] += 1
        patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": desired[name]}]
        await kube.patch(RAYCLUSTERS, name, patch, namespace, patch_type="json")


async def _renews_without_reading(proxy: FaultProxy) -> None:
    """While it leads, a renewal is one PUT of the Lease it last wrote (client-go's fast path), not a GET and a PUT."""

    def lease_requests(method: str) -> list[Seen]:
        return [s for s in proxy.since(0.0) if "/leases/" in s.path and s.method == method and not s.watch]

    def renewed_twice() -> int | NotYet:
        puts = len(lease_requests("PUT"))
        return puts if puts >= 2 else NotYet(f"{puts} renewals")

    await wait_for(renewed_twice, 30, what="the leader to renew its Lease twice")
    reads = [s for s in lease_requests("GET") if s.at > lease_requests("PUT")[0].at]
    assert not reads, f"the leader read its Lease {len(reads)} times between renewals"


async def _holder(kube: Kube, namespace: str) -> str:
    lease = await kube.get(LEASES, LEASE, namespace)
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


async def _some_pods(kube: Kube, namespace: str, at_least: int) -> int | NotYet:
    count = len((await kube.list(PODS, namespace)).items)
    return count if count >= at_least else NotYet(f"{count} Pods")


@pytest.mark.reliability("Leader handover and failover under load (two replicas)")
async def test_a_leader_handover_on_sigterm_and_on_a_lost_lease_leaves_exactly_one_writer(
    runtime_kube: Kube, kubeconfig: Path, namespace: str, start_operator: Any, tmp_path: Path, ledger: Ledger
) -> None:
    kube = runtime_kube
    async with contextlib.AsyncExitStack() as stack:
        proxies = [await stack.enter_async_context(fault_proxy(kubeconfig)) for _ in range(3)]
        first = Replica(start_operator, proxies[0], tmp_path, namespace, "first")
        await wait_for(first.leading, 60, what="the first replica to lead")
        second = Replica(start_operator, proxies[1], tmp_path, namespace, "second")
        await wait_for(second.standing_by, 60, what="the second replica to stand by")
        first_identity = await _holder(kube, namespace)

        # 1. SIGTERM the leader in the middle of a burst.
        desired = {f"l{i:02d}": 1 + i % 2 for i in range(CLUSTERS)}
        for name, workers in desired.items():
            await kube.create(RAYCLUSTERS, tiny_cluster(name, workers), namespace)
        await wait_for(lambda: _some_pods(kube, namespace, CLUSTERS), 60, what="the burst under way")
        assert not _writes(second.proxy), "the standby wrote while the other led"
        assert await _reconciles(second.port) == 0, "the standby reconciled (it should only keep its caches warm)"
        # The burst's first passes may all still be creating Pods: wait for one to finish, not for it to have.
        await wait_for(lambda: _reconciled(first.port), 60, what="the leader to finish a pass")
        await _renews_without_reading(first.proxy)
        termed = time.monotonic()
        first.process.send_signal(signal.SIGTERM)

        async def released() -> float | NotYet:
            holder = await _holder(kube, namespace)
            return time.monotonic() if holder != first_identity else NotYet(f"held by {holder}")

        released_at = await wait_for(released, 30, what="the Lease released", interval=0.05, max_interval=0.1)
        await wait_for(second.leading, 30, what="the standby to lead", interval=0.1, max_interval=0.2)
        took_over = time.monotonic() - termed
        first.process.wait(30)
        assert first.process.returncode == 0, "SIGTERM must end the operator cleanly"
        await _scale(kube, namespace, desired, sorted(desired)[:2])  # work that only the new leader can do
        await wait_for(lambda: converged(kube, namespace, desired), 180, what="convergence after the handover")
        old, new = _writes(first.proxy), _writes(second.proxy, since=second.started)
        assert old and new, f"{len(old)} writes by the old leader, {len(new)} by the new one: no handover under load"
        assert max(s.at for s in old) < min(s.at for s in new), "two replicas wrote at the same time"
        term_line = (
            f"SIGTERM: Lease released {released_at - termed:.1f}s after the signal, standby leading after "
            f"{took_over:.1f}s (lease duration {LEASE_DURATION:g}s), old leader exit 0; {len(old)} writes by the old "
            f"leader, then {len(new)} by the new one"
        )

        # 2. A third replica stands by; the leader loses its Lease (only Lease requests fail) while clusters scale.
        third = Replica(start_operator, proxies[2], tmp_path, namespace, "third")
        await wait_for(third.standing_by, 60, what="the third replica to stand by")
        second.proxy.scope, second.proxy.fault = "/leases/", Refuse()
        cut = time.monotonic()
        half = CLUSTERS // 2
        await _scale(kube, namespace, desired, sorted(desired)[:half])  # the cut-off leader still holds the Lease
        await wait_for(lambda: second.process.poll() is not None, LEASE_DURATION, what="the cut-off leader to stop")
        gave_up = time.monotonic() - cut
        assert second.process.returncode == 1, "a leader that lost its Lease exits 1 (its Deployment restarts it)"
        await _scale(kube, namespace, desired, sorted(desired)[half:])  # only a new leader can do these
        await wait_for(third.leading, LEASE_DURATION + 30, what="the third replica to lead", interval=0.1)
        takeover = time.monotonic() - cut
        await wait_for(lambda: converged(kube, namespace, desired), 180, what="convergence after the failover")
        old, new = _writes(second.proxy), _writes(third.proxy, since=third.started)
        assert new, "the new leader wrote nothing: no failover under load"
        gap = min(s.at for s in new) - max(s.at for s in old)
        assert gap > 0, "the partitioned leader wrote after the new one began"
        lost_line = (
            f"Lease partition: the old leader stopped after {gave_up:.1f}s and exited 1, the standby led "
            f"{takeover:.1f}s after the cut; "
            f"{gap:.1f}s between the old leader's last write and the new one's first"
        )

    ledger.record(
        "Leader handover and failover under load (two replicas)",
        f"{CLUSTERS} RayClusters (kwok) created, then half of them scaled; each replica behind its own proxy, so "
        "every write is known by its sender; the leader SIGTERMed mid-burst, then the next leader cut off from its "
        "Lease alone (it could still write everything else) while clusters scale",
        2,
        "SIGTERM: in-flight passes finish, exit 0, the Lease released at once and the standby leads well under the "
        "lease duration; lost Lease: the leader stops writing by itself before the Lease expires for the standby, "
        "exits 1; both times no write from a standby, the old leader's last write before the new one's first, every "
        "cluster ends with exactly its desired Pods",
        f"{term_line}; {lost_line}",
    )

"""Benchmark: KubeRay v1.7's incremental upgrade through a real Gateway, under live traffic, on real Ray Serve:
raykube's operator against KubeRay's in one invocation (issue 43).

``upgradeStrategy.type: NewClusterWithIncrementalUpgrade`` (Beta and on by default in KubeRay v1.7.0) moves a
RayService's traffic from its active cluster to the new one in steps, through a Gateway and an HTTPRoute whose
``backendRefs`` weights the operator changes. Here the Gateway API implementation is Traefik (the sandbox's, ``raykube
sandbox up --gateway``: built from the Go module proxy, run as a Deployment on the process nodes), and every request
goes through it. Each run (fresh namespace, fresh operator; the operators take turns on one sandbox, raykube first):

1. ``examples/06-serve-app.yaml`` and the RayService of ``examples/07-rayservice.yaml`` with the incremental strategy
   (GatewayClass ``traefik``, ``maxSurgePercent`` 100, ``stepSizePercent`` 25, ``intervalSeconds`` 10), Ray's
   autoscaler on and a worker group of 0 (the strategy requires the autoscaler; the Serve replica runs on the head);
   seconds until ``Ready`` with the app ``RUNNING``, and until the operator's Gateway is Accepted and Programmed.
2. A client Pod (``examples/serve/client.yaml``) calls the **Gateway's address** every 0.1 s and logs each answer
   (the greeting says which cluster answered).
3. **upgrade**: the cluster spec and the greeting change (``Hello`` → ``Hi``). Until the new cluster is promoted and
   the client has had 20 more answers: requests, **failed**, the longest gap, and **the curve**: per 5 s, the share of
   answers from the new cluster, beside the HTTPRoute's weight for it as the driver polled it (every 0.5 s).
4. **rollback**: a second change (``Hi`` → ``Hey``); once the HTTPRoute sends the new cluster part of the traffic, the
   spec goes back to the active cluster's. Until the pending cluster is gone and 20 more answers came: requests,
   **failed**, the weights seen, and the answers from the abandoned cluster after the rollback settled (none
   expected).

The operator's CPU seconds over the whole run are recorded too. How: ``benchmarks.rayjob``'s harness and
``benchmarks.rayservice``'s run (the same flags for both operators; KubeRay's release is ``--kuberay``'s, v1.7.0 by
default).

    .tools/bin/uv run --no-sync python -m benchmarks.incremental [--runs 1] [--kuberay 1.7.0]

Needs root (process nodes). Appends one JSON line per invocation to benchmarks/results/incremental.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import statistics
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from benchmarks import append_line, rayjob, rayservice
from benchmarks.kuberay import add_option as add_kuberay_option
from raykube.api.resources import RAYSERVICES
from raykube.builders.rayservice.gateway import gateway_ready
from raykube.cli import serveclient
from raykube.cli.serveclient import Answer, distinct, window
from raykube.kube.resources import CONFIGMAPS, GATEWAYS, HTTPROUTES, PODS
from raykube.sandbox import NodePool, versions
from raykube.sandbox.gateway import GATEWAY_CLASS
from raykube.waiting import NotYet

ROOT = Path(__file__).parents[1]
RESULTS = Path(__file__).parent / "results" / "incremental.jsonl"
REPORTS = ROOT / ".reports" / "bench-incremental"
SANDBOX = "bench-incremental"
NODES = NodePool(count=2, cpu="4", memory="16Gi")
STEP_PERCENT, INTERVAL_SECONDS, SURGE_PERCENT = 25, 10, 100
BUCKET_SECONDS = 5.0  # the curve's resolution: half an interval
POLL_SECONDS = 0.5  # how often the driver reads the HTTPRoute's weights
PHASES = ("upgrade", "rollback")


def incremental(service: Mapping[str, Any], greeting: str, mark: str) -> dict[str, Any]:
    """``examples/07-rayservice.yaml``'s RayService with the incremental strategy, the greeting ``greeting`` and
    ``MARK=mark`` in the head's env (a new value is a new cluster spec)."""
    body = copy.deepcopy(dict(service))
    spec = body["spec"]
    config = yaml.safe_load(spec["serveConfigV2"])
    config["applications"][0]["deployments"][0]["user_config"] = {"greeting": greeting}
    spec["serveConfigV2"] = yaml.safe_dump(config, sort_keys=False)
    cluster = spec["rayClusterConfig"]
    cluster["enableInTreeAutoscaling"] = True
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [e for e in head.get("env") or [] if e["name"] != "MARK"] + [{"name": "MARK", "value": mark}]
    worker = copy.deepcopy(cluster["headGroupSpec"]["template"])
    worker["spec"]["containers"][0]["name"] = "ray-worker"
    worker["spec"]["containers"][0].pop("ports", None)
    cluster["workerGroupSpecs"] = [
        {"groupName": "small", "replicas": 0, "minReplicas": 0, "maxReplicas": 1, "rayStartParams": {},
         "template": worker}
    ]  # fmt: skip
    spec["upgradeStrategy"] = {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "gatewayClassName": GATEWAY_CLASS,
            "maxSurgePercent": SURGE_PERCENT,
            "stepSizePercent": STEP_PERCENT,
            "intervalSeconds": INTERVAL_SECONDS,
        },
    }
    return body


def curve(answers: Sequence[Answer], start: float, end: float, new_word: str,
          weights: Sequence[tuple[float, int]]) -> list[dict[str, Any]]:  # fmt: skip
    """:func:`raykube.cli.serveclient.curve` per ``BUCKET_SECONDS`` (the demo's incremental act prints the same)."""
    return serveclient.curve(answers, start, end, new_word, weights, BUCKET_SECONDS)


class IncrementalRun(rayservice.ServiceRun):
    prefix = "bench-incremental"

    async def route_weights(self) -> dict[str, int]:
        route = await self.driver.get_or_none(HTTPROUTES, f"{self.name}-httproute", self.namespace)
        return serveclient.backend_weights(route)

    async def gateway_url(self) -> str | NotYet:
        self.check_alive()
        gw = await self.driver.get_or_none(GATEWAYS, f"{self.name}-gateway", self.namespace)
        if not gateway_ready(gw):
            return NotYet(f"Gateway status: {(gw or {}).get('status')}")
        assert gw is not None  # noqa: S101 - gateway_ready(None) is False
        addresses = (gw.get("status") or {}).get("addresses") or []
        return f"http://{addresses[0]['value']}/?name=client" if addresses else NotYet("no Gateway address yet")

    async def change(self, body: Mapping[str, Any]) -> None:
        patch = {"spec": {k: body["spec"][k] for k in ("serveConfigV2", "rayClusterConfig")}}
        await self.driver.patch(RAYSERVICES, self.name, patch, self.namespace)

    async def sides(self) -> tuple[str | None, str | None]:
        """The active and the pending cluster's names, as the RayService's status says."""
        status = await self.status()
        return (
            (status.get("activeServiceStatus") or {}).get("rayClusterName"),
            (status.get("pendingServiceStatus") or {}).get("rayClusterName"),
        )

    async def follow(self, weights: list[tuple[float, int]]) -> None:
        """Poll the HTTPRoute: the weight of the first pending cluster's serve Service, once there is one."""
        new_cluster = None
        while True:
            new_cluster = new_cluster or (await self.sides())[1]
            if new_cluster:
                weight = (await self.route_weights()).get(f"{new_cluster}-serve-svc")
                if weight is not None:
                    weights.append((time.time(), weight))
            await asyncio.sleep(POLL_SECONDS)  # a sampling period, not a wait for state

    @contextlib.asynccontextmanager
    async def following(self) -> AsyncIterator[list[tuple[float, int]]]:
        """The new cluster's HTTPRoute weights as (time, weight), polled while the block runs."""
        weights: list[tuple[float, int]] = []
        poller = asyncio.create_task(self.follow(weights))
        try:
            yield weights
        finally:
            poller.cancel()

    async def measure(self, pid: int) -> dict[str, Any]:
        app, service, client = rayservice.manifests()
        for body in (app, service, client):
            body["metadata"]["namespace"] = self.namespace
        cpu_start, counts_start = rayjob.cpu_seconds(pid), rayjob.operator_counts(self.metrics_port)
        audit_start = rayjob.audit_mark()
        started = time.time()
        await self.driver.create(CONFIGMAPS, app, self.namespace)
        await self.driver.create(RAYSERVICES, incremental(service, "Hello", "1"), self.namespace)
        status = await self.until(self.serving, "the RayService Ready", rayservice.READY_TIMEOUT)
        ready = round(time.time() - started, 2)
        url: str = await self.until(self.gateway_url, "the Gateway programmed")
        gateway_seconds = round(time.time() - started, 2)
        env = client["spec"]["containers"][0]["env"]
        client["spec"]["containers"][0]["env"] = [e for e in env if e["name"] != "URL"] + [
            {"name": "URL", "value": url}
        ]
        await self.driver.create(PODS, client, self.namespace)
        await self.until(lambda: self.answered_after(0.0, "Hello"), "the client answered through the Gateway")
        first = status["activeServiceStatus"]["rayClusterName"]
        upgrade, second = await self.upgrade(service, first)
        rollback = await self.rollback(service, second)
        return {
            "seconds": ready,
            "gateway_programmed_seconds": gateway_seconds,
            "cpu_seconds": round(rayjob.cpu_seconds(pid) - cpu_start, 2),
            **rayjob.counts_between(counts_start, rayjob.operator_counts(self.metrics_port)),
            **rayjob.requests_of_operator(audit_start, rayjob.audit_mark()),
            "gateway_url": url,
            "clusters": {"first": first, "second": second},
            "phases": {"upgrade": upgrade, "rollback": rollback},
            "client_requests": len(await self.client_answers()),
        }

    async def upgrade(self, service: Mapping[str, Any], first: str) -> tuple[dict[str, Any], str]:
        t0 = time.time()
        async with self.following() as weights:
            await self.change(incremental(service, "Hi", "2"))

            async def promoted() -> str | NotYet:
                self.check_alive()
                active, pending = await self.sides()
                done = active and active != first and not pending
                return str(active) if done else NotYet(f"active {active}, pending {pending}")

            second: str = await self.until(promoted, "the new cluster promoted")
            promoted_at = time.time()
        end = await self.until(lambda: self.answered_after(promoted_at, "Hi"), "answers after the promotion")
        answers = await self.client_answers()
        return {
            **window(answers, t0, end),
            "seconds_to_promoted": round(promoted_at - t0, 2),
            "weights_seen": distinct(weights),
            "curve": curve(answers, t0, end, "Hi", weights),
        }, second

    async def rollback(self, service: Mapping[str, Any], active: str) -> dict[str, Any]:
        t0 = time.time()
        async with self.following() as weights:
            await self.change(incremental(service, "Hey", "3"))

            async def shifting() -> int | NotYet:
                self.check_alive()
                last = weights[-1][1] if weights else None
                return last if last is not None and last > 0 else NotYet(f"new cluster's weight {last}")

            await self.until(shifting, "part of the traffic on the new cluster")
            reverted_at = time.time()
            await self.change(incremental(service, "Hi", "2"))

            async def settled() -> bool | NotYet:
                self.check_alive()
                current, pending = await self.sides()
                route = await self.route_weights()
                whole = route.get(f"{active}-serve-svc") == 100 and all(
                    w == 0 for name, w in route.items() if name != f"{active}-serve-svc"
                )
                if current == active and not pending and whole:
                    return True
                return NotYet(f"active {current}, pending {pending}, weights {route}")

            await self.until(settled, "the rollback to the active cluster")
            settled_at = time.time()
        end = await self.until(lambda: self.answered_after(settled_at, "Hi"), "answers after the rollback")
        answers = await self.client_answers()
        return {
            **window(answers, t0, end),
            "seconds_to_partial_shift": round(reverted_at - t0, 2),
            "seconds_to_settled_after_revert": round(settled_at - reverted_at, 2),
            "weights_seen": distinct(weights),
            "abandoned_answers_after_settled": sum(1 for a in answers if a.sent >= settled_at and a.word == "Hey"),
            "curve": curve(answers, t0, end, "Hey", weights),
        }


async def main_async(runs: int, report: Any) -> dict[str, Any]:
    samples: list[dict[str, Any]] = []
    async with rayjob.process_sandbox(SANDBOX, NODES, "kuberay", REPORTS, report, gateway=True) as (
        sandbox,
        kubeconfig,
        driver,
    ):
        for index in range(1, runs + 1):
            for operator in rayjob.OPERATORS:
                report(f"run {index}/{runs}: {operator}")
                sample = await IncrementalRun(sandbox, kubeconfig, driver, operator, index).run()
                for name in PHASES:
                    p = sample["phases"][name]
                    report(f"  {name}: {p['requests']} requests, {p['failed']} failed, weights {p['weights_seen']}")
                samples.append(sample)
    return {
        "benchmark": "incremental",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": rayjob.machine(),
        "git": rayjob.git_revision(),
        "versions": rayjob.versions_record(gateway=f"traefik {versions.TRAEFIK_VERSION}"),
        "settings": {
            "runs": runs,
            "order": "alternating, raykube first",
            "crds": "kuberay",
            "nodes": {"process": NODES.count, "cpu": NODES.cpu, "memory": NODES.memory},
            "upgrade": {
                "maxSurgePercent": SURGE_PERCENT,
                "stepSizePercent": STEP_PERCENT,
                "intervalSeconds": INTERVAL_SECONDS,
                "gatewayClassName": GATEWAY_CLASS,
            },
            "client": "examples/serve/client.yaml through the Gateway's address: one request every 0.1 s",
            "operator_flags": rayjob.operator_flags(
                "<sandbox admin kubeconfig>", "<run namespace>", "<free>", "<free>"
            ),
        },
        "runs": samples,
        "summary": summarise(samples),
    }


def summarise(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for operator in rayjob.OPERATORS:
        got = [s for s in samples if s["operator"] == operator]
        if not got:
            continue
        out[operator] = {
            "runs": len(got),
            "cpu_seconds_median": round(statistics.median(s["cpu_seconds"] for s in got), 2),
            **{
                f"{key}_median": statistics.median(s[key] for s in got)
                for key in ("operator_requests", "operator_reconciles")
                if all(key in s for s in got)
            },
            **{
                name: {
                    "requests": sum(s["phases"][name]["requests"] for s in got),
                    "failed": sum(s["phases"][name]["failed"] for s in got),
                    "longest_gap_seconds": max(s["phases"][name]["longest_gap_seconds"] for s in got),
                    "weights_seen": [s["phases"][name]["weights_seen"] for s in got],
                }
                for name in PHASES
            },
        }
    return out


def print_curves(result: Mapping[str, Any]) -> None:
    for sample in result["runs"]:
        for name in PHASES:
            phase = sample["phases"][name]
            head = f"\n{sample['operator']} run {sample['run']}, {name}: {phase['requests']} requests, "
            print(f"{head}{phase['failed']} failed; HTTPRoute weights of the new cluster {phase['weights_seen']}")  # noqa: T201
            print("\n".join(serveclient.curve_lines(phase["curve"])))  # noqa: T201


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="runs per operator (alternating)")
    add_kuberay_option(parser)
    rayjob.add_profile_option(parser)
    args = parser.parse_args()
    report = rayjob.start(args)

    result = asyncio.run(rayjob.cancellable(main_async(args.runs, report)))
    append_line(RESULTS, result)
    print_curves(result)
    print(f"\nappended to {RESULTS.relative_to(ROOT)}")  # noqa: T201


if __name__ == "__main__":
    main()

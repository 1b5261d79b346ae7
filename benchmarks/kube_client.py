"""Benchmark: the Kube client's own CPU per request, on its three ways of sending, side by side.

Why it exists: on 2 cores the scale benchmark is CPU-bound, and the operator's client is its largest own cost (see
docs/scale-history.md). This measures the part the transport decides, with nothing else in the process: on a
fresh sandbox, ``--requests`` ConfigMap creates and as many merge patches, ``--in-flight`` at a time, while a watch on
the namespace reads every event they cause; CPU is this process's (``getrusage``) from the first create to the last
event. The three ways: ``httpx2`` (httpx2's default transport, the client before aiohttp), ``aiohttp`` (httpx2's API
over aiohttp's connections: kube/transport.py's AiohttpTransport) and ``direct`` (what ``Kube.from_config`` sends JSON
requests and watches with now: aiohttp without httpx2's Request and Response, kube/transport.py's Direct). Rounds
rotate their order, so a slower moment of the machine does not fall on one of them; the report gives each one's
median.

    uv run python -m benchmarks.kube_client [--rounds 3] [--requests 2000] [--in-flight 10]

Appends one JSON line per invocation to benchmarks/results/kube-client.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import tempfile
import time
from pathlib import Path

import httpx2
from lightkube import KubeConfig
from lightkube.config.client_adapter import ConnectionParams

from benchmarks import append_line
from raykube.kube.client import Kube
from raykube.kube.resources import CONFIGMAPS, NAMESPACES
from raykube.sandbox import NodePool, Ports, Sandbox, SandboxConfig, versions
from raykube.waiting import NotYet, wait_for

RESULTS = Path(__file__).parent / "results" / "kube-client.jsonl"
TRANSPORTS = ("httpx2", "aiohttp", "direct")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def client(kubeconfig: Path, transport: str) -> Kube:
    """The client ``Kube.from_config`` builds (direct), the same without Direct (aiohttp), or the one it built before
    on httpx2's default transport (its pool sized as then: a burst's connections, 25 kept idle)."""
    if transport in ("aiohttp", "direct"):
        kube = Kube.from_config(kubeconfig, qps=100_000, burst=100_000, user_agent=f"raykube-bench-{transport}")
        if transport == "aiohttp":
            kube.direct = None  # every request through httpx2's API, as before Direct
        return kube
    single = KubeConfig.from_file(kubeconfig).get()
    if single is None:
        raise SystemExit(f"{kubeconfig} has no current context")
    params = ConnectionParams(timeout=httpx2.Timeout(30.0), trust_env=False).httpx_params(single)
    http = httpx2.AsyncClient(**params, limits=httpx2.Limits(max_connections=232, max_keepalive_connections=25))
    http.headers["User-Agent"] = "raykube-bench-httpx2"
    return Kube(http, qps=100_000, burst=100_000)


async def one_round(
    kubeconfig: Path, transport: str, namespace: str, requests: int, in_flight: int
) -> dict[str, float]:
    kube = client(kubeconfig, transport)
    try:
        await kube.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        listed = await kube.list(CONFIGMAPS, namespace)
        events = 0

        async def watch() -> None:
            nonlocal events
            async for event in kube.watch(CONFIGMAPS, namespace, resource_version=listed.resource_version):
                if event.type != "BOOKMARK":
                    events += 1

        watcher = asyncio.create_task(watch())
        slots = asyncio.Semaphore(in_flight)

        async def one(index: int) -> None:
            name = f"{transport}-{index}"
            async with slots:
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "x" * 2000}}
                await kube.create(CONFIGMAPS, body, namespace)
                await kube.patch(CONFIGMAPS, name, {"data": {"j": "y"}}, namespace)

        started, cpu_started = time.monotonic(), cpu_seconds()
        await asyncio.gather(*(one(i) for i in range(requests)))
        await wait_for(lambda: events >= 2 * requests or NotYet(f"{events} events"), 60, what="the watch to see all")
        cpu, seconds = cpu_seconds() - cpu_started, time.monotonic() - started
        watcher.cancel()
        return {"cpu_ms_per_request": round(1000 * cpu / (2 * requests), 3), "seconds": round(seconds, 2)}
    finally:
        await kube.close()


async def main_async(rounds: int, requests: int, in_flight: int) -> dict[str, object]:
    runs: dict[str, list[dict[str, float]]] = {t: [] for t in TRANSPORTS}
    with tempfile.TemporaryDirectory(prefix="raykube-bench-") as root:
        sandbox = Sandbox.named("bench", Path(root))
        result = await sandbox.up(SandboxConfig(name="bench", ports=Ports.free(), nodes=NodePool(count=1)))
        try:
            for index in range(rounds):
                turn = index % len(TRANSPORTS)
                order = TRANSPORTS[turn:] + TRANSPORTS[:turn]
                for transport in order:
                    namespace = f"bench-{index}-{transport}"
                    runs[transport].append(
                        await one_round(result.kubeconfig, transport, namespace, requests, in_flight)
                    )
        finally:
            await sandbox.down()
    median = {t: statistics.median(r["cpu_ms_per_request"] for r in runs[t]) for t in TRANSPORTS}
    return {
        "benchmark": "kube-client",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "versions": {"kubernetes": versions.KUBERNETES_VERSION},
        "settings": {"rounds": rounds, "requests": 2 * requests, "in_flight": in_flight, "watch": True},
        "runs": runs,
        "median_cpu_ms_per_request": median,
        "aiohttp_to_httpx2": round(median["aiohttp"] / median["httpx2"], 3),
        "direct_to_aiohttp": round(median["direct"] / median["aiohttp"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=2000, help="ConfigMaps created, and as many patches")
    parser.add_argument("--in-flight", type=int, default=10)
    args = parser.parse_args()
    result = asyncio.run(main_async(args.rounds, args.requests, args.in_flight))
    append_line(RESULTS, result)
    print(json.dumps(result, indent=2))  # noqa: T201 - a benchmark reports on stdout


if __name__ == "__main__":
    main()

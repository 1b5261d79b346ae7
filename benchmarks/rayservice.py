"""Benchmark: a RayService under live traffic on real Ray Serve, raykube's operator against KubeRay's
(the release ``--kuberay`` names: v1.7.0 by default, ``benchmarks/kuberay.py``).

KubeRay's promise for RayService is that a change does not drop requests. This measures it, with the same input for
both operators in the same invocation. Each run (fresh namespace, fresh operator):

1. **ready**: ``examples/06-serve-app.yaml`` (the Serve app, a module in a ConfigMap) and
   ``examples/07-rayservice.yaml`` (the RayService: one head Pod running Serve, ``rayClusterDeletionDelaySeconds:
   10``) are created; seconds until ``Ready=True`` with the application ``RUNNING``.
2. The client of ``examples/serve/client.yaml`` starts: a Pod calling ``<rs>-serve-svc:8000`` through its ClusterIP
   every 0.1 s (2 s timeout), one log line per request (time sent, seconds to answer, HTTP code, the greeting).
3. **(a) in place**: ``serveConfigV2`` changes (the deployment's ``user_config`` greeting ``Hello`` → ``Hi``). KubeRay
   PUTs it to the same cluster. Window: from the patch until the client has had 20 answers after the first ``Hi``.
4. **(b) new cluster**: ``rayClusterConfig`` changes (an env var of the head). A pending cluster is made, Serve
   deployed on it, the Services switched once its app is RUNNING, the old cluster deleted after the delay. Window:
   from the patch until the old cluster is gone and the client has had 20 more answers.
5. **(c) head Pod deleted**: the active cluster's head Pod is deleted (no GCS fault tolerance: a one-Pod cluster
   loses Serve until its head is back). Not a zero-downtime case; it measures recovery: failed requests, the outage
   (longest time without an answer) and the seconds until ``Ready`` again and answered.

For each window: **requests** the client sent, **failed** (no answer, or not 200), the **longest gap** between two
successful answers (at 0.1 s pacing a healthy gap is about 0.1 s plus the answer time), and the times of the
milestones (switch-over, old cluster deleted). Also the operator's CPU seconds over the whole run. The goal for (a)
and (b) is 0 failed.

How: ``benchmarks.rayjob``'s harness. One process sandbox (``bench-rayservice``; 2 process nodes of 4 CPU / 16Gi)
with that KubeRay's CRDs (``--crds raykube``: raykube's), runs alternating raykube first, exactly one operator at a
time, started as a sandbox extra process with the same flags for both (``--use-kubernetes-proxy``, reconcile
concurrency 1, KubeRay's default feature gates, leader election in the run's namespace, the sandbox's admin
kubeconfig); the run's RayService is deleted while its operator runs, then the operator stopped by its PID and the
namespace deleted. The Pods' clocks are the host's, so the client's times line up with the driver's.

    .tools/bin/uv run --no-sync python -m benchmarks.rayservice [--runs 1] [--crds kuberay|raykube]

Needs root (process nodes). Appends one JSON line per invocation to benchmarks/results/rayservice.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from benchmarks import append_line, rayjob
from benchmarks.kuberay import add_option as add_kuberay_option
from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS, RAYSERVICES
from raykube.cli.serveclient import CLIENT_POD, Answer, parse_log, window
from raykube.kube.resources import CONFIGMAPS, PODS
from raykube.sandbox import NodePool
from raykube.waiting import NotYet, wait_for

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples"
RESULTS = Path(__file__).parent / "results" / "rayservice.jsonl"
REPORTS = ROOT / ".reports" / "bench-rayservice"
SANDBOX = "bench-rayservice"
NODES = NodePool(count=2, cpu="4", memory="16Gi")
READY_MARKERS: dict[str, Callable[[str], bool]] = {
    "raykube": lambda line: "reconcile worker(s) running per controller" in line and "rayservice" in line,
    "kuberay": lambda line: "Starting workers" in line and "RayService" in line,
}
READY_TIMEOUT = 600.0  # the first Serve start on two loaded cores
CHANGE_TIMEOUT = 600.0
AFTER = 20  # answers the client must have had after a change completed, before its window closes
PHASES = ("in_place", "new_cluster", "head_pod_deleted")


def manifests() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The Serve app's ConfigMap, the RayService and the client Pod, as the examples give them."""
    app = yaml.safe_load((EXAMPLES / "06-serve-app.yaml").read_text())
    service = yaml.safe_load((EXAMPLES / "07-rayservice.yaml").read_text())
    client = yaml.safe_load((EXAMPLES / "serve" / "client.yaml").read_text())
    return app, service, client


class ServiceRun(rayjob.Run):
    prefix = "bench-rayservice"
    markers = READY_MARKERS
    name = "rayservice-demo"  # examples/07-rayservice.yaml's

    async def client_answers(self) -> list[Answer]:
        response = await self.driver.send("get", "GET", PODS, PODS.path(self.namespace, CLIENT_POD, "log"),
                                          subresource="log")  # fmt: skip
        return parse_log(response.text) if response.status_code == 200 else []

    async def status(self) -> dict[str, Any]:
        got = await self.driver.get(RAYSERVICES, self.name, self.namespace)
        return dict(got.get("status") or {})

    async def clusters(self) -> list[str]:
        return [str(x["metadata"]["name"]) for x in (await self.driver.list(RAYCLUSTERS, self.namespace)).items]

    async def serving(self) -> dict[str, Any] | NotYet:
        self.check_alive()
        status = await self.status()
        ready = any(x.get("type") == "Ready" and x.get("status") == "True" for x in status.get("conditions") or [])
        apps = (status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}
        app = (apps.get("hello") or {}).get("status")
        return status if ready and app == "RUNNING" else NotYet(f"Ready {ready}, app {app}")

    async def answered_after(self, since: float, word: str | None = None) -> float | NotYet:
        """When the client had ``AFTER`` good answers (with ``word``, if given) sent after ``since``."""
        self.check_alive()
        good = [a for a in await self.client_answers() if a.ok and a.sent >= since and word in (None, a.word)]
        return good[AFTER - 1].done if len(good) >= AFTER else NotYet(f"{len(good)} good answers since the change")

    async def until(self, check: Callable[[], Awaitable[Any]], what: str, limit: float = CHANGE_TIMEOUT) -> Any:
        return await wait_for(check, limit, what=f"{what} ({self.operator})", max_interval=0.2)

    async def measure(self, pid: int) -> dict[str, Any]:
        app, service, client = manifests()
        for body in (app, service, client):
            body["metadata"]["namespace"] = self.namespace
        cpu_start, counts_start = rayjob.cpu_seconds(pid), rayjob.operator_counts(self.metrics_port)
        audit_start = rayjob.audit_mark()
        started = time.time()
        await self.driver.create(CONFIGMAPS, app, self.namespace)
        await self.driver.create(RAYSERVICES, service, self.namespace)
        status = await self.until(self.serving, "the RayService Ready", READY_TIMEOUT)
        ready = round(time.time() - started, 2)
        first = status["activeServiceStatus"]["rayClusterName"]
        await self.driver.create(PODS, client, self.namespace)
        await self.until(lambda: self.answered_after(0.0), "the client answered")
        phases = {"in_place": await self.in_place(service, first)}
        phases["new_cluster"], second = await self.new_cluster(service, first)
        phases["head_pod_deleted"] = await self.head_pod_deleted(second)
        return {
            "seconds": ready,
            "cpu_seconds": round(rayjob.cpu_seconds(pid) - cpu_start, 2),
            **rayjob.counts_between(counts_start, rayjob.operator_counts(self.metrics_port)),
            **rayjob.requests_of_operator(audit_start, rayjob.audit_mark()),
            "clusters": {"first": first, "second": second},
            "phases": phases,
            "client_requests": len(await self.client_answers()),
        }

    async def in_place(self, service: Mapping[str, Any], first: str) -> dict[str, Any]:
        """(a) ``serveConfigV2`` alone changes: applied in place, on the same cluster."""
        config = yaml.safe_load(service["spec"]["serveConfigV2"])
        config["applications"][0]["deployments"][0]["user_config"] = {"greeting": "Hi"}
        t0 = time.time()
        patch = {"spec": {"serveConfigV2": yaml.safe_dump(config)}}
        await self.driver.patch(RAYSERVICES, self.name, patch, self.namespace)
        end = await self.until(lambda: self.answered_after(t0, "Hi"), "the new greeting")
        answers = await self.client_answers()
        first_hi = min(a.done for a in answers if a.word == "Hi" and a.sent >= t0)
        clusters = await self.clusters()
        return {
            **window(answers, t0, end),
            "seconds_to_new_answer": round(first_hi - t0, 2),
            "clusters_after": len(clusters),
            "same_cluster": clusters == [first],
        }

    async def new_cluster(self, service: Mapping[str, Any], first: str) -> tuple[dict[str, Any], str]:
        """(b) ``rayClusterConfig`` changes: a new cluster, the switch-over, the old one deleted after the delay."""
        spec = copy.deepcopy(service["spec"]["rayClusterConfig"])
        spec["headGroupSpec"]["template"]["spec"]["containers"][0]["env"].append({"name": "UPGRADE", "value": "1"})
        t0 = time.time()
        await self.driver.patch(RAYSERVICES, self.name, {"spec": {"rayClusterConfig": spec}}, self.namespace)

        async def switched() -> str | NotYet:
            active = ((await self.status()).get("activeServiceStatus") or {}).get("rayClusterName")
            return str(active) if active and active != first else NotYet(f"active {active}")

        second: str = await self.until(switched, "the switch-over to the new cluster")
        switch_at = time.time()

        async def old_gone() -> bool | NotYet:
            left = await self.clusters()
            return True if first not in left else NotYet(f"clusters {left}")

        await self.until(old_gone, "the old cluster deleted")
        gone_at = time.time()
        end = await self.until(lambda: self.answered_after(gone_at), "answers after the upgrade")
        return {
            **window(await self.client_answers(), t0, end),
            "seconds_to_switch": round(switch_at - t0, 2),
            "seconds_to_old_cluster_deleted": round(gone_at - t0, 2),
            "old_cluster_deleted_after_switch_seconds": round(gone_at - switch_at, 2),
        }, second

    async def head_pod_deleted(self, active: str) -> dict[str, Any]:
        """(c) The active cluster's head Pod is deleted: recovery, not zero downtime."""
        selector = f"{c.RAY_CLUSTER_LABEL}={active},{c.RAY_NODE_TYPE_LABEL}=head"
        [head] = (await self.driver.list(PODS, self.namespace, label_selector=selector)).items
        t0 = time.time()
        await self.driver.delete(PODS, head["metadata"]["name"], self.namespace)
        back: list[float] = []  # when the new head Pod was first seen in the serve Service (label ray.io/serve=true)

        async def recovered() -> float | NotYet:
            if not back:
                pods = (await self.driver.list(PODS, self.namespace, label_selector=selector)).items
                fresh = [p for p in pods if p["metadata"]["uid"] != head["metadata"]["uid"]]
                if not any((p["metadata"].get("labels") or {}).get(c.RAY_SERVE_LABEL) == "true" for p in fresh):
                    return NotYet(f"{len(fresh)} new head Pod(s), none labelled {c.RAY_SERVE_LABEL}=true yet")
                back.append(time.time())
            serving = await self.serving()
            if isinstance(serving, NotYet):
                return serving
            return await self.answered_after(back[0])

        end = await self.until(recovered, "the RayService back after its head Pod was deleted")
        final = await self.status()
        answers = await self.client_answers()
        outage = [a for a in answers if a.sent >= t0 and not a.ok]
        return {
            **window(answers, t0, end),
            "seconds_to_recovered": round(end - t0, 2),
            "first_failure_after_delete_seconds": round(outage[0].sent - t0, 2) if outage else None,
            "same_cluster": (final.get("activeServiceStatus") or {}).get("rayClusterName") == active,
        }

    async def delete_subject(self) -> None:
        await self.driver.delete(RAYSERVICES, self.name, self.namespace)

        async def gone() -> bool | NotYet:
            self.check_alive()
            left = await self.driver.get_or_none(RAYSERVICES, self.name, self.namespace)
            return True if left is None else NotYet("the RayService is still there")

        await wait_for(gone, rayjob.CLEANUP_TIMEOUT, what=f"the RayService deleted ({self.operator})")


async def main_async(runs: int, which_crds: str, report: Callable[[str], None]) -> dict[str, Any]:
    samples: list[dict[str, Any]] = []
    async with rayjob.process_sandbox(SANDBOX, NODES, which_crds, REPORTS, report) as (sandbox, kubeconfig, driver):
        for index in range(1, runs + 1):
            for operator in rayjob.OPERATORS:
                report(f"run {index}/{runs}: {operator} (load {os.getloadavg()[0]:.2f})")
                sample = await ServiceRun(sandbox, kubeconfig, driver, operator, index).run()
                shown = (f"{name}: {p['requests']} requests, {p['failed']} failed, longest gap "
                         f"{p['longest_gap_seconds']} s" for name, p in sample["phases"].items())  # fmt: skip
                report("  " + "; ".join(shown))
                samples.append(sample)
    return {
        "benchmark": "rayservice",
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": rayjob.machine(),
        "git": rayjob.git_revision(),
        "versions": rayjob.versions_record(),
        "settings": {
            "runs": runs,
            "order": "alternating, raykube first",
            "crds": which_crds,
            "nodes": {"process": NODES.count, "cpu": NODES.cpu, "memory": NODES.memory},
            "rayservice": "examples/07-rayservice.yaml (one head Pod running Serve, rayClusterDeletionDelaySeconds 10)",
            "client": "examples/serve/client.yaml: one request every 0.1 s through the serve Service, 2 s timeout",
            "operator_flags": rayjob.operator_flags(
                "<sandbox admin kubeconfig>", "<run namespace>", "<free>", "<free>"
            ),
        },
        "runs": samples,
        "summary": summarise(samples),
    }


def summarise(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Per operator and phase: requests and failures summed over the runs, the longest gap over them, medians of
    the times."""
    out: dict[str, Any] = {}
    for operator in rayjob.OPERATORS:
        got = [s for s in samples if s["operator"] == operator]
        if not got:
            continue
        entry: dict[str, Any] = {
            "runs": len(got),
            "seconds_to_ready_median": round(statistics.median(s["seconds"] for s in got), 2),
            "cpu_seconds_median": round(statistics.median(s["cpu_seconds"] for s in got), 2),
            **{
                f"{key}_median": statistics.median(s[key] for s in got)
                for key in ("operator_requests", "operator_reconciles")
                if all(key in s for s in got)
            },
        }
        for phase in PHASES:
            values = [s["phases"][phase] for s in got]
            entry[phase] = {
                "requests": sum(v["requests"] for v in values),
                "failed": sum(v["failed"] for v in values),
                "longest_gap_seconds": max(v["longest_gap_seconds"] for v in values),
                **{
                    key: round(statistics.median(v[key] for v in values), 2)
                    for key in values[0]
                    if key.startswith("seconds_to") and all(v.get(key) is not None for v in values)
                },
            }
        out[operator] = entry
    return out


def print_tables(result: Mapping[str, Any]) -> None:
    rows = [("", "phase", "requests", "failed", "longest gap", "times (medians)")]
    for operator, got in result["summary"].items():
        for phase in PHASES:
            p = got[phase]
            times = ", ".join(f"{k.removeprefix('seconds_to_').replace('_', ' ')} {v:.1f} s" for k, v in p.items()
                              if k.startswith("seconds_to"))  # fmt: skip
            rows.append((operator, phase.replace("_", " "), str(p["requests"]), str(p["failed"]),
                         f"{p['longest_gap_seconds']:.2f} s", times))  # fmt: skip
        rows.append((operator, "to Ready", "", "", "", f"{got['seconds_to_ready_median']:.1f} s; operator CPU "
                     f"{got['cpu_seconds_median']:.2f} s per run"))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())  # noqa: T201


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="runs per operator (alternating)")
    parser.add_argument("--crds", choices=["kuberay", "raykube"], default="kuberay", help="the CRDs both run with")
    add_kuberay_option(parser)
    rayjob.add_profile_option(parser)
    args = parser.parse_args()
    report = rayjob.start(args)

    result = asyncio.run(rayjob.cancellable(main_async(args.runs, args.crds, report)))
    append_line(RESULTS, result)
    print_tables(result)
    print(f"\nappended to {RESULTS.relative_to(ROOT)}")  # noqa: T201


if __name__ == "__main__":
    main()

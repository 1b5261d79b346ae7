"""``raykube doctor`` inside real Ray (process nodes): the failures where every Kubernetes object looks right.

Each test breaks a real Ray cluster the way users meet it, then runs ``raykube doctor raycluster/NAME`` as a user
does (a subprocess, default options: the in-Pod checks run because the caller may create ``pods/exec``) and asserts
the root cause it names and the evidence it quotes from inside the Pods:

* a worker whose DNS cannot resolve the head Service (``dnsPolicy: None`` pointing at a resolver that is not there);
* a block of TCP 6379 between a worker and the head (an init container adds ``ip rule ... dport 6379 prohibit`` in
  the worker's network namespace: what a NetworkPolicy that drops the GCS port does, with no object to show it);
* a dashboard bound to 127.0.0.1 (seen listening there, and refused from a worker);
* a port conflict: a sidecar listening on 6379 before the GCS starts ("Address already in use", a crash loop);
* the head's node and object manager ports rejected on the way from a worker while its three Service ports pass
  (ray-project/ray#32215: a NetworkPolicy that opens only those; the cluster is ready and tasks across nodes hang);
* the head's dashboard agent stopped (SIGSTOP) once the cluster is ready: its port open, no answer, the probes failing
  (ray-project/ray#63574).

The chapter's healthy cluster (exit 0 with nothing at warning or above, while starting and once ready, with the
in-Pod checks run on the head and one worker) is checked where it already runs, in
``test_chapter_workloads.py::test_the_chapter_runs_on_real_ray_reads_its_dataset_from_the_object_store_and_lists_pods_once_allowed``.
"""

from __future__ import annotations

import copy
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lightkube import AsyncClient
from lightkube.resources.core_v1 import Pod

from raykube.doctor.model import at_least
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.doctor_support import assert_fires
from tests.integration.process import ProcessSandbox
from tests.integration.test_process_runtime import RAY_READY, RAYCLUSTER, wait_cluster

IMAGE = "rayproject/ray:2.52.0"


def doctor(proc: ProcessSandbox, ns: str, name: str, *extra: str) -> tuple[int, dict[str, Any]]:
    return proc.doctor(ns, f"raycluster/{name}", *extra)


def roots(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if not f.get("causedBy") and at_least(f["severity"], "error")]


def small_cluster(name: str, *, head: Callable[[dict[str, Any]], None] | None = None,
                  worker: Callable[[dict[str, Any]], None] | None = None,
                  head_params: dict[str, str] | None = None, workers: int = 1) -> dict[str, Any]:  # fmt: skip
    """1 head + ``workers`` workers of 250m/256Mi (process nodes do not enforce memory; the scheduler counts the
    requests)."""
    resources = {"limits": {"cpu": "250m", "memory": "256Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}}
    head_spec: dict[str, Any] = {"containers": [{"name": "ray-head", "image": IMAGE, "resources": resources}]}
    worker_spec: dict[str, Any] = {"containers": [{"name": "ray-worker", "image": IMAGE, "resources": resources}]}
    if head:
        head(head_spec)
    if worker:
        worker(worker_spec)
    return {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": head_params or {}, "template": {"spec": head_spec}},
            "workerGroupSpecs": [{"groupName": "w", "replicas": workers, "minReplicas": 0, "maxReplicas": 2,
                                  "rayStartParams": {}, "template": {"spec": copy.deepcopy(worker_spec)}}],
        },
    }  # fmt: skip


async def pods(pkube: AsyncClient, ns: str, cluster: str) -> list[Pod]:
    return [p async for p in pkube.list(Pod, namespace=ns, labels={"ray.io/cluster": cluster})]


async def head_of(pkube: AsyncClient, ns: str, cluster: str) -> Pod | None:
    found = [p for p in await pods(pkube, ns, cluster) if (p.metadata.labels or {}).get("ray.io/node-type") == "head"]  # type: ignore[union-attr]
    return found[0] if found else None


def _ready(pod: Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []) if pod.status)


def _waiting_for_gcs(pod: Pod) -> bool:
    statuses = (pod.status.initContainerStatuses or []) if pod.status else []
    return any(s.name == "wait-gcs-ready" and s.state and s.state.running for s in statuses)


async def head_ready_worker_waiting(pkube: AsyncClient, ns: str, cluster: str) -> None:
    async def check() -> bool | NotYet:
        found = await pods(pkube, ns, cluster)
        head = [p for p in found if (p.metadata.labels or {}).get("ray.io/node-type") == "head"]  # type: ignore[union-attr]
        workers = [p for p in found if p not in head]
        if head and _ready(head[0]) and workers and _waiting_for_gcs(workers[0]):
            return True
        return NotYet(f"{cluster}: head Ready {bool(head) and _ready(head[0])}, worker waiting for the GCS "
                      f"{bool(workers) and _waiting_for_gcs(workers[0])}")  # fmt: skip

    await wait_for(check, RAY_READY, what=f"{cluster}: the head Ready and its worker in wait-gcs-ready")


async def raylet_ports_named(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    """The head's node and object manager ports rejected on the way from a worker (ray-project/ray#32215): the
    cluster is ready, yet R13 names the ports, with what the worker's connects met."""
    await wait_cluster(pkube, ns, "raylet", lambda s: s.get("state") == "ready", "ready")
    code, report = doctor(proc, ns, "raylet", "--starting-grace", "0")
    assert code == 1
    (root,) = roots(report)
    assert_fires([root], "R13", context=str([(f["id"], f["title"]) for f in roots(report)]))
    assert "6380 (node manager), 6381 (object manager)" in root["title"], root["title"]
    seen = {e.get("path"): str(e.get("value")) for e in root["evidence"] if e["source"] == "ray"}
    for port in (6380, 6381):
        assert any(path.endswith(f":{port}") and "EACCES" in value for path, value in seen.items()), seen


def ray_process_of(pod_ip: str, script: bytes, ip_arg: bytes) -> int:
    """The PID of the one Ray process running ``script`` (an argv entry ends with it) whose ``ip_arg`` flag names
    ``pod_ip`` (``--node-ip-address=<ip>``, or ``--gcs-address=<ip>:<port>``)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        named = any(a.startswith(ip_arg) and a[len(ip_arg) :].split(b":")[0] == pod_ip.encode() for a in argv)
        if any(a.endswith(script) for a in argv) and named:
            found.append(int(entry.name))
    assert len(found) == 1, f"{script.decode()} processes of {pod_ip}: {found}"
    return found[0]


def agent_of(pod_ip: str) -> int:
    """The PID of the dashboard agent that serves ``pod_ip`` (started with ``--node-ip-address``)."""
    return ray_process_of(pod_ip, b"dashboard/agent.py", b"--node-ip-address=")


async def stop_the_dashboard_agent(pkube: AsyncClient, ns: str, cluster: str) -> int:
    """SIGSTOP to the head's dashboard agent once the cluster is ready: its port stays open and nothing answers, as
    in ray-project/ray#63574."""
    await wait_cluster(pkube, ns, cluster, lambda s: s.get("state") == "ready", "ready")
    head = await head_of(pkube, ns, cluster)
    agent = agent_of(str(head.status.podIP))  # type: ignore[union-attr]
    os.kill(agent, signal.SIGSTOP)
    return agent


async def a_stuck_agent_is_named(proc: ProcessSandbox, pkube: AsyncClient, ns: str, cluster: str) -> None:
    """The head's probes fail (not Ready); the doctor names the agent that accepts and does not answer, the failing
    probe under it."""

    async def not_ready() -> bool | NotYet:
        head = await head_of(pkube, ns, cluster)
        return True if head is not None and not _ready(head) else NotYet("the head is still Ready")

    await wait_for(not_ready, RAY_READY, what=f"{cluster}: the head not Ready once its agent stopped")
    code, report = doctor(proc, ns, cluster, "--starting-grace", "0")
    assert code == 1
    (root,) = roots(report)
    assert_fires([root], "R14", context=str([(f["id"], f["title"]) for f in roots(report)]))
    assert "dashboard agent accepts connections on 52365" in root["title"], root["title"]
    seen = {e.get("path"): str(e.get("value")) for e in root["evidence"] if e["source"] == "ray"}
    assert "timed out" in seen.get("GET http://127.0.0.1:52365/api/local_raylet_healthz", ""), seen
    assert_fires([f for f in report["findings"] if f.get("causedBy")], "D02")


async def a_port_clash_is_named(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    # A sidecar holding 6379: R05 quotes Ray's own line; the crash loop and everything after hang under it.
    async def crashed() -> bool | NotYet:
        found = await pods(pkube, ns, "portclash")
        head = [p for p in found if (p.metadata.labels or {}).get("ray.io/node-type") == "head"]  # type: ignore[union-attr]
        statuses = (head[0].status.containerStatuses or []) if head and head[0].status else []
        restarts = max((s.restartCount for s in statuses if s.name == "ray-head"), default=0)
        return True if restarts >= 1 else NotYet(f"ray-head restarts: {restarts}")

    await wait_for(crashed, RAY_READY, what="portclash: the head's Ray container to fail and restart")
    code, report = doctor(proc, ns, "portclash")
    assert code == 1
    (root,) = roots(report)
    assert_fires([root], "R05", context=str([(f["id"], f["title"]) for f in roots(report)]))
    assert "cache" in root["title"], [(f["id"], f["title"]) for f in roots(report)]
    assert any(e["source"] == "log" and "6379" in str(e.get("value")) for e in root["evidence"]), root["evidence"]


async def test_failures_inside_ray_are_named_with_what_was_seen_there(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    def no_dns(spec: dict[str, Any]) -> None:
        spec["dnsPolicy"] = "None"
        spec["dnsConfig"] = {"nameservers": ["127.0.0.1"], "searches": [f"{ns}.svc.cluster.local"]}

    def block_gcs(spec: dict[str, Any]) -> None:
        block = ["ip", "rule", "add", "ipproto", "tcp", "dport", "6379", "prohibit"]
        spec["initContainers"] = [{"name": "netpol", "image": IMAGE, "command": block}]

    def sidecar_on_6379(spec: dict[str, Any]) -> None:
        spec["containers"].append(
            {"name": "cache", "image": IMAGE, "command": ["python3", "-m", "http.server", "6379"]}
        )

    def block_raylet(spec: dict[str, Any]) -> None:  # only the head's node and object manager ports (pinned below)
        block = ["ip", "rule", "add", "ipproto", "tcp", "dport", "6380-6381", "prohibit"]
        spec["initContainers"] = [{"name": "netpol", "image": IMAGE, "command": block}]

    clusters = {
        "hung": small_cluster("hung", workers=0),  # the head's own failures need no worker: one Ray start fewer
        "raylet": small_cluster(
            "raylet", worker=block_raylet, head_params={"node-manager-port": "6380", "object-manager-port": "6381"}
        ),
        "nodns": small_cluster("nodns", worker=no_dns),
        "blocked": small_cluster("blocked", worker=block_gcs),
        "localdash": small_cluster("localdash", head_params={"dashboard-host": "127.0.0.1"}),
        "portclash": small_cluster("portclash", head=sidecar_on_6379, workers=0),
    }
    for body in clusters.values():
        await pkube.create(RAYCLUSTER.from_dict(body), namespace=ns)

    # A worker whose DNS does not answer: E02 first, the workers waiting for the GCS under it.
    await head_ready_worker_waiting(pkube, ns, "nodns")
    code, report = doctor(proc, ns, "nodns")
    assert code == 1
    (root,) = roots(report)
    assert_fires([root], "E02", context=str([(f["id"], f["title"]) for f in roots(report)]))
    assert any("name resolution" in str(e.get("value")) and e["source"] == "ray" for e in root["evidence"])
    assert_fires([f for f in report["findings"] if f.get("causedBy")], "E01")

    # TCP 6379 dropped on the way while the head listens: R03, with the refused connect and the head's listener.
    await head_ready_worker_waiting(pkube, ns, "blocked")
    code, report = doctor(proc, ns, "blocked")
    (root,) = roots(report)
    assert_fires([root], "R03", context=str([(f["id"], f["title"]) for f in roots(report)]))
    values = {e.get("path"): str(e.get("value")) for e in root["evidence"]}
    assert any(path.endswith(":6379") and "EACCES" in value for path, value in values.items()), values
    assert values["listening on port 6379"] != "nothing"

    agent = await stop_the_dashboard_agent(pkube, ns, "hung")  # checked last: its probes take a while to fail
    try:
        await raylet_ports_named(proc, pkube, ns)

        # The dashboard on 127.0.0.1: F01, confirmed inside (listening there, refused from the worker).
        await wait_cluster(pkube, ns, "localdash", lambda s: s.get("state") == "ready", "ready")
        code, report = doctor(proc, ns, "localdash")
        (root,) = roots(report)
        assert_fires([root], "F01")
        seen = {e.get("path"): str(e.get("value")) for e in root["evidence"] if e["source"] == "ray"}
        assert seen.get("listening on port 8265") == "['127.0.0.1']", seen
        assert any("ECONNREFUSED" in v for p, v in seen.items() if p.startswith("connect ")), seen

        await a_port_clash_is_named(proc, pkube, ns)
        await a_stuck_agent_is_named(proc, pkube, ns, "hung")
    finally:
        os.kill(agent, signal.SIGCONT)

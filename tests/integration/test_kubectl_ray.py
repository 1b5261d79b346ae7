"""``kubectl ray`` against the sandbox, run as users run it: the ``kubectl-ray`` executable the package installs (once
through kubectl's own plugin lookup), with ``KUBECONFIG`` set.

* On kwok nodes, with the operator in-process: create (``--dry-run`` and ``--wait``), get cluster / workergroup /
  node / token, scale, create workergroup, version, doctor and delete, with KubeRay v1.7.0's columns and messages.
* On process nodes with real Ray: ``job submit`` of a generated RayJob runs a Ray job from this process to SUCCEEDED
  and prints its output; ``log`` brings back each Pod's Ray logs; ``session`` forwards the dashboard on 127.0.0.1 and
  ends cleanly on Ctrl-C.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import httpx2
from lightkube import AsyncClient

from raykube.api.resources import RAYCLUSTERS, RAYJOBS
from raykube.kube.client import Kube
from raykube.kube.resources import DEPLOYMENTS, SECRETS
from raykube.runtime.manager import Manager
from raykube.sandbox import Binaries
from raykube.sandbox import versions as sandbox_versions
from raykube.sandbox.kubelet import images
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox

PLUGIN = Path(sys.executable).parent / "kubectl-ray"
RAY_IMAGE = "rayproject/ray:2.52.0"
SMALL = ["--head-cpu", "1", "--head-memory", "2Gi", "--worker-cpu", "1", "--worker-memory", "2Gi"]


async def plugin(
    kubeconfig: Path, *args: str, stdin: str = "", path: str = "", cwd: Path | None = None, limit: float = 120
) -> tuple[int, str, str]:
    """``kubectl-ray ARGS`` in a child process (the operator under test shares this event loop, so never block it)."""
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "COLUMNS": "200"}
    if path:
        env["PATH"] = f"{path}:{env.get('PATH', '')}"
    child = await asyncio.create_subprocess_exec(
        str(PLUGIN), *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd,
    )  # fmt: skip
    out, err = await asyncio.wait_for(child.communicate(stdin.encode()), limit)
    return child.returncode or 0, out.decode(), err.decode()


def words(table: str) -> list[list[str]]:
    return [line.split() for line in table.splitlines()]


async def test_the_read_and_write_commands_on_kwok(  # noqa: PLR0915 - one cluster through every command
    kubeconfig: Path, namespace: str, operator: Manager, runtime_kube: Kube
) -> None:
    ns, cfg = namespace, kubeconfig
    code, out, err = await plugin(cfg, "create", "cluster", "demo", "-n", ns, "--dry-run")
    assert code == 0, err
    assert out.startswith("apiVersion: ray.io/v1\nkind: RayCluster\n") and out.endswith("\n\n")
    assert await runtime_kube.get_or_none(RAYCLUSTERS, "demo", ns) is None  # a dry run writes nothing

    code, out, err = await plugin(
        cfg, "create", "cluster", "demo", "-n", ns, *SMALL, "--worker-replicas", "2", "--labels", "team=ml",
        "--wait", "--timeout", "90s",
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines() == ["Created Ray cluster: demo", "Ray cluster demo is provisioned"]
    stored = await runtime_kube.get(RAYCLUSTERS, "demo", ns)
    assert stored["metadata"]["labels"] == {"team": "ml"}
    assert {f["manager"] for f in stored["metadata"]["managedFields"]} >= {"ray-kubectl-plugin"}

    code, _, err = await plugin(cfg, "create", "cluster", "demo", "-n", ns)
    assert (code, err) == (1, f"Error: the Ray cluster demo in namespace {ns} already exists\n")

    async def available(expected: str) -> str | NotYet:
        code, out, err = await plugin(cfg, "get", "workergroup", "-n", ns)
        return out if code == 0 and expected in out else NotYet(out + err)

    # KubeRay's columns; through kubectl itself, which finds kubectl-ray on PATH.
    kubectl = Binaries.from_cache().kubectl
    child = await asyncio.create_subprocess_exec(
        str(kubectl), "ray", "get", "cluster", "-n", ns, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": str(cfg), "PATH": f"{PLUGIN.parent}:{os.environ.get('PATH', '')}"},
    )  # fmt: skip
    raw_out, raw_err = await child.communicate()
    assert child.returncode == 0, raw_err.decode()
    table = words(raw_out.decode())
    assert table[0] == ["NAME", "NAMESPACE", "DESIRED", "WORKERS", "AVAILABLE", "WORKERS", "CPUS", "GPUS", "TPUS",
                        "MEMORY", "CONDITION", "STATUS", "AGE"]  # fmt: skip
    assert table[1][:-1] == ["demo", ns, "2", "2", "3", "0", "0", "6Gi", "RayClusterProvisioned", "ready"]

    # Shell completion through kubectl (1.26+ runs kubectl_complete-ray): the cluster's name, then its types.
    child = await asyncio.create_subprocess_exec(
        str(kubectl), "__complete", "ray", "get", "cluster", "-n", ns, "de", stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": str(cfg), "PATH": f"{PLUGIN.parent}:{os.environ.get('PATH', '')}"},
    )  # fmt: skip
    raw_out, raw_err = await child.communicate()
    assert raw_out.decode().splitlines() == ["demo", ":4"], raw_out.decode() + raw_err.decode()

    group_table = words(await wait_for(lambda: available("2/2"), 60, what="2/2 workers in get workergroup"))
    assert group_table == [
        ["NAME", "MIN", "MAX", "REPLICAS", "CPUS", "GPUS", "TPUS", "MEMORY", "CLUSTER"],
        ["default-group", "0", "2147483647", "2/2", "2", "0", "0", "4Gi", "demo"],
    ]
    code, out, _ = await plugin(cfg, "get", "nodes", "-n", ns, "-c", "demo")
    nodes = words(out)
    assert nodes[0] == ["NAME", "CPUS", "GPUS", "TPUS", "MEMORY", "CLUSTER", "TYPE", "WORKER", "GROUP", "AGE"]
    assert sorted(row[5:8] for row in nodes[1:]) == [
        ["demo", "head", "headgroup"], ["demo", "worker", "default-group"], ["demo", "worker", "default-group"],
    ]  # fmt: skip
    code, out, err = await plugin(cfg, "get", "cluster", "nope", "-n", ns)
    assert (code, out, err) == (1, "", f"Error: Ray cluster nope not found in namespace {ns}\n")
    code, out, _ = await plugin(cfg, "get", "cluster", "-n", "kube-public")
    assert (code, out) == (0, "")  # nothing found: no table, not even headers

    # scale and create workergroup change the spec; the operator follows.
    code, out, err = await plugin(cfg, "scale", "cluster", "demo", "-w", "default-group", "-r", "3", "-n", ns)
    assert (code, out) == (0, f"Updated worker group default-group in Ray cluster demo in namespace {ns} "
                              "(Scaled Replicas: 2 to 3)\n"), err  # fmt: skip
    await wait_for(lambda: available("3/3"), 60, what="3/3 workers after scale")
    code, _, err = await plugin(cfg, "scale", "cluster", "demo", "-w", "nope", "-r", "1", "-n", ns)
    assert code == 1 and "worker group nope not found in Ray cluster demo" in err
    assert "Available worker groups: default-group" in err
    code, out, err = await plugin(
        cfg, "create", "workergroup", "small", "-c", "demo", "-n", ns, "--worker-cpu", "500m", "--worker-memory", "1Gi"
    )
    assert (code, out) == (0, f"Updated Ray cluster {ns}/demo with new worker group\n"), err
    await wait_for(lambda: available("small"), 30, what="the new group in get workergroup")
    group_table = words(await wait_for(lambda: available("1/1"), 60, what="the new group's worker"))
    assert ["small", "1", "10", "1/1", "500m", "0", "0", "1Gi", "demo"] in group_table

    # get token: only for a cluster with token auth, whose Secret the operator made.
    code, _, err = await plugin(cfg, "get", "token", "demo", "-n", ns)
    assert (code, err) == (1, f"Error: RayCluster {ns}/demo was not configured to use authentication tokens\n")
    authed: dict[str, Any] = {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "authed", "namespace": ns},
        "spec": {
            "rayVersion": "2.52.0", "authOptions": {"mode": "token"},
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": RAY_IMAGE}]}}},
        },
    }  # fmt: skip
    await runtime_kube.create(RAYCLUSTERS, authed, ns)

    async def secret() -> dict[str, Any] | NotYet:
        return await runtime_kube.get_or_none(SECRETS, "authed", ns) or NotYet("no auth Secret yet")

    token = base64.b64decode((await wait_for(secret, 60, what="the auth Secret"))["data"]["auth_token"]).decode()
    code, out, err = await plugin(cfg, "get", "token", "authed", "-n", ns)
    assert (code, out) == (0, token), err  # no newline: $(kubectl ray get token authed) is the token

    # version names the operator Deployment's image tag (the chart's label); doctor is there too.
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "kuberay-operator", "labels": {"app.kubernetes.io/name": "kuberay-operator"}},
        "spec": {
            "replicas": 0, "selector": {"matchLabels": {"app": "op"}},
            "template": {"metadata": {"labels": {"app": "op"}},
                         "spec": {"containers": [{"name": "op", "image": "quay.io/kuberay/operator:v1.6.1"}]}},
        },
    }  # fmt: skip
    await runtime_kube.create(DEPLOYMENTS, deployment, ns)
    code, out, _ = await plugin(cfg, "version")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("kubectl ray plugin version: raykube ")
    assert lines[1].startswith("KubeRay operator version: "), lines
    code, out, err = await plugin(cfg, "doctor", "raycluster/demo", "-n", ns, "--no-exec", "-o", "json", "--exit-zero")
    assert code == 0 and json.loads(out)["apiVersion"].startswith("doctor.raykube.io/"), out + err

    # delete asks first; "n" keeps the cluster, "y" deletes it.
    code, out, _ = await plugin(cfg, "delete", "demo", "rayjob/none", "-n", ns, stdin="n\n")
    assert out == (
        "Are you sure you want to delete the following resources?\n- raycluster/demo\n- rayjob/none\n(y/yes/n/no) "
        "Canceled deletion.\n"
    )
    assert await runtime_kube.get_or_none(RAYCLUSTERS, "demo", ns) is not None
    code, out, err = await plugin(cfg, "delete", "demo", "-n", ns, stdin="yes\n")
    assert (code, out.splitlines()[-1]) == (0, "(y/yes/n/no) Deleted raycluster demo"), err
    code, _, err = await plugin(cfg, "delete", "rayjob/none", "-y", "-n", ns)
    assert (code, err) == (1, 'Error: failed to delete rayjob/none: rayjobs.ray.io "none" not found\n')


# ------------------------------------------------------------------------------------------------- real Ray
def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


async def test_job_submit_log_and_session_on_real_ray(  # noqa: PLR0915 - one cluster through three commands
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager, tmp_path: Path
) -> None:
    # A laptop with Ray installed: the same venv the process runtime runs rayproject/ray:2.52.0 from.
    ray = await images.ImageStore(sandbox_versions.cache_root()).ensure(images.parse(RAY_IMAGE), lambda _: None)
    path = f"{ray.bin_dir}:{Binaries.from_cache().kubectl.parent}"
    cfg = proc.kubeconfig
    code, out, err = await plugin(
        cfg, "job", "submit", "-n", ns, "--name", "demo", *SMALL, "--",
        "python", "-c", "import ray; ray.init(); print('resources', ray.cluster_resources())",
        path=path, limit=420,
    )  # fmt: skip
    assert code == 0, out + err
    lines = out.splitlines()
    submission = lines[0].removeprefix("Generated submission ID for Ray job: ")
    assert submission.startswith("raysubmit_") and len(submission) == len("raysubmit_") + 16
    assert "Submitted RayJob demo." in lines and "Port forwarding started on http://127.0.0.1:8265" in lines
    assert any(line.startswith("resources {") and "'CPU': 2.0" in line for line in lines), out
    assert lines[-1] == f"Job {submission} finished with status SUCCEEDED."
    kube = Kube.from_config(cfg)
    try:
        job = await kube.get(RAYJOBS, "demo", ns)
        assert (job["spec"]["jobId"], job["status"]["jobStatus"]) == (submission, "SUCCEEDED")
        assert job["spec"]["submissionMode"] == "InteractiveMode"
        assert {f["manager"] for f in job["metadata"]["managedFields"]} >= {"ray-kubectl-plugin"}
    finally:
        await kube.close()
    assert _port_free(8265), "job submit left its port-forward behind"

    # log: every Pod's container log and Ray's log directory, in ./<cluster name>/<pod>/.
    code, out, err = await plugin(cfg, "log", "rayjob/demo", "-n", ns, cwd=tmp_path)
    assert code == 0, out + err
    lines = out.splitlines()
    assert lines[:2] == [  # v1.7.0's order (KP-4)
        "Command set to retrieve both head and worker node logs.",
        "No output directory specified, creating dir under current directory using resource name.",
    ]
    assert len([line for line in lines if line.startswith("Downloading log for Ray Node ")]) == 2
    pods = sorted(p for p in (tmp_path / "demo").iterdir())
    assert len(pods) == 2, pods
    for pod in pods:
        assert "Ray runtime started" in (pod / "stdout.log").read_text()
        assert (pod / "raylet.out").stat().st_size > 0

    # session: the dashboard on 127.0.0.1:8265 until Ctrl-C, then nothing left listening.
    env = {**os.environ, "KUBECONFIG": str(cfg), "PATH": f"{path}:{os.environ.get('PATH', '')}"}
    session = await asyncio.create_subprocess_exec(
        str(PLUGIN), "session", "rayjob/demo", "-n", ns, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip

    async def dashboard() -> str | NotYet:
        if session.returncode is not None:
            raise AssertionError(f"kubectl ray session ended early: exit {session.returncode}")
        try:
            async with httpx2.AsyncClient(trust_env=False, timeout=5) as http:
                response = await http.get("http://127.0.0.1:8265/api/version")
        except httpx2.HTTPError as exc:
            return NotYet(repr(exc))
        return response.text if response.is_success else NotYet(str(response.status_code))

    try:
        version = await wait_for(dashboard, 60, what="the dashboard through kubectl ray session")
    finally:
        session.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            out_b, _ = await asyncio.wait_for(session.communicate(), 30)
        except TimeoutError:
            session.kill()
            raise AssertionError("kubectl ray session did not end within 30 s of SIGINT") from None
    assert "ray_version" in version, version
    assert out_b.decode().splitlines()[:2] == [
        f"Forwarding ports to service {job['status']['rayClusterStatus']['head']['serviceName']}",
        "Ray Dashboard: http://localhost:8265",
    ]
    await wait_for(lambda: _port_free(8265) or NotYet("8265 still bound"), 10, what="the session's port to be freed")

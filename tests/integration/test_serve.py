"""Ray Serve on process nodes, without a RayService controller: the groundwork RayService stands on.

A RayCluster (1 head, 1 small worker) mounts the local Serve app (``examples/06-serve-app.yaml``, a module in a
ConfigMap, on PYTHONPATH); its Serve config (``examples/serve/serve-config.yaml``, as ``serve build`` writes it) is
PUT as JSON to the dashboard's ``/api/serve/applications/`` through the API server's service proxy, as KubeRay does
with ``--use-kubernetes-proxy``; once the dashboard reports the application RUNNING, Serve's proxy on port 8000
answers through a ClusterIP Service (from inside another Pod; the process runtime proxies ClusterIPs) and through
``kubectl port-forward svc/...`` on 127.0.0.1.

Marked long (``make conformance`` runs it): ``test_rayservice.py`` checks all of this through the RayService controller
on every ``make test``; this test is where to look first when that one fails on Serve rather than on the operator.
"""

from __future__ import annotations

import asyncio
import copy
import json
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from lightkube import AsyncClient

from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.integration.test_process_runtime import RAYCLUSTER, create, pod_of, port_forward, wait_cluster

IMAGE = "rayproject/ray:2.52.0"
EXAMPLES = Path(__file__).parents[2] / "examples"
APP_DIR = "/home/ray/serve-app"
SERVE_READY = 300.0  # generous: Serve's controller, proxies and a replica start on two loaded cores


def serve_config() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / "serve" / "serve-config.yaml").read_text())
    return config


def serve_app(namespace: str) -> dict[str, Any]:
    configmap: dict[str, Any] = yaml.safe_load((EXAMPLES / "06-serve-app.yaml").read_text())
    configmap["metadata"]["namespace"] = namespace
    return configmap


def container(name: str, cpu: str, memory: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    """A Ray container with the Serve app's ConfigMap mounted and on PYTHONPATH (what 06-serve-app.yaml says)."""
    return {
        "name": name,
        "image": IMAGE,
        "env": [{"name": "PYTHONPATH", "value": APP_DIR}],
        "ports": ports,
        "resources": {"limits": {"cpu": cpu, "memory": memory}, "requests": {"cpu": cpu, "memory": memory}},
        "volumeMounts": [{"name": "serve-app", "mountPath": APP_DIR}],
    }


def serve_cluster(name: str) -> dict[str, Any]:
    volumes = [{"name": "serve-app", "configMap": {"name": "serve-app"}}]
    head = container(
        "ray-head",
        "1",
        "2Gi",
        [
            {"name": "gcs-server", "containerPort": 6379},
            {"name": "dashboard", "containerPort": 8265},
            {"name": "client", "containerPort": 10001},
            {"name": "serve", "containerPort": 8000},
        ],
    )
    worker = container("ray-worker", "1", "1Gi", [{"name": "serve", "containerPort": 8000}])
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head], "volumes": volumes}}},
            "workerGroupSpecs": [
                {
                    "groupName": "small",
                    "replicas": 1,
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [worker], "volumes": volumes}},
                }
            ],
        },
    }


async def greet(port: int, name: str, path: str = "/") -> str | NotYet:
    """``GET <path>?name=<name>`` on 127.0.0.1:``port`` (a port-forward to Serve's proxy): the answer, or why none
    yet."""
    try:
        async with httpx2.AsyncClient(trust_env=False, timeout=10) as http:
            got = await http.get(f"http://127.0.0.1:{port}{path}", params={"name": name})
    except httpx2.HTTPError as exc:
        return NotYet(str(exc))
    return got.text if got.status_code == 200 else NotYet(f"{got.status_code} {got.text[-300:]}")


def dashboard_path(namespace: str, cluster: str, path: str) -> str:
    """``path`` on the cluster's dashboard through the API server's service proxy (KubeRay's
    ``--use-kubernetes-proxy``)."""
    return f"/api/v1/namespaces/{namespace}/services/{cluster}-head-svc:dashboard/proxy{path}"


async def put_serve_config(proc: ProcessSandbox, namespace: str, cluster: str, config: dict[str, Any]) -> None:
    """PUT ``config`` as JSON to ``/api/serve/applications/`` (as KubeRay does), until the dashboard takes it."""
    body = proc.root / f"serve-config-{namespace}-{time.monotonic_ns()}.json"
    body.write_text(json.dumps(config))
    path = dashboard_path(namespace, cluster, "/api/serve/applications/")

    async def accepted() -> bool | NotYet:
        run = await asyncio.to_thread(proc.kubectl, "replace", "--raw", path, "-f", str(body))
        return True if run.returncode == 0 else NotYet(f"PUT {path}: {run.stderr.strip()[-600:]}")

    await wait_for(accepted, 120, what="the dashboard to accept the Serve config")


async def wait_app(proc: ProcessSandbox, namespace: str, cluster: str, app: str, status: str) -> dict[str, Any]:
    """``GET /api/serve/applications/`` until application ``app`` has ``status``; the whole answer."""
    path = dashboard_path(namespace, cluster, "/api/serve/applications/")

    async def reported() -> dict[str, Any] | NotYet:
        run = await asyncio.to_thread(proc.kubectl, "get", "--raw", path)
        if run.returncode != 0:
            return NotYet(run.stderr.strip()[-600:])
        answer: dict[str, Any] = json.loads(run.stdout)
        seen = (answer.get("applications") or {}).get(app) or {}
        if seen.get("status") == status:
            return answer
        return NotYet(f"{app}: {seen.get('status')} {str(seen.get('message'))[-400:]}")

    found: dict[str, Any] = await wait_for(reported, SERVE_READY, what=f"Serve application {app} to be {status}")
    return found


@pytest.mark.long
async def test_a_local_serve_app_answers_through_a_cluster_ip_and_a_port_forward(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    await create(pkube, ns, serve_app(ns))
    await pkube.create(RAYCLUSTER.from_dict(serve_cluster("serve")), namespace=ns)
    await wait_cluster(pkube, ns, "serve", lambda s: s.get("state") == "ready", "ready")
    head, worker = await pod_of(pkube, ns, "head"), await pod_of(pkube, ns, "worker")

    started = time.monotonic()
    await put_serve_config(proc, ns, "serve", serve_config())
    answer = await wait_app(proc, ns, "serve", "hello", "RUNNING")
    print(f"Serve app RUNNING {time.monotonic() - started:.1f}s after the PUT")  # noqa: T201 - for the report
    application = answer["applications"]["hello"]
    assert application["deployments"]["Greeter"]["status"] == "HEALTHY"
    assert answer["proxy_location"] == "EveryNode" and answer["http_options"]["port"] == 8000

    # (a) A ClusterIP Service selecting the head Pod, reached from the worker Pod: the runtime's ClusterIP proxy.
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hello-serve"},
        "spec": {
            "selector": {"ray.io/cluster": "serve", "ray.io/node-type": "head"},
            "ports": [{"name": "serve", "port": 8000, "targetPort": 8000}],
        },
    }
    await create(pkube, ns, service)

    async def through_cluster_ip(path: str, expected: str) -> str:
        script = f"curl -s --max-time 5 http://hello-serve.{ns}.svc.cluster.local:8000{path}"

        async def answered() -> str | NotYet:
            run = await asyncio.to_thread(proc.kubectl, "exec", "-n", ns, worker, "--", "bash", "-c", script)
            return run.stdout if expected in run.stdout else NotYet(f"{run.stdout[-300:]} {run.stderr[-300:]}")

        out: str = await wait_for(answered, 60, what=f"{path} through the ClusterIP Service")
        return out

    assert await through_cluster_ip("/?name=clusterip", "Hello, clusterip!") == "Hello, clusterip!\n"
    assert await through_cluster_ip("/-/healthz", "success") == "success"  # Serve's proxy health (KubeRay's check)

    # (b) kubectl port-forward svc/hello-serve :8000 from the test process, on 127.0.0.1.
    async with port_forward(proc, ns, "svc/hello-serve", 8000) as port:

        async def forwarded() -> str | NotYet:
            return await greet(port, "port-forward")

        assert await wait_for(forwarded, 60, what="the app through the port-forward") == "Hello, port-forward!\n"

        # A new user_config is applied in place: same application, new greeting, no new cluster.
        config = copy.deepcopy(serve_config())
        config["applications"][0]["deployments"][0]["user_config"] = {"greeting": "Hi"}
        await put_serve_config(proc, ns, "serve", config)

        async def greeted_anew() -> str | NotYet:
            text = await forwarded()
            return text if text == "Hi, port-forward!\n" else NotYet(str(text))

        await wait_for(greeted_anew, SERVE_READY, what="the new greeting through the port-forward")
    # The head Pod the Service selected answered; Ray's own view agrees on the version the image names.
    run = await asyncio.to_thread(proc.kubectl, "exec", "-n", ns, head, "--", "serve", "status")
    assert run.returncode == 0 and "hello" in run.stdout and "RUNNING" in run.stdout, run.stdout + run.stderr

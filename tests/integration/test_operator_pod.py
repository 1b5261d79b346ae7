"""The operator in its own Pod, on process nodes: what a user's cluster runs, not a process beside it.

``helm install`` of helm/raykube-operator on the process sandbox gives a Deployment whose Pod runs ``raykube
operator`` for real: its image (``ghcr.io/raykube/raykube-operator:<version>``) maps to the project's environment, its
ServiceAccount token is mounted at the usual path, and the operator finds its in-cluster config there and reaches the
API server through the ``kubernetes`` Service, as in any cluster. The kubelet probes it on 8082; its metrics on 8080
answer through the chart's Service; its log is read with ``kubectl logs deploy/...``. With two replicas one holds the
leader Lease, and when that Pod goes the Lease passes to another one, which reconciles from there.

The chart's cluster-scoped objects get a name of their own (``fullnameOverride``, as in test_helm_chart) and
``helm uninstall`` removes them; the operator watches only this test's namespace, where nothing else reconciles.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx2
from lightkube import AsyncClient
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Pod

from raykube.api.constants import RAYCLUSTER_CONTROLLER_NAME
from raykube.api.crd import load_generated
from raykube.kube.client import Kube
from raykube.runtime.crds import install_crds
from raykube.sandbox.kubelet.images import OPERATOR_REPOSITORY
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.integration.test_helm_chart import CHART, run_helm
from tests.integration.test_process_runtime import RAYCLUSTER, port_forward

LEASE = "ray-operator-leader"  # KubeRay's leader election id (the chart's --leader-election-namespace is the release's)
ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def suspended_cluster(name: str) -> dict[str, Any]:
    """A RayCluster the operator reconciles without starting Ray (``suspend: true``: no Pods, state suspended)."""
    resources = {"limits": {"cpu": "250m", "memory": "256Mi"}}
    container = {"name": "ray-head", "image": "rayproject/ray:2.52.0", "resources": resources}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "suspend": True,
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        },
    }


def events(proc: ProcessSandbox, ns: str, name: str) -> list[dict[str, Any]]:
    """``kubectl get events`` of one object, as JSON."""
    run = proc.kubectl("get", "events", "-n", ns, "--field-selector", f"involvedObject.name={name}", "-o", "json")
    assert run.returncode == 0, run.stderr
    return list(json.loads(run.stdout)["items"])


async def operator_pods(pkube: AsyncClient, ns: str) -> list[Pod]:
    pods = [p async for p in pkube.list(Pod, namespace=ns, labels={"app.kubernetes.io/component": "kuberay-operator"})]
    return [p for p in pods if p.metadata and not p.metadata.deletionTimestamp]


def running_and_ready(pod: Pod) -> bool:
    status = pod.status
    ready = {c.type: c.status for c in (status and status.conditions) or []}.get("Ready")
    return status is not None and status.phase == "Running" and ready == "True"


async def leader(pkube: AsyncClient, ns: str) -> str:
    """The Pod holding the Lease (the identity is ``<pod name>_<uuid>``, as controller-runtime's)."""
    lease = await pkube.get(Lease, LEASE, namespace=ns)
    holder = (lease.spec and lease.spec.holderIdentity) or ""
    return holder.partition("_")[0]


async def wait_suspended(pkube: AsyncClient, ns: str, name: str) -> None:
    async def suspended() -> bool | NotYet:
        status = (await pkube.get(RAYCLUSTER, name, namespace=ns)).to_dict().get("status") or {}
        return True if status.get("state") == "suspended" else NotYet(json.dumps(status)[:400])

    await wait_for(suspended, 60, what=f"RayCluster {ns}/{name} suspended by the operator in its Pod")


async def test_helm_install_runs_the_operator_in_its_own_pod_and_two_replicas_elect_one_leader(
    helm: tuple[Path, dict[str, str]], proc: ProcessSandbox, pkube: AsyncClient, ns: str
) -> None:
    installer = Kube.from_config(proc.kubeconfig)
    try:
        await install_crds(installer, load_generated())
    finally:
        await installer.close()
    release = f"rk-{uuid.uuid4().hex[:6]}"
    fullname = f"raykube-{release}"
    kubectl_args = ("--kubeconfig", str(proc.kubeconfig), "--namespace", ns)
    values = ("--set", f"fullnameOverride={fullname}", "--set", f"watchNamespace={{{ns}}}")
    result = run_helm(helm, "install", release, str(CHART), *kubectl_args, *values)
    assert result.returncode == 0, result.stdout + result.stderr
    try:
        await the_operator_runs_in_its_pod(proc, pkube, ns, fullname)
        await two_replicas_elect_one_leader(proc, pkube, ns, fullname)
    finally:
        result = run_helm(helm, "uninstall", release, *kubectl_args)
        assert result.returncode == 0, result.stdout + result.stderr


async def the_operator_runs_in_its_pod(proc: ProcessSandbox, pkube: AsyncClient, ns: str, fullname: str) -> None:
    async def running() -> Pod | NotYet:
        pods = await operator_pods(pkube, ns)
        ready = [p for p in pods if running_and_ready(p)]
        return ready[0] if len(ready) == 1 else NotYet(str([(p.metadata and p.metadata.name, p.status) for p in pods]))

    pod = await wait_for(running, 120, what="the operator Pod Running and Ready (its readiness probe on 8082)")
    assert pod.metadata is not None and pod.metadata.name and pod.spec is not None
    name = pod.metadata.name
    assert (pod.spec.nodeName or "").startswith("process-node-"), pod.spec.nodeName
    [container] = pod.spec.containers
    assert (container.image or "").startswith(f"{OPERATOR_REPOSITORY}:")
    assert container.readinessProbe and container.readinessProbe.httpGet
    assert container.readinessProbe.httpGet.port in (8082, "probes")
    table = proc.kubectl("get", "pods", "-n", ns, "--no-headers").stdout.split()
    assert table[:3] == [name, "1/1", "Running"], table

    pulled = [e.get("message", "") for e in events(proc, ns, name)]
    assert any("from the project's environment" in m for m in pulled), pulled

    # In-cluster config: the ServiceAccount token and the namespace at the usual path, the kubernetes Service's env.
    token_ns = proc.kubectl("exec", "-n", ns, name, "--", "cat", f"{ACCOUNT_DIR}/namespace")
    assert token_ns.stdout == ns, token_ns.stderr
    env = proc.kubectl("exec", "-n", ns, name, "--", "printenv", "KUBERNETES_SERVICE_HOST").stdout.strip()
    assert env == "10.96.0.1", env

    # It is the leader and reconciles: a RayCluster in the watched namespace is suspended by it, with its events.
    assert await wait_for(lambda: leader(pkube, ns), 30, what="the Lease held") == name
    await pkube.create(RAYCLUSTER.from_dict(suspended_cluster("first")), namespace=ns)
    await wait_suspended(pkube, ns, "first")
    sources = {
        e.get("reportingComponent") or (e.get("source") or {}).get("component") for e in events(proc, ns, "first")
    }
    assert RAYCLUSTER_CONTROLLER_NAME in sources, sources

    logs = proc.kubectl("logs", "-n", ns, f"deploy/{fullname}").stdout
    lines = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    messages = [line["msg"] for line in lines]
    assert f"leader election: acquired lease {ns}/{LEASE}" in messages, messages[:20]
    assert any(m.startswith("caches synced") for m in messages), messages[:20]

    # Metrics on 8080, through the chart's Service.
    async with port_forward(proc, ns, f"svc/{fullname}", 8080) as port:

        async def metrics() -> str | NotYet:
            try:
                async with httpx2.AsyncClient(trust_env=False, timeout=10) as http:
                    return (await http.get(f"http://127.0.0.1:{port}/metrics")).text
            except httpx2.HTTPError as exc:
                return NotYet(str(exc))

        text = await wait_for(metrics, 30, what="the operator's /metrics through its Service")
    assert 'controller_runtime_max_concurrent_reconciles{controller="raycluster"}' in text
    assert 'controller_runtime_reconcile_total{controller="raycluster"' in text


async def two_replicas_elect_one_leader(proc: ProcessSandbox, pkube: AsyncClient, ns: str, fullname: str) -> None:
    scaled = proc.kubectl("scale", "-n", ns, f"deploy/{fullname}", "--replicas=2")
    assert scaled.returncode == 0, scaled.stderr

    async def two_ready() -> list[str] | NotYet:
        pods = await operator_pods(pkube, ns)
        names = sorted(p.metadata.name for p in pods if running_and_ready(p) and p.metadata and p.metadata.name)
        return names if len(names) == 2 else NotYet(f"ready: {names}")

    names = await wait_for(two_ready, 120, what="two operator replicas Running and Ready")
    first = await leader(pkube, ns)
    [standby] = [n for n in names if n != first]
    standby_log = proc.kubectl("logs", "-n", ns, standby).stdout
    assert f"waiting for lease {ns}/{LEASE}" in standby_log and "acquired lease" not in standby_log, standby_log

    deleted = proc.kubectl("delete", "pod", "-n", ns, first, "--wait=false")
    assert deleted.returncode == 0, deleted.stderr

    async def handed_over() -> str | NotYet:
        holder = await leader(pkube, ns)
        return holder if holder not in ("", first) else NotYet(f"holder {holder or 'none'}")

    # The leader releases the Lease when it stops (SIGTERM): the standby, or the Pod that replaces the deleted one,
    # takes it within a retry period, not a whole lease duration.
    second = await wait_for(handed_over, 60, what="another replica to take the Lease")
    assert second != first
    await pkube.create(RAYCLUSTER.from_dict(suspended_cluster("second")), namespace=ns)
    await wait_suspended(pkube, ns, "second")

"""The operator as a product, on the sandbox: probes and metrics, and the generated least-privilege RBAC, with the
operator authenticated as its own ServiceAccount. Leader election between processes: test_leader_failover.py."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from lightkube import AsyncClient
from lightkube.codecs import from_dict
from lightkube.generic_resource import create_global_resource

from raykube.api import rbac
from raykube.api.config import OperatorConfig
from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import EVENTS, PODS
from raykube.runtime.operator import Operator
from raykube.sandbox import Binaries
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import (
    cluster_pods,
    create_seed_dependencies,
    seed_cluster,
    wait_ready,
    workers_of,
)
from tests.support import RunningSandbox

CLUSTER_ROLE = create_global_resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles")
CLUSTER_ROLE_BINDING = create_global_resource(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings"
)


def _local(port: int = 0) -> str:
    return f"127.0.0.1:{port}"


async def _curl(url: str) -> tuple[int, str]:
    """What `curl` shows on the address (status code, body). Asynchronous, so an operator running in this event
    loop can answer it."""
    process = await asyncio.create_subprocess_exec(
        "curl", "-s", "-m", "20", "-w", "\n%{http_code}", url, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    body, _, code = out.decode().rpartition("\n")
    return int(code or 0), body


# ------------------------------------------------------------------------------------------- probes and metrics
async def test_probes_answer_and_metrics_show_kuberay_cluster_info_for_a_live_cluster(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, ray_crds: list[str]
) -> None:
    config = OperatorConfig(
        kubeconfig=kubeconfig, enable_leader_election=False, enable_metrics=True, probe_addr=_local(),
        metrics_addr=_local(), watch_namespaces=(namespace,),
    )  # fmt: skip
    operator = Operator(config)
    stop = asyncio.Event()
    running = asyncio.create_task(operator.run(stop))
    try:
        await wait_for(lambda: operator.metrics_server is not None and operator.metrics_server.port != 0, 10)
        probes = f"http://127.0.0.1:{operator.probes.port}"
        metrics = f"http://127.0.0.1:{operator.metrics_server.port}/metrics"  # type: ignore[union-attr]
        assert await _curl(f"{probes}/healthz") == (200, "ok\n")

        async def ready() -> bool:
            return (await _curl(f"{probes}/readyz"))[0] == 200

        await wait_for(ready, 30, what="/readyz once the caches sync")

        await create_seed_dependencies(kube, namespace)
        await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
        cluster = await wait_ready(runtime_kube, namespace, workers=2)
        uid = cluster["metadata"]["uid"]

        async def shows_cluster() -> str | NotYet:
            code, body = await _curl(metrics)
            wanted = f'kuberay_cluster_info{{name="seed",namespace="{namespace}",owner_kind="None",uid="{uid}"}} 1.0'
            return body if code == 200 and wanted in body else NotYet(f"HTTP {code}")

        body = await wait_for(shows_cluster, 30, what="kuberay_cluster_info on the metrics address")
        assert f'kuberay_cluster_condition_provisioned{{condition="true",name="seed",namespace="{namespace}"' in body
        assert 'controller_runtime_reconcile_total{controller="raycluster",result=' in body
        assert re.search(r'raykube_api_requests_total\{code="201",resource="pods",verb="create"\} [1-9]', body)
        assert 'workqueue_depth{name="raycluster"}' in body
        assert "kuberay_cluster_provisioned_duration_seconds{" in body
    finally:
        stop.set()
        assert await running == 0
        await operator.kube.close()


# ------------------------------------------------------------------------------------------- RBAC
@pytest.fixture
async def service_account_kubeconfig(
    sandbox: RunningSandbox, kube: AsyncClient, namespace: str, tmp_path: Path, ray_crds: list[str]
) -> AsyncIterator[Path]:
    """ServiceAccount kuberay-operator in the test namespace, bound to a ClusterRole with exactly the generated
    operator rules, and a kubeconfig that authenticates as it."""
    name = f"raykube-{namespace}"[:63]
    await kube.create(from_dict({"apiVersion": "v1", "kind": "ServiceAccount",
                                 "metadata": {"name": "kuberay-operator"}}), namespace=namespace)  # fmt: skip
    await kube.create(CLUSTER_ROLE.from_dict(rbac.cluster_role(name, rbac.OPERATOR_RULES)))
    await kube.create(
        CLUSTER_ROLE_BINDING.from_dict(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": "kuberay-operator", "namespace": namespace}],
            }
        )
    )
    path = await sandbox.sandbox.service_account_kubeconfig(namespace, "kuberay-operator", tmp_path / "sa.kubeconfig")
    try:
        yield path
    finally:
        for res in (CLUSTER_ROLE_BINDING, CLUSTER_ROLE):
            try:
                await kube.delete(res, name)
            except Exception as exc:  # already gone is fine
                logging.getLogger(__name__).info("cleanup of %s: %s", name, exc)


def _can_i(kubeconfig: Path, namespace: str) -> list[tuple[str, str, str]]:
    """`kubectl auth can-i --list` as the ServiceAccount: (verb, group, resource) it may use."""
    out = subprocess.run(
        [str(Binaries.from_cache().kubectl), "auth", "can-i", "--list", "-n", namespace],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)}, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    allowed = []
    for line in out.splitlines()[1:]:
        if not line or line[0].isspace():  # a non-resource URL (/healthz, /api, ...): no resource column
            continue
        name, slash, subresource = line.split()[0].partition("/")  # e.g. rayclusters.ray.io/status
        resource, _, group = name.partition(".")
        resource += slash + subresource
        verbs = line[line.rindex("[") + 1 : line.rindex("]")]
        allowed += [(verb, group, resource) for verb in verbs.split()]
    return allowed


# Every authenticated user may do these (Kubernetes' system:basic-user): not part of the operator's rules.
_EVERYONE = {("create", "authentication.k8s.io", "selfsubjectreviews"),
             ("create", "authorization.k8s.io", "selfsubjectaccessreviews"),
             ("create", "authorization.k8s.io", "selfsubjectrulesreviews")}  # fmt: skip


async def test_as_its_service_account_the_operator_has_exactly_the_generated_rules_and_they_suffice(
    kube: AsyncClient, runtime_kube: Kube, namespace: str, service_account_kubeconfig: Path
) -> None:
    allowed = set(_can_i(service_account_kubeconfig, namespace)) - _EVERYONE
    generated = {(v, r.group, res) for r in rbac.OPERATOR_RULES for res in r.resources for v in r.verbs}
    assert allowed == generated

    config = OperatorConfig(
        kubeconfig=service_account_kubeconfig, enable_leader_election=False, probe_addr=_local(),
        watch_namespaces=(namespace,),
    )  # fmt: skip
    operator = Operator(config)
    stop = asyncio.Event()
    running = asyncio.create_task(operator.run(stop))
    try:
        await create_seed_dependencies(kube, namespace)
        await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
        await wait_ready(runtime_kube, namespace, workers=2)
    finally:
        stop.set()
        assert await running == 0
        await operator.kube.close()


async def test_a_missing_rule_is_logged_evented_and_counted_then_recovers_without_a_restart(
    kube: AsyncClient,
    runtime_kube: Kube,
    namespace: str,
    service_account_kubeconfig: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = OperatorConfig(
        kubeconfig=service_account_kubeconfig, enable_leader_election=False, probe_addr=_local(),
        watch_namespaces=(namespace,),
    )  # fmt: skip
    operator = Operator(config)
    stop = asyncio.Event()
    running = asyncio.create_task(operator.run(stop))
    role_name = f"raykube-{namespace}"[:63]
    try:
        await create_seed_dependencies(kube, namespace)
        await runtime_kube.create(RAYCLUSTERS, seed_cluster(), namespace)
        await wait_ready(runtime_kube, namespace, workers=2)

        without_create = [
            replace(r, verbs=tuple(v for v in r.verbs if v != "create")) if r.resources == ("pods",) else r
            for r in rbac.OPERATOR_RULES
        ]
        await kube.patch(CLUSTER_ROLE, role_name, {"rules": rbac.policy_rules(without_create)})
        patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3}]
        await runtime_kube.patch(RAYCLUSTERS, "seed", patch, namespace, patch_type="json")

        def forbidden_logged() -> str | NotYet:
            for record in caplog.records:
                text = record.getMessage()
                if "forbidden" in text and 'cannot create resource "pods"' in text:
                    return text
            return NotYet("no forbidden line yet")

        with caplog.at_level(logging.WARNING):
            await wait_for(forbidden_logged, 60, what="a forbidden line naming the verb and resource")

        async def warning_event() -> str | NotYet:
            for event in (await runtime_kube.list(EVENTS, namespace)).items:
                if event["type"] == "Warning" and event["reason"] == "FailedToCreateWorkerPod":
                    return str(event["note"])
            return NotYet("no Warning event yet")

        note = await wait_for(warning_event, 60, what="a Warning event on the RayCluster")
        assert "forbidden" in note
        counts = operator.metrics.request_counts()
        assert counts[("create", "pods")] > 0
        assert "403" in operator.metrics.exposition().decode()

        await kube.patch(CLUSTER_ROLE, role_name, {"rules": rbac.policy_rules(rbac.OPERATOR_RULES)})
        await wait_ready(runtime_kube, namespace, workers=3)  # the same process recovers on its own
        assert len(workers_of(await cluster_pods(runtime_kube, namespace))) == 3
    finally:
        stop.set()
        assert await running == 0
        await operator.kube.close()


async def test_the_client_refuses_calls_outside_the_generated_rules(kubeconfig: Path, namespace: str) -> None:
    strict = Kube.from_config(kubeconfig, rules=rbac.OPERATOR_RULES, field_manager="raykube-tests")
    try:
        with pytest.raises(PermissionError, match="raykube-tests called update on pods"):
            await strict.request("update", "PUT", PODS, PODS.path(namespace, "x"), body={})
        with pytest.raises(ApiError):  # allowed by the rules, so it reaches the API server
            await strict.get(PODS, "does-not-exist", namespace)
    finally:
        await strict.close()

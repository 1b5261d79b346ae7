"""The contract with Ray's autoscaler, proven with Ray's own KubeRay node provider (from the ``ray`` package).

The node provider is what runs in the autoscaler sidecar: it reads the RayCluster and its Pods, and answers the
autoscaler's decisions with one JSON patch of ``workerGroupSpecs[i].replicas`` and ``scaleStrategy.workersToDelete``.
Here it drives a cluster on the sandbox, talking to the API server through a small client of ours in place of the
in-cluster one (Ray's ``IKubernetesHttpApiClient`` interface exists for exactly that). The operator must give it the
Pods it asked for: more on scale-up; on scale-down exactly the named ones gone, and the list left for the provider
to clear once they are gone.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx2
import pytest
from lightkube import KubeConfig
from lightkube.config.client_adapter import ConnectionParams
from ray.autoscaler._private.kuberay import autoscaling_config
from ray.autoscaler._private.kuberay.node_provider import IKubernetesHttpApiClient, KubeRayNodeProvider
from ray.autoscaler.tags import NODE_KIND_WORKER, TAG_RAY_NODE_KIND, TAG_RAY_USER_NODE_TYPE

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import cluster_pods, wait_ready, workers_of
from tests.integration.test_raycluster_features import small_cluster

pytestmark = pytest.mark.usefixtures("operator")


class SandboxApiClient(IKubernetesHttpApiClient):  # type: ignore[misc]
    """Ray's node provider client interface, over the sandbox's kubeconfig instead of an in-cluster token."""

    def __init__(self, kubeconfig: Path, namespace: str) -> None:
        config = KubeConfig.from_file(kubeconfig).get()
        assert config is not None
        self.http = httpx2.Client(**ConnectionParams(trust_env=False).httpx_params(config))
        self.namespace = namespace

    def _url(self, path: str) -> str:
        group = "/api/v1" if path.startswith("pods") else "/apis/ray.io/v1"
        return f"{group}/namespaces/{self.namespace}/{path}"

    def get(self, path: str) -> dict[str, Any]:
        response = self.http.get(self._url(path))
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def patch(self, path: str, payload: list[dict[str, Any]]) -> dict[str, Any]:
        response = self.http.patch(
            self._url(path), json=payload, headers={"Content-Type": "application/json-patch+json"}
        )
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result


def provider(kubeconfig: Path, namespace: str, cluster: str) -> KubeRayNodeProvider:
    config = autoscaling_config._generate_provider_config(namespace)  # Ray's own provider settings
    node_provider = KubeRayNodeProvider(config, cluster)
    node_provider.k8s_api_client = SandboxApiClient(kubeconfig, namespace)
    return node_provider


async def test_rays_node_provider_scales_up_and_deletes_exactly_the_workers_it_names(
    runtime_kube: Kube, kubeconfig: Path, namespace: str
) -> None:
    await runtime_kube.create(RAYCLUSTERS, small_cluster("auto", workers=1, enableInTreeAutoscaling=True), namespace)
    await wait_ready(runtime_kube, namespace, workers=1, name="auto")
    autoscaler = provider(kubeconfig, namespace, "auto")
    try:
        await drive(autoscaler, runtime_kube, namespace)
    finally:
        autoscaler.k8s_api_client.http.close()


async def drive(autoscaler: KubeRayNodeProvider, runtime_kube: Kube, namespace: str) -> None:

    def scale_up() -> None:  # one autoscaler update: look, decide, submit
        autoscaler.non_terminated_nodes({})
        autoscaler.create_node({}, {TAG_RAY_USER_NODE_TYPE: "workers", TAG_RAY_NODE_KIND: NODE_KIND_WORKER}, 3)
        autoscaler.post_process()

    await asyncio.to_thread(scale_up)
    await wait_ready(runtime_kube, namespace, workers=4, name="auto")

    def scale_down() -> list[str]:
        nodes = autoscaler.non_terminated_nodes({TAG_RAY_NODE_KIND: NODE_KIND_WORKER})
        doomed = sorted(nodes)[:2]
        autoscaler.terminate_nodes(doomed)
        autoscaler.post_process()
        return doomed

    doomed = await asyncio.to_thread(scale_down)
    cluster = await runtime_kube.get(RAYCLUSTERS, "auto", namespace)
    group = cluster["spec"]["workerGroupSpecs"][0]
    assert group["replicas"] == 2
    assert sorted(group["scaleStrategy"]["workersToDelete"]) == doomed

    await wait_ready(runtime_kube, namespace, workers=2, name="auto")
    remaining = {p["metadata"]["name"] for p in workers_of(await cluster_pods(runtime_kube, namespace, "auto"))}
    assert not remaining & set(doomed)

    def provider_may_scale() -> bool:
        autoscaler.non_terminated_nodes({})
        return bool(autoscaler.safe_to_scale())  # clears workersToDelete once the named Pods are gone

    async def cleared() -> bool | NotYet:
        if not await asyncio.to_thread(provider_may_scale):
            return NotYet("the provider still sees a worker it asked to delete")
        current = await runtime_kube.get(RAYCLUSTERS, "auto", namespace)
        listed = current["spec"]["workerGroupSpecs"][0].get("scaleStrategy", {}).get("workersToDelete")
        return not listed or NotYet(f"workersToDelete still {listed}")

    await wait_for(cleared, 30, what="the node provider to clear workersToDelete")
    assert len(workers_of(await cluster_pods(runtime_kube, namespace, "auto"))) == 2

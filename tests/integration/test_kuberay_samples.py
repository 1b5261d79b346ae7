"""Every RayCluster sample shipped with KubeRay v1.6.1 reconciles on the sandbox without a Warning event.

Each sample is applied as a user would apply it (its ConfigMaps, Secrets, Redis Deployment and Service too), into a
fresh namespace watched by the in-process operator. The operator must create the head Pod and every worker Pod the
sample asks for, write status, and emit no Warning event. Pods may stay Pending (TPU resources, batch schedulers that
the sandbox does not run); that is the scheduler's business, not the operator's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient
from lightkube.codecs import from_dict

from raykube.api.constants import RAYCLUSTER_CONTROLLER_NAME as CONTROLLER_NAME
from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.resources import EVENTS
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import cluster_pods, workers_of
from tests.support import KUBERAY_V161

SAMPLES = sorted((KUBERAY_V161 / "samples").glob("ray-cluster.*.yaml"))
# Namespaced core kinds a sample brings along. Cluster-scoped objects (ClusterRole...) and kinds from other
# projects' CRDs (Volcano and KAI Queues) are not needed for the operator's part and are left out.
COMPANIONS = {"ConfigMap", "Secret", "Service", "Deployment", "ServiceAccount", "RoleBinding"}


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def expected_workers(cluster: dict[str, Any]) -> int:
    """Worker Pods the sample asks for: replicas clamped to [minReplicas, maxReplicas], times numOfHosts."""
    total = 0
    for group in cluster["spec"].get("workerGroupSpecs") or []:
        if group.get("suspend"):
            continue
        low, high = group.get("minReplicas", 0), group.get("maxReplicas", 2**31 - 1)
        replicas = max(low, min(high, group.get("replicas", low)))
        total += replicas * group.get("numOfHosts", 1)
    return total


def prerequisite_service_accounts(docs: list[dict[str, Any]]) -> set[str]:
    """ServiceAccounts the sample's Pods name but the sample does not bring: its guide has the user create them
    (for example the GKE bucket sample's Workload Identity account)."""
    brought = {d["metadata"]["name"] for d in docs if d["kind"] == "ServiceAccount"}
    named = set()
    for cluster in (d for d in docs if d["kind"] == "RayCluster"):
        groups = [cluster["spec"]["headGroupSpec"], *(cluster["spec"].get("workerGroupSpecs") or [])]
        named |= {g["template"].get("spec", {}).get("serviceAccountName") for g in groups}
    return {n for n in named if n} - brought


def test_every_v161_raycluster_sample_is_covered() -> None:
    assert len(SAMPLES) >= 25, f"expected the v1.6.1 samples under {KUBERAY_V161}, found {len(SAMPLES)}"


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name.removeprefix("ray-cluster.").removesuffix(".yaml"))
async def test_the_sample_reconciles_without_a_warning(
    sample: Path, kube: AsyncClient, runtime_kube: Kube, namespace: str, operator: Manager
) -> None:
    docs = documents(sample)
    for doc in docs:
        if doc["kind"] in COMPANIONS:
            doc["metadata"].pop("namespace", None)
            await kube.create(from_dict(doc), namespace=namespace)
    clusters = [d for d in docs if d["kind"] == "RayCluster"]
    for account in prerequisite_service_accounts(docs):
        await kube.create(from_dict({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}}),
                          namespace=namespace)  # fmt: skip
    for cluster in clusters:
        cluster["metadata"].pop("namespace", None)
        await runtime_kube.create(RAYCLUSTERS, cluster, namespace)

    for cluster in clusters:
        name, workers = cluster["metadata"]["name"], expected_workers(cluster)

        async def reconciled(name: str = name, workers: int = workers) -> bool | NotYet:
            pods = await cluster_pods(runtime_kube, namespace, name)
            heads = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
            stored = await runtime_kube.get(RAYCLUSTERS, name, namespace)
            status, generation = stored.get("status") or {}, stored["metadata"].get("generation")
            summary = f"heads={len(heads)} workers={len(workers_of(pods))}/{workers} generation={generation} {status=}"
            # The GCS FT finalizer is added by an Update of the whole object, as KubeRay's, which bumps the generation
            # (2 for a Redis sample): the status must have observed whichever generation is stored.
            if len(heads) != 1 or len(workers_of(pods)) != workers or status.get("observedGeneration") != generation:
                return NotYet(summary)
            return True

        await wait_for(reconciled, 60, what=f"{sample.name}: RayCluster {name} reconciled")

    # Every pass done and every event it recorded sent: the recorder sends from a queue in the background, so a
    # Warning recorded by the last pass could still be on its way when the events are listed.
    def settled() -> bool | NotYet:
        queue, recorder = operator.queue, operator.recorder
        if queue.depth or queue.processing or recorder.pending:
            return NotYet(f"queue {queue.depth}, processing {queue.processing}, events to send {recorder.pending}")
        return True

    await wait_for(settled, 30, what=f"{sample.name}: the operator idle with its events sent")
    warnings = [
        f"{e.get('reason')}: {e.get('note')}"
        for e in (await runtime_kube.list(EVENTS, namespace)).items
        if e.get("type") == "Warning" and e.get("reportingController") == CONTROLLER_NAME
    ]
    assert warnings == []

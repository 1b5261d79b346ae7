"""Batch schedulers on the sandbox: the operator run with ``--batch-scheduler=volcano`` or ``yunikorn`` reconciles
KubeRay v1.6.1's samples into Pods carrying the scheduler's metadata and, for Volcano, a PodGroup made before the
Pods, kept in step, recreated when deleted and garbage-collected with its RayCluster.

The sandbox runs neither scheduler, so Pods naming one in ``schedulerName`` stay Pending, unscheduled: only their
metadata is checked. Volcano's PodGroup CRD is installed here from a minimal definition (any spec accepted, status
subresource as Volcano's own CRD has) and removed at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError as LightkubeApiError
from lightkube import AsyncClient
from lightkube.generic_resource import create_global_resource

from raykube.api.rbac import LEADER_ELECTION_RULES, operator_rules
from raykube.api.resources import RAYCLUSTERS, RAYJOBS
from raykube.builders.options import BuildOptions
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import Resource
from raykube.runtime.crds import install_crds
from raykube.runtime.manager import Manager, StartupError
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import cluster_pods
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"
PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups")
PODGROUP_CRD_NAME = "podgroups.scheduling.volcano.sh"
_CRD = create_global_resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")

# Enough of Volcano's PodGroup CRD for the operator: the names, v1beta1 served and stored, the status subresource.
PODGROUP_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": PODGROUP_CRD_NAME},
    "spec": {
        "group": "scheduling.volcano.sh",
        "names": {
            "kind": "PodGroup",
            "listKind": "PodGroupList",
            "plural": "podgroups",
            "singular": "podgroup",
            "shortNames": ["pg", "podgroup-v1beta1"],
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def sample_cluster(sample: str) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all((SAMPLES / sample).read_text()) if d and d["kind"] == "RayCluster"]
    return dict(doc)


async def crd_exists(kube: AsyncClient) -> bool:
    try:
        await kube.get(_CRD, PODGROUP_CRD_NAME)
    except LightkubeApiError as exc:
        if exc.status.code == 404:
            return False
        raise
    return True


async def remove_podgroup_crd(kube: AsyncClient) -> None:
    if not await crd_exists(kube):
        return
    await kube.delete(_CRD, PODGROUP_CRD_NAME)

    async def gone() -> bool | NotYet:
        return not await crd_exists(kube) or NotYet(f"{PODGROUP_CRD_NAME} still exists")

    await wait_for(gone, 60, what=f"{PODGROUP_CRD_NAME} to be deleted")


@pytest.fixture(scope="module")
async def podgroup_crd(kube: AsyncClient, runtime_kube: Kube) -> AsyncIterator[str]:
    await install_crds(runtime_kube, {PODGROUP_CRD_NAME: PODGROUP_CRD})
    try:
        yield PODGROUP_CRD_NAME
    finally:
        await remove_podgroup_crd(kube)


async def start_operator(kubeconfig: Path, namespace: str, scheduler: str) -> tuple[Manager, Kube]:
    """The operator in-process with ``--batch-scheduler=<scheduler>``, its client held to that scheduler's RBAC."""
    client = Kube.from_config(kubeconfig, qps=200, burst=400, rules=operator_rules(scheduler) + LEADER_ELECTION_RULES)
    manager = Manager(
        client, options=BuildOptions(batch_scheduler=scheduler), namespaces=[namespace], reconcile_concurrency=4
    )
    try:
        await asyncio.wait_for(manager.start(), 60)
    except BaseException:
        await manager.stop()
        await client.close()
        raise
    return manager, client


@pytest.fixture
async def volcano_operator(
    kubeconfig: Path, namespace: str, ray_crds: list[str], podgroup_crd: str
) -> AsyncIterator[Manager]:
    manager, client = await start_operator(kubeconfig, namespace, "volcano")
    try:
        yield manager
    finally:
        await manager.stop()
        await client.close()


@pytest.fixture
async def yunikorn_operator(kubeconfig: Path, namespace: str, ray_crds: list[str]) -> AsyncIterator[Manager]:
    manager, client = await start_operator(kubeconfig, namespace, "yunikorn")
    try:
        yield manager
    finally:
        await manager.stop()
        await client.close()


def by_type(pods: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    heads = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    return heads, [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]


async def wait_pods(kube: Kube, namespace: str, name: str, workers: int) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | NotYet:
        pods = await cluster_pods(kube, namespace, name)
        heads, found = by_type(pods)
        if len(heads) != 1 or len(found) != workers:
            return NotYet(f"{len(heads)} head(s), {len(found)} worker(s)")
        return pods

    return await wait_for(check, 60, what=f"1 head and {workers} worker Pods of {name}")


async def wait_podgroup(kube: Kube, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    async def check() -> dict[str, Any] | NotYet:
        try:
            podgroup = await kube.get(PODGROUPS, name, namespace)
        except ApiError as exc:
            if exc.not_found:
                return NotYet(f"no PodGroup {name}")
            raise
        have = {key: podgroup["spec"].get(key) for key in spec}
        return podgroup if have == spec else NotYet(f"PodGroup spec {have}")

    return await wait_for(check, 60, what=f"PodGroup {name} with {spec}")


# --------------------------------------------------------------------------------------------------------------------
# Volcano


async def test_volcano_refuses_to_start_without_the_podgroup_crd(
    kube: AsyncClient, kubeconfig: Path, namespace: str
) -> None:
    await remove_podgroup_crd(kube)  # whatever an earlier test left
    client = Kube.from_config(kubeconfig, rules=operator_rules("volcano") + LEADER_ELECTION_RULES)
    manager = Manager(client, options=BuildOptions(batch_scheduler="volcano"), namespaces=[namespace])
    try:
        with pytest.raises(StartupError, match=r"podgroups\.scheduling\.volcano\.sh/v1beta1.*install volcano"):
            await manager.start()
    finally:
        await manager.stop()
        await client.close()


async def test_volcano_podgroup_before_pods_kept_in_step_and_collected(
    runtime_kube: Kube, namespace: str, volcano_operator: Manager
) -> None:
    body = sample_cluster("ray-cluster.volcano-scheduler-queue.yaml")
    cluster = await runtime_kube.create(RAYCLUSTERS, body, namespace)
    name, uid = cluster["metadata"]["name"], cluster["metadata"]["uid"]
    group_name = f"ray-{name}-pg"

    podgroup = await wait_podgroup(
        runtime_kube,
        namespace,
        group_name,
        minMember=3,
        minResources={"cpu": "3", "memory": "4Gi"},
        queue="kuberay-test-queue",
    )
    assert podgroup["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": name,
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    pods = await wait_pods(runtime_kube, namespace, name, workers=2)
    for pod in pods:
        group = pod["metadata"]["labels"]["ray.io/group"]
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == group_name
        assert pod["metadata"]["annotations"]["volcano.sh/task-spec"] == group
        assert pod["metadata"]["labels"]["volcano.sh/queue-name"] == "kuberay-test-queue"
        assert "nodeName" not in pod["spec"]  # no Volcano here: Pending, unscheduled, as expected
        # The PodGroup came first (timestamps have second resolution, so "not later").
        assert podgroup["metadata"]["creationTimestamp"] <= pod["metadata"]["creationTimestamp"]

    # A third worker: the gang grows with it.
    patch = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 3},
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3},
    ]
    await runtime_kube.patch(RAYCLUSTERS, name, patch, namespace, patch_type="json")
    resized = await wait_podgroup(
        runtime_kube, namespace, group_name, minMember=4, minResources={"cpu": "4", "memory": "5Gi"}
    )
    assert resized["metadata"]["uid"] == podgroup["metadata"]["uid"]  # updated in place
    assert resized["spec"]["queue"] == "kuberay-test-queue"
    await wait_pods(runtime_kube, namespace, name, workers=3)

    # Deleted by someone: the operator watches PodGroups and makes it again.
    await runtime_kube.delete(PODGROUPS, group_name, namespace)

    async def recreated() -> dict[str, Any] | NotYet:
        try:
            current = await runtime_kube.get(PODGROUPS, group_name, namespace)
        except ApiError as exc:
            if exc.not_found:
                return NotYet("deleted, not recreated yet")
            raise
        return current if current["metadata"]["uid"] != podgroup["metadata"]["uid"] else NotYet("the old one")

    again = await wait_for(recreated, 60, what=f"PodGroup {group_name} to be recreated")
    assert again["spec"]["minMember"] == 4

    # The owner reference lets the garbage collector remove it with the cluster.
    await runtime_kube.delete(RAYCLUSTERS, name, namespace)

    async def collected() -> bool | NotYet:
        try:
            await runtime_kube.get(PODGROUPS, group_name, namespace)
        except ApiError as exc:
            if exc.not_found:
                return True
            raise
        return NotYet("the PodGroup is still there")

    await wait_for(collected, 120, what=f"PodGroup {group_name} to be garbage-collected")


async def test_volcano_head_only_sample(runtime_kube: Kube, namespace: str, volcano_operator: Manager) -> None:
    body = sample_cluster("ray-cluster.volcano-scheduler.yaml")
    cluster = await runtime_kube.create(RAYCLUSTERS, body, namespace)
    name = cluster["metadata"]["name"]
    podgroup = await wait_podgroup(
        runtime_kube, namespace, f"ray-{name}-pg", minMember=1, minResources={"cpu": "1", "memory": "2Gi"}
    )
    assert "queue" not in podgroup["spec"]
    (head,) = await wait_pods(runtime_kube, namespace, name, workers=0)
    assert head["spec"]["schedulerName"] == "volcano"
    assert head["metadata"]["annotations"]["volcano.sh/task-spec"] == "headgroup"
    assert "volcano.sh/queue-name" not in head["metadata"]["labels"]


# --------------------------------------------------------------------------------------------------------------------
# YuniKorn


async def test_volcano_rayjob_sample_gets_its_own_podgroup_before_its_cluster(
    runtime_kube: Kube, namespace: str, volcano_operator: Manager
) -> None:
    """KubeRay's ``ray-job.volcano-scheduler-queue.yaml``: one PodGroup ``ray-<rayjob>-pg`` owned by the RayJob
    (the queue from its label, the submitter's requests in minResources, minMember the cluster's 3 Pods), and the
    cluster's Pods in that group; the cluster gets no PodGroup of its own."""
    (doc,) = [
        d for d in yaml.safe_load_all((SAMPLES / "ray-job.volcano-scheduler-queue.yaml").read_text())
        if d and d["kind"] == "RayJob"
    ]  # fmt: skip
    job = await runtime_kube.create(RAYJOBS, doc, namespace)
    name = job["metadata"]["name"]
    podgroup = await wait_podgroup(runtime_kube, namespace, f"ray-{name}-pg", minMember=3)
    assert podgroup["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    assert podgroup["spec"]["queue"] == "kuberay-test-queue"
    assert podgroup["spec"]["minResources"]["cpu"] == "3500m"  # head 1 + 2 workers x 1 + the submitter's 500m

    async def cluster_name() -> str | NotYet:
        current = await runtime_kube.get(RAYJOBS, name, namespace)
        return (current.get("status") or {}).get("rayClusterName") or NotYet("no cluster named yet")

    cluster = await wait_for(cluster_name, 60, what="the RayJob's cluster")
    pods = await wait_pods(runtime_kube, namespace, cluster, 2)
    for pod in pods:
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == f"ray-{name}-pg"
        assert pod["spec"]["schedulerName"] == "volcano"
    listed = await runtime_kube.list(PODGROUPS, namespace)
    assert [p["metadata"]["name"] for p in listed.items] == [f"ray-{name}-pg"]


async def test_volcano_rayjob_suspended_releases_its_podgroup_before_it_is_suspended(
    runtime_kube: Kube, namespace: str, volcano_operator: Manager
) -> None:
    """KubeRay v1.7.0 (RJ-5): suspending the RayJob deletes its cluster and submitter, then zeroes its PodGroup
    (``minMember`` 0, no ``minResources``) so Volcano frees the queue, before the RayJob is ``Suspended``."""
    (doc,) = [
        d for d in yaml.safe_load_all((SAMPLES / "ray-job.volcano-scheduler-queue.yaml").read_text())
        if d and d["kind"] == "RayJob"
    ]  # fmt: skip
    job = await runtime_kube.create(RAYJOBS, doc, namespace)
    name = job["metadata"]["name"]
    await wait_podgroup(runtime_kube, namespace, f"ray-{name}-pg", minMember=3)
    # KubeRay suspends only a RayJob that deletes its cluster when it finishes.
    await runtime_kube.patch(RAYJOBS, name, {"spec": {"suspend": True, "shutdownAfterJobFinishes": True}}, namespace)

    async def suspended() -> dict[str, Any] | NotYet:
        status = (await runtime_kube.get(RAYJOBS, name, namespace)).get("status") or {}
        return status if status.get("jobDeploymentStatus") == "Suspended" else NotYet(str(status))

    await wait_for(suspended, 90, what=f"RayJob {name} to be Suspended")
    podgroup = await runtime_kube.get(PODGROUPS, f"ray-{name}-pg", namespace)
    assert (podgroup["spec"]["minMember"], podgroup["spec"]["minResources"]) == (0, {})


async def test_yunikorn_sample_pods_carry_the_gang(
    runtime_kube: Kube, namespace: str, yunikorn_operator: Manager
) -> None:
    body = sample_cluster("ray-cluster.yunikorn-scheduler.yaml")
    cluster = await runtime_kube.create(RAYCLUSTERS, body, namespace)
    name = cluster["metadata"]["name"]
    pods = await wait_pods(runtime_kube, namespace, name, workers=2)
    task_groups = (
        '[{"minResource":{"cpu":"1","memory":"2Gi"},"name":"headgroup","minMember":1},'
        '{"minResource":{"cpu":"1","memory":"1Gi"},"name":"worker","minMember":2}]'
    )
    for pod in pods:
        meta = pod["metadata"]
        assert pod["spec"]["schedulerName"] == "yunikorn"
        assert (meta["labels"]["applicationId"], meta["labels"]["queue"]) == ("test-yunikorn-0", "root.test")
        assert meta["annotations"]["yunikorn.apache.org/task-groups"] == task_groups
        assert meta["annotations"]["yunikorn.apache.org/task-group-name"] == meta["labels"]["ray.io/group"]
        assert "nodeName" not in pod["spec"]

"""The sandbox is a real Kubernetes: Deployments schedule onto kwok nodes, Services get EndpointSlices, PVCs bind."""

from __future__ import annotations

from typing import Any

from lightkube import ApiError, AsyncClient
from lightkube.codecs import from_dict
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Node, PersistentVolume, PersistentVolumeClaim, Pod
from lightkube.resources.discovery_v1 import EndpointSlice

from raykube.waiting import NotYet, wait_for

LABELS = {"app": "web"}


def _deployment(replicas: int) -> Any:
    return from_dict(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": LABELS},
                "template": {
                    "metadata": {"labels": LABELS},
                    "spec": {
                        "containers": [
                            {
                                "name": "web",
                                "image": "nginx:1.27",
                                "ports": [{"containerPort": 80}],
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                            }
                        ]
                    },
                },
            },
        }
    )


async def _ready_pods(kube: AsyncClient, namespace: str, count: int) -> list[Pod] | NotYet:
    pods = [p async for p in kube.list(Pod, namespace=namespace, labels=LABELS)]
    ready = [
        p
        for p in pods
        if p.status
        and p.status.phase == "Running"
        and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
    ]
    if len(ready) != count:
        phases = sorted(f"{p.metadata.name if p.metadata else '?'}={p.status.phase if p.status else '?'}" for p in pods)
        return NotYet(f"{len(ready)}/{count} pods Running and Ready: {phases}")
    return ready


async def test_deployment_pods_are_scheduled_onto_kwok_nodes_running_and_ready(
    kube: AsyncClient, namespace: str
) -> None:
    await kube.create(_deployment(3), namespace=namespace)

    pods = await wait_for(lambda: _ready_pods(kube, namespace, 3), 60, what="3 web pods Running and Ready")

    kwok_nodes = {n.metadata.name async for n in kube.list(Node) if n.metadata}
    for pod in pods:
        assert pod.spec is not None and pod.status is not None
        assert pod.spec.nodeName in kwok_nodes
        assert pod.status.podIP and pod.status.podIP.startswith("10.244.")

    async def available() -> bool | NotYet:
        deployment = await kube.get(Deployment, "web", namespace=namespace)
        ready = deployment.status.availableReplicas if deployment.status else None
        return True if ready == 3 else NotYet(f"availableReplicas={ready}")

    await wait_for(available, 60, what="the Deployment to report 3 available replicas")


async def test_service_endpointslices_list_the_pod_ips(kube: AsyncClient, namespace: str) -> None:
    await kube.create(_deployment(2), namespace=namespace)
    await kube.create(
        from_dict(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web"},
                "spec": {"selector": LABELS, "ports": [{"name": "http", "port": 80, "targetPort": 80}]},
            }
        ),
        namespace=namespace,
    )
    pods = await wait_for(lambda: _ready_pods(kube, namespace, 2), 60, what="2 web pods Running and Ready")
    pod_ips = {p.status.podIP for p in pods if p.status}

    async def slice_addresses() -> set[str] | NotYet:
        addresses = {
            address
            async for s in kube.list(EndpointSlice, namespace=namespace, labels={"kubernetes.io/service-name": "web"})
            for endpoint in s.endpoints or []
            if endpoint.conditions and endpoint.conditions.ready
            for address in endpoint.addresses
        }
        return addresses if addresses == pod_ips else NotYet(f"ready addresses {sorted(addresses)}")

    assert await wait_for(slice_addresses, 60, what=f"EndpointSlices of web to list {sorted(pod_ips)}") == pod_ips


async def test_pvc_binds_a_pod_that_mounts_it_is_scheduled_and_the_volume_is_reclaimed(
    kube: AsyncClient, namespace: str
) -> None:
    await kube.create(
        from_dict(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "3Gi"}}},
            }
        ),
        namespace=namespace,
    )

    async def bound() -> PersistentVolumeClaim | NotYet:
        claim = await kube.get(PersistentVolumeClaim, "data", namespace=namespace)
        phase = claim.status.phase if claim.status else None
        return claim if phase == "Bound" else NotYet(f"claim is {phase}")

    claim = await wait_for(bound, 60, what="PVC data to be Bound")
    assert claim.spec is not None and claim.spec.storageClassName == "standard"  # the default class was applied
    assert claim.status is not None and claim.status.capacity == {"storage": "3Gi"}
    volume_name = claim.spec.volumeName
    assert volume_name

    await kube.create(
        from_dict(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "uses-data", "labels": LABELS},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "busybox", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}
                    ],
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                },
            }
        ),
        namespace=namespace,
    )
    [pod] = await wait_for(lambda: _ready_pods(kube, namespace, 1), 60, what="the pod mounting the claim to run")
    assert pod.spec is not None and pod.spec.nodeName

    await kube.delete(Pod, "uses-data", namespace=namespace, grace_period=0)
    await kube.delete(PersistentVolumeClaim, "data", namespace=namespace)

    async def volume_gone() -> bool | NotYet:
        try:
            volume = await kube.get(PersistentVolume, volume_name)
        except ApiError as exc:
            return exc.status.code == 404 or NotYet(str(exc))
        return NotYet(f"volume is {volume.status.phase if volume.status else '?'}")

    await wait_for(volume_gone, 60, what=f"released volume {volume_name} to be deleted")

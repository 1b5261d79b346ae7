"""KubeRay's features around the Pods, on the sandbox: autoscaler RBAC and sidecar, the auth Secret, the Redis cleanup
finalizer and Job (and its timeout), Recreate upgrades, and the dashboard Ingress."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import EVENTS, INGRESSES, JOBS, PODS, ROLE_BINDINGS, ROLES, SECRETS, SERVICE_ACCOUNTS
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import cluster_pods, wait_ready, workers_of

pytestmark = pytest.mark.usefixtures("operator")


def small_cluster(name: str, *, workers: int = 1, **spec: Any) -> dict[str, Any]:
    def template(container: str) -> dict[str, Any]:
        tiny = {"cpu": "100m", "memory": "256Mi"}
        return {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.53.0",
                                         "resources": {"limits": tiny, "requests": tiny}}]}}  # fmt: skip

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.53.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": 0,
                    "maxReplicas": 10,
                    "rayStartParams": {},
                    "template": template("ray-worker"),
                }
            ],
            **spec,
        },
    }


async def events_for(kube: Kube, namespace: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in (await kube.list(EVENTS, namespace)).items if e.get("reason") == reason]


async def test_autoscaler_rbac_objects_and_sidecar_and_only_named_workers_are_deleted(
    runtime_kube: Kube, namespace: str
) -> None:
    body = small_cluster("auto", workers=3, enableInTreeAutoscaling=True)
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    await wait_ready(runtime_kube, namespace, workers=3, name="auto")

    for res in (SERVICE_ACCOUNTS, ROLES, ROLE_BINDINGS):
        obj = await runtime_kube.get(res, "auto", namespace)
        assert obj["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
        assert obj["metadata"]["labels"]["ray.io/cluster"] == "auto"
    role = await runtime_kube.get(ROLES, "auto", namespace)
    assert {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]} in role["rules"]
    pods = await cluster_pods(runtime_kube, namespace, "auto")
    [head] = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    assert head["spec"]["serviceAccountName"] == "auto"
    assert [c["name"] for c in head["spec"]["containers"]] == ["ray-head", "autoscaler"]

    # The autoscaler lowers replicas and names the Pods to remove; a lower count alone deletes nothing.
    names = sorted(p["metadata"]["name"] for p in workers_of(pods))
    patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2}]
    await runtime_kube.patch(RAYCLUSTERS, "auto", patch, namespace, patch_type="json")
    patch = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 1},
        {"op": "add", "path": "/spec/workerGroupSpecs/0/scaleStrategy", "value": {"workersToDelete": names[:2]}},
    ]
    await runtime_kube.patch(RAYCLUSTERS, "auto", patch, namespace, patch_type="json")  # fmt: skip
    await wait_ready(runtime_kube, namespace, workers=1, name="auto")
    assert [p["metadata"]["name"] for p in workers_of(await cluster_pods(runtime_kube, namespace, "auto"))] == [
        names[2]
    ]


async def test_a_missing_service_account_named_by_the_template_is_reported_then_used(
    runtime_kube: Kube, namespace: str
) -> None:
    body = small_cluster("named-sa", enableInTreeAutoscaling=True)
    body["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "my-autoscaler"
    await runtime_kube.create(RAYCLUSTERS, body, namespace)

    async def reported() -> bool | NotYet:
        found = await events_for(runtime_kube, namespace, "AutoscalerServiceAccountNotFound")
        return bool(found) or NotYet("no event yet")

    await wait_for(reported, 30, what="Warning AutoscalerServiceAccountNotFound")
    assert await cluster_pods(runtime_kube, namespace, "named-sa") == []
    await runtime_kube.create(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                 "metadata": {"name": "my-autoscaler"}}, namespace)  # fmt: skip
    await wait_ready(runtime_kube, namespace, workers=1, name="named-sa")
    binding = await runtime_kube.get(ROLE_BINDINGS, "named-sa", namespace)
    assert binding["subjects"][0]["name"] == "my-autoscaler"
    with pytest.raises(ApiError):  # the user's account is never created by the operator under its own name
        await runtime_kube.get(SERVICE_ACCOUNTS, "named-sa", namespace)


async def test_the_auth_secret_is_generated_once_never_rotated_and_never_logged(
    runtime_kube: Kube, namespace: str
) -> None:
    body = small_cluster("authed", authOptions={"mode": "token"})
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    await wait_ready(runtime_kube, namespace, workers=1, name="authed")

    secret = await runtime_kube.get(SECRETS, "authed", namespace)
    token = base64.b64decode(secret["data"]["auth_token"]).decode()
    assert len(token) == 44 and len(base64.b64decode(token)) == 32
    assert secret["metadata"]["labels"] == {"ray.io/cluster": "authed"}
    pods = await cluster_pods(runtime_kube, namespace, "authed")
    for pod in pods:
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        assert env["RAY_AUTH_MODE"]["value"] == "token"
        assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "authed", "key": "auth_token"}

    await runtime_kube.delete(PODS, pods[0]["metadata"]["name"], namespace)  # more passes; the token must stay
    await wait_ready(runtime_kube, namespace, workers=1, name="authed")
    again = await runtime_kube.get(SECRETS, "authed", namespace)
    assert again["data"] == secret["data"]
    notes = json.dumps((await runtime_kube.list(EVENTS, namespace)).items)
    assert token not in notes


async def test_the_redis_cleanup_finalizer_runs_the_cleanup_job_before_the_cluster_goes(
    runtime_kube: Kube, namespace: str
) -> None:
    body = small_cluster("ft", gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    await wait_ready(runtime_kube, namespace, workers=1, name="ft")
    cluster = await runtime_kube.get(RAYCLUSTERS, "ft", namespace)
    assert "ray.io/gcs-ft-redis-cleanup-finalizer" in cluster["metadata"]["finalizers"]
    # added as KubeRay adds it, by an Update of its Go object: the API server bumps the generation for the structs Go
    # writes into the spec (template.metadata: {}, scaleStrategy: {}), and the status follows
    assert cluster["metadata"]["generation"] == 2
    assert cluster["spec"]["workerGroupSpecs"][0]["scaleStrategy"] == {}
    assert cluster["status"]["observedGeneration"] == 2
    [head] = [p for p in await cluster_pods(runtime_kube, namespace, "ft")
              if p["metadata"]["labels"]["ray.io/node-type"] == "head"]  # fmt: skip
    assert head["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"

    await runtime_kube.delete(RAYCLUSTERS, "ft", namespace)

    async def cleanup_job() -> dict[str, Any] | NotYet:
        try:  # read it while it exists: it is owned by the RayCluster, so GC removes it once the cluster goes
            return await runtime_kube.get(JOBS, "ft-redis-cleanup", namespace)
        except ApiError as exc:
            if exc.not_found:
                return NotYet("no cleanup Job yet")
            raise

    job = await wait_for(cleanup_job, 60, what="the Redis cleanup Job")

    async def cleaned() -> bool | NotYet:
        try:
            await runtime_kube.get(RAYCLUSTERS, "ft", namespace)
        except ApiError as exc:
            return exc.not_found or NotYet(str(exc))
        return NotYet("the RayCluster still exists")

    await wait_for(cleaned, 90, what="the cleanup Job to finish and the finalizer to go")
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 300
    assert job["spec"]["template"]["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
    assert await events_for(runtime_kube, namespace, "CreatedRedisCleanupJob")


async def test_a_stuck_cleanup_is_forced_after_the_deletion_timeout(runtime_kube: Kube, namespace: str) -> None:
    body = small_cluster("stuck", gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    body["metadata"]["annotations"] = {"ray.io/gcs-ft-deletion-timeout": "5"}
    # kwok keeps a Job Pod running while it carries this annotation: the cleanup never finishes.
    body["spec"]["headGroupSpec"]["template"]["metadata"] = {"annotations": {"kwok.x-k8s.io/hold": "true"}}
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    await wait_ready(runtime_kube, namespace, workers=1, name="stuck")

    await runtime_kube.delete(RAYCLUSTERS, "stuck", namespace)

    async def forced() -> bool | NotYet:
        if not await events_for(runtime_kube, namespace, "ForceDeletedStuckCluster"):
            return NotYet("no ForceDeletedStuckCluster event yet")
        try:
            await runtime_kube.get(RAYCLUSTERS, "stuck", namespace)
        except ApiError as exc:
            return exc.not_found or NotYet(str(exc))
        return NotYet("the RayCluster still exists")

    await wait_for(forced, 90, what="the finalizer to be forced off after the timeout")
    [event] = await events_for(runtime_kube, namespace, "ForceDeletedStuckCluster")
    assert event["type"] == "Warning"
    note = event.get("note") or event.get("message")
    # KubeRay v1.6.2's words; the namespace is the RayCluster's ray.io/external-storage-namespace annotation (none).
    assert re.fullmatch(
        r'Force-removed GCS FT finalizer after [0-9.hms]+ due to Redis cleanup timeout; Redis storage namespace "" '
        r"may need manual cleanup",
        note,
    ), note


async def test_recreate_upgrade_replaces_every_pod_when_the_image_changes(runtime_kube: Kube, namespace: str) -> None:
    body = small_cluster("upgrade", workers=2, upgradeStrategy={"type": "Recreate"})
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    await wait_ready(runtime_kube, namespace, workers=2, name="upgrade")
    before = {p["metadata"]["name"] for p in await cluster_pods(runtime_kube, namespace, "upgrade")}

    image = "rayproject/ray:2.54.0"
    patch = [
        {"op": "replace", "path": f"/spec/{path}/template/spec/containers/0/image", "value": image}
        for path in ("headGroupSpec", "workerGroupSpecs/0")
    ]
    await runtime_kube.patch(RAYCLUSTERS, "upgrade", patch, namespace, patch_type="json")

    async def replaced() -> list[dict[str, Any]] | NotYet:
        pods = await cluster_pods(runtime_kube, namespace, "upgrade")
        images = {p["spec"]["containers"][0]["image"] for p in pods}
        names = {p["metadata"]["name"] for p in pods}
        done = len(pods) == 3 and images == {"rayproject/ray:2.54.0"} and not names & before
        return pods if done else NotYet(f"{len(pods)} pods, images {images}")

    await wait_for(replaced, 60, what="every Pod recreated with the new image")
    assert await events_for(runtime_kube, namespace, "DeletedPod")


async def test_the_dashboard_ingress_is_created_and_kept_in_step(runtime_kube: Kube, namespace: str) -> None:
    body = small_cluster("web")
    body["spec"]["headGroupSpec"]["enableIngress"] = True
    body["spec"]["headGroupSpec"]["ingressOptions"] = {"host": "ray.example.test"}
    await runtime_kube.create(RAYCLUSTERS, body, namespace)

    async def ingress(path: str) -> dict[str, Any] | NotYet:
        try:
            live = await runtime_kube.get(INGRESSES, "web-head-ingress", namespace)
        except ApiError as exc:
            return NotYet(str(exc))
        http = live["spec"]["rules"][0]["http"]["paths"][0]
        return live if http["path"] == path else NotYet(f"path {http['path']}")

    live = await wait_for(lambda: ingress("/"), 30, what="the dashboard Ingress")
    rule = live["spec"]["rules"][0]
    assert rule["host"] == "ray.example.test"
    assert rule["http"]["paths"][0]["backend"]["service"] == {"name": "web-head-svc", "port": {"number": 8265}}

    patch = [{"op": "add", "path": "/spec/headGroupSpec/ingressOptions/path", "value": "/ray"}]
    await runtime_kube.patch(RAYCLUSTERS, "web", patch, namespace, patch_type="json")
    await wait_for(lambda: ingress("/ray"), 30, what="the Ingress to follow the new path")


async def test_a_v16_dashboard_ingress_is_rewritten_and_a_foreign_one_left_alone(
    runtime_kube: Kube, namespace: str
) -> None:
    """KubeRay v1.7.0 reconcileIngressKubernetes on a live swap: the Ingress a v1.6.x operator made for the cluster
    (path ``/<cluster>/(.*)``, ``Exact``) is read by name and rewritten to ``/``, ``Prefix``; an Ingress of the same
    name that the cluster does not control is never touched, and each pass says so."""
    await runtime_kube.create(RAYCLUSTERS, small_cluster("old"), namespace)
    cluster = await runtime_kube.get(RAYCLUSTERS, "old", namespace)
    owner = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "old", "uid": cluster["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}  # fmt: skip

    def v16_ingress(name: str, cluster_name: str, owner_refs: list[dict[str, Any]]) -> dict[str, Any]:
        backend = {"service": {"name": f"{cluster_name}-head-svc", "port": {"number": 8265}}}
        path = {"path": f"/{cluster_name}/(.*)", "pathType": "Exact", "backend": backend}
        meta: dict[str, Any] = {"name": name, "annotations": {"left": "over"}}
        if owner_refs:
            meta["labels"] = {
                "ray.io/cluster": cluster_name,
                "ray.io/identifier": f"{cluster_name}-head",
                "app.kubernetes.io/name": "kuberay",
                "app.kubernetes.io/created-by": "kuberay-operator",
            }
            meta["ownerReferences"] = owner_refs
        return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta,
                "spec": {"rules": [{"http": {"paths": [path]}}]}}  # fmt: skip

    await runtime_kube.create(INGRESSES, v16_ingress("old-head-ingress", "old", [owner]), namespace)
    patch = [{"op": "add", "path": "/spec/headGroupSpec/enableIngress", "value": True}]
    await runtime_kube.patch(RAYCLUSTERS, "old", patch, namespace, patch_type="json")

    async def rewritten() -> dict[str, Any] | NotYet:
        live = await runtime_kube.get(INGRESSES, "old-head-ingress", namespace)
        path = live["spec"]["rules"][0]["http"]["paths"][0]
        if (path["path"], path["pathType"]) != ("/", "Prefix"):
            return NotYet(f"path {path['path']} {path['pathType']}")
        return live

    live = await wait_for(rewritten, 30, what="the v1.6.x Ingress rewritten to / Prefix")
    assert live["metadata"]["uid"]  # the same object, updated in place
    assert "left" not in (live["metadata"].get("annotations") or {})  # the annotations are the cluster's
    assert live["metadata"]["ownerReferences"][0]["uid"] == cluster["metadata"]["uid"]
    [event] = await wait_for(
        lambda: _events_or_not_yet(runtime_kube, namespace, "UpdatedIngress"), 30, what="UpdatedIngress"
    )
    assert event["type"] == "Normal"
    assert (event.get("note") or event.get("message")) == f"Updated ingress {namespace}/old-head-ingress"

    # Someone else's Ingress (no owner, no labels: outside the operator's cache) holds the name of a new cluster's.
    foreign = await runtime_kube.create(INGRESSES, v16_ingress("taken-head-ingress", "taken", []), namespace)
    body = small_cluster("taken")
    body["spec"]["headGroupSpec"]["enableIngress"] = True
    await runtime_kube.create(RAYCLUSTERS, body, namespace)
    [event, *_] = await wait_for(
        lambda: _events_or_not_yet(runtime_kube, namespace, "FailedToCreateIngress"), 30, what="FailedToCreateIngress"
    )
    assert event["type"] == "Warning"
    assert (event.get("note") or event.get("message")) == (
        f"Ingress {namespace}/taken-head-ingress already exists and is not owned by this RayCluster; not modifying it"
    )
    await wait_ready(runtime_kube, namespace, workers=1, name="taken")  # the rest of the pass went on
    after = await runtime_kube.get(INGRESSES, "taken-head-ingress", namespace)
    assert after["metadata"]["resourceVersion"] == foreign["metadata"]["resourceVersion"]  # never modified


async def _events_or_not_yet(kube: Kube, namespace: str, reason: str) -> list[dict[str, Any]] | NotYet:
    found = await events_for(kube, namespace, reason)
    return found or NotYet(f"no {reason} event yet")


def test_the_operator_fixture_is_strict(operator: Manager) -> None:
    assert operator.kube.rules is not None  # every test above ran within the generated RBAC rules

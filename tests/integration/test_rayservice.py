"""RayServices on process nodes with real Ray Serve: raykube's RayService controller from ``kubectl apply`` to Ready,
answering through ``<rs>-serve-svc``, a ``serveConfigV2`` change applied in place on the same cluster, a
``rayClusterConfig`` change upgraded to a new cluster under traffic, a Serve application that cannot deploy named by
the doctor, and KubeRay's terminal initializing timeout.

The Serve app is the local one of ``examples/06-serve-app.yaml`` (a module in a ConfigMap, on PYTHONPATH; no
internet). The operator runs in the test process with ``--use-kubernetes-proxy``, as KubeRay must outside a cluster.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient
from lightkube.generic_resource import create_namespaced_resource
from lightkube.types import PatchType

from raykube.api.resources import RAYSERVICES
from raykube.cli.serveclient import CLIENT_POD, Answer, parse_log, window
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.integration.test_process_runtime import create, port_forward
from tests.integration.test_serve import EXAMPLES, SERVE_READY, greet, serve_app, serve_cluster, serve_config

RayServiceRes = create_namespaced_resource("ray.io", "v1", "RayService", "rayservices")


def rayservice(name: str, config: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name},
        "spec": {
            "serveConfigV2": yaml.safe_dump(config, sort_keys=False),
            "rayClusterConfig": serve_cluster(name)["spec"],
        },
    }


async def service_status(kube: AsyncClient, ns: str, name: str) -> dict[str, Any]:
    return dict((await kube.get(RayServiceRes, name, namespace=ns)).to_dict().get("status") or {})


async def wait_ready(kube: AsyncClient, ns: str, name: str, greeting_check: str | None = None) -> dict[str, Any]:
    async def ready() -> dict[str, Any] | NotYet:
        status = await service_status(kube, ns, name)
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        apps = ((status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}).get("hello") or {}
        if (conditions.get("Ready") or {}).get("status") == "True" and apps.get("status") == "RUNNING":
            return status
        summary = {k: (v.get("status"), v.get("reason")) for k, v in conditions.items()}
        return NotYet(json.dumps({"conditions": summary, "app": apps.get("status"), "pending": status.get(
            "pendingServiceStatus", {}).get("rayClusterName")}))  # fmt: skip

    found: dict[str, Any] = await wait_for(ready, SERVE_READY + 120, what=f"RayService {ns}/{name} to be Ready")
    return found


async def test_a_rayservice_serves_changes_in_place_upgrades_without_dropping_requests_and_a_broken_app_is_named(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    """One RayService through its life on real Serve (one start of Ray for all four keeps make test short):

    * ready, ``kubectl get`` with KubeRay's columns, the app answering through ``greeter-serve-svc``;
    * ``serveConfigV2`` alone changes: the operator PUTs it to the same cluster, no new cluster is prepared;
    * ``rayClusterConfig`` changes: a pending cluster is made, Serve deployed on it, the Services switched only once
      its app is RUNNING, the old cluster deleted after ``rayClusterDeletionDelaySeconds``; a client calling the
      serve Service's ClusterIP all along gets an answer every time (KubeRay's zero-downtime promise);
    * an application whose module does not exist: real Serve refuses it (DEPLOY_FAILED) and ``raykube doctor
      rayservice/NAME`` names it (S03) with Serve's own message as evidence; then one whose ``runtime_env`` cannot
      be installed, named as such;
    * deleted: its cluster goes, then the operator drops its finalizer."""
    await create(pkube, ns, serve_app(ns))
    body = rayservice("greeter", serve_config())
    body["spec"]["rayClusterDeletionDelaySeconds"] = 5
    await create(pkube, ns, body)
    status = await wait_ready(pkube, ns, "greeter")
    first = status["activeServiceStatus"]["rayClusterName"]
    assert first.startswith("greeter-")
    assert status["serviceStatus"] == "Running" and status["numServeEndpoints"] >= 1
    table = proc.kubectl("get", "rayservice", "-n", ns, "greeter").stdout.splitlines()
    assert table[0].split() == ["NAME", "SERVICE", "STATUS", "NUM", "SERVE", "ENDPOINTS"], table  # KubeRay's two
    assert table[1].split()[:2] == ["greeter", "Running"], table

    await serve_config_change_in_place(proc, pkube, ns, first)
    second = await cluster_config_change_upgrades(proc, pkube, ns, body)
    await a_broken_app_is_named(proc, pkube, ns, second)

    # Deleted: its finalizer holds it until its cluster is gone (KubeRay v1.6.2+), then the operator drops it.
    await pkube.delete(RayServiceRes, "greeter", namespace=ns)

    async def gone() -> bool | NotYet:
        left = proc.kubectl("get", "rayservice,raycluster", "-n", ns, "-o", "name").stdout.split()
        return True if not left else NotYet(f"left: {left}")

    await wait_for(gone, 120, what="the RayService and its cluster deleted")


async def serve_config_change_in_place(proc: ProcessSandbox, pkube: AsyncClient, ns: str, cluster: str) -> None:
    async with port_forward(proc, ns, "svc/greeter-serve-svc", 8000) as port:

        async def greeting() -> str | NotYet:
            return await greet(port, "rayservice")

        assert await wait_for(greeting, 60, what="the app through greeter-serve-svc") == "Hello, rayservice!\n"
        config = copy.deepcopy(serve_config())
        config["applications"][0]["deployments"][0]["user_config"] = {"greeting": "Hi"}
        patch = {"spec": {"serveConfigV2": yaml.safe_dump(config, sort_keys=False)}}
        await pkube.patch(RayServiceRes, "greeter", patch, namespace=ns, patch_type=PatchType.MERGE)  # type: ignore[arg-type]

        async def greeted_anew() -> str | NotYet:
            text = await greeting()
            return text if text == "Hi, rayservice!\n" else NotYet(str(text))

        await wait_for(greeted_anew, SERVE_READY, what="the new greeting through greeter-serve-svc")
    after = await service_status(pkube, ns, "greeter")
    assert after["activeServiceStatus"]["rayClusterName"] == cluster
    assert not (after.get("pendingServiceStatus") or {}).get("rayClusterName")
    clusters = proc.kubectl("get", "raycluster", "-n", ns, "-o", "name").stdout.split()
    assert clusters == [f"raycluster.ray.io/{cluster}"], clusters


async def cluster_config_change_upgrades(proc: ProcessSandbox, pkube: AsyncClient, ns: str, body: Any) -> str:
    first = (await service_status(pkube, ns, "greeter"))["activeServiceStatus"]["rayClusterName"]
    client = yaml.safe_load((EXAMPLES / "serve" / "client.yaml").read_text())  # the demo's client, one per request
    client["metadata"]["namespace"] = ns
    client["spec"]["containers"][0]["env"][0]["value"] = "http://greeter-serve-svc:8000/?name=client"
    await create(pkube, ns, client)

    def answers() -> list[Answer]:
        return parse_log(proc.kubectl("logs", "-n", ns, CLIENT_POD).stdout)

    async def client_served() -> bool | NotYet:
        good = [a for a in answers() if a.ok]
        return True if len(good) >= 5 else NotYet(f"client saw {answers()[-5:]}")

    await wait_for(client_served, 120, what="the client to be answered")
    started = time.time()

    head_env = {"name": "UPGRADE_MARK", "value": "2"}  # any change of the cluster's spec: a new cluster
    patch = {"spec": {"rayClusterConfig": copy.deepcopy(body["spec"]["rayClusterConfig"])}}
    patch["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"].append(head_env)
    await pkube.patch(RayServiceRes, "greeter", patch, namespace=ns, patch_type=PatchType.MERGE)  # type: ignore[arg-type]

    async def upgraded() -> str | NotYet:
        status = await service_status(pkube, ns, "greeter")
        active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
        left = proc.kubectl("get", "raycluster", "-n", ns, "-o", "name").stdout.split()
        if active != first and f"raycluster.ray.io/{first}" not in left:
            return str(active)
        return NotYet(f"active {active}, clusters {left}")

    second: str = await wait_for(upgraded, SERVE_READY + 180, what="the switch-over and the old cluster's deletion")
    switched = time.time()

    async def answered_since() -> float | NotYet:
        good = [a for a in answers() if a.ok and a.sent >= switched]
        return good[9].done if len(good) >= 10 else NotYet(f"{len(good)} answers since the switch-over")

    seen = window(answers(), started, await wait_for(answered_since, 60, what="the client after the upgrade"))
    print(f"upgrade {first} -> {second}: {seen}")  # noqa: T201 - the report
    assert seen["requests"] > 50 and seen["failed"] == 0, seen
    return second


async def a_broken_app_is_named(proc: ProcessSandbox, pkube: AsyncClient, ns: str, cluster: str) -> None:
    config = copy.deepcopy(serve_config())
    config["applications"][0]["import_path"] = "no_such_module:app"
    patch = {"spec": {"serveConfigV2": yaml.safe_dump(config, sort_keys=False)}}
    await pkube.patch(RayServiceRes, "greeter", patch, namespace=ns, patch_type=PatchType.MERGE)  # type: ignore[arg-type]

    async def failed() -> dict[str, Any] | NotYet:
        status = await service_status(pkube, ns, "greeter")
        app = ((status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}).get("hello") or {}
        return status if app.get("status") == "DEPLOY_FAILED" else NotYet(json.dumps(status)[:400])

    await wait_for(failed, SERVE_READY, what="the application DEPLOY_FAILED")
    serve = serve_root_cause(proc, ns)
    assert serve["title"].startswith(f"Serve application hello is DEPLOY_FAILED on RayCluster {cluster}"), serve
    assert any("no_such_module" in str(e.get("value")) for e in serve["evidence"]), serve["evidence"]
    await a_runtime_env_that_cannot_be_installed_is_named(proc, pkube, ns, cluster)


def serve_root_cause(proc: ProcessSandbox, ns: str) -> dict[str, Any]:
    """``raykube doctor rayservice/greeter`` as a user runs it: exit 1, and its S03 finding, a root cause of the
    RayService."""
    code, report = proc.doctor(ns, "rayservice/greeter")
    assert code == 1, report
    [serve] = [f for f in report["findings"] if f["rule"] == "S03"]
    [target] = [t for t in report["targets"] if t["kind"] == "RayService"]
    assert serve["id"] in target["rootCauses"]
    return serve


async def a_runtime_env_that_cannot_be_installed_is_named(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, cluster: str
) -> None:
    """The application's ``runtime_env`` names a ``working_dir`` that cannot be fetched (ray-project/kuberay#510,
    ray-project/ray#26209: a RayService whose working_dir is not reachable never deploys). Here an HTTPS URL on the
    head's own loopback where nothing listens, so the fetch is refused at once and no traffic leaves the Pod. Real
    Serve reports DEPLOY_FAILED with Ray's RuntimeEnvSetupError; the doctor says the runtime_env could not be
    installed and quotes it from ``serveConfigV2``."""
    unreachable = "https://127.0.0.1:9/no-such-app.zip"
    config = copy.deepcopy(serve_config())
    config["applications"][0]["runtime_env"] = {"working_dir": unreachable}
    patch = {"spec": {"serveConfigV2": yaml.safe_dump(config, sort_keys=False)}}
    await pkube.patch(RayServiceRes, "greeter", patch, namespace=ns, patch_type=PatchType.MERGE)  # type: ignore[arg-type]

    async def failed() -> dict[str, Any] | NotYet:
        status = await service_status(pkube, ns, "greeter")
        app = ((status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}).get("hello") or {}
        message = str(app.get("message") or "")
        if app.get("status") == "DEPLOY_FAILED" and "no_such_module" not in message:
            return status
        return NotYet(json.dumps(app)[:400])

    await wait_for(failed, SERVE_READY, what="the application DEPLOY_FAILED on its runtime_env")
    serve = serve_root_cause(proc, ns)
    assert serve["title"] == (
        f"Serve application hello is DEPLOY_FAILED on RayCluster {cluster}: its runtime_env could not be installed"
    ), serve["title"]
    assert any(unreachable in json.dumps(e.get("value")) for e in serve["evidence"]), serve["evidence"]


async def test_a_head_image_that_does_not_exist_ends_in_the_terminal_initializing_timeout(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    """KubeRay's ``ray.io/initializing-timeout``: the head's image cannot be pulled (``ImagePullBackOff``), so the
    RayService never becomes ready; after the timeout Ready is ``False/InitializingTimeout`` with KubeRay's message,
    its clusters are deleted and their names cleared, a ``RayServiceInitializingTimeout`` Warning is recorded, and a
    later spec change does not revive it (terminal: delete and recreate)."""
    body = rayservice("timeout", serve_config())
    body["metadata"]["annotations"] = {"ray.io/initializing-timeout": "10s"}
    body["spec"]["rayClusterDeletionDelaySeconds"] = 5  # the cluster is deleted this long after the timeout
    head = body["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["image"] = "invalid-image-does-not-exist:v1.0.0"
    await create(pkube, ns, body)

    async def timed_out() -> dict[str, Any] | NotYet:
        status = await service_status(pkube, ns, "timeout")
        ready = next((x for x in status.get("conditions") or [] if x["type"] == "Ready"), {})
        if (ready.get("status"), ready.get("reason")) == ("False", "InitializingTimeout"):
            return status
        return NotYet(f"Ready {ready.get('status')}/{ready.get('reason')}")

    status = await wait_for(timed_out, 120, what="Ready=False/InitializingTimeout")
    ready = next(x for x in status["conditions"] if x["type"] == "Ready")
    assert "RayService failed to become ready within the configured timeout" in ready["message"]
    assert not (status.get("activeServiceStatus") or {}).get("rayClusterName")
    assert not (status.get("pendingServiceStatus") or {}).get("rayClusterName")

    async def clusters_gone() -> bool | NotYet:
        left = proc.kubectl("get", "raycluster", "-n", ns, "-o", "name").stdout.split()
        return True if not left else NotYet(f"clusters left: {left}")

    await wait_for(clusters_gone, 60, what="the RayService's cluster deleted after rayClusterDeletionDelaySeconds")
    events = json.loads(proc.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
    timeouts = [e for e in events if e["reason"] == "RayServiceInitializingTimeout" and e["type"] == "Warning"]
    assert {(e.get("reportingComponent"), e.get("action")) for e in timeouts} == {
        ("rayservice-controller", "Reconcile")  # KubeRay v1.7.0's action for it (EV-1)
    }, timeouts

    # A valid spec afterwards: still terminal, no cluster made (KubeRay: the user deletes and recreates it).
    patch = {"metadata": {"annotations": {"ray.io/initializing-timeout": "10m"}},
             "spec": {"rayClusterConfig": serve_cluster("timeout")["spec"]}}  # fmt: skip
    await pkube.patch(RayServiceRes, "timeout", patch, namespace=ns, patch_type=PatchType.MERGE)  # type: ignore[arg-type]
    generation = (await pkube.get(RayServiceRes, "timeout", namespace=ns)).metadata.generation  # type: ignore[union-attr]

    controller = next(ctl for ctl in proc_operator.controllers if ctl.name == "rayservice")

    async def passed_with_new_spec() -> bool | NotYet:
        """A pass of the RayService that began once the operator's cache held the new generation (terminal: KubeRay
        writes no status then, so observedGeneration cannot tell)."""
        cached = proc_operator.cache.get(RAYSERVICES, ns, "timeout") or {}
        if (cached.get("metadata") or {}).get("generation") != generation:
            return NotYet("the operator's cache has not the new spec yet")
        if not passes:
            passes.append(controller.stats.total)
            controller.queue.add((ns, "timeout"))
        idle = not controller.queue.processing and not len(controller.queue)
        return True if controller.stats.total > passes[0] and idle else NotYet("no pass since")

    passes: list[int] = []
    await wait_for(passed_with_new_spec, 60, what="a pass of the operator over the new spec")
    status = await service_status(pkube, ns, "timeout")
    ready = next(x for x in status["conditions"] if x["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "InitializingTimeout")
    assert proc.kubectl("get", "raycluster", "-n", ns, "-o", "name").stdout.split() == []


@pytest.mark.long
@pytest.mark.timeout(900)
async def test_a_deleted_head_pod_is_recreated_and_the_serve_service_follows_it(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    """KubeRay's ``TestRedeployRayServe`` with the local app: the active cluster's head Pod is deleted; the same
    cluster gets a new head, Serve is deployed on it again (its applications went with the old head: no GCS fault
    tolerance), the serve Service's one endpoint is the new head, and the RayService is Ready and answering again.
    ``benchmarks/rayservice.py`` measures the same under traffic, against KubeRay too."""
    await create(pkube, ns, serve_app(ns))
    body = rayservice("redeploy", serve_config())
    body["spec"]["rayClusterConfig"].pop("workerGroupSpecs")  # the head alone: its deletion takes Serve down
    await create(pkube, ns, body)
    cluster = (await wait_ready(pkube, ns, "redeploy"))["activeServiceStatus"]["rayClusterName"]

    def heads() -> list[dict[str, Any]]:
        listed = proc.kubectl("get", "pods", "-n", ns, "-l", f"ray.io/cluster={cluster},ray.io/node-type=head",
                              "-o", "json")  # fmt: skip
        return list(json.loads(listed.stdout)["items"])

    [old] = heads()
    assert proc.kubectl("delete", "pod", "-n", ns, old["metadata"]["name"], "--wait=false").returncode == 0

    async def served_by_a_new_head() -> str | NotYet:
        selector = "kubernetes.io/service-name=redeploy-serve-svc"
        slices = json.loads(proc.kubectl("get", "endpointslices", "-n", ns, "-l", selector, "-o", "json").stdout)
        targets = [
            (e.get("targetRef") or {}).get("name")
            for item in slices["items"]
            for e in item.get("endpoints") or []
            if (e.get("conditions") or {}).get("ready")
        ]
        if len(targets) == 1 and targets[0] != old["metadata"]["name"]:
            return str(targets[0])
        return NotYet(f"ready endpoints of redeploy-serve-svc: {targets}")

    new_head = await wait_for(served_by_a_new_head, SERVE_READY, what="the serve Service on the new head Pod")
    status = await wait_ready(pkube, ns, "redeploy")
    assert status["activeServiceStatus"]["rayClusterName"] == cluster  # the same cluster, not an upgrade
    assert [h["metadata"]["name"] for h in heads()] == [new_head]
    async with port_forward(proc, ns, "svc/redeploy-serve-svc", 8000) as port:

        async def greeting() -> str | NotYet:
            return await greet(port, "again")

        assert await wait_for(greeting, 60, what="the app on the new head") == "Hello, again!\n"

"""A real Gateway API implementation in the sandbox (issue 43): ``SandboxConfig(gateway=True)`` installs the Gateway
API CRDs and runs Traefik (its image ``traefik:v<pinned>`` built from the Go module proxy) as a Deployment on process
nodes, and the Gateway and HTTPRoute that raykube's operator creates for KubeRay's incremental upgrade
(``NewClusterWithIncrementalUpgrade``) split real traffic by their weights.

A process sandbox of its own (two process nodes). The Gateway and HTTPRoute are the operator's own objects
(``builders/rayservice/gateway.py``: ``<rs>-gateway``, listener ``http`` on port 80, and ``<rs>-httproute`` with
weighted backendRefs to ``<cluster>-serve-svc`` on port 8000) for a RayService whose two clusters are stood in for by
two small HTTP servers answering their own names (Pods of raykube's operator image, the project's environment), each
behind a Service named as a cluster's serve Service. No RayService exists here, so their owner references are dropped
(the garbage collector would delete objects whose owner is missing). A client Pod sends its requests to the address
Traefik writes into the Gateway's ``status.addresses`` (its Service's cluster DNS name, reached through the sandbox's
ClusterIP proxy). The test asserts what the operator waits for (the Gateway Accepted and Programmed, the HTTPRoute
Accepted with its refs resolved, :func:`gateway_ready` / :func:`httproute_ready`), that with weights 90/10 the answers
split 90/10 within a binomial tolerance for N requests, and that 0/100 sends every request to the second backend.

A second test runs a whole incremental upgrade with real Ray Serve: raykube's operator (in-process, its RBAC rules
enforced, the Gateway API found at start-up) deploys a RayService with ``NewClusterWithIncrementalUpgrade`` through the
GatewayClass ``traefik``; a client reaches its app through the Gateway; after a cluster spec change the operator steps
the HTTPRoute's weights (100/0, 50/50, 0/100) and promotes the new cluster, whose app then answers every request.

Long (``make conformance`` runs them): Traefik's first build takes about 9 minutes on two busy cores (then it is
cached); then the first test takes about 25 s and the upgrade about 100 s.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

import raykube
from raykube.api.crd import load_generated
from raykube.api.rbac import LEADER_ELECTION_RULES, OPERATOR_RULES
from raykube.api.resources import RAYSERVICES, RayService
from raykube.builders.options import BuildOptions
from raykube.builders.rayservice import gateway as build_gateway
from raykube.builders.rayservice import gateway_ready, httproute, httproute_ready
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import (
    CONFIGMAPS,
    CORE_EVENTS,
    DEPLOYMENTS,
    GATEWAYS,
    HTTPROUTES,
    NAMESPACES,
    PODS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from raykube.runtime.crds import install_crds
from raykube.runtime.manager import Manager, api_served
from raykube.sandbox import NodePool, Ports, Sandbox, SandboxConfig, gateway, versions
from raykube.sandbox.kubelet import network
from raykube.sandbox.kubelet.images import OPERATOR_REPOSITORY
from raykube.waiting import NotYet, wait_for
from tests.doctor_support import assert_fires
from tests.integration import test_rayservice
from tests.integration.process import ProcessSandbox
from tests.integration.test_serve import SERVE_READY, serve_app, serve_config

RAYSERVICE = "demo"
ACTIVE, PENDING = "blue", "green"  # the stand-ins for the active and the pending RayCluster
SERVE_PORT = 8000  # common.GetServePort's default: what the operator's HTTPRoute targets
REQUESTS = 200
READY = 300.0  # generous bounds of a failure on two shared cores, not speed targets
OPERATOR_IMAGE = f"{OPERATOR_REPOSITORY}:{raykube.__version__}"

# A backend: answers every GET with its own name (from BACKEND_NAME).
SERVER = """
import http.server, os
name = os.environ["BACKEND_NAME"].encode()
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(name)))
        self.end_headers()
        self.wfile.write(name)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("", int(os.environ["PORT"])), Handler).serve_forever()
"""
# The client: N sequential requests to a URL, a fresh connection each; prints the answers counted, as one JSON line.
CLIENT = """
import collections, json, sys, urllib.error, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
counts = collections.Counter()
for _ in range(n):
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            counts[answer.read().decode()] += 1
    except urllib.error.HTTPError as exc:
        counts[f"HTTP {exc.code}"] += 1
    except OSError as exc:
        counts[f"error {type(exc).__name__}"] += 1
print(json.dumps(counts))
"""


@pytest.fixture(scope="module")
async def proc(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ProcessSandbox]:
    """A process sandbox with the Gateway API and Traefik (named ``proc`` so conftest.py's failure report shows it)."""
    problems = network.preflight()
    if problems:
        pytest.skip("this machine cannot run process nodes: " + "; ".join(problems))
    await asyncio.to_thread(gateway.ensure_built, versions.TRAEFIK_VERSION, versions.cache_root(), print)
    root = tmp_path_factory.mktemp("raykube-gateway")
    sandbox = Sandbox.named("procgw", root)
    config = SandboxConfig(name="procgw", ports=Ports.free(), nodes=NodePool(count=3, cpu="2", memory="3Gi"),
                           runtime="process", gateway=True)  # fmt: skip
    result = await sandbox.up(config)
    try:
        yield ProcessSandbox(sandbox, result.kubeconfig, root)
    finally:
        await sandbox.down(keep_logs=True)


@pytest.fixture
async def admin(proc: ProcessSandbox) -> AsyncIterator[Kube]:
    client = Kube.from_config(proc.kubeconfig)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def ns(admin: Kube) -> AsyncIterator[str]:
    name = f"gw-{uuid.uuid4().hex[:6]}"
    await admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def account() -> bool | NotYet:
        try:
            await admin.get(SERVICE_ACCOUNTS, "default", name)
        except ApiError:
            return NotYet("no default ServiceAccount yet")
        return True

    await wait_for(account, 30, what=f"namespace {name}")
    try:
        yield name
    finally:
        await admin.delete(NAMESPACES, name, missing_ok=True)


def pod(name: str, argv: list[str], env: dict[str, str], probe_port: int | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": OPERATOR_IMAGE,
        "command": argv,
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    if probe_port is not None:
        container["ports"] = [{"name": "serve", "containerPort": probe_port}]
        container["readinessProbe"] = {"httpGet": {"path": "/", "port": probe_port}, "periodSeconds": 1}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [container], "terminationGracePeriodSeconds": 1},
    }


def serve_service(cluster: str) -> dict[str, Any]:
    """A Service named as the operator names a cluster's serve Service, in front of the stand-in for it."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{cluster}-serve-svc"},
        "spec": {"selector": {"app": cluster}, "ports": [{"name": "serve", "port": SERVE_PORT, "targetPort": "serve"}]},
    }


def rayservice_body(namespace: str, gateway_class: str = gateway.GATEWAY_CLASS) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": RAYSERVICE, "namespace": namespace, "uid": str(uuid.uuid4())},
        "spec": {
            "upgradeStrategy": {
                "type": "NewClusterWithIncrementalUpgrade",
                "clusterUpgradeOptions": {
                    "gatewayClassName": gateway_class,
                    "maxSurgePercent": 50,
                    "stepSizePercent": 10,
                    "intervalSeconds": 10,
                },
            },
            "rayClusterConfig": {
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray"}]}},
                }
            },
        },
    }


def rayservice(namespace: str) -> RayService:
    return RayService.model_validate(rayservice_body(namespace))


def unowned(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"].pop("ownerReferences", None)
    return obj


def route(rs: RayService, gw: dict[str, Any], weights: tuple[int, int]) -> dict[str, Any]:
    return unowned(httproute(rs, gw, {"metadata": {"name": ACTIVE}}, {"metadata": {"name": PENDING}}, weights))


async def send(admin: Kube, ns: str, url: str, count: int) -> dict[str, int]:
    """``count`` requests from the client Pod to ``url``: how many answers of each kind."""
    result = await admin.exec(PODS, "client", ns, ["python", "-c", CLIENT, url, str(count)], timeout=300)
    if result.exit_code != 0 or not result.stdout.strip():
        raise AssertionError(f"the client failed (exit {result.exit_code}): {(result.stderr or result.stdout)[-600:]}")
    counts: dict[str, int] = json.loads(result.stdout.strip().splitlines()[-1])
    return counts


def tolerance(count: int, share: float) -> float:
    """Four binomial standard deviations: what a weighted random choice may stray (a round robin strays less)."""
    return 4 * math.sqrt(count * share * (1 - share))


@pytest.mark.long
async def test_traefik_programs_the_operators_gateway_and_splits_its_httproute_by_weight(
    proc: ProcessSandbox, admin: Kube, ns: str
) -> None:
    for cluster in (ACTIVE, PENDING):
        await admin.create(PODS, pod(cluster, ["python", "-c", SERVER], {"BACKEND_NAME": cluster, "PORT": "8000"},
                                     probe_port=SERVE_PORT), ns)  # fmt: skip
        await admin.create(SERVICES, serve_service(cluster), ns)
    await admin.create(PODS, pod("client", ["sleep", "3600"], {}), ns)

    # What the operator looks up at start-up to turn on its Gateway and HTTPRoute informers.
    assert await api_served(admin, GATEWAYS) and await api_served(admin, HTTPROUTES)

    rs = rayservice(ns)
    gw = unowned(build_gateway(rs))
    await admin.create(GATEWAYS, gw, ns)
    await admin.create(HTTPROUTES, route(rs, gw, (90, 10)), ns)

    async def programmed() -> dict[str, Any] | NotYet:
        current = await admin.get(GATEWAYS, gw["metadata"]["name"], ns)
        return current if gateway_ready(current) else NotYet(f"Gateway status: {current.get('status')}")

    current = await wait_for(programmed, READY, what="Traefik to accept and program the operator's Gateway")
    # Traefik runs as a user runs it: the Deployment's Pod on a process node, its image the build of the module.
    deployment = next(o for o in gateway.manifests() if o["kind"] == "Deployment")
    selector = ",".join(f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items())
    traefik_pods = (await admin.list(PODS, gateway.NAMESPACE, label_selector=selector)).items
    assert [p["spec"]["nodeName"].startswith("process-node-") for p in traefik_pods] == [True], traefik_pods
    pulled = [
        e.get("message") or ""
        for e in (await admin.list(CORE_EVENTS, gateway.NAMESPACE)).items
        if e.get("reason") == "Pulled" and e["involvedObject"]["name"] == traefik_pods[0]["metadata"]["name"]
    ]
    module = f"traefik v{versions.TRAEFIK_VERSION} built from the Go module {versions.TRAEFIK_MODULE}"
    assert any(module in m for m in pulled), pulled
    addresses = current["status"].get("addresses") or []
    assert addresses == [{"type": "Hostname", "value": f"{gateway.NAME}.{gateway.NAMESPACE}.svc.cluster.local"}]
    url = f"http://{addresses[0]['value']}:{gw['spec']['listeners'][0]['port']}/"

    async def accepted() -> bool | NotYet:
        current_route = await admin.get(HTTPROUTES, f"{RAYSERVICE}-httproute", ns)
        return httproute_ready(gw, current_route) or NotYet(f"HTTPRoute status: {current_route.get('status')}")

    await wait_for(accepted, READY, what="the HTTPRoute Accepted with its refs resolved")

    async def pods_ready() -> bool | NotYet:
        for name in (ACTIVE, PENDING, "client"):
            conditions = {c["type"]: c["status"] for c in ((await admin.get(PODS, name, ns)).get("status") or {})
                          .get("conditions") or []}  # fmt: skip
            if conditions.get("Ready") != "True":
                return NotYet(f"Pod {name} not Ready")
        return True

    await wait_for(pods_ready, READY, what="the backends and the client Ready")

    async def answers_from(expected: set[str]) -> dict[str, int] | NotYet:
        """A small batch answered only by ``expected`` backends (Traefik applies a route change a moment later)."""
        counts = await send(admin, ns, url, 20)
        return counts if set(counts) <= expected and counts else NotYet(f"answers: {counts}")

    await wait_for(lambda: answers_from({ACTIVE, PENDING}), 120, what="the Gateway to route to the backends")
    counts = await send(admin, ns, url, REQUESTS)
    assert set(counts) <= {ACTIVE, PENDING} and sum(counts.values()) == REQUESTS, counts
    expected = REQUESTS * 0.10
    assert abs(counts.get(PENDING, 0) - expected) <= tolerance(REQUESTS, 0.10), counts

    # The last step of an upgrade: everything to the pending cluster.
    current_route = await admin.get(HTTPROUTES, f"{RAYSERVICE}-httproute", ns)
    updated = route(rs, gw, (0, 100))
    updated["metadata"]["resourceVersion"] = current_route["metadata"]["resourceVersion"]
    await admin.replace(HTTPROUTES, updated["metadata"]["name"], updated, ns)
    await wait_for(lambda: answers_from({PENDING}), 120, what="the Gateway to apply the weights 0/100")
    counts = await send(admin, ns, url, REQUESTS)
    assert counts == {PENDING: REQUESTS}, counts


# ------------------------------------------------------------------------------------- the doctor on Traefik's word
def _doctor_finding(proc: ProcessSandbox, ns: str, rule: str) -> dict[str, Any] | None:
    """``raykube doctor rayservice/demo``'s one finding of ``rule``, asserted firing; None when it is quiet."""
    _, report = proc.doctor(ns, f"rayservice/{RAYSERVICE}")
    found = [f for f in report["findings"] if f["rule"] == rule]
    if not found:
        return None
    assert_fires(found, rule)
    assert len(found) == 1, found
    return found[0]


def _evidence(finding: dict[str, Any]) -> dict[str, str]:
    return {f"{e.get('object', {}).get('kind')} {e.get('path')}": str(e.get("value")) for e in finding["evidence"]}


@pytest.mark.long
async def test_the_doctor_reads_what_traefik_said_of_the_upgrades_class_gateway_and_route(
    proc: ProcessSandbox, admin: Kube, ns: str
) -> None:
    """The U rules on the real Traefik's conditions (their unit tests write the conditions by hand): a RayService
    whose incremental upgrade names a GatewayClass that does not exist (U02: the classes there are and their
    controller quoted), quiet once it names Traefik's; its Gateway made while Traefik is down, which keeps the
    Gateway API's own Pending status (U03), quiet once Traefik is back and programs it; its HTTPRoute to a pending
    cluster whose serve Service does not exist, which Traefik marks ResolvedRefs False (U04), quiet once it exists.
    No operator runs here: the Gateway and HTTPRoute are the operator's own objects (raykube.builders), made by the
    test, so each broken state lasts as long as the test looks at it."""
    await install_crds(admin, load_generated())
    await admin.create(RAYSERVICES, rayservice_body(ns, "no-such-class"), ns)
    u02 = _doctor_finding(proc, ns, "U02")
    assert u02 is not None and not u02.get("causedBy"), u02
    seen = _evidence(u02)
    assert seen["GatewayClass status.conditions[Accepted]"] == "no such GatewayClass", seen
    assert seen["GatewayClass spec.controllerName"] == gateway.CONTROLLER_NAME, seen
    await admin.patch(RAYSERVICES, RAYSERVICE, {"spec": rayservice_body(ns)["spec"]}, ns)
    assert _doctor_finding(proc, ns, "U02") is None

    rs = rayservice(ns)
    gw = unowned(build_gateway(rs))
    deployment = next(o for o in gateway.manifests() if o["kind"] == "Deployment")
    selector = ",".join(f"{k}={v}" for k, v in deployment["spec"]["selector"]["matchLabels"].items())

    async def traefik_pods(count: int) -> bool | NotYet:
        pods = (await admin.list(PODS, gateway.NAMESPACE, label_selector=selector)).items
        return len(pods) == count or NotYet(f"{len(pods)} Traefik Pods")

    await admin.patch(DEPLOYMENTS, gateway.NAME, {"spec": {"replicas": 0}}, gateway.NAMESPACE)
    try:
        await wait_for(lambda: traefik_pods(0), READY, what="Traefik scaled to 0")
        await admin.create(GATEWAYS, gw, ns)
        u03 = _doctor_finding(proc, ns, "U03")
        assert u03 is not None, "U03 did not fire on a Gateway no controller programs"
        seen = _evidence(u03)
        assert seen["Gateway status.conditions[Programmed]"].startswith("Unknown/Pending"), seen
    finally:
        await admin.patch(DEPLOYMENTS, gateway.NAME, {"spec": {"replicas": 1}}, gateway.NAMESPACE)

    async def programmed() -> bool | NotYet:
        current = await admin.get(GATEWAYS, gw["metadata"]["name"], ns)
        return gateway_ready(current) or NotYet(f"Gateway status: {current.get('status')}")

    await wait_for(programmed, READY, what="Traefik, back, to program the Gateway")
    assert _doctor_finding(proc, ns, "U03") is None

    await admin.create(SERVICES, serve_service(ACTIVE), ns)
    await admin.create(HTTPROUTES, route(rs, gw, (50, 50)), ns)

    async def route_says(status: str) -> bool | NotYet:
        current = await admin.get(HTTPROUTES, f"{RAYSERVICE}-httproute", ns)
        parents = (current.get("status") or {}).get("parents") or []
        refs = [c for p in parents for c in p.get("conditions") or [] if c.get("type") == "ResolvedRefs"]
        return any(c.get("status") == status for c in refs) or NotYet(f"HTTPRoute status: {current.get('status')}")

    await wait_for(lambda: route_says("False"), READY, what="Traefik to mark the route's refs unresolved")
    u04 = _doctor_finding(proc, ns, "U04")
    assert u04 is not None, "U04 did not fire on a route whose backend Service is missing"
    [(where, said)] = [(k, v) for k, v in _evidence(u04).items() if "ResolvedRefs" in k]
    assert said.startswith("False/BackendNotFound"), (where, said)
    await admin.create(SERVICES, serve_service(PENDING), ns)
    await wait_for(lambda: route_says("True"), READY, what="Traefik to resolve the route's refs")
    assert _doctor_finding(proc, ns, "U04") is None


# ------------------------------------------------------------------------------------- a whole incremental upgrade
def incremental_rayservice(greeting: str, mark: str) -> dict[str, Any]:
    """The local Serve app's RayService (tests/integration/test_rayservice.py) with KubeRay's incremental upgrade
    through the GatewayClass ``traefik``, its worker group at 0 (the app's 0.1-CPU replica runs on the head), the
    autoscaler on (the upgrade needs it), and ``mark`` in the head's env: changing it changes the cluster's spec."""
    config = serve_config()
    config["applications"][0]["deployments"][0]["user_config"] = {"greeting": greeting}
    body = test_rayservice.rayservice(UPGRADED, config)
    cluster = body["spec"]["rayClusterConfig"]
    cluster["workerGroupSpecs"][0].update(replicas=0, minReplicas=0)  # Ray's autoscaler wants a group
    cluster["enableInTreeAutoscaling"] = True
    cluster["headGroupSpec"]["template"]["spec"]["containers"][0]["env"].append({"name": "MARK", "value": mark})
    body["spec"]["upgradeStrategy"] = {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "gatewayClassName": gateway.GATEWAY_CLASS,
            "maxSurgePercent": 50,
            "stepSizePercent": 50,
            "intervalSeconds": 5,
        },
    }
    return body


@pytest.fixture
async def operator(proc: ProcessSandbox, admin: Kube, ns: str) -> AsyncIterator[Manager]:
    """raykube's operator in-process with its RBAC rules enforced, having found gateway.networking.k8s.io/v1 (served
    by the sandbox's CRDs) as it does at start-up; outside the cluster it reaches dashboards through the API server."""
    await install_crds(admin, load_generated())
    client = Kube.from_config(proc.kubeconfig, qps=200, burst=400, rules=OPERATOR_RULES + LEADER_ELECTION_RULES)
    options = BuildOptions(gateway_api_available=await api_served(client, GATEWAYS))
    manager = Manager(client, options=options, namespaces=[ns], reconcile_concurrency=2, use_kubernetes_proxy=True)
    await asyncio.wait_for(manager.start(), 60)
    try:
        yield manager
    finally:
        await manager.stop()
        await client.close()


UPGRADED = "greeter"


@pytest.mark.long
async def test_the_operator_upgrades_a_rayservice_incrementally_through_traefik(
    proc: ProcessSandbox, admin: Kube, ns: str, operator: Manager
) -> None:
    """KubeRay's ``NewClusterWithIncrementalUpgrade`` with real Ray Serve: the operator's Gateway and HTTPRoute are
    programmed by Traefik and a client reaches the app through the Gateway; after a cluster spec change the operator
    steps the HTTPRoute's weights from the old cluster to the new one (an intermediate split is seen), and at the end
    every request through the Gateway is answered by the new cluster's app."""
    await admin.create(CONFIGMAPS, serve_app(ns), ns)
    await admin.create(PODS, pod("client", ["sleep", "3600"], {}), ns)
    await admin.create(RAYSERVICES, incremental_rayservice("Hello", "1"), ns)

    async def status() -> dict[str, Any]:
        return dict((await admin.get(RAYSERVICES, UPGRADED, ns)).get("status") or {})

    async def ready() -> dict[str, Any] | NotYet:
        current = await status()
        conditions = {c["type"]: c.get("status") for c in current.get("conditions") or []}
        active = (current.get("activeServiceStatus") or {}).get("rayClusterName")
        return current if conditions.get("Ready") == "True" and active else NotYet(json.dumps(conditions))

    first = (await wait_for(ready, SERVE_READY + 300, what="the RayService Ready"))["activeServiceStatus"][
        "rayClusterName"
    ]

    async def programmed() -> dict[str, Any] | NotYet:
        found = await admin.get_or_none(GATEWAYS, f"{UPGRADED}-gateway", ns)
        return found if found and gateway_ready(found) else NotYet(f"Gateway: {(found or {}).get('status')}")

    gw = await wait_for(programmed, READY, what="the operator's Gateway programmed by Traefik")
    url = f"http://{gw['status']['addresses'][0]['value']}/?name=gw"

    async def greeted(greeting: str) -> dict[str, int] | NotYet:
        counts = await send(admin, ns, url, 20)
        return counts if counts == {f"{greeting}, gw!\n": 20} else NotYet(f"answers: {counts}")

    await wait_for(lambda: greeted("Hello"), SERVE_READY, what="the app through the Gateway")

    # A new cluster spec (and greeting): the operator prepares a pending cluster and shifts the traffic step by step.
    current = await admin.get(RAYSERVICES, UPGRADED, ns)
    current["spec"] = incremental_rayservice("Howdy", "2")["spec"]
    await admin.replace(RAYSERVICES, UPGRADED, current, ns)

    seen: list[list[int]] = []

    async def promoted() -> str | NotYet:
        route = await admin.get_or_none(HTTPROUTES, f"{UPGRADED}-httproute", ns)
        refs = (((route or {}).get("spec") or {}).get("rules") or [{}])[0].get("backendRefs") or []
        weights = [int(r.get("weight") or 0) for r in refs]
        if not seen or seen[-1] != weights:
            seen.append(weights)
        now = await status()
        active = (now.get("activeServiceStatus") or {}).get("rayClusterName")
        pending = (now.get("pendingServiceStatus") or {}).get("rayClusterName")
        return str(active) if active != first and not pending else NotYet(f"active {active}, pending {pending}")

    second = await wait_for(promoted, SERVE_READY + 600, what="the incremental upgrade to promote the new cluster")
    print(f"upgrade {first} -> {second}: HTTPRoute weights seen {seen}")  # noqa: T201 - the report
    assert any(len(w) == 2 and all(0 < x < 100 for x in w) for w in seen), seen
    await wait_for(lambda: greeted("Howdy"), 120, what="every answer through the Gateway from the new cluster")
    counts = await send(admin, ns, url, REQUESTS)
    assert counts == {"Howdy, gw!\n": REQUESTS}, counts

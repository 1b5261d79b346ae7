"""mTLS reconcile table tests on an in-memory API server: the RayClusterMTLS controller (KubeRay v1.7.0
``raycluster_mtls_controller.go``: the PKI objects, SANs following the Pods, the Secrets' owner, readiness and expiry
events, skipped clusters, registration behind the gate and cert-manager) and the RayCluster controller's hooks
(RC-6: refused without cert-manager; no Pod until both leaves are Ready and their Secrets are full)."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.config import OperatorConfig
from raykube.api.resources import RAYCLUSTERS
from raykube.builders.options import BuildOptions
from raykube.controllers.base import Deps, Result
from raykube.controllers.raycluster import RayClusterReconciler, ReconcileError
from raykube.controllers.raycluster_mtls import MTLSError, RayClusterMTLSReconciler, registration
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.fake import FakeKube, RecordedEvent
from raykube.kube.resources import CERTIFICATES, ISSUERS, PODS, SECRETS, SERVICES
from raykube.runtime.manager import api_served, default_registrations
from raykube.runtime.operator import Operator

NS, NAME, UID = "team", "secure", "a1b2c3d4-0000-0000-0000-000000000000"
NOW = dt.datetime(2026, 12, 6, 12, tzinfo=dt.UTC)
GATES = {**c.FEATURE_GATE_DEFAULTS, c.GATE_RAYCLUSTER_MTLS: True}
ON = BuildOptions(features=GATES, cert_manager_available=True)
REGARDING = f"RayCluster {NS}/{NAME}"
HEAD_CERT, WORKER_CERT, CA_CERT = f"ray-head-cert-{NAME}", f"ray-worker-cert-{NAME}", f"ray-ca-certificate-{NAME}"
HEAD_SECRET, WORKER_SECRET = f"ray-head-secret-{NAME}", f"ray-worker-secret-{NAME}"
NOT_READY = RecordedEvent(REGARDING, "Normal", "MTLSCertsNotReady", "Reconcile",
                          "Waiting for cert-manager to issue mTLS certificates")  # fmt: skip
PKI_READY = RecordedEvent(REGARDING, "Normal", "MTLSPKIReady", "Reconcile",
                          "mTLS PKI is ready: CA, head, and worker certificates issued")  # fmt: skip


def raycluster(*, tls: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    container = {"name": "ray", "image": "rayproject/ray:2.52.0"}
    body: dict[str, Any] = {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        "workerGroupSpecs": [
            {"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 3, "rayStartParams": {},
             "template": {"spec": {"containers": [container]}}},
        ],
        "tlsOptions": {"enabled": True} if tls is None else tls,
        **spec,
    }  # fmt: skip
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": NAME, "namespace": NS, "uid": UID, "generation": 1}, "spec": body}  # fmt: skip


def world(*extra: dict[str, Any], cluster: dict[str, Any] | None = None) -> FakeKube:
    return FakeKube(
        [cluster or raycluster(), *extra], resources=(RAYCLUSTERS, ISSUERS, CERTIFICATES, SECRETS, PODS, SERVICES)
    )


async def mtls_pass(fake: FakeKube, options: BuildOptions = ON) -> Result:
    deps = Deps(fake.api, fake.cache, fake.recorder, options, clock=lambda: NOW)
    return await RayClusterMTLSReconciler(deps).reconcile(NS, NAME)


def created(fake: FakeKube) -> list[str]:
    return [f"{w.resource}/{w.name}" for w in fake.writes_of("create")]


def issue(fake: FakeKube, cert_name: str, *, ready: bool = True, not_after: str = "2027-03-06T12:00:00Z") -> None:
    """What cert-manager does: the Secret, and the Ready condition at the Certificate's generation."""
    cert = fake.stored(CERTIFICATES, NS, cert_name)
    assert cert is not None
    generation = objects.meta(cert)["generation"]
    cert = copy.deepcopy(cert)
    cert["status"] = {
        "conditions": [{"type": "Ready", "status": "True" if ready else "False", "observedGeneration": generation}],
        "notAfter": not_after,
    }
    fake.add(cert, CERTIFICATES)
    secret_name = cert["spec"]["secretName"]
    fake.add({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret_name, "namespace": NS},
              "data": {"tls.crt": "Y3J0", "tls.key": "a2V5", "ca.crt": "Y2E="}}, SECRETS)  # fmt: skip


def ray_pod(name: str, node_type: str, ip: str, **status: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS,
                         "labels": {c.RAY_CLUSTER_LABEL: NAME, c.RAY_NODE_TYPE_LABEL: node_type}},
            "status": {"podIP": ip, "phase": "Running", **status}}  # fmt: skip


async def test_first_pass_creates_the_pki_in_order_and_waits_for_cert_manager() -> None:
    fake = world()
    assert await mtls_pass(fake) == Result(30.0)
    assert created(fake) == [
        f"issuers/ray-selfsigned-issuer-{NAME}",
        f"certificates/{CA_CERT}",
        f"issuers/ray-ca-issuer-{NAME}",
        f"certificates/{HEAD_CERT}",
        f"certificates/{WORKER_CERT}",
    ]
    for res, name in ((ISSUERS, f"ray-ca-issuer-{NAME}"), (CERTIFICATES, HEAD_CERT)):
        stored = fake.stored(res, NS, name)
        assert stored is not None and objects.controller_of(stored, "RayCluster", "ray.io") == (NS, NAME)
    ca = fake.stored(CERTIFICATES, NS, CA_CERT)
    assert ca is not None and ca["spec"]["secretName"] == f"{NAME}-ca-secret-a1b2c3d4"
    assert fake.events == [NOT_READY]
    assert await mtls_pass(fake) == Result(30.0)  # nothing new to write while cert-manager works
    assert len(fake.writes) == 5


async def test_ready_certificates_give_pki_ready_and_a_periodic_look_and_secrets_owned() -> None:
    fake = world()
    await mtls_pass(fake)
    for name in (CA_CERT, HEAD_CERT, WORKER_CERT):
        issue(fake, name)
    fake.events.clear()
    assert await mtls_pass(fake) == Result(60.0)
    assert fake.events == [PKI_READY]
    updated = sorted(w.name for w in fake.writes_of("update", "secrets"))
    assert updated == sorted([f"{NAME}-ca-secret-a1b2c3d4", HEAD_SECRET, WORKER_SECRET])
    head_secret = fake.stored(SECRETS, NS, HEAD_SECRET)
    cert = fake.stored(CERTIFICATES, NS, HEAD_CERT)
    assert head_secret is not None and cert is not None
    assert head_secret["metadata"]["ownerReferences"] == [
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": HEAD_CERT, "uid": objects.uid(cert)}
    ]
    before = len(fake.writes)
    await mtls_pass(fake)
    assert len(fake.writes) == before  # owned already: no write


async def test_pod_ips_enter_their_own_certificate_only() -> None:
    fake = world()
    await mtls_pass(fake)
    fake.add(ray_pod("secure-head", c.NODE_TYPE_HEAD, "10.1.0.5"))
    fake.add(ray_pod("secure-w1", c.NODE_TYPE_WORKER, "10.1.0.7"))
    fake.add(ray_pod("secure-w2", c.NODE_TYPE_WORKER, "10.1.0.8", phase="Failed"))
    fake.events.clear()
    await mtls_pass(fake)
    head = fake.stored(CERTIFICATES, NS, HEAD_CERT)
    worker = fake.stored(CERTIFICATES, NS, WORKER_CERT)
    assert head is not None and worker is not None
    assert head["spec"]["ipAddresses"] == ["10.1.0.5", "127.0.0.1"]
    assert head["spec"]["dnsNames"] == ["localhost", f"{NAME}-head-svc.{NS}.svc.cluster.local"]
    assert worker["spec"]["ipAddresses"] == ["10.1.0.7", "127.0.0.1"]
    assert fake.events[:2] == [
        RecordedEvent(REGARDING, "Normal", "MTLSCertificatesUpdated", "Update",
                      "Updated head certificate SANs (IPs: [10.1.0.5 127.0.0.1])"),
        RecordedEvent(REGARDING, "Normal", "MTLSCertificatesUpdated", "Update",
                      "Updated worker certificate SANs (IPs: [10.1.0.7 127.0.0.1])"),
    ]  # fmt: skip
    assert [w.name for w in fake.writes_of("update", "certificates")] == [HEAD_CERT, WORKER_CERT]


async def test_a_failed_step_is_reported_and_stops_the_pass() -> None:
    fake = world()
    fake.fail("create", CERTIFICATES, name=CA_CERT, code=403, reason="Forbidden", message="no")
    with pytest.raises(MTLSError):
        await mtls_pass(fake)
    assert created(fake) == [f"issuers/ray-selfsigned-issuer-{NAME}"]
    assert fake.events == [
        RecordedEvent(REGARDING, "Warning", "MTLSFailedToReconcile", "Reconcile",
                      "Failed to reconcile mTLS CA certificate: no")
    ]  # fmt: skip


async def test_an_expiring_certificate_is_warned_about() -> None:
    fake = world()
    await mtls_pass(fake)
    issue(fake, HEAD_CERT, not_after="2026-12-06T18:00:00Z")
    issue(fake, WORKER_CERT)
    fake.events.clear()
    assert await mtls_pass(fake) == Result(60.0)
    assert fake.events == [
        PKI_READY,
        RecordedEvent(REGARDING, "Warning", "MTLSCertificateExpiringSoon", "Reconcile",
                      f"TLS certificate {HEAD_CERT} expires in 6.0 hours; Ray does not hot-reload certs so a pod "
                      "restart will be needed after renewal"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("cluster", "options"),
    [
        (raycluster(tls={"enabled": False}), ON),
        (raycluster(tls={}), ON),
        (raycluster(), BuildOptions(cert_manager_available=True)),  # gate off
        (raycluster(managedBy="kueue.x-k8s.io/multikueue"), ON),
        ({**raycluster(), "metadata": {**raycluster()["metadata"], "deletionTimestamp": "2026-12-06T00:00:00Z",
                                       "finalizers": ["x"]}}, ON),
    ],
    ids=["disabled", "unset", "gate-off", "managed-elsewhere", "deleting"],
)  # fmt: skip
async def test_clusters_it_leaves_alone(cluster: dict[str, Any], options: BuildOptions) -> None:
    fake = world(cluster=cluster)
    assert await mtls_pass(fake, options) == Result()
    assert fake.writes == [] and fake.events == []


def test_registered_only_with_the_gate_and_cert_manager() -> None:
    def names(options: BuildOptions) -> list[str]:
        return [r.name for r in default_registrations(options)]

    assert "raycluster-mtls" in names(ON)
    assert "raycluster-mtls" not in names(BuildOptions(features=GATES))  # cert-manager not served
    assert "raycluster-mtls" not in names(BuildOptions(cert_manager_available=True))  # gate off
    reg = registration(ON)
    assert reg.recorder == "raycluster-mtls-controller"
    assert [w.res for w in reg.owned] == [ISSUERS, CERTIFICATES]
    assert reg.primary_changed({"status": {"a": 1}}, {"status": {"a": 2}})  # every update, as For() without predicates


# --- the RayCluster controller's hooks ------------------------------------------------------------------------------


async def raycluster_pass(fake: FakeKube, options: BuildOptions = ON) -> Result:
    return await RayClusterReconciler(Deps(fake.api, fake.cache, fake.recorder, options, clock=lambda: NOW)).reconcile(
        NS, NAME
    )


async def test_tls_without_cert_manager_is_refused_with_a_warning() -> None:
    fake = world()
    assert await raycluster_pass(fake, BuildOptions(features=GATES)) == Result()
    assert fake.writes == []
    assert fake.events == [
        RecordedEvent(REGARDING, "Warning", "InvalidRayClusterSpec", "Validate",
                      f"The RayCluster spec is invalid {NS}/{NAME}: tlsOptions requires cert-manager, but "
                      "cert-manager is not installed")
    ]  # fmt: skip


async def test_no_pod_until_the_certificates_are_ready_and_the_secrets_full() -> None:
    fake = world()
    with pytest.raises(ReconcileError, match=f"mTLS secrets not ready: certificate {HEAD_CERT} not found"):
        await raycluster_pass(fake)
    assert not fake.writes_of("create", "pods")
    await mtls_pass(fake)
    issue(fake, HEAD_CERT)
    issue(fake, WORKER_CERT, ready=False)
    with pytest.raises(ReconcileError, match=f"certificate {WORKER_CERT} is not ready at current generation 1"):
        await raycluster_pass(fake)
    issue(fake, WORKER_CERT)
    secret = fake.stored(SECRETS, NS, WORKER_SECRET)
    assert secret is not None
    fake.add({**secret, "data": {"tls.crt": "x", "tls.key": "y"}}, SECRETS)
    with pytest.raises(ReconcileError, match=f"secret {WORKER_SECRET} missing required key ca.crt"):
        await raycluster_pass(fake)
    assert not fake.writes_of("create", "pods")
    issue(fake, WORKER_CERT)
    await raycluster_pass(fake)
    pods = fake.all(PODS, NS)
    assert sorted(objects.labels(p)[c.RAY_NODE_TYPE_LABEL] for p in pods) == ["head", "worker"]
    head = next(p for p in pods if objects.labels(p)[c.RAY_NODE_TYPE_LABEL] == "head")
    assert head["spec"]["initContainers"][0]["name"] == "wait-for-tls-ip-san"


async def test_a_reissue_after_a_san_update_holds_new_workers_back() -> None:
    fake = world()
    await mtls_pass(fake)
    issue(fake, HEAD_CERT)
    issue(fake, WORKER_CERT)
    await raycluster_pass(fake)
    worker = fake.stored(CERTIFICATES, NS, WORKER_CERT)
    assert worker is not None
    bumped = copy.deepcopy(worker)
    bumped["metadata"]["generation"] = 2  # the mTLS controller added an IP; cert-manager has not reissued yet
    fake.add(bumped, CERTIFICATES)
    stored = fake.stored(RAYCLUSTERS, NS, NAME)
    assert stored is not None
    more = copy.deepcopy(stored)
    more["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    more["metadata"]["generation"] = 2
    fake.add(more)
    with pytest.raises(ReconcileError, match=f"certificate {WORKER_CERT} is not ready at current generation 2"):
        await raycluster_pass(fake)
    assert len(fake.all(PODS, NS)) == 2


async def test_multi_host_replicas_wait_for_the_certificates_too() -> None:
    cluster = raycluster()
    cluster["spec"]["workerGroupSpecs"][0].update({"numOfHosts": 2, "replicas": 1})
    fake = world(cluster=cluster)
    await mtls_pass(fake)
    issue(fake, HEAD_CERT)
    issue(fake, WORKER_CERT)
    await raycluster_pass(fake)
    assert len(fake.all(PODS, NS)) == 3  # the head and one replica of two hosts
    worker = fake.stored(CERTIFICATES, NS, WORKER_CERT)
    assert worker is not None
    fake.add({**worker, "metadata": {**worker["metadata"], "generation": 2}}, CERTIFICATES)
    stored = fake.stored(RAYCLUSTERS, NS, NAME)
    assert stored is not None
    more = copy.deepcopy(stored)
    more["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    fake.add(more)
    with pytest.raises(ReconcileError, match=f"certificate {WORKER_CERT} is not ready at current generation 2"):
        await raycluster_pass(fake)
    assert len(fake.all(PODS, NS)) == 3


class _Discovery:
    """A client whose discovery answers as given (a dict, or an ApiError to raise)."""

    def __init__(self, answer: dict[str, Any] | Exception) -> None:
        self.answer = answer
        self.paths: list[str] = []

    async def request(self, verb: str, method: str, res: Any, path: str, **_: Any) -> dict[str, Any]:
        self.paths.append(path)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize(
    ("answer", "served"),
    [
        ({"kind": "APIResourceList", "groupVersion": "cert-manager.io/v1", "resources": []}, True),
        (ApiError(404, "NotFound", "the server could not find the requested resource"), False),
        (ApiError(503, "ServiceUnavailable", "discovery failed"), False),
        (OSError("connection refused"), False),
    ],
    ids=["served", "not-found", "error", "unreachable"],
)
async def test_discovery_of_cert_manager(answer: dict[str, Any] | Exception, served: bool) -> None:
    client = _Discovery(answer)
    assert await api_served(client, CERTIFICATES) is served  # type: ignore[arg-type]
    assert client.paths == ["/apis/cert-manager.io/v1"]


@pytest.mark.parametrize(
    ("gates", "answer", "controller", "asked"),
    [
        ({c.GATE_RAYCLUSTER_MTLS: True}, {"groupVersion": "cert-manager.io/v1", "resources": []}, True, True),
        ({c.GATE_RAYCLUSTER_MTLS: True}, ApiError(404, "NotFound", "not found"), False, True),
        ({}, {"groupVersion": "cert-manager.io/v1", "resources": []}, False, False),
    ],
    ids=["gate-and-cert-manager", "no-cert-manager", "gate-off"],
)
async def test_the_operator_looks_for_cert_manager_only_with_the_gate(
    gates: dict[str, bool], answer: dict[str, Any] | Exception, controller: bool, asked: bool
) -> None:
    """KubeRay v1.7.0 main.go: with the gate on, cert-manager's API is looked up once before the controllers are set
    up; the mTLS controller runs only if it is served, and the RayCluster controller knows whether it is."""
    kube = Kube(object())  # type: ignore[arg-type]
    discovery = _Discovery(answer)
    kube.request = discovery.request  # type: ignore[method-assign]
    operator = Operator(OperatorConfig(enable_leader_election=False, feature_gates=gates), kube=kube, identity="t")
    with pytest.raises(RuntimeError, match="has not started"):
        _ = operator.manager
    manager = await operator._build_manager()
    assert ("raycluster-mtls" in [ctl.name for ctl in manager.controllers]) is controller
    assert manager.options.cert_manager_available is controller
    assert [p for p in discovery.paths if "cert-manager" in p] == (["/apis/cert-manager.io/v1"] if asked else [])
    # RayServiceIncrementalUpgrade is on by default: the Gateway API is looked up too (the RayService controller's)
    assert "/apis/gateway.networking.k8s.io/v1" in discovery.paths
    for ctl in manager.controllers:
        ctl.queue.shutdown()

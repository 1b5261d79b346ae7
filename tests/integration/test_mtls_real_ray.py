"""RayCluster mTLS for real (issue 42): cert-manager v1.21 in a process sandbox issues the certificates, the process
kubelet refreshes the TLS Secret volumes as cert-manager reissues them with the Pods' IPs, and Ray runs over TLS.

A process sandbox of its own (two process nodes, ``cert_manager=True``: cert-manager's controller as a host process,
its CRDs from its module), raykube's operator in-process with ``RayClusterMTLS`` on and its RBAC enforced, a RayCluster
of one head and one worker with ``tlsOptions.enabled``. The test waits for the certificates to be Ready and issued by
cert-manager itself (its approved CertificateRequests, leaf certificates signed by the cluster's CA and naming each
Pod's IP: what ``wait-for-tls-ip-san`` waits for in the refreshed volume), the cluster ready with its worker in
``ray status``, and then shows the GCS speaks TLS only: a TLS handshake with the cluster's CA and the Pod's key pair
succeeds, and a plain-text gRPC client gets no connection. Both fail if TLS were off.

Long (``make conformance`` runs it): cert-manager's first build takes about 5 minutes on 2 cores, more than
``make test``'s budget holds; the kwok test ``test_mtls.py`` covers the operator's part in ``make test``.
"""

from __future__ import annotations

import asyncio
import base64
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from cryptography import x509

from raykube.api import constants as c
from raykube.api.crd import load_generated
from raykube.api.rbac import LEADER_ELECTION_RULES, OPERATOR_RULES
from raykube.api.resources import RAYCLUSTERS
from raykube.builders.options import BuildOptions
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import CERTIFICATES, NAMESPACES, PODS, SECRETS, SERVICE_ACCOUNTS, Resource
from raykube.runtime.crds import install_crds
from raykube.runtime.manager import Manager, api_served
from raykube.sandbox import NodePool, Ports, Sandbox, SandboxConfig
from raykube.sandbox.build import build_cert_manager
from raykube.sandbox.kubelet import network
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox

NAME = "secure"
IMAGE = "rayproject/ray:2.52.0"  # the process runtime's default Ray (sandbox/kubelet/images.py)
CA_CERT, HEAD_CERT, WORKER_CERT = f"ray-ca-certificate-{NAME}", f"ray-head-cert-{NAME}", f"ray-worker-cert-{NAME}"
CERTIFICATE_REQUESTS = Resource("cert-manager.io", "v1", "CertificateRequest", "certificaterequests")
ISSUED = 180.0  # generous bounds of a failure on two shared cores, not speed targets
RAY_READY = 900.0
GCS_PORT = 6379

# Run in the head's Ray container (its env has RAY_USE_TLS and the RAY_TLS_* paths): a TLS handshake with the GCS as
# a Ray client makes it (the cluster's CA, the Pod's key pair), then a plain-text gRPC channel, which must not connect.
_PROBE = """
import os, socket, ssl, grpc
addr = (os.environ["POD_IP_FOR_PROBE"], int(os.environ["GCS_PORT_FOR_PROBE"]))
ctx = ssl.create_default_context(cafile=os.environ["RAY_TLS_CA_CERT"])
ctx.check_hostname = False
ctx.load_cert_chain(os.environ["RAY_TLS_SERVER_CERT"], os.environ["RAY_TLS_SERVER_KEY"])
with socket.create_connection(addr, timeout=10) as raw, ctx.wrap_socket(raw) as tls:
    print("tls", tls.version())
channel = grpc.insecure_channel(f"{addr[0]}:{addr[1]}")
try:
    grpc.channel_ready_future(channel).result(timeout=10)
    print("plaintext connected")
except grpc.FutureTimeoutError:
    print("plaintext refused")
"""


@pytest.fixture(scope="module")
async def proc(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ProcessSandbox]:
    """A process sandbox with cert-manager (named ``proc`` so the failure report of conftest.py describes it)."""
    problems = network.preflight()
    if problems:
        pytest.skip("this machine cannot run process nodes: " + "; ".join(problems))
    await asyncio.to_thread(build_cert_manager, print)  # cached after the first time
    root = tmp_path_factory.mktemp("raykube-mtls")
    sandbox = Sandbox.named("procmtls", root)
    config = SandboxConfig(name="procmtls", ports=Ports.free(), nodes=NodePool(count=2, cpu="2", memory="3Gi"),
                           runtime="process", cert_manager=True)  # fmt: skip
    result = await sandbox.up(config)
    try:
        yield ProcessSandbox(sandbox, result.kubeconfig, root)
    finally:
        await sandbox.down(keep_logs=True)


@pytest.fixture(scope="module")
async def admin(proc: ProcessSandbox) -> AsyncIterator[Kube]:
    client = Kube.from_config(proc.kubeconfig)
    await install_crds(client, load_generated())
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def ns(admin: Kube) -> AsyncIterator[str]:
    name = f"mtls-{uuid.uuid4().hex[:6]}"
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


@pytest.fixture
async def mtls_operator(proc: ProcessSandbox, admin: Kube, ns: str) -> AsyncIterator[Manager]:
    """The operator with RayClusterMTLS on, having found cert-manager.io/v1 (served by the real CRDs), its client held
    to the operator's RBAC; outside the cluster it reaches dashboards through the API server."""
    client = Kube.from_config(proc.kubeconfig, qps=200, burst=400, rules=OPERATOR_RULES + LEADER_ELECTION_RULES)
    available = await api_served(client, CERTIFICATES)
    assert available, "the sandbox installed cert-manager's CRDs"
    gates = {**BuildOptions().features, c.GATE_RAYCLUSTER_MTLS: True}
    manager = Manager(client, options=BuildOptions(features=gates, cert_manager_available=available),
                      namespaces=[ns], reconcile_concurrency=2, use_kubernetes_proxy=True)  # fmt: skip
    await asyncio.wait_for(manager.start(), 60)
    try:
        yield manager
    finally:
        await manager.stop()
        await client.close()


def raycluster() -> dict[str, Any]:
    resources = {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}
    container = {"name": "ray-head", "image": IMAGE, "resources": resources}
    worker = {**container, "name": "ray-worker"}
    spec = {
        "rayVersion": "2.52.0",
        "tlsOptions": {"enabled": True},
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        "workerGroupSpecs": [{"groupName": "small", "replicas": 1, "minReplicas": 1, "maxReplicas": 1,
                              "rayStartParams": {}, "template": {"spec": {"containers": [worker]}}}],
    }  # fmt: skip
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": NAME}, "spec": spec}


def conditions(obj: Mapping[str, Any]) -> dict[str, str]:
    return {str(x.get("type")): str(x.get("status")) for x in (obj.get("status") or {}).get("conditions") or []}


def pem(secret: Mapping[str, Any], key: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"][key]))


def ip_sans(cert: x509.Certificate) -> set[str]:
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}


def ray_nodes(status_output: str) -> int:
    """The nodes ``ray status`` lists as active or idle."""
    section = status_output.split("Node status", 1)[-1].split("Pending:", 1)[0]
    return sum(int(m[1]) for m in re.finditer(r"^\s*(\d+) \S+\s*$", section, re.MULTILINE))


@pytest.mark.long
async def test_cert_manager_issues_the_pki_and_ray_runs_over_tls(
    proc: ProcessSandbox, admin: Kube, ns: str, mtls_operator: Manager
) -> None:
    kube = admin
    await kube.create(RAYCLUSTERS, raycluster(), ns)

    async def ray_pods() -> Mapping[str, Mapping[str, Any]] | NotYet:
        pods = {objects.labels(p).get(c.RAY_NODE_TYPE_LABEL, ""): p for p in (await kube.list(PODS, ns)).items}
        ips = {kind: (p.get("status") or {}).get("podIP") for kind, p in pods.items()}
        if sorted(pods) != ["head", "worker"] or not all(ips.values()):
            return NotYet(f"Ray Pods and IPs so far: {ips}")
        return pods

    pods = await wait_for(ray_pods, ISSUED, what="the head and worker Pods with their IPs")
    pod_ips = {kind: str(p["status"]["podIP"]) for kind, p in pods.items()}

    # cert-manager's part, done by cert-manager: every Certificate Ready at its current generation (after the Pods'
    # IPs entered the leaves), through CertificateRequests it approved and signed, the leaves signed by the CA.
    async def issued() -> Mapping[str, Mapping[str, Any]] | NotYet:
        certs = {objects.name(x): x for x in (await kube.list(CERTIFICATES, ns)).items}
        waiting = []
        for name in (CA_CERT, HEAD_CERT, WORKER_CERT):
            cert = certs.get(name)
            ready: Mapping[str, Any] = next(
                (x for x in ((cert or {}).get("status") or {}).get("conditions") or [] if x["type"] == "Ready"), {}
            )
            if (
                cert is None
                or ready.get("status") != "True"
                or ready.get("observedGeneration") != objects.meta(cert)["generation"]
            ):
                waiting.append(f"{name}: {ready or 'no Ready condition'}")
        if waiting:
            return NotYet("; ".join(waiting))
        secrets = {name: await kube.get(SECRETS, certs[name]["spec"]["secretName"], ns) for name in certs}
        for kind, name in (("head", HEAD_CERT), ("worker", WORKER_CERT)):
            if pod_ips[kind] not in ip_sans(pem(secrets[name], "tls.crt")):
                return NotYet(f"{name}'s Secret does not name the {kind} Pod's IP {pod_ips[kind]} yet")
        return secrets

    secrets = await wait_for(issued, ISSUED, what="cert-manager to issue the CA and both leaves with the Pods' IPs")
    ca = pem(secrets[CA_CERT], "tls.crt")
    for name in (HEAD_CERT, WORKER_CERT):
        leaf = pem(secrets[name], "tls.crt")
        leaf.verify_directly_issued_by(ca)  # raises unless the cluster's CA signed it
        assert pem(secrets[name], "ca.crt") == ca
        assert objects.annotations(secrets[name])["cert-manager.io/certificate-name"] == name
    requests = (await kube.list(CERTIFICATE_REQUESTS, ns)).items
    by_certificate = {objects.annotations(r).get("cert-manager.io/certificate-name") for r in requests}
    assert {CA_CERT, HEAD_CERT, WORKER_CERT} <= by_certificate
    assert all(conditions(r).get("Approved") == "True" for r in requests), [conditions(r) for r in requests]

    # The Pods got past wait-for-tls-ip-san (the kubelet refreshed their Secret volumes) and Ray is up, both nodes.
    async def ready() -> Mapping[str, Any] | NotYet:
        cluster = await kube.get(RAYCLUSTERS, NAME, ns)
        status = cluster.get("status") or {}
        if status.get("state") != "ready" or status.get("readyWorkerReplicas") != 1:
            return NotYet(f"state {status.get('state')}, ready workers {status.get('readyWorkerReplicas')}")
        return cluster

    await wait_for(ready, RAY_READY, what="the RayCluster to be ready")
    head = objects.name(pods["head"])

    async def two_nodes() -> str | NotYet:
        run = await asyncio.to_thread(proc.kubectl, "exec", "-n", ns, head, "-c", "ray-head", "--", "ray", "status")
        return run.stdout if ray_nodes(run.stdout) == 2 else NotYet((run.stdout or run.stderr)[-600:])

    await wait_for(two_nodes, 180, what="`ray status` on the head (over TLS) to list the head and the worker")

    probe = await asyncio.to_thread(
        proc.kubectl, "exec", "-n", ns, head, "-c", "ray-head", "--",
        "env", f"POD_IP_FOR_PROBE={pod_ips['head']}", f"GCS_PORT_FOR_PROBE={GCS_PORT}", "python", "-c", _PROBE,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert re.search(r"^tls TLSv1\.[23]$", probe.stdout, re.MULTILINE), probe.stdout
    assert "plaintext refused" in probe.stdout, probe.stdout

"""RayCluster mTLS through cert-manager on the real control plane (kwok nodes), with KubeRay v1.7.0's
``RayClusterMTLS`` gate on and cert-manager's ``cert-manager.io/v1`` Certificate and Issuer types served.

The sandbox runs no cert-manager controller: this test does what it would, by hand (the leaf Secrets with
``tls.crt``/``tls.key``/``ca.crt``, the Ready condition at the Certificate's generation). It shows the operator's
discovery finding the API, the PKI objects appearing with v1.7.0's names, owners, labels and specs, no Ray Pod before
the certificates are issued, the Pods (with the TLS volume, env and ``wait-for-tls-ip-san``) once they are, the Pods'
IPs entering the certificates (a new generation), the Secrets owned by their Certificates, and all of it
garbage-collected with the cluster. The CRDs here are minimal stand-ins for cert-manager's (any spec, a status
subresource, as cert-manager's own have) and are removed at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.config import OperatorConfig
from raykube.api.rbac import LEADER_ELECTION_RULES, OPERATOR_RULES
from raykube.api.resources import RAYCLUSTERS
from raykube.builders.options import BuildOptions
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import CERTIFICATES, CRDS, EVENTS, ISSUERS, PODS, SECRETS, Resource
from raykube.runtime.crds import install_crds
from raykube.runtime.manager import Manager, api_served
from raykube.runtime.operator import Operator
from raykube.waiting import NotYet, wait_for

NAME = "secure"
HEAD_CERT, WORKER_CERT, CA_CERT = f"ray-head-cert-{NAME}", f"ray-worker-cert-{NAME}", f"ray-ca-certificate-{NAME}"
ISSUER_NAMES = [f"ray-ca-issuer-{NAME}", f"ray-selfsigned-issuer-{NAME}"]


def minimal_crd(res: Resource) -> dict[str, Any]:
    """Enough of cert-manager's CRD for ``res``: its names, v1 served and stored, any spec, the status subresource."""
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{res.plural}.{res.group}"},
        "spec": {
            "group": res.group,
            "names": {"kind": res.kind, "listKind": f"{res.kind}List", "plural": res.plural,
                      "singular": res.kind.lower()},
            "scope": "Namespaced",
            "versions": [{"name": res.version, "served": True, "storage": True, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object",
                                                         "properties": {"spec": loose, "status": loose}}}}],
        },
    }  # fmt: skip


@pytest.fixture(scope="module")
async def cert_manager_crds(runtime_kube: Kube) -> AsyncIterator[None]:
    crds = {f"{r.plural}.{r.group}": minimal_crd(r) for r in (CERTIFICATES, ISSUERS)}
    await install_crds(runtime_kube, crds)
    try:
        yield
    finally:
        for name in crds:
            await runtime_kube.delete(CRDS, name, missing_ok=True)

        async def gone() -> bool | NotYet:
            return await api_served(runtime_kube, CERTIFICATES) is False or NotYet("cert-manager.io/v1 still served")

        await wait_for(gone, 60, what="the cert-manager CRDs to be deleted")


@pytest.fixture
async def mtls_operator(
    kubeconfig: Path, namespace: str, ray_crds: list[str], cert_manager_crds: None
) -> AsyncIterator[Manager]:
    """The operator with ``--feature-gates=RayClusterMTLS=true`` after its start-up discovery found cert-manager, its
    client held to the operator's RBAC."""
    client = Kube.from_config(kubeconfig, qps=200, burst=400, rules=OPERATOR_RULES + LEADER_ELECTION_RULES)
    available = await api_served(client, CERTIFICATES)
    assert available, "cert-manager.io/v1 is served once its CRDs are installed"
    gates = {**BuildOptions().features, c.GATE_RAYCLUSTER_MTLS: True}
    manager = Manager(client, options=BuildOptions(features=gates, cert_manager_available=available),
                      namespaces=[namespace], reconcile_concurrency=2)  # fmt: skip
    assert "raycluster-mtls" in [ctl.name for ctl in manager.controllers]
    await asyncio.wait_for(manager.start(), 60)
    try:
        yield manager
    finally:
        await manager.stop()
        await client.close()


def raycluster() -> dict[str, Any]:
    container = {"name": "ray", "image": "rayproject/ray:2.52.0"}
    spec = {
        "rayVersion": "2.52.0",
        "tlsOptions": {"enabled": True},
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        "workerGroupSpecs": [{"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 2,
                              "rayStartParams": {}, "template": {"spec": {"containers": [container]}}}],
    }  # fmt: skip
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": NAME}, "spec": spec}


async def named(kube: Kube, res: Resource, namespace: str) -> dict[str, Mapping[str, Any]]:
    return {objects.name(o): o for o in (await kube.list(res, namespace)).items}


async def issue(kube: Kube, namespace: str, cert: Mapping[str, Any]) -> None:
    """cert-manager's part: the Secret, then Ready=True at the Certificate's generation."""
    secret_name = cert["spec"]["secretName"]
    data = {"tls.crt": "Y3J0", "tls.key": "a2V5", "ca.crt": "Y2E="}
    try:
        await kube.create(SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret_name},
                                    "type": "kubernetes.io/tls", "data": data}, namespace)  # fmt: skip
    except ApiError as exc:
        if not exc.already_exists:
            raise
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "observedGeneration": objects.meta(cert)["generation"],
    }
    status = {"status": {"conditions": [ready], "notAfter": "2099-01-01T00:00:00Z"}}
    await kube.patch(CERTIFICATES, objects.name(cert), status, namespace, subresource="status")


async def reasons(kube: Kube, namespace: str) -> set[str]:
    return {str(e.get("reason")) for e in (await kube.list(EVENTS, namespace)).items}


async def test_pki_then_pods_once_issued_then_sans_follow_the_pods(
    mtls_operator: Manager, runtime_kube: Kube, namespace: str
) -> None:
    kube = runtime_kube
    cluster = await kube.create(RAYCLUSTERS, raycluster(), namespace)

    async def pki() -> dict[str, Mapping[str, Any]] | NotYet:
        certs = await named(kube, CERTIFICATES, namespace)
        issuers = await named(kube, ISSUERS, namespace)
        if sorted(issuers) != ISSUER_NAMES or sorted(certs) != sorted([CA_CERT, HEAD_CERT, WORKER_CERT]):
            return NotYet(f"issuers {sorted(issuers)}, certificates {sorted(certs)}")
        return {**certs, **issuers}

    found = await wait_for(pki, 60, what="the mTLS Issuers and Certificates")
    for obj in found.values():
        refs = objects.meta(obj)["ownerReferences"]
        assert [(r["kind"], r["uid"], r["controller"]) for r in refs] == [("RayCluster", objects.uid(cluster), True)]
        assert objects.labels(obj)["ray.io/cluster"] == NAME
        assert objects.labels(obj)["app.kubernetes.io/created-by"] == "kuberay-operator"
    assert found[CA_CERT]["spec"]["secretName"] == f"{NAME}-ca-secret-{objects.uid(cluster)[:8]}"
    assert found[HEAD_CERT]["spec"]["dnsNames"] == ["localhost", f"{NAME}-head-svc.{namespace}.svc.cluster.local"]

    async def waiting() -> set[str] | NotYet:
        seen = await reasons(kube, namespace)
        return seen if c.EVENT_MTLS_CERTS_NOT_READY in seen else NotYet(f"events so far: {sorted(seen)}")

    await wait_for(waiting, 60, what="the MTLSCertsNotReady event")
    assert await named(kube, PODS, namespace) == {}, "a Ray Pod was created before its certificates were issued"

    for cert_name in (CA_CERT, HEAD_CERT, WORKER_CERT):
        await issue(kube, namespace, found[cert_name])

    async def ray_pods() -> dict[str, Mapping[str, Any]] | NotYet:
        pods = await named(kube, PODS, namespace)
        types = sorted(objects.labels(p).get(c.RAY_NODE_TYPE_LABEL, "") for p in pods.values())
        return pods if types == ["head", "worker"] else NotYet(f"Ray Pods so far: {types}")

    pods = await wait_for(ray_pods, 60, what="the head and worker Pods once the certificates are issued")
    for pod in pods.values():
        head = objects.labels(pod)[c.RAY_NODE_TYPE_LABEL] == "head"
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "ray-tls")
        assert volume["secret"]["secretName"] == (f"ray-head-secret-{NAME}" if head else f"ray-worker-secret-{NAME}")
        assert pod["spec"]["initContainers"][0]["name"] == "wait-for-tls-ip-san"
        assert {"name": "RAY_USE_TLS", "value": "1"} in pod["spec"]["containers"][0]["env"]

    # The Pods' IPs enter their certificates: a new generation, which cert-manager would reissue.
    async def sans() -> dict[str, Mapping[str, Any]] | NotYet:
        live = await named(kube, PODS, namespace)
        ips = {objects.labels(p)[c.RAY_NODE_TYPE_LABEL]: (p.get("status") or {}).get("podIP") for p in live.values()}
        certs = await named(kube, CERTIFICATES, namespace)
        head_ips, worker_ips = certs[HEAD_CERT]["spec"]["ipAddresses"], certs[WORKER_CERT]["spec"]["ipAddresses"]
        if (
            not ips.get("head")
            or ips["head"] not in head_ips
            or not ips.get("worker")
            or ips["worker"] not in worker_ips
        ):
            return NotYet(f"Pod IPs {ips}; head certificate {head_ips}, worker certificate {worker_ips}")
        assert ips["worker"] not in head_ips and ips["head"] not in worker_ips
        return certs

    certs = await wait_for(sans, 90, what="the Pods' IPs in their certificates")
    assert objects.meta(certs[HEAD_CERT])["generation"] > objects.meta(found[HEAD_CERT])["generation"]
    for cert_name in (HEAD_CERT, WORKER_CERT):
        await issue(kube, namespace, certs[cert_name])

    async def settled() -> set[str] | NotYet:
        seen = await reasons(kube, namespace)
        wanted = {c.EVENT_MTLS_CERTIFICATES_UPDATED, c.EVENT_MTLS_PKI_READY}
        return seen if wanted <= seen else NotYet(f"events so far: {sorted(seen)}")

    await wait_for(settled, 90, what="MTLSCertificatesUpdated and MTLSPKIReady")

    await owned_then_collected(kube, namespace, found)


async def owned_then_collected(kube: Kube, namespace: str, found: Mapping[str, Mapping[str, Any]]) -> None:
    """Each Secret gets an ownerReference to its Certificate; deleting the cluster then takes the PKI with it."""

    async def owned() -> bool | NotYet:
        certs = await named(kube, CERTIFICATES, namespace)
        for cert_name in (CA_CERT, HEAD_CERT, WORKER_CERT):
            secret = await kube.get(SECRETS, certs[cert_name]["spec"]["secretName"], namespace)
            refs = [(r["kind"], r["uid"]) for r in objects.meta(secret).get("ownerReferences") or []]
            if refs != [("Certificate", objects.uid(certs[cert_name]))]:
                return NotYet(f"{objects.name(secret)} owners: {refs}")
        return True

    await wait_for(owned, 90, what="the CA and leaf Secrets owned by their Certificates")

    # Deleting the cluster takes the PKI with it: the garbage collector follows the owners, no finalizer needed.
    secret_names = {found[n]["spec"]["secretName"] for n in (CA_CERT, HEAD_CERT, WORKER_CERT)}
    await kube.delete(RAYCLUSTERS, NAME, namespace)

    async def collected() -> bool | NotYet:
        left = [*await named(kube, CERTIFICATES, namespace), *await named(kube, ISSUERS, namespace)]
        left += sorted(secret_names & set(await named(kube, SECRETS, namespace)))
        return not left or NotYet(f"still there: {left}")

    await wait_for(collected, 90, what="the Issuers, Certificates and their Secrets to be garbage-collected")


async def test_the_operator_starts_the_mtls_controller_when_it_finds_cert_manager(
    kubeconfig: Path, namespace: str, ray_crds: list[str], cert_manager_crds: None
) -> None:
    """``raykube operator --feature-gates=RayClusterMTLS=true``: its start-up discovery (KubeRay v1.7.0 main.go's)
    finds cert-manager.io/v1, so the raycluster-mtls controller runs and the RayCluster controller accepts TLS."""
    config = OperatorConfig(kubeconfig=kubeconfig, enable_leader_election=False, probe_addr="127.0.0.1:0",
                            watch_namespaces=(namespace,), feature_gates={c.GATE_RAYCLUSTER_MTLS: True})  # fmt: skip
    operator = Operator(config)
    stop = asyncio.Event()
    running = asyncio.create_task(operator.run(stop))
    try:

        async def started() -> Manager | NotYet:
            try:
                manager = operator.manager
            except RuntimeError:
                return NotYet("the operator has not built its manager yet")
            # Started, not only built: a stop in the middle of the start-up could leave an informer running and this
            # test waiting for it (a CI run met that; the race is in issue 42's notes, to fix with a conformance run).
            return manager if manager.ready.is_set() else NotYet("its caches are not synced yet")

        manager = await wait_for(started, 60, what="the operator's start-up")
        assert "raycluster-mtls" in [ctl.name for ctl in manager.controllers]
        assert manager.options.cert_manager_available
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)
        await operator.kube.close()

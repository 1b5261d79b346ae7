"""The cert-manager objects behind a RayCluster's mTLS, and the readiness rules read off them, as KubeRay v1.7.0's
``raycluster_mtls_controller.go`` makes and reads them (gate ``RayClusterMTLS``, alpha, off).

Pure: a :class:`~raykube.api.resources.RayCluster` (and the Pod IPs the caller found) in, ``cert-manager.io/v1``
objects out, each with a controller ownerReference to the cluster and the labels ``app.kubernetes.io/name=kuberay``,
``app.kubernetes.io/created-by=kuberay-operator``, ``app.kubernetes.io/component=<what it is>`` and
``ray.io/cluster=<cluster>``:

1. Issuer ``ray-selfsigned-issuer-<c>`` (self-signed), which signs
2. Certificate ``ray-ca-certificate-<c>``: the CA (``isCA``, CN ``ray-ca-<c>``, RSA 4096, 87600h, renewed 720h before
   it ends, cert sign + CRL sign) in Secret ``<c>-ca-secret-<uid[:8]>``, behind
3. Issuer ``ray-ca-issuer-<c>``, which signs the leaves:
4. Certificate ``ray-head-cert-<c>`` → Secret ``ray-head-secret-<c>``: DNS ``localhost`` and the head Service's FQDN
   (sorted), IPs the head Pods' and ``127.0.0.1`` (sorted, unique);
5. Certificate ``ray-worker-cert-<c>`` → Secret ``ray-worker-secret-<c>``: DNS ``localhost``, IPs the worker Pods'
   and ``127.0.0.1``.

Leaves: 2160h, renewed 360h before they end; digital signature, key encipherment, server auth, client auth. Only
the leaves follow the spec (their SANs follow the Pods); the Issuers and the CA are never updated once created.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RayCluster
from raykube.builders import names, tls
from raykube.builders.options import BuildOptions
from raykube.kube import objects, times

Obj = Mapping[str, Any]

API_VERSION = c.CERT_MANAGER_GROUP_VERSION
# Go metav1.Duration as JSON: time.Duration.String().
CA_DURATION = "87600h0m0s"  # 24h * 3650, about ten years
CA_RENEW_BEFORE = "720h0m0s"  # 30 days
LEAF_DURATION = "2160h0m0s"  # 90 days
LEAF_RENEW_BEFORE = "360h0m0s"  # 15 days
CA_KEY_SIZE = 4096
CA_USAGES = ("cert sign", "crl sign")
LEAF_USAGES = ("digital signature", "key encipherment", "server auth", "client auth")
LOOPBACK_IP = "127.0.0.1"
LOCALHOST = "localhost"
# KubeRay v1.7.0 checkTLSCertificateExpiry: a Warning when a certificate has less than this left.
EXPIRY_WARNING = dt.timedelta(hours=24)


def resource_labels(cluster: str, component: str) -> dict[str, str]:
    """``tlsResourceLabels``."""
    return {
        c.K8S_APP_NAME_LABEL: c.APPLICATION_NAME,
        c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME,
        "app.kubernetes.io/component": component,
        c.RAY_CLUSTER_LABEL: cluster,
    }


def _names(cluster: RayCluster) -> tuple[str, str, str]:
    meta = cluster.metadata
    return str(meta.get("name") or ""), str(meta.get("namespace") or ""), str(meta.get("uid") or "")


def _object(cluster: RayCluster, kind: str, name: str, component: str, spec: dict[str, Any]) -> dict[str, Any]:
    cluster_name, namespace, uid = _names(cluster)
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": resource_labels(cluster_name, component),
            "ownerReferences": [names.owner_reference(c.KIND_RAYCLUSTER, cluster_name, uid)],
        },
        "spec": spec,
    }


def _issuer_ref(name: str) -> dict[str, str]:
    return {"name": name, "kind": "Issuer", "group": c.CERT_MANAGER_GROUP}


def self_signed_issuer(cluster: RayCluster) -> dict[str, Any]:
    name = _names(cluster)[0]
    return _object(cluster, "Issuer", tls.self_signed_issuer_name(name), "selfsigned-issuer", {"selfSigned": {}})


def ca_certificate(cluster: RayCluster) -> dict[str, Any]:
    name, _, uid = _names(cluster)
    spec = {
        "secretName": tls.ca_secret_name(name, uid),
        "isCA": True,
        "commonName": f"ray-ca-{name}",
        "privateKey": {"algorithm": "RSA", "size": CA_KEY_SIZE},
        "duration": CA_DURATION,
        "renewBefore": CA_RENEW_BEFORE,
        "usages": list(CA_USAGES),
        "issuerRef": _issuer_ref(tls.self_signed_issuer_name(name)),
    }
    return _object(cluster, "Certificate", tls.ca_cert_name(name), "ca-certificate", spec)


def ca_issuer(cluster: RayCluster) -> dict[str, Any]:
    name, _, uid = _names(cluster)
    spec = {"ca": {"secretName": tls.ca_secret_name(name, uid)}}
    return _object(cluster, "Issuer", tls.ca_issuer_name(name), "ca-issuer", spec)


def normalize_ips(pod_ips: Iterable[str]) -> list[str]:
    """``normalizeIPs``: sorted, unique, without empties, always with ``127.0.0.1``."""
    return sorted({ip for ip in pod_ips if ip} | {LOOPBACK_IP})


def _leaf(cluster: RayCluster, *, head: bool, dns_names: Sequence[str], pod_ips: Iterable[str]) -> dict[str, Any]:
    name = _names(cluster)[0]
    spec = {
        "secretName": tls.tls_secret_name(name, head=head),
        "duration": LEAF_DURATION,
        "renewBefore": LEAF_RENEW_BEFORE,
        "dnsNames": sorted(dict.fromkeys(dns_names)),
        "ipAddresses": normalize_ips(pod_ips),
        "usages": list(LEAF_USAGES),
        "issuerRef": _issuer_ref(tls.ca_issuer_name(name)),
    }
    component = "head-certificate" if head else "worker-certificate"
    return _object(cluster, "Certificate", tls.tls_cert_name(name, head=head), component, spec)


def head_certificate(cluster: RayCluster, pod_ips: Iterable[str], options: BuildOptions) -> dict[str, Any]:
    """The head's leaf: DNS ``localhost`` and the head Service's FQDN (``GenerateFQDNServiceName``), the head Pods'
    IPs. Workers reach the head by that name, so worker IPs stay out (a worker scaling does not reissue it)."""
    name, namespace, _ = _names(cluster)
    head_spec = cluster.spec.head_group_spec.head_service if cluster.spec is not None else None
    service = names.head_service_name(name, head_spec)
    fqdn = names.service_fqdn(service, namespace, options.cluster_domain)
    return _leaf(cluster, head=True, dns_names=[LOCALHOST, fqdn], pod_ips=pod_ips)


def worker_certificate(cluster: RayCluster, pod_ips: Iterable[str]) -> dict[str, Any]:
    """The workers' shared leaf: DNS ``localhost``, every worker Pod's IP (the GCS dials workers by IP)."""
    return _leaf(cluster, head=False, dns_names=[LOCALHOST], pod_ips=pod_ips)


def pod_ips(pods: Iterable[Obj]) -> list[str]:
    """``getPodIPs``: the IPs of the Pods that are not being deleted and have not finished."""
    found = []
    for pod in pods:
        status: Obj = pod.get("status") or {}
        if objects.terminating(pod) or status.get("phase") in ("Succeeded", "Failed"):
            continue
        if status.get("podIP"):
            found.append(str(status["podIP"]))
    return found


def _sets_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """KubeRay ``setsEqual``: the same length and every element of ``b`` in ``a``."""
    return len(a) == len(b) and set(b) <= set(a)


def needs_update(live: Obj, desired: Obj) -> bool:
    """Whether a leaf Certificate is rewritten: its labels differ, or its DNS names or IP addresses differ as sets
    (``certificateNeedsUpdate``: cert-manager's own normalisation of the rest is never fought over)."""
    if dict(objects.labels(live)) != dict(objects.labels(desired)):
        return True
    have: Obj = live.get("spec") or {}
    want: Obj = desired.get("spec") or {}
    return not _sets_equal(have.get("dnsNames") or [], want.get("dnsNames") or []) or not _sets_equal(
        have.get("ipAddresses") or [], want.get("ipAddresses") or []
    )


def certificate_ready(cert: Obj) -> bool:
    """``isCertificateReady``: condition Ready is True *and* was observed at the Certificate's current generation (a
    Ready=True from before a SAN update does not count until cert-manager has reissued)."""
    generation = int(objects.meta(cert).get("generation") or 0)
    for cond in (cert.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True" and int(cond.get("observedGeneration") or 0) == generation
    return False


def expiring(cert: Obj, now: dt.datetime) -> float | None:
    """The hours left when a Certificate's ``status.notAfter`` is less than 24 hours away (else None)."""
    not_after = (cert.get("status") or {}).get("notAfter")
    if not not_after:
        return None
    ends = times.parse_time(not_after)
    if ends is None:
        return None
    left = ends - now
    return left.total_seconds() / 3600 if left < EXPIRY_WARNING else None


def secret_owner_reference(cert: Obj) -> dict[str, Any]:
    """controller-runtime ``SetOwnerReference`` of a Certificate on its Secret: not a controller reference."""
    return {"apiVersion": API_VERSION, "kind": "Certificate", "name": objects.name(cert), "uid": objects.uid(cert)}


def secret_with_owner(secret: Obj, cert: Obj) -> dict[str, Any] | None:
    """The Secret with an ownerReference to ``cert`` (one to a Certificate of that name replaced, as
    ``SetOwnerReference`` upserts), or None when it already has exactly that one."""
    wanted = secret_owner_reference(cert)
    refs: list[dict[str, Any]] = [dict(r) for r in objects.meta(secret).get("ownerReferences") or []]
    for i, ref in enumerate(refs):
        same = str(ref.get("apiVersion", "")).split("/")[0] == c.CERT_MANAGER_GROUP and ref.get("kind") == "Certificate"
        if same and ref.get("name") == wanted["name"]:
            if all(ref.get(k) == v for k, v in wanted.items()):
                return None
            refs[i] = {**ref, **wanted}
            break
    else:
        refs.append(wanted)
    body = dict(secret)
    body["metadata"] = {**objects.meta(secret), "ownerReferences": refs}
    return body


def leaf_problem(cluster: str, certs: Mapping[str, Obj | None], secrets: Mapping[str, Obj | None]) -> str | None:
    """KubeRay v1.7.0 ``checkMTLSSecretsReady`` on what the caller read (None: not found): the first reason the head
    and worker Pods may not be created yet, or None. ``certs``/``secrets`` are keyed by name."""
    for head in (True, False):
        name = tls.tls_cert_name(cluster, head=head)
        cert = certs.get(name)
        if cert is None:
            return f'certificate {name} not found: certificates.cert-manager.io "{name}" not found'
        if not certificate_ready(cert):
            generation = int(objects.meta(cert).get("generation") or 0)
            return f"certificate {name} is not ready at current generation {generation}"
    for head in (True, False):
        name = tls.tls_secret_name(cluster, head=head)
        secret = secrets.get(name)
        if secret is None:
            return f'secret {name} not found: secrets "{name}" not found'
        data: Obj = secret.get("data") or {}
        for key in c.TLS_SECRET_KEYS:
            if key not in data:
                return f"secret {name} missing required key {key}"
    return None

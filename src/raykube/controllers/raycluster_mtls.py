"""The RayClusterMTLS reconciler: a RayCluster's ``tlsOptions.enabled`` made into cert-manager Issuers and
Certificates, as KubeRay v1.7.0 does (alpha, gated).

KubeRay's ``ray-operator/controllers/ray/raycluster_mtls_controller.go``, re-implemented: a controller of its own
(``raycluster-mtls``, events from ``raycluster-mtls-controller``) that the manager registers only with
``--feature-gates=RayClusterMTLS=true`` *and* when the API server serves ``cert-manager.io/v1`` at start-up. It
watches RayClusters (every update: a status change is how it hears that Pods came and went) and the Issuers and
Certificates they own, and reads the Ray Pods from the cache. Running apart from the RayCluster controller, it issues
certificates independently of the Pods' lifecycle: the RayCluster controller only waits for them.

A pass, for a cluster that exists, is not being deleted, is not ``managedBy`` another controller and has TLS on:

1. In order, each step stopping the pass on an error (``Warning MTLSFailedToReconcile "Failed to reconcile mTLS
   <step>: <error>"``, action Reconcile; retried with back-off): the self-signed Issuer, the CA Certificate and the CA
   Issuer, created when missing and never updated; then the head's and the workers' Certificates, created when
   missing, else rewritten when their labels, DNS names or IPs (as sets) differ from the Pods' now
   (``Normal MTLSCertificatesUpdated "Updated head certificate SANs (IPs: [...])"``, action Update, reported before
   the write as KubeRay does). Each existing Certificate's Secret gets an ownerReference to it (so the garbage
   collector takes it with the Certificate, which goes with the cluster).
2. Both leaves Ready at their current generation? No: ``Normal MTLSCertsNotReady`` and a look again in 30 s. Yes:
   ``Normal MTLSPKIReady``, a ``Warning MTLSCertificateExpiringSoon`` for each of head, worker and CA with less than
   24 h left, and a look again in a minute (renewals, new Pod IPs).

Unlike KubeRay, which reads cert-manager's Secrets through a cache of every Secret, this reads the three it needs by
name (the operator's cache holds only Secrets labelled ``ray.io/cluster``, and cert-manager does not label its
Secrets); and an Issuer or Certificate create answered AlreadyExists (the cache had not caught up) counts as done.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import ValidationError

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS, RayCluster
from raykube.builders import certificates as certs
from raykube.builders import tls
from raykube.builders.options import BuildOptions
from raykube.controllers.base import Deps, Registration, Result
from raykube.controllers.watches import POD_SELECTOR, cached_pod
from raykube.kube import objects
from raykube.kube.errors import ApiError
from raykube.kube.resources import CERTIFICATES, ISSUERS, PODS, SECRETS, Resource

log = logging.getLogger(__name__)

CONTROLLER = "raycluster-mtls"  # controller-runtime's name for KubeRay v1.7.0's mTLS controller
REQUEUE_NOT_READY = 30.0  # mtlsDefaultRequeueDuration
REQUEUE_PERIODIC = 60.0  # mtlsPeriodicCheckDuration

Obj = Mapping[str, Any]


class MTLSError(Exception):
    """A pass could not bring the PKI in line; the manager retries it with back-off."""


def any_change(old: Obj | None, new: Obj | None) -> bool:
    """controller-runtime's ``For`` without predicates: every update of a RayCluster starts a pass (its status moves
    as its Pods come and get IPs, which is when the SANs must follow)."""
    return True


def registration(options: BuildOptions | None = None) -> Registration:
    """KubeRay v1.7.0 ``RayClusterMTLSController.SetupWithManager``: ``For(RayCluster)``, ``Owns(Issuer)``,
    ``Owns(Certificate)``, named ``raycluster-mtls``; Ray Pods read from the cache as the RayCluster controller
    caches them."""
    return (
        Registration.named(CONTROLLER, recorder=c.RAYCLUSTER_MTLS_CONTROLLER_NAME)
        .for_(RAYCLUSTERS)
        # Every Issuer and Certificate, as KubeRay's cache: one whose labels a user changed is still found (and its
        # labels put back) rather than created again.
        .owns(ISSUERS)
        .owns(CERTIFICATES)
        .reads_(PODS, label_selector=POD_SELECTOR, index_labels=(c.RAY_CLUSTER_LABEL,), transform=cached_pod)
        .with_predicate(any_change)
        .complete(RayClusterMTLSReconciler)
    )


class RayClusterMTLSReconciler:
    def __init__(self, deps: Deps) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.options = deps.options
        self.clock = deps.clock

    async def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.cache.get(RAYCLUSTERS, namespace, name)
        cluster = None if obj is None else self._tls_cluster(obj)
        if obj is None or cluster is None:
            return Result()

        steps: list[tuple[str, Callable[[], Awaitable[object]]]] = [
            ("self-signed issuer", lambda: self._ensure(obj, ISSUERS, certs.self_signed_issuer(cluster))),
            ("CA certificate", lambda: self._ensure_ca(obj, cluster)),
            ("CA issuer", lambda: self._ensure(obj, ISSUERS, certs.ca_issuer(cluster))),
            ("head certificate", lambda: self._leaf(obj, cluster, head=True)),
            ("worker certificate", lambda: self._leaf(obj, cluster, head=False)),
        ]
        for step, run in steps:
            try:
                await run()
            except ApiError as exc:
                note = f"Failed to reconcile mTLS {step}: {exc.message or exc}"
                self.recorder.event(obj, c.EVENT_TYPE_WARNING, c.EVENT_MTLS_FAILED_TO_RECONCILE, "Reconcile", note)
                raise MTLSError(note) from exc

        leaves = [tls.tls_cert_name(name, head=True), tls.tls_cert_name(name, head=False)]
        for cert_name in leaves:
            cert = self.cache.get(CERTIFICATES, namespace, cert_name)
            if cert is None:  # KubeRay's Get error: retried with back-off (the cache has not seen the create yet)
                raise MTLSError(f'certificates.cert-manager.io "{cert_name}" not found')
            if not certs.certificate_ready(cert):
                log.info("RayCluster %s/%s: TLS certificate %s not ready yet", namespace, name, cert_name)
                note = "Waiting for cert-manager to issue mTLS certificates"
                self.recorder.event(obj, c.EVENT_TYPE_NORMAL, c.EVENT_MTLS_CERTS_NOT_READY, "Reconcile", note)
                return Result(REQUEUE_NOT_READY)
        note = "mTLS PKI is ready: CA, head, and worker certificates issued"
        self.recorder.event(obj, c.EVENT_TYPE_NORMAL, c.EVENT_MTLS_PKI_READY, "Reconcile", note)
        self._warn_expiring(obj, [*leaves, tls.ca_cert_name(name)])
        return Result(REQUEUE_PERIODIC)

    def _tls_cluster(self, obj: Obj) -> RayCluster | None:
        """The cluster's model when this controller has work on it: not being deleted, not ``managedBy`` another
        controller, TLS on (checked on the raw spec first: most clusters get no model built on each status update)."""
        namespace, name = objects.namespace(obj), objects.name(obj)
        spec = obj.get("spec")
        if objects.terminating(obj) or not isinstance(spec, Mapping):
            return None
        managed_by = spec.get("managedBy")
        if managed_by and managed_by != c.MANAGED_BY_KUBERAY:
            log.info("RayCluster %s/%s: skipping, managed by %s", namespace, name, managed_by)
            return None
        raw_tls = spec.get("tlsOptions")
        if not isinstance(raw_tls, Mapping) or raw_tls.get("enabled") is not True:
            return None
        try:
            cluster = RayCluster.model_validate(obj)
        except ValidationError as exc:
            log.warning("RayCluster %s/%s: cannot read spec.tlsOptions: %s", namespace, name, exc)
            return None
        return cluster if tls.tls_enabled(cluster.spec, self.options) else None

    async def _ensure(self, cluster: Obj, res: Resource, desired: dict[str, Any]) -> Obj | None:
        """Create ``desired`` when the cache does not have it; the live object, or None when just created."""
        live = self.cache.get(res, objects.namespace(cluster), objects.name(desired))
        if live is not None:
            return live
        try:
            await self.api.create(res, desired, objects.namespace(cluster))
        except ApiError as exc:
            if not exc.already_exists:
                raise
        return None

    async def _ensure_ca(self, cluster: Obj, model: RayCluster) -> None:
        live = await self._ensure(cluster, CERTIFICATES, certs.ca_certificate(model))
        if live is not None:
            await self._own_secret(live)

    async def _leaf(self, cluster: Obj, model: RayCluster, *, head: bool) -> None:
        namespace, name = objects.namespace(cluster), objects.name(cluster)
        node_type = c.NODE_TYPE_HEAD if head else c.NODE_TYPE_WORKER
        ips = certs.pod_ips(
            self.cache.list(PODS, namespace, {c.RAY_CLUSTER_LABEL: name, c.RAY_NODE_TYPE_LABEL: node_type})
        )
        desired = certs.head_certificate(model, ips, self.options) if head else certs.worker_certificate(model, ips)
        live = await self._ensure(cluster, CERTIFICATES, desired)
        if live is None:
            return
        if certs.needs_update(live, desired):
            body = dict(live)
            refs = [r for r in objects.meta(live).get("ownerReferences") or [] if r.get("uid") != objects.uid(cluster)]
            body["metadata"] = {
                **objects.meta(live),
                "labels": desired["metadata"]["labels"],
                "ownerReferences": [*refs, *desired["metadata"]["ownerReferences"]],
            }
            body["spec"] = desired["spec"]
            addresses = desired["spec"]["ipAddresses"]
            note = f"Updated {'head' if head else 'worker'} certificate SANs (IPs: [{' '.join(addresses)}])"
            self.recorder.event(cluster, c.EVENT_TYPE_NORMAL, c.EVENT_MTLS_CERTIFICATES_UPDATED, "Update", note)
            live = await self.api.replace(CERTIFICATES, objects.name(live), body, namespace)
        await self._own_secret(live)

    async def _own_secret(self, cert: Obj) -> None:
        """``ensureSecretOwnedByCertificate``: the Certificate's Secret (when cert-manager has written it) gets an
        ownerReference to the Certificate."""
        secret_name = str((cert.get("spec") or {}).get("secretName") or "")
        try:
            secret = await self.api.get(SECRETS, secret_name, objects.namespace(cert))
        except ApiError as exc:
            if exc.not_found:
                return
            raise
        body = certs.secret_with_owner(secret, cert)
        if body is not None:
            await self.api.replace(SECRETS, secret_name, body, objects.namespace(cert))

    def _warn_expiring(self, cluster: Obj, names: list[str]) -> None:
        now = self.clock()
        for cert_name in names:
            cert = self.cache.get(CERTIFICATES, objects.namespace(cluster), cert_name)
            hours = None if cert is None else certs.expiring(cert, now)
            if hours is None:
                continue
            note = (
                f"TLS certificate {cert_name} expires in {hours:.1f} hours; Ray does not hot-reload certs so a pod "
                "restart will be needed after renewal"
            )
            self.recorder.event(
                cluster, c.EVENT_TYPE_WARNING, c.EVENT_MTLS_CERTIFICATE_EXPIRING_SOON, "Reconcile", note
            )

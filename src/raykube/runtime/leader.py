"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

* **Acquire**: every ``retry_period`` read the Lease. Take it if it does not exist, if it is ours, or if its holder has
  not renewed it for ``lease_duration`` — measured on *our* clock from when we last saw the record change (as
  client-go does), so clock skew between machines cannot make a live leader look expired. Every write carries the
  resourceVersion it read, so two candidates can never both win: the loser gets 409 Conflict.
* **Renew**: every ``retry_period``, one PUT of the Lease as our last write returned it (client-go's fast path; on any
  failure, read it and decide as when acquiring); if no renewal succeeds for ``renew_deadline``, leadership is lost and
  ``on_lost`` runs at once (the operator stops reconciling and exits, like client-go's default).
* **Release** on shutdown: the holder is cleared and the duration set to 1 s, so a standby takes over right away.

Defaults are controller-runtime's: 15 s lease, 10 s renew deadline, 2 s retry period. The Lease name is KubeRay's
``ray-operator-leader``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import Any

from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import LEASES
from raykube.kube.times import format_micro_time

log = logging.getLogger(__name__)


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leading = asyncio.Event()
        self.healthy = True  # the election loop is running and reaching the API server
        self._observed: dict[str, Any] | None = None  # the spec we last saw
        self._observed_at = 0.0
        self._lease: dict[str, Any] | None = None  # the Lease as our last write returned it

    def _spec(self, now: dt.datetime, transitions: int) -> dict[str, Any]:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "acquireTime": format_micro_time(now),
            "renewTime": format_micro_time(now),
            "leaseTransitions": transitions,
        }

    async def _try_acquire_or_renew(self) -> bool:
        now = dt.datetime.now(dt.UTC)
        if self.leading.is_set() and self._lease is not None:
            # client-go's fast path: the leader renews the Lease it last wrote without reading it first (one request
            # a renewal, not two). Its resourceVersion still guards the write: if anyone changed the Lease since, the
            # PUT gets 409 and the slow path below reads it and decides again.
            spec = {**self._lease.get("spec", {}), "renewTime": format_micro_time(now)}
            try:
                await self._update({**self._lease, "spec": spec})
            except Exception as exc:  # any failure: read the Lease and decide again, as client-go
                log.debug("leader election: fast renewal failed (%s); reading the lease", exc)
            else:
                return True
        try:
            lease = await self.kube.get(LEASES, self.name, self.namespace)
        except ApiError as exc:
            if not exc.not_found:
                raise
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(now, 0),
            }
            try:
                created = await self.kube.create(LEASES, body, self.namespace)
            except ApiError as create_error:
                if create_error.conflict:
                    return False  # someone else created it first
                raise
            self._lease = created
            self._observe(created["spec"])
            return True
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        expired = time.monotonic() > self._observed_at + duration
        if holder and holder != self.identity and not expired:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        new_spec = dict(spec) if holder == self.identity else self._spec(now, transitions + (1 if holder else 0))
        new_spec["renewTime"] = format_micro_time(now)
        new_spec["leaseDurationSeconds"] = int(self.lease_duration)
        new_spec["holderIdentity"] = self.identity
        body = {**lease, "spec": new_spec}  # carries metadata.resourceVersion: optimistic concurrency
        try:
            await self._update(body)
        except ApiError as exc:
            if exc.conflict:
                return False
            raise
        return True

    async def _update(self, body: dict[str, Any]) -> None:
        self._lease = None  # until the write is answered, nothing we hold is known to be current
        updated: dict[str, Any] = await self.kube.request(
            "update", "PUT", LEASES, LEASES.path(self.namespace, self.name), body=body
        )
        self._lease = updated
        self._observe(updated["spec"])

    def _observe(self, spec: dict[str, Any]) -> None:
        self._observed = spec
        self._observed_at = time.monotonic()

    async def _attempt(self) -> bool:
        try:
            result = await self._try_acquire_or_renew()
        except (ApiError, OSError, TimeoutError) as exc:
            self.healthy = False
            log.warning("leader election: cannot reach lease %s/%s: %s", self.namespace, self.name, exc)
            return False
        except Exception as exc:  # the HTTP client's own errors
            self.healthy = False
            log.warning("leader election: %s: %s", type(exc).__name__, exc)
            return False
        self.healthy = True
        return result

    async def run(self, on_started_leading: Callable[[], Any], on_lost: Callable[[], Any]) -> None:
        """Acquire, call ``on_started_leading``, renew until lost (then ``on_lost``) or cancelled (then release)."""
        log.info("leader election: waiting for lease %s/%s as %s", self.namespace, self.name, self.identity)
        while not await self._attempt():  # noqa: ASYNC110 - polling the API server every retry_period is the protocol
            await asyncio.sleep(self.retry_period)
        log.info("leader election: acquired lease %s/%s", self.namespace, self.name)
        self.leading.set()
        on_started_leading()
        last_renewal = time.monotonic()
        try:
            while True:
                await asyncio.sleep(self.retry_period)
                if await self._attempt():
                    last_renewal = time.monotonic()
                elif time.monotonic() - last_renewal > self.renew_deadline:
                    log.error(
                        "leader election: lost lease %s/%s (not renewed for %.0fs); stopping",
                        self.namespace,
                        self.name,
                        self.renew_deadline,
                    )
                    self.leading.clear()
                    on_lost()
                    return
        except asyncio.CancelledError:
            await self.release()
            raise

    async def release(self) -> None:
        """Give the lease up so a standby need not wait for it to expire."""
        if not self.leading.is_set():
            return
        self.leading.clear()
        try:
            lease = await self.kube.get(LEASES, self.name, self.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            spec = {
                **lease["spec"],
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": format_micro_time(dt.datetime.now(dt.UTC)),
            }
            await self.kube.request(
                "update", "PUT", LEASES, LEASES.path(self.namespace, self.name), body={**lease, "spec": spec}
            )
            log.info("leader election: released lease %s/%s", self.namespace, self.name)
        except Exception as exc:  # best effort: the lease expires anyway
            log.warning("leader election: could not release lease: %s", exc)

"""The sandbox's dynamic PersistentVolume provisioner: a host directory per volume.

The sandbox has no kubelet and no CSI driver, but PVCs must still become Bound the way they do on a real cluster,
because Ray clusters mount them and ``raykube doctor`` reasons about them. This process is the "external
provisioner" of the sandbox's default StorageClass, following the protocol that Kubernetes' PV controller expects:

1. a PVC of a class whose ``provisioner`` is ours is Pending with no ``spec.volumeName`` (for a
   ``WaitForFirstConsumer`` class: only once the scheduler has set ``volume.kubernetes.io/selected-node``);
2. we create a PV ``pvc-<claim uid>`` pre-bound to it (``spec.claimRef`` with the claim's uid), with the claim's
   size, access modes and volume mode, the class's reclaim policy, and ``pv.kubernetes.io/provisioned-by``;
3. kube-controller-manager's PV controller completes the binding (both objects turn ``Bound``);
4. when the claim is deleted the PV turns ``Released``; with reclaim policy ``Delete`` we delete it and its directory.

It is level-triggered: claims, volumes and classes are listed and watched by informers (``raykube.kube.informer``:
a relist after a 410, back-off after errors), every change in their caches wakes one pass over all of them (read from
the caches), and a pass also runs every 30 s. A create or delete that the caches have not seen yet may be sent again
by the next pass: a volume that already exists is not an error, a delete of one that is gone is ignored. It shows it
is alive by renewing a Lease (``kube-system/raykube-sandbox-provisioner``), which is what ``raykube sandbox up`` waits
for. It listens on nothing.

Run by the sandbox as ``python -m raykube.sandbox.provisioner --kubeconfig=... --volumes-dir=...``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from raykube.kube import objects, times
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.informer import Informer
from raykube.kube.resources import LEASES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES
from raykube.sandbox.kwok import PROVISIONER_NAME

LEASE_NAME = "raykube-sandbox-provisioner"
LEASE_NAMESPACE = "kube-system"
LEASE_SECONDS = 30
RENEW_SECONDS = 10
RESYNC_SECONDS = 30
FIELD_MANAGER = "raykube-sandbox-provisioner"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
SELECTED_NODE = "volume.kubernetes.io/selected-node"

Obj = Mapping[str, Any]
log = logging.getLogger("raykube.sandbox.provisioner")


def holder_identity(pid: int | None = None) -> str:
    return f"{PROVISIONER_NAME}/pid-{pid or os.getpid()}"


def volume_name(claim: Obj) -> str:
    """``pvc-<claim uid>``, the name external provisioners conventionally give a claim's volume."""
    return f"pvc-{objects.uid(claim)}"


def volume_for(claim: Obj, klass: Obj, volumes_dir: Path) -> dict[str, Any]:
    """The PV that satisfies ``claim``: pre-bound to it by uid, sized and shaped as it asks."""
    meta, spec = objects.meta(claim), claim.get("spec")
    if spec is None or not (meta.get("uid") and meta.get("name") and meta.get("namespace")):
        raise ValueError("a claim read from the API server has metadata.uid, name, namespace and spec")
    name = volume_name(claim)
    requests = (spec.get("resources") or {}).get("requests") or {}
    claim_ref = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "name": meta["name"],
        "namespace": meta["namespace"],
        "uid": meta["uid"],
    }
    if meta.get("resourceVersion"):
        claim_ref["resourceVersion"] = meta["resourceVersion"]
    volume_spec: dict[str, Any] = {
        "capacity": {"storage": requests.get("storage", "1Gi")},
        "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
        "volumeMode": spec.get("volumeMode") or "Filesystem",
        "persistentVolumeReclaimPolicy": klass.get("reclaimPolicy") or "Delete",
        "claimRef": claim_ref,
        "hostPath": {"path": str(volumes_dir / name), "type": "DirectoryOrCreate"},
    }
    if objects.name(klass):
        volume_spec["storageClassName"] = objects.name(klass)
    if klass.get("mountOptions"):
        volume_spec["mountOptions"] = klass["mountOptions"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "annotations": {PROVISIONED_BY: PROVISIONER_NAME}},
        "spec": volume_spec,
    }


def wants_volume(claim: Obj, klass: Obj | None) -> bool:
    spec = claim.get("spec")
    if klass is None or spec is None or claim.get("metadata") is None:
        return False
    if spec.get("volumeName") or objects.terminating(claim):
        return False
    if ((claim.get("status") or {}).get("phase") or "Pending") != "Pending":
        return False
    waits_for_consumer = klass.get("volumeBindingMode") == "WaitForFirstConsumer"
    return not waits_for_consumer or SELECTED_NODE in objects.annotations(claim)


def reclaimable(volume: Obj) -> bool:
    """One of our volumes whose claim is gone, with reclaim policy ``Delete``."""
    released = (volume.get("status") or {}).get("phase") in ("Released", "Failed")
    deletes = (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete"
    return objects.annotations(volume).get(PROVISIONED_BY) == PROVISIONER_NAME and released and deletes


class Provisioner:
    def __init__(self, client: Kube, volumes_dir: Path) -> None:
        self.client = client
        self.volumes_dir = volumes_dir
        self.wake = asyncio.Event()
        # Every namespace's claims; volumes and classes are cluster-scoped.
        self.claims = Informer(client, PERSISTENT_VOLUME_CLAIMS)
        self.volumes = Informer(client, PERSISTENT_VOLUMES)
        self.classes = Informer(client, STORAGE_CLASSES)
        self.informers = (self.claims, self.volumes, self.classes)
        for informer in self.informers:
            informer.add_handler(self._changed)

    def _changed(self, event: str, old: Obj | None, new: Obj | None) -> None:
        self.wake.set()

    async def reconcile(self) -> None:
        """One pass over the informers' caches: a volume for each claim that wants one, released volumes deleted."""
        classes = {
            objects.name(c): c
            for c in self.classes.list()
            if c.get("provisioner") == PROVISIONER_NAME and objects.name(c)
        }
        volumes = {objects.name(v): v for v in self.volumes.list()}
        for claim in self.claims.list():
            klass = classes.get((claim.get("spec") or {}).get("storageClassName") or "")
            if not wants_volume(claim, klass) or klass is None:
                continue
            name = volume_name(claim)
            if name in volumes:
                continue
            (self.volumes_dir / name).mkdir(parents=True, exist_ok=True)
            try:
                await self.client.create(PERSISTENT_VOLUMES, volume_for(claim, klass, self.volumes_dir))
            except ApiError as exc:
                if not exc.conflict:
                    raise
            else:
                log.info("provisioned %s for claim %s", name, objects.name(claim) or "?")
        for volume_key, volume in volumes.items():
            if volume_key and reclaimable(volume):
                with contextlib.suppress(ApiError):
                    await self.client.delete(PERSISTENT_VOLUMES, volume_key)
                shutil.rmtree(self.volumes_dir / volume_key, ignore_errors=True)
                log.info("deleted released volume %s", volume_key)

    async def renew_lease(self) -> None:
        while True:
            lease = {
                "apiVersion": LEASES.api_version,
                "kind": LEASES.kind,
                "metadata": {"name": LEASE_NAME, "namespace": LEASE_NAMESPACE},
                "spec": {
                    "holderIdentity": holder_identity(),
                    "leaseDurationSeconds": LEASE_SECONDS,
                    "renewTime": times.format_micro_time(),
                },
            }
            try:
                await self.client.apply(LEASES, lease, LEASE_NAMESPACE, field_manager=FIELD_MANAGER)
            except Exception as exc:  # keep renewing; the lease expiring is the signal
                log.warning("renewing lease failed: %s", exc)
            await asyncio.sleep(RENEW_SECONDS)

    async def run(self) -> None:
        tasks = [
            asyncio.create_task(self.renew_lease()),
            *(asyncio.create_task(i.run(), name=f"informer {i.res}") for i in self.informers),
        ]
        try:
            await asyncio.gather(*(i.synced.wait() for i in self.informers))  # a first pass on full caches
            while True:
                self.wake.clear()
                try:
                    await self.reconcile()
                except Exception:
                    log.exception("reconcile failed; retrying")
                    await asyncio.sleep(1)
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), RESYNC_SECONDS)
        finally:
            for task in tasks:
                task.cancel()


async def main_async(kubeconfig: Path, volumes_dir: Path) -> None:
    client = Kube.from_config(kubeconfig, user_agent=FIELD_MANAGER)
    volumes_dir.mkdir(parents=True, exist_ok=True)
    log.info("provisioning %s volumes under %s", PROVISIONER_NAME, volumes_dir)
    try:
        await Provisioner(client, volumes_dir).run()
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m raykube.sandbox.provisioner", description=__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--volumes-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per request drowns what we did
    asyncio.run(main_async(args.kubeconfig, args.volumes_dir))


if __name__ == "__main__":
    main()

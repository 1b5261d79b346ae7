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

It is level-triggered: every change to a claim, volume or class wakes one pass over all of them, and a pass also
runs every 30 s, so a missed watch event costs at most that. It shows it is alive by renewing a Lease
(``kube-system/raykube-sandbox-provisioner``), which is what ``raykube sandbox up`` waits for. It listens on nothing.

Run by the sandbox as ``python -m raykube.sandbox.provisioner --kubeconfig=... --volumes-dir=...``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from lightkube import ALL_NS, ApiError, AsyncClient, KubeConfig
from lightkube.models.coordination_v1 import LeaseSpec
from lightkube.models.core_v1 import (
    HostPathVolumeSource,
    ObjectReference,
    PersistentVolumeSpec,
)
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import PersistentVolume, PersistentVolumeClaim
from lightkube.resources.storage_v1 import StorageClass

from raykube.sandbox.kwok import PROVISIONER_NAME

LEASE_NAME = "raykube-sandbox-provisioner"
LEASE_NAMESPACE = "kube-system"
LEASE_SECONDS = 30
RENEW_SECONDS = 10
RESYNC_SECONDS = 30
FIELD_MANAGER = "raykube-sandbox-provisioner"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
SELECTED_NODE = "volume.kubernetes.io/selected-node"

log = logging.getLogger("raykube.sandbox.provisioner")


def holder_identity(pid: int | None = None) -> str:
    return f"{PROVISIONER_NAME}/pid-{pid or os.getpid()}"


def volume_name(claim: PersistentVolumeClaim) -> str:
    """``pvc-<claim uid>``, the name external provisioners conventionally give a claim's volume."""
    return f"pvc-{claim.metadata.uid if claim.metadata else ''}"


def volume_for(claim: PersistentVolumeClaim, klass: StorageClass, volumes_dir: Path) -> PersistentVolume:
    """The PV that satisfies ``claim``: pre-bound to it by uid, sized and shaped as it asks."""
    meta, spec = claim.metadata, claim.spec
    if meta is None or spec is None or not (meta.uid and meta.name and meta.namespace):
        raise ValueError("a claim read from the API server has metadata.uid, name, namespace and spec")
    name = volume_name(claim)
    requests = (spec.resources.requests if spec.resources else None) or {}
    return PersistentVolume(
        metadata=ObjectMeta(name=name, annotations={PROVISIONED_BY: PROVISIONER_NAME}),
        spec=PersistentVolumeSpec(
            capacity={"storage": requests.get("storage", "1Gi")},
            accessModes=spec.accessModes or ["ReadWriteOnce"],
            volumeMode=spec.volumeMode or "Filesystem",
            persistentVolumeReclaimPolicy=klass.reclaimPolicy or "Delete",
            storageClassName=klass.metadata.name if klass.metadata else None,
            claimRef=ObjectReference(
                apiVersion="v1",
                kind="PersistentVolumeClaim",
                name=meta.name,
                namespace=meta.namespace,
                uid=meta.uid,
                resourceVersion=meta.resourceVersion,
            ),
            hostPath=HostPathVolumeSource(path=str(volumes_dir / name), type="DirectoryOrCreate"),
            mountOptions=klass.mountOptions,
        ),
    )


def wants_volume(claim: PersistentVolumeClaim, klass: StorageClass | None) -> bool:
    if klass is None or claim.spec is None or claim.metadata is None:
        return False
    if claim.spec.volumeName or claim.metadata.deletionTimestamp is not None:
        return False
    if (claim.status.phase if claim.status else "Pending") != "Pending":
        return False
    waits_for_consumer = klass.volumeBindingMode == "WaitForFirstConsumer"
    return not waits_for_consumer or SELECTED_NODE in (claim.metadata.annotations or {})


def reclaimable(volume: PersistentVolume) -> bool:
    """One of our volumes whose claim is gone, with reclaim policy ``Delete``."""
    annotations = (volume.metadata.annotations if volume.metadata else None) or {}
    released = volume.status is not None and volume.status.phase in ("Released", "Failed")
    deletes = volume.spec is not None and volume.spec.persistentVolumeReclaimPolicy == "Delete"
    return annotations.get(PROVISIONED_BY) == PROVISIONER_NAME and released and deletes


class Provisioner:
    def __init__(self, client: AsyncClient, volumes_dir: Path) -> None:
        self.client = client
        self.volumes_dir = volumes_dir
        self.wake = asyncio.Event()

    async def reconcile(self) -> None:
        classes = {
            c.metadata.name: c
            async for c in self.client.list(StorageClass)
            if c.provisioner == PROVISIONER_NAME and c.metadata and c.metadata.name
        }
        volumes = {v.metadata.name: v async for v in self.client.list(PersistentVolume) if v.metadata}
        async for claim in self.client.list(PersistentVolumeClaim, namespace=ALL_NS):
            klass = classes.get(claim.spec.storageClassName or "") if claim.spec else None
            if not wants_volume(claim, klass) or klass is None:
                continue
            name = volume_name(claim)
            if name in volumes:
                continue
            (self.volumes_dir / name).mkdir(parents=True, exist_ok=True)
            try:
                await self.client.create(volume_for(claim, klass, self.volumes_dir))
            except ApiError as exc:
                if exc.status.code != 409:
                    raise
            else:
                log.info("provisioned %s for claim %s", name, claim.metadata.name if claim.metadata else "?")
        for volume_key, volume in volumes.items():
            if volume_key and reclaimable(volume):
                with contextlib.suppress(ApiError):
                    await self.client.delete(PersistentVolume, volume_key)
                shutil.rmtree(self.volumes_dir / volume_key, ignore_errors=True)
                log.info("deleted released volume %s", volume_key)

    async def watch(self, resource: Any, namespace: str | None) -> None:
        """Wake the reconcile loop on every change of ``resource``; re-watch with back-off after errors."""
        backoff = 0.5
        while True:
            try:
                async for _ in self.client.watch(resource, namespace=namespace):
                    self.wake.set()
                    backoff = 0.5
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure of a watch means: wait, then watch again
                log.warning("watch of %s failed (%s); retrying in %.1fs", resource.__name__, exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)

    async def renew_lease(self) -> None:
        while True:
            lease = Lease(
                metadata=ObjectMeta(name=LEASE_NAME, namespace=LEASE_NAMESPACE),
                spec=LeaseSpec(
                    holderIdentity=holder_identity(),
                    leaseDurationSeconds=LEASE_SECONDS,
                    renewTime=dt.datetime.now(dt.UTC),
                ),
            )
            try:
                await self.client.apply(lease, field_manager=FIELD_MANAGER, force=True)
            except Exception as exc:  # keep renewing; the lease expiring is the signal
                log.warning("renewing lease failed: %s", exc)
            await asyncio.sleep(RENEW_SECONDS)

    async def run(self) -> None:
        tasks = [
            asyncio.create_task(self.renew_lease()),
            asyncio.create_task(self.watch(PersistentVolumeClaim, ALL_NS)),
            asyncio.create_task(self.watch(PersistentVolume, None)),
            asyncio.create_task(self.watch(StorageClass, None)),
        ]
        try:
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
    client = AsyncClient(KubeConfig.from_file(kubeconfig), trust_env=False)
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

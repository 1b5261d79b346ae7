"""Volumes: every PVC the Ray Pod templates mount exists, is Bound, is shareable the way it is shared, and mounts.

The seed's checks: ``kubectl get pvc`` STATUS is Bound; several Workers share one claim only if it is ReadWriteMany
(a ReadWriteOnce claim is one node's disk: Pods on other nodes fail with Multi-Attach, and even on one node it is not
shared storage between Ray nodes); and the Pods' events show no FailedMount.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import ClusterView
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import (
    STAGE_PLACEMENT,
    STAGE_START,
    checker,
    field_evidence,
    finding,
    listing,
    plural,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

VOLUME_NOT_BOUND = rule(
    "B04",
    "VOLUME_NOT_BOUND",
    STAGE_PLACEMENT,
    "A PVC the Ray Pods mount is not Bound (missing StorageClass, provisioning failed)",
    ["hashicorp/consul-helm#237", "ray-project/kuberay#5013"],
)
PVC_MISSING = rule("B08", "PVC_NOT_FOUND", STAGE_PLACEMENT, "A PVC the Ray Pods mount does not exist")
RWO_SHARED = rule(
    "B09",
    "PVC_RWO_SHARED",
    STAGE_PLACEMENT,
    "A ReadWriteOnce(Pod) claim is mounted by several Ray Pods: it is not shared storage",
)
RAY_DIR_ON_VOLUME = rule(
    "B12",
    "PVC_AT_RAY_TEMP_DIR",
    STAGE_PLACEMENT,
    "A PVC is mounted over Ray's temp directory (/tmp/ray): shared by several Pods it breaks their raylets",
)
MOUNT_FAILED = rule(
    "B10",
    "VOLUME_MOUNT_FAILED",
    STAGE_START,
    "The kubelet cannot attach or mount a volume of a Ray Pod (FailedMount, FailedAttachVolume)",
)

# Kubernetes kubelet and attach/detach controller event reasons.
MOUNT_EVENTS = ("FailedMount", "FailedAttachVolume", "FailedMapVolume")
# Kubernetes PV controller event reasons on a PVC.
PROVISIONING_EVENTS = ("ProvisioningFailed", "ExternalProvisioning", "FailedBinding", "WaitForFirstConsumer")
SHARED_MODES = frozenset({"ReadWriteMany", "ReadOnlyMany"})
RWOP = "ReadWriteOncePod"
_VOLUME_IN_MESSAGE = re.compile(r'volume "([^"]+)"')


def _claims(view: ClusterView) -> dict[str, list[tuple[str, str, str]]]:
    """claim → [(group, spec path, volume name)] from the head and worker templates."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for group, path, template in view.templates():
        for index, volume in enumerate(facts.pod_spec(template).get("volumes") or []):
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim:
                out.setdefault(str(claim), []).append(
                    (group, f"{path}.spec.volumes[{index}].persistentVolumeClaim.claimName", str(volume.get("name")))
                )
    return out


def _pods_of(view: ClusterView, users: list[tuple[str, str, str]]) -> list[Obj]:
    groups = {g for g, _, _ in users}
    return [p for g in sorted(groups) for p in view.pods_of_group(g)]


def _tokens(view: ClusterView, users: list[tuple[str, str, str]], pods: list[Obj]) -> set[str]:
    tokens: set[str] = set()
    for pod in pods:
        tokens |= t.pod_down(s.key_of(pod)) | {t.pod_mount(s.key_of(pod))}
    for group, _, _ in users:
        if group == c.HEAD_GROUP_NAME:
            tokens |= {t.head(view.key)}
        else:
            tokens |= {t.workers(view.key, group)}
    return tokens


def _modes(pvc: Obj) -> list[str]:
    return list((pvc.get("status") or {}).get("accessModes") or (pvc.get("spec") or {}).get("accessModes") or [])


@checker(VOLUME_NOT_BOUND, PVC_MISSING, RWO_SHARED)
def check_claims(snap: Snapshot) -> Iterator[Finding]:
    if not snap.has(s.PVCS):
        return
    for view in facts.cluster_views(snap):
        for claim, users in sorted(_claims(view).items()):
            pvc = snap.get(s.PVCS, view.namespace, claim)
            pods = _pods_of(view, users)
            uses = [field_evidence(view.ref, path, claim, "cr.spec") for _, path, _ in users[:3]]
            claim_ref = ObjectRef("PersistentVolumeClaim", claim, view.namespace)
            if pvc is None:
                yield finding(
                    PVC_MISSING,
                    cluster=view.ref,
                    obj=claim_ref,
                    severity="error",
                    title=f'PVC "{claim}" does not exist',
                    evidence=[*uses, field_evidence(claim_ref, "metadata.name", "NotFound")],
                    explanation='The scheduler keeps every Pod that mounts it Pending (persistentvolumeclaim "'
                    f'{claim}" not found).',
                    remediation=[f"Create the PVC {claim} in {view.namespace}, or fix claimName in the template."],
                    effects=_tokens(view, users, pods),
                )
                continue
            phase = str((pvc.get("status") or {}).get("phase") or "Pending")
            if phase != "Bound":
                yield from _unbound(snap, view=view, pvc=pvc, phase=phase, users=users, pods=pods, uses=uses)
            yield from _shared(snap, view, pvc, users)


def _unbound(
    snap: Snapshot,
    *,
    view: ClusterView,
    pvc: Obj,
    phase: str,
    users: list[tuple[str, str, str]],
    pods: list[Obj],
    uses: list[Evidence],
) -> Iterator[Finding]:
    claim_ref = facts.ref(pvc, "PersistentVolumeClaim")
    spec = pvc.get("spec") or {}
    class_name = spec.get("storageClassName")
    default = snap.default_storage_class
    evidence = [field_evidence(claim_ref, "status.phase", phase, "object"), *uses]
    cause = ""
    waits_for_consumer = False
    if class_name is None:
        evidence.append(field_evidence(claim_ref, "spec.storageClassName", "unset"))
        if default is None and snap.has(s.STORAGECLASSES):
            cause = "it names no StorageClass and the cluster has no default StorageClass"
        elif default is not None:
            class_name = objects.name(default)
    else:
        evidence.append(field_evidence(claim_ref, "spec.storageClassName", class_name))
    if class_name:
        storage_class = snap.get(s.STORAGECLASSES, None, str(class_name)) if snap.has(s.STORAGECLASSES) else None
        if snap.has(s.STORAGECLASSES) and storage_class is None and class_name != "":
            cause = f'its StorageClass "{class_name}" does not exist'
            evidence.append(field_evidence(ObjectRef("StorageClass", str(class_name)), "metadata.name", "NotFound"))
        elif storage_class is not None:
            waits_for_consumer = storage_class.get("volumeBindingMode") == "WaitForFirstConsumer"
    events = facts.latest_events(snap.events_for(pvc), *PROVISIONING_EVENTS)
    evidence += [facts.event_evidence(e, claim_ref, snap.now) for e in events[:2]]
    failed = any(e.get("reason") in ("ProvisioningFailed", "FailedBinding") for e in events)
    if waits_for_consumer and not failed and not cause:
        return  # binds when its first Pod is scheduled: Pending until then is normal
    if not cause and failed:
        cause = (
            "provisioning failed: "
            + facts.event_message(
                next(e for e in events if e.get("reason") in ("ProvisioningFailed", "FailedBinding"))
            )[:200]
        )
    if not cause and phase == "Lost":
        cause = "its PersistentVolume is gone"
    claim = objects.name(pvc)
    yield finding(
        VOLUME_NOT_BOUND,
        cluster=view.ref,
        obj=claim_ref,
        severity="error",
        confidence="confirmed" if cause else "likely",
        title=f'PVC "{claim}" is {phase}' + (f": {cause}" if cause else ""),
        evidence=evidence,
        explanation=f'Every Pod that mounts {claim} stays Pending ("pod has unbound immediate '
        'PersistentVolumeClaims") until it is Bound.',
        remediation=[
            "Create the StorageClass or set spec.storageClassName to one that exists (`kubectl get storageclass`); "
            "a PVC's class cannot be changed, so recreate the claim.",
            f"kubectl describe pvc {claim} -n {view.namespace}",
        ],
        effects=_tokens(view, users, _pods_of(view, users)) if pods or users else set(),
    )


def _shared(snap: Snapshot, view: ClusterView, pvc: Obj, users: list[tuple[str, str, str]]) -> Iterator[Finding]:
    modes = _modes(pvc)
    if not modes or SHARED_MODES & set(modes):
        return
    claim = objects.name(pvc)
    claim_ref = facts.ref(pvc, "PersistentVolumeClaim")
    mounting = [p for p in snap.pods_mounting(view.namespace, claim) if not facts.terminating(p)]
    templated = 0
    for group, _, _ in users:
        if group == c.HEAD_GROUP_NAME:
            templated += 1
        else:
            templated += sum(g.desired or 0 for g in view.groups if g.name == group)
    if max(len(mounting), templated) < 2:
        return
    node_names = sorted(
        {str((p.get("spec") or {}).get("nodeName")) for p in mounting if (p.get("spec") or {}).get("nodeName")}
    )
    rwop = RWOP in modes
    severity: Any = "error" if (rwop or len(node_names) > 1) else "warning"
    evidence = [
        field_evidence(claim_ref, "status.accessModes", modes),
        *(field_evidence(view.ref, path, claim, "cr.spec") for _, path, _ in users[:3]),
        field_evidence(
            claim_ref,
            "mounted by",
            ", ".join(objects.name(p) for p in mounting) or f"{templated} Pods (from the templates)",
            "object",
        ),
    ]
    if node_names:
        evidence.append(field_evidence(claim_ref, "on nodes", ", ".join(node_names), "node"))
    yield finding(
        RWO_SHARED,
        cluster=view.ref,
        obj=claim_ref,
        severity=severity,
        title=f'PVC "{claim}" is {"/".join(modes)} but mounted by {max(len(mounting), templated)} Ray Pods'
        + (f" on {plural(len(node_names), 'node')}" if node_names else ""),
        evidence=evidence,
        explanation=(
            "ReadWriteOncePod allows exactly one Pod: the others never start."
            if rwop
            else "ReadWriteOnce is one node's read-write volume: Pods on other nodes fail to attach it (Multi-Attach "
            "error) with most storage drivers, and even Pods on one node do not share it as Ray storage across nodes."
        ),
        remediation=[
            "Use a ReadWriteMany claim (a StorageClass that supports it: NFS, CephFS, EFS, Filestore) for data "
            "shared by several Ray Pods, mounted at a path of its own (/home/ray/shared, not /tmp/ray: that is "
            "each Ray node's own session directory),",
            "or give each Pod its own volume (an ephemeral volumeClaimTemplate in the Pod template).",
        ],
    )


def _covers(mount_path: str, directory: str) -> bool:
    """A volume mounted at ``mount_path`` holds ``directory`` (the same path, or a parent of it)."""
    mount = mount_path.rstrip("/") or "/"
    return directory == mount or directory.startswith(mount if mount == "/" else mount + "/")


@checker(RAY_DIR_ON_VOLUME)
def check_ray_dir_on_volume(snap: Snapshot) -> Iterator[Finding]:
    """Ray keeps each node's session (logs, the raylet's and plasma's Unix sockets, ``session_latest``) under its temp
    directory, ``/tmp/ray`` unless rayStartParams ``temp-dir`` moves it. A PVC mounted there (or over a parent of it)
    puts that per-node state on the volume; a shared one puts every node's in the same directory."""
    if not snap.has(s.PVCS):
        return
    for view in facts.cluster_views(snap):
        found: dict[str, list[str]] = {}
        pods = 0
        for group, path, template in view.templates():
            params = view.head_spec.get("rayStartParams") if group == c.HEAD_GROUP_NAME else next(
                (g.spec.get("rayStartParams") for g in view.groups if g.name == group), None)  # fmt: skip
            ray_dir = str((params or {}).get("temp-dir") or c.RAY_LOG_MOUNT_PATH)
            spec = facts.pod_spec(template)
            claims = dict(facts.claim_names(spec))
            for index, container in enumerate(spec.get("containers") or []):
                for mount in container.get("volumeMounts") or []:
                    claim = claims.get(str(mount.get("name")))
                    if claim and _covers(str(mount.get("mountPath") or ""), ray_dir):
                        field = f"{path}.spec.containers[{index}].volumeMounts[{mount.get('name')}].mountPath"
                        found.setdefault(claim, []).append(f"{field} = {mount.get('mountPath')}")
                        replicas = 1 if group == c.HEAD_GROUP_NAME else next(
                            (g.desired or 0 for g in view.groups if g.name == group), 0)  # fmt: skip
                        pods += replicas
        for claim, where in sorted(found.items()):
            pvc = snap.get(s.PVCS, view.namespace, claim)
            modes = _modes(pvc) if pvc is not None else []
            shared = bool(SHARED_MODES & set(modes))
            claim_ref = ObjectRef("PersistentVolumeClaim", claim, view.namespace)
            yield finding(
                RAY_DIR_ON_VOLUME,
                cluster=view.ref,
                obj=claim_ref,
                severity="warning",
                title=f'PVC "{claim}" is mounted over Ray\'s temp directory'
                + (f" in {plural(pods, 'Pod')} at once ({'/'.join(modes)})" if shared and pods > 1 else ""),
                evidence=[field_evidence(view.ref, w.split(" = ")[0], w.split(" = ")[1], "cr.spec") for w in where[:3]]
                + ([field_evidence(claim_ref, "status.accessModes", modes)] if modes else []),
                explanation="Ray writes each node's session there: logs, the raylet's and the object store's Unix "
                "sockets, and the session_latest link. On a volume several Ray Pods share, every node writes into "
                "the same directory (session_latest points at whichever started last, logs mix, sockets on network "
                "file systems fail), a known source of raylets that cannot start or connect.",
                remediation=[
                    "Mount shared data at a path of its own (for example /home/ray/shared) and leave /tmp/ray to each "
                    "Pod; to keep Ray's logs, ship them (a log sidecar) or give each Pod its own volume.",
                ],
            )


@checker(MOUNT_FAILED)
def check_mounts(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        failing: list[tuple[Obj, Obj]] = []
        for pod in view.pods:
            if facts.terminating(pod) or facts.is_ready(pod):
                continue
            events = facts.latest_events(snap.events_for(pod), *MOUNT_EVENTS)
            if events:
                failing.append((pod, events[0]))
        if not failing:
            continue
        volumes = sorted({m.group(1) for _, e in failing if (m := _VOLUME_IN_MESSAGE.search(facts.event_message(e)))})
        pods = [p for p, _ in failing]
        effects: set[str] = set()
        for pod in pods:
            effects |= t.pod_down(s.key_of(pod))
            if facts.node_type(pod) == c.NODE_TYPE_HEAD:
                effects.add(t.head(view.key))
            else:
                effects.add(t.workers(view.key, facts.group_of(pod)))
        evidence = [facts.event_evidence(e, facts.ref(p, "Pod"), snap.now) for p, e in failing[:3]]
        for pod in pods[:3]:
            for state in facts.container_states(pod):
                if state.state == "waiting":
                    evidence.append(
                        field_evidence(
                            facts.ref(pod, "Pod"), f"{state.path}.state.waiting.reason", state.reason, "pod.status"
                        )
                    )
        claims = {v: claim for pod in pods for v, claim in facts.claim_names(facts.pod_spec(pod)) if v in volumes}
        yield finding(
            MOUNT_FAILED,
            cluster=view.ref,
            obj=facts.ref(pods[0], "Pod"),
            severity="error",
            title=f"{plural(len(pods), 'Ray Pod')} cannot mount "
            + (f"volume {listing(volumes)}" if volumes else "a volume")
            + (f" (PVC {listing(sorted(set(claims.values())))})" if claims else "")
            + f": {facts.event_message(failing[0][1])[:140]}",
            evidence=evidence,
            explanation="The kubelet keeps the Pods in ContainerCreating until the volume attaches and mounts.",
            remediation=[
                "Read the full message: kubectl describe pod " + objects.name(pods[0]) + f" -n {view.namespace}",
                "For Multi-Attach errors, use a ReadWriteMany claim or keep the Pods on the node that holds it; "
                "for a missing ConfigMap/Secret volume, create it.",
            ],
            symptoms={t.pod_mount(s.key_of(pod)) for pod in pods},
            effects=effects,
        )

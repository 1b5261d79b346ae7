"""Installing the ray.io CRDs and the operator into a cluster, as ``raykube install`` does.

:func:`install_operator` applies the CRDs, creates the namespace when missing, then applies the manifests of
:mod:`raykube.deploy.manifests` with server-side apply (field manager ``raykube``, forcing ownership), retargeted to the
namespace. It waits until the Deployment is Available and tells ``on_progress`` (default: nobody) each object as
``created``, ``configured`` or ``unchanged``, as kubectl does, then what it is waiting for. It prints nothing: an
object that cannot be applied raises :class:`InstallError`, a Deployment that does not become Available raises
``WaitTimeout``; :func:`next_step` says what to run next after either.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raykube.deploy.manifests import (
    DEPLOYMENT,
    FIELD_MANAGER,
    OPERATOR_POD_LABEL,
    describe,
    load_manifests,
    retarget,
)

if TYPE_CHECKING:
    from raykube.kube.client import Kube
    from raykube.kube.resources import Resource


class InstallError(RuntimeError):
    """An object could not be applied; the message names it and quotes the API server."""


@dataclass(frozen=True)
class Applied:
    what: str  # kind/name
    action: str  # created, configured or unchanged

    def __str__(self) -> str:
        return f"{self.what} {self.action}"


def _action(before: str | None, after: str | None) -> str:
    if before is None:
        return "created"
    return "unchanged" if before == after else "configured"


def _resource_for(obj: Mapping[str, Any]) -> Resource:
    """The built-in resource an object of the manifests is (the kinds the chart renders)."""
    from raykube.kube import resources as r  # noqa: PLC0415 - heavy imports load per command

    known = (
        r.NAMESPACES,
        r.SERVICE_ACCOUNTS,
        r.CONFIGMAPS,
        r.SECRETS,
        r.SERVICES,
        r.DEPLOYMENTS,
        r.CLUSTER_ROLES,
        r.CLUSTER_ROLE_BINDINGS,
        r.ROLES,
        r.ROLE_BINDINGS,
    )
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    for resource in known:
        if (resource.api_version, resource.kind) == (api_version, kind):
            return resource
    raise ValueError(f"no built-in resource has apiVersion {api_version!r} and kind {kind!r}")


async def _resource_version(client: Kube, resource: Resource, name: str, namespace: str | None) -> str | None:
    current = await client.get_or_none(resource, name, namespace)
    return None if current is None else str((current.get("metadata") or {}).get("resourceVersion"))


async def _apply_crds(client: Kube) -> list[Applied]:
    from raykube.api.crd import load_generated  # noqa: PLC0415
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.resources import CRDS  # noqa: PLC0415
    from raykube.runtime.crds import install_crds  # noqa: PLC0415

    crds = load_generated()
    names = [str(crd["metadata"]["name"]) for crd in crds.values()]
    try:
        before = {name: await _resource_version(client, CRDS, name, None) for name in names}
        await install_crds(client, crds)
    except ApiError as exc:
        raise InstallError(f"applying the ray.io CRDs failed: {exc.message}") from exc
    return [
        Applied(
            f"customresourcedefinition/{name}",
            _action(before[name], await _resource_version(client, CRDS, name, None)),
        )
        for name in names
    ]


async def _ensure_namespace(client: Kube, namespace: str) -> Applied:
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.resources import NAMESPACES  # noqa: PLC0415

    try:
        if await _resource_version(client, NAMESPACES, namespace, None) is not None:
            return Applied(f"namespace/{namespace}", "unchanged")
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    except ApiError as exc:
        if not exc.conflict:  # created meanwhile: fine
            raise InstallError(f"creating namespace/{namespace} failed: {exc.message}") from exc
    return Applied(f"namespace/{namespace}", "created")


async def apply_objects(client: Kube, objects: Sequence[Mapping[str, Any]]) -> list[Applied]:
    """Server-side apply each object (field manager ``raykube``, forced); what happened to each."""
    from raykube.kube.errors import ApiError  # noqa: PLC0415

    results = []
    for obj in objects:
        what = describe(obj)
        try:
            resource = _resource_for(obj)
        except Exception as exc:
            raise InstallError(f"{what}: not a resource this client knows: {exc}") from exc
        metadata = obj["metadata"]
        namespace = metadata.get("namespace")
        try:
            before = await _resource_version(client, resource, metadata["name"], namespace)
            applied = await client.apply(resource, obj, namespace, field_manager=FIELD_MANAGER)
        except ApiError as exc:
            raise InstallError(f"applying {what} failed: {exc.message}") from exc
        version = (applied.get("metadata") or {}).get("resourceVersion")
        after = str(version) if version is not None else None
        kind = str(obj["kind"]).lower()
        results.append(Applied(f"{kind}/{metadata['name']}", _action(before, after)))
    return results


def pod_state(pod: Mapping[str, Any]) -> str:
    """One Pod's state as ``kubectl get pods`` and ``describe`` would tell it: ``Pending (Unschedulable: ...)``,
    ``ImagePullBackOff: ...``, ``Running, 0/1 ready``."""
    status = pod.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    scheduled = conditions.get("PodScheduled") or {}
    if scheduled.get("status") == "False":
        return f"Pending ({scheduled.get('reason')}: {scheduled.get('message', '')})"
    for container in status.get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting")
        if waiting:
            message = waiting.get("message")
            return f"{waiting.get('reason')}{': ' + message if message else ''}"
    statuses = status.get("containerStatuses") or []
    ready = sum(bool(c.get("ready")) for c in statuses)
    return f"{status.get('phase', 'Pending')}, {ready}/{len(statuses) or 1} ready"


async def wait_until_available(
    client: Kube,
    namespace: str,
    *,
    name: str = DEPLOYMENT,
    within: float = 300,
    on_wait: Callable[[str], None] | None = None,
    every: float = 10.0,
) -> None:
    """Wait until the Deployment has rolled out its current spec and is Available; ``on_wait`` hears, every
    ``every`` seconds, what is still missing and what its Pods are doing."""
    from raykube.kube.resources import DEPLOYMENTS, PODS  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    started = time.monotonic()
    told = started

    async def available() -> bool | NotYet:
        nonlocal told
        result = await rolled_out()
        if isinstance(result, NotYet) and on_wait and time.monotonic() - told >= every:
            told = time.monotonic()
            deployment = await client.get(DEPLOYMENTS, name, namespace)
            labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
            pods = (await client.list(PODS, namespace, label_selector=selector)).items if selector else []
            states = "; ".join(f"{p['metadata']['name']}: {pod_state(p)}" for p in pods) or "no Pod yet"
            on_wait(f"{time.monotonic() - started:.0f}s: {result.reason}; {states}")
        return result

    async def rolled_out() -> bool | NotYet:
        deployment = await client.get(DEPLOYMENTS, name, namespace)
        status = deployment.get("status")
        if status is None:
            return NotYet("no status yet")
        replicas = (deployment.get("spec") or {}).get("replicas")
        wanted = replicas if replicas is not None else 1
        generation = (deployment.get("metadata") or {}).get("generation") or 0
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        if (status.get("observedGeneration") or 0) < generation:
            return NotYet(f"generation {generation} not observed yet")
        updated, ready = status.get("updatedReplicas") or 0, status.get("availableReplicas") or 0
        if updated < wanted or ready < wanted:
            return NotYet(f"{updated} updated, {ready} available of {wanted} replicas")
        condition = conditions.get("Available")
        if condition is None or condition.get("status") != "True":
            detail = f"{condition.get('reason')}: {condition.get('message')}" if condition else "no Available condition"
            return NotYet(detail)
        return True

    await wait_for(available, within, what=f"deployment/{name} in namespace {namespace} to be Available")


@dataclass(frozen=True)
class InstallReport:
    applied: list[Applied]
    namespace: str


async def install_operator(
    client: Kube,
    namespace: str,
    *,
    image: str | None = None,
    available_within: float = 300,
    manifests: Path | None = None,
    on_progress: Callable[[Applied | str], None] | None = None,
    pod_spec: Mapping[str, Any] | None = None,
) -> InstallReport:
    """CRDs, namespace, operator manifests (retargeted to ``namespace``), then wait for the Deployment.

    ``on_progress`` hears each object as it is applied, then what is being waited for."""
    tell = on_progress or (lambda _: None)
    objects = retarget(load_manifests(manifests), namespace, image=image)
    for obj in objects if pod_spec else ():  # fields for the operator Pod's spec (where it may be scheduled)
        if obj.get("kind") == "Deployment":
            obj["spec"]["template"]["spec"].update(copy.deepcopy(dict(pod_spec or {})))
    applied: list[Applied] = []
    for step in (_apply_crds(client), _ensure_namespace_step(client, namespace), apply_objects(client, objects)):
        done = await step
        applied += done
        for entry in done:
            tell(entry)
    tell(f"waiting up to {available_within:g}s for deployment/{DEPLOYMENT} in namespace {namespace} to be Available")
    await wait_until_available(client, namespace, within=available_within, on_wait=tell)
    return InstallReport(applied, namespace)


async def _ensure_namespace_step(client: Kube, namespace: str) -> list[Applied]:
    return [await _ensure_namespace(client, namespace)]


def next_step(exc: BaseException, *, namespace: str | None = None) -> str:
    """The command to run next after an install step failed with ``exc`` (a line to append to the error)."""
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.waiting import WaitTimeout  # noqa: PLC0415

    if isinstance(exc, ApiError) and exc.code in (401, 403):
        return (
            "Next: CRDs and ClusterRoles are cluster-scoped, so install as a cluster admin; "
            "`kubectl auth can-i create customresourcedefinitions` says whether you may."
        )
    if isinstance(exc, WaitTimeout) and namespace:
        pods = f"kubectl -n {namespace} describe pods -l {OPERATOR_POD_LABEL}"
        return (
            f"Next: `{pods}` (scheduling, image, probes), `kubectl -n {namespace} logs deploy/{DEPLOYMENT}`, "
            f"or `raykube doctor` on a RayCluster for the whole chain."
        )
    if isinstance(exc, WaitTimeout):
        return "Next: `kubectl get crd -o wide` and `kubectl describe crd <name>` show their conditions."
    if isinstance(exc, OSError) or "connect" in type(exc).__name__.lower():
        return (
            "Next: `kubectl cluster-info` checks that the API server answers (the local sandbox: "
            "`raykube sandbox status`, then `raykube sandbox up`)."
        )
    if "config" in type(exc).__name__.lower() or "kubeconfig" in str(exc).lower():
        return (
            'Next: point --kubeconfig or $KUBECONFIG at a cluster (the local sandbox: eval "$(raykube sandbox env)").'
        )
    return "Next: `kubectl cluster-info` and `kubectl auth can-i '*' '*'` show what the kubeconfig reaches."

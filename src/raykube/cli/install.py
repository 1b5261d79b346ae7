"""``raykube install``: the ray.io CRDs and the operator, into the cluster of the current kubeconfig context.

The operator's manifests are ``config/operator/``: the Helm chart ``helm/raykube-operator`` rendered with its default
values (release and namespace ``kuberay-operator``), checked in so that installing needs no Helm. A wheel carries a
copy (``raykube/cli/operator_manifests``, see ``pyproject.toml``). :func:`write_manifests` regenerates them with the
sandbox's Helm build; a test fails when they are stale::

    python -c 'from raykube.cli.install import write_manifests; write_manifests()'

``install`` applies the CRDs, creates the namespace when missing, then applies the manifests with server-side apply
(field manager ``raykube``, forcing ownership), retargeted to ``--namespace``: namespaced objects, the ServiceAccount
subjects of the bindings and the operator's ``--leader-election-namespace``/``--watch-namespace``. It waits until the
Deployment is Available and reports each object as ``created``, ``configured`` or ``unchanged``, as kubectl does.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml

from raykube.cli.output import fail, progress, success

if TYPE_CHECKING:
    from raykube.kube.client import Kube
    from raykube.kube.resources import Resource

FIELD_MANAGER = "raykube"
RELEASE = "kuberay-operator"  # the release name config/operator/ is rendered with
RENDER_NAMESPACE = "kuberay-operator"  # ... and its namespace, which ``install`` rewrites
DEPLOYMENT = "kuberay-operator"
OPERATOR_POD_LABEL = "app.kubernetes.io/component=kuberay-operator"  # the chart's componentOverride
CONTAINER = "kuberay-operator"
HEADER = (
    "# Generated from the Helm chart helm/raykube-operator with default values (release and namespace\n"
    "# kuberay-operator) by raykube.cli.install.write_manifests(). Do not edit: change the chart and regenerate.\n"
)
# The order objects are applied in: what others refer to first (as Helm does).
_KIND_ORDER = (
    "Namespace",
    "ServiceAccount",
    "ConfigMap",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Service",
    "Deployment",
)
_SOURCE = re.compile(r"^# Source: [^/]+/templates/(?P<file>\S+)$", re.MULTILINE)
_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)


def _repository_root() -> Path:
    return Path(__file__).resolve().parents[3]


def chart_dir() -> Path:
    """The Helm chart, in a source checkout."""
    return _repository_root() / "helm" / "raykube-operator"


def manifests_dir() -> Path:
    """Where the rendered operator manifests are: packaged with raykube, or ``config/operator/`` of a checkout."""
    packaged = Path(__file__).with_name("operator_manifests")
    if packaged.is_dir():
        return packaged
    return _repository_root() / "config" / "operator"


# ---------------------------------------------------------------------------------------------------------------------
# Rendering (a source checkout with the sandbox's Helm build)


def _helm_binary() -> Path:
    from raykube.sandbox import Binaries  # noqa: PLC0415 - only rendering needs the sandbox's build cache

    helm = Binaries.from_cache().helm
    if not helm.exists():
        raise FileNotFoundError(f"{helm} is missing; run `raykube sandbox build` (or `make sandbox-build`) first")
    return helm


def helm_template(
    *args: str, helm: Path | None = None, chart: Path | None = None, namespace: str = RENDER_NAMESPACE
) -> str:
    """``helm template kuberay-operator <chart> --namespace <namespace> <args>``, apart from the user's Helm setup."""
    binary = helm or _helm_binary()
    with tempfile.TemporaryDirectory(prefix="raykube-helm-") as home:
        env = {
            **os.environ,
            "HELM_CACHE_HOME": f"{home}/cache",
            "HELM_CONFIG_HOME": f"{home}/config",
            "HELM_DATA_HOME": f"{home}/data",
        }
        result = subprocess.run(
            [str(binary), "template", RELEASE, str(chart or chart_dir()), "--namespace", namespace, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    if result.returncode != 0:
        raise RuntimeError(f"helm template failed: {result.stderr.strip() or result.stdout.strip()}")
    return result.stdout


def _without_helm_markers(obj: dict[str, Any]) -> dict[str, Any]:
    """The plain manifests are applied by raykube, not Helm: say so in the managed-by label."""
    labels = obj.get("metadata", {}).get("labels") or {}
    if "app.kubernetes.io/managed-by" in labels:
        labels["app.kubernetes.io/managed-by"] = FIELD_MANAGER
    return obj


def render_manifests(helm: Path | None = None, chart: Path | None = None) -> dict[str, str]:
    """File name -> YAML text of ``config/operator/``: the chart with default values, one file per template."""
    files: dict[str, list[dict[str, Any]]] = {}
    for chunk in _SEPARATOR.split(helm_template(helm=helm, chart=chart)):
        source = _SOURCE.search(chunk)
        obj = yaml.safe_load(chunk)
        if not obj:
            continue
        if source is None:
            raise RuntimeError(f"helm template printed a document without a '# Source:' line: {chunk[:200]!r}")
        files.setdefault(source["file"], []).append(_without_helm_markers(obj))
    return {
        name: HEADER + "---\n".join(yaml.safe_dump(obj, sort_keys=False) for obj in objects)
        for name, objects in sorted(files.items())
    }


def write_manifests(output_dir: Path | None = None, helm: Path | None = None) -> list[Path]:
    """Regenerate ``config/operator/`` (removing files the chart no longer renders); returns the files written."""
    directory = output_dir or _repository_root() / "config" / "operator"
    directory.mkdir(parents=True, exist_ok=True)
    rendered = render_manifests(helm=helm)
    for stale in directory.glob("*.yaml"):
        if stale.name not in rendered:
            stale.unlink()
    written = []
    for name, text in rendered.items():
        path = directory / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path)
    return written


# ---------------------------------------------------------------------------------------------------------------------
# Loading and retargeting (pure)


def _order(obj: Mapping[str, Any]) -> tuple[int, str]:
    kind = str(obj.get("kind", ""))
    rank = _KIND_ORDER.index(kind) if kind in _KIND_ORDER else len(_KIND_ORDER)
    return rank, str(obj.get("metadata", {}).get("name", ""))


def load_manifests(directory: Path | None = None) -> list[dict[str, Any]]:
    """Every object of the rendered manifests, in the order to apply them."""
    source = directory or manifests_dir()
    paths = sorted(source.glob("*.yaml"))
    if not paths:
        raise FileNotFoundError(f"no operator manifests in {source}; regenerate them with write_manifests()")
    objects = [obj for path in paths for obj in yaml.safe_load_all(path.read_text()) if obj]
    return sorted(objects, key=_order)


def _retarget_arg(arg: str, old: str, new: str) -> str:
    flag, sep, value = arg.partition("=")
    if not sep:
        return arg
    if flag == "--leader-election-namespace" and value == old:
        return f"{flag}={new}"
    if flag == "--watch-namespace":
        return f"{flag}={','.join(new if ns == old else ns for ns in value.split(','))}"
    return arg


def retarget(
    objects: Iterable[Mapping[str, Any]], namespace: str, *, image: str | None = None, old: str = RENDER_NAMESPACE
) -> list[dict[str, Any]]:
    """The objects moved from namespace ``old`` to ``namespace`` (and the operator image replaced, if given)."""
    moved = []
    for original in objects:
        obj = copy.deepcopy(dict(original))
        metadata = obj.setdefault("metadata", {})
        if metadata.get("namespace") == old:
            metadata["namespace"] = namespace
        for subject in obj.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount" and subject.get("namespace") == old:
                subject["namespace"] = namespace
        if obj.get("kind") == "Deployment":
            for container in obj["spec"]["template"]["spec"].get("containers", []):
                container["args"] = [_retarget_arg(arg, old, namespace) for arg in container.get("args") or []]
                if image and container.get("name") == CONTAINER:
                    container["image"] = image
        moved.append(obj)
    return moved


def describe(obj: Mapping[str, Any]) -> str:
    """``kind/name`` (and `` in namespace ns``) of an object, for messages."""
    metadata = obj.get("metadata", {})
    where = f" in namespace {metadata['namespace']}" if metadata.get("namespace") else ""
    return f"{str(obj.get('kind', '?')).lower()}/{metadata.get('name', '?')}{where}"


# ---------------------------------------------------------------------------------------------------------------------
# Applying


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


# ---------------------------------------------------------------------------------------------------------------------
# The command


def install(
    kubeconfig: Annotated[
        Path | None, typer.Option(help="Kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config).")
    ] = None,
    namespace: Annotated[str, typer.Option(help="Namespace of the operator (created if missing).")] = RENDER_NAMESPACE,
    image: Annotated[
        str | None, typer.Option(help="Operator image instead of the chart's default (ghcr.io/raykube/...).")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the operator Deployment to be Available.")] = 300,
) -> None:
    """Install or update the ray.io CRDs and the raykube operator (the Helm chart's default values, no Helm needed)."""
    from raykube.kube.client import Kube  # noqa: PLC0415
    from raykube.waiting import WaitTimeout  # noqa: PLC0415

    try:
        client = Kube.from_config(kubeconfig, user_agent=FIELD_MANAGER, field_manager=FIELD_MANAGER)
    except Exception as exc:  # no kubeconfig, no such context, unreadable credentials: say it plainly
        fail(f"installing the operator failed: {exc}\n{next_step(exc)}")

    async def run() -> InstallReport:
        try:
            return await install_operator(
                client, namespace, image=image, available_within=timeout, on_progress=_print_step
            )
        finally:
            await client.close()

    try:
        report = asyncio.run(run())
    except WaitTimeout as exc:
        fail(f"installing the operator failed: {exc}\n{next_step(exc, namespace=namespace)}")
    except (InstallError, FileNotFoundError) as exc:
        cause = exc.__cause__ or exc
        fail(f"installing the operator failed: {exc}\n{next_step(cause)}")
    except Exception as exc:  # an API or connection error outside one object: say it plainly
        fail(f"installing the operator failed: {type(exc).__name__}: {exc}\n{next_step(exc)}")
    changed = sum(entry.action != "unchanged" for entry in report.applied)
    success(
        f"raykube operator installed in namespace {report.namespace}: deployment/{DEPLOYMENT} is Available "
        f"({changed} of {len(report.applied)} objects created or changed)"
    )


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


def _print_step(step: Applied | str) -> None:
    """Applied objects go to stdout (kubectl's ``kind/name action`` lines); the wait is progress, on stderr."""
    if isinstance(step, Applied):
        typer.echo(str(step))
    else:
        progress(step)


if __name__ == "__main__":
    typer.run(install)

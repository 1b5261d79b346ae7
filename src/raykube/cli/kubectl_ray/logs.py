"""``kubectl ray log``: every Ray Pod's container log and Ray log directory (a tar through ``pods/exec``, unpacked only
inside the output directory), or, with ``--link gke``, a Google Cloud Logging link to them."""

from __future__ import annotations

import contextlib
import io
import sys
import tarfile
import urllib.parse
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

import typer

from raykube.api import constants as c
from raykube.cli.kubectl_ray.common import (
    KINDS,
    Conn,
    ContextFlag,
    KubeconfigFlag,
    Namespace,
    PluginError,
    api_message,
    die,
    echo,
    parse_target,
    run,
)
from raykube.kube.client import Kube
from raykube.kube.resources import PODS

NODE_TYPES = {"all": "both head and worker node logs", "head": "only head node logs", "worker": "only worker node logs"}


GKE_LINK = "gke"
GKE_LOGS_URL = "https://console.cloud.google.com/logs/query;query="
NO_FLUENTBIT = (
    "Warning: The head pod does not have a 'fluentbit' container. Logs might not be exported to Google Cloud Logging."
)
NOT_GKE = "Warning: The current kubectl context does not appear to be a GKE cluster. The generated link may not work."


def log(
    target: Annotated[str, typer.Argument(metavar="(RAYCLUSTER | TYPE/NAME)", show_default=False)],
    out_dir: Annotated[str, typer.Option("--out-dir", help="directory to save the logs to")] = "",
    node_type: Annotated[
        str,
        typer.Option(
            "--node-type", help="type of Ray node from which to download logs, supports: 'worker', 'head', or 'all'"
        ),
    ] = "all",
    link: Annotated[
        str,
        typer.Option(
            "--link",
            help="print a link to a cloud console to view logs, supports: 'gke'",
        ),
    ] = "",
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Download logs from a Ray cluster and save them to a directory: per Pod, its container log (stdout.log) and Ray's
    log directory (/tmp/ray/session_latest/logs). With --link gke, print a Google Cloud Logging link instead."""
    kind, name = parse_target(target, "log")
    node_type = node_type.lower()
    if node_type not in NODE_TYPES:
        raise typer.BadParameter('must be one of "all", "head", or "worker"', param_hint="--node-type")
    echo(f"Command set to retrieve {NODE_TYPES[node_type]}.")  # v1.7.0: before the output directory's line
    if link:
        if link != GKE_LINK:
            die(f'unsupported link type "{link}", only "{GKE_LINK}" is supported')
        if out_dir:
            die("--out-dir is incompatible with --link")
        directory, created = Path(), False
    else:
        directory, created = _out_dir(out_dir, name)
    conn = Conn(kubeconfig, context, namespace)

    async def body(kube: Kube, ns: str) -> None:
        cluster = name
        if kind != "raycluster":
            try:
                obj = await kube.get(KINDS[kind], name, ns)
            except Exception as exc:
                raise PluginError(f"failed to retrieve Ray job info for {name}: {api_message(exc)}") from None
            status = obj.get("status") or {}
            cluster = (
                status.get("rayClusterName", "")
                if kind == "rayjob"
                else (status.get("activeServiceStatus") or {}).get("rayClusterName", "")
            )
        if link:
            await _gke_link(kube, conn, ns, cluster, node_type)
            return
        selector = f"{c.RAY_CLUSTER_LABEL}={cluster}"
        if node_type != "all":
            selector = f"{c.RAY_NODE_TYPE_LABEL}={node_type},{selector}"
        pods = (await kube.list(PODS, ns, label_selector=selector)).items
        if not pods:
            if created:
                with contextlib.suppress(OSError):
                    directory.rmdir()
            raise PluginError(f"No Ray nodes found for resource {cluster or name}")
        for pod in pods:
            await _download(kube, pod, ns, directory)

    run(conn, body)


def gke_logs_url(ns: str, cluster: str, node_type: str, context_name: str) -> tuple[str, bool]:
    """The Cloud Logging query of a cluster's Ray containers (one node type, or all Ray nodes), and whether the
    context is a GKE one (``gke_<project>_<location>_<name>``: the link then names the project)."""
    lines = [
        'resource.type="k8s_container"',
        f'resource.labels.namespace_name="{ns}"',
        f'labels."k8s-pod/ray_io/cluster"="{cluster}"',
        f'labels."k8s-pod/ray_io/node-type"="{node_type}"'
        if node_type in ("head", "worker")
        else 'labels."k8s-pod/ray_io/is-ray-node"="yes"',
    ]
    url = GKE_LOGS_URL + urllib.parse.quote_plus("\n".join(lines), safe="")
    if not context_name.startswith("gke_"):
        return url, False
    project = context_name.split("_")[1]
    return f"{url}?project={urllib.parse.quote_plus(project, safe='')}", True


def _context_name(conn: Conn) -> str:
    """The kubeconfig context the command uses (``--context``, else the current one)."""
    from lightkube.config.kubeconfig import KubeConfig  # noqa: PLC0415 - only --link needs it

    if conn.context:
        return conn.context
    try:
        config = KubeConfig.from_file(conn.kubeconfig) if conn.kubeconfig else KubeConfig.from_env()
    except Exception as exc:
        raise PluginError(f"cannot determine current kubectl context to infer GCP project: {exc}") from None
    return config.current_context or ""


async def _gke_link(kube: Kube, conn: Conn, ns: str, cluster: str, node_type: str) -> None:
    """``log --link gke``: warn when the head Pod has no ``fluentbit`` container (its logs may never reach Cloud
    Logging), then print the link; nothing is downloaded."""
    selector = f"{c.RAY_NODE_TYPE_LABEL}={c.NODE_TYPE_HEAD},{c.RAY_CLUSTER_LABEL}={cluster}"
    with contextlib.suppress(Exception):  # as the plugin: no head Pod to look at is no warning
        heads = (await kube.list(PODS, ns, label_selector=selector)).items
        if heads and not any(
            x.get("name") == "fluentbit" for x in (heads[0].get("spec") or {}).get("containers") or []
        ):
            sys.stderr.write(NO_FLUENTBIT + "\n")
    url, gke = gke_logs_url(ns, cluster, node_type, _context_name(conn))
    if not gke:
        sys.stderr.write(NOT_GKE + "\n")
    echo(url)


def _out_dir(out_dir: str, name: str) -> tuple[Path, bool]:
    """Where the logs go (``--out-dir``, else a new directory named after the resource) and whether we made it."""
    created = False
    if not out_dir:
        echo("No output directory specified, creating dir under current directory using resource name.")
        out_dir = name
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        created = True
    directory = Path(out_dir)
    if not directory.exists():
        die(f"Directory does not exist. Failed with: stat {out_dir}: no such file or directory")
    if not directory.is_dir():
        die("Path is not a directory. Please input a directory and try again")
    return directory, created


async def _download(kube: Kube, pod: dict[str, Any], ns: str, directory: Path) -> None:
    pod_name = pod["metadata"]["name"]
    container = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name")
    target = directory / pod_name
    target.mkdir(parents=True, exist_ok=True)
    try:
        text = await kube.logs(PODS, pod_name, ns, container=container)
    except Exception as exc:
        raise PluginError(f"Error retrieving log for Ray cluster node {pod_name}: {api_message(exc)}") from None
    (target / "stdout.log").write_text(text)
    command = ["tar", "--warning=no-file-changed", "-cf", "-", "-C", c.RAY_SESSION_LOGS_DIR, "."]
    result = await kube.exec(PODS, pod_name, ns, command, container=container, timeout=300.0, limit=1 << 31)
    if result.stderr.strip():
        sys.stderr.write(result.stderr)
    if result.exit_code not in (0, 1):  # GNU tar exits 1 when a file changed while it read it: still a good archive
        raise PluginError(f"Error occurred while calling remote command: exit code {result.exit_code} from {pod_name}")
    echo(f"Downloading log for Ray Node {pod_name}")
    _extract(result.raw_stdout, target)


def _extract(archive: bytes, target: Path) -> None:
    """Unpack regular files and directories under ``target``; nothing may land outside it (no absolute paths, no
    ``..``, no links), whatever the Pod sent."""
    root = target.resolve()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r|") as tar:
        for member in tar:
            relative = PurePosixPath(member.name)
            if relative.is_absolute() or ".." in relative.parts:
                continue
            path = (root / relative).resolve()
            if path != root and root not in path.parents:
                continue
            if member.isdir():
                path.mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                path.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is not None:
                    path.write_bytes(source.read())
            else:
                sys.stdout.write(f"Ignoring unsupported file type: {member.type!r} ({member.name})\n")

"""The operator's manifests: ``config/operator/``, the Helm chart ``helm/raykube-operator`` rendered with its default
values (release and namespace ``kuberay-operator``), checked in so that installing needs no Helm. A wheel carries a
copy (``raykube/deploy/operator_manifests``, see ``pyproject.toml``). :func:`write_manifests` regenerates them with the
sandbox's Helm build; a test fails when they are stale::

    python -c 'from raykube.deploy.manifests import write_manifests; write_manifests()'

:func:`load_manifests` reads them in the order to apply them and :func:`retarget` moves them to another namespace:
namespaced objects, the ServiceAccount subjects of the bindings and the operator's
``--leader-election-namespace``/``--watch-namespace``.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

FIELD_MANAGER = "raykube"  # the field manager of every apply, and the managed-by label of the plain manifests
RELEASE = "kuberay-operator"  # the release name config/operator/ is rendered with
RENDER_NAMESPACE = "kuberay-operator"  # ... and its namespace, which ``retarget`` rewrites
DEPLOYMENT = "kuberay-operator"
OPERATOR_POD_LABEL = "app.kubernetes.io/component=kuberay-operator"  # the chart's componentOverride
CONTAINER = "kuberay-operator"
# The first lines of each file of config/operator/.
HEADER = (
    "# Generated from the Helm chart helm/raykube-operator with default values (release and namespace\n"
    "# kuberay-operator) by raykube.deploy.manifests.write_manifests(). Do not edit: change the chart and regenerate.\n"
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

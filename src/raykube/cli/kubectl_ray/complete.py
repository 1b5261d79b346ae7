"""Shell completion for ``kubectl ray``, in cobra's ``__complete`` protocol, which kubectl (1.26+) speaks to plugins.

kubectl runs ``kubectl_complete-ray ARGS... WORD`` for ``kubectl ray ARGS... WORD<TAB>`` (``kubectl-ray __complete``
does the same); the answer is one candidate per line (``value<TAB>description``) and a last line ``:<directive>``
(4: no file names; 0: the shell's default, file names). Candidates: the commands and flags of the command tree,
and, where a command takes one, the names on the cluster: RayClusters (and ``rayjob/``, ``rayservice/`` names for
session, log and delete), worker groups, Ray Pods, namespaces, and ``--node-type``'s values. Nothing goes to stderr
and nothing fails: with no cluster to ask, there are just fewer candidates.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raykube.api import constants as c

DEFAULT, NO_FILE, NO_SPACE = 0, 4, 2
# Where a command's first argument is a RayCluster name, a TYPE/NAME, a worker group or a Ray Pod.
CLUSTER_ARGUMENT = {("get", "cluster"), ("get", "clusters"), ("get", "token"), ("scale", "cluster")}
TARGET_ARGUMENT = {("session",), ("log",), ("logs",), ("delete",), ("doctor",)}
NODE_TYPES = (("all", "download logs from all Ray nodes"), ("head", "download logs from head Ray nodes"),
              ("worker", "download logs from worker Ray nodes"))  # fmt: skip


def _command_tree() -> Any:
    import typer  # noqa: PLC0415

    from raykube.cli.kubectl_ray.app import app  # noqa: PLC0415 - the tree, only when completing

    return typer.main.get_command(app)


def _takes_value(command: Any, flag: str) -> bool:
    for param in getattr(command, "params", []):
        if flag in getattr(param, "opts", []) + getattr(param, "secondary_opts", []):
            return not getattr(param, "is_flag", False)
    return False


def complete(args: Sequence[str]) -> tuple[list[str], int]:
    """The candidates for the last of ``args`` (possibly ``""``) and cobra's directive."""
    *words, partial = list(args) or [""]
    command: Any = _command_tree()
    path: list[str] = []
    positionals: list[str] = []
    flags: dict[str, str] = {}
    pending: str | None = None
    for word in words:
        if pending is not None:
            flags[pending], pending = word, None
        elif word.startswith("-"):
            name, eq, value = word.partition("=")
            if eq:
                flags[name] = value
            elif _takes_value(command, name):
                pending = name
        elif hasattr(command, "commands") and word in command.commands:
            command = command.commands[word]
            path.append(word)
        else:
            positionals.append(word)
    if pending is not None:
        return _flag_values(pending, partial, flags)
    if partial.startswith("-"):
        names = sorted(
            opt for param in getattr(command, "params", []) for opt in getattr(param, "opts", []) if opt.startswith("-")
        )
        return [name for name in names if name.startswith(partial)], NO_FILE
    if hasattr(command, "commands"):
        found = [
            f"{name}\t{(sub.get_short_help_str(80) or '').strip()}"
            for name, sub in sorted(command.commands.items())
            if not sub.hidden and name.startswith(partial)
        ]
        return found, NO_FILE
    if positionals:
        return [], NO_FILE
    return _arguments(tuple(path), partial, flags)


def _namespace(flags: dict[str, str]) -> tuple[str | None, Path | None, str | None]:
    kubeconfig = flags.get("--kubeconfig")
    return flags.get("-n") or flags.get("--namespace"), Path(kubeconfig) if kubeconfig else None, flags.get("--context")


def _names(kind: str, flags: dict[str, str], labels: str | None = None) -> list[str]:
    """Names of ``kind`` (rayclusters, rayjobs, rayservices, pods, namespaces) in the namespace; [] on any trouble."""
    from raykube.cli.kubectl_ray import common  # noqa: PLC0415
    from raykube.kube.client import Kube  # noqa: PLC0415
    from raykube.kube.resources import NAMESPACES, PODS  # noqa: PLC0415

    resource = {
        "rayclusters": common.RAYCLUSTERS, "rayjobs": common.RAYJOBS, "rayservices": common.RAYSERVICES,
        "pods": PODS, "namespaces": NAMESPACES,
    }[kind]  # fmt: skip
    namespace, kubeconfig, context = _namespace(flags)

    async def names() -> list[str]:
        kube = Kube.from_config(kubeconfig, context=context, user_agent="kubectl-ray", timeout=5.0)
        try:
            scope = None if kind == "namespaces" else namespace or kube.namespace
            items = (await kube.list(resource, scope, label_selector=labels)).items
            return [str((item.get("metadata") or {}).get("name", "")) for item in items]
        finally:
            await kube.close()

    try:
        return asyncio.run(asyncio.wait_for(names(), 5))
    except Exception:
        return []


def _arguments(path: tuple[str, ...], partial: str, flags: dict[str, str]) -> tuple[list[str], int]:
    if path in CLUSTER_ARGUMENT:
        return [n for n in _names("rayclusters", flags) if n.startswith(partial)], NO_FILE
    if path in TARGET_ARGUMENT:
        kind, slash, prefix = partial.partition("/")
        if slash:
            plural = {"raycluster": "rayclusters", "rayjob": "rayjobs", "rayservice": "rayservices"}.get(kind.lower())
            found = [f"{kind}/{n}" for n in _names(plural, flags) if n.startswith(prefix)] if plural else []
            return found, NO_FILE
        names = [n for n in _names("rayclusters", flags) if n.startswith(partial)]
        types = [t for t in ("raycluster/", "rayjob/", "rayservice/") if t.startswith(partial)]
        return names + types, NO_FILE if names else NO_FILE | NO_SPACE
    if path in {("get", "workergroup"), ("get", "workergroups")}:
        return _groups(partial, flags), NO_FILE
    if path in {("get", "node"), ("get", "nodes")}:
        labels = f"{c.RAY_IS_RAY_NODE_LABEL}=yes"
        cluster = flags.get("-c") or flags.get("--ray-cluster")
        if cluster:
            labels += f",{c.RAY_CLUSTER_LABEL}={cluster}"
        return [n for n in _names("pods", flags, labels) if n.startswith(partial)], NO_FILE
    return [], NO_FILE if path and path[0] != "job" else DEFAULT


def _groups(partial: str, flags: dict[str, str]) -> list[str]:
    from raykube.cli.kubectl_ray import common  # noqa: PLC0415
    from raykube.kube.client import Kube  # noqa: PLC0415

    namespace, kubeconfig, context = _namespace(flags)
    cluster = flags.get("-c") or flags.get("--ray-cluster")

    async def groups() -> list[str]:
        kube = Kube.from_config(kubeconfig, context=context, user_agent="kubectl-ray", timeout=5.0)
        try:
            selector = f"metadata.name={cluster}" if cluster else None
            items = (await kube.list(common.RAYCLUSTERS, namespace or kube.namespace, field_selector=selector)).items
            names = [g.get("groupName", "") for item in items for g in item["spec"].get("workerGroupSpecs") or []]
            return list(dict.fromkeys(names))
        finally:
            await kube.close()

    try:
        return [g for g in asyncio.run(asyncio.wait_for(groups(), 5)) if g.startswith(partial)]
    except Exception:
        return []


def _flag_values(flag: str, partial: str, flags: dict[str, str]) -> tuple[list[str], int]:
    if flag == "--node-type":
        return [f"{value}\t{help_}" for value, help_ in NODE_TYPES if value.startswith(partial)], NO_FILE
    if flag in ("-c", "--ray-cluster"):
        return [n for n in _names("rayclusters", flags) if n.startswith(partial)], NO_FILE
    if flag in ("-n", "--namespace"):
        return [n for n in _names("namespaces", flags) if n.startswith(partial)], NO_FILE
    if flag == "--link":  # log --link (v1.7.0)
        return [v for v in ("gke",) if v.startswith(partial)], NO_FILE
    if flag in ("--autoscaler",):
        return [v for v in ("v1", "v2") if v.startswith(partial)], NO_FILE
    return [], DEFAULT  # a file (-f, --file, --kubeconfig, --runtime-env, --out-dir) or a free value


def main(args: Sequence[str] | None = None) -> None:
    """``kubectl_complete-ray``: what kubectl runs to complete ``kubectl ray ...``."""
    candidates, directive = complete(sys.argv[1:] if args is None else args)
    sys.stdout.write("".join(f"{line}\n" for line in candidates) + f":{directive}\n")

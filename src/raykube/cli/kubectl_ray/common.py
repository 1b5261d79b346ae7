"""What every ``kubectl ray`` command shares: the kubeconfig flags, the API client, ``TYPE/NAME`` and errors."""

from __future__ import annotations

import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import typer

from raykube.api import addresses
from raykube.api import constants as c
from raykube.cli import aio
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import Resource

T = TypeVar("T")

Namespace = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="If present, the namespace scope for this CLI request.", show_default=False),
]
KubeconfigFlag = Annotated[
    Path | None,
    typer.Option("--kubeconfig", help="Path to the kubeconfig file to use for CLI requests.", show_default=False),
]
ContextFlag = Annotated[
    str | None, typer.Option("--context", help="The name of the kubeconfig context to use", show_default=False)
]

# The Ray resources as the API server addresses them, without the models (raykube.api.addresses).
RAYCLUSTERS = addresses.RAYCLUSTERS
RAYJOBS = addresses.RAYJOBS
RAYSERVICES = addresses.RAYSERVICES
# What TYPE/NAME may name (kubectl-plugin/pkg/util: raycluster, rayjob, rayservice).
KINDS: dict[str, Resource] = {"raycluster": RAYCLUSTERS, "rayjob": RAYJOBS, "rayservice": RAYSERVICES}


class PluginError(Exception):
    """Ends the command with ``Error: <message>`` on stderr and exit code 1, as the plugin does."""


def api_message(exc: BaseException) -> str:
    """An API error as client-go words it (``rayclusters.ray.io "x" not found``: the Status message, no code)."""
    return str(getattr(exc, "message", "") or exc)


def die(message: str) -> NoReturn:
    sys.stderr.write(f"Error: {message}\n")
    raise typer.Exit(1)


def echo(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


@dataclass(frozen=True)
class Conn:
    """The kubeconfig flags of one command; the namespace is ``-n``, else the context's (as kubectl decides)."""

    kubeconfig: Path | None
    context: str | None
    namespace_flag: str | None

    def client(self) -> Kube:
        try:
            return Kube.from_config(
                self.kubeconfig,
                context=self.context,
                user_agent="kubectl-ray",
                field_manager=c.KUBECTL_RAY_FIELD_MANAGER,
                qps=50.0,
                burst=100,
            )
        except Exception as exc:  # no kubeconfig, a broken one, no such context
            die(f"failed to create client: {exc}")

    def namespace(self, kube: Kube) -> str:
        return self.namespace_flag or kube.namespace

    def kubectl_flags(self) -> list[str]:
        """The flags a kubectl this command runs needs to reach the same cluster."""
        flags = []
        if self.kubeconfig is not None:
            flags += ["--kubeconfig", str(self.kubeconfig)]
        if self.context:
            flags += ["--context", self.context]
        return flags


def run(conn: Conn, body: Callable[[Kube, str], Awaitable[T]]) -> T:
    """Run ``body(client, namespace)``; an API or plugin error ends the command with the plugin's ``Error:`` line."""

    async def main() -> T:
        kube = conn.client()
        try:
            return await body(kube, conn.namespace(kube))
        finally:
            await kube.close()

    try:
        return aio.run(main())
    except PluginError as exc:
        die(str(exc))
    except ApiError as exc:
        die(exc.message or str(exc))
    except OSError as exc:  # the API server unreachable
        die(f"cannot reach the API server: {exc}")


def parse_target(text: str, command: str, *, lower: bool = True) -> tuple[str, str]:
    """``NAME`` (a RayCluster) or ``raycluster/NAME``, ``rayjob/NAME``, ``rayservice/NAME``."""
    parts = text.split("/")
    if len(parts) == 1 and parts[0]:
        return "raycluster", parts[0]
    if len(parts) != 2 or not parts[1]:
        raise typer.BadParameter(f"invalid resource type/name: {text}\nSee 'ray {command} -h' for help and examples")
    kind = parts[0].lower() if lower else parts[0]
    if kind not in KINDS:
        named = text if command == "delete" else parts[0]  # delete names the whole argument, the others its type
        raise typer.BadParameter(f"unsupported resource type: {named}\nSee 'ray {command} -h' for help and examples")
    return kind, parts[1]


def cluster_is_ready(cluster: dict[str, object]) -> bool:
    status = cluster.get("status")
    if not isinstance(status, dict):
        return False
    ready = any(cond.get("type") == "Ready" and cond.get("status") == "True" for cond in status.get("conditions") or [])
    return ready or status.get("state") == "ready"


def duration(text: str) -> float:
    """A Go duration (``5m0s``, ``90s``, ``1h30m``) or plain seconds."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise typer.BadParameter(f"{text!r}: give a duration such as 30s, 5m0s or 1h", param_hint="--timeout")
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


def given_on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether the user typed this flag (typer ships its own click, so compare the source by name)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"

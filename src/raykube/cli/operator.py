"""``raykube operator run``: reconcile RayClusters in every namespace (or the ones given) until SIGTERM.

A minimal entry point; KubeRay's full flag set, leader election, metrics and probes come with the operator issue.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, ClassVar

import typer

app = typer.Typer(no_args_is_help=True, help="The RayCluster operator.")


class JsonFormatter(logging.Formatter):
    """One JSON object per line, as KubeRay logs by default; extra keys (RayCluster, namespace) are kept."""

    _STANDARD: ClassVar[frozenset[str]] = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None)))

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({k: v for k, v in vars(record).items() if k not in self._STANDARD})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


@app.command()
def run(
    kubeconfig: Annotated[Path | None, typer.Option(help="Kubeconfig (default: $KUBECONFIG, then in-cluster).")] = None,
    watch_namespace: Annotated[str, typer.Option(help="Comma-separated namespaces to watch; all when empty.")] = "",
    reconcile_concurrency: Annotated[int, typer.Option(help="RayClusters reconciled at once.")] = 1,
    qps: Annotated[float, typer.Option(help="Client-side requests per second to the API server.")] = 100.0,
    burst: Annotated[int, typer.Option(help="Client-side request burst.")] = 200,
) -> None:
    """Run the RayCluster controller until SIGTERM or SIGINT."""
    from raykube.build.options import BuildOptions  # noqa: PLC0415 - heavy imports load per command
    from raykube.runtime.kube import Kube  # noqa: PLC0415
    from raykube.runtime.manager import Manager  # noqa: PLC0415

    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    namespaces = [n.strip() for n in watch_namespace.split(",") if n.strip()] or None

    async def main() -> None:
        kube = Kube.from_config(kubeconfig, qps=qps, burst=burst)
        manager = Manager(
            kube,
            options=BuildOptions.from_env(os.environ),
            namespaces=namespaces,
            reconcile_concurrency=reconcile_concurrency,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await manager.run(stop)
        finally:
            await kube.close()

    asyncio.run(main())

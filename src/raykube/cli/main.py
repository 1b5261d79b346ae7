"""Entry point of the ``raykube`` command."""

from __future__ import annotations

import signal
from types import FrameType

import typer

from raykube import __version__
from raykube.cli import conformance, crd, demo, doctor, install, operator, rbac, sandbox

app = typer.Typer(
    name="raykube",
    no_args_is_help=True,
    help="raykube: a drop-in KubeRay operator in Python, `raykube doctor`, and a Docker-free local Kubernetes.",
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@app.callback()
def _main() -> None:
    """SIGTERM stops a command as Ctrl-C does, so its clean-up runs: a sandbox, a demo or a conformance run killed by a
    CI timeout or `kill <pid>` stops the processes it started and removes its files instead of leaving them behind.
    (The operator installs its own handler: SIGTERM is its graceful stop.)"""
    signal.signal(signal.SIGTERM, _interrupted)


app.add_typer(sandbox.app, name="sandbox")
app.add_typer(crd.app, name="crd")
app.command(name="operator", context_settings=operator.CONTEXT)(operator.operator)
app.command(name="install")(install.install)
app.add_typer(rbac.app, name="rbac")
app.command(name="demo")(demo.demo)
app.command(name="doctor")(doctor.doctor)
app.command(name="conformance")(conformance.conformance)


@app.command()
def version() -> None:
    """Print raykube's version and the pinned versions of what the sandbox builds."""
    from raykube.sandbox import versions  # noqa: PLC0415 - only this command needs them

    typer.echo(f"raykube {__version__}")
    typer.echo(
        f"sandbox: kubernetes v{versions.KUBERNETES_VERSION}, etcd v{versions.ETCD_VERSION}, "
        f"kwok v{versions.KWOK_VERSION}, helm v{versions.HELM_VERSION}"
    )


if __name__ == "__main__":
    app()

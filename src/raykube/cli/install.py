"""``raykube install``: the ray.io CRDs and the operator, into the cluster of the current kubeconfig context.

The work is :func:`raykube.deploy.install.install_operator` (the manifests are ``config/operator/``, see
:mod:`raykube.deploy.manifests`); this command prints what it reports: each object ``created``, ``configured`` or
``unchanged`` on stdout, as kubectl does, the wait as progress, and a failure with the command to run next.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from raykube.cli import aio
from raykube.cli.output import fail, progress, success
from raykube.deploy.install import Applied, InstallError, InstallReport, install_operator, next_step
from raykube.deploy.manifests import DEPLOYMENT, FIELD_MANAGER, RENDER_NAMESPACE


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
        report = aio.run(run())
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


def _print_step(step: Applied | str) -> None:
    """Applied objects go to stdout (kubectl's ``kind/name action`` lines); the wait is progress, on stderr."""
    if isinstance(step, Applied):
        typer.echo(str(step))
    else:
        progress(step)


if __name__ == "__main__":
    typer.run(install)

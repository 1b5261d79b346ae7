"""``raykube operator [FLAGS]``: the operator process, with KubeRay's flags (see ``raykube operator --help``)."""

from __future__ import annotations

import asyncio

import typer

CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def operator(ctx: typer.Context) -> None:
    """Run the RayCluster operator with KubeRay's flags (--help lists them)."""
    from raykube.api.config import FLAGS_HELP, ConfigError, parse_flags  # noqa: PLC0415 - heavy imports load per command
    from raykube.cli.output import fail  # noqa: PLC0415
    from raykube.runtime import logs  # noqa: PLC0415
    from raykube.runtime.manager import StartupError  # noqa: PLC0415
    from raykube.runtime.operator import run_until_signalled  # noqa: PLC0415

    try:
        config = parse_flags(ctx.args)
    except ConfigError as exc:
        fail(str(exc), code=2)
    if config is None:
        typer.echo(FLAGS_HELP)
        return
    logs.configure(config.log_stdout_encoder, config.log_file_path, config.log_file_encoder)
    diagnoser = None
    if config.diagnose_after > 0:  # the doctor is loaded only when asked for
        from raykube.cli.rootcause import factory  # noqa: PLC0415

        diagnoser = factory
    try:
        status = asyncio.run(run_until_signalled(config, diagnoser=diagnoser))
    except StartupError as exc:
        fail(str(exc), code=1)
    raise typer.Exit(status)

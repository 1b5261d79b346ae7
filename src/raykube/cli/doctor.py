"""``raykube doctor`` (and ``kubectl raykube doctor``): diagnose RayClusters, live or from a dump.

Exit codes (``docs/doctor.md``, *Exit codes*): 0 healthy (no finding at or above ``--fail-on``), 1 unhealthy,
2 usage error, 3 incomplete (target not found, API unreachable, core resources unreadable), 4 a rule failed.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from raykube.cli import aio
from raykube.cli.output import err, out
from raykube.kube import objects

SEVERITIES = ("critical", "error", "warning", "info")
OUTPUTS = ("text", "json", "sarif", "junit", "html")  # raykube.doctor.formats.OUTPUTS (imported late: heavy)
# What TARGET may name, as kubectl spells a type: plural, singular, with or without the group.
KINDS = {
    spelling: kind
    for kind, plural in (
        ("RayCluster", "rayclusters"),
        ("RayJob", "rayjobs"),
        ("RayService", "rayservices"),
        ("RayCronJob", "raycronjobs"),
    )
    for spelling in (kind.lower(), plural, f"{kind.lower()}.ray.io", f"{plural}.ray.io")
}
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3


def _parse_target(target: str) -> tuple[str, str]:
    """``(kind, name)`` of ``raycluster/NAME``, ``rayjob/NAME``, ``rayservice/NAME`` (a bare NAME: a RayCluster)."""
    kind, slash, name = target.partition("/")
    if not slash:
        return "RayCluster", target
    if kind.lower() not in KINDS:
        raise typer.BadParameter(
            f"{kind!r}: diagnose a raycluster/NAME, rayjob/NAME, rayservice/NAME or raycronjob/NAME",
            param_hint="TARGET",
        )
    if not name:
        raise typer.BadParameter(f"give the {KINDS[kind.lower()]}'s name: {kind}/NAME", param_hint="TARGET")
    return KINDS[kind.lower()], name


def _seconds(text: str) -> float:
    """``300``, ``300s``, ``5m``, ``1h`` as seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    value = text.strip().lower()
    try:
        if value and value[-1] in units:
            return float(value[:-1]) * units[value[-1]]
        return float(value)
    except ValueError:
        raise typer.BadParameter(f"{text!r}: give seconds (300) or a duration (300s, 5m, 1h)",
                                 param_hint="--starting-grace") from None  # fmt: skip


def _rules(values: list[str] | None) -> frozenset[str]:
    return frozenset(v.strip().upper() for item in values or [] for v in item.split(",") if v.strip())


def doctor(
    target: Annotated[
        str | None,
        typer.Argument(
            help="raycluster/NAME (or just NAME), rayjob/NAME, rayservice/NAME or raycronjob/NAME. Omit it with --all.",
            show_default=False,
        ),
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace (default: the kubeconfig context's).")
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Every RayCluster in the namespace (-n), or in the whole cluster.")
    ] = False,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Look in every namespace.")] = False,
    output: Annotated[
        str,
        typer.Option(
            "--output", "-o", help=f"{', '.join(OUTPUTS[:-1])} or {OUTPUTS[-1]} (all but text: doctor.raykube.io/v1)."
        ),
    ] = "text",
    fail_on: Annotated[
        str, typer.Option("--fail-on", help="Exit 1 on a finding this severe or worse: critical|error|warning|info.")
    ] = "error",
    dump: Annotated[
        Path | None, typer.Option("--dump", help="Also write what was read, as kubectl-get YAML, to this directory.")
    ] = None,
    from_dump: Annotated[
        Path | None, typer.Option("--from-dump", help="Diagnose a directory of `kubectl get -o yaml` output offline.")
    ] = None,
    kubeconfig: Annotated[
        Path | None, typer.Option(help="Kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config).")
    ] = None,
    context: Annotated[str | None, typer.Option(help="Kubeconfig context to use.")] = None,
    only: Annotated[list[str] | None, typer.Option("--only", help="Only these rule ids (B02,C07).")] = None,
    skip: Annotated[list[str] | None, typer.Option("--skip", help="Skip these rule ids.")] = None,
    no_security: Annotated[bool, typer.Option("--no-security", help="Skip the SEC* rules.")] = False,
    exit_zero: Annotated[bool, typer.Option("--exit-zero", help="Always exit 0 once a report is printed.")] = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Also show info findings that need no action (hygiene, advisories); JSON has all."
        ),
    ] = False,
    starting_grace: Annotated[
        str,
        typer.Option(
            "--starting-grace",
            help="A RayCluster (or a not-Ready Pod of it) younger than this is starting: 'not Ready yet' is reported "
            "as progress, not as a problem (300s, 5m; 0 turns it off).",
        ),
    ] = "5m",
    prometheus_textfile: Annotated[
        Path | None,
        typer.Option(
            "--prometheus-textfile",
            help="Also write the findings as gauges to this file, for node_exporter's textfile collector (atomic).",
        ),
    ] = None,
    anonymize: Annotated[
        bool,
        typer.Option("--anonymize", help="Replace names, namespaces, label values and IPs by stable tokens."),
    ] = False,
    ignore_file: Annotated[
        Path | None,
        typer.Option(
            "--ignore-file",
            help="Findings to ignore: {rule, object, reason} entries (default: ./.raykube-doctor.yaml if present).",
        ),
    ] = None,
    exec_: Annotated[
        bool | None,
        typer.Option(
            "--exec/--no-exec",
            help="Look inside the Ray Pods: ray status, listening ports, DNS and TCP from a worker to the head, Ray "
            "logs. Default: on for a named target where you may create pods/exec; --all needs --exec.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Diagnose RayClusters, RayJobs, RayServices and RayCronJobs: walks operator and RBAC, the custom resource, Pods
    and scheduling, the head Service and its EndpointSlices, ConfigMaps, Secrets and PVCs, then Ray itself (ray
    status, ports, DNS, logs: --exec), and names the root cause first (a RayJob's or RayService's may be in the
    RayCluster it runs on)."""
    if output not in OUTPUTS:
        raise typer.BadParameter(f"{output!r}: use one of {', '.join(OUTPUTS)}", param_hint="--output")
    if fail_on not in SEVERITIES:
        raise typer.BadParameter(f"use one of {', '.join(SEVERITIES)}", param_hint="--fail-on")
    if target is None and not (all_ or all_namespaces):
        raise typer.BadParameter(
            "name a raycluster/NAME, rayjob/NAME, rayservice/NAME or raycronjob/NAME, or use --all", param_hint="TARGET"
        )
    if target is not None and (all_ or all_namespaces):
        raise typer.BadParameter("give either a target or --all, not both", param_hint="--all")
    if dump is not None and from_dump is not None:
        raise typer.BadParameter("--dump writes what a live run reads; it cannot be used with --from-dump")
    wanted = _parse_target(target) if target is not None else None

    from raykube.doctor import ignore  # noqa: PLC0415 - heavy imports load per command
    from raykube.doctor.run import Options  # noqa: PLC0415

    try:
        ignored = ignore.load(ignore_file)
    except ignore.IgnoreFileError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}")
        raise typer.Exit(EXIT_USAGE) from exc

    options = Options(
        fail_on=fail_on,  # type: ignore[arg-type]
        only=_rules(only),
        skip=_rules(skip),
        security=not no_security,
        starting_grace=_seconds(starting_grace),
        exec_mode="auto" if exec_ is None else ("on" if exec_ else "off"),
    )
    report = _from_dump(from_dump, namespace, wanted, all_namespaces, options) if from_dump else None
    if report is None:
        report = _live(kubeconfig, context, namespace, wanted, all_namespaces, options, dump)
    report = ignore.apply(report, ignored)
    _emit(report, output, verbose=verbose, anonymize=anonymize, prometheus_textfile=prometheus_textfile)
    raise typer.Exit(0 if exit_zero else report.exit_code())


def _emit(report: Any, output: str, *, verbose: bool, anonymize: bool, prometheus_textfile: Path | None) -> None:
    """Print ``report`` as ``output`` (every format but text derived from its JSON document); write the textfile."""
    from raykube.doctor import formats, render  # noqa: PLC0415
    from raykube.doctor.anonymize import anonymize as anonymized  # noqa: PLC0415

    if anonymize:
        report = anonymized(report)
    if output == "text":
        render.print_text(report, out, verbose=verbose)
    else:
        document = render.to_json(report)
        text = render.render_json(report) if output == "json" else formats.render(output, document)
        sys.stdout.write(text)
    if prometheus_textfile is not None:
        try:
            formats.write_textfile(prometheus_textfile, render.to_json(report))
        except OSError as exc:
            err.print(
                f"[bold red]error:[/bold red] {escape(f'cannot write {prometheus_textfile}: {exc.strerror or exc}')}"
            )
            raise typer.Exit(EXIT_USAGE) from exc


def _from_dump(
    directory: Path, namespace: str | None, wanted: tuple[str, str] | None, all_namespaces: bool, options: Any
) -> Any:
    from raykube.doctor import dump as dumps  # noqa: PLC0415
    from raykube.doctor import snapshot as s  # noqa: PLC0415
    from raykube.doctor.run import diagnose  # noqa: PLC0415

    try:
        snap = dumps.read(directory, namespaces=(namespace,) if namespace and not all_namespaces else None)
    except dumps.DumpError as exc:
        err.print(f"[bold red]error:[/bold red] {exc}")
        raise typer.Exit(EXIT_USAGE) from exc
    if all_namespaces:
        snap = dataclasses.replace(snap, namespaces=None)
    if wanted is not None:
        kind, name = wanted
        resource = {
            "RayCluster": s.RAYCLUSTERS,
            "RayJob": s.RAYJOBS,
            "RayService": s.RAYSERVICES,
            "RayCronJob": s.RAYCRONJOBS,
        }[kind]
        found = [objects.namespace(o) for o in snap.all(resource) if objects.name(o) == name]
        namespaces = [namespace] if namespace is not None else found or ["default"]
        if kind == "RayCluster":
            snap = dataclasses.replace(snap, targets=tuple((ns, name) for ns in namespaces), workloads=())
        else:
            snap = dataclasses.replace(snap, targets=(), workloads=tuple((kind, ns, name) for ns in namespaces))
    return diagnose(snap, options)


def _live(
    kubeconfig: Path | None,
    context: str | None,
    namespace: str | None,
    wanted: tuple[str, str] | None,
    all_namespaces: bool,
    options: Any,
    dump: Path | None,
) -> Any:
    from raykube.doctor.gather import GatherError, Scope  # noqa: PLC0415
    from raykube.doctor.run import client_for, diagnose_live  # noqa: PLC0415

    try:
        client, default_namespace = client_for(kubeconfig, context)
    except Exception as exc:  # a missing or broken kubeconfig: say so plainly
        err.print(f"[bold red]error:[/bold red] cannot load the kubeconfig: {exc}")
        raise typer.Exit(EXIT_INCOMPLETE) from exc
    ns = namespace or default_namespace
    if wanted is not None:
        kind, name = wanted
        if kind == "RayCluster":
            scope = Scope(namespaces=(ns,), targets=((ns, name),), workloads=())
        else:
            scope = Scope(namespaces=(ns,), targets=(), workloads=((kind, ns, name),))
    elif namespace is not None and not all_namespaces:
        scope = Scope(namespaces=(namespace,))
    else:
        scope = Scope(namespaces=None)

    async def run() -> Any:
        try:
            report, _ = await diagnose_live(client, scope, options, dump_to=dump)
            return report
        finally:
            await client.close()

    try:
        return aio.run(run())
    except GatherError as exc:
        err.print(f"[bold red]error:[/bold red] {exc}")
        raise typer.Exit(EXIT_INCOMPLETE) from exc


plugin = typer.Typer(
    name="kubectl-raykube",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="raykube as a kubectl plugin: `kubectl raykube doctor raycluster/NAME`.",
)


@plugin.callback()
def _plugin_root() -> None:
    """raykube as a kubectl plugin."""


plugin.command(name="doctor")(doctor)


def kubectl_plugin() -> None:
    """Entry point of the ``kubectl-raykube`` executable (kubectl finds it on PATH)."""
    plugin()


if __name__ == "__main__":
    kubectl_plugin()

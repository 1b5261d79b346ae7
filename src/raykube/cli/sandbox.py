"""``raykube sandbox build|up|down|status|env``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from raykube.cli import aio
from raykube.cli.output import err, fail, out, progress, success
from raykube.sandbox import versions
from raykube.sandbox.build import missing_artifacts
from raykube.sandbox.components import NodePool, SandboxConfig
from raykube.sandbox.errors import SandboxError
from raykube.sandbox.ports import DEFAULT_PORT_BASE, Ports

if TYPE_CHECKING:
    from raykube.sandbox.cluster import Sandbox, UpResult

app = typer.Typer(no_args_is_help=True, help="A local Kubernetes control plane with kwok fake nodes, no Docker.")

NameOption = Annotated[str, typer.Option("--name", help="Which sandbox instance.", show_default=True)]


def _sandbox(name: str) -> Sandbox:
    from raykube.sandbox.cluster import Sandbox  # noqa: PLC0415 - the Kubernetes client loads only when needed

    try:
        return Sandbox.named(name)
    except ValueError as exc:
        fail(str(exc), code=2)


def ensure_built() -> None:
    """Build whatever is missing from the cache, with progress; say so when there is nothing to do."""
    if not missing_artifacts():
        progress(f"sandbox binaries are built (cache: {versions.cache_root() / 'bin'}); nothing to do")
        return
    progress("building the local control plane from the Go module proxy (the first time only; progress every 30 s)")
    from raykube.sandbox.build import build_all  # noqa: PLC0415

    try:
        results = build_all(progress)
    except SandboxError as exc:
        fail(str(exc))
    built = [r for r in results if r.built]
    success(f"built {', '.join(r.artifact.name for r in built)} into {versions.cache_root() / 'bin'}")


def ensure_reference() -> None:
    """Fetch KubeRay's CRDs and samples (the tests compare against them) if missing; else say there is nothing to do."""
    from raykube.sandbox.reference import kuberay_reference  # noqa: PLC0415

    said: list[str] = []

    def report(message: str) -> None:
        said.append(message)
        progress(message)

    try:
        where = kuberay_reference(report)
    except SandboxError as exc:
        fail(str(exc))
    if not said:
        progress(f"KubeRay v{versions.KUBERAY_VERSION}'s CRDs and samples are in {where}; nothing to do")


@app.command()
def preflight() -> None:
    """Check this machine has what `make test` needs (root on Linux, ip, nsenter, unshare, Go); say what is missing."""
    from raykube.sandbox.build import find_go  # noqa: PLC0415
    from raykube.sandbox.kubelet.network import preflight as process_node_problems  # noqa: PLC0415

    missing = [] if sys.platform.startswith("linux") else [f"Linux (this is {sys.platform})"]
    missing += process_node_problems()
    try:
        go = find_go()
    except SandboxError as exc:
        missing.append(exc.message)
    need = ".".join(map(str, versions.MIN_GO_VERSION[:2]))
    if missing:
        fail(
            "make test needs root on Linux with ip, nsenter and unshare (process nodes run real Ray in network "
            f"namespaces) and Go ≥ {need} (it builds the local control plane); missing: " + "; ".join(missing)
        )
    success(
        f"root on Linux, ip, nsenter, unshare, namespaces and go{'.'.join(map(str, go.version))}: as make test needs"
    )


def ensure_cert_manager() -> None:
    """Build the sandbox's cert-manager controller (and fetch its CRDs) if missing, with progress."""
    from raykube.sandbox.build import build_cert_manager  # noqa: PLC0415

    try:
        result = build_cert_manager(progress)
    except SandboxError as exc:
        fail(str(exc))
    if result.built:
        success(f"built cert-manager v{versions.CERT_MANAGER_VERSION} into {versions.cache_root() / 'bin'}")


def ensure_gateway() -> None:
    """Build the sandbox's Traefik image (with the Gateway API CRDs) if missing, with progress."""
    from raykube.sandbox import gateway  # noqa: PLC0415

    cache = versions.cache_root()
    already = gateway.built(versions.TRAEFIK_VERSION, cache) is not None
    try:
        gateway.ensure_built(versions.TRAEFIK_VERSION, cache, progress)
    except SandboxError as exc:
        fail(str(exc))
    if not already:
        success(f"built traefik v{versions.TRAEFIK_VERSION} into {cache / 'bin'}")


@app.command()
def build(
    cert_manager: Annotated[
        bool, typer.Option(help="Also build cert-manager's controller, for `sandbox up --cert-manager`.")
    ] = False,
    gateway: Annotated[
        bool, typer.Option(help="Also build Traefik and fetch the Gateway API CRDs, for `sandbox up --gateway`.")
    ] = False,
) -> None:
    """Build etcd, the Kubernetes control plane, kubectl, kwok and helm (pinned versions) into ~/.cache/raykube, and
    fetch KubeRay's CRDs and samples for the tests."""
    ensure_reference()  # a second or so: first, so that a long build that fails does not hold up the tests' reference
    ensure_built()
    if cert_manager:
        ensure_cert_manager()
    if gateway:
        ensure_gateway()


def parse_extra_args(values: list[str]) -> dict[str, tuple[str, ...]]:
    extra: dict[str, list[str]] = {}
    for value in values:
        component, sep, flag = value.partition("=")
        if not sep or not flag.startswith("-"):
            raise ValueError(f"--extra-arg must look like COMPONENT=--flag[=value], got {value!r}")
        extra.setdefault(component, []).append(flag)
    return {k: tuple(v) for k, v in extra.items()}


@app.command()
def up(
    name: NameOption = "default",
    nodes: Annotated[int, typer.Option(help="Number of nodes (kwok fake nodes, or process nodes with --runtime).")] = 2,
    node_cpu: Annotated[str, typer.Option(help="CPU capacity of each node (a Kubernetes quantity).")] = "8",
    node_memory: Annotated[str, typer.Option(help="Memory capacity of each node.")] = "32Gi",
    node_pods: Annotated[int, typer.Option(help="Pod capacity of each node.")] = 110,
    port_base: Annotated[
        int, typer.Option(help="First of seven consecutive 127.0.0.1 ports (API server on base+3).")
    ] = DEFAULT_PORT_BASE,
    extra_arg: Annotated[
        list[str] | None,
        typer.Option(
            help="Extra flag for one component, e.g. kube-apiserver=--v=4 (repeatable).",
            metavar="COMPONENT=FLAG",
        ),
    ] = None,
    runtime: Annotated[
        str,
        typer.Option(
            help="kwok: fake nodes, Pods are simulated (default). process: process nodes that run each Pod's "
            "containers as real processes in its own network namespace (needs root; Ray images run from a venv).",
        ),
    ] = "kwok",
    kwok_nodes: Annotated[
        int,
        typer.Option(
            help="With --runtime process: this many kwok fake nodes beside the process nodes, tainted "
            "raykube.io/kwok=true:NoSchedule so only Pods that tolerate it run there.",
        ),
    ] = 0,
    client_qps: Annotated[
        float, typer.Option(help="API client QPS of kube-controller-manager and kube-scheduler (kwok has no limit).")
    ] = 100.0,
    client_burst: Annotated[
        int, typer.Option(help="API client burst of kube-controller-manager and kube-scheduler.")
    ] = 200,
    cert_manager: Annotated[
        bool,
        typer.Option(
            help=f"Also run cert-manager v{versions.CERT_MANAGER_VERSION}'s controller (SelfSigned and CA issuers; "
            "no webhook, cainjector or ACME), with its CRDs installed."
        ),
    ] = False,
    gateway: Annotated[
        bool,
        typer.Option(
            help=f"With --runtime process: also install the Gateway API CRDs and run Traefik v"
            f"{versions.TRAEFIK_VERSION} as a Deployment (GatewayClass traefik), so Gateways and HTTPRoutes serve "
            "traffic (KubeRay's incremental upgrade)."
        ),
    ] = False,
) -> None:
    """Start the control plane (building it first if needed) and print the kubeconfig path."""
    try:
        config = SandboxConfig(
            name=name,
            ports=Ports.from_base(port_base),
            nodes=NodePool(count=nodes, cpu=node_cpu, memory=node_memory, pods=node_pods),
            extra_args=parse_extra_args(extra_arg or []),
            runtime=runtime,
            kwok_nodes=kwok_nodes,
            client_qps=client_qps,
            client_burst=client_burst,
            cert_manager=cert_manager,
            gateway=gateway,
        )
    except ValueError as exc:
        fail(str(exc), code=2)
    result = bring_up(config)
    out.print(str(result.kubeconfig))


def _kwok_beside(config: SandboxConfig) -> str:
    return f" and {config.kwok_nodes} tainted kwok node(s)" if config.kwok_nodes else ""


def bring_up(config: SandboxConfig) -> UpResult:
    """Build if needed, start the sandbox ``config`` names (or find it running), and say which it was."""
    sandbox = _sandbox(config.name)
    ensure_built()
    if config.cert_manager:
        ensure_cert_manager()
    if config.gateway:
        ensure_gateway()
    try:
        result = aio.run(sandbox.up(config, progress))
    except SandboxError as exc:
        fail(str(exc))
    running = result.config
    if result.already_running:
        success(
            f"sandbox {config.name!r} is already up; nothing changed (API server {running.server}, "
            f"{running.nodes.count} node(s))"
        )
        if running != config and config != SandboxConfig(name=config.name):
            err.print(
                "  [yellow]note:[/yellow] it runs with the options it was started with; "
                f"`raykube sandbox down --name {config.name}` first to change them"
            )
    else:
        success(
            f"sandbox {config.name!r} is up in {result.seconds:.1f}s: API server {running.server}, "
            f"{running.nodes.count} {running.runtime} node(s){_kwok_beside(running)}; logs in {sandbox.layout.logs}"
        )
    return result


@app.command()
def down(
    name: NameOption = "default",
    keep_logs: Annotated[bool, typer.Option(help="Keep the component logs after stopping.")] = False,
) -> None:
    """Stop the processes this sandbox started (and only those) and remove its files."""
    sandbox = _sandbox(name)
    try:
        stopped = aio.run(sandbox.down(progress, keep_logs=keep_logs))
    except SandboxError as exc:
        fail(str(exc))
    if stopped:
        success(f"sandbox {name!r} is down ({len(stopped)} process(es) stopped)")
    else:
        success(f"sandbox {name!r} was not running; nothing to stop")


@app.command()
def status(
    name: NameOption = "default",
    output: Annotated[str, typer.Option("--output", "-o", help="text or json")] = "text",
) -> None:
    """Say what runs, under which PID, and where it listens."""
    sandbox = _sandbox(name)
    try:
        st = sandbox.status()
    except SandboxError as exc:
        fail(str(exc))
    if output == "json":
        out.print_json(
            json.dumps(
                {
                    "name": st.name,
                    "directory": str(st.directory),
                    "up": st.up,
                    "kubeconfig": str(st.kubeconfig) if st.state else None,
                    "config": st.state.config.to_json() if st.state else None,
                    "components": [
                        {
                            "component": c.component,
                            "pid": c.pid,
                            "running": c.running,
                            "listeners": [f"{a}:{p}" for a, p in c.listeners],
                        }
                        for c in st.components
                    ],
                }
            )
        )
        raise typer.Exit(0 if st.up else 3)
    if output != "text":
        fail(f"--output must be text or json, got {output!r}", code=2)
    if st.state is None:
        out.print(f"sandbox {name!r} is not running (no state in {st.directory})")
        raise typer.Exit(3)
    table = Table(title=f"sandbox {name!r}: {'up' if st.up else 'NOT fully up'}", title_justify="left")
    for column in ("component", "pid", "state", "listening on"):
        table.add_column(column)
    for c in st.components:
        table.add_row(
            c.component,
            str(c.pid),
            "[green]running[/green]" if c.running else "[red]stopped[/red]",
            ", ".join(f"{a}:{p}" for a, p in c.listeners) or "-",
        )
    for missing in (c for c in st.state.config.components if c not in {s.component for s in st.components}):
        table.add_row(missing, "-", "[red]not started[/red]", "-")
    out.print(table)
    cfg = st.state.config
    out.print(f"API server:  {cfg.server}")
    out.print(
        f"nodes:       {cfg.nodes.count} {cfg.runtime} x (cpu {cfg.nodes.cpu}, memory {cfg.nodes.memory}, "
        f"pods {cfg.nodes.pods}){_kwok_beside(cfg)}"
    )
    out.print(f"kubeconfig:  {st.kubeconfig}")
    out.print(f"logs:        {sandbox.layout.logs}/<component>.log")
    raise typer.Exit(0 if st.up else 3)


@app.command()
def env(name: NameOption = "default") -> None:
    """Print `export KUBECONFIG=...` and put the sandbox's kubectl first on PATH: eval "$(raykube sandbox env)"."""
    sandbox = _sandbox(name)
    if sandbox.load_state() is None:
        err.print(f"[yellow]note:[/yellow] sandbox {name!r} is not running; `raykube sandbox up --name {name}`")
    out.print(sandbox.shell_env(), end="")
    plugins = Path(sys.executable).parent  # kubectl-ray and kubectl-raykube, last on PATH: they shadow nothing
    if (plugins / "kubectl-ray").exists():
        out.print(f"export PATH=$PATH:{plugins}")


@app.command(name="sa-kubeconfig")
def sa_kubeconfig(
    service_account: Annotated[str, typer.Argument(help="NAMESPACE/NAME of an existing ServiceAccount.")],
    name: NameOption = "default",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Where to write it.")] = None,
    hours: Annotated[int, typer.Option(help="How long the token lives.")] = 24,
) -> None:
    """Write a kubeconfig that authenticates as a ServiceAccount (a bound token from TokenRequest), so a local
    process - the operator, say - runs with exactly that account's RBAC. Prints its path."""
    namespace, sep, account = service_account.partition("/")
    if not sep or not namespace or not account:
        fail(f"SERVICE_ACCOUNT must look like NAMESPACE/NAME, got {service_account!r}", code=2)
    sandbox = _sandbox(name)
    path = output or sandbox.layout.root / "kubeconfigs" / f"sa-{namespace}-{account}.yaml"
    try:
        written = aio.run(sandbox.service_account_kubeconfig(namespace, account, path, expiration_seconds=hours * 3600))
    except SandboxError as exc:
        fail(str(exc))
    except Exception as exc:  # the API's answer, e.g. the ServiceAccount does not exist
        fail(f"cannot get a token for ServiceAccount {namespace}/{account}: {exc}")
    out.print(str(written))

"""The ``kubectl ray`` command tree: get, create, scale, delete, version and doctor here; session, log and job submit in
:mod:`.flows`."""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from raykube import __version__
from raykube.api import constants as c
from raykube.cli.kubectl_ray import flows, render
from raykube.cli.kubectl_ray.common import (
    KINDS,
    RAYCLUSTERS,
    Conn,
    ContextFlag,
    KubeconfigFlag,
    Namespace,
    PluginError,
    api_message,
    die,
    duration,
    echo,
    given_on_command_line,
    parse_target,
    run,
)
from raykube.cli.kubectl_ray.generate import (
    ClusterOptions,
    Group,
    OptionError,
    check_quantity,
    check_tpu,
    options_from_file,
    parse_map,
    raycluster,
    resolve_image,
    worker_group,
)
from raykube.kube.client import Kube
from raykube.kube.resources import DEPLOYMENTS, PODS, SECRETS
from raykube.waiting import NotYet, WaitTimeout, wait_for

SETTINGS = {"help_option_names": ["-h", "--help"]}
F = TypeVar("F", bound=Callable[..., Any])
PROGRESS_SECONDS = 10.0  # create cluster --wait: how often it says what it waits for (on stderr)

app = typer.Typer(
    name="ray",
    help="Manage Ray resources on Kubernetes (KubeRay's `kubectl ray`, from raykube).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=SETTINGS,
)
get_app = typer.Typer(
    help="Display one or many Ray resources: prints a table of the most important information about them.",
    no_args_is_help=True,
)
create_app = typer.Typer(help="Create Ray resources.", no_args_is_help=True)
scale_app = typer.Typer(help="Scale a Ray resource.", no_args_is_help=True)
job_app = typer.Typer(help="Submit Ray jobs.", no_args_is_help=True)
app.add_typer(get_app, name="get")
app.add_typer(get_app, name="list", hidden=True)
app.add_typer(create_app, name="create")
app.add_typer(scale_app, name="scale")
app.add_typer(job_app, name="job")

AllNamespaces = Annotated[
    bool,
    typer.Option(
        "--all-namespaces",
        "-A",
        help="If present, list across all namespaces. Namespace in current context is ignored even if specified "
        "with --namespace.",
    ),
]
RayClusterFlag = Annotated[str | None, typer.Option("--ray-cluster", "-c", help="Ray cluster", show_default=False)]
MapFlag = Annotated[list[str] | None, typer.Option(show_default=False)]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _alias(parent: typer.Typer, names: tuple[str, ...], **kwargs: Any) -> Callable[[F], F]:
    """Register a command under its name and its hidden aliases (``clusters``, ``nodes``, ``logs``)."""

    def register(function: F) -> F:
        parent.command(names[0], **kwargs)(function)
        for alias in names[1:]:
            parent.command(alias, hidden=True, **kwargs)(function)
        return function

    return register


# ------------------------------------------------------------------------------------------------- get
@_alias(get_app, ("cluster", "clusters"))
def get_cluster(
    name: Annotated[str | None, typer.Argument(show_default=False)] = None,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Get cluster information."""

    async def body(kube: Kube, ns: str) -> None:
        selector = f"metadata.name={name}" if name else None
        try:
            items = (await kube.list(RAYCLUSTERS, None if all_namespaces else ns, field_selector=selector)).items
        except Exception as exc:
            where = "all namespaces" if all_namespaces else f"namespace {ns}"
            raise PluginError(f"unable to retrieve Ray clusters for {where}: {api_message(exc)}") from None
        if name and not items:
            where = "any namespace" if all_namespaces else f"namespace {ns}"
            raise PluginError(f"Ray cluster {name} not found in {where}")
        now = _now()
        _write(render.table(render.CLUSTER_COLUMNS, [render.cluster_row(item, now) for item in items]))

    run(Conn(kubeconfig, context, namespace), body)


def _not_found(what: str, all_namespaces: bool, ns: str, ray_cluster: str | None) -> PluginError:
    """``<what> not found in namespace NS in Ray cluster C`` and its three other forms (the plugin's words)."""
    where = " in any namespace" if all_namespaces else f" in namespace {ns}"
    which = f" in Ray cluster {ray_cluster}" if ray_cluster else " in any Ray cluster"
    return PluginError(f"{what} not found{where}{which}")


@_alias(get_app, ("workergroup", "workergroups"))
def get_workergroup(
    group: Annotated[str | None, typer.Argument(show_default=False)] = None,
    ray_cluster: RayClusterFlag = None,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Get Ray worker groups."""

    async def body(kube: Kube, ns: str) -> None:
        scope = None if all_namespaces else ns
        selector = f"metadata.name={ray_cluster}" if ray_cluster else None
        clusters = (await kube.list(RAYCLUSTERS, scope, field_selector=selector)).items
        rows = []
        for cluster in clusters:
            meta = cluster.get("metadata") or {}
            for spec in (cluster.get("spec") or {}).get("workerGroupSpecs") or []:
                if group and spec.get("groupName") != group:
                    continue
                labels = {
                    c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_WORKER,
                    c.RAY_NODE_GROUP_LABEL: spec.get("groupName", ""),
                    c.RAY_CLUSTER_LABEL: meta.get("name", ""),
                }
                selector_text = ",".join(f"{k}={v}" for k, v in labels.items())
                pods = (await kube.list(PODS, meta.get("namespace"), label_selector=selector_text)).items
                rows.append(render.workergroup_row(cluster, spec, pods, all_namespaces))
        if group and not rows:
            raise _not_found(f"Ray worker group {group}", all_namespaces, ns, ray_cluster)
        columns = (("Namespace",) if all_namespaces else ()) + render.WORKERGROUP_COLUMNS
        _write(render.table(columns, rows))

    run(Conn(kubeconfig, context, namespace), body)


@_alias(get_app, ("node", "nodes"))
def get_node(
    node: Annotated[str | None, typer.Argument(show_default=False)] = None,
    ray_cluster: RayClusterFlag = None,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Get Ray nodes: the Pods of Ray clusters."""

    async def body(kube: Kube, ns: str) -> None:
        labels = f"{c.RAY_IS_RAY_NODE_LABEL}=yes"
        if ray_cluster:
            labels += f",{c.RAY_CLUSTER_LABEL}={ray_cluster}"
        try:
            pods = (
                await kube.list(
                    PODS,
                    None if all_namespaces else ns,
                    label_selector=labels,
                    field_selector=f"metadata.name={node}" if node else None,
                )
            ).items
        except Exception as exc:
            raise PluginError(f"unable to get Ray nodes: {api_message(exc)}") from None
        if node and not pods:
            raise _not_found(f"Ray node {node}", all_namespaces, ns, ray_cluster)
        now = _now()
        columns = (("Namespace",) if all_namespaces else ()) + render.NODE_COLUMNS
        _write(render.table(columns, [render.node_row(pod, now, all_namespaces) for pod in pods]))

    run(Conn(kubeconfig, context, namespace), body)


@get_app.command("token")
def get_token(
    cluster: Annotated[str, typer.Argument(metavar="CLUSTER", show_default=False)],
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Get the auth token from the ray cluster (printed with no newline, for `$(kubectl ray get token NAME)`)."""
    import base64  # noqa: PLC0415

    async def body(kube: Kube, ns: str) -> None:
        try:
            obj = await kube.get(RAYCLUSTERS, cluster, ns)
        except Exception as exc:
            raise PluginError(f"failed to get RayCluster {ns}/{cluster}: {api_message(exc)}") from None
        auth = (obj.get("spec") or {}).get("authOptions") or {}
        if auth.get("mode") != "token":
            raise PluginError(f"RayCluster {ns}/{cluster} was not configured to use authentication tokens")
        try:
            secret = await kube.get(SECRETS, cluster, ns)
        except Exception as exc:
            raise PluginError(f"failed to get secret {ns}/{cluster}: {api_message(exc)}") from None
        token = (secret.get("data") or {}).get(c.AUTH_TOKEN_SECRET_KEY)
        if token is None:
            raise PluginError(f"secret {ns}/{cluster} does not have an {c.AUTH_TOKEN_SECRET_KEY}")
        sys.stdout.buffer.write(base64.b64decode(token))
        sys.stdout.flush()

    run(Conn(kubeconfig, context, namespace), body)


# ------------------------------------------------------------------------------------------------- create
async def _wait_provisioned(kube: Kube, name: str, ns: str, seconds: float) -> None:
    """Until RayClusterProvisioned (or state ready); what it waits for goes to stderr every 10 s, so stdout keeps
    the plugin's two lines."""
    started = time.monotonic()
    reported = started

    async def provisioned() -> bool | NotYet:
        nonlocal reported
        cluster = await kube.get(RAYCLUSTERS, name, ns)
        status = cluster.get("status") or {}
        true = {x.get("type") for x in status.get("conditions") or [] if x.get("status") == "True"}
        if "RayClusterProvisioned" in true or status.get("state") == "ready":
            return True
        if time.monotonic() - reported >= PROGRESS_SECONDS:
            reported = time.monotonic()
            sys.stderr.write(
                f"waiting for Ray cluster {name} ({int(reported - started)}s): head "
                f"{'ready' if 'HeadPodReady' in true else 'not ready'}, "
                f"{status.get('readyWorkerReplicas', 0)}/{status.get('desiredWorkerReplicas', 0)} workers ready\n"
            )
        return NotYet(f"state {status.get('state') or '(none)'}, conditions True: {sorted(true)}")

    try:
        await wait_for(provisioned, seconds, what=f"Ray cluster {name}", max_interval=2.0)
    except WaitTimeout as exc:
        raise PluginError(
            f"timed out waiting for Ray cluster {name} in namespace {ns} to be provisioned ({exc.last}); "
            f"see why with: kubectl ray doctor raycluster/{name} -n {ns}"
        ) from None


def _check_quantities(pairs: list[tuple[str, str]]) -> None:
    for flag, value in pairs:
        if value:
            check_quantity(flag, value)


@create_app.command("cluster", context_settings=SETTINGS)
def create_cluster(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="CLUSTERNAME", show_default=False)],
    labels: MapFlag = None,
    annotations: MapFlag = None,
    ray_version: Annotated[str, typer.Option(help="Ray version to use")] = c.KUBECTL_RAY_DEFAULT_RAY_VERSION,
    image: Annotated[str, typer.Option(help="container image to use")] = c.KUBECTL_RAY_DEFAULT_IMAGE,
    head_cpu: Annotated[str, typer.Option(help="number of CPUs in the Ray head")] = "2",
    head_memory: Annotated[str, typer.Option(help="amount of memory in the Ray head")] = "4Gi",
    head_gpu: Annotated[str, typer.Option(help="number of GPUs in the Ray head")] = "0",
    head_ephemeral_storage: Annotated[str, typer.Option(help="amount of ephemeral storage in the Ray head")] = "",
    head_ray_start_params: MapFlag = None,
    head_node_selectors: MapFlag = None,
    worker_replicas: Annotated[int, typer.Option(help="desired worker group replicas")] = 1,
    worker_cpu: Annotated[str, typer.Option(help="number of CPUs in each worker group replica")] = "2",
    worker_memory: Annotated[str, typer.Option(help="amount of memory in each worker group replica")] = "4Gi",
    worker_gpu: Annotated[str, typer.Option(help="number of GPUs in each worker group replica")] = "0",
    worker_ephemeral_storage: Annotated[str, typer.Option(help="ephemeral storage in each worker replica")] = "",
    worker_tpu: Annotated[str, typer.Option(help="number of TPUs in each worker group replica")] = "0",
    worker_ray_start_params: MapFlag = None,
    worker_node_selectors: MapFlag = None,
    num_of_hosts: Annotated[int, typer.Option(help="number of hosts in default worker group per replica")] = 1,
    autoscaler: Annotated[str, typer.Option(help='autoscaler to use, supports: "v1", "v2"')] = "",
    file: Annotated[
        Path | None, typer.Option("--file", help="path to a YAML file containing Ray cluster configuration")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="print the generated YAML instead of creating the cluster")] = False,
    wait: Annotated[bool, typer.Option(help="wait for the cluster to be provisioned before returning")] = False,
    timeout: Annotated[str, typer.Option(help="the timeout for --wait")] = "5m0s",
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Create a Ray cluster with the given name and options."""
    seconds = duration(timeout)
    autoscaler = autoscaler.lower()
    if autoscaler not in ("", "v1", "v2"):
        raise typer.BadParameter('must be one of "v1" or "v2"', param_hint="--autoscaler")
    try:
        if file is not None:
            given = sorted(
                key.replace("_", "-")
                for key in ctx.params
                if key not in FILE_COMPATIBLE and given_on_command_line(ctx, key)
            )
            options = _file_options(file, name, namespace, given)
            file_namespace = options.namespace
        else:
            _check_quantities([
                ("head-cpu", head_cpu), ("head-gpu", head_gpu), ("head-memory", head_memory),
                ("head-ephemeral-storage", head_ephemeral_storage), ("worker-cpu", worker_cpu),
                ("worker-gpu", worker_gpu), ("worker-tpu", worker_tpu), ("worker-memory", worker_memory),
                ("worker-ephemeral-storage", worker_ephemeral_storage),
            ])  # fmt: skip
            worker_selectors = parse_map(worker_node_selectors, "--worker-node-selectors")
            check_tpu(worker_tpu, num_of_hosts, worker_selectors)
            options = ClusterOptions(
                name=name,
                namespace="",
                ray_version=ray_version,
                image=resolve_image(image, ray_version),
                labels=parse_map(labels, "--labels"),
                annotations=parse_map(annotations, "--annotations"),
                head_cpu=head_cpu,
                head_memory=head_memory,
                head_gpu=head_gpu,
                head_ephemeral=head_ephemeral_storage,
                head_ray_start_params=parse_map(head_ray_start_params, "--head-ray-start-params"),
                head_node_selectors=parse_map(head_node_selectors, "--head-node-selectors"),
                groups=[
                    Group(
                        replicas=worker_replicas,
                        cpu=worker_cpu,
                        memory=worker_memory,
                        gpu=worker_gpu,
                        tpu=worker_tpu,
                        ephemeral=worker_ephemeral_storage,
                        num_of_hosts=num_of_hosts,
                        ray_start_params=parse_map(worker_ray_start_params, "--worker-ray-start-params"),
                        node_selectors=worker_selectors,
                    )
                ],
                autoscaler=autoscaler,
            )
            file_namespace = ""
    except OptionError as exc:
        die(str(exc))

    conn = Conn(kubeconfig, context, namespace)
    if dry_run and (namespace or file_namespace):  # nothing to ask the API server: no kubeconfig needed
        options.namespace = namespace or file_namespace
        _write(render.to_yaml(raycluster(options)) + "\n")
        return

    async def body(kube: Kube, ns: str) -> None:
        options.namespace = namespace or file_namespace or ns
        obj = raycluster(options)
        if dry_run:
            _write(render.to_yaml(obj) + "\n")
            return
        if await kube.get_or_none(RAYCLUSTERS, name, options.namespace) is not None:
            raise PluginError(f"the Ray cluster {name} in namespace {options.namespace} already exists")
        try:
            await kube.patch(RAYCLUSTERS, name, obj, options.namespace, patch_type="apply")
        except Exception as exc:
            raise PluginError(f"failed to create Ray cluster: {api_message(exc)}") from None
        echo(f"Created Ray cluster: {name}")
        if wait:
            await _wait_provisioned(kube, name, options.namespace, seconds)
            echo(f"Ray cluster {name} is provisioned")

    run(conn, body)


FILE_COMPATIBLE = frozenset({"file", "namespace", "kubeconfig", "context", "dry_run", "wait", "timeout", "name"})


def _file_options(file: Path, name: str, namespace: str | None, given: list[str]) -> ClusterOptions:
    """``create cluster NAME --file F``: the file's cluster; only the kubeconfig flags and --dry-run/--wait/--timeout
    may come with it, and a name or namespace in the file must agree with the command line."""
    if given:
        raise OptionError(f"the following flags are incompatible with --file: [{' '.join(given)}]")
    if not file.is_file():
        raise OptionError(f"failed to parse config file: config file {file} does not exist")
    options = options_from_file(file.read_text(), str(file))
    if options.name and options.name != name:
        raise OptionError(
            f'the cluster name in the config file "{options.name}" does not match the cluster name "{name}". '
            "You must use the same name to perform this operation"
        )
    if options.namespace and namespace and options.namespace != namespace:
        raise OptionError(
            f'the namespace in the config file "{options.namespace}" does not match the namespace '
            f'"{namespace}". You must pass --namespace={options.namespace} to perform this operation'
        )
    options.name = name
    return options


@create_app.command("workergroup", context_settings=SETTINGS)
def create_workergroup(
    name: Annotated[str, typer.Argument(metavar="WORKERGROUP", show_default=False)],
    ray_cluster: Annotated[str, typer.Option("--ray-cluster", "-c", help="Ray cluster to add a worker group to")],
    ray_version: Annotated[str, typer.Option(help="Ray version to use")] = c.KUBECTL_RAY_DEFAULT_RAY_VERSION,
    image: Annotated[str, typer.Option(help="container image to use")] = c.KUBECTL_RAY_DEFAULT_IMAGE,
    worker_replicas: Annotated[int, typer.Option(help="desired replicas")] = 1,
    num_of_hosts: Annotated[int, typer.Option(help="number of hosts in the worker group per replica")] = 1,
    worker_min_replicas: Annotated[int, typer.Option(help="minimum number of replicas")] = 1,
    worker_max_replicas: Annotated[int, typer.Option(help="maximum number of replicas")] = 10,
    worker_cpu: Annotated[str, typer.Option(help="number of CPUs in each replica")] = "2",
    worker_gpu: Annotated[str, typer.Option(help="number of GPUs in each replica")] = "0",
    worker_tpu: Annotated[str, typer.Option(help="number of TPUs in each replica")] = "0",
    worker_memory: Annotated[str, typer.Option(help="amount of memory in each replica")] = "4Gi",
    worker_ray_start_params: MapFlag = None,
    worker_node_selectors: MapFlag = None,
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Adds a worker group to an existing Ray cluster."""
    try:
        selectors = parse_map(worker_node_selectors, "--worker-node-selectors")
        check_tpu(worker_tpu, num_of_hosts, selectors)
        group = worker_group(
            name,
            image or f"rayproject/ray:{ray_version}",
            replicas=worker_replicas,
            min_replicas=worker_min_replicas,
            max_replicas=worker_max_replicas,
            num_of_hosts=num_of_hosts,
            cpu=worker_cpu,
            memory=worker_memory,
            gpu=worker_gpu,
            tpu=worker_tpu,
            ray_start_params=parse_map(worker_ray_start_params, "--worker-ray-start-params"),
            node_selectors=selectors,
        )
    except OptionError as exc:
        die(str(exc))

    async def body(kube: Kube, ns: str) -> None:
        try:
            cluster = await kube.get(RAYCLUSTERS, ray_cluster, ns)
        except Exception as exc:
            raise PluginError(f"error getting Ray cluster: {api_message(exc)}") from None
        groups = cluster.setdefault("spec", {}).setdefault("workerGroupSpecs", [])
        if any(g.get("groupName") == name for g in groups):  # KubeRay's plugin appends a duplicate; refuse instead
            raise PluginError(f"Ray cluster {ns}/{ray_cluster} already has a worker group {name}")
        groups.append(group)
        try:
            await kube.replace(RAYCLUSTERS, ray_cluster, cluster, ns)
        except Exception as exc:
            raise PluginError(f"error updating Ray cluster with new worker group: {api_message(exc)}") from None
        echo(f"Updated Ray cluster {ns}/{ray_cluster} with new worker group")

    run(Conn(kubeconfig, context, namespace), body)


# ------------------------------------------------------------------------------------------------- scale
@scale_app.command("cluster", context_settings=SETTINGS)
def scale_cluster(
    cluster: Annotated[str, typer.Argument(metavar="RAYCLUSTER", show_default=False)],
    worker_group_name: Annotated[str, typer.Option("--worker-group", "-w", help="worker group")],
    replicas: Annotated[int, typer.Option("--replicas", "-r", help="Desired number of replicas")] = -1,
    min_replicas: Annotated[int, typer.Option(help="Minimum desired number of replicas for worker group")] = -1,
    max_replicas: Annotated[int, typer.Option(help="Maximum desired number of replicas for worker group")] = -1,
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Scale a Ray cluster by worker group."""
    if not worker_group_name:
        die("must specify -w/--worker-group")
    if replicas == min_replicas == max_replicas == -1:
        die("must specify at least one of --replicas, --min-replicas, or --max-replicas (non-negative integers)")
    for flag, value in (("--min-replicas", min_replicas), ("--max-replicas", max_replicas), ("--replicas", replicas)):
        if value < -1:
            die(f"{flag} must be a non-negative integer")
    if min_replicas >= 0 and max_replicas >= 0 and min_replicas > max_replicas:
        die(f"--min-replicas ({min_replicas}) cannot be greater than --max-replicas ({max_replicas})")
    if replicas >= 0 and min_replicas >= 0 and replicas < min_replicas:
        die(f"--replicas ({replicas}) cannot be less than --min-replicas ({min_replicas})")
    if replicas >= 0 and max_replicas >= 0 and replicas > max_replicas:
        die(f"--replicas ({replicas}) cannot be greater than --max-replicas ({max_replicas})")

    async def body(kube: Kube, ns: str) -> None:
        where = f"worker group {worker_group_name} in Ray cluster {cluster} in namespace {ns}"
        try:
            obj = await kube.get(RAYCLUSTERS, cluster, ns)
        except Exception as exc:
            raise PluginError(f"failed to scale {where}: {api_message(exc)}") from None
        groups = (obj.get("spec") or {}).get("workerGroupSpecs") or []
        group = next((g for g in groups if g.get("groupName") == worker_group_name), None)
        if group is None:
            names = ", ".join(g.get("groupName", "") for g in groups)
            raise PluginError(
                f"worker group {worker_group_name} not found in Ray cluster {cluster} in namespace {ns}. "
                f"Available worker groups: {names}"
            )
        current = {
            "minReplicas": group.get("minReplicas") or 0,
            "maxReplicas": render.INT32_MAX if group.get("maxReplicas") is None else group["maxReplicas"],
            "replicas": group.get("replicas") or 0,
        }
        changes = []
        for key, label, value in (
            ("minReplicas", "minReplicas", min_replicas),
            ("maxReplicas", "maxReplicas", max_replicas),
            ("replicas", "Replicas", replicas),
        ):
            if value >= 0 and value != current[key]:
                changes.append(f"Scaled {label}: {current[key]} to {value}")
                current[key] = value
                group[key] = value
        low, high, want = current["minReplicas"], current["maxReplicas"], current["replicas"]
        if low > high:
            raise PluginError(f"cannot set --min-replicas ({low}) greater than --max-replicas ({high})")
        if want < low:
            raise PluginError(f"cannot set --replicas ({want}) less than --min-replicas ({low})")
        if want > high:
            raise PluginError(f"cannot set --replicas ({want}) greater than --max-replicas ({high})")
        if not changes:
            echo(
                f"Worker group {worker_group_name} in Ray cluster {cluster} in namespace {ns} already matches the "
                "requested configuration. Skipping."
            )
            return
        try:
            await kube.replace(RAYCLUSTERS, cluster, obj, ns)
        except Exception as exc:
            raise PluginError(f"failed to update {where}: {api_message(exc)}") from None
        echo(f"Updated {where} ({', '.join(changes)})")

    run(Conn(kubeconfig, context, namespace), body)


# ------------------------------------------------------------------------------------------------- delete
@app.command("delete", context_settings=SETTINGS)
def delete(
    targets: Annotated[list[str], typer.Argument(metavar="(RAYCLUSTER | TYPE/NAME)...", show_default=False)],
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="answer 'yes' to all prompts and run non-interactively")
    ] = False,
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Deletes Ray custom resources such as RayCluster, RayService, or RayJob."""
    parsed = [parse_target(target, "delete") for target in targets]
    ordered = sorted(dict.fromkeys(parsed), key=lambda kn: list(KINDS).index(kn[0]))
    if not yes:
        listing = "".join(f"\n- {kind}/{name}" for kind, name in ordered)
        sys.stdout.write(f"Are you sure you want to delete the following resources?{listing}\n(y/yes/n/no) ")
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            die("Failed to read user input: EOF")
        answer = line.strip().lower()
        if answer in ("n", "no"):
            echo("Canceled deletion.")
            return
        if answer not in ("y", "yes"):
            echo(f"Unknown input {line.rstrip()}")
            return

    async def body(kube: Kube, ns: str) -> None:
        for kind, name in ordered:
            try:
                await kube.delete(KINDS[kind], name, ns)
            except Exception as exc:
                message = getattr(exc, "message", "") or str(exc)
                raise PluginError(f"failed to delete {kind}/{name}: {message}") from None
            echo(f"Deleted {kind} {name}")

    run(Conn(kubeconfig, context, namespace), body)


# ------------------------------------------------------------------------------------------------- version
def image_version(image: str) -> str:
    """The tag of an operator image (``kuberay/operator:v1.6.1`` → ``v1.6.1``; a digest as ``sha256:...``)."""
    if "@sha256:" in image and image.count(":") == 2:
        return image.split(":", 1)[1]
    name, at, digest = image.partition("@")
    if at:
        return digest
    last = name.rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else "latest"


@app.command("version", context_settings=SETTINGS)
def version(kubeconfig: KubeconfigFlag = None, context: ContextFlag = None) -> None:
    """Output the version of the Ray kubectl plugin and KubeRay operator."""
    echo(f"kubectl ray plugin version: raykube {__version__} (KubeRay {c.KUBERAY_VERSION} plugin commands)")

    async def body(kube: Kube, _ns: str) -> None:
        values = ",".join(c.OPERATOR_APP_NAME_LABEL_VALUES)
        try:
            items = (await kube.list(DEPLOYMENTS, None, label_selector=f"{c.K8S_APP_NAME_LABEL} in ({values})")).items
        except Exception as exc:
            message = getattr(exc, "message", "") or exc
            items, problem = [], f"failed to get KubeRay operator deployment: {message}"
        else:
            problem = "no KubeRay operator deployments found in any namespace"
        containers = (
            ((items[0].get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") if items else []
        )
        if items and not containers:
            problem = "no containers found in KubeRay operator deployment"
        if containers:
            echo(f"KubeRay operator version: {image_version(containers[0].get('image', ''))}")
        else:
            echo(
                f"warning: KubeRay operator installation cannot be found: {problem}. "
                'Did you install it with the name "kuberay-operator"?'
            )

    run(Conn(kubeconfig, context, None), body)


# ------------------------------------------------------------------------------------------------- the rest
flows.register(app, job_app, _alias)


def _doctor() -> None:
    from raykube.cli import doctor  # noqa: PLC0415 - the doctor's imports load only for it

    app.command("doctor", context_settings=SETTINGS)(doctor.doctor)


_doctor()


def main() -> None:
    """Entry point of the ``kubectl-ray`` executable (kubectl runs it for ``kubectl ray``); ``kubectl-ray __complete
    ARGS`` answers shell completion as ``kubectl_complete-ray ARGS`` does. Usage errors end as KubeRay's plugin ends
    them (:mod:`.usage`): one ``Error:`` line, exit code 1."""
    if sys.argv[1:2] in (["__complete"], ["__completeNoDesc"]):
        from raykube.cli.kubectl_ray import complete  # noqa: PLC0415

        complete.main(sys.argv[2:])
        return
    from typer._click import exceptions as click_errors  # noqa: PLC0415

    from raykube.cli.kubectl_ray import usage  # noqa: PLC0415

    try:
        code = app(prog_name="kubectl ray", standalone_mode=False)
    except click_errors.ClickException as exc:
        if usage.is_doctor(exc):  # doctor's exit codes are its own (docs/doctor.md: 2 is a usage error)
            from typer import rich_utils  # noqa: PLC0415

            rich_utils.rich_format_error(exc)
            sys.exit(exc.exit_code)
        text = usage.message(exc, sys.argv[1:])
        if text is None:  # a command group alone (`kubectl ray get`): its help, and success, as cobra does
            help_text = exc.ctx.get_help() if exc.ctx is not None else ""  # type: ignore[attr-defined]
            sys.stdout.write(help_text + ("\n" if help_text and not help_text.endswith("\n") else ""))
            sys.exit(0)
        sys.stderr.write(f"Error: {text}\n")
        sys.exit(1)
    except typer.Abort:
        sys.stderr.write("Aborted!\n")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)

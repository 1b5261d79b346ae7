"""The long-running ``kubectl ray`` commands: ``session`` (port-forwards that come back after the head restarts) and
``job submit`` (a RayJob, its cluster, then the local ``ray job submit`` through a port-forward); ``log`` is in
:mod:`.logs`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import httpx2
import typer
import yaml

from raykube.api import constants as c
from raykube.api.dashboard import is_job_terminal
from raykube.cli.kubectl_ray import logs, render
from raykube.cli.kubectl_ray.common import (
    KINDS,
    RAYCLUSTERS,
    RAYJOBS,
    Conn,
    ContextFlag,
    KubeconfigFlag,
    Namespace,
    PluginError,
    api_message,
    cluster_is_ready,
    die,
    duration,
    echo,
    given_on_command_line,
    parse_target,
    run,
)
from raykube.cli.kubectl_ray.generate import (
    API_VERSION,
    ClusterOptions,
    Group,
    OptionError,
    check_quantity,
    parse_map,
    rayjob,
)
from raykube.cli.kubectl_ray.generate import submission_id as new_submission_id
from raykube.cli.kubectl_ray.usage import JOB_SUBMIT_USAGE
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.waiting import NotYet, WaitTimeout, wait_for

SETTINGS = {"help_option_names": ["-h", "--help"]}
RETRY_SECONDS = 3.0  # session: how long after a failed port-forward it tries again (the plugin's 3 s)
DASHBOARD_PORT = 8265
FOLLOW_HINT_SECONDS = 60.0  # job submit: after this long with no new RayJob status, say where to look


def _kubectl() -> str:
    found = shutil.which("kubectl")
    if found is None:
        die("kubectl is not on PATH: kubectl ray runs `kubectl port-forward` for this command")
    return found


async def _head_service(kube: Kube, kind: str, name: str, ns: str) -> str:
    path = {
        "raycluster": ("status", "head", "serviceName"),
        "rayjob": ("status", "rayClusterStatus", "head", "serviceName"),
        "rayservice": ("status", "activeServiceStatus", "rayClusterStatus", "head", "serviceName"),
    }[kind]
    kind_name = {"raycluster": "RayCluster", "rayjob": "RayJob", "rayservice": "RayService"}[kind]
    try:
        obj: Any = await kube.get(KINDS[kind], name, ns)
    except Exception as exc:
        raise PluginError(f"unable to find {kind_name} {name}: {getattr(exc, 'message', '') or exc}") from None
    for key in path:
        obj = (obj or {}).get(key) if isinstance(obj, dict) else None
    if not obj:
        raise PluginError(
            f"{kind_name} {ns}/{name} has no head Service yet (no status.{'.'.join(path[1:])}); "
            f"see why with: kubectl ray doctor {kind}/{name} -n {ns}"
        )
    return str(obj)


# ------------------------------------------------------------------------------------------------- session
def session(
    target: Annotated[str, typer.Argument(metavar="(RAYCLUSTER | TYPE/NAME)", show_default=False)],
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="verbose output")] = False,
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Forward local ports to the Ray resources: the dashboard (8265) and the Ray client (10001) of a RayCluster, the
    dashboard of a RayJob's cluster, the dashboard and Serve (8000) of a RayService's active cluster. A forward that
    breaks (the head Pod restarted) is started again after 3 s; Ctrl-C ends it."""
    kind, name = parse_target(target, "session", lower=False)
    conn = Conn(kubeconfig, context, namespace)
    # Ctrl-C ends the session even when this process started with SIGINT ignored (a background job of a script):
    # Python would then leave it ignored, while KubeRay's plugin (Go's signal.Notify) takes it back.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    async def find(kube: Kube, ns: str) -> tuple[str, str]:
        return await _head_service(kube, kind, name, ns), ns

    service, ns = run(conn, find)
    echo(f"Forwarding ports to service {service}")
    ports = c.KUBECTL_RAY_SESSION_PORTS[kind]
    argv = [_kubectl(), *conn.kubectl_flags(), "port-forward", "-n", ns, f"service/{service}"]
    argv += [f"{port}:{port}" for _, port in ports]
    for label, port in ports:
        echo(f"{label}: http://localhost:{port}")
    echo()
    while True:
        if verbose:
            echo("Running: " + " ".join(["kubectl", *argv[1:]]))
        code = _run_child(argv)
        if code == 0:
            return
        echo(f"failed to port-forward: exit status {code}. Retrying in 3s ...\n")
        time.sleep(RETRY_SECONDS)


def _run_child(argv: list[str]) -> int:
    """Run ``argv`` with our stdout and stderr; on Ctrl-C or SIGTERM, stop it before we go."""
    child = subprocess.Popen(argv)

    def stop(signum: int, _frame: object) -> None:
        child.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(5)
        if child.poll() is None:
            child.kill()
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return child.wait()
    except KeyboardInterrupt:
        stop(signal.SIGINT, None)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


# ------------------------------------------------------------------------------------------------- job submit
def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _any_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.asynccontextmanager
async def _forward(conn: Conn, ns: str, service: str) -> AsyncIterator[str]:
    """``kubectl port-forward service/<head> <local>:8265`` on 127.0.0.1 until the dashboard answers; its address."""
    local = DASHBOARD_PORT if _free(DASHBOARD_PORT) else _any_port()
    argv = [_kubectl(), *conn.kubectl_flags(), "port-forward", "--address", "127.0.0.1", "-n", ns]
    argv += [f"service/{service}", f"{local}:{DASHBOARD_PORT}"]
    child = await asyncio.create_subprocess_exec(*argv)
    echo(f"Port forwarding service {service}")
    address = f"http://127.0.0.1:{local}"
    try:
        sys.stdout.write("Waiting for port forwarding...")
        sys.stdout.flush()

        async def answers() -> bool | NotYet:
            if child.returncode is not None:
                raise PluginError(f"Error occurred while port-forwarding Ray dashboard: exit status {child.returncode}")
            try:
                async with httpx2.AsyncClient(trust_env=False, timeout=5.0) as http:
                    response = await http.get(address)
            except httpx2.HTTPError as exc:
                return NotYet(str(exc) or type(exc).__name__)
            return True if response.is_success else NotYet(f"HTTP {response.status_code}")

        try:
            await wait_for(answers, 60, what="the port-forward to the Ray dashboard", interval=0.5, max_interval=2.0)
        except WaitTimeout:
            echo()
            raise PluginError("Timed out waiting for port forwarding") from None
        echo()
        echo(f"Port forwarding started on {address}")
        yield address
    finally:
        if child.returncode is None:
            child.terminate()
            with contextlib.suppress(TimeoutError, ProcessLookupError):
                await asyncio.wait_for(child.wait(), 5)
        if child.returncode is None:
            child.kill()


async def _relay(stream: asyncio.StreamReader | None, sink: Any) -> None:
    """Copy a child's output line by line, leaving out blank lines (as the plugin does)."""
    if stream is None:
        return
    async for raw in stream:
        line = raw.decode(errors="replace")
        if line.strip():
            sink.write(line if line.endswith("\n") else line + "\n")
            sink.flush()


def ray_submit_argv(
    address: str,
    submission: str,
    entrypoint: str,
    *,
    runtime_env: str = "",
    runtime_env_json: str = "",
    entrypoint_num_cpus: float = 0,
    entrypoint_num_gpus: float = 0,
    entrypoint_memory: int = 0,
    entrypoint_resources: str = "",
    metadata_json: str = "",
    no_wait: bool = False,
    headers: str = "",
    verify: str = "",
    log_style: str = "",
    log_color: str = "",
    verbose: bool = False,
    working_dir: str = "",
) -> list[str]:
    """The local ``ray job submit`` command line, in the plugin's order."""
    argv = ["ray", "job", "submit", "--address", address]
    numbers = (
        ("--entrypoint-num-cpus", f"{entrypoint_num_cpus:.6f}" if entrypoint_num_cpus > 0 else ""),
        ("--entrypoint-num-gpus", f"{entrypoint_num_gpus:.6f}" if entrypoint_num_gpus > 0 else ""),
        ("--entrypoint-memory", str(entrypoint_memory) if entrypoint_memory > 0 else ""),
    )
    # KubeRay's plugin passes --entrypoint-resource, which `ray job submit` does not know; ours is Ray's own flag.
    for flag, value in (
        ("--runtime-env", runtime_env), ("--runtime-env-json", runtime_env_json), ("--submission-id", submission),
        *numbers, ("--entrypoint-resources", entrypoint_resources), ("--metadata-json", metadata_json),
    ):  # fmt: skip
        if value:
            argv += [flag, value]
    if no_wait:
        argv.append("--no-wait")
    for flag, value in (
        ("--headers", headers),
        ("--verify", verify),
        ("--log-style", log_style),
        ("--log-color", log_color),
    ):
        if value:
            argv += [flag, value]
    if verbose:
        argv.append("--verbose")
    if working_dir:
        argv += ["--working-dir", working_dir]
    try:
        words = shlex.split(entrypoint)
    except ValueError as exc:
        raise PluginError(f"failed to create Ray submit command with error: {exc}") from None
    return [*argv, "--", *words]


def entrypoint_command(words: list[str]) -> str:
    """The command line of ``-- ENTRYPOINT``: one word is a command line already (``-- "python a.py --x 1"``);
    several are the words the shell gave us, quoted again so that ``-- python -c "import ray; ..."`` keeps its
    argument whole when it is split for ``ray job submit`` (KubeRay's plugin joins them with bare spaces, which
    splits such an argument)."""
    return words[0] if len(words) == 1 else shlex.join(words)


def _check_file(path: str, what: str) -> NoReturn:
    """The plugin's words for a ``--runtime-env`` or ``-f`` that is missing (``stat`` of the cleaned path) or not a
    regular file."""
    clean = os.path.normpath(path)
    if not os.path.exists(clean):
        raise OptionError(f"{what} does not exist. Failed with: stat {clean}: no such file or directory")
    raise OptionError("Filename given is not a regular file")


def _working_dir(runtime_env: str, working_dir: str) -> str:
    """``--working-dir``, else the ``working_dir`` of the ``--runtime-env`` file (unset is fine: no upload)."""
    if not runtime_env:
        return working_dir
    path = Path(runtime_env)
    if not path.is_file():
        _check_file(runtime_env, "Runtime Env file")
    env = yaml.safe_load(path.read_text()) or {}
    if isinstance(env, dict) and isinstance(env.get("working_dir"), str) and not working_dir:
        return str(env["working_dir"])
    return working_dir


def _job_from_file(
    filename: Path, runtime_env: str, runtime_env_json: str, ttl: int | None
) -> tuple[dict[str, Any], str]:
    """``job submit -f``: the RayJob (InteractiveMode, no backoffLimit; ``ttl`` from the flag wins and turns on
    shutdownAfterJobFinishes) and the runtime env JSON to pass on (the flag's, else the RayJob's runtimeEnvYAML)."""
    if not filename.is_file():
        _check_file(str(filename), "Ray Job file")
    body = yaml.safe_load(filename.read_text())
    if not isinstance(body, dict) or body.get("kind") != c.KIND_RAYJOB or body.get("apiVersion") != API_VERSION:
        raise OptionError(f"Failed to decode RayJob Yaml: {filename} is not a {API_VERSION} RayJob")
    spec = body.setdefault("spec", {})
    if spec.get("submissionMode") != "InteractiveMode":
        raise OptionError("Submission mode of the Ray Job must be set to 'InteractiveMode'")
    if (spec.get("backoffLimit") or 0) > 0:
        raise OptionError("BackoffLimit is incompatible with InteractiveMode")
    if not runtime_env and not runtime_env_json and spec.get("runtimeEnvYAML"):
        runtime_env_json = _runtime_env_json(spec["runtimeEnvYAML"])
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
        spec["shutdownAfterJobFinishes"] = True
    if (spec.get("ttlSecondsAfterFinished") or 0) < 0:
        raise OptionError("ttlSecondsAfterFinished must be greater than or equal to 0")
    if (spec.get("ttlSecondsAfterFinished") or 0) > 0 and not spec.get("shutdownAfterJobFinishes"):
        raise OptionError("ttlSecondsAfterFinished is only supported when shutdownAfterJobFinishes is set to true")
    return body, runtime_env_json


def _runtime_env_json(text: str) -> str:
    import json  # noqa: PLC0415

    return json.dumps(yaml.safe_load(text), sort_keys=True, separators=(",", ":"))


def job_submit(  # noqa: PLR0915 - the plugin's flags and its one long flow
    ctx: typer.Context,
    entrypoint: Annotated[list[str] | None, typer.Argument(metavar="-- ENTRYPOINT", show_default=False)] = None,
    filename: Annotated[
        Path | None, typer.Option("--filename", "-f", help="Path and name of the Ray Job YAML file")
    ] = None,
    address: Annotated[
        str | None, typer.Option(help="Ray Dashboard base URL. If set, skips port-forwarding.", show_default=False)
    ] = None,
    submission_id: Annotated[str, typer.Option(help="ID to specify for the Ray job (default: generated)")] = "",
    runtime_env: Annotated[str, typer.Option(help="Path and name to the runtime env YAML file.")] = "",
    working_dir: Annotated[str, typer.Option(help="Directory containing files that your job will run in")] = "",
    headers: Annotated[str, typer.Option(help="HTTP headers for the Ray dashboard, as JSON")] = "",
    runtime_env_json: Annotated[str, typer.Option(help="JSON-serialized runtime_env dictionary.")] = "",
    verify: Annotated[str, typer.Option(help="Verify the server's TLS certificate (bool or CA path)")] = "",
    entrypoint_resources: Annotated[str, typer.Option(help="JSON map of resource name to quantity")] = "",
    metadata_json: Annotated[str, typer.Option(help="JSON-serialized dictionary of metadata for the job")] = "",
    log_style: Annotated[str, typer.Option(help="Passed to 'ray job submit': auto | record | pretty")] = "",
    log_color: Annotated[str, typer.Option(help="Passed to 'ray job submit': auto | false | true")] = "",
    entrypoint_num_cpus: Annotated[float, typer.Option(help="CPUs reserved for the entrypoint command")] = 0,
    entrypoint_num_gpus: Annotated[float, typer.Option(help="GPUs reserved for the entrypoint command")] = 0,
    entrypoint_memory: Annotated[int, typer.Option(help="Memory reserved for the entrypoint command")] = 0,
    no_wait: Annotated[bool, typer.Option(help="Do not stream logs and wait for the job to finish")] = False,
    name: Annotated[str, typer.Option(help="Ray job name")] = "",
    ray_version: Annotated[str, typer.Option(help="Ray version to use")] = c.KUBECTL_RAY_DEFAULT_RAY_VERSION,
    image: Annotated[str, typer.Option(help="container image to use")] = c.KUBECTL_RAY_DEFAULT_IMAGE,
    head_cpu: Annotated[str, typer.Option(help="number of CPUs in the Ray head")] = "2",
    head_memory: Annotated[str, typer.Option(help="amount of memory in the Ray head")] = "4Gi",
    head_gpu: Annotated[str, typer.Option(help="number of GPUs in the Ray head")] = "0",
    worker_replicas: Annotated[int, typer.Option(help="desired worker group replicas")] = 1,
    worker_cpu: Annotated[str, typer.Option(help="number of CPUs in each worker group replica")] = "2",
    worker_memory: Annotated[str, typer.Option(help="amount of memory in each worker group replica")] = "4Gi",
    worker_gpu: Annotated[str, typer.Option(help="number of GPUs in each worker group replica")] = "0",
    dry_run: Annotated[bool, typer.Option(help="print the generated RayJob instead of creating it")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Pass --verbose to 'ray job submit'")] = False,
    head_node_selectors: Annotated[list[str] | None, typer.Option(show_default=False)] = None,
    worker_node_selectors: Annotated[list[str] | None, typer.Option(show_default=False)] = None,
    ttl_seconds_after_finished: Annotated[int, typer.Option(help="TTL seconds after finished.")] = 0,
    timeout: Annotated[
        str, typer.Option(help="How long to wait for the cluster to be ready (KubeRay's plugin waits 2m0s)")
    ] = "5m0s",
    namespace: Namespace = None,
    kubeconfig: KubeconfigFlag = None,
    context: ContextFlag = None,
) -> None:
    """Submit a Ray job to a Ray cluster as `ray job submit ENTRYPOINT` would: creates the RayJob (InteractiveMode; from
    -f, or generated from --name and the cluster flags), waits for its cluster, port-forwards the dashboard (unless
    --address), runs the local `ray job submit` with the passthrough flags, and follows the RayJob to its end."""
    words = entrypoint or []
    if not words:
        die(JOB_SUBMIT_USAGE)  # KubeRay's words: its Use line
    command_line = entrypoint_command(words)
    seconds = duration(timeout)
    ttl_given = given_on_command_line(ctx, "ttl_seconds_after_finished")
    if ttl_seconds_after_finished < 0:
        die("--ttl-seconds-after-finished must be greater than or equal to 0")
    if filename is None and not name.strip():
        die("Must set either yaml file (--filename) or set Ray job name (--name)")
    if address is not None and not address.strip():
        die("--address was provided but is empty")
    body: dict[str, Any] = {}
    try:
        working_dir = _working_dir(runtime_env, working_dir)
        if filename is not None:
            body, runtime_env_json = _job_from_file(
                filename, runtime_env, runtime_env_json, ttl_seconds_after_finished if ttl_given else None
            )
        for flag, value in (
            ("head-cpu", head_cpu), ("head-gpu", head_gpu), ("head-memory", head_memory),
            ("worker-cpu", worker_cpu), ("worker-gpu", worker_gpu), ("worker-memory", worker_memory),
        ):  # fmt: skip
            if value:
                check_quantity(flag, value)
        head_selectors = parse_map(head_node_selectors, "--head-node-selectors")
        worker_selectors = parse_map(worker_node_selectors, "--worker-node-selectors")
    except (OptionError, yaml.YAMLError, OSError) as exc:
        die(str(exc))

    submission = submission_id or new_submission_id()
    if not submission_id:
        echo(f"Generated submission ID for Ray job: {submission}")
    conn = Conn(kubeconfig, context, namespace)

    def generated(ns: str) -> dict[str, Any]:
        options = ClusterOptions(
            name=name,
            namespace=ns,
            ray_version=ray_version,
            image=image,
            head_cpu=head_cpu,
            head_memory=head_memory,
            head_gpu=head_gpu,
            head_node_selectors=head_selectors,
            groups=[
                Group(
                    replicas=worker_replicas,
                    cpu=worker_cpu,
                    memory=worker_memory,
                    gpu=worker_gpu,
                    node_selectors=worker_selectors,
                )
            ],
        )
        return rayjob(options, command_line, submission, ttl_seconds_after_finished, ttl_given)

    if dry_run and filename is None and namespace:
        sys.stdout.write(render.to_yaml(generated(namespace)) + "\n")
        return

    async def flow(kube: Kube, ns: str) -> None:
        nonlocal body
        if filename is None:
            body = generated(ns)
            if dry_run:
                sys.stdout.write(render.to_yaml(body) + "\n")
                return
            try:
                await kube.patch(RAYJOBS, name, body, ns, patch_type="apply")
            except Exception as exc:
                raise PluginError(f"Failed to apply generated YAML: {getattr(exc, 'message', '') or exc}") from None
        else:
            body["spec"]["jobId"] = submission
            body.setdefault("metadata", {}).setdefault("namespace", ns)
            try:
                body = await kube.create(RAYJOBS, body, ns)
            except Exception as exc:
                raise PluginError(f"Error when creating RayJob CR: {getattr(exc, 'message', '') or exc}") from None
        job_name = body["metadata"]["name"]
        echo(f"Submitted RayJob {job_name}.")
        await _submit(kube, conn, ns, job_name, submission, seconds, address, argv_for)

    def argv_for(dashboard: str) -> list[str]:
        return ray_submit_argv(
            dashboard,
            submission,
            command_line,
            runtime_env=runtime_env,
            runtime_env_json=runtime_env_json,
            entrypoint_num_cpus=entrypoint_num_cpus,
            entrypoint_num_gpus=entrypoint_num_gpus,
            entrypoint_memory=entrypoint_memory,
            entrypoint_resources=entrypoint_resources,
            metadata_json=metadata_json,
            no_wait=no_wait,
            headers=headers,
            verify=verify,
            log_style=log_style,
            log_color=log_color,
            verbose=verbose,
            working_dir=working_dir,
        )

    run(conn, flow)


async def _submit(
    kube: Kube,
    conn: Conn,
    ns: str,
    job_name: str,
    submission: str,
    seconds: float,
    address: str | None,
    argv_for: Callable[[str], list[str]],
) -> None:
    """From a created RayJob to its end: its cluster ready, ``ray job submit`` through a port-forward, the RayJob's
    status followed until it is terminal (unless ``--no-wait``)."""
    ray = shutil.which("ray")
    if ray is None:
        raise PluginError(
            "`ray` is not on PATH: kubectl ray job submit runs the local `ray job submit` "
            f"(pip install 'ray[default]=={c.KUBECTL_RAY_DEFAULT_RAY_VERSION}'). The RayJob {ns}/{job_name} stays; "
            f"delete it with: kubectl ray delete rayjob/{job_name} -n {ns}"
        )
    cluster = await _wait_cluster(kube, ns, job_name, seconds)
    forwarded = not address
    async with contextlib.AsyncExitStack() as stack:
        if address:
            echo(f"Using address {address} (no port-forwarding)")
        else:
            obj = await kube.get(RAYCLUSTERS, cluster, ns)
            service = ((obj.get("status") or {}).get("head") or {}).get("serviceName")
            if not service:
                raise PluginError(f"Failed to find service name: RayCluster {cluster} has no status.head.serviceName")
            address = await stack.enter_async_context(_forward(conn, ns, service))
        argv = argv_for(address)
        echo(f"Ray command: [{shlex.join(argv)}]")
        echo("Running Ray submit job command...")
        child = await asyncio.create_subprocess_exec(
            ray, *argv[1:], stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        await asyncio.gather(_relay(child.stdout, sys.stdout), _relay(child.stderr, sys.stderr))
        code = await child.wait()
    if code != 0:
        if not forwarded:  # the user's own --address: the failure stands, as before
            raise PluginError(f"Error occurred with Ray job submit: exit status {code}")
        status: dict[str, Any] | None
        try:
            status = (await kube.get(RAYJOBS, job_name, ns)).get("status") or {}
        except Exception as exc:
            status, lookup_error = None, str(getattr(exc, "message", "") or exc)
        else:
            lookup_error = ""
        succeeded, text = failed_submit_outcome(code, job_name, submission, status, lookup_error)
        if not succeeded:
            raise PluginError(text)
        echo(text)
        return
    if "--no-wait" in argv:
        echo(f"Ray job submitted with ID {submission}")
        return
    await _follow(kube, ns, job_name, submission)


def failed_submit_outcome(
    code: int, job_name: str, submission: str, status: dict[str, Any] | None, lookup_error: str
) -> tuple[bool, str]:
    """After ``ray job submit`` failed through our port-forward (KubeRay v1.7.1's fix): the forward may have ended
    because the job finished and its cluster went away (``--ttl-seconds-after-finished 0``), so the RayJob decides.
    SUCCEEDED is a success (and the line to print); FAILED is the job's failure; anything else, or a RayJob that
    cannot be read, keeps the submit's error (with why the RayJob could not tell)."""
    failure = f"Error occurred with Ray job submit: exit status {code}"
    if status is None:
        return False, f"{failure}; the status of RayJob {job_name} could not be read either: {lookup_error}"
    job_id, job_status = status.get("jobId") or submission, status.get("jobStatus")
    if job_status == "SUCCEEDED":
        return True, (
            f"ray job submit ended with exit status {code} (its port-forward was lost), but RayJob {job_name} "
            f"says SUCCEEDED.\nJob {job_id} finished with status SUCCEEDED."
        )
    if job_status == "FAILED":
        message = status.get("message")
        return False, f"job {job_id} failed: {message}" if message else f"job {job_id} failed with status FAILED"
    return False, failure


async def _wait_cluster(kube: Kube, ns: str, job_name: str, seconds: float) -> str:
    """The RayJob's cluster, once it is ready; on a timeout the RayJob is deleted (as the plugin does)."""

    async def cluster_name() -> str | NotYet:
        job = await kube.get(RAYJOBS, job_name, ns)
        found = (job.get("status") or {}).get("rayClusterName")
        return str(found) if found else NotYet("no status.rayClusterName yet")

    try:
        cluster: str = await wait_for(cluster_name, seconds, what=f"RayJob {job_name}'s cluster", max_interval=2)
    except WaitTimeout:
        raise PluginError(
            f"RayJob {ns}/{job_name} has no cluster after {seconds:g}s; see why with: "
            f"kubectl ray doctor rayjob/{job_name} -n {ns}"
        ) from None
    echo("Waiting for RayCluster")
    echo(f"Checking Cluster Status for cluster {cluster}...")
    started = time.monotonic()
    last_report = started

    async def ready() -> bool | NotYet:
        nonlocal last_report
        try:
            obj = await kube.get(RAYCLUSTERS, cluster, ns)
        except ApiError as exc:
            # The operator writes the name into the RayJob's status, then creates the cluster in its next pass (as
            # KubeRay's does): not there yet is waiting, not an error. (KubeRay's plugin sleeps 2 s before its first
            # read and fails when the cluster is still missing then.)
            if exc.not_found:
                return NotYet(f"RayCluster {cluster} not created yet")
            raise
        if cluster_is_ready(obj):
            return True
        status = obj.get("status") or {}
        if time.monotonic() - last_report >= 10:  # what it waits for, every 10 s, not every poll
            last_report = time.monotonic()
            echo(
                f"Cluster is not ready ({int(last_report - started)}s): "
                f"{status.get('readyWorkerReplicas', 0)}/{status.get('desiredWorkerReplicas', 0)} workers ready"
            )
        return NotYet(f"state {status.get('state') or '(none)'}")

    try:
        await wait_for(ready, seconds, what=f"RayCluster {cluster} to be ready", interval=1.0, max_interval=2.0)
    except WaitTimeout:
        echo("Deleting RayJob...")
        try:
            await kube.delete(RAYJOBS, job_name, ns)
        except Exception as exc:
            raise PluginError(f"Failed to clean up Ray job after time out.: {api_message(exc)}") from None
        echo(f"Cleaned Up RayJob: {job_name}")
        raise PluginError(
            f"Timed out waiting for cluster {cluster} after {seconds:g}s (raise --timeout, or see why with: "
            f"kubectl ray doctor raycluster/{cluster} -n {ns})"
        ) from None
    return cluster


async def _follow(kube: Kube, ns: str, job_name: str, submission: str) -> None:
    """Print each new jobStatus of the RayJob until it is terminal; FAILED is an error."""
    echo("Waiting for job to finish...")
    seen = ""
    hint_at = time.monotonic() + FOLLOW_HINT_SECONDS

    async def finished() -> dict[str, Any] | NotYet:
        nonlocal seen, hint_at
        status = (await kube.get(RAYJOBS, job_name, ns)).get("status") or {}
        job_status = status.get("jobStatus", "")
        if job_status != seen:
            seen = job_status
            echo(f"Current status: {job_status} (RayJob: {job_name}, JobID: {status.get('jobId') or 'unknown'})")
        elif time.monotonic() > hint_at:  # ray job submit has returned, so the operator should have seen the end
            hint_at = float("inf")
            echo(
                f"The RayJob still says {job_status or 'nothing'}; if the operator cannot reach the Ray dashboard, "
                f"`kubectl ray doctor rayjob/{job_name} -n {ns}` says so"
            )
        return status if is_job_terminal(job_status) else NotYet(f"jobStatus {job_status or '(none)'}")

    status = await wait_for(finished, 7 * 24 * 3600, what=f"RayJob {job_name} to finish", max_interval=2.0)
    job_id, job_status = status.get("jobId") or submission, status.get("jobStatus")
    if job_status == "FAILED":
        message = status.get("message")
        raise PluginError(f"job {job_id} failed: {message}" if message else f"job {job_id} failed with status FAILED")
    echo(f"Job {job_id} finished with status {job_status}.")


def register(app: typer.Typer, job_app: typer.Typer, alias: Callable[..., Any]) -> None:
    app.command("session", context_settings=SETTINGS)(session)
    alias(app, ("log", "logs"), context_settings=SETTINGS)(logs.log)
    job_app.command("submit", context_settings=SETTINGS)(job_submit)

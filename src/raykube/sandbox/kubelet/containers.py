"""One container's life in a Pod on a process node: steps 2 and 3 of :class:`~raykube.sandbox.kubelet.pod.PodWorker`
for each of its containers.

Image -> venv by the kubelet's pull rules (:mod:`~raykube.sandbox.kubelet.imagepull`: ``ErrImagePull``,
``ImagePullBackOff``, ``ErrImageNeverPull``), env (``CreateContainerConfigError`` starts nothing), the process (a
``nstools.py run`` monitor in the Pod sandbox), ``postStart``, probes (startup gates liveness and readiness; liveness
and startup failures restart it), exit codes and ``lastState``, restarts per ``restartPolicy`` with the kubelet's
back-off (``CrashLoopBackOff``), and the kill (``preStop``, SIGTERM, the grace period, SIGKILL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from raykube.kube import times
from raykube.sandbox.kubelet import nstools, probes, volumes
from raykube.sandbox.kubelet.env import ContainerConfigError, command_line, container_env
from raykube.sandbox.kubelet.imagepull import ImageError, ImagePuller
from raykube.sandbox.kubelet.podcontext import Container, PodContext, Terminating
from raykube.sandbox.kubelet.podsandbox import PodSandbox, spawn_helper, wait_any_file
from raykube.sandbox.kubelet.podstatus import container_restart_policy

log = logging.getLogger("raykube.sandbox.kubelet.pod")  # the Pod worker's log

BACKOFF_START = 10.0
BACKOFF_MAX = 300.0
BACKOFF_RESET_AFTER = 600.0  # a container that ran this long restarts without back-off
CONFIG_RETRY = 5.0
SYNC_RETRY = 10.0  # the kubelet's pod worker syncs a Pod again this long after a failed sync (backOffPeriod)


def _backoff(failures: int) -> float:
    if failures <= 0:
        return 0.0
    return float(min(BACKOFF_START * 2 ** (failures - 1), BACKOFF_MAX))


class ContainerRunner:
    """Runs container ``c`` of the Pod in its ``sandbox``, its image from ``puller``."""

    def __init__(self, ctx: PodContext, sandbox: PodSandbox, puller: ImagePuller, c: Container) -> None:
        self.ctx = ctx
        self.sandbox = sandbox
        self.puller = puller
        self.c = c

    async def run(self) -> None:
        """Run the container, again and again as its restart policy says (a sidecar's is ``Always``), until the Pod
        terminates."""
        policy = self._policy()
        while not self.ctx.terminating.is_set():
            code = await self.run_once()
            if self.ctx.terminating.is_set():
                return
            if policy == "Never" or (policy == "OnFailure" and code == 0):
                return
            await self.back_off()

    async def back_off(self) -> None:
        c, ctx = self.c, self.ctx
        ran = time.monotonic() - c.started_monotonic if c.started_monotonic else 0.0
        c.failures = 1 if ran >= BACKOFF_RESET_AFTER else c.failures + 1
        delay = _backoff(c.failures - 1)
        if delay > 0:
            message = (
                f"back-off {int(delay)}s restarting failed container={c.name} pod={ctx.name}_{ctx.namespace}({ctx.uid})"
            )
            c.state = {"waiting": {"reason": "CrashLoopBackOff", "message": message}}
            ctx.mark()
            ctx.event(
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {c.name} in pod {ctx.name}_{ctx.namespace}({ctx.uid})",
                c,
            )
            await ctx.sleep_or_terminate(delay)

    # ------------------------------------------------------------------------------------------------ one run
    async def run_once(self) -> int:
        """Start the container (retrying what keeps it from starting) and wait for it to exit; its exit code."""
        c = self.c
        await self._prepare()
        code = await self._start()
        if code is None:
            self._start_probes()
            try:
                code = await self._wait_exit()
            finally:
                for task in c.probe_tasks:
                    task.cancel()
                c.probe_tasks.clear()
        c.ready = False
        c.started = False
        self.ctx.mark()
        return code

    async def _prepare(self) -> None:
        """Image and configuration, retried (with the kubelet's waiting reasons) until both are fine. As the kubelet
        does before every start of a container, each attempt ensures the image by the pull policy first. A failed
        image is retried at the kubelet's pace: its pod worker syncs again ``SYNC_RETRY`` after an error, and the
        image's back-off decides whether that sync pulls (``ErrImagePull`` when it fails) or not
        (``ImagePullBackOff``)."""
        c, ctx = self.c, self.ctx
        while True:
            if ctx.terminating.is_set():
                raise Terminating
            try:
                c.runnable = await self.puller.ensure(c)
            except ImageError as exc:
                c.state = {"waiting": {"reason": exc.reason, "message": exc.message}}
                ctx.mark()
                ctx.event("Warning", "Failed", f"Error: {exc.reason}", c)
                await ctx.sleep_or_terminate(SYNC_RETRY)
                continue
            try:
                c.env = await self._environment()
            except ContainerConfigError as exc:
                await self._config_error(exc)
            else:
                return

    async def _config_error(self, exc: ContainerConfigError) -> None:
        """``CreateContainerConfigError``: say so, and wait before the next try."""
        self.c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(exc)}}
        self.ctx.mark()
        self.ctx.event("Warning", "Failed", f"Error: {exc}", self.c)
        await self.ctx.sleep_or_terminate(CONFIG_RETRY)

    async def _environment(self) -> dict[str, str]:
        c, ctx = self.c, self.ctx
        spec = ctx.pod["spec"]
        kubelet_env = await container_env(
            ctx.pod,
            c.spec,
            pod_ip=self.sandbox.ip,
            host_ip=ctx.node.host_ip,
            configmap=ctx.host.configmap,
            secret=ctx.host.secret,
            services=ctx.host.service_env(ctx.namespace, spec.get("enableServiceLinks", True) is not False),
            node=ctx.node.capacity,
        )
        if c.runnable is None:
            raise RuntimeError(f"container {c.name}: no image prepared")
        return {**c.runnable.env, "HOSTNAME": self.sandbox.hostname, **kubelet_env}

    async def _start(self) -> int | None:
        """Start the process: None once it runs, else the exit code of a start that failed (``StartError``)."""
        c, ctx, sandbox = self.c, self.ctx, self.sandbox
        runnable = c.runnable
        if runnable is None:
            raise RuntimeError(f"container {c.name}: no image prepared")
        try:
            mounts = volumes.container_mounts(c.spec, sandbox.volumes, c.env)
            # The image's own files first (a built binary at its path in the image), so a volume can cover them.
            image_files = [{"source": host, "target": path, "readOnly": True} for host, path in runnable.image_files]
            mounts = [*image_files, *mounts]
        except ContainerConfigError as exc:
            await self._config_error(exc)
            return 1
        argv = command_line(c.spec, c.env, list(runnable.entrypoint), list(runnable.cmd))
        run = c.runs
        c.runs += 1
        run_dir = c.dir / f"run-{run}"
        run_dir.mkdir(parents=True, exist_ok=True)
        (c.dir / "logs").mkdir(parents=True, exist_ok=True)
        c.point_logs(run)
        spec = {
            "pausePid": sandbox.pause_pid,
            "stateDir": str(run_dir),
            "logFile": str(c.log_file(run)),
            "layerDir": str(run_dir / "layer"),
            "rootDir": str(run_dir / "root"),
            "hostPaths": runnable.host_paths,
            "shm": str(sandbox.dir / "shm"),
            "tmp": str(run_dir / "tmp"),
            "mounts": mounts,
            "etc": {name: str(sandbox.dir / "etc" / name) for name in ("hosts", "resolv.conf", "hostname")},
            "mkdirs": [runnable.working_dir, "/tmp", *runnable.image_dirs],  # noqa: S108 - the container's own /tmp
            "hide": ctx.host.hide_paths,
            "workingDir": c.spec.get("workingDir") or runnable.working_dir,
            "argv": argv,
            "env": c.env,
        }
        (run_dir / "spec.json").write_text(json.dumps(spec))
        (c.dir / "env.json").write_text(json.dumps(c.env))
        c.container_id = f"raykube://{ctx.uid[:8]}-{c.name}-{run}"
        c.run_dir = run_dir
        c.monitor = await spawn_helper(ctx.host.nstools_path, "run", run_dir / "spec.json", run_dir / "monitor.log")
        (run_dir / "monitor.json").write_text(
            json.dumps({"pid": c.monitor.pid, "startTime": nstools.start_time(c.monitor.pid)})
        )
        started_file, exit_file = run_dir / "started.json", run_dir / "exit.json"
        await wait_any_file((started_file, exit_file), c.monitor, 60, f"container {c.name}")
        for link in ("started.json", "exit.json"):
            (c.dir / link).unlink(missing_ok=True)
        if not started_file.exists():  # the monitor could not even create the container
            await c.monitor.wait()
            return await self._exited(json.loads(exit_file.read_text()))
        started = json.loads(started_file.read_text())
        c.pid, c.start_time = int(started["pid"]), int(started.get("startTime") or 0)
        (c.dir / "started.json").symlink_to(started_file)
        c.started_monotonic = time.monotonic()
        c.state = {"running": {"startedAt": _api_time(started["startedAt"])}}
        c.started = "startupProbe" not in c.spec
        c.ready = c.started and "readinessProbe" not in c.spec
        ctx.mark()
        ctx.event("Normal", "Created", f"Created container: {c.name}", c)
        ctx.event("Normal", "Started", f"Started container {c.name}", c)
        await self._post_start()
        return None

    async def _post_start(self) -> None:
        c = self.c
        hook = ((c.spec.get("lifecycle") or {}).get("postStart") or {}).get("exec")
        if not hook:
            return
        code, output = await probes.run_in_container(self._target(), hook.get("command") or [], 60)
        if code != 0:
            message = f"PostStartHook failed: {output.decode(errors='replace').strip()}"
            self.ctx.event("Warning", "FailedPostStartHook", message, c)
            asyncio.create_task(self.kill(self.ctx.grace_seconds()))  # noqa: RUF006 - ends with the container

    def _target(self) -> probes.Target:
        c = self.c
        return probes.Target(self.sandbox.ip, c.pid, c.env, c.spec.get("ports") or [])

    async def _wait_exit(self) -> int:
        c, ctx = self.c, self.ctx
        if c.monitor is None:
            raise RuntimeError(f"container {c.name}: not started")
        await c.monitor.wait()
        try:
            result = json.loads((c.run_dir / "exit.json").read_text())
        except (OSError, ValueError):
            # The monitor died without a word (killed, or a bug): say what it left in its log.
            trace = _tail(c.run_dir / "monitor.log", 20)
            log.warning(
                "monitor of %s/%s %s exited %s without an exit status: %s",
                ctx.namespace,
                ctx.name,
                c.name,
                c.monitor.returncode,
                trace,
            )
            result = {"exitCode": 137, "monitorError": trace}  # finished now
        with contextlib.suppress(OSError):
            (c.dir / "exit.json").unlink(missing_ok=True)
            (c.dir / "exit.json").symlink_to(c.run_dir / "exit.json")
        return await self._exited(result)

    async def _exited(self, result: Mapping[str, Any]) -> int:
        """Record how the run ended (``terminated`` state, and ``lastState`` once it is restarted)."""
        c = self.c
        code, terminated = self.terminated(result)
        if not self.ctx.terminating.is_set() and self._will_restart(code):
            c.restart_count += 1
            c.last_state = {"terminated": terminated}
        self.ctx.mark()
        return code

    def terminated(self, result: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """Set the ``terminated`` state from how the run ended (the monitor's ``exit.json``): exit code, reason,
        start and finish times, as a kubelet reports them (a death by signal is the exit code 128 + N; the API's
        ``signal`` field stays unset, as the kubelet leaves it)."""
        c = self.c
        finished = _api_time(result.get("finishedAt"))
        terminated: dict[str, Any]
        if result.get("startError"):
            code = 128
            message = f"failed to start the container process: {result['startError']}"
            terminated = {"exitCode": code, "reason": "StartError", "message": message}
            self.ctx.event("Warning", "Failed", f"Error: {message}", c)
        else:
            code = int(result.get("exitCode", 137))
            terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}
            if code != 0 and c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
                terminated["message"] = _log_tail(c.log_file(c.runs - 1), 80)
        terminated.update(
            startedAt=_api_time(result.get("startedAt") or finished),
            finishedAt=finished,
            containerID=c.container_id,
        )
        c.state = {"terminated": terminated}
        c.pid = 0
        return code, terminated

    def exit_result(self) -> dict[str, Any]:
        """What the monitor of the last run wrote in its ``exit.json``; if nothing, a kill now (137)."""
        c = self.c
        try:
            return dict(json.loads((c.run_dir / "exit.json").read_text()))
        except (OSError, ValueError):
            return {"exitCode": 137, "startedAt": (c.state.get("running") or {}).get("startedAt")}

    def _policy(self) -> str:
        """A sidecar's is ``Always``; an init container's the Pod's; a regular container's its own ``restartPolicy``
        if it has one (container restart rules), else the Pod's."""
        if self.c.kind == "sidecar":
            return "Always"
        if self.c.kind == "main":
            return container_restart_policy(self.ctx.pod["spec"], self.c.name)
        return str(self.ctx.pod["spec"].get("restartPolicy") or "Always")

    def _will_restart(self, code: int) -> bool:
        policy = self._policy()
        return policy == "Always" or (policy == "OnFailure" and code != 0)

    # ------------------------------------------------------------------------------------------------ probes
    def _start_probes(self) -> None:
        c = self.c
        if startup := c.spec.get("startupProbe"):
            c.probe_tasks.append(asyncio.create_task(self._probe_loop("Startup", startup)))
        else:
            self._after_startup()

    def _after_startup(self) -> None:
        c = self.c
        for kind, key in (("Liveness", "livenessProbe"), ("Readiness", "readinessProbe")):
            if spec := c.spec.get(key):
                c.probe_tasks.append(asyncio.create_task(self._probe_loop(kind, spec)))

    async def _probe_loop(self, kind: str, spec: Mapping[str, Any]) -> None:
        c, ctx = self.c, self.ctx
        period = float(spec.get("periodSeconds") or 10)
        success_threshold = int(spec.get("successThreshold") or 1)
        failure_threshold = int(spec.get("failureThreshold") or 3)
        await asyncio.sleep(float(spec.get("initialDelaySeconds") or 0))
        successes = failures = 0
        run = c.runs
        while c.running and c.runs == run and not ctx.terminating.is_set():
            result = await probes.probe(spec, self._target())
            if not c.running or c.runs != run or ctx.terminating.is_set():
                return
            if result.ok:
                successes, failures = successes + 1, 0
                if successes >= success_threshold:
                    if kind == "Readiness" and not c.ready:
                        c.ready = True
                        ctx.mark()
                    elif kind == "Startup":
                        c.started = True
                        c.ready = "readinessProbe" not in c.spec
                        ctx.mark()
                        self._after_startup()
                        return
            else:
                successes, failures = 0, failures + 1
                ctx.event("Warning", "Unhealthy", f"{kind} probe failed: {result.message.strip()}", c)
                if failures >= failure_threshold:
                    if kind == "Readiness":
                        if c.ready:
                            c.ready = False
                            ctx.mark()
                    else:
                        reason = "liveness" if kind == "Liveness" else "startup"
                        ctx.event(
                            "Normal", "Killing", f"Container {c.name} failed {reason} probe, will be restarted", c
                        )
                        grace = spec.get("terminationGracePeriodSeconds")
                        await self.kill(float(grace) if grace is not None else ctx.grace_seconds())
                        return
            await asyncio.sleep(period)

    # ------------------------------------------------------------------------------------------------ stopping
    async def kill(self, grace: float) -> None:
        """preStop, SIGTERM, ``grace`` seconds, SIGKILL (the kubelet's killContainer)."""
        c = self.c
        monitor = c.monitor
        if monitor is None or monitor.returncode is not None or not c.pid:
            return
        deadline = time.monotonic() + grace
        hook = ((c.spec.get("lifecycle") or {}).get("preStop") or {}).get("exec")
        if hook and grace > 0 and nstools.alive(c.pid, c.start_time):
            await probes.run_in_container(self._target(), hook.get("command") or [], grace)
        if nstools.alive(c.pid, c.start_time):
            with contextlib.suppress(ProcessLookupError):
                os.kill(c.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(monitor.wait()), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            if nstools.alive(c.pid, c.start_time):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(c.pid, signal.SIGKILL)
            await monitor.wait()


def _api_time(stamp: object) -> str:
    """A time the container helper wrote (RFC 3339 with nanoseconds) as the API's ``metav1.Time``; now if none."""
    return times.format_time(times.parse_time(stamp))


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _log_tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a CRI log, without their timestamp, stream and tag."""
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return ""
    return "\n".join(line.split(" ", 3)[-1] for line in text)

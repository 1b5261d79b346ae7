"""One Pod on a process node, from scheduled to deleted: what a kubelet's pod worker does.

``PodWorker.run``:

1. **Sandbox**: the Pod's directory, the pause process (network/UTS/IPC/mount namespaces, tmpfs volumes), ``eth0``
   on the bridge with an IP from the node's range, ``/etc/hosts``, ``/etc/resolv.conf`` and ``/etc/hostname``, then
   the volumes (a ``FailedMount`` is retried until it resolves or the Pod goes), and kwok's ``Logs``, ``Exec`` and
   ``PortForward`` objects for the Pod (``kubectl logs|exec|port-forward``; as a kubelet does, any port something
   listens on in the Pod can be forwarded, declared or not: it is added to the PortForward when seen listening).
2. **Init containers** in order, each to completion (restarted per ``restartPolicy``; ``restartPolicy: Always`` ones
   are sidecars that keep running once started).
3. **Containers**, each in its own task: image -> venv by the kubelet's pull rules (``ErrImagePull``,
   ``ImagePullBackOff``, ``ErrImageNeverPull``), env (``CreateContainerConfigError`` starts nothing), the process,
   probes (startup gates liveness and readiness; liveness and startup failures restart it), exit codes and
   ``lastState``, restarts per ``restartPolicy`` with the kubelet's back-off (``CrashLoopBackOff``).
4. **Termination** when the Pod is deleted: ``preStop``, SIGTERM, the grace period, SIGKILL; then the sandbox goes,
   a last status with a terminal phase (Succeeded or Failed) and each container's exit code and times is written and
   the Pod object is deleted with grace 0, as the kubelet confirms a deletion (a finalizer, such as the Job
   controller's, keeps it readable).

Status is written by one publisher task, from the state here, whenever it changes (merge patch of ``/status``); the
phase and conditions follow the kubelet's rules in :mod:`~raykube.sandbox.kubelet.podstatus`. Events go to the
node's :class:`~raykube.kube.events.EventRecorder` (queued, never awaited).

Each room is a module, and an object the worker owns: step 1 is the
:class:`~raykube.sandbox.kubelet.podsandbox.PodSandbox`; each container has a
:class:`~raykube.sandbox.kubelet.containers.ContainerRunner` (its life in steps 2 and 3, and its kill in step 4), with
:mod:`~raykube.sandbox.kubelet.imagepull` for its image and :mod:`~raykube.sandbox.kubelet.probes` to run a probe;
what they share (the Pod as last seen, its Events, the terminating and changed signals, each container's state) is
the :class:`~raykube.sandbox.kubelet.podcontext.PodContext`. ``PodWorker`` here orders them (steps 2 and 3),
terminates the Pod (step 4) and publishes its status.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from raykube.kube import times
from raykube.kube.errors import ApiError
from raykube.kube.resources import PODS
from raykube.sandbox.kubelet import podstatus
from raykube.sandbox.kubelet.containers import ContainerRunner
from raykube.sandbox.kubelet.imagepull import ImagePuller
from raykube.sandbox.kubelet.podcontext import FIELD_MANAGER, Container, Host, Node, PodContext, Terminating
from raykube.sandbox.kubelet.podsandbox import PodSandbox

# What the runtime (main.py) takes from here: the worker, and what it shares with the worker's parts.
__all__ = ["FIELD_MANAGER", "Host", "Node", "PodWorker"]

log = logging.getLogger("raykube.sandbox.kubelet.pod")

SHUTDOWN_GRACE = 2.0  # when the runtime itself stops (sandbox down), Pods get this long


def _consume(task: asyncio.Task[Any]) -> None:
    """Retrieve a finished background task's outcome, so that asyncio does not report it as never retrieved."""
    if not task.cancelled():
        task.exception()


class PodWorker:
    def __init__(self, host: Host, node: Node, pod: Mapping[str, Any], pods_root: Path) -> None:
        self.ctx = ctx = PodContext(host, node, pod, pods_root)
        spec = pod["spec"]
        self.containers: dict[str, Container] = {}
        for init in spec.get("initContainers") or []:
            kind = "sidecar" if init.get("restartPolicy") == "Always" else "init"
            self.containers[init["name"]] = Container(
                init, kind, ctx.dir / "containers" / init["name"], state={"waiting": {"reason": "PodInitializing"}}
            )
        has_init = any(c.kind == "init" for c in self.containers.values())
        for container in spec["containers"]:
            reason = "PodInitializing" if has_init else "ContainerCreating"
            self.containers[container["name"]] = Container(
                container, "main", ctx.dir / "containers" / container["name"], state={"waiting": {"reason": reason}}
            )
        for c in self.containers.values():
            if c.kind != "main":
                c.state = {"waiting": {"reason": "PodInitializing"}}
        self.sandbox = PodSandbox(ctx, self.containers)
        puller = ImagePuller(ctx)  # one for the Pod's containers: its pull back-off is keyed by image
        self.runners = {name: ContainerRunner(ctx, self.sandbox, puller, c) for name, c in self.containers.items()}
        self.terminal_phase: str | None = None
        self.deleting = False  # the Pod's deletion was requested (not the runtime stopping)
        self.gone = False  # the Pod object no longer exists
        self.stopped = False  # its containers and sandbox are stopped for good
        self._conditions: list[dict[str, Any]] = []
        self.start_time = times.format_time()
        self.initialized = False
        self._published: dict[str, Any] | None = None

    @property
    def pod(self) -> Mapping[str, Any]:
        """The Pod as last seen (from the informer, or as its last status patch returned it)."""
        return self.ctx.pod

    # ------------------------------------------------------------------------------------------------ inputs
    def update(self, pod: Mapping[str, Any]) -> None:
        ctx = self.ctx
        ctx.pod = pod
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") and not ctx.terminating.is_set():
            grace = meta.get("deletionGracePeriodSeconds")
            ctx.grace = float(grace) if grace is not None else None
            self.deleting = True
            ctx.terminating.set()
        if pod["spec"].get("readinessGates"):
            ctx.mark()  # Ready follows the gates' conditions, which others set

    def deleted(self) -> None:
        self.gone = True
        self.deleting = True
        self.ctx.grace = 0.0
        self.ctx.terminating.set()

    def stop(self) -> None:
        """The runtime stops: take everything down quickly."""
        self.ctx.grace = SHUTDOWN_GRACE
        self.ctx.terminating.set()

    # ------------------------------------------------------------------------------------------------ main
    async def run(self) -> None:
        ctx = self.ctx
        publisher = asyncio.create_task(self._publisher(), name=f"status {ctx.namespace}/{ctx.name}")
        ports: asyncio.Task[None] | None = None
        refresher: asyncio.Task[None] | None = None
        ctx.mark()
        try:
            await self.sandbox.create()
            ports = asyncio.create_task(
                self.sandbox.forward_listening_ports(), name=f"ports {ctx.namespace}/{ctx.name}"
            )
            refresher = asyncio.create_task(self.sandbox.refresh_volumes(), name=f"volumes {ctx.namespace}/{ctx.name}")
            await self._initialize()
            await self._run_containers()
            if not ctx.terminating.is_set():  # the Pod ended for good: free its sandbox, keep its status
                await self._shutdown()
                ctx.mark()
                await ctx.terminating.wait()
        except Terminating:
            pass
        except Exception:
            log.exception("pod %s/%s failed in the runtime", ctx.namespace, ctx.name)
            ctx.event("Warning", "FailedSync", "the process runtime failed on this Pod; see its log")
            await ctx.terminating.wait()
        finally:
            await self._shutdown()
            ctx.mark()
            await asyncio.sleep(0)
            for task in (publisher, ports, refresher):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if not self.gone and not ctx.host.shutting_down and ctx.terminating.is_set():
                await self._publish()
                with contextlib.suppress(ApiError):  # as the kubelet confirms a deletion: grace 0, this uid only
                    await ctx.host.kube.delete(PODS, ctx.name, ctx.namespace, uid=ctx.uid, grace_period_seconds=0)
            ctx.node.recorder.forget(ctx.uid)
            self.sandbox.release(remove_dir=not ctx.host.shutting_down)

    # ------------------------------------------------------------------------------------------------ phases
    async def _initialize(self) -> None:
        ctx = self.ctx
        policy = ctx.pod["spec"].get("restartPolicy", "Always")
        for c in [c for c in self.containers.values() if c.kind in ("init", "sidecar")]:
            runner = self.runners[c.name]
            if c.kind == "sidecar":
                asyncio.create_task(runner.run(), name=f"sidecar {c.name}")  # noqa: RUF006 - ends with the Pod
                while not (c.running and c.started):
                    await self._wait_change()
                continue
            while True:
                code = await self._run_once_unless_terminating(runner)
                if code == 0:
                    break
                if policy == "Never":
                    self.terminal_phase = podstatus.FAILED
                    ctx.mark()
                    for other in self.containers.values():
                        if other.kind == "main":
                            other.state = {"waiting": {"reason": "PodInitializing"}}
                    await ctx.terminating.wait()
                    raise Terminating
                await runner.back_off()
        self.initialized = True
        for c in self.containers.values():
            if c.kind == "main":
                c.state = {"waiting": {"reason": "ContainerCreating"}}
        ctx.mark()

    async def _run_containers(self) -> None:
        tasks = [
            asyncio.create_task(self.runners[c.name].run(), name=f"container {c.name}")
            for c in self.containers.values()
            if c.kind == "main"
        ]
        done_waiter = asyncio.create_task(self.ctx.terminating.wait())
        try:
            pending = {*tasks, done_waiter}
            while True:
                finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if done_waiter in finished:
                    break
                if all(t.done() for t in tasks):  # every container ended for good (restartPolicy)
                    for task in tasks:
                        if not task.cancelled() and (exc := task.exception()) and not isinstance(exc, Terminating):
                            raise exc
                    self.terminal_phase = self._phase()
                    self.ctx.mark()
                    break
        finally:
            done_waiter.cancel()

    async def _run_once_unless_terminating(self, runner: ContainerRunner) -> int:
        """Run an init container once, but raise Terminating as soon as the Pod terminates: the kubelet kills a
        running init container when its Pod is deleted (here ``_shutdown`` does, as for the main containers, whose run
        also goes on until then) rather than waiting for it to end by itself, which a loop waiting for a dead head's
        GCS never does."""
        run = asyncio.create_task(runner.run_once(), name=f"init container {runner.c.name}")
        stop = asyncio.create_task(self.ctx.terminating.wait())
        try:
            await asyncio.wait({run, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if run.done():
            return run.result()
        run.add_done_callback(_consume)  # ends once _shutdown has stopped the container
        raise Terminating

    async def _wait_change(self) -> None:
        ctx = self.ctx
        ctx.changed.clear()
        waiter = asyncio.create_task(ctx.changed.wait())
        stop = asyncio.create_task(ctx.terminating.wait())
        try:
            await asyncio.wait({waiter, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            stop.cancel()
        if ctx.terminating.is_set():
            raise Terminating

    # ------------------------------------------------------------------------------------------------ stopping
    async def _shutdown(self) -> None:
        ctx = self.ctx
        grace = ctx.grace_seconds()
        running = [r for r in self.runners.values() if r.c.monitor is not None and r.c.monitor.returncode is None]
        if running and not self.gone and not ctx.host.shutting_down:
            for r in running:
                ctx.event("Normal", "Killing", f"Stopping container {r.c.name}", r.c)
        # Main containers first, then sidecars, as the kubelet orders termination.
        mains = [r for r in running if r.c.kind != "sidecar"]
        await asyncio.gather(*(r.kill(grace) for r in mains))
        await asyncio.gather(*(r.kill(min(grace, SHUTDOWN_GRACE)) for r in running if r.c.kind == "sidecar"))
        for r in self.runners.values():
            if r.c.running:  # killed: its runner may not have seen the exit yet; how it ended is in its exit.json
                r.terminated(r.exit_result())
            r.c.ready = False
        await self.sandbox.stop()
        self.stopped = ctx.terminating.is_set()

    # ------------------------------------------------------------------------------------------------ status
    def _statuses(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The init containers' (sidecars among them) and the regular containers' statuses, in spec order."""
        inits = [c.status() for c in self.containers.values() if c.kind != "main"]
        mains = [c.status() for c in self.containers.values() if c.kind == "main"]
        return inits, mains

    def _phase(self) -> str:
        if self.terminal_phase:
            return self.terminal_phase
        inits, mains = self._statuses()
        terminal = self.deleting and self.stopped  # stopped for good: the status manager's TerminatePod
        return podstatus.phase(self.pod["spec"], inits, mains, initialized=self.initialized, terminal=terminal)

    def status(self) -> dict[str, Any]:
        """The status to publish, by the kubelet's rules (:mod:`~raykube.sandbox.kubelet.podstatus`)."""
        phase = self._phase()
        inits, mains = self._statuses()
        current = self.pod.get("status") or {}
        current_conditions = current.get("conditions") or []
        generated = podstatus.conditions(
            self.pod["spec"],
            phase,
            inits,
            mains,
            sandbox_ready=self.sandbox.ready,
            initialized=self.initialized,
            current=current_conditions,
        )
        # A condition keeps its transition time while its status stays: from what was generated last, else from the
        # Pod as it is (the scheduler's PodScheduled; a previous runtime's conditions).
        self._conditions = podstatus.with_transition_times(
            generated, [*self._conditions, *current_conditions], times.format_time()
        )
        return podstatus.pod_status(
            pod_phase=phase,
            conditions=self._conditions,
            init_statuses=inits,
            statuses=mains,
            host_ip=self.ctx.node.host_ip,
            pod_ip=self.sandbox.ip,
            start_time=self.start_time,
            qos_class=str(current.get("qosClass") or ""),
        )

    async def _publish(self) -> None:
        status = self.status()
        comparable = json.dumps(status, sort_keys=True)
        if self._published is not None and json.dumps(self._published, sort_keys=True) == comparable:
            return
        ctx = self.ctx
        try:
            updated = await ctx.host.kube.patch(PODS, ctx.name, {"status": status}, ctx.namespace, subresource="status")
            self._published = status
            if updated.get("metadata", {}).get("uid") == ctx.uid:
                ctx.pod = {**ctx.pod, "status": updated.get("status", {})}
        except ApiError as exc:
            if exc.not_found:
                self.deleted()
            else:
                log.warning("status of %s/%s: %s", ctx.namespace, ctx.name, exc)
                ctx.dirty.set()
                await asyncio.sleep(1)

    async def _publisher(self) -> None:
        while True:
            await self.ctx.dirty.wait()
            self.ctx.dirty.clear()
            await self._publish()

"""Starting the sandbox's processes, recognising them later, and stopping only them.

A PID alone is not an identity: PIDs are reused. A process is "ours" only while ``/proc/<pid>/cmdline`` is exactly
the argv we started it with (every argv names a path inside the sandbox's own directory), and it is not a zombie.
Stopping is SIGTERM, a grace period, then SIGKILL, and only ever for a process that passes that check.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raykube.waiting import WaitTimeout, wait_for


@dataclass(frozen=True)
class ProcessRecord:
    component: str
    pid: int
    argv: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"component": self.component, "pid": self.pid, "argv": list(self.argv)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessRecord:
        return cls(data["component"], int(data["pid"]), tuple(data["argv"]))


# Children started by this Python process, kept so their exit status can be collected (no zombies, and no
# "subprocess is still running" warnings from garbage-collected Popen objects).
_children: dict[int, subprocess.Popen[bytes]] = {}


def _reap(pid: int) -> None:
    """Collect the exit status if ``pid`` is our child, so it does not linger as a zombie."""
    child = _children.get(pid)
    if child is not None and child.poll() is not None:
        del _children[pid]


def is_running(record: ProcessRecord) -> bool:
    """Whether ``record.pid`` is alive, not a zombie, and still runs exactly ``record.argv``."""
    _reap(record.pid)
    proc = Path(f"/proc/{record.pid}")
    try:
        cmdline = (proc / "cmdline").read_bytes()
        stat = (proc / "stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    if state in ("Z", "X"):
        return False
    return tuple(a.decode(errors="replace") for a in cmdline.split(b"\0")[:-1]) == record.argv


def _cmdline(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


async def spawn(
    component: str, argv: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None
) -> ProcessRecord:
    """Start ``argv`` detached from our session (it outlives the CLI), output to ``log`` (truncated).

    Returns once ``/proc/<pid>/cmdline`` shows the new program: Popen returns when exec has passed its point of no
    return, but the kernel sets up the new argv a moment later, and until then the process would not look like ours.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen(  # noqa: ASYNC220 - detached on purpose: it must outlive this event loop
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    # The process belongs to the sandbox, not to this Python process, and outlives it; while we are its parent,
    # `is_running` reaps it when it exits.
    _children[proc.pid] = proc
    await wait_for(
        lambda: _cmdline(proc.pid) != b"" or proc.poll() is not None, 10, what=f"{component} to exec", interval=0.001
    )
    return ProcessRecord(component, proc.pid, tuple(argv))


async def _collect(pid: int) -> None:
    """Wait for our own child's exit status once it is no longer running (an exiting process loses its cmdline a
    moment before it can be collected), so no zombie and no Popen warning is left behind."""
    child = _children.get(pid)
    if child is None:
        return
    try:
        await asyncio.wait_for(asyncio.to_thread(child.wait), 10)
    except TimeoutError:
        return
    _children.pop(pid, None)


async def terminate(record: ProcessRecord, grace: float = 15.0, *, crash: bool = False) -> bool:
    """SIGTERM ``record`` if it is still ours, SIGKILL after ``grace`` seconds (at once with ``crash``). False if it
    was not running."""
    if not is_running(record):
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(record.pid, signal.SIGKILL if crash else signal.SIGTERM)
    try:
        await wait_for(lambda: not is_running(record), grace, what=f"{record.component} to exit")
    except WaitTimeout:
        if is_running(record):
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, signal.SIGKILL)
            await wait_for(lambda: not is_running(record), 10, what=f"{record.component} to die after SIGKILL")
    await _collect(record.pid)
    return True

"""Stop whatever the process runtime left running, from its files alone (for ``down`` after a crash, and for a
runtime that starts over a previous one's state).

Every process the runtime starts records ``{"pid", "startTime"}`` in a JSON file under its state directory
(``pause.json``, ``run-N/started.json`` for a container's PID 1, ``run-N/monitor.json``); a PID is signalled only
while its start time still matches. Killing a container's PID 1 ends its PID namespace, killing a pause process
ends the Pod's network namespace (and with it its veth); the bridge is deleted by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

from raykube.sandbox.kubelet import network, nstools


def _records(state_dir: Path, pattern: str) -> list[tuple[int, int]]:
    found = []
    for path in state_dir.glob(pattern):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            data = json.loads(path.read_text())
            found.append((int(data["pid"]), int(data["startTime"])))
    return found


def _kill_all(records: list[tuple[int, int]], timeout: float = 10.0) -> int:
    alive = [(pid, start) for pid, start in records if nstools.alive(pid, start)]
    for pid, _ in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(nstools.alive(pid, start) for pid, start in alive) and time.monotonic() < deadline:
        for pid, _ in alive:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.02)
    return len(alive)


def stop_leftovers(state_dir: Path, bridge: str | None) -> list[str]:
    """Kill the runtime's recorded processes that still run and delete its bridge; what was done, for a report."""
    done = []
    if (count := _kill_all(_records(state_dir, "pods/*/containers/*/run-*/started.json"))) > 0:
        done.append(f"killed {count} container process(es)")
    monitors = _records(state_dir, "pods/*/containers/*/run-*/monitor.json")
    pauses = _records(state_dir, "pods/*/pause.json") + _records(state_dir, "services/pause.json")
    if (count := _kill_all(monitors + pauses)) > 0:
        done.append(f"killed {count} monitor/sandbox process(es)")
    if bridge and network.delete_bridge_sync(bridge):
        done.append(f"deleted bridge {bridge}")
    return done

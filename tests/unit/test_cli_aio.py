"""SIGTERM during an async raykube command: the command's task is cancelled through the loop, its ``finally`` awaits
to the end (a subprocess, an executor call, a sleep: what ``sandbox.down`` does), then the command ends with
``KeyboardInterrupt`` (click's "Aborted!"). Run in a child process, the way ``kill <pid>`` meets a real command, with
tasks starting subprocesses and executor calls meanwhile, as a conformance run's are: there ``KeyboardInterrupt``
raised by the signal handler itself (``asyncio.run``) left about a third of such children hung or without their
clean-up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from raykube.cli import aio

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from raykube.cli import aio, main

    done = Path(sys.argv[1])

    async def churn():
        while True:
            proc = await asyncio.create_subprocess_exec("true", stdout=asyncio.subprocess.PIPE)
            await proc.communicate()
            await asyncio.get_running_loop().run_in_executor(None, lambda: None)

    async def command():
        busy = [asyncio.create_task(churn()) for _ in range(4)]
        try:
            print("started", flush=True)
            await asyncio.sleep(3600)
        finally:
            for task in busy:
                task.cancel()
            proc = await asyncio.create_subprocess_exec("true")
            await proc.wait()
            await asyncio.get_running_loop().run_in_executor(None, lambda: None)
            await asyncio.sleep(0.05)
            done.write_text("cleaned up")

    main._main()  # the handler every raykube command installs
    try:
        aio.run(command())
    except KeyboardInterrupt as exc:
        print(f"interrupted: {exc}", flush=True)
        sys.exit(3)
    """
)


@pytest.mark.parametrize("after", [0.0, 0.15, 0.3, 0.45])
def test_sigterm_cancels_the_command_and_its_cleanup_awaits_to_the_end(tmp_path: Path, after: float) -> None:
    done = tmp_path / "done"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(done)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "started"  # blocks until the command's task runs
    time.sleep(after)  # a moment inside the churn (not a wait for state: the signal's arrival time is the input)
    os.kill(child.pid, signal.SIGTERM)
    try:
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:  # hung: end the child this test started
            child.kill()
            child.wait()
    assert child.returncode == 3, (out, err)
    assert out.strip() == "interrupted: signal 15", (out, err)
    assert done.read_text() == "cleaned up"
    assert "Event loop is closed" not in err and "Traceback" not in err, err


def test_a_command_that_ends_returns_its_value_and_the_sigterm_handler_is_restored() -> None:
    async def answer() -> int:
        return 42

    def mine(signum: int, frame: object) -> None:
        raise AssertionError

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        assert aio.run(answer()) == 42
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)

"""``asyncio.run`` for raykube's commands, with SIGTERM cancelling the command's task as Ctrl-C does.

``raykube.cli.main`` turns SIGTERM into ``KeyboardInterrupt`` so a command killed by a CI timeout or ``kill <pid>``
runs its clean-up. Raised from a signal handler, that exception lands wherever the main thread stands: inside the
event loop's own bookkeeping it leaves the loop half-stepped, and the clean-up that must await (a conformance run's
``sandbox.down`` in ``play``'s ``finally``) met a loop that was closing ("Event loop is closed") and left the sandbox
running. Here SIGTERM instead cancels the command's task through the loop (``loop.add_signal_handler``), so every
``finally`` awaits on a working loop, and then ends the command with ``KeyboardInterrupt`` as before (click prints
"Aborted!", exit 1). Ctrl-C keeps ``asyncio.run``'s own handling (it cancels the task the same way).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to its end on a new event loop; SIGTERM cancels it and, its clean-up done, raises
    ``KeyboardInterrupt``. The process's SIGTERM handler is the same afterwards as before."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread receives signals
        return asyncio.run(main)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        return asyncio.run(_cancelled_by_sigterm(main))
    finally:
        signal.signal(signal.SIGTERM, previous)


async def _cancelled_by_sigterm(main: Coroutine[Any, Any, T]) -> T:
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(main)
    signalled = False

    def stop() -> None:
        nonlocal signalled
        signalled = True
        task.cancel(f"signal {signal.SIGTERM}")

    loop.add_signal_handler(signal.SIGTERM, stop)
    try:
        return await task
    except asyncio.CancelledError:
        if signalled and task.cancelled():
            raise KeyboardInterrupt(f"signal {signal.SIGTERM}") from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)

"""A work queue of object keys, with the guarantees controller-runtime's workqueue gives:

* a key waiting in the queue is there once, however often it is added (events coalesce);
* a key is never handed to two workers at once: adding a key that is being processed marks it dirty, and it is
  queued again when its worker calls :meth:`WorkQueue.done`;
* :meth:`add_after` re-adds a key after a delay (the earliest pending delay per key wins);
* :meth:`add_rate_limited` re-adds with a per-key exponential back-off (5 ms doubling to 1000 s, as controller-runtime
  does for reconcile errors), reset by :meth:`forget` after a success.

It also reports its depth, adds, and how long keys wait and take, for the metrics, and lets background work wait
until the queue is short (:meth:`WorkQueue.wait_below`: the operator's Events wait while clusters queue for a worker).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass
class QueueStats:
    adds: int = 0
    retries: int = 0
    waits: list[float] = field(default_factory=list)  # seconds from add to get; drained by the metrics collector


class WorkQueue(Generic[K]):
    def __init__(self, name: str, *, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.name = name
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.stats = QueueStats()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._added_at: dict[K, float] = {}
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._failures: dict[K, int] = {}
        self._ready = asyncio.Event()
        self._shrunk = asyncio.Event()  # set whenever a key leaves the queue (for wait_below)
        self._shutting_down = False

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def depth(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> int:
        return len(self._processing)

    def add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self.stats.adds += 1
        self._dirty.add(key)
        self._added_at.setdefault(key, time.monotonic())
        if key in self._processing:
            return  # done() queues it again
        self._queue.append(key)
        self._ready.set()

    def add_after(self, key: K, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        due = time.monotonic() + delay
        pending = self._timers.get(key)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        handle = asyncio.get_running_loop().call_later(delay, self._fire, key)
        self._timers[key] = (due, handle)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: K) -> float:
        """Re-add after this key's next back-off delay; returns the delay."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.stats.retries += 1
        delay = min(self.max_delay, self.base_delay * float(2**failures))
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)

    async def get(self) -> K | None:
        """The next key to process, or None once the queue shuts down."""
        while not self._queue:
            if self._shutting_down:
                return None
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft()
        self._shrunk.set()
        self._dirty.discard(key)
        self._processing.add(key)
        added = self._added_at.pop(key, None)
        if added is not None:
            self.stats.waits.append(time.monotonic() - added)
        return key

    async def wait_below(self, depth: int) -> None:
        """Wait until at most ``depth`` keys wait for a worker (at once after shutdown)."""
        while len(self._queue) > depth and not self._shutting_down:
            self._shrunk.clear()
            await self._shrunk.wait()

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._ready.set()

    def shutdown(self) -> None:
        """Stop handing out keys; workers finish what they hold, then get None."""
        self._shutting_down = True
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._queue.clear()
        self._dirty.clear()
        self._ready.set()
        self._shrunk.set()

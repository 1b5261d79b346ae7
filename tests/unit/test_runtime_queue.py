"""The work queue's guarantees: one entry per key, never two workers on one key, delays and back-off."""

from __future__ import annotations

import asyncio

import pytest

from raykube.runtime.queue import WorkQueue
from raykube.waiting import wait_for


async def test_a_key_added_many_times_is_queued_once() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    for _ in range(5):
        queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert await queue.get() == "a"
    assert await queue.get() == "b"


async def test_a_key_being_processed_is_not_handed_out_again_until_done() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    queue.add("a")
    assert await queue.get() == "a"
    queue.add("a")  # an event arrives while a worker holds "a"
    assert len(queue) == 0
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not second.done()
    queue.done("a")
    assert await asyncio.wait_for(second, 1) == "a"


async def test_add_after_fires_once_and_the_earliest_delay_wins() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    queue.add_after("a", 30)
    queue.add_after("a", 0.01)
    queue.add_after("a", 20)
    assert await asyncio.wait_for(queue.get(), 2) == "a"
    queue.done("a")
    assert len(queue) == 0
    queue.shutdown()  # cancels the 30 s and 20 s timers that lost


async def test_rate_limited_delays_double_per_key_and_reset_on_forget() -> None:
    queue: WorkQueue[str] = WorkQueue("t", base_delay=0.001, max_delay=0.004)
    delays = [queue.add_rate_limited("a") for _ in range(4)]
    assert delays == [0.001, 0.002, 0.004, 0.004]
    assert queue.failures("a") == 4
    queue.forget("a")
    assert queue.add_rate_limited("a") == 0.001
    await wait_for(lambda: len(queue) == 1, 2, what="the retried key")
    queue.shutdown()


async def test_shutdown_releases_waiting_workers() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    waiter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shutdown()
    assert await asyncio.wait_for(waiter, 1) is None
    queue.add("late")
    assert len(queue) == 0


async def test_wait_below_returns_once_workers_have_taken_enough_keys() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    for key in "abcd":
        queue.add(key)
    await asyncio.wait_for(queue.wait_below(4), 1)  # already short enough
    waiter = asyncio.create_task(queue.wait_below(1))
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    await asyncio.sleep(0)
    assert not waiter.done()  # two keys still wait
    assert await queue.get() == "c"
    await asyncio.wait_for(waiter, 1)
    late = asyncio.create_task(queue.wait_below(0))
    await asyncio.sleep(0)
    assert not late.done()
    queue.shutdown()  # shutting down releases whoever waits
    await asyncio.wait_for(late, 1)


@pytest.mark.parametrize("workers", [1, 4])
async def test_concurrent_workers_never_share_a_key(workers: int) -> None:
    queue: WorkQueue[int] = WorkQueue("t")
    active: set[int] = set()
    overlaps: list[int] = []
    handled: list[int] = []

    async def worker() -> None:
        while (key := await queue.get()) is not None:
            if key in active:
                overlaps.append(key)
            active.add(key)
            await asyncio.sleep(0.001)
            if len(handled) < 200:
                queue.add(key)  # re-add while processing: must wait for done()
            handled.append(key)
            active.discard(key)
            queue.done(key)

    for key in range(5):
        queue.add(key)
    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    await wait_for(lambda: len(handled) >= 200 and len(queue) == 0 and queue.processing == 0, 10, what="drain")
    queue.shutdown()
    await asyncio.gather(*tasks)
    assert overlaps == []

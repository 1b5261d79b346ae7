"""How an informer behaves around an outage: when it calls itself stale, and how it comes back (no API server)."""

from __future__ import annotations

import asyncio
import time

from raykube.kube.client import Kube
from raykube.kube.informer import Backoff, Informer
from raykube.kube.resources import PODS, SERVICES
from raykube.runtime.manager import STALE_HOLD_LIMIT, Manager


def _pair() -> tuple[Informer, Informer]:
    kube = Kube(object())  # type: ignore[arg-type]
    return Informer(kube, PODS, namespace="ns"), Informer(kube, SERVICES, namespace="ns")


async def test_an_informer_is_stale_only_once_synced_and_then_cut_off() -> None:
    pods, _ = _pair()
    assert not pods.stale  # never synced: not stale, absent (the manager waits for the first list)
    pods.synced.set()
    pods._opened()
    assert not pods.stale
    pods._lost(Backoff())
    assert pods.stale
    pods._opened()
    assert not pods.stale


async def test_a_back_off_ends_early_when_another_informer_of_the_client_gets_through() -> None:
    pods, services = _pair()
    pods._lost(Backoff())
    waiting = asyncio.create_task(pods._pause(300))
    await asyncio.sleep(0)
    services._opened()
    await asyncio.wait_for(waiting, 5)  # not 300 s


async def test_a_success_before_the_pause_began_still_ends_it() -> None:
    pods, services = _pair()
    pods._lost(Backoff())
    services._opened()  # the server came back between this informer's failure and its pause
    await asyncio.wait_for(pods._pause(300), 5)


async def test_a_flapping_server_wakes_the_informers_at_most_once_a_second() -> None:
    pods, services = _pair()
    generations = []
    for _ in range(5):  # lost, back, lost, back, ... in a moment
        pods._lost(Backoff())
        services._opened()
        generations.append(pods._lost_generation)
    pods._lost(Backoff())
    assert pods._lost_generation == 1


async def test_a_retry_after_wait_is_not_cut_short() -> None:
    pods, services = _pair()
    pods._lost(Backoff())
    waiting = asyncio.create_task(pods._pause(300, wake=False))
    await asyncio.sleep(0)
    services._opened()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()
    waiting.cancel()


def test_a_watch_that_stayed_open_resets_the_back_off_and_one_that_failed_at_once_does_not() -> None:
    pods, _ = _pair()
    backoff = Backoff()
    for _ in range(6):
        backoff.next()
    pods._opened()
    pods._opened_at = (pods._opened_at or 0.0) - 10  # open for 10 s before it failed
    pods._lost(backoff)
    assert backoff.failures == 0
    for _ in range(6):
        backoff.next()
    pods._opened()  # failed right after it opened
    pods._lost(backoff)
    assert backoff.failures == 6


async def test_the_manager_holds_passes_while_an_informer_is_cut_off_but_not_for_ever() -> None:
    manager = Manager(Kube(object()), namespaces=["ns"])  # type: ignore[arg-type]
    ctl = manager.controllers[0]
    key = ("ns", "c")
    assert not manager._hold_if_stale(ctl, key)  # nothing synced yet: nothing stale
    informer = manager.informers[0]
    informer.synced.set()
    informer._opened()
    informer._lost(Backoff())
    assert manager._hold_if_stale(ctl, key)  # held: queued again shortly
    informer.lost_at = time.monotonic() - STALE_HOLD_LIMIT - 1
    assert not manager._hold_if_stale(ctl, key)  # an outage that lasts: go on with the cache there is
    informer._opened()
    assert not manager._hold_if_stale(ctl, key)
    ctl.queue.shutdown()


async def test_a_stop_that_comes_before_the_caches_start_leaves_no_informer_or_worker_running() -> None:
    # The operator starts the caches and the workers in tasks of its own; a stop during start-up (SIGTERM while the
    # Pod starts, a lost election) may reach the manager before those tasks first run. They must then start nothing:
    # an informer started after the stop watches for ever and holds the process open.
    manager = Manager(Kube(object()), namespaces=["ns"])  # type: ignore[arg-type]
    caches = asyncio.create_task(manager.start_caches())
    workers = asyncio.create_task(manager.start_workers())
    await manager.stop(grace=0)
    manager.synced.set()  # as if the first lists had come in after the stop
    await asyncio.wait_for(asyncio.gather(caches, workers), 5)
    running = [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith(("informer", "worker", "events"))]
    assert running == []
    assert not manager.ready.is_set()

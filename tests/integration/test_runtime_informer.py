"""Informers against the real API server: first sync, live events, label indexes, and deletions seen after a gap."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import pytest

from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.informer import Informer
from raykube.kube.resources import CONFIGMAPS
from raykube.waiting import NotYet, wait_for
from tests.ledger import Ledger


def _cm(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def __call__(self, event: str, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> None:
        obj = new or old or {}
        self.events.append((event, obj["metadata"]["name"]))


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_informer_syncs_follows_changes_and_indexes_labels(runtime_kube: Kube, namespace: str) -> None:
    await runtime_kube.create(CONFIGMAPS, _cm("before", app="a"), namespace)
    informer = Informer(runtime_kube, CONFIGMAPS, namespace=namespace, index_labels=("app",))
    seen = Recorded()
    informer.add_handler(seen)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 30)
        assert informer.get(namespace, "before") is not None
        assert ("ADDED", "before") in seen.events

        await runtime_kube.create(CONFIGMAPS, _cm("after", app="b"), namespace)
        await runtime_kube.patch(CONFIGMAPS, "before", {"data": {"k": "changed"}}, namespace)
        await runtime_kube.delete(CONFIGMAPS, "after", namespace)

        def followed() -> bool | NotYet:
            wanted = [("ADDED", "after"), ("MODIFIED", "before"), ("DELETED", "after")]
            return all(e in seen.events for e in wanted) or NotYet(f"events so far: {seen.events}")

        await wait_for(followed, 30, what="the informer to see create, update and delete")
        before = informer.get(namespace, "before")
        assert before is not None
        assert before["data"] == {"k": "changed"}
        assert "managedFields" not in before["metadata"]  # stripped to save memory
        assert [o["metadata"]["name"] for o in informer.list(namespace, {"app": "a"})] == ["before"]
        assert informer.list(namespace, {"app": "b"}) == []
    finally:
        await _stop(task)


async def test_a_deletion_missed_while_disconnected_is_reported_by_the_relist(
    runtime_kube: Kube, namespace: str
) -> None:
    for name in ("keep", "lose"):
        await runtime_kube.create(CONFIGMAPS, _cm(name), namespace)
    informer = Informer(runtime_kube, CONFIGMAPS, namespace=namespace)
    seen = Recorded()
    informer.add_handler(seen)
    task = asyncio.create_task(informer.run())
    await asyncio.wait_for(informer.synced.wait(), 30)
    await _stop(task)  # the "connection" is gone...

    await runtime_kube.delete(CONFIGMAPS, "lose", namespace)  # ...while this happens

    task = asyncio.create_task(informer.run())  # a new run starts with a relist, as after a 410
    try:
        await wait_for(lambda: ("DELETED", "lose") in seen.events, 30, what="the missed deletion")
        assert informer.get(namespace, "lose") is None
        assert informer.get(namespace, "keep") is not None
        assert informer.relists == 2
    finally:
        await _stop(task)


@pytest.mark.reliability("Watch stall")
async def test_a_quiet_watch_is_watched_again_from_the_same_version_without_a_warning(
    runtime_kube: Kube, namespace: str, caplog: pytest.LogCaptureFixture, ledger: Ledger
) -> None:
    informer = Informer(runtime_kube, CONFIGMAPS, namespace=namespace, label_selector="quiet=yes", inactivity=1.0)
    seen = Recorded()
    informer.add_handler(seen)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.synced.wait(), 30)
        await wait_for(lambda: informer.idle_rewatches >= 2 or NotYet(informer.idle_rewatches), 30, what="rewatches")
        await runtime_kube.create(CONFIGMAPS, _cm("late", quiet="yes"), namespace)
        await wait_for(lambda: ("ADDED", "late") in seen.events, 30, what="the event after the quiet spell")
        assert informer.relists == 1  # the same version again, no list
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.endswith("informer")]
        ledger.record(
            "Watch stall",
            "a watch that stays silent longer than the informer's inactivity limit (1 s here)",
            informer.idle_rewatches,
            "the informer notices and watches again from the same resourceVersion (no relist, no warning); an object "
            "created after the quiet spell still arrives",
            f"{informer.idle_rewatches} rewatches, {informer.relists} list, the late object seen",
        )
    finally:
        await _stop(task)


async def test_errors_carry_the_api_status(runtime_kube: Kube, namespace: str) -> None:
    with pytest.raises(ApiError) as missing:
        await runtime_kube.get(CONFIGMAPS, "nope", namespace)
    assert missing.value.not_found
    assert missing.value.reason == "NotFound"
    await runtime_kube.create(CONFIGMAPS, _cm("twice"), namespace)
    with pytest.raises(ApiError) as duplicate:
        await runtime_kube.create(CONFIGMAPS, _cm("twice"), namespace)
    assert duplicate.value.conflict
    assert duplicate.value.reason == "AlreadyExists"

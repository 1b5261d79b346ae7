"""The event recorder's core/v1 Events, as a kubelet writes them: body, and repeats folded into a count."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from raykube.kube import events
from raykube.kube.client import Kube, TokenBucket
from raykube.kube.events import CORE_EVENTS_API, EventRecorder
from raykube.kube.resources import CORE_EVENTS, Resource
from raykube.runtime.logs import JsonFormatter, reconcile_context
from raykube.runtime.manager import events_room
from raykube.runtime.queue import WorkQueue
from raykube.waiting import NotYet, wait_for

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"}}


class Sink:
    """Records the recorder's writes (the few Kube calls it makes)."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []

    async def create(self, res: Resource, body: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        assert res == CORE_EVENTS
        self.created.append(dict(body))
        return dict(body)

    async def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None) -> dict[str, Any]:
        assert res == CORE_EVENTS
        self.patched.append((name, patch))
        return {}


def kubelet_recorder(sink: Sink) -> EventRecorder:
    kube: Kube = sink  # type: ignore[assignment] - duck-typed: create and patch only
    return EventRecorder(kube, "kubelet", instance="process-node-0", api=CORE_EVENTS_API)


def test_a_kubelets_event_names_the_container_and_the_node() -> None:
    sink = Sink()
    recorder = kubelet_recorder(sink)
    pod = {"apiVersion": "v1", "kind": "Pod", **POD}
    recorder.event(pod, "Normal", "Started", "", "Started container main", field_path="spec.containers{main}")
    asyncio.run(recorder.flush())

    [event] = sink.created
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "ns",
        "name": "p",
        "uid": "u-1",
        "resourceVersion": "7",
        "fieldPath": "spec.containers{main}",
    }
    assert event["source"] == {"component": "kubelet", "host": "process-node-0"}
    assert (event["reportingComponent"], event["reportingInstance"]) == ("kubelet", "process-node-0")
    assert (event["reason"], event["message"], event["type"], event["count"]) == (
        "Started",
        "Started container main",
        "Normal",
        1,
    )
    assert "action" not in event  # a kubelet's core/v1 Events have none
    assert event["metadata"]["name"].startswith("p.")


def test_repeats_fold_into_a_count_however_far_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = Sink()
    recorder = kubelet_recorder(sink)
    clock = [1000.0]
    monkeypatch.setattr(events.time, "monotonic", lambda: clock[0])

    async def record_three() -> None:
        for _ in range(3):
            recorder.event(POD, "Warning", "BackOff", "", "Back-off restarting failed container")
            await recorder.flush()
            clock[0] += 2 * events.SERIES_WINDOW  # further apart than an events.k8s.io series may be

    asyncio.run(record_three())

    assert len(sink.created) == 1
    name = sink.created[0]["metadata"]["name"]
    assert [(n, p["count"]) for n, p in sink.patched] == [(name, 2), (name, 3)]


def test_another_message_is_another_event() -> None:
    sink = Sink()
    recorder = kubelet_recorder(sink)
    recorder.event(POD, "Warning", "Unhealthy", "", "Liveness probe failed: a")
    recorder.event(POD, "Warning", "Unhealthy", "", "Liveness probe failed: b")
    asyncio.run(recorder.flush())
    assert [e["message"] for e in sink.created] == ["Liveness probe failed: a", "Liveness probe failed: b"]
    assert sink.patched == []


def test_pending_counts_what_is_queued_or_being_sent_until_it_reached_the_api_server() -> None:
    sink = Sink()
    recorder = kubelet_recorder(sink)
    pod = {"apiVersion": "v1", "kind": "Pod", **POD}
    recorder.event(pod, "Warning", "Failed", "", "one")
    recorder.event(pod, "Warning", "Failed", "", "two")
    assert recorder.pending == 2

    async def send_them() -> None:
        task = asyncio.create_task(recorder.run())
        await wait_for(lambda: recorder.pending == 0 or NotYet(f"{recorder.pending} to send"), 5, interval=0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(send_them())
    assert recorder.pending == 0 and recorder.sent == 2 and len(sink.created) == 2
    recorder.event(pod, "Warning", "Failed", "", "three")
    asyncio.run(recorder.flush())
    assert recorder.pending == 0


def test_an_event_waits_for_room_before_it_is_sent() -> None:
    async def scenario() -> None:
        sink = Sink()
        kube: Kube = sink  # type: ignore[assignment] - duck-typed: create and patch only
        room = asyncio.Event()
        recorder = EventRecorder(kube, "raycluster-controller", api=CORE_EVENTS_API, room=room.wait)
        recorder.event({"apiVersion": "v1", "kind": "Pod", **POD}, "Normal", "CreatedWorkerPod", "Create", "Created")
        task = asyncio.create_task(recorder.run())
        for _ in range(10):
            await asyncio.sleep(0)  # let the sender run: it is waiting for room, not sending
        assert sink.created == [] and recorder.pending == 1
        room.set()
        await wait_for(lambda: len(sink.created) == 1 or NotYet("not sent"), 5, interval=0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())


def test_an_operators_events_wait_while_it_is_behind_or_its_pod_writes_use_up_their_rate_limit() -> None:
    """events_room: no event while more keys wait than there are workers, nor while the Pod bucket is under half full;
    and it takes none of the Pod writes' tokens."""

    async def scenario() -> None:
        queue: WorkQueue[str] = WorkQueue("raycluster")
        writes = TokenBucket(qps=100.0, burst=20)
        room = asyncio.create_task(events_room(queue, 2, writes)())
        for key in "abc":
            queue.add(key)  # three clusters wait for two workers
        for _ in range(20):
            await writes.acquire()  # a burst of creates empties the bucket
        # the bucket refills meanwhile: then only the queue holds the event back
        await wait_for(lambda: writes.saved() >= 10 or NotYet(f"{writes.saved():.1f} tokens"), 5, interval=0.01)
        await asyncio.sleep(0)
        assert not room.done()
        assert await queue.get() == "a"  # a worker takes one: two wait for two workers
        await asyncio.wait_for(room, 1)
        for _ in range(20):
            await writes.acquire()
        second = asyncio.create_task(events_room(queue, 2, writes)())
        for _ in range(10):
            await asyncio.sleep(0)
        assert not second.done() and writes.saved() < 10  # the queue is short, the Pod bucket is not half full
        await asyncio.wait_for(second, 1)
        assert writes.saved() >= 10  # it took none of the writes' tokens
        queue.shutdown()

    asyncio.run(scenario())


def test_an_event_about_an_object_with_a_253_character_name_still_has_a_valid_name() -> None:
    sink = Sink()
    recorder = kubelet_recorder(sink)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {**POD["metadata"], "name": "n" * 253}}
    recorder.event(pod, "Warning", "InvalidRayClusterMetadata", "", "metadata.name: too long")
    asyncio.run(recorder.flush())
    [event] = sink.created
    assert len(event["metadata"]["name"]) <= 253 and event["metadata"]["name"].startswith("nnn")
    assert event["involvedObject"]["name"] == "n" * 253


def test_an_operators_events_are_also_its_log_lines_with_the_reconciles_keys(caplog: pytest.LogCaptureFixture) -> None:
    kube: Kube = Sink()  # type: ignore[assignment] - duck-typed: create and patch only
    operator = EventRecorder(kube, "raycluster-controller", api=CORE_EVENTS_API, log_events=True)
    kubelet = kubelet_recorder(Sink())
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", **POD}
    token = reconcile_context.set({"RayCluster": "ns/p", "reconcileID": "r-1"})
    try:
        with caplog.at_level("INFO"):
            operator.event(cluster, "Normal", "CreatedHeadPod", "Create", "Created head Pod ns/p-head-x")
            operator.event(cluster, "Warning", "FailedToCreateWorkerPod", "Create", "forbidden")
            kubelet.event(cluster, "Normal", "Started", "", "not an operator: not logged")
    finally:
        reconcile_context.reset(token)
    records = [r for r in caplog.records if r.name == "raykube.raycluster-controller"]
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("INFO", "Created head Pod ns/p-head-x"),
        ("WARNING", "forbidden"),
    ]
    assert not any("not logged" in r.getMessage() for r in caplog.records)
    line = JsonFormatter().format(records[0])
    assert '"event": {"type": "Normal", "reason": "CreatedHeadPod", "object": "RayCluster ns/p"' in line

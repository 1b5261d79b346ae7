"""The event recorder: core/v1 Events as a kubelet writes them (repeats folded into a count), and events.k8s.io/v1
Events as KubeRay v1.7.0's controllers write them (client-go's ``tools/events``: repeats folded into a series)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

import pytest

from raykube.kube import events
from raykube.kube.client import Kube, TokenBucket
from raykube.kube.errors import ApiError
from raykube.kube.events import CORE_EVENTS_API, EVENTS_API, EventRecorder
from raykube.kube.resources import CORE_EVENTS, EVENTS, Resource
from raykube.runtime.logs import JsonFormatter, reconcile_context
from raykube.runtime.manager import events_room
from raykube.runtime.queue import WorkQueue
from raykube.waiting import NotYet, wait_for

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"}}


class Sink:
    """Records the recorder's writes (the few Kube calls it makes)."""

    def __init__(self, res: Resource = CORE_EVENTS) -> None:
        self.res = res
        self.created: list[dict[str, Any]] = []
        self.patched: list[tuple[str, dict[str, Any]]] = []
        self.gone: set[str] = set()  # names whose patch answers NotFound (deleted by the API server's TTL)

    async def create(self, res: Resource, body: Mapping[str, Any], namespace: str | None = None) -> dict[str, Any]:
        assert res == self.res
        self.created.append(dict(body))
        return dict(body)

    async def patch(self, res: Resource, name: str, patch: Any, namespace: str | None = None) -> dict[str, Any]:
        assert res == self.res
        if name in self.gone:
            raise ApiError(404, "NotFound", f'events.events.k8s.io "{name}" not found')
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
    # client-go's GenerateEventName: "<name>.<hex>" is too long, so the event gets a random UUID as its name
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", event["metadata"]["name"])
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


# events.k8s.io/v1, as KubeRay v1.7.0's controllers write them ------------------------------------------------------
CLUSTER = {"apiVersion": "ray.io/v1", "kind": "RayCluster", **POD}


def operator_recorder(sink: Sink) -> EventRecorder:
    kube: Kube = sink  # type: ignore[assignment] - duck-typed: create and patch only
    return EventRecorder(kube, "raycluster-controller", api=EVENTS_API)


def test_an_operators_event_is_an_events_k8s_io_event_with_its_action_and_reporting_controller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """client-go's ``tools/events`` recorder: regarding (no related), note, action, reportingController and
    reportingInstance ``<controller>-<hostname>``, eventTime, no series yet, name ``<regarding>.<hex nanos>``."""
    monkeypatch.setattr(events.socket, "gethostname", lambda: "kuberay-operator-7d9f-abcde")
    monkeypatch.setattr(events.time, "time_ns", lambda: 1_700_000_000_250_000_000)
    sink = Sink(EVENTS)
    recorder = operator_recorder(sink)
    recorder.event(CLUSTER, "Normal", "CreatedHeadPod", "Create", "Created head Pod ns/p-head-x")
    asyncio.run(recorder.flush())

    [event] = sink.created
    assert event == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"p.{1_700_000_000_250_000_000:x}", "namespace": "ns"},
        "eventTime": "2023-11-14T22:13:20.250000Z",
        "reportingController": "raycluster-controller",
        "reportingInstance": "raycluster-controller-kuberay-operator-7d9f-abcde",
        "action": "Create",
        "reason": "CreatedHeadPod",
        "type": "Normal",
        "note": "Created head Pod ns/p-head-x",
        "regarding": {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "namespace": "ns",
            "name": "p",
            "uid": "u-1",
            "resourceVersion": "7",
        },
    }


def test_repeats_of_an_events_k8s_io_event_fold_into_a_series_whatever_their_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """client-go's broadcaster: a repeat is the same reference (resourceVersion too), type, reason and action; the
    first repeat writes series count 2 at once, later ones are counted and written when the series ends."""
    sink = Sink(EVENTS)
    recorder = operator_recorder(sink)
    clock = [1000.0]
    monkeypatch.setattr(events.time, "monotonic", lambda: clock[0])

    async def scenario() -> None:
        for worker in ("a", "b", "c", "d"):  # four workers made in one pass: one event, its note the first's
            recorder.event(CLUSTER, "Normal", "CreatedWorkerPod", "Create", f"Created worker Pod ns/p-{worker}")
            await recorder.flush()
        name = sink.created[0]["metadata"]["name"]
        assert [e["note"] for e in sink.created] == ["Created worker Pod ns/p-a"]
        assert [(n, p["series"]["count"]) for n, p in sink.patched] == [(name, 2)]
        assert sink.patched[0][1]["series"]["lastObservedTime"].endswith("Z")

        await recorder.finish_series()  # not ended yet: nothing written
        assert len(sink.patched) == 1
        clock[0] += events.SERIES_WINDOW + 1
        await recorder.finish_series()  # ended: the final count is written, and the series forgotten
        assert [(n, p["series"]["count"]) for n, p in sink.patched] == [(name, 2), (name, 4)]
        recorder.event(CLUSTER, "Normal", "CreatedWorkerPod", "Create", "Created worker Pod ns/p-e")
        await recorder.flush()
        assert len(sink.created) == 2  # a new event once the series is over

    asyncio.run(scenario())


def test_another_resource_version_action_or_reason_is_another_events_k8s_io_event() -> None:
    sink = Sink(EVENTS)
    recorder = operator_recorder(sink)
    newer = {**CLUSTER, "metadata": {**POD["metadata"], "resourceVersion": "8"}}
    recorder.event(CLUSTER, "Normal", "DeletedWorkerPod", "Delete", "Deleted pod ns/p-a")
    recorder.event(newer, "Normal", "DeletedWorkerPod", "Delete", "Deleted pod ns/p-b")  # the next pass
    recorder.event(newer, "Normal", "CreatedWorkerPod", "Create", "Created worker Pod ns/p-c")
    asyncio.run(recorder.flush())
    assert [(e["reason"], e["regarding"]["resourceVersion"]) for e in sink.created] == [
        ("DeletedWorkerPod", "7"),
        ("DeletedWorkerPod", "8"),
        ("CreatedWorkerPod", "8"),
    ]
    assert sink.patched == []


def test_a_series_whose_event_was_deleted_creates_it_again_with_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    sink = Sink(EVENTS)
    recorder = operator_recorder(sink)
    recorder.event(CLUSTER, "Warning", "FailedToCreateWorkerPod", "Create", "Failed to create worker Pod, quota")
    asyncio.run(recorder.flush())
    sink.gone.add(sink.created[0]["metadata"]["name"])
    recorder.event(CLUSTER, "Warning", "FailedToCreateWorkerPod", "Create", "Failed to create worker Pod, quota")
    asyncio.run(recorder.flush())
    first, again = sink.created
    assert again["metadata"]["name"] == first["metadata"]["name"] and again["series"]["count"] == 2
    assert {k: v for k, v in again.items() if k != "series"} == first


def test_an_operators_events_k8s_io_events_have_no_spam_filter() -> None:
    """client-go's events package drops nothing per object and reason (its series fold repeats); the record
    package's spam filter (25, then one per 5 minutes) stays with core/v1 Events."""
    sink = Sink(EVENTS)
    recorder = operator_recorder(sink)
    for i in range(events.SPAM_BURST + 5):
        version = {**CLUSTER, "metadata": {**POD["metadata"], "resourceVersion": str(i)}}
        recorder.event(version, "Warning", "FailedToCreateWorkerPod", "Create", "quota")
    asyncio.run(recorder.flush())
    assert len(sink.created) == events.SPAM_BURST + 5 and recorder.dropped == 0

    kubelet = kubelet_recorder(core := Sink())
    for i in range(events.SPAM_BURST + 5):
        kubelet.event(POD, "Warning", "BackOff", "", f"Back-off {i}")
    asyncio.run(kubelet.flush())
    assert len(core.created) == events.SPAM_BURST and kubelet.dropped == 5

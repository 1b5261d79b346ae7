"""--diagnose-after's decisions (raykube.runtime.diagnosis): what is not ready since when, what is due, what to record;
and one loop over a cache and a diagnoser that stand in for the informers and the doctor."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from benchmarks.scale import diagnosis_totals

from raykube.api import constants as c
from raykube.api.config import ConfigError, parse_flags
from raykube.api.resources import RAYCLUSTERS, RAYJOBS, RAYSERVICES
from raykube.kube.resources import PODS
from raykube.runtime.diagnosis import (
    MAX_PER_PASS,
    REASON,
    DiagnosisLoop,
    Memory,
    RootCause,
    Subject,
    due,
    interval_for,
    not_ready_since,
    subjects,
    to_record,
)
from raykube.runtime.metrics import Metrics

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 7, 12, 0, 0, tzinfo=UTC)
CREATED = "2026-12-07T11:50:00Z"
CREATED_AT = datetime(2026, 12, 7, 11, 50, 0, tzinfo=UTC)


def obj(name: str = "a", *, status: Mapping[str, Any] | None = None, spec: Mapping[str, Any] | None = None,
        **meta: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "creationTimestamp": CREATED, **meta},
        "spec": dict(spec or {}),
        "status": dict(status or {}),
    }


@pytest.mark.parametrize(
    ("kind", "item", "expected"),
    [
        # RayCluster: status.state; since the state's transition time, else creation.
        (c.KIND_RAYCLUSTER, obj(), CREATED_AT),
        (c.KIND_RAYCLUSTER, obj(status={"state": "ready"}), None),
        (c.KIND_RAYCLUSTER, obj(status={"state": "suspended"}), None),
        (c.KIND_RAYCLUSTER, obj(spec={"suspend": True}), None),
        (
            c.KIND_RAYCLUSTER,
            obj(status={"state": "failed", "stateTransitionTimes": {"failed": "2026-12-07T11:58:00Z"}}),
            datetime(2026, 12, 7, 11, 58, tzinfo=UTC),
        ),
        (c.KIND_RAYCLUSTER, obj(status={"state": "failed"}), CREATED_AT),
        (c.KIND_RAYCLUSTER, obj(deletionTimestamp="2026-12-07T11:59:00Z"), None),
        # RayJob: not yet running.
        (c.KIND_RAYJOB, obj(), CREATED_AT),
        (c.KIND_RAYJOB, obj(status={"jobDeploymentStatus": "Initializing"}), CREATED_AT),
        (c.KIND_RAYJOB, obj(status={"jobDeploymentStatus": "Waiting"}), CREATED_AT),
        (c.KIND_RAYJOB, obj(status={"jobDeploymentStatus": "Running"}), None),
        (c.KIND_RAYJOB, obj(status={"jobDeploymentStatus": "Complete"}), None),
        (c.KIND_RAYJOB, obj(status={"jobDeploymentStatus": "Failed"}), None),
        (c.KIND_RAYJOB, obj(spec={"suspend": True}), None),
        # RayService: its Ready condition.
        (c.KIND_RAYSERVICE, obj(), CREATED_AT),
        (c.KIND_RAYSERVICE, obj(status={"conditions": [{"type": "Ready", "status": "True"}]}), None),
        (
            c.KIND_RAYSERVICE,
            obj(
                status={
                    "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-07T11:55:00Z"}]
                }
            ),
            datetime(2026, 12, 7, 11, 55, tzinfo=UTC),
        ),
        (c.KIND_RAYSERVICE, obj(spec={"suspend": True}), None),
    ],
)
def test_not_ready_since(kind: str, item: dict[str, Any], expected: datetime | None) -> None:
    assert not_ready_since(kind, item) == expected


def pod(name: str, *, ready: bool, created: str = "2026-12-07T11:57:00Z", deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "creationTimestamp": created}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T11:59:00Z"
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {"metadata": meta, "status": {"conditions": [condition]}}


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([], None),
        ([pod("head", ready=True), pod("w1", ready=True)], None),
        # KubeRay keeps state ready after a scale-up the nodes cannot hold: the oldest not-Ready Pod says since when
        ([pod("head", ready=True), pod("w2", ready=False, created="2026-12-07T11:58:00Z"), pod("w3", ready=False)],
         datetime(2026, 12, 7, 11, 57, tzinfo=UTC)),
        ([pod("head", ready=True), pod("old", ready=False, deleting=True)], None),
    ],
)  # fmt: skip
def test_a_ready_cluster_is_not_ready_while_one_of_its_pods_is_not(
    pods: list[dict[str, Any]], expected: datetime | None
) -> None:
    assert not_ready_since(c.KIND_RAYCLUSTER, obj(status={"state": "ready"}), pods) == expected


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="RayCronJob"):
        not_ready_since(c.KIND_RAYCRONJOB, obj())


def subject(name: str, minutes: float) -> Subject:
    return Subject(c.KIND_RAYCLUSTER, "ns", name, f"uid-{name}", NOW - timedelta(minutes=minutes), obj(name))


def test_due_waits_for_after_then_takes_the_never_diagnosed_first_and_longest_not_ready_first() -> None:
    candidates = [subject("young", 0.5), subject("old", 10), subject("older", 20), subject("seen", 30)]
    memory = {"uid-seen": Memory(diagnosed_at=0.0)}
    chosen = due(candidates, memory, now=NOW, monotonic=100.0, after=60.0)
    assert [s.name for s in chosen] == ["older", "old", "seen"]


def test_due_diagnoses_each_object_at_most_once_per_after() -> None:
    memory = {"uid-a": Memory(diagnosed_at=50.0)}
    assert due([subject("a", 5)], memory, now=NOW, monotonic=100.0, after=60.0) == []
    assert [s.name for s in due([subject("a", 5)], memory, now=NOW, monotonic=110.0, after=60.0)] == ["a"]


def test_due_takes_at_most_the_limit() -> None:
    many = [subject(f"c{i:03d}", 5 + i) for i in range(3 * MAX_PER_PASS)]
    chosen = due(many, {}, now=NOW, monotonic=0.0, after=60.0)
    assert len(chosen) == MAX_PER_PASS
    assert chosen[0].name == f"c{3 * MAX_PER_PASS - 1:03d}"  # the longest not ready


CAUSE = RootCause("UNSCHEDULABLE_RESOURCES", "B02", "24 workers do not fit", "lower replicas")


@pytest.mark.parametrize(
    ("cause", "previous", "expected"),
    [
        (None, None, None),
        (CAUSE, None, CAUSE.message()),
        (CAUSE, Memory(0.0, CAUSE.key()), None),  # the same root cause: not again
        # the same rule with other counts in its title (more of the Pods made since): the same root cause
        (RootCause("UNSCHEDULABLE_RESOURCES", "B02", "12 workers do not fit", "x"), Memory(0.0, CAUSE.key()), None),
        (CAUSE, Memory(0.0, "OTHER (X)"), CAUSE.message()),  # changed: recorded
        (CAUSE, Memory(0.0, None), CAUSE.message()),  # diagnosed before, nothing found then
    ],
)
def test_to_record(cause: RootCause | None, previous: Memory | None, expected: str | None) -> None:
    assert to_record(cause, previous) == expected


def test_the_message_says_code_rule_title_and_fix() -> None:
    assert CAUSE.message() == "UNSCHEDULABLE_RESOURCES (B02): 24 workers do not fit. Fix: lower replicas"
    assert RootCause("X", "Y", "t").message() == "X (Y): t"


def test_interval_is_a_tenth_of_after_within_bounds() -> None:
    assert interval_for(1.0) == 2.0
    assert interval_for(60.0) == 6.0
    assert interval_for(3600.0) == 30.0


def test_subjects_keeps_only_the_not_ready() -> None:
    found = subjects(c.KIND_RAYCLUSTER, [obj("a"), obj("b", status={"state": "ready"})])
    assert [(s.name, s.since) for s in found] == [("a", CREATED_AT)]


# --- the flag ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "seconds"), [("90s", 90.0), ("2m", 120.0), ("1m30s", 90.0), ("0", 0.0)])
def test_the_flag_takes_a_go_duration(value: str, seconds: float) -> None:
    config = parse_flags([f"--diagnose-after={value}"])
    assert config is not None
    assert config.diagnose_after == seconds


def test_the_flag_is_off_by_default_and_kept_with_a_config_file(tmp_path: Any) -> None:
    config = parse_flags([])
    assert config is not None
    assert config.diagnose_after == 0.0
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n")
    config = parse_flags([f"--config={path}", "--diagnose-after=1m"])
    assert config is not None
    assert config.diagnose_after == 60.0


@pytest.mark.parametrize(("value", "words"), [("soon", "--diagnose-after must be a duration"), ("-1m", "negative")])
def test_a_bad_flag_names_it(value: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        parse_flags([f"--diagnose-after={value}"])


# --- one loop ----------------------------------------------------------------------------------------------------


class Informer:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    def list(self) -> list[dict[str, Any]]:
        return self.items


class Cache:
    def __init__(self, by_res: Mapping[Any, list[dict[str, Any]]]) -> None:
        self.by_res = by_res

    def informers(self, res: Any) -> list[Informer]:
        return [Informer(self.by_res.get(res, []))]

    def list(self, res: Any, namespace: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
        return [
            o
            for o in self.by_res.get(res, [])
            if o["metadata"].get("namespace") == namespace
            and all(o["metadata"].get("labels", {}).get(k) == v for k, v in labels.items())
        ]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str, str]] = []

    def event(self, regarding: Mapping[str, Any], type_: str, reason: str, action: str, note: str) -> None:
        self.events.append((str(regarding["kind"]), regarding["metadata"]["name"], type_, reason, note))


class Diagnoser:
    def __init__(self, causes: dict[str, RootCause | None]) -> None:
        self.causes = causes
        self.asked: list[str] = []

    async def root_cause(self, kind: str, namespace: str, name: str) -> RootCause | None:
        self.asked.append(name)
        cause = self.causes[name]
        if isinstance(cause, Exception):
            raise cause
        return cause


async def test_one_event_per_root_cause_again_only_when_it_changes_and_none_once_ready() -> None:
    cluster = obj("broken")
    running = obj("job", status={"jobDeploymentStatus": "Running"})
    items: dict[Any, list[dict[str, Any]]] = {RAYCLUSTERS: [cluster], RAYJOBS: [running], RAYSERVICES: [obj("svc")]}
    diagnoser = Diagnoser({"broken": CAUSE, "svc": None})
    recorder = Recorder()
    loop = DiagnosisLoop(Cache(items), diagnoser, recorder, after=60.0)  # type: ignore[arg-type]
    await loop.pass_once(now=NOW)
    assert sorted(diagnoser.asked) == ["broken", "svc"]  # the running RayJob is not asked about
    assert recorder.events == [(c.KIND_RAYCLUSTER, "broken", "Warning", REASON, CAUSE.message())]

    for memory in loop.memory.values():  # as if a whole --diagnose-after had passed
        memory.diagnosed_at -= 61.0
    await loop.pass_once(now=NOW)
    assert len(recorder.events) == 1  # the same root cause: not recorded again

    changed = RootCause("IMAGE_PULL", "F01", "the image does not exist", "fix the tag")
    diagnoser.causes["broken"] = changed
    for memory in loop.memory.values():
        memory.diagnosed_at -= 61.0
    await loop.pass_once(now=NOW)
    assert recorder.events[-1][-1] == changed.message()

    cluster["status"] = {"state": "ready"}
    worker = pod("broken-worker", ready=False)
    worker["metadata"]["labels"] = {c.RAY_CLUSTER_LABEL: "broken"}
    items[PODS] = [worker]
    for memory in loop.memory.values():
        memory.diagnosed_at -= 61.0
    await loop.pass_once(now=NOW)
    assert "uid-broken" in loop.memory  # state ready, a worker not Ready for 3 minutes: still diagnosed

    worker["status"]["conditions"][0]["status"] = "True"
    await loop.pass_once(now=NOW)
    assert "uid-broken" not in loop.memory  # forgotten once ready: a later breakage is told afresh
    assert loop.recorded == 2


async def test_the_loop_counts_its_passes_diagnoses_and_events() -> None:
    metrics = Metrics()
    items = {RAYCLUSTERS: [obj("a"), obj("b")]}
    loop = DiagnosisLoop(Cache(items), Diagnoser({"a": CAUSE, "b": None}), Recorder(), after=60.0, metrics=metrics)  # type: ignore[arg-type]
    await loop.pass_once(now=NOW)
    await loop.pass_once(now=NOW)  # nothing due again yet
    totals = diagnosis_totals(metrics.exposition().decode())
    assert totals == {"raykube_diagnosis_passes": 2, "raykube_diagnoses": 2, "raykube_root_cause_events": 1}


async def test_a_failing_diagnosis_is_logged_and_the_pass_goes_on() -> None:
    items = {RAYCLUSTERS: [obj("a"), obj("b")]}
    diagnoser = Diagnoser({"a": RuntimeError("the API server went away"), "b": CAUSE})  # type: ignore[dict-item]
    recorder = Recorder()
    loop = DiagnosisLoop(Cache(items), diagnoser, recorder, after=60.0)  # type: ignore[arg-type]
    await loop.pass_once(now=NOW)
    assert [e[1] for e in recorder.events] == ["b"]
    assert loop.diagnosed == 2


def test_the_loop_needs_a_positive_after() -> None:
    with pytest.raises(ValueError, match="positive"):
        DiagnosisLoop(Cache({}), Diagnoser({}), Recorder(), after=0.0)  # type: ignore[arg-type]

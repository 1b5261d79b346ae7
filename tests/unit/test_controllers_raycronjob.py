"""RayCronJob reconcile table tests on an in-memory API server with a settable clock (KubeRay v1.7.0's behaviour:
``raycronjob_controller.go`` and its unit tests InvalidSchedule, FirstSchedule, CreateRayJob, Suspend,
UpdateRayCronJobStatus, deterministic names, time zones)."""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RAYCRONJOBS, RAYJOBS
from raykube.builders import gowrites
from raykube.builders.options import BuildOptions
from raykube.controllers.base import Deps, Result
from raykube.controllers.raycronjob import RayCronJobReconciler, registration
from raykube.kube import objects, times
from raykube.kube.errors import ApiError
from raykube.kube.fake import FakeKube
from raykube.runtime.manager import default_registrations

NS, NAME = "team", "nightly"
CREATED = dt.datetime(2026, 12, 3, 12, 0, 20, tzinfo=dt.UTC)
GATE_ON = BuildOptions(features={**BuildOptions().features, c.GATE_RAY_CRON_JOB: True})


def _container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "rayproject/ray:2.52.0", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}}


def raycronjob(schedule: str = "* * * * *", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "uid": "cron-uid",
            "generation": 1,
            "labels": {"team": "a"},
            "creationTimestamp": times.format_time(CREATED),
        },
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "entrypoint": "python -c 'print(1)'",
                "shutdownAfterJobFinishes": True,
                "rayClusterSpec": {
                    "rayVersion": "2.52.0",
                    "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [_container("h")]}}},
                },
            },
            **spec,
        },
    }


@dataclass
class World:
    fake: FakeKube
    now: dt.datetime = CREATED

    def reconciler(self) -> RayCronJobReconciler:
        deps = Deps(self.fake.api, self.fake.cache, self.fake.recorder, GATE_ON, lambda: self.now)
        return RayCronJobReconciler(deps)

    async def reconcile(self) -> Result:
        return await self.reconciler().reconcile(NS, NAME)

    @property
    def cron(self) -> dict[str, Any]:
        found = self.fake.stored(RAYCRONJOBS, NS, NAME)
        assert found is not None
        return found

    @property
    def rayjobs(self) -> list[dict[str, Any]]:
        return self.fake.all(RAYJOBS, NS)


def new_world(cron: dict[str, Any] | None = None) -> World:
    return World(FakeKube([cron or raycronjob()], resources=(RAYCRONJOBS, RAYJOBS)))


async def test_before_the_first_tick_nothing_is_created_and_the_pass_comes_back_at_the_tick() -> None:
    world = new_world()
    assert await world.reconcile() == Result(40.0)  # 12:00:20 → 12:01:00
    assert world.rayjobs == []
    assert world.fake.writes == []


# 2026-12-03T12:01:00Z is Unix minute 29,938,321: KubeRay v1.7.0's getRayJobName.
TICK_NAME = f"{NAME}-29938321"


async def test_at_the_tick_one_rayjob_like_kuberays_and_last_schedule_time_is_the_tick() -> None:
    world = new_world()
    world.now = dt.datetime(2026, 12, 3, 12, 1, 2, tzinfo=dt.UTC)
    assert await world.reconcile() == Result(58.0)  # the tick after the tick: 12:02:00
    [job] = world.rayjobs
    meta = job["metadata"]
    assert meta["name"] == TICK_NAME
    assert meta["labels"] == {c.RAY_CRONJOB_NAME_LABEL: NAME}  # nothing else of the RayCronJob's labels
    assert meta["annotations"] == {c.RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: "2026-12-03T12:01:00Z"}
    assert meta["ownerReferences"] == [
        {"apiVersion": "ray.io/v1", "kind": "RayCronJob", "name": NAME, "uid": "cron-uid", "controller": True,
         "blockOwnerDeletion": True}
    ]  # fmt: skip
    # created from KubeRay's Go struct: the template's spec as Go writes it (template.metadata: {} ...)
    template = raycronjob()["spec"]["jobTemplate"]
    assert job["spec"] == gowrites.as_kuberay_writes("RayJob", {"spec": template})["spec"] != template
    # v1.7.0: the tick (v1.6.1 wrote now)
    assert world.cron["status"] == {"lastScheduleTime": "2026-12-03T12:01:00Z"}
    assert [str(w) for w in world.fake.writes] == [
        f"create rayjobs {NS}/{TICK_NAME}",
        f"update raycronjobs/status {NS}/{NAME}",
    ]


async def test_ticks_missed_while_down_are_made_up_one_rayjob_a_pass() -> None:
    world = new_world(raycronjob("*/30 * * * *"))
    world.now = dt.datetime(2026, 12, 3, 13, 40, 5, tzinfo=dt.UTC)  # ticks at 12:30, 13:00, 13:30 were missed
    assert await world.reconcile() == Result(0.0)  # the next tick (13:00) has passed too: again at once
    assert await world.reconcile() == Result(0.0)
    assert await world.reconcile() == Result(19 * 60 + 55.0)  # caught up: next at 14:00
    stamps = sorted(objects.annotations(j)[c.RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] for j in world.rayjobs)
    assert stamps == ["2026-12-03T12:30:00Z", "2026-12-03T13:00:00Z", "2026-12-03T13:30:00Z"]
    assert world.cron["status"] == {"lastScheduleTime": "2026-12-03T13:30:00Z"}


async def test_each_tick_makes_one_more_rayjob_and_nothing_limits_them() -> None:
    world = new_world(raycronjob("*/2 * * * *"))
    for minute in (2, 4, 6):
        world.now = dt.datetime(2026, 12, 3, 12, minute, 0, 300_000, tzinfo=dt.UTC)
        await world.reconcile()
    assert sorted(objects.name(j) for j in world.rayjobs) == [f"{NAME}-{29938320 + m}" for m in (2, 4, 6)]


async def test_suspended_creates_nothing_and_says_so_on_every_pass() -> None:
    world = new_world(raycronjob(suspend=True))
    world.now = dt.datetime(2026, 12, 3, 13, 0, 0, tzinfo=dt.UTC)
    assert await world.reconcile() == Result()
    assert await world.reconcile() == Result()
    assert world.rayjobs == []
    assert world.fake.reasons() == [c.EVENT_SUSPENDED_RAYCRONJOB] * 2
    assert world.fake.events[0].note == "RayCronJob suspended, no new RayJobs will be created"


@pytest.mark.parametrize(
    ("cron", "note"),
    [
        (raycronjob("61 * * * *"), "invalid cron schedule: end of range (61) above maximum (59): 61"),
        (raycronjob("CRON_TZ=Asia/Tokyo 0 21 * * *"), "cannot use TZ or CRON_TZ in schedule, use timeZone field "
                                                       "instead"),
        (
            raycronjob(jobTemplate={"entrypoint": "x", "shutdownAfterJobFinishes": False, "suspend": True,
                                    "rayClusterSpec": raycronjob()["spec"]["jobTemplate"]["rayClusterSpec"]}),
            "invalid RayJob template: The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false "
            "is not allowed to be suspended",
        ),
    ],
)  # fmt: skip
async def test_an_invalid_raycronjob_gets_a_warning_and_nothing_else(cron: dict[str, Any], note: str) -> None:
    world = new_world(cron)
    world.now = dt.datetime(2026, 12, 3, 13, 0, 0, tzinfo=dt.UTC)
    assert await world.reconcile() == Result()
    assert world.rayjobs == []
    assert world.fake.writes == []
    [event] = world.fake.events
    assert (event.type, event.reason, event.note) == (
        "Warning",
        c.EVENT_INVALID_RAYCRONJOB_SPEC,
        f"{NS}/{NAME}: {note}",
    )


async def test_a_status_write_that_fails_after_the_create_does_not_make_a_second_rayjob() -> None:
    world = new_world()
    world.now = dt.datetime(2026, 12, 3, 12, 1, 2, tzinfo=dt.UTC)
    world.fake.fail("update", RAYCRONJOBS, code=409, reason="Conflict", times=1)
    with pytest.raises(ApiError):
        await world.reconcile()
    assert len(world.rayjobs) == 1
    await world.reconcile()  # the runtime's retry: the same name, AlreadyExists, taken as made
    assert len(world.rayjobs) == 1
    assert world.cron["status"] == {"lastScheduleTime": "2026-12-03T12:01:00Z"}


async def test_the_time_zone_decides_the_tick() -> None:
    world = new_world(raycronjob("0 21 * * *", timeZone="Asia/Tokyo"))  # 21:00 in Tokyo is 12:00 UTC
    world.now = dt.datetime(2026, 12, 4, 12, 0, 1, tzinfo=dt.UTC)
    await world.reconcile()
    assert objects.annotations(world.rayjobs[0])[c.RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] == "2026-12-04T12:00:00Z"


async def test_a_deleted_or_terminating_raycronjob_is_left_alone() -> None:
    world = World(FakeKube([], resources=(RAYCRONJOBS, RAYJOBS)))
    assert await world.reconcile() == Result()
    cron = raycronjob()
    cron["metadata"] |= {"deletionTimestamp": times.format_time(CREATED), "finalizers": ["x"]}
    gone = new_world(copy.deepcopy(cron))
    gone.now = dt.datetime(2026, 12, 3, 13, 0, 0, tzinfo=dt.UTC)
    assert await gone.reconcile() == Result()
    assert gone.rayjobs == []


def test_the_controller_runs_only_with_its_gate() -> None:
    assert [r.name for r in default_registrations(BuildOptions())] == ["raycluster", "rayjob", "rayservice"]
    assert [r.name for r in default_registrations(GATE_ON)] == ["raycluster", "rayjob", "rayservice", "raycronjob"]
    reg = registration()
    assert (reg.recorder, reg.kind, [w.res for w in reg.owned]) == ("raycronjob-controller", RAYCRONJOBS, [])

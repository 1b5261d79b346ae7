"""RayCronJob on the real control plane (kwok nodes): raykube's controller behind KubeRay's ``RayCronJob`` gate makes a
RayJob at each tick, stops while suspended, and its RayJobs go with it (the garbage collector, through owner
references). The RayJobs' own Ray work is not the point here (``test_rayjob.py`` runs real Ray jobs)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RAYCRONJOBS, RAYJOBS
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.resources import EVENTS
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.support import operator_on

NAME = "every-few-seconds"
PAST_THE_NEXT_MINUTE = 150.0  # seconds: the next minute's first tick (<= 63 s) with room for a loaded machine


def raycronjob(**spec: Any) -> dict[str, Any]:
    container = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": NAME},
        "spec": {
            "schedule": "@every 3s",
            "jobTemplate": {
                "entrypoint": "python -c 'print(1)'",
                "shutdownAfterJobFinishes": True,
                "ttlSecondsAfterFinished": 600,
                "rayClusterSpec": {
                    "rayVersion": "2.52.0",
                    "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
                },
            },
            **spec,
        },
    }


@pytest.fixture
async def cron_operator(kubeconfig: Path, namespace: str, ray_crds: list[str]) -> AsyncIterator[Manager]:
    """The operator with ``--feature-gates=RayCronJob=true``, its client held to the operator's RBAC rules."""
    async with operator_on(kubeconfig, namespace, c.GATE_RAY_CRON_JOB, concurrency=2) as manager:
        yield manager


async def owned_rayjobs(kube: Kube, namespace: str, uid: str) -> list[Mapping[str, Any]]:
    listed = await kube.list(RAYJOBS, namespace)
    return [job for job in listed.items if objects.owned_by(job, uid)]


async def test_a_raycronjob_makes_rayjobs_on_schedule_stops_when_suspended_and_takes_them_along(
    cron_operator: Manager, runtime_kube: Kube, namespace: str
) -> None:
    kube = runtime_kube
    cron = await kube.create(RAYCRONJOBS, raycronjob(), namespace)
    uid = objects.uid(cron)

    async def two_rayjobs() -> list[Mapping[str, Any]] | NotYet:
        jobs = await owned_rayjobs(kube, namespace, uid)
        return jobs if len(jobs) >= 2 else NotYet(f"{len(jobs)} RayJobs so far")

    # A RayJob is named after its tick's minute (v1.7.0's getRayJobName), so the ticks of one minute make one RayJob:
    # the second needs the next minute, up to 60 s and a tick away, then a reconcile on a loaded machine.
    jobs = await wait_for(two_rayjobs, PAST_THE_NEXT_MINUTE, what="two RayJobs from the RayCronJob")
    for job in jobs:
        assert objects.name(job).startswith(f"{NAME}-")
        assert objects.labels(job)[c.RAY_CRONJOB_NAME_LABEL] == NAME
        assert c.RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION in objects.annotations(job)
        assert job["spec"]["entrypoint"] == "python -c 'print(1)'"
    stamps = {objects.annotations(j)[c.RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] for j in jobs}
    assert len(stamps) == len(jobs)  # one RayJob per tick
    assert (await kube.get(RAYCRONJOBS, NAME, namespace))["status"]["lastScheduleTime"]

    # Suspended: a SuspendedRayCronJob event, and the count stays where it is for several ticks.
    await kube.patch(RAYCRONJOBS, NAME, {"spec": {"suspend": True}}, namespace)

    async def suspended_event() -> bool | NotYet:
        events = await kube.list(EVENTS, namespace)
        found = any(e.get("reason") == c.EVENT_SUSPENDED_RAYCRONJOB for e in events.items)
        return True if found else NotYet("no SuspendedRayCronJob event yet")

    await wait_for(suspended_event, 30, what="the SuspendedRayCronJob event")
    frozen = len(await owned_rayjobs(kube, namespace, uid))

    async def still_frozen_after_three_ticks() -> bool | NotYet:
        now = len(await owned_rayjobs(kube, namespace, uid))
        assert now == frozen, f"{now - frozen} RayJobs created while suspended"
        return NotYet("watching for RayJobs while suspended")

    with pytest.raises(TimeoutError):
        await wait_for(still_frozen_after_three_ticks, 10, what="no RayJob while suspended", interval=1.0)

    # Resumed, then deleted: the garbage collector takes every RayJob it made.
    await kube.patch(RAYCRONJOBS, NAME, {"spec": {"suspend": False}}, namespace)

    async def more_rayjobs() -> bool | NotYet:
        now = len(await owned_rayjobs(kube, namespace, uid))
        return True if now > frozen else NotYet(f"{now} RayJobs")

    await wait_for(more_rayjobs, PAST_THE_NEXT_MINUTE, what="a RayJob after resuming")
    await kube.delete(RAYCRONJOBS, NAME, namespace, propagation="Foreground")

    async def all_gone() -> bool | NotYet:
        left = await owned_rayjobs(kube, namespace, uid)
        return True if not left else NotYet(f"{len(left)} RayJobs left")

    await wait_for(all_gone, 120, what="the RayCronJob's RayJobs to be garbage-collected")

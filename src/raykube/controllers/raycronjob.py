"""The RayCronJob reconciler: a RayJob at each tick of a cron schedule, as KubeRay v1.6.1 does (alpha, gated).

KubeRay's ``ray-operator/controllers/ray/raycronjob_controller.go``, re-implemented; the manager registers it only
with ``--feature-gates=RayCronJob=true``, as KubeRay does. A pass:

1. An invalid RayCronJob (``raykube.api.validation.raycronjob``: the schedule, the ``jobTemplate`` as a RayJob spec)
   gets a ``Warning InvalidRayCronJobSpec "<ns>/<name>: <error>"`` and nothing else; no retry until it changes.
2. ``spec.suspend`` gets ``Normal SuspendedRayCronJob`` (on every pass while suspended, as KubeRay) and nothing else.
3. The next tick after ``status.lastScheduleTime`` (or the creation time) is computed (:mod:`raykube.api.cron`). Still
   ahead: look again then. Passed: create the RayJob for it (:func:`raykube.builders.raycronjob.tick_rayjob`), set
   ``status.lastScheduleTime`` to *now* (KubeRay's choice, so ticks missed while the operator was down collapse into
   one RayJob), and look again at the tick after now.

There is no concurrency policy and no history limit (KubeRay v1.6.1 has none): each RayJob cleans up after itself
through its own ``shutdownAfterJobFinishes``/``deletionStrategy``, and deleting the RayCronJob deletes its RayJobs.

One thing raykube adds: before creating, it looks for a RayJob this RayCronJob already made for the same tick (the
``ray.io/cronjob-scheduled-timestamp`` annotation). KubeRay creates a second one when the status write after a create
fails (a conflict, an API server restart); raykube then only writes the status again.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api import cron
from raykube.api.resources import RAYCRONJOBS, RAYJOBS
from raykube.api.validation import validate_raycronjob
from raykube.builders import names
from raykube.builders.raycronjob import scheduled_timestamp, tick_rayjob
from raykube.controllers.base import Deps, Registration, Result
from raykube.kube import objects, times

log = logging.getLogger(__name__)

CONTROLLER = "raycronjob"  # controller-runtime's name for KubeRay's RayCronJob controller (metrics, work queue)

Obj = Mapping[str, Any]


def registration(options: object = None) -> Registration:
    """KubeRay ``RayCronJobReconciler.SetupWithManager``: ``For(RayCronJob)``, ``Owns(RayJob)``."""
    return (
        Registration.named(CONTROLLER, recorder=c.RAYCRONJOB_CONTROLLER_NAME)
        .for_(RAYCRONJOBS)
        .owns(RAYJOBS)
        .complete(RayCronJobReconciler)
    )


class RayCronJobReconciler:
    def __init__(self, deps: Deps, *, random: Callable[[], str] = names.random_suffix) -> None:
        self.api = deps.api
        self.cache = deps.cache
        self.recorder = deps.recorder
        self.options = deps.options
        self.clock = deps.clock
        self.random = random

    async def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.cache.get(RAYCRONJOBS, namespace, name)
        if obj is None or objects.terminating(obj):
            return Result()
        errors = validate_raycronjob(obj, features=self.options.features)
        if errors:
            note = f"{namespace}/{name}: {errors[0].message}"
            self.recorder.event(obj, c.EVENT_TYPE_WARNING, c.EVENT_INVALID_RAYCRONJOB_SPEC, "Validate", note)
            return Result()
        spec = obj.get("spec") or {}
        if spec.get("suspend"):
            self.recorder.event(
                obj,
                c.EVENT_TYPE_NORMAL,
                c.EVENT_SUSPENDED_RAYCRONJOB,
                "Suspend",
                "RayCronJob suspended, no new RayJobs will be created",
            )
            return Result()
        schedule = cron.parse(str(spec.get("schedule") or ""))
        zone = cron.load_location(str(spec["timeZone"])) if spec.get("timeZone") else None
        now = self.clock()
        status = obj.get("status") or {}
        earliest = times.parse_time(status.get("lastScheduleTime")) or times.parse_time(
            objects.meta(obj).get("creationTimestamp")
        )
        tick = schedule.next(earliest or now, zone)
        if tick is None:
            log.info("RayCronJob %s/%s: schedule %r never fires", namespace, name, spec.get("schedule"))
            return Result()
        if tick > now:
            return Result(_seconds(tick - now))
        if not self._made_for(obj, tick):
            rayjob = tick_rayjob(obj, tick=tick, suffix=self.random())
            await self.api.create(RAYJOBS, rayjob, namespace)
            log.info("RayCronJob %s/%s: created RayJob %s", namespace, name, objects.name(rayjob))
        await self._write_last_schedule_time(obj, now)
        following = schedule.next(now, zone)
        return Result(_seconds(following - now)) if following is not None else Result()

    def _made_for(self, obj: Obj, tick: dt.datetime) -> bool:
        """A RayJob of this RayCronJob for ``tick`` exists already (a pass that created it failed afterwards)."""
        stamp = scheduled_timestamp(tick)
        return any(
            objects.owned_by(job, objects.uid(obj))
            and objects.annotations(job).get(c.RAY_CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION) == stamp
            for job in self.cache.list(RAYJOBS, objects.namespace(obj), {c.RAY_CRONJOB_NAME_LABEL: objects.name(obj)})
        )

    async def _write_last_schedule_time(self, obj: Obj, now: dt.datetime) -> None:
        """KubeRay ``updateRayCronJobStatus``: ``Status().Update`` of the whole object (its resourceVersion guards
        against a concurrent change)."""
        stamp = times.format_time(now)
        if (obj.get("status") or {}).get("lastScheduleTime") == stamp:
            return
        body = {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "metadata": dict(objects.meta(obj)),
            "status": {**(obj.get("status") or {}), "lastScheduleTime": stamp},
        }
        await self.api.replace(RAYCRONJOBS, objects.name(obj), body, objects.namespace(obj), subresource="status")


def _seconds(delta: dt.timedelta) -> float:
    return max(delta.total_seconds(), 0.0)

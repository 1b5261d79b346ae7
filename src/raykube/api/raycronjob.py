"""RayCronJob (``ray.io/v1``, alpha in KubeRay behind the RayCronJob gate): a RayJob on a cron schedule."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from raykube.api.rayjob import RayJobSpec
from raykube.api.schema import RayModel, Schema, Time


class RayCronJobSpec(RayModel):
    job_template: RayJobSpec = Field(description="The RayJob to create at each tick.")
    schedule: str = Field(description="Five-field cron schedule (no TZ= or CRON_TZ= prefix; use timeZone).")
    time_zone: Annotated[str, Schema(minLength=1)] | None = Field(
        None, description="IANA time zone of the schedule; the operator's when empty."
    )
    suspend: bool | None = Field(None, description="Stop creating RayJobs until set back to false.")


class RayCronJobStatus(RayModel):
    last_schedule_time: Time | None = None

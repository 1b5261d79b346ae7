"""RayJob reconcile table tests on an in-memory API server and a scripted Ray dashboard.

A RayJob is driven through KubeRay v1.6.1's deployment states one pass at a time; where KubeRay's RayCluster
controller or the Job controller would act (the cluster becomes ready, the submitter Pod ends), the test sets that
state on the fake API server itself. What needs a real API server and real Ray is in
``tests/integration/test_rayjob.py``.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.dashboard import DashboardError, JobInfo
from raykube.api.resources import RAYCLUSTERS, RAYJOBS, RayCluster
from raykube.builders import gowrites, services
from raykube.builders.batch import Volcano as BatchVolcano
from raykube.builders.options import BuildOptions
from raykube.controllers.base import Deps, Result
from raykube.controllers.rayjob import REQUEUE, RayJobError, RayJobReconciler
from raykube.kube import objects, times
from raykube.kube.fake import FakeKube
from raykube.kube.resources import JOBS, PODS, SECRETS, SERVICES

NS, NAME = "team", "pi"
CLUSTER = f"{NAME}-abcde"
JOB_ID = f"{NAME}-abcde"
START = dt.datetime(2026, 12, 3, 12, 0, 0, tzinfo=dt.UTC)
RESOURCES = (RAYJOBS, RAYCLUSTERS, SERVICES, JOBS, PODS, SECRETS)


def _container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "rayproject/ray:2.52.0", "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}}


def rayjob(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": NAME, "namespace": NS, "uid": "job-uid", "generation": 1},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "submissionMode": "K8sJobMode",  # the CRD's defaults, as the API server stores them
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 0,
            "rayClusterSpec": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [_container("ray-head")]}}},
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": 1,
                        "minReplicas": 0,
                        "maxReplicas": 2,
                        "rayStartParams": {},
                        "template": {"spec": {"containers": [_container("ray-worker")]}},
                    }
                ],
            },
        },
    }
    body["spec"].update(spec)
    return {k: v for k, v in body.items() if v is not None}


@dataclass
class FakeDashboard:
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    submitted: list[Mapping[str, Any]] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    error: DashboardError | None = None

    async def get_job_info(self, job_id: str) -> JobInfo:
        if self.error is not None:
            raise self.error
        if job_id not in self.jobs:
            raise DashboardError(f"Job {job_id} does not exist on the cluster", status=404, not_found=True)
        return self.jobs[job_id]

    async def submit_job(self, request: Mapping[str, Any]) -> str:
        self.submitted.append(dict(request))
        job_id = str(request.get("submission_id"))
        self.jobs[job_id] = JobInfo(status="PENDING", submission_id=job_id)
        return job_id

    async def stop_job(self, job_id: str) -> None:
        self.stopped.append(job_id)


@dataclass
class FakeDashboards:
    dashboard: FakeDashboard = field(default_factory=FakeDashboard)
    urls: list[str] = field(default_factory=list)

    async def for_cluster(self, cluster: Mapping[str, Any], dashboard_url: str) -> FakeDashboard:
        self.urls.append(dashboard_url)
        return self.dashboard


@dataclass
class World:
    fake: FakeKube
    now: dt.datetime = START
    options: BuildOptions = field(default_factory=BuildOptions)
    dashboards: FakeDashboards = field(default_factory=FakeDashboards)

    @property
    def reconciler(self) -> RayJobReconciler:
        deps = Deps(self.fake.api, self.fake.cache, self.fake.recorder, self.options, lambda: self.now, self.dashboards)
        return RayJobReconciler(deps, random=lambda: "abcde")

    async def reconcile(self) -> Result:
        return await self.reconciler.reconcile(NS, NAME)

    async def until(self, state: str, passes: int = 10) -> None:
        for _ in range(passes):
            if self.state == state:
                return
            await self.reconcile()
        assert self.state == state, f"still {self.state!r} after {passes} passes"

    @property
    def job(self) -> dict[str, Any]:
        found = self.fake.stored(RAYJOBS, NS, NAME)
        assert found is not None
        return found

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.job.get("status") or {})

    @property
    def state(self) -> str:
        return str(self.status.get("jobDeploymentStatus") or "")

    @property
    def cluster(self) -> dict[str, Any] | None:
        return self.fake.stored(RAYCLUSTERS, NS, str(self.status.get("rayClusterName") or CLUSTER))

    def edit(self, **spec: Any) -> None:
        body = copy.deepcopy(self.job)
        body["spec"].update(spec)
        body["metadata"]["generation"] += 1
        self.fake.add(body, RAYJOBS)

    def cluster_ready(self) -> None:
        """What KubeRay's RayCluster controller would have done: the head Service, and status ``ready``."""
        cluster = self.cluster
        assert cluster is not None, "no RayCluster yet"
        model = RayCluster.model_validate(cluster)
        self.fake.add(services.head_service(model, self.options), SERVICES)
        self.fake.add({**cluster, "status": {"state": "ready", "readyWorkerReplicas": 1}}, RAYCLUSTERS)

    def job_info(self, status: str, *, message: str = "", ended: bool = True) -> None:
        end = int((self.now.timestamp()) * 1000) if ended else 0
        self.dashboards.dashboard.jobs[str(self.status.get("jobId"))] = JobInfo(
            status=status, message=message, start_time=int(START.timestamp() * 1000), end_time=end
        )

    def submitter_finished(self, *, failed: bool = False, reason: str = "BackoffLimitExceeded") -> None:
        job = self.fake.stored(JOBS, NS, NAME)
        assert job is not None, "no submitter Job yet"
        kind = "Failed" if failed else "Complete"
        cond = {"type": kind, "status": "True", "reason": reason if failed else "", "message": "m",
                "lastTransitionTime": times.format_time(self.now)}  # fmt: skip
        self.fake.add({**job, "status": {"conditions": [cond]}}, JOBS)

    def reasons(self) -> list[str]:
        return self.fake.reasons()


def new_world(job: dict[str, Any] | None = None, **kwargs: Any) -> World:
    return World(FakeKube([job or rayjob()], resources=RESOURCES), **kwargs)


async def running_world(job: dict[str, Any] | None = None, **kwargs: Any) -> World:
    """A RayJob whose cluster is ready and whose submitter Job exists: Running."""
    world = new_world(job, **kwargs)
    await world.until("Initializing")
    await world.reconcile()  # creates the cluster
    world.cluster_ready()
    await world.until("Running")
    return world


# ---------------------------------------------------------------------------------------------------- New


async def test_a_new_rayjob_gets_its_finalizer_ids_and_initializing_in_one_pass() -> None:
    world = new_world()
    assert await world.reconcile() == Result(REQUEUE)
    assert [str(w) for w in world.fake.writes] == [f"update rayjobs {NS}/{NAME}", f"update rayjobs/status {NS}/{NAME}"]
    assert objects.finalizers(world.job) == [c.RAYJOB_FINALIZER]
    status = world.status
    assert "jobStatus" not in status  # "" is omitempty in KubeRay's Go status
    assert status["rayJobInfo"] == {}  # a struct Go always writes
    assert (status["jobId"], status["rayClusterName"], status["jobDeploymentStatus"]) == (
        JOB_ID,
        CLUSTER,
        "Initializing",
    )
    assert status["startTime"] == "2026-12-03T12:00:00Z"
    assert (status["failed"], status["succeeded"]) == (0, 0)


def _as_go_writes(job: dict[str, Any]) -> dict[str, Any]:
    return gowrites.as_kuberay_writes("RayJob", job)


@pytest.mark.parametrize(
    ("stored", "generation", "spec_lacks", "spec_has"),
    [
        # read as a user applies it: Go adds template.metadata {}, resources {}, scaleStrategy {}: KubeRay's bumps
        (rayjob(), 2, (), (("rayClusterSpec", "workerGroupSpecs", 0, "scaleStrategy"),)),
        # false and "" omitempty fields go (the differential's shutdownAfterJobFinishes: false, jobId: "")
        (rayjob(shutdownAfterJobFinishes=False, jobId=""), 2, ("shutdownAfterJobFinishes", "jobId"), ()),
        # already as Go writes it (a RayJob KubeRay or raykube updated before): nothing changes, no bump
        (_as_go_writes(rayjob()), 1, (), ()),
        # a Pod field KubeRay v1.7.0's Go types lack (only a newer CRD stores one) is kept
        (
            rayjob(submitterPodTemplate={"spec": {"futureField": 1, "containers": [{"name": "s"}]}}),
            2,
            (),
            (("submitterPodTemplate", "spec", "futureField"), ("submitterPodTemplate", "metadata")),
        ),
    ],
    ids=["as-applied", "false-and-empty", "as-go-writes", "unknown-field-kept"],
)
async def test_the_finalizer_update_writes_the_spec_as_kuberays_go_object(
    stored: dict[str, Any], generation: int, spec_lacks: tuple[str, ...], spec_has: tuple[tuple[Any, ...], ...]
) -> None:
    """KubeRay adds its finalizer with an Update of the Go object: the spec as Go writes it, so the generation
    becomes 2 exactly when that changes the spec."""
    world = new_world(copy.deepcopy(stored))
    await world.reconcile()
    update = world.fake.writes_of("update", "rayjobs")[0]
    assert update.body["metadata"]["resourceVersion"]  # guarded by what was read, as KubeRay's Update
    job = world.job
    assert objects.finalizers(job) == [c.RAYJOB_FINALIZER]
    assert job["metadata"]["generation"] == generation
    assert job["spec"] == _as_go_writes({"spec": stored["spec"]})["spec"]
    for key in spec_lacks:
        assert key not in job["spec"]
    for path in spec_has:
        value: Any = job["spec"]
        for step in path:
            value = value[step]
    assert "status" in job and "jobStatus" not in job["status"]


async def test_the_cluster_of_a_rayjob_is_created_as_kuberays_go_struct_writes_it() -> None:
    """KubeRay creates the RayCluster from its Go struct: the structs Go always writes are in its spec."""
    world = new_world()
    await world.reconcile()
    await world.reconcile()
    cluster = world.cluster
    assert cluster is not None
    group = cluster["spec"]["workerGroupSpecs"][0]
    assert group["scaleStrategy"] == {}
    assert group["template"]["metadata"] == {}
    assert cluster["spec"]["headGroupSpec"]["template"]["metadata"] == {}
    created = world.fake.writes_of("create", "rayclusters")[0].body
    assert created["spec"] == gowrites.as_kuberay_writes("RayCluster", created)["spec"]


async def test_spec_job_id_is_the_submission_id() -> None:
    world = new_world(rayjob(jobId="my-id"))
    await world.reconcile()
    assert world.status["jobId"] == "my-id"


# ---------------------------------------------------------------------------------------------------- Initializing


async def test_initializing_creates_the_cluster_and_waits_for_it_to_be_ready() -> None:
    world = new_world()
    await world.reconcile()
    world.fake.writes.clear()
    assert await world.reconcile() == Result(REQUEUE)
    assert [str(w) for w in world.fake.writes] == [f"create rayclusters {NS}/{CLUSTER}"]
    assert world.reasons() == [c.EVENT_CREATED_RAYCLUSTER]
    cluster = world.cluster
    assert cluster is not None
    assert objects.labels(cluster)[c.RAY_ORIGINATED_FROM_CRD_LABEL] == "RayJob"
    world.fake.writes.clear()
    await world.reconcile()  # not ready: nothing changes, nothing is written
    assert world.fake.writes == []
    assert world.state == "Initializing"


async def test_a_cluster_status_that_differs_only_in_its_json_form_is_not_written_again() -> None:
    """KubeRay compares Go objects: the mirrored cluster status as stored (Go's form) against the cluster's as Go
    reads it. A condition without ``message`` and a time with a fraction are the same Go values as the stored
    ``message: ""`` and whole seconds, so nothing is written."""
    world = new_world()
    await world.reconcile()
    await world.reconcile()
    cluster = world.cluster
    assert cluster is not None
    condition = {"type": "HeadPodReady", "status": "False", "reason": "Unknown",
                 "lastTransitionTime": "2026-12-03T12:00:00.250Z"}  # fmt: skip
    world.fake.add({**cluster, "status": {"state": "", "conditions": [condition]}}, RAYCLUSTERS)
    await world.reconcile()
    mirrored = world.status["rayClusterStatus"]["conditions"]
    assert mirrored == [{**condition, "message": "", "lastTransitionTime": "2026-12-03T12:00:00Z"}]
    world.fake.writes.clear()
    await world.reconcile()
    assert world.fake.writes == []


async def test_a_ready_cluster_gives_the_dashboard_url_the_submitter_job_and_running() -> None:
    world = await running_world()
    status = world.status
    assert status["dashboardURL"] == f"{CLUSTER}-head-svc.{NS}.svc.cluster.local:8265"
    job = world.fake.stored(JOBS, NS, NAME)
    assert job is not None
    assert c.EVENT_CREATED_RAYJOB_SUBMITTER in world.reasons()


async def test_the_pre_running_deadline_fails_an_initializing_job() -> None:
    world = new_world(rayjob(preRunningDeadlineSeconds=30))
    await world.reconcile()
    world.now = START + dt.timedelta(seconds=31)
    await world.reconcile()
    status = world.status
    assert (status["jobDeploymentStatus"], status["reason"]) == ("Failed", "PreRunningDeadlineExceeded")
    assert status["message"] == (
        "The RayJob has passed the preRunningDeadlineSeconds. StartTime: 2026-12-03 12:00:00 +0000 UTC. "
        "PreRunningDeadlineSeconds: 30"
    )
    assert status["failed"] == 1
    assert status["endTime"] == "2026-12-03T12:00:31Z"


async def test_interactive_mode_waits_for_the_users_job_id() -> None:
    world = new_world(rayjob(submissionMode="InteractiveMode"))
    await world.reconcile()
    assert world.status.get("jobId", "") == ""
    await world.reconcile()
    world.cluster_ready()
    await world.until("Waiting")
    world.fake.writes.clear()
    assert await world.reconcile() == Result(REQUEUE)
    assert world.fake.writes == []  # waiting quietly
    world.edit(jobId="from-kubectl-ray")
    await world.reconcile()
    assert (world.state, world.status["jobId"]) == ("Running", "from-kubectl-ray")
    assert world.fake.stored(JOBS, NS, NAME) is None


# ---------------------------------------------------------------------------------------------------- Running


async def test_running_mirrors_the_ray_job_and_creates_the_rayjob_head_service() -> None:
    world = await running_world()
    world.job_info("RUNNING", ended=False)
    await world.reconcile()
    assert world.status["jobStatus"] == "RUNNING"
    svc = world.fake.stored(SERVICES, NS, f"{NAME}-head-svc")
    assert svc is not None
    assert svc["spec"]["selector"][c.RAY_CLUSTER_LABEL] == CLUSTER


async def test_a_succeeded_job_completes_once_the_submitter_has_finished() -> None:
    world = await running_world()
    world.job_info("SUCCEEDED")
    await world.reconcile()
    assert (world.state, world.status["jobStatus"]) == ("Running", "SUCCEEDED")  # the submitter is still following
    world.submitter_finished()
    await world.reconcile()
    status = world.status
    assert (status["jobDeploymentStatus"], status["succeeded"], status["failed"]) == ("Complete", 1, 0)
    assert status["endTime"] == "2026-12-03T12:00:00Z"
    assert status["rayJobInfo"]["startTime"] == "2026-12-03T12:00:00Z"


async def test_a_failed_job_fails_with_app_failed() -> None:
    world = await running_world()
    world.job_info("FAILED", message="Job entrypoint command failed with exit code 1")
    world.submitter_finished()
    await world.reconcile()
    status = world.status
    assert (status["jobDeploymentStatus"], status["reason"], status["failed"]) == ("Failed", "AppFailed", 1)
    assert status["message"] == "Job entrypoint command failed with exit code 1"


async def test_a_failed_submitter_job_is_a_submission_failure() -> None:
    world = await running_world()
    world.submitter_finished(failed=True)
    await world.reconcile()
    status = world.status
    assert (status["jobDeploymentStatus"], status["reason"]) == ("Failed", "SubmissionFailed")
    assert status["message"] == "Job submission has failed. Reason: BackoffLimitExceeded. Message: m"


async def test_a_submitter_that_finished_without_a_ray_job_is_app_failed() -> None:
    world = await running_world()
    world.submitter_finished()
    await world.reconcile()
    status = world.status
    assert (status["jobDeploymentStatus"], status["reason"]) == ("Failed", "AppFailed")
    assert status["message"] == "Submitter completed but Ray job not found in RayCluster."


async def test_a_job_not_yet_submitted_is_a_plain_requeue_in_k8s_job_mode() -> None:
    world = await running_world()  # v1.7.0 (v1.6.1 returned the error)
    world.fake.writes.clear()
    assert await world.reconcile() == Result(REQUEUE)
    assert world.fake.writes_of("update", "rayjobs/status") == []


async def test_failing_status_checks_start_a_timer_that_fails_the_job_without_a_retry() -> None:
    world = await running_world(rayjob(backoffLimit=2))
    world.dashboards.dashboard.error = DashboardError("connection refused", status=0)
    world.fake.writes.clear()
    assert await world.reconcile() == Result(REQUEUE)  # the first failure is written
    assert world.status["jobStatusCheckFailureStartTime"] == times.format_time(world.now)
    assert world.state == "Running" and len(world.fake.writes_of("update", "rayjobs/status")) == 1
    world.now += dt.timedelta(seconds=299)
    world.fake.writes.clear()
    assert await world.reconcile() == Result(REQUEUE)  # later failures only requeue
    assert world.fake.writes_of("update", "rayjobs/status") == []
    world.now += dt.timedelta(seconds=1)
    await world.reconcile()
    status = world.status
    assert (status["jobDeploymentStatus"], status["reason"]) == ("Failed", "JobStatusCheckTimeoutExceeded")
    started = times.parse_time(status["jobStatusCheckFailureStartTime"])
    assert started is not None
    assert status["message"] == (
        f"Job status checks have been failing since {started:%Y-%m-%d %H:%M:%S}; exceeded timeout of 300s"
    )
    assert status["failed"] == 1 and world.state == "Failed"  # not Retrying, as DeadlineExceeded


async def test_a_good_status_check_clears_the_timer() -> None:
    world = await running_world()
    world.dashboards.dashboard.error = DashboardError("connection refused", status=0)
    await world.reconcile()
    assert "jobStatusCheckFailureStartTime" in world.status
    world.dashboards.dashboard.error = None
    world.job_info("RUNNING", ended=False)
    await world.reconcile()
    assert "jobStatusCheckFailureStartTime" not in world.status


def test_the_status_check_timeout_is_read_as_kuberay_reads_it() -> None:
    for value, seconds in (("60", 60), ("0", 300), ("-5", 300), ("1.5", 300), ("", 300)):
        assert (
            BuildOptions.from_env({"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": value}).rayjob_status_check_timeout_seconds
            == seconds
        )


async def test_http_mode_submits_through_the_dashboard_without_a_status_write() -> None:
    world = await running_world(rayjob(submissionMode="HTTPMode", runtimeEnvYAML="pip: []"))
    assert world.fake.stored(JOBS, NS, NAME) is None
    world.fake.writes.clear()
    assert await world.reconcile() == Result(REQUEUE)
    [request] = world.dashboards.dashboard.submitted
    assert (request["submission_id"], request["entrypoint"]) == (JOB_ID, "python -c 'print(1)'")
    assert [w.verb for w in world.fake.writes if w.resource == "rayjobs/status"] == []
    world.job_info("SUCCEEDED")
    await world.reconcile()
    assert world.state == "Complete"  # HTTPMode does not wait for a submitter


async def test_the_active_deadline_fails_a_running_job_without_retrying_it() -> None:
    world = await running_world(rayjob(activeDeadlineSeconds=60, backoffLimit=2))
    world.now = START + dt.timedelta(seconds=61)
    await world.reconcile()
    status = world.status
    assert (status["jobDeploymentStatus"], status["reason"], status["failed"]) == ("Failed", "DeadlineExceeded", 1)


async def test_the_submitter_finished_timeout_forces_failed() -> None:
    world = await running_world()
    world.job_info("RUNNING", ended=False)
    world.submitter_finished()
    world.now += dt.timedelta(seconds=31)
    await world.reconcile()
    status = world.status
    assert (status["jobStatus"], status["jobDeploymentStatus"]) == ("FAILED", "Failed")
    assert status["reason"] == "JobDeploymentStatusTransitionGracePeriodExceeded"


# ---------------------------------------------------------------------------------------------------- retries


async def test_backoff_limit_retries_on_a_new_cluster_until_failed_counts_three() -> None:
    world = await running_world(rayjob(backoffLimit=2))
    clusters: list[str] = []
    for attempt in range(3):
        clusters.append(str(world.status["rayClusterName"]))
        world.job_info("FAILED")
        world.submitter_finished()
        await world.reconcile()
        if attempt < 2:
            assert world.state == "Retrying"
            await world.reconcile()  # deletes the cluster and the submitter Job
            assert c.EVENT_DELETED_RAYCLUSTER in world.reasons()
            world.fake.sync()
            await world.until("Initializing")
            await world.reconcile()
            world.cluster_ready()
            await world.until("Running")
    status = world.status
    assert (status["jobDeploymentStatus"], status["failed"]) == ("Failed", 3)
    assert len(clusters) == 3  # one cluster per attempt (KubeRay's names are random; fixed here)


# ---------------------------------------------------------------------------------------------------- suspend


async def test_suspend_while_initializing_then_resume() -> None:
    world = new_world(rayjob(suspend=True, shutdownAfterJobFinishes=True))
    await world.reconcile()
    await world.until("Suspended")
    assert world.fake.all(RAYCLUSTERS) == []  # Kueue's contract: no cluster while suspended
    assert await world.reconcile() == Result()
    world.edit(suspend=False)
    await world.reconcile()
    assert world.state == ""
    await world.reconcile()
    assert world.state == "Initializing"


async def test_suspend_while_running_deletes_the_cluster_and_the_submitter_first() -> None:
    world = await running_world(rayjob(shutdownAfterJobFinishes=True))
    world.edit(suspend=True)
    await world.reconcile()
    assert world.state == "Suspending"
    await world.reconcile()
    assert {c.EVENT_DELETED_RAYCLUSTER, c.EVENT_DELETED_RAYJOB_SUBMITTER} <= set(world.reasons())
    await world.reconcile()
    assert world.state == "Suspended"
    assert "rayClusterName" not in world.status  # "" is omitempty in KubeRay's Go status


# ---------------------------------------------------------------------------------------------------- finished


async def test_shutdown_after_finishing_deletes_the_cluster_after_the_ttl_and_keeps_the_submitter() -> None:
    world = await running_world(rayjob(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10))
    world.job_info("SUCCEEDED")
    world.submitter_finished()
    await world.reconcile()
    assert world.state == "Complete"
    result = await world.reconcile()
    assert result == Result(12.0)  # 10 s after endTime, plus KubeRay's 2 s
    world.now += dt.timedelta(seconds=10)
    await world.reconcile()
    assert world.cluster is None
    assert world.fake.stored(JOBS, NS, NAME) is not None


async def test_deletion_rules_run_the_strongest_due_rule() -> None:
    rules = [
        {"policy": "DeleteWorkers", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 30}},
    ]
    world = await running_world(rayjob(deletionStrategy={"deletionRules": rules}))
    world.job_info("SUCCEEDED")
    world.submitter_finished()
    await world.reconcile()
    assert await world.reconcile() == Result(32.0)
    cluster = world.cluster
    assert cluster is not None
    assert all(group.get("suspend") for group in cluster["spec"]["workerGroupSpecs"])
    world.now += dt.timedelta(seconds=30)
    await world.reconcile()
    assert world.cluster is None


async def test_cluster_selector_mode_runs_on_the_named_cluster_and_never_deletes_it() -> None:
    job = rayjob(clusterSelector={"ray.io/cluster": "shared"}, rayClusterSpec=None, shutdownAfterJobFinishes=False)
    world = new_world(job)
    await world.reconcile()
    assert world.status["rayClusterName"] == "shared"
    with pytest.raises(RayJobError, match="is not found"):
        await world.reconcile()
    assert world.reasons() == [c.EVENT_RAYCLUSTER_NOT_FOUND]


# ---------------------------------------------------------------------------------------------------- validation


async def test_an_invalid_rayjob_is_validation_failed_for_good() -> None:
    world = new_world(rayjob(suspend=True, shutdownAfterJobFinishes=False))
    assert await world.reconcile() == Result()
    status = world.status
    assert (status["jobDeploymentStatus"], status["reason"]) == ("ValidationFailed", "ValidationFailed")
    assert world.reasons() == [c.EVENT_INVALID_RAYJOB_SPEC]
    assert world.fake.events[0].note.startswith(f"{NS}/{NAME}: The RayJob spec is invalid")
    world.edit(suspend=False)
    assert await world.reconcile() == Result(REQUEUE)  # KubeRay: nothing leaves ValidationFailed
    assert world.state == "ValidationFailed"


# ---------------------------------------------------------------------------------------------------- deletion


async def test_deleting_a_running_rayjob_stops_the_ray_job_then_drops_the_finalizer() -> None:
    world = await running_world()
    world.job_info("RUNNING", ended=False)
    await world.reconcile()
    await world.fake.api.delete(RAYJOBS, NAME, NS)
    assert await world.reconcile() == Result(REQUEUE)
    assert world.dashboards.dashboard.stopped == [JOB_ID]
    assert world.fake.stored(RAYJOBS, NS, NAME) is None  # the finalizer held it until now


# ---------------------------------------------------------------------------------------------------- Volcano

VOLCANO = BatchVolcano.podgroup


def volcano_world(job: dict[str, Any]) -> World:
    options = BuildOptions(batch_scheduler=c.BATCH_SCHEDULER_VOLCANO)
    return World(FakeKube([job], resources=(*RESOURCES, VOLCANO)), options=options)


async def test_volcano_makes_the_rayjobs_podgroup_before_its_cluster_with_the_submitter_in_its_resources() -> None:
    job = rayjob()
    job["metadata"]["labels"] = {c.VOLCANO_QUEUE_NAME_LABEL: "q1"}
    world = volcano_world(job)
    await world.until("Initializing")
    await world.reconcile()
    creates = [w.resource for w in world.fake.writes_of("create")]
    assert creates[:2] == ["podgroups", "rayclusters"]
    podgroup = world.fake.stored(VOLCANO, NS, f"ray-{NAME}-pg")
    assert podgroup is not None
    assert podgroup["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    # head 1 CPU/2Gi + one worker 1 CPU/2Gi (limits: nothing requested) + the default submitter's 500m/200Mi requests;
    # minMember counts the cluster's Pods only (the submitter waits for the cluster).
    assert podgroup["spec"] == {"minMember": 2, "minResources": {"cpu": "2500m", "memory": "4296Mi"}, "queue": "q1"}
    cluster = world.cluster
    assert cluster is not None
    assert objects.annotations(cluster)[c.VOLCANO_GROUP_NAME_ANNOTATION] == f"ray-{NAME}-pg"


async def test_volcano_refuses_a_rayjob_on_an_existing_cluster_as_kuberay_does() -> None:
    world = volcano_world(rayjob(clusterSelector={"ray.io/cluster": "shared"}, rayClusterSpec=None))
    await world.reconcile()
    with pytest.raises(RayJobError, match="gang scheduling does not support RayJob team/pi referencing an existing"):
        await world.reconcile()


async def test_volcano_podgroup_is_emptied_once_the_finished_rayjobs_cluster_is_gone() -> None:
    world = volcano_world(rayjob(shutdownAfterJobFinishes=True))
    await world.until("Initializing")
    await world.reconcile()
    world.cluster_ready()
    await world.until("Running")
    world.job_info("SUCCEEDED")
    world.submitter_finished()
    await world.reconcile()
    assert world.state == "Complete"
    await world.reconcile()  # ttl 0: the cluster is deleted, the PodGroup resized to nothing
    assert world.cluster is None
    podgroup = world.fake.stored(VOLCANO, NS, f"ray-{NAME}-pg")
    assert podgroup is not None
    assert podgroup["spec"]["minMember"] == 0
    assert podgroup["spec"]["minResources"] == {}
    assert c.EVENT_BATCH_SCHEDULER_CLEANED_UP in world.reasons()
    events = len(world.reasons())
    await world.reconcile()  # nothing left to change: no write, no event
    assert len(world.reasons()) == events


async def test_volcano_podgroup_is_emptied_when_suspending_before_the_reset() -> None:
    """KubeRay v1.7.0 (RJ-5): Suspending cleans up the batch scheduler once the cluster and the submitter are gone;
    a failed clean-up fails the pass (Warning FailedToCleanupBatchScheduler, action Cleanup) and holds the reset."""
    world = volcano_world(rayjob(shutdownAfterJobFinishes=True))
    await world.until("Initializing")
    await world.reconcile()
    world.cluster_ready()
    await world.until("Running")
    podgroup = world.fake.stored(VOLCANO, NS, f"ray-{NAME}-pg")
    assert podgroup is not None and podgroup["spec"]["minMember"] == 2
    world.edit(suspend=True)
    await world.reconcile()
    assert world.state == "Suspending"
    await world.reconcile()  # deletes the cluster and the submitter Job
    assert world.cluster is None
    world.fake.fail("update", VOLCANO, times=1)
    with pytest.raises(RayJobError, match=r"^failed to cleanup batch scheduler resources: "):
        await world.reconcile()
    assert world.state == "Suspending"  # not reset while the reservation stands
    (failed,) = [e for e in world.fake.events if e.reason == c.EVENT_FAILED_TO_CLEANUP_BATCH_SCHEDULER]
    assert (failed.type, failed.action) == ("Warning", "Cleanup")
    assert failed.note.startswith(f"Failed to cleanup batch scheduler resources for RayJob {NS}/{NAME}: ")
    await world.reconcile()
    assert world.state == "Suspended"
    podgroup = world.fake.stored(VOLCANO, NS, f"ray-{NAME}-pg")
    assert podgroup is not None
    assert (podgroup["spec"]["minMember"], podgroup["spec"]["minResources"]) == (0, {})
    (cleaned,) = [e for e in world.fake.events if e.reason == c.EVENT_BATCH_SCHEDULER_CLEANED_UP]
    assert (cleaned.type, cleaned.action, cleaned.note) == (
        "Normal",
        "Cleanup",
        f"Cleaned up batch scheduler resources for RayJob {NS}/{NAME}",
    )


async def test_volcano_cleanup_failure_after_the_job_ended_is_only_logged() -> None:
    """KubeRay v1.7.0 (RJ-5): in Complete/Failed the clean-up is deferred and log-only: the pass still ends as the
    deletion strategy says, and the next pass tries again."""
    world = volcano_world(rayjob(shutdownAfterJobFinishes=True))
    await world.until("Initializing")
    await world.reconcile()
    world.cluster_ready()
    await world.until("Running")
    world.job_info("SUCCEEDED")
    world.submitter_finished()
    await world.reconcile()
    assert world.state == "Complete"
    world.fake.fail("update", VOLCANO, times=1)
    assert await world.reconcile() == Result()  # ttl 0: the cluster is deleted; the failed clean-up does not raise
    assert world.cluster is None
    assert c.EVENT_FAILED_TO_CLEANUP_BATCH_SCHEDULER in world.reasons()
    await world.reconcile()
    podgroup = world.fake.stored(VOLCANO, NS, f"ray-{NAME}-pg")
    assert podgroup is not None
    assert podgroup["spec"]["minMember"] == 0


# ---------------------------------------------------------------------------------------------------- SidecarMode

RESTART_GATE = BuildOptions(features={**c.FEATURE_GATE_DEFAULTS, c.GATE_SIDECAR_SUBMITTER_RESTART: True})


def _terminated(code: int) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                           "finishedAt": times.format_time(START)}}  # fmt: skip


async def sidecar_world(options: BuildOptions, submitter: dict[str, Any]) -> World:
    """A Running SidecarMode RayJob whose Ray job is RUNNING and whose head Pod's submitter has ``submitter`` status."""
    world = new_world(rayjob(submissionMode="SidecarMode"), options=options)
    await world.until("Initializing")
    await world.reconcile()
    world.cluster_ready()
    await world.until("Running")
    world.job_info("RUNNING", ended=False)
    head = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{CLUSTER}-head", "namespace": NS,
                     "labels": {c.RAY_CLUSTER_LABEL: CLUSTER, c.RAY_NODE_TYPE_LABEL: "head"}},
        "status": {"containerStatuses": [{"name": "ray-head", "state": {"running": {}}, "restartCount": 0},
                                         {"name": "ray-job-submitter", **submitter}]},
    }  # fmt: skip
    world.fake.add(head, PODS)
    return world


RESTARTS_EXHAUSTED = (
    "Ray head pod submitter container ray-job-submitter terminated after exceeding the maximum restart count"
)


@pytest.mark.parametrize(
    ("options", "submitter", "outcome"),
    [
        # Gate off: a failed exit fails the RayJob at once (v1.6.1's rule, kept).
        (BuildOptions(), {"state": _terminated(1), "restartCount": 0},
         ("Failed", "SubmissionFailed", "Ray head pod container ray-job-submitter terminated with exit code 1: Error")),
        (BuildOptions(), {"state": {"running": {}}, "lastState": _terminated(1), "restartCount": 5},
         ("Running", "", "")),
        # Gate on (RJ-6): a failed exit is a restart; only reaching backoffLimit (2 without submitterConfig) fails.
        (RESTART_GATE, {"state": _terminated(1), "restartCount": 0}, ("Running", "", "")),
        (RESTART_GATE, {"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": _terminated(1),
                        "restartCount": 1}, ("Running", "", "")),
        (RESTART_GATE, {"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": _terminated(1),
                        "restartCount": 2}, ("Failed", "SubmissionFailed", RESTARTS_EXHAUSTED)),
        (RESTART_GATE, {"state": {"running": {}}, "lastState": _terminated(1), "restartCount": 3},
         ("Failed", "SubmissionFailed", RESTARTS_EXHAUSTED)),
        (RESTART_GATE, {"state": _terminated(0), "lastState": _terminated(1), "restartCount": 2},
         ("Running", "", "")),
    ],
)  # fmt: skip
async def test_sidecar_submitter_failures_with_and_without_sidecar_submitter_restart(
    options: BuildOptions, submitter: dict[str, Any], outcome: tuple[str, str, str]
) -> None:
    """KubeRay v1.7.0 ``checkSubmitterAndUpdateStatusIfNeeded`` in SidecarMode: ``checkSidecarContainerStatus``
    without the gate, ``checkIsRestartCountExceeded`` with it."""
    world = await sidecar_world(options, submitter)
    await world.reconcile()
    status = world.status
    assert (world.state, status.get("reason", ""), status.get("message", "")) == outcome


async def test_sidecar_submitter_out_of_restarts_after_the_ray_job_failed_is_an_app_failure() -> None:
    world = await sidecar_world(RESTART_GATE, {"state": {"running": {}}, "restartCount": 0})
    world.job_info("FAILED", message="boom", ended=False)
    await world.reconcile()  # the Ray job's FAILED status is recorded (the submitter has not ended yet)
    assert (world.state, world.status["jobStatus"]) == ("Running", "FAILED")
    pod = world.fake.stored(PODS, NS, f"{CLUSTER}-head")
    assert pod is not None
    pod["status"]["containerStatuses"][1].update(lastState=_terminated(1), restartCount=2)
    world.fake.add(pod, PODS)
    await world.reconcile()
    assert (world.state, world.status["reason"]) == ("Failed", "AppFailed")

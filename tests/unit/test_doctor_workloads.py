"""The doctor on RayJobs and RayServices: their own findings, and the RayCluster's root cause named first in their
section when the cluster they run on is what is wrong."""

from __future__ import annotations

from typing import Any

import yaml

from raykube.api import constants as c
from raykube.doctor import snapshot as s
from raykube.doctor.inside import failed_submitter_pods
from raykube.doctor.model import Report
from raykube.doctor.render import render_json, render_text, to_json
from raykube.doctor.run import Options, diagnose
from raykube.kube import objects
from tests.doctor_support import assert_fires, assert_quiet, findings_by_rule, one_finding
from tests.unit.test_doctor_rules import NS, World, _pending, roots, seed_spec

EARLIER = "2026-01-01T11:40:00Z"  # 20 minutes before the snapshot (NOW in test_doctor_rules)


def rayjob(name: str = "train", cluster: str = "seed", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {"entrypoint": "python train.py", "shutdownAfterJobFinishes": True},
        "status": {"rayClusterName": cluster, "jobDeploymentStatus": "Initializing", "startTime": EARLIER, **status},
    }


def rayservice(name: str = "serve", *, active: str = "", pending: str = "", **extra: Any) -> dict[str, Any]:
    status: dict[str, Any] = {
        "activeServiceStatus": {"rayClusterName": active} if active else {},
        "pendingServiceStatus": {"rayClusterName": pending} if pending else {},
        **extra,
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
        "spec": {"serveConfigV2": "applications: []", "rayClusterConfig": seed_spec()["spec"]},
        "status": status,
    }


def ready_condition(status: str, reason: str, message: str = "", since: str = EARLIER) -> dict[str, Any]:
    return {"type": "Ready", "status": status, "reason": reason, "message": message, "lastTransitionTime": since}


def run(world: World, *workloads: tuple[str, str]) -> Report:
    snap = world.snapshot(targets=(), workloads=tuple((kind, NS, name) for kind, name in workloads))
    return diagnose(snap, Options())


def test_a_rayjob_waiting_for_a_cluster_whose_workers_cannot_be_scheduled_names_that_root_cause_first() -> None:
    world = World()
    _pending(world, world.pods("worker"), "0/3 nodes are available: 3 Insufficient memory.")
    world.add("rayjobs", rayjob(spec_deadline := "train"))
    world.objects["rayjobs"][0]["spec"]["activeDeadlineSeconds"] = 1230
    report = run(world, ("RayJob", spec_deadline))
    assert [(t.kind, t.name) for t in report.targets] == [("RayJob", "train"), ("RayCluster", "seed")]
    waiting = one_finding(report, "J03")
    assert waiting.severity == "error"  # 20 minutes, and the deadline 30 s away
    assert "activeDeadlineSeconds 1230: 30s left" in waiting.title
    assert_fires(roots(report), "B02")
    assert [r.rule for r in roots(report)] == ["B02"]
    text = render_text(report)
    job_section = text.split("RayJob ml/train:", 1)[1].split("RayCluster ml/seed:", 1)[0]
    assert "Root cause (in what it runs on)" in job_section and "in RayCluster ml/seed" in job_section
    assert job_section.index("UNSCHEDULABLE_RESOURCES") < job_section.index("RAYJOB_WAITING_FOR_CLUSTER")
    target = next(t for t in to_json(report)["targets"] if t["kind"] == "RayJob")
    assert target["rootCauses"] == [next(f.id for f in report.findings if f.rule == "B02")]
    assert "Summary: 1 RayJob, 1 RayCluster checked" in text
    assert report.exit_code() == 1


def test_a_rayjob_on_a_ready_cluster_with_a_failing_submitter() -> None:
    world = World()
    world.add("rayjobs", rayjob(jobDeploymentStatus="Running", jobStatus="RUNNING"))
    world.add("jobs", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": NS},
                       "spec": {"backoffLimit": 2}, "status": {"failed": 3, "conditions": [
                           {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                            "message": "Job has reached the specified backoff limit"}]}})  # fmt: skip
    report = run(world, ("RayJob", "train"))
    submitter = one_finding(report, "J04")
    assert submitter.title == "The submitter Job train has 3 failed Pod(s) and gave up"
    assert "kubectl -n ml logs job/train" in submitter.remediation[0]
    assert_quiet(report, "J03")  # its cluster is ready


def test_rayjob_dead_ends_and_failures_say_what_kuberay_does_and_what_to_do() -> None:
    world = World()
    world.add("rayjobs", rayjob("bad", jobDeploymentStatus="ValidationFailed", reason="ValidationFailed",
                                message="The RayJob spec is invalid: entrypoint must be set"))  # fmt: skip
    world.add("rayjobs", rayjob("late", cluster="gone", jobDeploymentStatus="Failed", reason="DeadlineExceeded",
                                message="The RayJob has passed the activeDeadlineSeconds."))  # fmt: skip
    world.add("rayjobs", rayjob("elsewhere", cluster="nope"))
    world.objects["rayjobs"][-1]["spec"]["clusterSelector"] = {c.RAY_CLUSTER_LABEL: "nope"}
    report = run(world, ("RayJob", "bad"), ("RayJob", "late"), ("RayJob", "elsewhere"))
    by_rule = findings_by_rule(report, "J01", "J02", "J03", "J05", "J06")
    assert "entrypoint must be set" in by_rule["J01"].title
    assert "delete the RayJob and create it again" in by_rule["J01"].remediation[0]
    assert by_rule["J05"].title == "The RayJob failed: DeadlineExceeded"
    assert "activeDeadlineSeconds" in by_rule["J05"].remediation[0]
    assert by_rule["J06"].severity == "info" and "gone (spec.shutdownAfterJobFinishes)" in by_rule["J06"].title
    assert by_rule["J02"].title == "spec.clusterSelector names RayCluster nope, which does not exist"
    waiting = by_rule["J03"]
    assert waiting.caused_by == [by_rule["J02"].id]  # the missing cluster explains the wait


def test_a_rayservice_whose_pending_cluster_cannot_start_and_a_failed_serve_application() -> None:
    world = World(seed_spec("serve-abcde"), seed_spec("serve-fghij"))
    pending_workers = [p for p in world.pods("worker") if p["metadata"]["labels"][c.RAY_CLUSTER_LABEL] == "serve-fghij"]
    _pending(world, pending_workers, "0/3 nodes are available: 3 Insufficient cpu.")
    world.objects["rayclusters"][0]["status"]["state"] = "ready"  # _pending unreadies the first cluster: undo
    world.one("rayclusters", "serve-fghij")["status"]["state"] = ""
    frames = '  File "build.py", line 9, in build\n    import_attr(path)\n' * 20
    traceback = f"Deploying app 'fruit' failed with exception:\nTraceback (most recent call last):\n{frames}"
    traceback += "ModuleNotFoundError: No module named 'fruit'\n"
    apps = {
        "fruit": {
            "status": "DEPLOY_FAILED",
            "message": traceback,
            "serveDeploymentStatuses": {"Mango": {"status": "UNHEALTHY", "message": "replica crashed"}},
        }
    }
    service = rayservice(active="serve-abcde", pending="serve-fghij", conditions=[
        ready_condition("True", "NonZeroServeEndpoints"),
        {"type": "UpgradeInProgress", "status": "True", "reason": "BothActivePendingClustersExist",
         "lastTransitionTime": EARLIER}])  # fmt: skip
    service["status"]["activeServiceStatus"]["applicationStatuses"] = apps
    world.add("rayservices", service)
    report = run(world, ("RayService", "serve"))
    assert [(t.kind, t.name) for t in report.targets] == [
        ("RayService", "serve"), ("RayCluster", "serve-abcde"), ("RayCluster", "serve-fghij")]  # fmt: skip
    by_rule = findings_by_rule(report, "S05", "S03")
    stuck = by_rule["S05"]
    assert stuck.severity == "error"
    assert stuck.title.startswith("Pending RayCluster serve-fghij is no state yet after 20m: its upgrade is stuck")
    assert by_rule["S03"].title == "Serve application fruit is DEPLOY_FAILED on RayCluster serve-abcde"
    assert any(
        e.value == "ModuleNotFoundError: No module named 'fruit' (the last line of a 43-line traceback)"
        for e in by_rule["S03"].evidence
    ), by_rule["S03"].evidence
    assert any("replica crashed" in str(e.value) for e in by_rule["S03"].evidence)
    section = render_text(report).split("RayService ml/serve:", 1)[1].split("RayCluster ml/serve-abcde:", 1)[0]
    assert "in RayCluster ml/serve-fghij" in section and "UNSCHEDULABLE_RESOURCES" in section


def test_s03_a_serve_application_whose_runtime_env_cannot_be_installed_says_so_with_its_runtime_env() -> None:
    """ray-project/ray#26209, ray-project/kuberay#2072: the application's working_dir cannot be downloaded."""
    world = World(seed_spec("serve-abcde"))
    service = rayservice(active="serve-abcde", conditions=[ready_condition("True", "NonZeroServeEndpoints")])
    config = {"applications": [{"name": "fruit", "import_path": "fruit:app",
                                "runtime_env": {"working_dir": "https://example.invalid/fruit.zip"}}]}  # fmt: skip
    service["spec"]["serveConfigV2"] = yaml.safe_dump(config)
    message = (
        "Deploying app 'fruit' failed with exception:\nray.exceptions.RuntimeEnvSetupError: Failed to set up "
        "runtime environment.\nFailed to download https://example.invalid/fruit.zip"
    )
    service["status"]["activeServiceStatus"]["applicationStatuses"] = {
        "fruit": {"status": "DEPLOY_FAILED", "message": message}
    }
    world.add("rayservices", service)
    found = findings_by_rule(run(world, ("RayService", "serve")), "S03")["S03"]
    assert found.title.endswith("on RayCluster serve-abcde: its runtime_env could not be installed"), found.title
    assert {"working_dir": "https://example.invalid/fruit.zip"} in [e.value for e in found.evidence], found.evidence
    # Near miss: the same application failing on its import path is the plain S03.
    service["status"]["activeServiceStatus"]["applicationStatuses"]["fruit"]["message"] = "ModuleNotFoundError: fruit"
    found = findings_by_rule(run(world, ("RayService", "serve")), "S03")["S03"]
    assert found.title == "Serve application fruit is DEPLOY_FAILED on RayCluster serve-abcde", found.title


def test_rayservice_terminal_timeout_validation_and_zero_endpoints() -> None:
    world = World(seed_spec("live-abcde"))
    world.add(
        "rayservices",
        rayservice(
            "late",
            conditions=[
                ready_condition(
                    "False",
                    "InitializingTimeout",
                    "RayService failed to become ready within the configured timeout of 10s",
                )
            ],
        ),
    )
    world.objects["rayservices"][-1]["metadata"]["annotations"] = {"ray.io/initializing-timeout": "10s"}
    world.add(
        "rayservices",
        rayservice(
            "bad",
            conditions=[
                ready_condition("False", "ValidationFailed", "RayService name should be no more than 40 characters")
            ],
        ),
    )
    world.add("rayservices", rayservice("quiet", active="live-abcde", numServeEndpoints=0,
                                        conditions=[ready_condition("False", "ZeroServeEndpoints")]))  # fmt: skip
    report = run(world, ("RayService", "late"), ("RayService", "bad"), ("RayService", "quiet"))
    by_rule = findings_by_rule(report, "S01", "S02", "S04")
    assert "delete the RayService and create it again" in by_rule["S02"].remediation[0]
    assert any(e.path == "metadata.annotations[ray.io/initializing-timeout]" for e in by_rule["S02"].evidence)
    assert "no more than 40 characters" in by_rule["S01"].title
    quiet = by_rule["S04"]
    assert quiet.title == "quiet-serve-svc has no ready endpoint: requests to it fail"
    assert any(e.path == "metadata.labels[ray.io/serve]" and e.value == "(unset)" for e in quiet.evidence)
    assert render_json(report)  # and the JSON renders


def test_a_missing_workload_target_is_reported_and_makes_the_run_incomplete() -> None:
    world = World()
    report = run(world, ("RayJob", "absent"))
    assert [(m.kind, m.name) for m in report.missing_targets] == [("RayJob", "absent")]
    assert "RayJob ml/absent not found" in render_text(report)
    assert report.exit_code() == 3


def test_all_includes_every_rayjob_and_rayservice_and_their_clusters_once() -> None:
    world = World()
    world.add("rayjobs", rayjob(jobDeploymentStatus="Running"))
    report = diagnose(world.snapshot(), Options())  # --all: targets and workloads None
    assert [(t.kind, t.name) for t in report.targets] == [("RayJob", "train"), ("RayCluster", "seed")]
    assert s.workload_cluster_names(world.objects["rayjobs"][0]) == ["seed"]


def raycronjob(name: str = "nightly", *, schedule: str = "*/5 * * * *", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "creationTimestamp": EARLIER},
        "spec": {"schedule": schedule, "jobTemplate": {"entrypoint": "python nightly.py",
                                                       "rayClusterSpec": seed_spec()["spec"]}},
        "status": status,
    }  # fmt: skip


def _cron_world(*, gate: bool = True) -> World:
    world = World()
    world.objects["deployments"].clear()
    world.add_operator(args=["--feature-gates=RayCronJob=true"] if gate else [])
    return world


def test_a_raycronjob_target_checks_the_cron_and_its_newest_rayjobs() -> None:
    world = _cron_world()
    world.add("raycronjobs", raycronjob(lastScheduleTime="2026-01-01T11:59:00Z"))
    for index, stamp in enumerate(["2026-01-01T11:45:00Z", "2026-01-01T11:50:00Z", "2026-01-01T11:55:00Z",
                                   "2026-01-01T11:59:00Z"]):  # fmt: skip
        job = rayjob(f"nightly-{index}", jobDeploymentStatus="Complete", jobStatus="SUCCEEDED")
        job["metadata"].update(labels={c.RAY_CRONJOB_NAME_LABEL: "nightly"}, creationTimestamp=stamp)
        world.add("rayjobs", job)
    report = run(world, ("RayCronJob", "nightly"))
    names = [(t.kind, t.name) for t in report.targets]
    assert names[0] == ("RayCronJob", "nightly")
    assert [n for k, n in names if k == "RayJob"] == ["nightly-1", "nightly-2", "nightly-3"]  # the newest 3
    assert not [f for f in report.findings if f.rule.startswith("K")], render_text(report)


def test_raycronjob_gate_off_invalid_suspended_and_a_missed_tick() -> None:
    world = _cron_world(gate=False)
    world.add("raycronjobs", raycronjob())
    gate = one_finding(run(world, ("RayCronJob", "nightly")), "K02")
    assert "feature gate RayCronJob is off" in gate.title and gate.severity == "error"

    world = _cron_world()
    world.add("raycronjobs", raycronjob(schedule="61 * * * *"))
    invalid = one_finding(run(world, ("RayCronJob", "nightly")), "K01")
    assert "schedule" in invalid.title.lower() or "schedule" in str(invalid.evidence[0].path)

    world = _cron_world()
    world.add("raycronjobs", raycronjob())
    world.objects["raycronjobs"][0]["spec"]["suspend"] = True
    assert_fires(run(world, ("RayCronJob", "nightly")), "K03")

    # Every 5 minutes since 11:40 and never scheduled: the 11:45 tick is 15 minutes overdue.
    world = _cron_world()
    world.add("raycronjobs", raycronjob())
    missed = one_finding(run(world, ("RayCronJob", "nightly")), "K04")
    assert "2026-01-01T11:45:00Z" in missed.title and "15m" in missed.title


def test_the_failed_submitter_pods_last_lines_are_quoted_when_the_doctor_looked_inside() -> None:
    world = World()
    world.add("rayjobs", rayjob(jobDeploymentStatus="Running", jobStatus="RUNNING"))
    world.add("jobs", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": NS},
                       "spec": {"backoffLimit": 0}, "status": {"failed": 1}})  # fmt: skip
    world.add("pods", {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "train-x7k2p", "namespace": NS, "creationTimestamp": EARLIER,
                                    "labels": {"batch.kubernetes.io/job-name": "train", "job-name": "train"}},
                       "spec": {"containers": [{"name": "ray-job-submitter", "image": "rayproject/ray:2.52.0"}]},
                       "status": {"phase": "Failed"}})  # fmt: skip
    snap = world.snapshot(targets=(), workloads=(("RayJob", NS, "train"),))
    assert [objects.name(p) for p in failed_submitter_pods(snap)] == ["train-x7k2p"]  # whose logs --exec reads
    last = "ModuleNotFoundError: No module named 'torch'"
    snap.inside = {f"{NS}/train-x7k2p": {"role": "submitter", "logs": [
        {"source": "kubectl logs train-x7k2p", "line": "Traceback (most recent call last):"},
        {"source": "kubectl logs train-x7k2p", "line": last}]}}  # fmt: skip
    submitter = one_finding(diagnose(snap, Options()), "J04")
    assert submitter.title.endswith(last)
    assert [e.value for e in submitter.evidence if e.source == "log"][-1] == last


FORBIDDEN_LINE = (
    'RuntimeError: Kubernetes API 403 Forbidden: pods is forbidden: User "system:serviceaccount:default-ns:default" '
    'cannot list resource "pods" in API group "" in the namespace "default-ns"'
).replace("default-ns", NS)


def _submitted(world: World, *, job_status: str = "FAILED", phase: str = "Succeeded") -> None:
    """A RayJob whose Ray job ended ``job_status`` and its submitter Job's Pod (``ray job logs --follow`` exits 0)."""
    world.add(
        "rayjobs",
        rayjob(
            "lister",
            jobDeploymentStatus="Failed",
            jobStatus=job_status,
            reason="AppFailed",
            message="Job entrypoint command failed with exit code 1, last available logs: ...",
        ),
    )
    world.add(
        "jobs",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "lister", "namespace": NS},
            "spec": {"backoffLimit": 2},
            "status": {"succeeded": 1},
        },
    )
    world.add("pods", {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "lister-abcde", "namespace": NS, "creationTimestamp": EARLIER,
                                    "labels": {"batch.kubernetes.io/job-name": "lister", "job-name": "lister"}},
                       "spec": {"containers": [{"name": "ray-job-submitter", "image": "rayproject/ray:2.52.0"}]},
                       "status": {"phase": phase}})  # fmt: skip


def _review(allowed: bool, verb: str = "list") -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": f"system:serviceaccount:{NS}:default",
                     "resourceAttributes": {"namespace": NS, "verb": verb, "group": "", "resource": "pods"}},
            "status": {"allowed": allowed, **({} if allowed else {"reason": ""})}}  # fmt: skip


def test_j07_a_task_refused_by_the_kubernetes_api_names_the_account_verb_resource_and_the_namespace_role() -> None:
    world = World()
    _submitted(world)
    world.add("subjectaccessreviews", _review(allowed=False))
    snap = world.snapshot(targets=(), workloads=(("RayJob", NS, "lister"),))
    assert [objects.name(p) for p in failed_submitter_pods(snap)] == ["lister-abcde"]  # a Job that succeeded too
    snap.inside = {f"{NS}/lister-abcde": {"role": "submitter", "logs": [
        {"source": "kubectl logs lister-abcde", "line": FORBIDDEN_LINE},
        {"source": "kubectl logs lister-abcde", "line": "stats.h:149: Stats module has shutdown."}]}}  # fmt: skip
    report = diagnose(snap, Options())
    found = one_finding(report, "J07")
    assert found.title == (f"The job's code was refused by the Kubernetes API: ServiceAccount {NS}/default "
                           f"(system:serviceaccount:{NS}:default) may not list pods in namespace {NS}")  # fmt: skip
    assert found.severity == "error"
    assert [e.value for e in found.evidence][1] == "denied now"
    fixes = " ".join(found.remediation)
    assert f"kubectl -n {NS} create role lister-pods --verb=list --resource=pods" in fixes
    assert f"--role=lister-pods --serviceaccount={NS}:default" in fixes and "ClusterRole" not in fixes
    failed = one_finding(report, "J05")
    assert found.id in failed.caused_by  # the job failed because of it

    # Allowed since (a Role added after the job ran): a warning that says to run it again.
    world = World()
    _submitted(world)
    world.objects["rayjobs"][0]["status"]["message"] += "\n" + FORBIDDEN_LINE  # status.message carries it too
    world.add("subjectaccessreviews", _review(allowed=True))
    found = one_finding(run(world, ("RayJob", "lister")), "J07")
    assert found.severity == "warning" and found.title.endswith("(allowed now: a Role was added since; run the job "
                                                                "again)")  # fmt: skip


def test_j07_a_cluster_scope_call_is_steered_to_the_namespace_and_other_users_are_not_the_workloads() -> None:
    world = World()
    _submitted(world)
    world.objects["rayjobs"][0]["status"]["message"] += (
        f'\nnodes is forbidden: User "system:serviceaccount:{NS}:ray" cannot list resource "nodes" in API group "" '
        'at the cluster scope\nsecrets is forbidden: User "alice" cannot get resource "secrets" in API group "" in '
        f'the namespace "{NS}"'
    )
    found = one_finding(run(world, ("RayJob", "lister")), "J07")
    assert "may not list nodes at the cluster scope" in found.title
    assert "in its own namespace" in found.remediation[0] and "ClusterRole would open every" in found.remediation[0]

    world = World()
    _submitted(world, job_status="SUCCEEDED")
    assert_quiet(run(world, ("RayJob", "lister")), "J07")

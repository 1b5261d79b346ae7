"""RayJobs and RayServices: what they add to the chain of the RayCluster they run on.

A RayJob or RayService is a subject of its own (``raykube doctor rayjob/NAME``, ``rayservice/NAME``, ``--all``);
its findings say what its status says is wrong, with KubeRay v1.6.1's reasons and what to do. When the cause is the
RayCluster it runs on (not ready: a head Pod unschedulable, an image that does not pull, ...), the finding carries
that cluster's ``cluster:C`` and ``runs-on:C`` tokens, so correlation hangs it under the cluster's root cause and the
report names that root cause first in the RayJob's or RayService's own section.

KubeRay's vocabulary is in :mod:`raykube.api.constants` (``JOB_DEPLOYMENT_STATUS_*``, ``JOB_REASON_*``,
``REASON_RAYSERVICE_*``, ``SERVE_APP_*``); the fixes follow what KubeRay v1.6.1's controllers do, as raykube's
(``controllers/rayjob/``, ``controllers/rayservice/``) reproduce it: a RayJob in ``ValidationFailed`` is never
validated again, a RayService recovers from ``ValidationFailed`` by itself once fixed, ``InitializingTimeout`` is
terminal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from raykube.api import constants as c
from raykube.api import cron
from raykube.api.validation import validate_raycronjob
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.model import Evidence, Finding, ObjectRef, Severity
from raykube.doctor.rules.base import (
    STAGE_OPERATOR,
    STAGE_RECONCILE,
    STAGE_SPEC,
    STAGE_WORKLOAD,
    checker,
    field_evidence,
    finding,
    first,
    rule,
)
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

RAYJOB_VALIDATION_FAILED = rule(
    "J01", "RAYJOB_VALIDATION_FAILED", STAGE_SPEC, "The RayJob failed KubeRay's validation (and is never re-validated)"
)
RAYJOB_CLUSTER_NOT_FOUND = rule(
    "J02", "RAYJOB_CLUSTER_NOT_FOUND", STAGE_RECONCILE, "The RayCluster a RayJob's clusterSelector names does not exist"
)
RAYJOB_WAITING_FOR_CLUSTER = rule(
    "J03", "RAYJOB_WAITING_FOR_CLUSTER", STAGE_WORKLOAD, "The RayJob waits for its RayCluster to be ready"
)
SUBMITTER_FAILING = rule(
    "J04", "SUBMITTER_JOB_FAILING", STAGE_WORKLOAD, "The RayJob's submitter Job has failed Pods (ray job submit)"
)
RAYJOB_FAILED = rule(
    "J05",
    "RAYJOB_FAILED",
    STAGE_WORKLOAD,
    "The RayJob ended Failed (reason and what to do)",
    ["ray-project/kuberay#1489", "ray-project/kuberay PR#4916"],  # the job-status checks that fail (v1.7.0 ends them)
)
RAYJOB_CLUSTER_DELETED = rule(
    "J06", "RAYJOB_CLUSTER_DELETED", STAGE_WORKLOAD, "The finished RayJob's RayCluster was deleted (its logs with it)"
)
WORKLOAD_API_FORBIDDEN = rule(
    "J07",
    "WORKLOAD_API_FORBIDDEN",
    STAGE_WORKLOAD,
    "The RayJob's code was refused by the Kubernetes API (403): its ServiceAccount needs a namespace Role",
)
RAYSERVICE_VALIDATION_FAILED = rule(
    "S01", "RAYSERVICE_VALIDATION_FAILED", STAGE_SPEC, "The RayService failed KubeRay's validation"
)
RAYSERVICE_INITIALIZING_TIMEOUT = rule(
    "S02",
    "RAYSERVICE_INITIALIZING_TIMEOUT",
    STAGE_WORKLOAD,
    "The RayService hit ray.io/initializing-timeout (terminal)",
)
NO_SERVE_ENDPOINTS = rule(
    "S04", "RAYSERVICE_NO_SERVE_ENDPOINTS", STAGE_WORKLOAD, "The serve Service has no endpoint: no request is served"
)
RAYSERVICE_WAITING_FOR_CLUSTER = rule(
    "S05",
    "RAYSERVICE_WAITING_FOR_CLUSTER",
    STAGE_WORKLOAD,
    "The RayService's new (pending) RayCluster is not ready: it is not serving yet, or its upgrade is stuck",
)

# Beyond this long, waiting for a cluster is an error rather than a warning (a cluster of real Pods starts in
# minutes; KubeRay's own RayService initializing timeout, when set, is often 30m).
SLOW_SECONDS: Final = 600.0
TERMINAL_JOB_STATUSES: Final = (c.JOB_DEPLOYMENT_STATUS_COMPLETE, c.JOB_DEPLOYMENT_STATUS_FAILED)


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value: Mapping[str, Any] = obj.get("status") or {}
    return value


def _cluster(snap: Snapshot, namespace: str, name: str) -> Obj | None:
    return snap.get(s.RAYCLUSTERS, namespace, name) if name else None


def _cluster_state(cluster: Obj | None) -> str:
    return "not found" if cluster is None else str(_status(cluster).get("state") or "no state yet")


def _waiting_on(namespace: str, cluster: str) -> set[str]:
    key = f"{namespace}/{cluster}"
    return {t.cluster_ready(key), t.runs_on(key)}


def _age(snap: Snapshot, stamp: object) -> float | None:
    return facts.seconds_since(stamp, snap.now)


# ------------------------------------------------------------------------------------------------------- RayJobs
@checker(RAYJOB_VALIDATION_FAILED, RAYJOB_CLUSTER_NOT_FOUND, RAYJOB_WAITING_FOR_CLUSTER, RAYJOB_FAILED)
def check_rayjob_status(snap: Snapshot) -> Iterator[Finding]:
    for job in snap.rayjobs:
        ref = facts.ref(job, c.KIND_RAYJOB)
        status = _status(job)
        deployment = str(status.get("jobDeploymentStatus") or "")
        namespace = objects.namespace(job)
        cluster_name = str(status.get("rayClusterName") or "")
        selector = str(first(job.get("spec"), "clusterSelector", c.RAY_CLUSTER_LABEL) or "")
        evidence = [field_evidence(ref, "status.jobDeploymentStatus", deployment or "(none yet)", "cr.status")]
        evidence += [field_evidence(ref, f"status.{k}", status[k], "cr.status") for k in ("reason", "message")
                     if status.get(k)]  # fmt: skip
        if deployment == c.JOB_DEPLOYMENT_STATUS_VALIDATION_FAILED:
            yield finding(
                RAYJOB_VALIDATION_FAILED,
                cluster=ref,
                obj=ref,
                severity="error",
                title=f"The RayJob is invalid: {status.get('message') or 'see its events'}",
                evidence=evidence
                + _events(snap, job, ref, c.EVENT_INVALID_RAYJOB_SPEC, c.EVENT_INVALID_RAYJOB_METADATA),
                explanation="KubeRay validated the RayJob and refused it. A RayJob in ValidationFailed is a dead "
                "end: KubeRay does not validate it again when the spec changes.",
                remediation=[
                    "Fix the field the message names, then delete the RayJob and create it again "
                    "(`kubectl replace --force -f rayjob.yaml`).",
                ],
            )
            continue
        if selector and snap.has(s.RAYCLUSTERS) and _cluster(snap, namespace, selector) is None:
            yield finding(
                RAYJOB_CLUSTER_NOT_FOUND,
                cluster=ref,
                obj=ref,
                severity="error",
                title=f"spec.clusterSelector names RayCluster {selector}, which does not exist",
                evidence=[field_evidence(ref, f"spec.clusterSelector[{c.RAY_CLUSTER_LABEL}]", selector, "cr.spec")],
                explanation="With a clusterSelector the RayJob submits to an existing RayCluster and creates none; "
                "KubeRay keeps waiting for that cluster to be ready.",
                remediation=[f"Create RayCluster {selector} in {namespace}, or fix spec.clusterSelector."],
                effects=_waiting_on(namespace, selector),
            )
        if deployment in (c.JOB_DEPLOYMENT_STATUS_INITIALIZING, c.JOB_DEPLOYMENT_STATUS_WAITING) and cluster_name:
            cluster = _cluster(snap, namespace, cluster_name)
            if cluster is None or _status(cluster).get("state") != "ready":
                yield _waiting_job(snap, job, ref, cluster_name, cluster, evidence=evidence)
        if deployment == c.JOB_DEPLOYMENT_STATUS_FAILED:
            yield _failed_job(snap, job, ref, cluster_name, evidence)


def _waiting_job(
    snap: Snapshot, job: Obj, ref: ObjectRef, cluster_name: str, cluster: Obj | None, *, evidence: list[Evidence]
) -> Finding:
    spec = job.get("spec") or {}
    started = _status(job).get("startTime")
    waited = _age(snap, started)
    evidence = [*evidence, field_evidence(ref, "status.startTime", started, "cr.status")] if started else evidence
    evidence.append(
        field_evidence(
            facts.ref(cluster or {"metadata": {"name": cluster_name}}, c.KIND_RAYCLUSTER),
            "status.state",
            _cluster_state(cluster),
            "cr.status",
        )
    )
    severity: Severity = "error" if waited is not None and waited > SLOW_SECONDS else "warning"
    deadlines = []
    for field_name in ("preRunningDeadlineSeconds", "activeDeadlineSeconds"):
        limit = spec.get(field_name)
        if isinstance(limit, int) and waited is not None:
            left = limit - waited
            deadlines.append(f"{field_name} {limit}: {'passed' if left <= 0 else f'{int(left)}s left'}")
            evidence.append(field_evidence(ref, f"spec.{field_name}", limit, "cr.spec"))
            if left <= 60:
                severity = "error"
    age = facts.human_age(waited)
    title = f"The RayJob waits for RayCluster {cluster_name} ({_cluster_state(cluster)})" + (
        f" since {age}" if age else ""
    )
    return finding(
        RAYJOB_WAITING_FOR_CLUSTER,
        cluster=ref,
        obj=ref,
        severity=severity,
        title=title + (f"; {'; '.join(deadlines)}" if deadlines else ""),
        evidence=evidence,
        explanation="KubeRay submits the job only once the RayCluster's state is ready; until then the RayJob "
        "stays Initializing, and a deadline that passes ends it Failed.",
        remediation=[
            f"Find why RayCluster {cluster_name} is not ready: `raykube doctor raycluster/{cluster_name}` (its "
            "findings are below when the doctor could tell).",
        ],
        symptoms=_waiting_on(objects.namespace(job), cluster_name),
    )


_FAILED_FIXES: Final[Mapping[str, tuple[str, str]]] = {
    c.JOB_REASON_DEADLINE_EXCEEDED: (
        "spec.activeDeadlineSeconds passed before the job finished (retries are not made after a deadline).",
        "Raise spec.activeDeadlineSeconds, or find what made the job slow (cluster start-up counts too).",
    ),
    c.JOB_REASON_PRE_RUNNING_DEADLINE_EXCEEDED: (
        "spec.preRunningDeadlineSeconds passed before the job was running: the cluster was not ready in time.",
        "Raise spec.preRunningDeadlineSeconds, or make the cluster start faster (images, scheduling).",
    ),
    c.JOB_REASON_APP_FAILED: (
        "The Ray job itself failed: its entrypoint exited non-zero or raised.",
        "Read the job's output: `kubectl logs job/<rayjob>` (K8sJobMode) or `ray job logs <jobId>` on the head.",
    ),
    c.JOB_REASON_SUBMISSION_FAILED: (
        "Submitting the job failed every time the submitter was allowed to try.",
        "Read the submitter's logs (`kubectl logs job/<rayjob>`): the dashboard address, the entrypoint, the "
        "runtime env (a pip install or working_dir download that needs the internet).",
    ),
    c.JOB_REASON_STATUS_CHECK_TIMEOUT_EXCEEDED: (
        "The operator could not read the job's status from the head's dashboard for longer than "
        "RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS (300 s by default; KubeRay v1.7.0).",
        "Check that the operator's Pods reach the head's dashboard port: a NetworkPolicy on the head (E07), the "
        "dashboard's host (F01), the head's restarts.",
    ),
    c.JOB_REASON_GRACE_PERIOD_EXCEEDED: (
        "The submitter finished but Ray never reported the job as finished within the grace period.",
        "Check that the head and its dashboard stayed up (`kubectl get pods`, restarts) while the job ran.",
    ),
}


def _failed_job(snap: Snapshot, job: Obj, ref: ObjectRef, cluster_name: str, evidence: list[Evidence]) -> Finding:
    status = _status(job)
    reason = str(status.get("reason") or "")
    why, fix = _FAILED_FIXES.get(reason, ("KubeRay ended the RayJob Failed.", "Read status.message and the events."))
    fix = fix.replace("<rayjob>", objects.name(job)).replace("<jobId>", str(status.get("jobId") or "<jobId>"))
    tokens = (
        _waiting_on(objects.namespace(job), cluster_name)
        if reason == c.JOB_REASON_PRE_RUNNING_DEADLINE_EXCEEDED
        else {t.job_dashboard(s.key_of(job))}
        if reason == c.JOB_REASON_STATUS_CHECK_TIMEOUT_EXCEEDED
        else {t.job_app(s.key_of(job))}
        if reason == c.JOB_REASON_APP_FAILED
        else set()
    )
    if status.get("jobStatus"):
        evidence = [*evidence, field_evidence(ref, "status.jobStatus", status["jobStatus"], "cr.status")]
    failed = status.get("failed")
    if failed:
        evidence.append(field_evidence(ref, "status.failed", failed, "cr.status"))
    return finding(
        RAYJOB_FAILED,
        cluster=ref,
        obj=ref,
        severity="error",
        title=f"The RayJob failed: {reason or 'no reason given'}",
        evidence=evidence,
        explanation=why,
        remediation=[fix],
        symptoms=tokens,
    )


def _events(snap: Snapshot, obj: Obj, ref: ObjectRef, *reasons: str) -> list[Evidence]:
    return [facts.event_evidence(e, ref, snap.now) for e in facts.latest_events(snap.events_for(obj), *reasons)[:2]]


@checker(SUBMITTER_FAILING)
def check_submitter(snap: Snapshot) -> Iterator[Finding]:
    """KubeRay's submitter Job is named after the RayJob (K8sJobMode) and owned by it."""
    for job in snap.rayjobs:
        mode = str((job.get("spec") or {}).get("submissionMode") or c.SUBMISSION_MODE_K8S_JOB)
        if mode != c.SUBMISSION_MODE_K8S_JOB:
            continue
        submitter = snap.get(s.JOBS, objects.namespace(job), objects.name(job))
        if submitter is None:
            continue
        status = _status(submitter)
        failed = int(status.get("failed") or 0)
        if not failed:
            continue
        ref = facts.ref(job, c.KIND_RAYJOB)
        job_ref = facts.ref(submitter, "Job")
        conditions = facts.conditions(submitter)
        gave_up = conditions.get("Failed", {}).get("status") == "True"
        evidence = [field_evidence(job_ref, "status.failed", failed, "object")]
        if gave_up:
            message = conditions["Failed"].get("message") or conditions["Failed"].get("reason")
            evidence.append(field_evidence(job_ref, "status.conditions[Failed]", message, "object"))
        limit = (submitter.get("spec") or {}).get("backoffLimit")
        if limit is not None:
            evidence.append(field_evidence(job_ref, "spec.backoffLimit", limit, "object"))
        lines = [
            Evidence(source="log", object=ObjectRef("Pod", key.split("/", 1)[1], objects.namespace(job)),
                     path=str(item.get("source")), value=str(item.get("line")))
            for key, entry in snap.inside.items()
            if entry.get("role") == "submitter" and key.split("/", 1)[0] == objects.namespace(job)
            and _submitter_of(snap, key) == objects.name(submitter)
            for item in entry.get("logs") or []
        ]  # fmt: skip
        yield finding(
            SUBMITTER_FAILING,
            cluster=ref,
            obj=job_ref,
            severity="error",
            title=f"The submitter Job {objects.name(submitter)} has {failed} failed Pod(s)"
            + (" and gave up" if gave_up else "")
            + (f": {lines[-1].value}" if lines else ""),
            evidence=evidence + lines,
            explanation="In K8sJobMode a Kubernetes Job runs `ray job submit` against the head's dashboard and "
            "follows the job's logs; a failed Pod means the submission or the job failed. With the in-Pod checks "
            "the last lines of its newest failed Pod are quoted.",
            symptoms={t.job_dashboard(s.key_of(job))},
            remediation=[
                f"`kubectl -n {objects.namespace(job)} logs job/{objects.name(submitter)}` (add `--previous` for a "
                "restarted container): a refused connection to the dashboard, an entrypoint error, or a runtime "
                "env that downloads from the internet.",
            ],
        )


def _submitter_of(snap: Snapshot, pod_key: str) -> str | None:
    namespace, _, name = pod_key.partition("/")
    pod = snap.get(s.PODS, namespace, name)
    labels = objects.labels(pod) if pod is not None else {}
    return next((labels[label] for label in c.JOB_NAME_LABELS if label in labels), None)


@checker(RAYJOB_CLUSTER_DELETED)
def check_deleted_cluster(snap: Snapshot) -> Iterator[Finding]:
    if not snap.has(s.RAYCLUSTERS):
        return
    for job in snap.rayjobs:
        status = _status(job)
        spec = job.get("spec") or {}
        name = str(status.get("rayClusterName") or "")
        if status.get("jobDeploymentStatus") not in TERMINAL_JOB_STATUSES or not name or spec.get("clusterSelector"):
            continue
        if _cluster(snap, objects.namespace(job), name) is not None:
            continue
        ref = facts.ref(job, c.KIND_RAYJOB)
        how = (
            "spec.deletionStrategy" if spec.get("deletionStrategy") else
            "spec.shutdownAfterJobFinishes" if spec.get("shutdownAfterJobFinishes") else "someone"
        )  # fmt: skip
        yield finding(
            RAYJOB_CLUSTER_DELETED,
            cluster=ref,
            obj=ref,
            severity="info",
            title=f"RayCluster {name} is gone ({how}); the logs on its Pods went with it",
            evidence=[field_evidence(ref, "status.rayClusterName", name, "cr.status")],
            explanation="After the job ended, its RayCluster was deleted. Ray's own logs lived in its Pods.",
            remediation=[
                "To look at a failed job's cluster next time, leave it up: drop shutdownAfterJobFinishes (or use "
                "deletionStrategy rules with a TTL), and read `kubectl logs job/<rayjob>` for the job's output.",
            ],
        )


# --------------------------------------------------------------------------------------------------- RayServices
@checker(RAYSERVICE_VALIDATION_FAILED, RAYSERVICE_INITIALIZING_TIMEOUT, RAYSERVICE_WAITING_FOR_CLUSTER)
def check_rayservice_status(snap: Snapshot) -> Iterator[Finding]:
    for service in snap.rayservices:
        ref = facts.ref(service, c.KIND_RAYSERVICE)
        ready = facts.conditions(service).get(c.CONDITION_RAYSERVICE_READY) or {}
        reason = str(ready.get("reason") or "")
        evidence = [
            field_evidence(ref, "status.conditions[Ready]", f"{ready.get('status')}/{reason}"
                           + (f": {ready.get('message')}" if ready.get("message") else ""), "cr.status")
        ] if ready else []  # fmt: skip
        if ready.get("status") == "False" and reason == c.REASON_RAYSERVICE_VALIDATION_FAILED:
            yield finding(
                RAYSERVICE_VALIDATION_FAILED,
                cluster=ref,
                obj=ref,
                severity="error",
                title=f"The RayService is invalid: {ready.get('message') or 'see its events'}",
                evidence=evidence
                + _events(snap, service, ref, c.EVENT_INVALID_RAYSERVICE_SPEC, c.EVENT_INVALID_RAYSERVICE_METADATA),
                explanation="KubeRay refused the spec and does nothing else with the RayService until it is fixed.",
                remediation=["Fix the field the message names; KubeRay validates the new spec by itself."],
            )
            continue
        if ready.get("status") == "False" and reason == c.REASON_RAYSERVICE_INITIALIZING_TIMEOUT:
            timeout = (objects.meta(service).get("annotations") or {}).get(
                c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION
            )
            yield finding(
                RAYSERVICE_INITIALIZING_TIMEOUT,
                cluster=ref,
                obj=ref,
                severity="error",
                title="The RayService did not become ready within its initializing timeout, and never will",
                evidence=evidence
                + (
                    [
                        field_evidence(
                            ref,
                            f"metadata.annotations[{c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION}]",
                            timeout,
                            "cr.spec",
                        )
                    ]
                    if timeout
                    else []
                )
                + _events(snap, service, ref, c.EVENT_RAYSERVICE_INITIALIZING_TIMEOUT),
                explanation="InitializingTimeout is terminal in KubeRay: its clusters are deleted and a later spec "
                "change does not revive it.",
                remediation=[
                    "Fix what kept it from becoming ready (the events and Pods of its cluster while it existed: "
                    "images, resources, the Serve config), then delete the RayService and create it again.",
                ],
            )
            continue
        yield from _waiting_service(snap, service, ref, evidence)


def _waiting_service(snap: Snapshot, service: Obj, ref: ObjectRef, evidence: list[Evidence]) -> Iterator[Finding]:
    status = _status(service)
    namespace = objects.namespace(service)
    pending = str((status.get("pendingServiceStatus") or {}).get("rayClusterName") or "")
    active = str((status.get("activeServiceStatus") or {}).get("rayClusterName") or "")
    if not pending:
        return
    cluster = _cluster(snap, namespace, pending)
    if cluster is not None and _status(cluster).get("state") == "ready":
        return  # its cluster is up: what may be wrong now is Serve (S03)
    upgrading = facts.conditions(service).get(c.CONDITION_UPGRADE_IN_PROGRESS) or {}
    since = upgrading.get("lastTransitionTime") if active else (
        facts.conditions(service).get(c.CONDITION_RAYSERVICE_READY) or {}).get("lastTransitionTime")  # fmt: skip
    waited = _age(snap, since)
    age = facts.human_age(waited)
    what = "its upgrade is stuck" if active else "it serves nothing yet"
    cluster_ref = ObjectRef(c.KIND_RAYCLUSTER, pending, namespace)
    yield finding(
        RAYSERVICE_WAITING_FOR_CLUSTER,
        cluster=ref,
        obj=ref,
        severity="error" if waited is not None and waited > SLOW_SECONDS else "warning",
        title=f"Pending RayCluster {pending} is {_cluster_state(cluster)}"
        + (f" after {age}" if age else "")
        + f": {what}"
        + (f" (RayCluster {active} still serves)" if active else ""),
        evidence=[
            *evidence,
            field_evidence(ref, "status.pendingServiceStatus.rayClusterName", pending, "cr.status"),
            field_evidence(cluster_ref, "status.state", _cluster_state(cluster), "cr.status"),
        ],
        explanation="KubeRay moves the Services to a new RayCluster only once its Serve applications run, and "
        "the applications are deployed only once the cluster is ready.",
        remediation=[f"Find why RayCluster {pending} is not ready: `raykube doctor raycluster/{pending}`."],
        symptoms=_waiting_on(namespace, pending),
    )


@checker(NO_SERVE_ENDPOINTS)
def check_serve_endpoints(snap: Snapshot) -> Iterator[Finding]:
    for service in snap.rayservices:
        ready = facts.conditions(service).get(c.CONDITION_RAYSERVICE_READY) or {}
        if ready.get("reason") != c.REASON_ZERO_SERVE_ENDPOINTS:
            continue
        ref = facts.ref(service, c.KIND_RAYSERVICE)
        namespace = objects.namespace(service)
        active = str(first(service.get("status"), "activeServiceStatus", "rayClusterName") or "")
        serve_name = str(first(service.get("spec"), "serveService", "metadata", "name") or
                         f"{objects.name(service)}-serve-svc")  # fmt: skip
        evidence = [
            field_evidence(ref, "status.conditions[Ready]", f"False/{ready.get('reason')}", "cr.status"),
            field_evidence(ref, "status.numServeEndpoints", _status(service).get("numServeEndpoints", 0), "cr.status"),
        ]
        heads = [p for p in snap.ray_pods.get((namespace, active), [])
                 if objects.labels(p).get(c.RAY_NODE_TYPE_LABEL) == "head"]  # fmt: skip
        for head in heads:
            label = objects.labels(head).get(c.RAY_SERVE_LABEL, "(unset)")
            evidence.append(field_evidence(facts.ref(head, "Pod"), f"metadata.labels[{c.RAY_SERVE_LABEL}]", label,
                                           "pod.spec"))  # fmt: skip
        slices = snap.endpointslices_for(namespace, serve_name)
        evidence.append(field_evidence(ObjectRef("Service", serve_name, namespace), "EndpointSlices",
                                       f"{len(slices)}, with no ready endpoint", "object"))  # fmt: skip
        yield finding(
            NO_SERVE_ENDPOINTS,
            cluster=ref,
            obj=ref,
            severity="error",
            title=f"{serve_name} has no ready endpoint: requests to it fail",
            evidence=evidence,
            explanation=f"The serve Service selects the Pods of RayCluster {active} labelled {c.RAY_SERVE_LABEL}="
            "true; KubeRay labels the head so only while Serve's proxy on it answers its health check, and "
            "workers count once their readiness probe (which asks the proxy too) passes.",
            remediation=[
                "Check the proxies: `kubectl exec <head> -- serve status` (proxy_location, a proxy per node), and "
                "that the Pods are Ready; with excludeHeadPodFromServeSvc, that some worker runs a replica.",
            ],
            symptoms=_waiting_on(namespace, active) if active else set(),
        )


# --------------------------------------------------------------------------------------------------- RayCronJobs
RAYCRONJOB_INVALID = rule(
    "K01", "RAYCRONJOB_INVALID", STAGE_SPEC, "The RayCronJob fails KubeRay's validation: it creates no RayJob"
)
RAYCRONJOB_GATE_OFF = rule(
    "K02",
    "RAYCRONJOB_GATE_OFF",
    STAGE_OPERATOR,
    "No operator watching the namespace runs the RayCronJob controller (alpha: --feature-gates=RayCronJob=true)",
)
RAYCRONJOB_SUSPENDED = rule("K03", "RAYCRONJOB_SUSPENDED", STAGE_SPEC, "The RayCronJob is suspended")
RAYCRONJOB_MISSED = rule(
    "K04", "RAYCRONJOB_MISSED_SCHEDULE", STAGE_RECONCILE, "A tick of the schedule passed and no RayJob was made"
)
# A tick this long overdue is missed, not merely in progress (the operator's work queue, a busy API server).
MISSED_AFTER_SECONDS: Final = 60.0


@checker(RAYCRONJOB_INVALID, RAYCRONJOB_GATE_OFF, RAYCRONJOB_SUSPENDED, RAYCRONJOB_MISSED)
def check_raycronjobs(snap: Snapshot) -> Iterator[Finding]:
    operators = facts.operators(snap)
    for cron_job in snap.raycronjobs:
        ref = facts.ref(cron_job, c.KIND_RAYCRONJOB)
        namespace = objects.namespace(cron_job)
        spec = cron_job.get("spec") or {}
        watching = [op for op in operators if op.watches(namespace)]
        errors = validate_raycronjob(cron_job, features={c.GATE_RAY_CRON_JOB: True})
        events = _events(snap, cron_job, ref, c.EVENT_INVALID_RAYCRONJOB_SPEC)
        if errors or events:
            yield finding(
                RAYCRONJOB_INVALID,
                cluster=ref,
                obj=ref,
                severity="error",
                title=f"The RayCronJob is invalid: {errors[0].message if errors else 'see its events'}",
                evidence=[field_evidence(ref, e.path, e.message, "cr.spec") for e in errors[:3]] + events,
                explanation="The operator checks the RayCronJob at every reconcile and creates nothing while it is "
                "invalid (a Warning InvalidRayCronJobSpec event each time); it recovers once the spec is fixed.",
                remediation=["Fix the field named above: kubectl edit raycronjob " + objects.name(cron_job)],
                effects={t.runs_on(s.key_of(cron_job))},
            )
            continue
        if watching and not any(op.feature_gates.get(c.GATE_RAY_CRON_JOB) for op in watching):
            yield finding(
                RAYCRONJOB_GATE_OFF,
                cluster=ref,
                obj=ref,
                severity="error",
                title="No operator runs the RayCronJob controller: the feature gate RayCronJob is off",
                evidence=[
                    field_evidence(
                        ObjectRef("Deployment", op.name, op.namespace),
                        "--feature-gates",
                        ",".join(f"{k}={v}" for k, v in sorted(op.feature_gates.items())) or "(none)",
                        "operator",
                    )
                    for op in watching[:2]
                ],
                explanation="RayCronJob is alpha in KubeRay v1.6.1: the operator starts its controller only with "
                "--feature-gates=RayCronJob=true, so without it the RayCronJob is stored and nothing acts on it.",
                remediation=[
                    "helm upgrade <release> <chart> --set featureGates[0].name=RayCronJob "
                    "--set featureGates[0].enabled=true (or add RayCronJob=true to the operator's --feature-gates)"
                ],
                effects={t.runs_on(s.key_of(cron_job))},
            )
            continue
        if spec.get("suspend"):
            yield finding(
                RAYCRONJOB_SUSPENDED,
                cluster=ref,
                obj=ref,
                severity="info",
                title="The RayCronJob is suspended: no RayJob is created until spec.suspend is false",
                evidence=[field_evidence(ref, "spec.suspend", True, "cr.spec")],
            )
            continue
        overdue = _overdue_tick(snap, cron_job)
        if overdue is not None:
            tick, late = overdue
            yield finding(
                RAYCRONJOB_MISSED,
                cluster=ref,
                obj=ref,
                severity="error",
                title=f"The tick of {facts.format_time(tick)} passed {facts.human_age(late)} ago and no RayJob was "
                "made for it",
                evidence=[
                    field_evidence(ref, "spec.schedule", spec.get("schedule"), "cr.spec"),
                    field_evidence(ref, "spec.timeZone", spec.get("timeZone") or "(the operator's)", "cr.spec"),
                    field_evidence(
                        ref,
                        "status.lastScheduleTime",
                        _status(cron_job).get("lastScheduleTime") or "unset",
                        "cr.status",
                    ),
                ],
                explanation="The operator creates a RayJob at each tick and records it in status.lastScheduleTime; "
                "a tick long past with neither means no operator reconciles this RayCronJob (not running, not "
                "watching the namespace, or failing to create RayJobs: see its events and logs).",
                remediation=["kubectl -n kuberay-operator logs deploy/kuberay-operator | grep -i raycronjob"],
                effects={t.runs_on(s.key_of(cron_job))},
            )


def _last_schedule(cron_job: Obj) -> str:
    return str(_status(cron_job).get("lastScheduleTime") or "unset")


def _overdue_tick(snap: Snapshot, cron_job: Obj) -> tuple[Any, float] | None:
    """The first tick after ``status.lastScheduleTime`` (or the creation) when it is more than a minute past."""
    spec = cron_job.get("spec") or {}
    try:
        schedule = cron.parse(str(spec.get("schedule") or ""))
        zone = cron.load_location(str(spec["timeZone"])) if spec.get("timeZone") else None
    except (cron.CronError, ValueError, KeyError):
        return None
    since = facts.parse_time(_status(cron_job).get("lastScheduleTime")) or facts.parse_time(
        objects.meta(cron_job).get("creationTimestamp")
    )
    if since is None:
        return None
    tick = schedule.next(since, zone)
    if tick is None:
        return None
    late = (snap.now - tick).total_seconds()
    return (tick, late) if late > MISSED_AFTER_SECONDS else None


# ------------------------------------------------------------------------------------- the workload's own RBAC
@checker(WORKLOAD_API_FORBIDDEN)
def check_workload_forbidden(snap: Snapshot) -> Iterator[Finding]:
    """A RayJob's output (status.message, which carries the end of the job's log, and the submitter's last lines)
    quoting the API server's Forbidden for a ServiceAccount: the Ray Pods' token was refused a verb on a resource.
    The fix is a Role in that namespace bound to that account, never a ClusterRole; a SubjectAccessReview made at
    gather time says whether it is refused still (a Role added since: run the job again)."""
    reviews = {(r.user, r.namespace, r.verb, r.group, r.resource, r.subresource): r for r in facts.access(snap)}
    for job in snap.rayjobs:
        namespace = objects.namespace(job)
        texts = [("status.message", "cr.status", str(_status(job).get("message") or ""))]
        texts += [
            (str(item.get("source")), "log", str(item.get("line")))
            for key, entry in snap.inside.items()
            if entry.get("role") == "submitter" and key.split("/", 1)[0] == namespace
            and _submitter_of(snap, key) == objects.name(job)
            for item in entry.get("logs") or []
        ]  # fmt: skip
        seen: set[tuple[str, ...]] = set()
        for path, source, text in texts:
            for refusal in facts.refusals(text):
                account = refusal.service_account
                key = (refusal.user, refusal.namespace, refusal.verb, refusal.group, refusal.resource,
                       refusal.subresource)  # fmt: skip
                if account is None or key in seen:
                    continue
                seen.add(key)
                yield _forbidden(job, refusal, account, (path, source), reviews.get(key))


def _forbidden(
    job: Obj,
    refusal: facts.Refusal,
    account: tuple[str, str],
    quoted: tuple[str, str],
    review: facts.AccessResult | None,
) -> Finding:
    """The finding for one refusal: ``quoted`` is where the message was read (path, evidence source)."""
    ref = facts.ref(job, c.KIND_RAYJOB)
    path, source = quoted
    sa_namespace, sa_name = account
    where = refusal.namespace or sa_namespace
    scope = f"in namespace {refusal.namespace}" if refusal.namespace else "at the cluster scope"
    evidence = [Evidence(source=source, object=ref, path=path, value=refusal.line)]  # type: ignore[arg-type]
    still = review is None or not review.allowed
    if review is not None:
        evidence.append(
            field_evidence(
                ObjectRef("ServiceAccount", sa_name, sa_namespace),
                f"SubjectAccessReview {refusal.verb} {refusal.resource_text} {scope}",
                "allowed now" if review.allowed else f"denied now{': ' + review.reason if review.reason else ''}",
                "rbac",
            )
        )
    role = f"{objects.name(job)}-{refusal.resource}".replace(".", "-")[:63]
    resource_flag = refusal.resource_text if not refusal.subresource else f"{refusal.resource}/{refusal.subresource}"
    fixes = [
        f"kubectl -n {where} create role {role} --verb={refusal.verb} --resource={resource_flag}",
        f"kubectl -n {where} create rolebinding {role} --role={role} --serviceaccount={sa_namespace}:{sa_name}",
        "Or as YAML: a Role in the job's namespace with exactly these verbs and resources, and a RoleBinding of it "
        f"to ServiceAccount {sa_name} (examples/08-ray-workload-rbac.yaml); then run the job again.",
    ]
    if not refusal.namespace:
        fixes.insert(
            0,
            f"The call was made at the cluster scope: let the code {refusal.verb} {refusal.resource_text} in its own "
            f"namespace ({sa_namespace}, the token's), which a Role can grant; a ClusterRole would open every "
            "namespace to the job.",
        )
    return finding(
        WORKLOAD_API_FORBIDDEN,
        cluster=ref,
        obj=ref,
        severity="error" if still else "warning",
        title=f"The job's code was refused by the Kubernetes API: ServiceAccount {sa_namespace}/{sa_name} "
        f"({refusal.user}) may not {refusal.verb} {refusal.resource_text} {scope}"
        + ("" if still else " (allowed now: a Role was added since; run the job again)"),
        evidence=evidence,
        explanation="A Ray task that calls the Kubernetes API (to list or start Pods, ray.k8s, a client library) "
        "uses the token Kubernetes mounts in its Pod: the ServiceAccount of the Ray Pods (`default` when the "
        "RayCluster's templates name none). The operator's ClusterRole is not the workload's; that account has only "
        "what a Role or RoleBinding gives it, and least privilege means a Role in the job's namespace with exactly "
        "the verbs it needs, never a ClusterRole.",
        remediation=fixes,
        effects={t.job_app(s.key_of(job))},
    )

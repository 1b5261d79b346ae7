"""RayCluster status, replica arithmetic and quantities as KubeRay v1.6.1 computes them.

``calculateStatus`` in ``controllers/ray/raycluster_controller.go``, the helpers in ``controllers/ray/utils/util.go``.
Vectors: V1 (``ray-cluster.sample.yaml``), V4 (``ray-cluster.autoscaler.yaml``), V6
(``ray-cluster.custom-head-service.yaml``) and V10 (``ray-cluster.tpu-v6e-16-multihost.yaml``).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from raykube.api.raycluster import MAX_INT32, RayClusterStatus, WorkerGroupSpec
from raykube.api.resources import RayCluster
from raykube.builders import groups, services, status
from raykube.builders.options import BuildOptions
from raykube.builders.status import ReconcileFailure, StatusError
from raykube.golang.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    ZERO,
    Quantity,
    QuantityError,
    canonical,
    format_quantity,
    parse_quantity,
    sum_quantities,
)
from tests.support import KUBERAY_V161
from tests.vectors import compare

SAMPLES = KUBERAY_V161 / "samples"
T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)
T0S = "2026-05-01T12:00:00Z"
OPTIONS = BuildOptions()
GATE_OFF = BuildOptions(features={"RayClusterStatusConditions": False})


# --- fixtures built by hand -----------------------------------------------------------------------------------------


def load(sample: str) -> dict[str, Any]:
    documents = yaml.safe_load_all((SAMPLES / sample).read_text())
    document: dict[str, Any] = next(d for d in documents if isinstance(d, dict) and d.get("kind") == "RayCluster")
    document["metadata"].update({"uid": "uid-1", "namespace": "default", "generation": 1})
    return document


def cluster_of(document: dict[str, Any]) -> RayCluster:
    return RayCluster.model_validate(document)


def v1() -> RayCluster:
    return cluster_of(load("ray-cluster.sample.yaml"))


def tpu_v6e_16() -> RayCluster:
    """V10: ``ray-cluster.tpu-v6e-16-multihost.yaml``, one replica of 4 TPU hosts."""
    return cluster_of(load("ray-cluster.tpu-v6e-16-multihost.yaml"))


def with_status(cluster: RayCluster, new: dict[str, Any] | None) -> RayCluster:
    """The cluster as the next pass reads it, after ``new`` was written."""
    return cluster.model_copy(update={"status": None if new is None else RayClusterStatus.model_validate(new)})


def with_spec(cluster: RayCluster, **changes: Any) -> RayCluster:
    assert cluster.spec is not None
    return cluster.model_copy(update={"spec": cluster.spec.model_copy(update=changes)})


def pod(
    name: str,
    node_type: str = "worker",
    *,
    phase: str = "Running",
    ready: str | None = "True",
    reason: str | None = None,
    message: str | None = None,
    ip: str | None = None,
    container_statuses: list[dict[str, Any]] | None = None,
    cluster: str = "raycluster-kuberay",
) -> dict[str, Any]:
    conditions: list[dict[str, Any]] = [{"type": "PodScheduled", "status": "True"}]
    if ready is not None:
        ready_condition = {"type": "Ready", "status": ready}
        if reason:
            ready_condition["reason"] = reason
        if message:
            ready_condition["message"] = message
        conditions.append(ready_condition)
    pod_status: dict[str, Any] = {"phase": phase, "conditions": conditions}
    if ip:
        pod_status["podIP"] = ip
    if container_statuses is not None:
        pod_status["containerStatuses"] = container_statuses
    labels = {"ray.io/cluster": cluster, "ray.io/node-type": node_type}
    return {"metadata": {"name": name, "namespace": "default", "labels": labels}, "status": pod_status}


def head(**kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("ip", "10.1.0.5")
    return pod("raycluster-kuberay-head-abcde", "head", **kwargs)


def up(workers: int = 1, **head_kwargs: Any) -> list[dict[str, Any]]:
    return [head(**head_kwargs), *(pod(f"raycluster-kuberay-workergroup-worker-{i}") for i in range(workers))]


def live(service: dict[str, Any], cluster_ip: str = "None", node_ports: bool = False) -> dict[str, Any]:
    """A Service as the API server returns it: targetPort defaulted, clusterIP and nodePorts allocated."""
    service = copy.deepcopy(service)
    service["spec"]["clusterIP"] = cluster_ip
    for index, port in enumerate(service["spec"]["ports"]):
        port.setdefault("targetPort", port["port"])
        port.setdefault("protocol", "TCP")
        if node_ports:
            port["nodePort"] = 30000 + index
    return service


def head_services(cluster: RayCluster, **kwargs: Any) -> list[dict[str, Any]]:
    return [live(services.head_service(cluster, OPTIONS), **kwargs)]


def calc(
    cluster: RayCluster,
    pods: list[dict[str, Any]],
    *,
    failure: ReconcileFailure | None = None,
    now: datetime = T0,
    options: BuildOptions = OPTIONS,
    svcs: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return status.calculate_status(
        cluster,
        pods,
        head_services(cluster) if svcs is None else svcs,
        failure=failure,
        now=now,
        options=options,
    )


def conditions(new: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {cond["type"]: (cond["status"], cond["reason"], cond["message"]) for cond in new.get("conditions", [])}


def condition(new: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(cond for cond in new["conditions"] if cond["type"] == type_)


# --- the vectors: KubeRay's samples -----------------------------------------------------------------------------------


def test_v1_status_when_everything_is_up() -> None:
    cluster = v1()
    new = calc(cluster, up(1))
    assert new == {
        "observedGeneration": 1,
        "readyWorkerReplicas": 1,
        "availableWorkerReplicas": 1,
        "desiredWorkerReplicas": 1,
        "minWorkerReplicas": 1,
        "maxWorkerReplicas": 5,
        "desiredCPU": "2",
        "desiredMemory": "6Gi",
        "desiredGPU": "0",
        "desiredTPU": "0",
        "state": "ready",
        "stateTransitionTimes": {"ready": T0S},
        "endpoints": {"client": "10001", "dashboard": "8265", "gcs-server": "6379", "metrics": "8080"},
        "head": {
            "podIP": "10.1.0.5",
            "podName": "raycluster-kuberay-head-abcde",
            "serviceIP": "10.1.0.5",
            "serviceName": "raycluster-kuberay-head-svc",
        },
        "lastUpdateTime": T0S,
        "conditions": [
            {
                "type": "HeadPodReady",
                "status": "True",
                "lastTransitionTime": T0S,
                "reason": "HeadPodRunningAndReady",
                "message": "",
            },
            {
                "type": "RayClusterProvisioned",
                "status": "True",
                "lastTransitionTime": T0S,
                "reason": "AllPodRunningAndReadyFirstTime",
                "message": "All Ray Pods are ready for the first time",
            },
            {
                "type": "RayClusterSuspended",
                "status": "False",
                "lastTransitionTime": T0S,
                "reason": "RayClusterSuspended",
                "message": "",
            },
            {
                "type": "RayClusterSuspending",
                "status": "False",
                "lastTransitionTime": T0S,
                "reason": "RayClusterSuspending",
                "message": "",
            },
        ],
    }
    # The result is a status KubeRay's CRD accepts.
    RayClusterStatus.model_validate(new)


def test_v10_multi_host_status_figures() -> None:
    cluster = tpu_v6e_16()
    pods = [pod("h", "head", ip="10.1.0.9", cluster="raycluster-tpu-v6e-multihost")]
    pods += [pod(f"w{i}", cluster="raycluster-tpu-v6e-multihost") for i in range(4)]
    new = calc(cluster, pods)
    assert (new["desiredWorkerReplicas"], new["maxWorkerReplicas"]) == (4, 4)
    assert "minWorkerReplicas" not in new  # minReplicas 0, omitted like Go's omitempty
    assert (new["desiredCPU"], new["desiredMemory"], new["desiredGPU"], new["desiredTPU"]) == ("104", "840G", "0", "16")
    assert new["state"] == "ready"


def test_v10_v6e_256_sample_figures() -> None:
    cluster = cluster_of(load("ray-cluster.tpu-v6e-256-multihost.yaml"))
    new = calc(cluster, [pod("h", "head", ip="10.1.0.9", cluster="raycluster-tpu-v6e-multihost")])
    assert (new["desiredWorkerReplicas"], new["maxWorkerReplicas"]) == (64, 64)
    assert "minWorkerReplicas" not in new  # 0, omitted like Go's omitempty
    assert (new["desiredCPU"], new["desiredMemory"], new["desiredTPU"]) == ("1544", "12840G", "256")
    assert "state" not in new  # 1 Pod of 65


def test_v4_autoscaler_figures() -> None:
    cluster = cluster_of(load("ray-cluster.autoscaler.yaml"))
    new = calc(cluster, [head()])
    assert "desiredWorkerReplicas" not in new
    assert new["maxWorkerReplicas"] == 10
    assert new["state"] == "ready"  # the head alone is all that is desired
    assert new["endpoints"] == {"client": "10001", "dashboard": "8265", "gcs": "6379", "metrics": "8080"}


def test_v6_custom_load_balancer_service() -> None:
    cluster = cluster_of(load("ray-cluster.custom-head-service.yaml"))
    svcs = [live(services.head_service(cluster, OPTIONS), cluster_ip="10.96.0.20", node_ports=True)]
    new = calc(cluster, [pod("h", "head", ip="10.1.0.7", cluster="custom-head-svc")], svcs=svcs)
    assert new["head"] == {
        "podIP": "10.1.0.7",
        "podName": "h",
        "serviceIP": "10.96.0.20",
        "serviceName": "custom-ray-head-service-name",
    }
    assert new["endpoints"] == {
        "custom-ray-head-service-port": "30000",
        "client": "30001",
        "dashboard": "30002",
        "gcs-server": "30003",
        "metrics": "30004",
    }
    assert new["desiredCPU"] == "500m"  # requests first: the head asks 500m, limits 1
    assert new["desiredMemory"] == "2Gi"


# --- state ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pods", "failure", "ready"),
    [
        pytest.param(up(1), None, True, id="all-up"),
        pytest.param(up(0), None, False, id="worker-missing"),
        pytest.param(up(2), None, False, id="one-pod-too-many"),
        pytest.param([head(), pod("w", phase="Pending", ready="False")], None, False, id="worker-pending"),
        pytest.param([head(), pod("w", ready="False")], None, False, id="worker-not-ready"),
        pytest.param([head(ready="Unknown"), pod("w")], None, False, id="head-ready-unknown"),
        pytest.param([head(), pod("w", ready=None)], None, True, id="no-ready-condition-passes"),
        pytest.param(up(1), ReconcileFailure("boom"), False, id="failed-pass"),
    ],
)
def test_ready_only_with_the_exact_pod_count_all_running(
    pods: list[dict[str, Any]], failure: ReconcileFailure | None, ready: bool
) -> None:
    new = calc(v1(), pods, failure=failure)
    assert (new.get("state") == "ready") is ready


def test_ready_clears_the_reason() -> None:
    cluster = with_status(v1(), {"reason": "old trouble"})
    assert "reason" not in calc(cluster, up(1))
    assert calc(cluster, up(0))["reason"] == "old trouble"


def test_ready_is_sticky() -> None:
    first = calc(v1(), up(1))
    later = calc(with_status(v1(), first), [head(phase="Failed", ready="False")], now=T0 + timedelta(hours=1))
    assert later["state"] == "ready"
    assert later["stateTransitionTimes"] == {"ready": T0S}
    assert later["lastUpdateTime"] == "2026-05-01T13:00:00Z"
    assert "readyWorkerReplicas" not in later
    assert "availableWorkerReplicas" not in later


def test_suspended_when_spec_suspend_and_no_pods() -> None:
    cluster = with_status(with_spec(v1(), suspend=True), calc(v1(), up(1)))
    assert calc(cluster, up(1))["state"] == "ready"
    later = T0 + timedelta(minutes=1)
    new = calc(cluster, [], now=later)
    assert new["state"] == "suspended"
    assert new["stateTransitionTimes"] == {"ready": T0S, "suspended": "2026-05-01T12:01:00Z"}
    assert calc(with_spec(v1(), suspend=False), []).get("state") is None


def test_counters() -> None:
    pods = [
        head(),
        pod("w1"),
        pod("w2", ready="False"),
        pod("w3", phase="Pending", ready="False"),
        pod("w4", phase="Failed", ready="False"),
        {**pod("w5"), "metadata": {**pod("w5")["metadata"], "deletionTimestamp": "2026-05-01T11:59:00Z"}},
    ]
    new = calc(v1(), pods)
    assert (new["readyWorkerReplicas"], new["availableWorkerReplicas"]) == (2, 3)  # terminating Pods count too


# --- conditions -----------------------------------------------------------------------------------------------------


def test_head_pod_ready_variants() -> None:
    cluster = v1()
    assert conditions(calc(cluster, [pod("w")]))["HeadPodReady"] == ("False", "HeadPodNotFound", "Head Pod not found")
    assert conditions(calc(cluster, [head(ready=None)]))["HeadPodReady"] == ("False", "Unknown", "")
    assert conditions(calc(cluster, [head()]))["HeadPodReady"] == ("True", "HeadPodRunningAndReady", "")
    assert conditions(calc(cluster, [head(reason="Custom")]))["HeadPodReady"] == ("True", "Custom", "")
    assert conditions(calc(cluster, [head(ready="Unknown")]))["HeadPodReady"] == ("Unknown", "Unknown", "")


@pytest.mark.parametrize(
    ("message", "statuses", "expected"),
    [
        pytest.param("msg", None, ("ContainersNotReady", "msg"), id="no-container-status"),
        pytest.param(
            "containers with unready status: [ray-head]",
            [
                {
                    "name": "ray-head",
                    "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}},
                }
            ],
            ("ImagePullBackOff", "containers with unready status: [ray-head]; ray-head: Back-off pulling image"),
            id="waiting",
        ),
        pytest.param(
            None,
            [{"name": "ray-head", "state": {"terminated": {"reason": "Error", "message": "exit 1"}}}],
            ("Error", "ray-head: exit 1"),
            id="terminated-no-pod-message",
        ),
        pytest.param(
            "m",
            [
                {"name": "sidecar", "state": {"running": {}}},
                {"name": "ray-head", "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}},
                {"name": "other", "state": {"waiting": {"reason": "Later", "message": "ignored"}}},
            ],
            ("CrashLoopBackOff", "m; ray-head: back-off"),
            id="first-waiting-or-terminated-only",
        ),
        pytest.param(
            "m",
            [{"name": "ray-head", "state": {"waiting": {"reason": "ContainerCreating"}}}],
            ("ContainerCreating", "m; ray-head: "),
            id="no-container-message",
        ),
    ],
)
def test_head_pod_ready_containers_not_ready_takes_the_container_reason(
    message: str | None, statuses: list[dict[str, Any]] | None, expected: tuple[str, str]
) -> None:
    pods = [
        head(phase="Pending", ready="False", reason="ContainersNotReady", message=message, container_statuses=statuses)
    ]
    assert conditions(calc(v1(), pods))["HeadPodReady"] == ("False", *expected)


def test_unchanged_condition_keeps_its_last_transition_time() -> None:
    first = calc(v1(), up(1))
    later = T0 + timedelta(minutes=5)
    second = calc(with_status(v1(), first), up(1), now=later)
    assert second["conditions"] == first["conditions"]
    third = calc(with_status(v1(), second), up(1, ready="False", reason="ContainersNotReady"), now=later)
    head_ready = condition(third, "HeadPodReady")
    assert (head_ready["status"], head_ready["lastTransitionTime"]) == ("False", "2026-05-01T12:05:00Z")
    assert condition(third, "RayClusterProvisioned")["lastTransitionTime"] == T0S


def test_reason_change_without_status_change_keeps_the_time() -> None:
    first = calc(v1(), [head(ready="False", reason="A")])
    second = calc(with_status(v1(), first), [head(ready="False", reason="B")], now=T0 + timedelta(minutes=1))
    head_ready = condition(second, "HeadPodReady")
    assert (head_ready["reason"], head_ready["lastTransitionTime"]) == ("B", T0S)


def test_provisioned_is_set_once_for_the_first_time() -> None:
    first = calc(v1(), [head(phase="Pending", ready="False"), pod("w", phase="Pending", ready="False")])
    assert conditions(first)["RayClusterProvisioned"] == (
        "False",
        "RayClusterPodsProvisioning",
        "RayCluster Pods are being provisioned for first time",
    )
    # Every existing Pod ready counts, even before all desired Pods exist.
    second = calc(with_status(v1(), first), [head()], now=T0 + timedelta(minutes=1))
    assert conditions(second)["RayClusterProvisioned"][:2] == ("True", "AllPodRunningAndReadyFirstTime")
    assert "state" not in second
    third = calc(with_status(v1(), second), [head(phase="Failed", ready="False")], now=T0 + timedelta(minutes=2))
    assert condition(third, "RayClusterProvisioned") == condition(second, "RayClusterProvisioned")
    assert conditions(calc(v1(), []))["RayClusterProvisioned"][0] == "False"  # no Pod at all is not provisioned


def test_replica_failure_added_with_a_marker_and_removed_without_failure() -> None:
    failed = calc(v1(), up(0), failure=ReconcileFailure("create worker: quota exceeded", "FailedCreateWorkerPod"))
    assert failed["conditions"][0] == {
        "type": "ReplicaFailure",
        "status": "True",
        "lastTransitionTime": T0S,
        "reason": "FailedCreateWorkerPod",
        "message": "create worker: quota exceeded",
    }
    unmarked = calc(with_status(v1(), failed), up(0), failure=ReconcileFailure("something else"))
    assert condition(unmarked, "ReplicaFailure") == failed["conditions"][0]  # left as it was
    assert "ReplicaFailure" not in conditions(calc(v1(), up(0), failure=ReconcileFailure("other")))
    healed = calc(with_status(v1(), failed), up(1))
    assert "ReplicaFailure" not in conditions(healed)
    assert healed["state"] == "ready"


def test_gate_off_writes_no_conditions_and_keeps_old_ones() -> None:
    new = calc(v1(), up(1), failure=None, options=GATE_OFF)
    assert "conditions" not in new
    assert new["state"] == "ready"
    old = calc(v1(), up(1))
    kept = calc(with_status(v1(), old), [], options=GATE_OFF, now=T0 + timedelta(minutes=1))
    assert kept["conditions"] == old["conditions"]


def test_suspend_sequence() -> None:
    cluster = v1()
    running = calc(cluster, up(1))
    assert not status.is_suspending(with_status(cluster, running))

    # The user sets spec.suspend: this pass only records Suspending; the reconciler deletes nothing yet.
    cluster = with_spec(cluster, suspend=True)
    t1 = T0 + timedelta(minutes=1)
    s1 = calc(with_status(cluster, running), up(1), now=t1)
    assert conditions(s1)["RayClusterSuspending"] == ("True", "RayClusterSuspending", "")
    assert conditions(s1)["RayClusterSuspended"] == ("False", "RayClusterSuspended", "")
    assert conditions(s1)["RayClusterProvisioned"][0] == "True"
    assert s1["state"] == "ready"
    assert status.is_suspending(with_status(cluster, s1))
    assert not status.is_suspended(with_status(cluster, s1))

    # Pods are terminating: still Suspending, and its time stays.
    s2 = calc(with_status(cluster, s1), up(1), now=t1 + timedelta(seconds=2))
    assert condition(s2, "RayClusterSuspending") == condition(s1, "RayClusterSuspending")

    # Every Pod is gone: Suspended.
    t3 = t1 + timedelta(seconds=30)
    s3 = calc(with_status(cluster, s2), [], now=t3)
    assert conditions(s3)["RayClusterSuspending"] == ("False", "RayClusterSuspending", "")
    assert conditions(s3)["RayClusterSuspended"] == ("True", "RayClusterSuspended", "")
    assert conditions(s3)["RayClusterProvisioned"] == (
        "False",
        "RayClusterPodsProvisioning",
        "RayCluster has been suspended",
    )
    assert s3["state"] == "suspended"
    assert not status.is_suspending(with_status(cluster, s3))
    assert status.is_suspended(with_status(cluster, s3))

    # Staying suspended changes nothing that matters.
    s4 = calc(with_status(cluster, s3), [], now=t3 + timedelta(minutes=5))
    assert not status.status_needs_update(s3, s4)

    # The user sets suspend back to false: Suspended goes False, the state stays until the cluster is ready again.
    resumed = with_spec(cluster, suspend=False)
    s5 = calc(with_status(resumed, s4), [], now=t3 + timedelta(minutes=6))
    assert conditions(s5)["RayClusterSuspended"][0] == "False"
    assert conditions(s5)["RayClusterProvisioned"][2] == "RayCluster has been suspended"
    assert s5["state"] == "suspended"
    assert not status.is_suspended(with_status(resumed, s5))
    s6 = calc(with_status(resumed, s5), up(1), now=t3 + timedelta(minutes=7))
    assert conditions(s6)["RayClusterProvisioned"][:2] == ("True", "AllPodRunningAndReadyFirstTime")
    assert s6["state"] == "ready"
    assert s6["stateTransitionTimes"]["ready"] == "2026-05-01T12:08:30Z"


def test_an_unset_suspend_does_not_resume_a_suspended_cluster() -> None:
    cluster = with_spec(v1(), suspend=True)
    suspended = {
        "conditions": [
            {
                "type": "RayClusterSuspended",
                "status": "True",
                "lastTransitionTime": T0S,
                "reason": "RayClusterSuspended",
                "message": "",
            }
        ]
    }
    new = calc(with_status(with_spec(cluster, suspend=None), suspended), [])
    assert conditions(new)["RayClusterSuspended"][0] == "True"


def test_suspend_helpers_with_the_gate_off() -> None:
    cluster = with_spec(v1(), suspend=True)
    assert status.is_suspending(cluster, options=GATE_OFF)
    assert not status.is_suspending(cluster)  # gate on: only the condition counts
    assert not status.is_suspended(cluster, options=GATE_OFF)


# --- endpoints and head -------------------------------------------------------------------------------------------


def test_endpoints_node_port_then_target_port() -> None:
    cluster = v1()
    service = live(services.head_service(cluster, OPTIONS), cluster_ip="10.96.0.10")
    service["spec"]["ports"] = [
        {"name": "a", "port": 1, "targetPort": 11, "nodePort": 30001},
        {"name": "b", "port": 2, "targetPort": 12},
        {"name": "c", "port": 3, "targetPort": "named"},
        {"name": "", "port": 4, "targetPort": 14},
        {"name": "e", "port": 5},
    ]
    old = with_status(cluster, {"endpoints": {"stale": "1"}})
    new = calc(old, up(1), svcs=[service])
    assert new["endpoints"] == {"stale": "1", "a": "30001", "b": "12", "c": "named"}
    assert new["head"]["serviceIP"] == "10.96.0.10"


def test_head_service_ip_is_the_pod_ip_when_headless() -> None:
    new = calc(v1(), [pod("w")])
    assert new["head"] == {"serviceName": "raycluster-kuberay-head-svc"}


@pytest.mark.parametrize(
    "svcs",
    [
        pytest.param([], id="none"),
        pytest.param(head_services(v1()) * 2, id="two"),
        pytest.param([live(services.head_service(v1(), OPTIONS), cluster_ip="")], id="no-cluster-ip"),
    ],
)
def test_head_service_problems_fail_the_calculation(svcs: list[dict[str, Any]]) -> None:
    with pytest.raises(StatusError):
        calc(v1(), up(1), svcs=svcs)


def test_two_head_pods_fail_the_calculation() -> None:
    with pytest.raises(StatusError, match="multiple heads"):
        calc(v1(), [head(), head()])


def test_inputs_are_not_mutated_and_unknown_fields_dropped() -> None:
    first = calc(v1(), up(1))
    cluster = with_status(v1(), {**first, "futureField": 1})
    pods = up(1)
    svcs = head_services(cluster)
    before = (copy.deepcopy(cluster.model_dump()), copy.deepcopy(pods), copy.deepcopy(svcs))
    new = calc(cluster, pods, svcs=svcs, now=T0 + timedelta(minutes=1))
    new["endpoints"]["x"] = "y"
    new["conditions"][0]["status"] = "False"
    assert (cluster.model_dump(), pods, svcs) == before
    assert "futureField" not in new


def test_observed_generation() -> None:
    document = load("ray-cluster.sample.yaml")
    document["metadata"]["generation"] = 7
    assert calc(cluster_of(document), up(1))["observedGeneration"] == 7


# --- when to write ------------------------------------------------------------------------------------------------


def test_status_needs_update() -> None:
    first = calc(v1(), up(1))
    assert status.status_needs_update(None, first)
    assert status.status_needs_update({}, first)
    same = calc(with_status(v1(), first), up(1), now=T0 + timedelta(hours=1))
    assert same["lastUpdateTime"] != first["lastUpdateTime"]
    assert not status.status_needs_update(first, same)
    assert not status.status_needs_update(first, {**first, "desiredCPU": "3", "observedGeneration": 2})
    changes: list[dict[str, Any]] = [
        {"state": "suspended"},
        {"reason": "why"},
        {"readyWorkerReplicas": 0},
        {"availableWorkerReplicas": 2},
        {"desiredWorkerReplicas": 2},
        {"minWorkerReplicas": 0},
        {"maxWorkerReplicas": 6},
        {"endpoints": {**first["endpoints"], "serve": "8000"}},
        {"head": {**first["head"], "podIP": "10.1.0.6"}},
        {"conditions": first["conditions"][:-1]},
    ]
    for change in changes:
        assert status.status_needs_update(first, {**first, **change}), change


def test_status_needs_update_treats_zero_and_absent_alike() -> None:
    assert not status.status_needs_update({"readyWorkerReplicas": 0, "endpoints": {}}, {"head": {}})


# --- replica arithmetic -------------------------------------------------------------------------------------------


def group(**fields: Any) -> WorkerGroupSpec:
    return WorkerGroupSpec.model_validate({"groupName": "g", "template": {}, **fields})


@pytest.mark.parametrize(
    ("fields", "desired"),
    [
        ({"replicas": None, "minReplicas": 1, "maxReplicas": 5}, 1),
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5}, 3),
        ({"replicas": 6, "minReplicas": 1, "maxReplicas": 5}, 5),
        ({"replicas": 0, "minReplicas": 1, "maxReplicas": 5}, 1),
        # min > max (validation rejects it): v1.6.1 checks "below min" first, then "above max"
        ({"replicas": None, "minReplicas": 5, "maxReplicas": 1}, 5),
        ({"replicas": 2, "minReplicas": 5, "maxReplicas": 1}, 5),
        ({"replicas": 7, "minReplicas": 5, "maxReplicas": 1}, 1),
        ({"replicas": 3, "minReplicas": 1, "maxReplicas": 5, "suspend": True}, 0),
        ({"replicas": 5, "minReplicas": 1, "maxReplicas": 5, "numOfHosts": 4}, 20),
        ({"replicas": 1, "minReplicas": 3, "numOfHosts": 4}, 12),
    ],
)
def test_desired_worker_replicas(fields: dict[str, Any], desired: int) -> None:
    assert groups.desired_worker_replicas(group(**fields)) == desired


def spec_with(*group_fields: dict[str, Any]) -> Any:
    document = load("ray-cluster.sample.yaml")
    document["spec"]["workerGroupSpecs"] = [
        {"groupName": f"g{i}", "template": {}, **fields} for i, fields in enumerate(group_fields)
    ]
    spec = cluster_of(document).spec
    assert spec is not None
    return spec


def test_totals() -> None:
    spec = spec_with(
        {"replicas": 3, "minReplicas": 1, "maxReplicas": 6, "numOfHosts": 4},
        {"replicas": 3, "minReplicas": 2, "maxReplicas": 5},
        {"replicas": 3, "minReplicas": 3, "maxReplicas": 3, "suspend": True},
    )
    assert groups.total_desired_workers(spec) == 15
    assert groups.total_min_workers(spec) == 6
    assert groups.total_max_workers(spec) == 29


@pytest.mark.parametrize(
    ("group_fields", "expected"),
    [
        ([{"replicas": 1, "minReplicas": 3, "numOfHosts": 4}], MAX_INT32),
        ([{"minReplicas": 1, "maxReplicas": 1500000000, "numOfHosts": 2}, {"maxReplicas": 1000000000}], MAX_INT32),
        ([{"minReplicas": 2, "maxReplicas": 100, "numOfHosts": 4}], 400),
        ([{"minReplicas": 1}], MAX_INT32),
    ],
)
def test_total_max_workers_saturates(group_fields: list[dict[str, Any]], expected: int) -> None:
    assert groups.total_max_workers(spec_with(*group_fields)) == expected


def test_desired_resources_rules() -> None:
    document = load("ray-cluster.sample.yaml")
    head_spec = document["spec"]["headGroupSpec"]["template"]["spec"]
    head_spec["containers"][0]["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m"}}
    head_spec["containers"].append({"name": "sidecar", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}})
    head_spec["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "8"}}}]
    document["spec"]["workerGroupSpecs"] = [
        {
            "groupName": "gpu",
            "replicas": 9,  # above maxReplicas: resources use it as written
            "minReplicas": 0,
            "maxReplicas": 2,
            "numOfHosts": 2,
            "template": {
                "spec": {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": 1}}}]}
            },
        },
        {
            "groupName": "mig",
            "replicas": 1,
            "template": {
                "spec": {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/mig-1g.5gb": 2}}}]}
            },
        },
        {
            "groupName": "off",
            "replicas": 4,
            "suspend": True,
            "template": {"spec": {"containers": [{"name": "w", "resources": {"limits": {"cpu": "100"}}}]}},
        },
    ]
    new = calc(cluster_of(document), [head()])
    assert new["desiredCPU"] == "18750m"  # 500m + 250m + 9 x 2 x 1
    assert new["desiredMemory"] == "1152Mi"  # 1Gi (limit, no request) + 128Mi
    assert new["desiredGPU"] == "20"  # 18 nvidia.com/gpu + 2 MIG slices
    assert groups.is_gpu_resource_name("amd.com/gpu")
    assert not groups.is_gpu_resource_name("google.com/tpu")


# --- quantities -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", "0"),
        ("0Gi", "0"),
        ("2", "2"),
        ("1000", "1k"),
        ("500m", "500m"),
        ("1.5", "1500m"),
        ("0.5Gi", "512Mi"),
        ("1.5Gi", "1536Mi"),
        ("6Gi", "6Gi"),
        ("1024", "1024"),
        ("1024Ki", "1Mi"),
        ("1023Ki", "1023Ki"),
        ("5368709120", "5368709120"),
        ("200G", "200G"),
        ("840000M", "840G"),
        ("1e3", "1e3"),
        ("1E3", "1e3"),
        ("1.2e-1", "120e-3"),
        ("1E", "1E"),
        ("0.1Ki", "102400m"),
        ("0.0000000001", "1n"),
        ("-500m", "-500m"),
        ("+2", "2"),
        (".5", "500m"),
        ("5.", "5"),
        (3, "3"),
        (0.25, "250m"),
    ],
)
def test_canonical_quantities(text: str | int | float, expected: str) -> None:
    assert canonical(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "1Gb", "1e", "1 Gi", ".", "1.2.3", "Gi", "--1", "1e1001"])
def test_invalid_quantities(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_sums_keep_the_first_non_zero_format() -> None:
    assert format_quantity(sum_quantities(parse_quantity(q) for q in ["5Gi", "1Gi"])) == "6Gi"
    assert format_quantity(sum_quantities(parse_quantity(q) for q in ["40G", "200G", "200G"])) == "440G"
    assert format_quantity(sum_quantities(parse_quantity(q) for q in ["0", "1Gi", "1G"])) == "2073741824"
    assert format_quantity(sum_quantities(parse_quantity(q) for q in ["1G", "1Gi"])) == "2073741824"
    assert format_quantity(sum_quantities(parse_quantity(q) for q in ["1", "500m"])) == "1500m"
    assert format_quantity(sum_quantities([])) == "0"


suffixes = st.sampled_from(["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
numbers = st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False, allow_infinity=False)


@given(numbers, suffixes)
def test_formatting_then_parsing_keeps_the_value(number: Any, suffix: str) -> None:
    parsed = parse_quantity(f"{number}{suffix}")
    text = format_quantity(parsed)
    again = parse_quantity(text)
    assert again.value == parsed.value
    canonical = format_quantity(again)  # a text may change format once (below), then it is a fixed point
    assert format_quantity(parse_quantity(canonical)) == canonical


def test_a_binary_quantity_off_the_1024_grid_is_written_plainly_then_reads_back_decimal() -> None:
    """As apimachinery's Quantity.String(): 12015.625Ki is 12304000 bytes, no whole number of Ki, so it is written
    without a suffix; that text parses as DecimalSI and is written 12304k (hypothesis found it; Go's answers are in
    tests/vectors/quantity.json, written by k8s.io/apimachinery v0.35.0)."""
    vectors = compare.load("quantity")
    assert vectors.find(text="12015.625Ki")["canonical"] == "12304000"
    assert vectors.find(text="12304000")["canonical"] == "12304k"
    assert format_quantity(parse_quantity("12015.625Ki")) == "12304000"
    assert format_quantity(parse_quantity("12304000")) == "12304k"


@given(
    st.integers(min_value=-(10**18), max_value=10**18),  # BinarySI is capped at 2^63-1 when parsed
    st.integers(min_value=0, max_value=9),
    st.sampled_from([DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT]),
)
def test_any_nano_precise_value_survives_a_round_trip(units: int, scale: int, fmt: Any) -> None:
    value = Fraction(units, 10**scale)
    text = format_quantity(Quantity(value, fmt))
    assert parse_quantity(text).value == value


def _cond(type_: str, value: str, reason: str = "") -> dict[str, str]:
    return {"type": type_, "status": value, "reason": reason}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({}, {"readyWorkerReplicas": 1, "head": {"podIP": "10.0.0.1"}}, True),
        ({}, {"conditions": [_cond("HeadPodReady", "False"), _cond("RayClusterSuspending", "False")]}, True),
        ({"conditions": [_cond("HeadPodReady", "False")]}, {"conditions": [_cond("HeadPodReady", "True")]}, True),
        ({}, {"state": "ready"}, False),
        ({"state": "ready"}, {"state": "ready", "reason": "x"}, False),
        ({}, {"conditions": [_cond("ReplicaFailure", "True", "FailedCreateWorkerPod")]}, False),
        (
            {"conditions": [_cond("RayClusterSuspending", "False")]},
            {"conditions": [_cond("RayClusterSuspending", "True")]},
            False,
        ),
        ({"conditions": [_cond("RayClusterSuspended", "True")]}, {"conditions": []}, False),
    ],
)
def test_progress_only_holds_back_only_what_reports_progress(old: dict[str, Any], new: dict[str, Any],
                                                             expected: bool) -> None:  # fmt: skip
    assert status.progress_only(old, new) is expected


def _resources_spec(*group_fields: dict[str, Any]) -> Any:
    """The sample cluster with a head asking for 1 CPU and worker groups of Pods asking for 500m CPU and 1Gi each."""
    document = load("ray-cluster.sample.yaml")
    document["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    worker = {"spec": {"containers": [{"name": "w", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}]}}
    document["spec"]["workerGroupSpecs"] = [
        {"groupName": f"g{i}", "template": copy.deepcopy(worker), **fields} for i, fields in enumerate(group_fields)
    ]
    spec = cluster_of(document).spec
    assert spec is not None
    return spec


@pytest.mark.parametrize(
    ("group_fields", "cpu", "memory"),
    [
        pytest.param([{"maxReplicas": 3}], "1", "0", id="v1.7.0: replicas unset is 0 (v1.6.1 panicked)"),
        pytest.param([{"replicas": 2, "numOfHosts": 3}], "4", "6Gi", id="replicas x numOfHosts"),
        pytest.param([{"replicas": 2}, {"replicas": 4, "suspend": True}], "2", "2Gi", id="suspended group left out"),
        pytest.param(
            [{"replicas": 2147483647, "numOfHosts": 2}],
            "2147483648",
            "4294967294Gi",
            id="v1.7.0: one int64 product, no int32 wrap-around",
        ),
        pytest.param([{"replicas": -1}], "500m", "-1Gi", id="v1.7.0: a negative replicas multiplies as written"),
    ],
)  # KubeRay v1.7.0 CalculateDesiredResources
def test_desired_resources_v170(group_fields: list[dict[str, Any]], cpu: str, memory: str) -> None:
    resources = groups.desired_resources(_resources_spec(*group_fields))
    assert format_quantity(resources.get("cpu", ZERO)) == cpu
    assert format_quantity(resources.get("memory", ZERO)) == memory


def test_min_resources_leave_out_suspended_groups_and_pod_resources_change_nothing() -> None:
    spec = _resources_spec(
        {"replicas": 5, "minReplicas": 2, "numOfHosts": 2},
        {"replicas": 5, "minReplicas": 3, "suspend": True},
    )
    before = copy.deepcopy(spec.to_wire())
    resources = groups.min_resources(spec)  # KubeRay v1.7.0 CalculateMinResources: suspended groups count 0
    assert (format_quantity(resources["cpu"]), format_quantity(resources["memory"])) == ("3", "4Gi")
    template = spec.worker_group_specs[0].template
    assert groups.pod_resources(template) == {"cpu": parse_quantity("500m"), "memory": parse_quantity("1Gi")}
    assert "requests" not in template["spec"]["containers"][0]["resources"]  # v1.6.1 copied the limits in
    assert spec.to_wire() == before

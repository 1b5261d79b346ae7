"""The process kubelet's Pod status rules: phase (the kubelet's getPhase), conditions, transition times."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.sandbox.kubelet import podstatus as ps
from raykube.sandbox.kubelet.main import pod_action
from raykube.sandbox.kubelet.podcontext import Container

NOW = "2026-01-01T00:00:10Z"
BEFORE = "2026-01-01T00:00:00Z"


def running(name: str = "main", *, ready: bool = True, started: bool = True, **extra: Any) -> dict[str, Any]:
    return {"name": name, "state": {"running": {"startedAt": BEFORE}}, "ready": ready, "started": started, **extra}


def exited(name: str = "main", code: int = 0) -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code}}, "ready": False, "started": False}


def waiting(name: str = "main", reason: str = "ContainerCreating", *, last_code: int | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"name": name, "state": {"waiting": {"reason": reason}}, "ready": False, "started": False}
    if last_code is not None:
        status["lastState"] = {"terminated": {"exitCode": last_code}}
    return status


def spec(policy: str = "Always", inits: tuple[str, ...] = (), sidecars: tuple[str, ...] = (), **extra: Any) -> Any:
    init_containers = [{"name": n} for n in inits] + [{"name": n, "restartPolicy": "Always"} for n in sidecars]
    return {"restartPolicy": policy, "initContainers": init_containers, "containers": [{"name": "main"}], **extra}


# ------------------------------------------------------------------------------------------------------- phase
def test_pending_while_an_init_container_runs() -> None:
    assert (
        ps.phase(spec(inits=("setup",)), [running("setup")], [waiting(reason="PodInitializing")], initialized=False)
        == ps.PENDING
    )


def test_a_failed_init_container_fails_the_pod_only_under_never() -> None:
    statuses = [waiting(reason="PodInitializing")]
    assert ps.phase(spec("Never", inits=("setup",)), [exited("setup", 1)], statuses, initialized=False) == ps.FAILED
    crashing = [waiting("setup", "CrashLoopBackOff", last_code=1)]
    assert ps.phase(spec("OnFailure", inits=("setup",)), crashing, statuses, initialized=False) == ps.PENDING


def test_running_once_initialized() -> None:
    inits = [exited("setup", 0)]
    assert ps.phase(spec(inits=("setup",)), inits, [running()], initialized=True) == ps.RUNNING


def test_a_sidecar_does_not_hold_the_pod_pending_once_initialized() -> None:
    status = spec(sidecars=("proxy",))
    assert ps.phase(status, [running("proxy")], [running()], initialized=True) == ps.RUNNING
    assert ps.phase(status, [running("proxy")], [exited("main", 0)], initialized=True) == ps.RUNNING  # Always


@pytest.mark.parametrize(
    ("policy", "code", "expected"),
    [
        ("Never", 0, ps.SUCCEEDED),
        ("Never", 3, ps.FAILED),
        ("OnFailure", 0, ps.SUCCEEDED),
        ("OnFailure", 4, ps.RUNNING),  # being restarted
        ("Always", 0, ps.RUNNING),  # restarted, success or not
        ("Always", 1, ps.RUNNING),
    ],
)
def test_stopped_containers_by_restart_policy(policy: str, code: int, expected: str) -> None:
    assert ps.phase(spec(policy), [], [exited("main", code)], initialized=True) == expected


def test_a_container_restarting_under_always_keeps_the_pod_running() -> None:
    backing_off = waiting("main", "CrashLoopBackOff", last_code=1)
    assert ps.phase(spec("Always"), [], [backing_off], initialized=True) == ps.RUNNING


def test_a_containers_own_restart_policy_wins_over_the_pods() -> None:
    """Container restart rules (Kubernetes 1.34+; KubeRay v1.7.0's SidecarSubmitterRestart): in a ``Never`` head Pod
    the submitter container with ``restartPolicy: OnFailure`` that failed is being restarted (Running), and once it
    succeeds, with the other container stopped too, the Pod is Succeeded; a ``Never`` container in an ``Always`` Pod
    stays down."""
    head = {
        "restartPolicy": "Never",
        "containers": [{"name": "ray-head"}, {"name": "submitter", "restartPolicy": "OnFailure"}],
    }
    assert ps.phase(head, [], [exited("ray-head", 0), exited("submitter", 1)], initialized=True) == ps.RUNNING
    assert ps.phase(head, [], [exited("ray-head", 0), waiting("submitter", "CrashLoopBackOff", last_code=1)],
                    initialized=True) == ps.RUNNING  # fmt: skip
    assert ps.phase(head, [], [exited("ray-head", 0), exited("submitter", 0)], initialized=True) == ps.SUCCEEDED
    assert ps.phase(head, [], [exited("ray-head", 1), exited("submitter", 0)], initialized=True) == ps.FAILED
    assert ps.phase(head, [], [exited("ray-head", 0), exited("submitter", 1)], initialized=True, terminal=True) == (
        ps.FAILED
    )
    once = {"restartPolicy": "Always", "containers": [{"name": "main", "restartPolicy": "Never"}]}
    assert ps.phase(once, [], [exited("main", 1)], initialized=True) == ps.FAILED
    assert ps.container_restart_policy(head, "ray-head") == "Never"
    assert ps.container_restart_policy(head, "submitter") == "OnFailure"


def test_a_container_not_started_yet_keeps_the_pod_pending() -> None:
    assert ps.phase(spec(), [], [waiting(reason="CreateContainerConfigError")], initialized=True) == ps.PENDING


def test_a_pod_stopped_for_its_deletion_gets_a_terminal_phase() -> None:
    killed = [exited("main", 137)]
    assert ps.phase(spec("Always"), [], killed, initialized=True) == ps.RUNNING
    assert ps.phase(spec("Always"), [], killed, initialized=True, terminal=True) == ps.FAILED
    assert ps.phase(spec("Always"), [], [exited("main", 0)], initialized=True, terminal=True) == ps.SUCCEEDED
    never_started = [waiting(reason="CreateContainerConfigError")]
    assert ps.phase(spec("Always"), [], never_started, initialized=True, terminal=True) == ps.FAILED


# ------------------------------------------------------------------------------------------------------- conditions
def by_type(conditions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in conditions}


def test_conditions_of_a_pod_in_its_init_containers() -> None:
    found = by_type(
        ps.conditions(
            spec(inits=("setup",), sidecars=("proxy",)),
            ps.PENDING,
            [running("setup", ready=False), running("proxy", ready=False, started=False)],
            [waiting(reason="PodInitializing")],
            sandbox_ready=True,
            initialized=False,
        )
    )
    assert found["PodReadyToStartContainers"]["status"] == "True"
    assert found["Initialized"] == {
        "type": "Initialized",
        "status": "False",
        "reason": "ContainersNotInitialized",
        "message": "containers with incomplete status: [setup proxy]",
    }
    assert found["ContainersReady"]["message"] == "containers with unready status: [proxy main]"
    assert found["Ready"] == {**found["ContainersReady"], "type": "Ready"}
    assert found["PodScheduled"]["status"] == "True"


def test_a_ready_pod() -> None:
    found = by_type(ps.conditions(spec(), ps.RUNNING, [], [running()], sandbox_ready=True, initialized=True))
    assert {t: c["status"] for t, c in found.items()} == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
        "PodScheduled": "True",
    }


@pytest.mark.parametrize(("phase", "reason"), [(ps.SUCCEEDED, "PodCompleted"), (ps.FAILED, "PodFailed")])
def test_a_finished_pod_is_not_ready(phase: str, reason: str) -> None:
    found = by_type(ps.conditions(spec(), phase, [], [exited()], sandbox_ready=False, initialized=True))
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", reason)
    assert (found["ContainersReady"]["status"], found["ContainersReady"]["reason"]) == ("False", reason)
    assert found["PodReadyToStartContainers"]["status"] == "False"


def test_readiness_gates_hold_ready_until_their_conditions_are_true() -> None:
    gated = spec(readinessGates=[{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}])
    current = [{"type": "example.com/lb", "status": "False", "lastTransitionTime": BEFORE}]
    found = by_type(
        ps.conditions(gated, ps.RUNNING, [], [running()], sandbox_ready=True, initialized=True, current=current)
    )
    assert found["ContainersReady"]["status"] == "True"
    assert found["Ready"] == {
        "type": "Ready",
        "status": "False",
        "reason": "ReadinessGatesNotReady",
        "message": 'the status of pod readiness gate "example.com/lb" is not "True", but False, '
        'corresponding condition of pod readiness gate "example.com/dns" does not exist.',
    }
    assert found["example.com/lb"] == current[0]  # kept as it is: not the kubelet's

    current = [{"type": t, "status": "True"} for t in ("example.com/lb", "example.com/dns")]
    found = by_type(
        ps.conditions(gated, ps.RUNNING, [], [running()], sandbox_ready=True, initialized=True, current=current)
    )
    assert found["Ready"]["status"] == "True"


def test_the_kubelets_own_conditions_replace_the_current_ones() -> None:
    current = [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
    generated = ps.conditions(
        spec(), ps.PENDING, [], [waiting()], sandbox_ready=False, initialized=True, current=current
    )
    assert [c["type"] for c in generated].count("Ready") == 1
    assert by_type(generated)["Ready"]["status"] == "False"


def test_transition_times_move_only_with_the_status() -> None:
    previous = [
        {"type": "Ready", "status": "False", "lastTransitionTime": BEFORE},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": BEFORE},
    ]
    generated = [ps.condition("Ready", True), ps.condition("PodScheduled", True), ps.condition("Initialized", True)]
    timed = by_type(ps.with_transition_times(generated, previous, NOW))
    assert timed["Ready"]["lastTransitionTime"] == NOW  # False -> True
    assert timed["PodScheduled"]["lastTransitionTime"] == BEFORE  # unchanged: the scheduler's time stays
    assert timed["Initialized"]["lastTransitionTime"] == NOW  # new
    assert timed["Ready"]["lastProbeTime"] is None


def test_the_status_body() -> None:
    body = ps.pod_status(
        pod_phase=ps.RUNNING,
        conditions=[],
        init_statuses=[],
        statuses=[running()],
        host_ip="127.0.0.1",
        pod_ip="10.244.0.2",
        start_time=BEFORE,
        qos_class="Burstable",
    )
    assert body["podIPs"] == [{"ip": "10.244.0.2"}]
    assert body["hostIPs"] == [{"ip": "127.0.0.1"}]
    assert body["qosClass"] == "Burstable"
    assert "initContainerStatuses" not in body


def _pod(phase: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "u1"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": "process-node-0"}, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("pod", "deleted", "running", "finished", "action"),
    [
        (_pod("Pending"), False, False, False, "start"),
        (_pod("Running"), False, True, False, "update"),
        (_pod("Running", deleting=True), False, True, False, "update"),
        (_pod("Running"), True, True, False, "forget"),
        (_pod("Failed"), True, False, True, "forget"),
        (_pod("Succeeded"), False, False, False, "ignore"),
        (_pod("Failed", deleting=True), False, False, False, "confirm"),
        # The case seen in CI: a Pod kept by a finalizer, its worker ended; an event from before its last status
        # (still Running) came after. A second worker published containers that never ran (ContainerCreating).
        (_pod("Running", deleting=True), False, False, True, "confirm"),
        (_pod("Running"), False, False, True, "ignore"),
    ],
)
def test_a_pod_whose_worker_ended_is_never_started_again(
    pod: dict[str, Any], deleted: bool, running: bool, finished: bool, action: str
) -> None:
    assert pod_action(pod, deleted=deleted, running=running, finished=finished) == action


def test_the_log_links_kwok_reads_follow_each_run(tmp_path: Any) -> None:
    """kwok's Logs names current.log and previous.log once; each run's start repoints them (run N, run N-1), so
    ``kubectl logs --previous`` agrees with the restartCount at once, with no apply for kwok to see late."""
    c = Container(spec={"name": "main"}, kind="main", dir=tmp_path)
    (tmp_path / "logs").mkdir()
    for run in range(3):
        (tmp_path / "logs" / f"{run}.log").write_text(f"run {run}\n")
    c.point_logs(0)
    assert c.current_log.read_text() == "run 0\n"
    assert not c.previous_log.exists()
    c.point_logs(1)
    c.point_logs(2)
    assert (c.current_log.read_text(), c.previous_log.read_text()) == ("run 2\n", "run 1\n")
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [
        "0.log",
        "1.log",
        "2.log",
        "current.log",
        "previous.log",
    ]

"""A Pod's status as a kubelet derives it: phase, the kubelet's conditions, the status body. Pure functions.

Inputs are plain: the Pod's ``spec`` (``restartPolicy``, ``initContainers``, ``readinessGates``), the container
statuses as the API has them (``name``, ``state``, ``lastState``, ``ready``, ``started``; init containers, sidecars
among them, apart from the regular ones) and what only the Pod worker knows (its sandbox is up, its init containers
have all completed once, it has stopped everything for a deletion). :class:`~raykube.sandbox.kubelet.pod.PodWorker`
gathers them and publishes the result.

Where the rules come from (Kubernetes, cited rather than copied):

* the phase: the kubelet's ``getPhase`` in ``pkg/kubelet/kubelet_pods.go``, and the status manager's
  ``TerminatePod`` in ``pkg/kubelet/status/status_manager.go`` (a Pod the kubelet stopped for a deletion gets a
  terminal phase before it goes);
* the conditions: ``pkg/kubelet/status/generate.go`` (``GeneratePodReadyToStartContainersCondition``,
  ``GeneratePodInitializedCondition``, ``GenerateContainersReadyCondition``, ``GeneratePodReadyCondition``) and
  ``generateAPIPodStatus`` in ``kubelet_pods.go`` (``PodScheduled`` is asserted True; conditions the kubelet does
  not own, readiness gates' among them, are kept as they are);
* ``lastTransitionTime`` moves only when a condition's status does (the status manager's
  ``updateLastTransitionTime``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Status = Mapping[str, Any]  # one container's status, as in status.containerStatuses

ALWAYS = "Always"
ON_FAILURE = "OnFailure"
NEVER = "Never"
PENDING = "Pending"
RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINAL = (SUCCEEDED, FAILED)

POD_READY_TO_START_CONTAINERS = "PodReadyToStartContainers"
INITIALIZED = "Initialized"
READY = "Ready"
CONTAINERS_READY = "ContainersReady"
POD_SCHEDULED = "PodScheduled"
# The conditions a kubelet owns (pkg/kubelet/types/pod_status.go); it keeps every other one as it finds it.
KUBELET_CONDITIONS = (POD_READY_TO_START_CONTAINERS, INITIALIZED, READY, CONTAINERS_READY, POD_SCHEDULED)


def restart_policy(spec: Mapping[str, Any]) -> str:
    return str(spec.get("restartPolicy") or ALWAYS)


def container_restart_policy(spec: Mapping[str, Any], name: str) -> str:
    """A regular container's restart policy: its own ``restartPolicy`` (Kubernetes 1.34+ container restart rules,
    what KubeRay v1.7.0's SidecarSubmitterRestart sets on the ``ray-job-submitter`` container), else the Pod's."""
    for container in spec.get("containers") or []:
        if container.get("name") == name and container.get("restartPolicy"):
            return str(container["restartPolicy"])
    return restart_policy(spec)


def is_sidecar(init_container: Mapping[str, Any]) -> bool:
    """A restartable init container (``restartPolicy: Always`` on an init container): it keeps running."""
    return init_container.get("restartPolicy") == ALWAYS


def sidecar_names(spec: Mapping[str, Any]) -> set[str]:
    return {str(c.get("name")) for c in spec.get("initContainers") or [] if is_sidecar(c)}


def _terminated_code(state: Mapping[str, Any]) -> int | None:
    terminated = state.get("terminated")
    return None if terminated is None else int(terminated.get("exitCode", 0))


def phase(  # noqa: PLR0912 - the kubelet's rules, one case at a time
    spec: Mapping[str, Any],
    init_statuses: Sequence[Status],
    statuses: Sequence[Status],
    *,
    initialized: bool,
    terminal: bool = False,
) -> str:
    """The Pod's phase, by ``getPhase``.

    * Regular init containers: one running, or waiting without a failed run behind it, is pending (until the Pod has
      been initialized once); one that failed (terminated non-zero, or waiting after a non-zero exit) under
      ``restartPolicy: Never`` fails the Pod.
    * Sidecars count as running while they run and are otherwise left out.
    * Regular containers: any waiting for its first run keeps the Pod Pending; any running makes it Running; when
      all have stopped, ``Always`` restarts them (Running), all exited 0 is Succeeded, a failure under ``Never`` is
      Failed and under ``OnFailure`` is being restarted (Running). A container waiting to restart counts as stopped.
    * ``terminal``: the kubelet has stopped the Pod's containers for good (it is being deleted). They will not be
      restarted, so stopped containers give Succeeded (all exited 0) or Failed whatever the restart policy, and a Pod
      that would still be Pending or Running is marked Failed, as ``TerminatePod`` does.
    """
    policy = restart_policy(spec)
    sidecars = sidecar_names(spec)
    pending_init = failed_init = 0
    for status in init_statuses:
        if status.get("name") in sidecars:
            continue
        state = status.get("state") or {}
        if "running" in state:
            pending_init += 1
        elif "terminated" in state:
            failed_init += _terminated_code(state) != 0
        elif _terminated_code(status.get("lastState") or {}) not in (None, 0):
            failed_init += 1
        elif not initialized:
            pending_init += 1
    if failed_init and policy == NEVER:
        return FAILED
    running = waiting = stopped = succeeded = restarting = 0
    for status in init_statuses:
        if status.get("name") in sidecars and "running" in (status.get("state") or {}):
            running += 1
    for status in statuses:
        state = status.get("state") or {}
        if "running" in state:
            running += 1
            continue
        if "terminated" in state:
            code = _terminated_code(state)
        elif (status.get("lastState") or {}).get("terminated"):
            code = _terminated_code(status["lastState"])
        else:
            waiting += 1
            continue
        stopped += 1
        succeeded += code == 0
        own = container_restart_policy(spec, str(status.get("name", "")))
        restarting += not terminal and (own == ALWAYS or (own == ON_FAILURE and code != 0))
    if (pending_init > 0 and not initialized) or waiting > 0:
        found = PENDING
    elif running > 0 or restarting > 0:
        found = RUNNING  # Always, or OnFailure after a failure: being restarted
    elif stopped > 0:
        found = SUCCEEDED if stopped == succeeded else FAILED
    else:
        found = PENDING
    if terminal and found not in TERMINAL:
        return FAILED
    return found


def condition(type_: str, status: bool, reason: str = "", message: str = "") -> dict[str, Any]:
    """A Pod condition without its times (see :func:`with_transition_times`)."""
    found: dict[str, Any] = {"type": type_, "status": "True" if status else "False"}
    if reason:
        found["reason"] = reason
    if message:
        found["message"] = message
    return found


def _names(names: Sequence[str]) -> str:
    return f"[{' '.join(names)}]"  # Go's %s of a []string


def initialized_condition(
    spec: Mapping[str, Any], init_statuses: Sequence[Status], pod_phase: str, *, initialized: bool
) -> dict[str, Any]:
    """``GeneratePodInitializedCondition``: True once every regular init container exited 0 and every sidecar has
    started (and stays True after, which the kubelet tells by a regular container having started: ``initialized``
    here); a Succeeded Pod is initialized with reason ``PodCompleted``."""
    if pod_phase == SUCCEEDED:
        return condition(INITIALIZED, True, "PodCompleted")
    if initialized:
        return condition(INITIALIZED, True)
    sidecars = sidecar_names(spec)
    incomplete = [
        str(s.get("name"))
        for s in init_statuses
        if (not s.get("started") if s.get("name") in sidecars else _terminated_code(s.get("state") or {}) != 0)
    ]
    if incomplete:
        return condition(
            INITIALIZED, False, "ContainersNotInitialized", f"containers with incomplete status: {_names(incomplete)}"
        )
    return condition(INITIALIZED, True)


def containers_ready_condition(
    spec: Mapping[str, Any], init_statuses: Sequence[Status], statuses: Sequence[Status], pod_phase: str
) -> dict[str, Any]:
    """``GenerateContainersReadyCondition``: every regular container and sidecar is ready. A Succeeded Pod's is
    False with ``PodCompleted``, a Failed Pod's False with ``PodFailed``."""
    if pod_phase == SUCCEEDED:
        return condition(CONTAINERS_READY, False, "PodCompleted")
    if pod_phase == FAILED:
        return condition(CONTAINERS_READY, False, "PodFailed")
    sidecars = sidecar_names(spec)
    considered = [*(s for s in init_statuses if s.get("name") in sidecars), *statuses]
    unready = [str(s.get("name")) for s in considered if not s.get("ready")]
    if unready:
        return condition(
            CONTAINERS_READY, False, "ContainersNotReady", f"containers with unready status: {_names(unready)}"
        )
    return condition(CONTAINERS_READY, True)


def ready_condition(
    spec: Mapping[str, Any], containers_ready: Mapping[str, Any], others: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``GeneratePodReadyCondition``: ContainersReady's status, reason and message when it is not True; else False
    with ``ReadinessGatesNotReady`` while a readiness gate's condition (among ``others``, the conditions the kubelet
    does not own) is missing or not True; else True."""
    if containers_ready.get("status") != "True":
        return {**containers_ready, "type": READY}
    present = {str(c.get("type")): c for c in others}
    unready: list[str] = []
    for gate in spec.get("readinessGates") or []:
        kind = str(gate.get("conditionType"))
        found = present.get(kind)
        if found is None:
            unready.append(f'corresponding condition of pod readiness gate "{kind}" does not exist.')
        elif found.get("status") != "True":
            unready.append(f'the status of pod readiness gate "{kind}" is not "True", but {found.get("status")}')
    if unready:
        return condition(READY, False, "ReadinessGatesNotReady", ", ".join(unready))
    return condition(READY, True)


def conditions(
    spec: Mapping[str, Any],
    pod_phase: str,
    init_statuses: Sequence[Status],
    statuses: Sequence[Status],
    *,
    sandbox_ready: bool,
    initialized: bool,
    current: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The Pod's conditions without times: the kubelet's (PodReadyToStartContainers: the sandbox is up with its
    network; Initialized; Ready; ContainersReady; PodScheduled, always True on a node), then those of ``current``
    (the Pod's conditions now) that the kubelet does not own, unchanged."""
    others = [dict(c) for c in current if c.get("type") not in KUBELET_CONDITIONS]
    containers_ready = containers_ready_condition(spec, init_statuses, statuses, pod_phase)
    return [
        condition(POD_READY_TO_START_CONTAINERS, sandbox_ready),
        initialized_condition(spec, init_statuses, pod_phase, initialized=initialized),
        ready_condition(spec, containers_ready, others),
        containers_ready,
        condition(POD_SCHEDULED, True),
        *others,
    ]


def with_transition_times(
    generated: Sequence[Mapping[str, Any]], previous: Sequence[Mapping[str, Any]], now: str
) -> list[dict[str, Any]]:
    """``generated`` with ``lastProbeTime`` and ``lastTransitionTime``: a condition whose status is what it was in
    ``previous`` (the first of its type there) keeps that time, any other gets ``now``. Conditions that already have
    a transition time (the ones the kubelet does not own) keep theirs."""
    before: dict[str, Mapping[str, Any]] = {}
    for cond in previous:
        before.setdefault(str(cond.get("type")), cond)
    timed: list[dict[str, Any]] = []
    for cond in generated:
        if cond.get("lastTransitionTime"):
            timed.append(dict(cond))
            continue
        old = before.get(str(cond.get("type")))
        when = old.get("lastTransitionTime") if old is not None and old.get("status") == cond.get("status") else None
        timed.append({**cond, "lastProbeTime": None, "lastTransitionTime": when or now})
    return timed


def pod_status(
    *,
    pod_phase: str,
    conditions: Sequence[Mapping[str, Any]],
    init_statuses: Sequence[Status],
    statuses: Sequence[Status],
    host_ip: str,
    pod_ip: str,
    start_time: str,
    qos_class: str = "",
) -> dict[str, Any]:
    """The ``status`` a kubelet writes: phase, conditions, host and Pod IPs, start time, container statuses (init
    ones only when the Pod has some), and the ``qosClass`` the API server set, kept."""
    status: dict[str, Any] = {
        "phase": pod_phase,
        "conditions": list(conditions),
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": start_time,
        "containerStatuses": list(statuses),
    }
    if init_statuses:
        status["initContainerStatuses"] = list(init_statuses)
    if pod_ip:
        status["podIP"] = pod_ip
        status["podIPs"] = [{"ip": pod_ip}]
    if qos_class:
        status["qosClass"] = qos_class
    return status

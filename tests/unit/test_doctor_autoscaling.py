"""G10: a resource request Ray's autoscaler cannot place on any worker group, read from its log on the head and set
beside each group's logical resources (what KubeRay passes to ``ray start``)."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.doctor import facts
from raykube.doctor.facts import inside as fi
from raykube.doctor.inside import LOG_GLOBS
from tests.doctor_support import assert_fires, assert_quiet, one_finding
from tests.unit.test_doctor_inside import HEAD, RAY_STATUS, _diagnose, _head_probe, _inside, _log
from tests.unit.test_doctor_rules import World

MONITOR = "/tmp/ray/session_latest/logs/monitor.log"
V1 = (
    "2026-12-07 05:01:02,345\tINFO autoscaler.py:1 -- Error: No available node types can fulfill resource request "
    "{'CPU': 8.0}. Add suitable node types to this cluster to resolve this issue."
)
WAITING = RAY_STATUS.replace(" (no resource demands)", " {'CPU': 8.0}: 1+ pending tasks/actors")


def _autoscaled(**worker_params: str) -> World:
    world = World()
    cluster = world.one("rayclusters", "seed")
    cluster["spec"]["enableInTreeAutoscaling"] = True
    cluster["spec"]["workerGroupSpecs"][0]["rayStartParams"].update(worker_params)
    return world


def _waiting(line: str = V1, status: str = WAITING) -> dict[str, Any]:
    inside = _inside(head=_head_probe(status={"exit": 0, "stdout": status, "stderr": ""}))
    return _log(inside, HEAD, MONITOR, line)


def test_a_request_no_group_can_hold_is_the_root_cause_with_each_groups_logical_resources() -> None:
    found = one_finding(_diagnose(_autoscaled(), _waiting()), "G10")
    assert found.severity == "error"
    assert "{'CPU': 8.0}" in found.title and "no worker group" in found.title
    seen = {e.path: e.value for e in found.evidence}
    assert seen[MONITOR] == V1
    assert seen["spec.workerGroupSpecs[0] (workers) gives Ray"] == "CPU 1, memory 1Gi"
    assert seen["spec.headGroupSpec gives Ray"] == "CPU 1, memory 2Gi"
    assert seen["ray status: pending demand"] == "{'CPU': 8.0}: 1+ pending tasks/actors"


def test_near_misses_stay_quiet() -> None:
    # A worker group whose rayStartParams give Ray 8 CPUs holds it (whatever the limits say).
    assert_quiet(_diagnose(_autoscaled(**{"num-cpus": "8"}), _waiting()), "G10")
    # A request a worker fits: the autoscaler's line is about something else (an old demand).
    assert_quiet(_diagnose(_autoscaled(), _waiting(V1.replace("8.0", "1.0"))), "G10")
    # Nothing waits in ray status any more: the line is history.
    assert_quiet(_diagnose(_autoscaled(), _waiting(status=RAY_STATUS)), "G10")
    # The same group at maxReplicas 0 (or suspended) cannot get a Pod: the request stays infeasible.
    closed = _autoscaled(**{"num-cpus": "8"})
    closed.one("rayclusters", "seed")["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 0
    assert_fires(_diagnose(closed, _waiting()), "G10")
    # No autoscaler on the cluster: nothing to judge.
    world = _autoscaled()
    world.one("rayclusters", "seed")["spec"]["enableInTreeAutoscaling"] = False
    assert_quiet(_diagnose(world, _waiting()), "G10")


def test_a_custom_resource_no_group_names_is_infeasible_and_one_that_a_group_names_is_not() -> None:
    v2 = (
        "No available node types can fulfill resource requests {'CPU': 1.0, 'TPU': 4.0}*2. Add suitable node types "
        "to this cluster to resolve this issue."
    )
    assert_fires(_diagnose(_autoscaled(), _waiting(v2)), "G10")
    assert_quiet(_diagnose(_autoscaled(resources='"{\\"TPU\\": 4}"'), _waiting(v2)), "G10")


@pytest.mark.parametrize(
    ("line", "requests"),
    [
        (V1, [{"CPU": 8.0}]),
        ("Error: No available node types can fulfill resource request defaultdict(<class 'float'>, {'CPU': 8.0, "
         "'GPU': 8.0}). Add suitable node types", [{"CPU": 8.0, "GPU": 8.0}]),
        ("The autoscaler could not find a node type to satisfy the request: [{'CPU': 1.0}, {'CPU': 1.0}]. Please",
         [{"CPU": 1.0}]),
        ("No available node types can fulfill resource requests {'CPU': 2.0}*1, {'GPU': 1.0}*3. Add",
         [{"CPU": 2.0}, {"GPU": 1.0}]),
        ("could not find a node type to satisfy the request: {not a dict}", []),
    ],
)  # fmt: skip
def test_the_requests_are_read_from_v1_and_v2_autoscaler_lines(line: str, requests: list[dict[str, float]]) -> None:
    assert fi.sign_of(line) is not None and fi.sign_of(line).key == "infeasible"  # type: ignore[union-attr]
    assert fi.resource_requests(line) == requests


def test_a_groups_logical_resources_are_what_kuberay_passes_to_ray_start() -> None:
    group = {
        "rayStartParams": {"num-gpus": "2", "resources": '"{\\"TPU\\": 4}"'},
        "template": {"spec": {"containers": [{"name": "ray-worker",
                                              "resources": {"limits": {"cpu": "500m", "memory": "2Gi"}}}]}},
    }  # fmt: skip
    assert facts.ray_resources(group, head=False) == {"CPU": 1.0, "GPU": 2.0, "memory": 2.0 * (1 << 30), "TPU": 4.0}
    # The group's own resources win over rayStartParams and limits (KubeRay's updateRayStartParamsResources).
    assert facts.ray_resources({**group, "resources": {"cpu": "3"}}, head=False)["CPU"] == 3.0
    # Nothing set: Ray detects CPUs and memory itself.
    assert facts.ray_resources({"template": {"spec": {"containers": [{"name": "ray-worker"}]}}}, head=False) == {}


def test_autoscaler_v2_says_it_in_its_event_log_which_the_probe_reads() -> None:
    """Seen on process nodes (Ray 2.52, KubeRay's sidecar without autoscalerOptions.version): v2 writes the request
    only to events/event_AUTOSCALER.log (and the driver's log), one JSON event per line, never to monitor.log."""
    event = (
        '{"event_id": "fc23DFEfcb9e7b22Ab16ce3dAb4FA6F8edEc", "source_type": "AUTOSCALER", "source_hostname": '
        '"scaled-head-5fvxs", "source_pid": 1, "severity": "WARNING", "message": "No available node types can '
        "fulfill resource requests {'CPU': 8.0}*1. Add suitable node types to this cluster to resolve this issue.\", "
        '"timestamp": 1796619436, "custom_fields": {}}'
    )
    assert f"{fi.LOG_DIR}/events/event_AUTOSCALER.log" in LOG_GLOBS
    assert fi.resource_requests(event) == [{"CPU": 8.0}]
    found = one_finding(_diagnose(_autoscaled(), _waiting(event)), "G10")
    assert "{'CPU': 8.0}" in found.title

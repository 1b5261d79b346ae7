"""RayService ``NewClusterWithIncrementalUpgrade`` (KubeRay v1.7.0, gate RayServiceIncrementalUpgrade on): the
Gateway and HTTPRoute, the traffic and target-capacity steps, and rollback, as tables over the pure decisions and
passes on an in-memory API server. Traffic through a real Gateway is not exercised here."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RAYCLUSTERS, RayService
from raykube.builders import rayservice as rs
from raykube.builders.options import BuildOptions
from raykube.controllers.rayservice import registration
from raykube.kube import times
from raykube.kube.resources import GATEWAYS, HTTPROUTES, SERVICES
from tests.unit.test_controllers_rayservice import NAME, NS, START, new_world
from tests.unit.test_controllers_rayservice_suspend import incremental_spec

SERVED = BuildOptions(gateway_api_available=True)


def model(**options: Any) -> RayService:
    return RayService.model_validate(incremental_spec(**options))


def test_gateways_and_httproutes_are_read_only_with_the_gate_and_the_api() -> None:
    assert [w.res for w in registration(SERVED).reads][-2:] == [GATEWAYS, HTTPROUTES]
    assert GATEWAYS not in [w.res for w in registration(BuildOptions()).reads]  # API not served
    gate_off = BuildOptions(features={c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE: False}, gateway_api_available=True)
    assert GATEWAYS not in [w.res for w in registration(gate_off).reads]
    assert all(w.res not in (GATEWAYS, HTTPROUTES) for w in registration(SERVED).owned)  # v1.7.0: no Owns


async def test_without_the_gateway_api_the_pass_fails_before_any_cluster_or_status() -> None:
    world = new_world(incremental_spec())
    await world.failing('no matches for kind "Gateway" in version "gateway.networking.k8s.io/v1"')
    assert world.writes() == [] and world.fake.events == []
    assert "status" not in world.service


async def test_a_fresh_rayservice_gets_its_gateway_then_a_route_to_its_first_cluster() -> None:
    world = new_world(incremental_spec(), options=SERVED)
    await world.reconcile()
    assert world.writes() == [f"create gateways {NS}/{NAME}-gateway", f"update rayservices/status {NS}/{NAME}"]
    assert [(e.reason, e.action, e.note) for e in world.fake.events] == [
        (c.EVENT_CREATED_GATEWAY, "Create", f"Created Gateway for RayService {NS}/{NAME}-gateway")
    ]
    gateway = world.fake.stored(GATEWAYS, NS, f"{NAME}-gateway")
    assert gateway is not None
    assert gateway["spec"] == {
        "gatewayClassName": "istio",
        "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
    }
    assert gateway["metadata"]["ownerReferences"][0]["kind"] == "RayService"
    assert world.status["pendingServiceStatus"]["targetCapacity"] == 100  # the first cluster takes all at once
    cluster = f"{NAME}-abcde"
    await world.failing("found 0 head")
    world.cluster_up(cluster)
    await world.reconcile()
    world.apps(cluster)
    world.clear()
    await world.reconcile()  # ready: promoted at once (no active cluster yet), its own serve Service
    assert world.active == cluster
    assert world.fake.stored(SERVICES, NS, f"{cluster}-serve-svc") is not None
    puts = world.dashboards.of(cluster).puts
    assert b'"target_capacity":100' in puts[0]
    await world.reconcile()  # now an active cluster: the HTTPRoute
    route = world.fake.stored(HTTPROUTES, NS, f"{NAME}-httproute")
    assert route is not None
    assert route["spec"]["parentRefs"] == [{"name": f"{NAME}-gateway", "namespace": NS}]
    assert route["spec"]["rules"][0]["backendRefs"] == [
        {"name": f"{cluster}-serve-svc", "namespace": NS, "port": 8000, "weight": 100}
    ]
    assert c.EVENT_CREATED_HTTPROUTE in world.fake.reasons()


async def test_an_upgrade_starts_its_pending_cluster_at_zero_capacity() -> None:
    world = new_world(incremental_spec(), options=SERVED)
    await world.reconcile()
    await world.failing("found 0 head")
    world.cluster_up(f"{NAME}-abcde")
    world.apps(f"{NAME}-abcde")
    await world.reconcile()
    await world.reconcile()
    world.edit_cluster_config(lambda config: config["headGroupSpec"].update(rayStartParams={"num-cpus": "0"}))
    await world.reconcile()
    assert world.pending == f"{NAME}-fghij"
    assert world.status["pendingServiceStatus"]["targetCapacity"] == 0


# ---------------------------------------------------------------------------------------------------- pure steps


def side(name: str, **fields: Any) -> dict[str, Any]:
    return {"rayClusterName": name, **fields}


def upgrade_status(active: dict[str, Any], pending: dict[str, Any], *, rollback: bool = False) -> dict[str, Any]:
    conditions = [{"type": c.CONDITION_UPGRADE_IN_PROGRESS, "status": "True"}]
    if rollback:
        conditions.append({"type": c.CONDITION_ROLLBACK_IN_PROGRESS, "status": "True"})
    return {"activeServiceStatus": active, "pendingServiceStatus": pending, "conditions": conditions}


LONG_AGO = times.format_time(START - dt.timedelta(seconds=60))
JUST_NOW = times.format_time(START - dt.timedelta(seconds=5))


@pytest.mark.parametrize(
    ("active", "pending", "ready", "rollback", "expected"),
    [
        # stepSizePercent 25 once intervalSeconds (10) passed, capped by the pending side's capacity
        (side("a"), side("p", targetCapacity=50, trafficRoutedPercent=0), True, False, (75, 25)),
        (side("a"), side("p", targetCapacity=50, trafficRoutedPercent=25, lastTrafficMigratedTime=LONG_AGO), True,
         False, (50, 50)),
        (side("a"), side("p", targetCapacity=40, trafficRoutedPercent=25, lastTrafficMigratedTime=LONG_AGO), True,
         False, (60, 40)),
        # too soon; not ready; at capacity: nothing moves
        (side("a"), side("p", targetCapacity=50, trafficRoutedPercent=25, lastTrafficMigratedTime=JUST_NOW), True,
         False, (100, 25)),
        (side("a"), side("p", targetCapacity=50, trafficRoutedPercent=0), False, False, (100, 0)),
        (side("a", trafficRoutedPercent=50), side("p", targetCapacity=50, trafficRoutedPercent=50), True, False,
         (50, 50)),
        # rollback: back to the active side, whether the pending one is ready or not, capped by active capacity
        (side("a", targetCapacity=100, trafficRoutedPercent=50), side("p", trafficRoutedPercent=50), False, True,
         (75, 25)),
        (side("a", targetCapacity=60, trafficRoutedPercent=50), side("p", trafficRoutedPercent=50), False, True,
         (60, 40)),
    ],
)  # fmt: skip
def test_traffic_steps(
    active: dict[str, Any], pending: dict[str, Any], ready: bool, rollback: bool, expected: tuple[int, int]
) -> None:
    status = upgrade_status(active, pending, rollback=rollback)
    assert rs.traffic_weights(model(), status, pending_ready=ready, now=START) == expected


@pytest.mark.parametrize(
    ("active", "pending", "rollback", "cluster", "expected"),
    [
        # maxSurgePercent 50: pending up first (once its traffic caught up), then active down
        ({"targetCapacity": 100}, {"targetCapacity": 0, "trafficRoutedPercent": 0}, False, "p", 50),
        ({"targetCapacity": 100}, {"targetCapacity": 0, "trafficRoutedPercent": 0}, False, "a", None),
        ({"targetCapacity": 100}, {"targetCapacity": 50, "trafficRoutedPercent": 25}, False, "a", None),
        ({"targetCapacity": 100}, {"targetCapacity": 50, "trafficRoutedPercent": 50}, False, "a", 50),
        ({"targetCapacity": 50}, {"targetCapacity": 50, "trafficRoutedPercent": 50}, False, "p", 100),
        # rollback: pending down, then active up
        ({"targetCapacity": 50, "trafficRoutedPercent": 50}, {"targetCapacity": 100}, True, "p", 50),
        ({"targetCapacity": 50, "trafficRoutedPercent": 50}, {"targetCapacity": 50}, True, "a", 100),
        ({"targetCapacity": 50, "trafficRoutedPercent": 40}, {"targetCapacity": 50}, True, "a", None),
    ],
)
def test_target_capacity_steps(
    active: dict[str, Any], pending: dict[str, Any], rollback: bool, cluster: str, expected: int | None
) -> None:
    status = upgrade_status(side("a", **active), side("p", **pending), rollback=rollback)
    assert rs.goal_target_capacity(model(), status, cluster)[1] == expected


def test_unset_capacities_default_to_active_100_pending_0() -> None:
    status, _ = rs.goal_target_capacity(model(), upgrade_status(side("a"), side("p")), "x")
    assert (status["activeServiceStatus"]["targetCapacity"], status["pendingServiceStatus"]["targetCapacity"]) == (
        100,
        0,
    )


@pytest.mark.parametrize(
    ("goal", "rolling_back", "expected"),
    [
        ("A", False, ("True", "Goal state reverted to original cluster, rolling back.")),
        ("C", False, ("True", "Goal state changed mid-upgrade, rolling back to original cluster.")),
        ("P", False, None),
        ("P", True, None),  # back on track: the rollback is cancelled (condition removed)
        ("A", True, ("True", "already")),  # left as it is
    ],
)
def test_rollback_state(goal: str, rolling_back: bool, expected: tuple[str, str] | None) -> None:
    status = upgrade_status(side("a"), side("p"))
    if rolling_back:
        status["conditions"].append(
            {"type": c.CONDITION_ROLLBACK_IN_PROGRESS, "status": "True", "reason": "x", "message": "already"}
        )
    new = rs.rollback_state(status, goal_hash=goal, active_hash="A", pending_hash="P", stamp="t")
    found = [x for x in new["conditions"] if x["type"] == c.CONDITION_ROLLBACK_IN_PROGRESS]
    if expected is None:
        assert found == []
    else:
        assert (found[0]["status"], found[0]["message"]) == expected
        if not rolling_back:
            assert found[0]["reason"] == c.REASON_DESIRED_CLUSTER_SPEC_CHANGED


@pytest.mark.parametrize(
    ("pending", "head_ready", "expected"),
    [
        ({"targetCapacity": 0, "trafficRoutedPercent": 0}, True, True),
        ({"targetCapacity": 50, "trafficRoutedPercent": 0}, True, False),
        ({"targetCapacity": 50, "trafficRoutedPercent": 0}, False, True),  # v1.7.0 (#4989): a broken pending cluster
    ],
)
def test_rollback_completes(pending: dict[str, Any], head_ready: bool, expected: bool) -> None:
    status = upgrade_status(side("a", targetCapacity=100, trafficRoutedPercent=100), side("p", **pending))
    assert rs.rollback_complete(status, pending_head_ready=head_ready) is expected


def test_no_promotion_during_a_rollback() -> None:
    status = upgrade_status(side("a", targetCapacity=0), side("p", trafficRoutedPercent=100))
    svc = {"spec": {"selector": {c.RAY_CLUSTER_LABEL: "a"}}}
    promoted, _ = rs.promote(status, svc, svc, incremental=True, pending_exists=True)
    assert promoted["activeServiceStatus"]["rayClusterName"] == "p"
    status = upgrade_status(side("a", targetCapacity=0), side("p", trafficRoutedPercent=100), rollback=True)
    kept, _ = rs.promote(status, svc, svc, incremental=True, pending_exists=True)
    assert kept["activeServiceStatus"]["rayClusterName"] == "a"


async def test_an_upgrade_without_its_active_cluster_cannot_roll_back() -> None:
    world = new_world(incremental_spec(), options=SERVED)
    body = world.service
    body["status"] = upgrade_status(side(f"{NAME}-gone"), side(f"{NAME}-abcde"))
    world.fake.add(body)
    world.fake.add(
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": f"{NAME}-abcde", "namespace": NS}},
        RAYCLUSTERS,
    )
    await world.failing("found 0 head")
    impossible = (
        "Warning",
        c.EVENT_ROLLBACK_IMPOSSIBLE,
        "Reconcile",
        "Active cluster not found, rollback cannot be initiated",
    )
    assert impossible in [(e.type, e.reason, e.action, e.note) for e in world.fake.events]

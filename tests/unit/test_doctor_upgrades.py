"""The doctor on a RayService's incremental upgrade (KubeRay v1.7.0's ``NewClusterWithIncrementalUpgrade``: a Gateway
and an HTTPRoute a Gateway API implementation programs) and on ``spec.suspend``: each U rule fires on its case and
stays quiet on the near miss."""

from __future__ import annotations

from typing import Any

from raykube.doctor.model import Report
from raykube.doctor.run import Options, diagnose
from tests.doctor_support import assert_fires, assert_quiet, one_finding
from tests.unit.test_doctor_rules import NS, World, roots
from tests.unit.test_doctor_workloads import EARLIER, rayservice

OPTIONS = {"gatewayClassName": "traefik", "stepSizePercent": 20, "intervalSeconds": 10, "maxSurgePercent": 40}


def incremental(**status: Any) -> dict[str, Any]:
    body = rayservice("serve", active="seed", **status)
    body["spec"]["upgradeStrategy"] = {"type": "NewClusterWithIncrementalUpgrade", "clusterUpgradeOptions": OPTIONS}
    return body


def condition(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": EARLIER}


def gateway_api(world: World, *, accepted: str = "True", programmed: str = "True", route: str = "True") -> None:
    world.objects["gatewayclasses"] = [
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass", "metadata": {"name": "traefik"},
         "spec": {"controllerName": "traefik.io/gateway-controller"},
         "status": {"conditions": [condition("Accepted", "True", "Accepted")]}},
    ]  # fmt: skip
    world.objects["gateways"] = [
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
         "metadata": {"name": "serve-gateway", "namespace": NS},
         "status": {"conditions": [condition("Accepted", accepted, "Accepted" if accepted == "True" else "Invalid"),
                                   condition("Programmed", programmed, "Programmed" if programmed == "True"
                                             else "AddressNotAssigned", "no address for listener http")]}},
    ]  # fmt: skip
    world.objects["httproutes"] = [
        {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
         "metadata": {"name": "serve-httproute", "namespace": NS},
         "status": {"parents": [{"parentRef": {"name": "serve-gateway"}, "conditions": [
             condition("Accepted", "True", "Accepted"),
             condition("ResolvedRefs", route, "ResolvedRefs" if route == "True" else "BackendNotFound",
                       "" if route == "True" else "service serve-serve-svc not found")]}]}},
    ]  # fmt: skip


def run(world: World) -> Report:
    snap = world.snapshot(targets=(), workloads=(("RayService", NS, "serve"),))
    report = diagnose(snap, Options())
    assert report.rule_failures == [], report.rule_failures
    return report


def test_u01_no_gateway_api_is_why_an_incremental_upgrade_never_starts() -> None:
    world = World()
    world.add("rayservices", incremental())
    found = one_finding(run(world), "U01")
    assert found.severity == "error" and "serves no Gateway API" in found.title
    # Near misses: the API is served; the strategy is NewCluster.
    gateway_api(world)
    assert_quiet(run(world), "U01", "U02", "U03", "U04")
    plain = World()
    plain.add("rayservices", rayservice("serve", active="seed"))
    assert_quiet(run(plain), "U01")


def test_u02_a_gateway_class_nobody_accepted_or_that_does_not_exist() -> None:
    world = World()
    world.add("rayservices", incremental())
    gateway_api(world)
    world.objects["gatewayclasses"][0]["metadata"]["name"] = "istio"
    found = one_finding(run(world), "U02")
    assert "GatewayClass traefik" in found.title and "missing" in found.title
    world.objects["gatewayclasses"][0]["metadata"]["name"] = "traefik"
    world.objects["gatewayclasses"][0]["status"]["conditions"] = [condition("Accepted", "Unknown", "Pending")]
    found = one_finding(run(world), "U02")
    assert "not accepted" in found.title


def test_u03_u04_a_gateway_not_programmed_and_a_route_whose_backend_is_missing() -> None:
    world = World()
    world.add("rayservices", incremental())
    gateway_api(world, programmed="False")
    found = one_finding(run(world), "U03")
    assert "not Programmed" in found.title and "no address for listener http" in found.title
    world = World()
    world.add("rayservices", incremental())
    gateway_api(world, route="False")
    found = one_finding(run(world), "U04")
    assert "ResolvedRefs" in found.title and "serve-serve-svc not found" in found.title


def test_u05_an_upgrade_stuck_at_a_step_with_its_pending_cluster_ready_hangs_under_the_route() -> None:
    stuck = {"rayClusterName": "seed-next", "trafficRoutedPercent": 20, "targetCapacity": 40,
             "lastTrafficMigratedTime": EARLIER}  # fmt: skip
    world = World()
    seed = world.objects["rayclusters"][0]
    next_cluster = {**seed, "metadata": {**seed["metadata"], "name": "seed-next", "uid": "uid-next"}}
    world.add("rayclusters", next_cluster)
    service = world.add("rayservices", incremental(pendingServiceStatus=stuck))
    gateway_api(world)
    found = one_finding(run(world), "U05")
    assert "stuck at 20% to seed-next" in found.title and found in roots(run(world))
    # Under a route that resolves nothing, the route is the root cause.
    gateway_api(world, route="False")
    report = run(world)
    assert_fires(report, "U04", "U05")
    assert [f.rule for f in roots(report) if f.rule.startswith("U")] == ["U04"]
    # Near misses: the step is recent; all the traffic has moved.
    service["status"]["pendingServiceStatus"] = {**stuck, "lastTrafficMigratedTime": "2026-01-01T11:59:50Z"}
    assert_quiet(run(world), "U05")
    service["status"]["pendingServiceStatus"] = {**stuck, "trafficRoutedPercent": 100}
    assert_quiet(run(world), "U05")


def test_u06_a_suspended_rayservice_is_said_and_one_stuck_suspending_is_a_warning() -> None:
    world = World()
    service = world.add(
        "rayservices", rayservice("serve", conditions=[condition("Suspended", "True", "SuspendComplete")])
    )
    service["spec"]["suspend"] = True
    found = one_finding(run(world), "U06")
    assert found.severity == "info" and "is suspended" in found.title
    service["status"]["conditions"] = [condition("Suspending", "True", "SuspendInProgress")]
    found = one_finding(run(world), "U06")
    assert found.severity == "warning" and "suspending for" in found.title
    # Near miss: resumed.
    service["spec"]["suspend"] = False
    service["status"]["conditions"] = [condition("Suspended", "False", "RayServiceResumed")]
    assert_quiet(run(world), "U06")

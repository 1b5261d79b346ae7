"""RayService ``spec.suspend`` (KubeRay v1.7.0) on process nodes with real Ray Serve: a Ready RayService suspended
loses its RayCluster and its Services and ends ``Suspended``; resumed, it starts a new cluster, is ``Initializing``
first, and ends Ready with its application RUNNING, answering through its serve Service again.

The conditions are asserted as v1.7.0's ``handleSuspend`` sets them (``rayservice_controller.go`` at the tag):
suspended, ``Suspending`` False / ``SuspendComplete``, ``Suspended`` True / ``SuspendComplete``, ``Ready`` False /
``SuspendComplete``, ``serviceStatus`` ``NotRunning`` (``""``, so absent) with no active or pending cluster;
resumed, ``Suspended`` False / ``RayServiceResumed`` and ``Ready`` False / ``Initializing`` until the new cluster
serves. Marked long (two starts of
Ray Serve): ``make conformance`` runs it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from lightkube import AsyncClient
from lightkube.types import PatchType

from raykube.api import constants as c
from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.integration.test_process_runtime import create, port_forward
from tests.integration.test_rayservice import RayServiceRes, rayservice, service_status, wait_ready
from tests.integration.test_serve import SERVE_READY, greet, serve_app, serve_config

NAME = "pausable"


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {cond["type"]: (cond["status"], cond["reason"]) for cond in status.get("conditions") or []}


async def suspend(pkube: AsyncClient, ns: str, value: bool) -> None:
    patch = {"spec": {"suspend": value}}
    await pkube.patch(RayServiceRes, NAME, patch, namespace=ns, patch_type=PatchType.MERGE)  # type: ignore[arg-type]


def owned(proc: ProcessSandbox, ns: str) -> list[str]:
    """The RayClusters and the RayService's Services in the namespace (the app's ConfigMap is the test's)."""
    names = proc.kubectl("get", "raycluster,service", "-n", ns, "-o", "name").stdout.split()
    return [name for name in names if name.startswith("raycluster.") or NAME in name]


@pytest.mark.long
@pytest.mark.timeout(1200)
async def test_a_suspended_rayservice_loses_its_cluster_and_resumed_serves_again(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    await create(pkube, ns, serve_app(ns))
    await create(pkube, ns, rayservice(NAME, serve_config()))
    first = (await wait_ready(pkube, ns, NAME))["activeServiceStatus"]["rayClusterName"]
    assert owned(proc, ns), "a Ready RayService owns a cluster and Services"

    await suspend(pkube, ns, True)

    async def suspended() -> dict[str, Any] | NotYet:
        status = await service_status(pkube, ns, NAME)
        seen = conditions(status)
        left = owned(proc, ns)
        if seen.get(c.CONDITION_RAYSERVICE_SUSPENDED, ("", ""))[0] == "True" and not left:
            return status
        return NotYet(json.dumps({"conditions": seen, "left": left}))

    status = await wait_for(suspended, 300, what=f"RayService {ns}/{NAME} Suspended with nothing left")
    seen = conditions(status)
    assert seen[c.CONDITION_RAYSERVICE_SUSPENDED] == ("True", "SuspendComplete"), seen
    assert seen[c.CONDITION_RAYSERVICE_SUSPENDING] == ("False", "SuspendComplete"), seen
    assert seen["Ready"] == ("False", "SuspendComplete"), seen
    assert seen["UpgradeInProgress"] == ("False", "SuspendComplete"), seen
    assert not status.get("serviceStatus"), status  # v1.7.0's NotRunning is "" (omitted)
    assert not (status.get("activeServiceStatus") or {}).get("rayClusterName"), status
    assert not (status.get("pendingServiceStatus") or {}).get("rayClusterName"), status

    await suspend(pkube, ns, False)

    async def resuming() -> dict[str, tuple[str, str]] | NotYet:
        seen = conditions(await service_status(pkube, ns, NAME))
        resumed = seen.get(c.CONDITION_RAYSERVICE_SUSPENDED) == ("False", "RayServiceResumed")
        return seen if resumed else NotYet(json.dumps(seen))

    seen = await wait_for(resuming, 60, what=f"RayService {ns}/{NAME} to leave Suspended")
    assert seen["Ready"] in (("False", "Initializing"), ("True", "NonZeroServeEndpoints")), seen

    status = await wait_ready(pkube, ns, NAME)
    second = status["activeServiceStatus"]["rayClusterName"]
    assert second and second != first, (first, second)
    async with port_forward(proc, ns, f"svc/{NAME}-serve-svc", 8000) as port:

        async def greeting() -> str | NotYet:
            return await greet(port, "resumed")

        answer = await wait_for(greeting, SERVE_READY, what=f"the app through {NAME}-serve-svc after the resume")
    assert answer == "Hello, resumed!\n", answer

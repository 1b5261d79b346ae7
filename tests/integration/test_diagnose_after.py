"""``raykube operator --diagnose-after``: the doctor's root cause, recorded by the operator as a RootCause Event.

On the kwok sandbox: the chapter's scale-up the nodes cannot hold (24 workers, each asking for more CPU than a node
has, so this test takes no capacity from the tests beside it) shows ``RootCause ... UNSCHEDULABLE_RESOURCES`` in
``kubectl describe raycluster``, once; fixed, the cluster is forgotten and no Event follows. And the narrow snapshot
the operator reads gives the same root cause as a whole-namespace doctor run, under the RBAC the Helm chart grants
with ``diagnoseAfter`` (the client refuses any other call).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lightkube import AsyncClient

from raykube.api import constants as c
from raykube.api import rbac
from raykube.api.resources import RAYCLUSTERS
from raykube.cli.rootcause import DoctorDiagnoser
from raykube.doctor.gather import Scope
from raykube.doctor.run import Options, diagnose_live
from raykube.kube.client import Kube
from raykube.kube.resources import EVENTS
from raykube.runtime.diagnosis import REASON, REPORTER
from raykube.sandbox import Binaries
from raykube.waiting import NotYet, wait_for
from tests.integration.test_raycluster_controller import CLUSTER, create_seed_dependencies, seed_cluster, wait_ready

TOO_MANY = 24  # the chapter's


def kubectl(kubeconfig: Path, *args: str) -> str:
    run = subprocess.run(
        [str(Binaries.from_cache().kubectl), "--kubeconfig", str(kubeconfig), *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return run.stdout


def never_fitting(body: dict[str, Any], replicas: int) -> dict[str, Any]:
    group = body["spec"]["workerGroupSpecs"][0]
    group["replicas"] = group["maxReplicas"] = replicas
    container = group["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "16", "memory": "1Gi"}, "limits": {"cpu": "16", "memory": "1Gi"}}
    return body


async def root_cause_events(kube: Kube, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await kube.list(EVENTS, namespace)
    return [
        e
        for e in listed.items
        if e.get("reason") == REASON and (e.get("regarding") or {}).get("name") == name
        and (e.get("regarding") or {}).get("kind") == c.KIND_RAYCLUSTER
    ]  # fmt: skip


def diagnoses(log: Path, name: str) -> list[str]:
    """The operator's log lines about diagnosing RayCluster ``name``."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return [line for line in text.splitlines() if ("RayCluster " in line and f"/{name}" in line and "diagnos" in line)
            or f"/{name} is ready" in line]  # fmt: skip


@pytest.mark.parametrize("after", ["10s", pytest.param("1m", marks=pytest.mark.long)])
async def test_a_cluster_that_cannot_schedule_gets_one_root_cause_event_until_it_is_fixed(
    kube: AsyncClient,
    runtime_kube: Kube,
    kubeconfig: Path,
    namespace: str,
    start_operator: Any,
    tmp_path: Path,
    after: str,
) -> None:
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, never_fitting(seed_cluster(), TOO_MANY), namespace)
    start_operator(f"--diagnose-after={after}", "--enable-leader-election=false")
    log = tmp_path / "operator-0.log"

    async def recorded() -> list[dict[str, Any]] | NotYet:
        events = await root_cause_events(runtime_kube, namespace, CLUSTER)
        return events or NotYet(f"no RootCause Event yet; the operator said: {diagnoses(log, CLUSTER)[-3:]}")

    # The acceptance: within 2 minutes of --diagnose-after=1m (here: the wait covers the longer case).
    events = await wait_for(recorded, 150, what="the operator's RootCause Event on the RayCluster")
    assert len(events) == 1, events
    note = str(events[0].get("note") or "")
    assert note.startswith("UNSCHEDULABLE_RESOURCES (B02): "), note
    assert "Fix: " in note, note
    assert events[0].get("type") == "Warning"
    assert events[0].get("reportingController") == REPORTER
    described = kubectl(kubeconfig, "describe", "raycluster", CLUSTER, "-n", namespace)
    assert re.search(r"Warning\s+RootCause\s+.*UNSCHEDULABLE_RESOURCES", described), described

    # Diagnosed again a --diagnose-after later, to the same root cause: no second Event.
    async def diagnosed_twice() -> bool | NotYet:
        lines = [line for line in diagnoses(log, CLUSTER) if "UNSCHEDULABLE_RESOURCES" in line]
        return len(lines) >= 2 or NotYet(f"{len(lines)} diagnoses so far")

    await wait_for(diagnosed_twice, 150, what="a second diagnosis of the unchanged cluster")
    assert len(await root_cause_events(runtime_kube, namespace, CLUSTER)) == 1
    said = diagnoses(log, CLUSTER)
    assert any('"unchanged"' in line or "(unchanged)" in line for line in said), said

    # The fix: 2 workers that fit. Ready, the cluster is forgotten, and no RootCause Event follows.
    patch = [
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2},
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": 2},
        {"op": "replace", "path": "/spec/workerGroupSpecs/0/template/spec/containers/0/resources",
         "value": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}},
    ]  # fmt: skip
    kubectl(kubeconfig, "patch", "raycluster", CLUSTER, "-n", namespace, "--type=json", "-p", json.dumps(patch))
    kubectl(kubeconfig, "delete", "pods", "-n", namespace, "-l", f"{c.RAY_CLUSTER_LABEL}={CLUSTER},"
            f"{c.RAY_NODE_TYPE_LABEL}=worker", "--wait=false")  # fmt: skip
    await wait_ready(runtime_kube, namespace, 2)

    async def forgotten() -> bool | NotYet:
        return any(f"/{CLUSTER} is ready" in line for line in diagnoses(log, CLUSTER)) or NotYet("not yet forgotten")

    await wait_for(forgotten, 60, what="the operator to forget the fixed cluster")
    assert len(await root_cause_events(runtime_kube, namespace, CLUSTER)) == 1


async def test_the_operators_narrow_read_names_the_root_cause_a_whole_namespace_run_names(
    kube: AsyncClient, runtime_kube: Kube, kubeconfig: Path, namespace: str, operator: Any
) -> None:
    """Two broken clusters in one namespace: each one's narrow diagnosis names its own root cause, the one the
    doctor names reading the whole namespace, through a client held to the operator's rules with diagnoseAfter."""
    await create_seed_dependencies(kube, namespace)
    await runtime_kube.create(RAYCLUSTERS, never_fitting(seed_cluster(), 3), namespace)
    other = seed_cluster("other")
    other["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"secretRef": {"name": "no-such-secret"}}
    ]
    await runtime_kube.create(RAYCLUSTERS, other, namespace)
    rules = rbac.operator_rules(diagnosis=True)
    client = Kube.from_config(kubeconfig, rules=rules)
    try:
        diagnoser = DoctorDiagnoser(client)

        async def agree(name: str) -> tuple[str, str] | NotYet:
            narrow = await diagnoser.root_cause(c.KIND_RAYCLUSTER, namespace, name)
            whole, _ = await diagnose_live(
                runtime_kube,
                Scope(namespaces=(namespace,), targets=((namespace, name),), workloads=()),
                Options(starting_grace=0.0, security=False),
            )
            roots = [f.code for f in whole.findings if not f.caused_by and f.severity in ("critical", "error")]
            if narrow is None or not roots:
                return NotYet(f"narrow {narrow}, whole {roots}")
            if narrow.code != roots[0]:
                return NotYet(f"narrow says {narrow.code}, the whole namespace {roots[0]}")
            return narrow.code, roots[0]

        seed_code, _ = await wait_for(lambda: agree(CLUSTER), 90, what="the seed's narrow and whole diagnoses to agree")
        assert seed_code == "UNSCHEDULABLE_RESOURCES"
        other_code, _ = await wait_for(lambda: agree("other"), 90, what="the other's diagnoses to agree")
        assert other_code != seed_code
    finally:
        await client.close()

"""Fixtures of the tests on process nodes (real Ray): one process sandbox for the whole run, a namespace per test,
and raykube's operator in-process with its RBAC rules enforced.

The process sandbox starts the first time a test asks for it and stops at the end of the run; it is skipped, with
the reason, where the machine cannot host process nodes (not root, no namespaces).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from lightkube import ApiError, AsyncClient, KubeConfig
from lightkube.resources.core_v1 import Namespace, ServiceAccount

from raykube.api.crd import load_generated
from raykube.api.rbac import LEADER_ELECTION_RULES, OPERATOR_RULES
from raykube.builders.options import BuildOptions
from raykube.kube.client import Kube
from raykube.runtime.crds import install_crds
from raykube.runtime.manager import Manager
from raykube.sandbox import Binaries, NodePool, Ports, Sandbox, SandboxConfig
from raykube.sandbox.kubelet import network
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox


@pytest.fixture(scope="session")
async def proc(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ProcessSandbox]:
    problems = network.preflight()
    if problems:
        pytest.skip("this machine cannot run process nodes: " + "; ".join(problems))
    # `make test` runs this worker beside the kwok one on 2 cores, and the real Ray here is the longer of the two
    # chains: it, and all it starts (the process sandbox, the Pods' Ray), run ahead of the other worker.
    if os.environ.get("PYTEST_XDIST_WORKER") and os.geteuid() == 0:
        os.nice(-5)
    root = tmp_path_factory.mktemp("raykube-process")
    sandbox = Sandbox.named("proc", root)
    # Three nodes that hold one Ray Pod of the seed (2Gi) each, as the chapter's cluster spreads on real nodes.
    config = SandboxConfig(
        name="proc", ports=Ports.free(), nodes=NodePool(count=3, cpu="2", memory="3Gi"), runtime="process"
    )
    result = await sandbox.up(config)
    try:
        yield ProcessSandbox(sandbox, result.kubeconfig, root)
    finally:
        await sandbox.down(keep_logs=True)


@pytest.fixture(scope="session")
async def pkube(proc: ProcessSandbox) -> AsyncIterator[AsyncClient]:
    client = AsyncClient(KubeConfig.from_file(proc.kubeconfig), trust_env=False, field_manager="raykube-tests")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def ns(pkube: AsyncClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    name = f"p-{re.sub(r'[^a-z0-9]+', '-', request.node.name.lower())[:40].strip('-')}-{uuid.uuid4().hex[:6]}"
    await pkube.create(Namespace(metadata={"name": name}))  # type: ignore[arg-type]

    async def account() -> bool | NotYet:
        try:
            await pkube.get(ServiceAccount, "default", namespace=name)
        except ApiError:
            return NotYet("no default ServiceAccount yet")
        return True

    await wait_for(account, 30, what=f"namespace {name}")
    try:
        yield name
    finally:
        await pkube.delete(Namespace, name)


@pytest.fixture
async def proc_operator(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, request: pytest.FixtureRequest
) -> AsyncIterator[Manager]:
    """raykube's operator, in-process with its RBAC rules enforced, watching only this test's namespace. It runs
    outside the cluster, so it reaches Ray dashboards through the API server (``--use-kubernetes-proxy``). A test
    marked ``operator_env({...})`` gives it that environment (what the Helm chart's ``env`` sets)."""
    marker = request.node.get_closest_marker("operator_env")
    options = BuildOptions.from_env(marker.args[0]) if marker else None
    installer = Kube.from_config(proc.kubeconfig)
    try:
        await install_crds(installer, load_generated())
    finally:
        await installer.close()
    client = Kube.from_config(proc.kubeconfig, qps=200, burst=400, rules=OPERATOR_RULES + LEADER_ELECTION_RULES)
    manager = Manager(client, options=options, namespaces=[ns], reconcile_concurrency=2, use_kubernetes_proxy=True)
    await asyncio.wait_for(manager.start(), 60)
    try:
        yield manager
    finally:
        await manager.stop()
        await client.close()


@pytest.fixture
def start_operator(kubeconfig: Path, namespace: str, ray_crds: list[str], tmp_path: Path) -> Iterator[object]:
    """``start(*flags, kubeconfig=None)`` starts ``raykube operator`` as its own process for this test's namespace
    (its output in ``tmp_path / f"operator-{n}.log"``, n counting from 0; the sandbox's kubeconfig unless another is
    given) and returns it; whatever still runs is stopped (SIGTERM) afterwards."""
    processes: list[subprocess.Popen[bytes]] = []
    admin = kubeconfig

    def start(*flags: str, kubeconfig: Path | None = None) -> subprocess.Popen[bytes]:
        command = [
            sys.executable,
            "-m",
            "raykube.cli.main",
            "operator",
            "--kubeconfig",
            str(kubeconfig or admin),
            "--health-probe-bind-address=127.0.0.1:0",
        ]
        with (tmp_path / f"operator-{len(processes)}.log").open("wb") as log:  # the child keeps its own copy
            process = subprocess.Popen(
                [*command, "--watch-namespace", namespace, *flags],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ},
            )
        processes.append(process)
        return process

    yield start
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The sandbox's Helm build, with its cache/config/data directories kept out of the user's home."""
    binary = Binaries.from_cache().helm
    assert binary.exists(), f"{binary} is missing: run `raykube sandbox build`"
    home = tmp_path_factory.mktemp("helm-home")
    env = {
        **os.environ,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    return binary, env


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test on process nodes reports what the sandbox looked like at that moment (before its namespace is
    deleted): Pods and nodes, the namespace's events, and doctor on its Ray objects; a stall then names its cause."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    funcargs = getattr(item, "funcargs", {})
    proc, namespace = funcargs.get("proc"), funcargs.get("ns")
    if report.when != "call" or not report.failed or not isinstance(proc, ProcessSandbox) or not namespace:
        return
    try:
        report.sections.append(("the process sandbox at the failure", proc.at_failure(str(namespace))))
    except Exception as exc:
        report.sections.append(("the process sandbox at the failure", f"(could not collect it: {exc!r})"))

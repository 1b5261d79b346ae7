"""The test harness: markers by directory, one sandbox per run, a lightkube client, a namespace per test.

* ``tests/unit`` is marked ``unit``, ``tests/integration`` ``integration``, ``tests/e2e`` ``e2e``.
* The ``sandbox`` fixture brings up a private local control plane once per run (free ports, its own state directory
  under pytest's temporary directory) and takes it down at the end. Set ``RAYKUBE_TEST_SANDBOX`` to the directory
  of a running sandbox (``raykube sandbox status`` shows it) to reuse that one instead; it is then left running.
* ``kube`` is a lightkube ``AsyncClient`` for it; ``namespace`` is a fresh namespace, deleted after the test.
* Wait with :func:`raykube.waiting.wait_for`, never with sleeps.
* ``ledger`` is the reliability ledger (``tests/ledger.py``): a row per expected scenario, whatever its test's outcome.
* With ``CI=true`` a skip fails unless ``tests/ci_allowed_skips.py`` allows it.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import settings
from lightkube import ApiError, AsyncClient, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, ServiceAccount

from raykube.api.crd import load_generated
from raykube.kube.client import Kube
from raykube.runtime.crds import install_crds
from raykube.runtime.manager import Manager
from raykube.sandbox import NodePool, Ports, Sandbox, SandboxConfig
from raykube.waiting import NotYet, wait_for
from tests import rbac_usage
from tests.ci_allowed_skips import CiSkips
from tests.ledger import LedgerPlugin, install
from tests.support import RunningSandbox, operator_on

pytest_plugins = [
    "tests.rule_coverage",  # every doctor rule fired under some test's assertion (checked at the end)
    "pytester",  # tests/unit/test_ledger.py runs small suites through the ledger and the CI skip policy
]

# No per-example deadline: hypothesis's default (200 ms) is a timing check, and on a loaded 2-core CI machine a
# correct example took 264 ms (speed goals live in benchmarks, never in tests).
settings.register_profile("raykube", deadline=None)
settings.load_profile("raykube")

_MARKERS = {"unit": "unit", "integration": "integration", "e2e": "e2e"}
TEST_SANDBOX_NAME = "pytest"
# The process-node test modules of the second half: about as long as the rest, by .reports/junit.xml's times (look
# there again when a slow process-node test is added or moved).
PROCESS_B = frozenset({"test_chapter_workloads", "test_rayjob", "test_secrets_never_leak", "test_process_runtime"})


# tryfirst: pytest-xdist's worker reads the xdist_group markers in its own collection hook (suffixing each nodeid with
# "@group"), registered after this conftest and so called before it; without tryfirst no test had a group and every
# worker brought up both sandboxes.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.path)).parts
        for directory, marker in _MARKERS.items():
            if directory in parts:
                item.add_marker(getattr(pytest.mark, marker))
        # `make test` runs three pytest-xdist workers (--dist loadgroup): the kwok tests on one, the tests on process
        # nodes in two halves on the others, so each worker brings up one sandbox (the real Ray chains mostly wait:
        # two of them at once fill the two cores better than one). The e2e demo and the unit tests, collected last,
        # are in no group: each a unit of work of its own, for whichever worker runs out of its group's tests first.
        if "unit" in parts or "e2e" in parts:  # the e2e demo brings up a sandbox of its own
            continue
        if "proc" in getattr(item, "fixturenames", ()):
            group = "process-nodes-b" if Path(str(item.path)).stem in PROCESS_B else "process-nodes-a"
        else:
            group = "kwok"
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_configure(config: pytest.Config) -> None:
    rbac_usage.install()
    # The reliability ledger (tests/ledger.py): the `ledger` fixture, a row per expected scenario whatever its test's
    # outcome, the report at the end; after a whole run with the RBAC usage row (tests/rbac_usage.py).
    install(config, LedgerPlugin(used=rbac_usage.counts, finish=rbac_usage.finish))
    if CiSkips.wanted():  # CI=true: a skip not allowed in tests/ci_allowed_skips.py fails
        config.pluginmanager.register(CiSkips(), "raykube-ci-skips")


@pytest.fixture(scope="session")
async def sandbox(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RunningSandbox]:
    reuse = os.environ.get("RAYKUBE_TEST_SANDBOX")
    if reuse:
        existing = Sandbox.at(Path(reuse))
        status = existing.status()
        if not status.up:
            pytest.fail(f"RAYKUBE_TEST_SANDBOX={reuse} is not a running sandbox ({status.stopped} stopped)")
        yield RunningSandbox(existing, status.kubeconfig, owned=False, state_root=Path(reuse).parent.parent)
        return
    root = tmp_path_factory.mktemp("raykube-state")
    running = Sandbox.named(TEST_SANDBOX_NAME, root)
    config = SandboxConfig(name=TEST_SANDBOX_NAME, ports=Ports.free(), nodes=NodePool(count=3, cpu="8", memory="32Gi"))
    result = await running.up(config)
    try:
        yield RunningSandbox(running, result.kubeconfig, owned=True, state_root=root)
    finally:
        await running.down(keep_logs=True)


@pytest.fixture(scope="session")
def kubeconfig(sandbox: RunningSandbox) -> Path:
    return sandbox.kubeconfig


@pytest.fixture(scope="session")
async def kube(kubeconfig: Path) -> AsyncIterator[AsyncClient]:
    client = AsyncClient(KubeConfig.from_file(kubeconfig), trust_env=False, field_manager="raykube-tests")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture(scope="session")
async def runtime_kube(kubeconfig: Path) -> AsyncIterator[Kube]:
    """The operator's own client (raykube.runtime.kube) for the sandbox."""
    client = Kube.from_config(kubeconfig, qps=200, burst=400)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture(scope="session")
async def ray_crds(runtime_kube: Kube) -> list[str]:
    """raykube's ray.io CRDs, installed on the sandbox once per run."""
    return await install_crds(runtime_kube, load_generated())


@pytest.fixture
async def operator(kubeconfig: Path, namespace: str, ray_crds: list[str]) -> AsyncIterator[Manager]:
    """The operator, in-process, watching only this test's namespace; stopped after the test.

    Its client refuses any call outside the operator's RBAC rules, so every behaviour the tests exercise proves the
    generated RBAC sufficient."""
    async with operator_on(kubeconfig, namespace) as manager:
        yield manager


@pytest.fixture
async def namespace(kube: AsyncClient, request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A fresh namespace, ready for Pods (its ``default`` ServiceAccount exists); deleted after the test."""
    name = f"t-{re.sub(r'[^a-z0-9]+', '-', request.node.name.lower())[:40].strip('-')}-{uuid.uuid4().hex[:6]}"
    await kube.create(Namespace(metadata=ObjectMeta(name=name, labels={"raykube.io/test": "true"})))

    async def service_account() -> bool | NotYet:
        try:
            await kube.get(ServiceAccount, "default", namespace=name)
        except ApiError:
            return NotYet(f"no default ServiceAccount in {name} yet")
        return True

    await wait_for(service_account, 30, what=f"namespace {name} to be ready for Pods")
    try:
        yield name
    finally:
        try:
            await kube.delete(Namespace, name)
        except ApiError as exc:
            if exc.status.code != 404:
                raise

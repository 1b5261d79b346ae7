"""Every rule fires on its case and stays quiet on the healthy seed: one case per rule that no other test triggered
(A07, D06, D08, F08, F10, N01, N02, N03, H01, C04, G06, B11, B13, SEC09), each also checked against a near miss.

That every rule of the catalogue fired under some test's assertion is checked at the end of the run from what the
tests recorded (``tests/rule_coverage.py``, ``tests/doctor_support.py``): a rule added later must bring a test that
asserts it in the findings. The tests here show that check names a rule no test asserted, and stays quiet otherwise.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.doctor.rules import CATALOGUE
from tests import rule_coverage
from tests.doctor_support import FIRED, assert_fires, assert_quiet, never_fired, one_finding
from tests.unit.test_doctor_rules import NS, World

Mutation = Callable[[World], None]


def _cluster(world: World) -> dict[str, Any]:
    cluster: dict[str, Any] = world.objects["rayclusters"][0]
    return cluster


def _head(world: World) -> dict[str, Any]:
    head: dict[str, Any] = _cluster(world)["spec"]["headGroupSpec"]
    return head


def _group(world: World) -> dict[str, Any]:
    group: dict[str, Any] = _cluster(world)["spec"]["workerGroupSpecs"][0]
    return group


def _ray_container(template_holder: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = template_holder["template"]["spec"]["containers"][0]
    return container


def port_clash(world: World) -> None:  # D06: two Ray components on one port
    _head(world)["rayStartParams"]["dashboard-port"] = "6379"


def port_distinct(world: World) -> None:
    _head(world)["rayStartParams"]["dashboard-port"] = "8266"


def worker_not_ready(world: World) -> None:  # D08: a worker Running, not Ready, while the head is Ready
    pod = world.pods("worker")[0]
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]
    for status in pod["status"]["containerStatuses"]:
        status["ready"] = False


def worker_not_ready_nor_head(world: World) -> None:  # not D08: the head is down too (its own rule)
    worker_not_ready(world)
    head = world.pods("head")[0]
    head["status"]["conditions"] = [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]
    for status in head["status"]["containerStatuses"]:
        status["ready"] = False


def _head_service(world: World) -> dict[str, Any]:
    return next(s for s in world.objects["services"] if s["metadata"]["name"] == "seed-head-svc")


def service_without_dashboard(world: World) -> None:  # F08
    service = _head_service(world)
    service["spec"]["ports"] = [p for p in service["spec"]["ports"] if p.get("name") != "dashboard"]


def service_with_renamed_metrics(world: World) -> None:  # not F08: only the metrics port changed
    for port in _head_service(world)["spec"]["ports"]:
        if port.get("name") == "metrics":
            port["name"] = "prometheus"


def dashboard_disabled(world: World) -> None:  # F10
    _head(world)["rayStartParams"]["include-dashboard"] = "false"


def dashboard_enabled(world: World) -> None:
    _head(world)["rayStartParams"]["include-dashboard"] = "true"


def node_not_ready(world: World) -> None:  # N01: the head's node stopped reporting
    node = world.one("nodes", "node-0")
    node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]


def node_pressure_only(world: World) -> None:  # not N01: Ready, with an unrelated condition
    node = world.one("nodes", "node-0")
    node["status"]["conditions"].append({"type": "DiskPressure", "status": "False"})


def node_memory_pressure(world: World) -> None:  # N02: the head's node evicts
    node = world.one("nodes", "node-0")
    node["status"]["conditions"].append(
        {"type": "MemoryPressure", "status": "True", "message": "kubelet has insufficient memory available"}
    )


def _limit_range(world: World) -> None:
    world.add(
        "limitranges",
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults", "namespace": NS},
         "spec": {"limits": [{"type": "Container", "default": {"memory": "512Mi"},
                              "defaultRequest": {"memory": "256Mi"}}]}},
    )  # fmt: skip


def limit_range_defaulted(world: World) -> None:  # B13: the worker template sets no memory; the namespace's does
    _limit_range(world)
    resources = _ray_container(_group(world))["resources"]
    resources["limits"].pop("memory")
    resources["requests"].pop("memory")
    for pod in world.pods("worker"):
        pod["spec"]["containers"][0]["resources"]["limits"]["memory"] = "512Mi"
        pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "256Mi"


def limit_range_not_applied(world: World) -> None:  # not B13: every Ray container sets its own
    _limit_range(world)


def worker_preempted(world: World) -> None:  # N03: the scheduler preempted a worker
    pod = world.pods("worker")[0]
    pod["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
         "message": "Kubernetes Scheduler: preempting to accommodate a higher priority pod"}
    )  # fmt: skip


def worker_evicted_by_api(world: World) -> None:  # not N03: a drain, not a preemption
    pod = world.pods("worker")[0]
    drained = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    pod["status"]["conditions"].append(drained)


def store_above_memory(world: World) -> None:  # H01
    _group(world)["rayStartParams"]["object-store-memory"] = "4000000000"
    _ray_container(_group(world))["resources"] = {"limits": {"cpu": "1", "memory": "2Gi"}}


def store_within_memory(world: World) -> None:
    _group(world)["rayStartParams"]["object-store-memory"] = "1000000000"
    _ray_container(_group(world))["resources"] = {"limits": {"cpu": "1", "memory": "2Gi"}}


def own_shm(world: World, size: str, store: str | None = None) -> None:
    """The worker group mounts its own memory emptyDir at /dev/shm (KubeRay then adds no shared-mem volume)."""
    spec = _group(world)["template"]["spec"]
    spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": size}}]
    container = _ray_container(_group(world))
    container["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    container["resources"] = {"limits": {"cpu": "1", "memory": "2Gi"}}
    if store is not None:
        _group(world)["rayStartParams"]["object-store-memory"] = store


def test_h01_a_dev_shm_of_its_own_smaller_than_the_object_store_keeps_it_in_tmp() -> None:
    """ray-project/ray#14616: a 64Mi /dev/shm (Docker's and containerd's default, here mounted by the user) under
    Ray's default object store (30% of the 2Gi limit): the store goes to /tmp."""
    world = World()
    own_shm(world, "64Mi")
    found = one_finding(world.diagnose(), "H01")
    assert "mounts its own /dev/shm (dshm, 64Mi), smaller than Ray's default object store (about 614Mi" in found.title
    assert {e.path for e in found.evidence} >= {
        "spec.workerGroupSpecs[0].template.spec.volumes[dshm].emptyDir.sizeLimit"
    }
    world = World()
    own_shm(world, "1Gi", store="2000000000")  # an explicit store above it
    assert "smaller than object-store-memory 2000000000" in one_finding(world.diagnose(), "H01").title
    # Near misses: a /dev/shm that holds the default store; one that holds the explicit store.
    for size, store in (("1Gi", None), ("1Gi", "500000000")):
        world = World()
        own_shm(world, size, store)
        assert_quiet(world.diagnose(), "H01")


def head_restarted(world: World) -> None:  # D09: ray start ended (a Ray process died), the kubelet started it again
    world.pods("head")[0]["status"]["containerStatuses"][0].update(
        restartCount=1, lastState={"terminated": {"reason": "Error", "exitCode": 1}}
    )


def head_oom_killed(world: World) -> None:  # not D09: D01 names it, with the memory limit
    world.pods("head")[0]["status"]["containerStatuses"][0].update(
        restartCount=1, lastState={"terminated": {"reason": "OOMKilled", "exitCode": 137}}
    )


def test_d09_a_restarted_head_says_what_was_lost_and_less_with_gcs_fault_tolerance() -> None:
    world = World()
    head_restarted(world)
    found = one_finding(world.diagnose(), "D09")
    assert found.severity == "warning" and found.title == (
        "The head's Ray container restarted 1 time (last exit 1 Error): its jobs, actors and placement groups were lost"
    )
    world = World()
    head_restarted(world)
    world.pods("head")[0]["metadata"].setdefault("annotations", {})[c.RAY_FT_ENABLED_ANNOTATION] = "true"
    found = one_finding(world.diagnose(), "D09")
    assert found.severity == "info" and found.title.endswith("GCS fault tolerance kept its state")


def versions_differ(world: World) -> None:  # C04
    _ray_container(_group(world))["image"] = "rayproject/ray:2.51.0"


def versions_same_tag_variant(world: World) -> None:  # not C04: the same Ray, another Python build
    _ray_container(_group(world))["image"] = "rayproject/ray:2.52.0-py311"


def odd_gpu_key(world: World) -> None:  # G06
    _ray_container(_group(world))["resources"] = {"limits": {"cpu": "1", "aliyun.com/gpu-mem": "8"}}


def odd_gpu_key_counted(world: World) -> None:  # not G06: num-gpus says how many
    odd_gpu_key(world)
    _group(world)["rayStartParams"]["num-gpus"] = "1"


def gated(world: World) -> None:  # B11
    world.pods("worker")[0]["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]


def not_gated(world: World) -> None:
    world.pods("worker")[0]["spec"]["schedulingGates"] = []


def _ingress(tls: bool) -> dict[str, Any]:
    backend = {"service": {"name": "seed-head-svc", "port": {"number": c.DEFAULT_DASHBOARD_PORT}}}
    spec: dict[str, Any] = {"rules": [{"http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}]}
    if tls:
        spec["tls"] = [{"hosts": ["ray.example.com"], "secretName": "ray-tls"}]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "ray-dashboard", "namespace": NS}, "spec": spec}  # fmt: skip


def ingress_without_tls(world: World) -> None:  # SEC09
    world.add("ingresses", _ingress(tls=False))


def ingress_with_tls(world: World) -> None:
    world.add("ingresses", _ingress(tls=True))


def spec_image_changed(world: World) -> None:  # A07: the template asks for a new image, the Pods run the old one
    _ray_container(_group(world))["image"] = "rayproject/ray:2.52.0-py311"


def spec_and_pods_changed(world: World) -> None:  # not A07: the Pods were recreated with it
    spec_image_changed(world)
    for pod in world.pods("worker"):
        pod["spec"]["containers"][0]["image"] = "rayproject/ray:2.52.0-py311"


def autoscaler_without_groups(world: World) -> None:  # G11: Ray's autoscaler reads spec["workerGroupSpecs"]
    spec = _cluster(world)["spec"]
    spec["enableInTreeAutoscaling"] = True
    del spec["workerGroupSpecs"]


def autoscaler_with_no_groups_listed(world: World) -> None:  # not G11: an empty list is there to read
    spec = _cluster(world)["spec"]
    spec["enableInTreeAutoscaling"] = True
    spec["workerGroupSpecs"] = []


def test_g11_quotes_the_autoscaler_containers_restarts_when_the_head_has_them() -> None:
    world = World()
    autoscaler_without_groups(world)
    world.pods("head")[0]["status"]["containerStatuses"].append(
        {"name": "autoscaler", "ready": False, "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    )
    report = world.diagnose()
    found = one_finding(report, "G11")
    assert found.severity == "error" and "KeyError 'workerGroupSpecs'" in found.title
    assert [e.value for e in found.evidence] == [True, "absent", 4]
    crash = one_finding(report, "D07")  # the autoscaler container's crash loop hangs under it
    assert crash.caused_by == [found.id] and not found.caused_by


CASES: dict[str, tuple[Mutation, Mutation]] = {
    "A07": (spec_image_changed, spec_and_pods_changed),
    "D06": (port_clash, port_distinct),
    "D08": (worker_not_ready, worker_not_ready_nor_head),
    "D09": (head_restarted, head_oom_killed),
    "F08": (service_without_dashboard, service_with_renamed_metrics),
    "F10": (dashboard_disabled, dashboard_enabled),
    "N01": (node_not_ready, node_pressure_only),
    "N02": (node_memory_pressure, node_pressure_only),
    "N03": (worker_preempted, worker_evicted_by_api),
    "B13": (limit_range_defaulted, limit_range_not_applied),
    "H01": (store_above_memory, store_within_memory),
    "C04": (versions_differ, versions_same_tag_variant),
    "G06": (odd_gpu_key, odd_gpu_key_counted),
    "G11": (autoscaler_without_groups, autoscaler_with_no_groups_listed),
    "B11": (gated, not_gated),
    "SEC09": (ingress_without_tls, ingress_with_tls),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_the_rule_fires_on_its_case_and_not_on_the_near_miss(rule: str) -> None:
    fires, near_miss = CASES[rule]
    world = World()
    fires(world)
    assert_fires(world.diagnose(), rule)
    world = World()
    near_miss(world)
    assert_quiet(world.diagnose(), rule)
    assert_quiet(World().diagnose(), rule)


# --------------------------------------------------------------------------------------------------------------------
# The coverage check itself: from what the tests recorded, not from the ids written in them
# --------------------------------------------------------------------------------------------------------------------


class _Session:
    """What rule_coverage.settle reads of a pytest session."""

    def __init__(self, exitstatus: int = pytest.ExitCode.OK, *, stopped: bool = False) -> None:
        self.exitstatus = exitstatus
        self.shouldfail: bool | str = stopped
        self.shouldstop: bool | str = False


def test_a_rule_no_test_asserted_firing_fails_the_session_and_is_named() -> None:
    catalogue = ["Z96", "Z97", "Z98"]  # Z98: a rule no test records (a rule added without a test)
    session = _Session()
    message = rule_coverage.settle(session, "whole", {"Z96", "Z97"}, catalogue)
    assert session.exitstatus == pytest.ExitCode.TESTS_FAILED
    assert message is not None and "Z98" in message and "Z96" not in message
    assert never_fired(catalogue, {"Z96"}) == ["Z97", "Z98"]
    # Each recorded: the session keeps its status.
    session = _Session()
    assert rule_coverage.settle(session, "whole", set(catalogue), catalogue) is None
    assert session.exitstatus == pytest.ExitCode.OK


def test_a_rule_id_written_in_a_test_is_not_a_rule_asserted_firing() -> None:
    """The old check counted a rule as tested when its id was a string in a test file; now only the helpers record,
    and only after the rule was found among the findings the doctor returned."""
    report = World().diagnose()
    quiet = next(rule for rule in sorted(CATALOGUE) if rule not in {f.rule for f in report.findings})
    before = set(FIRED)
    with pytest.raises(AssertionError, match=f"{quiet} did not fire"):
        assert_fires(report, quiet)
    with pytest.raises(AssertionError):
        one_finding(report, quiet)
    assert_quiet(report, quiet)
    assert before == FIRED  # nothing recorded: the assertions failed
    message = rule_coverage.failure("whole", FIRED - {quiet}, [quiet])
    assert message is not None and quiet in message


def _run_a_small_suite(directory: Path, recorded: list[list[str]], *args: str) -> subprocess.CompletedProcess[str]:
    """A whole run (no path given) of one test per list, each recording its rules the way the helpers do, with the
    plugin registered as tests/conftest.py registers it."""
    (directory / "pytest.ini").write_text("[pytest]\ntestpaths = .\n")
    (directory / "conftest.py").write_text('pytest_plugins = ["tests.rule_coverage"]\n')
    tests = [f"def test_{i}():\n    record(*{rules!r})\n" for i, rules in enumerate(recorded)]
    (directory / "test_small.py").write_text("from tests.doctor_support import record\n\n\n" + "\n\n".join(tests))
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_whole_run_that_misses_a_rule_fails_though_every_test_passed(tmp_path: Path) -> None:
    """Two tests record all the rules but one between them: the session names that one alone and fails."""
    rules = sorted(CATALOGUE)
    half = len(rules) // 2
    run = _run_a_small_suite(tmp_path, [rules[:half], rules[half:-1]])
    assert run.returncode == 1, run.stdout + run.stderr
    assert "2 passed" in run.stdout, run.stdout
    assert f"1 rule(s) of the catalogue never fired under a test's assertion in the whole run: {rules[-1]}." in (
        run.stdout
    ), run.stdout


def test_each_worker_hands_its_rules_to_the_controller() -> None:
    """pytest-xdist: a worker puts what it recorded in its ``workeroutput``; the controller adds each worker's."""
    config = SimpleNamespace(workeroutput={})
    rule_coverage.pytest_sessionfinish(SimpleNamespace(config=config))  # type: ignore[arg-type]
    assert config.workeroutput[rule_coverage.WORKER_KEY] == sorted(FIRED)
    before = set(FIRED)
    try:
        rule_coverage.pytest_testnodedown(SimpleNamespace(workeroutput={rule_coverage.WORKER_KEY: ["Z97"]}), None)
        rule_coverage.pytest_testnodedown(SimpleNamespace(), RuntimeError("the worker crashed"))
        assert before | {"Z97"} == FIRED
    finally:
        FIRED.discard("Z97")


def test_a_partial_run_or_one_stopped_early_is_not_checked() -> None:
    session = _Session()
    assert rule_coverage.settle(session, None, set(), ["Z98"]) is None  # -k, --lf, a few files
    session = _Session(pytest.ExitCode.TESTS_FAILED, stopped=True)  # -x after a failure
    assert rule_coverage.settle(session, "whole", set(), ["Z98"]) is None
    session = _Session(pytest.ExitCode.INTERRUPTED)
    assert rule_coverage.settle(session, "unit", set(), ["Z98"]) is None
    assert session.exitstatus == pytest.ExitCode.INTERRUPTED


def test_the_unit_run_skips_only_the_rules_that_only_the_sandbox_makes_fire() -> None:
    assert set(CATALOGUE) >= rule_coverage.INTEGRATION_ONLY
    assert rule_coverage.expected("whole") == sorted(CATALOGUE)
    assert rule_coverage.expected("unit") == sorted(set(CATALOGUE) - rule_coverage.INTEGRATION_ONLY)
    assert rule_coverage.expected(None) == []


@pytest.mark.parametrize(
    ("args", "markexpr", "keyword", "expected"),
    [
        ([], "not long", "", "whole"),
        ([], "not long and not browser", "", "whole"),
        ([], "", "", "whole"),
        (["tests"], "not long", "", "whole"),
        ([], "unit", "", "unit"),
        ([], "unit and not browser", "", "unit"),
        (["tests/unit"], "", "", "unit"),
        (["tests/unit/"], "unit", "", "unit"),
        (["tests/unit/test_doctor_rules.py"], "", "", None),
        ([], "unit", "doctor", None),
        ([], "integration", "", None),
    ],
)
def test_the_check_runs_on_a_whole_run_and_on_every_unit_test(
    args: list[str], markexpr: str, keyword: str, expected: rule_coverage.Scope
) -> None:
    options = {"markexpr": markexpr, "keyword": keyword}

    class Config:
        def __init__(self) -> None:
            self.args = args or ["tests"]  # pytest fills in testpaths when no path is given
            self.args_source = pytest.Config.ArgsSource.ARGS if args else pytest.Config.ArgsSource.TESTPATHS

        def getoption(self, name: str, default: object = None) -> object:
            return options.get(name, default)

        def getini(self, name: str) -> list[str]:
            return ["tests"]

    assert rule_coverage.scope(Config()) == expected  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------------------------
# docs/doctor.md names, for every rule, the tests that make it fire
# --------------------------------------------------------------------------------------------------------------------

RULE_ID = re.compile(r"\b(?:SEC\d{2}|[A-Z]\d{2})\b")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"
SECTION = "## The tests of each rule"


def _test_files() -> list[Path]:
    """The doctor's tests, and any other test that asserts rules with tests/doctor_support.py."""
    tests = Path(__file__).resolve().parents[1]
    named = {*tests.glob("unit/test_doctor*.py"), *tests.glob("integration/test_doctor*.py"),
             tests / "integration" / "test_rayservice.py"}  # fmt: skip
    helpers = {p for p in tests.glob("integration/test_*.py") if "from tests.doctor_support import" in p.read_text()}
    return sorted(named | helpers)


def _ids_in(node: ast.AST) -> set[str]:
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            found |= {m for m in RULE_ID.findall(sub.value) if m in CATALOGUE}
    return found


def _names_in(node: ast.AST) -> set[str]:
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)}


def rule_tests() -> dict[str, list[str]]:
    """Rule id -> the tests (``path::function``) that name it: in their body or decorators, or in a module-level
    case table or helper function they use (one level deep)."""
    root = DOCS.parents[1]
    out: dict[str, list[str]] = {rule: [] for rule in CATALOGUE}
    for path in _test_files():
        tree = ast.parse(path.read_text())
        module: dict[str, set[str]] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and node.value is not None:
                        module[target.id] = _ids_in(node.value)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("test_"):
                module[node.name] = _ids_in(node)
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or not node.name.startswith("test_"):
                continue
            ids = _ids_in(node)
            for name in _names_in(node) & module.keys():
                ids |= module[name]
            for rule in sorted(ids):
                out[rule].append(f"{path.relative_to(root)}::{node.name}")
    return out


def docs_table() -> str:
    """The section of docs/doctor.md: each rule with up to three tests, the sandbox ones (integration) first."""
    lines = [SECTION, "",
             "Every rule with up to three of the tests that name it (they assert it fires, or that it stays quiet on a",
             "near miss). Integration tests break a real cluster on the sandbox and come first; unit tests build the",
             "snapshot by hand. Generated from the tests:",
             "`UPDATE_GOLDEN=1 pytest tests/unit/test_doctor_rule_coverage.py` rewrites it, and the test fails when it",
             "is stale or a rule has no test.", "",
             "| Rule | Tests |", "|---|---|"]  # fmt: skip
    for rule, tests in sorted(rule_tests().items()):
        ranked = sorted(tests, key=lambda t: (not t.startswith("tests/integration"), t))
        shown = "<br>".join(f"`{t}`" for t in ranked[:3]) + (f" (+{len(ranked) - 3})" if len(ranked) > 3 else "")
        lines.append(f"| {rule} | {shown} |")
    return "\n".join(lines) + "\n"


def generated_section(heading: str, table: str, before: str | None = None) -> str:
    """docs/doctor.md's section under ``heading`` as it stands (rewritten to ``table`` first with UPDATE_GOLDEN=1; a
    missing section is added at the end, or before the section ``before``)."""
    text = DOCS.read_text()
    if heading not in text or os.environ.get("UPDATE_GOLDEN"):
        start = text.find(heading)
        if start >= 0:
            end = text.find("\n## ", start + 1)
            text = text[:start] + table + (text[end:] if end >= 0 else "")
        elif before is not None:
            anchor = text.index(before)
            text = text[:anchor] + table + "\n" + text[anchor:]
        else:
            text = text.rstrip("\n") + "\n\n" + table
        if os.environ.get("UPDATE_GOLDEN"):
            DOCS.write_text(text)
    start = text.index(heading)
    end = text.find("\n## ", start + 1)
    return text[start : end + 1 if end >= 0 else len(text)]


def test_the_docs_name_the_tests_that_fire_each_rule() -> None:
    table = docs_table()
    documented = generated_section(SECTION, table)
    assert documented.strip() == table.strip(), "docs/doctor.md's test table is stale: run with UPDATE_GOLDEN=1"
    assert all(rule_tests().values()), [r for r, t in rule_tests().items() if not t]


def test_readme_counts_the_catalogue() -> None:
    """README's rule count is the catalogue's, not a number typed once."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert f"with {len(CATALOGUE)} rules" in readme, f"README.md should say 'with {len(CATALOGUE)} rules'"


# --------------------------------------------------------------------------------------------------------------------
# docs/doctor.md lists the failures users reported in Ray's and KubeRay's trackers that a sandbox test plants
# --------------------------------------------------------------------------------------------------------------------

REPORTED = "## Failures users reported"
TRACKER = re.compile(r"^ray-project/(?P<repo>ray|kuberay|kuberay-helm)(?P<pr> PR)?#(?P<number>\d+)$")


def _link(ref: str) -> str:
    found = TRACKER.match(ref)
    assert found, ref
    kind = "pull" if found["pr"] else "issues"
    return f"[{ref}](https://github.com/ray-project/{found['repo']}/{kind}/{found['number']})"


def reported_failures() -> list[tuple[str, list[str], list[str]]]:
    """(rule, its tracker references, the integration tests that plant it) for every rule citing an issue or pull
    request of Ray's projects and fired by a test on the sandbox."""
    out = []
    for rule, tests in sorted(rule_tests().items()):
        refs = [r for r in CATALOGUE[rule].refs if TRACKER.match(r)]
        planted = sorted(t for t in tests if t.startswith("tests/integration"))
        if refs and planted:
            out.append((rule, refs, planted))
    return out


def reported_table() -> str:
    lines = [REPORTED, "",
             "The failures people reported in Ray's and KubeRay's trackers that a test plants on the sandbox (process",
             "nodes with real Ray, or kwok where the failure is Kubernetes-only) and that the doctor names as the root",
             "cause, with what it saw. Generated from the rules' references and the tests that fire them:",
             "`UPDATE_GOLDEN=1 pytest tests/unit/test_doctor_rule_coverage.py` rewrites it.", "",
             "| Rule | Failure | Reported in | Planted in |", "|---|---|---|---|"]  # fmt: skip
    for rule, refs, planted in reported_failures():
        spec = CATALOGUE[rule]
        tests = "<br>".join(f"`{path}`" for path in dict.fromkeys(t.split("::")[0] for t in planted))
        lines.append(f"| {rule} | `{spec.code}`: {spec.summary} | {', '.join(map(_link, refs))} | {tests} |")
    return "\n".join(lines) + "\n"


def test_the_docs_list_the_reported_failures_the_sandbox_plants() -> None:
    table = reported_table()
    documented = generated_section(REPORTED, table, before=SECTION)
    assert documented.strip() == table.strip(), "docs/doctor.md's reported failures are stale: run with UPDATE_GOLDEN=1"
    assert len(reported_failures()) >= 15, reported_failures()

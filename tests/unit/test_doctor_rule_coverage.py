"""Every rule fires on its case and stays quiet on the healthy seed: one case per rule that no other test triggered
(A07, D06, D08, F08, F10, N01, N02, N03, H01, C04, G06, B11, B13, SEC09), each also checked against a near miss.

``test_every_rule_fires_somewhere`` keeps the count of untested rules at 0: a rule added later must bring its case.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.doctor.rules import CATALOGUE
from tests.unit.test_doctor_rules import NS, World, rules_of

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


CASES: dict[str, tuple[Mutation, Mutation]] = {
    "A07": (spec_image_changed, spec_and_pods_changed),
    "D06": (port_clash, port_distinct),
    "D08": (worker_not_ready, worker_not_ready_nor_head),
    "F08": (service_without_dashboard, service_with_renamed_metrics),
    "F10": (dashboard_disabled, dashboard_enabled),
    "N01": (node_not_ready, node_pressure_only),
    "N02": (node_memory_pressure, node_pressure_only),
    "N03": (worker_preempted, worker_evicted_by_api),
    "B13": (limit_range_defaulted, limit_range_not_applied),
    "H01": (store_above_memory, store_within_memory),
    "C04": (versions_differ, versions_same_tag_variant),
    "G06": (odd_gpu_key, odd_gpu_key_counted),
    "B11": (gated, not_gated),
    "SEC09": (ingress_without_tls, ingress_with_tls),
}


@pytest.mark.parametrize("rule", sorted(CASES))
def test_the_rule_fires_on_its_case_and_not_on_the_near_miss(rule: str) -> None:
    fires, near_miss = CASES[rule]
    world = World()
    fires(world)
    report = world.diagnose()
    assert rule in rules_of(report), f"{rule} did not fire: {sorted(rules_of(report))}"
    world = World()
    near_miss(world)
    assert rule not in rules_of(world.diagnose())
    assert rule not in rules_of(World().diagnose())


def _string_constants(path: Path) -> set[str]:
    return {
        n.value
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_every_rule_fires_somewhere() -> None:
    """Each rule id appears as a string in some doctor test (as an asserted rule, a root, a case here): 0 untested."""
    tests = Path(__file__).resolve().parents[1]
    files = [*tests.glob("unit/test_doctor*.py"), tests / "integration" / "test_doctor.py",
             tests / "integration" / "test_rayservice.py"]  # fmt: skip
    mentioned = set().union(*(_string_constants(f) for f in files))
    mentioned |= {token for text in mentioned for token in text.replace(",", " ").split()}
    untested = sorted(rule for rule in CATALOGUE if rule not in mentioned)
    assert untested == [], f"rules no test triggers: {untested}"


# --------------------------------------------------------------------------------------------------------------------
# docs/doctor.md names, for every rule, the tests that make it fire
# --------------------------------------------------------------------------------------------------------------------

RULE_ID = re.compile(r"\b(?:SEC\d{2}|[A-Z]\d{2})\b")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"
SECTION = "## The tests of each rule"


def _test_files() -> list[Path]:
    tests = Path(__file__).resolve().parents[1]
    return sorted([*tests.glob("unit/test_doctor*.py"), *tests.glob("integration/test_doctor*.py"),
                   tests / "integration" / "test_rayservice.py"])  # fmt: skip


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


def test_the_docs_name_the_tests_that_fire_each_rule() -> None:
    text = DOCS.read_text()
    table = docs_table()
    if SECTION not in text or os.environ.get("UPDATE_GOLDEN"):
        start = text.find(SECTION)
        if start < 0:
            text = text.rstrip("\n") + "\n\n" + table
        else:
            end = text.find("\n## ", start + 1)
            text = text[:start] + table + (text[end:] if end >= 0 else "")
        if os.environ.get("UPDATE_GOLDEN"):
            DOCS.write_text(text)
    start = text.index(SECTION)
    end = text.find("\n## ", start + 1)
    documented = text[start : end + 1 if end >= 0 else len(text)]
    assert documented.strip() == table.strip(), "docs/doctor.md's test table is stale: run with UPDATE_GOLDEN=1"
    assert all(rule_tests().values()), [r for r, t in rule_tests().items() if not t]

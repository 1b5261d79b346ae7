"""Every event raykube's controllers emit carries the ``action`` KubeRay v1.7.0 gives its reason (EV-1).

KubeRay v1.7.0 writes events.k8s.io/v1 Events, and every ``Eventf`` passes one of seven actions
(``ray-operator/controllers/ray/utils/constant.go``, ``K8sEventAction``). The table below is v1.7.0's mapping for each
reason raykube emits; the scan reads the controllers' source for every emission (``reported(...)`` and
``recorder.event(...)``), the action it passes and the reasons it can carry (a reason held in a variable, a helper's
parameter or a module constant is followed to the ``c.EVENT_*`` constants it comes from). A new emission needs a row
here, and a wrong action fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from raykube.api import constants as c

CONTROLLERS = Path(__file__).resolve().parents[2] / "src" / "raykube" / "controllers"
ACTIONS = {"Create", "Update", "Delete", "Validate", "Reconcile", "Cleanup", "Suspend"}

# KubeRay v1.7.0: the action of each reason raykube emits (controllers/ray/*_controller.go, every Eventf).
V170_ACTION: dict[str, str] = {
    # Create: every Created* and FailedToCreate*
    "CreatedHeadPod": "Create",
    "CreatedWorkerPod": "Create",
    "CreatedService": "Create",
    "FailedToCreateService": "Create",
    "CreatedIngress": "Create",
    "FailedToCreateIngress": "Create",
    "CreatedServiceAccount": "Create",
    "FailedToCreateServiceAccount": "Create",
    "CreatedRole": "Create",
    "FailedToCreateRole": "Create",
    "CreatedRoleBinding": "Create",
    "FailedToCreateRoleBinding": "Create",
    "CreatedRedisCleanupJob": "Create",
    "CreatedPVC": "Create",
    "FailedToCreateRedisCleanupJob": "Create",
    "FailedToCreateHeadPod": "Create",
    "FailedToCreateWorkerPod": "Create",
    "CreatedRayCluster": "Create",
    "FailedToCreateRayCluster": "Create",
    "CreatedRayJobSubmitter": "Create",
    "FailedToCreateRayJobSubmitter": "Create",
    # Update: every Updated* and FailedToUpdate*
    "UpdatedIngress": "Update",
    # the NetworkPolicy controller (gate RayClusterNetworkPolicy)
    "CreatedNetworkPolicy": "Create",
    "FailedToCreateNetworkPolicy": "Create",
    "UpdatedNetworkPolicy": "Update",
    "FailedToUpdateNetworkPolicy": "Update",
    "DeletedNetworkPolicy": "Delete",
    "FailedToDeleteNetworkPolicy": "Delete",
    "NetworkPolicyNameCollision": "Validate",
    # the RayClusterMTLS controller (gate RayClusterMTLS, cert-manager installed)
    "MTLSFailedToReconcile": "Reconcile",
    "MTLSCertsNotReady": "Reconcile",
    "MTLSPKIReady": "Reconcile",
    "MTLSCertificatesUpdated": "Update",
    "MTLSCertificateExpiringSoon": "Reconcile",
    "FailedToUpdateIngress": "Update",
    "UpdatedRayCluster": "Update",
    "FailedToUpdateRayCluster": "Update",
    "UpdatedService": "Update",
    "FailedToUpdateService": "Update",
    "UpdatedServeApplications": "Update",
    "FailedToUpdateServeApplications": "Update",
    "UpdatedHeadPodServeLabel": "Update",
    "FailedToUpdateHeadPodServeLabel": "Update",
    # Delete: every Deleted* and FailedToDelete*
    "CreatedGateway": "Create",  # a RayService's incremental upgrade, as the five below
    "FailedToCreateGateway": "Create",
    "CreatedHTTPRoute": "Create",
    "FailedToCreateHTTPRoute": "Create",
    "UpdatedGateway": "Update",
    "FailedToUpdateGateway": "Update",
    "UpdatedHTTPRoute": "Update",
    "FailedToUpdateHTTPRoute": "Update",
    "UpdatedServeTargetCapacity": "Update",
    "FailedToUpdateTargetCapacity": "Update",
    "RollbackImpossible": "Reconcile",
    "DeletedService": "Delete",  # a RayService's suspend (v1.7.0 handleSuspend), as the three below
    "FailedToDeleteService": "Delete",
    "DeletedGateway": "Delete",
    "FailedToDeleteGateway": "Delete",
    "DeletedHTTPRoute": "Delete",
    "FailedToDeleteHTTPRoute": "Delete",
    "DeletedPod": "Delete",
    "DeletedHeadPod": "Delete",
    "DeletedWorkerPod": "Delete",
    "FailedToDeleteWorkerPod": "Delete",
    "DeletedRayCluster": "Delete",
    "FailedToDeleteRayCluster": "Delete",
    "DeletedRayJobSubmitter": "Delete",
    "FailedToDeleteRayJobSubmitter": "Delete",
    # Validate
    "InvalidRayClusterSpec": "Validate",
    "InvalidRayClusterMetadata": "Validate",
    "InvalidRayJobSpec": "Validate",
    "InvalidRayJobMetadata": "Validate",
    "InvalidRayJobStatus": "Validate",
    "InvalidRayServiceSpec": "Validate",
    "InvalidRayServiceMetadata": "Validate",
    "InvalidRayCronJobSpec": "Validate",
    "AutoscalerServiceAccountNotFound": "Validate",
    "RayClusterNotFound": "Validate",
    # Reconcile
    "RayServiceInitializingTimeout": "Reconcile",
    # Cleanup
    "ForceDeletedStuckCluster": "Cleanup",
    "BatchSchedulerCleanedUp": "Cleanup",
    "FailedToCleanupBatchScheduler": "Cleanup",
    # Suspend
    "SuspendedRayCronJob": "Suspend",
}


# Reasons KubeRay v1.7.0 emits with more than one action, each emission site with its own (reconcileGCSStoragePVC:
# Create for a failed create, Update for a drifted claim, Validate for a user's claimName that is missing).
V170_ACTIONS_OF: dict[str, frozenset[str]] = {
    "FailedToCreatePVC": frozenset({"Create", "Update", "Validate"}),
}


def _actions(reason: str, fallback: str) -> frozenset[str]:
    if reason in V170_ACTIONS_OF:
        return V170_ACTIONS_OF[reason]
    return frozenset({V170_ACTION.get(reason, fallback)})


@dataclass(frozen=True)
class Emission:
    where: str  # file:line
    action: str
    reasons: frozenset[str]  # the c.EVENT_* constants (names) it can carry


def _is_event_constant(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr.startswith("EVENT_") and not node.attr.startswith("EVENT_TYPE_"):
        return node.attr
    return None


class _Module:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text())
        self.parents: dict[ast.AST, ast.AST] = {}
        for parent in ast.walk(self.tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[child] = parent

    def functions(self, node: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The functions enclosing ``node``, innermost first."""
        out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append(node)
        return out


class _Scanner:
    def __init__(self) -> None:
        self.modules = [_Module(p) for p in sorted(CONTROLLERS.rglob("*.py")) if p.name != "base.py"]

    def emissions(self) -> Iterator[Emission]:
        for module in self.modules:
            for node in ast.walk(module.tree):
                site = self._site(node)
                if site is None:
                    continue
                call, action_node = site
                where = f"{module.path.relative_to(CONTROLLERS)}:{call.lineno}"
                assert isinstance(action_node, ast.Constant) and isinstance(action_node.value, str), (
                    f"{where}: the action is not a literal: {ast.unparse(action_node)}"
                )
                yield Emission(where, action_node.value, frozenset(self._reasons(module, call, set())))

    @staticmethod
    def _site(node: ast.AST) -> tuple[ast.Call, ast.expr] | None:
        if not isinstance(node, ast.Call):
            return None
        fn = node.func
        if isinstance(fn, ast.Name) and fn.id == "reported" and len(node.args) >= 3:
            return node, node.args[2]
        if isinstance(fn, ast.Attribute) and fn.attr == "event" and "recorder" in ast.unparse(fn.value):
            return node, node.args[3]
        return None

    def _reasons(self, module: _Module, node: ast.AST, seen: set[tuple[str, int, str]]) -> set[str]:
        found = {name for n in ast.walk(node) if (name := _is_event_constant(n))}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in {"c", "self", "ctx"}:
                found |= self._resolve(module, node, n.id, seen)
        return found

    def _resolve(self, module: _Module, at: ast.AST, name: str, seen: set[tuple[str, int, str]]) -> set[str]:
        scopes: list[ast.AST] = [*module.functions(at), module.tree]
        for scope in scopes:
            key = (str(module.path), getattr(scope, "lineno", 0), name)
            if key in seen:
                return set()
            seen.add(key)
            found: set[str] = set()
            hit = False
            if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
                params = [a.arg for a in (*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs)]
                if name in params:  # a helper: its reasons come from its callers
                    return self._from_callers(module, scope.name, seen)
            body = scope.body if isinstance(scope, ast.Module) else list(ast.walk(scope))
            for stmt in body:
                if isinstance(stmt, ast.Assign) and any(name in _target_names(t) for t in stmt.targets):
                    found |= self._reasons(module, stmt.value, seen)
                    hit = True
                elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                    found |= {n for x in ast.walk(stmt) if (n := _is_event_constant(x))}
                    hit = True
            if hit:
                return found
        return set()

    def _from_callers(self, module: _Module, helper: str, seen: set[tuple[str, int, str]]) -> set[str]:
        found: set[str] = set()
        for other in [module, *(m for m in self.modules if m is not module)]:
            calls = [
                n
                for n in ast.walk(other.tree)
                if isinstance(n, ast.Call)
                and (getattr(n.func, "attr", None) == helper or getattr(n.func, "id", None) == helper)
            ]
            for call in calls:
                for arg in (*call.args, *(k.value for k in call.keywords)):
                    found |= self._reasons(other, arg, seen)
            if calls:
                return found  # the helper's own module first
        return found


def _target_names(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


@pytest.fixture(scope="module")
def emissions() -> list[Emission]:
    return list(_Scanner().emissions())


def _reason(constant: str) -> str:
    value = getattr(c, constant)
    assert isinstance(value, str)
    return value


def test_the_table_holds_only_kuberays_seven_actions() -> None:
    assert set(V170_ACTION.values()) <= ACTIONS
    assert set().union(*V170_ACTIONS_OF.values()) <= ACTIONS
    assert not set(V170_ACTIONS_OF) & set(V170_ACTION)


def test_every_emission_has_a_reason_the_scan_can_name(emissions: list[Emission]) -> None:
    assert len(emissions) > 30, "the scan found too few emissions: has reported()/recorder.event() changed?"
    assert [e.where for e in emissions if not e.reasons] == []


def test_every_reason_raykube_emits_is_in_the_table(emissions: list[Emission]) -> None:
    emitted = {_reason(r) for e in emissions for r in e.reasons}
    table = set(V170_ACTION) | set(V170_ACTIONS_OF)
    assert sorted(emitted - table) == []
    assert sorted(table - emitted) == []  # a row for a reason raykube no longer emits


def test_every_event_carries_kuberay_v170s_action_for_its_reason(emissions: list[Emission]) -> None:
    wrong = sorted(
        f"{e.where}: {_reason(r)} with {e.action}, v1.7.0: {sorted(_actions(_reason(r), e.action))}"
        for e in emissions
        for r in e.reasons
        if e.action not in _actions(_reason(r), e.action)
    )
    assert wrong == []

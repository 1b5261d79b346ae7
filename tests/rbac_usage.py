"""Which of the operator's RBAC rules the test run used: least privilege, measured.

Every in-process operator in the tests talks through a :class:`~raykube.kube.client.Kube` built with ``rules=`` (the
generated rules of :mod:`raykube.api.rbac`), which refuses, naming the verb and resource, any call those rules do not
allow. :func:`install` wraps that check to count the (verb, API group, resource) of each call it lets through; the
operator processes behind tests/integration/faultproxy.py (leader election among them) are counted by the proxy. At the
end of a whole run (``make test``, ``make reliability``) the ledger gets a row: each granted triple was called at
least once, or is one of :data:`GRANTED_WITHOUT_A_CALL`, each with the reason it must be granted all the same.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping

import pytest

from raykube.api.rbac import DIAGNOSIS_CLUSTER_RULES, DIAGNOSIS_RULES, LEADER_ELECTION_RULES, OPERATOR_RULES
from raykube.kube.client import Kube
from raykube.kube.resources import Resource
from tests import ledger as ledger_module
from tests.ledger import RBAC_SCENARIO, Ledger

Triple = tuple[str, str, str]  # (verb, API group, resource[/subresource])
USED: collections.Counter[Triple] = collections.Counter()

# Granted although the operator never calls them, and why.
_ESCALATION = (
    "the autoscaler's Role grants it, and Kubernetes lets the operator create that Role only if it holds every "
    "permission in it (RBAC escalation prevention)"
)
_CONFORMANCE = "exercised by KubeRay's own e2e tests against raykube (make conformance SUITE=rayjob), not by this run"
GRANTED_WITHOUT_A_CALL: Mapping[Triple, str] = {
    ("patch", "", "pods/resize"): _ESCALATION,
    ("get", "", "pods"): _ESCALATION,
    ("get", "ray.io", "rayclusters"): _ESCALATION,
    ("delete", "ray.io", "rayjobs"): "a RayJob deleting itself (deletion rule DeleteSelf, "
    f"DELETE_RAYJOB_CR_AFTER_JOB_FINISHES); {_CONFORMANCE} (TestDeletionStrategy)",
    **{
        (verb, "", "events"): "the leader-election Role keeps core events, as KubeRay v1.7.0's does (its controllers "
        "write events.k8s.io/v1 Events); raykube's leader election records no Event"
        for verb in ("create", "patch")
    },
    **{
        (verb, "gateway.networking.k8s.io", plural): "a RayService's incremental upgrade (KubeRay v1.7.0 markers); the "
        "sandbox serves no Gateway API, so no test of this run reaches it (unit tests over FakeKube do); their list is "
        "called, by the --diagnose-after loop's doctor (tests/integration/test_diagnose_after.py)"
        for verb in ("create", "delete", "get", "update", "watch")
        for plural in ("gateways", "httproutes")
    },
    ("delete", "", "secrets"): "KubeRay v1.7.0's role.yaml grants it (RayClusterMTLS); raykube's mTLS controller "
    "deletes no Secret: cert-manager writes them and the garbage collector removes them with their Certificate",
    ("get", "", "persistentvolumeclaims"): "the embedded GCS store's claim is read only when its create answers "
    "AlreadyExists before the cache holds it (a restart mid-create); tests/unit/test_controllers_raycluster_gcs_"
    "storage.py covers it",
    ("get", "cert-manager.io", "certificates/status"): "KubeRay v1.7.0's role.yaml grants it (RayClusterMTLS); "
    "raykube reads a Certificate's status from its informer",
    ("get", "cert-manager.io", "issuers"): "KubeRay v1.7.0's role.yaml grants it (RayClusterMTLS); raykube reads "
    "Issuers from its informer",
    ("delete", "", "services"): "a suspended RayService's head and serve Services (spec.suspend, KubeRay v1.7.0); "
    "unit tests over FakeKube cover it",
    **{
        ("update", "ray.io", f"{kind}/finalizers"): "setting blockOwnerDeletion on children needs it where the "
        "OwnerReferencesPermissionEnforcement admission plugin runs (OpenShift); the sandbox does not run it"
        for kind in ("rayclusters", "rayjobs", "raycronjobs", "rayservices")
    },
}


# Every rule the chart can grant: the operator's, leader election's and, with diagnoseAfter, the diagnosis loop's reads
# (one operator of the run has --diagnose-after, tests/integration/test_diagnose_after.py).
GRANTED_RULES = OPERATOR_RULES + LEADER_ELECTION_RULES + DIAGNOSIS_RULES + DIAGNOSIS_CLUSTER_RULES


def granted() -> set[Triple]:
    return {(v, r.group, res) for r in GRANTED_RULES for res in r.resources for v in r.verbs}


def install() -> None:
    """Count every call a rules-checked client lets through (idempotent)."""
    if getattr(Kube._check, "_counting", False):
        return
    check = Kube._check

    def counting(self: Kube, verb: str, res: Resource, subresource: str | None) -> None:
        check(self, verb, res, subresource)
        if self.rules is not None and self.field_manager == "raykube-operator":  # not a test's own strict client
            USED[(verb, res.group, f"{res.plural}/{subresource}" if subresource else res.plural)] += 1

    counting._counting = True  # type: ignore[attr-defined]
    Kube._check = counting  # type: ignore[method-assign]


def triple_of(method: str, path: str, query: Mapping[str, str]) -> Triple | None:
    """The RBAC (verb, group, resource) of an API request, as the API server's authorizer sees it."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]  # namespaces/<ns>/<resource>...
    if not rest:
        return None
    resource = rest[0] + (f"/{rest[2]}" if len(rest) >= 3 else "")
    named = len(rest) >= 2
    if method == "GET":
        verb = "get" if named else ("watch" if query.get("watch") in ("true", "1") else "list")
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method) or (
            "delete" if named else "deletecollection"
        )
    return (verb, group, resource)


def count_request(method: str, path: str, query: Mapping[str, str]) -> None:
    """Count a request an operator process sent (seen by tests/integration/faultproxy.py on its way)."""
    triple = triple_of(method, path, query)
    if triple is not None:
        USED[triple] += 1


def whole_run(config: pytest.Config) -> bool:
    """The run took every test but the long ones (defined with the ledger: :func:`tests.ledger.whole_run`)."""
    return ledger_module.whole_run(config)


def counts() -> dict[str, int]:
    """This process's counts, for the part file a pytest-xdist worker hands the controller (tests/ledger.py)."""
    return {"|".join(triple): count for triple, count in USED.items()}


def finish(ledger: Ledger, used: dict[str, int]) -> None:
    """At the end of a whole run: add the workers' counts (``used``, from :func:`counts`) and record the row."""
    for key, count in used.items():
        verb, group, resource = key.split("|")
        USED[(verb, group, resource)] += count
    record(ledger)


def record(ledger: Ledger) -> None:
    calls = sum(USED.values())
    called = {t for t in granted() if USED[t]}
    unused = sorted(granted() - called)
    unexplained = [t for t in unused if t not in GRANTED_WITHOUT_A_CALL]
    stale = sorted(t for t in GRANTED_WITHOUT_A_CALL if USED[t])
    names = ", ".join(_name(t) for t in unexplained) or "none"
    ledger.record(
        RBAC_SCENARIO,
        "the whole test run: every in-process operator's client refuses, naming the verb and resource, any call its "
        "generated rules (raykube.api.rbac) do not allow, and counts each (verb, group, resource) it lets through; "
        "operator processes behind the fault proxy are counted by the proxy",
        calls,
        "every granted (verb, group, resource) called at least once, or granted without a call for a stated reason "
        f"({len(GRANTED_WITHOUT_A_CALL)}, each named with its reason below)",
        f"{len(called)} of {len(granted())} granted triples called ({calls} calls); granted without a call and not "
        f"explained: {names}" + (f"; explained but called after all: {stale}" if stale else ""),
        ok=not unexplained and not stale,
        details=[(_name(t), _use(t)) for t in sorted(granted(), key=lambda t: (t[1], t[2], t[0]))],
    )


def _name(triple: Triple) -> str:
    verb, group, resource = triple
    return f"{verb} {group or 'core'} {resource}"


def _use(triple: Triple) -> str:
    return f"{USED[triple]} calls" if USED[triple] else GRANTED_WITHOUT_A_CALL.get(triple, "NOT CALLED")

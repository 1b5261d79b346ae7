"""The root cause --diagnose-after records (raykube.cli.rootcause): the first finding that is a cause."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api import constants as c
from raykube.cli.rootcause import root_cause_of, scope_for
from raykube.doctor.model import Finding, ObjectRef
from raykube.runtime.diagnosis import RootCause

pytestmark = pytest.mark.unit

CLUSTER = ObjectRef(c.KIND_RAYCLUSTER, "seed", "ns")


def finding(rule: str, code: str, severity: Any = "error", **kw: Any) -> Finding:
    return Finding(rule, code, severity, "confirmed", f"{code} title", CLUSTER, CLUSTER, 1, **kw)


@pytest.mark.parametrize(
    ("findings", "expected"),
    [
        ([], None),
        ([finding("B02", "UNSCHEDULABLE_RESOURCES", remediation=["", "lower the replicas", "or add nodes"])],
         RootCause("UNSCHEDULABLE_RESOURCES", "B02", "UNSCHEDULABLE_RESOURCES title", "lower the replicas")),
        # a consequence is never the root cause; info is not a problem; "not ready yet" (X01) is progress
        ([finding("X01", "POD_NOT_READY", caused_by=["f1"]), finding("C07", "SECRET_MISSING", severity="warning")],
         RootCause("SECRET_MISSING", "C07", "SECRET_MISSING title", "")),
        ([finding("I01", "NOTE", severity="info")], None),
        ([finding("X01", "HEAD_NOT_READY")], None),
    ],
)  # fmt: skip
def test_root_cause_of(findings: list[Finding], expected: RootCause | None) -> None:
    assert root_cause_of(findings) == expected


def test_the_scope_is_narrow_and_names_one_object() -> None:
    cluster = scope_for(c.KIND_RAYCLUSTER, "ns", "seed")
    assert (cluster.narrow, cluster.namespaces, cluster.targets, cluster.workloads) == (
        True, ("ns",), (("ns", "seed"),), ())  # fmt: skip
    job = scope_for(c.KIND_RAYJOB, "ns", "job")
    assert (job.targets, job.workloads) == ((), ((c.KIND_RAYJOB, "ns", "job"),))

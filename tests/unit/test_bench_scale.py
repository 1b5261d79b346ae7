"""benchmarks/scale.py's rate-limit bound: what the client-side token buckets alone allow for the counted requests."""

from __future__ import annotations

import argparse

import pytest
from benchmarks.scale import (
    Contender,
    control_plane_strain,
    diagnosis_totals,
    pprof_accounted,
    qps_bound,
    reconcile_totals,
)

# 1,000 clusters: the floor's writes, and KubeRay's (two status updates each), as the audit log counts them.
FLOOR = {"create pods": 4000, "create services": 1000, "patch rayclusters.ray.io/status": 1000}
KUBERAY = {
    "create events": 900,
    "create pods": 4000,
    "create services": 1000,
    "update leases.coordination.k8s.io": 35,
    "update rayclusters.ray.io/status": 2000,
}


def test_one_bucket_takes_every_write() -> None:
    assert qps_bound(FLOOR, qps=100, burst=200, per_resource=False) == pytest.approx(58.0)


def test_per_resource_the_fullest_bucket_decides_and_events_and_leases_have_clients_of_their_own() -> None:
    assert qps_bound(KUBERAY, qps=100, burst=200, per_resource=True) == pytest.approx(38.0)  # 4,000 Pod creates
    assert qps_bound(KUBERAY, qps=100, burst=200, per_resource=False) == pytest.approx(68.0)


def test_a_burst_bigger_than_the_requests_is_no_wait() -> None:
    assert qps_bound({"create pods": 10}, qps=100, burst=200, per_resource=True) == 0.0
    assert qps_bound({}, qps=100, burst=200, per_resource=True) == 0.0


def test_control_plane_strain_counts_ended_watches_lists_and_kwoks_refused_patches() -> None:
    def event(user: str, verb: str, resource: str, code: int = 200, sub: str = "") -> dict[str, object]:
        ref = {"resource": resource, **({"subresource": sub} if sub else {})}
        return {"user": {"username": user}, "verb": verb, "objectRef": ref, "responseStatus": {"code": code}}

    events = [
        event("kwok-controller", "watch", "pods"),
        event("kwok-controller", "list", "pods"),
        event("kwok-controller", "patch", "pods", sub="status"),
        event("kwok-controller", "patch", "pods", sub="status"),
        event("kwok-controller", "patch", "pods", 422, sub="status"),
        event("kwok-controller", "update", "leases"),
        event("system:kube-scheduler", "watch", "pods"),
        event("system:kube-scheduler", "watch", "nodes"),
        event("op", "patch", "pods", 422, sub="status"),  # not kwok's
    ]
    assert control_plane_strain(events) == {
        "watches_ended": {"system:kube-scheduler": 2, "kwok-controller": 1},
        "lists": {"kwok-controller": 1},
        "kwok_pod_status_patches": {"ok": 2, "refused": 1},
    }


def test_reconcile_totals_sum_controller_runtimes_counter_per_controller_and_result() -> None:
    exposition = "\n".join(
        [
            "# HELP controller_runtime_reconcile_total Total number of reconciliations per controller",
            "# TYPE controller_runtime_reconcile_total counter",
            'controller_runtime_reconcile_total{controller="raycluster-controller",result="success"} 4321',
            'controller_runtime_reconcile_total{controller="raycluster-controller",result="requeue_after"} 7',
            'controller_runtime_reconcile_total{controller="rayjob",result="error"} 0',
            'controller_runtime_reconcile_time_seconds_count{controller="raycluster-controller"} 4328',
            'controller_runtime_reconcile_total{controller="raycluster-controller",result="success"} 1.0',
        ]
    )
    assert reconcile_totals(exposition) == {
        ("raycluster-controller", "success"): 4322,
        ("raycluster-controller", "requeue_after"): 7,
        ("rayjob", "error"): 0,
    }


def test_pprof_accounted_reads_the_focus_and_the_whole_in_seconds_whatever_the_unit() -> None:
    header = "Active filters:\n   focus=x\nShowing nodes accounting for 8.52s, 16.98% of 50.18s total\n"
    assert pprof_accounted(header) == (8.52, 50.18)
    part, whole = pprof_accounted("Showing nodes accounting for 520ms, 1.04% of 1.50mins total") or (0, 0)
    assert part == pytest.approx(0.52)
    assert whole == pytest.approx(90.0)
    assert pprof_accounted("no samples") is None
    assert pprof_accounted("Showing nodes accounting for 1.0x, 1% of 2s total") is None


def test_a_raykube_contender_takes_flags_and_nothing_else_does() -> None:
    c = Contender.parse("raykube-c4/diagnose-after=1m")
    assert (c.name, c.kind, c.concurrency, c.flags) == ("raykube-c4/diagnose-after=1m", "raykube", 4,
                                                         ("--diagnose-after=1m",))  # fmt: skip
    assert Contender.parse("raykube").flags == ()
    for bad in ("kuberay-c1/diagnose-after=1m", "raykube/diagnose-after", "raykube/--diagnose-after=1m"):
        with pytest.raises(argparse.ArgumentTypeError, match="raykube/<flag>=<value>"):
            Contender.parse(bad)
    assert Contender.parse("raykube/diagnose-after=1m").slug == "raykube+diagnose-after=1m"


def test_diagnosis_totals_reads_the_loops_counters_and_nothing_when_it_is_off() -> None:
    text = (
        "# TYPE raykube_diagnosis_passes_total counter\nraykube_diagnosis_passes_total 3.0\n"
        "# TYPE raykube_diagnoses_total counter\nraykube_diagnoses_total 120.0\n"
        "# TYPE raykube_root_cause_events_total counter\nraykube_root_cause_events_total 118.0\n"
        '# TYPE controller_runtime_reconcile_total counter\ncontroller_runtime_reconcile_total{controller="x"} 5.0\n'
    )
    assert diagnosis_totals(text) == {
        "raykube_diagnosis_passes": 3,
        "raykube_diagnoses": 120,
        "raykube_root_cause_events": 118,
    }
    assert diagnosis_totals(text[text.index("# TYPE controller") :]) == {}

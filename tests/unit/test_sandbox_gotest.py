from __future__ import annotations

from raykube.sandbox.gotest import FAIL, NO_RESULT, PASS, SKIP, GoTestOutput, first_error, parse

# The shape of `e2e.test -test.v` output with parallel subtests, Gomega and testify failures (Go 1.26).
OUTPUT = """\
=== RUN   TestRayClusterManagedBy
=== RUN   TestRayClusterManagedBy/Successful_creation_of_cluster,_managed_by_Kuberay_Operator
=== PAUSE TestRayClusterManagedBy/Successful_creation_of_cluster,_managed_by_Kuberay_Operator
=== RUN   TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue
=== PAUSE TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue
=== CONT  TestRayClusterManagedBy/Successful_creation_of_cluster,_managed_by_Kuberay_Operator
=== CONT  TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue
    raycluster_test.go:36: [2026-12-03T15:20:01Z] Created RayCluster test-ns-abc/raycluster-ok successfully
=== NAME  TestRayClusterManagedBy/Successful_creation_of_cluster,_managed_by_Kuberay_Operator
    raycluster_test.go:39: [2026-12-03T15:20:01Z] Waiting for RayCluster test-ns-abc/raycluster-ok to become ready
    raycluster_test.go:40:
        Timed out after 120.001s.
        Expected
            <v1.ClusterState>:
        to equal
            <v1.ClusterState>: ready
=== NAME  TestRayClusterManagedBy
    test.go:153: [2026-12-03T15:22:01Z] Retrieving Pod Container test-ns-abc/x/ray-head logs
--- FAIL: TestRayClusterManagedBy (121.50s)
    --- PASS: TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue (3.52s)
    --- FAIL: TestRayClusterManagedBy/Successful_creation_of_cluster,_managed_by_Kuberay_Operator (120.01s)
=== RUN   TestRayClusterWithResourceQuota
    raycluster_test.go:150:
        \tError Trace:\t/root/go/pkg/mod/x/raycluster_test.go:150
        \tError:      \tReceived unexpected error:
        \t            \tthe server could not find the requested resource
        \tTest:       \tTestRayClusterWithResourceQuota
--- FAIL: TestRayClusterWithResourceQuota (0.20s)
=== RUN   TestDump
    raycluster_multi_host_test.go:35:
        Expected 3 pods for group g (3 replicas with 1 hosts each), but found 4
        Expected
            <[]v1.Pod | len:4, cap:4>: [
                {
                    TypeMeta: {Kind: "", APIVersion: ""},
--- FAIL: TestDump (20.56s)
=== RUN   TestSkipped
    raycluster_test.go:9: needs GPUs
--- SKIP: TestSkipped (0.00s)
=== RUN   TestRayClusterSuspend
    raycluster_test.go:90: [2026-12-03T15:22:03Z] Created RayCluster
panic: test timed out after 5m0s
\trunning tests:
\t\tTestRayClusterSuspend (4m59s)
"""


def test_results_per_test_and_subtest_in_start_order() -> None:
    tests = parse("e2e", OUTPUT)
    assert [(t.test, t.subtest, t.result, t.seconds) for t in tests] == [
        ("TestRayClusterManagedBy", "", FAIL, 121.5),
        ("TestRayClusterManagedBy", "Successful_creation_of_cluster,_managed_by_Kuberay_Operator", FAIL, 120.01),
        ("TestRayClusterManagedBy", "Creation_of_cluster_skipped,_managed_by_Kueue", PASS, 3.52),
        ("TestRayClusterWithResourceQuota", "", FAIL, 0.2),
        ("TestDump", "", FAIL, 20.56),
        ("TestSkipped", "", SKIP, 0.0),
        ("TestRayClusterSuspend", "", NO_RESULT, None),
    ]
    assert {t.package for t in tests} == {"e2e"}


def test_reasons_are_the_first_error_not_progress_logs() -> None:
    by_name = {t.name: t for t in parse("e2e", OUTPUT)}
    sub = by_name["TestRayClusterManagedBy/Successful_creation_of_cluster,_managed_by_Kuberay_Operator"]
    assert sub.reason == "Timed out after 120.001s. Expected <v1.ClusterState>: to equal <v1.ClusterState>: ready"
    assert by_name["TestRayClusterManagedBy"].reason == (
        "failed subtest(s): Successful_creation_of_cluster,_managed_by_Kuberay_Operator"
    )
    assert by_name["TestRayClusterWithResourceQuota"].reason == (
        "Received unexpected error: the server could not find the requested resource"
    )
    assert by_name["TestDump"].reason == (
        "Expected 3 pods for group g (3 replicas with 1 hosts each), but found 4 Expected <[]v1.Pod | len:4, cap:4>: …"
    )
    assert by_name["TestSkipped"].reason == "needs GPUs"
    assert by_name["TestRayClusterSuspend"].reason == "panic: test timed out after 5m0s"
    assert by_name["TestRayClusterManagedBy/Creation_of_cluster_skipped,_managed_by_Kueue"].reason == ""


def test_feed_reports_each_result_as_it_comes() -> None:
    output = GoTestOutput("e2e")
    finished = [t.name for line in OUTPUT.splitlines() if (t := output.feed(line)) is not None]
    assert finished[0] == "TestRayClusterManagedBy"
    assert len(finished) == 6


def test_first_error_shortens_long_messages() -> None:
    text = first_error(["    x_test.go:1: " + "y" * 1000])
    assert len(text) == 240
    assert text.endswith("…")
    assert first_error(["    x_test.go:1: [2026-12-03T15:20:01Z] progress only"]) == ""

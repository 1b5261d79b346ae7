"""The differential against KubeRay v1.7.0 (raykube.sandbox.differential): which objects count as the operator's,
what is masked, how two dumps are compared and reported."""

from __future__ import annotations

import base64
import copy
from pathlib import Path
from typing import Any

import yaml

from raykube.api.raycluster import RayClusterSpec
from raykube.builders.spechash import cluster_spec_hash
from raykube.cli.differential import (
    DIFFERENT_READS,
    QUIET_READS,
    STABLE_READS,
    Pair,
    gates,
    hashes_checked,
    kuberay_argv,
    prerequisite_service_accounts,
)
from raykube.sandbox import differential as d


def head_pod(namespace: str, cluster_suffix: str, pod_suffix: str, uid: str, ip: str) -> dict[str, Any]:
    cluster = f"rayjob-sample-{cluster_suffix}"
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": f"{cluster}-head-{pod_suffix}",
            "generateName": f"{cluster}-head-",
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": "123" if namespace.endswith("k") else "456",
            "creationTimestamp": "2026-12-06T15:00:00Z",
            "managedFields": [{"manager": "x"}],
            "labels": {"ray.io/cluster": cluster, "ray.io/node-type": "head", "controller-uid": uid},
            "annotations": {"ray.io/hash": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"},
            "ownerReferences": [
                {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": cluster, "uid": f"owner-{uid}"}
            ],
        },
        "spec": {
            "nodeName": "kwok-node-1" if namespace.endswith("k") else "kwok-node-3",
            "volumes": [{"name": f"kube-api-access-{pod_suffix[:3]}ab"}],
            "containers": [
                {
                    "name": "ray-head",
                    "env": [
                        {"name": "RAY_ADDRESS", "value": f"{cluster}-head-svc.{namespace}.svc.cluster.local:6379"},
                        {"name": "RAY_CLUSTER_NAME", "value": cluster},
                    ],
                }
            ],
        },
        "status": {"podIP": ip, "startTime": "2026-12-06T15:00:01Z"},
    }


def raycluster(namespace: str, suffix: str, uid: str) -> dict[str, Any]:
    return {
        "kind": "RayCluster",
        "apiVersion": "ray.io/v1",
        "metadata": {
            "name": f"rayjob-sample-{suffix}",
            "namespace": namespace,
            "uid": uid,
            "labels": {"ray.io/originated-from-cr-name": "rayjob-sample"},
            "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rayjob-sample", "uid": "j"}],
        },
        "spec": {"rayVersion": "2.55.0"},
        "status": {"state": "ready", "head": {"podIP": "10.244.1.7", "podName": f"rayjob-sample-{suffix}-head-x"}},
    }


def side(namespace: str, cluster_suffix: str, pod_suffix: str, uid: str, ip: str) -> list[dict[str, Any]]:
    return [head_pod(namespace, cluster_suffix, pod_suffix, uid, ip), raycluster(namespace, cluster_suffix, uid + "c")]


# --------------------------------------------------------------------------------------------------- ownership
def test_the_operators_objects_are_those_a_ray_resource_owns_or_labelled_created_by_kuberay() -> None:
    owned = head_pod("a", "bbbbb", "ccccc", "u1", "10.0.0.1")
    labelled = {
        "kind": "Secret",
        "metadata": {"name": "s", "labels": {"app.kubernetes.io/created-by": "kuberay-operator"}},
    }
    root_ca = {"kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt"}}
    job_pod = {
        "kind": "Pod",
        "metadata": {
            "name": "rayjob-sample-xxxxx",
            "labels": {"app.kubernetes.io/created-by": "kuberay-operator"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "rayjob-sample"}],
        },
    }
    assert d.made_by_operator(owned)
    assert d.made_by_operator(labelled)
    assert not d.made_by_operator(root_ca)
    assert not d.made_by_operator(job_pod)  # the Job controller's; the Job itself is compared
    assert not d.made_by_operator(labelled, applied=[("Secret", "s")])  # the sample brought it


# --------------------------------------------------------------------------------------------------- masking
def test_random_suffixes_come_from_generated_names_owned_clusters_replicas_and_job_ids() -> None:
    pod = head_pod("a", "bbbbb", "ccccc", "u1", "10.0.0.1")
    worker = {"kind": "Pod", "metadata": {"name": "w", "labels": {"ray.io/worker-group-replica-name": "grp-ddddd"}}}
    job = {"kind": "RayJob", "metadata": {"name": "rayjob-sample"}, "status": {"jobId": "rayjob-sample-fffff"}}
    tokens = d.random_tokens([pod, raycluster("a", "bbbbb", "u2"), worker, job])
    assert tokens == {"ccccc", "bbbbb", "ddddd", "fffff"}
    # A RayJob whose cluster is gone (shutdownAfterJobFinishes) or was never made (suspended for Kueue) still names it;
    # a RayService names its active and pending ones. KubeRay v1.7.0's ray-job.shutdown.yaml and
    # ray-job.kueue-toy-sample.yaml compared unequal on the suffix alone before (2026-12-07).
    gone = {"kind": "RayJob", "metadata": {"name": "short"}, "status": {"rayClusterName": "short-ggggg"}}
    service = {
        "kind": "RayService",
        "metadata": {"name": "svc"},
        "status": {
            "activeServiceStatus": {"rayClusterName": "svc-hhhhh"},
            "pendingServiceStatus": {"rayClusterName": "svc-jjjjj"},
        },
    }
    other = {"kind": "RayJob", "metadata": {"name": "x"}, "status": {"rayClusterName": "shared-cluster"}}
    assert d.random_tokens([gone, service, other]) == {"ggggg", "hhhhh", "jjjjj"}


def test_two_runs_that_differ_only_in_volatile_fields_mask_to_the_same_objects() -> None:
    kuberay = d.masked_dump("d1-k", side("d1-k", "bbbbb", "ccccc", "uid-one", "10.244.0.5"))
    raykube = d.masked_dump("d1-r", side("d1-r", "zzzzz", "xxxxx", "uid-two", "10.244.3.9"))
    assert d.compare(kuberay, raykube) == []
    pod = kuberay["Pod/rayjob-sample-<rand>-head-<rand>"]
    assert pod["metadata"]["annotations"] == {"ray.io/hash": "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"}
    assert pod["metadata"]["labels"]["ray.io/cluster"] == "rayjob-sample-<rand>"
    assert (
        pod["spec"]["containers"][0]["env"][0]["value"]
        == "rayjob-sample-<rand>-head-svc.<namespace>.svc.cluster.local:6379"
    )
    assert "status" not in pod and "nodeName" not in pod["spec"]
    assert set(pod["metadata"]) == {"name", "generateName", "labels", "annotations", "ownerReferences"}
    assert pod["metadata"]["ownerReferences"][0] == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "name": "rayjob-sample-<rand>",
    }
    assert kuberay["RayCluster/rayjob-sample-<rand>"]["status"]["head"] == {
        "podIP": "<ip>",
        "podName": "rayjob-sample-<rand>-head-x",
    }


def test_hashes_are_compared_unmasked() -> None:
    other = side("d1-r", "zzzzz", "xxxxx", "uid-two", "10.244.3.9")
    other[0]["metadata"]["annotations"]["ray.io/hash"] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234568"
    differences = d.compare(
        d.masked_dump("d1-k", side("d1-k", "bbbbb", "ccccc", "uid-one", "10.244.0.5")), d.masked_dump("d1-r", other)
    )
    assert [(x.object, x.path, x.kuberay, x.raykube) for x in differences] == [
        (
            "Pod/rayjob-sample-<rand>-head-<rand>",
            '.metadata.annotations["ray.io/hash"]',
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ234568",
        )
    ]


def test_service_node_ports_and_cluster_ips_are_masked_secret_values_compared_by_length() -> None:
    masker = d.Masker("ns")
    service = {
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {
            "clusterIP": "10.96.0.7",
            "clusterIPs": ["10.96.0.7"],
            "ports": [{"name": "x", "port": 1, "nodePort": 30001}],
        },
    }
    assert masker.object(service)["spec"] == {"ports": [{"name": "x", "port": 1}]}
    secret = {"kind": "Secret", "metadata": {"name": "s"}, "data": {"token": base64.b64encode(b"abcdef").decode()}}
    assert masker.object(secret)["data"] == {"token": "<6 bytes>"}


def test_collisions_pair_up_by_content_whatever_the_listing_order() -> None:
    a = {"kind": "Pod", "metadata": {"name": "w-<rand>"}, "spec": {"x": 1}}
    b = {"kind": "Pod", "metadata": {"name": "w-<rand>"}, "spec": {"x": 2}}
    assert d.keyed([a, b]) == d.keyed([b, a])
    assert set(d.keyed([a, b])) == {"Pod/w-<rand>#1", "Pod/w-<rand>#2"}


# --------------------------------------------------------------------------------------------------- comparison
def test_named_lists_compare_by_name_and_report_a_different_order() -> None:
    a = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    b = {"env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}, {"name": "C", "value": "3"}]}
    assert list(d.diff_values(a, b)) == [
        (".env[name=C]", d.MISSING, {"name": "C", "value": "3"}),
        (".env (order of names)", ["A", "B"], ["B", "A"]),
    ]


def test_other_lists_compare_by_index_and_types_matter() -> None:
    assert list(d.diff_values({"args": ["a", "b"]}, {"args": ["a"]})) == [(".args[1]", "b", d.MISSING)]
    assert list(d.diff_values({"n": 1}, {"n": True})) == [(".n", 1, True)]
    assert list(d.diff_values({"n": "1"}, {"n": 1})) == [(".n", "1", 1)]
    assert list(d.diff_values({"a": {}}, {})) == [(".a", {}, d.MISSING)]


def test_an_object_only_one_operator_made_is_one_difference() -> None:
    differences = d.compare({"Job/x": {"kind": "Job"}}, {"Service/y": {"kind": "Service"}})
    assert [x.line() for x in differences] == [
        'Job/x `.`: KubeRay `"made"`, raykube `<absent>`',
        'Service/y `.`: KubeRay `<absent>`, raykube `"made"`',
    ]


# --------------------------------------------------------------------------------------------------- samples
def test_samples_are_the_files_with_a_ray_resource_and_their_namespaced_companions(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    docs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cr"}},
        {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}},
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc", "namespace": "x"}, "spec": {}},
    ]
    (tmp_path / "sub" / "ray-cluster.a.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "other.yaml").write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    )
    (tmp_path / "cron.yaml").write_text(
        yaml.safe_dump({"apiVersion": "ray.io/v1", "kind": "RayCronJob", "metadata": {"name": "c"}})
    )
    samples = d.find_samples(tmp_path)
    assert [s.name for s in samples] == ["sub/ray-cluster.a.yaml"]
    assert [(doc["kind"], dict(doc["metadata"])) for doc in samples[0].documents] == [
        ("ConfigMap", {"name": "cm"}),
        ("RayCluster", {"name": "rc"}),
    ]
    assert samples[0].resources == [("RayCluster", "rc")]


def test_service_accounts_the_pods_name_but_the_sample_does_not_bring_are_made_first() -> None:
    template = {"spec": {"serviceAccountName": "workload-identity"}}
    job = {
        "kind": "RayJob",
        "metadata": {"name": "j"},
        "spec": {"rayClusterSpec": {"headGroupSpec": {"template": template}, "workerGroupSpecs": [{"template": {}}]}},
    }
    brought = {"kind": "ServiceAccount", "metadata": {"name": "brought"}}
    cluster = {
        "kind": "RayCluster",
        "metadata": {"name": "c"},
        "spec": {"headGroupSpec": {"template": {"spec": {"serviceAccountName": "brought"}}}},
    }
    assert prerequisite_service_accounts(d.Sample("s", (job, brought, cluster))) == {"workload-identity"}


def test_a_pair_settles_only_once_both_sides_have_status_and_read_the_same_several_times() -> None:
    cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"}, "spec": {}}
    pair = Pair(0, d.Sample("s", (cluster,)))
    without_status = {"d0-k": [copy.deepcopy(cluster)], "d0-r": [copy.deepcopy(cluster)]}
    assert [pair.observe(without_status) for _ in range(QUIET_READS + 1)] == [False] * QUIET_READS + [True]  # no status
    pair = Pair(0, d.Sample("s", (cluster,)))
    with_status = {ns: [{**cluster, "status": {"state": "ready"}}] for ns in ("d0-k", "d0-r")}
    reads = [pair.observe(with_status) for _ in range(STABLE_READS + 2)]
    assert reads == [False] * STABLE_READS + [True] * 2
    # Two sides that differ (one operator's status lagging the other's) settle only when the difference lasts.
    pair = Pair(0, d.Sample("s", (cluster,)))
    lagging = {"d0-k": [{**cluster, "status": {"state": ""}}], "d0-r": [{**cluster, "status": {"state": "ready"}}]}
    reads = [pair.observe(lagging) for _ in range(DIFFERENT_READS + 1)]
    assert reads == [False] * DIFFERENT_READS + [True]


# --------------------------------------------------------------------------------------------------- oracle
def test_kuberay_watches_only_its_namespaces_with_v170s_gate_defaults() -> None:
    argv = kuberay_argv(Path("/bin/op"), Path("/k"), ["d0-k", "d1-k"])
    assert "--watch-namespace=d0-k,d1-k" in argv
    assert f"--feature-gates={gates()}" in argv
    assert "RayServiceIncrementalUpgrade=true" in gates() and "AsyncJobInfoQuery" not in gates()


# --------------------------------------------------------------------------------------------------- report
def run_of(*results: d.SampleResult, total: int = 3) -> d.Run:
    return d.Run(
        results, "v1.7.0 (commit 59d663aeec13)", "raykube", "G=true", "v1.36.3", "2026-12-06 15:00 UTC", 1.0, total
    )


def test_the_report_counts_equal_samples_and_lists_each_difference() -> None:
    unequal = d.SampleResult("b.yaml", [("RayJob", "j")], 2, (d.Difference("Job/j", ".spec.x", 1, 2),))
    run = run_of(
        d.SampleResult("a.yaml", [("RayCluster", "c")], 3), unequal, d.SampleResult("c.yaml", [], 0, error="boom")
    )
    text = d.markdown(run)
    assert "**1 of 3 KubeRay v1.7.0 samples equal.**" in text
    assert "- Job/j `.spec.x`: KubeRay `1`, raykube `2`" in text
    assert "| `c.yaml` |  | 0 | not compared: boom |" in text
    readme = "x <!-- differential:count -->old<!-- /differential:count --> y"
    assert (
        d.update_count(readme, run)
        == "x <!-- differential:count -->1 of 3 KubeRay v1.7.0 samples equal<!-- /differential:count --> y"
    )
    assert run_of(d.SampleResult("a.yaml", [], 1), total=9).count_sentence() == (
        "1 of 1 KubeRay v1.7.0 samples equal (1 of the 9 samples run)"
    )


def test_a_samples_own_resources_are_found_by_name_or_by_generate_name() -> None:
    by_name = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"}}
    generated = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"generateName": "g-"}}
    sample = d.Sample("s", (by_name, generated))
    assert d.is_own(sample, {"kind": "RayJob", "metadata": {"name": "j"}})
    assert d.is_own(sample, {"kind": "RayJob", "metadata": {"name": "g-bcdfg", "generateName": "g-"}})
    assert not d.is_own(sample, {"kind": "RayCluster", "metadata": {"name": "j"}})
    assert not d.is_own(sample, {"kind": "RayJob", "metadata": {"name": "g-bcdfg", "generateName": "h-"}})


def test_times_inside_messages_node_ports_in_status_and_the_order_of_service_ports_are_masked() -> None:
    service = {
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {"ports": [{"name": "gcs", "port": 6379, "nodePort": 31001}, {"name": "client", "port": 10001}]},
    }
    cluster = {
        "kind": "RayCluster",
        "metadata": {"name": "c"},
        "status": {"endpoints": {"gcs": "31001", "client": "10001"}},
    }
    job = {"kind": "RayJob", "metadata": {"name": "j"}, "status": {"message": "finished at 2026-12-06 15:46:51 but"}}
    dump = d.masked_dump("ns", [service, cluster, job])
    assert dump["Service/svc"]["spec"]["ports"] == [{"name": "client", "port": 10001}, {"name": "gcs", "port": 6379}]
    assert dump["RayCluster/c"]["status"]["endpoints"] == {"gcs": "<nodePort>", "client": "10001"}
    assert dump["RayJob/j"]["status"]["message"] == "finished at <time> but"


def test_empty_values_one_side_omits_are_told_apart_and_counted_on_their_own() -> None:
    empty = d.Difference("RayCluster/c", ".spec.workerGroupSpecs[0].scaleStrategy", {}, d.MISSING)
    nested = d.Difference(
        "RayService/s", ".status.pendingServiceStatus.rayClusterStatus", {"desiredCPU": "0", "head": {}}, d.MISSING
    )
    real = d.Difference("Job/j", ".spec.template.metadata.labels.x", "RayJob", d.MISSING)
    assert empty.empty and nested.empty and not real.empty
    assert not d.Difference("Job/j", "", "made", d.MISSING).empty
    assert empty.line().endswith("(empty vs absent)")
    run = run_of(
        d.SampleResult("a.yaml", [], 1),
        d.SampleResult("b.yaml", [], 1, (empty, nested)),
        d.SampleResult("c.yaml", [], 1, (empty, real)),
    )
    assert run.count_sentence() == (
        "1 of 3 KubeRay v1.7.0 samples equal, 1 more only for empty values one side writes and the other omits"
    )
    assert "| `b.yaml` |  | 1 | 2 differences (2 empty vs absent) |" in d.markdown(run)


def test_a_rayjobs_copy_of_its_clusters_status_is_a_snapshot_counted_on_its_own() -> None:
    snapshot = d.Difference("RayJob/j", ".status.rayClusterStatus.head.podIP", "<ip>", d.MISSING)
    condition = d.Difference("RayJob/j", ".status.rayClusterStatus.conditions[0].status", "True", "False")
    own_status = d.Difference("RayJob/j", ".status.jobDeploymentStatus", "Running", "Initializing")
    cluster = d.Difference("RayCluster/c", ".status.rayClusterStatus.x", 1, 2)  # the path alone is not enough
    assert snapshot.snapshot and condition.snapshot
    assert not own_status.snapshot and not cluster.snapshot
    assert condition.line().endswith("(snapshot)")
    empty = d.Difference("RayCluster/c", ".spec.workerGroupSpecs[0].scaleStrategy", {}, d.MISSING)
    run = run_of(
        d.SampleResult("a.yaml", [], 1),
        d.SampleResult("b.yaml", [], 1, (empty,)),
        d.SampleResult("c.yaml", [], 1, (snapshot, condition, empty)),
        d.SampleResult("d.yaml", [], 1, (snapshot, own_status)),
        d.SampleResult("e.yaml", [], 1, (snapshot,), error="boom"),
        total=5,
    )
    assert run.count_sentence() == (
        "1 of 5 KubeRay v1.7.0 samples equal, 1 more only for empty values one side writes and the other omits, "
        "1 more only in a RayJob's snapshot of its cluster's status"
    )
    assert "| `c.yaml` |  | 1 | 3 differences (1 empty vs absent, 2 snapshot) |" in d.markdown(run)


def test_a_recreate_hash_is_shown_as_its_specs_only_when_it_is_its_clusters_spec_hash() -> None:
    spec = {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "ray:2.52.0"}]}}}}
    right = cluster_spec_hash(RayClusterSpec.model_validate(spec))
    cluster = {"kind": "RayCluster", "metadata": {"name": "c-bcdfg"}, "spec": spec}

    def head(value: str, cluster_name: str = "c-bcdfg") -> dict[str, object]:
        annotations = {"ray.io/upgrade-strategy-recreate-hash": value}
        return {
            "kind": "Pod",
            "metadata": {"name": "h", "labels": {"ray.io/cluster": cluster_name}, "annotations": annotations},
        }

    checked = hashes_checked([cluster, head(right), head("WRONG"), head(right, "other")])
    values = [o["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"] for o in checked[1:]]
    assert values == [d.SPEC_HASH, "WRONG", right]  # checked, left to show, no cluster to check against
    assert head(right)["metadata"]["annotations"]["ray.io/upgrade-strategy-recreate-hash"] == right  # input untouched

"""Batch scheduler plugins (raykube.builders.batch) against KubeRay v1.6.1's samples: the Pods' labels, annotations and
schedulerName, Volcano's PodGroup, YuniKorn's task groups, and the operator flags that choose a plugin."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from raykube.api.config import ConfigError, load_config_file, parse_flags
from raykube.api.resources import RayCluster
from raykube.builders import batch, pods
from raykube.builders.options import BuildOptions
from raykube.kube.resources import Resource
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"
UID = "0b9d7c4e-3f61-4a8e-9c51-2d7f6a1e8b30"
VOLCANO = BuildOptions(batch_scheduler="volcano")
YUNIKORN = BuildOptions(batch_scheduler="yunikorn")


def _doc(sample: str) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all((SAMPLES / sample).read_text()) if d and d["kind"] == "RayCluster"]
    doc["metadata"].update(uid=UID, namespace="team-a")
    return dict(doc)


def _cluster(doc: dict[str, Any]) -> RayCluster:
    return RayCluster.model_validate(doc)


def _pods(cluster: RayCluster, options: BuildOptions) -> list[dict[str, Any]]:
    """The head Pod and one Pod of every worker group."""
    assert cluster.spec is not None
    workers = [
        pods.worker_pod(cluster, i, options, replica_index=0, replica_name=f"{g.group_name}-abcde", host_index=0)
        for i, g in enumerate(cluster.spec.worker_group_specs or [])
    ]
    return [pods.head_pod(cluster, options), *workers]


def _batch_metadata(pod: dict[str, Any], before: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The labels and annotations the plugin added (compared with the same Pod built without a scheduler)."""
    meta, plain = pod["metadata"], before["metadata"]
    labels = {k: v for k, v in meta.get("labels", {}).items() if k not in plain.get("labels", {})}
    annotations = {k: v for k, v in meta.get("annotations", {}).items() if k not in plain.get("annotations", {})}
    return labels, annotations


def _worker(name: str, cpu: str, memory: str, **group: Any) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
    resources["limits"].update(group.pop("extra_limits", {}))
    return {
        "groupName": name,
        "rayStartParams": {},
        "template": {
            "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0", "resources": resources}]}
        },
        **group,
    }


def _many_groups() -> dict[str, Any]:
    """The volcano queue sample with four groups: plain, clamped, multi-host with an extended resource, suspended."""
    doc = _doc("ray-cluster.volcano-scheduler-queue.yaml")
    doc["spec"]["workerGroupSpecs"] = [
        _worker("small", "500m", "1Gi", replicas=2, minReplicas=1, maxReplicas=4),
        _worker("capped", "1", "2Gi", replicas=3, minReplicas=1, maxReplicas=3),
        _worker(
            "tpu",
            "2",
            "4Gi",
            replicas=2,
            minReplicas=1,
            maxReplicas=4,
            numOfHosts=2,
            extra_limits={"google.com/tpu": "4"},
        ),
        _worker("off", "8", "16Gi", replicas=5, minReplicas=5, maxReplicas=5, suspend=True),
    ]
    return doc


# --------------------------------------------------------------------------------------------------------------------
# Volcano
# --------------------------------------------------------------------------------------------------------------------


def test_volcano_sample_head_only() -> None:
    cluster = _cluster(_doc("ray-cluster.volcano-scheduler.yaml"))
    (podgroup,) = batch.Volcano().objects(cluster)
    assert podgroup == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "ray-test-cluster-0-pg",
            "namespace": "team-a",
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": "test-cluster-0",
                    "uid": UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        # The head's requests (1 CPU, 2Gi), not its 5Gi memory limit; no queue label, so no queue.
        "spec": {"minMember": 1, "minResources": {"cpu": "1", "memory": "2Gi"}},
        "status": {"phase": "Pending"},
    }
    (head,) = _pods(cluster, VOLCANO)
    (plain,) = _pods(cluster, BuildOptions())
    assert head["spec"]["schedulerName"] == "volcano"
    assert _batch_metadata(head, plain) == (
        {},
        {"scheduling.k8s.io/group-name": "ray-test-cluster-0-pg", "volcano.sh/task-spec": "headgroup"},
    )
    # Nothing else changes: the Pod is the plain one plus the scheduler's keys.
    without = copy.deepcopy(head)
    del without["spec"]["schedulerName"]
    for key in ("scheduling.k8s.io/group-name", "volcano.sh/task-spec"):
        del without["metadata"]["annotations"][key]
    assert without == plain


def test_volcano_queue_sample() -> None:
    """The gang of ray-cluster.volcano-scheduler-queue.yaml, as Ray's Volcano guide shows it: 3 Pods, 3 CPU, 4Gi."""
    cluster = _cluster(_doc("ray-cluster.volcano-scheduler-queue.yaml"))
    (podgroup,) = batch.Volcano().objects(cluster)
    assert podgroup["metadata"]["name"] == "ray-test-cluster-0-pg"
    assert podgroup["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "3", "memory": "4Gi"},
        "queue": "kuberay-test-queue",
    }
    head, worker = _pods(cluster, VOLCANO)
    plain_head, plain_worker = _pods(cluster, BuildOptions())
    queue = {"volcano.sh/queue-name": "kuberay-test-queue"}
    assert _batch_metadata(head, plain_head) == (
        queue,
        {"scheduling.k8s.io/group-name": "ray-test-cluster-0-pg", "volcano.sh/task-spec": "headgroup"},
    )
    assert _batch_metadata(worker, plain_worker) == (
        queue,
        {"scheduling.k8s.io/group-name": "ray-test-cluster-0-pg", "volcano.sh/task-spec": "worker"},
    )
    assert {p["spec"]["schedulerName"] for p in (head, worker)} == {"volcano"}
    assert "priorityClassName" not in head["spec"]  # v1.6.1 copies the label, it does not set the Pod's priority


def test_volcano_several_groups_multi_host_and_suspended() -> None:
    cluster = _cluster(_many_groups())
    (podgroup,) = batch.Volcano().objects(cluster)
    # minMember: head 1 + small 2 + capped 3 + tpu 2 replicas x 2 hosts; the suspended group counts for nothing.
    assert podgroup["spec"]["minMember"] == 1 + 2 + 3 + 4
    # minResources: head 1 CPU/2Gi + 2 x (500m, 1Gi) + 3 x (1, 2Gi) + 4 x (2, 4Gi, 4 TPU from the limit).
    assert podgroup["spec"]["minResources"] == {
        "cpu": "13",
        "google.com/tpu": "16",
        "memory": "26Gi",
    }
    # Every group's Pods point at the one PodGroup, each with its own task.
    tasks = [p["metadata"]["annotations"]["volcano.sh/task-spec"] for p in _pods(cluster, VOLCANO)]
    assert tasks == ["headgroup", "small", "capped", "tpu", "off"]


def test_volcano_clamps_members_but_counts_resources_of_replicas_as_written() -> None:
    """KubeRay's CalculateDesiredReplicas clamps to [min, max]; CalculateDesiredResources multiplies the Pod by
    ``replicas`` as written. A spec with replicas outside its bounds shows both."""
    doc = _doc("ray-cluster.volcano-scheduler-queue.yaml")
    doc["spec"]["workerGroupSpecs"][0].update(replicas=5, minReplicas=1, maxReplicas=3)
    (podgroup,) = batch.Volcano().objects(_cluster(doc))
    assert podgroup["spec"]["minMember"] == 1 + 3
    assert podgroup["spec"]["minResources"] == {"cpu": "6", "memory": "7Gi"}


def test_volcano_with_autoscaling_uses_minimum_replicas() -> None:
    doc = _many_groups()
    doc["spec"]["enableInTreeAutoscaling"] = True
    (podgroup,) = batch.Volcano().objects(_cluster(doc))
    # head + small 1 + capped 1 + tpu 1 x 2 hosts; suspended "off" (min 5) left out.
    assert podgroup["spec"]["minMember"] == 1 + 1 + 1 + 2
    assert podgroup["spec"]["minResources"] == {"cpu": "6500m", "google.com/tpu": "8", "memory": "13Gi"}


def test_volcano_rayjob_podgroup_sizes_skip_suspended_groups_and_take_nil_replicas_as_zero() -> None:
    """KubeRay v1.7.0 (BS-2, POD-10): ``CalculateMinResources`` skips suspended worker groups (v1.6.1 counted them)
    and ``CalculateDesiredResources`` takes a nil ``replicas`` as 0 (v1.6.1 dereferenced it), while the replica count
    (``GetWorkerGroupDesiredReplicas``) clamps nil up to ``minReplicas``. Shown on the clean-up PodGroup a RayJob's
    cluster with a suspended group (a DeleteWorkers rule) and an unset ``replicas`` gets."""
    doc = _doc("ray-cluster.volcano-scheduler-queue.yaml")
    doc["spec"]["workerGroupSpecs"] = [
        _worker("unset", "1", "1Gi", minReplicas=2, maxReplicas=4),
        _worker("off", "8", "16Gi", replicas=5, minReplicas=5, maxReplicas=5, suspend=True),
    ]
    head = {"cpu": "1", "memory": "2Gi"}  # the sample's head requests
    min_member, resources = batch.Volcano.gang(_cluster(doc))
    assert min_member == 1 + 2  # head + clamp(nil → min 2); the suspended group counts nothing
    assert {name: str(q) for name, q in resources.items()} == head  # nil replicas: no worker resources
    doc["spec"]["enableInTreeAutoscaling"] = True
    min_member, resources = batch.Volcano.gang(_cluster(doc))
    assert min_member == 1 + 2
    # head + "unset" 2 x (1 CPU, 1Gi); "off" (min 5 x 8 CPU) left out
    assert {name: str(q) for name, q in resources.items()} == {"cpu": "3", "memory": "4Gi"}


def test_volcano_priority_topology_and_annotations() -> None:
    doc = _doc("ray-cluster.volcano-scheduler-queue.yaml")
    doc["metadata"]["labels"].update(
        {
            "ray.io/priority-class-name": "high",
            "volcano.sh/network-topology-mode": "hard",
            "volcano.sh/network-topology-highest-tier-allowed": "2",
        }
    )
    doc["metadata"]["annotations"] = {"team.example.com/owner": "ml"}
    cluster = _cluster(doc)
    (podgroup,) = batch.Volcano().objects(cluster)
    assert podgroup["spec"]["priorityClassName"] == "high"
    assert podgroup["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 2}
    assert podgroup["metadata"]["annotations"] == {"team.example.com/owner": "ml"}
    head, worker = _pods(cluster, VOLCANO)
    for pod in (head, worker):
        assert pod["metadata"]["labels"]["ray.io/priority-class-name"] == "high"
        assert "volcano.sh/network-topology-mode" not in pod["metadata"]["labels"]

    doc["metadata"]["labels"]["volcano.sh/network-topology-highest-tier-allowed"] = "two"
    with pytest.raises(
        batch.BatchSchedulingError, match="network-topology-highest-tier-allowed label to int"
    ) as raised:
        batch.Volcano().objects(_cluster(doc))
    assert 'strconv.Atoi: parsing "two": invalid syntax for podgroup' in str(raised.value)  # KubeRay's %w of Atoi's
    doc["metadata"]["labels"]["volcano.sh/network-topology-highest-tier-allowed"] = "9" * 20
    with pytest.raises(batch.BatchSchedulingError, match=r"parsing \"9+\": value out of range for podgroup"):
        batch.Volcano().objects(_cluster(doc))


def test_volcano_empty_labels_are_not_copied() -> None:
    doc = _doc("ray-cluster.volcano-scheduler-queue.yaml")
    doc["metadata"]["labels"] = {"volcano.sh/queue-name": "", "ray.io/priority-class-name": ""}
    cluster = _cluster(doc)
    (podgroup,) = batch.Volcano().objects(cluster)
    assert "queue" not in podgroup["spec"]
    assert "priorityClassName" not in podgroup["spec"]
    head = pods.head_pod(cluster, VOLCANO)
    assert "volcano.sh/queue-name" not in head["metadata"]["labels"]


def test_volcano_cluster_of_a_rayjob_uses_the_rayjobs_podgroup() -> None:
    doc = _doc("ray-cluster.volcano-scheduler-queue.yaml")
    doc["metadata"]["name"] = "my-job-x7k2p"
    doc["metadata"]["labels"].update(
        {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "my-job"}
    )
    cluster = _cluster(doc)
    assert batch.Volcano().objects(cluster) == []  # the RayJob makes ray-my-job-pg, submitter included
    head = pods.head_pod(cluster, VOLCANO)
    assert head["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-my-job-pg"


def test_volcano_keeps_only_min_member_and_min_resources_in_step() -> None:
    volcano = batch.Volcano()
    (desired,) = volcano.objects(_cluster(_doc("ray-cluster.volcano-scheduler-queue.yaml")))
    live = copy.deepcopy(desired)
    live["metadata"]["resourceVersion"] = "42"
    live["spec"]["minResources"] = {"cpu": "3000m", "memory": "4096Mi"}  # equal by value
    live["spec"]["queue"] = "changed-by-someone"
    assert volcano.updated(live, desired) is None

    live["spec"]["minMember"] = 2
    update = volcano.updated(live, desired)
    assert update is not None
    assert update["spec"] == {**live["spec"], "minMember": 3, "minResources": {"cpu": "3", "memory": "4Gi"}}
    assert update["metadata"]["resourceVersion"] == "42"  # a conditional PUT
    assert live["spec"]["minMember"] == 2  # inputs are not mutated

    del live["spec"]["minResources"]
    live["spec"]["minMember"] = 3
    assert volcano.updated(live, desired) is not None


# --------------------------------------------------------------------------------------------------------------------
# YuniKorn
# --------------------------------------------------------------------------------------------------------------------

SAMPLE_TASK_GROUPS = (
    '[{"minResource":{"cpu":"1","memory":"2Gi"},"name":"headgroup","minMember":1},'
    '{"minResource":{"cpu":"1","memory":"1Gi"},"name":"worker","minMember":2}]'
)


def test_yunikorn_sample() -> None:
    cluster = _cluster(_doc("ray-cluster.yunikorn-scheduler.yaml"))
    assert batch.YuniKorn().objects(cluster) == []
    head, worker = _pods(cluster, YUNIKORN)
    plain_head, plain_worker = _pods(cluster, BuildOptions())
    labels = {"applicationId": "test-yunikorn-0", "queue": "root.test"}
    assert _batch_metadata(head, plain_head) == (
        labels,
        {"yunikorn.apache.org/task-groups": SAMPLE_TASK_GROUPS, "yunikorn.apache.org/task-group-name": "headgroup"},
    )
    assert _batch_metadata(worker, plain_worker) == (
        labels,
        {"yunikorn.apache.org/task-groups": SAMPLE_TASK_GROUPS, "yunikorn.apache.org/task-group-name": "worker"},
    )
    assert {p["spec"]["schedulerName"] for p in (head, worker)} == {"yunikorn"}


def test_yunikorn_without_gang_scheduling_or_labels() -> None:
    doc = _doc("ray-cluster.yunikorn-scheduler.yaml")
    del doc["metadata"]["labels"]["ray.io/gang-scheduling-enabled"]
    del doc["metadata"]["labels"]["yunikorn.apache.org/queue"]
    head = pods.head_pod(_cluster(doc), YUNIKORN)
    assert head["spec"]["schedulerName"] == "yunikorn"
    assert head["metadata"]["labels"]["applicationId"] == "test-yunikorn-0"
    assert "queue" not in head["metadata"]["labels"]
    assert not [k for k in head["metadata"]["annotations"] if k.startswith("yunikorn.apache.org/")]


def test_yunikorn_gang_label_is_read_for_its_presence_only() -> None:
    doc = _doc("ray-cluster.yunikorn-scheduler.yaml")
    doc["metadata"]["labels"]["ray.io/gang-scheduling-enabled"] = "false"  # KubeRay: present means on
    head = pods.head_pod(_cluster(doc), YUNIKORN)
    assert head["metadata"]["annotations"]["yunikorn.apache.org/task-groups"] == SAMPLE_TASK_GROUPS


def test_yunikorn_task_groups_of_several_groups() -> None:
    doc = _many_groups()
    doc["metadata"]["labels"] = {"ray.io/gang-scheduling-enabled": "true", "yunikorn.apache.org/app-id": "app"}
    tpu = doc["spec"]["workerGroupSpecs"][2]["template"]["spec"]
    tpu["nodeSelector"] = {"zone": "b", "accelerator": "tpu-v4<&>"}
    tpu["tolerations"] = [{"operator": "Exists", "effect": "NoSchedule", "key": "google.com/tpu"}]
    tpu["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    cluster = _cluster(doc)
    groups = batch.YuniKorn.task_groups(cluster)
    assert [(g["name"], g["minMember"]) for g in groups] == [
        ("headgroup", 1),
        ("small", 1),
        ("capped", 1),
        ("tpu", 2),  # minReplicas 1 x numOfHosts 2
        ("off", 5),  # KubeRay builds task groups from every group, suspended or not
    ]
    assert groups[3] == {
        "minResource": {"cpu": "2", "google.com/tpu": "4", "memory": "4Gi"},  # one Pod's resources
        "nodeSelector": {"accelerator": "tpu-v4<&>", "zone": "b"},
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
        "name": "tpu",
        "tolerations": [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}],
        "minMember": 2,
    }
    annotation = pods.head_pod(cluster, YUNIKORN)["metadata"]["annotations"]["yunikorn.apache.org/task-groups"]
    assert json.loads(annotation) == groups
    # Go's encoding/json: field order as KubeRay's struct, no spaces, <, > and & escaped.
    assert '"nodeSelector":{"accelerator":"tpu-v4\\u003c\\u0026\\u003e","zone":"b"}' in annotation
    assert ", " not in annotation


def test_yunikorn_reuses_the_clusters_own_task_groups() -> None:
    doc = _doc("ray-cluster.yunikorn-scheduler.yaml")
    own = '[{"minResource":{"cpu":"3"},"name":"submitter","minMember":1}]'
    doc["metadata"]["annotations"] = {"yunikorn.apache.org/task-groups": own}
    worker = pods.worker_pod(_cluster(doc), 0, YUNIKORN, replica_index=0)
    assert worker["metadata"]["annotations"]["yunikorn.apache.org/task-groups"] == own


# --------------------------------------------------------------------------------------------------------------------
# Choosing a plugin
# --------------------------------------------------------------------------------------------------------------------


def test_no_batch_scheduler_changes_nothing() -> None:
    cluster = _cluster(_doc("ray-cluster.volcano-scheduler-queue.yaml"))
    assert batch.get("") is None
    head = pods.head_pod(cluster, BuildOptions())
    assert "schedulerName" not in head["spec"]
    assert "scheduling.k8s.io/group-name" not in head["metadata"]["annotations"]


def test_registry_names_kuberays_plugins() -> None:
    assert set(batch.PLUGINS) == {"volcano", "yunikorn", "kubernetes-was-v1alpha2"}
    assert batch.PLUGINS["kubernetes-was-v1alpha2"].kinds == (
        Resource("scheduling.k8s.io", "v1alpha2", "Workload", "workloads"),
        Resource("scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups"),
    )
    assert batch.PLUGINS["volcano"].kinds == (Resource("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups"),)
    assert batch.PLUGINS["yunikorn"].kinds == ()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--batch-scheduler=volcano"], "volcano"),
        (["--batch-scheduler", "yunikorn"], "yunikorn"),
        (["--enable-batch-scheduler"], "volcano"),  # KubeRay's deprecated flag
        (["--enable-batch-scheduler=false"], ""),
        ([], ""),
        # OP-2: the KubernetesWAS gate alone chooses Kubernetes' workload-aware scheduling
        (["--feature-gates=KubernetesWAS=true"], "kubernetes-was-v1alpha2"),
        (["--feature-gates=KubernetesWAS=true", "--enable-batch-scheduler=false"], "kubernetes-was-v1alpha2"),
        (["--feature-gates=KubernetesWAS=false"], ""),
    ],
)
def test_flags_choose_the_plugin(args: list[str], expected: str) -> None:
    config = parse_flags(args)
    assert config is not None
    assert config.batch_scheduler == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--batch-scheduler=kai-scheduler"],
            "'kai-scheduler' is a KubeRay batch scheduler raykube does not implement",
        ),
        (["--batch-scheduler=scheduler-plugins"], "'scheduler-plugins' is a KubeRay batch scheduler raykube does not"),
        (["--batch-scheduler=slurm"], "scheduler is not supported, name=slurm"),
        (
            ["--enable-batch-scheduler", "--batch-scheduler=volcano"],
            "both feature flags enable-batch-scheduler \\(deprecated\\) and batch-scheduler are set",
        ),
        # OP-2: the gates are read first; with KubernetesWAS on, any batch scheduler flag is refused
        *(
            (
                ["--feature-gates=KubernetesWAS=true", *flags],
                "^flags: the KubernetesWAS feature gate cannot be combined with --batch-scheduler or "
                "--enable-batch-scheduler$",
            )
            for flags in (["--batch-scheduler=volcano"], ["--enable-batch-scheduler"], ["--batch-scheduler=slurm"])
        ),
        (["--batch-scheduler=kubernetes-was-v1alpha2"], "scheduler is not supported, name=kubernetes-was-v1alpha2"),
    ],
)
def test_flags_refuse_what_cannot_run(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_flags(args)


def test_configuration_file_chooses_and_checks_the_plugin(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nenableBatchScheduler: true\n")
    assert load_config_file(path).batch_scheduler == "volcano"
    path.write_text("batchScheduler: kai-scheduler\n")
    with pytest.raises(ConfigError, match="does not implement yet"):
        load_config_file(path)
    path.write_text("batchScheduler: yunikorn\nenableBatchScheduler: true\n")
    with pytest.raises(ConfigError, match="Please use batch-scheduler only"):
        load_config_file(path)


def test_with_a_configuration_file_the_kubernetes_was_gate_excludes_its_scheduler(tmp_path: Path) -> None:
    """OP-2 with --config: the file's batch scheduler is checked against the flags' gates."""
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: config.ray.io/v1alpha1\nkind: Configuration\n")
    config = parse_flags([f"--config={path}", "--feature-gates=KubernetesWAS=true"])
    assert config is not None and config.batch_scheduler == "kubernetes-was-v1alpha2"
    path.write_text("enableBatchScheduler: true\n")
    with pytest.raises(ConfigError, match="KubernetesWAS feature gate cannot be combined with --batch-scheduler"):
        parse_flags([f"--config={path}", "--feature-gates=KubernetesWAS=true"])

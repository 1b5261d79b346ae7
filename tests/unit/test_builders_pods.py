"""The head and worker Pod builders against KubeRay v1.6.1's output (``controllers/ray/common/pod.go`` and its tests).

Vectors V1-V11 are the sections below, each named after its input: a sample from KubeRay's ``config/samples`` or the
``raycluster-sample`` fixture of ``pod_test.go``.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.resources import RayCluster
from raykube.builders import pods, spechash
from raykube.builders.command import convert_param_map, go_json, is_gpu_resource_key
from raykube.builders.options import BuildOptions
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"
UID = "7c1b3f60-0d2a-4d5e-9a38-5f1e2b3c4d5e"
OPTIONS = BuildOptions()
ULIM = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; "  # KubeRay v1.7.0 (v1.6.1: "ulimit -n 65536; ")
BASH = ["/bin/bash", "-c", "--"]
RAYLET = "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
GCS = "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
KUBERAY_ENV = [
    "RAY_CLUSTER_NAME",
    "RAY_CLUSTER_NAMESPACE",
    "RAY_CLOUD_INSTANCE_ID",
    "RAY_NODE_TYPE_NAME",
    "KUBERAY_GEN_RAY_START_CMD",
    "RAY_PORT",
    "RAY_ADDRESS",
    "RAY_USAGE_STATS_KUBERAY_IN_USE",
]


# --------------------------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------------------------


def _raycluster_docs(path: Path) -> list[dict[str, Any]]:
    return [
        doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict) and doc["kind"] == "RayCluster"
    ]


def _doc(sample: str) -> dict[str, Any]:
    (doc,) = _raycluster_docs(SAMPLES / sample)
    doc["metadata"].update(uid=UID, namespace="default")
    return doc


def _cluster(doc: dict[str, Any]) -> RayCluster:
    return RayCluster.model_validate(doc)


def _sample(sample: str) -> RayCluster:
    return _cluster(_doc(sample))


def _spec(cluster: RayCluster) -> RayClusterSpec:
    assert cluster.spec is not None
    return cluster.spec


def _head(cluster: RayCluster, options: BuildOptions = OPTIONS) -> dict[str, Any]:
    return pods.head_pod(cluster, options)


def _worker(cluster: RayCluster, group: int = 0, options: BuildOptions = OPTIONS, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("replica_index", 0)
    return pods.worker_pod(cluster, group, options, **kwargs)


def _ray(pod: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = pod["spec"]["containers"][0]
    return container


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {entry["name"]: entry for entry in container.get("env", [])}


def _env_names(container: dict[str, Any]) -> list[str]:
    return [entry["name"] for entry in container.get("env", [])]


def _value(container: dict[str, Any], name: str) -> Any:
    return _env(container)[name].get("value")


def _init(pod: dict[str, Any], name: str = c.WAIT_GCS_READY_INIT_CONTAINER) -> dict[str, Any]:
    found: list[dict[str, Any]] = [x for x in pod["spec"].get("initContainers", []) if x["name"] == name]
    assert len(found) == 1
    return found[0]


def _flags(args: str) -> set[str]:
    return set(args.split())


def _all_cluster_samples() -> list[Any]:
    found = []
    for path in sorted(SAMPLES.glob("ray-cluster.*.yaml")):
        for index, doc in enumerate(_raycluster_docs(path)):
            doc["metadata"].update(uid=UID, namespace="default")
            found.append(pytest.param(f"{path.name}#{index}", doc, id=path.name))
    return found


def _fixture_v2() -> dict[str, Any]:
    """KubeRay pod_test.go's ``raycluster-sample`` (V2)."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "raycluster-sample", "namespace": "default", "uid": UID},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": "repo/image:custom",
                                "resources": {
                                    "limits": {"cpu": "1", "memory": "1Gi"},
                                    "requests": {"cpu": "1", "memory": "1Gi"},
                                },
                            }
                        ]
                    }
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "small-group",
                    "replicas": 3,
                    "minReplicas": 0,
                    "maxReplicas": 10000,
                    "numOfHosts": 1,
                    "rayStartParams": {"port": "6379"},
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "ray-worker",
                                    "image": "repo/image:custom",
                                    "resources": {
                                        "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "3"},
                                        "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "3"},
                                    },
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }


def _expected_wait_script(address: str) -> str:
    lines = [
        "",
        "\t\t\t\t\tSECONDS=0",
        "\t\t\t\t\twhile true; do",
        "\t\t\t\t\t\tif (( SECONDS <= 120 )); then",
        f"\t\t\t\t\t\t\tif ray health-check --address {address} > /dev/null 2>&1; then",
        '\t\t\t\t\t\t\t\techo "GCS is ready."',
        "\t\t\t\t\t\t\t\tbreak",
        "\t\t\t\t\t\t\tfi",
        '\t\t\t\t\t\t\techo "$SECONDS seconds elapsed: Waiting for GCS to be ready."',
        "\t\t\t\t\t\telse",
        f"\t\t\t\t\t\t\tif ray health-check --address {address}; then",
        '\t\t\t\t\t\t\t\techo "GCS is ready. Any error messages above can be safely ignored."',
        "\t\t\t\t\t\t\t\tbreak",
        "\t\t\t\t\t\t\tfi",
        '\t\t\t\t\t\t\techo "$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, '
        'refer to the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html."',
        "\t\t\t\t\t\tfi",
        "\t\t\t\t\t\tsleep 5",
        "\t\t\t\t\tdone",
        "\t\t\t\t",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------------------
# V1 ray-cluster.sample.yaml
# --------------------------------------------------------------------------------------------------------------------


def test_v1_head_metadata() -> None:
    pod = _head(_sample("ray-cluster.sample.yaml"))
    meta = pod["metadata"]
    assert pod["apiVersion"] == "v1"
    assert pod["kind"] == "Pod"
    assert meta["generateName"] == "raycluster-kuberay-head-"
    assert "name" not in meta
    assert meta["namespace"] == "default"
    assert meta["labels"] == {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": "raycluster-kuberay",
        "ray.io/node-type": "head",
        "ray.io/group": "headgroup",
        "ray.io/identifier": "raycluster-kuberay-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    annotations = meta["annotations"]
    assert set(annotations) == {
        "ray.io/ft-enabled",
        "ray.io/upgrade-strategy-recreate-hash",
        "ray.io/kuberay-version",
    }
    assert annotations["ray.io/ft-enabled"] == "false"
    assert annotations["ray.io/kuberay-version"] == OPTIONS.kuberay_version
    assert re.fullmatch(r"[0-9A-V]{32}", annotations["ray.io/upgrade-strategy-recreate-hash"])
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": "raycluster-kuberay",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_v1_head_container() -> None:
    ray = _ray(_head(_sample("ray-cluster.sample.yaml")))
    assert [(p["name"], p["containerPort"]) for p in ray["ports"]] == [
        ("gcs-server", 6379),
        ("dashboard", 8265),
        ("client", 10001),
        ("metrics", 8080),
    ]
    start = (
        "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  "
        "--memory=5368709120  --metrics-export-port=8080  --num-cpus=1 "
    )
    assert ray["command"] == BASH
    assert ray["args"] == [ULIM + start]
    assert _env_names(ray) == [*KUBERAY_ENV, "RAY_USAGE_STATS_EXTRA_TAGS", "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"]
    env = _env(ray)
    assert env["RAY_CLUSTER_NAME"] == {
        "name": "RAY_CLUSTER_NAME",
        "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}},
    }
    assert env["RAY_CLUSTER_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["RAY_CLOUD_INSTANCE_ID"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["RAY_NODE_TYPE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.labels['ray.io/group']"}}
    assert _value(ray, "KUBERAY_GEN_RAY_START_CMD") == start
    assert _value(ray, "RAY_PORT") == "6379"
    assert _value(ray, "RAY_ADDRESS") == "127.0.0.1:6379"
    assert _value(ray, "RAY_USAGE_STATS_KUBERAY_IN_USE") == "1"
    assert (
        _value(ray, "RAY_USAGE_STATS_EXTRA_TAGS") == f"kuberay_version={OPTIONS.kuberay_version};kuberay_crd=RayCluster"
    )
    assert _value(ray, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE") == "1"


def test_v1_head_volumes_and_probes() -> None:
    pod = _head(_sample("ray-cluster.sample.yaml"))
    ray = _ray(pod)
    assert pod["spec"]["volumes"] == [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "5Gi"}}]
    assert ray["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "shared-mem"}]
    command = ["bash", "-c", f"{RAYLET} && {GCS}"]
    assert ray["livenessProbe"] == {
        "initialDelaySeconds": 30,
        "timeoutSeconds": 5,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": 120,
        "exec": {"command": command},
    }
    assert ray["readinessProbe"] == {
        "initialDelaySeconds": 10,
        "timeoutSeconds": 5,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": 10,
        "exec": {"command": command},
    }
    assert "initContainers" not in pod["spec"]


def test_v1_worker() -> None:
    pod = _worker(_sample("ray-cluster.sample.yaml"))
    meta = pod["metadata"]
    assert meta["generateName"] == "raycluster-kuberay-workergroup-worker-"
    assert meta["namespace"] == "default"
    assert meta["labels"] == {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": "raycluster-kuberay",
        "ray.io/node-type": "worker",
        "ray.io/group": "workergroup",
        "ray.io/identifier": "raycluster-kuberay-worker",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
        "ray.io/worker-group-replica-index": "0",
    }
    assert "annotations" not in meta
    assert meta["ownerReferences"][0]["uid"] == UID
    ray = _ray(pod)
    fqdn = "raycluster-kuberay-head-svc.default.svc.cluster.local"
    start = (
        f"ray start  --address={fqdn}:6379  --block  --dashboard-agent-listen-port=52365  "
        "--memory=1073741824  --metrics-export-port=8080  --num-cpus=1 "
    )
    assert ray["command"] == BASH
    assert ray["args"] == [ULIM + start]
    assert ray["ports"] == [{"name": "metrics", "containerPort": 8080}]
    assert _env_names(ray) == ["FQ_RAY_IP", "RAY_IP", *KUBERAY_ENV, "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"]
    assert _value(ray, "FQ_RAY_IP") == fqdn
    assert _value(ray, "RAY_IP") == "raycluster-kuberay-head-svc"
    assert _value(ray, "RAY_ADDRESS") == f"{fqdn}:6379"
    assert _value(ray, "KUBERAY_GEN_RAY_START_CMD") == start
    assert pod["spec"]["volumes"] == [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
    command = ["bash", "-c", RAYLET]
    assert ray["readinessProbe"] == {
        "initialDelaySeconds": 10,
        "timeoutSeconds": 2,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": 10,
        "exec": {"command": command},
    }
    assert ray["livenessProbe"]["exec"] == {"command": command}
    assert ray["livenessProbe"]["timeoutSeconds"] == 2


def test_v1_worker_wait_gcs_ready() -> None:
    pod = _worker(_sample("ray-cluster.sample.yaml"))
    fqdn = "raycluster-kuberay-head-svc.default.svc.cluster.local"
    assert pod["spec"]["initContainers"] == [
        {
            "name": "wait-gcs-ready",
            "image": "rayproject/ray:2.52.0",
            "command": BASH,
            "args": [_expected_wait_script(f"{fqdn}:6379")],
            "resources": {
                "limits": {"cpu": "200m", "memory": "256Mi"},
                "requests": {"cpu": "200m", "memory": "256Mi"},
            },
            "env": [{"name": "FQ_RAY_IP", "value": fqdn}, {"name": "RAY_IP", "value": "raycluster-kuberay-head-svc"}],
        }
    ]


# --------------------------------------------------------------------------------------------------------------------
# V2, V3: pod_test.go's raycluster-sample
# --------------------------------------------------------------------------------------------------------------------


def test_v2_flags() -> None:
    cluster = _cluster(_fixture_v2())
    head = _ray(_head(cluster))
    assert _flags(_value(head, "KUBERAY_GEN_RAY_START_CMD")) == {
        "ray",
        "start",
        "--head",
        "--block",
        "--dashboard-agent-listen-port=52365",
        "--memory=1073741824",
        "--num-cpus=1",
        "--metrics-export-port=8080",
        "--dashboard-host=0.0.0.0",
    }
    worker = _ray(_worker(cluster))
    assert _flags(_value(worker, "KUBERAY_GEN_RAY_START_CMD")) == {
        "ray",
        "start",
        "--block",
        "--dashboard-agent-listen-port=52365",
        "--memory=1073741824",
        "--num-cpus=1",
        "--num-gpus=3",
        "--address=raycluster-sample-head-svc.default.svc.cluster.local:6379",
        "--port=6379",
        "--metrics-export-port=8080",
    }


def test_v2_head_volumes() -> None:
    pod = _head(_cluster(_fixture_v2()))
    assert pod["spec"]["volumes"] == [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
    assert _ray(pod)["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "shared-mem"}]


def test_v3_cpu_from_request_without_limit() -> None:
    doc = _fixture_v2()
    resources = doc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]
    del resources["limits"]["cpu"]
    resources["requests"]["cpu"] = "2"
    assert "--num-cpus=2" in _flags(_ray(_head(_cluster(doc)))["args"][0])


def test_cpu_rounds_up_and_memory_only_from_limits() -> None:
    doc = _fixture_v2()
    resources = doc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]
    resources["limits"] = {"cpu": "1500m"}
    resources["requests"] = {"cpu": "1", "memory": "2Gi"}
    flags = _flags(_ray(_head(_cluster(doc)))["args"][0])
    assert "--num-cpus=2" in flags
    assert not any(flag.startswith("--memory") for flag in flags)


# --------------------------------------------------------------------------------------------------------------------
# V4, V5 autoscaler
# --------------------------------------------------------------------------------------------------------------------


def test_v4_autoscaler_head() -> None:
    pod = _head(_sample("ray-cluster.autoscaler.yaml"))
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "raycluster-autoscaler"
    assert "restartPolicy" not in spec
    ray, sidecar = spec["containers"]
    assert ray["args"] == [
        ULIM + "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  "
        "--memory=5368709120  --metrics-export-port=8080  --no-monitor  --num-cpus=0 "
    ]
    assert c.RAY_ENABLE_AUTOSCALER_V2 not in _env(ray)
    assert sidecar == {
        "name": "autoscaler",
        "image": "rayproject/ray:2.52.0",
        "imagePullPolicy": "IfNotPresent",
        "env": [
            {"name": "RAY_CLUSTER_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}},
            {"name": "RAY_CLUSTER_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "RAY_HEAD_POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "KUBERAY_CRD_VER", "value": "v1"},
            {"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": c.AUTOSCALER_START_CMD},  # v1.7.0
        ],
        "command": BASH,
        "args": [
            "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
        ],
        "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"cpu": "500m", "memory": "512Mi"}},
        "securityContext": {},
        "volumeMounts": [{"mountPath": "/tmp/ray", "name": "ray-logs"}],
    }
    assert [v["name"] for v in spec["volumes"]] == ["ray-example-configmap", "shared-mem", "ray-logs"]
    assert spec["volumes"][1:] == [
        {"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "5Gi"}},
        {"name": "ray-logs", "emptyDir": {}},
    ]
    assert ray["volumeMounts"] == [
        {"mountPath": "/home/ray/samples", "name": "ray-example-configmap"},
        {"mountPath": "/dev/shm", "name": "shared-mem"},
        {"mountPath": "/tmp/ray", "name": "ray-logs"},
    ]


def test_v4_autoscaler_worker_keeps_restart_policy() -> None:
    pod = _worker(_sample("ray-cluster.autoscaler.yaml"))
    assert "restartPolicy" not in pod["spec"]
    assert [x["name"] for x in pod["spec"]["containers"]] == ["ray-worker"]


def test_v5_autoscaler_v2() -> None:
    cluster = _sample("ray-cluster.autoscaler-v2.yaml")
    head = _head(cluster)
    assert head["spec"]["restartPolicy"] == "Never"
    ray = _ray(head)
    assert _env_names(ray)[0] == c.RAY_ENABLE_AUTOSCALER_V2
    assert _value(ray, c.RAY_ENABLE_AUTOSCALER_V2) == "true"
    assert _worker(cluster)["spec"]["restartPolicy"] == "Never"


def test_autoscaler_v1_says_so_in_the_env_as_v170_does() -> None:
    doc = _doc("ray-cluster.autoscaler.yaml")
    doc["spec"]["autoscalerOptions"]["version"] = "v1"
    head = _head(_cluster(doc))
    assert _value(_ray(head), c.RAY_ENABLE_AUTOSCALER_V2) == "false"
    assert "restartPolicy" not in head["spec"]  # only v2 sets Never
    unset = _doc("ray-cluster.autoscaler.yaml")
    unset["spec"]["autoscalerOptions"].pop("version", None)
    assert c.RAY_ENABLE_AUTOSCALER_V2 not in _env(_ray(_head(_cluster(unset))))


def test_autoscaler_command_and_args_replace_the_sidecars_and_its_start_command_is_in_the_env() -> None:
    doc = _doc("ray-cluster.autoscaler.yaml")
    sidecar = _head(_cluster(doc))["spec"]["containers"][-1]
    assert _value(sidecar, c.KUBERAY_GEN_AUTOSCALER_START_CMD) == sidecar["args"][0] == c.AUTOSCALER_START_CMD
    doc["spec"]["autoscalerOptions"].update(
        command=["/bin/sh", "-c"], args=["sleep 1; $KUBERAY_GEN_AUTOSCALER_START_CMD"]
    )
    sidecar = _head(_cluster(doc))["spec"]["containers"][-1]
    assert (sidecar["command"], sidecar["args"]) == (["/bin/sh", "-c"], ["sleep 1; $KUBERAY_GEN_AUTOSCALER_START_CMD"])


def test_autoscaler_overrides() -> None:
    doc = _doc("ray-cluster.autoscaler.yaml")
    doc["spec"]["autoscalerOptions"].update(
        image="my/autoscaler:1",
        imagePullPolicy="Always",
        env=[{"name": "FOO", "value": "bar"}],
        envFrom=[{"configMapRef": {"name": "cm"}}],
        volumeMounts=[{"name": "extra", "mountPath": "/tmp/ray"}],
        securityContext={"runAsUser": 1000},
    )
    doc["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "my-sa"
    pod = _head(_cluster(doc))
    assert pod["spec"]["serviceAccountName"] == "my-sa"
    sidecar = pod["spec"]["containers"][1]
    assert sidecar["image"] == "my/autoscaler:1"
    assert sidecar["imagePullPolicy"] == "Always"
    assert _env_names(sidecar)[-1] == "FOO"
    assert sidecar["envFrom"] == [{"configMapRef": {"name": "cm"}}]
    assert sidecar["securityContext"] == {"runAsUser": 1000}
    # /tmp/ray is already mounted in the sidecar, so no ray-logs mount is added to it.
    assert sidecar["volumeMounts"] == [{"name": "extra", "mountPath": "/tmp/ray"}]


# --------------------------------------------------------------------------------------------------------------------
# V6 to V9
# --------------------------------------------------------------------------------------------------------------------


def test_v6_custom_head_service() -> None:
    cluster = _sample("ray-cluster.custom-head-service.yaml")
    flags = _flags(_ray(_head(cluster))["args"][0])
    assert {"--num-cpus=1", "--memory=5368709120"} <= flags
    doc = _doc("ray-cluster.custom-head-service.yaml")
    doc["spec"]["workerGroupSpecs"] = [_fixture_v2()["spec"]["workerGroupSpecs"][0]]
    worker = _ray(_worker(_cluster(doc)))
    fqdn = "custom-ray-head-service-name.default.svc.cluster.local"
    assert _value(worker, "FQ_RAY_IP") == fqdn
    assert _value(worker, "RAY_IP") == "custom-ray-head-service-name"
    assert f"--address={fqdn}:6379" in _flags(worker["args"][0])


def test_v7_overwrite_container_cmd() -> None:
    cluster = _sample("ray-cluster.overwrite-command.yaml")
    head, worker = _head(cluster), _worker(cluster)
    assert _ray(head)["command"] == ["/bin/bash", "-c", "--"]
    assert _ray(head)["args"] == ["ulimit -n 65536; echo head; $KUBERAY_GEN_RAY_START_CMD"]  # the user's own
    assert _ray(worker)["args"] == ["ulimit -n 65536; echo worker; $KUBERAY_GEN_RAY_START_CMD"]
    assert _value(_ray(head), "KUBERAY_GEN_RAY_START_CMD").startswith("ray start --head  --block  ")
    assert _value(_ray(worker), "KUBERAY_GEN_RAY_START_CMD").startswith("ray start  --address=")
    assert head["metadata"]["annotations"][c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION] == "true"
    assert worker["metadata"]["annotations"] == {c.RAY_OVERWRITE_CONTAINER_CMD_ANNOTATION: "true"}


def test_v8_user_command_before_ray_start() -> None:
    ray = _ray(_head(_sample("ray-cluster.head-command.yaml")))
    assert ray["command"] == BASH
    assert ray["args"] == [
        " echo 123  456  && "
        + ULIM
        + "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0  "
        "--memory=5368709120  --metrics-export-port=8080  --num-cpus=1 "
    ]


def test_user_command_containing_ray_start_is_kept() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    container = doc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["command"] = ["ray start --head --block"]
    ray = _ray(_head(_cluster(doc)))
    assert ray["command"] == ["ray start --head --block"]
    assert "args" not in ray
    assert "KUBERAY_GEN_RAY_START_CMD" in _env(ray)


def test_v9_external_redis() -> None:
    cluster = _sample("ray-cluster.external-redis.yaml")
    head = _head(cluster)
    annotations = head["metadata"]["annotations"]
    assert annotations["ray.io/ft-enabled"] == "true"
    assert annotations["ray.io/external-storage-namespace"] == UID
    ray = _ray(head)
    assert _env_names(ray)[:3] == ["RAY_external_storage_namespace", "RAY_REDIS_ADDRESS", "REDIS_PASSWORD"]
    assert _value(ray, "RAY_external_storage_namespace") == UID
    assert _value(ray, "RAY_REDIS_ADDRESS") == "redis:6379"
    assert _env(ray)["REDIS_PASSWORD"] == {
        "name": "REDIS_PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "redis-password-secret", "key": "password"}},
    }
    assert ray["args"][0].endswith("--metrics-export-port=8080  --num-cpus=0  --redis-password=$REDIS_PASSWORD ")
    worker = _ray(_worker(cluster))
    assert _env_names(worker)[0] == "RAY_gcs_rpc_server_reconnect_timeout_s"
    assert _value(worker, "RAY_gcs_rpc_server_reconnect_timeout_s") == "600"


def test_external_storage_namespace_precedence() -> None:
    doc = _doc("ray-cluster.external-redis.yaml")
    doc["metadata"]["annotations"] = {"ray.io/external-storage-namespace": "from-annotation"}
    head = _head(_cluster(doc))
    assert head["metadata"]["annotations"]["ray.io/external-storage-namespace"] == "from-annotation"
    doc["spec"]["gcsFaultToleranceOptions"]["externalStorageNamespace"] = "from-options"
    head = _head(_cluster(doc))
    assert head["metadata"]["annotations"]["ray.io/external-storage-namespace"] == "from-options"
    assert _value(_ray(head), "RAY_external_storage_namespace") == "from-options"


def test_redis_username_and_annotation_only_ft() -> None:
    doc = _doc("ray-cluster.external-redis.yaml")
    doc["spec"]["gcsFaultToleranceOptions"]["redisUsername"] = {"value": "ray"}
    ray = _ray(_head(_cluster(doc)))
    assert _env(ray)["REDIS_USERNAME"] == {"name": "REDIS_USERNAME", "value": "ray"}
    assert "--redis-username=$REDIS_USERNAME" in _flags(ray["args"][0])

    doc = _doc("ray-cluster.sample.yaml")
    doc["metadata"]["annotations"] = {"ray.io/ft-enabled": "true"}
    doc["spec"]["headGroupSpec"]["rayStartParams"] = {"redis-password": "secret"}
    head = _head(_cluster(doc))
    assert head["metadata"]["annotations"]["ray.io/ft-enabled"] == "true"
    assert _value(_ray(head), "REDIS_PASSWORD") == "secret"
    assert "RAY_REDIS_ADDRESS" not in _env(_ray(head))


# --------------------------------------------------------------------------------------------------------------------
# V10, V11
# --------------------------------------------------------------------------------------------------------------------


# v1.6.1 ships V10's ray-cluster.tpu-v6e-16-multihost.yaml and a 256-chip sibling (64 hosts) with the same worker Pods.
@pytest.mark.parametrize("sample", ["ray-cluster.tpu-v6e-16-multihost.yaml", "ray-cluster.tpu-v6e-256-multihost.yaml"])
def test_v10_tpu_multihost(sample: str) -> None:
    cluster = _sample(sample)
    pods_ = [_worker(cluster, replica_index=0, replica_name="tpu-group-bcdfg", host_index=host) for host in range(4)]
    for host, pod in enumerate(pods_):
        labels = pod["metadata"]["labels"]
        assert labels["ray.io/worker-group-replica-name"] == "tpu-group-bcdfg"
        assert labels["ray.io/worker-group-replica-index"] == "0"
        assert labels["ray.io/replica-host-index"] == str(host)
    fqdn = "raycluster-tpu-v6e-multihost-head-svc.default.svc.cluster.local"
    assert _ray(pods_[0])["args"] == [
        ULIM + f"ray start  --address={fqdn}:6379  --block  --dashboard-agent-listen-port=52365  "
        "--memory=200000000000  --metrics-export-port=8080  --num-cpus=24  --resources='{\"TPU\":4}' "
    ]
    ports = _ray(pods_[0])["ports"]
    assert [p["name"] for p in ports] == ["mxla", "metrics"]
    assert _env_names(_ray(pods_[0]))[:4] == [
        "NODE_IP",
        "VBAR_CONTROL_SERVICE_URL",
        "JAX_PLATFORMS",
        "ENABLE_PJRT_COMPATIBILITY",
    ]
    # The init container copies the user's env (not KubeRay's), then gets FQ_RAY_IP and RAY_IP.
    assert _env_names(_init(pods_[0])) == [
        "NODE_IP",
        "VBAR_CONTROL_SERVICE_URL",
        "JAX_PLATFORMS",
        "ENABLE_PJRT_COMPATIBILITY",
        "FQ_RAY_IP",
        "RAY_IP",
    ]
    assert _init(pods_[0])["imagePullPolicy"] == "IfNotPresent"


def test_multi_host_labels_need_the_replica() -> None:
    cluster = _sample("ray-cluster.tpu-v6e-256-multihost.yaml")
    with pytest.raises(ValueError, match="replica_name"):
        _worker(cluster)
    with pytest.raises(ValueError, match="replica_index"):
        pods.worker_pod(cluster, 0, OPTIONS)
    gate_off = BuildOptions(features={c.GATE_RAY_MULTI_HOST_INDEXING: False})
    labels = pods.worker_pod(cluster, 0, gate_off)["metadata"]["labels"]
    assert not {c.RAY_WORKER_REPLICA_INDEX_LABEL, c.RAY_WORKER_REPLICA_NAME_LABEL, c.RAY_HOST_INDEX_LABEL} & set(labels)


def test_v11_auth() -> None:
    cluster = _sample("ray-cluster.auth.yaml")
    token = {
        "name": "RAY_AUTH_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "ray-cluster-with-auth", "key": "auth_token"}},
    }
    head = _head(cluster)
    worker = _worker(cluster)
    for container in (_ray(head), head["spec"]["containers"][1], _ray(worker), _init(worker)):
        assert _env(container)["RAY_AUTH_MODE"] == {"name": "RAY_AUTH_MODE", "value": "token"}
        assert _env(container)["RAY_AUTH_TOKEN"] == token
    # wait-gcs-ready: auth env before FQ_RAY_IP/RAY_IP.
    assert _env_names(_init(worker)) == ["RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "FQ_RAY_IP", "RAY_IP"]
    assert _env_names(head["spec"]["containers"][1])[-2:] == ["RAY_AUTH_MODE", "RAY_AUTH_TOKEN"]
    http = {"httpGet": {"path": "/api/healthz", "port": 52365}}
    for pod in (head, worker):
        assert _ray(pod)["livenessProbe"]["httpGet"] == http["httpGet"]
        assert "exec" not in _ray(pod)["livenessProbe"]
        assert "exec" not in _ray(pod)["readinessProbe"]
        assert _ray(pod)["readinessProbe"]["httpGet"] == http["httpGet"]
    assert _ray(head)["args"][0].endswith(
        "--memory=8589934592  --metrics-export-port=8080  --no-monitor  --num-cpus=4 "
    )


def test_auth_secret_name_and_k8s_token_auth() -> None:
    doc = _doc("ray-cluster.auth.yaml")
    doc["spec"]["authOptions"]["secretName"] = "my-token"
    ray = _ray(_head(_cluster(doc)))
    assert _env(ray)["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "my-token", "key": "auth_token"}

    doc = _doc("ray-cluster.auth.yaml")
    doc["spec"]["authOptions"] = {"mode": "token", "enableK8sTokenAuth": True}
    head, worker = _head(_cluster(doc)), _worker(_cluster(doc))
    mount = {"name": "ray-token", "mountPath": "/var/run/secrets/ray.io/serviceaccount", "readOnly": True}
    for container in (_ray(head), head["spec"]["containers"][1], _ray(worker), _init(worker)):
        assert _value(container, "RAY_ENABLE_K8S_TOKEN_AUTH") == "true"
        assert "RAY_AUTH_TOKEN" not in _env(container)
        assert mount in container["volumeMounts"]
    volume = {"name": "ray-token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
    for pod in (head, worker):
        names_ = [v["name"] for v in pod["spec"]["volumes"]]
        assert volume in pod["spec"]["volumes"]
        assert names_.index("ray-token") < names_.index("shared-mem")


def test_auth_disabled_mode_adds_nothing() -> None:
    doc = _doc("ray-cluster.auth.yaml")
    doc["spec"]["authOptions"]["mode"] = "disabled"
    assert "RAY_AUTH_MODE" not in _env(_ray(_head(_cluster(doc))))


# --------------------------------------------------------------------------------------------------------------------
# Labels, annotations, params, env rules
# --------------------------------------------------------------------------------------------------------------------


def test_template_and_group_labels_overlay_except_protected() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    head = doc["spec"]["headGroupSpec"]
    head["template"]["metadata"] = {
        "labels": {
            "app.kubernetes.io/name": "mine",
            "ray.io/cluster": "spoofed",
            "ray.io/node-type": "worker",
            "ray.io/group": "other",
            "team": "a",
        },
        "annotations": {"note": "kept"},
    }
    head["labels"] = {"team": "b", "zone": "z1"}
    pod = _head(_cluster(doc))
    labels = pod["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "mine"
    assert labels["ray.io/cluster"] == "raycluster-kuberay"
    assert labels["ray.io/node-type"] == "head"
    assert labels["ray.io/group"] == "headgroup"
    assert labels["team"] == "b"
    assert labels["zone"] == "z1"
    assert pod["metadata"]["annotations"]["note"] == "kept"
    assert "--labels=team=b,zone=z1" in _flags(_ray(pod)["args"][0])


def test_group_resources_become_params() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    doc["spec"]["workerGroupSpecs"][0]["resources"] = {
        "CPU": "2500m",
        "memory": "2Gi",
        "GPU": "1",
        "custom": "500m",
        "TPU": "4",
    }
    flags = _flags(_ray(_worker(_cluster(doc)))["args"][0])
    assert {"--num-cpus=3", "--memory=2147483648", "--num-gpus=1", '--resources=\'{"TPU":4,"custom":0.5}\''} <= flags


def test_accelerators_from_limits() -> None:
    doc = _fixture_v2()
    limits = doc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"]["limits"]
    limits.clear()
    limits.update({"aws.amazon.com/neuroncore": "2", "google.com/tpu": "4", "nvidia.com/mig-2g.32gb": "1"})
    flags = _flags(_ray(_worker(_cluster(doc)))["args"][0])
    assert "--resources='{\"neuron_cores\":2}'" in flags
    assert "--num-gpus=1" in flags
    # A resources param that already names TPU wins over the limits.
    doc["spec"]["workerGroupSpecs"][0]["rayStartParams"]["resources"] = "'{\"TPU\": 8}'"
    args = _ray(_worker(_cluster(doc)))["args"][0]
    assert " --resources='{\"TPU\": 8}' " in args
    assert "neuron_cores" not in args


def test_missing_params_respect_user_values_but_block_is_forced() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    doc["spec"]["headGroupSpec"]["rayStartParams"] = {
        "dashboard-host": "127.0.0.1",
        "block": "false",
        "metrics-export-port": "9090",
        "port": "6380",
        "log-color": "true",
        "include-dashboard": "false",
        "include-log-monitor": "false",
        "disable-usage-stats": "true",
    }
    cluster = _cluster(doc)
    ray = _ray(_head(cluster))
    flags = _flags(ray["args"][0])
    assert {
        "--dashboard-host=127.0.0.1",
        "--block",
        "--metrics-export-port=9090",
        "--port=6380",
        "--log-color=true",
        "--include-dashboard=false",
        "--disable-usage-stats",
    } <= flags
    assert "--include-log-monitor=false" in flags  # v1.7.0 passes it on (v1.6.1 dropped a false switch)
    assert _value(ray, "RAY_PORT") == "6380"
    assert _value(ray, "RAY_ADDRESS") == "127.0.0.1:6380"
    worker = _worker(cluster)
    assert "--address=raycluster-kuberay-head-svc.default.svc.cluster.local:6380" in _flags(_ray(worker)["args"][0])
    assert "--address raycluster-kuberay-head-svc.default.svc.cluster.local:6380 " in _init(worker)["args"][0]


def test_user_env_wins_where_kuberay_checks() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    container = doc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "RAY_ADDRESS", "value": "elsewhere:1"}, {"name": "RAY_PORT", "value": "1"}]
    options = BuildOptions(default_container_envs=({"name": "RAY_PORT", "value": "2"}, {"name": "EXTRA", "value": "x"}))
    ray = _ray(_worker(_cluster(doc), options=options))
    assert _env_names(ray) == [
        "RAY_ADDRESS",
        "RAY_PORT",
        "EXTRA",
        "FQ_RAY_IP",
        "RAY_IP",
        "RAY_CLUSTER_NAME",
        "RAY_CLUSTER_NAMESPACE",
        "RAY_CLOUD_INSTANCE_ID",
        "RAY_NODE_TYPE_NAME",
        "KUBERAY_GEN_RAY_START_CMD",
        "RAY_USAGE_STATS_KUBERAY_IN_USE",
        "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE",
    ]
    assert _value(ray, "RAY_ADDRESS") == "elsewhere:1"
    assert _value(ray, "RAY_PORT") == "1"


def test_user_init_containers_get_head_address() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    doc["spec"]["headGroupSpec"]["template"]["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    doc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    cluster = _cluster(doc)
    head = _head(cluster)
    fqdn = "raycluster-kuberay-head-svc.default.svc.cluster.local"
    expected = [{"name": "FQ_RAY_IP", "value": fqdn}, {"name": "RAY_IP", "value": "raycluster-kuberay-head-svc"}]
    assert _init(head, "setup")["env"] == expected
    worker = _worker(cluster)
    assert [x["name"] for x in worker["spec"]["initContainers"]] == ["setup", "wait-gcs-ready"]
    assert _init(worker, "setup")["env"] == expected


def test_rayservice_cluster() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    doc["metadata"]["labels"] = {"ray.io/originated-from-crd": "RayService", "ray.io/originated-from-cr-name": "rs"}
    doc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "serve", "containerPort": 8001}
    ]
    cluster = _cluster(doc)
    head, worker = _head(cluster), _worker(cluster)
    assert head["metadata"]["labels"]["ray.io/serve"] == "false"
    assert worker["metadata"]["labels"]["ray.io/serve"] == "true"
    extras = [
        "RAY_timeout_ms_task_wait_for_death_info",
        "RAY_gcs_server_request_timeout_seconds",
        "RAY_SERVE_KV_TIMEOUT_S",
    ]
    names_ = _env_names(_ray(head))
    assert names_[names_.index("RAY_PORT") + 1 : names_.index("RAY_ADDRESS")] == extras
    assert [_value(_ray(worker), name) for name in extras] == ["0", "5", "5"]
    assert _value(_ray(head), "RAY_USAGE_STATS_EXTRA_TAGS").endswith("kuberay_crd=RayService")
    serve = "wget --tries 1 -T 10 -q -O- http://localhost:8001/-/healthz | grep success"
    readiness = _ray(worker)["readinessProbe"]
    assert readiness["exec"] == {"command": ["bash", "-c", f"{RAYLET} && {serve}"]}
    assert readiness["failureThreshold"] == 1
    assert _ray(head)["readinessProbe"]["failureThreshold"] == 10
    # From Ray 2.53 on the worker's readiness stays exec, its liveness becomes httpGet.
    doc["spec"]["rayVersion"] = "2.53.0"
    worker = _worker(_cluster(doc))
    assert "exec" in _ray(worker)["readinessProbe"]
    assert "httpGet" not in _ray(worker)["readinessProbe"]
    assert _ray(worker)["livenessProbe"]["httpGet"] == {"path": "/api/healthz", "port": 52365}


def test_probes_respect_user_probes_ports_and_switch() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    container = doc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"] = {"tcpSocket": {"port": 6379}}
    doc["spec"]["headGroupSpec"]["rayStartParams"] = {"dashboard-port": "8266", "dashboard-agent-listen-port": "x"}
    ray = _ray(_head(_cluster(doc)))
    assert ray["readinessProbe"] == {"tcpSocket": {"port": 6379}}
    command = ray["livenessProbe"]["exec"]["command"][2]
    assert "http://localhost:8266/api/gcs_healthz" in command
    assert "http://localhost:52365/api/local_raylet_healthz" in command
    ray = _ray(_head(_sample("ray-cluster.sample.yaml"), BuildOptions(probes_injection=False)))
    assert "livenessProbe" not in ray
    assert "readinessProbe" not in ray
    for version in (None, "nightly", "2.52.9"):
        doc = _doc("ray-cluster.sample.yaml")
        doc["spec"]["rayVersion"] = version
        assert "exec" in _ray(_head(_cluster(doc)))["livenessProbe"]


def test_volumes_respect_existing_mounts_and_plasma_directory() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    doc["spec"]["headGroupSpec"]["rayStartParams"] = {"plasma-directory": "/data/plasma"}
    pod = _head(_cluster(doc))
    assert "volumes" not in pod["spec"]
    assert "volumeMounts" not in _ray(pod)
    doc = _doc("ray-cluster.sample.yaml")
    spec = doc["spec"]["headGroupSpec"]["template"]["spec"]
    spec["volumes"] = [{"name": "shared-mem", "emptyDir": {"medium": "Memory"}}]
    pod = _head(_cluster(doc))
    assert pod["spec"]["volumes"] == [{"name": "shared-mem", "emptyDir": {"medium": "Memory"}}]
    assert _ray(pod)["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "shared-mem"}]
    doc = _doc("ray-cluster.sample.yaml")
    container = doc["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"memory": "1536Mi"}}
    assert _worker(_cluster(doc))["spec"]["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1536Mi"}


def test_operator_switches() -> None:
    cluster = _sample("ray-cluster.sample.yaml")
    options = BuildOptions(
        login_shell=True,
        deterministic_head_pod_name=True,
        init_container_injection=False,
        cluster_domain="corp.example",
        kuberay_version="v9.9.9",
        head_sidecar_containers=({"name": "head-sidecar", "image": "busybox"},),
        worker_sidecar_containers=({"name": "worker-sidecar", "image": "busybox"},),
        default_pod_labels={"team": "ml", "ray.io/node-type": "nope"},
        default_pod_annotations={"scrape": "true"},
    )
    head = _head(cluster, options)
    assert head["metadata"]["name"] == "raycluster-kuberay-head"
    assert "generateName" not in head["metadata"]
    assert _ray(head)["command"] == ["/bin/bash", "-cl", "--"]
    assert [x["name"] for x in head["spec"]["containers"]] == ["ray-head", "head-sidecar"]
    assert head["metadata"]["labels"]["team"] == "ml"
    assert head["metadata"]["labels"]["ray.io/node-type"] == "head"
    assert head["metadata"]["annotations"]["scrape"] == "true"
    assert head["metadata"]["annotations"]["ray.io/kuberay-version"] == "v9.9.9"
    assert _value(_ray(head), "RAY_USAGE_STATS_EXTRA_TAGS") == "kuberay_version=v9.9.9;kuberay_crd=RayCluster"
    worker = _worker(cluster, options=options)
    assert "initContainers" not in worker["spec"]
    assert [x["name"] for x in worker["spec"]["containers"]] == ["ray-worker", "worker-sidecar"]
    assert _value(_ray(worker), "FQ_RAY_IP") == "raycluster-kuberay-head-svc.default.svc.corp.example"


def test_worker_template_name_is_cleared_and_head_long_name_is_cut() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    doc["metadata"]["name"] = "a" * 53
    doc["spec"]["workerGroupSpecs"][0]["template"]["metadata"] = {"name": "fixed", "namespace": "elsewhere"}
    cluster = _cluster(doc)
    worker = _worker(cluster)
    assert "name" not in worker["metadata"]
    assert worker["metadata"]["namespace"] == "default"
    assert worker["metadata"]["generateName"] == "a" * 50 + "-worker-"
    assert _head(cluster)["metadata"]["generateName"] == "a" * 50 + "-head-"


# --------------------------------------------------------------------------------------------------------------------
# Whole-sample, purity, ray_start_command, hash, shouldDeletePod
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("label", "doc"), _all_cluster_samples())
def test_every_sample_builds(label: str, doc: dict[str, Any]) -> None:
    cluster = _cluster(doc)
    before = cluster.model_dump(mode="json", by_alias=True)
    original = copy.deepcopy(doc)
    head = _head(cluster)
    assert head["metadata"]["labels"]["ray.io/node-type"] == "head", label
    assert _value(_ray(head), "KUBERAY_GEN_RAY_START_CMD") == pods.ray_start_command(cluster, None, OPTIONS)
    for index, group in enumerate(_spec(cluster).worker_group_specs or []):
        extra: dict[str, Any] = (
            {"replica_name": f"{group.group_name}-abcde", "host_index": 0} if group.num_of_hosts > 1 else {}
        )
        worker = _worker(cluster, index, **extra)
        assert worker["metadata"]["labels"]["ray.io/group"] == group.group_name
        assert _value(_ray(worker), "KUBERAY_GEN_RAY_START_CMD") == pods.ray_start_command(cluster, index, OPTIONS)
        assert worker["spec"]["initContainers"][-1]["name"] == "wait-gcs-ready"
    assert cluster.model_dump(mode="json", by_alias=True) == before
    assert doc == original


def test_built_pods_do_not_share_state_with_the_model() -> None:
    cluster = _sample("ray-cluster.autoscaler.yaml")
    first = _head(cluster)
    first["spec"]["containers"][0]["env"].append({"name": "MUTATED", "value": "1"})
    first["metadata"]["labels"]["mutated"] = "1"
    second = _head(cluster)
    assert "MUTATED" not in _env(_ray(second))
    assert "mutated" not in second["metadata"]["labels"]
    assert "env" not in _spec(cluster).head_group_spec.template["spec"]["containers"][0]


def test_cluster_spec_hash() -> None:
    doc = _doc("ray-cluster.sample.yaml")
    base = spechash.cluster_spec_hash(_spec(_cluster(doc)))
    assert re.fullmatch(r"[0-9A-V]{32}", base)
    assert spechash.cluster_spec_hash(_spec(_cluster(copy.deepcopy(doc)))) == base
    scaled = copy.deepcopy(doc)
    group = scaled["spec"]["workerGroupSpecs"][0]
    group.update(replicas=4, minReplicas=0, maxReplicas=9, scaleStrategy={"workersToDelete": ["w-1"]})
    scaled["spec"]["upgradeStrategy"] = {"type": "Recreate"}
    group["template"]["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    scaled["spec"]["headGroupSpec"]["template"]["spec"]["schedulingGates"] = [{"name": "kueue"}]
    assert spechash.cluster_spec_hash(_spec(_cluster(scaled))) == base
    changed = copy.deepcopy(doc)
    changed["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.53.0"
    assert spechash.cluster_spec_hash(_spec(_cluster(changed))) != base


def test_is_autoscaling_enabled() -> None:
    assert pods.is_autoscaling_enabled(_spec(_sample("ray-cluster.autoscaler.yaml")))
    assert not pods.is_autoscaling_enabled(_spec(_sample("ray-cluster.sample.yaml")))


def _pod(phase: str, *, restart: str | None = None, terminated: bool = False, name: str = "ray-head") -> dict[str, Any]:
    state = {"terminated": {"exitCode": 1}} if terminated else {"running": {}}
    spec: dict[str, Any] = {"containers": [{"name": "ray-head"}, {"name": "sidecar"}]}
    if restart is not None:
        spec["restartPolicy"] = restart
    return {"spec": spec, "status": {"phase": phase, "containerStatuses": [{"name": name, "state": state}]}}


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (_pod("Failed"), True),
        (_pod("Succeeded", restart="Always"), True),
        (_pod("Running", restart="Never", terminated=True), True),
        (_pod("Running", restart="Always", terminated=True), False),
        (_pod("Running", restart="OnFailure", terminated=True), False),
        (_pod("Running", terminated=True), False),
        (_pod("Running", restart="Never"), False),
        (_pod("Running", restart="Never", terminated=True, name="sidecar"), False),
        (_pod("Pending", restart="Never", terminated=True), False),
        ({"spec": {}, "status": {}}, False),
        ({}, False),
    ],
)
def test_should_delete_pod(pod: dict[str, Any], expected: bool) -> None:
    assert pods.should_delete_pod(pod) is expected


def test_command_helpers() -> None:
    assert convert_param_map({"num-gpus": "1"}) == " --num-gpus=1 "
    assert convert_param_map({"b": "TRUE", "a": "False", "log-color": "False"}) == " --b  --log-color=False "
    assert is_gpu_resource_key("nvidia.com/gpu")
    assert is_gpu_resource_key("amd.com/gpu")
    assert is_gpu_resource_key("nvidia.com/mig-1g.5gb")
    assert not is_gpu_resource_key("nvidia.com/mig-1g.5gb\n")
    assert not is_gpu_resource_key("google.com/tpu")
    assert go_json({"b": 4.0, "a": 0.5, "c": 1e21, "d": 1.5e-7, "e": 123456.25}) == (
        '{"a":0.5,"b":4,"c":1e+21,"d":1.5e-7,"e":123456.25}'
    )
    assert go_json({"<&>": 1}) == '{"\\u003c\\u0026\\u003e":1}'


# --------------------------------------------------------------------------------------------------------------------
# KubeRay v1.7.0 defaultPodLabels / defaultPodAnnotations (buildHeadPod / buildWorkerPod)
# --------------------------------------------------------------------------------------------------------------------

_DEFAULT_LABELS = {
    "team": "platform",  # the user sets it on the head template: the user's wins
    "tier": "gold",  # the worker group's `labels` set it: the group's wins
    "cost-center": "42",  # nobody sets it: the default fills it in
    "ray.io/node-type": "nope",  # KubeRay's labels (labelPod) always win
    "ray.io/cluster": "nope",
    "ray.io/group": "nope",
    "ray.io/identifier": "nope",
    "ray.io/is-ray-node": "no",
    "app.kubernetes.io/created-by": "someone",
    "app.kubernetes.io/name": "else",
    "ray.io/worker-group-replica-index": "99",  # set before the defaults (multi-host indexing)
    "ray.io/serve": "maybe",  # BuildPod sets it after the defaults for a RayService's cluster
}
_DEFAULT_ANNOTATIONS = {
    "owner": "platform",  # the user sets it on the templates: the user's wins
    "prometheus.io/scrape": "true",  # filled in
    "ray.io/ft-enabled": "true",  # set by KubeRay before the defaults: kept
    "ray.io/kuberay-version": "v0.0.0",  # createHeadPod sets it after buildHeadPod: KubeRay's
    "ray.io/upgrade-strategy-recreate-hash": "nope",  # the same
}


def _default_metadata_cluster(*, rayservice: bool = False) -> RayCluster:
    doc = _doc("ray-cluster.sample.yaml")
    head_meta = doc["spec"]["headGroupSpec"]["template"].setdefault("metadata", {})
    head_meta["labels"] = {"team": "ml"}
    head_meta["annotations"] = {"owner": "ml"}
    group = doc["spec"]["workerGroupSpecs"][0]
    group["labels"] = {"tier": "silver"}
    group["template"].setdefault("metadata", {})["annotations"] = {"owner": "ml"}
    if rayservice:
        doc["metadata"].setdefault("labels", {})["ray.io/originated-from-crd"] = "RayService"
    return _cluster(doc)


_DEFAULTS = BuildOptions(default_pod_labels=_DEFAULT_LABELS, default_pod_annotations=_DEFAULT_ANNOTATIONS)


def test_default_pod_metadata_fills_only_what_is_missing_on_the_head() -> None:
    head = _head(_default_metadata_cluster(), _DEFAULTS)
    labels, annotations = head["metadata"]["labels"], head["metadata"]["annotations"]
    assert labels["team"] == "ml"
    assert labels["cost-center"] == "42"
    assert labels["tier"] == "gold"  # no group labels on the head
    assert {k: labels[k] for k in ("ray.io/node-type", "ray.io/cluster", "ray.io/group", "ray.io/identifier")} == {
        "ray.io/node-type": "head",
        "ray.io/cluster": "raycluster-kuberay",
        "ray.io/group": "headgroup",
        "ray.io/identifier": "raycluster-kuberay-head",
    }
    assert (labels["ray.io/is-ray-node"], labels["app.kubernetes.io/created-by"]) == ("yes", "kuberay-operator")
    assert labels["app.kubernetes.io/name"] == "kuberay"
    assert labels["ray.io/serve"] == "maybe"  # a plain RayCluster: BuildPod leaves it to the default
    assert annotations["owner"] == "ml"
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["ray.io/ft-enabled"] == "false"
    assert annotations["ray.io/kuberay-version"] == OPTIONS.kuberay_version
    assert annotations["ray.io/upgrade-strategy-recreate-hash"] not in ("", "nope")


def test_default_pod_metadata_fills_only_what_is_missing_on_a_worker() -> None:
    worker = _worker(_default_metadata_cluster(), options=_DEFAULTS, replica_index=3)
    labels, annotations = worker["metadata"]["labels"], worker["metadata"]["annotations"]
    assert labels["team"] == "platform"  # the worker template does not set it
    assert labels["tier"] == "silver"
    assert labels["cost-center"] == "42"
    assert (labels["ray.io/node-type"], labels["ray.io/group"]) == ("worker", "workergroup")
    assert labels["ray.io/worker-group-replica-index"] == "3"
    # No ray.io/ft-enabled on workers (KubeRay sets it on the head only), so the default fills it in.
    assert annotations == {
        "owner": "ml",
        "prometheus.io/scrape": "true",
        "ray.io/ft-enabled": "true",
        "ray.io/kuberay-version": "v0.0.0",  # createHeadPod's annotations are the head's only
        "ray.io/upgrade-strategy-recreate-hash": "nope",
    }


def test_default_pod_metadata_under_a_rayservice_leaves_ray_io_serve_to_build_pod() -> None:
    cluster = _default_metadata_cluster(rayservice=True)
    assert _head(cluster, _DEFAULTS)["metadata"]["labels"]["ray.io/serve"] == "false"
    assert _worker(cluster, options=_DEFAULTS)["metadata"]["labels"]["ray.io/serve"] == "true"


def test_a_default_overwrite_annotation_turns_command_generation_off_as_in_kuberay() -> None:
    options = BuildOptions(default_pod_annotations={"ray.io/overwrite-container-cmd": "true"})
    head = _head(_sample("ray-cluster.sample.yaml"), options)
    assert "ulimit" not in " ".join(_ray(head).get("args") or [])


def test_no_default_pod_metadata_adds_nothing() -> None:
    cluster = _sample("ray-cluster.sample.yaml")
    assert _head(cluster) == _head(cluster, BuildOptions(default_pod_labels={}, default_pod_annotations={}))

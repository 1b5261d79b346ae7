"""The history-server collector sidecar in the Ray Pods, as KubeRay v1.7.0 builds it (POD-9; ``common/pod.go``
``BuildCollectorContainer``, ``BuildPod``, ``setContainerEnvVars``; gate ``RayClusterHistoryServer``)."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RayCluster
from raykube.builders import pods
from raykube.builders.options import BuildOptions

NS, NAME, UID = "team", "hist", "0123456789abcdef"
ON = BuildOptions(features={**c.FEATURE_GATE_DEFAULTS, c.GATE_RAYCLUSTER_HISTORY_SERVER: True})
OFF = BuildOptions()
FQDN = f"{NAME}-head-svc.{NS}.svc.cluster.local"
USER_ENV = [{"name": "STORAGE_BACKEND", "value": "S3"}, {"name": "S3_REGION", "value": "us-west-2"}]
EVENT_ENV = [
    {"name": "RAY_enable_ray_event", "value": "true"},
    {"name": "RAY_enable_core_worker_ray_event_to_aggregator", "value": "true"},
    {"name": "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR", "value": "http://localhost:8084/v1/events"},
    {"name": "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES", "value": c.DEFAULT_RAY_EXPOSABLE_EVENT_TYPES},
    {
        "name": "RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES",
        "value": c.DEFAULT_RAY_EXPOSABLE_EVENT_TYPES,
    },
]
LOGS_MOUNT = {"mountPath": "/tmp/ray", "name": "ray-logs"}


def cluster(
    collector: dict[str, Any] | None = None,
    *,
    labels: dict[str, str] | None = None,
    auth: bool = False,
    autoscaling: bool = False,
    ray_env: list[dict[str, Any]] | None = None,
) -> RayCluster:
    ray: dict[str, Any] = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}
    worker: dict[str, Any] = {"name": "ray-worker", "image": "rayproject/ray:2.52.0"}
    if ray_env is not None:
        ray["env"] = worker["env"] = ray_env
    spec: dict[str, Any] = {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [ray]}}},
        "workerGroupSpecs": [
            {"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 3, "rayStartParams": {},
             "template": {"spec": {"containers": [worker]}}},
        ],
    }  # fmt: skip
    if collector is not None:
        spec["historyServerOptions"] = {"collectorOptions": collector}
    if auth:
        spec["authOptions"] = {"mode": "token"}
    if autoscaling:
        spec["enableInTreeAutoscaling"] = True
    metadata = {"name": NAME, "namespace": NS, "uid": UID, "labels": labels or {}}
    return RayCluster.model_validate(
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": metadata, "spec": spec}
    )


def _collector(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next((x for x in pod["spec"]["containers"] if x["name"] == "ray-history-collector"), None)


def _head(rc: RayCluster, options: BuildOptions = ON) -> dict[str, Any]:
    return pods.head_pod(rc, options)


def _worker(rc: RayCluster, options: BuildOptions = ON) -> dict[str, Any]:
    return pods.worker_pod(rc, 0, options, replica_index=0)


def test_head_collector_is_kuberays_container_with_its_env_defaults_and_the_users_env_last() -> None:
    labels = {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "job-1"}
    pod = _head(cluster({"image": "collector:v1", "env": USER_ENV}, labels=labels))
    assert [x["name"] for x in pod["spec"]["containers"]] == ["ray-head", "ray-history-collector"]
    collector = _collector(pod)
    assert collector is not None
    assert collector["image"] == "collector:v1" and collector["imagePullPolicy"] == "IfNotPresent"
    assert collector["resources"] == {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "50m", "memory": "64Mi"},
    }
    assert collector["env"] == [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "RAY_CLUSTER_NAME", "value": NAME},
        {"name": "RAY_CLUSTER_NAMESPACE", "value": NS},
        {"name": "RAY_ROLE", "value": "Head"},
        {"name": "EVENTS_PORT", "value": "8084"},
        {"name": "FQ_RAY_IP", "value": FQDN},
        {"name": "OWNER_KIND", "value": "RayJob"},
        {"name": "OWNER_NAME", "value": "job-1"},
        {"name": "RAY_DASHBOARD_ADDRESS", "value": "http://localhost:8265"},
        *USER_ENV,
    ]
    assert collector["volumeMounts"] == [LOGS_MOUNT]  # BuildPod shares Ray's logs with it
    assert LOGS_MOUNT in pod["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "ray-logs", "emptyDir": {}} in pod["spec"]["volumes"]


def test_worker_collector_has_the_worker_role_no_dashboard_address_and_the_users_overrides() -> None:
    resources = {"limits": {"cpu": "1"}}
    options = {"image": "collector:v1", "imagePullPolicy": "Always", "resources": resources, "env": USER_ENV}
    collector = _collector(_worker(cluster(options)))
    assert collector is not None
    assert collector["imagePullPolicy"] == "Always" and collector["resources"] == resources
    names = [e["name"] for e in collector["env"]]
    assert names == ["POD_IP", "RAY_CLUSTER_NAME", "RAY_CLUSTER_NAMESPACE", "RAY_ROLE", "EVENTS_PORT", "FQ_RAY_IP",
                     "STORAGE_BACKEND", "S3_REGION"]  # fmt: skip
    assert {"name": "RAY_ROLE", "value": "Worker"} in collector["env"]


def test_a_users_dashboard_address_replaces_kuberays_on_the_head() -> None:
    env = [{"name": "RAY_DASHBOARD_ADDRESS", "value": "http://elsewhere:8265"}, *USER_ENV]
    collector = _collector(_head(cluster({"image": "collector:v1", "env": env})))
    assert collector is not None
    assert [e for e in collector["env"] if e["name"] == "RAY_DASHBOARD_ADDRESS"] == [env[0]]


@pytest.mark.parametrize("build", [_head, _worker], ids=["head", "worker"])
def test_the_ray_container_exports_its_events_to_the_collector_keeping_the_users_values(build: Any) -> None:
    user = {"name": "RAY_enable_ray_event", "value": "false"}
    ray = build(cluster({"image": "collector:v1", "env": USER_ENV}, ray_env=[user]))["spec"]["containers"][0]
    event_env = [e for e in ray["env"] if e["name"] in {x["name"] for x in EVENT_ENV}]
    assert event_env == [user, *EVENT_ENV[1:]]
    assert ray["env"][-len(EVENT_ENV) + 1 :] == EVENT_ENV[1:]  # last, after setContainerEnvVars' own


def test_with_token_auth_the_collector_gets_the_auth_env() -> None:
    collector = _collector(_head(cluster({"image": "collector:v1"}, auth=True)))
    assert collector is not None
    assert collector["env"][-2:] == [
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": NAME, "key": "auth_token"}}},
    ]


def test_with_the_autoscaler_the_collector_follows_it_and_shares_the_same_log_volume() -> None:
    pod = _head(cluster({"image": "collector:v1"}, autoscaling=True))
    assert [x["name"] for x in pod["spec"]["containers"]] == ["ray-head", "autoscaler", "ray-history-collector"]
    assert [v["name"] for v in pod["spec"]["volumes"]].count("ray-logs") == 1
    assert pod["spec"]["containers"][0]["volumeMounts"].count(LOGS_MOUNT) == 1


@pytest.mark.parametrize(
    ("rc", "options"),
    [
        pytest.param(cluster({"image": "collector:v1"}), OFF, id="gate-off"),
        pytest.param(cluster(), ON, id="no-history-server-options"),
    ],
)
def test_no_collector_and_no_event_env_without_the_gate_or_the_options(rc: RayCluster, options: BuildOptions) -> None:
    for pod in (_head(rc, options), _worker(rc, options)):
        assert _collector(pod) is None
        names = {e["name"] for e in pod["spec"]["containers"][0]["env"]}
        assert not names & {e["name"] for e in EVENT_ENV}
        assert not any(v["name"] == "ray-logs" for v in pod["spec"].get("volumes") or [])

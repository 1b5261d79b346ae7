"""raykube.builders.rayservice against KubeRay v1.6.1 (rayservice_controller.go, common/service.go,
utils/consistency.go). Vectors: KubeRay's own unit tests (rayservice_controller_unit_test.go, common/service_test.go)
where they pin values; hashes from KubeRay's GenerateHashWithoutReplicasAndWorkersToDelete (the tests' kuberay-hash
helper); serve-config bodies from tests/vectors/serve_config.json, written by KubeRay's updateServeDeployment path
(k8s.io/apimachinery util/yaml.Unmarshal into a map[string]any, then json.Marshal) at the versions KubeRay v1.6.1
pins, for this module's configs and a few hundred random ones; durations from tests/vectors/duration.json, written by
Go's time.ParseDuration, strconv.Atoi and time.Duration.String (both tools/govectors, `make vectors`)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from raykube.api import constants as c
from raykube.api.resources import RayCluster, RayService
from raykube.builders import rayservice as rs
from raykube.builders.options import BuildOptions
from raykube.builders.services import SERVE_PORT_MISSING_MESSAGE
from raykube.golang.duration import duration_string
from tests.support import KUBERAY_V161
from tests.vectors import compare

_IMAGE = "rayproject/ray:2.52.0"
_GROUP1 = {
    "groupName": "worker-group-1",
    "replicas": 1,
    "rayStartParams": {},
    "template": {"spec": {"containers": [{"name": "ray-worker", "image": _IMAGE}]}},
}
_CONFIG: dict[str, Any] = {
    "rayVersion": "2.52.0",
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": _IMAGE}]}},
    },
    "workerGroupSpecs": [_GROUP1],
}
# KubeRay's GenerateHashWithoutReplicasAndWorkersToDelete of _CONFIG, and of _CONFIG with worker-group-2 appended.
HASH_ONE_GROUP = "9E1GKRBDNSPE2R5GIGODUJEC7KI1515Q"
HASH_TWO_GROUPS = "2QBIN885MH0UBJFEHB975RJR5NH21TUQ"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
STAMP = "2026-01-02T03:04:05Z"


def _config(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(_CONFIG)
    config.update(changes)
    return config


def _two_groups() -> list[dict[str, Any]]:
    return [_GROUP1, {**copy.deepcopy(_GROUP1), "groupName": "worker-group-2"}]


def _service(config: dict[str, Any] | None = None, *, status: dict[str, Any] | None = None, **spec: Any) -> RayService:
    body: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "test-service", "namespace": "test-namespace", "uid": "rs-uid"},
        "spec": {"rayClusterConfig": config if config is not None else _config(), **spec},
    }
    if status is not None:
        body["status"] = status
    return RayService.model_validate(body)


def _cluster(
    name: str = "test-service-abcde",
    *,
    hash_: str | None = HASH_ONE_GROUP,
    groups: str | None = "1",
    version: str | None = c.KUBERAY_VERSION,
    config: dict[str, Any] | None = None,
) -> RayCluster:
    annotations = {
        key: value
        for key, value in (
            (c.RAY_HASH_WITHOUT_REPLICAS_ANNOTATION, hash_),
            (c.RAY_NUM_WORKER_GROUPS_ANNOTATION, groups),
            (c.RAY_KUBERAY_VERSION_ANNOTATION, version),
        )
        if value is not None
    }
    return RayCluster.model_validate(
        {
            "metadata": {"name": name, "namespace": "test-namespace", "uid": f"{name}-uid", "annotations": annotations},
            "spec": config if config is not None else _config(),
        }
    )


# --------------------------------------------------------------------------------------------------------------------
# The RayCluster
# --------------------------------------------------------------------------------------------------------------------


def test_goal_hash_is_kuberays() -> None:
    assert rs.goal_cluster_hash(_service()) == HASH_ONE_GROUP
    assert rs.goal_cluster_hash(_service(_config(workerGroupSpecs=_two_groups()))) == HASH_TWO_GROUPS
    # the partial hash of two groups cut to the cluster's one is the one-group hash
    assert rs.partial_cluster_hash(_service(_config(workerGroupSpecs=_two_groups())), 1) == HASH_ONE_GROUP
    assert rs.partial_cluster_hash(_service(), 2) is None


def test_suspend_does_not_enter_the_rayservice_hash_as_in_v170() -> None:
    """KubeRay v1.7.0 rayClusterSpecForHashing: suspend reaches the cluster when it is made, and is Kueue's after."""
    suspended = _service(_config(suspend=True, workerGroupSpecs=_two_groups()))
    assert rs.goal_cluster_hash(suspended) == HASH_TWO_GROUPS
    assert rs.partial_cluster_hash(suspended, 1) == HASH_ONE_GROUP


@pytest.mark.parametrize(
    ("labels", "annotations", "groups"),
    [
        pytest.param(None, None, [], id="no worker groups"),
        pytest.param(None, None, _two_groups(), id="two worker groups"),
        pytest.param({"label-1": "value-1", "label-2": "value-2"}, None, [_GROUP1], id="labels copied"),
        pytest.param(None, {"annotation-1": "value-1", "annotation-2": "value-2"}, [_GROUP1], id="annotations copied"),
    ],
)  # TestConstructRayClusterForRayService
def test_rayservice_cluster(
    labels: dict[str, str] | None, annotations: dict[str, str] | None, groups: list[Any]
) -> None:
    config = _config(workerGroupSpecs=groups)
    service = _service(config)
    if labels:
        service.metadata["labels"] = labels
    if annotations:
        service.metadata["annotations"] = annotations
    cluster = rs.rayservice_cluster(service, "test-cluster")
    assert cluster == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "test-cluster",
            "namespace": "test-namespace",
            "labels": {
                **(labels or {}),
                "ray.io/originated-from-cr-name": "test-service",
                "ray.io/originated-from-crd": "RayService",
            },
            "annotations": {
                **(annotations or {}),
                "ray.io/hash-without-replicas-and-workers-to-delete": rs.goal_cluster_hash(service),
                "ray.io/num-worker-groups": str(len(groups)),
                "ray.io/kuberay-version": "v1.7.0",
            },
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayService",
                    "name": "test-service",
                    "uid": "rs-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": config,
    }


def test_rayservice_cluster_incremental_drops_replicas_only_with_an_active_cluster() -> None:
    strategy = {
        "type": c.RAYSERVICE_UPGRADE_INCREMENTAL,
        "clusterUpgradeOptions": {"stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "gw"},
    }
    gates = {c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE: True}
    fresh = _service(upgradeStrategy=strategy)
    assert rs.rayservice_cluster(fresh, "x", gates=gates)["spec"]["workerGroupSpecs"][0]["replicas"] == 1
    upgrading = _service(upgradeStrategy=strategy, status={"activeServiceStatus": {"rayClusterName": "old"}})
    assert "replicas" not in rs.rayservice_cluster(upgrading, "x", gates=gates)["spec"]["workerGroupSpecs"][0]
    assert rs.rayservice_cluster(upgrading, "x")["spec"]["workerGroupSpecs"][0]["replicas"] == 1  # gate off


def test_new_cluster_name() -> None:
    assert rs.new_cluster_name(_service(), "xk2z9") == "test-service-xk2z9"
    name = rs.new_cluster_name(_service())
    assert name.startswith("test-service-")
    assert len(name) == len("test-service-") + 5
    assert set(name[-5:]) <= set(c.RANDOM_SUFFIX_ALPHABET)


@pytest.mark.parametrize(
    ("partial", "replicas", "add_group", "new_version", "expected"),
    [
        pytest.param(False, 2, False, False, True, id="[full] diff replicas"),
        pytest.param(False, 1, False, False, True, id="[full] completely identical"),
        pytest.param(False, 1, False, True, False, id="[full] update cluster spec"),
        pytest.param(True, 1, True, False, True, id="[partial] new worker group"),
        pytest.param(True, 2, True, False, True, id="[partial] diff replicas + new worker group"),
        pytest.param(True, 2, False, False, True, id="[partial] diff replicas"),
        pytest.param(True, 1, False, True, False, id="[partial] update cluster spec"),
    ],
)  # TestIsClusterSpecHashEqual
def test_cluster_spec_hash_equal(
    partial: bool, replicas: int, add_group: bool, new_version: bool, expected: bool
) -> None:
    groups = _two_groups() if add_group else [_GROUP1]
    groups[0] = {**groups[0], "replicas": replicas}
    config = _config(workerGroupSpecs=groups, **({"rayVersion": "new-version"} if new_version else {}))
    assert rs.cluster_spec_hash_equal(_service(config), _cluster(), partial=partial) is expected


@pytest.mark.parametrize(
    ("groups_annotation", "expected"),
    [
        pytest.param(None, True, id="[Q] missing annotation: partial equal"),
        pytest.param("one", True, id="[Q] unreadable annotation: partial equal"),
        pytest.param("3", False, id="more groups on the cluster than in the goal"),
    ],
)
def test_partial_hash_annotation(groups_annotation: str | None, expected: bool) -> None:
    service = _service(_config(rayVersion="new-version"))
    assert rs.cluster_spec_hash_equal(service, _cluster(groups=groups_annotation), partial=True) is expected


_UPGRADING = {"conditions": [{"type": "UpgradeInProgress", "status": "True", "reason": "r", "message": ""}]}


@pytest.mark.parametrize(
    ("config", "cluster", "active", "status", "expected"),
    [
        pytest.param(_config(), None, True, None, False, id="no cluster"),
        pytest.param(_config(), _cluster(), True, None, False, id="unchanged"),
        pytest.param(_config(), _cluster(version="v1.5.1"), True, None, True, id="active built by another version"),
        pytest.param(_config(), _cluster(version=None), True, None, True, id="active without version annotation"),
        pytest.param(_config(), _cluster(version="v1.5.1"), False, None, False, id="pending: version not checked"),
        pytest.param(_config(), _cluster(version="v1.5.1"), True, _UPGRADING, False, id="active during upgrade"),
        pytest.param(_config(suspend=True), _cluster(), True, None, False, id="v1.7.0: suspend flipped on, no update"),
        pytest.param(_config(suspend=True), _cluster(), False, None, False, id="v1.7.0: pending suspend flipped on"),
        pytest.param(
            _config(suspend=False),
            _cluster(config=_config(suspend=True)),
            True,
            None,
            False,
            id="v1.7.0: suspend flipped off, no update",
        ),
        pytest.param(_config(suspend=False), _cluster(), True, None, False, id="suspend false == nil"),
        pytest.param(_config(workerGroupSpecs=_two_groups()), _cluster(), True, None, True, id="group appended"),
        pytest.param(_config(rayVersion="2.53.0"), _cluster(), True, None, False, id="other change: new cluster"),
        pytest.param(
            _config(workerGroupSpecs=[{**_GROUP1, "replicas": 5}]),
            _cluster(),
            True,
            None,
            False,
            id="[Q] replicas alone never propagated",
        ),
    ],
)  # v1.7.0 shouldUpdateCluster (suspend no longer compared); TestReconcileRayCluster_Update*Cluster
def test_should_update_cluster(
    config: dict[str, Any], cluster: RayCluster | None, active: bool, status: dict[str, Any] | None, expected: bool
) -> None:
    assert rs.should_update_cluster(_service(config, status=status), cluster, active=active) is expected


@pytest.mark.parametrize(
    ("strategy", "gate", "env", "expected"),
    [
        pytest.param(None, False, None, True, id="nothing set"),
        pytest.param(None, False, "false", False, id="ENABLE_ZERO_DOWNTIME=false"),
        pytest.param(None, False, "FALSE", False, id="env lowercased"),
        pytest.param(None, False, "true", True, id="ENABLE_ZERO_DOWNTIME=true"),
        pytest.param({}, False, "false", False, id="strategy without type: env decides"),
        pytest.param({"type": "NewCluster"}, False, "false", True, id="NewCluster beats the env"),
        pytest.param({"type": "None"}, False, None, False, id="None"),
        pytest.param({"type": "NewClusterWithIncrementalUpgrade"}, False, None, False, id="incremental, gate off"),
        pytest.param({"type": "NewClusterWithIncrementalUpgrade"}, True, None, True, id="incremental, gate on"),
        pytest.param({"type": "None"}, True, None, False, id="None, gate on"),
    ],
)  # TestIsZeroDowntimeUpgradeEnabled
def test_zero_downtime(strategy: dict[str, Any] | None, gate: bool, env: str | None, expected: bool) -> None:
    model = _service(**({"upgradeStrategy": strategy} if strategy is not None else {})).spec
    assert model is not None
    gates = {c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE: gate}
    assert rs.zero_downtime_upgrade_enabled(model.upgrade_strategy, gates=gates, env=env) is expected


_ROLLBACK = {"conditions": [{"type": "RollbackInProgress", "status": "True", "reason": "r", "message": ""}]}


@pytest.mark.parametrize(
    ("config", "active", "pending", "serving", "status", "strategy", "expected"),
    [
        pytest.param(_config(), None, None, False, None, None, True, id="no cluster: prepare the first"),
        pytest.param(_config(), None, None, True, None, None, False, id="pending already serving"),
        pytest.param(_config(), None, None, False, _ROLLBACK, None, False, id="rollback in progress"),
        pytest.param(_config(), _cluster(), None, False, None, None, False, id="active matches"),
        pytest.param(_config(rayVersion="x"), _cluster(), None, False, None, None, True, id="active differs"),
        pytest.param(
            _config(workerGroupSpecs=_two_groups()), _cluster(), None, False, None, None, False, id="partial: in place"
        ),
        pytest.param(
            _config(rayVersion="x"), _cluster(), None, False, None, {"type": "None"}, False, id="upgrade disabled"
        ),
        pytest.param(
            _config(rayVersion="x"),
            _cluster("old", hash_="other"),
            _cluster(),
            False,
            None,
            None,
            True,
            id="pending differs too: a third cluster",
        ),
        pytest.param(
            _config(), _cluster("old", hash_="other"), _cluster(), False, None, None, False, id="pending matches"
        ),
    ],
)  # TestShouldPrepareNewCluster_*
def test_should_prepare_new_cluster(
    config: dict[str, Any],
    active: RayCluster | None,
    pending: RayCluster | None,
    serving: bool,
    status: dict[str, Any] | None,
    strategy: dict[str, Any] | None,
    expected: bool,
) -> None:
    extra = {"upgradeStrategy": strategy} if strategy is not None else {}
    service = _service(config, status=status, **extra)
    assert rs.should_prepare_new_cluster(service, active, pending, pending_serving=serving, gates={}) is expected


def test_updated_cluster_replaces_spec_labels_annotations() -> None:
    service = _service(_config(workerGroupSpecs=_two_groups()))
    live = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "test-service-abcde",
            "namespace": "test-namespace",
            "resourceVersion": "42",
            "uid": "u",
            "labels": {"added-by-someone": "x"},
            "annotations": {"ray.io/kuberay-version": "v1.5.1"},
        },
        "spec": _config(workerGroupSpecs=[{**_GROUP1, "replicas": 7}]),
        "status": {"state": "ready"},
    }
    goal = rs.rayservice_cluster(service, "test-service-abcde")
    updated = rs.updated_cluster(live, goal)
    assert updated["spec"] == goal["spec"]  # [Q] the autoscaler's replicas 7 are gone
    assert updated["metadata"]["labels"] == goal["metadata"]["labels"]
    assert updated["metadata"]["annotations"] == goal["metadata"]["annotations"]
    assert updated["metadata"]["resourceVersion"] == "42"
    assert updated["status"] == {"state": "ready"}
    assert live["metadata"]["labels"] == {"added-by-someone": "x"}  # not mutated
    with pytest.raises(rs.RayServiceBuildError, match="different names or namespaces"):
        rs.updated_cluster(live, rs.rayservice_cluster(service, "other"))


@pytest.mark.parametrize(
    ("goal_suspend", "live_suspend", "expected"),
    [
        pytest.param(True, None, None, id="goal suspends, live unset: stays unset"),
        pytest.param(None, True, True, id="goal unset, live suspended (Kueue): stays suspended"),
        pytest.param(False, True, True, id="goal false, live true: kept"),
        pytest.param(True, False, False, id="goal true, live false: kept"),
    ],
)  # v1.7.0 modifyRayCluster: the existing cluster's Suspend is kept
def test_updated_cluster_keeps_the_live_suspend(
    goal_suspend: bool | None, live_suspend: bool | None, expected: bool | None
) -> None:
    goal_extra = {} if goal_suspend is None else {"suspend": goal_suspend}
    live_extra = {} if live_suspend is None else {"suspend": live_suspend}
    service = _service(_config(workerGroupSpecs=_two_groups(), **goal_extra))
    live = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "test-service-abcde", "namespace": "test-namespace", "resourceVersion": "1"},
        "spec": _config(**live_extra),
    }
    goal = rs.rayservice_cluster(service, "test-service-abcde")
    assert goal["spec"].get("suspend") == goal_suspend  # a new cluster is created with the RayService's suspend
    updated = rs.updated_cluster(live, goal)
    assert updated["spec"].get("suspend") == expected
    assert ("suspend" in updated["spec"]) is (expected is not None)
    assert {k: v for k, v in updated["spec"].items() if k != "suspend"} == {
        k: v for k, v in goal["spec"].items() if k != "suspend"
    }


# --------------------------------------------------------------------------------------------------------------------
# Services
# --------------------------------------------------------------------------------------------------------------------

_OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayService",
    "name": "test-service",
    "uid": "rs-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def _head_ports(*ports: tuple[str, int]) -> dict[str, Any]:
    return _config(
        headGroupSpec={
            "rayStartParams": {},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "ray-head",
                            "image": _IMAGE,
                            "ports": [{"name": n, "containerPort": p} for n, p in ports],
                        }
                    ]
                }
            },
        }
    )


def test_head_service() -> None:
    cluster = _cluster(config=_head_ports(("gcs-server", 6379), ("dashboard", 8265), ("serve", 8000)))
    svc = rs.head_service(_service(), cluster, BuildOptions())
    assert svc == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "test-service-head-svc",
            "namespace": "test-namespace",
            "labels": {
                "ray.io/originated-from-cr-name": "test-service",
                "ray.io/originated-from-crd": "RayService",
                "ray.io/node-type": "head",
                "ray.io/identifier": "test-service-head",
            },
            "ownerReferences": [_OWNER],
        },
        "spec": {
            "selector": {
                "ray.io/cluster": "test-service-abcde",
                "ray.io/node-type": "head",
                "ray.io/identifier": "test-service-abcde-head",
                "app.kubernetes.io/name": "kuberay",
                "app.kubernetes.io/created-by": "kuberay-operator",
            },
            "ports": [
                {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
                {"name": "gcs-server", "port": 6379, "appProtocol": "tcp"},
                {"name": "metrics", "port": 8080, "appProtocol": "tcp"},
                {"name": "serve", "port": 8000, "appProtocol": "tcp"},
            ],
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
        },
    }
    assert "clusterIP" not in rs.head_service(_service(), cluster, BuildOptions(head_cluster_ip_service=True))["spec"]


def test_serve_service_default() -> None:
    """TestBuildServeServiceForRayService: name, labels, selector ray.io/serve=true; ports from the cluster's head."""
    cluster = _cluster(config=_head_ports(("serve", 8000), ("serve-grpc", 9000), ("dashboard", 8265)))
    service = _service(_config(headGroupSpec={**_CONFIG["headGroupSpec"], "serviceType": "NodePort"}))
    assert rs.serve_service(service, cluster) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "test-service-serve-svc",
            "namespace": "test-namespace",
            "labels": {
                "ray.io/originated-from-cr-name": "test-service",
                "ray.io/originated-from-crd": "RayService",
                "ray.io/serve": "test-service-serve",
            },
            "ownerReferences": [_OWNER],
        },
        "spec": {
            "selector": {"ray.io/cluster": "test-service-abcde", "ray.io/serve": "true"},
            "ports": [{"name": "serve", "port": 8000}, {"name": "serve-grpc", "port": 9000}],
            "type": "NodePort",  # the RayService's serviceType, not the cluster's
        },
    }
    assert rs.serve_service_name(service) == "test-service-serve-svc"


def test_serve_service_default_ports_and_missing_port() -> None:
    """A head without ports gets serve 8000; ports but none named serve*: KubeRay's error
    (TestBuildServeServiceForRayService_WithoutServePort)."""
    assert rs.serve_service(_service(), _cluster())["spec"]["ports"] == [{"name": "serve", "port": 8000}]
    with pytest.raises(rs.RayServiceBuildError) as error:
        rs.serve_service(_service(), _cluster(config=_head_ports(("dashboard", 8265))))
    assert str(error.value) == SERVE_PORT_MISSING_MESSAGE


def test_serve_service_custom() -> None:
    """TestUserSpecifiedServeService / ...AppProtocolPreserved / ...WithGrpcPort: the user Service kept, selector
    forced, default labels win, matching ports replaced by the user's, other user ports dropped."""
    custom = {
        "metadata": {
            "name": "user-serve",
            "namespace": "elsewhere",
            "labels": {"user": "label", "ray.io/serve": "overridden"},
            "annotations": {"a": "b"},
        },
        "spec": {
            "type": "LoadBalancer",
            "selector": {"user": "selector"},
            "ports": [
                {"name": "serve", "port": 80, "targetPort": 8000, "appProtocol": "http"},
                {"name": "extra", "port": 81},
            ],
        },
    }
    service = _service(serveService=custom)
    cluster = _cluster(config=_head_ports(("serve", 8000), ("serve-grpc", 9000)))
    assert rs.serve_service(service, cluster) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "user-serve",
            "namespace": "test-namespace",
            "labels": {
                "user": "label",
                "ray.io/serve": "test-service-serve",
                "ray.io/originated-from-cr-name": "test-service",
                "ray.io/originated-from-crd": "RayService",
            },
            "annotations": {"a": "b"},
            "ownerReferences": [_OWNER],
        },
        "spec": {
            "type": "LoadBalancer",
            "selector": {"ray.io/cluster": "test-service-abcde", "ray.io/serve": "true"},
            "ports": [
                {"name": "serve", "port": 80, "targetPort": 8000, "appProtocol": "http"},
                {"name": "serve-grpc", "port": 9000},
            ],
        },
    }
    assert rs.serve_service_name(service) == "user-serve"
    # no serve port detected: the user's ports are kept as given, and no error
    no_serve = rs.serve_service(service, _cluster(config=_head_ports(("dashboard", 8265))))
    assert no_serve["spec"]["ports"] == custom["spec"]["ports"]
    assert "type" not in rs.serve_service(_service(serveService={"spec": {}}), cluster)["spec"]


def test_serve_service_incremental_per_cluster() -> None:
    svc = rs.serve_service(_service(serveService={"metadata": {"name": "ignored"}}), _cluster(), incremental=True)
    assert svc["metadata"]["name"] == "test-service-abcde-serve-svc"
    assert svc["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "test-service-abcde",
        "ray.io/originated-from-crd": "RayService",
        "ray.io/serve": "test-service-abcde-serve",
    }
    assert svc["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"


def test_switched_service() -> None:
    """TestReconcileServices_UpdateService: same cluster → untouched (even with other ports); another cluster → the
    live Service with the new spec and the live clusterIP."""
    old_cluster = _cluster(config=_head_ports(("serve", 8000)))
    live = rs.serve_service(_service(), old_cluster)
    live["metadata"]["resourceVersion"] = "7"
    live["spec"]["clusterIP"] = "10.96.0.12"
    same = rs.serve_service(_service(), _cluster(config=_head_ports(("serve", 9999))))
    assert rs.switched_service(live, same) is None
    new = rs.serve_service(_service(), _cluster("test-service-fghij"))
    switched = rs.switched_service(live, new)
    assert switched is not None
    assert switched["metadata"] == live["metadata"]
    assert switched["spec"] == {**new["spec"], "clusterIP": "10.96.0.12"}
    assert rs.service_cluster(switched) == "test-service-fghij"
    assert rs.service_cluster(None) == ""


# --------------------------------------------------------------------------------------------------------------------
# Serve applications
# --------------------------------------------------------------------------------------------------------------------

_SAMPLE_SERVE_CONFIG = """applications:
  - name: fruit_app
    import_path: fruit.deployment_graph
    route_prefix: /fruit
    deployments:
      - name: MangoStand
        num_replicas: 2
        user_config:
          price: 3
        ray_actor_options:
          num_cpus: 0.1
"""


_SERVE_CONFIGS = compare.load("serve_config")


def _go_serve_config(config: str, target_capacity: int | None = None) -> dict[str, Any]:
    """KubeRay's updateServeDeployment for this serveConfigV2, from Go's answers (tests/vectors/serve_config.json):
    apimachinery util/yaml.Unmarshal into a map[string]any, then json.Marshal; ``body`` or ``error``."""
    return _SERVE_CONFIGS.find(yaml=config, target_capacity=target_capacity)


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(_SAMPLE_SERVE_CONFIG, id="sample"),
        pytest.param("", id="[Q] empty config: PUT {}"),
        pytest.param("# only a comment\n", id="comment"),
        pytest.param("null", id="null"),
        pytest.param(
            "a: 1.0\nb: 1e3\nc: 18446744073709551615\nd: 9223372036854775807\ne: -9223372036854775809\nf: 0.1\n"
            "g: 1e21\nh: 1e-7\ni: 0x1F\nj: 0o17\nk: yes\nl: off\nm: ~\nn: 2001-12-14\n",
            id="go-yaml v2 scalars, int64 or float64",
        ),
        pytest.param("x: '<&>'\n", id="HTML escaped"),
        pytest.param("a: b\n---\nc: d\n", id="first document only"),
        pytest.param("a: -0.0\nb: -0\nc: [-0.0, -0e3, -.0]\n", id="-0.0 is read back as the int64 0"),
        pytest.param("1: a\ntrue: b\n0: c\nfalse: d\n-0.0: e\n", id="keys 1, true, 0, false and -0.0 stay apart"),
        pytest.param(
            "base: &b {cpu: 1, mem: 2}\nd:\n  mem: 3\n  <<: *b\n  gpu: 4\n", id="a merge sets keys over those before it"
        ),
    ],
)
def test_serve_config_body(config: str) -> None:
    expected = _go_serve_config(config)
    assert expected["error"] is None, expected["error"]
    assert rs.serve_config_body(config) == expected["body"].encode()


@pytest.mark.parametrize(
    "config",
    [
        pytest.param("- a\n- b\n", id="list"),
        pytest.param("hello", id="string"),
        pytest.param("x: .nan\n", id="NaN"),
        pytest.param("x: .inf\n", id="Inf"),
        pytest.param("d:\n  <<: 1\n", id="merge of a scalar"),
    ],
)
def test_serve_config_body_errors(config: str) -> None:
    expected = _go_serve_config(config)["error"]
    assert expected is not None
    with pytest.raises(rs.RayServiceBuildError) as error:
        rs.serve_config_body(config)
    assert str(error.value) == expected


@pytest.mark.parametrize(
    ("config", "target_capacity"), [("b: 1\n", 50), ("target_capacity: 3.5\nb: 1\n", 0), ("", 100)]
)
def test_serve_config_body_target_capacity(config: str, target_capacity: int) -> None:
    expected = _go_serve_config(config, target_capacity)["body"]
    assert rs.serve_config_body(config, target_capacity=target_capacity) == expected.encode()


@pytest.mark.parametrize("case", [pytest.param(case, id=case["label"]) for case in _SERVE_CONFIGS.labelled()])
def test_serve_config_matches_go(case: dict[str, Any]) -> None:
    """Every curated serve config of tests/vectors/serve_config.json (a known divergence: both refuse)."""
    assert compare.compare("serve_config", case) is None or any(
        divergence.applies(case) for divergence in compare.DIVERGENCES if divergence.family == "serve_config"
    )


def test_every_serve_config_vector_agrees_with_go() -> None:
    """The curated and the random serve configs: raykube's body (or error) is Go's on every one."""
    result = compare.assert_agrees("serve_config")
    assert result.total > 600


def test_serve_config_body_for_every_rayservice_sample() -> None:
    """Every v1.6.1 RayService sample's serveConfigV2 turns into a JSON object (the PUT never fails on them)."""
    samples = sorted((KUBERAY_V161 / "samples").rglob("ray-service*.yaml"))
    if not samples:
        pytest.skip("KubeRay's samples are not in the cache")
    for path in samples:
        for doc in yaml.safe_load_all(Path(path).read_text()):
            if doc and doc.get("kind") == "RayService" and doc["spec"].get("serveConfigV2"):
                assert rs.serve_config_body(doc["spec"]["serveConfigV2"]).startswith(b"{"), path


_RUNNING = {"myapp": {"status": "RUNNING"}}


@pytest.mark.parametrize(
    ("cached", "new", "apps", "expected", "reason"),
    [
        pytest.param("", "serve-config-1", {}, True, "Nothing has been cached for the cluster.", id="new cluster"),
        pytest.param("serve-config-1", "serve-config-1", _RUNNING, False, "matches", id="same config"),
        pytest.param("serve-config-1", "serve-config-2", _RUNNING, True, "doesn't match", id="config changed"),
        pytest.param("serve-config-1", "serve-config-1", {}, True, "No Serve application found", id="head crashed"),
        pytest.param("", "serve-config-1", _RUNNING, True, "Nothing has been cached", id="operator restarted"),
        pytest.param("a: 1", "a:  1", _RUNNING, True, "doesn't match", id="whitespace counts"),
    ],
)  # TestCheckIfNeedSubmitServeApplications
def test_need_submit(cached: str, new: str, apps: dict[str, Any], expected: bool, reason: str) -> None:
    submit, why = rs.need_submit_serve_applications(cached, new, apps)
    assert submit is expected
    assert reason in why


def _details(status: str, deployment: str, *, name: str = "serve-app-1") -> str:
    """A Ray 2.52 ``GET /api/serve/applications/`` body (ServeInstanceDetails), trimmed."""
    deployments = {"dep": {"name": "dep", "status": deployment, "message": "m", "replicas": []}}
    app = {"name": name, "route_prefix": "/", "docs_path": None, "status": status, "message": "",
           "last_deployed_time_s": 1.5, "deployments": deployments}  # fmt: skip
    return json.dumps({"deploy_mode": "MULTI_APP", "applications": {name: app}})


@pytest.mark.parametrize(
    ("body", "ready", "apps"),
    [
        pytest.param(
            _details("DEPLOYING", "UPDATING"),
            False,
            {
                "serve-app-1": {
                    "serveDeploymentStatuses": {"dep": {"status": "UPDATING", "message": "m"}},
                    "status": "DEPLOYING",
                }
            },
            id="deploying",
        ),
        pytest.param(
            _details("RUNNING", "HEALTHY"),
            True,
            {
                "serve-app-1": {
                    "serveDeploymentStatuses": {"dep": {"status": "HEALTHY", "message": "m"}},
                    "status": "RUNNING",
                }
            },
            id="running",
        ),
        pytest.param(_details("UNHEALTHY", "UNHEALTHY"), False, None, id="unhealthy"),
        pytest.param(_details("DEPLOY_FAILED", "UPDATING"), False, None, id="deploy failed"),
        pytest.param('{"applications":{}}', False, {}, id="no application"),
        pytest.param('{"applications":null}', False, {}, id="null applications"),
        pytest.param("null", False, {}, id="null body"),
        pytest.param(
            '{"applications":{"":{"status":"RUNNING","deployments":{}}}}',
            True,
            {"default": {"status": "RUNNING"}},
            id="unnamed app",
        ),
        pytest.param(
            '{"applications":{"a":{"Status":"RUNNING","MESSAGE":"hi"}}}',
            True,
            {"a": {"status": "RUNNING", "message": "hi"}},
            id="keys matched case-insensitively, as encoding/json",
        ),
        pytest.param('{"applications":{"a":null}}', False, {"a": {}}, id="null application"),
    ],
)  # TestGetAndCheckServeStatus
def test_serve_application_statuses(body: str, ready: bool, apps: dict[str, Any] | None) -> None:
    is_ready, statuses = rs.serve_application_statuses(body)
    assert is_ready is ready
    if apps is not None:
        assert statuses == apps


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        '{"applications":[]}',
        '{"applications":{"a":{"status":1}}}',
        '{"applications":{"a":{"deployments":[]}}}',
    ],
)
def test_serve_application_statuses_undecodable(body: str) -> None:
    with pytest.raises(rs.RayServiceBuildError) as error:
        rs.serve_application_statuses(body)
    assert str(error.value) == rs.GET_SERVE_STATUS_ERROR.format(
        err=f"failed to get serve details: GetServeDetails failed. Failed to unmarshal bytes: {body}"
    )


# --------------------------------------------------------------------------------------------------------------------
# Status
# --------------------------------------------------------------------------------------------------------------------


def _cond(type_: str, status: str, reason: str, *, time: str = "2026-01-01T00:00:00Z", gen: int = 0) -> dict[str, Any]:
    cond: dict[str, Any] = {
        "type": type_,
        "status": status,
        "lastTransitionTime": time,
        "reason": reason,
        "message": "",
    }
    if gen:
        cond["observedGeneration"] = gen
    return cond


@pytest.mark.parametrize(
    ("status", "type_", "expected_status", "expected_reason"),
    [
        pytest.param({}, "Ready", "False", "Initializing", id="initial RayServiceReady"),
        pytest.param({}, "UpgradeInProgress", "False", "Initializing", id="initial UpgradeInProgress"),
        pytest.param(
            {"conditions": [_cond("Ready", "False", "WhateverReason")]},
            "Ready",
            "False",
            "WhateverReason",
            id="Ready stays false unchanged",
        ),
        pytest.param(
            {"numServeEndpoints": 1, "conditions": [_cond("Ready", "True", "WhateverReason")]},
            "Ready",
            "True",
            "NonZeroServeEndpoints",
            id="Ready true always NonZeroServeEndpoints",
        ),
        pytest.param(
            {"numServeEndpoints": 1, "conditions": [_cond("Ready", "False", "WhateverReason")]},
            "Ready",
            "True",
            "NonZeroServeEndpoints",
            id="Ready becomes true",
        ),
        pytest.param(
            {"conditions": [_cond("Ready", "True", "NonZeroServeEndpoints")]},
            "Ready",
            "False",
            "ZeroServeEndpoints",
            id="Ready becomes false",
        ),
        pytest.param(
            {
                "conditions": [_cond("UpgradeInProgress", "False", "WhateverReason")],
                "activeServiceStatus": {"rayClusterName": "active-cluster"},
                "pendingServiceStatus": {"rayClusterName": "pending-cluster"},
            },
            "UpgradeInProgress",
            "True",
            "BothActivePendingClustersExist",
            id="both clusters",
        ),
        pytest.param(
            {
                "conditions": [_cond("UpgradeInProgress", "True", "BothActivePendingClustersExist")],
                "activeServiceStatus": {"rayClusterName": "active-cluster"},
            },
            "UpgradeInProgress",
            "False",
            "NoPendingCluster",
            id="only active",
        ),
        pytest.param(
            {"conditions": [_cond("UpgradeInProgress", "True", "BothActivePendingClustersExist")]},
            "UpgradeInProgress",
            "Unknown",
            "NoActiveCluster",
            id="no active, not initializing",
        ),
        pytest.param(
            {
                "conditions": [_cond("UpgradeInProgress", "False", "Initializing")],
                "pendingServiceStatus": {"rayClusterName": "pending-cluster"},
            },
            "UpgradeInProgress",
            "False",
            "Initializing",
            id="initializing kept",
        ),
        pytest.param(
            {
                "observedGeneration": 1,
                "conditions": [_cond("UpgradeInProgress", "False", "InitializingTimeout", gen=1)],
            },
            "UpgradeInProgress",
            "False",
            "InitializingTimeout",
            id="InitializingTimeout kept",
        ),
        pytest.param(
            {
                "observedGeneration": 1,
                "numServeEndpoints": 5,
                "activeServiceStatus": {"rayClusterName": "active"},
                "conditions": [_cond("Ready", "False", "Initializing", gen=1)],
            },
            "Ready",
            "True",
            "NonZeroServeEndpoints",
            id="normal once endpoints exist",
        ),
    ],
)  # TestCalculateConditions
def test_calculate_conditions(status: dict[str, Any], type_: str, expected_status: str, expected_reason: str) -> None:
    new, event = rs.calculate_conditions(status, annotations=None, now=NOW)
    cond = next(cond for cond in new["conditions"] if cond["type"] == type_)
    assert (cond["status"], cond["reason"]) == (expected_status, expected_reason)
    assert event is None


def test_calculate_conditions_exact_first_pass() -> None:
    new, _ = rs.calculate_conditions(
        {"observedGeneration": 3, "pendingServiceStatus": {"rayClusterName": "x"}}, annotations=None, now=NOW
    )
    initializing = {"status": "False", "observedGeneration": 3, "lastTransitionTime": STAMP, "reason": "Initializing"}
    assert new["conditions"] == [
        {"type": "Ready", **initializing, "message": "RayService is initializing"},
        {"type": "UpgradeInProgress", **initializing, "message": "RayService is initializing"},
    ]
    assert rs.service_status(new) == ""
    ready, _ = rs.calculate_conditions({**new, "numServeEndpoints": 2}, annotations=None, now=NOW + timedelta(hours=1))
    assert rs.service_status(ready) == "Running"
    assert ready["conditions"][0]["lastTransitionTime"] == "2026-01-02T04:04:05Z"  # status changed
    assert ready["conditions"][1]["lastTransitionTime"] == STAMP  # status unchanged


_DURATIONS = compare.load("duration")


def _go_timeout(text: str) -> int | None:
    """getInitializingTimeout from Go's answers (tests/vectors/duration.json): time.ParseDuration, else
    strconv.Atoi seconds (as a time.Duration, wrapping like int64), else none."""
    parsed = _DURATIONS.find(func="ParseDuration", input=text)
    if parsed["error"] is None:
        return int(parsed["output"])
    seconds = _DURATIONS.find(func="Atoi", input=text)
    if seconds["error"] is not None:
        return None
    return ((seconds["output"] * 10**9 + 2**63) % 2**64) - 2**63


@pytest.mark.parametrize("annotation", ["30m", "1800", "1h30m", "1.5s", "90", "abc", "", None])
def test_initializing_timeout(annotation: str | None) -> None:
    """getInitializingTimeout, against Go's time.ParseDuration / strconv.Atoi."""
    annotations = {} if annotation is None else {c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION: annotation}
    expected = None if not annotation else _go_timeout(annotation)
    assert rs.initializing_timeout(annotations) == expected


@pytest.mark.parametrize(
    ("elapsed", "reason", "fires"),
    [
        pytest.param(timedelta(seconds=9), "Initializing", False, id="before the timeout"),
        pytest.param(timedelta(seconds=10), "Initializing", True, id="at the timeout"),
        pytest.param(timedelta(seconds=12, microseconds=503400), "Initializing", True, id="after"),
        pytest.param(timedelta(hours=1), "ZeroServeEndpoints", False, id="not initializing"),
    ],
)  # TestMarkFailedIfInitializingTimedOut
def test_initializing_timeout_fires(elapsed: timedelta, reason: str, fires: bool) -> None:
    since = NOW - elapsed
    status = {
        "activeServiceStatus": {"rayClusterName": "a"},
        "pendingServiceStatus": {"rayClusterName": "p"},
        "conditions": [_cond("Ready", "False", reason, time=since.strftime("%Y-%m-%dT%H:%M:%SZ"))],
    }
    # KubeRay reads lastTransitionTime with second precision; the elapsed time keeps its fraction from `now`
    now = NOW if not elapsed.microseconds else since.replace(microsecond=0) + elapsed
    new, event = rs.calculate_conditions(
        status, annotations={c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION: "10s"}, now=now
    )
    ready = new["conditions"][0]
    if not fires:
        assert event is None
        assert ready["reason"] == reason
        return
    took = duration_string(int(elapsed.total_seconds() * 10**6) * 1000)
    assert ready["reason"] == "InitializingTimeout"
    assert ready["message"] == (
        f"RayService failed to become ready within the configured timeout of 10s. Time spent initializing: {took}"
    )
    assert event == f"RayService initializing timeout exceeded after {took} (configured timeout: 10s)"
    assert "rayClusterName" not in new["activeServiceStatus"]
    assert "rayClusterName" not in new["pendingServiceStatus"]
    assert rs.is_initializing_timeout(new)
    assert new["conditions"][1]["reason"] == "InitializingTimeout" or new["conditions"][1]["status"] == "Unknown"
    assert not rs.is_initializing_timeout(status)


def test_duration_strings_are_gos() -> None:
    """time.Duration.String, against Go's answers (tests/vectors/duration.json)."""
    cases = [case for case in _DURATIONS.cases if case["func"] == "String"]
    assert len(cases) > 1000
    assert [duration_string(case["input"]) for case in cases] == [case["output"] for case in cases]


def _slice(*endpoints: tuple[str | None, bool | None]) -> dict[str, Any]:
    out = []
    for uid, ready in endpoints:
        endpoint: dict[str, Any] = {"addresses": ["10.0.0.1"], "conditions": {} if ready is None else {"ready": ready}}
        if uid is not None:
            endpoint["targetRef"] = {"kind": "Pod", "uid": uid}
        out.append(endpoint)
    return {"endpoints": out}


@pytest.mark.parametrize(
    ("slices", "expected"),
    [
        pytest.param([], 0, id="no slice"),
        pytest.param([_slice(("a", True), ("b", True))], 2, id="two ready"),
        pytest.param([_slice(("a", True)), _slice(("a", True))], 1, id="one Pod in two slices (dual stack)"),
        pytest.param([_slice(("a", False), ("b", None))], 0, id="not ready, ready unset"),
        pytest.param([_slice((None, True), ("", True))], 0, id="no targetRef uid"),
        pytest.param([{"endpoints": None}], 0, id="null endpoints"),
    ],
)
def test_num_serve_endpoints(slices: list[dict[str, Any]], expected: int) -> None:
    assert rs.num_serve_endpoints(slices) == expected


def _svc(cluster: str) -> dict[str, Any]:
    return {"spec": {"selector": {"ray.io/cluster": cluster}}}


def test_promote() -> None:
    both = {"activeServiceStatus": {"rayClusterName": "old"}, "pendingServiceStatus": {"rayClusterName": "new", "x": 1}}
    new, serving = rs.promote(both, _svc("new"), _svc("new"))
    assert new == {"activeServiceStatus": {"rayClusterName": "new", "x": 1}, "pendingServiceStatus": {}}
    assert serving is True
    same, serving = rs.promote(both, _svc("old"), _svc("old"))
    assert same == both
    assert serving is False
    with pytest.raises(rs.RayServiceBuildError, match="not pointing to the same cluster"):
        rs.promote(both, _svc("old"), _svc("new"))
    with pytest.raises(rs.RayServiceBuildError, match="not equal to pendingCluster or activeCluster"):
        rs.promote(both, _svc("other"), _svc("other"))


_APPS = {"app": {"status": "RUNNING", "serveDeploymentStatuses": {"d": {"status": "HEALTHY"}}}}


@pytest.mark.parametrize(
    ("old", "new", "gate", "expected"),
    [
        pytest.param({}, {}, False, False, id="nothing"),
        pytest.param({}, {"serviceStatus": "Running"}, False, True, id="serviceStatus"),
        pytest.param({"numServeEndpoints": 1}, {"numServeEndpoints": 1}, False, False, id="same endpoints"),
        pytest.param({}, {"numServeEndpoints": 2}, False, True, id="endpoints"),
        pytest.param({}, {"conditions": [_cond("Ready", "False", "x")]}, False, True, id="conditions"),
        pytest.param(
            {"activeServiceStatus": {"rayClusterName": "a", "rayClusterStatus": {"state": "ready"}}},
            {"activeServiceStatus": {"rayClusterName": "a", "rayClusterStatus": {"state": "suspended"}}},
            False,
            False,
            id="rayClusterStatus alone",
        ),
        pytest.param(
            {"pendingServiceStatus": {"rayClusterName": "a"}}, {"pendingServiceStatus": {}}, False, True, id="name"
        ),
        pytest.param(
            {"activeServiceStatus": {"applicationStatuses": _APPS}},
            {"activeServiceStatus": {"applicationStatuses": copy.deepcopy(_APPS)}},
            False,
            False,
            id="same apps",
        ),
        pytest.param(
            {"activeServiceStatus": {"applicationStatuses": _APPS}},
            {"activeServiceStatus": {"applicationStatuses": {"app": {**_APPS["app"], "message": "m"}}}},
            False,
            True,
            id="app message",
        ),
        pytest.param(
            {"activeServiceStatus": {"applicationStatuses": _APPS}},
            {
                "activeServiceStatus": {
                    "applicationStatuses": {"app": {"status": "RUNNING", "serveDeploymentStatuses": {"d": {}}}}
                }
            },
            False,
            True,
            id="deployment status",
        ),
        pytest.param(
            {"activeServiceStatus": {"targetCapacity": 100}},
            {"activeServiceStatus": {"targetCapacity": 100}},
            True,
            True,
            id="[Q] incremental gate: pointers always differ",
        ),
        pytest.param(
            {"activeServiceStatus": {"targetCapacity": 100}},
            {"activeServiceStatus": {"targetCapacity": 50}},
            False,
            False,
            id="gate off: capacity ignored",
        ),
    ],
)  # TestInconsistentRayServiceStatuses
def test_status_needs_update(old: dict[str, Any], new: dict[str, Any], gate: bool, expected: bool) -> None:
    assert rs.status_needs_update(old, new, incremental_gate=gate) is expected


def test_pure() -> None:
    """No builder mutates its inputs."""
    service = _service(
        serveService={"metadata": {"labels": {"u": "l"}}, "spec": {"ports": [{"name": "serve", "port": 1}]}}
    )
    before = service.model_dump()
    cluster = _cluster()
    rs.rayservice_cluster(service, "x")
    rs.serve_service(service, cluster)
    rs.head_service(service, cluster, BuildOptions())
    status = {"conditions": [_cond("Ready", "True", "x")], "activeServiceStatus": {"rayClusterName": "a"}}
    snapshot = copy.deepcopy(status)
    rs.calculate_conditions(status, annotations=None, now=NOW)
    assert status == snapshot
    assert service.model_dump() == before

"""The Services raykube builds for a RayCluster match KubeRay v1.6.1's (``controllers/ray/common/service.go``).

Vectors: V1 ``ray-cluster.sample.yaml``, V4 ``ray-cluster.autoscaler.yaml``, V6 ``ray-cluster.custom-head-service.yaml``
and V10 ``ray-cluster.tpu-v6e-16-multihost.yaml`` (and its 256-chip sibling), from KubeRay's ``config/samples``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from raykube.api.resources import RayCluster
from raykube.builders import services
from raykube.builders.options import BuildOptions
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"
DEFAULT_LABELS = {
    "ray.io/cluster": "raycluster-kuberay",
    "ray.io/node-type": "head",
    "ray.io/identifier": "raycluster-kuberay-head",
    "app.kubernetes.io/name": "kuberay",
    "app.kubernetes.io/created-by": "kuberay-operator",
}


def load(sample: str, **metadata: Any) -> dict[str, Any]:
    documents = yaml.safe_load_all((SAMPLES / sample).read_text())
    document: dict[str, Any] = next(d for d in documents if isinstance(d, dict) and d.get("kind") == "RayCluster")
    document["metadata"].update({"uid": "uid-1", "namespace": "default", **metadata})
    return document


def cluster_of(document: dict[str, Any]) -> RayCluster:
    return RayCluster.model_validate(document)


def sample(name: str, **metadata: Any) -> RayCluster:
    return cluster_of(load(name, **metadata))


def tpu_v6e_16() -> RayCluster:
    """V10: ``ray-cluster.tpu-v6e-16-multihost.yaml``, one replica of 4 TPU hosts."""
    return cluster_of(load("ray-cluster.tpu-v6e-16-multihost.yaml"))


def port_table(service: dict[str, Any]) -> list[tuple[str, int, str | None]]:
    return [(p["name"], p["port"], p.get("appProtocol")) for p in service["spec"]["ports"]]


OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "name": "raycluster-kuberay",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


# --- head Service ---------------------------------------------------------------------------------------------------


def test_v1_head_service_is_headless_with_sorted_ports_and_labels_as_selector() -> None:
    cluster = sample("ray-cluster.sample.yaml")
    service = services.head_service(cluster, BuildOptions())
    assert service == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "raycluster-kuberay-head-svc",
            "namespace": "default",
            "labels": DEFAULT_LABELS,
            "ownerReferences": [OWNER],
        },
        "spec": {
            "selector": DEFAULT_LABELS,
            "ports": [
                {"name": "client", "port": 10001, "appProtocol": "tcp"},
                {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
                {"name": "gcs-server", "port": 6379, "appProtocol": "tcp"},
                {"name": "metrics", "port": 8080, "appProtocol": "tcp"},
            ],
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
        },
    }


def test_head_service_selector_is_the_three_identifying_labels() -> None:
    assert services.head_service_selector(sample("ray-cluster.sample.yaml")) == {
        "ray.io/cluster": "raycluster-kuberay",
        "ray.io/node-type": "head",
        "ray.io/identifier": "raycluster-kuberay-head",
    }


def test_v4_autoscaler_ports() -> None:
    service = services.head_service(sample("ray-cluster.autoscaler.yaml"), BuildOptions())
    assert port_table(service) == [
        ("client", 10001, "tcp"),
        ("dashboard", 8265, "tcp"),
        ("gcs", 6379, "tcp"),
        ("metrics", 8080, "tcp"),
    ]
    assert service["metadata"]["name"] == "raycluster-autoscaler-head-svc"


@pytest.mark.parametrize("name", ["ray-cluster.tpu-v6e-16-multihost.yaml", "ray-cluster.tpu-v6e-256-multihost.yaml"])
def test_v10_head_ports_include_serve_and_grpc(name: str) -> None:
    service = services.head_service(sample(name), BuildOptions())
    assert [name for name, _, _ in port_table(service)] == ["client", "dashboard", "gcs", "grpc", "metrics", "serve"]


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        pytest.param(
            None,
            [
                ("client", 10001),
                ("dashboard", 8265),
                ("gcs-server", 6379),
                ("metrics", 8080),
                ("serve", 8000),
            ],
            id="no-ports-give-defaults",
        ),
        pytest.param([{"containerPort": 7000}], [("7000-port", 7000), ("metrics", 8080)], id="unnamed-port"),
        pytest.param([{"containerPort": 9090, "name": "metrics"}], [("metrics", 9090)], id="own-metrics-port"),
        pytest.param(
            [{"containerPort": 1, "name": "a"}, {"containerPort": 2, "name": "a"}],
            [("a", 2), ("metrics", 8080)],
            id="last-duplicate-wins",
        ),
    ],
)
def test_head_service_ports(ports: list[dict[str, Any]] | None, expected: list[tuple[str, int]]) -> None:
    document = load("ray-cluster.sample.yaml")
    container = document["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    if ports is None:
        del container["ports"]
    else:
        container["ports"] = ports
    service = services.head_service(cluster_of(document), BuildOptions())
    assert [(name, port) for name, port, _ in port_table(service)] == expected


@pytest.mark.parametrize(
    ("service_type", "cluster_ip_service", "headless"),
    [
        (None, False, True),
        ("ClusterIP", False, True),
        ("ClusterIP", True, False),
        (None, True, False),
        ("NodePort", False, False),
        ("LoadBalancer", False, False),
    ],
)
def test_head_service_type_and_headlessness(service_type: str | None, cluster_ip_service: bool, headless: bool) -> None:
    document = load("ray-cluster.sample.yaml")
    if service_type:
        document["spec"]["headGroupSpec"]["serviceType"] = service_type
    spec = services.head_service(cluster_of(document), BuildOptions(head_cluster_ip_service=cluster_ip_service))["spec"]
    assert spec.get("type") == service_type
    assert ("clusterIP" in spec, "publishNotReadyAddresses" in spec) == (headless, headless)
    if headless:
        assert (spec["clusterIP"], spec["publishNotReadyAddresses"]) == ("None", True)


def test_head_service_annotations_and_app_name_from_the_head_template() -> None:
    document = load("ray-cluster.sample.yaml")
    document["spec"]["headServiceAnnotations"] = {"a": "1"}
    document["spec"]["headGroupSpec"]["template"]["metadata"] = {
        "labels": {"app.kubernetes.io/name": "mine", "other": "ignored"}
    }
    service = services.head_service(cluster_of(document), BuildOptions())
    assert service["metadata"]["annotations"] == {"a": "1"}
    assert service["metadata"]["labels"] == {**DEFAULT_LABELS, "app.kubernetes.io/name": "mine"}
    assert service["spec"]["selector"] == service["metadata"]["labels"]


def test_v6_custom_head_service() -> None:
    cluster = sample("ray-cluster.custom-head-service.yaml")
    service = services.head_service(cluster, BuildOptions())
    defaults = {
        "ray.io/cluster": "custom-head-svc",
        "ray.io/node-type": "head",
        "ray.io/identifier": "custom-head-svc-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert service["metadata"]["name"] == "custom-ray-head-service-name"
    assert service["metadata"]["namespace"] == "default"
    assert service["metadata"]["labels"] == {"custom-label": "custom-ray-head-service-label", **defaults}
    assert service["metadata"]["annotations"] == {"custom-annotation": "custom-ray-head-service-annotation"}
    assert service["metadata"]["ownerReferences"][0]["name"] == "custom-head-svc"
    assert service["spec"]["selector"] == defaults
    assert service["spec"]["type"] == "LoadBalancer"
    assert "clusterIP" not in service["spec"]
    assert "publishNotReadyAddresses" not in service["spec"]
    ports = service["spec"]["ports"]
    assert ports[0] == {"port": 12345, "targetPort": 12345, "name": "custom-ray-head-service-port"}
    assert sorted(port_table({"spec": {"ports": ports[1:]}})) == [
        ("client", 10001, "tcp"),
        ("dashboard", 8265, "tcp"),
        ("gcs-server", 6379, "tcp"),
        ("metrics", 8080, "tcp"),
    ]


def test_custom_head_service_merges() -> None:
    document = load("ray-cluster.custom-head-service.yaml")
    head = document["spec"]["headGroupSpec"]
    head["serviceType"] = "NodePort"
    head["headService"] = {
        "metadata": {
            "namespace": "elsewhere",
            "labels": {"ray.io/cluster": "spoofed", "keep": "me"},
            "annotations": {"same": "user", "mine": "kept"},
        },
        "spec": {"selector": {"spoofed": "yes"}, "clusterIP": "10.0.0.9"},
    }
    document["spec"]["headServiceAnnotations"] = {"same": "operator"}
    service = services.head_service(cluster_of(document), BuildOptions())
    metadata, spec = service["metadata"], service["spec"]
    assert metadata["name"] == "custom-head-svc-head-svc"  # defaulted
    assert metadata["namespace"] == "default"  # forced
    assert metadata["labels"]["ray.io/cluster"] == "custom-head-svc"  # KubeRay's labels win
    assert metadata["labels"]["keep"] == "me"
    assert metadata["annotations"] == {"same": "operator", "mine": "kept"}  # headServiceAnnotations win
    assert spec["selector"]["ray.io/cluster"] == "custom-head-svc"
    assert "spoofed" not in spec["selector"]
    assert spec["type"] == "NodePort"  # defaulted from serviceType
    assert spec["clusterIP"] == "10.0.0.9"  # the user's own fields stay
    assert [p["name"] for p in spec["ports"]] == ["client", "dashboard", "gcs-server", "metrics"]


def test_builders_do_not_mutate_the_cluster() -> None:
    cluster = sample("ray-cluster.custom-head-service.yaml", annotations={"ray.io/enable-serve-service": "true"})
    before = copy.deepcopy(cluster.model_dump())
    service = services.head_service(cluster, BuildOptions())
    service["metadata"]["labels"]["x"] = "y"
    service["spec"]["ports"].append({"name": "z"})
    services.headless_worker_service(cluster)
    services.serve_service(cluster)
    assert cluster.model_dump() == before


# --- headless worker Service ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cluster",
    [
        pytest.param(tpu_v6e_16(), id="v6e-16"),
        pytest.param(sample("ray-cluster.tpu-v6e-256-multihost.yaml"), id="v6e-256"),
    ],
)
def test_v10_headless_worker_service(cluster: RayCluster) -> None:
    assert services.headless_worker_service(cluster) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "raycluster-tpu-v6e-multihost-headless",
            "namespace": "default",
            "labels": {"ray.io/headless-worker-svc": "raycluster-tpu-v6e-multihost"},
            "ownerReferences": [{**OWNER, "name": "raycluster-tpu-v6e-multihost"}],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {"ray.io/cluster": "raycluster-tpu-v6e-multihost", "ray.io/node-type": "worker"},
            "type": "ClusterIP",
            "publishNotReadyAddresses": True,
        },
    }


def test_no_headless_service_for_single_host_groups() -> None:
    assert services.headless_worker_service(sample("ray-cluster.sample.yaml")) is None
    assert services.headless_worker_service(sample("ray-cluster.tpu-v6e-singlehost.yaml")) is None


def test_a_suspended_multi_host_group_still_gets_the_headless_service() -> None:
    document = load("ray-cluster.tpu-v6e-256-multihost.yaml")
    document["spec"]["workerGroupSpecs"][0]["suspend"] = True
    assert services.headless_worker_service(cluster_of(document)) is not None


# --- serve Service --------------------------------------------------------------------------------------------------

ENABLE = {"annotations": {"ray.io/enable-serve-service": "true"}}


def test_serve_service_only_with_the_annotation() -> None:
    assert services.serve_service(sample("ray-cluster.tpu-v6e-256-multihost.yaml")) is None
    off = sample("ray-cluster.tpu-v6e-256-multihost.yaml", annotations={"ray.io/enable-serve-service": "false"})
    assert services.serve_service(off) is None


def test_serve_service() -> None:
    cluster = sample("ray-cluster.tpu-v6e-256-multihost.yaml", **ENABLE)
    assert services.serve_service(cluster) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "raycluster-tpu-v6e-multihost-serve-svc",
            "namespace": "default",
            "labels": {
                "ray.io/originated-from-cr-name": "raycluster-tpu-v6e-multihost",
                "ray.io/originated-from-crd": "RayCluster",
                "ray.io/serve": "raycluster-tpu-v6e-multihost-serve",
            },
            "ownerReferences": [{**OWNER, "name": "raycluster-tpu-v6e-multihost"}],
        },
        "spec": {
            "selector": {"ray.io/cluster": "raycluster-tpu-v6e-multihost"},
            "ports": [{"name": "serve", "port": 8000}],
        },
    }


def test_serve_service_type_follows_the_head_service_type() -> None:
    document = load("ray-cluster.tpu-v6e-256-multihost.yaml", **ENABLE)
    document["spec"]["headGroupSpec"]["serviceType"] = "NodePort"
    service = services.serve_service(cluster_of(document))
    assert service is not None
    assert service["spec"]["type"] == "NodePort"


def test_serve_service_takes_serve_and_serve_prefixed_ports() -> None:
    """v1.6.1 ``isServingPort`` (kuberay#4558; ``TestBuildServeServiceWithGrpcPort`` in common/service_test.go)."""
    document = load("ray-cluster.tpu-v6e-256-multihost.yaml", **ENABLE)
    ports = document["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]
    ports += [{"containerPort": 9000, "name": "serve-grpc"}, {"containerPort": 9001, "name": "server"}]
    service = services.serve_service(cluster_of(document))
    assert service is not None
    assert service["spec"]["ports"] == [{"name": "serve", "port": 8000}, {"name": "serve-grpc", "port": 9000}]


def test_serve_service_of_a_head_with_only_a_serve_prefixed_port() -> None:
    document = load("ray-cluster.sample.yaml", **ENABLE)
    document["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"].append(
        {"containerPort": 9000, "name": "serve-grpc"}
    )
    service = services.serve_service(cluster_of(document))
    assert service is not None
    assert service["spec"]["ports"] == [{"name": "serve-grpc", "port": 9000}]


def test_serve_service_without_a_serve_port_is_none_and_enabled() -> None:
    cluster = sample("ray-cluster.sample.yaml", **ENABLE)
    assert services.serve_service_enabled(cluster)
    assert services.serve_service(cluster) is None
    assert "port named 'serve'" in services.SERVE_PORT_MISSING_MESSAGE


def test_serve_service_of_a_head_without_ports_uses_the_default_serve_port() -> None:
    document = load("ray-cluster.sample.yaml", **ENABLE)
    del document["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]
    service = services.serve_service(cluster_of(document))
    assert service is not None
    assert service["spec"]["ports"] == [{"name": "serve", "port": 8000}]

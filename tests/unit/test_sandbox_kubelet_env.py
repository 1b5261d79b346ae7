"""The process runtime builds a container's environment and command line as the kubelet does."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import pytest

from raykube.sandbox.kubelet.env import (
    ContainerConfigError,
    NodeCapacity,
    command_line,
    container_env,
    expand,
    field_value,
    format_map,
    quantity,
    service_env,
)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


CONFIGMAPS = {"settings": {"data": {"MODE": "fast", "LEVEL": "3"}}}
SECRETS = {"creds": {"data": {"USER": _b64("minio"), "PASSWORD": _b64("minio123")}}}


async def _configmap(namespace: str, name: str) -> Mapping[str, Any] | None:
    assert namespace == "ns"
    return CONFIGMAPS.get(name)


async def _secret(namespace: str, name: str) -> Mapping[str, Any] | None:
    assert namespace == "ns"
    return SECRETS.get(name)


POD: dict[str, Any] = {
    "metadata": {
        "name": "head-abc",
        "namespace": "ns",
        "uid": "u-1",
        "labels": {"ray.io/cluster": "demo", "app": 'a"b'},
        "annotations": {"note": "x"},
    },
    "spec": {
        "nodeName": "process-node-0",
        "serviceAccountName": "default",
        "containers": [{"name": "ray", "resources": {"limits": {"cpu": "1500m", "memory": "2Gi"}}}],
    },
}


async def _env(container: dict[str, Any], services: Mapping[str, str] | None = None) -> dict[str, str]:
    return await container_env(
        POD,
        container,
        pod_ip="10.244.241.7",
        host_ip="127.0.0.1",
        configmap=_configmap,
        secret=_secret,
        services=services or {},
        node=NodeCapacity(cpu="8", memory="32Gi"),
    )


async def test_env_from_then_env_with_expansion_field_and_resource_refs() -> None:
    container = {
        "name": "ray",
        "resources": {"limits": {"cpu": "1500m", "memory": "2Gi"}},
        "envFrom": [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds"}, "prefix": "S3_"}],
        "env": [
            {"name": "MODE", "value": "override-$(LEVEL)"},
            {"name": "ESCAPED", "value": "$$(LEVEL) $(UNKNOWN)"},
            {"name": "CLUSTER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {"name": "MCPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}},
            {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
            {"name": "REQ_CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu"}}},
            {"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "USER"}}},
            {"name": "EMPTY"},
        ],
    }

    env = await _env(container, services={"KUBERNETES_SERVICE_HOST": "10.96.0.1", "LEVEL": "from-service"})

    assert env["MODE"] == "override-3"  # env wins over envFrom; $(VAR) sees envFrom before services
    assert env["LEVEL"] == "3"
    assert env["ESCAPED"] == "$(LEVEL) $(UNKNOWN)"
    assert env["S3_USER"] == "minio"
    assert env["S3_PASSWORD"] == "minio123"  # noqa: S105 - the test Secret's value
    assert env["CLUSTER"] == "demo"
    assert env["POD_IP"] == "10.244.241.7"
    assert env["NODE"] == "process-node-0"
    assert env["CPU"] == "2"  # rounded up
    assert env["MCPU"] == "1500"
    assert env["MEM_MI"] == "2048"
    assert env["REQ_CPU"] == "2"  # requests default to limits
    assert env["KEY"] == "minio"
    assert env["EMPTY"] == ""
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"


@pytest.mark.parametrize(
    ("container", "message"),
    [
        ({"envFrom": [{"secretRef": {"name": "nope"}}]}, 'secret "nope" not found'),
        ({"envFrom": [{"configMapRef": {"name": "nope"}}]}, 'configmap "nope" not found'),
        (
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "MISSING"}}}]},
            "couldn't find key MISSING in ConfigMap ns/settings",
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "MISSING"}}}]},
            "couldn't find key MISSING in Secret ns/creds",
        ),
        (
            {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "K"}}}]},
            'secret "nope" not found',
        ),
    ],
)
async def test_missing_references_give_the_kubelets_message(container: dict[str, Any], message: str) -> None:
    with pytest.raises(ContainerConfigError) as raised:
        await _env({"name": "ray", **container})
    assert str(raised.value) == message


async def test_optional_references_are_skipped() -> None:
    env = await _env(
        {
            "name": "ray",
            "envFrom": [{"secretRef": {"name": "nope", "optional": True}}],
            "env": [
                {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "NO", "optional": True}}},
                {"name": "B", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "K", "optional": True}}},
            ],
        }
    )
    assert "A" not in env and "B" not in env


def test_expand_follows_kubernetes_rules() -> None:
    values = {"A": "1", "B": "two"}
    assert expand("$(A)-$(B)", values.get) == "1-two"
    assert expand("$$(A)", values.get) == "$(A)"
    assert expand("$(C)", values.get) == "$(C)"
    assert expand("$A $", values.get) == "$A $"
    assert expand("$(A", values.get) == "$(A"


def test_command_line_picks_command_args_and_image_defaults() -> None:
    env = {"PORT": "6379"}
    assert command_line({"command": ["ray"], "args": ["start", "--port=$(PORT)"]}, env, [], ["bash"]) == [
        "ray",
        "start",
        "--port=6379",
    ]
    assert command_line({"args": ["-c", "true"]}, env, ["/bin/sh"], ["default"]) == ["/bin/sh", "-c", "true"]
    assert command_line({}, env, [], ["bash"]) == ["bash"]


def test_downward_api_fields() -> None:
    assert field_value(POD, "metadata.name", pod_ip="", host_ip="") == "head-abc"
    assert field_value(POD, "metadata.uid", pod_ip="", host_ip="") == "u-1"
    assert field_value(POD, "status.hostIP", pod_ip="", host_ip="127.0.0.1") == "127.0.0.1"
    assert field_value(POD, "metadata.labels", pod_ip="", host_ip="") == 'app="a\\"b"\nray.io/cluster="demo"'
    assert format_map({}) == ""
    # fmt's %q, as fieldpath.FormatMap writes it: controls and non-printable characters escaped, printable kept
    assert format_map({"a": "x\ry\x00\u00ad\u00e9"}) == 'a="x\\ry\\x00\\u00ad\u00e9"'
    with pytest.raises(ContainerConfigError, match="unsupported fieldPath"):
        field_value(POD, "spec.nope", pod_ip="", host_ip="")


def test_quantities() -> None:
    assert quantity("500m") == quantity("0.5")
    assert quantity("2Gi") == 2 * 1024**3
    assert quantity("1k") == 1000
    with pytest.raises(ValueError, match="not a quantity"):
        quantity("lots")


def test_service_links_as_the_kubelet_writes_them() -> None:
    services = [
        {
            "metadata": {"namespace": "default", "name": "kubernetes"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]},
        },
        {
            "metadata": {"namespace": "ns", "name": "my-svc"},
            "spec": {"clusterIP": "10.96.3.4", "ports": [{"port": 80}, {"name": "metrics", "port": 8080}]},
        },
        {"metadata": {"namespace": "ns", "name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 1}]}},
        {"metadata": {"namespace": "other", "name": "elsewhere"}, "spec": {"clusterIP": "10.96.9.9", "ports": []}},
    ]
    env = service_env(services, "ns", enable_service_links=True)
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert env["MY_SVC_SERVICE_HOST"] == "10.96.3.4"
    assert env["MY_SVC_SERVICE_PORT"] == "80"
    assert env["MY_SVC_SERVICE_PORT_METRICS"] == "8080"
    assert env["MY_SVC_PORT"] == "tcp://10.96.3.4:80"
    assert env["MY_SVC_PORT_8080_TCP_ADDR"] == "10.96.3.4"
    assert not any(k.startswith(("HEADLESS", "ELSEWHERE")) for k in env)
    assert set(service_env(services, "ns", enable_service_links=False)) == {
        k for k in env if k.startswith("KUBERNETES")
    }

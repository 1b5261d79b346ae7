"""``tlsOptions`` validation as KubeRay v1.7.0's ``validateTLSOptions`` (VAL-6): with TLS on, the operator-managed
env vars and the ``ray-tls`` mount are refused in the head's and workers' Ray containers and in
``autoscalerOptions``; with the gate off, only the gate is named."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api.validation import validate_raycluster

GATE = {"RayClusterMTLS": True}
MANAGED = "- the operator manages TLS configuration automatically"


def cluster(*, head: dict[str, Any] | None = None, worker: dict[str, Any] | None = None,
            autoscaler: dict[str, Any] | None = None, enabled: bool = True) -> dict[str, Any]:  # fmt: skip
    ray = {"name": "ray", "image": "rayproject/ray:2.52.0"}
    spec: dict[str, Any] = {
        "rayVersion": "2.52.0",
        "tlsOptions": {"enabled": enabled},
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{**ray, **(head or {})}]}}},
        "workerGroupSpecs": [
            {"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 3, "rayStartParams": {},
             "template": {"spec": {"containers": [{**ray, **(worker or {})}]}}},
        ],
    }  # fmt: skip
    if autoscaler is not None:
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = autoscaler
    return {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "tls", "namespace": "ns"},
            "spec": spec}  # fmt: skip


def messages(obj: dict[str, Any], gates: dict[str, bool] = GATE) -> list[str]:
    return [e.message for e in validate_raycluster(obj, features=gates)]


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (cluster(head={"env": [{"name": "RAY_USE_TLS", "value": "1"}]}),
         f"cannot set RAY_USE_TLS environment variable in head Pod when tlsOptions is set {MANAGED}"),
        (cluster(worker={"env": [{"name": "RAY_TLS_CA_CERT", "value": "x"}]}),
         f'cannot set RAY_TLS_CA_CERT environment variable in worker group "small" when tlsOptions is set {MANAGED}'),
        (cluster(head={"volumeMounts": [{"name": "ray-tls", "mountPath": "/certs"}]}),
         f'cannot use volume mount named "ray-tls" in head Pod when tlsOptions is set {MANAGED}'),
        (cluster(worker={"volumeMounts": [{"name": "mine", "mountPath": "/etc/ray/tls"}]}),
         f'cannot use volume mount at path "/etc/ray/tls" in worker group "small" when tlsOptions is set {MANAGED}'),
        (cluster(autoscaler={"env": [{"name": "RAY_TLS_SERVER_KEY", "value": "x"}]}),
         "cannot set RAY_TLS_SERVER_KEY environment variable in autoscalerOptions.env when tlsOptions is set - the "
         "operator manages TLS configuration for the autoscaler automatically"),
        (cluster(autoscaler={"volumeMounts": [{"name": "x", "mountPath": "/etc/ray/tls"}]}),
         f'cannot use volume mount at path "/etc/ray/tls" in autoscalerOptions.volumeMounts when tlsOptions is set '
         f"{MANAGED}"),
    ],
    ids=["head-env", "worker-env", "head-mount-name", "worker-mount-path", "autoscaler-env", "autoscaler-mount"],
)  # fmt: skip
def test_operator_managed_tls_settings_are_refused(obj: dict[str, Any], message: str) -> None:
    assert messages(obj) == [message]


def test_tls_disabled_or_no_conflict_passes() -> None:
    env = {"env": [{"name": "RAY_USE_TLS", "value": "1"}]}
    assert messages(cluster(head=env, enabled=False)) == []
    assert messages(cluster()) == []


def test_without_the_gate_only_the_gate_is_named() -> None:
    obj = cluster(head={"env": [{"name": "RAY_USE_TLS", "value": "1"}]})
    assert messages(obj, {}) == ["spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"]

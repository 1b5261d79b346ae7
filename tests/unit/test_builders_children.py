"""Builders of the objects around the Pods: autoscaler RBAC, auth Secret, Ingress, Redis cleanup Job."""

from __future__ import annotations

from typing import Any

from raykube.api.resources import RayCluster
from raykube.builders import children, pods
from raykube.builders.options import BuildOptions


def cluster(**spec: Any) -> RayCluster:
    template = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0",
                                         "ports": [{"name": "dashboard", "containerPort": 8265}]}]}}  # fmt: skip
    return RayCluster.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u", "annotations": spec.pop("annotations", {})},
            "spec": {"rayVersion": "2.52.0", "headGroupSpec": {"template": template}, **spec},
        }
    )


def test_autoscaler_rbac_objects_are_named_after_the_cluster_and_owned_by_it() -> None:
    c = cluster(enableInTreeAutoscaling=True)
    sa, role, binding = (children.autoscaler_service_account(c), children.autoscaler_role(c),
                         children.autoscaler_role_binding(c))  # fmt: skip
    assert [o["metadata"]["name"] for o in (sa, role, binding)] == ["c", "c", "c"]
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == "u" for o in (sa, role, binding))
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "c", "namespace": "ns"}]
    assert {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]} in role["rules"]
    assert pods.head_pod(c, BuildOptions())["spec"]["serviceAccountName"] == sa["metadata"]["name"]


def test_the_auth_secret_only_without_a_named_secret() -> None:
    assert children.needs_auth_secret(cluster(authOptions={"mode": "token"}))
    assert not children.needs_auth_secret(cluster(authOptions={"mode": "token", "secretName": "mine"}))
    assert not children.needs_auth_secret(cluster(authOptions={"mode": "disabled"}))
    secret = children.auth_secret(cluster(authOptions={"mode": "token"}), "tok")
    assert secret["stringData"] == {"auth_token": "tok"}
    assert secret["metadata"]["labels"] == {"ray.io/cluster": "c"}


def test_the_ingress_points_at_the_dashboard_and_takes_the_class_from_the_annotation() -> None:
    c = cluster(annotations={"kubernetes.io/ingress.class": "nginx", "team": "ml"})
    assert children.head_ingress(c) is None  # enableIngress is off
    c.spec.head_group_spec.enable_ingress = True  # type: ignore[union-attr]
    ingress = children.head_ingress(c)
    assert ingress is not None
    assert ingress["metadata"]["name"] == "c-head-ingress"
    assert ingress["metadata"]["annotations"] == {"team": "ml"}
    assert ingress["spec"]["ingressClassName"] == "nginx"
    path = ingress["spec"]["rules"][0]["http"]["paths"][0]
    assert path == {"path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "c-head-svc", "port": {"number": 8265}}}}  # fmt: skip
    assert not children.ingress_needs_update(ingress, ingress)
    changed = {**ingress, "metadata": {**ingress["metadata"], "labels": {}}}
    assert children.ingress_needs_update(changed, ingress)


def test_the_cleanup_job_is_built_from_the_head_pod() -> None:
    c = cluster(gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    assert children.gcs_ft_enabled(c)
    job = children.redis_cleanup_job(c, pods.head_pod(c, BuildOptions()))
    assert job["metadata"]["name"] == "c-redis-cleanup"
    assert job["spec"]["backoffLimit"] == 0
    template = job["spec"]["template"]
    assert template["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
    [container] = template["spec"]["containers"]
    assert "readinessProbe" not in container and "livenessProbe" not in container
    assert container["resources"]["limits"] == {"cpu": "200m", "memory": "256Mi"}
    env = {e["name"] for e in container["env"]}
    assert {"RAY_REDIS_ADDRESS", "RAY_redis_db_connect_retries", "RAY_external_storage_namespace"} <= env
    assert template["spec"]["restartPolicy"] == "Never"

"""Builders of the objects around the Pods: autoscaler RBAC, auth Secret, Ingress, Redis cleanup Job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

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
    assert children.updated_ingress(ingress, ingress) is None
    changed = {**ingress, "metadata": {**ingress["metadata"], "labels": {}}}
    assert children.updated_ingress(changed, ingress) is not None


def _ingress_cluster(options: dict[str, Any] | None, annotations: dict[str, str] | None = None) -> RayCluster:
    body = cluster(annotations=annotations or {}).to_wire()
    body["spec"]["headGroupSpec"]["enableIngress"] = True
    if options is not None:
        body["spec"]["headGroupSpec"]["ingressOptions"] = options
    return RayCluster.model_validate(body)


_TLS = [{"hosts": ["ray.example.test"], "secretName": "ray-tls"}]


@pytest.mark.parametrize(
    ("options", "annotations", "rule", "spec_extra"),
    [
        pytest.param(None, None, {"path": "/", "pathType": "Prefix"}, {}, id="defaults: / Prefix, no host, no tls"),
        pytest.param({}, None, {"path": "/", "pathType": "Prefix"}, {}, id="empty options: the same"),
        pytest.param(
            {"path": "/ray", "pathType": "Exact", "host": "ray.example.test", "tls": _TLS},
            None,
            {"path": "/ray", "pathType": "Exact", "host": "ray.example.test"},
            {"tls": _TLS},
            id="every option",
        ),
        pytest.param(
            {"pathType": "ImplementationSpecific"},
            None,
            {"path": "/", "pathType": "ImplementationSpecific"},
            {},
            id="pathType alone",
        ),
        pytest.param({"tls": []}, None, {"path": "/", "pathType": "Prefix"}, {}, id="empty tls: none"),
        pytest.param(
            None,
            {"kubernetes.io/ingress.class": ""},
            {"path": "/", "pathType": "Prefix"},
            {"ingressClassName": ""},
            id="an empty class annotation still sets the class (Go: the key is there)",
        ),
    ],
)  # KubeRay v1.7.0 BuildIngressForHeadService
def test_the_ingress_follows_ingress_options(
    options: dict[str, Any] | None,
    annotations: dict[str, str] | None,
    rule: dict[str, Any],
    spec_extra: dict[str, Any],
) -> None:
    ingress = children.head_ingress(_ingress_cluster(options, annotations))
    assert ingress is not None
    backend = {"service": {"name": "c-head-svc", "port": {"number": 8265}}}
    http_rule: dict[str, Any] = {"http": {"paths": [{"path": rule["path"], "pathType": rule["pathType"],
                                                      "backend": backend}]}}  # fmt: skip
    if "host" in rule:
        http_rule["host"] = rule["host"]
    assert ingress["spec"] == {"rules": [http_rule], **spec_extra}
    assert "kubernetes.io/ingress.class" not in ingress["metadata"]["annotations"]
    if options and options.get("tls"):
        assert ingress["spec"]["tls"] is not options["tls"]  # a copy


def _v16_ingress(c: RayCluster, **spec: Any) -> dict[str, Any]:
    """The dashboard Ingress as KubeRay v1.6.x made it, as read back from the API server."""
    ingress = children.head_ingress(c)
    assert ingress is not None
    live: dict[str, Any] = json.loads(json.dumps(ingress))
    live["metadata"].update(resourceVersion="7", uid="ingress-uid", finalizers=["example.com/keep"])
    path = live["spec"]["rules"][0]["http"]["paths"][0]
    path.update(path="/c/(.*)", pathType="Exact")
    live["spec"].update(spec)
    live["status"] = {"loadBalancer": {}}
    return live


def test_updated_ingress_rewrites_a_v16_ingress_and_keeps_the_rest_of_the_live_object() -> None:
    c = _ingress_cluster(None, {"team": "ml"})
    desired = children.head_ingress(c)
    assert desired is not None
    live = _v16_ingress(c)
    body = children.updated_ingress(live, desired)
    assert body is not None
    assert body["spec"] == desired["spec"]
    assert body["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/"
    assert body["metadata"]["resourceVersion"] == "7"  # an Update of the live object
    assert body["metadata"]["finalizers"] == ["example.com/keep"]
    assert body["status"] == {"loadBalancer": {}}
    assert live["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/c/(.*)"  # not mutated
    assert children.updated_ingress(body, desired) is None  # in step after the update


@pytest.mark.parametrize(
    ("change", "desired_class", "expected"),
    [
        pytest.param(lambda live: None, None, None, id="in step"),
        pytest.param(
            lambda live: live["metadata"]["labels"].update(extra="x"), None, "labels", id="a label added by hand"
        ),
        pytest.param(
            lambda live: live["metadata"].update(annotations={"team": "ml", "x": "y"}),
            None,
            "annotations",
            id="an annotation added by hand",
        ),
        pytest.param(lambda live: live["metadata"].pop("annotations"), None, "annotations", id="annotations gone"),
        pytest.param(
            lambda live: live["spec"].update(ingressClassName="nginx"),
            None,
            None,
            id="no class desired: the live one (DefaultIngressClass) is adopted",
        ),
        pytest.param(
            lambda live: live["spec"].update(ingressClassName="nginx"),
            "traefik",
            "spec",
            id="another class desired: replaced",
        ),
        pytest.param(lambda live: live["spec"].update(tls=_TLS), None, "spec", id="tls added by hand: removed"),
    ],
)  # KubeRay v1.7.0 ingressNeedsUpdate
def test_updated_ingress(change: Any, desired_class: str | None, expected: str | None) -> None:
    annotations = {"team": "ml"}
    if desired_class is not None:
        annotations["kubernetes.io/ingress.class"] = desired_class
    c = _ingress_cluster(None, annotations)
    desired = children.head_ingress(c)
    assert desired is not None
    live = json.loads(json.dumps(desired))
    live["metadata"]["resourceVersion"] = "3"
    live["spec"].pop("ingressClassName", None)
    if desired_class is not None:
        live["spec"]["ingressClassName"] = desired_class
    change(live)
    body = children.updated_ingress(live, desired)
    if expected is None:
        assert body is None
        return
    assert body is not None
    assert body["metadata"]["labels"] == desired["metadata"]["labels"]
    assert body["metadata"].get("annotations", {}) == desired["metadata"]["annotations"]
    assert body["spec"] == desired["spec"]


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


def test_the_cleanup_job_carries_the_default_pod_metadata_and_not_create_head_pods_additions() -> None:
    """KubeRay v1.7.0 buildRedisCleanupJob builds on buildHeadPod: the operator's default Pod labels and annotations
    (only where missing), node type redis-cleanup; not createHeadPod's Recreate hash and version annotations, nor the
    batch scheduler's metadata."""
    c = cluster(gcsFaultToleranceOptions={"redisAddress": "redis:6379"})
    options = BuildOptions(
        default_pod_labels={"team": "ml", "ray.io/node-type": "nope"},
        default_pod_annotations={"scrape": "true"},
        batch_scheduler="volcano",
    )
    job = children.redis_cleanup_job(c, pods.build_head_pod(c, options))
    for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
        assert meta["labels"]["team"] == "ml"
        assert meta["labels"]["ray.io/node-type"] == "redis-cleanup"
        assert meta["annotations"]["scrape"] == "true"
        assert "ray.io/kuberay-version" not in meta["annotations"]
        assert "ray.io/upgrade-strategy-recreate-hash" not in meta["annotations"]
    assert "schedulerName" not in job["spec"]["template"]["spec"]
    head = pods.head_pod(c, options)  # what createHeadPod POSTs has them
    assert head["spec"]["schedulerName"] == "volcano"
    assert head["metadata"]["annotations"]["ray.io/kuberay-version"]


STUB = """
import json, os
def cleanup_redis_storage(**kwargs):
    with open(os.environ["SEEN"], "w") as out:
        json.dump(kwargs, out)
    return os.environ.get("ANSWER") == "True"
"""


@pytest.mark.parametrize(
    ("env", "answer", "expected"),
    [
        # no password anywhere: '' (Ray's function takes a str; None raised a TypeError, the Job failed, keys stayed)
        ({"RAY_REDIS_ADDRESS": "redis:6379"}, "True", {"host": "redis", "port": 6379, "password": ""}),
        ({"RAY_REDIS_ADDRESS": "redis://:pw@redis:6379,other:1"}, "True", {"port": 6379, "password": "pw"}),
        (
            {"RAY_REDIS_ADDRESS": "rediss://redis:6380", "REDIS_PASSWORD": "env"},
            "True",
            {"use_ssl": True, "password": "env"},
        ),
        ({"RAY_REDIS_ADDRESS": "redis:6379", "REDIS_USERNAME": "u"}, "True", {"username": "u"}),
        ({"RAY_REDIS_ADDRESS": "redis:6379"}, "False", {}),
    ],
)
def test_the_cleanup_command_is_kuberays_and_runs(
    tmp_path: Path, env: dict[str, str], answer: str, expected: dict[str, Any]
) -> None:
    """KubeRay v1.7.0's cleanup argument, run by bash as the Job's container runs it, against a stand-in for Ray's
    cleanup_redis_storage: what it is called with, and exit 1 when it answers False."""
    options: dict[str, Any] = {"redisAddress": env["RAY_REDIS_ADDRESS"]}
    c = cluster(gcsFaultToleranceOptions=options)
    head = pods.head_pod(c, BuildOptions())
    if "REDIS_USERNAME" in env:
        head["spec"]["containers"][0]["env"].append({"name": "REDIS_USERNAME", "value": env["REDIS_USERNAME"]})
    [container] = children.redis_cleanup_job(c, head, login_shell=True)["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["/bin/bash", "-cl", "--"]
    [argument] = container["args"]
    assert argument.startswith('echo "To get more information about manually deleting the storage namespace')
    assert ("username=os.getenv('REDIS_USERNAME', parsed.username)" in argument) == ("REDIS_USERNAME" in env)
    package = tmp_path / "ray" / "_private"
    package.mkdir(parents=True)
    (tmp_path / "ray" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "gcs_utils.py").write_text(STUB)
    seen = tmp_path / "seen.json"
    run_env = {
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(tmp_path),
        "SEEN": str(seen),
        "ANSWER": answer,
        "RAY_external_storage_namespace": "ns-1",
        **env,
    }
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    done = subprocess.run(["/bin/bash", "-c", "--", argument], env=run_env, capture_output=True, text=True, check=False)
    assert done.returncode == (0 if answer == "True" else 1), done.stderr
    called = json.loads(seen.read_text())
    assert called["storage_namespace"] == "ns-1"
    assert {k: called[k] for k in expected} == expected

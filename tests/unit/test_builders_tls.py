"""mTLS in the Ray Pods and the cert-manager objects behind it, as KubeRay v1.7.0 builds them (POD-8, RC-7, RC-11;
``common/pod.go`` configureTLS/SetContainerTLSConfig, ``raycluster_mtls_controller.go``, ``buildRedisCleanupJob``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.resources import RayCluster
from raykube.builders import certificates as certs
from raykube.builders import children, pods, tls
from raykube.builders.options import BuildOptions

NS, NAME, UID = "team", "tls", "0123456789abcdef"
ON = BuildOptions(features={**c.FEATURE_GATE_DEFAULTS, c.GATE_RAYCLUSTER_MTLS: True})
TLS_ENV = [
    {"name": "RAY_USE_TLS", "value": "1"},
    {"name": "RAY_TLS_SERVER_CERT", "value": "/etc/ray/tls/tls.crt"},
    {"name": "RAY_TLS_SERVER_KEY", "value": "/etc/ray/tls/tls.key"},
    {"name": "RAY_TLS_CA_CERT", "value": "/etc/ray/tls/ca.crt"},
]
TLS_MOUNT = {"name": "ray-tls", "mountPath": "/etc/ray/tls", "readOnly": True}


def cluster(*, enabled: bool | None = True, autoscaler: dict[str, Any] | None = None, **head_extra: Any) -> RayCluster:
    ray = {"name": "ray-head", "image": "rayproject/ray:2.52.0", "imagePullPolicy": "Always",
           "securityContext": {"runAsUser": 1000}, **head_extra}  # fmt: skip
    spec: dict[str, Any] = {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [ray]}}},
        "workerGroupSpecs": [
            {"groupName": "small", "replicas": 1, "minReplicas": 0, "maxReplicas": 3, "rayStartParams": {},
             "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}},
        ],
    }  # fmt: skip
    if enabled is not None:
        spec["tlsOptions"] = {"enabled": enabled}
    if autoscaler is not None:
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = autoscaler
    body = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": NAME, "namespace": NS, "uid": UID}, "spec": spec}  # fmt: skip
    return RayCluster.model_validate(body)


def _by_name(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(i for i in items if i.get("name") == name)


def test_head_pod_mounts_the_head_secret_sets_ray_tls_env_and_waits_for_its_ip_first() -> None:
    pod = pods.head_pod(cluster(), ON)
    spec = pod["spec"]
    assert _by_name(spec["volumes"], "ray-tls") == {"name": "ray-tls", "secret": {"secretName": "ray-head-secret-tls"}}
    ray = spec["containers"][0]
    env = [e for e in ray["env"] if e["name"].startswith("RAY_USE_TLS") or e["name"].startswith("RAY_TLS_")]
    assert env == TLS_ENV
    assert TLS_MOUNT in ray["volumeMounts"]
    wait = spec["initContainers"][0]
    assert wait["name"] == "wait-for-tls-ip-san"
    assert wait["image"] == "rayproject/ray:2.52.0" and wait["imagePullPolicy"] == "Always"
    assert wait["securityContext"] == {"runAsUser": 1000}
    assert wait["command"] == ["sh", "-c"]
    script = wait["args"][0]
    assert script.startswith('CERT="/etc/ray/tls/tls.crt"\nif [ -z "${POD_IP}" ]; then\n')
    assert 'grep -qE "IP Address:${POD_IP}([^0-9.]|$)"' in script
    assert 'echo "openssl not found; cannot verify IP SAN" >&2' in script and script.endswith("  sleep 5\ndone")
    assert wait["env"][0] == {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    assert [e["name"] for e in wait["env"][1:]] == ["FQ_RAY_IP", "RAY_IP"]  # BuildPod's, on every init container
    assert wait["volumeMounts"] == [TLS_MOUNT]
    limits = {"cpu": "50m", "memory": "64Mi"}
    assert wait["resources"] == {"limits": limits, "requests": limits}


def test_workers_share_the_worker_secret_and_wait_gcs_ready_gets_tls_too() -> None:
    pod = pods.worker_pod(cluster(), 0, ON, replica_index=0)
    spec = pod["spec"]
    assert _by_name(spec["volumes"], "ray-tls")["secret"] == {"secretName": "ray-worker-secret-tls"}
    assert [i["name"] for i in spec["initContainers"]] == ["wait-for-tls-ip-san", "wait-gcs-ready"]
    gcs = spec["initContainers"][1]
    assert [e for e in gcs["env"] if e["name"] in c.RAY_TLS_ENV_VARS] == TLS_ENV
    assert TLS_MOUNT in gcs["volumeMounts"]
    assert "securityContext" not in spec["initContainers"][0]  # the Ray container has none: Go's nil


def test_autoscaler_gets_tls_before_the_users_overrides() -> None:
    pod = pods.head_pod(cluster(autoscaler={"env": [{"name": "EXTRA", "value": "1"}]}), ON)
    sidecar = _by_name(pod["spec"]["containers"], c.AUTOSCALER_CONTAINER_NAME)
    names = [e["name"] for e in sidecar["env"]]
    assert names[-5:] == [*c.RAY_TLS_ENV_VARS, "EXTRA"]
    assert TLS_MOUNT in sidecar["volumeMounts"]


@pytest.mark.parametrize(
    ("options", "enabled"), [(BuildOptions(), True), (ON, False), (ON, None)], ids=["gate-off", "disabled", "unset"]
)
def test_nothing_without_the_gate_or_with_tls_not_enabled(options: BuildOptions, enabled: bool | None) -> None:
    for pod in (pods.head_pod(cluster(enabled=enabled), options), pods.worker_pod(cluster(enabled=enabled), 0, options,
                                                                                  replica_index=0)):  # fmt: skip
        spec = pod["spec"]
        assert all(v["name"] != "ray-tls" for v in spec.get("volumes") or [])
        assert all(i["name"] != "wait-for-tls-ip-san" for i in spec.get("initContainers") or [])
        assert not any(e["name"] == "RAY_USE_TLS" for e in spec["containers"][0]["env"])


def test_configure_tls_is_idempotent_and_keeps_what_is_there() -> None:
    spec: dict[str, Any] = {
        "volumes": [{"name": "ray-tls", "secret": {"secretName": "mine"}}],
        "containers": [{"name": "ray", "env": [{"name": "RAY_USE_TLS", "value": "0"}],
                        "volumeMounts": [{"name": "other", "mountPath": "/etc/ray/tls"}]}],
    }  # fmt: skip
    tls.configure_tls(spec, NAME, head=True)
    tls.configure_tls(spec, NAME, head=True)
    assert spec["volumes"] == [{"name": "ray-tls", "secret": {"secretName": "mine"}}]
    ray = spec["containers"][0]
    assert [e["name"] for e in ray["env"]] == list(c.RAY_TLS_ENV_VARS)
    assert ray["env"][0]["value"] == "0"
    assert ray["volumeMounts"] == [{"name": "other", "mountPath": "/etc/ray/tls"}]
    assert [i["name"] for i in spec["initContainers"]] == ["wait-for-tls-ip-san"]


def test_redis_cleanup_job_drops_only_the_tls_wait() -> None:
    model = cluster()
    head = pods.build_head_pod(model, ON)
    head["spec"]["initContainers"].append({"name": "users-init", "image": "busybox"})
    job = children.redis_cleanup_job(model, head)
    assert [i["name"] for i in job["spec"]["template"]["spec"]["initContainers"]] == ["users-init"]
    alone = pods.build_head_pod(model, ON)
    assert "initContainers" not in children.redis_cleanup_job(model, alone)["spec"]["template"]["spec"]


# --- the cert-manager objects ---------------------------------------------------------------------------------------


def _labels(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "kuberay", "app.kubernetes.io/created-by": "kuberay-operator",
            "app.kubernetes.io/component": component, "ray.io/cluster": NAME}  # fmt: skip


OWNER = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": NAME, "uid": UID, "controller": True,
         "blockOwnerDeletion": True}  # fmt: skip


def test_the_pki_objects_as_v170_makes_them() -> None:
    model = cluster()
    issuer = certs.self_signed_issuer(model)
    assert issuer == {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
                      "metadata": {"name": "ray-selfsigned-issuer-tls", "namespace": NS,
                                   "labels": _labels("selfsigned-issuer"), "ownerReferences": [OWNER]},
                      "spec": {"selfSigned": {}}}  # fmt: skip
    ca = certs.ca_certificate(model)
    assert ca["metadata"]["name"] == "ray-ca-certificate-tls" and ca["metadata"]["labels"] == _labels("ca-certificate")
    assert ca["spec"] == {
        "secretName": "tls-ca-secret-01234567", "isCA": True, "commonName": "ray-ca-tls",
        "privateKey": {"algorithm": "RSA", "size": 4096}, "duration": "87600h0m0s", "renewBefore": "720h0m0s",
        "usages": ["cert sign", "crl sign"],
        "issuerRef": {"name": "ray-selfsigned-issuer-tls", "kind": "Issuer", "group": "cert-manager.io"},
    }  # fmt: skip
    ca_issuer = certs.ca_issuer(model)
    assert ca_issuer["metadata"]["name"] == "ray-ca-issuer-tls"
    assert ca_issuer["spec"] == {"ca": {"secretName": "tls-ca-secret-01234567"}}
    head = certs.head_certificate(model, ["10.0.0.9", "10.0.0.10", "", "10.0.0.9"], ON)
    assert head["metadata"]["name"] == "ray-head-cert-tls" and head["metadata"]["labels"] == _labels("head-certificate")
    assert head["spec"] == {
        "secretName": "ray-head-secret-tls", "duration": "2160h0m0s", "renewBefore": "360h0m0s",
        "dnsNames": ["localhost", "tls-head-svc.team.svc.cluster.local"],
        "ipAddresses": ["10.0.0.10", "10.0.0.9", "127.0.0.1"],  # Go's sets.List: sorted as strings
        "usages": ["digital signature", "key encipherment", "server auth", "client auth"],
        "issuerRef": {"name": "ray-ca-issuer-tls", "kind": "Issuer", "group": "cert-manager.io"},
    }  # fmt: skip
    worker = certs.worker_certificate(model, [])
    assert worker["metadata"]["name"] == "ray-worker-cert-tls"
    assert worker["spec"]["secretName"] == "ray-worker-secret-tls"
    assert worker["spec"]["dnsNames"] == ["localhost"] and worker["spec"]["ipAddresses"] == ["127.0.0.1"]


def test_pod_ips_skip_finished_deleted_and_unassigned_pods() -> None:
    pods_ = [
        {"metadata": {}, "status": {"podIP": "10.0.0.1", "phase": "Running"}},
        {"metadata": {}, "status": {"podIP": "10.0.0.2", "phase": "Failed"}},
        {"metadata": {}, "status": {"podIP": "10.0.0.3", "phase": "Succeeded"}},
        {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"podIP": "10.0.0.4"}},
        {"metadata": {}, "status": {"phase": "Pending"}},
    ]
    assert certs.pod_ips(pods_) == ["10.0.0.1"]


def test_a_leaf_is_rewritten_only_when_labels_or_san_sets_change() -> None:
    desired = certs.worker_certificate(cluster(), ["10.0.0.1"])
    live = {**desired, "spec": {**desired["spec"], "ipAddresses": ["127.0.0.1", "10.0.0.1"], "duration": "90d"}}
    assert not certs.needs_update(live, desired)  # order and other fields: cert-manager's business
    assert certs.needs_update({**live, "spec": {**live["spec"], "ipAddresses": ["127.0.0.1"]}}, desired)
    assert certs.needs_update({**live, "metadata": {**live["metadata"], "labels": {"a": "b"}}}, desired)


def _cert(generation: int, *conditions: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"generation": generation}, "status": {"conditions": list(conditions)}}


@pytest.mark.parametrize(
    ("cert", "ready"),
    [
        (_cert(2, {"type": "Ready", "status": "True", "observedGeneration": 2}), True),
        (_cert(2, {"type": "Ready", "status": "True", "observedGeneration": 1}), False),  # stale after a SAN update
        (_cert(1, {"type": "Ready", "status": "False", "observedGeneration": 1}), False),
        (_cert(1, {"type": "Issuing", "status": "True", "observedGeneration": 1}), False),
        ({"metadata": {"generation": 1}}, False),
    ],
)
def test_ready_means_ready_at_the_current_generation(cert: dict[str, Any], ready: bool) -> None:
    assert certs.certificate_ready(cert) is ready


def test_leaf_problem_names_the_first_thing_missing() -> None:
    ready = _cert(1, {"type": "Ready", "status": "True", "observedGeneration": 1})
    full = {"data": {"tls.crt": "x", "tls.key": "y", "ca.crt": "z"}}
    cert_names = {"ray-head-cert-tls": ready, "ray-worker-cert-tls": ready}
    secrets = {"ray-head-secret-tls": full, "ray-worker-secret-tls": full}
    assert certs.leaf_problem(NAME, cert_names, secrets) is None
    assert certs.leaf_problem(NAME, {**cert_names, "ray-head-cert-tls": None}, secrets) == (
        'certificate ray-head-cert-tls not found: certificates.cert-manager.io "ray-head-cert-tls" not found'
    )
    stale = _cert(3, {"type": "Ready", "status": "True", "observedGeneration": 2})
    assert certs.leaf_problem(NAME, {**cert_names, "ray-worker-cert-tls": stale}, secrets) == (
        "certificate ray-worker-cert-tls is not ready at current generation 3"
    )
    assert certs.leaf_problem(NAME, cert_names, {**secrets, "ray-worker-secret-tls": None}) == (
        'secret ray-worker-secret-tls not found: secrets "ray-worker-secret-tls" not found'
    )
    partial = {"data": {"tls.crt": "x", "tls.key": "y"}}
    assert certs.leaf_problem(NAME, cert_names, {**secrets, "ray-head-secret-tls": partial}) == (
        "secret ray-head-secret-tls missing required key ca.crt"
    )


def test_the_secret_gets_a_plain_owner_reference_to_its_certificate_once() -> None:
    cert = {"metadata": {"name": "ray-head-cert-tls", "uid": "cert-uid"}}
    secret = {"metadata": {"name": "ray-head-secret-tls", "ownerReferences": [{"kind": "Other", "name": "x"}]}}
    owned = certs.secret_with_owner(secret, cert)
    assert owned is not None
    assert owned["metadata"]["ownerReferences"] == [
        {"kind": "Other", "name": "x"},
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": "ray-head-cert-tls", "uid": "cert-uid"},
    ]
    assert certs.secret_with_owner(owned, cert) is None
    recreated = {"metadata": {"name": "ray-head-cert-tls", "uid": "new-uid"}}
    again = certs.secret_with_owner(owned, recreated)
    assert again is not None and again["metadata"]["ownerReferences"][1]["uid"] == "new-uid"


def test_expiry_warning_under_a_day() -> None:
    now = dt.datetime(2026, 12, 6, 12, tzinfo=dt.UTC)
    assert certs.expiring({"status": {"notAfter": "2026-12-07T00:00:00Z"}}, now) == pytest.approx(12.0)
    assert certs.expiring({"status": {"notAfter": "2026-12-08T00:00:00Z"}}, now) is None
    assert certs.expiring({"status": {}}, now) is None

"""The other objects KubeRay creates for a RayCluster (v1.7.0 ``controllers/ray/common/rbac.go`` and ``ingress.go``;
``reconcileAuthSecret`` and ``buildRedisCleanupJob`` in ``controllers/ray/raycluster_controller.go``):

* the autoscaler's ServiceAccount, Role and RoleBinding (``enableInTreeAutoscaling``), created if missing and never
  updated. The ServiceAccount is only created when the head template does not name one of its own;
* the auth Secret (``authOptions.mode: token`` without ``secretName``): key ``auth_token``, a base64 text of 32
  random bytes that the caller passes in, created once and never rotated;
* the dashboard Ingress (``headGroupSpec.enableIngress``), kept in step with the spec;
* the Redis cleanup Job run when a cluster with GCS fault tolerance is deleted (the head Pod, its Ray container
  only, without the ``wait-for-tls-ip-san`` init container).

All are plain dicts with a controller ownerReference to the RayCluster. Pure: no I/O, no randomness, no clock.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RayCluster
from raykube.builders import names, services, tls
from raykube.builders.command import container_command


def _meta(cluster: RayCluster, name: str) -> dict[str, Any]:
    cluster_name = str(cluster.metadata.get("name", ""))
    return {
        "name": name,
        "namespace": cluster.metadata.get("namespace"),
        "labels": {
            c.RAY_CLUSTER_LABEL: cluster_name,
            c.K8S_APP_NAME_LABEL: c.APPLICATION_NAME,
            c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME,
        },
        "ownerReferences": [
            names.owner_reference(c.KIND_RAYCLUSTER, cluster_name, str(cluster.metadata.get("uid", "")))
        ],
    }


# ---------------------------------------------------------------------------------------------- autoscaler RBAC
def autoscaler_service_account_name(cluster: RayCluster) -> str:
    """The head's ServiceAccount with autoscaling: the template's own, else one named after the cluster."""
    template_spec = (cluster.spec.head_group_spec.template.get("spec") or {}) if cluster.spec else {}
    return names.check_name(str(template_spec.get("serviceAccountName") or cluster.metadata.get("name", "")))


def autoscaler_service_account_is_users(cluster: RayCluster) -> bool:
    """Whether the head template names its own ServiceAccount, which KubeRay then never creates."""
    template_spec = (cluster.spec.head_group_spec.template.get("spec") or {}) if cluster.spec else {}
    return bool(template_spec.get("serviceAccountName"))


def autoscaler_service_account(cluster: RayCluster) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": _meta(cluster, autoscaler_service_account_name(cluster))}  # fmt: skip


def autoscaler_role(cluster: RayCluster) -> dict[str, Any]:
    name = names.check_name(str(cluster.metadata.get("name", "")))
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(cluster, name),
        "rules": [{key: list(value) for key, value in rule.items()} for rule in c.AUTOSCALER_ROLE_RULES],
    }


def autoscaler_role_binding(cluster: RayCluster) -> dict[str, Any]:
    name = names.check_name(str(cluster.metadata.get("name", "")))
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(cluster, name),
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": autoscaler_service_account_name(cluster),
                "namespace": cluster.metadata.get("namespace"),
            }
        ],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }


# ---------------------------------------------------------------------------------------------- auth
def auth_secret_name(cluster: RayCluster) -> str | None:
    """The Secret holding the auth token, when token auth is on: the user's, else ``CheckName(<cluster>)``."""
    auth = cluster.spec.auth_options if cluster.spec else None
    if auth is None or auth.mode != c.AUTH_MODE_TOKEN:
        return None
    return auth.secret_name or names.check_name(str(cluster.metadata.get("name", "")))


def needs_auth_secret(cluster: RayCluster) -> bool:
    """KubeRay creates the Secret only with token auth, no ``secretName`` and no Kubernetes-token auth."""
    auth = cluster.spec.auth_options if cluster.spec else None
    return (
        auth is not None and auth.mode == c.AUTH_MODE_TOKEN and not auth.secret_name and not auth.enable_k8s_token_auth
    )


def auth_secret(cluster: RayCluster, token: str) -> dict[str, Any]:
    """The generated auth Secret; ``token`` is the caller's base64 text of 32 random bytes."""
    meta = _meta(cluster, names.check_name(str(cluster.metadata.get("name", ""))))
    meta["labels"] = {c.RAY_CLUSTER_LABEL: str(cluster.metadata.get("name", ""))}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
            "stringData": {c.AUTH_TOKEN_SECRET_KEY: token}}  # fmt: skip


# ---------------------------------------------------------------------------------------------- ingress
def head_ingress(cluster: RayCluster) -> dict[str, Any] | None:
    """KubeRay v1.7.0 ``BuildIngressForHeadService``: the dashboard Ingress (``CheckName("<cluster>-head-ingress")``),
    or None when ``enableIngress`` is off. One rule to the head Service's dashboard port: ``ingressOptions.path``
    (default ``/``) and ``pathType`` (default ``Prefix``; v1.6.1 had ``/<cluster>/(.*)``, ``Exact``), its ``host``;
    ``spec.tls`` a copy of ``ingressOptions.tls``; the cluster's annotations less ``kubernetes.io/ingress.class``,
    which becomes ``ingressClassName``."""
    head = cluster.spec.head_group_spec if cluster.spec else None
    if head is None or not head.enable_ingress:
        return None
    cluster_name = str(cluster.metadata.get("name", ""))
    options = head.ingress_options
    annotations = dict(cluster.metadata.get("annotations") or {})
    ingress_class = annotations.pop(c.INGRESS_CLASS_ANNOTATION, None)
    ports = services.service_ports(cluster)
    port = ports.get(c.DASHBOARD_PORT_NAME, c.DEFAULT_DASHBOARD_PORT)
    meta = _meta(cluster, names.check_name(f"{cluster_name}-head-ingress"))
    meta["labels"] = {
        c.RAY_CLUSTER_LABEL: cluster_name,
        c.RAY_ID_LABEL: names.head_identifier(cluster_name),
        c.K8S_APP_NAME_LABEL: c.APPLICATION_NAME,
        c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME,
    }
    meta["annotations"] = annotations
    rule: dict[str, Any] = {
        "http": {
            "paths": [
                {
                    "path": options.path if options and options.path is not None else "/",
                    "pathType": options.path_type if options and options.path_type is not None else "Prefix",
                    "backend": {
                        "service": {
                            "name": names.head_service_name(cluster_name, head.head_service),
                            "port": {"number": port},
                        }
                    },
                }
            ]
        }
    }
    if options and options.host:
        rule["host"] = options.host
    spec: dict[str, Any] = {"rules": [rule]}
    if options and options.tls:
        spec["tls"] = copy.deepcopy(options.tls)
    if ingress_class is not None:  # KubeRay: whenever the annotation is there, even empty
        spec["ingressClassName"] = ingress_class
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": meta, "spec": spec}


def updated_ingress(live: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | None:
    """KubeRay v1.7.0 ``ingressNeedsUpdate``: the Update body for an Ingress this cluster owns (the live object, its
    resourceVersion kept, with the desired labels, annotations and spec), or None when it is already in step.

    Labels and annotations are compared as maps (absent equals empty) and replaced whole; a desired spec without
    ``ingressClassName`` adopts the live one (the DefaultIngressClass admission plugin may have set it: no fight);
    the spec is then compared and replaced whole. An Ingress of v1.6.x (path ``/<cluster>/(.*)``, ``Exact``) is thus
    rewritten to the current path on the first pass."""
    live_meta, want_meta = live.get("metadata") or {}, desired.get("metadata") or {}
    metadata = copy.deepcopy(dict(live_meta))
    changed = False
    for key in ("labels", "annotations"):
        want = dict(want_meta.get(key) or {})
        if dict(live_meta.get(key) or {}) != want:
            changed = True
            if want:
                metadata[key] = want
            else:
                metadata.pop(key, None)
    spec = copy.deepcopy(dict(desired.get("spec") or {}))
    live_spec = live.get("spec") or {}
    if "ingressClassName" not in spec and live_spec.get("ingressClassName") is not None:
        spec["ingressClassName"] = live_spec["ingressClassName"]
    if dict(live_spec) != spec:
        changed = True
    else:
        spec = copy.deepcopy(dict(live_spec))
    if not changed:
        return None
    body = copy.deepcopy(dict(live))
    body["metadata"] = metadata
    body["spec"] = spec
    return body


# ---------------------------------------------------------------------------------------------- GCS FT cleanup
def gcs_ft_enabled(cluster: RayCluster) -> bool:
    """GCS fault tolerance (``IsGCSFaultToleranceEnabled``): options present, or the deprecated ``ray.io/ft-enabled``
    annotation. Either backend: :func:`raykube.builders.gcs_storage.embedded` tells rocksdb from Redis."""
    annotations = cluster.metadata.get("annotations") or {}
    options = cluster.spec.gcs_fault_tolerance_options if cluster.spec else None
    return options is not None or str(annotations.get(c.RAY_FT_ENABLED_ANNOTATION, "")).lower() == "true"


def redis_cleanup_job_name(cluster: RayCluster) -> str:
    return names.check_label(f"{cluster.metadata.get('name', '')}-redis-cleanup")


def redis_cleanup_job(cluster: RayCluster, head_pod: Mapping[str, Any], *, login_shell: bool = False) -> dict[str, Any]:
    """The Job that deletes the cluster's GCS keys from Redis, built from the head Pod as KubeRay v1.7.0's
    ``buildRedisCleanupJob`` builds it: the Ray container alone, running KubeRay's cleanup command
    (``GetContainerCommand``, ``-cl`` with ``login_shell``), its liveness and readiness probes dropped, the two Redis
    retry variables appended to its env, fixed resources."""
    pod = copy.deepcopy(dict(head_pod))
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    ray = dict((spec.get("containers") or [{}])[0])
    env = list(ray.get("env") or [])
    call = (
        c.REDIS_CLEANUP_CALL_WITH_USERNAME
        if any(isinstance(e, Mapping) and e.get("name") == c.REDIS_USERNAME for e in env)
        else c.REDIS_CLEANUP_CALL
    )
    env += [{"name": "RAY_redis_db_connect_retries", "value": "120"},
            {"name": "RAY_redis_db_connect_wait_milliseconds", "value": "500"}]  # fmt: skip
    resources = dict(c.GCS_FT_REDIS_CLEANUP_RESOURCES)
    ray.update({
        "command": container_command(login_shell=login_shell),
        "args": [c.REDIS_CLEANUP_ARGS_PREFIX + call],
        "env": env,
        "resources": {"limits": resources, "requests": dict(resources)},
    })  # fmt: skip
    for probe in ("livenessProbe", "readinessProbe"):
        ray.pop(probe, None)
    labels = dict(meta.get("labels") or {})
    labels[c.RAY_NODE_TYPE_LABEL] = c.NODE_TYPE_REDIS_CLEANUP
    template_spec = {k: v for k, v in spec.items() if k not in ("containers", "initContainers", "nodeName")}
    template_spec.update({"containers": [ray], "restartPolicy": "Never"})
    inits = tls.without_tls_wait(spec.get("initContainers") or [])  # v1.7.0: the head's others stay
    if inits:
        template_spec["initContainers"] = inits
    job_meta = _meta(cluster, redis_cleanup_job_name(cluster))
    job_meta["labels"] = {**labels, c.K8S_CREATED_BY_LABEL: c.COMPONENT_NAME}
    job_meta["annotations"] = dict(meta.get("annotations") or {})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_meta,
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": c.GCS_FT_REDIS_CLEANUP_DEADLINE_SECONDS,
            "template": {
                "metadata": {"labels": labels, "annotations": dict(meta.get("annotations") or {})},
                "spec": template_spec,
            },
        },
    }

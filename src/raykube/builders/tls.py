"""mTLS in the Ray Pods: the cert-manager Secret mounted, Ray's TLS env, and the init container that waits for the
Pod's own IP in its certificate, as KubeRay v1.7.0 builds them (gate ``RayClusterMTLS``, alpha, off).

KubeRay v1.7.0 ``common/pod.go`` ``configureTLS`` and ``SetContainerTLSConfig``, re-implemented; active only when the
gate is on and ``spec.tlsOptions.enabled`` is true (``utils.IsTLSEnabled``). Pure: dicts in, changed in place, no I/O.

* Pod volume ``ray-tls`` → Secret ``ray-head-secret-<cluster>`` (head) or ``ray-worker-secret-<cluster>`` (every
  worker group shares one), unless a volume of that name is there.
* The Ray container and the ``wait-gcs-ready`` init container (no other init container): ``RAY_USE_TLS=1``,
  ``RAY_TLS_SERVER_CERT``/``RAY_TLS_SERVER_KEY``/``RAY_TLS_CA_CERT`` under ``/etc/ray/tls``, each only if absent, and
  the read-only mount of ``ray-tls`` there unless a mount of that name or at that path is there. The head's autoscaler
  sidecar gets the same before the user's ``autoscalerOptions`` overrides (:func:`set_container_tls_config`).
* ``wait-for-tls-ip-san`` prepended to the init containers (skipped if present): the Ray container's image, pull
  policy and a copy of its security context, a shell loop until ``openssl`` shows ``IP Address:<POD_IP>`` in
  ``tls.crt`` (cert-manager reissues it once the mTLS controller has added the Pod's IP), 50m / 64Mi. The Redis
  cleanup Job drops it (:func:`without_tls_wait`): its Pod's IP is never added.

The names of the cert-manager objects live here too, shared by the builder of those objects
(:mod:`raykube.builders.certificates`) and the RayCluster controller's readiness check.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.builders.options import BuildOptions

# KubeRay v1.7.0 common/pod.go configureTLS: the wait script, byte for byte (a Go raw string, %s the cert path).
_WAIT_SCRIPT = (
    'CERT="{cert}"\n'
    'if [ -z "${{POD_IP}}" ]; then\n'
    "  POD_IP=$(hostname -i 2>/dev/null | awk '{{print $1}}')\n"
    "fi\n"
    "if ! command -v openssl >/dev/null 2>&1; then\n"
    '  echo "openssl not found; cannot verify IP SAN" >&2\n'
    "  exit 1\n"
    "fi\n"
    'echo "Waiting for TLS cert to include IP SAN for ${{POD_IP}}..."\n'
    "while true; do\n"
    '  if openssl x509 -in "${{CERT}}" -noout -text 2>/dev/null | grep -qE "IP Address:${{POD_IP}}([^0-9.]|$)"; then\n'
    '    echo "TLS cert now includes IP SAN for ${{POD_IP}}"\n'
    "    exit 0\n"
    "  fi\n"
    '  echo "IP SAN for ${{POD_IP}} not yet in cert, retrying in 5s..."\n'
    "  sleep 5\n"
    "done"
)


def tls_enabled(spec: RayClusterSpec | None, options: BuildOptions) -> bool:
    """KubeRay v1.7.0 ``IsTLSEnabled``: the RayClusterMTLS gate is on and ``tlsOptions.enabled`` is true."""
    if not options.gate(c.GATE_RAYCLUSTER_MTLS) or spec is None or spec.tls_options is None:
        return False
    return spec.tls_options.enabled is True


# --- names (KubeRay v1.7.0 utils/util.go) ---------------------------------------------------------------------------


def tls_secret_name(cluster: str, *, head: bool) -> str:
    """``GetTLSSecretName``: the Secret cert-manager writes the head's or the workers' certificate into."""
    return f"{c.RAY_HEAD_SECRET_PREFIX if head else c.RAY_WORKER_SECRET_PREFIX}-{cluster}"


def tls_cert_name(cluster: str, *, head: bool) -> str:
    """``GetTLSCertName``: the head's or the workers' Certificate."""
    return f"{c.RAY_HEAD_CERT_PREFIX if head else c.RAY_WORKER_CERT_PREFIX}-{cluster}"


def self_signed_issuer_name(cluster: str) -> str:
    return f"{c.RAY_SELF_SIGNED_ISSUER_PREFIX}-{cluster}"


def ca_cert_name(cluster: str) -> str:
    return f"{c.RAY_CA_CERTIFICATE_PREFIX}-{cluster}"


def ca_issuer_name(cluster: str) -> str:
    return f"{c.RAY_CA_ISSUER_PREFIX}-{cluster}"


def ca_secret_name(cluster: str, uid: str) -> str:
    """``GetCASecretName``: ``<cluster>-ca-secret-<uid[:8]>``, so a cluster recreated under the same name gets a new
    CA rather than a stale one."""
    return f"{cluster}-{c.RAY_CA_SECRET_PREFIX}-{uid[:8]}"


# --- Pods -----------------------------------------------------------------------------------------------------------


def _tls_env() -> list[dict[str, str]]:
    base = c.RAY_TLS_CERT_MOUNT_PATH
    return [
        {"name": c.RAY_USE_TLS, "value": "1"},
        {"name": c.RAY_TLS_SERVER_CERT, "value": f"{base}/tls.crt"},
        {"name": c.RAY_TLS_SERVER_KEY, "value": f"{base}/tls.key"},
        {"name": c.RAY_TLS_CA_CERT, "value": f"{base}/ca.crt"},
    ]


def _tls_mount() -> dict[str, Any]:
    return {"name": c.RAY_TLS_VOLUME_NAME, "mountPath": c.RAY_TLS_CERT_MOUNT_PATH, "readOnly": True}


def set_container_tls_config(container: dict[str, Any]) -> None:
    """``SetContainerTLSConfig``: the four TLS env vars (each only if absent, in this order) and the read-only
    ``ray-tls`` mount (unless one of that name or at that path exists)."""
    env: list[dict[str, Any]] = list(container.get("env") or [])
    present = {e.get("name") for e in env}
    env += [entry for entry in _tls_env() if entry["name"] not in present]
    container["env"] = env
    mounts: list[dict[str, Any]] = list(container.get("volumeMounts") or [])
    if not any(
        m.get("name") == c.RAY_TLS_VOLUME_NAME or m.get("mountPath") == c.RAY_TLS_CERT_MOUNT_PATH for m in mounts
    ):
        container["volumeMounts"] = [*mounts, _tls_mount()]


def _wait_for_ip_san(ray: Mapping[str, Any]) -> dict[str, Any]:
    resources = {"cpu": c.WAIT_FOR_TLS_IP_SAN_CPU, "memory": c.WAIT_FOR_TLS_IP_SAN_MEMORY}
    init: dict[str, Any] = {
        "name": c.WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER,
        "image": ray.get("image"),
        "imagePullPolicy": ray.get("imagePullPolicy"),
        "command": ["sh", "-c"],
        "args": [_WAIT_SCRIPT.format(cert=f"{c.RAY_TLS_CERT_MOUNT_PATH}/tls.crt")],
        "securityContext": copy.deepcopy(ray.get("securityContext")),
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "volumeMounts": [_tls_mount()],
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }
    for key in ("image", "imagePullPolicy", "securityContext"):  # Go omits empty strings and nil pointers
        if not init[key] and init[key] != {}:
            del init[key]
    return init


def configure_tls(spec: dict[str, Any], cluster: str, *, head: bool) -> None:
    """``configureTLS`` on a Pod spec (the caller checks :func:`tls_enabled`): volume, Ray container and
    ``wait-gcs-ready`` env and mount, then ``wait-for-tls-ip-san`` first among the init containers."""
    volumes: list[dict[str, Any]] = list(spec.get("volumes") or [])
    if not any(v.get("name") == c.RAY_TLS_VOLUME_NAME for v in volumes):
        secret = {"secretName": tls_secret_name(cluster, head=head)}
        spec["volumes"] = [*volumes, {"name": c.RAY_TLS_VOLUME_NAME, "secret": secret}]
    ray = spec["containers"][c.RAY_CONTAINER_INDEX]
    set_container_tls_config(ray)
    inits: list[dict[str, Any]] = list(spec.get("initContainers") or [])
    for init in inits:
        if init.get("name") == c.WAIT_GCS_READY_INIT_CONTAINER:
            set_container_tls_config(init)
    if any(init.get("name") == c.WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER for init in inits):
        return
    spec["initContainers"] = [_wait_for_ip_san(ray), *inits]


def without_tls_wait(init_containers: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """KubeRay v1.7.0 ``buildRedisCleanupJob``: the init containers minus ``wait-for-tls-ip-san`` (the cleanup Pod's IP
    never enters the head certificate, so it would wait forever)."""
    return [i for i in init_containers if i.get("name") != c.WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER]

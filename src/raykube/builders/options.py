"""Operator-wide settings that change what the builders produce (KubeRay's env switches and its config file).

Builders are pure: everything they would otherwise read from the environment comes in through :class:`BuildOptions`.
The operator fills it from its flags, its ``config.ray.io/v1alpha1`` Configuration and the env variables KubeRay
reads (``raykube.api.constants.*_ENV``); tests construct it directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from raykube.api import constants as c
from raykube.golang.errors import GoError
from raykube.golang.strconv import atoi


@dataclass(frozen=True)
class BuildOptions:
    kuberay_version: str = c.KUBERAY_VERSION
    cluster_domain: str = c.DEFAULT_CLUSTER_DOMAIN  # CLUSTER_DOMAIN
    init_container_injection: bool = True  # ENABLE_INIT_CONTAINER_INJECTION != "false"
    probes_injection: bool = True  # ENABLE_PROBES_INJECTION != "false"
    head_cluster_ip_service: bool = False  # ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE == "true"
    login_shell: bool = False  # ENABLE_LOGIN_SHELL == "true"
    deterministic_head_pod_name: bool = False  # ENABLE_DETERMINISTIC_HEAD_POD_NAME == "true"
    random_pod_delete: bool = False  # ENABLE_RANDOM_POD_DELETE == "true"
    gcs_ft_redis_cleanup: bool = True  # ENABLE_GCS_FT_REDIS_CLEANUP != "false"
    delete_rayjob_after_finish: bool = False  # DELETE_RAYJOB_CR_AFTER_JOB_FINISHES == "true" (any case)
    # RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS (an integer; anything else gives the default)
    rayjob_transition_grace_seconds: int = c.DEFAULT_RAYJOB_TRANSITION_GRACE_SECONDS
    # RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS (a positive integer; anything else gives the default)
    rayjob_status_check_timeout_seconds: int = c.DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS
    # ENABLE_ZERO_DOWNTIME as set (None: unset): "false" in any case turns off a RayService's new clusters when its
    # spec.upgradeStrategy.type is unset.
    enable_zero_downtime: str | None = None
    # --batch-scheduler: the plugin (raykube.builders.batch.PLUGINS) that decorates Pods and makes PodGroups; "" none.
    batch_scheduler: str = ""
    features: Mapping[str, bool] = field(default_factory=lambda: dict(c.FEATURE_GATE_DEFAULTS))
    # Configuration file (config.ray.io/v1alpha1): added where the key/name is missing.
    default_container_envs: tuple[Mapping[str, Any], ...] = ()
    default_pod_labels: Mapping[str, str] = field(default_factory=dict)
    default_pod_annotations: Mapping[str, str] = field(default_factory=dict)
    head_sidecar_containers: tuple[Mapping[str, Any], ...] = ()
    worker_sidecar_containers: tuple[Mapping[str, Any], ...] = ()
    # cert-manager.io/v1 is served (found at start-up, KubeRay v1.7.0 main.go certManagerAPIAvailable): mTLS clusters
    # get their certificates; without it the RayCluster controller refuses them with a Warning.
    cert_manager_available: bool = False
    # gateway.networking.k8s.io/v1 is served (looked up at start-up when the RayServiceIncrementalUpgrade gate is on):
    # the RayService controller then reads Gateways and HTTPRoutes; without it a NewClusterWithIncrementalUpgrade
    # RayService fails every pass at its Gateway, as KubeRay v1.7.0's does (its client finds no such kind).
    gateway_api_available: bool = False

    def gate(self, name: str) -> bool:
        return bool(self.features.get(name, c.FEATURE_GATE_DEFAULTS.get(name, False)))

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> BuildOptions:
        """The switches KubeRay reads from its own environment (``os.environ`` in the operator)."""

        def flag(name: str, *, default: bool) -> bool:
            value = env.get(name, "").strip().lower()
            if not value:
                return default
            return value == "true"

        return cls(
            cluster_domain=env.get(c.CLUSTER_DOMAIN_ENV) or c.DEFAULT_CLUSTER_DOMAIN,
            init_container_injection=flag(c.ENABLE_INIT_CONTAINER_INJECTION_ENV, default=True),
            probes_injection=flag(c.ENABLE_PROBES_INJECTION_ENV, default=True),
            head_cluster_ip_service=flag(c.ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE_ENV, default=False),
            login_shell=flag(c.ENABLE_LOGIN_SHELL_ENV, default=False),
            deterministic_head_pod_name=flag(c.ENABLE_DETERMINISTIC_HEAD_POD_NAME_ENV, default=False),
            random_pod_delete=flag(c.ENABLE_RANDOM_POD_DELETE_ENV, default=False),
            gcs_ft_redis_cleanup=flag(c.ENABLE_GCS_FT_REDIS_CLEANUP_ENV, default=True),
            delete_rayjob_after_finish=flag(c.DELETE_RAYJOB_CR_AFTER_JOB_FINISHES_ENV, default=False),
            enable_zero_downtime=env.get(c.ENABLE_ZERO_DOWNTIME_ENV),
            rayjob_transition_grace_seconds=_atoi_or(
                env.get(c.RAYJOB_TRANSITION_GRACE_PERIOD_ENV), c.DEFAULT_RAYJOB_TRANSITION_GRACE_SECONDS
            ),
            rayjob_status_check_timeout_seconds=_positive_or(
                _atoi_or(env.get(c.RAYJOB_STATUS_CHECK_TIMEOUT_ENV), 0), c.DEFAULT_RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS
            ),
            **overrides,
        )


def _positive_or(value: int, default: int) -> int:
    return value if value > 0 else default


def _atoi_or(value: str | None, default: int) -> int:
    """Go's ``strconv.Atoi`` of an env var (unset reads as ``""``), ``default`` on any error, as KubeRay reads it."""
    try:
        return atoi(value or "")
    except GoError:
        return default

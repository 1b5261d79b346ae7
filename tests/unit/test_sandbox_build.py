from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from raykube.sandbox import ToolchainError, build, versions
from raykube.sandbox.build import (
    find_go,
    is_built,
    kube_ldflags,
    missing_artifacts,
    parse_go_version,
    patch_kwok_watch,
    require_built,
    staging_modules,
    wrapper_go_mod,
)
from raykube.sandbox.errors import BuildError, NotBuiltError
from raykube.waiting import NotYet, wait_for

UPSTREAM_GO_MOD = """\
module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
\tgithub.com/spf13/cobra v1.10.2
\tk8s.io/api v0.0.0
\tk8s.io/streaming v0.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/cri-streaming => ./staging/src/k8s.io/cri-streaming
\tk8s.io/streaming => ./staging/src/k8s.io/streaming
)
"""


def test_staging_modules_are_read_from_upstream_replaces() -> None:
    assert staging_modules(UPSTREAM_GO_MOD) == ["k8s.io/api", "k8s.io/cri-streaming", "k8s.io/streaming"]


def test_wrapper_go_mod_pins_every_staging_module_to_the_release_tag() -> None:
    text = wrapper_go_mod(UPSTREAM_GO_MOD, "1.36.3")
    assert "go 1.26.0" in text
    assert "godebug default=go1.26" in text
    assert "require k8s.io/kubernetes v1.36.3" in text
    for module in ("k8s.io/api", "k8s.io/cri-streaming", "k8s.io/streaming"):
        assert f"\t{module} => {module} v0.36.3" in text
    assert "./staging" not in text


def test_wrapper_go_mod_refuses_a_go_mod_without_staging_replaces() -> None:
    with pytest.raises(BuildError, match="staging"):
        wrapper_go_mod("module k8s.io/kubernetes\n\ngo 1.26.0\n", "1.36.3")


def test_ldflags_stamp_the_version_in_both_version_packages() -> None:
    flags = kube_ldflags("1.36.3", "abc123", "2026-12-02T00:00:00Z")
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        assert f"-X {pkg}.gitVersion=v1.36.3" in flags
        assert f"-X {pkg}.gitMinor=36" in flags
        assert f"-X {pkg}.gitCommit=abc123" in flags


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("go1.26.8", (1, 26, 8)),
        ("go version go1.26.8 linux/amd64", (1, 26, 8)),
        ("go1.27rc1", (1, 27, 0)),
        ("devel", None),
    ],
)
def test_parse_go_version(text: str, expected: tuple[int, int, int] | None) -> None:
    assert parse_go_version(text) == expected


def test_a_missing_go_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(ToolchainError) as caught:
        find_go({"PATH": str(tmp_path)})
    message = str(caught.value)
    assert "`go`" in message
    assert "is not on PATH" in message
    assert "install Go 1.26.0 or newer" in message


def test_an_old_go_is_refused_with_the_version_it_needs(tmp_path: Path) -> None:
    fake = tmp_path / "go"
    fake.write_text("#!/bin/sh\necho go1.22.4\n")
    fake.chmod(0o755)
    with pytest.raises(ToolchainError, match=r"go1\.22\.4, older than the go1\.26\.0"):
        find_go({"PATH": str(tmp_path), "HOME": os.environ.get("HOME", "/")})


def test_cache_directories_carry_version_and_recipe(tmp_path: Path) -> None:
    directory = versions.artifact_dir(versions.KUBERNETES, tmp_path)
    assert directory == tmp_path / "bin" / f"kubernetes-v{versions.KUBERNETES_VERSION}-r{versions.RECIPE_REVISION}"


def test_an_artifact_counts_as_built_only_when_marked_complete(tmp_path: Path) -> None:
    directory = versions.artifact_dir(versions.ETCD, tmp_path)
    directory.mkdir(parents=True)
    (directory / "etcd").write_text("")
    assert not is_built(versions.ETCD, tmp_path)
    (directory / ".complete").write_text("{}")
    assert is_built(versions.ETCD, tmp_path)
    assert versions.ETCD not in missing_artifacts(tmp_path)
    with pytest.raises(NotBuiltError, match="raykube sandbox build"):
        require_built([versions.ETCD, versions.KWOK], tmp_path)


def test_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAYKUBE_CACHE_DIR", str(tmp_path / "c"))
    assert versions.cache_root() == tmp_path / "c"
    monkeypatch.delenv("RAYKUBE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert versions.cache_root() == tmp_path / "x" / "raykube"


def test_progress_names_the_step_and_the_time_left(tmp_path: Path) -> None:
    assert build.step_name(["mod", "download", "-json", "k8s.io/kubernetes@v1.36.3"]) == "downloading modules"
    assert build.step_name(["mod", "tidy"]) == "resolving dependencies (go mod tidy)"
    targets = [
        "build",
        "-trimpath",
        "-o",
        "out/",
        "k8s.io/kubernetes/cmd/kube-apiserver",
        "k8s.io/kubernetes/cmd/kubectl",
    ]
    assert build.step_name(targets) == "compiling kube-apiserver, kubectl"
    assert build.step_name(["install", "-ldflags=-s -w", "helm.sh/helm/v4/cmd/helm@v4.3.2"]) == "compiling helm"
    stamped = ["build", "-ldflags=-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=v1.21.2", "."]
    assert build.step_name(stamped) == "compiling"

    # No build of it here yet: the typical time; after one, this machine's own (the newest marker).
    assert build.expected_seconds(versions.KUBERNETES, tmp_path)[0] == versions.KUBERNETES.typical_seconds
    for version, seconds in (("1.35.0", 900.0), ("1.36.3", 300.0)):
        marker = tmp_path / "bin" / f"kubernetes-v{version}-r1" / ".complete"
        marker.parent.mkdir(parents=True)
        marker.write_text(json.dumps({"seconds": seconds}))
    assert build.expected_seconds(versions.KUBERNETES, tmp_path) == (300.0, "the last build here")

    seen: list[str] = []
    ticker = build.Ticker(versions.KUBERNETES, seen.append, 300.0)
    ticker.set_step("compiling kube-apiserver")
    assert ticker.line(ticker.started + 75) == (
        "kubernetes v1.36.3: compiling kube-apiserver (1m15s so far, about 3m45s left)"
    )
    assert ticker.line(ticker.started + 400).endswith("(6m40s so far, taking longer than the last time)")
    with build.Ticker(versions.ETCD, seen.append, 10.0, interval=0.01):
        asyncio.run(wait_for(lambda: bool(seen) or NotYet("no line yet"), 5, what="the ticker's first line"))
    assert seen[0].startswith("etcd v3.6.16: starting (")


# The shape of kwok v0.8.0's two list-watchers in pkg/utils/informer/informer.go: each list and each watch passes
# through opt.setup, which sets resourceVersion "0" (written for this test, not copied).
WATCH_FUNC = (
    "\t\tWatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {\n"
    "\t\t\topt.setup(&opts)\n"
    "\t\t\treturn listWatch.WatchWithContext(ctx, opts)\n"
    "\t\t},\n"
)
LIST_FUNC = (
    "\t\tListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {\n"
    "\t\t\topt.setup(&opts)\n"
    "\t\t\treturn listWatch.ListWithContext(ctx, opts)\n"
    "\t\t},\n"
)


def test_kwok_watches_resume_from_the_reflectors_resource_version() -> None:
    source = "package informer\n" + (LIST_FUNC + WATCH_FUNC) * 2
    patched = patch_kwok_watch(source)
    assert patched.count("resumeAt := opts.ResourceVersion") == 2
    assert patched.count("opts.ResourceVersion = resumeAt") == 2
    # Lists are untouched: the first list (and a list after a 410) still reads the watch cache at "0".
    assert patched.count(LIST_FUNC) == 2
    # The reflector's resourceVersion is read before opt.setup overwrites it, and put back after.
    watch = patched[patched.index("WatchFunc") :]
    assert watch.index("resumeAt :=") < watch.index("opt.setup(&opts)") < watch.index("= resumeAt")


@pytest.mark.parametrize("watch_funcs", [0, 1, 3])
def test_a_kwok_informer_of_another_shape_fails_the_build(watch_funcs: int) -> None:
    with pytest.raises(BuildError) as raised:
        patch_kwok_watch("package informer\n" + LIST_FUNC + WATCH_FUNC * watch_funcs)
    assert "pkg/utils/informer/informer.go" in str(raised.value)
    assert f"found {watch_funcs}" in str(raised.value)


def test_the_cert_manager_main_wires_the_controllers_of_a_self_signed_and_ca_pki() -> None:
    """The Go source ships with the package; every controller it names is one its imports register."""
    source = build.cert_manager_main()
    assert "package main" in source and 'flag.String("ready-file"' in source
    for name in ("issuers", "certificaterequests-issuer-ca", "certificaterequests-issuer-selfsigned",
                 "certificates-issuing", "certificates-readiness"):  # fmt: skip
        assert f'"{name}"' in source
    for package in ("controller/certificaterequests/ca", "controller/issuers", "issuer/ca", "issuer/selfsigned"):
        assert f'_ "github.com/cert-manager/cert-manager/pkg/{package}"' in source
    assert versions.CERT_MANAGER.files[0] == "cert-manager-controller"
    assert all(f"crds/{name}" in versions.CERT_MANAGER.files for name in versions.CERT_MANAGER_CRDS)

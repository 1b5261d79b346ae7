"""versitygw's image on process nodes: its references, the image config read from its Dockerfile, and the build in
the cache that stands for it (the build itself, ``go install`` from the module proxy, runs in the integration test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from raykube.sandbox import build, objectstore, versions
from raykube.sandbox.errors import BuildError
from raykube.sandbox.kubelet import images
from raykube.sandbox.kubelet.env import command_line

PINNED = versions.VERSITYGW_VERSION

# The shape of versitygw's own Dockerfile (a Go build stage, then a small image with the binary and a script).
DOCKERFILE = """\
FROM golang:latest
ENV VERSION=none
WORKDIR /app
COPY ./ ./
RUN go build -o versitygw
CMD ["wrong-stage"]

FROM alpine:latest
# comment
ARG IAM_DIR=/tmp/vgw
ARG SETUP_DIR=/tmp/setup
RUN mkdir -p $IAM_DIR
RUN mkdir -p ${SETUP_DIR} \\
    /srv/data
ENV GREETING="hello world" EMPTY=
COPY --from=0 /app/cmd/versitygw/versitygw /usr/local/bin/versitygw
COPY docker-entrypoint.sh /usr/local/bin/
ENTRYPOINT [ "/usr/local/bin/docker-entrypoint.sh" ]
"""


@pytest.mark.parametrize(
    ("reference", "version", "noted"),
    [
        (f"versity/versitygw:v{PINNED}", PINNED, False),
        ("versity/versitygw:1.7.2", "1.7.2", False),
        ("docker.io/versity/versitygw:v1.9.0-rc1", "1.9.0-rc1", False),
        (f"ghcr.io/versity/versitygw:v{PINNED}", PINNED, False),
        ("versity/versitygw:latest", PINNED, True),
        ("versity/versitygw", PINNED, True),
    ],
)
def test_versitygw_images_name_a_module_version(reference: str, version: str, noted: bool) -> None:
    image = images.parse(reference)
    assert isinstance(image, images.VersityImage) and image.version == version
    assert ("means versitygw" in image.note) is noted


@pytest.mark.parametrize("reference", ["versity/versitygw:edge", "versity/versitygw:v1.8", "otherorg/versitygw:v1.8.0"])
def test_other_versitygw_tags_are_not_found(reference: str) -> None:
    with pytest.raises(images.ImageNotFound) as raised:
        images.parse(reference)
    assert str(raised.value).startswith(f'"{reference}" not found: ')
    assert "versity/versitygw:v<X.Y.Z>" in str(raised.value)


def test_the_image_config_is_the_dockerfiles_final_stage() -> None:
    config = objectstore.image_config(DOCKERFILE)
    assert config.entrypoint == ("/usr/local/bin/docker-entrypoint.sh",) and config.cmd == ()
    assert config.working_dir == "/"
    assert config.env == {"GREETING": "hello world", "EMPTY": ""}
    assert config.files == {
        "/usr/local/bin/versitygw": "versitygw",
        "/usr/local/bin/docker-entrypoint.sh": "docker-entrypoint.sh",
    }
    assert config.dirs == ("/tmp/vgw", "/tmp/setup", "/srv/data")
    assert objectstore.ImageConfig.from_json(config.to_json()) == config


def test_shell_forms_and_workdirs() -> None:
    config = objectstore.image_config("FROM a\nWORKDIR /srv\nWORKDIR data\nCMD versitygw --port :9000\n")
    assert config.cmd == ("/bin/sh", "-c", "versitygw --port :9000") and config.working_dir == "/srv/data"


def fake_build(cache: Path, version: str = PINNED, dockerfile: str = DOCKERFILE) -> Path:
    """A complete build in ``cache``, as ``objectstore.ensure_built`` leaves it."""
    directory = versions.artifact_dir(versions.versitygw_artifact(version), cache)
    (directory / "bin").mkdir(parents=True)
    for name in ("versitygw", "docker-entrypoint.sh"):
        (directory / "bin" / name).write_text("#!/bin/sh\n")
    (directory / "image.json").write_text(objectstore.image_config(dockerfile).to_json())
    (directory / ".complete").write_text(json.dumps({"version": version, "seconds": 1.0}))
    return directory


async def test_a_built_version_is_present_and_runs_as_the_image(tmp_path: Path) -> None:
    store = images.ImageStore(tmp_path)
    image = images.parse(f"versity/versitygw:v{PINNED}")
    assert isinstance(image, images.VersityImage)
    assert not store.present(image)
    directory = fake_build(tmp_path)
    assert store.present(image)

    runnable = await store.ensure(image, lambda _: None)
    assert runnable.venv == directory and runnable.host_paths == []
    assert runnable.image_files == (
        (str(directory / "bin" / "docker-entrypoint.sh"), "/usr/local/bin/docker-entrypoint.sh"),
        (str(directory / "bin" / "versitygw"), "/usr/local/bin/versitygw"),
    )
    assert runnable.image_dirs == ("/tmp/vgw", "/tmp/setup", "/srv/data")
    assert runnable.env == {"PATH": images.IMAGE_PATH, "HOME": "/root", "GREETING": "hello world", "EMPTY": ""}
    assert runnable.image_id == f"raykube-build://{directory}"
    assert f"versitygw v{PINNED} built from the Go module github.com/versity/versitygw" in runnable.description
    entrypoint, cmd = list(runnable.entrypoint), list(runnable.cmd)
    # As Kubernetes runs an image: args go to the ENTRYPOINT, a command replaces it.
    assert command_line({}, {}, entrypoint, cmd) == ["/usr/local/bin/docker-entrypoint.sh"]
    assert command_line({"args": ["posix", "/data"]}, {}, entrypoint, cmd) == [
        "/usr/local/bin/docker-entrypoint.sh",
        "posix",
        "/data",
    ]
    assert command_line({"command": ["versitygw"], "args": ["--version"]}, {}, entrypoint, cmd) == [
        "versitygw",
        "--version",
    ]


async def test_a_version_the_proxy_lacks_is_not_found_and_a_failed_build_a_failed_pull(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = images.ImageStore(tmp_path)
    image = images.parse("versity/versitygw:v9.9.9")
    assert isinstance(image, images.VersityImage)

    def missing(version: str, cache: Path, report: images.Report) -> objectstore.Built:
        raise objectstore.VersionNotFound(f"the Go module proxy has no github.com/versity/versitygw@v{version}")

    monkeypatch.setattr(objectstore, "ensure_built", missing)
    with pytest.raises(images.ImageNotFound, match=r'^"versity/versitygw:v9.9.9" not found: the Go module proxy has'):
        await store.ensure(image, lambda _: None)

    def broken(version: str, cache: Path, report: images.Report) -> objectstore.Built:
        raise BuildError("`go install` failed (exit 1)", detail="out of disk")

    monkeypatch.setattr(objectstore, "ensure_built", broken)
    with pytest.raises(images.InstallFailed, match=r"building versitygw v9\.9\.9 failed: `go install` failed"):
        await store.ensure(image, lambda _: None)


def test_the_recipe_tells_a_missing_version_from_a_failed_download(tmp_path: Path) -> None:
    """``go mod download`` failing because the proxy has no such version is VersionNotFound; any other failure (the
    proxy unreachable) stays a BuildError, retried as a failed pull."""

    class Runner:
        def __init__(self, output: str) -> None:
            self.output = output

        def run(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
            raise BuildError("`go mod download` failed (exit 1)", detail=self.output)

    recipe = objectstore.recipe("9.9.9")
    refused = "server response: This module version is not available."
    with pytest.raises(objectstore.VersionNotFound, match=r"has no github\.com/versity/versitygw@v9\.9\.9"):
        recipe(Runner(refused), tmp_path, tmp_path)  # type: ignore[arg-type]
    with pytest.raises(objectstore.VersionNotFound):
        recipe(Runner("404 Not Found\n\tserver response: not found: unknown revision v9.9.9"), tmp_path, tmp_path)  # type: ignore[arg-type]
    with pytest.raises(BuildError):
        recipe(Runner("dial tcp: lookup proxy.golang.org: no such host"), tmp_path, tmp_path)  # type: ignore[arg-type]


def test_a_half_built_directory_is_not_present(tmp_path: Path) -> None:
    directory = fake_build(tmp_path)
    (directory / ".complete").unlink()
    assert objectstore.built(PINNED, tmp_path) is None
    assert not build.is_built(versions.versitygw_artifact(), tmp_path)

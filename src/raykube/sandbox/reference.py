"""Fetch KubeRay's CRDs and samples, the reference the tests compare raykube against, from the Go module proxy.

The ``github.com/ray-project/kuberay/ray-operator`` module at ``versions.KUBERAY_VERSION`` holds
``config/crd/bases/*.yaml`` and ``config/samples/``. ``go mod download -json`` puts the module in Go's module cache
and prints its directory; we copy (the module cache is read-only, so never link into it) the two folders, upstream
file names and subfolders kept, to::

    <cache>/kuberay/v<version>/crd/        config/crd/bases
    <cache>/kuberay/v<version>/samples/    config/samples

Like the builds in :mod:`raykube.sandbox.build`, the copy is made in a ``.partial`` directory, marked complete and
renamed into place, under a file lock so concurrent runs wait for one another; a second call finds it and does
nothing. ``$RAYKUBE_KUBERAY_DIR`` may name an existing folder with ``crd/`` and ``samples/`` instead: then nothing is
fetched.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from raykube.sandbox import versions
from raykube.sandbox.build import GoRunner, Report, exclusive, find_go
from raykube.sandbox.errors import BuildError, SandboxError

ENV_OVERRIDE = "RAYKUBE_KUBERAY_DIR"
_COMPLETE = ".complete"
_FOLDERS = {"crd": ("config", "crd", "bases"), "samples": ("config", "samples")}


def _quiet(message: str) -> None:
    del message


def module_ref() -> str:
    """``github.com/ray-project/kuberay/ray-operator@v1.6.1``."""
    return f"{versions.KUBERAY_MODULE}@v{versions.KUBERAY_VERSION}"


def is_fetched(directory: Path) -> bool:
    """True once a fetch into ``directory`` finished: marked complete, both folders present."""
    return (directory / _COMPLETE).is_file() and all((directory / name).is_dir() for name in _FOLDERS)


def kuberay_reference(report: Report = _quiet, root: Path | None = None) -> Path:
    """The folder holding KubeRay's ``crd/`` and ``samples/``: ``$RAYKUBE_KUBERAY_DIR``, else the cache (fetched first
    if missing)."""
    if override := os.environ.get(ENV_OVERRIDE):
        return _checked_override(Path(override).expanduser())
    final = versions.kuberay_dir(root)
    if is_fetched(final):
        return final
    cache = root or versions.cache_root()
    with exclusive(cache / "kuberay.lock", report):
        if not is_fetched(final):  # again: a fetch we waited for may have done it
            fetch(final, cache, report)
    return final


def _checked_override(directory: Path) -> Path:
    missing = [name for name in _FOLDERS if not (directory / name).is_dir()]
    if missing:
        raise SandboxError(
            f"{ENV_OVERRIDE}={directory} has no {' or '.join(f'{m}/' for m in missing)} folder",
            hint=f"point {ENV_OVERRIDE} at a folder holding KubeRay v{versions.KUBERAY_VERSION}'s config/crd/bases "
            "as crd/ and config/samples as samples/, or unset it to fetch them from the Go module proxy",
        )
    return directory


def fetch(final: Path, cache: Path, report: Report) -> None:
    """Download the module with ``go mod download`` and copy its CRDs and samples to ``final``, atomically."""
    go = find_go(purpose=f"raykube fetches KubeRay's CRDs and samples ({module_ref()}) from the Go module proxy")
    partial = final.with_name(final.name + ".partial")
    work = cache / "work" / f"kuberay-v{versions.KUBERAY_VERSION}"
    log = cache / "logs" / f"fetch-kuberay-v{versions.KUBERAY_VERSION}.log"
    _remove(partial)
    partial.mkdir(parents=True)
    work.mkdir(parents=True, exist_ok=True)
    report(f"fetching KubeRay v{versions.KUBERAY_VERSION}'s CRDs and samples ({module_ref()}; log: {log})")
    started = time.monotonic()
    module = _download(GoRunner(go, log), work, log)
    copied = 0
    for name, parts in _FOLDERS.items():
        source = module.joinpath(*parts)
        if not source.is_dir():
            raise BuildError(
                f"{module_ref()} has no {'/'.join(parts)} (looked in {module})",
                hint=f"check versions.KUBERAY_VERSION and versions.KUBERAY_MODULE; the log is {log}",
            )
        copied += _copy_tree(source, partial / name)
    seconds = time.monotonic() - started
    (partial / _COMPLETE).write_text(
        json.dumps(
            {
                "module": module_ref(),
                "source": str(module),
                "files": copied,
                "go": go.version_string,
                "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )
        + "\n"
    )
    _remove(final)
    partial.rename(final)
    report(f"fetched KubeRay v{versions.KUBERAY_VERSION}'s CRDs and samples ({copied} files) in {seconds:.1f}s")


def _download(go: GoRunner, work: Path, log: Path) -> Path:
    """``go mod download -json <module>@<version>``; the module's directory in Go's module cache."""
    try:
        out = go.run("mod", "download", "-json", module_ref(), cwd=work)
    except BuildError as exc:
        raise BuildError(
            f"could not download {module_ref()} from the Go module proxy",
            detail=exc.detail,
            hint=f"check network access to the module proxy (`go env GOPROXY`), or set {ENV_OVERRIDE} to a folder "
            f"with KubeRay's crd/ and samples/; full log: {log}",
        ) from exc
    try:
        info = json.loads(out)
    except json.JSONDecodeError as exc:
        raise BuildError(f"`go mod download -json {module_ref()}` printed no JSON", hint=f"see {log}") from exc
    directory = info.get("Dir") if isinstance(info, dict) else None
    if not directory or info.get("Error"):
        raise BuildError(
            f"`go mod download -json {module_ref()}` gave no module directory: {info.get('Error') or out.strip()}",
            hint=f"see {log}",
        )
    return Path(directory)


def _copy_tree(source: Path, target: Path) -> int:
    """Copy the regular files under ``source`` (subfolders kept) as files of our own, writable; return the count."""
    count = 0
    for path in sorted(source.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        destination = target / path.relative_to(source)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)  # not copy2/copytree: they would carry the module cache's read-only modes
        destination.chmod(0o644)
        count += 1
    target.mkdir(parents=True, exist_ok=True)
    return count


def _remove(directory: Path) -> None:
    shutil.rmtree(directory, ignore_errors=True)

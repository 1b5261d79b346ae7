"""KubeRay v1.6.1's own spec hash, as a process the tests talk to: ``tools/kuberay/hash`` built once into the cache.

The helper (``tools/kuberay/hash/main.go``, in a module of its own requiring ``github.com/ray-project/kuberay/
ray-operator`` v1.6.1) is built the sandbox's way (:func:`raykube.sandbox.build.build_artifact`): its sources are
copied to ``<cache>/work/``, ``go generate`` copies KubeRay's hash functions out of the module (``tools/kuberay/
extract``), ``go build`` writes ``<cache>/bin/kuberay-hash-v1.6.1-<sources digest>-r1.partial/kuberay-hash``, renamed
into place when complete; the log is under ``<cache>/logs/``. It has a lock file of its own
(``<cache>/kuberay-hash.lock``), so that a sandbox build holding the cache's build lock does not hold it up. The
directory name carries a digest of the helper's sources: an edit builds a new binary (and removes the old one).
About a minute with a cold Go build cache, seconds with a warm one.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

from raykube.sandbox import versions
from raykube.sandbox.build import GoRunner, Report, build_artifact, exclusive, find_go, is_built
from raykube.sandbox.versions import Artifact

TOOLS = Path(__file__).resolve().parent.parent / "tools" / "kuberay"
_SOURCES = ("go.mod", "go.sum", "hash/main.go", "extract/main.go")
BINARY = "kuberay-hash"


def artifact() -> Artifact:
    digest = hashlib.sha256()
    for name in _SOURCES:
        digest.update(name.encode() + b"\0" + (TOOLS / name).read_bytes())
    return Artifact(BINARY, f"{versions.KUBERAY_VERSION}-{digest.hexdigest()[:10]}", (BINARY,))


def _recipe(go: GoRunner, work: Path, out: Path) -> None:
    shutil.rmtree(work)
    for name in _SOURCES:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TOOLS / name, work / name)
    go.run("generate", "./hash", cwd=work)
    go.run("build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", str(out / BINARY), "./hash", cwd=work)


def build(report: Report) -> Path:
    """The helper's path, built first if missing. Raises ``ToolchainError`` when Go is missing or too old."""
    helper = artifact()
    if not is_built(helper):
        with exclusive(versions.cache_root() / "kuberay-hash.lock", report):
            go = find_go(purpose="the tests build KubeRay's GenerateHashWithoutReplicasAndWorkersToDelete")
            build_artifact(helper, go, report, recipe=_recipe)  # a no-op when a run we waited for built it
            _remove_older_builds(helper)
    return versions.binary(helper)


def _remove_older_builds(helper: Artifact) -> None:
    """The binaries, work directories and logs of the helper's earlier sources."""
    cache = versions.cache_root()
    for old in (*(cache / "bin").glob(f"{BINARY}-v*"), *(cache / "work").glob(f"{BINARY}-v*")):
        if old.name != helper.dirname:
            shutil.rmtree(old, ignore_errors=True)
    for log in (cache / "logs").glob(f"build-{BINARY}-v*.log"):
        if log.name != f"build-{helper.dirname}.log":
            log.unlink(missing_ok=True)


class KubeRayHash:
    """The running helper: one RayCluster a line in, ``<hash as read> <hash after setDefaults>`` a line out."""

    def __init__(self, binary: Path) -> None:
        self.process = subprocess.Popen(
            [str(binary)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
            encoding="utf-8",
        )

    def hashes(self, spec_json: str) -> tuple[str, str]:
        """KubeRay's hashes of a spec (its JSON text, on one line): as the RayService controller and as the
        RayCluster controller compute it. Raises ``ValueError`` with KubeRay's message when Go cannot decode it."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        cluster = '{"apiVersion":"ray.io/v1","kind":"RayCluster","metadata":{"name":"c"},"spec":' + spec_json + "}"
        self.process.stdin.write(cluster + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if not answer or answer.startswith("error:"):
            raise ValueError(f"KubeRay's hash helper: {answer or 'no answer'}")
        as_read, defaulted = answer.split()
        return as_read, defaulted

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.process.wait(timeout=30)

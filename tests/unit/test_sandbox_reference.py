"""Fetching KubeRay's CRDs and samples (``raykube.sandbox.reference``) with a fake ``go`` and module: no network."""

from __future__ import annotations

import asyncio
import fcntl
import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from raykube.sandbox import ToolchainError, versions
from raykube.sandbox.errors import BuildError, SandboxError
from raykube.sandbox.reference import ENV_OVERRIDE, is_fetched, kuberay_reference, module_ref
from raykube.waiting import NotYet, wait_for

MODULE_FILES = {
    "config/crd/bases/ray.io_rayclusters.yaml": "kind: CustomResourceDefinition\n",
    "config/crd/bases/ray.io_rayjobs.yaml": "kind: CustomResourceDefinition\n",
    "config/samples/ray-cluster.sample.yaml": "kind: RayCluster\n",
    "config/samples/pytorch-mnist/ray-job.pytorch-mnist.yaml": "kind: RayJob\n",
    "config/samples/pytorch-mnist/train.py": "print('not ours to run')\n",
    "config/rbac/role.yaml": "kind: ClusterRole\n",  # not copied: only crd/bases and samples are
}


@pytest.fixture
def module(tmp_path: Path) -> Iterator[Path]:
    """A read-only module directory like the one in Go's module cache."""
    root = tmp_path / "gomodcache" / f"ray-operator@v{versions.KUBERAY_VERSION}"
    for relative, text in MODULE_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for path in sorted(root.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    yield root
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)


@pytest.fixture
def fake_go(tmp_path: Path, module: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``go`` on PATH that reports go1.26.8 and answers ``go mod download -json`` with ``module``; it logs its
    calls to the returned file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "go-calls.log"
    calls.write_text("")
    answer = json.dumps(
        {"Path": versions.KUBERAY_MODULE, "Version": f"v{versions.KUBERAY_VERSION}", "Dir": str(module)}
    )
    go = bin_dir / "go"
    go.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\nif [ "$1" = env ]; then echo go1.26.8; exit 0; fi\necho \'{answer}\'\n'
    )
    go.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv(ENV_OVERRIDE, raising=False)
    return calls


def _downloads(calls: Path) -> list[str]:
    return [line for line in calls.read_text().splitlines() if line.startswith("mod download")]


def test_the_first_call_fetches_and_copies_crds_and_samples(tmp_path: Path, fake_go: Path) -> None:
    cache = tmp_path / "cache"
    said: list[str] = []
    where = kuberay_reference(said.append, cache)
    assert where == cache / "kuberay" / f"v{versions.KUBERAY_VERSION}" == versions.kuberay_dir(cache)
    assert _downloads(fake_go) == [f"mod download -json {module_ref()}"]
    copied = sorted(str(p.relative_to(where)) for p in where.rglob("*") if p.is_file())
    assert copied == [
        ".complete",
        "crd/ray.io_rayclusters.yaml",
        "crd/ray.io_rayjobs.yaml",
        "samples/pytorch-mnist/ray-job.pytorch-mnist.yaml",
        "samples/pytorch-mnist/train.py",
        "samples/ray-cluster.sample.yaml",
    ]
    assert (where / "samples" / "ray-cluster.sample.yaml").read_text() == "kind: RayCluster\n"
    for path in where.rglob("*"):  # our own copies, not links into (or modes of) the read-only module cache
        assert not path.is_symlink()
        assert path.stat().st_mode & stat.S_IWUSR, path
    assert json.loads((where / ".complete").read_text())["module"] == module_ref()
    assert not where.with_name(where.name + ".partial").exists()
    assert said[0].startswith(f"fetching KubeRay v{versions.KUBERAY_VERSION}'s CRDs and samples")
    assert said[-1].startswith(f"fetched KubeRay v{versions.KUBERAY_VERSION}'s CRDs and samples (5 files)")


def test_a_second_call_does_nothing(tmp_path: Path, fake_go: Path) -> None:
    cache = tmp_path / "cache"
    first = kuberay_reference(lambda _: None, cache)
    fake_go.write_text("")
    said: list[str] = []
    assert kuberay_reference(said.append, cache) == first
    assert fake_go.read_text() == ""  # go was not even asked for its version
    assert said == []


def test_a_half_finished_fetch_is_not_taken_as_complete(tmp_path: Path, fake_go: Path) -> None:
    cache = tmp_path / "cache"
    final = versions.kuberay_dir(cache)
    partial = final.with_name(final.name + ".partial")
    (partial / "crd").mkdir(parents=True)  # an interrupted fetch
    (partial / "crd" / "stale.yaml").write_text("half")
    (final / "crd").mkdir(parents=True)  # and a folder that looks right but was never marked complete
    (final / "samples").mkdir()
    assert not is_fetched(final)
    assert kuberay_reference(lambda _: None, cache) == final
    assert len(_downloads(fake_go)) == 1
    assert is_fetched(final)
    assert (final / "samples" / "ray-cluster.sample.yaml").is_file()
    assert not partial.exists()


def test_the_override_is_used_as_is_and_nothing_is_fetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "kuberay"
    (mine / "crd").mkdir(parents=True)
    (mine / "samples").mkdir()
    monkeypatch.setenv(ENV_OVERRIDE, str(mine))
    monkeypatch.setenv("PATH", str(tmp_path / "no-go-here"))
    assert kuberay_reference(lambda _: None, tmp_path / "cache") == mine
    assert not (tmp_path / "cache").exists()


def test_an_override_without_samples_says_what_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kuberay" / "crd").mkdir(parents=True)
    monkeypatch.setenv(ENV_OVERRIDE, str(tmp_path / "kuberay"))
    with pytest.raises(SandboxError) as caught:
        kuberay_reference(lambda _: None, tmp_path / "cache")
    message = str(caught.value)
    assert f"{ENV_OVERRIDE}={tmp_path / 'kuberay'} has no samples/ folder" in message
    assert "or unset it to fetch them from the Go module proxy" in message


def test_a_missing_go_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_OVERRIDE, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError) as caught:
        kuberay_reference(lambda _: None, tmp_path / "cache")
    message = str(caught.value)
    assert "`go`" in message and "is not on PATH" in message
    assert f"fetches KubeRay's CRDs and samples ({module_ref()})" in message
    assert "install Go 1.26.0 or newer" in message
    assert not is_fetched(versions.kuberay_dir(tmp_path / "cache"))


def test_a_failed_download_names_the_proxy_and_the_override(tmp_path: Path, fake_go: Path) -> None:
    go = fake_go.parent / "bin" / "go"
    go.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = env ]; then echo go1.26.8; exit 0; fi\n'
        'echo \'{"Error": "dial tcp: lookup proxy.golang.org: no such host"}\'\n'
        "echo 'go: dial tcp: no such host' >&2\n"
        "exit 1\n"
    )
    with pytest.raises(BuildError) as caught:
        kuberay_reference(lambda _: None, tmp_path / "cache")
    message = str(caught.value)
    assert f"could not download {module_ref()} from the Go module proxy" in message
    assert "no such host" in message  # the log's tail
    assert "GOPROXY" in message and ENV_OVERRIDE in message
    assert not is_fetched(versions.kuberay_dir(tmp_path / "cache"))


async def test_a_concurrent_call_waits_for_the_lock_and_takes_what_the_holder_fetched(
    tmp_path: Path, fake_go: Path
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    said: list[str] = []
    with (cache / "kuberay.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run is fetching
        waiter = asyncio.ensure_future(asyncio.to_thread(kuberay_reference, said.append, cache))

        def waiting() -> bool | NotYet:
            return any("waiting for it to finish" in m for m in said) or NotYet(f"said so far: {said}")

        await wait_for(waiting, 30, what="the second run to wait for the lock")
        final = versions.kuberay_dir(cache)  # the other run finishes its fetch ...
        (final / "crd").mkdir(parents=True)
        (final / "samples").mkdir()
        (final / ".complete").write_text("{}\n")
        fcntl.flock(lock, fcntl.LOCK_UN)  # ... and lets go
        assert await asyncio.wait_for(waiter, 30) == final
    assert _downloads(fake_go) == []  # the waiter found it done and fetched nothing

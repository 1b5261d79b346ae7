"""The process runtime writes projected volumes as the kubelet's AtomicWriter does, and refreshes a running Pod's copies
when their ConfigMap or Secret changes: one ``..data`` symlink swap, so a reader sees one whole version."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from raykube.sandbox.kubelet import volumes
from raykube.sandbox.kubelet.env import NodeCapacity
from raykube.sandbox.kubelet.main import Runtime


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_the_first_write_links_each_name_through_data(tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    assert volumes.write_atomic(directory, {"tls.crt": (b"cert-1", 0o644), "sub/key": (b"k", 0o600)})
    data = directory / volumes.DATA_DIR
    assert data.is_symlink() and os.readlink(data).startswith("..")
    assert os.readlink(directory / "tls.crt") == "..data/tls.crt"
    assert os.readlink(directory / "sub") == "..data/sub"
    assert (directory / "tls.crt").read_bytes() == b"cert-1"
    assert ((directory / "sub" / "key").stat().st_mode & 0o777) == 0o600
    assert volumes.current_payload(directory) == {"tls.crt": (b"cert-1", 0o644), "sub/key": (b"k", 0o600)}


def test_an_equal_payload_changes_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    volumes.write_atomic(directory, {"tls.crt": (b"cert-1", 0o644)})
    before = os.readlink(directory / volumes.DATA_DIR)
    assert not volumes.write_atomic(directory, {"tls.crt": (b"cert-1", 0o644)})
    assert os.readlink(directory / volumes.DATA_DIR) == before


def test_an_update_swaps_data_in_one_rename_with_the_new_payload_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the moment of the swap the visible files are still the old version, whole, and the new payload is written in
    full beside them; after it, the new version is visible, the dropped name is gone and so is the old payload."""
    directory = tmp_path / "tls"
    volumes.write_atomic(directory, {"tls.crt": (b"cert-1", 0o644), "tls.key": (b"key-1", 0o644)})
    old_payload = os.readlink(directory / volumes.DATA_DIR)
    swaps: list[tuple[bytes, dict[str, bytes]]] = []
    rename = Path.rename

    def spy(self: Path, target: Any) -> Any:
        if Path(target).name == volumes.DATA_DIR:
            new_payload = self.resolve()
            swaps.append(
                (
                    (directory / "tls.crt").read_bytes(),
                    {p.name: p.read_bytes() for p in new_payload.iterdir()},
                )
            )
        return rename(self, target)

    monkeypatch.setattr(Path, "rename", spy)
    assert volumes.write_atomic(directory, {"tls.crt": (b"cert-2", 0o644), "ca.crt": (b"ca-2", 0o644)})
    assert swaps == [(b"cert-1", {"tls.crt": b"cert-2", "ca.crt": b"ca-2"})]
    assert (directory / "tls.crt").read_bytes() == b"cert-2"
    assert (directory / "ca.crt").read_bytes() == b"ca-2"
    assert not (directory / "tls.key").exists() and not (directory / "tls.key").is_symlink()
    assert not (directory / old_payload).exists()
    assert sorted(p.name for p in directory.iterdir() if not p.name.startswith("..")) == ["ca.crt", "tls.crt"]


def test_paths_that_leave_the_volume_or_hide_behind_dots_are_refused(tmp_path: Path) -> None:
    for bad in ("../escape", "/abs", "..data", "a/../../b"):
        with pytest.raises(volumes.VolumeError, match="invalid path"):
            volumes.write_atomic(tmp_path / "v", {bad: (b"x", 0o644)})


class Sources:
    """The API server's ConfigMaps and Secrets as the runtime reads them, and how many tokens were requested."""

    def __init__(self) -> None:
        self.secrets: dict[str, Mapping[str, Any]] = {"tls": {"data": {"tls.crt": _b64("cert-1")}}}
        self.configmaps: dict[str, Mapping[str, Any]] = {"settings": {"data": {"mode": "fast"}}}
        self.tokens = 0

    async def secret(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.secrets.get(name)

    async def configmap(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.configmaps.get(name)

    async def create(self, *_: Any, **__: Any) -> Mapping[str, Any]:  # the TokenRequest
        self.tokens += 1
        return {"status": {"token": f"token-{self.tokens}"}}


POD = {
    "metadata": {"name": "head", "namespace": "ns", "uid": "u1", "labels": {"a": "1"}},
    "spec": {
        "containers": [{"name": "ray"}],
        "volumes": [
            {"name": "ray-tls", "secret": {"secretName": "tls"}},
            {"name": "settings", "configMap": {"name": "settings"}},
            {"name": "scratch", "emptyDir": {}},
            {
                "name": "kube-api-access",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "optional": True}},
                        {"secret": {"name": "extra", "optional": True}},
                    ]
                },
            },
        ],
    },
}


def _context(pod_dir: Path, sources: Sources) -> volumes.VolumeContext:
    kube: Any = SimpleNamespace(create=sources.create)
    return volumes.VolumeContext(
        POD, pod_dir, kube, "10.0.0.2", "10.0.0.1", NodeCapacity(), sources.configmap, sources.secret, "node-0"
    )


async def test_refresh_follows_the_secret_and_keeps_the_token(tmp_path: Path) -> None:
    sources = Sources()
    paths = await volumes.prepare(_context(tmp_path, sources))
    assert (paths["ray-tls"] / "tls.crt").read_bytes() == b"cert-1"
    assert await volumes.refresh(_context(tmp_path, sources)) == []

    sources.secrets["tls"] = {"data": {"tls.crt": _b64("cert-2"), "ca.crt": _b64("ca")}}
    sources.configmaps["kube-root-ca.crt"] = {"data": {"ca.crt": "root"}}
    assert await volumes.refresh(_context(tmp_path, sources)) == ["ray-tls", "kube-api-access"]
    assert (paths["ray-tls"] / "tls.crt").read_bytes() == b"cert-2"
    assert (paths["ray-tls"] / "ca.crt").read_bytes() == b"ca"
    assert (paths["kube-api-access"] / "ca.crt").read_bytes() == b"root"
    assert (paths["kube-api-access"] / "token").read_bytes() == b"token-1"
    assert sources.tokens == 1, "a refresh requested a new service account token"


async def test_a_source_that_goes_away_leaves_the_files(tmp_path: Path) -> None:
    sources = Sources()
    paths = await volumes.prepare(_context(tmp_path, sources))
    del sources.secrets["tls"]
    assert await volumes.refresh(_context(tmp_path, sources)) == []
    assert (paths["ray-tls"] / "tls.crt").read_bytes() == b"cert-1"


def test_sources_names_what_the_volumes_project() -> None:
    assert volumes.sources(POD) == {
        ("secret", "tls"),
        ("configMap", "settings"),
        ("configMap", "kube-root-ca.crt"),
        ("secret", "extra"),
    }


def test_a_changed_secret_wakes_only_the_pods_that_project_it() -> None:
    def worker(namespace: str, pod: Mapping[str, Any]) -> Any:
        sandbox = SimpleNamespace(sources_changed=SimpleNamespace(set=lambda: woken.append(namespace)))
        return SimpleNamespace(ctx=SimpleNamespace(namespace=namespace), pod=pod, sandbox=sandbox)

    woken: list[str] = []
    runtime: Any = SimpleNamespace(workers={"u1": (worker("ns", POD), None), "u2": (worker("other", POD), None)})
    Runtime._on_volume_source(runtime, "secret", {"metadata": {"name": "tls", "namespace": "ns"}})
    assert woken == ["ns"]
    Runtime._on_volume_source(runtime, "configMap", {"metadata": {"name": "tls", "namespace": "ns"}})
    assert woken == ["ns"], "a ConfigMap named like the Secret woke the Pod"

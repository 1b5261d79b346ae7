"""A Pod's volumes as host directories, and each container's mounts of them.

* ``emptyDir``: a directory in the Pod's state directory; with ``medium: Memory`` a tmpfs (``sizeLimit`` as its
  size) that exists only in the Pod sandbox's mount namespace, so it is gone with the Pod;
* ``persistentVolumeClaim``: the bound PersistentVolume's ``hostPath`` or ``local.path``. A volume of the sandbox's
  provisioner is a hostPath volume, and a hostPath lives on the node that mounts it (on a real multi-node cluster
  each node has its own directory at that path): process nodes share one machine, so each node gets its own
  subdirectory ``<the PV's path>/<node name>``. Pods on one node share it, Pods on different nodes do not (Ray
  nodes that share one ``/tmp/ray`` race for their socket names and crash);
* ``hostPath``: that host path (``DirectoryOrCreate``/``FileOrCreate`` create it, as the kubelet does);
* ``configMap``, ``secret``, ``downwardAPI`` and ``projected`` (including ``serviceAccountToken`` from the
  TokenRequest API): files with ``items``, ``defaultMode`` and per-item ``mode``, written as the kubelet's
  AtomicWriter writes them (:func:`write_atomic`): the payload in a timestamped ``..<time>`` directory, ``..data`` a
  symlink to it, each top-level name a symlink through ``..data``. A running Pod's copies are refreshed when the
  ConfigMap or Secret changes (:func:`refresh`, driven by the runtime's watch of both kinds) by swapping ``..data``
  with one rename, so a reader sees the old payload or the new one, never half of each. A token is kept as it was
  (the kubelet renews one at 80% of its life; the sandbox's tokens last longer than its Pods).

Anything else is refused with a ``FailedMount`` that names the supported kinds. Mount points inside containers are
created in the container's own overlay, never on the host.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, SERVICE_ACCOUNTS
from raykube.sandbox.kubelet.env import (
    ContainerConfigError,
    NodeCapacity,
    expand,
    field_value,
    quantity,
    resource_value,
)
from raykube.sandbox.kwok import PROVISIONER_NAME
from raykube.sandbox.provisioner import PROVISIONED_BY

SUPPORTED = ("emptyDir", "hostPath", "persistentVolumeClaim", "configMap", "secret", "downwardAPI", "projected")
DEFAULT_MODE = 0o644
DEFAULT_TOKEN_SECONDS = 3607


class VolumeError(Exception):
    """A volume cannot be set up (the kubelet's ``FailedMount``); the message is the kubelet's."""


@dataclass(frozen=True)
class MemoryVolume:
    path: Path
    size_bytes: int | None

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "sizeBytes": self.size_bytes}


def _kind(volume: Mapping[str, Any]) -> str:
    kinds = [key for key in volume if key != "name"]
    return kinds[0] if kinds else "unknown"


def volume_dir(pod_dir: Path, name: str) -> Path:
    return pod_dir / "volumes" / name


def memory_volumes(pod: Mapping[str, Any], pod_dir: Path) -> list[MemoryVolume]:
    """The tmpfs volumes the Pod sandbox mounts (``emptyDir: {medium: Memory}``)."""
    found = []
    for volume in pod["spec"].get("volumes") or []:
        empty = volume.get("emptyDir")
        if empty is not None and empty.get("medium") == "Memory":
            size = empty.get("sizeLimit")
            found.append(MemoryVolume(volume_dir(pod_dir, volume["name"]), int(quantity(size)) if size else None))
    return found


DATA_DIR = "..data"  # the kubelet's AtomicWriter: the symlink to the current payload directory
_DATA_TMP = "..data_tmp"
Files = dict[str, tuple[bytes, int]]


def _check_paths(files: Mapping[str, tuple[bytes, int]]) -> None:
    for relative in files:
        parts = Path(relative).parts
        if ".." in parts or relative.startswith("/") or not parts or parts[0].startswith(".."):
            raise VolumeError(f"invalid path {relative!r}: must be relative and must not contain '..'")


def current_payload(directory: Path) -> Files | None:
    """The files under ``directory/..data`` with their modes, or None before the first :func:`write_atomic`."""
    data = directory / DATA_DIR
    if not data.is_symlink():
        return None
    root = data.resolve()
    found: Files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            found[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mode & 0o7777)
    return found


def write_atomic(directory: Path, files: Mapping[str, tuple[bytes, int]]) -> bool:
    """Write ``files`` (relative path -> content, mode) into ``directory`` the way the kubelet's AtomicWriter does;
    return whether anything changed.

    The payload goes to a new ``..<time>`` directory; ``..data_tmp`` is made a symlink to it and renamed over
    ``..data`` (one rename: atomic), then each top-level name of the payload is a symlink ``name -> ..data/name``
    (names the new payload drops are removed) and the old payload directory goes. A process that opens
    ``directory/tls.crt`` at any moment reads one whole version. A payload equal to the current one changes nothing.
    """
    _check_paths(files)
    if current_payload(directory) == dict(files):
        return False
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / DATA_DIR
    old = os.readlink(data) if data.is_symlink() else None
    stamp = f"..{time.strftime('%Y_%m_%d_%H_%M_%S', time.gmtime())}.{time.monotonic_ns()}"
    payload = directory / stamp
    payload.mkdir()
    for relative, (content, mode) in files.items():
        target = payload / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        target.chmod(mode)
    payload.chmod(0o755)
    tmp = directory / _DATA_TMP
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(stamp)
    tmp.rename(data)  # rename(2) replaces the old symlink atomically
    visible = {Path(relative).parts[0] for relative in files}
    for name in visible:
        link = directory / name
        if not link.is_symlink():
            if link.is_dir():
                shutil.rmtree(link)
            elif link.exists():
                link.unlink()
            link.symlink_to(f"{DATA_DIR}/{name}")
    for entry in directory.iterdir():
        if entry.name.startswith("..") or entry.name in visible:
            continue
        if entry.is_symlink() or entry.is_file():
            entry.unlink()
        else:
            shutil.rmtree(entry)
    if old is not None and old != stamp:
        shutil.rmtree(directory / old, ignore_errors=True)
    return True


def _project(
    data: Mapping[str, bytes], items: list[Mapping[str, Any]] | None, default_mode: int, *, what: str, optional: bool
) -> dict[str, tuple[bytes, int]]:
    """``items`` (key -> path, mode) of a ConfigMap or Secret, or every key when there are none."""
    if not items:
        return {key: (value, default_mode) for key, value in data.items()}
    files: dict[str, tuple[bytes, int]] = {}
    for item in items:
        key = item["key"]
        if key not in data:
            if optional:
                continue
            raise VolumeError(f"configured to use key {key} of {what}, but that key does not exist")
        files[item["path"]] = (data[key], int(item.get("mode", default_mode)))
    return files


Getter = Callable[[str, str], Awaitable[Mapping[str, Any] | None]]


@dataclass
class VolumeContext:
    pod: Mapping[str, Any]
    pod_dir: Path
    kube: Kube
    pod_ip: str
    host_ip: str
    node: NodeCapacity
    configmap: Getter
    secret: Getter
    node_name: str = ""  # the process node the Pod runs on: the sandbox provisioner's volumes are node-local

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"]["namespace"])

    async def configmap_files(self, source: Mapping[str, Any], default_mode: int) -> dict[str, tuple[bytes, int]]:
        name, optional = source["name"], bool(source.get("optional"))
        cm = await self.configmap(self.namespace, name)
        if cm is None:
            if optional:
                return {}
            raise VolumeError(f'configmap "{name}" not found')
        data = {k: str(v).encode() for k, v in (cm.get("data") or {}).items()}
        data.update({k: base64.b64decode(v) for k, v in (cm.get("binaryData") or {}).items()})
        return _project(
            data, source.get("items"), default_mode, what=f"configMap {self.namespace}/{name}", optional=optional
        )

    async def secret_files(
        self, source: Mapping[str, Any], name_key: str, default_mode: int
    ) -> dict[str, tuple[bytes, int]]:
        name, optional = source[name_key], bool(source.get("optional"))
        sec = await self.secret(self.namespace, name)
        if sec is None:
            if optional:
                return {}
            raise VolumeError(f'secret "{name}" not found')
        data = {k: base64.b64decode(v) for k, v in (sec.get("data") or {}).items()}
        return _project(
            data, source.get("items"), default_mode, what=f"secret {self.namespace}/{name}", optional=optional
        )

    def downward_files(self, items: list[Mapping[str, Any]], default_mode: int) -> dict[str, tuple[bytes, int]]:
        files: dict[str, tuple[bytes, int]] = {}
        for item in items:
            try:
                if ref := item.get("fieldRef"):
                    value = field_value(self.pod, ref["fieldPath"], pod_ip=self.pod_ip, host_ip=self.host_ip)
                elif ref := item.get("resourceFieldRef"):
                    containers = self.pod["spec"]["containers"]
                    value = resource_value(self.pod, containers[0], ref, self.node)
                else:
                    continue
            except ContainerConfigError as exc:
                raise VolumeError(str(exc)) from exc
            files[item["path"]] = (value.encode(), int(item.get("mode", default_mode)))
        return files

    async def token_file(self, source: Mapping[str, Any]) -> dict[str, tuple[bytes, int]]:
        meta, spec = self.pod["metadata"], self.pod["spec"]
        account = spec.get("serviceAccountName") or "default"
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": [source["audience"]] if source.get("audience") else [],
                "expirationSeconds": int(source.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS),
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]},
            },
        }
        try:
            response = await self.kube.create(SERVICE_ACCOUNTS, body, self.namespace, name=account, subresource="token")
        except ApiError as exc:
            raise VolumeError(f"failed to fetch token: {exc.message}") from exc
        return {source["path"]: (str(response["status"]["token"]).encode(), DEFAULT_MODE)}


async def prepare(context: VolumeContext) -> dict[str, Path]:
    """Create every volume of the Pod; the host path of each by name. Raises VolumeError (FailedMount)."""
    paths: dict[str, Path] = {}
    for volume in context.pod["spec"].get("volumes") or []:
        name, kind = volume["name"], _kind(volume)
        try:
            paths[name] = await _prepare_one(context, volume, kind)
        except VolumeError as exc:
            raise VolumeError(f'MountVolume.SetUp failed for volume "{name}" : {exc}') from exc
    return paths


async def _prepare_one(context: VolumeContext, volume: Mapping[str, Any], kind: str) -> Path:
    name = volume["name"]
    directory = volume_dir(context.pod_dir, name)
    source = volume.get(kind) or {}
    if kind == "emptyDir":
        directory.mkdir(parents=True, exist_ok=True)  # a Memory one is the pause's tmpfs at this same path
        directory.chmod(0o777)
        return directory
    if kind == "hostPath":
        return _host_path(source)
    if kind == "persistentVolumeClaim":
        return await _claim_path(context, source["claimName"])
    if kind not in SUPPORTED:
        raise VolumeError(
            f"{kind} volumes are not supported by the sandbox's process runtime (it supports {', '.join(SUPPORTED)})"
        )
    write_atomic(directory, await _payload(context, source, kind, None))
    return directory


def _projects(kind: str) -> bool:
    """Whether a volume of ``kind`` is a payload of files the runtime writes (and refreshes)."""
    return kind in ("configMap", "secret", "downwardAPI", "projected")


async def _payload(context: VolumeContext, source: Mapping[str, Any], kind: str, current: Files | None) -> Files:
    """The files of a configMap, secret, downwardAPI or projected volume; ``current`` (on a refresh) keeps the
    service account tokens already written."""
    default_mode = int(source.get("defaultMode", DEFAULT_MODE))
    files: Files = {}
    if kind == "configMap":
        files = await context.configmap_files(source, default_mode)
    elif kind == "secret":
        files = await context.secret_files(source, "secretName", default_mode)
    elif kind == "downwardAPI":
        files = context.downward_files(source.get("items") or [], default_mode)
    else:  # projected
        for part in source.get("sources") or []:
            if sub := part.get("configMap"):
                files.update(await context.configmap_files(sub, default_mode))
            elif sub := part.get("secret"):
                files.update(await context.secret_files(sub, "name", default_mode))
            elif sub := part.get("downwardAPI"):
                files.update(context.downward_files(sub.get("items") or [], default_mode))
            elif sub := part.get("serviceAccountToken"):
                kept = (current or {}).get(sub["path"])
                files.update({sub["path"]: kept} if kept else await context.token_file(sub))
            else:
                raise VolumeError(f"projected source {sorted(part)} is not supported by the process runtime")
    return files


def sources(pod: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The ConfigMaps and Secrets the Pod's volumes project, as ``("configMap"|"secret", name)``: whose changes
    :func:`refresh` follows."""
    found: set[tuple[str, str]] = set()
    for volume in pod["spec"].get("volumes") or []:
        if (cm := volume.get("configMap")) is not None:
            found.add(("configMap", str(cm.get("name"))))
        elif (secret := volume.get("secret")) is not None:
            found.add(("secret", str(secret.get("secretName"))))
        for part in (volume.get("projected") or {}).get("sources") or []:
            if (cm := part.get("configMap")) is not None:
                found.add(("configMap", str(cm.get("name"))))
            elif (secret := part.get("secret")) is not None:
                found.add(("secret", str(secret.get("name"))))
    return found


async def refresh(context: VolumeContext) -> list[str]:
    """Bring the Pod's configMap, secret, downwardAPI and projected volumes up to date (as the kubelet's sync does
    for a running Pod); return the names of the volumes that changed. A volume whose source cannot be read now (a
    Secret deleted, say) keeps its files, as the kubelet keeps them."""
    changed = []
    for volume in context.pod["spec"].get("volumes") or []:
        kind = _kind(volume)
        if not _projects(kind):
            continue
        directory = volume_dir(context.pod_dir, volume["name"])
        current = current_payload(directory)
        if current is None:
            continue  # not mounted (yet): prepare writes it
        try:
            files = await _payload(context, volume.get(kind) or {}, kind, current)
        except VolumeError:
            continue
        if write_atomic(directory, files):
            changed.append(str(volume["name"]))
    return changed


def _host_path(source: Mapping[str, Any]) -> Path:
    path = Path(source["path"])
    kind = source.get("type") or ""
    if kind == "DirectoryOrCreate":
        path.mkdir(parents=True, exist_ok=True)
    elif kind == "FileOrCreate":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    elif kind == "Directory" and not path.is_dir():
        raise VolumeError(f"hostPath type check failed: {path} is not a directory")
    elif kind == "File" and not path.is_file():
        raise VolumeError(f"hostPath type check failed: {path} is not a file")
    elif kind == "" and not path.exists():
        path.mkdir(parents=True, exist_ok=True)
    return path


async def _claim_path(context: VolumeContext, claim: str) -> Path:
    pvc = await context.kube.get_or_none(PERSISTENT_VOLUME_CLAIMS, claim, context.namespace)
    if pvc is None:
        raise VolumeError(f'persistentvolumeclaim "{claim}" not found')
    volume_name = (pvc.get("spec") or {}).get("volumeName")
    if (pvc.get("status") or {}).get("phase") != "Bound" or not volume_name:
        raise VolumeError(f'persistentvolumeclaim "{claim}" is not bound')
    pv = await context.kube.get_or_none(PERSISTENT_VOLUMES, volume_name)
    if pv is None:
        raise VolumeError(f'persistentvolume "{volume_name}" not found')
    spec = pv.get("spec") or {}
    annotations = (pv.get("metadata") or {}).get("annotations") or {}
    for source in ("hostPath", "local"):
        if spec.get(source, {}).get("path"):
            path = Path(spec[source]["path"])
            if annotations.get(PROVISIONED_BY) == PROVISIONER_NAME and context.node_name:
                # A hostPath volume lives on the node that mounts it: on a real cluster each node has its own
                # directory at that path. Process nodes share one machine, so each gets a subdirectory.
                path = path / context.node_name
            path.mkdir(parents=True, exist_ok=True)
            return path
    raise VolumeError(
        f'persistentvolume "{volume_name}" is neither hostPath nor local: the process runtime cannot mount it'
    )


def container_mounts(
    container: Mapping[str, Any], volumes: Mapping[str, Path], env: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The bind mounts of one container (subPath and subPathExpr resolved, created when missing)."""
    mounts = []
    for mount in container.get("volumeMounts") or []:
        source = volumes.get(mount["name"])
        if source is None:
            raise ContainerConfigError(f'cannot find volume "{mount["name"]}" to mount into container')
        sub = mount.get("subPath") or ""
        if mount.get("subPathExpr"):
            sub = expand(str(mount["subPathExpr"]), env.get)
        if sub:
            if ".." in Path(sub).parts or sub.startswith("/"):
                raise ContainerConfigError(f"invalid subPath {sub!r}: must be a relative path without '..'")
            source = source / sub
            if not source.exists():
                source.mkdir(parents=True, exist_ok=True)
        mounts.append({"source": str(source), "target": mount["mountPath"], "readOnly": bool(mount.get("readOnly"))})
    return mounts


def remove_pod_dir(pod_dir: Path) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(pod_dir)


def ensure_mode(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):
        os.chmod(path, mode)

"""A Docker-free local Kubernetes: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake nodes,
built from the Go module proxy and run as local processes, every listener on 127.0.0.1.

Public surface: :class:`Sandbox` (up, down, status), :class:`SandboxConfig` and :class:`NodePool`, :class:`Ports`,
:func:`build_all`, :func:`kuberay_reference` (KubeRay's CRDs and samples, fetched for the tests), and
:class:`SandboxError` with its subclasses. Names are imported on first use, so a command that only needs the pinned
versions does not pay for the Kubernetes client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raykube.sandbox.build import build_all
    from raykube.sandbox.cluster import Sandbox, Status, UpResult, state_root
    from raykube.sandbox.components import Binaries, NodePool, SandboxConfig
    from raykube.sandbox.errors import (
        BuildError,
        ComponentFailed,
        NotBuiltError,
        PortInUseError,
        SandboxError,
        ToolchainError,
    )
    from raykube.sandbox.ports import Ports
    from raykube.sandbox.reference import kuberay_reference

_EXPORTS = {
    "build_all": "build",
    "Sandbox": "cluster",
    "Status": "cluster",
    "UpResult": "cluster",
    "state_root": "cluster",
    "Binaries": "components",
    "NodePool": "components",
    "SandboxConfig": "components",
    "BuildError": "errors",
    "ComponentFailed": "errors",
    "NotBuiltError": "errors",
    "PortInUseError": "errors",
    "SandboxError": "errors",
    "ToolchainError": "errors",
    "Ports": "ports",
    "kuberay_reference": "reference",
}
__all__ = [
    "Binaries",
    "BuildError",
    "ComponentFailed",
    "NodePool",
    "NotBuiltError",
    "PortInUseError",
    "Ports",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "Status",
    "ToolchainError",
    "UpResult",
    "build_all",
    "kuberay_reference",
    "state_root",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)

"""A Docker-free local Kubernetes: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake nodes,
built from the Go module proxy and run as local processes, every listener on 127.0.0.1.

Public surface: :class:`Sandbox` (up, down, status), :class:`SandboxConfig` and :class:`NodePool`, :class:`Ports`,
:func:`build_all`, and :class:`SandboxError` with its subclasses.
"""

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
    "state_root",
]

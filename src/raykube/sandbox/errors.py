"""Errors the sandbox reports to people: each says what went wrong and what to do about it."""

from __future__ import annotations


class SandboxError(Exception):
    """A failure with a message fit for a terminal. ``hint`` says what to do next, ``detail`` shows evidence."""

    def __init__(self, message: str, *, hint: str | None = None, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.detail = detail

    def __str__(self) -> str:
        parts = [self.message]
        if self.detail:
            parts.append(self.detail.rstrip())
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class ToolchainError(SandboxError):
    """Go is missing or too old to build the control plane."""


class BuildError(SandboxError):
    """A build step failed; ``detail`` holds the tail of its log."""


class PortInUseError(SandboxError):
    """A port the sandbox needs is held by another process."""

    def __init__(self, port: int, component: str, holder: str) -> None:
        super().__init__(
            f"port 127.0.0.1:{port} (for {component}) is already in use by {holder}",
            hint="stop that process, or choose other ports with --port-base",
        )
        self.port = port
        self.component = component
        self.holder = holder


class ComponentFailed(SandboxError):
    """A control-plane component exited or never became healthy while the sandbox started."""


class NotBuiltError(SandboxError):
    """The binaries for this version are not in the cache."""

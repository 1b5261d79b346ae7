"""The one error the Go emulation raises: :class:`GoError`."""

from __future__ import annotations

__all__ = ["GoError"]


class GoError(ValueError):
    """A value Go's library would refuse, with the message it would give where we know it."""

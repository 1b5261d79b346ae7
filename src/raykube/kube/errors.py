"""Errors of the Kubernetes layer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ApiError(Exception):
    """A non-2xx answer from the API server, with its Status."""

    def __init__(self, code: int, reason: str = "", message: str = "", body: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}" if reason else f"{code}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.body = dict(body or {})
        self.retry_after: float | None = None  # seconds the server asked us to wait (429/5xx with Retry-After)

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def conflict(self) -> bool:
        """409: AlreadyExists on create, Conflict on a stale resourceVersion."""
        return self.code == 409

    @property
    def already_exists(self) -> bool:
        return self.code == 409 and self.reason == "AlreadyExists"

    @property
    def gone(self) -> bool:
        """410: a watch or list resourceVersion too old to serve."""
        return self.code == 410

    @property
    def forbidden(self) -> bool:
        return self.code == 403


class OutsideRbac(PermissionError):
    """A client built with RBAC rules was asked for a call those rules do not grant (raised before sending it)."""

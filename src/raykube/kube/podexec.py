"""The ``pods/exec`` streaming protocol (KEP-4006, over WebSockets): its subprotocols, channels, the result of a
command, and the exit code in the error channel's Status.

Split from :mod:`raykube.kube.client`, whose :meth:`~raykube.kube.client.Kube.exec` opens the stream (through the
client's RBAC check, rate limiter and observer) and reads it with these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from raykube.kube.decode import _decode
from raykube.kube.errors import ApiError


@dataclass(frozen=True)
class ExecResult:
    """What a command run in a container (``pods/exec``) wrote and how it ended."""

    stdout: str
    stderr: str
    exit_code: int
    raw_stdout: bytes = b""  # stdout as sent (a tar stream, say), before decoding


# The exec streaming protocol (KEP-4006, WebSockets): each binary message starts with its channel.
EXEC_PROTOCOLS = ["v5.channel.k8s.io", "v4.channel.k8s.io"]
_STDOUT, _STDERR, _ERROR = 1, 2, 3
EXEC_DRAIN_SECONDS = 2.0  # after the exec's Status, how long to wait for the server to close the stream


def exec_status(message: bytes) -> int:
    """The exit code in the error channel's Status: 0 on Success, the ``ExitCode`` cause of a ``NonZeroExitCode``;
    any other failure (no such container, the container runtime refused) raises :class:`ApiError`."""
    status = _decode(message) if message.strip() else {}
    if not isinstance(status, dict) or status.get("status") != "Failure":
        return 0
    if status.get("reason") == "NonZeroExitCode":
        for cause in (status.get("details") or {}).get("causes") or []:
            if cause.get("reason") == "ExitCode":
                try:
                    return int(cause.get("message", ""))
                except ValueError:
                    break
        return -1
    # kwok (and Go's os/exec behind some runtimes) report a command's failure as an error "...: exit status N".
    if found := re.search(r"exit status (\d+)$", str(status.get("message", ""))):
        return int(found.group(1))
    raise ApiError(
        int(status.get("code") or 500), str(status.get("reason", "")), str(status.get("message", "")), status
    )

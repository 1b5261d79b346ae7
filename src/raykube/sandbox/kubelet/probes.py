"""Container probes, as the kubelet runs them (``pkg/probe``): exec in the container, HTTP GET and TCP from the host.

The host reaches every Pod IP through the sandbox bridge, as a node reaches its Pods. Results carry the kubelet's
wording, which ends up in ``Unhealthy`` events ("Readiness probe failed: ...").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2

MAX_OUTPUT = 10 * 1024


@dataclass(frozen=True)
class Target:
    """What a probe of one running container needs."""

    pod_ip: str
    pid: int
    env: Mapping[str, str]
    ports: Sequence[Mapping[str, Any]]  # the container's declared ports (for named probe ports)


@dataclass(frozen=True)
class Result:
    ok: bool
    message: str = ""


def resolve_port(port: Any, ports: Sequence[Mapping[str, Any]]) -> int:
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for declared in ports:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    raise ValueError(f"port {port!r} is not a declared container port")


def nsenter_argv(pid: int, command: Sequence[str]) -> list[str]:
    return [
        "nsenter",
        f"--target={pid}",
        "--mount",
        "--uts",
        "--ipc",
        "--net",
        "--pid",
        "--root",
        "--wd",
        "--",
        *command,
    ]


async def run_in_container(
    target: Target, command: Sequence[str], timeout: float, stdin: bytes | None = None
) -> tuple[int | None, bytes]:
    """(exit code, combined output) of ``command`` in the container; exit code None on timeout."""
    proc = await asyncio.create_subprocess_exec(
        *nsenter_argv(target.pid, command),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=dict(target.env),
        start_new_session=True,
    )
    try:
        output, _ = await asyncio.wait_for(proc.communicate(stdin), timeout)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return None, b""
    return proc.returncode, output[-MAX_OUTPUT:]


async def probe(spec: Mapping[str, Any], target: Target) -> Result:  # noqa: PLR0911 - one result per outcome
    timeout = float(spec.get("timeoutSeconds") or 1)
    if handler := spec.get("exec"):
        command = list(handler.get("command") or [])
        code, output = await run_in_container(target, command, timeout)
        if code is None:
            return Result(False, f'command "{" ".join(command)}" timed out')
        text = output.decode(errors="replace")
        return Result(code == 0, text if code == 0 else (text or f"command failed with exit code {code}"))
    if handler := spec.get("httpGet"):
        return await _http(handler, target, timeout)
    if handler := spec.get("tcpSocket"):
        host = handler.get("host") or target.pod_ip
        try:
            port = resolve_port(handler.get("port"), target.ports)
        except ValueError as exc:
            return Result(False, str(exc))
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except TimeoutError:
            return Result(False, f"dial tcp {host}:{port}: i/o timeout")
        except OSError as exc:
            return Result(False, f"dial tcp {host}:{port}: connect: {(exc.strerror or str(exc)).lower()}")
        writer.close()
        return Result(True)
    if spec.get("grpc"):
        return Result(False, "gRPC probes are not supported by the sandbox's process runtime")
    return Result(False, "the probe has no handler")


async def _http(handler: Mapping[str, Any], target: Target, timeout: float) -> Result:
    scheme = str(handler.get("scheme") or "HTTP").lower()
    host = handler.get("host") or target.pod_ip
    try:
        port = resolve_port(handler.get("port"), target.ports)
    except ValueError as exc:
        return Result(False, str(exc))
    path = str(handler.get("path") or "/")
    if not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{host}:{port}{path}"
    headers = {"User-Agent": "kube-probe/1.36", "Accept": "*/*"}
    for header in handler.get("httpHeaders") or []:
        headers[header["name"]] = header["value"]
    try:
        async with httpx2.AsyncClient(verify=False, trust_env=False, timeout=timeout) as http:
            response = await http.get(url, headers=headers)
    except httpx2.TimeoutException:
        return Result(False, f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)')
    except httpx2.HTTPError as exc:
        cause = exc.__cause__ or exc
        reason = getattr(cause, "strerror", None) or str(cause) or exc.__class__.__name__
        return Result(False, f'Get "{url}": dial tcp {host}:{port}: connect: {str(reason).lower()}')
    if 200 <= response.status_code < 400:
        return Result(True, response.text[:MAX_OUTPUT])
    return Result(False, f"HTTP probe failed with statuscode: {response.status_code}")

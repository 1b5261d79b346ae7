"""Connecting to an API server: kubeconfig or in-cluster config, read by lightkube, into the authenticated
``httpx2`` client :class:`~raykube.kube.client.Kube` sends with, on aiohttp's connections (:mod:`.transport`).

lightkube does what it is good at here, and only here: reading kubeconfig / in-cluster config and the credentials
it names. Split from :mod:`raykube.kube.client` (:meth:`~raykube.kube.client.Kube.from_config`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx2
from lightkube import KubeConfig
from lightkube.config.client_adapter import ConnectionParams

from raykube.kube.transport import AiohttpTransport, Direct


@dataclass(frozen=True)
class Connection:
    """An authenticated client for one kubeconfig context, that context's namespace, and the direct path on the same
    connections when its credentials allow it (:class:`~raykube.kube.transport.Direct`)."""

    http: httpx2.AsyncClient
    namespace: str
    direct: Direct | None


def connect(kubeconfig: Path | None, *, context: str | None, burst: int, user_agent: str, timeout: float) -> Connection:
    """From a kubeconfig file, else ``$KUBECONFIG`` / ``~/.kube/config``, else the in-cluster ServiceAccount;
    ``context`` (default: the current one) also gives the namespace; enough connections for ``burst``."""
    config = KubeConfig.from_file(kubeconfig) if kubeconfig else KubeConfig.from_env()
    single = config.get(context)
    if single is None:
        raise ValueError(f"kubeconfig has no context {context!r}")
    # trust_env=False: the API server is reached directly, never through an HTTP proxy from the environment.
    # HTTP/1.1, not client-go's HTTP/2: aiohttp speaks only HTTP/1.1, and httpcore2's HTTP/2, tried before, lost a
    # shared watch's events and never reset a stream closed early (encode/httpcore#943; docs "Scale").
    params = ConnectionParams(timeout=httpx2.Timeout(timeout), trust_env=False).httpx_params(single)
    # httpx2's API on aiohttp's connections (kube/transport.py: 0.58x the client's CPU per request), with
    # enough connections for a full burst: every watch holds one of its own.
    transport = params["transport"] = AiohttpTransport(verify=params.pop("verify"), max_connections=burst + 32)
    http = httpx2.AsyncClient(**params)
    http.headers["User-Agent"] = user_agent
    return Connection(
        http, single.namespace or "default", Direct(transport, http, timeout) if Direct.supports(http.auth) else None
    )

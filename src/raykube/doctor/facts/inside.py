"""Facts read inside Ray Pods (``--exec``): what the in-Pod probe and the container logs said, and how to read it.

The probe's results are plain JSON in :attr:`raykube.doctor.snapshot.Snapshot.inside`, keyed by Pod
(``<namespace>/<name>``), so a dump carries them and ``--from-dump`` diagnoses the same way:

``{"role": "head"|"worker", "container": name, "probe": {...} | None, "error": text | None, "logs": [LogLine...]}``

where ``probe`` is :mod:`raykube.doctor.probe_script`'s output and a ``LogLine`` is
``{"source": "kubectl logs -c C [--previous]" | "<file in /tmp/ray/session_latest/logs>", "line": text}``: only lines
that match :data:`LOG_PATTERN`, so neither the snapshot nor a dump holds a whole log.
"""

from __future__ import annotations

import ast
import contextlib
import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from raykube.api import constants as c
from raykube.api.constants import RAY_CLUSTER_LABEL
from raykube.doctor.snapshot import RAYJOBS, Obj, Snapshot, key_of

LOG_DIR: Final = "/tmp/ray/session_latest/logs"  # noqa: S108 - Ray's session logs, a path inside the Pod


@dataclass(frozen=True)
class LogSign:
    key: str
    pattern: re.Pattern[str]
    meaning: str


# What Ray (2.x) and KubeRay's wait-gcs-ready init container write when the chain breaks, most specific first.
LOG_SIGNS: Final = (
    LogSign(
        "port-in-use",
        re.compile(
            r"[Aa]ddress already in use|EADDRINUSE|Failed to bind|is already in use|port .* is not available|"
            r"Failed to start the grpc server|Failed to add any wildcard listeners"
        ),
        "a port Ray needs is already taken in the Pod",
    ),
    LogSign(
        "gcs-crash",
        re.compile(
            r"\(gcs_server\).*(?:Check failed|An unexpected system state)|gcs_server.*(?:SIGSEGV|Segmentation fault|"
            r"core dumped)|GCS may have been killed|GCS .*(?:terminated|killed) unexpectedly|"
            # `ray start --block` on the head, when the GCS died under it (Ray 2.x scripts.py): "Some Ray subprocesses
            # exited unexpectedly:" then one line per process, "  gcs_server [exit code=-9]" (-9: SIGKILL, what the
            # kernel's OOM killer sends; "-9 (signal 9)" in ray_process_exit.log), and the container ends.
            r"\bgcs_server \[exit code=-?\d+"
        ),
        "the GCS process failed",
    ),
    LogSign(
        "version-mismatch",
        re.compile(r"[Vv]ersion mismatch|versions? (do not|does not|don't) match|was started with Ray version"),
        "the Ray or Python versions of the Pods differ",
    ),
    LogSign(
        "auth",
        re.compile(
            r"(?i:\bunauthenticated\b|authentication (failed|token)|invalid (auth(entication)? )?token)|RAY_AUTH"
        ),
        "Ray's token authentication refused a connection",
    ),
    LogSign(
        "oom",
        re.compile(r"running low on memory|killed due to memory pressure|[Mm]emory monitor|OutOfMemoryError"),
        "Ray's memory monitor killed tasks or actors",
    ),
    LogSign(
        "infeasible",
        # Ray's autoscaler (monitor.log on the head, from the KubeRay sidecar): v1's summary "Error: No available node
        # types can fulfill resource request {...}" and its scheduler's "could not find a node type to satisfy the
        # request: [...]", v2's "No available node types can fulfill resource requests {...}*N".
        re.compile(r"No available node types can fulfill|could not find a node type to satisfy"),
        "the autoscaler has no worker group whose Pod can hold a resource request",
    ),
    LogSign(
        "gcs-unreachable",
        re.compile(
            r"Failed to connect to GCS|Unable to connect to GCS|Failed to get cluster ID from GCS|GCS .*(?:unavailable|"
            r"timed out|not ready)|Waiting for GCS to be ready|[Cc]ould not (?:connect|read) .*gcs"
        ),
        "a Ray process cannot reach the GCS",
    ),
)
LOG_PATTERN: Final = "|".join(f"(?:{sign.pattern.pattern})" for sign in LOG_SIGNS)
_MASK = re.compile(r"(?i)((?:password|passwd|token|secret|api[_-]?key)[\"']?\s*[=:]\s*[\"']?)[^\s\"',;]+")


def sign_of(line: str) -> LogSign | None:
    for sign in LOG_SIGNS:
        if sign.pattern.search(line):
            return sign
    return None


EXCERPT: Final = 400


def excerpt(line: str, start: int) -> str:
    """At most :data:`EXCERPT` characters of ``line`` around position ``start`` (where a pattern matched)."""
    if len(line) <= EXCERPT:
        return line
    begin = max(0, min(start - 120, len(line) - EXCERPT))
    return ("…" if begin else "") + line[begin : begin + EXCERPT]


# Terminal colours: Ray's CLI logger colours its lines even when they go to a file or a container's log
# ("gcs_server\x1b[22m\x1b[26m\x1b[39m\x1b[0m\x1b[2m [exit code=-9]" from `ray start --block`, Ray 2.52).
_ANSI: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def matching_lines(text: str, limit: int = 20) -> list[str]:
    """The last ``limit`` lines of ``text`` that match a :data:`LOG_SIGNS` pattern (the part around the match, when
    long), without terminal colours, credentials masked."""
    pattern = re.compile(LOG_PATTERN)
    found = [(line, m.start()) for line in _ANSI.sub("", text).splitlines() if (m := pattern.search(line))]
    return [mask(excerpt(line, start)) for line, start in found[-limit:]]


def mask(line: str) -> str:
    """``password=...``/``token: ...`` and the like with the value replaced (a quoted line may hold one)."""
    return _MASK.sub(r"\1***", line)


@dataclass(frozen=True)
class LogHit:
    pod: str  # <namespace>/<name>
    source: str
    line: str
    sign: LogSign


def log_hits(snap: Snapshot, pod: Obj) -> list[LogHit]:
    """Every classified log line gathered for ``pod``."""
    entry = snap.inside.get(key_of(pod)) or {}
    hits = []
    for item in entry.get("logs") or []:
        line = str(item.get("line", ""))
        sign = sign_of(line)
        if sign is not None:
            hits.append(LogHit(key_of(pod), str(item.get("source", "")), line, sign))
    return hits


def probe(snap: Snapshot, pod: Obj) -> Mapping[str, Any] | None:
    entry = snap.inside.get(key_of(pod)) or {}
    result = entry.get("probe")
    return result if isinstance(result, Mapping) else None


def _loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def listeners(result: Mapping[str, Any], port: int) -> list[str]:
    """The addresses a port listens on in the Pod (empty: it does not listen)."""
    return [str(a) for a, p in result.get("listening") or [] if p == port]


def loopback_only(addresses: Sequence[str]) -> bool:
    return bool(addresses) and all(_loopback(a) for a in addresses)


# How many of the head's other listening ports a worker tries (the lowest first): the raylet's, the agents', and a few
# workers' are enough to see a policy that lets only the head Service's ports through.
MAX_NODE_PORTS: Final = 24
# Ray's start flags that fix a node port, and what the port is (they are random otherwise).
NODE_PORT_PARAMS: Final = {
    "node-manager-port": "node manager",
    "object-manager-port": "object manager",
    "metrics-export-port": "metrics",
    "dashboard-agent-listen-port": "dashboard agent",
    "dashboard-agent-grpc-port": "dashboard agent gRPC",
    "runtime-env-agent-port": "runtime env agent",
}


def node_ports(result: Mapping[str, Any], skip: Iterable[int]) -> list[int]:
    """The ports the head listens on beyond its Service's (``skip``), on any address but loopback."""
    ports = {int(p) for a, p in result.get("listening") or [] if not _loopback(str(a))} - set(skip)
    return sorted(ports)[:MAX_NODE_PORTS]


def node_port_names(params: Mapping[str, Any]) -> dict[int, str]:
    """What a head port is, from ``rayStartParams`` and KubeRay's defaults (metrics 8080, dashboard agent 52365)."""
    names = {c.DEFAULT_METRICS_PORT: "metrics", c.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT: "dashboard agent"}
    for param, what in NODE_PORT_PARAMS.items():
        with contextlib.suppress(KeyError, TypeError, ValueError):
            names[int(params[param])] = what
    return names


# What KubeRay's head probes ask (``wget -T 2 -q -O- http://localhost:<port><path>``): the raylet's health through the
# dashboard agent, and the GCS's through the dashboard (Ray's endpoints; KubeRay v1.7.0 builders/probes).
RAYLET_HEALTH_PATH: Final = "/api/local_raylet_healthz"
GCS_HEALTH_PATH: Final = "/api/gcs_healthz"


def health_urls(params: Mapping[str, Any], dashboard_port: int) -> list[str]:
    agent = c.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT
    with contextlib.suppress(KeyError, TypeError, ValueError):
        agent = int(params["dashboard-agent-listen-port"])
    return [f"http://127.0.0.1:{agent}{RAYLET_HEALTH_PATH}", f"http://127.0.0.1:{dashboard_port}{GCS_HEALTH_PATH}"]


def hung_endpoints(result: Mapping[str, Any]) -> list[tuple[str, int, str]]:
    """(url, port, what was seen) for each health endpoint whose port listens but that gave no answer in time: the
    process behind it is stopped or stuck (a port nobody listens on is refused, and says something else)."""
    out = []
    for url, seen in (result.get("http") or {}).items():
        error = str((seen or {}).get("error") or "")
        port = int(str(url).split(":")[2].split("/")[0])
        if "timed out" in error and listeners(result, port):
            out.append((str(url), port, error))
    return out


def _head_ip(head: Obj | None) -> str:
    return str(((head or {}).get("status") or {}).get("podIP") or "")


def service_connects(result: Mapping[str, Any], head: Obj | None) -> list[tuple[str, int, str | None]]:
    """A worker's connects to the head through its Service's name (the GCS, dashboard and client ports)."""
    ip = _head_ip(head)
    return [(str(h), int(p), e) for h, p, e in result.get("connect") or [] if not ip or h != ip]


def node_connects(result: Mapping[str, Any], head: Obj | None) -> list[tuple[str, int, str | None]]:
    """A worker's connects to the head Pod's own address (its other Ray ports)."""
    ip = _head_ip(head)
    return [(str(h), int(p), e) for h, p, e in result.get("connect") or [] if ip and h == ip]


def blocked_on_the_way(error: str) -> bool:
    """A connection dropped (timed out) or rejected (no route, not permitted) on the way; refused means nothing
    listens there (any more)."""
    return "refused" not in error.lower()


def cluster_domain(result: Mapping[str, Any], namespace: str) -> str | None:
    """The DNS domain in the Pod's resolv.conf (``<namespace>.svc.<domain>`` is the first search entry a kubelet
    writes); None when the Pod's DNS is not the cluster's."""
    prefix = f"{namespace}.svc."
    for entry in result.get("search") or []:
        if str(entry).startswith(prefix):
            return str(entry)[len(prefix) :].rstrip(".")
    return None


@dataclass
class RayStatus:
    """What ``ray status -v`` printed: the live nodes (by name, with their group, when Ray names them), the node
    counts per type in Active/Idle, pending nodes, recent failures, resource totals and pending demands."""

    nodes: dict[str, str] = field(default_factory=dict)  # node name (the Pod's, with KubeRay) -> group
    counts: dict[str, int] = field(default_factory=dict)  # node type -> live nodes
    pending: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    totals: dict[str, tuple[float, float, str]] = field(default_factory=dict)  # resource -> (used, total, text)
    demands: list[str] = field(default_factory=list)

    @property
    def live(self) -> int:
        return sum(self.counts.values())


_SECTIONS = {"Active:", "Idle:", "Pending:", "Recent failures:", "Total Usage:", "Pending Demands:"}
_NODE = re.compile(r"^Node:\s+(\S+)(?:\s+\((.*)\))?\s*$")
_COUNT = re.compile(r"^\s*(\d+)\s+(\S+)\s*$")
_USAGE = re.compile(r"^\s*([\d.]+)((?:[KMGTP]i?)?B)?/([\d.]+)((?:[KMGTP]i?)?B)?\s+(\S+)")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


def parse_ray_status(text: str) -> RayStatus:
    status = RayStatus()
    section = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if node := _NODE.match(stripped):
            status.nodes[node.group(1)] = node.group(2) or ""
            section = "Node"
            continue
        if stripped in _SECTIONS:
            section = stripped
            continue
        if not stripped or stripped.startswith("(") or set(stripped) <= {"-", "="}:
            continue
        if not line.startswith(" "):  # a heading of its own ("Resources", "From request_resources:")
            section = ""
            continue
        if section in ("Active:", "Idle:") and (count := _COUNT.match(stripped)):
            status.counts[count.group(2)] = status.counts.get(count.group(2), 0) + int(count.group(1))
        elif section == "Pending:":
            status.pending.append(stripped)
        elif section == "Recent failures:":
            status.failures.append(stripped)
        elif section == "Total Usage:" and (usage := _USAGE.match(stripped)):
            used, total = float(usage.group(1)), float(usage.group(3))
            used *= _UNITS.get(usage.group(2) or "", 1)
            total *= _UNITS.get(usage.group(4) or "", 1)
            status.totals[usage.group(5)] = (used, total, stripped)
        elif section == "Pending Demands:":
            status.demands.append(stripped)
    return status


def ray_status(snap: Snapshot, head: Obj) -> tuple[RayStatus, str] | None:
    """``ray status -v`` as run on ``head`` (parsed, and as printed), when it ran and exited 0."""
    result = probe(snap, head)
    run = (result or {}).get("status") or {}
    if not isinstance(run, Mapping) or run.get("exit") != 0:
        return None
    text = str(run.get("stdout", ""))
    return parse_ray_status(text), text


def status_lines(text: str, wanted: Iterable[str]) -> list[str]:
    """The lines of ``ray status`` output that mention any of ``wanted``."""
    keys = list(wanted)
    return [line.strip() for line in text.splitlines() if any(k in line for k in keys)]


# What an S3-compatible store answers when it refuses the keys (AWS's codes, and versitygw's for an unknown key).
S3_KEY_CODES: Final = frozenset(
    {
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
        "InvalidClientTokenId",
        "AuthorizationHeaderMalformed",
        "XAdminUserNotFound",
        "AccessDenied",
    }
)
S3_BUCKET_URL: Final = re.compile(r"\bs3a?://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?=[/'\"\s,)]|$)")


def object_store(snap: Snapshot, pod: Obj) -> Mapping[str, Any] | None:
    """What the in-Pod probe found of the object store the Pod's own environment names (``s3`` of
    :mod:`raykube.doctor.probe_script`), or None when it did not look (no ``AWS_ENDPOINT_URL`` in the Pod)."""
    result = probe(snap, pod)
    found = result.get("s3") if result is not None else None
    return found if isinstance(found, Mapping) else None


def buckets_named(texts: Iterable[str]) -> list[str]:
    """The buckets ``s3://BUCKET/...`` URLs in ``texts`` name (a RayJob's entrypoint, its runtime env), sorted."""
    return sorted({m[1] for text in texts for m in S3_BUCKET_URL.finditer(text)})


def rayjobs_on(snap: Snapshot, namespace: str, cluster: str) -> list[Obj]:
    """The RayJobs of ``namespace`` that run on RayCluster ``cluster`` (clusterSelector, or the cluster they made)."""
    out = []
    for job in snap.in_namespace(RAYJOBS, namespace):
        selector = ((job.get("spec") or {}).get("clusterSelector") or {}).get(RAY_CLUSTER_LABEL)
        if cluster in (selector, (job.get("status") or {}).get("rayClusterName")):
            out.append(job)
    return out


def job_texts(job: Obj) -> list[str]:
    """Where a RayJob names the data it reads: its entrypoint and runtime env."""
    spec = job.get("spec") or {}
    return [str(spec.get("entrypoint") or ""), str(spec.get("runtimeEnvYAML") or "")]


def buckets_for(snap: Snapshot, namespace: str, cluster: str) -> list[str]:
    """The buckets the in-Pod probe checks for a RayCluster: those its RayJobs name in ``s3://`` URLs."""
    return buckets_named(text for job in rayjobs_on(snap, namespace, cluster) for text in job_texts(job))


_REQUEST: Final = re.compile(r"\{[^{}]*\}")


def resource_requests(line: str) -> list[dict[str, float]]:
    """The resource requests an autoscaler line names (``{'CPU': 8.0}``, ``{'CPU': 1.0, 'GPU': 1.0}*2``), in order,
    without repeats; what does not read as a dict of numbers is skipped."""
    found: list[dict[str, float]] = []
    for text in _REQUEST.findall(line):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
        if not isinstance(value, dict) or not value:
            continue
        if not all(isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool)
                   for k, v in value.items()):  # fmt: skip
            continue
        request = {k: float(v) for k, v in value.items()}
        if request not in found:
            found.append(request)
    return found

"""The program the doctor runs inside a Ray Pod (``python -c``): one exec per Pod gathers all it needs to know there.

It is plain standard-library Python (every Ray image has Python) and reads only: ``/proc/net/tcp{,6}`` for the
sockets that listen (addresses and ports, no process names), ``/etc/resolv.conf``, name resolution and TCP connects
to the addresses it is given, the lines of Ray's session logs that match the pattern it is given, and, when asked,
``ray status -v``. It writes one JSON object on stdout. It never prints an environment value: every value of an
environment variable named like a credential (or listed in ``redact``) is masked in the log lines it returns.

``service`` is resolved with the cluster's DNS domain as the Pod's ``resolv.conf`` gives it (the search entry
``<namespace>.svc.<domain>``), not a hard-coded ``cluster.local``; a ``connect`` host ``{service}`` stands for that
name. Input, as JSON in ``argv[1]``::

    {"resolve": [host...], "connect": [[host, port]...], "timeout": 2.0,
     "service": "<svc>.<namespace>.svc", "namespace": namespace,
     "logs": [glob...], "pattern": regex, "per_file": 20, "redact": [name...],
     "status": ["ray", "status", "-v"] | null, "status_timeout": 8.0}

Output::

    {"listening": [[address, port]...], "search": [domain...], "nameservers": [address...], "domain": text,
     "resolve": {host: {"addresses": [...]} | {"error": text}},
     "connect": [[host, port, null | error]...],
     "logs": [[file, line]...],
     "status": {"exit": code, "stdout": text, "stderr": text} | {"error": text}}
"""

from __future__ import annotations

SCRIPT = r"""
import errno, glob, json, os, re, socket, subprocess, sys
args = json.loads(sys.argv[1])
out = {}
found = []
for path, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
    try:
        rows = open(path).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        fields = row.split()
        if len(fields) < 4 or fields[3] != "0A":
            continue
        address, port = fields[1].split(":")
        raw = bytes.fromhex(address)
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
        found.append([socket.inet_ntop(family, raw), int(port, 16)])
out["listening"] = sorted(set(map(tuple, found)))
search, servers = [], []
try:
    for row in open("/etc/resolv.conf").read().splitlines():
        fields = row.split()
        if fields and fields[0] == "search":
            search = fields[1:]
        elif fields and fields[0] == "nameserver" and len(fields) > 1:
            servers.append(fields[1])
except OSError:
    pass
out["search"], out["nameservers"] = search, servers
hosts = list(args.get("resolve", []))
connect = [list(pair) for pair in args.get("connect", [])]
if args.get("service"):
    prefix = args["namespace"] + ".svc."
    domains = [entry[len(prefix):].rstrip(".") for entry in search if entry.startswith(prefix)]
    out["domain"] = domains[0] if domains else None
    name = args["service"] + "." + domains[0] if domains else args["service"]
    hosts.append(name)
    connect = [[name if host == "{service}" else host, port] for host, port in connect]
timeout = float(args.get("timeout", 2.0))
socket.setdefaulttimeout(timeout)
resolved = {}
for host in dict.fromkeys(hosts):
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        resolved[host] = {"addresses": sorted({info[4][0] for info in infos})}
    except OSError as exc:
        resolved[host] = {"error": str(exc)}
out["resolve"] = resolved
def why(exc):
    if isinstance(exc, socket.timeout):
        return "timed out after %gs" % timeout
    name = errno.errorcode.get(getattr(exc, "errno", None) or 0)
    return (name + ": " if name else "") + (getattr(exc, "strerror", None) or str(exc))
connects = []
for host, port in connect:
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
        connects.append([host, port, None])
    except OSError as exc:
        connects.append([host, port, why(exc)])
out["connect"] = connects
secret = re.compile(r"(?i)secret|token|passw|credential|api_?key|access_?key|private")
masks = sorted(
    {v for k, v in os.environ.items() if (k in args.get("redact", []) or secret.search(k)) and len(v) >= 4},
    key=len, reverse=True,
)
lines = []
pattern = re.compile(args["pattern"]) if args.get("pattern") else None
for spec in args.get("logs", []):
    for path in sorted(glob.glob(spec)):
        if pattern is None or not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as handle:
                handle.seek(0, 2)
                size = handle.tell()
                handle.seek(max(0, size - 262144))
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        hits = [(row, m.start()) for row in text.splitlines() for m in [pattern.search(row)] if m]
        for row, start in hits[-int(args.get("per_file", 20)):]:
            for value in masks:
                row = row.replace(value, "***")
            begin = max(0, min(start - 120, len(row) - 400))
            lines.append([os.path.basename(path), ("..." if begin else "") + row[begin:begin + 400]])
out["logs"] = lines
if args.get("status"):
    try:
        run = subprocess.run(
            args["status"], capture_output=True, text=True, timeout=float(args.get("status_timeout", 8.0))
        )
        out["status"] = {"exit": run.returncode, "stdout": run.stdout[-65536:], "stderr": run.stderr[-4096:]}
    except (OSError, subprocess.SubprocessError) as exc:
        out["status"] = {"error": str(exc)}
json.dump(out, sys.stdout)
"""

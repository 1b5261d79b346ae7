"""The program the doctor runs inside a Ray Pod (``python -c``): one exec per Pod gathers all it needs to know there.

It is plain standard-library Python (every Ray image has Python) and reads only: ``/proc/net/tcp{,6}`` for the
sockets that listen (addresses and ports, no process names), ``/etc/resolv.conf``, name resolution and TCP connects
to the addresses it is given (all at once), the lines of Ray's session logs that match the pattern it is given,
and, when asked, ``ray status -v``. It writes one JSON object on stdout. It never prints an environment value: every
value of an environment variable named like a credential (or listed in ``redact``) is masked in the log lines it
returns.

``service`` is resolved with the cluster's DNS domain as the Pod's ``resolv.conf`` gives it (the search entry
``<namespace>.svc.<domain>``), not a hard-coded ``cluster.local``; a ``connect`` host ``{service}`` stands for that
name. Input, as JSON in ``argv[1]``::

    {"resolve": [host...], "connect": [[host, port]...], "timeout": 2.0,
     "service": "<svc>.<namespace>.svc", "namespace": namespace, "http": [url...],
     "logs": [glob...], "pattern": regex, "per_file": 20, "redact": [name...],
     "status": ["ray", "status", "-v"] | null, "status_timeout": 8.0,
     "s3": {"buckets": [bucket...]} | null}

Output::

    {"listening": [[address, port]...], "search": [domain...], "nameservers": [address...], "domain": text,
     "resolve": {host: {"addresses": [...]} | {"error": text}},
     "connect": [[host, port, null | error]...],
     "http": {url: {"status": code, "body": text} | {"error": text}},
     "logs": [[file, line]...],
     "status": {"exit": code, "stdout": text, "stderr": text} | {"error": text},
     "s3": {"endpoint_variable": name, "scheme": s, "host": h, "port": p, "keys": [access set, secret set],
            "resolve": {"addresses": [...]} | {"error": text}, "connect": null | error,
            "list": Answer, "buckets": {bucket: Answer}} (only when asked and the Pod has AWS_ENDPOINT_URL[_S3])

where an ``Answer`` is ``{"status": code, "code": S3 error code, "message": text}`` or ``{"error": text}``.

``s3`` checks the object store the Pod's own environment names (the variables envFrom gives it from the chapter's
Secret), as boto3 would: SigV4 with AWS's rules (the same as :mod:`raykube.doctor.s3sign`, inlined: this script runs
without raykube), path-style, region ``AWS_REGION``/``AWS_DEFAULT_REGION`` or ``us-east-1``. It returns whether the
keys are set, never their values; the store's error messages are masked as the log lines are.
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
def attempt(pair):
    host, port = pair
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
        return [host, port, None]
    except OSError as exc:
        return [host, port, why(exc)]
# At once, not one after the other: a port that a policy drops costs the timeout, and a head has many ports.
import concurrent.futures
with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(16, len(connect)))) as pool:
    out["connect"] = list(pool.map(attempt, connect))
def answer(url):
    # An HTTP GET the way the Pod's probes make it (wget -T 2): the status, or what stopped it. A socket that accepts
    # but never answers (a process stopped or stuck) times out here though its connect succeeds.
    import urllib.error, urllib.request
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # as wget in the Pod: no proxy for localhost
    try:
        with direct.open(url, timeout=timeout) as reply:
            return {"status": reply.status, "body": reply.read(80).decode("utf-8", "replace")}
    except urllib.error.HTTPError as exc:
        return {"status": exc.code}
    except Exception as exc:
        reason = getattr(exc, "reason", exc)
        return {"error": why(reason) if isinstance(reason, OSError) else str(reason)[:200]}
out["http"] = {url: answer(url) for url in args.get("http", [])}
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
def s3_probe(spec):
    # The Pod's object store, as its own environment names it (AWS_ENDPOINT_URL[_S3] and the AWS keys): the name
    # resolved, the port connected, a SigV4-signed ListBuckets, and GET ?max-keys=0 on each bucket asked for. Only
    # statuses, error codes and masked messages come back; the keys are never written.
    import datetime, hashlib, hmac, http.client, urllib.parse
    env = os.environ
    url = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or ""
    access, secret_key = env.get("AWS_ACCESS_KEY_ID", ""), env.get("AWS_SECRET_ACCESS_KEY", "")
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    parts = urllib.parse.urlsplit(url)
    result = {"endpoint_variable": "AWS_ENDPOINT_URL_S3" if env.get("AWS_ENDPOINT_URL_S3") else "AWS_ENDPOINT_URL",
              "scheme": parts.scheme, "host": parts.hostname or "", "keys": [bool(access), bool(secret_key)]}
    if parts.scheme not in ("http", "https") or not parts.hostname:
        result["error"] = "not an http(s) URL with a host"
        return result
    port = parts.port or (443 if parts.scheme == "https" else 80)
    result["port"] = port
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
        result["resolve"] = {"addresses": sorted({info[4][0] for info in infos})}
    except OSError as exc:
        result["resolve"] = {"error": str(exc)}
        return result
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
        result["connect"] = None
    except OSError as exc:
        result["connect"] = why(exc)
        return result
    def send(path, query):
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        netloc = parts.netloc.rsplit("@", 1)[-1]
        payload = hashlib.sha256(b"").hexdigest()
        headers = {"host": netloc, "x-amz-content-sha256": payload, "x-amz-date": now}
        names = sorted(headers)
        quote = lambda text, safe: urllib.parse.quote(text, safe="-_.~" + safe)
        pairs = sorted((quote(k, ""), quote(v, "")) for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True))
        canonical = "\n".join(["GET", quote(path, "/"), "&".join(k + "=" + v for k, v in pairs),
                               "".join(n + ":" + headers[n] + "\n" for n in names), ";".join(names), payload])
        scope = now[:8] + "/" + region + "/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", now, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = ("AWS4" + secret_key).encode()
        for part in (now[:8], region, "s3", "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["Authorization"] = ("AWS4-HMAC-SHA256 Credential=" + access + "/" + scope + ", SignedHeaders="
                                    + ";".join(names) + ", Signature=" + signature)
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = cls(netloc, timeout=timeout)
        try:
            connection.request("GET", quote(path, "/") + ("?" + query if query else ""), headers=headers)
            answer = connection.getresponse()
            body = answer.read(65536).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as exc:
            return {"error": why(exc) if isinstance(exc, OSError) else str(exc)}
        finally:
            connection.close()
        found = {"status": answer.status}
        for tag in ("Code", "Message"):
            start, end = body.find("<" + tag + ">"), body.find("</" + tag + ">")
            if start >= 0 and end > start:
                text = body[start + len(tag) + 2:end][:300]
                for value in masks_of([access, secret_key]):
                    text = text.replace(value, "***")
                found[tag.lower()] = text
        return found
    result["list"] = send("/", "")
    result["buckets"] = {bucket: send("/" + bucket, "list-type=2&max-keys=0") for bucket in spec.get("buckets", [])}
    return result
def masks_of(extra):
    return sorted({v for v in list(masks) + list(extra) if v and len(v) >= 4}, key=len, reverse=True)
if args.get("s3") is not None and (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")):
    out["s3"] = s3_probe(args["s3"])
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

"""AWS Signature Version 4 for S3 requests, with the standard library only (``hmac``, ``hashlib``, ``http.client``).

Ray reads and writes its object store (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` of the
demo's Secret) through boto3 or pyarrow; checking that such an endpoint answers and takes those credentials needs
neither: a signed request is a handful of HMACs. This module signs (:func:`sign`, :func:`authorization`) and sends
(:func:`request`) one path-style request, so the doctor and the tests can talk to any S3-compatible store (the
sandbox's is versitygw, ``docs/sandbox.md``) without an SDK. It imports nothing of raykube, so a Pod running the
project's environment can use it as well.

The rules are AWS's "Signature Version 4 signing process": a canonical request (method, URI-encoded path, sorted
query, lower-cased sorted headers, the names of those signed, the payload's SHA-256), a string to sign naming the
scope ``<date>/<region>/<service>/aws4_request``, and a key derived from the secret by HMAC over the date, region,
service and ``aws4_request``. S3 paths are encoded once (not twice as for other services) and every request carries
``x-amz-content-sha256``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import http.client
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

ALGORITHM = "AWS4-HMAC-SHA256"
DEFAULT_REGION = "us-east-1"  # what boto3 and versitygw assume when nothing names a region
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_UNRESERVED = "-_.~"  # besides letters and digits: what SigV4's URI encoding leaves alone


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def uri_encode(text: str, *, keep_slash: bool) -> str:
    """SigV4's URI encoding: every byte but letters, digits and ``-_.~`` as ``%XX`` (upper-case hex); ``/`` kept in
    a path, encoded in a query parameter."""
    return urllib.parse.quote(text, safe=_UNRESERVED + ("/" if keep_slash else ""))


def canonical_query(query: str) -> str:
    """The query string sorted by name, then value, each part encoded once (an encoded input is decoded first)."""
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    encoded = sorted((uri_encode(k, keep_slash=False), uri_encode(v, keep_slash=False)) for k, v in pairs)
    return "&".join(f"{k}={v}" for k, v in encoded)


def signing_key(secret_key: str, date: str, region: str, service: str) -> bytes:
    """``HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request")``."""
    key = _hmac(f"AWS4{secret_key}".encode(), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return key


def authorization(
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    payload_sha256: str,
    *,
    access_key: str,
    secret_key: str,
    amz_date: str,
    region: str = DEFAULT_REGION,
    service: str = "s3",
) -> str:
    """The ``Authorization`` header signing every one of ``headers`` (``host`` and ``x-amz-date`` among them) for a
    request of ``method`` on ``path`` (not yet encoded) with ``query`` at ``amz_date`` (``YYYYMMDDTHHMMSSZ``)."""
    lowered = {name.strip().lower(): " ".join(value.split()) for name, value in headers.items()}
    names = sorted(lowered)
    canonical = "\n".join(
        [
            method.upper(),
            uri_encode(path or "/", keep_slash=True),
            canonical_query(query),
            "".join(f"{name}:{lowered[name]}\n" for name in names),
            ";".join(names),
            payload_sha256,
        ]
    )
    date = amz_date[:8]
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, amz_date, scope, _sha256(canonical.encode())])
    signature = hmac.new(signing_key(secret_key, date, region, service), to_sign.encode(), hashlib.sha256).hexdigest()
    return f"{ALGORITHM} Credential={access_key}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"


def amz_date(when: dt.datetime | None = None) -> str:
    """``when`` (now, by default) as SigV4 writes it: ``20130524T000000Z``, in UTC."""
    moment = (when or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    return moment.strftime("%Y%m%dT%H%M%SZ")


def sign(
    method: str,
    url: str,
    *,
    access_key: str,
    secret_key: str,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    region: str = DEFAULT_REGION,
    when: dt.datetime | None = None,
) -> dict[str, str]:
    """The headers of a signed S3 request for ``url`` (path-style: ``http://host:port/bucket/key?query``): the given
    ``headers`` and ``Host``, ``x-amz-date``, ``x-amz-content-sha256`` and ``Authorization``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"url: {url!r} is no http(s) URL with a host")
    out = {
        **(headers or {}),
        "host": parts.netloc,
        "x-amz-date": amz_date(when),
        "x-amz-content-sha256": _sha256(body),
    }
    out["Authorization"] = authorization(
        method,
        urllib.parse.unquote(parts.path) or "/",
        parts.query,
        out,
        out["x-amz-content-sha256"],
        access_key=access_key,
        secret_key=secret_key,
        amz_date=out["x-amz-date"],
        region=region,
    )
    return out


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def error_code(self) -> str | None:
        """The ``<Code>`` of an S3 error body (``SignatureDoesNotMatch``, ``NoSuchBucket``), or None."""
        text = self.body.decode(errors="replace")
        start = text.find("<Code>")
        end = text.find("</Code>", start)
        return text[start + 6 : end] if start >= 0 and end > start else None


def request(
    method: str,
    url: str,
    *,
    access_key: str,
    secret_key: str,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    region: str = DEFAULT_REGION,
    timeout: float = 10.0,
) -> Response:
    """Send one signed request with ``http.client`` (no proxy from the environment: the store is the one named) and
    return its status, headers and body; connection errors are raised as they come (``OSError``)."""
    parts = urllib.parse.urlsplit(url)
    signed = sign(method, url, access_key=access_key, secret_key=secret_key, body=body, headers=headers, region=region)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.netloc, timeout=timeout)
    try:
        target = urllib.parse.quote(urllib.parse.unquote(parts.path) or "/", safe="/" + _UNRESERVED)
        if parts.query:
            target += f"?{parts.query}"
        connection.request(method.upper(), target, body=body or None, headers=signed)
        answer = connection.getresponse()
        return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read())
    finally:
        connection.close()

"""The standard-library SigV4 signer against AWS's published examples (the SigV4 test suite and the S3 guide)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from raykube.doctor import s3sign

SUITE_KEYS = {"access_key": "AKIDEXAMPLE", "secret_key": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
S3_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # noqa: S105 - AWS's published example key


def signed(method: str, url: str, secret: str = S3_SECRET, **options: Any) -> dict[str, str]:
    return s3sign.sign(method, url, access_key="AKIAIOSFODNN7EXAMPLE", secret_key=secret, **options)


@pytest.mark.parametrize(
    ("query", "signature"),
    [
        ("", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),  # get-vanilla
        (  # get-vanilla-query-order-key-case: the query is sorted before signing
            "Param2=value2&Param1=value1",
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        ),
    ],
)
def test_the_sigv4_suites_vanilla_requests(query: str, signature: str) -> None:
    headers = {"Host": "example.amazonaws.com", "X-Amz-Date": "20150830T123600Z"}
    value = s3sign.authorization(
        "GET", "/", query, headers, s3sign.EMPTY_SHA256, amz_date="20150830T123600Z", service="service", **SUITE_KEYS
    )
    assert value == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={signature}"
    )


@pytest.mark.parametrize(
    ("url", "headers", "names", "signature"),
    [
        (
            "https://examplebucket.s3.amazonaws.com/test.txt",
            {"Range": "bytes=0-9"},
            "host;range;x-amz-content-sha256;x-amz-date",
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
        ),
        (
            "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J",
            {},
            "host;x-amz-content-sha256;x-amz-date",
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
        ),
    ],
)
def test_the_s3_guides_get_examples(url: str, headers: dict[str, str], names: str, signature: str) -> None:
    when = dt.datetime(2013, 5, 24, tzinfo=dt.UTC)
    out = signed("GET", url, headers=headers, when=when)
    assert out["x-amz-date"] == "20130524T000000Z" and out["x-amz-content-sha256"] == s3sign.EMPTY_SHA256
    assert out["Authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        f"SignedHeaders={names}, Signature={signature}"
    )


def test_the_payload_and_the_secret_change_the_signature() -> None:
    when = dt.datetime(2013, 5, 24, tzinfo=dt.UTC)
    url = "http://minio:9000/bucket/key"
    base = signed("PUT", url, body=b"a", when=when)["Authorization"]
    assert signed("PUT", url, body=b"b", when=when)["Authorization"] != base
    assert signed("PUT", url, "wrong", body=b"a", when=when)["Authorization"] != base


def test_paths_are_encoded_once_and_bad_urls_named() -> None:
    assert s3sign.uri_encode("/a b/c$d", keep_slash=True) == "/a%20b/c%24d"
    assert s3sign.canonical_query("b=2&a=x%2Fy&a=1") == "a=1&a=x%2Fy&b=2"
    with pytest.raises(ValueError, match="url: 'minio:9000/b'"):
        signed("GET", "minio:9000/b")


def test_an_s3_error_body_names_its_code() -> None:
    body = b"<?xml version='1.0'?><Error><Code>SignatureDoesNotMatch</Code><Message>no</Message></Error>"
    assert s3sign.Response(403, {}, body).error_code == "SignatureDoesNotMatch"
    assert s3sign.Response(200, {}, b"data").error_code is None

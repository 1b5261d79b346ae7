"""The demo's workloads on the chapter's cluster: a dataset in the object store, and what the checks expect.

``make demo`` (process nodes) uploads a small deterministic dataset into the object store from the Ray head, with
boto3 and only the Pod's envFrom credentials (``kubectl exec ... python -c UPLOAD``), runs
``examples/05b-rayjob-s3.yaml`` on it and compares the job's summary with :func:`expected`, computed here from the
same rows; then reads the summary object the job wrote back (``READ_RESULT``). Nothing here holds a credential:
the scripts run in the head with its own environment.
"""

from __future__ import annotations

import json
from typing import Any, Final

BUCKET: Final = "demo-data"  # examples/05b-rayjob-s3.yaml reads s3://demo-data/dataset/
PREFIX: Final = "dataset/"
RESULT_KEY: Final = "results/summary.json"
ROWS: Final = 4000
PARTS: Final = 4  # files, so that ray.data has several read tasks to spread over the workers


def value(row: int) -> int:
    """The ``value`` column of row ``row``: a fixed, spread-out function of the id."""
    return (row * 7919 + 17) % 10007


def parts() -> dict[str, str]:
    """The dataset: :data:`PARTS` CSV files (``id,value``) under :data:`PREFIX`, :data:`ROWS` rows in all."""
    size = -(-ROWS // PARTS)
    out = {}
    for part in range(PARTS):
        rows = range(part * size, min(ROWS, (part + 1) * size))
        out[f"{PREFIX}part-{part:04d}.csv"] = "id,value\n" + "".join(f"{i},{value(i)}\n" for i in rows)
    return out


def expected() -> dict[str, int]:
    """What the job must find: the row count, the sum of ``value`` and of ``id * value`` (order-free checksums)."""
    return {
        "rows": ROWS,
        "sum_value": sum(value(i) for i in range(ROWS)),
        "sum_product": sum(i * value(i) for i in range(ROWS)),
    }


# Runs in the head (kubectl exec ... python -c UPLOAD '<json>'): boto3 takes the endpoint and the keys from the
# environment envFrom gave the Pod. Creates the bucket (once), puts the files, lists them back as one JSON line.
UPLOAD: Final = """
import json, sys
import boto3
files = json.loads(sys.argv[1])
bucket, prefix = files.pop('bucket'), files.pop('prefix')
s3 = boto3.client('s3')
try:
    s3.create_bucket(Bucket=bucket)
except s3.exceptions.BucketAlreadyOwnedByYou:
    pass
for key, text in sorted(files.items()):
    s3.put_object(Bucket=bucket, Key=key, Body=text.encode())
listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get('Contents', [])
print(json.dumps({'endpoint': s3.meta.endpoint_url, 'objects': [[o['Key'], o['Size']] for o in listed]}))
"""

# Runs in the head: the summary object the RayJob wrote, read back with boto3 (one JSON line, or the error).
READ_RESULT: Final = """
import sys
import boto3
body = boto3.client('s3').get_object(Bucket=sys.argv[1], Key=sys.argv[2])['Body'].read()
print(body.decode())
"""


def upload_argument() -> str:
    """The argument of :data:`UPLOAD`: the files and where they go."""
    return json.dumps({"bucket": BUCKET, "prefix": PREFIX, **parts()})


def summary_line(logs: str) -> dict[str, Any] | None:
    """The JSON the job printed after ``summary`` (the last such line of its logs), or None."""
    found = None
    for line in logs.splitlines():
        head, _, rest = line.strip().partition("summary ")
        if not head and rest.startswith("{"):
            try:
                found = json.loads(rest)
            except ValueError:
                continue
    return found if isinstance(found, dict) else None


def differences(summary: dict[str, Any]) -> list[str]:
    """What in ``summary`` differs from :func:`expected` (empty: it matches)."""
    return [f"{k} {summary.get(k)!r}, expected {v!r}" for k, v in expected().items() if summary.get(k) != v]

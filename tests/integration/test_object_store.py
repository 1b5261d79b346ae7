"""The demo's object store on process nodes: ``examples/03b-object-store.yaml`` (a Deployment and Service ``minio``
running versitygw, its image built from the Go module proxy) serves S3 with the demo Secret's credentials, and keeps
the objects on the demo's volume.

A second Pod (raykube's operator image: the project's environment, so it has :mod:`raykube.doctor.s3sign`) talks to
it through the Service's cluster DNS name, as a Ray Pod would with ``AWS_ENDPOINT_URL``: SigV4-signed requests with
the standard library only. Shares the process sandbox of ``tests/integration/conftest.py``; skipped where the machine
cannot host process nodes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml
from lightkube import AsyncClient
from lightkube.codecs import from_dict
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import Event, Pod

import raykube
from raykube.sandbox import versions
from raykube.sandbox.kubelet.images import OPERATOR_REPOSITORY
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox

EXAMPLES = Path(__file__).parents[2] / "examples"
READY = 600.0  # generous: the first Pod builds versitygw from the module proxy (minutes on two busy cores)
PAYLOAD_SEED = b"raykube object store"
# Runs in the client Pod: a bucket, an object with a binary body under a key with a space and a slash, the object
# read back, and the same read with a wrong secret and a wrong access key. Prints one JSON line.
CLIENT = """
import hashlib, json, os
from raykube.doctor import s3sign
endpoint = os.environ["AWS_ENDPOINT_URL"]
keys = dict(access_key=os.environ["AWS_ACCESS_KEY_ID"], secret_key=os.environ["AWS_SECRET_ACCESS_KEY"])
body = hashlib.sha256(b"raykube object store").digest() * 4096 + bytes(range(256))
url = endpoint + "/demo-bucket/dir/hello world.bin"
bucket = s3sign.request("PUT", endpoint + "/demo-bucket", **keys)
put = s3sign.request("PUT", url, body=body, **keys)
got = s3sign.request("GET", url, **keys)
bad_secret = s3sign.request("GET", url, access_key=keys["access_key"], secret_key="not-" + keys["secret_key"])
bad_key = s3sign.request("GET", url, access_key="nobody", secret_key=keys["secret_key"])
print(json.dumps({
    "bucket": bucket.status, "put": put.status, "get": got.status,
    "same": got.body == body, "sha256": hashlib.sha256(got.body).hexdigest(),
    "bad_secret": [bad_secret.status, bad_secret.error_code], "bad_key": [bad_key.status, bad_key.error_code],
}))
"""


def payload() -> bytes:
    return hashlib.sha256(PAYLOAD_SEED).digest() * 4096 + bytes(range(256))


def manifests(namespace: str) -> list[dict[str, Any]]:
    """The demo's Secret, volume, and object store (examples/01, 03, 03b), moved to ``namespace``."""
    documents = []
    for name in ("01-minio-credentials.yaml", "03-shared-data.yaml", "03b-object-store.yaml"):
        for doc in yaml.safe_load_all((EXAMPLES / name).read_text()):
            doc["metadata"]["namespace"] = namespace
            if doc["kind"] == "Secret":
                doc["stringData"]["AWS_ENDPOINT_URL"] = f"http://minio.{namespace}.svc.cluster.local:9000"
            documents.append(doc)
    return documents


async def minio_pod(pkube: AsyncClient, ns: str) -> Pod:
    async def ready() -> Pod | NotYet:
        pods = [p async for p in pkube.list(Pod, namespace=ns, labels={"app": "minio"})]
        for pod in pods:
            conditions = {c.type: c.status for c in (pod.status and pod.status.conditions) or []}
            if conditions.get("Ready") == "True":
                return pod
        states = [[(c.name, c.state) for c in (p.status and p.status.containerStatuses) or []] for p in pods]
        return NotYet(f"minio Pods: {states}")

    pod: Pod = await wait_for(ready, READY, what=f"{ns}: the minio Deployment's Pod Ready (its /_/health probe)")
    return pod


async def test_the_demo_object_store_serves_s3_on_the_demo_volume(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str
) -> None:
    for doc in manifests(ns):
        await pkube.create(from_dict(doc), namespace=ns)  # type: ignore[call-overload]
    client = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "s3-client"},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": f"{OPERATOR_REPOSITORY}:{raykube.__version__}",
                    "command": ["sleep", "3600"],
                    "envFrom": [{"secretRef": {"name": "minio-credentials"}}],
                }
            ],
            "terminationGracePeriodSeconds": 1,
        },
    }
    await pkube.create(from_dict(client), namespace=ns)  # type: ignore[call-overload]

    pod = await minio_pod(pkube, ns)
    assert pod.metadata is not None and pod.metadata.name and pod.spec is not None
    assert (pod.spec.nodeName or "").startswith("process-node-"), pod.spec.nodeName
    pulled = [
        e.message or ""
        async for e in pkube.list(Event, namespace=ns)
        if e.involvedObject.name == pod.metadata.name and e.reason == "Pulled"
    ]
    module = f"versitygw v{versions.VERSITYGW_VERSION} built from the Go module {versions.VERSITYGW_MODULE}"
    assert any(module in m for m in pulled), pulled
    deployment = await pkube.get(Deployment, "minio", namespace=ns)
    assert deployment.status is not None and deployment.status.readyReplicas == 1

    async def answered() -> dict[str, Any] | NotYet:
        run = proc.kubectl("exec", "-n", ns, "s3-client", "--", "python", "-c", CLIENT)
        lines = run.stdout.strip().splitlines()
        if run.returncode != 0 or not lines:
            return NotYet(f"exit {run.returncode}: {(run.stderr or run.stdout)[-600:]}")
        result: dict[str, Any] = json.loads(lines[-1])
        return result

    result = await wait_for(answered, 120, what="the S3 client's requests through the minio Service")
    assert (result["bucket"], result["put"], result["get"]) == (200, 200, 200), result
    assert result["same"] and result["sha256"] == hashlib.sha256(payload()).hexdigest()
    assert result["bad_secret"] == [403, "SignatureDoesNotMatch"], result
    # An unknown access key is refused too (versitygw answers it in its own words, without the object).
    assert 400 <= result["bad_key"][0] < 500, result

    # The object is a file on the demo's volume, under the Deployment's subPath (objects/<bucket>/<key>).
    volumes = proc.root / "sandboxes" / "proc" / "volumes"
    stored = list(volumes.glob("pvc-*/process-node-*/objects/demo-bucket/dir/hello world.bin"))
    assert [p.read_bytes() == payload() for p in stored] == [True], stored

"""No Secret value, auth token or Redis password appears in the operator's logs, its events, its metrics or the
doctor's output (text, JSON and a dump); and on process nodes, none of the object-store keys the doctor's in-Pod
probe signs with (the store refusing a planted wrong key quotes its own message) appears in the doctor's output.

Recognisable values are planted the ways users hand credentials to Ray: a Secret in ``envFrom``, a ``secretKeyRef``
env, GCS fault tolerance's Redis password from a Secret, the token of ``authOptions.mode: token`` (KubeRay generates
the Secret; its value is read back from the API), and one password written as a literal in the spec (the doctor must
flag it, SEC05, without repeating it). The operator runs as its own process with metrics on; then everything it and
the doctor produced is scanned.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.resources import EVENTS, PODS, SECRETS
from raykube.waiting import NotYet, wait_for
from tests.integration.test_operator_restart import tiny_cluster
from tests.ledger import Ledger


def planted(label: str) -> str:
    return f"pl4nted-{label}-{secrets.token_hex(8)}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def doctor(kubeconfig: Path, namespace: str, *extra: str) -> str:
    run = subprocess.run(
        [sys.executable, "-m", "raykube.cli.main", "doctor", "raycluster/leaky", "-n", namespace,
         "--kubeconfig", str(kubeconfig), "--starting-grace", "0", *extra],
        capture_output=True, text=True, timeout=120, check=False, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    return run.stdout + run.stderr


@pytest.mark.reliability("Secrets never leak")
async def test_planted_secrets_appear_in_no_log_event_metric_or_doctor_output(
    runtime_kube: Kube, kubeconfig: Path, namespace: str, start_operator: Any, tmp_path: Path, ledger: Ledger
) -> None:
    kube = runtime_kube
    port = free_port()
    process = start_operator("--enable-metrics", f"--metrics-addr=127.0.0.1:{port}", "--enable-leader-election=false")
    log = tmp_path / "operator-0.log"
    values = {name: planted(name) for name in ("envfrom", "keyref", "redis", "literal")}
    data = {"AWS_SECRET_ACCESS_KEY": values["envfrom"], "password": values["redis"], "token": values["keyref"]}
    await kube.create(
        SECRETS,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds"},
         "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}},
        namespace,
    )  # fmt: skip
    body = tiny_cluster("leaky", 1)
    body["spec"]["authOptions"] = {"mode": "token"}
    body["spec"]["gcsFaultToleranceOptions"] = {
        "redisAddress": "redis.example.invalid:6379",
        "redisPassword": {"valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
    }
    head = body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["envFrom"] = [{"secretRef": {"name": "creds"}}]
    head["env"] = [
        {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
        {"name": "DB_PASSWORD", "value": values["literal"]},
    ]
    await kube.create(RAYCLUSTERS, body, namespace)

    async def head_pod() -> bool | NotYet:
        pods = (await kube.list(PODS, namespace, label_selector="ray.io/cluster=leaky")).items
        return True if pods else NotYet("no Pod yet")

    await wait_for(head_pod, 60, what="the operator to create the head Pod")

    async def auth_token() -> str | NotYet:
        found = await kube.get_or_none(SECRETS, "leaky", namespace)
        token = ((found or {}).get("data") or {}).get("auth_token")
        return base64.b64decode(token).decode() if token else NotYet("no auth Secret yet")

    values["auth_token"] = await wait_for(auth_token, 60, what="the generated auth token Secret")

    async with httpx2.AsyncClient(trust_env=False, timeout=10) as http:

        async def scrape() -> str | NotYet:
            try:
                answer = await http.get(f"http://127.0.0.1:{port}/metrics")
            except httpx2.HTTPError as exc:
                return NotYet(str(exc))
            return answer.text if "kuberay_cluster_info" in answer.text else NotYet("no cluster metric yet")

        metrics = await wait_for(scrape, 60, what="the operator's metrics with the cluster in them")
    events = "\n".join(
        f"{e.get('reason')} {e.get('message') or e.get('note')}" for e in (await kube.list(EVENTS, namespace)).items
    )
    text = doctor(kubeconfig, namespace, "-v")
    as_json = doctor(kubeconfig, namespace, "-o", "json", "--dump", str(tmp_path / "dump"))
    dumped = "\n".join(p.read_text() for p in sorted((tmp_path / "dump").glob("*")) if p.is_file())
    assert "SEC05" in text, "the doctor did not flag the literal password"
    outputs = {
        "operator log": log.read_text(errors="replace"),
        "events": events,
        "metrics": metrics,
        "doctor text": text,
        "doctor JSON": as_json,
        "doctor dump": dumped,
    }
    leaks = [f"{value_name} in {where}" for where, output in outputs.items()
             for value_name, value in values.items() if value in output]  # fmt: skip
    assert process.poll() is None, "the operator exited"
    assert not leaks, leaks
    ledger.record(
        "Secrets never leak",
        "planted a Secret in envFrom, a secretKeyRef env, GCS FT's Redis password from a Secret, the generated auth "
        "token and a literal password in the spec; operator with metrics; doctor -v, -o json and --dump",
        len(values) * len(outputs),
        "none of the planted values in the operator's log, its Events, its /metrics, the doctor's text, JSON or dump; "
        "the doctor flags the literal (SEC05)",
        f"0 of {len(values)} values found in {len(outputs)} outputs ({sum(len(o) for o in outputs.values())} bytes)",
    )


def _store_group(name: str, env: list[dict[str, str]], **spec: Any) -> dict[str, Any]:
    """A worker group of 250m/256Mi with the Secret in envFrom and ``env`` over it (env wins over envFrom), and
    ``spec`` in its Pod spec."""
    container = {"name": "ray-worker", "image": "rayproject/ray:2.52.0", "env": env,
                 "envFrom": [{"secretRef": {"name": "minio-credentials"}}],
                 "resources": {"limits": {"cpu": "250m", "memory": "256Mi"},
                               "requests": {"cpu": "250m", "memory": "256Mi"}}}  # fmt: skip
    return {"groupName": name, "replicas": 1, "minReplicas": 0, "maxReplicas": 1, "rayStartParams": {},
            "template": {"spec": {"containers": [container], **spec}}}  # fmt: skip


async def test_the_object_store_probe_names_each_planted_fault_and_returns_no_planted_key(
    proc: Any, pkube: Any, ns: str, proc_operator: Any, tmp_path: Path
) -> None:
    """Process nodes: the demo's object store holding planted keys (its root credentials are the Secret's), and a
    RayCluster whose worker groups see it through envFrom with one fault each: a wrong endpoint (R10), the store's port
    blocked in the worker's network namespace (R10), a wrong secret key (R11), and a RayJob on the cluster reading a
    bucket that does not exist (R12). The doctor probes each group
    with the Pod's own environment; no planted key appears in its text, JSON or dump."""
    from lightkube.codecs import from_dict  # noqa: PLC0415

    # RAYJOB and RAYCLUSTER: importing them defines the ray.io kinds for lightkube's from_dict.
    from tests.doctor_support import assert_fires  # noqa: PLC0415
    from tests.integration.test_chapter_workloads import RAYJOB  # noqa: F401, PLC0415
    from tests.integration.test_object_store import manifests, minio_pod  # noqa: PLC0415
    from tests.integration.test_process_runtime import RAYCLUSTER, wait_cluster  # noqa: F401, PLC0415

    values = {"access key": planted("akid"), "secret key": planted("secret"), "wrong secret key": planted("wrong")}
    for doc in manifests(ns):
        if doc["kind"] == "Secret":
            doc["stringData"] |= {"AWS_ACCESS_KEY_ID": values["access key"],
                                  "AWS_SECRET_ACCESS_KEY": values["secret key"]}  # fmt: skip
        await pkube.create(from_dict(doc), namespace=ns)
    resources = {"limits": {"cpu": "250m", "memory": "256Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}}
    cluster = {
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "stores"},
        "spec": {"rayVersion": "2.52.0",
                 "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                     {"name": "ray-head", "image": "rayproject/ray:2.52.0", "resources": resources}]}}},
                 "workerGroupSpecs": [
                     _store_group("endpoint", [{"name": "AWS_ENDPOINT_URL",
                                                "value": "http://minio.no-such-namespace.svc.cluster.local:9000"}]),
                     _store_group("key", [{"name": "AWS_SECRET_ACCESS_KEY", "value": values["wrong secret key"]}]),
                     _store_group("bucket", []),
                     # what a NetworkPolicy that rejects the store's port does, in this worker's network namespace
                     _store_group("port", [], initContainers=[{"name": "netpol", "image": "rayproject/ray:2.52.0",
                         "command": ["ip", "rule", "add", "ipproto", "tcp", "dport", "9000", "prohibit"]}])]},
    }  # fmt: skip
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "reads"},
           "spec": {"clusterSelector": {"ray.io/cluster": "stores"},
                    "entrypoint": "python -c \"print('would read s3://missing-bucket/dataset/')\""}}  # fmt: skip
    await pkube.create(from_dict(cluster), namespace=ns)
    await pkube.create(from_dict(job), namespace=ns)
    await minio_pod(pkube, ns)
    await wait_cluster(pkube, ns, "stores", lambda s: s.get("state") == "ready", "ready")

    def run(*extra: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "raykube.cli.main", "doctor", "raycluster/stores", "-n", ns,
             "--kubeconfig", str(proc.kubeconfig), *extra],
            capture_output=True, text=True, timeout=180, check=False, env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
        return done.returncode, done.stdout + done.stderr

    _, text = run("-v")
    _, as_json = run("-o", "json", "--dump", str(tmp_path / "dump"))
    report = json.loads(as_json[: as_json.rindex("}") + 1])
    by_rule = {f["rule"]: f for f in report["findings"] if f["rule"] in ("R11", "R12")}
    assert_fires(report, "R10", "R11", "R12")
    [endpoint] = [f for f in report["findings"] if f["rule"] == "R10" and "-endpoint-" in f["object"]["name"]]
    assert "does not resolve" in endpoint["title"], endpoint
    [port] = [f for f in report["findings"] if f["rule"] == "R10" and "-port-" in f["object"]["name"]]
    assert "the port is blocked on the way" in port["title"], port
    assert "-key-" in by_rule["R11"]["object"]["name"] and "SignatureDoesNotMatch" in by_rule["R11"]["title"]
    assert "-bucket-" in by_rule["R12"]["object"]["name"] and "missing-bucket" in by_rule["R12"]["title"]
    dumped = "\n".join(p.read_text() for p in sorted((tmp_path / "dump").glob("*")) if p.is_file())
    outputs = {"doctor text": text, "doctor JSON": as_json, "doctor dump": dumped}
    assert '"s3"' in dumped or "s3:" in dumped  # the dump carries what the probe saw...
    leaks = [f"{value_name} in {where}" for where, output in outputs.items()
             for value_name, value in values.items() if value in output]  # fmt: skip
    assert not leaks, leaks  # ...and none of the keys

"""The demo's workloads on the chapter's cluster (process nodes): data in the object store, a task that calls the
Kubernetes API. The acts of :mod:`raykube.cli.demo` that need them call in here.

The object-store act uploads a small deterministic dataset into the object store from the Ray head, with boto3 and
only the Pod's envFrom credentials (``kubectl exec ... python -c UPLOAD``), runs ``examples/05b-rayjob-s3.yaml`` on it
and compares the job's summary with :func:`expected`, computed here from the same rows; then reads back the summary
object the job wrote (``READ_RESULT``). Nothing here holds a credential: the scripts run in the head with its own
environment. The RBAC act runs ``examples/05c-rayjob-kube-api.yaml`` without a Role (403, named by doctor's J07),
then with ``examples/08-ray-workload-rbac.yaml``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from rich.markup import escape

from raykube.cli.demo import CLUSTER, EXAMPLES, NAMESPACE, DemoFailed, Stage, chapter, claim, cluster_state
from raykube.cli.output import out

S3_RAYJOB: Final = "rayjob-s3"  # examples/05b-rayjob-s3.yaml
API_RAYJOB: Final = "rayjob-kube-api"  # examples/05c-rayjob-kube-api.yaml
RAY_ACCOUNT: Final = "default"  # the ServiceAccount the chapter's Ray Pods run as (04-raycluster.yaml names none)

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


async def run_rayjob(stage: Stage, manifest: str, name: str) -> dict[str, Any]:
    """Apply ``manifest`` (a RayJob on the chapter's cluster), wait until it finishes, show it; its status."""
    from raykube.api.resources import RAYJOBS  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    stage.kubectl("apply", "-f", str(EXAMPLES / manifest))

    async def finished() -> dict[str, Any] | NotYet:
        status = (await stage.kube.get(RAYJOBS, name, NAMESPACE)).get("status") or {}
        state = (status.get("jobDeploymentStatus"), status.get("jobStatus"))
        return dict(status) if state[0] in ("Complete", "Failed") else NotYet(f"deployment/job status {state}")

    status: dict[str, Any] = await wait_for(finished, stage.ready_within, what=f"RayJob {name} to finish")
    stage.kubectl("-n", NAMESPACE, "get", "rayjob", name)
    return status


def head_pod_name(pods: list[dict[str, Any]]) -> str:
    [head] = [p["metadata"]["name"] for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "head"]
    return str(head)


def job_logs(stage: Stage, name: str) -> str:
    """The submitter Job's log (``ray job logs --follow``: the job's own output), without the CLI's colours."""
    logs = stage.kubectl("-n", NAMESPACE, "logs", f"job/{name}", show=False, check=False)
    return re.sub(r"\x1b\[[0-9;]*m", "", logs)


async def object_store_act(stage: Stage) -> None:
    """On process nodes: a dataset into the object store from the head (boto3, the Pod's envFrom credentials), a
    RayJob that reads it with ray.data on the workers and writes a summary back, the summary checked and read back."""
    chapter("4c'. Data in the object store: ray.data reads it with the Secret's credentials, nothing hard-coded")
    _, pods = await cluster_state(stage)
    head = head_pod_name(pods)
    workers = sorted(p["metadata"]["name"] for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "worker")
    shown = f"kubectl -n {NAMESPACE} exec {head} -- python -c <upload with boto3> <{ROWS} rows as CSV>"
    out.print(f"[bold]$ {escape(shown)}[/bold]")
    text = stage.kubectl("-n", NAMESPACE, "exec", head, "--", "python", "-c", UPLOAD, upload_argument(),
                         show=False, check=False)  # fmt: skip
    try:
        uploaded = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise DemoFailed(f"the upload from {head} printed no listing: {text[-500:]!r}") from exc
    keys = [key for key, _ in uploaded["objects"]]
    out.print(escape(json.dumps(uploaded)), highlight=False)
    if sorted(keys) != sorted(parts()):
        raise DemoFailed(f"s3://{BUCKET}/{PREFIX} holds {keys}, not the {PARTS} files uploaded")
    claim(f"{ROWS} rows in {PARTS} CSV files in s3://{BUCKET}/{PREFIX}, put with boto3 from the "
          f"head: its endpoint and keys came from envFrom ({uploaded['endpoint']})")  # fmt: skip

    status = await run_rayjob(stage, "05b-rayjob-s3.yaml", S3_RAYJOB)
    logs = job_logs(stage, S3_RAYJOB)
    if status.get("jobStatus") != "SUCCEEDED":
        raise DemoFailed(f"RayJob {S3_RAYJOB} ended {status.get('jobStatus')}: {status.get('message')}")
    summary = summary_line(logs)
    out.print(f"[bold]$ kubectl -n {NAMESPACE} logs job/{S3_RAYJOB} | grep summary[/bold]")
    out.print(escape(f"summary {json.dumps(summary, sort_keys=True)}"), highlight=False)
    if summary is None:
        raise DemoFailed(f"RayJob {S3_RAYJOB} printed no summary line: {logs[-800:]}")
    if wrong := differences(summary):
        raise DemoFailed(f"RayJob {S3_RAYJOB} read other data than was uploaded: {'; '.join(wrong)}")
    readers = [h for h in summary.get("hosts") or [] if h in workers]
    if not readers:
        raise DemoFailed(f"no worker read the dataset: the read tasks ran on {summary.get('hosts')}, workers {workers}")
    claim(f"ray.data read all {ROWS} rows from s3:// (the sums match those computed here); read tasks ran on "
          f"{', '.join(readers)}")  # fmt: skip

    out.print(f"[bold]$ kubectl -n {NAMESPACE} exec {head} -- python -c <boto3 get_object> {BUCKET} "
              f"{RESULT_KEY}[/bold]")  # fmt: skip
    text = stage.kubectl("-n", NAMESPACE, "exec", head, "--", "python", "-c", READ_RESULT, BUCKET,
                         RESULT_KEY, show=False, check=False)  # fmt: skip
    out.print(escape(text.strip()), highlight=False)
    try:
        written = json.loads(text.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise DemoFailed(f"s3://{BUCKET}/{RESULT_KEY} could not be read back: {text[-500:]!r}") from exc
    if written != summary:
        raise DemoFailed(f"s3://{BUCKET}/{RESULT_KEY} holds {written}, not the job's summary {summary}")
    claim(f"the job's summary is in s3://{BUCKET}/{RESULT_KEY}, written by boto3 in the job, read back")
    stage.kubectl("-n", NAMESPACE, "delete", "rayjob", S3_RAYJOB)


async def workload_rbac_act(stage: Stage) -> None:
    """On process nodes: a Ray task that lists Pods through the Kubernetes API is refused (403) while the Ray Pods'
    ServiceAccount has no Role; doctor names the missing permission; a namespace Role + RoleBinding fixes it."""
    chapter("4c''. A Ray task calls the Kubernetes API: forbidden, then a namespace Role")
    account = f"system:serviceaccount:{NAMESPACE}:{RAY_ACCOUNT}"
    status = await run_rayjob(stage, "05c-rayjob-kube-api.yaml", API_RAYJOB)
    message = f"{status.get('message') or ''}\n{job_logs(stage, API_RAYJOB)}"
    if status.get("jobStatus") != "FAILED" or "forbidden" not in message:
        raise DemoFailed(f"RayJob {API_RAYJOB} without a Role ended {status.get('jobStatus')}, not FAILED with "
                         f"'forbidden': {message[-600:]}")  # fmt: skip
    refused = next(line.strip() for line in message.splitlines() if "forbidden" in line)
    out.print(f"[dim]{escape(refused[:300])}[/dim]")
    claim(f"the task was refused: 403 Forbidden, {account} may not list pods (the chapter's warning)")
    answer = stage.kubectl("auth", "can-i", "list", "pods", f"--as={account}", "-n", NAMESPACE, check=False).strip()
    if answer != "no":
        raise DemoFailed(f"kubectl auth can-i says {answer!r} for {account} before any Role")
    code, report = stage.doctor_json(f"rayjob/{API_RAYJOB}")
    found = [f for f in report.get("findings", []) if f.get("code") == "WORKLOAD_API_FORBIDDEN"]
    if not found:
        raise DemoFailed(f"raykube doctor rayjob/{API_RAYJOB} did not name the refused permission (exit {code})")
    out.print(f"[bold]$ raykube doctor rayjob/{API_RAYJOB} -n {NAMESPACE}[/bold]  [dim](its finding)[/dim]")
    out.print(escape(f"{found[0]['rule']} {found[0]['code']}: {found[0]['title']}"), highlight=False)
    claim("doctor names the ServiceAccount, the verb and resource refused, and the namespace Role that fixes it")

    stage.kubectl("apply", "-f", str(EXAMPLES / "08-ray-workload-rbac.yaml"))
    answer = stage.kubectl("auth", "can-i", "list", "pods", f"--as={account}", "-n", NAMESPACE, check=False).strip()
    if answer != "yes":
        raise DemoFailed(f"kubectl auth can-i says {answer!r} for {account} after the RoleBinding")
    answer = stage.kubectl("auth", "can-i", "list", "pods", f"--as={account}", "-A", check=False).strip()
    if answer != "no":
        raise DemoFailed(f"{account} may list pods in every namespace ({answer!r}): the grant is not namespaced")
    claim(f"a Role (get, list pods) bound to {account}: allowed in {NAMESPACE}, nowhere else")
    stage.kubectl("-n", NAMESPACE, "delete", "rayjob", API_RAYJOB)
    await wait_rayjob_gone(stage, API_RAYJOB)
    status = await run_rayjob(stage, "05c-rayjob-kube-api.yaml", API_RAYJOB)
    logs = job_logs(stage, API_RAYJOB)
    if status.get("jobStatus") != "SUCCEEDED":
        raise DemoFailed(f"RayJob {API_RAYJOB} with the Role ended {status.get('jobStatus')}: {status.get('message')}")
    listed = [line.strip() for line in logs.splitlines() if line.strip().startswith("the task listed")]
    if not listed or CLUSTER not in listed[-1]:
        raise DemoFailed(f"the task's listing does not show the chapter's Pods: {logs[-600:]}")
    out.print(escape(listed[-1][:300]), highlight=False)
    claim("the same task now lists the namespace's Pods with its own token: least privilege, no ClusterRole")
    stage.kubectl("-n", NAMESPACE, "delete", "rayjob", API_RAYJOB)


async def wait_rayjob_gone(stage: Stage, name: str) -> None:
    from raykube.api.resources import RAYJOBS  # noqa: PLC0415
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    async def gone() -> bool | NotYet:
        try:
            await stage.kube.get(RAYJOBS, name, NAMESPACE)
        except ApiError as exc:
            if exc.not_found:
                return True
            raise
        return NotYet(f"RayJob {name} still there")

    await wait_for(gone, 120, what=f"RayJob {name} to be deleted")

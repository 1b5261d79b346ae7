"""``raykube demo``: the seed chapter's deployment, played on the local Kubernetes (the README's main command).

Act one walks the chapter's objects in its order, the way a user would do it: the operator (installed like the Helm
chart installs it, and running as its own ServiceAccount so its RBAC is real), the Secret and ConfigMap injected by
envFrom, the PVC, the object store the Secret names, the RayCluster of 1 head + 2 workers; then the chapter's checks
(``kubectl get raycluster``, the Pods, the head Service and its endpoints) with what each proves; on process nodes Ray
itself: ``ray status``, a RayJob, the chapter's data read from the object store with only envFrom's credentials and a
Ray task calling the Kubernetes API, refused until a namespace Role allows it (:mod:`raykube.cli.demo_workloads`), a
RayService upgrade; and ``raykube doctor`` on the healthy cluster.

Act two breaks it the way the chapter warns (more workers than the nodes can hold), shows the symptom, lets doctor
name the root cause, fixes it and watches the cluster recover.

Every claim the demo prints is checked; a failed check ends it with a non-zero exit status. The sandbox is left up
(a second run reuses it); the demo's own namespace and operator process are removed unless ``--keep``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.rule import Rule

from raykube.cli import aio
from raykube.cli.output import err, fail, out
from raykube.cli.sandbox import NameOption, bring_up
from raykube.sandbox.components import Binaries, NodePool, SandboxConfig
from raykube.sandbox.errors import SandboxError
from raykube.sandbox.ports import DEFAULT_PORT_BASE, Ports
from raykube.waiting import WaitTimeout

if TYPE_CHECKING:
    from raykube.kube.client import Kube
    from raykube.sandbox.cluster import Sandbox

NAMESPACE = "raykube-demo"
CLUSTER = "raycluster-demo"
RAYJOB = "rayjob-demo"
RAYSERVICE = "rayservice-demo"  # examples/07-rayservice.yaml
OBJECT_STORE = "minio"  # examples/03b-object-store.yaml
OPERATOR_NAMESPACE = "kuberay-operator"
OPERATOR_ACCOUNT = "kuberay-operator"
OPERATOR_PROCESS = "raykube-operator"
OPERATOR_LOG_LINES = 6
WORKERS = 2
MAX_WORKERS = 10  # examples/04-raycluster.yaml's maxReplicas
TOO_MANY_WORKERS = 24  # 1 CPU each: more than the sandbox's default 2 nodes x 8 CPUs can hold
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class DemoFailed(RuntimeError):
    """A claim the demo makes did not hold."""


@dataclass
class Stage:
    sandbox: Sandbox
    kubeconfig: Path
    kube: Kube
    process: bool = False  # process nodes: the Pods run real Ray

    @property
    def ready_within(self) -> float:
        """How long the RayCluster may take to be ready: real Ray on process nodes (the first run also creates the
        Ray venv) takes longer than kwok's instant Pods."""
        return 600 if self.process else 120

    def kubectl(self, *args: str, show: bool = True, check: bool = True) -> str:
        """Run the sandbox's kubectl as the user would, and show the command and its output."""
        command = [str(Binaries.from_cache().kubectl), *args]
        if show:
            out.print(f"[bold]$ kubectl {escape(shlex.join(args))}[/bold]")
        result = subprocess.run(
            command, env={**os.environ, "KUBECONFIG": str(self.kubeconfig)}, capture_output=True, text=True,
            check=False,
        )  # fmt: skip
        if show:
            out.print(escape(result.stdout.rstrip()), highlight=False)
            if result.stderr.strip():
                out.print(f"[yellow]{escape(result.stderr.rstrip())}[/yellow]")
        if check and result.returncode != 0:
            raise DemoFailed(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    def kubectl_ray(self, *args: str) -> str:
        """``kubectl ray ARGS`` (raykube's kubectl-ray, beside this Python), shown as the user types it."""
        command = [str(Path(sys.executable).parent / "kubectl-ray"), *args]
        out.print(f"[bold]$ kubectl ray {escape(shlex.join(args))}[/bold]")
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "COLUMNS": "120"}
        env["PATH"] = f"{Binaries.from_cache().path_dir}:{env.get('PATH', '')}"
        result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        out.print(escape(result.stdout.rstrip()), highlight=False)
        if result.returncode != 0:
            raise DemoFailed(f"kubectl ray {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout

    def doctor(self, *args: str, show: bool = True) -> tuple[int, str]:
        command = [sys.executable, "-m", "raykube.cli.main", "doctor", f"raycluster/{CLUSTER}", "-n", NAMESPACE,
                   "--kubeconfig", str(self.kubeconfig), *args]  # fmt: skip
        if show:
            shown = shlex.join(["raykube", "doctor", f"raycluster/{CLUSTER}", "-n", NAMESPACE, *args])
            out.print(f"[bold]$ {escape(shown)}[/bold]")
        result = subprocess.run(command, capture_output=True, text=True, check=False,
                                env={**os.environ, "COLUMNS": "120"})  # fmt: skip
        if show:
            out.print(result.stdout.rstrip(), highlight=False, markup=False)
        return result.returncode, result.stdout

    def doctor_json(self, target: str) -> tuple[int, dict[str, Any]]:
        """``raykube doctor TARGET -o json`` in the demo's namespace, not shown; the exit code and the report."""
        command = [sys.executable, "-m", "raykube.cli.main", "doctor", target, "-n", NAMESPACE,
                   "--kubeconfig", str(self.kubeconfig), "-o", "json"]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        try:
            report: dict[str, Any] = json.loads(result.stdout)
        except ValueError as exc:
            raise DemoFailed(f"raykube doctor {target} wrote no JSON report: {result.stderr[-500:]}") from exc
        return result.returncode, report


def chapter(title: str) -> None:
    out.print()
    out.print(Rule(f"[bold]{escape(title)}[/bold]", align="left"))


def claim(text: str) -> None:
    out.print(f"[green]✓[/green] {escape(text)}")


# ---------------------------------------------------------------------------------------------------- act one
async def install_operator(stage: Stage) -> None:
    from raykube.deploy.install import install_operator  # noqa: PLC0415 - heavy imports load per command
    from raykube.deploy.manifests import FIELD_MANAGER  # noqa: PLC0415
    from raykube.kube.client import Kube  # noqa: PLC0415

    chapter("1. The operator: its Deployment, its RBAC, and its Pod")
    if stage.process:  # a local operator left by an earlier demo on kwok nodes (--keep) would be a second operator
        await stage.sandbox.stop_extra(OPERATOR_PROCESS)
    client = Kube.from_config(stage.kubeconfig, user_agent=FIELD_MANAGER, field_manager=FIELD_MANAGER)
    try:
        # On process nodes the Pod runs raykube for real: the operator image maps to this project's environment.
        await install_operator(client, OPERATOR_NAMESPACE, available_within=180)
    finally:
        await client.close()
    stage.kubectl("-n", OPERATOR_NAMESPACE, "get", "deployment", "kuberay-operator")
    stage.kubectl("get", "clusterrole", "kuberay-operator")
    account = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_ACCOUNT}"
    answer = stage.kubectl("auth", "can-i", "create", "pods", f"--as={account}", "-n", NAMESPACE).strip()
    if answer != "yes":
        raise DemoFailed(f"the operator's ServiceAccount may not create Pods: {answer}")
    claim("the ClusterRole lets the operator's ServiceAccount create Pods (a missing rule shows as 'forbidden')")

    if stage.process:
        from raykube.kube.resources import PODS  # noqa: PLC0415

        stage.kubectl("-n", OPERATOR_NAMESPACE, "get", "pods", "-o", "wide")
        name = await wait_for_leader(stage)
        node = (await stage.kube.get(PODS, name, OPERATOR_NAMESPACE))["spec"].get("nodeName")
        claim(f"the operator Pod {name} is Running 1/1 on {node}: raykube itself, as {account} (its token at the "
              "usual path), and it holds the leader Lease")  # fmt: skip
        return
    # On kwok nodes the Deployment's Pod runs nothing; the real operator runs here, as that account.
    token_kubeconfig = await stage.sandbox.service_account_kubeconfig(
        OPERATOR_NAMESPACE, OPERATOR_ACCOUNT, stage.sandbox.layout.root / "kubeconfigs" / "demo-operator.yaml"
    )
    argv = [sys.executable, "-m", "raykube.cli.main", "operator", f"--kubeconfig={token_kubeconfig}",
            f"--leader-election-namespace={OPERATOR_NAMESPACE}", "--health-probe-bind-address=127.0.0.1:0",
            "--enable-metrics", f"--metrics-addr=127.0.0.1:{Ports.free().etcd}",
            # Outside the cluster the operator cannot resolve <head-svc>.<ns>.svc: a RayJob's dashboard calls go
            # through the API server, as KubeRay's own must when it runs outside a cluster.
            "--use-kubernetes-proxy"]  # fmt: skip
    record = await stage.sandbox.start_extra(OPERATOR_PROCESS, argv, env=dict(os.environ))
    await wait_for_leader(stage)
    claim(f"the raykube operator runs locally as {account} (pid {record.pid}) and holds the leader Lease")


async def wait_for_leader(stage: Stage) -> str:
    """Wait until the leader Lease is held: by the local operator process (kwok nodes), or by an operator Pod that
    is Running and Ready (process nodes); the holder (on process nodes, its Pod's name)."""
    from raykube.deploy.install import next_step  # noqa: PLC0415
    from raykube.deploy.manifests import OPERATOR_POD_LABEL  # noqa: PLC0415
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.resources import LEASES, PODS  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    async def leader() -> str | NotYet:
        if not stage.process and stage.sandbox.running_extra(OPERATOR_PROCESS) is None:
            log = stage.sandbox.layout.log(OPERATOR_PROCESS)
            raise DemoFailed(f"the operator exited; see {log}")
        try:
            lease = await stage.kube.get(LEASES, "ray-operator-leader", OPERATOR_NAMESPACE)
        except ApiError:
            return NotYet("no leader Lease yet")
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        if not holder:
            return NotYet("the Lease has no holder")
        if not stage.process:
            return holder
        name = holder.partition("_")[0]  # the identity is <pod name>_<uuid>, as controller-runtime's
        pods = await stage.kube.list(PODS, OPERATOR_NAMESPACE, label_selector=OPERATOR_POD_LABEL)
        if not any(p["metadata"]["name"] == name and _ready(p) for p in pods.items):
            return NotYet(f"the Lease holder {holder} is no Running and Ready operator Pod yet")
        return name

    try:
        return await wait_for(leader, 120, what="the operator to hold the leader Lease")
    except WaitTimeout as exc:
        raise DemoFailed(f"{exc}\n{next_step(exc, namespace=OPERATOR_NAMESPACE)}") from exc


def operator_log(stage: Stage) -> None:
    """On process nodes: the operator's own log lines about the chapter's cluster, read as a user reads them."""
    shown = f"kubectl -n {OPERATOR_NAMESPACE} logs deploy/kuberay-operator | grep {CLUSTER}"
    out.print(f"[bold]$ {escape(shown)}[/bold]")
    logs = stage.kubectl("-n", OPERATOR_NAMESPACE, "logs", "deploy/kuberay-operator", show=False)
    lines = [line for line in logs.splitlines() if CLUSTER in line]
    for line in lines[:OPERATOR_LOG_LINES]:
        out.print(escape(line), highlight=False, soft_wrap=True)
    if len(lines) > OPERATOR_LOG_LINES:
        out.print(f"[dim]... {len(lines) - OPERATOR_LOG_LINES} more[/dim]")
    if not any("Created head Pod" in line for line in lines):
        raise DemoFailed(f"the operator's log does not show it creating the head Pod of {CLUSTER}")
    claim(f"the operator's log, read with kubectl, shows what it did for {CLUSTER} ({len(lines)} lines)")


async def create_objects(stage: Stage) -> None:
    chapter("2. Secret and ConfigMap for envFrom, the PVC, and the object store the Secret names")
    await wait_namespace_gone_if_terminating(stage)
    for name in ("00-namespace.yaml", "01-minio-credentials.yaml", "02-ray-env.yaml", "03-shared-data.yaml"):
        stage.kubectl("apply", "-f", str(EXAMPLES / name))
    await wait_pvc_bound(stage)
    stage.kubectl("-n", NAMESPACE, "get", "secret/minio-credentials", "configmap/ray-env", "pvc/ray-shared-data")
    claim("the PVC is Bound, so the Pods that mount it can be scheduled")
    stage.kubectl("apply", "-f", str(EXAMPLES / "03b-object-store.yaml"))
    if not stage.process:
        claim("the object store's Deployment and Service exist; on kwok nodes its Pod runs nothing, so the acts that "
              "read and write it (the dataset, the S3 RayJob) are skipped")  # fmt: skip
        return
    await wait_object_store(stage)
    stage.kubectl("-n", NAMESPACE, "get", "deployment,svc", OBJECT_STORE, "-o", "wide")
    claim(f"the object store (versitygw, S3 on port 9000) is Ready behind Service {OBJECT_STORE}: the Secret's "
          "AWS_ENDPOINT_URL")  # fmt: skip


async def wait_object_store(stage: Stage) -> None:
    """Wait until the minio Deployment has a Ready Pod (the first run builds its image, versitygw, from the Go
    module proxy: minutes)."""
    from raykube.kube.resources import PODS  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    async def ready() -> bool | NotYet:
        pods = (await stage.kube.list(PODS, NAMESPACE, label_selector=f"app={OBJECT_STORE}")).items
        if any(_ready(p) for p in pods):
            return True
        return NotYet(f"{OBJECT_STORE} Pods: {[(p.get('status') or {}).get('phase') for p in pods]}")

    with err.status(f"waiting for {OBJECT_STORE} to be Ready (the first time, its image is built)"):
        await wait_for(ready, 900, what=f"the {OBJECT_STORE} Pod to be Ready")


async def wait_namespace_gone_if_terminating(stage: Stage) -> None:
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.resources import NAMESPACES  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    async def usable() -> bool | NotYet:
        try:
            namespace = await stage.kube.get(NAMESPACES, NAMESPACE)
        except ApiError as exc:
            if exc.not_found:
                return True
            raise
        terminating = (namespace.get("status") or {}).get("phase") == "Terminating"
        return NotYet("the previous demo's namespace is still terminating") if terminating else True

    await wait_for(usable, 120, what=f"namespace {NAMESPACE} to be usable")


async def wait_pvc_bound(stage: Stage) -> None:
    from raykube.kube.resources import PERSISTENT_VOLUME_CLAIMS as claims  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    async def bound() -> bool | NotYet:
        pvc = await stage.kube.get(claims, "ray-shared-data", NAMESPACE)
        phase = (pvc.get("status") or {}).get("phase")
        return phase == "Bound" or NotYet(f"PVC is {phase}")

    await wait_for(bound, 60, what="the PVC to be Bound")


async def cluster_state(stage: Stage) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from raykube.api.resources import RAYCLUSTERS  # noqa: PLC0415
    from raykube.kube.resources import PODS  # noqa: PLC0415

    cluster = await stage.kube.get(RAYCLUSTERS, CLUSTER, NAMESPACE)
    listed = await stage.kube.list(PODS, NAMESPACE, label_selector=f"ray.io/cluster={CLUSTER}")
    return cluster, [p for p in listed.items if not p["metadata"].get("deletionTimestamp")]


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    return status.get("phase") == "Running" and conditions.get("Ready") == "True"


def summarise(cluster: dict[str, Any], pods: list[dict[str, Any]]) -> str:
    kinds = {"head": [0, 0], "worker": [0, 0]}
    for pod in pods:
        entry = kinds.setdefault(pod["metadata"]["labels"].get("ray.io/node-type", "?"), [0, 0])
        entry[0] += 1
        entry[1] += _ready(pod)
    state = (cluster.get("status") or {}).get("state") or "-"
    return f"state {state}; head {kinds['head'][1]}/{kinds['head'][0]} ready; workers {kinds['worker'][1]}/" \
           f"{kinds['worker'][0]} ready"  # fmt: skip


async def wait_ready(stage: Stage, workers: int, within: float = 120) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Wait, with a live line, until the cluster is ready with 1 head + ``workers`` workers Running and Ready."""
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    with err.status("waiting for the RayCluster") as live:

        async def ready() -> tuple[dict[str, Any], list[dict[str, Any]]] | NotYet:
            cluster, pods = await cluster_state(stage)
            line = summarise(cluster, pods)
            live.update(f"waiting for the RayCluster: {line}")
            heads = [p for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "head"]
            workers_now = [p for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "worker"]
            done = (
                (cluster.get("status") or {}).get("state") == "ready"
                and len(heads) == 1
                and len(workers_now) == workers
                and all(_ready(p) for p in pods)
            )
            return (cluster, pods) if done else NotYet(line)

        return await wait_for(ready, within, what=f"1 head + {workers} workers Running and Ready")


async def create_cluster(stage: Stage) -> None:
    chapter("3. The RayCluster: 1 head + 2 workers")
    stage.kubectl("apply", "-f", str(EXAMPLES / "04-raycluster.yaml"))
    cluster, pods = await wait_ready(stage, WORKERS, stage.ready_within)
    claim(f"{summarise(cluster, pods)}: 1 head + {WORKERS} workers Running and Ready")


async def chapter_checks(stage: Stage) -> None:
    chapter("4. The chapter's checks, and what they prove")
    stage.kubectl("-n", NAMESPACE, "get", "raycluster", CLUSTER)
    claim("the operator reconciled the RayCluster: its status says ready, with the desired workers available")
    stage.kubectl("-n", NAMESPACE, "get", "pods", "-l", f"ray.io/cluster={CLUSTER}", "-o", "wide")
    cluster, pods = await cluster_state(stage)
    [head] = [p for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    nodes = {p["spec"].get("nodeName") for p in pods}
    claim(f"the controller created the Pods directly (no Deployment), scheduled onto {len(nodes)} node(s)")
    service = f"{CLUSTER}-head-svc"
    stage.kubectl("-n", NAMESPACE, "get", "svc", service)
    stage.kubectl("-n", NAMESPACE, "get", "endpointslices", "-l", f"kubernetes.io/service-name={service}")
    slices = json.loads(stage.kubectl("-n", NAMESPACE, "get", "endpointslices", "-l",
                                      f"kubernetes.io/service-name={service}", "-o", "json", show=False))  # fmt: skip
    addresses = [a for s in slices["items"] for e in s.get("endpoints") or [] for a in e.get("addresses") or []]
    head_ip = head["status"].get("podIP")
    if addresses != [head_ip]:
        raise DemoFailed(f"the head Service's endpoints are {addresses}, not the head Pod's IP {head_ip}")
    claim(f"the head Service's endpoint is the head Pod's IP {head_ip}: workers reach the GCS through "
          f"{service}:6379")  # fmt: skip
    if (cluster.get("status") or {}).get("head", {}).get("serviceIP") != head_ip:
        raise DemoFailed("status.head.serviceIP is not the head Pod IP of the headless Service")
    claim("status.head.serviceIP is that IP too: the head Service is headless, as KubeRay makes it")
    stage.kubectl_ray("get", "cluster", "-n", NAMESPACE)
    groups = stage.kubectl_ray("get", "workergroup", "-n", NAMESPACE)
    stage.kubectl_ray("get", "nodes", "-n", NAMESPACE, "-c", CLUSTER)
    if f"{WORKERS}/{WORKERS}" not in groups:
        raise DemoFailed(f"kubectl ray get workergroup does not show {WORKERS}/{WORKERS} ready workers:\n{groups}")
    claim(f"kubectl ray (KubeRay's plugin commands, from raykube) reads the same: {WORKERS}/{WORKERS} workers ready")


def ray_status_nodes(output: str) -> int:
    """The nodes ``ray status`` lists as active or idle (the autoscaler groups them: `` 2 workers``)."""
    section = output.split("Node status", 1)[-1].split("Pending:", 1)[0]
    return sum(int(m[1]) for m in re.finditer(r"^\s*(\d+) \S+\s*$", section, re.MULTILINE))


async def ray_itself(stage: Stage) -> None:
    """On process nodes the Pods run Ray: the chapter's last check, ``ray status`` from inside the head."""
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    chapter("4b. Ray itself: `ray status` inside the head Pod")
    _, pods = await cluster_state(stage)
    [head] = [p["metadata"]["name"] for p in pods if p["metadata"]["labels"]["ray.io/node-type"] == "head"]

    async def three() -> str | NotYet:  # ray status shows the autoscaler's view, which lags a few seconds
        text = stage.kubectl("-n", NAMESPACE, "exec", head, "--", "ray", "status", show=False, check=False)
        return text if ray_status_nodes(text) == 1 + WORKERS else NotYet(text[-300:] or "no output yet")

    await wait_for(three, 120, what=f"`ray status` to list {1 + WORKERS} nodes")
    stage.kubectl("-n", NAMESPACE, "exec", head, "--", "ray", "status")
    claim(f"Ray's own view: {1 + WORKERS} nodes joined the head's GCS through {CLUSTER}-head-svc (cluster DNS)")


async def rayjob_act(stage: Stage) -> None:
    """On process nodes: a RayJob on the chapter's cluster, submitted by a Kubernetes Job, to SUCCEEDED."""
    from raykube.api.resources import RAYJOBS  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    chapter("4c. A RayJob on the chapter's cluster")
    stage.kubectl("apply", "-f", str(EXAMPLES / "05-rayjob.yaml"))

    async def finished() -> dict[str, Any] | NotYet:
        job = await stage.kube.get(RAYJOBS, RAYJOB, NAMESPACE)
        status = job.get("status") or {}
        state = (status.get("jobDeploymentStatus"), status.get("jobStatus"))
        return dict(status) if state[0] in ("Complete", "Failed") else NotYet(f"deployment/job status {state}")

    status = await wait_for(finished, stage.ready_within, what=f"RayJob {RAYJOB} to finish")
    stage.kubectl("-n", NAMESPACE, "get", "rayjob", RAYJOB)
    if status.get("jobStatus") != "SUCCEEDED":
        raise DemoFailed(f"RayJob {RAYJOB} ended {status.get('jobStatus')}: {status.get('message')}")
    out.print(f"[bold]$ kubectl -n {NAMESPACE} logs job/{RAYJOB}[/bold]  [dim](the job's lines)[/dim]")
    logs = stage.kubectl("-n", NAMESPACE, "logs", f"job/{RAYJOB}", show=False)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", logs)  # ray's CLI colours its lines
    shown = [line for line in plain.splitlines() if "Ray sees" in line or "succeeded" in line]
    out.print(escape("\n".join(shown)), highlight=False)
    claim(f"the Ray job {status.get('jobId')} SUCCEEDED on {CLUSTER}; its submitter Job followed its logs")
    stage.kubectl("-n", NAMESPACE, "delete", "rayjob", RAYJOB)
    with tempfile.TemporaryDirectory(prefix="raykube-demo-logs-") as logs_dir:
        stage.kubectl_ray("log", CLUSTER, "-n", NAMESPACE, "--node-type", "head", "--out-dir", logs_dir)
        [pod_dir] = [p for p in Path(logs_dir).iterdir() if p.is_dir()]  # noqa: ASYNC240 - one directory
        files = [p for p in pod_dir.rglob("*") if p.is_file()]
        if "Ray runtime started" not in (pod_dir / "stdout.log").read_text():
            raise DemoFailed(f"kubectl ray log brought back no head container log with Ray's start-up: {files}")
        # RAY_LOG_TO_STDERR=1 (examples/02-ray-env.yaml) sends Ray's component logs to the container log.
        claim(f"kubectl ray log copied the head's container log and Ray's log directory ({len(files)} files)")


async def rayservice_act(stage: Stage) -> None:
    """On process nodes: a RayService answering through its serve Service, then a cluster upgrade while a client
    calls it every 0.1 s: the requests sent during the upgrade, and how many failed (KubeRay's promise: none)."""
    from raykube.api.resources import RAYCLUSTERS, RAYSERVICES  # noqa: PLC0415
    from raykube.cli.serveclient import CLIENT_POD, parse_log, window  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    chapter("4d. A RayService: Ray Serve behind a Service, upgraded without dropping a request")
    stage.kubectl("apply", "-f", str(EXAMPLES / "06-serve-app.yaml"), "-f", str(EXAMPLES / "07-rayservice.yaml"))

    async def serving() -> dict[str, Any] | NotYet:
        status = (await stage.kube.get(RAYSERVICES, RAYSERVICE, NAMESPACE)).get("status") or {}
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        app = ((status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}).get("hello") or {}
        return dict(status) if ready and app.get("status") == "RUNNING" else NotYet(f"Ready {ready}, app {app}")

    status = await wait_for(serving, stage.ready_within, what=f"RayService {RAYSERVICE} to be Ready")
    first = str(status["activeServiceStatus"]["rayClusterName"])
    stage.kubectl("-n", NAMESPACE, "get", "rayservice", RAYSERVICE)
    stage.kubectl("-n", NAMESPACE, "get", "svc", f"{RAYSERVICE}-serve-svc", f"{RAYSERVICE}-head-svc")
    stage.kubectl("apply", "-f", str(EXAMPLES / "serve" / "client.yaml"))

    def answers() -> list[Any]:
        return parse_log(stage.kubectl("-n", NAMESPACE, "logs", CLIENT_POD, show=False, check=False))

    async def answered(since: float = 0.0, count: int = 5) -> float | NotYet:
        good = [a for a in answers() if a.ok and a.sent >= since]
        return good[count - 1].done if len(good) >= count else NotYet(f"{len(good)} answers")

    await wait_for(answered, 120, what="the client's first answers")
    stage.kubectl("-n", NAMESPACE, "logs", CLIENT_POD, "--tail=3")
    claim(f"Serve answers through {RAYSERVICE}-serve-svc (cluster {first}); the client logs time, seconds, code, word")

    out.print("[dim]A change of rayClusterConfig: a new cluster, switched to once its app runs[/dim]")
    patch = [{"op": "add", "path": "/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/env/-",
              "value": {"name": "DEMO_UPGRADE", "value": "1"}}]  # fmt: skip
    started = time.time()
    stage.kubectl("-n", NAMESPACE, "patch", "rayservice", RAYSERVICE, "--type=json", "-p", json.dumps(patch))

    async def upgraded() -> str | NotYet:
        status = (await stage.kube.get(RAYSERVICES, RAYSERVICE, NAMESPACE)).get("status") or {}
        active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
        left = [c["metadata"]["name"] for c in (await stage.kube.list(RAYCLUSTERS, NAMESPACE)).items]
        if active and active != first and first not in left:
            return str(active)
        return NotYet(f"active {active}, clusters {left}")

    second = await wait_for(upgraded, stage.ready_within, what="the switch-over and the old cluster's deletion")
    switched = time.time()
    end = await wait_for(lambda: answered(switched, 10), 60, what="answers after the upgrade")
    seen = window(answers(), started, end)
    stage.kubectl("-n", NAMESPACE, "get", "rayservice,raycluster")
    if seen["failed"]:
        raise DemoFailed(f"{seen['failed']} of {seen['requests']} requests failed during the upgrade: "
                         f"{', '.join(seen['failures'])}")  # fmt: skip
    gap = seen["longest_gap_seconds"]
    claim(f"upgrade {first} -> {second}: {seen['requests']} requests during it, 0 failed, longest wait for an answer "
          f"{gap:.2f} s; the old cluster deleted after rayClusterDeletionDelaySeconds")  # fmt: skip
    stage.kubectl("-n", NAMESPACE, "delete", "pod", CLIENT_POD, "--wait=false")
    stage.kubectl("-n", NAMESPACE, "delete", "rayservice", RAYSERVICE)


async def doctor_healthy(stage: Stage, title: str) -> None:
    chapter(title)
    code, _ = stage.doctor()
    if code != 0:
        raise DemoFailed(f"raykube doctor found problems in a cluster that should be healthy (exit {code})")
    claim("doctor: healthy (exit 0)")


# ---------------------------------------------------------------------------------------------------- act two
def unschedulable(pod: dict[str, Any]) -> bool:
    """Pending because the scheduler found no node: condition PodScheduled=False, reason Unschedulable."""
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable" for c in conditions)


async def break_and_fix(stage: Stage) -> None:
    from raykube.api.resources import RAYCLUSTERS  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    chapter(f"6. Break it: {TOO_MANY_WORKERS} workers, more than the nodes hold")
    patch = json.dumps(
        [
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": TOO_MANY_WORKERS},
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": TOO_MANY_WORKERS},
        ]
    )
    stage.kubectl("-n", NAMESPACE, "patch", "raycluster", CLUSTER, "--type=json", "-p", patch)

    async def pending() -> list[dict[str, Any]] | NotYet:
        _, pods = await cluster_state(stage)
        stuck = [p for p in pods if unschedulable(p)]
        return stuck or NotYet(f"{len(pods)} pods, none marked Unschedulable by the scheduler yet")

    stuck = await wait_for(pending, 60, what="workers to be Pending for lack of CPU")
    stage.kubectl(
        "-n", NAMESPACE, "get", "pods", "-l", f"ray.io/cluster={CLUSTER}", "--field-selector=status.phase=Pending"
    )
    name = stuck[0]["metadata"]["name"]

    async def scheduling_event() -> str | NotYet:
        text = stage.kubectl("-n", NAMESPACE, "get", "events", f"--field-selector=involvedObject.name={name}",
                             "-o", "json", show=False)  # fmt: skip
        messages = [e.get("message", "") for e in json.loads(text)["items"] if e.get("reason") == "FailedScheduling"]
        return messages[0] if messages else NotYet("no FailedScheduling event yet")

    message = await wait_for(scheduling_event, 60, what="the scheduler's FailedScheduling event")
    out.print(f"[bold]$ kubectl -n {NAMESPACE} describe pod {name}[/bold]  [dim](its event)[/dim]")
    out.print(f"  Warning  FailedScheduling  {escape(message)}", highlight=False)
    _, pods = await cluster_state(stage)
    stuck = [p for p in pods if unschedulable(p)]
    claim(f"{len(stuck)} worker(s) Pending: the symptom the chapter calls 'RayCluster stuck Pending'")

    chapter("7. raykube doctor names the root cause")
    code, _ = stage.doctor()
    if code == 0:
        raise DemoFailed("raykube doctor called a cluster with Pending workers healthy")
    _, report = stage.doctor("-o", "json", show=False)
    parsed = json.loads(report)
    root_ids = {i for target in parsed.get("targets", []) for i in target.get("rootCauses", [])}
    codes = {str(f.get("code", "")) for f in parsed.get("findings", []) if f.get("id") in root_ids}
    if not any("UNSCHEDULABLE" in c or "INSUFFICIENT" in c for c in codes):
        raise DemoFailed(f"doctor's root causes {sorted(codes)} do not name the lack of capacity")
    claim(f"doctor's root cause: {', '.join(sorted(codes))} (exit {code})")

    chapter(f"8. Fix it: back to {WORKERS} workers")
    patch = json.dumps(
        [
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": WORKERS},
            {"op": "replace", "path": "/spec/workerGroupSpecs/0/maxReplicas", "value": MAX_WORKERS},
        ]
    )
    stage.kubectl("-n", NAMESPACE, "patch", "raycluster", CLUSTER, "--type=json", "-p", patch)
    cluster, pods = await wait_ready(stage, WORKERS, stage.ready_within)
    claim(f"{summarise(cluster, pods)}: recovered")
    await stage.kube.get(RAYCLUSTERS, CLUSTER, NAMESPACE)


# ---------------------------------------------------------------------------------------------------- ending
async def clean_up(stage: Stage) -> None:
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.resources import NAMESPACES  # noqa: PLC0415

    chapter("Cleaning up (the sandbox stays up)")
    try:
        await stage.kube.delete(NAMESPACES, NAMESPACE)
    except ApiError as exc:
        if not exc.not_found:
            raise
    await wait_namespace_gone(stage)
    if await stage.sandbox.stop_extra(OPERATOR_PROCESS):
        claim("stopped the local operator process")
    claim(f"deleted namespace {NAMESPACE}")


async def wait_namespace_gone(stage: Stage) -> None:
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.resources import NAMESPACES  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    async def gone() -> bool | NotYet:
        try:
            await stage.kube.get(NAMESPACES, NAMESPACE)
        except ApiError as exc:
            if exc.not_found:
                return True
            raise
        return NotYet("namespace still terminating")

    await wait_for(gone, 120, what=f"namespace {NAMESPACE} to be deleted")


def how_to_reach(stage: Stage, name: str) -> None:
    flag = "" if name == "default" else f" --name {name}"
    out.print()
    out.print("Everything is still running. To look around:")
    out.print(f'  eval "$(uv run raykube sandbox env{flag})"   # KUBECONFIG and the sandbox\'s kubectl')
    out.print(f"  kubectl -n {NAMESPACE} get raycluster,pods,svc,endpointslices")
    out.print(f"  uv run raykube doctor raycluster/{CLUSTER} -n {NAMESPACE}")
    out.print(f"  kubectl ray get cluster -n {NAMESPACE}; kubectl ray session {CLUSTER} -n {NAMESPACE}   # dashboard")
    if stage.process:
        out.print(f"Operator log: kubectl -n {OPERATOR_NAMESPACE} logs deploy/kuberay-operator")
    else:
        out.print(f"Operator log: {stage.sandbox.layout.log(OPERATOR_PROCESS)}")
    out.print(f"Stop everything with `make demo-down` (or `uv run raykube sandbox down{flag}`).")


async def play(stage: Stage, *, keep: bool, name: str) -> None:
    await install_operator(stage)
    await create_objects(stage)
    await create_cluster(stage)
    await chapter_checks(stage)
    if stage.process:
        operator_log(stage)
        await ray_itself(stage)
        from raykube.cli import demo_workloads  # noqa: PLC0415 - it builds on this module's Stage

        await rayjob_act(stage)
        await demo_workloads.object_store_act(stage)
        await demo_workloads.workload_rbac_act(stage)
        await rayservice_act(stage)
        from raykube.cli.demo_incremental import incremental_act  # noqa: PLC0415 - it builds on this module's Stage

        await incremental_act(stage)
    await doctor_healthy(stage, "5. raykube doctor on the healthy cluster")
    await break_and_fix(stage)
    await doctor_healthy(stage, "9. raykube doctor after the fix")
    if keep:
        how_to_reach(stage, name)
    else:
        await clean_up(stage)


# Three process nodes that hold one of the chapter's Ray Pods (2Gi) each, as the cluster spreads on real nodes, and
# beside them the operator's Pod (512Mi, the chart's), Traefik's (128Mi) and, during a RayService upgrade, two heads
# (1Gi, and 256Mi of autoscaler in the incremental act's) and the client.
PROCESS_NODES = NodePool(count=3, cpu="2", memory="3584Mi")


def too_small(nodes: NodePool) -> bool:
    """Whether a running sandbox's process nodes are fewer or smaller than the demo's (an older demo's sandbox)."""
    from raykube.golang.quantity import parse_quantity  # noqa: PLC0415

    return (
        nodes.count < PROCESS_NODES.count
        or parse_quantity(nodes.cpu).value < parse_quantity(PROCESS_NODES.cpu).value
        or parse_quantity(nodes.memory).value < parse_quantity(PROCESS_NODES.memory).value
    )


def choose_runtime(wanted: str) -> str:
    """``process`` or ``kwok`` for ``--runtime`` (``auto``: process nodes if this machine can run them, else kwok,
    saying why)."""
    if wanted != "auto":
        return wanted
    from raykube.sandbox.kubelet.network import preflight  # noqa: PLC0415

    problems = preflight()
    if not problems:
        return "process"
    err.print("[yellow]process nodes are not possible here, so the demo runs on kwok nodes (Pods are simulated, no "
              "Ray runs):[/yellow]\n  - " + "\n  - ".join(problems))  # fmt: skip
    return "kwok"


def demo(
    name: NameOption = "default",
    port_base: Annotated[int, typer.Option(help="First of the sandbox's seven 127.0.0.1 ports.")] = DEFAULT_PORT_BASE,
    keep: Annotated[bool, typer.Option(help="Leave the RayCluster and the operator running at the end.")] = False,
    runtime: Annotated[
        str,
        typer.Option(
            help="auto: process nodes (real Ray in the Pods) where the machine allows it (root, namespaces), else "
            "kwok nodes (simulated Pods); or process, or kwok. A running sandbox is reused as it is."
        ),
    ] = "auto",
) -> None:
    """The seed chapter's deployment on the local Kubernetes: operator, Secret, ConfigMap, PVC, a RayCluster of
    1 head + 2 workers, the chapter's checks, doctor; then break it, diagnose, fix."""
    from raykube.kube.client import Kube  # noqa: PLC0415
    from raykube.sandbox.cluster import Sandbox  # noqa: PLC0415

    if runtime not in ("auto", "process", "kwok"):
        fail(f"--runtime must be auto, process or kwok, not {runtime!r}", code=2)
    try:
        config = SandboxConfig(name=name, ports=Ports.from_base(port_base))
        if choose_runtime(runtime) == "process":  # with Traefik, the Gateway of the incremental upgrade's act
            config = replace(config, nodes=PROCESS_NODES, runtime="process", gateway=True)
    except ValueError as exc:
        fail(str(exc), code=2)
    result = bring_up(config)
    sandbox = Sandbox.named(name)
    process = result.config.runtime == "process"
    down = "make demo-down" if name == "default" else f"uv run raykube sandbox down --name {name}"
    if process and not result.config.gateway:
        fail(f"sandbox {name!r} was started without the Gateway API (Traefik), which the demo's incremental upgrade "
             f"needs\nNext: `{down}`, then run the demo again")  # fmt: skip
    if process and too_small(result.config.nodes):
        fail(
            f"sandbox {name!r} was started with process nodes of {result.config.nodes.count} x "
            f"{result.config.nodes.cpu} CPU / {result.config.nodes.memory}; the demo needs {PROCESS_NODES.count} x "
            f"{PROCESS_NODES.cpu} CPU / {PROCESS_NODES.memory} (the chapter's cluster, the operator's Pod and a "
            f"RayService upgrade)\nNext: `{down}`, then run the demo again"
        )
    if process:
        err.print("[dim]process nodes: the Pods run real Ray processes (images map to a local Ray venv)[/dim]")

    async def run() -> None:
        kube = Kube.from_config(result.kubeconfig)
        try:
            await play(Stage(sandbox, result.kubeconfig, kube, process), keep=keep, name=name)
        finally:
            await kube.close()

    try:
        aio.run(run())
    except (DemoFailed, SandboxError, WaitTimeout) as exc:
        env = "uv run raykube sandbox env" + ("" if name == "default" else f" --name {name}")
        fail(
            f"the demo stopped: {exc}\n"
            f'Next: eval "$({env})", then `uv run raykube doctor raycluster/{CLUSTER} -n {NAMESPACE}` (or '
            f"rayjob/{RAYJOB}, rayservice/{RAYSERVICE}) and `kubectl -n {NAMESPACE} get events`; `{down}` removes "
            "everything"
        )
    out.print()
    out.print("[bold green]The demo finished: every check above held.[/bold green]")

"""The process runtime on a real sandbox: Pods on process nodes run as real processes, as a kubelet runs them.

One private sandbox with ``runtime="process"`` (three process nodes, ``tests/integration/conftest.py``), shared with
the other process-node tests; every test has its own namespace. Skipped, with the reason, where the machine cannot
host process nodes (not root, no namespaces).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import signal
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from lightkube import AsyncClient
from lightkube.codecs import from_dict
from lightkube.generic_resource import create_namespaced_resource
from lightkube.resources.batch_v1 import Job
from lightkube.resources.core_v1 import Event, Pod
from lightkube.types import PatchType

from raykube.builders.probes import inject_probes
from raykube.runtime.manager import Manager
from raykube.sandbox import Binaries
from raykube.waiting import NotYet, wait_for
from tests.doctor_support import assert_fires, assert_quiet
from tests.integration.process import ProcessSandbox
from tests.ledger import Ledger

IMAGE = "rayproject/ray:2.52.0"
EXAMPLES = Path(__file__).parents[2] / "examples"
RAY_READY = 300.0  # generous: three Ray nodes start on two cores
START = 240.0  # generous: the first Pod may install the Ray venv into the cache


async def create(kube: AsyncClient, namespace: str, body: dict[str, Any]) -> None:
    await kube.create(from_dict(body), namespace=namespace)  # type: ignore[call-overload]


def pod(name: str, command: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": IMAGE, "command": ["bash", "-c", command], **spec.pop("container", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


async def kube_pod(kube: AsyncClient, namespace: str, name: str) -> Pod:
    return await kube.get(Pod, name, namespace=namespace)


async def status(kube: AsyncClient, namespace: str, name: str) -> dict[str, Any]:
    got = await kube_pod(kube, namespace, name)
    return dict(got.to_dict().get("status") or {})


def container(st: dict[str, Any], name: str = "main", init: bool = False) -> dict[str, Any]:
    for entry in st.get("initContainerStatuses" if init else "containerStatuses") or []:
        if entry["name"] == name:
            return dict(entry)
    return {}


async def wait_status(
    kube: AsyncClient,
    namespace: str,
    name: str,
    check: Callable[[dict[str, Any]], bool],
    what: str,
    seconds: float = START,
) -> dict[str, Any]:
    async def predicate() -> dict[str, Any] | NotYet:
        st = await status(kube, namespace, name)
        summary = json.dumps(
            {
                "phase": st.get("phase"),
                "containers": [
                    (c.get("name"), c.get("state"), c.get("ready")) for c in st.get("containerStatuses") or []
                ],
            }
        )
        return st if check(st) else NotYet(summary)

    result: dict[str, Any] = await wait_for(predicate, seconds, what=f"{namespace}/{name}: {what}")
    return result


@contextlib.asynccontextmanager
async def port_forward(proc: ProcessSandbox, namespace: str, target: str, port: int) -> AsyncIterator[int]:
    """``kubectl port-forward TARGET :PORT`` while the block runs; yields the local port kubectl picked."""
    forward = await asyncio.create_subprocess_exec(
        str(Binaries.from_cache().kubectl),
        "port-forward",
        "-n",
        namespace,
        target,
        f":{port}",
        env={**os.environ, "KUBECONFIG": str(proc.kubeconfig)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert forward.stdout is not None
        line = (await asyncio.wait_for(forward.stdout.readline(), 60)).decode()
        match = re.search(r"127\.0\.0\.1:(\d+)", line)
        assert match, f"kubectl port-forward said {line!r}"
        yield int(match[1])
    finally:
        exited = forward.returncode
        if exited is None:
            forward.terminate()
        _, err = await forward.communicate()
        if exited is not None:  # it died while the block ran: say why, instead of the block's own symptom
            raise AssertionError(f"kubectl port-forward {target} exited {exited}: {err.decode()[-1000:]}")


def conditions_of(st: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in st.get("conditions") or []}


def is_ready(st: dict[str, Any]) -> bool:
    return {c["type"]: c["status"] for c in st.get("conditions") or []}.get("Ready") == "True"


async def events(kube: AsyncClient, namespace: str, name: str) -> list[tuple[str, str]]:
    return [
        (e.reason or "", e.message or "")
        async for e in kube.list(Event, namespace=namespace)
        if e.involvedObject.name == name
    ]


async def wait_events(
    kube: AsyncClient, namespace: str, name: str, check: Callable[[list[tuple[str, str]]], bool], what: str
) -> list[tuple[str, str]]:
    """The (reason, message) of the Pod's events once ``check`` accepts them: a kubelet sends events in the
    background, so one may arrive after the status it goes with."""

    async def predicate() -> list[tuple[str, str]] | NotYet:
        found = await events(kube, namespace, name)
        return found if check(found) else NotYet(f"events so far: {found}")

    result: list[tuple[str, str]] = await wait_for(predicate, 30, what=f"{namespace}/{name}: {what}")
    return result


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# ------------------------------------------------------------------------------------------------------------------
async def test_a_pod_runs_with_the_kubelets_environment(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    await create(pkube, ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"A": "1"}})
    await create(
        pkube, ns, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"}, "data": {"PASS": b64("s3cr3t")}}
    )
    script = (
        'echo "A=$A S_PASS=$S_PASS X=$X IP=$POD_IP NAME=$POD_NAME NS=$POD_NS APP=$APP CPU=$CPU HOST=$(hostname)"; '
        "getent hosts kubernetes.default.svc.cluster.local; echo to-stderr >&2; exit 0"
    )
    body = pod(
        "env",
        script,
        restartPolicy="Never",
        container={
            "envFrom": [{"configMapRef": {"name": "cfg"}}, {"secretRef": {"name": "sec"}, "prefix": "S_"}],
            "env": [
                {"name": "X", "value": "a-$(A)"},
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {
                    "name": "CPU",
                    "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}},
                },
            ],
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}},
        },
    )
    body["metadata"]["labels"] = {"app": "envtest"}
    await create(pkube, ns, body)

    st = await wait_status(pkube, ns, "env", lambda s: s.get("phase") == "Succeeded", "to succeed")

    terminated = container(st)["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    ip = st["podIP"]
    assert ip.startswith("10.244.")
    logs = proc.kubectl("logs", "-n", ns, "env")
    assert logs.returncode == 0, logs.stderr
    assert f"A=1 S_PASS=s3cr3t X=a-1 IP={ip} NAME=env NS={ns} APP=envtest CPU=500 HOST=env" in logs.stdout
    assert "10.96.0.1" in logs.stdout  # cluster DNS answered kubernetes.default
    assert "to-stderr" in logs.stdout
    await wait_events(
        pkube,
        ns,
        "env",
        lambda found: {"Scheduled", "Pulled", "Created", "Started"} <= {reason for reason, _ in found},
        "the scheduler's and the kubelet's events",
    )
    # As a kubelet's: from the kubelet of the Pod's node, about the container.
    node = (await kube_pod(pkube, ns, "env")).spec.nodeName
    [started] = [
        e async for e in pkube.list(Event, namespace=ns) if (e.involvedObject.name, e.reason) == ("env", "Started")
    ]
    assert (started.source.component, started.source.host) == ("kubelet", node)
    assert (started.involvedObject.kind, started.involvedObject.fieldPath) == ("Pod", "spec.containers{main}")
    described = proc.kubectl("describe", "pod", "-n", ns, "env").stdout
    # kubectl prefixes the message with the event's fieldPath
    assert re.search(r"Normal\s+Started\s+\S+\s+kubelet\s+spec\.containers\{main\}: Started container main", described)


async def test_a_missing_secret_is_a_create_container_config_error(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str
) -> None:
    await create(
        pkube, ns, pod("cfgerr", "echo started; sleep 3600", container={"envFrom": [{"secretRef": {"name": "later"}}]})
    )

    st = await wait_status(
        pkube,
        ns,
        "cfgerr",
        lambda s: container(s).get("state", {}).get("waiting", {}).get("reason") == "CreateContainerConfigError",
        "CreateContainerConfigError",
    )

    assert container(st)["state"]["waiting"]["message"] == 'secret "later" not found'
    assert st["phase"] == "Pending"
    await wait_events(
        pkube, ns, "cfgerr", lambda found: ("Failed", 'Error: secret "later" not found') in found, "a Failed event"
    )
    assert "started" not in proc.kubectl("logs", "-n", ns, "cfgerr").stdout  # nothing ran

    await create(pkube, ns, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "later"}, "data": {}})
    await wait_status(pkube, ns, "cfgerr", lambda s: "running" in container(s).get("state", {}), "to start")


async def test_a_missing_key_names_it(pkube: AsyncClient, ns: str) -> None:
    await create(pkube, ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {}})
    ref = {"configMapKeyRef": {"name": "cfg", "key": "NOPE"}}
    await create(pkube, ns, pod("keyerr", "sleep 3600", container={"env": [{"name": "V", "valueFrom": ref}]}))
    st = await wait_status(
        pkube,
        ns,
        "keyerr",
        lambda s: "waiting" in container(s).get("state", {}) and bool(container(s)["state"]["waiting"].get("message")),
        "a config error",
    )
    assert container(st)["state"]["waiting"] == {
        "reason": "CreateContainerConfigError",
        "message": f"couldn't find key NOPE in ConfigMap {ns}/cfg",
    }


async def test_exit_codes_and_restart_policies(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    await create(pkube, ns, pod("never", "echo bye; exit 3", restartPolicy="Never"))
    await create(pkube, ns, pod("onfailure", "echo run; exit 4", restartPolicy="OnFailure"))

    never = await wait_status(pkube, ns, "never", lambda s: s.get("phase") == "Failed", "to fail")
    assert container(never)["state"]["terminated"]["exitCode"] == 3
    assert container(never)["state"]["terminated"]["reason"] == "Error"
    assert container(never)["restartCount"] == 0

    crashing = await wait_status(
        pkube,
        ns,
        "onfailure",
        lambda s: container(s).get("state", {}).get("waiting", {}).get("reason") == "CrashLoopBackOff",
        "CrashLoopBackOff",
    )
    assert crashing["phase"] == "Running"
    assert container(crashing)["restartCount"] >= 1
    assert container(crashing)["lastState"]["terminated"]["exitCode"] == 4
    assert "back-off 10s restarting failed container=main" in container(crashing)["state"]["waiting"]["message"]
    previous = proc.kubectl("logs", "-n", ns, "onfailure", "--previous")
    assert previous.returncode == 0 and "run" in previous.stdout, previous.stderr
    await wait_events(pkube, ns, "onfailure", lambda found: any(r == "BackOff" for r, _ in found), "a BackOff event")


async def test_a_containers_own_restart_policy_restarts_it_in_a_never_pod(pkube: AsyncClient, ns: str) -> None:
    """Container restart rules (Kubernetes 1.34+), as KubeRay v1.7.0's SidecarSubmitterRestart uses them: in a
    ``restartPolicy: Never`` Pod, a container with its own ``restartPolicy: OnFailure`` that fails is restarted, and
    the Pod succeeds once both containers exited 0."""
    flaky = {
        "name": "flaky",
        "image": IMAGE,
        "restartPolicy": "OnFailure",
        "command": ["bash", "-c", "test -f /work/ran || { touch /work/ran; exit 5; }; echo second"],
        "volumeMounts": [{"name": "work", "mountPath": "/work"}],
    }
    body = pod("never-but", "sleep 4", restartPolicy="Never", volumes=[{"name": "work", "emptyDir": {}}])
    body["spec"]["containers"].append(flaky)
    await create(pkube, ns, body)
    done = await wait_status(pkube, ns, "never-but", lambda s: s.get("phase") in ("Succeeded", "Failed"), "to end")
    assert done["phase"] == "Succeeded", done
    assert container(done, "flaky")["restartCount"] == 1
    assert container(done, "flaky")["lastState"]["terminated"]["exitCode"] == 5
    assert container(done, "flaky")["state"]["terminated"]["exitCode"] == 0
    assert container(done)["restartCount"] == 0


async def test_init_containers_run_in_order_before_the_containers(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str
) -> None:
    mount = [{"name": "work", "mountPath": "/work"}]
    body = pod("init", "cat /work/order; sleep 3600", container={"volumeMounts": mount})
    body["spec"]["volumes"] = [{"name": "work", "emptyDir": {}}]
    body["spec"]["initContainers"] = [
        {
            "name": f"step{i}",
            "image": IMAGE,
            "command": ["bash", "-c", f"echo step{i} >> /work/order"],
            "volumeMounts": mount,
        }
        for i in (1, 2)
    ]
    await create(pkube, ns, body)

    st = await wait_status(pkube, ns, "init", is_ready, "Ready")

    assert [container(st, f"step{i}", init=True)["state"]["terminated"]["exitCode"] for i in (1, 2)] == [0, 0]
    assert proc.kubectl("logs", "-n", ns, "init").stdout.split() == ["step1", "step2"]


async def test_volumes(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    await create(
        pkube,
        ns,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "files"}, "data": {"a.txt": "A", "b": "B"}},
    )
    await create(
        pkube, ns, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "keys"}, "data": {"k": b64("K")}}
    )
    await create(
        pkube,
        ns,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        },
    )
    script = (
        "cat /cfg/renamed; echo; stat -L -c %a /cfg/renamed; cat /sec/k; echo; cat /info/labels; echo; "
        "df -t tmpfs /mem | tail -1 | awk '{print \"tmpfs\", $2}'; echo written > /data/out; "
        "cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo; sleep 3600"
    )
    body = pod(
        "volumes",
        script,
        container={
            "volumeMounts": [
                {"name": "cfg", "mountPath": "/cfg"},
                {"name": "sec", "mountPath": "/sec", "readOnly": True},
                {"name": "info", "mountPath": "/info"},
                {"name": "mem", "mountPath": "/mem"},
                {"name": "data", "mountPath": "/data"},
            ]
        },
    )
    body["metadata"]["labels"] = {"tier": "test"}
    body["spec"]["volumes"] = [
        {"name": "cfg", "configMap": {"name": "files", "items": [{"key": "a.txt", "path": "renamed", "mode": 0o600}]}},
        {"name": "sec", "secret": {"secretName": "keys"}},
        {"name": "info", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
    ]
    await create(pkube, ns, body)
    await wait_status(pkube, ns, "volumes", is_ready, "Ready")

    async def logged() -> list[str] | NotYet:
        lines = proc.kubectl("logs", "-n", ns, "volumes").stdout.split("\n")
        return lines if len(lines) >= 7 else NotYet(f"logs so far: {lines}")

    lines = await wait_for(logged, 60, what="the volume report")
    assert lines[:6] == ["A", "600", "K", 'tier="test"', "tmpfs 65536", ns]
    written = list((proc.root / "sandboxes" / "proc" / "volumes").glob("pvc-*/process-node-*/out"))
    assert [p.read_text() for p in written] == ["written\n"]  # the node-local directory of the provisioner's volume


async def test_probes_drive_readiness_and_restarts(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    ready_probe = {"exec": {"command": ["test", "-e", "/tmp/ready"]}, "periodSeconds": 1}
    await create(pkube, ns, pod("ready", "sleep 3600", container={"readinessProbe": ready_probe}))
    live_probe = {"tcpSocket": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 2, "initialDelaySeconds": 1}
    await create(
        pkube,
        ns,
        pod("live", "echo up; sleep 3600", terminationGracePeriodSeconds=1, container={"livenessProbe": live_probe}),
    )
    http_probe = {"httpGet": {"path": "/", "port": "web"}, "periodSeconds": 1}
    startup = {"httpGet": {"path": "/", "port": 8000}, "periodSeconds": 1, "failureThreshold": 60}
    await create(
        pkube,
        ns,
        pod(
            "http",
            "sleep 2; exec python -m http.server 8000",
            container={
                "ports": [{"name": "web", "containerPort": 8000}],
                "readinessProbe": http_probe,
                "startupProbe": startup,
            },
        ),
    )

    st = await wait_status(pkube, ns, "ready", lambda s: "running" in container(s).get("state", {}), "to run")
    assert not is_ready(st) and container(st)["ready"] is False
    touch = proc.kubectl("exec", "-n", ns, "ready", "--", "touch", "/tmp/ready")
    assert touch.returncode == 0, touch.stderr
    await wait_status(pkube, ns, "ready", is_ready, "Ready after the file appeared")

    restarted = await wait_status(pkube, ns, "live", lambda s: container(s).get("restartCount", 0) >= 1, "a restart")
    assert restarted["phase"] == "Running"
    killing = ("Killing", "Container main failed liveness probe, will be restarted")
    found = await wait_events(pkube, ns, "live", lambda found: killing in found, "the liveness probe's Killing")
    assert any(r == "Unhealthy" and m.startswith("Liveness probe failed: dial tcp") for r, m in found)

    http = await wait_status(pkube, ns, "http", is_ready, "Ready through startup and readiness HTTP probes")
    assert container(http)["started"] is True


async def test_exec_logs_and_port_forward(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    await create(
        pkube,
        ns,
        pod(
            "web",
            "echo serving; exec python -m http.server 8000",
            container={"ports": [{"containerPort": 8000}], "env": [{"name": "GREETING", "value": "hi"}]},
        ),
    )
    st = await wait_status(pkube, ns, "web", lambda s: "running" in container(s).get("state", {}), "to run")

    inside = proc.kubectl("exec", "-n", ns, "web", "--", "sh", "-c", 'echo "$(hostname) $GREETING $HOME"; pwd')
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.split() == ["web", "hi", "/home/ray", "/home/ray"]
    ip_route = proc.kubectl("exec", "-n", ns, "web", "--", "cat", "/etc/hosts")
    assert f"{st['podIP']}\tweb" in ip_route.stdout

    async with port_forward(proc, ns, "pod/web", 8000) as port:

        async def served() -> int | NotYet:
            try:
                async with httpx2.AsyncClient(trust_env=False, timeout=5) as http:
                    return (await http.get(f"http://127.0.0.1:{port}/")).status_code
            except httpx2.HTTPError as exc:
                return NotYet(str(exc))

        assert await wait_for(served, 30, what="the port-forward") == 200
    assert "serving" in proc.kubectl("logs", "-n", ns, "web").stdout


async def test_port_forward_reaches_a_port_no_container_declares(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str
) -> None:
    """As with a kubelet: ``ports`` is informational, any port listened on in the Pod can be forwarded (KubeRay's
    quickstart forwards Serve's 8000, which its samples' containers do not declare)."""
    await create(pkube, ns, pod("quiet", "exec python -m http.server 8001"))
    await wait_status(pkube, ns, "quiet", lambda s: "running" in container(s).get("state", {}), "to run")

    async def forwarded() -> int | NotYet:
        try:
            async with (
                port_forward(proc, ns, "pod/quiet", 8001) as port,
                httpx2.AsyncClient(trust_env=False, timeout=5) as http,
            ):
                return (await http.get(f"http://127.0.0.1:{port}/")).status_code
        except (httpx2.HTTPError, AssertionError) as exc:  # not listening yet, or not seen listening yet
            return NotYet(str(exc)[-300:])

    assert await wait_for(forwarded, 30, what="a port-forward to the undeclared port 8001") == 200


async def test_services_resolve_and_cluster_ips_route(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    server = pod("server", "exec python -m http.server 8000", container={"ports": [{"containerPort": 8000}]})
    server["metadata"]["labels"] = {"app": "server"}
    await create(pkube, ns, server)
    for name, cluster_ip in (("clusterip", None), ("headless", "None")):
        spec: dict[str, Any] = {"selector": {"app": "server"}, "ports": [{"port": 80, "targetPort": 8000}]}
        if cluster_ip:
            spec["clusterIP"] = cluster_ip
        await create(pkube, ns, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
    st = await wait_status(pkube, ns, "server", lambda s: "running" in container(s).get("state", {}), "to run")
    await create(pkube, ns, pod("client", "sleep 3600"))
    await wait_status(pkube, ns, "client", lambda s: "running" in container(s).get("state", {}), "to run")

    def fetch() -> str:
        script = (
            f"getent hosts headless.{ns}.svc.cluster.local; "
            "curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://clusterip/; echo; "
            "getent hosts pypi.org || echo no-outside-names"
        )
        return proc.kubectl("exec", "-n", ns, "client", "--", "bash", "-c", script).stdout

    async def routed() -> str | NotYet:
        out = fetch()
        return out if "200" in out else NotYet(out)

    out = await wait_for(routed, 60, what="the ClusterIP to answer")
    assert st["podIP"] in out  # the headless name is the ready endpoint's IP
    assert "no-outside-names" in out  # nothing resolves outside cluster.local: traffic stays on the machine


async def test_an_image_that_does_not_exist_fails_to_pull_and_backs_off(pkube: AsyncClient, ns: str) -> None:
    """As a kubelet pulling a missing image: ErrImagePull with the pull error, then ImagePullBackOff between the
    retries, with its events; under ``imagePullPolicy: Never`` ErrImageNeverPull. Such Pods are deleted as any."""
    missing, unknown_tag = "example.invalid/nothing:1", "rayproject/ray:does-not-exist"
    for name, image, policy in (
        ("missing", missing, "IfNotPresent"),
        ("unknown-tag", unknown_tag, "IfNotPresent"),
        ("never", missing, "Never"),
    ):
        await create(pkube, ns, pod(name, "true", container={"image": image, "imagePullPolicy": policy}))

    def waiting(reason: str) -> Callable[[dict[str, Any]], bool]:
        return lambda s: container(s).get("state", {}).get("waiting", {}).get("reason") == reason

    st = await wait_status(pkube, ns, "missing", waiting("ErrImagePull"), "ErrImagePull")
    pull_error = container(st)["state"]["waiting"]["message"]
    assert pull_error.startswith(f'"{missing}" not found: ') and "rayproject/ray" in pull_error
    st = await wait_status(pkube, ns, "unknown-tag", waiting("ErrImagePull"), "ErrImagePull")
    assert "names no Ray version" in container(st)["state"]["waiting"]["message"]
    never = await wait_status(pkube, ns, "never", waiting("ErrImageNeverPull"), "ErrImageNeverPull")
    assert container(never)["state"]["waiting"]["message"] == (
        f'Container image "{missing}" is not present with pull policy of Never'
    )

    # The second pull comes 10 s after the first, the back-off then holds the third back for 20 s.
    st = await wait_status(pkube, ns, "missing", waiting("ImagePullBackOff"), "ImagePullBackOff", 90)
    assert container(st)["state"]["waiting"]["message"] == (
        f'Back-off pulling image "{missing}": ErrImagePull: {pull_error}'
    )
    assert st["phase"] == "Pending" and not is_ready(st)
    assert (container(st)["ready"], container(st)["restartCount"]) == (False, 0)
    expected = {
        ("Pulling", f'Pulling image "{missing}"'),
        ("Failed", f'Failed to pull image "{missing}": {pull_error}'),
        ("Failed", "Error: ErrImagePull"),
        ("BackOff", f'Back-off pulling image "{missing}"'),
        ("Failed", "Error: ImagePullBackOff"),
    }
    await wait_events(pkube, ns, "missing", lambda found: expected <= set(found), "the pull's events")
    kinds = {
        (e.reason, e.type, e.involvedObject.fieldPath)
        async for e in pkube.list(Event, namespace=ns)
        if e.involvedObject.name == "missing"
    }
    assert {("Pulling", "Normal"), ("BackOff", "Normal"), ("Failed", "Warning")} <= {(r, t) for r, t, _ in kinds}
    assert {path for reason, _, path in kinds if reason != "Scheduled"} == {"spec.containers{main}"}
    await wait_events(
        pkube,
        ns,
        "never",
        lambda found: (
            ("ErrImageNeverPull", f'Container image "{missing}" is not present with pull policy of Never') in found
        ),
        "ErrImageNeverPull",
    )

    for name in ("missing", "unknown-tag", "never"):
        await pkube.delete(Pod, name, namespace=ns)

    async def gone() -> bool | NotYet:
        remaining = [p.metadata.name async for p in pkube.list(Pod, namespace=ns) if p.metadata]
        return True if not remaining else NotYet(f"still there: {remaining}")

    await wait_for(gone, 60, what="the Pods to be deleted")


async def test_graceful_termination(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    marker = proc.root / f"term-{ns}"
    volume = [{"name": "out", "hostPath": {"path": str(marker.parent)}}]
    mount = [{"name": "out", "mountPath": "/out"}]
    polite = f"trap 'echo got-SIGTERM > /out/{marker.name}; exit 0' TERM; echo started; while true; do sleep 0.1; done"
    await create(pkube, ns, pod("polite", polite, volumes=volume, container={"volumeMounts": mount}))
    stubborn = "trap '' TERM; while true; do sleep 0.1; done"
    await create(pkube, ns, pod("stubborn", stubborn, terminationGracePeriodSeconds=2))
    for name in ("polite", "stubborn"):
        await wait_status(pkube, ns, name, lambda s: "running" in container(s).get("state", {}), "to run")

    await pkube.delete(Pod, "polite", namespace=ns)
    await pkube.delete(Pod, "stubborn", namespace=ns)

    async def gone() -> bool | NotYet:
        remaining = [p.metadata.name async for p in pkube.list(Pod, namespace=ns) if p.metadata]
        return True if not remaining else NotYet(f"still there: {remaining}")

    await wait_for(gone, 60, what="both Pods to be deleted")
    assert marker.read_text() == "got-SIGTERM\n"
    marker.unlink()


async def test_a_deleted_pods_last_status_says_how_its_containers_ended(pkube: AsyncClient, ns: str) -> None:
    """What a controller reads of a Pod deleted while it ran, its finalizer keeping the object (as the Job
    controller's does): a terminal phase, and each container's exit code, reason and times."""
    body = pod("stopped", "trap 'exit 0' TERM; while true; do sleep 0.1; done", terminationGracePeriodSeconds=2)
    stubborn = "trap '' TERM; while true; do sleep 0.1; done"  # needs the SIGKILL at the end of the grace period
    body["spec"]["containers"].append({"name": "stubborn", "image": IMAGE, "command": ["bash", "-c", stubborn]})
    body["metadata"]["finalizers"] = ["raykube.io/test-keeps-it"]
    await create(pkube, ns, body)
    await wait_status(
        pkube,
        ns,
        "stopped",
        lambda s: all("running" in c.get("state", {}) for c in s.get("containerStatuses") or [{}]),
        "both containers to run",
    )

    await pkube.delete(Pod, "stopped", namespace=ns)
    st = await wait_status(pkube, ns, "stopped", lambda s: s.get("phase") == "Failed", "a terminal phase")

    polite, killed = (container(st, name)["state"]["terminated"] for name in ("main", "stubborn"))
    assert (polite["exitCode"], polite["reason"]) == (0, "Completed")
    assert (killed["exitCode"], killed["reason"]) == (137, "Error")
    for terminated in (polite, killed):
        assert terminated["startedAt"] <= terminated["finishedAt"] and "signal" not in terminated
    conditions = conditions_of(st)
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "PodFailed")
    assert "DisruptionTarget" not in conditions

    await pkube.patch(Pod, "stopped", {"metadata": {"finalizers": None}}, namespace=ns, patch_type=PatchType.MERGE)

    async def gone() -> bool | NotYet:
        remaining = [p.metadata.name async for p in pkube.list(Pod, namespace=ns) if p.metadata]
        return True if not remaining else NotYet(f"still there: {remaining}")

    await wait_for(gone, 30, what="the Pod to go once its finalizer is removed")


async def test_a_pod_deleted_during_an_init_container_stops(pkube: AsyncClient, ns: str) -> None:
    """The kubelet kills a running init container when its Pod is deleted; it does not wait for it to end (KubeRay's
    wait-for-GCS init container loops until the head answers, so a worker deleted before that would never go)."""
    body = pod("initwait", "sleep 3600", terminationGracePeriodSeconds=1)
    body["spec"]["initContainers"] = [
        {"name": "wait", "image": IMAGE, "command": ["bash", "-c", "until false; do sleep 1; done"]}
    ]
    await create(pkube, ns, body)
    await wait_status(
        pkube,
        ns,
        "initwait",
        lambda s: "running" in container(s, "wait", init=True).get("state", {}),
        "its init container to run",
    )

    await pkube.delete(Pod, "initwait", namespace=ns)

    async def gone() -> bool | NotYet:
        remaining = [p.metadata.name async for p in pkube.list(Pod, namespace=ns) if p.metadata]
        return True if not remaining else NotYet(f"still there: {remaining}")

    await wait_for(gone, 60, what="the Pod to be deleted")


# ------------------------------------------------------------------------------------------------- Jobs
# What KubeRay gives its submitter container by default.
JOB_RESOURCES = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}}


def job(name: str, script: str, backoff_limit: int = 0, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A ``batch/v1`` Job shaped as KubeRay's RayJob submitter: one container, ``/bin/bash -ce -- SCRIPT`` in the
    Ray image, ``restartPolicy: Never``."""
    submitter = {
        "name": "ray-job-submitter",
        "image": IMAGE,
        "command": ["/bin/bash", "-ce", "--"],
        "args": [script],
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
        "resources": JOB_RESOURCES,
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {"spec": {"restartPolicy": "Never", "containers": [submitter]}},
        },
    }


async def job_status(pkube: AsyncClient, namespace: str, name: str) -> dict[str, Any]:
    return dict((await pkube.get(Job, name, namespace=namespace)).to_dict().get("status") or {})


async def wait_job(pkube: AsyncClient, namespace: str, name: str, condition: str, seconds: float) -> dict[str, Any]:
    """The Job's status once it has ``condition`` (Complete, Failed) True."""

    async def predicate() -> dict[str, Any] | NotYet:
        st = await job_status(pkube, namespace, name)
        found = {c["type"]: c for c in st.get("conditions") or [] if c.get("status") == "True"}
        return st if condition in found else NotYet(json.dumps(st)[:600])

    result: dict[str, Any] = await wait_for(predicate, seconds, what=f"Job {namespace}/{name} to be {condition}")
    return result


async def job_pods(pkube: AsyncClient, namespace: str, name: str) -> list[dict[str, Any]]:
    pods = [p.to_dict() async for p in pkube.list(Pod, namespace=namespace, labels={"job-name": name})]
    return sorted(pods, key=lambda p: str(p["metadata"]["creationTimestamp"]))


async def test_a_jobs_pod_runs_to_completion(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    script = 'echo "bash=$BASH_VERSION"; command -v ray; ray --version'
    await create(pkube, ns, job("done", script))

    done = await wait_job(pkube, ns, "done", "Complete", START)

    assert (done.get("succeeded"), done.get("failed", 0)) == (1, 0)
    [finished] = await job_pods(pkube, ns, "done")
    st = finished["status"]
    assert st["phase"] == "Succeeded" and st["startTime"]
    terminated = container(st, "ray-job-submitter")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert terminated["startedAt"] <= terminated["finishedAt"]
    conditions = conditions_of(st)
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "PodCompleted")
    assert (conditions["Initialized"]["status"], conditions["Initialized"]["reason"]) == ("True", "PodCompleted")
    assert conditions["PodReadyToStartContainers"]["status"] == "False"  # its sandbox is gone
    assert "DisruptionTarget" not in conditions
    logs = proc.kubectl("logs", "-n", ns, finished["metadata"]["name"]).stdout
    assert "bash=5" in logs and "/bin/ray" in logs and "ray, version 2.52.0" in logs


async def test_a_failing_jobs_pods_are_replaced_up_to_the_backoff_limit(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str
) -> None:
    await create(pkube, ns, job("fails", "echo failing >&2; exit 1", backoff_limit=1))

    # The Job controller waits 10 s before it replaces a failed Pod (then 20 s: one retry keeps the test short).
    failed = await wait_job(pkube, ns, "fails", "Failed", START + 40)

    assert conditions_of(failed)["Failed"]["reason"] == "BackoffLimitExceeded"
    assert (failed.get("failed"), failed.get("succeeded", 0), failed.get("active", 0)) == (2, 0, 0)
    pods = await job_pods(pkube, ns, "fails")
    assert len(pods) == 2
    for failed_pod in pods:
        st = failed_pod["status"]
        assert st["phase"] == "Failed" and st["startTime"]
        terminated = container(st, "ray-job-submitter")["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (1, "Error")
        assert terminated["finishedAt"]
        assert container(st, "ray-job-submitter")["restartCount"] == 0
        conditions = conditions_of(st)
        assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "PodFailed")
        assert "DisruptionTarget" not in conditions  # a failure of its own, not an eviction
        assert "failing" in proc.kubectl("logs", "-n", ns, failed_pod["metadata"]["name"]).stdout
    # Each replacement came after its predecessor finished (the Job controller's back-off follows finishedAt).
    finished = [container(p["status"], "ray-job-submitter")["state"]["terminated"]["finishedAt"] for p in pods]
    created = [p["metadata"]["creationTimestamp"] for p in pods]
    assert finished[0] <= created[1]


# ------------------------------------------------------------------------------------------------- real Ray
RAYCLUSTER = create_namespaced_resource("ray.io", "v1", "RayCluster", "rayclusters")


def moved(name: str, namespace: str) -> list[dict[str, Any]]:
    """The documents of ``examples/<name>`` in ``namespace``: the Secret's endpoint and a RoleBinding's subjects too."""
    documents = []
    for doc in yaml.safe_load_all((EXAMPLES / name).read_text()):
        if not doc:
            continue
        doc["metadata"]["namespace"] = namespace
        if doc["kind"] == "Secret" and "AWS_ENDPOINT_URL" in doc.get("stringData", {}):
            doc["stringData"]["AWS_ENDPOINT_URL"] = f"http://minio.{namespace}.svc.cluster.local:9000"
        for subject in doc.get("subjects") or []:
            subject["namespace"] = namespace
        documents.append(doc)
    return documents


def seed(namespace: str) -> list[dict[str, Any]]:
    """The chapter's Secret, ConfigMap, PVC, object store and RayCluster (examples/01..04), moved to ``namespace``:
    the Secret names the object store in ``namespace``, which exists, so nothing in the seed is a fault."""
    return [doc for path in sorted(EXAMPLES.glob("0[1-4]*-*.yaml")) for doc in moved(path.name, namespace)]


async def apply_all(pkube: AsyncClient, namespace: str, documents: list[dict[str, Any]]) -> None:
    for doc in documents:
        if doc["kind"] == "RayCluster":
            await pkube.create(RAYCLUSTER.from_dict(doc), namespace=namespace)
        else:
            await create(pkube, namespace, doc)


async def raycluster(pkube: AsyncClient, namespace: str, name: str) -> dict[str, Any]:
    got = await pkube.get(RAYCLUSTER, name, namespace=namespace)
    return dict(got.to_dict())


async def wait_cluster(
    pkube: AsyncClient, namespace: str, name: str, check: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    async def predicate() -> dict[str, Any] | NotYet:
        status = (await raycluster(pkube, namespace, name)).get("status") or {}
        return status if check(status) else NotYet(json.dumps(status)[:800])

    result: dict[str, Any] = await wait_for(predicate, RAY_READY, what=f"RayCluster {namespace}/{name}: {what}")
    return result


async def pod_of(pkube: AsyncClient, namespace: str, node_type: str) -> str:
    async def found() -> str | NotYet:
        names = [
            p.metadata.name
            async for p in pkube.list(Pod, namespace=namespace, labels={"ray.io/node-type": node_type})
            if p.metadata and p.metadata.name
        ]
        return names[0] if names else NotYet(f"no {node_type} Pod yet")

    name: str = await wait_for(found, 60, what=f"a {node_type} Pod")
    return name


def ray_nodes(status_output: str) -> int:
    """The nodes ``ray status`` lists as active or idle (autoscaler v2 groups them: `` 2 workers``)."""
    section = status_output.split("Node status", 1)[-1].split("Pending:", 1)[0]
    return sum(int(m[1]) for m in re.finditer(r"^\s*(\d+) \S+\s*$", section, re.MULTILINE))


def submitter_script(address: str, submission_id: str, entrypoint: str) -> str:
    """The script of KubeRay's RayJob submitter (K8sJobMode): wait for the dashboard's GCS health, submit unless
    submitted already, then follow the job's logs."""
    health = f"python3 -c \"import urllib.request; urllib.request.urlopen('{address}/api/gcs_healthz', timeout=10)\""
    return (
        f"until {health} >/dev/null 2>&1 ; "
        f'do echo "Waiting for Ray Dashboard GCS to become healthy at {address} ..." ; sleep 2 ; done ; '
        f"if ! ray job status --address {address} {submission_id} >/dev/null 2>&1 ; "
        f"then ray job submit --address {address} --no-wait --submission-id {submission_id} -- {entrypoint} ; fi ; "
        f"ray job logs --address {address} --follow {submission_id}"
    )


async def a_submitter_job_runs_a_ray_job(proc: ProcessSandbox, pkube: AsyncClient, ns: str) -> None:
    """A Job shaped as KubeRay's RayJob submitter (K8sJobMode) submits a Ray job to the ready seed cluster through
    its head Service's DNS name; the driver sees the whole cluster and the dashboard reports the job SUCCEEDED."""
    address = f"http://raycluster-demo-head-svc.{ns}.svc.cluster.local:8265"
    submission_id = f"rayjob-{uuid.uuid4().hex[:8]}"
    entrypoint = 'python -c "import ray; ray.init(); print(ray.cluster_resources())"'
    env = {"RAY_DASHBOARD_ADDRESS": address.removeprefix("http://"), "RAY_JOB_SUBMISSION_ID": submission_id}
    await create(pkube, ns, job("submitter", submitter_script(address, submission_id, entrypoint), env=env))

    await wait_job(pkube, ns, "submitter", "Complete", RAY_READY)

    [submitter] = await job_pods(pkube, ns, "submitter")
    logs = proc.kubectl("logs", "-n", ns, submitter["metadata"]["name"]).stdout
    assert re.search(r"'CPU': 3\.0", logs), logs[-2000:]  # the driver saw the whole cluster
    async with port_forward(proc, ns, "svc/raycluster-demo-head-svc", 8265) as port:

        async def job_info() -> dict[str, Any] | NotYet:  # what Ray's JobSubmissionClient.get_job_info reads
            try:
                async with httpx2.AsyncClient(trust_env=False, timeout=10) as http:
                    return dict((await http.get(f"http://127.0.0.1:{port}/api/jobs/{submission_id}")).json())
            except (httpx2.HTTPError, ValueError) as exc:
                return NotYet(str(exc))

        details = await wait_for(job_info, 60, what="the job's details from the dashboard")
    assert (details["status"], details["entrypoint"]) == ("SUCCEEDED", entrypoint), details


def small_cluster(name: str, **worker: Any) -> dict[str, Any]:
    """A 1 head + 1 worker RayCluster small enough to sit beside others (1 CPU, 1Gi each, no PVC)."""
    resources = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}

    def template(container: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": container, "image": IMAGE, "resources": resources}]}}

    group = {"groupName": "workers", "replicas": 1, "minReplicas": 0, "maxReplicas": 2, "rayStartParams": {}}
    group.update(worker)
    group["template"] = template("ray-worker")
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
            "workerGroupSpecs": [group],
        },
    }


async def test_a_missing_secret_in_env_from_stops_the_head(pkube: AsyncClient, ns: str, proc_operator: Manager) -> None:
    body = small_cluster("nosecret")
    body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["envFrom"] = [
        {"secretRef": {"name": "minio-credentials"}}
    ]
    await apply_all(pkube, ns, [body])
    head = await pod_of(pkube, ns, "head")
    st = await wait_status(
        pkube,
        ns,
        head,
        lambda s: (
            container(s, "ray-head").get("state", {}).get("waiting", {}).get("reason") == "CreateContainerConfigError"
        ),
        "CreateContainerConfigError",
    )
    assert container(st, "ray-head")["state"]["waiting"]["message"] == 'secret "minio-credentials" not found'
    status = await wait_cluster(
        pkube,
        ns,
        "nosecret",
        lambda s: any(c.get("reason") == "CreateContainerConfigError" for c in s.get("conditions") or []),
        "HeadPodReady to carry the head's waiting reason",
    )
    assert status.get("state") != "ready"


async def test_a_worker_with_a_wrong_gcs_address_never_joins(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    wrong = f"wrongaddr-head-svc.{ns}.svc.cluster.local:6390"  # the head's name, but no GCS on that port
    body = small_cluster("wrongaddr", rayStartParams={"address": wrong})
    await apply_all(pkube, ns, [body])
    worker = await pod_of(pkube, ns, "worker")

    async def says_so() -> str | NotYet:
        logs = proc.kubectl("logs", "-n", ns, worker, "-c", "ray-worker").stdout
        return logs if "Failed to connect to GCS" in logs or "Unable to connect to GCS" in logs else NotYet(logs[-400:])

    logs = await wait_for(says_so, RAY_READY, what="the worker's logs to say it cannot reach the GCS")
    assert ":6390" in logs
    st = await status(pkube, ns, worker)
    assert not is_ready(st)
    cluster = (await raycluster(pkube, ns, "wrongaddr")).get("status") or {}
    assert cluster.get("readyWorkerReplicas", 0) == 0
    assert cluster.get("state") != "ready"


# How Ray starts each of a node's processes with its address (ray/_private/services.py, Ray 2.52): the raylet with
# --node_ip_address=IP, the GCS with --node-ip-address=IP.
_ADDRESS_FLAG = {"raylet": "--node_ip_address", "gcs_server": "--node-ip-address"}


def ray_process_of(pod_ip: str, program: str = "raylet") -> int:
    """The PID of the Ray ``program`` (raylet, gcs_server) that serves ``pod_ip``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(f"/{program}".encode()) and f"{_ADDRESS_FLAG[program]}={pod_ip}".encode() in argv:
            found.append(int(entry.name))
    assert len(found) == 1, f"{program} processes of {pod_ip}: {found}"
    return found[0]


def raylet_of(pod_ip: str) -> int:
    return ray_process_of(pod_ip, "raylet")


@contextlib.asynccontextmanager
async def head_pod_ready_history(pkube: AsyncClient, namespace: str, name: str) -> AsyncIterator[list[str]]:
    """Every HeadPodReady status the RayCluster's watch shows while the block runs, in order, repeats folded."""
    seen: list[str] = []

    async def follow() -> None:
        async for _, obj in pkube.watch(RAYCLUSTER, namespace=namespace, fields={"metadata.name": name}):
            conditions = (obj.to_dict().get("status") or {}).get("conditions") or []
            now = next((c["status"] for c in conditions if c["type"] == "HeadPodReady"), "absent")
            if not seen or seen[-1] != now:
                seen.append(now)

    task = asyncio.create_task(follow())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _liveness_cluster(pkube: AsyncClient, ns: str) -> str:
    """A head-only RayCluster with KubeRay's own liveness probe for this Ray version, made to give up after 3
    failures 2 s apart instead of 120 failures 5 s apart; the readiness probe stays KubeRay's. A short grace: bash as
    PID 1 ignores SIGTERM. Returns the head Pod's name once the cluster is ready."""
    body = small_cluster("liveness", replicas=0)
    head_spec = body["spec"]["headGroupSpec"]["template"]["spec"]
    head_container = head_spec["containers"][0]
    inject_probes(head_container, head=True, from_rayservice=False, params={}, ray_version="2.52.0")
    del head_container["readinessProbe"]
    head_container["livenessProbe"].update(periodSeconds=2, failureThreshold=3)
    head_spec["terminationGracePeriodSeconds"] = 5
    # Unbuffered, as a user sets it to read ray start's last words: it leaves through os._exit, and without this its
    # "Some Ray subprocesses exited unexpectedly" stays in Python's stdout buffer (docs/doctor.md, D03).
    head_container.setdefault("env", []).append({"name": "PYTHONUNBUFFERED", "value": "1"})
    await apply_all(pkube, ns, [body])
    await wait_cluster(pkube, ns, "liveness", lambda s: s.get("state") == "ready", "ready")
    return await pod_of(pkube, ns, "head")


def _restarted(times: int) -> Callable[[dict[str, Any]], bool]:
    return lambda s: container(s, "ray-head").get("restartCount", 0) >= times and is_ready(s)


def _went_down_and_up(seen: list[str]) -> Callable[[], Any]:
    async def check() -> list[str] | NotYet:
        return seen if seen[-2:] == ["False", "True"] else NotYet(f"HeadPodReady so far: {seen}")

    return check


@pytest.mark.reliability("Process nodes: the head's raylet hangs (SIGSTOP)")
# full_only in tests/ledger.py: deselected in the short profile (the killed raylet below runs in both)
async def test_a_hung_raylet_is_caught_by_the_liveness_probe_and_the_head_restarts(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager, ledger: Ledger
) -> None:
    head = await _liveness_cluster(pkube, ns)
    started = time.monotonic()
    # A hung raylet: the process lives, so only the liveness probe can notice.
    async with head_pod_ready_history(pkube, ns, "liveness") as seen:
        os.kill(raylet_of((await status(pkube, ns, head))["podIP"]), signal.SIGSTOP)
        st = await wait_status(pkube, ns, head, _restarted(1), "a restart after the liveness probe failed", RAY_READY)
        await wait_for(_went_down_and_up(seen), 60, what="HeadPodReady to go False, then True again")
    killing = ("Killing", "Container ray-head failed liveness probe, will be restarted")
    await wait_events(pkube, ns, head, lambda found: killing in found, "the liveness probe's Killing")
    assert container(st, "ray-head")["lastState"]["terminated"]["exitCode"] != 0  # ray start, stopped by SIGTERM
    ledger.record(
        "Process nodes: the head's raylet hangs (SIGSTOP)",
        "SIGSTOP to the raylet of a real Ray head (liveness probe KubeRay's, 3 x 2 s)",
        1,
        "the liveness probe fails, the kubelet kills and restarts ray-head (Killing event), HeadPodReady goes False "
        "then True, the RayCluster is ready again",
        f"restarted and Ready again after {time.monotonic() - started:.0f} s",
    )


@pytest.mark.reliability("Process nodes: the head's raylet is killed (SIGKILL)")
async def test_a_killed_raylet_ends_ray_start_and_the_head_restarts(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager, ledger: Ledger
) -> None:
    head = await _liveness_cluster(pkube, ns)
    started = time.monotonic()
    # A killed raylet: `ray start --block` sees its child die and exits, and restartPolicy Always restarts it.
    async with head_pod_ready_history(pkube, ns, "liveness") as seen:
        os.kill(raylet_of((await status(pkube, ns, head))["podIP"]), signal.SIGKILL)
        st = await wait_status(pkube, ns, head, _restarted(1), "a restart after the raylet died", RAY_READY)
        await wait_for(_went_down_and_up(seen), 60, what="HeadPodReady to go False, then True again")
    last = container(st, "ray-head")["lastState"]["terminated"]
    assert last["exitCode"] != 0 and last["reason"] == "Error"
    # The previous run's log: it had started Ray. On a loaded machine the liveness probe may also have ended a run
    # that was still starting, so only ray start's first line is certain.
    assert "Local node IP" in proc.kubectl("logs", "-n", ns, head, "--previous").stdout
    cluster = await wait_cluster(pkube, ns, "liveness", lambda s: s.get("state") == "ready", "ready again")
    assert {c["type"]: c["status"] for c in cluster["conditions"]}["HeadPodReady"] == "True"
    # Ready again, and yet a new Ray cluster: the doctor says the head restarted and what went with it (D09); a dead
    # raylet is not a failed GCS (D03's near miss).
    _, report = proc.doctor(ns, "raycluster/liveness", "--starting-grace", "0")
    assert_fires(report, "D09")
    assert_quiet(report, "D03")
    [restarted] = [f for f in report["findings"] if f["rule"] == "D09"]
    # 1 restart, or more when the liveness probe also ended runs that were still starting (loaded CI runs met 2 and 3)
    assert re.match(r"The head's Ray container restarted \d+ times? \(last exit ", restarted["title"]), restarted
    assert restarted["title"].endswith("its jobs, actors and placement groups were lost"), restarted["title"]
    await _a_killed_gcs_is_named_as_the_root_cause(proc, pkube, ns, head)
    ledger.record(
        "Process nodes: the head's raylet is killed (SIGKILL)",
        "SIGKILL to the raylet of a real Ray head",
        1,
        "ray start exits (Error), restartPolicy restarts ray-head, HeadPodReady goes False then True, the previous "
        "run's log is there, the RayCluster is ready again",
        f"restarted and Ready again after {time.monotonic() - started:.0f} s",
    )


async def _a_killed_gcs_is_named_as_the_root_cause(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, head: str
) -> None:
    """The GCS SIGKILLed, as the kernel's OOM killer ends the biggest process of a head out of memory (issue 45's
    catalogue, ray-project/ray#44704, ray-project/ray#36651): ray start --block lists it among the subprocesses that
    exited unexpectedly and ends the container; the doctor names D03 as the root cause, quoting that line from the
    previous run's log and saying SIGKILL, with the head's restart (D09) under it."""
    now = await status(pkube, ns, head)  # the restarts so far read now: the doctor's minutes above may have had one
    os.kill(ray_process_of(now["podIP"], "gcs_server"), signal.SIGKILL)
    restarts = container(now, "ray-head")["restartCount"]
    await wait_status(pkube, ns, head, _restarted(restarts + 1), "a restart after the GCS was killed", RAY_READY)
    previous = proc.kubectl("logs", "-n", ns, head, "--previous").stdout
    assert re.search(r"gcs_server\S* \[exit code=-9\]", re.sub(r"\x1b\[[0-9;]*m", "", previous)), previous[-1500:]
    _, report = proc.doctor(ns, "raycluster/liveness", "--starting-grace", "0")
    gcs = [f for f in report["findings"] if f["rule"] == "D03"]
    assert_fires(gcs, "D03", context=str([(f["rule"], f["title"], f.get("causedBy")) for f in report["findings"]]))
    [failed] = gcs
    assert not failed.get("causedBy"), failed
    assert failed["title"].startswith("The GCS on the head was killed (SIGKILL"), failed["title"]
    assert any("gcs_server [exit code=-9]" in str(e.get("value")) for e in failed["evidence"]), failed["evidence"]
    [restarted] = [f for f in report["findings"] if f["rule"] == "D09"]
    assert failed["id"] in (restarted.get("causedBy") or []), (restarted, failed["id"])


# full_only in tests/ledger.py: deselected in the short profile (two real-Ray restarts take minutes)
@pytest.mark.reliability("Process nodes: a worker Pod, then the head Pod, deleted")
async def test_deleted_ray_pods_are_made_again_and_ray_gets_its_nodes_back(
    proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager, ledger: Ledger
) -> None:
    """KubeRay's behaviour when Pods of a running cluster are deleted: a worker Pod is made again and its node joins;
    a deleted head Pod is made again (no GCS fault tolerance: a new Ray cluster), and the old workers' raylets, which
    cannot join a GCS of another cluster, end; their containers restart and join the new head."""
    await apply_all(pkube, ns, seed(ns))
    await wait_cluster(pkube, ns, "raycluster-demo", lambda s: s.get("state") == "ready", "ready")

    async def three_nodes() -> str | NotYet:
        head = await pod_of(pkube, ns, "head")
        out = proc.kubectl("exec", "-n", ns, head, "--", "ray", "status").stdout
        return head if ray_nodes(out) == 3 else NotYet(out[-400:])

    first_head = await wait_for(three_nodes, 120, what="3 Ray nodes")
    outcomes = []
    for node_type in ("worker", "head"):
        victim = await pod_of(pkube, ns, node_type)
        started = time.monotonic()
        await pkube.delete(Pod, victim, namespace=ns)

        async def replaced(victim: str = victim, node_type: str = node_type) -> bool | NotYet:
            labels = {"ray.io/node-type": node_type}
            names = [p.metadata.name async for p in pkube.list(Pod, namespace=ns, labels=labels)
                     if p.metadata and not p.metadata.deletionTimestamp]  # fmt: skip
            wanted = 2 if node_type == "worker" else 1
            return True if len(names) == wanted and victim not in names else NotYet(f"{names}")

        await wait_for(replaced, 60, what=f"the {node_type} Pod made again")
        head = await wait_for(three_nodes, 300, what=f"3 Ray nodes after the {node_type} Pod was deleted")
        status = await wait_cluster(
            pkube, ns, "raycluster-demo", lambda s: s.get("state") == "ready" and s.get("readyWorkerReplicas") == 2,
            "ready with 2 workers",
        )  # fmt: skip
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions["HeadPodReady"] == "True" and conditions["RayClusterProvisioned"] == "True"
        if node_type == "head":
            assert head != first_head
        seconds = time.monotonic() - started
        outcomes.append(f"{node_type} Pod deleted: made again, Ray back to 3 nodes in {seconds:.0f}s")
    ledger.record(
        "Process nodes: a worker Pod, then the head Pod, deleted",
        "the chapter's RayCluster (1 head + 2 workers) on real Ray, ready; a worker Pod deleted, then the head Pod",
        2,
        "each Pod made again by the operator; `ray status` on the head lists 3 nodes again (after the head: the old "
        "workers restart and join the new head); the RayCluster ready with HeadPodReady and RayClusterProvisioned True",
        "; ".join(outcomes),
    )

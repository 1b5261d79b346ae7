"""`raykube sandbox up|down|status|env` on real processes: loopback only, idempotent, clear errors, careful stops."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import AsyncClient
from lightkube.codecs import from_dict
from lightkube.resources.core_v1 import ConfigMap

from raykube.sandbox import Binaries, ComponentFailed, NodePool, Ports, Sandbox, SandboxConfig
from raykube.sandbox import process as sandbox_process
from tests.support import RunningSandbox, raykube


def test_no_listener_of_the_sandbox_is_outside_loopback(sandbox: RunningSandbox) -> None:
    status = sandbox.sandbox.status()
    pids = {c.pid: c.component for c in status.components}
    lines = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout.splitlines()
    seen: dict[str, list[str]] = {}
    for line in lines:
        for pid in map(int, re.findall(r"pid=(\d+)", line)):
            if pid in pids:
                seen.setdefault(pids[pid], []).append(line.split()[3])
    # Every component but the provisioner serves something; each must be seen, and only on 127.0.0.1.
    assert set(seen) == set(pids.values()) - {"provisioner"}, lines
    for component, addresses in seen.items():
        for address in addresses:
            assert address.startswith("127.0.0.1:"), f"{component} listens on {address}"


async def test_up_on_a_running_sandbox_reports_it_and_changes_nothing(
    sandbox: RunningSandbox, kube: AsyncClient
) -> None:
    marker = f"marker-{os.getpid()}"
    await kube.create(
        from_dict({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": marker}}), namespace="default"
    )
    before = sandbox.sandbox.status()

    result = raykube("sandbox", "up", "--name", sandbox.sandbox.name, state_root=sandbox.state_root)

    assert result.returncode == 0, result.stderr
    assert "already up; nothing changed" in result.stderr
    assert result.stdout.strip() == str(sandbox.kubeconfig)
    after = sandbox.sandbox.status()
    assert [(c.component, c.pid, c.running) for c in after.components] == [
        (c.component, c.pid, c.running) for c in before.components
    ]
    assert (await kube.get(ConfigMap, marker, namespace="default")).metadata is not None  # etcd was not reset
    await kube.delete(ConfigMap, marker, namespace="default")


def test_status_and_env_describe_the_running_sandbox(sandbox: RunningSandbox) -> None:
    status = raykube("sandbox", "status", "--name", sandbox.sandbox.name, "-o", "json", state_root=sandbox.state_root)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    assert report["up"] is True
    assert {c["component"] for c in report["components"]} == {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "provisioner",
    }
    assert all(c["running"] for c in report["components"])

    text = raykube("sandbox", "status", "--name", sandbox.sandbox.name, state_root=sandbox.state_root)
    assert text.returncode == 0
    assert "kube-apiserver" in text.stdout and "running" in text.stdout

    env = raykube("sandbox", "env", "--name", sandbox.sandbox.name, state_root=sandbox.state_root)
    assert f"export KUBECONFIG={sandbox.kubeconfig}" in env.stdout
    path_line = next(line for line in env.stdout.splitlines() if line.startswith("export PATH="))
    kubectl = Path(path_line.removeprefix("export PATH=").split(":")[0]) / "kubectl"
    nodes = subprocess.run(
        [str(kubectl), "get", "nodes", "-o", "name"],
        env={**os.environ, "KUBECONFIG": str(sandbox.kubeconfig)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert "node/kwok-node-0" in nodes.stdout


@pytest.fixture
def held_port() -> Iterator[tuple[int, int]]:
    """A port base whose seven ports are free, with the API server's port (base + 3) held by this process."""
    base = Ports.free().etcd
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", base + 3))
        holder.listen()
        yield base, base + 3


def test_a_second_build_finds_everything_cached_and_says_so(tmp_path: Path) -> None:
    result = raykube("sandbox", "build", state_root=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "sandbox binaries are built" in result.stderr, result.stderr
    assert "CRDs and samples are in" in result.stderr, result.stderr  # the tests' reference, fetched by then
    assert result.stderr.count("nothing to do") == 2, result.stderr


def test_a_busy_port_is_named_with_the_process_holding_it(tmp_path: Path, held_port: tuple[int, int]) -> None:
    base, port = held_port
    result = raykube("sandbox", "up", "--name", "busy", "--port-base", str(base), state_root=tmp_path)

    assert result.returncode == 1
    assert f"port 127.0.0.1:{port} (for apiserver) is already in use by pid {os.getpid()}" in result.stderr
    assert "--port-base" in result.stderr
    assert Sandbox.named("busy", tmp_path).load_state() is None  # nothing was started


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--node-memory", "lots"], "--node-memory must be a Kubernetes quantity"),
        (["--kwok-nodes", "1"], "--kwok-nodes (1) needs --runtime process"),
        (["--gateway"], "--gateway needs --runtime process"),
        (["--runtime", "docker"], "--runtime must be one of kwok, process"),
    ],
)
def test_bad_options_are_refused_naming_the_option(tmp_path: Path, options: list[str], message: str) -> None:
    result = raykube("sandbox", "up", "--name", "bad", *options, state_root=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "sandboxes" / "bad").exists()


async def test_a_component_that_dies_during_start_shows_its_log_and_nothing_is_left_running(tmp_path: Path) -> None:
    sandbox = Sandbox.named("dies", tmp_path)
    config = SandboxConfig(
        name="dies", ports=Ports.free(), nodes=NodePool(count=1), extra_args={"kube-apiserver": ("--no-such-flag",)}
    )

    with pytest.raises(ComponentFailed) as caught:
        await sandbox.up(config)

    message = str(caught.value)
    assert "kube-apiserver exited while the sandbox was starting" in message
    assert "unknown flag: --no-such-flag" in message  # the tail of its log
    state = sandbox.load_state()
    assert state is not None
    assert [p.component for p in state.processes] == ["etcd", "kube-apiserver"]
    assert not any(sandbox_process.is_running(p) for p in state.processes)
    await sandbox.down()
    assert not sandbox.layout.root.exists()


async def test_down_stops_only_the_processes_it_started(tmp_path: Path) -> None:
    sandbox = Sandbox.named("stops", tmp_path)
    await sandbox.up(SandboxConfig(name="stops", ports=Ports.free(), nodes=NodePool(count=1)))
    state = sandbox.load_state()
    assert state is not None
    records = {p.component: p for p in state.processes}
    # An unrelated process now has the PID recorded for kwok: down must leave it alone.
    bystander = subprocess.Popen(["sleep", "300"])  # noqa: ASYNC220 - a plain child is the point
    real_kwok = records["kwok"]
    try:
        data = json.loads(sandbox.layout.state_file.read_text())
        for entry in data["processes"]:
            if entry["component"] == "kwok":
                entry["pid"] = bystander.pid
        sandbox.layout.state_file.write_text(json.dumps(data))
        said: list[str] = []

        stopped = await sandbox.down(said.append)

        assert bystander.poll() is None, "down killed a process it did not start"
        assert f"pid {bystander.pid} no longer runs kwok; left it alone" in said
        assert set(stopped) == set(records) - {"kwok"}
        assert not any(sandbox_process.is_running(r) for c, r in records.items() if c != "kwok")
        assert not sandbox.layout.root.exists()
    finally:
        bystander.kill()
        bystander.wait()
        await sandbox_process.terminate(real_kwok)


async def test_sa_kubeconfig_authenticates_as_the_service_account(
    sandbox: RunningSandbox, kube: AsyncClient, namespace: str
) -> None:
    await kube.create(
        from_dict({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}), namespace=namespace
    )
    result = raykube("sandbox", "sa-kubeconfig", f"{namespace}/robot", "--name", sandbox.sandbox.name,
                     state_root=sandbox.state_root)  # fmt: skip
    assert result.returncode == 0, result.stderr
    path = Path(result.stdout.strip())
    whoami = subprocess.run(
        [str(Binaries.from_cache().kubectl), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"],
        env={**os.environ, "KUBECONFIG": str(path)}, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert whoami == f"system:serviceaccount:{namespace}:robot"

    missing = raykube("sandbox", "sa-kubeconfig", f"{namespace}/nobody", "--name", sandbox.sandbox.name,
                      state_root=sandbox.state_root)  # fmt: skip
    assert missing.returncode == 1
    assert "nobody" in missing.stderr

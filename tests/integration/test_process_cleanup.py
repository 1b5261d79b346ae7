"""`raykube sandbox down` on process nodes leaves nothing behind: no namespace, link, mount or process.

A sandbox of its own (one process node), with Pods that leave work to clean up: a process tree, a container that
ignores SIGTERM, a ``medium: Memory`` emptyDir. Skipped, with the reason, where the machine cannot host process
nodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from lightkube import AsyncClient, KubeConfig
from lightkube.codecs import from_dict
from lightkube.resources.core_v1 import Pod

from raykube.sandbox import NodePool, Ports, Sandbox, SandboxConfig
from raykube.sandbox.kubelet import network, nstools
from raykube.waiting import NotYet, wait_for

IMAGE = "rayproject/ray:2.52.0"


def pod(name: str, command: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "main", "image": IMAGE, "command": ["bash", "-c", command], **spec.pop("container", {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container], **spec}}


def recorded(kubelet: Path) -> list[tuple[int, int]]:
    """Every process the runtime recorded (Pod sandboxes, container monitors, containers' PID 1)."""
    found = []
    for path in [*kubelet.rglob("pause.json"), *kubelet.rglob("started.json"), *kubelet.rglob("monitor.json")]:
        with contextlib.suppress(OSError, ValueError, KeyError):
            data = json.loads(path.read_text())
            found.append((int(data["pid"]), int(data["startTime"])))
    return found


def processes_under(root: Path) -> list[int]:
    """PIDs whose root directory or working directory is inside ``root`` (the containers chroot below it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        for link in ("root", "cwd"):
            with contextlib.suppress(OSError):
                if os.readlink(entry / link).startswith(str(root)):
                    found.append(int(entry.name))
                    break
    return found


def net_namespaces(pids: list[int]) -> set[str]:
    spaces = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            spaces.add(os.readlink(f"/proc/{pid}/ns/net"))
    return spaces


def ticks_since_boot() -> int:
    return int(float(Path("/proc/uptime").read_text().split()[0]) * os.sysconf("SC_CLK_TCK"))


def net_namespaces_older_than(ticks: int) -> set[str]:
    """The network namespaces of processes started before ``ticks`` (clock ticks since boot). The kernel reuses a
    freed namespace's inode number at once, so a newer process (another pytest worker's Pod) can show a removed
    sandbox's number without holding anything of it."""
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    old = [pid for pid in pids if (started := nstools.start_time(pid)) is not None and started < ticks]
    return net_namespaces(old)


def mounts() -> str:
    return Path("/proc/self/mountinfo").read_text()


def links() -> str:
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout


async def test_down_removes_every_namespace_link_mount_and_process(tmp_path_factory: pytest.TempPathFactory) -> None:
    problems = network.preflight()
    if problems:
        pytest.skip("this machine cannot run process nodes: " + "; ".join(problems))
    root = tmp_path_factory.mktemp("raykube-cleanup")
    sandbox = Sandbox.named("clean", root)
    config = SandboxConfig(
        name="clean", ports=Ports.free(), nodes=NodePool(count=1, cpu="4", memory="8Gi"), runtime="process"
    )
    result = await sandbox.up(config)
    try:
        async with AsyncClient(KubeConfig.from_file(result.kubeconfig), trust_env=False) as kube:
            tree = pod(
                "tree",
                "sleep 1000 & (sleep 1000 &) ; df /scratch; wait",
                container={"volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]},
                volumes=[{"name": "scratch", "emptyDir": {"medium": "Memory"}}],
            )
            stubborn = pod("stubborn", "trap '' TERM; while true; do sleep 1; done", terminationGracePeriodSeconds=600)
            for body in (tree, stubborn):
                await kube.create(from_dict(body), namespace="default")  # type: ignore[call-overload]

            async def running() -> bool | NotYet:
                phases = {p.metadata.name: p.status.phase async for p in kube.list(Pod, namespace="default")}  # type: ignore[union-attr]
                return True if set(phases.values()) == {"Running"} and len(phases) == 2 else NotYet(str(phases))

            await wait_for(running, 240, what="both Pods to run")
    except BaseException:
        await sandbox.down()
        raise

    kubelet = sandbox.layout.kubelet
    bridge = network.bridge_name(sandbox.layout.root)
    records = recorded(kubelet)
    assert len(records) >= 6  # the services sandbox, 2 Pod sandboxes, 2 monitors, 2 containers
    contained = processes_under(sandbox.layout.root)
    assert contained  # the containers' processes are chrooted below the sandbox
    spaces = net_namespaces([pid for pid, _ in records])
    assert spaces - net_namespaces([os.getpid()])  # the Pods have network namespaces of their own
    veths = [line.split(":")[1].strip().split("@")[0] for line in links().splitlines() if f"master {bridge}" in line]
    assert len(veths) == 3  # the services sandbox and the 2 Pods
    assert bridge in links()

    down_at = ticks_since_boot()
    await sandbox.down()

    assert [pid for pid, start in records if nstools.alive(pid, start)] == []
    assert processes_under(sandbox.layout.root) == []
    assert spaces & net_namespaces_older_than(down_at) - net_namespaces([os.getpid()]) == set()
    remaining = links()
    assert bridge not in remaining
    assert [v for v in veths if v in remaining] == []
    assert str(sandbox.layout.root) not in mounts()
    assert not sandbox.layout.root.exists()

"""raykube's ``kubectl ray`` against KubeRay v1.7.0's own plugin: the same arguments to both, the same stdout, stderr
and exit code.

* Generated YAML (``create cluster --dry-run`` over flag combinations, ``job submit --dry-run``, ``--file`` and the
  namespace rules of v1.7.0: the context's namespace, the file's, the mismatch error only for an explicit ``-n``).
* Errors of flags and arguments, and of the commands themselves.
* On the kwok sandbox with raykube's operator: a RayCluster created by each plugin with the same flags (the same spec
  stored), then ``get cluster|workergroup|nodes`` (by ``-n`` and by the context's namespace), ``log --link gke``,
  ``scale`` and the not-found errors; AGE, the one column that depends on when a command runs, is masked.

What raykube does differently on purpose is in ``KNOWN``, each with the line of docs/kubectl-ray.md that says why;
those cases must still differ (a stale entry fails). Marked long (``make conformance``): KubeRay's plugin is built from
``KUBERAY_SRC`` or a clone of the tag v1.7.0 (``raykube.sandbox.conformance.release``, artifact ``plugin``);
``RAYKUBE_KUBERAY_PLUGIN=<binary>`` names one built already.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.runtime.manager import Manager
from raykube.sandbox import versions
from raykube.sandbox.conformance import build_optional, release
from raykube.waiting import NotYet, wait_for

pytestmark = pytest.mark.long

RAYKUBE = Path(sys.executable).parent / "kubectl-ray"
PLUGIN_ENV = "RAYKUBE_KUBERAY_PLUGIN"
Result = tuple[int, str, str]

# Arguments whose output raykube changes on purpose (docs/kubectl-ray.md, "Where raykube differs"): they must differ.
KNOWN = {
    "job submit --submission-id s1 --dry-run --name j -- python x.py": "job submit needs no --working-dir",
}

DRY_RUN = [
    "create cluster demo --dry-run",
    "create cluster demo -n other --dry-run",
    "create cluster demo --dry-run --worker-replicas 3 --worker-gpu 1 --head-gpu 1",
    "create cluster demo --dry-run --labels a=b --annotations c=d --head-ray-start-params num-cpus=0 "
    "--worker-ray-start-params x=y",
    "create cluster demo --dry-run --labels a=y,b=n,c=on,d=1:20,e=~,f=1e3,g=0o17,h=2001-01-01,n=:x,o=-",
    "create cluster demo --dry-run --labels a=b,c --labels d=e",
    "create cluster demo --dry-run --head-ephemeral-storage 10Gi --worker-ephemeral-storage 5Gi",
    "create cluster demo --dry-run --worker-tpu 4 --worker-node-selectors "
    "cloud.google.com/gke-tpu-accelerator=tpu-v5-lite-podslice,cloud.google.com/gke-tpu-topology=2x2",
    "create cluster demo --dry-run --autoscaler v1",
    "create cluster demo --dry-run --autoscaler v2",
    "create cluster demo --dry-run --image foo:1 --ray-version 2.40.0",
    "create cluster demo --dry-run --ray-version 2.40.0",
    "create cluster demo --dry-run --num-of-hosts 2 --worker-replicas 0",
    "create cluster demo --dry-run --head-node-selectors a=b --worker-node-selectors c=d",
    "create cluster demo --dry-run --head-cpu 500m --head-memory 1.5Gi --worker-cpu 0.5 --worker-memory 1000M",
    "job submit --submission-id s1 --dry-run --name j --working-dir . -- python x.py",
    "job submit --submission-id s1 --dry-run --name j -n q --working-dir . --worker-replicas 2 --head-cpu 1 "
    "--ttl-seconds-after-finished 10 --head-node-selectors a=b -- python x.py --epochs 3",
    "job submit --submission-id s1 --dry-run --name j --working-dir . --image foo:2 --ray-version 2.40.0 "
    "-- python x.py",
]
ERRORS = [
    "create cluster demo --dry-run --autoscaler v3",
    "create cluster demo --dry-run --head-cpu abc",
    "create cluster demo --dry-run --head-cpu 5e",
    "create cluster demo --dry-run --head-cpu -1",
    "create cluster demo --dry-run --labels bad",
    "create cluster demo --dry-run --labels a=b,c=d,bad",
    "create cluster demo --dry-run --worker-tpu 4",
    "create cluster demo --dry-run --bogus",
    "create cluster demo --dry-run -z",
    "create cluster demo --dry-run --worker-replicas x",
    "create cluster demo --dry-run --file /nowhere.yaml",
    "create cluster demo --dry-run --file /nowhere.yaml --head-cpu 1",
    "create cluster --dry-run",
    "create cluster a b --dry-run",
    "job submit --submission-id s1 --dry-run --working-dir . -- python x.py",
    "job submit --submission-id s1 --dry-run --name j --working-dir .",
    "job submit --submission-id s1 --dry-run --name j -- python x.py",
    "job submit --submission-id s1 --dry-run --name j --runtime-env /nowhere//env.yaml -- python x.py",
    "job submit --submission-id s1 -f /nowhere.yaml --working-dir . -- python x.py",
    "job submit --submission-id s1 --dry-run --name j --working-dir . --ttl-seconds-after-finished -1 -- python x.py",
    "job submit --submission-id s1 --name j --working-dir . --address '' -- python x.py",
    "job submit --dry-run --name j --working-dir . --entrypoint-num-cpus x -- python x.py",
    "create cluster a b --dry-run -n x",
    "create workergroup a b -c x",
    "log",
    "log a b",
    "logs a b c",
    "session a b",
    "get token a b",
    "get cluster a b",
    "get clusters a b c",
    "get node a b",
    "get workergroup a b",
    "scale cluster -w g -r 1",
    "scale cluster a b -w g -r 1",
    "job submit --name j --working-dir . --",
    "log demo --link foo",
    "log demo --link gke --out-dir x",
    "log demo --node-type bad",
    "log bad/x",
    "session",
    "scale cluster demo",
    "scale cluster demo -w g",
    "scale cluster demo -w g --min-replicas 3 --max-replicas 2",
    "delete",
    "delete bad/x -y",
    "get token",
]

# A `create cluster --file` config with most of its fields (kubectl-plugin/pkg/util/generation's RayClusterConfig).
RICH_FILE = """\
name: rich
labels: {a: b}
annotations: {c: d}
ray-version: 2.40.0
service-account: sa
head:
  {cpu: "1", memory: 2Gi, gpu: "1", ephemeral-storage: 5Gi, ray-start-params: {num-cpus: "0"}, node-selectors: {x: y}}
autoscaler: {version: v2}
gke:
  gcsfuse: {bucket-name: b, mount-path: /data, mount-options: implicit-dirs, resources: {cpu: 250m, memory: 1Gi}}
worker-groups:
- {name: g, replicas: 2, cpu: "1", gpu: "1", memory: 1Gi, ray-start-params: {x: y}}
- replicas: 1
  tpu: "4"
  num-of-hosts: 2
  node-selectors: {cloud.google.com/gke-tpu-accelerator: tpu-v5-lite-podslice, cloud.google.com/gke-tpu-topology: 2x4}
"""


def kuberay_plugin() -> Path:
    """KubeRay v1.7.0's ``kubectl-ray``: ``$RAYKUBE_KUBERAY_PLUGIN``, else built from the release's checkout."""
    if given := os.environ.get(PLUGIN_ENV):
        return Path(given)
    rel = release("1.7.0")
    assert rel.plugin is not None, "KubeRay v1.7.0 comes from a checkout, which builds its kubectl plugin"
    build_optional(lambda _: None, (rel.plugin,), None, rel)
    return versions.binary(rel.plugin)


@pytest.fixture(scope="module")
async def theirs() -> Path:
    return await asyncio.to_thread(kuberay_plugin)


async def run(binary: Path, args: list[str], kubeconfig: Path, cwd: Path) -> Result:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "COLUMNS": "200"}
    child = await asyncio.create_subprocess_exec(
        str(binary), *args, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd,
    )  # fmt: skip
    out, err = await asyncio.wait_for(child.communicate(), 120)
    return child.returncode or 0, out.decode(), err.decode()


AGE = re.compile(r"(?<=\s)(\d+[smhdy]\d*[smh]?|<unknown>)$", re.MULTILINE)


def mask_age(result: Result) -> Result:
    code, out, err = result
    return code, AGE.sub("AGE", out), err


async def both(theirs: Path, case: str | list[str], kubeconfig: Path, tmp_path: Path) -> tuple[Result, Result]:
    args = shlex.split(case) if isinstance(case, str) else case
    for name in ("kuberay", "raykube"):
        (tmp_path / name).mkdir(exist_ok=True)
    kuberay = await run(theirs, args, kubeconfig, tmp_path / "kuberay")
    raykube = await run(RAYKUBE, args, kubeconfig, tmp_path / "raykube")
    return kuberay, raykube


def context_kubeconfig(kubeconfig: Path, namespace: str, target: Path) -> Path:
    """The sandbox's kubeconfig with ``namespace`` as its contexts' namespace (what KP-1 reads without ``-n``)."""
    config: dict[str, Any] = yaml.safe_load(kubeconfig.read_text())
    for context in config.get("contexts") or []:
        context.setdefault("context", {})["namespace"] = namespace
    target.write_text(yaml.safe_dump(config))
    return target


def differences(pairs: list[tuple[str, Result, Result]]) -> list[str]:
    """Each case whose outputs differ though they should not, or agree though ``KNOWN`` says they differ."""
    found = []
    for case, kuberay, raykube in pairs:
        same = kuberay == raykube
        if case in KNOWN and same:
            found.append(f"{case!r}: listed in KNOWN ({KNOWN[case]}) but both now give {kuberay}")
        elif case not in KNOWN and not same:
            found.append(f"{case!r}:\n  KubeRay v1.7.0: {kuberay}\n  raykube:        {raykube}")
    return found


async def test_generated_yaml_and_errors_match_kuberay_v170(
    theirs: Path, kubeconfig: Path, namespace: str, tmp_path: Path
) -> None:
    config = context_kubeconfig(kubeconfig, namespace, tmp_path / "kubeconfig")
    pairs = [(case, *await both(theirs, case, config, tmp_path)) for case in DRY_RUN + ERRORS]
    assert not differences(pairs), "\n".join(differences(pairs))
    # The cases cover what they say: YAML in the context's namespace, and errors as one line with exit code 1.
    by_case = {case: kuberay for case, kuberay, _ in pairs}
    assert f"namespace: {namespace}\n" in by_case["create cluster demo --dry-run"][1]
    assert "namespace: other\n" in by_case["create cluster demo -n other --dry-run"][1]
    assert by_case["create cluster demo --dry-run --bogus"] == (1, "", "Error: unknown flag: --bogus\n")

    # --file: the file's namespace wins over the context's; an explicit -n that differs is refused (KP-2).
    spec, rich = tmp_path / "cluster.yaml", tmp_path / "rich.yaml"
    spec.write_text('namespace: infile\nname: fromfile\nhead:\n  cpu: "1"\nworker-groups:\n- name: g\n  replicas: 2\n')
    rich.write_text(RICH_FILE)
    file_cases = [
        ["create", "cluster", "fromfile", "--dry-run", "--file", str(spec)],
        ["create", "cluster", "fromfile", "--dry-run", "--file", str(spec), "-n", "infile"],
        ["create", "cluster", "fromfile", "--dry-run", "--file", str(spec), "-n", namespace],
        ["create", "cluster", "other", "--dry-run", "--file", str(spec)],
        ["create", "cluster", "rich", "--dry-run", "--file", str(rich)],
        ["create", "cluster", "rich", "--dry-run", "--file", str(rich), "-n", "explicit"],
    ]
    pairs = [(shlex.join(args), *await both(theirs, args, config, tmp_path)) for args in file_cases]
    assert not differences(pairs), "\n".join(differences(pairs))
    assert "namespace: infile\n" in pairs[0][1][1]
    assert pairs[2][1][0] == 1 and "does not match the namespace" in pairs[2][1][2]


async def wait_stable(theirs: Path, config: Path, tmp_path: Path, namespace: str) -> None:
    """Until both clusters are provisioned with every worker ready and available in their status, so that two reads
    a second apart see the same."""

    async def ready() -> bool | NotYet:
        code, groups, err = await run(theirs, ["get", "workergroup"], config, tmp_path)
        code2, clusters, err2 = await run(theirs, ["get", "cluster"], config, tmp_path)
        group_rows = [line.split() for line in groups.splitlines()[1:]]
        cluster_rows = [line.split() for line in clusters.splitlines()[1:]]
        settled = (
            code == code2 == 0
            and len(group_rows) == 3
            and all(row[3] in ("2/2", "1/1") for row in group_rows)
            and len(cluster_rows) == 2
            and all(row[2] == row[3] and row[-3] == "RayClusterProvisioned" for row in cluster_rows)
        )
        return True if settled else NotYet(groups + err + clusters + err2)

    await wait_for(ready, 120, what=f"the RayClusters in {namespace} to be ready")


async def test_get_log_and_scale_on_kwok_match_kuberay_v170(
    theirs: Path, kubeconfig: Path, namespace: str, operator: Manager, runtime_kube: Kube, tmp_path: Path
) -> None:
    del operator  # makes the Pods and the status the tables show
    config = context_kubeconfig(kubeconfig, namespace, tmp_path / "kubeconfig")
    flags = [
        "--head-cpu",
        "1",
        "--head-memory",
        "2Gi",
        "--worker-cpu",
        "1",
        "--worker-memory",
        "1Gi",
        "--worker-replicas",
        "2",
        "--labels",
        "team=ml",
    ]  # fmt: skip (kwok nodes have no GPUs)
    for binary, name in ((theirs, "by-kuberay"), (RAYKUBE, "by-raykube")):
        code, out, err = await run(binary, ["create", "cluster", name, *flags], config, tmp_path)
        assert (code, out, err) == (0, f"Created Ray cluster: {name}\n", "")
    stored = [await runtime_kube.get(RAYCLUSTERS, name, namespace) for name in ("by-kuberay", "by-raykube")]
    assert stored[0]["spec"] == stored[1]["spec"]
    assert [
        [f["operation"] for f in s["metadata"]["managedFields"] if f["manager"] == "ray-kubectl-plugin"] for s in stored
    ] == [["Apply"]] * 2
    code, out, err = await run(theirs, ["create", "workergroup", "extra", "-c", "by-kuberay"], config, tmp_path)
    assert code == 0, err
    await wait_stable(theirs, config, tmp_path, namespace)

    cases = [
        "get cluster", "get clusters", f"get cluster -n {namespace}", "get cluster by-kuberay", "get cluster nope",
        "get workergroup", "get workergroup -c by-raykube", "get workergroup extra", "get workergroup nope",
        "get workergroup nope -c by-kuberay", "get nodes -c by-kuberay", "get node", "get nodes nope",
        "get nodes nope -c by-raykube", "get token by-kuberay", "get token nope",
        "log by-kuberay --link gke", "log by-raykube --link gke --node-type head", "log rayjob/nope --link gke",
        "log nope --out-dir .",
        "scale cluster by-raykube -w nope -r 1", "scale cluster by-raykube -w default-group --max-replicas 1",
        "scale cluster nope -w default-group -r 1", "scale cluster by-raykube -w default-group -r 2",
        "create cluster by-kuberay", "create workergroup g -c nope", "delete nope -y", "delete rayjob/nope -y",
    ]  # fmt: skip
    pairs = []  # none of these changes anything (a scale that did would leave the second plugin nothing to do)
    for case in cases:
        kuberay, raykube = await both(theirs, case, config, tmp_path)
        pairs.append((case, mask_age(kuberay), mask_age(raykube)))
    assert not differences(pairs), "\n".join(differences(pairs))
    by_case = {case: kuberay for case, kuberay, _ in pairs}
    # `version`: the plugin's own version differs by design (docs/kubectl-ray.md); the operator's line is the same.
    kuberay, raykube = await both(theirs, "version", config, tmp_path)
    assert kuberay[0] == raykube[0] == 0 and kuberay[1].splitlines()[1:] == raykube[1].splitlines()[1:]
    assert "by-raykube" in by_case["get cluster"][1] and "AGE\n" in by_case["get cluster"][1]
    assert "console.cloud.google.com" in by_case["log by-kuberay --link gke"][1]
    assert "fluentbit" in by_case["log by-kuberay --link gke"][2]

    # The same scale through each plugin: the same message, the same group afterwards.
    for binary, name in ((theirs, "by-kuberay"), (RAYKUBE, "by-raykube")):
        code, out, err = await run(binary, ["scale", "cluster", name, "-w", "default-group", "-r", "1"], config,
                                   tmp_path)  # fmt: skip
        assert (code, err) == (0, ""), err
        assert out == f"Updated worker group default-group in Ray cluster {name} in namespace {namespace} " + (
            "(Scaled Replicas: 2 to 1)\n"
        )

"""``kubectl ray``'s pure parts against what KubeRay v1.7.0's plugin prints and writes: its tables (columns, widths,
ages), the YAML of ``create cluster --dry-run`` and ``job submit --dry-run``, the ``ray job submit`` command line, and
the log download that must not write outside its directory. The commands themselves run on the sandbox
(``tests/integration/test_kubectl_ray.py``)."""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from raykube.cli.kubectl_ray import flows, logs, render
from raykube.cli.kubectl_ray.app import app, image_version
from raykube.cli.kubectl_ray.generate import (
    ClusterOptions,
    Group,
    OptionError,
    options_from_file,
    raycluster,
    rayjob,
    resources,
    worker_group,
)

NOW = dt.datetime(2026, 12, 4, 12, 0, 0, tzinfo=dt.UTC)


def ago(**delta: float) -> str:
    return (NOW - dt.timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"), (0, "0s"), (119, "119s"), (150, "2m30s"), (180, "3m"), (600, "10m"), (3600, "60m"),
        (7200, "120m"), (3 * 3600, "3h"), (4 * 3600 + 60, "4h1m"), (12 * 3600, "12h"), (24 * 3600, "24h"),
        (50 * 3600, "2d2h"), (8 * 86400, "8d"), (800 * 86400, "2y70d"), (3000 * 86400, "8y"),
    ],
)  # fmt: skip
def test_ages_read_as_kubectl_shows_them(seconds: float, shown: str) -> None:
    assert render.human_duration(seconds) == shown


def cluster(name: str, ns: str, status: dict[str, Any], created: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if created:
        meta["creationTimestamp"] = created
    return {"metadata": meta, "status": status}


def test_get_cluster_prints_the_plugins_table() -> None:
    rows = [
        render.cluster_row(
            cluster("barista", "cafe", {
                "desiredWorkerReplicas": 2, "availableWorkerReplicas": 2, "desiredCPU": "6", "desiredGPU": "1",
                "desiredTPU": "1", "desiredMemory": "24Gi", "state": "ready",
            }, ago(hours=24)),
            NOW,
        ),
        render.cluster_row(
            cluster("bartender", "speakeasy", {
                "desiredWorkerReplicas": 3, "availableWorkerReplicas": 4, "desiredCPU": "8", "desiredGPU": "2",
                "desiredTPU": "0", "desiredMemory": "12Gi", "state": "suspended",
                "conditions": [
                    {"type": "ReplicaFailure", "status": "False"}, {"type": "HeadPodReady", "status": "True"},
                    {"type": "RayClusterSuspending", "status": "True"},
                ],
            }),
            NOW,
        ),
    ]  # fmt: skip
    assert render.table(render.CLUSTER_COLUMNS, rows) == (
        "NAME        NAMESPACE   DESIRED WORKERS   AVAILABLE WORKERS   CPUS   GPUS   TPUS   MEMORY   CONDITION      "
        "STATUS      AGE\n"
        "barista     cafe        2                 2                   6      1      1      24Gi                    "
        "ready       24h\n"
        "bartender   speakeasy   3                 4                   8      2      0      12Gi     HeadPodReady   "
        "suspended   <unknown>\n"
    )


def test_an_empty_table_prints_nothing() -> None:
    assert render.table(render.CLUSTER_COLUMNS, []) == ""


def test_the_shown_condition_is_the_first_true_one_in_the_plugins_order() -> None:
    def status(*true: str) -> dict[str, Any]:
        return {"conditions": [{"type": t, "status": "True"} for t in true]}

    assert render.relevant_condition(status("HeadPodReady", "RayClusterProvisioned")) == "RayClusterProvisioned"
    assert render.relevant_condition(status("RayClusterSuspended", "ReplicaFailure")) == "ReplicaFailure"
    assert render.relevant_condition({"conditions": [{"type": "HeadPodReady", "status": "False"}]}) == ""


def group(name: str, replicas: int | None, **extra: Any) -> dict[str, Any]:
    spec = {"containers": [{"resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "1", "google.com/tpu": "1"},
                                          "limits": {"memory": "1Gi", "cpu": "2"}}}]}  # fmt: skip
    body: dict[str, Any] = {"groupName": name, "template": {"spec": spec}, **extra}
    if replicas is not None:
        body["replicas"] = replicas
    return body


def worker(ready: bool) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"ray.io/node-type": "worker"}},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_get_workergroup_counts_resources_times_replicas_and_ready_workers() -> None:
    one = cluster("cluster-1", "namespace-1", {})
    rows = [
        render.workergroup_row(one, group("group-1", 1, minReplicas=1, maxReplicas=5), [worker(True)], True),
        render.workergroup_row(one, group("group-2", 2), [worker(True), worker(False)], True),
        render.workergroup_row(one, group("group-4", 0, maxReplicas=3), [], True),
        render.workergroup_row(one, group("group-5", 3, suspend=True), [], True),
    ]
    assert render.table(("Namespace", *render.WORKERGROUP_COLUMNS), rows) == (
        "NAMESPACE     NAME      MIN   MAX          REPLICAS   CPUS   GPUS   TPUS   MEMORY   CLUSTER\n"
        "namespace-1   group-1   1     5            1/1        1      1      1      1Gi      cluster-1\n"
        "namespace-1   group-2   0     2147483647   1/2        2      2      2      2Gi      cluster-1\n"
        "namespace-1   group-4   0     3            0/0        0      0      0      0        cluster-1\n"
        "namespace-1   group-5   0     2147483647   0/3        0      0      0      0        cluster-1\n"
    )


def test_get_node_shows_the_first_containers_requests_and_the_ray_labels() -> None:
    def pod(name: str, kind: str, group_name: str, hours: float) -> dict[str, Any]:
        labels = {"ray.io/cluster": "cluster-1", "ray.io/node-type": kind, "ray.io/group": group_name}
        requests = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1", "google.com/tpu": "1"}
        return {
            "metadata": {"name": name, "namespace": "ns", "labels": labels, "creationTimestamp": ago(hours=hours)},
            "spec": {"containers": [{"resources": {"requests": requests}}, {"resources": {"requests": {"cpu": 9}}}]},
        }

    rows = [render.node_row(pod("pod-1", "head", "headgroup", 1), NOW, False),
            render.node_row(pod("pod-2", "worker", "group-2", 2), NOW, False)]  # fmt: skip
    assert render.table(render.NODE_COLUMNS, rows) == (
        "NAME    CPUS   GPUS   TPUS   MEMORY   CLUSTER     TYPE     WORKER GROUP   AGE\n"
        "pod-1   1      1      1      1Gi      cluster-1   head     headgroup      60m\n"
        "pod-2   1      1      1      1Gi      cluster-1   worker   group-2        120m\n"
    )


# ------------------------------------------------------------------------------------------------- generation
DRY_RUN_CLUSTER = """\
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: sample-cluster
  namespace: default
spec:
  headGroupSpec:
    template:
      spec:
        containers:
        - image: rayproject/ray:2.52.0
          name: ray-head
          ports:
          - containerPort: 6379
            name: gcs-server
          - containerPort: 8265
            name: dashboard
          - containerPort: 10001
            name: client
          resources:
            limits:
              memory: 4Gi
            requests:
              cpu: "2"
              memory: 4Gi
  rayVersion: 2.52.0
  workerGroupSpecs:
  - groupName: default-group
    numOfHosts: 1
    replicas: 1
    template:
      spec:
        containers:
        - image: rayproject/ray:2.52.0
          name: ray-worker
          resources:
            limits:
              memory: 4Gi
            requests:
              cpu: "2"
              memory: 4Gi

"""


def test_create_cluster_dry_run_prints_the_plugins_yaml_without_a_kubeconfig(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["create", "cluster", "sample-cluster", "--dry-run", "-n", "default"], env={"KUBECONFIG": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == DRY_RUN_CLUSTER


def test_resources_never_limit_cpu_and_leave_out_zeros() -> None:
    assert resources("1500m", "5Gi", "1", "10Gi", "0") == {
        "limits": {"memory": "5Gi", "ephemeral-storage": "10Gi", "nvidia.com/gpu": "1"},
        "requests": {"cpu": "1500m", "memory": "5Gi", "ephemeral-storage": "10Gi", "nvidia.com/gpu": "1"},
    }
    assert resources("0", "", "0") == {"limits": {}, "requests": {}}


def test_the_default_image_follows_ray_version_and_autoscaler_turns_on_in_tree_scaling() -> None:
    result = CliRunner().invoke(
        app,
        ["create", "cluster", "c", "--dry-run", "-n", "ns1", "--ray-version", "2.46.0", "--autoscaler", "V2",
         "--labels", "app=ray,env=dev", "--worker-tpu", "4", "--worker-node-selectors",
         "cloud.google.com/gke-tpu-accelerator=tpu-v5-lite-podslice,cloud.google.com/gke-tpu-topology=2x4"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    obj = yaml.safe_load(result.stdout)
    spec = obj["spec"]
    assert spec["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] == "rayproject/ray:2.46.0"
    assert (spec["enableInTreeAutoscaling"], spec["autoscalerOptions"]) == (True, {"version": "v2"})
    assert obj["metadata"]["labels"] == {"app": "ray", "env": "dev"}
    worker_res = spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"]
    assert worker_res["limits"]["google.com/tpu"] == "4"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--head-memory", "lots"], "head-memory is not a valid resource quantity"),
        (["--worker-cpu", "-1"], "worker-cpu cannot be negative"),
        (["--worker-tpu", "1"], "cloud.google.com/gke-tpu-accelerator is not set in --worker-node-selectors"),
        (["--file", "x.yaml", "--head-cpu", "1", "--image", "i"], "incompatible with --file: [head-cpu image]"),
        (["--autoscaler", "v3"], 'must be one of "v1" or "v2"'),
    ],
)
def test_bad_create_flags_are_named(flags: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["create", "cluster", "c", "--dry-run", "-n", "x", *flags])
    assert result.exit_code != 0
    assert message in result.output


def test_a_config_file_merges_head_into_the_defaults_and_replaces_the_worker_groups() -> None:
    options = options_from_file("head: {cpu: 3}\nworker-groups:\n  - cpu: 3\n  - name: big\n    replicas: 2\n", "f")
    spec = raycluster(ClusterOptions(**{**options.__dict__, "name": "c", "namespace": "n"}))["spec"]
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]
    assert head == {"limits": {"memory": "4Gi"}, "requests": {"cpu": "3", "memory": "4Gi"}}
    groups = spec["workerGroupSpecs"]
    assert [(g["groupName"], g["replicas"], "numOfHosts" in g) for g in groups] == [
        ("default-group", 0, False),
        ("big", 2, False),
    ]
    assert groups[0]["template"]["spec"]["containers"][0]["resources"] == {"limits": {}, "requests": {"cpu": "3"}}
    with pytest.raises(OptionError, match="unknown field 'bogus'"):
        options_from_file("bogus: 1\n", "f")
    with pytest.raises(OptionError, match="cpu \\(worker group 0\\) is not a valid resource quantity"):
        options_from_file("worker-groups:\n  - cpu: lots\n", "f")


def test_a_gcsfuse_bucket_is_mounted_in_every_pod_with_the_sidecar_annotations() -> None:
    options = options_from_file(
        "gke:\n  gcsfuse:\n    bucket-name: b\n    mount-path: /data\n    resources: {cpu: 250m, memory: 256Mi}\n", "f"
    )
    spec = raycluster(ClusterOptions(**{**options.__dict__, "name": "c", "namespace": "n"}))["spec"]
    for template in (spec["headGroupSpec"]["template"], spec["workerGroupSpecs"][0]["template"]):
        assert template["spec"]["volumes"][0]["csi"]["volumeAttributes"] == {"bucketName": "b"}
        assert template["spec"]["containers"][0]["volumeMounts"] == [{"name": "cluster-storage", "mountPath": "/data"}]
        assert template["metadata"]["annotations"] == {
            "gke-gcsfuse/cpu-request": "250m",
            "gke-gcsfuse/memory-limit": "256Mi",
            "gke-gcsfuse/memory-request": "256Mi",
        }


def test_create_workergroup_limits_equal_requests() -> None:
    made = worker_group(
        "g", "img", replicas=2, min_replicas=1, max_replicas=4, num_of_hosts=1, cpu="2", memory="4Gi", gpu="1",
        tpu="0", ray_start_params={}, node_selectors={},
    )  # fmt: skip
    res = made["template"]["spec"]["containers"][0]["resources"]
    assert res["requests"] == res["limits"] == {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}
    with pytest.raises(OptionError, match="worker-memory is not a valid resource quantity"):
        worker_group("g", "img", replicas=1, min_replicas=1, max_replicas=1, num_of_hosts=1, cpu="1", memory="x",
                     gpu="0", tpu="0", ray_start_params={}, node_selectors={})  # fmt: skip


def test_job_submit_generates_an_interactive_mode_rayjob() -> None:
    options = ClusterOptions(name="rayjob-sample", namespace="default", groups=[Group(node_selectors={"a": "b"})])
    job = rayjob(options, "python my_script.py", "raysubmit_abc", 0, False)
    assert job["spec"]["submissionMode"] == "InteractiveMode"
    assert (job["spec"]["jobId"], job["spec"]["shutdownAfterJobFinishes"]) == ("raysubmit_abc", False)
    group_spec = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert "numOfHosts" not in group_spec and group_spec["template"]["spec"]["nodeSelector"] == {"a": "b"}


def test_the_ray_job_submit_command_line_keeps_the_plugins_order() -> None:
    argv = flows.ray_submit_argv(
        "http://127.0.0.1:8265", "id1", "python 'a b.py'", runtime_env="/env.yaml",
        runtime_env_json='{"x":1}', entrypoint_num_cpus=2, entrypoint_num_gpus=1, entrypoint_memory=600,
        entrypoint_resources='{"r":1}', metadata_json='{"m":1}', no_wait=True, headers="{}", verify="True",
        working_dir="/w",
    )  # fmt: skip
    assert argv == [
        "ray", "job", "submit", "--address", "http://127.0.0.1:8265", "--runtime-env", "/env.yaml",
        "--runtime-env-json", '{"x":1}', "--submission-id", "id1", "--entrypoint-num-cpus", "2.000000",
        "--entrypoint-num-gpus", "1.000000", "--entrypoint-memory", "600", "--entrypoint-resources", '{"r":1}',
        "--metadata-json", '{"m":1}', "--no-wait", "--headers", "{}", "--verify", "True", "--working-dir", "/w",
        "--", "python", "a b.py",
    ]  # fmt: skip


def test_the_entrypoint_keeps_each_argument_whole() -> None:
    assert flows.entrypoint_command(["python", "-c", "import ray; print(1)"]) == "python -c 'import ray; print(1)'"
    assert flows.entrypoint_command(["python a.py --x 1"]) == "python a.py --x 1"


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("kuberay/operator:v0.6.0", "v0.6.0"),
        ("kuberay/operator", "latest"),
        ("host:5000/op:v1", "v1"),
        ("kuberay/operator@sha256:cc8c", "sha256:cc8c"),
        ("kuberay/operator:v0.5.0@sha256:cc8c", "v0.5.0@sha256:cc8c"),
    ],
)
def test_the_operator_version_is_its_images_tag(image: str, version: str) -> None:
    assert image_version(image) == version


def test_scale_checks_its_flags_before_asking_the_cluster() -> None:
    runner = CliRunner()
    for flags, message in (
        ([], "must specify at least one of --replicas, --min-replicas, or --max-replicas"),
        (
            ["--min-replicas", "5", "--max-replicas", "3"],
            "--min-replicas (5) cannot be greater than --max-replicas (3)",
        ),
        (["-r", "2", "--min-replicas", "3"], "--replicas (2) cannot be less than --min-replicas (3)"),
        (["-r", "-2"], "--replicas must be a non-negative integer"),
    ):
        result = runner.invoke(app, ["scale", "cluster", "c", "-w", "g", *flags])
        assert result.exit_code == 1 and message in result.output, result.output


def test_log_archives_land_only_inside_the_pods_directory(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in (("./raylet.out", b"Ray Event initialized for RAYLET"), ("../escape", b"x"),
                           ("/etc/abs", b"x"), ("./sub/gcs_server.out", b"gcs")):  # fmt: skip
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("./link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    target = tmp_path / "out" / "pod"
    target.mkdir(parents=True)
    logs._extract(buffer.getvalue(), target)
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == ["out/pod/raylet.out", "out/pod/sub/gcs_server.out"]
    assert (target / "raylet.out").read_bytes() == b"Ray Event initialized for RAYLET"


def test_targets_are_name_or_type_slash_name() -> None:
    from raykube.cli.kubectl_ray.common import parse_target  # noqa: PLC0415

    assert parse_target("x", "log") == ("raycluster", "x")
    assert parse_target("rayJob/test-rayJob", "log") == ("rayjob", "test-rayJob")
    for bad in ("/x", "raycluster/", "invalid-type/x", "a/b/c"):
        with pytest.raises(Exception, match=r"invalid resource type/name|unsupported resource type"):
            parse_target(bad, "log")


def test_completion_offers_commands_flags_and_fixed_values_without_a_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    from raykube.cli.kubectl_ray.complete import complete  # noqa: PLC0415

    monkeypatch.setenv("KUBECONFIG", "/nonexistent")
    found, directive = complete(["g"])
    assert [line.split("\t")[0] for line in found] == ["get"] and directive == 4
    assert complete(["log", "--node-type", "h"]) == (["head\tdownload logs from head Ray nodes"], 4)
    assert complete(["log", "c", "--link", ""]) == (["gke"], 4)  # v1.7.0
    assert complete(["create", "cluster", "c", "--worker-m"]) == (["--worker-memory"], 4)
    assert complete(["session", "rayj"]) == (["rayjob/"], 6)  # no cluster: no names, and no space after the type
    assert complete(["job", "submit", "-f", ""]) == ([], 0)  # a file name: the shell completes it


async def test_job_submit_waits_for_a_cluster_the_rayjob_names_before_the_operator_creates_it() -> None:
    """The operator writes ``status.rayClusterName`` first and creates the cluster in its next pass: a read in
    between answers 404, which is waiting, not an error (CI met it on a busy machine)."""
    from raykube.api.resources import RAYCLUSTERS, RAYJOBS  # noqa: PLC0415
    from raykube.cli.kubectl_ray.flows import _wait_cluster  # noqa: PLC0415
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.fake import FakeKube  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "demo", "namespace": "ns"},
           "status": {"rayClusterName": "demo-abcde"}}  # fmt: skip
    fake = FakeKube([job], resources=(RAYJOBS, RAYCLUSTERS))
    missing: list[str] = []

    class Reads:
        async def get(self, res: Any, name: str, namespace: str) -> dict[str, Any]:
            try:
                return await fake.api.get(res, name, namespace)
            except ApiError as exc:
                missing.append(f"{exc.code} {name}")
                raise

    waiting = asyncio.create_task(_wait_cluster(Reads(), "ns", "demo", 30))  # type: ignore[arg-type]
    await wait_for(lambda: bool(missing) or NotYet("no read of the cluster yet"), 10, what="a read answered 404")
    assert not waiting.done() and missing[0] == "404 demo-abcde", missing
    fake.add({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "demo-abcde", "namespace": "ns"},
              "status": {"state": "ready"}})  # fmt: skip
    assert await asyncio.wait_for(waiting, 10) == "demo-abcde"

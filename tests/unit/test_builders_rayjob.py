"""RayJob builders (raykube.builders.rayjob) against KubeRay v1.6.1, and v1.7.0 where v1.7.0 changed them (the
submit command's GCS wait and ``--metadata-json``, the submitter Pod template's labels, SidecarSubmitterRestart).

Expected values come from KubeRay v1.6.1's own unit tests where they exist (named in each test: ``common/job_test.go``,
``rayjob_controller_unit_test.go``, ``rayservice_controller_unit_test.go``, ``dashboardclient/
dashboard_httpclient_test.go``, the Volcano and YuniKorn plugin tests) and otherwise from a throw-away Go program that
called ``common.BuildJobSubmitCommand``, ``common.GetMetadataJson`` and ``dashboardclient.ConvertRayJobToReq`` +
``json.Marshal`` of KubeRay v1.6.1 (it is not in the repository; its outputs are quoted here as data).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from raykube.api import constants as c
from raykube.api.resources import RayCluster, RayJob
from raykube.builders import batch, rayjob, services
from raykube.builders.options import BuildOptions
from raykube.golang import gojson, strconv
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"
UID = "5f0c6a2e-1b7d-4c3e-9a8f-2d6e4b1c0a97"
CLUSTER_UID = "c1a2b3d4-0000-4000-8000-000000000001"
OPTIONS = BuildOptions()
ENTRYPOINT = "echo no quote 'single quote' \"double quote\""


def _health(url: str) -> str:
    """KubeRay v1.7.0 ``fmt.Sprintf(utils.BasePythonHealthCommand, url, RayDashboardGCSHealthCheckTimeoutSeconds)``."""
    return (
        f"python -c \"import urllib.request; r=urllib.request.urlopen('{url}', timeout=10); "
        "exit(0 if b'success' in r.read() else 1)\""
    )


def _wait_loop(url: str, address: str) -> list[str]:
    """The tokens of v1.7.0's GCS wait loop, ahead of both modes' submission."""
    return [
        "until", _health(url), ">/dev/null", "2>&1", ";",
        "do", "echo", f'"Waiting for Ray Dashboard GCS to become healthy at {address} ..."', ";",
        "sleep", "2", ";", "done", ";",
    ]  # fmt: skip


def _k8s_wait(address: str) -> str:
    """The K8sJobMode command's start in v1.7.0 (RJ-2): the wait loop on ``<address>/api/gcs_healthz``, joined."""
    return " ".join(_wait_loop(f"{address}/api/gcs_healthz", address)) + " "


HEALTH = _health("http://localhost:8265/api/gcs_healthz")
LOCAL_WAIT = _wait_loop("http://127.0.0.1:8265/api/gcs_healthz", "http://127.0.0.1:8265")
OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "name": "test-rayjob",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}
DEFAULT_RESOURCES = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "200Mi"}}


def _rayjob(
    spec: dict[str, Any],
    *,
    status: dict[str, Any] | None = None,
    name: str = "test-rayjob",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> RayJob:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "uid": UID}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    doc = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": metadata, "spec": spec, "status": status or {}}
    return RayJob.model_validate(doc)


def _head(image: str = "rayproject/ray:2.52.0", **container: Any) -> dict[str, Any]:
    """A rayClusterSpec whose head has one container."""
    return {
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"image": image, **container}]}}},
    }


def _cluster(spec: dict[str, Any], name: str = "test-rayjob-abcde", **metadata: Any) -> RayCluster:
    return RayCluster.model_validate(
        {"metadata": {"name": name, "namespace": "default", "uid": CLUSTER_UID, **metadata}, "spec": spec}
    )


# --------------------------------------------------------------------------------------------------------------------
# BuildJobSubmitCommand (KubeRay common/job_test.go)
# --------------------------------------------------------------------------------------------------------------------


def _template_rayjob(cluster_spec: dict[str, Any] | None = None) -> RayJob:
    """KubeRay common/job_test.go rayJobTemplate()."""
    return _rayjob(
        {
            "runtimeEnvYAML": "test: test",
            "metadata": {"testKey": "testValue"},
            "rayClusterSpec": cluster_spec or {"rayVersion": "2.6.0", "headGroupSpec": {"template": {"spec": {}}}},
            "entrypoint": ENTRYPOINT,
            "entrypointNumCpus": 1,
            "entrypointNumGpus": 0.5,
            "entrypointResources": '{"Custom_1": 1, "Custom_2": 5.5}',
        },
        status={"dashboardURL": "http://127.0.0.1:8265", "jobId": "testJobId"},
    )


def _with_dashboard_port(port: int, *, ray_version: str = "2.6.0") -> dict[str, Any]:
    container = {"ports": [{"name": "dashboard", "containerPort": port}]}
    return {"rayVersion": ray_version, "headGroupSpec": {"template": {"spec": {"containers": [container]}}}}


TEMPLATE_OPTIONS = [
    "--runtime-env-json", r'"{\"test\":\"test\"}"',
    "--metadata-json", r'"{\"testKey\":\"testValue\"}"',
    "--submission-id", "testJobId",
    "--entrypoint-num-cpus", "1.000000",
    "--entrypoint-num-gpus", "0.500000",
    "--entrypoint-resources", r'"{\"Custom_1\": 1, \"Custom_2\": 5.5}"',
]  # fmt: skip


def test_build_job_submit_command_with_k8s_job_mode() -> None:
    """TestBuildJobSubmitCommandWithK8sJobMode (v1.7.0: the GCS wait loop first, RJ-2)."""
    expected = [
        *LOCAL_WAIT,
        "if",
        "!", "ray", "job", "status", "--address", "http://127.0.0.1:8265", "testJobId", ">/dev/null", "2>&1",
        ";", "then",
        "ray", "job", "submit", "--address", "http://127.0.0.1:8265", "--no-wait",
        *TEMPLATE_OPTIONS,
        "--",
        ENTRYPOINT,
        ";", "fi", ";",
        "ray", "job", "logs", "--address", "http://127.0.0.1:8265", "--follow", "testJobId",
    ]  # fmt: skip
    assert rayjob.submit_command_tokens(_template_rayjob(), c.SUBMISSION_MODE_K8S_JOB) == expected
    assert rayjob.k8s_job_submit_command(_template_rayjob()) == " ".join(expected)


def test_build_job_submit_command_with_sidecar_mode() -> None:
    """TestBuildJobSubmitCommandWithSidecarMode."""
    expected = [
        "until",
        HEALTH,
        ">/dev/null", "2>&1", ";",
        "do", "echo", '"Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..."', ";",
        "sleep", "2", ";", "done", ";",
        "ray", "job", "submit", "--address", "http://127.0.0.1:8265",
        *TEMPLATE_OPTIONS,
        "--",
        ENTRYPOINT,
        ";",
    ]  # fmt: skip
    job = _template_rayjob(_with_dashboard_port(8265))
    assert rayjob.submit_command_tokens(job, c.SUBMISSION_MODE_SIDECAR) == expected
    assert rayjob.sidecar_submit_command(job) == " ".join(expected)


@pytest.mark.parametrize("ray_version", ["2.53.0", "2.52.1", "invalid-version"])
def test_build_job_submit_command_with_sidecar_mode_version_switch(ray_version: str) -> None:
    """TestBuildJobSubmitCommandWithSidecarModeVersionSwitch: always the Python health command."""
    doc = _template_rayjob(_with_dashboard_port(8265, ray_version=ray_version)).to_wire()
    del doc["spec"]["metadata"]
    command = rayjob.submit_command_tokens(RayJob.model_validate(doc), c.SUBMISSION_MODE_SIDECAR)
    assert command[0] == "until"
    assert "python -c" in command[1]
    assert "api/gcs_healthz" in command[1]
    assert "wget" not in command[1]


def test_build_job_submit_command_with_sidecar_mode_custom_dashboard_port() -> None:
    """TestBuildJobSubmitCommandWithSidecarModeCustomDashboardPort."""
    command = rayjob.submit_command_tokens(_template_rayjob(_with_dashboard_port(9000)), c.SUBMISSION_MODE_SIDECAR)
    assert command[0] == "until"
    assert "localhost:9000/api/gcs_healthz" in command[1]
    assert "--address" in command
    assert command[command.index("--address") + 1] == "http://127.0.0.1:9000"
    assert (
        rayjob.sidecar_submit_command(_template_rayjob(_with_dashboard_port(9000)), dashboard_port=7000).count(
            "http://127.0.0.1:7000"
        )
        == 2
    )


def test_build_job_submit_command_with_k8s_job_mode_health_wait_loop() -> None:
    """TestBuildJobSubmitCommandWithK8sJobModeHealthWaitLoop (v1.7.0): the wait polls the dashboard URL, with
    ``http://`` added when the status has none, before the status check."""
    command = rayjob.submit_command_tokens(_template_rayjob(), c.SUBMISSION_MODE_K8S_JOB)
    assert command[0] == "until"
    assert "python -c" in command[1]
    assert "api/gcs_healthz" in command[1]
    assert "127.0.0.1:8265" in command[1]
    assert "wget" not in command[1]
    assert command.index("until") < command.index("if")
    job = _rayjob({"entrypoint": "x"}, status={"jobId": "j", "dashboardURL": "svc.ns.svc.cluster.local:8265"})
    address = "http://svc.ns.svc.cluster.local:8265"
    assert rayjob.submit_command_tokens(job, c.SUBMISSION_MODE_K8S_JOB)[:14] == _wait_loop(
        f"{address}/api/gcs_healthz", address
    )


def test_build_job_submit_command_with_sidecar_mode_and_feature_gate() -> None:
    """TestBuildJobSubmitCommandWithSidecarModeAndFeatureGate (RJ-6): with SidecarSubmitterRestart the SidecarMode
    command is the idempotent one (status check, --no-wait, logs --follow), still waiting on localhost."""
    expected = [
        "until",
        HEALTH,
        ">/dev/null", "2>&1", ";",
        "do", "echo", '"Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..."', ";",
        "sleep", "2", ";", "done", ";",
        "if", "!", "ray", "job", "status", "--address", "http://127.0.0.1:8265", "testJobId", ">/dev/null", "2>&1",
        ";", "then",
        "ray", "job", "submit", "--address", "http://127.0.0.1:8265", "--no-wait",
        *TEMPLATE_OPTIONS,
        "--",
        ENTRYPOINT,
        ";", "fi", ";",
        "ray", "job", "logs", "--address", "http://127.0.0.1:8265", "--follow", "testJobId",
    ]  # fmt: skip
    job = _template_rayjob(_with_dashboard_port(8265))
    assert rayjob.submit_command_tokens(job, c.SUBMISSION_MODE_SIDECAR, sidecar_restart=True) == expected
    assert rayjob.sidecar_submit_command(job, sidecar_restart=True) == " ".join(expected)


RUNTIME_ENV_YAML = """
working_dir: "https://github.com/ray-project/serve_config_examples/archive/b393e77bbd6aba0881e3d94c05f968f05a387b96.zip"
pip: ["python-multipart==0.0.6"]
"""


def test_build_job_submit_command_with_k8s_job_mode_and_yaml() -> None:
    """TestBuildJobSubmitCommandWithK8sJobModeAndYAML (KubeRay compares the JSON as maps; Go's keys are sorted)."""
    job = _rayjob(
        {
            "runtimeEnvYAML": RUNTIME_ENV_YAML,
            "metadata": {"testKey": "testValue"},
            "rayClusterSpec": {"rayVersion": "2.6.0", "headGroupSpec": {"template": {"spec": {}}}},
            "entrypoint": ENTRYPOINT,
        },
        status={"dashboardURL": "http://127.0.0.1:8265", "jobId": "testJobId"},
    )
    runtime_env = (
        '{"pip":["python-multipart==0.0.6"],"working_dir":"https://github.com/ray-project/serve_config_examples/'
        'archive/b393e77bbd6aba0881e3d94c05f968f05a387b96.zip"}'
    )
    expected = [
        *LOCAL_WAIT,
        "if",
        "!", "ray", "job", "status", "--address", "http://127.0.0.1:8265", "testJobId", ">/dev/null", "2>&1",
        ";", "then",
        "ray", "job", "submit", "--address", "http://127.0.0.1:8265", "--no-wait",
        "--runtime-env-json", strconv.quote(runtime_env),
        "--metadata-json", r'"{\"testKey\":\"testValue\"}"',
        "--submission-id", "testJobId",
        "--",
        ENTRYPOINT,
        ";", "fi", ";",
        "ray", "job", "logs", "--address", "http://127.0.0.1:8265", "--follow", "testJobId",
    ]  # fmt: skip
    assert rayjob.submit_command_tokens(job, c.SUBMISSION_MODE_K8S_JOB) == expected
    assert json.loads(rayjob.runtime_env_json(job)) == {
        "working_dir": "https://github.com/ray-project/serve_config_examples/archive/"
        "b393e77bbd6aba0881e3d94c05f968f05a387b96.zip",
        "pip": ["python-multipart==0.0.6"],
    }


def test_runtime_env_and_metadata_json() -> None:
    """TestGetRuntimeEnvJsonFromBase64, TestGetMetadataJson."""
    assert rayjob.runtime_env_json(_template_rayjob()) == '{"test":"test"}'
    assert rayjob.metadata_json({"testKey": "testValue"}, "2.6.0") == '{"testKey":"testValue"}'
    assert rayjob.runtime_env_json(_rayjob({"entrypoint": "x"})) == ""


# (rayVersion, GetMetadataJson's error or None) from KubeRay v1.6.1 with Masterminds semver v3.4.0; v1.7.0's
# getMetadataJSONForSubmitCommand gives the same for every set version and checks nothing when it is unset (RJ-3).
METADATA_VERSIONS = [
    ("2.6.0", None),
    ("2.6", None),
    ("v2.6.0", None),
    ("02.6.0", None),
    ("3", None),
    ("2.10.0", None),
    ("2.52.0", None),
    ("2.6.0+build.1", None),
    ("2.5.0", "the Ray version must be at least 2.6.0 to use the metadata field"),  # TestMetadataRaisesErrorBeforeRay26
    ("2.7.0-rc1", "the Ray version must be at least 2.6.0 to use the metadata field"),
    ("v2", "the Ray version must be at least 2.6.0 to use the metadata field"),
    ("", None),  # TestBuildJobSubmitCommandWithUnsetRayVersion (v1.6.1: "failed to parse Ray version: : ...")
    ("latest", "failed to parse Ray version: latest: invalid semantic version"),
    ("2.6.0 ", "failed to parse Ray version: 2.6.0 : invalid semantic version"),
    ("2.6.0\n", "failed to parse Ray version: 2.6.0\n: invalid semantic version"),
    ("2.6.0-01", "failed to parse Ray version: 2.6.0-01: version segment starts with 0"),
    ("2.6.0-rc.01", "failed to parse Ray version: 2.6.0-rc.01: version segment starts with 0"),
    (
        "99999999999999999999.0.0",
        "failed to parse Ray version: 99999999999999999999.0.0: error parsing version segment: "
        'strconv.ParseUint: parsing "99999999999999999999": value out of range',
    ),
]


@pytest.mark.parametrize(("version", "error"), METADATA_VERSIONS)
def test_metadata_json_ray_version(version: str, error: str | None) -> None:
    if error is None:
        assert rayjob.metadata_json({"k": "v"}, version) == '{"k":"v"}'
    else:
        with pytest.raises(rayjob.RayJobBuildError) as caught:
            rayjob.metadata_json({"k": "v"}, version)
        assert str(caught.value) == error


def test_metadata_is_sent_with_a_cluster_selector_and_the_command_fails_on_an_old_version() -> None:
    """TestBuildJobSubmitCommandWithClusterSelector, ...WithUnsetRayVersion, ...WithOldRayVersion and
    ...WithUnparseableRayVersion (v1.7.0, RJ-3): v1.6.1 dropped the metadata without a rayClusterSpec and failed on an
    unset rayVersion."""
    selector = _rayjob(
        {
            "clusterSelector": {"ray.io/cluster": "existing"},
            "metadata": {"tenant": "tenant1", "team": "ml-platform"},
            "entrypoint": "x",
        },
        status={"jobId": "j", "dashboardURL": "d:8265"},
    )
    command = rayjob.submit_command_tokens(selector, c.SUBMISSION_MODE_K8S_JOB)
    assert command[command.index("--metadata-json") + 1] == strconv.quote('{"team":"ml-platform","tenant":"tenant1"}')
    unset = _rayjob({"rayClusterSpec": _head(), "metadata": {"k": "v"}, "entrypoint": "x"}, status={"jobId": "j"})
    assert '--metadata-json "{\\"k\\":\\"v\\"}"' in rayjob.k8s_job_submit_command(unset, dashboard_url="d:8265")
    bad = _rayjob(
        {"rayClusterSpec": {**_head(), "rayVersion": "not-a-version"}, "metadata": {"k": "v"}, "entrypoint": "x"},
        status={"jobId": "j"},
    )
    with pytest.raises(rayjob.RayJobBuildError, match=r"^failed to parse Ray version: not-a-version: "):
        rayjob.k8s_job_submit_command(bad, dashboard_url="d:8265")
    old = _rayjob(
        {"rayClusterSpec": {**_head(), "rayVersion": "2.5.0"}, "metadata": {"k": "v"}, "entrypoint": "x"},
        status={"jobId": "j"},
    )
    with pytest.raises(rayjob.RayJobBuildError, match=rf"^{rayjob.METADATA_VERSION_MESSAGE}$"):
        rayjob.k8s_job_submit_command(old, dashboard_url="d:8265")


def test_k8s_job_command_vector_with_go_numbers_and_trimmed_entrypoint() -> None:
    """Go: --metadata-json without a rayClusterSpec too since v1.7.0 (json.Marshal escapes <>&, strconv.Quote the
    backslashes); float32 %f; raw --entrypoint-resources; TrimSpace."""
    job = _rayjob(_ODD_SPEC, status={"jobId": "x-abcde", "dashboardURL": "svc:8265"}, name="x")
    assert rayjob.k8s_job_submit_command(job) == _k8s_wait("http://svc:8265") + (
        "if ! ray job status --address http://svc:8265 x-abcde >/dev/null 2>&1 ; then ray job submit --address "
        'http://svc:8265 --no-wait --runtime-env-json "{\\"b\\":1,\\"c\\":12345678901234567890,\\"config\\":'
        '{\\"setup_timeout_seconds\\":600},\\"d\\":1e-7,\\"e\\":[1.5,true,null]}" '
        '--metadata-json "{\\"a\\":\\"1\\",\\"owner\\":\\"\\\\u003cme \\\\u0026 you\\\\u003e\\"}" '
        "--submission-id x-abcde "
        "--entrypoint-num-cpus 1.100000 --entrypoint-num-gpus 2.200000 --entrypoint-resources "
        '"{\\"r2\\": 0.2, \\"r1\\": 0.1, \\"tiny\\": 1e-7, \\"big\\": 1e30, \\"nothing\\": null}" '
        "-- python -c 'print(1 < 2 & 3 > 2)' ; fi ; ray job logs --address http://svc:8265 --follow x-abcde"
    )


def test_k8s_job_sample_command() -> None:
    """ray-job.sample.yaml and ray-job.resources.yaml, as BuildJobSubmitCommand writes them."""
    status = {"jobId": "rayjob-sample-x7k2p", "dashboardURL": f"{_SAMPLE_SVC}.default.svc.cluster.local:8265"}
    address = f"http://{_SAMPLE_SVC}.default.svc.cluster.local:8265"
    runtime_env = (
        '"{\\"env_vars\\":{\\"counter_name\\":\\"test_counter\\"},\\"pip\\":[\\"requests==2.26.0\\",'
        '\\"pendulum==2.1.2\\"]}"'
    )
    sample = _sample_rayjob("ray-job.sample.yaml", status)
    assert rayjob.k8s_job_submit_command(sample) == _k8s_wait(address) + (
        f"if ! ray job status --address {address} rayjob-sample-x7k2p >/dev/null 2>&1 ; then ray job submit "
        f"--address {address} --no-wait --runtime-env-json {runtime_env} --submission-id rayjob-sample-x7k2p "
        f"-- python /home/ray/samples/sample_code.py ; fi ; ray job logs --address {address} --follow "
        "rayjob-sample-x7k2p"
    )
    resources = _sample_rayjob("ray-job.resources.yaml", status)
    assert (
        "--submission-id rayjob-sample-x7k2p --entrypoint-num-cpus 2.000000 --entrypoint-num-gpus 0.500000 "
        '--entrypoint-resources "{\\"resource1\\": 1, \\"resource2\\": 2}" -- python /home/ray/samples/sample_code.py'
    ) in rayjob.k8s_job_submit_command(resources)
    sidecar = _sample_rayjob("ray-job.sidecar-mode.yaml", status)
    assert rayjob.sidecar_submit_command(sidecar) == (
        f'until {HEALTH} >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at '
        'http://127.0.0.1:8265 ..." ; sleep 2 ; done ; ray job submit --address http://127.0.0.1:8265 '
        f"--runtime-env-json {runtime_env} --submission-id rayjob-sample-x7k2p -- "
        "python /home/ray/samples/sample_code.py ;"
    )


def test_unsupported_mode_and_missing_head_container() -> None:
    job = _template_rayjob()
    with pytest.raises(
        rayjob.RayJobBuildError, match=r"^unsupported submission mode for job submit command: HTTPMode$"
    ):
        rayjob.submit_command_tokens(job, c.SUBMISSION_MODE_HTTP)
    with pytest.raises(rayjob.RayJobBuildError, match="no head container"):
        rayjob.sidecar_submit_command(job)


# --------------------------------------------------------------------------------------------------------------------
# The submitter template and Job (KubeRay rayjob_controller_unit_test.go, common/job_test.go)
# --------------------------------------------------------------------------------------------------------------------

TEST_ARGS = _k8s_wait("http://test-url") + (
    "if ! ray job status --address http://test-url test-job-id >/dev/null 2>&1 ; then ray job submit --address "
    "http://test-url --no-wait --submission-id test-job-id -- echo no quote 'single quote' \"double quote\" ; fi ; "
    "ray job logs --address http://test-url --follow test-job-id"
)


def test_get_submitter_template() -> None:
    """rayjob_controller_unit_test.go TestGetSubmitterTemplate, tests 1 to 6."""
    status = {"dashboardURL": "test-url", "jobId": "test-job-id"}
    cluster = _cluster(_head("rayproject/ray:custom-version"))
    with_template = {
        "entrypoint": ENTRYPOINT,
        "submitterPodTemplate": {"spec": {"containers": [{"command": ["user-command"]}]}},
    }
    template = rayjob.submitter_template(_rayjob(with_template, status=status), cluster, OPTIONS)
    assert template["spec"]["containers"][0]["command"][0] == "user-command"
    assert "args" not in template["spec"]["containers"][0]

    with_template["submitterPodTemplate"]["spec"]["containers"][0]["command"] = []
    template = rayjob.submitter_template(_rayjob(with_template, status=status), cluster, OPTIONS)
    ray = template["spec"]["containers"][0]
    assert ray["command"] == ["/bin/bash", "-ce", "--"]
    assert ray["args"] == [TEST_ARGS]
    assert {"name": "RAY_DASHBOARD_ADDRESS", "value": "test-url"} in ray["env"]
    assert {"name": "RAY_JOB_SUBMISSION_ID", "value": "test-job-id"} in ray["env"]

    without = {"entrypoint": ENTRYPOINT, "rayClusterSpec": _head("rayproject/ray:custom-version")}
    template = rayjob.submitter_template(_rayjob(without, status=status), cluster, OPTIONS)
    ray = template["spec"]["containers"][0]
    assert ray["command"] == ["/bin/bash", "-ce", "--"]
    assert ray["args"] == [TEST_ARGS]
    assert ray["image"] == "rayproject/ray:custom-version"
    assert {"name": "PYTHONUNBUFFERED", "value": "1"} in ray["env"]


def test_get_submitter_template_uses_the_cluster_head_image() -> None:
    """common/job_test.go TestGetSubmitterTemplate: the image of the RayCluster passed in (clusterSelector mode)."""
    job = _rayjob({"clusterSelector": {"ray.io/cluster": "existing"}, "entrypoint": "x"})
    template = rayjob.submitter_template(job, _cluster(_head("rayproject/ray:test-submitter-template")), OPTIONS)
    assert template["spec"]["containers"][0]["image"] == "rayproject/ray:test-submitter-template"


def test_get_submitter_template_with_enable_k8s_token_auth() -> None:
    """TestGetSubmitterTemplate_WithEnableK8sTokenAuth: the ray-token volume and its mount."""
    spec = {**_head("rayproject/ray"), "authOptions": {"mode": "token", "enableK8sTokenAuth": True}}
    template = rayjob.submitter_template(
        _rayjob({"rayClusterSpec": spec, "entrypoint": "x"}), _cluster(spec, name="test-raycluster"), OPTIONS
    )
    assert template["spec"]["volumes"] == [
        {"name": "ray-token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}
    ]
    ray = template["spec"]["containers"][0]
    assert ray["volumeMounts"] == [
        {"name": "ray-token", "mountPath": "/var/run/secrets/ray.io/serviceaccount", "readOnly": True}
    ]
    assert {"name": "RAY_ENABLE_K8S_TOKEN_AUTH", "value": "true"} in ray["env"]
    assert not any(entry["name"] == "RAY_AUTH_TOKEN" for entry in ray["env"])


def test_submitter_job_default() -> None:
    job = _rayjob({"rayClusterSpec": _head(), "entrypoint": " python main.py "}, status={"jobId": "test-rayjob-q2w4e"})
    built = rayjob.submitter_job(
        job, _cluster(_head()), OPTIONS, dashboard_url="test-rayjob-abcde-head-svc.default.svc.cluster.local:8265"
    )
    address = "http://test-rayjob-abcde-head-svc.default.svc.cluster.local:8265"
    assert built == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "test-rayjob",
            "namespace": "default",
            "labels": {
                "ray.io/originated-from-cr-name": "test-rayjob",
                "ray.io/originated-from-crd": "RayJob",
                "app.kubernetes.io/created-by": "kuberay-operator",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "backoffLimit": 2,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "ray-job-submitter",
                            "image": "rayproject/ray:2.52.0",
                            "resources": DEFAULT_RESOURCES,
                            "command": ["/bin/bash", "-ce", "--"],
                            "args": [
                                f"{_k8s_wait(address)}"
                                f"if ! ray job status --address {address} test-rayjob-q2w4e >/dev/null 2>&1 ; then "
                                f"ray job submit --address {address} --no-wait --submission-id test-rayjob-q2w4e -- "
                                f"python main.py ; fi ; ray job logs --address {address} --follow test-rayjob-q2w4e"
                            ],
                            "env": [
                                {"name": "PYTHONUNBUFFERED", "value": "1"},
                                {
                                    "name": "RAY_DASHBOARD_ADDRESS",
                                    "value": "test-rayjob-abcde-head-svc.default.svc.cluster.local:8265",
                                },
                                {"name": "RAY_JOB_SUBMISSION_ID", "value": "test-rayjob-q2w4e"},
                            ],
                        }
                    ],
                    "restartPolicy": "Never",
                },
                "metadata": {
                    "labels": {
                        "ray.io/originated-from-cr-name": "test-rayjob",
                        "ray.io/originated-from-crd": "RayJob",
                        "app.kubernetes.io/created-by": "kuberay-operator",
                    }
                },
            },
        },
    }


def test_submitter_job_user_template_backoff_login_shell_and_auth() -> None:
    user_env = [{"name": "PYTHONUNBUFFERED", "value": "0"}, {"name": "RAY_AUTH_MODE", "value": "token"}]
    template = {
        "metadata": {
            "labels": {"team": "a", "ray.io/originated-from-crd": "mine", "app.kubernetes.io/created-by": "me"}
        },
        "spec": {"containers": [{"name": "mine", "image": "me", "args": ["dropped"], "env": user_env}]},
    }
    spec = {**_head(), "authOptions": {"mode": "token"}}
    job = _rayjob(
        {
            "rayClusterSpec": spec,
            "entrypoint": "x",
            "submitterPodTemplate": template,
            "submitterConfig": {"backoffLimit": 0},
        },
        status={"jobId": "j", "dashboardURL": "d:1"},
    )
    built = rayjob.submitter_job(job, _cluster(spec, name="0-cluster"), BuildOptions(login_shell=True))
    assert built["spec"]["backoffLimit"] == 0
    pod = built["spec"]["template"]
    assert pod["metadata"] == {  # v1.7.0 (RJ-4): KubeRay's three labels win over the user's
        "labels": {
            "team": "a",
            "ray.io/originated-from-crd": "RayJob",
            "app.kubernetes.io/created-by": "kuberay-operator",
            "ray.io/originated-from-cr-name": "test-rayjob",
        }
    }
    assert "restartPolicy" not in pod["spec"]  # used as given: KubeRay adds none
    ray = pod["spec"]["containers"][0]
    assert ray["command"] == ["/bin/bash", "-cel", "--"]
    assert ray["args"] == [
        _k8s_wait("http://d:1")
        + "if ! ray job status --address http://d:1 j >/dev/null 2>&1 ; then ray job submit --address http://d:1 "
        "--no-wait --submission-id j -- x ; fi ; ray job logs --address http://d:1 --follow j"
    ]
    # appended whatever is there (a second PYTHONUNBUFFERED), RAY_AUTH_MODE only if missing, the token from the
    # Secret CheckName(<cluster>) ("0-cluster" → "r-cluster").
    assert ray["env"] == [
        *user_env,
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "RAY_DASHBOARD_ADDRESS", "value": "d:1"},
        {"name": "RAY_JOB_SUBMISSION_ID", "value": "j"},
        {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": "r-cluster", "key": "auth_token"}}},
    ]
    assert template["spec"]["containers"][0]["args"] == ["dropped"]  # the RayJob is not mutated


def test_submitter_job_empty_status_values_and_errors() -> None:
    job = _rayjob({"rayClusterSpec": _head(), "entrypoint": "x"})
    env = rayjob.submitter_job(job, _cluster(_head()), OPTIONS)["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[1:] == [{"name": "RAY_DASHBOARD_ADDRESS"}, {"name": "RAY_JOB_SUBMISSION_ID"}]  # Go's omitempty
    no_containers = _rayjob({"rayClusterSpec": _head(), "submitterPodTemplate": {"spec": {"containers": []}}})
    with pytest.raises(rayjob.RayJobBuildError, match="submitterPodTemplate has no containers"):
        rayjob.submitter_job(no_containers, _cluster(_head()), OPTIONS)


def test_submitter_job_batch_schedulers() -> None:
    """volcano_scheduler_test.go TestAddMetadataToSubmitterPod; yunikorn_scheduler_test.go
    TestPropagateTaskGroupsAnnotationToRayClusterAndSubmitterPodTemplate (the submitter's task groups)."""
    spec = _head()
    labels = {"volcano.sh/queue-name": "test-queue", "ray.io/priority-class-name": "test-priority"}
    job = _rayjob({"rayClusterSpec": spec, "entrypoint": "x"}, name="rayjob-sample", labels=labels)
    pod = rayjob.submitter_job(job, _cluster(spec), BuildOptions(batch_scheduler="volcano"))["spec"]["template"]
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "ray-rayjob-sample-pg",
        "volcano.sh/task-spec": "submittergroup",
    }
    assert pod["metadata"]["labels"] == {
        **labels,
        "ray.io/originated-from-cr-name": "rayjob-sample",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert pod["spec"]["schedulerName"] == "volcano"

    head = {
        "rayStartParams": {},
        "template": {
            "spec": {
                "containers": [
                    {"name": "head", "image": "ray", "resources": {"requests": {"cpu": "5", "memory": "5Gi"}}}
                ]
            }
        },
    }
    worker = {
        "groupName": "worker-group-1",
        "replicas": 1,
        "minReplicas": 1,
        "maxReplicas": 1,
        "rayStartParams": {},
        "template": {
            "spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "2", "memory": "10Gi"}}}]}
        },
    }
    gang = {"rayVersion": "2.52.0", "headGroupSpec": head, "workerGroupSpecs": [worker]}
    labels = {
        "yunikorn.apache.org/app-id": "job-1-01234",
        "yunikorn.apache.org/queue": "root.default",
        "ray.io/gang-scheduling-enabled": "true",
    }
    job = _rayjob({"rayClusterSpec": gang, "entrypoint": "x"}, labels=labels)
    pod = rayjob.submitter_job(job, _cluster(gang), BuildOptions(batch_scheduler="yunikorn"))["spec"]["template"]
    assert pod["metadata"]["labels"] == {
        "applicationId": "job-1-01234",
        "queue": "root.default",
        "ray.io/originated-from-cr-name": "test-rayjob",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert pod["spec"]["schedulerName"] == "yunikorn"
    assert pod["metadata"]["annotations"]["yunikorn.apache.org/task-group-name"] == "submittergroup"
    assert json.loads(pod["metadata"]["annotations"]["yunikorn.apache.org/task-groups"]) == [
        {"minResource": {"cpu": "5", "memory": "5Gi"}, "name": "headgroup", "minMember": 1},
        {"minResource": {"cpu": "2", "memory": "10Gi"}, "name": "worker-group-1", "minMember": 1},
        {"minResource": {"cpu": "500m", "memory": "200Mi"}, "name": "submittergroup", "minMember": 1},
    ]


# --------------------------------------------------------------------------------------------------------------------
# The RayCluster (constructRayClusterForRayJob)
# --------------------------------------------------------------------------------------------------------------------


def test_rayjob_cluster_k8s_job_mode() -> None:
    spec = {
        **_head(),
        "workerGroupSpecs": [
            {
                "groupName": "small",
                "replicas": 1,
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "w"}]}},
            }
        ],
    }
    job = _rayjob({"rayClusterSpec": spec, "entrypoint": "x"}, labels={"team": "a"}, annotations={"note": "b"})
    assert rayjob.rayjob_cluster(job, "test-rayjob-abcde", OPTIONS) == {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "test-rayjob-abcde",
            "namespace": "default",
            "labels": {
                "team": "a",
                "ray.io/originated-from-cr-name": "test-rayjob",
                "ray.io/originated-from-crd": "RayJob",
                "ray.io/job-submission-mode": "K8sJobMode",
            },
            "annotations": {"note": "b"},
            "ownerReferences": [OWNER],
        },
        "spec": spec,
    }


def test_rayjob_cluster_sidecar_mode() -> None:
    spec = {**_head(ports=[{"name": "dashboard", "containerPort": 9000}]), "authOptions": {"mode": "token"}}
    job = _rayjob(
        {"rayClusterSpec": spec, "entrypoint": "python run.py", "submissionMode": "SidecarMode"},
        status={"jobId": "test-rayjob-zz9zz"},
    )
    built = rayjob.rayjob_cluster(job, "test-rayjob-abcde", BuildOptions(batch_scheduler="volcano"))
    assert built["metadata"]["annotations"] == {"ray.io/disable-provisioned-head-restart": "true"}
    assert built["metadata"]["labels"]["ray.io/job-submission-mode"] == "SidecarMode"
    head = built["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["restartPolicy"] == "Never"
    assert head["containers"][0] == spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["containers"][1] == {
        "name": "ray-job-submitter",
        "image": "rayproject/ray:2.52.0",
        "resources": DEFAULT_RESOURCES,
        "command": ["/bin/bash", "-ce", "--"],
        "args": [rayjob.sidecar_submit_command(job)],
        "env": [
            {"name": "PYTHONUNBUFFERED", "value": "1"},
            {"name": "RAY_DASHBOARD_ADDRESS"},
            {"name": "RAY_JOB_SUBMISSION_ID", "value": "test-rayjob-zz9zz"},
            {"name": "RAY_AUTH_MODE", "value": "token"},
            {
                "name": "RAY_AUTH_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": "test-rayjob-abcde", "key": "auth_token"}},
            },
        ],
    }
    assert "http://127.0.0.1:9000" in head["containers"][1]["args"][0]
    # No batch scheduler metadata outside K8sJobMode [KubeRay quirk]; the RayJob's own spec is untouched.
    assert "scheduling.k8s.io/group-name" not in built["metadata"]["annotations"]
    assert len(job.spec.ray_cluster_spec.head_group_spec.template["spec"]["containers"]) == 1  # type: ignore[union-attr]


def test_rayjob_cluster_sidecar_mode_with_sidecar_submitter_restart() -> None:
    """rayjob_controller_unit_test.go (v1.7.0) with SidecarSubmitterRestart (RJ-6): the submitter container gets
    ``restartPolicy: OnFailure`` and the idempotent command; the head Pod's own restartPolicy stays Never."""
    job = _rayjob(
        {"rayClusterSpec": _head(), "entrypoint": "python run.py", "submissionMode": "SidecarMode"},
        status={"jobId": "test-rayjob-zz9zz"},
    )
    options = BuildOptions(features={**c.FEATURE_GATE_DEFAULTS, "SidecarSubmitterRestart": True})
    head = rayjob.rayjob_cluster(job, "test-rayjob-abcde", options)["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["restartPolicy"] == "Never"
    submitter = head["containers"][1]
    assert submitter["name"] == "ray-job-submitter"
    assert submitter["restartPolicy"] == "OnFailure"
    assert submitter["args"] == [rayjob.sidecar_submit_command(job, sidecar_restart=True)]
    assert " ; if ! ray job status --address http://127.0.0.1:8265 test-rayjob-zz9zz " in submitter["args"][0]
    assert submitter["args"][0].endswith(
        " ; fi ; ray job logs --address http://127.0.0.1:8265 --follow test-rayjob-zz9zz"
    )
    # Gate off (the default): no container restartPolicy, the blocking submit.
    off = rayjob.rayjob_cluster(job, "test-rayjob-abcde", OPTIONS)["spec"]["headGroupSpec"]["template"]["spec"]
    assert "restartPolicy" not in off["containers"][1]
    assert "if ! ray job status" not in off["containers"][1]["args"][0]


def test_rayjob_cluster_batch_scheduler_metadata_in_k8s_job_mode() -> None:
    spec = _head()
    volcano = _rayjob({"rayClusterSpec": spec}, labels={"volcano.sh/queue-name": "q"})
    built = rayjob.rayjob_cluster(volcano, "test-rayjob-abcde", BuildOptions(batch_scheduler="volcano"))
    assert built["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "ray-test-rayjob-pg",
        "volcano.sh/task-spec": "",
    }
    assert built["metadata"]["labels"]["volcano.sh/queue-name"] == "q"
    assert "schedulerName" not in built["spec"]  # KubeRay sets it on Pods and Pod templates only

    labels = {
        "yunikorn.apache.org/app-id": "job-1-01234",
        "yunikorn.apache.org/queue": "root.default",
        "ray.io/gang-scheduling-enabled": "true",
    }
    yunikorn = _rayjob({"rayClusterSpec": spec}, labels=labels)
    built = rayjob.rayjob_cluster(yunikorn, "test-rayjob-abcde", BuildOptions(batch_scheduler="yunikorn"))
    assert built["metadata"]["labels"]["applicationId"] == "job-1-01234"
    assert built["metadata"]["labels"]["queue"] == "root.default"
    groups = json.loads(built["metadata"]["annotations"]["yunikorn.apache.org/task-groups"])
    assert [g["name"] for g in groups] == ["headgroup", "submittergroup"]
    assert "yunikorn.apache.org/task-group-name" not in built["metadata"]["annotations"]


def test_rayjob_cluster_needs_a_cluster_spec() -> None:
    with pytest.raises(rayjob.RayJobBuildError, match="no rayClusterSpec"):
        rayjob.rayjob_cluster(_rayjob({"clusterSelector": {"ray.io/cluster": "c"}}), "c", OPTIONS)


# --------------------------------------------------------------------------------------------------------------------
# The head Service (BuildHeadServiceForRayJob)
# --------------------------------------------------------------------------------------------------------------------


def test_rayjob_head_service() -> None:
    spec = _head(ports=[{"name": "dashboard", "containerPort": 8265}, {"containerPort": 10001}])
    spec["headGroupSpec"]["template"]["metadata"] = {"labels": {"app.kubernetes.io/name": "custom"}}  # ignored here
    spec["headServiceAnnotations"] = {"ignored": "too"}
    cluster = _cluster(spec)
    assert rayjob.rayjob_head_service(_rayjob({"rayClusterSpec": spec}), cluster, OPTIONS) == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "test-rayjob-head-svc",
            "namespace": "default",
            "labels": {
                "ray.io/originated-from-cr-name": "test-rayjob",
                "ray.io/originated-from-crd": "RayJob",
                "ray.io/node-type": "head",
                "ray.io/identifier": "test-rayjob-head",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "selector": {
                "ray.io/cluster": "test-rayjob-abcde",
                "ray.io/node-type": "head",
                "ray.io/identifier": "test-rayjob-abcde-head",
                "app.kubernetes.io/name": "kuberay",
                "app.kubernetes.io/created-by": "kuberay-operator",
            },
            "ports": [
                {"name": "10001-port", "port": 10001, "appProtocol": "tcp"},
                {"name": "dashboard", "port": 8265, "appProtocol": "tcp"},
                {"name": "metrics", "port": 8080, "appProtocol": "tcp"},
            ],
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
        },
    }
    plain = rayjob.rayjob_head_service(
        _rayjob({"rayClusterSpec": spec}), cluster, BuildOptions(head_cluster_ip_service=True)
    )
    assert "clusterIP" not in plain["spec"]


def test_rayjob_head_service_from_a_custom_head_service() -> None:
    job = _sample_rayjob("ray-job.custom-head-svc.yaml", {})
    assert job.spec is not None
    assert job.spec.ray_cluster_spec is not None
    cluster = _cluster(job.spec.ray_cluster_spec.to_wire(), name="rayjob-sample-abcde")
    service = rayjob.rayjob_head_service(job, cluster, OPTIONS)
    assert job.spec.ray_cluster_spec.head_group_spec.head_service == {
        "metadata": {"name": "custom-ray-head-service-name"}
    }
    assert service["metadata"]["name"] == "rayjob-sample-head-svc"
    assert service["metadata"]["ownerReferences"] == [{**OWNER, "name": "rayjob-sample"}]
    assert service["metadata"]["labels"]["ray.io/originated-from-cr-name"] == "rayjob-sample"
    assert service["spec"]["selector"]["ray.io/cluster"] == "rayjob-sample-abcde"
    assert [port["name"] for port in service["spec"]["ports"]] == sorted(services.service_ports(cluster))
    assert "clusterIP" not in service["spec"]  # a custom head Service is never made headless


# --------------------------------------------------------------------------------------------------------------------
# Names and the dashboard URL
# --------------------------------------------------------------------------------------------------------------------


def test_dashboard_url() -> None:
    """rayservice_controller_unit_test.go TestFetchHeadServiceURL, plus the missing port and CLUSTER_DOMAIN."""
    service = {
        "metadata": {"name": "test-cluster-head-svc", "namespace": "ray"},
        "spec": {"ports": [{"name": "dashboard", "port": 9999}]},
    }
    assert rayjob.dashboard_url(service) == "test-cluster-head-svc.ray.svc.cluster.local:9999"
    assert (
        rayjob.dashboard_url(service, cluster_domain="corp.example")
        == "test-cluster-head-svc.ray.svc.corp.example:9999"
    )
    with pytest.raises(rayjob.RayJobBuildError, match=r"^dashboard port is not found$"):
        rayjob.dashboard_url({**service, "spec": {"ports": [{"name": "client", "port": 10001}]}})


def test_new_names_are_k8s_rand_strings_from_the_given_source() -> None:
    job = _rayjob({"entrypoint": "x"}, name="rayjob-sample")
    first = rayjob.new_job_id(job, random.Random(7))  # noqa: S311 - seeded, so repeatable
    assert first == rayjob.new_job_id(job, random.Random(7))  # noqa: S311
    assert first.startswith("rayjob-sample-")
    assert len(first) == len("rayjob-sample-") + 5
    assert set(first.removeprefix("rayjob-sample-")) <= set("bcdfghjklmnpqrstvwxz2456789")
    names = {rayjob.new_cluster_name(job) for _ in range(20)}
    assert len(names) > 1


# --------------------------------------------------------------------------------------------------------------------
# HTTPMode: the submit request (dashboardclient.ConvertRayJobToReq + json.Marshal)
# --------------------------------------------------------------------------------------------------------------------

_DASHBOARD_RUNTIME_ENV = """working_dir: "./"
pip:
- requests==2.26.0
- pendulum==2.1.2
conda:
  dependencies:
  - pytorch
  - torchvision
  - pip
  - pip:
    - pendulum
eager_install: false"""


def test_convert_ray_job_to_req() -> None:
    """dashboard_httpclient_test.go: "Test ConvertRayJobToReq" and "... with EntrypointResources"."""
    job = _rayjob(
        {"entrypoint": "python samply.py", "metadata": {"owner": "test1"}, "runtimeEnvYAML": _DASHBOARD_RUNTIME_ENV},
        name="rayjob-sample",
    )
    request = rayjob.submit_request(job)
    assert len(request["runtime_env"]) == 4
    assert request["runtime_env"]["working_dir"] == "./"
    assert request["runtime_env"]["eager_install"] is False
    job = _rayjob({"entrypointResources": '{"r1": 0.1, "r2": 0.2}', "entrypointNumCpus": 1.1, "entrypointNumGpus": 2.2})
    assert rayjob.submit_request_body(job) == (
        b'{"entrypoint_resources":{"r1":0.1,"r2":0.2},"entrypoint":"","entrypoint_num_cpus":1.1,"entrypoint_num_gpus":2.2}'
    )


def test_convert_ray_job_to_req_with_invalid_entrypoint_resources() -> None:
    """dashboard_httpclient_test.go "Test ConvertRayJobToReq with invalid EntrypointResources"."""
    with pytest.raises(rayjob.RayJobBuildError, match=r"^json: cannot unmarshal string into Go value of type float32$"):
        rayjob.submit_request_body(_rayjob({"entrypointResources": '{"r1": "string"}'}))
    with pytest.raises(
        rayjob.RayJobBuildError, match=r"^json: cannot unmarshal array into Go value of type map\[string\]float32$"
    ):
        rayjob.submit_request_body(_rayjob({"entrypointResources": "[]"}))
    with pytest.raises(
        rayjob.RayJobBuildError, match=r"^json: cannot unmarshal number 1e39 into Go value of type float32$"
    ):
        rayjob.submit_request_body(_rayjob({"entrypointResources": '{"a": 1e39}'}))
    with pytest.raises(rayjob.RayJobBuildError, match=r"types\.RuntimeEnvType$"):
        rayjob.submit_request_body(_rayjob({"runtimeEnvYAML": "- a"}))


_ODD_SPEC: dict[str, Any] = {
    "entrypoint": "  python -c 'print(1 < 2 & 3 > 2)'  ",
    "runtimeEnvYAML": (
        "config: {setup_timeout_seconds: 600}\nb: 1.0\nc: 12345678901234567890\nd: 1e-7\ne: [1.5, yes, ~]\n"
    ),
    "metadata": {"owner": "<me & you>", "a": "1"},
    "entrypointResources": '{"r2": 0.2, "r1": 0.1, "tiny": 1e-7, "big": 1e30, "nothing": null}',
    "entrypointNumCpus": 1.1,
    "entrypointNumGpus": 2.2,
}


def test_submit_request_body_is_go_s_bytes() -> None:
    """Go's body: struct order, maps sorted, float64 runtime-env numbers, float32 shortest digits, <&> escaped, the
    entrypoint as written."""
    body = rayjob.submit_request_body(_rayjob(_ODD_SPEC, status={"jobId": "x-abcde"}, name="x"))
    assert body == (
        b'{"runtime_env":{"b":1,"c":12345678901234567000,"config":{"setup_timeout_seconds":600},"d":1e-7,'
        b'"e":[1.5,true,null]},"metadata":{"a":"1","owner":"\\u003cme \\u0026 you\\u003e"},"entrypoint_resources":'
        b'{"big":1e+30,"nothing":0,"r1":0.1,"r2":0.2,"tiny":1e-7},"entrypoint":"  python -c \'print(1 \\u003c 2 '
        b'\\u0026 3 \\u003e 2)\'  ","submission_id":"x-abcde","entrypoint_num_cpus":1.1,"entrypoint_num_gpus":2.2}'
    )
    request = rayjob.submit_request(_rayjob(_ODD_SPEC, status={"jobId": "x-abcde"}, name="x"))
    assert request["runtime_env"]["config"]["setup_timeout_seconds"] == 600  # an int for Ray, as Go sends it
    assert isinstance(request["runtime_env"]["config"]["setup_timeout_seconds"], int)
    assert request["entrypoint_num_cpus"] == 1.1


def test_submit_request_sample_bodies() -> None:
    status = {"jobId": "rayjob-sample-x7k2p"}
    runtime_env = (
        b'"runtime_env":{"env_vars":{"counter_name":"test_counter"},"pip":["requests==2.26.0","pendulum==2.1.2"]}'
    )
    entrypoint = b'"entrypoint":"python /home/ray/samples/sample_code.py","submission_id":"rayjob-sample-x7k2p"'
    assert (
        rayjob.submit_request_body(_sample_rayjob("ray-job.sample.yaml", status))
        == b"{" + runtime_env + b"," + entrypoint + b"}"
    )
    assert rayjob.submit_request_body(_sample_rayjob("ray-job.resources.yaml", status)) == (
        b"{"
        + runtime_env
        + b',"entrypoint_resources":{"resource1":1,"resource2":2},'
        + entrypoint
        + b',"entrypoint_num_cpus":2,"entrypoint_num_gpus":0.5}'
    )


_RUNTIME_ENVS = ["", "# nothing", "{}", "a: 1", "pip: [x]"]


@given(
    entrypoint=st.text(max_size=5),
    metadata=st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    runtime_env=st.sampled_from(_RUNTIME_ENVS),
    resources=st.sampled_from(["", "null", "{}", '{"a": 1}', '{"a": 0}']),
    cpus=st.sampled_from([None, 0, 0.0, -0.0, 1e-46, 0.5, -1]),
    gpus=st.sampled_from([None, 0, 2]),
    job_id=st.sampled_from(["", "job-abcde"]),
)
def test_submit_request_omits_empty_fields(
    entrypoint: str,
    metadata: dict[str, str],
    runtime_env: str,
    resources: str,
    cpus: float | None,
    gpus: float | None,
    job_id: str,
) -> None:
    """RayJobRequest's omitempty: every key but entrypoint is absent exactly when its value is empty or zero (as a
    float32: 1e-46 is 0), and the keys keep the struct's order."""
    spec: dict[str, Any] = {"entrypoint": entrypoint, "metadata": metadata, "runtimeEnvYAML": runtime_env}
    spec.update(entrypointResources=resources, entrypointNumCpus=cpus, entrypointNumGpus=gpus)
    body = rayjob.submit_request_body(_rayjob(spec, status={"jobId": job_id}))
    request = json.loads(body)
    expected_keys = [
        key
        for key, present in (
            ("runtime_env", runtime_env in ("a: 1", "pip: [x]")),
            ("metadata", bool(metadata)),
            ("entrypoint_resources", resources.startswith('{"')),
            ("entrypoint", True),
            ("submission_id", bool(job_id)),
            ("entrypoint_num_cpus", cpus not in (None, 0, 1e-46)),
            ("entrypoint_num_gpus", gpus not in (None, 0)),
        )
        if present
    ]
    assert list(request) == expected_keys
    assert json.loads(body)["entrypoint"] == json.loads(gojson.json_string(entrypoint))


# --------------------------------------------------------------------------------------------------------------------
# KubeRay's samples
# --------------------------------------------------------------------------------------------------------------------

_SAMPLE_SVC = "rayjob-sample-raycluster-b9zfh-head-svc"


def _sample_doc(path: Path) -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == "RayJob"]
    metadata = doc["metadata"]
    metadata.update(uid=UID, namespace=metadata.get("namespace", "default"))
    if "name" not in metadata:  # the API server names it from generateName
        metadata["name"] = metadata.pop("generateName") + "q8x2v"
    return dict(doc)


def _sample_rayjob(name: str, status: dict[str, Any]) -> RayJob:
    doc = _sample_doc(SAMPLES / name)
    doc["status"] = status
    return RayJob.model_validate(doc)


SAMPLE_FILES = sorted(path.name for path in SAMPLES.glob("ray-job.*.yaml"))


def test_every_rayjob_sample_is_found() -> None:
    assert len(SAMPLE_FILES) >= 15


@pytest.mark.parametrize("name", SAMPLE_FILES)
@pytest.mark.parametrize("scheduler", ["", "volcano", "yunikorn"])
def test_samples_build(name: str, scheduler: str) -> None:
    options = BuildOptions(batch_scheduler=scheduler)
    rng = random.Random(name)  # noqa: S311 - seeded, so repeatable
    job = _sample_rayjob(name, {})
    assert job.spec is not None
    job_id = job.spec.job_id or rayjob.new_job_id(job, rng)
    mode = job.spec.submission_mode or c.SUBMISSION_MODE_K8S_JOB
    if job.spec.ray_cluster_spec is not None:
        cluster_name = rayjob.new_cluster_name(job, rng)
        built = rayjob.rayjob_cluster(job, cluster_name, options, job_id=job_id, dashboard_url="")
        assert built["metadata"]["labels"][c.RAY_JOB_SUBMISSION_MODE_LABEL] == mode
        cluster = RayCluster.model_validate({**built, "metadata": {**built["metadata"], "uid": CLUSTER_UID}})
    else:
        selected = (job.spec.cluster_selector or {})[c.RAY_CLUSTER_LABEL]
        cluster = _cluster(_head(), name=selected)
    service = rayjob.rayjob_head_service(job, cluster, options)
    assert service["metadata"]["name"] == f"{job.metadata['name']}-head-svc"
    url = rayjob.dashboard_url(services.head_service(cluster, options))
    if mode == c.SUBMISSION_MODE_K8S_JOB:
        submitter = rayjob.submitter_job(job, cluster, options, job_id=job_id, dashboard_url=url)
        container = submitter["spec"]["template"]["spec"]["containers"][0]
        if container["command"] == ["/bin/bash", "-ce", "--"]:
            assert container["args"] == [rayjob.k8s_job_submit_command(job, dashboard_url=url, job_id=job_id)]
    if mode == c.SUBMISSION_MODE_SIDECAR:
        head = cluster.spec.head_group_spec.template["spec"]  # type: ignore[union-attr]
        assert head["containers"][-1]["name"] == c.SUBMITTER_CONTAINER_NAME
    request = rayjob.submit_request(job, job_id=job_id)
    assert request["submission_id"] == job_id


def test_yunikorn_gang_without_a_head_container_is_a_batch_scheduling_error() -> None:
    spec = {"rayVersion": "2.52.0", "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": []}}}}
    job = _rayjob({"rayClusterSpec": spec}, labels={"ray.io/gang-scheduling-enabled": "true"})
    with pytest.raises(batch.BatchSchedulingError, match="no containers"):
        rayjob.rayjob_cluster(job, "test-rayjob-abcde", BuildOptions(batch_scheduler="yunikorn"))

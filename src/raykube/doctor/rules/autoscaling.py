"""What Ray's autoscaler cannot do: a resource request (a task, an actor, a placement-group bundle) that no worker
group's Pod can hold, so no number of new Pods places it. Ray says so in the autoscaler's log (``monitor.log`` on
the head, read with ``--exec``); the doctor sets each group's logical resources beside it (what KubeRay writes into
``ray start``: :func:`raykube.doctor.facts.ray_resources`), and stays quiet once a group fits or ``ray status`` shows
no demand waiting."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor import tokens as t
from raykube.doctor.facts import inside as fi
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import STAGE_SPEC, STAGE_WORKERS, checker, field_evidence, finding, listing, rule
from raykube.doctor.snapshot import Snapshot
from raykube.kube import objects

DEMAND_INFEASIBLE = rule(
    "G10",
    "AUTOSCALER_DEMAND_INFEASIBLE",
    STAGE_WORKERS,
    "The autoscaler cannot place a resource request: no worker group's Pod gives Ray that much (logical resources)",
    ["ray-project/ray#27910", "ray-project/kuberay#653"],
)
NO_WORKER_GROUPS = rule(
    "G11",
    "AUTOSCALER_WITHOUT_WORKER_GROUPS",
    STAGE_SPEC,
    "The autoscaler is on but spec.workerGroupSpecs is absent: Ray's autoscaler stops on it (KeyError), the head "
    "is not Ready",
)

# Resources Ray detects itself when ``ray start`` is not told (the node's cores and memory): a group that does not
# say may fit, so the doctor does not judge it. Any other resource a group does not name, it does not have.
DETECTED: Final = frozenset({"CPU", "memory", "object_store_memory"})
_GIB: Final = 1 << 30


@checker(NO_WORKER_GROUPS)
def check_no_worker_groups(snap: Snapshot) -> Iterator[Finding]:
    """Ray's autoscaler reads the RayCluster's ``spec["workerGroupSpecs"]`` with no default (``autoscaling_config.py``,
    Ray 2.52): a RayCluster that leaves the field out (not an empty list) stops the autoscaler container at start,
    again and again, and with it the head Pod's readiness. Seen on process nodes with a head-only RayService."""
    for view in facts.cluster_views(snap):
        if not view.spec.get("enableInTreeAutoscaling") or "workerGroupSpecs" in view.spec:
            continue
        head = view.head
        evidence = [
            field_evidence(view.ref, "spec.enableInTreeAutoscaling", True, "cr.spec"),
            field_evidence(view.ref, "spec.workerGroupSpecs", "absent", "cr.spec"),
        ]
        if head is not None:
            pod = facts.ref(head, "Pod")
            evidence += [
                field_evidence(pod, f"{st.path}.restartCount", st.restarts, "pod.status")
                for st in facts.container_states(head)
                if st.name == c.AUTOSCALER_CONTAINER_NAME and st.restarts
            ]
        yield finding(
            NO_WORKER_GROUPS,
            cluster=view.ref,
            obj=view.ref,
            severity="error",
            title=f"RayCluster {view.ref.name} turns the autoscaler on but has no spec.workerGroupSpecs: Ray's "
            "autoscaler stops at start (KeyError 'workerGroupSpecs') and the head Pod is not Ready",
            evidence=evidence,
            explanation="The autoscaler builds its node types from spec.workerGroupSpecs and has no default for a "
            "missing field; its container exits at start and restarts, and a Pod with a container that is not "
            "ready is not Ready, so the RayCluster never is.",
            remediation=["Add spec.workerGroupSpecs: [] (or a worker group), or set enableInTreeAutoscaling: false."],
            # its container's crash loop (D07 says it of the head's ray start) and the head's readiness hang under it
            effects={t.head(view.key)}
            | ({t.pod_ready(s.key_of(head)), t.ray_start(s.key_of(head))} if head is not None else set()),
        )


@checker(DEMAND_INFEASIBLE)
def check_infeasible_demands(snap: Snapshot) -> Iterator[Finding]:
    for view in facts.cluster_views(snap):
        head = view.head
        if head is None or not view.spec.get("enableInTreeAutoscaling"):
            continue
        hits = [h for h in fi.log_hits(snap, head) if h.sign.key == "infeasible"]
        if not hits:
            continue
        read = fi.ray_status(snap, head)
        if read is not None and not read[0].demands:
            continue  # Ray has nothing waiting now: the line is from a demand that went away
        offers = {
            f"{group.path} ({group.name})": facts.ray_resources(group.spec, head=False)
            for group in view.groups
            if _can_grow(group.spec)
        }
        head_offer = facts.ray_resources(view.head_spec, head=True)
        everywhere = [head_offer, *offers.values()]
        stuck = [r for h in hits for r in fi.resource_requests(h.line) if not _fits_somewhere(r, everywhere)]
        stuck = [r for i, r in enumerate(stuck) if r not in stuck[:i]]
        if not stuck:
            continue
        said = [h for h in hits if stuck[0] in fi.resource_requests(h.line)][-1]
        yield _finding(view.ref, view.key, head, stuck, said, offers, head_offer, read)


def _can_grow(group: Mapping[str, object]) -> bool:
    """A worker group the autoscaler may add Pods to: maxReplicas above 0 (the CRD's default is 2^31-1), not
    suspended."""
    most = group.get("maxReplicas", c.DEFAULT_MAX_REPLICAS)
    return isinstance(most, int) and not isinstance(most, bool) and most > 0 and not group.get("suspend")


def _fits_somewhere(request: Mapping[str, float], offers: list[dict[str, float]]) -> bool:
    return any(_fits(request, offer) for offer in offers)


def _fits(request: Mapping[str, float], offer: Mapping[str, float]) -> bool:
    for name, amount in request.items():
        if amount <= 0 or "_group_" in name:  # a placement group's own resources follow its bundles
            continue
        if name in offer:
            if offer[name] < amount:
                return False
        elif name not in DETECTED:  # a resource Ray counts at start may fit; any other the group does not have
            return False
    return True


def describe(offer: Mapping[str, float]) -> str:
    """``CPU 1, memory 1Gi, GPU 0``: a group's logical resources as a person reads them."""
    if not offer:
        return "nothing set (Ray detects the node's CPUs and memory)"
    parts = []
    for name in sorted(offer, key=lambda n: (n not in ("CPU", "GPU", "memory"), n)):
        value = offer[name]
        if name == "memory":
            parts.append(f"memory {value / _GIB:g}Gi" if value >= _GIB / 16 else f"memory {value:g}")
        else:
            parts.append(f"{name} {value:g}")
    return ", ".join(parts)


def _finding(  # noqa: PLR0917 - one call site, every argument a different fact
    ref: ObjectRef,
    key: str,
    head: s.Obj,
    stuck: list[dict[str, float]],
    hit: fi.LogHit,
    offers: Mapping[str, dict[str, float]],
    head_offer: Mapping[str, float],
    read: tuple[fi.RayStatus, str] | None,
) -> Finding:
    head_ref = facts.ref(head, "Pod")
    evidence: list[Evidence] = [Evidence(source="log", object=head_ref, path=hit.source, value=hit.line)]
    if read is not None:
        evidence += [field_evidence(head_ref, "ray status: pending demand", d, "ray") for d in read[0].demands[:3]]
    evidence += [field_evidence(ref, f"{path} gives Ray", describe(offer), "object") for path, offer in offers.items()]
    evidence.append(field_evidence(ref, "spec.headGroupSpec gives Ray", describe(head_offer), "object"))
    wanted = listing(str(r) for r in stuck)
    container = facts.ray_container(head.get("spec") or {}).get("name") or "ray-head"
    return finding(
        DEMAND_INFEASIBLE,
        cluster=ref,
        obj=ref,
        severity="error",
        title=f"The autoscaler cannot place {wanted}: no worker group's Pod gives Ray that much, so adding Pods "
        "does not help and what asks for it waits",
        evidence=evidence,
        explanation="Ray's autoscaler adds Pods of a worker group only when one Pod of that group can hold the whole "
        "request of a task, an actor or a placement-group bundle. What a Pod gives Ray is its logical resources, "
        "which KubeRay passes to `ray start`: rayStartParams num-cpus, num-gpus, memory and resources, else the Ray "
        "container's limits (500m CPU counts as 1). A request larger than every group's Pod is infeasible: "
        "raising maxReplicas changes nothing, and the job or Serve replica that made it waits without an error.",
        remediation=[
            "Give a worker group Pods that hold the request: the Ray container's limits (cpu, memory, GPUs) or "
            "rayStartParams num-cpus / num-gpus / resources; the Pod must still fit a node (else it stays Pending, "
            "B02).",
            "Or ask for less per task, actor or bundle (`@ray.remote(num_cpus=...)`, a RayJob's "
            "entrypointNumCpus): one request must fit in one Pod.",
            f"kubectl exec {objects.name(head)} -n {objects.namespace(head)} -c {container} -- ray status -v   "
            "(Pending Demands)",
        ],
        effects={t.runs_on(key)},
    )

"""Bad input: malformed and hostile RayClusters against a running operator, with a healthy cluster beside them.

Each bad RayCluster must be refused with the field named: by the API server (the CRD schema, a 422 whose message
names the path) or, once stored, by the operator (a Warning ``InvalidRayClusterSpec``/``Metadata`` event whose note
names the path). Hostile but valid input (huge lists, unicode, absurd numbers the operator clamps, Pods the API server
will refuse) must only never hurt: the operator reconciles it (or says why in an event) and goes on. Throughout, the
operator runs as its own process (``raykube operator``), so the test also sees that it never exits and that its
memory stays flat, and a healthy RayCluster beside the bad ones must still follow a scale-up at the end.

Hand-written cases plus hypothesis-generated ones (a seeded, reproducible draw: mutations of a valid cluster at
random paths with values of the wrong type or range). The short profile (``make test``) runs every hand-written case
and 20 drawn; the full one (``make reliability``) 120 drawn. The result is a row of the reliability ledger.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from raykube.api.resources import RAYCLUSTERS
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import EVENTS, PODS
from raykube.waiting import NotYet, wait_for
from tests.integration.test_operator_restart import tiny_cluster
from tests.ledger import FULL, Ledger

Mutation = Callable[[dict[str, Any]], None]
DRAWN = 120 if FULL else 20
RSS_ROUND_LIMIT_MIB = 8.0  # no leak per RayCluster: a second create-and-delete round of the same ones
RSS_GROWTH_LIMIT_MIB = 40.0  # "flat": the operator's resident memory after all cases vs before, after a warm-up


def valid(name: str) -> dict[str, Any]:
    return tiny_cluster(name, workers=1)


def group(body: dict[str, Any], index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = body["spec"]["workerGroupSpecs"][index]
    return found


def head(body: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = body["spec"]["headGroupSpec"]
    return found


def ray_container(spec: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = spec["template"]["spec"]["containers"][0]
    return found


def put(path: str, value: Any) -> Mutation:
    """Set the value at a dotted path (``spec.workerGroupSpecs.0.replicas``), creating maps on the way."""

    def mutate(body: dict[str, Any]) -> None:
        keys = path.split(".")
        node: Any = body
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        last = keys[-1]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def drop(path: str) -> Mutation:
    def mutate(body: dict[str, Any]) -> None:
        keys = path.split(".")
        node: Any = body
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node.pop(keys[-1], None)

    return mutate


def both(*mutations: Mutation) -> Mutation:
    def mutate(body: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(body)

    return mutate


@dataclass(frozen=True)
class Case:
    name: str
    mutate: Mutation
    field: str  # what a refusal must name (a path fragment)
    hostile: bool = False  # valid but odd: it must only not hurt (whatever the operator says, it says and goes on)
    drawn: bool = False  # drawn at random: refused naming the field, or reconciled


W = "spec.workerGroupSpecs.0"
H = "spec.headGroupSpec"


def _duplicate_group(body: dict[str, Any]) -> None:
    body["spec"]["workerGroupSpecs"].append(copy.deepcopy(group(body)))


def _no_containers(body: dict[str, Any]) -> None:
    head(body)["template"]["spec"]["containers"] = []


def _long_group(body: dict[str, Any]) -> None:
    group(body)["groupName"] = "g" * 60


def _many_to_delete(body: dict[str, Any]) -> None:
    group(body)["scaleStrategy"] = {"workersToDelete": [f"pod-{i}" for i in range(5000)]}


def _unicode_params(body: dict[str, Any]) -> None:
    head(body)["rayStartParams"] = {"metrics-export-port": "8080", "label-🙂": "värde-日本"}


def _huge_annotation(body: dict[str, Any]) -> None:
    body["metadata"]["annotations"] = {"note": "x" * 300_000}


def _bad_port(body: dict[str, Any]) -> None:
    ray_container(head(body))["ports"] = [{"name": "gcs", "containerPort": 70000}]


def _requests_over_limits(body: dict[str, Any]) -> None:
    ray_container(group(body))["resources"] = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}


def _bad_template_label(body: dict[str, Any]) -> None:
    head(body)["template"]["metadata"] = {"labels": {"bad label!": "x"}}


CASES: list[Case] = [
    Case("negative replicas (KubeRay clamps to minReplicas)", put(f"{W}.replicas", -1), "", hostile=True),
    Case("negative minReplicas", put(f"{W}.minReplicas", -1), "minReplicas"),
    Case("negative maxReplicas", put(f"{W}.maxReplicas", -5), "maxReplicas"),
    Case("minReplicas above maxReplicas", both(put(f"{W}.minReplicas", 5), put(f"{W}.maxReplicas", 2)), "minReplicas"),
    Case("replicas beyond int32", put(f"{W}.replicas", 2**31), "replicas"),
    Case("replicas as a string", put(f"{W}.replicas", "three"), "replicas"),
    Case("numOfHosts zero (no Pods for the group, as KubeRay)", put(f"{W}.numOfHosts", 0), "", hostile=True),
    Case("numOfHosts negative (no Pods for the group)", put(f"{W}.numOfHosts", -2), "", hostile=True),
    Case("rayStartParams value an int", put(f"{H}.rayStartParams", {"num-cpus": 4}), "rayStartParams"),
    Case("rayStartParams a list", put(f"{H}.rayStartParams", ["num-cpus=4"]), "rayStartParams"),
    Case("duplicate group names", _duplicate_group, "workerGroupSpecs[1]"),
    Case("a head template with no containers", _no_containers, "containers"),
    Case("no headGroupSpec", drop(H), "headGroupSpec"),
    Case("a headGroupSpec without template", drop(f"{H}.template"), "template"),
    Case("a worker group without groupName", drop(f"{W}.groupName"), "groupName"),
    Case("a worker group without template", drop(f"{W}.template"), "template"),
    Case("unknown upgradeStrategy", put("spec.upgradeStrategy", {"type": "Bogus"}), "upgradeStrategy"),
    Case("enableInTreeAutoscaling a string", put("spec.enableInTreeAutoscaling", "yes"), "enableInTreeAutoscaling"),
    Case("suspend a string", put("spec.suspend", "true"), "suspend"),
    Case("unknown upscalingMode", put("spec.autoscalerOptions", {"upscalingMode": "Fast"}), "upscalingMode"),
    Case("unknown authOptions mode", put("spec.authOptions", {"mode": "password"}), "mode"),
    Case("headGroupSpec a list", put(H, []), "headGroupSpec"),
    Case("workerGroupSpecs a map", put("spec.workerGroupSpecs", {"small": {}}), "workerGroupSpecs"),
    Case("spec a string", put("spec", "please"), "spec"),
    Case("a 253-character name", put("metadata.name", "n" * 253), "name"),
    Case("a 64-character name", put("metadata.name", "n" * 64), "name"),
    Case("a name with unicode", put("metadata.name", "räy-clüster"), "name"),
    Case("a name with capitals", put("metadata.name", "RayCluster"), "name"),
    Case("a 60-character group name (Pod names are cut, as KubeRay)", _long_group, "", hostile=True),
    # KubeRay v1.7.0 made redisAddress optional (it may come from the head's env); the backend is an enum.
    Case("an unknown GCS FT backend", put("spec.gcsFaultToleranceOptions", {"backend": "etcd"}), "backend"),
    Case(
        "GCS FT options and the annotation saying off",
        both(
            put("metadata.annotations", {"ray.io/ft-enabled": "false"}),
            put("spec.gcsFaultToleranceOptions", {"redisAddress": "redis:6379"}),
        ),
        "ft-enabled",
    ),
    Case("managedBy an unknown controller", put("spec.managedBy", "example.com/other"), "managedBy"),
    Case("idleTimeoutSeconds negative", put(f"{W}.idleTimeoutSeconds", -30), "idleTimeoutSeconds"),
    Case("headServiceAnnotations a list", put("spec.headServiceAnnotations", ["a=b"]), "headServiceAnnotations"),
    Case("serviceType unknown (the Service the API server refuses)", put(f"{H}.serviceType", "Sideways"), "spec.type"),
    Case("an annotation of 300 kB", _huge_annotation, "annotations"),
    Case("a container port above 65535", _bad_port, "", hostile=True),
    Case("requests above limits", _requests_over_limits, "", hostile=True),
    Case("a template label Kubernetes refuses", _bad_template_label, "", hostile=True),
    Case("5,000 workersToDelete", _many_to_delete, "", hostile=True),
    Case("unicode in rayStartParams", _unicode_params, "", hostile=True),
    Case("replicas far above maxReplicas (clamped)", put(f"{W}.replicas", 2_000_000), "", hostile=True),
    Case(
        "maxReplicas zero with replicas 3 (clamped)",
        both(put(f"{W}.replicas", 3), put(f"{W}.maxReplicas", 0)),
        "",
        hostile=True,
    ),
    Case("an empty image", put(f"{H}.template.spec.containers.0.image", ""), "", hostile=True),
    Case("rayVersion not a version", put("spec.rayVersion", "latest-and-greatest"), "", hostile=True),
    Case("no workerGroupSpecs (head only)", drop("spec.workerGroupSpecs"), "", hostile=True),
]

# Random paths of the valid cluster and values of every odd kind, for the drawn cases.
DRAW_PATHS = [
    f"{W}.replicas", f"{W}.minReplicas", f"{W}.maxReplicas", f"{W}.numOfHosts", f"{W}.groupName",
    f"{W}.rayStartParams", f"{H}.rayStartParams", "spec.rayVersion", "spec.enableInTreeAutoscaling", "spec.suspend",
    f"{H}.serviceType", "spec.managedBy", f"{W}.idleTimeoutSeconds", f"{W}.suspend", "spec.upgradeStrategy",
]  # fmt: skip
ODD_VALUES = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.text(max_size=80),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3),
    st.floats(allow_nan=False, allow_infinity=False),
)


def drawn_cases(count: int) -> list[Case]:
    cases: list[Case] = []

    @seed(20261204)
    @settings(max_examples=count, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(path=st.sampled_from(DRAW_PATHS), value=ODD_VALUES)
    def draw(path: str, value: Any) -> None:
        cases.append(Case(f"drawn: {path.replace(W, 'group').replace(H, 'head')} = {json.dumps(value)[:40]}",
                          put(path, value), path.rsplit(".", 1)[-1], drawn=True))  # fmt: skip

    draw()
    return cases[:count]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _create_all(
    kube: Kube, namespace: str, cases: list[Case]
) -> tuple[dict[str, str], dict[str, Case], list[str]]:
    """Create each case: what the API server refused (and whether it named the field), and what it stored."""
    outcomes: dict[str, str] = {}
    stored: dict[str, Case] = {}
    unnamed: list[str] = []
    for index, case in enumerate(cases):
        body = valid(f"bad-{index}")
        case.mutate(body)
        name = (body.get("metadata") or {}).get("name")
        try:
            await kube.create(RAYCLUSTERS, body, namespace)
        except ApiError as exc:
            if exc.code not in (400, 422) or not (case.hostile or case.field in exc.message):
                unnamed.append(f"{case.name}: {exc.code} {exc.message[:400]}")
            outcomes[case.name] = "refused by the API server"
            continue
        stored[str(name)] = case
    return outcomes, stored, unnamed


async def _answers(kube: Kube, namespace: str, stored: dict[str, Case]) -> dict[str, str] | NotYet:
    """What the operator said about each stored RayCluster: its first Warning (an InvalidRayCluster* one first, the
    note whole), else that it reconciled it (status.observedGeneration set)."""
    warnings: dict[str, list[str]] = {}
    for event in (await kube.list(EVENTS, namespace)).items:
        if event.get("type") == "Warning":
            involved = event.get("involvedObject") or event.get("regarding") or {}
            note = event.get("message") or event.get("note")
            warnings.setdefault(str(involved.get("name")), []).append(f"{event.get('reason')}: {note}")
    clusters = {o["metadata"]["name"]: o for o in (await kube.list(RAYCLUSTERS, namespace)).items}
    seen: dict[str, str] = {}
    waiting = []
    for name, case in stored.items():
        notes = sorted(warnings.get(name, []), key=lambda n: not n.startswith("InvalidRayCluster"))
        status = (clusters.get(name) or {}).get("status") or {}
        if notes:
            seen[name] = "Warning " + notes[0]
        elif status.get("observedGeneration"):
            seen[name] = "reconciled"
        else:
            waiting.append(case.name)
    return seen if not waiting else NotYet(f"no answer yet for {waiting[:5]}")


async def _delete_stored(kube: Kube, namespace: str, pid: int) -> float:
    """Delete every RayCluster but the healthy one, wait until they and their Pods are gone and the operator has
    seen it (the healthy cluster still reconciles), and return the operator's RSS in MiB."""
    for cluster in (await kube.list(RAYCLUSTERS, namespace)).items:
        if cluster["metadata"]["name"] != "steady":
            await kube.delete(RAYCLUSTERS, cluster["metadata"]["name"], namespace)

    async def gone() -> bool | NotYet:
        left = [c["metadata"]["name"] for c in (await kube.list(RAYCLUSTERS, namespace)).items]
        pods = {p["metadata"]["labels"].get("ray.io/cluster") for p in (await kube.list(PODS, namespace)).items}
        return True if left == ["steady"] and pods <= {"steady"} else NotYet(f"{len(left)} left; Pods of {pods}")

    await wait_for(gone, 120, what="the bad RayClusters and their Pods gone")
    return rss_mib(pid)


async def _pods(kube: Kube, namespace: str, cluster: str) -> list[dict[str, Any]]:
    listed = await kube.list(PODS, namespace, label_selector=f"ray.io/cluster={cluster}")
    return [p for p in listed.items if not p["metadata"].get("deletionTimestamp")]


@pytest.mark.reliability("Bad input: malformed and hostile RayClusters")
async def test_bad_and_hostile_rayclusters_are_refused_by_name_and_hurt_nothing(
    runtime_kube: Kube, namespace: str, start_operator: Any, ledger: Ledger
) -> None:
    kube = runtime_kube
    operator_process = start_operator()
    await kube.create(RAYCLUSTERS, valid("steady"), namespace)

    async def steady(workers: int) -> bool | NotYet:
        pods = await _pods(kube, namespace, "steady")
        found = sum(1 for p in pods if p["metadata"]["labels"].get("ray.io/node-type") == "worker")
        return True if found == workers and len(pods) == workers + 1 else NotYet(f"{len(pods)} Pods, {found} workers")

    await wait_for(lambda: steady(1), 60, what="the healthy cluster's head and worker")
    baseline = rss_mib(operator_process.pid)

    cases = [*CASES, *drawn_cases(DRAWN)]
    outcomes, stored, unnamed = await _create_all(kube, namespace, cases)
    assert not unnamed, "refusals that do not name the field:\n" + "\n".join(unnamed)

    async def answered() -> dict[str, str] | NotYet:
        return await _answers(kube, namespace, stored)

    answers = await wait_for(answered, 120, what="the operator's answer to every stored RayCluster")
    wrong = []
    for name, case in stored.items():
        answer = answers[name]
        invalid = answer.startswith("Warning InvalidRayCluster")
        if case.hostile or (case.drawn and not invalid):
            outcomes[case.name] = "stored; " + answer.split(":", 1)[0]
        elif answer.startswith("Warning") and case.field in answer:
            outcomes[case.name] = "stored; operator: " + answer.split(":", 1)[0]
        else:
            wrong.append(f"{case.name}: {answer[:300]}")
    assert operator_process.poll() is None, "the operator exited"
    assert not wrong, "bad input the operator did not refuse by name:\n" + "\n".join(wrong)

    # The healthy cluster beside them still follows its spec.
    # A one-field JSON patch (no resourceVersion): the running operator's status writes cannot turn it into a 409.
    patch = [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 2}]
    await kube.patch(RAYCLUSTERS, "steady", patch, namespace, patch_type="json")
    await wait_for(lambda: steady(2), 60, what="the healthy cluster to scale to 2 workers among the bad ones")
    growth = rss_mib(operator_process.pid) - baseline
    assert operator_process.poll() is None, "the operator exited"
    assert growth < RSS_GROWTH_LIMIT_MIB, f"the operator's RSS grew {growth:.1f} MiB over {len(cases)} bad inputs"

    # Delete them all, then store and delete the same ones once more: the second round must leave no more memory
    # behind than it found (nothing kept per RayCluster after it is gone: cache entries, queue keys, metrics, events).
    # (The full profile only: the garbage collector's part takes a while.)
    rounds = ""
    if FULL:
        after_first = await _delete_stored(kube, namespace, operator_process.pid)
        _, again, _ = await _create_all(kube, namespace, [case for case in cases if case.name in
                                                          {c.name for c in stored.values()}])  # fmt: skip
        await wait_for(lambda: _answers(kube, namespace, again), 120, what="the operator's answers, second round")
        after_second = await _delete_stored(kube, namespace, operator_process.pid)
        assert operator_process.poll() is None, "the operator exited"
        assert after_second - after_first < RSS_ROUND_LIMIT_MIB, (
            f"a second round of the same {len(again)} RayClusters, created and deleted, left the operator "
            f"{after_second - after_first:.1f} MiB bigger"
        )
        rounds = (
            f", {after_first:.0f} MiB once they were deleted, {after_second:.0f} MiB after the same ones were stored "
            "and deleted again"
        )

    refused = sum(1 for o in outcomes.values() if o.startswith("refused"))
    warned = sum(1 for case in cases if not case.hostile and "operator: Warning" in outcomes.get(case.name, ""))
    drawn_outcomes = [outcomes.get(case.name, "") for case in cases if case.drawn]
    valid_drawn = sum(1 for o in drawn_outcomes if o.startswith("stored;") and "operator: Warning" not in o)
    assert refused + warned + sum(c.hostile for c in cases) + valid_drawn == len(cases), outcomes
    ledger.record(
        "Bad input: malformed and hostile RayClusters",
        f"{len(CASES)} hand-written cases ({sum(c.hostile for c in CASES)} hostile but valid) and {DRAWN} drawn by "
        "hypothesis (seeded), created beside a healthy RayCluster, operator as its own process",
        len(cases),
        "every bad one refused naming the field (API server 422 or a Warning event); the operator never exits; the "
        f"healthy cluster scales afterwards; operator RSS growth < {RSS_GROWTH_LIMIT_MIB:.0f} MiB"
        + (
            f"; all deleted, then stored and deleted again: that second round leaves < {RSS_ROUND_LIMIT_MIB:.0f} MiB"
            if FULL
            else ""
        ),
        f"{refused} refused by the API server naming the field, {warned} by an operator Warning naming it; "
        f"{sum(c.hostile for c in CASES)} hostile and {valid_drawn} drawn-but-valid ones stored and answered "
        f"(reconciled, or Kubernetes' refusal of a child quoted in a Warning); operator RSS {baseline:.0f} → "
        f"{baseline + growth:.0f} MiB holding {len(stored)} more RayClusters{rounds}",
        details=[(case.name, outcomes.get(case.name, "")) for case in cases],
    )

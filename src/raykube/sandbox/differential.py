"""The differential against KubeRay v1.7.0: its operator built from source, its samples, and the comparison of the
objects two operators generate from them (``raykube conformance --objects``, run by ``make conformance``).

KubeRay v1.7.0 is the oracle: its operator, samples and CRDs are the conformance runs' (``raykube.sandbox.conformance
.release``: a checkout from ``$KUBERAY_SRC``, else a clone of the tag, the operator built from it and cached by its
commit).

This module is pure: which samples hold a RayCluster, RayJob or RayService and which of their documents are applied;
the masking of what legitimately differs between two runs (uids, resourceVersions, times, IPs, namespaces, the
random name suffixes both operators draw, kubelet and scheduler state); the field-by-field comparison; the Markdown
report. Hashes (``ray.io/hash`` and the other annotations) are compared as they are. Nothing of upstream is copied
into the repository: the samples and CRDs are read from the checkout at run time.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from raykube.sandbox import versions

ORACLE_TAG = f"v{versions.KUBERAY_CONFORMANCE_VERSION}"  # the release whose operator is the oracle

# --------------------------------------------------------------------------------------------------- samples
RAY_KINDS = ("RayCluster", "RayJob", "RayService")
_CORE_APIS = ("v1", "apps/v1", "rbac.authorization.k8s.io/v1")
# What of a sample is applied besides its Ray resources: the namespaced core kinds a sample brings along. Kinds of
# other projects' CRDs (Volcano Queues, Gateways, ...) and cluster-scoped ones are left out: not the operator's part.
COMPANION_KINDS = (
    "ConfigMap",
    "Secret",
    "Service",
    "Deployment",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "PersistentVolumeClaim",
)


@dataclass(frozen=True)
class Sample:
    """One sample file: its path under config/samples and the documents applied from it (namespace removed)."""

    name: str
    documents: tuple[Mapping[str, Any], ...]

    @property
    def resources(self) -> list[tuple[str, str]]:
        """(kind, name) of its Ray resources."""
        return [
            (d["kind"], str(d["metadata"].get("name") or f"{d['metadata'].get('generateName', '')}<generated>"))
            for d in self.documents
            if d["kind"] in RAY_KINDS
        ]


def is_own(sample: Sample, obj: Mapping[str, Any]) -> bool:
    """Whether ``obj`` is one of the sample's own Ray resources (by name, or by generateName when it has one)."""
    meta = obj.get("metadata") or {}
    for doc in sample.documents:
        if doc["kind"] != obj.get("kind") or doc["kind"] not in RAY_KINDS:
            continue
        mine = doc.get("metadata") or {}
        if "name" in mine and mine["name"] == meta.get("name"):
            return True
        if "name" not in mine and mine.get("generateName") and mine.get("generateName") == meta.get("generateName"):
            return True
    return False


def load_sample(path: Path, base: Path) -> Sample | None:
    """The sample at ``path`` if it holds a RayCluster, RayJob or RayService of ``ray.io/v1``."""
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except yaml.YAMLError:
        return None
    if not any(d.get("kind") in RAY_KINDS and d.get("apiVersion") == "ray.io/v1" for d in docs):
        return None
    applied = []
    for doc in docs:
        if doc.get("kind") in RAY_KINDS or (doc.get("kind") in COMPANION_KINDS and doc.get("apiVersion") in _CORE_APIS):
            metadata = {k: v for k, v in (doc.get("metadata") or {}).items() if k != "namespace"}
            applied.append({**doc, "metadata": metadata})
    return Sample(str(path.relative_to(base)), tuple(applied))


def find_samples(samples_dir: Path) -> list[Sample]:
    """Every sample under ``samples_dir`` (subfolders too) with a Ray resource, by path."""
    found = (load_sample(p, samples_dir) for p in sorted(samples_dir.rglob("*.y*ml")))
    return [s for s in found if s is not None]


# --------------------------------------------------------------------------------------------------- masking
# Kinds dumped from each namespace, and which of their objects the operator made: owned by a Ray resource, or
# labelled as KubeRay labels what it creates.
DUMPED_KINDS = (
    "RayCluster",
    "Pod",
    "Service",
    "Ingress",
    "Job",
    "ConfigMap",
    "Secret",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "NetworkPolicy",
)
CREATED_BY = ("app.kubernetes.io/created-by", "kuberay-operator")
HASH_NOTE = (
    "hashes (ray.io/hash and the other annotations) are compared unmasked, but for a head Pod's "
    "`ray.io/upgrade-strategy-recreate-hash` that is the hash of its RayCluster's spec on each side (checked with "
    "raykube's function, held to KubeRay's by its hash vectors), shown as `<spec hash>`: the spec may hold a random "
    "name, and the specs are compared masked"
)
# What replaces a recreate hash checked against its own RayCluster's spec (raykube.cli.differential).
SPEC_HASH = "<spec hash>"
# A RayJob's status.rayClusterStatus is a copy of its RayCluster's status that KubeRay takes only while the RayJob waits
# for the cluster and after a job-info query succeeds (v1.7.0 rayjob_controller.go); kwok's Pods run no Ray, so the
# last copy is of whatever status the cluster had at the RayJob's last reconcile before Ready: a moment set by timing,
# on either operator.
SNAPSHOT = ("RayJob/", ".status.rayClusterStatus")

# KubeRay's random suffixes are utilrand.String(5) (k8s.io/apimachinery: consonants and digits without vowels).
_RAND = r"[bcdfghjklmnpqrstvwxz2456789]{5}"
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_TIME_IN_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2}| UTC)?")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")
_API_ACCESS = re.compile(r"\bkube-api-access-[a-z0-9]{5}\b")
# Set by the API server, the scheduler, the kubelet and the Job controller, not by the operator.
_DROPPED_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "namespace", "selfLink")
_DROPPED_SPEC = {"Pod": ("nodeName",), "Service": ("clusterIP", "clusterIPs")}
_DROPPED_STATUS = ("Pod", "Service", "Ingress", "Job")  # kubelet's, endpoints', load balancers', Job controller's
_RAY_OWNERS = ("RayCluster", "RayJob", "RayService", "RayCronJob")


def made_by_operator(obj: Mapping[str, Any], applied: Iterable[tuple[str, str]] = ()) -> bool:
    """Whether the operator made ``obj``: owned by a Ray resource, or labelled created-by kuberay-operator; never one
    the sample itself applied (``applied``: its (kind, name) pairs)."""
    meta = obj.get("metadata") or {}
    if (obj.get("kind"), meta.get("name")) in set(applied):
        return False
    owners = meta.get("ownerReferences") or []
    if any(str(o.get("apiVersion", "")).startswith("ray.io/") and o.get("kind") in _RAY_OWNERS for o in owners):
        return True
    if owners:  # another controller's (the submitter Job's Pod): the operator made its owner, which is compared
        return False
    return (meta.get("labels") or {}).get(CREATED_BY[0]) == CREATED_BY[1]


def random_tokens(objects: Sequence[Mapping[str, Any]]) -> set[str]:
    """The random suffixes in one namespace's objects: Pods' generated names, the RayClusters a RayJob or RayService
    named ``<owner>-<5 random>`` (from the cluster, or from the owner's status when the cluster is gone or was never
    made: a suspended or finished RayJob), a RayJob's generated ``status.jobId`` and
    ``ray.io/worker-group-replica-name`` values (``<group>-<5 random>``)."""
    tokens: set[str] = set()
    for obj in objects:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        generate = str(meta.get("generateName") or "")
        if generate and name.startswith(generate) and len(name) > len(generate):
            tokens.add(name[len(generate) :])
        for owner in meta.get("ownerReferences") or []:
            prefix = f"{owner.get('name')}-"
            if obj.get("kind") == "RayCluster" and name.startswith(prefix) and re.fullmatch(_RAND, name[len(prefix) :]):
                tokens.add(name[len(prefix) :])
        if obj.get("kind") in ("RayJob", "RayService"):
            # <name>-<5 random>: the cluster it named (also one gone or never made) and a RayJob's submission id, which
            # is also in its submitter's env
            status = obj.get("status") or {}
            sides = [status.get(side) or {} for side in ("activeServiceStatus", "pendingServiceStatus")]
            named = [status.get("rayClusterName"), status.get("jobId"), *(x.get("rayClusterName") for x in sides)]
            for value in named:
                if match := re.fullmatch(rf"{re.escape(name)}-({_RAND})", str(value or "")):
                    tokens.add(match[1])
        replica = str((meta.get("labels") or {}).get("ray.io/worker-group-replica-name", ""))
        if match := re.search(rf"-({_RAND})$", replica):
            tokens.add(match[1])
    return tokens


@dataclass(frozen=True)
class Masker:
    """Replaces what differs between two equal runs in one namespace's objects."""

    namespace: str
    tokens: frozenset[str] = frozenset()
    uids: frozenset[str] = frozenset()
    node_ports: frozenset[str] = frozenset()  # the API server picks them at random; RayCluster status reports them

    @classmethod
    def for_objects(cls, namespace: str, objects: Sequence[Mapping[str, Any]]) -> Masker:
        uids = {str((o.get("metadata") or {}).get("uid")) for o in objects} - {"None", ""}
        node_ports = {
            str(port["nodePort"])
            for o in objects
            if o.get("kind") == "Service"
            for port in (o.get("spec") or {}).get("ports") or []
            if port.get("nodePort")
        }
        return cls(namespace, frozenset(random_tokens(objects)), frozenset(uids), frozenset(node_ports))

    def text(self, value: str) -> str:
        if _TIME.match(value):
            return "<time>"
        for uid in self.uids:
            value = value.replace(uid, "<uid>")
        if self.tokens:
            alternatives = "|".join(sorted(map(re.escape, self.tokens)))
            value = re.sub(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])", "<rand>", value)
        value = re.sub(rf"(?<![A-Za-z0-9-]){re.escape(self.namespace)}(?![A-Za-z0-9-])", "<namespace>", value)
        value = _API_ACCESS.sub("kube-api-access-<rand>", value)
        value = _TIME_IN_TEXT.sub("<time>", value)  # "The RayJob submitter finished at 2026-12-06 15:46:51 but ..."
        return _IPV4.sub("<ip>", value)

    def value(self, value: Any, path: tuple[str, ...] = ()) -> Any:
        if isinstance(value, str):
            # a hash is one long word: none of the masks (whole tokens, times, addresses) can change it
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)) if path[-1:] == ("labels",) else k: self.value(v, (*path, str(k)))
                    for k, v in value.items()}  # fmt: skip
        if isinstance(value, list):
            return [self.value(v, path) for v in value]
        return value

    def object(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        kind = str(obj.get("kind"))
        body = {k: v for k, v in obj.items() if k != "status" or kind not in _DROPPED_STATUS}
        meta = {k: v for k, v in (body.get("metadata") or {}).items() if k not in _DROPPED_METADATA}
        if "ownerReferences" in meta:
            meta["ownerReferences"] = [{k: v for k, v in o.items() if k != "uid"} for o in meta["ownerReferences"]]
        body["metadata"] = meta
        if dropped := _DROPPED_SPEC.get(kind):
            body["spec"] = {k: v for k, v in (body.get("spec") or {}).items() if k not in dropped}
        if kind == "Service":
            ports = body["spec"].get("ports") or []
            # KubeRay lists the ports in Go's map iteration order, which is random: compared as a set, by name
            ports = sorted(ports, key=lambda p: str(p.get("name")))
            body["spec"]["ports"] = [{k: v for k, v in p.items() if k != "nodePort"} for p in ports]
        endpoints = (body.get("status") or {}).get("endpoints") if kind == "RayCluster" else None
        if isinstance(endpoints, Mapping):
            endpoints = {k: "<nodePort>" if str(v) in self.node_ports else v for k, v in endpoints.items()}
            body["status"] = {**body["status"], "endpoints": endpoints}
        if kind == "Secret" and isinstance(body.get("data"), Mapping):
            # the operator's secrets (the auth token) are random: their keys and lengths are compared
            body["data"] = {k: f"<{len(base64.b64decode(v or ''))} bytes>" for k, v in body["data"].items()}
        masked = self.value(body)
        masked["metadata"]["name"] = self.text(str(meta.get("name", "")))
        return dict(masked)


def keyed(objects: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Masked objects by ``Kind/masked-name``; objects whose masked names collide (two workers of one group) get
    ``#1``, ``#2`` in the order of their masked content, so equal sets pair up whatever order they were listed in."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        groups.setdefault(f"{obj['kind']}/{obj['metadata']['name']}", []).append(dict(obj))
    result: dict[str, dict[str, Any]] = {}
    for key, group in sorted(groups.items()):
        if len(group) == 1:
            result[key] = group[0]
            continue
        for index, obj in enumerate(sorted(group, key=lambda o: json.dumps(o, sort_keys=True)), start=1):
            result[f"{key}#{index}"] = obj
    return result


def masked_dump(namespace: str, objects: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """One namespace's objects (those the operator made, and the sample's own Ray resources), masked and keyed."""
    masker = Masker.for_objects(namespace, objects)
    return keyed(masker.object(o) for o in objects)


# --------------------------------------------------------------------------------------------------- comparison
MISSING = "<absent>"


@dataclass(frozen=True)
class Difference:
    """One path where the two operators' objects differ: KubeRay's value and raykube's (``<absent>`` if none)."""

    object: str  # Kind/masked-name
    path: str
    kuberay: Any
    raykube: Any

    @property
    def empty(self) -> bool:
        """One side writes an empty value (``{}``, ``""``, ``0``, ``false``, or objects of only those) where the other
        writes nothing: Go's serialization of an empty struct or a field without ``omitempty``, and the like."""
        values = (self.kuberay, self.raykube)
        return MISSING in values and self.path != "" and is_empty(values[0] if values[1] == MISSING else values[1])

    @property
    def snapshot(self) -> bool:
        """In a RayJob's copy of its RayCluster's status, whose moment is timing on kwok (:data:`SNAPSHOT`)."""
        return self.object.startswith(SNAPSHOT[0]) and self.path.startswith(SNAPSHOT[1])

    def line(self) -> str:
        note = " (empty vs absent)" if self.empty else " (snapshot)" if self.snapshot else ""
        return f"{self.object} `{self.path or '.'}`: KubeRay {_show(self.kuberay)}, raykube {_show(self.raykube)}{note}"


def is_empty(value: Any) -> bool:
    if isinstance(value, Mapping):
        return all(is_empty(v) for v in value.values())
    if isinstance(value, list):
        return not value
    return value in ("", "0", 0, False, None)


def _show(value: Any) -> str:
    text = value if value == MISSING else json.dumps(value, sort_keys=True)
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"`{text}`"


def _named(items: Sequence[Any]) -> bool:
    names = [i.get("name") for i in items if isinstance(i, Mapping)]
    return len(names) == len(items) and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)


def diff_values(a: Any, b: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:  # noqa: PLR0912
    """(path, a's value, b's value) for every leaf where ``a`` and ``b`` differ. Lists whose items all carry a
    distinct ``name`` (containers, env, volumes, ports) are compared by name, with a separate entry when the same
    names come in another order; other lists by index."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{key}" if re.fullmatch(r"[A-Za-z0-9_]+", str(key)) else f'{path}["{key}"]'
            if key not in a:
                yield sub, MISSING, b[key]
            elif key not in b:
                yield sub, a[key], MISSING
            else:
                yield from diff_values(a[key], b[key], sub)
    elif isinstance(a, list) and isinstance(b, list):
        if _named(a) and _named(b) and (a or b):
            by_a, by_b = {i["name"]: i for i in a}, {i["name"]: i for i in b}
            for name in [*by_a, *(n for n in by_b if n not in by_a)]:
                sub = f"{path}[name={name}]"
                if name not in by_b:
                    yield sub, by_a[name], MISSING
                elif name not in by_a:
                    yield sub, MISSING, by_b[name]
                else:
                    yield from diff_values(by_a[name], by_b[name], sub)
            common_a, common_b = [n for n in by_a if n in by_b], [n for n in by_b if n in by_a]
            if common_a != common_b:
                yield f"{path} (order of names)", common_a, common_b
        else:
            for index in range(max(len(a), len(b))):
                sub = f"{path}[{index}]"
                if index >= len(a):
                    yield sub, MISSING, b[index]
                elif index >= len(b):
                    yield sub, a[index], MISSING
                else:
                    yield from diff_values(a[index], b[index], sub)
    elif a != b or type(a) is not type(b):
        yield path, a, b


def compare(kuberay: Mapping[str, Mapping[str, Any]], raykube: Mapping[str, Mapping[str, Any]]) -> list[Difference]:
    """Every difference between two masked, keyed dumps: an object only one side made is one difference (path
    ``.``), else one per differing path."""
    differences = []
    for key in sorted(set(kuberay) | set(raykube)):
        if key not in raykube:
            differences.append(Difference(key, "", "made", MISSING))
        elif key not in kuberay:
            differences.append(Difference(key, "", MISSING, "made"))
        else:
            differences += [Difference(key, p, a, b) for p, a, b in diff_values(kuberay[key], raykube[key])]
    return differences


# --------------------------------------------------------------------------------------------------- report
@dataclass(frozen=True)
class SampleResult:
    sample: str
    resources: Sequence[tuple[str, str]]
    objects: int  # objects compared (the larger side)
    differences: Sequence[Difference] = ()
    error: str = ""  # the sample could not be compared (applied, or settled in time)
    kinds: Mapping[str, int] = field(default_factory=dict)  # kind -> count on KubeRay's side

    @property
    def equal(self) -> bool:
        return not self.error and not self.differences

    @property
    def equal_but_empty(self) -> bool:
        """Not equal, but only where one side writes an empty value and the other nothing."""
        return not self.equal and not self.error and all(d.empty for d in self.differences)

    @property
    def equal_but_snapshot(self) -> bool:
        """Not equal, nor only for empty values, but only there and in RayJobs' copies of their clusters' status."""
        return (
            not self.equal
            and not self.error
            and not self.equal_but_empty
            and all(d.empty or d.snapshot for d in self.differences)
        )


@dataclass(frozen=True)
class Run:
    results: Sequence[SampleResult]
    oracle: str  # Checkout.describe()
    raykube: str  # version and commit
    gates: str
    kubernetes: str
    started_at: str
    minutes: float
    samples_total: int  # samples found (some may not have been run)

    @property
    def equal(self) -> int:
        return sum(r.equal for r in self.results)

    def count_sentence(self) -> str:
        ran = len(self.results)
        tail = "" if ran == self.samples_total else f" ({ran} of the {self.samples_total} samples run)"
        empty = sum(r.equal_but_empty for r in self.results)
        snapshot = sum(r.equal_but_snapshot for r in self.results)
        more = f", {empty} more only for empty values one side writes and the other omits" if empty else ""
        more += f", {snapshot} more only in a RayJob's snapshot of its cluster's status" if snapshot else ""
        return f"{self.equal} of {ran} KubeRay {ORACLE_TAG} samples equal{tail}{more}"


def markdown(run: Run) -> str:
    """docs/differential.md: what ran, the count, a row per sample, then each difference path by path."""
    lines = [
        f"# The objects raykube generates against KubeRay {ORACLE_TAG}'s",
        "",
        "Written by `raykube conformance --objects` (`make conformance`); do not edit by hand.",
        "",
        f"KubeRay {ORACLE_TAG}'s operator, built from its source, is the oracle. Each of its samples with a RayCluster,"
        " RayJob or RayService is applied (with its ConfigMaps, Secrets, Services, Deployments, ServiceAccounts and "
        "RBAC) into two namespaces of one kwok sandbox with KubeRay's CRDs: one watched only by KubeRay's operator, "
        "one only by raykube's, both with the same feature gates. Once both namespaces settle (the same masked "
        "objects on consecutive reads), every object the operator made (owned by a Ray resource or labelled "
        "`app.kubernetes.io/created-by: kuberay-operator`: Pods, Services, Ingresses, Jobs, ConfigMaps, Secrets, "
        "ServiceAccounts, Roles, RoleBindings, NetworkPolicies, the RayClusters of RayJobs and RayServices) and the "
        "sample's own Ray resources (spec and status) are compared field by field. Masked: uids, resourceVersions, "
        "creation times and every RFC 3339 time, managedFields, the namespace, IPv4 addresses, the random "
        "5-character name suffixes, the service-account token volume's suffix, `nodeName`, Service cluster IPs and "
        "node ports, the status of Pods, Services, Ingresses and Jobs (kubelet's, endpoints', the Job controller's), "
        f"Secret values (their lengths are compared); {HASH_NOTE}. kwok nodes run no Ray: RayJobs and RayServices stop"
        " where the operator waits for Ray's dashboard.",
        "",
        f"**{run.count_sentence()}.**",
        "",
        f"Run {run.started_at}, {run.minutes:.1f} min. KubeRay: {run.oracle}. raykube: {run.raykube}. "
        f"Kubernetes: {run.kubernetes}. Feature gates (both): `{run.gates}`.",
        "",
        "| sample | Ray resources | objects | result |",
        "|---|---|---:|---|",
    ]
    for r in run.results:
        resources = ", ".join(f"{k} {n}" for k, n in r.resources)
        empty = sum(x.empty for x in r.differences)
        snapshot = sum(x.snapshot and not x.empty for x in r.differences)
        notes = [f"{empty} empty vs absent"] * bool(empty) + [f"{snapshot} snapshot"] * bool(snapshot)
        of_them = f" ({', '.join(notes)})" if notes else ""
        count = f"{len(r.differences)} differences{of_them}"
        result = "equal" if r.equal else f"not compared: {r.error}" if r.error else count
        lines.append(f"| `{r.sample}` | {resources} | {r.objects} | {result.replace('|', '/')} |")
    unequal = [r for r in run.results if not r.equal]
    if unequal:
        lines += [
            "",
            "## Differences",
            "",
            "Each line: object (kind/masked name), path, KubeRay's value, raykube's; `(empty vs absent)` where one"
            ' side writes an empty value (`{}`, `""`, `0`, `false`) and the other omits the field; `(snapshot)` in a'
            " RayJob's `status.rayClusterStatus`: KubeRay copies its cluster's status only while the RayJob waits for"
            " the cluster and after a job-info query succeeds, which kwok's Ray-less Pods never answer, so the copy is"
            " of the status at a moment set by timing, on either side.",
        ]
    for r in unequal:
        lines += ["", f"### `{r.sample}`", ""]
        if r.error:
            lines.append(f"- not compared: {r.error}")
        lines += [f"- {d.line()}" for d in r.differences]
    return "\n".join(lines) + "\n"


COUNT_MARK = re.compile(r"<!-- differential:count -->.*?<!-- /differential:count -->", re.DOTALL)


def update_count(document: str, run: Run) -> str:
    """README.md's (or docs/conformance.md's) marked count sentence, rewritten."""
    return COUNT_MARK.sub(lambda _: f"<!-- differential:count -->{run.count_sentence()}<!-- /differential:count -->",
                          document)  # fmt: skip


def results_line(run: Run) -> str:
    """One JSON line for benchmarks/results/differential.jsonl: when, what, the count, the unequal samples."""
    return json.dumps(
        {
            "started_at": run.started_at,
            "oracle": run.oracle,
            "raykube": run.raykube,
            "samples": run.samples_total,
            "run": len(run.results),
            "equal": run.equal,
            "unequal": {r.sample: (r.error or len(r.differences)) for r in run.results if not r.equal},
        },
        sort_keys=True,
    )

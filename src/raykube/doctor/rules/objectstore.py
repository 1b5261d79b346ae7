"""The object store a worker's own environment names (``AWS_ENDPOINT_URL`` and the keys, from envFrom), as the in-Pod
probe saw it from that worker (``--exec``): the name, the port, the keys, a bucket a RayJob on the cluster reads. The
first broken link only: a store that cannot be reached cannot refuse keys. Without ``--exec`` they say nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import tokens as t
from raykube.doctor.facts import inside as fi
from raykube.doctor.facts.cluster import ClusterView
from raykube.doctor.model import Evidence, Finding, ObjectRef
from raykube.doctor.rules.base import STAGE_WORKLOAD, RuleSpec, checker, field_evidence, finding, listing, rule
from raykube.doctor.rules.inside import pod_ref, probed_workers, workers_of
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects

OBJECT_STORE_UNREACHABLE = rule(
    "R10",
    "OBJECT_STORE_UNREACHABLE",
    STAGE_WORKLOAD,
    "A worker cannot reach the object store its AWS_ENDPOINT_URL names (name, port; in-Pod)",
)
OBJECT_STORE_KEYS_REFUSED = rule(
    "R11",
    "OBJECT_STORE_KEYS_REFUSED",
    STAGE_WORKLOAD,
    "The object store refuses a worker's AWS keys (SignatureDoesNotMatch, an unknown key id; in-Pod)",
)
OBJECT_STORE_BUCKET_MISSING = rule(
    "R12",
    "OBJECT_STORE_BUCKET_MISSING",
    STAGE_WORKLOAD,
    "A bucket a RayJob on the cluster reads (s3://...) does not exist in the workers' object store (in-Pod)",
)


def _answer_text(answer: Mapping[str, Any]) -> str:
    if answer.get("error"):
        return str(answer["error"])
    parts = [f"HTTP {answer.get('status')}", str(answer.get("code") or ""), str(answer.get("message") or "")]
    return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class _Store:
    """One worker group's view of its object store, as the probe saw it from ``pod``."""

    view: ClusterView
    pod: Obj
    container: str
    group: str
    found: Mapping[str, Any]

    @property
    def ref(self) -> ObjectRef:
        return pod_ref(self.pod)

    @property
    def variable(self) -> str:
        return str(self.found.get("endpoint_variable") or "AWS_ENDPOINT_URL")

    @property
    def host(self) -> str:
        return str(self.found.get("host") or "")

    @property
    def where(self) -> str:
        port = self.found.get("port")
        return f"{self.host}:{port}" if port else self.host

    def source(self, variable: str) -> str:
        return _env_source(self.pod, self.container, variable)

    def named(self) -> Evidence:
        return field_evidence(self.ref, f"env {self.variable} (host:port)", self.where or "(not a URL)", "pod.spec")

    def finding(
        self, spec: RuleSpec, title: str, evidence: list[Evidence], explanation: str, fixes: list[str]
    ) -> Finding:
        return finding(
            spec,
            cluster=self.view.ref,
            obj=self.ref,
            severity="error",
            title=f"Worker group {self.group}: {title}",
            evidence=[self.named(), *evidence],
            explanation=explanation,
            remediation=fixes,
            effects={t.runs_on(self.view.key)},
        )


@checker(OBJECT_STORE_UNREACHABLE, OBJECT_STORE_KEYS_REFUSED, OBJECT_STORE_BUCKET_MISSING)
def check_object_store(snap: Snapshot) -> Iterator[Finding]:
    """One finding per cause and worker group: what the probe saw from the group's Pod, with its own environment;
    the first broken link only (a store that cannot be reached cannot refuse keys)."""
    for view in facts.cluster_views(snap):
        for pod, _, container in probed_workers(view):
            found = fi.object_store(snap, pod)
            if found is not None:
                store = _Store(view, pod, container, workers_of(view, pod)[0], found)
                yield from _store_path(store) or _store_keys(store) or _store_buckets(snap, store)


def _store_path(store: _Store) -> list[Finding]:
    found, ref = store.found, store.ref
    resolved = found.get("resolve") or {}
    error = found.get("error") or (resolved.get("error") if isinstance(resolved, Mapping) else None)
    if error:
        return [
            store.finding(
                OBJECT_STORE_UNREACHABLE,
                f"the object store's name in {store.variable} does not resolve ({store.host or 'no host'}): a "
                "wrong endpoint",
                [field_evidence(ref, f"getaddrinfo({store.host})", error, "ray")],
                "ray.data, pyarrow and boto3 reach the store at the endpoint the Pod's environment names "
                f"({store.variable}, {store.source(store.variable)}); a name that does not resolve from the Pod is a "
                "wrong endpoint (a typo, another namespace, a Service that does not exist): every read and write "
                "fails.",
                [
                    f"Fix {store.variable} in {store.source(store.variable)} (a Service is "
                    "<name>.<namespace>.svc.cluster.local), then restart the Ray Pods: env from envFrom is read when "
                    "a container starts.",
                    f"kubectl exec {objects.name(store.pod)} -n {store.view.namespace} -c {store.container} -- "
                    f"getent hosts {store.host}",
                ],
            )
        ]
    if found.get("connect"):
        error = str(found["connect"])
        # Refused: nothing listens there. Anything else (a timeout from a NetworkPolicy or firewall that drops, "no
        # route to host" or "permission denied" from one that rejects) is a block on the way.
        blocked = "refused" not in error.lower()
        return [
            store.finding(
                OBJECT_STORE_UNREACHABLE,
                f"cannot connect to the object store at {store.where}: "
                + ("the port is blocked on the way" if blocked else "nothing accepts on that port"),
                [
                    field_evidence(ref, f"getaddrinfo({store.host})", resolved.get("addresses"), "ray"),
                    field_evidence(ref, f"connect({store.where})", error, "ray"),
                ],
                "The name resolves, but a TCP connection to the port fails from the worker: "
                + (
                    "it times out or is rejected on the way, so something blocks it (a NetworkPolicy on the store or "
                    "the Ray Pods, a firewall)."
                    if blocked
                    else "it is refused, so the port is wrong or the store's Pods are not Ready behind it."
                ),
                [
                    f"Compare the port in {store.variable} with the store's Service (kubectl get svc,endpointslices "
                    "in its namespace) and look for NetworkPolicies that select the store's or the Ray Pods.",
                ],
            )
        ]
    listed = found.get("list") or {}
    status = int(listed.get("status") or 0) if isinstance(listed, Mapping) else 0
    if isinstance(listed, Mapping) and (listed.get("error") or status >= 500):
        return [
            store.finding(
                OBJECT_STORE_UNREACHABLE,
                f"{store.where} does not answer as an S3 store: {_answer_text(listed)}",
                [field_evidence(ref, "GET / (ListBuckets, signed)", _answer_text(listed), "ray")],
                "A connection is made but a signed ListBuckets gets no S3 answer: the endpoint names another "
                "server (a dashboard, a proxy) or the store is failing.",
                [f"Point {store.variable} at the S3 API port of the store; read the store's logs."],
            )
        ]
    return []


def _store_keys(store: _Store) -> list[Finding]:
    listed = store.found.get("list") or {}
    if not isinstance(listed, Mapping) or not _refused(listed):
        return []
    keys = [*(store.found.get("keys") or [True, True]), True, True]
    missing = [n for n, ok in zip(("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), keys, strict=False) if not ok]
    code = str(listed.get("code") or f"HTTP {listed.get('status')}")
    if missing:
        which = f"{' and '.join(missing)} not set"
    elif code == "SignatureDoesNotMatch":
        which = "a wrong secret access key"
    elif code in ("InvalidAccessKeyId", "InvalidClientTokenId", "XAdminUserNotFound"):
        which = "an access key id the store does not know"
    else:
        which = "keys without permission to list buckets"
    set_text = ", ".join(f"{n} {'set' if ok else 'missing'}" for n, ok in zip(("AWS_ACCESS_KEY_ID",
                         "AWS_SECRET_ACCESS_KEY"), keys, strict=False))  # fmt: skip
    return [
        store.finding(
            OBJECT_STORE_KEYS_REFUSED,
            f"the object store at {store.where} refuses the Pod's keys ({code}): {which}",
            [
                field_evidence(
                    store.ref, "GET / (ListBuckets, signed with the Pod's keys)", _answer_text(listed), "ray"
                ),
                field_evidence(store.ref, "keys (values not shown)", set_text, "pod.spec"),
            ],
            "The store answered a request signed (SigV4) with the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY of the "
            f"worker's own environment ({store.source('AWS_ACCESS_KEY_ID')}) and refused it: every ray.data read "
            "and boto3 call from these Pods fails the same way.",
            [
                f"Put the store's keys in {store.source('AWS_ACCESS_KEY_ID')} (compare them with the store's "
                "credentials without printing either), then restart the Ray Pods: env is read when a container "
                "starts.",
            ],
        )
    ]


def _store_buckets(snap: Snapshot, store: _Store) -> list[Finding]:
    out = []
    for bucket, answer in sorted((store.found.get("buckets") or {}).items()):
        if not isinstance(answer, Mapping) or answer.get("code") != "NoSuchBucket":
            continue
        readers = _jobs_reading(snap, store.view, bucket)
        jobs = [
            field_evidence(ObjectRef(c.KIND_RAYJOB, r, store.view.namespace), "spec.entrypoint", f"s3://{bucket}/...",
                           "cr.spec")
            for r in readers[:2]
        ]  # fmt: skip
        out.append(
            store.finding(
                OBJECT_STORE_BUCKET_MISSING,
                f"bucket {bucket} does not exist in the object store at {store.where}"
                + (f" (RayJob {listing(readers)} reads it)" if readers else ""),
                [
                    field_evidence(store.ref, f"GET /{bucket}?list-type=2&max-keys=0", _answer_text(answer), "ray"),
                    *jobs,
                ],
                "The store takes the Pod's keys, but the bucket the job reads is not there: another store, a typo in "
                "the s3:// URL, or a bucket never created (S3 does not create one on write).",
                [
                    f"Create it (boto3: s3.create_bucket(Bucket='{bucket}'); aws s3 mb s3://{bucket}), or fix the "
                    "s3:// URL in the job.",
                ],
            )
        )
    return out


def _refused(answer: Mapping[str, Any]) -> bool:
    return str(answer.get("code") or "") in fi.S3_KEY_CODES or int(answer.get("status") or 0) in (401, 403)


def _env_source(pod: Obj, container: str, variable: str) -> str:
    """Where the container's ``variable`` comes from: an env entry, or the envFrom sources (names only)."""
    spec = pod.get("spec") or {}
    for ctr in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        if ctr.get("name") != container:
            continue
        for env in ctr.get("env") or []:
            if env.get("name") == variable:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef") or {}
                return f"Secret {ref.get('name')} key {ref.get('key')}" if ref else "the container's env"
        sources = [
            f"{'Secret' if 'secretRef' in item else 'ConfigMap'} "
            f"{(item.get('secretRef') or item.get('configMapRef') or {}).get('name')}"
            for item in ctr.get("envFrom") or []
        ]
        if sources:
            return "envFrom: " + ", ".join(sources)
    return "the container's environment"


def _jobs_reading(snap: Snapshot, view: ClusterView, bucket: str) -> list[str]:
    return [
        objects.name(job)
        for job in fi.rayjobs_on(snap, view.namespace, view.ref.name)
        if bucket in fi.buckets_named(fi.job_texts(job))
    ]

"""Gather a :class:`~raykube.doctor.snapshot.Snapshot` from the API server, in a handful of parallel requests.

One list per resource type and namespace in scope (one cluster-wide list with ``--all`` and no namespace), never one
request per object, so a run over 100 RayClusters costs the same handful of requests as a run over one:

* phase 1, all at once: RayClusters, RayJobs, RayServices, batch Jobs, Pods, Events, Services, EndpointSlices,
  ConfigMaps, Secrets (both reduced to their keys as they arrive), PVCs, HPAs, ResourceQuotas, LimitRanges, Ingresses,
  NetworkPolicies per namespace; Nodes and StorageClasses; the RayCluster CRD; the operator's Deployments anywhere (by
  KubeRay's labels and by name);
* phase 2, all at once: the operator's Pods (when outside the namespaces already listed) and one
  SubjectAccessReview per permission the operator needs (:data:`raykube.doctor.access.OPERATOR_ACCESS`).

Objects stay plain dicts, the API server's JSON as :class:`~raykube.kube.client.Kube` returns it (list items carry
no ``apiVersion``/``kind``: :func:`raykube.doctor.snapshot.sanitize` sets them). A 403 becomes a
:class:`~raykube.doctor.model.NotChecked` line; any other failure to reach the API server raises
:class:`GatherError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from raykube.api import constants as c
from raykube.doctor import access as acc
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor.model import NotChecked
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.kube.resources import Resource

# Beyond this many namespaces the operator's permissions are reviewed at the cluster scope only.
MAX_REVIEWED_NAMESPACES = 10


class GatherError(RuntimeError):
    """The API server could not be read at all (unreachable, unauthorized, TLS): the run is incomplete."""


@dataclass(frozen=True)
class Scope:
    namespaces: tuple[str, ...] | None  # None: every namespace
    targets: tuple[tuple[str, str], ...] | None = None  # None: every RayCluster in the namespaces
    # (kind, namespace, name) of RayJobs and RayServices; None: every one in the namespaces
    workloads: tuple[tuple[str, str, str], ...] | None = None
    # Read only what the named objects need, in one namespace (the operator's --diagnose-after: one object among
    # thousands): see :func:`gather_narrow`.
    narrow: bool = False


def _selector(labels: Mapping[str, str | Sequence[str]]) -> str:
    """A label selector: ``key=value``, or ``key in (a,b)`` for several values."""
    terms = [
        f"{key}={value}" if isinstance(value, str) else f"{key} in ({','.join(value)})" for key, value in labels.items()
    ]
    return ",".join(terms)


def _where(namespace: str | None) -> str:
    return "in every namespace" if namespace is None else f'in the namespace "{namespace}"'


class _Gatherer:
    def __init__(self, client: Kube, scope: Scope) -> None:
        self.client = client
        self.scope = scope
        self.objects: dict[str, list[Obj]] = {}
        self.gathered: set[str] = set()
        self.not_checked: list[NotChecked] = []
        self.optional_forbidden: dict[str, str] = {}  # Gateway API types the caller may not list: why

    def _add(self, resource: Resource, items: list[Obj]) -> None:
        self.objects.setdefault(resource.plural, []).extend(items)
        self.gathered.add(resource.plural)

    async def _list(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        labels: Mapping[str, str | Sequence[str]] | None = None,
        fields: Mapping[str, str] | None = None,
        keep: Callable[[Obj], bool] | None = None,
    ) -> list[Obj]:
        """Every ``resource`` in ``namespace`` (None: in every namespace) matching ``labels`` and ``fields`` (and
        ``keep``, page by page)."""
        listed = await self.client.list(
            resource,
            namespace,
            label_selector=_selector(labels) if labels else None,
            field_selector=_selector(fields) if fields else None,
            keep=keep,
        )
        return listed.items

    async def list_into(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        labels: Mapping[str, str | Sequence[str]] | None = None,
        fields: Mapping[str, str] | None = None,
        keep: Callable[[Obj], bool] | None = None,
    ) -> None:
        try:
            items = await self._list(resource, namespace, labels=labels, fields=fields, keep=keep)
        except ApiError as exc:
            if exc.forbidden and resource.plural in s.OPTIONAL_API_TYPES:
                # Said only where a RayService needs them (see gather): most clusters do not use the Gateway API.
                self.optional_forbidden[str(resource)] = f"forbidden: cannot list {resource.plural} {_where(namespace)}"
                return
            if exc.forbidden:
                core = resource.plural in s.CORE_TYPES
                self.not_checked.append(
                    NotChecked(
                        str(resource), f"forbidden: cannot list {resource.plural} {_where(namespace)}", core=core
                    )
                )
                return
            if exc.not_found and resource.plural in s.OPTIONAL_CRD_TYPES:
                self._add(resource, [])  # no CRD: the CRD rule says so (RayJob, RayService: none to diagnose)
                return
            if exc.not_found and resource.plural in s.OPTIONAL_API_TYPES:
                return  # not served: left unread (rules/upgrades.py tells a RayService that needs it)
            raise
        self._add(resource, items)

    async def crd(self) -> None:
        try:
            crd = await self.client.get(s.CRDS, s.RAYCLUSTER_CRD_NAME)
        except ApiError as exc:
            if exc.not_found:
                self._add(s.CRDS, [])
                return
            if exc.forbidden:
                self.not_checked.append(NotChecked("CRD", f"forbidden: cannot get {s.RAYCLUSTER_CRD_NAME}"))
                return
            raise
        self._add(s.CRDS, [crd])

    async def operator_deployments(self) -> None:
        """By KubeRay's labels and by name, anywhere; if that is forbidden, in the usual namespaces only."""
        queries: list[dict[str, Any]] = [
            {"labels": {c.K8S_APP_NAME_LABEL: list(c.OPERATOR_APP_NAME_LABEL_VALUES)}},
            {"labels": {facts.COMPONENT_LABEL: c.COMPONENT_NAME}},
            {"fields": {"metadata.name": c.OPERATOR_DEPLOYMENT_NAME}},
        ]
        try:
            results = await asyncio.gather(*(self._list(s.DEPLOYMENTS, None, **q) for q in queries))
        except ApiError as exc:
            if not exc.forbidden:
                raise
        else:
            self._add(s.DEPLOYMENTS, [d for items in results for d in items])
            return
        candidates = sorted({c.OPERATOR_DEFAULT_NAMESPACE, *(self.scope.namespaces or ())})
        found: list[Obj] = []
        readable = []
        for namespace in candidates:
            try:
                found += await self._list(s.DEPLOYMENTS, namespace)
                readable.append(namespace)
            except ApiError as exc:
                if not exc.forbidden:
                    raise
        if readable:
            self._add(s.DEPLOYMENTS, [d for d in found if facts.is_operator_deployment(d)])
        reason = "forbidden: cannot list deployments in every namespace"
        where = f"looked only in {', '.join(readable)}" if readable else "and not in any namespace either"
        self.not_checked.append(NotChecked("operator Deployment", f"{reason}; {where}"))

    async def operator_pods(self, snap: Snapshot) -> None:
        listed = self.scope.namespaces
        jobs: list[Awaitable[list[Obj]]] = []
        for deployment in snap.all(s.DEPLOYMENTS):
            if not facts.is_operator_deployment(deployment):
                continue
            namespace = objects.namespace(deployment)
            if listed is None or namespace in listed:
                continue  # its Pods came with the namespace's Pods
            match = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            jobs.append(self._list(s.PODS, namespace, labels={str(k): str(v) for k, v in match.items()}))
        try:
            results = await asyncio.gather(*jobs)
        except ApiError as exc:
            if not exc.forbidden:
                raise
            self.not_checked.append(NotChecked("operator Pods", "forbidden: cannot list the operator's Pods"))
            return
        for items in results:
            self.objects.setdefault(s.PODS.plural, []).extend(items)

    async def reviews(self, snap: Snapshot) -> None:
        wanted: dict[tuple[str, str, str, str, str, str], None] = {}
        for job in snap.rayjobs:  # what a RayJob's task was refused: is it refused still?
            for r in facts.refusals(str((job.get("status") or {}).get("message") or "")):
                if r.service_account is not None:
                    wanted[(r.user, r.namespace, r.verb, r.group, r.resource, r.subresource)] = None
        ops = facts.operators(snap)
        if not ops and not wanted:
            return
        cluster_namespaces = sorted({objects.namespace(o) for o in snap.rayclusters})
        per_namespace = len(cluster_namespaces) <= MAX_REVIEWED_NAMESPACES
        if ops and not per_namespace:
            self.not_checked.append(
                NotChecked(
                    "operator RBAC per namespace",
                    f"{len(cluster_namespaces)} namespaces: reviewed at the cluster scope only",
                )
            )
        for op in ops:
            user = facts.service_account_user(op.namespace, op.service_account)
            namespaces = [n for n in cluster_namespaces if op.watches(n)] if per_namespace else []
            for check in acc.checks_for(op, namespaces, cluster_scope=not per_namespace):
                wanted[(user, check.namespace, check.verb, check.group, check.resource, check.subresource)] = None
        try:
            answers = await asyncio.gather(*(review_access(self.client, k) for k in wanted))
        except ApiError as exc:
            if not exc.forbidden:
                raise
            self.not_checked.append(
                NotChecked("operator RBAC", "forbidden: cannot create subjectaccessreviews.authorization.k8s.io")
            )
            return
        self._add(s.ACCESS_REVIEWS, list(answers))


async def review_access(client: Kube, key: tuple[str, str, str, str, str, str]) -> Obj:
    """A SubjectAccessReview of ``(user, namespace, verb, group, resource, subresource)`` for a ServiceAccount user
    (with its groups, as its token authenticates), stored as the request with the API server's status."""
    user, namespace, verb, group, resource, subresource = key
    _, _, sa_namespace, _ = user.split(":", 3)
    attributes = {"verb": verb, "group": group, "resource": resource}
    if namespace:
        attributes["namespace"] = namespace
    if subresource:
        attributes["subresource"] = subresource
    body = {
        "apiVersion": s.ACCESS_REVIEWS.api_version,
        "kind": s.ACCESS_REVIEWS.kind,
        "spec": {
            "user": user,
            "groups": ["system:serviceaccounts", f"system:serviceaccounts:{sa_namespace}", "system:authenticated"],
            "resourceAttributes": attributes,
        },
    }
    answer = await client.create(s.ACCESS_REVIEWS, body)
    return {**body, "status": answer.get("status") or {}}


async def gather(client: Kube, scope: Scope, *, now: datetime | None = None) -> Snapshot:
    """Read the object graph for ``scope``; see the module docstring for what and how."""
    if scope.narrow:
        return await gather_narrow(client, scope, now=now)
    g = _Gatherer(client, scope)
    namespaces: list[str | None] = list(scope.namespaces) if scope.namespaces is not None else [None]
    jobs: list[Awaitable[None]] = [g.list_into(t, n) for t in s.NAMESPACED_TYPES for n in namespaces]
    jobs += [g.list_into(t, None) for t in s.CLUSTER_TYPES]
    jobs += [g.crd(), g.operator_deployments()]
    try:
        await asyncio.gather(*jobs)
        first = _snapshot(g, scope, now)
        await asyncio.gather(g.operator_pods(first), g.reviews(first))
    except ApiError as exc:
        raise GatherError(f"the API server refused a read: {exc.code} {exc.message}") from exc
    except OSError as exc:
        raise GatherError(f"cannot reach the API server: {exc}") from exc
    except Exception as exc:  # httpx transport errors and the like: the run cannot go on without the API
        if type(exc).__module__.startswith(("httpx", "httpcore", "ssl")):
            raise GatherError(f"cannot reach the API server: {exc}") from exc
        raise
    if g.optional_forbidden and any(facts.incremental_upgrade(o) for o in g.objects.get(s.RAYSERVICES.plural, [])):
        g.not_checked += [NotChecked(what, why) for what, why in g.optional_forbidden.items()]
    if not facts.operators(first) and s.DEPLOYMENTS.plural in g.gathered:
        g.not_checked.append(
            NotChecked("operator RBAC", "no operator Deployment found, so its ServiceAccount is unknown")
        )
    return _snapshot(g, scope, now)


def _snapshot(g: _Gatherer, scope: Scope, now: datetime | None) -> Snapshot:
    return s.build(
        g.objects,
        gathered=g.gathered,
        not_checked=g.not_checked,
        now=now or datetime.now(UTC),
        source="live",
        namespaces=scope.namespaces,
        targets=scope.targets,
        workloads=scope.workloads,
    )


def _regards_one_of(names: frozenset[str], prefixes: tuple[str, ...]) -> Callable[[Obj], bool]:
    """An Event about one of ``names``, or about an object whose name starts with one of ``prefixes`` (a cluster's
    Pods, Services and claims are named after it)."""

    def keep(event: Obj) -> bool:
        about = event.get("involvedObject") or event.get("regarding") or {}
        name = str(about.get("name") or "") if isinstance(about, Mapping) else ""
        return name in names or name.startswith(prefixes)

    return keep


def _named_after(prefixes: tuple[str, ...]) -> Callable[[Obj], bool]:
    def keep(obj: Obj) -> bool:
        return objects.name(obj).startswith(prefixes)

    return keep


async def gather_narrow(client: Kube, scope: Scope, *, now: datetime | None = None) -> Snapshot:
    """What the diagnosis of the objects ``scope`` names needs, in its one namespace, and nothing else of the
    namespace's other clusters: the objects themselves and their RayClusters (by name, and by the
    ``ray.io/originated-from-*`` labels), the clusters' Pods (``ray.io/cluster``) and a RayJob's submitter Job and its
    Pods, the Events, Services and EndpointSlices about them (filtered page by page), the namespace's small types
    (ConfigMaps and Secrets as keys, claims, quotas, limit ranges, policies, Gateways) and the Nodes and
    StorageClasses. The operator's own Deployment and RBAC are not read: this is the operator asking."""
    if scope.namespaces is None or len(scope.namespaces) != 1:
        raise ValueError("a narrow scope names exactly one namespace")
    (namespace,) = scope.namespaces
    g = _Gatherer(client, scope)
    targets = [name for ns, name in scope.targets or () if ns == namespace]
    workloads = [(kind, name) for kind, ns, name in scope.workloads or () if ns == namespace]
    kinds = {t.kind: t for t in s.WORKLOAD_TYPES}
    try:
        # Phase 1: the objects asked for, and what is read whole (small, or cluster-scoped).
        jobs: list[Awaitable[None]] = [
            g.list_into(s.RAYCLUSTERS, namespace, fields={"metadata.name": name}) for name in targets
        ]
        for kind, name in workloads:
            jobs.append(g.list_into(kinds[kind], namespace, fields={"metadata.name": name}))
            origin = {c.RAY_ORIGINATED_FROM_CRD_LABEL: kind, c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: name}
            jobs.append(g.list_into(s.RAYCLUSTERS, namespace, labels=origin))
            if kind == c.KIND_RAYJOB:
                jobs.append(g.list_into(s.JOBS, namespace, fields={"metadata.name": name}))
        small = (s.CONFIGMAPS, s.SECRETS, s.PVCS, s.HPAS, s.QUOTAS, s.LIMITRANGES, s.INGRESSES, s.NETWORKPOLICIES)
        jobs += [g.list_into(t, namespace) for t in (*small, s.GATEWAYS, s.HTTPROUTES)]
        jobs += [g.list_into(t, None) for t in s.CLUSTER_TYPES]
        jobs.append(g.crd())
        await asyncio.gather(*jobs)
        for resource in (s.RAYCLUSTERS, *s.WORKLOAD_TYPES, s.JOBS):
            g.gathered.add(resource.plural)  # what was not asked for is known to be none of the subject's
            g.objects.setdefault(resource.plural, [])
        # Phase 2: the clusters a workload names that its labels did not bring (a RayJob's clusterSelector), then
        # the Pods, Events, Services and EndpointSlices of every cluster found.
        have = {objects.name(o) for o in g.objects[s.RAYCLUSTERS.plural]}
        named = {
            name
            for t in s.WORKLOAD_TYPES
            for w in g.objects.get(t.plural, [])
            for name in s.workload_cluster_names({**w, "kind": t.kind})
        }
        await asyncio.gather(
            *(g.list_into(s.RAYCLUSTERS, namespace, fields={"metadata.name": name}) for name in sorted(named - have))
        )
        clusters = sorted({objects.name(o) for o in g.objects[s.RAYCLUSTERS.plural]})
        rayjobs = [name for kind, name in workloads if kind == c.KIND_RAYJOB]
        subjects = frozenset({*clusters, *(name for _, name in workloads), *targets})
        prefixes = tuple(f"{n}-" for n in sorted(subjects))
        jobs = [g.list_into(s.EVENTS, namespace, keep=_regards_one_of(subjects, prefixes))]
        if clusters:
            jobs.append(g.list_into(s.PODS, namespace, labels={c.RAY_CLUSTER_LABEL: clusters}))
        if rayjobs:
            jobs.append(g.list_into(s.PODS, namespace, labels={c.JOB_NAME_LABELS[0]: rayjobs}))
        g.gathered.add(s.PODS.plural)
        g.objects.setdefault(s.PODS.plural, [])
        keep = _named_after((*prefixes, *subjects)) if subjects else (lambda _: False)
        jobs += [g.list_into(t, namespace, keep=keep) for t in (s.SERVICES, s.ENDPOINTSLICES)]
        await asyncio.gather(*jobs)
    except ApiError as exc:
        raise GatherError(f"the API server refused a read: {exc.code} {exc.message}") from exc
    except OSError as exc:
        raise GatherError(f"cannot reach the API server: {exc}") from exc
    return _snapshot(g, scope, now)

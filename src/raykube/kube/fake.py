"""An in-memory API server, informer cache and event recorder, for reconcile table tests.

``FakeKube`` keeps objects as the API server would (names from ``generateName``, uids, resourceVersions, creation
time stamps, merge / JSON / status patches, uid preconditions, finalizers holding deletion, label-selected collection
deletes) and records every write that succeeded. Its three faces satisfy the controllers' protocols
(``raykube.controllers.ports``):

* ``fake.api``: the ``Api`` (writes and uncached reads), which can be told to fail (:meth:`FakeKube.fail`);
* ``fake.cache``: the ``Cache``, which by default shows every write at once; with ``lagging=True`` it shows only what
  :meth:`FakeKube.sync` last copied, as an informer that has not caught up yet (what scale expectations are for);
* ``fake.recorder``: the ``Recorder``; events land in ``fake.events``.

It is a test double for decisions, not a Kubernetes: no admission, no defaulting, no garbage collection, no schema.
What only a real API server shows is tested on the sandbox.
"""

from __future__ import annotations

import copy
import datetime as dt
import fnmatch
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from raykube.kube import objects, times
from raykube.kube.errors import ApiError
from raykube.kube.resources import Resource

StoreKey = tuple[Resource, str, str]  # (resource, namespace, name)


@dataclass(frozen=True)
class Write:
    """One write the API server accepted."""

    verb: str  # create, patch, update, delete, deletecollection
    resource: str  # plural, with "/subresource" when there is one: "pods", "rayclusters/status"
    namespace: str
    name: str  # the object's name (a create's generated name), or the label selector of a deletecollection
    body: Any = None

    def matches(self, verb: str, resource: str, name: str = "*") -> bool:
        """Whether this is ``verb`` on ``resource`` with a name matching the glob ``name``."""
        return self.verb == verb and self.resource == resource and fnmatch.fnmatchcase(self.name, name)

    def __str__(self) -> str:
        return f"{self.verb} {self.resource} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class RecordedEvent:
    regarding: str  # "<Kind> <namespace>/<name>"
    type: str
    reason: str
    action: str
    note: str
    field_path: str = ""


@dataclass
class _Failure:
    verb: str
    resource: str
    name: str
    error: ApiError
    times: int | None  # None: every time


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch of ``target`` (not mutated) by ``patch``."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result: dict[str, Any] = dict(copy.deepcopy(target)) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in path.split("/")[1:]]


def json_patch(target: Mapping[str, Any], operations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """RFC 6902 JSON patch (``test``, ``add``, ``replace``, ``remove``) on a copy of ``target``; a failed ``test``
    is the API server's 422."""
    doc: dict[str, Any] = copy.deepcopy(dict(target))
    for op in operations:
        parts = _pointer(str(op["path"]))
        parent: Any = doc
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent.setdefault(part, {})
        _apply_operation(parent, parts[-1], op)
    return doc


def _apply_operation(parent: Any, last: str, op: Mapping[str, Any]) -> None:
    kind = op["op"]
    if kind == "test":
        current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
        if current != op.get("value"):
            raise ApiError(422, "Invalid", f"the test of {op['path']} failed: {current!r} != {op.get('value')!r}")
    elif kind in ("add", "replace") and isinstance(parent, list):
        value = copy.deepcopy(op["value"])
        if last == "-":
            parent.append(value)
        else:
            parent.insert(int(last), value)
    elif kind in ("add", "replace"):
        parent[last] = copy.deepcopy(op["value"])
    elif kind == "remove":
        if isinstance(parent, list):
            del parent[int(last)]
        else:
            parent.pop(last, None)
    else:
        raise ApiError(422, "Invalid", f"unsupported JSON patch operation {kind!r}")


def _selects(obj: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    have = objects.labels(obj)
    return all(have.get(k) == v for k, v in labels.items())


class FakeKube:
    def __init__(
        self,
        initial: Iterable[Mapping[str, Any]] = (),
        *,
        resources: Iterable[Resource] = (),
        lagging: bool = False,
        clock: Callable[[], dt.datetime] = times.now,
    ) -> None:
        self._kinds: dict[tuple[str, str], Resource] = {}
        for res in resources:
            self._kinds[(res.api_version, res.kind)] = res
        self._server: dict[StoreKey, dict[str, Any]] = {}
        self._cached: dict[StoreKey, dict[str, Any]] = {}
        self.lagging = lagging
        self.clock = clock
        self._counter = itertools.count(1)
        self._failures: list[_Failure] = []
        self.writes: list[Write] = []
        self.events: list[RecordedEvent] = []
        self.api = _FakeApi(self)
        self.cache = _FakeCache(self)
        self.recorder = _FakeEvents(self)
        for obj in initial:
            self.add(obj)

    # ------------------------------------------------------------------------------------------------ setting up
    def resource_of(self, obj: Mapping[str, Any]) -> Resource:
        found = self._kinds.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
        if found is None:
            raise KeyError(
                f"FakeKube does not know {obj.get('apiVersion')}/{obj.get('kind')}: pass its Resource in resources="
            )
        return found

    def add(self, obj: Mapping[str, Any], res: Resource | None = None) -> dict[str, Any]:
        """Store ``obj`` as if it had been created earlier (no write recorded); it is in the cache at once."""
        res = res or self.resource_of(obj)
        stored = self._stamp(res, copy.deepcopy(dict(obj)), objects.namespace(obj))
        key = (res, objects.namespace(stored), objects.name(stored))
        self._server[key] = stored
        self._cached[key] = copy.deepcopy(stored)
        return stored

    def sync(self) -> None:
        """Let the cache catch up with the server (an informer receiving every pending watch event)."""
        self._cached = copy.deepcopy(self._server)

    def fail(
        self,
        verb: str,
        res: Resource,
        *,
        name: str = "*",
        code: int = 500,
        reason: str = "InternalError",
        message: str = "injected failure",
        times: int | None = None,
    ) -> None:
        """Make ``verb`` on ``res`` (names matching the glob ``name``) fail with this Status, ``times`` times or
        always."""
        self._failures.append(_Failure(verb, res.plural, name, ApiError(code, reason, message), times))

    # ------------------------------------------------------------------------------------------------ reading
    def stored(self, res: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as the server holds it now (tests read results here)."""
        return self._server.get((res, namespace, name))

    def all(self, res: Resource, namespace: str | None = None) -> list[dict[str, Any]]:
        return [o for (r, ns, _), o in self._server.items() if r == res and namespace in (None, ns)]

    def writes_of(self, verb: str | None = None, resource: str | None = None) -> list[Write]:
        return [w for w in self.writes if verb in (None, w.verb) and resource in (None, w.resource)]

    def reasons(self) -> list[str]:
        return [e.reason for e in self.events]

    # ------------------------------------------------------------------------------------------------ internals
    def _view(self) -> dict[StoreKey, dict[str, Any]]:
        return self._cached if self.lagging else self._server

    def _check(self, verb: str, res: Resource, name: str) -> None:
        for failure in self._failures:
            if failure.verb == verb and failure.resource == res.plural and fnmatch.fnmatchcase(name, failure.name):
                if failure.times is not None:
                    if failure.times <= 0:
                        continue
                    failure.times -= 1
                raise failure.error

    def _stamp(self, res: Resource, body: dict[str, Any], namespace: str | None) -> dict[str, Any]:
        meta = body.setdefault("metadata", {})
        number = next(self._counter)
        if not meta.get("name"):
            prefix = meta.get("generateName")
            if not prefix:
                raise ApiError(422, "Invalid", "metadata.name or metadata.generateName is required")
            meta["name"] = f"{prefix}{number:05d}"
        if res.namespaced:
            meta["namespace"] = meta.get("namespace") or namespace or "default"
        meta.setdefault("uid", f"uid-{number:05d}")
        meta.setdefault("creationTimestamp", times.format_time(self.clock()))
        meta.setdefault("generation", 1)
        meta["resourceVersion"] = str(number)
        body.setdefault("apiVersion", res.api_version)
        body.setdefault("kind", res.kind)
        return body

    def _bump(self, obj: dict[str, Any]) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._counter))

    @staticmethod
    def _next_generation(live: dict[str, Any], updated: dict[str, Any]) -> None:
        """The API server's ``metadata.generation``: one more when anything but metadata and status changed."""
        if {k: v for k, v in live.items() if k not in ("metadata", "status")} != {
            k: v for k, v in updated.items() if k not in ("metadata", "status")
        }:
            updated["metadata"]["generation"] = int(live["metadata"].get("generation") or 1) + 1

    def _record(self, verb: str, res: Resource, where: tuple[str, str], body: Any, sub: str | None = None) -> None:
        namespace, name = where
        resource = f"{res.plural}/{sub}" if sub else res.plural
        self.writes.append(Write(verb, resource, namespace, name, copy.deepcopy(body)))

    def _get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        found = self._server.get((res, namespace or "", name))
        if found is None:
            raise ApiError(404, "NotFound", f'{res} "{name}" not found')
        return found

    def _release(self, res: Resource, namespace: str, name: str) -> None:
        """An object being deleted goes once its last finalizer is removed."""
        obj = self._server.get((res, namespace, name))
        if obj is not None and objects.terminating(obj) and not objects.finalizers(obj):
            del self._server[(res, namespace, name)]

    def _finish_delete(self, key: StoreKey) -> None:
        obj = self._server[key]
        if objects.finalizers(obj):
            if not objects.terminating(obj):
                obj["metadata"]["deletionTimestamp"] = times.format_time(self.clock())
                self._bump(obj)
        else:
            del self._server[key]


class _FakeApi:
    """``raykube.controllers.ports.Api`` over a :class:`FakeKube`."""

    def __init__(self, fake: FakeKube) -> None:
        self.fake = fake

    async def get(
        self, res: Resource, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> dict[str, Any]:
        self.fake._check("get", res, name)
        return copy.deepcopy(self.fake._get(res, namespace, name))

    async def create(
        self,
        res: Resource,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        name: str | None = None,
        subresource: str | None = None,
        whole: bool = True,
    ) -> dict[str, Any]:
        fake = self.fake
        fake._check("create", res, objects.name(body) or str(objects.meta(body).get("generateName", "")))
        if objects.name(body) and (res, namespace or objects.namespace(body), objects.name(body)) in fake._server:
            raise ApiError(409, "AlreadyExists", f'{res} "{objects.name(body)}" already exists')
        stored = fake._stamp(res, copy.deepcopy(dict(body)), namespace)
        fake._server[(res, objects.namespace(stored), objects.name(stored))] = stored
        fake._record("create", res, (objects.namespace(stored), objects.name(stored)), stored)
        if not whole:  # what Kube.create answers then: type and metadata, no managedFields
            meta = {k: v for k, v in stored["metadata"].items() if k != "managedFields"}
            return copy.deepcopy({"apiVersion": stored.get("apiVersion"), "kind": stored.get("kind"), "metadata": meta})
        return copy.deepcopy(stored)

    async def patch(
        self,
        res: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
    ) -> dict[str, Any]:
        fake = self.fake
        fake._check("patch", res, name)
        live = fake._get(res, namespace, name)
        # JSON patches as RFC 6902; merge, strategic and apply patches are all treated as merge patches here
        updated = json_patch(live, patch) if patch_type == "json" else merge_patch(live, patch)
        if subresource == "status":  # only status changes through /status ...
            updated = {**copy.deepcopy(live), "status": updated.get("status")}
        elif "status" in live:  # ... and never through the main resource
            updated["status"] = live["status"]
        fake._next_generation(live, updated)
        if updated != live:
            updated["metadata"]["resourceVersion"] = str(next(fake._counter))
            fake._server[(res, namespace or "", name)] = updated
            fake._release(res, namespace or "", name)
        fake._record("patch", res, (namespace or "", name), patch, subresource)
        return copy.deepcopy(updated)

    async def replace(
        self,
        res: Resource,
        name: str,
        body: Mapping[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        fake = self.fake
        fake._check("update", res, name)
        live = fake._get(res, namespace, name)
        wanted = objects.resource_version(body)
        if wanted and wanted != objects.resource_version(live):
            raise ApiError(409, "Conflict", f'the object {res} "{name}" has been modified; apply to the latest')
        updated = copy.deepcopy(dict(body))
        updated["metadata"] = {**live["metadata"], **updated.get("metadata", {})}
        if subresource == "status":  # only status changes through /status ...
            updated = {**copy.deepcopy(live), "status": copy.deepcopy(body.get("status"))}
        elif "status" in live:  # ... and never through the main resource
            updated["status"] = copy.deepcopy(live["status"])
        if "status" not in live and subresource != "status":
            updated.pop("status", None)
        fake._next_generation(live, updated)
        fake._bump(updated)
        fake._server[(res, namespace or "", name)] = updated
        fake._release(res, namespace or "", name)
        fake._record("update", res, (namespace or "", name), body, subresource)
        return copy.deepcopy(updated)

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        uid: str | None = None,
        propagation: str = "Background",
        grace_period_seconds: int | None = None,
        missing_ok: bool = False,
    ) -> None:
        fake = self.fake
        fake._check("delete", res, name)
        try:
            live = fake._get(res, namespace, name)
        except ApiError as exc:
            if missing_ok and exc.not_found:
                return
            raise
        if uid and objects.uid(live) != uid:
            raise ApiError(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, in object: {live}")
        fake._finish_delete((res, namespace or "", name))
        fake._record("delete", res, (namespace or "", name), None)

    async def delete_collection(self, res: Resource, namespace: str, labels: Mapping[str, str]) -> None:
        fake = self.fake
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        fake._check("deletecollection", res, selector)
        doomed = [k for k, o in fake._server.items() if k[0] == res and k[1] == namespace and _selects(o, labels)]
        for key in doomed:
            fake._finish_delete(key)
        fake._record("deletecollection", res, (namespace, selector), None)


class _FakeCache:
    """``raykube.controllers.ports.Cache`` over a :class:`FakeKube`."""

    def __init__(self, fake: FakeKube) -> None:
        self.fake = fake

    def get(self, res: Resource, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.fake._view().get((res, namespace, name))

    def list(self, res: Resource, namespace: str, labels: Mapping[str, str]) -> Sequence[Mapping[str, Any]]:
        return [
            o for (r, ns, _), o in sorted(self.fake._view().items(), key=lambda item: item[0][2])
            if r == res and ns == namespace and _selects(o, labels)
        ]  # fmt: skip


class _FakeEvents:
    """``raykube.controllers.ports.Recorder`` over a :class:`FakeKube`."""

    def __init__(self, fake: FakeKube) -> None:
        self.fake = fake

    def event(
        self,
        regarding: Mapping[str, Any],
        type_: str,
        reason: str,
        action: str,
        note: str,
        *,
        field_path: str = "",
    ) -> None:
        where = f"{regarding.get('kind')} {objects.namespace(regarding)}/{objects.name(regarding)}"
        self.fake.events.append(RecordedEvent(where, type_, reason, action, note, field_path))

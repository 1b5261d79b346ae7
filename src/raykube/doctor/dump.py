"""Dumps: a snapshot as a directory of ``kubectl get -o yaml`` files, and back.

Writing (``--dump DIR``): one file per resource type, ``<plural>.yaml``, holding a ``v1`` ``List`` as
``kubectl get <plural> -o yaml`` prints it (every item with its ``apiVersion`` and ``kind``), plus
``doctor-dump.yaml``, a ``doctor.raykube.io/v1`` ``DoctorDump`` that records when and over what scope the snapshot
was taken, which types were read and what could not be. Secret and ConfigMap values are never written (only their
keys are), nor ``managedFields`` outside RayClusters.

Reading (``--from-dump DIR``) takes any directory of YAML or JSON: lists, single objects, several documents per file,
sub-directories. An empty list carries no kind, so its type is taken from the file name (``pods.yaml``, ``pod.yaml``
or ``po.yaml``). Without a ``doctor-dump.yaml`` the types found are the types read, the scope is every namespace,
and "now" is the newest timestamp in the dump, so ages read as they did when it was taken.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from raykube.api import constants as c
from raykube.doctor import facts
from raykube.doctor import snapshot as s
from raykube.doctor.model import SCHEMA_VERSION, NotChecked
from raykube.doctor.snapshot import Obj, Snapshot
from raykube.kube import objects
from raykube.kube.resources import Resource

META_FILE: Final = "doctor-dump.yaml"
META_KIND: Final = "DoctorDump"
_SUFFIXES: Final = (".yaml", ".yml", ".json")

try:  # libyaml when present: dumps of large namespaces load several times faster
    _Loader: Any = yaml.CSafeLoader
    _Dumper: Any = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader
    _Dumper = yaml.SafeDumper


class DumpError(ValueError):
    """The directory is not a readable dump; the message says which file and why."""


def redact_credentials(value: Any) -> Any:
    """A copy with the credentials users write as literals replaced by ``<redacted>``: env values whose names look
    like one (the names SEC05 flags), GCS fault tolerance's ``redisPassword.value`` and the ``redis-password`` ray
    start parameter. A dump is something people attach to an issue; what the doctor reports it may keep."""
    if isinstance(value, list):
        return [redact_credentials(v) for v in value]
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "env" and isinstance(item, list):
            out[key] = [
                {**e, "value": facts.REDACTED}
                if isinstance(e, Mapping) and e.get("value") and facts.SENSITIVE_ENV.search(str(e.get("name") or ""))
                else redact_credentials(e)
                for e in item
            ]
        elif key == "redisPassword" and isinstance(item, Mapping) and item.get("value"):
            out[key] = {**item, "value": facts.REDACTED}
        elif key == "rayStartParams" and isinstance(item, Mapping) and item.get(c.RAY_START_REDIS_PASSWORD_PARAM):
            out[key] = {**item, c.RAY_START_REDIS_PASSWORD_PARAM: facts.REDACTED}
        else:
            out[key] = redact_credentials(item)
    return out


def write(snap: Snapshot, directory: Path) -> list[Path]:
    """Write ``snap`` under ``directory`` (created if needed); returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for key in sorted(snap.gathered):
        items = [redact_credentials(o) for o in snap.objects.get(key, [])]
        document = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}
        path = directory / f"{key}.yaml"
        path.write_text(yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False))
        written.append(path)
    meta: dict[str, Any] = {
        "apiVersion": SCHEMA_VERSION,
        "kind": META_KIND,
        "capturedAt": facts.format_time(snap.now),
        "source": snap.source,
        "namespaces": list(snap.namespaces) if snap.namespaces is not None else None,
        "targets": [{"namespace": n, "name": m} for n, m in snap.targets] if snap.targets is not None else None,
        "gathered": sorted(snap.gathered),
        "notChecked": [{"what": n.what, "reason": n.reason, "core": n.core} for n in snap.not_checked],
    }
    if snap.inside_note or snap.inside:
        # What --exec read inside the Pods (matching log lines only), so --from-dump diagnoses the same.
        meta["inPodChecks"] = snap.inside_note
        meta["inside"] = snap.inside
    path = directory / META_FILE
    path.write_text(yaml.dump(meta, Dumper=_Dumper, sort_keys=False, default_flow_style=False))
    written.append(path)
    return written


def _documents(path: Path) -> Iterator[Any]:
    text = path.read_text()
    if path.suffix == ".json":
        try:
            yield json.loads(text)
        except json.JSONDecodeError as exc:
            raise DumpError(f"{path}: not JSON: {exc}") from exc
        return
    try:
        yield from yaml.load_all(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise DumpError(f"{path}: not YAML: {exc}") from exc


def _type_from_file(path: Path) -> Resource | None:
    stem = path.stem.lower()
    for resource in s.ALL_TYPES:
        if stem in (resource.plural, resource.kind.lower(), *resource.short_names):
            return resource
    return None


def _latest_time(by_type: Mapping[str, list[Obj]]) -> datetime | None:
    latest: datetime | None = None

    def consider(value: object) -> None:
        nonlocal latest
        moment = facts.parse_time(value)
        if moment is not None and (latest is None or moment > latest):
            latest = moment

    for items in by_type.values():
        for obj in items:
            consider(objects.meta(obj).get("creationTimestamp"))
            if obj.get("kind") == "Event":
                consider(facts.event_time(obj))
            for cond in (obj.get("status") or {}).get("conditions") or []:
                if isinstance(cond, Mapping):
                    consider(cond.get("lastTransitionTime"))
    return latest


def read(  # noqa: PLR0912 - each document shape of a kubectl dump is one branch
    directory: Path,
    *,
    namespaces: tuple[str, ...] | None = None,
    targets: tuple[tuple[str, str], ...] | None = None,
    workloads: tuple[tuple[str, str, str], ...] | None = None,
) -> Snapshot:
    """Load a dump; ``namespaces``/``targets``/``workloads`` narrow it as ``-n``/``raycluster/NAME``/``rayjob/NAME``
    narrow a live run."""
    if not directory.is_dir():
        raise DumpError(f"{directory} is not a directory")
    by_type: dict[str, list[Obj]] = {}
    seen_types: set[str] = set()
    meta: Mapping[str, Any] | None = None
    files = sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix in _SUFFIXES)
    if not files:
        raise DumpError(f"{directory} holds no .yaml, .yml or .json file")
    for path in files:
        for document in _documents(path):
            if not isinstance(document, Mapping):
                continue
            if document.get("kind") == META_KIND:
                meta = document
                continue
            items = document.get("items") if isinstance(document.get("items"), list) else None
            if items is None:
                items = [document]
            elif not items and (from_name := _type_from_file(path)) is not None:
                seen_types.add(from_name.plural)
            for item in items:
                if not isinstance(item, Mapping):
                    continue
                resource = s.type_of(item)
                if resource is None:
                    continue
                by_type.setdefault(resource.plural, []).append(dict(item))
                seen_types.add(resource.plural)
    not_checked: list[NotChecked] = []
    if meta is not None:
        gathered = set(meta.get("gathered") or seen_types) | seen_types
        now = facts.parse_time(meta.get("capturedAt")) or datetime.now(UTC)
        for entry in meta.get("notChecked") or []:
            if isinstance(entry, Mapping):
                not_checked.append(
                    NotChecked(str(entry.get("what")), str(entry.get("reason")), core=bool(entry.get("core")))
                )
        if namespaces is None and meta.get("namespaces") is not None:
            namespaces = tuple(meta["namespaces"])
    else:
        gathered = seen_types
        now = _latest_time(by_type) or datetime.now(UTC)
        for resource in s.ALL_TYPES:
            # RayJobs, RayServices and their Jobs matter only to a RayJob/RayService target, which is reported
            # missing by name if the dump lacks it.
            quiet = resource in (s.ACCESS_REVIEWS, *s.WORKLOAD_TYPES, s.JOBS) or resource.plural in s.OPTIONAL_API_TYPES
            if resource.plural not in gathered and not quiet:
                core = resource.plural in s.CORE_TYPES
                not_checked.append(NotChecked(str(resource), "not in the dump", core=core))
    for key in gathered:
        by_type.setdefault(key, [])
    if namespaces is not None:
        wanted = set(namespaces)
        by_type = {
            key: [o for o in items if not s.BY_KEY[key].namespaced or objects.namespace(o) in wanted or _operator(o)]
            for key, items in by_type.items()
        }
    snap = s.build(
        by_type,
        gathered=gathered,
        not_checked=not_checked,
        now=now,
        source="dump",
        namespaces=namespaces,
        targets=targets,
        workloads=workloads,
    )
    if meta is not None and isinstance(meta.get("inside"), Mapping):
        snap.inside = {str(k): dict(v) for k, v in meta["inside"].items() if isinstance(v, Mapping)}
        snap.inside_note = str(meta.get("inPodChecks") or "") + " (from the dump)"
    return snap


def _operator(obj: Mapping[str, Any]) -> bool:
    """The operator's Deployment and Pods are kept whatever namespace the run is narrowed to."""
    if obj.get("kind") == s.DEPLOYMENTS.kind:
        return facts.is_operator_deployment(obj)
    if obj.get("kind") == s.PODS.kind:
        labels = objects.labels(obj)
        return (
            labels.get(facts.COMPONENT_LABEL) == c.COMPONENT_NAME
            or labels.get(c.K8S_APP_NAME_LABEL) == c.OPERATOR_APP_NAME_LABEL_VALUES[0]
        )
    return False

"""KubeRay's validation of RayCluster, RayJob, RayService and RayCronJob, as pure functions over plain dicts.

Every validator takes a custom resource exactly as read from the API server or from YAML (camelCase keys, Pod
templates as plain dicts) and returns a list of :class:`FieldError` naming *every* problem it finds, where KubeRay
stops at the first one. Input of any shape is accepted: a missing field is read as unset, a field of the wrong type is
reported, and nothing raises. Message texts are KubeRay's (users grep for them); where KubeRay has no message of its
own the text says so below and names the field. ``features`` overrides the KubeRay feature-gate defaults in
:data:`raykube.api.constants.FEATURE_GATE_DEFAULTS`.

The functions do no I/O, with one exception: a RayCronJob ``timeZone`` is looked up in the system time-zone database
through :mod:`zoneinfo`, as KubeRay looks it up in the copy embedded in its binary.

Sources. "validation.go" is KubeRay ``ray-operator/controllers/ray/utils/validation.go`` (what the controllers
check before reconciling; its failures are the ``Invalid*`` events and the RayJob ``ValidationFailed`` state). "CRD"
is a constraint of the CRD schema (enums, ``required``, ``minimum``) or a CEL rule in it: the API server enforces
those at admission, and they are implemented here too so that a dump or a YAML file can be checked offline; their
messages follow the API server's ("Required value", ``Unsupported value: "x": supported values: ...``) or quote the
CEL message. "webhook" is KubeRay's optional validating webhook (``ray-operator/pkg/webhooks/v1``). "own" marks a
rule or a message KubeRay does not have.

Metadata (all kinds):

* name length: RayCluster ≤ 53, RayJob ≤ 47, RayService ≤ 47 (validation.go), RayCronJob ≤ 36 (validation.go,
  ``ValidateRayCronJobSpec``); with ``generateName`` the length counts the 5 characters the API server appends.
* name is a DNS-1035 label: RayCluster, RayJob, RayService (validation.go, message carries the apimachinery reasons);
  RayCronJob (own message: KubeRay does not check, but its child RayJob ``<cron>-<minutes>`` must be one).
* RayService annotation ``ray.io/initializing-timeout`` is a positive Go duration or positive integer (validation.go).

RayCluster spec (``ValidateRayClusterSpec`` in validation.go unless noted; also run on a RayJob's
``spec.rayClusterSpec`` and a RayService's ``spec.rayClusterConfig``, whose messages KubeRay prefixes with
"The RayJob spec is invalid: " / "The RayService spec is invalid: "):

* ``headGroupSpec`` and every ``template`` are required (CRD); the head and each worker group have ≥ 1 container.
* worker group ``groupName`` is required (CRD) and non-empty (own: KubeRay accepts ""), names are unique (webhook).
* without in-tree autoscaling ``minReplicas`` and ``maxReplicas`` must be set; a key that is absent is read as its
  CRD default (0 and 2147483647, as the API server stores it), so only an explicit ``null`` is unset.
* ``minReplicas`` ≥ 0, ``maxReplicas`` ≥ 0, ``minReplicas`` ≤ ``maxReplicas``. ``replicas`` outside
  ``[minReplicas, maxReplicas]`` is not an error: KubeRay clamps it (``GetWorkerGroupDesiredReplicas``).
* a group's ``resources`` and the rayStartParams ``num-cpus``/``num-gpus``/``memory``/``resources`` are exclusive;
  ``rayStartParams.labels`` is forbidden; group ``labels`` are valid Kubernetes label keys and values.
* worker ``idleTimeoutSeconds`` ≥ 0 and needs autoscaler v2 (``autoscalerOptions.version: v2`` or the head env
  ``RAY_enable_autoscaler_v2`` = 1/true); a non-zero ``priority`` needs rayVersion ≥ 2.56.0 and autoscaler v2.
* the ``ray.io/ft-enabled`` annotation together with ``gcsFaultToleranceOptions``; ``RAY_REDIS_ADDRESS`` on the head
  without GCS FT; with ``gcsFaultToleranceOptions``: no ``redis-password`` rayStartParam, no ``REDIS_PASSWORD`` or
  ``RAY_REDIS_ADDRESS`` head env, no ``ray.io/external-storage-namespace`` annotation; a Redis username only through
  ``gcsFaultToleranceOptions.redisUsername``.
* backend ``rocksdb`` needs the GCSFaultToleranceEmbeddedStorage gate, no Redis fields, ``storage.claimName``
  exclusive with size/storageClassName/accessModes, no ``RAY_gcs_storage*`` env, no ``gcs-storage`` volume or
  ``/data/gcs`` mount on the head; ``storage`` only with ``rocksdb``. Backend immutability is CEL (see
  :func:`validate_update`).
* worker ``suspend`` needs the RayJobDeletionPolicy gate and is not allowed with autoscaling.
* ``RAY_enable_autoscaler_v2`` = 1/true on the head without autoscaling; with autoscaling, that env together with
  ``autoscalerOptions.version``; autoscaler v2 needs ``restartPolicy`` Never or unset on the head and every worker.
* ``autoscalerOptions.idleTimeoutSeconds`` ≥ 0; ``autoscalerOptions.env`` must not set
  ``KUBERAY_GEN_AUTOSCALER_START_CMD``.
* ``historyServerOptions`` needs the RayClusterHistoryServer gate, ``collectorOptions`` and its ``image``, and no
  container named ``ray-history-collector`` in any template.
* ``authOptions.mode: token`` needs rayVersion ≥ 2.52.0 (unset and unparsable versions are errors);
  ``enableK8sTokenAuth`` needs mode token, rayVersion ≥ 2.55.0 and no ``secretName``; K8s token auth is not
  supported for RayJob or RayService.
* ``networkPolicy`` needs the RayClusterNetworkPolicy gate; its ingress/egress rules must match the mode, its
  ``workerGroups`` must name existing groups, and group names must then be DNS-1123 labels.
* ``tlsOptions`` needs the RayClusterMTLS gate; with TLS enabled no ``RAY_USE_TLS``/``RAY_TLS_*`` env and no
  ``ray-tls`` volume mount or ``/etc/ray/tls`` mount path in the head, worker or autoscaler containers.
* ``managedBy`` is ``ray.io/kuberay-operator`` or ``kueue.x-k8s.io/multikueue`` (CEL), and immutable (CEL, see
  :func:`validate_update`). Enums of ``authOptions.mode``, ``autoscalerOptions.version``/``upscalingMode``,
  ``gcsFaultToleranceOptions.backend``, ``storage.deletionPolicy``, ``networkPolicy.mode``,
  ``ingressOptions.pathType`` and an embedded ``upgradeStrategy.type`` (CRD).

RayCluster object (RayCluster controller): ``upgradeStrategy.type`` is Recreate or None, and may not be set on a
cluster whose ``ray.io/originated-from-crd`` label is RayJob or RayService (``ValidateRayClusterUpgradeOptions``);
status conditions RayClusterSuspending and RayClusterSuspended are not both True (``ValidateRayClusterStatus``).

RayJob spec (``ValidateRayJobSpec``):

* ``suspend`` needs ``shutdownAfterJobFinishes``; ``ttlSecondsAfterFinished`` ≥ 0, and > 0 needs
  ``shutdownAfterJobFinishes``.
* ``deletionStrategy`` needs the RayJobDeletionPolicy gate; legacy ``onSuccess``/``onFailure`` and ``deletionRules``
  are exclusive (also CEL) and one of them is required (also CEL); legacy needs both policies set, only DeleteNone
  and DeleteSelf with ``clusterSelector``, no DeleteWorkers with autoscaling, no DeleteNone with
  ``shutdownAfterJobFinishes``; rules are incompatible with ``shutdownAfterJobFinishes``, each condition has exactly
  one of ``jobStatus``/``jobDeploymentStatus`` and ``ttlSeconds`` ≥ 0, no DeleteCluster/DeleteWorkers with
  ``clusterSelector``, no DeleteWorkers with autoscaling, no duplicate (policy, condition), and per condition the
  TTLs do not decrease along DeleteWorkers ≤ DeleteCluster ≤ DeleteSelf. Policy and status enums (CRD).
* one of ``rayClusterSpec`` and ``clusterSelector`` is set; with ``clusterSelector``: its ``ray.io/cluster`` is
  non-empty, no ``suspend``, no SidecarMode, no ``backoffLimit`` > 0. (Both set is accepted: the selector wins.)
* InteractiveMode: no ``backoffLimit`` > 0. SidecarMode: no ``submitterPodTemplate``, no ``submitterConfig``, head
  ``restartPolicy`` Never or unset. ``submissionMode`` is one of the four modes (own: KubeRay has no enum).
* ``runtimeEnvYAML`` parses as a YAML mapping; ``activeDeadlineSeconds`` > 0; ``preRunningDeadlineSeconds`` > 0;
  ``backoffLimit`` ≥ 0.
* status: ``jobDeploymentStatus`` Waiting only in InteractiveMode (``ValidateRayJobStatus``).

RayService spec (``ValidateRayServiceSpec``): ``rayClusterConfig`` is required (CRD) and valid; its
``headGroupSpec.headService.metadata.name`` is not set; ``upgradeStrategy.type`` is NewCluster,
NewClusterWithIncrementalUpgrade or None; ``rayClusterDeletionDelaySeconds`` ≥ 0; with the incremental upgrade (and
its gate on): autoscaling on, ``clusterUpgradeOptions`` set, ``0 ≤ stepSizePercent ≤ maxSurgePercent ≤ 100``,
``intervalSeconds`` > 0, ``gatewayClassName`` set.

RayCronJob spec (``ValidateRayCronJobSpec``): the kind needs the RayCronJob gate (own); ``schedule`` (required, CRD)
does not contain ``TZ`` and is a standard 5-field cron expression or descriptor, with robfig/cron's error texts;
``timeZone`` is non-empty and a known IANA zone; ``jobTemplate`` (required, CRD) is a valid RayJob spec, its messages
prefixed "invalid RayJob template: ".

Ray versions compare like apimachinery's ``version.ParseGeneric``: at least two dotted numbers, anything after the
numbers ignored ("2.52", "2.52.0rc1" = 2.52.0); unset or unparsable versions fail the auth and priority checks with
KubeRay's "was not specified" / "format is invalid" messages, and count as old for :func:`ray_version_at_least`.

Not implemented: the history-server collector's storage-backend env checks (the env names were not confirmed), a
RayJob entrypoint requirement (KubeRay has none), and rules KubeRay enforces only at reconcile time.
"""

from __future__ import annotations

import functools
import itertools
import re
import zoneinfo
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

from raykube.api import constants as c

__all__ = [
    "FieldError",
    "parse_ray_version",
    "ray_version_at_least",
    "validate",
    "validate_raycluster",
    "validate_raycluster_metadata",
    "validate_raycluster_spec",
    "validate_raycluster_status",
    "validate_raycluster_upgrade_strategy",
    "validate_raycronjob",
    "validate_raycronjob_metadata",
    "validate_raycronjob_spec",
    "validate_rayjob",
    "validate_rayjob_metadata",
    "validate_rayjob_spec",
    "validate_rayjob_status",
    "validate_rayservice",
    "validate_rayservice_metadata",
    "validate_rayservice_spec",
    "validate_update",
]


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem: the field it is about (``spec.workerGroupSpecs[1].minReplicas``) and what is wrong with it."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


# --------------------------------------------------------------------------------------------------------------------
# Error collection, field paths and typed reads
# --------------------------------------------------------------------------------------------------------------------

_RAYJOB_SPEC_INVALID: Final = "The RayJob spec is invalid: "
_RAYSERVICE_SPEC_INVALID: Final = "The RayService spec is invalid: "
_RAYCRONJOB_TEMPLATE_INVALID: Final = "invalid RayJob template: "
_REQUIRED: Final = "Required value"


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _index(path: str, index: int) -> str:
    return f"{path}[{index}]"


def _key(path: str, key: str) -> str:
    return f"{path}[{key}]"


class _Errors:
    """Collects errors. ``kuberay`` messages get the prefix KubeRay wraps them in; schema and own messages do not."""

    __slots__ = ("_items", "_prefix", "_seen")

    def __init__(self, prefix: str = "", *, _parent: _Errors | None = None) -> None:
        self._items: list[FieldError] = [] if _parent is None else _parent._items
        self._seen: set[FieldError] = set() if _parent is None else _parent._seen
        self._prefix = prefix

    @property
    def items(self) -> list[FieldError]:
        return self._items

    @property
    def prefix(self) -> str:
        return self._prefix

    def wrapped(self, prefix: str) -> _Errors:
        return _Errors(self._prefix + prefix, _parent=self)

    def kuberay(self, path: str, message: str) -> None:
        self._add(FieldError(path, self._prefix + message))

    def schema(self, path: str, message: str) -> None:
        self._add(FieldError(path, message))

    def extend(self, other: _Errors) -> None:
        for error in other.items:
            self._add(error)

    def _add(self, error: FieldError) -> None:
        if error not in self._seen:
            self._seen.add(error)
            self._items.append(error)


_JSON_TYPES: Final[tuple[tuple[type, str], ...]] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (Mapping, "object"),
    (list, "array"),
    (tuple, "array"),
)


def _type_name(value: object) -> str:
    """The JSON name of a value's type, as schema errors print it."""
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), type(value).__name__)


def _go_quote(text: str) -> str:
    """Go's ``%q`` of a string, as apimachinery and KubeRay messages print it."""
    out = ['"']
    escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    for char in text:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in escapes:
            out.append(escapes[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        elif code >= 0x80 and not char.isprintable():
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _unsupported(value: object, allowed: Sequence[str]) -> str:
    shown = _go_quote(value) if isinstance(value, str) else str(value)
    return f"Unsupported value: {shown}: supported values: " + ", ".join(_go_quote(a) for a in allowed)


def _byte_len(text: str) -> int:
    """Length in bytes, as Go's ``len`` counts it."""
    return len(text.encode("utf-8", "surrogatepass"))


class _View:
    """A JSON object being read: typed getters that report wrong types once and read absent or null as unset."""

    __slots__ = ("data", "errs", "path")

    def __init__(self, errs: _Errors, data: Mapping[Any, Any] | None, path: str) -> None:
        self.errs = errs
        self.data = data
        self.path = path

    @classmethod
    def of(cls, errs: _Errors, value: object, path: str) -> _View:
        if value is None or isinstance(value, Mapping):
            return cls(errs, value, path)
        errs.schema(path, f"must be of type object, not {_type_name(value)}")
        return cls(errs, None, path)

    @property
    def present(self) -> bool:
        return self.data is not None

    def at(self, key: str) -> str:
        return _child(self.path, key)

    def raw(self, key: str) -> Any:
        return None if self.data is None else self.data.get(key)

    def has(self, key: str) -> bool:
        return self.raw(key) is not None

    def has_key(self, key: str) -> bool:
        return self.data is not None and key in self.data

    def _wrong(self, key: str, expected: str, value: object) -> None:
        self.errs.schema(self.at(key), f"must be of type {expected}, not {_type_name(value)}")

    def obj(self, key: str) -> _View:
        return _View.of(self.errs, self.raw(key), self.at(key))

    def array(self, key: str) -> list[Any] | None:
        value = self.raw(key)
        if value is None or isinstance(value, list):
            return value
        self._wrong(key, "array", value)
        return None

    def objects(self, key: str) -> list[_View]:
        """The items of an array of objects, each as a view; items that are not objects are reported and skipped."""
        items = self.array(key) or []
        views: list[_View] = []
        for i, item in enumerate(items):
            path = _index(self.at(key), i)
            if isinstance(item, Mapping):
                views.append(_View(self.errs, item, path))
            else:
                self.errs.schema(path, f"must be of type object, not {_type_name(item)}")
        return views

    def text(self, key: str, default: str = "") -> str:
        value = self.opt_text(key)
        return default if value is None else value

    def opt_text(self, key: str) -> str | None:
        value = self.raw(key)
        if value is None or isinstance(value, str):
            return value
        self._wrong(key, "string", value)
        return None

    def integer(self, key: str) -> int | None:
        value = self.raw(key)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        self._wrong(key, "integer", value)
        return None

    def number(self, key: str) -> float | None:
        value = self.raw(key)
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            return value
        self._wrong(key, "number", value)
        return None

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.opt_flag(key)
        return default if value is None else value

    def opt_flag(self, key: str) -> bool | None:
        value = self.raw(key)
        if value is None or isinstance(value, bool):
            return value
        self._wrong(key, "boolean", value)
        return None

    def string_map(self, key: str) -> dict[str, str]:
        """A ``map[string]string`` field; entries with a non-string value are reported and dropped."""
        view = self.obj(key)
        out: dict[str, str] = {}
        for k, v in (view.data or {}).items():
            if not isinstance(k, str):
                self.errs.schema(_key(view.path, str(k)), f"key must be of type string, not {_type_name(k)}")
            elif isinstance(v, str):
                out[k] = v
            elif v is not None:
                self.errs.schema(_key(view.path, k), f"must be of type string, not {_type_name(v)}")
        return out

    def enum(self, key: str, allowed: Sequence[str]) -> str | None:
        """A string field with a CRD enum; a value outside it is reported and read as unset."""
        value = self.opt_text(key)
        if value is None or value in allowed:
            return value
        self.errs.schema(self.at(key), _unsupported(value, allowed))
        return None

    def require(self, key: str) -> bool:
        if self.has(key):
            return True
        self.errs.schema(self.at(key), _REQUIRED)
        return False


def _gates(features: Mapping[str, bool] | None) -> dict[str, bool]:
    gates = dict(c.FEATURE_GATE_DEFAULTS)
    if isinstance(features, Mapping):
        for name, enabled in features.items():
            if isinstance(name, str):
                gates[name] = bool(enabled)
    return gates


def _root(errs: _Errors, obj: object, kind: str) -> _View | None:
    """The whole object as a view, or None (reported) when it is not an object."""
    if not isinstance(obj, Mapping):
        errs.schema("", f"must be of type object, not {_type_name(obj)}")
        return None
    root = _View(errs, obj, "")
    found = root.raw("kind")
    if found is not None and found != kind:
        errs.schema("kind", f"expected {_go_quote(kind)}, got {_go_quote(str(found))}")
    return root


# --------------------------------------------------------------------------------------------------------------------
# Kubernetes name and label syntax (apimachinery pkg/util/validation)
# --------------------------------------------------------------------------------------------------------------------

_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character"
)
_QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT: Final = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character"
)
_DNS1035_LABEL_RE: Final = re.compile(_DNS1035_LABEL_FMT)
_DNS1123_LABEL_RE: Final = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_QUALIFIED_NAME_RE: Final = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _dns1035_label_errors(value: str) -> list[str]:
    errors = []
    if _byte_len(value) > c.DNS1035_LABEL_MAX_LENGTH:
        errors.append(_max_len_error(c.DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errors.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errors


def _dns1123_label_errors(value: str) -> list[str]:
    errors = []
    if _byte_len(value) > c.DNS1123_LABEL_MAX_LENGTH:
        errors.append(_max_len_error(c.DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        errors.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def _dns1123_subdomain_errors(value: str) -> list[str]:
    errors = []
    if _byte_len(value) > c.DNS1123_SUBDOMAIN_MAX_LENGTH:
        errors.append(_max_len_error(c.DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errors.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def _qualified_name_errors(value: str) -> list[str]:
    """Why ``value`` is not a Kubernetes qualified name (a label key), in apimachinery's words."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + e for e in _dns1123_subdomain_errors(prefix))
    else:
        example = _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        return [f"a qualified name {example} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errors.append("name part must be non-empty")
    elif _byte_len(name) > c.QUALIFIED_NAME_MAX_LENGTH:
        errors.append("name part " + _max_len_error(c.QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errors.append(
            "name part " + _regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def _label_value_errors(value: str) -> list[str]:
    errors = []
    if _byte_len(value) > c.LABEL_VALUE_MAX_LENGTH:
        errors.append(_max_len_error(c.LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errors.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def _go_list(items: Sequence[str]) -> str:
    """Go's ``%v`` of a ``[]string``."""
    return "[" + " ".join(items) + "]"


# --------------------------------------------------------------------------------------------------------------------
# Ray versions (apimachinery util/version ParseGeneric)
# --------------------------------------------------------------------------------------------------------------------

_GENERIC_VERSION_RE: Final = re.compile(r"[\t\n\f\r ]*v?([0-9]+(?:\.[0-9]+)*)(.*)")
_UINT64_MAX: Final = 2**64 - 1


def _parse_generic_version(text: str) -> tuple[tuple[int, ...] | None, str]:
    """Dotted numbers of ``text`` and ``""``, or ``None`` and apimachinery's error text."""
    match = _GENERIC_VERSION_RE.fullmatch(text)
    if match is None:
        return None, f"could not parse {_go_quote(text)} as version"
    components = match.group(1).split(".")
    if len(components) < 2:
        return None, f"illegal version string {_go_quote(text)}"
    numbers: list[int] = []
    for i, component in enumerate(components):
        if i == 0 and component.startswith("0") and component != "0":
            return None, f"illegal zero-prefixed version component {_go_quote(component)} in {_go_quote(text)}"
        number = int(component)
        if number > _UINT64_MAX:
            return None, (
                f"illegal non-numeric version component {_go_quote(component)} in {_go_quote(text)}: "
                f"strconv.ParseUint: parsing {_go_quote(component)}: value out of range"
            )
        numbers.append(number)
    return tuple(numbers), ""


def _version_less(version: tuple[int, ...], minimum: tuple[int, ...]) -> bool:
    width = max(len(version), len(minimum))
    return version + (0,) * (width - len(version)) < minimum + (0,) * (width - len(minimum))


def parse_ray_version(version: object) -> tuple[int, ...] | None:
    """The numbers of a ``rayVersion`` ("2.52.0rc1" gives (2, 52, 0)), or None when KubeRay could not parse it."""
    if not isinstance(version, str):
        return None
    return _parse_generic_version(version)[0]


def ray_version_at_least(version: object, minimum: str) -> bool:
    """Whether ``version`` is ``minimum`` or later; unset and unparsable versions count as old, as in KubeRay."""
    parsed = parse_ray_version(version)
    wanted = parse_ray_version(minimum)
    return parsed is not None and wanted is not None and not _version_less(parsed, wanted)


# --------------------------------------------------------------------------------------------------------------------
# Go syntax the validators accept: durations, Atoi and robfig/cron schedules
# --------------------------------------------------------------------------------------------------------------------

_DURATION_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,
    "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_INT64_MAX: Final = 2**63 - 1


class _Invalid(ValueError):
    """Raised inside the Go-syntax parsers below with the text Go would give; never leaves this module."""


_DURATION_PART_RE: Final = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def _go_parse_duration(text: str) -> int:
    """Nanoseconds of a Go duration string, as ``time.ParseDuration`` reads it; raises :class:`_Invalid`."""
    invalid = f"time: invalid duration {_go_quote(text)}"
    rest = text[1:] if text[:1] in ("-", "+") else text
    sign = -1 if text[:1] == "-" else 1
    if rest == "0":
        return 0
    if not rest:
        raise _Invalid(invalid)
    total = 0
    while rest:
        part = _DURATION_PART_RE.match(rest)
        if part is None or not (part.group(1) or part.group(2)):
            raise _Invalid(invalid)
        whole, fraction, unit = part.group(1), part.group(2) or "", part.group(3)
        if not unit:
            raise _Invalid(f"time: missing unit in duration {_go_quote(text)}")
        scale = _DURATION_UNITS.get(unit)
        if scale is None:
            raise _Invalid(f"time: unknown unit {_go_quote(unit)} in duration {_go_quote(text)}")
        total += int(whole or "0") * scale + (int(fraction) * scale // 10 ** len(fraction) if fraction else 0)
        if total > _INT64_MAX:
            raise _Invalid(invalid)
        rest = rest[part.end() :]
    return sign * total


_ATOI_RE: Final = re.compile(r"[+-]?[0-9]+")


def _go_atoi(text: str) -> int:
    """Go's ``strconv.Atoi``; raises :class:`_Invalid` with its error text."""
    if not _ATOI_RE.fullmatch(text):
        raise _Invalid(f"strconv.Atoi: parsing {_go_quote(text)}: invalid syntax")
    number = int(text)
    if not -(2**63) <= number <= _INT64_MAX:
        raise _Invalid(f"strconv.Atoi: parsing {_go_quote(text)}: value out of range")
    return number


_MONTH_NAMES: Final = {m: i + 1 for i, m in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug"])} | {
    m: i + 9 for i, m in enumerate(["sep", "oct", "nov", "dec"])
}
_DOW_NAMES: Final = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# minute, hour, day of month, month, day of week (robfig/cron v3 bounds)
_CRON_FIELDS: Final[tuple[tuple[int, int, Mapping[str, int]], ...]] = (
    (0, 59, {}),
    (0, 23, {}),
    (1, 31, {}),
    (1, 12, _MONTH_NAMES),
    (0, 6, _DOW_NAMES),
)
# Go's unicode.IsSpace, which strings.Fields splits on: Python's \s less the separators U+001C..U+001F.
_GO_SPACE_RE: Final = re.compile(r"(?:(?![\x1c-\x1f])\s)+")
_CRON_DESCRIPTORS: Final = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


def _cron_number(text: str, names: Mapping[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    try:
        number = _go_atoi(text)
    except _Invalid as error:
        raise _Invalid(f"failed to parse int from {text}: {error}") from None
    if number < 0:
        raise _Invalid(f"negative number ({number}) not allowed: {text}")
    return number


def _check_cron_range(expr: str, low: int, high: int, names: Mapping[str, int]) -> None:
    """One comma-separated part of a cron field (``a``, ``a-b``, ``*``, each with an optional ``/step``)."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _cron_number(low_and_high[0], names)
        if len(low_and_high) > 2:
            raise _Invalid(f"too many hyphens: {expr}")
        end = _cron_number(low_and_high[1], names) if len(low_and_high) == 2 else start
    if len(range_and_step) > 2:
        raise _Invalid(f"too many slashes: {expr}")
    step = _cron_number(range_and_step[1], {}) if len(range_and_step) == 2 else 1
    if len(range_and_step) == 2 and len(low_and_high) == 1:
        end = high
    problems = (
        (start < low, f"beginning of range ({start}) below minimum ({low}): {expr}"),
        (end > high, f"end of range ({end}) above maximum ({high}): {expr}"),
        (start > end, f"beginning of range ({start}) beyond end of range ({end}): {expr}"),
        (step == 0, f"step of range should be a positive number: {expr}"),
    )
    for failed, message in problems:
        if failed:
            raise _Invalid(message)


def _check_cron_descriptor(schedule: str) -> None:
    every = "@every "
    if schedule.startswith(every):
        try:
            _go_parse_duration(schedule[len(every) :])
        except _Invalid as error:
            raise _Invalid(f"failed to parse duration {schedule}: {error}") from None
    elif schedule not in _CRON_DESCRIPTORS:
        raise _Invalid(f"unrecognized descriptor: {schedule}")


def _check_cron(schedule: str) -> None:
    """Parse ``schedule`` as robfig/cron's ``ParseStandard`` does; raises :class:`_Invalid` with its error text."""
    if not schedule:
        raise _Invalid("empty spec string")
    if schedule.startswith("@"):
        _check_cron_descriptor(schedule)
        return
    fields = [field for field in _GO_SPACE_RE.split(schedule) if field]
    if len(fields) != len(_CRON_FIELDS):
        raise _Invalid(f"expected exactly {len(_CRON_FIELDS)} fields, found {len(fields)}: {_go_list(fields)}")
    for text, (low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
        for expr in (part for part in text.split(",") if part):
            _check_cron_range(expr, low, high, names)


def _cron_error(schedule: str) -> str:
    """Why robfig/cron's ``ParseStandard`` rejects ``schedule`` (its own error text), or ``""``."""
    try:
        _check_cron(schedule)
    except _Invalid as error:
        return str(error)
    return ""


@functools.lru_cache(maxsize=256)
def _time_zone_error(name: str) -> str:
    """Why Go's ``time.LoadLocation`` rejects ``name``, or ``""``."""
    if name in ("UTC", "Local"):
        return ""
    if ".." in name or name.startswith(("/", "\\")):
        return "time: invalid location name"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {name}"
    return ""


# --------------------------------------------------------------------------------------------------------------------
# Pod templates: the few fields the rules look at
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _EnvVar:
    path: str
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class _Mount:
    path: str
    name: str
    mount_path: str


@dataclass(frozen=True, slots=True)
class _Container:
    path: str
    name: str
    env: tuple[_EnvVar, ...]
    mounts: tuple[_Mount, ...]

    def env_var(self, name: str) -> _EnvVar | None:
        return next((e for e in self.env if e.name == name), None)


@dataclass(frozen=True, slots=True)
class _Template:
    path: str
    present: bool
    containers: tuple[_Container, ...]
    restart_policy: str
    volumes: tuple[tuple[str, str], ...]

    @property
    def spec_path(self) -> str:
        return _child(self.path, "spec")

    @property
    def ray_container(self) -> _Container | None:
        return self.containers[c.RAY_CONTAINER_INDEX] if self.containers else None

    def ray_env(self, name: str) -> _EnvVar | None:
        container = self.ray_container
        return None if container is None else container.env_var(name)


def _read_env(view: _View, key: str) -> tuple[_EnvVar, ...]:
    out = []
    for item in view.objects(key):
        item.obj("valueFrom")
        out.append(_EnvVar(item.path, item.text("name"), item.text("value")))
    return tuple(out)


def _read_mounts(view: _View, key: str) -> tuple[_Mount, ...]:
    return tuple(_Mount(m.path, m.text("name"), m.text("mountPath")) for m in view.objects(key))


def _read_container(view: _View) -> _Container:
    return _Container(view.path, view.text("name"), _read_env(view, "env"), _read_mounts(view, "volumeMounts"))


def _read_template(group: _View) -> _Template:
    template = group.obj("template")
    spec = template.obj("spec")
    containers = tuple(_read_container(v) for v in spec.objects("containers"))
    volumes = tuple((v.path, v.text("name")) for v in spec.objects("volumes"))
    return _Template(template.path, template.present, containers, spec.text("restartPolicy"), volumes)


# --------------------------------------------------------------------------------------------------------------------
# RayCluster spec
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Group:
    path: str
    label: str
    ray_start_params_path: str
    ray_start_params: dict[str, str]
    resources: dict[str, str]
    labels: dict[str, str]
    template: _Template
    suspend: bool = False
    min_replicas: int | None = None
    max_replicas: int | None = None
    idle_timeout_seconds: int | None = None
    priority: int | None = None


@dataclass(frozen=True, slots=True)
class _ClusterSummary:
    """What RayJob and RayService rules need to know of their embedded cluster spec."""

    autoscaling: bool
    head_template: _Template
    k8s_token_auth: bool
    k8s_token_auth_path: str
    head_service_name: str
    head_service_name_path: str


def _read_group(view: _View, label: str) -> _Group:
    ray_start_params = view.string_map("rayStartParams")
    return _Group(
        path=view.path,
        label=label,
        ray_start_params_path=view.at("rayStartParams"),
        ray_start_params=ray_start_params,
        resources=view.string_map("resources"),
        labels=view.string_map("labels"),
        template=_read_template(view),
    )


def _replicas(view: _View, key: str, default: int) -> int | None:
    """A CRD-defaulted int32: absent reads as the default the API server stores, explicit null as unset."""
    if not view.has_key(key):
        return default
    return view.integer(key)


def _check_group_common(errs: _Errors, group: _Group, *, is_head: bool) -> None:
    if group.template.present and not group.template.containers:
        which = "headGroupSpec" if is_head else "workerGroupSpec"
        errs.kuberay(_child(group.template.spec_path, "containers"), f"{which} should have at least one container")

    if group.resources and any(group.ray_start_params.get(p) for p in c.RAY_START_RESOURCE_PARAMS):
        errs.kuberay(
            _child(group.path, "resources"),
            f"resource fields should not be set in both rayStartParams and Resources for {group.label} group; "
            "please use only one",
        )

    if c.RAY_START_LABELS_PARAM in group.ray_start_params:
        errs.kuberay(
            _key(group.ray_start_params_path, c.RAY_START_LABELS_PARAM),
            f"rayStartParams['labels'] is not supported for {group.label} group; "
            "please use the top-level Labels field instead",
        )
    labels_path = _child(group.path, "labels")
    for key in sorted(group.labels):
        value = group.labels[key]
        for reason in _qualified_name_errors(key):
            errs.kuberay(_key(labels_path, key), f"invalid label key for {group.label} group: '{key}', error: {reason}")
        for reason in _label_value_errors(value):
            errs.kuberay(
                _key(labels_path, key),
                f"invalid label value for key '{key}' in {group.label} group: '{value}', error: {reason}",
            )


def _autoscaler_v2_by_env(head: _Template) -> bool:
    env = head.ray_env(c.RAY_ENABLE_AUTOSCALER_V2)
    return env is not None and env.value in c.RAY_ENABLE_AUTOSCALER_V2_TRUE_VALUES


def _check_version_gate(
    errs: _Errors, path: str, ray_version: str, minimum: str, *, unset: str, invalid: str, too_old: str
) -> bool:
    """KubeRay's three-way Ray version check: not specified, unparsable, or older than ``minimum``; True if none."""
    if ray_version == "":
        errs.kuberay(path, unset)
        return False
    parsed, error = _parse_generic_version(ray_version)
    if parsed is None:
        errs.kuberay(path, f"{invalid}: {ray_version}, {error}")
        return False
    wanted, _ = _parse_generic_version(minimum)
    if wanted is not None and _version_less(parsed, wanted):
        errs.kuberay(path, f"{too_old} is {minimum}, got {ray_version}")
        return False
    return True


def _check_worker_extras(
    errs: _Errors, group: _Group, *, ray_version: str, ray_version_path: str, autoscaler_v2: bool
) -> None:
    idle = group.idle_timeout_seconds
    if idle is not None:
        if idle < 0:
            errs.kuberay(
                _child(group.path, "idleTimeoutSeconds"),
                f"worker group {group.label}: idleTimeoutSeconds must be non-negative, got {idle}",
            )
        elif not autoscaler_v2:
            errs.kuberay(
                _child(group.path, "idleTimeoutSeconds"),
                f"worker group {group.label}: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. "
                "Please set .spec.autoscalerOptions.version to 'v2' (or set "
                f"{c.RAY_ENABLE_AUTOSCALER_V2} environment variable to 'true' in the head pod if using "
                "KubeRay < 1.4.0)",
            )
    priority = group.priority
    if priority:
        version_ok = _check_version_gate(
            errs,
            ray_version_path,
            ray_version,
            c.MIN_RAY_VERSION_WORKER_GROUP_PRIORITY,
            unset=f"worker group {group.label}: priority is set, but RayVersion was not specified. "
            f"Ray version {c.MIN_RAY_VERSION_WORKER_GROUP_PRIORITY} or later is required",
            invalid=f"worker group {group.label}: priority is set, but RayVersion format is invalid",
            too_old=f"worker group {group.label}: priority is set, but minimum Ray version",
        )
        if version_ok and not autoscaler_v2:
            errs.kuberay(
                _child(group.path, "priority"),
                f"worker group {group.label}: priority is set to {priority}, but autoscaler v2 is not enabled. "
                "Priority is only supported with autoscaler v2 enabled",
            )


def _check_gcs_ft(
    errs: _Errors,
    spec: _View,
    head: _Group,
    *,
    annotations: Mapping[str, str],
    annotations_path: str,
    gates: Mapping[str, bool],
) -> None:
    ft_view = spec.obj("gcsFaultToleranceOptions")
    has_options = ft_view.present
    head_template = head.template
    if annotations.get(c.RAY_FT_ENABLED_ANNOTATION, "") != "" and has_options:
        errs.kuberay(
            ft_view.path,
            f"{c.RAY_FT_ENABLED_ANNOTATION} annotation and GcsFaultToleranceOptions are both set. "
            "Please use only GcsFaultToleranceOptions to configure GCS fault tolerance",
        )
    ft_enabled = annotations.get(c.RAY_FT_ENABLED_ANNOTATION, "").lower() == "true" or has_options
    redis_address_env = head_template.ray_env(c.RAY_REDIS_ADDRESS)
    if not ft_enabled and redis_address_env is not None:
        errs.kuberay(
            redis_address_env.path,
            f"{c.RAY_REDIS_ADDRESS} is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions "
            "is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance",
        )
    if has_options:
        if head.ray_start_params.get(c.RAY_START_REDIS_PASSWORD_PARAM):
            errs.kuberay(
                _key(head.ray_start_params_path, c.RAY_START_REDIS_PASSWORD_PARAM),
                "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.RedisPassword instead",
            )
        password_env = head_template.ray_env(c.REDIS_PASSWORD)
        if password_env is not None:
            errs.kuberay(
                password_env.path,
                "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.RedisPassword instead",
            )
        if redis_address_env is not None:
            errs.kuberay(
                redis_address_env.path,
                "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.RedisAddress instead",
            )
        if annotations.get(c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION, ""):
            errs.kuberay(
                _key(annotations_path, c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION),
                "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - "
                "use GcsFaultToleranceOptions.ExternalStorageNamespace instead",
            )
    _check_gcs_ft_backend(errs, ft_view, head_template, gates)

    username_message = (
        "cannot set redis username in rayStartParams or environment variables - "
        "use GcsFaultToleranceOptions.RedisUsername instead"
    )
    if head.ray_start_params.get(c.RAY_START_REDIS_USERNAME_PARAM):
        errs.kuberay(_key(head.ray_start_params_path, c.RAY_START_REDIS_USERNAME_PARAM), username_message)
    username_env = head_template.ray_env(c.REDIS_USERNAME)
    if username_env is not None:
        errs.kuberay(username_env.path, username_message)


def _check_gcs_ft_backend(errs: _Errors, ft: _View, head: _Template, gates: Mapping[str, bool]) -> None:
    """Types of the options, and the backend rules (``validateGcsFaultToleranceBackend``)."""
    backend = ft.enum("backend", c.GCS_FT_BACKENDS)
    for key in ("redisAddress", "externalStorageNamespace"):
        ft.text(key)
    for key in ("redisUsername", "redisPassword"):
        credential = ft.obj(key)
        credential.text("value")
        credential.obj("valueFrom")
    storage = ft.obj("storage")
    for key in ("claimName", "storageClassName", "subPath"):
        storage.text(key)
    storage.array("accessModes")
    storage.enum("deletionPolicy", c.GCS_STORAGE_DELETION_POLICIES)
    if not ft.present:
        return
    if backend != c.GCS_FT_BACKEND_ROCKSDB:
        if storage.present:
            errs.kuberay(
                storage.path,
                "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - "
                "it only applies to the 'rocksdb' backend",
            )
        return
    if not gates.get(c.GATE_GCS_FT_EMBEDDED_STORAGE, False):
        errs.kuberay(
            ft.at("backend"),
            "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') "
            f"requires the {c.GATE_GCS_FT_EMBEDDED_STORAGE} feature gate to be enabled",
        )
    _check_rocksdb(errs, ft, storage, head)


def _check_rocksdb(errs: _Errors, ft: _View, storage: _View, head: _Template) -> None:
    """The embedded backend: no Redis fields, a consistent ``storage``, and no KubeRay-managed env or volume."""
    redis_address = ft.text("redisAddress")
    external_ns = ft.text("externalStorageNamespace")
    for present, key, field in (
        (redis_address != "", "redisAddress", "RedisAddress"),
        (ft.has("redisUsername"), "redisUsername", "RedisUsername"),
        (ft.has("redisPassword"), "redisPassword", "RedisPassword"),
        (external_ns != "", "externalStorageNamespace", "ExternalStorageNamespace"),
    ):
        if present:
            errs.kuberay(ft.at(key), f"cannot set GcsFaultToleranceOptions.{field} when backend is 'rocksdb'")
    if storage.text("claimName") and (
        storage.has("size") or storage.opt_text("storageClassName") is not None or storage.array("accessModes")
    ):
        errs.kuberay(
            storage.at("claimName"),
            "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, "
            "and accessModes",
        )
    for name in (c.RAY_GCS_STORAGE, c.RAY_GCS_STORAGE_PATH):
        env = head.ray_env(name)
        if env is not None:
            errs.kuberay(
                env.path,
                f"cannot set `{c.RAY_GCS_STORAGE}` or `{c.RAY_GCS_STORAGE_PATH}` env var in head Pod when the "
                "embedded GCS FT backend is used - these are managed by KubeRay",
            )
    container = head.ray_container
    for mount in container.mounts if container is not None else ():
        if mount.mount_path == c.GCS_STORAGE_MOUNT_PATH or mount.name == c.GCS_STORAGE_VOLUME_NAME:
            errs.kuberay(
                mount.path,
                f"cannot set a volume mount named {_go_quote(c.GCS_STORAGE_VOLUME_NAME)} or mounted at "
                f"{c.GCS_STORAGE_MOUNT_PATH} in the head container when the embedded GCS FT backend is used - "
                "it is managed by KubeRay",
            )
    for volume_path, volume_name in head.volumes:
        if volume_name == c.GCS_STORAGE_VOLUME_NAME:
            errs.kuberay(
                volume_path,
                f"cannot set a volume named {_go_quote(c.GCS_STORAGE_VOLUME_NAME)} in the head Pod when the "
                "embedded GCS FT backend is used - it is managed by KubeRay",
            )


def _check_history_server(
    errs: _Errors, spec: _View, head: _Group, workers: Sequence[_Group], gates: Mapping[str, bool]
) -> None:
    options = spec.obj("historyServerOptions")
    collector = options.obj("collectorOptions")
    image = collector.opt_text("image")
    collector.opt_text("imagePullPolicy")
    collector.obj("resources")
    _read_env(collector, "env")
    if not options.present:
        return
    if not gates.get(c.GATE_RAYCLUSTER_HISTORY_SERVER, False):
        errs.kuberay(options.path, f"{c.GATE_RAYCLUSTER_HISTORY_SERVER} feature gate is not enabled")
    if not collector.present:
        errs.kuberay(collector.path, "historyServerOptions.collectorOptions must be set")
        return
    if not image:
        errs.kuberay(collector.at("image"), "historyServerOptions.collectorOptions.image must be set")
    for container in head.template.containers:
        if container.name == c.COLLECTOR_CONTAINER_NAME:
            errs.kuberay(
                _child(container.path, "name"),
                f"head pod template must not define a container with name '{c.COLLECTOR_CONTAINER_NAME}' when "
                "history server collector options are enabled",
            )
    for worker in workers:
        for container in worker.template.containers:
            if container.name == c.COLLECTOR_CONTAINER_NAME:
                errs.kuberay(
                    _child(container.path, "name"),
                    f"worker group {worker.label} pod template must not define a container with name "
                    f"'{c.COLLECTOR_CONTAINER_NAME}' when history server collector options are enabled",
                )


def _check_auth(errs: _Errors, spec: _View, ray_version: str) -> tuple[bool, str]:
    """Auth rules; returns whether K8s token auth is on and the path of its switch."""
    auth = spec.obj("authOptions")
    mode = auth.enum("mode", c.AUTH_MODES)
    k8s_token_auth = auth.flag("enableK8sTokenAuth")
    secret_name = auth.text("secretName")
    k8s_path = auth.at("enableK8sTokenAuth")
    if not auth.present:
        return False, k8s_path
    if mode == c.AUTH_MODE_TOKEN:
        version_ok = _check_version_gate(
            errs,
            spec.at("rayVersion"),
            ray_version,
            c.MIN_RAY_VERSION_TOKEN_AUTH,
            unset="authOptions.mode is 'token' but RayVersion was not specified. "
            f"Ray version {c.MIN_RAY_VERSION_TOKEN_AUTH} or later is required",
            invalid="authOptions.mode is 'token' but RayVersion format is invalid",
            too_old="authOptions.mode is 'token' but minimum Ray version",
        )
        if k8s_token_auth and version_ok:
            _check_version_gate(
                errs,
                spec.at("rayVersion"),
                ray_version,
                c.MIN_RAY_VERSION_K8S_TOKEN_AUTH,
                unset="",
                invalid="",
                too_old="authOptions.enableK8sTokenAuth is enabled but minimum Ray version",
            )
        if k8s_token_auth and secret_name:
            errs.kuberay(
                auth.at("secretName"),
                "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
            )
    elif k8s_token_auth:
        errs.kuberay(k8s_path, "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'")
    return k8s_token_auth, k8s_path


def _check_network_policy(errs: _Errors, spec: _View, workers: Sequence[_Group], gates: Mapping[str, bool]) -> None:
    policy = spec.obj("networkPolicy")
    mode = policy.enum("mode", c.NETWORK_POLICY_MODES) or c.NETWORK_POLICY_DENY_ALL
    rule_sets: list[tuple[str, _View]] = [("networkPolicy.head", policy.obj("head"))]
    rule_sets.append(("networkPolicy.worker", policy.obj("worker")))
    per_group: list[tuple[str, str, _View]] = []
    for item in policy.objects("workerGroups"):
        name = item.text("groupName")
        if not item.has("groupName"):
            errs.schema(item.at("groupName"), _REQUIRED)
        per_group.append((name, f"networkPolicy.workerGroups[{_go_quote(name)}]", item))
    if not policy.present:
        return
    if not gates.get(c.GATE_RAYCLUSTER_NETWORK_POLICY, False):
        errs.kuberay(
            policy.path,
            f"spec.networkPolicy requires the {c.GATE_RAYCLUSTER_NETWORK_POLICY} feature gate to be enabled",
        )
    quoted_mode = _go_quote(mode)
    for label, rules in [*rule_sets, *((label, view) for _, label, view in per_group)]:
        ingress = rules.array("ingressRules")
        egress = rules.array("egressRules")
        if mode == c.NETWORK_POLICY_DENY_ALL_EGRESS and ingress:
            errs.kuberay(
                rules.at("ingressRules"),
                f"{label}.ingressRules cannot be set when mode is {quoted_mode} (ingress is not restricted)",
            )
        if mode == c.NETWORK_POLICY_DENY_ALL_INGRESS and egress:
            errs.kuberay(
                rules.at("egressRules"),
                f"{label}.egressRules cannot be set when mode is {quoted_mode} (egress is not restricted)",
            )
    group_names = set()
    for worker in workers:
        reasons = _dns1123_label_errors(worker.label)
        if reasons:
            errs.kuberay(
                _child(worker.path, "groupName"),
                f"worker group name {_go_quote(worker.label)} must be a valid DNS1123 label when networkPolicy is "
                f"enabled (it is embedded in the NetworkPolicy name): {_go_list(reasons)}",
            )
        group_names.add(worker.label)
    for name, label, item in per_group:
        if name not in group_names:
            errs.kuberay(item.at("groupName"), f"{label} does not match any group name in workerGroupSpecs")


def _check_tls(
    errs: _Errors,
    spec: _View,
    head: _Group,
    workers: Sequence[_Group],
    *,
    autoscaler: _View,
    gates: Mapping[str, bool],
) -> None:
    tls = spec.obj("tlsOptions")
    enabled = tls.flag("enabled")
    if not tls.present:
        return
    if not gates.get(c.GATE_RAYCLUSTER_MTLS, False):
        errs.kuberay(tls.path, f"spec.tlsOptions requires the {c.GATE_RAYCLUSTER_MTLS} feature gate to be enabled")
    if not enabled:
        return
    managed = "- the operator manages TLS configuration automatically"
    places: list[tuple[str, _Container | None]] = [("head Pod", head.template.ray_container)]
    places += [(f"worker group {_go_quote(w.label)}", w.template.ray_container) for w in workers]
    for where, container in places:
        if container is None:
            continue
        for name in c.RAY_TLS_ENV_VARS:
            env = container.env_var(name)
            if env is not None:
                errs.kuberay(
                    env.path, f"cannot set {name} environment variable in {where} when tlsOptions is set {managed}"
                )
        _check_tls_mounts(errs, container.mounts, where, managed)
    if autoscaler.present:
        for env in _read_env(autoscaler, "env"):
            if env.name in c.RAY_TLS_ENV_VARS:
                errs.kuberay(
                    env.path,
                    f"cannot set {env.name} environment variable in autoscalerOptions.env when tlsOptions is set "
                    "- the operator manages TLS configuration for the autoscaler automatically",
                )
        _check_tls_mounts(errs, _read_mounts(autoscaler, "volumeMounts"), "autoscalerOptions.volumeMounts", managed)


def _check_tls_mounts(errs: _Errors, mounts: Sequence[_Mount], where: str, managed: str) -> None:
    for mount in mounts:
        if mount.name == c.RAY_TLS_VOLUME_NAME:
            errs.kuberay(
                mount.path,
                f"cannot use volume mount named {_go_quote(c.RAY_TLS_VOLUME_NAME)} in {where} when tlsOptions is set "
                f"{managed}",
            )
        elif mount.mount_path == c.RAY_TLS_CERT_MOUNT_PATH:
            errs.kuberay(
                mount.path,
                f"cannot use volume mount at path {_go_quote(c.RAY_TLS_CERT_MOUNT_PATH)} in {where} when tlsOptions "
                f"is set {managed}",
            )


def _check_managed_by(errs: _Errors, spec: _View) -> None:
    managed_by = spec.opt_text("managedBy")
    if managed_by is not None and managed_by not in c.MANAGED_BY_VALUES:
        errs.schema(
            spec.at("managedBy"),
            f"the managedBy field value must be either '{c.MANAGED_BY_KUBERAY}' or '{c.MANAGED_BY_MULTIKUEUE}'",
        )


def _read_worker(errs: _Errors, view: _View) -> _Group:
    """One worker group, with its type checks and CRD requirements."""
    name = view.opt_text("groupName")
    if view.raw("groupName") is None:
        errs.schema(view.at("groupName"), _REQUIRED)
    elif name == "":
        errs.schema(view.at("groupName"), "must be non-empty")
    if not view.has("template"):
        errs.schema(view.at("template"), _REQUIRED)
    view.integer("replicas")
    view.integer("numOfHosts")
    scale = view.obj("scaleStrategy")
    for i, worker in enumerate(scale.array("workersToDelete") or []):
        if not isinstance(worker, str):
            errs.schema(_index(scale.at("workersToDelete"), i), f"must be of type string, not {_type_name(worker)}")
    base = _read_group(view, name or "")
    return _Group(
        path=base.path,
        label=base.label,
        ray_start_params_path=base.ray_start_params_path,
        ray_start_params=base.ray_start_params,
        resources=base.resources,
        labels=base.labels,
        template=base.template,
        suspend=view.flag("suspend"),
        min_replicas=_replicas(view, "minReplicas", c.DEFAULT_MIN_REPLICAS),
        max_replicas=_replicas(view, "maxReplicas", c.DEFAULT_MAX_REPLICAS),
        idle_timeout_seconds=view.integer("idleTimeoutSeconds"),
        priority=view.integer("priority"),
    )


def _check_replicas(errs: _Errors, group: _Group, *, autoscaling: bool) -> None:
    low, high = group.min_replicas, group.max_replicas
    if not autoscaling and (low is None or high is None):
        missing = "minReplicas" if low is None else "maxReplicas"
        errs.kuberay(
            _child(group.path, missing),
            f"worker group {group.label} must set both minReplicas and maxReplicas when autoscaling is disabled",
        )
    if low is not None and low < 0:
        errs.kuberay(_child(group.path, "minReplicas"), f"worker group {group.label} has negative minReplicas {low}")
    if high is not None and high < 0:
        errs.kuberay(_child(group.path, "maxReplicas"), f"worker group {group.label} has negative maxReplicas {high}")
    if low is not None and high is not None and low > high:
        errs.kuberay(
            _child(group.path, "minReplicas"),
            f"worker group {group.label} has minReplicas {low} greater than maxReplicas {high}",
        )


def _check_workers(
    errs: _Errors, spec: _View, *, autoscaling: bool, ray_version: str, autoscaler_v2: bool
) -> list[_Group]:
    """Read and check every worker group; returns them for the cluster-wide rules."""
    workers: list[_Group] = []
    seen_names: set[str] = set()
    for view in spec.objects("workerGroupSpecs"):
        group = _read_worker(errs, view)
        name = view.raw("groupName")
        if isinstance(name, str):
            if name in seen_names:
                errs.schema(view.path, "worker group names must be unique")
            seen_names.add(name)
        workers.append(group)
        _check_group_common(errs, group, is_head=False)
        _check_replicas(errs, group, autoscaling=autoscaling)
        _check_worker_extras(
            errs, group, ray_version=ray_version, ray_version_path=spec.at("rayVersion"), autoscaler_v2=autoscaler_v2
        )
    return workers


def _check_group_suspend(
    errs: _Errors, workers: Sequence[_Group], *, autoscaling: bool, gates: Mapping[str, bool]
) -> None:
    for group in (g for g in workers if g.suspend):
        if not gates.get(c.GATE_RAYJOB_DELETION_POLICY, False):
            errs.kuberay(
                _child(group.path, "suspend"),
                f"worker group {group.label} can be suspended only when the {c.GATE_RAYJOB_DELETION_POLICY} feature "
                "gate is enabled",
            )
        if autoscaling:
            errs.kuberay(
                _child(group.path, "suspend"), f"worker group {group.label} cannot be suspended with Autoscaler enabled"
            )


def _check_autoscaler(
    errs: _Errors, autoscaler: _View, head: _Template, workers: Sequence[_Group], *, autoscaling: bool
) -> None:
    version = autoscaler.enum("version", c.AUTOSCALER_VERSIONS)
    idle = autoscaler.integer("idleTimeoutSeconds")
    v2_env = head.ray_env(c.RAY_ENABLE_AUTOSCALER_V2)
    if not autoscaling and v2_env is not None and v2_env.value in c.RAY_ENABLE_AUTOSCALER_V2_TRUE_VALUES:
        errs.kuberay(
            v2_env.path,
            f"environment variable {c.RAY_ENABLE_AUTOSCALER_V2} cannot be set to '{v2_env.value}' when "
            "enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use autoscaler v2",
        )
    if autoscaling and version is not None and v2_env is not None:
        errs.kuberay(
            autoscaler.at("version"),
            f"both .spec.autoscalerOptions.version and head Pod env var {c.RAY_ENABLE_AUTOSCALER_V2} are set, "
            "please only use the former",
        )
    if autoscaling and version == c.AUTOSCALER_VERSION_V2:
        if head.restart_policy not in ("", c.RESTART_POLICY_NEVER):
            errs.kuberay(
                _child(head.spec_path, "restartPolicy"),
                "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
            )
        for group in workers:
            if group.template.restart_policy not in ("", c.RESTART_POLICY_NEVER):
                errs.kuberay(
                    _child(group.template.spec_path, "restartPolicy"),
                    f"restartPolicy for worker group {group.label} should be Never or unset when using autoscaler V2",
                )
    if idle is not None and idle < 0:
        errs.kuberay(
            autoscaler.at("idleTimeoutSeconds"),
            f"autoscalerOptions.idleTimeoutSeconds must be non-negative, got {idle}",
        )
    for env in _read_env(autoscaler, "env"):
        if env.name == c.KUBERAY_GEN_AUTOSCALER_START_CMD:
            errs.kuberay(
                env.path,
                f"autoscalerOptions.env must not contain {c.KUBERAY_GEN_AUTOSCALER_START_CMD}: it is managed by "
                "KubeRay and injected automatically into the autoscaler container",
            )


def _read_head(errs: _Errors, spec: _View) -> tuple[_Group, _View]:
    """The head group and its ``headService`` view."""
    head_view = spec.obj("headGroupSpec")
    if not head_view.present:
        errs.schema(head_view.path, _REQUIRED)
    elif not head_view.has("template"):
        errs.schema(head_view.at("template"), _REQUIRED)
    head = _read_group(head_view, "Head")
    head_view.text("serviceType")
    head_view.opt_flag("enableIngress")
    head_view.obj("ingressOptions").enum("pathType", c.INGRESS_PATH_TYPES)
    return head, head_view.obj("headService")


def _check_cluster_spec(
    errs: _Errors,
    spec_value: object,
    *,
    annotations: Mapping[str, str],
    annotations_path: str,
    gates: Mapping[str, bool],
    path: str,
    embedded: bool,
) -> _ClusterSummary:
    """Every RayCluster spec rule; ``embedded`` when the spec is a RayJob's or RayService's cluster template."""
    spec = _View.of(errs, spec_value, path)
    _check_managed_by(errs, spec)
    ray_version = spec.text("rayVersion")
    autoscaling = spec.flag("enableInTreeAutoscaling")
    spec.flag("suspend")
    spec.string_map("headServiceAnnotations")
    autoscaler = spec.obj("autoscalerOptions")
    autoscaler.enum("upscalingMode", c.UPSCALING_MODES)
    if embedded:
        spec.obj("upgradeStrategy").enum("type", c.RAYCLUSTER_UPGRADE_TYPES)

    head, head_service = _read_head(errs, spec)
    _check_group_common(errs, head, is_head=True)
    autoscaler_v2 = autoscaler.enum("version", c.AUTOSCALER_VERSIONS) == c.AUTOSCALER_VERSION_V2
    workers = _check_workers(
        errs,
        spec,
        autoscaling=autoscaling,
        ray_version=ray_version,
        autoscaler_v2=autoscaler_v2 or _autoscaler_v2_by_env(head.template),
    )
    _check_gcs_ft(errs, spec, head, annotations=annotations, annotations_path=annotations_path, gates=gates)
    _check_group_suspend(errs, workers, autoscaling=autoscaling, gates=gates)
    _check_autoscaler(errs, autoscaler, head.template, workers, autoscaling=autoscaling)
    _check_history_server(errs, spec, head, workers, gates)
    k8s_token_auth, k8s_token_auth_path = _check_auth(errs, spec, ray_version)
    _check_network_policy(errs, spec, workers, gates)
    _check_tls(errs, spec, head, workers, autoscaler=autoscaler, gates=gates)

    return _ClusterSummary(
        autoscaling=autoscaling,
        head_template=head.template,
        k8s_token_auth=k8s_token_auth,
        k8s_token_auth_path=k8s_token_auth_path,
        head_service_name=head_service.obj("metadata").text("name"),
        head_service_name_path=_child(head_service.at("metadata"), "name"),
    )


# --------------------------------------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------------------------------------


def _read_metadata(errs: _Errors, value: object, path: str) -> tuple[_View, dict[str, str], dict[str, str]]:
    metadata = _View.of(errs, value, path)
    return metadata, metadata.string_map("annotations"), metadata.string_map("labels")


def _check_name(errs: _Errors, metadata: _View, *, kind: str, limit: int, prefix: str) -> None:
    """Name length, then DNS-1035 syntax; ``prefix`` starts both messages."""
    name = metadata.text("name")
    generate_name = metadata.text("generateName")
    path = metadata.at("name")
    if not name and generate_name:
        # The API server appends 5 random lowercase alphanumerics; validate the name it will make.
        name = generate_name + "x" * c.GENERATE_NAME_SUFFIX_LENGTH
        path = metadata.at("generateName")
    if _byte_len(name) > limit:
        errs.kuberay(path, f"{prefix}{kind} name should be no more than {limit} characters")
        return
    reasons = _dns1035_label_errors(name)
    if reasons:
        errs.kuberay(path, f"{prefix}{kind} name should be a valid DNS1035 label: {_go_list(reasons)}")


def validate_raycluster_metadata(metadata: object, *, path: str = "metadata") -> list[FieldError]:
    """RayCluster name rules (``ValidateRayClusterMetadata``)."""
    errs = _Errors()
    view, _, _ = _read_metadata(errs, metadata, path)
    _check_name(errs, view, kind=c.KIND_RAYCLUSTER, limit=c.MAX_RAYCLUSTER_NAME_LENGTH, prefix="")
    return errs.items


def validate_rayjob_metadata(metadata: object, *, path: str = "metadata") -> list[FieldError]:
    """RayJob name rules (``ValidateRayJobMetadata``)."""
    errs = _Errors()
    view, _, _ = _read_metadata(errs, metadata, path)
    prefix = "The RayJob metadata is invalid: "
    _check_name(errs, view, kind=c.KIND_RAYJOB, limit=c.MAX_RAYJOB_NAME_LENGTH, prefix=prefix)
    return errs.items


def validate_rayservice_metadata(metadata: object, *, path: str = "metadata") -> list[FieldError]:
    """RayService name rules and the initializing-timeout annotation (``ValidateRayServiceMetadata``)."""
    errs = _Errors()
    view, annotations, _ = _read_metadata(errs, metadata, path)
    prefix = "The RayService metadata is invalid: "
    _check_name(errs, view, kind=c.KIND_RAYSERVICE, limit=c.MAX_RAYSERVICE_NAME_LENGTH, prefix=prefix)
    timeout = annotations.get(c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION, "")
    if timeout:
        reason = _initializing_timeout_error(timeout)
        if reason:
            errs.kuberay(
                _key(view.at("annotations"), c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION),
                f"{prefix}RayService annotations is invalid: {reason}",
            )
    return errs.items


def _initializing_timeout_error(value: str) -> str:
    key = c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION
    try:
        duration = _go_parse_duration(value)
    except _Invalid:
        pass
    else:
        return f"annotation {key} must be a positive duration, got: {value}" if duration <= 0 else ""
    try:
        seconds = _go_atoi(value)
    except _Invalid:
        pass
    else:
        return f"annotation {key} must be a positive integer (seconds), got: {value}" if seconds <= 0 else ""
    return (
        f"annotation {key} has invalid format: {value}. "
        "Expected Go duration format (e.g., '5m', '1h') or positive integer seconds"
    )


def validate_raycronjob_metadata(metadata: object, *, path: str = "metadata") -> list[FieldError]:
    """RayCronJob name rules: KubeRay's length limit, plus DNS-1035 syntax (own message)."""
    errs = _Errors()
    view, _, _ = _read_metadata(errs, metadata, path)
    _check_name(errs, view, kind=c.KIND_RAYCRONJOB, limit=c.MAX_RAYCRONJOB_NAME_LENGTH, prefix="")
    return errs.items


# --------------------------------------------------------------------------------------------------------------------
# RayCluster
# --------------------------------------------------------------------------------------------------------------------


def validate_raycluster_spec(
    spec: object,
    *,
    annotations: Mapping[str, str] | None = None,
    features: Mapping[str, bool] | None = None,
    path: str = "spec",
    message_prefix: str = "",
    annotations_path: str = "metadata.annotations",
    embedded: bool = False,
) -> list[FieldError]:
    """The RayCluster spec rules (``ValidateRayClusterSpec``), for a RayCluster or an embedded cluster template.

    ``annotations`` are those of the CR that owns the spec (the RayCluster, RayJob or RayService); KubeRay prefixes
    the messages of an embedded spec with ``message_prefix`` (for example "The RayJob spec is invalid: ").
    ``embedded`` adds the CRD enum check of ``upgradeStrategy.type``, which a RayCluster gets from
    :func:`validate_raycluster_upgrade_strategy` with KubeRay's own message instead.
    """
    errs = _Errors()
    _check_cluster_spec(
        errs.wrapped(message_prefix),
        spec,
        annotations=_string_map(annotations),
        annotations_path=annotations_path,
        gates=_gates(features),
        path=path,
        embedded=embedded,
    )
    return errs.items


def _string_map(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def validate_raycluster_upgrade_strategy(
    spec: object, *, labels: Mapping[str, str] | None = None, path: str = "spec"
) -> list[FieldError]:
    """``upgradeStrategy`` of a RayCluster (``ValidateRayClusterUpgradeOptions``).

    ``labels`` are the RayCluster's: with ``ray.io/originated-from-crd`` RayJob or RayService the strategy may not be
    set at all. Call it with those labels to check a RayJob's or RayService's cluster template ahead of time.
    """
    errs = _Errors()
    _check_upgrade_strategy(errs, _View.of(errs, spec, path), _string_map(labels))
    return errs.items


def _check_upgrade_strategy(errs: _Errors, spec: _View, labels: Mapping[str, str]) -> None:
    upgrade = spec.obj("upgradeStrategy")
    upgrade_type = upgrade.opt_text("type")
    if upgrade_type is None:
        return
    if upgrade_type not in c.RAYCLUSTER_UPGRADE_TYPES:
        errs.kuberay(
            upgrade.at("type"),
            f"The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value {upgrade_type} is invalid, valid "
            f"options are {c.RAYCLUSTER_UPGRADE_RECREATE} or {c.RAYCLUSTER_UPGRADE_NONE}",
        )
    creator = labels.get(c.RAY_ORIGINATED_FROM_CRD_LABEL, "")
    if creator in (c.KIND_RAYJOB, c.KIND_RAYSERVICE):
        errs.kuberay(upgrade.at("type"), f"upgradeStrategy cannot be set when RayCluster is created by {creator}")


def validate_raycluster_status(status: object, *, path: str = "status") -> list[FieldError]:
    """RayCluster status consistency (``ValidateRayClusterStatus``)."""
    errs = _Errors()
    view = _View.of(errs, status, path)
    true_conditions = set()
    for condition in view.objects("conditions"):
        if condition.text("status") == "True":
            true_conditions.add(condition.text("type"))
    if {c.CONDITION_RAYCLUSTER_SUSPENDING, c.CONDITION_RAYCLUSTER_SUSPENDED} <= true_conditions:
        errs.kuberay(
            view.at("conditions"),
            "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should "
            "not be both true",
        )
    return errs.items


def validate_raycluster(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule for a whole RayCluster: metadata, spec, upgrade strategy and status."""
    errs = _Errors()
    root = _root(errs, obj, c.KIND_RAYCLUSTER)
    if root is None:
        return errs.items
    metadata, annotations, labels = _read_metadata(errs, root.raw("metadata"), "metadata")
    _check_name(errs, metadata, kind=c.KIND_RAYCLUSTER, limit=c.MAX_RAYCLUSTER_NAME_LENGTH, prefix="")
    spec_value = root.raw("spec")
    _check_cluster_spec(
        errs,
        {} if spec_value is None else spec_value,
        annotations=annotations,
        annotations_path="metadata.annotations",
        gates=_gates(features),
        path="spec",
        embedded=False,
    )
    _check_upgrade_strategy(errs, _View(errs, spec_value if isinstance(spec_value, Mapping) else None, "spec"), labels)
    for error in validate_raycluster_status(root.raw("status")):
        errs.kuberay(error.path, error.message)
    return errs.items


# --------------------------------------------------------------------------------------------------------------------
# RayJob
# --------------------------------------------------------------------------------------------------------------------


def _check_legacy_deletion(
    errs: _Errors, strategy: _View, *, selector_mode: bool, autoscaling: bool, shutdown: bool
) -> None:
    on_success = strategy.obj("onSuccess")
    on_failure = strategy.obj("onFailure")
    if not (on_success.present and on_failure.present):
        errs.kuberay(
            strategy.path,
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy "
            "deletion policy fields of DeletionStrategy",
        )
    policies: list[tuple[str, str]] = []
    for view, field, outcome in ((on_success, "OnSuccess", "success"), (on_failure, "OnFailure", "failure")):
        if not view.present:
            continue
        policy = view.enum("policy", c.DELETION_POLICIES)
        if not view.has("policy"):
            errs.kuberay(
                view.at("policy"),
                f"the DeletionPolicyType field of DeletionStrategy.{field} cannot be unset when DeletionStrategy is "
                "enabled",
            )
        if policy is None:
            continue
        policies.append((view.at("policy"), policy))
        if selector_mode and policy in (c.DELETE_CLUSTER, c.DELETE_WORKERS):
            errs.kuberay(
                view.at("policy"), f"the ClusterSelector mode doesn't support DeletionStrategy={policy} on {outcome}"
            )
    workers = [p for p in policies if p[1] == c.DELETE_WORKERS]
    if workers and autoscaling:
        errs.kuberay(
            workers[0][0],
            "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled",
        )
    nones = [p for p in policies if p[1] == c.DELETE_NONE]
    if nones and shutdown:
        errs.kuberay(
            nones[0][0],
            "The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while deletion policy is "
            "'DeleteNone'",
        )


@dataclass(frozen=True, slots=True)
class _DeletionRule:
    path: str
    condition: tuple[str, str]
    policy: str
    ttl: int


def _read_deletion_rule(
    errs: _Errors, i: int, rule: _View, *, selector_mode: bool, autoscaling: bool
) -> _DeletionRule | None:
    """One rule, checked on its own (``validateDeletionCondition`` and the context checks); None if it failed."""
    prefix = f"deletionRules[{i}]: "
    policy = rule.enum("policy", c.DELETION_POLICIES)
    rule.require("policy")
    condition = rule.obj("condition")
    rule.require("condition")
    job_status = condition.enum("jobStatus", c.DELETION_CONDITION_JOB_STATUSES)
    deployment_status = condition.enum("jobDeploymentStatus", c.DELETION_CONDITION_JOB_DEPLOYMENT_STATUSES)
    ttl = condition.integer("ttlSeconds") or 0
    has_job_status, has_deployment_status = condition.has("jobStatus"), condition.has("jobDeploymentStatus")
    problem: tuple[str, str] | None = None
    if has_job_status and has_deployment_status:
        problem = (condition.path, "cannot set both JobStatus and JobDeploymentStatus at the same time")
    elif not has_job_status and not has_deployment_status:
        problem = (condition.path, "exactly one of JobStatus and JobDeploymentStatus must be set")
    elif ttl < 0:
        problem = (condition.at("ttlSeconds"), "TTLSeconds must be non-negative")
    elif selector_mode and policy in (c.DELETE_CLUSTER, c.DELETE_WORKERS):
        problem = (rule.at("policy"), f"DeletionPolicyType '{policy}' not supported when ClusterSelector is set")
    elif autoscaling and policy == c.DELETE_WORKERS:
        problem = (rule.at("policy"), "DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled")
    if problem is not None:
        errs.kuberay(problem[0], prefix + problem[1])
        return None
    if policy is None:
        return None
    if job_status is not None:
        return _DeletionRule(rule.path, ("JobStatus", job_status), policy, ttl)
    if deployment_status is not None:
        return _DeletionRule(rule.path, ("JobDeploymentStatus", deployment_status), policy, ttl)
    return None


def _check_deletion_rules(
    errs: _Errors, strategy: _View, rules: Sequence[_View], *, selector_mode: bool, autoscaling: bool
) -> None:
    by_condition: dict[tuple[str, str], dict[str, int]] = {}
    for i, view in enumerate(rules):
        rule = _read_deletion_rule(errs, i, view, selector_mode=selector_mode, autoscaling=autoscaling)
        if rule is None:
            continue
        ttls = by_condition.setdefault(rule.condition, {})
        if rule.policy in ttls:
            kind, value = rule.condition
            errs.kuberay(
                rule.path,
                f"deletionRules[{i}]: duplicate rule for DeletionPolicyType '{rule.policy}' and {kind} '{value}'",
            )
        else:
            ttls[rule.policy] = rule.ttl
    for (kind, value), ttls in by_condition.items():
        ordered = [(policy, ttls[policy]) for policy in c.DELETION_TTL_ORDER if policy in ttls]
        for (before, before_ttl), (policy, ttl) in itertools.pairwise(ordered):
            if ttl < before_ttl:
                errs.kuberay(
                    strategy.at("deletionRules"),
                    f"for {kind} '{value}': {policy} TTL ({ttl}) must be >= {before} TTL ({before_ttl})",
                )


def _check_deletion_strategy(
    errs: _Errors,
    spec: _View,
    *,
    shutdown: bool,
    ttl: int,
    selector_mode: bool,
    autoscaling: bool,
    gates: Mapping[str, bool],
) -> None:
    if not shutdown and ttl > 0:
        errs.kuberay(
            spec.at("ttlSecondsAfterFinished"),
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot have "
            "TTLSecondsAfterFinished",
        )
    strategy = spec.obj("deletionStrategy")
    rules = strategy.objects("deletionRules")
    if not strategy.present:
        return
    if not gates.get(c.GATE_RAYJOB_DELETION_POLICY, False):
        errs.kuberay(
            strategy.path, f"{c.GATE_RAYJOB_DELETION_POLICY} feature gate must be enabled to use DeletionStrategy"
        )
    legacy = strategy.present and (strategy.has("onSuccess") or strategy.has("onFailure"))
    if rules and shutdown:
        errs.kuberay(
            strategy.at("deletionRules"),
            "The RayJob spec is invalid: spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are "
            "mutually exclusive",
        )
    if rules and legacy:
        errs.kuberay(
            strategy.path,
            "The RayJob spec is invalid: Cannot use both legacy onSuccess/onFailure fields and deletionRules "
            "simultaneously",
        )
    if legacy:
        _check_legacy_deletion(errs, strategy, selector_mode=selector_mode, autoscaling=autoscaling, shutdown=shutdown)
    if rules:
        _check_deletion_rules(errs, strategy, rules, selector_mode=selector_mode, autoscaling=autoscaling)
    if not legacy and not rules:
        errs.kuberay(
            strategy.path,
            "The RayJob spec is invalid: DeletionStrategy requires either BOTH onSuccess and onFailure, OR the "
            "deletionRules field (cannot be empty)",
        )


def _yaml_problem(error: yaml.YAMLError) -> str:
    """A one-line account of a YAML syntax error, in the form Go's YAML library uses."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        return f"yaml: line {error.problem_mark.line + 1}: {error.problem}"
    return "yaml: " + " ".join(str(error).split())


def _runtime_env_error(text: str) -> str:
    """Why ``runtimeEnvYAML`` is not a YAML mapping (``UnmarshalRuntimeEnvYAML``), or ``""``."""
    if not text:
        return ""
    prefix = f"failed to unmarshal RuntimeEnvYAML: {text}: "
    try:
        first = next(iter(yaml.safe_load_all(text)), None)
    except yaml.YAMLError as error:
        return prefix + "error converting YAML to JSON: " + _yaml_problem(error)
    except RecursionError:
        return prefix + "error converting YAML to JSON: yaml: exceeded max depth"
    if first is None or isinstance(first, dict):
        return ""
    return prefix + f"json: cannot unmarshal {_type_name(first)} into Go value of type map[string]interface {{}}"


def _check_cluster_source(errs: _Errors, spec: _View, *, mode: str, backoff_limit: int | None) -> None:
    """``rayClusterSpec`` or ``clusterSelector``, and what the selector mode excludes."""
    selector = spec.string_map("clusterSelector")
    if spec.flag("suspend") and selector:
        errs.kuberay(
            spec.at("suspend"),
            "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation",
        )
    if not spec.has("rayClusterSpec") and not selector:
        errs.kuberay(
            spec.at("rayClusterSpec"),
            "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set",
        )
    if not selector:
        return
    if not selector.get(c.RAY_CLUSTER_LABEL):
        errs.kuberay(
            _key(spec.at("clusterSelector"), c.RAY_CLUSTER_LABEL), "cluster name in ClusterSelector should not be empty"
        )
    if mode == c.SUBMISSION_MODE_SIDECAR:
        errs.kuberay(spec.at("submissionMode"), "ClusterSelector is not supported in SidecarMode")
    if backoff_limit is not None and backoff_limit > 0:
        errs.kuberay(
            spec.at("backoffLimit"),
            "The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode",
        )


def _check_submission_mode(
    errs: _Errors, spec: _View, *, mode: str, backoff_limit: int | None, summary: _ClusterSummary | None
) -> None:
    if mode == c.SUBMISSION_MODE_INTERACTIVE and backoff_limit is not None and backoff_limit > 0:
        errs.kuberay(
            spec.at("backoffLimit"), "The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode"
        )
    if mode not in c.SUBMISSION_MODES:
        errs.schema(spec.at("submissionMode"), _unsupported(mode, c.SUBMISSION_MODES))
    if mode != c.SUBMISSION_MODE_SIDECAR:
        return
    if spec.has("submitterPodTemplate"):
        errs.kuberay(spec.at("submitterPodTemplate"), "Currently, SidecarMode doesn't support SubmitterPodTemplate")
    if spec.has("submitterConfig"):
        errs.kuberay(spec.at("submitterConfig"), "Currently, SidecarMode doesn't support SubmitterConfig")
    if summary is not None and summary.head_template.restart_policy not in ("", c.RESTART_POLICY_NEVER):
        errs.kuberay(
            _child(summary.head_template.spec_path, "restartPolicy"),
            "restartPolicy for head Pod should be Never or unset when using SidecarMode",
        )


def _check_rayjob_limits(errs: _Errors, spec: _View, *, backoff_limit: int | None) -> None:
    """``runtimeEnvYAML`` and the numeric limits checked last in ``ValidateRayJobSpec``."""
    runtime_env_error = _runtime_env_error(spec.text("runtimeEnvYAML"))
    if runtime_env_error:
        errs.kuberay(spec.at("runtimeEnvYAML"), runtime_env_error)
    for key in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        value = spec.integer(key)
        if value is not None and value <= 0:
            errs.kuberay(spec.at(key), f"The RayJob spec is invalid: {key} must be a positive integer")
    if backoff_limit is not None and backoff_limit < 0:
        errs.kuberay(spec.at("backoffLimit"), "The RayJob spec is invalid: backoffLimit must be a positive integer")


def _check_rayjob_spec(
    errs: _Errors,
    spec_value: object,
    *,
    annotations: Mapping[str, str],
    annotations_path: str,
    gates: Mapping[str, bool],
    path: str,
) -> None:
    spec = _View.of(errs, spec_value, path)
    _check_managed_by(errs, spec)
    suspend = spec.flag("suspend")
    shutdown = spec.flag("shutdownAfterJobFinishes")
    ttl = spec.integer("ttlSecondsAfterFinished") or 0
    backoff_limit = spec.integer("backoffLimit")
    mode = spec.text("submissionMode") or c.SUBMISSION_MODE_K8S_JOB
    spec.obj("submitterPodTemplate")
    spec.obj("submitterConfig").integer("backoffLimit")
    for key in ("entrypoint", "jobId", "entrypointResources", "schedule"):
        spec.text(key)
    for key in ("entrypointNumCpus", "entrypointNumGpus"):
        spec.number(key)
    spec.string_map("metadata")

    # The cluster template is checked first (its summary feeds the RayJob rules) but reported where KubeRay does.
    cluster_errs = _Errors()
    summary: _ClusterSummary | None = None
    if spec.has("rayClusterSpec"):
        summary = _check_cluster_spec(
            cluster_errs.wrapped(errs.prefix + _RAYJOB_SPEC_INVALID),
            spec.raw("rayClusterSpec"),
            annotations=annotations,
            annotations_path=annotations_path,
            gates=gates,
            path=spec.at("rayClusterSpec"),
            embedded=True,
        )

    if suspend and not shutdown:
        errs.kuberay(
            spec.at("suspend"),
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be "
            "suspended",
        )
    if ttl < 0:
        errs.kuberay(
            spec.at("ttlSecondsAfterFinished"),
            "The RayJob spec is invalid: TTLSecondsAfterFinished must be a non-negative integer",
        )
    _check_deletion_strategy(
        errs,
        spec,
        shutdown=shutdown,
        ttl=ttl,
        selector_mode=bool(spec.string_map("clusterSelector")),
        autoscaling=summary is not None and summary.autoscaling,
        gates=gates,
    )
    _check_cluster_source(errs, spec, mode=mode, backoff_limit=backoff_limit)
    _check_submission_mode(errs, spec, mode=mode, backoff_limit=backoff_limit, summary=summary)
    if summary is not None and summary.k8s_token_auth:
        errs.kuberay(
            summary.k8s_token_auth_path,
            "The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob",
        )
    errs.extend(cluster_errs)
    _check_rayjob_limits(errs, spec, backoff_limit=backoff_limit)


def validate_rayjob_spec(
    spec: object,
    *,
    annotations: Mapping[str, str] | None = None,
    features: Mapping[str, bool] | None = None,
    path: str = "spec",
    message_prefix: str = "",
    annotations_path: str = "metadata.annotations",
) -> list[FieldError]:
    """The RayJob spec rules (``ValidateRayJobSpec``), including its ``rayClusterSpec``."""
    errs = _Errors()
    _check_rayjob_spec(
        errs.wrapped(message_prefix),
        spec,
        annotations=_string_map(annotations),
        annotations_path=annotations_path,
        gates=_gates(features),
        path=path,
    )
    return errs.items


def validate_rayjob_status(status: object, *, spec: object = None, path: str = "status") -> list[FieldError]:
    """RayJob status consistency (``ValidateRayJobStatus``): Waiting only in InteractiveMode."""
    errs = _Errors()
    view = _View.of(errs, status, path)
    deployment_status = view.text("jobDeploymentStatus")
    mode = _View.of(_Errors(), spec, "spec").text("submissionMode") or c.SUBMISSION_MODE_K8S_JOB
    if deployment_status == c.JOB_DEPLOYMENT_STATUS_WAITING and mode != c.SUBMISSION_MODE_INTERACTIVE:
        errs.kuberay(
            view.at("jobDeploymentStatus"),
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not "
            "InteractiveMode",
        )
    return errs.items


def validate_rayjob(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule for a whole RayJob: metadata, spec (with its cluster template) and status."""
    errs = _Errors()
    root = _root(errs, obj, c.KIND_RAYJOB)
    if root is None:
        return errs.items
    metadata, annotations, _ = _read_metadata(errs, root.raw("metadata"), "metadata")
    prefix = "The RayJob metadata is invalid: "
    _check_name(errs, metadata, kind=c.KIND_RAYJOB, limit=c.MAX_RAYJOB_NAME_LENGTH, prefix=prefix)
    spec_value = root.raw("spec")
    _check_rayjob_spec(
        errs,
        {} if spec_value is None else spec_value,
        annotations=annotations,
        annotations_path="metadata.annotations",
        gates=_gates(features),
        path="spec",
    )
    for error in validate_rayjob_status(root.raw("status"), spec=spec_value):
        errs.kuberay(error.path, error.message)
    return errs.items


# --------------------------------------------------------------------------------------------------------------------
# RayService
# --------------------------------------------------------------------------------------------------------------------


def _check_incremental_upgrade(errs: _Errors, upgrade: _View, *, autoscaling: bool, autoscaling_path: str) -> None:
    if not autoscaling:
        errs.kuberay(autoscaling_path, "Ray Autoscaler is required for NewClusterWithIncrementalUpgrade")
    options = upgrade.obj("clusterUpgradeOptions")
    max_surge = options.integer("maxSurgePercent")
    step = options.integer("stepSizePercent")
    interval = options.integer("intervalSeconds")
    gateway_class = options.text("gatewayClassName")
    if not options.present:
        errs.kuberay(options.path, "ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade")
        return
    if max_surge is None:
        max_surge = c.DEFAULT_MAX_SURGE_PERCENT
    surge_ok = 0 <= max_surge <= 100
    if not surge_ok:
        errs.kuberay(options.at("maxSurgePercent"), "maxSurgePercent must be between 0 and 100")
    if step is None or not 0 <= step <= 100:
        errs.kuberay(options.at("stepSizePercent"), "stepSizePercent must be between 0 and 100")
    elif surge_ok and step > max_surge:
        errs.kuberay(options.at("stepSizePercent"), "stepSizePercent must be less than or equal to maxSurgePercent")
    if interval is None or interval <= 0:
        errs.kuberay(options.at("intervalSeconds"), "intervalSeconds must be greater than 0")
    if not gateway_class:
        errs.kuberay(
            options.at("gatewayClassName"), "gatewayClassName is required for NewClusterWithIncrementalUpgrade"
        )


def _check_rayservice_spec(
    errs: _Errors,
    spec_value: object,
    *,
    annotations: Mapping[str, str],
    annotations_path: str,
    gates: Mapping[str, bool],
    path: str,
) -> None:
    spec = _View.of(errs, spec_value, path)
    _check_managed_by(errs, spec)
    spec.text("serveConfigV2")
    spec.obj("serveService")
    spec.flag("excludeHeadPodFromServeSvc")
    spec.flag("suspend")
    spec.integer("serviceUnhealthySecondThreshold")
    spec.integer("deploymentUnhealthySecondThreshold")
    deletion_delay = spec.integer("rayClusterDeletionDelaySeconds")
    upgrade = spec.obj("upgradeStrategy")
    upgrade_type = upgrade.opt_text("type")

    summary: _ClusterSummary | None = None
    if spec.present and not spec.has("rayClusterConfig"):
        errs.schema(spec.at("rayClusterConfig"), _REQUIRED)
    cluster_errs = _Errors()
    if spec.has("rayClusterConfig"):
        summary = _check_cluster_spec(
            cluster_errs.wrapped(errs.prefix + _RAYSERVICE_SPEC_INVALID),
            spec.raw("rayClusterConfig"),
            annotations=annotations,
            annotations_path=annotations_path,
            gates=gates,
            path=spec.at("rayClusterConfig"),
            embedded=True,
        )
    if summary is not None and summary.k8s_token_auth:
        errs.kuberay(
            summary.k8s_token_auth_path,
            "The RayService spec is invalid: K8s token auth mode is currently not supported for RayService",
        )
    errs.extend(cluster_errs)
    if summary is not None and summary.head_service_name:
        errs.kuberay(
            summary.head_service_name_path,
            "The RayService spec is invalid: spec.rayClusterConfig.headGroupSpec.headService.metadata.name should "
            "not be set",
        )
    valid_types = (c.RAYSERVICE_UPGRADE_INCREMENTAL, c.RAYSERVICE_UPGRADE_NEW_CLUSTER, c.RAYSERVICE_UPGRADE_NONE)
    if upgrade_type is not None and upgrade_type not in valid_types:
        errs.kuberay(
            upgrade.at("type"),
            f"The RayService spec is invalid: Spec.UpgradeStrategy.Type value {upgrade_type} is invalid, valid options "
            f"are {valid_types[0]}, {valid_types[1]}, or {valid_types[2]}",
        )
    if deletion_delay is not None and deletion_delay < 0:
        errs.kuberay(
            spec.at("rayClusterDeletionDelaySeconds"),
            "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, "
            f"got {deletion_delay}",
        )
    if upgrade_type == c.RAYSERVICE_UPGRADE_INCREMENTAL and gates.get(c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE, False):
        _check_incremental_upgrade(
            errs.wrapped(_RAYSERVICE_SPEC_INVALID),
            upgrade,
            autoscaling=summary is not None and summary.autoscaling,
            autoscaling_path=_child(spec.at("rayClusterConfig"), "enableInTreeAutoscaling"),
        )
    else:
        options = upgrade.obj("clusterUpgradeOptions")
        for key in ("maxSurgePercent", "stepSizePercent", "intervalSeconds"):
            options.integer(key)
        options.text("gatewayClassName")


def validate_rayservice_spec(
    spec: object,
    *,
    annotations: Mapping[str, str] | None = None,
    features: Mapping[str, bool] | None = None,
    path: str = "spec",
    message_prefix: str = "",
    annotations_path: str = "metadata.annotations",
) -> list[FieldError]:
    """The RayService spec rules (``ValidateRayServiceSpec``), including its ``rayClusterConfig``."""
    errs = _Errors()
    _check_rayservice_spec(
        errs.wrapped(message_prefix),
        spec,
        annotations=_string_map(annotations),
        annotations_path=annotations_path,
        gates=_gates(features),
        path=path,
    )
    return errs.items


def validate_rayservice(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule for a whole RayService: metadata and spec (with its cluster template)."""
    errs = _Errors()
    root = _root(errs, obj, c.KIND_RAYSERVICE)
    if root is None:
        return errs.items
    for error in validate_rayservice_metadata(root.raw("metadata")):
        errs.kuberay(error.path, error.message)
    _, annotations, _ = _read_metadata(_Errors(), root.raw("metadata"), "metadata")
    spec_value = root.raw("spec")
    _check_rayservice_spec(
        errs,
        {} if spec_value is None else spec_value,
        annotations=annotations,
        annotations_path="metadata.annotations",
        gates=_gates(features),
        path="spec",
    )
    return errs.items


# --------------------------------------------------------------------------------------------------------------------
# RayCronJob
# --------------------------------------------------------------------------------------------------------------------


def _check_raycronjob_spec(errs: _Errors, spec_value: object, *, gates: Mapping[str, bool], path: str) -> None:
    spec = _View.of(errs, spec_value, path)
    spec.flag("suspend")
    schedule = spec.opt_text("schedule")
    if spec.present and not spec.has("schedule"):
        errs.schema(spec.at("schedule"), _REQUIRED)
    elif schedule is not None:
        if "TZ" in schedule:
            errs.kuberay(spec.at("schedule"), "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
        else:
            reason = _cron_error(schedule)
            if reason:
                errs.kuberay(spec.at("schedule"), f"invalid cron schedule: {reason}")
    time_zone = spec.opt_text("timeZone")
    if time_zone is not None:
        if time_zone == "":
            errs.kuberay(
                spec.at("timeZone"),
                "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator",
            )
        else:
            reason = _time_zone_error(time_zone)
            if reason:
                errs.kuberay(spec.at("timeZone"), f"invalid time zone: {reason}")
    if spec.present and not spec.has("jobTemplate"):
        errs.schema(spec.at("jobTemplate"), _REQUIRED)
    elif spec.has("jobTemplate"):
        _check_rayjob_spec(
            errs.wrapped(_RAYCRONJOB_TEMPLATE_INVALID),
            spec.raw("jobTemplate"),
            annotations={},
            annotations_path=spec.at("jobTemplate"),
            gates=gates,
            path=spec.at("jobTemplate"),
        )


def validate_raycronjob_spec(
    spec: object, *, features: Mapping[str, bool] | None = None, path: str = "spec", message_prefix: str = ""
) -> list[FieldError]:
    """The RayCronJob spec rules (``ValidateRayCronJobSpec``), including its ``jobTemplate``."""
    errs = _Errors()
    _check_raycronjob_spec(errs.wrapped(message_prefix), spec, gates=_gates(features), path=path)
    return errs.items


def validate_raycronjob(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Every rule for a whole RayCronJob: the feature gate, metadata and spec (with its RayJob template)."""
    errs = _Errors()
    root = _root(errs, obj, c.KIND_RAYCRONJOB)
    if root is None:
        return errs.items
    gates = _gates(features)
    if not gates.get(c.GATE_RAY_CRON_JOB, False):
        errs.schema("kind", f"RayCronJob requires the {c.GATE_RAY_CRON_JOB} feature gate to be enabled")
    metadata, _, _ = _read_metadata(errs, root.raw("metadata"), "metadata")
    _check_name(errs, metadata, kind=c.KIND_RAYCRONJOB, limit=c.MAX_RAYCRONJOB_NAME_LENGTH, prefix="")
    spec_value = root.raw("spec")
    _check_raycronjob_spec(errs, {} if spec_value is None else spec_value, gates=gates, path="spec")
    return errs.items


# --------------------------------------------------------------------------------------------------------------------
# Dispatch and updates
# --------------------------------------------------------------------------------------------------------------------

_VALIDATORS: Final = {
    c.KIND_RAYCLUSTER: validate_raycluster,
    c.KIND_RAYJOB: validate_rayjob,
    c.KIND_RAYSERVICE: validate_rayservice,
    c.KIND_RAYCRONJOB: validate_raycronjob,
}


def validate(obj: object, *, features: Mapping[str, bool] | None = None) -> list[FieldError]:
    """Validate any ``ray.io`` custom resource, chosen by its ``kind``."""
    errs = _Errors()
    if not isinstance(obj, Mapping):
        errs.schema("", f"must be of type object, not {_type_name(obj)}")
        return errs.items
    root = _View(errs, obj, "")
    kind = root.opt_text("kind")
    api_version = root.opt_text("apiVersion")
    if api_version is not None and api_version != c.API_VERSION:
        errs.schema("apiVersion", _unsupported(api_version, (c.API_VERSION,)))
    if root.raw("kind") is None:
        errs.schema("kind", _REQUIRED)
        return errs.items
    validator = _VALIDATORS.get(kind) if kind is not None else None
    if validator is None:
        if kind is not None:
            errs.schema("kind", _unsupported(kind, tuple(_VALIDATORS)))
        return errs.items
    return errs.items + validator(obj, features=features)


def _cluster_spec_paths(kind: str) -> Iterator[tuple[str, ...]]:
    if kind == c.KIND_RAYCLUSTER:
        yield ("spec",)
    elif kind == c.KIND_RAYJOB:
        yield ("spec", "rayClusterSpec")
    elif kind == c.KIND_RAYSERVICE:
        yield ("spec", "rayClusterConfig")
    elif kind == c.KIND_RAYCRONJOB:
        yield ("spec", "jobTemplate", "rayClusterSpec")


def _dig(value: object, keys: Sequence[str]) -> object:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def validate_update(old: object, new: object) -> list[FieldError]:
    """The CEL transition rules checked when ``old`` is updated to ``new``: immutable ``managedBy`` and GCS backend."""
    errs = _Errors()
    kind = _dig(new, ("kind",))
    if not isinstance(kind, str):
        return errs.items
    managed_by_paths: list[tuple[str, ...]] = []
    if kind in (c.KIND_RAYJOB, c.KIND_RAYSERVICE):
        managed_by_paths.append(("spec", "managedBy"))
    if kind == c.KIND_RAYCRONJOB:
        managed_by_paths.append(("spec", "jobTemplate", "managedBy"))
    for cluster in _cluster_spec_paths(kind):
        managed_by_paths.append((*cluster, "managedBy"))
        before = _dig(old, (*cluster, "gcsFaultToleranceOptions", "backend"))
        after = _dig(new, (*cluster, "gcsFaultToleranceOptions", "backend"))
        if before is not None and after is not None and before != after:
            errs.schema(
                ".".join((*cluster, "gcsFaultToleranceOptions", "backend")),
                "gcsFaultToleranceOptions.backend is immutable",
            )
    for keys in managed_by_paths:
        before = _dig(old, keys)
        after = _dig(new, keys)
        if before is not None and after is not None and before != after:
            errs.schema(".".join(keys), "the managedBy field is immutable")
    return errs.items

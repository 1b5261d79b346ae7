"""What every kind's validator shares: :class:`FieldError`, typed reads of plain dicts, and Go/apimachinery syntax.

* :class:`_Errors` collects errors once each, with the message prefix KubeRay wraps a nested check in (``kuberay``)
  or without one (``schema``: CRD and own messages); :class:`_View` reads a JSON object field by field, reporting a
  wrong type once and reading absent or null as unset; ``_child``/``_index``/``_key`` build field paths.
* Kubernetes name and label syntax, with apimachinery's messages (``k8s.io/apimachinery/pkg/util/validation``:
  ``IsDNS1035Label``, ``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsQualifiedName``, ``IsValidLabelValue``).
* Ray versions as ``k8s.io/apimachinery/pkg/util/version`` ``ParseGeneric`` reads them (:func:`parse_ray_version`,
  :func:`ray_version_at_least`, also used by the builders and the doctor).
* The metadata name check of KubeRay v1.6.1 ``ray-operator/controllers/ray/utils/validation.go``
  (``ValidateRayClusterMetadata``, ``ValidateRayJobMetadata``, ``ValidateRayServiceMetadata``: length, then
  DNS-1035 syntax), and the ``managedBy`` CEL rule of the RayCluster, RayJob and RayService CRDs.

The underscored names are private to this package, not to this module: the kind modules import them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from raykube.api import constants as c
from raykube.golang.fmt import sprint_strings
from raykube.golang.strconv import quote

__all__ = ["FieldError", "generic_version_at_least", "parse_ray_version", "ray_version_at_least"]


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


def _unsupported(value: object, allowed: Sequence[str]) -> str:
    shown = quote(value) if isinstance(value, str) else str(value)
    return f"Unsupported value: {shown}: supported values: " + ", ".join(quote(a) for a in allowed)


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


def _string_map(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _root(errs: _Errors, obj: object, kind: str) -> _View | None:
    """The whole object as a view, or None (reported) when it is not an object."""
    if not isinstance(obj, Mapping):
        errs.schema("", f"must be of type object, not {_type_name(obj)}")
        return None
    root = _View(errs, obj, "")
    found = root.raw("kind")
    if found is not None and found != kind:
        errs.schema("kind", f"expected {quote(kind)}, got {quote(str(found))}")
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


# --------------------------------------------------------------------------------------------------------------------
# Ray versions (apimachinery util/version ParseGeneric)
# --------------------------------------------------------------------------------------------------------------------

_GENERIC_VERSION_RE: Final = re.compile(r"[\t\n\f\r ]*v?([0-9]+(?:\.[0-9]+)*)(.*)")
_UINT64_MAX: Final = 2**64 - 1


def _parse_generic_version(text: str) -> tuple[tuple[int, ...] | None, str]:
    """Dotted numbers of ``text`` and ``""``, or ``None`` and apimachinery's error text."""
    match = _GENERIC_VERSION_RE.fullmatch(text)
    if match is None:
        return None, f"could not parse {quote(text)} as version"
    components = match.group(1).split(".")
    if len(components) < 2:
        return None, f"illegal version string {quote(text)}"
    numbers: list[int] = []
    for i, component in enumerate(components):
        if i == 0 and component.startswith("0") and component != "0":
            return None, f"illegal zero-prefixed version component {quote(component)} in {quote(text)}"
        number = int(component)
        if number > _UINT64_MAX:
            return None, (
                f"illegal non-numeric version component {quote(component)} in {quote(text)}: "
                f"strconv.ParseUint: parsing {quote(component)}: value out of range"
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


def generic_version_at_least(version: str, minimum: tuple[int, ...]) -> tuple[bool, str]:
    """apimachinery ``ParseGeneric(version).AtLeast(minimum)``: whether ``version`` ("v1.36.3") is ``minimum`` or later,
    and ``""``; or False and ParseGeneric's error text when ``version`` cannot be read."""
    parsed, error = _parse_generic_version(version)
    if parsed is None:
        return False, error
    return not _version_less(parsed, minimum), ""


# --------------------------------------------------------------------------------------------------------------------
# Metadata and fields every kind has
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
        errs.kuberay(path, f"{prefix}{kind} name should be a valid DNS1035 label: {sprint_strings(reasons)}")


def _check_managed_by(errs: _Errors, spec: _View) -> None:
    managed_by = spec.opt_text("managedBy")
    if managed_by is not None and managed_by not in c.MANAGED_BY_VALUES:
        errs.schema(
            spec.at("managedBy"),
            f"the managedBy field value must be either '{c.MANAGED_BY_KUBERAY}' or '{c.MANAGED_BY_MULTIKUEUE}'",
        )

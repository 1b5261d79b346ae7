"""Go's ``encoding/json`` as KubeRay's bytes depend on it: what it writes, how it reads numbers and objects, and the
round trip of a RayClusterSpec through KubeRay's Go structs that its spec hashes see.

Writing (``json.Marshal``):

* :func:`json_marshal` of plain data: no spaces, map keys sorted (or a struct's field order, ``sort_keys=False``),
  strings as :func:`json_string` writes them (``<``, ``>``, ``&``, U+2028 and U+2029 escaped, non-ASCII kept), floats
  as :func:`json_number` (shortest digits; :class:`Float32` marks a value Go holds as float32).

Reading (``json.Unmarshal``):

* :func:`float32_from_json` is a JSON number read into a ``float32`` field (``strconv.ParseFloat(text, 32)``: the
  nearest float32 to the decimal text, ties to even).
* :func:`preserve_ints` is what the decoders that keep integers (``sigs.k8s.io/json``, apimachinery's
  ``ConvertMapNumbers``) put in an ``interface{}``: int64 when it fits, else float64.
* :func:`decode` reads a JSON text as Go's decoder walks it (objects as :class:`Pairs`, keys in order with
  duplicates); :func:`decode_struct`, :func:`decode_map` and :func:`decode_string` take a value into a struct with
  given fields (keys matched exactly or case-insensitively, the later winning), a ``map[string]T`` or a string, and
  raise :class:`~raykube.golang.errors.GoError` where Go's ``UnmarshalTypeError`` stops the decoding.

The round trip: :func:`marshal` takes the JSON as the API server serves it (dicts, lists, str, int, float, bool,
None) and writes what Go writes after decoding that JSON into its structs and encoding them again, which is what
KubeRay hashes (``utils.GenerateJsonHash``), and, for a whole object, what the API server stores when KubeRay writes it
(:func:`as_go_writes`, with the server's null pruning; checked against Go's own encodings of hand-written and drawn
objects, tests/vectors/kuberay_roundtrip_v170.json). The structs are :mod:`raykube.golang.gostructs`, generated from
the compiled Go types (``tools/kuberay/gostructs``).

Decoding, as apimachinery's JSON serializer does it (``sigs.k8s.io/json``, case-sensitive):

* keys that are no field of the Go struct are dropped (a field name in another case too);
* ``null`` and an absent key give the same Go value: nil for pointers, slices, maps and interfaces, the zero value
  otherwise (``null`` into a string, number, bool or struct changes nothing);
* ``[]`` and ``{}`` give an empty but non-nil slice or map, which encodes as ``[]``/``{}``, not ``null``;
* a value of the wrong JSON type is left at its zero value, as Go's decoder leaves it (Go then reports an error, and
  the object would not reach KubeRay at all; here the hash stays computable).

Encoding, as ``json.Marshal`` does it: fields in declaration order with their JSON names, embedded structs inlined
(the table already lists them in place); ``omitempty`` drops false, 0, ``""``, nil pointers and interfaces and empty
slices and maps, never a struct; ``omitzero`` drops the zero value (for types with an ``IsZero`` method, what it
says); nil slices and maps are ``null``; map keys sorted; strings escaped as Go escapes them (``<``, ``>``, ``&``,
U+2028, U+2029), floats in Go's format (:func:`json_number`).

Types with their own JSON methods:

* ``resource.Quantity``: the string ``Quantity.MarshalJSON`` writes, :func:`raykube.golang.quantity.marshaled`:
  mostly the canonical form (``"1000m"`` is ``"1"``, ``"0.5"`` is ``"500m"``), but the text as written where
  ``ParseQuantity`` keeps it (``"1.500"``, ``"1E3"``, ``"+1"``); ``"0"`` when absent or null. A number is read in the
  format the API server writes it (Go's), a text Kubernetes would refuse is kept as written.
* ``intstr.IntOrString``: a JSON string stays a string, a number an int32; ``0`` when absent or null.
* ``metav1.Time``: RFC 3339 in UTC, whole seconds (``"2024-01-02T03:04:05Z"``); ``null`` when zero.
* ``metav1.FieldsV1``: its raw JSON, compacted, keys in their own order.

Compared with Go's own answers in tests/vectors/golang_*.json (tools/govectors, ``make vectors``): 3,015 strings,
2,035 JSON numbers read as float32 or float64, 9,714 formatted floats; raykube agrees on all of them. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from functools import cache, partial
from typing import Any, Final

from raykube.golang import gostructs
from raykube.golang.errors import GoError
from raykube.golang.quantity import QuantityError, marshaled, parse_quantity
from raykube.golang.strconv import format_float, nearest_float32, round_float32, valid_string
from raykube.golang.strings import trim_space

__all__ = [
    "Float32",
    "Pairs",
    "as_go_writes",
    "decode",
    "decode_map",
    "decode_string",
    "decode_struct",
    "drop_nulls",
    "float32_from_json",
    "json_kind",
    "json_marshal",
    "json_number",
    "json_string",
    "marshal",
    "preserve_ints",
    "with_unknown",
]


# --------------------------------------------------------------------------------------------------------------------
# Writing: json.Marshal of plain data
# --------------------------------------------------------------------------------------------------------------------


def json_string(text: str) -> str:
    """A JSON string as Go's ``encoding/json`` writes it: like Python's (``\\b``, ``\\f``, ``\\n``, ``\\r``, ``\\t``,
    other controls as ``\\u00XX``), plus ``<``, ``>``, ``&``, U+2028 and U+2029 escaped; non-ASCII kept."""
    encoded = json.dumps(valid_string(text), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
        encoded = encoded.replace(char, escaped)
    return encoded.replace("\u2029", "\\u2029")


class Float32(float):
    """A number Go holds in a ``float32``: :func:`json_marshal` writes its float32 shortest digits (``1.1``, not
    ``1.100000023841858``). Construct it from a value already rounded to float32."""


_JSON_E_SMALL_64 = 1e-6
_JSON_E_LARGE_64 = 1e21
_JSON_E_SMALL_32 = round_float32(_JSON_E_SMALL_64)  # Go compares float32(abs) with float32 constants
_JSON_E_LARGE_32 = round_float32(_JSON_E_LARGE_64)


def json_number(value: float, bits: int = 64) -> str:
    """How ``encoding/json`` writes a float: shortest digits, ``%e`` below 1e-6 and from 1e21 on (exponent without a
    leading zero: ``1e-7``), ``%f`` otherwise. NaN and infinities raise :class:`GoError` with Go's message."""
    if math.isnan(value) or math.isinf(value):
        raise GoError(f"json: unsupported value: {format_float(value, 'g', -1, bits)}")
    magnitude = abs(value)
    small, large = (_JSON_E_SMALL_32, _JSON_E_LARGE_32) if bits == 32 else (_JSON_E_SMALL_64, _JSON_E_LARGE_64)
    fmt = "e" if magnitude and (magnitude < small or magnitude >= large) else "f"
    text = format_float(value, fmt, -1, bits)
    if fmt == "e":
        text = re.sub(r"e-0(\d)\Z", r"e-\1", text)
    return text


def json_marshal(value: Any, *, sort_keys: bool = True) -> str:
    """``json.Marshal`` of plain data. Dicts are Go maps (keys sorted) unless ``sort_keys=False``, when they are taken
    in their own order (a Go struct the caller laid out, with maps inside already sorted)."""
    parts: list[str] = []
    _marshal(value, parts, sort_keys=sort_keys)
    return "".join(parts)


def _marshal(value: Any, out: list[str], *, sort_keys: bool) -> None:  # noqa: PLR0912 - one case per JSON type
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json_string(value))
    elif isinstance(value, Float32):
        out.append(json_number(float(value), 32))
    elif isinstance(value, float):
        out.append(json_number(value, 64))
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, Mapping):
        keys = sorted(value) if sort_keys else list(value)
        out.append("{")
        for index, key in enumerate(keys):
            if index:
                out.append(",")
            out.append(json_string(str(key)))
            out.append(":")
            _marshal(value[key], out, sort_keys=sort_keys)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _marshal(item, out, sort_keys=sort_keys)
        out.append("]")
    else:
        raise GoError(f"json: unsupported type: {type(value).__name__}")


# --------------------------------------------------------------------------------------------------------------------
# Reading: numbers into float32 and interface{}, objects into structs
# --------------------------------------------------------------------------------------------------------------------


def float32_from_json(value: float | int | str | Decimal) -> float:
    """What Go's ``encoding/json`` stores in a float32 field for this JSON number: ``strconv.ParseFloat(text, 32)`` of
    the number's text (for a Python float, its shortest text, which is what the API server serves). Raises
    :class:`GoError` with Go's message when it overflows float32."""
    if isinstance(value, bool):
        raise GoError("json: cannot unmarshal bool into Go value of type float32")
    if isinstance(value, float) and not math.isfinite(value):
        raise GoError(f"json: unsupported value: {value}")
    text = repr(value) if isinstance(value, float) else str(value)
    exact = Fraction(Decimal(text))
    result = nearest_float32(exact)
    if math.isinf(result):
        raise GoError(f"json: cannot unmarshal number {text} into Go value of type float32")
    return math.copysign(result, -1.0 if text.lstrip().startswith("-") else 1.0)


class Pairs(list[tuple[str, Any]]):
    """A JSON object with its keys in order and duplicates kept, as Go's decoder walks it."""


def decode(text: str) -> Any:
    """A JSON text as Go's decoder walks it: objects as :class:`Pairs`; ``NaN`` and ``Infinity``, which Python's
    reader accepts, refused (:class:`ValueError`, as any syntax error)."""
    return json.loads(text, object_pairs_hook=Pairs, parse_constant=_reject_constant)


def _reject_constant(text: str) -> Any:
    raise ValueError(f"invalid character {text[0]!r} looking for beginning of value")


_JSON_KINDS: Final = {str: "string", bool: "bool", list: "array", int: "number", float: "number"}


def json_kind(value: Any) -> str:
    """The JSON kind ``UnmarshalTypeError`` names for a decoded value: ``object``, ``array``, ``string``, ``number``,
    ``bool``."""
    return "object" if isinstance(value, Pairs | Mapping) else _JSON_KINDS.get(type(value), "value")


def decode_struct(value: Any, fields: Sequence[str], path: str) -> dict[str, Any] | None:
    """A JSON object (:class:`Pairs`) decoded into a Go struct with these fields: keys matched exactly or
    case-insensitively, later keys winning, unknown keys ignored. None for ``null``; any other JSON value raises
    :class:`~raykube.golang.errors.GoError` naming ``path``."""
    if value is None:
        return None
    if not isinstance(value, Pairs):
        raise _type_error(value, path)
    decoded: dict[str, Any] = {}
    for key, item in value:
        field = key if key in fields else next((f for f in fields if f.lower() == key.lower()), None)
        if field is not None:
            decoded[field] = item
    return decoded


def decode_map(value: Any, path: str) -> list[tuple[str, Any]]:
    """A JSON object decoded into a ``map[string]T``: its pairs in order (a repeated key: the last one wins, once put
    in a dict); ``[]`` for ``null``."""
    if value is None:
        return []
    if not isinstance(value, Pairs):
        raise _type_error(value, path)
    return list(value)


def decode_string(value: Any, path: str) -> str:
    """A JSON value decoded into a ``string``: ``""`` for ``null``."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _type_error(value, path)
    return value


def _type_error(value: Any, path: str) -> GoError:
    return GoError(f"json: cannot unmarshal {json_kind(value)} into {path}")


def preserve_ints(value: Any) -> Any:
    """What ``sigs.k8s.io/json`` (and apimachinery's ``ConvertMapNumbers``) puts in an ``interface{}``: integers as
    int64 when they fit, else float64."""
    if isinstance(value, dict):
        return {key: preserve_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [preserve_ints(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        return float(value)
    return value


# --------------------------------------------------------------------------------------------------------------------
# The round trip of a RayClusterSpec through KubeRay's Go structs
# --------------------------------------------------------------------------------------------------------------------

# Bounds of Go's integer kinds: a number outside them does not decode (the field stays 0).
_INT_BOUNDS: Final[dict[str, tuple[int, int]]] = {
    **{f"int{bits}": (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) for bits in (8, 16, 32, 64)},
    **{f"uint{bits}": (0, (1 << bits) - 1) for bits in (8, 16, 32, 64)},
    "int": (-(1 << 63), (1 << 63) - 1),
    "uint": (0, (1 << 64) - 1),
    "uintptr": (0, (1 << 64) - 1),
}
_INT64 = _INT_BOUNDS["int64"]
# time.RFC3339 as time.Parse reads it: fractional seconds allowed, "Z" or a numeric offset.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:Z|([+-])(\d{2}):(\d{2}))\Z",
)
_GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def marshal(type_name: str, value: Any) -> str:
    """``json.Marshal`` of the Go value of type ``type_name`` (a :mod:`~raykube.golang.gostructs` type expression,
    ``gostructs.ROOT`` for the RayClusterSpec) that decoding the JSON value ``value`` gives."""
    out: list[str] = []
    _node(type_name).encode(value, out)
    return "".join(out)


def drop_nulls(value: Any) -> Any:
    """``value`` without the ``null`` object members, at any depth: what the API server stores of a custom resource
    written with them (it prunes nulls of fields not marked nullable, and KubeRay's CRDs mark none)."""
    if isinstance(value, dict):
        return {key: drop_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [drop_nulls(item) for item in value]
    return value


def as_go_writes(type_name: str, value: Any, *, keep_unknown: bool = False) -> Any:
    """``value`` as the API server stores it when KubeRay writes it through its Go type ``type_name`` (a
    :mod:`~raykube.golang.gostructs` expression; ``gostructs.ROOTS[kind]`` for a whole object): decoded into the Go
    struct and encoded again (:func:`marshal`), then :func:`drop_nulls`.

    So: omitempty zeros are gone (``false``, ``""``, ``0``), structs Go always writes appear (``template.metadata:
    {}``, ``resources: {}``), quantities and times are in Go's form, and keys that are no field of the Go struct are
    gone (a Pod field newer than KubeRay's k8s.io/api too), unless ``keep_unknown``: then each such key is put back
    where it was, with its value as read (:func:`with_unknown`). Only ``RayClusterStatus.lastUpdateTime`` is nullable
    in KubeRay's CRDs, and Go writes it ``null`` only for Go's zero instant, which nothing writes."""
    written = drop_nulls(json.loads(marshal(type_name, value)))
    return with_unknown(type_name, value, written) if keep_unknown else written


def with_unknown(type_name: str, original: Any, written: Any) -> Any:
    """``written`` (Go's encoding of ``original`` as the Go type ``type_name``) with every key of ``original`` that is
    no JSON field of its Go struct (matched exactly) put back in place, with its value as read (nulls dropped)."""
    return _restore(_node(type_name), original, written)


def _restore(node: _Node, original: Any, written: Any) -> Any:
    if isinstance(node, _Pointer):
        return _restore(node.elem, original, written)
    if isinstance(node, _Slice) and isinstance(original, list) and isinstance(written, list):
        if len(original) != len(written):
            return written
        return [_restore(node.elem, old, new) for old, new in zip(original, written, strict=True)]
    if isinstance(node, _Map) and isinstance(original, dict) and isinstance(written, dict):
        return {key: _restore(node.elem, original.get(key), new) for key, new in written.items()}
    if isinstance(node, _Struct) and isinstance(original, dict) and isinstance(written, dict):
        known = {name: field for name, _, field, _ in node.fields}
        restored = {
            key: _restore(known[key], original.get(key), new) if key in known else new for key, new in written.items()
        }
        for key, old in original.items():
            if key not in known and old is not None:
                restored[key] = drop_nulls(old)
        return restored
    return written


class _Node:
    """One Go type: how it encodes a JSON value decoded into it, and whether that value is empty or zero."""

    def encode(self, value: Any, out: list[str]) -> None:
        raise NotImplementedError

    def empty(self, value: Any) -> bool:
        """omitempty: false, 0, "", nil pointer or interface, empty slice or map. Structs never are."""
        return False

    def zero(self, value: Any) -> bool:
        """omitzero: the Go zero value (for a type with an IsZero method, what it says)."""
        return self.empty(value)


class _Bool(_Node):
    def encode(self, value: Any, out: list[str]) -> None:
        out.append("true" if value is True else "false")

    def empty(self, value: Any) -> bool:
        return value is not True


class _String(_Node):
    def encode(self, value: Any, out: list[str]) -> None:
        out.append(json_string(value) if isinstance(value, str) else '""')

    def empty(self, value: Any) -> bool:
        return not isinstance(value, str) or not value


def _integer(value: Any, bounds: tuple[int, int]) -> int:
    """The Go integer a JSON value decodes to: only an integer literal in range; anything else leaves 0."""
    if isinstance(value, int) and not isinstance(value, bool) and bounds[0] <= value <= bounds[1]:
        return value
    return 0


class _Int(_Node):
    def __init__(self, kind: str) -> None:
        self.bounds = _INT_BOUNDS[kind]

    def encode(self, value: Any, out: list[str]) -> None:
        out.append(str(_integer(value, self.bounds)))

    def empty(self, value: Any) -> bool:
        return _integer(value, self.bounds) == 0


class _Float(_Node):
    def __init__(self, bits: int) -> None:
        self.bits = bits

    def _value(self, value: Any) -> float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return 0.0
        if self.bits == 32:
            try:
                return float32_from_json(value)
            except GoError:  # beyond float32: Go leaves the field alone
                return 0.0
        return float(value)

    def encode(self, value: Any, out: list[str]) -> None:
        out.append(json_number(self._value(value), self.bits))

    def empty(self, value: Any) -> bool:
        return self._value(value) == 0


class _Bytes(_Node):
    """``[]byte``: base64 (standard alphabet, padded) in JSON."""

    @staticmethod
    def _value(value: Any) -> bytes | None:
        if not isinstance(value, str):
            return None
        try:
            return base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError):
            return None

    def encode(self, value: Any, out: list[str]) -> None:
        data = self._value(value)
        out.append("null" if data is None else json_string(base64.b64encode(data).decode()))

    def empty(self, value: Any) -> bool:
        return not self._value(value)


class _Any(_Node):
    def encode(self, value: Any, out: list[str]) -> None:
        out.append(json_marshal(preserve_ints(value)))

    def empty(self, value: Any) -> bool:
        return value is None


class _Pointer(_Node):
    def __init__(self, elem: _Node) -> None:
        self.elem = elem

    def encode(self, value: Any, out: list[str]) -> None:
        if value is None:
            out.append("null")
        else:
            self.elem.encode(value, out)

    def empty(self, value: Any) -> bool:
        return value is None


class _Slice(_Node):
    def __init__(self, elem: _Node) -> None:
        self.elem = elem

    def encode(self, value: Any, out: list[str]) -> None:
        if not isinstance(value, list):
            out.append("null")
            return
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            self.elem.encode(item, out)
        out.append("]")

    def empty(self, value: Any) -> bool:
        return not isinstance(value, list) or not value

    def zero(self, value: Any) -> bool:
        return not isinstance(value, list)


class _Map(_Node):
    def __init__(self, elem: _Node) -> None:
        self.elem = elem

    def encode(self, value: Any, out: list[str]) -> None:
        if not isinstance(value, dict):
            out.append("null")
            return
        out.append("{")
        for index, key in enumerate(sorted(value)):
            if index:
                out.append(",")
            out.append(json_string(key))
            out.append(":")
            self.elem.encode(value[key], out)
        out.append("}")

    def empty(self, value: Any) -> bool:
        return not isinstance(value, dict) or not value

    def zero(self, value: Any) -> bool:
        return not isinstance(value, dict)


class _Struct(_Node):
    def __init__(self, name: str) -> None:
        self.name = name
        self.fields: list[tuple[str, str, _Node, int]] = []  # filled in by _node (structs may be recursive)

    def encode(self, value: Any, out: list[str]) -> None:
        data = value if isinstance(value, dict) else {}
        out.append("{")
        first = True
        for name, prefix, node, flags in self.fields:
            item = data.get(name)
            if flags & gostructs.OMITEMPTY and node.empty(item):
                continue
            if flags & gostructs.OMITZERO and node.zero(item):
                continue
            out.append(prefix if first else "," + prefix)
            first = False
            node.encode(item, out)
        out.append("}")

    def zero(self, value: Any) -> bool:
        data = value if isinstance(value, dict) else {}
        return all(node.zero(data.get(name)) for name, _, node, _ in self.fields)


class _Quantity(_Node):
    """``resource.Quantity``: the string ``MarshalJSON`` writes (:func:`~raykube.golang.quantity.marshaled`); the
    zero Quantity is ``"0"``."""

    @staticmethod
    def _text(value: Any) -> str | None:
        """The text ``UnmarshalJSON`` parses: a string without surrounding space, a number as the API server writes
        it (Go's float format); None for null, absent, or a value Go refuses (the field keeps its zero value)."""
        if isinstance(value, str):
            return trim_space(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, float):
            return json_number(value)
        return None

    def encode(self, value: Any, out: list[str]) -> None:
        text = self._text(value)
        if text is None:
            out.append('"0"')
            return
        try:
            out.append(json_string(marshaled(text)))
        except QuantityError:
            out.append(json_string(text))  # Go refuses it; kept as written so that a change still shows

    def zero(self, value: Any) -> bool:
        text = self._text(value)
        try:
            return text is None or parse_quantity(text).is_zero
        except QuantityError:
            return False


class _IntOrString(_Node):
    """``intstr.IntOrString``: a JSON string stays a string, anything else is an int32 (``0`` when absent)."""

    def encode(self, value: Any, out: list[str]) -> None:
        if isinstance(value, str):
            out.append(json_string(value))
        else:
            out.append(str(_integer(value, _INT_BOUNDS["int32"])))

    def zero(self, value: Any) -> bool:
        return not isinstance(value, str) and _integer(value, _INT_BOUNDS["int32"]) == 0


def _parse_time(value: Any) -> tuple[datetime, bool] | None:
    """``time.Parse(time.RFC3339, value)`` in UTC, and whether it has a fraction of a second (which the encoding
    drops); None for null, absent, or a text Go refuses (or a year Python cannot hold)."""
    if not isinstance(value, str):
        return None
    match = _RFC3339.match(value)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, sign, off_hours, off_minutes = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC)
        if sign:
            offset = timedelta(hours=int(off_hours), minutes=int(off_minutes))
            moment -= offset if sign == "+" else -offset
    except (ValueError, OverflowError):
        return None
    return moment, bool(fraction and int(fraction))


class _Time(_Node):
    """``metav1.Time``: RFC 3339 in UTC with whole seconds; ``null`` when zero (Go's zero instant)."""

    def encode(self, value: Any, out: list[str]) -> None:
        parsed = _parse_time(value)
        if parsed is None:
            out.append(json_string(value) if isinstance(value, str) else "null")  # a bad text is kept as written
        elif parsed == (_GO_ZERO_TIME, False):
            out.append("null")
        else:
            moment = parsed[0]
            out.append(json_string(f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}Z"))

    def zero(self, value: Any) -> bool:
        return not isinstance(value, str) or _parse_time(value) == (_GO_ZERO_TIME, False)


class _RawJSON(_Node):
    """``metav1.FieldsV1``: the raw JSON it was given, compacted (its keys keep their order)."""

    def encode(self, value: Any, out: list[str]) -> None:
        out.append(json_marshal(value, sort_keys=False))


_CUSTOM: Final[dict[str, Callable[[], _Node]]] = {
    "resource.Quantity": _Quantity,
    "intstr.IntOrString": _IntOrString,
    "metav1.Time": _Time,
    "metav1.FieldsV1": _RawJSON,
}
_BASIC: Final[dict[str, Callable[[], _Node]]] = {
    "bool": _Bool,
    "string": _String,
    "bytes": _Bytes,
    "any": _Any,
    "float32": partial(_Float, 32),
    "float64": partial(_Float, 64),
    **{kind: partial(_Int, kind) for kind in _INT_BOUNDS},
}


@cache
def _node(expr: str) -> _Node:
    """The node of a type expression, built once (a struct's node is cached before its fields, for recursion)."""
    if expr.startswith("*"):
        return _Pointer(_node(expr[1:]))
    if expr.startswith("[]"):
        return _Slice(_node(expr[2:]))
    if expr.startswith("map[string]"):
        return _Map(_node(expr[len("map[string]") :]))
    if expr in _BASIC:
        return _BASIC[expr]()
    if expr in gostructs.CUSTOM:
        if expr not in _CUSTOM:
            raise GoError(f"the Go type {expr} has its own JSON methods and no handler here")
        return _CUSTOM[expr]()
    if expr in gostructs.STRUCTS:
        return _struct(expr)
    raise GoError(f"unknown Go type expression {expr!r}")


_STRUCT_NODES: dict[str, _Struct] = {}


def _struct(name: str) -> _Struct:
    node = _STRUCT_NODES.get(name)
    if node is None:
        node = _STRUCT_NODES[name] = _Struct(name)
        node.fields = [
            (field, json_string(field) + ":", _node(expr), flags) for field, expr, flags in gostructs.STRUCTS[name]
        ]
    return node

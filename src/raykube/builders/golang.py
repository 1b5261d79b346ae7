"""Go's text formats that KubeRay's generated strings depend on, re-implemented from their documentation.

KubeRay writes some values into what it generates with Go's standard library, and users (and Ray) see those bytes:

* :func:`quote` is ``strconv.Quote``: the ``--runtime-env-json``, ``--metadata-json`` and ``--entrypoint-resources``
  values of the submitter command (KubeRay ``ray-operator/controllers/ray/common/job.go``).
* :func:`format_float` is ``strconv.FormatFloat`` for the ``e``, ``f`` and ``g`` formats, shortest (``prec=-1``),
  and for ``f`` with a fixed precision too, for float64 and float32; ``fmt.Sprintf("%f", x)`` is
  ``format_float(x, "f", 6, bits)``.
* :func:`float32_from_json` is how Go's ``encoding/json`` reads a JSON number into a ``float32`` field
  (``strconv.ParseFloat(text, 32)``: the nearest float32 to the decimal text, ties to even), and
  :func:`round_float32` Go's float64 → float32 conversion.
* :func:`json_marshal` is ``encoding/json.Marshal`` of plain data: no spaces, ``<``, ``>``, ``&``, U+2028 and U+2029
  escaped, Go's number formats (:class:`Float32` marks a value Go holds as float32).
* :func:`duration_string` is ``time.Duration.String`` (``1h2m3.5s``, ``1.5ms``, ``0s``), which KubeRay prints into
  messages (the RayService initializing timeout).
* :func:`yaml_to_json` is ``sigs.k8s.io/yaml.YAMLToJSON`` v1.6.0: YAML read with go-yaml v2's rules for plain scalars
  (its ``resolve``: ``y``/``n``/``on``/``off`` are booleans, ``0o17``/``0x1F``/``0b1`` integers, ``1e3`` and ``08``
  floats, timestamps stay strings, no sexagesimal numbers), non-string keys turned into strings as that library does,
  then :func:`json_marshal` with map keys sorted.

Every function here is compared with Go's own answers in tests/vectors/ (written by tools/govectors, ``make
vectors``): 3,015 strings quoted, 2,035 JSON numbers read as float32 or float64, 9,714 formatted floats, 3,040 YAML
documents and 1,514 durations, curated edge cases and random ones; raykube agrees on all of them.

Where Python cannot see what Go sees:

* **Unicode version.** ``strconv.IsPrint`` (Go 1.21 to 1.26) follows Unicode 15.0, Python 3.11's ``unicodedata``
  Unicode 14.0. The code points Unicode 15.0 made printable are listed in :data:`_UNICODE_15_PRINTABLE`, so
  :func:`is_print` and :func:`quote` agree with Go everywhere: tests/vectors/golang_isprint.json holds Go 1.26's
  ``strconv.IsPrint`` of all 1,114,112 code points (tools/govectors, ``make vectors``), and :func:`is_print` agrees
  on every one.
* **Lone surrogates.** A Python string decoded from JSON may hold one (``"\\ud800"``); Go's JSON decoder turns it
  into U+FFFD, and so do :func:`quote` and :func:`json_marshal`.
* **YAML syntax.** The YAML grammar is PyYAML's; only the typing of plain scalars and keys follows go-yaml v2. Error
  texts are PyYAML's in go-yaml's ``yaml: line N: ...`` shape, not always go-yaml's words.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import struct
from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from typing import Any

import yaml

__all__ = [
    "Float32",
    "GoError",
    "duration_string",
    "float32_from_json",
    "format_float",
    "json_marshal",
    "json_string",
    "quote",
    "round_float32",
    "trim_space",
    "yaml_to_json",
    "yaml_to_value",
]


class GoError(ValueError):
    """A value Go's library would refuse, with the message it would give where we know it."""


# --------------------------------------------------------------------------------------------------------------------
# Strings: strconv.Quote and JSON string escaping
# --------------------------------------------------------------------------------------------------------------------

# Code points that are printable (categories L, M, N, P, S) in Unicode 15.0 but unassigned in Python 3.11's Unicode
# 14.0 database: Go's strconv.IsPrint keeps them, str.isprintable() does not.
_UNICODE_15_PRINTABLE: tuple[tuple[int, int], ...] = (
    (0x0CF3, 0x0CF3), (0x0ECE, 0x0ECE), (0x10EFD, 0x10EFF), (0x1123F, 0x11241), (0x11B00, 0x11B09),
    (0x11F00, 0x11F10), (0x11F12, 0x11F3A), (0x11F3E, 0x11F59), (0x1342F, 0x1342F), (0x13440, 0x13455),
    (0x1B132, 0x1B132), (0x1B155, 0x1B155), (0x1D2C0, 0x1D2D3), (0x1DF25, 0x1DF2A), (0x1E030, 0x1E06D),
    (0x1E08F, 0x1E08F), (0x1E4D0, 0x1E4F9), (0x1F6DC, 0x1F6DC), (0x1F774, 0x1F776), (0x1F77B, 0x1F77F),
    (0x1F7D9, 0x1F7D9), (0x1FA75, 0x1FA77), (0x1FA87, 0x1FA88), (0x1FAAD, 0x1FAAF), (0x1FABB, 0x1FABD),
    (0x1FABF, 0x1FABF), (0x1FACE, 0x1FACF), (0x1FADA, 0x1FADB), (0x1FAE8, 0x1FAE8), (0x1FAF7, 0x1FAF8),
    (0x2B739, 0x2B739), (0x31350, 0x323AF),
)  # fmt: skip
_UNICODE_15_STARTS = tuple(start for start, _ in _UNICODE_15_PRINTABLE)
_SURROGATE = re.compile("[\ud800-\udfff]")
# strconv.Quote's short escapes (appendEscapedRune).
_QUOTE_ESCAPES: Mapping[str, str] = {
    "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
}  # fmt: skip
_DEL = 0x7F
_BMP_END = 0x10000


def _valid(text: str) -> str:
    """The string Go would hold: lone surrogates (invalid in UTF-8) become U+FFFD, as Go's JSON decoder makes them."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def is_print(char: str) -> bool:
    """``strconv.IsPrint``: letters, marks, numbers, punctuation, symbols (Unicode 15.0) and the ASCII space."""
    if char.isprintable():
        return True
    code = ord(char)
    index = bisect.bisect_right(_UNICODE_15_STARTS, code) - 1
    return index >= 0 and code <= _UNICODE_15_PRINTABLE[index][1]


def quote(text: str) -> str:
    """``strconv.Quote``: a double-quoted Go string literal; printable characters kept, others escaped as ``\\n``,
    ``\\x1b``, ``\\u00ad`` or ``\\U000e0001`` (lowercase hex)."""
    out = ['"']
    for char in _valid(text):
        if char in '"\\':
            out.append("\\" + char)
        elif is_print(char):
            out.append(char)
        elif char in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[char])
        else:
            code = ord(char)
            if code < 0x20 or code == _DEL:
                out.append(f"\\x{code:02x}")
            elif code < _BMP_END:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


# unicode.IsSpace (Go's White_Space set): what strings.TrimSpace removes. Python's str.strip() also removes
# U+001C to U+001F, which Go keeps.
_GO_SPACE = "".join(chr(code) for code in (*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)))
_GO_SPACE += "\u2028\u2029\u202f\u205f\u3000"


def trim_space(text: str) -> str:
    """``strings.TrimSpace``: leading and trailing Unicode white space removed."""
    return text.strip(_GO_SPACE)


def json_string(text: str) -> str:
    """A JSON string as Go's ``encoding/json`` writes it: like Python's (``\\b``, ``\\f``, ``\\n``, ``\\r``, ``\\t``,
    other controls as ``\\u00XX``), plus ``<``, ``>``, ``&``, U+2028 and U+2029 escaped; non-ASCII kept."""
    encoded = json.dumps(_valid(text), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
        encoded = encoded.replace(char, escaped)
    return encoded.replace("\u2029", "\\u2029")


# --------------------------------------------------------------------------------------------------------------------
# Floats: float32 rounding and strconv.FormatFloat
# --------------------------------------------------------------------------------------------------------------------

_F32_MANTISSA_BITS = 23
_F32_MIN_EXP = -126
_F32_MAX_EXP = 127
_F32_MAX_DIGITS = 9  # every float32 has a round-tripping decimal of at most 9 significant digits


def _round_fraction_to_float32(value: Fraction) -> float:
    """The float32 nearest to ``value`` (ties to even), as a Python float; ±inf beyond float32's range."""
    if value == 0:
        return 0.0
    sign = -1.0 if value < 0 else 1.0
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    exponent = max(exponent, _F32_MIN_EXP)  # subnormals share the smallest exponent
    scale = exponent - _F32_MANTISSA_BITS
    mantissa = round(magnitude / Fraction(2) ** scale)  # round() on a Fraction rounds half to even
    if mantissa == 1 << (_F32_MANTISSA_BITS + 1):
        mantissa >>= 1
        scale += 1
    if scale + _F32_MANTISSA_BITS > _F32_MAX_EXP:
        return sign * math.inf
    return sign * math.ldexp(mantissa, scale)


def round_float32(value: float) -> float:
    """Go's ``float32(x)`` of a float64: the nearest float32 (ties to even)."""
    if math.isnan(value) or math.isinf(value):
        return value
    return math.copysign(_round_fraction_to_float32(Fraction(value)), value)


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
    result = _round_fraction_to_float32(exact)
    if math.isinf(result):
        raise GoError(f"json: cannot unmarshal number {text} into Go value of type float32")
    return math.copysign(result, -1.0 if text.lstrip().startswith("-") else 1.0)


def _f32_bits_equal(a: float, b: float) -> bool:
    return struct.pack(">f", a) == struct.pack(">f", b)


def _digits_of(value: Decimal) -> tuple[str, int]:
    """``(digits, dp)`` of a positive decimal: value = 0.<digits> * 10^dp, no trailing zeros."""
    _, digit_tuple, exponent = value.normalize().as_tuple()
    if not isinstance(exponent, int):  # pragma: no cover - only NaN and infinities have a letter exponent
        raise GoError(f"not a finite decimal: {value}")
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    return digits, len(digit_tuple) + exponent


def _shortest(magnitude: float, bits: int) -> tuple[str, int]:
    """The shortest decimal digits that read back as ``magnitude`` (a positive float64, or float32 value for
    ``bits=32``), the closest to it when several are as short, and the decimal point position."""
    if bits == 64:
        return _digits_of(Decimal(repr(magnitude)))
    exact = Decimal(magnitude)  # a float32 value is exact in a float64, and exactly as a Decimal
    for count in range(1, _F32_MAX_DIGITS + 1):
        with localcontext() as context:
            context.prec = count
            context.rounding = ROUND_HALF_EVEN
            nearest = +exact
        step = Decimal(1).scaleb(nearest.adjusted() - count + 1)
        candidates = [c for c in (nearest, nearest - step, nearest + step) if c > 0]
        valid = [c for c in candidates if _f32_bits_equal(_round_fraction_to_float32(Fraction(c)), magnitude)]
        if valid:
            return _digits_of(min(valid, key=lambda c: abs(Fraction(c) - Fraction(magnitude))))
    raise AssertionError(f"no float32 decimal for {magnitude!r}")  # pragma: no cover - 9 digits always suffice


def _fmt_e(negative: bool, digits: str, dp: int, prec: int) -> str:
    """strconv's %e layout: d.ddd…e±XX, at least two exponent digits."""
    first = digits[0] if digits else "0"
    text = "-" if negative else ""
    text += first
    if prec > 0:
        text += "." + digits[1 : 1 + prec].ljust(prec, "0")
    exponent = dp - 1 if digits and digits != "0" else 0
    sign = "-" if exponent < 0 else "+"
    return f"{text}e{sign}{abs(exponent):02d}"


def _fmt_f(negative: bool, digits: str, dp: int, prec: int) -> str:
    """strconv's %f layout: integer part (``0`` when below one), then ``prec`` decimals."""
    if digits == "0":
        digits, dp = "", 0
    integer = digits[:dp].ljust(dp, "0") if dp > 0 else "0"
    text = ("-" if negative else "") + integer
    if prec > 0:
        decimals = "".join(digits[dp + i] if 0 <= dp + i < len(digits) else "0" for i in range(prec))
        text += "." + decimals
    return text


def format_float(value: float, fmt: str, prec: int, bits: int) -> str:  # noqa: PLR0911 - one layout per format
    """``strconv.FormatFloat(value, fmt, prec, bits)`` for ``fmt`` in ``e``, ``f``, ``g``. ``prec=-1`` is the
    shortest representation that reads back as the same float of ``bits`` bits; with ``bits=32`` the value is first
    rounded to float32 (Go's conversion). Infinities and NaN are ``+Inf``, ``-Inf`` and ``NaN``."""
    if math.isnan(value):
        return "NaN"
    if bits == 32:
        value = round_float32(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    negative = math.copysign(1.0, value) < 0
    magnitude = abs(value)
    if prec < 0:
        digits, dp = _shortest(magnitude, bits) if magnitude else ("", 0)
        if fmt == "e":
            return _fmt_e(negative, digits, dp, max(len(digits) - 1, 0))
        if fmt == "f":
            return _fmt_f(negative, digits, dp, max(len(digits) - dp, 0))
        if fmt == "g":
            exponent = dp - 1 if digits else 0
            if exponent < -4 or exponent >= 6:  # shortest %g decides with precision 6
                return _fmt_e(negative, digits, dp, max(len(digits) - 1, 0))
            return _fmt_f(negative, digits, dp, max(len(digits) - dp, 0))
        raise ValueError(f"unsupported format {fmt!r}")
    if fmt != "f":
        raise ValueError(f"unsupported format {fmt!r} with a fixed precision")
    with localcontext() as context:
        context.prec = 1100  # enough for every float64 written out in full
        text = format(Decimal(magnitude).quantize(Decimal(1).scaleb(-prec), rounding=ROUND_HALF_EVEN), "f")
    return ("-" if negative else "") + text


# --------------------------------------------------------------------------------------------------------------------
# encoding/json
# --------------------------------------------------------------------------------------------------------------------


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
# sigs.k8s.io/yaml.YAMLToJSON with go-yaml v2's scalar rules
# --------------------------------------------------------------------------------------------------------------------

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MERGE = "tag:yaml.org,2002:merge"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_BINARY = "tag:yaml.org,2002:binary"

# go-yaml v2 resolve.go resolveMapList: the plain scalars it looks up by exact text.
_RESOLVE_MAP: Mapping[str, tuple[str, Any]] = {
    **{text: (_BOOL, True) for text in ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
    **{text: (_BOOL, False) for text in ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
    **{text: (_NULL, None) for text in ("", "~", "null", "Null", "NULL")},
    **{text: (_FLOAT, math.nan) for text in (".nan", ".NaN", ".NAN")},
    **{text: (_FLOAT, math.inf) for text in (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")},
    **{text: (_FLOAT, -math.inf) for text in ("-.inf", "-.Inf", "-.INF")},
}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?\Z")  # what strconv.ParseFloat accepts after a leading dot
_INT_BODY = {16: "0123456789abcdefABCDEF", 8: "01234567", 2: "01", 10: "0123456789"}
_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


def _parse_int(text: str, base: int, *, signed: bool) -> int | None:
    """``strconv.ParseInt(text, base, 64)`` (``ParseUint`` when not ``signed``) on a text without underscores. Base 0
    reads a ``0x``/``0o``/``0b`` prefix or a leading ``0`` (octal); None where Go returns an error."""
    body, negative = text, False
    if signed and body and body[0] in "+-":
        negative, body = body[0] == "-", body[1:]
    if base == 0:
        base = 10
        if len(body) >= 3 and body[0] == "0" and body[1] in "xXoObB":  # a prefix and a digit
            base, body = {"x": 16, "o": 8, "b": 2}[body[1].lower()], body[2:]
        elif body[:1] == "0":
            base, body = 8, body[1:]
            if not body:
                return 0
    if not body or any(char not in _INT_BODY[base] for char in body):
        return None
    number = -int(body, base) if negative else int(body, base)
    low, high = (_INT64_MIN, _INT64_MAX) if signed else (0, _UINT64_MAX)
    return number if low <= number <= high else None


def _go_parse_float(text: str) -> float | None:
    """``strconv.ParseFloat(text, 64)`` for decimal texts; None on overflow (Go's ErrRange)."""
    number = float(text)
    return None if math.isinf(number) else number


def go_yaml_resolve(text: str) -> tuple[str, Any]:  # noqa: PLR0911, PLR0912 - go-yaml's cases, in its order
    """go-yaml v2 ``resolve`` of an untagged plain scalar: ``(tag, value)``. Timestamps stay strings (v2 hands their
    text to an ``interface{}``), base 60 numbers are not supported (strings)."""
    if text in _RESOLVE_MAP:
        return _RESOLVE_MAP[text]
    first = text[:1]
    if first == ".":
        if _DOT_FLOAT.match(text):
            number = _go_parse_float(text)
            if number is not None:
                return _FLOAT, number
        return _STR, text
    if first and first in "0123456789+-":
        plain = text.replace("_", "")
        integer = _parse_int(plain, 0, signed=True)
        if integer is None:
            integer = _parse_int(plain, 0, signed=False)
        if integer is not None:
            return _INT, integer
        if _YAML_STYLE_FLOAT.match(plain):
            number = _go_parse_float(plain)
            if number is not None:
                return _FLOAT, number
        if plain.startswith("0b"):
            integer = _parse_int(plain[2:], 2, signed=True)
            if integer is None:
                integer = _parse_int(plain[2:], 2, signed=False)
        elif plain.startswith("-0b"):
            integer = _parse_int("-" + plain[3:], 2, signed=True)
        if integer is not None:
            return _INT, integer
    return _STR, text


class _GoYamlLoader(yaml.SafeLoader):
    """PyYAML's grammar with go-yaml v2's typing of plain scalars."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                return _MERGE if value == "<<" else go_yaml_resolve(value)[0]
            return _STR
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]


def _construct_resolved(loader: _GoYamlLoader, node: yaml.Node) -> Any:
    """A scalar of one of the resolvable tags (explicit or implicit), typed as go-yaml v2 types it."""
    text = loader.construct_scalar(node)  # type: ignore[arg-type]
    tag, value = go_yaml_resolve(str(text))
    if node.tag in (_STR, _TIMESTAMP):
        return str(text)
    if tag == node.tag:
        return value
    if node.tag == _FLOAT and tag == _INT:
        return float(value)
    raise yaml.constructor.ConstructorError(
        None, None, f"cannot decode {_short(tag)} `{text}` as a {_short(node.tag)}", node.start_mark
    )


def _short(tag: str) -> str:
    return "!!" + tag.rpartition(":")[2] if tag.startswith("tag:yaml.org,2002:") else tag


def _construct_binary(loader: _GoYamlLoader, node: yaml.Node) -> str:
    data: bytes = loader.construct_yaml_binary(node)  # type: ignore[arg-type]
    return data.decode("utf-8", errors="replace")


def _construct_other(loader: _GoYamlLoader, suffix: str, node: yaml.Node) -> Any:
    """Any other tag (``!foo``, ``!!set``, ``!!omap``): the node's plain value, as go-yaml v2 decodes into
    ``interface{}``."""
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


for _tag in (_INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP):
    _GoYamlLoader.add_constructor(_tag, _construct_resolved)
_GoYamlLoader.add_constructor(_BINARY, _construct_binary)
for _tag in ("tag:yaml.org,2002:set", "tag:yaml.org,2002:omap", "tag:yaml.org,2002:pairs"):
    _GoYamlLoader.add_constructor(_tag, lambda loader, node: _construct_other(loader, "", node))  # type: ignore[arg-type]
_GoYamlLoader.add_multi_constructor("", _construct_other)


def _yaml_error(error: yaml.YAMLError) -> GoError:
    """A YAML syntax error in go-yaml's ``yaml: line N: problem`` shape."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        return GoError(f"yaml: line {error.problem_mark.line + 1}: {error.problem}")
    return GoError("yaml: " + " ".join(str(error).split()))


def _json_key(key: Any, value: Any) -> str:
    """sigs.k8s.io/yaml ``convertToJSONableObject``: a YAML key as the JSON key it becomes."""
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int) and _INT64_MIN <= key <= _INT64_MAX:
        return str(key)
    if isinstance(key, float):
        text = format_float(key, "g", -1, 32)
        return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
    kind = "uint64" if isinstance(key, int) else "%!s(<nil>)" if key is None else type(key).__name__
    raise GoError(f"unsupported map key of type: {kind}, key: {_go_value(key)}, value: {_go_value(value)}")


def _go_value(value: Any) -> str:
    """Roughly Go's ``%+#v`` of a decoded YAML value (exact for scalars), for error messages."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, float):
        return format_float(value, "g", -1, 64)
    return repr(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {_json_key(key, item): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_jsonable(item) for item in value]
    return value


def yaml_to_value(text: str) -> Any:
    """The first YAML document of ``text`` as go-yaml v2 and sigs.k8s.io/yaml see it (keys made strings): dicts,
    lists, str, bool, None, int, float. Raises :class:`GoError` on a YAML error."""
    try:
        documents = yaml.load_all(text, Loader=_GoYamlLoader)  # a SafeLoader subclass
        first = next(iter(documents), None)
    except yaml.YAMLError as error:
        raise _yaml_error(error) from None
    except RecursionError:
        raise GoError("yaml: exceeded max depth") from None
    except TypeError as error:  # an unhashable (collection) key
        raise GoError(f"unsupported map key: {error}") from None
    return _jsonable(first)


def yaml_to_json(text: str) -> str:
    """``sigs.k8s.io/yaml.YAMLToJSON``: the first document as compact JSON, keys sorted, Go's number formats."""
    return json_marshal(yaml_to_value(text))


# --------------------------------------------------------------------------------------------------------------------
# time.Duration.String
# --------------------------------------------------------------------------------------------------------------------

_SECOND_NS = 1_000_000_000


def _decimal(value: int, places: int) -> str:
    """``value / 10**places`` written with the fraction's trailing zeros removed (``1500, 3`` → ``1.5``)."""
    whole, fraction = divmod(value, 10**places)
    return f"{whole}.{fraction:0{places}d}".rstrip("0") if fraction else str(whole)


def duration_string(nanoseconds: int) -> str:
    """Go's ``time.Duration(nanoseconds).String()``: ``0s``; below a second one unit (``ns``, ``µs``, ``ms``) with a
    fraction; from a second on ``<h>h<m>m<s.fraction>s`` without leading zero units (``1m0s``, ``1h0m0s``)."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    magnitude = abs(nanoseconds)
    if magnitude < 1_000:
        return f"{sign}{magnitude}ns"
    if magnitude < 1_000_000:
        return f"{sign}{_decimal(magnitude, 3)}\u00b5s"
    if magnitude < _SECOND_NS:
        return f"{sign}{_decimal(magnitude, 6)}ms"
    seconds, fraction = divmod(magnitude, _SECOND_NS)
    text = _decimal((seconds % 60) * _SECOND_NS + fraction, 9) + "s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes >= 60:
            text = f"{minutes // 60}h{text}"
    return sign + text

"""Go's ``strconv`` (and ``float32(x)``) as KubeRay's generated strings and its errors depend on them.

* :func:`quote` is ``strconv.Quote`` (and ``fmt``'s ``%q`` of a string): the ``--runtime-env-json``,
  ``--metadata-json`` and ``--entrypoint-resources`` values of the submitter command (KubeRay
  ``ray-operator/controllers/ray/common/job.go``), apimachinery's and KubeRay's validation messages, the downward
  API's label and annotation files. :func:`is_print` is ``strconv.IsPrint``.
* :func:`atoi` is ``strconv.Atoi`` with its error texts; :func:`parse_int` ``strconv.ParseInt``/``ParseUint`` (64
  bits) without them.
* :func:`format_float` is ``strconv.FormatFloat`` for the ``e``, ``f`` and ``g`` formats, shortest (``prec=-1``),
  and for ``f`` with a fixed precision too, for float64 and float32; ``fmt.Sprintf("%f", x)`` is
  ``format_float(x, "f", 6, bits)``.
* :func:`round_float32` is Go's float64 → float32 conversion, :func:`nearest_float32` the float32 nearest to an exact
  number (what ``strconv.ParseFloat(text, 32)`` returns).

Every function here is compared with Go's own answers in tests/vectors/ (written by tools/govectors, ``make
vectors``): 3,015 strings quoted, 2,035 JSON numbers read as float32 or float64, 9,714 formatted floats and the
``Atoi`` cases of the duration family, curated edge cases and random ones; raykube agrees on all of them.

Where Python cannot see what Go sees:

* **Unicode version.** ``strconv.IsPrint`` (Go 1.21 to 1.26) follows Unicode 15.0, Python 3.11's ``unicodedata``
  Unicode 14.0. The code points Unicode 15.0 made printable are listed in :data:`_UNICODE_15_PRINTABLE`, so
  :func:`is_print` and :func:`quote` agree with Go everywhere: tests/vectors/golang_isprint.json holds Go 1.26's
  ``strconv.IsPrint`` of all 1,114,112 code points (tools/govectors, ``make vectors``), and :func:`is_print` agrees
  on every one.
* **Lone surrogates.** A Python string decoded from JSON may hold one (``"\\ud800"``); Go's JSON decoder turns it
  into U+FFFD (:func:`valid_string`), and so do :func:`quote` and :func:`raykube.golang.gojson.json_marshal`.
"""

from __future__ import annotations

import bisect
import math
import re
import struct
from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from typing import Final

from raykube.golang.errors import GoError

__all__ = [
    "atoi",
    "format_float",
    "is_print",
    "nearest_float32",
    "parse_int",
    "quote",
    "round_float32",
    "valid_string",
]


# --------------------------------------------------------------------------------------------------------------------
# strconv.Quote and strconv.IsPrint
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


def valid_string(text: str) -> str:
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
    for char in valid_string(text):
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


# --------------------------------------------------------------------------------------------------------------------
# strconv.Atoi and strconv.ParseInt
# --------------------------------------------------------------------------------------------------------------------

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_UINT64_MAX: Final = (1 << 64) - 1
_ATOI_RE: Final = re.compile(r"[+-]?[0-9]+")
_ATOI_DIGITS_RE: Final = re.compile(r"[0-9]*")


def atoi(text: str) -> int:
    """``strconv.Atoi`` (a 64-bit ``int``); raises :class:`GoError` with its error text. Like Go, digits that overflow
    uint64 before the first non-digit make it "value out of range", not "invalid syntax"."""
    digits = _ATOI_DIGITS_RE.match(text[1:] if text[:1] in "+-" else text)
    if digits is not None and digits.group(0) and int(digits.group(0)) > _UINT64_MAX:
        raise GoError(f"strconv.Atoi: parsing {quote(text)}: value out of range")
    if not _ATOI_RE.fullmatch(text):
        raise GoError(f"strconv.Atoi: parsing {quote(text)}: invalid syntax")
    number = int(text)
    if not _INT64_MIN <= number <= _INT64_MAX:
        raise GoError(f"strconv.Atoi: parsing {quote(text)}: value out of range")
    return number


_INT_BODY = {16: "0123456789abcdefABCDEF", 8: "01234567", 2: "01", 10: "0123456789"}


def parse_int(text: str, base: int, *, signed: bool) -> int | None:
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


# --------------------------------------------------------------------------------------------------------------------
# float32 rounding and strconv.FormatFloat
# --------------------------------------------------------------------------------------------------------------------

_F32_MANTISSA_BITS = 23
_F32_MIN_EXP = -126
_F32_MAX_EXP = 127
_F32_MAX_DIGITS = 9  # every float32 has a round-tripping decimal of at most 9 significant digits


def nearest_float32(value: Fraction) -> float:
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
    return math.copysign(nearest_float32(Fraction(value)), value)


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
        valid = [c for c in candidates if _f32_bits_equal(nearest_float32(Fraction(c)), magnitude)]
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

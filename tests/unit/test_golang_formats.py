"""Go's text formats (raykube.golang: strconv, gojson, goyaml) against outputs of Go itself.

The expected values come from tests/vectors/*.json, written by Go 1.26 (tools/govectors, ``make vectors``) calling
``strconv.Quote``, ``strconv.IsPrint``, ``strconv.FormatFloat``, ``encoding/json`` and ``sigs.k8s.io/yaml.YAMLToJSON``
at the versions KubeRay v1.6.1 pins: curated edge cases (each also a test of its own here) plus random ones, 3,015
strings, every code point, 2,035 JSON numbers, 9,714 formatted floats and 3,040 YAML documents. Property tests check
what must hold for any input: quoting round-trips through a Go-compatible unquote, numbers read back as the same
float, the shortest float32 text is the shortest.
"""

from __future__ import annotations

import json
import math
import struct
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raykube.golang import gojson, strconv
from raykube.golang.errors import GoError
from tests.vectors import compare


def _curated(name: str) -> list[Any]:
    vectors = compare.load(name)
    cases = vectors.cases[: vectors.header["curated"]]
    return [pytest.param(case, id=str(case.get("label") or next(iter(case.values())))) for case in cases]


@pytest.mark.parametrize(
    "name",
    ["golang_quote", "golang_isprint", "golang_float32", "golang_float64", "golang_format_float", "yaml_to_json"],
)
def test_every_vector_agrees_with_go(name: str) -> None:
    compare.assert_agrees(name)


# --------------------------------------------------------------------------------------------------------------------
# strconv.Quote
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _curated("golang_quote"))
def test_quote_matches_go(case: dict[str, Any]) -> None:
    assert compare.compare("golang_quote", case) is None


def test_unicode_15_code_points_are_printable_for_go() -> None:
    """The code points :data:`strconv._UNICODE_15_PRINTABLE` adds to Python 3.11's ``str.isprintable``: Go prints them
    (and, by the every-code-point comparison above, nothing else is missing)."""
    printable = [(case["first"], case["last"]) for case in compare.load("golang_isprint").cases]
    for first, last in strconv._UNICODE_15_PRINTABLE:
        assert any(start <= first and last <= end for start, end in printable), hex(first)


_UNQUOTE_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"'}


def go_unquote(literal: str) -> str:
    """``strconv.Unquote`` of a double-quoted literal (the escapes Go allows there), for the round-trip property."""
    assert literal[0] == literal[-1] == '"'
    body, out, index = literal[1:-1], [], 0
    while index < len(body):
        char = body[index]
        assert char not in '"\n', f"unescaped {char!r} in a Go string literal"
        if char != "\\":
            out.append(char)
            index += 1
            continue
        kind = body[index + 1]
        if kind in _UNQUOTE_SIMPLE:
            out.append(_UNQUOTE_SIMPLE[kind])
            index += 2
        elif kind in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[kind]
            digits = body[index + 2 : index + 2 + width]
            assert len(digits) == width and all(d in "0123456789abcdef" for d in digits)
            out.append(chr(int(digits, 16)))
            index += 2 + width
        else:
            raise AssertionError(f"unknown escape \\{kind}")
    return "".join(out)


@given(st.text())
def test_quote_round_trips_through_go_unquote(text: str) -> None:
    expected = "".join("\ufffd" if 0xD800 <= ord(char) <= 0xDFFF else char for char in text)
    assert go_unquote(strconv.quote(text)) == expected


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_quote_escapes_every_ascii_control(text: str) -> None:
    quoted = strconv.quote(text)
    assert quoted.isascii()
    assert all(char.isprintable() for char in quoted)
    for char in text:
        code = ord(char)
        if code < 0x20 or code == 0x7F:
            short = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}
            assert short.get(char, f"\\x{code:02x}") in quoted


@given(st.text(alphabet=st.characters(min_codepoint=0x80, exclude_categories=("Cs",))))
def test_quote_keeps_printable_unicode_and_escapes_the_rest(text: str) -> None:
    quoted = strconv.quote(text)
    for char in text:
        if strconv.is_print(char):
            assert char in quoted
        else:
            code = ord(char)
            assert (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}") in quoted


# --------------------------------------------------------------------------------------------------------------------
# Floats
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _curated("golang_float32"))
def test_float32_matches_go(case: dict[str, Any]) -> None:
    """A JSON number read into a Go float32, then json.Marshal, fmt %f, strconv.FormatFloat 'g' -1 32 (or Go's
    error when it overflows float32)."""
    assert compare.compare("golang_float32", case) is None


@pytest.mark.parametrize("case", _curated("golang_float64"))
def test_float64_matches_go(case: dict[str, Any]) -> None:
    assert compare.compare("golang_float64", case) is None


@pytest.mark.parametrize("case", _curated("golang_format_float"))
def test_format_float_extremes_match_go(case: dict[str, Any]) -> None:
    assert compare.compare("golang_format_float", case) is None


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_json_refuses_what_go_refuses(value: float) -> None:
    with pytest.raises(GoError, match=r"^json: unsupported value: (NaN|\+Inf|-Inf)$"):
        gojson.json_marshal({"a": value})


_FINITE = st.floats(allow_nan=False, allow_infinity=False)
_FINITE_32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


@given(_FINITE)
def test_float64_json_reads_back(value: float) -> None:
    assert float(gojson.json_number(value)) == value


def _bits32(value: float) -> bytes:
    return struct.pack(">f", value)


def _float32_of(text: str) -> bytes | None:
    try:
        return _bits32(gojson.float32_from_json(text))
    except GoError:
        return None


@given(_FINITE_32)
def test_float32_shortest_reads_back_and_is_shortest(value: float) -> None:
    text = strconv.format_float(value, "e", -1, 32)
    assert _float32_of(text) == _bits32(value)
    mantissa, _, exponent = text.lstrip("-").partition("e")
    digits = mantissa.replace(".", "")
    if len(digits) > 1:
        # No decimal with one digit less reads back as the same float32: try the ones around the value.
        scale = Decimal(1).scaleb(int(exponent) - len(digits) + 2)
        base = int(Decimal(abs(value)) / scale)
        for candidate in (base - 1, base, base + 1, base + 2):
            assert _float32_of(str(candidate * scale)) != _bits32(abs(value))


@given(_FINITE)
def test_float32_from_json_is_the_nearest_float32(value: float) -> None:
    try:
        result = gojson.float32_from_json(value)
    except GoError:
        assert abs(value) > 3.4e38
        return
    assert strconv.round_float32(result) == result
    exact = abs(Fraction(repr(value)))
    bits = struct.unpack(">I", _bits32(abs(result)))[0]
    neighbours = [struct.unpack(">f", (bits + step).to_bytes(4, "big"))[0] for step in (-1, 1) if bits + step >= 0]
    error = abs(Fraction(abs(result)) - exact)
    assert all(error <= abs(Fraction(other) - exact) for other in neighbours if math.isfinite(other))


# --------------------------------------------------------------------------------------------------------------------
# encoding/json and sigs.k8s.io/yaml.YAMLToJSON
# --------------------------------------------------------------------------------------------------------------------


def test_json_marshal_escapes_like_go() -> None:
    """Go's bytes for this value: tests/vectors/serve_config.json, case "json escaping" (the same value read from
    YAML, then json.Marshal); the float32 1.1 writes as Go writes it (tests/vectors/golang_float32.json)."""
    value = {
        "b": ["<a&b>", "\u2028\u2029", "\x01\x7f", None, True, 1, 0.5],
        "a": gojson.Float32(strconv.round_float32(1.1)),
    }
    assert compare.load("golang_float32").find(text="1.1")["json"] == "1.1"  # float32 1.1 as Go writes it
    assert gojson.json_marshal(value) == compare.load("serve_config").find(label="json escaping")["body"]
    assert gojson.json_marshal({"z": 1, "a": 2}, sort_keys=False) == '{"z":1,"a":2}'


@pytest.mark.parametrize("case", _curated("yaml_to_json"))
def test_yaml_to_json_matches_go(case: dict[str, Any]) -> None:
    assert compare.compare("yaml_to_json", case) is None


_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _TEXT,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
        max_leaves=10,
    )
)
def test_json_marshal_reads_back(value: object) -> None:
    text = gojson.json_marshal(value)
    assert json.loads(text) == value
    assert not any(char in text for char in "<>&\u2028\u2029")

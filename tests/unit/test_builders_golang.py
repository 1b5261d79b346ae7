"""Go's text formats (raykube.builders.golang) against outputs of Go itself.

The expected strings were produced by a throw-away Go 1.26 program calling ``strconv.Quote``, ``encoding/json`` and
``sigs.k8s.io/yaml.YAMLToJSON`` at the versions KubeRay v1.6.1 pins (the program is not part of the repository; the
strings are data). Property tests check what must hold for any input: quoting round-trips through a Go-compatible
unquote, numbers read back as the same float, the shortest float32 text is the shortest.
"""

from __future__ import annotations

import json
import math
import re
import struct
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raykube.builders import golang

# --------------------------------------------------------------------------------------------------------------------
# strconv.Quote
# --------------------------------------------------------------------------------------------------------------------

QUOTE_VECTORS = [
    ("", '""'),
    ("plain", '"plain"'),
    ('say "hi" \\ bye', r'"say \"hi\" \\ bye"'),
    ("tab\tnew\nline\r", r'"tab\tnew\nline\r"'),
    ("\x00\x07\x08\x0b\x0c\x1b\x7f", r'"\x00\a\b\v\f\x1b\x7f"'),
    ("\u00a0\u00ad\u2028\u200b\ufeff", r'"\u00a0\u00ad\u2028\u200b\ufeff"'),
    ("\x85", r'"\u0085"'),
    ("é日本😀", '"é日本😀"'),
    ("\U000e0001", r'"\U000e0001"'),
    ("\U0010ffff\uffff", r'"\U0010ffff\uffff"'),
    # Unicode 15.0 (Go) but not 14.0 (Python 3.11): printable for Go.
    ("\u0cf3\U0001fa75", '"\u0cf3\U0001fa75"'),
    # A lone surrogate (from JSON "\ud800") is U+FFFD once Go has decoded it.
    ("a\ud800b", '"a\ufffdb"'),
    # KubeRay common/job_test.go: the runtime env, metadata and entrypoint resources of rayJobTemplate().
    ('{"test":"test"}', r'"{\"test\":\"test\"}"'),
    ('{"Custom_1": 1, "Custom_2": 5.5}', r'"{\"Custom_1\": 1, \"Custom_2\": 5.5}"'),
]


@pytest.mark.parametrize(("text", "quoted"), QUOTE_VECTORS)
def test_quote_matches_go(text: str, quoted: str) -> None:
    assert golang.quote(text) == quoted


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
    assert go_unquote(golang.quote(text)) == expected


@given(st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_quote_escapes_every_ascii_control(text: str) -> None:
    quoted = golang.quote(text)
    assert quoted.isascii()
    assert all(char.isprintable() for char in quoted)
    for char in text:
        code = ord(char)
        if code < 0x20 or code == 0x7F:
            short = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}
            assert short.get(char, f"\\x{code:02x}") in quoted


@given(st.text(alphabet=st.characters(min_codepoint=0x80, exclude_categories=("Cs",))))
def test_quote_keeps_printable_unicode_and_escapes_the_rest(text: str) -> None:
    quoted = golang.quote(text)
    for char in text:
        if golang.is_print(char):
            assert char in quoted
        else:
            code = ord(char)
            assert (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}") in quoted


# --------------------------------------------------------------------------------------------------------------------
# Floats
# --------------------------------------------------------------------------------------------------------------------

# (JSON number read into a Go float32, then: json.Marshal, fmt %f, strconv.FormatFloat 'g' -1 32)
FLOAT32_VECTORS = [
    ("0.1", "0.1", "0.100000", "0.1"),
    ("1.1", "1.1", "1.100000", "1.1"),
    ("2.2", "2.2", "2.200000", "2.2"),
    ("0.5", "0.5", "0.500000", "0.5"),
    ("1", "1", "1.000000", "1"),
    ("16777217", "16777216", "16777216.000000", "1.6777216e+07"),
    ("123456789", "123456790", "123456792.000000", "1.2345679e+08"),
    ("3.4028235e+38", "3.4028235e+38", "340282346638528859811704183484516925440.000000", "3.4028235e+38"),
    ("1e-45", "1e-45", "0.000000", "1e-45"),
    ("1.4e-45", "1e-45", "0.000000", "1e-45"),
    ("1e-46", "0", "0.000000", "0"),
    ("1e-06", "0.000001", "0.000001", "1e-06"),
    ("9e-07", "9e-7", "0.000001", "9e-07"),
    ("2.5e-07", "2.5e-7", "0.000000", "2.5e-07"),
    ("1e-05", "0.00001", "0.000010", "1e-05"),
    ("1e+21", "1e+21", "1000000020040877342720.000000", "1e+21"),
    ("-0.0", "-0", "-0.000000", "-0"),
]


@pytest.mark.parametrize(("text", "marshalled", "percent_f", "g32"), FLOAT32_VECTORS)
def test_float32_matches_go(text: str, marshalled: str, percent_f: str, g32: str) -> None:
    value = golang.float32_from_json(float(text))
    assert golang.json_number(value, 32) == marshalled
    assert golang.format_float(value, "f", 6, 32) == percent_f
    assert golang.format_float(value, "g", -1, 32) == g32


@pytest.mark.parametrize("text", ["3.4028236e+38", "1e+39"])
def test_float32_overflow_is_go_s_error(text: str) -> None:
    message = f"json: cannot unmarshal number {text} into Go value of type float32"
    with pytest.raises(golang.GoError, match=f"^{re.escape(message)}$"):
        golang.float32_from_json(float(text))


# (float64: json.Marshal, strconv.FormatFloat 'g' -1 32)
FLOAT64_VECTORS = [
    ("0.1", "0.1", "0.1"),
    ("1e+21", "1e+21", "1e+21"),
    ("1e+20", "100000000000000000000", "1e+20"),
    ("1e+16", "10000000000000000", "1e+16"),
    ("1e-07", "1e-7", "1e-07"),
    ("1.5e-07", "1.5e-7", "1.5e-07"),
    ("1e-06", "0.000001", "1e-06"),
    ("0.0001", "0.0001", "0.0001"),
    ("123456789012345678848", "123456789012345680000", "1.2345679e+20"),
    ("5e-324", "5e-324", "0"),
    ("1.7976931348623157e+308", "1.7976931348623157e+308", "+Inf"),
    ("-0.0", "-0", "-0"),
]


@pytest.mark.parametrize(("text", "marshalled", "g32"), FLOAT64_VECTORS)
def test_float64_matches_go(text: str, marshalled: str, g32: str) -> None:
    assert golang.json_number(float(text)) == marshalled
    assert golang.format_float(float(text), "g", -1, 32) == g32


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_json_refuses_what_go_refuses(value: float) -> None:
    with pytest.raises(golang.GoError, match=r"^json: unsupported value: (NaN|\+Inf|-Inf)$"):
        golang.json_marshal({"a": value})


_FINITE = st.floats(allow_nan=False, allow_infinity=False)
_FINITE_32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


@given(_FINITE)
def test_float64_json_reads_back(value: float) -> None:
    assert float(golang.json_number(value)) == value


def _bits32(value: float) -> bytes:
    return struct.pack(">f", value)


def _float32_of(text: str) -> bytes | None:
    try:
        return _bits32(golang.float32_from_json(text))
    except golang.GoError:
        return None


@given(_FINITE_32)
def test_float32_shortest_reads_back_and_is_shortest(value: float) -> None:
    text = golang.format_float(value, "e", -1, 32)
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
        result = golang.float32_from_json(value)
    except golang.GoError:
        assert abs(value) > 3.4e38
        return
    assert golang.round_float32(result) == result
    exact = abs(Fraction(repr(value)))
    bits = struct.unpack(">I", _bits32(abs(result)))[0]
    neighbours = [struct.unpack(">f", (bits + step).to_bytes(4, "big"))[0] for step in (-1, 1) if bits + step >= 0]
    error = abs(Fraction(abs(result)) - exact)
    assert all(error <= abs(Fraction(other) - exact) for other in neighbours if math.isfinite(other))


# --------------------------------------------------------------------------------------------------------------------
# encoding/json and sigs.k8s.io/yaml.YAMLToJSON
# --------------------------------------------------------------------------------------------------------------------


def test_json_marshal_escapes_like_go() -> None:
    value = {
        "b": ["<a&b>", "\u2028\u2029", "\x01\x7f", None, True, 1, 0.5],
        "a": golang.Float32(golang.round_float32(1.1)),
    }
    assert golang.json_marshal(value) == (
        '{"a":1.1,"b":["\\u003ca\\u0026b\\u003e","\\u2028\\u2029","\\u0001\x7f",null,true,1,0.5]}'
    )
    assert golang.json_marshal({"z": 1, "a": 2}, sort_keys=False) == '{"z":1,"a":2}'


# (YAML, what YAMLToJSON returns; "!" marks an error message)
YAML_VECTORS = [
    ("test: test", '{"test":"test"}'),
    (
        'working_dir: "https://github.com/ray-project/serve_config_examples/archive/'
        'b393e77bbd6aba0881e3d94c05f968f05a387b96.zip"\npip: ["python-multipart==0.0.6"]\n',
        '{"pip":["python-multipart==0.0.6"],"working_dir":"https://github.com/ray-project/serve_config_examples/'
        'archive/b393e77bbd6aba0881e3d94c05f968f05a387b96.zip"}',
    ),
    ("a: 08", '{"a":8}'),
    ("a: 0o17", '{"a":15}'),
    ("a: 0x1F", '{"a":31}'),
    ("a: -0x1F", '{"a":-31}'),
    ("a: 0b101", '{"a":5}'),
    ("a: 0b-101", '{"a":-5}'),
    ("a: 1_000", '{"a":1000}'),
    ("a: 1e3", '{"a":1000}'),
    ("a: 1E400", '{"a":"1E400"}'),
    ("a: .5e3", '{"a":500}'),
    ("a: 3.10", '{"a":3.1}'),
    ("a: y", '{"a":true}'),
    ("a: Off", '{"a":false}'),
    ("a:", '{"a":null}'),
    ("a: 2001-12-14", '{"a":"2001-12-14"}'),
    ("a: 1:30", '{"a":"1:30"}'),
    ("a: 9223372036854775808", '{"a":9223372036854775808}'),
    ("a: 18446744073709551616", '{"a":18446744073709552000}'),
    ("a: 1e20", '{"a":100000000000000000000}'),
    ("a: [1, 2.0, 3.5, 1e21, 1e-7, 0.0001]", '{"a":[1,2,3.5,1e+21,1e-7,0.0001]}'),
    ("a: <&>\u2028", '{"a":"\\u003c\\u0026\\u003e"}'),  # U+2028 ends a plain scalar (a YAML 1.1 line break)
    ("a: !!float 1", '{"a":1}'),
    ("a: !!str 1", '{"a":"1"}'),
    ("a: !foo bar", '{"a":"bar"}'),
    ("a: !!binary aGVsbG8=", '{"a":"hello"}'),
    ("1: a", '{"1":"a"}'),
    ("1.5: a", '{"1.5":"a"}'),
    ("0.1: a", '{"0.1":"a"}'),
    ("1e6: x", '{"1e+06":"x"}'),
    ("yes: 1", '{"true":1}'),
    ("b: &x {c: 1}\na:\n  <<: *x\n  d: 2", '{"a":{"c":1,"d":2},"b":{"c":1}}'),
    ("a: 1\n---\nb: 2", '{"a":1}'),
    ("", "null"),
    ("# only a comment", "null"),
    ("- a\n- b", '["a","b"]'),
    ("a: .inf", "!json: unsupported value: +Inf"),
    ("~: 1", "!unsupported map key of type: %!s(<nil>), key: <nil>, value: 1"),
]


@pytest.mark.parametrize(("text", "expected"), YAML_VECTORS)
def test_yaml_to_json_matches_go(text: str, expected: str) -> None:
    if expected.startswith("!"):
        with pytest.raises(golang.GoError) as caught:
            golang.yaml_to_json(text)
        assert str(caught.value) == expected[1:]
    else:
        assert golang.yaml_to_json(text) == expected


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(golang.GoError, match=r"^yaml: line 2: "):
        golang.yaml_to_json("a: 1\n b: [\n")


_TEXT = st.text(alphabet=st.characters(exclude_categories=("Cs",)))


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _TEXT,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
        max_leaves=10,
    )
)
def test_json_marshal_reads_back(value: object) -> None:
    text = golang.json_marshal(value)
    assert json.loads(text) == value
    assert not any(char in text for char in "<>&\u2028\u2029")

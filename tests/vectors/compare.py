"""raykube's re-implementations of Go's libraries (and the RayService serve-config body built on them) against the
answers Go wrote into ``tests/vectors/*.json``.

Each JSON file is written by ``tools/govectors`` (``make vectors``): a header (the generator, the Go calls, the module
versions, notes) and its cases, one per line, each a list of the columns named in ``fields``. :func:`compare` checks
one case and returns what differs (None when raykube agrees); :func:`run` checks every case of a family. The unit tests
(tests/unit/test_api_cron.py, test_golang_formats.py, ...) and ``tools/govectors/report.py`` both use them.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
import zoneinfo
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from raykube.api import cron
from raykube.builders.rayservice import RayServiceBuildError, serve_config_body
from raykube.golang import gojson, goyaml, strconv
from raykube.golang.duration import duration_string, parse_duration
from raykube.golang.errors import GoError
from raykube.golang.quantity import QuantityError, format_quantity, marshaled, parse_quantity, sum_quantities

DIR = Path(__file__).parent
REGENERATE = "regenerate with `make vectors` (tools/govectors); never edit a vector file by hand"


@dataclass(frozen=True)
class Vectors:
    name: str
    header: dict[str, Any]
    cases: list[dict[str, Any]]

    def labelled(self) -> list[dict[str, Any]]:
        """The curated cases (those with a label), for tests that name them."""
        return [case for case in self.cases if case.get("label")]

    def find(self, **columns: Any) -> dict[str, Any]:
        """The case with these column values (a random case may repeat a curated one, with the same answer)."""
        found = [case for case in self.cases if all(case[key] == value for key, value in columns.items())]
        assert found, f"{self.name}: no case with {columns}; {REGENERATE}"
        assert all(case == found[0] for case in found[1:]), f"{self.name}: different answers for {columns}"
        return found[0]


@cache
def load(name: str) -> Vectors:
    data = json.loads((DIR / f"{name}.json").read_text(encoding="utf-8"))
    fields, rows = data["fields"], data["cases"]
    assert data["count"] == len(rows), f"{name}.json: count {data['count']} but {len(rows)} cases; {REGENERATE}"
    assert rows, f"{name}.json has no cases"
    header = {key: value for key, value in data.items() if key != "cases"}
    return Vectors(name, header, [dict(zip(fields, row, strict=True)) for row in rows])


def _raised(call: Callable[[], Any], *errors: type[Exception]) -> tuple[Any, str | None]:
    try:
        return call(), None
    except errors as error:
        return None, str(error)


# -------------------------------------------------------------------------------------------------------- families
def _moment(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _cron(case: dict[str, Any]) -> str | None:
    schedule, error = _raised(lambda: cron.parse(case["spec"]), cron.CronError)
    if case["error"] is not None or error is not None:
        return None if error == case["error"] else f"error {error!r}, Go {case['error']!r}"
    found = schedule.next(_moment(case["after"]), zoneinfo.ZoneInfo(case["zone"]))
    expected = _moment(case["next"]) if case["next"] else None
    return None if found == expected else f"next {found}, Go {expected}"


def _quote(case: dict[str, Any]) -> str | None:
    text = "".join(map(chr, case["code_points"]))
    got = (strconv.quote(text), gojson.json_string(text))
    expected = (case["quote"], case["json"])
    return None if got == expected else f"quote, json_string {got!r}, Go {expected!r}"


def _float32(case: dict[str, Any]) -> str | None:
    value, error = _raised(lambda: gojson.float32_from_json(case["text"]), GoError)
    if case["error"] is not None or error is not None:
        return None if error == case["error"] else f"error {error!r}, Go {case['error']!r}"
    got = (
        gojson.json_number(value, 32),
        strconv.format_float(value, "f", 6, 32),
        strconv.format_float(value, "g", -1, 32),
    )
    expected = (case["json"], case["percent_f"], case["g32"])
    return None if got == expected else f"json, %f, g32 {got}, Go {expected}"


def _float64(case: dict[str, Any]) -> str | None:
    value = float(case["text"])
    got = (gojson.json_number(value), strconv.format_float(value, "g", -1, 32))
    expected = (case["json"], case["g32"])
    return None if got == expected else f"json, g32 {got}, Go {expected}"


def float_of(bits: int, hex_bits: str) -> float:
    """The IEEE 754 value with these bits (a float32's is exact as a Python float)."""
    return float(struct.unpack(">f" if bits == 32 else ">d", bytes.fromhex(hex_bits))[0])


def _format_float(case: dict[str, Any]) -> str | None:
    value, bits = float_of(case["bits"], case["hex"]), case["bits"]
    if case["fmt"] == "json":
        got = gojson.json_number(value, bits)
    else:
        got = strconv.format_float(value, case["fmt"], case["prec"], bits)
    return None if got == case["out"] else f"{got!r}, Go {case['out']!r}"


_YAML_LINE = re.compile(r"yaml: line [0-9]+:")


def _yaml(case: dict[str, Any]) -> str | None:
    got, error = _raised(lambda: goyaml.yaml_to_json(case["yaml"]), GoError)
    expected_error = case["error"]
    if expected_error is not None and error is not None and expected_error.startswith("yaml: "):
        # A go-yaml syntax error: the grammar is PyYAML's, so only the "yaml: line N:" prefix is Go's.
        line = _YAML_LINE.match(expected_error)
        prefix = line.group(0) if line else "yaml: "
        return None if error.startswith(prefix) else f"error {error!r}, Go {expected_error!r}"
    if expected_error is not None or error is not None:
        return None if error == expected_error else f"error {error!r}, Go {expected_error!r}"
    return None if got == case["json"] else f"{got!r}, Go {case['json']!r}"


_CONVERTING = "error converting YAML to JSON: "


def _serve_config(case: dict[str, Any]) -> str | None:
    target = case["target_capacity"]
    got, error = _raised(lambda: serve_config_body(case["yaml"], target_capacity=target).decode(), RayServiceBuildError)
    expected_error = case["error"]
    if expected_error is not None and error is not None and expected_error.startswith(_CONVERTING + "yaml: line "):
        # A go-yaml syntax error: the grammar is PyYAML's, so only the "yaml: line N:" prefix is Go's.
        line = _YAML_LINE.match(expected_error, len(_CONVERTING))
        prefix = expected_error[: line.end()] if line else _CONVERTING
        return None if error.startswith(prefix) else f"error {error!r}, Go {expected_error!r}"
    if expected_error is not None or error is not None:
        return None if error == expected_error else f"error {error!r}, Go {expected_error!r}"
    return None if got == case["body"] else f"{got!r}, Go {case['body']!r}"


def _refused_unhashable(case: dict[str, Any]) -> bool:
    _, error = _raised(lambda: serve_config_body(case["yaml"]), RayServiceBuildError)
    return (
        error is not None and error.startswith(_CONVERTING + "yaml: line ") and error.endswith("found unhashable key")
    )


def _duration(case: dict[str, Any]) -> str | None:
    func, given = case["func"], case["input"]
    if func == "String":
        got, error = duration_string(given), None
    elif func == "ParseDuration":
        got, error = _raised(lambda: parse_duration(given), GoError)
    else:
        got, error = _raised(lambda: strconv.atoi(given), GoError)
    if (got, error) == (case["output"], case["error"]):
        return None
    return f"{func}: {got!r} / error {error!r}, Go {case['output']!r} / error {case['error']!r}"


def _quantity(case: dict[str, Any]) -> str | None:
    text = case["text"].strip()  # Go's UnmarshalJSON trims the space; raykube's gojson trims before marshaled()
    got_marshaled, error = _raised(lambda: marshaled(text), QuantityError)
    got_canonical, error2 = _raised(lambda: format_quantity(parse_quantity(text.strip()), exact=True), QuantityError)
    if case["error"] is not None:
        refused = error is not None and error2 is not None
        return None if refused else f"accepted ({got_marshaled!r}, {got_canonical!r}), Go: {case['error']}"
    got = (got_marshaled, got_canonical, error, error2)
    expected = (case["marshaled"], case["canonical"], None, None)
    return None if got == expected else f"marshaled, canonical, errors {got}, Go {expected[:2]}"


def _quantity_add(case: dict[str, Any]) -> str | None:
    got, error = _raised(
        lambda: format_quantity(sum_quantities([parse_quantity(case["a"]), parse_quantity(case["b"])]), exact=True),
        QuantityError,
    )
    if error is not None:
        return f"refused: {error}; Go {case['sum']!r}"
    return None if got == case["sum"] else f"{got!r}, Go {case['sum']!r}"


COMPARE: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "cron": _cron,
    "golang_quote": _quote,
    "golang_float32": _float32,
    "golang_float64": _float64,
    "golang_format_float": _format_float,
    "yaml_to_json": _yaml,
    "serve_config": _serve_config,
    "duration": _duration,
    "quantity": _quantity,
    "quantity_add": _quantity_add,
}


def compare(name: str, case: dict[str, Any]) -> str | None:
    """What raykube answers differently from Go for this case of family ``name``; None when they agree."""
    return COMPARE[name](case)


def _isprint_mismatches(vectors: Vectors) -> Iterator[str]:
    """strconv.IsPrint over every code point: the file lists the printable ranges."""
    printable = bytearray(0x110000)
    for case in vectors.cases:
        printable[case["first"] : case["last"] + 1] = b"\x01" * (case["last"] - case["first"] + 1)
    for code in range(0x110000):
        if strconv.is_print(chr(code)) != bool(printable[code]):
            yield f"U+{code:04X}: is_print {not printable[code]}, Go {bool(printable[code])}"


FAMILIES = (*COMPARE, "golang_isprint")

_NO_DIGITS = re.compile(r"[+-]?\.?([eE][+-]?[0-9]+|[a-zA-Z]*)")


@dataclass(frozen=True)
class Divergence:
    """Cases where raykube knowingly answers differently from Go: which ones, and why."""

    family: str
    reason: str
    applies: Callable[[dict[str, Any]], bool]


# Every known disagreement, with its reason. A case they cover is counted apart, never as agreeing; a divergence that
# no longer shows (raykube was changed to agree) fails the tests until it is removed from here.
DIVERGENCES = (
    Divergence(
        "quantity",
        "Go's ParseQuantity reads a number with no digits at all ('.', 'e3', '+.Mi') as zero; raykube refuses it. "
        "The Quantity pattern of every CRD refuses such a text, so the API server never serves one.",
        lambda case: _NO_DIGITS.fullmatch(case["text"].strip()) is not None,
    ),
    Divergence(
        "serve_config",
        "a list or a mapping as a mapping key: both refuse the config (no PUT), but go-yaml's error names the key in "
        "Go syntax ('yaml: invalid map key: []interface {}{1, 2}'), raykube's is PyYAML's ('yaml: line N: found "
        "unhashable key')",
        lambda case: "yaml: invalid map key: " in (case["error"] or "") and _refused_unhashable(case),
    ),
    Divergence(
        "quantity_add",
        "as for quantity: an operand with no digits ('.k', '+.M') is zero for Go and refused by raykube",
        lambda case: any(_NO_DIGITS.fullmatch(case[key]) is not None for key in ("a", "b")),
    ),
)


@dataclass(frozen=True)
class Result:
    total: int
    mismatches: list[str]  # disagreements no divergence explains
    diverged: dict[str, int]  # reason -> cases it explains where raykube indeed differs

    @property
    def agreed(self) -> int:
        return self.total - len(self.mismatches) - sum(self.diverged.values())


def run(name: str) -> Result:
    """Every case of family ``name``: how many were compared, the disagreements, and the known divergences seen."""
    vectors = load(name)
    if name == "golang_isprint":
        return Result(0x110000, list(_isprint_mismatches(vectors)), {})
    known = [divergence for divergence in DIVERGENCES if divergence.family == name]
    mismatches: list[str] = []
    diverged = dict.fromkeys((divergence.reason for divergence in known), 0)
    for index, case in enumerate(vectors.cases):
        problem = compare(name, case)
        if problem is None:
            continue
        reason = next((divergence.reason for divergence in known if divergence.applies(case)), None)
        if reason is not None:
            diverged[reason] += 1
            continue
        inputs = {key: value for key, value in case.items() if key in vectors.header["fields"][:4]}
        mismatches.append(f"case {index} {json.dumps(inputs, ensure_ascii=False)}: {problem}")
    return Result(len(vectors.cases), mismatches, diverged)


def assert_agrees(name: str) -> Result:
    """Fail, listing up to 30 disagreements, unless raykube agrees with Go on every case but the known divergences
    (each of which must still show at least once)."""
    result = run(name)
    shown = "\n".join(result.mismatches[:30])
    assert not result.mismatches, f"{name}: {len(result.mismatches)} of {result.total} cases disagree with Go:\n{shown}"
    stale = [reason for reason, count in result.diverged.items() if count == 0]
    assert not stale, f"{name}: these known divergences no longer show; remove them from DIVERGENCES: {stale}"
    return result

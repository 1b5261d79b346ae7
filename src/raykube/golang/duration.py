"""Go's ``time.Duration`` as KubeRay reads and prints it: :func:`parse_duration` (``time.ParseDuration``, with its
error texts) for the RayService initializing-timeout annotation and RayCronJob ``@every`` schedules, and
:func:`duration_string` (``time.Duration.String``: ``1h2m3.5s``, ``1.5ms``, ``0s``) for the messages KubeRay prints
(the RayService initializing timeout).

Compared with Go's own answers for 4,563 cases (with ``strconv.Atoi``, :func:`raykube.golang.strconv.atoi`) in
tests/vectors/duration.json (tools/govectors, ``make vectors``).
"""

from __future__ import annotations

import re
from typing import Final

from raykube.golang.errors import GoError

__all__ = ["duration_string", "parse_duration"]


# --------------------------------------------------------------------------------------------------------------------
# time.ParseDuration
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
_DURATION_PART_RE: Final = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def _quote(text: str) -> str:
    """The ``time`` package's own quoting in its errors: ``"`` and ``\\`` escaped, each byte of a non-ASCII or control
    character written as ``\\xNN`` (not ``strconv.Quote``'s ``%q``)."""
    out = ['"']
    for char in text:
        if char < " " or char >= "\x80":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "replace"))
        else:
            out.append("\\" + char if char in '"\\' else char)
    out.append('"')
    return "".join(out)


def parse_duration(text: str) -> int:
    """Nanoseconds of a Go duration string, as ``time.ParseDuration`` reads it; raises
    :class:`~raykube.golang.errors.GoError` with Go's text."""
    invalid = f"time: invalid duration {_quote(text)}"
    rest = text[1:] if text[:1] in ("-", "+") else text
    sign = -1 if text[:1] == "-" else 1
    if rest == "0":
        return 0
    if not rest:
        raise GoError(invalid)
    total = 0
    while rest:
        part = _DURATION_PART_RE.match(rest)
        if part is None or not (part.group(1) or part.group(2)):
            raise GoError(invalid)
        whole, fraction, unit = part.group(1), part.group(2) or "", part.group(3)
        if int(whole or "0") > _INT64_MAX + 1:  # Go's leadingInt overflows before the unit is looked at
            raise GoError(invalid)
        if not unit:
            raise GoError(f"time: missing unit in duration {_quote(text)}")
        scale = _DURATION_UNITS.get(unit)
        if scale is None:
            raise GoError(f"time: unknown unit {_quote(unit)} in duration {_quote(text)}")
        total += int(whole or "0") * scale + (int(fraction) * scale // 10 ** len(fraction) if fraction else 0)
        if total > _INT64_MAX + 1:  # -2^63 is a duration, +2^63 is not (checked below)
            raise GoError(invalid)
        rest = rest[part.end() :]
    if sign > 0 and total > _INT64_MAX:
        raise GoError(invalid)
    return sign * total


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

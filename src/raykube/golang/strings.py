"""Go's ``strings`` as KubeRay uses it: :func:`trim_space` (``strings.TrimSpace``)."""

from __future__ import annotations

__all__ = ["trim_space"]


# unicode.IsSpace (Go's White_Space set): what strings.TrimSpace removes. Python's str.strip() also removes
# U+001C to U+001F, which Go keeps.
_GO_SPACE = "".join(chr(code) for code in (*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B)))
_GO_SPACE += "\u2028\u2029\u202f\u205f\u3000"


def trim_space(text: str) -> str:
    """``strings.TrimSpace``: leading and trailing Unicode white space removed."""
    return text.strip(_GO_SPACE)

"""Go's ``fmt`` verbs that KubeRay's and apimachinery's messages print with, beyond ``%q`` (which is
:func:`raykube.golang.strconv.quote`): :func:`sprint_strings`."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["sprint_strings"]


def sprint_strings(items: Sequence[str]) -> str:
    """Go's ``%v`` of a ``[]string``: ``[a b c]``."""
    return "[" + " ".join(items) + "]"

"""What a container's image and environment say: the Ray version in a ``rayproject/ray``-style tag, and the
environment variable names whose values are secrets (shown as ``<redacted>`` in evidence; docs/doctor.md, "Reading
the text output")."""

from __future__ import annotations

import re
from typing import Final

_RAY_TAG = re.compile(r"(?:^|[^\d])(\d+\.\d+\.\d+)")


def image_ray_version(image: str) -> str | None:
    """The Ray version in a ``rayproject/ray``-style tag (``2.52.0``, ``2.52.0-py311-gpu``); None if the image has
    no tag or a digest only."""
    tail = image.rsplit("/", 1)[-1]
    if "@" in tail:
        tail = tail.split("@", 1)[0]
    if ":" not in tail:
        return None
    tag = tail.split(":", 1)[1]
    match = _RAY_TAG.search(tag)
    return match.group(1) if match else None


SENSITIVE_ENV: Final = re.compile(
    r"(?i)password|passwd|token|secret|bearer|credential|private_key|AWS_SECRET_ACCESS_KEY|GOOGLE_APPLICATION_CREDENTIALS"
    r"|AZURE_.+KEY|OCI_CLI_KEY_CONTENT"
)
REDACTED: Final = "<redacted>"

"""The doctor's output formats beyond text: each is one function from the ``doctor.raykube.io/v1`` JSON document
(:func:`raykube.doctor.render.to_json`, the contract) to a string, so none can say what the JSON does not.

=============  ========================================================================================
format         for
=============  ========================================================================================
``sarif``      SARIF 2.1.0: code-scanning dashboards and SARIF viewers (:mod:`.sarif`)
``junit``      JUnit XML: CI test reports, one testcase per subject and rule checked (:mod:`.junit`)
``html``       one self-contained page to attach to a ticket (:mod:`.html`)
``prometheus`` node_exporter's textfile collector (``--prometheus-textfile``: :mod:`.prometheus`)
=============  ========================================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from raykube.doctor.formats.common import Document
from raykube.doctor.formats.html import to_html
from raykube.doctor.formats.junit import to_junit
from raykube.doctor.formats.prometheus import to_prometheus, write_textfile
from raykube.doctor.formats.sarif import render_sarif, to_sarif

# ``-o NAME`` of the formats derived from the JSON document (text and json are rendered from the report itself).
DERIVED: Final[Mapping[str, Callable[[Document], str]]] = {"sarif": render_sarif, "junit": to_junit, "html": to_html}
OUTPUTS: Final = ("text", "json", *DERIVED)

__all__ = [
    "DERIVED",
    "OUTPUTS",
    "Document",
    "render",
    "render_sarif",
    "to_html",
    "to_junit",
    "to_prometheus",
    "to_sarif",
    "write_textfile",
]


def render(output: str, document: Document) -> str:
    """``document`` in the format ``output`` (one of :data:`DERIVED`)."""
    return DERIVED[output](document)

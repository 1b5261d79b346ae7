"""The KubeRay a benchmark runs beside raykube: one release's operator binary and CRDs, and where they came from.

``--kuberay 1.7.0`` (the default: ``versions.KUBERAY_CONFORMANCE_VERSION``, the release teams install) builds the
operator from a checkout of the tag: ``$KUBERAY_SRC``, or a clone from GitHub made once into the cache, as
``make conformance`` does (the Go module proxy refuses ray-operator v1.7.x). ``--kuberay 1.6.1`` takes it from the
module proxy. Either is built once (about two minutes) and kept in ``~/.cache/raykube/bin``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from raykube.sandbox import versions
from raykube.sandbox.conformance import Release, build_optional, release


@dataclass(frozen=True)
class KubeRay:
    version: str  # "1.7.0"
    binary: Path  # its ray-operator
    crd_dir: Path  # its config/crd/bases
    origin: str  # "v1.7.0 (built from a checkout at commit 59d663aeec13)"

    def crds(self) -> dict[str, Any]:
        """Its CRDs by name, to install on a benchmark's sandbox."""
        return {
            str(doc["metadata"]["name"]): doc
            for path in sorted(self.crd_dir.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text())
            if doc
        }

    def record(self) -> dict[str, str]:
        """What a result line says of it."""
        return {"kuberay": self.version, "kuberay_origin": self.origin}


def kuberay(version: str = versions.KUBERAY_CONFORMANCE_VERSION) -> KubeRay:
    """KubeRay ``version``'s operator (built if missing) and CRDs."""
    from raykube.cli.output import progress  # noqa: PLC0415 - the cli's progress lines, only when building

    rel: Release = release(version, report=progress)
    build_optional(progress, (rel.operator,), rel=rel)
    return KubeRay(rel.version, versions.binary(rel.operator), rel.crd_dir(), rel.origin())


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--kuberay VERSION``, the release a benchmark compares with (default: the one teams install)."""
    parser.add_argument("--kuberay", default=versions.KUBERAY_CONFORMANCE_VERSION, metavar="VERSION",
                        help="the KubeRay release to compare with (benchmarks/kuberay.py)")  # fmt: skip

"""The pinned Kubernetes OpenAPI v3 definitions that the CRDs' embedded types (Pod templates, Services, ...) use.

They come from the ``api/openapi-spec/v3`` directory of the ``k8s.io/kubernetes`` module at
:data:`KUBERNETES_VERSION`, read from the Go module cache (``go mod download`` fetches it if it is missing; the
module proxy checks it against the Go checksum database). Nothing is copied into this repository; the generated
CRDs under ``config/crd/`` are what is checked in.

This is a development-time input: only ``raykube crd generate`` and the test that checks the generated CRDs are up
to date read it. The operator itself never does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

KUBERNETES_VERSION = "1.36.3"  # the same Kubernetes the sandbox builds (raykube.sandbox.versions)
MODULE = "k8s.io/kubernetes"

# The OpenAPI documents holding every definition the Ray CRDs embed.
DOCUMENTS = (
    "api__v1_openapi.json",  # core/v1: PodTemplateSpec, Service, EnvVar, ResourceRequirements, ...
    "apis__networking.k8s.io__v1_openapi.json",  # IngressTLS, and meta/v1 Condition
)


class OpenAPIUnavailable(RuntimeError):
    """The pinned definitions are not in the Go module cache and could not be downloaded."""


def _module_dir() -> Path:
    go = shutil.which("go")
    if go is None:
        raise OpenAPIUnavailable(
            "generating CRDs needs the Kubernetes OpenAPI definitions from the Go module cache, and `go` is not on "
            "PATH; install Go 1.26 or newer"
        )
    try:
        out = subprocess.run(
            [go, "mod", "download", "-json", f"{MODULE}@v{KUBERNETES_VERSION}"],
            capture_output=True,
            text=True,
            check=True,
            timeout=1800,
            cwd=Path.home(),  # outside any module, so no go.mod around us is consulted
        ).stdout
    except subprocess.CalledProcessError as exc:
        raise OpenAPIUnavailable(f"`go mod download {MODULE}@v{KUBERNETES_VERSION}` failed: {exc.stderr}") from exc
    return Path(json.loads(out)["Dir"])


@cache
def definitions() -> dict[str, Any]:
    """Every schema of :data:`DOCUMENTS`, by definition name (``io.k8s.api.core.v1.PodSpec``)."""
    directory = _module_dir() / "api" / "openapi-spec" / "v3"
    merged: dict[str, Any] = {}
    for name in DOCUMENTS:
        document = json.loads((directory / name).read_text())
        merged.update(document["components"]["schemas"])
    return merged

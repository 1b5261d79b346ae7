"""The committed Go test vectors (tests/vectors/*.json) are exactly what their generator, tools/govectors, writes.

The unit tests compare raykube with Go's answers read from those files; this makes sure the files are Go's: it runs
the generator (a cached ``go build``; a few seconds warm) into a temporary directory and compares byte for byte. Go is
required wherever ``make test`` runs (the sandbox is built with it), so a missing Go fails here, it does not skip.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from raykube.sandbox.build import ToolchainError, find_go

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "govectors"
VECTORS = ROOT / "tests" / "vectors"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        go = find_go(purpose="the test vectors are written by tools/govectors, a Go program")
    except ToolchainError as error:
        pytest.fail(f"Go is required to check tests/vectors/ against its generator: {error.message} ({error.hint})")
    out = tmp_path_factory.mktemp("govectors")
    run = subprocess.run(
        [go.path, "run", "-buildvcs=false", ".", "-out", str(out)],
        cwd=TOOL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, f"tools/govectors failed:\n{run.stdout}\n{run.stderr}"
    return out


# Vectors other generators write from a KubeRay v1.7.0 checkout, which `make test` cannot fetch (checked by their own
# tests: test_api_crd_v170.py, test_kuberay_hash_v170.py, test_kuberay_roundtrip_v170.py; regenerated with
# tools/kuberay_crds.py and tools/kuberay/generate.py).
FROM_KUBERAY_SOURCE = {"kuberay_crds.json", "kuberay_hash_v170.json", "kuberay_roundtrip_v170.json"}


def test_committed_vectors_are_what_go_writes(generated: Path) -> None:
    written = sorted(path.name for path in generated.glob("*.json"))
    committed = sorted(path.name for path in VECTORS.glob("*.json") if path.name not in FROM_KUBERAY_SOURCE)
    assert written == committed, "tests/vectors/ has other files than tools/govectors writes: run `make vectors`"
    stale = [name for name in written if (generated / name).read_bytes() != (VECTORS / name).read_bytes()]
    assert stale == [], f"{stale} differ from what tools/govectors writes: run `make vectors` and commit tests/vectors/"


def test_the_header_counts_its_cases(generated: Path) -> None:
    for path in sorted(generated.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["count"] == len(data["cases"]) > 0, path.name
        assert 0 <= data["curated"] <= data["count"], path.name
        assert data["generator"].startswith("tools/govectors"), path.name

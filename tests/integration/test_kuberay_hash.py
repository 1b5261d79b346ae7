"""raykube's cluster_spec_hash against KubeRay v1.6.1's GenerateHashWithoutReplicasAndWorkersToDelete, live.

raykube follows KubeRay v1.7.0, whose hash function the module proxy cannot give ``make test`` (it refuses
ray-operator v1.7.0): tests/unit/test_kuberay_hash_v170.py compares raykube with v1.7.0's answers that
tools/kuberay/generate.py wrote from a checkout. What this test runs is KubeRay v1.6.1's function (``tools/kuberay/
hash``, built once into the cache, see tests/kuberay_hash.py): it decodes each spec with KubeRay's Go types and hashes
it with KubeRay's function, both as read (the RayService controller's value) and after the RayCluster controller's
``setDefaults`` (the ``ray.io/upgrade-strategy-recreate-hash`` annotation). raykube reads the same JSON into its
RayClusterSpec model and computes both with :func:`raykube.builders.spechash.cluster_spec_hash`.

On a spec a v1.6.1 operator could have made, v1.7.0 answers as v1.6.1 does (so raykube, which is v1.7.0's, must
answer as v1.6.1 live): every cluster spec in v1.6.1's samples (RayClusters, and the cluster specs of RayJob,
RayCronJob and RayService samples) and specs drawn from tests/hash_specs.py's SPEC_V161 (quantities in odd forms,
empty versus absent versus null lists and maps, HTML characters and unicode, int-or-string ports, unknown fields,
suspend, autoscalerOptions, gcsFaultToleranceOptions, headService). The two releases differ only where the vectors
file lists it (each case with v1.6.1's answer and why: the CRD default priority: 0, an empty redisAddress, PodSpec's
workloadRef/schedulingGroup, ingressOptions); v1.6.1 gives those answers here, live, and the v1.6-made specs of the
vectors file (SPEC_V161 and v1.6.1's samples) get v1.6.1's live hash equal to the v1.7.0 hash recorded for them.

Also checks that the committed Go struct table (src/raykube/golang/gostructs.py) is KubeRay v1.7.0's at the commit
the vectors file names (tools/kuberay/generate.py writes both, and with --check fails when either is stale).

Needs Go (skipped with the reason when it is missing). About ten seconds once the helper is built (the first build
takes about a minute with a cold Go build cache). RAYKUBE_HASH_EXAMPLES sets the number of generated specs (500).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from raykube.golang import gostructs
from raykube.sandbox.errors import ToolchainError
from tests import hash_specs, kuberay_hash
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"
VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "kuberay_hash_v170.json"
KUBERAY_RELEASE = "v1.7.0"
KUBERAY_COMMIT = "59d663aeec13760646da3db9c1cf8cfe883e30b7"  # the v1.7.0 tag of github.com/ray-project/kuberay


def _stderr(message: str) -> None:
    sys.stderr.write(f"• {message}\n")


@pytest.fixture(scope="module")
def kuberay() -> Iterator[kuberay_hash.KubeRayHash]:
    try:
        binary = kuberay_hash.build(_stderr)
    except ToolchainError as error:
        pytest.skip(f"KubeRay's hash function is built from Go sources and Go is unavailable: {error.message}")
    helper = kuberay_hash.KubeRayHash(binary)
    yield helper
    helper.close()


def _compare(kuberay: kuberay_hash.KubeRayHash, spec: dict[str, Any]) -> None:
    text = hash_specs.served(spec)
    assert hash_specs.raykube_hashes(text) == kuberay.hashes(text), text


def _vectors() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(VECTORS.read_text(encoding="utf-8"))["cases"]
    return cases


# --------------------------------------------------------------------------------------------------- samples
SAMPLE_SPECS = hash_specs.sample_specs(SAMPLES)


def test_every_sample_kind_is_covered() -> None:
    names = {name.split("#")[0] for name, _ in SAMPLE_SPECS}
    assert len(SAMPLE_SPECS) >= 55, f"expected KubeRay v1.6.1's samples under {SAMPLES}, found {len(SAMPLE_SPECS)}"
    for prefix in ("ray-cluster.", "ray-job.", "ray-service.", "ray-cronjob."):
        assert any(name.startswith(prefix) for name in names), prefix


@pytest.mark.parametrize(("name", "spec"), SAMPLE_SPECS, ids=[name for name, _ in SAMPLE_SPECS])
def test_sample_hash_is_kuberays(kuberay: kuberay_hash.KubeRayHash, name: str, spec: dict[str, Any]) -> None:
    del name  # the test id
    _compare(kuberay, spec)


# --------------------------------------------------------------------------------------------------- generated
@settings(
    max_examples=int(os.environ.get("RAYKUBE_HASH_EXAMPLES", "500")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
@given(spec=hash_specs.SPEC_V161)
def test_generated_hash_is_kuberays(kuberay: kuberay_hash.KubeRayHash, spec: dict[str, Any]) -> None:
    _compare(kuberay, spec)


# --------------------------------------------------------------------------------------------------- v1.6.1 and v1.7.0
def test_v161_answers_v170s_on_the_v16_made_specs_of_the_vectors(kuberay: kuberay_hash.KubeRayHash) -> None:
    """The v1.7.0 answers recorded for SPEC_V161's specs and for the v1.7.0 samples that are v1.6.1 samples as
    written are what KubeRay v1.6.1 answers: a v1.7.0 operator keeps the hashes of what a v1.6.1 one made."""
    v161_samples = {hash_specs.input_sha256(spec): spec for _, spec in SAMPLE_SPECS}
    compared = 0
    for case in _vectors():
        if case.get("strategy") == "SPEC_V161":
            text = case["spec"]
        elif "sample" in case and case["input_sha256"] in v161_samples:
            assert not case["sample"].endswith("+priority")  # v1.6.1's samples have no priority
            text = hash_specs.served(v161_samples[case["input_sha256"]])
        else:
            continue
        compared += 1
        assert kuberay.hashes(text) == (case["served"], case["defaulted"]), case.get("sample") or text
    assert compared >= 250, compared


def test_v161_differs_from_v170_where_the_vectors_say(kuberay: kuberay_hash.KubeRayHash) -> None:
    differences = [case for case in _vectors() if "why" in case]
    assert len(differences) >= 5
    for case in differences:
        as_read, defaulted = kuberay.hashes(case["spec"])
        assert [as_read, defaulted] == case["v161"], case["why"]
        assert (as_read, defaulted) != (case["served"], case["defaulted"]), case["why"]
        assert hash_specs.raykube_hashes(case["spec"]) == (case["served"], case["defaulted"]), case["why"]


# --------------------------------------------------------------------------------------------------- the table
def test_go_struct_table_is_kuberay_v170() -> None:
    """The table is KubeRay v1.7.0's, generated from the tagged checkout (tools/kuberay/generate.py, which make test
    cannot run: it needs the checkout). Its header names the release and the commit, as the vectors file does."""
    table = Path(gostructs.__file__).read_text(encoding="utf-8")
    first_line = table.splitlines()[0]
    assert f"KubeRay {KUBERAY_RELEASE}'s RayCluster, RayJob and RayService" in first_line, first_line
    modules = [line.removeprefix("#   ") for line in table.splitlines() if line.startswith("#   ")]
    expected = f"github.com/ray-project/kuberay/ray-operator {KUBERAY_RELEASE} (a checkout at commit {KUBERAY_COMMIT})"
    assert expected in modules, modules
    assert "uv run python tools/kuberay/generate.py --src" in table  # how to regenerate it
    header = json.loads(VECTORS.read_text(encoding="utf-8"))
    assert (header["kuberay"], header["commit"], header["modules"]) == (KUBERAY_RELEASE, KUBERAY_COMMIT, modules)

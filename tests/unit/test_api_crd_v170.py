"""raykube's generated CRDs equal KubeRay v1.7.0's, part for part, in both versions (descriptions aside).

KubeRay v1.7.0 is not on the Go module proxy, so `make test` cannot read its CRDs; it reads their fingerprints,
``tests/vectors/kuberay_crds.json``, which ``tools/kuberay_crds.py --src <checkout of v1.7.0>`` writes from
``ray-operator/config/crd/bases`` (digests only: descriptions dropped, ``required`` sorted). With a checkout,
``tools/kuberay_crds.py --src <dir> --diff`` prints every difference path by path.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from raykube.api.crd import fingerprints, load_generated

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "kuberay_crds.json"
KUBERAY = json.loads(VECTORS.read_text())
OURS = load_generated()


def differing(ours: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """The deepest paths whose digests differ (an ancestor of a differing path differs too), and paths on one side."""
    changed = {p for p in ours.keys() & theirs.keys() if ours[p] != theirs[p]}
    deepest = [p for p in changed if not any(q != p and q.startswith(p) for q in changed)]
    return sorted(
        [f"{p}: differs" for p in deepest]
        + [f"{p}: only raykube has it" for p in ours.keys() - theirs.keys()]
        + [f"{p}: only KubeRay has it" for p in theirs.keys() - ours.keys()]
    )


def test_the_vectors_are_kuberay_v1_7_0s() -> None:
    assert KUBERAY["kuberay"] == "v1.7.0"
    assert KUBERAY["commit"] == "59d663aeec13760646da3db9c1cf8cfe883e30b7"  # the v1.7.0 tag of ray-project/kuberay
    assert set(KUBERAY["crds"]) == set(OURS)


@pytest.mark.parametrize("name", sorted(OURS))
def test_generated_crd_equals_kuberay_v1_7_0(name: str) -> None:
    problems = differing(fingerprints(OURS[name], KUBERAY["depth"]), KUBERAY["crds"][name])
    assert problems == [], (
        f"{name} differs from KubeRay v1.7.0's; with a checkout of v1.7.0, "
        "`uv run python tools/kuberay_crds.py --src <dir> --diff` shows each difference"
    )


def _schema(crd: dict[str, Any], version: str) -> dict[str, Any]:
    [found] = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema: dict[str, Any] = found["schema"]["openAPIV3Schema"]
    return schema


def test_the_comparison_sees_a_changed_default_a_new_field_and_a_version_flag() -> None:
    crd = copy.deepcopy(OURS["rayclusters.yaml"])
    spec = _schema(crd, "v1")["properties"]["spec"]["properties"]
    spec["workerGroupSpecs"]["items"]["properties"]["priority"]["default"] = 1
    spec["rayVersionTypo"] = {"type": "string"}
    [alpha] = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    alpha["deprecated"] = False
    assert differing(fingerprints(crd, KUBERAY["depth"]), KUBERAY["crds"]["rayclusters.yaml"]) == [
        "v1:spec.rayVersionTypo: only raykube has it",
        "v1:spec.workerGroupSpecs[].priority: differs",
        "v1alpha1#version: differs",
    ]


def test_descriptions_and_the_order_of_required_do_not_count() -> None:
    crd = copy.deepcopy(OURS["rayjobs.yaml"])
    spec = _schema(crd, "v1")["properties"]["spec"]
    spec["description"] = "words of our own"
    spec["properties"]["entrypoint"]["description"] = "more words"
    head = spec["properties"]["rayClusterSpec"]["properties"]["headGroupSpec"]
    head["required"] = list(reversed(head["required"]))
    assert fingerprints(crd) == fingerprints(OURS["rayjobs.yaml"])


def test_v1alpha1_is_frozen_and_deprecated_as_in_kuberay_v1_7_0() -> None:
    for name in ("rayclusters.yaml", "rayjobs.yaml", "rayservices.yaml"):
        [alpha] = [v for v in OURS[name]["spec"]["versions"] if v["name"] == "v1alpha1"]
        assert alpha["deprecated"] is True
        assert "v1alpha1 receives no new fields" in alpha["deprecationWarning"]
    cluster = _schema(OURS["rayclusters.yaml"], "v1alpha1")["properties"]["spec"]
    assert "networkPolicy" not in cluster["properties"]
    assert "authOptions" not in cluster["properties"]
    assert "rayStartParams" in cluster["properties"]["headGroupSpec"]["required"]
    job = _schema(OURS["rayjobs.yaml"], "v1alpha1")["properties"]["spec"]
    assert "entrypoint" in job["required"]
    assert "entrypoint" not in _schema(OURS["rayjobs.yaml"], "v1")["properties"]["spec"].get("required", [])

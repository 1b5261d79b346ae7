"""raykube's "as Go writes it" is KubeRay v1.7.0's: an object decoded into its Go type and encoded again.

KubeRay writes whole objects through its Go structs (the Update that adds a finalizer, the Create of a RayJob's or
RayService's RayCluster, every status Update), so what the API server stores is Go's encoding, not the object as
read. tests/vectors/kuberay_roundtrip_v170.json holds Go's own answers (tools/kuberay/generate.py runs
tools/kuberay/roundtrip over a v1.7.0 checkout): hand-written objects (statuses as raykube writes them, nulls, a
Pod field v1.7.0's k8s.io/api does not know, every ObjectMeta field) and specs drawn from tests/hash_specs.py's
strategies, each as a RayCluster, a RayJob's cluster and a RayService's.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from raykube.golang import gojson, gostructs

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "kuberay_roundtrip_v170.json"
REGENERATE = "regenerate with tools/kuberay/generate.py (tools/kuberay/README.md); never edit the file by hand"


@cache
def _vectors() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))
    return loaded


def _cases() -> list[Any]:
    return [pytest.param(case, id=f"{index}-{case['kind']}") for index, case in enumerate(_vectors()["cases"])]


def test_the_vectors_are_v170s_and_cover_every_kind() -> None:
    vectors = _vectors()
    assert vectors["kuberay"] == "v1.7.0", REGENERATE
    assert vectors["count"] == len(vectors["cases"]), REGENERATE
    kinds = {case["kind"] for case in vectors["cases"]}
    assert kinds == set(gostructs.ROOTS), REGENERATE
    assert sum("why" in case for case in vectors["cases"]) >= 9


@pytest.mark.parametrize("case", _cases())
def test_marshal_writes_gos_bytes(case: dict[str, Any]) -> None:
    assert gojson.marshal(gostructs.ROOTS[case["kind"]], case["object"]) == case["go"]


@pytest.mark.parametrize("case", _cases())
def test_as_go_writes_is_gos_encoding_without_nulls(case: dict[str, Any]) -> None:
    stored = gojson.as_go_writes(gostructs.ROOTS[case["kind"]], case["object"])
    assert stored == gojson.drop_nulls(json.loads(case["go"]))
    assert "null" not in json.dumps(stored)


def _case(why: str) -> dict[str, Any]:
    return next(case for case in _vectors()["cases"] if case.get("why", "").startswith(why))


def test_go_adds_the_structs_it_always_writes() -> None:
    """The generation bump of KubeRay's finalizer Update: ``template.metadata: {}``, ``resources: {}``,
    ``scaleStrategy: {}`` appear in a spec read without them."""
    stored = gojson.as_go_writes(gostructs.ROOTS["RayCluster"], _case("a spec without")["object"])
    worker = stored["spec"]["workerGroupSpecs"][0]
    assert worker["scaleStrategy"] == {}
    assert worker["template"]["metadata"] == {}
    assert stored["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"] == {}
    assert worker["template"]["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1"}}


def test_go_drops_false_empty_and_unknown_fields() -> None:
    job = gojson.as_go_writes(gostructs.ROOTS["RayJob"], _case("a spec with false")["object"])
    assert "shutdownAfterJobFinishes" not in job["spec"]
    assert "jobId" not in job["spec"]
    status = gojson.as_go_writes(gostructs.ROOTS["RayJob"], _case("the status raykube writes first")["object"])
    assert "jobStatus" not in status["status"]
    assert status["status"]["rayJobInfo"] == {}
    unknown = gojson.as_go_writes(gostructs.ROOTS["RayCluster"], _case("nulls, empty structs")["object"])
    pod = unknown["spec"]["headGroupSpec"]["template"]["spec"]
    assert "futurePodField" not in pod
    assert pod["containers"][0] == {"name": "h", "resources": {}}  # unknown and miscased keys dropped


def test_keep_unknown_puts_back_what_go_does_not_know_and_nothing_else() -> None:
    """raykube's choice (``keep_unknown``): a field KubeRay v1.7.0's Go types lack (a newer Pod field, which only a
    newer CRD than v1.7.0's would store) stays as read; everything Go knows is as Go writes it."""
    case = _case("nulls, empty structs")
    root = gostructs.ROOTS[case["kind"]]
    kept = gojson.as_go_writes(root, case["object"], keep_unknown=True)
    pod = kept["spec"]["headGroupSpec"]["template"]["spec"]
    assert pod["futurePodField"] is True
    assert pod["containers"][0] == {"name": "h", "futureContainerField": {"a": 1}, "Image": "r", "resources": {}}
    assert "volumes" not in pod
    assert kept["spec"]["headGroupSpec"]["template"]["metadata"] == {}
    dropped = gojson.as_go_writes(root, case["object"])
    assert gojson.with_unknown(root, case["object"], dropped) == kept


def test_keep_unknown_changes_nothing_go_knows() -> None:
    """Where every key is a Go field (the hand-written objects but the one with unknown fields), keeping unknown
    fields is Go's answer."""
    known = [case for case in _vectors()["cases"] if "why" in case and not case["why"].startswith("nulls, empty")]
    assert len(known) >= 8
    for case in known:
        root = gostructs.ROOTS[case["kind"]]
        assert gojson.as_go_writes(root, case["object"], keep_unknown=True) == gojson.as_go_writes(root, case["object"])

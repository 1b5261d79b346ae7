"""The ray.io models parse what KubeRay users write and give back exactly that: nothing invented, nothing dropped."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from raykube.api.crd import SchemaError, _Generator, _K8sInliner
from raykube.api.raycluster import RayClusterSpec, WorkerGroupSpec
from raykube.api.resources import RayCluster, RayCronJob, RayJob, RayService
from raykube.api.schema import V1_ONLY, V1ALPHA1_ONLY, CrdRequired, K8s, RayModel, Schema
from tests.support import KUBERAY_V161

MODELS: dict[str, type[RayModel]] = {
    "RayCluster": RayCluster,
    "RayJob": RayJob,
    "RayService": RayService,
    "RayCronJob": RayCronJob,
}


def _samples() -> list[Any]:
    found = []
    for path in sorted((KUBERAY_V161 / "samples").glob("*.yaml")):
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if isinstance(doc, dict) and doc.get("kind") in MODELS:
                found.append(pytest.param(doc, id=f"{path.stem}-{index}"))
    return found


@pytest.mark.parametrize("document", _samples())
def test_every_kuberay_sample_round_trips_exactly(document: dict[str, Any]) -> None:
    model = MODELS[document["kind"]].model_validate(document)
    assert model.to_wire() == document


def test_fields_unknown_to_us_are_kept() -> None:
    group = {"groupName": "g", "template": {}, "futureField": {"x": 1}, "scaleStrategy": {"newer": True}}
    parsed = WorkerGroupSpec.model_validate(group)
    assert parsed.to_wire() == group


def test_python_names_and_wire_names() -> None:
    spec = RayClusterSpec.model_validate(
        {"headGroupSpec": {"template": {}}, "workerGroupSpecs": [{"groupName": "g", "template": {}, "replicas": 2}]}
    )
    assert spec.worker_group_specs is not None
    group = spec.worker_group_specs[0]
    assert (group.replicas, group.min_replicas, group.max_replicas, group.num_of_hosts) == (2, 0, 2147483647, 1)
    assert "minReplicas" not in spec.to_wire()["workerGroupSpecs"][0]  # defaults are read, never written back


# --- hypothesis: generated valid specs round-trip -------------------------------------------------------------------

names = st.from_regex(r"\A[a-z][a-z0-9-]{0,10}[a-z0-9]\Z")
small_ints = st.integers(0, 1000)
string_maps = st.dictionaries(st.from_regex(r"\A[a-z][a-z-]{0,12}\Z"), st.text(max_size=10), max_size=3)
templates = st.fixed_dictionaries(
    {"spec": st.fixed_dictionaries({"containers": st.lists(st.fixed_dictionaries({"name": names}), max_size=2)})},
    optional={"metadata": st.fixed_dictionaries({}, optional={"labels": string_maps})},
)
worker_groups = st.fixed_dictionaries(
    {"groupName": names, "template": templates},
    optional={
        "replicas": small_ints,
        "minReplicas": small_ints,
        "maxReplicas": small_ints,
        "numOfHosts": st.integers(1, 8),
        "rayStartParams": string_maps,
        "idleTimeoutSeconds": small_ints,
        "suspend": st.booleans(),
        "scaleStrategy": st.fixed_dictionaries({}, optional={"workersToDelete": st.lists(names, max_size=3)}),
        "resources": string_maps,
        "labels": string_maps,
    },
)
cluster_specs = st.fixed_dictionaries(
    {"headGroupSpec": st.fixed_dictionaries({"template": templates}, optional={"rayStartParams": string_maps})},
    optional={
        "rayVersion": st.sampled_from(["2.46.0", "2.52.0", "2.55.1"]),
        "workerGroupSpecs": st.lists(worker_groups, max_size=3),
        "enableInTreeAutoscaling": st.booleans(),
        "autoscalerOptions": st.fixed_dictionaries(
            {},
            optional={
                "version": st.sampled_from(["v1", "v2"]),
                "upscalingMode": st.sampled_from(["Default", "Aggressive", "Conservative"]),
                "idleTimeoutSeconds": small_ints,
                "env": st.lists(st.fixed_dictionaries({"name": names, "value": st.text(max_size=5)}), max_size=2),
            },
        ),
        "suspend": st.booleans(),
        "managedBy": st.sampled_from(["ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue"]),
        "gcsFaultToleranceOptions": st.fixed_dictionaries(
            {"redisAddress": st.text(min_size=1, max_size=20)},
            optional={"redisPassword": st.fixed_dictionaries({"value": st.text(max_size=8)})},
        ),
        "authOptions": st.fixed_dictionaries({}, optional={"mode": st.sampled_from(["disabled", "token"])}),
        "headServiceAnnotations": string_maps,
        "upgradeStrategy": st.fixed_dictionaries({"type": st.sampled_from(["Recreate", "None"])}),
    },
)


@given(cluster_specs)
def test_generated_cluster_specs_round_trip(spec: dict[str, Any]) -> None:
    assert RayClusterSpec.model_validate(spec).to_wire() == spec


job_specs = st.fixed_dictionaries(
    {},
    optional={
        "entrypoint": st.text(max_size=30),
        "rayClusterSpec": cluster_specs,
        "clusterSelector": string_maps,
        "shutdownAfterJobFinishes": st.booleans(),
        "ttlSecondsAfterFinished": small_ints,
        "submissionMode": st.sampled_from(["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"]),
        "runtimeEnvYAML": st.text(max_size=20),
        "entrypointNumCpus": st.floats(0, 64, allow_nan=False),
        "backoffLimit": small_ints,
        "deletionStrategy": st.fixed_dictionaries(
            {
                "deletionRules": st.lists(
                    st.fixed_dictionaries(
                        {
                            "policy": st.sampled_from(["DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone"]),
                            "condition": st.fixed_dictionaries(
                                {"jobStatus": st.sampled_from(["SUCCEEDED", "FAILED"])},
                                optional={"ttlSeconds": small_ints},
                            ),
                        }
                    ),
                    min_size=1,
                    max_size=3,
                )
            }
        ),
    },
)


@given(job_specs)
def test_generated_job_specs_round_trip(spec: dict[str, Any]) -> None:
    job = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "j"}, "spec": spec}
    assert RayJob.model_validate(job).to_wire() == job


# --- the CRD generator ---------------------------------------------------------------------------------------------

DEFINITIONS = {
    "io.example.Thing": {
        "type": "object",
        "description": "dropped",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "default": ""},  # a zero default on a required field: dropped
            "mode": {"type": "string", "default": "", "enum": ["a", "b"]},  # optional: kept, enum dropped
            "inner": {"allOf": [{"$ref": "#/components/schemas/io.example.Inner"}], "default": {}},
            "count": {"type": "integer", "format": "int32", "x-kubernetes-patch-strategy": "merge"},
        },
    },
    "io.example.Inner": {"type": "object", "properties": {"size": {"$ref": "#/components/schemas/Quantity"}}},
    "Quantity": {"type": "string"},
}


class _Example(RayModel):
    thing: Annotated[dict[str, Any], K8s("io.example.Thing")]
    level: Annotated[int, Schema(format="int32", minimum=1)] = Field(3, description="How high.")
    tags: list[str] | None = None


def test_the_generator_inlines_kubernetes_types_as_controller_gen_does() -> None:
    schema = _Generator(_K8sInliner(DEFINITIONS), "v1").model(_Example)
    assert schema == {
        "type": "object",
        "required": ["thing"],
        "properties": {
            "thing": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "mode": {"type": "string", "default": ""},
                    "inner": {"type": "object", "properties": {"size": {"type": "string"}}},
                    "count": {"type": "integer", "format": "int32"},
                },
            },
            "level": {"type": "integer", "format": "int32", "minimum": 1, "default": 3, "description": "How high."},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }


class _Versioned(RayModel):
    old: Annotated[str, CrdRequired(versions=("v1alpha1",))] | None = None
    new: Annotated[int | None, V1_ONLY] = None
    gone: Annotated[str | None, V1ALPHA1_ONLY] = None


def test_fields_follow_the_versions_they_are_marked_for() -> None:
    v1 = _Generator(_K8sInliner({}), "v1").model(_Versioned)
    alpha = _Generator(_K8sInliner({}), "v1alpha1").model(_Versioned)
    assert sorted(v1["properties"]) == ["new", "old"] and "required" not in v1
    assert sorted(alpha["properties"]) == ["gone", "old"] and alpha["required"] == ["old"]


def test_the_generator_refuses_types_a_crd_cannot_express() -> None:
    class Untyped(RayModel):
        anything: dict[str, Any]

    with pytest.raises(SchemaError, match="map of Any"):
        _Generator(_K8sInliner({}), "v1").model(Untyped)

    class Missing(RayModel):
        thing: Annotated[dict[str, Any], K8s("io.example.Nope")]

    with pytest.raises(SchemaError, match=r"io\.example\.Nope is not in the Kubernetes"):
        _Generator(_K8sInliner({}), "v1").model(Missing)

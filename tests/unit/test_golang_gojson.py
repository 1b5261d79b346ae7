"""Go's encoding/json round trip of a RayClusterSpec (raykube.golang.gojson) and the spec hash built on it.

Every expected value here was produced by KubeRay v1.7.0 itself (tools/kuberay/hash built against a v1.7.0 checkout,
as tools/kuberay/generate.py builds it, with -json for the encodings); those of the sample and the minimal spec are
v1.6.1's too. tests/unit/test_kuberay_hash_v170.py compares with v1.7.0's answers over KubeRay's samples and generated
specs, tests/integration/test_kuberay_hash.py live with v1.6.1's over specs without v1.7.0's fields.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from raykube.api.raycluster import RayClusterSpec
from raykube.builders.spechash import cluster_spec_hash
from raykube.golang import gojson, gostructs
from raykube.golang.quantity import QuantityError, marshaled
from tests.support import KUBERAY_V161
from tests.vectors import compare

# A spec with most of what the Go encoding changes: unknown fields ("Image", "fooBar"), pointers v1.7.0 added
# (ingressOptions.host, a priority of 0, which omitempty keeps; v1.6.1 dropped both as unknown),
# quantities kept as written ("1.500", "2Gi") or made canonical ("1024Mi", 0.5), a struct that omitempty cannot
# drop (resources, a Service's status), an int-or-string targetPort that is 0 when absent, HTML characters and
# U+2028 escaped, map keys sorted, an empty list dropped by omitempty, fields the hash clears.
QUIRKS: dict[str, Any] = {
    "workerGroupSpecs": [
        {
            "groupName": "w",
            "replicas": 3,
            "minReplicas": 1,
            "maxReplicas": 5,
            "priority": 0,
            "scaleStrategy": {"workersToDelete": ["a"]},
            "template": {
                "metadata": {"creationTimestamp": None, "labels": {"b": "1", "a": "<&>"}},
                "spec": {
                    "containers": [
                        {
                            "name": "ray",
                            "image": "rayproject/ray:2.52.0",
                            "Image": "dropped",
                            "resources": {
                                "limits": {"cpu": "1.500", "memory": "1024Mi"},
                                "requests": {"cpu": 0.5, "memory": "2Gi"},
                            },
                            "ports": [{"containerPort": 8000, "name": "serve"}],
                            "readinessProbe": {"httpGet": {"port": "serve", "path": "/-/healthz"}},
                        }
                    ],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                    "volumes": [],
                },
            },
        }
    ],
    "headGroupSpec": {
        "template": {
            "spec": {
                "containers": [
                    {"name": "ray-head", "image": "rayproject/ray:2.52.0", "env": [{"name": "A", "value": "x\u2028y"}]}
                ]
            }
        },
        "headService": {"spec": {"ports": [{"port": 8265}]}},
        "ingressOptions": {"host": "h"},
    },
    "upgradeStrategy": {"type": "Recreate"},
    "suspend": False,
    "fooBar": 1,
}
# KubeRay's json.Marshal of QUIRKS as decoded, after setDefaults, before the hash clears anything.
QUIRKS_GO_JSON = (
    '{"upgradeStrategy":{"type":"Recreate"},"suspend":false,"headGroupSpec":{"template":{"metadata":{},"spec":'
    '{"containers":[{"name":"ray-head","image":"rayproject/ray:2.52.0","env":[{"name":"A","value":"x\\u2028y"}],'
    '"resources":{}}]}},"headService":{"metadata":{},"spec":{"ports":[{"port":8265,"targetPort":0}]},"status":'
    '{"loadBalancer":{}}},"ingressOptions":{"host":"h"},"rayStartParams":{}},"workerGroupSpecs":[{"groupName":"w",'
    '"replicas":3,"minReplicas":1,"maxReplicas":5,"priority":0,"rayStartParams":{},"template":{"metadata":{"labels":{"a":"\\u003c\\u0026\\u003e","b":"1"}},'
    '"spec":{"containers":[{"name":"ray","image":"rayproject/ray:2.52.0","ports":[{"name":"serve",'
    '"containerPort":8000}],"resources":{"limits":{"cpu":"1.500","memory":"1Gi"},"requests":{"cpu":"500m",'
    '"memory":"2Gi"}},"readinessProbe":{"httpGet":{"path":"/-/healthz","port":"serve"}}}],"tolerations":'
    '[{"key":"k","operator":"Exists"}]}},"scaleStrategy":{"workersToDelete":["a"]}}]}'
)


def _sample_spec(name: str) -> dict[str, Any]:
    docs = yaml.safe_load_all(Path(KUBERAY_V161 / "samples" / name).read_text())
    return next(d for d in docs if d and d["kind"] == "RayCluster")["spec"]


def _hashes(spec: dict[str, Any]) -> tuple[str, str]:
    model = RayClusterSpec.model_validate(json.loads(json.dumps(spec)))
    return cluster_spec_hash(model, defaulted=False), cluster_spec_hash(model)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            _sample_spec("ray-cluster.sample.yaml"),
            ("6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT", "6RKSSRH0TUUOPMDVECMHUNDSDORCPGVT"),
            id="sample",
        ),
        pytest.param(
            {"headGroupSpec": {"template": {}}},
            ("PTVF5IPRTR0A2EELQNRVADOG3HF01KC8", "IKC7G1UO5B5HLLNSKVA9UQK3JQ0O0GCJ"),
            id="minimal-rayStartParams-null-or-defaulted",
        ),
        # v1.6.1: EARDEFMH61K463RO1HD5HR212F8QBNJG, 4TI8LDERHAFI7GNUT3QL884N8R16FV6H (no ingressOptions, no priority)
        pytest.param(QUIRKS, ("JVJCS75UUO1M7U5VADUHAFFMQT047RHJ", "Q3OM40V3I7GMATE09NRSJBJE8S786CTU"), id="quirks"),
    ],
)
def test_hash_is_kuberays(spec: dict[str, Any], expected: tuple[str, str]) -> None:
    assert _hashes(spec) == expected


def test_hash_ignores_what_autoscalers_and_queues_change() -> None:
    base = _hashes(QUIRKS)
    scaled = copy.deepcopy(QUIRKS)
    group = scaled["workerGroupSpecs"][0]
    group.update(replicas=7, minReplicas=0, maxReplicas=70, scaleStrategy={"workersToDelete": ["b", "c"]})
    group["template"]["spec"]["schedulingGates"] = [{"name": "kueue"}]
    del group["template"]["spec"]["tolerations"]
    scaled["headGroupSpec"]["template"]["spec"]["tolerations"] = [{"key": "t", "operator": "Exists"}]
    scaled["upgradeStrategy"] = {"type": "None"}
    assert _hashes(scaled) == base
    changed = copy.deepcopy(QUIRKS)
    changed["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "1500m"
    assert _hashes(changed) != base  # the same quantity, written otherwise: Go keeps "1.500" as written


def test_marshal_is_gos_json() -> None:
    data = copy.deepcopy(QUIRKS)
    data["headGroupSpec"]["rayStartParams"] = {}
    data["workerGroupSpecs"][0]["rayStartParams"] = {}
    assert gojson.marshal(gostructs.ROOT, data) == QUIRKS_GO_JSON


@pytest.mark.parametrize(
    ("timestamp", "metadata"),
    [
        (
            "2024-01-02T05:04:05.999+02:00",
            '{"creationTimestamp":"2024-01-02T03:04:05Z","managedFields":[{"manager":"m",'
            '"time":"2024-01-02T03:04:05Z","fieldsV1":{"f:b":{},"f:a":{".":{}}}}]}',
        ),
        # Go's zero instant: omitzero drops creationTimestamp; a non-nil *Time still writes null.
        (
            "0001-01-01T00:00:00Z",
            '{"managedFields":[{"manager":"m","time":null,"fieldsV1":{"f:b":{},"f:a":{".":{}}}}]}',
        ),
        (None, '{"managedFields":[{"manager":"m","fieldsV1":{"f:b":{},"f:a":{".":{}}}}]}'),
    ],
)
def test_times_and_raw_fields(timestamp: str | None, metadata: str) -> None:
    meta = {
        "creationTimestamp": timestamp,
        "managedFields": [{"manager": "m", "time": timestamp, "fieldsV1": {"f:b": {}, "f:a": {".": {}}}}],
    }
    assert gojson.marshal("metav1.ObjectMeta", meta) == metadata


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # absent, null, [] and [x]: containers has no omitempty, volumes and nodeSelector have
        ({}, '{"containers":null}'),
        ({"containers": None, "volumes": None}, '{"containers":null}'),
        ({"containers": [], "volumes": [], "nodeSelector": {}}, '{"containers":[]}'),
        ({"containers": [{}], "volumes": [{}]}, '{"volumes":[{"name":""}],"containers":[{"name":"","resources":{}}]}'),
        # omitempty drops false, 0 and "" but not a pointer to 0
        (
            {"priority": 0, "hostNetwork": False, "hostname": "", "activeDeadlineSeconds": None},
            '{"containers":null,"priority":0}',
        ),
        ({"priority": -1, "hostNetwork": True}, '{"containers":null,"hostNetwork":true,"priority":-1}'),
        # wrong types (which Go refuses) are left at the zero value; so are out-of-range numbers
        ({"containers": "x", "hostNetwork": "yes", "priority": 2**40}, '{"containers":null,"priority":0}'),
    ],
)
def test_pod_spec_decode_then_encode(value: dict[str, Any], expected: str) -> None:
    assert gojson.marshal("corev1.PodSpec", value) == expected


@pytest.mark.parametrize(
    ("port", "expected"),
    [(None, "0"), (8080, "8080"), ("8080", '"8080"'), ("http", '"http"'), ("<a>", '"\\u003ca\\u003e"')],
)
def test_int_or_string(port: Any, expected: str) -> None:
    assert gojson.marshal("intstr.IntOrString", port) == expected


# What Quantity.MarshalJSON writes for each text: tests/vectors/quantity.json, written by k8s.io/apimachinery v0.35.0
# itself (tools/govectors, `make vectors`): 46 curated texts, each a test here, and 4,000 random ones.
_QUANTITIES = compare.load("quantity")


@pytest.mark.parametrize(
    "case", _QUANTITIES.cases[: _QUANTITIES.header["curated"]], ids=lambda case: repr(case["text"])
)
def test_quantity_as_go_marshals_it(case: dict[str, Any]) -> None:
    assert compare.compare("quantity", case) is None or any(
        divergence.applies(case) for divergence in compare.DIVERGENCES if divergence.family == "quantity"
    )


@pytest.mark.parametrize("name", ["quantity", "quantity_add"])
def test_every_quantity_vector_agrees_with_go(name: str) -> None:
    compare.assert_agrees(name)


def test_quantity_numbers_and_bad_texts() -> None:
    assert marshaled(3) == "3"
    assert marshaled(0.5) == "500m"
    assert marshaled(1.625) == "1.625"
    with pytest.raises(QuantityError):
        marshaled("1e3m")
    resources = {"limits": {"cpu": " 2 ", "memory": "lots"}}  # Go trims the space; a bad text is kept as written
    assert gojson.marshal("corev1.ResourceRequirements", resources) == '{"limits":{"cpu":"2","memory":"lots"}}'


def test_every_type_of_the_table_is_known() -> None:
    for fields in gostructs.STRUCTS.values():
        for _, expr, _ in fields:
            gojson.marshal(expr, None)  # raises GoError for a type the marshaller has no handler for

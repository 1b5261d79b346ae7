"""raykube's cluster_spec_hash is KubeRay v1.6.1's GenerateHashWithoutReplicasAndWorkersToDelete, byte for byte.

A differential test against KubeRay itself: ``tools/kuberay/hash`` (built once into the cache, see
tests/kuberay_hash.py) decodes each spec with KubeRay's Go types and hashes it with KubeRay's function, both as read
(the RayService controller's value) and after the RayCluster controller's ``setDefaults`` (the
``ray.io/upgrade-strategy-recreate-hash`` annotation). raykube reads the same JSON into its RayClusterSpec model and
computes both with :func:`raykube.builders.pods.cluster_spec_hash`. Inputs: every RayCluster spec in KubeRay's
samples (RayClusters, and the cluster specs of RayJob, RayCronJob and RayService samples), then generated specs
stressing the Go encoding: quantities in odd forms, empty versus absent versus null lists and maps, HTML characters
and unicode, int-or-string ports, unknown fields, suspend, autoscalerOptions, gcsFaultToleranceOptions, headService.

Also checks that the committed Go struct table (src/raykube/golang/gostructs.py) is what its generator writes.

Needs Go (skipped with the reason when it is missing). About ten seconds once the helper is built (the first build
takes about a minute with a cold Go build cache). RAYKUBE_HASH_EXAMPLES sets the number of generated specs (500).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raykube.api.raycluster import RayClusterSpec
from raykube.builders.pods import cluster_spec_hash
from raykube.golang import gostructs
from raykube.golang.gojson import json_marshal
from raykube.sandbox.build import find_go
from raykube.sandbox.errors import ToolchainError
from tests import kuberay_hash
from tests.support import KUBERAY_V161

SAMPLES = KUBERAY_V161 / "samples"


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


def _served(spec: dict[str, Any]) -> str:
    """The spec as the API server serves it: Go's JSON (its float format, invalid UTF-8 replaced). Keys stay in the
    order given, which is not sorted, so that the map sorting of the encoders is put to the test too."""
    return json_marshal(spec, sort_keys=False)


def _raykube(text: str) -> tuple[str, str]:
    """raykube's two hashes of a served spec, read as the operator reads a RayCluster."""
    model = RayClusterSpec.model_validate(json.loads(text))
    return cluster_spec_hash(model, defaulted=False), cluster_spec_hash(model)


def _compare(kuberay: kuberay_hash.KubeRayHash, spec: dict[str, Any]) -> None:
    text = _served(spec)
    assert _raykube(text) == kuberay.hashes(text), text


# --------------------------------------------------------------------------------------------------- samples
def _cluster_specs(doc: Any) -> Iterator[dict[str, Any]]:
    """Every RayClusterSpec in a sample document: a RayCluster's spec, a RayJob's (or RayCronJob's job template's)
    rayClusterSpec, a RayService's rayClusterConfig."""
    if isinstance(doc, dict):
        if doc.get("kind") == "RayCluster" and isinstance(doc.get("spec"), dict):
            yield doc["spec"]
            return
        for key, value in doc.items():
            if key in ("rayClusterSpec", "rayClusterConfig") and isinstance(value, dict):
                yield value
            else:
                yield from _cluster_specs(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from _cluster_specs(item)


def _sample_specs() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted(SAMPLES.rglob("*.yaml")):
        try:
            docs = [json.loads(json.dumps(d, default=str)) for d in yaml.safe_load_all(path.read_text()) if d]
        except yaml.YAMLError:
            continue  # a Helm template or the like, not a manifest
        for index, spec in enumerate(s for d in docs for s in _cluster_specs(d)):
            found.append((f"{path.relative_to(SAMPLES)}#{index}", spec))
    return found


SAMPLE_SPECS = _sample_specs()


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
# Characters Go's encoder treats specially (HTML escapes, U+2028/9, controls) and non-ASCII text.
_TEXT = st.text(alphabet=st.sampled_from("ab-_./:<>&'\"\\\n\t\x00\x7f\u2028\u2029éß漢🙂 "), max_size=8)
_KEY = st.text(alphabet=st.sampled_from("abz-_./<>&é漢🙂"), min_size=1, max_size=6)
_NAME = st.from_regex(r"[a-z]([a-z0-9-]{0,6}[a-z0-9])?", fullmatch=True)
# Quantities in every form ParseQuantity reads; several are kept as written by Go ("1.500", "1E3", "+1", "01", "2Gi"),
# the others are rewritten to the canonical form ("1000m" is "1", "0.5" is "500m", "1024Mi" is "1Gi").
_QUANTITY_TEXT = st.sampled_from(
    [
        "1000m", "0.5", "1e3", "1E3", "2Gi", "1.5Gi", "100M", "0", "+1", ".5", "1.", "12e-3", "5Ki", "1024Mi",
        "100n", "3u", "0.1m", "1.000", "1.500", "2048Ki", "1e-9", "0.0000000001", "7Ti", "1.5e2", "-1", "0Gi",
        "40G", "1k", "01", "1.G", "+2Gi", "-2Gi", "0.000", "3Gi", "1025Ki", "8Ki", "123456789012345678",
        "1234567890123456789", "2.5e-3", "1e+3", "500m", "0.25", "64Mi", "16G", "1Ei", "9Ei",
    ]
)  # fmt: skip
_QUANTITY = st.one_of(
    _QUANTITY_TEXT,
    _QUANTITY_TEXT,
    st.integers(min_value=0, max_value=10**15),
    st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False),
)
_INT_OR_STRING = st.one_of(st.integers(min_value=0, max_value=65535), _NAME, st.sampled_from(["8080", "", "<a>"]))
_UNKNOWN = st.dictionaries(st.sampled_from(["fooBar", "Name", "IMAGE", "x-extra", "spec2"]), _TEXT, max_size=2)


def _maybe(strategy: st.SearchStrategy[Any], *, null: bool = True, empty: Any = None) -> st.SearchStrategy[Any]:
    """A value, or (when allowed) null, or the type's empty value; the caller decides whether to include the key."""
    options = [strategy]
    if null:
        options.append(st.none())
    if empty is not None:
        options.append(st.just(empty))
    return st.one_of(*options)


@st.composite
def _obj(draw: st.DrawFn, required: dict[str, Any], optional: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    """A JSON object with the required keys, a random subset of the optional ones, and perhaps unknown keys."""
    out = {key: draw(value) if isinstance(value, st.SearchStrategy) else value for key, value in required.items()}
    for key, strategy in optional.items():
        if draw(st.booleans()):
            out[key] = draw(strategy)
    out.update(draw(_UNKNOWN) if draw(st.integers(0, 4)) == 0 else {})
    return out


_LIST = lambda item: _maybe(st.lists(item, max_size=3), empty=[])  # noqa: E731 - a strategy shorthand
_MAP = lambda value: _maybe(st.dictionaries(_KEY, value, max_size=3), empty={})  # noqa: E731
_RESOURCES = _obj(
    {},
    {
        "limits": _MAP(_QUANTITY),
        "requests": _MAP(_QUANTITY),
        "claims": _LIST(_obj({"name": _NAME}, {"request": _NAME})),
    },
)
_ENV_SOURCE = st.one_of(
    _obj({}, {"secretKeyRef": _obj({"key": _KEY}, {"name": _NAME, "optional": st.booleans()})}),
    _obj({}, {"fieldRef": _obj({"fieldPath": st.just("status.podIP")}, {"apiVersion": st.just("v1")})}),
    _obj({}, {"resourceFieldRef": _obj({"resource": st.just("limits.cpu")}, {"divisor": _QUANTITY})}),
)
_ENV = _obj({"name": _KEY}, {"value": _TEXT, "valueFrom": _maybe(_ENV_SOURCE)})
_PROBE = _obj(
    {},
    {
        "httpGet": _obj({"port": _INT_OR_STRING}, {"path": _TEXT, "scheme": st.just("HTTP"), "host": _TEXT}),
        "tcpSocket": _obj({"port": _INT_OR_STRING}, {}),
        "grpc": _obj({"port": st.integers(1, 65535)}, {"service": _maybe(_TEXT)}),
        "exec": _obj({}, {"command": _LIST(_TEXT)}),
        "initialDelaySeconds": st.integers(0, 100),
        "periodSeconds": st.integers(0, 100),
        "failureThreshold": st.integers(0, 10),
        "terminationGracePeriodSeconds": _maybe(st.integers(0, 10**6)),
    },
)
_CONTAINER = _obj(
    {"name": _NAME},
    {
        "image": _TEXT,
        "command": _LIST(_TEXT),
        "args": _LIST(_TEXT),
        "env": _LIST(_ENV),
        "ports": _LIST(_obj({"containerPort": st.integers(1, 65535)}, {"name": _NAME, "protocol": st.just("TCP")})),
        "resources": _maybe(_RESOURCES),
        "livenessProbe": _maybe(_PROBE),
        "readinessProbe": _maybe(_PROBE),
        "volumeMounts": _LIST(_obj({"name": _NAME, "mountPath": _TEXT}, {"readOnly": st.booleans()})),
        "imagePullPolicy": st.sampled_from(["Always", "IfNotPresent"]),
        "securityContext": _maybe(_obj({}, {"privileged": st.booleans(), "runAsUser": st.integers(0, 1000)})),
        "lifecycle": _maybe(_obj({}, {"preStop": _obj({}, {"exec": _obj({}, {"command": _LIST(_TEXT)})})})),
    },
)
_TIME = st.sampled_from(
    ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123456Z", "2024-01-02T05:04:05+02:00", "0001-01-01T00:00:00Z"]
)
_METADATA = _obj(
    {},
    {
        "labels": _MAP(_TEXT),
        "annotations": _MAP(_TEXT),
        "name": _NAME,
        "creationTimestamp": _maybe(_TIME),
        "generateName": _TEXT,
        "managedFields": _LIST(
            _obj(
                {"manager": _TEXT},
                {
                    "operation": st.just("Apply"),
                    "time": _maybe(_TIME),
                    "fieldsType": st.just("FieldsV1"),
                    "fieldsV1": _maybe(st.dictionaries(_KEY, st.one_of(st.just({}), _TEXT, _QUANTITY), max_size=3)),
                },
            )
        ),
    },
)
_VOLUME = st.one_of(
    _obj({"name": _NAME}, {"emptyDir": _obj({}, {"medium": st.just("Memory"), "sizeLimit": _maybe(_QUANTITY)})}),
    _obj({"name": _NAME}, {"configMap": _obj({"name": _NAME}, {"defaultMode": st.integers(0, 511)})}),
    _obj({"name": _NAME}, {"hostPath": _obj({"path": _TEXT}, {"type": st.just("Directory")})}),
    _obj(
        {"name": _NAME}, {"projected": _obj({}, {"sources": _LIST(_obj({}, {"configMap": _obj({}, {"name": _NAME})}))})}
    ),
)
_NODE_SELECTOR_TERM = _obj(
    {}, {"matchExpressions": _LIST(_obj({"key": _KEY, "operator": st.just("In")}, {"values": _LIST(_TEXT)}))}
)
_AFFINITY = _obj(
    {},
    {
        "nodeAffinity": _obj(
            {},
            {
                "requiredDuringSchedulingIgnoredDuringExecution": _maybe(
                    _obj({}, {"nodeSelectorTerms": _LIST(_NODE_SELECTOR_TERM)})
                )
            },
        )
    },
)
_TOLERATION = _obj({"key": _KEY}, {"operator": st.just("Exists"), "effect": st.just("NoSchedule")})
_POD_SPEC = _obj(
    {},
    {
        "containers": _maybe(st.lists(_CONTAINER, min_size=1, max_size=2), empty=[]),
        "initContainers": _LIST(_CONTAINER),
        "volumes": _LIST(_VOLUME),
        "nodeSelector": _MAP(_TEXT),
        "tolerations": _LIST(_TOLERATION),
        "schedulingGates": _LIST(_obj({"name": _NAME}, {})),
        "serviceAccountName": _TEXT,
        "restartPolicy": st.sampled_from(["Never", "Always"]),
        "affinity": _maybe(_AFFINITY),
        "imagePullSecrets": _LIST(_obj({}, {"name": _NAME})),
        "hostNetwork": st.booleans(),
        "terminationGracePeriodSeconds": _maybe(st.integers(0, 100)),
        "priorityClassName": _TEXT,
        "overhead": _MAP(_QUANTITY),
    },
)
_TEMPLATE = _obj({}, {"metadata": _maybe(_METADATA), "spec": _POD_SPEC})
_HEAD_SERVICE = _obj(
    {},
    {
        "metadata": _METADATA,
        "spec": _obj(
            {},
            {
                "type": st.just("ClusterIP"),
                "ports": _LIST(_obj({"port": st.integers(1, 65535)}, {"name": _NAME, "targetPort": _INT_OR_STRING})),
                "selector": _MAP(_TEXT),
            },
        ),
    },
)
_RAY_PARAMS = _MAP(_TEXT)
_HEAD = _obj(
    {"template": _TEMPLATE},
    {
        "rayStartParams": _RAY_PARAMS,
        "serviceType": st.sampled_from(["ClusterIP", "NodePort", ""]),
        "enableIngress": _maybe(st.booleans()),
        "resources": _MAP(_TEXT),
        "labels": _MAP(_TEXT),
        "headService": _maybe(_HEAD_SERVICE),
        "ingressOptions": _obj({}, {"host": _NAME, "path": _TEXT}),  # raykube's, not in KubeRay v1.6.1's Go types
    },
)
_WORKER = _obj(
    {"groupName": _NAME, "template": _TEMPLATE},
    {
        "replicas": _maybe(st.integers(0, 10)),
        "minReplicas": st.integers(0, 3),
        "maxReplicas": st.integers(0, 2**31 - 1),
        "numOfHosts": st.integers(0, 4),
        "idleTimeoutSeconds": _maybe(st.integers(0, 600)),
        "rayStartParams": _RAY_PARAMS,
        "scaleStrategy": _maybe(_obj({}, {"workersToDelete": _LIST(_NAME)})),
        "suspend": _maybe(st.booleans()),
        "resources": _MAP(_TEXT),
        "labels": _MAP(_TEXT),
    },
)
_CREDENTIAL = _obj({}, {"value": _TEXT, "valueFrom": _maybe(_ENV_SOURCE)})
_SPEC = _obj(
    {"headGroupSpec": _HEAD},
    {
        "workerGroupSpecs": _LIST(_WORKER),
        "rayVersion": st.sampled_from(["2.52.0", "2.53.0", ""]),
        "enableInTreeAutoscaling": _maybe(st.booleans()),
        "suspend": _maybe(st.booleans()),
        "managedBy": st.sampled_from(["ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue"]),
        "headServiceAnnotations": _MAP(_TEXT),
        "upgradeStrategy": _maybe(_obj({}, {"type": _maybe(st.sampled_from(["Recreate", "None"]))})),
        "authOptions": _maybe(
            _obj(
                {},
                {
                    "mode": _maybe(st.sampled_from(["disabled", "token"])),
                    "secretName": _maybe(_NAME),
                    "enableK8sTokenAuth": _maybe(st.booleans()),
                },
            )
        ),
        "autoscalerOptions": _maybe(
            _obj(
                {},
                {
                    "resources": _maybe(_RESOURCES),
                    "image": _maybe(_TEXT),
                    "imagePullPolicy": _maybe(st.sampled_from(["Always", "IfNotPresent"])),
                    "securityContext": _maybe(_obj({}, {"runAsNonRoot": st.booleans()})),
                    "idleTimeoutSeconds": _maybe(st.integers(0, 600)),
                    "upscalingMode": _maybe(st.sampled_from(["Default", "Aggressive", "Conservative"])),
                    "version": _maybe(st.sampled_from(["v1", "v2"])),
                    "env": _LIST(_ENV),
                    "envFrom": _LIST(_obj({}, {"configMapRef": _obj({"name": _NAME}, {})})),
                    "volumeMounts": _LIST(_obj({"name": _NAME, "mountPath": _TEXT}, {})),
                },
            )
        ),
        "gcsFaultToleranceOptions": _maybe(
            _obj(
                {"redisAddress": _TEXT},
                {
                    "redisUsername": _maybe(_CREDENTIAL),
                    "redisPassword": _maybe(_CREDENTIAL),
                    "externalStorageNamespace": _maybe(_TEXT),
                },
            )
        ),
    },
)


@settings(
    max_examples=int(os.environ.get("RAYKUBE_HASH_EXAMPLES", "500")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=_SPEC)
def test_generated_hash_is_kuberays(kuberay: kuberay_hash.KubeRayHash, spec: dict[str, Any]) -> None:
    _compare(kuberay, spec)


# --------------------------------------------------------------------------------------------------- the table
def test_go_struct_table_is_generated_from_kuberay() -> None:
    try:
        go = find_go(purpose="the Go struct table is generated from KubeRay's Go types")
    except ToolchainError as error:
        pytest.skip(f"Go is unavailable: {error.message}")
    generated = subprocess.run(
        [go.path, "run", "-buildvcs=false", "./gostructs"],
        cwd=kuberay_hash.TOOLS,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    committed = Path(gostructs.__file__).read_text()
    assert generated == committed, (
        "regenerate: cd tools/kuberay && go run ./gostructs > ../../src/raykube/golang/gostructs.py"
    )

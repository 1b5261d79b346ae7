"""RayCluster specs for comparing raykube's cluster_spec_hash with KubeRay's: KubeRay's samples, and strategies.

Shared by tests/integration/test_kuberay_hash.py (live, against KubeRay v1.6.1's function), tools/kuberay/generate.py
(which writes KubeRay v1.7.0's answers into tests/vectors/kuberay_hash_v170.json) and
tests/unit/test_kuberay_hash_v170.py (which compares raykube with those answers).

* :func:`sample_specs`: every RayClusterSpec in a KubeRay ``config/samples`` folder (RayClusters, and the cluster specs
  of RayJob, RayCronJob and RayService samples), named ``<file>#<index>``; :func:`input_sha256` names a spec without
  its text (the vectors file keys sample cases by it, so it holds none of KubeRay's sample content);
  :func:`with_priority_default` is a spec as the API server serves it under v1.7.0's CRD, which defaults
  ``workerGroupSpecs[].priority`` to 0.
* :data:`SPEC_V161`: generated specs with only what KubeRay v1.6.1's types hold, stressing the Go encoding (quantities
  in odd forms, empty versus absent versus null lists and maps, HTML characters and unicode, int-or-string ports,
  unknown fields, suspend, autoscalerOptions, gcsFaultToleranceOptions, headService). :data:`SPEC_V170` adds what
  v1.7.0 added: ``workerGroupSpecs[].priority`` (absent, null, 0, negative), ``networkPolicy`` (rules with int, named
  and numeric-text ports, endPort, peers), ``tlsOptions``, ``historyServerOptions``, ``gcsFaultToleranceOptions``
  ``backend`` and ``storage`` (sizes in odd forms, pointers to empty strings), ``autoscalerOptions.command``/``args``
  and ``headGroupSpec.ingressOptions`` (``pathType``, ``tls``).
  :data:`SPEC_V170_ADDED` is only those, every part present, so that their deep parts are reached often.
* :func:`served` is a spec's JSON as the API server serves it, :func:`raykube_hashes` raykube's two hashes of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import yaml
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.builders.spechash import cluster_spec_hash
from raykube.golang.gojson import json_marshal

# ---------------------------------------------------------------------------------------------------- the hashes


def served(spec: dict[str, Any]) -> str:
    """The spec as the API server serves it: Go's JSON (its float format, invalid UTF-8 replaced). Keys stay in the
    order given, which is not sorted, so that the map sorting of the encoders is put to the test too."""
    return json_marshal(spec, sort_keys=False)


def raykube_hashes(text: str) -> tuple[str, str]:
    """raykube's two hashes of a served spec, read as the operator reads a RayCluster: as read (the RayService
    controller's value) and after setDefaults (the RayCluster controller's)."""
    model = RayClusterSpec.model_validate(json.loads(text))
    return cluster_spec_hash(model, defaulted=False), cluster_spec_hash(model)


# ---------------------------------------------------------------------------------------------------- samples


def cluster_specs(doc: Any) -> Iterator[dict[str, Any]]:
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
                yield from cluster_specs(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from cluster_specs(item)


def sample_specs(samples: Path) -> list[tuple[str, dict[str, Any]]]:
    """``(<file relative to samples>#<index>, spec)`` for every cluster spec of every YAML file under ``samples``."""
    found = []
    for path in sorted(samples.rglob("*.yaml")):
        try:
            docs = [json.loads(json.dumps(d, default=str)) for d in yaml.safe_load_all(path.read_text()) if d]
        except yaml.YAMLError:
            continue  # a Helm template or the like, not a manifest
        for index, spec in enumerate(s for d in docs for s in cluster_specs(d)):
            found.append((f"{path.relative_to(samples).as_posix()}#{index}", spec))
    return found


def input_sha256(spec: dict[str, Any]) -> str:
    """The sha256 of a spec's canonical JSON (keys sorted, no spaces, non-ASCII escaped): the same spec in two
    releases' samples has the same digest whatever the YAML looked like."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def with_priority_default(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The spec as KubeRay v1.7.0's CRD makes the API server serve it: ``priority: 0`` in every worker group without
    one (a structural default, applied to objects stored before the CRD had it too). None when that changes nothing
    (no worker group lacks a priority)."""
    groups = spec.get("workerGroupSpecs")
    if not isinstance(groups, list) or not any(isinstance(g, dict) and "priority" not in g for g in groups):
        return None
    copy = json.loads(json.dumps(spec))
    copy["workerGroupSpecs"] = [
        {**group, "priority": 0} if isinstance(group, dict) and "priority" not in group else group
        for group in copy["workerGroupSpecs"]
    ]
    return copy


# ---------------------------------------------------------------------------------------------------- strategies
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
_MATCH_EXPRESSIONS = _LIST(
    _obj({"key": _KEY, "operator": st.sampled_from(["In", "NotIn", "Exists"])}, {"values": _LIST(_TEXT)})
)
_NODE_SELECTOR_TERM = _obj({}, {"matchExpressions": _MATCH_EXPRESSIONS})
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
_CREDENTIAL = _obj({}, {"value": _TEXT, "valueFrom": _maybe(_ENV_SOURCE)})
_AUTOSCALER_V161 = {
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
}
_HEAD_V161 = {
    "rayStartParams": _RAY_PARAMS,
    "serviceType": st.sampled_from(["ClusterIP", "NodePort", ""]),
    "enableIngress": _maybe(st.booleans()),
    "resources": _MAP(_TEXT),
    "labels": _MAP(_TEXT),
    "headService": _maybe(_HEAD_SERVICE),
}
_WORKER_V161 = {
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
}
_GCS_FT_V161 = {
    "redisUsername": _maybe(_CREDENTIAL),
    "redisPassword": _maybe(_CREDENTIAL),
    "externalStorageNamespace": _maybe(_TEXT),
}
_SPEC_V161 = {
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
}

# KubeRay v1.6.1's RayClusterSpec. redisAddress is never empty here: v1.6.1's Go field has no omitempty and v1.7.0's
# has, so an empty one is hashed differently by the two (tests/integration/test_kuberay_hash.py shows it).
SPEC_V161 = _obj(
    {"headGroupSpec": _obj({"template": _TEMPLATE}, _HEAD_V161)},
    {
        "workerGroupSpecs": _LIST(_obj({"groupName": _NAME, "template": _TEMPLATE}, _WORKER_V161)),
        **_SPEC_V161,
        "autoscalerOptions": _maybe(_obj({}, _AUTOSCALER_V161)),
        "gcsFaultToleranceOptions": _maybe(_obj({"redisAddress": _TEXT.filter(bool)}, _GCS_FT_V161)),
    },
)

# What v1.7.0 added. Its structures nest deep (networkPolicy.head.ingressRules[].ports[].port), so lists here are
# mostly non-empty and the ports mostly have a port, for the depths to be reached often.
_OPTIONAL_TEXT = _maybe(st.one_of(_TEXT, st.just("")))  # a *string: null/absent, "" (kept by omitempty), text
_PRIORITY = _maybe(st.one_of(st.just(0), st.integers(-5, 5), st.sampled_from([-(2**31), 2**31 - 1, -1, 100])))
_SOME = lambda item: st.one_of(  # noqa: E731 - a strategy shorthand
    st.lists(item, min_size=1, max_size=3), st.lists(item, min_size=1, max_size=2), st.none(), st.just([])
)
_SELECTOR = _obj({}, {"matchLabels": _MAP(_TEXT), "matchExpressions": _MATCH_EXPRESSIONS})
_PEER = _obj(
    {},
    {
        "podSelector": _maybe(_SELECTOR),
        "namespaceSelector": _maybe(_SELECTOR),
        "ipBlock": _maybe(
            _obj({"cidr": st.sampled_from(["10.0.0.0/8", "192.168.1.0/24", "::/0", ""])}, {"except": _LIST(_TEXT)})
        ),
    },
)
# int, named, a number written as text, 0, the empty name: intstr keeps each as given; null and absent are nil.
_PORT = st.one_of(_INT_OR_STRING, st.sampled_from([0, 6379, "6379", "redis", "dashboard", 65535]))
_PORT_OPTIONS = {
    "protocol": _maybe(st.sampled_from(["TCP", "UDP", "SCTP", ""])),
    "endPort": _maybe(st.one_of(st.integers(0, 65535), st.just(0))),
}
_POLICY_PORT = st.one_of(
    _obj({"port": _PORT}, _PORT_OPTIONS),
    _obj({"port": _PORT}, _PORT_OPTIONS),
    _obj({}, {"port": _maybe(_PORT), **_PORT_OPTIONS}),
)
_INGRESS_RULE = _obj({}, {"ports": _SOME(_POLICY_PORT), "from": _SOME(_PEER)})
_EGRESS_RULE = _obj({}, {"ports": _SOME(_POLICY_PORT), "to": _SOME(_PEER)})
_POLICY_RULES = {"ingressRules": _SOME(_INGRESS_RULE), "egressRules": _SOME(_EGRESS_RULE)}
_NETWORK_POLICY = _obj(
    {},
    {
        "mode": _maybe(st.sampled_from(c.NETWORK_POLICY_MODES)),
        "head": _maybe(_obj({}, _POLICY_RULES)),
        "worker": _maybe(_obj({}, _POLICY_RULES)),
        "workerGroups": _SOME(_obj({"groupName": _NAME}, _POLICY_RULES)),
    },
)
# Sizes in the odd forms too: kept as written ("1.500", "1E3"), made canonical ("1024Mi"), numbers, zero.
_SIZE = _maybe(st.one_of(_QUANTITY, st.sampled_from(["1Gi", "1024Mi", "0", "0Gi", "1.500", "1E3", "10G"])))
_STORAGE_OPTIONS = {
    "claimName": _maybe(st.one_of(_NAME, st.just(""))),
    "storageClassName": _OPTIONAL_TEXT,
    "accessModes": _LIST(st.sampled_from(["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"])),
    "subPath": _maybe(_TEXT),
    "deletionPolicy": _maybe(st.sampled_from(c.GCS_STORAGE_DELETION_POLICIES)),
}
_STORAGE = st.one_of(_obj({"size": _SIZE}, _STORAGE_OPTIONS), _obj({}, {"size": _SIZE, **_STORAGE_OPTIONS}))
_COLLECTOR = _obj(
    {},
    {
        "image": _OPTIONAL_TEXT,
        "imagePullPolicy": _maybe(st.sampled_from(["Always", "IfNotPresent", ""])),
        "resources": _maybe(_RESOURCES),
        "env": _LIST(_ENV),
    },
)
_INGRESS_OPTIONS = _obj(
    {},
    {
        "host": _OPTIONAL_TEXT,
        "path": _OPTIONAL_TEXT,
        "pathType": _maybe(st.sampled_from(c.INGRESS_PATH_TYPES)),
        "tls": _LIST(_obj({}, {"hosts": _LIST(_NAME), "secretName": _maybe(_NAME)})),
    },
)

# KubeRay v1.7.0's RayClusterSpec: v1.6.1's and what v1.7.0 added.
SPEC_V170 = _obj(
    {"headGroupSpec": _obj({"template": _TEMPLATE}, {**_HEAD_V161, "ingressOptions": _maybe(_INGRESS_OPTIONS)})},
    {
        "workerGroupSpecs": _LIST(
            st.one_of(
                _obj({"groupName": _NAME, "template": _TEMPLATE, "priority": _PRIORITY}, _WORKER_V161),
                _obj({"groupName": _NAME, "template": _TEMPLATE}, {**_WORKER_V161, "priority": _PRIORITY}),
            )
        ),
        **_SPEC_V161,
        "autoscalerOptions": _maybe(_obj({}, {**_AUTOSCALER_V161, "command": _LIST(_TEXT), "args": _LIST(_TEXT)})),
        "gcsFaultToleranceOptions": _maybe(
            _obj(
                {},
                {
                    "backend": _maybe(st.sampled_from(c.GCS_FT_BACKENDS)),
                    "redisAddress": _maybe(_TEXT),
                    **_GCS_FT_V161,
                    "storage": _maybe(_STORAGE),
                },
            )
        ),
        "networkPolicy": _maybe(_NETWORK_POLICY),
        "tlsOptions": _maybe(_obj({}, {"enabled": _maybe(st.booleans())})),
        "historyServerOptions": _maybe(_obj({}, {"collectorOptions": _maybe(_COLLECTOR)})),
    },
)

# Only what v1.7.0 added, every part present, around small head and worker templates: the deep parts (the ports of a
# rule of a worker group's policy) are reached far more often than in SPEC_V170.
_SMALL_TEMPLATE = _obj({}, {"spec": _obj({"containers": st.lists(_obj({"name": _NAME}, {}), max_size=1)}, {})})
_DENSE_RULE = lambda peers: _obj(  # noqa: E731 - a strategy shorthand
    {"ports": st.lists(_POLICY_PORT, min_size=1, max_size=3)}, {peers: _SOME(_PEER)}
)
_DENSE_RULES = {
    "ingressRules": st.lists(_DENSE_RULE("from"), min_size=1, max_size=2),
    "egressRules": st.lists(_DENSE_RULE("to"), min_size=1, max_size=2),
}
SPEC_V170_ADDED = _obj(
    {
        "headGroupSpec": _obj({"template": _SMALL_TEMPLATE, "ingressOptions": _INGRESS_OPTIONS}, {}),
        "workerGroupSpecs": st.lists(
            _obj({"groupName": _NAME, "template": _SMALL_TEMPLATE, "priority": _PRIORITY}, {}), min_size=1, max_size=3
        ),
        "networkPolicy": _obj(
            {"head": _obj(_DENSE_RULES, {}), "worker": _obj(_DENSE_RULES, {})},
            {
                "mode": _maybe(st.sampled_from(c.NETWORK_POLICY_MODES)),
                "workerGroups": st.lists(_obj({"groupName": _NAME, **_DENSE_RULES}, {}), min_size=1, max_size=2),
            },
        ),
        "gcsFaultToleranceOptions": _obj(
            {"backend": _maybe(st.sampled_from(c.GCS_FT_BACKENDS)), "storage": _STORAGE},
            {"redisAddress": _maybe(_TEXT)},
        ),
        "tlsOptions": _obj({"enabled": _maybe(st.booleans())}, {}),
        "historyServerOptions": _obj({"collectorOptions": _COLLECTOR}, {}),
        "autoscalerOptions": _obj({"command": _LIST(_TEXT), "args": _LIST(_TEXT)}, {}),
    },
    {},
)


# ---------------------------------------------------------------------------------------------------- the draws

# How many specs tools/kuberay/generate.py draws from each strategy, and the seed: the vectors file holds these draws,
# and tests/unit/test_kuberay_hash_v170.py checks that it still does (a change to a strategy, or to a constant one
# reads, changes them: regenerate the file).
STRATEGIES = {"SPEC_V170": 600, "SPEC_V170_ADDED": 200, "SPEC_V161": 200}
SEED = 170


class _Enough(Exception):  # not an error: the draws asked for are in
    pass


def draw(
    strategy: st.SearchStrategy[dict[str, Any]], count: int, salt: int, first: int | None = None
) -> list[dict[str, Any]]:
    """``count`` distinct specs (by their served text) drawn from ``strategy``, the same ones on every run; with
    ``first``, only the first ``first`` of them (the same settings, the run stopped once they are in: Hypothesis's
    draws depend on ``max_examples``, so a smaller ``count`` would draw other specs).

    Hypothesis mixes into what it draws the literals of every non-library module the process has imported (its "local
    constants"), so a seed alone draws differently after any edit anywhere in raykube or the tests, and differently
    under pytest than under the generator. The draws here see none: the same specs for a seed, whatever is loaded.
    (A Hypothesis internal, pinned by uv.lock; patching it fails loudly if a new release renames it.)
    """
    found: dict[str, dict[str, Any]] = {}

    @seed(SEED * 1000 + salt)
    @settings(
        max_examples=count * 2,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
            HealthCheck.large_base_example,
        ],
    )
    @given(spec=strategy)
    def collect(spec: dict[str, Any]) -> None:
        if len(found) < count:
            found.setdefault(served(spec), spec)
        if first is not None and len(found) >= first:
            raise _Enough

    with mock.patch.object(providers, "_get_local_constants", Constants):
        providers.CONSTANTS_CACHE.cache.clear()
        try:
            collect()
        except _Enough:
            return list(found.values())[:first]
        finally:
            providers.CONSTANTS_CACHE.cache.clear()
    if len(found) < count:
        raise SystemExit(f"drew only {len(found)} distinct specs of {count}")
    return list(found.values())


def drawn(first: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every strategy's draws, by strategy name (the spec cases of tests/vectors/kuberay_hash_v170.json); with
    ``first``, the first ``first`` of each."""
    strategies = enumerate(STRATEGIES.items(), start=1)
    return {name: draw(globals()[name], count, salt, first) for salt, (name, count) in strategies}

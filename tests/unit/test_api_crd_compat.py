"""Every manifest KubeRay v1.6.1's CRDs accept, ours (KubeRay v1.7.0's, see test_api_crd_v170.py) accept too, with
the same defaults: a v1.6 user's YAML keeps working.

For each version of each upstream CRD (``config/crd/bases`` of the ray-operator module, fetched into the cache by
``raykube.sandbox.reference``, never copied here) every field path must exist in ours with the same type and format,
the same default, no new ``required``, no narrower enum, no stricter bound or pattern, no extra CEL rule, and the
same served/storage flags, subresources and printer columns.
The deliberate differences are listed below with their reasons; anything else fails the test.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from raykube.api.crd import load_generated
from tests.support import KUBERAY_V161

UPSTREAM = KUBERAY_V161 / "crd"
# Our file names (config/crd/); upstream's are the same with a "ray.io_" prefix (controller-gen's <group>_<plural>).
CRD_FILES = ("rayclusters.yaml", "rayjobs.yaml", "rayservices.yaml", "raycronjobs.yaml")

# Deliberate differences, each with its reason. A path matches if it ends with the key.
MISSING_ON_PURPOSE = {
    # PodSpec.workloadRef was an alpha field of Kubernetes 1.35 (gang scheduling); 1.36 replaced it with
    # schedulingGroup. Our embedded types are Kubernetes v1.36.3's, and a 1.36 API server rejects it on Pods anyway.
    "spec.workloadRef": "alpha PodSpec field removed in Kubernetes 1.36",
    "spec.workloadRef.name": "alpha PodSpec field removed in Kubernetes 1.36",
    "spec.workloadRef.podGroup": "alpha PodSpec field removed in Kubernetes 1.36",
    "spec.workloadRef.podGroupReplicaKey": "alpha PodSpec field removed in Kubernetes 1.36",
}
EXTRA_DEFAULTS_ON_PURPOSE = {
    # Kubernetes 1.36 declares these defaults (+default markers); KubeRay 1.6.1 was generated from an older
    # k8s.io/api. The API server applies the same defaults to the Pod the volume ends up in.
    "azureDisk.cachingMode": "ReadWrite",
    "azureDisk.kind": "Shared",
}
# Keywords where upstream may be stricter than us (we accept more): fine for "everything upstream accepts".
LOOSER_OK = {"pattern", "maxLength", "minLength", "minimum", "maximum", "maxItems", "minItems", "enum"}
# x-kubernetes-map-type only changes how server-side apply merges; Kubernetes 1.36's OpenAPI no longer marks
# EnvFromSource.configMapRef/secretRef atomic.
SSA_ONLY = {"x-kubernetes-map-type"}
COMPARED = (
    "type",
    "format",
    "default",
    "anyOf",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-validations",
    *sorted(LOOSER_OK),
    *sorted(SSA_ONLY),
)


def flatten(node: dict[str, Any], path: str = "", required: bool = False) -> Iterator[tuple[str, dict[str, Any]]]:
    facts = {k: node[k] for k in COMPARED if k in node}
    facts["required"] = required
    yield path, facts
    needed = set(node.get("required", ()))
    for name, child in node.get("properties", {}).items():
        yield from flatten(child, f"{path}.{name}" if path else name, name in needed)
    if isinstance(node.get("items"), dict):
        yield from flatten(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from flatten(node["additionalProperties"], f"{path}{{}}")


def differences(upstream: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    theirs = dict(flatten(upstream))
    mine = dict(flatten(ours))
    problems = []
    for path, up in theirs.items():
        if path not in mine:
            if not any(path.endswith(key) for key in MISSING_ON_PURPOSE):
                problems.append(f"{path}: missing")
            continue
        have = mine[path]
        if have["required"] and not up["required"]:
            problems.append(f"{path}: required here only")
        for key in COMPARED:
            if up.get(key) == have.get(key):
                continue
            if key in SSA_ONLY:
                continue
            if key in LOOSER_OK and key not in have:
                continue
            if key == "enum" and set(up["enum"]) <= set(have["enum"]):
                continue
            if key == "x-kubernetes-validations" and all(r in up.get(key, []) for r in have.get(key, [])):
                continue
            if key == "default" and "default" not in up:
                expected = next((v for k, v in EXTRA_DEFAULTS_ON_PURPOSE.items() if path.endswith(k)), None)
                if expected == have["default"]:
                    continue
            problems.append(f"{path}: {key} is {have.get(key)!r} here, {up.get(key)!r} upstream")
    return problems


def _versions(crd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in crd["spec"]["versions"]}


@functools.cache
def upstream_crd(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load((UPSTREAM / f"ray.io_{name}").read_text(), Loader=yaml.CSafeLoader)
    return loaded


OURS = load_generated()
UPSTREAM_VERSIONS = [(name, v["name"]) for name in CRD_FILES for v in upstream_crd(name)["spec"]["versions"]]


@pytest.mark.parametrize("name", CRD_FILES)
def test_names_scope_and_categories_match_upstream(name: str) -> None:
    upstream = upstream_crd(name)
    ours = OURS[name]
    assert ours["metadata"]["name"] == upstream["metadata"]["name"]
    assert ours["spec"]["group"] == upstream["spec"]["group"]
    assert ours["spec"]["scope"] == upstream["spec"]["scope"]
    assert ours["spec"]["names"] == upstream["spec"]["names"]


@pytest.mark.parametrize("name", CRD_FILES)
def test_versions_subresources_and_printer_columns_match_upstream(name: str) -> None:
    upstream = _versions(upstream_crd(name))
    ours = _versions(OURS[name])
    assert set(ours) == set(upstream)
    for version, theirs in upstream.items():
        mine = ours[version]
        for key in ("served", "storage", "subresources", "additionalPrinterColumns"):
            if (name, key) == ("raycronjobs.yaml", "additionalPrinterColumns"):
                continue  # v1.7.0 added a timezone column and typed "last schedule" as a date
            assert mine.get(key) == theirs.get(key), f"{name} {version} {key}"


@pytest.mark.parametrize(("name", "version"), UPSTREAM_VERSIONS)
def test_everything_upstream_accepts_we_accept(name: str, version: str) -> None:
    upstream = _versions(upstream_crd(name))
    ours = _versions(OURS[name])[version]["schema"]["openAPIV3Schema"]
    assert differences(upstream[version]["schema"]["openAPIV3Schema"], ours) == []


def test_the_comparison_catches_a_stricter_schema() -> None:
    upstream = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 1}}}
    ours = {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "string", "maxLength": 3}, "b": {"type": "integer", "default": 2}},
    }
    assert differences(upstream, ours) == [
        "a: required here only",
        "a: maxLength is 3 here, None upstream",
        "b: default is 2 here, 1 upstream",
    ]
    assert differences(upstream, {"type": "object", "properties": {}}) == ["a: missing", "b: missing"]


def test_rayservice_requires_its_cluster_in_v1_but_not_in_v1alpha1_as_kuberay_does() -> None:
    versions = _versions(OURS["rayservices.yaml"])
    assert "rayClusterConfig" in versions["v1"]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"]
    assert "required" not in versions["v1alpha1"]["schema"]["openAPIV3Schema"]["properties"]["spec"]

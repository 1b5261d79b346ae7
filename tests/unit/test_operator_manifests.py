"""The checked-in operator manifests (config/operator/, the chart's default render) and how ``raykube install``
moves them to another namespace. Freshness against a real ``helm template`` is an integration test."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api import rbac
from raykube.deploy.manifests import RENDER_NAMESPACE, describe, load_manifests, manifests_dir, retarget


def _by_kind(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        kinds.setdefault(obj["kind"], []).append(obj)
    return kinds


@pytest.fixture(scope="module")
def manifests() -> list[dict[str, Any]]:
    return load_manifests()


def test_the_default_install_is_what_kuberay_installs(manifests: list[dict[str, Any]]) -> None:
    kinds = _by_kind(manifests)
    assert sorted(kinds) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ]
    names = {(obj["kind"], obj["metadata"]["name"]) for obj in manifests}
    assert ("Deployment", "kuberay-operator") in names
    assert ("ClusterRole", "kuberay-operator") in names
    assert ("Role", "kuberay-operator-leader-election") in names
    assert all(
        obj["metadata"].get("namespace") == RENDER_NAMESPACE
        for obj in manifests
        if obj["kind"] not in {"ClusterRole", "ClusterRoleBinding"}
    )


def test_the_rules_are_the_operators_own(manifests: list[dict[str, Any]]) -> None:
    kinds = _by_kind(manifests)
    assert kinds["ClusterRole"][0]["rules"] == rbac.policy_rules(rbac.OPERATOR_RULES)
    assert kinds["Role"][0]["rules"] == rbac.policy_rules(rbac.LEADER_ELECTION_RULES)


def test_objects_are_applied_after_what_they_refer_to(manifests: list[dict[str, Any]]) -> None:
    order = [obj["kind"] for obj in manifests]
    assert order.index("ServiceAccount") < order.index("ClusterRoleBinding") < order.index("Deployment")
    assert order.index("ClusterRole") < order.index("ClusterRoleBinding")
    assert order[-1] == "Deployment"


def test_retarget_moves_every_namespace_reference(manifests: list[dict[str, Any]]) -> None:
    moved = retarget(manifests, "ray-system", image="registry.example/raykube:dev")
    for obj in moved:
        if obj["kind"] in {"ClusterRole", "ClusterRoleBinding"}:
            assert "namespace" not in obj["metadata"]
        else:
            assert obj["metadata"]["namespace"] == "ray-system", describe(obj)
        for subject in obj.get("subjects", []):
            assert subject["namespace"] == "ray-system"
    deployment = next(obj for obj in moved if obj["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "--leader-election-namespace=ray-system" in container["args"]
    assert container["image"] == "registry.example/raykube:dev"
    # The originals are untouched.
    assert all(obj["metadata"].get("namespace") in {None, RENDER_NAMESPACE} for obj in manifests)


def test_retarget_rewrites_the_watched_namespace_only_where_it_is_the_old_one() -> None:
    deployment = {
        "kind": "Deployment",
        "metadata": {"name": "op", "namespace": RENDER_NAMESPACE},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "kuberay-operator",
                            "args": [f"--watch-namespace={RENDER_NAMESPACE},team-a", "--qps=5"],
                        }
                    ]
                }
            }
        },
    }
    (moved,) = retarget([deployment], "ops")
    assert moved["spec"]["template"]["spec"]["containers"][0]["args"] == ["--watch-namespace=ops,team-a", "--qps=5"]


def test_the_manifests_are_found_in_a_checkout() -> None:
    assert (manifests_dir() / "deployment.yaml").is_file()

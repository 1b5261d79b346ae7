"""The embedded (rocksdb) GCS fault-tolerance backend's Pod wiring and claim, against KubeRay v1.7.0
(``common/pod.go`` ``configureEmbeddedFT``, ``common/gcs_ft.go`` ``BuildGCSStoragePVC``, ``raycluster_controller.go``
``gcsStoragePVCDrift`` and ``reconcileGCSStoragePVCOwnerRef``; inventory POD-7, RC-5)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.raycluster import RedisCredential
from raykube.api.resources import RayCluster
from raykube.builders import gcs_storage, pods
from raykube.builders.options import BuildOptions

NS, NAME, UID = "team", "demo", "cluster-uid"
OPTIONS = BuildOptions(features={**BuildOptions().features, c.GATE_GCS_FT_EMBEDDED_STORAGE: True})


def _container(name: str, env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "image": "rayproject/ray:2.52.0"}
    if env is not None:
        body["env"] = env
    return body


def cluster(storage: dict[str, Any] | None = None, *, head_env: list[dict[str, Any]] | None = None) -> RayCluster:
    ft: dict[str, Any] = {"backend": "rocksdb"}
    if storage is not None:
        ft["storage"] = storage
    return RayCluster.model_validate(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": NAME, "namespace": NS, "uid": UID},
            "spec": {
                "gcsFaultToleranceOptions": ft,
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [_container("ray-head", head_env)]}},
                },
                "workerGroupSpecs": [
                    {
                        "groupName": "workers",
                        "replicas": 1,
                        "rayStartParams": {},
                        "template": {"spec": {"containers": [_container("ray-worker")]}},
                    }
                ],
            },
        }
    )


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in container.get("env") or []}


# ----------------------------------------------------------------------------------------------------- head Pod


def test_the_head_gets_the_rocksdb_env_mount_and_claim_and_nothing_of_redis() -> None:
    head = pods.head_pod(cluster(), OPTIONS)
    ray = head["spec"]["containers"][0]
    env = _env(ray)
    assert env[c.RAY_GCS_STORAGE] == "rocksdb"
    assert env[c.RAY_GCS_STORAGE_PATH] == "/data/gcs"
    for redis in (c.RAY_REDIS_ADDRESS, c.RAY_EXTERNAL_STORAGE_NAMESPACE_ENV, c.REDIS_PASSWORD, c.REDIS_USERNAME):
        assert redis not in env
    annotations = head["metadata"]["annotations"]
    assert annotations[c.RAY_FT_ENABLED_ANNOTATION] == "true"
    assert c.RAY_EXTERNAL_STORAGE_NS_ANNOTATION not in annotations
    assert {"name": "gcs-storage", "mountPath": "/data/gcs"} in ray["volumeMounts"]
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": "demo-gcs-pvc"}} in head["spec"]["volumes"]
    # The Ray start flags carry no Redis credentials either.
    assert "redis" not in " ".join(ray["args"])


def test_a_users_claim_and_sub_path_are_what_the_head_mounts() -> None:
    head = pods.head_pod(cluster({"claimName": "shared-gcs", "subPath": "cluster-a"}), OPTIONS)
    ray = head["spec"]["containers"][0]
    assert {"name": "gcs-storage", "mountPath": "/data/gcs", "subPath": "cluster-a"} in ray["volumeMounts"]
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": "shared-gcs"}} in head["spec"]["volumes"]


def test_the_env_is_added_only_where_absent() -> None:
    """configureEmbeddedFT appends each variable only if the container lacks it (validation refuses a user's, but
    the builder does not overwrite)."""
    head = pods.head_pod(cluster(head_env=[{"name": c.RAY_GCS_STORAGE_PATH, "value": "/elsewhere"}]), OPTIONS)
    env = head["spec"]["containers"][0]["env"]
    assert [e.get("value") for e in env if e["name"] == c.RAY_GCS_STORAGE_PATH] == ["/elsewhere"]
    assert [e.get("value") for e in env if e["name"] == c.RAY_GCS_STORAGE] == ["rocksdb"]


def test_workers_keep_the_gcs_reconnect_timeout_and_get_no_volume() -> None:
    worker = pods.worker_pod(cluster(), 0, OPTIONS, replica_index=0)
    ray = worker["spec"]["containers"][0]
    assert _env(ray)[c.RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_ENV] == c.DEFAULT_WORKER_GCS_RECONNECT_TIMEOUT_S
    assert c.RAY_GCS_STORAGE not in _env(ray)
    assert all(v["name"] != "gcs-storage" for v in worker["spec"].get("volumes") or [])


def test_the_input_model_is_not_changed() -> None:
    model = cluster({"subPath": "x"})
    before = copy.deepcopy(model.model_dump())
    pods.head_pod(model, OPTIONS)
    assert model.model_dump() == before


# ----------------------------------------------------------------------------------------------------- the claim


def test_the_operators_claim_defaults() -> None:
    assert gcs_storage.pvc(cluster()) == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "demo-gcs-pvc", "namespace": NS, "labels": {"ray.io/cluster": NAME}},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }


def test_the_operators_claim_from_storage() -> None:
    storage = {"size": "5Gi", "storageClassName": "fast", "accessModes": ["ReadWriteMany"], "deletionPolicy": "Retain"}
    body = gcs_storage.pvc(cluster(storage))
    assert body["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "fast",
        "resources": {"requests": {"storage": "5Gi"}},
    }
    assert "ownerReferences" not in body["metadata"]  # the caller decides
    assert gcs_storage.retain_on_deletion(cluster(storage))
    assert not gcs_storage.retain_on_deletion(cluster({"deletionPolicy": "DeleteWithCluster"}))


def test_which_clusters_use_the_embedded_store() -> None:
    assert gcs_storage.embedded(cluster().spec)
    redis = cluster().model_copy(deep=True)
    assert redis.spec is not None and redis.spec.gcs_fault_tolerance_options is not None
    redis.spec.gcs_fault_tolerance_options.backend = None
    assert not gcs_storage.embedded(redis.spec)
    assert gcs_storage.users_claim(cluster({"claimName": "x"}))
    assert not gcs_storage.users_claim(cluster({"size": "1Gi"}))


def _live(spec: dict[str, Any], refs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "demo-gcs-pvc", "namespace": NS, "resourceVersion": "7"}
    if refs is not None:
        meta["ownerReferences"] = refs
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


LIVE_DEFAULT = {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                "resources": {"requests": {"storage": "1Gi"}}}  # fmt: skip


@pytest.mark.parametrize(
    ("storage", "live_spec", "drift"),
    [
        # nil storageClassName is not compared (the API server writes the default class in); 1Gi == 1073741824
        ({}, LIVE_DEFAULT, ""),
        ({}, {**LIVE_DEFAULT, "resources": {"requests": {"storage": "1073741824"}}}, ""),
        (
            {"accessModes": ["ReadWriteMany", "ReadOnlyMany"]},
            {**LIVE_DEFAULT, "accessModes": ["ReadOnlyMany", "ReadWriteMany"]},
            "",
        ),
        ({"size": "2Gi"}, LIVE_DEFAULT, "requested size 2Gi != current 1Gi"),
        ({"storageClassName": "fast"}, LIVE_DEFAULT, "storageClassName fast != current standard"),
        (
            {"storageClassName": "fast"},
            {k: v for k, v in LIVE_DEFAULT.items() if k != "storageClassName"},
            "storageClassName fast != current <default>",
        ),
        (
            {"size": "500Mi", "storageClassName": "fast", "accessModes": ["ReadWriteOnce", "ReadWriteMany"]},
            LIVE_DEFAULT,
            "requested size 500Mi != current 1Gi; storageClassName fast != current standard; "
            "accessModes [ReadWriteOnce ReadWriteMany] != current [ReadWriteOnce]",
        ),
        (
            {},
            {"accessModes": [], "resources": {}},
            "requested size 1Gi != current 0; accessModes [ReadWriteOnce] != current []",
        ),
    ],
)
def test_drift_names_what_cannot_change_in_place_in_v170s_words(
    storage: dict[str, Any], live_spec: dict[str, Any], drift: str
) -> None:
    model = cluster(storage)
    assert gcs_storage.pvc_drift(gcs_storage.pvc(model), _live(live_spec)) == drift


OWN_REF = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": NAME, "uid": UID, "controller": True,
           "blockOwnerDeletion": True}  # fmt: skip
OTHER_REF = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "x", "controller": True}


@pytest.mark.parametrize(
    ("policy", "refs", "wanted"),
    [
        (None, [], [OWN_REF]),
        (None, [OWN_REF], None),
        (
            "DeleteWithCluster",
            [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c"}],
            [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c"}, OWN_REF],
        ),
        # an earlier cluster of the same name (another uid) is replaced, as SetControllerReference does
        (None, [{**OWN_REF, "uid": "old"}], [OWN_REF]),
        ("Retain", [], None),
        ("Retain", [OWN_REF], []),
        ("Retain", [{**OWN_REF, "controller": False}], None),
    ],
)
def test_the_owner_reference_follows_the_deletion_policy(
    policy: str | None, refs: list[dict[str, Any]], wanted: list[dict[str, Any]] | None
) -> None:
    model = cluster({"deletionPolicy": policy} if policy else None)
    live = _live(LIVE_DEFAULT, refs)
    body = gcs_storage.owned_as_wanted(model, live)
    if wanted is None:
        assert body is None
    else:
        assert body is not None and body["metadata"]["ownerReferences"] == wanted
        assert body["metadata"]["resourceVersion"] == "7"  # an Update of what was read
        assert body["spec"] == live["spec"]


def test_a_claim_another_controller_owns_is_not_taken() -> None:
    with pytest.raises(gcs_storage.OwnershipError, match="team/demo-gcs-pvc is already owned by another StatefulSet"):
        gcs_storage.owned_as_wanted(cluster(), _live(LIVE_DEFAULT, [OTHER_REF]))


def test_redis_settings_are_not_wired_for_the_embedded_backend() -> None:
    """Validation refuses Redis fields with rocksdb; the builder, as configureGCSFaultTolerance, never reaches the
    Redis branch for it either (no REDIS_PASSWORD env, no ``--redis-password`` flag)."""
    model = cluster()
    assert model.spec is not None and model.spec.gcs_fault_tolerance_options is not None
    model.spec.gcs_fault_tolerance_options.redis_password = RedisCredential(value="secret")
    ray = pods.head_pod(model, OPTIONS)["spec"]["containers"][0]
    assert c.REDIS_PASSWORD not in _env(ray)
    assert "redis-password" not in " ".join(ray["args"])

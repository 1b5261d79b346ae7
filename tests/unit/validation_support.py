"""Valid minimal custom resources of the four kinds and the helpers the validation tests build on.

Each ``test_api_validation_<kind>.py`` holds the table of invalid objects of its kind (:data:`Case` rows: an id, the
kind, changes to the valid base, feature gates, every (path, message) expected); ``test_api_validation.py`` holds the
tests across kinds and the whole table.
"""

from __future__ import annotations

import copy
import itertools
import re
from typing import Any

import pytest

RAY_KINDS = ("RayCluster", "RayJob", "RayService", "RayCronJob")
CRON_ON = {"RayCronJob": True}

# (id, kind, changes to the valid base, feature gates, every (path, message) expected)
Case = tuple[str, str, dict[str, Any], dict[str, bool] | None, list[tuple[str, str]]]


# --- Valid minimal custom resources --------------------------------------------------------------------------------


def cluster_spec() -> dict[str, Any]:
    """A valid RayCluster spec: a head and two worker groups."""
    return {
        "rayVersion": "2.52.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "small-group",
                "replicas": 1,
                "minReplicas": 1,
                "maxReplicas": 5,
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}},
            },
            {
                "groupName": "gpu-group",
                "replicas": 0,
                "minReplicas": 0,
                "maxReplicas": 2,
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}},
            },
        ],
    }


def raycluster() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "raycluster-sample", "namespace": "default"},
        "spec": cluster_spec(),
    }


def rayjob() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rayjob-sample", "namespace": "default"},
        "spec": {"entrypoint": "python /home/ray/samples/sample_code.py", "rayClusterSpec": cluster_spec()},
    }


def rayservice() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {"name": "rayservice-sample", "namespace": "default"},
        "spec": {
            "serveConfigV2": "applications:\n  - name: app\n    import_path: app:deployment\n",
            "rayClusterConfig": cluster_spec(),
        },
    }


def raycronjob() -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "raycronjob-sample", "namespace": "default"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "entrypoint": "python /home/ray/samples/sample_code.py",
                "shutdownAfterJobFinishes": True,
                "rayClusterSpec": cluster_spec(),
            },
        },
    }


BASES = {"RayCluster": raycluster, "RayJob": rayjob, "RayService": rayservice, "RayCronJob": raycronjob}
DELETE = object()
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def mutated(kind: str, changes: dict[str, Any]) -> dict[str, Any]:
    """The valid base of ``kind`` with each ``path: value`` of ``changes`` applied (``DELETE`` removes the key)."""
    obj = BASES[kind]()
    for path, value in changes.items():
        keys: list[str | int] = [name if name else int(index) for name, index in _TOKEN.findall(path)]
        target: Any = obj
        for key, following in itertools.pairwise(keys):
            if isinstance(key, str) and key not in target:
                target[key] = [] if isinstance(following, int) else {}
            target = target[key]
        last = keys[-1]
        if value is DELETE:
            del target[last]
        else:
            target[last] = copy.deepcopy(value)
    return obj


def case_params(cases: list[Case]) -> list[Any]:
    """The rows of a table as ``(kind, changes, features, expected)`` parameters, each with its id."""
    return [
        pytest.param(kind, changes, features, expected, id=name) for name, kind, changes, features, expected in cases
    ]

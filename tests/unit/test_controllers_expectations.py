from __future__ import annotations

from raykube.builders.patch import merge_patch
from raykube.controllers.expectations import CREATE_TIMEOUT, ScaleExpectations

CLUSTER = ("ns", "c")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_created_pod_blocks_its_group_until_the_cache_shows_it() -> None:
    expectations = ScaleExpectations(Clock())
    expectations.expect_create(CLUSTER, "g", "p1")
    assert not expectations.satisfied(CLUSTER, "g", set())
    assert expectations.satisfied(CLUSTER, "other", set())
    assert expectations.satisfied(CLUSTER, "g", {"p1"})
    assert expectations.pending(CLUSTER) == 0


def test_a_create_expectation_expires_after_30_seconds() -> None:
    clock = Clock()
    expectations = ScaleExpectations(clock)
    expectations.expect_create(CLUSTER, "g", "p1")
    clock.now += CREATE_TIMEOUT - 1
    assert not expectations.satisfied(CLUSTER, "g", set())
    clock.now += 2
    assert expectations.satisfied(CLUSTER, "g", set())


def test_a_deleted_pod_blocks_its_group_until_the_cache_drops_it() -> None:
    expectations = ScaleExpectations(Clock())
    expectations.expect_delete(CLUSTER, "g", "p1")
    assert not expectations.satisfied(CLUSTER, "g", {"p1", "p2"})
    assert expectations.satisfied(CLUSTER, "g", {"p2"})


def test_forget_drops_a_cluster_or_one_group() -> None:
    expectations = ScaleExpectations(Clock())
    expectations.expect_create(CLUSTER, "g1", "a")
    expectations.expect_create(CLUSTER, "g2", "b")
    expectations.forget(CLUSTER, "g1")
    assert expectations.pending(CLUSTER) == 1
    expectations.forget(CLUSTER)
    assert expectations.pending(CLUSTER) == 0


def test_merge_patch_sets_changes_and_nulls_removals() -> None:
    old = {"state": "ready", "reason": "x", "head": {"podIP": "1", "podName": "h"}, "conditions": [{"a": 1}]}
    new = {"state": "ready", "head": {"podIP": "2", "podName": "h"}, "conditions": [{"a": 2}], "desiredCPU": "1"}
    assert merge_patch(old, new) == {
        "reason": None,
        "head": {"podIP": "2"},
        "conditions": [{"a": 2}],
        "desiredCPU": "1",
    }
    assert merge_patch(new, new) == {}
    assert merge_patch(None, {"a": 1}) == {"a": 1}

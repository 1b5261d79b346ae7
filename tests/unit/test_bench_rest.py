"""benchmarks.rest's pure parts: the comparison against KubeRay, its sizes, and what it reads of /proc."""

from __future__ import annotations

import argparse
import os
from typing import Any

import pytest
from benchmarks.rest import compare, context_switches, rss_mb, sizes_list


def run(cpu: float, voluntary: int, per_minute: float, rss: float) -> dict[str, Any]:
    return {"cpu_seconds": cpu, "wakeups": {"voluntary": voluntary}, "requests_per_minute": per_minute, "rss_mb": rss}


def test_raykube_is_compared_with_kuberay_and_the_targets_say_at_most_kuberays() -> None:
    got = compare({"raykube": run(1.0, 100, 6.0, 150.0), "kuberay-c1": run(2.0, 400, 6.0, 120.0)})
    assert got["cpu_to_kuberay"] == 0.5 and got["wakeups_to_kuberay"] == 0.25 and got["requests_to_kuberay"] == 1.0
    assert got["rss_to_kuberay"] == 1.25
    assert got["meets_target"] == {"cpu_to_kuberay": True, "rss_to_kuberay": False}


def test_a_kuberay_that_used_no_cpu_meets_no_target_and_one_contender_alone_is_not_compared() -> None:
    assert compare({"raykube": run(0.1, 1, 1.0, 1.0), "kuberay-c1": run(0.0, 0, 0.0, 1.0)})["meets_target"] == {
        "cpu_to_kuberay": False,
        "rss_to_kuberay": True,
    }
    assert compare({"raykube": run(1.0, 1, 1.0, 1.0)}) == {}


def test_sizes_are_counts_and_bad_ones_name_the_flag() -> None:
    assert sizes_list("0,100,1000") == [0, 100, 1000]
    for bad in ("", "a,b", "-1"):
        with pytest.raises(argparse.ArgumentTypeError, match="--clusters"):
            sizes_list(bad)


def test_this_process_has_context_switches_and_memory() -> None:
    voluntary, involuntary = context_switches(os.getpid())
    assert voluntary > 0 and involuntary >= 0
    rss, peak = rss_mb(os.getpid())
    assert 0 < rss <= peak

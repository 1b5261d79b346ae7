"""benchmarks.incremental's pure parts: the RayService it upgrades, and the curve it prints."""

from __future__ import annotations

import yaml
from benchmarks.incremental import STEP_PERCENT, curve, distinct, incremental
from benchmarks.rayservice import manifests

from raykube.api.validation.rayservice import validate_rayservice
from raykube.cli.serveclient import Answer


def test_the_rayservice_is_the_examples_with_the_incremental_strategy_that_validates() -> None:
    _, service, _ = manifests()
    body = incremental(service, "Hi", "2")
    spec = body["spec"]
    assert spec["upgradeStrategy"]["type"] == "NewClusterWithIncrementalUpgrade"
    assert spec["upgradeStrategy"]["clusterUpgradeOptions"]["stepSizePercent"] == STEP_PERCENT
    assert yaml.safe_load(spec["serveConfigV2"])["applications"][0]["deployments"][0]["user_config"] == {
        "greeting": "Hi"
    }
    head = spec["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert {"name": "MARK", "value": "2"} in head["env"]
    assert incremental(body, "Hi", "3")["spec"]["rayClusterConfig"] != spec["rayClusterConfig"]
    assert validate_rayservice(body) == []
    assert "upgradeStrategy" not in service["spec"]  # the example itself is untouched


def test_the_curve_gives_each_bucket_its_share_of_new_answers_and_the_last_weight_seen() -> None:
    answers = [Answer(100.0 + i, 0.01, 200, "Hi" if i >= 5 else "Hello") for i in range(10)]
    answers.append(Answer(107.5, 2.0, 0, "timeout"))
    rows = curve(answers, 100.0, 110.0, "Hi", [(101.0, 0), (106.0, 50), (108.0, 100)])
    assert rows == [
        {"t": 0.0, "requests": 5, "failed": 0, "new_share": 0.0, "new_weight": 0},
        {"t": 5.0, "requests": 6, "failed": 1, "new_share": 1.0, "new_weight": 100},
    ]
    assert distinct([(1.0, 0), (2.0, 0), (3.0, 25), (4.0, 25), (5.0, 100)]) == [0, 25, 100]

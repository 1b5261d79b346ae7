"""The demo's incremental-upgrade act, its pure parts: the example it applies and the change it makes."""

from __future__ import annotations

import copy

import pytest
import yaml

from raykube.api.validation.rayservice import validate_rayservice
from raykube.cli.demo_incremental import MANIFEST, SERVICE, upgraded_spec
from raykube.cli.serveclient import backend_weights
from raykube.sandbox.gateway import GATEWAY_CLASS

pytestmark = pytest.mark.unit


def test_the_example_is_07s_rayservice_with_the_incremental_strategy_on_the_sandboxs_gateway_class() -> None:
    body = yaml.safe_load(MANIFEST.read_text())
    assert body["metadata"]["name"] == SERVICE
    strategy = body["spec"]["upgradeStrategy"]
    assert strategy["type"] == "NewClusterWithIncrementalUpgrade"
    assert strategy["clusterUpgradeOptions"]["gatewayClassName"] == GATEWAY_CLASS
    assert body["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] is True
    assert validate_rayservice(body) == []


def test_the_change_is_a_new_cluster_spec_and_the_greeting_hi() -> None:
    body = yaml.safe_load(MANIFEST.read_text())
    before = copy.deepcopy(body)
    patch = upgraded_spec(copy.deepcopy(body))["spec"]
    assert patch["rayClusterConfig"] != before["spec"]["rayClusterConfig"]
    config = yaml.safe_load(patch["serveConfigV2"])
    assert config["applications"][0]["deployments"][0]["user_config"] == {"greeting": "Hi"}
    changed = {**before, "spec": {**before["spec"], **patch}}
    assert validate_rayservice(changed) == []


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        (None, {}),
        ({"spec": {}}, {}),
        ({"spec": {"rules": [{"backendRefs": [{"name": "a-serve-svc", "weight": 75}, {"name": "b-serve-svc"}]}]}},
         {"a-serve-svc": 75, "b-serve-svc": 0}),
    ],
)  # fmt: skip
def test_backend_weights_reads_the_first_rule(route: dict[str, object] | None, expected: dict[str, int]) -> None:
    assert backend_weights(route) == expected

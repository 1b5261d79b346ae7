"""objects.copy_json: what copy.deepcopy makes of JSON data, without sharing anything with the original."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from raykube.kube import objects


def _walk(value: Any) -> list[int]:
    """The ids of every dict and list in ``value``."""
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in _walk(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in _walk(v))]
    return []


def test_a_copy_of_json_equals_deepcopys_and_shares_no_container() -> None:
    status: dict[str, Any] = {
        "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 3}],
        "activeServiceStatus": {"applicationStatuses": {"fruit": {"deployments": {}, "healthy": True}}},
        "numServeEndpoints": 2,
        "weight": 0.5,
        "nothing": None,
    }
    copied = objects.copy_json(status)
    assert copied == copy.deepcopy(status) == status
    assert not set(_walk(copied)) & set(_walk(status))
    copied["conditions"][0]["status"] = "False"
    assert status["conditions"][0]["status"] == "True"


def test_what_is_not_json_is_deep_copied() -> None:
    when = {"at": [dt.datetime(2026, 12, 7, tzinfo=dt.UTC)], "set": {1, 2}}
    copied = objects.copy_json(when)
    assert copied == when
    assert copied["set"] is not when["set"]

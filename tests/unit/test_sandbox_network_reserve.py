"""Two process sandboxes started at once (``make test``'s process-node workers) reserve different Pod networks."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from raykube.sandbox.kubelet import network


def test_a_network_reserved_a_moment_ago_is_not_chosen_again_and_a_stale_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(network, "host_routes", list)  # a host with no route in the candidates
    first = network.reserve_subnet(tmp_path)
    second = network.reserve_subnet(tmp_path)
    assert first == network.POD_NETWORK_CANDIDATES[0] and second == network.POD_NETWORK_CANDIDATES[1]
    # A reservation whose process is gone, or older than the bridge takes to appear, frees its network.
    (tmp_path / f"{first.replace('/', '_')}.json").write_text(
        json.dumps({"network": first, "pid": os.getpid(), "at": time.time() - network.RESERVATION_SECONDS - 1})
    )
    assert network.reserve_subnet(tmp_path) == first
    (tmp_path / f"{first.replace('/', '_')}.json").write_text(
        json.dumps({"network": first, "pid": 2**22 + 7, "at": time.time()})  # no such process
    )
    assert network.reserve_subnet(tmp_path) == first

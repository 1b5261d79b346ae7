"""The process demo's node check: a reused sandbox from an older demo (smaller nodes) is refused up front, with the
command that replaces it, instead of a RayService upgrade that waits for room forever."""

from __future__ import annotations

import pytest

from raykube.cli.demo import PROCESS_NODES, too_small
from raykube.sandbox.components import NodePool


@pytest.mark.parametrize(
    ("nodes", "small"),
    [
        (PROCESS_NODES, False),
        (NodePool(count=3, cpu="2", memory="4Gi"), False),
        (NodePool(count=4, cpu="4", memory="8Gi"), False),
        (NodePool(count=3, cpu="2", memory="3Gi"), True),  # the demo's nodes before the operator ran in a Pod
        (NodePool(count=2, cpu="2", memory="3584Mi"), True),
        (NodePool(count=3, cpu="1500m", memory="3584Mi"), True),
    ],
)
def test_smaller_or_fewer_process_nodes_than_the_demos_are_too_small(nodes: NodePool, small: bool) -> None:
    assert too_small(nodes) is small

"""What the operator checks at start-up before it runs a controller (KubeRay v1.7.0 ``main.go``).

OP-3: with the SidecarSubmitterRestart gate on, the API server must be Kubernetes 1.35.0 or later, else the operator
exits with v1.7.0's message (its log line's message, then its error)."""

from __future__ import annotations

from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.config import OperatorConfig
from raykube.kube.client import Kube
from raykube.kube.errors import ApiError
from raykube.runtime.manager import StartupError
from raykube.runtime.operator import Operator

RESTART_ON = {c.GATE_SIDECAR_SUBMITTER_RESTART: True}


class _Version:
    """A client whose ``/version`` answers as given (a dict, or an exception to raise)."""

    def __init__(self, answer: dict[str, Any] | Exception) -> None:
        self.answer = answer
        self.asked = 0

    async def server_version(self) -> dict[str, Any]:
        self.asked += 1
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def operator(gates: dict[str, bool], answer: dict[str, Any] | Exception) -> tuple[Operator, _Version]:
    kube = Kube(object())  # type: ignore[arg-type]
    version = _Version(answer)
    kube.server_version = version.server_version  # type: ignore[method-assign]
    config = OperatorConfig(enable_leader_election=False, feature_gates=gates)
    return Operator(config, kube=kube, identity="t"), version


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            {"gitVersion": "v1.34.2"},
            "SidecarSubmitterRestart feature gate requires K8s 1.35+: current version v1.34.2 is below 1.35",
        ),
        ({"gitVersion": "v1.35.0-rc.1"}, None),  # ParseGeneric reads 1.35.0: the pre-release is not compared
        ({"gitVersion": "v1.36.3"}, None),
        ({"gitVersion": "vNext"}, 'Failed to compare K8s version.: could not parse "vNext" as version'),
        ({}, 'Failed to compare K8s version.: could not parse "" as version'),
        (
            ApiError(403, "Forbidden", "forbidden"),
            "SidecarSubmitterRestart feature gate enabled but unable to detect K8s version. Feature requires K8s "
            "1.35+.: ",
        ),
        (
            OSError("connection refused"),
            "SidecarSubmitterRestart feature gate enabled but unable to detect K8s version. Feature requires K8s "
            "1.35+.: connection refused",
        ),
    ],
    ids=["1.34-refused", "1.35-rc", "1.36", "unparsable", "no-git-version", "forbidden", "unreachable"],
)
async def test_sidecar_submitter_restart_needs_kubernetes_1_35(
    answer: dict[str, Any] | Exception, message: str | None
) -> None:
    op, version = operator(RESTART_ON, answer)
    if message is None:
        manager = await op._build_manager()
        for ctl in manager.controllers:
            ctl.queue.shutdown()
    else:
        with pytest.raises(StartupError) as caught:
            await op._build_manager()
        assert str(caught.value).startswith(message)
    assert version.asked == 1


async def test_without_the_gate_the_version_is_not_asked() -> None:
    op, version = operator({}, {"gitVersion": "v1.30.0"})
    manager = await op._build_manager()
    for ctl in manager.controllers:
        ctl.queue.shutdown()
    assert version.asked == 0

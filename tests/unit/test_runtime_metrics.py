"""The custom-resource gauges of ``/metrics``: KubeRay v1.6.1's names, labels and values, computed from what the
informers hold at scrape time."""

from __future__ import annotations

from typing import Any

from raykube.runtime.metrics import Metrics

UPGRADE = "kuberay_service_condition_upgrade_in_progress"


class _Listed:
    """What a collector needs of an informer: ``list()``."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = list(objects)

    def list(self) -> list[dict[str, Any]]:
        return self.objects


def _service(name: str, **conditions: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "status": {"conditions": [{"type": kind, "status": status} for kind, status in conditions.items()]},
    }


def test_rayservice_gauges_name_the_ready_and_upgrade_conditions_as_true_or_false() -> None:
    metrics = Metrics()
    informer = _Listed(
        _service("serving", Ready="True", UpgradeInProgress="False"),
        _service("upgrading", Ready="True", UpgradeInProgress="True"),
        {"metadata": {"name": "fresh", "namespace": "ns", "uid": "uid-fresh"}},  # no status yet
    )
    metrics.watch_services([informer])  # type: ignore[list-item]
    text = metrics.exposition().decode()
    for line in (
        'kuberay_service_info{name="serving",namespace="ns",uid="uid-serving"} 1.0',
        'kuberay_service_condition_ready{condition="true",name="serving",namespace="ns",uid="uid-serving"} 1.0',
        UPGRADE + '{condition="false",name="serving",namespace="ns",uid="uid-serving"} 1.0',
        UPGRADE + '{condition="true",name="upgrading",namespace="ns",uid="uid-upgrading"} 1.0',
        'kuberay_service_condition_ready{condition="false",name="fresh",namespace="ns",uid="uid-fresh"} 1.0',
        'kuberay_service_info{name="fresh",namespace="ns",uid="uid-fresh"} 1.0',
    ):
        assert line in text, line
    assert f"# HELP {UPGRADE} Describes whether the RayService is performing a zero-downtime upgrade." in text


def test_rayjob_gauges_carry_the_deployment_status() -> None:
    metrics = Metrics()
    job = {"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "status": {"jobDeploymentStatus": "Running"}}
    metrics.watch_jobs([_Listed(job)])  # type: ignore[list-item]
    text = metrics.exposition().decode()
    assert 'kuberay_job_info{name="j",namespace="ns",uid="u"} 1.0' in text
    assert 'kuberay_job_deployment_status{deployment_status="Running",name="j",namespace="ns",uid="u"} 1.0' in text

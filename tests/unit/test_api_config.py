"""KubeRay's operator flags and Configuration file, parsed as KubeRay parses them, with errors that name the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from raykube.api import constants as c
from raykube.api.config import ConfigError, OperatorConfig, parse_bool, parse_feature_gates, parse_flags
from raykube.builders import batch


def test_defaults_are_kuberays_except_the_reconcile_concurrency() -> None:
    config = parse_flags([])
    assert config == OperatorConfig()
    assert (config.metrics_addr, config.probe_addr, config.enable_leader_election) == (":8080", ":8082", True)
    assert (config.qps, config.burst) == (100.0, 200)
    assert config.reconcile_concurrency == 10  # KubeRay: 1; see DEFAULT_RECONCILE_CONCURRENCY


def test_the_kuberay_chart_args_parse() -> None:
    config = parse_flags(
        [
            "--log-stdout-encoder", "json",
            "--log-file-encoder", "json",
            "--enable-leader-election=true",
            "--enable-metrics=true",
            "--reconcile-concurrency=4",
            "--qps=50",
            "--burst=80",
            "--feature-gates=RayClusterStatusConditions=true,RayCronJob=false",
            "--watch-namespace", "a, b",
            "-metrics-addr=127.0.0.1:9090",  # Go also takes one dash
        ]
    )  # fmt: skip
    assert config is not None
    assert config.enable_metrics
    assert config.reconcile_concurrency == 4
    assert (config.qps, config.burst) == (50.0, 80)
    assert config.watch_namespaces == ("a", "b")
    assert config.metrics_addr == "127.0.0.1:9090"
    assert config.feature_gates == {"RayClusterStatusConditions": True, "RayCronJob": False}
    assert config.features()["RayMultiHostIndexing"] is True  # defaults fill the rest


def test_a_bare_boolean_flag_means_true_and_go_spellings_work() -> None:
    assert parse_flags(["--enable-metrics"]).enable_metrics  # type: ignore[union-attr]
    assert not parse_flags(["--enable-leader-election=F"]).enable_leader_election  # type: ignore[union-attr]
    assert parse_bool("1", "--x") and not parse_bool("0", "--x")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--qps=fast"], "--qps must be a number"),
        (["--reconcile-concurrency=0"], "reconcile concurrency must be at least 1"),
        (["--enable-metrics=maybe"], "--enable-metrics must be true or false"),
        (["--feature-gates=Bogus=true"], "unknown feature gate 'Bogus'"),
        (["--feature-gates=RayCronJob"], "must look like Name=true"),
        (["--log-stdout-encoder=xml"], "log stdout encoder must be json or console"),
        (["--no-such-flag=1"], "unrecognized arguments: --no-such-flag=1"),
    ],
)
def test_bad_flags_name_the_flag(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_flags(args)


def test_help_is_not_an_error() -> None:
    assert parse_flags(["--help"]) is None


def test_a_configuration_file_replaces_the_flags_but_not_the_feature_gates(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        """
apiVersion: config.ray.io/v1alpha1
kind: Configuration
metricsAddr: 127.0.0.1:9000
enableLeaderElection: false
reconcileConcurrency: 3
watchNamespace: team-a,team-b
defaultContainerEnvs:
- name: HTTPS_PROXY
  value: http://proxy:3128
headSidecarContainers:
- name: fluentbit
  image: fluent/fluent-bit:3
"""
    )
    config = parse_flags([f"--config={path}", "--qps=1", "--feature-gates=RayCronJob=true"])
    assert config is not None
    assert config.metrics_addr == "127.0.0.1:9000"
    assert not config.enable_leader_election
    assert config.reconcile_concurrency == 3
    assert config.qps == 100.0  # flags other than --feature-gates are ignored with --config, as in KubeRay
    assert config.watch_namespaces == ("team-a", "team-b")
    assert config.feature_gates == {"RayCronJob": True}
    assert config.default_container_envs == ({"name": "HTTPS_PROXY", "value": "http://proxy:3128"},)
    assert config.head_sidecar_containers[0]["name"] == "fluentbit"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("reconcileConcurrency: lots\n", "reconcileConcurrency"),
        ("metricAddr: :1\n", "metricAddr: Extra inputs are not permitted"),
        ("apiVersion: v1\nkind: ConfigMap\n", "apiVersion/kind must be config.ray.io/v1alpha1/Configuration"),
        ("- a\n", "expected a Configuration object"),
    ],
)
def test_a_bad_configuration_file_names_the_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        parse_flags([f"--config={path}"])


def test_a_missing_configuration_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="No such file"):
        parse_flags([f"--config={tmp_path / 'nope.yaml'}"])


def test_feature_gate_lists_tolerate_spaces_and_empty_items() -> None:
    assert parse_feature_gates(" RayCronJob=true , ,RayMultiHostIndexing=false") == {
        "RayCronJob": True,
        "RayMultiHostIndexing": False,
    }


def test_the_batch_scheduler_names_agree_with_the_plugins_raykube_implements() -> None:
    """raykube.api.config checks --batch-scheduler against names in raykube.api.constants (the api layer does not
    import the builders): the implemented names are exactly the builders' plugins, all of them KubeRay's names."""
    assert set(c.RAYKUBE_BATCH_SCHEDULERS) == set(batch.PLUGINS)
    assert all(batch.PLUGINS[name].name == name for name in c.RAYKUBE_BATCH_SCHEDULERS)
    assert set(c.RAYKUBE_BATCH_SCHEDULERS) < set(c.KUBERAY_BATCH_SCHEDULERS)
    assert set(c.KUBERAY_BATCH_SCHEDULERS) - set(c.RAYKUBE_BATCH_SCHEDULERS) == {"kai-scheduler", "scheduler-plugins"}

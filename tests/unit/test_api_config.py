"""KubeRay's operator flags and Configuration file, parsed as KubeRay parses them, with errors that name the flag."""

from __future__ import annotations

from pathlib import Path

import pytest

from raykube.api import constants as c
from raykube.api.config import (
    ConfigError,
    OperatorConfig,
    parse_bool,
    parse_feature_gates,
    parse_flags,
    read_flags,
)
from raykube.builders import batch
from raykube.builders.options import BuildOptions


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


BAD_FLAGS = [
    (["--qps=fast"], "--qps must be a number"),
    (["--reconcile-concurrency=0"], "reconcile concurrency must be at least 1"),
    (["--enable-metrics=maybe"], "--enable-metrics must be true or false"),
    (["--feature-gates=Bogus=true"], "unknown feature gate 'Bogus'"),
    (["--feature-gates=RayCronJob"], "must look like Name=true"),
    (["--log-stdout-encoder=xml"], "log stdout encoder must be json or console"),
    (["--no-such-flag=1"], "unrecognized arguments: --no-such-flag=1"),
]


@pytest.mark.parametrize(("args", "message"), BAD_FLAGS)
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
    assert set(c.RAYKUBE_BATCH_SCHEDULERS) == set(batch.PLUGINS) - {c.BATCH_SCHEDULER_KUBERNETES_WAS}  # by its gate
    assert batch.PLUGINS[c.BATCH_SCHEDULER_KUBERNETES_WAS].name == c.BATCH_SCHEDULER_KUBERNETES_WAS
    assert all(batch.PLUGINS[name].name == name for name in c.RAYKUBE_BATCH_SCHEDULERS)
    assert set(c.RAYKUBE_BATCH_SCHEDULERS) < set(c.KUBERAY_BATCH_SCHEDULERS)
    assert set(c.KUBERAY_BATCH_SCHEDULERS) - set(c.RAYKUBE_BATCH_SCHEDULERS) == {"kai-scheduler", "scheduler-plugins"}


# --------------------------------------------------------------------------------------------------------------------
# read_flags: another operator's flags (raykube doctor), same parser, never refused
# --------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), BAD_FLAGS)
def test_reading_notes_what_parsing_refuses_in_the_same_words(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_flags(args)
    reading = read_flags(args)
    assert reading.problems == (str(refused.value),)
    assert reading.config == OperatorConfig()  # every bad setting stays at its default


def test_reading_sound_flags_gives_what_parsing_gives() -> None:
    args = ["--watch-namespace=a,b", "-enable-leader-election=false", "--feature-gates=RayCronJob=true", "--qps", "50"]
    reading = read_flags(args)
    assert reading.config == parse_flags(args)
    assert reading.problems == ()


def test_reading_keeps_every_setting_it_can() -> None:
    """A KubeRay operator's args: its zap logging flags and kai-scheduler are KubeRay's, not raykube's; a gate
    raykube does not know (AsyncJobInfoQuery, which KubeRay v1.7.0 removed) drops that gate only."""
    reading = read_flags(
        ["--zap-log-level", "debug", "--watch-namespace=team-a", "--batch-scheduler=kai-scheduler",
         "--feature-gates=AsyncJobInfoQuery=true,RayClusterStatusConditions=false", "--enable-leader-election=false",
         "--zap-devel", "--qps=fast", "--burst=50"]
    )  # fmt: skip
    config = reading.config
    assert config.watch_namespaces == ("team-a",)
    assert config.feature_gates == {"RayClusterStatusConditions": False}
    assert (config.enable_leader_election, config.batch_scheduler, config.qps, config.burst) == (False, "", 100.0, 50)
    assert reading.problems[0] == "unrecognized arguments: --zap-log-level debug --zap-devel"
    assert "unknown feature gate 'AsyncJobInfoQuery'" in reading.problems[1]
    assert "'kai-scheduler' is a KubeRay batch scheduler raykube does not implement" in reading.problems[2]
    assert reading.problems[3] == "--qps must be a number, got 'fast'"
    assert len(reading.problems) == 4


def test_reading_a_flag_without_its_value_or_help_never_raises() -> None:
    assert read_flags(["--watch-namespace"]).problems == ("argument --watch-namespace: expected one argument",)
    assert read_flags(["--watch-namespace"]).config == OperatorConfig()
    reading = read_flags(["--help", "--watch-namespace=a"])
    assert reading.config.watch_namespaces == ("a",)
    assert reading.problems == ("--help: the operator prints its flags and exits",)


def test_reading_a_config_flag_asks_the_given_loader_and_ignores_the_other_flags_but_feature_gates() -> None:
    def unread(path: Path) -> OperatorConfig:
        return OperatorConfig(config_file=path)

    reading = read_flags(
        ["--config=/etc/raykube/config.yaml", "--watch-namespace=a", "--feature-gates=RayCronJob=true"],
        load_file=unread,
    )
    assert reading.config == OperatorConfig(
        config_file=Path("/etc/raykube/config.yaml"), feature_gates={"RayCronJob": True}
    )
    assert reading.problems == ()


def test_reading_a_config_file_that_does_not_load_notes_why(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    reading = read_flags([f"--config={missing}"])
    assert reading.config == OperatorConfig(config_file=missing)
    assert reading.problems == (f"--config {missing}: No such file or directory",)


_GRACE = c.DEFAULT_RAYJOB_TRANSITION_GRACE_SECONDS


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, _GRACE),
        ("", _GRACE),
        ("30", 30),
        ("+7", 7),
        ("-5", -5),
        (" 30", _GRACE),
        ("3.5", _GRACE),
        ("9" * 20, _GRACE),
    ],
)
def test_the_rayjob_grace_period_env_is_read_with_atoi(value: str | None, seconds: int) -> None:
    """KubeRay: ``strconv.Atoi(os.Getenv(...))``, the default on any error (an int64 overflow too)."""
    env = {} if value is None else {c.RAYJOB_TRANSITION_GRACE_PERIOD_ENV: value}
    assert BuildOptions.from_env(env).rayjob_transition_grace_seconds == seconds


def test_turning_on_a_v170_gate_raykube_does_not_implement_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every v1.7.0 gate is built now (the list is empty); one raykube did not build would stop it at start-up."""
    assert c.UNIMPLEMENTED_FEATURE_GATES == ()
    monkeypatch.setattr(c, "UNIMPLEMENTED_FEATURE_GATES", (c.GATE_RAY_CRON_JOB,))
    with pytest.raises(ConfigError, match=r"feature gate 'RayCronJob' is KubeRay v1\.7\.0's and raykube does not"):
        parse_flags(["--feature-gates=RayCronJob=true"])
    config = parse_flags(["--feature-gates=RayCronJob=false,RayServiceIncrementalUpgrade=false"])
    assert config is not None and config.feature_gates == {"RayCronJob": False, "RayServiceIncrementalUpgrade": False}


def test_sidecar_submitter_restart_is_implemented_and_may_be_turned_on() -> None:
    """RJ-6: raykube builds what the gate asks for (the restartable SidecarMode submitter), so it is accepted."""
    assert c.GATE_SIDECAR_SUBMITTER_RESTART not in c.UNIMPLEMENTED_FEATURE_GATES
    config = parse_flags(["--feature-gates=SidecarSubmitterRestart=true"])
    assert config is not None and config.feature_gates == {"SidecarSubmitterRestart": True}


def test_the_v170_gates_raykube_implements_can_be_turned_on() -> None:
    assert c.GATE_RAYCLUSTER_NETWORK_POLICY not in c.UNIMPLEMENTED_FEATURE_GATES
    assert c.GATE_GCS_FT_EMBEDDED_STORAGE not in c.UNIMPLEMENTED_FEATURE_GATES
    config = parse_flags(["--feature-gates=RayClusterNetworkPolicy=true,GCSFaultToleranceEmbeddedStorage=true"])
    assert config is not None
    assert config.feature_gates == {"RayClusterNetworkPolicy": True, "GCSFaultToleranceEmbeddedStorage": True}


def test_the_mtls_gate_can_be_turned_on() -> None:
    """RayClusterMTLS: raykube builds the certificates (controllers.raycluster_mtls), so the gate is accepted."""
    assert c.GATE_RAYCLUSTER_MTLS not in c.UNIMPLEMENTED_FEATURE_GATES
    config = parse_flags(["--feature-gates=RayClusterMTLS=true"])
    assert config is not None and config.feature_gates == {"RayClusterMTLS": True}


def test_the_kubernetes_was_gate_can_be_turned_on() -> None:
    """KubernetesWAS: raykube runs its scheduler (builders.was), so the gate is accepted and chooses it (OP-2)."""
    assert c.GATE_KUBERNETES_WAS not in c.UNIMPLEMENTED_FEATURE_GATES
    config = parse_flags(["--feature-gates=KubernetesWAS=true"])
    assert config is not None and config.feature_gates == {"KubernetesWAS": True}
    assert config.batch_scheduler == c.BATCH_SCHEDULER_KUBERNETES_WAS


def test_the_history_server_gate_can_be_turned_on() -> None:
    """RayClusterHistoryServer: raykube builds the collector sidecar (builders.history), so the gate is accepted."""
    assert c.GATE_RAYCLUSTER_HISTORY_SERVER not in c.UNIMPLEMENTED_FEATURE_GATES
    config = parse_flags(["--feature-gates=RayClusterHistoryServer=true"])
    assert config is not None and config.feature_gates == {"RayClusterHistoryServer": True}


def test_v170s_gates_and_defaults_and_v161s_removed_gate() -> None:
    assert len(c.FEATURE_GATE_DEFAULTS) == 11 and c.FEATURE_GATE_DEFAULTS["RayServiceIncrementalUpgrade"] is True
    with pytest.raises(ConfigError, match="unknown feature gate 'AsyncJobInfoQuery'"):
        parse_flags(["--feature-gates=AsyncJobInfoQuery=false"])  # v1.7.0 removed it; naming it stops KubeRay too

"""The operator's configuration API: KubeRay's command-line flags, or its ``config.ray.io/v1alpha1`` Configuration file.

This is raykube's counterpart of KubeRay's ``ray-operator/apis/config/v1alpha1/configuration_types.go`` (the
``Configuration`` type, with its defaults in ``defaults.go`` and ``ValidateBatchSchedulerConfig`` in
``config_utils.go``) and of the flags ``ray-operator/main.go`` defines. It is pure (no I/O but reading the
``--config`` file), so the operator (``raykube operator``) and ``raykube doctor``, which reads the flags of an operator
Deployment, share one parser.

Both spell settings as KubeRay does, so the same Deployment args, Helm values and config files work unchanged:

* Flags are Go-style: ``--flag=value``, ``--flag value``, a bare boolean ``--flag`` for true, and ``-flag`` with a
  single dash. Booleans take Go's spellings (``true``/``1``/``t``/``false``/``0``/``f``, any case).
* With ``--config FILE`` every setting comes from the file (KubeRay ignores the other flags then), except
  ``--feature-gates``, which KubeRay parses separately; the file's defaults are KubeRay's (``:8080``, ``:8082``,
  leader election on, concurrency 1, QPS 100, burst 200).

Bad input fails with a message that names the flag or the file field. :func:`read_flags` reads the flags of an
operator this process does not run (``raykube doctor`` reads an operator Deployment's) with the same parser, noting
those messages instead of failing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from raykube.api import constants as c
from raykube.golang.duration import parse_duration
from raykube.golang.errors import GoError

CONFIG_API_VERSION = "config.ray.io/v1alpha1"
CONFIG_KIND = "Configuration"
LOG_ENCODERS = ("json", "console")
# A deliberate difference from KubeRay, whose --reconcile-concurrency defaults to 1 (controller-runtime's
# MaxConcurrentReconciles). The work queue never hands one RayCluster to two workers, so more workers only overlap
# the API round trips of different clusters; at 1, creating 1,000 RayClusters is bound by those round trips
# (benchmarks/scale.py, docs/scale-history.md).
DEFAULT_RECONCILE_CONCURRENCY = 10

_T = TypeVar("_T")


class ConfigError(ValueError):
    """Invalid flags or configuration file; the message names the flag or field."""


def _settle(problems: list[str] | None, read: Callable[[], _T], default: _T) -> _T:
    """``read()``; when reading tolerantly (``problems`` is a list, see :func:`read_flags`), its ConfigError is noted
    there and ``default`` used instead."""
    if problems is None:
        return read()
    try:
        return read()
    except ConfigError as exc:
        problems.append(str(exc))
        return default


def _refused(problems: list[str] | None, error: ConfigError, default: _T) -> _T:
    """Raise ``error``; when reading tolerantly, note it and go on with ``default``."""
    if problems is None:
        raise error
    problems.append(str(error))
    return default


@dataclass(frozen=True)
class OperatorConfig:
    metrics_addr: str = ":8080"
    probe_addr: str = ":8082"
    enable_leader_election: bool = True
    leader_election_namespace: str = ""
    leader_election_id: str = "ray-operator-leader"  # KubeRay main.go
    watch_namespaces: tuple[str, ...] = ()
    reconcile_concurrency: int = DEFAULT_RECONCILE_CONCURRENCY
    qps: float = 100.0
    burst: int = 200
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    log_stdout_encoder: str = "json"
    log_file_path: str = ""
    log_file_encoder: str = "json"
    batch_scheduler: str = ""
    enable_metrics: bool = False
    use_kubernetes_proxy: bool = False
    delete_rayjob_after_job_finishes: bool = False
    kubeconfig: Path | None = None
    head_sidecar_containers: tuple[Mapping[str, Any], ...] = ()
    worker_sidecar_containers: tuple[Mapping[str, Any], ...] = ()
    default_container_envs: tuple[Mapping[str, Any], ...] = ()
    default_pod_labels: Mapping[str, str] = field(default_factory=dict)
    default_pod_annotations: Mapping[str, str] = field(default_factory=dict)
    config_file: Path | None = None
    # raykube's own (not KubeRay's): seconds a RayCluster, RayJob or RayService may stay not ready before the operator
    # records the doctor's root cause on it as a RootCause Event (--diagnose-after, runtime.diagnosis); 0: never.
    diagnose_after: float = 0.0

    def features(self) -> dict[str, bool]:
        return {**c.FEATURE_GATE_DEFAULTS, **self.feature_gates}


def parse_bool(value: str, option: str) -> bool:
    """Go's strconv.ParseBool."""
    lowered = value.strip().lower()
    if lowered in ("1", "t", "true"):
        return True
    if lowered in ("0", "f", "false"):
        return False
    raise ConfigError(f"{option} must be true or false, got {value!r}")


def parse_feature_gates(
    value: str, option: str = "--feature-gates", *, problems: list[str] | None = None
) -> dict[str, bool]:
    """``A=true,B=false`` into a mapping; unknown gates are refused, as KubeRay's feature gate set does (with
    ``problems``, a bad item is noted there and left out, the others kept)."""
    gates: dict[str, bool] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        try:
            name, enabled = _feature_gate(item, option)
        except ConfigError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
            continue
        gates[name] = enabled
    return gates


def _feature_gate(item: str, option: str) -> tuple[str, bool]:
    name, sep, enabled = item.partition("=")
    if not sep:
        raise ConfigError(f"{option}: {item!r} must look like Name=true")
    if name not in c.FEATURE_GATE_DEFAULTS:
        known = ", ".join(sorted(c.FEATURE_GATE_DEFAULTS))
        raise ConfigError(f"{option}: unknown feature gate {name!r} (known: {known})")
    on = parse_bool(enabled, f"{option} {name}")
    if on and name in c.UNIMPLEMENTED_FEATURE_GATES:
        raise ConfigError(
            f"{option}: feature gate {name!r} is KubeRay v1.7.0's and raykube does not implement it yet; refusing "
            "to start rather than accept its fields and make none of its objects"
        )
    return name, on


def parse_diagnose_after(value: str | None) -> float:
    """Seconds of ``--diagnose-after`` (a Go duration such as ``90s`` or ``2m``; unset or ``0``: off)."""
    if value is None or value == "":
        return 0.0
    try:
        nanoseconds = parse_duration(value)
    except GoError as exc:
        raise ConfigError(f"--diagnose-after must be a duration such as 90s or 2m: {exc}") from None
    if nanoseconds < 0:
        raise ConfigError(f"--diagnose-after must not be negative, got {value!r}")
    return nanoseconds / 1e9


def _namespaces(value: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in value.split(",") if n.strip())


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits; we raise, so the CLI can print our way
        raise ConfigError(message)


def _flag_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(prog="raykube operator", add_help=False, allow_abbrev=False)

    def boolean(name: str) -> None:
        parser.add_argument(name, nargs="?", const="true", default=None)

    parser.add_argument("--metrics-addr")
    parser.add_argument("--health-probe-bind-address")
    boolean("--enable-leader-election")
    parser.add_argument("--leader-election-namespace")
    parser.add_argument("--watch-namespace")
    parser.add_argument("--reconcile-concurrency")
    parser.add_argument("--qps")
    parser.add_argument("--burst")
    parser.add_argument("--feature-gates")
    parser.add_argument("--log-stdout-encoder")
    parser.add_argument("--log-file-path")
    parser.add_argument("--log-file-encoder")
    parser.add_argument("--batch-scheduler")
    boolean("--enable-batch-scheduler")
    boolean("--enable-metrics")
    boolean("--use-kubernetes-proxy")
    boolean("--forced-cluster-upgrade")  # deprecated in KubeRay, no effect
    parser.add_argument("--config")
    parser.add_argument("--kubeconfig")
    parser.add_argument("--diagnose-after")
    boolean("--help")
    return parser


FLAGS_HELP = """Usage: raykube operator [FLAGS]

Runs the RayCluster controller, with KubeRay's flags (Go syntax: --flag=value, --flag value, bare --flag for true):
  --metrics-addr ADDR                 metrics endpoint (default :8080; served only with --enable-metrics)
  --health-probe-bind-address ADDR    /healthz and /readyz (default :8082)
  --enable-leader-election[=BOOL]     elect one active operator through a Lease (default true)
  --leader-election-namespace NS      namespace of the Lease (default: the Pod's namespace, else "default")
  --watch-namespace A,B               namespaces to watch (default: all)
  --reconcile-concurrency N           RayClusters reconciled at once (default 10)
  --qps Q --burst B                   client-side rate limit per resource type, as KubeRay's (default 100, 200)
  --feature-gates A=true,B=false      KubeRay feature gates
  --log-stdout-encoder json|console   log format on stdout (default json)
  --log-file-path PATH                also log to this file (--log-file-encoder json|console)
  --enable-metrics[=BOOL]             serve Prometheus metrics on --metrics-addr (default false)
  --batch-scheduler NAME              volcano or yunikorn: their Pod metadata (and Volcano PodGroups); KubeRay's
                                      kai-scheduler and scheduler-plugins are refused (not implemented yet)
  --enable-batch-scheduler[=BOOL]     deprecated spelling of --batch-scheduler=volcano
  --config FILE                       a config.ray.io/v1alpha1 Configuration; other flags then ignored
  --kubeconfig FILE                   kubeconfig (default: $KUBECONFIG, ~/.kube/config, then in-cluster)
  --diagnose-after DURATION           raykube's own, off by default: a RayCluster, RayJob or RayService not ready
                                      for this long (a Go duration: 90s, 2m) gets the doctor's root cause as a
                                      Warning Event (reason RootCause); also with --config
"""


def _normalise(args: Sequence[str]) -> list[str]:
    """Go also accepts ``-flag``: turn single-dash long flags into double-dash ones."""
    return [f"-{a}" if a.startswith("-") and not a.startswith("--") and len(a.split("=")[0]) > 2 else a for a in args]


class _ConfigFile(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, extra="forbid", validate_by_name=True, validate_by_alias=True)

    api_version: str | None = None
    kind: str | None = None
    metrics_addr: str = ""
    probe_addr: str = ""
    enable_leader_election: bool | None = None
    leader_election_namespace: str = ""
    watch_namespace: str = ""
    log_file: str = ""
    log_file_encoder: str = ""
    log_stdout_encoder: str = ""
    batch_scheduler: str = ""
    head_sidecar_containers: list[dict[str, Any]] = []
    worker_sidecar_containers: list[dict[str, Any]] = []
    reconcile_concurrency: int = 0
    enable_batch_scheduler: bool = False
    use_kubernetes_proxy: bool = False
    delete_ray_job_after_job_finishes: bool = False
    enable_metrics: bool = False
    qps: float | None = None
    burst: int | None = None
    default_container_envs: list[dict[str, Any]] = []
    default_pod_labels: dict[str, str] = {}
    default_pod_annotations: dict[str, str] = {}


def load_config_file(path: Path) -> OperatorConfig:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"--config {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path}: not YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: expected a {CONFIG_KIND} object, got {type(data).__name__}")
    try:
        parsed = _ConfigFile.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"--config {path}: {problems}") from exc
    if parsed.api_version not in (None, CONFIG_API_VERSION) or parsed.kind not in (None, CONFIG_KIND):
        raise ConfigError(
            f"--config {path}: apiVersion/kind must be {CONFIG_API_VERSION}/{CONFIG_KIND}, "
            f"got {parsed.api_version}/{parsed.kind}"
        )
    config = OperatorConfig(
        metrics_addr=parsed.metrics_addr or ":8080",
        probe_addr=parsed.probe_addr or ":8082",
        enable_leader_election=True if parsed.enable_leader_election is None else parsed.enable_leader_election,
        leader_election_namespace=parsed.leader_election_namespace,
        watch_namespaces=_namespaces(parsed.watch_namespace),
        reconcile_concurrency=parsed.reconcile_concurrency or DEFAULT_RECONCILE_CONCURRENCY,
        qps=100.0 if parsed.qps is None else parsed.qps,
        burst=200 if parsed.burst is None else parsed.burst,
        log_stdout_encoder=parsed.log_stdout_encoder or "json",
        log_file_path=parsed.log_file,
        log_file_encoder=parsed.log_file_encoder or "json",
        batch_scheduler=_batch_scheduler(
            parsed.batch_scheduler, enable=parsed.enable_batch_scheduler, source=f"--config {path}"
        ),
        enable_metrics=parsed.enable_metrics,
        use_kubernetes_proxy=parsed.use_kubernetes_proxy,
        delete_rayjob_after_job_finishes=parsed.delete_ray_job_after_job_finishes,
        head_sidecar_containers=tuple(parsed.head_sidecar_containers),
        worker_sidecar_containers=tuple(parsed.worker_sidecar_containers),
        default_container_envs=tuple(parsed.default_container_envs),
        default_pod_labels=parsed.default_pod_labels,
        default_pod_annotations=parsed.default_pod_annotations,
        config_file=path,
    )
    return _checked(config, source=f"--config {path}")


def _batch_scheduler(name: str, *, enable: bool, source: str, kubernetes_was: bool = False) -> str:
    """The batch scheduler plugin to run, checked as KubeRay's ``ValidateBatchSchedulerConfig`` checks it (same
    messages), plus raykube's refusal of the KubeRay schedulers it does not implement yet: started anyway, the
    operator would leave their Pods to the default scheduler and silently bypass the scheduler's queues and gangs.

    v1.7.0 (OP-2) reads the feature gates first: with ``KubernetesWAS`` on (``kubernetes_was``) the gate alone selects
    ``kubernetes-was-v1alpha2``, and any ``--batch-scheduler`` or ``--enable-batch-scheduler`` is refused."""
    if kubernetes_was:
        if enable or name:
            raise ConfigError(f"{source}: {_WAS_EXCLUSIVE}")
        return c.BATCH_SCHEDULER_KUBERNETES_WAS
    if enable and name:
        raise ConfigError(
            f"{source}: both feature flags enable-batch-scheduler (deprecated) and batch-scheduler are set. "
            "Please use batch-scheduler only"
        )
    if enable:
        return c.BATCH_SCHEDULER_VOLCANO
    if not name or name in c.RAYKUBE_BATCH_SCHEDULERS:
        return name
    implemented = ", ".join(sorted(c.RAYKUBE_BATCH_SCHEDULERS))
    if name in c.KUBERAY_BATCH_SCHEDULERS:
        raise ConfigError(
            f"{source}: batch scheduler {name!r} is a KubeRay batch scheduler raykube does not implement yet "
            f"(implemented: {implemented}); refusing to start rather than leave the Pods to the default scheduler"
        )
    raise ConfigError(f"{source}: scheduler is not supported, name={name} (implemented: {implemented})")


_WAS_EXCLUSIVE = (
    f"the {c.GATE_KUBERNETES_WAS} feature gate cannot be combined with --batch-scheduler or --enable-batch-scheduler"
)


def _checked(config: OperatorConfig, source: str, problems: list[str] | None = None) -> OperatorConfig:
    """``config`` if its values are sound; else the first error raised (with ``problems``: each noted, the setting
    back at its default)."""
    if config.reconcile_concurrency < 1:
        config = _refused(
            problems,
            ConfigError(f"{source}: reconcile concurrency must be at least 1, got {config.reconcile_concurrency}"),
            replace(config, reconcile_concurrency=DEFAULT_RECONCILE_CONCURRENCY),
        )
    if config.qps <= 0 or config.burst < 1:
        config = _refused(
            problems,
            ConfigError(f"{source}: qps must be > 0 and burst >= 1, got {config.qps} and {config.burst}"),
            replace(config, qps=100.0, burst=200),
        )
    if config.log_stdout_encoder not in LOG_ENCODERS:
        config = _refused(
            problems,
            ConfigError(f"{source}: log stdout encoder must be json or console, got {config.log_stdout_encoder!r}"),
            replace(config, log_stdout_encoder="json"),
        )
    if config.log_file_encoder not in LOG_ENCODERS:
        config = _refused(
            problems,
            ConfigError(f"{source}: log file encoder must be json or console, got {config.log_file_encoder!r}"),
            replace(config, log_file_encoder="json"),
        )
    return config


def parse_flags(args: Sequence[str]) -> OperatorConfig | None:
    """The configuration from KubeRay-style flags; None when help was asked for."""
    ns = _flag_parser().parse_args(_normalise(args))
    if ns.help is not None:
        return None
    return _from_flags(ns, load_config_file, problems=None)


@dataclass(frozen=True)
class FlagReading:
    """An operator's flags as :func:`read_flags` reads them: the configuration they give, and what
    :func:`parse_flags` would have refused (its messages, in order)."""

    config: OperatorConfig
    problems: tuple[str, ...] = ()


def read_flags(args: Sequence[str], *, load_file: Callable[[Path], OperatorConfig] = load_config_file) -> FlagReading:
    """The flags of an operator this process does not run (``raykube doctor`` reads an operator Deployment's), with
    the parser :func:`parse_flags` uses, never refused: unknown flags (KubeRay's operator also binds
    controller-runtime's ``--zap-*`` logging flags) are set aside, a bad value leaves its setting at the default (a
    bad feature gate drops that gate only), and ``--help`` reads as no flag; each is noted with the message
    :func:`parse_flags` gives. ``load_file`` reads ``--config FILE`` (the other process's file may not be here)."""
    try:
        ns, unknown = _flag_parser().parse_known_args(_normalise(args))
    except ConfigError as exc:  # a flag without its value: the parser stops there
        return FlagReading(OperatorConfig(), (str(exc),))
    problems: list[str] = []
    if unknown:
        problems.append(f"unrecognized arguments: {' '.join(unknown)}")
    if ns.help is not None:
        problems.append("--help: the operator prints its flags and exits")
    config = _from_flags(ns, load_file, problems=problems)
    return FlagReading(config, tuple(problems))


def _from_flags(
    ns: argparse.Namespace, load_file: Callable[[Path], OperatorConfig], *, problems: list[str] | None
) -> OperatorConfig:
    """The configuration from parsed flags: every error raised (``problems`` None), or noted there."""
    gates = parse_feature_gates(ns.feature_gates, problems=problems) if ns.feature_gates else {}
    kubeconfig = Path(ns.kubeconfig) if ns.kubeconfig else None
    diagnose_after = _settle(problems, lambda: parse_diagnose_after(ns.diagnose_after), 0.0)
    if ns.config:
        path = Path(ns.config)
        base = _settle(problems, lambda: load_file(path), OperatorConfig(config_file=path))
        if gates.get(c.GATE_KUBERNETES_WAS):  # the file's scheduler, checked against the gate (OP-2)
            batch = _settle(
                problems,
                lambda: _batch_scheduler(
                    base.batch_scheduler, enable=False, source=f"--config {path}", kubernetes_was=True
                ),
                "",
            )
            base = replace(base, batch_scheduler=batch)
        return replace(base, feature_gates=gates, kubeconfig=kubeconfig, diagnose_after=diagnose_after)

    def number(value: str | None, option: str, kind: type[int] | type[float], default: Any) -> Any:
        if value is None:
            return default
        try:
            return kind(value)
        except ValueError:
            error = ConfigError(f"{option} must be a number, got {value!r}")
        return _refused(problems, error, default)

    def flag(value: str | None, option: str, *, default: bool) -> bool:
        return default if value is None else _settle(problems, lambda: parse_bool(value, option), default)

    batch = _settle(
        problems,
        lambda: _batch_scheduler(
            ns.batch_scheduler or "",
            enable=flag(ns.enable_batch_scheduler, "--enable-batch-scheduler", default=False),
            source="flags",
            kubernetes_was=gates.get(c.GATE_KUBERNETES_WAS, False),
        ),
        "",
    )
    config = OperatorConfig(
        metrics_addr=ns.metrics_addr if ns.metrics_addr is not None else ":8080",
        probe_addr=ns.health_probe_bind_address if ns.health_probe_bind_address is not None else ":8082",
        enable_leader_election=flag(ns.enable_leader_election, "--enable-leader-election", default=True),
        leader_election_namespace=ns.leader_election_namespace or "",
        watch_namespaces=_namespaces(ns.watch_namespace or ""),
        reconcile_concurrency=number(
            ns.reconcile_concurrency, "--reconcile-concurrency", int, DEFAULT_RECONCILE_CONCURRENCY
        ),
        qps=number(ns.qps, "--qps", float, 100.0),
        burst=number(ns.burst, "--burst", int, 200),
        feature_gates=gates,
        log_stdout_encoder=ns.log_stdout_encoder or "json",
        log_file_path=ns.log_file_path or "",
        log_file_encoder=ns.log_file_encoder or "json",
        batch_scheduler=batch,
        enable_metrics=flag(ns.enable_metrics, "--enable-metrics", default=False),
        use_kubernetes_proxy=flag(ns.use_kubernetes_proxy, "--use-kubernetes-proxy", default=False),
        kubeconfig=kubeconfig,
        diagnose_after=diagnose_after,
    )
    return _checked(config, source="flags", problems=problems)


def describe(config: OperatorConfig) -> dict[str, Any]:
    """The effective settings, for the start-up log line."""
    return {f.name: getattr(config, f.name) for f in fields(config) if not f.name.endswith("containers")}

"""Prometheus metrics of the operator, under the names KubeRay's dashboards and alerts already use.

* KubeRay's control-plane metrics (KubeRay v1.6.1 ``controllers/ray/metrics/ray_cluster_metrics.go``):
  ``kuberay_cluster_info``, ``kuberay_cluster_condition_provisioned``, ``kuberay_cluster_provisioned_duration_seconds``.
  They are computed at scrape time from the informer cache, so they cost nothing between scrapes and can never drift
  from it.
* controller-runtime's: ``controller_runtime_reconcile_total{controller,result}``,
  ``controller_runtime_reconcile_errors_total``, ``controller_runtime_reconcile_time_seconds``,
  ``controller_runtime_max_concurrent_reconciles``, ``controller_runtime_active_workers``, and the work queue's
  ``workqueue_depth``, ``workqueue_adds_total``, ``workqueue_retries_total``, ``workqueue_queue_duration_seconds``.
* client-go's ``rest_client_requests_total{code,host,method}``, plus ``raykube_api_requests_total{verb,resource,code}``
  and ``raykube_api_request_duration_seconds{verb}`` (what the benchmark reports), and
  ``leader_election_master_status{name}``.
* raykube's own ``raykube_diagnosis_passes_total``, ``raykube_diagnoses_total`` and
  ``raykube_root_cause_events_total`` (``--diagnose-after``; zero without it).

Everything lives in one ``CollectorRegistry`` per operator, never the process-global one.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from raykube.api import constants as c
from raykube.kube.times import parse_time

if TYPE_CHECKING:
    from raykube.kube.informer import Informer
    from raykube.runtime.queue import WorkQueue

_HTTP_METHOD = {
    "get": "GET",
    "list": "GET",
    "watch": "GET",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class _ClusterCollector(Collector):
    """kuberay_cluster_* from the RayCluster informers, at scrape time."""

    def __init__(self, informers: Sequence[Informer]) -> None:
        self.informers = informers

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "kuberay_cluster_info", "Metadata of a RayCluster", labels=["name", "namespace", "uid", "owner_kind"]
        )
        provisioned = GaugeMetricFamily(
            "kuberay_cluster_condition_provisioned",
            "Whether the RayCluster has been provisioned (RayClusterProvisioned condition)",
            labels=["name", "namespace", "uid", "condition"],
        )
        duration = GaugeMetricFamily(
            "kuberay_cluster_provisioned_duration_seconds",
            "Seconds from the RayCluster's creation until all its Pods were first ready",
            labels=["name", "namespace", "uid"],
        )
        for informer in self.informers:
            for cluster in informer.list():
                meta = cluster.get("metadata") or {}
                labels = [str(meta.get("name", "")), str(meta.get("namespace", "")), str(meta.get("uid", ""))]
                owner = (meta.get("labels") or {}).get(c.RAY_ORIGINATED_FROM_CRD_LABEL) or "None"
                info.add_metric([*labels, owner], 1)
                condition = next(
                    (
                        x
                        for x in (cluster.get("status") or {}).get("conditions") or []
                        if x.get("type") == c.CONDITION_RAYCLUSTER_PROVISIONED
                    ),
                    None,
                )
                is_true = condition is not None and condition.get("status") == "True"
                provisioned.add_metric([*labels, "true" if is_true else "false"], 1)
                created = parse_time(meta.get("creationTimestamp"))
                ready_at = parse_time(condition.get("lastTransitionTime")) if is_true and condition else None
                if created and ready_at:
                    duration.add_metric(labels, (ready_at - created).total_seconds())
        yield info
        yield provisioned
        yield duration


class _JobCollector(Collector):
    """kuberay_job_info and kuberay_job_deployment_status from the RayJob informers, at scrape time (KubeRay v1.6.1
    ``controllers/ray/metrics/ray_job_metrics.go``)."""

    def __init__(self, informers: Sequence[Informer]) -> None:
        self.informers = informers

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "kuberay_job_info",
            "Metadata information about RayJob custom resources",
            labels=["name", "namespace", "uid"],
        )
        status = GaugeMetricFamily(
            "kuberay_job_deployment_status",
            "The RayJob's current deployment status",
            labels=["name", "namespace", "uid", "deployment_status"],
        )
        for informer in self.informers:
            for job in informer.list():
                meta = job.get("metadata") or {}
                labels = [str(meta.get("name", "")), str(meta.get("namespace", "")), str(meta.get("uid", ""))]
                info.add_metric(labels, 1)
                state = str((job.get("status") or {}).get("jobDeploymentStatus") or "")
                status.add_metric([*labels, state], 1)
        yield info
        yield status


class _ServiceCollector(Collector):
    """kuberay_service_info and the Ready / UpgradeInProgress condition gauges from the RayService informers, at
    scrape time (KubeRay v1.6.1 ``controllers/ray/metrics/ray_service_metrics.go``): ``condition`` is ``"true"`` when
    the condition is True, else ``"false"`` (also when it is absent)."""

    def __init__(self, informers: Sequence[Informer]) -> None:
        self.informers = informers

    def collect(self) -> Iterator[Metric]:
        info = GaugeMetricFamily(
            "kuberay_service_info", "Metadata information about RayService custom resources",
            labels=["name", "namespace", "uid"],
        )  # fmt: skip
        ready = GaugeMetricFamily(
            "kuberay_service_condition_ready",
            "Describes whether the RayService is ready. Ready means users can send requests to the underlying "
            "cluster and the number of serve endpoints is greater than 0.",
            labels=["name", "namespace", "uid", "condition"],
        )
        upgrading = GaugeMetricFamily(
            "kuberay_service_condition_upgrade_in_progress",
            "Describes whether the RayService is performing a zero-downtime upgrade.",
            labels=["name", "namespace", "uid", "condition"],
        )
        for informer in self.informers:
            for service in informer.list():
                meta = service.get("metadata") or {}
                labels = [str(meta.get("name", "")), str(meta.get("namespace", "")), str(meta.get("uid", ""))]
                info.add_metric(labels, 1)
                conditions = {
                    x.get("type"): x.get("status") for x in (service.get("status") or {}).get("conditions") or []
                }
                for family, kind in (
                    (ready, c.CONDITION_RAYSERVICE_READY),
                    (upgrading, c.CONDITION_UPGRADE_IN_PROGRESS),
                ):
                    family.add_metric([*labels, "true" if conditions.get(kind) == "True" else "false"], 1)
        yield info
        yield ready
        yield upgrading


class _QueueCollector(Collector):
    """workqueue_* of the controllers' queues (one ``name`` label per controller), at scrape time."""

    def __init__(self) -> None:
        self.queues: list[WorkQueue[Any]] = []
        self._waits = Histogram(
            "workqueue_queue_duration_seconds",
            "Seconds a key waits in the work queue before being processed",
            ["name"],
            buckets=_DURATION_BUCKETS,
            registry=None,
        )

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of the work queue", labels=["name"])
        adds = CounterMetricFamily("workqueue_adds", "Adds handled by the work queue", labels=["name"])
        retries = CounterMetricFamily("workqueue_retries", "Retries handled by the work queue", labels=["name"])
        for queue in self.queues:
            depth.add_metric([queue.name], queue.depth)
            adds.add_metric([queue.name], queue.stats.adds)
            retries.add_metric([queue.name], queue.stats.retries)
            waits, queue.stats.waits = queue.stats.waits, []
            child = self._waits.labels(queue.name)
            for seconds in waits:
                child.observe(seconds)
        yield depth
        yield adds
        yield retries
        yield from self._waits.collect()


class Metrics:
    """The operator's registry and the instruments the runtime updates as it works."""

    def __init__(self, host: str = "") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.host = host
        self.rest_requests = Counter(
            "rest_client_requests",
            "HTTP requests to the API server, by status code, host and method",
            ["code", "host", "method"],
            registry=self.registry,
        )
        self.api_requests = Counter(
            "raykube_api_requests",
            "API requests by verb, resource and status code",
            ["verb", "resource", "code"],
            registry=self.registry,
        )
        self.api_latency = Histogram(
            "raykube_api_request_duration_seconds",
            "API request latency by verb",
            ["verb"],
            buckets=_DURATION_BUCKETS,
            registry=self.registry,
        )
        self.reconcile_total = Counter(
            "controller_runtime_reconcile",
            "Reconciliations per controller and result",
            ["controller", "result"],
            registry=self.registry,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors",
            "Reconciliation errors per controller",
            ["controller"],
            registry=self.registry,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Seconds per reconciliation",
            ["controller"],
            buckets=_DURATION_BUCKETS,
            registry=self.registry,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum concurrent reconciles per controller",
            ["controller"],
            registry=self.registry,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Workers reconciling right now, per controller",
            ["controller"],
            registry=self.registry,
        )
        self._queues: _QueueCollector | None = None
        self.job_duration = Gauge(
            "kuberay_job_execution_duration_seconds",
            "Duration from when the RayJob CR\u2019s JobDeploymentStatus transitions from Initializing to either the "
            "Retrying state or a terminal state, such as Complete or Failed. The Retrying state indicates that the CR "
            "previously failed and that spec.backoffLimit is enabled.",
            ["name", "namespace", "uid", "job_deployment_status", "retry_count"],
            registry=self.registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "1 while this instance holds the leader-election lease",
            ["name"],
            registry=self.registry,
        )
        # raykube's own: what --diagnose-after did (runtime.diagnosis); zero without the flag.
        self.diagnosis_passes = Counter(
            "raykube_diagnosis_passes", "Passes of the --diagnose-after loop", registry=self.registry
        )
        self.diagnoses = Counter(
            "raykube_diagnoses", "Objects the --diagnose-after loop asked the doctor about", registry=self.registry
        )
        self.root_cause_events = Counter(
            "raykube_root_cause_events", "RootCause Events the --diagnose-after loop recorded", registry=self.registry
        )

    # RequestObserver (raykube.kube.client)
    def observe(self, verb: str, resource: str, code: int, seconds: float) -> None:
        code_label = str(code) if code else "<error>"
        self.rest_requests.labels(code_label, self.host, _HTTP_METHOD.get(verb, verb.upper())).inc()
        self.api_requests.labels(verb, resource, code_label).inc()
        if verb != "watch":
            self.api_latency.labels(verb).observe(seconds)

    def watch_clusters(self, informers: Sequence[Informer]) -> None:
        self.registry.register(_ClusterCollector(informers))

    def watch_jobs(self, informers: Sequence[Informer]) -> None:
        self.registry.register(_JobCollector(informers))

    def watch_services(self, informers: Sequence[Informer]) -> None:
        self.registry.register(_ServiceCollector(informers))

    # JobMetrics (raykube.controllers.ports)
    def observe_job_duration(
        self, name: str, namespace: str, uid: str, *, deployment_status: str, retry_count: int, seconds: float
    ) -> None:
        self.job_duration.labels(name, namespace, uid, deployment_status, str(retry_count)).set(seconds)

    def forget_job(self, name: str, namespace: str) -> None:
        """KubeRay ``DeletePartialMatch{name, namespace}`` on the duration gauge, for a RayJob that is gone."""
        for labels in list(self._job_label_sets()):
            if labels[0] == name and labels[1] == namespace:
                self.job_duration.remove(*labels)

    def _job_label_sets(self) -> list[tuple[str, ...]]:
        found: list[tuple[str, ...]] = []
        for metric in self.job_duration.collect():
            for sample in metric.samples:
                keys = ("name", "namespace", "uid", "job_deployment_status", "retry_count")
                found.append(tuple(sample.labels[k] for k in keys))
        return found

    def watch_queue(self, queue: WorkQueue[Any]) -> None:
        if self._queues is None:
            self._queues = _QueueCollector()
            self.registry.register(self._queues)
        self._queues.queues.append(queue)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def request_counts(self) -> Mapping[tuple[str, str], float]:
        """(verb, resource) -> requests so far (for the benchmark and tests)."""
        counts: dict[tuple[str, str], float] = {}
        for metric in self.api_requests.collect():
            for sample in metric.samples:
                if sample.name.endswith("_total"):
                    key = (sample.labels["verb"], sample.labels["resource"])
                    counts[key] = counts.get(key, 0.0) + sample.value
        return counts

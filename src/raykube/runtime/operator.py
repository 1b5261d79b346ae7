"""The operator process: configuration in, controller running until told to stop.

Start-up: logs, the API client, the informer caches (also on a standby, so a takeover starts with warm caches), the
probe server (``/healthz`` always 200 while the event loop runs; ``/readyz`` 200 once the caches are synced and, with
leader election, the election loop reaches the API server, whether leading or standing by) and, with
``--enable-metrics``, the metrics server. Then either leader election (workers start when the Lease is won) or the
workers straight away.

Shutdown on SIGTERM/SIGINT: stop taking work, let in-flight reconciles finish, flush events, release the Lease, close
the servers. Losing the Lease stops reconciling at once and exits with status 1, as client-go's leader election does,
so the Deployment restarts the Pod as a standby.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import socket
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

from raykube.api import constants as c
from raykube.api.config import OperatorConfig, describe
from raykube.api.validation.common import generic_version_at_least
from raykube.builders.options import BuildOptions
from raykube.kube.client import Kube
from raykube.kube.events import EVENTS_API, SPAM_BURST, EventRecorder
from raykube.kube.resources import CERTIFICATES, GATEWAYS
from raykube.runtime.diagnosis import REPORTER, Diagnoser, DiagnosisLoop
from raykube.runtime.http import HttpServer
from raykube.runtime.leader import LeaderElector
from raykube.runtime.manager import Manager, StartupError, api_served
from raykube.runtime.metrics import Metrics

log = logging.getLogger(__name__)

# --diagnose-after: the doctor's reads get this share of the operator's QPS, on a rate limiter of their own, so a
# burst of diagnoses never slows the reconciles down (a diagnosis is a handful of lists and gets).
DIAGNOSIS_QPS_SHARE = 0.1
# Builds the doctor's diagnoser on a client of its own (raykube.cli.rootcause: the runtime does not know the doctor).
DiagnoserFactory = Callable[[Kube], Diagnoser]

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def pod_namespace() -> str:
    """The namespace this Pod runs in (KubeRay's default for the Lease), or "default" outside a cluster."""
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
    except OSError:
        return "default"


def build_options(config: OperatorConfig) -> BuildOptions:
    return BuildOptions.from_env(
        os.environ,
        features=config.features(),
        default_container_envs=config.default_container_envs,
        head_sidecar_containers=config.head_sidecar_containers,
        worker_sidecar_containers=config.worker_sidecar_containers,
        default_pod_labels=config.default_pod_labels,
        default_pod_annotations=config.default_pod_annotations,
        batch_scheduler=config.batch_scheduler,
    )


def sidecar_submitter_restart_problem(git_version: str) -> str | None:
    """Why the SidecarSubmitterRestart gate cannot run on an API server of ``git_version`` (KubeRay v1.7.0 main.go's
    message, then its error, as its log line carries them), or None when the server is 1.35.0 or later."""
    at_least, error = generic_version_at_least(git_version, c.MIN_K8S_VERSION_SIDECAR_SUBMITTER_RESTART)
    if error:
        return f"Failed to compare K8s version.: {error}"
    if not at_least:
        return f"SidecarSubmitterRestart feature gate requires K8s 1.35+: current version {git_version} is below 1.35"
    return None


async def check_sidecar_submitter_restart(kube: Kube) -> None:
    """OP-3: with the SidecarSubmitterRestart gate on, refuse to start (:class:`StartupError`) unless the API server is
    at least Kubernetes 1.35.0. The gate puts ``restartPolicy: OnFailure`` on the submitter container, a per-container
    policy older servers do not honour (a failed submitter would then fail the RayJob)."""
    try:
        info = await kube.server_version()
        git_version = str(info.get("gitVersion") or "") if isinstance(info, Mapping) else ""
    except Exception as exc:  # client-go's discovery error, whatever it is: KubeRay exits on it
        raise StartupError(
            "SidecarSubmitterRestart feature gate enabled but unable to detect K8s version. Feature requires K8s "
            f"1.35+.: {exc}"
        ) from exc
    problem = sidecar_submitter_restart_problem(git_version)
    if problem is not None:
        raise StartupError(problem)
    log.info("SidecarSubmitterRestart feature gate: the API server is %s (1.35+ required)", git_version)


class Operator:
    """One operator process, startable and stoppable from code (the tests run several in one event loop)."""

    def __init__(
        self,
        config: OperatorConfig,
        *,
        kube: Kube | None = None,
        identity: str | None = None,
        diagnoser: DiagnoserFactory | None = None,
    ) -> None:
        self.config = config
        self.diagnoser = diagnoser
        self.metrics = Metrics()
        # --qps/--burst per resource type, as KubeRay's: controller-runtime's client has a REST client, and so a
        # client-go token bucket, per group-version-kind (Pods, Services, RayClusters and their status, ...).
        self.kube = kube or Kube.from_config(
            config.kubeconfig, qps=config.qps, burst=config.burst, observer=self.metrics, per_resource=True
        )
        if self.kube.observer is None:
            self.kube.observer = self.metrics
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.options = build_options(config)
        self._manager: Manager | None = None  # built by start(), once discovery says which controllers can run
        self.elector: LeaderElector | None = None
        if config.enable_leader_election:
            namespace = config.leader_election_namespace or pod_namespace()
            self.elector = LeaderElector(self.kube.sibling(), namespace, config.leader_election_id, self.identity)
        self.lost = asyncio.Event()
        self.probes = HttpServer(config.probe_addr, {"/healthz": self._healthz, "/readyz": self._readyz})
        self.metrics_server = (
            HttpServer(config.metrics_addr, {"/metrics": self._metrics}) if config.enable_metrics else None
        )
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def manager(self) -> Manager:
        if self._manager is None:
            raise RuntimeError("the operator has not started: its manager is built at start-up, after API discovery")
        return self._manager

    async def _build_manager(self) -> Manager:
        """The manager, with the controllers this API server allows: with the SidecarSubmitterRestart gate on, the
        API server's version is checked (:func:`check_sidecar_submitter_restart`); with the RayClusterMTLS gate on,
        cert-manager's API is looked up once, as KubeRay v1.7.0's main.go does before it sets up its controllers."""
        options = self.options
        if options.gate(c.GATE_SIDECAR_SUBMITTER_RESTART):
            await check_sidecar_submitter_restart(self.kube)
        if options.gate(c.GATE_RAYCLUSTER_MTLS):
            available = await api_served(self.kube, CERTIFICATES)
            options = dataclasses.replace(options, cert_manager_available=available)
            if not available:  # KubeRay v1.7.0 main.go's words
                log.info(
                    "cert-manager API not found; mTLS controller disabled (RayClusters with tlsOptions and no "
                    "CertificateSecretName will not get auto-generated certs)"
                )
        else:
            log.info("RayClusterMTLS feature gate is disabled, skipping mTLS controller setup")
        if options.gate(c.GATE_RAYSERVICE_INCREMENTAL_UPGRADE):  # the RayService controller's Gateway informers
            options = dataclasses.replace(options, gateway_api_available=await api_served(self.kube, GATEWAYS))
            if not options.gateway_api_available:
                log.info(
                    "Gateway API (gateway.networking.k8s.io/v1) not found; RayServices with upgradeStrategy "
                    "NewClusterWithIncrementalUpgrade will fail to reconcile, as KubeRay v1.7.0's do"
                )
        manager = Manager(
            self.kube,
            options=options,
            namespaces=self.config.watch_namespaces or None,
            reconcile_concurrency=self.config.reconcile_concurrency,
            identity=self.identity,
            metrics=self.metrics,
            use_kubernetes_proxy=self.config.use_kubernetes_proxy,
        )
        manager.diagnosis = self._diagnosis(manager)
        return manager

    def _diagnosis(self, manager: Manager) -> DiagnosisLoop | None:
        """The --diagnose-after loop, when asked for: the doctor's reads and its Events on clients of their own."""
        after = self.config.diagnose_after
        if after <= 0:
            return None
        if self.diagnoser is None:
            raise StartupError("--diagnose-after needs the doctor, which this operator was started without")
        qps = self.kube.qps * DIAGNOSIS_QPS_SHARE
        diagnoser = self.diagnoser(self.kube.sibling(qps=qps, burst=max(1, int(qps * 2))))
        events = self.kube.sibling(qps=self.kube.qps * DIAGNOSIS_QPS_SHARE, burst=SPAM_BURST)
        recorder = EventRecorder(events, REPORTER, api=EVENTS_API, log_events=True)
        return DiagnosisLoop(manager.cache, diagnoser, recorder, after, metrics=self.metrics)

    async def _healthz(self) -> tuple[int, str, bytes]:
        return 200, "text/plain", b"ok\n"

    async def _readyz(self) -> tuple[int, str, bytes]:
        if self._manager is None or not self._manager.synced.is_set():
            return 503, "text/plain", b"caches not synced\n"
        if self.elector is not None and not self.elector.healthy:
            return 503, "text/plain", b"leader election cannot reach the API server\n"
        return 200, "text/plain", b"ok\n"

    async def _metrics(self) -> tuple[int, str, bytes]:
        return 200, "text/plain; version=0.0.4; charset=utf-8", self.metrics.exposition()

    @property
    def leading(self) -> bool:
        return self.elector is None or self.elector.leading.is_set()

    async def start(self) -> None:
        log.info("starting raykube operator", extra={"config": describe(self.config), "identity": self.identity})
        if self._manager is None:
            self._manager = await self._build_manager()
        if self.config.batch_scheduler:
            log.info("batch scheduler %s: Ray Pods get its scheduling metadata", self.config.batch_scheduler)
        if self.manager.options.gate(c.GATE_RAYCLUSTER_NETWORK_POLICY):  # KubeRay v1.7.0 main.go's words
            log.info("RayClusterNetworkPolicy feature gate is enabled, starting NetworkPolicy controller")
        else:
            log.info("RayClusterNetworkPolicy feature gate is disabled, skipping NetworkPolicy controller setup")
        await self.manager.preflight()  # StartupError before anything listens, e.g. Volcano's CRD missing
        await self.probes.start()
        if self.metrics_server is not None:
            await self.metrics_server.start()
        self._tasks.append(asyncio.create_task(self.manager.start_caches(), name="caches"))
        if self.elector is None:
            self._tasks.append(asyncio.create_task(self.manager.start_workers(), name="workers"))
            return
        leader_gauge = self.metrics.leader.labels(self.config.leader_election_id)

        def started_leading() -> None:
            leader_gauge.set(1)
            self._tasks.append(asyncio.create_task(self.manager.start_workers(), name="workers"))

        def lost() -> None:
            leader_gauge.set(0)
            self.manager.shutdown_queues()  # no new reconcile starts from this moment
            self.lost.set()

        self._tasks.append(asyncio.create_task(self.elector.run(started_leading, lost), name="election"))

    async def stop(self) -> None:
        """Stop taking work, finish in-flight reconciles, release the Lease, close the servers."""
        grace = 0.0 if self.lost.is_set() else 10.0  # a lost leader must stop at once
        if self._manager is not None:
            await self._manager.stop(grace=grace)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        await self.probes.stop()
        if self.metrics_server is not None:
            await self.metrics_server.stop()

    async def run(self, stop: asyncio.Event) -> int:
        """Run until ``stop`` is set (exit status 0) or the Lease is lost (1)."""
        await self.start()
        try:
            stopped = asyncio.create_task(stop.wait())
            lost = asyncio.create_task(self.lost.wait())
            await asyncio.wait({stopped, lost}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            lost.cancel()
        finally:
            await self.stop()
        return 1 if self.lost.is_set() else 0


async def run_until_signalled(config: OperatorConfig, *, diagnoser: DiagnoserFactory | None = None) -> int:
    """The ``raykube operator`` process: run until SIGTERM or SIGINT."""
    operator = Operator(config, diagnoser=diagnoser)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        status = await operator.run(stop)
    finally:
        await operator.kube.close()
    log.info("raykube operator stopped", extra={"status": status})
    return status

"""The doctor's rules, grouped by the link of the chain they check; importing this package registers them all.

=================  ===================================================================================================
module             links
=================  ===================================================================================================
``control``        CRD, operator (installed, Ready, watching, RBAC), spec validity, reconciliation, suspend, deletion
``pods``           Pod creation (quota, Pod Security, RBAC), scheduling (resources, placement, GPUs), nodes
``storage``        PVCs: exist, Bound, shared the right way, mounted
``config``         ConfigMaps, Secrets and keys the containers need; images; Ray versions; GPU keys; /dev/shm
``runtime``        crashes, OOM kills, probes, GCS fault tolerance's Redis, ports, the dashboard host
``network``        head Service, selector, ports, EndpointSlices; workers → GCS; the dashboard
``policies``       NetworkPolicies that deny Ray's traffic: DNS, Pod to Pod, the dashboard from the operator/submitter
``state``          the symptoms: head not Ready, workers missing, cluster not ready (or falsely "ready")
``workers``        why fewer workers are wanted: HPA, clamping, workersToDelete, edited replicas
``autoscaling``    a resource request no worker group's Pod can hold (the autoscaler's log, ``--exec``)
``security``       exposure without auth, Ray ports, credentials in the spec, privileged Pods, TLS, isolation
``workloads``      RayJobs and RayServices: validation, waiting for their cluster, the submitter, failures, Serve
``serveapps``      a RayService's Serve applications that fail, one whose runtime_env cannot be installed by name
``inside``         what the in-Pod checks (``--exec``) saw inside Ray: DNS and ports from workers, logs, ray status
``objectstore``    the object store a worker's environment names, probed from that worker (``--exec``)
``upgrades``       a RayService's incremental upgrade (Gateway API) and spec.suspend
=================  ===================================================================================================
"""

from __future__ import annotations

from raykube.doctor.rules import (
    autoscaling,
    config,
    control,
    inside,
    network,
    objectstore,
    pods,
    policies,
    runtime,
    security,
    serveapps,
    state,
    storage,
    upgrades,
    workers,
    workloads,
)
from raykube.doctor.rules.base import CATALOGUE, CHECKERS, RegisteredChecker, RuleSpec

__all__ = [
    "CATALOGUE",
    "CHECKERS",
    "RegisteredChecker",
    "RuleSpec",
    "autoscaling",
    "config",
    "control",
    "inside",
    "network",
    "objectstore",
    "pods",
    "policies",
    "runtime",
    "security",
    "serveapps",
    "state",
    "storage",
    "upgrades",
    "workers",
    "workloads",
]

"""What the sandbox runs: its configuration, its on-disk layout and the command line of every component.

Pure functions of :class:`SandboxConfig` and :class:`Layout`, so the rule "every listener on 127.0.0.1" can be read
(and unit-tested) in one place. Flags follow kwokctl's binary runtime (kwok v0.8.0 ``pkg/kwokctl/components/*.go``,
and its golden output ``test/e2e/kwokctl/dryrun/testdata/binary/create_cluster.txt``) with loopback-only tweaks:

* etcd: client and peer URLs on 127.0.0.1, no fsync (disposable data), compaction every hour.
* kube-apiserver: ``--advertise-address=127.0.0.1`` needs ``--endpoint-reconciler-type=none`` (a loopback address
  is invalid in the ``kubernetes`` Endpoints); the default admission plugins stay on (ServiceAccount,
  DefaultStorageClass, TaintNodesByCondition, ...) because KCM runs and creates what they need.
  ``--kubelet-preferred-address-types=InternalIP`` with kwok nodes whose InternalIP is 127.0.0.1 sends
  ``kubectl logs``/``exec`` to kwok on loopback, never off the box.
* kube-controller-manager and kube-scheduler: no leader election, secure port on 127.0.0.1 with our serving cert.
  ``--node-monitor-grace-period`` pairs with kwok's 200 s node leases, as kwokctl does.
* kwok: only nodes annotated ``kwok.x-k8s.io/node=fake``; ``--server-address`` pinned to 127.0.0.1 (with only
  ``--node-port`` it would bind 0.0.0.0).
* cert-manager (``cert_manager=True``): the controllers of ``sandbox/certmanager/main.go`` with a kubeconfig of their
  own; no listener at all (no webhook, no metrics or health server), so its start-up check is ``--ready-file``.
"""

from __future__ import annotations

import ipaddress
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raykube.sandbox import versions
from raykube.sandbox.kubelet.network import POD_NETWORK_CANDIDATES
from raykube.sandbox.ports import HOST, Ports

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "provisioner")
# With ``runtime="process"`` the sandbox also runs the process runtime, the kubelet of its process nodes.
PROCESS_RUNTIME = "process-runtime"
# With ``cert_manager=True`` the sandbox also runs cert-manager's controller (started last, stopped first).
CERT_MANAGER = "cert-manager"
RUNTIMES = ("kwok", "process")
# The taint of the kwok nodes of a process sandbox (SandboxConfig.kwok_nodes): only Pods that tolerate it run there.
KWOK_TAINT = {"key": "raykube.io/kwok", "value": "true", "effect": "NoSchedule"}
# kwok serves `kubectl logs|exec|port-forward` of process-node Pods from per-Pod objects of these kinds.
KWOK_CRDS = ("Exec", "Logs", "PortForward")

# Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource): a number with an optional suffix.
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$")


@dataclass(frozen=True)
class NodePool:
    """The kwok fake nodes: how many, and what each one offers to the scheduler."""

    count: int = 2
    cpu: str = "8"
    memory: str = "32Gi"
    pods: int = 110

    def __post_init__(self) -> None:
        if not 1 <= self.count <= 1000:
            raise ValueError(f"--nodes must be between 1 and 1000, got {self.count}")
        if not _QUANTITY.match(self.cpu):
            raise ValueError(f"--node-cpu must be a Kubernetes quantity such as 8 or 500m, got {self.cpu!r}")
        if not _QUANTITY.match(self.memory):
            raise ValueError(f"--node-memory must be a Kubernetes quantity such as 32Gi, got {self.memory!r}")
        if not 1 <= self.pods <= 100_000:
            raise ValueError(f"--node-pods must be between 1 and 100000, got {self.pods}")


@dataclass(frozen=True)
class SandboxConfig:
    name: str = "default"
    ports: Ports = field(default_factory=Ports.from_base)
    nodes: NodePool = field(default_factory=NodePool)
    service_cidr: str = "10.96.0.0/16"
    pod_cidr: str = "10.244.0.0/16"
    # Extra flags per component, appended last so they win (e.g. {"kube-apiserver": ("--feature-gates=X=true",)}).
    extra_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # "kwok": every node is a kwok fake node (the default); "process": every node is a process node whose Pods run
    # as real processes (raykube.sandbox.kubelet), which needs root and network namespaces.
    runtime: str = "kwok"
    # With runtime "process": this many kwok nodes beside the process nodes, tainted KWOK_TAINT so that only Pods that
    # tolerate it land there (a Deployment whose image has no local equivalent, say); Ray Pods go to process nodes.
    kwok_nodes: int = 0
    # The API client limits of kube-controller-manager and kube-scheduler (kwok's client has none): a benchmark at a
    # higher rate gives every client the same limit (benchmarks/scale.py --qps/--burst).
    client_qps: float = 100.0
    client_burst: int = 200
    # Run cert-manager's controller (SelfSigned and CA issuers) with its CRDs installed: RayCluster mTLS for real.
    cert_manager: bool = False
    # Install the Gateway API CRDs and Traefik (sandbox/gateway.py: a Deployment on process nodes and the GatewayClass
    # ``traefik``): Gateways and HTTPRoutes for real, as KubeRay's incremental upgrade uses them. Process nodes only.
    gateway: bool = False

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(f"--name must be a lowercase DNS label of at most 40 characters, got {self.name!r}")
        if not self.client_qps > 0 or self.client_burst < 1:
            raise ValueError(
                f"--client-qps must be above 0 and --client-burst at least 1, got {self.client_qps:g} and "
                f"{self.client_burst}"
            )
        for option, cidr in (("service CIDR", self.service_cidr), ("pod CIDR", self.pod_cidr)):
            network = ipaddress.ip_network(cidr)
            if network.is_loopback:
                # Endpoints and EndpointSlices reject loopback addresses: every Service would stay empty.
                raise ValueError(f"the {option} must not be loopback (EndpointSlices reject 127.0.0.0/8): {cidr}")
        if self.runtime not in RUNTIMES:
            raise ValueError(f"--runtime must be one of {', '.join(RUNTIMES)}, got {self.runtime!r}")
        if self.runtime == "process":
            kwok_pod_cidr(self)  # raises, naming the pod CIDR, when no part of it is left for kwok's Pods
        if self.kwok_nodes and self.runtime != "process":
            raise ValueError(f"--kwok-nodes ({self.kwok_nodes}) needs --runtime process: they go beside process nodes")
        if self.gateway and self.runtime != "process":
            raise ValueError(
                "--gateway needs --runtime process: Traefik, the Gateway's data plane, runs as a Deployment whose Pod "
                "must really serve traffic"
            )
        unknown = set(self.extra_args) - set(self.components)
        if unknown:
            raise ValueError(
                f"--extra-arg names unknown component(s) {sorted(unknown)}; known: {list(self.components)}"
            )

    @property
    def components(self) -> tuple[str, ...]:
        """What this sandbox runs, in start order."""
        runtime = (PROCESS_RUNTIME,) if self.runtime == "process" else ()
        return (*COMPONENTS, *runtime, *((CERT_MANAGER,) if self.cert_manager else ()))

    @property
    def dns_ip(self) -> str:
        """The cluster DNS ClusterIP (the tenth address of the service range, as kubeadm picks it)."""
        return str(ipaddress.ip_network(self.service_cidr).network_address + 10)

    @property
    def service_ip(self) -> str:
        """The ClusterIP of the ``kubernetes`` Service: the first address of the service range."""
        return str(next(ipaddress.ip_network(self.service_cidr).hosts()))

    @property
    def server(self) -> str:
        return f"https://{HOST}:{self.ports.apiserver}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ports": self.ports.by_component(),
            "nodes": {
                "count": self.nodes.count,
                "cpu": self.nodes.cpu,
                "memory": self.nodes.memory,
                "pods": self.nodes.pods,
            },
            "serviceCIDR": self.service_cidr,
            "podCIDR": self.pod_cidr,
            "extraArgs": {k: list(v) for k, v in self.extra_args.items()},
            "runtime": self.runtime,
            "kwokNodes": self.kwok_nodes,
            "clientQPS": self.client_qps,
            "clientBurst": self.client_burst,
            "certManager": self.cert_manager,
            "gateway": self.gateway,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SandboxConfig:
        ports = data["ports"]
        return cls(
            name=data["name"],
            ports=Ports(**{k.replace("-", "_"): v for k, v in ports.items()}),
            nodes=NodePool(**data["nodes"]),
            service_cidr=data["serviceCIDR"],
            pod_cidr=data["podCIDR"],
            extra_args={k: tuple(v) for k, v in data.get("extraArgs", {}).items()},
            runtime=data.get("runtime", "kwok"),
            kwok_nodes=int(data.get("kwokNodes", 0)),
            client_qps=float(data.get("clientQPS", 100.0)),
            client_burst=int(data.get("clientBurst", 200)),
            cert_manager=bool(data.get("certManager", False)),
            gateway=bool(data.get("gateway", False)),
        )


@dataclass(frozen=True)
class Layout:
    """Where one sandbox instance keeps its files. Everything the sandbox creates is under ``root``."""

    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "sandbox.json"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd-data"

    @property
    def volumes(self) -> Path:
        """Host directories backing the PersistentVolumes that the sandbox provisioner creates."""
        return self.root / "volumes"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig handed to people and tests."""
        return self.root / "kubeconfig"

    def component_kubeconfig(self, component: str) -> Path:
        return self.root / "kubeconfigs" / f"{component}.yaml"

    @property
    def kwok_config(self) -> Path:
        return self.root / "kwok.yaml"

    @property
    def scheduler_config(self) -> Path:
        return self.root / "kube-scheduler.yaml"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    @property
    def kubelet(self) -> Path:
        """The process runtime's state: its configuration, the Pods' directories, the exec-bin of kwok."""
        return self.root / "kubelet"

    @property
    def kubelet_config(self) -> Path:
        return self.kubelet / "config.json"

    @property
    def cert_manager_ready(self) -> Path:
        """Created by cert-manager's controller once its informers have synced."""
        return self.root / "cert-manager.ready"

    @property
    def exec_bin(self) -> Path:
        """kwok's PATH in process mode: a command name per symlink, each entering the container (see kubelet)."""
        return self.kubelet / "exec-bin"


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    kwok: Path
    kwok_stages: Path
    helm: Path
    cert_manager: Path
    cert_manager_crds: Path

    @classmethod
    def from_cache(cls, root: Path | None = None) -> Binaries:
        kwok_dir = versions.artifact_dir(versions.KWOK, root)
        return cls(
            etcd=versions.binary(versions.ETCD, root=root),
            kube_apiserver=versions.binary(versions.KUBERNETES, "kube-apiserver", root),
            kube_controller_manager=versions.binary(versions.KUBERNETES, "kube-controller-manager", root),
            kube_scheduler=versions.binary(versions.KUBERNETES, "kube-scheduler", root),
            kubectl=versions.binary(versions.KUBERNETES, "kubectl", root),
            kwok=kwok_dir / "kwok",
            kwok_stages=kwok_dir / "stages",
            helm=versions.binary(versions.HELM, root=root),
            cert_manager=versions.binary(versions.CERT_MANAGER, root=root),
            cert_manager_crds=versions.artifact_dir(versions.CERT_MANAGER, root) / "crds",
        )

    @property
    def path_dir(self) -> Path:
        """The directory to put on PATH for ``kubectl``."""
        return self.kubectl.parent


def etcd_argv(cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    client = f"http://{HOST}:{cfg.ports.etcd}"
    peer = f"http://{HOST}:{cfg.ports.etcd_peer}"
    return [
        str(bins.etcd),
        "--name=sandbox",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=sandbox={peer}",
        "--initial-cluster-state=new",
        "--auto-compaction-retention=1",
        "--quota-backend-bytes=8589934592",
        "--unsafe-no-fsync",  # the data is thrown away with the sandbox; fsync only costs time
        "--log-level=warn",
    ]


def apiserver_argv(cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    pki = layout.pki
    return [
        str(bins.kube_apiserver),
        f"--etcd-servers=http://{HOST}:{cfg.ports.etcd}",
        f"--bind-address={HOST}",
        f"--advertise-address={HOST}",
        "--endpoint-reconciler-type=none",
        f"--secure-port={cfg.ports.apiserver}",
        f"--cert-dir={layout.root / 'apiserver-certs'}",
        f"--tls-cert-file={pki / 'serving.crt'}",
        f"--tls-private-key-file={pki / 'serving.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        "--authorization-mode=Node,RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={cfg.service_cidr}",
        "--kubelet-preferred-address-types=InternalIP",
        "--allow-privileged=true",
        "--profiling=false",
        "--v=1",
    ]


def controller_manager_argv(cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    kubeconfig = layout.component_kubeconfig("kube-controller-manager")
    pki = layout.pki
    return [
        str(bins.kube_controller_manager),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={HOST}",
        f"--secure-port={cfg.ports.kube_controller_manager}",
        f"--tls-cert-file={pki / 'serving.crt'}",
        f"--tls-private-key-file={pki / 'serving.key'}",
        "--leader-elect=false",
        "--controllers=*",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}",
        f"--cluster-signing-key-file={pki / 'ca.key'}",
        "--use-service-account-credentials=false",
        f"--service-cluster-ip-range={cfg.service_cidr}",
        "--node-monitor-grace-period=3m20s",
        f"--kube-api-qps={cfg.client_qps:g}",
        f"--kube-api-burst={cfg.client_burst}",
        "--v=1",
    ]


def scheduler_config(layout: Layout, cfg: SandboxConfig | None = None) -> dict[str, Any]:
    cfg = cfg or SandboxConfig()
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": str(layout.component_kubeconfig("kube-scheduler")),
            "qps": cfg.client_qps,
            "burst": cfg.client_burst,
        },
        "leaderElection": {"leaderElect": False},
    }


def scheduler_argv(cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    kubeconfig = layout.component_kubeconfig("kube-scheduler")
    return [
        str(bins.kube_scheduler),
        f"--config={layout.scheduler_config}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={HOST}",
        f"--secure-port={cfg.ports.kube_scheduler}",
        f"--tls-cert-file={layout.pki / 'serving.crt'}",
        f"--tls-private-key-file={layout.pki / 'serving.key'}",
        "--v=1",
    ]


def kwok_pod_cidr(cfg: SandboxConfig) -> str:
    """kwok's pool of fake Pod IPs: the pod CIDR, or beside process nodes its largest part no process network can use.

    kwok hands out addresses from the start of its pool; a process sandbox picks its Pod network from
    ``POD_NETWORK_CANDIDATES``, so the two pools never overlap, however many fake Pods kwok runs.
    """
    pool = ipaddress.ip_network(cfg.pod_cidr)
    if cfg.runtime != "process" or not isinstance(pool, ipaddress.IPv4Network):
        return str(pool)
    parts = [pool]
    process = ipaddress.collapse_addresses(ipaddress.IPv4Network(candidate) for candidate in POD_NETWORK_CANDIDATES)
    for taken in process:
        left: list[ipaddress.IPv4Network] = []
        for part in parts:  # two CIDRs are either disjoint or one holds the other
            if taken.subnet_of(part):
                left.extend(part.address_exclude(taken))
            elif not part.subnet_of(taken):
                left.append(part)
        parts = left
    if parts:
        return str(min(parts, key=lambda part: (part.prefixlen, part.network_address)))
    raise ValueError(f"the pod CIDR {cfg.pod_cidr} leaves no room for kwok's Pods beside the process Pod networks")


def kwok_argv(cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    crds = [f"--enable-crds={','.join(KWOK_CRDS)}"] if cfg.runtime == "process" else []
    return [
        str(bins.kwok),
        f"--kubeconfig={layout.component_kubeconfig('kwok')}",
        f"--config={layout.kwok_config}",
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        f"--cidr={kwok_pod_cidr(cfg)}",
        f"--node-ip={HOST}",
        f"--node-port={cfg.ports.kwok}",
        f"--server-address={HOST}:{cfg.ports.kwok}",
        "--node-lease-duration-seconds=200",
        *crds,
    ]


def provisioner_argv(cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    return [
        sys.executable,
        "-m",
        "raykube.sandbox.provisioner",
        f"--kubeconfig={layout.component_kubeconfig('provisioner')}",
        f"--volumes-dir={layout.volumes}",
    ]


def process_runtime_argv(cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    return [sys.executable, "-m", "raykube.sandbox.kubelet", f"--config={layout.kubelet_config}"]


def cert_manager_argv(cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    return [
        str(bins.cert_manager),
        f"--kubeconfig={layout.component_kubeconfig(CERT_MANAGER)}",
        f"--ready-file={layout.cert_manager_ready}",
        "--v=1",
    ]


ARGV = {
    "etcd": etcd_argv,
    "kube-apiserver": apiserver_argv,
    "kube-controller-manager": controller_manager_argv,
    "kube-scheduler": scheduler_argv,
    "kwok": kwok_argv,
    "provisioner": provisioner_argv,
    PROCESS_RUNTIME: process_runtime_argv,
    CERT_MANAGER: cert_manager_argv,
}


def argv(component: str, cfg: SandboxConfig, layout: Layout, bins: Binaries) -> list[str]:
    """The full command line of ``component``, with the user's extra flags last."""
    return [*ARGV[component](cfg, layout, bins), *cfg.extra_args.get(component, ())]

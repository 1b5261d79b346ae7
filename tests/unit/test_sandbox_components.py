from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raykube.sandbox import Binaries, NodePool, Ports, SandboxConfig
from raykube.sandbox.components import CERT_MANAGER, COMPONENTS, Layout, argv, kwok_pod_cidr, scheduler_config
from raykube.sandbox.kubelet.network import POD_NETWORK_CANDIDATES
from raykube.sandbox.kwok import default_storage_class, fake_node
from raykube.sandbox.pki import CLIENTS

LAYOUT = Layout(Path("/state/sandboxes/t"))
BINS = Binaries.from_cache(Path("/cache"))
CONFIG = SandboxConfig(name="t", ports=Ports.from_base(20000))

_ADDRESS_FLAG = re.compile(r"--[a-z-]*(address|url|urls|servers|cluster)=(.*)")


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_address_a_component_is_given_is_loopback(component: str) -> None:
    for flag in argv(component, CONFIG, LAYOUT, BINS):
        match = _ADDRESS_FLAG.match(flag)
        if not match or (match[1] == "cluster" and "=http" not in flag):
            continue
        for address in re.findall(r"(?://)?(\d+\.\d+\.\d+\.\d+)", match[2]):
            assert address == "127.0.0.1", f"{component}: {flag}"


@pytest.mark.parametrize("component", ["kube-apiserver", "kube-controller-manager", "kube-scheduler"])
def test_kube_components_bind_their_secure_port_on_loopback(component: str) -> None:
    assert "--bind-address=127.0.0.1" in argv(component, CONFIG, LAYOUT, BINS)


def test_kwok_serves_on_loopback_because_node_port_alone_would_bind_all_interfaces() -> None:
    flags = argv("kwok", CONFIG, LAYOUT, BINS)
    assert f"--server-address=127.0.0.1:{CONFIG.ports.kwok}" in flags
    assert "--manage-all-nodes=false" in flags


def test_each_component_gets_its_own_port() -> None:
    assert len(set(CONFIG.ports.by_component().values())) == 6
    assert f"--secure-port={CONFIG.ports.apiserver}" in argv("kube-apiserver", CONFIG, LAYOUT, BINS)


def test_every_file_a_component_uses_is_inside_the_sandbox_or_the_cache() -> None:
    for component in COMPONENTS:
        for flag in argv(component, CONFIG, LAYOUT, BINS):
            value = flag.partition("=")[2]
            if value.startswith("/") and not value.startswith(("/state/sandboxes/t", "/cache")):
                pytest.fail(f"{component}: {flag} points outside the sandbox")


def test_extra_args_come_last_so_they_win() -> None:
    config = SandboxConfig(name="t", ports=CONFIG.ports, extra_args={"kube-apiserver": ("--v=4",)})
    assert argv("kube-apiserver", config, LAYOUT, BINS)[-1] == "--v=4"


def test_scheduler_config_disables_leader_election() -> None:
    assert scheduler_config(LAYOUT)["leaderElection"] == {"leaderElect": False}


def test_the_client_limits_of_the_control_plane_follow_the_config_and_survive_the_state_file() -> None:
    assert (scheduler_config(LAYOUT)["clientConnection"]["qps"], "--kube-api-qps=100") == (
        100.0,
        next(a for a in argv("kube-controller-manager", CONFIG, LAYOUT, BINS) if a.startswith("--kube-api-qps")),
    )
    fast = SandboxConfig(name="t", ports=CONFIG.ports, client_qps=500, client_burst=1000)
    connection = scheduler_config(LAYOUT, fast)["clientConnection"]
    assert (connection["qps"], connection["burst"]) == (500, 1000)
    manager = argv("kube-controller-manager", fast, LAYOUT, BINS)
    assert "--kube-api-qps=500" in manager and "--kube-api-burst=1000" in manager
    assert SandboxConfig.from_json(fast.to_json()) == fast
    older = {k: v for k, v in fast.to_json().items() if k not in ("clientQPS", "clientBurst")}  # an older state file
    assert SandboxConfig.from_json(older).client_qps == 100.0
    with pytest.raises(ValueError, match="--client-qps"):
        SandboxConfig(name="t", client_qps=0)


@pytest.mark.parametrize(
    ("kwargs", "option"),
    [
        ({"count": 0}, "--nodes"),
        ({"cpu": "eight"}, "--node-cpu"),
        ({"memory": "32 GB"}, "--node-memory"),
        ({"pods": 0}, "--node-pods"),
    ],
)
def test_bad_node_options_name_the_option(kwargs: dict[str, object], option: str) -> None:
    with pytest.raises(ValueError, match=re.escape(option)):
        NodePool(**kwargs)  # type: ignore[arg-type]


def test_bad_config_values_name_the_field() -> None:
    with pytest.raises(ValueError, match="--name"):
        SandboxConfig(name="Not A Label")
    with pytest.raises(ValueError, match="loopback"):
        SandboxConfig(name="t", pod_cidr="127.1.0.0/16")
    with pytest.raises(ValueError, match="--extra-arg"):
        SandboxConfig(name="t", extra_args={"kubelet": ("--v=2",)})
    with pytest.raises(ValueError, match="--port-base"):
        Ports.from_base(80)


@given(
    count=st.integers(1, 1000),
    cpu=st.from_regex(r"\A[1-9][0-9]{0,3}(m)?\Z"),
    memory=st.from_regex(r"\A[1-9][0-9]{0,3}(Mi|Gi)\Z"),
    pods=st.integers(1, 100_000),
    base=st.integers(1024, 65000),
)
def test_config_round_trips_through_the_state_file(count: int, cpu: str, memory: str, pods: int, base: int) -> None:
    config = SandboxConfig(
        name="rt",
        ports=Ports.from_base(base),
        nodes=NodePool(count, cpu, memory, pods),
        extra_args={"kwok": ("--v=2",)},
    )
    assert SandboxConfig.from_json(config.to_json()) == config


def test_service_ip_is_the_first_address_of_the_service_range() -> None:
    assert SandboxConfig(name="t", service_cidr="10.96.0.0/16").service_ip == "10.96.0.1"


def test_fake_nodes_are_kwok_managed_untainted_and_reach_kwok_on_loopback() -> None:
    node = fake_node(1, NodePool(count=2, cpu="4", memory="8Gi", pods=50))
    assert node["metadata"]["name"] == "kwok-node-1"
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert "taints" not in node["spec"]
    assert node["status"]["allocatable"] == {
        "cpu": "4",
        "memory": "8Gi",
        "pods": "50",
        "ephemeral-storage": "100Gi",
    }
    assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]


def test_the_storage_class_is_the_default_and_binds_immediately() -> None:
    klass = default_storage_class()
    assert klass["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert klass["volumeBindingMode"] == "Immediate"


def test_a_process_sandbox_keeps_its_runtime_and_kwok_nodes_and_only_it_may_have_extra_kwok_nodes() -> None:
    config = SandboxConfig(name="p", runtime="process", kwok_nodes=1)
    again = SandboxConfig.from_json(config.to_json())
    assert (again.runtime, again.kwok_nodes) == ("process", 1)
    assert again.components[-1] == "process-runtime"
    with pytest.raises(ValueError, match=r"--kwok-nodes \(1\) needs --runtime process"):
        SandboxConfig(name="k", kwok_nodes=1)
    with pytest.raises(ValueError, match="--runtime must be one of"):
        SandboxConfig(name="x", runtime="docker")


def test_the_kwok_nodes_beside_process_nodes_are_tainted() -> None:
    taint = {"key": "raykube.io/kwok", "value": "true", "effect": "NoSchedule"}
    assert fake_node(0, NodePool(), taints=[taint])["spec"] == {"taints": [taint]}
    assert fake_node(0, NodePool())["spec"] == {}


def test_kwok_pods_take_the_whole_pod_cidr_on_kwok_sandboxes() -> None:
    assert kwok_pod_cidr(SandboxConfig()) == "10.244.0.0/16"


BASES = ["10.0.0.0", "10.244.0.0", "10.244.128.0", "10.244.240.0", "172.16.0.0"]


@given(st.integers(min_value=8, max_value=24), st.sampled_from(BASES))
def test_kwok_pods_never_take_a_process_pod_network(prefix: int, base: str) -> None:
    pod_cidr = str(ipaddress.ip_network(f"{base}/{prefix}", strict=False))
    process = [ipaddress.ip_network(candidate) for candidate in POD_NETWORK_CANDIDATES]
    if any(ipaddress.ip_network(pod_cidr).subnet_of(p) for p in ipaddress.collapse_addresses(process)):  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="pod CIDR"):
            SandboxConfig(pod_cidr=pod_cidr, runtime="process")
        return
    kwok = ipaddress.ip_network(kwok_pod_cidr(SandboxConfig(pod_cidr=pod_cidr, runtime="process")))
    assert kwok.subnet_of(ipaddress.ip_network(pod_cidr))  # type: ignore[arg-type]
    assert not any(kwok.overlaps(ipaddress.ip_network(candidate)) for candidate in POD_NETWORK_CANDIDATES)


def test_beside_process_nodes_kwok_gets_the_lower_half_of_the_default_pod_cidr() -> None:
    assert kwok_pod_cidr(SandboxConfig(runtime="process")) == "10.244.0.0/17"


def test_cert_manager_runs_only_on_request_last_with_its_own_kubeconfig_and_survives_the_state_file() -> None:
    assert CERT_MANAGER not in CONFIG.components
    config = SandboxConfig(name="t", ports=CONFIG.ports, runtime="process", cert_manager=True)
    assert config.components[-2:] == ("process-runtime", CERT_MANAGER)
    flags = argv(CERT_MANAGER, config, LAYOUT, BINS)
    assert flags[0] == str(BINS.cert_manager) and BINS.cert_manager.is_relative_to("/cache")
    assert f"--kubeconfig={LAYOUT.component_kubeconfig(CERT_MANAGER)}" in flags
    assert f"--ready-file={LAYOUT.cert_manager_ready}" in flags
    assert not [f for f in flags if "addr" in f or "port" in f], "cert-manager must not listen"
    assert SandboxConfig.from_json(config.to_json()) == config
    assert CERT_MANAGER in CLIENTS

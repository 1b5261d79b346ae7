from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from raykube.sandbox import PortInUseError, Ports
from raykube.sandbox.ports import check_free, ephemeral_port_range, listeners, port_holder, port_is_free


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_listening_port_is_busy_and_its_holder_is_named(listening: int) -> None:
    assert not port_is_free(listening)
    assert port_holder(listening).startswith(f"pid {os.getpid()} (")


def test_check_free_names_port_component_and_holder(listening: int) -> None:
    free = Ports.free()
    ports = Ports(free.etcd, free.etcd_peer, listening, free.kube_controller_manager, free.kube_scheduler, free.kwok)
    with pytest.raises(PortInUseError) as caught:
        check_free(ports)
    error = caught.value
    assert error.port == listening
    assert error.component == "apiserver"
    assert f"127.0.0.1:{listening}" in str(error)
    assert f"pid {os.getpid()}" in str(error)
    assert "--port-base" in str(error)


def test_listeners_of_this_process_include_the_socket(listening: int) -> None:
    assert ("127.0.0.1", listening) in listeners(os.getpid())


def test_free_ports_are_distinct_free_and_never_ephemeral() -> None:
    ports = Ports.free()
    numbers = list(ports.by_component().values())
    assert len(set(numbers)) == len(numbers)
    assert all(port_is_free(p) for p in numbers)
    low, high = ephemeral_port_range()
    assert not any(low <= p <= high for p in numbers)

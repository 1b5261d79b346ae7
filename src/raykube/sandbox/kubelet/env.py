"""A container's environment as the kubelet builds it (``pkg/kubelet/kubelet_pods.go`` makeEnvironmentVariables).

Order and precedence as upstream: ``envFrom`` first (later sources win, ``prefix`` prepended), then ``env`` in
order (a ``value`` expands ``$(VAR)`` from what is defined so far and the service variables; ``valueFrom`` reads a
field, a resource, a ConfigMap key or a Secret key), then the service link variables that nothing overrode. A
missing ConfigMap, Secret or key that is not ``optional`` raises :class:`ContainerConfigError` with the kubelet's
message, which the runtime reports as ``CreateContainerConfigError`` without starting anything.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from raykube.golang.strconv import quote

# Getter of a ConfigMap's or Secret's body: None when it does not exist.
Getter = Callable[[str, str], Awaitable[Mapping[str, Any] | None]]

_SUFFIXES = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_MASTER_SERVICES = frozenset({"kubernetes"})


class ContainerConfigError(Exception):
    """The container cannot be configured (the kubelet's ``CreateContainerConfigError``)."""


def quantity(text: str | int | float) -> Decimal:
    """A Kubernetes resource quantity as an exact number (``"500m"`` -> 0.5, ``"2Gi"`` -> 2147483648)."""
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise ValueError(f"not a quantity: {text!r}")
    return Decimal(match[1]) * _SUFFIXES[match[2] or ""]


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """``$(VAR)`` expansion as Kubernetes does it: ``$$`` is a literal ``$``, unknown references stay as written."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(":
            end = text.find(")", i + 2)
            if end < 0:
                out.append(text[i:])
                break
            name = text[i + 2 : end]
            value = lookup(name)
            out.append(value if value is not None else text[i : end + 1])
            i = end + 1
        else:
            out.append(char)
            out.append(following)
            i += 2
    return "".join(out)


def _env_name(name: str) -> str:
    return name.replace("-", "_").upper()


def service_env(services: list[Mapping[str, Any]], namespace: str, enable_service_links: bool) -> dict[str, str]:
    """The Docker-link variables (``<SVC>_SERVICE_HOST`` and friends) of the Services a Pod in ``namespace`` sees:
    its namespace's (with ``enableServiceLinks``) and the ``kubernetes`` Service of ``default`` (always)."""
    chosen: dict[str, Mapping[str, Any]] = {}
    for service in services:
        meta, spec = service.get("metadata") or {}, service.get("spec") or {}
        ip = spec.get("clusterIP")
        if not ip or ip == "None" or not spec.get("ports"):
            continue
        name = str(meta.get("name"))
        if meta.get("namespace") == "default" and name in _MASTER_SERVICES:
            chosen.setdefault(name, service)
        elif meta.get("namespace") == namespace and enable_service_links:
            chosen[name] = service
    env: dict[str, str] = {}
    for name, service in chosen.items():
        spec = service["spec"]
        ip, ports = spec["clusterIP"], spec["ports"]
        prefix = _env_name(name)
        env[f"{prefix}_SERVICE_HOST"] = ip
        env[f"{prefix}_SERVICE_PORT"] = str(ports[0]["port"])
        for port in ports:
            if port.get("name"):
                env[f"{prefix}_SERVICE_PORT_{_env_name(port['name'])}"] = str(port["port"])
        for index, port in enumerate(ports):
            protocol = str(port.get("protocol") or "TCP")
            address = f"{protocol.lower()}://{ip}:{port['port']}"
            if index == 0:
                env[f"{prefix}_PORT"] = address
            port_prefix = f"{prefix}_PORT_{port['port']}_{protocol.upper()}"
            env[port_prefix] = address
            env[f"{port_prefix}_PROTO"] = protocol.lower()
            env[f"{port_prefix}_PORT"] = str(port["port"])
            env[f"{port_prefix}_ADDR"] = ip
    return env


def format_map(values: Mapping[str, str]) -> str:
    """fieldpath.FormatMap: ``key="value"`` lines (``%q``, :func:`~raykube.golang.strconv.quote`), keys sorted (how
    the downward API renders labels)."""
    return "\n".join(f"{key}={quote(values[key])}" for key in sorted(values))


_SUBSCRIPT = re.compile(r"^(metadata\.(?:labels|annotations))\['(.*)'\]$")


def field_value(pod: Mapping[str, Any], field_path: str, *, pod_ip: str, host_ip: str) -> str:
    """A downward API ``fieldRef`` of ``pod`` (podFieldSelectorRuntimeValue + ExtractFieldPathAsString)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if match := _SUBSCRIPT.match(field_path):
        source = meta.get(match[1].split(".")[1]) or {}
        return str(source.get(match[2], ""))
    simple: dict[str, Callable[[], str]] = {
        "spec.nodeName": lambda: str(spec.get("nodeName") or ""),
        "spec.serviceAccountName": lambda: str(spec.get("serviceAccountName") or ""),
        "status.hostIP": lambda: host_ip,
        "status.hostIPs": lambda: host_ip,
        "status.podIP": lambda: pod_ip,
        "status.podIPs": lambda: pod_ip,
        "metadata.name": lambda: str(meta.get("name") or ""),
        "metadata.namespace": lambda: str(meta.get("namespace") or ""),
        "metadata.uid": lambda: str(meta.get("uid") or ""),
        "metadata.labels": lambda: format_map(meta.get("labels") or {}),
        "metadata.annotations": lambda: format_map(meta.get("annotations") or {}),
    }
    if field_path not in simple:
        raise ContainerConfigError(f"unsupported fieldPath: {field_path}")
    return simple[field_path]()


@dataclass(frozen=True)
class NodeCapacity:
    """What a container without a limit sees as its limit (the kubelet defaults limits to node allocatable)."""

    cpu: str = "8"
    memory: str = "32Gi"
    ephemeral_storage: str = "100Gi"


def resource_value(
    pod: Mapping[str, Any], container: Mapping[str, Any], ref: Mapping[str, Any], node: NodeCapacity
) -> str:
    """A downward API ``resourceFieldRef``: the value divided by ``divisor``, rounded up (``limits.*`` default to
    node allocatable, ``requests.*`` to the limit or zero, as the kubelet does)."""
    if ref.get("containerName"):
        candidates = [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]
        found = [c for c in candidates if c.get("name") == ref["containerName"]]
        if not found:
            raise ContainerConfigError(f"container {ref['containerName']} not found")
        container = found[0]
    resources = container.get("resources") or {}
    kind, _, name = str(ref.get("resource", "")).partition(".")
    defaults = {"cpu": node.cpu, "memory": node.memory, "ephemeral-storage": node.ephemeral_storage}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    if kind == "limits":
        raw = limits.get(name, defaults.get(name, "0"))
    elif kind == "requests":
        raw = requests.get(name, limits.get(name, "0"))
    else:
        raise ContainerConfigError(f"unsupported container resource : {ref.get('resource')}")
    divisor = quantity(ref.get("divisor") or "1")
    if divisor == 0:
        divisor = Decimal(1)
    return str(math.ceil(quantity(raw) / divisor))


async def container_env(  # noqa: PLR0912, PLR0915 - every env source in the kubelet's order
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    pod_ip: str,
    host_ip: str,
    configmap: Getter,
    secret: Getter,
    services: Mapping[str, str],
    node: NodeCapacity | None = None,
) -> dict[str, str]:
    """The variables the kubelet gives ``container`` (not including the image's own), or ContainerConfigError."""
    namespace = str(pod["metadata"]["namespace"])
    configmaps: dict[str, Mapping[str, Any]] = {}
    secrets: dict[str, Mapping[str, Any]] = {}

    async def load_configmap(name: str) -> Mapping[str, Any] | None:
        if name not in configmaps:
            found = await configmap(namespace, name)
            if found is None:
                return None
            configmaps[name] = found
        return configmaps[name]

    async def load_secret(name: str) -> Mapping[str, Any] | None:
        if name not in secrets:
            found = await secret(namespace, name)
            if found is None:
                return None
            secrets[name] = found
        return secrets[name]

    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        if ref := source.get("configMapRef"):
            cm = await load_configmap(ref["name"])
            if cm is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'configmap "{ref["name"]}" not found')
            for key, value in (cm.get("data") or {}).items():
                env[prefix + key] = str(value)
        elif ref := source.get("secretRef"):
            sec = await load_secret(ref["name"])
            if sec is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'secret "{ref["name"]}" not found')
            for key, value in (sec.get("data") or {}).items():
                env[prefix + key] = base64.b64decode(value).decode(errors="replace")

    def lookup(name: str) -> str | None:
        return env.get(name, services.get(name))

    for item in container.get("env") or []:
        name, value, source = item["name"], item.get("value"), item.get("valueFrom")
        if value:
            env[name] = expand(str(value), lookup)
            continue
        if not source:
            env[name] = ""
            continue
        if ref := source.get("fieldRef"):
            env[name] = field_value(pod, ref["fieldPath"], pod_ip=pod_ip, host_ip=host_ip)
        elif ref := source.get("resourceFieldRef"):
            env[name] = resource_value(pod, container, ref, node or NodeCapacity())
        elif ref := source.get("configMapKeyRef"):
            optional = bool(ref.get("optional"))
            cm = await load_configmap(ref["name"])
            if cm is None:
                if optional:
                    continue
                raise ContainerConfigError(f'configmap "{ref["name"]}" not found')
            data = cm.get("data") or {}
            if ref["key"] not in data:
                if optional:
                    continue
                raise ContainerConfigError(f"couldn't find key {ref['key']} in ConfigMap {namespace}/{ref['name']}")
            env[name] = str(data[ref["key"]])
        elif ref := source.get("secretKeyRef"):
            optional = bool(ref.get("optional"))
            sec = await load_secret(ref["name"])
            if sec is None:
                if optional:
                    continue
                raise ContainerConfigError(f'secret "{ref["name"]}" not found')
            data = sec.get("data") or {}
            if ref["key"] not in data:
                if optional:
                    continue
                raise ContainerConfigError(f"couldn't find key {ref['key']} in Secret {namespace}/{ref['name']}")
            env[name] = base64.b64decode(data[ref["key"]]).decode(errors="replace")
        else:
            env[name] = ""
    for key, value in services.items():
        env.setdefault(key, value)
    return env


def command_line(
    container: Mapping[str, Any], env: Mapping[str, str], entrypoint: list[str], cmd: list[str]
) -> list[str]:
    """The process to run, as a container runtime picks it: ``command`` replaces the image's entrypoint (and drops
    its default arguments), ``args`` replace those arguments; ``$(VAR)`` expands from the container's env."""
    command = [expand(str(part), env.get) for part in container.get("command") or []]
    args = [expand(str(part), env.get) for part in container.get("args") or []]
    if command:
        return [*command, *args]
    return [*entrypoint, *(args or cmd)]

"""The objects ``kubectl ray create`` and ``kubectl ray job submit`` write, as pure functions of their flags.

They follow KubeRay v1.6.1's plugin (``kubectl-plugin/pkg/util/generation``): a head container ``ray-head`` with the
GCS, dashboard and client ports, one worker group ``default-group`` of ``ray-worker`` containers; requests for CPU,
memory, GPU, TPU and ephemeral storage, the same as limits except CPU, which is never limited; a resource only when
it is set and not zero.
"""

from __future__ import annotations

import csv
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from raykube.api import constants as c
from raykube.golang.quantity import QuantityError, canonical, parse_quantity

API_VERSION = f"{c.API_GROUP}/v1"


class OptionError(ValueError):
    """A flag or a config file value that cannot be used; the message names it."""


def parse_map(values: Iterable[str] | None, flag: str) -> dict[str, str]:
    """``--labels app=ray,env=dev --labels team=ml`` as one map, read as pflag's StringToString reads it: repeated
    flags merge; a value with one ``=`` is one pair (``a=b,c`` is ``a: "b,c"``); with more, comma-separated pairs
    (CSV, so a pair may be quoted)."""
    result: dict[str, str] = {}
    for value in values or ():
        equals = value.count("=")
        if equals == 0:
            raise OptionError(f'invalid argument "{value}" for "{flag}" flag: {value} must be formatted as key=value')
        pairs = [value.strip('"')] if equals == 1 else next(csv.reader([value]), [])
        for pair in pairs:
            key, eq, val = pair.partition("=")
            if not eq:
                raise OptionError(
                    f'invalid argument "{value}" for "{flag}" flag: {pair} must be formatted as key=value'
                )
            result[key] = val
    return result


# apimachinery's resource.ErrFormatWrong and ErrSuffix, the words KubeRay's plugin reports a bad quantity with.
QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
QUANTITY_SUFFIX = "unable to parse quantity's suffix"
# A number, then only characters a suffix may have: Go gets that far before it finds the suffix unknown.
_GO_QUANTITY_CHARACTERS = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)[eEinumkKMGTP]*[-+]?[0-9]*")


def check_quantity(flag: str, value: str) -> None:
    """``<flag> is not a valid resource quantity: ...`` or ``<flag> cannot be negative`` (the plugin's messages)."""
    try:
        quantity = parse_quantity(value)
    except QuantityError as exc:
        suffix = "suffix" in str(exc) and re.fullmatch(
            r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)[eEinumkKMGTP]*[-+]?[0-9]*", value
        )
        why = QUANTITY_SUFFIX if suffix else QUANTITY_FORMAT
        raise OptionError(f"{flag} is not a valid resource quantity: {why}") from None
    if quantity.value < 0:
        raise OptionError(f"{flag} cannot be negative")


def resolve_image(image: str, ray_version: str) -> str:
    """``create cluster``: the default image follows ``--ray-version``; an explicit image is kept."""
    if not image or (image == c.KUBECTL_RAY_DEFAULT_IMAGE and ray_version != c.KUBECTL_RAY_DEFAULT_RAY_VERSION):
        return f"rayproject/ray:{ray_version}"
    return image


def _nonzero(value: str) -> bool:
    return bool(value) and not parse_quantity(value).is_zero


def resources(
    cpu: str = "", memory: str = "", gpu: str = "", ephemeral: str = "", tpu: str = ""
) -> dict[str, dict[str, str]]:
    """Requests of everything set and not zero; the same limits except CPU."""
    named = {
        "cpu": cpu,
        "memory": memory,
        "ephemeral-storage": ephemeral,
        c.NVIDIA_GPU_RESOURCE_NAME: gpu,
        c.TPU_RESOURCE_NAME: tpu,
    }
    requests = {name: canonical(value) for name, value in named.items() if _nonzero(value)}
    return {"limits": {k: v for k, v in requests.items() if k != "cpu"}, "requests": requests}


@dataclass
class Group:
    """A worker group of the generated RayCluster."""

    name: str = c.KUBECTL_RAY_DEFAULT_GROUP
    replicas: int = 1
    cpu: str = "2"
    memory: str = "4Gi"
    gpu: str = "0"
    tpu: str = "0"
    ephemeral: str = ""
    num_of_hosts: int | None = 1
    ray_start_params: dict[str, str] = field(default_factory=dict)
    node_selectors: dict[str, str] = field(default_factory=dict)


@dataclass
class GcsFuse:
    bucket_name: str
    mount_path: str
    mount_options: str = ""
    disable_metrics: bool | None = None
    metadata_prefetch_on_mount: bool | None = None
    skip_bucket_access_check: bool | None = None
    resources: dict[str, str] = field(default_factory=dict)


@dataclass
class ClusterOptions:
    """What ``kubectl ray create cluster`` takes, from flags or from ``--file``."""

    name: str
    namespace: str
    ray_version: str = c.KUBECTL_RAY_DEFAULT_RAY_VERSION
    image: str = c.KUBECTL_RAY_DEFAULT_IMAGE
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    head_cpu: str = "2"
    head_memory: str = "4Gi"
    head_gpu: str = "0"
    head_ephemeral: str = ""
    head_ray_start_params: dict[str, str] = field(default_factory=dict)
    head_node_selectors: dict[str, str] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=lambda: [Group()])
    autoscaler: str = ""
    service_account: str = ""
    gcsfuse: GcsFuse | None = None

    def check(self, prefix: str = "") -> None:
        """Every quantity parses and is not negative; a TPU group names its accelerator and topology."""
        for key, value in (
            ("cpu", self.head_cpu), ("gpu", self.head_gpu), ("memory", self.head_memory),
            ("ephemeral-storage", self.head_ephemeral),
        ):  # fmt: skip
            if value:
                check_quantity(f"{prefix}head-{key}" if prefix else key, value)
        for index, group in enumerate(self.groups):
            where = "" if prefix else f" (worker group {index})"
            for key, value in (
                ("cpu", group.cpu), ("gpu", group.gpu), ("tpu", group.tpu), ("memory", group.memory),
                ("ephemeral-storage", group.ephemeral),
            ):  # fmt: skip
                if value:
                    check_quantity(f"{prefix}worker-{key}" if prefix else f"{key}{where}", value)
            check_tpu(group.tpu, group.num_of_hosts, group.node_selectors)


def check_tpu(tpu: str, num_of_hosts: int | None, node_selectors: Mapping[str, str]) -> None:
    if not tpu or tpu == "0":
        return
    if num_of_hosts == 0:
        raise OptionError("numOfHosts cannot be 0 when using TPU")
    for key in (c.GKE_TPU_ACCELERATOR_SELECTOR, c.GKE_TPU_TOPOLOGY_SELECTOR):
        if key not in node_selectors:
            raise OptionError(f"{key} is not set in --worker-node-selectors. See {c.GKE_TPU_DOCS} for supported values")


def _container(name: str, image: str, res: dict[str, dict[str, str]], head: bool) -> dict[str, Any]:
    container: dict[str, Any] = {"name": name, "image": image, "resources": res}
    if head:
        container["ports"] = [{"containerPort": port, "name": pname} for pname, port in c.KUBECTL_RAY_HEAD_PORTS]
    return container


def _template(container: dict[str, Any], node_selectors: Mapping[str, str], options: ClusterOptions) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container]}
    if node_selectors:
        spec["nodeSelector"] = dict(node_selectors)
    if options.service_account:
        spec["serviceAccountName"] = options.service_account
    template: dict[str, Any] = {"spec": spec}
    fuse = options.gcsfuse
    if fuse is not None:
        attributes: dict[str, str] = {"bucketName": fuse.bucket_name}
        if fuse.mount_options:
            attributes["mountOptions"] = fuse.mount_options
        for key, flag in (
            ("disableMetrics", fuse.disable_metrics),
            ("gcsfuseMetadataPrefetchOnMount", fuse.metadata_prefetch_on_mount),
            ("skipCSIBucketAccessCheck", fuse.skip_bucket_access_check),
        ):
            if flag is not None:
                attributes[key] = "true" if flag else "false"
        spec["volumes"] = [
            {"name": "cluster-storage", "csi": {"driver": "gcsfuse.csi.storage.gke.io", "volumeAttributes": attributes}}
        ]
        container["volumeMounts"] = [{"name": "cluster-storage", "mountPath": fuse.mount_path}]
        annotations: dict[str, str] = {}
        if cpu := fuse.resources.get("cpu"):
            annotations["gke-gcsfuse/cpu-request"] = cpu
        for key in ("memory", "ephemeral-storage"):
            if value := fuse.resources.get(key):
                annotations[f"gke-gcsfuse/{key}-limit"] = value
                annotations[f"gke-gcsfuse/{key}-request"] = value
        template["metadata"] = {"annotations": annotations} if annotations else {}
    return template


def cluster_spec(options: ClusterOptions) -> dict[str, Any]:
    head = _container(
        c.KUBECTL_RAY_HEAD_CONTAINER,
        options.image,
        resources(options.head_cpu, options.head_memory, options.head_gpu, options.head_ephemeral),
        head=True,
    )
    head_group: dict[str, Any] = {}
    if options.head_ray_start_params:
        head_group["rayStartParams"] = dict(options.head_ray_start_params)
    head_group["template"] = _template(head, options.head_node_selectors, options)
    spec: dict[str, Any] = {"rayVersion": options.ray_version}
    if options.autoscaler:
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = {"version": options.autoscaler}
    spec["headGroupSpec"] = head_group
    groups = []
    for group in options.groups:
        worker = _container(
            c.KUBECTL_RAY_WORKER_CONTAINER,
            options.image,
            resources(group.cpu, group.memory, group.gpu, group.ephemeral, group.tpu),
            head=False,
        )
        spec_group: dict[str, Any] = {"groupName": group.name, "replicas": group.replicas}
        if group.num_of_hosts is not None:
            spec_group["numOfHosts"] = group.num_of_hosts
        if group.ray_start_params:
            spec_group["rayStartParams"] = dict(group.ray_start_params)
        spec_group["template"] = _template(worker, group.node_selectors, options)
        groups.append(spec_group)
    spec["workerGroupSpecs"] = groups
    return spec


def raycluster(options: ClusterOptions) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": options.name, "namespace": options.namespace}
    if options.labels:
        metadata["labels"] = dict(options.labels)
    if options.annotations:
        metadata["annotations"] = dict(options.annotations)
    return {"apiVersion": API_VERSION, "kind": c.KIND_RAYCLUSTER, "metadata": metadata, "spec": cluster_spec(options)}


def rayjob(
    options: ClusterOptions, entrypoint: str, submission_id: str, ttl_seconds: int, shutdown: bool
) -> dict[str, Any]:
    """The InteractiveMode RayJob ``job submit`` makes without ``-f``: the cluster of ``options`` (without
    ``numOfHosts``), ``spec.jobId`` = the submission id, the entrypoint kept for older operators."""
    spec = cluster_spec(options)
    for group in spec["workerGroupSpecs"]:
        group.pop("numOfHosts", None)
    return {
        "apiVersion": API_VERSION,
        "kind": c.KIND_RAYJOB,
        "metadata": {"name": options.name, "namespace": options.namespace},
        "spec": {
            "submissionMode": "InteractiveMode",
            "entrypoint": entrypoint,
            "jobId": submission_id,
            "ttlSecondsAfterFinished": ttl_seconds,
            "shutdownAfterJobFinishes": shutdown,
            "rayClusterSpec": spec,
        },
    }


def worker_group(
    name: str,
    image: str,
    *,
    replicas: int,
    min_replicas: int,
    max_replicas: int,
    num_of_hosts: int,
    cpu: str,
    memory: str,
    gpu: str,
    tpu: str,
    ray_start_params: Mapping[str, str],
    node_selectors: Mapping[str, str],
) -> dict[str, Any]:
    """``create workergroup``'s group: requests and limits both hold CPU and memory, GPU and TPU when not zero."""
    for flag, value in (("worker-cpu", cpu), ("worker-memory", memory), ("worker-gpu", gpu), ("worker-tpu", tpu)):
        check_quantity(flag, value)
    res = {"cpu": canonical(cpu), "memory": canonical(memory)}
    if _nonzero(gpu):
        res[c.NVIDIA_GPU_RESOURCE_NAME] = canonical(gpu)
    if _nonzero(tpu):
        res[c.TPU_RESOURCE_NAME] = canonical(tpu)
    spec: dict[str, Any] = {"containers": [
        {"name": c.KUBECTL_RAY_WORKER_CONTAINER, "image": image, "resources": {"requests": res, "limits": dict(res)}}
    ]}  # fmt: skip
    if node_selectors:
        spec["nodeSelector"] = dict(node_selectors)
    return {
        "groupName": name,
        "replicas": replicas,
        "numOfHosts": num_of_hosts,
        "minReplicas": min_replicas,
        "maxReplicas": max_replicas,
        "rayStartParams": dict(ray_start_params),
        "template": {"spec": spec},
    }


# ------------------------------------------------------------------------------------------------- --file
_TOP = {"namespace", "name", "labels", "annotations", "ray-version", "image", "service-account", "head",
        "worker-groups", "autoscaler", "gke"}  # fmt: skip
_HEAD = {"cpu", "gpu", "memory", "ephemeral-storage", "ray-start-params", "node-selectors"}
_GROUP = {"name", "cpu", "gpu", "tpu", "num-of-hosts", "memory", "ephemeral-storage", "ray-start-params",
          "node-selectors", "replicas"}  # fmt: skip
_FUSE = {"bucket-name", "mount-path", "mount-options", "disable-metrics", "gcsfuse-metadata-prefetch-on-mount",
         "skip-csi-bucket-access-check", "resources"}  # fmt: skip


def _mapping(value: object, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise OptionError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _known(section: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise OptionError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(allowed))})")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _strings(value: object, where: str) -> dict[str, str]:
    return {str(k): _text(v) for k, v in _mapping(value, where).items()}


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"{where}: expected an integer, got {value!r}")
    return value


def options_from_file(text: str, source: str) -> ClusterOptions:
    """A ``create cluster --file`` config (the plugin's ``RayClusterConfig``): unknown keys are errors, ``head`` merges
    into the defaults, ``worker-groups`` replaces the default group (its entries have no defaults)."""
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise OptionError(f"failed to parse config file: {source}: {exc}") from None
    top = _mapping(loaded, source)
    _known(top, _TOP, source)
    head = _mapping(top.get("head"), "head")
    _known(head, _HEAD, "head")
    options = ClusterOptions(
        name=_text(top.get("name")),
        namespace=_text(top.get("namespace")),
        ray_version=_text(top.get("ray-version")) or c.KUBECTL_RAY_DEFAULT_RAY_VERSION,
        image=_text(top.get("image")) or c.KUBECTL_RAY_DEFAULT_IMAGE,
        labels=_strings(top.get("labels"), "labels"),
        annotations=_strings(top.get("annotations"), "annotations"),
        head_cpu=_text(head.get("cpu", "2")),
        head_memory=_text(head.get("memory", "4Gi")),
        head_gpu=_text(head.get("gpu")),
        head_ephemeral=_text(head.get("ephemeral-storage")),
        head_ray_start_params=_strings(head.get("ray-start-params"), "head.ray-start-params"),
        head_node_selectors=_strings(head.get("node-selectors"), "head.node-selectors"),
        service_account=_text(top.get("service-account")),
    )
    if "worker-groups" in top:
        entries = top["worker-groups"] or []
        if not isinstance(entries, list):
            raise OptionError("worker-groups: expected a list")
        options.groups = []
        for index, entry in enumerate(entries):
            where = f"worker-groups[{index}]"
            group = _mapping(entry, where)
            _known(group, _GROUP, where)
            default_name = c.KUBECTL_RAY_DEFAULT_GROUP if index == 0 else f"{c.KUBECTL_RAY_DEFAULT_GROUP}-{index}"
            hosts = group.get("num-of-hosts")
            options.groups.append(
                Group(
                    name=_text(group.get("name")) or default_name,
                    replicas=_int(group.get("replicas", 0), f"{where}.replicas"),
                    cpu=_text(group.get("cpu")),
                    memory=_text(group.get("memory")),
                    gpu=_text(group.get("gpu")),
                    tpu=_text(group.get("tpu")),
                    ephemeral=_text(group.get("ephemeral-storage")),
                    num_of_hosts=None if hosts is None else _int(hosts, f"{where}.num-of-hosts"),
                    ray_start_params=_strings(group.get("ray-start-params"), f"{where}.ray-start-params"),
                    node_selectors=_strings(group.get("node-selectors"), f"{where}.node-selectors"),
                )
            )
    autoscaler = _mapping(top.get("autoscaler"), "autoscaler")
    _known(autoscaler, {"version"}, "autoscaler")
    options.autoscaler = _text(autoscaler.get("version"))
    gke = _mapping(top.get("gke"), "gke")
    _known(gke, {"gcsfuse"}, "gke")
    if gke.get("gcsfuse") is not None:
        fuse = _mapping(gke["gcsfuse"], "gke.gcsfuse")
        _known(fuse, _FUSE, "gke.gcsfuse")
        for required in ("bucket-name", "mount-path"):
            if not fuse.get(required):
                raise OptionError(f"failed to validate config file: .gcsfuse.{required} is required")
        fuse_resources = _strings(fuse.get("resources"), "gke.gcsfuse.resources")
        _known(fuse_resources, {"cpu", "memory", "ephemeral-storage"}, "gke.gcsfuse.resources")
        for key, value in fuse_resources.items():
            check_quantity(f"gcsfuse.resources.{key}", value)

        def flag(key: str) -> bool | None:
            return None if fuse.get(key) is None else bool(fuse[key])

        options.gcsfuse = GcsFuse(
            bucket_name=_text(fuse["bucket-name"]),
            mount_path=_text(fuse["mount-path"]),
            mount_options=_text(fuse.get("mount-options")),
            disable_metrics=flag("disable-metrics"),
            metadata_prefetch_on_mount=flag("gcsfuse-metadata-prefetch-on-mount"),
            skip_bucket_access_check=flag("skip-csi-bucket-access-check"),
            resources=fuse_resources,
        )
    try:
        options.check()
    except OptionError as exc:
        raise OptionError(f"failed to validate config file: {exc}") from None
    return options


def submission_id() -> str:
    """``raysubmit_`` and 16 characters of Ray's alphabet, from the OS's random source."""
    alphabet = c.RAY_SUBMISSION_ID_ALPHABET
    return c.RAY_SUBMISSION_ID_PREFIX + "".join(secrets.choice(alphabet) for _ in range(16))

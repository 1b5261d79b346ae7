"""kwok's configuration and the fake Nodes it manages, plus the sandbox's default StorageClass.

kwok stands in for the kubelet of every Node annotated ``kwok.x-k8s.io/node=fake``: it marks them Ready, renews
their leases, gives scheduled Pods an IP from the pod CIDR and makes them Running and Ready at once, and finishes
deletions. Its behaviour is data ("stages"); kwok refuses to start without any.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from raykube.kube.resources import Resource
from raykube.sandbox.components import Binaries, NodePool
from raykube.sandbox.ports import HOST

FAKE_NODE_ANNOTATION = "kwok.x-k8s.io/node"
NODE_LABEL_TYPE = "type"
STORAGE_CLASS = "standard"
PROVISIONER_NAME = "sandbox.raykube.io/hostpath"

# kwok's per-Pod debugging kinds (``kwok --enable-crds``): the process runtime writes one of each per Pod.
KWOK_GROUP = "kwok.x-k8s.io"
EXECS = Resource(KWOK_GROUP, "v1alpha1", "Exec", "execs")
LOGS = Resource(KWOK_GROUP, "v1alpha1", "Logs", "logs")
PORT_FORWARDS = Resource(KWOK_GROUP, "v1alpha1", "PortForward", "portforwards")


def kwok_config(bins: Binaries) -> str:
    """kwok's ``--config``: its own stages (from the build cache), then ours for Job Pods."""
    documents = [path.read_text().strip() for path in sorted(bins.kwok_stages.glob("*.yaml"))]
    documents.append(resources.files("raykube.sandbox").joinpath("job-stages.yaml").read_text().strip())
    return "\n---\n".join(documents) + "\n"


def node_name(index: int) -> str:
    return f"kwok-node-{index}"


def fake_node(index: int, pool: NodePool, *, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A Node for kwok to manage. Its InternalIP is 127.0.0.1 so that the API server's kubelet calls
    (``kubectl logs``/``exec``) reach kwok on loopback. Nothing is tainted (Pods need no toleration) unless ``taints``
    says so: the kwok nodes beside process nodes carry KWOK_TAINT."""
    name = node_name(index)
    resources_ = {
        "cpu": pool.cpu,
        "memory": pool.memory,
        "pods": str(pool.pods),
        "ephemeral-storage": "100Gi",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {FAKE_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "kwok",
                NODE_LABEL_TYPE: "kwok",
            },
        },
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": resources_,
            "allocatable": resources_,
            "addresses": [{"type": "InternalIP", "address": HOST}, {"type": "Hostname", "address": name}],
        },
    }


def default_storage_class() -> dict[str, Any]:
    """The default StorageClass: PVCs bind as soon as they are created, to a host directory per volume."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER_NAME,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
        "allowVolumeExpansion": False,
    }


def process_node_name(index: int) -> str:
    return f"process-node-{index}"


def debugging_crds() -> list[dict[str, Any]]:
    """kwok's per-Pod ``Exec``, ``Logs`` and ``PortForward`` kinds (``kwok --enable-crds``), with open schemas: kwok
    decodes them itself, the API server only stores them. The process runtime creates one of each per Pod."""
    crds = []
    for res in (EXECS, LOGS, PORT_FORWARDS):
        kind, plural = res.kind, res.plural
        crds.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{res.group}"},
                "spec": {
                    "group": res.group,
                    "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
                    "scope": "Namespaced",
                    "versions": [
                        {
                            "name": res.version,
                            "served": True,
                            "storage": True,
                            "subresources": {"status": {}},
                            "schema": {
                                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                            },
                        }
                    ],
                },
            }
        )
    return crds


def dns_service(cluster_ip: str) -> dict[str, Any]:
    """``kube-system/kube-dns``: reserves the cluster DNS address (the process runtime answers on it)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kube-dns",
            "namespace": "kube-system",
            "labels": {"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"},
        },
        "spec": {
            "clusterIP": cluster_ip,
            "ports": [
                {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
            ],
        },
    }

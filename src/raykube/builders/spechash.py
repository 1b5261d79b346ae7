"""The spec hash KubeRay keeps on head Pods (``ray.io/upgrade-strategy-recreate-hash``) and RayServices
(``ray.io/hash-without-replicas-and-workers-to-delete``): KubeRay v1.7.0's
``GenerateHashWithoutReplicasAndWorkersToDelete``, byte for byte (Go's ``json.Marshal`` of its structs,
:mod:`raykube.golang.gojson` over :mod:`raykube.golang.gostructs`). Pure: a spec in, 32 characters out."""

from __future__ import annotations

import base64
import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from raykube.api.raycluster import RayClusterSpec
from raykube.golang import gojson, gostructs

# Hashes of specs as read (spec_hash_of_wire), by their JSON: the RayService controller compares its goal's hash with
# its clusters' on every pass (2 s apart, several times a pass), and the goal changes only with the RayService's spec.
# A memo of a pure function: the same answer, without marshalling the spec Go's way each time.
MEMO_SIZE = 256
_memo: OrderedDict[tuple[str, bool], str] = OrderedDict()


def cluster_spec_hash(spec: RayClusterSpec, *, defaulted: bool = True) -> str:
    """KubeRay v1.7.0's ``utils.GenerateHashWithoutReplicasAndWorkersToDelete`` of ``spec``, byte for byte.

    The ``ray.io/upgrade-strategy-recreate-hash`` annotation of head Pods: KubeRay compares it with this value and,
    under ``upgradeStrategy.type: Recreate``, deletes every Pod when they differ, so raykube must compute exactly
    KubeRay's value to take over its Pods. KubeRay deep-copies the spec, clears what autoscalers and queueing
    controllers change (the head's and every group's template ``tolerations`` and ``schedulingGates``; each group's
    ``replicas``, ``minReplicas``, ``maxReplicas`` and ``scaleStrategy.workersToDelete``; ``upgradeStrategy``),
    takes the SHA-1 of Go's ``json.Marshal`` of its structs, and writes it in base32 "hex" (``0-9A-V``, 32
    characters). The Go encoding is :func:`raykube.golang.gojson.marshal` (struct field order, ``omitempty``,
    unknown fields dropped, quantities canonical, ...), proven against KubeRay v1.7.0's own function by
    tests/unit/test_kuberay_hash_v170.py (vectors from tools/kuberay/generate.py) and against v1.6.1's, live, by
    tests/integration/test_kuberay_hash.py.

    ``defaulted`` (the default) hashes as the RayCluster controller does, after its ``setDefaults`` turned a missing
    ``rayStartParams`` into ``{}`` (written ``{}`` rather than ``null``, the field having no omitempty); False hashes
    the spec as read, as the RayService controller does for ``ray.io/hash-without-replicas-and-workers-to-delete``.
    """
    data = spec.to_wire()
    head = _cleared(data.get("headGroupSpec"))
    if defaulted and not isinstance(head.get("rayStartParams"), dict):
        head["rayStartParams"] = {}
    data["headGroupSpec"] = head
    groups = data.get("workerGroupSpecs")
    if isinstance(groups, list):
        data["workerGroupSpecs"] = [_cleared_group(group, defaulted=defaulted) for group in groups]
    data.pop("upgradeStrategy", None)
    encoded = gojson.marshal(gostructs.ROOT, data)
    digest = hashlib.sha1(encoded.encode(), usedforsecurity=False).digest()
    return base64.b32hexencode(digest).decode()


def spec_hash_of_wire(wire: Mapping[str, Any], *, defaulted: bool = True) -> str:
    """:func:`cluster_spec_hash` of ``RayClusterSpec.model_validate(wire)``, remembered by ``wire``'s content (the
    last :data:`MEMO_SIZE` specs): the same value, once per distinct spec."""
    key = (json.dumps(wire, sort_keys=True, separators=(",", ":")), defaulted)
    found = _memo.get(key)
    if found is not None:
        _memo.move_to_end(key)
        return found
    value = cluster_spec_hash(RayClusterSpec.model_validate(wire), defaulted=defaulted)
    _memo[key] = value
    if len(_memo) > MEMO_SIZE:
        _memo.popitem(last=False)
    return value


def _cleared(group: Any) -> dict[str, Any]:
    """A copy of a head or worker group with its template's tolerations and scheduling gates cleared (KubeRay sets
    them to nil: Kueue and friends inject them after creation). Not a dict: ``{}``, the zero struct Go decodes."""
    if not isinstance(group, dict):
        return {}
    copied: dict[str, Any] = dict(group)
    template = copied.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        pod_spec = {k: v for k, v in template["spec"].items() if k not in ("tolerations", "schedulingGates")}
        copied["template"] = {**template, "spec": pod_spec}
    return copied


def _cleared_group(group: Any, *, defaulted: bool) -> dict[str, Any]:
    """A worker group as KubeRay hashes it: no replica counts, no ``workersToDelete``, template cleared; with
    ``defaulted``, a missing ``rayStartParams`` made ``{}``."""
    cleared = _cleared(group)
    for key in ("replicas", "minReplicas", "maxReplicas"):
        cleared.pop(key, None)
    strategy = cleared.get("scaleStrategy")
    if isinstance(strategy, dict):
        cleared["scaleStrategy"] = {k: v for k, v in strategy.items() if k != "workersToDelete"}
    if defaulted and not isinstance(cleared.get("rayStartParams"), dict):
        cleared["rayStartParams"] = {}
    return cleared

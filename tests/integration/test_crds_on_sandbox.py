"""Our CRDs on a real API server: they install, explain, print KubeRay's columns, and store every KubeRay v1.6.1
sample exactly as KubeRay v1.6.1's own CRDs would, but for the one default v1.7.0 adds (``priority: 0``).

KubeRay's v1.6.1 CRDs are installed beside ours under the group ``upstream.ray.io`` (fetched into the cache from the Go
module proxy by ``raykube.sandbox.reference``, never copied into the repository), so each sample can be stored under
both schemas by the same API server and the results compared: same pruning, same defaults.
"""

from __future__ import annotations

import copy
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, AsyncClient
from lightkube.generic_resource import create_global_resource, create_namespaced_resource

from raykube.api.resources import KINDS
from raykube.api.validation import validate
from raykube.kube.client import Kube
from raykube.runtime.crds import install_crds
from raykube.sandbox import Binaries
from tests.support import KUBERAY_V161, RunningSandbox, raykube
from tests.unit.test_api_validation import CASES, mutated

UPSTREAM_GROUP = "upstream.ray.io"
_CRD = create_global_resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")


def _resource(group: str, kind: str) -> Any:
    plural = next(k.plural for k in KINDS if k.name == kind)
    return create_namespaced_resource(group, "v1", kind, plural)


def _upstream_renamed(crd: dict[str, Any]) -> dict[str, Any]:
    renamed = copy.deepcopy(crd)
    renamed["metadata"] = {"name": f"{crd['spec']['names']['plural']}.{UPSTREAM_GROUP}"}
    renamed["spec"]["group"] = UPSTREAM_GROUP
    return renamed


@pytest.fixture(scope="session")
async def upstream_crds(kube: AsyncClient, runtime_kube: Kube) -> AsyncIterator[list[str]]:
    crds = {}
    for path in sorted((KUBERAY_V161 / "crd").glob("*.yaml")):
        loaded = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        crds[path.name] = _upstream_renamed(loaded)
    names = await install_crds(runtime_kube, crds)
    try:
        yield names
    finally:
        for name in names:
            await kube.delete(_CRD, name)


def _samples() -> list[Any]:
    documents = []
    for path in sorted((KUBERAY_V161 / "samples").glob("*.yaml")):
        for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
            if isinstance(doc, dict) and doc.get("apiVersion") == "ray.io/v1":
                documents.append(pytest.param(doc, id=f"{path.stem}-{index}"))
    return documents


def _contains(big: Any, small: Any, path: str = "spec") -> list[str]:
    """Paths where ``small`` has something that ``big`` lost or changed."""
    if isinstance(small, dict):
        if not isinstance(big, dict):
            return [path]
        return [p for k, v in small.items() for p in _contains(big.get(k, _MISSING), v, f"{path}.{k}")]
    if isinstance(small, list):
        if not isinstance(big, list) or len(big) != len(small):
            return [path]
        return [p for i, (b, s) in enumerate(zip(big, small, strict=True)) for p in _contains(b, s, f"{path}[{i}]")]
    return [] if big == small else [path]


_MISSING = object()


def _without_v170_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` less the one default KubeRay v1.7.0's CRDs add to a v1.6.1 sample: ``workerGroupSpecs[].priority: 0``
    (tests/unit/test_api_crd_v170.py holds the whole schema equal to v1.7.0's)."""
    spec = copy.deepcopy(spec)
    cluster = (
        spec.get("rayClusterSpec")
        or spec.get("rayClusterConfig")
        or spec.get("jobTemplate", {}).get("rayClusterSpec")
        or spec
    )
    for group in cluster.get("workerGroupSpecs") or []:
        if group.get("priority") == 0:
            del group["priority"]
    return spec


async def _dry_run(kube: AsyncClient, group: str, document: dict[str, Any], namespace: str) -> dict[str, Any]:
    body = copy.deepcopy(document)
    body["apiVersion"] = f"{group}/v1"
    body["metadata"] = {**body["metadata"], "namespace": namespace}
    resource = _resource(group, body["kind"])
    stored = await kube.create(resource.from_dict(body), namespace=namespace, dry_run=True)
    result: dict[str, Any] = stored.to_dict()
    return result


@pytest.mark.parametrize("document", _samples())
async def test_kuberay_sample_is_stored_as_kuberays_crds_store_it(
    kube: AsyncClient, namespace: str, ray_crds: list[str], upstream_crds: list[str], document: dict[str, Any]
) -> None:
    ours = await _dry_run(kube, "ray.io", document, namespace)
    theirs = await _dry_run(kube, UPSTREAM_GROUP, document, namespace)

    assert _without_v170_defaults(ours["spec"]) == theirs["spec"]
    assert _contains(ours["spec"], document["spec"]) == []  # nothing the sample says was pruned or changed


def test_crd_install_command_is_idempotent(sandbox: RunningSandbox, ray_crds: list[str]) -> None:
    for _ in range(2):
        result = raykube("crd", "install", "--kubeconfig", str(sandbox.kubeconfig), state_root=sandbox.state_root)
        assert result.returncode == 0, result.stderr
        assert "installed rayclusters.ray.io, rayjobs.ray.io, rayservices.ray.io, raycronjobs.ray.io" in result.stderr


def test_kubectl_explain_reaches_into_the_pod_template(kubeconfig: Path, ray_crds: list[str]) -> None:
    explained = subprocess.run(
        [str(Binaries.from_cache().kubectl), "explain", "raycluster.spec.headGroupSpec.template.spec.containers"],
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "FIELD: containers <[]Object>" in explained
    for field in ("image", "resources", "readinessProbe", "envFrom", "volumeMounts"):
        assert f"  {field}\t" in explained


async def test_kubectl_get_shows_kuberays_columns(
    kube: AsyncClient, kubeconfig: Path, namespace: str, ray_crds: list[str]
) -> None:
    sample = yaml.safe_load((KUBERAY_V161 / "samples" / "ray-cluster.sample.yaml").read_text())
    sample["metadata"]["namespace"] = namespace
    await kube.create(_resource("ray.io", "RayCluster").from_dict(sample), namespace=namespace)
    kubectl = [str(Binaries.from_cache().kubectl), "get", "raycluster", "-n", namespace]
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}

    narrow = subprocess.run(kubectl, env=env, capture_output=True, text=True, check=True).stdout.splitlines()[0]
    wide = subprocess.run([*kubectl, "-o", "wide"], env=env, capture_output=True, text=True, check=True).stdout

    assert narrow.split() == ["NAME", "DESIRED", "WORKERS", "AVAILABLE", "WORKERS", "CPUS", "MEMORY", "GPUS",
                              "STATUS", "AGE"]  # fmt: skip
    assert (
        wide.splitlines()[0].split()[-7:]
        == ["TPUS", "STATUS", "AGE", "HEAD", "POD", "IP", "HEAD", "SERVICE", "IP"][-7:]
    )
    assert "raycluster-kuberay" in wide


async def test_the_crds_are_served_in_the_all_category(kubeconfig: Path, ray_crds: list[str], namespace: str) -> None:
    kubectl = str(Binaries.from_cache().kubectl)
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    resources = subprocess.run(
        [kubectl, "api-resources", "--categories=all", "-o", "name"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for kind in KINDS:
        assert f"{kind.plural}.ray.io" in resources


@pytest.mark.parametrize(
    ("case_id", "kind", "changes", "features", "expected"), [pytest.param(*c, id=c[0]) for c in CASES]
)
async def test_no_invalid_spec_is_accepted_silently_by_both_api_server_and_validator(
    kube: AsyncClient,
    namespace: str,
    ray_crds: list[str],
    case_id: str,
    kind: str,
    changes: dict[str, Any],
    features: dict[str, bool] | None,
    expected: list[tuple[str, str]],
) -> None:
    body = mutated(kind, changes)
    body.setdefault("metadata", {})["namespace"] = namespace
    rejection: ApiError | None = None
    try:
        await kube.create(_resource("ray.io", kind).from_dict(body), namespace=namespace, dry_run=True)
    except ApiError as exc:
        rejection = exc
    if rejection is not None:
        assert rejection.status.code in (400, 422), rejection  # refused by the CRD schema or its CEL rules
    else:
        assert validate(body, features=features), f"{case_id}: accepted by the API server and by the validator"

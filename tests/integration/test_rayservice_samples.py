"""KubeRay v1.6.1's RayService samples on process nodes with real Ray Serve, their Serve code swapped for a local app.

Every ``ray-service.*.yaml`` of KubeRay's ``config/samples`` fetches its Serve code from GitHub (``working_dir``), so
none runs here as it is (the sandbox has no route off the machine). What a sample shows about the *operator* (the
cluster it describes, a custom serve Service, a serve port other than 8000, a head that runs no replica) does not
depend on that code, so each sample that needs nothing else from the internet is run with its applications'
code replaced by the local app of ``examples/06-serve-app.yaml`` (``with_local_app``: same application names, route
prefixes, ``http_options`` and replica placement; the ConfigMap mounted and on ``PYTHONPATH``; requests lowered to
fit the test's small nodes, as ``test_rayjob_samples.fit_small_nodes`` does). Each must reach ``Ready`` with every
application ``RUNNING`` and answer on each route through its serve Service. The others are listed with their
reasons, which are checked, and a test checks the two lists cover the folder.

About 25 s each on two cores: the quickstart (``ray-service.sample.yaml``) runs in ``make test``, the others are
marked ``long`` (``make conformance`` runs them).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml
from lightkube import AsyncClient

from raykube.runtime.manager import Manager
from raykube.waiting import NotYet, wait_for
from tests.integration.process import ProcessSandbox
from tests.integration.test_process_runtime import create, port_forward
from tests.integration.test_rayjob_samples import REQUEST_CAP, SAMPLES, Docs, documents
from tests.integration.test_rayservice import service_status
from tests.integration.test_serve import APP_DIR, SERVE_READY, greet, serve_app

LOCAL_APP = {"import_path": "hello:app", "runtime_env": {}}
GREETER = {"name": "Greeter", "user_config": {"greeting": "Hello"}, "ray_actor_options": {"num_cpus": 0.1}}


# ------------------------------------------------------------------------------------------- what runs, what not
def rayservice_of(docs: Docs) -> dict[str, Any]:
    [service] = [d for d in docs if d["kind"] == "RayService"]
    return service


def serve_config(docs: Docs) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load(rayservice_of(docs)["spec"]["serveConfigV2"])
    return config


def containers(docs: Docs) -> list[dict[str, Any]]:
    cluster = rayservice_of(docs)["spec"]["rayClusterConfig"]
    groups = [cluster["headGroupSpec"], *(cluster.get("workerGroupSpecs") or [])]
    return [c for g in groups for c in g["template"]["spec"]["containers"]]


def github_code(docs: Docs) -> bool:
    apps = serve_config(docs).get("applications") or []
    return bool(apps) and all(
        str((a.get("runtime_env") or {}).get("working_dir", "")).startswith("https://github.com/") for a in apps
    )


def pip_from_pypi(docs: Docs) -> bool:
    return any((a.get("runtime_env") or {}).get("pip") for a in serve_config(docs).get("applications") or [])


def asks_for(resource: str) -> Callable[[Docs], bool]:
    return lambda docs: any(resource in (c.get("resources") or {}).get("limits", {}) for c in containers(docs))


def image_without_a_ray_version(docs: Docs) -> bool:
    """A tag the process runtime maps to no Ray venv (``2.46.0.0e19ea-py39-cpu``: a build, not a release)."""
    from raykube.sandbox.kubelet.images import ImageNotFound, parse  # noqa: PLC0415

    for container in containers(docs):
        try:
            parse(container["image"])
        except ImageNotFound:
            return True
    return False


def incremental_upgrade(docs: Docs) -> bool:
    return rayservice_of(docs)["spec"].get("upgradeStrategy", {}).get("type") == "NewClusterWithIncrementalUpgrade"


def non_ray_image(docs: Docs) -> bool:
    templates = [d["spec"]["template"]["spec"] for d in docs if d["kind"] == "Deployment"]
    return any(not c["image"].startswith("rayproject/") for t in templates for c in t["containers"])


PYPI = ("its Serve app pip-installs packages from PyPI", pip_from_pypi)
GPU = ("asks for GPUs (nvidia.com/gpu)", asks_for("nvidia.com/gpu"))
RAY_ML = ("its image rayproject/ray-ml:2.46.0.0e19ea-… is a build tag, not a Ray release", image_without_a_ray_version)

NOT_RUNNABLE: dict[str, list[tuple[str, Callable[[Docs], bool]]]] = {
    "ray-service.deepseek.yaml": [GPU],
    "ray-service.llm-serve.yaml": [GPU],
    "ray-service.stable-diffusion.yaml": [GPU, PYPI, RAY_ML],
    "ray-service.text-summarizer.yaml": [GPU, RAY_ML],
    "ray-service.mobilenet.yaml": [PYPI, RAY_ML],
    "ray-service.text-ml.yaml": [PYPI],
    "ray-service.tpu-single-host.yaml": [("asks for TPUs (google.com/tpu)", asks_for("google.com/tpu")), PYPI],
    "ray-service.high-availability.yaml": [
        (
            "GCS fault tolerance with a Redis Deployment: redis:7.4.0 is an image the process runtime does not run",
            non_ray_image,
        ),
    ],
    "ray-service.incremental-upgrade.yaml": [
        (
            "NewClusterWithIncrementalUpgrade: its Gateway is of class `istio` (the sandbox's Gateway API "
            "implementation is Traefik, `--gateway`; tests/integration/test_gateway.py runs the upgrade through it)",
            incremental_upgrade,
        )
    ],
}

# The samples run with the local app, each with what it shows about the operator (checked in the test).
WITH_LOCAL_APP: dict[str, str] = {
    "ray-service.sample.yaml": "the quickstart: two applications on /fruit and /calc, a head and a worker group",
    "ray-service.custom-serve-service.yaml": "spec.serveService: the serve Service's name, labels, type and ports",
    "ray-service.different-port.yaml": "Serve's HTTP port 9000 (http_options and the containers' serve port)",
    "ray-service.no-ray-serve-replica.yaml": "a head with num-cpus 0, so no replica runs there",
}


def test_every_v161_rayservice_sample_runs_with_the_local_app_or_is_listed_with_a_reason() -> None:
    names = sorted(p.name for p in SAMPLES.glob("ray-service.*.yaml"))
    assert len(names) >= 12, f"expected KubeRay v1.6.1's RayService samples under {SAMPLES}, found {names}"
    assert sorted([*WITH_LOCAL_APP, *NOT_RUNNABLE]) == names
    wrong = [
        f"{name}: {reason}"
        for name, reasons in NOT_RUNNABLE.items()
        for reason, holds in reasons
        if not holds(documents(SAMPLES / name))
    ]
    assert wrong == [], "reasons that no longer hold (the sample may run now):\n" + "\n".join(wrong)
    for name in WITH_LOCAL_APP:  # their only need of the internet is the Serve code
        docs = documents(SAMPLES / name)
        assert github_code(docs), name
        assert not (pip_from_pypi(docs) or asks_for("nvidia.com/gpu")(docs) or image_without_a_ray_version(docs))


# ------------------------------------------------------------------------------------------- the adaptation
def with_local_app(docs: Docs, cap: dict[str, str] = REQUEST_CAP) -> Docs:
    """The sample with each application's code the local Greeter (its name, route prefix and the first
    deployment's replica count and placement kept), the app's ConfigMap mounted in every Ray container and on
    ``PYTHONPATH``, and requests lowered to ``cap``. Everything else of the sample stays."""
    from tests.integration.test_rayjob_samples import fit_small_nodes  # noqa: PLC0415

    adapted: Docs = copy.deepcopy(docs)
    service = rayservice_of(adapted)
    config = serve_config(adapted)
    for app in config["applications"]:
        first = (app.get("deployments") or [{}])[0]
        kept = {k: first[k] for k in ("num_replicas", "max_replicas_per_node") if k in first}
        app.update(LOCAL_APP)
        app["deployments"] = [{**GREETER, **kept}]
    service["spec"]["serveConfigV2"] = yaml.safe_dump(config, sort_keys=False)
    cluster = service["spec"]["rayClusterConfig"]
    for group in [cluster["headGroupSpec"], *(cluster.get("workerGroupSpecs") or [])]:
        spec = group["template"]["spec"]
        spec.setdefault("volumes", []).append({"name": "serve-app", "configMap": {"name": "serve-app"}})
        for container in spec["containers"]:
            container.setdefault("env", []).append({"name": "PYTHONPATH", "value": APP_DIR})
            container.setdefault("volumeMounts", []).append({"name": "serve-app", "mountPath": APP_DIR})
    fitted = fit_small_nodes([{"kind": "RayCluster", "spec": cluster}], cap)  # it walks RayCluster specs
    service["spec"]["rayClusterConfig"] = fitted[0]["spec"]
    return adapted


def test_with_local_app_keeps_names_routes_ports_and_placement() -> None:
    docs = documents(SAMPLES / "ray-service.sample.yaml")
    adapted = with_local_app(docs)
    apps = serve_config(adapted)["applications"]
    assert [(a["name"], a["route_prefix"], a["import_path"]) for a in apps] == [
        ("fruit_app", "/fruit", "hello:app"),
        ("math_app", "/calc", "hello:app"),
    ]
    assert apps[0]["deployments"] == [{**GREETER, "num_replicas": 2, "max_replicas_per_node": 1}]
    head = containers(adapted)[0]
    assert {"name": "PYTHONPATH", "value": APP_DIR} in head["env"]
    assert head["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert head["resources"]["limits"] == containers(docs)[0]["resources"]["limits"]
    different = serve_config(with_local_app(documents(SAMPLES / "ray-service.different-port.yaml")))
    assert different["http_options"]["port"] == 9000


# ------------------------------------------------------------------------------------------- running them
def serve_service(docs: Docs) -> tuple[str, int]:
    """The serve Service KubeRay makes for the sample: its name and the port Serve answers on."""
    spec = rayservice_of(docs)["spec"]
    name = ((spec.get("serveService") or {}).get("metadata") or {}).get("name")
    port = int((serve_config(docs).get("http_options") or {}).get("port", 8000))
    return name or f"{rayservice_of(docs)['metadata']['name']}-serve-svc", port


# All in `make conformance` (pytest -m long): the quickstart's two apps took 100-130 s of make test's two loaded cores,
# and test_rayservice.py runs the local app on real Serve through in-place and new-cluster upgrades there already.
@pytest.mark.long
@pytest.mark.timeout(900)
@pytest.mark.parametrize("sample", sorted(WITH_LOCAL_APP))
async def test_a_rayservice_sample_with_the_local_app_is_ready_and_answers_on_every_route(
    sample: str, proc: ProcessSandbox, pkube: AsyncClient, ns: str, proc_operator: Manager
) -> None:
    docs = with_local_app(documents(SAMPLES / sample))
    service = rayservice_of(docs)
    name = service["metadata"]["name"]
    apps = [a["name"] for a in serve_config(docs)["applications"]]
    await create(pkube, ns, serve_app(ns))
    await create(pkube, ns, service)

    async def ready() -> dict[str, Any] | NotYet:
        status = await service_status(pkube, ns, name)
        conditions = {c["type"]: c.get("status") for c in status.get("conditions") or []}
        statuses = (status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}
        running = {app: (statuses.get(app) or {}).get("status") for app in apps}
        if conditions.get("Ready") == "True" and set(running.values()) == {"RUNNING"}:
            return status
        return NotYet(f"Ready {conditions.get('Ready')}, applications {running}")

    status = await wait_for(ready, SERVE_READY + 120, what=f"{sample} Ready with every application RUNNING")
    assert status["numServeEndpoints"] >= 1
    svc_name, port = serve_service(docs)
    svc = proc.kubectl("get", "svc", "-n", ns, svc_name, "-o", "yaml")
    assert svc.returncode == 0, svc.stderr
    svc_obj = yaml.safe_load(svc.stdout)
    custom = service["spec"].get("serveService")
    if custom:  # KubeRay keeps the user's name, labels, annotations and type; its ports only where named as
        # the head's serve ports: "custom-ray-serve-service-port: 12345" is dropped for the detected "serve: 8000"
        assert svc_obj["metadata"]["labels"].items() >= custom["metadata"]["labels"].items()
        assert svc_obj["metadata"]["annotations"].items() >= custom["metadata"]["annotations"].items()
        assert svc_obj["spec"]["type"] == custom["spec"]["type"]
        assert [(p["name"], p["port"]) for p in svc_obj["spec"]["ports"]] == [("serve", 8000)]
    assert port in [p["port"] for p in svc_obj["spec"]["ports"]]
    async with port_forward(proc, ns, f"svc/{svc_name}", port) as local:
        for app in serve_config(docs)["applications"]:
            route = app["route_prefix"]

            async def answer(route: str = route) -> str | NotYet:
                return await greet(local, "sample", path=route)

            got = await wait_for(answer, 60, what=f"{route} through {svc_name}")
            assert got == "Hello, sample!\n"
    if sample == "ray-service.no-ray-serve-replica.yaml":
        head = next(
            p
            for p in yaml.safe_load(proc.kubectl("get", "pods", "-n", ns, "-o", "yaml").stdout)["items"]
            if p["metadata"]["labels"].get("ray.io/node-type") == "head"
        )
        assert head["metadata"]["labels"].get("ray.io/serve") == "true"  # its proxy serves, though no replica runs

"""RayService reconcile table tests on an in-memory API server, a scripted Ray dashboard and Serve proxy.

A RayService is driven through KubeRay v1.6.1's walk-through one pass at a time; where KubeRay's RayCluster
controller, the kubelet or Ray Serve would act (the cluster's head is up, the applications run, the serve Service has
endpoints), the test sets that state itself. Real Ray Serve is for the sandbox tests.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.dashboard import DashboardError
from raykube.api.resources import RAYCLUSTERS, RAYSERVICES, RayCluster, RayService
from raykube.api.validation import validate_rayservice
from raykube.builders import gowrites, services
from raykube.builders.options import BuildOptions
from raykube.builders.rayservice.clusters import goal_cluster_hash
from raykube.controllers.base import Deps, Result
from raykube.controllers.raycluster import registration as raycluster_registration
from raykube.controllers.rayjob import registration as rayjob_registration
from raykube.controllers.rayservice import (
    REQUEUE,
    RayServiceError,
    RayServiceReconciler,
    generation_labels_or_annotations_changed,
    registration,
)
from raykube.controllers.rayservice import reconciler as rayservice_reconciler
from raykube.controllers.watches import POD_SELECTOR, cached_pod
from raykube.kube import objects, times
from raykube.kube.fake import FakeKube
from raykube.kube.resources import ENDPOINT_SLICES, PODS, SECRETS, SERVICES
from raykube.runtime.manager import _merge_watches

NS, NAME = "team", "svc"
START = dt.datetime(2026, 12, 3, 12, 0, 0, tzinfo=dt.UTC)
RESOURCES = (RAYSERVICES, RAYCLUSTERS, SERVICES, PODS, ENDPOINT_SLICES, SECRETS)
SERVE_CONFIG = """applications:
  - name: fruit
    import_path: fruit:app
    route_prefix: /fruit
"""
PORTS = [
    {"name": "gcs-server", "containerPort": 6379},
    {"name": "dashboard", "containerPort": 8265},
    {"name": "client", "containerPort": 10001},
    {"name": "serve", "containerPort": 8000},
]


def _container(name: str, image: str = "rayproject/ray:2.52.0", ports: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "image": image, "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}}
    if ports:
        body["ports"] = ports
    return body


def _group(name: str, image: str = "rayproject/ray:2.52.0") -> dict[str, Any]:
    return {
        "groupName": name,
        "replicas": 1,
        "minReplicas": 1,
        "maxReplicas": 2,
        "rayStartParams": {},
        "template": {"spec": {"containers": [_container("ray-worker", image)]}},
    }


def rayservice(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {
            "name": NAME,
            "namespace": NS,
            "uid": "rs-uid",
            "generation": 1,
            "labels": {"team": "fruit"},
            "finalizers": [c.RAYSERVICE_FINALIZER],  # what the first pass adds (see test_..._gets_its_finalizer)
        },
        "spec": {
            "serveConfigV2": SERVE_CONFIG,
            "rayClusterConfig": {
                "rayVersion": "2.52.0",
                "headGroupSpec": {
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [_container("ray-head", ports=PORTS)]}},
                },
                "workerGroupSpecs": [_group("workers")],
            },
        },
    }
    body["spec"].update(spec)
    return body


@dataclass
class FakeDashboard:
    """One cluster's dashboard: Serve applications as Ray reports them, and the PUTs received."""

    applications: dict[str, Any] = field(default_factory=dict)
    puts: list[bytes] = field(default_factory=list)
    put_error: DashboardError | None = None
    get_error: DashboardError | None = None

    async def get_job_info(self, job_id: str) -> Any:
        raise NotImplementedError

    async def submit_job(self, request: Mapping[str, Any]) -> str:
        raise NotImplementedError

    async def stop_job(self, job_id: str) -> None:
        raise NotImplementedError

    async def update_deployments(self, config_json: bytes) -> None:
        if self.put_error is not None:
            raise self.put_error
        self.puts.append(config_json)

    async def get_serve_details(self) -> bytes:
        if self.get_error is not None:
            raise self.get_error
        return json.dumps({"applications": self.applications}).encode()


@dataclass
class FakeDashboards:
    clusters: dict[str, FakeDashboard] = field(default_factory=dict)
    urls: list[str] = field(default_factory=list)

    def of(self, cluster: str) -> FakeDashboard:
        return self.clusters.setdefault(cluster, FakeDashboard())

    async def for_cluster(self, cluster: Mapping[str, Any], dashboard_url: str) -> FakeDashboard:
        self.urls.append(dashboard_url)
        return self.of(objects.name(cluster))


@dataclass
class FakeProxies:
    healthy: bool = True
    probed: list[tuple[str, int]] = field(default_factory=list)

    async def proxy_healthy(self, pod: Mapping[str, Any], port: int) -> bool:
        self.probed.append((objects.name(pod), port))
        return self.healthy


@dataclass
class World:
    fake: FakeKube
    now: dt.datetime = START
    options: BuildOptions = field(default_factory=BuildOptions)
    dashboards: FakeDashboards = field(default_factory=FakeDashboards)
    proxies: FakeProxies = field(default_factory=FakeProxies)
    suffixes: list[str] = field(default_factory=lambda: ["abcde", "fghij", "klmno"])
    reconciler: RayServiceReconciler | None = None

    def __post_init__(self) -> None:
        deps = Deps(
            self.fake.api,
            self.fake.cache,
            self.fake.recorder,
            self.options,
            lambda: self.now,
            self.dashboards,
            serve_proxies=self.proxies,
        )
        self.reconciler = RayServiceReconciler(deps, random=lambda: self.suffixes.pop(0))

    async def reconcile(self) -> Result:
        assert self.reconciler is not None
        return await self.reconciler.reconcile(NS, NAME)

    async def failing(self, match: str) -> None:
        with pytest.raises(RayServiceError, match=match):
            await self.reconcile()

    @property
    def service(self) -> dict[str, Any]:
        found = self.fake.stored(RAYSERVICES, NS, NAME)
        assert found is not None
        return found

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.service.get("status") or {})

    def side(self, which: str) -> str:
        return str((self.status.get(which) or {}).get("rayClusterName") or "")

    @property
    def active(self) -> str:
        return self.side("activeServiceStatus")

    @property
    def pending(self) -> str:
        return self.side("pendingServiceStatus")

    def condition(self, type_: str) -> tuple[str, str]:
        cond = objects.condition(self.service, type_)
        assert cond is not None, f"no {type_} condition"
        return str(cond["status"]), str(cond["reason"])

    def edit(self, **spec: Any) -> None:
        body = copy.deepcopy(self.service)
        body["spec"].update(spec)
        body["metadata"]["generation"] += 1
        self.fake.add(body, RAYSERVICES)

    def edit_cluster_config(self, change: Any) -> None:
        config = copy.deepcopy(self.service["spec"]["rayClusterConfig"])
        change(config)
        self.edit(rayClusterConfig=config)

    def cluster_up(self, name: str, *, head_ready: bool = True) -> None:
        """What KubeRay's RayCluster controller and the kubelet would have done: the head Service, a running head Pod
        labelled ``ray.io/serve=false``, and the cluster's status."""
        cluster = self.fake.stored(RAYCLUSTERS, NS, name)
        assert cluster is not None, f"no RayCluster {name}"
        model = RayCluster.model_validate(cluster)
        self.fake.add(services.head_service(model, self.options), SERVICES)
        ready = "True" if head_ready else "False"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-head-xyz12",
                "namespace": NS,
                "labels": {
                    c.RAY_CLUSTER_LABEL: name,
                    c.RAY_NODE_TYPE_LABEL: c.NODE_TYPE_HEAD,
                    c.RAY_SERVE_LABEL: c.RAY_SERVE_LABEL_FALSE,
                },
            },
            "spec": {"containers": [_container("ray-head", ports=PORTS)]},
            "status": {
                "phase": "Running",
                "podIP": "10.244.0.7",
                "conditions": [{"type": "Ready", "status": ready}],
            },
        }
        self.fake.add(pod, PODS)
        conditions = [{"type": c.CONDITION_HEAD_POD_READY, "status": ready, "reason": "HeadPodRunningAndReady"}]
        self.fake.add({**cluster, "status": {"state": "ready", "conditions": conditions}}, RAYCLUSTERS)

    def apps(self, cluster: str, status: str = "RUNNING") -> None:
        deployments = {"Fruit": {"name": "Fruit", "status": "HEALTHY", "message": ""}}
        self.dashboards.of(cluster).applications = {
            "fruit": {"name": "fruit", "status": status, "message": "", "deployments": deployments}
        }

    def endpoints(self, count: int) -> None:
        slice_ = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{NAME}-serve-svc-abc",
                "namespace": NS,
                # the EndpointSlice controller copies the Service's labels (ray.io/serve among them) onto its slices
                "labels": {"kubernetes.io/service-name": f"{NAME}-serve-svc", c.RAY_SERVE_LABEL: f"{NAME}-serve"},
            },
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": [f"10.244.0.{i}"], "conditions": {"ready": True}, "targetRef": {"uid": f"pod-{i}"}}
                for i in range(count)
            ],
        }
        self.fake.add(slice_, ENDPOINT_SLICES)

    def selector(self, service: str) -> str:
        found = self.fake.stored(SERVICES, NS, service)
        assert found is not None, f"no Service {service}"
        return str(found["spec"]["selector"][c.RAY_CLUSTER_LABEL])

    def writes(self) -> list[str]:
        return [str(w) for w in self.fake.writes]

    def clear(self) -> None:
        self.fake.writes.clear()
        self.fake.events.clear()


def new_world(service: dict[str, Any] | None = None, **kwargs: Any) -> World:
    return World(FakeKube([service or rayservice()], resources=RESOURCES, clock=lambda: START), **kwargs)


async def serving_world(service: dict[str, Any] | None = None, **kwargs: Any) -> World:
    """A RayService whose first cluster serves: active, Ready with 2 endpoints."""
    world = new_world(service, **kwargs)
    await world.reconcile()  # pending name chosen
    await world.failing("found 0 head")  # cluster created
    world.cluster_up(f"{NAME}-abcde")
    await world.reconcile()  # config PUT
    world.apps(f"{NAME}-abcde")
    await world.reconcile()  # Services, promotion
    world.endpoints(2)
    await world.reconcile()  # Ready
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("True", c.REASON_NON_ZERO_SERVE_ENDPOINTS)
    world.clear()
    return world


# ---------------------------------------------------------------------------------------------------- registration


def test_registration_is_kuberays_for_owns_and_predicate() -> None:
    reg = registration()
    assert (reg.name, reg.recorder, reg.kind) == ("rayservice", "rayservice-controller", RAYSERVICES)
    assert [w.res for w in reg.owned] == [RAYCLUSTERS, SERVICES]
    assert [w.res for w in reg.reads] == [PODS, ENDPOINT_SLICES]  # read from the cache, never routed
    base = rayservice()
    status_only = {**base, "status": {"serviceStatus": "Running"}}
    assert not generation_labels_or_annotations_changed(base, status_only)
    for change in ({"generation": 2}, {"labels": {"a": "b"}}, {"annotations": {"a": "b"}}):
        assert generation_labels_or_annotations_changed(base, {**base, "metadata": {**base["metadata"], **change}})
    assert reg.key_for_primary("MODIFIED", base, status_only) is None
    assert reg.key_for_primary("ADDED", None, base) == (NS, NAME)


def test_its_watches_share_the_operators_informers() -> None:
    """The head Pods are read through the RayCluster controller's Pod informer (same selector); EndpointSlices get
    their own, indexed by Service name, for the serve Services' slices only (no head or worker Service carries
    ray.io/serve, so a thousand RayClusters' slices stay out of the cache)."""
    merged = _merge_watches([raycluster_registration(BuildOptions()), rayjob_registration(), registration()])
    assert merged[PODS].label_selector == POD_SELECTOR
    assert merged[PODS].transform is cached_pod  # what the cache keeps of a Pod covers both controllers' reads
    assert merged[ENDPOINT_SLICES].index_labels == ("kubernetes.io/service-name",)
    assert merged[ENDPOINT_SLICES].label_selector == c.RAY_SERVE_LABEL
    assert RAYSERVICES in merged
    other = registration().reads_(PODS, label_selector=POD_SELECTOR)
    with pytest.raises(ValueError, match="different transforms"):
        _merge_watches([raycluster_registration(BuildOptions()), other])


# ---------------------------------------------------------------------------------------------------- walk-through


async def test_a_fresh_rayservice_names_then_creates_its_pending_cluster() -> None:
    world = new_world()
    cluster = f"{NAME}-abcde"

    # Pass 1: a pending cluster name, Initializing; only the status is written.
    assert await world.reconcile() == Result(REQUEUE)
    assert world.writes() == [f"update rayservices/status {NS}/{NAME}"]
    status = world.status
    assert world.pending == cluster and world.active == ""
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("False", c.REASON_RAYSERVICE_INITIALIZING)
    assert world.condition(c.CONDITION_UPGRADE_IN_PROGRESS) == ("False", c.REASON_RAYSERVICE_INITIALIZING)
    # KubeRay's Go status: serviceStatus "" and numServeEndpoints 0 are omitempty, the cluster statuses are written
    assert "serviceStatus" not in status and "numServeEndpoints" not in status and status["observedGeneration"] == 1
    assert status["activeServiceStatus"]["rayClusterStatus"] == {
        "desiredCPU": "0",
        "desiredGPU": "0",
        "desiredMemory": "0",
        "desiredTPU": "0",
        "head": {},
    }
    assert status["lastUpdateTime"] == times.format_time(START)
    world.clear()

    # Pass 2: the RayCluster is created with KubeRay's labels and annotations; no head Pod yet is an error.
    await world.failing(f"found 0 head. cluster name {cluster}, namespace {NS}")
    assert world.writes() == [f"create rayclusters {NS}/{cluster}"]
    assert world.fake.events[0].note == f"Created the RayCluster {NS}/{cluster}"
    created = world.fake.stored(RAYCLUSTERS, NS, cluster)
    assert created is not None
    assert objects.labels(created) == {
        "team": "fruit",
        c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: NAME,
        c.RAY_ORIGINATED_FROM_CRD_LABEL: "RayService",
    }
    annotations = objects.annotations(created)
    assert annotations[c.RAY_NUM_WORKER_GROUPS_ANNOTATION] == "1"
    assert annotations[c.RAY_KUBERAY_VERSION_ANNOTATION] == "v1.7.0"
    assert len(annotations[c.RAY_HASH_WITHOUT_REPLICAS_ANNOTATION]) == 32
    assert objects.controller_of(created, "RayService", c.API_GROUP) == (NS, NAME)
    # created from KubeRay's Go struct: the spec as Go writes it (template.metadata {}, scaleStrategy {} ...)
    config = world.service["spec"]["rayClusterConfig"]
    assert created["spec"] == gowrites.as_kuberay_writes("RayCluster", {"spec": config})["spec"] != config


async def test_a_fresh_rayservice_is_served_by_its_cluster_once_the_apps_run() -> None:
    world = new_world()
    cluster = f"{NAME}-abcde"
    await world.reconcile()
    await world.failing("found 0 head")
    world.clear()

    # Pass 3: head up and ready, the proxy healthy: the head Pod's serve label, then the config PUT (0 apps read).
    world.cluster_up(cluster)
    assert await world.reconcile() == Result(REQUEUE)
    assert world.writes() == [f"patch pods {NS}/{cluster}-head-xyz12"]  # nothing changed in the status
    assert world.fake.reasons() == [c.EVENT_UPDATED_HEAD_POD_SERVE_LABEL, c.EVENT_UPDATED_SERVE_APPLICATIONS]
    assert world.fake.events[0].note == f'Updated the serve label to "true" for the Head Pod {NS}/{cluster}-head-xyz12'
    pod = world.fake.stored(PODS, NS, f"{cluster}-head-xyz12")
    assert pod is not None and objects.labels(pod)[c.RAY_SERVE_LABEL] == "true"
    assert world.proxies.probed == [(f"{cluster}-head-xyz12", 8000)]
    assert world.dashboards.urls == [f"{cluster}-head-svc.{NS}.svc.cluster.local:8265"]
    puts = world.dashboards.of(cluster).puts
    assert puts == [b'{"applications":[{"import_path":"fruit:app","name":"fruit","route_prefix":"/fruit"}]}']
    world.clear()

    # Deploying: no PUT again (cached), no Services; the application status is reported on the pending side.
    world.apps(cluster, "DEPLOYING")
    await world.reconcile()
    assert world.writes() == [f"update rayservices/status {NS}/{NAME}"]
    assert world.status["pendingServiceStatus"]["applicationStatuses"]["fruit"]["status"] == "DEPLOYING"
    assert world.fake.stored(SERVICES, NS, f"{NAME}-serve-svc") is None
    world.clear()

    # All apps RUNNING: both Services point at the cluster, and it is promoted to active in the same pass.
    world.apps(cluster)
    await world.reconcile()
    assert world.writes() == [
        f"create services {NS}/{NAME}-head-svc",
        f"create services {NS}/{NAME}-serve-svc",
        f"update rayservices/status {NS}/{NAME}",
    ]
    assert world.fake.reasons() == [c.EVENT_CREATED_SERVICE, c.EVENT_CREATED_SERVICE]
    assert world.selector(f"{NAME}-head-svc") == cluster and world.selector(f"{NAME}-serve-svc") == cluster
    serve_svc = world.fake.stored(SERVICES, NS, f"{NAME}-serve-svc")
    assert serve_svc is not None and serve_svc["spec"]["selector"] == {
        c.RAY_CLUSTER_LABEL: cluster,
        "ray.io/serve": "true",
    }
    assert (world.active, world.pending) == (cluster, "")
    apps = world.status["activeServiceStatus"]["applicationStatuses"]
    assert apps == {"fruit": {"status": "RUNNING", "serveDeploymentStatuses": {"Fruit": {"status": "HEALTHY"}}}}
    assert world.condition(c.CONDITION_UPGRADE_IN_PROGRESS) == ("False", c.REASON_NO_PENDING_CLUSTER)
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("False", c.REASON_RAYSERVICE_INITIALIZING)
    world.clear()

    # Endpoints ready: Ready, serviceStatus Running.
    world.endpoints(2)
    await world.reconcile()
    assert world.writes() == [f"update rayservices/status {NS}/{NAME}"]
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("True", c.REASON_NON_ZERO_SERVE_ENDPOINTS)
    assert (world.status["serviceStatus"], world.status["numServeEndpoints"]) == ("Running", 2)
    world.clear()

    # Steady state: nothing is written.
    assert await world.reconcile() == Result(REQUEUE)
    assert world.writes() == [] and world.fake.events == []


async def test_a_status_conflict_fails_the_pass() -> None:
    world = new_world()
    world.fake.fail("update", RAYSERVICES, code=409, reason="Conflict", message="the object has been modified")
    await world.failing("the object has been modified")


async def test_the_head_pod_not_ready_means_no_serve_calls() -> None:
    world = new_world()
    await world.reconcile()
    await world.failing("found 0 head")
    world.cluster_up(f"{NAME}-abcde", head_ready=False)
    world.proxies.healthy = False
    world.clear()
    await world.reconcile()
    assert world.writes() == [] and world.dashboards.urls == []  # the label is already "false"


async def test_a_failed_put_is_a_warning_and_an_error_and_is_tried_again() -> None:
    world = new_world()
    await world.reconcile()
    await world.failing("found 0 head")
    world.cluster_up(f"{NAME}-abcde")
    world.dashboards.of(f"{NAME}-abcde").put_error = DashboardError("UpdateDeployments fail: 500 boom")
    await world.failing("fail to create / update Serve applications.*UpdateDeployments fail: 500 boom")
    assert world.fake.events[-1].reason == c.EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS
    world.dashboards.of(f"{NAME}-abcde").put_error = None
    await world.reconcile()
    assert len(world.dashboards.of(f"{NAME}-abcde").puts) == 1


# ---------------------------------------------------------------------------------------------------- changes


async def test_a_serve_config_change_is_put_in_place_without_a_new_cluster() -> None:
    world = await serving_world()
    cluster = world.active
    new_config = SERVE_CONFIG.replace("/fruit", "/fruits")
    world.edit(serveConfigV2=new_config)
    await world.reconcile()
    # Only the status (the conditions carry the new observedGeneration): no cluster is created or updated.
    assert world.writes() == [f"update rayservices/status {NS}/{NAME}"]
    assert world.status["observedGeneration"] == 2
    assert world.fake.reasons() == [c.EVENT_UPDATED_SERVE_APPLICATIONS]
    assert world.dashboards.of(cluster).puts[-1].endswith(b'"route_prefix":"/fruits"}]}')
    assert (world.active, world.pending) == (cluster, "")
    assert world.fake.all(RAYCLUSTERS, NS) == [world.fake.stored(RAYCLUSTERS, NS, cluster)]
    await world.reconcile()
    assert len(world.dashboards.of(cluster).puts) == 2  # once


async def test_a_cluster_config_change_prepares_a_new_cluster_switches_when_ready_and_deletes_the_old() -> None:
    world = await serving_world()
    old, new = f"{NAME}-abcde", f"{NAME}-fghij"
    world.edit_cluster_config(lambda cfg: cfg["workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(
        image="rayproject/ray:2.52.0-py311"))  # fmt: skip

    # A new pending cluster name; the active cluster is not read (its apps go), Ready holds on its endpoints.
    await world.reconcile()
    assert (world.active, world.pending) == (old, new)
    assert world.condition(c.CONDITION_UPGRADE_IN_PROGRESS) == ("True", c.REASON_BOTH_ACTIVE_PENDING_CLUSTERS_EXIST)
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("True", c.REASON_NON_ZERO_SERVE_ENDPOINTS)
    assert "applicationStatuses" not in world.status["activeServiceStatus"]
    await world.failing("found 0 head")
    assert world.fake.stored(RAYCLUSTERS, NS, new) is not None

    # The new cluster is up, its config PUT, but its apps are not RUNNING: the Services stay on the old one.
    world.cluster_up(new)
    world.apps(new, "DEPLOYING")
    world.clear()
    await world.reconcile()
    assert len(world.dashboards.of(new).puts) == 1
    assert world.selector(f"{NAME}-head-svc") == old and world.selector(f"{NAME}-serve-svc") == old
    assert not world.fake.writes_of("update", "services")

    # RUNNING: both Services switch, keeping their clusterIP; the new cluster is promoted.
    world.apps(new)
    world.clear()
    await world.reconcile()
    assert world.writes() == [
        f"update services {NS}/{NAME}-head-svc",
        f"update services {NS}/{NAME}-serve-svc",
        f"update rayservices/status {NS}/{NAME}",
    ]
    assert world.fake.reasons() == [c.EVENT_UPDATED_SERVICE, c.EVENT_UPDATED_SERVICE]
    assert world.selector(f"{NAME}-head-svc") == new and world.selector(f"{NAME}-serve-svc") == new
    assert (world.active, world.pending) == (new, "")
    assert world.condition(c.CONDITION_UPGRADE_IN_PROGRESS) == ("False", c.REASON_NO_PENDING_CLUSTER)

    # The old cluster is dangling: first seen now, deleted after the 60 s delay.
    world.clear()
    await world.reconcile()
    assert world.fake.stored(RAYCLUSTERS, NS, old) is not None
    world.now = START + dt.timedelta(seconds=60)
    await world.reconcile()
    assert world.fake.stored(RAYCLUSTERS, NS, old) is not None  # not after the deadline yet
    world.now = START + dt.timedelta(seconds=61)
    await world.reconcile()
    assert world.writes() == [f"delete rayclusters {NS}/{old}"]
    assert world.fake.events[-1].note == f"Deleted the RayCluster {NS}/{old}"
    assert world.fake.stored(RAYCLUSTERS, NS, new) is not None


async def test_the_deletion_delay_is_the_specs() -> None:
    world = await serving_world(rayservice(rayClusterDeletionDelaySeconds=0))
    world.fake.add({**(world.fake.stored(RAYCLUSTERS, NS, world.active) or {}),
                    "metadata": {"name": f"{NAME}-zzzzz", "namespace": NS,
                                 "labels": {c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: NAME,
                                            c.RAY_ORIGINATED_FROM_CRD_LABEL: "RayService"}}}, RAYCLUSTERS)  # fmt: skip
    await world.reconcile()  # first sighting
    world.now += dt.timedelta(microseconds=1)
    await world.reconcile()
    assert world.writes() == [f"delete rayclusters {NS}/{NAME}-zzzzz"]


async def test_a_worker_group_appended_updates_the_active_cluster_in_place() -> None:
    world = await serving_world()
    cluster = world.active
    world.edit_cluster_config(lambda cfg: cfg["workerGroupSpecs"].append(_group("more")))
    await world.reconcile()
    assert world.writes() == [f"update rayclusters {NS}/{cluster}", f"update rayservices/status {NS}/{NAME}"]
    assert world.fake.events[0].note == f"Updated the active RayCluster {NS}/{cluster}"
    updated = world.fake.stored(RAYCLUSTERS, NS, cluster)
    assert updated is not None
    assert [g["groupName"] for g in updated["spec"]["workerGroupSpecs"]] == ["workers", "more"]
    annotations = objects.annotations(updated)
    assert annotations[c.RAY_NUM_WORKER_GROUPS_ANNOTATION] == "2"
    assert annotations[c.RAY_HASH_WITHOUT_REPLICAS_ANNOTATION] == goal_cluster_hash(
        RayService.model_validate(world.service)
    )
    assert world.pending == ""
    world.clear()
    await world.reconcile()
    assert world.writes() == []  # the hash is equal now


async def test_suspend_reaches_a_cluster_only_when_it_is_created() -> None:
    """KubeRay v1.7.0 (RS-3): rayClusterConfig.suspend no longer updates a cluster in place (v1.6.1 did), nor starts
    a new one (it is not hashed); an in-place update for another reason keeps the cluster's own suspend."""
    world = await serving_world()
    cluster = world.active
    world.edit_cluster_config(lambda cfg: cfg.update(suspend=True))
    await world.reconcile()
    assert world.writes() == [f"update rayservices/status {NS}/{NAME}"]  # observedGeneration only
    assert world.pending == ""
    live = world.fake.stored(RAYCLUSTERS, NS, cluster)
    assert live is not None and "suspend" not in live["spec"]

    world.edit_cluster_config(lambda cfg: cfg["workerGroupSpecs"].append(_group("more")))
    world.clear()
    await world.reconcile()
    assert world.writes()[0] == f"update rayclusters {NS}/{cluster}"
    updated = world.fake.stored(RAYCLUSTERS, NS, cluster)
    assert updated is not None
    assert [g["groupName"] for g in updated["spec"]["workerGroupSpecs"]] == ["workers", "more"]
    assert "suspend" not in updated["spec"]  # the cluster's own (unset), not rayClusterConfig's true


async def test_upgrade_strategy_none_ignores_cluster_changes_and_still_applies_serve_config() -> None:
    world = await serving_world(rayservice(upgradeStrategy={"type": "None"}))
    cluster = world.active
    world.edit_cluster_config(lambda cfg: cfg["workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(
        image="rayproject/ray:2.52.0-py311"))  # fmt: skip
    await world.reconcile()
    assert world.writes() == [f"update rayservices/status {NS}/{NAME}"] and world.pending == ""  # observedGeneration
    assert world.condition(c.CONDITION_UPGRADE_IN_PROGRESS) == ("False", c.REASON_NO_PENDING_CLUSTER)
    world.edit(serveConfigV2=SERVE_CONFIG.replace("/fruit", "/apple"))
    await world.reconcile()
    assert world.dashboards.of(cluster).puts[-1].endswith(b'"route_prefix":"/apple"}]}')


async def test_enable_zero_downtime_false_is_none_for_an_unset_strategy() -> None:
    world = await serving_world(options=BuildOptions(enable_zero_downtime="FALSE"))
    world.edit_cluster_config(lambda cfg: cfg.update(rayVersion="2.52.1"))
    await world.reconcile()
    assert world.pending == "" and world.writes() == [f"update rayservices/status {NS}/{NAME}"]


# ---------------------------------------------------------------------------------------------------- refusals


async def test_validation_failure_is_a_warning_a_condition_and_no_requeue() -> None:
    world = new_world(rayservice(rayClusterDeletionDelaySeconds=-1))
    assert await world.reconcile() == Result()
    message = (
        "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got -1"
    )
    event = world.fake.events[0]
    assert (event.type, event.reason, event.note) == (
        "Warning",
        c.EVENT_INVALID_RAYSERVICE_SPEC,
        f"{NS}/{NAME}: {message}",
    )
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("False", c.REASON_RAYSERVICE_VALIDATION_FAILED)
    cond = objects.condition(world.service, c.CONDITION_RAYSERVICE_READY)
    assert cond is not None and cond["message"] == message
    assert world.writes() == [f"update rayservices/status {NS}/{NAME}"]
    # Fixed: the next pass goes on as usual.
    world.edit(rayClusterDeletionDelaySeconds=5)
    assert await world.reconcile() == Result(REQUEUE)
    assert world.pending == f"{NAME}-abcde"


async def test_a_rayservice_is_validated_once_per_version_and_again_when_it_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 2 s passes read the same object until it changes: validation runs once per resourceVersion, and a change
    (here one that makes it invalid, then valid again) is validated at its first pass."""
    world = await serving_world()
    calls: list[str] = []

    def counted(obj: Mapping[str, Any], **kwargs: Any) -> list[Any]:
        calls.append(objects.resource_version(obj))
        return validate_rayservice(obj, **kwargs)

    monkeypatch.setattr(rayservice_reconciler, "validate_rayservice", counted)
    for _ in range(3):
        assert await world.reconcile() == Result(REQUEUE)
    assert calls == [objects.resource_version(world.service)]
    world.edit(rayClusterDeletionDelaySeconds=-1)
    assert await world.reconcile() == Result()
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("False", c.REASON_RAYSERVICE_VALIDATION_FAILED)
    world.edit(rayClusterDeletionDelaySeconds=5)
    assert await world.reconcile() == Result(REQUEUE)
    assert len(calls) == 3
    assert world.reconciler is not None and set(world.reconciler.validated) == {(NS, NAME)}
    body = copy.deepcopy(world.service)
    body["metadata"]["finalizers"] = []
    world.fake.add(body, RAYSERVICES)
    await world.fake.api.delete(RAYSERVICES, NAME, NS)
    assert await world.reconcile() == Result()
    assert world.reconciler.validated == {}  # forgotten with the RayService


async def test_invalid_metadata_is_its_own_reason() -> None:
    body = rayservice()
    body["metadata"]["annotations"] = {c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION: "soon"}
    world = new_world(body)
    assert await world.reconcile() == Result()
    assert world.fake.reasons() == [c.EVENT_INVALID_RAYSERVICE_METADATA]


async def test_managed_by_another_controller_is_left_alone() -> None:
    world = new_world(rayservice(managedBy="kueue.x-k8s.io/multikueue"))
    assert await world.reconcile() == Result()
    assert world.writes() == [] and world.fake.events == [] and "status" not in world.service


async def test_a_new_rayservice_gets_its_finalizer_and_nothing_else_in_its_first_pass() -> None:
    body = rayservice()
    del body["metadata"]["finalizers"]
    world = new_world(body)
    assert await world.reconcile() == Result(REQUEUE)
    assert world.writes() == [f"update rayservices {NS}/{NAME}"]
    assert world.service["metadata"]["finalizers"] == [c.RAYSERVICE_FINALIZER]
    assert "status" not in world.service
    # RS-5: KubeRay's Update of its Go object writes the spec as Go does, which bumps the generation
    assert world.service["metadata"]["generation"] == 2
    assert world.service["spec"] == gowrites.as_kuberay_writes("RayService", body)["spec"] != body["spec"]
    assert world.service["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["scaleStrategy"] == {}


async def test_a_new_rayservice_already_as_go_writes_it_keeps_its_generation() -> None:
    body = gowrites.as_kuberay_writes("RayService", rayservice())
    del body["metadata"]["finalizers"]
    world = new_world(body)
    await world.reconcile()
    assert world.service["metadata"]["finalizers"] == [c.RAYSERVICE_FINALIZER]
    assert world.service["metadata"]["generation"] == 1


async def test_a_rayservice_being_deleted_deletes_every_cluster_at_once_then_drops_its_finalizer() -> None:
    world = await serving_world()
    active = world.active
    body = copy.deepcopy(world.service)
    body["metadata"]["deletionTimestamp"] = "2026-01-01T00:05:00Z"
    body["metadata"]["finalizers"] = ["example.com/other", c.RAYSERVICE_FINALIZER]
    world.fake.add(body, RAYSERVICES)

    assert await world.reconcile() == Result(REQUEUE)  # no deletion delay, the active cluster too
    assert world.writes() == [f"delete rayclusters {NS}/{active}"]
    assert world.fake.events[-1].note == f"Deleted the RayCluster {NS}/{active}"
    assert world.fake.stored(RAYCLUSTERS, NS, active) is None
    world.clear()

    assert await world.reconcile() == Result()
    assert world.writes() == [f"patch rayservices {NS}/{NAME}"]
    assert world.service["metadata"]["finalizers"] == ["example.com/other"]


async def test_a_deleted_rayservice_ends_the_pass() -> None:
    world = World(FakeKube([], resources=RESOURCES))
    assert await world.reconcile() == Result()


# ---------------------------------------------------------------------------------------------------- timeout


async def test_initializing_timeout_is_terminal_and_its_clusters_are_cleaned_up() -> None:
    body = rayservice(rayClusterDeletionDelaySeconds=10)
    body["metadata"]["annotations"] = {c.RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION: "30s"}
    world = new_world(body)
    cluster = f"{NAME}-abcde"
    await world.reconcile()
    await world.failing("found 0 head")
    world.cluster_up(cluster, head_ready=False)  # e.g. a bad image: never ready
    world.now = START + dt.timedelta(seconds=29)
    await world.reconcile()
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("False", c.REASON_RAYSERVICE_INITIALIZING)
    world.clear()

    world.now = START + dt.timedelta(seconds=31)
    assert await world.reconcile() == Result(REQUEUE)
    assert world.condition(c.CONDITION_RAYSERVICE_READY) == ("False", c.REASON_RAYSERVICE_INITIALIZING_TIMEOUT)
    cond = objects.condition(world.service, c.CONDITION_RAYSERVICE_READY)
    assert cond is not None
    assert cond["message"] == (
        "RayService failed to become ready within the configured timeout of 30s. Time spent initializing: 31s"
    )
    assert (world.active, world.pending) == ("", "")
    event = world.fake.events[-1]
    assert (event.reason, event.note) == (
        c.EVENT_RAYSERVICE_INITIALIZING_TIMEOUT,
        "RayService initializing timeout exceeded after 31s (configured timeout: 30s)",
    )
    world.clear()

    # Terminal: only the clean-up, which requeues while the cluster remains; a spec change does not recover it.
    world.edit(serveConfigV2=SERVE_CONFIG.replace("/fruit", "/x"))
    assert await world.reconcile() == Result(REQUEUE)
    assert world.writes() == []
    world.now += dt.timedelta(seconds=11)
    assert await world.reconcile() == Result(REQUEUE)
    assert world.writes() == [f"delete rayclusters {NS}/{cluster}"]
    assert await world.reconcile() == Result()
    assert world.fake.reasons() == [c.EVENT_DELETED_RAYCLUSTER]


# ---------------------------------------------------------------------------------------------------- Serve, labels


async def test_exclude_head_pod_keeps_the_label_false_without_probing() -> None:
    world = new_world(rayservice(excludeHeadPodFromServeSvc=True))
    await world.reconcile()
    await world.failing("found 0 head")
    world.cluster_up(f"{NAME}-abcde")
    await world.reconcile()
    assert world.proxies.probed == [] and not world.fake.writes_of("patch", "pods")


async def test_an_unhealthy_proxy_sets_the_label_back_to_false() -> None:
    world = await serving_world()
    world.proxies.healthy = False
    await world.reconcile()
    assert world.fake.events[0].note.startswith('Updated the serve label to "false" for the Head Pod')


async def test_a_failed_serve_read_is_kuberays_error() -> None:
    world = await serving_world()
    world.dashboards.of(world.active).get_error = DashboardError("GetServeDetails fail: 503 Service Unavailable x")
    await world.failing(
        "failed to get Serve application statuses from the dashboard.*err: failed to get serve details: "
        "GetServeDetails fail: 503"
    )


async def test_zero_applications_on_a_known_cluster_are_submitted_again() -> None:
    world = await serving_world()
    world.dashboards.of(world.active).applications = {}  # the head restarted without GCS FT
    await world.reconcile()
    assert len(world.dashboards.of(world.active).puts) == 2


async def test_a_second_change_during_an_upgrade_replaces_the_pending_cluster() -> None:
    world = await serving_world()
    first, second = f"{NAME}-fghij", f"{NAME}-klmno"

    def image(tag: str) -> Any:
        return lambda cfg: cfg["workerGroupSpecs"][0]["template"]["spec"]["containers"][0].update(image=tag)

    world.edit_cluster_config(image("rayproject/ray:2.52.0-py311"))
    await world.reconcile()
    await world.failing("found 0 head")
    world.edit_cluster_config(image("rayproject/ray:2.52.0-py312"))
    world.cluster_up(first)
    await world.reconcile()
    assert world.pending == second  # the first pending cluster is dangling now
    world.clear()
    await world.failing("found 0 head")  # its timer starts, and the new one is created (without a head yet)
    assert world.writes() == [f"create rayclusters {NS}/{second}"]
    world.now += dt.timedelta(seconds=61)
    world.clear()
    await world.failing("found 0 head")  # the new pending cluster has no head yet; the old one went first
    assert world.writes() == [f"delete rayclusters {NS}/{first}"]

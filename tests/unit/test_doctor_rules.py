"""The doctor's rules over hand-made snapshots: a healthy seed cluster built with the operator's own builders
(:mod:`raykube.builders`), then broken one link at a time. Each test names the rule it expects as the root cause and
the consequences that must hang under it; texts quoted from the cited issues double as provenance."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import pytest

from raykube.api import constants as c
from raykube.api.raycluster import RayClusterSpec
from raykube.api.resources import RayCluster
from raykube.builders import pods as build_pods
from raykube.builders import services as build_services
from raykube.builders.options import BuildOptions
from raykube.doctor import snapshot as s
from raykube.doctor.access import OPERATOR_ACCESS
from raykube.doctor.correlate import correlate
from raykube.doctor.facts import image_ray_version, operators
from raykube.doctor.facts.operators import operator_args
from raykube.doctor.model import Finding, ObjectRef, Report, at_least
from raykube.doctor.render import render_json, render_text
from raykube.doctor.rules import CATALOGUE, CHECKERS
from raykube.doctor.rules.base import RegisteredChecker
from raykube.doctor.rules.pods import parse_scheduler_message
from raykube.doctor.run import Options, diagnose
from tests.doctor_support import assert_fires, assert_quiet, one_finding, record

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
CREATED = "2026-01-01T11:50:00Z"
LATER = "2026-01-01T11:58:00Z"
# The spec fields of the CRD the operator was built with (a current CRD: no skew).
CURRENT_SPEC_FIELDS = tuple(f.alias or name for name, f in RayClusterSpec.model_fields.items())
NS = "ml"
IMAGE = "rayproject/ray:2.52.0"

Objects = dict[str, list[dict[str, Any]]]


# --------------------------------------------------------------------------------------------------------------------
# A healthy seed cluster, deterministic
# --------------------------------------------------------------------------------------------------------------------


def seed_spec(name: str = "seed", workers: int = 2) -> dict[str, Any]:
    """The seed chapter's RayCluster: 1 head + N workers, envFrom a ConfigMap and a Secret, a shared PVC."""

    def template(container: str, cpu: str, memory: str) -> dict[str, Any]:
        return {
            "spec": {
                "containers": [
                    {
                        "name": container,
                        "image": IMAGE,
                        "resources": {"limits": {"cpu": cpu, "memory": memory},
                                      "requests": {"cpu": cpu, "memory": memory}},
                        "envFrom": [{"configMapRef": {"name": "ray-env"}},
                                    {"secretRef": {"name": "minio-credentials"}}],
                        "volumeMounts": [{"name": "shared-data", "mountPath": "/home/ray/shared"}],
                    }
                ],
                "volumes": [{"name": "shared-data", "persistentVolumeClaim": {"claimName": "ray-shared-data"}}],
            }
        }  # fmt: skip

    head = template("ray-head", "1", "2Gi")
    head["spec"]["containers"][0]["ports"] = [
        {"name": "gcs-server", "containerPort": 6379},
        {"name": "dashboard", "containerPort": 8265},
        {"name": "client", "containerPort": 10001},
    ]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1,
                     "creationTimestamp": CREATED},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {"rayStartParams": {}, "template": head},
            "workerGroupSpecs": [
                {"groupName": "workers", "replicas": workers, "minReplicas": 0, "maxReplicas": 10,
                 "rayStartParams": {}, "template": template("ray-worker", "1", "1Gi")}
            ],
        },
    }  # fmt: skip


def _status(ready: bool = True) -> dict[str, Any]:
    return {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "True" if ready else "False",
             **({} if ready else {"reason": "ContainersNotReady"})},
            {"type": "ContainersReady", "status": "True" if ready else "False"},
        ],
    }  # fmt: skip


class World:
    """The objects of a namespace with the seed cluster(s), the operator and three nodes."""

    def __init__(self, *clusters: dict[str, Any]) -> None:
        self.objects: Objects = defaultdict(list)
        self._ip = 10
        for body in clusters or (seed_spec(),):
            self.add_cluster(body)
        self.add(
            "configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ray-env", "namespace": NS},
             "data": {"RAY_LOG_TO_STDERR": "1", "RAY_object_store_memory": "1000000000"}},
        )  # fmt: skip
        self.add(
            "secrets",
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "minio-credentials", "namespace": NS},
             "data": {"AWS_ACCESS_KEY_ID": "bWluaW8=", "AWS_SECRET_ACCESS_KEY": "bWluaW8xMjM="}},
        )  # fmt: skip
        self.add(
            "persistentvolumeclaims",
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "ray-shared-data", "namespace": NS, "uid": "uid-pvc"},
             "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "standard",
                      "resources": {"requests": {"storage": "1Gi"}}},
             "status": {"phase": "Bound", "accessModes": ["ReadWriteMany"]}},
        )  # fmt: skip
        self.add(
            "storageclasses",
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "metadata": {"name": "standard", "annotations": {s.DEFAULT_STORAGE_CLASS_ANNOTATION: "true"}},
             "provisioner": "example.com/hostpath", "volumeBindingMode": "Immediate"},
        )  # fmt: skip
        for index in range(3):
            name = f"node-{index}"
            self.add(
                "nodes",
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                    "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
                 "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                            "conditions": [{"type": "Ready", "status": "True"}]}},
            )  # fmt: skip
        self.add_operator()
        self.add(
            "customresourcedefinitions",
            {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "metadata": {"name": s.RAYCLUSTER_CRD_NAME},
             "spec": {"versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "properties": {"spec": {"properties": {key: {} for key in CURRENT_SPEC_FIELDS}}}}}}]},
             "status": {"conditions": [{"type": "Established", "status": "True"}]}},
        )  # fmt: skip
        for key in ("events", "endpointslices", "services", "horizontalpodautoscalers", "resourcequotas", "limitranges",
                    "ingresses", "networkpolicies", "subjectaccessreviews"):  # fmt: skip
            self.objects.setdefault(key, [])
        self.allow_operator()

    def add(self, key: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.objects[key].append(obj)
        return obj

    def next_ip(self) -> str:
        self._ip += 1
        return f"10.244.0.{self._ip}"

    def add_cluster(self, body: dict[str, Any], *, ready: bool = True) -> None:
        cluster = RayCluster.model_validate(body)
        options = BuildOptions()
        name = body["metadata"]["name"]
        head = build_pods.head_pod(cluster, options)
        head["metadata"].update(name=f"{name}-head-h0001", uid=f"uid-{name}-head", creationTimestamp=CREATED)
        head["spec"]["nodeName"] = "node-0"
        head["status"] = {**_status(ready), "podIP": self.next_ip()}
        head["status"]["containerStatuses"] = [
            {"name": c["name"], "ready": ready, "restartCount": 0, "state": {"running": {}}}
            for c in head["spec"]["containers"]
        ]
        self.add("pods", head)
        for group_index, group in enumerate(body["spec"].get("workerGroupSpecs") or []):
            for replica in range(group.get("replicas") or 0):
                pod = build_pods.worker_pod(cluster, group_index, options, replica_index=replica)
                pod_name = f"{name}-{group['groupName']}-worker-w000{replica}"
                pod["metadata"].update(name=pod_name, uid=f"uid-{pod_name}", creationTimestamp=CREATED)
                pod["spec"]["nodeName"] = f"node-{1 + replica % 2}"
                pod["status"] = {**_status(ready), "podIP": self.next_ip()}
                pod["status"]["initContainerStatuses"] = [
                    {"name": c.WAIT_GCS_READY_INIT_CONTAINER, "ready": True, "restartCount": 0,
                     "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
                ]  # fmt: skip
                pod["status"]["containerStatuses"] = [
                    {"name": ct["name"], "ready": ready, "restartCount": 0, "state": {"running": {}}}
                    for ct in pod["spec"]["containers"]
                ]
                self.add("pods", pod)
        service = build_services.head_service(cluster, options)
        service["metadata"]["uid"] = f"uid-{name}-svc"
        self.add("services", service)
        self.add(
            "endpointslices",
            {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
             "metadata": {"name": f"{name}-head-svc-abcde", "namespace": NS,
                          "labels": {s.SERVICE_NAME_LABEL: f"{name}-head-svc"}},
             "endpoints": [{"addresses": [head["status"]["podIP"]], "conditions": {"ready": True}}]},
        )  # fmt: skip
        workers = sum(g.get("replicas") or 0 for g in body["spec"].get("workerGroupSpecs") or [])
        body = copy.deepcopy(body)
        body["status"] = {
            "state": "ready",
            "observedGeneration": 1,
            "desiredWorkerReplicas": workers,
            "availableWorkerReplicas": workers,
            "readyWorkerReplicas": workers,
            "head": {"podName": head["metadata"]["name"], "podIP": head["status"]["podIP"]},
            "conditions": [
                {"type": c.CONDITION_HEAD_POD_READY, "status": "True", "reason": c.REASON_HEAD_POD_RUNNING_AND_READY},
                {"type": c.CONDITION_RAYCLUSTER_PROVISIONED, "status": "True",
                 "reason": c.REASON_ALL_PODS_READY_FIRST_TIME},
            ],
        }  # fmt: skip
        self.add("rayclusters", body)

    def add_operator(self, *, ready: bool = True, args: Iterable[str] = ()) -> None:
        labels = {c.K8S_APP_NAME_LABEL: "kuberay-operator", "app.kubernetes.io/component": c.COMPONENT_NAME}
        self.add(
            "deployments",
            {"apiVersion": "apps/v1", "kind": "Deployment",
             "metadata": {"name": "kuberay-operator", "namespace": "kuberay-operator", "labels": labels},
             "spec": {"replicas": 1, "selector": {"matchLabels": {c.K8S_APP_NAME_LABEL: "kuberay-operator"}},
                      "template": {"metadata": {"labels": labels}, "spec": {
                          "serviceAccountName": "kuberay-operator",
                          "containers": [{"name": "kuberay-operator", "image": "ghcr.io/raykube/raykube-operator:0.1.0",
                                          "command": ["raykube", "operator"],
                                          "args": ["--enable-leader-election=false", *args]}]}}},
             "status": {"replicas": 1, "readyReplicas": 1 if ready else 0}},
        )  # fmt: skip
        self.add(
            "pods",
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "kuberay-operator-5d9f-abcde", "namespace": "kuberay-operator", "labels": labels},
             "spec": {"containers": [{"name": "kuberay-operator", "image": "ghcr.io/raykube/raykube-operator:0.1.0"}]},
             "status": {**_status(ready), "containerStatuses": [
                 {"name": "kuberay-operator", "ready": ready, "restartCount": 0 if ready else 7,
                  "state": {"running": {}} if ready else {"waiting": {"reason": "CrashLoopBackOff"}},
                  **({} if ready else {"lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}})}]}},
        )  # fmt: skip

    def allow_operator(self, *, denied: Iterable[tuple[str, str]] = ()) -> None:
        refused = set(denied)
        self.objects["subjectaccessreviews"] = [
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
             "spec": {"user": "system:serviceaccount:kuberay-operator:kuberay-operator",
                      "resourceAttributes": {"namespace": NS, "verb": p.verb, "group": p.group,
                                             "resource": p.resource, "subresource": p.subresource}},
             "status": {"allowed": (p.verb, p.resource) not in refused}}
            for p in OPERATOR_ACCESS
        ]  # fmt: skip

    def one(self, key: str, name: str) -> dict[str, Any]:
        return next(o for o in self.objects[key] if o["metadata"]["name"] == name)

    def pods(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            p for p in self.objects["pods"]
            if "ray.io/cluster" in p["metadata"].get("labels", {})
            and (kind is None or p["metadata"]["labels"]["ray.io/node-type"] == kind)
        ]  # fmt: skip

    def event(self, obj: dict[str, Any], reason: str, message: str, *, count: int = 1, component: str = "kubelet"):
        meta = obj["metadata"]
        return self.add(
            "events",
            {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": f"{meta['name']}.{len(self.objects['events'])}", "namespace": NS},
             "involvedObject": {"kind": obj.get("kind", "Pod"), "name": meta["name"], "namespace": NS,
                                "uid": meta.get("uid")},
             "reason": reason, "message": message, "type": "Warning", "count": count, "lastTimestamp": LATER,
             "source": {"component": component}, "reportingComponent": component},
        )  # fmt: skip

    def snapshot(self, *, skip: Iterable[str] = (), **extra: Any) -> s.Snapshot:
        kept = {k: v for k, v in self.objects.items() if k not in set(skip)}
        return s.build(kept, gathered=kept.keys(), not_checked=[], now=NOW, source="dump", namespaces=(NS,), **extra)

    def diagnose(self, **options: Any) -> Report:
        return diagnose(self.snapshot(), Options(**options))


def roots(report: Report) -> list[Finding]:
    return [f for f in report.findings if not f.caused_by and (f.causes or at_least(f.severity, "error"))]


def below(report: Report, finding: Finding) -> set[str]:
    by_id = {f.id: f for f in report.findings}
    found: set[str] = set()
    stack = list(finding.causes)
    while stack:
        child = by_id[stack.pop()]
        found.add(child.rule)
        stack.extend(child.causes)
    return found


def root(report: Report, rule: str, *under: str) -> Finding:
    """The root cause of ``rule``, with the findings of ``under`` below it: each recorded as asserted firing."""
    found = [f for f in roots(report) if f.rule == rule]
    assert found, f"no root {rule}:\n{render_text(report)}"
    assert set(under) <= below(report, found[0]), f"{rule} lacks {set(under) - below(report, found[0])}:\n" + (
        render_text(report)
    )
    record(rule, *under)
    return found[0]


def rules_of(report: Report) -> set[str]:
    return {f.rule for f in report.findings}


# --------------------------------------------------------------------------------------------------------------------
# Healthy, catalogue, helpers
# --------------------------------------------------------------------------------------------------------------------


def test_the_healthy_seed_cluster_has_nothing_warning_or_worse() -> None:
    report = World().diagnose()
    assert report.exit_code() == 0, render_text(report)
    assert not [f for f in report.findings if at_least(f.severity, "warning")], render_text(report)
    assert rules_of(report) <= {"SEC03", "SEC08"}


def test_the_catalogue_has_at_least_30_rules_each_with_a_checker() -> None:
    assert len(CATALOGUE) >= 30
    owned = {rule for checker in CHECKERS for rule in checker.rules}
    assert owned == set(CATALOGUE)
    groups = {rule_id[0] for rule_id in CATALOGUE}
    assert {"A", "B", "C", "D", "E", "F", "G", "H"} <= groups


def test_the_scheduler_message_of_kuberay_2188_is_split_into_its_reasons() -> None:
    message = (
        "0/5 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {node-role.kubernetes.io/master:"
        " }, 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/5 nodes are available: 5 Preemption "
        "is not helpful for scheduling."
    )
    verdict = parse_scheduler_message(message)
    assert verdict.resources == {"cpu": 1}
    assert verdict.taints == {"node-role.kubernetes.io/master: ": 1}
    assert verdict.selector == 3
    assert parse_scheduler_message("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.").volume


@pytest.mark.parametrize(
    ("image", "version"),
    [("rayproject/ray:2.52.0", "2.52.0"), ("rayproject/ray:2.41.0-py311-gpu", "2.41.0"),
     ("registry:5000/ray/ray:2.9.3", "2.9.3"), ("rayproject/ray", None), ("rayproject/ray:latest", None),
     ("rayproject/ray:2.52.O", None)],
)  # fmt: skip
def test_the_ray_version_is_read_from_the_image_tag(image: str, version: str | None) -> None:
    assert image_ray_version(image) == version


def test_operator_deployments_are_found_by_name_or_label_and_their_watched_namespaces_read() -> None:
    world = World()
    deployment = world.one("deployments", "kuberay-operator")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container["args"] += ["--watch-namespace", "a,b", "--feature-gates=RayClusterStatusConditions=false"]
    [op] = operators(world.snapshot())
    assert op.watch_namespaces == ("a", "b") and op.ready and op.implementation == "raykube"
    assert op.feature_gates == {"RayClusterStatusConditions": False}
    assert op.service_account == "kuberay-operator" and not op.leader_election
    assert op.flag_problems == ()


@pytest.mark.parametrize(
    ("container", "flags"),
    [
        ({"command": ["raykube", "operator"], "args": ["--watch-namespace", "a"]}, ["--watch-namespace", "a"]),
        ({"command": ["/manager"], "args": ["-watch-namespace=a", "--zap-devel"]},
         ["-watch-namespace=a", "--zap-devel"]),
        ({"args": ["--watch-namespace=a"]}, ["--watch-namespace=a"]),  # the image's entrypoint
        ({"command": ["sh", "-c", "exec /manager --watch-namespace=a --feature-gates=RayCronJob=true; sleep 1"]},
         ["--watch-namespace=a", "--feature-gates=RayCronJob=true"]),
        ({"command": ["/bin/bash", "-ec", "--"],
          "args": ["FOO=1 raykube operator --watch-namespace 'a,b' 2>&1 | tee /tmp/log"]},
         ["--watch-namespace", "a,b"]),
        ({"command": ["python", "-m", "raykube", "operator", "--enable-leader-election=false"]},
         ["--enable-leader-election=false"]),
        ({"command": ["/manager"]}, []),
    ],
)  # fmt: skip
def test_the_operator_flags_are_found_on_its_command_line(container: dict[str, Any], flags: list[str]) -> None:
    assert operator_args(container) == flags


def test_operator_flags_inside_sh_c_are_read_by_the_operators_parser() -> None:
    world = World()
    container = world.one("deployments", "kuberay-operator")["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["sh", "-c"]
    container["args"] = ["exec raykube operator --watch-namespace=a,b --enable-leader-election"]
    [op] = operators(world.snapshot())
    assert op.watch_namespaces == ("a", "b") and op.leader_election and op.flag_problems == ()
    assert op.leader_election_namespace == "kuberay-operator"  # the Pod's namespace, as the operator defaults it


def test_with_a_config_file_the_other_flags_are_ignored_as_the_operator_ignores_them() -> None:
    """The file is a ConfigMap mounted in the operator's container, whose values the doctor does not keep: its
    settings read as the Configuration's defaults, and only --feature-gates is taken from the flags."""
    world = World()
    container = world.one("deployments", "kuberay-operator")["spec"]["template"]["spec"]["containers"][0]
    container["args"] = ["--config=/etc/raykube/config.yaml", "--watch-namespace=team-a",
                         "--feature-gates=RayClusterStatusConditions=false"]  # fmt: skip
    [op] = operators(world.snapshot())
    assert op.watch_namespaces == () and op.leader_election and op.flag_problems == ()
    assert op.feature_gates == {"RayClusterStatusConditions": False}


def test_a_kuberay_operators_own_flags_are_read_not_refused() -> None:
    """KubeRay's operator knows controller-runtime's --zap-* flags and kai-scheduler, which raykube's parser does not
    take: what it can read is kept, the rest noted, and nothing is reported against a KubeRay operator."""
    world = World()
    container = world.one("deployments", "kuberay-operator")["spec"]["template"]["spec"]["containers"][0]
    container.update(image="quay.io/kuberay/operator:v1.6.1", command=["/manager"],
                     args=["--zap-log-level=debug", f"--watch-namespace={NS}", "--batch-scheduler=kai-scheduler",
                           "--feature-gates=AsyncJobInfoQuery=true,RayClusterStatusConditions=false"])  # fmt: skip
    [op] = operators(world.snapshot())
    assert op.implementation == "kuberay" and op.watch_namespaces == (NS,) and op.leader_election
    assert op.feature_gates == {"RayClusterStatusConditions": False}
    assert len(op.flag_problems) == 3
    assert not [f for f in world.diagnose().findings if f.rule.startswith("A1")]


# --------------------------------------------------------------------------------------------------------------------
# Operator, CRD, spec
# --------------------------------------------------------------------------------------------------------------------


def _unreconciled(world: World) -> None:
    cluster = world.objects["rayclusters"][0]
    cluster.pop("status")
    world.objects["pods"] = [p for p in world.objects["pods"] if "ray.io/cluster" not in p["metadata"]["labels"]]
    world.objects["services"] = []
    world.objects["endpointslices"] = []


def test_no_operator_and_no_status_puts_everything_under_operator_missing() -> None:
    world = World()
    _unreconciled(world)
    world.objects["deployments"] = []
    world.objects["pods"] = []
    report = world.diagnose()
    finding = root(report, "A01", "A12", "X02", "X03", "F05", "E01", "F07", "X01")
    assert finding.severity == "error" and [f.rule for f in roots(report)] == ["A01"]


def test_an_operator_watching_other_namespaces_is_the_root_cause() -> None:
    world = World()
    _unreconciled(world)
    container = world.one("deployments", "kuberay-operator")["spec"]["template"]["spec"]["containers"][0]
    container["args"].append("--watch-namespace=team-a,team-b")
    finding = root(world.diagnose(), "A11", "A12", "X02")
    assert "team-a,team-b" in str(finding.evidence[0].value)


def test_an_operator_without_a_ready_pod_is_the_root_cause() -> None:
    world = World()
    world.objects["deployments"] = []
    world.objects["pods"] = [p for p in world.objects["pods"] if "ray.io/cluster" in p["metadata"]["labels"]]
    world.add_operator(ready=False)
    _unreconciled(world)
    finding = root(world.diagnose(), "A10", "A12", "X02")
    assert any("CrashLoopBackOff" in str(e.value) for e in finding.evidence)
    assert not any("refused" in str(e.value) for e in finding.evidence)


def test_flags_the_raykube_operator_refuses_are_evidence_of_its_crash() -> None:
    world = World()
    world.objects["deployments"] = []
    world.objects["pods"] = [p for p in world.objects["pods"] if "ray.io/cluster" in p["metadata"]["labels"]]
    world.add_operator(ready=False, args=["--batch-scheduler=kai-scheduler", "--no-such-flag"])
    _unreconciled(world)
    finding = root(world.diagnose(), "A10", "A12", "X02")
    refused = [e for e in finding.evidence if e.path == "spec.template.spec.containers[0].args"]
    assert [str(e.value) for e in refused] == [
        "refused by raykube operator: unrecognized arguments: --no-such-flag",
        "refused by raykube operator: flags: batch scheduler 'kai-scheduler' is a KubeRay batch scheduler raykube "
        "does not implement yet (implemented: volcano, yunikorn); refusing to start rather than leave the Pods to "
        "the default scheduler",
    ]


def test_a_denied_create_pods_explains_the_rejected_head_pod() -> None:
    world = World()
    world.allow_operator(denied=[("create", "pods")])
    world.objects["pods"] = [p for p in world.objects["pods"] if p["metadata"]["labels"].get(c.RAY_NODE_TYPE_LABEL)
                             != c.NODE_TYPE_HEAD]  # fmt: skip
    cluster = world.objects["rayclusters"][0]
    message = (
        'Failed to create head Pod ml/seed-head-, pods is forbidden: User "system:serviceaccount:kuberay-operator:'
        'kuberay-operator" cannot create resource "pods" in API group "" in the namespace "ml"'
    )
    world.event(cluster, c.EVENT_FAILED_TO_CREATE_HEAD_POD, message, count=4, component=c.RAYCLUSTER_CONTROLLER_NAME)
    finding = root(world.diagnose(), "A02", "B01", "X02", "F07")
    assert finding.object == ObjectRef("ServiceAccount", "kuberay-operator", "kuberay-operator")


def test_a_quota_rejection_quotes_the_quota() -> None:
    world = World()
    world.objects["pods"] = [p for p in world.objects["pods"] if "head" not in p["metadata"]["name"]]
    world.add(
        "resourcequotas",
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "quota", "namespace": NS},
         "status": {"hard": {"requests.cpu": "2"}, "used": {"requests.cpu": "2"}}},
    )  # fmt: skip
    message = (
        'Failed to create head Pod ml/seed-head-, pods "andreasd-cluster1-head-rs8wr" is forbidden: exceeded quota: '
        "quota, requested: limits.cpu=12,requests.cpu=12, used: requests.cpu=2, limited: requests.cpu=2"
    )
    cluster = world.objects["rayclusters"][0]
    world.event(cluster, c.EVENT_FAILED_TO_CREATE_HEAD_POD, message, component=c.RAYCLUSTER_CONTROLLER_NAME)
    finding = root(world.diagnose(), "B07", "X02")
    assert any(e.value == "2/2" for e in finding.evidence)


def test_pod_security_admission_rejection() -> None:
    world = World()
    world.objects["pods"] = [p for p in world.objects["pods"] if "head" not in p["metadata"]["name"]]
    message = (
        'Failed to create head Pod ml/seed-head-, pods "raycluster-complete-head-fkbf5" is forbidden: violates '
        'PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "ray-head" must set '
        "securityContext.allowPrivilegeEscalation=false)"
    )
    world.event(world.objects["rayclusters"][0], c.EVENT_FAILED_TO_CREATE_HEAD_POD, message,
                component=c.RAYCLUSTER_CONTROLLER_NAME)  # fmt: skip
    finding = root(world.diagnose(), "B01", "X02")
    assert "Pod Security" in finding.explanation


def test_a_missing_crd_is_cluster_wide_and_critical() -> None:
    world = World()
    world.objects["customresourcedefinitions"] = []
    world.objects["rayclusters"] = []
    report = world.diagnose()
    finding = one_finding(report, "A13")
    assert finding.cluster is None and finding.severity == "critical"
    assert report.exit_code() == 1


def test_an_old_crd_that_prunes_fields_is_skew() -> None:
    world = World()
    properties = world.objects["customresourcedefinitions"][0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    del properties["properties"]["spec"]["properties"]["authOptions"]
    finding = one_finding(world.diagnose(), "A03")
    assert "authOptions" in finding.title and finding.severity == "warning"


def test_an_invalid_spec_reuses_kuberays_validation_messages() -> None:
    world = World()
    world.objects["rayclusters"][0]["spec"]["workerGroupSpecs"][0]["minReplicas"] = 5
    world.objects["rayclusters"][0]["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 1
    world.objects["rayclusters"][0]["status"] = {}
    report = world.diagnose()
    finding = root(report, "A05")
    assert any("minReplicas" in (e.path or "") for e in finding.evidence), render_text(report)


# --------------------------------------------------------------------------------------------------------------------
# Scheduling, volumes, configuration, images
# --------------------------------------------------------------------------------------------------------------------


def _pending(world: World, pods: list[dict[str, Any]], message: str, *, with_event: bool = True) -> None:
    for pod in pods:
        pod["spec"].pop("nodeName", None)
        pod["status"] = {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}],
        }
        if with_event:
            world.event(pod, "FailedScheduling", message, count=3, component="default-scheduler")
        if pod["metadata"]["labels"][c.RAY_NODE_TYPE_LABEL] == c.NODE_TYPE_HEAD:
            for endpoint_slice in world.objects["endpointslices"]:
                endpoint_slice["endpoints"] = []
    world.objects["rayclusters"][0]["status"]["state"] = ""


def test_workers_that_can_never_fit_and_workers_that_wait_for_room() -> None:
    world = World()
    workers = world.pods("worker")
    for pod in workers:
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "16"}, "limits": {"cpu": "16"}}
    _pending(world, workers, "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available.")
    finding = root(world.diagnose(), "B02", "X03", "X01")
    assert "can never be scheduled" in finding.title and finding.confidence == "confirmed"

    world = World()
    _pending(world, world.pods("worker"), "0/3 nodes are available: 3 Insufficient memory.")
    finding = root(world.diagnose(), "B02", "X03")
    assert "cannot be scheduled now" in finding.title and finding.confidence == "likely"


def test_a_node_selector_no_node_matches() -> None:
    world = World()
    workers = world.pods("worker")
    for pod in workers:
        pod["spec"]["nodeSelector"] = {"cloud.google.com/gke-nodepool": "gpu-pool"}
    _pending(world, workers, "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.")
    finding = root(world.diagnose(), "B03", "X03")
    assert any("cloud.google.com/gke-nodepool=gpu-pool" in str(e.value) for e in finding.evidence)


def test_gpu_workers_on_a_cluster_without_gpus() -> None:
    world = World()
    workers = world.pods("worker")
    for pod in workers:
        pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1", "cpu": "1"}}
    _pending(world, workers, "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
    finding = root(world.diagnose(), "G07", "X03")
    assert "no node advertises nvidia.com/gpu" in finding.title


def test_templates_that_will_never_fit_are_flagged_before_any_pod_exists() -> None:
    world = World()
    _unreconciled(world)
    world.objects["deployments"] = []
    spec = world.objects["rayclusters"][0]["spec"]["workerGroupSpecs"][0]["template"]["spec"]
    spec["containers"][0]["resources"] = {"requests": {"cpu": "64"}}
    report = world.diagnose()
    finding = one_finding(roots(report), "B02")
    assert finding.confidence == "likely" and "will never fit" in finding.title


def test_a_pvc_pending_on_a_missing_storage_class() -> None:
    world = World()
    claim = world.one("persistentvolumeclaims", "ray-shared-data")
    claim["spec"]["storageClassName"] = "fast-ssd"
    claim["status"] = {"phase": "Pending"}
    message = 'storageclass.storage.k8s.io "fast-ssd" not found'
    world.event(claim | {"kind": "PersistentVolumeClaim"}, "ProvisioningFailed", message, component="pv-controller")
    _pending(world, world.pods(), "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
    report = world.diagnose()
    finding = root(report, "B04", "X02", "X03", "F02", "F07", "X01")
    assert 'StorageClass "fast-ssd" does not exist' in finding.title
    assert_quiet(report, "B02", "B03")


def test_a_claim_waiting_for_its_first_consumer_is_not_a_problem() -> None:
    world = World()
    world.one("storageclasses", "standard")["volumeBindingMode"] = "WaitForFirstConsumer"
    world.one("persistentvolumeclaims", "ray-shared-data")["status"] = {"phase": "Pending"}
    assert_quiet(world.diagnose(), "B04")


def test_a_missing_claim() -> None:
    world = World()
    world.objects["persistentvolumeclaims"] = []
    root(world.diagnose(), "B08")


def test_a_read_write_once_claim_shared_across_nodes_and_read_write_once_pod() -> None:
    world = World()
    claim = world.one("persistentvolumeclaims", "ray-shared-data")
    claim["spec"]["accessModes"] = claim["status"]["accessModes"] = ["ReadWriteOnce"]
    finding = root(world.diagnose(), "B09")
    assert finding.severity == "error" and "on 3 nodes" in finding.title

    for pod in world.pods():
        pod["spec"]["nodeName"] = "node-0"
    finding = one_finding(world.diagnose(), "B09")
    assert finding.severity == "warning"

    claim["status"]["accessModes"] = ["ReadWriteOncePod"]
    finding = one_finding(world.diagnose(), "B09")
    assert finding.severity == "error"


def _kubelet_waiting(pod: dict[str, Any], reason: str, message: str = "", *, init: bool = False) -> None:
    pod["status"]["phase"] = "Pending"
    for cond in pod["status"]["conditions"]:
        if cond["type"] in ("Ready", "ContainersReady"):
            cond["status"] = "False"
    key = "initContainerStatuses" if init else "containerStatuses"
    for status in pod["status"].get(key) or []:
        status["ready"] = False
        status["state"] = {"waiting": {"reason": reason, "message": message}}


def test_a_failed_mount_event_is_the_root_cause_of_the_pods_that_wait() -> None:
    world = World()
    for pod in world.pods():
        _kubelet_waiting(pod, "ContainerCreating")
        world.event(pod, "FailedMount", 'MountVolume.SetUp failed for volume "shared-data" : mount failed')
    finding = root(world.diagnose(), "B10", "X02", "X03", "B05")  # the state stays "ready": it is sticky
    assert "ray-shared-data" in finding.title


def test_a_missing_secret_from_the_objects_and_from_the_kubelet() -> None:
    world = World()
    world.objects["secrets"] = []
    report = world.diagnose()
    finding = root(report, "C07")
    assert finding.object == ObjectRef("Secret", "minio-credentials", NS) and finding.severity == "error"
    assert "already run" in finding.explanation

    for pod in world.pods():
        _kubelet_waiting(pod, "CreateContainerConfigError", 'secret "minio-credentials" not found')
    finding = root(world.diagnose(), "C07", "C09", "X02", "X03")
    assert any("CreateContainerConfigError" in str(e.value) for e in finding.evidence)


def test_a_missing_configmap_key_and_optional_references() -> None:
    world = World()
    container = world.objects["rayclusters"][0]["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "ray-env", "key": "NOPE"}}}]
    finding = root(world.diagnose(), "C08")
    assert 'no key "NOPE"' in finding.title

    container["env"][0]["valueFrom"]["configMapKeyRef"]["optional"] = True
    assert_quiet(world.diagnose(), "C08")


def test_a_missing_configmap_volume() -> None:
    world = World()
    spec = world.objects["rayclusters"][0]["spec"]["headGroupSpec"]["template"]["spec"]
    spec["volumes"].append({"name": "cfg", "configMap": {"name": "ray-config"}})
    finding = root(world.diagnose(), "C06")
    assert "a volume" in finding.title


def test_without_permission_on_secrets_the_references_are_not_checked() -> None:
    world = World()
    world.objects["secrets"] = []
    report = diagnose(world.snapshot(skip=["secrets"]))
    assert_quiet(report, "C07")


def test_an_image_pull_failure_and_the_workers_waiting_for_the_gcs() -> None:
    world = World()
    head = world.pods("head")[0]
    _kubelet_waiting(head, "ImagePullBackOff", 'Back-off pulling image "rayproject/ray:2.41.O"')
    world.event(head, "Failed", 'Failed to pull image "rayproject/ray:2.41.O": not found')
    for pod in world.pods("worker"):
        _kubelet_waiting(pod, "PodInitializing")
        pod["status"]["initContainerStatuses"][0]["state"] = {"running": {}}
    finding = root(world.diagnose(), "C01", "X02", "E01", "X03", "B05", "F07")
    assert finding.severity == "error"


def test_crash_loops_and_oom_kills() -> None:
    world = World()
    head = world.pods("head")[0]
    head["status"]["conditions"][2]["status"] = "False"
    head["status"]["containerStatuses"][0].update(
        ready=False, restartCount=5, state={"waiting": {"reason": "CrashLoopBackOff"}},
        lastState={"terminated": {"reason": "OOMKilled", "exitCode": 137}},
    )  # fmt: skip
    finding = root(world.diagnose(), "D01", "X02")
    assert "OOM" in finding.title and "2Gi" in finding.title

    head["status"]["containerStatuses"][0]["lastState"] = {"terminated": {"reason": "Error", "exitCode": 1}}
    root(world.diagnose(), "D07", "X02")


def test_a_head_running_but_not_ready() -> None:
    world = World()
    head = world.pods("head")[0]
    head["status"]["conditions"][2].update(status="False", reason="ContainersNotReady")
    head["status"]["containerStatuses"][0]["ready"] = False
    world.event(head, "Unhealthy", "Readiness probe failed: ", count=30)
    report = world.diagnose()
    finding = root(report, "D02", "X02", "B05", "F07")
    assert "Readiness probe failed" in finding.title


def test_gcs_fault_tolerance_with_an_unreachable_redis() -> None:
    world = World()
    world.objects["rayclusters"][0]["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    head = world.pods("head")[0]
    head["status"]["conditions"][2]["status"] = "False"
    head["status"]["containerStatuses"][0]["ready"] = False
    finding = root(world.diagnose(), "D04", "X02")
    assert 'the Redis Service "redis" does not exist' in finding.title


# --------------------------------------------------------------------------------------------------------------------
# Services, the dashboard, workers
# --------------------------------------------------------------------------------------------------------------------


def test_an_edited_selector_and_a_missing_service() -> None:
    world = World()
    service = world.one("services", "seed-head-svc")
    service["spec"]["selector"][c.RAY_ID_LABEL] = "other"
    world.objects["endpointslices"][0]["endpoints"] = []
    root(world.diagnose(), "F06", "F02", "E01", "F07")

    world.objects["services"] = []
    world.objects["endpointslices"] = []
    root(world.diagnose(), "F05", "E01", "F07")


def test_a_dashboard_bound_to_localhost() -> None:
    world = World()
    world.objects["rayclusters"][0]["spec"]["headGroupSpec"]["rayStartParams"]["dashboard-host"] = "127.0.0.1"
    report = world.diagnose()
    finding = root(report, "F01")
    # kubectl port-forward connects to localhost inside the Pod: it still opens the dashboard (no F07); what fails is
    # the head Service's address from other Pods and Ingresses.
    assert_quiet(report, "F07")
    assert "`kubectl port-forward` (to the Service or the Pod) still works" in finding.explanation


def test_a_shared_volume_over_ray_temp_dir_is_a_warning_and_a_path_of_its_own_is_fine() -> None:
    world = World()
    for pod_template in (world.objects["rayclusters"][0]["spec"]["headGroupSpec"],
                         world.objects["rayclusters"][0]["spec"]["workerGroupSpecs"][0]):  # fmt: skip
        pod_template["template"]["spec"]["containers"][0]["volumeMounts"] = [
            {"name": "shared-data", "mountPath": "/tmp/ray"}
        ]
    report = world.diagnose()
    finding = one_finding(report, "B12")
    assert finding.severity == "warning"
    assert (
        finding.title == 'PVC "ray-shared-data" is mounted over Ray\'s temp directory in 3 Pods at once (ReadWriteMany)'
    )
    assert "/home/ray/shared" in finding.remediation[0]
    # Ray's temp dir moved elsewhere (rayStartParams temp-dir): /tmp/ray is just a path then.
    for group in (world.objects["rayclusters"][0]["spec"]["headGroupSpec"],
                  world.objects["rayclusters"][0]["spec"]["workerGroupSpecs"][0]):  # fmt: skip
        group["rayStartParams"]["temp-dir"] = "/tmp/ray-local"
    assert_quiet(world.diagnose(), "B12")
    assert_quiet(World().diagnose(), "B12")  # the seed: /home/ray/shared


def test_why_there_are_fewer_workers() -> None:
    world = World()
    cluster = world.objects["rayclusters"][0]
    group = cluster["spec"]["workerGroupSpecs"][0]
    group.update(replicas=5, maxReplicas=2)
    world.add(
        "horizontalpodautoscalers",
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
         "metadata": {"name": "ray", "namespace": NS},
         "spec": {"scaleTargetRef": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "seed"},
                  "minReplicas": 1, "maxReplicas": 4}},
    )  # fmt: skip
    cluster["metadata"]["generation"] = 3
    cluster["metadata"]["managedFields"] = [
        {"manager": "kubectl-create", "operation": "Update", "time": CREATED,
         "fieldsV1": {"f:spec": {"f:workerGroupSpecs": {}}}},
        {"manager": "kubectl-edit", "operation": "Update", "time": LATER,
         "fieldsV1": {"f:spec": {"f:workerGroupSpecs": {}}}},
    ]  # fmt: skip
    group["scaleStrategy"] = {"workersToDelete": ["seed-workers-worker-w0001"]}
    report = world.diagnose()
    assert_fires(report, "G02", "G04", "G08", "G09")
    hpa = one_finding(report, "G04")
    assert "cannot scale" in hpa.title and not hpa.effects  # no scale subresource: it explains no missing worker


# --------------------------------------------------------------------------------------------------------------------
# Security
# --------------------------------------------------------------------------------------------------------------------


def test_a_dashboard_on_a_load_balancer_without_auth_is_critical() -> None:
    world = World()
    service = world.one("services", "seed-head-svc")
    service["spec"]["type"] = "LoadBalancer"
    service["spec"].pop("clusterIP", None)
    report = world.diagnose()
    exposed = one_finding(report, "SEC01")
    ports = one_finding(report, "SEC02")
    assert exposed.severity == ports.severity == "critical"

    world.objects["rayclusters"][0]["spec"]["authOptions"] = {"mode": "token"}
    report = world.diagnose()
    assert_quiet(report, "SEC01", "SEC03")
    assert_fires(report, "SEC02")


@pytest.mark.parametrize(
    "annotations",
    [
        {"service.beta.kubernetes.io/aws-load-balancer-scheme": "internal"},
        {"networking.gke.io/load-balancer-type": "Internal"},
        {"service.beta.kubernetes.io/azure-load-balancer-internal": "true"},
    ],
)
def test_a_dashboard_on_an_internal_load_balancer_is_a_warning_not_critical(annotations: dict[str, str]) -> None:
    world = World()
    service = world.one("services", "seed-head-svc")
    service["spec"]["type"] = "LoadBalancer"
    service["metadata"]["annotations"] = annotations
    exposed = one_finding(world.diagnose(), "SEC01")
    assert exposed.severity == "warning" and "internal load balancer" in exposed.title
    assert any("internal:" in str(e.value) for e in exposed.evidence)


def test_a_dashboard_behind_an_authenticating_ingress_is_a_warning_and_an_open_one_critical() -> None:
    world = World()

    def ingress(name: str, annotations: dict[str, str]) -> None:
        world.add(
            "ingresses",
            {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
             "metadata": {"name": name, "namespace": NS, "annotations": annotations},
             "spec": {"tls": [{"hosts": ["ray.example.com"]}], "rules": [{"http": {"paths": [{"path": "/",
                      "pathType": "Prefix", "backend": {"service": {"name": "seed-head-svc",
                                                                    "port": {"number": 8265}}}}]}}]}},
        )  # fmt: skip

    ingress("dash", {"nginx.ingress.kubernetes.io/auth-url": "https://oauth2-proxy.example.com/oauth2/auth"})
    exposed = one_finding(world.diagnose(), "SEC01")
    assert exposed.severity == "warning"
    ingress("open", {})
    exposed = one_finding(world.diagnose(), "SEC01")
    assert exposed.severity == "critical"


def test_credentials_in_plain_spec_are_redacted_everywhere() -> None:
    world = World()
    container = world.objects["rayclusters"][0]["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "AWS_SECRET_ACCESS_KEY", "value": "hunter2-very-secret"}]
    container["securityContext"] = {"privileged": True}
    report = world.diagnose()
    assert_fires(report, "SEC05", "SEC06")
    assert "hunter2-very-secret" not in render_text(report) + render_json(report)


# --------------------------------------------------------------------------------------------------------------------
# Correlation, exit codes, rule failures
# --------------------------------------------------------------------------------------------------------------------


def _f(rule: str, stage: int, *, symptoms: Iterable[str] = (), effects: Iterable[str] = ()) -> Finding:
    return Finding(rule=rule, code=rule, severity="error", confidence="confirmed", title=rule,
                   object=ObjectRef("X", rule), cluster=None, stage=stage, symptoms=frozenset(symptoms),
                   effects=frozenset(effects))  # fmt: skip


def test_correlation_keeps_the_nearest_cause_and_breaks_cycles_by_stage() -> None:
    a = _f("A1", 1, effects={"x", "y"})
    b = _f("B1", 2, symptoms={"x"}, effects={"y", "a"})
    c_ = _f("C1", 3, symptoms={"y"}, effects={"x"})
    ordered = correlate([c_, b, a])
    assert [f.id for f in ordered] == ["A1-1", "B1-1", "C1-1"]
    assert (a.caused_by, b.caused_by, c_.caused_by) == ([], ["A1-1"], ["B1-1"])
    assert a.causes == ["B1-1"] and b.causes == ["C1-1"]


def test_fail_on_and_exit_zero_and_a_failing_rule() -> None:
    world = World()
    world.objects["rayclusters"][0]["spec"]["rayVersion"] = "2.41.0"
    report = world.diagnose()
    assert report.exit_code() == 0
    assert_fires(report, "C05")
    assert world.diagnose(fail_on="warning").exit_code() == 1

    def broken(snap: s.Snapshot) -> list[Finding]:
        raise RuntimeError("boom")

    CHECKERS.append(RegisteredChecker("test.broken", ("Z99",), broken))
    try:
        report = World().diagnose()
    finally:
        CHECKERS.pop()
    assert report.exit_code() == 4 and report.rule_failures[0].error == "RuntimeError: boom"
    assert "rule Z99 failed" in render_text(report)


def test_only_and_skip_and_no_security() -> None:
    world = World()
    world.objects["secrets"] = []
    only = world.diagnose(only=frozenset({"C07"}))
    assert_fires(only, "C07")
    assert rules_of(only) == {"C07"}
    assert_quiet(world.diagnose(skip=frozenset({"C07"})), "C07")
    assert not {r for r in rules_of(world.diagnose(security=False)) if r.startswith("SEC")}


def test_a_target_that_does_not_exist_is_incomplete() -> None:
    report = diagnose(World().snapshot(targets=((NS, "nope"),)))
    assert report.missing_targets == [ObjectRef(c.KIND_RAYCLUSTER, "nope", NS)]
    assert report.exit_code() == 3


def test_a_suspended_cluster_is_only_a_note() -> None:
    world = World()
    world.objects["rayclusters"][0]["spec"]["suspend"] = True
    world.objects["rayclusters"][0]["status"]["state"] = c.CLUSTER_STATE_SUSPENDED
    world.objects["pods"] = [p for p in world.objects["pods"] if "ray.io/cluster" not in p["metadata"]["labels"]]
    world.objects["endpointslices"][0]["endpoints"] = []
    report = world.diagnose()
    assert report.exit_code() == 0, render_text(report)
    assert_fires(report, "B06")


def test_a_cluster_stuck_terminating_on_the_redis_cleanup_finalizer() -> None:
    world = World()
    meta = world.objects["rayclusters"][0]["metadata"]
    meta.update(deletionTimestamp="2026-01-01T11:51:00Z", finalizers=[c.GCS_FT_REDIS_CLEANUP_FINALIZER])
    finding = root(world.diagnose(), "A09")
    assert "Redis cleanup Job" in finding.explanation


def test_crash_looping_workers_and_evicted_pods() -> None:
    world = World()
    first, second = world.pods("worker")
    first["status"]["conditions"][2]["status"] = "False"
    first["status"]["containerStatuses"][0].update(
        ready=False, restartCount=9, state={"waiting": {"reason": "CrashLoopBackOff"}},
        lastState={"terminated": {"reason": "Error", "exitCode": 1, "message": "ray start failed"}},
    )  # fmt: skip
    second["status"] = {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}
    report = world.diagnose()
    root(report, "D07", "X03")
    assert_fires(report, "P02")


def test_workers_waiting_for_a_healthy_head_are_reported_without_a_cause() -> None:
    world = World()
    for pod in world.pods("worker"):
        _kubelet_waiting(pod, "PodInitializing")
        pod["status"]["initContainerStatuses"][0]["state"] = {"running": {}}
    report = world.diagnose()
    finding = root(report, "E01", "X03")
    assert finding.confidence == "confirmed" and "2 workers wait for the GCS" in finding.title


def test_every_rule_survives_an_empty_and_an_odd_snapshot() -> None:
    empty = s.build({}, gathered=[], not_checked=[], now=NOW, source="dump")
    assert diagnose(empty).rule_failures == []
    odd = World()
    odd.objects["rayclusters"][0]["spec"]["workerGroupSpecs"] = [{"groupName": 3, "replicas": "x"}, "nonsense"]
    odd.objects["rayclusters"][0]["spec"]["headGroupSpec"] = {"template": None}
    odd.objects["pods"][0]["status"] = None
    report = odd.diagnose()
    assert report.rule_failures == [], report.rule_failures
    assert_fires(report, "A05")


def test_a_cluster_that_is_starting_is_progress_until_the_grace_runs_out() -> None:
    """A head still pulling its image a minute after the cluster was made: progress (info, exit 0) within the
    starting grace, a problem (exit 1) without it; a real cause (an unschedulable worker) is never softened."""
    world = World()
    cluster = world.objects["rayclusters"][0]
    cluster["metadata"]["creationTimestamp"] = "2026-01-01T11:59:00Z"
    head = world.pods("head")[0]
    head["metadata"]["creationTimestamp"] = "2026-01-01T11:59:00Z"
    creating = {"name": head["spec"]["containers"][0]["name"], "ready": False, "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}}}  # fmt: skip
    head["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                      "containerStatuses": [creating]}  # fmt: skip
    cluster["status"]["state"] = ""
    starting = world.diagnose()
    assert starting.exit_code() == 0, render_text(starting)
    softened = [f for f in starting.findings if f.title.startswith("Starting (grace 4m left): ")]
    assert softened and all(f.severity == "info" for f in softened), render_text(starting)
    assert world.diagnose(starting_grace=0).exit_code() == 1

    _pending(world, world.pods("worker"), "0/3 nodes are available: 3 Insufficient memory.")
    assert root(world.diagnose(), "B02").severity == "error"


def test_a_young_cluster_the_operator_already_acts_on_is_not_unreconciled() -> None:
    """A RayCluster seconds old whose Pods the operator created but whose first status is not written yet: no A12
    (before, it was a second root cause beside the real one, B02 say); without any sign of the operator it is."""
    world = World()
    world.add_operator()
    world.allow_operator()
    cluster = world.objects["rayclusters"][0]
    cluster.pop("status")
    cluster["metadata"]["creationTimestamp"] = "2026-01-01T11:59:58Z"  # 2 s before NOW
    world.event(cluster, "CreatedHeadPod", "Created head Pod", component=c.RAYCLUSTER_CONTROLLER_NAME)
    assert_quiet(world.diagnose(), "A12")

    world.objects["events"] = []
    world.objects["pods"] = [p for p in world.objects["pods"] if "ray.io/cluster" not in p["metadata"]["labels"]]
    a12 = one_finding(world.diagnose(), "A12")
    assert a12.severity == "info" and "created 2s ago" in a12.title


def test_no_operator_for_a_young_cluster_is_a_warning_unless_the_run_allows_no_grace() -> None:
    world = World()
    _unreconciled(world)
    world.objects["deployments"] = []
    world.objects["pods"] = []
    world.objects["rayclusters"][0]["metadata"]["creationTimestamp"] = "2026-01-01T11:59:55Z"  # 5 s before NOW
    waiting = one_finding(world.diagnose(), "A01")
    assert waiting.severity == "warning" and "created 5s ago" in waiting.title
    now = one_finding(world.diagnose(starting_grace=0), "A01")
    assert now.severity == "error" and now.confidence == "confirmed"


def test_a_v161_crd_is_skew_for_a_v170_operator_but_not_for_kuberay_v161() -> None:
    world = World()
    properties = world.objects["customresourcedefinitions"][0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for field in c.RAYCLUSTER_SPEC_FIELDS_SINCE_V170:
        del properties["properties"]["spec"]["properties"][field]
    finding = one_finding(world.diagnose(), "A03")
    assert "networkPolicy" in finding.title  # raykube (v1.7.0) with a v1.6 CRD: those fields would be pruned
    container = world.one("deployments", "kuberay-operator")["spec"]["template"]["spec"]["containers"][0]
    container.update(image="quay.io/kuberay/operator:v1.6.1", command=["/manager"], args=[])
    assert not [f for f in world.diagnose().findings if f.rule == "A03"]  # KubeRay v1.6.1 needs none of them

"""The Helm chart helm/raykube-operator: it lints, renders what KubeRay's kuberay-operator chart renders for the same
values, installs on the sandbox (the operator Pod lands on a kwok node, which fakes it Running and Ready), and its
default render is checked in as config/operator/, which ``raykube install`` applies without Helm.

Cluster-scoped names (ClusterRole, ClusterRoleBinding) are shared by the whole sandbox, so each install here uses a
name of its own and removes those objects afterwards. The ray.io CRDs that ``raykube install`` applies stay: they are
the same generated CRDs the session's ``ray_crds`` fixture installs for other tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError, AsyncClient
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.authorization_v1 import SubjectAccessReview
from lightkube.resources.core_v1 import Service, ServiceAccount
from lightkube.resources.rbac_authorization_v1 import ClusterRole, ClusterRoleBinding, Role, RoleBinding

from raykube.api import rbac
from raykube.deploy.install import InstallError, install_operator
from raykube.deploy.manifests import chart_dir, helm_template, load_manifests, manifests_dir, render_manifests, retarget
from raykube.kube.client import Kube
from raykube.waiting import NotYet, wait_for
from tests.ledger import Ledger

CHART = chart_dir()
RBAC_KINDS = {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def run_helm(helm: tuple[Path, dict[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    binary, env = helm
    return subprocess.run([str(binary), *args], env=env, capture_output=True, text=True, timeout=300, check=False)


def render(*args: str, namespace: str = "kuberay-operator") -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(helm_template(*args, namespace=namespace)) if doc]


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = find(objects, "Deployment")
    (operator,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(operator)


def rules_file(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load((CHART / "files" / name).read_text()))


# ---------------------------------------------------------------------------------------------------------------------
# Lint and render


@pytest.mark.parametrize(
    "values",
    [
        [],
        ["--set", "singleNamespaceInstall=true", "--set", "watchNamespace={a,b}"],
        ["--set", "configuration.enabled=true", "--set", "logging.baseDir=/logs", "--set", "logging.fileName=op.log"],
        ["--set", "rbacEnable=false", "--set", "metrics.serviceMonitor.enabled=true"],
    ],
    ids=["defaults", "single-namespace", "configuration", "no-rbac"],
)
def test_the_chart_lints(helm: tuple[Path, dict[str, str]], values: list[str]) -> None:
    result = run_helm(helm, "lint", "--strict", str(CHART), *values)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.reliability("The operator's Pod is restricted")
def test_default_values_render_kuberays_objects(ledger: Ledger) -> None:
    objects = render()
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in objects)
    assert kinds == [
        ("ClusterRole", "kuberay-operator"),
        ("ClusterRoleBinding", "kuberay-operator"),
        ("Deployment", "kuberay-operator"),
        ("Role", "kuberay-operator-leader-election"),
        ("RoleBinding", "kuberay-operator-leader-election"),
        ("Service", "kuberay-operator"),
        ("ServiceAccount", "kuberay-operator"),
    ]
    (cluster_role,) = find(objects, "ClusterRole")
    assert cluster_role["rules"] == rules_file("operator-rules.yaml") == rbac.policy_rules(rbac.OPERATOR_RULES)
    (leader_role,) = find(objects, "Role")
    assert leader_role["metadata"]["namespace"] == "kuberay-operator"
    assert leader_role["rules"] == rules_file("leader-election-rules.yaml")
    assert leader_role["rules"] == rbac.policy_rules(rbac.LEADER_ELECTION_RULES)
    for binding in find(objects, "ClusterRoleBinding") + find(objects, "RoleBinding"):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "kuberay-operator", "namespace": "kuberay-operator"}
        ]
    (service,) = find(objects, "Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [{"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}]

    (deployment,) = find(objects, "Deployment")
    assert deployment["metadata"]["namespace"] == "kuberay-operator"
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    selector = {"app.kubernetes.io/name": "kuberay-operator", "app.kubernetes.io/instance": "kuberay-operator"}
    assert deployment["spec"]["selector"]["matchLabels"] == selector
    assert service["spec"]["selector"] == selector
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["labels"] == {**selector, "app.kubernetes.io/component": "kuberay-operator"}
    assert pod["spec"]["serviceAccountName"] == "kuberay-operator"
    operator = container(objects)
    assert operator["name"] == "kuberay-operator"
    assert operator["image"] == "ghcr.io/raykube/raykube-operator:0.1.0"
    assert operator["imagePullPolicy"] == "IfNotPresent"
    assert operator["command"] == ["raykube", "operator"]
    assert operator["args"] == [
        "--metrics-addr=:8080",
        "--health-probe-bind-address=:8082",
        "--enable-leader-election=true",
        "--leader-election-namespace=kuberay-operator",
        "--reconcile-concurrency=10",
        "--qps=100",
        "--burst=200",
        "--log-stdout-encoder=json",
        "--enable-metrics=true",
        "--feature-gates=RayClusterStatusConditions=true,RayJobDeletionPolicy=true,RayMultiHostIndexing=true,"
        "RayServiceIncrementalUpgrade=true,RayCronJob=false,RayClusterMTLS=false,RayClusterNetworkPolicy=false,"
        "RayClusterHistoryServer=false",
    ]
    assert operator["ports"] == [
        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
        {"name": "probes", "containerPort": 8082, "protocol": "TCP"},
    ]
    timings = {"initialDelaySeconds": 10, "periodSeconds": 5, "failureThreshold": 5}
    assert operator["livenessProbe"] == {"httpGet": {"path": "/healthz", "port": "probes"}, **timings}
    assert operator["readinessProbe"] == {"httpGet": {"path": "/readyz", "port": "probes"}, **timings}
    assert operator["resources"] == {"limits": {"cpu": "100m", "memory": "512Mi"}}
    assert operator["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert "volumes" not in pod["spec"]
    assert "volumeMounts" not in operator
    ledger.record(
        "The operator's Pod is restricted",
        "the Helm chart rendered with its default values (helm template)",
        1,
        "the operator container: non-root, read-only root filesystem, no privilege escalation, all capabilities "
        "dropped, seccomp RuntimeDefault; no volumes. Not checked here: the Containerfile built and run as that "
        "user (the tests use no container runtime)",
        "as required (restricted Pod Security profile)",
    )


def test_single_namespace_install_uses_roles_in_the_release_namespace() -> None:
    objects = render("--set", "singleNamespaceInstall=true", namespace="ray-team")
    assert not find(objects, "ClusterRole")
    assert not find(objects, "ClusterRoleBinding")
    roles = {(o["metadata"]["name"], o["metadata"]["namespace"]) for o in find(objects, "Role")}
    assert roles == {("kuberay-operator", "ray-team"), ("kuberay-operator-leader-election", "ray-team")}
    (role,) = find(objects, "Role", "kuberay-operator")
    assert role["rules"] == rules_file("operator-rules.yaml")
    (binding,) = find(objects, "RoleBinding", "kuberay-operator")
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kuberay-operator"}
    assert binding["subjects"][0]["namespace"] == "ray-team"
    assert "--watch-namespace=ray-team" in container(objects)["args"]


def test_single_namespace_install_with_watched_namespaces() -> None:
    objects = render("--set", "singleNamespaceInstall=true", "--set", "watchNamespace={a,b}", namespace="ops")
    roles = {(o["metadata"]["name"], o["metadata"]["namespace"]) for o in find(objects, "Role")}
    assert roles == {("kuberay-operator", "a"), ("kuberay-operator", "b"), ("kuberay-operator-leader-election", "ops")}
    bindings = find(objects, "RoleBinding", "kuberay-operator")
    assert {b["metadata"]["namespace"] for b in bindings} == {"a", "b"}
    assert all(b["subjects"][0]["namespace"] == "ops" for b in bindings)
    assert "--watch-namespace=a,b" in container(objects)["args"]
    # crNamespacedRbacEnable=false leaves those Roles to someone else; leader election keeps its Role.
    objects = render(
        "--set", "singleNamespaceInstall=true", "--set", "watchNamespace={a,b}", "--set", "crNamespacedRbacEnable=false"
    )
    assert [o["metadata"]["name"] for o in find(objects, "Role")] == ["kuberay-operator-leader-election"]


def test_watch_namespace_without_single_namespace_install_keeps_the_cluster_role() -> None:
    objects = render("--set", "watchNamespace={a,b}")
    assert find(objects, "ClusterRole", "kuberay-operator")
    assert not find(objects, "Role", "kuberay-operator")
    assert "--watch-namespace=a,b" in container(objects)["args"]


def test_rbac_enable_false_renders_no_rbac() -> None:
    objects = render("--set", "rbacEnable=false")
    assert not [o for o in objects if o["kind"] in RBAC_KINDS]
    assert find(objects, "Deployment")
    assert find(objects, "ServiceAccount")


def test_leader_election_off_drops_its_role() -> None:
    objects = render("--set", "leaderElectionEnabled=false")
    assert not find(objects, "Role")
    assert not find(objects, "RoleBinding")
    args = container(objects)["args"]
    assert "--enable-leader-election=false" in args
    assert not [a for a in args if a.startswith("--leader-election-namespace")]


def test_configuration_renders_a_config_map_and_config_flag() -> None:
    sidecar = {"name": "fluentbit", "image": "fluent/fluent-bit:1.9"}
    objects = render(
        "--set",
        "configuration.enabled=true",
        "--set-json",
        'configuration.defaultContainerEnvs=[{"name":"RAY_enable_open_telemetry","value":"true"}]',
        "--set-json",
        f"configuration.headSidecarContainers=[{json.dumps(sidecar)}]",
        "--set",
        "reconcileConcurrency=4",
        namespace="ops",
    )
    (config_map,) = find(objects, "ConfigMap", "kuberay-operator-config")
    config = yaml.safe_load(config_map["data"]["config.yaml"])
    assert config == {
        "apiVersion": "config.ray.io/v1alpha1",
        "kind": "Configuration",
        "metricsAddr": ":8080",
        "probeAddr": ":8082",
        "enableLeaderElection": True,
        "leaderElectionNamespace": "ops",
        "enableMetrics": True,
        "reconcileConcurrency": 4,
        "qps": 100,
        "burst": 200,
        "logStdoutEncoder": "json",
        "defaultContainerEnvs": [{"name": "RAY_enable_open_telemetry", "value": "true"}],
        "headSidecarContainers": [sidecar],
    }
    operator = container(objects)
    assert operator["args"][0] == "--config=/etc/raykube/config.yaml"
    assert not [a for a in operator["args"] if a.startswith("--reconcile-concurrency")]  # in the file instead
    assert operator["args"][-1].startswith("--feature-gates=")
    assert operator["volumeMounts"] == [{"name": "operator-config", "mountPath": "/etc/raykube", "readOnly": True}]
    (deployment,) = find(objects, "Deployment")
    pod = deployment["spec"]["template"]
    assert pod["spec"]["volumes"] == [{"name": "operator-config", "configMap": {"name": "kuberay-operator-config"}}]
    assert "checksum/config" in pod["metadata"]["annotations"]


def test_feature_gates_render_into_one_flag() -> None:
    gates = [{"name": "RayCronJob", "enabled": True}, {"name": "RayClusterStatusConditions", "enabled": False}]
    objects = render("--set-json", f"featureGates={json.dumps(gates)}")
    assert container(objects)["args"][-1] == "--feature-gates=RayCronJob=true,RayClusterStatusConditions=false"
    objects = render("--set-json", "featureGates=[]")
    assert not [a for a in container(objects)["args"] if a.startswith("--feature-gates")]


def test_other_kuberay_values_render_as_kuberay_renders_them() -> None:
    objects = render(
        "--set", "logging.baseDir=/var/log/kuberay", "--set", "logging.fileName=operator.log",
        "--set", "logging.sizeLimit=1Gi", "--set", "batchScheduler.name=yunikorn",
        "--set", "kubeClient.qps=75.5", "--set", "kubeClient.burst=150", "--set", "replicas=2",
        "--set", "image.tag=dev", "--set", "labels.team=ml", "--set", "annotations.note=x",
        "--set", "nodeSelector.pool=system", "--set", "priorityClassName=critical",
        "--set-json", 'env=[{"name":"ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE","value":"true"}]',
        "--set-json", 'tolerations=[{"key":"k","operator":"Exists"}]',
        "--set-json", 'imagePullSecrets=[{"name":"pull"}]',
        "--set", "nameOverride=ops-ctl", "--set", "fullnameOverride=", "--set", "componentOverride=ctl",
    )  # fmt: skip
    operator = container(objects)
    args = operator["args"]
    for expected in (
        "--log-file-path=/var/log/kuberay/operator.log",
        "--log-file-encoder=json",
        "--batch-scheduler=yunikorn",
        "--qps=75.5",
        "--burst=150",
    ):
        assert expected in args
    assert operator["image"] == "ghcr.io/raykube/raykube-operator:dev"
    assert operator["env"] == [{"name": "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE", "value": "true"}]
    assert operator["volumeMounts"] == [{"name": "kuberay-logs", "mountPath": "/var/log/kuberay"}]
    (deployment,) = find(objects, "Deployment")
    assert deployment["metadata"]["name"] == "kuberay-operator-ops-ctl"  # <release>-<nameOverride>
    assert deployment["metadata"]["labels"]["team"] == "ml"
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]
    assert pod["metadata"]["labels"]["app.kubernetes.io/name"] == "ops-ctl"
    assert pod["metadata"]["labels"]["app.kubernetes.io/component"] == "ctl"
    assert pod["metadata"]["labels"]["team"] == "ml"
    assert pod["metadata"]["annotations"] == {"note": "x"}
    assert pod["spec"]["volumes"] == [{"name": "kuberay-logs", "emptyDir": {"sizeLimit": "1Gi"}}]
    assert pod["spec"]["nodeSelector"] == {"pool": "system"}
    assert pod["spec"]["tolerations"] == [{"key": "k", "operator": "Exists"}]
    assert pod["spec"]["imagePullSecrets"] == [{"name": "pull"}]
    assert pod["spec"]["priorityClassName"] == "critical"
    assert find(objects, "ClusterRole", "kuberay-operator-ops-ctl")
    # batchScheduler.enabled is KubeRay's deprecated spelling of volcano.
    assert "--batch-scheduler=volcano" in container(render("--set", "batchScheduler.enabled=true"))["args"]


def test_the_batch_scheduler_brings_its_rbac_rules() -> None:
    """As KubeRay's chart: the podgroups rule only with batchScheduler volcano (name or the deprecated enabled)."""
    volcano = rbac.policy_rules(rbac.operator_rules("volcano"))
    assert volcano == rbac.policy_rules(rbac.OPERATOR_RULES) + rules_file("batch-scheduler-volcano-rules.yaml")
    for values in (["--set", "batchScheduler.name=volcano"], ["--set", "batchScheduler.enabled=true"]):
        (cluster_role,) = find(render(*values), "ClusterRole")
        assert cluster_role["rules"] == volcano
    (role,) = find(render("--set", "batchScheduler.name=volcano", "--set", "singleNamespaceInstall=true"), "Role",
                   "kuberay-operator")  # fmt: skip
    assert role["rules"] == volcano
    (cluster_role,) = find(render("--set", "batchScheduler.name=yunikorn"), "ClusterRole")
    assert cluster_role["rules"] == rbac.policy_rules(rbac.OPERATOR_RULES)


def test_the_kubernetes_was_gate_brings_its_rbac_rule() -> None:
    """HELM-6/HELM-7: with featureGates KubernetesWAS enabled, the scheduling.k8s.io rule (ClusterRole and Roles)."""
    was = rbac.policy_rules(rbac.operator_rules("kubernetes-was-v1alpha2"))
    extra = rules_file("batch-scheduler-kubernetes-was-v1alpha2-rules.yaml")
    assert was == rbac.policy_rules(rbac.OPERATOR_RULES) + extra
    gate = ["--set", "featureGates[0].name=KubernetesWAS", "--set", "featureGates[0].enabled=true"]
    (cluster_role,) = find(render(*gate), "ClusterRole")
    assert cluster_role["rules"] == was
    (role,) = find(render(*gate, "--set", "singleNamespaceInstall=true"), "Role", "kuberay-operator")
    assert role["rules"] == was
    off = ["--set", "featureGates[0].name=KubernetesWAS", "--set", "featureGates[0].enabled=false"]
    (cluster_role,) = find(render(*off), "ClusterRole")
    assert cluster_role["rules"] == rbac.policy_rules(rbac.OPERATOR_RULES)


def test_diagnose_after_passes_its_flag_and_brings_its_read_rules() -> None:
    """raykube's own diagnoseAfter: off by default (KubeRay's objects unchanged); set, the flag (also with a config
    file) and the doctor's reads: namespaced ones in the ClusterRole and the Roles, cluster-scoped ones in the
    ClusterRole only."""
    default = render()
    assert not any(a.startswith("--diagnose-after") for a in container(default)["args"])
    (cluster_role,) = find(default, "ClusterRole")
    assert cluster_role["rules"] == rbac.policy_rules(rbac.OPERATOR_RULES)
    on = render("--set", "diagnoseAfter=2m")
    assert "--diagnose-after=2m" in container(on)["args"]
    (cluster_role,) = find(on, "ClusterRole")
    assert cluster_role["rules"] == rbac.policy_rules(rbac.operator_rules(diagnosis=True))
    assert rules_file("diagnosis-rules.yaml") == rbac.policy_rules(rbac.DIAGNOSIS_RULES)
    (role,) = find(render("--set", "diagnoseAfter=2m", "--set", "singleNamespaceInstall=true"), "Role",
                   "kuberay-operator")  # fmt: skip
    assert role["rules"] == rbac.policy_rules(rbac.OPERATOR_RULES + rbac.DIAGNOSIS_RULES)
    configured = render("--set", "diagnoseAfter=90s", "--set", "configuration.enabled=true")
    assert "--diagnose-after=90s" in container(configured)["args"]


def test_service_monitor_is_optional() -> None:
    assert not find(render(), "ServiceMonitor")
    objects = render("--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.namespace=mon")
    (monitor,) = find(objects, "ServiceMonitor")
    assert monitor["metadata"]["namespace"] == "mon"
    assert monitor["spec"]["endpoints"] == [
        {"path": "/metrics", "targetPort": "http", "interval": "30s", "honorLabels": True}
    ]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["--set", "batchScheduler.enabled=true", "--set", "batchScheduler.name=volcano"], "must not both be set"),
        (["--set", "reconcileConcurrency=0"], "reconcileConcurrency must be a positive integer"),
        (["--set", "kubeClient.burst=-1"], "burst must be a non-negative integer"),
    ],
)
def test_invalid_values_fail_to_render(values: list[str], message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        helm_template(*values)


def test_the_operator_understands_what_the_chart_renders(tmp_path: Path) -> None:
    """The chart's flags and Configuration file go through the operator's own parser (raykube.api.config)."""
    from raykube.api.config import parse_flags  # noqa: PLC0415 - the contract under test

    config = parse_flags(container(render(namespace="ops"))["args"])
    assert config is not None
    assert (config.metrics_addr, config.probe_addr) == (":8080", ":8082")
    assert (config.enable_leader_election, config.leader_election_namespace) == (True, "ops")
    assert (config.reconcile_concurrency, config.qps, config.burst) == (10, 100.0, 200)
    assert config.enable_metrics
    assert config.watch_namespaces == ()
    assert config.feature_gates["RayClusterStatusConditions"] is True
    assert config.feature_gates["RayCronJob"] is False

    every_flag = (
        "--set", "singleNamespaceInstall=true", "--set", "watchNamespace={a,b}",
        "--set", "logging.baseDir=/logs", "--set", "logging.fileName=op.log", "--set", "logging.fileEncoder=console",
        "--set", "batchScheduler.name=volcano", "--set", "useKubernetesProxy=true", "--set", "metrics.enabled=false",
        "--set", "leaderElectionEnabled=false", "--set", "reconcileConcurrency=3", "--set", "kubeClient.qps=7.5",
    )  # fmt: skip
    config = parse_flags(container(render(*every_flag))["args"])
    assert config is not None
    assert config.watch_namespaces == ("a", "b")
    assert (config.log_file_path, config.log_file_encoder) == ("/logs/op.log", "console")
    assert (config.batch_scheduler, config.use_kubernetes_proxy) == ("volcano", True)
    assert (config.enable_metrics, config.enable_leader_election) == (False, False)
    assert (config.reconcile_concurrency, config.qps) == (3, 7.5)

    objects = render(
        "--set", "configuration.enabled=true", *every_flag, "--set-json", 'configuration.defaultPodLabels={"a":"b"}'
    )
    (config_map,) = find(objects, "ConfigMap")
    path = tmp_path / "config.yaml"
    path.write_text(config_map["data"]["config.yaml"])
    args = [f"--config={path}" if a == "--config=/etc/raykube/config.yaml" else a for a in container(objects)["args"]]
    from_file = parse_flags(args)
    assert from_file is not None
    assert from_file.watch_namespaces == ("a", "b")
    assert (from_file.log_file_path, from_file.log_file_encoder) == ("/logs/op.log", "console")
    assert (from_file.batch_scheduler, from_file.use_kubernetes_proxy) == ("volcano", True)
    assert (from_file.enable_metrics, from_file.enable_leader_election) == (False, False)
    assert (from_file.reconcile_concurrency, from_file.qps, from_file.burst) == (3, 7.5, 200)
    assert dict(from_file.default_pod_labels) == {"a": "b"}
    assert from_file.feature_gates["RayMultiHostIndexing"] is True


def test_checked_in_manifests_are_a_fresh_render() -> None:
    rendered = render_manifests()
    on_disk = {path.name: path.read_text() for path in sorted(manifests_dir().glob("*.yaml"))}
    assert on_disk == rendered, (
        "config/operator/ is stale: python -c 'from raykube.deploy.manifests import write_manifests; write_manifests()'"
    )


# ---------------------------------------------------------------------------------------------------------------------
# On the sandbox


async def _available(kube: AsyncClient, name: str, namespace: str) -> bool | NotYet:
    deployment = await kube.get(Deployment, name, namespace=namespace)
    conditions = {c.type: c.status for c in (deployment.status and deployment.status.conditions) or []}
    if conditions.get("Available") != "True":
        return NotYet(f"conditions {conditions}")
    return True


async def _gone(kube: AsyncClient, resource: Any, name: str) -> bool | NotYet:
    try:
        await kube.get(resource, name)
    except ApiError as exc:
        if exc.status.code == 404:
            return True
        raise
    return NotYet(f"{resource.__name__} {name} still exists")


async def test_helm_install_runs_the_operator_on_the_sandbox(
    helm: tuple[Path, dict[str, str]], kubeconfig: Path, kube: AsyncClient, namespace: str
) -> None:
    release = f"rk-{uuid.uuid4().hex[:6]}"
    fullname = f"raykube-{release}"  # cluster-scoped names are shared by the whole sandbox
    kubectl_args = ("--kubeconfig", str(kubeconfig), "--namespace", namespace)
    result = run_helm(helm, "install", release, str(CHART), *kubectl_args, "--set", f"fullnameOverride={fullname}")
    assert result.returncode == 0, result.stdout + result.stderr
    try:
        await wait_for(lambda: _available(kube, fullname, namespace), 120, what=f"deployment {fullname} Available")
        deployment = await kube.get(Deployment, fullname, namespace=namespace)
        assert deployment.spec is not None
        assert deployment.spec.template.spec is not None
        assert deployment.spec.template.spec.serviceAccountName == "kuberay-operator"
        await kube.get(ServiceAccount, "kuberay-operator", namespace=namespace)
        await kube.get(Service, fullname, namespace=namespace)
        cluster_role = await kube.get(ClusterRole, fullname)
        assert [r.to_dict() for r in cluster_role.rules or []] == rules_file("operator-rules.yaml")
        binding = await kube.get(ClusterRoleBinding, fullname)
        assert binding.subjects is not None
        assert [(s.name, s.namespace) for s in binding.subjects] == [("kuberay-operator", namespace)]
        await kube.get(Role, f"{fullname}-leader-election", namespace=namespace)
        await kube.get(RoleBinding, f"{fullname}-leader-election", namespace=namespace)
        # EV-1: the API server lets the operator write events.k8s.io/v1 Events about a RayCluster in any namespace,
        # and refuses core/v1 ones outside the leader-election namespace (KubeRay v1.7.0's ClusterRole).
        account = f"system:serviceaccount:{namespace}:kuberay-operator"
        allowed = {
            (group, verb): await _allowed(kube, account, verb, group, "events", "some-other-namespace")
            for group in ("events.k8s.io", "")
            for verb in ("create", "patch")
        }
        assert allowed == {
            ("events.k8s.io", "create"): True,
            ("events.k8s.io", "patch"): True,
            ("", "create"): False,
            ("", "patch"): False,
        }
    finally:
        result = run_helm(helm, "uninstall", release, *kubectl_args)
        assert result.returncode == 0, result.stdout + result.stderr
    await wait_for(lambda: _gone(kube, ClusterRole, fullname), 30, what=f"ClusterRole {fullname} to be removed")
    await wait_for(lambda: _gone(kube, ClusterRoleBinding, fullname), 30, what=f"ClusterRoleBinding {fullname} gone")


async def _allowed(kube: AsyncClient, user: str, verb: str, group: str, resource: str, namespace: str) -> bool:
    """A SubjectAccessReview: may ``user`` (a ServiceAccount) do ``verb`` on ``resource`` in ``namespace``."""
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{user.split(':')[2]}", "system:authenticated"]
    attributes = {"verb": verb, "group": group, "resource": resource, "namespace": namespace}
    review = SubjectAccessReview.from_dict({"spec": {"user": user, "groups": groups, "resourceAttributes": attributes}})
    answer = await kube.create(review)
    return bool(answer.status and answer.status.allowed)


def _raykube_install(kubeconfig: Path, namespace: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "raykube.cli.install", "--kubeconfig", str(kubeconfig), "--namespace", namespace],
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


async def _versions(kube: AsyncClient, namespace: str) -> dict[str, str | None]:
    """resourceVersion of everything `raykube install` applies (the Deployment's generation: its status moves)."""
    objects: list[tuple[str, Any]] = [
        ("sa", await kube.get(ServiceAccount, "kuberay-operator", namespace=namespace)),
        ("svc", await kube.get(Service, "kuberay-operator", namespace=namespace)),
        ("cr", await kube.get(ClusterRole, "kuberay-operator")),
        ("crb", await kube.get(ClusterRoleBinding, "kuberay-operator")),
        ("role", await kube.get(Role, "kuberay-operator-leader-election", namespace=namespace)),
        ("rb", await kube.get(RoleBinding, "kuberay-operator-leader-election", namespace=namespace)),
    ]
    versions = {key: obj.metadata.resourceVersion for key, obj in objects}
    deployment = await kube.get(Deployment, "kuberay-operator", namespace=namespace)
    assert deployment.metadata is not None
    versions["deploy-generation"] = str(deployment.metadata.generation)
    return versions


async def test_raykube_install_applies_crds_rbac_and_operator_idempotently(
    kubeconfig: Path, kube: AsyncClient, namespace: str
) -> None:
    # The namespace fixture made the namespace; install must also work when it exists.
    try:
        first = _raykube_install(kubeconfig, namespace)
        assert first.returncode == 0, first.stdout + first.stderr
        lines = first.stdout.splitlines()
        assert "customresourcedefinition/rayclusters.ray.io" in first.stdout
        assert f"namespace/{namespace} unchanged" in lines
        for applied in (
            "serviceaccount/kuberay-operator created",
            "clusterrole/kuberay-operator created",
            "clusterrolebinding/kuberay-operator created",
            "role/kuberay-operator-leader-election created",
            "rolebinding/kuberay-operator-leader-election created",
            "service/kuberay-operator created",
            "deployment/kuberay-operator created",
        ):
            assert applied in lines, first.stdout
        assert "is Available" in first.stderr
        await wait_for(lambda: _available(kube, "kuberay-operator", namespace), 10, what="the operator Available")
        binding = await kube.get(ClusterRoleBinding, "kuberay-operator")
        assert binding.subjects is not None
        assert [(s.name, s.namespace) for s in binding.subjects] == [("kuberay-operator", namespace)]
        deployment = await kube.get(Deployment, "kuberay-operator", namespace=namespace)
        assert deployment.spec is not None
        assert deployment.spec.template.spec is not None
        args = deployment.spec.template.spec.containers[0].args or []
        assert f"--leader-election-namespace={namespace}" in args

        before = await _versions(kube, namespace)
        second = _raykube_install(kubeconfig, namespace)
        assert second.returncode == 0, second.stdout + second.stderr
        assert all(line.endswith(" unchanged") for line in second.stdout.splitlines()), second.stdout
        assert await _versions(kube, namespace) == before
    finally:
        for resource in (ClusterRoleBinding, ClusterRole):
            try:
                await kube.delete(resource, "kuberay-operator")
            except ApiError as exc:
                if exc.status.code != 404:
                    raise


async def test_raykube_install_names_the_object_the_api_server_refused(
    runtime_kube: Kube, namespace: str, tmp_path: Path
) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "broken", "namespace": "kuberay-operator"},
        "spec": {"ports": [{"name": "http", "port": 99999}]},
    }
    (tmp_path / "service.yaml").write_text(yaml.safe_dump(service))
    with pytest.raises(InstallError, match=rf"service/broken in namespace {namespace}.*99999"):
        await install_operator(runtime_kube, namespace, manifests=tmp_path, available_within=5)


def test_install_retargets_the_packaged_manifests() -> None:
    moved = retarget(load_manifests(), "elsewhere")
    assert {o["metadata"].get("namespace") for o in moved} == {"elsewhere", None}

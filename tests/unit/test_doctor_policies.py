"""The NetworkPolicy rules (E03, E06, E07) over the seed cluster of test_doctor_rules: KubeRay v1.7.0's own policies
(built by ``raykube.builders.networkpolicy``) and users' policies, each breaking one thing Ray needs, with a near miss
that must stay quiet. The sandbox enforces no NetworkPolicy, so these are judged from the objects."""

from __future__ import annotations

import copy
from typing import Any

from raykube.api import constants as c
from raykube.api.resources import RayCluster
from raykube.builders import networkpolicy as build_np
from raykube.doctor import snapshot as s
from raykube.doctor.model import ObjectRef, Report
from raykube.doctor.run import Options, diagnose
from tests.doctor_support import assert_fires, assert_quiet, one_finding
from tests.unit.test_doctor_inside import _diagnose, _inside, _worker_probe
from tests.unit.test_doctor_rules import NOW, NS, World, below, root, seed_spec

DNS_RULE = {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}  # fmt: skip
OPERATOR_RULE = {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kuberay-operator"}},
                           "podSelector": {"matchLabels": {c.K8S_APP_NAME_LABEL: "kuberay-operator"}}}],
                 "ports": [{"protocol": "TCP", "port": 8265}]}  # fmt: skip
POLICY_RULES = ("E03", "E06", "E07")


def policy(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}  # fmt: skip


def select(node_type: str | None = None) -> dict[str, Any]:
    labels = {c.RAY_CLUSTER_LABEL: "seed", **({c.RAY_NODE_TYPE_LABEL: node_type} if node_type else {})}
    return {"matchLabels": labels}


def with_kuberays_policies(network_policy: dict[str, Any], *, rayjob: str | None = None) -> World:
    """The seed with spec.networkPolicy and the policies the operator makes from it; with ``rayjob``, the cluster is
    that K8sJobMode RayJob's (its labels and controller reference), and the RayJob runs on it."""
    body = seed_spec()
    body["spec"]["networkPolicy"] = network_policy
    if rayjob is not None:
        body["metadata"]["labels"] = {c.RAY_JOB_SUBMISSION_MODE_LABEL: c.SUBMISSION_MODE_K8S_JOB,
                                      c.RAY_ORIGINATED_FROM_CRD_LABEL: c.KIND_RAYJOB,
                                      c.RAY_ORIGINATED_FROM_CR_NAME_LABEL: rayjob}  # fmt: skip
        body["metadata"]["ownerReferences"] = [{"apiVersion": "ray.io/v1", "kind": c.KIND_RAYJOB, "name": rayjob,
                                                "uid": f"uid-{rayjob}", "controller": True}]  # fmt: skip
    world = World(body)
    container = world.objects["deployments"][0]["spec"]["template"]["spec"]["containers"][0]
    container["args"].append(f"--feature-gates={c.GATE_RAYCLUSTER_NETWORK_POLICY}=true")
    for made in build_np.network_policies(RayCluster.model_validate(body)):
        world.add("networkpolicies", made)
    if rayjob is not None:
        add_rayjob(world, rayjob)
    return world


def add_rayjob(world: World, name: str, *, mode: str = c.SUBMISSION_MODE_K8S_JOB, reason: str = "") -> None:
    status: dict[str, Any] = {"rayClusterName": "seed", "jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}
    if reason:
        status.update(jobDeploymentStatus="Failed", reason=reason, message="status check timed out")
    world.add(
        "rayjobs",
        {"apiVersion": "ray.io/v1", "kind": c.KIND_RAYJOB,
         "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}", "generation": 1},
         "spec": {"entrypoint": "python train.py", "submissionMode": mode}, "status": status},
    )  # fmt: skip


def waiting_for_gcs(world: World) -> None:
    """The workers as a CNI that enforces the policy leaves them: Init:0/1 in wait-gcs-ready."""
    for pod in world.pods("worker"):
        pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"},
                                       {"type": "Initialized", "status": "False"}]  # fmt: skip
        pod["status"]["initContainerStatuses"] = [
            {"name": c.WAIT_GCS_READY_INIT_CONTAINER, "ready": False, "restartCount": 0,
             "state": {"running": {"startedAt": "2026-01-01T11:51:00Z"}}}
        ]  # fmt: skip
        for status in pod["status"]["containerStatuses"]:
            status.update(ready=False, state={"waiting": {"reason": "PodInitializing"}})


def quiet(report: Report) -> None:
    assert_quiet(report, *POLICY_RULES)


# ------------------------------------------------------------------------------------------------ KubeRay's own
def test_kuberays_own_policies_never_split_the_cluster_but_deny_dns_under_deny_all() -> None:
    """KubeRay v1.7.0 adds no DNS rule on purpose: under DenyAll and DenyAllEgress E06 fires, as the cluster would
    really never start; the cluster's Pods always reach each other (E03 quiet), and a plain RayCluster has no
    RayJob or RayService whose status the operator reads (E07 quiet)."""
    for mode in (c.NETWORK_POLICY_DENY_ALL, c.NETWORK_POLICY_DENY_ALL_EGRESS):
        report = with_kuberays_policies({"mode": mode}).diagnose()
        found = root(report, "E06")
        assert found.severity == "error" and found.confidence == "likely"
        assert found.title == (
            "NetworkPolicies seed-head, seed-workers-workers allow the head and workers of group workers no DNS: "
            "they cannot resolve seed-head-svc and never join"
        )
        assert "KubeRay v1.7.0's own policies add no DNS rule" in found.explanation
        assert "spec.networkPolicy.head.egressRules and worker.egressRules" in found.remediation[0]
        assert any(e.path and e.path.startswith("spec.podSelector (selects the head") for e in found.evidence)
        assert_quiet(report, "E03", "E07", "SEC08", "A05")
    # With the sample's DNS rule on the head and the workers, or with only ingress denied: nothing.
    dns = {"egressRules": [DNS_RULE]}
    quiet(with_kuberays_policies({"mode": c.NETWORK_POLICY_DENY_ALL, "head": dns, "worker": dns}).diagnose())
    quiet(with_kuberays_policies({"mode": c.NETWORK_POLICY_DENY_ALL_INGRESS}).diagnose())


def test_kuberays_own_policies_admit_a_rayjobs_submitter_but_not_the_operator() -> None:
    """v1.7.0's head policy admits the K8sJobMode submitter on the dashboard port and leaves the operator out
    ("platforms add it"): the operator's status checks of the RayJob are cut off, which is what v1.7.0 does."""
    dns = {"egressRules": [DNS_RULE]}
    world = with_kuberays_policies({"mode": c.NETWORK_POLICY_DENY_ALL, "head": dns, "worker": dns}, rayjob="train")
    report = world.diagnose()
    found = one_finding(report, "E07")
    assert found.title.startswith(
        "NetworkPolicy seed-head keeps the operator (kuberay-operator/kuberay-operator) from the head's dashboard port "
        '8265: RayJob "train": the operator cannot read job status (the RayJob fails with '
        "JobStatusCheckTimeoutExceeded)"
    ), found.title
    assert "leave the operator out on purpose" in found.explanation
    assert "spec.networkPolicy.head.ingressRules" in found.remediation[0]
    assert "kubernetes.io/metadata.name: kuberay-operator" in found.remediation[0]
    assert_quiet(report, "E03", "E06")

    # The operator added as the sample says: quiet; the submitter was never the problem.
    world = with_kuberays_policies(
        {"mode": c.NETWORK_POLICY_DENY_ALL, "head": {**dns, "ingressRules": [OPERATOR_RULE]}, "worker": dns},
        rayjob="train",
    )
    quiet(world.diagnose())


def test_the_rayjob_that_timed_out_hangs_under_the_policy() -> None:
    world = with_kuberays_policies({"mode": c.NETWORK_POLICY_DENY_ALL_INGRESS}, rayjob="train")
    world.objects["rayjobs"].clear()
    add_rayjob(world, "train", reason=c.JOB_REASON_STATUS_CHECK_TIMEOUT_EXCEEDED)
    report = world.diagnose()
    found = root(report, "E07", "J05")
    assert "J05" in below(report, found)


# ------------------------------------------------------------------------------------------------ E06
def test_an_egress_policy_without_dns_keeps_workers_in_wait_gcs_ready() -> None:
    world = World()
    to_ray = {"to": [{"podSelector": select()}]}
    world.add("networkpolicies", policy("ray-only", {"podSelector": select("worker"), "policyTypes": ["Egress"],
                                                     "egress": [to_ray]}))  # fmt: skip
    waiting_for_gcs(world)
    report = world.diagnose()
    found = root(report, "E06", "E01", "X03")
    assert found.title == (
        "NetworkPolicy ray-only allows workers of group workers no DNS: they cannot resolve seed-head-svc and never "
        "join"
    )
    assert found.object.name == "ray-only"
    evidence = {e.path: e.value for e in found.evidence}
    assert evidence["spec.podSelector (selects workers of group workers; policyTypes ['Egress'])"] == (
        "ray.io/cluster=seed, ray.io/node-type=worker"
    )
    assert evidence["workers of group workers → kube-dns"] == (
        "no rule admits UDP 53 and TCP 53 to kube-dns (kube-system, k8s-app=kube-dns) or to anywhere"
    )
    assert "KubeRay v1.7.0" not in found.explanation  # a user's policy: fix it, or add one
    assert found.remediation[0].startswith("Add the rule to ray-only (to: [{namespaceSelector:")
    assert_quiet(report, "E03")  # the Ray Pods still reach each other

    # Near misses: DNS to kube-dns by labels, DNS to anywhere, or a second policy that adds DNS (policies add up).
    for rules in ([to_ray, DNS_RULE], [to_ray, {"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53}]}]):
        world = World()
        world.add("networkpolicies", policy("ok", {"podSelector": select("worker"), "policyTypes": ["Egress"],
                                                   "egress": rules}))  # fmt: skip
        quiet(world.diagnose())
    world = World()
    world.add("networkpolicies", policy("ray-only", {"podSelector": select("worker"), "policyTypes": ["Egress"],
                                                     "egress": [to_ray]}))  # fmt: skip
    dns_only = policy("dns", {"podSelector": select("worker"), "policyTypes": ["Egress"], "egress": [DNS_RULE]})
    world.add("networkpolicies", dns_only)
    quiet(world.diagnose())
    # Near miss of that one: the DNS policy selects the head too, whose egress it now restricts to DNS alone.
    dns_only["spec"]["podSelector"] = {}
    found = one_finding(world.diagnose(), "E03")
    assert found.title.startswith("NetworkPolicy dns keeps the Ray Pods of seed from each other: the head → ")


def test_dns_cut_only_on_the_head_or_only_over_tcp_is_a_warning() -> None:
    to_ray = {"to": [{"podSelector": select()}]}
    world = World()
    world.add("networkpolicies", policy("head-out", {"podSelector": select("head"), "policyTypes": ["Egress"],
                                                     "egress": [to_ray]}))  # fmt: skip
    found = one_finding(world.diagnose(), "E06")
    assert found.severity == "warning"
    assert found.title == (
        "NetworkPolicy head-out allows the head no DNS: the head resolves no name (a GCS fault tolerance Redis, "
        "runtime environments, the job's own)"
    )
    world = World()
    udp_only = {"ports": [{"port": 53, "protocol": "UDP"}]}
    world.add("networkpolicies", policy("udp", {"podSelector": select(), "policyTypes": ["Egress"],
                                                "egress": [to_ray, udp_only]}))  # fmt: skip
    found = one_finding(world.diagnose(), "E06")
    assert found.severity == "warning"
    assert found.title.endswith("no DNS over TCP (UDP 53 is allowed): answers too long for UDP fail")


# ------------------------------------------------------------------------------------------------ E03
def test_an_ingress_policy_on_the_head_cuts_the_workers_off_the_gcs() -> None:
    world = World()
    world.add("networkpolicies", policy("deny", {"podSelector": {"matchLabels": {c.RAY_NODE_TYPE_LABEL: "head"}},
                                                 "policyTypes": ["Ingress"]}))  # fmt: skip
    waiting_for_gcs(world)
    report = world.diagnose()
    found = root(report, "E03", "E01")
    assert found.title == (
        "NetworkPolicy deny keeps the Ray Pods of seed from each other: workers of group workers → the head "
        "(GCS 6379, dashboard 8265, client 10001 and Ray's other ports)"
    )
    assert {e.path: e.value for e in found.evidence}["workers of group workers → the head (TCP)"] == (
        "admitted ports: none; Ray needs every port"
    )
    assert found.remediation[0] == (
        "Add the rule to deny (ingress from {podSelector: {matchLabels: {ray.io/cluster: seed}}} on every port, no "
        "ports list), or a NetworkPolicy of your own that allows it."
    )
    assert_quiet(report, "E06", "E07", "SEC08")


def test_only_the_gcs_port_admitted_still_splits_the_cluster_but_lets_workers_join() -> None:
    world = World()
    gcs_only = {"from": [{"podSelector": select()}], "ports": [{"port": "gcs-server"}]}  # named: the head's 6379
    world.add("networkpolicies", policy("gcs", {"podSelector": select("head"), "ingress": [gcs_only]}))
    found = one_finding(world.diagnose(), "E03")
    assert "(dashboard 8265, client 10001 and Ray's other ports)" in found.title
    assert "gcs:ml/seed" not in found.effects and "ray-network:ml/seed" in found.effects
    assert "admitted ports: 6379" in str([e.value for e in found.evidence])


def test_workers_of_one_group_cut_off_each_other_by_their_egress() -> None:
    world = World()
    to_head = {"to": [{"podSelector": select("head")}]}
    world.add("networkpolicies", policy("to-head", {"podSelector": select("worker"), "policyTypes": ["Egress"],
                                                    "egress": [to_head, DNS_RULE]}))  # fmt: skip
    found = one_finding(world.diagnose(), "E03")
    assert found.title == (
        "NetworkPolicy to-head keeps the Ray Pods of seed from each other: workers of group workers → workers of "
        "group workers (Ray's other ports)"
    )
    assert "gcs:ml/seed" not in found.effects


def test_peers_that_admit_the_cluster_or_cannot_be_judged_stay_quiet() -> None:
    deny = policy("deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    admits = [
        {"from": [{"podSelector": select()}]},  # KubeRay's own base rule
        {"from": [{"podSelector": {}}]},  # every Pod of the namespace
        {"from": [{"ipBlock": {"cidr": "10.244.0.0/16"}}]},  # the Pods' addresses
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "ml"}}}]},  # a namespace label not known: may admit
        {"from": [{"podSelector": select()}], "ports": [{"port": 1, "endPort": 65535}]},
    ]
    for rule in admits:
        world = World()
        world.add("networkpolicies", deny)
        world.add("networkpolicies", policy("allow", {"podSelector": {}, "ingress": [rule]}))
        quiet(world.diagnose())
    # Near miss of the near misses: the Pods' range minus theirs, another cluster, another namespace's Pods.
    for rule in (
        {"from": [{"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.0.0/24"]}}]},
        {"from": [{"podSelector": {"matchLabels": {c.RAY_CLUSTER_LABEL: "other"}}}]},
        {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "other"}}}]},
    ):
        world = World()
        world.add("networkpolicies", deny)
        world.add("networkpolicies", policy("allow", {"podSelector": {}, "ingress": [rule]}))
        assert_fires(world.diagnose(), "E03")


# ------------------------------------------------------------------------------------------------ E07
def test_a_users_policy_keeps_the_submitter_and_the_operator_from_the_dashboard() -> None:
    world = World()
    add_rayjob(world, "train")
    only_ray = {"from": [{"podSelector": select()}]}
    world.add("networkpolicies", policy("ray-only", {"podSelector": select("head"), "ingress": [only_ray]}))
    findings = [f for f in world.diagnose().findings if f.rule == "E07"]
    assert_fires(findings, "E07")
    titles = sorted(f.title for f in findings)
    assert len(titles) == 2, titles
    assert titles[0].startswith("NetworkPolicy ray-only keeps the operator (kuberay-operator/kuberay-operator)")
    assert titles[1] == (
        'NetworkPolicy ray-only keeps the submitter of RayJob "train" from the head\'s dashboard port 8265: '
        "`ray job submit` fails and the submitter Job retries"
    )
    submitter = next(f for f in findings if "submitter" in f.title)
    assert submitter.remediation[0] == (
        "Add the rule to ray-only (from: [{podSelector: {matchLabels: {ray.io/originated-from-cr-name: train, "
        "ray.io/originated-from-crd: RayJob}}}], ports: [{protocol: TCP, port: 8265}]), or a NetworkPolicy of your "
        "own that allows it."
    )
    # A RayJob that is Complete: the operator reads its dashboard no more.
    world.objects["rayjobs"][0]["status"]["jobDeploymentStatus"] = c.JOB_DEPLOYMENT_STATUS_COMPLETE
    assert_quiet(world.diagnose(), "E07")
    world.objects["rayjobs"][0]["status"]["jobDeploymentStatus"] = c.JOB_DEPLOYMENT_STATUS_RUNNING
    # Another submission mode has no submitter Pod: only the operator is cut off.
    world.objects["rayjobs"][0]["spec"]["submissionMode"] = c.SUBMISSION_MODE_HTTP
    assert len([f for f in world.diagnose().findings if f.rule == "E07"]) == 1


def test_the_dashboard_port_of_ray_start_params_and_a_rayservice() -> None:
    body = seed_spec()
    body["spec"]["headGroupSpec"]["rayStartParams"]["dashboard-port"] = "8266"
    world = World(body)
    world.add(
        "rayservices",
        {"apiVersion": "ray.io/v1", "kind": c.KIND_RAYSERVICE, "metadata": {"name": "serve", "namespace": NS},
         "spec": {}, "status": {"activeServiceStatus": {"rayClusterName": "seed"}}},
    )  # fmt: skip
    admits_8265: dict[str, Any] = copy.deepcopy(OPERATOR_RULE)
    only = {"podSelector": select("head"), "ingress": [{"from": [{"podSelector": select()}]}, admits_8265]}
    world.add("networkpolicies", policy("head", only))
    found = one_finding(world.diagnose(), "E07")
    assert found.title.endswith('dashboard port 8266: RayService "serve": the operator cannot read Serve status')
    admits_8265["ports"][0]["port"] = 8266
    quiet(world.diagnose())


def test_a_namespace_whose_policies_were_not_read_is_not_judged() -> None:
    world = World()
    world.add("networkpolicies", policy("deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}))
    assert_fires(world.diagnose(), "E03", "E06")
    snap = world.snapshot(skip=["networkpolicies"])  # forbidden: a "Not checked" line, no finding
    quiet(diagnose(snap, Options()))


# ------------------------------------------------------------------------------------------------ what was seen inside
def test_what_a_worker_saw_inside_hangs_under_the_policy_that_explains_it() -> None:
    """With the in-Pod checks, a worker whose name lookup failed (E02) is a consequence of the egress policy without
    DNS (E06), and one whose connection to the head timed out (R03) of the policy that cuts the cluster (E03)."""
    host = f"seed-head-svc.{NS}.svc.cluster.local"
    world = World()
    to_ray = {"to": [{"podSelector": select()}]}
    world.add("networkpolicies", policy("ray-only", {"podSelector": select("worker"), "policyTypes": ["Egress"],
                                                     "egress": [to_ray]}))  # fmt: skip
    failed = {host: {"error": "[Errno -3] Temporary failure in name resolution"}}
    report = _diagnose(world, _inside(worker=_worker_probe(resolve=failed, connect=[])))
    root(report, "E06", "E02")

    world = World()
    world.add("networkpolicies", policy("deny", {"podSelector": select("head"), "policyTypes": ["Ingress"]}))
    blocked = [[host, 6379, "timed out after 2s"], [host, 8265, None], [host, 10001, None]]
    report = _diagnose(world, _inside(worker=_worker_probe(connect=blocked)))
    root(report, "E03", "R03")


def test_a_policy_in_kube_system_that_shuts_kube_dns_counts_when_kube_system_was_read() -> None:
    world = World()
    only_system = {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}]}
    locked = policy("dns-locked", {"podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}, "ingress": [only_system]})
    locked["metadata"]["namespace"] = "kube-system"
    world.add("networkpolicies", locked)
    everywhere = s.build(world.objects, gathered=world.objects.keys(), not_checked=[], now=NOW, source="dump")
    found = one_finding(diagnose(everywhere, Options()), "E06")
    assert found.object == ObjectRef("NetworkPolicy", "dns-locked", "kube-system") and found.severity == "error"
    quiet(world.diagnose())  # read in "ml" only: kube-system's policies are not known, so not judged

"""The in-Pod checks (``--exec``): reading ``ray status -v`` and log lines, and the R rules over what a probe saw.

Each R rule fires on its case and stays quiet on a near miss; the healthy seed with a healthy probe gives nothing. The
probe data has the shape :mod:`raykube.doctor.inside` stores (what ``raykube doctor --exec --dump`` writes); the
sample ``ray status -v`` is Ray 2.52's output on the chapter's cluster in the sandbox.
"""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest

from raykube.doctor import dump as dumps
from raykube.doctor import s3sign
from raykube.doctor import snapshot as s
from raykube.doctor.facts import inside as fi
from raykube.doctor.model import Report
from raykube.doctor.probe_script import SCRIPT
from raykube.doctor.render import render_text
from raykube.doctor.run import Options, diagnose
from raykube.kube.client import exec_status
from raykube.kube.errors import ApiError
from tests.doctor_support import assert_fires, assert_quiet, one_finding
from tests.unit.test_doctor_rules import NS, World, roots, rules_of

HEAD = "seed-head-h0001"
WORKERS = ["seed-workers-worker-w0000", "seed-workers-worker-w0001"]

RAY_STATUS = """======== Autoscaler status: 2026-12-04 03:12:36.966490 ========
GCS request time: 0.001595s

Node status
---------------------------------------------------------------
Active:
 (no active nodes)
Idle:
 1 headgroup
 2 workers
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/3.0 CPU
 0B/4.00GiB memory
 0B/19.67GiB object_store_memory

From request_resources:
 (none)
Pending Demands:
 (no resource demands)

Node: seed-head-h0001 (headgroup)
 Id: 05fc1e03811765899d7226ca8061063d6ad9126aafe1d6709a163007
 Usage:
  0.0/1.0 CPU
Node: seed-workers-worker-w0000 (workers)
 Id: 7d058092ee4b193dae5eb063e21db188b869b5ece085262e3167b971
Node: seed-workers-worker-w0001 (workers)
 Id: 7b14b958618c37c9915ba762306740f03a8f88e05900866d17715fb5
"""


def _head_probe(**change: Any) -> dict[str, Any]:
    probe: dict[str, Any] = {
        "listening": [["::", 6379], ["0.0.0.0", 8265], ["10.244.0.11", 10001], ["127.0.0.1", 10001]],
        "search": [f"{NS}.svc.cluster.local", "svc.cluster.local", "cluster.local"],
        "nameservers": ["10.96.0.10"],
        "resolve": {},
        "connect": [],
        "status": {"exit": 0, "stdout": RAY_STATUS, "stderr": ""},
    }
    probe.update(change)
    return probe


def _worker_probe(**change: Any) -> dict[str, Any]:
    host = f"seed-head-svc.{NS}.svc.cluster.local"
    probe: dict[str, Any] = {
        "listening": [],
        "search": [f"{NS}.svc.cluster.local", "svc.cluster.local", "cluster.local"],
        "nameservers": ["10.96.0.10"],
        "domain": "cluster.local",
        "resolve": {host: {"addresses": ["10.244.0.11"]}},
        "connect": [[host, 6379, None], [host, 8265, None], [host, 10001, None]],
    }
    probe.update(change)
    return probe


def _inside(head: dict[str, Any] | None = None, worker: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        f"{NS}/{HEAD}": {"role": "head", "container": "ray-head", "probe": head or _head_probe(), "logs": []},
        f"{NS}/{WORKERS[0]}": {"role": "worker", "container": "ray-worker", "probe": worker or _worker_probe(),
                               "logs": []},
    }  # fmt: skip


def _diagnose(world: World, inside: dict[str, Any]) -> Report:
    snap = world.snapshot()
    snap.inside = inside
    snap.inside_note = "ran in 2 Pods (pods/exec allowed)"
    report = diagnose(snap, Options(starting_grace=0))
    assert report.rule_failures == [], report.rule_failures  # a rule that raises would look quiet
    return report


def _log(inside: dict[str, Any], pod: str, source: str, line: str) -> dict[str, Any]:
    inside[f"{NS}/{pod}"].setdefault("logs", []).append({"source": source, "line": line})
    return inside


# --------------------------------------------------------------------------------------------------------------------
# Reading what the probe returns
# --------------------------------------------------------------------------------------------------------------------


def test_ray_status_is_read_by_node_name_with_totals() -> None:
    status = fi.parse_ray_status(RAY_STATUS)
    assert status.nodes == {HEAD: "headgroup", WORKERS[0]: "workers", WORKERS[1]: "workers"}
    assert status.counts == {"headgroup": 1, "workers": 2} and status.live == 3
    assert status.totals["CPU"][:2] == (0.0, 3.0)
    assert status.totals["memory"][1] == 4 * 1024**3
    assert status.pending == [] and status.failures == [] and status.demands == []


@pytest.mark.parametrize(
    ("line", "key"),
    [
        (
            "E1204 chttp2_server.cc:1063] UNKNOWN:No address added ... Failed to add any wildcard listeners",
            "port-in-use",
        ),
        ("OSError: [Errno 98] Address already in use", "port-in-use"),
        ("RuntimeError: Version mismatch: The cluster was started with: Ray: 2.52.0", "version-mismatch"),
        ("Task was killed due to the node running low on memory.", "oom"),
        ("Failed to get cluster ID from GCS server: TimedOut", "gcs-unreachable"),
        ("[2026-12-04 03:15:50,654 C 5 5] (gcs_server) grpc_server.cc:133: An unexpected system state", "gcs-crash"),
        ("Failed to connect to GCS within 60 seconds. GCS may have been killed.", "gcs-crash"),
        ("  gcs_server [exit code=-9]", "gcs-crash"),  # ray start --block's container log
        ("  gcs_server [exit code=-9 (signal 9)]", "gcs-crash"),  # its line in ray_process_exit.log
        ("38 seconds elapsed: Waiting for GCS to be ready.", "gcs-unreachable"),
        ("grpc status UNAUTHENTICATED: invalid authentication token", "auth"),
    ],
)
def test_log_lines_are_classified(line: str, key: str) -> None:
    sign = fi.sign_of(line)
    assert sign is not None and sign.key == key
    assert fi.matching_lines(line) == [line]


def test_ray_cli_colours_are_dropped_before_matching() -> None:
    """As `ray start --block` wrote it to a file when its GCS was killed (Ray 2.52, no terminal)."""
    line = (
        "2026-12-07 02:24:45,399\tERR scripts.py:1186 -- \x1b[31m\x1b[1mgcs_server\x1b[22m\x1b[26m\x1b[39m"
        "\x1b[0m\x1b[2m [exit code=-9]\x1b[22m\x1b[0m"
    )
    (kept,) = fi.matching_lines(line)
    assert kept == "2026-12-07 02:24:45,399\tERR scripts.py:1186 -- gcs_server [exit code=-9]"
    assert fi.sign_of(kept) is not None and fi.sign_of(kept).key == "gcs-crash"  # type: ignore[union-attr]


def test_a_long_line_keeps_the_part_that_matched_and_credentials_are_masked() -> None:
    line = "x" * 1000 + " Address already in use " + "y" * 1000
    (kept,) = fi.matching_lines(line)
    assert "Address already in use" in kept and len(kept) <= fi.EXCERPT + 1
    assert fi.mask("connect redis password=hunter22 token: abc.def") == "connect redis password=*** token: ***"
    assert fi.matching_lines("INFO all fine\nDEBUG nothing") == []


def test_exec_status_reads_exit_codes_as_kubelets_and_kwok_report_them() -> None:
    assert exec_status(b'{"status":"Success"}') == 0
    failure = {"status": "Failure", "reason": "NonZeroExitCode",
               "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}  # fmt: skip
    assert exec_status(json.dumps(failure).encode()) == 3
    kwok = {"status": "Failure", "code": 500, "reason": "InternalError",
            "message": "error executing command in container: cmd wait: sh -c exit 3: exit status 3"}  # fmt: skip
    assert exec_status(json.dumps(kwok).encode()) == 3
    with pytest.raises(ApiError):
        exec_status(json.dumps({"status": "Failure", "code": 500, "message": "container not found"}).encode())


def test_the_probe_script_runs_and_masks_credentials(tmp_path: Path) -> None:
    """The in-Pod program, run here as it runs in a Pod: JSON out, a credential's value never in a returned line."""
    log = tmp_path / "gcs_server.out"
    log.write_text("ok\nFailed to connect to GCS with password s3cr3t-value\n")
    args = {"logs": [str(tmp_path / "gcs_server*")], "pattern": fi.LOG_PATTERN, "resolve": ["localhost"],
            "connect": [["127.0.0.1", 9]], "timeout": 0.5}  # fmt: skip
    env = {"PATH": "/usr/bin:/bin", "MINIO_SECRET_KEY": "s3cr3t-value"}
    run = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(args)], capture_output=True, text=True, env=env,
                         check=True, timeout=30)  # fmt: skip
    result = json.loads(run.stdout)
    assert result["logs"] == [["gcs_server.out", "Failed to connect to GCS with password ***"]]
    assert "s3cr3t-value" not in run.stdout
    assert result["resolve"]["localhost"].get("addresses")
    assert result["connect"][0][2] is not None  # nothing listens on port 9 here
    assert isinstance(result["listening"], list) and "status" not in result


# --------------------------------------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------------------------------------


def test_the_healthy_seed_with_a_healthy_probe_has_no_finding_from_inside() -> None:
    report = _diagnose(World(), _inside())
    assert not {r for r in rules_of(report) if r.startswith("R")}
    assert report.in_pod.startswith("ran in 2 Pods")
    assert all("ray status" not in n.what for n in report.not_checked)
    assert "In-Pod checks: ran in 2 Pods" in render_text(report)


def test_r01_a_ready_pod_missing_from_ray_status_is_named() -> None:
    missing = RAY_STATUS.replace("Node: seed-workers-worker-w0001 (workers)", "").replace(" 2 workers", " 1 workers")
    report = _diagnose(World(), _inside(head=_head_probe(status={"exit": 0, "stdout": missing})))
    found = one_finding(report, "R01")
    assert WORKERS[1] in found.title and "2 of 3 nodes" in found.title
    assert found.object.name == WORKERS[1]
    # Near miss: ray status could not run (exit 1), so nothing is claimed about the nodes.
    report = _diagnose(World(), _inside(head=_head_probe(status={"exit": 1, "stdout": "", "stderr": "no GCS"})))
    assert_quiet(report, "R01")


def test_e02_a_worker_that_cannot_resolve_the_head_is_the_root_cause() -> None:
    host = f"seed-head-svc.{NS}.svc.cluster.local"
    failed = {host: {"error": "[Errno -3] Temporary failure in name resolution"}}
    report = _diagnose(World(), _inside(worker=_worker_probe(resolve=failed, connect=[])))
    found = one_finding(report, "E02")
    assert found in roots(report) and "cannot resolve" in found.title
    assert any(e.source == "ray" and "Temporary failure" in str(e.value) for e in found.evidence)
    # Another DNS domain: the fix is the operator's CLUSTER_DOMAIN.
    report = _diagnose(World(), _inside(worker=_worker_probe(resolve=failed, connect=[], domain="corp.internal")))
    found = one_finding(report, "E02")
    assert "corp.internal" in found.title and any("CLUSTER_DOMAIN=corp.internal" in r for r in found.remediation)
    # Near miss: it resolves.
    assert_quiet(_diagnose(World(), _inside()), "E02")


def test_r03_a_blocked_gcs_port_with_the_head_listening_is_the_root_cause() -> None:
    host = f"seed-head-svc.{NS}.svc.cluster.local"
    blocked = [[host, 6379, "timed out after 2s"], [host, 8265, None], [host, 10001, None]]
    line = "rpc_client.h:153: Failed to connect to GCS at address seed-head-svc:6379 within 5 seconds."
    inside = _log(_inside(worker=_worker_probe(connect=blocked)), WORKERS[0], "kubectl logs -c ray-worker", line)
    report = _diagnose(World(), inside)
    found = one_finding(report, "R03")
    assert found.severity == "error" and found in roots(report)
    assert any(e.source == "log" and "Failed to connect to GCS" in str(e.value) for e in found.evidence)
    # Only the dashboard: a warning.
    dash = [[host, 6379, None], [host, 8265, "ECONNREFUSED: Connection refused"], [host, 10001, None]]
    found = one_finding(_diagnose(World(), _inside(worker=_worker_probe(connect=dash))), "R03")
    assert found.severity == "warning"
    # Near miss: the head does not listen on 6379 at all; nothing on the way is to blame.
    head = _head_probe(listening=[["0.0.0.0", 8265]])
    assert_quiet(_diagnose(World(), _inside(head=head, worker=_worker_probe(connect=blocked))), "R03")


def _head_ip(world: World) -> str:
    snap = world.snapshot()
    return str(next(p for p in snap.in_namespace(s.PODS, NS) if p["metadata"]["name"] == HEAD)["status"]["podIP"])


def test_r13_the_heads_other_ray_ports_blocked_from_a_worker_are_named_and_a_refused_one_is_not() -> None:
    """ray-project/ray#32215: a policy lets the workers reach the head's three Service ports only; the cluster starts
    and looks healthy, and tasks across nodes hang."""
    world = World()
    ip, host = _head_ip(world), f"seed-head-svc.{NS}.svc.cluster.local"
    service = [[host, 6379, None], [host, 8265, None], [host, 10001, None]]
    node = [[ip, 6380, "EACCES: Permission denied"], [ip, 41235, "timed out after 2s"], [ip, 52365, None]]
    report = _diagnose(world, _inside(worker=_worker_probe(connect=service + node)))
    found = one_finding(report, "R13")
    assert found.severity == "error" and found in roots(report), [(f.id, f.title) for f in roots(report)]
    assert "6380, 41235" in found.title and "52365" not in found.title, found.title
    assert {e.path for e in found.evidence} >= {f"connect {ip}:6380", f"connect {ip}:41235"}
    assert any("ray.io/cluster=seed" in r for r in found.remediation), found.remediation
    # Named when rayStartParams pins it.
    pinned = World()
    pinned.objects["rayclusters"][0]["spec"]["headGroupSpec"]["rayStartParams"]["node-manager-port"] = "6380"
    found = one_finding(_diagnose(pinned, _inside(worker=_worker_probe(connect=service + node))), "R13")
    assert "6380 (node manager)" in found.title, found.title
    # Near misses: refused (nothing listens there any more); every port reached; the GCS itself blocked (R03's).
    refused = [[ip, 41235, "ECONNREFUSED: Connection refused"]]
    assert_quiet(_diagnose(World(), _inside(worker=_worker_probe(connect=service + refused))), "R13")
    assert_quiet(_diagnose(World(), _inside(worker=_worker_probe(connect=[*service, [ip, 41235, None]]))), "R13")
    gcs = [[host, 6379, "timed out after 2s"], [host, 8265, None], [host, 10001, None]]
    report = _diagnose(World(), _inside(worker=_worker_probe(connect=gcs + node)))
    assert_fires(report, "R03")
    assert_quiet(report, "R13")


def test_the_heads_node_ports_skip_loopback_and_its_service_ports() -> None:
    listening = [["0.0.0.0", 6379], ["10.1.0.5", 41235], ["127.0.0.1", 40000], ["::", 52365], ["0.0.0.0", 8265]]
    assert fi.node_ports({"listening": listening}, [6379, 8265, 10001]) == [41235, 52365]
    many = [["0.0.0.0", port] for port in range(20000, 20100)]
    assert len(fi.node_ports({"listening": many}, [])) == fi.MAX_NODE_PORTS


AGENT = "http://127.0.0.1:52365/api/local_raylet_healthz"
GCS_HEALTH = "http://127.0.0.1:8265/api/gcs_healthz"


def test_r14_a_stuck_dashboard_agent_is_why_the_head_probes_fail() -> None:
    """ray-project/ray#63574: the agent stops answering, its port still open; the probes fail and the liveness probe
    restarts a head whose GCS is fine."""
    listening = [["::", 6379], ["0.0.0.0", 8265], ["0.0.0.0", 52365], ["10.244.0.11", 10001]]
    stuck = {AGENT: {"error": "timed out after 2s"}, GCS_HEALTH: {"status": 200, "body": "success"}}
    world = World()
    head = world.pods("head")[0]
    head["status"]["conditions"][2].update(status="False", reason="ContainersNotReady")
    head["status"]["containerStatuses"][0]["ready"] = False
    world.event(head, "Unhealthy", "Readiness probe failed: ", count=30)
    report = _diagnose(world, _inside(head=_head_probe(listening=listening, http=stuck)))
    found = one_finding(report, "R14")
    assert found in roots(report) and "dashboard agent" in found.title and "52365" in found.title, found.title
    assert [f.rule for f in roots(report) if f.rule == "D02"] == []  # the failing probe hangs under it
    assert {e.path for e in found.evidence} >= {f"GET {AGENT}", "listening on port 52365", f"GET {GCS_HEALTH}"}
    # Near misses: both answer; the agent's port refused (nothing listens: another rule's case, not a hang).
    fine = {AGENT: {"status": 200, "body": "success"}, GCS_HEALTH: {"status": 200, "body": "success"}}
    assert_quiet(_diagnose(World(), _inside(head=_head_probe(listening=listening, http=fine))), "R14")
    gone = {AGENT: {"error": "ECONNREFUSED: Connection refused"}, GCS_HEALTH: {"status": 200}}
    assert_quiet(_diagnose(World(), _inside(head=_head_probe(listening=listening[:2], http=gone))), "R14")


def test_r14_a_stuck_dashboard_is_why_a_rayjobs_status_checks_timed_out() -> None:
    """kuberay#1489 (PR#1583), kuberay PR#4916: the operator cannot read the job's status from a dashboard that does
    not answer; v1.7.0 fails the RayJob with JobStatusCheckTimeoutExceeded. The stuck dashboard is the root cause,
    the failed RayJob (J05) hangs under it; a stuck agent alone is not the RayJob's cause."""
    from tests.unit.test_doctor_workloads import rayjob  # noqa: PLC0415 - the one test here that needs a RayJob

    listening = [["::", 6379], ["0.0.0.0", 8265], ["0.0.0.0", 52365], ["10.244.0.11", 10001]]
    stuck = {AGENT: {"status": 200, "body": "success"}, GCS_HEALTH: {"error": "timed out after 2s"}}
    failed = rayjob(
        "train", clusterSelector=None, jobDeploymentStatus="Failed", jobStatus="RUNNING",
        reason="JobStatusCheckTimeoutExceeded", message="Job status check failed for 300 seconds",
    )  # fmt: skip
    world = World()
    world.add("rayjobs", failed)
    report = _diagnose(world, _inside(head=_head_probe(listening=listening, http=stuck)))
    found = one_finding(report, "R14")
    assert [f.rule for f in roots(report)] == ["R14"], [(f.rule, f.title) for f in roots(report)]
    assert "dashboard accepts connections on 8265" in found.title, found.title
    assert "dashboard.log" in found.remediation[0]
    j05 = one_finding(report, "J05")
    assert "JobStatusCheckTimeoutExceeded" in j05.title and found.id in j05.caused_by
    # Near miss: the agent stuck, the dashboard answering: the RayJob's failure is not the agent's doing.
    agent_stuck = {AGENT: {"error": "timed out after 2s"}, GCS_HEALTH: {"status": 200, "body": "success"}}
    report = _diagnose(world, _inside(head=_head_probe(listening=listening, http=agent_stuck)))
    assert "J05" in [f.rule for f in roots(report)]


def test_the_probe_asks_the_health_endpoints_and_tells_a_hung_one_from_a_closed_one() -> None:
    """The probe script against two local sockets: one that accepts and never answers, one that answers."""
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(1)  # accepted by the kernel, never read
    server = http.server.HTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        urls = [f"http://127.0.0.1:{hung.getsockname()[1]}/api/local_raylet_healthz",
                f"http://127.0.0.1:{server.server_address[1]}/api/gcs_healthz"]  # fmt: skip
        done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps({"http": urls, "timeout": 0.5})],
                              capture_output=True, text=True, check=True, timeout=30)  # fmt: skip
        result = json.loads(done.stdout)
    finally:
        server.shutdown()
        server.server_close()
        hung.close()
    assert result["http"][urls[0]] == {"error": "timed out after 0.5s"}, result["http"]
    assert result["http"][urls[1]]["status"] == 200
    assert [url for url, _, _ in fi.hung_endpoints(result)] == [urls[0]]


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"success")

    def log_message(self, *_: Any) -> None:
        pass


def test_r04_a_ray_port_on_localhost_only() -> None:
    head = _head_probe(listening=[["127.0.0.1", 6379], ["0.0.0.0", 8265], ["10.244.0.11", 10001]])
    found = one_finding(_diagnose(World(), _inside(head=head)), "R04")
    assert "6379" in found.title and found.severity == "error"
    # Near miss: the client port on the Pod IP and on localhost (as Ray binds it) is reachable.
    assert_quiet(_diagnose(World(), _inside()), "R04")


def test_r05_a_port_in_use_is_the_root_of_the_crash_loop() -> None:
    world = World()
    head = world.one("pods", HEAD)
    head["spec"]["containers"].append({"name": "cache", "image": "redis:7"})
    head["status"]["containerStatuses"][0].update(
        ready=False, restartCount=4, state={"waiting": {"reason": "CrashLoopBackOff"}},
        lastState={"terminated": {"exitCode": 1, "reason": "Error"}},
    )  # fmt: skip
    for condition in head["status"]["conditions"]:
        if condition["type"] in ("Ready", "ContainersReady"):
            condition["status"] = "False"
    inside = {f"{NS}/{HEAD}": {"role": "head", "container": "ray-head", "probe": None, "logs": []}}
    _log(inside, HEAD, "kubectl logs -c ray-head --previous",
         "Check failed: server_ Failed to start the grpc server. The specified port is 6379.")  # fmt: skip
    report = _diagnose(world, inside)
    found = one_finding(report, "R05")
    assert found in roots(report) and "cache" in found.title
    assert_fires(report, "D07")
    assert all(f.rule != "D07" for f in roots(report))
    # Near miss: the same crash loop with an unrelated log line stays D07's.
    inside[f"{NS}/{HEAD}"]["logs"] = [{"source": "kubectl logs -c ray-head", "line": "ModuleNotFoundError: x"}]
    report = _diagnose(world, inside)
    assert_quiet(report, "R05")
    assert_fires(roots(report), "D07")


def test_d03_a_gcs_that_crashed_is_named_from_its_own_line() -> None:
    line = "[2026-12-04 03:15:50,654 C 5 5] (gcs_server) gcs_server.cc:266: Check failed: status.ok() Failed to load"
    inside = _log(_inside(), HEAD, "/tmp/ray/session_latest/logs/gcs_server.err", line)
    found = one_finding(_diagnose(World(), inside), "D03")
    assert found.severity == "critical" and any(e.value == line for e in found.evidence)
    assert "failed" in found.title and "SIGKILL" not in found.title
    # Killed (the OOM killer's signal): `ray start --block` names the GCS and its exit code in the container's log.
    killed = _log(_inside(), HEAD, "kubectl logs -c ray-head --previous", "  gcs_server [exit code=-9]")
    found = one_finding(_diagnose(World(), killed), "D03")
    assert "killed (SIGKILL" in found.title and found.evidence[0].value == "  gcs_server [exit code=-9]"
    # The head's restart that followed (D09) hangs under it: the GCS is why ray start ended.
    world = World()
    world.pods("head")[0]["status"]["containerStatuses"][0].update(
        restartCount=1, lastState={"terminated": {"reason": "Error", "exitCode": 1}}
    )
    said = _log(_inside(), HEAD, "kubectl logs -c ray-head --previous", "  gcs_server [exit code=-9]")
    report = _diagnose(world, said)
    gcs, restarted = one_finding(report, "D03"), one_finding(report, "D09")
    assert restarted.caused_by == [gcs.id] and not gcs.caused_by
    # Near miss: another Ray process dying (the dashboard) is not the GCS.
    assert_quiet(
        _diagnose(World(), _log(_inside(), HEAD, "kubectl logs -c ray-head", "  dashboard [exit code=1]")), "D03"
    )
    # Near miss: the same crash because the port was taken is R05's, not D03's.
    taken = "(gcs_server) grpc_server.cc:133: Check failed: server_ Failed to start the grpc server. port is 6379."
    report = _diagnose(World(), _log(_inside(), HEAD, "kubectl logs -c ray-head", taken))
    assert_quiet(report, "D03")
    assert_fires(report, "R05")


def test_r06_a_worker_whose_wait_gcs_ready_refuses_the_version_is_why_it_waits_for_the_gcs() -> None:
    """ray-project/kuberay#1224, met on real Ray (tests/integration/test_doctor_version_skew.py): a 2.51.0 worker of a
    2.52.0 cluster never leaves wait-gcs-ready, which says so; R06 is the root cause and E01 hangs under it."""
    world = World()
    worker = world.pods("worker")[0]
    worker["status"]["phase"] = "Pending"
    worker["status"]["initContainerStatuses"][0]["state"] = {"running": {}}
    worker["status"]["containerStatuses"][0].update(ready=False, state={"waiting": {"reason": "PodInitializing"}})
    for cond in worker["status"]["conditions"]:
        if cond["type"] in ("Ready", "ContainersReady", "Initialized"):
            cond.update(status="False", reason="ContainersNotReady")
    line = "RuntimeError: Ray version mismatch: cluster has Ray version 2.52.0 but local Ray version is 2.51.0"
    inside = _log(_inside(), worker["metadata"]["name"], "kubectl logs -c wait-gcs-ready", line)
    report = _diagnose(world, inside)
    assert [f.rule for f in roots(report)] == ["R06"], [(f.rule, f.title) for f in roots(report)]
    assert "R06-1" in one_finding(report, "E01").caused_by
    # Near miss: the same line from the Ray container of a running worker explains no wait for the GCS.
    running = _log(_inside(), WORKERS[0], "kubectl logs -c ray-worker", line)
    assert "E01" not in {f.rule for f in _diagnose(World(), running).findings}


@pytest.mark.parametrize(
    ("rule", "line"),
    [
        ("R06", "RuntimeError: Version mismatch: The cluster was started with Ray 2.52.0, this is 2.9.3"),
        ("E05", "grpc UNAUTHENTICATED: invalid authentication token"),
        ("R08", "Task was killed due to the node running low on memory. Memory on the node was 1.9GB / 2GB"),
    ],
)
def test_r06_e05_r08_log_signs_are_quoted(rule: str, line: str) -> None:
    inside = _log(_inside(), WORKERS[0], "/tmp/ray/session_latest/logs/raylet.out", line)
    found = one_finding(_diagnose(World(), inside), rule)
    assert any(e.source == "log" and e.value == line for e in found.evidence)
    # Near miss: the same log without the line.
    assert_quiet(_diagnose(World(), _inside()), rule)


def test_r09_ray_has_less_cpu_than_the_raycluster_asks_for() -> None:
    world = World()
    world.one("rayclusters", "seed")["status"].update(desiredCPU="5", desiredMemory="4Gi")
    found = one_finding(_diagnose(world, _inside()), "R09")
    assert "CPU 3.0 of the 5 desired" in found.title and found.severity == "warning"
    # Near miss: what Ray has is what the Pods ask for.
    world.one("rayclusters", "seed")["status"].update(desiredCPU="3", desiredMemory="4Gi")
    assert_quiet(_diagnose(world, _inside()), "R09")


def test_what_was_seen_inside_travels_in_a_dump(tmp_path: Path) -> None:
    host = f"seed-head-svc.{NS}.svc.cluster.local"
    failed = {host: {"error": "[Errno -2] Name or service not known"}}
    snap = World().snapshot()
    snap.inside = _inside(worker=_worker_probe(resolve=failed, connect=[]))
    snap.inside_note = "ran in 2 Pods (--exec)"
    dumps.write(snap, tmp_path)
    back = dumps.read(tmp_path)
    assert back.inside == snap.inside and back.inside_note == "ran in 2 Pods (--exec) (from the dump)"
    assert_fires(diagnose(back, Options(starting_grace=0)), "E02")


# --------------------------------------------------------------------------------------------------------------------
# The object store a worker's own environment names (R10-R12)
# --------------------------------------------------------------------------------------------------------------------

STORE = {"endpoint_variable": "AWS_ENDPOINT_URL", "scheme": "http", "host": f"minio.{NS}.svc.cluster.local",
         "port": 9000, "keys": [True, True], "resolve": {"addresses": ["10.96.0.42"]}, "connect": None,
         "list": {"status": 200}, "buckets": {}}  # fmt: skip


def _store(**change: Any) -> dict[str, Any]:
    return _inside(worker=_worker_probe(s3={**STORE, **change}))


def _reading(world: World, bucket: str) -> World:
    world.add("rayjobs", {
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "read", "namespace": NS, "uid": "uid-read"},
        "spec": {"clusterSelector": {"ray.io/cluster": "seed"},
                 "entrypoint": f"python -c \"ray.data.read_csv('s3://{bucket}/dataset/')\""},
        "status": {"jobDeploymentStatus": "Running"},
    })  # fmt: skip
    return world


@pytest.mark.parametrize(
    ("change", "rule", "words"),
    [
        ({"resolve": {"error": "[Errno -2] Name or service not known"}, "host": "mino.nowhere.svc"}, "R10",
         ["does not resolve", "mino.nowhere.svc", "wrong endpoint"]),
        ({"connect": "timed out after 2s"}, "R10", ["blocked"]),
        ({"connect": "[Errno 13] Permission denied"}, "R10", ["blocked"]),  # a rule that rejects (ip rule prohibit)
        ({"connect": "[Errno 113] No route to host"}, "R10", ["blocked"]),
        ({"connect": "ECONNREFUSED: Connection refused"}, "R10", ["nothing accepts"]),
        ({"list": {"status": 403, "code": "SignatureDoesNotMatch", "message": "The request signature ..."}}, "R11",
         ["SignatureDoesNotMatch", "wrong secret access key"]),
        ({"list": {"status": 404, "code": "XAdminUserNotFound", "message": "No user exists"}}, "R11",
         ["XAdminUserNotFound", "access key id the store does not know"]),
        ({"list": {"status": 403, "code": "InvalidAccessKeyId"}}, "R11", ["does not know"]),
    ],
)  # fmt: skip
def test_r10_r11_the_object_store_seen_from_a_worker_names_its_broken_link(
    change: dict[str, Any], rule: str, words: list[str]
) -> None:
    report = _diagnose(World(), _store(**change))
    found = one_finding(report, rule)
    assert all(w in found.title for w in words), found.title
    assert found.object is not None and found.object.name == WORKERS[0]
    assert "envFrom" in " ".join([found.explanation, *found.remediation]) or rule == "R10"
    assert not {r for r in rules_of(report) if r in ("R10", "R11", "R12")} - {rule}  # the first broken link only


def test_r12_a_bucket_a_rayjob_reads_is_missing() -> None:
    world = _reading(World(), "demo-data")
    report = _diagnose(world, _store(buckets={"demo-data": {"status": 404, "code": "NoSuchBucket"}}))
    found = one_finding(report, "R12")
    assert "demo-data" in found.title and "RayJob read" in found.title, found.title
    assert any(e.path == "spec.entrypoint" for e in found.evidence)
    assert_quiet(_diagnose(_reading(World(), "demo-data"), _store(buckets={"demo-data": {"status": 200}})), "R12")


def test_the_object_store_checks_are_quiet_on_a_healthy_store_and_without_one() -> None:
    assert_quiet(_diagnose(World(), _store()), "R10", "R11", "R12")
    assert_quiet(_diagnose(World(), _inside()), "R10", "R11", "R12")  # no AWS_ENDPOINT_URL in the Pod: no "s3"


def test_the_buckets_checked_are_those_the_rayjobs_on_the_cluster_name() -> None:
    world = _reading(World(), "demo-data")
    assert fi.buckets_for(world.snapshot(), NS, "seed") == ["demo-data"]
    assert fi.buckets_for(world.snapshot(), NS, "other") == []
    assert fi.buckets_named(["s3://a-b/x 's3://c.d/' s3://Up/ s3a://e12/"]) == ["a-b", "c.d", "e12"]


class _Store(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that refuses everything and, as AWS does for SignatureDoesNotMatch, echoes what it was sent
    (the access key id among it) in its message; it keeps the last Authorization header."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_GET(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()} | {"path": self.path})
        body = (f"<Error><Code>SignatureDoesNotMatch</Code><Message>sent {self.headers.get('Authorization')}"
                "</Message></Error>").encode()  # fmt: skip
        self.send_response(403)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


def test_the_probe_signs_as_s3sign_and_never_returns_the_keys() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Store)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        env = {"PATH": "/usr/bin:/bin", "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "AKIDPLANTED42",
               "AWS_SECRET_ACCESS_KEY": "planted-secret-value"}  # fmt: skip
        args = {"s3": {"buckets": ["demo-data"]}, "timeout": 2}
        run = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(args)], capture_output=True, text=True,
                             env=env, check=True, timeout=30)  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert "AKIDPLANTED42" not in run.stdout + run.stderr and "planted-secret" not in run.stdout + run.stderr
    store = json.loads(run.stdout)["s3"]
    assert store["list"]["code"] == "SignatureDoesNotMatch" and "***" in store["list"]["message"]
    assert store["keys"] == [True, True] and store["buckets"]["demo-data"]["status"] == 403
    first = _Store.seen[0]
    signed = s3sign.authorization("GET", "/", "", {k: first[k] for k in ("host", "x-amz-content-sha256",
                                  "x-amz-date")}, s3sign.EMPTY_SHA256, access_key="AKIDPLANTED42",
                                  secret_key=env["AWS_SECRET_ACCESS_KEY"], amz_date=first["x-amz-date"])  # fmt: skip
    assert first["authorization"] == signed  # the inlined signer is s3sign's
    assert _Store.seen[1]["path"] == "/demo-data?list-type=2&max-keys=0"

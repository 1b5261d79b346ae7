"""The doctor's output and dumps: golden text and JSON over a dump directory written from objects, the JSON schema,
and dumps in both directions (``--dump`` writes them; ``--from-dump`` reads them or plain ``kubectl get -o yaml``).

Golden files live in ``tests/golden/doctor/``. After an intended change of the output, regenerate them with
``UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/test_doctor_output.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from raykube.api import constants as c
from raykube.doctor import dump as dumps
from raykube.doctor import snapshot as s
from raykube.doctor.model import Report
from raykube.doctor.render import JSON_SCHEMA, render_json, render_text, to_json
from raykube.doctor.rules import CATALOGUE
from raykube.doctor.run import diagnose, diagnose_dump
from tests.doctor_support import assert_fires, record_rendered_json
from tests.unit.test_doctor_rules import NS, World, seed_spec

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "doctor"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def check_golden(name: str, text: str) -> None:
    """``text`` is the golden file ``name``; once it matched, the rules of a JSON report's findings count as asserted
    firing (a file rewritten with UPDATE_GOLDEN=1 counts for nothing)."""
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"{path} is missing: run with UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(), f"{name} differs from its golden file (UPDATE_GOLDEN=1 regenerates it)"
    if name.endswith(".json"):
        record_rendered_json(text)


def kubectl_dump(world: World, directory: Path) -> Path:
    """The world as `kubectl get <plural> -o yaml > <plural>.yaml` per type would save it (no doctor metadata)."""
    directory.mkdir(parents=True, exist_ok=True)
    for key, items in world.objects.items():
        if key == s.ACCESS_REVIEWS.plural:
            continue
        resource = s.BY_KEY[key]
        listed = [{"apiVersion": resource.api_version, "kind": resource.kind, **item} for item in items]
        document = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": listed}
        (directory / f"{key}.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return directory


def broken_world() -> World:
    """Two RayClusters: `seed` misses its Secret (the kubelet reports it), `greedy`'s workers can never fit."""
    greedy = seed_spec("greedy")
    world = World(seed_spec(), greedy)
    world.objects["secrets"] = []
    for pod in world.pods():
        if pod["metadata"]["labels"][c.RAY_CLUSTER_LABEL] != "seed":
            continue
        pod["status"]["phase"] = "Pending"
        for cond in pod["status"]["conditions"]:
            if cond["type"] in ("Ready", "ContainersReady"):
                cond.update(status="False", reason="ContainersNotReady")
        waiting = {"reason": "CreateContainerConfigError", "message": 'secret "minio-credentials" not found'}
        for status in pod["status"]["containerStatuses"]:
            status.update(ready=False, state={"waiting": waiting})
        world.event(pod, "Failed", 'Error: secret "minio-credentials" not found', count=6)
    for pod in world.pods("worker"):
        if pod["metadata"]["labels"][c.RAY_CLUSTER_LABEL] != "greedy":
            continue
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "16"}, "limits": {"cpu": "16"}}
        pod["spec"].pop("nodeName")
        message = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available."
        pod["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]}  # fmt: skip
        world.event(pod, "FailedScheduling", message, count=4, component="default-scheduler")
    for cluster in world.objects["rayclusters"]:
        cluster["status"]["state"] = ""
    return world


def test_golden_text_and_json_of_two_broken_clusters(tmp_path: Path) -> None:
    directory = kubectl_dump(broken_world(), tmp_path / "dump")
    report, _ = diagnose_dump(directory, namespaces=(NS,))
    check_golden("broken.txt", render_text(report))
    check_golden("broken.json", render_json(report))
    assert report.exit_code() == 1


def test_golden_text_and_json_of_the_healthy_seed_cluster(tmp_path: Path) -> None:
    directory = kubectl_dump(World(), tmp_path / "dump")
    report, _ = diagnose_dump(directory, namespaces=(NS,), targets=[(NS, "seed")])
    check_golden("healthy.txt", render_text(report))
    check_golden("healthy.json", render_json(report))
    assert report.exit_code() == 0
    # The default text shows what needs action; -v (or --fail-on info) adds the info findings it only counted.
    assert "SEC03" not in render_text(report).split("Not shown")[0]
    assert "[SEC03-1] TOKEN_AUTH_DISABLED" in render_text(report, verbose=True)
    assert "Not shown" not in render_text(report, verbose=True)


def test_the_json_report_follows_its_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(JSON_SCHEMA)
    for world in (World(), broken_world()):
        document = json.loads(render_json(diagnose(world.snapshot())))
        jsonschema.validate(document, JSON_SCHEMA)
    assert document["apiVersion"] == "doctor.raykube.io/v1"
    assert document["kind"] == "DoctorReport"


def test_the_schema_in_the_docs_is_the_schema_in_the_code() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"
    text = docs.read_text()
    start = text.index("```json\n", text.index("## JSON schema")) + len("```json\n")
    documented = json.loads(text[start : text.index("```", start)])
    assert documented == json.loads(json.dumps(JSON_SCHEMA))


def test_the_docs_list_every_rule() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "doctor.md").read_text()
    missing = [rule for rule in CATALOGUE if f"| {rule} | `{CATALOGUE[rule].code}` |" not in docs]
    assert not missing, f"docs/doctor.md lacks rules {missing}"


def test_a_written_dump_reads_back_the_same_snapshot(tmp_path: Path) -> None:
    snap = broken_world().snapshot()
    dumps.write(snap, tmp_path)
    back = dumps.read(tmp_path)
    assert back.gathered == snap.gathered
    assert back.now == snap.now and back.namespaces == snap.namespaces
    assert back.objects == snap.objects
    assert render_text(diagnose(back)) == render_text(diagnose(snap))


def test_a_plain_kubectl_dump_says_what_it_lacks_and_keeps_no_secret_values(tmp_path: Path) -> None:
    world = World()
    directory = kubectl_dump(world, tmp_path)
    (directory / "nodes.yaml").unlink()
    (directory / "hpa.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": []}))
    (directory / "horizontalpodautoscalers.yaml").unlink()
    secret: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "extra", "namespace": NS,
                              "annotations": {s.LAST_APPLIED_ANNOTATION: '{"data": {"k": "c2VjcmV0"}}'}},
                              "data": {"k": "c2VjcmV0"}}  # fmt: skip
    (directory / "more").mkdir()
    (directory / "more" / "extra.json").write_text(json.dumps(secret))
    snap = dumps.read(directory)
    assert s.HPAS.plural in snap.gathered and s.NODES.plural not in snap.gathered
    assert any(n.what == "nodes" and n.reason == "not in the dump" for n in snap.not_checked)
    kept = snap.get(s.SECRETS, NS, "extra")
    assert kept is not None and kept["data"] == {"k": ""} and "annotations" not in kept["metadata"]
    report: Report = diagnose(snap)
    assert report.exit_code() == 0
    assert "nodes (not in the dump)" in render_text(report)


def test_a_dump_without_pods_is_incomplete(tmp_path: Path) -> None:
    directory = kubectl_dump(World(), tmp_path)
    (directory / "pods.yaml").unlink()
    report = diagnose(dumps.read(directory))
    assert report.incomplete and to_json(report)["summary"]["status"] in ("Incomplete", "Unhealthy")


def test_an_unreadable_dump_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(dumps.DumpError, match=r"no \.yaml"):
        dumps.read(tmp_path)
    (tmp_path / "bad.yaml").write_text("a: [")
    with pytest.raises(dumps.DumpError, match="not YAML"):
        dumps.read(tmp_path)


def test_the_kubectl_plugin_runs_doctor_offline_with_its_exit_codes(tmp_path: Path) -> None:
    from typer.testing import CliRunner  # noqa: PLC0415 - only this test drives the CLI in-process

    from raykube.cli.doctor import plugin  # noqa: PLC0415

    healthy = kubectl_dump(World(), tmp_path / "healthy")
    broken = kubectl_dump(broken_world(), tmp_path / "broken")
    runner = CliRunner()

    result = runner.invoke(plugin, ["doctor", "raycluster/seed", "--from-dump", str(healthy)])
    assert result.exit_code == 0, result.output
    assert "RayCluster ml/seed: HEALTHY" in result.output and "Not checked:" in result.output

    result = runner.invoke(plugin, ["doctor", "--all", "-n", NS, "--from-dump", str(broken), "-o", "json"])
    assert result.exit_code == 1, result.output
    assert [t["name"] for t in json.loads(result.output)["targets"]] == ["greedy", "seed"]

    assert runner.invoke(plugin, ["doctor", "--all", "--from-dump", str(broken), "--exit-zero"]).exit_code == 0
    assert runner.invoke(plugin, ["doctor", "seed", "--from-dump", str(healthy), "--fail-on", "info"]).exit_code == 1
    assert runner.invoke(plugin, ["doctor", "raycluster/nope", "--from-dump", str(healthy)]).exit_code == 3
    assert runner.invoke(plugin, ["doctor", "rayservice/x", "--from-dump", str(healthy)]).exit_code == 3  # not found
    assert runner.invoke(plugin, ["doctor", "raycronjob/x", "--from-dump", str(healthy)]).exit_code == 3  # not found
    assert runner.invoke(plugin, ["doctor", "cronjob/x", "--from-dump", str(healthy)]).exit_code == 2
    assert runner.invoke(plugin, ["doctor", "seed", "--from-dump", str(tmp_path / "nothing")]).exit_code == 2


def test_a_dump_redacts_literal_credentials_and_sec05_still_fires_from_it(tmp_path: Path) -> None:
    world = World()
    head = world.objects["rayclusters"][0]["spec"]["headGroupSpec"]
    head["template"]["spec"]["containers"][0]["env"] = [
        {"name": "DB_PASSWORD", "value": "hunter2-in-the-spec"},
        {"name": "RAY_LOG_LEVEL", "value": "debug"},
    ]
    head["rayStartParams"]["redis-password"] = "redis-in-the-spec"
    world.objects["rayclusters"][0]["spec"]["gcsFaultToleranceOptions"] = {
        "redisAddress": "redis:6379", "redisPassword": {"value": "ft-in-the-spec"}}  # fmt: skip
    dumps.write(world.snapshot(), tmp_path)
    written = "".join(p.read_text() for p in tmp_path.iterdir())
    for value in ("hunter2-in-the-spec", "redis-in-the-spec", "ft-in-the-spec"):
        assert value not in written
    assert "debug" in written  # only what looks like a credential
    assert_fires(diagnose(dumps.read(tmp_path)), "SEC05")

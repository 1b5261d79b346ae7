"""What raykube takes from a KubeRay release the Go module proxy does not serve: its Go struct table and hash vectors.

    uv run python tools/kuberay/generate.py --src <kuberay checkout>           # rewrite both files
    uv run python tools/kuberay/generate.py --src <kuberay checkout> --check   # fail if either would change

`--src` (default: $KUBERAY_SRC, else the clone of the tag `make conformance` makes, which needs GitHub) is a checkout
of github.com/ray-project/kuberay at the release raykube follows (`git clone --branch v1.7.0
https://github.com/ray-project/kuberay`); `make conformance` runs `--check` first. The module proxy refuses ray-operator v1.7.0,
so this copies tools/kuberay (a Go module requiring v1.6.1 from the proxy) into a temporary directory, makes its
go.mod require v1.7.0 and replace the module with the checkout's ray-operator/, and `go mod tidy`s it. Then:

1. `go run ./gostructs` writes src/raykube/golang/gostructs.py, the encoding/json view of v1.7.0's RayClusterSpec
   (its header names the release, the checkout's commit and this command).
2. `go generate ./hash && go build ./hash` builds KubeRay v1.7.0's GenerateHashWithoutReplicasAndWorkersToDelete
   (and the RayCluster controller's setDefaults) into the helper tests/kuberay_hash.py talks to.
3. The helper hashes, as read and after setDefaults:
   * every cluster spec of the v1.7.0 samples (ray-operator/config/samples), as written and with the CRD default
     `priority: 0` added to every worker group (what the API server serves under v1.7.0's CRD), each case keyed by
     `<file>#<index>[+priority]` and the sha256 of the spec's canonical JSON: only hashes are written, never
     KubeRay's sample content;
   * specs drawn from raykube's strategies (tests/hash_specs.py) with a fixed seed: SPEC_V170 (v1.7.0's fields),
     SPEC_V170_ADDED (only what v1.7.0 added, densely) and SPEC_V161 (v1.6.1's only), written in full;
   * a few specs on which KubeRay v1.7.0 and v1.6.1 answer differently, each with v1.6.1's answer and why.
4. `go run ./roundtrip` encodes hand-written RayClusters, RayJobs and RayServices and 20 of the SPEC_V170 specs in
   each kind through v1.7.0's Go types: tests/vectors/kuberay_roundtrip_v170.json, what "as Go writes it"
   (raykube.golang.gojson.as_go_writes) is checked against.
5. KubeRay v1.6.1's helper (tests/kuberay_hash.py, from the module proxy) hashes v1.6.1's samples and the SPEC_V161
   specs too: it must agree with v1.7.0 on every one (a v1.7.0 operator reading objects a v1.6.1 one wrote hashes
   them alike), and must disagree on each of the specs of the last kind.

tests/vectors/kuberay_hash_v170.json: a header (release, commit, generator, counts), then one case a line. Byte-stable
for a given checkout and the locked Python packages (hypothesis draws with a fixed seed). tests/unit/
test_kuberay_hash_v170.py compares raykube with it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the tests package, for its strategies and KubeRay v1.6.1's helper

from tests import hash_specs, kuberay_hash  # noqa: E402 - after the path is set

from raykube.sandbox.build import find_go  # noqa: E402
from raykube.sandbox.conformance import clone_tag  # noqa: E402
from raykube.sandbox.errors import SandboxError  # noqa: E402
from raykube.sandbox.reference import kuberay_reference  # noqa: E402

RELEASE = "v1.7.0"  # the KubeRay release raykube follows
MODULE = "github.com/ray-project/kuberay/ray-operator"
TOOLS = ROOT / "tools" / "kuberay"
GOSTRUCTS = ROOT / "src" / "raykube" / "golang" / "gostructs.py"
VECTORS = ROOT / "tests" / "vectors" / "kuberay_hash_v170.json"
COMMAND = f"uv run python tools/kuberay/generate.py --src <a checkout of KubeRay {RELEASE}>"
ROUNDTRIP = ROOT / "tests" / "vectors" / "kuberay_roundtrip_v170.json"
GO_SOURCES = ("go.mod", "go.sum", "extract/main.go", "gostructs/main.go", "hash/main.go", "roundtrip/main.go")
# How many drawn specs to wrap into each kind of object for the round-trip vectors.
ROUNDTRIP_SPECS = 20

# Specs KubeRay v1.6.1 and v1.7.0 hash differently, each with the reason: what changes under a v1.6-made object when
# the operator (or the CRD) becomes v1.7.0's.
_HEAD = {"template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}
_WORKER = {"groupName": "g", "template": {"spec": {"containers": [{"name": "ray-worker"}]}}}
DIFFERENCES: tuple[tuple[str, dict[str, Any]], ...] = (
    (
        "v1.7.0's CRD defaults workerGroupSpecs[].priority to 0, so the API server serves priority: 0 in every group "
        "of an object stored before; v1.6.1's types have no priority (dropped), v1.7.0's *int32 keeps a 0",
        {"headGroupSpec": _HEAD, "workerGroupSpecs": [{**_WORKER, "priority": 0}]},
    ),
    (
        "gcsFaultToleranceOptions.redisAddress became optional in v1.7.0 (omitempty; v1.6.1's CRD required it): an "
        'empty address is "redisAddress":"" for v1.6.1 and left out by v1.7.0',
        {"headGroupSpec": _HEAD, "gcsFaultToleranceOptions": {"redisAddress": ""}},
    ),
    (
        "k8s.io/api v0.36 (v1.7.0's) replaced PodSpec.workloadRef (v0.35, v1.6.1's) with schedulingGroup: a "
        "workloadRef in a template is hashed by v1.6.1 and dropped by v1.7.0",
        {"headGroupSpec": {"template": {"spec": {"containers": [], "workloadRef": {"name": "w", "podGroup": "p"}}}}},
    ),
    (
        "the other way round: a template's schedulingGroup is dropped by v1.6.1 and hashed by v1.7.0",
        {"headGroupSpec": {"template": {"spec": {"containers": [], "schedulingGroup": {"podGroupName": "p"}}}}},
    ),
    (
        "headGroupSpec.ingressOptions (raykube's CRD had it before KubeRay's types did) is dropped by v1.6.1 and "
        "hashed by v1.7.0",
        {"headGroupSpec": {**_HEAD, "ingressOptions": {"host": "ray.example.com"}}},
    ),
)


_TIME = "2026-01-02T03:04:05Z"
_META = {
    "name": "x",
    "namespace": "ns",
    "uid": "u-1",
    "resourceVersion": "7",
    "generation": 1,
    "creationTimestamp": _TIME,
}
_CLUSTER = {
    "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "r"}]}}},
    "workerGroupSpecs": [
        {
            "groupName": "g",
            "replicas": 1,
            "minReplicas": 0,
            "maxReplicas": 3,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "w", "resources": {"limits": {"cpu": "1000m"}}}]}},
        }
    ],
}
_CLUSTER_STATUS = {
    "state": "ready",
    "desiredCPU": "0",
    "desiredGPU": "0",
    "desiredMemory": "0",
    "desiredTPU": "0",
    "head": {"podIP": "10.0.0.1", "serviceIP": "10.0.0.2"},
    "endpoints": {"dashboard": "8265"},
    "readyWorkerReplicas": 0,
    "availableWorkerReplicas": 1,
    "observedGeneration": 2,
    "lastUpdateTime": "2026-01-02T03:04:05.250+02:00",
    "stateTransitionTimes": {"ready": _TIME},
    "conditions": [
        {
            "type": "HeadPodReady",
            "status": "True",
            "observedGeneration": 2,
            "lastTransitionTime": _TIME,
            "reason": "HeadPodRunningAndReady",
            "message": "",
        }
    ],
}
# Hand-written objects, each with what it shows: the shapes raykube writes (statuses with empty strings and zeros, a
# RayJob spec with false and "" fields), nulls, unknown fields (a Pod field newer than v1.7.0's k8s.io/api, a key in
# another case), times with fractions and offsets, and the whole of metav1.ObjectMeta.
ROUNDTRIP_OBJECTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("RayCluster", "a spec without the structs Go always writes", {"metadata": _META, "spec": _CLUSTER}),
    (
        "RayCluster",
        "every ObjectMeta field",
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {
                **_META,
                "generateName": "x-",
                "deletionTimestamp": _TIME,
                "deletionGracePeriodSeconds": 0,
                "labels": {"a": "b", "<&>": ""},
                "annotations": {"ray.io/hash": "abc"},
                "ownerReferences": [
                    {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "j", "uid": "u-2", "controller": True}
                ],
                "finalizers": ["ray.io/gcs-ft-redis-cleanup-finalizer"],
                "managedFields": [
                    {
                        "manager": "kubectl",
                        "operation": "Update",
                        "apiVersion": "ray.io/v1",
                        "time": _TIME,
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {"f:z": {}, "f:a": {}}},
                    }
                ],
            },
            "spec": _CLUSTER,
        },
    ),
    (
        "RayCluster",
        "nulls, empty structs and a Pod field KubeRay v1.7.0's k8s.io/api does not know (dropped)",
        {
            "metadata": {**_META, "labels": None, "finalizers": []},
            "spec": {
                "suspend": None,
                "headGroupSpec": {
                    "template": {
                        "metadata": None,
                        "spec": {
                            "containers": [{"name": "h", "futureContainerField": {"a": 1}, "Image": "r"}],
                            "futurePodField": True,
                            "volumes": None,
                        },
                    }
                },
                "workerGroupSpecs": [],
            },
            "status": None,
        },
    ),
    ("RayCluster", "a status with conditions, times and counters", {"metadata": _META, "status": _CLUSTER_STATUS}),
    (
        "RayJob",
        "a spec with false and empty fields, as a sample writes it",
        {
            "metadata": _META,
            "spec": {
                "entrypoint": "python x.py",
                "shutdownAfterJobFinishes": False,
                "jobId": "",
                "suspend": False,
                "runtimeEnvYAML": "",
                "submitterPodTemplate": {"spec": {"restartPolicy": "Never", "containers": [{"name": "s"}]}},
                "rayClusterSpec": _CLUSTER,
            },
        },
    ),
    (
        "RayJob",
        "the status raykube writes first",
        {
            "metadata": _META,
            "spec": {"entrypoint": "e"},
            "status": {
                "jobId": "x-abcde",
                "rayClusterName": "x-fghij",
                "jobStatus": "",
                "jobDeploymentStatus": "Initializing",
                "startTime": _TIME,
                "rayClusterStatus": {},
                "failed": 0,
                "succeeded": 0,
                "observedGeneration": 2,
            },
        },
    ),
    (
        "RayJob",
        "a finished job's status",
        {
            "metadata": _META,
            "status": {
                "jobId": "j",
                "jobStatus": "SUCCEEDED",
                "jobDeploymentStatus": "Complete",
                "reason": "",
                "message": "done",
                "dashboardURL": "x-head-svc.ns.svc.cluster.local:8265",
                "startTime": _TIME,
                "endTime": "2026-01-02T03:05:05.999Z",
                "rayJobInfo": {"startTime": _TIME, "endTime": _TIME},
                "rayClusterStatus": _CLUSTER_STATUS,
                "jobStatusCheckFailureStartTime": None,
                "succeeded": 1,
            },
        },
    ),
    (
        "RayService",
        "a spec and the status raykube writes first",
        {
            "metadata": _META,
            "spec": {
                "serveConfigV2": "applications: []\n",
                "rayClusterConfig": _CLUSTER,
                "excludeHeadPodFromServeSvc": False,
            },
            "status": {
                "serviceStatus": "",
                "numServeEndpoints": 0,
                "observedGeneration": 1,
                "activeServiceStatus": {},
                "pendingServiceStatus": {"rayClusterName": "", "rayClusterStatus": {}},
                "lastUpdateTime": _TIME,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "False",
                        "observedGeneration": 1,
                        "lastTransitionTime": _TIME,
                        "reason": "Initializing",
                        "message": "",
                    }
                ],
            },
        },
    ),
    (
        "RayService",
        "a running service's status, applications and deployments",
        {
            "metadata": _META,
            "status": {
                "serviceStatus": "Running",
                "numServeEndpoints": 2,
                "activeServiceStatus": {
                    "rayClusterName": "x-abcde",
                    "rayClusterStatus": _CLUSTER_STATUS,
                    "applicationStatuses": {
                        "app": {
                            "status": "RUNNING",
                            "message": "",
                            "serveDeploymentStatuses": {"d": {"status": "HEALTHY", "message": ""}},
                        }
                    },
                },
            },
        },
    ),
)


def roundtrip_objects(specs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects whose Go round trip the vectors record: the hand-written ones, then each drawn spec as a RayCluster,
    the cluster of a RayJob and of a RayService."""
    cases = [{"kind": kind, "why": why, "object": obj} for kind, why, obj in ROUNDTRIP_OBJECTS]
    for index, spec in enumerate(specs):
        served = json.loads(hash_specs.served(spec))
        meta = {**_META, "name": f"s{index}"}
        cases += [
            {"kind": "RayCluster", "strategy": "SPEC_V170", "object": {"metadata": meta, "spec": served}},
            {
                "kind": "RayJob",
                "strategy": "SPEC_V170",
                "object": {"metadata": meta, "spec": {"entrypoint": "e", "rayClusterSpec": served}},
            },
            {
                "kind": "RayService",
                "strategy": "SPEC_V170",
                "object": {"metadata": meta, "spec": {"rayClusterConfig": served}},
            },
        ]
    return cases


def _stderr(message: str) -> None:
    sys.stderr.write(f"• {message}\n")


def _git(src: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True, check=True).stdout.strip()


def check_release(src: Path) -> str:
    """The commit of ``src``, after checking that it is a KubeRay checkout at :data:`RELEASE` with ray-operator/
    as committed."""
    if not (src / "ray-operator" / "go.mod").is_file():
        raise SystemExit(
            f"{src} has no ray-operator/go.mod: --src must be a checkout of github.com/ray-project/kuberay"
        )
    commit = _git(src, "rev-parse", "HEAD")
    try:
        tagged = _git(src, "rev-parse", f"{RELEASE}^{{commit}}")
    except subprocess.CalledProcessError:
        raise SystemExit(f"{src} has no tag {RELEASE}: git -C {src} fetch --tags") from None
    if commit != tagged:
        raise SystemExit(f"{src} is at {commit[:12]}, not at {RELEASE} ({tagged[:12]}): check out {RELEASE}")
    if _git(src, "status", "--porcelain", "--untracked-files=no", "--", "ray-operator"):
        raise SystemExit(f"{src}/ray-operator differs from {RELEASE}: git -C {src} status")
    return commit


class Module:
    """tools/kuberay copied into ``work``, with ray-operator replaced by the checkout's."""

    def __init__(self, work: Path, src: Path) -> None:
        self.work = work
        self.go = find_go(purpose=f"KubeRay {RELEASE}'s Go types and hash function are compiled from its sources")
        for name in GO_SOURCES:
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(TOOLS / name, work / name)
        replacement = (src / "ray-operator").resolve()
        self.run("mod", "edit", f"-require={MODULE}@{RELEASE}", f"-replace={MODULE}={replacement}")
        required = (replacement / "go.mod").read_text().splitlines()
        go_version = next(line.split()[1] for line in required if line.startswith("go "))
        self.run("mod", "edit", f"-go={go_version}")  # the checkout's go directive, which may be newer than ours
        self.run("mod", "tidy")

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [self.go.path, *args], cwd=self.work, capture_output=True, text=True, check=False, timeout=1800
        )
        if done.returncode:
            raise SystemExit(f"go {' '.join(args)} (in {self.work}) failed:\n{done.stderr}")
        return done.stdout

    def gostructs(self) -> str:
        return self.run("run", "-buildvcs=false", "./gostructs", f"-regenerate={COMMAND}")

    def roundtrip(self, cases: Sequence[dict[str, Any]]) -> list[str]:
        """What KubeRay's Go types write of each ``{"kind", "object"}``: decoded as the API server's answers are, then
        json.Marshal'ed (tools/kuberay/roundtrip)."""
        stdin = "".join(json.dumps({"kind": case["kind"], "object": case["object"]}) + "\n" for case in cases)
        done = subprocess.run(
            [self.go.path, "run", "-buildvcs=false", "./roundtrip"],
            cwd=self.work,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=1800,
        )
        if done.returncode:
            raise SystemExit(f"go run ./roundtrip failed:\n{done.stderr}")
        lines = done.stdout.splitlines()
        if len(lines) != len(cases):
            raise SystemExit(f"go run ./roundtrip answered {len(lines)} lines for {len(cases)} objects")
        return lines

    def hash_helper(self) -> Path:
        self.run("generate", "./hash")
        binary = self.work / "bin" / kuberay_hash.BINARY
        self.run("build", "-trimpath", "-buildvcs=false", "-o", str(binary), "./hash")
        return binary


def _hashes(helper: kuberay_hash.KubeRayHash, text: str) -> tuple[str, str]:
    try:
        return helper.hashes(text)
    except ValueError as error:
        raise SystemExit(f"{error}\n  spec: {text}") from None


def sample_cases(helper: kuberay_hash.KubeRayHash, samples: Path) -> list[dict[str, Any]]:
    cases = []
    for name, spec in hash_specs.sample_specs(samples):
        for suffix, variant in (("", spec), ("+priority", hash_specs.with_priority_default(spec))):
            if variant is None:
                continue
            as_read, defaulted = _hashes(helper, hash_specs.served(variant))
            cases.append(
                {
                    "sample": name + suffix,
                    "input_sha256": hash_specs.input_sha256(variant),
                    "served": as_read,
                    "defaulted": defaulted,
                }
            )
    return cases


def spec_case(helper: kuberay_hash.KubeRayHash, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    text = hash_specs.served(spec)
    as_read, defaulted = _hashes(helper, text)
    return {"spec": text, **extra, "served": as_read, "defaulted": defaulted}


def cross_check(
    v170: kuberay_hash.KubeRayHash, v161: kuberay_hash.KubeRayHash, specs: Sequence[tuple[str, dict[str, Any]]]
) -> list[str]:
    """Where KubeRay v1.6.1 and v1.7.0 hash a v1.6-made spec differently (there should be nowhere)."""
    differ = []
    for name, spec in specs:
        text = hash_specs.served(spec)
        if _hashes(v170, text) != _hashes(v161, text):
            differ.append(f"{name}: {text}")
    return differ


def document(header: dict[str, Any], cases: Sequence[dict[str, Any]]) -> str:
    """The vectors file: the header's keys, then "cases", one case a line (ASCII, so no line separator hides in a
    string)."""
    lines = [f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=True)}," for key, value in header.items()]
    rows = [f"    {json.dumps(case, ensure_ascii=True)}" for case in cases]
    return "{\n" + "\n".join(lines) + '\n  "cases": [\n' + ",\n".join(rows) + "\n  ]\n}\n"


def generate(src: Path, work: Path) -> tuple[str, str, str]:
    """The gostructs table, the hash vectors and the round-trip vectors, as text."""
    commit = check_release(src)
    module = Module(work, src)
    _stderr(f"KubeRay {RELEASE} at {commit[:12]}: writing the struct table")
    table = module.gostructs()
    _stderr("building KubeRay's hash helpers")
    v170 = kuberay_hash.KubeRayHash(module.hash_helper())
    v161 = kuberay_hash.KubeRayHash(kuberay_hash.build(_stderr))
    try:
        _stderr("hashing the samples and the generated specs")
        samples = sample_cases(v170, src / "ray-operator" / "config" / "samples")
        drawn = hash_specs.drawn()
        generated = [spec_case(v170, spec, strategy=name) for name, specs in drawn.items() for spec in specs]
        _stderr("encoding objects through KubeRay's Go types")
        objects = roundtrip_objects(drawn["SPEC_V170"][:ROUNDTRIP_SPECS])
        for case, answer in zip(objects, module.roundtrip(objects), strict=True):
            case["go"] = answer
        differences = []
        for reason, spec in DIFFERENCES:
            case = spec_case(v170, spec, why=reason)
            case["v161"] = list(_hashes(v161, case["spec"]))
            if case["v161"] == [case["served"], case["defaulted"]]:
                raise SystemExit(f"KubeRay v1.6.1 and {RELEASE} agree on a spec said to differ ({reason}): {spec}")
            differences.append(case)
        _stderr("comparing KubeRay v1.6.1 with v1.7.0 on v1.6-made specs")
        v161_samples = hash_specs.sample_specs(kuberay_reference(_stderr) / "samples")
        v161_generated = [(f"SPEC_V161 {index}", spec) for index, spec in enumerate(drawn["SPEC_V161"])]
        differ = cross_check(v170, v161, [*v161_samples, *v161_generated])
        if differ:
            raise SystemExit("KubeRay v1.6.1 and v1.7.0 hash these v1.6-made specs differently:\n" + "\n".join(differ))
    finally:
        v170.close()
        v161.close()
    modules = [line.removeprefix("#   ") for line in table.splitlines() if line.startswith("#   ")]
    header = {
        "kuberay": RELEASE,
        "commit": commit,
        "generator": "tools/kuberay/generate.py (KubeRay's GenerateHashWithoutReplicasAndWorkersToDelete, "
        "compiled from the checkout by tools/kuberay/hash)",
        "regenerate": COMMAND,
        "modules": modules,
        "checks": "served: the hash of the spec as read (the RayService controller's); defaulted: after the RayCluster "
        "controller's setDefaults (the ray.io/upgrade-strategy-recreate-hash annotation). A sample case names a spec "
        "of the release's ray-operator/config/samples by file#index and the sha256 of its canonical JSON "
        "(tests/hash_specs.py input_sha256), +priority with priority: 0 added to every worker group lacking one; a "
        "spec case holds the spec as served, and the strategy it was drawn from or why v1.6.1 answers v161 instead",
        "seed": hash_specs.SEED,
        "counts": {
            "samples": sum(1 for case in samples if not case["sample"].endswith("+priority")),
            "samples_priority": sum(1 for case in samples if case["sample"].endswith("+priority")),
            **{name: len(specs) for name, specs in drawn.items()},
            "v161_differences": len(differences),
        },
        "v161_agrees_on": {"v161_samples": len(v161_samples), "SPEC_V161": len(v161_generated)},
        "count": len(samples) + len(generated) + len(differences),
    }
    roundtrip_header = {
        "kuberay": RELEASE,
        "commit": commit,
        "generator": "tools/kuberay/generate.py (tools/kuberay/roundtrip: sigs.k8s.io/json's case-sensitive decoding "
        "into KubeRay's Go type of the kind, then encoding/json's Marshal)",
        "regenerate": COMMAND,
        "modules": modules,
        "checks": "go: what KubeRay's Go types write of object (the body of its Create, Update and status Update "
        "calls); raykube.golang.gojson.marshal of the kind's root must write the same bytes",
        "count": len(objects),
    }
    return (
        table,
        document(header, [*samples, *generated, *differences]),
        document(roundtrip_header, objects),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=os.environ.get("KUBERAY_SRC"), help="a KubeRay checkout")
    parser.add_argument("--check", action="store_true", help="fail when a committed file is not what is generated")
    args = parser.parse_args(argv)
    if args.src is None:  # the clone `make conformance` makes (needs GitHub), as for the e2e suites
        try:
            args.src = clone_tag(RELEASE.removeprefix("v"), _stderr)
        except SandboxError as error:
            sys.stderr.write(
                f"{error}\nneeds a checkout of KubeRay {RELEASE}: git clone --branch {RELEASE} "
                "https://github.com/ray-project/kuberay <dir>, then --src <dir> or KUBERAY_SRC=<dir>\n"
            )
            return 2
    with tempfile.TemporaryDirectory(prefix="raykube-kuberay-") as work:
        table, vectors, roundtrip = generate(args.src.resolve(), Path(work))
    stale = []
    for path, text in ((GOSTRUCTS, table), (VECTORS, vectors), (ROUNDTRIP, roundtrip)):
        same = path.is_file() and path.read_text(encoding="utf-8") == text
        if args.check:
            stale += [] if same else [str(path.relative_to(ROOT))]
        elif not same:
            path.write_text(text, encoding="utf-8")
            sys.stdout.write(f"wrote {path.relative_to(ROOT)}\n")
        else:
            sys.stdout.write(f"{path.relative_to(ROOT)} unchanged\n")
    if stale:
        sys.stderr.write(f"not what {COMMAND} writes: {', '.join(stale)}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

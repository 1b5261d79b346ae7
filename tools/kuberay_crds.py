"""KubeRay's CRDs as fingerprints, for `make test` to compare raykube's generated CRDs with, and a path-level diff.

    uv run python tools/kuberay_crds.py --src <kuberay checkout>            # rewrite tests/vectors/kuberay_crds.json
    uv run python tools/kuberay_crds.py --src <kuberay checkout> --diff     # every difference, path by path

`--src` (default: $KUBERAY_SRC) is a checkout of github.com/ray-project/kuberay at the release raykube follows
(`git clone --branch v1.7.0 https://github.com/ray-project/kuberay`); the CRDs are read from its
`ray-operator/config/crd/bases/`. Only digests are written (`raykube.api.crd.fingerprints`: descriptions dropped,
`required` lists sorted, sha256 of each part down to a few levels), never KubeRay's text. The file is byte-stable.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from raykube.api.crd import FINGERPRINT_DEPTH, fingerprints, load_generated, normalized

RELEASE = "v1.7.0"  # the KubeRay release raykube follows
OUT = Path(__file__).resolve().parents[1] / "tests" / "vectors" / "kuberay_crds.json"


def _git(src: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(src), *args], capture_output=True, text=True, check=True).stdout.strip()


def read_crds(src: Path) -> dict[str, dict[str, Any]]:
    """KubeRay's CRDs under ``src``, by raykube's file name (``rayclusters.yaml``)."""
    bases = src / "ray-operator" / "config" / "crd" / "bases"
    if not bases.is_dir():
        raise SystemExit(f"{bases} does not exist: --src must be a checkout of github.com/ray-project/kuberay")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return {
        path.name.removeprefix("ray.io_"): yaml.load(path.read_text(), Loader=loader)  # noqa: S506 - a safe loader
        for path in sorted(bases.glob("ray.io_*.yaml"))
    }


def check_release(src: Path) -> str:
    """The commit of ``src``, after checking that it is :data:`RELEASE`."""
    commit = _git(src, "rev-parse", "HEAD")
    tagged = _git(src, "rev-parse", f"{RELEASE}^{{commit}}")
    if commit != tagged:
        raise SystemExit(f"{src} is at {commit[:12]}, not at {RELEASE} ({tagged[:12]}): check out {RELEASE}")
    return commit


def _walk(ours: Any, theirs: Any, path: str, out: list[str]) -> None:
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key in sorted(set(ours) | set(theirs)):
            if key not in theirs:
                out.append(f"{path}.{key}: only raykube has it")
            elif key not in ours:
                out.append(f"{path}.{key}: only KubeRay has it: {json.dumps(theirs[key])[:200]}")
            else:
                _walk(ours[key], theirs[key], f"{path}.{key}", out)
    elif isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs) and ours != theirs:
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _walk(a, b, f"{path}[{index}]", out)
    elif ours != theirs:
        out.append(f"{path}: raykube {json.dumps(ours)[:200]}, KubeRay {json.dumps(theirs)[:200]}")


def diff(theirs: dict[str, dict[str, Any]]) -> list[str]:
    """Every difference between raykube's generated CRDs and ``theirs`` that the API server would notice."""
    ours = load_generated()
    out: list[str] = []
    for name in sorted(set(ours) | set(theirs)):
        if name not in theirs or name not in ours:
            out.append(f"{name}: only {'raykube' if name in ours else 'KubeRay'} has it")
            continue
        _walk(normalized(ours[name]["spec"]), normalized(theirs[name]["spec"]), name, out)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=os.environ.get("KUBERAY_SRC"), help="a KubeRay checkout")
    parser.add_argument("--diff", action="store_true", help="print the differences instead of writing the file")
    args = parser.parse_args()
    if args.src is None:
        print(
            f"needs a checkout of KubeRay {RELEASE}: git clone --branch {RELEASE} "
            "https://github.com/ray-project/kuberay <dir>, then --src <dir> or KUBERAY_SRC=<dir>",
            file=sys.stderr,
        )
        return 2
    theirs = read_crds(args.src)
    if args.diff:
        problems = diff(theirs)
        print("\n".join(problems) or f"raykube's CRDs equal KubeRay's at {args.src} (descriptions aside)")
        return 1 if problems else 0
    commit = check_release(args.src)
    document = {
        "kuberay": RELEASE,
        "commit": commit,
        "source": "ray-operator/config/crd/bases/ray.io_*.yaml",
        "generator": "tools/kuberay_crds.py (raykube.api.crd.fingerprints)",
        "depth": FINGERPRINT_DEPTH,
        "crds": {name: fingerprints(crd) for name, crd in theirs.items()},
    }
    OUT.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT}: KubeRay {RELEASE} "
          f"at {commit[:12]}, {sum(len(f) for f in document['crds'].values())} fingerprints")
    return 0


if __name__ == "__main__":
    sys.exit(main())

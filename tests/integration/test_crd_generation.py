"""The CRDs checked in under config/crd/ are exactly what `raykube crd generate` makes from today's models."""

from __future__ import annotations

from pathlib import Path

import yaml

from raykube.api import crd, k8s_openapi
from tests.support import raykube

CONFIG_CRD = Path(__file__).resolve().parents[2] / "config" / "crd"


def test_checked_in_crds_are_current() -> None:
    generated = crd.generate_all(k8s_openapi.definitions())
    assert sorted(generated) == sorted(p.name for p in CONFIG_CRD.glob("*.yaml"))
    stale = [name for name, body in generated.items() if (CONFIG_CRD / name).read_text() != crd.render(body)]
    assert stale == [], f"{stale} differ from the models: run `make crds` and commit config/crd/"


def test_crd_print_emits_all_four_for_gitops(tmp_path: Path) -> None:
    printed = raykube("crd", "print", state_root=tmp_path)
    assert printed.returncode == 0, printed.stderr
    documents = list(yaml.load_all(printed.stdout, Loader=yaml.CSafeLoader))
    assert documents == list(crd.load_generated().values())

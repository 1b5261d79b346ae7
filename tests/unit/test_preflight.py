"""`make test` starts with `raykube sandbox preflight`: as a non-root user (or without ip/nsenter/unshare) it stops at
once with the sentence README gives, instead of skipping the process-node tests."""

from __future__ import annotations

import shutil

import pytest
import typer

from raykube.cli import sandbox
from raykube.sandbox.kubelet import network


def test_a_non_root_user_without_nsenter_is_told_what_make_test_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(network.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(
        network.shutil, "which", lambda tool, **kw: None if tool == "nsenter" else real_which(tool, **kw)
    )

    problems = network.preflight()
    assert any(p.startswith("process nodes need root") for p in problems)
    assert "`nsenter` is not on PATH (install util-linux)" in problems

    with pytest.raises((SystemExit, typer.Exit)):
        sandbox.preflight()
    said = " ".join(capsys.readouterr().err.split())
    assert "make test needs root on Linux with ip, nsenter and unshare" in said
    assert "process nodes need root" in said and "`nsenter` is not on PATH" in said

"""``raykube doctor -o html`` as a browser shows it: Debian's Chromium, headless, lays out the chapter's broken cluster
(the doctor's report of ``tests.unit.test_doctor_output.broken_world``), and each root cause is drawn above the
consequences it explains, every finding visible. The page itself has no script; the test measures a copy with one
small script added (the element positions, written into the DOM that ``--dump-dom`` prints).

``UPDATE_SCREENSHOT=1 make browser`` writes docs/doctor-html.png from the same page. Chromium comes from Debian's
package (``apt-get install chromium``), which neither the Go module proxy nor PyPI provides, so ``make test`` (which
needs only those) deselects the ``browser`` tests and ``make browser`` runs them: there a missing Chromium fails, never
skips.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from raykube.doctor import formats
from raykube.doctor.render import to_json
from tests.unit.test_doctor_formats import broken

pytestmark = pytest.mark.browser

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "doctor-html.png"
# What this machine's closed network needs: no background connections, no sandbox (root), no GPU.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
MEASURE = """<script>
addEventListener("load", () => {
  const rows = [...document.querySelectorAll(".finding")].map((e) => {
    const box = e.getBoundingClientRect();
    return [e.id, e.dataset.role, Math.round(box.top + scrollY), Math.round(box.height)];
  });
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify(rows);
  document.body.appendChild(out);
});
</script>"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("Debian's chromium is not installed: apt-get install chromium (make browser needs it)")
    return found


def run_chromium(tmp_path: Path, *args: str) -> str:
    profile = tmp_path / "profile"
    done = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_chromium_draws_each_root_cause_above_the_consequences_it_explains(tmp_path: Path) -> None:
    document = to_json(broken())
    page = formats.render("html", document)
    measured = tmp_path / "measured.html"
    measured.write_text(page.replace("</body>", MEASURE + "</body>"))
    dom = run_chromium(tmp_path, "--dump-dom", measured.as_uri())
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    rows: list[list[Any]] = json.loads(found.group(1))
    top = {row[0]: row[2] for row in rows}
    assert {row[0] for row in rows} == {f["id"] for f in document["findings"]}
    assert all(row[3] > 0 for row in rows), [row for row in rows if row[3] <= 0]  # every finding takes room
    roots = [row[0] for row in rows if row[1] == "root"]
    assert roots and "C07-2" in roots
    for finding in document["findings"]:
        if finding["causedBy"]:
            assert min(top[c] for c in finding["causedBy"]) < top[finding["id"]], finding["id"]

    shot = tmp_path / "doctor.png"
    run_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,1500", _page(tmp_path, page).as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    if os.environ.get("UPDATE_SCREENSHOT"):
        shutil.copyfile(shot, SCREENSHOT)


def _page(tmp_path: Path, page: str) -> Path:
    path = tmp_path / "doctor.html"
    path.write_text(page)
    return path

"""The Makefile's guard on the general student's collection: other GENERAL_CAPS than it was built with stop make."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _guard(out: Path, caps: str) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "-C", str(ROOT), "general-caps", f"OUT={out}", f"GENERAL_CAPS={caps}"],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_collection_built_with_other_caps_stops_make(tmp_path):
    out = tmp_path / "out"
    (out / "general").mkdir(parents=True)
    assert _guard(out, "--cap man=2000").returncode == 0                       # no .caps: built before, not checked
    (out / "general.caps").write_text("--cap man=2000\n")
    assert _guard(out, " --cap man=2000 ").returncode == 0                      # the same caps (make strips spaces)
    r = _guard(out, "--cap man=20000")
    assert r.returncode != 0
    line = next(x for x in r.stdout.splitlines() if x.startswith("make:"))
    assert "built with other GENERAL_CAPS" in line and "--cap man=2000" in line and f"{out}/general" in line

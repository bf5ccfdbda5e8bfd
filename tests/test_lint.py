"""The code passes ruff with the settings of pyproject.toml ([tool.ruff]): what `make lint` and CI check.

Skipped where ruff is not installed (it comes with the ``test`` extra).
"""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TREES = ("src", "tests", "benchmarks", "tools")


def _ruff() -> str | None:
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError:
        return shutil.which("ruff")
    try:
        return str(find_ruff_bin())
    except FileNotFoundError:
        return shutil.which("ruff")


def test_ruff_finds_nothing():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    r = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", *TREES], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"ruff check reports findings (exit {r.returncode}):\n{r.stdout}{r.stderr}"

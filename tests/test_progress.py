"""Progress of every command: a bar on a terminal, plain periodic lines (no carriage return) in a log file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def test_lines_over_an_iterable_with_postfix(monkeypatch, capsys):
    from bisent.progress import LineProgress, progress_bar

    monkeypatch.setenv("BISENT_PROGRESS_SECONDS", "0")
    bar = progress_bar(None, ["a", "b", "c"], desc="gettext en-de", unit="package")
    assert isinstance(bar, LineProgress) and bar.total == 3
    assert list(bar) == ["a", "b", "c"]
    bar.set_postfix(loss="0.5")
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0].startswith("gettext en-de: 1/3 package") and lines[-1].startswith("gettext en-de: 3/3 package")


def test_bar_on_a_terminal(monkeypatch, capsys):
    from tqdm import tqdm

    from bisent.progress import progress_bar

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = progress_bar(None, range(3), desc="align", unit="pair")
    assert isinstance(bar, tqdm) and not bar.disable
    assert list(bar) == [0, 1, 2]
    forced = progress_bar(True, total=2, desc="select")                   # --progress: a bar whatever stderr is
    forced.update(2)
    forced.close()
    assert "\r" in capsys.readouterr().err
    assert progress_bar(False, range(2)).disable


def test_data_builder_logs_lines_not_bars(tmp_path):
    """A data builder's page parsing with stderr sent to a file: periodic lines, no carriage return."""
    root = tmp_path / "doc"
    for lang in ("en", "de"):
        for i in range(3):
            (root / lang).mkdir(parents=True, exist_ok=True)
            (root / lang / f"p{i}.html").write_text(f"<html><body><p>Page {i} in {lang}.</p></body></html>")
    (root / "de" / "p2.html").write_text("<div>" * 5000)                   # a page nested too deeply: said, left out
    code = ("import sys; from pathlib import Path; from bisent.datasets.scale import _doc_pages; "
            "out = _doc_pages(Path(sys.argv[1]), lambda parts: (parts[0], parts[1:])); "
            "print(sorted((k, len(v)) for k, v in out.items()))")
    log = tmp_path / "log"
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, stderr=f, text=True,
                              env={**os.environ, "PYTHONPATH": SRC, "BISENT_PROGRESS_SECONDS": "0"}, check=True)
    err = log.read_text()
    assert "\r" not in err and "\x1b" not in err
    assert "parse doc: 1/6 page" in err and "parse doc: 6/6 page" in err
    assert "p2.html: nested too deeply to read; left out" in err
    assert done.stdout.strip() in ("[('de', 2), ('en', 3)]", "[('de', 3), ('en', 3)]")


def test_run_passes_auto_progress(monkeypatch, tmp_path):
    """``bisent run`` leaves the choice to the helper (bar or lines); --quiet turns both off."""
    from click.testing import CliRunner

    import bisent.run as run_mod
    from bisent.cli.run import run_cmd

    seen = []
    monkeypatch.setattr(run_mod, "run_pipeline", lambda *a, progress, **kw: seen.append(progress) or {})
    cfg = tmp_path / "run.yaml"
    cfg.write_text("run_dir: out\n")
    for args in ([], ["--quiet"]):
        res = CliRunner().invoke(run_cmd, [str(cfg), "-o", str(tmp_path / "o"), *args])
        assert res.exit_code == 0, res.output
    assert seen == [None, False]

"""docs/benchmarks.md is what benchmarks/make_page.py makes of benchmarks/results/*.jsonl (the page is not stale)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_page():
    spec = importlib.util.spec_from_file_location("make_page", ROOT / "benchmarks" / "make_page.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_page_is_current():
    mod = make_page()
    assert (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8") == mod.render(), \
        "docs/benchmarks.md is stale: run python benchmarks/make_page.py"
    assert mod.main(["--check"]) == 0


def test_check_fails_on_a_new_record(tmp_path, monkeypatch):
    """A record added after the page was written makes --check fail, and writing the page makes it pass again."""
    mod = make_page()
    results = tmp_path / "results"
    results.mkdir()
    (results / "speed.jsonl").write_text(json.dumps({
        "task": "speed", "pair": "en-de", "encoder": "x/dan", "encoder_id": next(iter(mod.PUBLISHED)),
        "sentences_per_s": 1234.0, "peak_rss_mb": 99.0, "command": "bisent bench speed --pair en-de -e x/dan",
        "commit": "abc", "machine": {"cpu": "test cpu"}}) + "\n", encoding="utf-8")
    page = tmp_path / "benchmarks.md"
    monkeypatch.setattr(mod, "RESULTS", results)
    monkeypatch.setattr(mod, "PAGE", page)
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    assert mod.main(["--check"]) == 1
    assert mod.main([]) == 0 and mod.main(["--check"]) == 0
    text = page.read_text(encoding="utf-8")
    assert "1,234" in text and "bisent bench speed --pair P -e DIR" in text and "x/dan" not in text
    with (results / "speed.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps({"task": "speed", "pair": "en-de", "encoder": "x/dan",
                            "encoder_id": next(iter(mod.PUBLISHED)), "sentences_per_s": 2000.0, "peak_rss_mb": 99.0,
                            "command": "bisent bench speed --pair en-de -e x/dan", "commit": "abd",
                            "machine": {"cpu": "test cpu"}}) + "\n")
    assert mod.main(["--check"]) == 1


def test_page_names_no_private_folders():
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    for bad in ("out/", "cmp/", "session ", "issue "):
        assert bad not in text

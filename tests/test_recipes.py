"""The installed recipes (bisent.recipes): listed, short, resolved by name or path, and --set on filter and run."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from bisent import recipes
from bisent.cli import main
from bisent.errors import BisentError

ROOT = Path(__file__).resolve().parent.parent


def test_every_recipe_is_short_described_and_packaged():
    assert {"distill-dan", "filter-default", "run-default", "student-general", "zhang2016"} <= set(recipes.names())
    for name in recipes.names():
        lines = (recipes.HERE / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
        assert len(lines) <= 60, f"{name}.yaml: {len(lines)} lines"
        assert lines[0].startswith("# ") and recipes.describe(name) == lines[0][2:].strip()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "*.yaml" in data["tool"]["setuptools"]["package-data"]["bisent.recipes"]
    assert not (ROOT / "recipes").exists()                       # one copy: the package's


def test_resolve_by_name_or_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert recipes.resolve("distill-dan") == recipes.HERE / "distill-dan.yaml"
    assert recipes.resolve("distill-dan.yaml") == recipes.HERE / "distill-dan.yaml"
    (tmp_path / "distill-dan.yaml").write_text("architecture: dan\n")
    assert recipes.resolve("distill-dan.yaml") == Path("distill-dan.yaml")          # a file as given wins
    assert recipes.resolve("sub/missing.yaml") == Path("sub/missing.yaml")        # a path: the loader reports it
    with pytest.raises(BisentError, match="no-such: no such file, nor an installed recipe.*distill-dan"):
        recipes.resolve("no-such")
    from bisent.training.recipe import load_recipe
    assert load_recipe("guo2019-dan", ["seed=3"])["seed"] == 3
    with pytest.raises(BisentError, match="no such recipe file"):
        load_recipe("sub/missing.yaml")


def test_bisent_recipes_lists_and_prints(capsys):
    assert main(["recipes"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == len(recipes.names())
    assert any(r.startswith("filter-default ") and "filter" in r for r in rows)
    assert main(["recipes", "run-default"]) == 0
    assert capsys.readouterr().out == (recipes.HERE / "run-default.yaml").read_text(encoding="utf-8")
    assert main(["recipes", "nope"]) == 2
    assert "bisent: error: nope: no such file, nor an installed recipe" in capsys.readouterr().err


def test_set_keys_through_steps_by_name_type_or_index():
    steps = [{"type": "duplicate"}, {"type": "length", "max_length": 200}, {"name": "cosine", "type": "cosine"},
             {"type": "numbers"}, {"type": "numbers"}]
    out = recipes.set_keys(steps, {"cosine.accept.min": 0.4, "length.max_length": 9, "0.x": 1})
    assert out[2]["accept"] == {"min": 0.4} and out[1]["max_length"] == 9 and out[0]["x"] == 1
    assert steps[1]["max_length"] == 200 and "accept" not in steps[2]            # the input is not changed
    assert recipes.set_keys({"align": {"encoder": "use-m3"}}, [("align.encoder", "x"), ("documents.pairs", "p")]) \
        == {"align": {"encoder": "x"}, "documents": {"pairs": "p"}}
    with pytest.raises(BisentError, match="f.yaml: --set numbers.x: more than one step 'numbers'"):
        recipes.set_keys(steps, {"numbers.x": 1}, "f.yaml")
    with pytest.raises(BisentError, match="--set lid.x: no step or index 'lid'"):
        recipes.set_keys(steps, {"lid.x": 1})
    with pytest.raises(BisentError, match="'length.max_length' is a value, not a section"):
        recipes.set_keys(steps, {"length.max_length.x": 1})


FILTER = "steps:\n  - type: duplicate\n  - name: cosine\n    type: cosine\n    encoder: char-ngram\n"


def _filter_args(tmp_path, *extra):
    src = tmp_path / "in.tsv"
    src.write_text("Open the file.\tÖffnen Sie die Datei.\nThe cat.\tDie Katze.\nThe cat.\tDie Katze.\n")
    return ["filter", str(src), "-l", "en", "-L", "de", "-o", str(tmp_path / "k.tsv"),
            "--rejected", str(tmp_path / "r.tsv"), *extra]


def test_filter_takes_filter_default_without_c(tmp_path, monkeypatch, capsys):
    import bisent.filtering as filtering

    seen = {}

    def fake(in_path, out, rejected, src, tgt, pipe, **kw):
        seen["pipe"] = pipe
        return {"kept": 0}

    monkeypatch.setattr(filtering, "filter_file", fake)
    assert main(_filter_args(tmp_path)) == 0
    assert Path(seen["pipe"]) == recipes.HERE / "filter-default.yaml"
    assert main(_filter_args(tmp_path, "-c", "filter-paracrawl")) == 0
    assert Path(seen["pipe"]) == recipes.HERE / "filter-paracrawl.yaml"


def test_filter_set_changes_a_step(tmp_path, capsys):
    cfg = tmp_path / "f.yaml"
    cfg.write_text(FILTER)
    assert main(_filter_args(tmp_path, "-c", str(cfg))) == 0
    before = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert main(_filter_args(tmp_path, "-c", str(cfg), "--set", "cosine.accept={min: 1.5}", "--no-resume")) == 0
    after = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert before["kept"] == 2 and after["kept"] == 0                       # no cosine reaches 1.5
    assert main(_filter_args(tmp_path, "-c", str(cfg), "--set", "lid.min_prob=1")) == 2
    assert "--set lid.min_prob: no step or index 'lid'" in capsys.readouterr().err


def test_run_by_name_takes_paths_from_the_current_folder(tmp_path, monkeypatch):
    from bisent.run import RunContext, _filter_config, load_run_config

    monkeypatch.chdir(tmp_path)
    config, base = load_run_config("run-default", {"align.encoder": "char-ngram"})
    assert base == tmp_path and config["align"]["encoder"] == "char-ngram"
    assert _filter_config(RunContext(config, tmp_path / "r", base)) == recipes.HERE / "filter-default.yaml"
    own = tmp_path / "conf" / "run.yaml"
    own.parent.mkdir()
    own.write_text("src_lang: en\ntgt_lang: de\nfilter: {config: filter-default}\n")
    config, base = load_run_config(own)
    assert base == own.parent
    assert _filter_config(RunContext(config, tmp_path / "r", base)) == recipes.HERE / "filter-default.yaml"
    (own.parent / "filter-default").write_text(FILTER)                        # a file beside it wins
    assert _filter_config(RunContext(config, tmp_path / "r", base)) == own.parent / "filter-default"


def test_run_set_overrides_a_section(tmp_path, capsys):
    from test_run import make_run

    cfg = make_run(tmp_path)
    strict = "{steps: [{type: duplicate}, {name: cosine, type: cosine, encoder: char-ngram, accept: {min: 1.5}}]}"
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r"), "--quiet", "--set", f"filter.config={strict}"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["filter"]["kept"] == 0 and summary["filter"]["rejected"] == summary["candidates"]["candidates"] > 0
    assert main(["run", "-c", str(cfg), "-o", str(tmp_path / "r2"), "--quiet", "--set", "align"]) == 2
    assert "--set align: expected KEY=VALUE" in capsys.readouterr().err

"""bisent filter --train-divergence: a divergence model trained on the input once, cached, then a filter step."""

import json

import pytest
import yaml

from bisent.cli import main
from bisent.errors import BisentError
from bisent.filtering import FilterPipeline
from bisent.training.fastdiv import ensure_model, has_model, with_divergence
from divergence_toys import TOY, toy_pairs

STEPS = {"steps": [{"type": "empty"}, {"name": "cos", "type": "cosine", "encoder": "char-ngram"}]}


def test_with_divergence_adds_the_step_before_the_score_step(tmp_path):
    out = with_divergence(STEPS, tmp_path / "m")
    assert [s.get("name", s["type"]) for s in out["steps"]] == ["empty", "divergence", "cos"]
    assert out["steps"][1] == {"name": "divergence", "type": "divergence", "model": str(tmp_path / "m"),
                               "min_share": 0.8}
    assert len(STEPS["steps"]) == 2                                         # the recipe itself is not changed
    with pytest.raises(BisentError, match="already has a step named 'divergence'"):
        with_divergence(out, tmp_path / "m")


@pytest.mark.slow
def test_ensure_model_trains_once_and_the_step_rejects_divergent_pairs(tmp_path):
    pytest.importorskip("torch")
    recipe = tmp_path / "toy.yaml"
    recipe.write_text(yaml.safe_dump(TOY))
    model = tmp_path / "model"
    assert ensure_model(model, toy_pairs(600, 0), "xa", "xb", recipe=str(recipe)) and has_model(model)
    stamp = (model / "model.safetensors").stat().st_mtime_ns
    assert not ensure_model(model, toy_pairs(600, 0), "xa", "xb", recipe=str(recipe))     # cached: not trained again
    assert (model / "model.safetensors").stat().st_mtime_ns == stamp
    pipe = FilterPipeline.from_config(with_divergence(STEPS, model), src_lang="xa", tgt_lang="xb")
    good = toy_pairs(20, 7)
    bad = [(s, t) for (s, _), (_, t) in zip(good, good[1:] + good[:1])]   # re-paired: every word divergent
    res = pipe.process(good + bad)
    assert sum(r.kept for r in res[:20]) >= 16 and sum(r.kept for r in res[20:]) <= 4
    assert {r.reason for r in res[20:] if not r.kept} == {"divergence"}
    with pytest.raises(BisentError, match="only 3 pairs"):
        ensure_model(tmp_path / "other", good[:3], "xa", "xb", recipe=str(recipe))


def test_filter_command_uses_a_cached_model(toy_model, tmp_path):
    _, model = toy_model
    good = toy_pairs(30, 3)
    bad = [(s, t) for (s, _), (_, t) in zip(good[:10], good[10:20])]
    (tmp_path / "in.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in good + bad))
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(STEPS))
    kept, rej = tmp_path / "kept.tsv", tmp_path / "rej.tsv"
    assert main(["filter", tmp_path / "in.tsv", "-l", "xa", "-L", "xb", "-c", tmp_path / "f.yaml", "-o", kept,
                 "--rejected", rej, "--summary", tmp_path / "s.json", "--train-divergence", model]) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    rows = [r.split("\t") for r in rej.read_text().splitlines()]
    assert len(kept.read_text().splitlines()) + len(rows) == 40 == summary["lines"]
    assert summary["rejected_by"].get("divergence", 0) >= 7 and {r[1] for r in rows} == {"divergence"}


def test_filter_command_refuses_to_train_on_other_formats(tmp_path, capsys):
    (tmp_path / "in.jsonl").write_text('{"src": "a1 a2", "tgt": "b2 b1"}\n')
    assert main(["filter", tmp_path / "in.jsonl", "-l", "xa", "-L", "xb", "-c", "filter-default", "-o",
                 tmp_path / "k.jsonl", "--rejected", tmp_path / "r.tsv", "--train-divergence", tmp_path / "m"]) == 2
    assert "training reads a src<TAB>tgt file" in capsys.readouterr().err

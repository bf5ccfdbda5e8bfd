"""Training hardening: a checkpoint is one atomic unit, a non-finite loss or number stops with a clear error,
and the model-directory contract (config keys) gives one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from bisent.errors import BisentError  # noqa: E402
from bisent.training import checkpoint  # noqa: E402
from bisent.training.loop import train  # noqa: E402
from bisent.training.recipe import load_recipe, validate_recipe  # noqa: E402

from test_training import bitext, cipher_corpus  # noqa: E402

RECIPE = {"architecture": "dan", "model": {"buckets": 2048, "embed_dim": 16, "hidden": [16], "dim": 16},
          "data": {"batch_size": 16}, "optim": {"lr": 0.003},
          "train": {"log_every": 1, "eval_every": 1000, "checkpoint_every": 2, "threads": 1}}


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))


def _losses(log: list[dict]) -> list[float]:
    return [r["loss"] for r in log if "loss" in r]


KILLER = """
import os, sys
sys.path[:0] = {path!r}
import bisent.io as bio
from test_training import bitext, cipher_corpus
from bisent.training.loop import train
from bisent.training.recipe import validate_recipe
real = os.replace
def replace(src, dst):
    if str(dst).endswith("checkpoint.safetensors") and os.path.exists(dst):
        os._exit(9)                                   # killed: the new checkpoint is written, not yet renamed
    real(src, dst)
bio.os.replace = replace
train(validate_recipe({recipe!r}), [bitext(cipher_corpus(80, seed=5))], [], [], {out!r}, max_steps=8, progress=False)
"""


def test_a_kill_inside_the_checkpoint_write_leaves_a_resumable_run(tmp_path):
    data = [bitext(cipher_corpus(80, seed=5))]
    recipe = validate_recipe(RECIPE)
    straight = train(recipe, data, [], [], tmp_path / "a", max_steps=8, progress=False)
    code = KILLER.format(path=[str(p) for p in sys.path], recipe=RECIPE, out=str(tmp_path / "b"))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=str(tmp_path), capture_output=True,
                          text=True, env={"OMP_NUM_THREADS": "1", "BISENT_CACHE": str(tmp_path / "cache"),
                                          "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}, timeout=300)
    assert proc.returncode == 9, proc.stderr[-2000:]
    assert checkpoint.read_state(tmp_path / "b")["step"] == 2       # the first checkpoint survived the kill at 4
    with pytest.raises(BisentError, match="--resume"):
        train(recipe, data, [], [], tmp_path / "b", max_steps=8, progress=False)
    resumed = train(recipe, data, [], [], tmp_path / "b", max_steps=8, resume=True, progress=False)
    assert _losses(resumed.log) == _losses(straight.log)           # bit-exact from the surviving checkpoint
    assert checkpoint.read_state(tmp_path / "b")["step"] == 8


def test_a_non_finite_loss_stops_training_naming_the_step(tmp_path, monkeypatch):
    from bisent.training.objectives import guo2019

    real, calls = guo2019.ranking_loss, []

    def poisoned(*args, **kw):
        loss, parts = real(*args, **kw)
        calls.append(1)
        return (loss * float("nan") if len(calls) == 5 else loss), parts

    monkeypatch.setattr(guo2019, "ranking_loss", poisoned)
    with pytest.raises(BisentError) as e:
        train(validate_recipe(RECIPE), [bitext(cipher_corpus(80, seed=5))], [], [], tmp_path / "m", max_steps=8,
              progress=False)
    msg = str(e.value)
    assert "step 5" in msg and "nan" in msg and "\n" not in msg, msg
    assert checkpoint.read_state(tmp_path / "m")["step"] == 4        # the last good checkpoint is kept


@pytest.mark.parametrize("override", ["optim.lr=.nan", "optim.lr=.inf", "optim.eps=-.inf", "optim.clip=.nan",
                                      "optim.betas=[0.9, .nan]", "objectives.margin=.nan"])
def test_non_finite_numbers_in_a_recipe_are_refused(override):
    with pytest.raises(BisentError) as e:
        load_recipe("recipes/guo2019-dan.yaml", [override])
    msg = str(e.value)
    assert override.split("=")[0] in msg and "\n" not in msg, msg


def test_cli_refuses_a_nan_override_in_one_line(tmp_path, capsys):
    from bisent.cli import main

    tsv = tmp_path / "t.en-de.tsv"
    tsv.write_text("a\tb\nc\td\n")
    assert main(["train", "--recipe", "recipes/guo2019-dan.yaml", "--train", str(tsv), "-o", str(tmp_path / "o"),
                 "--set", "optim.lr=.nan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "optim.lr" in err[0] and "finite" in err[0], err


def test_config_keys_unknown_or_missing_give_one_line(tmp_path):
    from bisent.encoders.trained import load_model_dir
    from bisent.models.dual import DAN, save_dual

    save_dual(DAN(dim=8, buckets=1024, embed_dim=8, hidden=[8]), tmp_path / "m")
    cfg_path = tmp_path / "m" / "config.json"
    good = json.loads(cfg_path.read_text())
    for change, word in (({"colour": "red"}, "unknown key(s) colour"), ({"embed_dim": None}, "missing key(s) embed_dim")):
        hp = {k: v for k, v in {**good["model"], **change}.items() if v is not None}
        cfg_path.write_text(json.dumps({**good, "model": hp}))
        with pytest.raises(BisentError) as e:
            load_model_dir(tmp_path / "m")
        assert word in str(e.value) and str(cfg_path) in str(e.value) and "\n" not in str(e.value)

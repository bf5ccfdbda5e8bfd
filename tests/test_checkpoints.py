"""Training hardening: a checkpoint is one atomic unit, a non-finite loss or number stops with a clear error,
and the model-directory contract (config keys) gives one-line errors."""

from __future__ import annotations

import hashlib
import json
import os

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


def _killed_inside_the_second_checkpoint_write(out_dir) -> int:
    """Train in a forked child that dies (``os._exit``, like kill -9) after the new checkpoint is written to its
    temporary file and before it is renamed into place; returns the child's exit status."""
    pid = os.fork()
    if pid == 0:                                                    # the child
        real = os.replace

        def replace(src, dst):
            if str(dst).endswith(checkpoint.FILE) and os.path.exists(dst):
                os._exit(9)
            real(src, dst)

        os.replace = replace
        try:
            train(validate_recipe(RECIPE), [bitext(cipher_corpus(80, seed=5))], [], [], out_dir, max_steps=8,
                  progress=False)
        finally:
            os._exit(1)                                             # not killed: the test fails
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_kill_inside_the_checkpoint_write_leaves_a_resumable_run(tmp_path):
    data = [bitext(cipher_corpus(80, seed=5))]
    recipe = validate_recipe(RECIPE)
    straight = train(recipe, data, [], [], tmp_path / "a", max_steps=8, progress=False)
    assert _killed_inside_the_second_checkpoint_write(tmp_path / "b") == 9
    assert checkpoint.read_state(tmp_path / "b")["step"] == 2       # the first checkpoint survived the kill at 4
    with pytest.raises(BisentError, match="--resume"):
        train(recipe, data, [], [], tmp_path / "b", max_steps=8, progress=False)
    resumed = train(recipe, data, [], [], tmp_path / "b", max_steps=8, resume=True, progress=False)
    assert _losses(resumed.log) == _losses(straight.log)           # bit-exact from the surviving checkpoint
    assert checkpoint.read_state(tmp_path / "b")["step"] == 8


def test_a_first_wave_checkpoint_resumes(tmp_path):
    """The first wave kept the JSON state in ``checkpoint.json`` beside the tensors: still resumable."""
    from safetensors.torch import load, save

    data, recipe = [bitext(cipher_corpus(80, seed=5))], validate_recipe(RECIPE)
    straight = train(recipe, data, [], [], tmp_path / "a", max_steps=6, progress=False)
    train(recipe, data, [], [], tmp_path / "b", max_steps=4, progress=False)
    path = tmp_path / "b" / checkpoint.FILE
    state = checkpoint.read_state(tmp_path / "b")
    blob = save(load(path.read_bytes()))                             # the same tensors, no state inside
    path.write_bytes(blob)
    optim = state.pop("optim")
    (tmp_path / "b" / "checkpoint.json").write_text(json.dumps(
        {**state, "optim": optim[0], "optim_more": optim[1:], "tensors_sha256": hashlib.sha256(blob).hexdigest()}))
    resumed = train(recipe, data, [], [], tmp_path / "b", max_steps=6, resume=True, progress=False)
    assert _losses(resumed.log) == _losses(straight.log)
    assert not (tmp_path / "b" / "checkpoint.json").exists() and checkpoint.read_state(tmp_path / "b")["step"] == 6


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
        load_recipe("guo2019-dan", [override])
    msg = str(e.value)
    assert override.split("=")[0] in msg and "\n" not in msg, msg


@pytest.mark.parametrize("override", ["data.domain_weights={dict: -1}", "data.domain_weights={dict: .nan}",
                                      "data.domain_weights={dict: yes}", "data.domain_weights={dict: '2'}"])
def test_bad_domain_weights_are_refused_when_the_recipe_loads(override):
    """Not minutes later, after the teacher's cache is filled, when the streams are built."""
    with pytest.raises(BisentError, match=r"data\.domain_weights\.dict") as e:
        load_recipe("student-general", [override])
    assert "\n" not in str(e.value)
    assert load_recipe("student-general", ["data.domain_weights={dict: 2, ui: 0}"])["data"][
        "domain_weights"] == {"dict": 2, "ui": 0}


def test_cli_refuses_a_nan_override_in_one_line(tmp_path, capsys):
    from bisent.cli import main

    tsv = tmp_path / "t.en-de.tsv"
    tsv.write_text("a\tb\nc\td\n")
    assert main(["train", "-c", "guo2019-dan", "--train", str(tsv), "-o", str(tmp_path / "o"),
                 "--set", "optim.lr=.nan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "optim.lr" in err[0] and "finite" in err[0], err


def test_config_keys_unknown_or_missing_give_one_line(tmp_path):
    from bisent.encoders.trained import load_model_dir
    from bisent.models.dual import DAN, save_dual

    save_dual(DAN(dim=8, buckets=1024, embed_dim=8, hidden=[8]), tmp_path / "m")
    cfg_path = tmp_path / "m" / "config.json"
    good = json.loads(cfg_path.read_text())
    for change, word in (({"colour": "red"}, "unknown key(s) colour"),
                         ({"embed_dim": None}, "missing key(s) embed_dim")):
        hp = {k: v for k, v in {**good["model"], **change}.items() if v is not None}
        cfg_path.write_text(json.dumps({**good, "model": hp}))
        with pytest.raises(BisentError) as e:
            load_model_dir(tmp_path / "m")
        assert word in str(e.value) and str(cfg_path) in str(e.value) and "\n" not in str(e.value)


def test_cjk_n_min_is_checked_when_the_recipe_loads():
    """model.cjk_n_min: 0 (off) or below n_min; a bad value is a one-line error naming the key."""
    assert load_recipe("student-general", ["model.cjk_n_min=1"])["model"]["cjk_n_min"] == 1
    for bad in ("model.cjk_n_min=3", "model.cjk_n_min=-1"):
        with pytest.raises(BisentError, match=r"model\.cjk_n_min") as e:
            load_recipe("student-general", [bad])
        assert "\n" not in str(e.value)


def test_write_safetensors_is_read_back_by_safetensors(tmp_path):
    """The streamed writer (no whole-file bytes object in memory; checkpoints and model directories) writes the
    format safetensors reads: every dtype a training state holds, a 0-d and an empty tensor, a non-contiguous
    one, and the metadata; NumPy arrays likewise; every tensor starts at a multiple of its item size."""
    import json

    import numpy as np
    from safetensors import safe_open
    from safetensors.numpy import load_file as load_numpy
    from safetensors.torch import load_file

    from bisent.models.modeldir import write_safetensors

    def data_starts(path):
        raw = path.read_bytes()
        head_len = int.from_bytes(raw[:8], "little")
        assert head_len % 8 == 0                                    # the header padded to 8 bytes, then the data
        head = json.loads(raw[8:8 + head_len])
        return {k: v["data_offsets"][0] for k, v in head.items() if k != "__metadata__"}, 8 + head_len

    g = torch.Generator().manual_seed(0)
    tensors = {"half": torch.randn(3, generator=g).half(), "w": torch.randn(5, 3, generator=g),
               "bf": torch.randn(3, generator=g).bfloat16(), "step": torch.tensor(7.0),
               "ids": torch.arange(6, dtype=torch.int64), "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
               "rng": torch.get_rng_state(), "mask": torch.tensor([True, False, True]),
               "empty": torch.zeros(0, 4), "t": torch.randn(3, 5, generator=g).t()}     # .t(): not contiguous
    path = tmp_path / "x.safetensors"
    with open(path, "wb") as f:
        checkpoint.write_safetensors(f, tensors, metadata={"k": "v"})
    back = load_file(path)
    assert set(back) == set(tensors)
    for name, t in tensors.items():
        assert back[name].dtype == t.dtype and back[name].shape == t.shape and torch.equal(back[name], t), name
    with safe_open(path, framework="pt") as f:
        assert f.metadata() == {"k": "v"}
    starts, head_end = data_starts(path)
    assert all(starts[k] % tensors[k].element_size() == 0 for k in tensors)   # 3 float16 before float32: moved
    assert path.stat().st_size == head_end + sum(t.numel() * t.element_size() for t in tensors.values())

    rng = np.random.default_rng(0)
    arrays = {"q": rng.integers(-127, 128, (7, 3)).astype(np.int8), "h": rng.normal(size=5).astype(np.float16),
              "s": rng.normal(size=(7, 1)).astype(np.float32), "m": np.array([True, False]),
              "z": np.float32(2.5).reshape(()), "e": np.zeros((0, 2), np.float64),
              "ft": np.asfortranarray(rng.normal(size=(3, 4)))}                 # not C-contiguous
    path = tmp_path / "y.safetensors"
    with open(path, "wb") as f:
        write_safetensors(f, arrays, metadata={"architecture": "dan"})
    back = load_numpy(path)
    assert set(back) == set(arrays)
    for name, a in arrays.items():
        assert back[name].dtype == a.dtype and back[name].shape == a.shape and np.array_equal(back[name], a), name
    starts, head_end = data_starts(path)
    assert all(starts[k] % arrays[k].dtype.itemsize == 0 for k in arrays)
    assert path.stat().st_size == head_end + sum(a.nbytes for a in arrays.values())


def test_a_truncated_checkpoint_is_a_one_line_error(tmp_path):
    data = [bitext(cipher_corpus(80, seed=5))]
    recipe = validate_recipe(RECIPE)
    train(recipe, data, [], [], tmp_path / "a", max_steps=2, progress=False)
    path = tmp_path / "a" / checkpoint.FILE
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(BisentError, match="corrupt safetensors file"):
        train(recipe, data, [], [], tmp_path / "a", max_steps=4, resume=True, progress=False)

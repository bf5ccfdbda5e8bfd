"""Dual encoders: the Guo et al. ranking loss against Eq. 1-2, hashed features, distillation, adapters,
model directories, resumable runs. Tiny models on a toy corpus; seconds on 2 CPU cores."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bisent.encoders import get_encoder  # noqa: E402
from bisent.encoders.trained import load_model_dir  # noqa: E402
from bisent.errors import BisentError  # noqa: E402
from bisent.models.dual import DAN, Adapter, HashTransformer, TorchDualEncoder, load_dual, save_dual  # noqa: E402
from bisent.models.hashing import CYRILLIC_LATIN, HashFeaturizer, _transliterate  # noqa: E402
from bisent.training import checkpoint  # noqa: E402
from bisent.training.data import Monotext  # noqa: E402
from bisent.training.loop import train  # noqa: E402
from bisent.training.objectives.distill import contrast_loss, distill_loss  # noqa: E402
from bisent.training.objectives.guo2019 import duplicate_mask, ranking_loss  # noqa: E402
from bisent.training.recipe import load_recipe, validate_recipe  # noqa: E402
from test_training import bitext, cipher_corpus  # noqa: E402

TINY_DAN = {"buckets": 4096, "embed_dim": 32, "hidden": [64]}
TINY = {"data": {"batch_size": 32}, "optim": {"lr": 0.003},
        "train": {"log_every": 10, "eval_every": 1000, "checkpoint_every": 1000, "threads": 1}}


@pytest.fixture(autouse=True)
def _isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("BISENT_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def corpus():
    rows = cipher_corpus(300, seed=3)
    return rows[:240], rows[240:]


# --- Eq. 1-2 ------------------------------------------------------------------------------------------

def eq1_direct(x, y, m, s=1.0, extra=None, masked=()):
    """Eq. 1 written out term by term:
    -1/K sum_i log e^{s(x_i.y_i - m)} / (e^{s(x_i.y_i - m)} + sum_{k != i} e^{s x_i.y_k})."""
    K = len(x)
    total = 0.0
    for i in range(K):
        pos = math.exp(s * (float(x[i] @ y[i]) - m))
        neg = sum(math.exp(s * float(x[i] @ y[k])) for k in range(K) if k != i and (i, k) not in masked)
        if extra is not None:
            neg += sum(math.exp(s * float(x[i] @ e)) for e in extra)
        total += math.log(pos / (pos + neg))
    return -total / K


@pytest.mark.parametrize("scale", [1.0, 5.0])
def test_ranking_loss_is_eq1_plus_eq2(scale):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(6, 8, generator=g, dtype=torch.float64), torch.randn(6, 8, generator=g, dtype=torch.float64)
    x, y = x / x.norm(dim=1, keepdim=True), y / y.norm(dim=1, keepdim=True)
    loss, parts = ranking_loss(x, y, scale=scale, margin=0.3)
    fwd, bwd = eq1_direct(x, y, 0.3, scale), eq1_direct(y, x, 0.3, scale)   # Eq. 2: backward swaps x and y
    assert parts["loss_fwd"] == pytest.approx(fwd, rel=1e-9)
    assert parts["loss_bwd"] == pytest.approx(bwd, rel=1e-9)
    assert float(loss) == pytest.approx(fwd + bwd, rel=1e-9)
    # hard negatives: extra candidates for every row, sources for the backward direction, targets forward
    xh, yh = torch.randn(3, 8, generator=g, dtype=torch.float64), torch.randn(3, 8, generator=g, dtype=torch.float64)
    loss_h, _ = ranking_loss(x, y, scale=scale, margin=0.3, x_hard=xh, y_hard=yh)
    assert float(loss_h) == pytest.approx(eq1_direct(x, y, 0.3, scale, yh) + eq1_direct(y, x, 0.3, scale, xh), rel=1e-9)
    assert float(loss_h) > float(loss)


def test_duplicate_texts_are_not_negatives():
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(4, 5, generator=g, dtype=torch.float64), torch.randn(4, 5, generator=g, dtype=torch.float64)
    ids = torch.tensor([0, 1, 0, 2])                          # targets 0 and 2 are the same text
    mask = duplicate_mask(ids, 4)
    assert mask.tolist() == [[False, False, True, False], [False] * 4, [True, False, False, False], [False] * 4]
    loss, parts = ranking_loss(x, y, margin=0.2, fwd_mask=mask)
    assert parts["loss_fwd"] == pytest.approx(eq1_direct(x, y, 0.2, masked={(0, 2), (2, 0)}), rel=1e-9)


def test_distill_loss():
    t = torch.nn.functional.normalize(torch.randn(4, 6), dim=1)
    assert float(distill_loss(t, t, t)) == 0.0
    assert float(distill_loss(t, -t, t, "cosine")) == pytest.approx(1.0)
    assert float(distill_loss(2 * t, t, t, "mse")) == pytest.approx(0.5)             # (||t||^2 + 0) / 2


def test_contrast_loss_rewards_finding_the_own_teacher_row_and_skips_duplicates():
    g = torch.Generator().manual_seed(3)
    t = torch.nn.functional.normalize(torch.randn(8, 16, generator=g, dtype=torch.float64), dim=1)
    near, far = contrast_loss(3 * t, t), contrast_loss(t.roll(1, dims=0), t)          # scale and length do not matter
    assert near < 0.5 < 3 < far
    s = torch.randn(8, 16, generator=g, dtype=torch.float64)
    t[5] = t[2]                                                                        # rows 2 and 5: the same text
    mask = duplicate_mask(torch.tensor([0, 1, 2, 3, 4, 2, 6, 7]), 8)
    logits = 20 * torch.nn.functional.normalize(s, dim=1) @ t.T
    direct = [-(logits[i, i] - torch.logsumexp(logits[i, [j for j in range(8) if j == i or not mask[i, j]]], 0))
              for i in range(8)]
    assert float(contrast_loss(s, t, mask=mask)) == pytest.approx(float(torch.stack(direct).mean()), rel=1e-9)
    assert float(contrast_loss(s, t)) > float(contrast_loss(s, t, mask=mask))


# --- hashed features ----------------------------------------------------------------------------------

def test_hashed_features_match_the_regex_tokens_and_do_not_depend_on_the_batch():
    f = HashFeaturizer(buckets=1 << 20, word_ngrams=2)
    texts = ["Hello, World!", "", "über Straße  naïve 2x_y", "a\nb", "日本語 テキスト", "emoji 🙂 ok", "x" * 3]
    n_tok = f._spans(texts).n_tok
    assert n_tok.tolist() == [len(re.findall(r"\w+|[^\w\s]", t.lower())) for t in texts]
    batch = f.bags(texts)
    for i, t in enumerate(texts):
        one = f.bags([t])
        assert np.array_equal(one.ids, batch.ids[batch.offsets[i]:batch.offsets[i] + batch.counts[i]])
    # word order and spacing change bigrams only
    uni = HashFeaturizer(buckets=1 << 20, word_ngrams=1)
    assert sorted(uni.bags(["red fox"]).ids) == sorted(uni.bags(["fox   red"]).ids)
    assert sorted(f.bags(["red fox"]).ids) != sorted(f.bags(["fox red"]).ids)
    assert sorted(f.bags(["a,b"]).ids) == sorted(f.bags(["a , b"]).ids)
    # a fixed function of the text: the same ids in every process and on every machine
    assert f.bags(["Hello"]).ids.tolist()[:3] == GOLDEN_HELLO


GOLDEN_HELLO = [738497, 560674, 311750]   # word <hello>, then character 3-grams <he, hel


def test_golden_ids_are_what_the_featurizer_gives():
    """Keeps GOLDEN_HELLO honest: word first, then n-grams by n and position."""
    f = HashFeaturizer(buckets=1 << 20, word_ngrams=2)
    assert len(f.bags(["Hello"]).ids) == 1 + (7 - 3 + 1) + (7 - 4 + 1) + (7 - 5 + 1)


def test_cjk_characters_get_features_of_their_own_only_when_asked():
    """cjk_n_min=1: a token with Han/kana/Hangul characters also gets its characters (without the boundary marks)
    and character pairs, so two orders of the same characters share features; other tokens are untouched."""
    off = HashFeaturizer(buckets=1 << 20)
    on = HashFeaturizer(buckets=1 << 20, cjk_n_min=1)
    shared = [len(set(f.bags(["我爱你"]).ids) & set(f.bags(["你爱我"]).ids)) for f in (off, on)]
    assert shared == [0, 3]                                          # 我, 爱, 你
    assert on.bags(["我爱你"]).counts.tolist() == [off.bags(["我爱你"]).counts[0] + 3 + 4]   # + <我 我爱 爱你 你>
    latin = ["Das ist ein Haus, gebaut 1999.", "naïve Straße"]
    a, b = off.bags(latin), on.bags(latin)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.counts, b.counts)
    mixed = ["Datei 文件 öffnen", "ファイルを開く", "한국어 텍스트"]
    assert (on.bags(mixed).counts - off.bags(mixed).counts).tolist() == [2 + 3, 7 + 8, 3 + 4 + 3 + 4]
    grams_off, words_off, _ = off.tokens(mixed)
    grams_on, words_on, _ = on.tokens(mixed)
    assert np.array_equal(words_off, words_on) and grams_on.counts[0] == grams_off.counts[0]   # "datei" unchanged
    with pytest.raises(ValueError, match="cjk_n_min"):
        HashFeaturizer(cjk_n_min=3)                                  # must be below n_min


def test_cyrillic_tokens_get_their_transliteration_s_features_only_when_asked():
    """translit: a Cyrillic token also gets the word and n-gram ids of its Latin spelling, the ids the English
    token has (Байкал / Baikal share every feature of the English one); other tokens are untouched."""
    off = HashFeaturizer(buckets=1 << 20)
    on = HashFeaturizer(buckets=1 << 20, translit=True)
    assert not set(off.bags(["Байкал"]).ids) & set(off.bags(["Baikal"]).ids)
    assert set(on.bags(["Baikal"]).ids) <= set(on.bags(["Байкал"]).ids)
    assert on.bags(["Байкал"]).counts[0] == 2 * off.bags(["Байкал"]).counts[0]      # baikal: as many as байкал
    assert "Щука, объём".translate(CYRILLIC_LATIN) == "Shchuka, obem"
    latin = ["Das ist ein Haus, gebaut 1999.", "naïve Straße", "日本語"]
    a, b = off.bags(latin), on.bags(latin)
    assert np.array_equal(a.ids, b.ids) and np.array_equal(a.counts, b.counts)
    texts = ["Озеро Байкал ok", "ь и ъ", "Київ, їжак"]                # a lone soft sign transliterates to nothing
    batch = on.bags(texts)
    for i, t in enumerate(texts):                                    # the same features alone and in a batch
        np.testing.assert_array_equal(on.bags([t]).ids, batch.ids[batch.offsets[i]:batch.offsets[i] + batch.counts[i]])
    grams_off, words_off, n_off = off.tokens(texts[:1])
    grams_on, words_on, n_on = on.tokens(texts[:1])
    assert np.array_equal(words_off, words_on) and np.array_equal(n_off, n_on)
    assert (grams_on.counts - grams_off.counts).tolist() == [1 + 5 + 4 + 3, 1 + 6 + 5 + 4, 0]  # <ozero>, <baikal>
    with pytest.raises(ValueError, match="translit"):
        HashFeaturizer(translit="yes")


def test_a_hash_seed_keeps_the_features_and_changes_which_of_them_collide():
    """hash_seed 0 is the hashing as it was; another seed gives every text the same number of features in other
    buckets, and features that share a bucket under one seed (about as many under each) almost never share one
    under another: the point of members with different hash seeds in an ensemble."""
    texts = ["Islanda è un paese", "Озеро Байкал ok", "東京都の天気", "das ist ein Haus"]
    kw = dict(buckets=1 << 20, translit=True, cjk_n_min=1)
    base, zero, other = HashFeaturizer(**kw), HashFeaturizer(**kw, hash_seed=0), HashFeaturizer(**kw, hash_seed=7)
    assert np.array_equal(base.bags(texts).ids, zero.bags(texts).ids)
    a, b = base.bags(texts), other.bags(texts)
    assert np.array_equal(a.counts, b.counts) and np.mean(a.ids == b.ids) < 0.01
    assert np.array_equal(base.tokens(texts)[2], other.tokens(texts)[2])
    words = [f"w{i}x{i * 7919 % 10007}" for i in range(20000)]                 # 20,000 distinct one-token texts
    small = dict(buckets=1 << 12, n_min=1, n_max=0, word_ngrams=1)            # the whole token only: one id each

    def colliding(seed):
        ids = HashFeaturizer(**small, hash_seed=seed).bags(words).ids
        order = np.argsort(ids, kind="stable")
        same = np.flatnonzero(ids[order][1:] == ids[order][:-1])
        return {(int(order[i]), int(order[i + 1])) for i in same}              # neighbours in one bucket

    c0, c1, c2 = colliding(0), colliding(1), colliding(2)
    assert 0.8 < len(c1) / len(c0) < 1.25 and 0.8 < len(c2) / len(c0) < 1.25
    assert len(c0 & c1) < 0.01 * len(c0) and len(c1 & c2) < 0.01 * len(c1)
    with pytest.raises(ValueError, match="hash_seed"):
        HashFeaturizer(hash_seed=-1)


def test_the_array_transliteration_is_str_translate():
    """_transliterate (the featurizer's vectorised CYRILLIC_LATIN) spells every code point as str.translate does:
    the whole Cyrillic block (mapped letters, unmapped ones, signs that vanish), Latin, CJK, astral and newlines."""
    text = "".join(chr(c) for c in range(0x3F0, 0x530)) + "\nABC ok ёЁ щ ъ日本😀\n" + "Щука, объём — Київ"
    cp = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    assert "".join(map(chr, _transliterate(cp))) == text.translate(CYRILLIC_LATIN)
    assert len(_transliterate(cp[:0])) == 0


def test_a_model_saved_before_cjk_n_min_loads_with_it_off(tmp_path):
    """config.json of older DAN directories has no cjk_n_min, translit or hash_seed: they load, with them off."""
    torch.manual_seed(0)
    save_dual(DAN(dim=16, **TINY_DAN).eval(), tmp_path / "m")
    texts = _texts() + ["日本語のテキスト"]
    before = load_model_dir(tmp_path / "m").encode(texts, "en", cache=False)
    cfg_path = tmp_path / "m" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    assert cfg["model"].pop("cjk_n_min") == 0 and cfg["model"].pop("translit") is False
    assert cfg["model"].pop("hash_seed") == 0
    cfg_path.write_text(json.dumps(cfg))
    old = load_model_dir(tmp_path / "m")
    assert old.featurizer.config.cjk_n_min == 0 and old.featurizer.config.translit is False
    assert old.featurizer.config.hash_seed == 0
    np.testing.assert_array_equal(old.encode(texts, "en", cache=False), before)
    module, _ = load_dual(tmp_path / "m")
    assert module.featurizer.config.cjk_n_min == 0


# --- models and model directories ---------------------------------------------------------------------

def _texts():
    return ["Hello world", "", "Guten Tag, Welt!", "Bonjour le monde", "x", "你好，世界", "Привет, мир"]


#: tiny torch dual models that save and load (the round-trip tests run on each)
TINY_MODELS = [
    lambda: DAN(dim=16, **TINY_DAN),
    lambda: DAN(dim=16, cjk_n_min=1, **TINY_DAN),
    lambda: DAN(dim=16, translit=True, **TINY_DAN),
    lambda: DAN(dim=16, hash_seed=5, **TINY_DAN),
    lambda: HashTransformer(dim=16, buckets=4096, embed_dim=8, d_model=16, heads=2, ff_dim=32, layers=1),
]


@pytest.mark.parametrize("make", TINY_MODELS)
def test_save_load_round_trip(make, tmp_path):
    from safetensors.torch import load_file

    torch.manual_seed(0)
    model = make().eval()
    save_dual(model, tmp_path / "m")
    stored = load_file(str(tmp_path / "m" / "model.safetensors"))
    assert all(torch.equal(stored[k], v) for k, v in model.state_dict().items())          # weights bit-identical
    live = TorchDualEncoder(model, name="live", content_hash="x").encode(_texts(), "en", cache=False)
    loaded = load_model_dir(tmp_path / "m")
    again = load_model_dir(tmp_path / "m")
    a, b = loaded.encode(_texts(), "en", cache=False), again.encode(_texts(), "en", cache=False)
    assert np.array_equal(a, b) and loaded.id == again.id and loaded.id.startswith(model.architecture + "/")
    np.testing.assert_allclose(a, live, atol=1e-6)                                           # NumPy DAN vs torch
    if model.architecture == "dan":                                                          # the torch-free path
        loaded._torch = None
        np.testing.assert_allclose(loaded.encode(_texts(), "en", cache=False), a, atol=1e-6)
    model2, digest = load_dual(tmp_path / "m")
    assert digest[:20] in loaded.id
    assert all(torch.equal(v, model2.state_dict()[k]) for k, v in model.state_dict().items())
    # the id follows the weights
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    save_dual(model, tmp_path / "m2")
    assert load_model_dir(tmp_path / "m2").id != loaded.id


@pytest.mark.parametrize("make", TINY_MODELS)
def test_half_weights_halve_the_directory_and_load_as_float32(make, tmp_path):
    torch.manual_seed(0)
    model = make().eval()
    save_dual(model, tmp_path / "full")
    save_dual(model, tmp_path / "half", half=True)
    full, half = ((tmp_path / d / "model.safetensors").stat().st_size for d in ("full", "half"))
    assert half < 0.55 * full
    a = load_model_dir(tmp_path / "full").encode(_texts(), "en", cache=False)
    b = load_model_dir(tmp_path / "half").encode(_texts(), "en", cache=False)
    assert b.dtype == np.float32 and load_model_dir(tmp_path / "half").id != load_model_dir(tmp_path / "full").id
    np.testing.assert_allclose(b, a, atol=2e-2)                                             # float16 rounding only
    assert not np.array_equal(a, b)
    model2, _ = load_dual(tmp_path / "half")                                                # torch path: float32 too
    for k, v in model2.state_dict().items():
        assert v.dtype == torch.float32
        assert torch.equal(v, model.state_dict()[k].half().float())
    if model.architecture == "dan":
        enc = load_model_dir(tmp_path / "half")
        assert enc.rows.dtype == np.float32
        enc._torch = None                                                                     # the NumPy path
        np.testing.assert_allclose(enc.encode(_texts(), "en", cache=False), b, atol=1e-5)


def test_int8_rows_in_blocks_equal_the_whole_table_formula(monkeypatch):
    """Quantised in blocks of rows (bounded temporaries), a table gets exactly the one-shot formula's bytes."""
    from bisent.models import modeldir

    v = np.random.default_rng(0).normal(size=(modeldir.INT8_MIN_ROWS + 1000, 8)).astype(np.float32)
    v[17] = 0.0                                                                         # an all-zero row: scale 1
    monkeypatch.setattr(modeldir, "_INT8_BLOCK", 1000)                                  # 6 blocks, the last short
    (_, q), (_, scale) = modeldir._int8_rows("t", v)
    want_scale = np.abs(v).max(axis=1, keepdims=True).astype(np.float32) / 127.0
    want_scale[want_scale == 0] = 1.0
    np.testing.assert_array_equal(scale, want_scale)
    np.testing.assert_array_equal(q, np.clip(np.rint(v / want_scale), -127, 127).astype(np.int8))
    assert q.dtype == np.int8 and scale.dtype == np.float32 and scale[17, 0] == 1.0


def test_int8_tables_quarter_the_table_and_load_as_float32(tmp_path, monkeypatch):
    """int8 storage: every table of at least INT8_MIN_ROWS rows becomes int8 rows + a float32 scale a row;
    read back, each weight is within half a step of its float32 value and the student encodes as before."""
    from safetensors.numpy import load_file

    from bisent.models import modeldir

    torch.manual_seed(0)
    model = TINY_MODELS[0]().eval()
    assert model.architecture == "dan"
    monkeypatch.setattr(modeldir, "INT8_MIN_ROWS", 64)
    save_dual(model, tmp_path / "half", half=True)
    save_dual(model, tmp_path / "q8", int8=True)
    stored = load_file(str(tmp_path / "q8" / "model.safetensors"))
    table = model.state_dict()["embed.weight"].numpy()                                     # (buckets, E)
    assert table.shape[0] >= 64 and stored["embed.weight.int8"].dtype == np.int8
    assert "embed.weight" not in stored and stored["embed.weight.int8_scale"].shape == (table.shape[0], 1)
    half, q8 = ((tmp_path / d / "model.safetensors").stat().st_size for d in ("half", "q8"))
    assert q8 < 0.6 * half
    _, back = modeldir.read_safetensors(tmp_path / "q8" / "model.safetensors")
    step = np.abs(table).max(axis=1, keepdims=True) / 127
    assert back["embed.weight"].dtype == np.float32 and np.all(np.abs(back["embed.weight"] - table) <= step / 2 + 1e-7)
    a = load_model_dir(tmp_path / "half").encode(_texts(), "en", cache=False)
    b = load_model_dir(tmp_path / "q8").encode(_texts(), "en", cache=False)
    np.testing.assert_allclose(b, a, atol=3e-2)
    assert (a * b).sum(1).min() > 0.999                                                    # unit rows, same direction
    model2, _ = load_dual(tmp_path / "q8")                                                 # the torch path reads it too
    assert torch.allclose(model2.state_dict()["embed.weight"], torch.from_numpy(back["embed.weight"]))
    # a scale missing from a hand-edited file is a one-line error, not a traceback
    from safetensors.numpy import save_file
    save_file({k: v for k, v in stored.items() if not k.endswith(".int8_scale")},
              str(tmp_path / "q8" / "model.safetensors"))
    with pytest.raises(BisentError, match="model.safetensors: corrupt safetensors file .*int8_scale"):
        load_model_dir(tmp_path / "q8")


def test_an_int8_table_stays_int8_in_memory_and_encodes_as_the_float_table(tmp_path, monkeypatch):
    """A DAN saved with int8 rows keeps them as int8 (fbgemm's packed rows: E + 8 bytes a row) instead of a float32
    copy, and encodes as the dequantised table does on every path: fbgemm, gathered rows, NumPy."""
    from bisent.models import modeldir
    from bisent.models.dan import DANEncoder

    torch.manual_seed(0)
    model = DAN(dim=16, cjk_n_min=1, **TINY_DAN).eval()
    save_dual(model, tmp_path / "q8", int8=True)                               # 4096 buckets: the table is int8
    texts = _texts() + ["Die aktuelle Datei speichern"] * 3
    _, tensors = modeldir.read_safetensors(tmp_path / "q8" / "model.safetensors")      # float32, as before
    ref = DANEncoder(json.loads((tmp_path / "q8" / "config.json").read_text())["model"], tensors, name="float",
                     content_hash="f").encode(texts, "en", cache=False)
    fast = load_model_dir(tmp_path / "q8")
    assert fast._packed is not None and fast._packed.dtype == torch.uint8
    assert tuple(fast._packed.shape) == (4096, TINY_DAN["embed_dim"] + 8) and fast.rows.dtype == np.uint8
    assert fast.rows.base is not None and np.shares_memory(fast.rows, fast._packed.numpy())   # held once
    np.testing.assert_allclose(fast.encode(texts, "en", cache=False), ref, atol=1e-5)
    fast._torch = None                                                          # NumPy over the packed rows
    np.testing.assert_allclose(fast.encode(texts, "en", cache=False), ref, atol=1e-5)
    monkeypatch.setattr(DANEncoder, "_pack_for_fbgemm", lambda self: None)     # torch without fbgemm
    plain = load_model_dir(tmp_path / "q8")
    assert plain._packed is None and plain.rows.dtype == np.int8
    np.testing.assert_allclose(plain.encode(texts, "en", cache=False), ref, atol=1e-5)
    plain._torch = None                                                         # NumPy over int8 rows
    np.testing.assert_allclose(plain.encode(texts, "en", cache=False), ref, atol=1e-5)
    fast._torch = torch
    np.testing.assert_allclose(fast.encode([""], "en", cache=False)[0], ref[1], atol=1e-6)   # a batch without features


def test_a_folded_table_is_the_student_with_fewer_buckets(tmp_path):
    """With buckets / 2^s buckets a feature lands in old_bucket >> s, so folding rows that are equal within
    each group of 2^s gives exactly the original student; otherwise rows merge by their counts."""
    from student_size import bucket_counts, fold_table, folded_dir

    texts = _texts() + ["Die aktuelle Datei speichern", "Enregistrer le fichier"]
    big, small = HashFeaturizer(buckets=4096), HashFeaturizer(buckets=1024)
    assert np.array_equal(small.bags(texts).ids, big.bags(texts).ids >> 2)
    torch.manual_seed(0)
    model = DAN(dim=8, **TINY_DAN).eval()
    with torch.no_grad():
        model.embed.weight.copy_(model.embed.weight[::4].repeat_interleave(4, dim=0))   # equal within groups of 4
    save_dual(model, tmp_path / "d")
    counts = bucket_counts(big.config, texts)
    assert counts.sum() == len(big.bags(texts).ids)
    folded = folded_dir(tmp_path / "d", tmp_path / "f", 1024, counts)
    a = load_model_dir(tmp_path / "d").encode(texts, "en", cache=False)
    b = load_model_dir(folded).encode(texts, "en", cache=False)
    np.testing.assert_allclose(b, a, atol=1e-5)
    t = np.arange(8, dtype=np.float32).reshape(4, 2)                                      # 4 rows -> 2
    np.testing.assert_allclose(fold_table(t, np.array([3, 1, 0, 0]), 1), [[0.5, 1.5], [5.0, 6.0]])


def test_dan_and_adapter_load_without_torch(tmp_path):
    """The DAN and the adapter run in NumPy: an install without torch can use them."""
    import subprocess
    import sys

    torch.manual_seed(0)
    save_dual(DAN(dim=8, **TINY_DAN), tmp_path / "d")
    save_dual(Adapter("char-ngram", 1024, dim=8), tmp_path / "a")
    code = ("import sys; sys.modules['torch'] = None\n"                 # any 'import torch' now fails
            "from bisent.encoders import get_encoder\n"
            f"for d in ({str(tmp_path / 'd')!r}, {str(tmp_path / 'a')!r}):\n"
            "    print(get_encoder(d).encode(['hello world', 'hallo Welt'], 'en', cache=False).shape)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["(2,", "8)", "(2,", "8)"]


def test_broken_dual_model_dir_names_the_file(tmp_path):
    save_dual(DAN(dim=8, **TINY_DAN), tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["model"]["embed_dim"] = 33
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(BisentError, match="model.safetensors: tensor 'embed.weight' has shape"):
        load_model_dir(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"junk")
    with pytest.raises(BisentError, match="corrupt safetensors"):
        load_model_dir(tmp_path / "m")


def test_adapter_stores_only_the_projection(tmp_path):
    base = get_encoder("char-ngram")
    torch.manual_seed(0)
    ad = Adapter("char-ngram", base.dim, dim=24, hidden=[16])
    save_dual(ad, tmp_path / "a")
    cfg = json.loads((tmp_path / "a" / "config.json").read_text())
    assert cfg["model"]["base"] == "char-ngram" and cfg["base"]["id"] == base.id
    from safetensors.numpy import load_file

    assert set(load_file(str(tmp_path / "a" / "model.safetensors"))) == {f"layers.{i}.{w}" for i in (0, 1)
                                                                         for w in ("weight", "bias")}
    enc = get_encoder(str(tmp_path / "a"))
    live = TorchDualEncoder(ad, name="live", content_hash="x").encode(_texts(), "de", cache=False)
    np.testing.assert_allclose(enc.encode(_texts(), "de", cache=False), live, atol=1e-6)
    assert enc.id.endswith(base.id) and enc.dim == 24
    # a fresh linear adapter is the identity: the base's vectors exactly
    ident = Adapter("char-ngram", base.dim)
    save_dual(ident, tmp_path / "i")
    np.testing.assert_allclose(get_encoder(str(tmp_path / "i")).encode(_texts(), "en", cache=False),
                               base.encode(_texts(), "en", cache=False), atol=1e-6)


# --- training -----------------------------------------------------------------------------------------

def _recipe(**raw):
    out = {"seed": 1, **TINY, **raw}
    return validate_recipe(out)


def _mean_cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.sum(a * b, axis=1)))


def test_distilled_student_moves_towards_its_teacher(corpus, tmp_path):
    train_rows = corpus[0]
    bt = bitext(train_rows)
    recipe = _recipe(architecture="dan", objective="distill", model={**TINY_DAN, "hidden": [64]},
                     objectives={"teacher": "char-ngram"})
    before = train(recipe, [bt], [], [], tmp_path / "s0", max_steps=0, progress=False)
    rep = [r for r in before.log if r.get("event") == "start"][0]["teacher"][0]
    assert rep["from_cache"] == 0 and rep["sentences"] == len({p[0] for p in bt.pairs})
    s0 = get_encoder(str(before.model_dir))
    result = train(recipe, [bt], [], [], tmp_path / "s", max_steps=40, progress=False)
    s1 = get_encoder(str(result.model_dir))
    teacher = get_encoder("char-ngram")
    t_src = teacher.encode([p[0] for p in bt.pairs], "en")
    assert s1.dim == teacher.dim
    for side, lang in ((0, "en"), (1, "de")):
        texts = [p[side] for p in bt.pairs]
        c0, c1 = _mean_cos(s0.encode(texts, lang), t_src), _mean_cos(s1.encode(texts, lang), t_src)
        assert c1 > c0 + 0.2, (side, c0, c1)
    losses = [r["loss"] for r in result.log if "loss" in r]
    assert losses[-1] < losses[0] / 2
    # the second run read the teacher's vectors from its cache
    rep = [r for r in result.log if r.get("event") == "start"][0]["teacher"][0]
    assert rep["from_cache"] == rep["sentences"]


def test_monolingual_distillation_alone_moves_the_student_towards_the_teacher_on_held_out_text(corpus, tmp_path):
    """student(x) ~ teacher(x) from text alone (no pairs): held-out sentences of each language get closer."""
    train_rows, held = corpus
    monos = [Monotext("en", [r["en"] for r in train_rows]), Monotext("de", [r["de"] for r in train_rows])]
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN, objectives={"teacher": "char-ngram"})
    s0 = get_encoder(str(train(recipe, [], monos, [], tmp_path / "m0", max_steps=0, progress=False).model_dir))
    result = train(recipe, [], monos, [], tmp_path / "m", max_steps=40, progress=False)
    s1 = get_encoder(str(result.model_dir))
    teacher = get_encoder("char-ngram")
    for lang in ("en", "de"):
        texts = [r[lang] for r in held]
        assert not set(texts) & {r[lang] for r in train_rows}
        t = teacher.encode(texts, lang)
        c0, c1 = _mean_cos(s0.encode(texts, lang), t), _mean_cos(s1.encode(texts, lang), t)
        assert c1 > c0 + 0.2, (lang, c0, c1)
    start = [r for r in result.log if r.get("event") == "start"][0]
    assert [r["lang"] for r in start["teacher"]] == ["en", "de"]
    assert any("distill_mono de" in r for r in result.log)


def test_teacher_contrastive_term_trains_on_bitext_and_monolingual_streams(corpus, tmp_path):
    """objectives.contrast: each stream logs its term, which falls; held-out texts find their own teacher row among
    the others far more often than before training."""
    train_rows, held = corpus
    monos = [Monotext("de", [r["de"] for r in train_rows[120:]])]
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN, data={"batch_size": 32},
                     objectives={"teacher": "char-ngram", "contrast": 1.0, "contrast_scale": 10},
                     train={**TINY["train"], "log_every": 5})
    data = [bitext(train_rows[:120])]
    s0 = get_encoder(str(train(recipe, data, monos, [], tmp_path / "c0", max_steps=0, progress=False).model_dir))
    result = train(recipe, data, monos, [], tmp_path / "c", max_steps=40, progress=False)
    logged = [r for r in result.log if "contrast_en-de" in r]
    assert logged and all("contrast_mono de" in r for r in logged)
    assert logged[-1]["contrast_en-de"] < 0.7 * logged[0]["contrast_en-de"], [r["contrast_en-de"] for r in logged]
    s1, teacher = get_encoder(str(result.model_dir)), get_encoder("char-ngram")
    texts = [r["de"] for r in held]
    t = teacher.encode(texts, "de")
    found = [float(np.mean((s.encode(texts, "de") @ t.T).argmax(1) == np.arange(len(texts)))) for s in (s0, s1)]
    assert found[1] > found[0] + 0.2, found


def test_contrast_needs_a_teacher():
    with pytest.raises(BisentError, match="objectives.contrast: the guo2019 objective has no teacher"):
        _recipe(architecture="dan", objective="guo2019", model=TINY_DAN, objectives={"contrast": 0.5})
    with pytest.raises(BisentError, match="contrast_hard: needs objectives.contrast > 0"):
        _recipe(architecture="dan", objective="distill", model=TINY_DAN, objectives={"contrast_hard": True})


def test_contrast_hard_adds_each_texts_teacher_neighbour_mined_once(corpus, tmp_path, monkeypatch):
    """objectives.contrast_hard: each monolingual text's nearest other text by the teacher (never itself) joins
    the term, mined once and read back from the cache by the next run, which then trains the same."""
    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "emb"))
    train_rows, _ = corpus
    monos = [Monotext("de", [r["de"] for r in train_rows[120:]] * 2)]           # every text twice: copies not negatives
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN, data={"batch_size": 32},
                     objectives={"teacher": "char-ngram", "contrast": 1.0, "contrast_hard": True, "ranking": 0.1,
                                 "hard_negatives": True, "hard_source": "teacher"},
                     train={**TINY["train"], "log_every": 1})
    data = [bitext(train_rows[:120])]
    runs = [train(recipe, data, monos, [], tmp_path / name, max_steps=6, progress=False) for name in ("a", "b")]
    starts = [[r for r in run.log if r.get("event") == "start"][0]["mono_hard_negatives"] for run in runs]
    assert starts[0]["from_cache"] is False and starts[1]["from_cache"] is True
    assert 0.2 < starts[0]["hard_cos_mono de"] < 1.0
    losses = [[r["contrast_mono de"] for r in run.log if "contrast_mono de" in r] for run in runs]
    assert losses[0] == losses[1] and len(losses[0]) == 6
    hard = [f for f in (tmp_path / "emb" / "hard-negatives").glob("*.safetensors")]
    assert len(hard) == 2                                                          # the pair's and the stream's
    from safetensors.numpy import load_file
    ids = {t: i for i, t in enumerate(dict.fromkeys(monos[0].sentences))}
    mined = [j for j in (load_file(str(f))["hard.0"] for f in hard) if len(j) == len(monos[0].sentences)]
    assert len(mined) == 1 and all(ids[monos[0].sentences[a]] != ids[monos[0].sentences[b]]
                                   for a, b in enumerate(mined[0]))


def test_monolingual_text_mixes_with_bitext_in_distillation_and_is_refused_without_a_teacher(corpus, tmp_path):
    train_rows, _ = corpus
    bt = bitext(train_rows[:120])
    mono = Monotext("de", [r["de"] for r in train_rows[120:]])
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN, data={"batch_size": 32, "mono_weight": 1},
                     objectives={"teacher": "char-ngram", "ranking": 0.1})
    result = train(recipe, [bt], [mono], [], tmp_path / "mix", max_steps=5, progress=False)
    logged = {k for r in result.log for k in r}
    assert {"distill_en-de", "distill_mono de", "rank_en-de"} <= logged and "rank_mono de" not in logged
    start = [r for r in result.log if r.get("event") == "start"][0]
    assert [(r["lang"], r["sentences"]) for r in start["teacher"]] == [("en", 120), ("de", 120)]
    with pytest.raises(BisentError, match="parallel data only; drop --mono"):
        train(_recipe(architecture="dan", objective="guo2019", model=TINY_DAN), [bt], [mono], [], tmp_path / "g",
              max_steps=1, progress=False)


def test_word_lists_are_their_own_stream_and_init_continues_a_model_on_new_data(corpus, tmp_path):
    """words.XX.txt -> a 'words XX' stream beside 'mono XX'; --init starts a new run from a model's weights
    (its checkpoint's float32 ones), where --resume would refuse the other data."""
    from bisent.training.data import resolve_monotext

    train_rows, _ = corpus
    (tmp_path / "mono.de.txt").write_text("".join(r["de"] + "\n" for r in train_rows[:100]), encoding="utf-8")
    (tmp_path / "words.de.txt").write_text("".join(w + "\n" for r in train_rows[100:160] for w in r["de"].split()[:1]),
                                           encoding="utf-8")
    mono, words = resolve_monotext(str(tmp_path / "mono.de.txt")), resolve_monotext(str(tmp_path / "words.de.txt"))
    assert (mono.kind, words.kind, words.lang) == ("mono", "words", "de")
    bt = bitext(train_rows[:120])
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN, data={"batch_size": 32},
                     objectives={"teacher": "char-ngram", "ranking": 0.1})
    first = train(recipe, [bt], [mono], [], tmp_path / "a", max_steps=6, progress=False)
    with pytest.raises(BisentError, match="different input training data"):
        train(recipe, [bt], [mono, words], [], tmp_path / "a", resume=True, max_steps=8, progress=False)
    result = train(recipe, [bt], [mono, words], [], tmp_path / "b", max_steps=0, progress=False, init=tmp_path / "a")
    start = [r for r in result.log if r.get("event") == "start"][0]
    assert (start["init"], start["init_from"], start["init_step"]) == ("a", "checkpoint.safetensors", 6)
    assert [s["name"] for s in start["streams"]][-2:] == ["mono de", "words de"]
    for k, v in first.model.state_dict().items():                       # step 0: exactly the first run's weights
        assert torch.equal(v, result.model.state_dict()[k]), k
    more = train(recipe, [bt], [mono, words], [], tmp_path / "c", max_steps=3, progress=False, init=tmp_path / "a")
    assert any("distill_words de" in r for r in more.log)
    (tmp_path / "a" / "checkpoint.safetensors").unlink()                 # the float16-or-32 model file then
    assert train(recipe, [bt], [mono], [], tmp_path / "d", max_steps=0, progress=False,
                 init=tmp_path / "a").log[0]["init_from"] == "model.safetensors"
    wide = _recipe(architecture="dan", objective="distill", model={**TINY_DAN, "embed_dim": TINY_DAN["embed_dim"] * 2},
                   objectives={"teacher": "char-ngram"})
    with pytest.raises(BisentError, match=r"--init .*a: .* is \("):
        train(wide, [bt], [], [], tmp_path / "e", max_steps=0, progress=False, init=tmp_path / "a")
    with pytest.raises(BisentError, match="choose one"):
        train(recipe, [bt], [], [], tmp_path / "a", resume=True, progress=False, init=tmp_path / "a")


def test_vocab_adaptation_fits_the_words_of_text_the_student_never_met(corpus, tmp_path):
    """vocab.XX.txt ('bisent data vocab') -> a 'vocab XX' stream; a student continued with the words of new text
    is closer to its teacher on those words than the same continuation without them."""
    from bisent.datasets.vocab import write_vocab
    from bisent.training.data import resolve_monotext

    train_rows, _ = corpus
    new_text = [r["de"] for r in cipher_corpus(60, vocab=40, seed=11)]            # another cipher: unseen words
    write_vocab(tmp_path / "v", {"de": new_text})
    vocab = resolve_monotext(str(tmp_path / "v" / "vocab.de.txt"))
    words = vocab.sentences
    assert (vocab.kind, vocab.lang, len(words)) == ("vocab", "de", 40)
    assert not set(words) & {w for r in train_rows for w in r["de"].split()}
    bt = bitext(train_rows)
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN, objectives={"teacher": "char-ngram"})
    train(recipe, [bt], [], [], tmp_path / "a", max_steps=40, progress=False)
    plain = train(recipe, [bt], [], [], tmp_path / "b", max_steps=40, progress=False, init=tmp_path / "a")
    adapted = train(recipe, [bt], [vocab], [], tmp_path / "c", max_steps=40, progress=False, init=tmp_path / "a")
    start = [r for r in adapted.log if r.get("event") == "start"][0]
    assert [s["name"] for s in start["streams"]] == ["en-de", "vocab de"]
    t = get_encoder("char-ngram").encode(words, "de")
    c_plain = _mean_cos(get_encoder(str(plain.model_dir)).encode(words, "de"), t)
    c_adapted = _mean_cos(get_encoder(str(adapted.model_dir)).encode(words, "de"), t)
    assert c_adapted > c_plain + 0.1, (c_plain, c_adapted)
    heavy = _recipe(architecture="dan", objective="distill", model=TINY_DAN, data={"batch_size": 32, "vocab_weight": 3},
                    objectives={"teacher": "char-ngram"})
    start = [r for r in train(heavy, [bt], [vocab], [], tmp_path / "h", max_steps=0, progress=False).log
             if r.get("event") == "start"][0]
    assert [(s["name"], s["per_batch"]) for s in start["streams"]] == [("en-de", 8), ("vocab de", 24)]
    listed = Monotext("de", words, kind="words")                                  # a word list: its own share
    heavy = _recipe(architecture="dan", objective="distill", model=TINY_DAN,
                    data={"batch_size": 40, "words_weight": 2, "vocab_weight": 1}, objectives={"teacher": "char-ngram"})
    start = [r for r in train(heavy, [bt], [vocab, listed], [], tmp_path / "w", max_steps=0, progress=False).log
             if r.get("event") == "start"][0]
    assert [(s["name"], s["per_batch"]) for s in start["streams"]] == [("en-de", 10), ("vocab de", 10),
                                                                       ("words de", 20)]
    longer = Monotext("fr", [f"mot{i}" for i in range(30)], kind="words")      # words_ref_size: shares by length
    sized = _recipe(architecture="dan", objective="distill", model=TINY_DAN,
                    data={"batch_size": 48, "words_weight": 1, "words_ref_size": 10},
                    objectives={"teacher": "char-ngram"})
    start = [r for r in train(sized, [bt], [listed, longer], [], tmp_path / "z", max_steps=0, progress=False).log
             if r.get("event") == "start"][0]
    assert [(s["name"], s["per_batch"]) for s in start["streams"]] == [("en-de", 6), ("words de", 24), ("words fr", 18)]


def test_dan_forward_many_is_forward_of_each_batch_with_one_table_lookup():
    """forward_many (one read of the hashed table a training step) gives each batch's forward output and the
    same table gradient as separate calls, whose summed sparse gradients cost time quadratic in their number."""
    torch.manual_seed(0)
    model = DAN(dim=16, embed_dim=8, hidden=[12], buckets=4096)
    texts = [["das ist ein haus", "hallo welt"], ["ein kleines haus", "x", "noch ein satz hier"], ["hallo"], [""]]
    feats = [model.featurize(t) for t in texts]
    separate, many = [model(**f) for f in feats], model.forward_many(feats)
    assert [o.shape for o in many] == [(2, 16), (3, 16), (1, 16), (1, 16)]
    for a, b in zip(separate, many):
        torch.testing.assert_close(a, b)
    grads = [torch.autograd.grad(sum((o ** 2).sum() for o in outs), model.embed.weight)[0].to_dense()
             for outs in ([model(**f) for f in feats], model.forward_many(feats))]
    torch.testing.assert_close(grads[0], grads[1])
    calls = []
    model.embed.register_forward_hook(lambda *a: calls.append(1))
    model.forward_many(feats)
    assert len(calls) == 1


def test_domain_weights_split_a_pair_into_domain_streams_and_every_row_stays(corpus, tmp_path):
    """data.domain_weights: `bisent data general`'s 4-column rows become one stream per (pair, domain) sharing the
    pair's batch share in the given proportions; a domain with one row joins the largest; no row is lost."""
    from bisent.training.data import resolve_bitext, resolve_monotext
    from bisent.training.objectives.dual import pair_specs

    train_rows, _ = corpus
    doms = ["ui"] * 60 + ["help"] * 150 + ["dict"] * 29 + ["odd"]
    (tmp_path / "train.en-de.tsv").write_text("".join(f"{d}:src{i % 3}\t{i}\t{r['en']}\t{r['de']}\n"
                                                      for i, (d, r) in enumerate(zip(doms, train_rows))),
                                                      encoding="utf-8")
    bt = resolve_bitext(str(tmp_path / "train.en-de.tsv"))
    assert bt.domains == doms
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN, data={"batch_size": 32,
                     "domain_weights": {"help": 2}}, objectives={"teacher": "char-ngram"})
    specs = pair_specs([bt], recipe)
    assert [(s.name, len(s.src), s.weight) for s in specs] == [("en-de ui", 60, 0.25), ("en-de help", 151, 0.5),
                                                               ("en-de dict", 29, 0.25)]
    assert sorted(zip(*[sum((s.src for s in specs), []), sum((s.tgt for s in specs), [])])) == sorted(bt.pairs)
    (tmp_path / "mono.de.txt").write_text("".join(r["de"] + "\n" for r in train_rows[:50]), encoding="utf-8")
    start = [r for r in train(recipe, [bt], [resolve_monotext(str(tmp_path / "mono.de.txt"))], [], tmp_path / "m",
                              max_steps=2, progress=False).log if r.get("event") == "start"][0]
    assert [(s["name"], s["per_batch"]) for s in start["streams"]] == [("en-de ui", 4), ("en-de help", 8),
                                                                       ("en-de dict", 4), ("mono de", 16)]
    assert [s.name for s in pair_specs([bt], _recipe(architecture="dan", objective="distill",
                                                     model=TINY_DAN))] == ["en-de"]
    sqrt = pair_specs([bt], _recipe(architecture="dan", objective="distill", model=TINY_DAN,
                                    data={"domain_temperature": 2}))                       # shares as sqrt(rows)
    assert [(s.name, round(s.weight, 4)) for s in sqrt] == [
        (n, round(math.sqrt(k) / (math.sqrt(60) + math.sqrt(151) + math.sqrt(29)), 4))
        for n, k in (("en-de ui", 60), ("en-de help", 151), ("en-de dict", 29))]
    sqrt_recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN, data={"domain_temperature": 2})
    two_lone = pair_specs([type(bt)("en", "de", bt.pairs[:2], domains=["ui", "dict"])], sqrt_recipe)
    assert [(s.name, len(s.src), s.weight) for s in two_lone] == [("en-de dict", 2, 1.0)]   # one row each: merged
    assert len(pair_specs([bt], sqrt_recipe)) == 3
    for bad in ({"dict": -1}, {"ui": 0, "help": 0, "dict": 0, "odd": 0}):
        with pytest.raises(BisentError, match="domain_weights"):
            pair_specs([bt], _recipe(architecture="dan", objective="distill", model=TINY_DAN,
                                     data={"domain_weights": bad}))


def test_stream_domains_take_a_domain_out_of_its_pair_into_a_stream_of_its_own(corpus, tmp_path):
    """data.stream_domains: a teacher-mined lexicon (domain ``lexicon``) is a stream beside its pair's, with the given
    share; the pair keeps its other rows and its share of 1; no row is lost; share 0 leaves the domain out."""
    from bisent.training.data import resolve_bitext
    from bisent.training.objectives.dual import pair_specs

    train_rows, _ = corpus
    doms = ["ui"] * 100 + ["lexicon"] * 40 + ["help"] * 100
    (tmp_path / "train.en-de.tsv").write_text("".join(f"{d}:src\t{i}\t{r['en']}\t{r['de']}\n"
                                                      for i, (d, r) in enumerate(zip(doms, train_rows))),
                                                      encoding="utf-8")
    bt = resolve_bitext(str(tmp_path / "train.en-de.tsv"))

    def specs(**data):
        return pair_specs([bt], _recipe(architecture="dan", objective="distill", model=TINY_DAN, data=data))

    own = specs(stream_domains={"lexicon": 2})
    assert [(s.name, len(s.src), s.weight) for s in own] == [("en-de lexicon", 40, 2.0), ("en-de", 200, 1.0)]
    assert sorted(zip(*[sum((s.src for s in own), []), sum((s.tgt for s in own), [])])) == sorted(bt.pairs)
    assert [(s.name, len(s.src)) for s in specs(stream_domains={"lexicon": 0})] == [("en-de", 200)]
    split = specs(stream_domains={"lexicon": 1}, domain_weights={})          # with domain streams too
    assert [(s.name, len(s.src), s.weight) for s in split] == [("en-de lexicon", 40, 1.0), ("en-de ui", 100, 0.5),
                                                               ("en-de help", 100, 0.5)]
    assert [s.name for s in specs()] == ["en-de"]
    with pytest.raises(BisentError, match=r"data\.stream_domains\.lexicon"):
        load_recipe("student-general", ["data.stream_domains={lexicon: -1}"])


@pytest.mark.parametrize("arch,model", [
    ("dan", TINY_DAN),
    ("bilstm", {"embed_dim": 24, "hidden_dim": 24}),
    ("hash-transformer", {"dim": 32, "buckets": 4096, "embed_dim": 32, "d_model": 32, "heads": 2, "ff_dim": 64,
                          "layers": 1, "dropout": 0.0}),
])
def test_ranking_objective_recovers_the_alignment(arch, model, corpus, tmp_path):
    raw = {"architecture": arch, "objective": "guo2019", "model": model, "train": {**TINY["train"], "eval_every": 60}}
    if arch == "bilstm":
        raw["tokenizer"] = {"vocab_size": 200}
    result = train(_recipe(**raw), [bitext(corpus[0])], [], [bitext(corpus[1])], tmp_path / arch, max_steps=60,
                   progress=False)
    dev = [r for r in result.log if "dev_err" in r]
    assert dev[-1]["dev_err"] < 0.2, dev[-1]
    enc = get_encoder(str(result.model_dir))
    a = enc.encode([r["en"] for r in corpus[1]], "en", cache=False)
    b = enc.encode([r["de"] for r in corpus[1]], "de", cache=False)
    live = TorchDualEncoder(result.model, name="live", content_hash="x")
    np.testing.assert_allclose(a, live.encode([r["en"] for r in corpus[1]], "en", cache=False), atol=1e-5)
    assert np.mean((a @ b.T).argmax(1) == np.arange(len(a))) > 0.8


def test_hard_negatives_resume_bit_exact(corpus, tmp_path):
    recipe = _recipe(architecture="dan", objective="guo2019", model={**TINY_DAN, "feature_dropout": 0.1},
                     data={"batch_size": 16, "bucket_batches": 2},
                     objectives={"hard_negatives": True, "hard_every": 4},
                     train={**TINY["train"], "log_every": 1, "checkpoint_every": 100})
    data = [bitext(corpus[0][:80])]
    straight = train(recipe, data, [], [], tmp_path / "a", max_steps=14, progress=False)
    train(recipe, data, [], [], tmp_path / "b", max_steps=6, progress=False)
    resumed = train(recipe, data, [], [], tmp_path / "b", max_steps=14, resume=True, progress=False)
    losses = lambda r: [x["loss"] for x in r.log if "loss" in x]  # noqa: E731
    assert len(losses(straight)) == 14 and losses(resumed) == losses(straight)
    assert any(r.get("event") == "hard negatives mined" for r in straight.log)
    for (k, v), (k2, v2) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert k == k2 and torch.equal(v, v2)


def test_teacher_hard_negatives_are_each_sources_nearest_other_source(monkeypatch):
    """Exact below EXACT_ROWS, IVF above (all lists probed: the exact answer); never the source's own text."""
    from bisent.training.objectives import dual

    rng = np.random.default_rng(0)
    t = rng.standard_normal((3000, 32)).astype(np.float32)
    t[1500:1600] = t[1400:1500]                                          # 100 duplicate texts
    t[2000:2012] = t[1999]                                               # 13 copies: more than k = 8 neighbours share
    t /= np.linalg.norm(t, axis=1, keepdims=True)                        # their id (searched exactly instead)
    ids = np.arange(3000)
    ids[1500:1600] = ids[1400:1500]
    ids[2000:2012] = ids[1999]
    sim = t @ t.T
    sim[ids[:, None] == ids[None, :]] = -np.inf
    brute = sim.argmax(axis=1)
    best = sim[np.arange(3000), brute]
    hn = dual.HardNegatives([], every=1)
    exact = hn._nearest_other(t, ids)        # the best score; the two copies of a duplicate tie, and the product's
    np.testing.assert_allclose(sim[np.arange(3000), exact], best, atol=1e-6)   # blocking may pick either of them
    assert not (ids[exact] == ids).any() and np.mean(exact == brute) > 0.99
    monkeypatch.setattr(dual, "EXACT_ROWS", 100)
    full = hn._nearest_other(t, ids, nprobe=10 ** 6)                     # either copy of a duplicate is right
    assert np.all(sim[np.arange(3000), full] > best - 1e-4) and not (ids[full] == ids).any()
    quick = hn._nearest_other(t, ids)                                    # 16 of 219 lists
    assert not (ids[quick] == ids).any() and np.mean(sim[np.arange(3000), quick] > best - 1e-4) > 0.3


def test_distillation_with_teacher_mined_hard_negatives(corpus, tmp_path):
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN,
                     objectives={"teacher": "char-ngram", "ranking": 0.1, "hard_negatives": True,
                                 "hard_source": "teacher"},
                     train={**TINY["train"], "log_every": 1, "checkpoint_every": 4})
    data = [bitext(corpus[0][:120])]
    straight = train(recipe, data, [], [], tmp_path / "a", max_steps=8, progress=False)
    start = [r for r in straight.log if r.get("event") == "start"][0]
    assert 0.2 < start["hard_negatives"]["hard_cos_en-de"] < 1.0
    assert not any(r.get("event") == "hard negatives mined" for r in straight.log)   # once, before step 1
    train(recipe, data, [], [], tmp_path / "b", max_steps=4, progress=False)
    resumed = train(recipe, data, [], [], tmp_path / "b", max_steps=8, resume=True, progress=False)
    losses = lambda r: [x["loss"] for x in r.log if "loss" in x]  # noqa: E731
    assert losses(resumed) == losses(straight)
    with pytest.raises(BisentError, match="hard_source: teacher needs a teacher"):
        train(_recipe(architecture="dan", objective="guo2019", model=TINY_DAN,
                      objectives={"hard_negatives": True, "hard_source": "teacher"}),
              data, [], [], tmp_path / "c", max_steps=1, progress=False)


def test_prepare_only_fills_the_caches_that_later_runs_read(corpus, tmp_path, monkeypatch, capsys):
    """--prepare-only mines the teacher's hard negatives once; runs of any seed read them back and train exactly
    as if they had mined them (a damaged cache file is mined again, with a warning)."""
    from bisent.training.prepare import PREPARED_FILE, prepare

    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "emb"))
    recipe = _recipe(architecture="dan", objective="distill", model=TINY_DAN,
                     objectives={"teacher": "char-ngram", "ranking": 0.1, "hard_negatives": True,
                                 "hard_source": "teacher"},
                     train={**TINY["train"], "log_every": 1, "checkpoint_every": 100})
    data = [bitext(corpus[0][:120])]
    report = prepare(recipe, data, [], [], tmp_path / "prep")
    assert report["hard_negatives"]["from_cache"] is False and 0.2 < report["hard_negatives"]["hard_cos_en-de"] < 1
    assert json.loads((tmp_path / "prep" / PREPARED_FILE).read_text())["event"] == "prepared"
    files = list((tmp_path / "emb" / "hard-negatives").glob("*.safetensors"))
    assert len(files) == 1

    def run(name, seed=1):
        r = train({**recipe, "seed": seed}, data, [], [], tmp_path / name, max_steps=6, progress=False)
        start = [x for x in r.log if x.get("event") == "start"][0]
        return start["hard_negatives"], [x["loss"] for x in r.log if "loss" in x]

    cached, losses = run("a")
    assert cached["from_cache"] is True and cached["hard_cos_en-de"] == report["hard_negatives"]["hard_cos_en-de"]
    assert run("b", seed=2)[0]["from_cache"] is True                   # another seed, the same negatives
    files[0].unlink()
    fresh, fresh_losses = run("c")                                      # mined again, and written again
    assert fresh["from_cache"] is False and fresh_losses == losses and files[0].is_file()
    files[0].write_bytes(b"not a safetensors file")
    capsys.readouterr()
    again, again_losses = run("d")
    assert again["from_cache"] is False and again_losses == losses
    assert "hard-negative cache" in capsys.readouterr().err and run("e")[0]["from_cache"] is True   # rewritten
    with pytest.raises(BisentError, match="holds a training run"):
        prepare(recipe, data, [], [], tmp_path / "a")
    monkeypatch.setenv("BISENT_NO_EMBED_CACHE", "1")                   # no cache: mined, nothing read or written
    assert "from_cache" not in run("f")[0] and len(list(files[0].parent.iterdir())) == 1
    from bisent.cli import main

    capsys.readouterr()
    assert main(["cache", "info"]) == 0 and "1 files of teacher-mined hard negatives" in capsys.readouterr().out
    sqlite = list((tmp_path / "emb").glob("*.sqlite"))
    assert main(["cache", "clear", "--encoder", "hard-negatives"]) == 0 and not files[0].exists()
    assert "removed 1 " in capsys.readouterr().err and list((tmp_path / "emb").glob("*.sqlite")) == sqlite


def test_dual_recipes_and_errors(tmp_path):
    for name in ("guo2019-dan", "guo2019-transformer", "guo2019-bilstm", "distill-dan", "adapt-use-m3",
                 "adapt-me5-small"):
        r = load_recipe(name)
        assert r["architecture"] in ("dan", "hash-transformer", "bilstm", "adapter")
    with pytest.raises(BisentError, match="objective: distill"):
        validate_recipe({"architecture": "dan", "objectives": {"distill": 1}})
    with pytest.raises(BisentError, match="has no tokenizer section"):
        validate_recipe({"architecture": "dan", "tokenizer": {"vocab_size": 10}})
    with pytest.raises(BisentError, match="not one of guo2019, distill"):
        validate_recipe({"architecture": "dan", "objective": "kim2019"})
    with pytest.raises(BisentError, match="unknown key 'model.hiden'"):
        validate_recipe({"architecture": "adapter", "model": {"hiden": [3]}})
    r = validate_recipe({"architecture": "dan", "objective": "distill"})
    assert r["objectives"]["distill"] == 1.0 and r["objectives"]["ranking"] == 0.0
    # the hashed features' rules are HashConfig's, checked when the recipe loads
    with pytest.raises(BisentError,
                       match="model.cjk_n_min: must be 0 \\(off\\) or a whole number from 1 to n_min - 1 \\(2\\)"):
        validate_recipe({"architecture": "dan", "objective": "distill", "model": {"cjk_n_min": 3}})
    with pytest.raises(BisentError, match="model.n_max: \\(1\\) must be at least 'n_min' - 1 \\(3\\)"):
        validate_recipe({"architecture": "hash-transformer", "objective": "distill", "model": {"n_min": 4, "n_max": 1}})
    with pytest.raises(BisentError, match="model.buckets: must be below 2\\*\\*32"):
        validate_recipe({"architecture": "dan", "objective": "distill", "model": {"buckets": 2 ** 33}})
    assert validate_recipe({"architecture": "dan", "objective": "distill",
                            "model": {"cjk_n_min": 2}})["model"]["cjk_n_min"] == 2


def test_cli_trains_a_dual_encoder_from_the_dataset_tsv(corpus, tmp_path, monkeypatch):
    """``bisent data libreoffice`` writes doc<TAB>id<TAB>src<TAB>tgt into a folder named for the pair."""

    from bisent.cli import main

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "en-de"
    folder.mkdir()
    (folder / "train.tsv").write_text("".join(f"d{i}.html\tpar_id{i}\t{r['en']}\t{r['de']}\n"
                                              for i, r in enumerate(corpus[0][:100])))
    (folder / "dev.tsv").write_text("".join(f"d.html\tp{i}\t{r['en']}\t{r['de']}\n" for i, r in enumerate(corpus[1])))
    recipe = "distill-dan"
    args = ["train", "-c", recipe, "--train", str(folder / "train.tsv"), "--dev", str(folder / "dev.tsv"),
            "-o", "out", "--max-steps", "3", "--no-progress", "--set", "objectives.teacher=char-ngram",
            "--set", "model.buckets=4096", "--set", "model.embed_dim=16", "--set", "model.hidden=[32]",
            "--set", "data.batch_size=16"]
    prep = [a if a != "out" else "prep" for a in args] + ["--prepare-only"]
    assert main(prep) == 0 and json.loads((tmp_path / "prep" / "prepared.json").read_text())["event"] == "prepared"
    assert main(prep + ["--resume"]) == 2 and not (tmp_path / "prep" / "config.json").exists()
    assert main(args) == 0
    cfg = json.loads((tmp_path / "out" / "config.json").read_text())
    assert cfg["architecture"] == "dan" and cfg["model"]["dim"] == 1024
    assert get_encoder(str(tmp_path / "out")).encode(["abc"], "de").shape == (1, 1024)
    assert main(args[:-2] + ["--resume", "--max-steps", "4", "--set", "data.batch_size=16"]) == 0
    assert checkpoint.read_state(tmp_path / "out")["step"] == 4


def test_student_size_counts_text_of_collection_rows(tmp_path):
    """The size bench counts the last two columns of a collection's TSV rows (which hold tabs) and every .txt line."""
    from student_size import _texts

    (tmp_path / "train.en-de.tsv").write_text("ui:pkg\tpkg:1\tOpen file\tDatei öffnen\n", encoding="utf-8")
    (tmp_path / "mono.de.txt").write_text("Ein Satz.\n", encoding="utf-8")
    assert _texts([str(tmp_path / "train.en-de.tsv"), str(tmp_path / "mono.de.txt")]) == \
        ["Open file", "Datei öffnen", "Ein Satz."]


def test_teacher_workers_fill_the_cache_in_parallel_with_the_same_rows(tmp_path, monkeypatch):
    """objectives.teacher_workers: processes fill the teacher's cache first; the rows the run then reads are
    those a single process computes, and a second fill has nothing left to do."""
    from bisent.training.teacher import fill_cache, teacher_embeddings

    en = [f"the {i}th line of the manual names {w}" for i, w in enumerate(["files", "ports", "keys"] * 70)]
    de = [f"die {i}. Zeile nennt {w}" for i, w in enumerate(["Dateien", "Ports"] * 60)]
    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "serial"))
    want = [teacher_embeddings("char-ngram", t, lang, progress=False) for t, lang in ((en, "en"), (de, "de"))]
    monkeypatch.setenv("BISENT_EMBED_CACHE", str(tmp_path / "parallel"))
    info = fill_cache("char-ngram", [(en, "en"), (de, "de"), (en[:50], "en")], workers=2, batch_size=16,
                      progress=False)
    assert info["teacher_workers"] == 2 and info["embedded"] == len(set(en)) + len(set(de))
    for (t, lang), (rows, _) in zip(((en, "en"), (de, "de")), want):
        got, report = teacher_embeddings("char-ngram", t, lang, progress=False)
        assert report["from_cache"] == report["sentences"] == len(set(t))                   # all filled by the workers
        assert np.array_equal(got, rows)
    assert fill_cache("char-ngram", [(en, "en")], workers=2, progress=False) == {}          # nothing missing
    assert fill_cache("char-ngram", [(en + ["new"], "en")], workers=1, progress=False) == {}  # one worker: no fill


def test_encoder_memory_benchmark_measures_a_fresh_process_per_encoder(tmp_path):
    """benchmarks/encoder_memory.py: one record per encoder, peak >= held > 0, the weights' size on disk; an
    int8-stored DAN holds less than a float32 copy of its table would (a float32 table of 2^18 x 256 is 256 MB)."""
    from encoder_memory import main

    torch.manual_seed(0)
    save_dual(DAN(dim=16, buckets=2 ** 18, embed_dim=256, hidden=[32]).eval(), tmp_path / "q8", int8=True)
    recs = main(["--no-anchors", "-e", "char-ngram", "-e", str(tmp_path / "q8"), "--results", str(tmp_path / "r")])
    assert [r["encoder"] for r in recs] == ["char-ngram", "q8"] and all(r["exit"] == 0 for r in recs)
    assert all(0 < r["held_rss_mb"] <= r["peak_rss_mb"] for r in recs)
    assert recs[0]["weights_mb"] is None and 60 < recs[1]["weights_mb"] < 70                # 2^18 x 256 int8 rows
    assert recs[1]["held_rss_mb"] < recs[1]["baseline_held_rss_mb"] + 200
    assert len((tmp_path / "r" / "encoder_memory.jsonl").read_text().splitlines()) == 2
    with pytest.raises(SystemExit, match="no encoder to measure"):
        main(["--no-anchors", "--results", ""])
    for bad, message in ((str(tmp_path / "nowhere"), "nowhere: no such model directory"),
                         ("use-m4", "unknown encoder 'use-m4'")):
        with pytest.raises(SystemExit, match=f"^bisent: error: .*{re.escape(message)}"):
            main(["--no-anchors", "-e", "char-ngram", "-e", bad, "--results", str(tmp_path / "r")])
    assert len((tmp_path / "r" / "encoder_memory.jsonl").read_text().splitlines()) == 2       # nothing more recorded
    (tmp_path / "q8" / "config.json").write_text("{")                                         # a broken model directory
    broken = main(["--no-anchors", "-e", str(tmp_path / "q8"), "--results", ""])
    assert broken[0]["exit"] == 1 and broken[0]["held_rss_mb"] is None

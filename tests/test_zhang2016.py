"""Zhang et al. (2016) global-descriptor autoencoder and the BBoWAE baseline: the equations by hand, toy training,
model directories, resume, and the parallel-vs-sampled benchmark."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gensim")

from bisent.bench.pairs import accuracy, sample_targets  # noqa: E402
from bisent.encoders import get_encoder  # noqa: E402
from bisent.errors import BisentError  # noqa: E402
from bisent.models.zhang2016 import (  # noqa: E402
    BBoWAE,
    BBoWAEEncoder,
    Zhang2016,
    Zhang2016Encoder,
    descriptors_np,
    descriptors_torch,
    pad_ids,
    tokenize,
)
from bisent.training.data import Bitext  # noqa: E402
from bisent.training.loop import train  # noqa: E402
from bisent.training.objectives import zhang2016 as Z  # noqa: E402
from bisent.training.recipe import validate_recipe  # noqa: E402

LANGS = ["en", "de"]


# --- the equations by hand -------------------------------------------------------------------------

def _by_hand_descriptors(table, seq):
    M = table[seq]                                                       # (n, d): the paper's M transposed
    return {"min": M.min(0), "max": M.max(0), "avg": M.mean(0), "std": np.sqrt(((M - M.mean(0)) ** 2).mean(0))}


def test_descriptors_match_eq5_by_hand():
    rng = np.random.default_rng(0)
    table = rng.uniform(-1, 1, (7, 3)).astype(np.float32)
    seqs = [[1, 2, 3], [4], [5, 6, 1, 1, 2]]
    ids, mask = pad_ids(seqs)
    got_np = descriptors_np(table, ids, mask)
    got_t = descriptors_torch(torch.from_numpy(table)[torch.from_numpy(ids)], torch.from_numpy(mask))
    for i, s in enumerate(seqs):
        want = _by_hand_descriptors(table, s)
        for k in ("min", "max", "avg", "std"):
            np.testing.assert_allclose(got_np[k][i], want[k], rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(got_t[k][i].numpy(), want[k], rtol=1e-5, atol=2e-6)


def _tiny_zhang(variant, gamma=1.0):
    torch.manual_seed(0)
    model = Zhang2016(LANGS, {"en": 6, "de": 5}, word_dim=3, hidden=4, variant=variant, target_weight=gamma)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
        for lang in LANGS:                                  # a descriptor normalisation that is not the identity
            model.norm[lang].shift.copy_(torch.randn(4, 3) * 0.3)
            model.norm[lang].scale.copy_(torch.rand(4, 3) + 0.5)
    return model


def _np_params(model):
    return {k: v.detach().numpy().astype(np.float64) for k, v in model.state_dict().items()}


@pytest.mark.parametrize("variant,gamma", [("mm2as", 1.0), ("as2mm", 1.0), ("as2mm", 0.3)])
def test_eq6_to_eq13_by_hand(variant, gamma):
    """Eq. 6-10 for 4 pairs in blocks of B = 2, and Eq. 11-13 (target term weighted by gamma), on normalised
    descriptors, in NumPy against the model and the encoder."""
    model = _tiny_zhang(variant, gamma)
    P = _np_params(model)
    seqs = {"en": [[1, 2], [3, 4, 5], [0, 1], [2]], "de": [[1], [2, 3], [4, 1, 2], [0, 3]]}
    inp, tgt = (("min", "max"), ("avg", "std")) if variant == "mm2as" else (("avg", "std"), ("min", "max"))
    alpha, lam_w, lam_l, B, N = 0.3, 1e-2, 1e-3, 2, 4
    recipe = {"objectives": {"alpha": alpha, "lambda_w": lam_w, "lambda_l": lam_l, "block": B},
              "model": {"finetune_words": True}}
    hid, e_ae, final = {}, 0.0, {}
    for lang in LANGS:
        rows, rows_final = [], []
        for s in seqs[lang]:
            g = _by_hand_descriptors(P[f"embed.{lang}"], s)
            g = {k: (g[k] - P[f"norm.{lang}.shift"][i]) * P[f"norm.{lang}.scale"][i]
                 for i, k in enumerate(("min", "max", "avg", "std"))}
            g_in, g_tgt = np.r_[g[inp[0]], g[inp[1]]], np.r_[g[tgt[0]], g[tgt[1]]]
            h = np.tanh(P[f"enc.{lang}.weight"] @ g_in + P[f"enc.{lang}.bias"])                 # Eq. 6
            h = h / np.linalg.norm(h)
            out = np.tanh(P["dec.weight"] @ h + P["dec.bias"])                                   # Eq. 7
            e_ae += 0.5 * np.sum((g_tgt - out) ** 2)                                             # Eq. 8
            rows.append(h)
            # Eq. 11
            f = np.tanh(P[f"enc.{lang}.weight"] @ g_in + gamma * P["dec.weight"].T @ g_tgt + P[f"enc.{lang}.bias"])
            rows_final.append(f / np.linalg.norm(f))
        hid[lang], final[lang] = np.array(rows), np.array(rows_final)
    e_sem = sum(0.5 * np.sum((hid["en"][k:k + B].mean(0) - hid["de"][k:k + B].mean(0)) ** 2)
                for k in range(0, N, B))  # Eq. 9
    reg = lam_l / 2 * sum(np.sum(P[f"embed.{lang}"] ** 2) for lang in LANGS) + lam_w / 2 * (
        sum(np.sum(P[f"enc.{lang}.weight"] ** 2) for lang in LANGS) + np.sum(P["dec.weight"] ** 2))
    J = alpha / N * e_ae + (1 - alpha) * e_sem + reg                                              # Eq. 10

    chunk = {lang: tuple(torch.from_numpy(a) for a in pad_ids(seqs[lang])) for lang in LANGS}
    loss, parts = Z.zhang_chunk_loss(model, chunk, LANGS, recipe, N)
    total = float((loss + Z.regulariser(model, recipe)).detach())
    assert total == pytest.approx(J, rel=1e-5)
    assert parts["ae"] == pytest.approx(e_ae / N, rel=1e-5) and parts["sem"] == pytest.approx(e_sem, rel=1e-5)

    # Eq. 11-12 in the torch module and in the NumPy encoder that -e DIR loads
    vocab = {"en": ["<unk>"] + [f"e{i}" for i in range(1, 6)], "de": ["<unk>"] + [f"d{i}" for i in range(1, 5)]}
    hp = {"languages": LANGS, "hidden": 4, "word_dim": 3, "variant": variant, "descriptor_norm": "standard",
          "target_weight": gamma, "lowercase": True, "max_len": 100, "unseen_language": None}
    enc = Zhang2016Encoder(hp, {k: v.detach().numpy() for k, v in model.state_dict().items()}, vocab,
                           name="tiny", digest="0" * 64)
    for lang in LANGS:
        texts = [" ".join(vocab[lang][i] if i else "zzz" for i in s) for s in seqs[lang]]   # zzz: an unknown word
        np.testing.assert_allclose(enc.encode(texts, lang, cache=False), final[lang], atol=1e-5)
        g_in, g_tgt = model.views(*chunk[lang], lang)
        np.testing.assert_allclose(model.final(g_in, g_tgt, lang).detach().numpy(), final[lang], atol=1e-5)
    # Eq. 13 on unit vectors: 1/2 ||hx - hy||^2 = 1 - cos, so Euclidean and cosine rank alike
    sim13 = 0.5 * np.sum((final["en"] - final["de"]) ** 2, axis=1)
    np.testing.assert_allclose(sim13, 1 - np.sum(final["en"] * final["de"], axis=1), atol=1e-9)


def test_bbowae_eq4_and_footnote6_by_hand():
    torch.manual_seed(0)
    model = BBoWAE(LANGS, {"en": 6, "de": 5}, hidden=3)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    P = _np_params(model)
    seqs = {"en": [[1, 2, 2], [3, 4], [5, 1], [0]], "de": [[1], [2, 3], [4, 1], [3]]}
    V = {"en": 6, "de": 5}
    v = {lang: np.array([np.isin(np.arange(V[lang]), s).astype(float) for s in seqs[lang]]) for lang in LANGS}
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731

    def ell(phi, lang):                                                   # cross-entropy summed over the vocabulary
        p = sig(phi @ P[f"W.{lang}"].T + P[f"b.{lang}"])
        return -(v[lang] * np.log(p) + (1 - v[lang]) * np.log(1 - p)).sum(1)

    a = {lang: P["c"] + v[lang] @ P[f"W.{lang}"] for lang in LANGS}       # Eq. 1
    px, py, pxy = sig(a["en"]), sig(a["de"]), sig(P["c"] + v["en"] @ P["W.en"] + v["de"] @ P["W.de"])
    beta, lam, B = 0.7, 2.0, 2
    rec = ell(px, "de") + ell(py, "en") + ell(px, "en") + ell(py, "de") + beta * (ell(pxy, "en") + ell(pxy, "de"))
    cor = 0.0
    for k in range(0, 4, B):
        cx, cy = a["en"][k:k + B] - a["en"][k:k + B].mean(0), a["de"][k:k + B] - a["de"][k:k + B].mean(0)
        cor += np.sum((cx * cy).sum(0) / (np.linalg.norm(cx, axis=0) * np.linalg.norm(cy, axis=0)))
    want = (rec.sum() - lam * cor) / 4                                    # Eq. 4 per pair
    recipe = {"objectives": {"beta": beta, "lambda_cor": lam, "block": B}}
    chunk = {lang: torch.from_numpy(v[lang]).float() for lang in LANGS}
    loss, _ = Z.bbowae_chunk_loss(model, chunk, LANGS, recipe, 4)
    assert float(loss.detach()) == pytest.approx(want, rel=1e-4)

    vocab = {"en": ["<unk>"] + [f"e{i}" for i in range(1, 6)], "de": ["<unk>"] + [f"d{i}" for i in range(1, 5)]}
    hp = {"languages": LANGS, "hidden": 3, "lowercase": True, "max_len": 100, "unseen_language": None, "beta": beta}
    enc = BBoWAEEncoder(hp, {k: v_.detach().numpy() for k, v_ in model.state_dict().items()}, vocab,
                        name="tiny", digest="0" * 64)
    texts = {lang: [" ".join(vocab[lang][i] if i else "zzz" for i in s) for s in seqs[lang]] for lang in LANGS}
    np.testing.assert_allclose(enc.embed_batch(texts["en"], "en"), a["en"], atol=1e-5)     # embedding = a(x)
    np.testing.assert_allclose(enc.pair_scores(texts["en"], texts["de"], "en", "de"), -rec, rtol=1e-4)  # footnote 6


# --- toy training ----------------------------------------------------------------------------------

def toy_corpus(n_topics=16, per_topic=100, seed=0):
    """A language pair with a word-for-word bijection, in documents (blocks) of one topic each."""
    rng = np.random.default_rng(seed)
    V = 80
    topics = [rng.choice(V, 10, replace=False) for _ in range(n_topics)]

    def sent(t):
        n = int(rng.integers(4, 10))
        w = np.where(rng.random(n) < 0.8, rng.choice(topics[t], n), rng.integers(0, V, n))
        return " ".join(f"e{i}" for i in w), " ".join(f"d{(i * 7) % V}" for i in w)

    train_pairs = [sent(t) for t in range(n_topics) for _ in range(per_topic)]
    test_pairs = [sent(int(rng.integers(n_topics))) for _ in range(200)]
    return train_pairs, test_pairs


@pytest.fixture(scope="module")
def toy():
    return toy_corpus()


def toy_recipe(arch, **over):
    raw = {"architecture": arch, "train": {"max_steps": 25, "log_every": 5, "checkpoint_every": 10, "threads": 1},
           "objectives": {"w2v_epochs": 3} if arch == "zhang2016" else {}, "data": {"chunk": 800}}
    for key, value in over.items():
        section, sub = key.split("__")
        raw.setdefault(section, {})[sub] = value
    return validate_recipe(raw)


def pairs_accuracy(enc, test_pairs, score="cosine"):
    src, ref = [a for a, _ in test_pairs], [b for _, b in test_pairs]
    sampled = sample_targets(ref, 2, 3, seed=1)
    x, y = enc.encode(src, "en", cache=False), enc.encode(ref, "de", cache=False)
    accs = []
    for ev in sampled:
        flat = [t for row in ev for t in row]
        if score == "cosine":
            z = enc.encode(flat, "de", cache=False).reshape(len(src), 3, -1)
            par, smp = np.einsum("nd,nd->n", x, y), np.einsum("nd,nsd->ns", x, z)
        else:
            par = enc.pair_scores(src, ref, "en", "de")
            smp = enc.pair_scores([s for s in src for _ in range(3)], flat, "en", "de").reshape(len(src), 3)
        accs.append(accuracy(par, smp))
    return float(np.mean(accs))


# MM2AS on the raw descriptors (the paper's setting, per-side word2vec) reaches only 0.68 here; standardised
# descriptors (the recipe's setting) 1.0
@pytest.mark.parametrize("arch,over", [("zhang2016", {"model__variant": "mm2as"}),     # the recipe's default
                                       ("zhang2016", {"model__variant": "mm2as", "model__descriptor_norm": "standard",
                                                      "model__target_weight": 0.2}),
                                       ("zhang2016", {"model__variant": "as2mm"}),
                                       ("zhang2016", {"model__variant": "as2mm", "model__descriptor_norm": "standard",
                                                      "model__target_weight": 0.0}),
                                       ("bbowae", {})])
def test_toy_training_beats_chance(tmp_path, toy, arch, over):
    train_pairs, test_pairs = toy
    if arch == "zhang2016":   # 3 skip-gram epochs leave the toy vectors unconverged: accuracy then varies by CPU
        over = {**over, "objectives__w2v_epochs": 10}
    res = train(toy_recipe(arch, train__max_steps=60, **over), [Bitext("en", "de", train_pairs)], [], [],
                tmp_path / "m", progress=False)
    losses = [r["loss"] for r in res.log if "loss" in r]
    assert losses[-1] < losses[0]
    enc = get_encoder(tmp_path / "m")
    assert pairs_accuracy(enc, test_pairs) > 0.8                          # chance: 0.5
    if arch == "bbowae":
        assert pairs_accuracy(enc, test_pairs, "entropy") > 0.8


def test_standard_norm_centres_and_scales_training_descriptors(tmp_path, toy):
    """descriptor_norm standard: on the training sentences each normalised descriptor dimension has mean 0 and
    standard deviation STANDARD_UNIT; none: the identity. The saved encoder applies the same map."""
    from bisent.models.zhang2016 import STANDARD_UNIT, normalised
    from bisent.training.objectives.zhang2016 import Prepared
    bt = [Bitext("en", "de", toy[0])]
    for mode in ("none", "standard"):
        res = train(toy_recipe("zhang2016", train__max_steps=1, model__descriptor_norm=mode), bt, [], [],
                    tmp_path / mode, progress=False)
        enc = get_encoder(tmp_path / mode)
        assert enc.hp["descriptor_norm"] == mode
        prep = Prepared(toy_recipe("zhang2016"), bt, tmp_path / mode, resume=True)
        for lang in LANGS:
            shift, scale = (res.model.norm[lang].shift.numpy(), res.model.norm[lang].scale.numpy())
            np.testing.assert_array_equal(enc.norm[lang][0], shift)
            g = descriptors_np(enc.tables[lang], *pad_ids(prep.ids[lang]))
            z = normalised(g, shift, scale)
            for k in ("min", "max", "avg", "std"):
                if mode == "none":
                    np.testing.assert_array_equal(z[k], g[k])
                else:
                    np.testing.assert_allclose(z[k].mean(0), 0, atol=1e-4)
                    np.testing.assert_allclose(z[k].std(0), STANDARD_UNIT, rtol=1e-3)


# --- model directories and resume ------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory, toy):
    out = tmp_path_factory.mktemp("zhang") / "m"
    res = train(toy_recipe("zhang2016", train__max_steps=6), [Bitext("en", "de", toy[0])], [], [], out, progress=False)
    return out, res


def test_save_load_bit_identical(trained_dir, toy):
    out, res = trained_dir
    from safetensors.numpy import load_file

    saved = load_file(str(out / "model.safetensors"))
    state = {k: v.detach().numpy() for k, v in res.model.state_dict().items()}
    assert set(saved) == set(state) and all(np.array_equal(saved[k], state[k]) for k in state)
    from bisent.encoders.trained import read_config
    from bisent.models.zhang2016 import load_zhang2016

    a, b = load_zhang2016(out, read_config(out)), load_zhang2016(out, read_config(out))
    texts = [s for s, _ in toy[1][:20]]
    assert np.array_equal(a.encode(texts, "en", cache=False), b.encode(texts, "en", cache=False))
    assert a.id == b.id and a.id.startswith("zhang2016/")
    # the unseen language is read as the second one (unseen_language: auto)
    assert np.array_equal(a.encode(texts, "fr", cache=False), a.encode(texts, "de", cache=False))


@pytest.mark.parametrize("victim,damage,needle", [
    ("vocab.json", "delete", "vocab.json: missing"),
    ("vocab.json", "garbage", "vocab.json: corrupt JSON"),
    ("model.safetensors", "delete", "model.safetensors: missing"),
    ("model.safetensors", "garbage", "model.safetensors: corrupt safetensors"),
    ("config.json", "delete", "config.json: missing"),
])
def test_missing_or_corrupt_files_named(tmp_path, trained_dir, victim, damage, needle):
    import shutil

    src, _ = trained_dir
    d = tmp_path / "copy"
    shutil.copytree(src, d)
    if damage == "delete":
        (d / victim).unlink()
    else:
        (d / victim).write_bytes(b"\x00garbage{")
    from bisent.encoders.trained import load_model_dir

    with pytest.raises(BisentError, match=needle.replace(".", r"\.")) as e:
        load_model_dir(d)
    assert "\n" not in str(e.value)


def test_wrong_vocab_size_named(tmp_path, trained_dir):
    import shutil

    src, _ = trained_dir
    d = tmp_path / "copy"
    shutil.copytree(src, d)
    vocab = json.loads((d / "vocab.json").read_text())
    vocab["en"] = vocab["en"][:-1]
    (d / "vocab.json").write_text(json.dumps(vocab))
    from bisent.encoders.trained import load_model_dir

    with pytest.raises(BisentError, match="embed.en' has shape"):
        load_model_dir(d)


@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
def test_resume_continues_the_same_loss_curve(tmp_path, toy, optimizer):
    over = {"optim__optimizer": optimizer, "train__log_every": 1, "train__checkpoint_every": 4}
    if optimizer == "adam":
        over.update({"optim__lr": 0.01, "data__batch_size": 200})
    bt = [Bitext("en", "de", toy[0])]
    straight = train(toy_recipe("zhang2016", train__max_steps=8, **over), bt, [], [], tmp_path / "a", progress=False)
    wv = tmp_path / "a" / "vocab.json"
    assert wv.is_file()
    r = toy_recipe("zhang2016", train__max_steps=8, **over)
    train(r, bt, [], [], tmp_path / "b", max_steps=4, progress=False)
    resumed = train(r, bt, [], [], tmp_path / "b", resume=True, progress=False)
    curve = lambda res: [(x["step"], x["loss"]) for x in res.log if "loss" in x]  # noqa: E731
    assert curve(resumed) == curve(straight) and len(curve(straight)) == 8
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resume_needs_the_same_recipe(tmp_path, toy):
    bt = [Bitext("en", "de", toy[0])]
    train(toy_recipe("zhang2016", train__max_steps=2), bt, [], [], tmp_path / "m", progress=False)
    with pytest.raises(BisentError, match="holds a training run already"):
        train(toy_recipe("zhang2016", train__max_steps=2), bt, [], [], tmp_path / "m", progress=False)
    with pytest.raises(BisentError, match="'objectives' differs"):
        train(toy_recipe("zhang2016", train__max_steps=4, objectives__alpha=0.5), bt, [], [], tmp_path / "m",
              resume=True, progress=False)


# --- recipe, tokens, benchmark helpers -------------------------------------------------------------

def test_recipe_errors_are_one_line():
    with pytest.raises(BisentError, match="model.variant: 'mm2mm' is not one of mm2as, as2mm"):
        validate_recipe({"architecture": "zhang2016", "model": {"variant": "mm2mm"}})
    with pytest.raises(BisentError, match="unknown key 'objectives.gamma'"):
        validate_recipe({"architecture": "bbowae", "objectives": {"gamma": 1}})
    r = validate_recipe({"architecture": "zhang2016"})
    assert r["optim"]["optimizer"] == "lbfgs" and r["objectives"]["block"] == 100


def test_one_language_pair_per_model(tmp_path):
    bts = [Bitext("en", "de", [("a b", "c d")] * 4), Bitext("en", "fr", [("a b", "e f")] * 4)]
    with pytest.raises(BisentError, match="one language pair per model"):
        train(toy_recipe("bbowae"), bts, [], [], tmp_path / "m", progress=False)


def test_tokenize_and_word_vectors_file(tmp_path):
    assert tokenize("Click OK. Größe: 12") == ["click", "ok", ".", "größe", ":", "12"]
    p = tmp_path / "v.vec"
    p.write_text("2 3\nok 1 2 3\nclick 4 5 6\n", encoding="utf-8")
    table, found = Z.read_word_vectors(str(p), ["<unk>", "click", "missing"], 3)
    assert found == 1 and table[1].tolist() == [4, 5, 6] and not table[0].any() and not table[2].any()
    p.write_text("ok 1 2\n", encoding="utf-8")
    with pytest.raises(BisentError, match=r"v\.vec:1: expected a word and 3 numbers"):
        Z.read_word_vectors(str(p), ["<unk>"], 3)


def test_sampled_targets_follow_footnote7():
    refs = ["a b c d", "e f", "g"]
    out = sample_targets(refs, evaluations=5, samples=3, seed=0)
    pool = set(" ".join(refs).split())
    assert len(out) == 5 and all(len(ev) == 3 and all(len(row) == 3 for row in ev) for ev in out)
    for ev in out:
        for ref, row in zip(refs, ev):
            assert all(1 <= len(t.split()) <= len(ref.split()) and set(t.split()) <= pool for t in row)
    assert sample_targets(refs, 5, 3, seed=0) == out
    assert accuracy(np.array([1.0, 0.0]), np.array([[0.0, 1.0, 1.0], [0.0, -1.0, -2.0]])) == pytest.approx(
        (1 + 0.5 + 0.5 + 0.5 + 1 + 1) / 6)                                  # ties count half


def test_pseudo_bilingual_pairs_hold_both_sides():
    toks = {"en": [["a", "b"], ["c"]], "de": [["x"], ["y", "z", "y"]]}
    out = Z.pseudo_bilingual(toks, LANGS, seed=0)
    assert [sorted(s) for s in out] == [["de:x", "en:a", "en:b"], ["de:y", "de:y", "de:z", "en:c"]]
    assert out == Z.pseudo_bilingual(toks, LANGS, seed=0)


def test_unseen_language_refused_when_asked():
    model = _tiny_zhang("mm2as")
    vocab = {"en": ["<unk>"] + [f"e{i}" for i in range(1, 6)], "de": ["<unk>"] + [f"d{i}" for i in range(1, 5)]}
    hp = {"languages": LANGS, "hidden": 4, "word_dim": 3, "variant": "mm2as", "descriptor_norm": "none",
          "target_weight": 1.0, "lowercase": True, "max_len": 100, "unseen_language": None}
    enc = Zhang2016Encoder(hp, {k: v.detach().numpy() for k, v in model.state_dict().items()}, vocab,
                           name="tiny", digest="0" * 64)
    with pytest.raises(BisentError, match="unknown language 'fr'"):
        enc.encode(["e1 e2"], "fr", cache=False)

"""Cross-lingual word vectors from a sentence encoder (bisent.training.word_vectors) and the divergence
recipe's ``model.word_vectors_from``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bisent.errors import BisentError
from bisent.recipes import resolve as resolve_recipe
from bisent.training.word_vectors import corpus_vocab, encoder_word_vectors, joint_pca, write_vec
from divergence_toys import TOY, toy_bitext


def test_joint_pca_is_one_projection_for_all_blocks():
    """Full-rank PCA keeps every pairwise distance up to one scale, across blocks; equal rows stay equal."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(30, 8)), rng.normal(size=(20, 8))
    b[:5] = a[:5]
    pa, pb = joint_pca([a, b], 8)
    assert pa.shape == (30, 8) and pb.shape == (20, 8) and pa.dtype == np.float32
    np.testing.assert_allclose(pa[:5], pb[:5], atol=1e-6)
    X, Y = np.concatenate([a, b]), np.concatenate([pa, pb]).astype(np.float64)
    dx = np.linalg.norm(X[:, None] - X[None], axis=-1)
    dy = np.linalg.norm(Y[:, None] - Y[None], axis=-1)
    scale = dy.sum() / dx.sum()
    np.testing.assert_allclose(dy, scale * dx, atol=1e-4)
    assert abs(float((Y ** 2).mean()) - 1.0) < 1e-6                     # unit variance per coordinate on average
    # fewer dimensions: the leading components, most variance first
    p2 = np.concatenate(joint_pca([a, b], 3))
    var = p2.var(0)
    assert var[0] >= var[1] >= var[2]


def test_joint_pca_refuses_too_many_dimensions():
    with pytest.raises(BisentError, match="dimensions asked"):
        joint_pca([np.zeros((4, 3))], 5)


def test_corpus_vocab_counts_lowercased_words():
    sents = [["The", "cat"], ["the", "dog"], ["a", "cat"]]
    assert corpus_vocab(sents, 10, 2, True) == ["the", "cat"]
    assert corpus_vocab(sents, 1, 1, True) == ["the"]
    assert corpus_vocab(sents, 10, 2, False) == ["cat"]


def test_use_m3_words_keep_their_translations_near_after_the_joint_pca(tmp_path):
    """Translations are each other's nearest word in the shared 16-d space far above chance (1 in 12)."""
    from bisent.encoders import get_encoder

    en = ["house", "dog", "water", "window", "red", "book", "tree", "child", "night", "bread", "mountain", "king"]
    de = ["haus", "hund", "wasser", "fenster", "rot", "buch", "baum", "kind", "nacht", "brot", "berg", "könig"]
    ve, vd = encoder_word_vectors(get_encoder("use-m3"), [("en", en), ("de", de)], 16, progress=False)
    ve /= np.linalg.norm(ve, axis=1, keepdims=True)
    vd /= np.linalg.norm(vd, axis=1, keepdims=True)
    hits = int(((ve @ vd.T).argmax(1) == np.arange(len(en))).sum())
    assert hits >= 9, hits
    write_vec(tmp_path / "de.vec", de, vd)
    lines = (tmp_path / "de.vec").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "12 16" and lines[1].split(" ")[0] == "haus" and len(lines[1].split(" ")) == 17


def test_divergence_training_starts_from_the_encoders_word_vectors(tmp_path):
    """``model.word_vectors_from``: both word tables hold the joint-PCA vectors of the vocabulary at step 0."""
    from bisent.encoders import get_encoder
    from bisent.models.divergence import load_divergence
    from bisent.training.loop import train
    from bisent.training.recipe import validate_recipe

    recipe = validate_recipe({**TOY, "model": {**TOY["model"], "word_vectors_from": "char-ngram"}})
    res = train(recipe, [toy_bitext(60, 0)], [], [], tmp_path / "m", max_steps=0, progress=False)
    start = next(r for r in res.log if r.get("event") == "start")
    model, _ = load_divergence(tmp_path / "m")
    words = {side: model.vocab[side][2:] for side in ("src", "tgt")}
    assert start["word_vectors_found"] == {side: len(w) for side, w in words.items()}
    vs, vt = encoder_word_vectors(get_encoder("char-ngram"), [("xa", words["src"]), ("xb", words["tgt"])], 16,
                                  progress=False)
    assert torch.allclose(model.emb["src"].weight[2:], torch.from_numpy(vs), atol=1e-6)
    assert torch.allclose(model.emb["tgt"].weight[2:], torch.from_numpy(vt), atol=1e-6)


def test_word_vectors_and_word_vectors_from_together_is_an_error(tmp_path):
    from bisent.training.loop import train
    from bisent.training.recipe import validate_recipe

    recipe = validate_recipe({**TOY, "model": {**TOY["model"], "word_vectors_from": "char-ngram",
                                               "word_vectors": str(tmp_path / "x.vec")}})
    (tmp_path / "x.vec").write_text("", encoding="utf-8")
    with pytest.raises(BisentError, match="one or the other"):
        train(recipe, [toy_bitext(60, 0)], [], [], tmp_path / "m", max_steps=0, progress=False)


def test_cli_word_vector_files_replace_the_recipes_encoder(tmp_path, capsys):
    """The divergence recipe starts from use-m3's vectors; --word-vectors files take their place, and
    --set model.word_vectors_from=... picks another encoder."""
    import json

    from bisent.cli import main
    from divergence_toys import toy_pairs

    data = tmp_path / "train.tsv"
    data.write_text("".join(f"{s}\t{t}\n" for s, t in toy_pairs(60, 0)), encoding="utf-8")
    vec = tmp_path / "a.vec"
    vec.write_text("2 64\n" + "".join(f"a{i} " + " ".join(["0.5"] * 64) + "\n" for i in range(2)), encoding="utf-8")
    recipe = resolve_recipe("divergence")
    common = ["train", "-c", str(recipe), "--train", f"xa-xb={data}", "--max-steps", "0",
              "--no-progress"]
    assert main(common + ["-o", str(tmp_path / "m1"), "--word-vectors", f"xa={vec}"]) == 0
    assert main(common + ["-o", str(tmp_path / "m2"), "--set", "model.word_vectors_from=char-ngram"]) == 0
    starts = [next(json.loads(line) for line in open(tmp_path / m / "train_log.jsonl") if '"start"' in line)
              for m in ("m1", "m2")]
    assert starts[0]["word_vectors_found"] == {"src": 2}
    assert starts[1]["word_vectors_found"]["src"] == 40 and starts[1]["word_vectors_found"]["tgt"] == 40

"""The divergence model (Pham, Crego et al.): Eq. 2-3, repair arg max, negative generators, a toy model, bad input."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bisent.divergence import (  # noqa: E402
    ClassIndex,
    Cut,
    DiceAligner,
    WordClasses,
    best_cuts,
    cut_score,
    edge_costs,
    insert,
    pair_aggregates,
    paired,
    ratio_ok,
    repair_pair,
    replace,
    sentence_boundaries,
    tokenize,
    unpaired,
    word_accuracy,
)
from bisent.models.divergence import batch_aggregates  # noqa: E402
from bisent.training.loop import train  # noqa: E402
from bisent.training.objectives.divergence import word_loss  # noqa: E402
from bisent.training.recipe import validate_recipe  # noqa: E402
from divergence_toys import TOY, toy_bitext, toy_pairs  # noqa: E402

# --- Eq. 2-3 against a direct transcription ---------------------------------------------------------

def test_aggregation_and_word_loss_match_numpy():
    rng = np.random.default_rng(0)
    r = 1.7
    lens = [(4, 5), (2, 3)]                                               # second pair padded to (4, 5)
    S = rng.normal(size=(2, 4, 5))
    sm = np.array([[i < n for i in range(4)] for n, _ in lens])
    tm = np.array([[j < m for j in range(5)] for _, m in lens])
    ys = rng.choice([-1.0, 1.0], size=(2, 4))
    yt = rng.choice([-1.0, 1.0], size=(2, 5))
    a_s, a_t = batch_aggregates(torch.tensor(S), torch.tensor(sm), torch.tensor(tm), r)
    out = {"aggr_src": a_s, "aggr_tgt": a_t, "src_mask": torch.tensor(sm), "tgt_mask": torch.tensor(tm)}
    loss = float(word_loss(out, torch.tensor(ys), torch.tensor(yt)))
    total, words = 0.0, 0
    for b, (I, J) in enumerate(lens):
        for i in range(I):                                                # aggr_s(i) = 1/r log sum_j e^{r S(i,j)}
            agg = np.log(sum(np.exp(r * S[b, i, j]) for j in range(J))) / r
            assert float(a_s[b, i]) == pytest.approx(agg, abs=1e-9)
            total += np.log(1 + np.exp(agg * ys[b, i]))
        for j in range(J):
            agg = np.log(sum(np.exp(r * S[b, i, j]) for i in range(I))) / r
            assert float(a_t[b, j]) == pytest.approx(agg, abs=1e-9)
            total += np.log(1 + np.exp(agg * yt[b, j]))
        words += I + J
    assert loss == pytest.approx(total / words, abs=1e-9)
    a_s1, a_t1 = pair_aggregates(S[1, :2, :3], r)                               # the NumPy version used by repair
    np.testing.assert_allclose(a_s1, a_s[1, :2].numpy(), atol=1e-9)
    np.testing.assert_allclose(a_t1, a_t[1, :3].numpy(), atol=1e-9)


# --- repair arg max against brute force -------------------------------------------------------------

@pytest.mark.parametrize("seed,shape,tau", [(0, (6, 7), 1), (1, (7, 5), 2), (2, (5, 5), 0)])
def test_best_cuts_match_brute_force(seed, shape, tau):
    rng = np.random.default_rng(seed)
    S = rng.normal(size=shape)
    I, J = shape
    brute = [Cut(cut_score(S, 1.3, 0, I, 0, J), 0, I, 0, J)]
    for p, q in itertools.combinations(range(I + 1), 2):
        for a, b in itertools.combinations(range(J + 1), 2):
            if q - p > tau and b - a > tau and (p, q, a, b) != (0, I, 0, J):
                brute.append(Cut(cut_score(S, 1.3, p, q, a, b), p, q, a, b))
    brute.sort(key=lambda c: -c.score)
    fast = best_cuts(S, 1.3, n_best=20, tau=tau)
    assert len(fast) == min(20, len(brute))
    for f, b in zip(fast, brute):
        assert f.score == pytest.approx(b.score, abs=1e-9)
    assert fast[0][1:] == brute[0][1:]


@pytest.mark.parametrize("seed,shape,tau", [(3, (6, 7), 1), (4, (7, 5), 2)])
def test_best_cuts_with_edge_costs_match_brute_force(seed, shape, tau):
    """Each kept span pays the costs of its two edges; the arg max and the N-best follow."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=shape)
    I, J = shape
    cs, ct = rng.uniform(0, 2, size=I + 1), rng.uniform(0, 2, size=J + 1)

    def paid(p, q, a, b):
        return cut_score(S, 0.8, p, q, a, b) - cs[p] - cs[q] - ct[a] - ct[b]

    brute = [Cut(paid(0, I, 0, J), 0, I, 0, J)]
    for p, q in itertools.combinations(range(I + 1), 2):
        for a, b in itertools.combinations(range(J + 1), 2):
            if q - p > tau and b - a > tau and (p, q, a, b) != (0, I, 0, J):
                brute.append(Cut(paid(p, q, a, b), p, q, a, b))
    brute.sort(key=lambda c: -c.score)
    fast = best_cuts(S, 0.8, n_best=20, tau=tau, src_cost=cs, tgt_cost=ct)
    assert [f.score for f in fast] == pytest.approx([b.score for b in brute[:20]], abs=1e-9)
    assert fast[0][1:] == brute[0][1:]


def test_sentence_boundaries_after_final_punctuation():
    w = tokenize('He left. " Then ( see below . ) she came : fine').words
    # He left . " Then ( see below . ) she came : fine
    b = sentence_boundaries(w)
    assert b.shape == (len(w) + 1,) and b[0] and b[-1]
    assert [k for k in range(1, len(w)) if b[k]] == [3, 4, 9, 10, 13]  # after '.', the '"' and ')' behind one, ':'
    np.testing.assert_array_equal(edge_costs(w, 2.5), np.where(b, 0.0, 2.5))


def test_boundary_cost_moves_a_cut_onto_the_sentence_end():
    """A glued sentence whose first word the model half-aligns: the plain arg max keeps that word, the
    boundary cost moves the cut to the sentence end (the '.' the segmenter missed)."""
    S = -5.0 * np.ones((9, 6))                                            # src: 5 words + '.' + 3 glued words
    for i in range(6):
        S[i, i] = 4.0
    S[6, 2] = 3.0                                                          # glued word 1 looks aligned
    src, tgt = "s1 s2 s3 s4 s5 . x1 x2 x3", "t1 t2 t3 t4 t5 ."
    plain = repair_pair(_FixedScores(S), src, tgt, min_word_gain=0.0, boundary_cost=0.0)
    assert plain.status == "cut" and plain.src == "s1 s2 s3 s4 s5 . x1"
    moved = repair_pair(_FixedScores(S), src, tgt, min_word_gain=0.0, boundary_cost=4.0)
    assert moved.status == "cut" and moved.src == "s1 s2 s3 s4 s5 ." and moved.tgt == tgt


@pytest.mark.parametrize("seed,shape,tau", [(5, (6, 7), 1), (6, (5, 6), 0)])
def test_best_cuts_one_side_and_forbidden_edges_match_brute_force(seed, shape, tau):
    """one_side: only candidates that keep a side whole; an infinite edge cost: no candidate cuts there."""
    rng = np.random.default_rng(seed)
    S = rng.normal(size=shape)
    I, J = shape
    cs, ct = np.where(rng.random(I + 1) < 0.5, np.inf, 0.0), np.where(rng.random(J + 1) < 0.5, np.inf, 0.0)
    cs[[0, I]] = ct[[0, J]] = 0.0                                         # the ends of a side are boundaries

    def paid(p, q, a, b):
        return cut_score(S, 1.1, p, q, a, b) - cs[p] - cs[q] - ct[a] - ct[b]

    brute = [Cut(paid(0, I, 0, J), 0, I, 0, J)]
    for p, q in itertools.combinations(range(I + 1), 2):
        for a, b in itertools.combinations(range(J + 1), 2):
            whole = (p, q) == (0, I) or (a, b) == (0, J)
            if q - p > tau and b - a > tau and (p, q, a, b) != (0, I, 0, J) and whole:
                if np.isfinite(paid(p, q, a, b)):
                    brute.append(Cut(paid(p, q, a, b), p, q, a, b))
    brute.sort(key=lambda c: -c.score)
    fast = best_cuts(S, 1.1, n_best=20, tau=tau, src_cost=cs, tgt_cost=ct, one_side=True)
    assert [f.score for f in fast] == pytest.approx([b.score for b in brute[:20]], abs=1e-9)
    assert all(np.isfinite(f.score) and ((f.p, f.q) == (0, I) or (f.a, f.b) == (0, J)) for f in fast)


def _diagonal(I, J, pairs, junk=-5.0, match=4.0):
    S = junk * np.ones((I, J))
    for i, j in pairs:
        S[i, j] = match
    return S


def test_sentences_only_leaves_a_truncated_translation_whole_and_cuts_a_glued_sentence():
    """A truncated target (the source's first 4 words, cut mid-sentence): the default arg max cuts the source
    back to those 4 words; sentences_only cannot cut inside the sentence and leaves the pair whole. A glued
    source sentence after a '.' is cut back either way."""
    trunc = _FixedScores(_diagonal(9, 4, [(i, i) for i in range(4)]))
    src, tgt = "s1 s2 s3 s4 s5 s6 s7 s8 .", "t1 t2 t3 t4"
    assert repair_pair(trunc, src, tgt).src == "s1 s2 s3 s4"
    r = repair_pair(trunc, src, tgt, sentences_only=True)
    assert r.status == "kept" and (r.src, r.tgt) == (src, tgt)
    glued = _FixedScores(_diagonal(9, 5, [(i, i) for i in range(5)]))
    src, tgt = "s1 s2 s3 s4 . x1 x2 x3 .", "t1 t2 t3 t4 ."
    for kw in ({}, {"sentences_only": True}, {"sentences_only": True, "one_side": True, "match_ends": True}):
        r = repair_pair(glued, src, tgt, **kw)
        assert r.status == "cut" and (r.src, r.tgt) == ("s1 s2 s3 s4 .", tgt), kw


def test_one_side_cuts_only_one_side_of_a_neighbour_like_pair():
    """Each side has its own junk at opposite ends (source words 1-3, target words 5-7): the arg max cuts both
    sides; one_side cuts the source's junk and keeps the target whole."""
    S = _diagonal(7, 7, [(3 + k, k) for k in range(4)])
    src, tgt = "x1 x2 x3 s1 s2 s3 s4", "t1 t2 t3 t4 y1 y2 y3"
    both = repair_pair(_FixedScores(S), src, tgt, boundary_cost=0.0)
    assert both.status == "cut" and (both.src, both.tgt) == ("s1 s2 s3 s4", "t1 t2 t3 t4")
    one = repair_pair(_FixedScores(S), src, tgt, boundary_cost=0.0, one_side=True)
    assert one.status == "cut" and one.tgt == tgt and one.src != src
    assert repair_pair(_FixedScores(S), src, tgt, sentences_only=True).status == "kept"   # no sentence ends


def test_match_ends_refuses_a_source_cut_to_a_sentence_against_a_truncated_target():
    """Target: the first source sentence without its '.' (truncated there); sentences_only cuts the source
    back to that sentence, so one kept side ends a sentence and the other does not: match_ends refuses. The
    same cut against a whole target sentence ('.' kept) is allowed."""
    S = _diagonal(8, 3, [(i, i) for i in range(3)])
    src = "s1 s2 s3 . s5 s6 s7 ."
    cut = repair_pair(_FixedScores(S), src, "t1 t2 t3", sentences_only=True)
    assert cut.status == "cut" and cut.src == "s1 s2 s3 ."
    r = repair_pair(_FixedScores(S), src, "t1 t2 t3", sentences_only=True, match_ends=True)
    assert r.status == "kept" and r.src == src
    S = _diagonal(8, 4, [(i, i) for i in range(4)])
    r = repair_pair(_FixedScores(S), src, "t1 t2 t3 .", sentences_only=True, match_ends=True)
    assert r.status == "cut" and (r.src, r.tgt) == ("s1 s2 s3 .", "t1 t2 t3 .")


def test_best_cuts_drop_a_glued_sentence():
    S = -3 * np.ones((8, 5))                                               # source words 5-7 align to nothing
    for i in range(5):
        S[i, i] = 4.0
    best = best_cuts(S, 1.0, n_best=20, tau=3)[0]
    assert (best.p, best.q, best.a, best.b) == (0, 5, 0, 5)


# --- negative generators on the paper's examples ------------------------------------------------------

SRC = tokenize("What do you feel ?").words
TGT = tokenize("Que ressentez-vous ?").words                            # Que ressentez - vous ?


def test_tokenize_splits_punctuation_and_keeps_offsets():
    w = tokenize("Que ressentez-vous ?")
    assert w.words == ["Que", "ressentez", "-", "vous", "?"]
    assert w.spans[3] == (14, 18)


def test_paired_and_unpaired_labels():
    p = paired(SRC, TGT)
    assert p.y_src == [-1] * 5 and p.y_tgt == [-1] * 5
    rng = np.random.default_rng(0)
    u = unpaired(SRC, [["a"] * 30, ["Je", "ne", "sais", "pas", "."]], rng)   # the 30-word target breaks the ratio
    assert u.tgt == ["Je", "ne", "sais", "pas", "."] and u.y_src == [1] * 5 and u.y_tgt == [1] * 5
    assert unpaired(SRC, [["a"] * 30], rng) is None


def test_insert_labels_the_glued_words():
    rng = np.random.default_rng(0)
    ex = insert(SRC, TGT, [["Not", "."]], rng, side="src", where="end")
    assert ex.src == SRC + ["Not", "."]
    assert ex.y_src == [-1, -1, -1, -1, -1, 1, 1] and ex.y_tgt == [-1] * 5
    ex = insert(SRC, TGT, [["Non", "."]], rng, side="tgt", where="start")
    assert ex.tgt == ["Non", "."] + TGT and ex.y_tgt == [1, 1] + [-1] * 5
    assert insert(SRC, TGT, [["x"] * 12], rng, side="src") is None       # 17 words against 5: ratio above 3


def test_ratio_constraint():
    assert ratio_ok(4, 12) and not ratio_ok(4, 13)                        # short: up to 3.0
    assert ratio_ok(10, 20) and not ratio_ok(10, 21)                      # otherwise up to 2.0
    assert not ratio_ok(0, 3)


class _Aligner(DiceAligner):
    def align(self, src, tgt):                                            # you -> vous, feel -> ressentez
        return [(0, 0), (1, 1), (2, 3), (3, 1), (4, 4)]


def test_replace_labels_the_span_and_its_aligned_words():
    classes = {"src": WordClasses(), "tgt": WordClasses()}
    classes["src"].cls = {"what": 3, "do": 4, "you": 5, "we": 5, "feel": 6, "want": 6}
    pool = [["we", "want"]]
    index = {"src": ClassIndex(pool, classes["src"]), "tgt": ClassIndex([["x"]], classes["tgt"])}
    for seed in range(40):                                               # find the draw that picks 'you feel'
        ex = replace(SRC, TGT, index, classes, _Aligner(), np.random.default_rng(seed), side="src")
        if ex is not None and ex.info["start"] == 2 and ex.info["n"] == 2:
            break
    else:
        pytest.fail("no draw replaced 'you feel'")
    assert ex.src == ["What", "do", "we", "want", "?"]
    assert ex.y_src == [-1, -1, 1, 1, -1]
    assert ex.tgt == TGT and ex.y_tgt == [-1, 1, -1, 1, -1]              # ressentez and vous aligned to you/feel


def test_word_classes_group_words_of_the_same_kind():
    rng = np.random.default_rng(0)
    nouns, verbs = [f"n{i}" for i in range(20)], [f"v{i}" for i in range(20)]
    sents = [["the", nouns[rng.integers(20)], verbs[rng.integers(20)], "it", "."] for _ in range(2000)]
    wc = WordClasses(n_classes=4, seed=0).fit(sents)
    noun_cls, verb_cls = set(wc.of(nouns)), set(wc.of(verbs))
    assert not noun_cls & verb_cls                                      # never mixed
    assert wc.of([".", "42", "unseen"]) == [WordClasses.punct, WordClasses.number, WordClasses.rare]


# --- a toy model trained for seconds -----------------------------------------------------------------

def _losses(log: list[dict]) -> list[tuple[int, float]]:
    return [(r["step"], r["loss"]) for r in log if "loss" in r and "event" not in r]


def test_a_stopped_run_resumes_to_the_same_weights_and_loss_curve(tmp_path):
    """Stopped at step 5 (a checkpoint), resumed to 12: the same examples, losses and weights as one run of 12."""
    from safetensors.torch import load_file

    recipe = validate_recipe({**TOY, "objectives": {"word_classes": 4},          # R examples too
                              "train": {"log_every": 1, "checkpoint_every": 5}})
    data = [toy_bitext(120, 3)]
    straight = train(recipe, data, [], [], tmp_path / "a", max_steps=12, progress=False)
    train(recipe, data, [], [], tmp_path / "b", max_steps=5, progress=False)
    resumed = train(recipe, data, [], [], tmp_path / "b", max_steps=12, resume=True, progress=False)
    assert len(_losses(straight.log)) == 12
    assert _losses(resumed.log) == _losses(straight.log)
    a, b = load_file(tmp_path / "a" / "model.safetensors"), load_file(tmp_path / "b" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_toy_model_separates_divergent_from_parallel_words(toy_model):
    from bisent.divergence import NegativeSampler

    model, _ = toy_model
    held = [(tokenize(s).words, tokenize(t).words) for s, t in toy_pairs(200, 1)]
    sampler = NegativeSampler(8).fit(held)
    rng = np.random.default_rng(5)
    exs = [e for k in range(200) for e in [sampler.make(k, "PUI"[k % 3], rng)] if e is not None]
    scores = []
    for e in exs:
        S = model.pair_scores(e.src, e.tgt)
        scores.append(pair_aggregates(S, model.r))
    acc = word_accuracy(exs, scores)
    assert acc["PURI"] > 0.8, acc                                        # chance: about 0.5
    assert acc["P"] > 0.8 and acc["U"] > 0.8 and acc["I"] > 0.7, acc


def test_model_directory_round_trip_and_encoder(toy_model):
    from bisent.encoders import get_encoder

    model, out = toy_model
    enc = get_encoder(str(out))
    x = enc.encode(["a1 a2 a3", "a4 a5"], "xa", cache=False)  # exact float32 (the cache stores fp16)
    y = enc.encode(["b3 b2 b1"], "xb")
    assert x.shape == (2, 32) and y.shape == (1, 32)
    ref = model.sentence([["a1", "a2", "a3"]], "src")[0]
    np.testing.assert_allclose(x[0], ref / np.linalg.norm(ref), atol=1e-5)
    with pytest.raises(Exception, match="unknown language"):
        enc.encode(["x"], "de")


# --- commands and bad input ---------------------------------------------------------------------------

def _run(*args):
    from bisent.cli import main

    return main(list(args))


def test_divergence_and_repair_commands_account_for_every_line(toy_model, tmp_path, capsys):
    _, model_dir = toy_model
    src = tmp_path / "pairs.tsv"
    long_side = " ".join(["a1"] * 201)
    lines = [b"a1 a2 a3 a4 a5\tb5 b4 b3 b2 b1", b"\tb1 b2", b"a1\tb1", long_side.encode() + b"\tb1 b2",
             b"only one column", b"a1 \xff\tb1", b"a1 a2 a3 a4 a9 a9 a9 a9\tb4 b3 b2 b1"]
    src.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "words.jsonl"
    assert _run("divergence", str(src), "-m", str(model_dir), "-o", str(out)) == 0
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in recs] == list(range(1, 8))
    assert "src" in recs[0] and len(recs[0]["src"]) == 5 and {w[2] for w in recs[0]["src"]} <= {-1, 1}
    assert recs[1]["reason"] == "empty source side"
    assert "src" in recs[2]                                               # one-word sides are scored
    assert "more than 200" in recs[3]["reason"]
    assert "columns" in recs[4]["reason"] and "UTF-8" in recs[5]["reason"]
    fixed = tmp_path / "fixed.tsv"
    assert _run("repair", str(src), "-m", str(model_dir), "-o", str(fixed)) == 0
    rows = [x.split("\t") for x in fixed.read_text().splitlines()]
    assert [int(r[0]) for r in rows] == list(range(1, 8)) and all(len(r) == 8 for r in rows)
    assert rows[1][1] == "skipped: empty source side" and rows[2][1] == "kept"
    assert rows[4][1].startswith("skipped:") and rows[5][1].startswith("skipped:")
    assert rows[6][1] == "cut"                                              # the glued a9s
    strict = tmp_path / "strict.tsv"                                        # toy text has no sentence ends
    assert _run("repair", str(src), "-m", str(model_dir), "-o", str(strict), "--sentences-only") == 0
    assert [x.split("\t")[1] for x in strict.read_text().splitlines()][6] == "kept"


def test_bad_model_directory_is_one_line_error(tmp_path, capsys):
    (tmp_path / "config.json").write_text('{"architecture": "dan", "model": {}}')
    p = tmp_path / "p.tsv"
    p.write_text("a\tb\n")
    assert _run("divergence", str(p), "-m", str(tmp_path)) == 2
    assert "word scores need a divergence model" in capsys.readouterr().err


def test_repair_step_in_a_pipeline_rewrites_the_pair(toy_model):
    from bisent.filtering import FilterPipeline

    _, model_dir = toy_model
    # the toy model's glued words are divergent with odds below the default's 20:1: the plain arg max here
    # toy text has no sentence ends: every shape of cut allowed (the step's default cuts only at sentence ends)
    pipe = FilterPipeline.from_config([{"type": "repair", "model": str(model_dir), "tau": 2, "min_word_gain": 0,
                                        "sentences_only": False},
                                       {"type": "length", "min_length": 1, "max_length": 200}])
    glued = ("a1 a2 a3 a4 a5", "b5 b4 b3 b2 b1 b30 b31 b32 b33 b34")
    res = pipe.process([glued, ("a1 a2", "b2 b1")])
    assert all(r.kept for r in res)
    assert res[1].pair == ("a1 a2", "b2 b1")
    assert res[0].pair[0] == glued[0] and len(res[0].pair[1].split()) < 10


def test_repair_step_default_cuts_a_glued_sentence_only(monkeypatch):
    """The step's default shape (STEP_DEFAULTS): a glued sentence is cut, a truncated translation is left whole
    for the length-ratio rule; with every shape allowed (as `bisent repair`) the truncated pair is cut too."""
    from bisent.errors import BisentError
    from bisent.filtering import FilterPipeline
    from bisent.filtering import repair as repair_step

    glued = ("s1 s2 s3 s4 .", "t1 t2 t3 t4 . y1 y2 y3 .")
    trunc = ("s1 s2 s3 s4 s5 s6 s7 s8 .", "t1 t2 t3 t4")
    S = {glued: _diagonal(5, 9, [(i, i) for i in range(5)]), trunc: _diagonal(9, 4, [(i, i) for i in range(4)])}

    class Model(_FixedScores):
        def pair_scores(self, src, tgt):
            return S[(" ".join(src), " ".join(tgt))]

    monkeypatch.setattr(repair_step, "_model", lambda path: Model(None))
    pipe = FilterPipeline.from_config([{"type": "repair", "model": "m"}])
    assert pipe.steps[0].shape == {"sentences_only": True, "one_side": True, "match_ends": True}
    res = pipe.process([glued, trunc])
    assert res[0].pair == ("s1 s2 s3 s4 .", "t1 t2 t3 t4 .") and res[1].pair == trunc
    anyshape = FilterPipeline.from_config([{"type": "repair", "model": "m", "sentences_only": False,
                                            "one_side": False, "match_ends": False}])
    res = anyshape.process([glued, trunc])
    assert res[0].pair == ("s1 s2 s3 s4 .", "t1 t2 t3 t4 .") and res[1].pair == ("s1 s2 s3 s4", "t1 t2 t3 t4")
    with pytest.raises(BisentError, match="sentences_only"):
        FilterPipeline.from_config([{"type": "repair", "model": "m", "sentences_only": "yes"}])


def test_bench_divergence_runs_out_of_domain(toy_model, monkeypatch):
    """--domain gettext: Table 2 on UI-message pairs (a slice, for speed), no LibreOffice filter parts."""
    from bisent.bench import divergence as bench_div
    from bisent.bench.common import Recorder
    from bisent.datasets.domains import load_domain_pairs
    from bisent.encoders import get_encoder

    asked = []

    def few(domain, src, tgt, split=None):
        asked.append((domain, split))
        return load_domain_pairs(domain, src, tgt, split=split)[:400]

    monkeypatch.setattr(bench_div, "load_domain_pairs", few)
    monkeypatch.setattr(bench_div, "split_pairs", lambda domain, src, tgt, split="test": few(domain, src, tgt, split))
    _, out = toy_model
    recs = bench_div.run("en", "de", [get_encoder(str(out))], Recorder("divergence", None), limit=60,
                         progress=False, domain="gettext")
    assert asked == [("gettext", "test"), ("gettext", "train")]
    assert [r["part"] for r in recs] == ["table2"]                     # toy model: PUI, so no repair rows
    assert recs[0]["domain"] == "gettext" and sum(recs[0]["test_pairs"].values()) == 60


class _FixedScores:
    """A stand-in model whose alignment matrix is given: repair's decision rule alone is under test."""

    r, max_words = 1.0, 200

    def __init__(self, S):
        self.S = S

    def pair_scores(self, src, tgt):
        return self.S


@pytest.mark.parametrize("junk,cut_by_rule", [(-6.0, True), (-2.5, False)])
def test_repair_cuts_only_words_divergent_on_average(junk, cut_by_rule):
    """min_word_gain 1.5: a glued sentence of confidently divergent words is cut; one doubtful enough to cost
    little per word is cut only when the per-word rule is off (the paper's plain arg max). No sentence ends
    here, so the boundary preference is off in both calls."""
    S = junk * np.ones((8, 5))                                             # source words 6-8 align to nothing
    for i in range(5):
        S[i, i] = 4.0
    model = _FixedScores(S)
    src, tgt = "s1 s2 s3 s4 s5 x1 x2 x3", "t1 t2 t3 t4 t5"
    plain = repair_pair(model, src, tgt, min_word_gain=0.0, boundary_cost=0.0)
    assert plain.status == "cut" and plain.src == "s1 s2 s3 s4 s5"
    ruled = repair_pair(model, src, tgt, min_word_gain=1.5, boundary_cost=0.0)
    assert (ruled.status == "cut") is cut_by_rule
    assert ruled.src == (plain.src if cut_by_rule else src)


def test_repair_leaves_a_pair_without_parallel_core_whole():
    """A misaligned pair: every word divergent, so cutting it down cannot leave a parallel core."""
    S = -4.0 * np.ones((8, 6))
    S[6, 5] = 3.0                                                           # one stray match
    r = repair_pair(_FixedScores(S), "a b c d e f g h", "t u v w x y", min_word_gain=0.0)
    assert r.status == "kept"

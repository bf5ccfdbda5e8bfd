"""Retrieval modes on hand-built cases, including max-score's greedy one-to-one rule."""

import numpy as np

from bisent.mining.index import KNN
from bisent.mining.retrieval import mine, mine_texts, retrieve
from bisent.mining.scoring import Candidates, Scorer


def cands(fwd_idx, fwd_score, bwd_idx, bwd_score):
    f_i, f_s, b_i, b_s = (np.array(a) for a in (fwd_idx, fwd_score, bwd_idx, bwd_score))
    z = np.zeros(0)
    return Candidates(f_i, f_s.astype(np.float32), b_i, b_s.astype(np.float32), KNN(z, z, z, z), z, z)


# 3 sources, 3 targets. Forward best: s0->t0 (.9), s1->t0 (.8), s2->t2 (.3)
# Backward best: t0->s0 (.9), t1->s1 (.7), t2->s1 (.6)
C = cands(fwd_idx=[[0, 1], [0, 1], [2, 0]], fwd_score=[[.9, .1], [.8, .7], [.3, .2]],
          bwd_idx=[[0, 1], [1, 2], [1, 2]], bwd_score=[[.9, .8], [.7, .1], [.6, .3]])


def as_set(pairs):
    return {(p.src, p.tgt, round(p.score, 3)) for p in pairs}


def test_forward_backward_intersect():
    assert as_set(retrieve(C, "fwd")) == {(0, 0, .9), (1, 0, .8), (2, 2, .3)}
    assert as_set(retrieve(C, "bwd")) == {(0, 0, .9), (1, 1, .7), (1, 2, .6)}
    assert as_set(retrieve(C, "intersect")) == {(0, 0, .9)}


def test_max_is_greedy_one_to_one():
    # pool sorted: (s0,t0,.9) x2, (s1,t0,.8) t0 used -> skip, (s1,t1,.7) ok, (s1,t2,.6) s1 used -> skip,
    # (s2,t2,.3) ok
    got = retrieve(C, "max")
    assert [(p.src, p.tgt) for p in got] == [(0, 0), (1, 1), (2, 2)]
    assert len({p.src for p in got}) == len(got) == len({p.tgt for p in got})


def test_threshold_sorting_and_valid_masks():
    rng = np.random.default_rng(0)
    y = rng.standard_normal((20, 16)).astype(np.float32)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    x = y[::-1] + 0.05 * rng.standard_normal((20, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    pairs = mine(x, y, Scorer("ratio", 4), retrieval="max")
    assert [(p.src, p.tgt) for p in sorted(pairs, key=lambda p: p.src)] == [(i, 19 - i) for i in range(20)]
    assert all(a.score >= b.score for a, b in zip(pairs, pairs[1:]))
    thr = pairs[9].score
    assert len(mine(x, y, retrieval="max", threshold=thr)) == 10
    valid = np.ones(20, bool)
    valid[3] = False
    masked = mine(x, y, retrieval="max", src_valid=valid)
    assert 3 not in {p.src for p in masked} and len(masked) == 19


def test_mine_texts_deduplicates_and_points_at_first_occurrence():
    from bisent.encoders import get_encoder

    enc = get_encoder("char-ngram")
    src = ["the red house", "a blue car", "the red house", "green tea please"]
    tgt = ["green tea please!", "the red house.", "a blue car?"]
    pairs = mine_texts(src, tgt, enc, "en", "en", retrieval="max")
    assert {(p.src, p.tgt) for p in pairs} == {(0, 1), (1, 2), (3, 0)}

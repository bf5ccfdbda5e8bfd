"""The compressed index with exact re-ranking against brute force on real sentence embeddings (gettext UI messages,
English and German, use-m3): recall, exact similarities, mined-pair agreement; the probes' calibration against a
direct computation; the fallback to exact search; the saved stages (resume, an index of other vectors, a full disk)."""

from __future__ import annotations

import numpy as np
import pytest

from bisent.errors import BisentError
from bisent.mining import compressed
from bisent.mining.compressed import (
    MIN_PROBES,
    Rows,
    build_side,
    calibrate_pair_probes,
    compressed_params,
    search_side,
    train_lists,
)
from bisent.mining.index import knn_both
from bisent.mining.plan import knn_compressed
from bisent.mining.retrieval import retrieve
from bisent.mining.scoring import Scorer, combine
from bisent.mining.twostage import fit_projection

N = 3000


@pytest.fixture(scope="module")
def vecs():
    """(en (N, 512), de (N, 512)) float16: distinct English and German messages, the German in another order."""
    from bisent.datasets.gettext import load_pairs
    from bisent.encoders import get_encoder
    from bisent.encoders.shards import encode_fp16

    pairs = load_pairs("en", "de")
    en = list(dict.fromkeys(p.src for p in pairs))[:N]
    de = list(dict.fromkeys(p.tgt for p in pairs))[:N][::-1]
    enc = get_encoder("use-m3")
    return encode_fp16(enc, en, "en", progress=False), encode_fp16(enc, de, "de", progress=False)


def mined(knn):
    return {(p.src, p.tgt) for p in retrieve(Scorer("ratio", 4).candidates(knn), "max")}


def test_params_rule_by_size():
    assert compressed_params(300, 512) is None                                   # fewer than 16 lists' training
    small = compressed_params(N, 512)
    assert small.nlist == N // 39 and small.dim == 128 and small.codes == "fs64" and small.coarse == "flat"
    assert small.extra == 64 and compressed_params(N, 512, codes="sq8").extra == 16
    big = compressed_params(1_000_000, 512)
    assert big.nlist == 8000 and big.coarse == "flat" and big.codes == "fs64"
    assert compressed_params(100_000_000, 512).coarse == "hnsw"                 # 80,000 lists
    assert compressed_params(N, 102).codes == "sq8"                             # 51 sub-quantisers: no fast scan
    with pytest.raises(ValueError, match="codes"):
        compressed_params(N, 512, codes="pq7")
    assert compressed_params(N, 512, codes="fs64").codes == "fs64"              # 4-bit PQ, fast scan
    with pytest.raises(ValueError, match="codes"):
        compressed_params(N, 512, codes="fs48")


def test_scalar_codes_mine_the_exact_pairs(vecs):
    """8-bit scalar codes (the other code type) with 16 candidates re-ranked: the mined pairs the exact search's."""
    x, y = vecs
    stats = {}
    approx = knn_compressed(x, y, 4, codes="sq8", stats=stats, retrieval="max", progress=False)
    assert stats["params"]["codes"] == "sq8" and stats["params"]["extra"] == 16
    truth = mined(knn_both(x, y, 4, progress=False))
    assert len(truth & mined(approx)) / len(truth) >= 0.98


def test_recall_and_mined_pairs_against_brute_force(vecs):
    x, y = vecs
    exact = knn_both(x, y, 4, progress=False)
    stats = {}
    approx = knn_compressed(x, y, 4, stats=stats)
    assert stats["params"]["nlist"] == N // 39 and stats["nprobe_fwd"] < stats["params"]["nlist"]
    for e, a in ((exact.fwd_idx, approx.fwd_idx), (exact.bwd_idx, approx.bwd_idx)):
        assert np.mean(e[:, 0] == a[:, 0]) >= 0.97
        recall = np.mean([len(set(u) & set(v)) / 4 for u, v in zip(e, a)])
        assert recall >= 0.9, recall          # the probes are calibrated on the mined pairs, not on recall@k
    # every similarity returned is the exact one of its pair (re-ranked from the fp16 vectors)
    s = x.astype(np.float32) @ y.astype(np.float32).T
    np.testing.assert_allclose(approx.fwd_sim, np.take_along_axis(s, approx.fwd_idx, 1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(approx.bwd_sim, np.take_along_axis(s.T, approx.bwd_idx, 1), rtol=1e-5, atol=1e-5)
    truth = mined(exact)
    assert len(truth & mined(approx)) / len(truth) >= 0.98
    # one probe is not enough: the calibration is what gives the agreement
    few = knn_compressed(x, y, 4, nprobe=1, extra=0)
    assert (few.fwd_idx >= 0).all() and (few.bwd_idx >= 0).all()       # short lists completed exactly
    assert len(truth & mined(few)) / len(truth) < 0.98


def test_calibration_against_a_direct_computation(vecs):
    """The probes calibrate_pair_probes returns are the first of its ladder whose pairs, computed here from the full
    similarity matrix by hand, agree with brute force on the target share of the queries counted: every query
    (``top_share=1``, the sample is all), or those whose exact pair reaches a threshold."""
    x, y = vecs
    x, y = x[:2000], y[:2000]
    params = compressed_params(2000, 512, codes="sq8")             # the logic, not the codes
    p = fit_projection(x, y, params.dim)
    index = build_side(y, p, params, train_lists(y, p, params))
    s = x.astype(np.float32) @ y.astype(np.float32).T                           # (n, m)
    r_y = -np.sort(-s.T, axis=1)[:, :4].mean(axis=1)                             # exact neighbourhood of each target

    def best(sim, idx):
        score = combine("ratio", sim, sim.mean(axis=1)[:, None], r_y[idx])
        j = score.argmax(axis=1)
        rows = np.arange(len(sim))
        return idx[rows, j], sim[rows, j], score[rows, j]

    fi = np.argsort(-s, axis=1, kind="stable")[:, :4]
    truth, truth_cos, truth_score = best(np.take_along_axis(s, fi, 1), fi)

    def agreement(probes, rows, threshold=None):
        got, cos, score = best(*search_side(index, x[rows], p, Rows(y), 4, 16, probes))
        same = (got == truth[rows]) | (cos == truth_cos[rows])
        return np.mean(same if threshold is None else same & (score >= threshold))

    everyone = np.arange(len(x))
    target = 0.99
    probes, got = calibrate_pair_probes(index, x, y, p, 4, 16, target=target, sample=len(x), top_share=1.0)
    assert got == pytest.approx(agreement(probes, everyone)) and got >= target
    ladder = [MIN_PROBES]
    while ladder[-1] < probes:
        ladder.append(int(np.ceil(ladder[-1] * np.sqrt(2))))
    assert ladder[-1] == probes
    assert all(agreement(q, everyone) < target for q in ladder[:-1])
    assert calibrate_pair_probes(index, x, y, p, 4, 16, target=1.01, sample=300)[0] == params.nlist
    # with a threshold: the queries counted are those whose exact pair reaches it, the agreement theirs
    t = float(np.quantile(truth_score, 0.9))
    details = {}
    probes, got = calibrate_pair_probes(index, x, y, p, 4, 16, target=target, sample=len(x), threshold=t,
                                        details=details)
    counted = details["queries"]
    assert set(counted) <= set(np.flatnonzero(truth_score >= t)) and len(counted) >= 0.9 * np.sum(truth_score >= t)
    assert details["truth"] == {int(i): int(truth[i]) for i in counted}
    assert got == pytest.approx(agreement(probes, counted, t)) and got >= target


def test_backward_calibration_counts_the_pairs_the_forward_lists_mine(vecs):
    """Under max retrieval a pair is kept whichever direction finds it: the backward calibration counts a pair as
    agreeing when the forward lists mine it, computed here by hand, and so never needs more probes."""
    x, y = vecs
    x, y = x[:2000], y[:2000]
    params = compressed_params(2000, 512, codes="sq8")             # the logic, not the codes
    p = fit_projection(x, y, params.dim)
    index = build_side(x, p, params, train_lists(x, p, params))                 # the sources' lists: backward
    s = x.astype(np.float32) @ y.astype(np.float32).T                           # (n, m)
    r_x = -np.sort(-s, axis=1)[:, :4].mean(axis=1)
    r_y = -np.sort(-s.T, axis=1)[:, :4].mean(axis=1)
    exact = knn_both(x, y, 4, progress=False)
    fi = exact.fwd_idx                                                           # (n, 4) each source's targets
    score = combine("ratio", np.take_along_axis(s, fi, 1), r_x[:, None], r_y[fi])
    fwd_best = fi[np.arange(len(x)), score.argmax(axis=1)]                       # the forward lists' mined target
    bi = exact.bwd_idx
    b_score = combine("ratio", np.take_along_axis(s.T, bi, 1), r_y[:, None], r_x[bi])
    truth = bi[np.arange(len(y)), b_score.argmax(axis=1)]                        # each target's exact source

    def agreement(probes, rows, credit):
        sim, idx = search_side(index, y[rows], p, Rows(x), 4, 16, probes)
        sc = combine("ratio", sim, sim.mean(axis=1)[:, None], r_x[idx])
        got = idx[np.arange(len(rows)), sc.argmax(axis=1)]
        return np.mean((got == truth[rows]) | credit)

    target, details = 0.99, {}
    alone = calibrate_pair_probes(index, y, x, p, 4, 16, target=target, sample=len(y), top_share=1.0)
    probes, got = calibrate_pair_probes(index, y, x, p, 4, 16, target=target, sample=len(y), top_share=1.0,
                                        reverse=(exact.fwd_sim, exact.fwd_idx), details=details)
    rows = details["queries"]
    credit = fwd_best[truth[rows]] == rows                                       # mined forward already
    assert 0.5 < credit.mean() < 1.0
    assert got == pytest.approx(agreement(probes, rows, credit)) and got >= target
    assert probes <= alone[0]


def test_too_little_data_falls_back_to_exact(vecs, capsys):
    x, y = vecs[0][:300], vecs[1][:250]
    stats = {}
    got = knn_compressed(x, y, 4, stats=stats)
    assert "too few to train" in capsys.readouterr().err and stats["fallback"] == "exact"
    np.testing.assert_array_equal(got.fwd_idx, knn_both(x, y, 4).fwd_idx)


def test_dimension_mismatch_is_one_line(vecs):
    with pytest.raises(BisentError, match="dimension mismatch"):
        knn_compressed(vecs[0], vecs[1][:, :256], 4)


def test_saved_stages_resume_and_refuse_others(vecs, tmp_path, monkeypatch):
    x, y = vecs
    state = tmp_path / "knn"
    first = knn_compressed(x, y, 4, state=state)
    assert {"projection.npz", "lists-tgt.npz", "lists-src.npz", "index-tgt.faiss", "index-src.faiss", "fwd.npz",
            "bwd.npz"} <= {f.name for f in state.iterdir()}
    (state / "bwd.npz").unlink()                                      # killed in the last stage: it alone is redone
    from bisent.mining import plan

    monkeypatch.setattr(plan, "build_side", lambda *a, **k: pytest.fail("an index saved was built again"))
    again = knn_compressed(x, y, 4, state=state)
    for u, v in zip((first.fwd_idx, first.bwd_idx, first.bwd_sim), (again.fwd_idx, again.bwd_idx, again.bwd_sim)):
        np.testing.assert_array_equal(u, v)
    # other vectors: the folder is refused, one line
    other = y.copy()
    other[0] = other[1]
    with pytest.raises(BisentError, match="other inputs or settings"):
        knn_compressed(x, other, 4, state=state)


def test_index_of_other_vectors_is_refused(vecs, tmp_path):
    x, y = vecs
    state = tmp_path / "knn"
    knn_compressed(x, y, 4, state=state, nprobe=8)
    params = compressed_params(N, 512)
    p = fit_projection(x, y, 128)
    wrong = build_side(y[:2000], p, params, train_lists(y, p, params))
    compressed.write_index(wrong, state / "index-src.faiss")
    (state / "bwd.npz").unlink()
    with pytest.raises(BisentError, match="built on other vectors") as e:
        knn_compressed(x, y, 4, state=state, nprobe=8)
    assert "\n" not in str(e.value)


def test_full_disk_while_writing_the_index(vecs, tmp_path, monkeypatch):
    x, y = vecs
    state = tmp_path / "knn"

    def full(index, path):
        with open(path, "wb") as f:
            f.write(b"half an index")
        raise RuntimeError("Error: 'ret == (n)' failed: write error in " + path + ": No space left on device")

    monkeypatch.setattr(compressed.faiss, "write_index", full)
    with pytest.raises(BisentError, match="could not write the index .*No space left") as e:
        knn_compressed(x, y, 4, state=state, nprobe=8)
    assert "\n" not in str(e.value)
    names = {f.name for f in state.iterdir()}
    assert not any(".faiss" in name for name in names), names                  # nothing half-written, no temp


def test_many_probes_are_said(vecs, capsys, monkeypatch):
    """A calibration that needs more than 1/8 of the lists says so on stderr (the index scans much of the codes);
    one that needs few says only its probes."""
    import bisent.mining.plan as plan

    x, y = vecs
    nlist = compressed_params(N, 512).nlist
    monkeypatch.setattr(plan, "calibrate_pair_probes", lambda *a, **kw: (nlist // 2, 0.99))
    knn_compressed(x, y, 4)
    err = capsys.readouterr().err
    assert f"{nlist // 2} of {nlist} lists are needed (fwd)" in err and "--index twostage" in err
    monkeypatch.setattr(plan, "calibrate_pair_probes", lambda *a, **kw: (4, 0.99))
    knn_compressed(x, y, 4)
    err = capsys.readouterr().err
    assert "lists are needed" not in err and f"4 of {nlist} lists probed (fwd)" in err

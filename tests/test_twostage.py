"""Two-stage kNN (reduced-space scan + exact re-scoring) against brute force, and its place in `auto`."""

import numpy as np
import pytest

from bisent.cli import main
from bisent.encoders.shards import Shards, embed_file
from bisent.mining.index import resolve_method
from bisent.mining.twostage import fit_projection, knn_twostage, knn_twostage_queries
from conftest import unit_rows


def clustered(rng, n, d=64, centres=40, noise=0.5):
    """Unit rows (n, d) fp16 around a few centres, as sentence embeddings cluster by topic; variance falls
    off across dimensions, as in real embeddings (isotropic noise would leave PCA nothing to keep)."""
    c = rng.standard_normal((centres, d)) * (0.85 ** np.arange(d))
    v = c[rng.integers(0, centres, n)] + noise * rng.standard_normal((n, d)) * (0.9 ** np.arange(d))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float16)


def brute(x, y, k):
    s = x.astype(np.float32) @ y.astype(np.float32).T
    fi = np.argsort(-s, axis=1, kind="stable")[:, :k]
    bi = np.argsort(-s.T, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(s, fi, 1), fi, np.take_along_axis(s.T, bi, 1), bi


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_enough_candidates_equal_brute_force(threads):
    """With every row a candidate, stage 2 sees all pairs: lists and scores are brute force's, whatever the
    reduced dimension, tiles and threads."""
    rng = np.random.default_rng(1)
    x, y = clustered(rng, 700), clustered(rng, 450)
    fs, fi, bs, bi = brute(x, y, 4)
    r = knn_twostage(x, y, 4, dim=8, extra=700, threads=threads, block_rows=128, block_cols=100)
    np.testing.assert_array_equal(r.fwd_idx, fi)
    np.testing.assert_array_equal(r.bwd_idx, bi)
    np.testing.assert_allclose(r.fwd_sim, fs, atol=1e-6)
    np.testing.assert_allclose(r.bwd_sim, bs, atol=1e-6)


def test_few_candidates_agree_and_scores_are_exact():
    """A real reduction (64 -> 16 dims, 16 extra): top-1 as brute force on most rows, and every neighbour
    returned carries its exact full-dimension score; a starved first stage (8 dims, no extra) does worse."""
    rng = np.random.default_rng(2)
    x, y = clustered(rng, 2000), clustered(rng, 1500)
    s = x.astype(np.float32) @ y.astype(np.float32).T
    fs, fi, bs, bi = brute(x, y, 4)
    r = knn_twostage(x, y, 4, dim=16, extra=16)
    assert np.mean(r.fwd_idx[:, 0] == fi[:, 0]) >= 0.98 and np.mean(r.bwd_idx[:, 0] == bi[:, 0]) >= 0.98
    np.testing.assert_allclose(r.fwd_sim, np.take_along_axis(s, r.fwd_idx, 1), atol=1e-6)
    np.testing.assert_allclose(r.bwd_sim, np.take_along_axis(s.T, r.bwd_idx, 1), atol=1e-6)
    assert np.all(np.diff(r.fwd_sim, axis=1) <= 0) and np.all(np.diff(r.bwd_sim, axis=1) <= 0)
    starved = knn_twostage(x, y, 4, dim=8, extra=0)
    assert np.mean(starved.fwd_idx[:, 0] == fi[:, 0]) < 0.95


@pytest.mark.parametrize("threads", [1, 2])
def test_sampled_queries_get_the_full_runs_lists(threads):
    """knn_twostage_queries gives the sampled rows exactly the lists the whole two-stage run gives them (a
    starved first stage, so the lists differ from brute force and the equality is not trivial)."""
    rng = np.random.default_rng(3)
    x, y = clustered(rng, 3000), clustered(rng, 2500)
    full = knn_twostage(x, y, 4, dim=8, extra=2, threads=threads)
    qs = np.sort(rng.choice(len(x), 300, replace=False))
    qt = np.sort(rng.choice(len(y), 250, replace=False))
    got = knn_twostage_queries(x, y, qs, qt, 4, dim=8, extra=2, threads=threads)
    assert np.mean(full.fwd_idx[:, 0] == brute(x, y, 4)[1][:, 0]) < 0.99           # not brute force
    np.testing.assert_array_equal(got.fwd_idx, full.fwd_idx[qs])
    np.testing.assert_array_equal(got.bwd_idx, full.bwd_idx[qt])
    np.testing.assert_array_equal(got.fwd_sim, full.fwd_sim[qs])
    np.testing.assert_array_equal(got.bwd_sim, full.bwd_sim[qt])


def test_killed_scan_resumes_from_its_state(tmp_path, monkeypatch):
    """A scan killed after a few row blocks, run again with the same state folder, skips the saved blocks and
    ends with the uninterrupted run's lists; a state of other inputs is a clear error, not reused."""
    import bisent.mining.topk as topk
    import bisent.mining.twostage as ts
    from bisent.errors import BisentError

    rng = np.random.default_rng(4)
    x, y = clustered(rng, 1300), clustered(rng, 900)
    want = knn_twostage(x, y, 4, dim=8, extra=3, threads=2, block_rows=128, block_cols=256)
    real, calls = topk.update_tile, {"n": 0}

    def dying(*a):
        calls["n"] += 1
        if calls["n"] > 4 * 8:                     # 4 tiles a row block: dies in the 9th row block
            raise KeyboardInterrupt
        return real(*a)

    monkeypatch.setattr(ts, "SAVE_EVERY", 0.0)
    monkeypatch.setattr(topk, "update_tile", dying)
    state = tmp_path / "state"
    with pytest.raises(KeyboardInterrupt):
        knn_twostage(x, y, 4, dim=8, extra=3, threads=2, block_rows=128, block_cols=256, state=state)
    assert (state / "scan.npz").is_file()
    monkeypatch.setattr(topk, "update_tile", real)
    with np.load(state / "scan.npz") as z:
        saved = int(z["done"].sum())
    assert 0 < saved < 11
    calls["n"] = 0

    def counting(*a):
        calls["n"] += 1
        return real(*a)

    monkeypatch.setattr(topk, "update_tile", counting)
    got = knn_twostage(x, y, 4, dim=8, extra=3, threads=1, block_rows=128, block_cols=256, state=state)
    assert calls["n"] == (11 - saved) * 4                           # only the blocks not saved were scanned
    for a, b in ((got.fwd_idx, want.fwd_idx), (got.bwd_idx, want.bwd_idx), (got.fwd_sim, want.fwd_sim)):
        np.testing.assert_array_equal(a, b)
    assert (state / "candidates.npz").is_file() and not (state / "scan.npz").exists()
    with pytest.raises(BisentError, match="other inputs"):
        knn_twostage(x[:-1], y, 4, dim=8, extra=3, block_rows=128, block_cols=256, state=state)


def test_projection_is_orthonormal_and_keeps_the_main_directions():
    rng = np.random.default_rng(3)
    basis = np.linalg.qr(rng.standard_normal((32, 32)))[0]
    v = (rng.standard_normal((3000, 32)) * np.r_[np.full(4, 10.0), np.full(28, 0.1)]) @ basis.T  # 4 strong axes
    p = fit_projection(v.astype(np.float32), v.astype(np.float32), 4)
    np.testing.assert_allclose(p.T @ p, np.eye(4), atol=1e-5)
    np.testing.assert_allclose(np.linalg.svd(basis[:, :4].T @ p)[1], 1, atol=1e-3)   # same subspace
    assert np.array_equal(fit_projection(v, v, 32), np.eye(32, dtype=np.float32))    # no reduction asked


def test_shards_stream_like_arrays(tmp_path):
    """Vectors folders (fp16 shards) give the result of the same rows as arrays."""
    from bisent.encoders import get_encoder

    enc = get_encoder("random")
    for name, n in (("a", 230), ("b", 170)):
        (tmp_path / f"{name}.txt").write_text("".join(f"sentence {name} {i}\n" for i in range(n)), encoding="utf-8")
        embed_file(tmp_path / f"{name}.txt", "en", enc, tmp_path / name, shard_rows=64)
    xs, ys = Shards(tmp_path / "a"), Shards(tmp_path / "b")
    a = knn_twostage(xs, ys, 3, dim=16, extra=5)
    b = knn_twostage(xs.load(), ys.load(), 3, dim=16, extra=5)
    for u, v in zip((a.fwd_idx, a.bwd_idx, a.fwd_sim), (b.fwd_idx, b.bwd_idx, b.fwd_sim)):
        np.testing.assert_array_equal(u, v)


def test_auto_picks_twostage_then_compressed(monkeypatch):
    import bisent.mining.index as index

    assert index.choose_index(1_000_000, 512) == ("twostage", {})
    assert index.choose_index(3_000_000, 512) == ("compressed", {})
    assert index.choose_index(200_000, 512) == ("exact", {})
    x, y = unit_rows(np.random.default_rng(4), 30, 8), unit_rows(np.random.default_rng(5), 20, 8)
    assert resolve_method("auto", x, y) == ("exact", {})
    monkeypatch.setattr(index, "EXACT_MAX_PAIRS", 599)
    assert resolve_method("auto", x, y) == ("twostage", {})
    monkeypatch.setattr(index, "TWOSTAGE_MAX_PAIRS", 599)
    assert resolve_method("auto", x, y) == ("compressed", {})


def test_bad_settings_are_errors(tmp_path, capsys):
    x = np.zeros((5, 8), np.float32)
    with pytest.raises(ValueError, match="dim"):
        knn_twostage(x, x, 2, dim=0)
    with pytest.raises(ValueError, match="dimension mismatch"):
        knn_twostage(x, np.zeros((5, 4), np.float32), 2)
    src = tmp_path / "a.txt"
    src.write_text("one\ntwo\n", encoding="utf-8")
    code = main(["mine", src, src, "-l", "en", "-L", "en", "-e", "random", "-o", tmp_path / "o.tsv",
                 "--index", "twostages"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "twostages" in err[0] and "twostage" in err[0]


def test_cli_mines_with_twostage(tmp_path, capsys):
    """`bisent mine --index twostage` runs end to end; with every row a candidate it mines as exact does (random
    vectors hold no translation, so no threshold reaches the default's estimated precision: every pair is kept)."""
    src, tgt = tmp_path / "a.txt", tmp_path / "b.txt"
    src.write_text("".join(f"source line {i}\n" for i in range(60)), encoding="utf-8")
    tgt.write_text("".join(f"target line {i}\n" for i in range(50)), encoding="utf-8")
    outs = {}
    for method in ("exact", "twostage"):
        assert main(["mine", src, tgt, "-l", "en", "-L", "en", "-e", "random", "-o", tmp_path / f"{method}.tsv",
                     "--index", method, "--threshold", "none"]) == 0
        outs[method] = (tmp_path / f"{method}.tsv").read_text(encoding="utf-8").splitlines()
    # the random encoder's 512-d vectors: 192 dims and 20 candidates out of 50-60 rows find every neighbour here
    assert [r.split("\t")[1:] for r in outs["twostage"]] == [r.split("\t")[1:] for r in outs["exact"]]
    assert not (tmp_path / "twostage.tsv.knn").exists()          # its default state folder, removed once written
    state = tmp_path / "s"
    assert main(["mine", src, tgt, "-l", "en", "-L", "en", "-e", "random", "-o", tmp_path / "s.tsv",
                 "--index", "twostage", "--state", state, "--threshold", "none"]) == 0
    assert (tmp_path / "s.tsv").read_text(encoding="utf-8").splitlines() == outs["twostage"] and not state.exists()

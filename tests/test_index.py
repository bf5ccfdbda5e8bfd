"""Exact blocked kNN equals brute force; approximate search agrees with it."""

import numpy as np
import pytest

from bisent.mining.index import knn_both
from conftest import unit_rows


def brute(x, y, k):
    s = x.astype(np.float32) @ y.astype(np.float32).T
    fi = np.argsort(-s, axis=1, kind="stable")[:, :k]
    bi = np.argsort(-s.T, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(s, fi, 1), fi, np.take_along_axis(s.T, bi, 1), bi


@pytest.mark.parametrize("n,m,k,br,bc", [(300, 170, 5, 64, 50), (97, 311, 3, 1000, 1000), (250, 250, 1, 7, 333),
                                         (40, 500, 8, 13, 64)])
def test_exact_knn_matches_numpy(n, m, k, br, bc):
    rng = np.random.default_rng(n * m + k)
    x, y = unit_rows(rng, n, 32), unit_rows(rng, m, 32)
    r = knn_both(x, y, k, block_rows=br, block_cols=bc)
    fs, fi, bs, bi = brute(x, y, k)
    np.testing.assert_array_equal(r.fwd_idx, fi)
    np.testing.assert_array_equal(r.bwd_idx, bi)
    np.testing.assert_allclose(r.fwd_sim, fs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r.bwd_sim, bs, rtol=1e-5, atol=1e-6)


def test_fp16_input_is_upcast_per_block():
    rng = np.random.default_rng(1)
    x, y = unit_rows(rng, 120, 16, np.float16), unit_rows(rng, 90, 16, np.float16)
    r = knn_both(x, y, 4, block_rows=32, block_cols=40)
    fs, fi, bs, bi = brute(x, y, 4)
    np.testing.assert_array_equal(r.fwd_idx, fi)
    np.testing.assert_array_equal(r.bwd_idx, bi)


def test_k_larger_than_other_side_is_clamped():
    rng = np.random.default_rng(2)
    x, y = unit_rows(rng, 10, 8), unit_rows(rng, 3, 8)
    r = knn_both(x, y, 5)
    assert r.fwd_idx.shape == (10, 3) and r.bwd_idx.shape == (3, 5)
    assert set(r.fwd_idx[0]) == {0, 1, 2}


@pytest.mark.parametrize("method", ["ivf", "hnsw"])
def test_approximate_agrees_with_exact(method):
    rng = np.random.default_rng(3)
    # clustered data, as sentence embeddings are
    centres = unit_rows(rng, 40, 64)
    x = centres[rng.integers(0, 40, 2000)] + 0.15 * rng.standard_normal((2000, 64)).astype(np.float32)
    y = centres[rng.integers(0, 40, 1500)] + 0.15 * rng.standard_normal((1500, 64)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    exact = knn_both(x, y, 4)
    approx = knn_both(x, y, 4, method=method, nprobe=8)
    top1 = np.mean(exact.fwd_idx[:, 0] == approx.fwd_idx[:, 0])
    assert top1 > 0.9, top1
    assert np.mean(exact.bwd_idx[:, 0] == approx.bwd_idx[:, 0]) > 0.9


def test_ivf_probes_enough_for_98_percent():
    """IVF with probes calibrated (no --nprobe): top-1 matches brute force on ≥ 98 % of ALL queries both ways
    (clustered data, as sentence embeddings are); one probe does not."""
    from bisent.mining.index import ivf_lists

    rng = np.random.default_rng(4)
    centres = unit_rows(rng, 200, 32)

    def sample(n):
        v = centres[rng.integers(0, 200, n)] + 0.25 * rng.standard_normal((n, 32)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    x, y = sample(3000), sample(2500)
    opts = {"nlist": ivf_lists(3000), "quantizer": "fp16"}
    s = x @ y.T
    fi, bi = s.argmax(axis=1), s.argmax(axis=0)                       # brute-force nearest, both ways
    got = knn_both(x, y, 4, method="ivf", **opts)
    assert np.mean(got.fwd_idx[:, 0] == fi) >= 0.98
    assert np.mean(got.bwd_idx[:, 0] == bi) >= 0.98
    starved = knn_both(x, y, 4, method="ivf", nlist=opts["nlist"], nprobe=1)
    assert np.mean(starved.fwd_idx[:, 0] == fi) < 0.95


def test_calibrated_probes_are_the_fewest_that_reach_the_target():
    from bisent.mining.index import IVF_MIN_PROBES, build_index, calibrate_probes

    rng = np.random.default_rng(5)
    x, y = unit_rows(rng, 1500, 16), unit_rows(rng, 2000, 16)          # no clusters: IVF's hard case
    index = build_index(y, "ivf", nlist=64)
    truth = (x @ y.T).argmax(axis=1)

    def agreement(p):
        index.nprobe = p
        return np.mean(index.search(x, 1)[1][:, 0] == truth)

    p = calibrate_probes(index, x, y, 0.95, sample=1500)                # the sample is every query here
    assert IVF_MIN_PROBES < p < 64 and agreement(p) >= 0.95
    assert agreement(int(np.floor(p / np.sqrt(2)))) < 0.95                 # the step below falls short
    assert calibrate_probes(index, x, y, 1.01, sample=200) == 64        # unreachable: every list


def test_ivf_rule_grows_with_size():
    from bisent.mining.index import choose_index, ivf_lists

    assert choose_index(200_000, 512) == ("exact", {})
    assert ivf_lists(2_000_001) == 5656 > ivf_lists(100_000)
    assert choose_index(2_000_001, 512) == ("compressed", {})
    assert choose_index(2_000_000, 512) == ("twostage", {})

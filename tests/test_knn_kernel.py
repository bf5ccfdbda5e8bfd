"""The fused top-k kernel: exactly the brute-force order, ties included, whatever the tiling or tile order."""

import numpy as np
import pytest

from bisent.mining.index import knn_both
from bisent.mining.topk import empty_heaps, sort_heaps, update_tile


def brute(x, y, k):
    """Top-k both ways by a full stable sort: larger score first, then smaller index."""
    s = x.astype(np.float32) @ y.astype(np.float32).T
    fi = np.argsort(-s, axis=1, kind="stable")[:, :k]
    bi = np.argsort(-s.T, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(s, fi, 1), fi, np.take_along_axis(s.T, bi, 1), bi


def tied(rng, n, d=6):
    """Vectors of small integers: scores are exact in fp32 and most of them tie."""
    return rng.integers(-1, 2, size=(n, d)).astype(np.float32)


@pytest.mark.parametrize("n,m,k,br,bc", [(200, 150, 5, 64, 50), (90, 300, 3, 7, 33), (150, 150, 8, 1000, 1000),
                                         (61, 47, 1, 5, 5)])
def test_ties_resolved_as_a_stable_sort(n, m, k, br, bc):
    rng = np.random.default_rng(n + m + k)
    x, y = tied(rng, n), tied(rng, m)
    r = knn_both(x, y, k, block_rows=br, block_cols=bc)
    fs, fi, bs, bi = brute(x, y, k)
    assert len(np.unique(fs)) < n * k / 4                     # the data really is full of ties
    np.testing.assert_array_equal(r.fwd_idx, fi)
    np.testing.assert_array_equal(r.bwd_idx, bi)
    np.testing.assert_array_equal(r.fwd_sim, fs)
    np.testing.assert_array_equal(r.bwd_sim, bs)


def test_identical_rows_keep_the_smallest_indices():
    x = np.ones((10, 4), dtype=np.float32)
    y = np.ones((30, 4), dtype=np.float32)
    r = knn_both(x, y, 4, block_rows=3, block_cols=7)
    assert (r.fwd_idx == [0, 1, 2, 3]).all() and (r.bwd_idx == [0, 1, 2, 3]).all()


def test_tile_order_does_not_matter():
    """Fed in reverse order, ties at the k-th place still go to the smaller index (the heap root rule)."""
    rng = np.random.default_rng(7)
    x, y = tied(rng, 40), tied(rng, 50)
    s = x @ y.T
    k = 4
    fval, fids = empty_heaps(40, k)
    bval, bids = empty_heaps(50, k)
    bthr = np.empty(16, dtype=np.float32)
    for i0 in reversed(range(0, 40, 16)):
        for j0 in reversed(range(0, 50, 16)):
            tile = np.ascontiguousarray(s[i0:i0 + 16, j0:j0 + 16])
            update_tile(tile, i0, j0, fval, fids, bval, bids, bthr)
    sort_heaps(fval, fids)
    sort_heaps(bval, bids)
    fs, fi, bs, bi = brute(x, y, k)
    np.testing.assert_array_equal(fids, fi)
    np.testing.assert_array_equal(bids, bi)
    np.testing.assert_array_equal(fval, fs)


def test_zero_neighbours_and_empty_sides():
    x = np.ones((5, 3), dtype=np.float32)
    assert knn_both(x, x, 0).fwd_idx.shape == (5, 0)
    r = knn_both(x, x[:0], 3)
    assert r.fwd_idx.shape == (5, 0) and r.bwd_idx.shape == (0, 3)

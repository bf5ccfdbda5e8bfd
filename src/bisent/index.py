"""k-nearest neighbours by inner product, both directions, over arrays or shards.

:func:`knn_both` makes ONE pass over the score matrix ``S = X Yᵀ`` in tiles of
``block_rows × block_cols``: each tile is computed once (fp16 upcast to fp32
per block, one sgemm) and feeds both the forward top-k (each row of X among Y)
and the backward top-k (each row of Y among X). FAISS's heap arrays do the
top-k selection. Memory is bounded by the fp16 vectors, one tile and its
transpose, and the (n + m) × k results; never by n × m.

Approximate search (``method="ivf"`` or ``"hnsw"``) builds a FAISS index on
each side instead; it is measured against the exact search in
``benchmarks/knn.py`` and tested against it in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np
from tqdm.auto import tqdm

from .vectors import Shards

BLOCK_ROWS = 4096
BLOCK_COLS = 8192


@dataclass
class KNN:
    """Top-k neighbours both ways, best first.

    fwd_sim (n, k) float32, fwd_idx (n, k) int64: rows of Y nearest each row of X.
    bwd_sim (m, k) float32, bwd_idx (m, k) int64: rows of X nearest each row of Y.
    """

    fwd_sim: np.ndarray
    fwd_idx: np.ndarray
    bwd_sim: np.ndarray
    bwd_idx: np.ndarray


def _blocks(v, rows: int):
    """Yield ``(start, block)`` over an array or :class:`Shards`."""
    if isinstance(v, Shards):
        yield from v.blocks(rows)
    else:
        for s in range(0, v.shape[0], rows):
            yield s, v[s:s + rows]


def _heap(n: int, k: int):
    """A FAISS min-heap array keeping the k largest values per row; returns (heap, sims, ids)."""
    sims = np.empty((n, k), dtype=np.float32)
    ids = np.empty((n, k), dtype=np.int64)
    h = faiss.float_minheap_array_t()
    h.nh, h.k = n, k
    h.val, h.ids = faiss.swig_ptr(sims), faiss.swig_ptr(ids)
    h.heapify()
    return h, sims, ids


def knn_both(x, y, k: int = 4, *, method: str = "exact", block_rows: int = BLOCK_ROWS,
             block_cols: int = BLOCK_COLS, progress: bool | None = None, **approx) -> KNN:
    """Top-``k`` inner-product neighbours of X (n, d) among Y (m, d) and of Y among X.

    ``x`` and ``y`` are arrays (any float dtype; fp16 is upcast per block) or
    :class:`Shards`. ``k`` is clamped to the other side's size. ``method`` is
    ``"exact"`` (blocked, one pass), ``"ivf"`` or ``"hnsw"`` (approximate; see
    :func:`knn_approx` for its keyword arguments).
    """
    if method != "exact":
        return knn_approx(x, y, k, method=method, **approx)
    n, m = len(x), len(y)
    d = x.shape[1] if not isinstance(x, Shards) else x.dim
    dy = y.shape[1] if not isinstance(y, Shards) else y.dim
    if d != dy:
        raise ValueError(f"dimension mismatch: {d} vs {dy}")
    kf, kb = min(k, m), min(k, n)
    fwd, fsim, fidx = _heap(n, kf)
    bwd, bsim, bidx = _heap(m, kb)
    if n == 0 or m == 0:
        return KNN(fsim, fidx, bsim, bidx)
    tiles = -(-n // block_rows) * -(-m // block_cols)
    with tqdm(total=tiles, desc="kNN", unit="tile", disable=(not progress) if progress is not None else None,
              leave=False) as bar:
        for i0, xb in _blocks(x, block_rows):
            xb = np.ascontiguousarray(xb, dtype=np.float32)           # (bx, d)
            for j0, yb in _blocks(y, block_cols):
                yb = np.ascontiguousarray(yb, dtype=np.float32)       # (by, d)
                tile = xb @ yb.T                                      # (bx, by) one sgemm
                bx, by = tile.shape
                # forward: rows i0..i0+bx of X get candidates j0..j0+by
                fwd.addn(by, faiss.swig_ptr(tile), j0, i0, bx)
                # backward: rows j0..j0+by of Y get candidates i0..i0+bx
                tile_t = np.ascontiguousarray(tile.T)                 # (by, bx)
                bwd.addn(bx, faiss.swig_ptr(tile_t), i0, j0, by)
                bar.update(1)
    fwd.reorder()
    bwd.reorder()
    return KNN(fsim, fidx, bsim, bidx)


def _to_float32(v) -> np.ndarray:
    if isinstance(v, Shards):
        return np.concatenate([b.astype(np.float32) for _, b in v.blocks(65536)]) if len(v) else np.zeros((0, v.dim), np.float32)
    return np.ascontiguousarray(v, dtype=np.float32)


def build_index(vectors: np.ndarray, method: str, *, nlist: int | None = None, hnsw_m: int = 32,
                ef_construction: int = 80, seed: int = 0) -> faiss.Index:
    """An approximate inner-product index over ``vectors`` (m, d) float32 (fp16 storage inside)."""
    m, d = vectors.shape
    if method == "ivf":
        nlist = nlist or max(1, min(65536, int(np.sqrt(m))))
        quantizer = faiss.IndexFlatIP(d)
        index = faiss.IndexIVFScalarQuantizer(quantizer, d, nlist, faiss.ScalarQuantizer.QT_fp16,
                                              faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(seed)
        sample = vectors[rng.choice(m, size=min(m, 64 * nlist), replace=False)] if m > 64 * nlist else vectors
        index.cp.seed = seed
        index.train(sample)
    elif method == "hnsw":
        index = faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_fp16, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.train(vectors[: min(m, 10000)])
    else:
        raise ValueError(f"unknown kNN method '{method}' (exact, ivf, hnsw)")
    index.add(vectors)
    return index


def knn_approx(x, y, k: int = 4, *, method: str = "ivf", nlist: int | None = None, nprobe: int = 16,
               hnsw_m: int = 32, ef_search: int = 64, seed: int = 0) -> KNN:
    """Approximate top-``k`` both ways with an IVF (fp16 scalar quantiser) or HNSW index per side."""
    xf, yf = _to_float32(x), _to_float32(y)
    out = []
    for q, db in ((xf, yf), (yf, xf)):
        kk = min(k, db.shape[0])
        index = build_index(db, method, nlist=nlist, hnsw_m=hnsw_m, seed=seed)
        if method == "ivf":
            index.nprobe = nprobe
        else:
            index.hnsw.efSearch = max(ef_search, kk)
        sim, idx = index.search(q, kk)
        out += [sim.astype(np.float32), idx.astype(np.int64)]
    return KNN(*out)

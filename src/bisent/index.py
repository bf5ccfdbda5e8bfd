"""k-nearest neighbours by inner product, both directions, over arrays or shards.

:func:`knn_both` makes ONE pass over the score matrix ``S = X Yᵀ`` in tiles of
``block_rows × block_cols``: each tile is computed once (fp16 upcast to fp32
per block, one sgemm) and feeds both the forward top-k (each row of X among Y)
and the backward top-k (each row of Y among X) in one compiled pass over the
tile (:mod:`bisent.topk`). Memory is bounded by the fp16 vectors, one tile and
the (n + m) × k results; never by n × m.

Approximate search (``method="ivf"`` or ``"hnsw"``) builds a FAISS index on
each side instead; it is measured against the exact search in
``benchmarks/knn.py`` and tested against it in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np

from .progress import progress_bar
from .topk import empty_heaps, sort_heaps, update_tile
from .vectors import iter_blocks

BLOCK_ROWS = 4096
BLOCK_COLS = 4096


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


def knn_both(x, y, k: int = 4, *, method: str = "exact", block_rows: int = BLOCK_ROWS,
             block_cols: int = BLOCK_COLS, progress: bool | None = None, **approx) -> KNN:
    """Top-``k`` inner-product neighbours of X (n, d) among Y (m, d) and of Y among X.

    ``x`` and ``y`` are arrays (any float dtype; fp16 is upcast per block),
    :class:`~bisent.vectors.Shards` or :class:`~bisent.vectors.RowView` (streamed block by block).
    ``k`` is clamped to the other side's size. ``method`` is
    ``"exact"`` (blocked, one pass), ``"ivf"`` or ``"hnsw"`` (approximate; see
    :func:`knn_approx` for its keyword arguments).
    """
    if method != "exact":
        return knn_approx(x, y, k, method=method, **approx)
    n, m = len(x), len(y)
    d, dy = x.shape[1], y.shape[1]
    if d != dy:
        raise ValueError(f"dimension mismatch: {d} vs {dy}")
    kf, kb = min(k, m), min(k, n)
    fsim, fidx = empty_heaps(n, kf)
    bsim, bidx = empty_heaps(m, kb)
    if n == 0 or m == 0 or k < 1:
        return KNN(fsim, fidx, bsim, bidx)
    tiles = -(-n // block_rows) * -(-m // block_cols)
    # every working buffer is allocated once: memory stays at the vectors + these, however large n and m
    tbuf = np.empty(block_rows * block_cols, dtype=np.float32)            # the score tile
    xbuf = np.empty((min(block_rows, n), d), dtype=np.float32)            # fp32 upcasts of one block each
    ybuf = np.empty((min(block_cols, m), d), dtype=np.float32)
    bthr = np.empty(block_cols, dtype=np.float32)                         # column thresholds of one tile
    with progress_bar(progress, total=tiles, desc="kNN", unit="tile", leave=False) as bar:
        for i0, xb in iter_blocks(x, block_rows):
            xb = _as_float32(xb, xbuf)                                # (bx, d)
            for j0, yb in iter_blocks(y, block_cols):
                yb = _as_float32(yb, ybuf)                            # (by, d)
                bx, by = len(xb), len(yb)
                tile = np.matmul(xb, yb.T, out=tbuf[:bx * by].reshape(bx, by))  # (bx, by) one sgemm
                # one pass: rows i0.. get candidates j0.., columns j0.. get candidates i0..
                update_tile(tile, i0, j0, fsim, fidx, bsim, bidx, bthr)
                bar.update(1)
    sort_heaps(fsim, fidx)
    sort_heaps(bsim, bidx)
    return KNN(fsim, fidx, bsim, bidx)


def _as_float32(block: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """``block`` as a C-contiguous float32 array: itself when it is one, else upcast into ``buf``."""
    if block.dtype == np.float32 and block.flags.c_contiguous:
        return block
    out = buf[:len(block)]
    out[...] = block
    return out


def _to_float32(v) -> np.ndarray:
    """All rows as one float32 array (the approximate indexes need them whole)."""
    if isinstance(v, np.ndarray):
        return np.ascontiguousarray(v, dtype=np.float32)
    out = np.empty(v.shape, dtype=np.float32)
    for s, b in iter_blocks(v, 65536):
        out[s:s + len(b)] = b
    return out


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

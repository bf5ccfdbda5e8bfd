"""Fused top-k of both directions over one score tile: one compiled pass updates row and column heaps.

:func:`bisent.mining.index.knn_both` computes the score matrix ``S = X Yᵀ`` tile by tile
(one sgemm each) and needs, from every tile, the k best columns of each row
(forward) and the k best rows of each column (backward). :func:`update_tile`
reads the tile once, in memory order, and updates both: a row heap when a value
beats the row's k-th best so far, a column heap when it beats that column's
k-th best (kept in a small contiguous array while the tile is read). After the
first tiles almost no value beats either threshold, so the pass costs about one
read of the tile with two comparisons per value: no transpose, no column gather.

Order is the brute-force order: larger score first, and among equal scores the
smaller index first (``np.argsort(-s, kind="stable")``). Each heap keeps its
worst entry (smallest score, then largest index) at its root, so ties at the
k-th place are resolved exactly as a full sort would, whatever the tile order.

Heaps are plain arrays: ``val`` (rows, k) float32 and ``ids`` (rows, k) int64,
filled with ``-inf`` / ``-1`` by :func:`empty_heaps`, sorted best first by
:func:`sort_heaps`.
"""

from __future__ import annotations

import numba
import numpy as np

#: values of a row checked at once, without branches, before the rare per-value updates
CHUNK = 64


def empty_heaps(rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Heaps for ``rows`` queries keeping ``k`` each: val (rows, k) float32 = -inf, ids (rows, k) int64 = -1."""
    return np.full((rows, k), -np.inf, dtype=np.float32), np.full((rows, k), -1, dtype=np.int64)


@numba.njit(inline="always")
def _worse(va, ia, vb, ib) -> bool:
    """(va, ia) ranks below (vb, ib): smaller score, or the same score and a larger index."""
    return va < vb or (va == vb and ia > ib)


@numba.njit(inline="always")
def _replace_root(val, ids, v, i) -> None:
    """Put (v, i) in place of the root of the heap ``val``/``ids`` (k,) and sift it down."""
    k = val.shape[0]
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= k:
            break
        if c + 1 < k and _worse(val[c + 1], ids[c + 1], val[c], ids[c]):
            c += 1
        if not _worse(val[c], ids[c], v, i):
            break
        val[pos] = val[c]
        ids[pos] = ids[c]
        pos = c
    val[pos] = v
    ids[pos] = i


@numba.njit(inline="always")
def _push(row, c0, c1, gi, j0, thr, fv, fi, bval, bids, bthr):
    """Offer values c0..c1 of one tile row to its row heap (fv, fi) and to their column heaps; return the
    row's new threshold."""
    for c in range(c0, c1):
        v = row[c]
        if v >= thr and _worse(fv[0], fi[0], v, j0 + c):
            _replace_root(fv, fi, v, j0 + c)
            thr = fv[0]
        if v >= bthr[c]:
            gj = j0 + c
            if _worse(bval[gj, 0], bids[gj, 0], v, gi):
                _replace_root(bval[gj], bids[gj], v, gi)
                bthr[c] = bval[gj, 0]
    return thr


@numba.njit(nogil=True, cache=True)
def update_tile(tile, i0, j0, fval, fids, bval, bids, bthr):
    """Feed the tile ``tile`` (bx, by) = S[i0:i0+bx, j0:j0+by] to both heaps.

    fval/fids (n, kf): heaps of the rows of X (candidates: column indices);
    bval/bids (m, kb): heaps of the rows of Y (candidates: row indices);
    bthr (≥ by,) float32 scratch for the column thresholds.
    """
    bx, by = tile.shape
    full = by - by % CHUNK
    for c in range(by):
        bthr[c] = bval[j0 + c, 0]
    for r in range(bx):
        row = tile[r]
        gi = i0 + r
        fv = fval[gi]
        fi = fids[gi]
        thr = fv[0]
        for c0 in range(0, full, CHUNK):
            hit = False
            for c in range(c0, c0 + CHUNK):        # a constant trip count: vectorised, branch-free
                hit |= (row[c] >= thr) | (row[c] >= bthr[c])
            if hit:
                thr = _push(row, c0, c0 + CHUNK, gi, j0, thr, fv, fi, bval, bids, bthr)
        thr = _push(row, full, by, gi, j0, thr, fv, fi, bval, bids, bthr)


@numba.njit(nogil=True, cache=True)
def sort_heaps(val, ids) -> None:
    """Sort every heap row in place, best first (score descending, then index ascending)."""
    rows, k = val.shape
    for r in range(rows):
        v = val[r]
        d = ids[r]
        for a in range(1, k):                      # insertion sort: k is small
            x, y = v[a], d[a]
            b = a - 1
            while b >= 0 and _worse(v[b], d[b], x, y):
                v[b + 1] = v[b]
                d[b + 1] = d[b]
                b -= 1
            v[b + 1] = x
            d[b + 1] = y


@numba.njit(nogil=True, cache=True)
def merge_heaps(val, ids, oval, oids) -> None:
    """Fold the heaps ``oval``/``oids`` (rows, k) into ``val``/``ids`` (rows, k), row by row, in place.

    Used when several threads kept private column heaps over disjoint row ranges: the total order
    (score, then index) makes the merged heaps those one thread would have kept.
    """
    rows, k = val.shape
    for r in range(rows):
        for a in range(k):
            if oids[r, a] >= 0 and _worse(val[r, 0], ids[r, 0], oval[r, a], oids[r, a]):
                _replace_root(val[r], ids[r], oval[r, a], oids[r, a])


def as_float32(block: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """``block`` as a C-contiguous float32 array: itself when it is one, else upcast into ``buf``."""
    if block.dtype == np.float32 and block.flags.c_contiguous:
        return block
    out = buf[:len(block)]
    out[...] = block
    return out


def scan_tiles(row_blocks, col_blocks, fval, fids, cols, *, dim: int, block_rows: int, block_cols: int,
               bar, after_round=None) -> None:
    """Run :func:`update_tile` over every tile of ``S = X Yᵀ``, one row block a thread: the one parallel driver.

    ``row_blocks`` yields ``(key, i0, xb)``: rows ``i0..`` of X (bx ≤ block_rows, dim), any float dtype,
    not shared with the caller (a thread reads it later); ``key`` names the block for ``after_round``.
    ``col_blocks()`` gives a fresh iterator of ``(j0, yb)`` over Y for each row block. Row heaps
    ``fval``/``fids`` (n, k) are shared (row blocks are disjoint); ``cols`` holds one private pair of
    column heaps (m, k) a thread, ``len(cols)`` threads, for the caller to merge with
    :func:`merge_heaps`. Each round, each thread takes one row block and does its tiles whole, the sgemm
    on one BLAS thread (threadpoolctl) and the top-k pass with the GIL released, so no BLAS thread spins
    while the other core runs the top-k pass, and every tile is the same single-threaded sgemm whatever
    the thread count (bit-identical scores everywhere, Ray workers included). ``bar`` gets one update a
    tile; ``after_round(keys, last)`` runs after each round with the keys of its finished blocks.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    threads = len(cols)
    bufs = [(np.empty(block_rows * block_cols, dtype=np.float32),              # the score tile
             np.empty((block_rows, dim), dtype=np.float32),                    # fp32 upcasts of one block each
             np.empty((block_cols, dim), dtype=np.float32),
             np.empty(block_cols, dtype=np.float32)) for _ in range(threads)]  # column thresholds of one tile
    lock = threading.Lock()

    def work(t: int, i0: int, xb) -> None:
        tbuf, xbuf, ybuf, bthr = bufs[t]
        bval, bids = cols[t]
        xb = as_float32(xb, xbuf)                                              # (bx, dim)
        for j0, yb in col_blocks():
            yb = as_float32(yb, ybuf)                                          # (by, dim)
            bx, by = len(xb), len(yb)
            tile = np.matmul(xb, yb.T, out=tbuf[:bx * by].reshape(bx, by))     # (bx, by) one sgemm
            # one pass: rows i0.. get candidates j0.., columns j0.. get candidates i0..
            update_tile(tile, i0, j0, fval, fids, bval, bids, bthr)
            with lock:
                bar.update(1)

    blocks = iter(row_blocks)
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        batch = [b for _, b in zip(range(threads), blocks)]
        while batch:
            for f in [pool.submit(work, t, i0, xb) for t, (_, i0, xb) in enumerate(batch)]:
                f.result()
            nxt = [b for _, b in zip(range(threads), blocks)]
            if after_round is not None:
                after_round([key for key, _, _ in batch], not nxt)
            batch = nxt

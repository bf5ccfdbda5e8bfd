"""Two-stage kNN both ways: a scan in a reduced space for candidates, then exact scores at full dimension.

Why: the exact one-pass search (:func:`bisent.mining.index.knn_both`) costs one sgemm of
``n × m × d`` multiply-adds; at 1M × 1M, d = 512, that is ~12,000 CPU seconds on
this project's 2-core machine. Inner products of unit sentence vectors keep most
of their variance in a few principal directions, so the same one-pass scan over
vectors projected to ``dim`` (192) dimensions — 2.7× fewer multiply-adds, stored
as float16 and upcast a block at a time — finds each row's true neighbours among its
best ``k + extra`` reduced-space candidates almost always. Those candidates are
then re-scored exactly (float32 dot products of the full vectors) and the best
``k`` kept, so every similarity returned is the exact one of its pair; a true
neighbour is missed only when it was not among the candidates
(``benchmarks/knn_twostage.py`` measures how often).

The projection is the top ``dim`` eigenvectors of the uncentred second-moment
matrix ``XsᵀXs + YsᵀYs`` of a sample of both sides: for inner products (not
distances to a mean) it is the rank-``dim`` map that loses the least of
``x·y`` on average. Memory: the two projected sides in float16
(``(n + m) × dim × 2`` bytes), the candidate heaps ``(n + m) × (k + extra) × 12``
bytes, and, while re-scoring, one side's fp16 vectors whole (the other streamed).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..encoders.shards import iter_blocks

#: reduced dimension of the first stage: use-m3 at 100k x 100k (benchmarks/README.md, "Nearest-neighbour search")
#: keeps the exact top-1 for 99.7 % of sampled queries at 192 (of 512), 99.0 % at 160, 97.6 % at 128, 93.3 % at 96
TWOSTAGE_DIM = 192
#: candidates kept beyond k in the first stage, re-scored exactly in the second
TWOSTAGE_EXTRA = 16
#: storage of the projected sides (float16: 2 × 1M × 192 × 2 bytes = 0.77 GB at 1M a side; upcast per block)
SCAN_DTYPE = np.float16
#: rows a side used to fit the projection
FIT_SAMPLE = 20000
#: rows converted and projected at a time
BLOCK = 65536
#: seconds between two saves of a scan's state (``state``: resume after a crash)
SAVE_EVERY = 120.0
#: query rows re-scored at a time (bounds the gathered candidates to RESCORE_ROWS × K × d floats)
RESCORE_ROWS = 1024


def fit_projection(x, y, dim: int, *, sample: int = FIT_SAMPLE, seed: int = 0) -> np.ndarray:
    """P (d, dim) float32, orthonormal columns: the top eigenvectors of the second moment of a sample of X and Y.

    ``x``, ``y``: arrays, Shards or RowViews (n, d) and (m, d). ``dim`` ≥ d gives the identity (no reduction).
    """
    from .index import sample_rows

    d = int(x.shape[1])
    if dim >= d:
        return np.eye(d, dtype=np.float32)
    rng = np.random.default_rng([seed, 2])
    c = np.zeros((d, d), dtype=np.float64)
    for v in (x, y):
        rows = np.sort(rng.choice(len(v), size=min(sample, len(v)), replace=False))
        s = sample_rows(v, rows).astype(np.float64)                          # (s, d)
        c += s.T @ s
    _, vecs = np.linalg.eigh(c)                                               # ascending eigenvalues
    return np.ascontiguousarray(vecs[:, ::-1][:, :dim], dtype=np.float32)     # (d, dim)


def project(v, p: np.ndarray, dtype=np.float32) -> np.ndarray:
    """``v`` (rows, d) times ``p`` (d, dim), stored as ``dtype`` (rows, dim), a block at a time.

    The search stores the projected sides as float16 (:data:`SCAN_DTYPE`): half the memory of the
    largest thing it holds (1.5 GB at 1M a side in float32), upcast a block at a time for the sgemm."""
    out = np.empty((len(v), p.shape[1]), dtype=dtype)
    for s, b in iter_blocks(v, BLOCK):
        np.matmul(np.asarray(b, dtype=np.float32), p, out=out[s:s + len(b)])
    return out


def _whole(v) -> np.ndarray:
    """All rows of an array, Shards or RowView in their stored dtype (fp16 stays fp16)."""
    if isinstance(v, np.ndarray):
        return v
    out = None
    for s, b in iter_blocks(v, BLOCK):
        if out is None:
            out = np.empty(v.shape, dtype=b.dtype)
        out[s:s + len(b)] = b
    return out if out is not None else np.empty(v.shape, dtype=np.float32)


def rescore(queries, db: np.ndarray, cand: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact scores of candidate lists and the best ``k`` of each: (sim (q, k) float32, idx (q, k) int64).

    ``queries`` (q, d): array, Shards or RowView, streamed; ``db`` (r, d) array (any float dtype), indexed by
    ``cand`` (q, K) int64 (``-1``: no candidate, ranked last). Order: score descending, then index ascending.
    """
    q, kk = cand.shape
    k = min(k, kk)
    sim = np.full((q, k), -np.inf, dtype=np.float32)
    idx = np.full((q, k), -1, dtype=np.int64)
    for s0, big in iter_blocks(queries, BLOCK):
        for r0 in range(0, len(big), RESCORE_ROWS):
            qb = np.asarray(big[r0:r0 + RESCORE_ROWS], dtype=np.float32)           # (b, d)
            s = s0 + r0
            c = cand[s:s + len(qb)]                                                 # (b, K)
            rows = db[np.maximum(c, 0)].astype(np.float32)                          # (b, K, d)
            sc = np.einsum("bd,bkd->bk", qb, rows)                                  # (b, K) exact scores
            sc[c < 0] = -np.inf
            order = np.lexsort((np.where(c < 0, np.iinfo(np.int64).max, c), -sc), axis=1)[:, :k]
            sim[s:s + len(qb)] = np.take_along_axis(sc, order, axis=1)
            idx[s:s + len(qb)] = np.take_along_axis(c, order, axis=1)
    return sim, idx


class _Stages:
    """Wall and CPU seconds of named stages, written into ``out`` (a dict) when one is given."""

    def __init__(self, out: dict | None):
        self.out = out

    @contextmanager
    def __call__(self, name: str):
        t, c = time.perf_counter(), time.process_time()
        yield
        if self.out is not None:
            self.out[name] = {"seconds": round(time.perf_counter() - t, 3),
                              "cpu_seconds": round(time.process_time() - c, 3)}


def scan_both(xr: np.ndarray, yr: np.ndarray, kk: int, *, threads: int = 1, block_rows: int = 4096,
              block_cols: int = 4096, progress: bool | None = None, state: Path | None = None,
              key: dict | None = None, save_every: float | None = None):
    """Top-``kk`` of both directions over ``xr`` (n, r) and ``yr`` (m, r) (float16 or 32), unsorted heaps -> a KNN,
    sorted.

    The one-pass fused scan of :func:`bisent.mining.index.knn_both`, by the same driver
    (:func:`bisent.mining.topk.scan_tiles`: one row block a thread, one BLAS thread each, private column heaps
    merged here in the heaps' total order), so the result is the one-thread result whatever the threads
    and the order of the blocks.

    ``state``: a folder where the heaps and the finished row blocks are saved (atomically, at most every
    ``save_every`` seconds, default :data:`SAVE_EVERY`); a killed scan given the same folder and the same inputs
    (``key``, checked) continues from its last save, with the same result.
    """
    from ..progress import progress_bar
    from .index import KNN
    from .topk import empty_heaps, merge_heaps, scan_tiles, sort_heaps

    n, m = len(xr), len(yr)
    kf, kb = min(kk, m), min(kk, n)
    starts = list(range(0, n, block_rows))
    threads = max(1, min(threads, len(starts)))
    fsim, fidx = empty_heaps(n, kf)
    cols = [empty_heaps(m, kb) for _ in range(threads)]                       # private column heaps
    done = np.zeros(len(starts), dtype=bool)
    meta = {**(key or {}), "n": n, "m": m, "kk": kk, "r": int(xr.shape[1]), "block_rows": block_rows,
            "block_cols": block_cols}
    if state is not None:
        saved = _load_state(state / "scan.npz", meta, "two-stage scan")
        if saved is not None:
            fsim, fidx, cols[0], done = saved["fsim"], saved["fidx"], (saved["bsim"], saved["bidx"]), saved["done"]
    todo = [b for b in range(len(starts)) if not done[b]]
    per_block = -(-m // block_cols)
    every = SAVE_EVERY if save_every is None else save_every
    last = [time.monotonic()]

    def after_round(keys: list[int], final: bool) -> None:
        done[keys] = True
        if state is not None and not final and time.monotonic() - last[0] >= every:
            bsim, bidx = _merged_columns(cols)
            _save_state(state / "scan.npz", meta, fsim=fsim, fidx=fidx, bsim=bsim, bidx=bidx, done=done)
            last[0] = time.monotonic()

    rows = ((b, starts[b], xr[starts[b]:starts[b] + block_rows]) for b in todo)   # (bx, r) views, upcast per thread
    with progress_bar(progress, total=len(starts) * per_block, desc="kNN scan", unit="tile", leave=False) as bar:
        bar.update(int(done.sum()) * per_block)
        scan_tiles(rows, lambda: ((j0, yr[j0:j0 + block_cols]) for j0 in range(0, m, block_cols)), fsim, fidx, cols,
                   dim=int(xr.shape[1]), block_rows=block_rows, block_cols=block_cols, bar=bar, after_round=after_round)
    bsim, bidx = cols[0]
    for osim, oidx in cols[1:]:
        merge_heaps(bsim, bidx, osim, oidx)
    sort_heaps(fsim, fidx)
    sort_heaps(bsim, bidx)
    return KNN(fsim, fidx, bsim, bidx)


def _merged_columns(cols):
    """A copy of the column heaps of every thread merged into one (rows, k) pair."""
    from .topk import merge_heaps

    bsim, bidx = cols[0][0].copy(), cols[0][1].copy()
    for osim, oidx in cols[1:]:
        merge_heaps(bsim, bidx, osim, oidx)
    return bsim, bidx


def _save_state(path: Path, meta: dict, **arrays: np.ndarray) -> None:
    """Write ``arrays`` and ``meta`` (the inputs and settings they belong to) to the .npz ``path`` atomically."""
    from ..state import save_arrays

    save_arrays(path, meta, **arrays)


def _load_state(path: Path, meta: dict, what: str) -> dict | None:
    """The arrays :func:`_save_state` wrote to ``path`` for this very ``meta``; None when there is no file.

    A save of another search (other inputs or settings) is an error, not silently replaced: the folder is
    the user's (``--state``), and mixing two runs' lists would give wrong neighbours.
    """
    from ..state import load_arrays

    return load_arrays(path, meta, what=f"a {what}") if path is not None else None


def knn_twostage(x, y, k: int = 4, *, dim: int = TWOSTAGE_DIM, extra: int = TWOSTAGE_EXTRA, seed: int = 0,
                 progress: bool | None = None, block_rows: int | None = None, block_cols: int | None = None,
                 threads: int | None = None, stats: dict | None = None, state=None):
    """Top-``k`` neighbours both ways (a :class:`~bisent.mining.index.KNN`): reduced-space candidates, exact scores.

    ``x`` (n, d), ``y`` (m, d): arrays, Shards or RowViews. Stage 1: both sides projected to ``dim`` dimensions
    (:func:`fit_projection`), the fused one-pass scan keeps the best ``k + extra`` of each row and each column.
    Stage 2: those candidates re-scored in float32 at full dimension (:func:`rescore`), best ``k`` kept.
    ``threads``: of the scan (default: :func:`bisent.threads.default_threads`). ``stats``, when given, receives the
    wall and CPU seconds of each stage (fit, project, scan, rescore). ``state``: a folder (created) where the
    scan saves its progress and then the candidates, so a killed run given the same folder resumes (same result);
    a folder of other vectors or settings is refused (:class:`bisent.state.StateDir`); the caller removes it
    when done.
    """
    from ..state import StateDir
    from ..threads import default_threads
    from .index import BLOCK_COLS, BLOCK_ROWS, KNN, knn_both

    if dim < 1 or extra < 0:
        raise ValueError(f"two-stage search needs dim ≥ 1 and extra ≥ 0 (got dim {dim}, extra {extra})")
    n, m = len(x), len(y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"dimension mismatch: {x.shape[1]} vs {y.shape[1]}")
    if n == 0 or m == 0 or k < 1:
        return knn_both(x, y, k)
    stage = _Stages(stats)
    with stage("fit"):
        p = fit_projection(x, y, dim, seed=seed)
    with stage("project"):
        xr, yr = project(x, p, SCAN_DTYPE), project(y, p, SCAN_DTYPE)                       # (n, dim), (m, dim) float16
    store = None if state is None else StateDir(state, "twostage", what="a two-stage search")
    key = {"d": int(x.shape[1]), "k": k, "extra": extra, "dim": dim, "seed": seed,
           "projection_sha256": _sha256(p), "x_sha256": _sha256(xr), "y_sha256": _sha256(yr)}  # every row: a
    # sentence changed after a kill changes its reduced row, so saved heaps of other inputs are never resumed
    with stage("scan"):
        if store is not None:
            store.open(inputs={"source vectors": key["x_sha256"], "target vectors": key["y_sha256"]},
                       settings={k: v for k, v in key.items() if k not in ("x_sha256", "y_sha256")})
        cands_path = None if store is None else store.part("candidates.npz")
        saved = _load_state(cands_path, key, "two-stage search")
        if saved is None:
            cands = scan_both(xr, yr, k + extra, threads=threads or default_threads(),
                              block_rows=block_rows or BLOCK_ROWS, block_cols=block_cols or BLOCK_COLS,
                              progress=progress, state=None if store is None else store.path, key=key)
            fwd_c, bwd_c = cands.fwd_idx, cands.bwd_idx
            del cands
            if store is not None:
                _save_state(cands_path, key, fwd=fwd_c, bwd=bwd_c)
                store.part("scan.npz").unlink(missing_ok=True)                # the heaps are in the candidates now
        else:
            fwd_c, bwd_c = saved["fwd"], saved["bwd"]
    del xr, yr
    with stage("rescore"):
        yw = _whole(y)                                                        # (m, d) stored dtype
        fsim, fidx = rescore(x, yw, fwd_c, k)
        del yw
        xw = _whole(x)
        bsim, bidx = rescore(y, xw, bwd_c, k)
    return KNN(fsim, fidx, bsim, bidx)


def knn_twostage_queries(x, y, qs: np.ndarray, qt: np.ndarray, k: int = 4, *, dim: int = TWOSTAGE_DIM,
                         extra: int = TWOSTAGE_EXTRA, seed: int = 0, threads: int | None = None):
    """The lists :func:`knn_twostage` gives the rows ``qs`` of X (among Y) and ``qt`` of Y (among X), alone.

    A row's candidates depend only on its own reduced vector, the whole other side and the projection,
    which is fitted on the whole of X and Y as there; so these are the same lists (tested), found with
    2 × sample × n reduced products instead of n × m. This is how the agreement of a 1M × 1M two-stage
    run with exact search is measured on a sample without running the search twice.
    Returns a :class:`~bisent.mining.index.KNN` whose forward rows are ``qs``'s and backward rows ``qt``'s.
    """
    from ..threads import default_threads
    from .index import KNN, sample_rows

    kk, threads = k + extra, threads or default_threads()
    p = fit_projection(x, y, dim, seed=seed)
    xr, yr = project(x, p, SCAN_DTYPE), project(y, p, SCAN_DTYPE)                           # (n, dim), (m, dim) float16
    fwd_c = scan_both(np.ascontiguousarray(xr[qs]), yr, kk, threads=threads, progress=False).fwd_idx
    bwd_c = scan_both(xr, np.ascontiguousarray(yr[qt]), kk, threads=threads, progress=False).bwd_idx
    del xr, yr
    yw = _whole(y)
    fsim, fidx = rescore(sample_rows(x, qs), yw, fwd_c, k)
    del yw
    xw = _whole(x)
    bsim, bidx = rescore(sample_rows(y, qt), xw, bwd_c, k)
    return KNN(fsim, fidx, bsim, bidx)


def _sha256(a: np.ndarray) -> str:
    from ..state import array_sha256

    return array_sha256(a)

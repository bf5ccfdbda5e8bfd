"""k-nearest neighbours by inner product, both directions, over arrays or shards.

:func:`knn_both` makes ONE pass over the score matrix ``S = X Yᵀ`` in tiles of
``block_rows × block_cols``: each tile is computed once (fp16 upcast to fp32
per block, one sgemm) and feeds both the forward top-k (each row of X among Y)
and the backward top-k (each row of Y among X) in one compiled pass over the
tile (:mod:`bisent.mining.topk`). Memory is bounded by the fp16 vectors, one tile and
the (n + m) × k results; never by n × m.

Approximate search (``method="ivf"`` or ``"hnsw"``) builds a FAISS index on
each side instead; it is measured against the exact search in
``benchmarks/knn.py`` and tested against it in the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np

from ..encoders.shards import iter_blocks
from ..progress import progress_bar
from .topk import empty_heaps, sort_heaps

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
             block_cols: int = BLOCK_COLS, progress: bool | None = None, threads: int | None = None,
             **approx) -> KNN:
    """Top-``k`` inner-product neighbours of X (n, d) among Y (m, d) and of Y among X.

    ``x`` and ``y`` are arrays (any float dtype; fp16 is upcast per block),
    :class:`~bisent.encoders.shards.Shards` or :class:`~bisent.encoders.shards.RowView` (streamed block by block).
    ``k`` is clamped to the other side's size. ``method`` is
    ``"exact"`` (blocked, one pass), ``"ivf"`` or ``"hnsw"`` (approximate; see :func:`knn_approx` for
    their keyword arguments). The two-stage search is :func:`bisent.mining.twostage.knn_twostage`
    (:class:`bisent.mining.scoring.Scorer` dispatches to it).

    The exact pass is parallel by row blocks (``threads``, default :func:`bisent.threads.default_threads`):
    each thread does whole tiles with one BLAS thread and keeps private column heaps, merged in the
    heaps' total order. Every tile is then the same single-threaded sgemm whatever the thread count,
    so the scores are the same bits as the Ray workers' blocks (OpenBLAS splits a tile differently
    with 2 threads on some CPUs, and the last bit of a score then differs).
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
    from ..threads import default_threads
    from .topk import merge_heaps, scan_tiles

    tiles = -(-n // block_rows) * -(-m // block_cols)
    threads = max(1, min(threads or default_threads(), -(-n // block_rows)))
    cols = [(bsim, bidx)] + [empty_heaps(m, kb) for _ in range(threads - 1)]   # private column heaps
    # the working buffers are one set a thread: memory stays at the vectors + these, however large n, m
    # an array's row blocks are views (nothing writes x during the search); a streamed block is copied, as
    # its reader may reuse its buffer. A copy a block in flight was 8 MB a thread at 4096 x 1024 fp16.
    own = isinstance(x, np.ndarray)
    rows = ((None, i0, xb if own else np.array(xb, copy=True)) for i0, xb in iter_blocks(x, block_rows))
    with progress_bar(progress, total=tiles, desc="kNN", unit="tile", leave=False) as bar:
        scan_tiles(rows, lambda: iter_blocks(y, block_cols), fsim, fidx, cols, dim=d,
                   block_rows=min(block_rows, n), block_cols=min(block_cols, m), bar=bar)
    for osim, oidx in cols[1:]:
        merge_heaps(bsim, bidx, osim, oidx)
    sort_heaps(fsim, fidx)
    sort_heaps(bsim, bidx)
    return KNN(fsim, fidx, bsim, bidx)


def to_float32(v) -> np.ndarray:
    """All rows as one float32 array (the approximate indexes need them whole)."""
    if isinstance(v, np.ndarray):
        return np.ascontiguousarray(v, dtype=np.float32)
    out = np.empty(v.shape, dtype=np.float32)
    for s, b in iter_blocks(v, 65536):
        out[s:s + len(b)] = b
    return out


#: share of sampled queries whose IVF top-1 must be the exact top-1 (``calibrate_probes``): a 98 % target
#: plus a margin for the sample's error (±0.3 points at 2,000 queries)
TARGET_AGREEMENT = 0.985
CALIBRATION_QUERIES = 2000
#: fewest probes tried
IVF_MIN_PROBES = 8
#: rows converted to float32 at a time when an approximate index is filled or searched
APPROX_BLOCK = 65536
#: FAISS scalar quantisers of the approximate indexes: 2 bytes a dimension, or 1 (per-dimension 8-bit ranges)
QUANTIZERS = {"fp16": faiss.ScalarQuantizer.QT_fp16, "sq8": faiss.ScalarQuantizer.QT_8bit}


def sample_rows(v, rows: np.ndarray) -> np.ndarray:
    """Rows ``rows`` (distinct, any order) of an array, Shards or RowView as float32, in that order."""
    from ..encoders.shards import RowView

    if isinstance(v, np.ndarray):
        return to_float32(v[rows])
    order = np.argsort(rows, kind="stable")
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    return to_float32(RowView(v, rows[order]))[back]                 # streamed in row order, then reordered


def build_index(vectors, method: str, *, nlist: int | None = None, hnsw_m: int = 32,
                ef_construction: int = 80, quantizer: str = "fp16", seed: int = 0) -> faiss.Index:
    """An approximate inner-product index over ``vectors`` (m, d): an array, Shards or RowView, added a
    block at a time (never all in float32). Codes are fp16 or 8-bit scalar-quantised (``quantizer``)."""
    m, d = vectors.shape
    if quantizer not in QUANTIZERS:
        raise ValueError(f"unknown quantizer '{quantizer}' ({', '.join(QUANTIZERS)})")
    qt = QUANTIZERS[quantizer]
    if method == "ivf":
        # never more lists than vectors: FAISS's k-means refuses to train fewer points than centroids
        nlist = max(1, min(nlist or min(65536, int(np.sqrt(m))), m))
        index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(d), d, nlist, qt, faiss.METRIC_INNER_PRODUCT)
        rng = np.random.default_rng(seed)
        sample = rng.choice(m, size=64 * nlist, replace=False) if m > 64 * nlist else np.arange(m)
        index.cp.seed = seed
        index.cp.min_points_per_centroid = 1       # few points a list on small inputs is fine: no warning
        index.train(sample_rows(vectors, sample))
    elif method == "hnsw":
        index = faiss.IndexHNSWSQ(d, qt, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.train(sample_rows(vectors, np.arange(min(m, 10000))))
    else:
        raise ValueError(f"unknown kNN method '{method}' (exact, ivf, hnsw)")
    for _, b in iter_blocks(vectors, APPROX_BLOCK):
        index.add(np.ascontiguousarray(b, dtype=np.float32))
    return index


def knn_approx(x, y, k: int = 4, *, method: str = "ivf", nlist: int | None = None, nprobe: int | None = None,
               hnsw_m: int = 32, ef_search: int = 64, quantizer: str = "fp16", seed: int = 0,
               target_agreement: float = TARGET_AGREEMENT) -> KNN:
    """Approximate top-``k`` both ways with an IVF or HNSW index per side (fp16 or SQ8 codes).

    ``x`` and ``y`` are arrays, Shards or RowViews: indexes are filled and
    queried a block at a time, so memory is the two indexes plus one float32 block.
    IVF lists not given: :func:`ivf_lists` of the indexed side; probes not given: the fewest
    whose top-1 neighbours match exact search's on ``target_agreement`` of a sample of queries
    (:func:`calibrate_probes`).
    """
    out = []
    for q, db in ((x, y), (y, x)):
        kk = min(k, db.shape[0])
        index = build_index(db, method, nlist=nlist or ivf_lists(db.shape[0]), hnsw_m=hnsw_m, quantizer=quantizer,
                            seed=seed)
        if method == "ivf":
            index.nprobe = min(index.nlist, nprobe or calibrate_probes(index, q, db, target_agreement, seed=seed))
        else:
            index.hnsw.efSearch = max(ef_search, kk)
        sim = np.empty((q.shape[0], kk), dtype=np.float32)
        idx = np.empty((q.shape[0], kk), dtype=np.int64)
        for s, b in iter_blocks(q, APPROX_BLOCK):
            sim[s:s + len(b)], idx[s:s + len(b)] = index.search(np.ascontiguousarray(b, dtype=np.float32), kk)
        del index
        out += [sim, idx]
    return KNN(*out)


def calibrate_probes(index, queries, db, target: float = TARGET_AGREEMENT, *, sample: int = CALIBRATION_QUERIES,
                     seed: int = 0) -> int:
    """The fewest probes (from :data:`IVF_MIN_PROBES`, ×√2 a step) at which the IVF ``index`` over ``db``
    finds the exact nearest row of ``db`` for at least ``target`` of ``sample`` queries drawn from ``queries``
    (seed ``seed``); ``index.nlist`` (every list: exact up to the codes) when none does.

    Why measured, not fixed: how many lists hold a query's true neighbour depends on the encoder
    (use-m3 at 20k × 20k needs 23 % of 4√n lists for 98 %; benchmarks/README.md), and the sample's
    exact search costs ``sample / len(queries)`` of the exact search's time.
    """
    n = queries.shape[0]
    rng = np.random.default_rng([seed, 1])                 # not the stream of a seed-0 evaluation sample
    rows = np.sort(rng.choice(n, size=min(sample, n), replace=False))
    qs = sample_rows(queries, rows)                                          # (s, d) float32
    truth = knn_both(qs, db, 1, progress=False).fwd_idx[:, 0]                # (s,) exact nearest rows
    probes = min(IVF_MIN_PROBES, index.nlist)
    while probes < index.nlist:
        index.nprobe = probes
        if np.mean(index.search(qs, 1)[1][:, 0] == truth) >= target:
            return probes
        probes = min(index.nlist, int(np.ceil(probes * np.sqrt(2))))
    return index.nlist


#: ``auto`` searches exactly while sources × targets is at most this many pairs (see :func:`choose_index`)
EXACT_MAX_PAIRS = 200_000 ** 2
#: ``auto`` uses the two-stage scan up to this many pairs, the compressed index above (see :func:`choose_index`)
TWOSTAGE_MAX_PAIRS = 2_000_000 ** 2
#: IVF lists per √(indexed rows): the low end of FAISS's guideline of 4√n to 16√n
IVF_LISTS_PER_SQRT = 4


def ivf_lists(rows: int) -> int:
    """Lists of an IVF index over ``rows`` vectors (``--index ivf`` and ``auto``): 4√rows."""
    return max(1, min(65536, int(IVF_LISTS_PER_SQRT * np.sqrt(rows))))


def choose_index(n_target: int, dim: int, n_source: int | None = None) -> tuple[str, dict]:
    """The kNN method for ``--index auto``: ``(method, options)`` for :class:`bisent.mining.scoring.Scorer`.

    Rule (measurements: ``benchmarks/knn_twostage.py``, ``benchmarks/index_sweep.py``,
    ``benchmarks/compressed_dev.py``; benchmarks/README.md), ``n_source`` defaulting to ``n_target``:

    - exact while ``n_source × n_target ≤ EXACT_MAX_PAIRS`` (200k × 200k: at most ~8 minutes on
      2 cores, and every smaller figure of the README stays exact);
    - two-stage (:func:`bisent.mining.twostage.knn_twostage`) up to ``TWOSTAGE_MAX_PAIRS`` (2M × 2M), the
      largest size where it was measured against the exact search (1M × 1M, top-1 agreement 1.0);
    - above, the compressed index with exact re-ranking (:func:`bisent.mining.plan.knn_compressed`:
      its parameters by size are :func:`bisent.mining.compressed.compressed_params`, its probes calibrated on
      a sample's mined pairs), whose cost grows as n·√m where the two-stage scan's grows as n·m. It takes
      the two-stage scan's place at smaller sizes once ``benchmarks/mine_scale.py`` measures it faster there.
    """
    n_source = n_target if n_source is None else n_source
    if n_source * n_target <= EXACT_MAX_PAIRS:
        return "exact", {}
    if n_source * n_target <= TWOSTAGE_MAX_PAIRS:
        return "twostage", {}
    return "compressed", {}


def resolve_method(method: str, x, y) -> tuple[str, dict]:
    """``method`` with no extra options, or for ``"auto"`` what :func:`choose_index` picks for X and Y."""
    if method == "auto":
        return choose_index(len(y), int(y.shape[1]), len(x))
    return method, {}

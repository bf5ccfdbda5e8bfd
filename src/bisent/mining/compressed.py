"""Compressed kNN both ways: an IVF index over 4-bit codes of projected vectors, then exact re-ranking.

Why: the exact search scores every pair (n × m × d multiply-adds: ~1.6 hours at 1M × 1M, d = 512, on 2 cores)
and the two-stage scan still scores every pair at 192 dimensions (39 minutes). An inverted file scores only the
pairs in the ``nprobe`` lists nearest each query, so its cost grows as n · √m instead of n · m.

How, for each direction (X among Y, then Y among X):

1. **Projection**: both sides times P (d, ``dim``), the uncentred principal directions of a sample of X and Y
   (:func:`bisent.mining.twostage.fit_projection`: for inner products, not distances to a mean, the rank-``dim``
   map that loses the least of ``x·y``). One P for both sides, so projected inner products compare.
2. **Index**: FAISS IVF with ``nlist`` lists, a k-means of the indexed side (:func:`train_lists`, on a sample
   of at least :data:`MIN_TRAIN_PER_LIST` points a list); a flat coarse quantiser, or an HNSW graph from
   :data:`HNSW_LISTS` lists so that assigning a vector is not ``nlist`` dot products), codes 4-bit product
   quantised and scanned by SIMD table lookups (``fsM``, FAISS's fast scan: M / 2 bytes a vector), 8-bit scalar
   quantised (``sq8``, ``dim`` bytes) or 8-bit product quantised (``pqM``: M bytes).
3. **Search**: each query's best ``k + extra`` by the codes in its ``nprobe`` nearest lists.
4. **Re-ranking**: those candidates scored exactly from the fp16 vectors (in memory, or gathered from the
   memory-mapped shards of a vectors folder) and the best ``k`` kept (:func:`rerank`): every
   similarity returned is the exact one of its pair; a neighbour is missed only when it was not a candidate.

``nprobe`` is calibrated (:func:`calibrate_pair_probes`) so that the **mined pairs** of a sample of queries — the
best candidate by the margin over the query's neighbours, among the pairs a run keeps (at or above the threshold,
or the sample's best-scoring :data:`PAIR_TOP_SHARE` when the cut is set after the search) — agree with the exact
search's on :data:`PAIR_TARGET` of them. The parameters by size are :func:`compressed_params` (the rule
and its measurements: ``benchmarks/mine_scale.py``, benchmarks/README.md). Too few vectors to train an index:
the exact search, said on standard error.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import faiss
import numba
import numpy as np

from ..encoders.shards import Shards, flatten_rows, iter_blocks
from ..errors import BisentError

#: reduced dimension of the codes (of 512 for use-m3; smaller inputs keep theirs)
COMPRESSED_DIM = 128
#: candidates beyond k re-ranked exactly: with 8-bit codes (8 lost pairs, 32 gained almost none)
EXTRA = 16
#: with 4-bit codes (coarser scores, so more candidates re-ranked): at 1M a side (a distilled student's vectors, the
#: targets' lists) 64 reached the same probes and pair agreement as 8-bit codes with 16, at 2.4 times their speed
#: (search and re-ranking); 128 no better
EXTRA_FAST = 64
#: IVF lists per √(indexed rows) (FAISS's guideline is 4√n to 16√n): shorter lists, fewer codes scanned a probe
LISTS_PER_SQRT = 8
#: k-means needs this many training points a list (FAISS warns below 39); fewer rows than MIN_LISTS × this:
#: no index, the exact search
MIN_TRAIN_PER_LIST = 39
#: training points a list drawn from the indexed side (at most its rows)
TRAIN_PER_LIST = 64
#: fewest lists worth an index
MIN_LISTS = 16
#: most lists (FAISS's 16-bit list ids are not the limit; k-means training time is)
MAX_LISTS = 262144
#: from this many lists the coarse quantiser is an HNSW graph (assignment is ~log(nlist), not nlist, products).
#: Below it a flat one: at 1M a side (8,000 lists) a graph over the centroids by inner product found so few of a
#: query's nearest lists that the mined pairs agreed with the exact search's on 89 % with every list probed
#: (100 % with a flat quantiser), and assigning a query to 8,000 centroids of 128 dimensions is ~1 MFLOP
HNSW_LISTS = 65536
#: an HNSW coarse quantiser explores at least this many times nprobe candidates (FAISS's default, 16, is far
#: below the hundreds of lists a probe count asks for)
HNSW_EF_PER_PROBE = 2
#: k-means iterations of the lists' training (FAISS's default is 25; the centroids move little after 10)
KMEANS_ITERATIONS = 10
#: 4-bit product-quantised codes scanned by FAISS's fast scan (dim / 2 sub-quantisers, dim / 4 bytes a vector): at
#: 1M a side they scanned 65,536 queries' 162 lists in 6.8 s where 8-bit scalar codes took 19.9 s, the same pairs
#: found (the calibration ladder identical); a dimension not a multiple of 4: 8-bit codes
FAST_SCAN = True
#: share of a sample's mined pairs that must equal the exact search's: a 98 % target plus about two standard errors
#: of the sample's estimate (±0.54 points at 500 queries)
PAIR_TARGET = 0.985
#: sampled queries a direction for the calibration: their exact lists cost ``sample / rows`` of an exact search
#: (~2 × 10^12 FLOP a direction at 1M, d = 512), the neighbourhoods of their best candidates a fraction of it
PAIR_SAMPLE = 2000
#: without a threshold, the calibration counts this share of the sample's queries, the best-scoring: 100 pairs of
#: 2,000. At 1M a side (a distilled student's vectors) the pairs a default cut keeps are the top ~1 %; counting
#: every query's best pair, mostly near-ties of sentences without a translation, asked for 4-8 times the probes
PAIR_TOP_SHARE = 0.05
#: fewest probes tried; the ladder grows ×√2 a step
MIN_PROBES = 4
#: rows projected, coded or searched at a time
BLOCK = 65536


@dataclass(frozen=True)
class Params:
    """The compressed index's settings: reduced ``dim``, ``nlist`` lists, ``codes`` (``sq8`` or ``pqM``),
    ``coarse`` quantiser (``flat`` or ``hnsw``), ``extra`` candidates re-ranked, ``nprobe`` (None: calibrated)."""

    dim: int
    nlist: int
    codes: str
    coarse: str
    extra: int = EXTRA
    nprobe: int | None = None



def compressed_params(rows: int, d: int, **given) -> Params | None:
    """The rule, by the larger side's ``rows`` and the dimension ``d``; None when too few rows to train an index.

    - ``dim`` = min(d, :data:`COMPRESSED_DIM`);
    - ``nlist`` = :data:`LISTS_PER_SQRT` √rows, at most rows / :data:`MIN_TRAIN_PER_LIST` (k-means needs the
      points), within [:data:`MIN_LISTS`, :data:`MAX_LISTS`]; fewer than MIN_LISTS possible: None;
    - ``coarse``: ``hnsw`` from :data:`HNSW_LISTS` lists, else ``flat``;
    - ``codes``: ``fs{dim // 2}`` (4-bit PQ, fast scan) where ``dim`` is a multiple of 4, else ``sq8``
      (:data:`FAST_SCAN`);
    - ``extra`` = :data:`EXTRA_FAST` for ``fs`` codes, :data:`EXTRA` for others. ``given`` (non-None values)
      overrides any of them.
    """
    given = {key: v for key, v in given.items() if v is not None}
    dim = int(given.get("dim", min(d, COMPRESSED_DIM)))
    nlist = given.get("nlist") or min(MAX_LISTS, int(LISTS_PER_SQRT * np.sqrt(rows)), rows // MIN_TRAIN_PER_LIST)
    if nlist < MIN_LISTS and "nlist" not in given:
        return None
    codes = given.get("codes", f"fs{dim // 2}" if FAST_SCAN and dim % 4 == 0 else "sq8")
    if codes != "sq8" and not (codes[:2] in ("pq", "fs") and codes[2:].isdigit() and dim % int(codes[2:]) == 0):
        raise ValueError(f"codes '{codes}': sq8, pqM or fsM with M dividing the dimension {dim}")
    coarse = given.get("coarse", "hnsw" if nlist >= HNSW_LISTS else "flat")
    extra = given.get("extra", EXTRA_FAST if codes.startswith("fs") else EXTRA)
    return Params(dim, int(nlist), codes, coarse, int(extra), given.get("nprobe"))


# --- rows of either side, wherever they live ------------------------------------------------------------------

class Rows:
    """Row gathering from an array, :class:`Shards` or :class:`RowView`: ``rows[idx]`` for any int array ``idx``,
    shape ``idx.shape + (d,)``, stored dtype. A vectors folder's rows are read from its memory-mapped shards
    (only the pages touched), so re-ranking never loads a side whole."""

    def __init__(self, v):
        self.vectors = v
        self.base, self.map = flatten_rows(v)
        self.shape = v.shape
        if isinstance(self.base, Shards):
            self.arrays = self.base._arrays
            self.starts = np.cumsum([0] + [len(a) for a in self.arrays])
        elif not isinstance(self.base, np.ndarray):
            self.base = np.asarray(self.base)

    def dots(self, q: np.ndarray, cand: np.ndarray) -> np.ndarray:
        """Exact inner products (b, K) float32 of queries ``q`` (b, d) float32 with rows ``cand`` (b, K) (-1: none,
        scored -inf), read in place: from the array, or shard by shard from the memory maps (no gathered copy)."""
        flat = cand if self.map is None else np.where(cand < 0, -1, self.map[np.maximum(cand, 0)])
        out = np.full(cand.shape, -np.inf, dtype=np.float32)
        if isinstance(self.base, np.ndarray):
            _dots_into(q, self.base, np.ascontiguousarray(flat), 0, len(self.base), out)
            return out
        for s, arr in enumerate(self.arrays):
            _dots_into(q, arr, np.ascontiguousarray(flat), int(self.starts[s]), int(self.starts[s + 1]), out)
        return out

    def __getitem__(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        flat = idx.reshape(-1) if self.map is None else self.map[idx.reshape(-1)]
        if isinstance(self.base, np.ndarray):
            return self.base[flat].reshape(idx.shape + (self.shape[1],))
        out = np.empty((len(flat), self.shape[1]), dtype=np.float16)
        shard = np.searchsorted(self.starts, flat, side="right") - 1
        for s in np.unique(shard):
            sel = shard == s
            out[sel] = self.arrays[s][flat[sel] - self.starts[s]]
        return out.reshape(idx.shape + (self.shape[1],))


#: float32 value of every float16 bit pattern: the re-ranking reads fp16 rows through it (NumPy's own conversion of
#: the gathered rows was 85 % of the re-ranking's time)
_LUT = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)


@numba.njit(parallel=True, nogil=True, cache=True)
def _dots_half(q, db, cand, lo, hi, lut, out):
    """out[i, j] = q[i] · db[cand[i, j] - lo] for every cand[i, j] in [lo, hi); ``db`` uint16 fp16 bits, read
    through ``lut``. Each sum runs in the same order whatever the threads: the same bits every run."""
    b, kk = cand.shape
    d = q.shape[1]
    for i in numba.prange(b):
        for j in range(kk):
            c = cand[i, j]
            if c >= lo and c < hi:
                acc = np.float32(0.0)
                for t in range(d):
                    acc += q[i, t] * lut[db[c - lo, t]]
                out[i, j] = acc


@numba.njit(parallel=True, nogil=True, cache=True)
def _dots_float(q, db, cand, lo, hi, out):
    """:func:`_dots_half` for float32 rows."""
    b, kk = cand.shape
    d = q.shape[1]
    for i in numba.prange(b):
        for j in range(kk):
            c = cand[i, j]
            if c >= lo and c < hi:
                acc = np.float32(0.0)
                for t in range(d):
                    acc += q[i, t] * db[c - lo, t]
                out[i, j] = acc


def _dots_into(q, db, cand, lo, hi, out) -> None:
    if db.dtype == np.float16:
        _dots_half(q, db.view(np.uint16), cand, lo, hi, _LUT, out)
    else:
        _dots_float(q, np.ascontiguousarray(db, dtype=np.float32), cand, lo, hi, out)


def rerank(q: np.ndarray, rows: Rows, cand: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of each query's candidates by exact inner product: (sim (b, k) float32, idx (b, k) int64).

    ``q`` (b, d) float32, ``cand`` (b, K) int64 rows of ``rows`` (``-1``: no candidate, ranked last). Order: score
    descending, then index ascending (the exact search's order)."""
    sc = rows.dots(q, cand)                                                          # (b, K)
    order = np.lexsort((np.where(cand < 0, np.iinfo(np.int64).max, cand), -sc), axis=1)[:, :k]
    return np.take_along_axis(sc, order, axis=1), np.take_along_axis(cand, order, axis=1)


# --- one side's index -----------------------------------------------------------------------------------------

def _projected(v, p: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Rows ``rows`` (all: None) of ``v`` times P, float32 (r, dim)."""
    from .index import sample_rows

    if rows is not None:
        return np.ascontiguousarray(sample_rows(v, rows) @ p)
    return np.ascontiguousarray(np.asarray(v, dtype=np.float32) @ p)


def train_lists(db, p: np.ndarray, params: Params, *, seed: int = 0) -> np.ndarray:
    """Centroids (nlist, dim) float32 of the lists of ``db``'s index: k-means by inner product
    (:data:`KMEANS_ITERATIONS` iterations) on :data:`TRAIN_PER_LIST` × nlist rows of ``db`` (seeded), projected
    by ``p``.

    Each side's lists come from its own rows: where the two sides sit apart (another language, another
    encoder's corner), lists trained on both would spend probes on lists that hold few rows of the side
    searched."""
    rng = np.random.default_rng([seed, 3])
    rows = np.sort(rng.choice(len(db), size=min(len(db), TRAIN_PER_LIST * params.nlist), replace=False))
    sample = _projected(db, p, rows)                                                  # (s, dim) float32
    cp = faiss.ClusteringParameters()
    cp.niter, cp.seed = KMEANS_ITERATIONS, seed
    cp.min_points_per_centroid, cp.max_points_per_centroid = MIN_TRAIN_PER_LIST, TRAIN_PER_LIST
    clustering = faiss.Clustering(params.dim, params.nlist, cp)
    clustering.train(sample, faiss.IndexFlatIP(params.dim))
    return faiss.vector_to_array(clustering.centroids).reshape(params.nlist, params.dim)


def build_side(db, p: np.ndarray, params: Params, centroids: np.ndarray, *, seed: int = 0) -> faiss.Index:
    """An IVF index of ``db`` (m, d) projected by ``p`` (d, dim) with the lists ``centroids`` (nlist, dim)
    (:func:`train_lists`; a flat or HNSW coarse quantiser, ``params.coarse``): the codes' ranges (SQ8) or
    codebooks (PQ) trained on a sample of ``db`` (seeded), then every row added a block at a time."""
    m = len(db)
    coarse = faiss.IndexHNSWFlat(params.dim, 32, faiss.METRIC_INNER_PRODUCT) if params.coarse == "hnsw" \
        else faiss.IndexFlatIP(params.dim)
    coarse.add(np.ascontiguousarray(centroids, dtype=np.float32))
    if params.codes == "sq8":
        index = faiss.IndexIVFScalarQuantizer(coarse, params.dim, params.nlist, faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
    elif params.codes.startswith("fs"):               # 4-bit PQ scanned by SIMD table lookups (FAISS fast scan)
        index = faiss.IndexIVFPQFastScan(coarse, params.dim, params.nlist, int(params.codes[2:]), 4,
                                         faiss.METRIC_INNER_PRODUCT)
    else:
        index = faiss.IndexIVFPQ(coarse, params.dim, params.nlist, int(params.codes[2:]), 8,
                                 faiss.METRIC_INNER_PRODUCT)
    index.own_fields = True                                     # the index frees its quantiser
    coarse.this.disown()
    rng = np.random.default_rng([seed, 5])
    index.train(_projected(db, p, np.sort(rng.choice(m, size=min(m, TRAIN_PER_LIST * 1024), replace=False))))
    for _, b in iter_blocks(db, BLOCK):
        index.add(_projected(b, p))
    return index


def set_probes(index: faiss.Index, nprobe: int) -> None:
    """Probe ``nprobe`` lists; an HNSW coarse quantiser explores :data:`HNSW_EF_PER_PROBE` × nprobe centroids."""
    ivf = faiss.extract_index_ivf(index)
    ivf.nprobe = int(nprobe)
    quantiser = faiss.downcast_index(ivf.quantizer)
    if isinstance(quantiser, faiss.IndexHNSW):
        quantiser.hnsw.efSearch = max(quantiser.hnsw.efSearch, HNSW_EF_PER_PROBE * int(nprobe))


def search_side(index: faiss.Index, queries, p: np.ndarray, db_rows: Rows, k: int, extra: int,
                nprobe: int, *, progress: bool | None = False,
                desc: str = "compressed search") -> tuple[np.ndarray, np.ndarray]:
    """Best ``k`` of each query among the indexed rows: ``k + extra`` candidates by the codes in ``nprobe`` lists,
    re-ranked exactly from ``db_rows``. Returns (sim (q, k) float32 exact, idx (q, k) int64), best first.

    A query whose probed lists hold fewer than ``k`` rows (a sparse corner of the lists) gets the exact search's
    list instead, so every list is full: the margin averages ``k`` real neighbours. ``progress``: a bar or
    periodic lines (:func:`bisent.progress.progress_bar`) over the queries."""
    from ..progress import progress_bar
    from .index import knn_both

    set_probes(index, nprobe)
    kk, k = min(k + extra, index.ntotal), min(k, index.ntotal)
    sim = np.empty((len(queries), k), dtype=np.float32)
    idx = np.empty((len(queries), k), dtype=np.int64)
    bar = progress_bar(progress, total=len(queries), desc=desc, unit="sentence", leave=False)
    for s, b in iter_blocks(queries, BLOCK):
        qb = np.asarray(b, dtype=np.float32)                                         # (b, d), converted once
        cand = index.search(np.ascontiguousarray(qb @ p), kk)[1]                     # (b, kk) by the codes
        sim[s:s + len(b)], idx[s:s + len(b)] = rerank(qb, db_rows, cand, k)
        short = np.flatnonzero(idx[s:s + len(b), -1] < 0) if k else []
        if len(short):
            exact = knn_both(qb[short], db_rows.vectors, k, progress=False)
            sim[s + short], idx[s + short] = exact.fwd_sim, exact.fwd_idx
        bar.update(len(b))
    bar.close()
    return sim, idx


# --- calibration on the mined pairs of a sample ---------------------------------------------------------------

def best_pairs(sim: np.ndarray, idx: np.ndarray, r_cand: dict, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Each query's best candidate by ``kind`` (:func:`bisent.mining.scoring.combine` of the cosine, the query's
    neighbourhood mean and the candidate's) and its score: (target (s,) int64, score (s,) float32). ``sim``,
    ``idx`` (s, k): the queries' lists; ``r_cand``: the neighbourhood mean of every candidate in ``idx``."""
    from .margins import combine

    r_q = sim.mean(axis=1)
    r_c = np.vectorize(r_cand.__getitem__, otypes=[np.float32])(idx) if idx.size else np.zeros(idx.shape)
    score = combine(kind, sim, r_q[:, None], r_c)                                    # (s, k)
    best = score.argmax(axis=1)
    rows = np.arange(len(sim))
    return idx[rows, best], score[rows, best]


def neighbourhood_means(rows: np.ndarray, side, other, k: int, r: dict) -> None:
    """Fill ``r`` with the exact mean similarity of the ``k`` nearest rows of ``other`` to each of ``rows`` of
    ``side`` not yet in it."""
    from .index import knn_both, sample_rows

    new = np.array(sorted(set(rows.tolist()) - set(r)), dtype=np.int64)
    if len(new):
        sims = knn_both(sample_rows(side, new), other, k, progress=False).fwd_sim.mean(axis=1)
        r.update(zip(new.tolist(), sims.tolist()))


class PairSample:
    """The mined pairs of a sample of queries by the exact search, to compare a compressed search's with.

    The pairs counted are those a run would keep: of ``sample`` queries (seeded), the ones whose exact best pair
    scores at least ``threshold``, or, without one (the default cut is set after the search) or when no sampled pair
    reaches it, the ``top_share`` best-scoring (the pairs a cut keeps where at most that share of the sentences have
    a translation; the noise below is near-ties whose order no cut keeps). Queries are picked in two steps, so that
    only a few candidates' neighbourhoods are computed exactly: the sample's exact lists, scored with the query's
    own neighbourhood for the candidate's; the best 3 × ``top_share`` of them (more when more reach the threshold)
    scored exactly.
    ``queries`` (c,) are the counted query rows, ``truth`` (c,) their exact pairs' targets."""

    def __init__(self, queries, db, k: int, *, kind: str = "ratio", threshold: float | None = None,
                 sample: int = PAIR_SAMPLE, top_share: float = PAIR_TOP_SHARE, seed: int = 0):
        from .index import knn_both, sample_rows
        from .margins import combine

        n = len(queries)
        self.side, self.db, self.kind, self.threshold = queries, db, kind, threshold
        self.kq, self.kn = min(k, len(db)), min(k, n)
        rng = np.random.default_rng([seed, 4])
        rows = np.sort(rng.choice(n, size=min(sample, n), replace=False))
        exact = knn_both(sample_rows(queries, rows), db, self.kq, progress=False)
        r_q = exact.fwd_sim.mean(axis=1)
        proxy = combine(kind, exact.fwd_sim, r_q[:, None], r_q[:, None]).max(axis=1)     # (s,)
        order = np.argsort(-proxy, kind="stable")
        size = max(1, int(np.ceil(3 * top_share * len(rows))))
        if threshold is not None:
            size = max(size, int(np.sum(proxy >= threshold)))
        pre = np.sort(order[:size])
        self.r_cand: dict = {}
        neighbourhood_means(exact.fwd_idx[pre].reshape(-1), db, queries, self.kn, self.r_cand)
        tgt, score = best_pairs(exact.fwd_sim[pre], exact.fwd_idx[pre], self.r_cand, kind)
        cos = exact.fwd_sim[pre][exact.fwd_idx[pre] == tgt[:, None]]
        if threshold is not None and np.any(score >= threshold):
            counted = score >= threshold
        else:
            counted = np.zeros(len(pre), dtype=bool)
            counted[np.argsort(-score, kind="stable")[:max(1, int(np.ceil(top_share * len(rows))))]] = True
        self.queries, self.truth, self.cos = rows[pre][counted], tgt[counted], cos[counted]
        self.qs = sample_rows(queries, self.queries)                                    # (c, d) float32
        self.by_reverse: np.ndarray | None = None          # (c,) mined by the other direction (mined_by_reverse)

    def mined_by_reverse(self, rev_sim: np.ndarray, rev_idx: np.ndarray) -> None:
        """Count as agreeing the pairs the other direction's lists already mine: under ``max`` retrieval a pair is
        kept whichever direction finds it, so this direction's probes need find only the rest.

        ``rev_sim``, ``rev_idx`` (len(db), k): each row of ``db``'s neighbours among the queries' side (the search
        made first, exact similarities). A counted pair (query q, truth t) is mined there when q is t's best
        candidate by the margin (the candidates' neighbourhood means exact) and, with a threshold, scores at or
        above it."""
        if not len(self.queries):
            self.by_reverse = np.zeros(0, dtype=bool)
            return
        sim, idx = rev_sim[self.truth], rev_idx[self.truth]                             # (c, k) t's list
        r_side: dict = {}
        neighbourhood_means(idx.reshape(-1), self.side, self.db, self.kq, r_side)
        got, score = best_pairs(sim, idx, r_side, self.kind)
        cos_got = sim[np.arange(len(sim)), np.argmax(idx == got[:, None], axis=1)]
        ok = (got == self.queries) | (cos_got == self.cos)
        if self.threshold is not None:
            ok &= score >= self.threshold
        self.by_reverse = ok

    def agreement(self, index: faiss.Index, p: np.ndarray, db_rows: Rows, extra: int, nprobe: int) -> float:
        """The share of the counted pairs that the compressed search with ``nprobe`` probes also mines: the same
        target (or one of exactly the same cosine: a duplicate line), and, with a threshold, at or above it."""
        sim, idx = search_side(index, self.qs, p, db_rows, self.kq, extra, nprobe)
        neighbourhood_means(idx.reshape(-1), self.db, self.side, self.kn, self.r_cand)
        got, score = best_pairs(sim, idx, self.r_cand, self.kind)
        same = (got == self.truth) | (sim[idx == got[:, None]] == self.cos)
        if self.threshold is not None:
            same &= score >= self.threshold
        if self.by_reverse is not None:
            same |= self.by_reverse
        return float(np.mean(same)) if len(same) else 1.0


def calibrate_pair_probes(index: faiss.Index, queries, db, p: np.ndarray, k: int, extra: int, *,
                          kind: str = "ratio", threshold: float | None = None, target: float = PAIR_TARGET,
                          sample: int = PAIR_SAMPLE, top_share: float = PAIR_TOP_SHARE, seed: int = 0,
                          db_rows: Rows | None = None, details: dict | None = None,
                          reverse: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[int, float]:
    """``(nprobe, agreement)``: the fewest probes (from :data:`MIN_PROBES`, ×√2 a step) at which the pairs mined
    from the compressed search's lists agree with the exact search's on at least ``target`` of a
    :class:`PairSample`'s; all lists when none does. Every similarity and every candidate's neighbourhood mean is
    the exact one: what differs is only the query's list, which is what ``nprobe`` changes. ``details`` receives
    the counted query rows (``queries``) and their exact pairs (``truth``: row → target). ``reverse``: the other
    direction's lists (sim, idx), searched before, under ``max`` retrieval: a pair they mine already counts as
    agreeing (:meth:`PairSample.mined_by_reverse`)."""
    pairs = PairSample(queries, db, k, kind=kind, threshold=threshold, sample=sample, top_share=top_share, seed=seed)
    if reverse is not None:
        pairs.mined_by_reverse(*reverse)
    if details is not None:
        details.update(queries=pairs.queries, truth=dict(zip(pairs.queries.tolist(), pairs.truth.tolist())))
    db_rows = db_rows or Rows(db)
    ivf = faiss.extract_index_ivf(index)
    probes = min(MIN_PROBES, ivf.nlist)
    while True:
        agreement = pairs.agreement(index, p, db_rows, extra, probes)
        if agreement >= target or probes >= ivf.nlist:
            return probes, agreement
        probes = min(ivf.nlist, int(np.ceil(probes * np.sqrt(2))))


# --- the search both ways -------------------------------------------------------------------------------------

def _note(message: str) -> None:
    print(f"bisent: {message}", file=sys.stderr, flush=True)


@dataclass
class Timer:
    """Seconds of named stages into ``out`` (a dict), when given."""

    out: dict | None

    def __call__(self, name: str, t0: float) -> None:
        if self.out is not None:
            self.out.setdefault("stages", {})[name] = round(time.perf_counter() - t0, 3)


def write_index(index: faiss.Index, path: Path) -> None:
    """``faiss.write_index`` to a temporary file beside ``path``, then renamed into place: a failed write (a full
    disk) leaves no file at ``path`` and no temporary, and is a one-line error."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        faiss.write_index(index, str(tmp))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except (OSError, RuntimeError) as e:
        tmp.unlink(missing_ok=True)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BisentError(f"{path}: could not write the index ({first})") from None


def read_index(path: Path, rows: int, dim: int) -> faiss.Index:
    """The index saved at ``path``; one that does not hold ``rows`` vectors of ``dim`` dimensions (built on other
    vectors) or does not read is a one-line error."""
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as e:
        raise BisentError(f"{path}: not a readable index ({str(e).strip().splitlines()[0]}); remove "
                          f"{path.parent} to start again") from None
    if index.ntotal != rows or index.d != dim:
        raise BisentError(f"{path}: an index of {index.ntotal} vectors of {index.d} dimensions, built on other "
                          f"vectors than these ({rows} of {dim}); remove {path.parent} to start again")
    return index


def params_json(p: Params) -> str:
    return json.dumps(p.__dict__, sort_keys=True)

"""Monotone many-to-many sentence alignment by dynamic programming, exact or in a band, coarse to fine.

The lattice has a point ``(i, j)`` for "the first i source and first j target
sentences are aligned"; an alignment is a path from ``(0, 0)`` to ``(n, m)``
whose steps are alignment types ``(a, b)`` (``a`` source sentences with ``b``
target sentences: 1-1, 1-2, 2-1, 2-2, 1-3, 3-1, and the skips 1-0 / 0-1). The
cost of a path is the sum of its steps' costs, given by a cost model
(:mod:`bisent.align.costs`) with one method::

    cost(a, b, i, js) -> (len(js),) float64   # step (i-a, j-b) -> (i, j) for every j in js

The DP runs row by row (one numpy pass per type and row). Each row ``i`` has a
column interval ``[lo[i], hi[i]]``: the full rectangle for the exact DP, a band
around a coarse path for long documents. The 0-1 step (skip a target sentence)
depends on the same row; it is resolved in one pass with a running minimum
(``D[i, j] = min_k X[k] + S[j] - S[k]``, ``S`` the cumulative skip costs).

Coarse to fine (Thompson & Koehn 2019, after FastDTW): while the lattice has
more than ``exact_cells`` points, the cost model is coarsened (two neighbouring
sentences become one unit), the coarse alignment is found recursively, and the
fine DP runs only in a band of ``width`` sentences around the projected coarse
path. Time and memory are then O((n + m) * width) instead of O(n * m).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np


#: vecalign's default alignment types: every (a, b) with a + b <= 4, plus the skips.
def alignment_types(max_size: int = 4) -> list[tuple[int, int]]:
    """Skips first, then every ``(a, b)`` with ``a, b >= 1`` and ``a + b <= max_size``."""
    if max_size < 2:
        raise ValueError("max_size must be at least 2 (1-1 alignments)")
    return [(1, 0), (0, 1)] + [(a, s - a) for s in range(2, max_size + 1) for a in range(1, s)]


class Band(NamedTuple):
    """Column interval ``[lo[i], hi[i]]`` of each lattice row ``i = 0..n`` (both non-decreasing)."""

    lo: np.ndarray  # (n + 1,) int64
    hi: np.ndarray  # (n + 1,) int64

    @classmethod
    def full(cls, n: int, m: int) -> "Band":
        return cls(np.zeros(n + 1, dtype=np.int64), np.full(n + 1, m, dtype=np.int64))

    @property
    def cells(self) -> int:
        return int((self.hi - self.lo + 1).sum())


def dp_band(costs, n: int, m: int, types: Sequence[tuple[int, int]], band: Band | None = None
            ) -> tuple[list[tuple[int, int, int, int]], float]:
    """Cheapest path from (0, 0) to (n, m) inside ``band``: ``([(i0, i1, j0, j1), ...], total cost)``.

    Each step aligns source sentences ``i0..i1-1`` with target sentences ``j0..j1-1``.
    """
    band = band or Band.full(n, m)
    lo, hi = band.lo, band.hi
    if lo[0] != 0 or hi[n] != m:
        raise ValueError("the band must contain (0, 0) and (n, m)")
    types = list(types)
    skip_t = types.index((0, 1)) if (0, 1) in types else None
    others = [(t, a, b) for t, (a, b) in enumerate(types) if a >= 1]
    max_a = max(a for _, a, _ in others)
    rows: dict[int, np.ndarray] = {}                     # D of the last max_a rows, each (hi - lo + 1,)
    start_of = np.concatenate([[0], np.cumsum(hi - lo + 1)])    # (n + 2,) offset of each row in `back`
    back = np.empty(int(start_of[-1]), dtype=np.int8)    # type index per lattice point of the band, flat
    inf = np.inf
    for i in range(n + 1):
        l, h = int(lo[i]), int(hi[i])
        js = np.arange(l, h + 1)
        best = np.full(len(js), inf)
        arg = np.full(len(js), -1, dtype=np.int8)
        if i == 0 and l == 0:
            best[0] = 0.0
        for t, a, b in others:
            if i - a < 0:
                continue
            prev, pl = rows[i - a], int(lo[i - a])
            start, end = max(l, pl + b), min(h, int(hi[i - a]) + b)   # columns whose predecessor is in the band
            if start > end:
                continue
            cand = prev[start - b - pl: end - b - pl + 1] + costs.cost(a, b, i, js[start - l: end - l + 1])
            cur = best[start - l: end - l + 1]                 # a view: updated in place
            better = cand < cur
            cur[better] = cand[better]
            arg[start - l: end - l + 1][better] = t
        if skip_t is not None and len(js) > 1:
            s = costs.cost(0, 1, i, js[1:])                # skipping target sentence j-1 to reach column j
            cum = np.concatenate([[0.0], np.cumsum(s)])    # S[j] relative to column l
            run = np.minimum.accumulate(best - cum)
            via = run + cum
            skip = via < best - 1e-12 * np.maximum(1.0, np.abs(via))
            best = np.where(skip, via, best)
            arg = np.where(skip, np.int8(skip_t), arg)
        rows[i] = best
        rows.pop(i - max_a - 1, None)
        back[start_of[i]: start_of[i + 1]] = arg
    total = float(rows[n][m - int(lo[n])])
    if not np.isfinite(total):
        raise ValueError("no path through the band")
    path = []
    i, j = n, m
    while i > 0 or j > 0:
        a, b = types[int(back[start_of[i] + j - int(lo[i])])]
        path.append((i - a, i, j - b, j))
        i, j = i - a, j - b
    path.reverse()
    return path, total


def project_band(coarse_path, n: int, m: int, width: int, factor: int = 2) -> Band:
    """The fine band around a coarse path: each coarse step's rectangle scaled by ``factor``, widened by ``width``."""
    lo = np.full(n + 1, m + 1, dtype=np.int64)
    hi = np.full(n + 1, -1, dtype=np.int64)
    for i0, i1, j0, j1 in coarse_path:
        r0, r1 = min(i0 * factor, n), min(i1 * factor, n)
        c0, c1 = min(j0 * factor, m), min(j1 * factor, m)
        lo[r0:r1 + 1] = np.minimum(lo[r0:r1 + 1], c0)
        hi[r0:r1 + 1] = np.maximum(hi[r0:r1 + 1], c1)
    # widen by `width` rows and columns: a sliding min / max over rows, then +- width
    pad_lo = np.concatenate([np.full(width, m + 1), lo, np.full(width, m + 1)])
    pad_hi = np.concatenate([np.full(width, -1), hi, np.full(width, -1)])
    win = np.lib.stride_tricks.sliding_window_view
    lo = win(pad_lo, 2 * width + 1).min(axis=1) - width
    hi = win(pad_hi, 2 * width + 1).max(axis=1) + width
    lo = np.clip(lo, 0, m)
    hi = np.clip(hi, 0, m)
    lo = np.minimum.accumulate(lo[::-1])[::-1]           # non-decreasing
    hi = np.maximum.accumulate(hi)
    lo[0], hi[n] = 0, m
    return Band(lo, hi)


def align_costs(costs, types: Sequence[tuple[int, int]], *, width: int = 10, exact_cells: int = 250_000,
                coarse_types: Sequence[tuple[int, int]] | None = None):
    """Cheapest alignment under ``costs`` (which has ``n``, ``m`` and, for long inputs, ``coarsen()``).

    Exact DP when ``(n + 1) * (m + 1) <= exact_cells``; otherwise coarse to
    fine with a band of ``width``. Returns ``(path, total cost, cells)`` where
    ``cells`` counts the lattice points visited at every level.
    """
    n, m = costs.n, costs.m
    if (n + 1) * (m + 1) <= exact_cells or min(n, m) < 4:
        band = Band.full(n, m)
        path, total = dp_band(costs, n, m, types, band)
        return path, total, band.cells
    coarse = costs.coarsen()
    cpath, _, ccells = align_costs(coarse, coarse_types or types, width=width, exact_cells=exact_cells,
                                   coarse_types=coarse_types)
    del coarse                                           # free the coarse level before the fine pass
    band = project_band(cpath, n, m, width)
    del cpath
    path, total = dp_band(costs, n, m, types, band)
    return path, total, band.cells + ccells

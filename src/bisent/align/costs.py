"""Step costs for the alignment DP: embedding similarity of sentence groups, and Gale & Church's length model.

Both give ``cost(a, b, i, js)``: the cost of aligning source sentences
``i-a .. i-1`` with target sentences ``j-b .. j-1`` for every ``j`` in ``js``
(a skip is ``a = 0`` or ``b = 0``), and ``coarsen()`` for the coarse-to-fine pass.

**Embedding cost** (vecalign, Thompson & Koehn 2019, eq. 1). A group of
consecutive sentences is embedded as one text (their concatenation: the
"overlap" embeddings), so a 2-1 merge is judged by what the encoder makes of
the two sentences read together, not by an average. The cost of aligning
groups x and y is::

    c(x, y) = (1 - cos(x, y)) * |x| * |y| / (mean_s (1 - cos(x, y_s)) + mean_s (1 - cos(x_s, y)))

with ``y_s`` / ``x_s`` a fixed random sample of sentences of the other /
same document. The denominator corrects for hubs: a sentence that is close to
everything (short, generic, a name) gets no cheap match for it. ``|x| * |y|``
makes a many-to-many step as dear as the 1-1 steps it replaces, and
``merge_penalty * (|x| + |y| - 2)`` breaks the tie when both are near zero
(identical strings: "Get Method" / "Set Method" twice must stay two 1-1
blocks, not one 2-2; without it about 6 % of the dev blocks were such merges)
and keeps an untranslated sentence from being swallowed by a merge. A skip costs
a constant: the ``skip_quantile`` quantile of the 1-1 costs of sentence pairs
of the two documents off the diagonal (unrelated pairs; on the diagonal of a
short page they would be the translations themselves), so a sentence is left
unaligned rather than matched worse than that; but never less than
``skip_floor`` (0.3) times their median, for pages that repeat their strings. Coarse levels pool two
neighbouring sentences into one unit (unit mean of their embeddings).

Two terms join it. **Length** (``length_weight`` > 0, with the sentences'
character lengths): ``length_weight`` times Gale & Church's length cost below
(no priors; ``c`` the ratio of the two documents' total lengths), so that of
two groupings the encoder finds about as close, the one whose lengths agree
wins (a 2-1 merge against a 1-1 that leaves a sentence over); the skip
quantile is then taken of the same sum. **Copies** (``copies``: the pairs of
:func:`bisent.align.copies.copy_pairs`): an aligned block that holds a prose
sentence or its unchanged copy costs :data:`COPY_COST`, so an untranslated
sentence is left 1-0 / 0-1, neither matched to itself nor merged into a
neighbour's block (where the copy of the neighbour would pull it). Coarse levels pool the
lengths and leave the copies out (they only place the band).

**Gale & Church (1993)**: the character lengths of translations are roughly
proportional; with ``l1``, ``l2`` the group lengths, ``c = 1``, ``s2 = 6.8``
and ``z = (l2 - c * l1) / sqrt(s2 * (l1 + l2 / c) / 2)``, the cost is
``-log P(type) - log 2 (1 - Phi(|z|))`` with their priors (1-1 0.89, 1-0 and
0-1 0.0099 each, 2-1 and 1-2 0.089 each, 2-2 0.011; we give 1-3 and 3-1
0.0005, types they had no count for).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from ..encoders.base import l2_normalise
from .store import DiskVectors, LazyGroups

#: defaults of the aligner, chosen on dev data: docs/design/alignment-defaults.md, benchmarks/README.md
SKIP_QUANTILE, MERGE_PENALTY, SKIP_FLOOR, MAX_SIZE = 0.02, 0.1, 0.3, 5
#: weight of the length term (0: none) and whether copies are left unaligned: docs/design/alignment-defaults.md
LENGTH_WEIGHT, COPIES = 0.1, True
#: the cost of an aligned block holding a prose sentence or its unchanged copy (any skip is cheaper)
COPY_COST = 1e6


def log_erfc(x: np.ndarray) -> np.ndarray:
    """log erfc(x) for x >= 0, vectorised (Abramowitz & Stegun 7.1.26: erfc = t * poly(t) * exp(-x^2);
    relative error below 1e-6 near 0, and the log stays finite far in the tail)."""
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.log(poly) - x * x


def length_cost(l1, l2, c: float = 1.0, s2: float = 6.8) -> np.ndarray:
    """Gale & Church's ``-log 2 (1 - Phi(|z|))`` of group lengths ``l1`` (source) and ``l2`` (target),
    ``z = (l2 - c l1) / sqrt(s2 (l1 + l2 / c) / 2)``: 0 where the lengths agree, about ``z^2 / 2`` beyond."""
    mean = np.maximum((l1 + l2 / c) / 2.0, 1e-9)
    z = np.abs(l2 - c * l1) / np.sqrt(s2 * mean)
    return -log_erfc(z / math.sqrt(2.0))          # -log 2 (1 - Phi(|z|)) = -log erfc(|z| / sqrt 2)


def _pool_lengths(x: np.ndarray) -> np.ndarray:
    """Sums of neighbouring lengths 2k and 2k+1 (the last alone when odd): the coarse level's lengths."""
    out = x[0::2].copy()
    out[: len(x) // 2] += x[1::2]
    return out


def _pool_pairs(x: np.ndarray) -> np.ndarray:
    """(ceil(n/2), d): unit mean of rows 2k and 2k+1 (the last row alone when n is odd)."""
    n = len(x)
    out = x[0::2].astype(np.float32)
    out[: n // 2] += x[1::2].astype(np.float32)
    return l2_normalise(out)


def _take(g, idx: np.ndarray) -> np.ndarray:
    """Rows ``idx`` of an array, a :class:`DiskVectors` or any :class:`LazyGroups`."""
    if isinstance(g, DiskVectors):
        return g.take(idx)
    if isinstance(g, LazyGroups):
        return np.stack([g.make(int(k), int(k) + 1)[0] for k in idx])
    return g[idx]


def group_sums(units: np.ndarray, sizes) -> dict[int, np.ndarray]:
    """{size: (n - size + 1, d) float16}: unit sum of each run of ``size`` consecutive rows."""
    units = units.astype(np.float32)
    out = {}
    for a in sizes:
        acc = units[: len(units) - a + 1].copy()
        for k in range(1, a):
            acc += units[k: len(units) - a + 1 + k]
        out[a] = l2_normalise(acc).astype(np.float16)
    return out


def lazy_pooled_groups(sentences, sizes, block: int = 2048, spill_dir=None) -> dict:
    """The coarse level of float16 ``sentences`` (an array or :class:`DiskVectors`): as
    ``group_sums(_pool_pairs(sentences), sizes)``, but pooled block by block into a :class:`DiskVectors`
    (neither level is ever whole in memory), and sizes above 1 as :class:`LazyGroups`, summed when asked
    from the float16 pooled vectors (the coarse levels only place the band)."""
    ones = DiskVectors.write((group_sums(_pool_pairs(sentences[k:k + 2 * block]), [1])[1]
                              for k in range(0, len(sentences), 2 * block)), spill_dir=spill_dir)
    out = {1: ones}
    for a in sizes:
        if a > 1:
            def make(k0, k1, a=a):
                return group_sums(ones[k0:k1 + a - 1], [a])[a]
            out[a] = LazyGroups(make, len(ones) - a + 1)
    return out


class EmbeddingCosts:
    """vecalign's cost over group embeddings ``{size: (n - size + 1, d)}`` of both documents.

    Any size may be an array or a :class:`LazyGroups` (the sentences of a long document: a
    :class:`DiskVectors`), made or read in chunks of ``chunk`` groups as the band reaches them and
    evicted beyond ``keep`` chunks per side and size (the DP walks the band monotonically, so each chunk
    is made about once). Its vectors and costs are those of the whole array. ``spill_dir``: where the
    coarse levels of lazy sentences are written (the system's temporary folder by default).
    ``lengths``: the character lengths of the sentences of both sides, for the length term of
    ``length_weight``; ``copies``: ``(k, 2)`` (source, target) sentences that are copies.
    """

    def __init__(self, src_groups: dict, tgt_groups: dict, *,
                 samples: int = 20, skip_quantile: float = SKIP_QUANTILE, size_factor: bool = True,
                 merge_penalty: float = MERGE_PENALTY, skip_floor: float = SKIP_FLOOR, seed: int = 0,
                 norm_groups: bool = False, skip_pairs: str = "off_diagonal",
                 chunk: int = 2048, keep: int = 3, spill_dir=None,
                 lengths: tuple | None = None, length_weight: float = LENGTH_WEIGHT, copies=None):
        if skip_pairs not in ("off_diagonal", "random"):
            raise ValueError(f"skip_pairs must be 'off_diagonal' or 'random', got {skip_pairs!r}")
        self.src, self.tgt = src_groups, tgt_groups
        self.n, self.m = len(src_groups[1]), len(tgt_groups[1])
        self.samples, self.skip_quantile, self.size_factor, self.seed = samples, skip_quantile, size_factor, seed
        self.merge_penalty, self.skip_floor = merge_penalty, skip_floor
        self.norm_groups, self.skip_pairs = norm_groups, skip_pairs
        self.chunk, self.keep, self.spill_dir = chunk, keep, spill_dir
        self.lengths, self.length_weight = lengths, (length_weight if lengths is not None else 0.0)
        if self.length_weight:
            ls, lt = (np.asarray(x, dtype=np.float64) for x in lengths)
            if len(ls) != self.n or len(lt) != self.m:
                raise ValueError(f"lengths of {len(ls)} / {len(lt)} sentences for {self.n} / {self.m}")
            self._ls, self._lt = ls, lt
            self._cs, self._ct = np.concatenate([[0.0], np.cumsum(ls)]), np.concatenate([[0.0], np.cumsum(lt)])
            self.ratio = float(self._ct[-1] / self._cs[-1]) if self._cs[-1] > 0 and self._ct[-1] > 0 else 1.0
        self.copies = None if copies is None or not len(copies) else np.asarray(copies, dtype=np.int64).reshape(-1, 2)
        if self.copies is not None:                       # running counts of the sentences that have a copy, per side
            self._copy_src = np.concatenate([[0], np.cumsum(np.isin(np.arange(self.n), self.copies[:, 0]))])
            self._copy_tgt = np.concatenate([[0], np.cumsum(np.isin(np.arange(self.m), self.copies[:, 1]))])
        self._chunks: OrderedDict = OrderedDict()   # (side, size, chunk index) -> (vectors, norms)
        self._lazy_sizes = sum(isinstance(g, LazyGroups) for g in (*self.src.values(), *self.tgt.values()))
        rng = np.random.default_rng(seed)
        self._ys = ys = self._sample(self.tgt, rng)   # (S, d)
        self._xs = xs = self._sample(self.src, rng)
        # mean (1 - cos) of each group with the other side's sample: (n - a + 1,) per size (lazy sizes per chunk)
        self.norm_src = {a: 1.0 - self._dot(g, ys).mean(axis=1) for a, g in self.src.items()
                         if not isinstance(g, LazyGroups)}
        self.norm_tgt = {b: 1.0 - self._dot(g, xs).mean(axis=1) for b, g in self.tgt.items()
                         if not isinstance(g, LazyGroups)}
        ri, rj = self._unrelated_pairs(rng)
        (x, nx), (y, ny) = self._rows(0, ri), self._rows(1, rj)
        cos = np.einsum("kd,kd->k", x.astype(np.float32), y.astype(np.float32))
        rand = np.maximum(1.0 - cos, 0.0) / (nx + ny)
        if self.length_weight:
            rand = rand + self.length_weight * length_cost(self._ls[ri], self._lt[rj], self.ratio)
        # a page that repeats its strings ("Event", "Event", ...) has translations off the diagonal
        # too, which pull the quantile to zero: never below half the median
        self.skip = float(max(np.quantile(rand, skip_quantile), skip_floor * np.median(rand)))
        self._chunks.clear()

    def _sample(self, groups: dict, rng) -> np.ndarray:
        """The normalising sample of one side, ``(samples, d)`` float32: its sentences, or with
        ``norm_groups`` (as vecalign) as many of each group size as ``samples`` allows, drawn alike."""
        sizes = sorted(groups) if self.norm_groups else [1]
        per = -(-self.samples // len(sizes))
        rows = [_take(groups[a], rng.integers(0, len(groups[a]), per)) for a in sizes if len(groups[a])]
        return np.concatenate(rows).astype(np.float32)[: max(self.samples, 1)]

    def _unrelated_pairs(self, rng, k: int = 2000) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``k`` sentence pairs off the diagonal (``|i - j n / m| >= 1.5``): pairs that are not
        translations. Every such pair of a small document, a random sample of a large one; the
        diagonal pairs themselves when the documents are too short to have others. With
        ``skip_pairs="random"`` (vecalign) any pairs, the diagonal not left out."""
        if self.n * self.m <= k:
            ri, rj = (g.ravel() for g in np.meshgrid(np.arange(self.n), np.arange(self.m), indexing="ij"))
        else:
            ri, rj = rng.integers(0, self.n, 2 * k), rng.integers(0, self.m, 2 * k)
        off = np.abs(ri - rj * self.n / self.m) >= (1.5 if self.skip_pairs == "off_diagonal" else 0.0)
        return (ri[off][:k], rj[off][:k]) if off.any() else (ri[:k], rj[:k])

    @staticmethod
    def _dot(g: np.ndarray, s: np.ndarray, block: int = 65536) -> np.ndarray:
        return np.concatenate([g[k:k + block].astype(np.float32) @ s.T for k in range(0, len(g), block)] or
                              [np.zeros((0, len(s)), np.float32)]).astype(np.float64)

    def _chunk(self, side: int, a: int, c: int) -> tuple[np.ndarray, np.ndarray]:
        """Vectors and norms of chunk ``c`` of the lazy groups of size ``a`` of one side (kept LRU)."""
        key = (side, a, c)
        hit = self._chunks.get(key)
        if hit is not None:
            self._chunks.move_to_end(key)
            return hit
        g = (self.src if side == 0 else self.tgt)[a]
        v = g.make(c * self.chunk, min((c + 1) * self.chunk, len(g)))
        hit = self._chunks[key] = (v, 1.0 - self._dot(v, self._ys if side == 0 else self._xs).mean(axis=1))
        if len(self._chunks) > self.keep * self._lazy_sizes:
            self._chunks.popitem(last=False)
        return hit

    def _groups(self, side: int, a: int, k0: int, k1: int) -> tuple[np.ndarray, np.ndarray]:
        """Vectors (k1 - k0, d) and norms (k1 - k0,) of groups ``k0..k1-1`` of size ``a`` of one side."""
        g = (self.src if side == 0 else self.tgt)[a]
        if not isinstance(g, LazyGroups):
            return g[k0:k1], (self.norm_src if side == 0 else self.norm_tgt)[a][k0:k1]
        vecs, norms = [], []
        for c in range(k0 // self.chunk, (k1 - 1) // self.chunk + 1):
            v, nv = self._chunk(side, a, c)
            lo, hi = max(k0 - c * self.chunk, 0), min(k1 - c * self.chunk, self.chunk)
            vecs.append(v[lo:hi])
            norms.append(nv[lo:hi])
        return (vecs[0], norms[0]) if len(vecs) == 1 else (np.concatenate(vecs), np.concatenate(norms))

    def _rows(self, side: int, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectors and norms of sentences ``idx`` (any order) of one side; lazy sentences chunk by chunk."""
        g = (self.src if side == 0 else self.tgt)[1]
        if not isinstance(g, LazyGroups):
            return g[idx], (self.norm_src if side == 0 else self.norm_tgt)[1][idx]
        vecs = np.zeros((len(idx), len(self._ys[0])), np.float16)
        norms = np.zeros(len(idx))
        for c in np.unique(idx // self.chunk):
            at = np.flatnonzero(idx // self.chunk == c)
            v, nv = self._chunk(side, 1, int(c))
            vecs[at], norms[at] = v[idx[at] - c * self.chunk], nv[idx[at] - c * self.chunk]
        return vecs, norms

    def _pair(self, a: int, b: int, i: int, js: np.ndarray):
        """(source group vector (d,), its norm, target vectors (len(js), d), their norms)."""
        x, nx = self._groups(0, a, i - a, i - a + 1)
        k0, k1 = int(js.min()) - b, int(js.max()) - b + 1
        y, ny = self._groups(1, b, k0, k1)
        if not (len(js) and js[-1] - js[0] == len(js) - 1):        # not contiguous
            y, ny = y[js - b - k0], ny[js - b - k0]
        return x[0], nx[0], y, ny

    def cosine(self, a: int, b: int, i: int, js: np.ndarray) -> np.ndarray:
        """cos of source group ``i-a..i-1`` with target groups ``j-b..j-1``, ``j`` in ``js`` (contiguous or not)."""
        x, _, y, _ = self._pair(a, b, i, js)
        return (y.astype(np.float32) @ x.astype(np.float32)).astype(np.float64)

    def cost(self, a: int, b: int, i: int, js: np.ndarray) -> np.ndarray:
        if a == 0 or b == 0:
            return np.full(len(js), self.skip)
        x, nx, y, ny = self._pair(a, b, i, js)
        cos = (y.astype(np.float32) @ x.astype(np.float32)).astype(np.float64)
        factor = a * b if self.size_factor else 1.0
        cost = np.maximum(1.0 - cos, 0.0) * factor / np.maximum(nx + ny, 1e-6) + self.merge_penalty * (a + b - 2)
        if self.length_weight:
            l1 = self._cs[i] - self._cs[i - a]
            cost = cost + self.length_weight * length_cost(l1, self._ct[js] - self._ct[js - b], self.ratio)
        if self.copies is not None:
            cost[self._holds_copy(a, b, i, js)] = COPY_COST
        return cost

    def _holds_copy(self, a: int, b: int, i: int, js: np.ndarray) -> np.ndarray:
        """Whether block (source ``i-a..i-1``, target ``j-b..j-1``) holds a sentence of a copy pair, per ``j``."""
        if self._copy_src[i] > self._copy_src[i - a]:
            return np.ones(len(js), dtype=bool)
        return self._copy_tgt[js] > self._copy_tgt[js - b]

    def coarsen(self) -> "EmbeddingCosts":
        """Neighbouring sentences pooled in pairs; lazy group sizes stay lazy at the coarse level."""
        def sums(x, sizes):
            if self._lazy_sizes:
                return lazy_pooled_groups(x, sizes, spill_dir=self.spill_dir)
            return group_sums(_pool_pairs(x), sizes)
        self._chunks.clear()                             # this level waits while the coarser ones run
        sizes_s, sizes_t = sorted(self.src), sorted(self.tgt)
        src = sums(self.src[1], [a for a in sizes_s if a <= (self.n + 1) // 2])
        tgt = sums(self.tgt[1], [b for b in sizes_t if b <= (self.m + 1) // 2])
        lengths = None
        if self.length_weight:
            lengths = (_pool_lengths(self._ls), _pool_lengths(self._lt))
        return EmbeddingCosts(src, tgt, samples=self.samples, skip_quantile=self.skip_quantile,
                              size_factor=self.size_factor, merge_penalty=self.merge_penalty,
                              skip_floor=self.skip_floor, seed=self.seed, norm_groups=self.norm_groups,
                              skip_pairs=self.skip_pairs, chunk=self.chunk, keep=self.keep, spill_dir=self.spill_dir,
                              lengths=lengths, length_weight=self.length_weight)


#: Gale & Church's priors (1993, table 5), with a small one for 1-3 / 3-1.
GC_PRIORS = {(1, 1): 0.89, (1, 0): 0.0099, (0, 1): 0.0099, (2, 1): 0.089, (1, 2): 0.089, (2, 2): 0.011,
             (1, 3): 0.0005, (3, 1): 0.0005}


class GaleChurchCosts:
    """Gale & Church's length-based cost over character lengths of the sentences."""

    def __init__(self, src_lengths, tgt_lengths, *, c: float = 1.0, s2: float = 6.8):
        self.ls = np.asarray(src_lengths, dtype=np.float64)
        self.lt = np.asarray(tgt_lengths, dtype=np.float64)
        self.n, self.m, self.c, self.s2 = len(self.ls), len(self.lt), c, s2
        self.cs = np.concatenate([[0.0], np.cumsum(self.ls)])
        self.ct = np.concatenate([[0.0], np.cumsum(self.lt)])

    def cost(self, a: int, b: int, i: int, js: np.ndarray) -> np.ndarray:
        l1 = np.full(len(js), self.cs[i] - self.cs[i - a])
        l2 = self.ct[js] - self.ct[js - b]
        return length_cost(l1, l2, self.c, self.s2) - math.log(GC_PRIORS.get((a, b), 1e-4))

    def coarsen(self) -> "GaleChurchCosts":
        return GaleChurchCosts(_pool_lengths(self.ls), _pool_lengths(self.lt), c=self.c, s2=self.s2)

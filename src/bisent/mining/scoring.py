"""Similarity scores for sentence pairs: cosine, Euclidean, CSLS and the three margins.

All vectors are unit rows, so cos(x, y) = x·y. With NN_k(x) the k nearest
targets of a source x and NN_k(y) the k nearest sources of a target y
(Artetxe & Schwenk 2019; Conneau et al. 2018 for CSLS)::

    r_x = mean_{z in NN_k(x)} cos(x, z)          r_y = mean_{z in NN_k(y)} cos(y, z)
    m(x, y)  = r_x / 2 + r_y / 2                  (= Σ cos / 2k over both neighbourhoods)
    absolute = cos(x, y)
    distance = cos(x, y) - m(x, y)
    ratio    = cos(x, y) / m(x, y)
    CSLS     = 2 cos(x, y) - r_x - r_y
    Euclidean similarity = -‖x - y‖ = -sqrt(2 - 2 cos(x, y))   (higher is closer)

:func:`margin` and :func:`csls` are the formulas on arrays. The scorer classes
wrap them in the scikit-learn style: ``fit`` stores the other collection,
``score`` finds the neighbours both ways and scores the candidate pairs;
``score_pairs`` scores given aligned pairs against the fitted collections as
background (how a fixed bitext gets margin scores without a comparable corpus).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .index import KNN, knn_both, resolve_method
from .margins import combine, csls, euclidean_similarity, margin  # noqa: F401  (the formulas, re-exported here)

MARGINS = ("absolute", "distance", "ratio")
KINDS = ("cosine", "euclidean", "csls") + MARGINS


def rowwise_cosine(x: np.ndarray, y: np.ndarray, block: int = 65536) -> np.ndarray:
    """cos of aligned rows: (n, d) × (n, d) -> (n,), computed in fp32 blocks."""
    out = np.empty(len(x), dtype=np.float32)
    for s in range(0, len(x), block):
        a = np.asarray(x[s:s + block], dtype=np.float32)
        b = np.asarray(y[s:s + block], dtype=np.float32)
        out[s:s + block] = np.einsum("ij,ij->i", a, b)
    return out


@dataclass
class Candidates:
    """Candidate pairs from kNN both ways, with their scores (best cosine first, as found).

    fwd_idx (n, k): target candidates of each source; fwd_score (n, k) their scores.
    bwd_idx (m, k): source candidates of each target;  bwd_score (m, k) their scores.
    knn: the raw cosine neighbours; r_x (n,), r_y (m,): neighbourhood means.
    """

    fwd_idx: np.ndarray
    fwd_score: np.ndarray
    bwd_idx: np.ndarray
    bwd_score: np.ndarray
    knn: KNN
    r_x: np.ndarray
    r_y: np.ndarray


class Scorer:
    """Scores pairs of unit vectors. ``kind`` is one of ``KINDS``; ``k`` the neighbourhood size.

    ``Scorer(kind="ratio", k=4).fit(targets).score(sources)`` -> :class:`Candidates`.
    ``fit(targets, sources=...)`` then ``score_pairs(x, y)`` scores aligned pairs
    with neighbourhoods taken in the fitted background collections.
    """

    def __init__(self, kind: str = "ratio", k: int = 4, *, knn_method: str = "exact", **knn_options):
        if kind not in KINDS:
            raise ValueError(f"unknown score '{kind}' (one of {', '.join(KINDS)})")
        if k < 1:
            raise ValueError("k must be at least 1")
        self.kind, self.k = kind, k
        self.knn_method, self.knn_options = knn_method, knn_options

    @property
    def needs_neighbours(self) -> bool:
        return self.kind in ("csls", "distance", "ratio")

    def fit(self, targets, sources=None) -> "Scorer":
        """Remember the target collection (and, for ``score_pairs``, a source background)."""
        self.targets_ = targets
        self.sources_ = sources
        return self

    def _knn(self, x, y, **kw) -> KNN:
        """kNN both ways with this scorer's method (``auto``: chosen by size) and options."""
        method, chosen = resolve_method(self.knn_method, x, y)
        options = {**chosen, **self.knn_options}
        if method == "twostage":
            from .twostage import knn_twostage
            for key in ("threshold", "stats", "retrieval"):
                options.pop(key, None)
            return knn_twostage(x, y, self.k, **options, **kw)
        if method == "compressed":                          # probes calibrated on this score's mined pairs
            from .plan import knn_compressed
            return knn_compressed(x, y, self.k, kind=self.kind, **options, **kw)
        for key in ("state", "threshold", "stats", "retrieval"):   # only the two-stage and compressed searches
            options.pop(key, None)                                    # resume, and only the compressed calibrates
        return knn_both(x, y, self.k, method=method, **options, **kw)

    def score(self, sources, *, progress: bool | None = None) -> Candidates:
        """kNN of ``sources`` among the fitted targets and back; score every candidate pair."""
        return self.candidates(self._knn(sources, self.targets_, progress=progress))

    def candidates(self, knn: KNN) -> Candidates:
        """Score the neighbours found both ways (however they were found: one pass, or merged blocks)."""
        r_x = knn.fwd_sim.mean(axis=1) if knn.fwd_sim.size else np.zeros(len(knn.fwd_sim), np.float32)
        r_y = knn.bwd_sim.mean(axis=1) if knn.bwd_sim.size else np.zeros(len(knn.bwd_sim), np.float32)
        fwd = combine(self.kind, knn.fwd_sim, r_x[:, None], r_y[knn.fwd_idx])
        bwd = combine(self.kind, knn.bwd_sim, r_x[knn.bwd_idx], r_y[:, None])
        return Candidates(knn.fwd_idx, fwd, knn.bwd_idx, bwd, knn, r_x, r_y)

    def neighbourhood_means(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """r_x of each x among the fitted targets, r_y of each y among the fitted sources."""
        if not self.needs_neighbours:
            return np.zeros(len(x), np.float32), np.zeros(len(y), np.float32)
        if self.sources_ is None:
            raise ValueError(f"score '{self.kind}' on given pairs needs fit(targets, sources=...) background "
                             "collections")
        r_x = self._knn(x, self.targets_).fwd_sim.mean(axis=1)
        r_y = self._knn(y, self.sources_).fwd_sim.mean(axis=1)
        return r_x, r_y

    def score_pairs(self, x, y) -> np.ndarray:
        """Scores of aligned pairs (x_i, y_i): (n,) float32."""
        cos = rowwise_cosine(x, y)
        r_x, r_y = self.neighbourhood_means(x, y)
        return combine(self.kind, cos, r_x, r_y)


class CosineScorer(Scorer):
    def __init__(self, k: int = 4, **kw):
        super().__init__("cosine", k, **kw)


class EuclideanScorer(Scorer):
    def __init__(self, k: int = 4, **kw):
        super().__init__("euclidean", k, **kw)


class CSLSScorer(Scorer):
    def __init__(self, k: int = 4, **kw):
        super().__init__("csls", k, **kw)


class MarginScorer(Scorer):
    """``MarginScorer(k=4, kind="ratio")``: the margin of Artetxe & Schwenk 2019."""

    def __init__(self, k: int = 4, kind: str = "ratio", **kw):
        if kind not in MARGINS:
            raise ValueError(f"unknown margin '{kind}' (absolute, distance, ratio)")
        super().__init__(kind, k, **kw)

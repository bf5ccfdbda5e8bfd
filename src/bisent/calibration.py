"""Precision at every threshold without gold: the run's scores against synthetic negatives.

The scores a run produces (mined pairs before the threshold, or the pairs that
reached a filter's score step) are a mixture of true pairs and false ones::

    f(s) = pi0 · f0(s) + (1 - pi0) · f1(s)

``f0`` is anchored by *synthetic negatives* made from the same corpus and
scored with the same scorer (:func:`mining_negatives`: each confident pair's
best competitor no confident pair holds once its partner is taken away, the
situation of a sentence whose translation, and document, is missing;
:func:`filter_negatives`: shuffled, neighbour, truncated, glued and copied
pairs put through the same pipeline; :func:`alignment_negatives`: an aligned
block's target with its own and the next block's sources glued, or an aligned
block's source with another block's target of the same document). ``pi0`` is
Storey's estimate: below a cut ``lam`` (a quantile of the negatives, 75 %,
chosen on the dev split; moved with them by the fitted shift) almost every
observed score is a false pair, so ``pi0 = #{s < lam} / (n · F0(lam))``.
Then the expected number of false pairs kept at a threshold ``t`` is
``pi0 · n · S0(t)`` (``S0`` the negatives' survival function) and

    precision(t) = 1 - pi0 · n · S0(t) / #{s >= t}

made non-decreasing in ``t``. :meth:`Calibration.threshold_for` inverts it
(``--precision 0.95`` instead of ``--threshold``). How close this comes to the
measured precision is checked by ``bisent bench calibration``.

Sentence mining (:func:`mining_calibration`) fits this mixture to every
retrieved pair against the orphan negatives, the false share by EM
(``pi0="em"``): of the estimators measured on mining tasks with 5-95 %
overlap (benchmarks/README, "Mining threshold calibration") it had the
smallest mean error among those that keep the pairs a true 90 % cut keeps.
:func:`calibrate_split` (non-mutual pairs counted as false, the default
before: right near 25 % overlap only) and :func:`calibrate_joint`
(mutuality as a second feature of one mixture) remain to compare.
"""

from __future__ import annotations

import random
import sys
from dataclasses import asdict, dataclass
from typing import NamedTuple, Sequence

import numpy as np

from .errors import BisentError

#: Points of the precision curve kept (and plotted).
GRID_POINTS = 201


@dataclass
class Calibration:
    """Estimated precision and yield over a grid of thresholds (ascending)."""

    thresholds: list[float]
    precision: list[float]  # estimated share of true pairs among those scoring >= threshold
    kept: list[int]         # pairs scoring >= threshold
    pi0: float              # estimated share of false pairs among all scored
    shift: float            # how far the synthetic negatives' scores were moved (fitted, or read off the non-mutual
                            # pairs in mining)
    n_scores: int
    n_negatives: int
    fallback_threshold: float | None = None   # mining: the cut used where the estimate is unreliable
                                              # (:func:`mining_fallback`)

    def precision_at(self, t: float) -> float:
        """Estimated precision of keeping scores >= ``t`` (step interpolation on the grid)."""
        th = np.asarray(self.thresholds)
        if not len(th):
            return float("nan")
        i = int(np.searchsorted(th, t, side="right")) - 1
        return float(self.precision[max(i, 0)])

    def threshold_for(self, precision: float) -> float | None:
        """The lowest threshold whose estimated precision reaches ``precision`` (None: none that keeps a pair
        does; an empty set's precision of 1 is no answer)."""
        for t, p, k in zip(self.thresholds, self.precision, self.kept):
            if p >= precision and k > 0:
                return float(t)
        return None

    def as_dict(self) -> dict:
        return asdict(self)


def calibrate(scores: Sequence[float], negatives: Sequence[float], *, grid: Sequence[float] | None = None,
              bins: int = 400, shifts: Sequence[float] | None = None, iters: int = 100, pi0: str = "storey",
              lam: float = 0.75) -> Calibration:
    """Fit the negative-anchored mixture: ``scores`` (n,) observed, ``negatives`` (m,) synthetic false pairs.

    ``f0``: a Gaussian kernel density of the negatives, moved by a shift chosen
    by maximum likelihood from ``shifts`` (default: ±8 % of the negatives'
    spread in 25 steps; synthetic negatives sit a little off the real ones);
    ``f1``: a Gaussian fitted by EM. ``pi0="storey"``: at each shift the
    false share is Storey's, the observed scores below the moved ``lam``
    quantile of ``f0`` over ``lam`` (true pairs rarely score that low), and
    only ``f1`` is fitted; ``"em"``: the share is fitted by EM too (where
    false pairs are few, as in document mining, the Gaussian can widen over
    the low tail and the share come out 0). The observed scores
    are binned (``bins``), so a million scores cost what a thousand do. The
    true pairs' mean is kept at least one spread above the negatives' median:
    otherwise the Gaussian can take over a share of the false pairs (a run
    with no true pair at all would be told that half its pairs are right).
    """
    if pi0 not in ("storey", "em"):
        raise ValueError(f"pi0 must be 'storey' or 'em', got {pi0!r}")
    if not 0 < lam < 1:
        raise ValueError(f"lam must be between 0 and 1 (exclusive), got {lam}")
    s, neg, _, _ = _prepare(scores, negatives)
    s = np.sort(s)
    if len(s) < 2:
        return Calibration([], [], [], float("nan"), 0.0, len(s), len(neg))
    spread = float(neg.std()) or 1e-3
    bw = 1.06 * spread * len(neg) ** -0.2
    floor1 = float(np.median(neg)) + spread      # true pairs score above most false ones (see below)
    lo = min(s[0], neg.min()) - 4 * spread
    hi = max(s[-1], neg.max()) + 4 * spread
    fine = np.linspace(lo, hi, 2001)                                    # (2001,) where f0 lives
    pdf0 = np.zeros(len(fine))
    for part in np.array_split(neg, max(1, len(neg) // 500)):
        pdf0 += np.exp(-0.5 * ((fine[:, None] - part[None, :]) / bw) ** 2).sum(axis=1)
    pdf0 /= len(neg) * bw * np.sqrt(2 * np.pi)
    sf0 = 1.0 - np.concatenate([[0.0], np.cumsum((pdf0[1:] + pdf0[:-1]) / 2 * np.diff(fine))])
    counts, edges = np.histogram(s, bins=bins)
    centres = (edges[1:] + edges[:-1]) / 2
    w = counts / counts.sum()
    shifts = np.linspace(-0.08, 0.08, 25) * 4 * spread if shifts is None else np.asarray(shifts, dtype=np.float64)
    cut = float(np.interp(lam, 1.0 - sf0, fine))                      # the lam quantile of f0, unmoved
    best = None
    for d in shifts:
        p0 = np.interp(centres - d, fine, pdf0)
        storey = min(1.0, float(np.searchsorted(s, cut + d, side="left")) / (len(s) * lam)) if pi0 == "storey" else None
        share = 0.5 if storey is None else storey
        m1, s1 = max(float(np.average(centres, weights=w)), floor1 + d), float(s.std()) or spread
        for _ in range(iters):
            p1 = _normal_pdf(centres, m1, s1)
            r = share * p0 / np.maximum(share * p0 + (1 - share) * p1, 1e-300)   # responsibility of f0 per bin
            share = float(np.sum(w * r)) if storey is None else storey
            w1 = w * (1 - r)
            if w1.sum() <= 1e-9:
                break
            m1 = max(float(np.sum(w1 * centres) / w1.sum()), floor1 + d)
            s1 = max(float(np.sqrt(np.sum(w1 * (centres - m1) ** 2) / w1.sum())), bw)
        ll = float(np.sum(w * np.log(np.maximum(share * p0 + (1 - share) * _normal_pdf(centres, m1, s1), 1e-300))))
        if best is None or ll > best[0]:
            best = (ll, float(d), share)
    _, shift, share = best
    if grid is None:
        grid = np.linspace(s[0], s[-1], GRID_POINTS)
    grid = np.asarray(grid, dtype=np.float64)
    kept = len(s) - np.searchsorted(s, grid, side="left")               # #{s >= t}
    false_kept = share * len(s) * np.clip(np.interp(grid - shift, fine, sf0), 0.0, 1.0)
    prec = np.where(kept > 0, 1.0 - np.minimum(1.0, false_kept / np.maximum(kept, 1)), 1.0)
    prec = np.maximum.accumulate(prec)                                  # non-decreasing in t
    return Calibration([round(float(t), 6) for t in grid], [round(float(p), 5) for p in prec],
                       [int(k) for k in kept], round(share, 5), round(shift, 6), int(len(s)), int(len(neg)))


#: most synthetic negatives a fit uses (a random sample of them, the same in every estimator)
MAX_NEGATIVES = 5000


def _prepare(scores, negatives, mutual=None, neg_mutual=None):
    """The inputs of every estimator made alike: finite scores (n,) and negatives (m,) with their flags (or
    None), and at most :data:`MAX_NEGATIVES` negatives, drawn with one seed, so that estimators compared on a run
    see the same sample. Fewer than 10 negatives: an error."""
    s = np.asarray(scores, dtype=np.float64)
    neg = np.asarray(negatives, dtype=np.float64)
    mut = None if mutual is None else np.asarray(mutual, dtype=bool)
    nmut = None if neg_mutual is None else np.asarray(neg_mutual, dtype=bool)
    if (mut is not None and mut.shape != s.shape) or (nmut is not None and nmut.shape != neg.shape):
        raise ValueError("scores/mutual and negatives/neg_mutual must have the same lengths")
    ok = np.isfinite(s)
    s, mut = s[ok], None if mut is None else mut[ok]
    ok = np.isfinite(neg)
    neg, nmut = neg[ok], None if nmut is None else nmut[ok]
    if len(neg) < 10:
        raise BisentError(f"calibration needs at least 10 synthetic negatives, got {len(neg)}")
    if len(neg) > MAX_NEGATIVES:
        keep = np.sort(np.random.default_rng(0).choice(len(neg), MAX_NEGATIVES, replace=False))
        neg, nmut = neg[keep], None if nmut is None else nmut[keep]
    return s, neg, mut, nmut


def _normal_pdf(x: np.ndarray, mean: float, sd: float) -> np.ndarray:
    return np.exp(-0.5 * ((x - mean) / sd) ** 2) / (sd * np.sqrt(2 * np.pi))


# ---------------------------------------------------------------------------
# Sentence mining: mutual and non-mutual pairs apart
# ---------------------------------------------------------------------------

#: :func:`calibrate_split`'s Storey quantile on the mutual pairs and the quantiles of the non-mutual pairs that
#: place the negatives, chosen on the dev mining tasks (``bisent bench calibration --setting mining --split dev``,
#: benchmarks/README "Calibration against gold").
SPLIT_LAM = 0.5
SPLIT_OFFSET_QUANTILES = (0.1, 0.5)
#: fewest pairs and negatives of each kind (mutual, not) :func:`calibrate_split` is fitted with
SPLIT_MIN = 10


class OrphanNegatives(NamedTuple):
    """:func:`mining_negatives` with ``with_mutual``: scores (m,), mutual (m,), and the mutual share of every
    orphan that found a free candidate (before the one-to-one rule drops some)."""

    scores: np.ndarray
    mutual: np.ndarray
    mutual_rate: float


def mutual_pairs(cands, pair_src: np.ndarray, pair_tgt: np.ndarray) -> np.ndarray:
    """(p,) True where a retrieved pair's sides are each other's nearest neighbour (by cosine, the run's kNN)."""
    knn = cands.knn
    pair_src, pair_tgt = np.asarray(pair_src, np.int64), np.asarray(pair_tgt, np.int64)
    if len(pair_src) == 0 or knn.fwd_idx.shape[1] == 0:
        return np.zeros(len(pair_src), bool)
    return (knn.fwd_idx[pair_src, 0] == pair_tgt) & (knn.bwd_idx[pair_tgt, 0] == pair_src)


def calibrate_split(scores: Sequence[float], mutual: Sequence[bool], negatives: Sequence[float],
                    neg_mutual: Sequence[bool], *, mutual_rate: float | None = None,
                    grid: Sequence[float] | None = None, lam: float = SPLIT_LAM,
                    offset_quantiles: tuple[float, float] = SPLIT_OFFSET_QUANTILES) -> Calibration:
    """Mining precision with the retrieved pairs split by mutuality (``mutual`` (n,), ``neg_mutual`` (m,)).

    A retrieved pair whose sides are not each other's nearest neighbour is
    nearly always false (a sentence without translation paired with whatever
    is left: 91-98 % of them on the dev tasks), so the non-mutual pairs are
    counted as false as they are. Their lower half also shows where the real
    false pairs sit against the synthetic ones: the offset ``d`` is the mean
    gap between the observed and the negative non-mutual scores at 9
    quantiles from ``offset_quantiles[0]`` to ``[1]`` (the lower half, where
    the few true non-mutual pairs are not). The mutual pairs are a mixture of
    true pairs and of false pairs that happen to be mutual; the mutual
    negatives moved by ``d`` stand for the latter, on their empirical
    distribution (no kernel: a smoothed density of me5-small's narrow margin
    band put its false tail over the true pairs). How many of the mutual
    pairs are false, ``Fm``, is estimated twice and the two averaged:

    - Storey's, ``#{mutual s < c} / lam`` with ``c`` the ``lam`` quantile of
      the moved mutual negatives: too high where true pairs reach below ``c``
      (me5-small, whose true and false margins overlap);
    - by count, ``#non-mutual · q / (1 - q)`` with ``q`` = ``mutual_rate``, the
      share of simulated false pairs that are mutual (every orphan's, as
      :func:`mining_negatives` gives it): it needs no score model.

    ``mutual_rate`` None: Storey's alone. Then::

        false(t) = #{non-mutual s >= t} + Fm · S0m(t - d)

    and precision(t) = 1 - false(t) / #{s >= t}, made non-decreasing.
    ``Calibration.pi0`` is the false share of all pairs, ``shift`` is ``d``.
    """
    s = np.asarray(scores, dtype=np.float64)
    mut = np.asarray(mutual, dtype=bool)
    neg = np.asarray(negatives, dtype=np.float64)
    nmut = np.asarray(neg_mutual, dtype=bool)
    if s.shape != mut.shape or neg.shape != nmut.shape:
        raise ValueError("scores/mutual and negatives/neg_mutual must have the same lengths")
    if not 0 < lam < 1:
        raise ValueError(f"lam must be between 0 and 1 (exclusive), got {lam}")
    if mutual_rate is not None and not 0 <= mutual_rate < 1:
        raise ValueError(f"mutual_rate must be in [0, 1), got {mutual_rate}")
    ok = np.isfinite(s)
    s, mut = s[ok], mut[ok]
    ok = np.isfinite(neg)
    neg, nmut = neg[ok], nmut[ok]
    counts = (int(mut.sum()), int((~mut).sum()), int(nmut.sum()), int((~nmut).sum()))
    if min(counts) < SPLIT_MIN:
        raise BisentError(f"split calibration needs at least {SPLIT_MIN} mutual and non-mutual pairs and negatives, "
                          f"got {counts[0]}, {counts[1]}, {counts[2]}, {counts[3]}")
    n_mut, n_non = counts[0], counts[1]
    qs = np.linspace(offset_quantiles[0], offset_quantiles[1], 9)
    d = float(np.mean(np.quantile(s[~mut], qs) - np.quantile(neg[~nmut], qs)))
    negm = np.sort(neg[nmut] + d)
    cut = float(np.quantile(negm, lam))
    false_m = min(float(n_mut), float((s[mut] < cut).sum()) / lam)                     # Storey's
    if mutual_rate is not None:
        false_m = (false_m + min(float(n_mut), n_non * mutual_rate / (1 - mutual_rate))) / 2
    if grid is None:   # at score quantiles: the step estimate is read where the pairs are (a narrow band for me5-small)
        grid = np.unique(np.quantile(s, np.linspace(0.0, 1.0, GRID_POINTS)))
    grid = np.asarray(grid, dtype=np.float64)
    kept = len(s) - np.searchsorted(np.sort(s), grid, side="left")                    # #{s >= t}
    false_n = n_non - np.searchsorted(np.sort(s[~mut]), grid, side="left")
    false_t = false_n + false_m * (len(negm) - np.searchsorted(negm, grid, side="left")) / len(negm)
    prec = np.where(kept > 0, 1.0 - np.minimum(1.0, false_t / np.maximum(kept, 1)), 1.0)
    prec = np.maximum.accumulate(prec)
    # thresholds rounded down: a grid point is a score quantile, and one rounded up would pass over the pairs at it
    return Calibration([float(np.floor(t * 1e6) / 1e6) for t in grid], [round(float(p), 5) for p in prec],
                       [int(k) for k in kept], round((n_non + false_m) / len(s), 5), round(d, 6), int(len(s)),
                       int(len(neg)))


#: :func:`calibrate_joint`'s grids: the negatives' shift (times their spread) and scale about their median, chosen
#: on the dev mining tasks (``python benchmarks/mine_calibration.py --split dev``, benchmarks/README "Mining
#: threshold calibration"): real false pairs spread wider than the orphans where most sentences lack a translation
JOINT_SHIFTS = tuple(np.round(np.linspace(-0.6, 0.6, 13), 4))
JOINT_SCALES = (0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.45, 1.6)


def calibrate_joint(scores: Sequence[float], mutual: Sequence[bool], negatives: Sequence[float],
                    neg_mutual: Sequence[bool], *, mutual_rate: float | None = None, bins: int = 300,
                    iters: int = 150, shifts: Sequence[float] = JOINT_SHIFTS,
                    scales: Sequence[float] = JOINT_SCALES) -> Calibration:
    """Mining precision from one mixture fitted to every retrieved pair, its score and whether it is mutual.

    ``scores``/``mutual`` (n,): the retrieved pairs; ``negatives``/``neg_mutual``
    (m,): the orphan negatives (:func:`mining_negatives` with ``with_mutual``).
    A pair is false with probability ``pi0`` (the complement of the overlap,
    fitted); a false pair is mutual with probability ``q`` (``mutual_rate``,
    the orphans' share) and then scores like the mutual negatives, otherwise
    like the non-mutual ones, both moved by a shift and widened by a scale
    about their median (chosen by maximum likelihood on a grid: where most
    sentences lack a translation, real false pairs reach higher than the
    orphans); a true pair is mutual with a fitted probability ``r`` and scores
    a Gaussian per group, kept at least one spread above the negatives'
    median. ``pi0``, ``r`` and the Gaussians are fitted by EM on binned
    scores. Unlike :func:`calibrate_split`, a non-mutual pair is not taken to
    be false (where most sentences have a translation, many right pairs are
    not mutual) and the false share is not read off below a cut (where few
    do, the negatives' cut sits under many false pairs).

    Precision at ``t`` is the mean posterior probability of being right of the
    pairs scoring >= ``t``, made non-decreasing; ``pi0`` the fitted false share.
    """
    s, neg, mut, nmut = _prepare(scores, negatives, mutual, neg_mutual)
    if len(s) < 2:
        return Calibration([], [], [], float("nan"), 0.0, len(s), len(neg))
    spread = float(neg.std()) or 1e-3
    med = float(np.median(neg))
    # each group's negatives (a group with fewer than 10: all of them stand for it)
    neg_g = [neg[nmut] if nmut.sum() >= 10 else neg, neg[~nmut] if (~nmut).sum() >= 10 else neg]
    bw = [1.06 * (float(g.std()) or spread) * len(g) ** -0.2 for g in neg_g]
    q = float(mutual_rate) if mutual_rate is not None and np.isfinite(mutual_rate) else float(nmut.mean())
    q = min(max(q, 1e-3), 1 - 1e-3)
    floor1 = med + spread
    edges = np.linspace(s.min(), s.max() + 1e-9, bins + 1)
    centres = (edges[1:] + edges[:-1]) / 2                                   # (b,)
    counts = [np.histogram(s[mut], edges)[0].astype(np.float64),            # (b,) mutual pairs
              np.histogram(s[~mut], edges)[0].astype(np.float64)]           # (b,) non-mutual pairs
    n = float(len(s))
    best = None
    for d in np.asarray(shifts, dtype=np.float64) * spread:
        for c in scales:
            z = (centres - d - med) / c + med
            f0 = [q * _kde(neg_g[0], z, bw[0]) / c, (1 - q) * _kde(neg_g[1], z, bw[1]) / c]   # (b,) each
            pi0, r = 0.5, 0.9
            mu = [max(float(s.mean()), floor1 + d)] * 2
            sd = [float(s.std()) or spread] * 2
            for _ in range(iters):
                f1 = [r * _normal_pdf(centres, mu[0], sd[0]), (1 - r) * _normal_pdf(centres, mu[1], sd[1])]
                w = [pi0 * f0[g] / np.maximum(pi0 * f0[g] + (1 - pi0) * f1[g], 1e-300) for g in (0, 1)]
                t1 = [counts[g] * (1 - w[g]) for g in (0, 1)]                 # expected true pairs per bin
                pi0 = 1.0 - float(t1[0].sum() + t1[1].sum()) / n
                if t1[0].sum() + t1[1].sum() <= 1e-9:
                    break
                r = float(t1[0].sum() / (t1[0].sum() + t1[1].sum()))
                for g in (0, 1):
                    if t1[g].sum() > 2:
                        mu[g] = max(float(np.sum(t1[g] * centres) / t1[g].sum()), floor1 + d)
                        sd[g] = max(float(np.sqrt(np.sum(t1[g] * (centres - mu[g]) ** 2) / t1[g].sum())), bw[g])
            f1 = [r * _normal_pdf(centres, mu[0], sd[0]), (1 - r) * _normal_pdf(centres, mu[1], sd[1])]
            ll = sum(float(np.sum(counts[g] * np.log(np.maximum(pi0 * f0[g] + (1 - pi0) * f1[g], 1e-300))))
                     for g in (0, 1))
            if best is None or ll > best[0]:
                best = (ll, float(d), float(c), pi0, r, list(mu), list(sd))
    _, d, c, pi0, r, mu, sd = best
    # each pair's posterior probability of being false, at its own score
    z = (s - d - med) / c + med
    a = np.where(mut, q * _kde(neg_g[0], z, bw[0]), (1 - q) * _kde(neg_g[1], z, bw[1])) / c * pi0
    b = (1 - pi0) * np.where(mut, r * _normal_pdf(s, mu[0], sd[0]), (1 - r) * _normal_pdf(s, mu[1], sd[1]))
    post0 = a / np.maximum(a + b, 1e-300)                                   # (n,)
    order = np.argsort(s, kind="stable")
    ss = s[order]
    cum0 = np.concatenate([[0.0], np.cumsum(post0[order])])
    grid = np.unique(np.quantile(s, np.linspace(0.0, 1.0, GRID_POINTS)))
    at = np.searchsorted(ss, grid, side="left")
    kept = len(s) - at                                                      # #{s >= t}
    false_t = cum0[-1] - cum0[at]
    prec = np.where(kept > 0, 1.0 - np.minimum(1.0, false_t / np.maximum(kept, 1)), 1.0)
    prec = np.maximum.accumulate(prec)
    return Calibration([float(np.floor(t * 1e6) / 1e6) for t in grid], [round(float(p), 5) for p in prec],
                       [int(k) for k in kept], round(float(post0.mean()), 5), round(d, 6), int(len(s)),
                       int(len(neg)))


def _kde(points: np.ndarray, x: np.ndarray, bw: float) -> np.ndarray:
    """Gaussian kernel density of ``points`` (m,) with bandwidth ``bw`` at ``x`` (b,) -> (b,)."""
    out = np.zeros(len(x))
    for part in np.array_split(points, max(1, len(points) // 500)):
        out += np.exp(-0.5 * ((x[:, None] - part[None, :]) / bw) ** 2).sum(axis=1)
    return out / (len(points) * bw * np.sqrt(2 * np.pi))


#: Storey's quantile of the orphan negatives in mining (``pi0="storey"``; they are not moved: the shift fitted with
#: a Gaussian for the true pairs took the false share to 0 where most sentences have a translation, whose true
#: margins have a long low tail), chosen on the dev mining tasks (benchmarks/README "Mining threshold calibration")
MINING_LAM = 0.5
#: fewest retrieved pairs and orphan negatives a mining estimate is fitted with without a warning
MINING_MIN_PAIRS = 30
MINING_MIN_NEGATIVES = 20


#: Below this estimated share of right pairs among those retrieved (1 - ``pi0``), a mining run is warned that its
#: estimate may run high: the lowest share that warns every dev mining task of 5-10 % overlap (errors -10 to +39
#: points at the default; the tasks above it: 14.2 at most, mean 2.6, benchmarks/README, "Mining threshold
#: calibration").
LOW_OVERLAP = 0.38


def low_overlap_warning(cal: Calibration | None) -> str | None:
    """A one-line warning when few retrieved pairs look right (estimated share under :data:`LOW_OVERLAP`), where the
    estimated precision is known to run high; None otherwise."""
    if cal is None or not np.isfinite(cal.pi0) or 1 - cal.pi0 >= LOW_OVERLAP:
        return None
    return (f"bisent: warning: about {1 - cal.pi0:.0%} of the {cal.n_scores} retrieved pairs look right; where so few "
            f"sentences have a translation the estimated precision can run high (by up to 39 points on the dev tasks "
            f"of benchmarks/README.md): check a sample with `bisent review` or give --threshold")


def mining_calibration(cands, kind: str, pair_src: np.ndarray, pair_tgt: np.ndarray, pair_score: np.ndarray, *,
                       pi0: str = "storey") -> Calibration | None:
    """The calibration of a mining run from its candidates and retrieved pairs (before the threshold).

    ``pi0="storey"`` (the default, chosen on the dev mining tasks of
    benchmarks/README "Mining threshold calibration"): :func:`calibrate` over
    every retrieved pair against every orphan negative, unmoved, the false
    share Storey's at their :data:`MINING_LAM` quantile; ``"em"``: the same
    with the negatives moved by maximum likelihood and the share fitted by
    EM (the default before: the Gaussian it fits to the true pairs took
    the share to 0 where most sentences have a translation); ``"joint"``:
    :func:`calibrate_joint` (the pair's mutuality as a second feature);
    ``"split"``: :func:`calibrate_split` (non-mutual pairs counted as false,
    the default before: it held at 25 % overlap only), falling back to
    ``"storey"`` where a group lacks pairs (e.g. ``intersect`` retrieval,
    whose pairs are all mutual). Fewer than :data:`MINING_MIN_PAIRS` pairs or
    :data:`MINING_MIN_NEGATIVES` negatives: a warning that the estimate is
    rough on standard error (``joint`` then falls back to ``"storey"``).
    None: fewer than 2 pairs or 10 negatives.
    """
    sc = np.asarray(pair_score, dtype=np.float64)
    if len(sc) < 2:
        _check_pi0(pi0)
        return None
    return calibrate_mined(sc, mutual_pairs(cands, pair_src, pair_tgt),
                           mining_negatives(cands, kind, pair_src, pair_tgt, sc, with_mutual=True), pi0=pi0)


def calibrate_mined(scores: np.ndarray, mutual: np.ndarray, neg: OrphanNegatives, *,
                    pi0: str = "storey") -> Calibration | None:
    """:func:`mining_calibration` from its parts: the pairs' scores (p,) and mutual flags (p,)
    (:func:`mutual_pairs`) and their orphan negatives (:func:`mining_negatives` with ``with_mutual``),
    for a caller that also needs those parts (``bench calibration``'s diagnosis)."""
    _check_pi0(pi0)
    if len(scores) < 2 or len(neg.scores) < 10:
        return None
    if len(scores) < MINING_MIN_PAIRS or len(neg.scores) < MINING_MIN_NEGATIVES:
        print(f"bisent: warning: the precision estimate rests on {len(scores)} mined pairs and {len(neg.scores)} "
              f"simulated false pairs (fewer than {MINING_MIN_PAIRS} / {MINING_MIN_NEGATIVES}): it is rough; "
              f"give --threshold to choose the cut yourself", file=sys.stderr)
        if pi0 == "joint":
            pi0 = "storey"
    if pi0 == "joint":
        cal = calibrate_joint(scores, mutual, neg.scores, neg.mutual, mutual_rate=neg.mutual_rate)
    elif pi0 == "split" and min(mutual.sum(), (~mutual).sum(), neg.mutual.sum(), (~neg.mutual).sum()) >= SPLIT_MIN:
        cal = calibrate_split(scores, mutual, neg.scores, neg.mutual, mutual_rate=neg.mutual_rate)
    elif pi0 in ("storey", "split"):
        cal = calibrate(scores, neg.scores, pi0="storey", lam=MINING_LAM, shifts=(0.0,))
    else:
        cal = calibrate(scores, neg.scores, pi0=pi0)
    return _with_fallback(cal, neg.scores)


#: Quantile of the orphan negatives a mining run falls back to where its estimate is unreliable (a cut that at
#: most 2 % of simulated false pairs pass; relative to the negatives, since a fixed margin fits one encoder only:
#: the true 90 % cuts of use-m3 lie at ratio margins 1.18-1.7, those of me5-small at 0.98-1.04). Chosen on the dev
#: mining tasks as the lowest quantile whose cut is 90 % precise on two thirds of them with both encoders (use-m3
#: 50 of 73, me5-small 10 of 14; median measured precision 98.2 and 99.2 %): benchmarks/README, "Mining threshold
#: calibration".
FALLBACK_QUANTILE = 0.98


def mining_fallback(cal: Calibration | None, precision: float) -> str | None:
    """Why a mining run's estimate should not set its cut (None: it may): too few pairs or negatives to fit, or no
    threshold reaching ``precision``. The run then keeps the pairs from ``cal.fallback_threshold``."""
    if cal is None or cal.fallback_threshold is None:
        return None
    if cal.n_scores < MINING_MIN_PAIRS or cal.n_negatives < MINING_MIN_NEGATIVES:
        return (f"the estimate rests on {cal.n_scores} mined pairs and {cal.n_negatives} simulated false pairs "
                f"(fewer than {MINING_MIN_PAIRS} / {MINING_MIN_NEGATIVES})")
    if cal.threshold_for(precision) is None:
        return f"no threshold reaches an estimated precision of {precision:g} (best {max(cal.precision):.3f})"
    return None


def _with_fallback(cal: Calibration | None, negatives: np.ndarray) -> Calibration | None:
    if cal is not None and len(negatives):
        cal.fallback_threshold = round(float(np.quantile(negatives, FALLBACK_QUANTILE)), 6)
    return cal


def _check_pi0(pi0: str) -> None:
    if pi0 not in ("joint", "split", "storey", "em"):
        raise ValueError(f"pi0 must be 'joint', 'split', 'storey' or 'em', got {pi0!r}")


# ---------------------------------------------------------------------------
# Synthetic negatives
# ---------------------------------------------------------------------------

def mining_negatives(cands, kind: str, pair_src: np.ndarray, pair_tgt: np.ndarray, pair_score: np.ndarray, *,
                     confident_quantile: float = 0.0, with_mutual: bool = False, fill_neighbourhood: bool = True):
    """Scores of false pairs a mining run would make, simulated from its own candidates.

    ``cands``: :class:`bisent.mining.scoring.Candidates` (k >= 2); ``pair_*`` (p,): the
    retrieved pairs before the threshold. Confident pairs are mutual nearest
    neighbours scoring above the ``confident_quantile`` of the mutual pairs'
    scores. Taking a confident pair's partner away leaves each side as an
    orphan, the situation of a sentence whose translation is missing. A
    translation is rarely missing alone: its whole document is, so the orphan's
    false partner is not one of its document mates (those are held by their
    own confident pairs) but the best of its other candidates that no confident
    pair holds; its margin is recomputed without the partner (neighbourhood
    mean over candidates 2..k). It counts unless that candidate is already
    taken by a pair scoring higher (the one-to-one retrieval would drop it).
    Letting orphans take the next candidate whatever holds it (the first
    version) put the negatives' median 0.2-0.5 standard deviations above the
    real false pairs' in the LibreOffice mining tasks; this matches it.
    Known bias: an orphan's free candidates still include translations of its
    document mates whose pairs were not confident (not mutual), which a
    sentence whose whole document is missing never meets; they make the upper
    tail too heavy for weaker encoders (me5-small, in the mixture over all
    pairs: precision underestimated by up to 16 points; excluding document
    mates by gold document ids brought it within 6, but a run has no document
    ids; excluding the candidates within a few input lines of the lost
    partner, which are its document mates when the input is in document
    order, helps me5-small as much and hurts use-m3: benchmarks/README,
    "Calibration against gold"). Split by mutuality (:func:`calibrate_split`) the
    negatives match the real false pairs of each group far better; the
    bias was mostly in the mix of the two groups.

    ``fill_neighbourhood``: the orphan's margin is taken over k false
    neighbours, the k-th (not in the lists) as near as the (k-1)-th; False:
    over the k - 1 it has (the documents' calibration, measured so).

    ``with_mutual``: return :class:`OrphanNegatives` instead: the scores,
    ``mutual`` (m,) telling the simulated false pairs whose sides would be each
    other's nearest neighbour (the orphan's nearest candidate once its partner
    is gone is the free one, and the orphan is that candidate's nearest), as
    :func:`mutual_pairs` tells the run's pairs, and ``mutual_rate``, that share
    among every orphan that found a free candidate, kept or not.
    """
    knn = cands.knn
    k = knn.fwd_sim.shape[1]
    empty = np.zeros(0, np.float32)
    none = OrphanNegatives(empty, np.zeros(0, bool), float("nan"))
    if k < 2 or len(pair_src) == 0:
        return none if with_mutual else empty
    n, m = len(knn.fwd_idx), len(knn.bwd_idx)
    mutual = (knn.bwd_idx[knn.fwd_idx[:, 0], 0] == np.arange(n))
    # score each retrieved side holds (orphan candidates must beat it to be mined)
    held_s = np.full(n, -np.inf)
    held_t = np.full(m, -np.inf)
    held_s[pair_src] = pair_score
    held_t[pair_tgt] = pair_score
    src_conf = np.flatnonzero(mutual & np.isfinite(held_s))
    if len(src_conf) == 0:
        return none if with_mutual else empty
    conf_score = held_s[src_conf]
    src_conf = src_conf[conf_score >= np.quantile(conf_score, confident_quantile)]
    tgt_conf = knn.fwd_idx[src_conf, 0]
    taken_s = np.zeros(n, bool)
    taken_t = np.zeros(m, bool)
    taken_s[src_conf] = True
    taken_t[tgt_conf] = True
    # source orphans: x without its partner takes its best target no confident pair holds
    s, j, rows, rank = _free_candidate(kind, knn.fwd_idx[src_conf], knn.fwd_sim[src_conf], taken_t, side=0,
                                       r_other=cands.r_y, fill=fill_neighbourhood)
    keep = s > held_t[j]
    every = [(rank == 1) & (knn.bwd_idx[j, 0] == src_conf[rows])]
    out, mut = [s[keep]], [every[0][keep]]
    # target orphans: y without its partner takes its best source no confident pair holds
    s, i, rows, rank = _free_candidate(kind, knn.bwd_idx[tgt_conf], knn.bwd_sim[tgt_conf], taken_s, side=1,
                                       r_other=cands.r_x, fill=fill_neighbourhood)
    keep = s > held_s[i]
    out.append(s[keep])
    every.append((rank == 1) & (knn.fwd_idx[i, 0] == tgt_conf[rows]))
    mut.append(every[1][keep])
    scores = np.concatenate(out).astype(np.float32)
    if not with_mutual:
        return scores
    every = np.concatenate(every)
    return OrphanNegatives(scores, np.concatenate(mut), float(every.mean()) if len(every) else float("nan"))


def _free_candidate(kind: str, idx: np.ndarray, sim: np.ndarray, taken: np.ndarray, *, side: int,
                    r_other: np.ndarray, fill: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Score and index of each orphan's first candidate among ranks 2..k not ``taken`` (orphans without one
    dropped), with the orphans' rows in ``idx`` and the candidate's rank (1: the nearest after the partner).

    ``idx``/``sim`` (c, k): the orphans' candidates, rank 1 their lost partner;
    ``side`` 0: orphans are sources (margin args ``cos, r_x, r_y``), 1: targets.
    """
    from .mining.scoring import combine

    free = ~taken[idx[:, 1:]]                                            # (c, k-1)
    has = free.any(axis=1)
    rank = 1 + free.argmax(axis=1)[has]
    rows = np.flatnonzero(has)
    cos, other = sim[rows, rank], idx[rows, rank]
    # the neighbourhood without the partner: k false neighbours, as a sentence without translation has; the lists
    # hold k - 1 of them, so the k-th is taken to be as near as the (k-1)-th (an upper bound; the mean over k - 1
    # alone made the orphans' margins too low: benchmarks/README, "Mining threshold calibration")
    rest = sim[rows, 1:]                                                 # (c', k-1)
    r_own = (rest.sum(axis=1) + rest[:, -1]) / (rest.shape[1] + 1) if fill else rest.mean(axis=1)
    s = combine(kind, cos, r_own, r_other[other]) if side == 0 else combine(kind, cos, r_other[other], r_own)
    return s, other, rows, rank


#: Kinds of synthetic false pairs made from a bitext (see :mod:`bisent.datasets.noise` for the benchmark's).
FILTER_NEGATIVE_KINDS = ("shuffled", "neighbour", "truncated", "glued", "copy")


def synthetic_pairs(pairs: Sequence[tuple[str, str]], *, per_kind: int = 1000, seed: int = 0,
                    kinds: Sequence[str] = FILTER_NEGATIVE_KINDS) -> list[tuple[str, str, str]]:
    """False pairs ``(src, tgt, kind)`` made from a bitext: each kind from up to ``per_kind`` random pairs.

    shuffled: another pair's target; neighbour: the next line's target (input
    order is usually document order); truncated: the first 30-60 % of the
    target's words; glued: the target and the next line's target; copy: the
    source as its own target.
    """
    rng = random.Random(seed)
    n = len(pairs)
    out: list[tuple[str, str, str]] = []
    if n < 2:
        return out
    for kind in kinds:
        for i in rng.sample(range(n), min(per_kind, n)):
            src, tgt = pairs[i]
            if kind == "shuffled":
                j = rng.randrange(n - 1)
                new = pairs[j + (j >= i)][1]
            elif kind == "neighbour":
                new = pairs[(i + 1) % n][1]
            elif kind == "truncated":
                words = tgt.split()
                if len(words) < 4:
                    continue
                new = " ".join(words[:max(1, int(len(words) * rng.uniform(0.3, 0.6)))])
            elif kind == "glued":
                new = f"{tgt} {pairs[(i + 1) % n][1]}"
            elif kind == "copy":
                new = src
            else:
                raise ValueError(f"unknown negative kind '{kind}' (one of {', '.join(FILTER_NEGATIVE_KINDS)})")
            if new != tgt:
                out.append((src, new, kind))
    return out


def filter_negatives(pipeline, pairs: Sequence[tuple[str, str]], *, per_kind: int = 1000,
                     seed: int = 0) -> tuple[np.ndarray, dict[str, int]]:
    """Scores at the pipeline's score step of synthetic false pairs that pass every earlier step.

    The rules and language id treat synthetic and real false pairs alike, so the
    survivors' scores stand for the false pairs a real run lets through to the
    score step. Returns the scores and, per kind, how many survived.
    """
    syn = synthetic_pairs(pairs, per_kind=per_kind, seed=seed)
    for step in pipeline.steps:
        if not step.stateless:
            step.reset()
    results = pipeline.process([(s, t) for s, t, _ in syn])
    scores, survived = [], {k: 0 for k in FILTER_NEGATIVE_KINDS}
    for (_, _, kind), r in zip(syn, results):
        if (r.kept or r.reason == pipeline.score_step) and isinstance(r.score, (int, float)):
            scores.append(float(r.score))
            survived[kind] += 1
    return np.asarray(scores, dtype=np.float64), survived


# ---------------------------------------------------------------------------
# Sentence alignment
# ---------------------------------------------------------------------------

#: Kinds of synthetic false alignment blocks (:func:`alignment_negative_texts`); the default set was chosen on
#: dev pages (``bisent bench calibration --setting align --split dev``, README).
ALIGN_NEGATIVE_KINDS = ("neighbour", "glued", "glued_source", "shuffled")
ALIGN_NEGATIVES_DEFAULT = ("glued_source", "shuffled")


def alignment_negative_texts(docs: Sequence[Sequence[tuple[str, str]]], *, per_kind: int = 1000, seed: int = 0,
                             kinds: Sequence[str] = ALIGN_NEGATIVES_DEFAULT) -> list[tuple[str, str, str]]:
    """False blocks ``(src, tgt, kind)`` made from aligned documents (each: its aligned blocks' texts in order).

    An alignment's false blocks are path errors inside a document pair taken
    as parallel: a sentence without translation matched to its neighbour's
    translation, or a block that swallowed a neighbouring sentence. So the
    negatives come from the same documents: ``neighbour``: block i's source
    with block i+1's target; ``glued``: block i's source with the targets of
    blocks i and i+1 joined (a merge too many: it holds the translation, so it
    scores high); ``glued_source``: the same on the source side;
    ``shuffled``: block i's source with the target of a random other block of
    the same document. Up to ``per_kind`` of each, drawn at random (``seed``).
    The default, glued_source and shuffled, was the best of the 15 subsets on
    dev pages (largest error 2.5 / 3.1 points, en-de / en-fr; all four kinds:
    4.1 / 3.1; glued alone: 15.0, its negatives sit too high to stand for the
    wrong 1-1 blocks; neighbour alone: 4.3 / 4.2).
    """
    unknown = set(kinds) - set(ALIGN_NEGATIVE_KINDS)
    if unknown:
        raise ValueError(f"unknown negative kind(s) {sorted(unknown)} (known: {', '.join(ALIGN_NEGATIVE_KINDS)})")
    rng = random.Random(seed)
    at = [(d, i) for d, blocks in enumerate(docs) for i in range(len(blocks) - 1)]   # blocks with a successor
    out: list[tuple[str, str, str]] = []
    for kind in kinds:
        for d, i in rng.sample(at, min(per_kind, len(at))):
            (s0, t0), (s1, t1) = docs[d][i], docs[d][i + 1]
            if kind == "neighbour":
                src, tgt = s0, t1
            elif kind == "glued":
                src, tgt = s0, f"{t0} {t1}"
            elif kind == "glued_source":
                src, tgt = f"{s0} {s1}", t0
            else:
                j = rng.randrange(len(docs[d]) - 1)
                src, tgt = s0, docs[d][j + (j >= i)][1]
            if tgt != t0 or src != s0:
                out.append((src, tgt, kind))
    return out


def alignment_negatives(encoder, docs: Sequence[Sequence[tuple[str, str]]], src_lang: str, tgt_lang: str, *,
                        per_kind: int = 1000, seed: int = 0,
                        kinds: Sequence[str] = ALIGN_NEGATIVES_DEFAULT) -> np.ndarray:
    """Cosines (m,) of :func:`alignment_negative_texts` under ``encoder``, as the aligner scores a block
    (the cosine of the embeddings of each side's sentences read as one text)."""
    syn = alignment_negative_texts(docs, per_kind=per_kind, seed=seed, kinds=kinds)
    if not syn:
        return np.zeros(0)
    x = encoder.encode([s for s, _, _ in syn], src_lang)   # (m, d), unit rows
    y = encoder.encode([t for _, t, _ in syn], tgt_lang)   # (m, d)
    return np.einsum("md,md->m", x, y).astype(np.float64)

"""A sample to check by eye, stratified by score band, drawn the same way for the same seed.

The scored pairs are cut into equal-count bands, best first, and the pairs a run's
threshold dropped, where it kept them aside, into bands of their own (as the report's
samples are, :func:`bisent.report.record.band_samples`). Each band gets the
pairs needed to know its precision to ``margin`` at 95 % confidence whatever
it is (the worst case p = 0.5: 385 pairs for ±5 points, fewer in a small band
by the finite-population correction), or ``per_band``. The sample is shown in
a seeded random order, so the person does not see the scores fall.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

from .labels import Z95

BANDS = 6
MARGIN = 0.05
#: bands of the pairs under a run's threshold (those a mining run keeps aside): the labels there say whether the
#: cut should be lower
BELOW_BANDS = 2


@dataclass(frozen=True)
class Item:
    """One sampled pair: its key in the run's output, score, band (0: best), texts."""

    key: str
    score: float
    band: int
    src: str
    tgt: str


def band_size(pairs: int, margin: float = MARGIN, z: float = Z95) -> int:
    """Pairs to label in a band of ``pairs`` so that its precision is known to ``margin`` at 95 %."""
    n0 = z * z * 0.25 / (margin * margin)
    return min(pairs, math.ceil(n0 / (1 + (n0 - 1) / pairs))) if pairs else 0


def draw(keys, scores, src, tgt, *, bands: int = BANDS, per_band: int | None = None, margin: float = MARGIN,
         seed: int = 0, below: int = 0) -> tuple[list[Item], list[dict], list[np.ndarray]]:
    """The sample (shown in this order), the bands (``high``, ``low``, ``pairs``, ``sampled``, ``below``) and
    every band's scores (for thresholds inside the labelled range). Pairs without a finite score are not drawn.

    ``below``: the last ``below`` pairs are under the run's threshold (dropped by it); they get
    :data:`BELOW_BANDS` bands of their own, so that the labels can tell whether the cut should be lower.
    """
    scores = np.asarray(scores, dtype=np.float64)
    rng = random.Random(seed)
    items, info, band_scores = [], [], []
    groups = [(np.arange(len(scores) - below), bands, False), (np.arange(len(scores) - below, len(scores)),
                                                                 BELOW_BANDS, True)]
    for rows, n_bands, under in groups:
        ok = rows[np.isfinite(scores[rows])]
        order = ok[np.lexsort((np.asarray([keys[i] for i in ok], dtype=object).astype(str), -scores[ok]))] \
            if len(ok) else ok
        for part in np.array_split(order, min(n_bands, len(order))) if len(order) else []:
            b = len(info)
            n = min(len(part), per_band) if per_band is not None else band_size(len(part), margin)
            pick = sorted(rng.sample(range(len(part)), n))
            items += [Item(str(keys[i]), float(scores[i]), b, src[i], tgt[i]) for i in part[pick]]
            info.append({"high": float(scores[part[0]]), "low": float(scores[part[-1]]), "pairs": len(part),
                         "sampled": n, **({"below": True} if under else {})})
            band_scores.append(scores[part])
    rng.shuffle(items)
    return items, info, band_scores


def estimated_band_precision(calibration, all_scores: np.ndarray):
    """``estimate(lo, hi)``: the calibration's precision of the pairs scoring in [lo, hi].

    The calibration says what share of the pairs scoring >= t is true; times
    their count that is the true pairs above t, and a band's true pairs are
    the difference at its two ends. None without a calibration.
    """
    if calibration is None or not calibration.thresholds:
        return None
    s = np.sort(np.asarray(all_scores, dtype=np.float64)[np.isfinite(all_scores)])

    def true_above(t: float, strict: bool) -> float:
        n = len(s) - int(np.searchsorted(s, t, side="right" if strict else "left"))
        return calibration.precision_at(t) * n if n else 0.0

    def estimate(lo: float, hi: float) -> float | None:
        n = int(np.searchsorted(s, hi, side="right") - np.searchsorted(s, lo, side="left"))
        if not n:
            return None
        return round(min(1.0, max(0.0, (true_above(lo, False) - true_above(hi, True)) / n)), 4)

    return estimate

"""How much of a strict-F1 figure is noise: a bootstrap over contiguous stretches of the gold.

One document gives one figure, and two aligners a gap between two figures; whether
the gap (or a target met by a point) would survive another document of the same kind
is what the interval says. The gold of each document is cut into stretches of
``size`` consecutive gold blocks (a stretch, not a block, is the unit: errors of a DP
come in runs); each hypothesis block belongs to the stretch of its first sentence.
Stretches are drawn with replacement ``rounds`` times and strict P/R/F1 recounted
(precision over the hypothesis blocks of the drawn stretches, recall over their gold
blocks with both sides, as :func:`bisent.align.score_alignments` counts).
"""

from __future__ import annotations

import numpy as np


def _unit_counts(hyp_doc, gold_doc, size: int) -> np.ndarray:
    """``(units, 4)``: strict true / all hypothesis blocks, strict true / all gold blocks (both sides) per stretch."""
    gold = {(tuple(s), tuple(t)) for s, t, *_ in gold_doc if s or t}
    hyp = {(tuple(s), tuple(t)) for s, t, *_ in hyp_doc if s or t}
    order = sorted(gold, key=lambda b: (min(b[0], default=-1), min(b[1], default=-1)))
    unit_src, unit_tgt = {}, {}
    for k, (s, t) in enumerate(order):
        unit_src.update(dict.fromkeys(s, k // size))
        unit_tgt.update(dict.fromkeys(t, k // size))
    n = (len(order) - 1) // size + 1 if order else 1

    def unit(b) -> int:
        s, t = b
        return min(unit_src.get(s[0], n - 1) if s else n - 1, unit_tgt.get(t[0], n - 1) if t else n - 1)
    out = np.zeros((n, 4), dtype=np.int64)
    for b in hyp:
        out[unit(b), 0] += b in gold
        out[unit(b), 1] += 1
    for b in gold:
        if b[0] and b[1]:
            out[unit(b), 2] += b in hyp
            out[unit(b), 3] += 1
    return out


def _f1(c: np.ndarray) -> np.ndarray:
    p = np.divide(c[..., 0], c[..., 1], out=np.zeros(c.shape[:-1]), where=c[..., 1] > 0)
    r = np.divide(c[..., 2], c[..., 3], out=np.zeros(c.shape[:-1]), where=c[..., 3] > 0)
    return np.divide(2 * p * r, p + r, out=np.zeros_like(p), where=p + r > 0)


def f1_interval(hyps: list, gold: list, *, size: int = 20, rounds: int = 2000, seed: int = 0) -> dict:
    """Strict F1 of each hypothesis (``hyps``: one list of documents' blocks per aligner, as ``gold``) with its
    95 % bootstrap interval, and the gap of each to the first with its interval (the same draws for all: a
    paired interval). Percentages: ``{"f1": [...], "low": [...], "high": [...], "gap": [...], "gap_low": [...],
    "gap_high": [...]}``."""
    counts = np.stack([np.concatenate([_unit_counts(h, g, size) for h, g in zip(hyp, gold, strict=True)])
                       for hyp in hyps])                                     # (aligners, units, 4)
    draws = np.random.default_rng(seed).integers(0, counts.shape[1], (rounds, counts.shape[1]))
    boot = _f1(counts[:, draws].sum(axis=2))                                 # (aligners, rounds)
    f1 = _f1(counts.sum(axis=1))
    gaps = boot - boot[:1]

    def pct(x) -> list[float]:
        return [round(100 * float(v), 2) for v in x]
    return {"f1": pct(f1), "low": pct(np.quantile(boot, 0.025, axis=1)), "high": pct(np.quantile(boot, 0.975, axis=1)),
            "gap": pct(f1 - f1[0]), "gap_low": pct(np.quantile(gaps, 0.025, axis=1)),
            "gap_high": pct(np.quantile(gaps, 0.975, axis=1)), "units": int(counts.shape[1]), "size": size,
            "rounds": rounds}

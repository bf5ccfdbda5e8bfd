"""Evaluation: BUCC precision / recall / F1 and the F1-optimal threshold."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

import numpy as np


@dataclass
class PRF:
    precision: float
    recall: float
    f1: float
    threshold: float | None
    n_mined: int
    n_correct: int
    n_gold: int

    def as_dict(self) -> dict:
        return asdict(self)


def _prf(tp: int, n_mined: int, n_gold: int, threshold) -> PRF:
    p = tp / n_mined if n_mined else 0.0
    r = tp / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return PRF(p, r, f, threshold, n_mined, tp, n_gold)


def bucc_prf(mined: Iterable[tuple[float, str, str]], gold: set[tuple[str, str]], threshold: float | None = None) -> PRF:
    """P/R/F1 of mined ``(score, src_id, tgt_id)`` against ``gold`` pairs, keeping scores ≥ threshold."""
    kept = {(s, t) for score, s, t in mined if threshold is None or score >= threshold}
    return _prf(len(kept & gold), len(kept), len(gold), threshold)


def best_threshold(mined: Iterable[tuple[float, str, str]], gold: set[tuple[str, str]]) -> PRF:
    """The threshold that maximises F1 on ``gold`` (how BUCC tunes it on the train split).

    Pairs are sorted by score; every cut between two distinct scores is tried,
    and the threshold returned is the score of the last pair kept.
    """
    best: dict[tuple[str, str], float] = {}
    for score, s, t in mined:
        if (s, t) not in best or score > best[(s, t)]:
            best[(s, t)] = score
    if not best:
        return _prf(0, 0, len(gold), None)
    pairs = sorted(best.items(), key=lambda kv: -kv[1])
    scores = np.array([v for _, v in pairs], dtype=np.float64)
    hits = np.cumsum([1 if p in gold else 0 for p, _ in pairs])
    n = np.arange(1, len(pairs) + 1)
    last_of_tie = np.append(scores[1:] != scores[:-1], True)  # a cut is only possible after the last of equal scores
    prec = hits / n
    rec = hits / max(len(gold), 1)
    f1 = np.where(prec + rec > 0, 2 * prec * rec / np.maximum(prec + rec, 1e-12), 0.0)
    f1 = np.where(last_of_tie, f1, -1.0)
    i = int(np.argmax(f1))
    return _prf(int(hits[i]), int(n[i]), len(gold), float(scores[i]))

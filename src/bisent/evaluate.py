"""Evaluation: BUCC precision / recall / F1 and the F1-optimal threshold; dev figures; document P@N."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

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


# --- dev figures of a training run (the training log) ------------------------------------------------

def recovery_error(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Alignment recovery on unit rows ``a`` (n, d), ``b`` (n, d) where row i of each is a pair.

    Returns ``(error a->b, error b->a, cosine gap)``: the share of rows whose
    nearest neighbour by cosine on the other side is not their pair, both
    ways, and mean cos of pairs minus mean cos of all (a cheap spread measure).
    """
    sim = a @ b.T                                                    # (n, n) cosines
    gold = np.arange(len(a))
    err_ab = float(np.mean(sim.argmax(axis=1) != gold))
    err_ba = float(np.mean(sim.argmax(axis=0) != gold))
    return err_ab, err_ba, float(np.mean(np.diag(sim)) - np.mean(sim))


def distinct_pairs(pairs: list[tuple[str, str]], limit: int) -> list[tuple[str, str]]:
    """First ``limit`` pairs whose source and target are both unseen so far (duplicates make recovery ambiguous)."""
    seen_a, seen_b, out = set(), set(), []
    for a, b in pairs:
        if a not in seen_a and b not in seen_b:
            seen_a.add(a)
            seen_b.add(b)
            out.append((a, b))
            if len(out) == limit:
                break
    return out


def evaluate_dev(encoder, dev: list, limit: int) -> dict[str, float]:
    """Dev alignment-recovery error both ways and mining F1 per language pair, and their means (``dev_err``, ``dev_mine_f1``)."""
    out: dict[str, float] = {}
    errs, f1s = [], []
    for bt in dev:
        pairs = distinct_pairs(bt.pairs, limit)
        if len(pairs) < 2:
            continue
        a = encoder.encode([p[0] for p in pairs], bt.src_lang, cache=False, progress=False)  # (n, D)
        b = encoder.encode([p[1] for p in pairs], bt.tgt_lang, cache=False, progress=False)  # (n, D)
        e_ab, e_ba, gap = recovery_error(a, b)
        s, t = bt.src_lang, bt.tgt_lang
        out.update({f"dev_err_{s}_{t}": e_ab, f"dev_err_{t}_{s}": e_ba, f"dev_cos_gap_{s}_{t}": gap, f"dev_n_{s}_{t}": len(pairs)})
        errs += [e_ab, e_ba]
        f1 = dev_mining_f1(encoder, bt, pairs)
        if f1 is not None:
            out[f"dev_mine_f1_{s}_{t}"] = f1
            f1s.append(f1)
    if errs:
        out["dev_err"] = float(np.mean(errs))
    if f1s:
        out["dev_mine_f1"] = float(np.mean(f1s))
    return out


@dataclass
class _DevPair:
    doc: str
    src: str
    tgt: str
    split: str = "dev"


def dev_mining_f1(encoder, bt, pairs: list[tuple[str, str]], block: int = 10) -> float | None:
    """Mining F1 (in %) on a BUCC-like task built from dev ``pairs``: ratio margin, k=4, max retrieval, best threshold.

    The task (about a quarter of each side has its translation on the other) is
    built by :func:`bisent.datasets.comparable.make_mining_task` from blocks of
    ``block`` consecutive pairs standing in for documents (dev files are in
    document order). The threshold is the dev optimum, the same one the mining
    benchmark tunes on dev before it scores test. ``None`` when too few pairs.
    """
    from .datasets.comparable import make_mining_task
    from .mining import retrieve
    from .scoring import Scorer

    if len(pairs) < 4 * block:
        return None
    task = make_mining_task([_DevPair(f"d{i // block}", a, b) for i, (a, b) in enumerate(pairs)], "dev",
                            src_lang=bt.src_lang, tgt_lang=bt.tgt_lang)
    x = encoder.encode([t for _, t in task.src], bt.src_lang, cache=False, progress=False)   # (n_src, D)
    y = encoder.encode([t for _, t in task.tgt], bt.tgt_lang, cache=False, progress=False)   # (n_tgt, D)
    cands = Scorer("ratio", 4).fit(y).score(x)
    mined = [(p.score, task.src[p.src][0], task.tgt[p.tgt][0]) for p in retrieve(cands, "max")]
    return round(100 * best_threshold(mined, set(task.gold)).f1, 2)


# --- document retrieval (Guo et al. 2019: P@N) -------------------------------------------------------

def precision_at(ranked: np.ndarray, gold: np.ndarray, ns: Sequence[int] = (1, 3, 10)) -> dict[int, float]:
    """P@N: the share of queries whose gold item is among their first N candidates.

    ``ranked`` (q, k): candidate rows of each query, best first; ``gold`` (q,): the right row.
    """
    ranked, gold = np.asarray(ranked), np.asarray(gold)
    hit = ranked == gold[:, None]                                                    # (q, k)
    return {n: float(hit[:, :n].any(axis=1).mean()) if len(gold) else 0.0 for n in ns}


def retrieval_p_at_n(a: np.ndarray, b: np.ndarray, a_gold: np.ndarray, b_gold: np.ndarray,
                     ns: Sequence[int] = (1, 3, 10)) -> dict[str, float]:
    """Document retrieval both ways by cosine among ALL rows of the other side (gold rows plus distractors).

    ``a (n, d)``, ``b (m, d)`` unit rows; ``a_gold[i]`` and ``b_gold[i]`` are
    the rows of the i-th gold pair. Returns ``p@N_src_tgt`` and ``p@N_tgt_src`` in percent.
    """
    from .index import knn_both

    k = max(ns)
    fwd = knn_both(a[a_gold], b, k).fwd_idx                                        # (g, k) targets of each gold source
    bwd = knn_both(b[b_gold], a, k).fwd_idx                                        # (g, k) sources of each gold target
    out = {}
    for name, ranked, gold in (("src_tgt", fwd, b_gold), ("tgt_src", bwd, a_gold)):
        for n, p in precision_at(ranked, gold, ns).items():
            out[f"p@{n}_{name}"] = round(100 * p, 2)
    return out

"""Evaluation, in ONE place: whatever measures something (the training log, ``bisent bench``, ``bisent eval``,
``bisent demo``) calls these functions, so they measure the same thing by construction.

- BUCC precision / recall / F1 of mined pairs (:func:`bucc_prf`) and the F1-optimal threshold (:func:`best_threshold`);
- :func:`mining_task`: embed a BUCC-like task (dev, test), retrieve with each margin and retrieval rule,
  tune the threshold on dev, score test at it (and at its own optimum);
- :func:`recovery_error`: alignment recovery (Kim et al. 2019, 4.1), both ways, any score; :func:`recovery_misses`
  gives the rows behind it, so two encoders can be compared item by item (:func:`paired_gap`);
- :func:`retrieval_p_at`: P@N of retrieving the i-th row's partner (documents, Guo et al. 2019);
- :func:`precision_at` / :func:`retrieval_p_at_n`: document P@1/3/10 among all candidates, distractors included;
- :func:`average_precision`: a ranking of items by score (filtering: clean pairs first);
- :func:`distinct_pairs` / :func:`sample_distinct_pairs`: pairs whose two texts are each unique in the set;
- :func:`evaluate_dev`: the dev figures of a training run (recovery error, mining F1);
- :func:`score_alignments`: strict and lax P/R/F1 of sentence-alignment blocks, as vecalign's ``score.py``;
- :func:`filter_prf`: P/R/F1 of a filter's kept and rejected pairs against labelled pairs.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from .errors import BisentError


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


def bucc_prf(mined: Iterable[tuple[float, str, str]], gold: set[tuple[str, str]],
             threshold: float | None = None) -> PRF:
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


# --- mining a BUCC-like task ---------------------------------------------------------------------------

@dataclass
class MiningResult:
    """One (margin, retrieval) of :func:`mining_task`: the mined pairs per split and the tuned scores.

    ``dev``: the dev split at its F1-optimal threshold (the tuned threshold);
    ``test``: the test split at that threshold; ``oracle``: test at its own optimum;
    ``embed_seconds`` / ``mine_seconds``: per split (mining: every margin so far).
    """

    margin: str
    retrieval: str
    k: int
    mined: dict[str, list[tuple[float, str, str]]]
    dev: PRF
    test: PRF | None = None
    oracle: PRF | None = None
    embed_seconds: dict[str, float] = field(default_factory=dict)
    mine_seconds: dict[str, float] = field(default_factory=dict)


def mine_split(task, x: np.ndarray, y: np.ndarray, margin: str, k: int, retrievals: Sequence[str],
               make_scorer=None) -> dict:
    """``{retrieval: [(score, src_id, tgt_id)]}`` of a task's embedded sides ``x`` (n, d), ``y`` (m, d);
    ``make_scorer(margin, k)`` (default :class:`~bisent.mining.scoring.Scorer`) lets a caller keep the candidates."""
    from .mining.retrieval import retrieve
    from .mining.scoring import Scorer

    cands = (make_scorer or Scorer)(margin, k).fit(y).score(x)
    return {mode: [(p.score, task.src[p.src][0], task.tgt[p.tgt][0]) for p in retrieve(cands, mode)]
            for mode in retrievals}


def mining_task(encoder, tasks: dict, src_lang: str, tgt_lang: str, *, margins: Sequence[str] = ("ratio",),
                retrievals: Sequence[str] = ("max",), k: int = 4, cache: bool | None = None,
                progress: bool | None = None, make_scorer=None) -> list[MiningResult]:
    """Embed the ``"dev"`` (and ``"test"``) :class:`~bisent.datasets.comparable.MiningTask` once each, mine
    with every margin and retrieval rule, pick the F1-optimal threshold on dev and score test at it."""
    vecs, embed_s, mine_s = {}, {}, dict.fromkeys(tasks, 0.0)
    for split, task in tasks.items():
        t0 = time.perf_counter()
        vecs[split] = (encoder.encode([t for _, t in task.src], src_lang, cache=cache, progress=progress),   # (n, d)
                       encoder.encode([t for _, t in task.tgt], tgt_lang, cache=cache, progress=progress))   # (m, d)
        embed_s[split] = time.perf_counter() - t0
    out = []
    for margin in margins:
        mined = {}
        for s, t in tasks.items():
            t0 = time.perf_counter()
            mined[s] = mine_split(t, *vecs[s], margin, k, retrievals, make_scorer)
            mine_s[s] += time.perf_counter() - t0
        for mode in retrievals:
            per_split = {s: m[mode] for s, m in mined.items()}
            dev = best_threshold(per_split["dev"], set(tasks["dev"].gold))
            r = MiningResult(margin, mode, k, per_split, dev, embed_seconds=embed_s, mine_seconds=mine_s)
            if "test" in tasks:
                gold = set(tasks["test"].gold)
                r.test = bucc_prf(per_split["test"], gold, dev.threshold)
                r.oracle = best_threshold(per_split["test"], gold)
            out.append(r)
    return out


# --- alignment recovery, retrieval, ranking ---------------------------------------------------------------

def recovery_misses(x: np.ndarray, y: np.ndarray, score: str = "cosine", k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Row i of ``x`` (n, d) translates row i of ``y`` (n, d): ``(n,)`` bool arrays, True where a row of ``x``
    (src->tgt), and a row of ``y`` (tgt->src), has a best-scoring partner on the other side (``score``: cosine,
    euclidean, csls, ratio...) that is not its own."""
    from .mining.retrieval import best_candidates
    from .mining.scoring import Scorer

    fwd, _, bwd, _ = best_candidates(Scorer(score, k).fit(y).score(x))
    return fwd != np.arange(len(x)), bwd != np.arange(len(y))


def recovery_error(x: np.ndarray, y: np.ndarray, score: str = "cosine", k: int = 4) -> tuple[float, float]:
    """``(src->tgt error, tgt->src error)``: the shares of :func:`recovery_misses`."""
    a, b = recovery_misses(x, y, score, k)
    return float(np.mean(a)), float(np.mean(b))


def pairs_fingerprint(pairs: Sequence) -> str:
    """12 hex digits naming a list of pairs (texts and order): records of two runs compare only when theirs agree
    (a rebuilt data set, or another sample of it, is another set even with the same name and size)."""
    h = hashlib.sha1()
    for p in pairs:
        src, tgt = _texts(p)
        h.update(f"{src}\t{tgt}\n".encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:12]


def exact_sign_p(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar (sign) test: the chance, were each of the ``only_a + only_b`` items that only one
    of two systems gets wrong equally likely to go either way, of a split at least as uneven as this one."""
    n, m = only_a + only_b, min(only_a, only_b)
    if n == 0 or 2 * m == n:
        return 1.0
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(m + 1)]
    top = max(logs)
    return min(1.0, 2 * math.exp(top) * sum(math.exp(v - top) for v in logs))


def paired_gap(miss: np.ndarray, ref_miss: np.ndarray) -> dict:
    """How far one system's errors are from a reference's on the SAME items (``(n,)`` bool arrays, True = wrong):
    the error gap in points (positive: behind the reference), its 95 % interval (the normal approximation of a
    paired difference), the items only each gets wrong, and :func:`exact_sign_p` (3 significant digits). On a
    300-item set one item is a third of a point, so a 1-point gap is 3 items; the interval says what such a set can
    tell apart."""
    miss, ref_miss = np.asarray(miss, bool), np.asarray(ref_miss, bool)
    n = max(len(miss), 1)                                            # no items: no gap (0 / 1)
    only, only_ref = int(np.sum(miss & ~ref_miss)), int(np.sum(ref_miss & ~miss))
    d = (only - only_ref) / n
    se = math.sqrt(max(only + only_ref - n * d * d, 0.0)) / n
    return {"gap": round(100 * d, 2), "gap_ci95": [round(100 * (d - 1.96 * se), 2), round(100 * (d + 1.96 * se), 2)],
            "only_this_wrong": only, "only_ref_wrong": only_ref, "p": float(f"{exact_sign_p(only, only_ref):.3g}")}


def retrieval_p_at(a: np.ndarray, b: np.ndarray, n: int = 1) -> tuple[float, float]:
    """P@n both ways: the share of rows of ``a`` (N, d) whose partner (the same row of ``b``) is among
    their ``n`` nearest rows of ``b`` by dot product, and the same from ``b`` to ``a``."""
    s = a @ b.T                                                      # (N, N)
    idx = np.arange(len(a))
    if n == 1:                                                       # the first best, as a stable sort gives it
        top_ab, top_ba = s.argmax(axis=1)[:, None], s.argmax(axis=0)[:, None]
    else:
        top_ab = np.argsort(-s, axis=1, kind="stable")[:, :n]        # (N, n) best first
        top_ba = np.argsort(-s.T, axis=1, kind="stable")[:, :n]
    return precision_at(top_ab, idx, (n,))[n], precision_at(top_ba, idx, (n,))[n]


def average_precision(scores: np.ndarray, positive: np.ndarray) -> float:
    """Average precision of ranking ``positive`` items first by ``scores`` (ties broken by position)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    pos = np.asarray(positive, dtype=bool)[order]
    if not pos.any():
        return 0.0
    hits = np.cumsum(pos)
    precision_at = hits / np.arange(1, len(pos) + 1)
    return float(precision_at[pos].mean())


def _texts(p) -> tuple[str, str]:
    return (p.src, p.tgt) if hasattr(p, "src") else (p[0], p[1])


def distinct_pairs(pairs: Sequence, limit: int | None = None) -> list:
    """In the given order, the first ``limit`` pairs whose source and whose target are both unseen so far
    (duplicates make recovery ambiguous). Pairs are ``(src, tgt)`` tuples or have ``.src`` / ``.tgt``."""
    seen_a, seen_b, out = set(), set(), []
    for p in pairs:
        a, b = _texts(p)
        if a not in seen_a and b not in seen_b:
            seen_a.add(a)
            seen_b.add(b)
            out.append(p)
            if limit and len(out) == limit:
                break
    return out


def sample_distinct_pairs(pairs: Sequence, limit: int | None = None, seed: int = 0) -> list:
    """:func:`distinct_pairs` of the pairs shuffled with ``seed``: a random sample of distinct pairs."""
    rng = np.random.default_rng(seed)
    return distinct_pairs([pairs[i] for i in rng.permutation(len(pairs))], limit)


# --- the dev figures of a training run ----------------------------------------------------------------------

def evaluate_dev(encoder, dev: list, limit: int) -> dict[str, float]:
    """Per dev bitext (``.pairs``, ``.src_lang``, ``.tgt_lang``): alignment-recovery error both ways
    (:func:`recovery_error`, cosine), the cosine gap, and mining F1 on a task built from the pairs
    (:func:`dev_mining_f1`); and their means (``dev_err``, ``dev_mine_f1``)."""
    out: dict[str, float] = {}
    errs, f1s = [], []
    for bt in dev:
        pairs = distinct_pairs(bt.pairs, limit)
        if len(pairs) < 2:
            continue
        a = encoder.encode([p[0] for p in pairs], bt.src_lang, cache=False, progress=False)  # (n, D)
        b = encoder.encode([p[1] for p in pairs], bt.tgt_lang, cache=False, progress=False)  # (n, D)
        e_ab, e_ba = recovery_error(a, b)
        gap = float(np.mean(np.sum(a * b, axis=1)) - np.mean(a @ b.T))   # mean cos of pairs - of all (a spread measure)
        s, t = bt.src_lang, bt.tgt_lang
        out.update({f"dev_err_{s}_{t}": e_ab, f"dev_err_{t}_{s}": e_ba, f"dev_cos_gap_{s}_{t}": gap,
                    f"dev_n_{s}_{t}": len(pairs)})
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
    """Mining F1 (in %) of :func:`mining_task` (ratio margin, k=4, max retrieval) on a BUCC-like task built
    from dev ``pairs``, at the dev-optimal threshold.

    The task (about a quarter of each side has its translation on the other) is
    built by :func:`bisent.datasets.comparable.make_mining_task` from blocks of
    ``block`` consecutive pairs standing in for documents (dev files are in
    document order). ``None`` when too few pairs.
    """
    from .datasets.comparable import make_mining_task

    if len(pairs) < 4 * block:
        return None
    task = make_mining_task([_DevPair(f"d{i // block}", a, b) for i, (a, b) in enumerate(pairs)], "dev",
                            src_lang=bt.src_lang, tgt_lang=bt.tgt_lang)
    (result,) = mining_task(encoder, {"dev": task}, bt.src_lang, bt.tgt_lang, cache=False, progress=False)
    return round(100 * result.dev.f1, 2)


# --- document retrieval (Guo et al. 2019: P@N) -------------------------------------------------------

def precision_at(ranked: np.ndarray, gold: np.ndarray, ns: Sequence[int] = (1, 3, 10)) -> dict[int, float]:
    """P@N: the share of queries whose gold item is among their first N candidates.

    ``ranked`` (q, k): candidate rows of each query, best first; ``gold`` (q,): the right row.
    """
    ranked, gold = np.asarray(ranked), np.asarray(gold)
    hit = ranked == gold[:, None]                                                    # (q, k)
    return {n: float(hit[:, :n].any(axis=1).mean()) if len(gold) else 0.0 for n in ns}


def retrieval_p_at_n(a: np.ndarray, b: np.ndarray, a_gold: np.ndarray, b_gold: np.ndarray,
                     ns: Sequence[int] = (1, 3, 10), *, rerank=None) -> dict[str, float]:
    """Document retrieval both ways by cosine among ALL rows of the other side (gold rows plus distractors).

    ``a (n, d)``, ``b (m, d)`` unit rows; ``a_gold[i]`` and ``b_gold[i]`` are
    the rows of the i-th gold pair. Returns ``p@N_src_tgt`` and ``p@N_tgt_src`` in percent.
    ``rerank``: ``(a_table, b_table, depth, weight)`` re-scores the ``depth``
    nearest by sentence alignment first (:func:`bisent.mining.rerank.rerank`).
    """
    from .mining.index import knn_both

    k = max(ns)
    depth = max(k, rerank[2]) if rerank else k
    f = knn_both(a[a_gold], b, depth)                                              # targets of each gold source
    g = knn_both(b[b_gold], a, depth)                                              # sources of each gold target
    fwd, bwd = f.fwd_idx[:, :k], g.fwd_idx[:, :k]                                  # (g, k) each
    if rerank:
        from .mining.rerank import rerank as rescore

        a_t, b_t, _, weight = rerank
        fwd = rescore(f.fwd_sim, f.fwd_idx, a_t, b_t, rows=a_gold, k=k, weight=weight)[1]
        bwd = rescore(g.fwd_sim, g.fwd_idx, b_t, a_t, rows=b_gold, k=k, weight=weight)[1]
    out = {}
    for name, ranked, gold in (("src_tgt", fwd, b_gold), ("tgt_src", bwd, a_gold)):
        for n, p in precision_at(ranked, gold, ns).items():
            out[f"p@{n}_{name}"] = round(100 * p, 2)
    return out


# --------------------------------------------------------------------------- sentence alignment

class AlignScores(NamedTuple):
    strict_p: float
    strict_r: float
    strict_f1: float
    lax_p: float
    lax_r: float
    lax_f1: float
    n_hyp: int
    n_gold: int

    def as_dict(self) -> dict:
        return {k: (round(100 * v, 2) if isinstance(v, float) else v) for k, v in self._asdict().items()}


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def _block_set(blocks, *, skips: bool) -> set:
    """Blocks as a set of ``(src, tgt)`` tuples; without ``skips``, only blocks with both sides."""
    return {(tuple(s), tuple(t)) for s, t, *_ in blocks if (s or t) if skips or (s and t)}


def _precision_counts(gold: set, test: set) -> tuple[int, int, int, int]:
    """``(strict true, strict false, lax true, lax false)`` of the ``test`` blocks against ``gold``.

    Strict: the very block is in gold. Lax: otherwise, some source sentence of
    the block is linked in gold to some target sentence of it (a block with an
    empty side never is, unless gold holds that very skip).
    """
    links: dict[int, set[int]] = {}
    for s, t in gold:
        for i in s:
            links.setdefault(i, set()).update(t)
    tp_s = tp_l = 0
    for s, t in test:
        if (s, t) in gold:
            tp_s, tp_l = tp_s + 1, tp_l + 1
        elif any(j in links.get(i, ()) for i in s for j in t):
            tp_l += 1
    return tp_s, len(test) - tp_s, tp_l, len(test) - tp_l


def score_alignments(hyp, gold) -> AlignScores:
    """Strict and lax precision / recall / F1 of ``hyp`` blocks against ``gold`` (lists of documents' blocks),
    exactly as vecalign's ``score.py`` (after Sennrich & Volk 2010) counts them.

    Counts are summed over documents, then divided (a ratio with nothing to
    count is 0). **Precision** is over every hypothesis block, skips (1-0 /
    0-1) included: a skip is right (strict and lax) only when gold has the
    same skip, otherwise it is wrong both ways. **Recall** is over gold blocks
    with both sides, against hypothesis blocks with both sides (skips are left
    out of both). **Strict**: the same block is on the other side. **Lax**: a
    source sentence of the block is linked to a target sentence of it by a block of
    the other side. Blocks are sets per document (a repeated block counts once).
    ``hyp`` and ``gold``: one list of ``(src, tgt, ...)`` blocks per document, the
    documents in the same order. ``n_hyp`` / ``n_gold``: the blocks precision / recall were counted over.
    """
    if len(hyp) != len(gold):
        raise BisentError(f"{len(hyp)} aligned documents against {len(gold)} gold documents")
    p = [0, 0, 0, 0]
    r = [0, 0, 0, 0]
    for h_doc, g_doc in zip(hyp, gold, strict=True):
        p = [x + y for x, y in zip(p, _precision_counts(_block_set(g_doc, skips=True), _block_set(h_doc, skips=True)))]
        r = [x + y for x, y in zip(r, _precision_counts(_block_set(h_doc, skips=False),
                                                        _block_set(g_doc, skips=False)))]

    def ratio(a: int, b: int) -> float:
        return a / (a + b) if a + b else 0.0

    sp, lp, sr, lr = ratio(p[0], p[1]), ratio(p[2], p[3]), ratio(r[0], r[1]), ratio(r[2], r[3])
    return AlignScores(sp, sr, _f1(sp, sr), lp, lr, _f1(lp, lr), p[0] + p[1], r[0] + r[1])


# --------------------------------------------------------------------------- filtering against labels

def pair_key(src: str, tgt: str) -> tuple[str, str]:
    """A pair as looked up in a filter's outputs: each side's whitespace collapsed."""
    return " ".join(src.split()), " ".join(tgt.split())


def filter_prf(kept: set[tuple[str, str]], rejected: set[tuple[str, str]],
               labels: list[tuple[str, str, bool]]) -> dict:
    """Confusion counts, precision / recall / F1 of keeping (positive: parallel) and the share of the rejected
    labelled pairs that were indeed not parallel."""
    c: Counter = Counter()
    for src, tgt, parallel in labels:
        k = pair_key(src, tgt)
        where = "kept" if k in kept else "rejected" if k in rejected else None
        if where is None:
            c["not_found"] += 1
            continue
        c[("tp" if parallel else "fp") if where == "kept" else ("fn" if parallel else "tn")] += 1
    tp, fp, fn, tn = c["tp"], c["fp"], c["fn"], c["tn"]
    p = tp / (tp + fp) if tp + fp else None
    r = tp / (tp + fn) if tp + fn else None
    f1 = 2 * p * r / (p + r) if p and r else (0.0 if p is not None and r is not None else None)
    return {"labelled": len(labels), "found": tp + fp + fn + tn, "not_found": c["not_found"],
            "tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": p, "recall": r, "f1": f1,
            "rejected_correct": tn / (tn + fn) if tn + fn else None}

"""The repair of section 3.2 on one score matrix: Eq. 2 aggregates, the aligned score of a sub-pair and the
N-best leading/trailing cuts of both sides (:func:`best_cuts`), with the sentence boundaries a cut may prefer."""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np


def _lse(x: np.ndarray, r: float, axis: int) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    return (np.log(np.exp(r * (x - m)).sum(axis=axis)) / r + np.squeeze(m, axis=axis))


def pair_aggregates(S: np.ndarray, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 2 on one ``(I, J)`` score matrix: ``aggr_s`` (I,) over targets and ``aggr_t`` (J,) over sources."""
    return _lse(S, r, 1), _lse(S, r, 0)


def cut_score(S: np.ndarray, r: float, p: int, q: int, a: int, b: int) -> float:
    """Aligned score of the sub-pair source ``p..q-1``, target ``a..b-1``: the sum of every kept word's
    Eq. 2 aggregate over the kept words of the other side (the paper's sum of maxima, softened as in Eq. 2
    and made symmetric, so that a divergent word on either side lowers it)."""
    a_s, a_t = pair_aggregates(S[p:q, a:b], r)
    return float(a_s.sum() + a_t.sum())


#: tokens that end a sentence; a cut right after one (and after the closing brackets/quotes that follow it)
#: falls on a sentence boundary
SENTENCE_END = frozenset(".!?:;…。！？")
_CLOSERS = frozenset(")]}\"'»”’")


def sentence_boundaries(words: Sequence[str]) -> np.ndarray:
    """(n + 1,) bool: True at ``k`` when a cut before word ``k`` (0 <= k <= n) falls where a sentence ends: at
    either end of the side, or right after sentence-final punctuation and any closing brackets/quotes."""
    n = len(words)
    out = np.zeros(n + 1, dtype=bool)
    out[0] = out[n] = True
    for k in range(1, n):
        j = k - 1
        while j > 0 and words[j] in _CLOSERS:
            j -= 1
        out[k] = words[j] in SENTENCE_END
    return out


def ends_sentence(words: Sequence[str], k: int) -> bool:
    """Whether words ``0 .. k-1`` end with sentence-final punctuation (and any closing brackets/quotes after it)."""
    j = k - 1
    while j > 0 and words[j] in _CLOSERS:
        j -= 1
    return j >= 0 and words[j] in SENTENCE_END


def edge_costs(words: Sequence[str], cost: float) -> np.ndarray:
    """(n + 1,) costs of the edges of a kept span for :func:`best_cuts`: ``cost`` where no sentence ends, else 0.

    A second sentence glued on by a bad segmenter starts or ends at a sentence
    boundary; a cut one word off that boundary then pays ``cost`` (logits;
    ``inf``: only sentence boundaries can be cut at).
    """
    return np.where(sentence_boundaries(words), 0.0, float(cost))


class Cut(NamedTuple):
    """A candidate repair: source words ``p..q-1``, target words ``a..b-1`` (0-based) and its aligned score."""

    score: float
    p: int
    q: int
    a: int
    b: int


def best_cuts(S: np.ndarray, r: float, *, n_best: int = 20, tau: int = 3, src_cost: np.ndarray | None = None,
              tgt_cost: np.ndarray | None = None, one_side: bool = False) -> list[Cut]:
    """The ``n_best`` leading/trailing cuts of both sides with the highest :func:`cut_score`, best first.

    Candidates are the full pair and every sub-pair whose two spans are both
    longer than ``tau`` words. All I²J²/4 scores come from prefix sums of the
    span-wise log-sum-exps: ``O(I J (I + J))`` exponentials, then one
    ``(q, a, b)`` array per source start ``p``. ``src_cost`` (I + 1,) and
    ``tgt_cost`` (J + 1,), when given, are subtracted for each edge of a
    candidate: the source span ``p..q-1`` pays ``src_cost[p] + src_cost[q]``
    (e.g. :func:`edge_costs`: cutting where no sentence ends costs more; an
    infinite cost forbids the edge). ``one_side``: a candidate keeps at least
    one side whole (a glued sentence adds words to one side only).
    """
    I, J = S.shape
    cs = np.zeros(I + 1) if src_cost is None else np.asarray(src_cost, dtype=np.float64)
    ct = np.zeros(J + 1) if tgt_cost is None else np.asarray(tgt_cost, dtype=np.float64)
    if cs.shape != (I + 1,) or ct.shape != (J + 1,):
        raise ValueError(f"edge costs of shapes {cs.shape}, {ct.shape} for a ({I}, {J}) score matrix")
    rS = r * S
    # src_part[a, b, i]: aggr_s(i) over targets a..b (inclusive); prefix over i -> Ps[a, b, q] = sum_{i<q}
    Ps = np.full((J, J, I + 1), np.nan)
    for a in range(J):
        acc = rS[:, a].copy()
        for b in range(a, J):
            if b > a:
                acc = np.logaddexp(acc, rS[:, b])
            Ps[a, b, 0] = 0.0
            Ps[a, b, 1:] = np.cumsum(acc / r)
    Pt = np.full((I, I, J + 1), np.nan)
    for p in range(I):
        acc = rS[p, :].copy()
        for q in range(p, I):
            if q > p:
                acc = np.logaddexp(acc, rS[q, :])
            Pt[p, q, 0] = 0.0
            Pt[p, q, 1:] = np.cumsum(acc / r)
    full_cost = cs[0] + cs[I] + ct[0] + ct[J]
    cands: list[Cut] = [Cut(cut_score(S, r, 0, I, 0, J) - full_cost, 0, I, 0, J)]
    aa, bb = np.meshgrid(np.arange(J), np.arange(J), indexing="ij")         # (J, J)
    tgt_ok = (bb - aa + 1) > tau
    tgt_whole = (aa == 0) & (bb == J - 1)
    tgt_pay = ct[:J][:, None] + ct[1:][None, :]                            # (a, b): start a, inclusive end b
    for p in range(I):
        qs = np.arange(p + tau, I)                                         # inclusive end q: length q-p+1 > tau
        if len(qs) == 0:
            break
        src = Ps[:, :, qs + 1] - Ps[:, :, p][:, :, None]                   # (J, J, Q)
        src = np.moveaxis(src, 2, 0)                                       # (Q, J, J)
        pt = Pt[p, qs]                                                     # (Q, J+1)
        tgt = pt[:, None, 1:] - pt[:, :, None][:, :J, :]                   # (Q, a, b): sum_{a<=j<=b}
        tot = src + tgt - (cs[p] + cs[qs + 1])[:, None, None] - tgt_pay[None]
        ok = tgt_ok[None]
        if one_side:                                                       # source cut: the target kept whole
            ok = ok & (((p == 0) & (qs == I - 1))[:, None, None] | tgt_whole[None])
        tot = np.where(ok, tot, -np.inf)
        tot = np.nan_to_num(tot, nan=-np.inf, neginf=-np.inf)
        flat = tot.ravel()
        k = min(n_best + 1, flat.size)
        top = np.argpartition(-flat, k - 1)[:k]
        for f in top:
            if not np.isfinite(flat[f]):
                continue
            qi, a, b = np.unravel_index(f, tot.shape)
            q = int(qs[qi]) + 1
            if (p, q, int(a), int(b) + 1) != (0, I, 0, J):
                cands.append(Cut(float(flat[f]), p, q, int(a), int(b) + 1))
        cands.sort(key=lambda c: -c.score)
        del cands[n_best:]
    return cands

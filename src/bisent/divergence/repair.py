"""``bisent repair`` and the ``repair`` filter step: a pair cut to its parallel core (section 3.2), with the
defaults chosen on development data."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .cuts import Cut, best_cuts, cut_score, edge_costs, ends_sentence
from .scores import check_pair, sentence_similarity
from .tokens import cut_text


class Repair(NamedTuple):
    """What :func:`repair_pair` did: ``status`` is 'kept', 'cut' or 'skipped: reason'; spans 1-based inclusive."""

    status: str
    src: str
    tgt: str
    src_span: tuple[int, int] | None = None
    tgt_span: tuple[int, int] | None = None
    src_words: int = 0
    tgt_words: int = 0
    before: float | None = None
    after: float | None = None


#: defaults of ``boundary_cost``, ``min_word_gain``, ``tau``, chosen on dev: benchmarks/README.md, "The repair defaults"
BOUNDARY_COST = 6.0
MIN_WORD_GAIN = 0.0
TAU = 1

#: the cut shapes the filter's ``repair`` step allows (a whole glued sentence only): benchmarks/README.md, as above
STEP_DEFAULTS = {"sentences_only": True, "one_side": True, "match_ends": True}


def repair_pair(model, src: str, tgt: str, *, n_best: int = 20, tau: int = TAU, rerank: str = "align",
                min_gain: float = 0.0, min_word_gain: float = MIN_WORD_GAIN,
                boundary_cost: float = BOUNDARY_COST, sentences_only: bool = False, one_side: bool = False,
                match_ends: bool = False) -> Repair:
    """Section 3.2: cut leading/trailing words of both sides to the pair's parallel core.

    The ``n_best`` cuts of :func:`best_cuts` (the full pair among them) are
    ranked again by ``rerank``: 'align' keeps the aligned score of the arg
    max, 'sim' the Eq. 1 cosine of each candidate re-encoded (the paper's
    choice). A cut replaces the pair when it beats the full pair by more than
    ``min_gain`` (ranking score) and its aligned score gains more than
    ``min_word_gain`` per word it removes (a removed word adds about its
    negated Eq. 2 score, a logit): the cut words must be divergent on average,
    not one doubtful edge word of a clean pair. The kept core must also be
    parallel by the model's own rule (its words' mean Eq. 2 score above 0), so
    a pair with no parallel core (a misalignment) is left whole for the filters
    to reject. ``boundary_cost`` is subtracted from a cut's aligned score for
    each edge of it that does not fall on a sentence boundary of its side
    (:func:`edge_costs`), in the arg max and in the per-word rule: a glued
    sentence ends where a sentence ends. ``before``/``after`` are the ranking
    scores of the full pair and of the result. Pairs with a side of ``tau``
    words or fewer are kept as they are (the paper's ``tau`` is 3; :data:`TAU`).

    Three stricter shapes of cut, for a glued sentence and nothing else
    (the ``repair`` step of a filter pipeline; :data:`STEP_DEFAULTS`):
    ``sentences_only`` cuts only where a sentence ends (``boundary_cost``
    infinite), ``one_side`` keeps one side whole, and ``match_ends`` refuses a
    cut after which one kept side ends with sentence-final punctuation and the
    other does not, after a cut at an end (a truncated translation kept whole
    against a source cut back to a full sentence).
    """
    ws, wt, reason = check_pair(src, tgt, model.max_words)
    if reason:
        return Repair(f"skipped: {reason}", src, tgt)
    I, J = len(ws.words), len(wt.words)
    if I <= tau or J <= tau:
        return Repair("kept", src, tgt, (1, I), (1, J), I, J)
    S = model.pair_scores(ws.words, wt.words)
    cost = np.inf if sentences_only else boundary_cost
    cs, ct = edge_costs(ws.words, cost), edge_costs(wt.words, cost)
    cands = best_cuts(S, model.r, n_best=n_best, tau=tau, src_cost=cs, tgt_cost=ct, one_side=one_side)
    full = Cut(cut_score(S, model.r, 0, I, 0, J), 0, I, 0, J)
    if full not in cands:
        cands.append(full)
    if rerank == "sim":
        sims = sentence_similarity(model, [ws.words[c.p:c.q] for c in cands], [wt.words[c.a:c.b] for c in cands])
        ranked = [c._replace(score=v) for c, v in zip(cands, sims)]
    elif rerank == "align":
        ranked = cands
    else:
        raise ValueError(f"rerank must be 'align' or 'sim', not {rerank!r}")
    base = next(c for c in ranked if (c.p, c.q, c.a, c.b) == (0, I, 0, J))
    best = max(ranked, key=lambda c: c.score)
    kept = (best.q - best.p) + (best.b - best.a)
    removed = I + J - kept
    aligned = cut_score(S, model.r, best.p, best.q, best.a, best.b)         # the arg max's own score, any rerank
    paid = cs[best.p] + cs[best.q] + ct[best.a] + ct[best.b]
    word_gain_ok = aligned - paid - full.score > min_word_gain * removed
    core = aligned / kept                                                     # mean Eq. 2 score of the kept words
    ends_ok = not match_ends or (best.q, best.b) == (I, J) or (                # an end was cut
        ends_sentence(ws.words, best.q) == ends_sentence(wt.words, best.b))
    if removed == 0 or best.score - base.score <= min_gain or not word_gain_ok or core <= 0 or not ends_ok:
        return Repair("kept", src, tgt, (1, I), (1, J), I, J, base.score, base.score)
    return Repair("cut", cut_text(src, ws, best.p, best.q), cut_text(tgt, wt, best.a, best.b),
                  (best.p + 1, best.q), (best.a + 1, best.b), I, J, base.score, best.score)

"""A pair scored by a divergence model: every word's Eq. 2 score and label (``bisent divergence``), the
Eq. 1 cosine, and the share of parallel words (the ``divergence`` filter step)."""

from __future__ import annotations

import numpy as np

from .cuts import pair_aggregates
from .tokens import MAX_WORDS, Words, tokenize


def check_pair(src: str, tgt: str, max_words: int = MAX_WORDS) -> tuple[Words, Words, str | None]:
    """Tokenise both sides; the reason a pair cannot be scored (an empty side, too many words) or None."""
    ws, wt = tokenize(src), tokenize(tgt)
    for name, w in (("source", ws), ("target", wt)):
        if not w.words:
            return ws, wt, f"empty {name} side"
        if len(w.words) > max_words:
            return ws, wt, f"{name} side has {len(w.words)} words (more than {max_words})"
    return ws, wt, None


def score_pair(model, src: str, tgt: str) -> dict:
    """Every word of a pair with its Eq. 2 score and label (``-1`` parallel, ``+1`` divergent: score < 0),
    the pair's Eq. 1 cosine, and ``reason`` when the pair could not be scored."""
    ws, wt, reason = check_pair(src, tgt, model.max_words)
    if reason:
        return {"reason": reason}
    S = model.pair_scores(ws.words, wt.words)
    a_s, a_t = pair_aggregates(S, model.r)
    return {"src": [[w, round(float(a), 4), 1 if a < 0 else -1] for w, a in zip(ws.words, a_s)],
            "tgt": [[w, round(float(a), 4), 1 if a < 0 else -1] for w, a in zip(wt.words, a_t)],
            "divergent": int((a_s < 0).sum() + (a_t < 0).sum()),
            "sim": round(sentence_similarity(model, [ws.words], [wt.words])[0], 4)}


def sentence_similarity(model, src: list[list[str]], tgt: list[list[str]]) -> list[float]:
    """Eq. 1: cosine of the two sentence vectors of each pair."""
    x, y = model.sentence(src, "src"), model.sentence(tgt, "tgt")
    num = (x * y).sum(1)
    den = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
    return (num / np.maximum(den, 1e-12)).astype(float).tolist()


def parallel_share(model, src: str, tgt: str) -> float:
    """Share of a pair's words with a non-negative Eq. 2 score, plus a hundredth of the squashed mean score
    to order ties; 0 when the pair cannot be scored."""
    ws, wt, reason = check_pair(src, tgt, model.max_words)
    if reason:
        return 0.0
    a_s, a_t = pair_aggregates(model.pair_scores(ws.words, wt.words), model.r)
    a = np.concatenate([a_s, a_t])
    return float((a >= 0).mean() + 0.01 * np.tanh(a.mean()))

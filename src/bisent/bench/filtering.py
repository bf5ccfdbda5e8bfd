"""Filtering benchmark: held-out clean pairs mixed with realistic noise, ranked by a scorer.

Figures: average precision of ranking the clean pairs first, and per noise
kind the share ranked above the median clean pair (what would leak through a
filter that keeps the better half). Scorers per encoder: cosine, and the ratio
margin with the noisy set itself as background (a fixed bitext needs no
comparable corpus for margin scores).
"""

from __future__ import annotations

import numpy as np

from ..datasets.libreoffice import load_pairs
from ..datasets.noise import NOISE_KINDS, make_noisy_set
from ..scoring import Scorer
from .common import Recorder, average_precision

SCORES = ("cosine", "ratio")


def third_language(src_lang: str, tgt_lang: str) -> str:
    """The language whose help gives the 'translation into a third language' noise."""
    return next(lang for lang in ("fr", "de", "es", "it") if lang not in (src_lang, tgt_lang))


def build_set(src_lang: str, tgt_lang: str, *, limit: int | None = 4000, split: str = "test", seed: int = 0):
    """The labelled noisy set of a split, and the third language used."""
    third = third_language(src_lang, tgt_lang)
    pairs = load_pairs(src_lang, tgt_lang, split=split)
    third_map = {(p.doc, p.pid): p.tgt for p in load_pairs(src_lang, third, split=split)}
    return make_noisy_set(pairs, third_map, seed=seed, limit=limit), third


def leak_rates(scores: np.ndarray, kinds: list[str]) -> dict[str, float]:
    """Per noise kind: share of its pairs scoring above the median clean pair."""
    kinds_a = np.array(kinds)
    median_clean = float(np.median(scores[kinds_a == "clean"]))
    return {k: round(100 * float(np.mean(scores[kinds_a == k] > median_clean)), 2)
            for k in NOISE_KINDS if (kinds_a == k).any()}


def evaluate_scores(scores: np.ndarray, kinds: list[str]) -> dict:
    clean = np.array([k == "clean" for k in kinds])
    return {"ap": round(100 * average_precision(scores, clean), 2), "above_median_clean": leak_rates(scores, kinds)}


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = 4000, k: int = 4,
        progress: bool | None = None) -> list[dict]:
    items, third = build_set(src_lang, tgt_lang, limit=limit)
    kinds = [it.kind for it in items]
    counts = {kind: kinds.count(kind) for kind in ("clean",) + NOISE_KINDS}
    out = []
    for enc in encoders:
        x = enc.encode([it.src for it in items], src_lang, progress=progress)
        # the target side holds third-language text and source copies: embed it as the target language
        y = enc.encode([it.tgt for it in items], tgt_lang, progress=progress)
        for kind in SCORES:
            scores = Scorer(kind, k).fit(y, sources=x).score_pairs(x, y)
            out.append(record({"pair": f"{src_lang}-{tgt_lang}", "encoder": enc.name, "encoder_id": enc.id,
                               "scorer": kind, "k": k, "third_language": third, "counts": counts,
                               **evaluate_scores(scores, kinds)}))
    return out

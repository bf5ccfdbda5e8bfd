"""Speed benchmark: sentences/s per encoder, pairs/s scored, peak RSS, on the same real sentences.

Embedding bypasses the persistent cache so every sentence is really embedded.
Scoring rates are for precomputed embeddings: cosine of aligned pairs, and the
ratio margin of aligned pairs against a background of the ``limit`` distinct sentences per side.
"""

from __future__ import annotations

import time

import numpy as np

from ..datasets.libreoffice import load_pairs
from ..evaluate import sample_distinct_pairs
from ..mining.scoring import Scorer
from .common import Recorder, peak_rss_mb


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int = 1000, k: int = 4,
        scored_pairs: int = 100_000, progress: bool | None = None) -> list[dict]:
    pairs = sample_distinct_pairs(load_pairs(src_lang, tgt_lang, split="test"), limit=limit)
    sents = {src_lang: [p.src for p in pairs], tgt_lang: [p.tgt for p in pairs]}
    n = sum(len(v) for v in sents.values())
    out = []
    for enc in encoders:
        enc.encode(sents[src_lang][:8], src_lang, cache=False, progress=False)  # load lazy weights
        t = time.perf_counter()
        vecs = [enc.encode(v, lang, cache=False, progress=progress) for lang, v in sents.items()]
        t_embed = time.perf_counter() - t
        x, y = vecs
        reps = max(1, scored_pairs // len(x))
        xs, ys = np.tile(x, (reps, 1)), np.tile(y, (reps, 1))   # (reps·n, d) pairs to score
        rates = {}
        for kind in ("cosine", "ratio"):
            # background for the margin: the distinct sentences themselves (n per side)
            t = time.perf_counter()
            Scorer(kind, k).fit(y, sources=x).score_pairs(xs, ys)
            rates[kind] = round(len(xs) / (time.perf_counter() - t), 0)
        out.append(record({"pair": f"{src_lang}-{tgt_lang}", "encoder": enc.name, "encoder_id": enc.id,
                           "sentences": n, "sentences_per_s": round(n / t_embed, 1),
                           "pairs_per_s_cosine": rates["cosine"], "pairs_per_s_ratio_margin": rates["ratio"],
                           "scored_pairs": len(xs), "peak_rss_mb": peak_rss_mb()}))
    return out

"""Sentence-alignment benchmark: strict / lax P/R/F1 on LibreOffice help pages re-split into sentences.

Gold follows from the paragraph ids (:mod:`bisent.datasets.align_gold`). Each
encoder aligns every page of the split with :class:`SentenceAligner` at its
default settings (chosen on dev pages); Gale-Church's length model is measured
in the same run. ``limit`` caps the pages (me5-small embeds ~45 sentences/s on
one CPU thread and the groups of 1-3 sentences triple the texts: give it fewer pages).
"""

from __future__ import annotations

import time

from ..align import GALE_CHURCH, SentenceAligner, score_alignments
from ..datasets.align_gold import load_align_task
from .common import Recorder, peak_rss_mb


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = None,
        split: str = "test", progress: bool | None = None, **aligner_options) -> list[dict]:
    docs, stats = load_align_task(src_lang, tgt_lang, split, limit=limit)
    out = []
    for enc in [GALE_CHURCH] + list(encoders):
        aligner = SentenceAligner(enc, progress=progress, **aligner_options)
        t0 = time.perf_counter()
        hyp = []
        for d in docs:
            res = aligner.align(d.src, d.tgt, src_lang, tgt_lang)
            hyp.append([(b.src, b.tgt) for b in res.blocks])
        sc = score_alignments(hyp, [d.gold for d in docs])
        out.append(record({"pair": f"{src_lang}-{tgt_lang}", "encoder": aligner.name,
                           "encoder_id": getattr(aligner.encoder, "id", GALE_CHURCH), "split": split,
                           "n_docs": len(docs), "src_sentences": stats["src_sentences"],
                           "tgt_sentences": stats["tgt_sentences"], "gold_blocks": stats["blocks"],
                           "gold_1_1": stats["blocks_1_1"], **sc.as_dict(), "aligner": aligner_options,
                           "seconds": round(time.perf_counter() - t0, 1),
                           "peak_rss_mb": peak_rss_mb()}))
    return out

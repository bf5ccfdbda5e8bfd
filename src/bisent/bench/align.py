"""Sentence-alignment benchmark: strict / lax P/R/F1 on translated help pages re-split into sentences.

Two sources (:data:`bisent.datasets.align_gold.SOURCES`): LibreOffice help,
whose gold follows from the paragraph ids, and GNOME help, whose gold follows
from the block positions of itstool-translated Mallard pages
(:mod:`bisent.datasets.align_gold`). Each
encoder aligns every page of the split with :class:`SentenceAligner` at its
default settings (chosen on dev pages); Gale-Church's length model is measured
in the same run. Four views (:data:`VIEWS`): ``clean`` (the pages as
translated: nearly all 1-1), ``drop10`` (a tenth of the paragraphs lose their
translation on one side: what real document pairs look like, and where a
length model breaks), ``merge10`` (a tenth of neighbouring paragraph pairs
merged into one line on one side: 2-1, 1-2, 3-1, 1-3 blocks) and
``drop10-merge10`` (both: the hardest). ``limit`` caps the pages (me5-small embeds ~45 sentences/s on
one CPU thread and the groups of 1-3 sentences triple the texts: give it fewer pages).
"""

from __future__ import annotations

import time

from ..align import GALE_CHURCH, SentenceAligner, score_alignments
from ..datasets.align_gold import SOURCES, load_align_task
from .common import Recorder


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = None,
        split: str = "test", progress: bool | None = None, sources=SOURCES, **aligner_options) -> list[dict]:
    out = []
    for source in sources:
        for view, (drop, merge) in VIEWS.items():
            docs, stats = load_align_task(src_lang, tgt_lang, split, limit=limit, drop=drop, merge=merge,
                                          source=source)
            out += [_run_one(enc, view, docs, stats, src_lang, tgt_lang, split, record, progress, aligner_options,
                             source) for enc in [GALE_CHURCH] + list(encoders)]
    return out


#: view name -> (share of paragraphs whose translation is removed, share of paragraph pairs merged on one side)
VIEWS = {"clean": (0.0, 0.0), "drop10": (0.1, 0.0), "merge10": (0.0, 0.1), "drop10-merge10": (0.1, 0.1)}


def _run_one(enc, view, docs, stats, src_lang, tgt_lang, split, record, progress, aligner_options,
             source) -> dict:
    """Align every page with one encoder (or Gale-Church) and record strict / lax P/R/F1."""
    aligner = SentenceAligner(enc, progress=progress, **aligner_options)
    t0 = time.perf_counter()
    hyp = [[(b.src, b.tgt) for b in aligner.align(d.src, d.tgt, src_lang, tgt_lang).blocks] for d in docs]
    sc = score_alignments(hyp, [d.gold for d in docs])
    return record({"pair": f"{src_lang}-{tgt_lang}", "source": source, "encoder": aligner.name, "view": view,
                   "encoder_id": getattr(aligner.encoder, "id", GALE_CHURCH), "split": split,
                   "n_docs": len(docs), "src_sentences": stats["src_sentences"],
                   "tgt_sentences": stats["tgt_sentences"], "gold_blocks": stats["blocks"],
                   "gold_1_1": stats["blocks_1_1"], "merged": stats["merged"], **sc.as_dict(), "aligner": aligner_options,
                   "seconds": round(time.perf_counter() - t0, 1)})

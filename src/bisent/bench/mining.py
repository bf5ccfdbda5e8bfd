"""Mining benchmark: BUCC-like tasks from held-out documents, threshold tuned on dev, scored on test.

For every encoder (the one under test and the anchors), the three margins and
the four retrieval modes: precision, recall and F1 on the test task at the
threshold tuned on the dev task, and F1 at the test task's own oracle
threshold. The gap between the two shows how well a threshold transfers.
"""

from __future__ import annotations

from ..datasets.comparable import make_mining_task
from ..datasets.domains import load_domain_pairs, split_pairs
from ..evaluate import mining_task
from ..mining.retrieval import RETRIEVALS
from ..mining.scoring import MARGINS
from .common import Recorder


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, max_gold: int | None = None,
        k: int = 4, margins=MARGINS, retrievals=RETRIEVALS, progress: bool | None = None,
        domain: str = "libreoffice") -> list[dict]:
    pairs = load_domain_pairs(domain, src_lang, tgt_lang)
    for split in ("dev", "test"):                       # a one-line error when either is empty
        split_pairs(domain, src_lang, tgt_lang, split)
    tasks = {s: make_mining_task(pairs, s, max_gold=max_gold, src_lang=src_lang, tgt_lang=tgt_lang)
             for s in ("dev", "test")}
    sizes = {s: {"src": len(t.src), "tgt": len(t.tgt), "gold": len(t.gold)} for s, t in tasks.items()}
    out = []
    for enc in encoders:
        for r in mining_task(enc, tasks, src_lang, tgt_lang, margins=margins, retrievals=retrievals, k=k,
                             progress=progress):
            out.append(record({
                "pair": f"{src_lang}-{tgt_lang}", "domain": domain, "encoder": enc.name, "encoder_id": enc.id,
                "margin": r.margin, "retrieval": r.retrieval, "k": k,
                "dev_threshold": r.dev.threshold, "dev_f1": round(100 * r.dev.f1, 2),
                "precision": round(100 * r.test.precision, 2), "recall": round(100 * r.test.recall, 2),
                "f1": round(100 * r.test.f1, 2), "oracle_f1": round(100 * r.oracle.f1, 2),
                "oracle_threshold": r.oracle.threshold, "sizes": sizes,
                "embed_seconds": round(sum(r.embed_seconds.values()), 1)}))
    return out

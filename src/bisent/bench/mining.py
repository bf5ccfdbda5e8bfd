"""Mining benchmark: BUCC-like tasks from held-out documents, threshold tuned on dev, scored on test.

For every encoder (the one under test and the anchors), the three margins and
the four retrieval modes: precision, recall and F1 on the test task at the
threshold tuned on the dev task, and F1 at the test task's own oracle
threshold. The gap between the two shows how well a threshold transfers.
"""

from __future__ import annotations

import time

from ..datasets.comparable import make_mining_task
from ..datasets.domains import load_domain_pairs
from ..evaluate import best_threshold, bucc_prf
from ..mining import RETRIEVALS, retrieve
from ..scoring import MARGINS, Scorer
from .common import Recorder


def _embed_task(task, enc, src_lang, tgt_lang, progress):
    x = enc.encode([t for _, t in task.src], src_lang, progress=progress)
    y = enc.encode([t for _, t in task.tgt], tgt_lang, progress=progress)
    return x, y


def _mined(task, cands, mode):
    return [(p.score, task.src[p.src][0], task.tgt[p.tgt][0]) for p in retrieve(cands, mode)]


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, max_gold: int | None = None,
        k: int = 4, margins=MARGINS, retrievals=RETRIEVALS, progress: bool | None = None,
        domain: str = "libreoffice") -> list[dict]:
    pairs = load_domain_pairs(domain, src_lang, tgt_lang)
    tasks = {s: make_mining_task(pairs, s, max_gold=max_gold, src_lang=src_lang, tgt_lang=tgt_lang)
             for s in ("dev", "test")}
    gold = {s: set(t.gold) for s, t in tasks.items()}
    sizes = {s: {"src": len(t.src), "tgt": len(t.tgt), "gold": len(t.gold)} for s, t in tasks.items()}
    out = []
    for enc in encoders:
        t0 = time.perf_counter()
        vecs = {s: _embed_task(t, enc, src_lang, tgt_lang, progress) for s, t in tasks.items()}
        t_embed = time.perf_counter() - t0
        for margin in margins:
            cands = {s: Scorer(margin, k).fit(vecs[s][1]).score(vecs[s][0]) for s in tasks}
            for mode in retrievals:
                dev = best_threshold(_mined(tasks["dev"], cands["dev"], mode), gold["dev"])
                test_mined = _mined(tasks["test"], cands["test"], mode)
                test = bucc_prf(test_mined, gold["test"], dev.threshold)
                oracle = best_threshold(test_mined, gold["test"])
                out.append(record({
                    "pair": f"{src_lang}-{tgt_lang}", "domain": domain, "encoder": enc.name, "encoder_id": enc.id,
                    "margin": margin, "retrieval": mode, "k": k,
                    "dev_threshold": dev.threshold, "dev_f1": round(100 * dev.f1, 2),
                    "precision": round(100 * test.precision, 2), "recall": round(100 * test.recall, 2),
                    "f1": round(100 * test.f1, 2), "oracle_f1": round(100 * oracle.f1, 2),
                    "oracle_threshold": oracle.threshold, "sizes": sizes, "embed_seconds": round(t_embed, 1)}))
    return out

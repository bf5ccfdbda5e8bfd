"""The demo job: mine a BUCC-like task built from LibreOffice help, threshold tuned on dev, scored on test."""

from __future__ import annotations

import time
from pathlib import Path

from .datasets.comparable import MiningTask, make_mining_task, write_bucc
from .datasets.libreoffice import load_pairs
from .evaluate import PRF, best_threshold, bucc_prf
from .io import atomic_write
from .mining import mine_texts
from .report import RecordingScorer, render
from .report.runs import mining_report
from .scoring import Scorer


def mine_task(task: MiningTask, encoder, src_lang: str, tgt_lang: str, scorer: Scorer, retrieval: str,
              progress: bool | None = None) -> list[tuple[float, str, str]]:
    """All candidate pairs of ``task`` (no threshold) as ``(score, src_id, tgt_id)``, best first."""
    src_ids, src_texts = zip(*task.src)
    tgt_ids, tgt_texts = zip(*task.tgt)
    pairs = mine_texts(src_texts, tgt_texts, encoder, src_lang, tgt_lang, scorer=scorer, retrieval=retrieval,
                       progress=progress)
    return [(p.score, src_ids[p.src], tgt_ids[p.tgt]) for p in pairs]


def run_demo(encoder, src_lang: str = "en", tgt_lang: str = "de", *, max_gold: int = 1000,
             out_dir="out/demo", margin: str = "ratio", retrieval: str = "max", k: int = 4,
             progress: bool | None = None, log=print) -> dict:
    """Build dev and test tasks, mine both, tune the threshold on dev, report test P/R/F1."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    pairs = load_pairs(src_lang, tgt_lang)
    tasks = {split: make_mining_task(pairs, split, max_gold=max_gold, src_lang=src_lang, tgt_lang=tgt_lang)
             for split in ("dev", "test")}
    for split, task in tasks.items():
        write_bucc(task, out / f"task-{split}", src_lang, tgt_lang)
        log(f"{split}: {len(task.src)} {src_lang} and {len(task.tgt)} {tgt_lang} sentences, "
            f"{len(task.gold)} hidden translation pairs -> {out / f'task-{split}'}")
    t_data = time.perf_counter() - t0
    scorer = RecordingScorer(Scorer(margin, k))   # keeps the test split's candidates (mined last) for the report
    mined, gold, seconds = {}, {}, {}
    for split, task in tasks.items():
        t = time.perf_counter()
        mined[split] = mine_task(task, encoder, src_lang, tgt_lang, scorer, retrieval, progress)
        seconds[split] = time.perf_counter() - t
        gold[split] = set(task.gold)
    tuned: PRF = best_threshold(mined["dev"], gold["dev"])
    at_dev = bucc_prf(mined["test"], gold["test"], tuned.threshold)
    oracle = best_threshold(mined["test"], gold["test"])
    path = out / "mined-test.tsv"
    texts_s, texts_t = dict(tasks["test"].src), dict(tasks["test"].tgt)
    with atomic_write(path) as f:
        for score, s, t in mined["test"]:
            if tuned.threshold is None or score >= tuned.threshold:
                f.write(f"{score:.6f}\t{texts_s[s]}\t{texts_t[t]}\t{s}\t{t}\n")
    record, _ = mining_report(scorer, [m[0] for m in mined["test"]],
                              [(texts_s[s], texts_t[t]) for _, s, t in mined["test"]],
                              [t for _, t in tasks["test"].src], [t for _, t in tasks["test"].tgt], retrieval=retrieval,
                              threshold=tuned.threshold, params={"encoder": encoder.name, "score": margin, "k": k,
                                                                 "retrieval": retrieval, "threshold": "tuned on dev"})
    report = render([("test split", record)], out / "report.html", title=f"bisent demo: {src_lang}-{tgt_lang}")
    return {"report": str(report), "encoder": encoder.name, "pair": f"{src_lang}-{tgt_lang}", "score": margin,
            "retrieval": retrieval, "k": k, "threshold_from_dev": tuned.threshold, "dev": tuned.as_dict(), "test": at_dev.as_dict(),
            "test_oracle": oracle.as_dict(), "seconds_data": round(t_data, 1),
            "seconds_mine_test": round(seconds["test"], 1), "seconds_mine_dev": round(seconds["dev"], 1),
            "seconds_total": round(time.perf_counter() - t0, 1), "mined_file": str(path)}

"""The demo job: mine a BUCC-like task built from LibreOffice help, threshold tuned on dev, scored on test."""

from __future__ import annotations

import time
from pathlib import Path

from .datasets.comparable import make_mining_task, write_bucc
from .datasets.libreoffice import load_pairs
from .evaluate import mining_task
from .io import atomic_write
from .mining.scoring import Scorer
from .report import RecordingScorer, render
from .report.runs import mining_report


def run_demo(encoder, src_lang: str = "en", tgt_lang: str = "de", *, max_gold: int = 1000,
             out_dir="out/demo", margin: str = "ratio", retrieval: str = "max", k: int = 4,
             progress: bool | None = None, log=print) -> dict:
    """Build dev and test tasks, mine both, tune the threshold on dev, report test P/R/F1
    (:func:`bisent.evaluate.mining_task`: the same figures as ``bisent bench mining``)."""
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
    (r,) = mining_task(encoder, tasks, src_lang, tgt_lang, margins=(margin,), retrievals=(retrieval,), k=k,
                       progress=progress, make_scorer=lambda m, kk: scorer)
    path = out / "mined-test.tsv"
    texts_s, texts_t = dict(tasks["test"].src), dict(tasks["test"].tgt)
    with atomic_write(path) as f:
        for score, s, t in sorted(r.mined["test"], key=lambda m: (-m[0], m[1], m[2])):
            if r.dev.threshold is None or score >= r.dev.threshold:
                f.write(f"{score:.6f}\t{texts_s[s]}\t{texts_t[t]}\t{s}\t{t}\n")
    record, _ = mining_report(scorer, [m[0] for m in r.mined["test"]],
                              [(texts_s[s], texts_t[t]) for _, s, t in r.mined["test"]],
                              [t for _, t in tasks["test"].src], [t for _, t in tasks["test"].tgt], retrieval=retrieval,
                              threshold=r.dev.threshold, params={"encoder": encoder.name, "score": margin, "k": k,
                                                                 "retrieval": retrieval, "threshold": "tuned on dev"})
    report = render([("test split", record)], out / "report.html", title=f"bisent demo: {src_lang}-{tgt_lang}")
    return {"report": str(report), "encoder": encoder.name, "pair": f"{src_lang}-{tgt_lang}", "score": margin,
            "retrieval": retrieval, "k": k, "threshold_from_dev": r.dev.threshold, "dev": r.dev.as_dict(),
            "test": r.test.as_dict(), "test_oracle": r.oracle.as_dict(), "seconds_data": round(t_data, 1),
            **{f"seconds_mine_{s}": round(r.embed_seconds[s] + r.mine_seconds[s], 1) for s in ("test", "dev")},
            "seconds_total": round(time.perf_counter() - t0, 1), "mined_file": str(path)}

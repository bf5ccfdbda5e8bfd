"""Sentence alignment time and peak memory against document length (100 ... 100,000 sentences per side).

Long documents with known gold are LibreOffice help test pages (``drop10``
view: a tenth of the paragraphs untranslated on one side) concatenated in
order, cycling through them again past the end of the test split, and cut to
the first N gold blocks. Each length runs in a fresh process so its peak RSS
is its own. Reported per length: seconds to embed the groups of 1-3 sentences
(from the embedding cache after the first run: the texts repeat), seconds of
the DP (coarse to fine beyond 250k lattice points), lattice points visited,
peak RSS, strict F1 of the long document; then the exponent of a least-squares
fit of log(DP seconds) on log(N) for N >= 1000.

    python benchmarks/align_speed.py                       # use-m3 and gale-church, en-de
    python benchmarks/align_speed.py --lengths 100 1000 --encoders gale-church
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

LENGTHS = (100, 300, 1000, 3000, 10_000, 30_000, 100_000)


def one(n: int, encoder: str, pair: str) -> dict:
    from bisent.align import SentenceAligner, score_alignments
    from bisent.bench.common import peak_rss_mb
    from bisent.datasets.align_gold import AlignDoc, concatenate, load_align_task

    src_lang, tgt_lang = pair.split("-")
    docs, _ = load_align_task(src_lang, tgt_lang, "test", drop=0.1)
    doc = concatenate(docs, n)
    gold, k_src, k_tgt = [], 0, 0
    for s, t in doc.gold:                       # cut to the first blocks holding n source sentences
        if k_src + len(s) > n:
            break
        gold.append((s, t))
        k_src, k_tgt = k_src + len(s), k_tgt + len(t)
    doc = AlignDoc(doc.name, doc.src[:k_src], doc.tgt[:k_tgt], gold)
    base_rss = peak_rss_mb()
    al = SentenceAligner(encoder, progress=False)
    t0 = time.perf_counter()
    costs = al.costs(doc.src, doc.tgt, src_lang, tgt_lang)
    embed_s = time.perf_counter() - t0
    res = al.align_costs(costs)
    sc = score_alignments([[(b.src, b.tgt) for b in res.blocks]], [doc.gold])
    return {"task": "align_speed", "pair": pair, "encoder": al.name, "n_src": len(doc.src), "n_tgt": len(doc.tgt),
            "costs_seconds": round(embed_s, 2), "dp_seconds": round(res.seconds, 2), "cells": res.cells,
            "cells_per_sentence": round(res.cells / len(doc.src), 1), "strict_f1": round(100 * sc.strict_f1, 2),
            "lax_f1": round(100 * sc.lax_f1, 2), "peak_rss_mb": peak_rss_mb(), "rss_after_data_mb": base_rss}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    ap.add_argument("--encoders", nargs="+", default=["gale-church", "use-m3"])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--results", default="benchmarks/results", help="folder of align_speed.jsonl ('' to not record)")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.encoders[0], args.pair)), flush=True)
        return
    from bisent.bench.common import Recorder

    record = Recorder("align_speed", args.results or None)
    for enc in args.encoders:
        rows = []
        for n in args.lengths:
            p = subprocess.run([sys.executable, __file__, "--one", str(n), "--encoders", enc, "--pair", args.pair],
                               capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            if p.returncode:
                last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode
                sys.exit(f"length {n}, {enc}: {last}")
            rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
            record(rows[-1])
        big = [r for r in rows if r["n_src"] >= 1000]
        if len(big) >= 2:
            slope = np.polyfit(np.log([r["n_src"] for r in big]),
                               np.log([max(r["dp_seconds"], 1e-3) for r in big]), 1)[0]
            record({"task": "align_speed_fit", "pair": args.pair, "encoder": rows[0]["encoder"],
                    "lengths": [r["n_src"] for r in big], "dp_time_exponent": round(float(slope), 3)})


if __name__ == "__main__":
    main()

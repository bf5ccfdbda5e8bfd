"""IVF against exact kNN on real embeddings: top-1 agreement and cost by lists and probes.

Reads two vectors folders (``bisent embed`` output; ``--n`` first rows of each side,
which for ``bisent data scale`` output is a random sample: its lines are in blake2b
order). The anchor is the exact one-pass search of both directions (``knn_both``),
timed in the same run. For each number of lists (``--lists``, multiples of √m) an
IVF index is built on each side once and searched with each ``--nprobe``; a record
gives, on a fixed sample of ``--sample`` queries per direction (seed 0), the share
whose IVF top-1 neighbour is the exact one (``top1_agreement``, both directions
pooled) and the share whose IVF top-1 has the exact top-1's score to 1e-4 (the same
neighbour or a tie: ``top1_score_agreement``), with the CPU seconds of the whole
approximate search (build both indexes + search every row both ways), which is
what ``bisent mine`` spends. CPU time is the process's (the machine is shared).
``nprobe = nlist`` scans every list: the agreement left is what the codes
(fp16 / SQ8) lose. :func:`bisent.mining.index.choose_index` is set from these records.

Usage: python benchmarks/index_sweep.py SRC.vec TGT.vec [--n 50000] [--lists 1,4] [--nprobe 8,16,32,64,128]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bisent.bench.common import Recorder, add_results_option, exact_anchor, first_rows
from bisent.mining.index import build_index
from bisent.mining.vectors import Shards


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("tgt")
    ap.add_argument("--n", type=int, default=50_000, help="rows taken from each side (the first n)")
    ap.add_argument("--sample", type=int, default=10_000, help="queries per direction whose top-1 is compared")
    ap.add_argument("--lists", default="1,4", help="lists as multiples of √(indexed rows)")
    ap.add_argument("--nprobe", default="8,16,32,64,128", help="probes; 'all' adds nprobe = nlist")
    ap.add_argument("--quantizer", default="fp16")
    ap.add_argument("--label", default="", help="what the vectors are (encoder, data), copied into the records")
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--exact-cache", default=None,
                    help="an .npz keeping the exact anchor between runs on the same rows "
                         "(its timing is the run that computed it)")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("index_sweep", args.results or None, echo=lambda line: print(line, flush=True))
    x, y = first_rows(Shards(args.src), args.n, np.float32), first_rows(Shards(args.tgt), args.n, np.float32)
    n, m = len(x), len(y)
    base = {"label": args.label, "encoder": Shards(args.src).manifest.get("encoder"), "n": n, "m": m,
            "d": int(x.shape[1]), "k": args.k}
    exact, t_exact, c_exact, reused = exact_anchor(x, y, args.k, args.exact_cache)
    record({"bench": "index_sweep", **base, "method": "exact", "seconds": round(t_exact, 2),
            "cpu_seconds": round(c_exact, 2), "reused": reused})
    rng = np.random.default_rng(0)
    qs = np.sort(rng.choice(n, size=min(args.sample, n), replace=False))       # source queries
    qt = np.sort(rng.choice(m, size=min(args.sample, m), replace=False))       # target queries
    best = (exact.fwd_sim[qs, 0], exact.bwd_sim[qt, 0])
    truth = (exact.fwd_idx[qs, 0], exact.bwd_idx[qt, 0])
    for lists in (float(v) for v in args.lists.split(",")):
        indexes, build_cpu = [], 0.0
        for db in (y, x):
            c = time.process_time()
            indexes.append(build_index(db, "ivf", nlist=max(1, int(lists * np.sqrt(len(db)))),
                                       quantizer=args.quantizer))
            build_cpu += time.process_time() - c
        nlist = indexes[0].nlist
        probes = [int(p) for p in args.nprobe.split(",") if p != "all"]
        probes = sorted({p for p in probes if p <= nlist} | ({nlist} if "all" in args.nprobe.split(",") else set()))
        for nprobe in probes:
            search_cpu, hits, score_hits, total = 0.0, 0, 0, 0
            for index, q, db, rows, tr, bs in ((indexes[0], x, y, qs, truth[0], best[0]),
                                               (indexes[1], y, x, qt, truth[1], best[1])):
                index.nprobe = nprobe
                c = time.process_time()
                _, idx = index.search(q, args.k)                                 # every row, as mining does
                search_cpu += time.process_time() - c
                top = idx[rows, 0]
                got = np.einsum("ij,ij->i", q[rows], db[np.maximum(top, 0)])     # exact score of IVF's top-1
                hits += int(np.sum(top == tr))
                score_hits += int(np.sum((top >= 0) & (got >= bs - 1e-4)))
                total += len(rows)
            cpu = build_cpu + search_cpu
            record({"bench": "index_sweep", **base, "method": "ivf", "quantizer": args.quantizer,
                    "lists_per_sqrt": lists, "nlist": nlist, "nprobe": nprobe, "sample": total,
                    "top1_agreement": round(hits / total, 4), "top1_score_agreement": round(score_hits / total, 4),
                    "cpu_seconds": round(cpu, 2), "build_cpu_seconds": round(build_cpu, 2),
                    "search_cpu_seconds": round(search_cpu, 2), "anchor_exact_cpu_seconds": round(c_exact, 2),
                    "cpu_speedup": round(c_exact / cpu, 2)})


if __name__ == "__main__":
    main()

"""Where ``--index auto`` switches from exact to IVF: exact and IVF (fp16, SQ8) mining at a few sizes.

Prints one JSON line per (size, method): wall and CPU seconds of the whole mining step
(kNN both ways, ratio margin, max retrieval; CPU time is this process's, steadier than
wall time on a shared machine) and, for IVF, the agreement of its top 30 % pairs with
the exact search's, on planted translation pairs (:func:`knn.planted_pairs`, benchmarks/knn.py).
IVF runs with √n lists (FAISS's IVF default here) and with 4√n (the low end of FAISS's
guideline, 4√n to 16√n), 16 probed. Planted pairs are easier than real sentence embeddings: the
probes and :data:`bisent.mining.index.EXACT_MAX_PAIRS` are now set from ``benchmarks/index_sweep.py``.

Usage: python benchmarks/index_choice.py [--sizes 20000,40000,80000] [--d 512]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bisent.bench.common import Recorder, add_results_option
from bisent.mining.retrieval import mine
from bisent.mining.scoring import Scorer
from knn import planted_pairs


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="20000,40000,80000", help="comma-separated N (N sources × N targets)")
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--nprobe", type=int, default=16)
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("index_choice", args.results or None, echo=lambda line: print(line, flush=True))
    for n in (int(s) for s in args.sizes.split(",")):
        x, y = planted_pairs(n, args.d, 3)
        t, c = time.perf_counter(), time.process_time()
        exact = mine(x, y, Scorer("ratio", args.k), retrieval="max")
        t_exact, c_exact = time.perf_counter() - t, time.process_time() - c
        record({"bench": "index_choice", "method": "exact", "n": n, "m": n, "d": args.d, "k": args.k,
                "seconds": round(t_exact, 2), "cpu_seconds": round(c_exact, 2)})
        top = {(p.src, p.tgt) for p in exact[: int(0.3 * n)]}
        for lists, quantizer in ((1, "fp16"), (4, "fp16"), (4, "sq8")):
            nlist = int(lists * np.sqrt(n))
            t, c = time.perf_counter(), time.process_time()
            approx = mine(x, y, Scorer("ratio", args.k, knn_method="ivf", nlist=nlist, nprobe=args.nprobe,
                                       quantizer=quantizer), retrieval="max")
            secs, cpu = time.perf_counter() - t, time.process_time() - c
            got = {(p.src, p.tgt) for p in approx[: int(0.3 * n)]}
            record({"bench": "index_choice", "method": "ivf", "quantizer": quantizer, "nlist": nlist,
                    "nprobe": args.nprobe, "n": n, "m": n, "d": args.d, "k": args.k, "seconds": round(secs, 2),
                    "cpu_seconds": round(cpu, 2),
                    "agreement_top30pct_pairs": round(len(top & got) / max(len(top), 1), 4),
                    "anchor_exact_cpu_seconds": round(c_exact, 2), "cpu_speedup": round(c_exact / cpu, 2)})


if __name__ == "__main__":
    main()

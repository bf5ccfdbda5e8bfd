"""Where ``--index auto`` switches from exact to IVF: exact and IVF (fp16, SQ8) mining at a few sizes.

Prints one JSON line per (size, method): seconds of the whole mining step (kNN both
ways, ratio margin, max retrieval) and, for IVF, the agreement of its top 30 % pairs
with the exact search's, on planted translation pairs (:func:`bisent.bench.knn.planted_pairs`).
:data:`bisent.index.EXACT_MAX_PAIRS` is set from these figures.

Usage: python benchmarks/index_choice.py [--sizes 20000,40000,80000] [--d 512]
"""

from __future__ import annotations

import argparse
import time

from ..mining import mine
from ..scoring import Scorer
from .common import Recorder, add_results_option
from .knn import planted_pairs


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
        t = time.perf_counter()
        exact = mine(x, y, Scorer("ratio", args.k), retrieval="max")
        t_exact = time.perf_counter() - t
        record({"bench": "index_choice", "method": "exact", "n": n, "m": n, "d": args.d, "k": args.k,
                "seconds": round(t_exact, 2)})
        top = {(p.src, p.tgt) for p in exact[: int(0.3 * n)]}
        for quantizer in ("fp16", "sq8"):
            t = time.perf_counter()
            approx = mine(x, y, Scorer("ratio", args.k, knn_method="ivf", nprobe=args.nprobe, quantizer=quantizer),
                          retrieval="max")
            secs = time.perf_counter() - t
            got = {(p.src, p.tgt) for p in approx[: int(0.3 * n)]}
            record({"bench": "index_choice", "method": "ivf", "quantizer": quantizer, "nprobe": args.nprobe,
                    "n": n, "m": n, "d": args.d, "k": args.k, "seconds": round(secs, 2),
                    "agreement_top30pct_pairs": round(len(top & got) / max(len(top), 1), 4),
                    "anchor_exact_seconds": round(t_exact, 2), "speedup": round(t_exact / secs, 2)})


if __name__ == "__main__":
    main()

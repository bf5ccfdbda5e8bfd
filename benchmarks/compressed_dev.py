"""The compressed index's settings against the exact search on development data: gettext UI messages en-de (every
distinct message a side, 13.8k), use-m3.

For each variant of :func:`bisent.mining.compressed.compressed_params` (reduced dimension, coarse quantiser, codes,
extra candidates) the whole compressed search runs with its probes calibrated as `bisent mine --index compressed`
calibrates them; recorded: the probes, the seconds, the top-1 agreement with the exact lists both ways, and
``mined_pair_agreement``: the share of the exact search's mined pairs (ratio margin, k = 4, max retrieval, every
pair: no threshold) that the compressed search's lists also mine — the whole collection, not a sample.

Usage: python benchmarks/compressed_dev.py [--variants default,dim64,hnsw,extra32] [--results benchmarks/results]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bisent.bench.common import Recorder, add_results_option

VARIANTS = {"default": {}, "dim64": {"dim": 64}, "dim192": {"dim": 192}, "hnsw": {"coarse": "hnsw"},
            "extra32": {"extra": 32}, "extra8": {"extra": 8}, "pq32": {"codes": "pq32"}}


def main(argv=None) -> None:
    from bisent.datasets.gettext import load_pairs
    from bisent.encoders import get_encoder
    from bisent.encoders.shards import encode_fp16
    from bisent.mining.index import knn_both
    from bisent.mining.plan import knn_compressed
    from bisent.mining.retrieval import retrieve
    from bisent.mining.scoring import Scorer

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="default,dim64,dim192,hnsw,extra8,extra32")
    ap.add_argument("-e", "--encoder", default="use-m3")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("compressed_dev", args.results or None, echo=lambda line: print(line, flush=True))
    pairs = load_pairs("en", "de")
    enc = get_encoder(args.encoder)
    x = encode_fp16(enc, list(dict.fromkeys(p.src for p in pairs)), "en", progress=False)
    y = encode_fp16(enc, list(dict.fromkeys(p.tgt for p in pairs)), "de", progress=False)
    base = {"bench": "compressed_dev", "data": "gettext en-de (all splits, distinct messages)", "encoder": args.encoder,
            "src": len(x), "tgt": len(y), "k": 4}
    scorer = Scorer("ratio", 4)
    t = time.perf_counter()
    exact = knn_both(x, y, 4, progress=False)
    exact_seconds = time.perf_counter() - t
    truth = {(p.src, p.tgt) for p in retrieve(scorer.candidates(exact), "max")}
    record({**base, "variant": "exact", "seconds": round(exact_seconds, 2), "load_average": os.getloadavg()[0]})
    for name in args.variants.split(","):
        stats: dict = {}
        t = time.perf_counter()
        got = knn_compressed(x, y, 4, stats=stats, **VARIANTS[name])
        seconds = time.perf_counter() - t
        mined = {(p.src, p.tgt) for p in retrieve(scorer.candidates(got), "max")}
        record({**base, "variant": name, "params": stats["params"], "nprobe_fwd": stats["nprobe_fwd"],
                "nprobe_bwd": stats["nprobe_bwd"], "seconds": round(seconds, 2), "stages": stats["stages"],
                "knn_top1_agreement": round(float(np.mean(np.r_[exact.fwd_idx[:, 0] == got.fwd_idx[:, 0],
                                                                  exact.bwd_idx[:, 0] == got.bwd_idx[:, 0]])), 4),
                "sample_pair_agreement": [stats["sample_pair_agreement_fwd"], stats["sample_pair_agreement_bwd"]],
                "mined_pair_agreement": round(len(truth & mined) / len(truth), 4),
                "load_average": round(os.getloadavg()[0], 2)})


if __name__ == "__main__":
    main()

"""What the compressed index's coarse quantiser and lists cost in agreement, on real vectors.

For one direction (sources among targets) of two vectors folders: the index built by ``compressed_params``'s rule
with a flat coarse quantiser and with an HNSW graph (exploring 2 × nprobe centroids), lists trained on the indexed
side or on both sides; at each of ``--probes`` (the last may be every list) the top-k recall
of 500 sampled queries and their mined pairs' agreement with the exact search (:class:`PairSample`) counting every
query's best pair (``every``) and the pairs a run keeps (``kept``: the best-scoring 5 % of 2,000 queries).
JSON lines; the time of the exact sample and of each index build in the record.

Usage: python benchmarks/compressed_coarse.py --src SRC.vec --tgt TGT.vec [--probes 16,32,64,128,all]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main(argv=None) -> None:
    import faiss

    from bisent.bench.common import Recorder, add_results_option
    from bisent.encoders.shards import Shards
    from bisent.mining.compressed import (
        PairSample,
        Params,
        Rows,
        build_side,
        compressed_params,
        search_side,
        train_lists,
    )
    from bisent.mining.index import knn_both
    from bisent.mining.twostage import fit_projection

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--tgt", required=True)
    ap.add_argument("--probes", default="16,32,64,128,all")
    ap.add_argument("-k", type=int, default=4)
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("compressed_coarse", args.results or None, echo=lambda line: print(line, flush=True))
    x, y = Shards(args.src), Shards(args.tgt)
    base = {"src": len(x), "tgt": len(y), "encoder": x.encoder_id}
    t = time.perf_counter()
    every = PairSample(x, y, args.k, sample=500, top_share=1.0)
    kept = PairSample(x, y, args.k)
    exact = knn_both(every.qs, y, args.k, progress=False)
    rule = compressed_params(max(len(x), len(y)), int(x.shape[1]))
    p = fit_projection(x, y, rule.dim)
    record({"bench": "compressed_coarse_sample", **base, "seconds": round(time.perf_counter() - t, 1),
            "kept_pairs": len(kept.queries)})
    rows = Rows(y)
    for coarse, lists_from in (("flat", "indexed"), ("flat", "both"), ("hnsw", "indexed")):
        params = Params(rule.dim, rule.nlist, rule.codes, coarse, rule.extra)
        t = time.perf_counter()
        if lists_from == "indexed":
            centroids = train_lists(y, p, params)
        else:                                            # the former rule: one k-means over both sides' rows
            half = params.nlist * 32
            sample = np.concatenate([np.asarray(v[:half], dtype=np.float32) @ p for v in (x, y)])
            cp = faiss.ClusteringParameters()
            cp.niter, cp.min_points_per_centroid, cp.max_points_per_centroid = 10, 39, 64
            km = faiss.Clustering(params.dim, params.nlist, cp)
            km.train(np.ascontiguousarray(sample), faiss.IndexFlatIP(params.dim))
            centroids = faiss.vector_to_array(km.centroids).reshape(params.nlist, params.dim)
        index = build_side(y, p, params, centroids)
        built = round(time.perf_counter() - t, 1)
        for probes in args.probes.split(","):
            nprobe = params.nlist if probes == "all" else int(probes)
            idx = search_side(index, every.qs, p, rows, args.k, params.extra, nprobe)[1]
            recall = float(np.mean([len(set(a) & set(b)) / args.k for a, b in zip(idx.tolist(),
                                                                                exact.fwd_idx.tolist())]))
            record({"bench": "compressed_coarse", **base, "coarse": coarse, "lists_from": lists_from,
                    "nlist": params.nlist, "nprobe": nprobe, "build_seconds": built,
                    "topk_recall": round(recall, 4),
                    "every_query_pair_agreement": round(every.agreement(index, p, rows, params.extra, nprobe), 4),
                    "mined_pair_agreement": round(kept.agreement(index, p, rows, params.extra, nprobe), 4),
                    "load_average": round(os.getloadavg()[0], 2)})
        del index


if __name__ == "__main__":
    main()

"""Two-stage kNN (reduced-space scan + exact re-scoring) against exact kNN on real embeddings.

Reads two vectors folders (``bisent embed`` output; the first ``--n`` rows a side: for
``bisent data scale`` output a random sample, its lines are in hash order) as fp16, as
``bisent mine`` does. The anchor is the exact one-pass search of both directions
(:func:`bisent.mining.index.knn_both`), timed in the same run (or read back from ``--exact-cache``).
For each reduced dimension (``--dims``) and number of extra candidates (``--extras``) one
record gives the wall and CPU seconds of the whole two-stage search and of each stage, the
share of a fixed sample of ``--sample`` source and target queries (seed 0) whose top-1 is the
exact one, recall@k and the share of all rows whose k list equals the exact list (how often a
true neighbour was not among the candidates), and the share of the exactly mined pairs (ratio
margin, k = 4, max retrieval) that the two-stage lists mine too. Scores of the neighbours found
are exact: ``max_sim_error`` is their largest difference from the exact search's.

At 1M a side the whole exact search is too dear: ``--sample-only`` computes exact lists for the
sampled queries alone (2 × sample × n pairs), and the two-stage lists of those queries alone
(:func:`bisent.mining.twostage.knn_twostage_queries`: the whole run's lists for those rows, at the same
reduced cost), and measures agreement on them (no mined-pair recall; its seconds are the sample's,
not the whole search's: time ``bisent mine --index twostage`` for that).

Usage: python benchmarks/knn_twostage.py SRC.vec TGT.vec [--n 100000] [--dims 96,128,192] [--extras 8,16,32]
       [--sample-only]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bisent.bench.common import Recorder, add_results_option, exact_anchor, first_rows, peak_rss_mb
from bisent.encoders.shards import Shards
from bisent.mining.index import KNN, sample_rows
from bisent.mining.retrieval import retrieve
from bisent.mining.scoring import Scorer
from bisent.mining.twostage import knn_twostage, knn_twostage_queries
from bisent.threads import default_threads


def _rows16(sh: Shards, n: int):
    """The first ``n`` rows of a vectors folder in their stored dtype (fp16), (n, d); the folder itself (streamed,
    never loaded whole) when ``n`` covers it."""
    return sh if n >= len(sh) else first_rows(sh, n)


def _pairs(knn: KNN, k: int) -> set[tuple[int, int]]:
    """Pairs mined from neighbour lists: ratio margin, max retrieval."""
    return {(p.src, p.tgt) for p in retrieve(Scorer("ratio", k).candidates(knn), "max")}


def _pairs_top(knn: KNN, k: int, share: float) -> set[tuple[int, int]]:
    """The best-scoring ``share`` of the mined pairs."""
    pairs = sorted(retrieve(Scorer("ratio", k).candidates(knn), "max"), key=lambda p: -p.score)
    return {(p.src, p.tgt) for p in pairs[: int(len(pairs) * share)]}


def compare(exact: KNN, got: KNN, qs: np.ndarray, qt: np.ndarray, sampled: bool = False,
            got_sampled: bool = False) -> dict:
    """Agreement of ``got`` with ``exact``: top-1 on the sampled queries, recall@k, whole k lists, score error.

    ``sampled``: ``exact`` holds the sampled queries' lists only (rows ``qs`` of X, ``qt`` of Y, in that order),
    so recall and whole lists are measured on the samples; otherwise on every row. ``got_sampled``: so does
    ``got`` (:func:`bisent.mining.twostage.knn_twostage_queries`).
    """
    out = {}
    for name, e_idx, g_idx, e_sim, g_sim, rows in (("src", exact.fwd_idx, got.fwd_idx, exact.fwd_sim, got.fwd_sim, qs),
                                                  ("tgt", exact.bwd_idx, got.bwd_idx, exact.bwd_sim, got.bwd_sim, qt)):
        if sampled:
            if not got_sampled:
                g_idx, g_sim = g_idx[rows], g_sim[rows]
            top = slice(None)
        else:
            top = rows
        out[f"top1_agreement_{name}"] = round(float(np.mean(g_idx[top, 0] == e_idx[top, 0])), 4)
        found = (g_idx[:, :, None] == e_idx[:, None, :]).any(axis=1)                 # (rows, k) exact neighbour found
        out[f"recall_at_k_{name}"] = round(float(found.mean()), 5)
        out[f"k_lists_exact_{name}"] = round(float(np.mean(np.all(g_idx == e_idx, axis=1))), 5)
        same = g_idx == e_idx
        out[f"max_sim_error_{name}"] = float(np.max(np.abs(g_sim[same] - e_sim[same]), initial=0.0))
    out["top1_agreement"] = round((out["top1_agreement_src"] * len(qs) + out["top1_agreement_tgt"] * len(qt))
                                  / (len(qs) + len(qt)), 4)
    return out


def sampled_anchor(x, y, k: int, qs: np.ndarray, qt: np.ndarray):
    """Exact lists of the sampled queries only (``qs`` of X among Y, ``qt`` of Y among X), with wall and CPU
    seconds: a KNN whose rows are the samples', for sizes where the whole exact search is too dear."""
    from bisent.mining.index import knn_both

    t, c = time.perf_counter(), time.process_time()
    f = knn_both(sample_rows(x, qs), y, k, progress=False)
    b = knn_both(sample_rows(y, qt), x, k, progress=False)
    return KNN(f.fwd_sim, f.fwd_idx, b.fwd_sim, b.fwd_idx), time.perf_counter() - t, time.process_time() - c


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("tgt")
    ap.add_argument("--n", type=int, default=100_000, help="rows taken from each side (the first n)")
    ap.add_argument("--sample", type=int, default=10_000, help="queries per direction whose top-1 is compared")
    ap.add_argument("--dims", default="192", help="reduced dimensions of the first stage")
    ap.add_argument("--extras", default="16", help="candidates kept beyond k and re-scored")
    ap.add_argument("--label", default="", help="what the vectors are (encoder, data), copied into the records")
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--sample-only", action="store_true",
                    help="exact and two-stage lists of the sampled queries only (for 1M a side: 2 × sample × n "
                         "pairs instead of n × m); no mined-pair recall, and the seconds are the sample's; vectors "
                         "streamed from the folders when --n covers them")
    ap.add_argument("--exact-cache", default=None,
                    help="an .npz keeping the exact anchor between runs on the same rows "
                         "(its timing is the run that computed it)")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("knn_twostage", args.results or None, echo=lambda line: print(line, flush=True))
    x, y = _rows16(Shards(args.src), args.n), _rows16(Shards(args.tgt), args.n)
    n, m = len(x), len(y)
    base = {"label": args.label, "encoder": Shards(args.src).manifest.get("encoder"), "n": n, "m": m,
            "d": int(x.shape[1]), "k": args.k, "threads": default_threads()}
    rng = np.random.default_rng(0)
    qs = np.sort(rng.choice(n, size=min(args.sample, n), replace=False))       # source queries
    qt = np.sort(rng.choice(m, size=min(args.sample, m), replace=False))       # target queries
    if args.sample_only:
        exact, t_exact, c_exact = sampled_anchor(x, y, args.k, qs, qt)
        reused = False
    else:
        exact, t_exact, c_exact, reused = exact_anchor(x, y, args.k, args.exact_cache)
    record({"bench": "knn_twostage", **base, "method": "exact", "sample_only": args.sample_only,
            "seconds": round(t_exact, 2), "cpu_seconds": round(c_exact, 2), "reused": reused,
            "peak_rss_mb": peak_rss_mb()})
    if not args.sample_only:
        exact_pairs = _pairs(exact, args.k)
        exact_top = _pairs_top(exact, args.k, 0.3)
    for dim in (int(v) for v in args.dims.split(",")):
        for extra in (int(v) for v in args.extras.split(",")):
            stages: dict = {}
            t, c = time.perf_counter(), time.process_time()
            if args.sample_only:      # the sampled rows' lists, equal to the whole run's (tests/test_twostage.py)
                got = knn_twostage_queries(x, y, qs, qt, args.k, dim=dim, extra=extra)
            else:
                got = knn_twostage(x, y, args.k, dim=dim, extra=extra, stats=stages)
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            mined = {}
            if not args.sample_only:
                pairs = _pairs(got, args.k)
                mined = {"mined_pairs_recall": round(len(exact_pairs & pairs) / max(1, len(exact_pairs)), 5),
                         "mined_top30_recall": round(len(exact_top & pairs) / max(1, len(exact_top)), 5)}
            record({"bench": "knn_twostage", **base, "method": "twostage", "dim": dim, "extra": extra,
                    "seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "stages": stages,
                    "sample": len(qs) + len(qt), **compare(exact, got, qs, qt, sampled=args.sample_only,
                                                           got_sampled=args.sample_only),
                    **mined, "anchor_exact_seconds": round(t_exact, 2), "anchor_exact_cpu_seconds": round(c_exact, 2),
                    "cpu_speedup": None if args.sample_only else round(c_exact / cpu, 2),
                    "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()

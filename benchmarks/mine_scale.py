"""Mining at scale with the compressed index: `bisent data scale` → `bisent embed` → `bisent mine --index compressed`.

One command; each stage runs as the command a user types, in a fresh process, with its wall time, peak RSS
(the process's VmHWM) and the load average. The mining target is "vectors given": ``mine_seconds`` is the
`bisent mine` process alone. Then, in this process:

- the mined pairs' gold P/R/F1 at the F1-best threshold (the BUCC convention);
- agreement with the exact search on a fresh sample (``--sample`` sources and as many targets, seed 7, not the
  calibration's): the run's index rebuilt with the parameters and probes the run reported (same code, same
  seed), each sampled query's list found by it and by the exact search, and ``mined_pair_agreement`` = the
  share of the exact search's mined pairs (:class:`bisent.mining.compressed.PairSample`: each query's best
  candidate by the ratio margin, the candidates' neighbourhoods exact, the pairs a run keeps: the sample's
  best-scoring 5 %) that the run finds, a backward one whichever direction finds it as under ``max`` retrieval
  (each direction's own lists: ``lists_pair_agreement_fwd`` / ``_bwd``); the same over every sampled query's best
  pair (``every_query_pair_agreement``, 500 queries) and the top-1 agreement;
- ``mine_projection``: 10M and 100M a side from the measured stage times, with its assumptions (a projection,
  not a measurement).

Usage (one command; WORK keeps the data and vectors for a rerun):
    python benchmarks/mine_scale.py --size 1000000 -e ENCODER --work WORK [--results benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from bisent.bench.common import Recorder, add_results_option
from mine_memory import run_measured
from scale import _best_f1, _bisent, _mined, _placeholders

#: fewest sentences a side whose stage times are projected to larger sizes
PROJECT_FROM = 100_000


def _summary(log: Path) -> dict:
    """The JSON summary `bisent mine` printed last on its standard error."""
    for line in reversed(log.read_text(encoding="utf-8", errors="replace").splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}


def sample_agreement(xs, ys, search: dict, sample: int, k: int) -> dict:
    """Top-1 and mined-pair agreement of the compressed search with the exact one on a fresh sample, both ways:
    on the pairs a run keeps (:class:`bisent.mining.compressed.PairSample`: the sample's best-scoring
    ``PAIR_TOP_SHARE``), and on every sampled query's best pair (``top_share=1``, near-ties included).

    ``mined_pair_agreement`` counts a backward pair as the run does under ``max`` retrieval: found when the
    backward lists give it or the forward lists already mine it (:meth:`PairSample.mined_by_reverse`, the forward
    lists of the pair's source searched with the forward probes); ``lists_pair_agreement_{fwd,bwd}`` are each
    direction's own lists."""
    from bisent.mining.compressed import PairSample, Params, Rows, build_side, search_side, train_lists
    from bisent.mining.index import knn_both, sample_rows
    from bisent.mining.twostage import fit_projection

    params = Params(**search["params"])
    p = fit_projection(xs, ys, params.dim)
    out: dict = {"kept": [], "every": [], "top1": [], "counted": 0, "seconds": {}, "lists": {}}
    fwd_index = None
    for direction, q_side, db in (("fwd", xs, ys), ("bwd", ys, xs)):
        t = time.perf_counter()
        index = build_side(db, p, params, train_lists(db, p, params))
        nprobe, rows = search[f"nprobe_{direction}"], Rows(db)
        kept = PairSample(q_side, db, k, sample=sample, seed=7)
        every = PairSample(q_side, db, k, sample=min(sample, 500), top_share=1.0, seed=7)
        out["counted"] += len(kept.queries)
        out["lists"][direction] = kept.agreement(index, p, rows, params.extra, nprobe)
        if direction == "bwd" and fwd_index is not None and len(kept.queries):
            truth = np.unique(kept.truth)                          # a source may be the pair of several targets
            sim, idx = search_side(fwd_index, sample_rows(xs, truth), p, Rows(ys), k, params.extra,
                                   search["nprobe_fwd"])
            rev_sim = np.zeros((len(xs), sim.shape[1]), dtype=np.float32)
            rev_idx = np.zeros((len(xs), idx.shape[1]), dtype=np.int64)
            rev_sim[truth], rev_idx[truth] = sim, idx
            kept.mined_by_reverse(rev_sim, rev_idx)
        out["kept"].append(kept.agreement(index, p, rows, params.extra, nprobe) * len(kept.queries))
        out["every"].append(every.agreement(index, p, rows, params.extra, nprobe))
        exact = knn_both(every.qs, db, 1, progress=False)
        out["top1"].append(float(np.mean(exact.fwd_idx[:, 0] == search_side(index, every.qs, p, rows, 1,
                                                                             params.extra, nprobe)[1][:, 0])))
        out["seconds"][direction] = round(time.perf_counter() - t, 1)
        fwd_index = index if direction == "fwd" else None
    return {"sample": sample, "pairs_counted": out["counted"],
            "mined_pair_agreement": round(sum(out["kept"]) / max(out["counted"], 1), 4),
            **{f"lists_pair_agreement_{d}": round(a, 4) for d, a in out["lists"].items()},
            "every_query_pair_agreement": round(float(np.mean(out["every"])), 4),
            "knn_top1_agreement": round(float(np.mean(out["top1"])), 4), "sample_seconds": out["seconds"]}


def projection(stages: dict, n: int, m: int, to: int, nodes: int = 1) -> dict:
    """Seconds at ``to`` × ``to`` from the stage times measured at n × m (assumptions in the record)."""
    grow, side = to / max(n, m), to / m
    search = sum(stages.get(f"search_{d}", 0) for d in ("fwd", "bwd")) * (to / n) * np.sqrt(side)
    linear = sum(v for key, v in stages.items() if not key.startswith("search_")) * grow
    return {"to": f"{to}x{to}", "nodes": nodes, "projection": True,
            "mine_seconds": round(linear + search / nodes),
            "assumptions": "the index builds, the projection and the calibration grow linearly in rows (a fixed "
                           "calibration sample whose exact lists scan every row; the coarse assignment, nlist x dim "
                           "a row, taken as linear although a flat quantiser's grows as rows x sqrt(rows)); "
                           "the search as queries x sqrt(indexed rows) (8 sqrt(m) lists, the same probes); "
                           "the search divided evenly over the nodes; reading the vectors not counted"}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="sentences a side (bisent data scale --size)")
    ap.add_argument("-e", "--encoder", default="char-ngram")
    ap.add_argument("--data", default=None, help="a built benchmark folder (default: built under --work)")
    ap.add_argument("--work", default=None, help="folder for the data, vectors and outputs (default: a temp folder)")
    ap.add_argument("--sample", type=int, default=2000, help="queries a direction compared with exact search")
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--reuse-vectors", action="store_true", help="keep vectors already in WORK (same encoder)")
    ap.add_argument("--cache", action="store_true", help="embed through the embedding cache (the target is "
                                                         "\"vectors given\": the embedding time is not the figure)")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("mine_scale", args.results or None, echo=lambda line: print(line, flush=True))
    with tempfile.TemporaryDirectory(prefix="bisent-mine-scale-") as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        run(args, work, record)


def run(args, work: Path, record) -> None:
    from bisent.datasets.scale import read_gold
    from bisent.encoders.shards import Shards

    env = {**os.environ, "BISENT_NO_EMBED_CACHE": "0" if args.cache else "1"}
    log = work / "stderr.txt"
    data = Path(args.data) if args.data else work / "data"
    base = {"encoder": args.encoder, "cache": bool(args.cache)}
    measured: dict[str, dict] = {}

    def stage(name: str, argv: list[str]) -> None:
        t = time.perf_counter()
        rc, peak = run_measured(_bisent(argv), env, log)
        load = os.getloadavg()[0]
        measured[name] = {"seconds": round(time.perf_counter() - t, 1), "peak_rss_mb": round(peak / 2**20, 1),
                          "load_average": round(load, 2)}
        record({"bench": "mine_scale_stage", **base, "stage": name, "exit": rc, **measured[name],
                **({"note": "shared machine"} if load > 2.5 else {}),
                "stage_command": _placeholders("bisent " + " ".join(argv), work, data)})
        if rc:
            raise SystemExit(f"stage {name} failed (exit {rc}); its stderr is above")

    if not (data / "stats.json").is_file():
        stage("data", ["data", "scale", "--size", str(args.size), "-o", str(data)])
    stats = json.loads((data / "stats.json").read_text(encoding="utf-8"))
    n, m = stats["src_sentences"], stats["tgt_sentences"]
    base.update(size=stats["size"], src=n, tgt=m, gold_pairs=stats["gold_pairs"])
    vec = {side: work / f"{side}.{args.encoder.replace('/', '_')}.vec" for side in ("src", "tgt")}
    for side, lang in (("src", "en"), ("tgt", "de")):
        if not (args.reuse_vectors and (vec[side] / "manifest.json").is_file()):
            stage(f"embed_{side}", ["embed", str(data / f"{side}.txt"), "-l", lang, "-e", args.encoder,
                                    "-o", str(vec[side]), "--force"])
    out = work / "mined.compressed.tsv"
    stage("mine", ["mine", str(data / "src.txt"), str(data / "tgt.txt"), "-l", "en", "-L", "de",
                   "--src-vectors", str(vec["src"]), "--tgt-vectors", str(vec["tgt"]), "-k", str(args.k),
                   "--index", "compressed", "--line-numbers", "--threshold", "none", "-o", str(out)])
    search = _summary(log).get("search", {})
    gold = _best_f1(_mined(out), set(read_gold(data)))
    agreement = sample_agreement(Shards(vec["src"]), Shards(vec["tgt"]), search, args.sample, args.k) \
        if "params" in search else {}
    mine = measured["mine"]
    record({"bench": "mine_compressed", **base, "mine_seconds": mine["seconds"], "peak_rss_mb": mine["peak_rss_mb"],
            "load_average": mine["load_average"], **({"note": "shared machine"} if mine["load_average"] > 2.5 else {}),
            **agreement, "gold": gold, "search": search,
            "embed_seconds": sum(v["seconds"] for key, v in measured.items() if key.startswith("embed_")) or None})
    stages = search.get("stages", {})
    if stages and min(n, m) >= PROJECT_FROM:       # below, fixed costs (start-up, compilation) dominate the stages
        for to, nodes in ((1_000_000, 1), (10_000_000, 1), (100_000_000, 1), (100_000_000, 16)):
            record({"bench": "mine_projection", **base, **projection(stages, n, m, to, nodes)})


if __name__ == "__main__":
    main()

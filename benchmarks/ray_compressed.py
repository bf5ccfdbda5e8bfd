"""The compressed search on one machine against a local Ray cluster of 1 and of 2 workers: throughput, the same pairs.

Real vectors: the first ``--rows`` rows of two vectors folders (e.g. a student's vectors of `bisent data scale`'s
text). Each configuration runs in a fresh process whose thread counts (BLAS, OpenMP and so FAISS, numba) are set
before anything is imported:

- ``one_machine``: :func:`bisent.mining.plan.knn_compressed` in the process, ``--one-threads`` threads (default 1);
- ``ray_local``: the same plan with :class:`bisent.cluster.ray_compressed.RaySearch` on a local Ray of W workers
  (``--workers``, default 1,2) of one thread each (the worker's FAISS and numba thread counts are recorded); the
  driver (projection, lists, indexes, probe calibration, margins) at one thread, as ``one_machine`` at 1.

Parameters: :func:`bisent.mining.compressed.compressed_params` of the rows (whatever its current rule), probes
calibrated as `bisent mine --index compressed` calibrates them. Recorded for each run: the stage seconds;
``search_seconds`` (the query shards, both ways) and ``queries_per_second`` = 2 × rows / search_seconds (the part
Ray spreads); ``mine_seconds`` (kNN both ways, ratio margin, max retrieval; Ray's start apart); peak RSS of the
driver and of each worker (``peak_rss_mb``: their sum); the load average before and after; whether the lists and
the mined pairs are byte for byte those of ``one_machine`` at its first thread count (the anchor, measured in the
same run); ``mined_pair_agreement``: the share of the exact search's mined pairs, on a fresh sample of queries a
direction (seed 7), that the run's own lists also mine (ratio margin, candidates' neighbourhoods exact, no
threshold; both directions pooled).

For the projection to larger sizes (``benchmarks/ray_projection.py``) the anchor run also times, apart, one query
shard of :data:`~bisent.mining.compressed.BLOCK` rows (projection and search by the codes; exact re-ranking) and
the index's serialisation into and out of the bytes shipped to the workers.

Usage:
    python benchmarks/ray_compressed.py --src SRC.vec --tgt TGT.vec [--rows 262144] [--workers 1,2]
        [--one-threads 1] [--sample 500] [--results benchmarks/results]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: thread variables set in each configuration's process before NumPy, FAISS and numba load
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                    "BISENT_THREADS")
K = 4


def _sides(args):
    import numpy as np

    from bisent.encoders.shards import RowView, Shards

    out = []
    for folder in (args.src, args.tgt):
        sh = Shards(folder)
        if len(sh) < args.rows:
            raise SystemExit(f"{folder}: {len(sh)} rows, fewer than --rows {args.rows}")
        out.append(RowView(sh, np.arange(args.rows)))
    return out


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def _rss() -> dict:
    """This process's resident memory now: anonymous and file-backed (memory-mapped vectors) MiB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:")):
                out[line.split(":")[0].lower().replace("rss", "rss_") + "_mb"] = round(int(line.split()[1]) / 1024, 1)
    return out


def timed_shard(probe_dir: str):
    """The Ray task :func:`~bisent.cluster.ray_compressed.search_shard`, also appending its worker's seconds, CPU
    seconds, peak RSS and thread counts to ``probe_dir/PID.jsonl``."""
    def task(*args):
        import resource

        import faiss
        import numba

        from bisent.cluster.ray_compressed import search_shard

        t, c = time.perf_counter(), time.process_time()
        out = search_shard(*args)
        rec = {"rows": int(args[4] - args[3]), "seconds": time.perf_counter() - t,
               "cpu_seconds": time.process_time() - c,
               "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "faiss_threads": faiss.omp_get_max_threads(), "numba_threads": numba.get_num_threads(), **_rss()}
        with open(os.path.join(probe_dir, f"{os.getpid()}.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
        return out
    return task


def shard_costs(x, y, state: Path, nprobe: int, params: dict) -> dict:
    """One query shard of x among y's index, timed apart: projection + search by the codes, exact re-ranking; and the
    index's serialisation (driver) and deserialisation (each task)."""
    import faiss
    import numpy as np

    from bisent.encoders.shards import iter_blocks
    from bisent.mining.compressed import BLOCK, Rows, rerank

    index = faiss.read_index(str(state / "index-tgt.faiss"))
    with np.load(state / "projection.npz") as z:
        p = z["p"]
    faiss.extract_index_ivf(index).nprobe = int(nprobe)
    _, b = next(iter(iter_blocks(x, BLOCK)))
    t, c = time.perf_counter(), time.process_time()
    qb = np.asarray(b, dtype=np.float32)
    cand = index.search(np.ascontiguousarray(qb @ p), K + params["extra"])[1]
    codes, codes_cpu = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    rerank(qb, Rows(y), cand, K)
    rr, rr_cpu = time.perf_counter() - t, time.process_time() - c
    t = time.perf_counter()
    blob = faiss.serialize_index(index)
    ser = time.perf_counter() - t
    t = time.perf_counter()
    faiss.deserialize_index(blob)
    de = time.perf_counter() - t
    return {"shard_rows": len(qb), "shard_indexed_rows": int(index.ntotal), "shard_codes_seconds": round(codes, 3),
            "shard_rerank_seconds": round(rr, 3), "shard_codes_cpu_seconds": round(codes_cpu, 3),
            "shard_rerank_cpu_seconds": round(rr_cpu, 3), "index_bytes": int(blob.nbytes),
            "index_serialise_seconds": round(ser, 3), "index_deserialise_seconds": round(de, 3)}


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def child(args) -> None:
    """One configuration in this fresh process: one JSON line on standard output, the lists in ``--out``."""
    import numpy as np

    from bisent.bench.common import peak_rss_mb
    from bisent.mining.plan import knn_compressed
    from bisent.mining.retrieval import retrieve
    from bisent.mining.scoring import Scorer

    x, y = _sides(args)
    out_dir = Path(args.out)
    state = out_dir / "state"
    stats: dict = {}
    res: dict = {}
    if args.child == "one":
        t = time.perf_counter()
        knn = knn_compressed(x, y, K, stats=stats, state=state, threads=args.threads)
    else:
        from bisent.cluster.ray_compressed import RaySearch
        from bisent.cluster.ray_session import ray_session

        probes = out_dir / "workers"
        probes.mkdir()
        t0 = time.perf_counter()
        with ray_session("local", threads=1, workers=int(args.workers)) as ray:
            up = ray.remote(num_cpus=1)(_sleep)
            ray.get([up.remote(1) for _ in range(int(args.workers))])          # every worker started
            res["ray_start_seconds"] = round(time.perf_counter() - t0, 2)
            t = time.perf_counter()
            knn = knn_compressed(x, y, K, stats=stats, state=state, threads=1,
                                 executor=RaySearch(threads=1, shard_fn=timed_shard(str(probes))))
            tasks = [json.loads(line) for f in sorted(probes.iterdir()) for line in f.read_text().splitlines()]
            by_pid: dict[str, list] = {}
            for f in sorted(probes.iterdir()):
                by_pid[f.stem] = [json.loads(line) for line in f.read_text().splitlines()]
            worker_peaks = [round(max(r["peak_rss_mb"] for r in v), 1) for v in by_pid.values()]
            res["worker_rss_at_end_mb"] = [{key: v[-1][key] for key in ("rss_anon_mb", "rss_file_mb") if key in v[-1]}
                                           for v in by_pid.values()]
            res.update(tasks=len(tasks), worker_processes=len(by_pid), worker_peak_rss_mb=worker_peaks,
                       worker_threads=sorted({(r["faiss_threads"], r["numba_threads"]) for r in tasks}),
                       task_seconds=round(sum(r["seconds"] for r in tasks), 2),
                       task_cpu_seconds=round(sum(r["cpu_seconds"] for r in tasks), 2))
    t_knn = time.perf_counter() - t
    t1 = time.perf_counter()
    pairs = retrieve(Scorer("ratio", K).candidates(knn), "max")
    pairs.sort(key=lambda p: (-p.score, p.src, p.tgt))
    res["score_seconds"] = round(time.perf_counter() - t1, 2)
    res["mine_seconds"] = round(time.perf_counter() - t, 2)
    res["knn_seconds"] = round(t_knn, 2)
    res["pairs"] = len(pairs)
    res["pairs_sha"] = _digest(np.array([(p.src, p.tgt) for p in pairs], dtype=np.int64),
                               np.array([p.score for p in pairs], dtype=np.float64))
    res["lists_sha"] = _digest(knn.fwd_sim, knn.fwd_idx, knn.bwd_sim, knn.bwd_idx)
    res["driver_peak_rss_mb"] = peak_rss_mb()
    res["driver_rss_at_end_mb"] = _rss()
    res["stats"] = stats
    np.savez(out_dir / "lists.npz", fwd_sim=knn.fwd_sim, fwd_idx=knn.fwd_idx, bwd_sim=knn.bwd_sim,
             bwd_idx=knn.bwd_idx)
    if args.child == "one" and args.shard_costs:
        res["shard_costs"] = shard_costs(x, y, state, stats["nprobe_fwd"], stats["params"])
    print(json.dumps(res), flush=True)


def _run(kind: str, args, threads: int, workers: int, out: Path) -> dict:
    env = {**os.environ, **{v: str(threads) for v in THREAD_VARIABLES}}
    out.mkdir(parents=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--src", args.src, "--tgt", args.tgt,
           "--rows", str(args.rows), "--threads", str(threads), "--workers", str(workers), "--out", str(out)]
    if kind == "one" and not args.shard_costs_done:
        cmd.append("--shard-costs")
        args.shard_costs_done = True
    load = os.getloadavg()[0]
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if r.returncode:
        raise SystemExit(f"the {kind} run (threads {threads}, workers {workers}) failed (exit {r.returncode}); "
                         f"its stderr is above")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return {**res, "load_avg_1min_before": round(load, 2), "load_avg_1min_after": round(os.getloadavg()[0], 2)}


def exact_sample(x, y, sample: int) -> dict:
    """Per direction: the sampled query rows (seed 7), their exact lists and the indexed side."""
    import numpy as np

    from bisent.mining.index import knn_both, sample_rows

    out = {}
    for direction, q_side, db in (("fwd", x, y), ("bwd", y, x)):
        rows = np.sort(np.random.default_rng(7).choice(len(q_side), size=min(sample, len(q_side)), replace=False))
        out[direction] = (rows, knn_both(sample_rows(q_side, rows), db, K, progress=False), q_side, db)
    return out


def agreement(truth: dict, lists: Path, r_cache: dict) -> float:
    """The share of the exact search's sample pairs that the lists saved at ``lists`` also give (pooled)."""
    import numpy as np

    from bisent.mining.compressed import best_pairs, neighbourhood_means

    def pairs(sim, idx, r):
        return set(enumerate(best_pairs(sim, idx, r, "ratio")[0].tolist()))

    agree = total = 0
    with np.load(lists) as z:
        for direction, (rows, exact, q_side, db) in truth.items():
            sim, idx = z[f"{direction}_sim"][rows], z[f"{direction}_idx"][rows]
            r = r_cache.setdefault(direction, {})
            neighbourhood_means(np.concatenate([exact.fwd_idx.reshape(-1), idx.reshape(-1)]), db, q_side, K, r)
            want, got = pairs(exact.fwd_sim, exact.fwd_idx, r), pairs(sim, idx, r)
            agree, total = agree + len(want & got), total + len(want)
    return round(agree / max(total, 1), 4)


def main(argv=None) -> None:
    from bisent.bench.common import add_results_option

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="source vectors folder")
    ap.add_argument("--tgt", required=True, help="target vectors folder")
    ap.add_argument("--rows", type=int, default=262144,
                    help="first rows of each side (default 4 query shards of 65,536 a direction, so 2 workers "
                         "share them evenly)")
    ap.add_argument("--workers", default="1,2", help="local Ray sizes, workers of one thread")
    ap.add_argument("--one-threads", default="1", help="thread counts of the one-machine runs (the first: anchor)")
    ap.add_argument("--sample", type=int, default=500, help="queries a direction compared with the exact search")
    ap.add_argument("--work", default=None, help="folder for the runs' lists and state (default: a temp folder)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--shard-costs", action="store_true", help=argparse.SUPPRESS)
    add_results_option(ap)
    args = ap.parse_args(argv)
    if args.child:
        return child(args)
    args.shard_costs_done = False
    with tempfile.TemporaryDirectory(prefix="bisent-ray-compressed-") as tmp:
        run(args, Path(args.work or tmp))


def run(args, work: Path) -> None:
    from bisent.bench.common import Recorder
    from bisent.encoders.shards import Shards

    record = Recorder("mine_ray_compressed", args.results or None, echo=lambda line: print(line, flush=True))
    record.context["command"] = record.context["command"].replace(args.src, "SRC.vec").replace(args.tgt, "TGT.vec")
    manifest = Shards(args.src).manifest
    base = {"src": args.rows, "tgt": args.rows, "dim": manifest["dim"], "k": K,
 "data": f"first {args.rows} rows of each side's vectors",
            "encoder": manifest.get("encoder"), "src_input": manifest.get("input"),
            "tgt_input": Shards(args.tgt).manifest.get("input"), "cpus": os.cpu_count()}
    runs = [("one", t, 1) for t in map(int, args.one_threads.split(","))] + \
        [("ray", 1, w) for w in map(int, args.workers.split(","))]
    results = []
    for i, (kind, threads, workers) in enumerate(runs):
        results.append(_run(kind, args, threads, workers, work / f"run{i}-{kind}-{threads}-{workers}"))
    x, y = _sides(args)
    t = time.perf_counter()
    truth = exact_sample(x, y, args.sample)
    r_cache: dict = {}
    anchor = results[0]
    one_qps = ray1_qps = None
    for i, ((kind, threads, workers), res) in enumerate(zip(runs, results)):
        stats = res["stats"]
        stages = stats.get("stages", {})
        search = stages.get("search_fwd", 0) + stages.get("search_bwd", 0)
        qps = round(2 * args.rows / search, 1) if search else None
        one_qps = one_qps or qps
        if kind == "ray" and workers == 1:
            ray1_qps = qps
        load = max(res["load_avg_1min_before"], res["load_avg_1min_after"])
        rec = {"bench": "one_machine" if kind == "one" else "ray_local", **base,
               "threads": threads, **({"workers": workers, "threads_per_worker": 1} if kind == "ray" else {}),
               "mine_seconds": res["mine_seconds"], "knn_seconds": res["knn_seconds"],
               "score_seconds": res["score_seconds"], "search_seconds": round(search, 2), "queries_per_second": qps,
               "throughput_vs_one_machine": round(qps / one_qps, 3) if qps and one_qps else None,
               **({"throughput_vs_ray_1_worker": round(qps / ray1_qps, 3)} if kind == "ray" and ray1_qps else {}),
               "peak_rss_mb": round(res["driver_peak_rss_mb"] + sum(res.get("worker_peak_rss_mb", [])), 1),
               "driver_peak_rss_mb": res["driver_peak_rss_mb"],
               "driver_rss_at_end_mb": res["driver_rss_at_end_mb"],
               "mined_pair_agreement": agreement(truth, work / f"run{i}-{kind}-{threads}-{workers}" / "lists.npz",
                                                 r_cache),
               "agreement_sample": args.sample, "pairs": res["pairs"],
               "same_pairs_as_one_machine": res["pairs_sha"] == anchor["pairs_sha"],
               "same_lists_as_one_machine": res["lists_sha"] == anchor["lists_sha"],
               "params": stats.get("params"), "nprobe_fwd": stats.get("nprobe_fwd"),
               "nprobe_bwd": stats.get("nprobe_bwd"), "stages": stages,
               **{key: res[key] for key in ("ray_start_seconds", "tasks", "worker_processes", "worker_peak_rss_mb",
                                            "worker_rss_at_end_mb",
                                            "worker_threads", "task_seconds", "task_cpu_seconds", "shard_costs")
                  if key in res},
               "load_avg_1min_before": res["load_avg_1min_before"], "load_avg_1min_after": res["load_avg_1min_after"],
               **({"note": "shared machine"} if load > 2.5 else {})}
        record(rec)
    print(json.dumps({"exact_sample_seconds": round(time.perf_counter() - t, 1)}), file=sys.stderr)


if __name__ == "__main__":
    for _v in THREAD_VARIABLES:     # this process's own sample search at one thread (each run sets its own)
        os.environ.setdefault(_v, "1")
    main()

"""Mining on Ray against one machine: wall time, blocks per second by workers, per-block cost.

Random unit fp16 vectors (N × N, d), ratio margin, max retrieval, exact kNN. Each
configuration runs in a fresh process (BLAS threads are fixed when a process starts):

- ``one_machine``: :func:`bisent.mining.retrieval.mine` in one process with 1 and with 2 BLAS threads;
- ``ray_local``: the same through :class:`~bisent.mining.blocks.BlockScorer` on a local Ray
  with W workers of 1 thread (W = 1, 2): seconds of the mining (Ray already started) and of
  Ray's start, blocks per second, the CPU seconds each block took in its worker and the
  driver's (merging, scoring), and whether the pairs equal the one-machine pairs.

The machine's load average is recorded beside each figure (a shared machine skews wall time).

Usage: python benchmarks/ray_mine.py [--n 32768] [--d 512] [--block-rows 4096] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

from bisent.bench.common import Recorder, add_results_option


def _pairs_digest(pairs) -> str:
    return hashlib.sha256(json.dumps([(p.score, p.src, p.tgt) for p in pairs]).encode()).hexdigest()[:16]


def timed_knn_block(*args):
    """:func:`~bisent.mining.blocks.knn_block` and the CPU seconds it took in its worker."""
    from bisent.mining.blocks import knn_block

    c = time.process_time()
    result = knn_block(*args)
    return result, time.process_time() - c


class TimedRay:
    """A RayExecutor whose jobs also report their CPU time (summed in ``cpu_seconds``)."""

    def __init__(self):
        from bisent.cluster.ray_mine import RayExecutor

        self.inner, self.cpu_seconds = RayExecutor(threads=1, block_fn=timed_knn_block), 0.0

    def run(self, jobs):
        for key, (result, cpu) in self.inner.run(jobs):
            self.cpu_seconds += cpu
            yield key, result


def child(kind: str, n: int, d: int, block: int, workers: int) -> None:
    """Run one configuration in this (fresh) process; print its figures as one JSON line."""
    from bisent.mining.blocks import BlockScorer
    from bisent.mining.retrieval import mine
    from bisent.mining.scoring import Scorer
    from knn import random_unit_fp16

    x, y = random_unit_fp16(n, d, 1), random_unit_fp16(n, d, 2)
    out = {}
    if kind == "one":
        t, c = time.perf_counter(), time.process_time()
        pairs = mine(x, y, Scorer("ratio", 4), progress=False)
        out["seconds"], out["cpu_seconds"] = time.perf_counter() - t, time.process_time() - c
    else:
        from bisent.cluster.ray_session import ray_session

        t0 = time.perf_counter()
        with ray_session("local", threads=1, workers=workers) as ray:
            ray.get([ray.remote(lambda: 0).remote() for _ in range(workers)])   # workers up
            out["start_seconds"] = time.perf_counter() - t0
            executor = TimedRay()
            scorer = BlockScorer("ratio", 4, block=block, executor=executor)
            t, c = time.perf_counter(), time.process_time()
            pairs = mine(x, y, scorer, progress=False)
            out["seconds"], out["driver_cpu_seconds"] = time.perf_counter() - t, time.process_time() - c
        out["blocks"], out["task_cpu_seconds"] = scorer.counts_["blocks"], executor.cpu_seconds
    out["pairs_sha"] = _pairs_digest(pairs)
    print(json.dumps(out), flush=True)


def _run(kind: str, args, threads: int, workers: int = 1) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads)}
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--n", str(args.n), "--d", str(args.d),
           "--block-rows", str(args.block_rows), "--workers", str(workers)]
    load = os.getloadavg()[0]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return {**json.loads(r.stdout.strip().splitlines()[-1]), "load_avg_1min_before": round(load, 2),
            "load_avg_1min_after": round(os.getloadavg()[0], 2)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=32768)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--block-rows", type=int, default=4096)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    add_results_option(ap)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.n, args.d, args.block_rows, int(args.workers))
    record = Recorder("ray_mine", args.results or None, echo=lambda line: print(line, flush=True))
    config = {"n": args.n, "m": args.n, "d": args.d, "k": 4, "block_rows": args.block_rows, "cpus": os.cpu_count()}
    ones = {}
    for threads in (1, 2):
        r = _run("one", args, threads)
        ones[threads] = r
        record({"bench": "one_machine", **config, "threads": threads, "seconds": round(r["seconds"], 2),
                "cpu_seconds": round(r["cpu_seconds"], 2),
                "load_avg_1min_before": r["load_avg_1min_before"], "load_avg_1min_after": r["load_avg_1min_after"]})
    for w in (int(s) for s in args.workers.split(",")):
        r = _run("ray", args, 1, w)
        record({"bench": "ray_local", **config, "workers": w, "threads_per_worker": 1,
                "seconds": round(r["seconds"], 2), "ray_start_seconds": round(r["start_seconds"], 2),
                "blocks": r["blocks"], "blocks_per_second": round(r["blocks"] / r["seconds"], 3),
                "seconds_per_block_per_worker": round(r["seconds"] * w / r["blocks"], 3),
                "task_cpu_seconds_per_block": round(r["task_cpu_seconds"] / r["blocks"], 3),
                "driver_cpu_seconds": round(r["driver_cpu_seconds"], 2),
                "one_machine_cpu_seconds_per_block": round(ones[1]["cpu_seconds"] / r["blocks"], 3),
                "vs_one_machine_2_threads": round(r["seconds"] / ones[2]["seconds"], 3),
                "same_pairs_as_one_machine": r["pairs_sha"] == ones[1]["pairs_sha"] == ones[2]["pairs_sha"],
                "load_avg_1min_before": r["load_avg_1min_before"], "load_avg_1min_after": r["load_avg_1min_after"]})


if __name__ == "__main__":
    main()

"""kNN benchmark: blocked exact search against a plain sgemm of the same shapes, peak RSS, approximate search.

Prints JSON lines:
- ``knn_exact``: effective GFLOP/s of :func:`bisent.mining.index.knn_both` (2·N·M·d / time, both
  directions from one pass) beside a plain fp32 sgemm over the same tiles in the same run,
  and their ratio (target ≥ 0.8 at N = M = 100k, d = 512; run with OMP_NUM_THREADS=1 on a
  shared machine so both are measured on one core);
- ``knn_parts``: CPU seconds of each part of the search (upcasts, sgemm, the fused top-k pass, the
  final sort) timed apart on the first ``--profile-n`` rows: what the gap to sgemm is made of;
- ``knn_memory``: peak RSS of a fresh process that loads the fp16 vectors and runs the search,
  beside the fp16 vector bytes and one tile (target ≤ 1.5 × vectors + one block);
- ``knn_approx``: for IVF and HNSW, agreement of mined pairs (ratio margin, max retrieval)
  with the exact search on data with planted translation pairs, and the speed-up.

Usage: python benchmarks/knn.py [--n 100000] [--d 512] [--approx-n 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from bisent.bench.common import Recorder, add_results_option, peak_rss_mb
from bisent.mining.index import BLOCK_COLS, BLOCK_ROWS, knn_both
from bisent.mining.retrieval import mine
from bisent.mining.scoring import Scorer
from bisent.threads import default_threads


def random_unit_fp16(n: int, d: int, seed: int, block: int = 20000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty((n, d), dtype=np.float16)
    for s in range(0, n, block):
        x = rng.standard_normal((min(block, n - s), d), dtype=np.float32)
        out[s:s + len(x)] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def planted_pairs(n: int, d: int, seed: int, share: float = 0.3, noise: float = 0.6):
    """Sources and targets on a clustered manifold; ``share`` of sources have a noisy copy among targets."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(8, n // 200), d)).astype(np.float32)

    def points(count):
        p = centres[rng.integers(0, len(centres), count)] + rng.standard_normal((count, d)).astype(np.float32)
        return p / np.linalg.norm(p, axis=1, keepdims=True)

    x = points(n)
    y = points(n)
    k = int(share * n)
    src = rng.choice(n, k, replace=False)
    tgt = rng.choice(n, k, replace=False)
    y[tgt] = x[src] + noise / np.sqrt(d) * rng.standard_normal((k, d)).astype(np.float32) * 3
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    return x.astype(np.float16), y.astype(np.float16)


def plain_sgemm_seconds(x16, y16, br, bc) -> tuple[float, float]:
    """(wall, CPU) seconds of the same tiles' sgemm alone (inputs already fp32, output preallocated)."""
    x = x16.astype(np.float32)
    y = y16.astype(np.float32)
    out = np.empty((br, bc), dtype=np.float32)
    t, c = time.perf_counter(), time.process_time()
    for i in range(0, len(x), br):
        xb = x[i:i + br]
        for j in range(0, len(y), bc):
            yb = y[j:j + bc]
            np.matmul(xb, yb.T, out=out[:len(xb), :len(yb)])
    return time.perf_counter() - t, time.process_time() - c


def parts_cpu_seconds(x16, y16, k, br, bc) -> dict:
    """CPU seconds of each part of :func:`~bisent.mining.index.knn_both`'s loop, timed apart on the same tiles:
    fp16→fp32 upcasts, sgemm, the fused top-k pass, the final sort."""
    from bisent.mining.topk import empty_heaps, sort_heaps, update_tile

    n, m = len(x16), len(y16)
    fval, fids = empty_heaps(n, min(k, m))
    bval, bids = empty_heaps(m, min(k, n))
    xb, yb = np.empty((br, x16.shape[1]), np.float32), np.empty((bc, y16.shape[1]), np.float32)
    tile, bthr = np.empty(br * bc, np.float32), np.empty(bc, np.float32)
    spent = dict.fromkeys(("upcast", "sgemm", "topk", "sort"), 0.0)
    for i0 in range(0, n, br):
        c = time.process_time()
        xs = xb[:len(x16[i0:i0 + br])]
        xs[...] = x16[i0:i0 + br]
        spent["upcast"] += time.process_time() - c
        for j0 in range(0, m, bc):
            c = time.process_time()
            ys = yb[:len(y16[j0:j0 + bc])]
            ys[...] = y16[j0:j0 + bc]
            c1 = time.process_time()
            t = np.matmul(xs, ys.T, out=tile[:len(xs) * len(ys)].reshape(len(xs), len(ys)))
            c2 = time.process_time()
            update_tile(t, i0, j0, fval, fids, bval, bids, bthr)
            c3 = time.process_time()
            spent["upcast"] += c1 - c
            spent["sgemm"] += c2 - c1
            spent["topk"] += c3 - c2
    c = time.process_time()
    sort_heaps(fval, fids)
    sort_heaps(bval, bids)
    spent["sort"] = time.process_time() - c
    return spent


def memory_child(path_x: str, path_y: str, k: int, br: int, bc: int) -> None:
    """Run in a fresh process: load fp16 vectors, search, print peak RSS as JSON."""
    import faiss  # noqa: F401  (imports counted in the baseline)
    knn_both(np.ones((8, 8), np.float16), np.ones((8, 8), np.float16), k, progress=False)  # the compiled kernel too
    base = peak_rss_mb()
    x = np.load(path_x)
    y = np.load(path_y)
    knn_both(x, y, k, block_rows=br, block_cols=bc, progress=False)
    print(json.dumps({"baseline_rss": base * 2**20, "peak_rss": peak_rss_mb() * 2**20}))


def record_memory(record, config: dict, x: np.ndarray, y: np.ndarray, k: int, br: int, bc: int) -> None:
    """Peak RSS of the exact search in a fresh process, beside its budget.

    The budget: the fp16 vectors (x 1.5, the loaded arrays and a block's slack) plus, for each of the
    search's threads, one working set (the score tile and the fp32 upcasts of a row and a column block)
    and, beyond the first, one private copy of the column heaps (m x k scores and indices).
    """
    n, m, d = len(x), len(y), x.shape[1]
    with tempfile.TemporaryDirectory() as tmp:
        px, py = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        np.save(px, x)
        np.save(py, y)
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--k", str(k), "--block-rows", str(br),
                              "--block-cols", str(bc), "--child", px, py], capture_output=True, text=True, check=True)
        mem = json.loads(out.stdout.strip().splitlines()[-1])
    threads = max(1, min(default_threads(), -(-n // br)))
    vec_bytes = x.nbytes + y.nbytes
    tile_bytes = min(br, n) * min(bc, m) * 4 + (min(br, n) + min(bc, m)) * d * 4  # the score tile and the fp32 blocks
    heap_bytes = m * min(k, n) * (4 + 8)
    budget = 1.5 * vec_bytes + threads * tile_bytes + (threads - 1) * heap_bytes
    record({"bench": "knn_memory", **config, "threads": threads, "peak_rss_mb": round(mem["peak_rss"] / 2**20, 1),
           "baseline_rss_mb": round(mem["baseline_rss"] / 2**20, 1),
           "fp16_vectors_mb": round(vec_bytes / 2**20, 1), "one_block_mb": round(tile_bytes / 2**20, 1),
           "target_mb": round(budget / 2**20, 1),
           "peak_over_baseline_mb": round((mem["peak_rss"] - mem["baseline_rss"]) / 2**20, 1)})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--m", type=int, default=None)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--block-rows", type=int, default=BLOCK_ROWS)
    ap.add_argument("--block-cols", type=int, default=BLOCK_COLS)
    ap.add_argument("--approx-n", type=int, default=50_000)
    ap.add_argument("--profile-n", type=int, default=32768, help="rows a side of the per-part CPU profile")
    ap.add_argument("--skip-approx", action="store_true")
    ap.add_argument("--memory-only", action="store_true", help="only the peak-RSS run of the exact search")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("knn", args.results or None, echo=lambda line: print(line, flush=True))
    if args.child:
        return memory_child(*args.child, args.k, args.block_rows, args.block_cols)
    n, m, d, k = args.n, args.m or args.n, args.d, args.k
    br, bc = args.block_rows, args.block_cols
    config = {"n": n, "m": m, "d": d, "k": k, "block_rows": br, "block_cols": bc}

    x = random_unit_fp16(n, d, 1)
    y = random_unit_fp16(m, d, 2)
    if args.memory_only:
        return record_memory(record, config, x, y, k, br, bc)
    flops = 2.0 * n * m * d
    knn_both(x[:8], y[:8], k, progress=False)                          # compile the kernel outside the timing
    t_gemm, c_gemm = plain_sgemm_seconds(x, y, br, bc)
    t, c = time.perf_counter(), time.process_time()
    knn_both(x, y, k, block_rows=br, block_cols=bc, progress=False)
    t_knn, c_knn = time.perf_counter() - t, time.process_time() - c
    # CPU seconds beside wall seconds: on a shared machine other processes stretch the wall time of one
    # measurement and not the other; with one thread the CPU time counts only this process's own work
    record({"bench": "knn_exact", **config, "threads": default_threads(), "load_average": os.getloadavg()[0],
           "seconds": round(t_knn, 3), "gflops": round(flops / t_knn / 1e9, 2),
           "anchor_sgemm_seconds": round(t_gemm, 3), "anchor_sgemm_gflops": round(flops / t_gemm / 1e9, 2),
           "ratio_to_sgemm": round(t_gemm / t_knn, 3), "cpu_seconds": round(c_knn, 3),
           "anchor_sgemm_cpu_seconds": round(c_gemm, 3), "ratio_to_sgemm_cpu": round(c_gemm / c_knn, 3),
           "target_ratio": 0.8})

    parts = parts_cpu_seconds(x[:args.profile_n], y[:args.profile_n], k, br, bc)
    total = sum(parts.values())
    record({"bench": "knn_parts", **config, "n": min(n, args.profile_n), "m": min(m, args.profile_n),
           "cpu_seconds": {p: round(v, 3) for p, v in parts.items()},
           "share": {p: round(v / total, 4) for p, v in parts.items()},
           "ratio_to_sgemm_cpu": round(parts["sgemm"] / total, 3)})

    record_memory(record, config, x, y, k, br, bc)

    if args.skip_approx:
        return
    na = args.approx_n
    xa, ya = planted_pairs(na, d, 3)
    t = time.perf_counter()
    exact = mine(xa, ya, Scorer("ratio", k), retrieval="max")
    t_exact = time.perf_counter() - t
    top = {(p.src, p.tgt) for p in exact[: int(0.3 * na)]}
    for method, opts in (("ivf", {"nprobe": 16}), ("hnsw", {"ef_search": 64})):
        t = time.perf_counter()
        approx = mine(xa, ya, Scorer("ratio", k, knn_method=method, **opts), retrieval="max")
        t_approx = time.perf_counter() - t
        got = {(p.src, p.tgt) for p in approx[: int(0.3 * na)]}
        record({"bench": "knn_approx", "method": method, "n": na, "m": na, "d": d, "k": k, **opts,
               "agreement_top30pct_pairs": round(len(top & got) / max(len(top), 1), 4),
               "seconds": round(t_approx, 3), "anchor_exact_seconds": round(t_exact, 3),
               "speedup": round(t_exact / t_approx, 2)})


if __name__ == "__main__":
    main()

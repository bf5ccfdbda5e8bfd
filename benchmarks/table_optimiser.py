"""One optimiser step on a hashed table: :class:`~bisent.training.optim.RowAdam` against torch's SparseAdam.

The DAN student's table is ``buckets x embed_dim`` (2^20 x 256 in
the student-general recipe); a training step of that recipe looks up about
100,000 distinct rows of it (3,350 texts of the collection featurized: 112,115).
Each variant runs ``--steps`` steps of the same lookup (distinct rows, sorted,
as the DAN's ``forward`` looks them up) and loss, on ``--threads`` threads:
``row-adam`` (the training loop's optimiser of hashed tables: one compiled pass
over the rows of a CPU table), ``row-adam-torch`` (its torch path, for GPU tables,
also usable for CPU tables) and ``sparse-adam``
(``torch.optim.SparseAdam``, the anchor).

Each record gives the seconds a step (backward and optimiser step; the
optimiser step alone) and the largest difference of the table from the
anchor's after the steps. RowAdam adds Adam's epsilon where
``torch.optim.Adam`` does, to the bias-corrected root; SparseAdam adds it
before the correction, so the two differ in elements whose gradient is within
a few hundred epsilons of 0 (there by up to most of a step) and nowhere else.

Usage: ``python benchmarks/table_optimiser.py [--buckets N] [--dim E] [--rows U] [--steps S]``
"""

from __future__ import annotations

import argparse
import time

from bisent.bench.common import Recorder, add_results_option, peak_rss_mb

VARIANTS = ("row-adam", "row-adam-torch", "sparse-adam")


def run_variant(name: str, buckets: int, dim: int, rows: int, steps: int, lr: float = 0.01):
    """``steps`` steps of variant ``name``: (seconds a step for backward + step, for the step alone, the table)."""
    import torch

    from bisent.training.optim import RowAdam

    torch.manual_seed(0)
    table = torch.nn.Embedding(buckets, dim, sparse=True)
    ids = torch.randperm(buckets)[:rows].sort().values                   # (U,) distinct, sorted
    target = torch.randn(rows, dim)                                       # (U, E)
    opt = (torch.optim.SparseAdam([table.weight], lr=lr) if name == "sparse-adam"
           else RowAdam([table.weight], lr=lr, fused=name == "row-adam"))
    total = step_only = 0.0
    for i in range(steps + 1):                                            # step 0 warms up and is not timed
        opt.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        ((table(ids) - target) ** 2).sum().backward()
        t1 = time.perf_counter()
        opt.step()
        t2 = time.perf_counter()
        if i:
            total, step_only = total + t2 - t0, step_only + t2 - t1
    return total / steps, step_only / steps, table.weight.detach()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--buckets", type=int, default=1 << 20, help="table rows (default 2^20, the general student's)")
    ap.add_argument("--dim", type=int, default=256, help="table columns (the recipe's model.embed_dim)")
    ap.add_argument("--rows", type=int, default=100_000, help="distinct rows looked up a step")
    ap.add_argument("--steps", type=int, default=5, help="timed steps a variant")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the recipe trains on 1 a seed)")
    add_results_option(ap)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    record = Recorder("table_optimiser", args.results or None, echo=lambda line: print(line, flush=True),
                      options=vars(args))
    results = {name: run_variant(name, args.buckets, args.dim, args.rows, args.steps) for name in VARIANTS}
    for name, (total, step_only, table) in results.items():
        record({"bench": "table_optimiser", "variant": name, "anchor": name == "sparse-adam",
                "buckets": args.buckets, "dim": args.dim, "rows": args.rows, "steps": args.steps,
                "threads": args.threads, "s_per_step": round(total, 4), "s_optimiser_step": round(step_only, 4),
                "max_diff_vs_anchor": float((table - results["sparse-adam"][2]).abs().max()),
                "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()

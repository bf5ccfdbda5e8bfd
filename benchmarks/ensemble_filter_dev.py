"""The filter benchmark's dev run for the ensemble rule (benchmarks/README.md, "Encoder ensembles"), without the MLP
variants: the rule reads the `filter-default` pipeline's average precision only, and the MLPs would embed three
times as many training texts. Same items, code and records as `bisent bench filter --split dev` otherwise.

    python benchmarks/ensemble_filter_dev.py --pair en-de --limit 300 -e use-m3+me5-small --results benchmarks/results
"""

from __future__ import annotations

import argparse

from bisent.bench import filtering
from bisent.bench.common import Recorder, run_encoders


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("-e", "--encoder", action="append", default=[], help="encoder under test (repeatable)")
    ap.add_argument("--results", default=None, help="also append the records to DIR/filter.jsonl")
    args = ap.parse_args(argv)
    src, tgt = args.pair.split("-", 1)
    record = Recorder("filter", args.results, options={"split": "dev", "limit": args.limit, "mlp_runs": []})
    filtering.run(src, tgt, run_encoders(args.encoder), record, limit=args.limit, split="dev", mlp_runs=())


if __name__ == "__main__":
    main()

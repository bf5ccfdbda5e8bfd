"""Leave-one-out gain of a pair's end units on the filter benchmark's noisy set (dev split by default).

The ``leave_out`` step's value (``bisent.filtering.coverage.LeaveOutStep``): the cosine a pair gains when a side
loses its first or last unit. Prints, per noise kind, the share of the pairs that ``filter-default`` (and three
looser variants of it) keep which a bound on that gain would also keep, for a grid of bounds: the clean share is
what the bound costs, the noise shares what it removes.

    python benchmarks/coverage_loo.py --pair en-de --split dev
"""

from __future__ import annotations

import argparse
import copy
import json
from collections import Counter

import numpy as np
import yaml


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("-e", "--encoder", default="use-m3")
    ap.add_argument("--limit", type=int, default=4000)
    args = ap.parse_args(argv)
    from bisent.bench.filtering import build_set
    from bisent.filtering import edit_config, rank_scores
    from bisent.filtering.coverage import LeaveOutStep
    from bisent.recipes import resolve as resolve_recipe

    src, tgt = args.pair.split("-")
    items, _ = build_set(src, tgt, limit=args.limit, split=args.split)
    pairs = [(it.src, it.tgt) for it in items]
    kinds = [it.kind for it in items]
    totals = Counter(kinds)
    step = LeaveOutStep(src_lang=src, tgt_lang=tgt, encoder=args.encoder)
    gains = step.score_batch(pairs)[:, 0]
    base = yaml.safe_load(open(resolve_recipe("filter-default")))
    variants = {"filter-default": base}
    for label, edit in (("no mismatch bound", {"coverage": {"mismatch_coverage": None}}),
                        ("margin 0.85", {"margin": {"accept": {"min": 0.85}}}),
                        ("no mismatch bound, margin 0.85", {"coverage": {"mismatch_coverage": None},
                                                            "margin": {"accept": {"min": 0.85}}})):
        cfg = copy.deepcopy(base)
        for st in cfg["steps"]:
            st.update(edit.get(st.get("name", st["type"]), {}))
        variants[label] = cfg
    for label, cfg in variants.items():
        _, results = rank_scores(edit_config(cfg, encoder=args.encoder), pairs, src_lang=src, tgt_lang=tgt,
                                 return_results=True)
        kept = np.array([r.kept for r in results])
        for bound in (None, 0.0, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08):
            keep = kept if bound is None else kept & (gains <= bound)
            row = {k: round(100 * sum(1 for i, kk in enumerate(kinds) if kk == k and keep[i]) / totals[k], 2)
                   for k in sorted(totals)}
            print(json.dumps({"recipe": label, "max_gain": bound, **row}), flush=True)
    for k in sorted(totals):
        g = gains[[i for i, kk in enumerate(kinds) if kk == k]]
        print(json.dumps({"kind": k, "gain_quantiles": [round(float(q), 3) for q in np.quantile(g, [0.1, 0.5, 0.9])]}))


if __name__ == "__main__":
    main()

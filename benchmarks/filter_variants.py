"""Filter recipes side by side on the noisy LibreOffice set: clean kept against each noise kind kept, AP.

The labelled set is the one of ``bisent bench filter`` (:func:`bisent.bench.filtering.build_set`: clean
held-out pairs and six kinds of noise, of the ``--split`` documents). Each ``--config`` (a recipe name or
YAML path; repeatable) is run over it with each ``-e`` encoder (every embedding step's encoder replaced),
and one record per recipe and encoder gives what its decisions keep: ``clean_kept`` and ``kept`` (% of
each noise kind), each with its 95 % Wilson interval and the count it is a share of, and the AP of
:func:`bisent.filtering.rank_scores`. ``--train-divergence DIR`` also runs each recipe with the divergence
step ``bisent filter --train-divergence`` adds (the model in DIR, trained on the noisy set itself when DIR
holds none; its training seconds are in the record).

Usage: python benchmarks/filter_variants.py --pair en-de --split dev -c filter-default -c FILE [-e use-m3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bisent.bench.common import Recorder, add_results_option
from bisent.bench.filtering import build_set, evaluate_scores
from bisent.datasets.noise import NOISE_KINDS
from bisent.review.labels import wilson


def wilson_pct(k: int, n: int) -> list[float] | None:
    """The 95 % Wilson interval of k successes in n (:func:`bisent.review.labels.wilson`, z = 1.96), in %
    (None for n = 0)."""
    if not n:
        return None
    return [round(100 * x, 2) for x in wilson(k, n, z=1.96)]


def decisions(results, kinds: list[str]) -> dict:
    """Clean kept and each noise kind kept (%), with intervals and counts."""
    kinds_a = np.array(kinds)
    kept = np.array([r.kept for r in results])
    out: dict = {"kept": {}, "interval": {}, "n": {}}
    for kind in ("clean",) + NOISE_KINDS:
        mask = kinds_a == kind
        n, k = int(mask.sum()), int(kept[mask].sum())
        if n:
            out["kept"][kind] = round(100 * k / n, 2)
            out["interval"][kind] = wilson_pct(k, n)
            out["n"][kind] = n
    out["clean_kept"] = out["kept"].pop("clean", None)
    out["clean_interval"] = out["interval"].pop("clean", None)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("-c", "--config", action="append", required=True, help="a recipe name or YAML path (repeatable)")
    ap.add_argument("-e", "--encoder", action="append", default=None, help="encoder (repeatable; default use-m3)")
    ap.add_argument("--limit", type=int, default=4000, help="items of the noisy set (as bisent bench filter)")
    ap.add_argument("--train-divergence", default=None, metavar="DIR",
                    help="also each recipe with the divergence step of bisent filter --train-divergence DIR")
    add_results_option(ap)
    args = ap.parse_args(argv)
    from bisent.filtering import edit_config, rank_scores
    from bisent.recipes import resolve as resolve_recipe
    from bisent.training.fastdiv import ensure_model, has_model, with_divergence

    record = Recorder("filter_variants", args.results or None, echo=lambda line: print(line, flush=True))
    src, tgt = args.pair.split("-")
    items, third = build_set(src, tgt, limit=args.limit, split=args.split)
    kinds = [it.kind for it in items]
    pairs = [(it.src, it.tgt) for it in items]
    train_s = None
    encoders = args.encoder or ["use-m3"]
    if args.train_divergence and not has_model(args.train_divergence):
        # as bisent filter --train-divergence: trained on what the first recipe keeps of the set itself
        first = edit_config(resolve_recipe(args.config[0]), encoder=encoders[0])
        _, results = rank_scores(first, pairs, src_lang=src, tgt_lang=tgt, return_results=True)
        t = time.perf_counter()
        ensure_model(args.train_divergence, [r.pair for r in results if r.kept], src, tgt)
        train_s = round(time.perf_counter() - t, 1)
    for enc in encoders:
        for name in args.config:
            path = resolve_recipe(name)
            variants = [(Path(path).name, edit_config(path, encoder=enc))]
            if args.train_divergence:
                variants.append((f"{Path(path).name}+divergence",
                                 with_divergence(edit_config(path, encoder=enc), args.train_divergence)))
            for label, config in variants:
                t = time.perf_counter()
                ranks, results = rank_scores(config, pairs, src_lang=src, tgt_lang=tgt, return_results=True)
                record({"bench": "filter_variants", "pair": args.pair, "split": args.split, "third_language": third,
                        "items": len(items), "encoder": enc, "config": label, **decisions(results, kinds),
                        "ap": evaluate_scores(ranks, kinds)["ap"], "seconds": round(time.perf_counter() - t, 1),
                        **({"divergence_train_seconds": train_s} if "+divergence" in label and train_s else {})})


if __name__ == "__main__":
    main()

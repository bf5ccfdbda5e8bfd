"""Clean published pairs through a filter: the share a recipe rejects, per domain and per step.

A filter's first promise is to keep real translations. Its input here is the clean pairs of a split as
published (LibreOffice help paragraphs, gettext UI messages, Bible verses: ``bisent data``), each domain run
as one file through the recipe (so steps that learn from their input, the length ratio and the margin, see
that domain alone, as a user's file). Per domain and recipe one record: ``rejected`` (% of the pairs, with
its 95 % Wilson interval and the count), the count per rejecting step, and with ``--examples N`` the first N
rejected pairs of each step printed. The noise kinds next to it come from ``python
benchmarks/filter_variants.py`` on the same split.

Usage: python benchmarks/filter_clean.py --split dev -c filter-default [-c FILE] [--limit 1500]
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

from .common import Recorder, add_results_option
from .filter_variants import wilson_pct

#: domain -> (language pair, loader module): the clean sets a filter default is measured on
DOMAINS = {"libreoffice": ("en-de", "libreoffice"), "gettext": ("en-de", "gettext"), "bible": ("en-es", "bible")}


def clean_pairs(domain: str, split: str, limit: int | None, seed: int = 0) -> tuple[str, str, list[tuple[str, str]]]:
    """(src_lang, tgt_lang, pairs): up to ``limit`` published pairs of ``domain``'s ``split``, drawn by ``seed``
    (whole set in its order when it is smaller)."""
    import importlib

    pair, module = DOMAINS[domain]
    src, tgt = pair.split("-")
    loaded = importlib.import_module(f"bisent.datasets.{module}").load_pairs(src, tgt, split=split)
    pairs = [(p.src, p.tgt) for p in loaded]
    if limit is not None and len(pairs) > limit:
        keep = sorted(random.Random(seed).sample(range(len(pairs)), limit))
        pairs = [pairs[i] for i in keep]
    return src, tgt, pairs


def run_one(config, src: str, tgt: str, pairs, encoder: str | None = None) -> tuple[dict, list]:
    """The recipe over ``pairs`` as one input: rejected share, counts per step, and the results."""
    from ..filtering import as_pipeline, edit_config
    from ..recipes import resolve as resolve_recipe

    cfg = resolve_recipe(config) if isinstance(config, str) else config
    if encoder:
        cfg = edit_config(cfg, encoder=encoder)
    pipe = as_pipeline(cfg, src, tgt)
    results = list(pipe.run(pairs))
    by = Counter(r.reason for r in results if not r.kept)
    n, k = len(results), sum(by.values())
    return {"n": n, "rejected": round(100 * k / n, 2) if n else None, "interval": wilson_pct(k, n),
            "rejected_by": dict(by.most_common())}, results


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("-c", "--config", action="append", required=True, help="a recipe name or YAML path (repeatable)")
    ap.add_argument("-d", "--domain", action="append", choices=sorted(DOMAINS), default=None,
                    help="domain (repeatable; default all)")
    ap.add_argument("-e", "--encoder", default=None, help="every embedding step's encoder (default: the recipe's)")
    ap.add_argument("--limit", type=int, default=1500, help="pairs per domain, drawn at random (seed 0)")
    ap.add_argument("--examples", type=int, default=0, help="print this many rejected pairs per step")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("filter_clean", args.results or None, echo=lambda line: print(line, flush=True))
    for domain in args.domain or sorted(DOMAINS):
        src, tgt, pairs = clean_pairs(domain, args.split, args.limit)
        for config in args.config:
            rec, results = run_one(config, src, tgt, pairs, args.encoder)
            record({"task": "filter_clean", "domain": domain, "pair": f"{src}-{tgt}", "split": args.split,
                    "config": str(config), "encoder": args.encoder, "limit": args.limit, **rec})
            if args.examples:
                shown: Counter = Counter()
                for r in results:
                    if not r.kept and shown[r.reason] < args.examples:
                        shown[r.reason] += 1
                        score = r.score if not isinstance(r.score, float) else round(r.score, 3)
                        print(f"  [{domain} {r.reason} {score}] {r.pair[0][:100]!r} ||| {r.pair[1][:100]!r}")


if __name__ == "__main__":
    main()

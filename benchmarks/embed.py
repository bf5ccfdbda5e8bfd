"""Embedding speed: sentences/s of every registered encoder on the same 2,000 real sentences.

The sentences are the first 1,000 pairs of the LibreOffice help test split
(en and de sides, fetched from Debian's packages into the cache). The
persistent embedding cache is bypassed so every sentence is really embedded.

Usage: python benchmarks/embed.py [--pair en-de] [--n 2000] [--encoders use-m3,me5-small,...]
"""

from __future__ import annotations

import argparse
import time

from bisent.bench.common import Recorder, add_results_option, peak_rss_mb
from bisent.datasets.libreoffice import load_pairs
from bisent.encoders import REGISTRY, get_encoder


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("--n", type=int, default=2000, help="sentences in all (half per language)")
    ap.add_argument("--encoders", default=",".join(REGISTRY), help="comma-separated names or model dirs")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("embed", args.results or None, echo=lambda line: print(line, flush=True))
    src, tgt = args.pair.split("-")
    pairs = [p for p in load_pairs(src, tgt) if p.split == "test"][: args.n // 2]
    sents = {src: [p.src for p in pairs], tgt: [p.tgt for p in pairs]}
    n = sum(len(v) for v in sents.values())
    chars = sum(len(s) for v in sents.values() for s in v)
    for name in args.encoders.split(","):
        enc = get_encoder(name)
        enc.encode(sents[src][:8], src, cache=False, progress=False)  # warm up (lazy weights)
        t = time.perf_counter()
        for lang, ss in sents.items():
            enc.encode(ss, lang, cache=False, progress=False)
        dt = time.perf_counter() - t
        record({"bench": "embed_speed", "encoder": name, "encoder_id": enc.id, "pair": args.pair,
               "sentences": n, "mean_chars": round(chars / n, 1), "seconds": round(dt, 2),
               "sentences_per_s": round(n / dt, 1), "peak_rss_mb": peak_rss_mb()})


if __name__ == "__main__":
    main()

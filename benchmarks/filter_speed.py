"""Filtering throughput: ``filter_file`` end to end over a real bitext file, embeddings cached.

The file is the LibreOffice help TRAIN split of the pair (about 22k real
pairs; fetched from Debian's packages into the cache), written as
``src<TAB>tgt``. A first, untimed pass fills the persistent embedding cache
(minutes for use-m3 on a cold cache; nothing when the cache is warm); the
timed pass is what a user sees on a rerun or with embeddings computed
elsewhere: reading, every rule, language id, cache lookups, scoring, writing
kept/rejected/summary, checkpoints. Beside it, in the same run, the encoder's
own embedding rate on 500 uncached sentences of the file, so the cost of a cold
cache is stated too. Beside the wall-clock rate, the rate per CPU second of the process (every thread),
which moves less when other jobs share the machine, and the load average at the end (``"note": "shared
machine"`` above 2.5).

Usage: python benchmarks/filter_speed.py [--pair en-de] [--config filter-default]
           [--encoder use-m3] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bisent.bench.common import Recorder, add_results_option, peak_rss_mb
from bisent.bench.filtering import DEFAULT_CONFIG
from bisent.datasets.libreoffice import load_pairs
from bisent.encoders import get_encoder
from bisent.filtering import edit_config, filter_file


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pair", default="en-de")
    ap.add_argument("--config", default=str(DEFAULT_CONFIG))
    ap.add_argument("--encoder", default=None, help="override the encoder of every embedding step")
    ap.add_argument("--limit", type=int, default=None, help="first N training pairs only")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("filter_speed", args.results or None, echo=lambda line: print(line, flush=True))
    src, tgt = args.pair.split("-")
    pairs = [p for p in load_pairs(src, tgt) if p.split == "train"][: args.limit]
    config = edit_config(args.config, encoder=args.encoder)
    encoders = sorted({s["encoder"] for s in config.get("steps", []) if "encoder" in s})
    with tempfile.TemporaryDirectory(prefix="bisent-filter-speed-") as tmp:
        tsv = Path(tmp) / f"train.{args.pair}.tsv"
        tsv.write_text("".join(f"{p.src}\t{p.tgt}\n" for p in pairs), encoding="utf-8")
        t = time.perf_counter()
        filter_file(tsv, Path(tmp) / "warm.kept.tsv", Path(tmp) / "warm.rej.tsv", src, tgt, config, progress=False)
        warm_s = time.perf_counter() - t
        t, cpu = time.perf_counter(), time.process_time()
        summary = filter_file(tsv, Path(tmp) / "kept.tsv.gz", Path(tmp) / "rejected.tsv.gz", src, tgt, config,
                              Path(tmp) / "summary.json", progress=False)
        dt, cpu_s = time.perf_counter() - t, time.process_time() - cpu
    sents = list(dict.fromkeys(p.src for p in pairs))[:500]
    embed = {}
    for name in encoders:
        enc = get_encoder(name)
        enc.encode(sents[:4], src, cache=False, progress=False)       # lazy weights loaded
        t = time.perf_counter()
        enc.encode(sents, src, cache=False, progress=False)
        embed[name] = round(len(sents) / (time.perf_counter() - t), 1)
    record({"bench": "filter_speed", "pair": args.pair, "config": Path(args.config).name, "encoders": encoders,
           "lines": summary["lines"], "kept": summary["kept"], "rejected": summary["lines"] - summary["kept"],
           "seconds": round(dt, 2), "pairs_per_s": round(summary["lines"] / dt, 1),
           "cpu_seconds": round(cpu_s, 2), "pairs_per_cpu_s": round(summary["lines"] / max(cpu_s, 1e-9), 1),
           "first_pass_seconds": round(warm_s, 1), "embed_sentences_per_s": embed,
           "peak_rss_mb": peak_rss_mb(), "load_avg": round(os.getloadavg()[0], 2),
           **({"note": "shared machine"} if os.getloadavg()[0] > 2.5 else {}),
           **({"options": {"limit": args.limit}} if args.limit else {})})


if __name__ == "__main__":
    main()

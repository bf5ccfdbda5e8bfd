"""Reading speed of the bitext reader and of the filter engine on it: one JSON line each.

A synthetic ``src<TAB>tgt`` file of ``--lines`` lines (seeded) is read by :func:`bisent.io.bitext.iter_units`, then
filtered by :func:`bisent.filtering.filter_file` with a length step alone, so the time is the reading and the
bookkeeping, not a model. Each line carries the load average (``shared machine`` above 2.5).
Usage: ``python benchmarks/read_speed.py --lines 200000``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path

from bisent.filtering import filter_file
from bisent.io.bitext import iter_units, open_bitext

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]


def write_input(path: Path, lines: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            src = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
            tgt = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
            f.write(f"{src}\t{tgt}\n")


def record(what: str, lines: int, seconds: float) -> dict:
    load = os.getloadavg()[0]
    out = {"task": "read_speed", "what": what, "lines": lines, "seconds": round(seconds, 3),
           "lines_per_s": round(lines / seconds), "load": round(load, 2)}
    if load > 2.5:
        out["note"] = "shared machine"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bisent-read-speed-") as tmp:
        path = Path(tmp) / "pairs.tsv"
        write_input(path, args.lines)
        t = time.perf_counter()
        n = sum(1 for _ in iter_units(open_bitext([path], fmt="tsv")))
        print(json.dumps(record("iter_units", n, time.perf_counter() - t)), flush=True)
        t = time.perf_counter()
        summary = filter_file(path, Path(tmp) / "kept.tsv", Path(tmp) / "rejected.tsv", "en", "de",
                              {"steps": [{"type": "length", "min_length": 1, "max_length": 200}]},
                              progress=False, resume=False)
        print(json.dumps(record("filter_file, length step", summary["lines"], time.perf_counter() - t)), flush=True)


if __name__ == "__main__":
    main()

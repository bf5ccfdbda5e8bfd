"""Peak memory of ``bisent mine`` on real text: two files of up to 100k distinct sentences a side.

The sentences are LibreOffice help (the documents of the en-de and en-fr
builds in the cache: every paragraph, and each paragraph split into sentences
at ". "), de-duplicated: English on the source side; German, then
French, on the target side. ``bisent mine -e ENCODER`` runs in a fresh process,
by default twice with an embedding cache of its own: empty (cold: everything
embedded) and full (warm: everything read from the cache); ``--modes nocache``
runs it once with the cache off. The peak RSS of each run (its own VmHWM) is
printed beside the budget of the issue: fp16 vectors of both sides + one working set a
search thread (the fp32 upcasts of a row and a column block and the score tile) and, beyond the
first thread, a private copy of the column heaps, on top of the interpreter with bisent and the
model loaded and the top-k kernel compiled (about 60 MB of code; measured in its own process). One JSON line per run.

Usage: python benchmarks/mine_memory.py [--data DIR_WITH_PAIRS] [--n 100000] [--encoder char-ngram]
       [--modes cold,warm|nocache] [--keep mined.tsv]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from bisent.bench.common import Recorder, add_results_option
from bisent.datasets.libreoffice import load_documents
from bisent.mining.index import BLOCK_COLS, BLOCK_ROWS
from bisent.threads import default_threads

_SENT = re.compile(r"(?<=\.)\s+(?=[A-ZÄÖÜÀ-Ý])")


def _paragraphs(data, lang: str) -> Iterator[str]:
    """Every paragraph in ``lang`` of the LibreOffice help builds with en-de and en-fr (from the cache, or
    the ``PAIR/documents.jsonl`` files under ``data``)."""
    for pair in ("en-de", "en-fr"):
        src, tgt = pair.split("-")
        if lang not in (src, tgt):
            continue
        side = "src" if lang == src else "tgt"
        if data is None:
            for doc in load_documents(src, tgt):
                yield from (p.text for p in getattr(doc, side))
            continue
        path = Path(data) / pair / "documents.jsonl"
        if path.is_file():
            with open(path, encoding="utf-8") as f:
                for line in f:
                    yield from (text for _, text in json.loads(line)[side])


def texts(data, lang: str, n: int) -> list[str]:
    """Up to ``n`` distinct paragraphs and their sentences (split at ". ") in ``lang``."""
    seen: dict[str, None] = {}
    for para in _paragraphs(data, lang):
        for t in [para, *_SENT.split(para)]:
            t = " ".join(t.split())
            if t:
                seen.setdefault(t, None)
        if len(seen) >= n:
            break
    return list(seen)[:n]


#: run first in each measured process: at exit it writes the process's own peak RSS (VmHWM, which exec
#: resets, unlike the rusage of a child forked from this big parent) to stderr
_PEAK = ("import atexit, sys\n"
         "def _peak():\n"
         "    with open('/proc/self/status') as f:\n"
         "        kb = next(line for line in f if line.startswith('VmHWM:')).split()[1]\n"
         "    sys.stderr.write('\\npeak_kb ' + kb + '\\n')\n"
         "atexit.register(_peak)\n")


def run_measured(code: str, env: dict, log: Path) -> tuple[int, int]:
    """(exit status, peak RSS bytes) of ``python -c code`` in a fresh process (stderr kept in ``log``)."""
    with open(log, "wb") as err:
        rc = subprocess.run([sys.executable, "-c", _PEAK + code], env=env, stdout=subprocess.DEVNULL,
                            stderr=err).returncode
    text = log.read_text(encoding="utf-8", errors="replace")
    peaks = [int(line.split()[1]) for line in text.splitlines() if line.startswith("peak_kb ")]
    if rc or not peaks:
        sys.stderr.write(text)
    return rc, (peaks[-1] * 1024 if peaks else 0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=None,
                    help="folder holding PAIR/documents.jsonl (bisent data libreoffice -o DIR/PAIR); "
                         "default: the builds in the cache")
    ap.add_argument("--n", type=int, default=100_000, help="sentences per side at most")
    ap.add_argument("--encoder", default="char-ngram")
    ap.add_argument("--modes", default="cold,warm",
                    help="runs, in order: cold (empty cache, filled), warm (all cached), nocache (cache off)")
    ap.add_argument("--keep", default=None, help="copy the last run's mined.tsv here (to compare versions)")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("mine_memory", args.results or None, echo=lambda line: print(line, flush=True))
    src, tgt = texts(args.data, "en", args.n), texts(args.data, "de", args.n)
    if len(tgt) < args.n:
        tgt = list(dict.fromkeys(tgt + texts(args.data, "fr", args.n)))[:args.n]
    if not src or not tgt:
        raise SystemExit(f"{args.data}: no */documents.jsonl with en and de (run bisent data libreoffice)")
    base_code = ("import bisent.cli, bisent.mining.retrieval, faiss, numpy as np\n"
                 f"from bisent.encoders import get_encoder; get_encoder({args.encoder!r})\n"
                 "from bisent.mining.index import knn_both\n"                     # the compiled top-k kernel is code:
                 "knn_both(np.ones((8, 8), np.float16), np.ones((8, 8), np.float16), 4, progress=False)\n")
    with tempfile.TemporaryDirectory(prefix="bisent-mine-memory-") as tmp:
        env = {**os.environ, "BISENT_EMBED_CACHE": str(Path(tmp) / "cache")}
        Path(tmp, "src.txt").write_text("".join(t + "\n" for t in src), encoding="utf-8")
        Path(tmp, "tgt.txt").write_text("".join(t + "\n" for t in tgt), encoding="utf-8")
        log = Path(tmp, "stderr.txt")
        _, baseline = run_measured(base_code, env, log)
        from bisent.encoders import get_encoder
        enc = get_encoder(args.encoder)
        vec = (len(src) + len(tgt)) * enc.dim * 2
        threads = max(1, min(default_threads(), -(-len(src) // BLOCK_ROWS)))
        one = (min(BLOCK_ROWS, len(src)) + min(BLOCK_COLS, len(tgt))) * enc.dim * 4 \
            + min(BLOCK_ROWS, len(src)) * min(BLOCK_COLS, len(tgt)) * 4          # fp32 blocks + score tile
        blocks = threads * one + (threads - 1) * len(tgt) * 4 * 12             # + private column heaps (k = 4)
        argv = ["mine", str(Path(tmp, "src.txt")), str(Path(tmp, "tgt.txt")), "-l", "en", "-L", "de",
                "-e", args.encoder, "-o", str(Path(tmp, "mined.tsv")), "--threshold", "none"]   # every pair
        code = f"from bisent.cli import main\nsys.exit(main({argv!r}))\n"   # what `bisent mine ...` runs
        for cache in args.modes.split(","):
            t = time.perf_counter()
            rc, peak = run_measured(code, {**env, "BISENT_NO_EMBED_CACHE": "1" if cache == "nocache" else "0"}, log)
            seconds = round(time.perf_counter() - t, 1)
            mined = sum(1 for _ in open(Path(tmp, "mined.tsv"), encoding="utf-8")) if rc == 0 else None
            record({"bench": "mine_memory", "encoder": args.encoder, "encoder_id": enc.id, "src": len(src),
                   "tgt": len(tgt), "dim": enc.dim, "cache": cache, "exit": rc, "mined": mined,
                   "peak_rss_mb": round(peak / 2**20, 1), "baseline_rss_mb": round(baseline / 2**20, 1),
                   "fp16_vectors_mb": round(vec / 2**20, 1), "threads": threads,
                   "working_sets_mb": round(blocks / 2**20, 1),
                   "budget_mb": round((baseline + vec + blocks) / 2**20, 1),
                   "within_budget": bool(rc == 0 and peak <= baseline + vec + blocks), "seconds": seconds})
        if args.keep:
            shutil.copyfile(Path(tmp, "mined.tsv"), args.keep)


if __name__ == "__main__":
    main()

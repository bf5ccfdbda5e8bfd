"""Scale benchmark: `bisent data scale` → `bisent embed` (fp16 shards) → `bisent mine` exact and IVF.

Each stage runs as the command a user would type, in a fresh process; its wall
time and peak RSS (the process's own VmHWM) are recorded. Then, in this process:

- ``scale_agreement``: on a fixed sample of source rows (``--sample``, seed 0),
  the exact top-k targets (computed exactly, for the sample only) against the
  IVF index's, built as ``bisent mine --knn ivf`` builds it: top-1 agreement
  and recall@k; and the agreement of the two mined outputs (pairs of the exact
  output also in the IVF output, over the whole output and over the sample's sources);
- ``scale_gold``: P/R/F1 of each mined output on the hidden gold pairs at the
  threshold that maximises F1 (the BUCC convention), beside the number of pairs mined.

One ``scale_stage`` line per stage and a ``scale_projection`` line scaling the
measured rates to 1M × 1M (embedding linear in sentences; exact kNN in n·m;
IVF search in n·√m): a projection, not a measurement. The encoder is given
with ``-e`` (the anchors use-m3 and me5-small are measured on a CPU only at
sizes they can afford: ``-e use-m3`` is ~180 sentences/s on one core).

Usage: python benchmarks/scale.py --size 100000 [-e char-ngram] [--data DIR] [--work DIR] [--cache]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from bisent.bench.common import Recorder, add_results_option
from bisent.encoders.shards import Shards, select_rows
from bisent.mining.index import build_index, calibrate_probes, ivf_lists, knn_both, to_float32
from mine_memory import run_measured

TARGET = 1_000_000


def _bisent(argv: list[str]) -> str:
    """The code that runs ``bisent ARGV`` in a child process (as the console script does)."""
    return f"from bisent.cli import main\nsys.exit(main({argv!r}))\n"


def _placeholders(command: str, work: Path, data: Path) -> str:
    """``command`` with the work and data folders written WORK and DATA (no machine's paths in the records)."""
    return command.replace(str(data), "DATA").replace(str(work), "WORK")


def _mined(path: Path) -> list[tuple[float, int, int]]:
    """``(score, src line, tgt line)`` of a ``bisent mine --line-numbers`` output (0-based lines)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            out.append((float(cols[0]), int(cols[-2]) - 1, int(cols[-1]) - 1))
    return out


def _best_f1(mined: list[tuple[float, int, int]], gold: set[tuple[int, int]]) -> dict:
    from bisent.evaluate import best_threshold

    prf = best_threshold(((s, str(i), str(j)) for s, i, j in mined), {(str(i), str(j)) for i, j in gold})
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in prf.as_dict().items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100_000, help="sentences a side (bisent data scale --size)")
    ap.add_argument("-e", "--encoder", default="char-ngram")
    ap.add_argument("--data", default=None, help="a built benchmark folder (default: built under --work)")
    ap.add_argument("--work", default=None, help="folder for the data, vectors and outputs (default: a temp folder)")
    ap.add_argument("--sample", type=int, default=10_000, help="source rows whose neighbours are compared")
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--methods", default="exact,ivf", help="kNN methods to mine with, in order")
    ap.add_argument("--cache", action="store_true", help="use the embedding cache (default: off, every "
                                                         "sentence embedded, so the timing is the real one)")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("scale", args.results or None, echo=lambda line: print(line, flush=True))
    with tempfile.TemporaryDirectory(prefix="bisent-scale-") as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        run(args, work, record)


def run(args, work: Path, record) -> None:
    env = {**os.environ, "BISENT_NO_EMBED_CACHE": "0" if args.cache else "1"}
    log = work / "stderr.txt"
    base = {"encoder": args.encoder, "cache": bool(args.cache)}
    seconds: dict[str, float] = {}
    data = Path(args.data) if args.data else work / "data"

    def stage(name: str, argv: list[str]) -> None:
        t = time.perf_counter()
        rc, peak = run_measured(_bisent(argv), env, log)
        seconds[name] = time.perf_counter() - t
        record({"bench": "scale_stage", **base, "stage": name, "exit": rc, "seconds": round(seconds[name], 1),
                "peak_rss_mb": round(peak / 2**20, 1), "load_average": round(os.getloadavg()[0], 1),
                "stage_command": _placeholders("bisent " + " ".join(argv), work, data)})
        if rc:
            raise SystemExit(f"stage {name} failed (exit {rc}); its stderr is above")

    if not (data / "stats.json").is_file():
        stage("data", ["data", "scale", "--size", str(args.size), "-o", str(data)])
    stats = json.loads((data / "stats.json").read_text(encoding="utf-8"))
    n, m = stats["src_sentences"], stats["tgt_sentences"]
    base.update(data_format=stats["format"], size=stats["size"], src=n, tgt=m, gold_pairs=stats["gold_pairs"],
                tgt_languages=len(stats["tgt_by_language"]))
    vec = {side: work / f"{side}.{args.encoder.replace('/', '_')}.vec" for side in ("src", "tgt")}
    for side, lang in (("src", "en"), ("tgt", "de")):
        stage(f"embed_{side}", ["embed", str(data / f"{side}.txt"), "-l", lang, "-e", args.encoder,
                                "-o", str(vec[side]), "--force"])
    outputs = {}
    for method in args.methods.split(","):
        outputs[method] = work / f"mined.{method}.tsv"
        stage(f"mine_{method}", ["mine", str(data / "src.txt"), str(data / "tgt.txt"), "-l", "en", "-L", "de",
                                 "--src-vectors", str(vec["src"]), "--tgt-vectors", str(vec["tgt"]),
                                 "-k", str(args.k), "--knn", method, "--line-numbers", "--threshold", "none",
                                 "-o", str(outputs[method])])

    from bisent.datasets.scale import read_gold

    gold = set(read_gold(data))
    mined = {method: _mined(path) for method, path in outputs.items()}
    best = {}
    for method, pairs in mined.items():
        best[method] = _best_f1(pairs, gold)
        record({"bench": "scale_gold", **base, "method": method, "mined": len(pairs), **best[method]})

    sample = np.sort(np.random.default_rng(0).choice(n, size=min(args.sample, n), replace=False))
    xs, ys = Shards(vec["src"]), Shards(vec["tgt"])
    q = select_rows(xs, sample)
    t = time.perf_counter()
    exact = knn_both(q, ys, args.k, progress=False).fwd_idx            # (s, k) computed exactly
    t_exact = time.perf_counter() - t
    t = time.perf_counter()
    index = build_index(to_float32(ys), "ivf", nlist=ivf_lists(m))   # the index `mine --index ivf` builds
    index.nprobe = calibrate_probes(index, xs, ys)                     # and its probes, calibrated as there
    approx = index.search(to_float32(q), args.k)[1]                   # (s, k)
    t_ivf = time.perf_counter() - t
    recall = np.mean([len(set(a) & set(b)) / args.k for a, b in zip(exact, approx)])
    row = {"bench": "scale_agreement", **base, "sample": len(sample), "k": args.k,
           "knn_top1_agreement": round(float(np.mean(exact[:, 0] == approx[:, 0])), 4),
           "knn_recall_at_k": round(float(recall), 4), "nlist": index.nlist, "nprobe": index.nprobe,
           "sample_exact_seconds": round(t_exact, 1), "sample_ivf_seconds_with_build": round(t_ivf, 1)}
    if "exact" in mined and "ivf" in mined:
        e = {(i, j) for _, i, j in mined["exact"]}
        a = {(i, j) for _, i, j in mined["ivf"]}
        in_sample = set(sample.tolist())
        es = {p for p in e if p[0] in in_sample}
        thr = best["exact"]["threshold"]
        top = {(i, j) for s, i, j in mined["exact"] if thr is not None and s >= thr}
        row.update(mined_pair_agreement=round(len(e & a) / max(len(e), 1), 4),
                   mined_pair_agreement_above_f1_threshold=round(len(top & a) / max(len(top), 1), 4),
                   mined_pair_agreement_sample=round(len(es & a) / max(len(es), 1), 4))
    record(row)
    embed = seconds["embed_src"] + seconds["embed_tgt"]
    proj = {"bench": "scale_projection", **base, "to": f"{TARGET}x{TARGET}", "projection": True,
            "embed_seconds": round(embed * 2 * TARGET / (n + m))}
    if "mine_exact" in seconds:
        proj["mine_exact_seconds"] = round(seconds["mine_exact"] * TARGET * TARGET / (n * m))
    if "mine_ivf" in seconds:
        proj["mine_ivf_seconds"] = round(seconds["mine_ivf"] * TARGET * math.sqrt(TARGET) / (n * math.sqrt(m)))
    record(proj)


if __name__ == "__main__":
    main()

"""A DAN student's size against its quality: fewer hash buckets and float16 storage.

The hashed table is ``buckets x embed_dim`` float32 (2^18 x 256: 256 MiB of a 258 MB directory).
Variants of one trained student, each a model directory measured like any encoder
(recovery error with CSLS on the test pairs of each ``--set DOMAIN:PAIR``, ``use-m3`` in the same run):

- ``stored``: the directory as trained (float32, or float16 with ``train.half_weights``);
- ``float16``: the same weights stored as float16 (``save(..., half=True)``), read back as float32;
- ``int8``: the hashed table stored as int8 rows with a float32 scale each, the rest float16
  (``save(..., int8=True)``, recipe key ``train.int8_weights``), read back as float32;
- ``fold-2^b``: the table folded to ``2^b`` buckets without retraining. The bucket of a feature is
  the top bits of its hash times ``buckets`` (:func:`bisent.models.hashing._bucket`), so with
  ``buckets / 2^s`` buckets a feature lands in ``old_bucket >> s``: the new row is the mean of the
  ``2^s`` old rows that merge, weighted by how often each occurs in ``--counts`` text (what a
  shared row would be pulled towards in training). A lower bound on a student trained with that
  many buckets (which could spread its collisions better).

Usage: ``python benchmarks/student_size.py --model DIR --counts FILE... --set gettext:en-de ...``
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np

from bisent.bench.common import Recorder, add_results_option
from bisent.datasets.domains import split_pairs
from bisent.encoders import get_encoder
from bisent.evaluate import recovery_error, sample_distinct_pairs
from bisent.io import iter_raw_lines, read_lines
from bisent.models import modeldir
from bisent.models.dan import hash_config
from bisent.models.hashing import HashConfig, HashFeaturizer


def bucket_counts(config: HashConfig, texts: list[str], block: int = 4096) -> np.ndarray:
    """``(buckets,)`` int64: how often each bucket id occurs among the features of ``texts``."""
    f = HashFeaturizer(config)
    counts = np.zeros(config.buckets, dtype=np.int64)
    for s in range(0, len(texts), block):
        counts += np.bincount(f.bags(texts[s:s + block]).ids, minlength=config.buckets)
    return counts


def fold_table(table: np.ndarray, counts: np.ndarray, shift: int) -> np.ndarray:
    """``(B, E)`` -> ``(B >> shift, E)``: rows ``j << shift ... (j+1) << shift`` merged by their ``counts``
    (plain mean where none occurs)."""
    B, E = table.shape
    group = 1 << shift
    t = table.reshape(B // group, group, E)                                  # (B', g, E)
    w = counts.reshape(B // group, group).astype(np.float64)                 # (B', g)
    w[w.sum(axis=1) == 0] = 1.0
    w /= w.sum(axis=1, keepdims=True)
    return np.einsum("bg,bge->be", w, t).astype(np.float32)                  # (B', E)


def folded_dir(src: Path, out: Path, buckets: int, counts: np.ndarray) -> Path:
    """A copy of the DAN directory ``src`` with its table folded to ``buckets`` rows."""
    cfg = json.loads((src / modeldir.CONFIG_FILE).read_text(encoding="utf-8"))
    _, tensors = modeldir.read_safetensors(src / modeldir.WEIGHTS_FILE)
    old = int(cfg["model"]["buckets"])
    shift = (old // buckets).bit_length() - 1
    if buckets << shift != old:
        raise ValueError(f"{buckets} buckets do not divide {old} by a power of two")
    tensors = dict(tensors)
    tensors["embed.weight"] = fold_table(tensors["embed.weight"], counts, shift)
    hp = {**cfg["model"], "buckets": buckets}
    extra = {k: v for k, v in cfg.items() if k not in ("architecture", "format_version", "model")}
    extra["folded_from"] = {"buckets": old, "rule": "old bucket >> shift, rows averaged by feature counts"}
    return modeldir.save(out, cfg["architecture"], hp, tensors, extra=extra)


def stored_as(src: Path, out: Path, **storage) -> Path:
    """A copy of ``src`` saved with ``storage`` (``half=True``: every float tensor as float16; ``int8=True``:
    the hashed table as int8 rows + a scale each, the rest float16; :func:`bisent.models.modeldir.save`)."""
    cfg = json.loads((src / modeldir.CONFIG_FILE).read_text(encoding="utf-8"))
    _, tensors = modeldir.read_safetensors(src / modeldir.WEIGHTS_FILE)
    extra = {k: v for k, v in cfg.items() if k not in ("architecture", "format_version", "model")}
    return modeldir.save(out, cfg["architecture"], cfg["model"], tensors, extra=extra, **storage)


def dir_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in Path(path).iterdir() if p.is_file()) / 1e6, 1)


def _texts(paths: list[str]) -> list[str]:
    """Sentences to count features on: every line of a .txt, the last two columns of a .tsv (the collection's
    ``doc, id, source, target`` rows or plain ``source, target`` pairs)."""
    out = []
    for p in paths:
        if p.endswith(".tsv"):
            for _, raw in iter_raw_lines(p):
                out += raw.decode("utf-8", errors="replace").split("\t")[-2:]
        else:
            out += [ln.text for ln in read_lines(p) if ln.problem is None]
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="a trained DAN directory")
    ap.add_argument("--counts", nargs="+", required=True,
                    help="text (.txt lines, .tsv last two columns) to count features on")
    ap.add_argument("--set", dest="sets", action="append", required=True, help="DOMAIN:PAIR, e.g. gettext:en-de")
    ap.add_argument("--buckets", default="131072,65536", help="folded sizes (comma-separated; '' for none)")
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--work", default="student-size", help="folder for the variant directories (kept)")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("student_size", args.results or None, echo=lambda line: print(line, flush=True))
    src, work = Path(args.model), Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    cfg = json.loads((src / modeldir.CONFIG_FILE).read_text(encoding="utf-8"))
    hc = hash_config(cfg["model"])
    counts = bucket_counts(hc, _texts(args.counts))
    variants = [("stored", src), ("float16", stored_as(src, work / "half", half=True)),
                ("int8", stored_as(src, work / "int8", int8=True))]
    for b in (int(x) for x in args.buckets.split(",") if x):
        variants.append((f"fold-{b}", folded_dir(src, work / f"fold-{b}", b, counts)))
    encoders = [(name, d, get_encoder(str(d))) for name, d in variants] + [("anchor", None, get_encoder("use-m3"))]
    for spec in args.sets:
        domain, pair = spec.split(":")
        s, t = pair.split("-")
        pairs = sample_distinct_pairs(split_pairs(domain, s, t), limit=args.limit)
        for name, d, enc in encoders:
            x = enc.encode([p.src for p in pairs], s, progress=False)
            y = enc.encode([p.tgt for p in pairs], t, progress=False)
            e_st, e_ts = recovery_error(x, y, "csls", 4)
            record({"bench": "student_size", "model": str(src), "variant": name, "encoder": enc.name,
                    "encoder_id": enc.id, "domain": domain, "pair": pair, "n": len(pairs), "score": "csls",
                    "buckets": None if d is None
                    else json.loads((Path(d) / "config.json").read_text())["model"]["buckets"],
                    "dir_mb": None if d is None else dir_mb(d),
                    "error_src_tgt": round(100 * e_st, 2), "error_tgt_src": round(100 * e_ts, 2)})


if __name__ == "__main__":
    main()

"""`bisent distill` at scale: a student distilled on both sides of `bisent data scale`, timed, then mined with.

Stages, each the command a user would type, in a fresh process (wall time and peak RSS recorded, with the load
average beside it):

- ``distill``: ``bisent distill DATA/src.txt DATA/tgt.txt -l en -l de --lang-file 2=DATA/tgt.lang`` (the
  target side mixes languages: ``de`` stands for it as in ``benchmarks/scale.py``, and its lines' languages are
  given, as a crawl's language identifier gives them; ``--no-lang-file``: without), with an empty embedding cache
  of its own so that the teacher pass is timed in full (the training reads the teacher's rows back from that cache);
- ``speed`` (in this process): the student's and the teacher's sentences/s on the same held-out sentences, neither
  from a cache (:func:`distill_domains.speeds`);
- ``embed_src`` / ``embed_tgt``: both whole sides embedded with the student (no cache);
- ``mine``: ``bisent mine --src-vectors --tgt-vectors --threshold none --line-numbers``, and P/R/F1 of the hidden
  gold pairs at the threshold that maximises F1 (as ``benchmarks/scale.py``);
- ``subsample`` (``--teacher-size N``): every gold row plus random rows up to N a side (seed 0), embedded with the
  student (no cache) and with the teacher (use-m3, through its embedding cache, so a rerun reuses its rows), each
  mined with the same command and the exact index; P/R/F1 of both at their own best threshold with 95 % bootstrap
  intervals over the gold pairs, the paired F1 gap with its interval (``distill_scale_f1_gap``), and the same per
  language of the gold pair's target line (``distill_scale_f1_lang``, from ``tgt.lang``): the comparison where the
  teacher cannot embed the whole (2M lines at its 500-1,000 sentences/s on two cores are about 5 hours).

- ``heldout_langs``: the student's no-gold report per target language, as ``bisent distill --lang-file`` gives it:
  its held-out target sentences, each given the language of its line in ``tgt.lang``, against its held-out English
  ones (:func:`bisent.distill.quality.by_line_language`; the teacher's rows through its cache), one
  ``distill_scale_agreement_lang`` line per language with enough held-out sentences.

``--stages`` picks stages; ``--student DIR`` takes a student distilled before (default ``WORK/student``).
``--size 100000 --sample 200000 --stages distill,speed`` is the timing of a 200k-sentence distillation (every
sentence of both sides): its last line (``distill_scale_total``) gives the seconds, the sample and the highest load
average of its stages. ``distill_scale`` lines go to ``benchmarks/results/distill_scale.jsonl``.

Usage: ``python benchmarks/distill_scale.py --size 1000000 [--data DIR] [--work DIR] [--teacher-size 20000]``
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from bisent.bench.common import Recorder, add_results_option
from distill_domains import speeds
from mine_memory import run_measured
from scale import _best_f1, _bisent, _mined, _placeholders

STAGES = ("distill", "speed", "embed", "mine", "subsample", "heldout_langs")


def subsample(data: Path, out: Path, size: int, gold: list[tuple[int, int]], seed: int = 0) -> list[tuple[int, int]]:
    """``OUT/src.txt``, ``OUT/tgt.txt`` (and ``OUT/tgt.lang`` when the data has one): every gold row and random
    other rows, ``size`` a side at most (in their order in the data); the gold pairs' line numbers there."""
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    renumbered = {}
    for side, col in (("src", 0), ("tgt", 1)):
        lines = (data / f"{side}.txt").read_text(encoding="utf-8").split("\n")[:-1]
        keep = {g[col] for g in gold}
        rest = np.setdiff1d(np.arange(len(lines)), np.fromiter(keep, dtype=np.int64))
        extra = rng.choice(rest, size=max(0, min(size - len(keep), len(rest))), replace=False)
        rows = np.sort(np.concatenate([np.fromiter(keep, dtype=np.int64), extra]))
        renumbered[side] = {int(r): i for i, r in enumerate(rows)}
        (out / f"{side}.txt").write_text("".join(lines[r] + "\n" for r in rows), encoding="utf-8")
        if side == "tgt" and (data / "tgt.lang").is_file():
            langs = (data / "tgt.lang").read_text(encoding="utf-8").split("\n")[:-1]
            (out / "tgt.lang").write_text("".join(langs[r] + "\n" for r in rows), encoding="utf-8")
    return [(renumbered["src"][i], renumbered["tgt"][j]) for i, j in gold]


def gold_hits(mined: list[tuple[float, int, int]], gold: list[tuple[int, int]], threshold: float) -> np.ndarray:
    """``(len(gold),)`` bool: gold pair i is among the mined pairs scoring at least ``threshold``."""
    kept = {(i, j) for s, i, j in mined if s >= threshold}
    return np.fromiter(((i, j) in kept for i, j in gold), dtype=bool, count=len(gold))


def f1_comparison(mined: dict[str, list], gold: list[tuple[int, int]], best: dict[str, dict],
                  tgt_lang: list[str] | None, *, boot: int = 1000, min_gold: int = 40) -> tuple[dict, list[dict]]:
    """Both encoders' F1 at their own best threshold with 95 % bootstrap intervals over the gold pairs, the
    paired gap (student minus teacher) with its interval, and the same figures per target language.

    With the number of pairs kept at the threshold fixed (``n_mined``), F1 = 2 TP / (n_mined + n_gold) is a
    mean over the gold pairs of ``hit * 2 n_gold / (n_mined + n_gold)``, so resampling the gold pairs gives its
    interval, and resampling them jointly for both encoders gives the paired gap's. Per language L (of the gold
    pair's target line): recall over L's gold pairs, precision over the kept pairs whose target line is in L.
    """
    from bisent.distill.quality import interval

    n = len(gold)
    contrib, hits = {}, {}
    for name in mined:
        hits[name] = gold_hits(mined[name], gold, best[name]["threshold"])
        contrib[name] = hits[name] * (2 * n / (best[name]["n_mined"] + n))                    # (n_gold,)
    out: dict = {}
    for name in mined:
        lo, hi = interval(contrib[name], boot=boot)
        out[f"{name}_f1"] = round(float(contrib[name].mean()), 4)
        out[f"{name}_f1_interval"] = [round(lo, 4), round(hi, 4)]
    gap = contrib["student"] - contrib["teacher"]
    lo, hi = interval(gap, boot=boot)
    out["gap_points"] = round(100 * float(gap.mean()), 2)
    out["gap_interval_points"] = [round(100 * lo, 2), round(100 * hi, 2)]
    per_lang: list[dict] = []
    if tgt_lang is not None:
        lang_of_gold = np.array([tgt_lang[j] for _, j in gold])
        for lang in sorted(set(lang_of_gold), key=lambda x: -int(np.sum(lang_of_gold == x))):
            sel = lang_of_gold == lang
            if sel.sum() < min_gold:
                continue
            row: dict = {"lang": lang, "gold": int(sel.sum())}
            for name in mined:
                tp = int(hits[name][sel].sum())
                kept = sum(1 for s, _, j in mined[name] if s >= best[name]["threshold"] and tgt_lang[j] == lang)
                p, r = (tp / kept if kept else 0.0), tp / int(sel.sum())
                row.update({f"{name}_precision": round(p, 4), f"{name}_recall": round(r, 4),
                            f"{name}_f1": round(2 * p * r / (p + r) if p + r else 0.0, 4)})
            d = (hits["student"][sel].astype(np.float64) - hits["teacher"][sel]) * 100
            lo, hi = interval(d, boot=boot)
            row["recall_gap_points"] = round(float(d.mean()), 2)
            row["recall_gap_interval_points"] = [round(lo, 2), round(hi, 2)]
            row["f1_gap_points"] = round(100 * (row["student_f1"] - row["teacher_f1"]), 2)
            per_lang.append(row)
    return out, per_lang


def heldout_languages(data: Path, student: Path, teacher: str, base: dict, record, *, min_held: int = 20) -> None:
    """The student's held-out agreement with its teacher per language of the target lines (``tgt.lang``)."""
    from bisent.distill.quality import by_line_language
    from bisent.encoders import get_encoder
    from bisent.encoders.trained import load_model_dir

    held = {lang: (student / "sample" / f"heldout.{lang}.txt").read_text(encoding="utf-8").split("\n")[:-1]
            for lang in ("en", "de")}
    of_text: dict[str, str] = {}
    with open(data / "tgt.txt", encoding="utf-8") as texts, open(data / "tgt.lang", encoding="utf-8") as langs:
        for text, lang in zip(texts, langs):
            of_text.setdefault(text.rstrip("\n"), lang.strip())
    strata = {"de": [of_text[x] for x in held["de"]]}
    trained: dict[str, int] = {}                              # the student's training sentences per language
    for x in (student / "sample" / "train.de.txt").read_text(encoding="utf-8").split("\n")[:-1]:
        trained[of_text[x]] = trained.get(of_text[x], 0) + 1
    model, enc = load_model_dir(student), get_encoder(teacher)
    s = {lang: model.encode(v, lang, cache=False) for lang, v in held.items()}
    t = {lang: enc.encode(v, lang) for lang, v in held.items()}
    (block,) = by_line_language(s, t, strata, min_held=min_held)
    for row in block["languages"]:
        lang = row["line_language"]
        record({"bench": "distill_scale_agreement_lang", **base, "line_language": lang, "held_out": row["held_out"],
                "trained_on": trained.get(lang, 0),
                **{f"{d}_{k}": row[key][k] for d, key in (("to_en", f"{lang}->en"), ("from_en", f"en->{lang}"))
                   for k in ("agreement", "interval", "candidates")}})
    record({"bench": "distill_scale_agreement_lang", **base, "line_language": "smaller", **block["smaller"],
            "min_held_out": min_held, "trained_on": {k: v for k, v in sorted(trained.items(), key=lambda x: -x[1])}})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1_000_000, help="sentences a side (bisent data scale --size)")
    ap.add_argument("--data", default=None, help="a built benchmark folder (default: built under --work)")
    ap.add_argument("--work", default=None, help="folder for the student, vectors and outputs (default: temporary)")
    ap.add_argument("--sample", type=int, default=None, help="bisent distill --sample (default: its own)")
    ap.add_argument("--steps", type=int, default=None, help="bisent distill --steps (default: its own)")
    ap.add_argument("--no-lang-file", action="store_true",
                    help="distil without --lang-file 2=DATA/tgt.lang (the target side as one language)")
    ap.add_argument("--student", default=None, help="the distilled student's model directory (default: WORK/student, "
                                                    "made by the distill stage)")
    ap.add_argument("--student-note", default=None, help="what --student is, put in every record")
    ap.add_argument("--teacher", default="use-m3")
    ap.add_argument("--teacher-size", type=int, default=20_000, help="rows a side of the teacher's sub-sample")
    ap.add_argument("--stages", default=",".join(STAGES), help=f"stages to run, of {','.join(STAGES)}")
    add_results_option(ap)
    args = ap.parse_args(argv)
    record = Recorder("distill_scale", args.results or None, echo=lambda line: print(line, flush=True),
                      options={**vars(args), "work": "WORK" if args.work else None,
                               "data": "DATA" if args.data else None, "student": "STUDENT" if args.student else None})
    # no folder of this machine in the records
    for folder, name in ((args.student, "STUDENT"), (args.work, "WORK"), (args.data, "DATA")):
        if folder:
            record.context["command"] = record.context["command"].replace(folder, name)
    with tempfile.TemporaryDirectory(prefix="bisent-distill-scale-") as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        run(args, work, record)


def run(args, work: Path, record) -> None:
    stages = args.stages.split(",")
    data = Path(args.data) if args.data else work / "data"
    student, log = Path(args.student) if args.student else work / "student", work / "stderr.txt"
    quiet = {**os.environ, "BISENT_NO_EMBED_CACHE": "1"}
    base: dict = {"teacher": args.teacher, "size": args.size,
                  **({"student": args.student_note} if args.student_note else {})}
    seconds: dict[str, float] = {}
    loads: dict[str, float] = {}

    def stage(name: str, argv: list[str], env: dict = quiet) -> None:
        load, t = os.getloadavg()[0], time.perf_counter()
        rc, peak = run_measured(_bisent(argv), env, log)
        seconds[name] = time.perf_counter() - t
        load = loads[name] = max(load, os.getloadavg()[0])
        record({"bench": "distill_scale_stage", **base, "stage": name, "exit": rc, "seconds": round(seconds[name], 1),
                "peak_rss_mb": round(peak / 2**20, 1), "load_average": round(load, 2),
                **({"note": "shared machine"} if load > 2.5 else {}),
                "stage_command": _placeholders("bisent " + " ".join(argv).replace(str(student), "STUDENT"), work,
                                               data)})
        if rc:
            raise SystemExit(f"stage {name} failed (exit {rc}); its stderr is above")

    if not (data / "stats.json").is_file():
        stage("data", ["data", "scale", "--size", str(args.size), "-o", str(data)])
    stats = json.loads((data / "stats.json").read_text(encoding="utf-8"))
    base.update(size=stats.get("size", args.size), src=stats["src_sentences"], tgt=stats["tgt_sentences"],
                gold_pairs=stats["gold_pairs"])
    if "distill" in stages:
        opts = [*(["--sample", str(args.sample)] if args.sample else []),
                *(["--steps", str(args.steps)] if args.steps else [])]
        teacher_cache = work / "teacher-cache"            # empty: the teacher pass is timed in full
        if (data / "tgt.lang").is_file() and not args.no_lang_file:     # the target lines' languages, as a crawl has
            opts += ["--lang-file", f"2={data / 'tgt.lang'}"]
        stage("distill", ["distill", str(data / "src.txt"), str(data / "tgt.txt"), "-l", "en", "-l", "de",
                          "-e", args.teacher, "-o", str(student), "--no-progress", *opts],
              {**os.environ, "BISENT_EMBED_CACHE": str(teacher_cache)})
        summary = json.loads((student / "distill.json").read_text(encoding="utf-8"))
        record({"bench": "distill_scale_distill", **base, "sample": summary["sample"]["train"],
                "held_out": summary["sample"]["held_out"], "lang_file": not args.no_lang_file,
                "teacher_seconds": summary["teacher_seconds"],
                "training_seconds": summary["training"]["seconds"], "steps": summary["training"]["steps"],
                "lowest_agreement": summary["quality"]["lowest_agreement"],
                "agreement_bar": summary["quality"].get("agreement_bar"),
                "cosine_correlation": summary["quality"]["pairs"][0]["cosine_correlation"]})
    if "speed" in stages:
        held = {lang: (student / "sample" / f"heldout.{lang}.txt").read_text(encoding="utf-8").split("\n")[:-1]
                for lang in ("en", "de")}
        load = os.getloadavg()[0]
        row = speeds(student, args.teacher, held)
        load = max(load, os.getloadavg()[0])
        record({"bench": "distill_scale_speed", **base, **row, "load_average": round(load, 2),
                **({"note": "shared machine"} if load > 2.5 else {})})
    from bisent.datasets.scale import read_gold

    gold = read_gold(data) if {"mine", "subsample"} & set(stages) else []
    if "embed" in stages:
        for side, lang in (("src", "en"), ("tgt", "de")):
            stage(f"embed_{side}", ["embed", str(data / f"{side}.txt"), "-l", lang, "-e", str(student),
                                    "-o", str(work / f"{side}.vec"), "--force"])
    if "mine" in stages:
        out = work / "mined.tsv"
        stage("mine", ["mine", str(data / "src.txt"), str(data / "tgt.txt"), "-l", "en", "-L", "de",
                       "--src-vectors", str(work / "src.vec"), "--tgt-vectors", str(work / "tgt.vec"),
                       "--line-numbers", "--threshold", "none", "-o", str(out)])
        pairs = _mined(out)
        record({"bench": "distill_scale_gold", **base, "encoder": "student", "rows": "all", "mined": len(pairs),
                **_best_f1(pairs, set(gold))})
    if "subsample" in stages:
        sub = work / f"sub{args.teacher_size}"
        sub_gold = subsample(data, sub, args.teacher_size, gold)
        tgt_lang = ((sub / "tgt.lang").read_text(encoding="utf-8").split("\n")[:-1]
                    if (sub / "tgt.lang").is_file() else None)
        rows = f"{args.teacher_size} a side (every gold row and random others, seed 0)"
        mined, best = {}, {}
        # the teacher's rows through the embedding cache (a rerun reuses them); the student's without
        for name, enc, env in (("student", str(student), quiet), ("teacher", args.teacher, dict(os.environ))):
            for side, lang in (("src", "en"), ("tgt", "de")):
                stage(f"subsample_embed_{side}_{name}", ["embed", str(sub / f"{side}.txt"), "-l", lang, "-e", enc,
                                                         "-o", str(sub / f"{side}.{name}.vec"), "--force"], env)
            out = sub / f"mined.{name}.tsv"
            stage(f"subsample_mine_{name}", ["mine", str(sub / "src.txt"), str(sub / "tgt.txt"), "-l", "en", "-L",
                                             "de", "--src-vectors", str(sub / f"src.{name}.vec"), "--tgt-vectors",
                                             str(sub / f"tgt.{name}.vec"), "--index", "exact", "--line-numbers",
                                             "--threshold", "none", "-o", str(out)])
            mined[name] = _mined(out)
            best[name] = _best_f1(mined[name], set(sub_gold))
            record({"bench": "distill_scale_gold", **base, "encoder": name, "rows": rows, "index": "exact",
                    "gold_in_rows": len(sub_gold), "mined": len(mined[name]), **best[name]})
        overall, per_lang = f1_comparison(mined, sub_gold, best, tgt_lang)
        record({"bench": "distill_scale_f1_gap", **base, "rows": rows, "index": "exact", **overall,
                "within_2_points": bool(overall["gap_points"] >= -2.0),
                "note_rows": "the teacher embeds about 500-1,000 sentences/s on 2 cores: all 2M lines would take "
                             "about 5 hours, so both encoders are compared on the same sub-sample"})
        for row in per_lang:
            record({"bench": "distill_scale_f1_lang", **base, "rows": rows, **row})
    if "heldout_langs" in stages:
        heldout_languages(data, student, args.teacher, base, record)
    done = [s for s in ("distill", "embed_src", "embed_tgt") if s in seconds]
    if done:                       # the one line of a timing: its stages, seconds and the highest load average
        load = max(loads[s] for s in done)
        record({"bench": "distill_scale_total", **base, "stages": done, "sample": args.sample,
                "seconds": round(sum(seconds[s] for s in done), 1), "load_average": round(load, 2),
                **({"note": "shared machine"} if load > 2.5 else {})})


if __name__ == "__main__":
    main()

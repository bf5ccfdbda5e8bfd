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
import json
import random
from collections import Counter
from pathlib import Path

import numpy as np

from bisent.bench.common import Recorder, add_results_option
from filter_variants import wilson_pct

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
    from bisent.filtering import as_pipeline, edit_config
    from bisent.recipes import resolve as resolve_recipe

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



# ---------------------------------------------------------------------------
# Every step's value on every pair, and candidate bounds decided from them
# ---------------------------------------------------------------------------

def step_values(config, src: str, tgt: str, pairs) -> dict[str, list]:
    """Each step's value for every pair of ``pairs`` (one input: the sample-learning steps learn from it all),
    whether or not an earlier step rejects the pair: the table candidate bounds are decided from."""
    from bisent.filtering import as_pipeline, vectors
    from bisent.recipes import resolve as resolve_recipe

    pipe = as_pipeline(resolve_recipe(config) if isinstance(config, str) else config, src, tgt)
    pipe.prepare(pairs)
    out = {}
    with vectors.batch_memo():
        for step in pipe.steps:
            out[step.name] = pipe._score(step, list(pairs))
        if "coverage" not in out:       # the word coverage the candidates and the length yield are decided by
            from bisent.filtering.coverage import CoverageStep

            out["coverage"] = pipe._score(CoverageStep(src_lang=src, tgt_lang=tgt, encoder="use-m3"), list(pairs))
    out["_spelled"] = list(_numbers_spelled(pairs))
    out["_other_lang"] = _other_language(pairs, src, tgt)
    return out


def _other_language(pairs, src: str, tgt: str) -> list[list[float]]:
    """Per pair and side: the language-id model's probability of its top guess when that guess is another
    language than the side's (0 when the side's own language is the top guess)."""
    from bisent.filtering.langid import identify, normalise_lang

    out = []
    langs = normalise_lang(src), normalise_lang(tgt)
    top_s = list(identify(a for a, _ in pairs))
    top_t = list(identify(b for _, b in pairs))
    for (ls, ps), (lt, pt) in zip(top_s, top_t):
        out.append([0.0 if ls == langs[0] else ps, 0.0 if lt == langs[1] else pt])
    return out


def _numbers_spelled(pairs):
    from bisent.filtering.rules import NumbersFilter

    return NumbersFilter(spelled_up_to=12).score(pairs)


#: candidate values of each bound (the current default first)
GRID = {"max_z": (2.5, 3.0, 3.5, 4.0, 5.0), "spelled": (False, True), "langid_prob": (0.05, 0.01, 0.001),
        "langid_chars": (0, 20, 40), "langid_other": (None, 0.5, 0.8), "coverage": (0.15, 0.1, 0.05, None),
        "leave_out": (0.05, 0.08, 0.12, None), "margin": (0.9, 0.85, 0.8, 0.7, None), "margin_cos": (None, 0.7, 0.6),
        "cosine": (0.3, 0.2)}


def factors(values: dict, pairs) -> dict:
    """Kept (bool per pair) by each bound of :data:`GRID` at each of its values, and by the fixed rules
    (``base``): the candidates are the AND of one array per bound."""
    chars = np.asarray([[len(s.strip()), len(t.strip())] for s, t in pairs]).reshape(-1, 2)
    lens = np.asarray(values["length"]).reshape(-1, 2)
    base = (np.asarray(values["duplicate"]) == 0) & (np.asarray(values["empty"]) > 0)
    base &= (lens >= 1).all(1) & (lens <= 200).all(1)
    base &= (np.asarray(values["overlap"]) < 0.8) & (np.asarray(values["script"]).reshape(-1, 2) >= 0.5).all(1)
    lid = np.asarray(values["langid"]).reshape(-1, 2)
    other = np.asarray(values["_other_lang"]).reshape(-1, 2)     # a side judged only when another language wins
    cov = np.asarray([v[0] for v in values["coverage"]], dtype=np.float64)
    gain = np.asarray([v[0] for v in values["leave_out"]], dtype=np.float64)
    cos, margin = np.asarray(values["cosine"]), np.asarray(values["margin"])
    out = {"base": base,
           "max_z": {z: np.abs(np.asarray(values["length_ratio"])) <= z for z in GRID["max_z"]},
           "spelled": {sp: np.asarray(values["_spelled" if sp else "numbers"]) == 0 for sp in GRID["spelled"]},
           "langid": {(p, c, o): (((lid > 0) & (lid >= p)) | (chars < c) | (other < o if o is not None else False))
                      .all(1) for p in GRID["langid_prob"] for c in GRID["langid_chars"] for o in GRID["langid_other"]},
           "coverage": {c: np.ones(len(cov), bool) if c is None else (cov >= c) for c in GRID["coverage"]},
           "leave_out": {g: np.ones(len(gain), bool) if g is None else (gain <= g) for g in GRID["leave_out"]},
           "margin": {(m, mc): np.ones(len(cos), bool) if m is None else
                      ((margin >= m) | (cos >= mc if mc is not None else False))
                      for m in GRID["margin"] for mc in GRID["margin_cos"]},
           "cosine": {c: cos >= c for c in GRID["cosine"]}}
    return out


def decide(f: dict, cand: dict) -> np.ndarray:
    """Kept (bool per pair) under the candidate bounds ``cand`` (keys of :data:`GRID`), from :func:`factors`."""
    return (f["base"] & f["max_z"][cand["max_z"]] & f["spelled"][cand["spelled"]]
            & f["langid"][cand["langid_prob"], cand["langid_chars"], cand["langid_other"]]
            & f["coverage"][cand["coverage"]]
            & f["leave_out"][cand["leave_out"]] & f["margin"][cand["margin"], cand["margin_cos"]]
            & f["cosine"][cand["cosine"]])


def grid_main(argv=None) -> None:
    """Every candidate of :data:`GRID` on the clean sets and the noise mix of a split (one JSON line each)."""
    import itertools

    from bisent.bench.filtering import build_set

    ap = argparse.ArgumentParser(description="candidate bounds of filter-default on clean sets and the noise mix")
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--limit", type=int, default=1500)
    ap.add_argument("--mix-limit", type=int, default=4000)
    ap.add_argument("-o", "--output", required=True, help="JSONL of every candidate's figures")
    ap.add_argument("--values", default=None, help="JSON file of every step's values: read if it exists, else written")
    args = ap.parse_args(argv)
    saved = None
    if args.values and Path(args.values).is_file():
        saved = json.loads(Path(args.values).read_text(encoding="utf-8"))
    tables = {}
    for domain in sorted(DOMAINS):
        src, tgt, pairs = clean_pairs(domain, args.split, args.limit)
        tables[domain] = (pairs, None, saved[domain] if saved else step_values("filter-default", src, tgt, pairs))
        print(f"scored {domain}", flush=True)
    items, _ = build_set("en", "de", limit=args.mix_limit, split=args.split)
    mix = [(it.src, it.tgt) for it in items]
    kinds = [it.kind for it in items]
    tables["mix"] = (mix, kinds, saved["mix"] if saved else step_values("filter-default", "en", "de", mix))
    print("scored the noise mix", flush=True)
    if args.values and saved is None:
        Path(args.values).write_text(json.dumps({k: v for k, (_, _, v) in tables.items()}), encoding="utf-8")
    sets = {name: (None if kk is None else np.asarray(kk), factors(v, pairs))
            for name, (pairs, kk, v) in tables.items()}
    keys = list(GRID)
    cap = None
    with open(args.output, "w", encoding="utf-8") as f:
        for combo in itertools.product(*(GRID[k] for k in keys)):
            cand = dict(zip(keys, combo))
            row = {"candidate": cand, "clean_rejected": {}, "mix_kept": {}}
            for name, (kk, fac) in sets.items():
                keep = decide(fac, cand)
                if kk is None:
                    row["clean_rejected"][name] = [int((~keep).sum()), len(keep)]
                else:
                    for kind in np.unique(kk):
                        m = kk == kind
                        if kind == "clean":
                            row["clean_rejected"]["mix_clean"] = [int((~keep[m]).sum()), int(m.sum())]
                        else:
                            row["mix_kept"][str(kind)] = [int(keep[m].sum()), int(m.sum())]
            if cap is None:     # the current default (the first candidate): rule 1's caps
                cap = {k: wilson_pct(*kn)[1] for k, kn in row["mix_kept"].items()}
            elif any(100 * kn[0] / kn[1] > cap[k] for k, kn in row["mix_kept"].items()):
                continue        # rule 1 rules it out: not written
            f.write(json.dumps(row) + "\n")



#: the rule the default is chosen by on the dev split (benchmarks/README.md, "A default that keeps clean text")
MAX_CLEAN_REJECTED = 2.0
CLEAN_SETS = ("bible", "gettext", "libreoffice")


def choose(rows: list[dict]) -> tuple[dict, bool]:
    """The candidate the rule picks from :func:`grid_main`'s rows (the first row is the current default), and
    whether it meets the clean-text target.

    Every noise kind of the mix may be kept at most up to the top of the current default's 95 % Wilson interval
    for it. Among those, the candidates rejecting at most :data:`MAX_CLEAN_REJECTED` % of each clean set; of
    them the one keeping the fewest noise pairs in all, then rejecting the fewest clean pairs in all. When none
    rejects that little, the one whose worst clean set loses least (then the fewest noise pairs).
    """
    from filter_variants import wilson_pct

    base = rows[0]
    cap = {k: wilson_pct(kept, n)[1] for k, (kept, n) in base["mix_kept"].items()}

    def pct(kn):
        return 100 * kn[0] / kn[1]

    ok = [r for r in rows if all(pct(r["mix_kept"][k]) <= cap[k] for k in cap)]
    worst = {id(r): max(pct(r["clean_rejected"][d]) for d in CLEAN_SETS) for r in ok}
    noise = {id(r): sum(kn[0] for kn in r["mix_kept"].values()) for r in ok}
    lost = {id(r): sum(r["clean_rejected"][d][0] for d in CLEAN_SETS) for r in ok}
    met = [r for r in ok if worst[id(r)] <= MAX_CLEAN_REJECTED]
    if met:
        return min(met, key=lambda r: (noise[id(r)], lost[id(r)])), True
    return min(ok, key=lambda r: (worst[id(r)], noise[id(r)])), False


def choose_main(argv=None) -> None:
    """Print the current default, the candidate :func:`choose` picks, and the figures of both."""
    ap = argparse.ArgumentParser(description="the candidate the rule picks from a filter_grid output")
    ap.add_argument("grid", help="JSONL written by benchmarks/filter_grid.py")
    args = ap.parse_args(argv)
    with open(args.grid, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    best, met = choose(rows)
    for name, r in (("current", rows[0]), ("chosen", best)):
        clean = {d: round(100 * a / b, 2) for d, (a, b) in r["clean_rejected"].items()}
        kept = {k: round(100 * a / b, 2) for k, (a, b) in r["mix_kept"].items()}
        print(json.dumps({"row": name, "candidate": r["candidate"], "clean_rejected": clean, "noise_kept": kept,
                          "target_met": met if name == "chosen" else None}))


# ---------------------------------------------------------------------------
# The length ratio yielding to word coverage
# ---------------------------------------------------------------------------

#: the bounds of src/bisent/recipes/filter-default.yaml as a candidate of :data:`GRID`
DEFAULT = {"max_z": 2.5, "spelled": True, "langid_prob": 0.05, "langid_chars": 0, "langid_other": 0.5,
           "coverage": None, "leave_out": 0.05, "margin": 0.85, "margin_cos": None, "cosine": 0.3}

#: how the length ratio may yield (family -> its settings): a pair the length ratio rejects is kept when
#: ``cov`` its worst unit's coverage (``coverage`` step) is at least x; ``cov_same_count`` the same and both sides
#: have as many sentences; ``cov_median`` at least x times the input's median coverage (learned per input, as the
#: length band is); ``cov_over_cos`` coverage / cosine at least x with |z| at most 5; ``off`` the length bound
#: removed (the floor no yield can go below)
YIELDS = {"none": (None,), "cov": (0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7), "cov_same_count": (0.3, 0.4, 0.5, 0.6),
          "cov_median": (0.8, 0.9, 1.0, 1.1), "cov_over_cos": (0.6, 0.7, 0.8, 0.9), "off": (None,)}


def length_yield(values: dict, family: str, x) -> np.ndarray:
    """Per pair: whether the length ratio yields to coverage under ``family`` at ``x`` (:data:`YIELDS`)."""
    cov = np.asarray([v[0] for v in values["coverage"]], dtype=np.float64)
    if family == "none":
        return np.zeros(len(cov), bool)
    if family == "off":
        return np.ones(len(cov), bool)
    if family == "cov":
        return cov >= x
    if family == "cov_same_count":
        return (cov >= x) & (np.asarray([v[3] for v in values["coverage"]]) == 0)
    if family == "cov_median":
        return cov >= x * np.median(cov)
    if family == "cov_over_cos":
        z = np.abs(np.asarray(values["length_ratio"], dtype=np.float64))
        return (cov / np.maximum(np.asarray(values["cosine"], dtype=np.float64), 1e-6) >= x) & (z <= 5.0)
    raise ValueError(f"unknown length yield {family!r}")


def first_rejecting(f: dict, cand: dict) -> dict:
    """Pairs rejected per step under ``cand`` (from :func:`factors`), each counted at the first step that
    rejects it in the recipe's order (the fixed rules as one)."""
    order = [("rules", f["base"]), ("length_ratio", f["max_z"][cand["max_z"]]),
             ("numbers", f["spelled"][cand["spelled"]]),
             ("langid", f["langid"][cand["langid_prob"], cand["langid_chars"], cand["langid_other"]]),
             ("coverage", f["coverage"][cand["coverage"]]), ("leave_out", f["leave_out"][cand["leave_out"]]),
             ("margin", f["margin"][cand["margin"], cand["margin_cos"]]), ("cosine", f["cosine"][cand["cosine"]])]
    alive, out = np.ones(len(f["base"]), bool), {}
    for name, kept in order:
        if int((alive & ~kept).sum()):
            out[name] = int((alive & ~kept).sum())
        alive &= kept
    return out



def _grid_parser(description: str) -> argparse.ArgumentParser:
    """The options every grid over the clean sets and the noise mix of a split takes."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--limit", type=int, default=1500)
    ap.add_argument("--mix-limit", type=int, default=4000)
    ap.add_argument("--values", default=None, help="JSON file of every step's values: read if it exists, else written")
    add_results_option(ap)
    return ap


def _split_tables(args, *, joint: bool = False) -> dict:
    """``{set: (pairs, kinds or None, filter-default's step values)}`` for each clean set and the en-de noise mix
    of ``args.split`` (``_joint``: the two-signal values too), read from ``args.values`` when it exists, else
    computed and written there."""
    from bisent.bench.filtering import build_set

    def values(src, tgt, pairs):
        out = step_values("filter-default", src, tgt, pairs)
        return {**out, "_joint": joint_values(src, tgt, pairs)} if joint else out

    saved = None
    if args.values and Path(args.values).is_file():
        saved = json.loads(Path(args.values).read_text(encoding="utf-8"))
    tables = {}
    for domain in sorted(DOMAINS):
        src, tgt, pairs = clean_pairs(domain, args.split, args.limit)
        tables[domain] = (pairs, None, saved[domain] if saved else values(src, tgt, pairs))
    items, _ = build_set("en", "de", limit=args.mix_limit, split=args.split)
    mix = [(it.src, it.tgt) for it in items]
    tables["mix"] = (mix, np.asarray([it.kind for it in items]), saved["mix"] if saved else values("en", "de", mix))
    if args.values and saved is None:
        Path(args.values).write_text(json.dumps({k: v for k, (_, _, v) in tables.items()}), encoding="utf-8")
    return tables


def _score_into(row: dict, name: str, kinds, f: dict) -> None:
    """Decide set ``name`` by the factors ``f`` and add to ``row`` its share of clean pairs rejected (a clean set)
    or of each kind kept (the mix: its clean pairs as ``mix_clean``), with Wilson intervals; the first rejecting
    step of each clean set's pairs, and the counts kept of each noise kind where ``row`` has ``noise_kept_n``."""
    keep = decide(f, DEFAULT)
    if kinds is None:
        row.setdefault("rejected_by", {})[name] = first_rejecting(f, DEFAULT)
    groups = [(name, np.ones(len(keep), bool))] if kinds is None else \
        [("mix_clean" if k == "clean" else str(k), kinds == k) for k in np.unique(kinds)]
    for key, m in groups:
        clean = kinds is None or key == "mix_clean"
        k, n = int((~keep[m] if clean else keep[m]).sum()), int(m.sum())
        row["clean_rejected" if clean else "noise_kept"][key] = round(100 * k / n, 2)
        row["clean_interval" if clean else "noise_interval"][key] = wilson_pct(k, n)
        if not clean and "noise_kept_n" in row:
            row["noise_kept_n"][key] = k

def yield_main(argv=None) -> None:
    """The current default with its length ratio yielding to coverage (:data:`YIELDS`), on the clean sets and
    the noise mix of a split: one record per setting, with 95 % Wilson intervals, whether every noise kind stays
    within the top of the current default's interval, and whether each clean set loses at most 2 %."""

    ap = _grid_parser("filter-default's length ratio yielding to word coverage")
    args = ap.parse_args(argv)
    tables = _split_tables(args)
    record = Recorder("filter_clean", args.results or None, echo=lambda line: print(line, flush=True))
    for name, (pairs, kinds, values) in tables.items():     # how covered the pairs the length ratio rejects are
        f = factors(values, pairs)
        cov = np.asarray([v[0] for v in values["coverage"]], dtype=np.float64)
        cut = f["base"] & ~f["max_z"][DEFAULT["max_z"]]
        for key in [name] if kinds is None else ["clean", "glued", "truncated", "neighbour"]:
            m = cut if kinds is None else cut & (kinds == key)
            record({"task": "filter_clean", "kind": "length_rejected_coverage", "split": args.split, "set": name,
                    "pairs": key, "n": int(m.sum()),
                    "coverage_quartiles": np.round(np.quantile(cov[m], [0.25, 0.5, 0.75]), 3).tolist()})
    cap = None
    for family, settings in YIELDS.items():
        for x in settings:
            row: dict = {"clean_rejected": {}, "clean_interval": {}, "noise_kept": {}, "noise_interval": {}}
            for name, (pairs, kinds, values) in tables.items():
                f = factors(values, pairs)
                f["max_z"] = {**f["max_z"], DEFAULT["max_z"]: f["max_z"][DEFAULT["max_z"]]
                              | length_yield(values, family, x)}
                _score_into(row, name, kinds, f)
            if cap is None:     # the current default (family "none"): the caps of the noise kinds
                cap = {k: iv[1] for k, iv in row["noise_interval"].items()}
            within = all(row["noise_kept"][k] <= cap[k] for k in cap)
            met = all(row["clean_rejected"][d] <= MAX_CLEAN_REJECTED for d in CLEAN_SETS)
            record({"task": "filter_clean", "kind": "length_yield", "split": args.split, "yield": family,
                    "at": x, "limit": args.limit, **row, "noise_within_caps": within, "clean_target_met": met})


if __name__ == "__main__":
    main()


# ---------------------------------------------------------------------------
# Two signals before rejecting: the length ratio and leave_out asking each other
# ---------------------------------------------------------------------------

#: the ``leave_out`` step's two-signal options tried (the length ratio's own bound ``hard_z`` beyond which no
#: leave-out gain excuses a length; None: the length ratio step rejects nothing the leave_out step keeps)
TWO_SIGNALS = {"hard_z": (4.0, 5.0, None), "length_z": (2.5, 3.0), "length_gain": (-0.02, 0.0, 0.02),
               "toward_z": (0.5, 1.0, 1.25, 1.5, 2.0), "hard_gain": (0.1, 0.12, 0.15, None)}
#: rule 2's slack: settings whose worst clean set is within this many points of the best are compared by noise
WORST_SLACK = 0.2


def joint_values(src: str, tgt: str, pairs) -> list:
    """The ``leave_out`` step's two-signal value (``[gain, side, unit, z, longer_gain, longer_units]``) of every
    pair, its length band learned from ``pairs`` as one input."""
    from bisent.filtering import vectors
    from bisent.filtering.coverage import LeaveOutStep

    step = LeaveOutStep(src_lang=src, tgt_lang=tgt, encoder="use-m3", max_gain=0.05, length_z=2.5, toward_z=1.0)
    step.fit_sample(_sample(pairs, step.sample_size()))
    with vectors.batch_memo():
        return step.score_batch(list(pairs)).tolist()


def _sample(pairs, size: int):
    from bisent.filtering.pipeline import background_sample

    return background_sample(pairs, size)


def two_signal_keep(joint: list, setting: dict) -> tuple[np.ndarray, np.ndarray]:
    """(kept by the length ratio, kept by leave_out) per pair under ``setting`` (keys of :data:`TWO_SIGNALS`),
    decided by the ``leave_out`` step's own ``accept``."""
    from bisent.filtering.coverage import LeaveOutStep

    step = LeaveOutStep(src_lang="en", tgt_lang="de", encoder="use-m3", max_gain=0.05,
                        length_z=setting["length_z"], length_gain=setting["length_gain"],
                        toward_z=setting["toward_z"], hard_gain=setting["hard_gain"])
    z = np.abs(np.asarray([v[3] for v in joint]))
    hard = np.ones(len(z), bool) if setting["hard_z"] is None else z <= setting["hard_z"]
    return hard, np.asarray([step.accept(v) for v in joint])


def pick_two_signals(rows: list[dict]) -> dict | None:
    """The rule's choice among :func:`two_signals_main`'s records (benchmarks/README.md, "Two signals"): within
    every noise cap, the worst clean set within :data:`WORST_SLACK` points of the lowest, then the fewest noise
    pairs kept, then the fewest clean pairs rejected."""
    ok = [r for r in rows if r["noise_within_caps"] and r["setting"] is not None]
    if not ok:
        return None
    worst = {id(r): max(r["clean_rejected"][d] for d in CLEAN_SETS) for r in ok}
    low = min(worst.values())
    near = [r for r in ok if worst[id(r)] <= low + WORST_SLACK + 1e-9]
    return min(near, key=lambda r: (sum(r["noise_kept_n"].values()), sum(r["clean_rejected"][d] for d in CLEAN_SETS)))


def two_signals_main(argv=None) -> None:
    """The current default against its length ratio and ``leave_out`` step asking for two signals
    (:data:`TWO_SIGNALS`), on the clean sets and the noise mix of a split: one record per setting (95 % Wilson
    intervals, within the current default's noise caps, the 2 % target), then the rule's choice."""
    import itertools


    ap = _grid_parser("filter-default's length ratio and leave_out asking for two signals")
    args = ap.parse_args(argv)
    tables = _split_tables(args, joint=True)
    record = Recorder("filter_clean", args.results or None, echo=lambda line: print(line, flush=True))
    keys = list(TWO_SIGNALS)
    settings = [None] + [dict(zip(keys, c)) for c in itertools.product(*(TWO_SIGNALS[k] for k in keys))]
    cap, rows = None, []
    for setting in settings:
        row: dict = {"clean_rejected": {}, "clean_interval": {}, "noise_kept": {}, "noise_interval": {},
                     "noise_kept_n": {}, "rejected_by": {}}
        for name, (pairs, kinds, values) in tables.items():
            f = factors(values, pairs)
            if setting is not None:
                hard, lo = two_signal_keep(values["_joint"], setting)
                f["max_z"] = {**f["max_z"], DEFAULT["max_z"]: hard}
                f["leave_out"] = {**f["leave_out"], DEFAULT["leave_out"]: lo}
            _score_into(row, name, kinds, f)
        if cap is None:         # the current default: the caps of the noise kinds
            cap = {k: iv[1] for k, iv in row["noise_interval"].items()}
        within = all(row["noise_kept"][k] <= cap[k] for k in cap)
        met = all(row["clean_rejected"][d] <= MAX_CLEAN_REJECTED for d in CLEAN_SETS)
        rows.append({"setting": setting, **row, "noise_within_caps": within, "clean_target_met": met})
        if setting is None or within:       # every setting within the caps, and the current default
            record({"task": "filter_clean", "kind": "two_signals", "split": args.split, "limit": args.limit,
                    **rows[-1]})
    best = pick_two_signals(rows)
    record({"task": "filter_clean", "kind": "two_signals_choice", "split": args.split,
            "settings": len(settings) - 1, "within_caps": sum(r["noise_within_caps"] for r in rows[1:]),
            "choice": best and best["setting"], "clean_rejected": best and best["clean_rejected"],
            "noise_kept": best and best["noise_kept"], "clean_target_met": best and best["clean_target_met"]})

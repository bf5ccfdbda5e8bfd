"""Mining calibration against gold over many tasks: does the default threshold keep its promise?

``bisent mine`` keeps, by default, the pairs from the lowest threshold whose precision *estimated without gold*
is 90 % (:func:`bisent.calibration.mining_calibration`). This benchmark builds mining tasks with known gold that
vary what the estimate depends on (how many sentences have a translation, the collections' size, the domain,
the script, the encoder), mines each as ``bisent mine`` does (ratio margin, k = 4, max-score retrieval) and
reports, per task and estimator:

- ``estimated`` / ``true``: the estimated and the measured precision (points) of the pairs kept at the
  estimator's 90 % threshold, and ``error`` = estimated - true;
- ``recall_vs_true90``: the true pairs kept there over the true pairs kept by the *true* 90 % cut (the lowest
  threshold whose measured precision is 90 %; every retrieved pair when all of them are that precise);
- ``overlap_estimated`` / ``overlap_true``: the estimated and the true share of retrieved pairs that are right.

Tasks (:func:`task_grid`) come from :func:`bisent.datasets.comparable.make_mining_task` with ``gold_share`` the
overlap and ``max_gold`` = overlap × size, so each side holds about ``size`` sentences, a share ``overlap`` of
them with their translation on the other side. Documents of one split only (dev to develop, test to report);
larger tasks than a domain's dev documents allow are left out (the record says what was built). Embeddings
come from the persistent embedding cache, so each text is embedded once per encoder across runs.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from bisent.bench.common import Recorder, add_results_option
from bisent.datasets.comparable import MiningTask, make_mining_task
from bisent.datasets.domains import load_domain_pairs
from bisent.errors import BisentError
from bisent.mining.retrieval import retrieve
from bisent.mining.scoring import Scorer

#: The precision the default threshold promises (as ``bisent mine``).
TARGET = 0.9
#: (domain, source language, target language) of the tasks: Latin (de, es), Cyrillic (ru) and CJK (ja, zh_CN).
SOURCES = (("libreoffice", "en", "de"), ("gettext", "en", "ru"), ("gettext", "en", "ja"),
           ("gettext", "en", "zh_CN"), ("gnome", "en", "de"), ("bible", "en", "es"))
OVERLAPS = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)
SIZES = (300, 1000, 3000)
#: (3,000 is built only where the split's documents hold it: LibreOffice help at 90-95 % overlap, Bible verses)
#: sizes measured with me5-small (about 10 times slower to embed than use-m3 on the shared 2-core machine)
SIZES_SLOW = (300,)
#: consecutive pairs of one document that make a unit of the task builder: gettext's dev split holds 3 packages
#: and the Bible's 6 books, too few to share out between the roles at a chosen overlap
CHUNK = 20
SLOW_ENCODERS = ("me5-small",)


@dataclass
class Task:
    """One mining task: the sentences of each side and the gold pairs as row indices."""

    domain: str
    src_lang: str
    tgt_lang: str
    split: str
    overlap: float
    size: int
    src: list[str]
    tgt: list[str]
    gold: set[tuple[int, int]]
    stats: dict

    @property
    def name(self) -> str:
        return f"{self.domain}/{self.src_lang}-{self.tgt_lang}/{self.split}/o{self.overlap:g}/n{self.size}"


_POOLS: dict = {}


def build_task(domain: str, src_lang: str, tgt_lang: str, split: str, overlap: float, size: int, *,
               seed: int = 0) -> Task:
    """A task of about ``size`` sentences a side, ``overlap`` of them translated on the other side, from the
    ``split`` documents of ``domain``."""
    key = (domain, src_lang, tgt_lang)
    if key not in _POOLS:
        _POOLS[key] = chunked(load_domain_pairs(domain, src_lang, tgt_lang))
    mt: MiningTask = make_mining_task(_POOLS[key], split, gold_share=overlap, max_gold=max(1, round(overlap * size)),
                                      seed=seed, src_lang=src_lang, tgt_lang=tgt_lang)
    src_row = {sid: i for i, (sid, _) in enumerate(mt.src)}
    tgt_row = {tid: j for j, (tid, _) in enumerate(mt.tgt)}
    gold = {(src_row[s], tgt_row[t]) for s, t in mt.gold}
    return Task(domain, src_lang, tgt_lang, split, overlap, size, [t for _, t in mt.src], [t for _, t in mt.tgt],
                gold, mt.stats)


def chunked(pairs: list, chunk: int = CHUNK) -> list:
    """``pairs`` with each document cut into units of ``chunk`` consecutive pairs (``doc#i``), split kept."""
    seen: dict[str, int] = {}
    out = []
    for p in pairs:
        i = seen.get(p.doc, 0)
        seen[p.doc] = i + 1
        out.append(p._replace(doc=f"{p.doc}#{i // chunk}"))
    return out


def full_size(task: Task) -> bool:
    """Whether the split held enough documents for the wanted size (within 10 %) and overlap (within 0.03)."""
    s = task.stats
    return (min(s["src"], s["tgt"]) >= 0.9 * task.size
            and abs(s["gold"] / max(1, min(s["src"], s["tgt"])) - task.overlap) <= 0.03)


@dataclass
class Mined:
    """A mined task: the run's candidates and retrieved pairs (best first), right or not by gold."""

    cands: object
    src: np.ndarray     # (p,) source rows
    tgt: np.ndarray     # (p,) target rows
    score: np.ndarray   # (p,) ratio margin, descending
    ok: np.ndarray      # (p,) bool: a gold pair


def mine_task(task: Task, enc, *, k: int = 4) -> Mined:
    """Mine ``task`` as ``bisent mine`` does by default (ratio margin, k, max-score retrieval)."""
    x = enc.encode(task.src, task.src_lang)   # (n, d)
    y = enc.encode(task.tgt, task.tgt_lang)   # (m, d)
    cands = Scorer("ratio", k).fit(y).score(x)
    pairs = retrieve(cands, "max")
    pairs.sort(key=lambda p: (-p.score, p.src, p.tgt))   # the order mine() writes them in
    ps = np.array([p.src for p in pairs], dtype=np.int64)
    pt = np.array([p.tgt for p in pairs], dtype=np.int64)
    sc = np.array([p.score for p in pairs], dtype=np.float64)
    ok = np.array([(int(i), int(j)) in task.gold for i, j in zip(ps, pt)], dtype=bool)
    return Mined(cands, ps, pt, sc, ok)


def true_cut(score: np.ndarray, ok: np.ndarray, target: float = TARGET) -> float:
    """The lowest threshold (a pair's score) whose measured precision (pairs scoring >= it) reaches ``target``;
    +inf when none does. ``score`` (p,) descending."""
    prec = np.cumsum(ok) / np.arange(1, len(ok) + 1)    # precision of the top i+1 pairs
    # ties: a threshold keeps every pair scoring at least it, so only the last of a run of equal scores counts
    last = np.r_[score[1:] != score[:-1], True]
    good = np.flatnonzero((prec >= target) & last)
    return float(score[good[-1]]) if len(good) else float("inf")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson interval of a proportion ``k / n``: how far the measured precision of ``n`` kept pairs could be
    from the precision such pairs have in general (an error inside it is within the task's own noise)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(mid - half), float(mid + half)


def evaluate(m: Mined, cal, *, target: float = TARGET) -> dict:
    """Estimated against measured precision at the estimator's ``target`` threshold, and the recall against the
    true ``target`` cut."""
    t90 = true_cut(m.score, m.ok, target)
    true90 = int(m.ok[m.score >= t90].sum())
    out = {"pairs": len(m.score), "right": int(m.ok.sum()), "true_cut": None if np.isinf(t90) else round(t90, 5),
           "true_cut_right": true90}
    t = None if cal is None else cal.threshold_for(target)
    if t is None:
        return {**out, "threshold": None, "kept": 0, "estimated": None, "true": None, "error": None,
                "recall_vs_true90": 0.0 if true90 else None,
                "overlap_estimated": None if cal is None else round(1 - cal.pi0, 4),
                "overlap_true": round(float(m.ok.mean()), 4) if len(m.ok) else None}
    keep = m.score >= t
    est = 100 * cal.precision_at(t)
    true = 100 * float(m.ok[keep].mean()) if keep.any() else float("nan")
    lo, hi = wilson(int(m.ok[keep].sum()), int(keep.sum()))
    return {**out, "threshold": round(float(t), 5), "kept": int(keep.sum()), "kept_right": int(m.ok[keep].sum()),
            "estimated": round(est, 2), "true": round(true, 2), "error": round(est - true, 2),
            "true_interval": [round(100 * lo, 2), round(100 * hi, 2)],
            "recall_vs_true90": round(float(m.ok[keep].sum()) / true90, 4) if true90 else None,
            "overlap_estimated": round(1 - cal.pi0, 4), "overlap_true": round(float(m.ok.mean()), 4),
            **({"fallback": True} if getattr(cal, "fallback", False) else {})}


def estimators() -> dict:
    """Name -> function(Mined) -> Calibration | None: the estimators compared."""
    from bisent.calibration import calibrate_mined, mining_negatives, mutual_pairs

    def by(pi0: str):
        def est(m: Mined):
            neg = mining_negatives(m.cands, "ratio", m.src, m.tgt, m.score, with_mutual=True)
            return calibrate_mined(m.score, mutual_pairs(m.cands, m.src, m.tgt), neg, pi0=pi0)
        return est

    return {name: by(name) for name in ("split", "storey", "em", "joint")}


def task_grid(split: str, encoder: str, *, sources=SOURCES, overlaps=OVERLAPS, sizes=None) -> list[tuple]:
    """(domain, src, tgt, overlap, size) of every task measured with ``encoder`` on ``split``."""
    if sizes is None:
        sizes = SIZES_SLOW if encoder in SLOW_ENCODERS else SIZES
    return [(d, s, t, o, n) for d, s, t in sources for n in sizes for o in overlaps]


def run(split: str, encoders: list, record: Recorder, *, sources=SOURCES, overlaps=OVERLAPS, sizes=None,
        which=None) -> list[dict]:
    """Every task of :func:`task_grid` with every encoder and estimator, one record per task and estimator."""
    ests = estimators()
    which = list(which or ests)
    unknown = set(which) - set(ests)
    if unknown:
        raise BisentError(f"unknown estimator(s) {sorted(unknown)} (known: {', '.join(ests)})")
    out = []
    for enc in encoders:
        seen = set()
        for d, s, t, o, n in task_grid(split, enc.name, sources=sources, overlaps=overlaps, sizes=sizes):
            task = build_task(d, s, t, split, o, n)
            key = (d, s, t, len(task.src), len(task.tgt), len(task.gold))
            if not full_size(task) or key in seen:   # the split's documents ran out: a smaller task, built already
                continue
            seen.add(key)
            t0 = time.perf_counter()
            m = mine_task(task, enc)
            for name in which:
                cal = ests[name](m)
                out.append(record({"domain": d, "pair": f"{s}-{t}", "split": split, "encoder": enc.name,
                                   "encoder_id": enc.id, "overlap": o, "size": n, "src": len(task.src),
                                   "tgt": len(task.tgt), "gold": len(task.gold), "estimator": name,
                                   **evaluate(m, cal), "seconds": round(time.perf_counter() - t0, 2)}))
    return out


def summarise(records: list[dict], tolerance: float = 3.0, recall: float = 0.95) -> list[dict]:
    """Per estimator and encoder: tasks, the largest and mean |error| (with a 95 % bootstrap interval over tasks),
    tasks within ``tolerance``, tasks whose estimate lies in the measured precision's 95 % interval, and tasks with
    recall at least ``recall`` of the true 90 % cut."""
    groups: dict = {}
    for r in records:
        groups.setdefault((r["estimator"], r["encoder"]), []).append(r)
    out = []
    for (name, enc), rs in sorted(groups.items()):
        errs = [abs(r["error"]) for r in rs if r["error"] is not None]
        rec = [r["recall_vs_true90"] for r in rs if r["recall_vs_true90"] is not None]
        inside = [r["true_interval"][0] <= r["estimated"] <= r["true_interval"][1] for r in rs
                  if r.get("true_interval") is not None]
        boot = np.random.default_rng(0).choice(errs, (2000, len(errs))).mean(axis=1) if errs else None
        out.append({"summary": True, "estimator": name, "encoder": enc, "tasks": len(rs),
                    "no_threshold": sum(r["threshold"] is None for r in rs),
                    "max_abs_error": round(max(errs), 2) if errs else None,
                    "mean_abs_error": round(float(np.mean(errs)), 2) if errs else None,
                    "mean_abs_error_interval": [round(float(np.quantile(boot, 0.025)), 2),
                                                round(float(np.quantile(boot, 0.975)), 2)] if errs else None,
                    "estimate_in_true_interval": sum(inside),
                    "within_tolerance": sum(e <= tolerance for e in errs),
                    "recall_met": sum(x >= recall for x in rec), "min_recall": round(min(rec), 4) if rec else None})
    return out


def main(argv=None) -> None:
    from bisent.encoders import get_encoder

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--split", default="dev", choices=("dev", "test", "train"))
    ap.add_argument("-e", "--encoder", action="append", default=None,
                    help="encoder (repeatable; default use-m3 and me5-small, the anchors, in the same run)")
    ap.add_argument("--source", action="append", default=None,
                    help="domain:src-tgt (repeatable; default: every one of SOURCES)")
    ap.add_argument("--overlap", type=float, action="append", default=None)
    ap.add_argument("--size", type=int, action="append", default=None)
    ap.add_argument("--estimator", action="append", default=None)
    add_results_option(ap)
    a = ap.parse_args(argv)
    sources = SOURCES
    if a.source:
        sources = []
        for s in a.source:
            dom, _, pair = s.partition(":")
            src, _, tgt = pair.partition("-")
            if not (dom and src and tgt):
                raise SystemExit(f"--source {s!r}: expected DOMAIN:SRC-TGT, e.g. gettext:en-ru")
            sources.append((dom, src, tgt))
    rec = Recorder("mine_calibration", a.results,
                   options={k: v for k, v in vars(a).items() if k != "results"})
    encs = [get_encoder(e) for e in (a.encoder or ["use-m3", "me5-small"])]
    records = run(a.split, encs, rec, sources=sources, overlaps=a.overlap or OVERLAPS, sizes=a.size,
                  which=a.estimator)
    for s in summarise(records):
        rec(s)


if __name__ == "__main__":
    main()

"""What a report shows about one run, as plain JSON: binned scores, counts, samples, calibration.

A *run record* is written beside a run's output by ``--report`` on ``bisent
mine`` / ``bisent filter`` (``OUTPUT.report.json``), and read back by ``bisent
report RUN_DIR``. Its size does not depend on the run's: scores are binned
(:data:`BINS`), pairs are sampled per score band (:data:`BANDS` ×
:data:`PER_BAND`, texts cut at :data:`MAX_CHARS`). A run folder without
records still gets a report from its files (a mined TSV, a filter summary
and its rejected file), without the parts only the run itself knows
(retrieval directions, the kept pairs' scores, the calibration).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..errors import BisentError
from ..io import atomic_write
from .finished import SUFFIX, check_record, read_json_object, read_record, sniff_kind, tsv_rows  # noqa: F401

BINS = 60
BANDS = 6
PER_BAND = 5
MAX_CHARS = 240
#: The reason of the pairs ``--precision`` moved from kept to rejected (bisent.report.runs.finish_filter)
PRECISION_CUT = "select:precision"


def binned(series: dict[str, np.ndarray], bins: int = BINS) -> dict:
    """Common-edge histograms of several score arrays: ``{"edges": [...], "series": {name: counts}}``."""
    finite = [np.asarray(v, dtype=np.float64)[np.isfinite(v)] for v in series.values()]
    allv = np.concatenate(finite) if finite else np.zeros(0)
    if len(allv) == 0:
        return {"edges": [], "series": {}}
    lo, hi = float(allv.min()), float(allv.max())
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    return {"edges": [round(float(e), 6) for e in edges],
            "series": {k: np.histogram(v, bins=edges)[0].tolist() for k, v in zip(series, finite) if len(v)}}


def cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1] + "…"


def band_samples(scores: np.ndarray, row, *, bands: int = BANDS, per_band: int = PER_BAND, seed: int = 0) -> list[dict]:
    """Per score band (equal-count bands, best first) a few rows: ``row(i)`` gives row i as a dict."""
    scores = np.asarray(scores, dtype=np.float64)
    ok = np.flatnonzero(np.isfinite(scores))
    if len(ok) == 0:
        return []
    order = ok[np.argsort(-scores[ok], kind="stable")]
    rng = random.Random(seed)
    out = []
    for part in np.array_split(order, min(bands, len(order))):
        pick = sorted(rng.sample(list(part), min(per_band, len(part))), key=lambda i: -scores[i])
        out.append({"high": float(scores[part[0]]), "low": float(scores[part[-1]]), "pairs": len(part),
                    "rows": [row(int(i)) for i in pick]})
    return out


def yield_curve(scores: np.ndarray, points: int = 101) -> dict:
    """Pairs kept against the threshold, for runs without a calibration."""
    s = np.sort(np.asarray(scores, dtype=np.float64)[np.isfinite(scores)])
    if len(s) == 0:
        return {"thresholds": [], "kept": []}
    grid = np.linspace(s[0], s[-1], points)
    return {"thresholds": [round(float(t), 6) for t in grid],
            "kept": (len(s) - np.searchsorted(s, grid, side="left")).tolist()}


def write_record(record: dict, path) -> Path:
    with atomic_write(path) as f:
        json.dump(record, f, ensure_ascii=False, indent=1)
        f.write("\n")
    return Path(path)


# ---------------------------------------------------------------------------
# Reading what a run left behind
# ---------------------------------------------------------------------------

def read_mined(path) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Scores (n,) and (src, tgt) texts of a mined TSV (``score<TAB>src<TAB>tgt[...]``)."""
    scores, texts = [], []
    for n, cols in tsv_rows(path):
        try:
            scores.append(float(cols[0]))
        except ValueError:
            raise BisentError(f"{path}:{n}: not a mined pair (score<TAB>src<TAB>tgt)") from None
        if len(cols) < 3:
            raise BisentError(f"{path}:{n}: not a mined pair (score<TAB>src<TAB>tgt)")
        texts.append((cols[1], cols[2]))
    return np.asarray(scores, dtype=np.float64), texts


def read_rejected(path) -> Iterable[tuple[int, str, float, str, str]]:
    """``(lineno, reason, score, src, tgt)`` of a filter's rejected file (score NaN where there is none)."""
    for n, cols in tsv_rows(path):
        if len(cols) < 3:
            raise BisentError(f"{path}:{n}: not a rejected line (lineno<TAB>reason<TAB>score<TAB>line)")
        try:
            lineno = int(cols[0])
            score = float(cols[2]) if cols[2] and "," not in cols[2] else float("nan")
        except ValueError:
            raise BisentError(f"{path}:{n}: not a rejected line (lineno<TAB>reason<TAB>score<TAB>line)") from None
        yield lineno, cols[1], score, cols[3] if len(cols) > 3 else "", cols[4] if len(cols) > 4 else ""


def mining_record(scores: np.ndarray, texts: Sequence[tuple[str, str]], *, threshold: float | None = None,
                  directions: np.ndarray | None = None, calibration=None, params: dict | None = None,
                  summary: dict | None = None, explanations: list | None = None,
                  precision_target: float | None = None) -> dict:
    """The record of a mining run: ``scores`` (n,) of every retrieved pair before the threshold.

    ``directions`` (n,) of str: how each pair was retrieved ("both ways",
    "forward only", "backward only"), when the run knows.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if directions is not None and len(scores):
        order = ("both ways", "forward only", "backward only")
        names = sorted(set(directions.tolist()), key=lambda d: (order.index(d) if d in order else 9, d))
        hist = binned({d: scores[directions == d] for d in names})
        counts = {d: int((directions == d).sum()) for d in names}
        if threshold is not None:
            counts.update({f"{d}, kept": int(((directions == d) & (scores >= threshold)).sum()) for d in names})
    else:
        hist = binned({"retrieved": scores})
        counts = {}
    kept = int((scores >= threshold).sum()) if threshold is not None else len(scores)
    counts = {"retrieved": len(scores), "kept": kept, **counts}
    dirs = directions

    def row(i):
        r = {"score": round(float(scores[i]), 4), "src": cut(texts[i][0]), "tgt": cut(texts[i][1])}
        if dirs is not None:
            r["how"] = str(dirs[i])
        return r

    return {"kind": "mining", "params": params or {}, "summary": summary or {}, "threshold": threshold,
            "precision_target": precision_target, "counts": counts, "histogram": hist,
            "samples": band_samples(scores, row), "yield": yield_curve(scores),
            "calibration": calibration.as_dict() if calibration is not None else None,
            "explanations": explanations or []}


def filter_record(summary: dict, rejected: Sequence[tuple[int, str, float, str, str]], *, score_step: str | None,
                  kept_scores: np.ndarray | None = None, kept_texts: Sequence[tuple[str, str]] | None = None,
                  threshold: float | None = None, calibration=None, params: dict | None = None,
                  precision_target: float | None = None, explain=None) -> dict:
    """The record of a filter run from its summary, its rejected lines and (when known) the kept pairs' scores.

    ``explain(src, tgt) -> str``: each step's value for a pair and the one that rejects it
    (:func:`bisent.report.explain.filter_decision`), added to every sampled pair as ``steps``.
    """
    by_reason: dict[str, list[float]] = {}
    for _, reason, score, _, _ in rejected:
        by_reason.setdefault(reason, []).append(score)
    series = {}
    if kept_scores is not None:
        series["kept"] = np.asarray(kept_scores, dtype=np.float64)
    if score_step and score_step in by_reason:
        series[f"rejected by {score_step}"] = np.asarray(by_reason[score_step])
    if PRECISION_CUT in by_reason:          # kept by the step, then cut by --precision: same axis, own colour
        series["removed by --precision"] = np.asarray(by_reason[PRECISION_CUT])
    other = {r: np.asarray(v) for r, v in by_reason.items() if r not in (score_step, PRECISION_CUT)
             and np.isfinite(v).any() and not r.startswith("bad_row")}
    counts = {"kept": int(summary.get("kept", 0)), **{r: int(n) for r, n in
                                                      (summary.get("rejected_by")
                                                       or Counter(r[1] for r in rejected)).items()}}
    rows = [(score, reason, src, tgt) for _, reason, score, src, tgt in rejected]
    if kept_scores is not None and kept_texts is not None:
        rows += [(float(s), "kept", a, b) for s, (a, b) in zip(kept_scores, kept_texts)]
    step_rows = [r for r in rows if r[1] in ("kept", score_step, PRECISION_CUT)]
    sc = np.asarray([r[0] for r in step_rows], dtype=np.float64)

    steps = (lambda a, b: {"steps": explain(a, b)}) if explain is not None else (lambda a, b: {})

    def row(i):
        score, reason, src, tgt = step_rows[i]
        return {"score": round(score, 4), "decided": reason, **steps(src, tgt), "src": cut(src), "tgt": cut(tgt)}

    rng = random.Random(0)
    others = {}
    for reason in sorted({r[1] for r in rows} - {"kept", score_step, PRECISION_CUT}):
        mine = [r for r in rows if r[1] == reason]
        others[reason] = [{"score": None if not np.isfinite(s) else round(s, 4), **steps(a, b), "src": cut(a),
                           "tgt": cut(b)} for s, _, a, b in rng.sample(mine, min(PER_BAND, len(mine)))]
    return {"kind": "filter", "params": params or {}, "summary": {k: v for k, v in summary.items() if k != "pipeline"},
            "score_step": score_step, "threshold": threshold, "precision_target": precision_target,
            "counts": counts, "histogram": binned(series), "other_scores": {r: binned({r: v})
                                                                            for r, v in other.items()},
            "samples": band_samples(sc, row), "rejected_samples": others,
            "yield": yield_curve(sc), "calibration": calibration.as_dict() if calibration is not None else None,
            "explanations": []}


def labelled_record(kind: str, scores: np.ndarray, labels: Sequence[str], row, *, counts: dict,
                    threshold: float | None = None, params: dict | None = None, summary: dict | None = None,
                    calibration=None) -> dict:
    """The record of a run whose items carry a label and maybe a score (NaN where none): documents
    matched or not (``docs``), alignment blocks per type (``align``). ``row(i)`` gives item i as a dict."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=object)
    names = list(dict.fromkeys(labels.tolist()))
    return {"kind": kind, "params": params or {}, "summary": summary or {}, "threshold": threshold,
            "precision_target": None, "counts": counts, "histogram": binned({n: scores[labels == n] for n in names}),
            "samples": band_samples(scores, row), "yield": yield_curve(scores),
            "calibration": calibration.as_dict() if calibration is not None else None, "explanations": []}


def docs_record(path, *, src_text: dict | None = None, tgt_text: dict | None = None, threshold: float | None = None,
                params: dict | None = None, summary: dict | None = None, calibration=None) -> dict:
    """The record of a ``bisent documents mine`` output: scores of matched and unmatched documents, counts per
    status, matched pairs sampled per score band (``src_text`` / ``tgt_text``: id -> a text to show),
    and the run's calibration when given (:func:`bisent.report.runs.documents_calibration`)."""
    from ..documents import MINE_COLUMNS

    rows = [cols for _, cols in tsv_rows(path)]
    if not rows or rows[0] != list(MINE_COLUMNS):
        raise BisentError(f"{path}:1: expected the header {' '.join(MINE_COLUMNS)} of 'bisent documents mine'")
    rows = rows[1:]
    scores = np.asarray([float(r[2]) if r[2] else np.nan for r in rows], dtype=np.float64)
    labels = ["matched" if r[4] == "matched" else "unmatched" for r in rows]
    matched = np.where(np.asarray(labels) == "matched", scores, np.nan) if rows else scores

    def row(i):
        r = rows[i]
        return {"score": round(float(scores[i]), 4), "src_id": r[0], "tgt_id": r[1],
                "src": cut((src_text or {}).get(r[0], r[0])), "tgt": cut((tgt_text or {}).get(r[1], r[1]))}

    rec = labelled_record("docs", scores, labels, row, counts=dict(Counter(r[4] for r in rows)), threshold=threshold,
                          params=params, summary=summary, calibration=calibration)
    rec["samples"] = band_samples(matched, row)
    return rec


def align_record(paths: Sequence, *, params: dict | None = None, summary: dict | None = None) -> dict:
    """The record of ``bisent align`` outputs (aligned TSVs): block scores per block type (1-1, 1-2, 1-0, ...),
    counts per type and of unaligned lines, blocks sampled per score band."""
    scores, labels, rows = [], [], []
    for path in paths:
        for n, cols in tsv_rows(path):
            if len(cols) < 5:
                raise BisentError(f"{path}:{n}: not an aligned row (src_lines<TAB>tgt_lines<TAB>score<TAB>src<TAB>tgt)")
            size = [len(c.split(",")) if c else 0 for c in cols[:2]]
            try:
                scores.append(float(cols[2]) if cols[2] and cols[2] != "empty" else np.nan)
            except ValueError:
                raise BisentError(f"{path}:{n}: score {cols[2]!r} is not a number") from None
            labels.append("empty line" if cols[2] == "empty" else f"{size[0]}-{size[1]}")
            rows.append((cols[3], cols[4]))
    unaligned = {"unaligned source lines": sum(int(lb.split("-")[0]) for lb in labels if lb.endswith("-0")),
                 "unaligned target lines": sum(int(lb.split("-")[1]) for lb in labels if lb.startswith("0-"))}

    def row(i):
        return {"score": round(float(scores[i]), 4), "block": labels[i], "src": cut(rows[i][0]), "tgt": cut(rows[i][1])}

    types = Counter(labels)
    counts = {**{k: types[k] for k in sorted(types, key=lambda t: (t == "empty line", t))}, **unaligned}
    rec = labelled_record("align", np.asarray(scores, dtype=np.float64), labels, row, counts=counts, params=params,
                          summary=summary)
    rec["files"] = [Path(p).name for p in paths]   # read back by records_from_folder, not again as mined TSVs
    return rec


#: Files bisent writes that are no run of their own: name pattern -> what they are (said as skipped in the report)
NOT_RUNS = (("*.ids.tsv", "ids of the pairs (document numbers), not scores"),
            ("*.review.jsonl", "labels of bisent review (shown with their run)"),
            ("summary.jsonl", "alignment progress log"), ("manifest.json", "run manifest"),
            ("state.json", "resume state"), ("*.blocks", "alignment blocks"), ("*.jsonl", "log"),
            ("*.yaml", "configuration"), ("*.html", "a report"), ("*.json", "summary without scores"))
#: Folders a run folder may hold, searched for runs (``bisent run``'s stages)
RUN_SUBFOLDERS = ("filter", "align", "documents", "mine", "docs")


def records_from_folder(run_dir) -> list[tuple[str, dict]]:
    """``(name, record)`` of every run in ``run_dir`` (a folder, or one record / mined TSV / summary file)."""
    return folder_runs(run_dir)[0]


def _files(p: Path) -> list[tuple[str, Path]]:
    """``(name relative to p, path)`` of the files of ``p`` and of its run subfolders (or ``p`` itself)."""
    if not p.is_dir():
        return [(p.name, p)]
    out = [(f.name, f) for f in sorted(p.iterdir()) if f.is_file()]
    for sub in RUN_SUBFOLDERS:
        if (p / sub).is_dir():
            out += [(f"{sub}/{f.name}", f) for f in sorted((p / sub).iterdir()) if f.is_file()]
    return out


def _looks_rejected(f: Path) -> bool:
    """A filter's rejected file: ``lineno<TAB>reason<TAB>score...`` with a line number and a word for reason."""
    for _, cols in tsv_rows(f):
        if len(cols) < 3 or not cols[0].isdigit():
            return False
        try:
            float(cols[1])
        except ValueError:
            return True
        return False
    return False


def folder_runs(run_dir) -> tuple[list[tuple[str, dict]], list[tuple[str, str]]]:
    """``(name, record)`` of every run in ``run_dir`` and ``(file, why)`` of each file left out: records
    (``*.report.json``, also in ``filter/``, ``align/``, ... of a ``bisent run`` folder), filter summaries
    (with their rejected files), mined TSVs; ids, rejected lines already read, logs and states are skipped."""
    p = Path(run_dir)
    if not p.exists():
        raise BisentError(f"{p}: no such run folder")
    files = _files(p)
    names = {name for name, _ in files}
    out: list[tuple[str, dict]] = []
    covered: dict[str, str] = {}

    def cover(name: str, why: str) -> None:
        covered.setdefault(name, why)

    for name, f in files:
        if name.endswith(SUFFIX):
            rec = read_record(f)
            run = name[:-len(SUFFIX)]
            out.append((run, rec))
            cover(run, f"the output of run {run}")
            folder = run.rpartition("/")[0]
            for g in rec.get("files", []):
                cover(f"{folder}/{g}" if folder else g, f"read with run {run}")
            if rec.get("kind") == "filter":
                for key in ("rejected_file", "kept_file"):
                    g = (rec.get("summary") or {}).get(key)
                    if g:
                        cover(f"{folder}/{Path(g).name}" if folder else Path(g).name, f"read with run {run}")
    for name, f in files:   # filter summaries first: their kept and rejected files are not mined TSVs
        if f.suffix == ".json" and not name.endswith(SUFFIX):
            summ = read_json_object(f)
            if "rejected_by" in summ and "rejected_file" in summ:
                folder = name.rpartition("/")[0]
                rel = {k: (f"{folder}/" if folder else "") + Path(summ.get(k) or "").name
                       for k in ("rejected_file", "kept_file")}
                if rel["kept_file"] + SUFFIX in names:
                    cover(name, f"summary of run {rel['kept_file']} (its record is read)")
                    continue
                cover(name, "read as a filter run")
                for g in rel.values():
                    cover(g, f"read with filter run {name}")
                rej = Path(summ["rejected_file"])
                rej = rej if rej.is_absolute() or rej.exists() else f.parent / rej.name
                rejected = list(read_rejected(rej)) if rej.exists() else []
                steps = (summ.get("pipeline") or {}).get("steps") or []
                last = steps[-1] if steps else {}
                step = last.get("name") or last.get("type") if isinstance(last, dict) else None
                out.append((name[:-len(".json")], filter_record(summ, rejected, score_step=step)))
    skipped: list[tuple[str, str]] = []
    for name, f in files:
        if name.endswith(SUFFIX) or name in covered:
            continue
        why = next((w for pat, w in NOT_RUNS if f.match(pat)), None)
        if why is None and f.suffix in (".tsv", ".gz", ".xz"):
            if _looks_rejected(f):
                why = "rejected lines of a filter with no summary beside them"
            elif f.parent.name == "align" and p.is_dir() and f.parent != p:
                why = "aligned document (read by an align record)"
            elif _looks_mined(f):
                scores, texts = read_mined(f)
                out.append((name, mining_record(scores, texts)))
                continue
        skipped.append((name, why or "not a file kind bisent reports"))
    if not out:
        raise BisentError(f"{p}: no run found (a *{SUFFIX} record, a mined TSV or a filter summary JSON"
                          f"{'' if p.is_dir() else ', or a folder of them'})")
    return out, skipped


def _looks_mined(f: Path) -> bool:
    """Mined rows (:func:`bisent.report.finished.sniff_kind`), or an empty ``.tsv`` (a run that mined nothing)."""
    return sniff_kind(f) == "mining" or (f.stat().st_size == 0 and f.suffix == ".tsv")

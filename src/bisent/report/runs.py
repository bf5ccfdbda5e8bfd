"""``--report`` and ``--precision`` of ``bisent mine`` / ``bisent filter``: what the run knows, kept for the report.

Mining: the CLI wraps its scorer in :class:`RecordingScorer` (so the candidates
``mine`` computes are kept, no second kNN) and mines without a threshold;
:func:`finish_mining` then calibrates, chooses the threshold (given, or the
one reaching ``--precision``), cuts the output to it (it is sorted best
first), and writes ``OUTPUT.report.json`` and the HTML report.

Filtering: :func:`finish_filter` reads the kept and rejected files, scores the
kept pairs at the pipeline's score step (embeddings come from the cache),
calibrates with synthetic negatives put through the same pipeline, and with
``--precision`` moves kept pairs below the chosen threshold to the rejected
file with the reason ``select:precision``.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np

from ..calibration import (
    FALLBACK_QUANTILE,
    calibrate,
    filter_negatives,
    low_overlap_warning,
    mining_calibration,
    mining_fallback,
    mining_negatives,
)
from ..errors import BisentError
from ..io import atomic_write, format_block
from . import record as rec_mod
from .html import render

#: Synthetic negatives of a filter run are made from its first this many well-formed lines (in file order,
#: so that "neighbour" pairs are neighbours in the document).
NEGATIVES_FROM = 20_000


class RecordingScorer:
    """A :class:`bisent.mining.scoring.Scorer` that keeps the last candidates it scored (``cands_``)."""

    def __init__(self, scorer):
        self.scorer = scorer
        self.cands_ = None

    def __getattr__(self, name):
        return getattr(self.scorer, name)

    def fit(self, targets, sources=None) -> "RecordingScorer":
        self.scorer.fit(targets, sources)
        return self

    def score(self, sources, **kw):
        self.cands_ = self.scorer.score(sources, **kw)
        return self.cands_


def directions(cands, src: np.ndarray, tgt: np.ndarray) -> np.ndarray:
    """How each pair (src[i], tgt[i]) was found: 'both ways', 'forward only' or 'backward only'."""
    fwd = cands.fwd_idx[src, cands.fwd_score[src].argmax(axis=1)] == tgt
    bwd = cands.bwd_idx[tgt, cands.bwd_score[tgt].argmax(axis=1)] == src
    return np.where(fwd & bwd, "both ways", np.where(fwd, "forward only", "backward only"))


def _mined_pairs(cands, retrieval: str):
    from ..mining.retrieval import retrieve

    pairs = retrieve(cands, retrieval) if cands is not None else []
    pairs.sort(key=lambda p: (-p.score, p.src, p.tgt))   # the order mine() writes them in
    return (np.array([p.src for p in pairs], dtype=np.int64), np.array([p.tgt for p in pairs], dtype=np.int64),
            np.array([p.score for p in pairs], dtype=np.float64))


def choose_threshold(cal, threshold: float | None, precision: float | None) -> float | None:
    """The run's threshold: the one given, or the lowest reaching the estimated ``precision``."""
    if precision is not None and threshold is not None:
        raise BisentError("give --threshold or --precision, not both")
    if precision is None:
        return threshold
    if cal is None or not cal.thresholds:
        raise BisentError("--precision: the run has too few scores to calibrate a threshold")
    t = cal.threshold_for(precision)
    if t is None:
        raise BisentError(f"--precision {precision}: no threshold reaches that estimated precision "
                          f"(best {max(cal.precision):.3f}); ask for less")
    return t


def finish_mining(recorder: RecordingScorer, src_path, tgt_path, output, *, fmt: str = "plain", retrieval: str = "max",
                  threshold: float | None = None, precision: float | None = None, report=None, params=None,
                  write_record: bool = True, fallback: bool = False) -> dict:
    """Calibrate, threshold and report a run mined (without threshold) into ``output``; returns summary fields
    (``write_record=False``: no ``OUTPUT.report.json`` unless there is a ``report``; ``fallback``: as
    :func:`mining_report`)."""
    from ..mining.retrieval import read_collection, unique_rows

    scores, texts = rec_mod.read_mined(output)
    src_u = unique_rows(read_collection(src_path, fmt)[0])[0]
    tgt_u = unique_rows(read_collection(tgt_path, fmt)[0])[0]
    record, cal = mining_report(recorder, scores, texts, src_u, tgt_u, retrieval=retrieval, threshold=threshold,
                                precision=precision, params=params, fallback=fallback)
    threshold, kept = record["threshold"], record["counts"]["kept"]
    if kept < len(scores):
        below = _keep_prefix(output, kept, below=below_path(output), below_max=min(max(BELOW_PAIRS, kept), BELOW_MAX))
        record["below"] = {"file": below_path(output).name, "pairs": below}
    else:
        below_path(output).unlink(missing_ok=True)          # a previous run's, at this output
    record["summary"] = {"pairs": kept, "output": str(output)}
    out = {"pairs": kept, "threshold": threshold,
           "estimated_precision": None if cal is None or threshold is None else round(cal.precision_at(threshold), 4),
           **({"fallback": record["fallback"]["reason"]} if "fallback" in record else {})}
    if write_record or report:
        out["record"] = str(rec_mod.write_record(record, f"{output}{rec_mod.SUFFIX}"))
    if report:
        out["report"] = str(render([(Path(output).name, record)], report, title=f"bisent mine: {Path(output).name}"))
    return out


def mining_report(recorder: RecordingScorer, scores, texts, src_texts, tgt_texts, *, retrieval: str = "max",
                  threshold: float | None = None, precision: float | None = None, params=None, explain: int = 3,
                  fallback: bool = False):
    """The record (and calibration) of a mining run from its recorded candidates.

    ``scores``/``texts``: the mined pairs before the threshold, best first, as
    written; ``src_texts``/``tgt_texts``: the rows the candidates index.
    ``fallback`` (the default threshold): where the estimate cannot set the cut
    (:func:`bisent.calibration.mining_fallback`: too few pairs, or no threshold
    reaching ``precision``), the run keeps the pairs from the cut that
    :data:`bisent.calibration.FALLBACK_QUANTILE` of its simulated false pairs
    stay under, with a warning on standard error and in the record.
    """
    cands = recorder.cands_
    ps, pt, sc = _mined_pairs(cands, retrieval)
    if len(scores) != len(sc) or not np.allclose(scores, sc, atol=2e-6):
        raise RuntimeError("the mined pairs do not match the recorded candidates")
    cal = mining_calibration(cands, recorder.kind, ps, pt, sc)
    why = mining_fallback(cal, precision) if fallback and precision is not None else None
    warnings = []
    if why is not None:
        threshold = cal.fallback_threshold
        warnings.append(f"bisent: warning: {why}; kept the pairs scoring >= {threshold:.4g}, above "
                        f"{FALLBACK_QUANTILE:.0%} of the simulated false pairs (a fallback whose precision is not "
                        f"estimated): check a sample with `bisent review` or give --threshold")
    else:
        threshold = choose_threshold(cal, threshold, precision)
    if precision is not None and (warning := low_overlap_warning(cal)):
        warnings.append(warning)
    for w in warnings:
        print(w, file=sys.stderr)
    dirs = directions(cands, ps, pt) if len(ps) else None
    explanations = [_explain_mined(cands, int(ps[i]), int(pt[i]), src_texts, tgt_texts)
                    for i in _near(sc, threshold, explain)]
    record = rec_mod.mining_record(sc, texts, threshold=threshold, directions=dirs, calibration=cal, params=params,
                                   explanations=explanations, precision_target=precision)
    if why is not None:
        record["fallback"] = {"reason": why, "threshold": threshold, "negatives_quantile": FALLBACK_QUANTILE}
    if warnings:
        record["warnings"] = [w.removeprefix("bisent: warning: ") for w in warnings]
    return record, cal


def _near(scores: np.ndarray, threshold: float | None, n: int) -> list[int]:
    """Indices of ``n`` pairs worth explaining: those nearest the threshold (or the median), both sides."""
    if len(scores) == 0 or n <= 0:
        return []
    t = threshold if threshold is not None else float(np.median(scores))
    order = np.argsort(np.abs(scores - t), kind="stable")
    return sorted(order[:n].tolist())


def _explain_mined(cands, i: int, j: int, src_texts, tgt_texts) -> dict:
    """An explanation of mined pair (i, j) from the run's own candidates (no embedding needed)."""
    knn = cands.knn
    fi = list(knn.fwd_idx[i])
    cos = float(knn.fwd_sim[i][fi.index(j)]) if j in fi else float("nan")
    ratio = next((float(s) for t, s in zip(cands.fwd_idx[i], cands.fwd_score[i]) if t == j),
                 next((float(s) for t, s in zip(cands.bwd_idx[j], cands.bwd_score[j]) if t == i), float("nan")))
    comp = lambda idx, sim, score, texts, other: [  # noqa: E731
        {"rank": r + 1, "cosine": float(s), "margin": float(m), "is_pair": int(t) == other,
         "text": rec_mod.cut(texts[int(t)])}
        for r, (t, s, m) in enumerate(zip(idx, sim, score)) if t >= 0]
    return {"src": rec_mod.cut(src_texts[i]), "tgt": rec_mod.cut(tgt_texts[j]), "cosine": cos, "ratio_margin": ratio,
            "r_src": float(cands.r_x[i]), "r_tgt": float(cands.r_y[j]),
            "src_competitors": comp(cands.fwd_idx[i], knn.fwd_sim[i], cands.fwd_score[i], tgt_texts, j),
            "tgt_competitors": comp(cands.bwd_idx[j], knn.bwd_sim[j], cands.bwd_score[j], src_texts, i),
            "alignment": {"note": "run `bisent explain SRC TGT --divergence DIR` for the word alignment"}}


def documents_calibration(a: np.ndarray, b: np.ndarray, *, src_ok: np.ndarray | None = None,
                          tgt_ok: np.ndarray | None = None, score: str = "ratio", k: int = 4, pi0: str = "storey"):
    """Calibration of a ``documents mine`` run, as for sentence mining: its own candidates, orphan negatives.

    ``a`` (n, d), ``b`` (m, d): the unit document embeddings; ``*_ok`` (n,)/(m,):
    documents taking part (the empty ones do not). Repeats the run's kNN on
    the documents taking part (documents are few, so it is cheap) and scores
    each confident pair's orphans against their best free competitor
    (:func:`bisent.calibration.mining_negatives`). None: too few pairs
    or negatives (``k`` < 2, or fewer than 10 orphans found a competitor). ``pi0``: as :func:`calibrate`.
    """
    from ..mining.scoring import Scorer

    src_ok = np.ones(len(a), bool) if src_ok is None else np.asarray(src_ok, bool)
    tgt_ok = np.ones(len(b), bool) if tgt_ok is None else np.asarray(tgt_ok, bool)
    if k < 2 or src_ok.sum() < 2 or tgt_ok.sum() < 2:
        return None
    cands = Scorer(score, min(k, int(src_ok.sum()), int(tgt_ok.sum()))).fit(b[tgt_ok]).score(a[src_ok])
    ps, pt, sc = _mined_pairs(cands, "max")
    if len(sc) < 2:
        return None
    neg = mining_negatives(cands, score, ps, pt, sc, fill_neighbourhood=False)   # as measured for documents
    return calibrate(sc, neg, pi0=pi0) if len(neg) >= 10 else None


def alignment_calibration(tsvs, encoder, src_lang: str, tgt_lang: str, *, pi0: str = "storey"):
    """Calibration of a ``bisent align`` run from its aligned TSVs (one per document pair).

    The observed scores are the aligned blocks' cosines (rows with both sides);
    the negatives are false blocks made from the same documents and scored by
    ``encoder`` as the aligner scores a block
    (:func:`bisent.calibration.alignment_negatives`). None: Gale-Church
    (its scores are no cosines), fewer than 2 blocks or 10 negatives.
    """
    from ..align.aligner import GALE_CHURCH
    from ..calibration import alignment_negatives
    from ..encoders import get_encoder

    if encoder == GALE_CHURCH:
        return None
    scores, docs = [], []
    for path in tsvs:
        blocks = []
        for _, cols in rec_mod.tsv_rows(path):   # align_record has checked the rows
            if cols[0] and cols[1] and cols[2] not in ("", "empty"):
                scores.append(float(cols[2]))
                blocks.append((cols[3], cols[4]))
        docs.append(blocks)
    if len(scores) < 2:
        return None
    neg = alignment_negatives(get_encoder(encoder), docs, src_lang, tgt_lang)
    return calibrate(scores, neg, pi0=pi0) if len(neg) >= 10 else None


def align_run_record(tsvs, encoder, src_lang: str, tgt_lang: str, *, params: dict | None = None,
                     summary: dict | None = None, calibration=None) -> dict:
    """The record of aligned TSVs (:func:`bisent.report.record.align_record`, which checks every row) with
    their calibration (:func:`alignment_calibration`, or ``calibration`` when the run already made it: the
    one ``bisent align --precision`` chose its threshold by, over every block before the threshold):
    ``bisent align --report`` and ``bisent run``'s align stage."""
    rec = rec_mod.align_record(tsvs, params=params, summary=summary)
    cal = calibration if calibration is not None else alignment_calibration(tsvs, encoder, src_lang, tgt_lang)
    rec["calibration"] = cal.as_dict() if cal is not None else None
    return rec


#: fewest and most pairs below the threshold a mining run keeps aside (``OUTPUT.below``; as many as it kept in
#: between), so that ``bisent review`` can sample under the cut and lower it where the labels say so
BELOW_PAIRS = 1000
BELOW_MAX = 100_000


def below_path(output) -> Path:
    """Where a mining run keeps the best pairs its threshold dropped (same format, best first)."""
    return Path(f"{output}.below")


def _keep_prefix(path, n: int, *, below=None, below_max: int = 0) -> int:
    """Keep the first ``n`` lines of ``path`` (atomically); with ``below``, the next ``below_max`` lines go there
    (atomically too). Returns how many went below."""
    from ..io import iter_raw_lines

    rest = []
    with atomic_write(path, "wb") as f:
        for k, raw in iter_raw_lines(path):
            if k <= n:
                f.write(raw + b"\n")
            elif below is not None and len(rest) < below_max:
                rest.append(raw)
            else:
                break
    if below is not None:
        with atomic_write(below, "wb") as f:
            f.writelines(raw + b"\n" for raw in rest)
    return len(rest)


# ---------------------------------------------------------------------------
# Filtering
# ---------------------------------------------------------------------------

def finish_filter(pairs_path, kept_path, rejected_path, summary: dict, config, src_lang: str, tgt_lang: str, *,
                  precision: float | None = None, report=None, summary_path=None, per_kind: int = 1000,
                  params=None) -> dict:
    """Score, calibrate, (with ``precision``) re-threshold and report a finished filter run over a ``src<TAB>tgt``
    file: :func:`finish_filter_pairs` on its kept and rejected files, which ``precision`` rewrites."""
    from ..filtering.records import show_line
    from ..io.bitext import iter_pairs, iter_units, open_bitext

    kept = list(iter_units(open_bitext(kept_path, fmt="tsv"), allow_empty=True))
    kept_raw = [u.raw for u in kept]
    kept_pairs = [None if u.problem else (u.src, u.tgt) for u in kept]
    rejected = list(rec_mod.read_rejected(rejected_path))
    out, drop, kept_scores = finish_filter_pairs(
        lambda: iter_pairs(pairs_path, fmt="tsv"), kept_pairs, rejected, summary, config, src_lang, tgt_lang,
        precision=precision, report=report, per_kind=per_kind, params=params,
        input_path=pairs_path, name=Path(kept_path).name, record_path=f"{kept_path}{rec_mod.SUFFIX}",
        linenos=lambda: _kept_linenos(pairs_path, kept_raw))
    if drop.any():
        linenos = _kept_linenos(pairs_path, kept_raw)
        with atomic_write(rejected_path) as f:
            for ln, reason, score, a, b in rejected:
                f.write(f"{ln}\t{reason}\t{'' if not np.isfinite(score) else f'{score:.6g}'}\t{a}\t{b}\n")
            for i in np.flatnonzero(drop):
                f.write(f"{linenos[i]}\tselect:precision\t{kept_scores[i]:.6g}\t{show_line(kept_raw[i])}\n")
        with atomic_write(kept_path, "wb") as f:
            f.writelines(raw + b"\n" for raw, d in zip(kept_raw, drop) if not d)
        if summary_path:
            with atomic_write(summary_path) as f:
                json.dump({**summary, **{k: out[k] for k in ("kept", "rejected", "rejected_by")}}, f, indent=2,
                          sort_keys=True)
                f.write("\n")
    return out


def finish_filter_pairs(well_formed, kept_pairs: list, rejected: list, summary: dict, config, src_lang: str,
                        tgt_lang: str, *, precision: float | None = None, report=None, per_kind: int = 1000,
                        params=None, input_path, name: str, record_path=None,
                        linenos=None) -> tuple[dict, np.ndarray, np.ndarray]:
    """Score, calibrate, (with ``precision``) re-threshold and report a finished filter run, of any format.

    ``well_formed()``: the run's well-formed input pairs, in order (negatives and the background sample come
    from them); ``kept_pairs``: the kept pairs, in order; ``rejected``: ``(n, reason, score, src, tgt)`` of each
    rejected pair (score NaN where there is none); ``summary``: the run's counts; ``linenos()``: the input
    numbers of the kept pairs (asked for only when ``precision`` drops some). The record goes to
    ``record_path`` (None: not written); ``name``, the kept output's, heads the report. Returns the fields for
    the summary, ``drop`` (k,) bool (the kept pairs ``precision`` moves to rejected) and the kept pairs' scores
    (k,).
    """
    from ..filtering import as_pipeline

    pipe = as_pipeline(config, src_lang, tgt_lang)
    if pipe.sample_size:
        pipe.prepare(well_formed())            # the same background sample the filter drew
    inputs = list(itertools.islice(well_formed(), NEGATIVES_FROM))
    step = next(s for s in pipe.steps if s.name == pipe.score_step)
    all_scores = np.asarray(pipe._score(step, kept_pairs) if kept_pairs else [], dtype=np.float64)
    kept_scores = all_scores
    observed = np.concatenate([kept_scores, [r[2] for r in rejected if r[1] == step.name]])
    cal = None
    if len(observed) >= 2 and len(inputs) >= 2:
        neg, _ = filter_negatives(pipe, inputs, per_kind=per_kind)
        cal = calibrate(observed, neg) if len(neg) >= 10 else None
    threshold = choose_threshold(cal, None if precision is not None else _step_min(summary, step.name), precision)
    drop = np.zeros(len(kept_pairs), dtype=bool)
    if precision is not None:
        drop = kept_scores < threshold
        if drop.any():
            nos = linenos()
            rejected = rejected + [(nos[i], "select:precision", float(kept_scores[i]), *kept_pairs[i])
                                   for i in np.flatnonzero(drop)]
            summary = {**summary, "kept": int((~drop).sum()), "rejected": summary["rejected"] + int(drop.sum()),
                       "rejected_by": {**summary["rejected_by"], "select:precision": int(drop.sum())}}
            kept_pairs = [p for p, d in zip(kept_pairs, drop) if not d]
            kept_scores = kept_scores[~drop]
    # what `bisent review` needs to score the kept pairs again: the recipe and the languages
    params = {**(params or {}), "src_lang": src_lang, "tgt_lang": tgt_lang, "input": str(Path(input_path).resolve())}
    if isinstance(config, (str, Path)):
        params["config"] = str(Path(config).resolve())
    elif isinstance(config, (dict, list)):
        params["config"] = config
    record = rec_mod.filter_record(summary, rejected, score_step=step.name, kept_scores=kept_scores,
                                   kept_texts=kept_pairs, threshold=threshold, calibration=cal, params=params,
                                   precision_target=precision, explain=lambda a, b: _decision(pipe, a, b, threshold))
    out = {"kept": summary["kept"], "rejected": summary["rejected"], "rejected_by": summary["rejected_by"],
           "threshold": threshold,
           "estimated_precision": None if cal is None or threshold is None else round(cal.precision_at(threshold), 4),
           **({"fallback": record["fallback"]["reason"]} if "fallback" in record else {})}
    if record_path is not None:
        out["record"] = str(rec_mod.write_record(record, record_path))
    if report:
        out["report"] = str(render([(name, record)], report, title=f"bisent filter: {Path(input_path).name}"))
    return out, drop, all_scores


def _decision(pipe, src: str, tgt: str, threshold: float | None) -> str:
    """Each step's value for the pair, the step that decided and, past them all, the run's threshold.

    The pair is put through the pipeline alone, so a step that remembers earlier pairs (duplicates)
    sees it as new.
    """
    from .explain import filter_decision

    d = filter_decision(pipe, src, tgt)
    out = ", ".join(d["steps"])
    if d["kept"] and threshold is not None and isinstance(d["score"], (int, float)) and d["score"] < threshold:
        out += f"; below the threshold {threshold:.4g} (rejects)"
    return out


def _step_min(summary: dict, name: str) -> float | None:
    """The score step's own lower bound (``accept: {min: ...}``) from the summary's pipeline, if any."""
    for s in (summary.get("pipeline") or {}).get("steps") or []:
        if isinstance(s, dict) and (s.get("name") or s.get("type")) == name:
            bound = (s.get("accept") or {}).get("min") if isinstance(s.get("accept"), dict) else None
            return float(bound) if bound is not None else None
    return None


def _kept_linenos(pairs_path, kept_raw: list[bytes]) -> list[int]:
    """Input line numbers of the kept lines (kept lines are the input's, byte for byte, in order)."""
    from ..io.bitext import iter_units, open_bitext

    out, k = [], 0
    for u in iter_units(open_bitext(pairs_path, fmt="tsv")):
        if k < len(kept_raw) and u.raw == kept_raw[k]:
            out.append(u.n)
            k += 1
    if k != len(kept_raw):
        raise BisentError(f"{pairs_path}: the kept lines are not lines of the input, in order")
    return out


def write_report(record: dict, record_path, report=None, *, title: str) -> dict:
    """Write ``record`` (the ``*.report.json`` sidecar) and, when ``report`` is given, its HTML page."""
    out = {"record": str(rec_mod.write_record(record, record_path))}
    if report:
        out["report"] = str(render([(title.split(": ")[-1], record)], report, title=title))
    return out


def unalign_below(tsv, blocks_file, threshold: float) -> int:
    """Rewrite an aligned TSV (and its ``[i]:[j]`` file, if any) with every aligned block scoring below
    ``threshold`` split into its 1-0 and 0-1 rows (unaligned, empty score): each line stays in exactly one row.
    Blocks without a score (line blocks merged from sentence blocks) are left as they are. Returns the
    number of TSV rows unaligned."""
    def below(score: str) -> bool:
        try:
            return float(score) < threshold
        except ValueError:
            return False

    rows, n = [], 0
    for _, cols in rec_mod.tsv_rows(tsv):
        if cols[0] and cols[1] and below(cols[2]):
            rows += [[cols[0], "", "", cols[3], ""], ["", cols[1], "", "", cols[4]]]
            n += 1
        else:
            rows.append(cols)
    with atomic_write(tsv) as f:
        f.write("".join("\t".join(r) + "\n" for r in rows))
    if blocks_file is not None and Path(blocks_file).is_file():
        from ..align.files import read_scored_alignment
        with atomic_write(blocks_file) as f:
            for src, tgt, score in read_scored_alignment(blocks_file):
                if src and tgt and score is not None and score < threshold:
                    f.write(format_block(src, ()) + "\n" + format_block((), tgt) + "\n")
                else:
                    f.write(format_block(src, tgt, score) + "\n")
    return n


def precision_threshold(tsvs, encoder: str, src_lang: str, tgt_lang: str, precision: float):
    """The lowest block score whose precision, estimated without gold over the aligned TSVs
    (:func:`alignment_calibration`, as ``bisent align --report`` calibrates), reaches ``precision``:
    ``(threshold, calibration)``."""
    if encoder == "gale-church":
        raise BisentError("--precision: Gale-Church scores are no cosines and cannot be calibrated; "
                          "give an encoder (-e)")
    cal = alignment_calibration(tsvs, encoder, src_lang, tgt_lang)
    return choose_threshold(cal, None, precision), cal


def unalign_all_below(tsvs, blocks_files, threshold: float) -> dict:
    """Unalign the blocks below ``threshold`` in every TSV (:func:`unalign_below`); the blocks unaligned and the
    lines (sentences with --split) left in unaligned rows after it."""
    unaligned = sum(unalign_below(tsv, blk, threshold) for tsv, blk in zip(tsvs, blocks_files, strict=True))
    left = {"src": 0, "tgt": 0}
    for tsv in tsvs:
        for _, cols in rec_mod.tsv_rows(tsv):
            if bool(cols[0]) != bool(cols[1]) and cols[2] != "empty":
                left["src" if cols[0] else "tgt"] += len((cols[0] or cols[1]).split(","))
    return {"blocks_below_threshold": unaligned, "unaligned_after_threshold": left}


def keep_precision(tsvs, blocks_files, encoder: str, src_lang: str, tgt_lang: str, precision: float):
    """``--precision``: blocks below :func:`precision_threshold` are unaligned in place. Returns the summary
    fields and the calibration."""
    t, cal = precision_threshold(tsvs, encoder, src_lang, tgt_lang, precision)
    return {"threshold": round(t, 6), "estimated_precision": round(cal.precision_at(t), 4),
            **unalign_all_below(tsvs, blocks_files, t)}, cal

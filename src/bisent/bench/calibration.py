"""Calibration benchmark: precision estimated without gold against the precision measured with gold.

Two settings per encoder, both on TEST documents of LibreOffice help:

- mining: the BUCC-like task of ``bench mining`` (ratio margin, k = 4,
  max-score retrieval); the estimate uses only the run's own candidates
  (:func:`bisent.calibration.mining_calibration`, as ``bisent mine
  --report``: non-mutual pairs counted as false, the mixture fitted to the
  mutual ones against the mutual orphan negatives); the record's
  ``diagnosis`` holds, with gold, the score quantiles of the true and false
  pairs and of the negatives, mutual and not (for diagnosis only);
- documents: ``bisent documents mine`` (Sentence-Avg, ratio margin, k = 4,
  max-score retrieval) over the candidate pool of ``bench docmine`` (every
  page of its four sources; me5-small on the LibreOffice test pages alone, as
  there); a matched pair is right when it is a gold page pair of any split;
  the estimate is :func:`bisent.report.runs.documents_calibration`;
- filtering: the noisy set of ``bench filter`` through the default pipeline
  with this encoder; the estimate uses synthetic negatives made from the noisy
  set itself and put through the same pipeline
  (:func:`bisent.calibration.filter_negatives`). The synthetic kinds
  (shuffled, neighbour, truncated, glued, copy) resemble the benchmark's noise
  kinds, which were built the same way: the mixing shares are what is estimated;
- align: ``SentenceAligner`` (this encoder, default settings) over the
  LibreOffice help pages of ``bench align``'s hardest view (``drop10-merge10``:
  a tenth of the paragraphs untranslated, a tenth merged on one side); a block
  is right when it is a gold block (strict, as ``bench align``'s precision);
  the estimate uses block negatives made from the run's own aligned documents
  (:func:`bisent.calibration.alignment_negatives`).

At five thresholds (score quantiles of the calibrated pairs: mining 50, 60,
70, 75, 80 %; documents and alignment 0, 10, 25, 50, 75 %; filtering 10, 30, 50, 70, 90 %) the record holds the
estimated and the measured precision, in points, and the largest absolute error.
"""

from __future__ import annotations

import numpy as np

from ..calibration import (
    ALIGN_NEGATIVES_DEFAULT,
    alignment_negatives,
    calibrate,
    calibrate_mined,
    filter_negatives,
    mining_negatives,
    mutual_pairs,
)
from ..datasets.comparable import make_mining_task
from ..datasets.libreoffice import load_pairs
from ..errors import BisentError
from ..mining.retrieval import retrieve
from ..mining.scoring import Scorer
from .common import Recorder

MINING_QUANTILES = (0.5, 0.6, 0.7, 0.75, 0.8)
FILTER_QUANTILES = (0.1, 0.3, 0.5, 0.7, 0.9)
DOCS_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75)   # most matched documents are right: the low thresholds matter
ALIGN_QUANTILES = DOCS_QUANTILES                # most aligned blocks are right too
#: the ``bench align`` view the align setting runs on (share of paragraphs dropped, merged)
ALIGN_VIEW = ("drop10-merge10", 0.1, 0.1)
#: How the false share is estimated, as records name it: :func:`calibrate`'s ``pi0`` (``storey``, ``em``) or, in
#: mining, :func:`bisent.calibration.calibrate_split` (``split``, the default there);
#: a record without the field was made with "em".
ESTIMATORS = {"joint": "joint", "split": "split-0.5", "storey": "storey-0.75", "em": "em"}
#: The estimator of each setting when none is given (``--estimator``).
DEFAULT_ESTIMATOR = {"mining": "storey", "docs": "storey", "filter": "storey", "align": "storey"}
#: The mining setting's names where they differ (its ``storey``: negatives unmoved, Storey's quantile
#: :data:`bisent.calibration.MINING_LAM`)
MINING_ESTIMATORS = {"storey": "storey-0.5-unmoved"}
#: Score quantiles of the mining record's ``diagnosis``.
DIAGNOSIS_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


def compare(scores: np.ndarray, correct: np.ndarray, negatives: np.ndarray | None, quantiles, *, cal=None,
            estimator: str = "storey") -> dict:
    """Estimated vs measured precision (points) at score quantiles, and the largest absolute error.

    The calibration is fitted to ``scores`` and ``negatives``, or given (``cal``).
    """
    if cal is None and (negatives is None or len(negatives) < 10 or len(scores) < 2):
        return {"points": [], "max_abs_error": None, "negatives": 0 if negatives is None else len(negatives),
                "note": "too few scores or synthetic negatives to calibrate"}
    cal = cal or calibrate(scores, negatives, pi0=estimator)
    points = []
    for q in quantiles:
        t = float(np.quantile(scores, q))
        measured = 100 * float(correct[scores >= t].mean())
        estimated = 100 * cal.precision_at(t)
        points.append({"quantile": q, "threshold": round(t, 4), "kept": int((scores >= t).sum()),
                       "measured": round(measured, 1), "estimated": round(estimated, 1),
                       "error": round(estimated - measured, 1)})
    return {"estimator": ESTIMATORS[estimator], "points": points, "max_abs_error": max(abs(p["error"]) for p in points),
            "pi0": cal.pi0, "pi0_measured": round(1 - float(correct.mean()), 4), "negatives": cal.n_negatives}


def mining(src_lang: str, tgt_lang: str, enc, *, max_gold: int | None = None, k: int = 4, progress=None,
           split: str = "test", estimator: str = "storey") -> dict:
    """The mining setting on the ``split`` documents (``dev``: a check apart from the recorded test tasks)."""
    task = make_mining_task(load_pairs(src_lang, tgt_lang), split, max_gold=max_gold, src_lang=src_lang,
                            tgt_lang=tgt_lang)
    x = enc.encode([t for _, t in task.src], src_lang, progress=progress)
    y = enc.encode([t for _, t in task.tgt], tgt_lang, progress=progress)
    cands = Scorer("ratio", k).fit(y).score(x)
    pairs = retrieve(cands, "max")
    ps = np.array([p.src for p in pairs])
    pt = np.array([p.tgt for p in pairs])
    sc = np.array([p.score for p in pairs], dtype=np.float64)
    gold = set(task.gold)
    ok = np.array([(task.src[p.src][0], task.tgt[p.tgt][0]) in gold for p in pairs])
    neg = mining_negatives(cands, "ratio", ps, pt, sc, with_mutual=True)
    mut = mutual_pairs(cands, ps, pt)
    cal = calibrate_mined(sc, mut, neg, pi0=estimator)                  # as mining_calibration, parts kept
    return {"setting": "mining", "score": "ratio", "k": k, "retrieval": "max", "pairs": len(sc),
            "gold": len(gold), **compare(sc, ok, neg.scores, MINING_QUANTILES, cal=cal, estimator=estimator),
            "estimator": MINING_ESTIMATORS.get(estimator, ESTIMATORS[estimator]),
            "diagnosis": mining_diagnosis(sc, ok, mut, neg.scores, neg.mutual)}


def mining_diagnosis(scores: np.ndarray, correct: np.ndarray, mutual: np.ndarray, negatives: np.ndarray,
                     neg_mutual: np.ndarray) -> dict:
    """Counts and score quantiles (:data:`DIAGNOSIS_QUANTILES`) of the true and false mined pairs, mutual or not,
    and of the negatives, mutual or not: where the estimate goes wrong (gold used for diagnosis only)."""
    def q(a):
        return [round(float(v), 4) for v in np.quantile(a, DIAGNOSIS_QUANTILES)] if len(a) else []

    groups = {"true_mutual": scores[correct & mutual], "true_non_mutual": scores[correct & ~mutual],
              "false_mutual": scores[~correct & mutual], "false_non_mutual": scores[~correct & ~mutual],
              "negatives_mutual": negatives[neg_mutual], "negatives_non_mutual": negatives[~neg_mutual]}
    return {"quantiles": list(DIAGNOSIS_QUANTILES), **{k: {"n": len(v), "q": q(v)} for k, v in groups.items()}}


def documents(src_lang: str, tgt_lang: str, enc_name: str, *, limit: int | None = None, progress=None,
              split: str | None = "test", estimator: str = "storey") -> dict:
    """The documents setting: ``documents mine`` over the ``bench docmine`` pool, checked against every gold page pair.

    ``split``: only the pages of that split, every source (their pages' own
    split: unpaired pages have one too); None: every page of every split (the
    pool of ``bench docmine``).
    """
    from ..datasets.docsets import SOURCES, build_docset, load_docset
    from ..documents import get_document_encoder, mine_documents
    from ..report.runs import documents_calibration
    from .docmine import SMALL_POOL, load_pool

    opts = {**SMALL_POOL.get(enc_name, {"limit_distractors": limit}), "max_queries": limit}   # limit: quick checks
    sources = opts.get("sources") or SOURCES
    src, tgt, _, _ = load_pool(src_lang, tgt_lang, "given", split=split or "test", **opts)
    gold, page_split = set(), {}
    for source in sources:
        ds = load_docset(build_docset(source, src_lang, tgt_lang))
        gold |= {(a, b) for a, b, _ in ds["gold"]}
        page_split.update({(side, d["id"]): d.get("split") for side in ("src", "tgt") for d in ds[side]})
    if split is not None:
        src = [d for d in src if page_split.get(("src", d.id)) == split]
        tgt = [d for d in tgt if page_split.get(("tgt", d.id)) == split]
    denc = get_document_encoder(enc_name)
    a = denc.encode_documents([d.sentences for d in src], src_lang, progress=progress)   # (n, d)
    b = denc.encode_documents([d.sentences for d in tgt], tgt_lang, progress=progress)   # (m, d)
    matched = [m for m in mine_documents(src, tgt, a, b) if m.tgt_id is not None]
    sc = np.array([m.score for m in matched], dtype=np.float64)
    ok = np.array([(m.src_id, m.tgt_id) in gold for m in matched], dtype=bool)
    cal = documents_calibration(a, b, src_ok=[d.reason is None for d in src], tgt_ok=[d.reason is None for d in tgt],
                                pi0=estimator)
    pool = "libreoffice test pages" if enc_name in SMALL_POOL else "all sources"
    return {"setting": "docs", "score": "ratio", "k": 4, "retrieval": "max", "pool_src": len(src), "pool_tgt": len(tgt),
            "pool": pool + ("" if split is None else f", {split} pages"), "pairs": len(sc),
            **compare(sc, ok, None, DOCS_QUANTILES, cal=cal, estimator=estimator)}


def filtering(src_lang: str, tgt_lang: str, enc, *, limit: int | None = 4000, split: str = "test",
              estimator: str = "storey") -> dict:
    from ..filtering import FilterPipeline, edit_config, rank_scores
    from .filtering import build_set, default_config

    items, _ = build_set(src_lang, tgt_lang, limit=limit, split=split)
    pairs = [(it.src, it.tgt) for it in items]
    pipe = FilterPipeline.from_config(edit_config(default_config(), encoder=enc.name), src_lang=src_lang,
                                      tgt_lang=tgt_lang)
    _, results = rank_scores(pipe, pairs, return_results=True)
    reached = [i for i, r in enumerate(results) if r.kept or r.reason == pipe.score_step]
    sc = np.array([float(results[i].score) for i in reached])
    ok = np.array([items[i].kind == "clean" for i in reached])
    neg, survived = filter_negatives(pipe, pairs)
    return {"setting": "filter", "score_step": pipe.score_step, "items": len(items), "reached_score_step": len(sc),
            "negatives_survived": survived, **compare(sc, ok, neg, FILTER_QUANTILES, estimator=estimator)}


def align_blocks(src_lang: str, tgt_lang: str, enc, *, limit: int | None = None, split: str = "test",
                 progress=None) -> tuple[np.ndarray, np.ndarray, list[list[tuple[str, str]]], dict]:
    """Align the ``split`` pages of the align setting: block scores (b,), right or not (b,) against gold,
    each document's aligned blocks' texts (in order) and the task's stats. Blocks with an empty side are
    left out, as in ``bench align``'s precision."""
    from ..align import SentenceAligner
    from ..datasets.align_gold import load_align_task

    _, drop, merge = ALIGN_VIEW
    docs, stats = load_align_task(src_lang, tgt_lang, split, limit=limit, drop=drop, merge=merge)
    aligner = SentenceAligner(enc, progress=progress)
    scores, ok, texts = [], [], []
    for d in docs:
        gold = {(tuple(a), tuple(b)) for a, b in d.gold}
        blocks = [b for b in aligner.align(d.src, d.tgt, src_lang, tgt_lang).blocks if b.src and b.tgt]
        scores += [b.score for b in blocks]
        ok += [(b.src, b.tgt) in gold for b in blocks]
        texts.append([(" ".join(d.src[i] for i in b.src), " ".join(d.tgt[j] for j in b.tgt)) for b in blocks])
    return np.asarray(scores, dtype=np.float64), np.asarray(ok, dtype=bool), texts, stats


def alignment(src_lang: str, tgt_lang: str, enc, *, limit: int | None = None, split: str = "test", progress=None,
              estimator: str = "storey") -> dict:
    """The align setting: block precision estimated from the run's own documents against gold blocks."""
    sc, ok, texts, stats = align_blocks(src_lang, tgt_lang, enc, limit=limit, split=split, progress=progress)
    neg = alignment_negatives(enc, texts, src_lang, tgt_lang)
    return {"setting": "align", "view": ALIGN_VIEW[0], "source": "libreoffice", "pages": len(texts),
            "negatives_kinds": list(ALIGN_NEGATIVES_DEFAULT), "blocks": len(sc), "gold_blocks": stats["blocks"],
            **compare(sc, ok, neg, ALIGN_QUANTILES, estimator=estimator)}


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = None,
        progress=None, split: str = "test", settings=("mining", "docs", "filter", "align"),
        estimator: str | None = None) -> list[dict]:
    """``limit`` caps the mining task's gold pairs, the document pool's queries and distractors, the filter set's
    items; ``split``: the documents every setting is built from (``dev`` to choose a method, ``test`` to report);
    ``settings``: which of mining, docs, filter, align to run (``limit`` caps align's pages too); ``split="all"`` (every
    page of every split) is for the docs setting alone, the pool of ``bench docmine``; ``estimator``: the false share's,
    as :func:`calibrate`'s ``pi0`` (``storey`` or ``em``), or ``split`` or ``joint`` (mining only); None:
    :data:`DEFAULT_ESTIMATOR`."""
    if split == "all" and set(settings) != {"docs"}:
        raise BisentError("--split all: only the docs setting runs on every split (add --setting docs)")
    if estimator == "split" and set(settings) != {"mining"}:
        raise BisentError("--estimator split: only the mining setting splits its pairs (add --setting mining)")
    if estimator == "joint" and set(settings) != {"mining"}:
        raise BisentError("--estimator joint: only the mining setting has mutual pairs (add --setting mining)")
    est = {k: estimator or v for k, v in DEFAULT_ESTIMATOR.items()}
    out = []
    for enc in encoders:
        who = {"pair": f"{src_lang}-{tgt_lang}", "split": split, "encoder": enc.name, "encoder_id": enc.id}
        if "mining" in settings:
            out.append(record({**who, **mining(src_lang, tgt_lang, enc, max_gold=limit, progress=progress,
                                               split=split, estimator=est["mining"])}))
        if "docs" in settings:
            out.append(record({**who, **documents(src_lang, tgt_lang, enc.name, limit=limit, progress=progress,
                                                  split=None if split == "all" else split, estimator=est["docs"])}))
        if "filter" in settings:
            out.append(record({**who, **filtering(src_lang, tgt_lang, enc, limit=limit or 4000, split=split,
                                                  estimator=est["filter"])}))
        if "align" in settings:
            out.append(record({**who, **alignment(src_lang, tgt_lang, enc, limit=limit, split=split,
                                                  progress=progress, estimator=est["align"])}))
    return out

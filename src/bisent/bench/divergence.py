"""Divergence benchmark: Table 2 of the divergence paper on LibreOffice help, repair, and filtering.

For every divergence model given with ``-e`` (trained with some of the
negative kinds P/U/R/I; the repair and filter parts for models trained with all four):

- ``table2``: word accuracy on the word-labelled test set of held-out TEST
  documents (:func:`bisent.divergence.testset.word_test_set`: 40 % paired, 20 %
  unpaired, 20 % replace, 20 % insert, each pair's kind and draws seeded by
  its document and paragraph id; word classes and aligner from TRAIN pairs),
  per kind and over all (PURI); a word is predicted divergent when its Eq. 2
  score is negative;
- ``repair``: on the test set's insert examples (a sentence glued at the start or
  end of one side), the share cut back exactly to the original pair, and on
  its paired examples the share wrongly cut (N = 20), for the default rule,
  the same with the paper's tau 3, the rule tuned for the 64-cell model and the paper's arg max;
- ``filter``: on the filter benchmark's noisy TEST set
  (:func:`bisent.bench.filtering.build_set`), the AP of ranking clean pairs
  first and the share of each noise kind above the median clean pair for the
  Eq. 1 cosine and for the share of parallel words; the default pipeline
  (use-m3) without a ``repair`` step first, with one at the step's defaults
  (:data:`bisent.divergence.repair.STEP_DEFAULTS`) and with one allowing every shape
  of cut (as `bisent repair`): per noise kind the share of pairs the step
  cuts, glued pairs cut back exactly, and the words of correct kept pairs at
  a few precision levels.

``--domain gettext|dict`` builds the word-labelled set and the repair figures
from that domain's test pairs (word classes and aligner from its train
pairs) instead: the same model measured out of the text it was trained on.
The filter parts are LibreOffice-only and are skipped there.

The anchors (use-m3, me5-small) have no word scores; their cosine is scored
on the same filter items. Mining F1 and recovery error of the Eq. 1 sentence
embedding: ``bisent bench mining|recover -e DIR``.
"""

from __future__ import annotations

import time

import numpy as np

from ..datasets.domains import load_domain_pairs, split_pairs
from ..divergence.cuts import pair_aggregates
from ..divergence.repair import BOUNDARY_COST, MIN_WORD_GAIN, STEP_DEFAULTS, TAU, repair_pair
from ..divergence.scores import parallel_share
from ..divergence.testset import word_accuracy, word_test_set
from ..divergence.tokens import tokenize
from .common import Recorder

#: (rerank, min_gain, min_word_gain, boundary_cost, tau) settings of the repair figures: the default of
#: `bisent repair`, the same with the paper's tau 3, the 64-cell model's setting (1.5 / 4 / 3),
#: and the paper's plain arg max; a setting equal to an earlier one is measured once
REPAIR_SETTINGS = (("align", 0.0, MIN_WORD_GAIN, BOUNDARY_COST, TAU), ("align", 0.0, MIN_WORD_GAIN, BOUNDARY_COST, 3),
                   ("align", 0.0, 1.5, 4.0, 3), ("align", 0.0, 0.0, 0.0, 3))


#: the repair step allowing every shape of cut, as `bisent repair` does
ANY_SHAPE = {k: False for k in STEP_DEFAULTS}


def _is_divergence(enc) -> bool:
    return hasattr(enc, "model") and getattr(enc.model, "architecture", None) == "divergence"


def _model_info(enc) -> dict:
    import json
    from pathlib import Path

    cfg = json.loads((Path(enc.name) / "config.json").read_text())
    tr = cfg.get("training", {})
    recipe = tr.get("recipe", {})
    old = recipe.get("objective")                                     # models of the first loop: objective.loss
    loss = old.get("loss") if isinstance(old, dict) else recipe.get("objectives", {}).get("loss")
    return {"trained_with": tr.get("kinds"), "loss": loss,
            "steps": tr.get("step"),
            "model": {k: (len(v) if k.endswith("vocab") else v) for k, v in cfg["model"].items()}}


def run(src_lang: str, tgt_lang: str, encoders: list, record: Recorder, *, limit: int | None = None,
        progress: bool | None = None, domain: str = "libreoffice") -> list[dict]:
    rows = [(p.doc, p.pid, p.src, p.tgt) for p in split_pairs(domain, src_lang, tgt_lang)]
    t0 = time.perf_counter()
    test = []
    if any(_is_divergence(enc) for enc in encoders):                       # word classes + aligner: minutes
        test = held_out_word_set(rows, domain, src_lang, tgt_lang)
    if limit:
        test = test[:limit]
    sizes = {k: sum(e.kind == k for e in test) for k in "PURI"}
    base = {"pair": f"{src_lang}-{tgt_lang}", "domain": domain, "test_pairs": sizes,
            "test_words": sum(len(e.src) + len(e.tgt) for e in test),
            "build_seconds": round(time.perf_counter() - t0, 1)}
    out = []
    from .filtering import build_set, evaluate_scores

    filtering = domain == "libreoffice"                                    # the filter set is LibreOffice help
    items, _ = build_set(src_lang, tgt_lang, limit=limit or 2000) if filtering else ([], None)
    kinds = [it.kind for it in items]
    original = {(doc, pid): tgt for doc, pid, _, tgt in rows}              # the LibreOffice test pairs when filtering
    for enc in encoders:
        who = {**base, "encoder": enc.name, "encoder_id": enc.id}
        if filtering:
            x = enc.encode([it.src for it in items], src_lang, progress=progress)
            y = enc.encode([it.tgt for it in items], tgt_lang, progress=progress)
            out.append(record({**who, "part": "filter", "scorer": "cosine",
                               **evaluate_scores((x * y).sum(1).astype(np.float64), kinds)}))
        if not _is_divergence(enc):
            continue
        model, info = enc.model, _model_info(enc)
        who.update(info)
        if info["loss"] == "wemb":
            t0 = time.perf_counter()
            scores = [pair_aggregates(model.pair_scores(e.src, e.tgt), model.r) for e in test]
            acc = {k: round(v, 4) for k, v in word_accuracy(test, scores).items()}
            out.append(record({**who, "part": "table2", "accuracy": acc,
                               "seconds": round(time.perf_counter() - t0, 1)}))
        if info["trained_with"] != "PURI" or info["loss"] != "wemb":        # Table 2 rows only
            continue
        # repair on the word test set: glued (insert) pairs restored exactly, clean (paired) pairs wrongly cut
        for rerank, gain, word_gain, boundary, tau in dict.fromkeys(REPAIR_SETTINGS):
            t0 = time.perf_counter()
            got = repair_word_set(model, test, rerank=rerank, min_gain=gain, min_word_gain=word_gain,
                                  boundary_cost=boundary, tau=tau)
            out.append(record({**who, "part": "repair", "rerank": rerank, "min_gain": gain,
                               "min_word_gain": word_gain, "boundary_cost": boundary, "tau": tau, **got,
                               "seconds": round(time.perf_counter() - t0, 1)}))
        if not filtering:
            continue
        # filter set: the share of parallel words as a score, and what repair does to each noise kind
        share = np.array([parallel_share(model, it.src, it.tgt) for it in items])
        out.append(record({**who, "part": "filter", "scorer": "parallel_share", **evaluate_scores(share, kinds)}))
        if info["loss"] == "wemb":
            for shape in (None, STEP_DEFAULTS, ANY_SHAPE):                # no step, its default, every shape
                if shape is ANY_SHAPE and shape == STEP_DEFAULTS:
                    continue
                step = {} if shape is None else {"min_word_gain": MIN_WORD_GAIN, "boundary_cost": BOUNDARY_COST,
                                                 "tau": TAU, **shape}
                out.append(record({**who, "part": "pipeline", "repair_step": shape is not None, **step,
                                   **clean_words(items, original, None if shape is None else
                                                 {"type": "repair", "model": enc.name, **shape}, src_lang, tgt_lang)}))
    return out


def clean_words(items, original: dict, repair_step: dict | None, src_lang: str, tgt_lang: str,
                precisions=(0.9, 0.95, 0.98)) -> dict:
    """The default pipeline (use-m3), with a ``repair`` step first (``repair_step``: its mapping, e.g.
    ``{"type": "repair", "model": DIR}``) or not: its kept pairs ranked by the cosine; per precision level,
    the words of correct pairs in the longest top of the ranking at that precision. Correct: a clean pair
    kept unchanged, or a glued pair cut back exactly to its original (``original``: (doc, pid) -> target)."""
    from ..filtering import FilterPipeline, edit_config
    from .filtering import default_config

    steps = edit_config(default_config(), encoder="use-m3")
    steps = steps.get("steps") if isinstance(steps, dict) else steps
    with_step = repair_step is not None
    if with_step:
        steps = [dict(repair_step)] + list(steps)
    pipe = FilterPipeline.from_config({"steps": steps}, src_lang=src_lang, tgt_lang=tgt_lang)
    results = pipe.process([(it.src, it.tgt) for it in items])
    kept = []
    for it, r in zip(items, results):
        if not r.kept:
            continue
        words = (tokenize(r.pair[0]).words, tokenize(r.pair[1]).words)
        good = (it.kind == "clean" and r.pair == (it.src, it.tgt)) or (
            it.kind == "glued" and words == (tokenize(it.src).words, tokenize(original[(it.doc, it.pid)]).words))
        kept.append((float(r.score), good, len(words[0]) + len(words[1])))
    kept.sort(key=lambda k: -k[0])
    good = np.cumsum([k[1] for k in kept])
    words = np.cumsum([k[2] * k[1] for k in kept])
    prec = good / np.arange(1, len(kept) + 1)
    out = {"kept": len(kept), "correct": int(good[-1]) if kept else 0,
           "correct_words": int(words[-1]) if kept else 0}
    if with_step:                                                          # what the repair step did per kind
        out.update(repair_effects(items, original, [r.pair for r in results]))
    for p in precisions:
        ok = np.nonzero(prec >= p)[0]
        out[f"correct_words@p{p}"] = int(words[ok[-1]]) if len(ok) else 0
    return out


def held_out_word_set(rows, domain: str, src_lang: str, tgt_lang: str) -> list:
    """The word-labelled P/U/R/I set (:func:`bisent.divergence.testset.word_test_set`) of held-out ``rows`` (doc, pid,
    src, tgt), its word classes and aligner learnt from ``domain``'s train pairs of 1-60 words a side."""
    train = [(tokenize(p.src).words, tokenize(p.tgt).words)
             for p in load_domain_pairs(domain, src_lang, tgt_lang, split="train")]
    return word_test_set(rows, [(s, t) for s, t in train if 1 <= len(s) <= 60 and 1 <= len(t) <= 60])


def repair_word_set(model, examples, **options) -> dict:
    """:func:`repair_pair` (with ``options``) on the word test set's paired (P) and glued (I) examples: how
    many glued pairs come back exactly to their original, how many clean pairs are wrongly cut."""
    restored = glued = cut_clean = clean = 0
    for e in examples:
        if e.kind not in "PI":
            continue
        r = repair_pair(model, " ".join(e.src), " ".join(e.tgt), **options)
        if e.kind == "P":
            clean += 1
            cut_clean += r.status == "cut"
        else:
            glued += 1
            orig = (tokenize(e.info["src_text"]).words, tokenize(e.info["tgt_text"]).words)
            restored += (tokenize(r.src).words, tokenize(r.tgt).words) == orig
    return {"glued": glued, "restored_exactly": round(restored / max(glued, 1), 4), "clean": clean,
            "clean_cut": round(cut_clean / max(clean, 1), 4)}


def repair_effects(items, original: dict, pairs) -> dict:
    """What a repair did to the filter set's ``items``, given the pair each became (``pairs``, same order):
    per noise kind the share changed, and the share of glued pairs cut back exactly to their original
    (``original``: (doc, pid) -> target)."""
    cut: dict[str, list[int]] = {}
    exact = []
    for it, pair in zip(items, pairs):
        cut.setdefault(it.kind, []).append(int(tuple(pair) != (it.src, it.tgt)))
        if it.kind == "glued":
            exact.append((tokenize(pair[0]).words, tokenize(pair[1]).words)
                         == (tokenize(it.src).words, tokenize(original[(it.doc, it.pid)]).words))
    return {"cut_share": {k: round(float(np.mean(v)), 4) for k, v in cut.items()},
            "glued_restored_exactly": round(float(np.mean(exact)), 4) if exact else None}

"""Why a pair scores what it scores: cosine, margins, the competitors both ways, the filter's decision.

``explain_pair`` embeds the pair and a background (the run's own collections,
or any other sentences of the two languages), and reports the numbers behind
the ratio margin of Artetxe & Schwenk (2019): the cosine, each side's k
nearest competitors in the other language (the neighbourhoods r_src and r_tgt
are their mean cosines) and where the pair itself ranks among them. With a
filter pipeline it also says which step decided and with what value.

Word alignment heat map: given a divergence model directory (``bisent explain
--divergence DIR``), :func:`bisent.models.divergence.alignment_matrix` gives
``(S (n_src_words, n_tgt_words), src_words, tgt_words)`` and the report draws
S(i, j); without one the explanation says how to get it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .record import cut


def explain_pair(src: str, tgt: str, encoder, src_lang: str, tgt_lang: str, *, background_src: Sequence[str] = (),
                 background_tgt: Sequence[str] = (), k: int = 4, pipeline=None, divergence: str | None = None,
                 progress: bool | None = False, sample: Sequence[tuple[str, str]] | None = None) -> dict:
    """The explanation of ``(src, tgt)`` as a plain dict (see :func:`bisent.report.html.explanation_html`).

    ``sample``: the pairs the pipeline's sample-learning steps learn from (the bitext a line comes from); by
    default the background's pairs when both sides are given and line up.
    """
    from ..mining.scoring import Scorer, combine

    xs = [src] + [s for s in dict.fromkeys(background_src) if s != src]
    ys = [tgt] + [t for t in dict.fromkeys(background_tgt) if t != tgt]
    x = encoder.encode(xs, src_lang, progress=progress)   # (n, d), row 0 the pair's source
    y = encoder.encode(ys, tgt_lang, progress=progress)   # (m, d), row 0 the pair's target
    kk = max(1, min(k, len(xs), len(ys)))
    cands = Scorer("ratio", kk).fit(y).score(x)
    cos = float(np.dot(x[0], y[0]))
    r_x, r_y = float(cands.r_x[0]), float(cands.r_y[0])
    out = {"src": src, "tgt": tgt, "encoder": getattr(encoder, "name", str(encoder)), "k": kk,
           "background": {"src": len(xs) - 1, "tgt": len(ys) - 1}, "cosine": cos,
           "ratio_margin": float(combine("ratio", cos, r_x, r_y)),
           "distance_margin": float(combine("distance", cos, r_x, r_y)),
           "csls": float(combine("csls", cos, r_x, r_y)), "r_src": r_x, "r_tgt": r_y,
           "src_competitors": _competitors(cands.knn.fwd_idx[0], cands.knn.fwd_sim[0], cands.fwd_score[0], ys),
           "tgt_competitors": _competitors(cands.knn.bwd_idx[0], cands.knn.bwd_sim[0], cands.bwd_score[0], xs)}
    if pipeline is not None:
        if sample is None and background_src and len(background_src) == len(background_tgt):
            sample = list(zip(background_src, background_tgt))
        out["filter"] = filter_decision(pipeline, src, tgt, sample=sample)
    out["alignment"] = alignment(divergence, src, tgt)
    return out


def _competitors(idx, sim, margin, texts) -> list[dict]:
    return [{"rank": r + 1, "cosine": float(s), "margin": float(m), "is_pair": int(i) == 0, "text": cut(texts[int(i)])}
            for r, (i, s, m) in enumerate(zip(idx, sim, margin)) if i >= 0]


def filter_decision(pipeline, src: str, tgt: str, *, sample: Sequence[tuple[str, str]] | None = None) -> dict:
    """Which step of ``pipeline`` rejected the pair (or none) and the value of every step it went through.

    Steps that learn from a sample of the input (the learned length ratio, a margin against the input) keep the
    sample the pipeline was prepared with (a finished run's report), or learn it from ``sample`` (the file a line
    comes from, a background): scored against the pair alone, a ratio margin is 1.0 by construction. A margin
    step with neither says ``n/a`` and decides nothing.
    """
    for step in pipeline.steps:
        if not step.stateless:
            step.reset()   # a duplicate filter must not remember earlier pairs
    if sample is not None and pipeline.sample_size:
        pipeline.prepare(list(sample) + [(src, tgt)])
    steps, reason, score, bound = [], None, None, None
    for step in pipeline.steps:
        if _needs_sample(step):
            steps.append(f"{step.name}=n/a (no background: the file of --line, or --background)")
            continue
        value = pipeline._score(step, [(src, tgt)])[0]
        ok = step.keep(value)
        shown = round(value, 4) if isinstance(value, float) else [round(v, 4) if isinstance(v, float) else v
                                                                   for v in value] if isinstance(value, list) else value
        steps.append(f"{step.name}={shown}{'' if ok else ' (rejects)'}")
        if not ok:
            reason, score = step.name, value
            bound = crossed_bound(step, value)
            break
        if step.name == pipeline.score_step:
            score = value
    return {"kept": reason is None, "reason": reason, "score": score, "bound": bound, "steps": steps}


def _needs_sample(step) -> bool:
    """A margin step whose background is the input's sample, and no sample was given: its value on one pair
    alone would say nothing."""
    return bool(getattr(step, "needs_background", False)) and getattr(step, "background", None) == "sample" \
        and getattr(step, "_sample_pairs", None) is None


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def crossed_bound(step, value) -> str:
    """The limit a rejected ``value`` crossed, in words: ``length_ratio 2.26 > max_ratio 1.8``; for a side of a
    two-sided value ``length target 95 > max_length 80``. The YAML ``accept:`` bounds if the step has them, else
    the step's own ``min_*`` / ``max_*`` settings; a step without a numeric limit (duplicates, ...) says so."""
    vals = list(value) if isinstance(value, (list, tuple)) else [value]
    describe = getattr(step, "describe_rejection", None)          # a step that decides on several components
    if describe is not None and step.accept_override is None and describe(vals):
        return describe(vals)
    sides = ["source ", "target "] if len(vals) == 2 else [f"[{i + 1}] " for i in range(len(vals))]
    sides = sides if len(vals) > 1 else [""]
    if step.accept_override is not None:
        limits = [(k, lim) for k, lim in step.accept_override.spec.items()]
        tests = {"min": (lambda v, lim: v < lim, "<"), "max": (lambda v, lim: v > lim, ">"),
                 "gt": (lambda v, lim: v <= lim, "<="), "lt": (lambda v, lim: v >= lim, ">=")}
        for side, v in zip(sides, vals):
            if isinstance(v, float) and v != v:
                return f"{step.name} {side}is NaN"
            for key, lim in limits:
                fails, op = tests[key]
                if isinstance(v, (int, float)) and fails(v, lim):
                    bound = {"gt": "min (exclusive)", "lt": "max (exclusive)"}.get(key, key)
                    return f"{step.name} {side}{_fmt(v)} {op} {bound} {_fmt(lim)} (accept)"
    own = [(k, getattr(step, k)) for k in sorted(vars(step)) if k.startswith(("min_", "max_"))
           and isinstance(getattr(step, k), (int, float)) and not isinstance(getattr(step, k), bool)]
    for side, v in zip(sides, vals):
        if not isinstance(v, (int, float)):
            continue
        for key, lim in own:
            if key.startswith("max_") and v > lim:
                return f"{step.name} {side}{_fmt(v)} > {key} {_fmt(lim)}"
            if key.startswith("min_") and v < lim:
                return f"{step.name} {side}{_fmt(v)} < {key} {_fmt(lim)}"
    for side, v in zip(sides, vals):   # an exclusive limit reached (overlap rejects at max_overlap itself)
        for key, lim in own:
            if isinstance(v, (int, float)) and v == lim:
                return f"{step.name} {side}{_fmt(v)} {'>=' if key.startswith('max_') else '<='} {key} {_fmt(lim)}"
    return f"{step.name} {' '.join(_fmt(v) for v in vals)} (the step rejects it; no numeric limit)"


def alignment(model_dir: str | None, src: str, tgt: str) -> dict:
    """The divergence model's word alignment matrix, or a note saying why there is none."""
    try:
        from ..models.divergence import alignment_matrix  # the word-alignment divergence model
    except ImportError:
        return {"note": "the word-alignment divergence model (bisent.models.divergence) is not in this installation"}
    if model_dir is None:
        return {"note": "give a divergence model directory (--divergence DIR) to draw the word alignment"}
    matrix, src_words, tgt_words = alignment_matrix(model_dir, src, tgt)
    return {"matrix": np.asarray(matrix, dtype=float).round(4).tolist(), "src_words": list(src_words),
            "tgt_words": list(tgt_words)}


def explanation_text(ex: dict) -> str:
    """A terminal rendering of :func:`explain_pair`'s result."""
    lines = [f"source: {ex['src']}", f"target: {ex['tgt']}",
             f"encoder {ex['encoder']}, k={ex['k']}, background {ex['background']['src']} source and "
             f"{ex['background']['tgt']} target sentences",
             f"cosine {ex['cosine']:.4f}  ratio margin {ex['ratio_margin']:.4f}  distance margin "
             f"{ex['distance_margin']:.4f}  CSLS {ex['csls']:.4f}  (r_src {ex['r_src']:.4f}, r_tgt {ex['r_tgt']:.4f})"]
    for side, label in (("src_competitors", "nearest targets of the source"),
                        ("tgt_competitors", "nearest sources of the target")):
        lines.append(f"{label} (rank, cosine, ratio margin):")
        lines += [f"  {c['rank']}. {c['cosine']:.4f} {c['margin']:.4f} "
                  f"{'<- this pair ' if c['is_pair'] else ''}{c['text']}"
                  for c in ex[side]]
    if ex.get("filter"):
        f = ex["filter"]
        score = round(f["score"], 4) if isinstance(f["score"], float) else f["score"]
        lines.append(f"filter: {'kept' if f['kept'] else 'rejected by ' + str(f['reason'])}"
                     f" (score {score}); steps: {', '.join(f['steps'])}")
        if f.get("bound"):
            lines.append(f"verdict: rejected: {f['bound']}")
    al = ex.get("alignment") or {}
    lines.append("word alignment: " + (f"{len(al['src_words'])} x {len(al['tgt_words'])} matrix (in --json / the "
                                       "report)"
                                       if al.get("matrix") else al.get("note", "not available")))
    return "\n".join(lines)


def read_background(path, limit: int = 20000) -> tuple[list[str], list[str]]:
    """Source and target sentences of a ``src<TAB>tgt`` file or a mined TSV (``score<TAB>src<TAB>tgt...``)."""
    from ..errors import BisentError
    from .record import tsv_rows

    src, tgt = [], []
    for n, cols in tsv_rows(path):
        if n > limit:
            break
        if len(cols) >= 3 and _is_number(cols[0]):
            cols = cols[1:]
        if len(cols) < 2:
            raise BisentError(f"{path}:{n}: expected src<TAB>tgt (or score<TAB>src<TAB>tgt)")
        src.append(cols[0])
        tgt.append(cols[1])
    return src, tgt


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def read_line(paths, n: int, *, fmt: str | None = None, columns=None, src_lang: str | None = None,
              tgt_lang: str | None = None) -> tuple[str, str]:
    """The two sides of unit ``n`` (1-based: the line of TSV/JSONL/Moses, the unit of TMX/XLIFF, the row of Parquet)
    of a bitext :func:`bisent.formats.read_bitext` reads; a unit that is missing or unusable is a one-line error."""
    unit, _ = read_line_and_sample(paths, n, fmt=fmt, columns=columns, src_lang=src_lang, tgt_lang=tgt_lang)
    return unit


def read_line_and_sample(paths, n: int, *, fmt: str | None = None, columns=None, src_lang: str | None = None,
                         tgt_lang: str | None = None) -> tuple[tuple[str, str], list]:
    """:func:`read_line`'s pair and every usable pair of the same bitext (what the filter's sample-learning
    steps, the learned length ratio and the margin, draw their sample from in a run over that file)."""
    from ..errors import BisentError
    from ..formats import read_bitext

    bt = read_bitext(paths, fmt=fmt, columns=columns, src_lang=src_lang, tgt_lang=tgt_lang)
    unit = next((u for u in bt.units if u.n == n), None)
    where = " ".join(str(p) for p in bt.paths)
    if unit is None:
        what = "unit" if bt.fmt in ("tmx", "xliff") else "row" if bt.fmt == "parquet" else "line"
        raise BisentError(f"{where}: --line {n}: there is no {what} {n} (the last is {max(u.n for u in bt.units)})")
    if unit.problem is not None:
        raise BisentError(f"{where}: {unit.label}: cannot explain it: {unit.problem}")
    pairs = [(u.src, u.tgt) for u in bt.units if u.problem is None]
    return (unit.src, unit.tgt), pairs

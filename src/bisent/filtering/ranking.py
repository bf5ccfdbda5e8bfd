"""A pipeline as a ranking: one number per pair, higher is better (for average precision, top-N, plots).

A pipeline decides (kept or rejected by a step); a benchmark of filters needs
an order. :func:`rank_scores` orders pairs by *tier*, then by the pipeline's
score step:

- tier: kept pairs first; a pair rejected by a threshold selection next;
  then pairs rejected by the last step, the one before, … down to the first
  step (a pair that got further through the pipeline ranks higher);
- within a tier: the value of the score step (the selection's ``step``, else
  the last step), computed for *every* pair, rejected ones included, when
  that step is stateless and gives one number per pair; otherwise input order.

The result is ``tier + 0.999 · (rank of the score among all pairs) / n``, so it
sorts exactly by (tier, score) and stays readable.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .pipeline import FilterPipeline, as_pipeline
from .records import Pair


def rank_scores(pipeline, pairs: Sequence[Pair], *, src_lang: str | None = None, tgt_lang: str | None = None,
                batch_size: int = 10_000, return_results: bool = False):
    """Ranking scores (n,) float64 of ``pairs`` under ``pipeline`` (a pipeline, YAML path or config).

    With ``return_results`` also the :class:`FilterResult` of each pair.
    """
    pipe: FilterPipeline = as_pipeline(pipeline, src_lang, tgt_lang)
    pairs = list(pairs)
    for step in pipe.steps:
        step.reset()
    results = list(pipe.run(pairs, batch_size=batch_size))   # prepares the background sample from `pairs`
    names = [s.name for s in pipe.steps]
    top = len(names) + 1
    tier = np.empty(len(pairs), dtype=np.float64)
    for i, r in enumerate(results):
        if r.kept:
            tier[i] = top
        elif r.reason in names:
            tier[i] = names.index(r.reason)
        else:  # select:<mode>: scored by every step, not chosen
            tier[i] = top - 1
    value = _score_values(pipe, pairs, results, batch_size)
    rank = np.zeros(len(pairs), dtype=np.float64)
    if len(pairs):
        key = np.where(np.isnan(value), -np.inf, value)
        order = np.lexsort((-np.arange(len(pairs)), key))   # ascending score; ties: earlier input ranks higher
        rank[order] = np.arange(len(pairs)) / len(pairs)
    out = tier + 0.999 * rank
    return (out, results) if return_results else out


def _score_values(pipe: FilterPipeline, pairs: list[Pair], results, batch_size: int) -> np.ndarray:
    """The score step's value for every pair (NaN where it cannot be had).

    Pairs that reached the score step already carry its value; the others are
    scored now when the step is stateless (a duplicate filter is not: scoring
    again would call every pair a repeat).
    """
    step = next(s for s in pipe.steps if s.name == pipe.score_step)
    out = np.full(len(pairs), np.nan)
    todo = []
    for i, r in enumerate(results):
        reached = r.kept or r.reason == step.name or (r.reason or "").startswith("select:")
        if reached and isinstance(r.score, (int, float)):
            out[i] = float(r.score)
        elif not reached:
            todo.append(i)
    if todo and step.stateless:
        vals = []
        for s in range(0, len(todo), batch_size):
            vals.extend(pipe._score(step, [pairs[i] for i in todo[s:s + batch_size]]))
        if all(isinstance(v, (int, float)) for v in vals):
            out[todo] = np.asarray(vals, dtype=np.float64)
    return out

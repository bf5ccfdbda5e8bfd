"""The repair job: each pair cut back to its parallel core by a divergence model (``bisent repair``)."""

from __future__ import annotations

from pathlib import Path

from .common import check_paths, fspaths

#: the paths of a repair run, for :func:`bisent.paths.guarded` and :func:`bisent.jobs.common.check_paths`
PATHS = {"reads": ("pairs", "model_dir"), "writes": ("output",)}


def _span(s) -> str:
    return f"{s[0]}-{s[1]}" if s else "-"


def _num(v) -> str:
    return "-" if v is None else f"{v:.4f}"


def repair(pairs, *, model_dir, output, n_best: int = 20, tau: int | None = None, rerank: str = "align",
           min_gain: float = 0.0, min_word_gain: float | None = None, boundary_cost: float | None = None,
           sentences_only: bool = False, one_side: bool = False, match_ends: bool = False, fmt: str | None = None,
           columns: str | None = None) -> dict:
    """Cut the leading/trailing divergent words of each pair of ``pairs`` (a path, or two Moses files) with the
    divergence model in ``model_dir``, as ``bisent repair`` does: one line out per line in,
    ``line<TAB>status<TAB>src_span<TAB>tgt_span<TAB>before<TAB>after<TAB>src<TAB>tgt``. Returns the lines per
    status (kept, cut, skipped). ``tau``, ``min_word_gain``, ``boundary_cost``: None is the value chosen on dev
    (:mod:`bisent.divergence.repair`).
    """
    from collections import Counter

    from ..divergence.files import read_pairs
    from ..divergence.repair import BOUNDARY_COST, MIN_WORD_GAIN, TAU, repair_pair
    from ..io import atomic_write
    from ..models.divergence import load_model

    pairs = tuple(fspaths(*((pairs,) if isinstance(pairs, (str, Path)) else pairs)))
    model_dir, output = fspaths(model_dir, output)
    check_paths(PATHS, locals())
    model = load_model(model_dir)
    settings = {"n_best": n_best, "tau": TAU if tau is None else tau, "rerank": rerank, "min_gain": min_gain,
                "min_word_gain": MIN_WORD_GAIN if min_word_gain is None else min_word_gain,
                "boundary_cost": BOUNDARY_COST if boundary_cost is None else boundary_cost,
                "sentences_only": sentences_only, "one_side": one_side, "match_ends": match_ends}
    counts: Counter = Counter()
    with atomic_write(output) as f:
        for n, pair, reason in read_pairs(pairs, fmt=fmt, columns=columns):
            if pair is None:
                counts["skipped"] += 1
                f.write(f"{n}\tskipped: {reason}\t-\t-\t-\t-\t\t\n")
                continue
            r = repair_pair(model, *pair, **settings)
            counts[r.status.split(":")[0]] += 1
            src, tgt = (r.src, r.tgt) if not r.status.startswith("skipped") else ("", "")
            f.write(f"{n}\t{r.status}\t{_span(r.src_span)}\t{_span(r.tgt_span)}\t{_num(r.before)}\t{_num(r.after)}"
                    f"\t{src}\t{tgt}\n")
    return dict(counts)


__all__ = ["PATHS", "repair"]

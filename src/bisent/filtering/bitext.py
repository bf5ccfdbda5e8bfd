"""Filtering a bitext in any format of :mod:`bisent.formats`, written back in its own format.

The units are read by :func:`bisent.io.bitext.iter_units` (malformed ones kept as rejected, with their reason)
and put through the pipeline in chunks by :func:`~bisent.filtering.files.decide`, as
:func:`~bisent.filtering.files.filter_file` does for a ``src<TAB>tgt`` file, with the same per-pair rules
(:func:`bisent.io.rows.as_row`: a side over the byte limit, a tab, a NUL or a CR in a text is a bad row). The
decisions are kept per unit; a top-N / word-budget selection, ``--precision``, XLIFF whole-unit rejection,
``--score-all`` and the score column are passes over them. Kept units are written in the input's format (other
columns, keys, TMX properties and XLIFF states carried; optionally a score), rejected ones to the usual rejected
file ``n<TAB>reason<TAB>score<TAB>line`` where ``n`` is the unit's line number (line formats) or index in
document order (TMX ``<tu>``, XLIFF units).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np

from ..errors import BisentError
from ..formats import check_columns, output_paths, read_bitext, remember_text, unit_id, whole_units, write_bitext
from ..io import atomic_write
from ..io.bitext import iter_units, open_bitext
from ..io.rows import MAX_SIDE_BYTES, as_row
from ..progress import progress_bar
from .files import decide
from .langid import SwappedSides
from .records import format_value, rejected_line


def check_two_columns(path) -> None:
    """A one-line error when no line of a ``src<TAB>tgt`` file has two columns (a wrong format or columns); reads
    up to the first line that has."""
    counts: set[int] = set()
    for u in iter_units(open_bitext([path], fmt="tsv"), allow_empty=True):
        if u.problem != "bad_row:columns":
            return
        counts.add(int(u.detail))
    if counts:
        raise BisentError(f"{path}: every line has {'/'.join(map(str, sorted(counts)))} tab-separated columns, "
                          f"expected 2 (source, target); choose them with --columns (e.g. --columns 3,4)")


def filter_bitext(inputs: Sequence, output, rejected, src_lang: str, tgt_lang: str, config, *,
                  fmt: str | None = None, columns=None, score_column: str | None = None, summary_path=None,
                  chunk_size: int = 10_000, progress: bool | None = None, finish: Callable[..., dict] | None = None,
                  score_all=None) -> dict:
    """Filter ``inputs`` (one file, two for Moses) into ``output`` (same format; Moses: a stem) and ``rejected``.

    ``score_all``: also write every unit to this file in the input's format, nothing dropped, with the
    decision (``kept`` or the reason) and every step's value (:func:`score_every_step`), so the output can be
    re-thresholded later without running the filter again.

    ``finish(run, summary)`` runs on the decisions before the outputs are written (the report / ``--precision``
    step, :func:`bisent.report.runs.finish_filter_pairs` called with the :class:`Decisions` ``run``); it returns
    ``(fields, drop, scores)``: fields join the summary, ``drop`` (k,) marks the kept units it moves to rejected
    (as ``select:precision``, with their ``scores`` (k,)). ``score_column`` names the score added to kept
    units (None: none). Returns the summary; ``kept + rejected == units``.
    """
    from .pipeline import as_pipeline

    t0 = time.perf_counter()
    bt = read_bitext(inputs, fmt=fmt, columns=columns, src_lang=src_lang, tgt_lang=tgt_lang)
    if score_column and bt.fmt == "moses":
        raise BisentError("--score-column: Moses files hold one sentence a line and have no place for a score")
    if score_all is not None and bt.fmt == "moses":
        raise BisentError("--score-all: Moses files hold one sentence a line and have no place for the scores; "
                          "give the pair as one TSV file")
    check_columns(bt)
    remember_text(bt)
    outs = output_paths(output, inputs, bt.fmt)
    pipe = as_pipeline(config, src_lang, tgt_lang)
    try:
        run = Decisions.of(bt, pipe, chunk_size=chunk_size, progress=progress)
    except SwappedSides as e:      # named by the user's file
        raise SwappedSides(e.reason, " ".join(str(p) for p in inputs)) from None
    summary = run.summary(pipe, time.perf_counter() - t0)
    if run.good and finish is not None:
        fields, drop, scores = finish(run, summary)
        summary.update(fields)
        run.drop(drop, scores)
    reasons = dict(run.rejected)                      # unit n -> (why it was rejected, its value as text)
    for u in bt.units:
        if u.problem is not None:
            reasons[u.n] = (u.problem, format_value(u.detail))
    kept = [u for u in run.good if u.n not in reasons]
    for u in kept:
        if u.n in run.repaired:                       # repaired by a step
            u.src, u.tgt = run.repaired[u.n]
    kept = _whole_units(bt, kept, reasons)
    scores = _scores(pipe, kept) if score_column else None
    write_bitext(outs, bt, kept, scores=scores, score_name=score_column or "score")
    if score_all is not None:
        decision = {u.n: "kept" for u in kept}
        decision.update({n: why for n, (why, _) in reasons.items()})
        write_bitext((score_all,), bt, bt.units, fields=score_every_step(pipe, bt.units, decision))
        summary["score_all"] = str(score_all)
    by_n = {u.n: u for u in bt.units}
    counts: dict[str, int] = {}
    with atomic_write(rejected, "wb") as f:
        for n in sorted(reasons):
            why, value = reasons[n]
            counts[why] = counts.get(why, 0) + 1
            f.write(_row(bt, by_n[n], why, value))
    summary.update({"input": [str(p) for p in inputs] if len(inputs) > 1 else str(inputs[0]), "format": bt.fmt,
                    "kept_file": outs[0] if len(outs) == 1 else list(outs), "rejected_file": str(rejected),
                    "lines": len(bt.units), "kept": len(kept), "rejected": len(reasons),
                    "rejected_by": dict(sorted(counts.items()))})
    if summary["kept"] + summary["rejected"] != summary["lines"]:
        raise RuntimeError("filter accounting is off: kept + rejected != units")
    if summary_path is not None:
        import json
        with atomic_write(summary_path) as f:
            json.dump(summary, f, indent=2, sort_keys=True)
            f.write("\n")
    return summary


class Decisions:
    """The pipeline's decision on each well-formed unit of a bitext, by unit number ``n``.

    ``pairs``: the units put through the pipeline (those :func:`bisent.io.rows.as_row` accepts), in order;
    ``kept``: their numbers, in order; ``rejected``: ``n -> (reason, value as text)`` (pairs ``as_row``
    refuses included, as ``bad_row:*``); ``scores``: ``n -> value`` of each kept pair; ``repaired``: ``n ->
    (src, tgt)`` where a step changed a kept pair's text.
    """

    def __init__(self, good: list):
        self.good = good
        self.pairs: list = []
        self.kept: list[int] = []
        self.rejected: dict[int, tuple[str, str]] = {}
        self.values: dict[int, float] = {}
        self.repaired: dict[int, tuple[str, str]] = {}
        self.pair_of: dict[int, tuple[str, str]] = {}
        self.counts: dict[str, int] = {}
        self.not_selected: list[int] = []            # the kept units a top-N / word budget left out, in order

    @classmethod
    def of(cls, bt, pipe, *, chunk_size: int = 10_000, progress: bool | None = None,
           max_side_bytes: int = MAX_SIDE_BYTES) -> "Decisions":
        """Put the well-formed units of ``bt`` through ``pipe`` in chunks of ``chunk_size`` (its stateful steps
        reset first; a step that needs a sample draws it from these pairs); a top-N / word-budget selection is
        applied to the kept pairs at the end."""
        run = cls([u for u in bt.units if u.problem is None])
        units = []
        for u in run.good:
            pair, problem, detail = as_row(u.src, u.tgt, max_side_bytes)
            if pair is None:
                run._reject(u.n, problem, format_value(detail))
            else:
                units.append(u)
                run.pairs.append(pair)
                run.pair_of[u.n] = pair
        for step in pipe.steps:
            step.reset()
        if run.pairs and pipe.sample_size:
            pipe.prepare(iter(run.pairs))
        sel = pipe.selection
        two_pass = sel is not None and not sel.streaming
        bar = progress_bar(progress, total=len(units), unit="pair", desc="filter", leave=False)
        try:
            for start in range(0, len(units), chunk_size):
                chunk = run.pairs[start:start + chunk_size]
                for u, pair, res in zip(units[start:start + chunk_size], chunk, decide(pipe, chunk)):
                    if res.kept:
                        run.kept.append(u.n)
                        run.values[u.n] = res.score
                        if res.pair != pair:
                            run.repaired[u.n] = res.pair
                    else:
                        run._reject(u.n, res.reason, format_value(res.score, pipe.value_names(res.reason)))
                bar.update(len(chunk))
        finally:
            bar.close()
        if two_pass and run.kept:
            scores = np.array([sel.scalar(run.values[n], pipe.score_step) for n in run.kept], dtype=np.float64)
            words = np.array([sel.words(run.pair_of[n]) for n in run.kept], dtype=np.int64)
            mask = sel.choose(scores, words)
            for n, score, chosen in zip(run.kept, scores, mask):
                if not chosen:
                    run._reject(n, sel.reason, format_value(float(score)))
                    run.not_selected.append(n)
            run.kept = [n for n, chosen in zip(run.kept, mask) if chosen]
        return run

    def _reject(self, n: int, reason: str, value: str) -> None:
        self.rejected[n] = (reason, value)
        self.counts[reason] = self.counts.get(reason, 0) + 1

    def text(self, n: int) -> tuple[str, str]:
        """The pair of unit ``n`` as the pipeline left it (repaired or not)."""
        return self.repaired.get(n) or self.pair_of[n]

    def kept_pairs(self) -> list[tuple[str, str]]:
        return [self.text(n) for n in self.kept]

    def rejected_pairs(self) -> list[tuple[int, str, float, str, str]]:
        """``(n, reason, score, src, tgt)`` of each rejected unit the pipeline saw (score NaN where there is no
        single number), in the order :func:`~bisent.filtering.files.filter_file` writes them: the units the
        pipeline rejected, then those a top-N / word budget left out."""
        out = []
        last = set(self.not_selected)
        by_n = {u.n: u for u in self.good}
        for u in [u for u in self.good if u.n not in last] + [by_n[n] for n in self.not_selected]:
            if u.n in self.rejected:
                reason, value = self.rejected[u.n]
                score = float(value) if value and "," not in value else float("nan")
                out.append((u.n, reason, score, *self.pair_of.get(u.n, (u.src, u.tgt))))
        return out

    def summary(self, pipe, seconds: float) -> dict:
        """The counts of the pipeline's decisions (the well-formed units only)."""
        if not self.good:
            return {"pipeline": pipe.describe()}
        return {"lines": len(self.good),
                "kept": len(self.kept), "rejected": len(self.rejected),
                "rejected_by": dict(sorted(self.counts.items())), "pipeline": pipe.describe(),
                "seconds": round(seconds, 3)}

    def drop(self, drop, scores) -> None:
        """Move the kept units marked in ``drop`` (k,) bool to rejected as ``select:precision``, with their
        ``scores`` (k,)."""
        if drop is None or not np.any(drop):
            return
        for i in np.flatnonzero(drop):
            self._reject(self.kept[i], "select:precision", f"{scores[i]:.6g}")
        self.kept = [n for n, d in zip(self.kept, drop) if not d]

def score_every_step(pipe, units, decision: dict[int, str]) -> list[dict[str, str]]:
    """Per unit: ``decision`` (``kept``, or the step or problem that rejected it) and the value of every step of
    ``pipe`` (as the rejected file writes values; empty for a malformed unit), each step scoring every
    well-formed unit whether or not an earlier step rejected it. The steps keep the sample the run learned
    (the learned length ratio, the margin); a duplicate filter starts again, so a repeat is a repeat of an
    earlier unit. Embeddings come from the cache the run filled."""
    for step in pipe.steps:
        if not step.stateless:
            step.reset()
    good = [u for u in units if u.problem is None]
    pairs = [(u.src, u.tgt) for u in good]
    values = {step.name: pipe._score(step, pairs) if pairs else [] for step in pipe.steps}
    by_n = {u.n: i for i, u in enumerate(good)}
    out = []
    for u in units:
        i = by_n.get(u.n)
        row = {"decision": decision.get(u.n, u.problem or "kept")}
        row.update({name: "" if i is None else format_value(v[i], pipe.value_names(name))
                    for name, v in values.items()})
        out.append(row)
    return out


def _row(bt, u, reason: str, value: str) -> bytes:
    """A rejected row: ``n<TAB>reason<TAB>value<TAB>text``; a TMX/XLIFF unit's text starts with its id
    (``[id u12/s2]``: a unit is found in the file by its id, not by its number among the segments)."""
    uid = unit_id(bt, u)
    return rejected_line(u.n, reason, value, u.raw, f"[id {uid}] " if uid is not None else "")


def _whole_units(bt, kept: list, reasons: dict[int, tuple[str, str]]) -> list:
    """An XLIFF 2 unit of several segments is kept or rejected whole: when a step rejects one of its segments
    (or one is malformed), its kept segments are rejected too, as ``whole_unit:REASON`` (the first segment's
    reason), so no half unit is written back. Adds them to ``reasons``; returns the units still kept."""
    groups = whole_units(bt)
    if not groups:
        return kept
    sink: dict[int, str] = {}
    for members in groups.values():
        why = next((reasons[n][0] for n in members if n in reasons), None)
        if why is not None:
            sink.update({n: f"whole_unit:{why.split(':', 1)[-1] if why.startswith('whole_unit:') else why}"
                         for n in members if n not in reasons})
    out = []
    for u in kept:
        if u.n in sink:
            reasons[u.n] = (sink[u.n], "")
        else:
            out.append(u)
    return out


def _scores(pipe, kept) -> list[float]:
    """The score step's value of each kept unit (embeddings come from the cache the filter filled)."""
    step = next((s for s in pipe.steps if s.name == pipe.score_step), None)
    if step is None:
        raise BisentError("--score-column: the pipeline has no step whose score kept pairs carry")
    if not kept:
        return []
    values = pipe._score(step, [(u.src, u.tgt) for u in kept])
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            raise BisentError(f"--score-column: step '{step.name}' gives several values a pair, not one score")
        out.append(float(v))
    return out

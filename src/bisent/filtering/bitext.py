"""Filtering a bitext in any format of :mod:`bisent.formats`, written back in its own format.

The units are read (malformed ones kept as rejected, with their reason), their
text is filtered by :func:`~bisent.filtering.files.filter_file` as a temporary
``src<TAB>tgt`` file, and the result is mapped back: kept units are written in
the input's format (other columns, keys, TMX properties and XLIFF states
carried; optionally a score), rejected ones to the usual rejected file
``n<TAB>reason<TAB>score<TAB>line`` where ``n`` is the unit's line number (line
formats) or index in document order (TMX ``<tu>``, XLIFF units).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ..errors import BisentError
from ..formats import check_columns, output_paths, read_bitext, remember_text, unit_id, whole_units, write_bitext
from ..io import atomic_write, iter_raw_lines
from ..io.bitext import iter_units, open_bitext
from .files import filter_file
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
                  chunk_size: int = 10_000, progress: bool | None = None,
                  finish: Callable[[Path, Path, Path, dict], dict] | None = None, score_all=None) -> dict:
    """Filter ``inputs`` (one file, two for Moses) into ``output`` (same format; Moses: a stem) and ``rejected``.

    ``score_all``: also write every unit to this file in the input's format, nothing dropped, with the
    decision (``kept`` or the reason) and every step's value (:func:`score_every_step`), so the output can be
    re-thresholded later without running the filter again.

    ``finish(tmp_pairs, tmp_kept, tmp_rejected, summary)`` runs on the temporary
    TSV files before they are mapped back (the report / ``--precision`` step);
    its fields join the summary. ``score_column`` names the score added to kept
    units (None: none). Returns the summary; ``kept + rejected == units``.
    """
    from .pipeline import as_pipeline

    bt = read_bitext(inputs, fmt=fmt, columns=columns, src_lang=src_lang, tgt_lang=tgt_lang)
    if score_column and bt.fmt == "moses":
        raise BisentError("--score-column: Moses files hold one sentence a line and have no place for a score")
    if score_all is not None and bt.fmt == "moses":
        raise BisentError("--score-all: Moses files hold one sentence a line and have no place for the scores; "
                          "give the pair as one TSV file")
    check_columns(bt)
    remember_text(bt)
    outs = output_paths(output, inputs, bt.fmt)
    good = bt.good()
    pipe = as_pipeline(config, src_lang, tgt_lang)
    with tempfile.TemporaryDirectory(prefix="bisent-filter-") as tmp:
        t_in, t_kept, t_rej = Path(tmp) / "pairs.tsv", Path(tmp) / "kept.tsv", Path(tmp) / "rejected.tsv"
        with open(t_in, "wb") as f:
            f.writelines(f"{u.src}\t{u.tgt}\n".encode("utf-8", "surrogatepass") for u in good)
        if good:
            try:
                summary = filter_file(t_in, t_kept, t_rej, src_lang, tgt_lang, pipe, chunk_size=chunk_size,
                                      resume=False, progress=progress)
            except SwappedSides as e:      # named by the user's file, not the temporary one
                raise SwappedSides(e.reason, " ".join(str(p) for p in inputs)) from None
            if finish is not None:
                summary.update(finish(t_in, t_kept, t_rej, summary))
                if summary.get("record") and Path(summary["record"]).exists() and str(outs[0]) != "-":
                    record = f"{outs[0]}{Path(summary['record']).name[len(t_kept.name):]}"   # KEPT.report.json
                    shutil.move(summary["record"], record)
                    summary["record"] = record
        else:
            summary = {"pipeline": pipe.describe()}
            t_kept.write_bytes(b"")
            t_rej.write_bytes(b"")
        rows: list[tuple[int, bytes]] = []
        counts: dict[str, int] = {}
        dropped = set()
        reasons: dict[int, str] = {}                      # unit n -> why it was rejected
        for _, raw in iter_raw_lines(t_rej) if t_rej.stat().st_size else ():
            ln, reason, value, _ = raw.decode("utf-8").split("\t", 3)
            u = good[int(ln) - 1]
            dropped.add(int(ln))
            reasons[u.n] = reason
            counts[reason] = counts.get(reason, 0) + 1
            rows.append((u.n, _row(bt, u, reason, value)))
        kept_units = list(iter_units(open_bitext([t_kept], fmt="tsv"), allow_empty=True))
    kept_ln = [i for i in range(1, len(good) + 1) if i not in dropped]
    if len(kept_ln) != len(kept_units):
        raise RuntimeError(f"filter accounting is off: {len(kept_units)} kept lines for {len(kept_ln)} units")
    kept = []
    for ln, k in zip(kept_ln, kept_units):
        u = good[ln - 1]
        if k.problem is None and (k.src, k.tgt) != (u.src, u.tgt):  # repaired by a step
            u.src, u.tgt = k.src, k.tgt
        kept.append(u)
    for u in bt.units:
        if u.problem is not None:
            reasons[u.n] = u.problem
            counts[u.problem] = counts.get(u.problem, 0) + 1
            rows.append((u.n, _row(bt, u, u.problem, format_value(u.detail))))
    kept = _whole_units(bt, kept, reasons, rows, counts)
    scores = _scores(pipe, kept) if score_column else None
    write_bitext(outs, bt, kept, scores=scores, score_name=score_column or "score")
    if score_all is not None:
        decision = {u.n: "kept" for u in kept}
        for n, line in rows:
            decision.setdefault(n, line.split(b"\t", 2)[1].decode("utf-8"))
        write_bitext((score_all,), bt, bt.units, fields=score_every_step(pipe, bt.units, decision))
        summary["score_all"] = str(score_all)
    with atomic_write(rejected, "wb") as f:
        f.writelines(line for _, line in sorted(rows, key=lambda r: r[0]))
    summary.update({"input": [str(p) for p in inputs] if len(inputs) > 1 else str(inputs[0]), "format": bt.fmt,
                    "kept_file": outs[0] if len(outs) == 1 else list(outs), "rejected_file": str(rejected),
                    "lines": len(bt.units), "kept": len(kept), "rejected": len(rows),
                    "rejected_by": dict(sorted(counts.items()))})
    if summary["kept"] + summary["rejected"] != summary["lines"]:
        raise RuntimeError("filter accounting is off: kept + rejected != units")
    if summary_path is not None:
        import json
        with atomic_write(summary_path) as f:
            json.dump(summary, f, indent=2, sort_keys=True)
            f.write("\n")
    return summary


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
        row.update({name: "" if i is None else format_value(v[i]) for name, v in values.items()})
        out.append(row)
    return out


def _row(bt, u, reason: str, value: str) -> bytes:
    """A rejected row: ``n<TAB>reason<TAB>value<TAB>text``; a TMX/XLIFF unit's text starts with its id
    (``[id u12/s2]``: a unit is found in the file by its id, not by its number among the segments)."""
    uid = unit_id(bt, u)
    return rejected_line(u.n, reason, value, u.raw, f"[id {uid}] " if uid is not None else "")


def _whole_units(bt, kept: list, reasons: dict[int, str], rows: list, counts: dict) -> list:
    """An XLIFF 2 unit of several segments is kept or rejected whole: when a step rejects one of its segments
    (or one is malformed), its kept segments are rejected too, as ``whole_unit:REASON`` (the first segment's
    reason), so no half unit is written back."""
    groups = whole_units(bt)
    if not groups:
        return kept
    sink: dict[int, str] = {}
    for members in groups.values():
        why = next((reasons[n] for n in members if n in reasons), None)
        if why is not None:
            sink.update({n: f"whole_unit:{why.split(':', 1)[-1] if why.startswith('whole_unit:') else why}"
                         for n in members if n not in reasons})
    out = []
    for u in kept:
        reason = sink.get(u.n)
        if reason is None:
            out.append(u)
            continue
        counts[reason] = counts.get(reason, 0) + 1
        rows.append((u.n, _row(bt, u, reason, "")))
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

"""The mining job: parallel sentences from two monolingual collections (``bisent mine``).

Owns what a run needs around :func:`bisent.mining.retrieval.mine_files`: the default threshold (the lowest whose
precision, estimated without gold by :mod:`bisent.calibration`, is :data:`DEFAULT_PRECISION`), the choice of
search and its state folder (so a killed run resumes), Ray, standard input and output, and the report record.
"""

from __future__ import annotations

import time

from ..encoders import DEFAULT_ENCODER
from ..errors import BisentError
from ..io import is_stdio
from .common import check_paths, fspaths, note, ray_session, stdout_via_temp

#: Without ``threshold`` or ``precision``, mined pairs are kept from the threshold of this estimated precision.
DEFAULT_PRECISION = 0.9


def _twostage(knn_method: str, state_dir, ray_address, block_rows) -> bool:
    """Whether the search is one that saves its stages itself (the two-stage scan or the compressed index: asked
    for, or chosen by ``auto`` without --state)."""
    if knn_method == "compressed" and block_rows is None:       # on Ray too: its query shards are the tasks
        return True
    plain = ray_address is None and block_rows is None
    return plain and (knn_method == "twostage" or (knn_method == "auto" and state_dir is None))


def _paths(kw: dict) -> dict:
    """The state folder the search will use (default OUTPUT.knn or OUTPUT.blocks) and OUTPUT.report.json."""
    out, state = kw["output"], kw["state_dir"]
    plain = kw["ray_address"] is None and kw["block_rows"] is None
    twostage = _twostage(kw["knn_method"], state, kw["ray_address"], kw["block_rows"])
    if state is None and not is_stdio(out):
        state = f"{out}.knn" if twostage else f"{out}.blocks" if not plain else None
    record = f"{out}.report.json" if (kw["report"] or kw["precision"] is not None) and not is_stdio(out) else None
    label = "--state folder" if kw["state_dir"] is not None else "state folder (default OUTPUT.knn / OUTPUT.blocks)"
    student = f"{out}.student" if kw.get("fast") and not is_stdio(out) else None
    below = f"{out}.below" if not is_stdio(out) else None
    return {"states": {label: state, "--fast student folder (OUTPUT.student)": student},
            "writes": {"--output record": record, "pairs below the cut (OUTPUT.below)": below}}


#: the paths of a mining run, for :func:`bisent.paths.guarded` and :func:`bisent.jobs.common.check_paths`
PATHS = {"reads": ("src", "tgt", "src_vectors", "tgt_vectors"), "writes": ("output", "report"),
         "derived": _paths, "derived_params": ("state_dir",)}


def _scorer(score, margin, k, knn_method, state_dir, block_rows, ray_address, threads, output, threshold=None,
            retrieval: str = "max"):
    """``(scorer, state folder to remove once OUTPUT is written, whether the search runs in blocks)``."""
    from ..mining.blocks import BLOCK, BlockScorer
    from ..mining.index import BLOCK_ROWS
    from ..mining.scoring import Scorer

    if _twostage(knn_method, state_dir, ray_address, block_rows):
        # resumable by default: a two-stage scan saves its heaps, then its candidates, the compressed search
        # (chosen by auto from 200k a side) each stage, to this folder; the exact and approximate searches ignore it
        state = state_dir or (None if is_stdio(output) else f"{output}.knn")
        opts = {"state": state} if state else {}
        if knn_method in ("auto", "compressed"):     # the compressed search reports its stages and probes here,
            opts["stats"] = {}                       # and calibrates for the retrieval (which direction must find
            opts["retrieval"] = retrieval            # a pair)
        if ray_address:
            from ..cluster.ray_compressed import RaySearch
            opts["executor"] = RaySearch(threads=threads)
        if threshold is not None and not isinstance(threshold, str):   # the compressed search calibrates its
            opts["threshold"] = float(threshold)                          # probes on the pairs kept above it
        return Scorer(score or margin, k, knn_method=knn_method, **opts), state, False
    if ray_address is None and state_dir is None and block_rows is None:
        return Scorer(score or margin, k, knn_method=knn_method), None, False
    if knn_method not in ("auto", "exact"):
        raise BisentError(f"--ray / --state / --block-rows run the exact search in blocks; drop --index {knn_method}")
    if block_rows is not None and block_rows % BLOCK_ROWS:   # whole tiles: the one pass's sgemm shapes
        raise BisentError(f"--block-rows {block_rows}: must be a multiple of {BLOCK_ROWS} (the kNN tile)")
    if state_dir is None and not is_stdio(output):
        state_dir = f"{output}.blocks"
    executor = None
    if ray_address:
        from ..cluster.ray_mine import RayExecutor
        executor = RayExecutor(threads=threads)
    return BlockScorer(score or margin, k, block=block_rows or BLOCK, state=state_dir, executor=executor), \
        state_dir, True


def _finish(recorder, src_file, tgt_file, output, summary, *, fmt, retrieval, threshold, precision, report, default,
            params) -> None:
    """Calibrate the pairs mined without a threshold, keep those above the chosen one, write the record/report."""
    from ..report import finish_mining

    try:
        summary.update(finish_mining(recorder, src_file, tgt_file, output, fmt=fmt, retrieval=retrieval,
                                     threshold=threshold, precision=precision, report=report, params=params,
                                     write_record=not default or bool(report), fallback=default))
    except BisentError as e:
        if not default:
            raise
        raise BisentError(f"the default threshold (estimated precision {DEFAULT_PRECISION:g}): "
                          f"{str(e).removeprefix('--precision: ')}; give --threshold T, --precision P "
                          f"or --threshold none (keep every pair)") from None
    if default and summary.get("fallback"):
        note(f"bisent: kept {summary['pairs']} pairs scoring >= {summary['threshold']:.4g} (the default's fallback: "
             f"{summary['fallback']}; --threshold none keeps every pair)")
    elif default:
        note(f"bisent: kept {summary['pairs']} pairs scoring >= {summary['threshold']:.4g}, estimated precision "
             f"{summary['estimated_precision']:.0%} (the default; --threshold none keeps every pair)")


def mine(src, tgt, *, src_lang: str, tgt_lang: str, output, encoder: str = DEFAULT_ENCODER, margin: str = "ratio",
         score: str | None = None, retrieval: str = "max", k: int = 4, threshold: float | str | None = None,
         fmt: str = "plain", with_ids: bool = False, src_vectors=None, tgt_vectors=None, knn_method: str = "auto",
         ray_address: str | None = None, threads: int = 1, workers: int | None = None, state_dir=None,
         block_rows: int | None = None, report=None, precision: float | None = None, fast: bool = False) -> dict:
    """Mine ``src`` against ``tgt`` into ``output`` (``score<TAB>src<TAB>tgt`` best first; ``-``: standard input
    or output), as ``bisent mine`` does; returns the summary it prints.

    ``threshold``: keep pairs scoring at least this (``"none"``: every pair); neither it nor ``precision``: the
    lowest threshold whose estimated precision is :data:`DEFAULT_PRECISION`. A killed run resumes from its state
    folder (``OUTPUT.knn`` or ``OUTPUT.blocks``, or ``state_dir``), removed once ``output`` is written. ``fast``:
    mine with a student of ``encoder`` distilled on ``src`` and ``tgt`` (kept in ``OUTPUT.student``).
    """
    from ..encoders import get_encoder
    from ..io import readable_file, remove_state_dir
    from ..mining.retrieval import mine_files

    src, tgt, output, src_vectors, tgt_vectors, state_dir, report = fspaths(
        src, tgt, output, src_vectors, tgt_vectors, state_dir, report)
    check_paths(PATHS, locals())
    t0 = time.perf_counter()
    default = threshold is None and precision is None
    if threshold == "none" and precision is not None:
        raise BisentError("give --threshold or --precision, not both")
    threshold = None if threshold == "none" else threshold
    precision = DEFAULT_PRECISION if default else precision
    if is_stdio(src) and is_stdio(tgt):
        raise BisentError("SRC and TGT cannot both be `-` (standard input)")
    if fast:   # a student distilled on SRC and TGT (said on stderr), then mined with
        from .distill import fast_student
        encoder = fast_student(src, tgt, src_lang, tgt_lang, output, teacher=encoder,
                               vectors=src_vectors or tgt_vectors)
    enc = None if src_vectors else get_encoder(encoder)
    if enc is not None:   # both languages checked before any embedding (-l, and -L unless its vectors are given)
        for lang in (src_lang, None if tgt_vectors else tgt_lang):
            if lang is not None:
                enc.check_lang(lang)
    rec, state, blocks = _scorer(score, margin, k, knn_method, state_dir, block_rows, ray_address, threads, output,
                                 threshold, retrieval)
    recorder = _recorder(rec, output, threshold, precision, report, default)
    to_stdout = recorder is not None and is_stdio(output)
    with readable_file(src) as src_file, readable_file(tgt) as tgt_file, ray_session(ray_address, threads, workers), \
            stdout_via_temp(output, to_stdout, "bisent-mine-", "mined.tsv") as out:
        # `-` and pipes: copied once; `-o -` with the default threshold: mined into a temp file, then copied
        summary = mine_files(src_file, tgt_file, src_lang, tgt_lang, enc, out, scorer=recorder or rec,
                             retrieval=retrieval, threshold=threshold if recorder is None else None, fmt=fmt,
                             with_ids=with_ids, src_vectors=src_vectors, tgt_vectors=tgt_vectors, progress=None)
        if recorder is not None:
            _finish(recorder, src_file, tgt_file, out, summary, fmt=fmt, retrieval=retrieval, threshold=threshold,
                    precision=precision, report=report, default=default,
                    params={"encoder": encoder, "score": score or margin, "k": k, "retrieval": retrieval})
    if to_stdout:
        summary["output"] = "-"
    if blocks:
        summary["blocks"] = rec.counts_
    if rec.knn_options.get("stats"):
        summary["search"] = {"method": "compressed", **rec.knn_options["stats"]}
    if state is not None:
        remove_state_dir(state)   # OUTPUT is written: nothing left to resume
    summary["src_file"], summary["tgt_file"] = src, tgt
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    return summary


def _recorder(rec, output, threshold, precision, report, default):
    """A scorer that keeps its candidates for the calibration (with a report or a precision), else None."""
    if not (report or precision is not None):
        return None
    from ..report import RecordingScorer, choose_threshold

    if is_stdio(output) and not default:
        raise BisentError("--report / --precision need an output file, not -o -")
    if threshold is not None:
        choose_threshold(None, threshold, precision)   # both given: a one-line error before any work
    return RecordingScorer(rec)


__all__ = ["DEFAULT_PRECISION", "PATHS", "mine"]

"""Running a filter pipeline over a ``src<TAB>tgt`` file: bad rows, chunks, checkpoints, resume.

:func:`filter_file` streams the file in chunks, accounts for every input line
(bad rows are rejected with a ``bad_row:*`` reason, never fatal), checkpoints
after each chunk so a rerun after a kill continues where it stopped, and
renames the outputs into place only at the end. The pipeline itself (steps,
registry, YAML) is in :mod:`bisent.filtering.pipeline`.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from pathlib import Path
from typing import IO, Callable, Iterator, Sequence

import numpy as np

from ..errors import BisentError
from ..io import (
    MAX_SIDE_BYTES,
    check_readable,
    open_exclusive,
    open_existing,
    remove_tree,
)
from ..io import compress_like as _compress
from ..io.bitext import iter_units, open_bitext
from ..io.rows import Bitext, Unit
from ..progress import progress_bar
from ..state import StateDir, file_identity
from ..state import write_json as _write_json
from . import selection
from .langid import SwappedSides
from .params import check_number
from .pipeline import FilterPipeline, as_pipeline
from .records import RECORD, FilterResult, Pair, Value, rejected_line

# ---------------------------------------------------------------------------
# Streaming a TSV file: bad rows, chunks, checkpoints, resume
# ---------------------------------------------------------------------------

STATE_VERSION = 2


class _Partial:
    """An output being built: ``.NAME.partial`` beside the final path, appended in chunks.

    The SHA-256 of its bytes up to each checkpoint is kept (:meth:`digest`, hashed as it grows), so a resume
    refuses a partial file that changed since (same size or not) instead of continuing it.
    """

    def __init__(self, final: Path, suffix: str = "partial"):
        self.final = final
        self.path = final.parent / f".{final.name}.{suffix}"
        self.f: IO[bytes] | None = None
        self.hash = hashlib.sha256()
        self.hashed = 0

    def open(self, size: int, digest: str | None = None) -> None:
        """Open for appending after truncating to ``size`` bytes (0: start afresh); ``digest``: the SHA-256
        those bytes had at the checkpoint (a mismatch is an error)."""
        self.final.parent.mkdir(parents=True, exist_ok=True)
        if size and (not self.path.exists() or self.path.stat().st_size < size):
            raise BisentError(f"{self.path}: partial output is missing or shorter than its checkpoint; "
                              f"start over with resume=False")
        if not size:
            remove_tree(self.path)
        self.f = open_existing(self.path) if size else open_exclusive(self.path)  # never through a planted link
        self.hash, self.hashed = hashlib.sha256(), 0
        if size:
            self._hash_upto(size)
            if digest is not None and self.hash.hexdigest() != digest:
                self.close()
                raise BisentError(f"{self.path}: partial output changed since its checkpoint (SHA-256 differs); "
                                  f"refusing to continue it: start over (--no-resume)")
        self.f.truncate(size)
        self.f.seek(size)

    def _hash_upto(self, size: int) -> None:
        with open_existing(self.path, "rb") as f:
            f.seek(self.hashed)
            while self.hashed < size and (block := f.read(min(1 << 20, size - self.hashed))):
                self.hash.update(block)
                self.hashed += len(block)

    def digest(self) -> str:
        """SHA-256 of the bytes up to the last :meth:`sync`."""
        return self.hash.hexdigest()

    def write(self, data: bytes) -> None:
        if data:
            assert self.f is not None
            self.f.write(_compress(self.final, data))

    def sync(self) -> int:
        assert self.f is not None
        self.f.flush()
        os.fsync(self.f.fileno())
        size = self.f.tell()
        self._hash_upto(size)
        return size

    def close(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None

    def finish(self) -> None:
        """Rename into place (an empty compressed output gets a valid empty member first)."""
        self.close()
        if self.path.exists():
            if self.path.stat().st_size == 0 and _compress(self.final, b"") != b"":
                self.path.write_bytes(_compress(self.final, b""))
            os.replace(self.path, self.final)

    def remove(self) -> None:
        self.close()
        remove_tree(self.path)


def _settings(pipeline: FilterPipeline, src_lang, tgt_lang, max_side_bytes, outputs: Sequence[Path]) -> dict:
    """The settings a filter checkpoint belongs to (the input's identity is the other half of its fingerprint)."""
    return {"state_version": STATE_VERSION, "pipeline": pipeline.describe(), "src_lang": src_lang,
            "tgt_lang": tgt_lang, "max_side_bytes": max_side_bytes, "outputs": [str(p.resolve()) for p in outputs]}


def filter_file(in_tsv, out_kept, out_rejected, src_lang: str, tgt_lang: str, config,
                summary_path=None, *, chunk_size: int = 10_000, max_side_bytes: int = MAX_SIDE_BYTES,
                resume: bool = True, progress: bool | None = True) -> dict:
    """Filter a ``src<TAB>tgt`` file (plain, .gz, .xz or .zst) into kept and rejected files; return the summary.

    - kept lines are written byte for byte as they were read;
    - rejected lines as ``lineno<TAB>reason<TAB>score<TAB>original line`` (bad bytes
      and NULs shown as ``\\xNN``); reasons are step names, ``bad_row:nul|cr|columns|
      too_long|utf8`` (score: byte column, column count, side bytes) or ``select:<mode>``;
    - outputs ending in ``.gz`` / ``.xz`` are compressed;
    - the summary (also written to ``summary_path`` as JSON) counts lines per reason;
      ``kept + rejected == input lines`` is checked.

    Progress is checkpointed after every ``chunk_size`` lines (partial outputs
    ``.NAME.partial`` beside each output, state in ``.KEPTNAME.filter-state/``). A
    rerun with the same arguments after a kill continues from the last checkpoint
    and produces the same output as an uninterrupted run; ``resume=False``
    starts over. Outputs appear (renamed into place) only when the run completes.

    When a step needs a sample of the input (a margin with ``background: sample``),
    a first pass over the file draws it (:func:`background_sample`, deterministic,
    so a resumed run draws the same one again).
    """
    t0 = time.perf_counter()
    in_path = check_readable(in_tsv)
    out_kept, out_rejected = Path(out_kept), Path(out_rejected)
    if out_kept.resolve() == out_rejected.resolve():
        raise BisentError(f"{out_kept}: the kept and rejected outputs must be different files")
    if in_path.resolve() in (out_kept.resolve(), out_rejected.resolve()):
        raise BisentError(f"{in_path}: an output would overwrite the input")
    check_number("chunk_size", chunk_size, low=1, integer=True)
    check_number("max_side_bytes", max_side_bytes, low=1, integer=True)
    pipeline = as_pipeline(config, src_lang, tgt_lang)
    sel = pipeline.selection
    two_pass = sel is not None and not sel.streaming

    kept_p, rej_p = _Partial(out_kept), _Partial(out_rejected)
    rec_p = _Partial(out_kept, "records")  # (lineno, score, words) per kept line, for two-pass selection
    store = StateDir(out_kept.parent / f".{out_kept.name}.filter-state", "filter", what="an unfinished filter run",
                     remedy="pass --no-resume (resume=False) to start over")
    state_dir, state_path = store.path, store.part("state.json")
    # the input's bytes, not size and mtime; refuses a link or a user's folder before anything is read or removed
    resumed = store.open(inputs={"input": file_identity(in_path)},
                         settings=_settings(pipeline, src_lang, tgt_lang, max_side_bytes, [out_kept, out_rejected]),
                         restart=not resume)
    state = store.read_json("state.json") if resumed else None
    if state is None:
        for p in (kept_p, rej_p, rec_p):
            p.remove()
        store.clear()
        state = {"version": STATE_VERSION, "phase": "scoring", "lines": 0, "offset": 0,
                 "kept": 0, "rejected_by": {}, "sizes": {"kept": 0, "rejected": 0, "records": 0},
                 "steps": {}, "seconds": 0.0}
    for step in pipeline.steps:
        step.reset()
        if state["phase"] != "done" and step.name in state["steps"]:
            step.load_state(state_dir, state["steps"][step.name])
    seconds_before = state["seconds"]

    def checkpoint() -> None:
        state["sizes"] = {"kept": kept_p.sync(), "rejected": rej_p.sync(), "records": rec_p.sync()}
        state["digests"] = {"kept": kept_p.digest(), "rejected": rej_p.digest(), "records": rec_p.digest()}
        for step in pipeline.steps:
            marker = step.save_state(state_dir)
            if marker is not None:
                state["steps"][step.name] = marker
        state["seconds"] = seconds_before + time.perf_counter() - t0
        _write_json(state_path, state)

    if state["phase"] != "done":
        try:
            digests = state.get("digests", {})
            kept_p.open(state["sizes"]["kept"], digests.get("kept"))
            rej_p.open(state["sizes"]["rejected"], digests.get("rejected"))
            rec_p.open(state["sizes"]["records"], digests.get("records"))
            if state["phase"] == "scoring":
                if pipeline.sample_size:
                    try:
                        pipeline.prepare(_sample_rows(in_path, max_side_bytes, progress))
                    except SwappedSides as e:
                        raise SwappedSides(e.reason, str(in_path)) from None
                _score_pass(in_path, pipeline, state, kept_p, rej_p, rec_p, checkpoint, two_pass,
                            chunk_size, max_side_bytes, progress)
                state["phase"] = "scored"
                checkpoint()
            if two_pass:
                rec_p.close()
                kept_p.close()
                n_sel, n_rej = _select(pipeline, kept_p, rec_p, rej_p, progress)
                rej_p.sync()
                state["kept"] = n_sel
                if n_rej:
                    state["rejected_by"][sel.reason] = n_rej
        finally:
            for p in (kept_p, rej_p, rec_p):
                p.close()
        state["summary"] = _summary(in_path, out_kept, out_rejected, pipeline, state,
                                    seconds_before + time.perf_counter() - t0)
        state["phase"] = "done"
        _write_json(state_path, state)

    # Finish: every rename below is idempotent, so a kill here is completed by a rerun.
    summary = state["summary"]
    if two_pass:
        _Partial(out_kept, "selected").finish()
        kept_p.remove()
    else:
        kept_p.finish()
    rec_p.remove()
    rej_p.finish()
    if summary_path is not None:
        _write_json(Path(summary_path), summary)
    store.finish(first=["state.json"])  # without it a rerun starts afresh rather than resuming a half-removed state
    return summary


def _summary(in_path, out_kept, out_rejected, pipeline, state, seconds) -> dict:
    rejected = sum(state["rejected_by"].values())
    summary = {"input": str(in_path), "kept_file": str(out_kept), "rejected_file": str(out_rejected),
               "lines": state["lines"], "kept": state["kept"], "rejected": rejected,
               "rejected_by": dict(sorted(state["rejected_by"].items())),
               "pipeline": pipeline.describe(), "seconds": round(seconds, 3)}
    if summary["kept"] + summary["rejected"] != summary["lines"]:
        raise RuntimeError(f"filter accounting is off: {summary['kept']} kept + {summary['rejected']} rejected "
                           f"!= {summary['lines']} input lines")
    return summary


def _select(pipeline, kept_p: _Partial, rec_p: _Partial, rej_p: _Partial, progress: bool) -> tuple[int, int]:
    """The second pass of a top-N / word-budget selection into ``.KEPT.selected`` (renamed at the end)."""
    out = _Partial(kept_p.final, "selected")
    out.open(0)
    try:
        return selection.select_pass(pipeline, kept_p.path, rec_p.path, out, rej_p, like=kept_p.final,
                                     progress=progress)
    finally:
        out.close()


def _units(in_path: Path, max_side_bytes: int, start: tuple[int, int] = (0, 1)) -> tuple[Bitext, Iterator[Unit]]:
    """The input's units, read by :func:`bisent.io.bitext.iter_units` from byte ``start[0]`` (line ``start[1]``);
    bad rows are kept with their reason."""
    bt = open_bitext([in_path], fmt="tsv")
    bt.max_side_bytes = max_side_bytes
    bt.extra["start"] = start
    return bt, iter_units(bt, on_bad="keep", allow_empty=True)


def _bar(in_path: Path, what: str, progress: bool):
    return progress_bar(progress, total=os.stat(in_path).st_size, unit="B", unit_scale=True,
                        desc=f"{what} {in_path.name}", leave=False)


def _sample_rows(in_path: Path, max_side_bytes: int, progress: bool) -> Iterator[Pair]:
    """The pre-pass for steps that need a sample: every well-formed pair of the file, in order."""
    bt, units = _units(in_path, max_side_bytes)
    bar = _bar(in_path, "sample", progress)
    try:
        for u in units:
            if u.problem is None:
                yield u.src, u.tgt
            if u.n % 65536 == 0:
                bar.update(bt.extra["position"]() - bar.n)
    finally:
        bar.close()


def _score_pass(in_path: Path, pipeline: FilterPipeline, state: dict, kept_p: _Partial, rej_p: _Partial,
                rec_p: _Partial, checkpoint: Callable[[], None], two_pass: bool, chunk_size: int,
                max_side_bytes: int, progress: bool) -> None:
    """Pass one: read chunks from the last checkpoint, score, append outputs, checkpoint each chunk."""
    sel = pipeline.selection
    bt, units = _units(in_path, max_side_bytes, (state["offset"], state["lines"] + 1))
    bar = _bar(in_path, "filter", progress)
    try:
        while chunk := list(itertools.islice(units, chunk_size)):
            _process_chunk(chunk, pipeline, state, kept_p, rej_p, rec_p, two_pass, sel)
            state["lines"], state["offset"] = chunk[-1].n, bt.extra["offset"]
            checkpoint()
            bar.update(bt.extra["position"]() - bar.n)
    finally:
        bar.close()


def decide(pipeline: FilterPipeline, pairs: list[Pair]) -> Iterator[FilterResult]:
    """The pipeline's outcome for each of ``pairs`` (one chunk, in order), a threshold selection applied as it
    streams: the decision of every filter run, whatever its input's format."""
    for res in pipeline.process(pairs):
        yield pipeline.apply_streaming_selection(res)


def _process_chunk(units: list[Unit], pipeline, state, kept_p, rej_p, rec_p, two_pass, sel) -> None:
    counts = state["rejected_by"]
    pairs: list[Pair] = []
    where: list[int] = []  # index into units of each pair
    rows = [u.raw for u in units]
    rejected: dict[int, tuple[str, Value | None]] = {}
    for i, u in enumerate(units):
        if u.problem is not None:
            rejected[i] = (u.problem, u.detail)
        else:
            pairs.append((u.src, u.tgt))
            where.append(i)
    kept: list[int] = []
    scores: dict[int, Value | None] = {}
    for n, (i, res) in enumerate(zip(where, decide(pipeline, pairs))):
        if res.kept:
            kept.append(i)
            scores[i] = res.score
            if res.pair != pairs[n]:                                 # repaired by a step (filtering/repair.py)
                rows[i] = "\t".join(res.pair).encode("utf-8")
        else:
            rejected[i] = (res.reason, res.score)
    kept_p.write(b"".join(rows[i] + b"\n" for i in kept))
    out = []
    for i in sorted(rejected):
        reason, value = rejected[i]
        counts[reason] = counts.get(reason, 0) + 1
        out.append(rejected_line(units[i].n, reason, value, rows[i], names=pipeline.value_names(reason)))
    rej_p.write(b"".join(out))
    state["kept"] += len(kept)
    if two_pass and kept:
        pair_of = dict(zip(where, pairs))
        rec = np.empty(len(kept), dtype=RECORD)
        rec["lineno"] = [units[i].n for i in kept]
        rec["score"] = [sel.scalar(scores[i], pipeline.score_step) for i in kept]
        rec["words"] = [sel.words(pair_of[i]) for i in kept]
        rec_p.f.write(rec.tobytes())

"""Aligning files: one document pair, or many listed in a TSV of path pairs, in parallel over processes.

Each pair gives an aligned TSV and an alignment file (see :mod:`.files`) and a
summary line: sentences and lines of each side, blocks per type, unaligned
lines; or, for a pair that cannot be aligned (an empty document, a bad
line), the reason, and the other pairs go on.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import NamedTuple

from ..errors import BisentError, where
from ..io import atomic_write, check_readable, file_sha256, format_block
from ..progress import progress_bar
from ..state import StateDir
from .aligner import SentenceAligner
from .files import check_accounted, line_blocks, read_document


class Row(NamedTuple):
    """One row of the aligned TSV: 1-based line numbers of each side, the score (None: a skip; "empty": an
    empty line), the texts."""

    src_lines: tuple[int, ...]
    tgt_lines: tuple[int, ...]
    score: float | str | None
    src: str
    tgt: str


def line_rows(blocks, src_doc, tgt_doc) -> list[Row]:
    """Rows of line blocks (:func:`.files.line_blocks`): a line's sentences joined, empty lines as rows of
    their own with the score ``empty``."""
    src_text, tgt_text = _line_texts(src_doc), _line_texts(tgt_doc)
    out = []
    for b in blocks:
        score = b.score
        if (b.src and not b.tgt and b.src[0] + 1 in src_doc.empty_lines) or \
                (b.tgt and not b.src and b.tgt[0] + 1 in tgt_doc.empty_lines):
            score = "empty"
        out.append(Row(tuple(k + 1 for k in b.src), tuple(k + 1 for k in b.tgt), score,
                       " ".join(src_text[k] for k in b.src), " ".join(tgt_text[k] for k in b.tgt)))
    return out


def sentence_rows(blocks, src_doc, tgt_doc) -> list[Row]:
    """Rows of sentence blocks (``--split``): each sentence's own text and the line it came from (a line
    whose sentences went to two blocks is in both rows), the block's score; then the empty lines."""
    out = [Row(tuple(src_doc.lines[k] for k in b.src), tuple(tgt_doc.lines[k] for k in b.tgt), b.score,
               " ".join(src_doc.sentences[k] for k in b.src), " ".join(tgt_doc.sentences[k] for k in b.tgt))
           for b in blocks]
    out += [Row((ln,), (), "empty", "", "") for ln in src_doc.empty_lines]
    out += [Row((), (ln,), "empty", "", "") for ln in tgt_doc.empty_lines]
    return out


def _score_text(score) -> str:
    return "" if score is None else score if isinstance(score, str) else f"{score:.4f}"


def write_aligned(out_tsv, out_blocks, rows: list[Row], blocks) -> None:
    """Aligned TSV (``src_lines, tgt_lines, score, src, tgt``) and/or the ``[i]:[j]`` file of ``blocks``
    (0-based lines)."""
    if out_tsv is not None:
        with atomic_write(out_tsv) as f:
            for r in rows:
                f.write("\t".join([",".join(map(str, r.src_lines)), ",".join(map(str, r.tgt_lines)),
                                   _score_text(r.score), r.src, r.tgt]) + "\n")
    if out_blocks is not None:
        with atomic_write(out_blocks) as f:
            f.write("".join(format_block(b.src, b.tgt, b.score) + "\n" for b in blocks))


def _line_texts(doc) -> dict[int, str]:
    out: dict[int, list[str]] = {}
    for s, ln in zip(doc.sentences, doc.lines):
        out.setdefault(ln - 1, []).append(s)
    return {k: " ".join(v) for k, v in out.items()} | {ln - 1: "" for ln in doc.empty_lines}


def align_files(src_path, tgt_path, src_lang: str, tgt_lang: str, aligner: SentenceAligner, *, out_tsv=None,
                out_blocks=None, split: bool = False) -> dict:
    """Align two document files; write the outputs; return the pair's summary (counts per block type).

    With ``split`` (raw text split into sentences) the TSV has one row per
    sentence block, each with its sentences' texts, lines and score; the
    ``[i]:[j]`` file stays at line level (a line's sentences in one block).
    Either way every sentence and every line is in the output exactly once.
    """
    src_doc = read_document(src_path, src_lang, split=split)
    tgt_doc = read_document(tgt_path, tgt_lang, split=split)
    res = aligner.align(src_doc.sentences, tgt_doc.sentences, src_lang, tgt_lang)
    check_accounted(res.blocks, len(src_doc.sentences), len(tgt_doc.sentences))
    blocks = line_blocks(res.blocks, src_doc, tgt_doc)
    check_accounted(blocks, src_doc.n_lines, tgt_doc.n_lines)
    rows = sentence_rows(res.blocks, src_doc, tgt_doc) if split else line_rows(blocks, src_doc, tgt_doc)
    write_aligned(out_tsv, out_blocks, rows, blocks)
    units = res.blocks if split else blocks
    types = Counter(f"{len(b.src)}-{len(b.tgt)}" for b in units)
    summary = {"src": str(src_path), "tgt": str(tgt_path), "src_lines": src_doc.n_lines,
               "tgt_lines": tgt_doc.n_lines, "src_sentences": len(src_doc.sentences),
               "tgt_sentences": len(tgt_doc.sentences), "blocks": dict(sorted(types.items())),
               "aligned_blocks": sum(1 for b in units if b.src and b.tgt),
               "unaligned_src_lines": sum(len(b.src) for b in blocks if not b.tgt),
               "unaligned_tgt_lines": sum(len(b.tgt) for b in blocks if not b.src)}
    if split:
        summary.update(unaligned_src_sentences=sum(len(b.src) for b in res.blocks if not b.tgt),
                       unaligned_tgt_sentences=sum(len(b.tgt) for b in res.blocks if not b.src))
    return {**summary, "seconds": round(res.seconds, 3)}


def read_pairs(path) -> list[tuple[int, Path, Path]]:
    """``(line, src path, tgt path)`` of a pairs TSV (the first two columns; more columns are ignored),
    or of the matched rows of a ``bisent documents mine`` output (its header line first; the paths are the
    ``src_origin`` and ``tgt_origin`` columns, so the collections must have been folders of files).

    Relative paths are taken from the pairs file's folder. A missing file or a
    line with fewer than two columns is a one-line error naming the line.
    """
    from ..documents import MINE_COLUMNS

    path = check_readable(path)
    out = []
    mined = False
    for n, raw in enumerate(open(path, "rb"), 1):
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if not text.strip():
            continue
        cols = text.split("\t")
        if n == 1 and cols == list(MINE_COLUMNS):
            mined = True
            continue
        if mined:
            if len(cols) != len(MINE_COLUMNS):
                raise BisentError(f"{where(path, n)}: expected {len(MINE_COLUMNS)} columns of 'bisent documents mine', "
                                  f"found {len(cols)}")
            if cols[4] != "matched":
                continue   # an unmatched source document: nothing to align
            cols = cols[5:7]
        if len(cols) < 2 or not cols[0] or not cols[1]:
            raise BisentError(f"{where(path, n)}: expected src_path<TAB>tgt_path, found {len(cols)} column(s)")
        pair = []
        for c in cols[:2]:
            p = Path(c) if Path(c).is_absolute() else path.parent / c
            if not p.is_file():
                hint = (" (a line of a JSONL collection: mine folders of files for 'bisent align', "
                        "or mine inside 'bisent run')" if mined and _jsonl_line(c, path.parent) else "")
                raise BisentError(f"{where(path, n)}: no such file: {c}{hint}")
            pair.append(p)
        out.append((n, pair[0], pair[1]))
    if not out:
        raise BisentError(f"{path}: no document pairs")
    return out


def _jsonl_line(origin: str, base: Path) -> bool:
    """Whether a mined document's origin is ``FILE:LINE`` of a JSONL collection rather than a file."""
    name, _, line = origin.rpartition(":")
    return line.isdigit() and (Path(name) if Path(name).is_absolute() else base / name).is_file()


_WORKER: dict = {}


def _init_worker(encoder: str, options: dict) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _WORKER["aligner"] = SentenceAligner(encoder, progress=False, **options)


def _run_one(job) -> dict:
    n, src, tgt, src_lang, tgt_lang, out_tsv, out_blocks, split = job
    try:
        summary = align_files(src, tgt, src_lang, tgt_lang, _WORKER["aligner"], out_tsv=out_tsv,
                              out_blocks=out_blocks, split=split)
    except BisentError as e:   # this pair cannot be aligned: say why, the rest go on
        summary = {"src": str(src), "tgt": str(tgt), "error": str(e)}
    return {"line": n, **summary}


def _pair_key(k: int, src: Path, tgt: Path, setting: dict) -> str:
    """What the ``k``-th pair's outputs depend on: its output slot, both documents' bytes, the settings."""
    desc = [k, str(src), str(tgt), file_sha256(src), file_sha256(tgt), setting]
    return hashlib.sha256(json.dumps(desc, sort_keys=True, default=str).encode()).hexdigest()


def align_many(pairs_tsv, out_dir, src_lang: str, tgt_lang: str, *, encoder: str = "use-m3", jobs: int = 1,
               split: bool = False, progress: bool | None = None, keyed: dict | None = None, **options) -> dict:
    """Align every pair listed in ``pairs_tsv`` into ``out_dir`` (``NNNNN.tsv``, ``NNNNN.blocks``, ``summary.jsonl``).

    ``out_dir`` is bisent's own folder and its resume state (:class:`bisent.state.StateDir`, fingerprinted by
    the encoder, languages and options: a folder aligned with other settings is refused). Pairs already done
    (their completion marks in ``summary.jsonl`` with the same key: the SHA-256 of both documents' bytes and
    the settings) are skipped, so a killed run continues; a pair whose document changed since is aligned
    again, the others kept.
    ``jobs`` processes each hold an encoder. ``keyed``: more settings the outputs depend on (the key
    only; e.g. ``bisent run``'s ``precision``, which rewrites them afterwards).
    """
    pairs = read_pairs(pairs_tsv)
    setting = {"encoder": encoder, "src_lang": src_lang, "tgt_lang": tgt_lang, "split": split, **options,
               **(keyed or {})}
    store = StateDir(out_dir, "align", what="alignments", remedy="give another output folder or remove this one")
    store.open(inputs={}, settings=setting)       # the documents' identities are in each pair's completion mark
    out = store.path
    done_path = out / "summary.jsonl"
    keys = {n: _pair_key(k, s, t, setting) for k, (n, s, t) in enumerate(pairs)}
    done = {}
    if done_path.exists():
        for line in done_path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                if row.get("key") == keys.get(row["line"]) and row.get("key") is not None:
                    done[row["line"]] = row
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):  # torn or foreign: redo the pair
                continue
    jobs_list = [(n, s, t, src_lang, tgt_lang, out / f"{k:05d}.tsv", out / f"{k:05d}.blocks", split)
                 for k, (n, s, t) in enumerate(pairs) if n not in done]
    _init_worker(encoder, options) if jobs <= 1 else None
    with open(done_path, "a", encoding="utf-8") as log, \
            progress_bar(progress, total=len(pairs), initial=len(pairs) - len(jobs_list), desc="align",
                         unit="pair") as bar:
        if jobs <= 1:
            results = map(_run_one, jobs_list)
            pool = None
        else:
            pool = ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(encoder, options))
            results = pool.map(_run_one, jobs_list)
        try:
            for row in results:
                row["key"] = keys[row["line"]]
                done[row["line"]] = row
                log.write(json.dumps(row) + "\n")
                log.flush()
                bar.update(1)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
    rows = [done[n] for n, _, _ in pairs]
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if done_path.read_text(encoding="utf-8") != text:
        # a resumed log holds rows in the order they finished, rows of documents changed since and a line torn by
        # the kill: rewritten as an uninterrupted run writes it, the current row of each pair in the order of PAIRS
        with atomic_write(done_path) as f:
            f.write(text)
    return {"pairs": len(rows), "aligned": sum("error" not in r for r in rows),
            "failed": sum("error" in r for r in rows),
            "aligned_blocks": sum(r.get("aligned_blocks", 0) for r in rows),
            "unaligned_src_lines": sum(r.get("unaligned_src_lines", 0) for r in rows),
            "unaligned_tgt_lines": sum(r.get("unaligned_tgt_lines", 0) for r in rows)}

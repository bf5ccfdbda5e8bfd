"""Reading documents and alignments, writing aligned output, and strict / lax alignment P/R/F1.

Alignment files (gold and output alike) hold one block per line in the format
of the alignment literature (vecalign, bertalign): ``[0]:[0,1]`` or
``[3,4]:[]``, 0-based *line* indices of the two documents, optionally followed
by ``:score``. Indices are line numbers minus one, so an empty line that was
not aligned keeps its place.

Aligned TSV (``bisent align -o``): ``src_lines<TAB>tgt_lines<TAB>score<TAB>src<TAB>tgt``
with 1-based line numbers joined by commas (empty for a skipped side), the
score (cosine of the groups' embeddings; empty for a skip) and the texts
joined by a space. Every input line appears in exactly one row: empty input
lines as rows of their own with score ``empty``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from ..errors import BisentError, where
from ..evaluate import AlignScores, score_alignments  # noqa: F401  (the metric lives in evaluate)
from ..io import read_lines
from .aligner import Block

_BLOCK_RE = re.compile(r"^\s*\[([0-9,\s]*)\]\s*:\s*\[([0-9,\s]*)\]\s*(?::\s*(\S+)\s*)?$")


class Document(NamedTuple):
    """A document's sentences with the 1-based line (and, after --split, the piece) each came from."""

    sentences: list[str]
    lines: list[int]          # line number of each sentence
    empty_lines: list[int]    # lines with no text (accounted for, never aligned)
    n_lines: int


def read_document(path, lang: str | None = None, *, split: bool = False) -> Document:
    """One sentence per line (empty lines kept aside), or with ``split`` raw text split by sentencex.

    Bad bytes, NULs, tabs and overlong lines stop with ``FILE:LINE: problem``; an
    empty file or one without any text is an error too.
    """
    sentences, lines, empty, n = [], [], [], 0
    if split:
        from sentencex import segment
    for line in read_lines(path):
        n = line.lineno
        if line.problem == "empty line" or not line.text.strip():
            empty.append(line.lineno)
            continue
        pieces = [s.strip() for s in segment(lang, line.text) if s.strip()] if split else [line.text]
        for s in pieces or [line.text]:
            sentences.append(s)
            lines.append(line.lineno)
    if not sentences:
        raise BisentError(f"{path}: no sentences (only empty lines)")
    return Document(sentences, lines, empty, n)


def read_alignment(path) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Blocks of an alignment file (``[0]:[0,1]`` per line); a malformed line, or a sentence in two blocks
    (a block repeated, or blocks that overlap), is a one-line error."""
    from ..io import check_readable

    blocks = []
    first: tuple[dict[int, int], dict[int, int]] = ({}, {})           # sentence -> line of its block, per side
    for n, raw in enumerate(open(check_readable(path), "rb"), 1):
        try:
            text = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            raise BisentError(f"{where(path, n)}: not valid UTF-8") from None
        if not text.strip():
            continue
        m = _BLOCK_RE.match(text)
        if not m:
            raise BisentError(f"{where(path, n)}: expected a block like [0]:[0,1], got {text[:60]!r}")
        src, tgt = (tuple(int(x) for x in g.replace(" ", "").split(",") if x) for g in m.group(1, 2))
        if not src and not tgt:
            raise BisentError(f"{where(path, n)}: a block with both sides empty")
        for side, ids, seen in (("source", src, first[0]), ("target", tgt, first[1])):
            for i in ids:
                if i in seen:
                    raise BisentError(f"{where(path, n)}: {side} sentence {i} is already in the block of line "
                                      f"{seen[i]} (each sentence belongs to one block at most)")
                seen[i] = n
        blocks.append((src, tgt))
    if not blocks:
        raise BisentError(f"{path}: no alignment blocks")
    return blocks


def read_scored_alignment(path) -> list[tuple[tuple[int, ...], tuple[int, ...], float | None]]:
    """As :func:`read_alignment`, with each block's ``:score`` (None where the line has none)."""
    out = []
    for n, raw in enumerate(open(path, "rb"), 1):
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        m = _BLOCK_RE.match(text) if text.strip() else None
        if text.strip() and not m:
            raise BisentError(f"{where(path, n)}: expected a block like [0]:[0,1], got {text[:60]!r}")
        if m:
            src, tgt = (tuple(int(x) for x in g.replace(" ", "").split(",") if x) for g in m.group(1, 2))
            try:
                score = float(m.group(3)) if m.group(3) else None
            except ValueError:
                raise BisentError(f"{where(path, n)}: score {m.group(3)!r} is not a number") from None
            out.append((src, tgt, score))
    return out


def line_blocks(blocks: list[Block], src: Document, tgt: Document) -> list[Block]:
    """Blocks over 0-based *line* indices: sentences mapped to their lines (pieces of one line merged
    into the block holding them); empty lines follow as 1-0 / 0-1 blocks of their own."""
    out: list[Block] = []
    for b in blocks:
        s = tuple(dict.fromkeys(src.lines[k] - 1 for k in b.src))
        t = tuple(dict.fromkeys(tgt.lines[k] - 1 for k in b.tgt))
        if out and ((s and out[-1].src and s[0] == out[-1].src[-1]) or (t and out[-1].tgt and t[0] == out[-1].tgt[-1])):
            prev = out.pop()     # a line split into sentences that landed in two blocks: one block again
            s = tuple(dict.fromkeys(prev.src + s))
            t = tuple(dict.fromkeys(prev.tgt + t))
            b = Block(s, t, None)
        out.append(Block(s, t, b.score))
    out += [Block((ln - 1,), (), None) for ln in src.empty_lines]
    out += [Block((), (ln - 1,), None) for ln in tgt.empty_lines]
    return out


def check_accounted(blocks: list[Block], n_src: int, n_tgt: int) -> None:
    """Every line index of both documents in exactly one block (a bug otherwise, not a user error)."""
    s = sorted(k for b in blocks for k in b.src)
    t = sorted(k for b in blocks for k in b.tgt)
    if s != list(range(n_src)) or t != list(range(n_tgt)):
        raise AssertionError("alignment does not account for every line exactly once")


def read_alignment_list(path) -> list[list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    """The alignment files named in the third column of a pairs TSV (``src<TAB>tgt<TAB>alignment``), in order."""
    from pathlib import Path

    from ..io import check_readable

    path = Path(path)
    out = []
    for n, raw in enumerate(open(check_readable(path), "rb"), 1):
        cols = raw.decode("utf-8", errors="replace").rstrip("\r\n").split("\t")
        if len(cols) < 3:
            raise BisentError(f"{where(path, n)}: expected src<TAB>tgt<TAB>alignment_path, found {len(cols)} column(s)")
        p = Path(cols[2]) if Path(cols[2]).is_absolute() else path.parent / cols[2]
        if not p.is_file():
            raise BisentError(f"{where(path, n)}: no such file: {cols[2]}")
        out.append(read_alignment(p))
    return out

"""TSV bitexts: ``src<TAB>tgt`` lines, or any number of columns with ``--columns S,T`` (1-based)."""

from __future__ import annotations

import os
from typing import Iterator

from ...errors import BisentError, where
from ..files import HARD_LINE_BYTES, READ_ERRORS, atomic_write, open_binary
from ..rows import Bitext, Unit, format_value, parse_row, strip_bom, unchanged


def read(bt: Bitext) -> Iterator[Unit]:
    """Every line as a unit, streamed; every row must have the first row's column count (two without ``columns``).

    A unit's ``raw`` is its line as read (a CRLF line's CR included, so kept lines are written back byte for
    byte). ``bt.extra["start"] = (offset, lineno)`` starts at a byte offset of the decompressed text (a resumed
    run); while reading, ``bt.extra["offset"]`` is the offset after the last unit yielded and
    ``bt.extra["position"]()`` the position in the file itself (compressed bytes), for a progress bar.
    """
    path = bt.paths[0]
    s, t = (c - 1 for c in bt.columns) if bt.columns else (0, 1)
    want = bt.ncols = None if bt.columns else 2
    offset, first = bt.extra.get("start", (0, 1))
    try:
        with open(path, "rb") as raw_file, open_binary(raw_file, like=path) as f:
            if offset:
                f.seek(offset)
            size = os.fstat(raw_file.fileno()).st_size
            bt.extra["position"] = lambda: size if raw_file.closed else raw_file.tell()
            for n, line in enumerate(iter(lambda: f.readline(HARD_LINE_BYTES + 1), b""), first):
                if len(line) > HARD_LINE_BYTES:
                    raise BisentError(f"{where(path, n)}: line of more than {HARD_LINE_BYTES >> 20} MB without a "
                                      f"newline (not a text file?)")
                offset += len(line)
                bt.extra["offset"] = offset
                raw = line[:-1] if line.endswith(b"\n") else line
                body = raw[:-1] if raw.endswith(b"\r") else raw
                cols = body.split(b"\t")
                if want is None:
                    want = bt.ncols = len(cols)  # every row has the first row's column count
                    if max(s, t) >= want:
                        raise BisentError(f"{where(path, n)}: --columns {s + 1},{t + 1}: the line has only "
                                          f"{want} tab-separated columns")
                u = Unit(n, raw=raw, data=cols)
                if b"\x00" in body or b"\r" in body:   # parse_row drops the line's own final CR, then finds these
                    u.problem, u.detail = parse_row(raw)[1:]
                elif len(cols) != want:
                    u.problem, u.detail = "bad_row:columns", float(len(cols))
                else:
                    row = body if want == 2 and (s, t) == (0, 1) else cols[s] + b"\t" + cols[t]
                    pair, u.problem, u.detail = parse_row(row, bt.max_side_bytes)
                    if pair is not None:
                        u.src = strip_bom(n, pair[0]) if s == 0 else pair[0]
                        u.tgt = strip_bom(n, pair[1]) if t == 0 else pair[1]
                yield u
    except READ_ERRORS as e:
        raise BisentError(f"{path}: cannot read ({e.__class__.__name__}: {e})") from None


def write(paths, bt: Bitext, units, scores, score_name: str) -> None:
    """Kept rows as read (a changed text in its columns), a score column appended when asked."""
    s, t = (c - 1 for c in bt.columns) if bt.columns else (0, 1)
    with atomic_write(paths[0], "wb") as f:
        for i, u in enumerate(units):
            cols = list(u.data)
            if not unchanged(bt, u):
                cols[s], cols[t] = u.src.encode("utf-8"), u.tgt.encode("utf-8")
            if scores is not None:
                cols.append(format_value(float(scores[i])).encode())
            f.write(b"\t".join(cols) + b"\n")


def write_fields(paths, bt: Bitext, units, fields, names) -> None:
    """Every row as read with the fields as columns after the last."""
    with atomic_write(paths[0], "wb") as f:
        for u, extra in zip(units, fields):
            cols = list(u.data) if u.data is not None else [u.raw]
            f.write(b"\t".join(cols + [extra[k].encode("utf-8") for k in names]) + b"\n")


def new(bt: Bitext, **_) -> None:
    for u in bt.units:
        u.data = [u.src.encode(), u.tgt.encode()]

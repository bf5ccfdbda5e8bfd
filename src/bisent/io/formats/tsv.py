"""TSV bitexts: ``src<TAB>tgt`` lines, or any number of columns with ``--columns S,T`` (1-based)."""

from __future__ import annotations

from typing import Iterator

from ...errors import BisentError, where
from ..files import atomic_write, iter_raw_lines
from ..rows import MAX_SIDE_BYTES, Bitext, Unit, format_value, parse_row, strip_bom, unchanged


def read(bt: Bitext) -> Iterator[Unit]:
    """Every line as a unit; every row must have the first row's column count (two without ``columns``)."""
    s, t = (c - 1 for c in bt.columns) if bt.columns else (0, 1)
    want = bt.ncols = None if bt.columns else 2
    for n, raw in iter_raw_lines(bt.paths[0]):
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        cols = raw.split(b"\t")
        if want is None:
            want = bt.ncols = len(cols)  # every row has the first row's column count
            if max(s, t) >= want:
                raise BisentError(f"{where(bt.paths[0], n)}: --columns {s + 1},{t + 1}: the line has only "
                                  f"{want} tab-separated columns")
        u = Unit(n, raw=raw, data=cols)
        if b"\x00" in raw or b"\r" in raw:
            u.problem, u.detail = parse_row(raw)[1:]
        elif len(cols) != want:
            u.problem, u.detail = "bad_row:columns", float(len(cols))
        else:
            pair, u.problem, u.detail = parse_row(cols[s] + b"\t" + cols[t], MAX_SIDE_BYTES)
            if pair is not None:
                u.src = strip_bom(n, pair[0]) if s == 0 else pair[0]
                u.tgt = strip_bom(n, pair[1]) if t == 0 else pair[1]
        yield u


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

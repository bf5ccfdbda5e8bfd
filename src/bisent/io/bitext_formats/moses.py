"""Moses bitexts: two line-aligned files, one sentence a line."""

from __future__ import annotations

from typing import Iterator

from ...errors import BisentError
from ..files import atomic_write, iter_raw_lines
from ..rows import Bitext, Unit, pair_of, strip_bom, unchanged


def read(bt: Bitext) -> Iterator[Unit]:
    """Line ``n`` of both files as unit ``n``; files of different lengths are a one-line error."""
    a, b = bt.paths
    src, tgt = list(iter_raw_lines(a)), list(iter_raw_lines(b))
    if len(src) != len(tgt):
        raise BisentError(f"{a}: has {len(src)} lines but {b} has {len(tgt)}; Moses files are line-aligned")
    for (n, rs), (_, rt) in zip(src, tgt):
        pair, problem, detail = pair_of(rs, rt)
        u = Unit(n, problem=problem, detail=detail, raw=rs + b"\t" + rt, data=(rs, rt))
        if pair is not None:
            u.src, u.tgt = strip_bom(n, pair[0]), strip_bom(n, pair[1])
        yield u


def write(paths, bt: Bitext, units, scores, score_name: str) -> None:
    with atomic_write(paths[0], "wb") as fs, atomic_write(paths[1], "wb") as ft:
        for u in units:
            rs, rt = u.data if unchanged(bt, u) else (u.src.encode("utf-8"), u.tgt.encode("utf-8"))
            fs.write(rs + b"\n")
            ft.write(rt + b"\n")


def write_fields(paths, bt: Bitext, units, fields, names) -> None:
    raise BisentError("--score-all: Moses files hold one sentence a line and have no place for the scores; "
                      "give the pair as one TSV file")


def new(bt: Bitext, **_) -> None:
    for u in bt.units:
        u.data = (u.src.encode(), u.tgt.encode())

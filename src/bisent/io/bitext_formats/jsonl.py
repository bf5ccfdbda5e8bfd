"""JSON Lines bitexts: one object a line, the sides under two keys (``src`` and ``tgt`` unless told)."""

from __future__ import annotations

import json
from typing import Iterator

from ...errors import BisentError
from ...safeload import json_text
from ..files import atomic_write, iter_raw_lines
from ..rows import Bitext, Unit, set_text, strip_bom, unchanged


def read(bt: Bitext) -> Iterator[Unit]:
    ks, kt = bt.columns or ("src", "tgt")
    bt.columns = ks, kt
    for n, raw in iter_raw_lines(bt.paths[0]):
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        u = Unit(n, raw=raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            u.problem, u.detail = "bad_row:utf8", float(e.start + 1)
            yield u
            continue
        try:       # bounded: a line nested deeper than safeload.MAX_DEPTH is a bad row, never a RecursionError
            obj = json_text(strip_bom(n, text) if n == 1 else text, bt.paths[0], n)
        except BisentError:
            u.problem = "bad_row:json"
            yield u
            continue
        u.data = obj
        if not isinstance(obj, dict) or not isinstance(obj.get(ks), str) or not isinstance(obj.get(kt), str):
            u.problem = "bad_row:keys"  # not an object with string values under both keys
        else:
            set_text(u, obj[ks], obj[kt])
        yield u


def write(paths, bt: Bitext, units, scores, score_name: str) -> None:
    """Kept lines as read; a changed text or a score rewrites the line's object (other keys carried)."""
    ks, kt = bt.columns
    with atomic_write(paths[0], "wb") as f:
        for i, u in enumerate(units):
            if unchanged(bt, u) and scores is None:
                f.write(u.raw + b"\n")
                continue
            obj = dict(u.data)
            if not unchanged(bt, u):
                obj[ks], obj[kt] = u.src, u.tgt
            if scores is not None:
                obj[score_name] = float(scores[i])
            f.write(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")


def write_fields(paths, bt: Bitext, units, fields, names) -> None:
    """Every line with keys ``bisent_NAME`` added (a line that is no object: as read)."""
    with atomic_write(paths[0], "wb") as f:
        for u, extra in zip(units, fields):
            if not isinstance(u.data, dict):
                f.write(u.raw + b"\n")
                continue
            obj = {**u.data, **{f"bisent_{k}": v for k, v in extra.items()}}
            f.write(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")


def new(bt: Bitext, **_) -> None:
    bt.columns = ("src", "tgt")
    for u in bt.units:
        u.data = {"src": u.src, "tgt": u.tgt}
        u.raw = json.dumps(u.data, ensure_ascii=False).encode("utf-8")

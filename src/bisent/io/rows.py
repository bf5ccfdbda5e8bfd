"""The units of a bitext and the checks every row of every format goes through.

A :class:`Unit` is one line of a line format (TSV, Moses, JSONL), one Parquet row, one TMX ``<tu>`` or XLIFF unit:
its 1-based number, its two sides, and, when it cannot be used, a ``bad_row:*`` / ``bad_unit:*`` reason
(``problem``) with a number (``detail``). :func:`parse_row` holds the checks of a row's bytes (NUL, lone CR,
columns, side length, UTF-8); :func:`set_text` applies them to sides read from a structured format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: A side longer than this (bytes) is a bad row, not a sentence.
MAX_SIDE_BYTES = 1 << 20

_SPACE = re.compile(r"\s+")


@dataclass
class Unit:
    """One translation unit: its number, the two sides, why it is unusable (or None), what it carries."""

    n: int
    src: str = ""
    tgt: str = ""
    problem: str | None = None
    detail: float | None = None
    raw: bytes = b""              # the original line(s), for the rejected file
    line: int | None = None       # the source line of an XML unit
    data: Any = None              # format-specific: TSV columns, a JSON object, a row index

    @property
    def label(self) -> str:
        """Where the unit is, for messages: ``line 12`` or ``unit 3 (line 40)``."""
        return f"unit {self.n} (line {self.line})" if self.line is not None else f"line {self.n}"


@dataclass
class Bitext:
    """A bitext read from ``paths`` in format ``fmt``: its units and what writing it back needs.

    ``skipped`` counts the units a reader with ``on_bad="skip"`` left out, by reason.
    """

    fmt: str
    paths: tuple[Path, ...]
    units: list[Unit]
    src_lang: str | None = None
    tgt_lang: str | None = None
    columns: tuple[Any, Any] | None = None
    ncols: int | None = None
    tree: Any = None              # the parsed XML document
    table: Any = None             # the Parquet table
    extra: dict = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    max_side_bytes: int = MAX_SIDE_BYTES   # a longer TSV side is a bad row (``bisent filter`` may set it)

    def good(self) -> list[Unit]:
        return [u for u in self.units if u.problem is None]


def parse_row(raw: bytes, max_side_bytes: int = MAX_SIDE_BYTES) -> tuple[tuple[str, str] | None, str | None,
                                                                         float | None]:
    """Split one ``src<TAB>tgt`` row (newline removed) into a pair, or say why it is a bad row.

    Returns ``(pair, None, None)`` or ``(None, reason, detail)`` where detail is a
    number: the NUL's or bad byte's 1-based column, the column count, the side's bytes.
    """
    line = raw[:-1] if raw.endswith(b"\r") else raw
    nul = line.find(b"\x00")
    if nul >= 0:
        return None, "bad_row:nul", float(nul + 1)
    cr = line.find(b"\r")
    if cr >= 0:  # a lone CR is not a line break: never merge what may be several lines (README)
        return None, "bad_row:cr", float(cr + 1)
    cols = line.split(b"\t")
    if len(cols) != 2:
        return None, "bad_row:columns", float(len(cols))
    for col in cols:
        if len(col) > max_side_bytes:
            return None, "bad_row:too_long", float(len(col))
    sides = []
    offset = 0
    for col in cols:
        try:
            sides.append(col.decode("utf-8").strip())
        except UnicodeDecodeError as e:
            return None, "bad_row:utf8", float(offset + e.start + 1)
        offset += len(col) + 1
    return (sides[0], sides[1]), None, None


def as_row(src: str, tgt: str, max_side_bytes: int = MAX_SIDE_BYTES) -> tuple[tuple[str, str] | None, str | None,
                                                                              float | None]:
    """:func:`parse_row` of a unit's text as one ``src<TAB>tgt`` row: the rules every format's pairs meet before a
    filter sees them (a side over ``max_side_bytes``, a tab, a NUL or a CR in a text is a bad row)."""
    return parse_row(f"{src}\t{tgt}".encode("utf-8", "surrogatepass"), max_side_bytes)


def pair_of(raw_src: bytes, raw_tgt: bytes, max_side_bytes: int = MAX_SIDE_BYTES
            ) -> tuple[tuple[str, str] | None, str | None, float | None]:
    """Two sides read apart (Moses lines, TSV columns): :func:`parse_row`'s checks, and a tab inside a side is a
    ``bad_row:tab``."""
    if b"\t" in raw_src or b"\t" in raw_tgt:
        return None, "bad_row:tab", None
    return parse_row(raw_src + b"\t" + raw_tgt, max_side_bytes)


def strip_bom(n: int, text: str) -> str:
    """Line ``n``'s text without the UTF-8 byte order mark an editor may put at the start of a file."""
    return text[1:].strip() if n == 1 and text.startswith("\ufeff") else text


def set_text(u: Unit, src: str, tgt: str) -> None:
    """Set a unit's sides from free text: whitespace runs (newlines, tabs) become one space; checks as a line's."""
    src, tgt = _SPACE.sub(" ", src).strip(), _SPACE.sub(" ", tgt).strip()
    both = src.encode("utf-8", "surrogatepass") + b"\t" + tgt.encode("utf-8", "surrogatepass")
    pair, u.problem, u.detail = parse_row(both, MAX_SIDE_BYTES)
    if pair is not None:
        u.src, u.tgt = pair
    if not u.raw:
        u.raw = f"{src}\t{tgt}".encode("utf-8", "backslashreplace")


def format_value(x: float) -> str:
    """A score as written to a file: ``0.5``, ``3``, ``0.183946`` (six significant digits)."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def describe(u: Unit, ncols: int | None = None) -> str:
    """A unit's problem in words, for a one-line error or a skipped row's reason (``ncols``: the column count
    a TSV row should have)."""
    d = None if u.detail is None else int(u.detail)
    text = {
        "bad_row:columns": f"expected {ncols or 2} tab-separated columns, found {d}",
        "bad_row:utf8": f"not valid UTF-8 (at byte column {d})",
        "bad_row:nul": f"contains a NUL byte (at byte column {d})",
        "bad_row:cr": f"contains a carriage return (CR) at byte column {d} that does not end the line",
        "bad_row:too_long": f"a side of {d} bytes, over the limit of {MAX_SIDE_BYTES}",
        "bad_row:tab": "a side contains a tab",
        "bad_row:json": "not valid JSON",
        "bad_row:keys": "not a JSON object with text under both keys",
        "bad_row:null": "a side is missing (null)",
    }.get(u.problem or "")
    return f"{text} ({u.problem})" if text else str(u.problem)


def unchanged(bt: Bitext, u: Unit) -> bool:
    """Whether a well-formed unit's text is as read (:func:`bisent.io.bitext.remember_text`): then it is written
    back byte for byte."""
    return u.problem is None and (u.src, u.tgt) == bt.extra.get("original", {}).get(u.n, (u.src, u.tgt))

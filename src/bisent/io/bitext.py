"""Bitext files in the formats data engineers use: TSV, Moses, TMX, XLIFF, JSONL, Parquet.

:func:`iter_units` is the one function in bisent that parses a bitext: it yields the :class:`Unit` s of one file
(two for Moses), one per line or translation unit, each with a stable 1-based number ``n`` (the line number of a
line format; the unit's index in document order for TMX ``<tu>``, XLIFF 1.2 ``<trans-unit>`` and XLIFF 2
``<segment>``). A unit that cannot be used (a wrong column count, undecodable bytes, a ``<tu>`` without a target
``<tuv>``) has ``problem`` set to a ``bad_row:*`` / ``bad_unit:*`` reason; the caller's policy ``on_bad`` keeps it,
skips it (counted) or stops at it with a one-line error, never drops it silently. :func:`read_bitext` collects the
units into a :class:`Bitext`. :func:`write_bitext` writes units back in the input's format, carrying what bisent
does not read (other TSV columns, other JSON keys, TMX properties and attributes, XLIFF states) and, when asked,
a score (a column, a key, a TMX ``<prop type="x-bisent-score">``, an XLIFF ``bisent:score`` attribute). Each format
is a module of :mod:`bisent.io.bitext_formats`.

Formats are chosen by suffix (``.tsv``/``.txt``, ``.tmx``, ``.xlf``/``.xliff``,
``.jsonl``/``.ndjson``, ``.parquet``; under ``.gz``/``.xz``/``.zst``) or by name.
XML is parsed with lxml, defused: no entity expansion, no DTD loading, no network;
a text node of any size is read (an over-long segment is rejected as its unit).

Canonical form. A line format is written byte for byte as read for every unit
whose text did not change and when no score is asked for. An XML file is written
as lxml serialises the parsed tree (UTF-8, ``<?xml version='1.0' encoding='UTF-8'?>``,
double-quoted attributes, ``<x/>`` for empty elements, then one newline): a file in
that form (every TMX/XLIFF bisent writes) comes back byte-identical when nothing
is removed or changed, and with only the removed units' bytes gone otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from ..errors import BisentError, where
from .bitext_formats import module
from .bitext_formats.xml import BISENT_NS, TMX_SCORE_PROP, xml_parser
from .files import _suffix, check_readable
from .rows import MAX_SIDE_BYTES, Bitext, Unit, describe, format_value, parse_row, set_text

FORMATS = ("tsv", "moses", "tmx", "xliff", "jsonl", "parquet")
_BY_SUFFIX = {".tsv": "tsv", ".txt": "tsv", ".tab": "tsv", ".tmx": "tmx", ".xlf": "xliff", ".xliff": "xliff",
              ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
#: what a reader does with a unit it cannot use: keep it with its reason, skip it (counted), or stop
ON_BAD = ("keep", "skip", "error")

# ---------------------------------------------------------------------------
# Choosing a format
# ---------------------------------------------------------------------------


def format_of(paths: Sequence, fmt: str | None = None) -> str:
    """The format named, or the one the file names say (two files: Moses)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise BisentError(f"--format {fmt}: unknown format (one of {', '.join(FORMATS)})")
        if (fmt == "moses") != (len(paths) == 2):
            raise BisentError("Moses input is two files (FILE.en FILE.de); every other format one"
                              if fmt == "moses" else f"--format {fmt} reads one file, got {len(paths)}")
        return fmt
    if len(paths) == 2:
        return "moses"
    if len(paths) != 1:
        raise BisentError(f"expected one bitext file or two Moses files, got {len(paths)}")
    name = Path(str(paths[0])).name
    comp = _suffix(name)
    base = Path(name[:len(name) - len(comp)] if comp else name)
    return _BY_SUFFIX.get(base.suffix.lower(), "tsv")


def parse_columns(spec: str | None, fmt: str) -> tuple[Any, Any] | None:
    """``--columns 3,4``: 1-based TSV columns of source and target (key or column names for JSONL/Parquet)."""
    if spec is None:
        return None
    parts = [p.strip() for p in str(spec).split(",")]
    if len(parts) != 2 or not all(parts):
        raise BisentError(f"--columns {spec}: expected two columns, source and target (e.g. --columns 3,4)")
    if fmt == "tsv":
        try:
            cols = int(parts[0]), int(parts[1])
        except ValueError:
            raise BisentError(f"--columns {spec}: TSV columns are 1-based numbers (e.g. --columns 3,4)") from None
        if min(cols) < 1 or cols[0] == cols[1]:
            raise BisentError(f"--columns {spec}: two different 1-based column numbers")
        return cols
    if fmt in ("jsonl", "parquet"):
        if parts[0] == parts[1]:
            raise BisentError(f"--columns {spec}: source and target must be different keys")
        return parts[0], parts[1]
    raise BisentError(f"--columns: only for TSV, JSONL and Parquet input, not {fmt}")


def output_paths(out: str, inputs: Sequence, fmt: str) -> tuple[str, ...]:
    """The output file(s): ``out`` itself, or for Moses ``OUT.en OUT.de`` (the inputs' own endings after their
    common stem, so ``noisy.en.gz noisy.de.gz -o kept`` writes ``kept.en.gz kept.de.gz``; without a common stem
    their whole names: ``src.txt tgt.txt -o kept`` writes ``kept.src.txt kept.tgt.txt``)."""
    if fmt != "moses":
        return (out,)
    if str(out) == "-":
        raise BisentError("-o -: Moses output is two files; give a stem (-o kept writes kept.en and kept.de)")
    a, b = Path(str(inputs[0])).name, Path(str(inputs[1])).name
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    i = a.rfind(".", 0, i + 1)
    if i < 0:  # no common stem (src.txt tgt.txt): OUT.src.txt OUT.tgt.txt
        return f"{out}.{a}", f"{out}.{b}"
    return f"{out}{a[i:]}", f"{out}{b[i:]}"



# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def open_bitext(paths: Sequence, *, fmt: str | None = None, columns: str | tuple | None = None,
                src_lang: str | None = None, tgt_lang: str | None = None) -> Bitext:
    """A :class:`Bitext` of ``paths`` (one file, or two for Moses) with no unit read yet: the format chosen, the
    files checked, ``columns`` parsed. :func:`iter_units` reads it."""
    paths = tuple(Path(str(p)) for p in (paths if isinstance(paths, (list, tuple)) else [paths]))
    fmt = format_of(paths, fmt)
    for p in paths:
        check_readable(p)
    cols = parse_columns(columns, fmt) if isinstance(columns, (str, type(None))) else tuple(columns)
    return Bitext(fmt, paths, [], src_lang, tgt_lang, cols)


def iter_units(bt: Bitext, *, on_bad: str = "keep", allow_empty: bool = False) -> Iterator[Unit]:
    """Parse the bitext ``bt`` (from :func:`open_bitext`): yield its units in order, one line format's line at a
    time. This is the one function in bisent that turns a bitext file into pairs; every format's reader
    (:mod:`bisent.io.bitext_formats`) is called from here alone.

    ``on_bad`` says what becomes of a unit that cannot be used (wrong column count, undecodable bytes, a ``<tu>``
    without a target): ``"keep"`` yields it with ``problem`` set (a filter rejects it with its reason),
    ``"skip"`` leaves it out and counts it in ``bt.skipped`` by reason, ``"error"`` stops with a one-line
    :class:`BisentError` naming the file, the line or unit, and the problem. An input without any unit is an
    error whatever the policy, unless ``allow_empty`` (a file bisent wrote, such as a filter's kept lines).
    """
    if on_bad not in ON_BAD:
        raise ValueError(f"on_bad must be one of {ON_BAD}, not {on_bad!r}")
    seen = False
    for u in module(bt.fmt).read(bt):
        seen = True
        if u.problem is not None:
            if on_bad == "error":
                at = where(bt.paths[0], u.n) if u.line is None else f"{bt.paths[0]}: {u.label}"
                raise BisentError(f"{at}: {describe(u, bt.ncols)}")
            if on_bad == "skip":
                bt.skipped[u.problem] = bt.skipped.get(u.problem, 0) + 1
                continue
        yield u
    if not seen and not allow_empty:
        fmt = bt.fmt
        raise BisentError(f"{bt.paths[0]}: no {'lines' if fmt in ('tsv', 'moses', 'jsonl') else 'units'}: "
                          f"file is empty")


def read_bitext(paths: Sequence, *, fmt: str | None = None, columns: str | tuple | None = None,
                src_lang: str | None = None, tgt_lang: str | None = None, on_bad: str = "keep") -> Bitext:
    """Read a bitext (one file, or two for Moses) into units (:func:`iter_units`; by default malformed units are
    kept with their reason)."""
    bt = open_bitext(paths, fmt=fmt, columns=columns, src_lang=src_lang, tgt_lang=tgt_lang)
    bt.units = list(iter_units(bt, on_bad=on_bad))
    return bt


def iter_pairs(paths: Sequence, *, fmt: str | None = None, columns: str | tuple | None = None,
               src_lang: str | None = None, tgt_lang: str | None = None,
               allow_empty: bool = False) -> Iterator[tuple[str, str]]:
    """The well-formed pairs of a bitext in order, streamed for line formats (malformed units skipped)."""
    bt = open_bitext(paths, fmt=fmt, columns=columns, src_lang=src_lang, tgt_lang=tgt_lang)
    return ((u.src, u.tgt) for u in iter_units(bt, on_bad="skip", allow_empty=allow_empty))


def tsv_layout(path) -> tuple[int, int] | None:
    """``(3, 4)`` when the first line of a TSV file has four columns (``doc<TAB>id<TAB>src<TAB>tgt``, as
    ``bisent data libreoffice`` writes), else None (``src<TAB>tgt``)."""
    from .files import iter_raw_lines

    for _, raw in iter_raw_lines(path):
        return (3, 4) if raw.count(b"\t") == 3 else None
    return None


def column_text(bt: Bitext, u: Unit, i: int) -> str:
    """Column ``i`` (0-based) of a TSV unit as text (a column bisent does not read as a side: an id, a split);
    undecodable bytes are a one-line error."""
    try:
        return u.data[i].decode("utf-8")
    except UnicodeDecodeError as e:
        raise BisentError(f"{where(bt.paths[0], u.n)}: column {i + 1}: not valid UTF-8 (byte column "
                          f"{e.start + 1})") from None


def unit_id(bt: Bitext, u: Unit) -> str | None:
    """The id a TMX ``<tu>`` (``tuid``) or an XLIFF unit carries (XLIFF 2 segments of a unit of several:
    ``UNIT/SEGMENT``), for rejected rows; None for line formats and units without one."""
    if bt.fmt not in ("tmx", "xliff") or not isinstance(u.data, dict):
        return None
    return u.data.get("id")


def whole_units(bt: Bitext) -> dict[int, list[int]]:
    """XLIFF 2 units of several segments: unit number -> the numbers ``n`` of its segments (other formats:
    empty). A filter keeps or rejects such a unit whole, so no half unit is left behind."""
    out: dict[int, list[int]] = {}
    if bt.fmt == "xliff" and bt.extra.get("version") == 2:
        for u in bt.units:
            if isinstance(u.data, dict) and u.data.get("segments", 1) > 1:
                out.setdefault(u.data["unit"], []).append(u.n)
    return out


def check_columns(bt: Bitext) -> None:
    """A one-line error when every line has the wrong column count or lacks the keys (the wrong format or
    --columns), rather than a run that rejects everything."""
    if bt.fmt == "tsv" and all(u.problem == "bad_row:columns" for u in bt.units):
        counts = sorted({int(u.detail) for u in bt.units})
        raise BisentError(f"{bt.paths[0]}: every line has {'/'.join(map(str, counts))} tab-separated columns, "
                          f"expected {bt.ncols or 2}; choose the source and target with --columns (e.g. --columns 3,4)")
    if bt.fmt in ("jsonl", "parquet") and all(u.problem in ("bad_row:keys", "bad_row:null") for u in bt.units):
        ks, kt = bt.columns
        raise BisentError(f"{bt.paths[0]}: no {'line' if bt.fmt == 'jsonl' else 'row'} has text under both "
                          f"'{ks}' and '{kt}'; name the source and target with --columns (e.g. --columns en,de)")


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def write_bitext(paths, bt: Bitext, units: Iterable[Unit], *, scores: Sequence[float] | None = None,
                 score_name: str = "score", fields: Sequence[dict[str, str]] | None = None) -> None:
    """Write ``units`` (some of ``bt.units``, possibly with changed text) in ``bt``'s format to ``paths``.

    Everything bisent did not read is carried over; a unit whose text did not
    change is written as it was read. ``scores`` (one per unit) adds a score
    column / key / TMX property / XLIFF attribute named by ``score_name``.
    ``fields`` (one mapping of name -> text per unit, the same names for all) is written by
    :func:`write_fields` instead: every unit, malformed ones too (``bisent filter --score-all``).
    """
    paths = tuple(paths) if isinstance(paths, (list, tuple)) else (paths,)
    units = list(units)
    if scores is not None and len(scores) != len(units):
        raise ValueError("one score per unit")
    if fields is not None:
        write_fields(paths, bt, units, fields)
        return
    module(bt.fmt).write(paths, bt, units, scores, score_name)


def write_fields(paths, bt: Bitext, units: Sequence[Unit], fields: Sequence[dict[str, str]]) -> None:
    """Every unit of ``units`` as read, with its ``fields`` added where the format has room: TSV columns after the
    last (in the mapping's order), JSONL keys and Parquet columns ``bisent_NAME``, a TMX ``<prop
    type="x-bisent-NAME">``, an XLIFF ``bisent:NAME`` attribute (XLIFF 2: on the ``<unit>``, one value per
    segment, space-separated). A line that could not be parsed (a JSONL line that is no object) is written
    as read; Moses files have no room and are refused."""
    if len(fields) != len(units):
        raise ValueError("one mapping of fields per unit")
    paths = tuple(paths) if isinstance(paths, (list, tuple)) else (paths,)
    module(bt.fmt).write_fields(paths, bt, units, fields, list(fields[0]) if fields else [])


def remember_text(bt: Bitext) -> None:
    """Note every unit's text, so that :func:`write_bitext` can tell a repaired unit from an untouched one."""
    bt.extra["original"] = {u.n: (u.src, u.tgt) for u in bt.units if u.problem is None}


def new_bitext(fmt: str, src_lang: str, tgt_lang: str, pairs: Sequence[tuple[str, str]], *,
               props: Sequence[dict] | None = None, ids: Sequence[str] | None = None) -> Bitext:
    """A bitext of ``pairs`` in ``fmt``, as if read from a file bisent wrote (TMX: ``props`` per unit as
    ``<prop type=...>``; XLIFF: ``ids`` as unit ids, targets in state ``translated``; ``xliff2``: XLIFF 2.0)."""
    if fmt not in FORMATS and fmt != "xliff2":
        raise BisentError(f"unknown format {fmt}")
    units = []
    bt = Bitext(fmt, (), units, src_lang, tgt_lang)
    for n, (s, t) in enumerate(pairs, 1):
        u = Unit(n, s, t)
        set_text(u, s, t)
        if u.problem:
            raise BisentError(f"pair {n}: {u.problem}")
        units.append(u)
    if fmt in ("tmx", "xliff", "xliff2"):
        module("tmx").new(bt, props=props, ids=ids, kind=fmt)
    else:
        module(fmt).new(bt)
    return bt


__all__ = ["FORMATS", "ON_BAD", "BISENT_NS", "TMX_SCORE_PROP", "MAX_SIDE_BYTES", "Bitext", "Unit", "format_of",
           "parse_columns", "output_paths", "open_bitext", "iter_units", "read_bitext", "iter_pairs", "tsv_layout",
           "column_text", "unit_id", "whole_units", "check_columns", "write_bitext", "write_fields", "remember_text",
           "new_bitext", "format_value", "parse_row", "xml_parser"]

"""Bitext files in the formats data engineers use: TSV, Moses, TMX, XLIFF, JSONL, Parquet.

:func:`read_bitext` turns one file (two for Moses) into a :class:`Bitext`: a list
of :class:`Unit`, one per line or translation unit, each with a stable 1-based
number ``n`` (the line number of a line format; the unit's index in document
order for TMX ``<tu>``, XLIFF 1.2 ``<trans-unit>`` and XLIFF 2 ``<segment>``).
A unit that cannot be used (a wrong column count, undecodable bytes, a ``<tu>``
without a target ``<tuv>``) is kept with ``problem`` set to a ``bad_row:*`` /
``bad_unit:*`` reason, never dropped. :func:`write_bitext` writes units back in
the input's format, carrying what bisent does not read (other TSV columns,
other JSON keys, TMX properties and attributes, XLIFF states) and, when asked,
a score (a column, a key, a TMX ``<prop type="x-bisent-score">``, an XLIFF
``bisent:score`` attribute).

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

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from .errors import BisentError, where
from .io import (
    MAX_SIDE_BYTES,
    READ_ERRORS,
    _suffix,
    atomic_write,
    check_readable,
    iter_raw_lines,
    open_binary,
    parse_row,
)
from .safeload import json_text

FORMATS = ("tsv", "moses", "tmx", "xliff", "jsonl", "parquet")
_BY_SUFFIX = {".tsv": "tsv", ".txt": "tsv", ".tab": "tsv", ".tmx": "tmx", ".xlf": "xliff", ".xliff": "xliff",
              ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
#: Namespace of the score attribute bisent adds to XLIFF units.
BISENT_NS = "urn:bisent:score"
#: TMX property type of the score bisent adds to a ``<tu>``.
TMX_SCORE_PROP = "x-bisent-score"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
XLIFF12_NS = "urn:oasis:names:tc:xliff:document:1.2"
#: Inline elements whose content is native code, not text (TMX and XLIFF 1.2).
_CODE = frozenset({"bpt", "ept", "ph", "it", "ut"})
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
    """A bitext read from ``paths`` in format ``fmt``: its units and what writing it back needs."""

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

    def good(self) -> list[Unit]:
        return [u for u in self.units if u.problem is None]


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


def read_bitext(paths: Sequence, *, fmt: str | None = None, columns: str | tuple | None = None,
                src_lang: str | None = None, tgt_lang: str | None = None) -> Bitext:
    """Read a bitext (one file, or two for Moses) into units; malformed units are kept with their reason."""
    paths = tuple(Path(str(p)) for p in (paths if isinstance(paths, (list, tuple)) else [paths]))
    fmt = format_of(paths, fmt)
    for p in paths:
        check_readable(p)
    cols = parse_columns(columns, fmt) if isinstance(columns, (str, type(None))) else tuple(columns)
    bt = Bitext(fmt, paths, [], src_lang, tgt_lang, cols)
    if fmt == "tsv":
        _read_tsv(bt)
    elif fmt == "moses":
        _read_moses(bt)
    elif fmt == "jsonl":
        _read_jsonl(bt)
    elif fmt == "parquet":
        _read_parquet(bt)
    else:
        _read_xml(bt)
    if not bt.units:
        raise BisentError(f"{paths[0]}: no {'lines' if fmt in ('tsv', 'moses', 'jsonl') else 'units'}: file is empty")
    return bt


def _pair(raw_src: bytes, raw_tgt: bytes) -> tuple[tuple[str, str] | None, str | None, float | None]:
    """The two sides' text, or a ``bad_row:*`` reason (the checks of :func:`bisent.io.parse_row`)."""
    if b"\t" in raw_src or b"\t" in raw_tgt:
        return None, "bad_row:tab", None
    return parse_row(raw_src + b"\t" + raw_tgt, MAX_SIDE_BYTES)


def _strip_bom(n: int, text: str) -> str:
    """Line ``n``'s text without the UTF-8 byte order mark an editor may put at the start of a file."""
    return text[1:].strip() if n == 1 and text.startswith("\ufeff") else text


def _read_tsv(bt: Bitext) -> None:
    s, t = (c - 1 for c in bt.columns) if bt.columns else (0, 1)
    want = None if bt.columns else 2
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
                u.src = _strip_bom(n, pair[0]) if s == 0 else pair[0]
                u.tgt = _strip_bom(n, pair[1]) if t == 0 else pair[1]
        bt.units.append(u)
    bt.ncols = want


def _read_moses(bt: Bitext) -> None:
    a, b = bt.paths
    src, tgt = list(iter_raw_lines(a)), list(iter_raw_lines(b))
    if len(src) != len(tgt):
        raise BisentError(f"{a}: has {len(src)} lines but {b} has {len(tgt)}; Moses files are line-aligned")
    for (n, rs), (_, rt) in zip(src, tgt):
        pair, problem, detail = _pair(rs, rt)
        u = Unit(n, problem=problem, detail=detail, raw=rs + b"\t" + rt, data=(rs, rt))
        if pair is not None:
            u.src, u.tgt = _strip_bom(n, pair[0]), _strip_bom(n, pair[1])
        bt.units.append(u)


def _read_jsonl(bt: Bitext) -> None:
    ks, kt = bt.columns or ("src", "tgt")
    bt.columns = ks, kt
    for n, raw in iter_raw_lines(bt.paths[0]):
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        u = Unit(n, raw=raw)
        bt.units.append(u)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            u.problem, u.detail = "bad_row:utf8", float(e.start + 1)
            continue
        try:       # bounded: a line nested deeper than safeload.MAX_DEPTH is a bad row, never a RecursionError
            obj = json_text(_strip_bom(n, text) if n == 1 else text, bt.paths[0], n)
        except BisentError:
            u.problem = "bad_row:json"
            continue
        u.data = obj
        if not isinstance(obj, dict) or not isinstance(obj.get(ks), str) or not isinstance(obj.get(kt), str):
            u.problem = "bad_row:keys"  # not an object with string values under both keys
            continue
        _set_text(u, obj[ks], obj[kt])


def _set_text(u: Unit, src: str, tgt: str) -> None:
    """Set a unit's sides from free text: whitespace runs (newlines, tabs) become one space; checks as a line's."""
    src, tgt = _SPACE.sub(" ", src).strip(), _SPACE.sub(" ", tgt).strip()
    both = src.encode("utf-8", "surrogatepass") + b"\t" + tgt.encode("utf-8", "surrogatepass")
    pair, u.problem, u.detail = parse_row(both, MAX_SIDE_BYTES)
    if pair is not None:
        u.src, u.tgt = pair
    if not u.raw:
        u.raw = f"{src}\t{tgt}".encode("utf-8", "backslashreplace")


def _read_parquet(bt: Bitext) -> None:
    pq = _pyarrow_parquet()
    try:
        table = pq.read_table(bt.paths[0])
    except (OSError, ValueError) as e:  # pyarrow's errors derive from these
        raise BisentError(f"{bt.paths[0]}: cannot read Parquet ({e.__class__.__name__}: {e})") from None
    ks, kt = bt.columns or ("src", "tgt")
    bt.columns, bt.table = (ks, kt), table
    for k in (ks, kt):
        if k not in table.column_names:
            raise BisentError(f"{bt.paths[0]}: no column '{k}' (columns: {', '.join(table.column_names)}); "
                              f"give --columns SRC,TGT")
    for i, (a, b) in enumerate(zip(table.column(ks).to_pylist(), table.column(kt).to_pylist())):
        u = Unit(i + 1, data=i)
        if not isinstance(a, str) or not isinstance(b, str):
            u.problem, u.raw = "bad_row:null", f"{a}\t{b}".encode()
        else:
            _set_text(u, a, b)
        bt.units.append(u)


def format_value(x: float) -> str:
    """A score as written to a file: ``0.5``, ``3``, ``0.183946`` (six significant digits)."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.6g}"


def _pyarrow_parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - a declared dependency
        raise BisentError("Parquet needs pyarrow (pip install pyarrow)") from None
    return pq


# --- XML ---


def xml_parser():
    """lxml's parser with nothing fetched or expanded: no entities, no DTD, no network. Huge trees are read (a
    text node over 10 MB is one over-long segment, rejected as its unit alone, not a reason to refuse the
    file); no entity is ever expanded, so a file takes no more memory than its own size."""
    from lxml import etree
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                           huge_tree=True, remove_blank_text=False)


def _tq(el, tag: str) -> str:
    """``tag`` in the default namespace in force at ``el`` (a TMX may declare ``xmlns="http://www.lisa.org/tmx14"``;
    most declare none)."""
    ns = el.nsmap.get(None)
    return f"{{{ns}}}{tag}" if ns else tag


def _local(el) -> str:
    tag = el.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _text(el) -> str:
    """An element's text without the content of inline code elements (``<ph>``, ``<bpt>``, ...); walked without
    recursion (a huge tree may nest thousands deep)."""
    parts = [el.text or ""]
    stack = [(el, iter(el))]
    while stack:
        node, children = stack[-1]
        c = next(children, None)
        if c is None:
            stack.pop()
            if stack:
                parts.append(node.tail or "")
        elif isinstance(c.tag, str) and _local(c) not in _CODE:
            parts.append(c.text or "")
            stack.append((c, iter(c)))
        else:
            parts.append(c.tail or "")
    return "".join(parts)


def _lang_key(lang: str | None) -> str:
    return re.split(r"[-_]", lang.strip().lower(), maxsplit=1)[0] if lang else ""


def _read_xml(bt: Bitext) -> None:
    from lxml import etree
    path = bt.paths[0]
    try:
        with open_binary(path) as f:
            bt.tree = etree.parse(f, xml_parser())
    except etree.XMLSyntaxError as e:
        raise BisentError(f"{where(path, e.lineno)}: not well-formed XML ({e.msg})") from None
    except READ_ERRORS as e:
        raise BisentError(f"{path}: cannot read ({e.__class__.__name__}: {e})") from None
    root = bt.tree.getroot()
    name = _local(root)
    if bt.fmt == "tmx" and name != "tmx":
        raise BisentError(f"{path}: not TMX (the root element is <{name}>, expected <tmx>)")
    if bt.fmt == "xliff" and name != "xliff":
        raise BisentError(f"{path}: not XLIFF (the root element is <{name}>, expected <xliff>)")
    if bt.fmt == "tmx":
        _read_tmx(bt, root)
    elif (root.get("version") or "").startswith("1"):
        bt.extra["version"] = 1
        _read_xliff1(bt, root)
    else:
        bt.extra["version"] = 2
        _read_xliff2(bt, root)


def _need_langs(bt: Bitext, found: tuple[str | None, str | None], what: str) -> tuple[str, str]:
    src = bt.src_lang or found[0]
    tgt = bt.tgt_lang or found[1]
    if not src or not tgt:
        raise BisentError(f"{bt.paths[0]}: {what} does not say both languages; give --src-lang and --tgt-lang")
    for mine, theirs, opt in ((src, found[0], "source"), (tgt, found[1], "target")):
        if theirs and _lang_key(mine) != _lang_key(theirs):
            raise BisentError(f"{bt.paths[0]}: the file's {opt} language is {theirs}, not {mine}")
    bt.src_lang, bt.tgt_lang = src, tgt
    return _lang_key(src), _lang_key(tgt)


def _read_tmx(bt: Bitext, root) -> None:
    header = root.find(_tq(root, "header"))
    srclang = header.get("srclang") if header is not None else None
    langs = {_lang_key(t.get(XML_LANG) or t.get("lang")) for t in root.iter(_tq(root, "tuv"))}
    if not bt.tgt_lang and srclang and len(langs - {_lang_key(srclang)}) == 1:
        found_tgt = next(iter(langs - {_lang_key(srclang)}))
    else:
        found_tgt = None
    s, t = _need_langs(bt, (None if srclang in (None, "*all*") else srclang, found_tgt), "the TMX header")
    for key, lang in ((s, bt.src_lang), (t, bt.tgt_lang)):
        if langs and key not in langs:  # not one unit could be used: the wrong language asked for
            raise BisentError(f"{bt.paths[0]}: no <tuv> in {lang} (languages there: {', '.join(sorted(langs))})")
    for n, tu in enumerate(root.iter(_tq(root, "tu")), 1):
        u = Unit(n, line=tu.sourceline)
        bt.units.append(u)
        if _nested(tu):
            u.problem, u.raw = "bad_unit:nested", _unit_text(tu)
            continue
        sides = []
        for key, which in ((s, "source"), (t, "target")):
            tuvs = [v for v in tu.findall(_tq(tu, "tuv")) if _lang_key(v.get(XML_LANG) or v.get("lang")) == key]
            segs = [v.find(_tq(v, "seg")) for v in tuvs]
            if not tuvs:
                u.problem = f"bad_unit:no_{which}"
            elif len(tuvs) > 1:
                u.problem = f"bad_unit:several_{which}"
            elif segs[0] is None:
                u.problem = f"bad_unit:no_seg_{which}"
            else:
                sides.append(_text(segs[0]))
                continue
            break
        if u.problem is None:
            _set_text(u, *sides)
        else:
            u.raw = _unit_text(tu)


def _nested(el) -> bool:
    """Whether the unit ``el`` lies inside another unit (malformed, but lxml parses it): such a unit is rejected
    whatever its outer unit's fate, so that removing the outer one never takes a kept unit with it."""
    name = _local(el)
    return any(_local(a) == name for a in el.iterancestors())


def _outer(elements) -> list:
    """``elements`` without those inside another of the same name (a ``<file>`` in a ``<file>``)."""
    return [el for el in elements if not _nested(el)]


def _unit_text(el) -> bytes:
    """A malformed unit's text, on one line, for the rejected file."""
    return _SPACE.sub(" ", "".join(el.itertext())).strip().encode("utf-8", "backslashreplace")


def _read_xliff1(bt: Bitext, root) -> None:
    ns = root.nsmap.get(None)
    q = (lambda tag: f"{{{ns}}}{tag}") if ns else (lambda tag: tag)
    n = 0
    for file_el in _outer(root.iter(q("file"))):
        _need_langs(bt, (file_el.get("source-language"), file_el.get("target-language")), "<file>")
        for tu in file_el.iter(q("trans-unit")):
            n += 1
            bt.units.append(_xliff_unit(n, tu, q))


def _read_xliff2(bt: Bitext, root) -> None:
    ns = root.nsmap.get(None)
    q = (lambda tag: f"{{{ns}}}{tag}") if ns else (lambda tag: tag)
    _need_langs(bt, (root.get("srcLang"), root.get("trgLang")), "<xliff>")
    n = 0
    for unit in root.iter(q("unit")):
        segments = unit.findall(q("segment"))
        if not segments:
            n += 1
            bt.units.append(Unit(n, problem="bad_unit:no_segment", line=unit.sourceline, raw=_unit_text(unit)))
        for seg in segments:
            n += 1
            bt.units.append(_xliff_unit(n, seg, q))


def _xliff_unit(n: int, el, q) -> Unit:
    """Unit ``n`` of an XLIFF ``<trans-unit>`` (1.2) or ``<segment>`` (2.x): its source and target text, or the
    reason it is malformed with its raw text kept."""
    u = Unit(n, line=el.sourceline)
    source, target = el.find(q("source")), el.find(q("target"))
    if _nested(el) or _local(el) == "segment" and _nested(el.getparent()):
        u.problem = "bad_unit:nested"
    elif source is None:
        u.problem = "bad_unit:no_source"
    elif target is None:
        u.problem = "bad_unit:no_target"
    else:
        _set_text(u, _text(source), _text(target))
        return u
    u.raw = _unit_text(el)
    return u


def _xml_units(bt: Bitext, root) -> list:
    """The elements of ``root`` (a copy of ``bt.tree``'s) that are the units, in the order they were numbered."""
    if bt.fmt == "tmx":
        return list(root.iter(_tq(root, "tu")))
    ns = root.nsmap.get(None)
    q = (lambda tag: f"{{{ns}}}{tag}") if ns else (lambda tag: tag)
    if bt.extra.get("version") == 1:
        return [tu for f in _outer(root.iter(q("file"))) for tu in f.iter(q("trans-unit"))]
    return [seg for unit in root.iter(q("unit")) for seg in (unit.findall(q("segment")) or [unit])]


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
                 score_name: str = "score") -> None:
    """Write ``units`` (some of ``bt.units``, possibly with changed text) in ``bt``'s format to ``paths``.

    Everything bisent did not read is carried over; a unit whose text did not
    change is written as it was read. ``scores`` (one per unit) adds a score
    column / key / TMX property / XLIFF attribute named by ``score_name``.
    """
    paths = tuple(paths) if isinstance(paths, (list, tuple)) else (paths,)
    units = list(units)
    if scores is not None and len(scores) != len(units):
        raise ValueError("one score per unit")
    if bt.fmt == "moses":
        with atomic_write(paths[0], "wb") as fs, atomic_write(paths[1], "wb") as ft:
            for u in units:
                rs, rt = u.data if _unchanged(bt, u) else (u.src.encode("utf-8"), u.tgt.encode("utf-8"))
                fs.write(rs + b"\n")
                ft.write(rt + b"\n")
        return
    if bt.fmt == "tsv":
        s, t = (c - 1 for c in bt.columns) if bt.columns else (0, 1)
        with atomic_write(paths[0], "wb") as f:
            for i, u in enumerate(units):
                cols = list(u.data)
                if not _unchanged(bt, u):
                    cols[s], cols[t] = u.src.encode("utf-8"), u.tgt.encode("utf-8")
                if scores is not None:
                    cols.append(format_value(float(scores[i])).encode())
                f.write(b"\t".join(cols) + b"\n")
        return
    if bt.fmt == "jsonl":
        ks, kt = bt.columns
        with atomic_write(paths[0], "wb") as f:
            for i, u in enumerate(units):
                if _unchanged(bt, u) and scores is None:
                    f.write(u.raw + b"\n")
                    continue
                obj = dict(u.data)
                if not _unchanged(bt, u):
                    obj[ks], obj[kt] = u.src, u.tgt
                if scores is not None:
                    obj[score_name] = float(scores[i])
                f.write(json.dumps(obj, ensure_ascii=False).encode("utf-8") + b"\n")
        return
    if bt.fmt == "parquet":
        _write_parquet(paths[0], bt, units, scores, score_name)
        return
    _write_xml(paths[0], bt, units, scores, score_name)


def _unchanged(bt: Bitext, u: Unit) -> bool:
    return u.problem is None and (u.src, u.tgt) == bt.extra.get("original", {}).get(u.n, (u.src, u.tgt))


def remember_text(bt: Bitext) -> None:
    """Note every unit's text, so that :func:`write_bitext` can tell a repaired unit from an untouched one."""
    bt.extra["original"] = {u.n: (u.src, u.tgt) for u in bt.units if u.problem is None}


def _write_parquet(path, bt: Bitext, units, scores, score_name) -> None:
    import pyarrow as pa
    pq = _pyarrow_parquet()
    ks, kt = bt.columns
    table = bt.table.take(pa.array([u.data for u in units], type=pa.int64()))
    if any(not _unchanged(bt, u) for u in units):
        for k, side in ((ks, "src"), (kt, "tgt")):
            i = table.column_names.index(k)
            table = table.set_column(i, k, pa.array([getattr(u, side) for u in units], type=pa.string()))
    if scores is not None:
        table = table.append_column(score_name, pa.array([float(x) for x in scores], type=pa.float64()))
    with atomic_write(path, "wb") as f:
        pq.write_table(table, f)


def _write_xml(path, bt: Bitext, units, scores, score_name) -> None:
    from lxml import etree
    tree = copy.deepcopy(bt.tree)
    root = tree.getroot()
    elements = _xml_units(bt, root)
    keep = {u.n: i for i, u in enumerate(units)}
    by_n = {u.n: u for u in units}
    xliff2 = bt.fmt == "xliff" and bt.extra.get("version") == 2
    unit_scores: dict = {}
    emptied = []
    for n, el in enumerate(elements, 1):
        if n not in keep:
            if xliff2 and _local(el) == "segment":
                emptied.append(el.getparent())
            _remove(el)
            continue
        u = by_n[n]
        if not _unchanged(bt, u):
            _replace_text(bt, el, u)
        if scores is not None:
            value = format_value(float(scores[keep[n]]))
            if bt.fmt == "tmx":
                _tmx_prop(el, score_name, value)
            elif xliff2:
                unit_scores.setdefault(el.getparent(), []).append(value)
            else:
                el.set(f"{{{BISENT_NS}}}{score_name}", value)
    for unit, values in unit_scores.items():  # XLIFF 2: on the <unit>, one value per kept segment
        unit.set(f"{{{BISENT_NS}}}{score_name}", " ".join(values))
    for unit in emptied:  # XLIFF 2: every segment of a unit removed, the unit goes too
        if not any(_local(c) == "segment" for c in unit):
            _remove(unit)
    if scores is not None and bt.fmt == "xliff":
        etree.cleanup_namespaces(tree, top_nsmap={"bisent": BISENT_NS})
    with atomic_write(path, "wb") as f:
        f.write(etree.tostring(tree, xml_declaration=True, encoding="UTF-8") + b"\n")


def _remove(el) -> None:
    """Remove ``el``, leaving the whitespace after it where the whitespace before it was (indentation kept)."""
    parent = el.getparent()
    if parent is None:
        return
    prev = el.getprevious()
    if prev is not None:
        prev.tail = el.tail
    else:
        parent.text = el.tail
    parent.remove(el)


def _replace_text(bt: Bitext, el, u: Unit) -> None:
    """Set a unit's (repaired) text: the content of a side whose text changed becomes plain text (its inline
    markup is dropped); a side the repair left as it was keeps its markup."""
    orig_src, orig_tgt = bt.extra.get("original", {}).get(u.n, (None, None))
    if bt.fmt == "tmx":
        s, t = _lang_key(bt.src_lang), _lang_key(bt.tgt_lang)
        for v in el.findall(_tq(el, "tuv")):
            key = _lang_key(v.get(XML_LANG) or v.get("lang"))
            seg = v.find(_tq(v, "seg"))
            if seg is not None and key == s and u.src != orig_src:
                _set_content(seg, u.src)
            elif seg is not None and key == t and key != s and u.tgt != orig_tgt:
                _set_content(seg, u.tgt)
        return
    ns = el.nsmap.get(None)
    q = (lambda tag: f"{{{ns}}}{tag}") if ns else (lambda tag: tag)
    if u.src != orig_src:
        _set_content(el.find(q("source")), u.src)
    if u.tgt != orig_tgt:
        _set_content(el.find(q("target")), u.tgt)


def _set_content(el, text: str) -> None:
    for c in list(el):
        el.remove(c)
    el.text = text


def _tmx_prop(tu, name: str, value: str) -> None:
    """Add (or update) ``<prop type="x-bisent-score">`` before the unit's first ``<tuv>``."""
    from lxml import etree
    ptype = TMX_SCORE_PROP if name == "score" else f"x-bisent-{name}"
    for p in tu.findall(_tq(tu, "prop")):
        if p.get("type") == ptype:
            p.text = value
            return
    prop = etree.Element(_tq(tu, "prop"), type=ptype)
    prop.text = value
    first = tu.find(_tq(tu, "tuv"))
    if first is None:
        tu.append(prop)
        return
    prev = first.getprevious()
    prop.tail = (prev.tail if prev is not None else tu.text) or None
    first.addprevious(prop)


def new_bitext(fmt: str, src_lang: str, tgt_lang: str, pairs: Sequence[tuple[str, str]], *,
               props: Sequence[dict] | None = None, ids: Sequence[str] | None = None) -> Bitext:
    """A bitext of ``pairs`` in ``fmt``, as if read from a file bisent wrote (TMX: ``props`` per unit as
    ``<prop type=...>``; XLIFF: ``ids`` as unit ids, targets in state ``translated``)."""
    units = []
    bt = Bitext(fmt, (), units, src_lang, tgt_lang)
    for n, (s, t) in enumerate(pairs, 1):
        u = Unit(n, s, t)
        _set_text(u, s, t)
        if u.problem:
            raise BisentError(f"pair {n}: {u.problem}")
        units.append(u)
    if fmt == "tsv":
        for u in units:
            u.data = [u.src.encode(), u.tgt.encode()]
    elif fmt == "moses":
        for u in units:
            u.data = (u.src.encode(), u.tgt.encode())
    elif fmt == "jsonl":
        bt.columns = ("src", "tgt")
        for u in units:
            u.data = {"src": u.src, "tgt": u.tgt}
            u.raw = json.dumps(u.data, ensure_ascii=False).encode("utf-8")
    elif fmt == "parquet":
        import pyarrow as pa
        bt.columns = ("src", "tgt")
        bt.table = pa.table({"src": [u.src for u in units], "tgt": [u.tgt for u in units]})
        for i, u in enumerate(units):
            u.data = i
    elif fmt in ("tmx", "xliff", "xliff2"):
        bt.tree = _new_xml(fmt, src_lang, tgt_lang, units, props, ids)
        bt.fmt, bt.extra["version"] = ("xliff", 2) if fmt == "xliff2" else (fmt, 1)
    else:
        raise BisentError(f"unknown format {fmt}")
    return bt


def _new_xml(fmt, src_lang, tgt_lang, units, props, ids):
    """A fresh TMX 1.4 / XLIFF 1.2 / XLIFF 2.0 document, indented two spaces."""
    from lxml import etree

    def sub(parent, tag, text=None, depth=0, **attrs):
        el = etree.SubElement(parent, tag, attrs)
        if text is not None:
            el.text = text
        parent.text = parent.text or "\n" + "  " * (depth + 1)
        el.tail = "\n" + "  " * (depth + 1)
        return el

    def close(parent, depth):
        if len(parent):
            parent[-1].tail = "\n" + "  " * depth

    if fmt == "tmx":
        root = etree.Element("tmx", version="1.4")
        header = sub(root, "header", None, 0, creationtool="bisent", creationtoolversion="1", segtype="sentence",
                     datatype="plaintext", adminlang="en", srclang=src_lang)
        header.set("o-tmf", "bisent")
        body = sub(root, "body", None, 0)
        for i, u in enumerate(units):
            tu = sub(body, "tu", None, 1)
            for k, v in (props[i] if props else {}).items():
                sub(tu, "prop", v, 2, type=k)
            for lang, text in ((src_lang, u.src), (tgt_lang, u.tgt)):
                tuv = sub(tu, "tuv", None, 2)
                tuv.set(XML_LANG, lang)
                sub(tuv, "seg", text, 3)
                close(tuv, 3)
            close(tu, 2)
        close(body, 1)
    elif fmt == "xliff":
        root = etree.Element(f"{{{XLIFF12_NS}}}xliff", version="1.2", nsmap={None: XLIFF12_NS})
        q = lambda t: f"{{{XLIFF12_NS}}}{t}"  # noqa: E731
        f = sub(root, q("file"), None, 0, original="bisent", datatype="plaintext")
        f.set("source-language", src_lang)
        f.set("target-language", tgt_lang)
        body = sub(f, q("body"), None, 1)
        for i, u in enumerate(units):
            tu = sub(body, q("trans-unit"), None, 2, id=ids[i] if ids else str(u.n))
            sub(tu, q("source"), u.src, 3)
            sub(tu, q("target"), u.tgt, 3, state="translated")
            close(tu, 3)
        close(body, 2)
        close(f, 1)
    else:
        ns = "urn:oasis:names:tc:xliff:document:2.0"
        root = etree.Element(f"{{{ns}}}xliff", version="2.0", srcLang=src_lang, trgLang=tgt_lang, nsmap={None: ns})
        q = lambda t: f"{{{ns}}}{t}"  # noqa: E731
        f = sub(root, q("file"), None, 0, id="f1")
        for i, u in enumerate(units):
            unit = sub(f, q("unit"), None, 1, id=ids[i] if ids else str(u.n))
            seg = sub(unit, q("segment"), None, 2, state="translated")
            sub(seg, q("source"), u.src, 3)
            sub(seg, q("target"), u.tgt, 3)
            close(seg, 3)
            close(unit, 2)
        close(f, 1)
    if len(root):
        root[-1].tail = "\n"
    return etree.ElementTree(root)

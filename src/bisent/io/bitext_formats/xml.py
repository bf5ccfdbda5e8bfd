"""TMX and XLIFF (1.2, 2.x) bitexts: units of a parsed XML tree, written back into a copy of that tree.

A unit is a TMX ``<tu>``, an XLIFF 1.2 ``<trans-unit>`` or an XLIFF 2 ``<segment>``, numbered in document order.
XML is parsed with lxml, defused: no entity expansion, no DTD loading, no network; a text node of any size is read
(an over-long segment is rejected as its unit).
"""

from __future__ import annotations

import copy
import re
from typing import Iterator

from ...errors import BisentError, where
from ..files import READ_ERRORS, atomic_write, open_binary
from ..rows import _SPACE, Bitext, Unit, format_value, set_text, unchanged

#: Namespace of the score attribute bisent adds to XLIFF units.
BISENT_NS = "urn:bisent:score"
#: TMX property type of the score bisent adds to a ``<tu>``.
TMX_SCORE_PROP = "x-bisent-score"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
XLIFF12_NS = "urn:oasis:names:tc:xliff:document:1.2"
#: Inline elements whose content is native code, not text (TMX and XLIFF 1.2).
_CODE = frozenset({"bpt", "ept", "ph", "it", "ut"})


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


def read(bt: Bitext) -> Iterator[Unit]:
    """Parse the document and yield its units in order; the wrong root element is a one-line error."""
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
        yield from _read_tmx(bt, root)
    elif (root.get("version") or "").startswith("1"):
        bt.extra["version"] = 1
        yield from _read_xliff1(bt, root)
    else:
        bt.extra["version"] = 2
        yield from _read_xliff2(bt, root)


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


def _read_tmx(bt: Bitext, root) -> Iterator[Unit]:
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
        u = Unit(n, line=tu.sourceline, data={"id": _tmx_id(tu)})
        if _nested(tu):
            u.problem, u.raw = "bad_unit:nested", _unit_text(tu)
            yield u
            continue
        sides = []
        for key, which, asked in ((s, "source", bt.src_lang), (t, "target", bt.tgt_lang)):
            tuvs = [v for v in tu.findall(_tq(tu, "tuv")) if _lang_key(v.get(XML_LANG) or v.get("lang")) == key]
            if len(tuvs) > 1:   # regional variants (de-DE and de-CH): the one asked for by its full code, if any
                exact = [v for v in tuvs if _full_lang(v.get(XML_LANG) or v.get("lang")) == _full_lang(asked)]
                tuvs = exact if len(exact) == 1 else tuvs
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
            set_text(u, *sides)
        else:
            u.raw = _unit_text(tu)
        yield u


def _nested(el) -> bool:
    """Whether the unit ``el`` lies inside another unit (malformed, but lxml parses it): such a unit is rejected
    whatever its outer unit's fate, so that removing the outer one never takes a kept unit with it."""
    name = _local(el)
    return any(_local(a) == name for a in el.iterancestors())


def _outer(elements) -> list:
    """``elements`` without those inside another of the same name (a ``<file>`` in a ``<file>``)."""
    return [el for el in elements if not _nested(el)]


def _full_lang(lang: str | None) -> str:
    """A language code compared whole: case and ``_``/``-`` ignored (``de_CH`` = ``de-ch``)."""
    return (lang or "").strip().lower().replace("_", "-")


def _tmx_id(tu) -> str | None:
    return tu.get("tuid")


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def _unit_text(el) -> bytes:
    """A malformed unit's content, on one line, for the rejected file: each part apart, tab-separated and
    labelled, the text first (``LANG: text`` of a TMX variant, ``source:`` / ``target:`` of XLIFF), then the
    rest (``prop TYPE=value``, ``note: ...``), so properties and notes are not read as the unit's text."""
    parts = []
    text_first = sorted((c for c in el if isinstance(c.tag, str)),
                        key=lambda c: _local(c) not in ("tuv", "source", "target", "segment", "ignorable"))
    for c in text_first:
        if not isinstance(c.tag, str):
            continue
        name = _local(c)
        if name == "prop":
            parts.append(f"prop {c.get('type') or ''}={_one_line(''.join(c.itertext()))}")
        elif name == "tuv":
            seg = c.find("seg")
            text = _one_line(_text(seg)) if seg is not None else "(no seg)"
            parts.append(f"{c.get(XML_LANG) or c.get('lang') or '?'}: {text}")
        elif name in ("source", "target"):
            parts.append(f"{name}: {_one_line(_text(c))}")
        elif name in ("segment", "ignorable"):
            parts.append(_unit_text(c).decode("utf-8"))
        else:
            parts.append(f"{name}: {_one_line(''.join(c.itertext()))}")
    return "\t".join(p for p in parts if p).encode("utf-8", "backslashreplace")


def _read_xliff1(bt: Bitext, root) -> Iterator[Unit]:
    ns = root.nsmap.get(None)
    q = (lambda tag: f"{{{ns}}}{tag}") if ns else (lambda tag: tag)
    n = 0
    for file_el in _outer(root.iter(q("file"))):
        _need_langs(bt, (file_el.get("source-language"), file_el.get("target-language")), "<file>")
        for tu in file_el.iter(q("trans-unit")):
            n += 1
            u = _xliff_unit(n, tu, q)
            u.data = {"id": tu.get("id")}
            yield u


def _read_xliff2(bt: Bitext, root) -> Iterator[Unit]:
    ns = root.nsmap.get(None)
    q = (lambda tag: f"{{{ns}}}{tag}") if ns else (lambda tag: tag)
    _need_langs(bt, (root.get("srcLang"), root.get("trgLang")), "<xliff>")
    n = 0
    for k, unit in enumerate(root.iter(q("unit")), 1):
        segments = unit.findall(q("segment"))
        uid = unit.get("id")
        if not segments:
            n += 1
            yield Unit(n, problem="bad_unit:no_segment", line=unit.sourceline, raw=_unit_text(unit),
                       data={"id": uid, "unit": k})
        for i, seg in enumerate(segments, 1):
            n += 1
            u = _xliff_unit(n, seg, q)
            # a segment is named by its unit: "u1" alone, or "u1/s2" (its id, else its place) when the unit has several
            part = seg.get("id") or str(i)
            u.data = {"id": uid if len(segments) == 1 else f"{uid}/{part}", "unit": k, "segments": len(segments)}
            yield u


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
        set_text(u, _text(source), _text(target))
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



def write(paths, bt: Bitext, units, scores, score_name: str) -> None:
    """The document without the units not given (indentation kept), changed texts set, scores added."""
    path = paths[0]
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
        if not unchanged(bt, u):
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



def write_fields(paths, bt: Bitext, units, fields, names) -> None:
    """Every unit with its fields: a TMX ``<prop type="x-bisent-NAME">``, an XLIFF ``bisent:NAME`` attribute (XLIFF 2:
    on the ``<unit>``, one value per segment, space-separated)."""
    from lxml import etree
    tree = copy.deepcopy(bt.tree)
    root = tree.getroot()
    by_n = {u.n: e for u, e in zip(units, fields)}
    xliff2 = bt.fmt == "xliff" and bt.extra.get("version") == 2
    per_unit: dict = {}
    for n, el in enumerate(_xml_units(bt, root), 1):
        extra = by_n.get(n)
        if extra is None:
            continue
        for k in names:
            if bt.fmt == "tmx":
                _tmx_prop(el, k, extra[k])
            elif xliff2 and _local(el) == "segment":
                per_unit.setdefault(el.getparent(), {}).setdefault(k, []).append(extra[k] or "-")
            else:
                el.set(f"{{{BISENT_NS}}}{k}", extra[k])
    for unit, values in per_unit.items():
        for k, vals in values.items():
            unit.set(f"{{{BISENT_NS}}}{k}", " ".join(vals))
    if bt.fmt == "xliff":
        etree.cleanup_namespaces(tree, top_nsmap={"bisent": BISENT_NS})
    with atomic_write(paths[0], "wb") as f:
        f.write(etree.tostring(tree, xml_declaration=True, encoding="UTF-8") + b"\n")


def new(bt: Bitext, *, props=None, ids=None, kind: str = "tmx") -> None:
    """A fresh document of ``bt.units`` (``kind``: ``tmx``, ``xliff`` or ``xliff2``)."""
    bt.tree = _new_xml(kind, bt.src_lang, bt.tgt_lang, bt.units, props, ids)
    bt.fmt, bt.extra["version"] = ("xliff", 2) if kind == "xliff2" else (kind, 1)


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

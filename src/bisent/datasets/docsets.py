"""Parallel document sets from translated documentation in Debian's packages (fetched into the cache).

Each source gives pages in two languages; a page present in both is a gold
pair, a page present in one only stays in that side's collection as a
distractor. How each source derives gold:

- ``libreoffice``: LibreOffice help (``libreoffice-help-*``), HTML pages; the
  same page path in both languages (:mod:`bisent.datasets.libreoffice`), its
  ``par_id``/``hd_id`` paragraphs in page order.
- ``gimp``: the GIMP manual (``gimp-help-*``), DocBook HTML; the same file
  name under ``usr/share/gimp/2.0/help/<lang>/`` is the same page.
- ``gnome``: GNOME's help (``gnome-user-docs``: one package, every language),
  Mallard ``.page`` XML; the same ``<guide>/<page>.page`` under
  ``usr/share/help/<lang>/`` (``C`` is English).
- ``manpages``: manual pages; English from ``manpages`` + ``manpages-dev``
  (``usr/share/man/manN/``), a translation from ``manpages-<lang>``
  (``usr/share/man/<lang>/manN/``); the same ``manN/name.N`` is the same page.
  ``.so`` aliases are skipped.

A built set is a folder (cached under ``datasets/docsets/<source>-<src>-<tgt>``):
``src.jsonl`` and ``tgt.jsonl`` (``{"id", "text": [paragraphs], "split"}``,
ids prefixed with the source, e.g. ``gimp:gimp-file-open.html``),
``gold.tsv`` (``src_id<TAB>tgt_id<TAB>split``) and ``stats.json`` (written
last). The split of a page is a hash of its id (80/10/10, as LibreOffice),
so the two languages of a page and every rebuild agree.
"""

from __future__ import annotations

import gzip
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ..cache import cache_dir
from ..errors import BisentError
from ..io import atomic_write
from .debian import atomic_dir, fetch_package, package_info
from .libreoffice import _SKIP, _Node, _TreeBuilder, normalise_lang, normalise_text, split_of

SOURCES = ("libreoffice", "gimp", "gnome", "manpages")
FORMAT_VERSION = 1
FILES = frozenset({"src.jsonl", "tgt.jsonl", "gold.tsv", "stats.json"})


# --- GIMP: DocBook HTML ----------------------------------------------------------------------------------

_HTML_BLOCKS = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "td", "th", "pre", "caption",
                          "title", "li", "blockquote"})
_HTML_NAV = frozenset({"navheader", "navfooter"})


def html_paragraphs(html: str) -> list[str]:
    """The visible text of an HTML page's block elements (paragraphs, headings, items, cells), in order.

    Navigation header/footer blocks (DocBook's ``navheader``/``navfooter``) are left out.
    """
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    out: list[str] = []

    def walk(node: _Node, cur: list[str]) -> None:
        for child in node.children:
            if isinstance(child, str):
                cur.append(child)
            elif child.tag in _SKIP or child.attrs.get("class") in _HTML_NAV:
                continue
            elif child.tag == "br":
                cur.append(" ")
            elif child.tag in _HTML_BLOCKS:
                _flush(cur, out)
                sub: list[str] = []
                walk(child, sub)
                _flush(sub, out)
            else:
                walk(child, cur)

    root: list[str] = []
    walk(builder.root, root)
    _flush(root, out)
    return out


def _flush(parts: list[str], out: list[str]) -> None:
    text = normalise_text("".join(parts))
    if text:
        out.append(text)
    parts.clear()


def gimp_pages(lang: str) -> dict[str, list[str]]:
    folder = fetch_package(f"gimp-help-{lang}")
    root = folder / "usr/share/gimp/2.0/help" / lang
    if not root.is_dir():
        raise BisentError(f"gimp-help-{lang}: no usr/share/gimp/2.0/help/{lang} folder")
    return {f"gimp:{p.relative_to(root).as_posix()}": html_paragraphs(p.read_text(encoding="utf-8", errors="replace"))
            for p in sorted(root.rglob("*.html"))}


# --- GNOME: Mallard XML ----------------------------------------------------------------------------------

_MAL_BLOCKS = frozenset({"title", "subtitle", "desc", "p", "code", "screen", "td", "th"})


def mallard_paragraphs(xml: str) -> list[str]:
    """Text of a Mallard page's titles, paragraphs, code blocks and cells (the ``<info>`` block left out)."""
    root = ET.fromstring(xml)
    out: list[str] = []

    def local(tag) -> str:
        return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""

    def walk(el, cur: list[str]) -> None:
        if el.text:
            cur.append(el.text)
        for child in el:
            name = local(child.tag)
            if name in ("info", "comment"):
                pass
            elif name in _MAL_BLOCKS:
                _flush(cur, out)
                sub: list[str] = []
                walk(child, sub)
                _flush(sub, out)
            else:
                walk(child, cur)
            if child.tail:
                cur.append(child.tail)

    top: list[str] = []
    walk(root, top)
    _flush(top, out)
    return out


def gnome_pages(lang: str) -> dict[str, list[str]]:
    folder = fetch_package("gnome-user-docs")
    root = folder / "usr/share/help" / ("C" if lang == "en" else lang)
    if not root.is_dir():
        raise BisentError(f"gnome-user-docs: no help in language '{lang}'")
    pages = {}
    for p in sorted(root.rglob("*.page")):
        try:
            pages[f"gnome:{p.relative_to(root).as_posix()}"] = mallard_paragraphs(p.read_text(encoding="utf-8"))
        except (ET.ParseError, UnicodeDecodeError):
            continue                                                     # counted as a missing page
    return pages


# --- manual pages: roff -------------------------------------------------------------------------------

_ROFF_BREAK = re.compile(r"^\.(SH|SS|PP|LP|P|TP|IP|HP|RS|RE|TQ|sp|br|nf|fi|EX|EE|TH|in|ti|ne|bp|UR|UE|MT|ME|SY|YS|OP)\b")
_ROFF_FONT_LINE = re.compile(r"^\.(B|I|BI|IB|BR|RB|IR|RI|SM|SB)\s+(.*)$")
_ROFF_ESC = re.compile(r"\\f(\[[^\]]*\]|\(..|.)|\\[*n](\(..|\[[^\]]*\]|.)|\\s[-+]?\d+|\\[&%|^:,/!]|\\c$")
_ROFF_CHARS = {r"\-": "-", r"\(em": "—", r"\(en": "–", r"\(aq": "'", r"\(lq": "“", r"\(rq": "”", r"\(Fo": "«",
               r"\(Fc": "»", r"\(bu": "•", r"\(co": "©", r"\e": "\\", r"\ ": " ", r"\~": " ", r"\(dq": '"',
               r"\(ga": "`", r"\(ti": "~", r"\(ha": "^", r"\(pc": "·", r"\(mu": "×", r"\(rs": "\\", r"\0": " "}


def roff_text(line: str) -> str:
    """A roff text line without escapes (fonts, strings, sizes) and with the common special characters."""
    for k, v in _ROFF_CHARS.items():
        line = line.replace(k, v)
    line = _ROFF_ESC.sub("", line)
    return re.sub(r"\\\(..|\\\[[^\]]*\]", "", line)


def roff_paragraphs(source: str) -> list[str] | None:
    """The paragraphs of a manual page's roff source (None for a ``.so`` alias)."""
    out: list[str] = []
    cur: list[str] = []
    nofill = False
    for line in source.splitlines():
        if line.startswith((".\\\"", "'\\\"", '.\\"')) or line.strip() in (".", "'"):
            continue
        if line.startswith(".so "):
            return None
        m = _ROFF_FONT_LINE.match(line)
        if m:
            cur.append(roff_text(m.group(2).replace('"', "")))
            continue
        b = _ROFF_BREAK.match(line)
        if b or line.startswith((".", "'")):
            _flush(cur, out)
            if b and b.group(1) in ("SH", "SS"):
                cur.append(roff_text(line[3:].strip().strip('"')))
                _flush(cur, out)
            nofill = (b.group(1) in ("nf", "EX")) if b and b.group(1) in ("nf", "fi", "EX", "EE") else nofill
            continue
        if not line.strip():
            _flush(cur, out)
            continue
        cur.append(roff_text(line) + " ")
        if nofill:
            _flush(cur, out)
    _flush(cur, out)
    return out


def man_pages(lang: str) -> dict[str, list[str]]:
    if lang == "en":
        roots = [fetch_package(p) / "usr/share/man" for p in ("manpages", "manpages-dev")]
    else:
        roots = [fetch_package(f"manpages-{lang}") / "usr/share/man" / lang]
    pages = {}
    for root in roots:
        for p in sorted(root.glob("man*/*.gz")):
            if not p.is_file():
                continue
            text = gzip.decompress(p.read_bytes()).decode("utf-8", errors="replace")
            paras = roff_paragraphs(text)
            if paras is not None:
                pages[f"man:{p.parent.name}/{p.name[:-3]}"] = paras
    return pages


# --- LibreOffice -----------------------------------------------------------------------------------------

def _libreoffice(src: str, tgt: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    from .libreoffice import load_documents

    docs = load_documents(src, tgt)
    return ({f"lo:{d.doc}": [p.text for p in d.src if p.text] for d in docs},
            {f"lo:{d.doc}": [p.text for p in d.tgt if p.text] for d in docs})


_READERS = {"gimp": gimp_pages, "gnome": gnome_pages, "manpages": man_pages}
_PACKAGES = {"gimp": lambda l: [f"gimp-help-{l}"], "gnome": lambda l: ["gnome-user-docs"],
             "manpages": lambda l: ["manpages", "manpages-dev"] if l == "en" else [f"manpages-{l}"],
             "libreoffice": lambda l: []}


# --- build and load ------------------------------------------------------------------------------------

def _folder(source: str, src: str, tgt: str) -> Path:
    return cache_dir("datasets", "docsets") / f"{source}-{src}-{tgt}"


def build_docset(source: str, src: str = "en", tgt: str = "de", *, force: bool = False) -> Path:
    """Fetch, parse and cache one document set; return its folder (see the module docstring)."""
    if source not in SOURCES:
        raise BisentError(f"unknown document source '{source}' (one of {', '.join(SOURCES)})")
    src, tgt = normalise_lang(src), normalise_lang(tgt)
    if src == tgt:
        raise BisentError(f"source and target language are both {src!r}")
    folder = _folder(source, src, tgt)
    if (folder / "stats.json").is_file() and not force:
        return folder
    lang = lambda l: "en" if l == "en-us" else l                          # noqa: E731  Debian's names
    if source == "libreoffice":
        s_pages, t_pages = _libreoffice(src, tgt)
    else:
        s_pages, t_pages = _READERS[source](lang(src)), _READERS[source](lang(tgt))
    gold = sorted(i for i in s_pages.keys() & t_pages.keys() if s_pages[i] and t_pages[i])
    stats = {"format": FORMAT_VERSION, "source": source, "src": src, "tgt": tgt,
             "packages": {n: package_info(fetch_package(n))["version"]
                          for l in (lang(src), lang(tgt)) for n in _PACKAGES[source](l)},
             "split_rule": "blake2b(page id, 8 bytes) % 100: <80 train, <90 dev, else test",
             "documents_src": len(s_pages), "documents_tgt": len(t_pages),
             "empty_src": sum(not v for v in s_pages.values()), "empty_tgt": sum(not v for v in t_pages.values()),
             "gold": {s: sum(split_of(i) == s for i in gold) for s in ("train", "dev", "test")}}
    with atomic_dir(folder, replace_names=FILES) as tmp:
        for name, pages in (("src.jsonl", s_pages), ("tgt.jsonl", t_pages)):
            with open(tmp / name, "w", encoding="utf-8", newline="\n") as f:
                for i in sorted(pages):
                    f.write(json.dumps({"id": i, "text": pages[i], "split": split_of(i)}, ensure_ascii=False) + "\n")
        with open(tmp / "gold.tsv", "w", encoding="utf-8", newline="\n") as f:
            f.writelines(f"{i}\t{i}\t{split_of(i)}\n" for i in gold)
        (tmp / "stats.json").write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")
    return folder


def write_docset(source: str, src: str, tgt: str, out_dir) -> dict:
    """Copy a built set to ``out_dir`` (replaced only if it holds nothing but these files); return its stats."""
    folder = build_docset(source, src, tgt)
    with atomic_dir(Path(out_dir), replace_names=FILES) as tmp:
        for name in FILES:
            (tmp / name).write_bytes((folder / name).read_bytes())
    return json.loads((folder / "stats.json").read_text(encoding="utf-8"))


def read_gold(path) -> list[tuple[str, str, str]]:
    """``(src_id, tgt_id, split)`` rows of a ``gold.tsv`` (the split column is optional: '' then)."""
    from ..io import read_tsv

    rows = []
    with open(path, encoding="utf-8") as f:
        first = f.readline().split("\t")
    ncols = 3 if len(first) >= 3 else 2
    for _, cols in read_tsv(path, ncols):
        rows.append((cols[0], cols[1], cols[2] if ncols == 3 else ""))
    return rows


def load_docset(folder, *, splits: tuple[str, ...] | None = None) -> dict:
    """``{"src": [{id, text, split}], "tgt": [...], "gold": [(src_id, tgt_id, split)], "stats": {...}}``."""
    folder = Path(folder)
    for name in ("src.jsonl", "tgt.jsonl", "gold.tsv"):
        if not (folder / name).is_file():
            raise BisentError(f"{folder / name}: missing (a document set holds src.jsonl, tgt.jsonl, gold.tsv)")
    out: dict = {}
    for side in ("src", "tgt"):
        with open(folder / f"{side}.jsonl", encoding="utf-8") as f:
            out[side] = [json.loads(line) for line in f if line.strip()]
    out["gold"] = [g for g in read_gold(folder / "gold.tsv") if splits is None or g[2] in splits]
    stats = folder / "stats.json"
    out["stats"] = json.loads(stats.read_text(encoding="utf-8")) if stats.is_file() else {}
    return out

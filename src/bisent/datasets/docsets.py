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
  (``usr/share/man/<lang>/manN/``; Japanese and Chinese from their own projects'
  packages, :data:`MAN_SOURCES`); the same ``manN/name.N`` is the same page.
  ``.so`` aliases are skipped. The packages of :data:`MAN_PACKAGES` (apt, dpkg,
  coreutils, …) add their own pages in both languages.
- ``gnome-apps``: the Mallard help of the GNOME applications in :data:`GNOME_APPS`
  (evolution, gnome-devel-docs, evince, …), paired as ``gnome``.
- HTML manuals (:data:`MANUALS`): ``kicad`` (``kicad-doc-*``), ``debian-installer``
  (``installation-guide-amd64``), ``debian-reference`` (``debian-reference-*``),
  ``debian-handbook``, ``debian-edu`` (the bookworm manual of ``debian-edu-doc-*``),
  ``developers-reference``, ``maint-guide``, ``gnucash`` (``gnucash-docs``, guide and
  help): each page is cut into sections at its headings (a section holding only its
  heading joins the next), and the k-th section of a page pairs with the k-th section
  of the same page in the other language when the two pages have the same sequence
  of heading levels; otherwise the page's sections stay unpaired (distractors).
  Also ``debian-faq`` and ``ubuntu-packaging-guide`` (``…-html-*``); one-page copies of a
  book are left out; two pages whose section numbers differ somewhere ("10.2.5" against
  "10.1.5": a translation of another edition) do not pair either. ``lilypond``
  (``lilypond-doc-html[-*]``): whole pages, the same path. ``gosa`` (``gosa-help-*``): whole
  pages, distractors only (latex2html numbers its ``nodeN.html`` differently in each language).

Within one language, documents with identical text (the same page under two
names) are kept once, so no query's translation appears twice in the pool.

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
from typing import Callable, NamedTuple

from ..cache import cache_dir
from ..errors import BisentError
from ..io import atomic_dir
from ..progress import note
from .debian import fetch_package, package_info
from .libreoffice import _SKIP, _Node, _TreeBuilder, normalise_lang, normalise_text, split_of
from .vocab import unspaced

SOURCES = ("libreoffice", "gimp", "gnome", "manpages", "gnome-apps", "kicad", "debian-installer", "debian-reference",
           "debian-handbook", "debian-edu",
           "developers-reference", "maint-guide", "debian-faq", "ubuntu-packaging-guide", "gnucash", "gosa", "lilypond")
FORMAT_VERSION = 3
FILES = frozenset({"src.jsonl", "tgt.jsonl", "gold.tsv", "stats.json"})


# --- GIMP: DocBook HTML ----------------------------------------------------------------------------------

_HTML_BLOCKS = frozenset({"p", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "td", "th", "pre", "caption",
                          "title", "li", "blockquote"})
_HTML_NAV = frozenset({"navheader", "navfooter"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
#: Navigation and tables of contents in DocBook, Publican, AsciiDoc and Texinfo HTML (not the pages' own text).
_MANUAL_NAV = _HTML_NAV | {"toc", "docnav", "list-of-tables", "list-of-figures", "list-of-examples", "nav_table",
                           "footer_version", "footer_report", "toc_uplink", "contents", "tocframe", "navigation",
                           "sphinxsidebar", "related", "headerlink"}


def html_paragraphs(html: str, *, skip: frozenset[str] = _HTML_NAV) -> list[str]:
    """The visible text of an HTML page's block elements (paragraphs, headings, items, cells), in order.

    Blocks whose class or id is in ``skip`` (by default DocBook's ``navheader``/``navfooter``) are left out.
    """
    return [p for _, sec in html_sections(html, skip=skip) for p in sec]


def html_sections(html: str, *, skip: frozenset[str] = _HTML_NAV) -> list[tuple[int, list[str]]]:
    """An HTML page cut at its headings: ``[(level, [heading, paragraphs...]), ...]``.

    Level 0 holds the text before the first heading (possibly empty); a heading
    ``hN`` opens a section of level N. Blocks as in :func:`html_paragraphs`.
    """
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    sections: list[tuple[int, list[str]]] = [(0, [])]

    def skipped(node: _Node) -> bool:
        return (node.tag in _SKIP or node.attrs.get("id") in skip
                or not skip.isdisjoint((node.attrs.get("class") or "").split()))

    def walk(node: _Node, cur: list[str]) -> None:
        for child in node.children:
            if isinstance(child, str):
                cur.append(child)
            elif skipped(child):
                continue
            elif child.tag == "br":
                cur.append(" ")
            elif child.tag in _HTML_BLOCKS:
                _flush(cur, sections[-1][1])
                if child.tag in _HEADINGS:
                    sections.append((int(child.tag[1]), []))
                sub: list[str] = []
                walk(child, sub)
                _flush(sub, sections[-1][1])
            else:
                walk(child, cur)

    root: list[str] = []
    walk(builder.root, root)
    _flush(root, sections[-1][1])
    return sections


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


#: GNOME applications whose Mallard help (``usr/share/help/<lang>/<app>/``) has the same layout as gnome-user-docs
GNOME_APPS = ("evolution-common", "gnome-devel-docs", "evince-common", "orca", "seahorse", "gedit-common",
              "shotwell-common", "gnome-terminal-data", "gnome-system-monitor", "totem-common", "file-roller",
              "brasero-common", "eog", "gnome-calculator", "zenity-common", "cheese-common", "simple-scan", "baobab",
              "gnome-clocks", "gnote", "pitivi", "gnome-boxes", "gnome-sudoku", "gnome-chess", "accerciser",
              "gnome-mines", "polari", "gnome-logs")


#: our language codes where GNOME's help folders name the locale otherwise
_GNOME_LOCALE = {"en": "C", "zh-cn": "zh_CN", "zh-tw": "zh_TW", "pt-br": "pt_BR"}


def mallard_pages(root: Path) -> dict[str, list[str]]:
    """The paragraphs of every Mallard page (``*.page``) under ``root``, by its path relative to ``root``,
    sorted; a page that does not parse is left out (a benchmark counts it as a missing page)."""
    pages = {}
    for p in sorted(root.rglob("*.page")):
        try:
            pages[p.relative_to(root).as_posix()] = mallard_paragraphs(p.read_text(encoding="utf-8"))
        except (ET.ParseError, UnicodeDecodeError):
            continue
    return pages


def gnome_pages(lang: str, packages: tuple[str, ...] = ("gnome-user-docs",),
                prefix: str = "gnome") -> dict[str, list[str]]:
    pages = {}
    for package in packages:
        root = fetch_package(package) / "usr/share/help" / _GNOME_LOCALE.get(lang, lang)
        if not root.is_dir():
            raise BisentError(f"{package}: no help in language '{lang}'")
        pages.update({f"{prefix}:{rel}": paras for rel, paras in mallard_pages(root).items()})
    return pages


# --- manual pages: roff -------------------------------------------------------------------------------

_ROFF_BREAK = re.compile(r"^\.(SH|SS|PP|LP|P|TP|IP|HP|RS|RE|TQ|sp|br|nf|fi|EX|EE|TH|in|ti|ne|bp|"
                         r"UR|UE|MT|ME|SY|YS|OP)\b")
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


#: Packages that ship their own manual pages in English and translated (beside ``manpages-<lang>``); coreutils,
#: util-linux, … hold the English originals of many pages of ``manpages-de`` / ``manpages-fr``.
MAN_PACKAGES = ("apt", "dpkg", "passwd", "procps", "coreutils", "util-linux", "e2fsprogs", "findutils", "grep", "sed",
                "tar", "debconf-i18n")


#: Where a language's translated manual pages lie when not in ``manpages-<lang>`` under ``usr/share/man/<lang>``:
#: (packages, folder). Japanese is the JM project's translation, Chinese the CMPP project's.
MAN_SOURCES = {"ja": (("manpages-ja", "manpages-ja-dev"), "ja"), "zh-cn": (("manpages-zh",), "zh_CN")}
#: a space between two of these characters in a page of an unspaced language is a line wrap of the roff source
_CJK = "\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_WRAP_SPACE = re.compile(f"(?<=[{_CJK}]) (?=[{_CJK}])")


def man_source(lang: str) -> tuple[list[str], str]:
    """The Debian packages holding ``lang``'s manual pages (``en``: the originals) and their folder under
    ``usr/share/man`` (``""`` for English)."""
    if lang == "en":
        return ["manpages", "manpages-dev", *MAN_PACKAGES], ""
    packages, folder = MAN_SOURCES.get(lang, ((f"manpages-{lang}",), lang))
    return [*packages, *MAN_PACKAGES], folder


def man_packages(lang: str) -> list[str]:
    """The Debian packages holding ``lang``'s manual pages."""
    return man_source(lang)[0]


def man_pages(lang: str) -> dict[str, list[str]]:
    """Pages (``man:manN/NAME.N`` -> paragraphs) of ``lang``'s manual pages; the same id in every language. In a
    language written without spaces (:func:`.vocab.unspaced`) roff's line-wrap spaces between CJK characters go."""
    packages, folder = man_source(lang)
    no_spaces = unspaced(lang) is not None
    pages = {}
    for package in packages:
        root = fetch_package(package) / "usr/share/man" / folder
        for p in sorted(root.glob("man*/*.gz")):
            paras = man_page(p)
            if paras is not None:
                pid = f"man:{p.parent.name}/{p.name[:-3]}"
                paras = [_WRAP_SPACE.sub("", t) for t in paras] if no_spaces else paras
                pages[pid] = paras          # a page in two packages: the later one's
    return pages


def man_page(path: Path) -> list[str] | None:
    """The paragraphs of one gzipped manual page; None for an alias (a symbolic link or a ``.so`` page: the
    same page under another name) and for a file that is not gzip (said on stderr, left out)."""
    if not path.is_file() or path.is_symlink():
        return None
    try:
        text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        note(f"{path}: not a readable gzip file; left out")   # beside any progress bar
        return None
    return roff_paragraphs(text)


# --- manuals: HTML books cut into sections, and LilyPond's pages ----------------------------------------

class Manual(NamedTuple):
    """Where a translated HTML manual lies in Debian's packages, for a Debian language code ``l``."""

    package: Callable[[str], str]          # l -> package name
    folder: Callable[[str], str]           # l -> folder inside it
    pattern: Callable[[str], str]          # l -> glob of its pages (recursive)
    sections: bool = True                  # cut pages at headings (else one document per page)
    key: Callable[[str, str], str] | None = None   # (path in folder, l) -> the same key in every language
    skip: tuple[str, ...] = ()             # paths containing one of these are left out (one-page copies of the book)
    paired: bool = True                    # False: file names do not identify a page across languages (distractors)


def _other(en: str, other: str) -> Callable[[str], str]:
    return lambda l: en if l == "en" else other.format(l=l)


def _handbook_folder(l: str) -> str:
    root = fetch_package("debian-handbook") / "usr/share/doc/debian-handbook/html"
    found = sorted(p.name for p in root.glob(f"{l}-*") if p.is_dir())
    if not found:
        raise BisentError(f"debian-handbook: no HTML in language '{l}'")
    return f"usr/share/doc/debian-handbook/html/{found[0]}"


MANUALS = {
    "kicad": Manual(lambda l: f"kicad-doc-{l}", lambda l: f"usr/share/doc/kicad/help/{l}", lambda l: "*.html"),
    "debian-reference": Manual(lambda l: f"debian-reference-{l}", lambda l: "usr/share/debian-reference",
                               lambda l: f"*.{l}.html"),
    "debian-handbook": Manual(lambda l: "debian-handbook", _handbook_folder, lambda l: "*.html"),
    "debian-edu": Manual(lambda l: f"debian-edu-doc-{l}", lambda l: f"usr/share/doc/debian-edu-doc-{l}",
                         lambda l: "debian-edu-bookworm-manual.html"),
    "developers-reference": Manual(_other("developers-reference", "developers-reference-{l}"),
                                   _other("usr/share/developers-reference", "usr/share/developers-reference/{l}"),
                                   lambda l: "*.html", skip=("developers-reference.html",)),
    "debian-faq": Manual(_other("debian-faq", "debian-faq-{l}"),
                         _other("usr/share/doc/debian/FAQ", "usr/share/doc/debian/FAQ/{l}"), lambda l: f"*.{l}.html"),
    "ubuntu-packaging-guide": Manual(_other("ubuntu-packaging-guide-html", "ubuntu-packaging-guide-html-{l}"),
                                     _other("usr/share/doc/ubuntu-packaging-guide-html",
                                            "usr/share/doc/ubuntu-packaging-guide-html-{l}"),
                                     lambda l: "*.html", skip=("singlehtml/",)),
    "maint-guide": Manual(_other("maint-guide", "maint-guide-{l}"),
                          _other("usr/share/doc/maint-guide/html", "usr/share/doc/maint-guide-{l}/html"),
                          lambda l: f"*.{l}.html"),
    "debian-installer": Manual(lambda l: "installation-guide-amd64",
                               lambda l: f"usr/share/doc/installation-guide-amd64/{l}", lambda l: "*.html"),
    "gnucash": Manual(lambda l: "gnucash-docs", lambda l: "usr/share/doc/gnucash-docs",
                      lambda l: f"gnucash-*-{l}/*.html",
                      key=lambda rel, l: rel.replace(f"-{l}/", "/", 1)),
    "gosa": Manual(lambda l: f"gosa-help-{l}", lambda l: f"usr/share/gosa/doc/core/{l}/html", lambda l: "*.html",
                   sections=False, paired=False),           # latex2html's nodeN.html: N differs between languages
    "lilypond": Manual(_other("lilypond-doc-html", "lilypond-doc-html-{l}"),
                       lambda l: "usr/share/doc/lilypond/html/Documentation", lambda l: f"*.{l}.html" if l != "en"
                       else "*.html", sections=False, skip=("-big-page",)),
}
_LANG_SUFFIX = re.compile(r"\.[a-z]{2}(-[a-z]{2})?\.html$", re.I)


def manual_files(name: str, lang: str) -> dict[str, Path]:
    """The pages of one manual in one language, keyed by path inside its folder without the language suffix."""
    spec = MANUALS[name]
    root = fetch_package(spec.package(lang)) / spec.folder(lang)
    if not root.is_dir():
        raise BisentError(f"{spec.package(lang)}: no {spec.folder(lang)} folder")
    out = {}
    for p in sorted(root.rglob(spec.pattern(lang))):
        rel = p.relative_to(root).as_posix()
        if not p.is_file() or any(k in rel for k in spec.skip) or (lang == "en" and _LANG_SUFFIX.search(rel)
                                                 and not rel.endswith(".en.html")):
            continue                            # dangling links; one-page copies; other languages beside English
        out[spec.key(rel, lang) if spec.key else _LANG_SUFFIX.sub(".html", rel)] = p
    return out


def merge_heading_only(sections: list[tuple[int, list[str]]]) -> list[tuple[int, list[str]]]:
    """Empty leading text dropped; a section that holds only its heading is joined to the one after it."""
    out: list[tuple[int, list[str]]] = []
    carry: list[str] = []
    for level, paras in sections:
        if level and len(paras) <= 1 and paras:
            carry += paras
            continue
        if paras or carry:
            out.append((level, carry + paras))
        carry = []
    if carry:
        out.append((0, carry))
    return out


_SECTION_NUMBER = re.compile(r"\b\d+(?:\.\d+)*\b")


def heading_number(heading: str) -> str | None:
    """The section number of a heading ("10.2.5. Import" -> "10.2.5", "Kapitel 3. …" -> "3"), or None."""
    m = _SECTION_NUMBER.search(" ".join(heading.split()[:2]))
    return m.group(0) if m else None


def same_structure(a: list[tuple[int, list[str]]], b: list[tuple[int, list[str]]]) -> bool:
    """Two languages of a page have the same sections: the same heading levels, and the same section
    numbers wherever both headings carry one (a translation of an older edition differs there)."""
    if [v for v, _ in a] != [v for v, _ in b]:
        return False
    for (la, pa), (_, pb) in zip(a, b):
        na, nb = (heading_number(pa[0]), heading_number(pb[0])) if la and pa and pb else (None, None)
        if na and nb and na != nb:
            return False
    return True


def manual_pages(name: str, src: str, tgt: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Both languages' documents of a manual: pages, or sections (a page cut at its headings).

    Gold by structure: a page of the same path in both languages; for sections, the k-th
    section of a page in both languages, when the page's two section sequences have the
    same structure (:func:`same_structure`); otherwise, and for a manual whose file names do
    not identify pages (``paired=False``), ids are marked with the language: distractors only.
    """
    spec = MANUALS[name]
    files = {l: manual_files(name, l) for l in (src, tgt)}
    out: dict[str, dict[str, list[str]]] = {src: {}, tgt: {}}
    for key in sorted(files[src].keys() | files[tgt].keys()):
        secs = {}
        for l in (src, tgt):
            if key in files[l]:
                html = files[l][key].read_text(encoding="utf-8", errors="replace")
                secs[l] = (merge_heading_only(html_sections(html, skip=_MANUAL_NAV)) if spec.sections
                           else [(0, html_paragraphs(html, skip=_MANUAL_NAV))])
        same = spec.paired and len(secs) == 2 and same_structure(secs[src], secs[tgt])
        for l, sec in secs.items():
            for k, (_, paras) in enumerate(sec):
                tag = "" if same and not spec.sections else f"#{k:03d}" if same else f"#{l}{k:03d}"
                out[l][f"{name}:{key}{tag}"] = paras
    return out[src], out[tgt]


# --- LibreOffice -----------------------------------------------------------------------------------------

def _libreoffice(src: str, tgt: str) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    from .libreoffice import load_documents

    docs = load_documents(src, tgt)
    return ({f"lo:{d.doc}": [p.text for p in d.src if p.text] for d in docs},
            {f"lo:{d.doc}": [p.text for p in d.tgt if p.text] for d in docs})


_READERS = {"gimp": gimp_pages, "gnome": gnome_pages, "manpages": man_pages,
            "gnome-apps": lambda l: gnome_pages(l, GNOME_APPS, "gnome-apps")}
_PACKAGES = {"gimp": lambda l: [f"gimp-help-{l}"], "gnome": lambda l: ["gnome-user-docs"],
             "gnome-apps": lambda l: list(GNOME_APPS),
             "manpages": man_packages,
             "libreoffice": lambda l: [], **{m: (lambda l, m=m: [MANUALS[m].package(l)]) for m in MANUALS}}


def drop_duplicates(pages: dict[str, list[str]]) -> int:
    """Keep one document of each text (the first id in sorted order); return how many were dropped.

    The same page under two names (a copy, an alias) would make gold ambiguous:
    a query's translation would exist twice in the pool.
    """
    seen: set[tuple[str, ...]] = set()
    dropped = 0
    for i in sorted(pages):
        key = tuple(pages[i])
        if key and key in seen:
            del pages[i]
            dropped += 1
        seen.add(key)
    return dropped


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
    if (folder / "stats.json").is_file() and not force and \
            json.loads((folder / "stats.json").read_text(encoding="utf-8")).get("format") == FORMAT_VERSION:
        return folder
    lang = lambda l: "en" if l == "en-us" else l                          # noqa: E731  Debian's names
    if source == "libreoffice":
        s_pages, t_pages = _libreoffice(src, tgt)
    elif source in MANUALS:
        s_pages, t_pages = manual_pages(source, lang(src), lang(tgt))
    else:
        s_pages, t_pages = _READERS[source](lang(src)), _READERS[source](lang(tgt))
    dup_src, dup_tgt = drop_duplicates(s_pages), drop_duplicates(t_pages)
    gold = sorted(i for i in s_pages.keys() & t_pages.keys() if s_pages[i] and t_pages[i])
    stats = {"format": FORMAT_VERSION, "source": source, "src": src, "tgt": tgt,
             "packages": {n: package_info(fetch_package(n))["version"]
                          for l in (lang(src), lang(tgt)) for n in _PACKAGES[source](l)},
             "split_rule": "blake2b(page id, 8 bytes) % 100: <80 train, <90 dev, else test",
             "documents_src": len(s_pages), "documents_tgt": len(t_pages),
             "empty_src": sum(not v for v in s_pages.values()), "empty_tgt": sum(not v for v in t_pages.values()),
             "duplicates_dropped_src": dup_src, "duplicates_dropped_tgt": dup_tgt,
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
    from ..io import check_readable, read_tsv

    rows = []
    with open(check_readable(path), "rb") as f:      # the column count only: read_tsv says what is wrong with a line
        first = f.readline().split(b"\t")
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

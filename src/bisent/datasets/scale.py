"""A mining benchmark of a million sentences a side (and more) from Debian's documentation.

The source side is English; the target side mixes every other language the
packages carry, as a language-identified crawl does: LibreOffice help in 31
languages, manual pages (``manpages-*`` in 25 languages), GIMP's manual, GNOME's
help and its applications' help, the Debian Administrator's Handbook, the Debian
Reference, LilyPond's and KiCad's manuals in all their languages, the kernel
documentation's translations, and gettext message catalogs of large programs
(compilers, toolkits, desktop applications; format 4). English-only manuals
(the kernel's, Python's, Perl's POD, PostgreSQL, Octave, SQLite, Node.js, git,
Debian policy; format 4 adds Django, CMake, LLVM, Clang, GLib, GTK, zsh,
Erlang, gnuplot, Maxima) grow the source side.

Hidden inside are gold translation pairs from the two aligned sources: LibreOffice
help paragraphs paired by page and paragraph id, and gettext messages (msgid and
msgstr), each one sentence on both sides (exact, not estimated); LibreOffice's
first (prose), messages when it runs out. A gold side is
prose: at least :data:`GOLD_MIN_WORDS` words, or :data:`GOLD_MIN_UNSPACED`
characters in a script written without spaces (Chinese, Japanese).

Unannotated translations are kept out, so that precision on the gold pairs
means something: every translated unit goes to ONE side only, decided by a
hash — an aligned text (grouped by its English) is a gold candidate, source
only, or target only (then in every language built); a page of the other sets
(its id with the language taken out) is either English on the source side or
every translation on the target side. Within a side, sentences (``sentencex``) are
deduplicated by exact text (so a gold sentence has no unlabelled copy on its
side) and filtered as the LibreOffice pairs are (letters, at least
:data:`~bisent.datasets.libreoffice.MIN_CHARS` characters and
:data:`~bisent.datasets.libreoffice.MIN_WORDS` words, at most :data:`MAX_CHARS`), and
language-identified (``is_english``; the command uses fastText's): English on the source side,
not English on the target side (translated manuals keep untranslated strings and code),
and no target text equal to a source text. A target paragraph of an aligned source whose
English original contains a gold source sentence is left out (it would translate a gold
sentence without a label). LilyPond's ``*-big-page`` files (each manual again on one page)
are not read.

``size`` sentences a side are drawn deterministically: the gold pairs first,
then paragraphs in blake2b order of their text, so a small build is a sample of
every source, and a larger one contains most of it. Written files:
``src.txt`` / ``tgt.txt`` (one sentence per line, in blake2b order of the text),
``tgt.lang`` (the language of each target line), ``gold.tsv`` (0-based
source line, target line), ``stats.json`` (sources, languages, counts per source
and language, gold per language and source, removals by reason).

Parsed pages are cached per source under ``cache_dir("datasets", "scale")``.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Callable, Iterator

from ..cache import cache_dir
from ..errors import BisentError
from ..io import atomic_dir, atomic_write
from ..progress import note, progress_bar
from .debian import fetch_package
from .docsets import GNOME_APPS, MAN_PACKAGES, html_paragraphs, mallard_pages, man_page
from .gettext import PACKAGES as GETTEXT_BASE
from .gettext import _clean, drop_reason, read_mo
from .libreoffice import _UNSPACED_RE, MIN_CHARS, MIN_WORDS, _too_short, load_documents

#: Bump when the selection rules change (the output's stats say which); PAGES_VERSION for the parsed-page cache.
FORMAT_VERSION = 4
PAGES_VERSION = 1
FILES = frozenset({"src.txt", "tgt.txt", "tgt.lang", "gold.tsv", "stats.json"})
#: LibreOffice help languages paired with English (each a cached ``bisent data libreoffice`` build, ~2 minutes
#: each the first time): all of Debian's but ``en-gb`` (English) and ``sk`` (its package holds no help pages);
#: ``ca`` ships two help trees, ``ca`` and ``ca-valencia``: its own is read.
LIBREOFFICE_LANGS = ("de", "fr", "es", "it", "cs", "da", "dz", "el", "et", "eu", "fi", "gl", "hi", "hu", "id", "ja",
                     "ko", "nl", "pl", "pt", "ru", "tr", "zh-cn", "ca", "km", "om", "pt-br", "sl", "sv", "vi", "zh-tw")
#: Longest sentence kept (characters): longer "sentences" are tables, code or lists run together.
MAX_CHARS = 400
#: Share (percent) of LibreOffice English texts whose paragraphs are gold candidates.
GOLD_PERCENT = 20
#: Fewest words on a side of a gold pair (lists of function names and menu paths are not gold); in a script
#: written without spaces, fewest characters of that script.
GOLD_MIN_WORDS = 5
GOLD_MIN_UNSPACED = 10


def _hash(*parts: str) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=8).digest(), "big")


# --- page sources: {page id: paragraphs} per language ------------------------------------------------------

def _html_tree(package: str, base: str, lang_of: Callable[[Path], str | None],
               skip: tuple[str, ...] = ()) -> dict[str, dict[str, list[str]]]:
    """HTML pages of ``package`` under ``base``, grouped {lang: {page id with the language taken out: paragraphs}}.

    Paths containing one of ``skip`` are left out (one-page copies of a book repeat its split pages).
    """
    root = fetch_package(package) / base
    out: dict[str, dict[str, list[str]]] = {}
    for p in sorted(root.rglob("*.html")):
        lang = lang_of(p.relative_to(root))
        rel = p.relative_to(root).as_posix()
        if lang is None or any(k in rel for k in skip):
            continue
        page = re.sub(rf"(^|/){re.escape(lang)}(-[A-Za-z]+)?/|\.{re.escape(lang)}(?=\.html$)", r"\1", rel)
        out.setdefault(_short_lang(lang), {})[page] = html_paragraphs(p.read_text(encoding="utf-8", errors="replace"))
    return out


def _short_lang(tag: str) -> str:
    """``de-DE`` -> ``de``, ``pt-BR`` -> ``pt-br``, ``zh_CN`` -> ``zh-cn``, ``en-US`` / ``C`` -> ``en``."""
    tag = tag.replace("_", "-").lower()
    if tag in ("c", "en-us"):
        return "en"
    head, _, tail = tag.partition("-")
    return tag if head in ("pt", "zh", "sr") and tail and not tail.startswith(head) else head


_INFIX = re.compile(r"\.([a-z]{2}(?:[-_][A-Za-z]{2})?)\.html$")


def _infix_lang(default: str) -> Callable[[Path], str | None]:
    def lang_of(rel: Path) -> str | None:
        m = _INFIX.search(rel.name)
        return m.group(1) if m else default
    return lang_of


def _handbook() -> dict[str, dict[str, list[str]]]:
    return _html_tree("debian-handbook", "usr/share/doc/debian-handbook/html", lambda rel: rel.parts[0])


#: Translations of LilyPond's manuals in Debian (``lilypond-doc-html-<lang>``).
LILYPOND_LANGS = ("ca", "cs", "de", "es", "fr", "hu", "it", "ja", "nl", "pt", "zh")


def _lilypond() -> dict[str, dict[str, list[str]]]:
    """LilyPond's manuals; the ``*-big-page`` files (each manual on one page, repeating its split pages) left out."""
    out = _html_tree("lilypond-doc-html", "usr/share/doc/lilypond/html", _infix_lang("en"), skip=("-big-page",))
    for lang in LILYPOND_LANGS:
        for got, pages in _html_tree(f"lilypond-doc-html-{lang}", "usr/share/doc/lilypond/html", _infix_lang(None),
                                     skip=("-big-page",)).items():
            out.setdefault(got, {}).update(pages)
    return out


def _per_language(packages: dict[str, str], base: str, lang_of) -> dict[str, dict[str, list[str]]]:
    out = {}
    for lang, package in packages.items():
        out.update(_html_tree(package, base.format(lang=lang), lang_of))
    return out


def _reference() -> dict[str, dict[str, list[str]]]:
    langs = ("en", "de", "es", "fr", "id", "it", "ja", "pt", "pt-br", "zh-cn", "zh-tw")
    return _per_language({l: f"debian-reference-{l}" for l in langs}, "usr/share/debian-reference", _infix_lang(None))


def _kicad() -> dict[str, dict[str, list[str]]]:
    langs = ("en", "ca", "de", "es", "fr", "id", "it", "ja", "pl", "ru", "zh")
    return _per_language({l: f"kicad-doc-{l}" for l in langs}, "usr/share/doc/kicad/help", lambda rel: rel.parts[0])


def _lang_dir(name: str) -> str | None:
    """The language of a locale-named folder (``C`` and ``en`` are English), or None for variants this set
    leaves out: scripts and encodings (``sr@latin``, ``de.UTF-8``) and regional English (``en_GB``)."""
    if "@" in name or "." in name or name.startswith("_"):
        return None
    lang = _short_lang(name)
    return None if lang == "en" and name not in ("C", "en") else lang


#: GIMP's manual in Debian (``gimp-help-<lang>``; ``en-gb`` left out: English again).
GIMP_PACKAGES = tuple(f"gimp-help-{l}" for l in ("en", "ca", "cs", "da", "de", "el", "es", "fa", "fi", "fr", "hr", "hu",
                                                 "it", "ja", "ko", "lt", "nl", "nn", "pt", "pt-br", "ro", "ru", "sl",
                                                 "sv", "uk", "zh-cn"))


def _gimp() -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for package in GIMP_PACKAGES:
        root = fetch_package(package) / "usr/share/gimp/2.0/help"
        for folder in sorted(d for d in root.iterdir() if d.is_dir()):
            lang = _lang_dir(folder.name)
            for p in sorted(folder.rglob("*.html")) if lang else ():
                out.setdefault(lang, {}).setdefault(
                    f"gimp:{p.relative_to(folder).as_posix()}",
                    html_paragraphs(p.read_text(encoding="utf-8", errors="replace")))
    return out


def _mallard(packages: tuple[str, ...]) -> Callable[[], dict[str, dict[str, list[str]]]]:
    """Mallard help of GNOME packages in every language they ship (``usr/share/help/<lang>/``, ``C`` English)."""
    def read() -> dict[str, dict[str, list[str]]]:
        out: dict[str, dict[str, list[str]]] = {}
        for package in packages:
            root = fetch_package(package) / "usr/share/help"
            for folder in sorted(d for d in root.iterdir() if d.is_dir()) if root.is_dir() else ():
                lang = _lang_dir(folder.name)
                for rel, paragraphs in mallard_pages(folder).items() if lang else ():
                    out.setdefault(lang, {}).setdefault(f"{package}:{rel}", paragraphs)
        return out
    return read


#: Translated manual pages in Debian (``manpages-<lang>`` and ``manpages-<lang>-dev``).
MANPAGES_LANGS = ("cs", "da", "de", "el", "es", "fi", "fr", "hu", "id", "it", "ja", "mk", "nb", "nl", "pl", "pt",
                  "pt-br", "ro", "ru", "sr", "sv", "tr", "uk", "vi", "zh")
MANPAGES_DEV_LANGS = ("cs", "da", "de", "es", "fr", "it", "ja", "nl", "pl", "pt", "pt-br", "ru", "uk")


def _manpages() -> dict[str, dict[str, list[str]]]:
    """Manual pages in English and every language of ``manpages-*`` (and :data:`MAN_PACKAGES`' own translations);
    the same ``manN/name.N`` is the same page; ``.so`` aliases and symbolic links are left out."""
    packages = ("manpages", "manpages-dev", *MAN_PACKAGES, *(f"manpages-{l}" for l in MANPAGES_LANGS),
                *(f"manpages-{l}-dev" for l in MANPAGES_DEV_LANGS))
    out: dict[str, dict[str, list[str]]] = {}
    for package in packages:
        root = fetch_package(package) / "usr/share/man"
        for p in sorted(root.glob("**/man*/*.gz")):
            rel = p.relative_to(root).parts
            lang = "en" if len(rel) == 2 else _lang_dir(rel[0]) if len(rel) == 3 else None
            if lang is None or (len(rel) == 3 and lang == "en"):
                continue
            paragraphs = man_page(p)
            if paragraphs is not None:
                out.setdefault(lang, {}).setdefault(f"man:{rel[-2]}/{p.name[:-3]}", paragraphs)
    return out


#: Packages whose gettext catalogs (``usr/share/locale/<lang>/LC_MESSAGES/*.mo``) feed the ``gettext`` source:
#: those of ``bisent data gettext`` and large translated programs (compilers, toolkits, desktop applications).
GETTEXT_PACKAGES = (*GETTEXT_BASE, "gcc-12-locales", "locales", "libgtk-3-common", "libgtk-4-common",
                    "libglib2.0-data", "evolution-common", "evolution-data-server-common", "inkscape", "vlc-l10n",
                    "gnumeric-common", "gramps", "git", "grub-common", "gnome-shell-common", "nautilus-data",
                    "gnome-control-center-data", "binutils-common", "gimp-data")


#: Translations of a target-side message kept (drawn by hash): catalogs carry up to 110 languages, and every one
#: of them would make UI messages most of the target side.
GETTEXT_MAX_LANGS = 8


def _gettext() -> dict[str, dict[str, list[str]]]:
    """UI messages: the page id is the English msgid (a message shared by packages is one unit), each language's
    first translation in package order its text; entries filtered as ``bisent data gettext`` does
    (:func:`bisent.datasets.gettext.drop_reason`)."""
    out: dict[str, dict[str, list[str]]] = {}
    for package in GETTEXT_PACKAGES:
        root = fetch_package(package) / "usr/share/locale"
        for mo in sorted(root.glob("*/LC_MESSAGES/*.mo")):
            lang = _lang_dir(mo.parent.parent.name)
            if lang is None or lang == "en":
                continue
            try:
                _, entries = read_mo(mo.read_bytes(), f"{package}:{mo.name}")
            except BisentError as e:
                note(f"{e}; left out")
                continue
            for msgid, msgstr in entries:
                if drop_reason(msgid, msgstr) is None:
                    key = _clean(msgid.split("\4", 1)[-1])
                    out.setdefault("en", {}).setdefault(key, [key])
                    out.setdefault(lang, {}).setdefault(key, [_clean(msgstr)])
    return out


#: Navigation, sidebars, code blocks and permalink marks of Sphinx, Texinfo and Node's HTML (not prose).
_DOC_SKIP = frozenset({"navheader", "navfooter", "sphinxsidebar", "related", "footer", "highlight", "headerlink",
                       "header", "nav-panel", "toc", "column", "gutter", "apicontent-toc", "navigation"})
#: Folders of Sphinx output that hold no pages of their own.
_NOT_PAGES = frozenset({"_sources", "_static", "_downloads", "_images", "genindex", "search"})


def _doc_pages(root: Path, lang_of: Callable[[tuple[str, ...]], tuple[str, tuple[str, ...]] | None]):
    """{lang: {page id: paragraphs}} of the HTML files under ``root``; ``lang_of(parts)`` gives (lang, id parts)."""
    out: dict[str, dict[str, list[str]]] = {}
    for p in progress_bar(None, sorted(root.rglob("*.html")), desc=f"parse {root.name}", unit="page", leave=False):
        parts = p.relative_to(root).parts
        got = lang_of(parts) if p.is_file() and _NOT_PAGES.isdisjoint(parts) and p.stem != "genindex" else None
        if got:
            lang, page = got
            try:
                paragraphs = html_paragraphs(p.read_text(encoding="utf-8", errors="replace"), skip=_DOC_SKIP)
            except RecursionError:              # thousands of unclosed elements: not a page of prose
                note(f"{p}: nested too deeply to read; left out")
                continue
            out.setdefault(lang, {})["/".join(page)] = paragraphs
    return out


def _english_html(package: str, base: str) -> Callable[[], dict[str, dict[str, list[str]]]]:
    """An English-only HTML manual: every page goes to the source side."""
    return lambda: _doc_pages(fetch_package(package) / base, lambda parts: ("en", parts))


def linux_lang(parts: tuple[str, ...]) -> tuple[str, tuple[str, ...]] | None:
    """(language, page id parts) of a kernel documentation page: ``translations/<lang>/rest`` is ``rest`` in <lang>."""
    if parts[0] != "translations":
        return "en", parts
    return (_short_lang(parts[1]), parts[2:]) if len(parts) > 2 else None


def _linux_doc() -> dict[str, dict[str, list[str]]]:
    """The kernel's documentation: English, and its translations/<lang>/ pages (paired by path)."""
    return _doc_pages(fetch_package("linux-doc-6.1") / "usr/share/doc/linux-doc-6.1/html", linux_lang)


_POD_CODE = re.compile(r"([A-Z])<(?:<+\s(.*?)\s>+|([^<>]*))>")
_POD_ENTITIES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/"}


def _pod_text(text: str) -> str:
    """Plain text of a POD paragraph: formatting codes resolved (X<> and Z<> dropped, L<text|link> as text)."""
    def code(m: re.Match) -> str:
        kind, body = m.group(1), m.group(2) if m.group(2) is not None else m.group(3)
        if kind in "XZ":
            return ""
        if kind == "E":
            return _POD_ENTITIES.get(body, "")
        if kind == "L":
            return body.split("|", 1)[0] if "|" in body else body.split("/")[-1].strip('"')
        return body
    for _ in range(8):                                      # nested codes, innermost first
        new = _POD_CODE.sub(code, text)
        if new == text:
            break
        text = new
    return " ".join(text.split())


def pod_paragraphs(pod: str) -> list[str]:
    """Headings, items and ordinary paragraphs of a POD document; verbatim (code) and =begin blocks left out."""
    out, skipping = [], False
    for block in re.split(r"\n[ \t]*\n", pod.replace("\r\n", "\n")):
        if not block.strip():
            continue
        if block.startswith("="):
            cmd, _, rest = block[1:].partition(" ")
            cmd = cmd.split("\n")[0]
            if cmd == "begin":
                skipping = True
            elif cmd == "end":
                skipping = False
            elif not skipping and (cmd.startswith("head") or cmd == "item") and rest.strip() not in ("", "*"):
                out.append(_pod_text(rest))
        elif not skipping and not block[0].isspace():
            out.append(_pod_text(block))
    return [p for p in out if p]


def _perl_doc() -> dict[str, dict[str, list[str]]]:
    root = fetch_package("perl-doc") / "usr/share/perl"
    return {"en": {p.relative_to(root).as_posix(): pod_paragraphs(p.read_text(encoding="utf-8", errors="replace"))
                   for p in sorted(root.rglob("*.pod")) if p.is_file()}}


#: Page sources beside LibreOffice: name -> a function giving {language: {page id: paragraphs}}.
PAGE_SOURCES = {
    "manpages": _manpages,
    "gimp": _gimp,
    "gnome": _mallard(("gnome-user-docs",)),
    "gnome-apps": _mallard(GNOME_APPS),
    "handbook": _handbook,
    "lilypond": _lilypond,
    "reference": _reference,
    "kicad": _kicad,
    "gettext": _gettext,
    # English manuals (format 3): the source side grows toward a million sentences
    "linux-doc": _linux_doc,
    "python-doc": _english_html("python3.11-doc", "usr/share/doc/python3.11/html"),
    "perl-doc": _perl_doc,
    "postgresql-doc": _english_html("postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html"),
    "octave-doc": _english_html("octave-doc", "usr/share/doc/octave"),
    "sqlite-doc": _english_html("sqlite3-doc", "usr/share/doc/sqlite3"),
    "nodejs-doc": _english_html("nodejs-doc", "usr/share/doc/nodejs/api"),
    "git-doc": _english_html("git-doc", "usr/share/doc/git-doc"),
    "debian-policy": _english_html("debian-policy", "usr/share/doc/debian-policy"),
    # format 4: more English manuals (each package's HTML, wherever it lies)
    **{name: _english_html(package, "usr") for name, package in (
        ("django-doc", "python-django-doc"), ("cmake-doc", "cmake-doc"), ("llvm-doc", "llvm-14-doc"),
        ("clang-doc", "clang-14-doc"), ("glib-doc", "libglib2.0-doc"), ("gtk3-doc", "libgtk-3-doc"),
        ("zsh-doc", "zsh-doc"), ("erlang-doc", "erlang-doc"),
        ("gnuplot-doc", "gnuplot-doc"), ("maxima-doc", "maxima-doc"))},
}
#: Version of each source's parsed-page cache (sources whose reader changed in format 4 are re-read).
_PAGE_VERSIONS = {"manpages": 2, "gimp": 2, "gnome": 2, "lilypond": 2, "reference": 2, "kicad": 2}
SOURCES = ("libreoffice", *PAGE_SOURCES)


def _cached_pages(source: str) -> dict[str, dict[str, list[str]]]:
    """{lang: {page: paragraphs}} of a page source, parsed once and cached as JSON."""
    path = cache_dir("datasets", "scale") / f"pages-{source}-v{_PAGE_VERSIONS.get(source, PAGES_VERSION)}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    pages = PAGE_SOURCES[source]()
    with atomic_write(path, "w", encoding="utf-8") as f:
        json.dump(pages, f, ensure_ascii=False)
    return pages


# --- units: paragraphs assigned to a side -----------------------------------------------------------------
#
# A unit is (source, language, paragraph, English original or ""): the English original of a target unit from an
# aligned source (LibreOffice, gettext) lets the target side leave out translations of the gold sentences.

def _aligned_units(tag: str, source: str, groups, max_langs: int | None = None):
    """(gold candidates [(en, tgt, lang, source)], source units, target units) of ``groups``, an iterator of
    (English text, [{lang: text, "en": text}, ...]) in a fixed order: each English text is a gold candidate
    (:data:`GOLD_PERCENT` %, one version and language drawn by hash), source only, or target only (then
    every translation of the drawn version, or ``max_langs`` of them drawn by hash: none is a translation
    of a source sentence)."""
    gold, src, tgt = [], [], []
    for en, versions in groups:
        h = _hash(tag, en)
        choice = versions[h % len(versions)]
        langs = sorted(l for l in choice if l != "en")
        if not langs:
            continue
        if h % 100 < GOLD_PERCENT:
            lang = langs[(h >> 8) % len(langs)]
            gold.append((en, choice[lang], lang, source))
        elif h % 2:
            src.append((source, "en", en, ""))
        else:
            if max_langs is not None and len(langs) > max_langs:
                langs = sorted(sorted(langs, key=lambda l: _hash(tag, en, l))[:max_langs])
            tgt += [(source, l, choice[l], en) for l in langs]
    return gold, src, tgt


def _libreoffice_units(langs: tuple[str, ...]):
    """LibreOffice help paragraphs paired by (page, paragraph id) and grouped by their English text."""
    by_key: dict[tuple[str, str], dict[str, str]] = {}
    for lang in langs:
        for doc in load_documents("en", lang):
            tgt = {p.pid: p.text for p in doc.tgt}
            for p in doc.src:
                if p.text and tgt.get(p.pid):
                    by_key.setdefault((doc.doc, p.pid), {"en": p.text})[lang] = tgt[p.pid]
    groups: dict[str, list[dict[str, str]]] = {}
    for key in sorted(by_key):
        groups.setdefault(by_key[key]["en"], []).append(by_key[key])
    del by_key
    return _aligned_units("lo", "libreoffice", ((en, groups[en]) for en in sorted(groups)))


def _messages_path() -> Path:
    """The gettext messages, one JSON line ``[msgid, {lang: msgstr}]`` each in msgid order, read once from the
    packages (:func:`_gettext`) and cached: read back a line at a time, the build never holds the 2.6M
    translations of every language at once (loaded whole, they took 2 GB)."""
    path = cache_dir("datasets", "scale") / f"messages-gettext-v{PAGES_VERSION}.jsonl"
    if not path.is_file():
        write_messages(path, _gettext())
    return path


def write_messages(path: Path, pages: dict[str, dict[str, list[str]]]) -> None:
    """Write ``pages`` ({lang: {msgid: [msgstr]}}) as the JSON lines of :func:`_messages_path`."""
    other = sorted(l for l in pages if l != "en")
    with atomic_write(path, "w", encoding="utf-8") as f:
        for en in sorted(pages.get("en", {})):
            f.write(json.dumps([en, {l: pages[l][en][0] for l in other if en in pages[l]}], ensure_ascii=False) + "\n")


def _gettext_units():
    """gettext messages grouped by msgid (one version: each language's first translation in package order)."""
    def groups():
        with open(_messages_path(), encoding="utf-8") as f:
            for line in f:
                en, translations = json.loads(line)
                yield en, [{"en": en, **translations}]
    return _aligned_units("gettext", "gettext", groups(), max_langs=GETTEXT_MAX_LANGS)


#: Sources whose units are aligned paragraph by paragraph (gold candidates come from them).
ALIGNED_SOURCES = ("libreoffice", "gettext")


def _page_units(source: str):
    """(source units, target units) of a page source: each page on one side only, English on the source side
    or every translation on the target side (format 4; format 3 took one translation)."""
    pages = _cached_pages(source)
    ids = sorted({page for by_page in pages.values() for page in by_page})
    src, tgt = [], []
    for page in ids:
        langs = sorted(l for l in pages if l != "en" and pages[l].get(page))
        h = _hash(source, page)
        if langs and (h % 2 or not pages.get("en", {}).get(page)):
            tgt += [(source, lang, t, "") for lang in langs for t in pages[lang][page]]
        elif pages.get("en", {}).get(page):
            src += [(source, "en", t, "") for t in pages["en"][page]]
    return src, tgt


def _sentences(text: str, lang: str) -> list[str]:
    from sentencex import segment

    text = " ".join(text.split())
    return [s.strip() for s in segment(lang, text) if s.strip()] if text else []


def _keep(sentence: str) -> bool:
    return len(sentence) <= MAX_CHARS and any(c.isalpha() for c in sentence) and not _too_short(sentence)


def _good_gold(sentence: str) -> bool:
    """Gold sides are prose: kept, mostly letters, at least :data:`GOLD_MIN_WORDS` words, or, in a script
    written without spaces (Chinese, Japanese, Thai, ...), :data:`GOLD_MIN_UNSPACED` characters of it."""
    visible = [c for c in sentence if not c.isspace()]
    letters = sum(c.isalpha() for c in visible)
    unspaced = len(_UNSPACED_RE.findall(sentence))
    long_enough = (unspaced >= GOLD_MIN_UNSPACED if unspaced * 3 >= letters
                   else len(sentence.split()) >= GOLD_MIN_WORDS)
    return _keep(sentence) and long_enough and letters >= 0.7 * len(visible)


#: Why a sentence was left out (``stats.json`` "removed", per side).
REMOVAL_REASONS = {
    "duplicate": "the same text already on this side (a gold sentence or an earlier paragraph)",
    "filtered": f"no letters, shorter than {MIN_CHARS} characters or {MIN_WORDS} words (6 characters in a "
                f"script without spaces), or longer than {MAX_CHARS} characters (code, tables, lists run together)",
    "on_other_side": "target text equal (case-folded) to a source sentence: untranslated text",
    "language": "identified as English on the target side or as not English on the source side",
    "gold_leak": "a target paragraph translated from an English paragraph containing a gold source sentence "
                 "(whole paragraph, counted once)",
}


def _fill(units, size: int, seen: set[str], out: list[tuple[str, str, str]], counts: dict, desc: str, *,
          is_english: Callable[[str], bool], english: bool, other_side: frozenset[str] = frozenset(),
          gold_src: frozenset[str] = frozenset()) -> None:
    """Append sentences of ``units`` (source, lang, paragraph, English original) in blake2b order of the
    paragraph until ``out`` holds ``size``.

    Kept only when identified as English (``english``) or as not English (the target side: untranslated
    strings of translated manuals stay out), and when the other side does not hold the same text; a unit
    whose English original contains a sentence of ``gold_src`` is left out whole (an unlabelled translation
    of a gold pair).
    """
    units.sort(key=lambda u: _hash(u[2]))          # stable: ties keep the (deterministic) order of the units
    bar = progress_bar(None, total=size, initial=len(out), desc=desc, unit="sentence", leave=False)
    for source, lang, text, en in units:
        if len(out) >= size:
            break
        if en and gold_src and not gold_src.isdisjoint(_sentences(en, "en")):
            counts["gold_leak"] += 1
            continue
        for s in _sentences(text, lang):
            if s in seen:
                counts["duplicate"] += 1
            elif not _keep(s):
                counts["filtered"] += 1
            elif s.casefold() in other_side:
                counts["on_other_side"] += 1
            elif is_english(s) != english:
                counts["language"] += 1
            elif len(out) < size:
                seen.add(s)
                out.append((s, lang, source))
                bar.update(1)
    bar.close()


def build_scale(out_dir, *, is_english: Callable[[str], bool], size: int = 1_000_000, gold: int | None = None,
                sources: tuple[str, ...] = SOURCES, libreoffice_langs: tuple[str, ...] = LIBREOFFICE_LANGS) -> dict:
    """Write the benchmark (files in the module docstring) to ``out_dir``; return its stats.

    ``is_english(sentence)`` is the language identifier (``bisent data scale`` passes one on fastText
    through :func:`bisent.filtering.langid.identify`; data builders sit below the filters, so it is passed in).

    ``gold`` pairs (default ``size // 200``, at least 50) are drawn first; the
    sides are then filled up to ``size`` sentences each, or to what the sources hold.
    """
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise BisentError(f"unknown scale source '{unknown[0]}' (one of {', '.join(SOURCES)})")
    if "libreoffice" not in sources:
        raise BisentError("the scale benchmark needs the 'libreoffice' source: its gold pairs come from there")
    n_gold = min(size, gold if gold is not None else max(50, size // 200))
    candidates, src_units, tgt_units = _libreoffice_units(tuple(libreoffice_langs))
    for source in sources:
        if source == "gettext":
            g, s, t = _gettext_units()
            candidates += g
        elif source != "libreoffice":
            (s, t), g = _page_units(source), []
        else:
            continue
        src_units += s
        tgt_units += t
    available = {"src": len(src_units) + len(candidates), "tgt": len(tgt_units) + len(candidates)}
    counts = {side: dict.fromkeys(REMOVAL_REASONS, 0) for side in ("src", "tgt")}
    src: list[tuple[str, str, str]] = []
    tgt: list[tuple[str, str, str]] = []
    seen_src, seen_tgt = set(), set()
    pairs = []
    candidates.sort(key=lambda c: (ALIGNED_SOURCES.index(c[3]), _hash("gold", *c[:3]), c))  # LibreOffice's prose first
    for en, tr, lang, source in candidates:
        if len(pairs) >= n_gold:
            break
        a, b = _sentences(en, "en"), _sentences(tr, lang)
        if (len(a) == 1 == len(b) and _good_gold(a[0]) and _good_gold(b[0]) and a[0] not in seen_src
                and b[0] not in seen_tgt and is_english(a[0]) and not is_english(b[0])):
            seen_src.add(a[0])
            seen_tgt.add(b[0])
            src.append((a[0], "en", source))
            tgt.append((b[0], lang, source))
            pairs.append((a[0], b[0]))
    del candidates
    _fill(src_units, size, seen_src, src, counts["src"], "source sentences", is_english=is_english, english=True)
    del src_units
    _fill(tgt_units, size, seen_tgt, tgt, counts["tgt"], "target sentences", is_english=is_english, english=False,
          other_side=frozenset(x.casefold() for x in seen_src), gold_src=frozenset(a for a, _ in pairs))
    del tgt_units, seen_src, seen_tgt
    src.sort(key=lambda r: (_hash(r[0]), r[0]))
    tgt.sort(key=lambda r: (_hash(r[0]), r[0]))
    src_line = {r[0]: i for i, r in enumerate(src)}
    tgt_line = {r[0]: i for i, r in enumerate(tgt)}
    gold_lines = sorted((src_line[a], tgt_line[b]) for a, b in pairs)
    del src_line, tgt_line
    stats = {"format": FORMAT_VERSION, "size": size, "src_sentences": len(src), "tgt_sentences": len(tgt),
             "gold_pairs": len(gold_lines), "gold_languages": _count(tgt[j][1] for _, j in gold_lines),
             "gold_by_source": _count(tgt[j][2] for _, j in gold_lines),
             "src_by_source": _count(r[2] for r in src), "tgt_by_source": _count(r[2] for r in tgt),
             "tgt_by_language": _count(r[1] for r in tgt),
             "tgt_by_source_language": {k: _count(r[1] for r in tgt if r[2] == k) for k in _count(r[2] for r in tgt)},
             "removed": counts, "removal_reasons": REMOVAL_REASONS, "available_paragraphs": available,
             "libreoffice_languages": list(libreoffice_langs), "sources": list(sources),
             "rule": "each English text of an aligned source (LibreOffice, gettext) is gold, source only or target "
                     "only (blake2b); each page of the other sources is English on the source side or every "
                     "translation on the target side"}
    with atomic_dir(Path(out_dir), replace_names=FILES) as tmp:
        _write_lines(tmp / "src.txt", (r[0] for r in src))
        _write_lines(tmp / "tgt.txt", (r[0] for r in tgt))
        _write_lines(tmp / "tgt.lang", (r[1] for r in tgt))
        _write_lines(tmp / "gold.tsv", (f"{i}\t{j}" for i, j in gold_lines))
        (tmp / "stats.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stats


def _count(items: Iterator[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def _write_lines(path: Path, lines) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def read_gold(folder) -> list[tuple[int, int]]:
    """The (source line, target line) gold pairs of a built benchmark (0-based)."""
    path = Path(folder) / "gold.tsv"
    if not path.is_file():
        raise BisentError(f"{path}: missing (build the benchmark with `bisent data scale`)")
    out = []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                raise BisentError(f"{path}:{no}: expected two line numbers separated by a tab")
            out.append((int(parts[0]), int(parts[1])))
    return out

"""Parallel paragraphs and documents from LibreOffice help (Debian's ``libreoffice-help-*`` packages).

Every language's help is generated from the same sources, so each HTML page
exists in every language and its paragraphs carry the same ``par_id…`` /
``hd_id…`` ids: the alignment is exact, not estimated. We pair paragraphs per
page by (page path relative to the language root, id). An id that occurs
several times on one page (embedded sections reuse ids) is paired by
occurrence: its k-th copy gets the key ``ID#k`` (k ≥ 2) in both languages.

Text: markup is stripped with the stdlib :mod:`html.parser`, entities are
unescaped, white space is collapsed; in an inline platform/module switch
(``<span class="switchinline">``) only the ``default`` case is kept (else the
first case), as a reader without a platform would see it.

Filtering (:func:`trivial_reason`, in this order): a pair is removed when a
side is empty (``empty``); a side has no letter, only digits, punctuation
or symbols (``no_letters``); both sides are the same text ignoring case
(``identical``: untranslated strings, code); a side has fewer than
:data:`MIN_CHARS` characters or fewer than :data:`MIN_WORDS` words
(``too_short``; for scripts written without spaces, e.g. Chinese or
Japanese, only a minimum of :data:`MIN_CHARS_UNSPACED` characters applies);
or the exact (src, tgt) pair was already kept from an earlier page in path
order (``duplicate``, so no pair is in two splits).

Splits are by document, deterministic and the same for every language pair:
``blake2b(doc path) % 100`` below 80 is train, below 90 dev, else test.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import NamedTuple

from .. import langcodes
from ..cache import cache_dir
from ..errors import BisentError
from ..io import atomic_dir, atomic_write
from ..progress import progress_bar
from .debian import available_packages, fetch_package, package_info

#: Bump when parsing or filtering changes: cached builds of another version are rebuilt.
FORMAT_VERSION = 1
PACKAGE_PREFIX = "libreoffice-help-"
SPLITS = ("train", "dev", "test")
MIN_WORDS = 3
MIN_CHARS = 15
MIN_CHARS_UNSPACED = 6
REMOVAL_REASONS = ("empty", "no_letters", "identical", "too_short", "duplicate")
DATASET_FILES = frozenset({"train.tsv", "dev.tsv", "test.tsv", "documents.jsonl", "stats.json"})

_ID_RE = re.compile(r"^(?:par|hd)_id\w*$")
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "param", "source", "track", "wbr"})
#: Start tags that implicitly close an open <p> (HTML's rule), and the elements that bound that search.
_CLOSES_P = frozenset({"address", "article", "aside", "blockquote", "div", "dl", "fieldset", "footer", "form",
                       "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "main", "nav", "ol", "p", "pre",
                       "section", "table", "ul"})
_P_SCOPE = frozenset({"td", "th", "caption", "table", "html", "button", "object", "template"})
_SKIP = frozenset({"script", "style", "template", "noscript"})
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
#: Han, kana, Thai, Lao, Tibetan, Myanmar, Khmer: scripts written without spaces between words.
_UNSPACED_RE = re.compile(r"[\u0e00-\u0eff\u0f00-\u0fff\u1000-\u109f\u1780-\u17ff"
                          r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


class Paragraph(NamedTuple):
    """One paragraph of a page: its key (``par_id…``, ``hd_id…``, ``…#k`` for repeats) and text."""

    pid: str
    text: str


class Pair(NamedTuple):
    """One aligned paragraph pair: page path, paragraph key, both texts, split."""

    doc: str
    pid: str
    src: str
    tgt: str
    split: str


@dataclass
class Document:
    """One help page in both languages: its non-empty paragraphs in page order (unfiltered)."""

    doc: str
    split: str
    src: list[Paragraph] = field(default_factory=list)
    tgt: list[Paragraph] = field(default_factory=list)


# --------------------------------------------------------------------------- languages

def normalise_lang(lang: str) -> str:
    """Canonical language code (:func:`bisent.langcodes.normalise_lang`), ``en-us`` written ``en``."""
    code = langcodes.normalise_lang(lang) if lang and str(lang).strip() else ""
    return "en" if code == "en-us" else code


def package_for(lang: str) -> str:
    """Debian package holding the help in ``lang`` (``en`` -> ``libreoffice-help-en-us``)."""
    code = normalise_lang(lang)
    return PACKAGE_PREFIX + ("en-us" if code == "en" else code)


def available_languages() -> list[str]:
    """Language codes with a ``libreoffice-help-*`` package in the apt lists (``en`` for en-us)."""
    names = available_packages(PACKAGE_PREFIX)
    return sorted(normalise_lang(n[len(PACKAGE_PREFIX):]) for n in names if not n.endswith("-common"))


def check_language(lang: str) -> str:
    """Return the package for ``lang``, or raise a one-line error listing the languages there are."""
    code = normalise_lang(lang)
    langs = available_languages()
    if code not in langs:
        shown = ", ".join(langs) if langs else "none (no libreoffice-help-* packages in the apt lists)"
        raise BisentError(f"no LibreOffice help package for language {lang!r} ({package_for(lang)}); "
                          f"available: {shown}")
    return package_for(code)


# --------------------------------------------------------------------------- HTML

class _Node:
    """An element of the parsed page: tag, attributes, children (nodes and text)."""

    __slots__ = ("tag", "attrs", "children")

    def __init__(self, tag: str, attrs: dict[str, str | None]):
        self.tag = tag
        self.attrs = attrs
        self.children: list[_Node | str] = []


class _TreeBuilder(HTMLParser):
    """Builds a small element tree; tolerant of unclosed and stray end tags (a block start closes an open <p>)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)  # entities unescaped in text
        self.root = _Node("#root", {})
        self._stack = [self.root]

    def handle_starttag(self, tag, attrs):
        if tag in _CLOSES_P:
            self._close_open_p()
        node = _Node(tag, dict(attrs))
        self._stack[-1].children.append(node)
        if tag not in _VOID:
            self._stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self._stack[-1].children.append(_Node(tag, dict(attrs)))

    def _close_open_p(self):
        for i in range(len(self._stack) - 1, 0, -1):
            if self._stack[i].tag == "p":
                del self._stack[i:]
                return
            if self._stack[i].tag in _P_SCOPE:
                return

    def handle_endtag(self, tag):
        for i in range(len(self._stack) - 1, 0, -1):
            if self._stack[i].tag == tag:
                del self._stack[i:]
                return

    def handle_data(self, data):
        self._stack[-1].children.append(data)


def normalise_text(text: str) -> str:
    """Drop invisible characters (soft hyphen, zero-width), collapse all white space to single spaces."""
    return " ".join(text.translate(_INVISIBLE).split())


def _collect_text(node: _Node, out: list[str]) -> None:
    """Append the visible text under ``node``; a switchinline contributes only one case."""
    for child in node.children:
        if isinstance(child, str):
            out.append(child)
        elif child.tag in _SKIP:
            continue
        elif child.tag == "br":
            out.append(" ")
        elif child.attrs.get("class") == "switchinline":
            cases = [c for c in child.children if isinstance(c, _Node)]
            chosen = next((c for c in cases if (c.attrs.get("id") or "").startswith("default")),
                          cases[0] if cases else None)
            if chosen is not None:
                _collect_text(chosen, out)
        else:
            _collect_text(child, out)


def extract_paragraphs(html: str) -> list[Paragraph]:
    """The ``par_id``/``hd_id`` paragraphs of one help page in document order (empty texts included).

    Repeated ids get keys ``ID#2``, ``ID#3``... so each key is unique on the page.
    """
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    found: list[Paragraph] = []
    seen: dict[str, int] = {}

    def walk(node: _Node) -> None:
        for child in node.children:
            if not isinstance(child, _Node) or child.tag in _SKIP:
                continue
            ident = child.attrs.get("id") or ""
            if _ID_RE.match(ident):
                seen[ident] = seen.get(ident, 0) + 1
                key = ident if seen[ident] == 1 else f"{ident}#{seen[ident]}"
                parts: list[str] = []
                _collect_text(child, parts)
                found.append(Paragraph(key, normalise_text("".join(parts))))
            else:
                walk(child)

    walk(builder.root)
    return found


def help_root(folder: Path, lang: str | None = None) -> Path:
    """The language root (``usr/share/libreoffice/help/<lang>``) inside an unpacked help package.

    A package with several trees (``libreoffice-help-ca`` ships ``ca`` and ``ca-valencia``) gives the one
    named after ``lang``.
    """
    roots = sorted(p.parent for p in Path(folder).glob("usr/share/libreoffice/help/*/text") if p.is_dir())
    if len(roots) > 1 and lang is not None:
        roots = [r for r in roots if normalise_lang(r.name) == normalise_lang(lang)]
    if len(roots) != 1:
        raise BisentError(f"{folder}: expected one usr/share/libreoffice/help/<lang>/text folder, found {len(roots)}")
    return roots[0]


def read_pages(root: Path, desc: str = "pages") -> tuple[dict[str, list[Paragraph]], int]:
    """Parse every HTML page under ``root``: ``({relative path: paragraphs}, pages that could not be read)``."""
    files = sorted(root.rglob("*.html"))
    pages: dict[str, list[Paragraph]] = {}
    unreadable = 0
    for path in progress_bar(None, files, desc=desc, unit="page", leave=False):
        try:
            html = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            unreadable += 1
            continue
        pages[path.relative_to(root).as_posix()] = extract_paragraphs(html)
    return pages, unreadable


# --------------------------------------------------------------------------- pairing and filtering

def split_of(doc: str) -> str:
    """Deterministic split of a document path: blake2b % 100 -> train (<80), dev (<90), test."""
    bucket = int.from_bytes(hashlib.blake2b(doc.encode("utf-8"), digest_size=8).digest(), "big") % 100
    return "train" if bucket < 80 else "dev" if bucket < 90 else "test"


def _too_short(text: str) -> bool:
    unspaced = len(_UNSPACED_RE.findall(text))
    if unspaced * 3 >= sum(c.isalpha() for c in text):  # mostly a script without spaces
        return len(text) < MIN_CHARS_UNSPACED
    return len(text) < MIN_CHARS or len(text.split()) < MIN_WORDS


def trivial_reason(src: str, tgt: str) -> str | None:
    """Why ``(src, tgt)`` is not worth keeping: ``empty``, ``no_letters``, ``identical``, ``too_short``; or None."""
    if not src or not tgt:
        return "empty"
    if not any(c.isalpha() for c in src) or not any(c.isalpha() for c in tgt):
        return "no_letters"
    if src.casefold() == tgt.casefold():
        return "identical"
    if _too_short(src) or _too_short(tgt):
        return "too_short"
    return None


def pair_pages(src_pages: dict[str, list[Paragraph]],
               tgt_pages: dict[str, list[Paragraph]]) -> tuple[list[Pair], list[Document], dict]:
    """Pair two languages' pages by (path, key); filter; return ``(pairs, documents, counts)``.

    Pages are visited in path order and paragraphs in source page order, so the
    output (and which copy of a duplicate survives) is deterministic.
    """
    removed = dict.fromkeys(REMOVAL_REASONS, 0)
    counts = {"pages_src": len(src_pages), "pages_tgt": len(tgt_pages), "pages_both": 0,
              "paragraphs_aligned": 0, "paragraphs_src_only": 0, "paragraphs_tgt_only": 0}
    kept: set[tuple[str, str]] = set()
    pairs: list[Pair] = []
    documents: list[Document] = []
    for doc in sorted(src_pages.keys() & tgt_pages.keys()):
        counts["pages_both"] += 1
        split = split_of(doc)
        tgt_by_key = {p.pid: p.text for p in tgt_pages[doc]}
        src_keys = {p.pid for p in src_pages[doc]}
        counts["paragraphs_src_only"] += len(src_keys - tgt_by_key.keys())
        counts["paragraphs_tgt_only"] += len(tgt_by_key.keys() - src_keys)
        for pid, src in src_pages[doc]:
            if pid not in tgt_by_key:
                continue
            counts["paragraphs_aligned"] += 1
            tgt = tgt_by_key[pid]
            reason = trivial_reason(src, tgt) or ("duplicate" if (src, tgt) in kept else None)
            if reason:
                removed[reason] += 1
                continue
            kept.add((src, tgt))
            pairs.append(Pair(doc, pid, src, tgt, split))
        document = Document(doc, split, [p for p in src_pages[doc] if p.text], [p for p in tgt_pages[doc] if p.text])
        if document.src and document.tgt:
            documents.append(document)
    counts["removed"] = removed
    return pairs, documents, counts


# --------------------------------------------------------------------------- build and cache

def _cache_folder(src: str, tgt: str) -> Path:
    return cache_dir("datasets", "libreoffice", f"{src}-{tgt}")


def _languages(src: str, tgt: str) -> tuple[str, str]:
    src, tgt = normalise_lang(src), normalise_lang(tgt)
    if src == tgt:
        raise BisentError(f"source and target language are both {src!r}; choose two languages")
    return src, tgt


def _is_built(folder: Path) -> bool:
    try:
        stats = json.loads((folder / "stats.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (stats.get("format") == FORMAT_VERSION and (folder / "pairs.tsv").is_file()
            and (folder / "documents.jsonl").is_file())


def build(src: str = "en", tgt: str = "de", *, force: bool = False) -> Path:
    """Fetch, parse, pair and cache the ``src``-``tgt`` data set (unless cached); return the cache folder.

    The folder holds ``pairs.tsv`` (doc, id, src, tgt, split), ``documents.jsonl``
    and ``stats.json`` (written last: it marks a complete build).
    """
    src, tgt = _languages(src, tgt)
    folder = _cache_folder(src, tgt)
    if _is_built(folder) and not force:
        return folder
    started = time.perf_counter()
    packages = [check_language(src), check_language(tgt)]
    unpacked = [fetch_package(name) for name in packages]
    (src_pages, src_bad), (tgt_pages, tgt_bad) = (
        read_pages(help_root(d, lang), desc=f"parse {lang}") for d, lang in zip(unpacked, (src, tgt)))
    pairs, documents, counts = pair_pages(src_pages, tgt_pages)
    stats = _stats(src, tgt, pairs, documents, counts, unpacked)
    stats["pages_unreadable"] = src_bad + tgt_bad
    with atomic_write(folder / "pairs.tsv") as f:
        f.writelines(f"{p.doc}\t{p.pid}\t{p.src}\t{p.tgt}\t{p.split}\n" for p in pairs)
    _write_documents(folder / "documents.jsonl", documents)
    stats["build_seconds"] = round(time.perf_counter() - started, 1)
    with atomic_write(folder / "stats.json") as f:
        json.dump(stats, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return folder


def _stats(src: str, tgt: str, pairs: list[Pair], documents: list[Document], counts: dict,
           unpacked: list[Path]) -> dict:
    """The summary written to ``stats.json``: provenance, rules, counts per split and per removal reason."""
    per_split = {s: sum(p.split == s for p in pairs) for s in SPLITS}
    docs_with_pairs = {s: len({p.doc for p in pairs if p.split == s}) for s in SPLITS}
    return {
        "format": FORMAT_VERSION,
        "dataset": "libreoffice-help",
        "src": src,
        "tgt": tgt,
        "packages": {info["package"]: info["version"] for info in map(package_info, unpacked)},
        "split_rule": "blake2b(doc path, 8 bytes) % 100: <80 train, <90 dev, else test",
        "filter_rule": (f"drop: empty side; side without letters; identical ignoring case; side shorter than "
                        f"{MIN_CHARS} chars or {MIN_WORDS} words ({MIN_CHARS_UNSPACED} chars for scripts "
                        "without spaces); exact duplicate of an earlier pair"),
        "pairs": {**per_split, "total": len(pairs)},
        "documents": {**{s: sum(d.split == s for d in documents) for s in SPLITS}, "total": len(documents)},
        "documents_with_pairs": {**docs_with_pairs, "total": sum(docs_with_pairs.values())},
        **counts,
    }


def _write_documents(path: Path, documents: list[Document]) -> None:
    with atomic_write(path) as f:
        for d in documents:
            row = {"doc": d.doc, "split": d.split, "src": [list(p) for p in d.src], "tgt": [list(p) for p in d.tgt]}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def _check_split(split: str | None) -> None:
    if split is not None and split not in SPLITS:
        raise BisentError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")


def load_pairs(src: str = "en", tgt: str = "de", split: str | None = None) -> list[Pair]:
    """Aligned, filtered paragraph pairs of LibreOffice help (all splits, or one), building them on first use."""
    _check_split(split)
    pairs = read_pair_file(build(src, tgt) / "pairs.tsv")
    return [p for p in pairs if split is None or p.split == split]


def read_pair_file(path) -> list[Pair]:
    """The rows of a cached ``pairs.tsv`` (``doc<TAB>id<TAB>src<TAB>tgt<TAB>split``), read by
    :func:`bisent.io.bitext.iter_units` (sides in columns 3 and 4); a bad row is a one-line error."""
    from ..io.bitext import column_text, iter_units, open_bitext

    bt = open_bitext([path], fmt="tsv", columns=(3, 4))
    return [Pair(column_text(bt, u, 0), column_text(bt, u, 1), u.src, u.tgt, column_text(bt, u, 4))
            for u in iter_units(bt, on_bad="error")]


def load_documents(src: str = "en", tgt: str = "de", split: str | None = None) -> list[Document]:
    """Help pages in both languages (ordered, unfiltered paragraphs): the document view, one split or all."""
    _check_split(split)
    documents = []
    with open(build(src, tgt) / "documents.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if split is None or row["split"] == split:
                documents.append(Document(row["doc"], row["split"], [Paragraph(*p) for p in row["src"]],
                                          [Paragraph(*p) for p in row["tgt"]]))
    return documents


def load_stats(src: str = "en", tgt: str = "de") -> dict:
    """The ``stats.json`` of the cached build (building it first if needed)."""
    return json.loads((build(src, tgt) / "stats.json").read_text(encoding="utf-8"))


def write_dataset(src: str, tgt: str, out_dir) -> dict:
    """Write ``train/dev/test.tsv`` (doc, id, src, tgt; no header), ``documents.jsonl``, ``stats.json`` to ``out_dir``.

    The folder is built under a temp name and renamed into place; an existing
    folder is replaced only if it holds nothing but these files. Returns the stats.
    """
    folder = build(src, tgt)
    stats = load_stats(src, tgt)
    pairs = load_pairs(src, tgt)
    with atomic_dir(Path(out_dir), replace_names=DATASET_FILES) as tmp:
        for split in SPLITS:
            with open(tmp / f"{split}.tsv", "w", encoding="utf-8", newline="\n") as f:
                f.writelines(f"{p.doc}\t{p.pid}\t{p.src}\t{p.tgt}\n" for p in pairs if p.split == split)
        (tmp / "documents.jsonl").write_bytes((folder / "documents.jsonl").read_bytes())
        (tmp / "stats.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stats

"""Verse-aligned Bible translations from Debian's SWORD packages: a domain outside Debian's documentation.

Literary text with exact gold: two translations of one verse share its id
(``Gen.1.1``). The English side is the World English Bible (``sword-text-web``,
module engWEB2015eb: a modern English translation of 2000-2020, public domain),
the Spanish side the Reina-Valera of 1909 (``sword-text-sparv``, spaRV1909eb,
public domain). Debian packages no other translation as a SWORD module
(``sword-text-kjv`` is English again, the King James Version of 1769), so the
domain holds one pair, en-es. No training collection of bisent reads these
packages.

**The SWORD zText format** (read here, no SWORD library needed). A module's
``mods.d/NAME.conf`` names its folder (``DataPath``), driver (``ModDrv=zText``)
and versification. The folder holds, per testament (``ot``, ``nt``), three
files: ``.bzs`` (one 12-byte little-endian record per compressed block:
offset, compressed size, uncompressed size in ``.bzz``), ``.bzz`` (the
zlib-compressed blocks) and ``.bzv`` (one 10-byte record per verse slot: block
number, offset and size in the uncompressed block, ``<IIH``). The slots follow
the versification: slot 0 is empty, slot 1 the testament's heading, then per
book a book-heading slot and per chapter a chapter-heading slot followed by its
verses. Each slot holds OSIS markup; osis2mod, which built these modules,
writes the chapter's start tag (``<chapter osisID="Gen.1" sID=...>``) into the
chapter-heading slot (a book outside the versification, WEB's Greek additions to
Daniel, goes whole into the next heading slot: a slot with several chapter
tags heads none). The verse ids are read from those tags (a slot's
position after its chapter's heading is its verse number), and checked: chapters
of a book numbered 1, 2, ... in order, a book seen once, no verse slot holding
another book's start tag, every slot inside its block. A module that breaks
one of these is a one-line error naming the module and the slot.

**Pairs**: a verse of one module with the verse of the same id in the other,
in chapters that hold the same number of verses in both (the two modules use
different versifications, NRSVA and KJV; 3 John and Revelation 12 differ by a
verse, so those chapters are left out whole rather than paired out of step).
Text: footnotes (``<note>``), editors' headings (``<title>``, not the psalms'
canonical superscriptions) and every other tag
removed, entities decoded, spaces collapsed. Dropped, counted by reason:
verses empty on either side (a verse a translation leaves out), sides without
letters, and repeats (:func:`.pairset.one_to_one`: each English and each
Spanish verse once).

**Split by book** (:data:`TEST_BOOKS`, :data:`DEV_BOOKS`; every other book
``train``, which no benchmark reads): narrative, poetry, wisdom, prophecy,
gospel and letter in each held-out split.
"""

from __future__ import annotations

import html
import re
import struct
import zlib
from pathlib import Path
from typing import NamedTuple

from ..errors import BisentError
from .debian import fetch_package, package_info
from .libreoffice import Pair
from .pairset import cached_pairs, one_to_one, read_pairs, write_pairs_dataset

FORMAT_VERSION = 1
#: SWORD modules read, by short name: (Debian package, module name, language, translation, year).
MODULES = {
    "web": ("sword-text-web", "engWEB2015eb", "en", "World English Bible", "2000-2020"),
    "sparv": ("sword-text-sparv", "spaRV1909eb", "es", "Reina-Valera", "1909"),
    "kjv": ("sword-text-kjv", "engKJV2006eb", "en", "King James Version", "1769"),
}
#: language pairs -> (source module, target module)
PAIRS = {("en", "es"): ("web", "sparv")}
#: held-out books (OSIS ids): Genesis, Psalms, Proverbs, Luke, Romans, Revelation
TEST_BOOKS = ("Gen", "Ps", "Prov", "Luke", "Rom", "Rev")
#: Exodus, Job, Isaiah, Matthew, Acts, Hebrews
DEV_BOOKS = ("Exod", "Job", "Isa", "Matt", "Acts", "Heb")
REMOVAL_REASONS = ("empty", "no_letters", "identical", "versification", "unpaired", "duplicate")

_CHAPTER_RE = re.compile(r'<chapter\b[^>]*\bsID="[^"]*"[^>]*>')
_OSIS_ID_RE = re.compile(r'\bosisID="([^"]+)"')
_BOOK_DIV_RE = re.compile(r'<div\b[^>]*\btype="book"[^>]*>')
_NOTE_RE = re.compile(r"<note\b[^>]*/>|<note\b.*?</note>", re.S)
#: headings added by the editors (a canonical title, a psalm's superscription, is text and stays)
_TITLE_RE = re.compile(r'<title\b(?![^>]*canonical="true")[^>]*/>|<title\b(?![^>]*canonical="true")[^>]*>.*?</title>',
                       re.S)
_TAG_RE = re.compile(r"<[^<>]*>")
#: a space a removed tag left before closing punctuation or after an opening mark
_SPACE_BEFORE_RE = re.compile(r"\s+([,.;:!?)\]\u2019\u201d\u00bb])")
_SPACE_AFTER_RE = re.compile(r"([(\[\u2018\u201c\u00ab\u00bf\u00a1])\s+")


class Verse(NamedTuple):
    """One verse slot of a module: its id (``Gen.1.1``), book, chapter, verse number and OSIS text."""

    id: str
    book: str
    chapter: int
    verse: int
    osis: str


def split_of(book: str) -> str:
    """The split of a book (OSIS id): :data:`TEST_BOOKS` test, :data:`DEV_BOOKS` dev, any other train."""
    return "test" if book in TEST_BOOKS else "dev" if book in DEV_BOOKS else "train"


def read_conf(path: Path) -> dict[str, str]:
    """The ``KEY=value`` entries of a SWORD ``.conf`` file (the first of a repeated key; comments skipped)."""
    conf: dict[str, str] = {}
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise BisentError(f"{path}: cannot read the SWORD module configuration ({e})") from None
    for line in text.splitlines():
        if line.startswith("[") and line.rstrip().endswith("]") and "module" not in conf:
            conf["module"] = line.strip()[1:-1]
        key, eq, value = line.partition("=")
        if eq and not line.startswith("#") and key.strip() not in conf:
            conf[key.strip()] = value.strip()
    return conf


def read_ztext_slots(folder: Path, testament: str, name: str = "module") -> list[str]:
    """The text of every verse slot of one testament (``ot`` or ``nt``) of a zText module folder, in order."""
    folder = Path(folder)
    try:
        bzs, bzv, bzz = ((folder / f"{testament}.{ext}").read_bytes() for ext in ("bzs", "bzv", "bzz"))
    except FileNotFoundError:
        return []                                          # a module without this testament
    except OSError as e:
        raise BisentError(f"{name}: cannot read {testament}.bzs/.bzv/.bzz ({e})") from None
    if len(bzs) % 12 or len(bzv) % 10:
        raise BisentError(f"{name}: {testament}.bzs or {testament}.bzv is truncated (not whole 12/10-byte records)")
    blocks = [struct.unpack_from("<III", bzs, i) for i in range(0, len(bzs), 12)]
    cache: dict[int, bytes] = {}
    slots = []
    for n in range(len(bzv) // 10):
        b, off, size = struct.unpack_from("<IIH", bzv, n * 10)
        if size == 0:
            slots.append("")
            continue
        if b >= len(blocks):
            raise BisentError(f"{name}: {testament}.bzv slot {n} names block {b}, but there are {len(blocks)}")
        if b not in cache:
            start, csize, _ = blocks[b]
            try:
                cache = {b: zlib.decompress(bzz[start:start + csize])}   # slots come block by block: keep one
            except zlib.error as e:
                raise BisentError(f"{name}: {testament}.bzz block {b} does not decompress ({e})") from None
        data = cache[b]
        if off + size > len(data):
            raise BisentError(f"{name}: {testament}.bzv slot {n} runs past the end of block {b}")
        slots.append(data[off:off + size].decode("utf-8", "replace"))
    return slots


def slot_verses(slots: list[str], name: str = "module", testament: str = "ot") -> list[Verse]:
    """The verses of one testament's slots, their ids read from the chapter start tags (module docstring)."""
    marks = []                                             # (slot, book, chapter) of each chapter heading
    for n, text in enumerate(slots):
        tags = _CHAPTER_RE.findall(text)
        if len(tags) != 1:      # a heading heads one chapter; several: a book outside the versification, put
            continue            # whole into the next heading slot by osis2mod (WEB's Greek Daniel)
        for tag in tags:
            m = _OSIS_ID_RE.search(tag)
            book, _, chapter = (m.group(1) if m else "").rpartition(".")
            if not book or not chapter.isdigit():
                raise BisentError(f"{name}: {testament} slot {n}: chapter tag without a Book.N osisID: {tag[:80]}")
            marks.append((n, book, int(chapter)))
    verses, seen_books = [], []
    for i, (n, book, chapter) in enumerate(marks):
        if not seen_books or seen_books[-1] != book:
            if book in seen_books:
                raise BisentError(f"{name}: {testament} slot {n}: book {book} starts a second time")
            seen_books.append(book)
            expected = 1
        if chapter != expected:
            raise BisentError(f"{name}: {testament} slot {n}: {book} chapter {chapter} where chapter {expected} "
                              "was expected")
        expected += 1
        if i + 1 < len(marks):
            end = marks[i + 1][0] - (marks[i + 1][1] != book)   # the next book's heading slot is not a verse
        else:
            end = len(slots)
        for v, s in enumerate(range(n + 1, end), 1):
            for div in _BOOK_DIV_RE.findall(slots[s]):
                other = _OSIS_ID_RE.search(div)
                if other and other.group(1) != book:
                    raise BisentError(f"{name}: {testament} slot {s}: book {other.group(1)} starts inside "
                                      f"{book} {chapter}:{v}")
            verses.append(Verse(f"{book}.{chapter}.{v}", book, chapter, v, slots[s]))
    return verses


def module_verses(root: Path, module: str) -> list[Verse]:
    """Every verse of the zText module ``module`` installed under ``root`` (``usr/share/sword``)."""
    confs = [p for p in sorted((Path(root) / "mods.d").glob("*.conf")) if p.stem.lower() == module.lower()]
    if not confs:
        raise BisentError(f"{module}: no {module}.conf in {Path(root) / 'mods.d'}")
    conf = read_conf(confs[0])
    if conf.get("ModDrv", "").lower() != "ztext":
        raise BisentError(f"{module}: driver {conf.get('ModDrv')!r} is not zText, the one read here")
    if conf.get("CompressType", "ZIP").upper() != "ZIP":
        raise BisentError(f"{module}: compression {conf.get('CompressType')!r} is not ZIP, the one read here")
    folder = Path(root) / conf.get("DataPath", "").lstrip("./")
    verses = [v for t in ("ot", "nt") for v in slot_verses(read_ztext_slots(folder, t, module), module, t)]
    if not verses:
        raise BisentError(f"{module}: no verses found in {folder}")
    return verses


def clean_text(osis: str) -> str:
    """A verse's plain text: notes and headings removed with their content, other tags removed, entities decoded.

    A tag counts as a space (poetry lines, ``<l>``, hold no space between them), and the spaces that leaves before
    closing punctuation (``God ,``) or after an opening mark (``“ Let``) go.
    """
    text = _TAG_RE.sub(" ", _TITLE_RE.sub(" ", _NOTE_RE.sub(" ", osis)))
    text = " ".join(html.unescape(text).replace("\u00b6", " ").split())
    return _SPACE_AFTER_RE.sub(r"\1", _SPACE_BEFORE_RE.sub(r"\1", text))


def pair_verses(src: list[Verse], tgt: list[Verse], removed: dict) -> list[Pair]:
    """Verse pairs of two modules by id, in the source's order (module docstring for what is left out)."""
    def chapter_sizes(verses):
        sizes: dict[tuple[str, int], int] = {}
        for v in verses:
            sizes[(v.book, v.chapter)] = max(sizes.get((v.book, v.chapter), 0), v.verse)
        return sizes

    s_sizes, t_sizes = chapter_sizes(src), chapter_sizes(tgt)
    by_id = {v.id: v for v in tgt}
    pairs = []
    for v in src:
        w = by_id.get(v.id)
        if w is None:
            removed["unpaired"] += 1
            continue
        if s_sizes[(v.book, v.chapter)] != t_sizes[(v.book, v.chapter)]:
            removed["versification"] += 1
            continue
        a, b = clean_text(v.osis), clean_text(w.osis)
        if not a or not b:
            reason = "empty"
        elif not any(c.isalpha() for c in a) or not any(c.isalpha() for c in b):
            reason = "no_letters"
        elif a.casefold() == b.casefold():
            reason = "identical"
        else:
            pairs.append(Pair(v.book, v.id, a, b, split_of(v.book)))
            continue
        removed[reason] += 1
    src_ids = {v.id for v in src}
    removed["unpaired"] += sum(1 for w in tgt if w.id not in src_ids)
    return pairs


def _modules_for(src: str, tgt: str) -> tuple[str, str]:
    key = (src.strip().lower(), tgt.strip().lower())
    if key not in PAIRS:
        known = ", ".join(f"{a}-{b}" for a, b in PAIRS)
        raise BisentError(f"no verse-aligned Bible translation in Debian's packages for {key[0]}-{key[1]}; "
                          f"known: {known}")
    return PAIRS[key]


def _load_module(short: str) -> tuple[list[Verse], str]:
    package, module = MODULES[short][:2]
    folder = fetch_package(package)
    return module_verses(folder / "usr/share/sword", module), package_info(folder)["version"]


def _build(src: str, tgt: str) -> tuple[list[Pair], dict]:
    a, b = _modules_for(src, tgt)
    (sv, s_version), (tv, t_version) = _load_module(a), _load_module(b)
    removed = dict.fromkeys(REMOVAL_REASONS, 0)
    pairs = pair_verses(sv, tv, removed)
    pairs, removed["duplicate"] = one_to_one(pairs)
    stats = {"dataset": "bible", "src": src, "tgt": tgt,
             "packages": {MODULES[a][0]: s_version, MODULES[b][0]: t_version},
             "translations": {lang: f"{MODULES[m][3]} ({MODULES[m][4]}, SWORD module {MODULES[m][1]}, "
                                    "public domain)" for lang, m in ((src, a), (tgt, b))},
             "split_rule": f"by book: test {', '.join(TEST_BOOKS)}; dev {', '.join(DEV_BOOKS)}; every other book "
                           "train", "removed": removed}
    return pairs, stats


def build(src: str = "en", tgt: str = "es", *, force: bool = False) -> Path:
    """Fetch, read and cache the ``src``-``tgt`` verse pairs (unless cached); return the cache folder."""
    _modules_for(src, tgt)
    src, tgt = src.strip().lower(), tgt.strip().lower()
    return cached_pairs("bible", src, tgt, lambda: _build(src, tgt), format_version=FORMAT_VERSION, force=force)


def load_pairs(src: str = "en", tgt: str = "es", split: str | None = None) -> list[Pair]:
    """Verse pairs (doc = book, id = verse id), all splits or one, building them on first use."""
    return read_pairs(build(src, tgt), split)


def write_dataset(src: str, tgt: str, out_dir) -> dict:
    """Write ``train/dev/test.tsv`` (book, verse id, src, tgt) and ``stats.json`` to ``out_dir``; return the stats."""
    return write_pairs_dataset(build(src, tgt), out_dir)

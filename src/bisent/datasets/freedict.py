"""Short phrases: English -> other-language pairs from FreeDict dictionaries (``dict-freedict-eng-XXX``).

An out-of-domain benchmark of very short texts. Each Debian package ships a
dictd database (``usr/share/dictd/freedict-eng-XXX.index`` + ``.dict.dz``,
gzip-readable); an entry is a headword line (``word /pronunciation/``), its
translations (one line of ``, ``-separated alternatives, or numbered senses
``1. ...``), notes, cross references and, in the Ding-derived English-German
dictionary, example phrases ``"English phrase"  - translation``.

Taken from each entry: the headword with its first translation (first sense,
first alternative, grammar tags ``<...>`` and labels ``[...]`` removed), id
``hw:N``; and every example phrase with its translation, id ``ex:N:K`` (the
first ``, ``-alternative unless the translation ends like a sentence). Dropped,
counted by reason: pairs identical ignoring case (names), sides without
letters, and repeats (:func:`.pairset.one_to_one`: each English and each
translated text once, held-out splits first). Only eng-deu (from Ding) has
examples; eng-fra/spa/ita are small headword lists (a few thousand entries),
so en-de mixes phrases and sentences while the others are headword pairs.

Split by entry, not by line: blake2b(headword) % 100 < 80 train, < 90 dev,
else test, so a headword's translation and its examples share one split.

**Reverse dictionaries** (``dict-freedict-XXX-eng``, :func:`load_reverse_pairs`)
are training material only, for the general collection (:mod:`.general`): no
benchmark reads them. Each entry's headword (pronunciation ``/.../``, tags
``<...>`` and labels ``[...]`` removed, first ``, ``-alternative) with its
first English translation, turned round to English -> XX; every entry is in
the ``train`` split (the general collection removes every benchmark dev/test
text wherever it occurs). They add what the small eng-fra/spa/ita
dictionaries lack: fra-eng has about 8,500 entries, spa-eng 4,500.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Callable

from ..errors import BisentError
from .debian import fetch_package, package_info
from .libreoffice import Pair
from .pairset import cached_pairs, hash_bucket, one_to_one, read_pairs, write_pairs_dataset

FORMAT_VERSION = 3                # 2: pronunciations and grammar tags anywhere in a headword removed; 3: "// ...//" too
#: ISO 639-1 codes -> FreeDict's ISO 639-3 names of the dictionaries from English.
LANGS = {"af": "afr", "ar": "ara", "bg": "bul", "cs": "ces", "cy": "cym", "da": "dan", "de": "deu", "el": "ell",
         "fi": "fin", "fr": "fra", "ga": "gle", "hi": "hin", "hr": "hrv", "hu": "hun", "id": "ind", "it": "ita",
         "ja": "jpn", "la": "lat", "lt": "lit", "nl": "nld", "no": "nor", "pl": "pol", "pt": "por", "ro": "rom",
         "ru": "rus", "es": "spa", "sr": "srp", "sv": "swe", "sw": "swh", "tr": "tur"}
#: ISO 639-1 codes -> FreeDict's names of the dictionaries *into* English that the general collection reads
REVERSE_LANGS = {"de": "deu", "fr": "fra", "es": "spa", "it": "ita", "nl": "nld", "pt": "por", "pl": "pol",
                 "tr": "tur", "ja": "jpn", "ar": "ara"}
REMOVAL_REASONS = ("no_translation", "no_letters", "identical", "duplicate")

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_EXAMPLE_RE = re.compile(r'^\s+"(.+)"\s+-\s+(.+)$')
_SKIP_RE = re.compile(r"^\s*(?:Note:|see:|Synonym:|Antonym:|\{)")
_TAG_RE = re.compile(r"<[^<>]*>|\[[^\[\]]*\]|\([^()]*\)")
_PRONUNCIATION_RE = re.compile(r"/[^/]*/")
#: in a forward dictionary's headword line: a pronunciation " /swˈɜːl/" after a word (before a tag, a bracket or
#: the end; "he/she" keeps its slash) and grammar tags " <v>", wherever they stand. Until format 2 only a
#: pronunciation at the very end went, so 4 % of eng-deu's headwords and nearly all of eng-pol's, eng-por's and
#: eng-jpn's kept IPA and tags ("swirl /swˈɜːl/ <v>", "abate /əˈbeɪt/ <V>", "able //ə.bl̩// <suffix>").
#: eng-jpn writes //...//, three times with a space after the opening pair ("chide // t͡ʃaɪd//"; kept until format 3);
#: a single slash needs no space after it, so that German alternatives ("by land / by sea") stay.
_HEAD_PRONUNCIATION_RE = re.compile(r"\s+(?://\s*[^/\s][^/]*//|/[^/\s][^/]*/)(?=[\s),;]|$)")
_HEAD_TAG_RE = re.compile(r"\s+<[^<>]*>")


def b64_number(text: str) -> int:
    """A dictd index number (offset or length): base 64, most significant digit first."""
    n = 0
    for c in text:
        d = _B64.find(c)
        if d < 0:
            raise ValueError(f"not a dictd base-64 number: {text!r}")
        n = n * 64 + d
    return n


def read_index(text: str, name: str = "index") -> list[tuple[str, int, int]]:
    """``(headword, offset, length)`` of each distinct entry of a dictd index, by offset; ``00-database`` rows
    skipped."""
    entries = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) < 3:
            raise BisentError(f"{name}:{n}: expected headword, offset and length separated by tabs")
        word = cols[0]
        if word.startswith(("00-database", "00database")):
            continue
        try:
            key = (b64_number(cols[1]), b64_number(cols[2]))
        except ValueError as e:
            raise BisentError(f"{name}:{n}: {e}") from None
        entries.setdefault(key, word)
    return [(word, off, length) for (off, length), word in sorted(entries.items())]


def _first_alternative(text: str) -> str:
    text = " ".join(_TAG_RE.sub(" ", text).split())
    text = re.sub(r"^\d+\.\s*", "", text)
    return text.split(", ")[0].split("; ")[0].strip(" ,;")


def parse_entry(body: str) -> tuple[str, str | None, list[tuple[str, str]]]:
    """``(headword, first translation or None, [(example, translation), ...])`` of one dictd entry."""
    lines = body.splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        return "", None, []
    head = " ".join(_HEAD_TAG_RE.sub("", _HEAD_PRONUNCIATION_RE.sub("", lines[0])).split())
    translation, examples = None, []
    for line in lines[1:]:
        m = _EXAMPLE_RE.match(line)
        if m:
            src, tgt = m.group(1).strip(), " ".join(m.group(2).split())
            examples.append((src, tgt if tgt.endswith((".", "!", "?")) else _first_alternative(tgt)))
        elif translation is None and line.strip() and not _SKIP_RE.match(line):
            translation = _first_alternative(line) or None
    return head, translation, examples


def _reason(src: str, tgt: str | None) -> str | None:
    if not src or not tgt:
        return "no_translation"
    if not any(c.isalpha() for c in src) or not any(c.isalpha() for c in tgt):
        return "no_letters"
    if src.casefold() == tgt.casefold():
        return "identical"
    return None


def split_of(headword: str) -> str:
    """blake2b(headword) % 100: < 80 train, < 90 dev, else test."""
    bucket = hash_bucket(headword)
    return "train" if bucket < 80 else "dev" if bucket < 90 else "test"


def dictionary_pairs(index_text: str, body: bytes, name: str, removed: dict) -> list[Pair]:
    """Headword and example pairs of one dictd database (index text + uncompressed body), in entry order."""
    pairs = []
    for n, (_, off, length) in enumerate(read_index(index_text, f"{name}.index")):
        head, translation, examples = parse_entry(body[off:off + length].decode("utf-8", "replace"))
        if not head:
            continue
        split = split_of(head)
        for k, (src, tgt) in enumerate([(head, translation), *examples]):
            reason = _reason(src, tgt)
            if reason:
                removed[reason] += 1
                continue
            pairs.append(Pair(head, f"hw:{n}" if k == 0 else f"ex:{n}:{k}", src, tgt, split))
    return pairs


def clean_headword(head: str) -> str:
    """A headword without pronunciation, tags and labels: its first ``, ``-alternative."""
    head = _PRONUNCIATION_RE.sub(" ", _TAG_RE.sub(" ", head))
    return " ".join(head.split(", ")[0].split())


def reverse_dictionary_pairs(index_text: str, body: bytes, name: str, removed: dict) -> list[Pair]:
    """English -> XX pairs of one XX -> English dictd database (headwords only), all in the ``train`` split."""
    pairs = []
    for n, (_, off, length) in enumerate(read_index(index_text, f"{name}.index")):
        head, translation, _ = parse_entry(body[off:off + length].decode("utf-8", "replace"))
        head = clean_headword(head)
        if not head:
            continue
        reason = _reason(translation, head)
        if reason:
            removed[reason] += 1
            continue
        pairs.append(Pair(f"rev:{head}", f"rhw:{n}", translation, head, "train"))
    return pairs


def _read_dictd(package: str) -> tuple[str, bytes, str, str]:
    """``(index text, uncompressed body, database name, package version)`` of a FreeDict package, fetched on
    first use."""
    folder = fetch_package(package)
    stem = folder / "usr/share/dictd" / package.removeprefix("dict-")
    try:
        index_text = stem.with_suffix(".index").read_text(encoding="utf-8")
        with gzip.open(stem.with_suffix(".dict.dz")) as f:
            return index_text, f.read(), stem.name, package_info(folder)["version"]
    except (OSError, EOFError) as e:
        raise BisentError(f"{package}: cannot read its dictd database ({e})") from None


def _one_to_one_pairs(package: str, parse: Callable) -> tuple[list[Pair], dict, str]:
    """``(pairs, removal counts, package version)``: a FreeDict package's pairs by ``parse``, each text once."""
    index_text, body, name, version = _read_dictd(package)
    removed = dict.fromkeys(REMOVAL_REASONS, 0)
    pairs = parse(index_text, body, name, removed)
    pairs, removed["duplicate"] = one_to_one(pairs)
    return pairs, removed, version


def package_for(lang: str) -> str:
    code = lang.strip().lower()
    if code not in LANGS:
        raise BisentError(f"no FreeDict English dictionary known for {lang!r}; known: {', '.join(sorted(LANGS))}")
    return f"dict-freedict-eng-{LANGS[code]}"


def _build(tgt: str) -> tuple[list[Pair], dict]:
    package = package_for(tgt)
    pairs, removed, version = _one_to_one_pairs(package, dictionary_pairs)
    stats = {"dataset": "freedict", "src": "en", "tgt": tgt,
             "packages": {package: version},
             "split_rule": "blake2b(headword, 8 bytes) % 100: <80 train, <90 dev, else test",
             "examples": sum(p.pid.startswith("ex:") for p in pairs),
             "headwords": sum(p.pid.startswith("hw:") for p in pairs), "removed": removed}
    return pairs, stats


def build(src: str = "en", tgt: str = "de", *, force: bool = False) -> Path:
    """Fetch, parse and cache the ``en``-``tgt`` dictionary pairs (unless cached); return the cache folder."""
    if src.lower() != "en":
        raise BisentError(f"FreeDict dictionaries are read from English: the source must be en, not {src!r}")
    tgt = tgt.strip().lower()
    package_for(tgt)
    return cached_pairs("freedict", "en", tgt, lambda: _build(tgt), format_version=FORMAT_VERSION, force=force)


def load_pairs(src: str = "en", tgt: str = "de", split: str | None = None) -> list[Pair]:
    """Dictionary pairs (doc = headword), all splits or one, building them on first use."""
    return read_pairs(build(src, tgt), split)


def write_dataset(src: str, tgt: str, out_dir) -> dict:
    """Write ``train/dev/test.tsv`` (headword, id, en, tgt) and ``stats.json`` to ``out_dir``; return the stats."""
    return write_pairs_dataset(build(src, tgt), out_dir)


def _build_reverse(tgt: str) -> tuple[list[Pair], dict]:
    package = f"dict-freedict-{REVERSE_LANGS[tgt]}-eng"
    pairs, removed, version = _one_to_one_pairs(package, reverse_dictionary_pairs)
    stats = {"dataset": "freedict-reverse", "src": "en", "tgt": tgt,
             "packages": {package: version},
             "split_rule": "training material only: every entry train", "removed": removed}
    return pairs, stats


def load_reverse_pairs(src: str = "en", tgt: str = "fr", split: str | None = None, *,
                       force: bool = False) -> list[Pair]:
    """English -> ``tgt`` headword pairs from FreeDict's ``tgt`` -> English dictionary (all ``train``), cached."""
    tgt = tgt.strip().lower()
    if src.lower() != "en" or tgt not in REVERSE_LANGS:
        raise BisentError(f"no FreeDict dictionary into English read for {tgt!r}; known: {', '.join(REVERSE_LANGS)}")
    folder = cached_pairs("freedict-reverse", "en", tgt, lambda: _build_reverse(tgt), format_version=FORMAT_VERSION,
                          force=force)
    return read_pairs(folder, split)

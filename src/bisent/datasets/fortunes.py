"""Everyday monolingual text: the fortune cookies of Debian's ``fortunes-XX`` packages, for distillation only.

Sayings, jokes, quotations and short anecdotes, the nearest Debian ships to
everyday language (``fortunes-min`` for English, ``fortunes-de``, ``-es``,
``-it``, ``-pl``, ``-ru``, ``-br`` for Portuguese and ``-zh``, whose files are
classical poems more than everyday Chinese). Training material only: no
benchmark is built from them. ``bisent data fortunes`` writes one
``mono.XX.txt`` a language (one cookie a line), the monolingual files that
``bisent train --mono`` reads beside a collection of ``bisent data general``.

A package's files under ``usr/share/games/fortunes`` hold cookies separated by
lines of ``%`` (``.dat`` files are strfile's indexes; ``.u8`` names link to the
same files, read once; ``off/`` folders, the offensive section fortune keeps
rot13-encoded, are not read). From each cookie: attribution lines (``-- Author``)
removed, terminal escapes and overstriking removed, lines joined. Left out,
counted by reason: files that are not UTF-8, cookies of fewer than
:data:`MIN_WORDS` words (12 characters in Chinese) or more than :data:`MAX_CHARS`
characters, cookies that are mostly not letters (ASCII art, code), repeats, and
in English and Spanish every cookie sharing a run of :data:`OVERLAP_WORDS` words
with a dev or test verse of the Bible set (:mod:`.bible`), so that a quoted
verse never trains a student that set then measures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import BisentError
from ..io import atomic_dir
from .debian import fetch_package, package_info
from .pairset import hash_bucket

#: language -> Debian package
PACKAGES = {"en": "fortunes-min", "de": "fortunes-de", "es": "fortunes-es", "it": "fortunes-it", "pl": "fortunes-pl",
            "ru": "fortunes-ru", "pt": "fortunes-br", "zh-cn": "fortunes-zh"}
MAX_CHARS = 400
MIN_WORDS = 3
MIN_CHARS_UNSPACED = 12
MIN_LETTER_SHARE = 0.6
OVERLAP_WORDS = 8
REMOVAL_REASONS = ("not_utf8_files", "too_short", "too_long", "few_letters", "bible_overlap", "duplicate")
_ATTRIBUTION_RE = re.compile(r"^\s*(?:--|―|—)\s*\S")
_ESCAPE_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|.\x08")


def split_cookies(text: str) -> list[str]:
    """The cookies of one fortune file, each on one line (attributions, escapes and overstriking removed)."""
    out, lines = [], []
    for line in _ESCAPE_RE.sub("", text).replace("\r", "").split("\n") + ["%"]:
        if line.strip() == "%":
            cookie = " ".join(" ".join(ln for ln in lines if not _ATTRIBUTION_RE.match(ln)).split())
            if cookie:
                out.append(cookie)
            lines = []
        else:
            lines.append(line)
    return out


def drop_reason(cookie: str, lang: str) -> str | None:
    """Why a cookie is left out (:data:`REMOVAL_REASONS`), or None."""
    if len(cookie) > MAX_CHARS:
        return "too_long"
    if (len(cookie) < MIN_CHARS_UNSPACED) if lang in ("ja", "ko", "zh-cn") else len(cookie.split()) < MIN_WORDS:
        return "too_short"
    chars = [c for c in cookie if not c.isspace()]
    if sum(c.isalpha() for c in chars) < MIN_LETTER_SHARE * len(chars):
        return "few_letters"
    return None


def word_runs(text: str, n: int = OVERLAP_WORDS) -> set[tuple[str, ...]]:
    """The runs of ``n`` consecutive words of ``text`` (casefolded, punctuation stripped)."""
    words = [w for w in (re.sub(r"\W+", "", w) for w in text.casefold().split()) if w]
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def held_out_runs(lang: str) -> set[tuple[str, ...]]:
    """The word runs of the Bible set's dev and test verses in ``lang`` (none for a language the set lacks)."""
    from . import bible

    runs: set[tuple[str, ...]] = set()
    for (src, tgt) in bible.PAIRS:
        if lang in (src, tgt):
            for split in ("dev", "test"):
                for p in bible.load_pairs(src, tgt, split):
                    runs |= word_runs(p.src if lang == src else p.tgt)
    return runs


def package_cookies(folder: Path, lang: str, removed: dict, held_out: set | None = None) -> list[str]:
    """The kept cookies of one unpacked package, in a fixed order (a hash of the text), each once."""
    root = Path(folder) / "usr/share/games/fortunes"
    files = sorted({p.resolve() for p in root.rglob("*") if p.is_file() and p.suffix != ".dat"
                    and "off" not in p.relative_to(root).parts[:-1]}) if root.is_dir() else []
    seen, kept = set(), []
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            removed["not_utf8_files"] += 1
            continue
        for cookie in split_cookies(text):
            reason = drop_reason(cookie, lang)
            if reason is None and cookie.casefold() in seen:
                reason = "duplicate"
            if reason is None and held_out and word_runs(cookie) & held_out:
                reason = "bible_overlap"
            if reason:
                removed[reason] += 1
                continue
            seen.add(cookie.casefold())
            kept.append(cookie)
    return sorted(kept, key=lambda c: (hash_bucket(c, 1 << 62), c))


def write_fortunes(out_dir, langs: tuple[str, ...]) -> dict:
    """Write ``mono.XX.txt`` for each language and ``stats.json`` (packages, cookies, removals) to ``out_dir``."""
    unknown = [x for x in langs if x not in PACKAGES]
    if unknown or not langs:
        raise BisentError(f"no fortunes package known for {', '.join(unknown) or 'no language'}; known: "
                          f"{', '.join(PACKAGES)}")
    stats = {"dataset": "fortunes", "use": "training text only (monolingual); no benchmark reads it",
             "languages": {}}
    texts = {}
    for lang in langs:
        folder = fetch_package(PACKAGES[lang])
        removed = dict.fromkeys(REMOVAL_REASONS, 0)
        texts[lang] = package_cookies(folder, lang, removed, held_out_runs(lang))
        if not texts[lang]:
            raise BisentError(f"{PACKAGES[lang]}: no cookie survived the filters")
        stats["languages"][lang] = {"package": PACKAGES[lang], "version": package_info(folder)["version"],
                                    "cookies": len(texts[lang]), "removed": removed}
    names = frozenset({f"mono.{x}.txt" for x in PACKAGES} | {"stats.json"})     # a previous output may be replaced
    with atomic_dir(Path(out_dir), replace_names=names) as tmp:
        for lang, cookies in texts.items():
            (tmp / f"mono.{lang}.txt").write_text("".join(c + "\n" for c in cookies), encoding="utf-8")
        (tmp / "stats.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stats

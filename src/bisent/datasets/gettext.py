"""UI messages: English msgid -> translated msgstr from the gettext catalogs (.mo) of Debian packages.

An out-of-domain benchmark (short, terse program messages, not help prose)
with exact gold: a catalog's msgstr is the translation of its msgid.
Each package of :data:`PACKAGES` is fetched at run time (``apt-get download``)
and its ``usr/share/locale/LANG/LC_MESSAGES/*.mo`` files are read with
:func:`read_mo` (the binary format, standard library only).

Kept: singular messages with a translation. Dropped, counted by reason:
the header (empty msgid), plural forms (msgid with a plural), untranslated
(empty msgstr or msgstr = msgid), format-only strings (nothing but
printf/brace directives, punctuation and single letters once the directives
are removed), too short (English side < :data:`MIN_WORDS` words or
< :data:`MIN_CHARS` characters; the target may be one compound word), too long (> :data:`MAX_CHARS`). Fuzzy entries
never reach a .mo: ``msgfmt`` leaves them out unless ``--use-fuzzy``, which
Debian builds do not use. Message context (``msgctxt``) is stripped; white
space (multi-line ``--help`` texts) is collapsed to single spaces.

Split by package, not by message: packages are ranked by a hash of their name
and every 7th (rank % 7 == 0) is test, the next (== 1) dev, the rest train,
whatever the language. Deduplication: :func:`.pairset.one_to_one`, so a
message shared by several packages (gnulib's "memory exhausted", "write error")
is kept once, in the held-out split if any of its packages is held out.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from ..errors import BisentError
from ..progress import progress_bar
from .debian import fetch_package, package_info
from .libreoffice import Pair
from .pairset import cached_pairs, hash_bucket, one_to_one, read_pairs, write_pairs_dataset

FORMAT_VERSION = 2
#: Debian packages whose own .deb (or -l10n/-locales companion) ships translated catalogs; fixed order.
PACKAGES = ("apt", "bash", "coreutils", "cpio", "debconf-i18n", "diffutils", "dpkg", "e2fsprogs-l10n", "findutils",
            "gawk", "gettext-base", "gnupg-l10n", "grep", "nano", "sed", "tar", "util-linux-locales", "wget")
#: Catalogs of toolkits and large applications that no benchmark reads, training text only (the general
#: collection's ``ui-apps`` source): not gnome-shell, nautilus or gnome-control-center, whose UI the GNOME help
#: test pages describe, nor the GNOME applications whose help the document benchmarks pair (docsets.GNOME_APPS).
APP_PACKAGES = ("binutils-common", "evolution-data-server-common", "gcc-12-locales", "gimp-data", "git",
                "gnumeric-common", "gramps", "grub-common", "inkscape", "libglib2.0-data", "libgtk-3-common",
                "libgtk-4-common", "locales", "vlc-l10n")
MIN_WORDS = 2
MIN_CHARS = 10
MAX_CHARS = 1000
REMOVAL_REASONS = ("header", "plural", "untranslated", "format_only", "too_short", "too_long", "duplicate")

_MAGIC = {0x950412DE: "<", 0xDE120495: ">"}
# printf directives (%s, %-10.3lu, %1$s, %%), brace fields ({0}, {name}), shell-style ${var}
_DIRECTIVE_RE = re.compile(r"%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[a-zA-Z%]"
                           r"|\{[^{}\s]*\}|\$\{[^{}]*\}|<[a-zA-Z_-]+>")
_WORD_RE = re.compile(r"[^\W\d_]{2,}")


def read_mo(data: bytes, name: str = "catalog") -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Parse a compiled gettext catalog: ``(header fields, [(msgid, msgstr), ...])`` in file order.

    Raw entries are returned (plural ids keep their ``\\0``, contexts their
    ``\\4``); the charset of the header decodes the strings (UTF-8 if none).
    A truncated or foreign file is a one-line :class:`BisentError` naming ``name``.
    """
    if len(data) < 28 or struct.unpack("<I", data[:4])[0] not in _MAGIC:
        raise BisentError(f"{name}: not a gettext .mo file (bad magic number)")
    end = _MAGIC[struct.unpack("<I", data[:4])[0]]
    _, n, orig_at, trans_at = struct.unpack(end + "4I", data[4:20])
    raw = []
    try:
        for i in range(n):
            lo, oo = struct.unpack(end + "2I", data[orig_at + 8 * i: orig_at + 8 * i + 8])
            lt, ot = struct.unpack(end + "2I", data[trans_at + 8 * i: trans_at + 8 * i + 8])
            if oo + lo > len(data) or ot + lt > len(data):
                raise struct.error("string beyond the end of the file")
            raw.append((data[oo:oo + lo], data[ot:ot + lt]))
    except struct.error as e:
        raise BisentError(f"{name}: truncated or corrupt .mo file ({e})") from None
    header = {}
    for mid, mstr in raw:
        if mid == b"":
            for line in mstr.decode("utf-8", "replace").splitlines():
                key, sep, value = line.partition(":")
                if sep:
                    header[key.strip().lower()] = value.strip()
    charset = re.search(r"charset=([\w.-]+)", header.get("content-type", ""))
    enc = charset.group(1) if charset and charset.group(1).upper() != "CHARSET" else "utf-8"
    try:
        entries = [(mid.decode("ascii", "replace"), mstr.decode(enc)) for mid, mstr in raw]
    except (LookupError, UnicodeDecodeError) as e:
        raise BisentError(f"{name}: cannot decode the messages as {enc} ({e})") from None
    return header, entries


def _clean(text: str) -> str:
    return " ".join(text.split())


def drop_reason(msgid: str, msgstr: str) -> str | None:
    """Why the catalog entry is not a benchmark pair (one of :data:`REMOVAL_REASONS`), or None."""
    if msgid == "":
        return "header"
    if "\0" in msgid:
        return "plural"
    msgid = msgid.split("\4", 1)[-1]
    src, tgt = _clean(msgid), _clean(msgstr)
    if not tgt or tgt == src:
        return "untranslated"
    for text in (src, tgt):
        if not _WORD_RE.search(_DIRECTIVE_RE.sub(" ", text)):
            return "format_only"
    if len(src) < MIN_CHARS or len(src.split()) < MIN_WORDS:  # English side only: "write error" -> "Schreibfehler"
        return "too_short"
    if max(len(src), len(tgt)) > MAX_CHARS:
        return "too_long"
    return None


def locale_dir(lang: str) -> str:
    """gettext's folder name for a language code: ``de`` -> ``de``, ``pt-br`` -> ``pt_BR``."""
    code = lang.strip().replace("-", "_")
    base, _, region = code.partition("_")
    return base.lower() + (f"_{region.upper()}" if region else "")


def split_of_packages(packages=PACKAGES) -> dict[str, str]:
    """Package -> split: ranked by a hash of the name, rank % 7 == 0 test, == 1 dev, else train."""
    ranked = sorted(packages, key=lambda p: (hash_bucket(p, 1 << 62), p))
    return {p: "test" if i % 7 == 0 else "dev" if i % 7 == 1 else "train" for i, p in enumerate(ranked)}


def package_pairs(folder: Path, package: str, lang: str, split: str, removed: dict) -> list[Pair]:
    """The kept ``en``-``lang`` pairs of every catalog of an unpacked package (file order), counting drops."""
    pairs = []
    for mo in sorted(folder.glob(f"usr/share/locale/{locale_dir(lang)}/LC_MESSAGES/*.mo")):
        _, entries = read_mo(mo.read_bytes(), f"{package}:{mo.name}")
        for i, (msgid, msgstr) in enumerate(entries):
            reason = drop_reason(msgid, msgstr)
            if reason:
                removed[reason] += 1
                continue
            pairs.append(Pair(package, f"{mo.stem}:{i}", _clean(msgid.split("\4", 1)[-1]), _clean(msgstr), split))
    return pairs


def _build(tgt: str, packages=PACKAGES, held_out: bool = True) -> tuple[list[Pair], dict]:
    """The pairs of ``packages``, split by package (``held_out``) or all ``train`` (no benchmark reads them)."""
    removed = dict.fromkeys(REMOVAL_REASONS, 0)
    splits = split_of_packages(packages) if held_out else dict.fromkeys(packages, "train")
    pairs, versions, without = [], {}, []
    for package in progress_bar(None, sorted(packages), desc=f"gettext en-{tgt}", unit="package"):
        folder = fetch_package(package)
        versions[package] = package_info(folder)["version"]
        got = package_pairs(folder, package, tgt, splits[package], removed)
        pairs += got
        if not got:
            without.append(package)
    pairs, removed["duplicate"] = one_to_one(pairs)
    stats = {"dataset": "gettext", "src": "en", "tgt": tgt, "packages": versions, "packages_without_pairs": without,
             "split_rule": ("packages ranked by blake2b(name); rank % 7 == 0 test, == 1 dev, else train" if held_out
                            else "every package train (training text no benchmark reads)"),
             "package_splits": splits, "removed": removed,
             "filter_rule": (f"drop header, plurals, untranslated, format-only, English shorter than {MIN_CHARS} "
                             f"chars or {MIN_WORDS} words, longer than {MAX_CHARS} chars; each source and target text "
                             "once (test, dev, then train first)")}
    return pairs, stats


def _target(src: str, tgt: str) -> str:
    """``tgt`` normalised; a one-line error unless ``src`` is English and ``tgt`` another language."""
    if src.lower() != "en":
        raise BisentError(f"gettext catalogs translate from English: the source language must be en, not {src!r}")
    tgt = tgt.strip().lower()
    if tgt in ("en", ""):
        raise BisentError(f"gettext target language must differ from en, got {tgt!r}")
    return tgt


def build(src: str = "en", tgt: str = "de", *, force: bool = False) -> Path:
    """Fetch, parse and cache the ``en``-``tgt`` UI-message pairs (unless cached); return the cache folder."""
    tgt = _target(src, tgt)
    return cached_pairs("gettext", "en", tgt, lambda: _build(tgt), format_version=FORMAT_VERSION, force=force)


def load_pairs(src: str = "en", tgt: str = "de", split: str | None = None) -> list[Pair]:
    """UI-message pairs (doc = package), all splits or one, building them on first use."""
    return read_pairs(build(src, tgt), split)


def load_app_pairs(src: str = "en", tgt: str = "de", split: str | None = None) -> list[Pair]:
    """UI-message pairs of :data:`APP_PACKAGES` (doc = package; every one ``train``), built on first use."""
    tgt = _target(src, tgt)
    folder = cached_pairs("gettext-apps", "en", tgt, lambda: _build(tgt, APP_PACKAGES, held_out=False),
                          format_version=FORMAT_VERSION)
    return read_pairs(folder, split)


def write_dataset(src: str, tgt: str, out_dir) -> dict:
    """Write ``train/dev/test.tsv`` (package, id, en, tgt) and ``stats.json`` to ``out_dir``; return the stats."""
    return write_pairs_dataset(build(src, tgt), out_dir)

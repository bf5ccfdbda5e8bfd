"""A general training collection for distilled students: many domains and languages, benchmarks held out.

What it holds (all from Debian packages; those of ``ui-apps`` are the only ones no benchmark builder fetches):

- **bitext** English -> each language, from the *train* split of every pair
  builder: UI messages (``ui``, :mod:`.gettext`, split by package; on request,
  ``--cap ui-apps=N``, up to N more from the catalogs of toolkits and
  applications no benchmark reads, :data:`.gettext.APP_PACKAGES`), help
  paragraphs (``help``, :mod:`.libreoffice`, split by page) and dictionary
  headwords and example phrases (``dict``, :mod:`.freedict`, split by
  headword); on request (``--cap gnome-pairs=N``, off by default, so that
  GNOME help stays a domain the student has seen as monolingual text only,
  the out-of-domain test) up to N GNOME help blocks (``gnome-pairs``,
  :mod:`.gnome_help`, split by page), and (``--cap rdict=N``) up to N
  headwords a language of FreeDict's dictionaries *into* English (``rdict``,
  :func:`.freedict.load_reverse_pairs`: training material that no benchmark
  reads, turned round to English -> XX). Written
  ``train.en-XX.tsv`` (``domain:source``, id, en, XX), the domains
  interleaved.
- **monolingual text** in English and each language (``mono.XX.txt``): the
  paragraphs of GNOME's user help (``gnome``, ``gnome-user-docs``) and of
  manual pages (``man``, ``manpages-XX``; ``manpages-ja``, ``manpages-zh``) whose page falls in the train split
  of :mod:`.docsets` (``blake2b(page id) % 100 < 80``: the pages the document
  benchmarks hold out are never read here, and a paragraph that also occurs
  on a held-out page, such as shared boilerplate, is left out too).
- **word lists** in English and each language (``words.XX.txt``, ``words``):
  the most frequent words of the ``wordfreq`` package's lists (shipped in
  its wheel, pinned), most frequent first, for the student's lexical memory
  of short texts (training reads a ``words.*`` file as a stream of its own).
  A word is kept if it has a letter and no digit (at least 2 characters
  outside Chinese, Japanese and Korean), and is left out if it matches a
  held-out text below case-insensitively (the student lowercases, so a test
  headword ``Haus`` is held out as ``haus`` too). ``word_lists="as-listed"``
  (``--word-lists as-listed``) keeps such words, counted, as wordfreq lists
  them: the student then knows a language's frequent words the way a model a
  user ships should, and the single-word test items among them (a third of
  the French dictionary test headwords are among its 8,000 most frequent
  words) are no longer unseen as monolingual text; never their translation.

Held out, besides the split rules: every text (either side) of the dev and
test splits of the ``libreoffice``, ``gettext``, ``gnome`` and ``dict`` sets of every
language in the collection is removed wherever it occurs (a UI message that
is also a help paragraph, a man page paragraph that is a test message), and
counted; from the reverse dictionaries, another source of the same words,
in any case as well. Caps per language and domain keep the teacher's work bounded
(sentences chosen by a hash of their source and id, so the English side of
the help and dictionary pairs is largely the same across languages and the
teacher embeds it once); every UI, help and dictionary pair of the train splits
is taken by default. Deterministic: the same
packages give the same bytes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

from ..errors import BisentError
from ..io import atomic_dir
from ..progress import progress_bar
from .libreoffice import Pair
from .pairset import hash_bucket

#: use-m3's languages other than English (Thai has no help, catalogs or dictionary here)
LANGS = ("de", "fr", "es", "it", "nl", "pt", "pl", "ru", "tr", "ja", "ko", "zh-cn", "ar")
#: languages of each bitext domain (where Debian ships the source)
DOMAIN_LANGS = {"ui": LANGS, "ui-apps": LANGS,
                "help": ("de", "fr", "es", "it", "nl", "pt", "pl", "ru", "tr", "ja", "ko", "zh-cn"),
                "dict": ("de", "fr", "es", "it", "nl", "pt", "pl", "ru", "tr", "ja", "ar"),
                "rdict": ("de", "fr", "es", "it", "nl", "pt", "pl", "tr", "ja", "ar"),
                "gnome-pairs": ("de", "fr", "es", "it", "nl", "pt", "pl", "ru", "tr", "ja", "ko", "zh-cn")}
BENCHMARK_DOMAINS = ("ui", "help", "dict", "gnome-pairs")   # the bitext domains whose dev/test splits are benchmarks
#: per language: most pairs kept per bitext domain, most paragraphs per monolingual source. ``dict``: every
#: train entry (213,663 en-de, 40,164 en-ar, ... in the Debian build); at 3,000 a language the student stayed
#: 24-25 points behind use-m3 on en-de dictionary entries, with all of them it is ahead (README).
#: ``ui`` and ``help``: every train pair too (rather than 6,000 and 4,000): on a GPU, the
#: recipe from scratch for the same 6.25 minutes on both collections (the larger one also with every GNOME
#: help pair), the student of the larger one made fewer errors than use-m3 on all three pairs' LibreOffice
#: help test sets (4.6 / 4.3 % en-de against 5.0 / 4.4) where the other did not (5.5 / 5.2); the recipe on
#: the 2 cores with them (no GNOME pairs, 2,176 steps) 3.9 / 3.9. The English side of help pairs is shared
#: between languages: 17,564 more texts for the teacher. ``gnome-pairs`` (GNOME help blocks) is off by default:
#: GNOME help is the out-of-domain test.
#: ``rdict`` (dictionaries into English) is off by default: with 40,000 a language and 30,000 words a language
#: instead of 8,000 the recipe's student was no closer to use-m3 on French and Spanish headwords and ran 18 %
#: fewer steps in the same time (README). ``0``: none (``rdict``, ``gnome-pairs``, ``words``).
#: ``ui-apps`` (UI messages of toolkits and applications no benchmark reads, :data:`.gettext.APP_PACKAGES`) is
#: off by default until measured.
CAPS = {"ui": 1_000_000, "ui-apps": 0, "help": 1_000_000, "dict": 1_000_000, "rdict": 0, "gnome-pairs": 0,
        "gnome": 3000, "man": 2000, "words": 8000}
OPTIONAL = ("ui-apps", "rdict", "gnome-pairs", "words")    # sources a cap of 0 turns off
#: ``strict``: word-list entries equal to a held-out text are left out; ``as-listed``: kept (and counted)
WORD_LISTS = ("strict", "as-listed")
MAX_CHARS = 400                  # longer monolingual paragraphs are left out (the teacher's cost, not sentences)
MIN_WORDS = 3                    # ... and shorter ones (headings), unless written without spaces (CJK):
MIN_CHARS_UNSPACED = 12
_OUTPUT_NAME = re.compile(r"train\.en-[\w-]+\.tsv|(mono|words)\.[\w-]+\.txt|stats\.json")
WORDFREQ_LANG = {"zh-cn": "zh"}      # wordfreq's code where ours differs
_UNSPACED = ("ja", "ko", "zh-cn")   # single-character words are words here


def cap_of(caps: dict, source: str, lang: str) -> int:
    """The cap of ``source`` for ``lang``: ``caps["SOURCE:LANG"]`` where given (a per-language cap, such as
    ``ui-apps:zh-cn``), else ``caps[SOURCE]``."""
    return caps.get(f"{source}:{lang}", caps[source])


def _loader(domain: str) -> Callable[..., list[Pair]]:
    from . import domains

    if domain == "rdict":
        from .freedict import load_reverse_pairs
        return load_reverse_pairs
    if domain == "ui-apps":
        from .gettext import load_app_pairs
        return load_app_pairs
    name = {"ui": "gettext", "help": "libreoffice", "dict": "dict", "gnome-pairs": "gnome"}[domain]
    return lambda src, tgt, split=None: domains.load_domain_pairs(name, src, tgt, split)


def held_out_texts(langs: tuple[str, ...], loader=_loader) -> set[str]:
    """Every text of the dev and test splits of every benchmark domain in ``langs`` (both sides)."""
    out: set[str] = set()
    for domain in BENCHMARK_DOMAINS:
        for lang in (x for x in langs if x in DOMAIN_LANGS[domain]):
            for split in ("dev", "test"):
                for p in loader(domain)("en", lang, split):
                    out.update((p.src, p.tgt))
    return out


def _ranked(items: list, key: Callable) -> list:
    """``items`` in a fixed pseudo-random order (a hash of ``key(item)``), ties by the key."""
    return sorted(items, key=lambda x: (hash_bucket(key(x), 1 << 62), key(x)))


def bitext_rows(domain: str, lang: str, cap: int, held: set[str], removed: dict, loader=_loader,
                held_folded: frozenset[str] | set[str] = frozenset()) -> list[tuple]:
    """Up to ``cap`` train pairs of one domain and language as ``(domain:doc, id, en, lang)`` rows; a pair with
    a text in ``held`` (or, casefolded, in ``held_folded``) is left out."""
    rows, seen = [], set()
    for p in _ranked(loader(domain)("en", lang, "train"), lambda p: f"{p.doc}\x00{p.pid}"):
        if p.src in held or p.tgt in held or p.src.casefold() in held_folded or p.tgt.casefold() in held_folded:
            removed["held_out"] = removed.get("held_out", 0) + 1
            continue
        if (p.src, p.tgt) in seen:
            continue
        seen.add((p.src, p.tgt))
        rows.append((f"{domain}:{p.doc}", p.pid, p.src, p.tgt))
        if len(rows) >= cap:
            break
    return rows


#: languages whose manual pages Debian translates (manpages-l10n; Japanese and Chinese: docsets.MAN_SOURCES) and
#: that the collection reads
MAN_LANGS = ("en", "de", "fr", "es", "it", "nl", "pl", "ru", "ja", "zh-cn")


def mono_pages(source: str, lang: str) -> dict[str, list[str]]:
    """Pages (id -> paragraphs) of a monolingual source in ``lang``; empty when Debian has none for it."""
    from .docsets import gnome_pages, man_pages

    try:
        if source == "gnome":
            return gnome_pages(lang)
        if source == "man":
            return man_pages(lang) if lang in MAN_LANGS else {}
    except BisentError:
        return {}
    raise BisentError(f"unknown monolingual source {source!r}")


def mono_rows(source: str, lang: str, cap: int, held: set[str], removed: dict, pages=mono_pages) -> list[str]:
    """Up to ``cap`` distinct paragraphs of train-split pages of ``source`` in ``lang``."""
    from .libreoffice import split_of

    cands, held_pages = [], set()
    for pid, paras in pages(source, lang).items():
        if split_of(pid) != "train":
            removed["held_out_pages"] = removed.get("held_out_pages", 0) + 1
            held_pages.update(" ".join(t.split()) for t in paras)         # boilerplate shared with a held-out page
            continue
        cands += [(pid, i, t) for i, t in enumerate(paras)]
    out, seen = [], set()
    for pid, i, t in _ranked(cands, lambda c: f"{c[0]}\x00{c[1]}"):
        t = " ".join(t.split())
        if len(t) > MAX_CHARS or (len(t.split()) < MIN_WORDS and len(t) < MIN_CHARS_UNSPACED):
            continue
        if t in held or t in held_pages:
            removed["held_out"] = removed.get("held_out", 0) + 1
            continue
        if t in seen:
            continue
        seen.add(t)
        out.append(t)
        if len(out) >= cap:
            break
    return out


def top_words(lang: str, n: int) -> list[str]:
    """The ``n`` most frequent words of ``lang`` in wordfreq's lists ('best': the large list where there is
    one), most frequent first; an error naming the install when wordfreq is missing."""
    try:
        import wordfreq
    except ImportError:
        raise BisentError("word lists need the wordfreq package: pip install 'bisent[train]'") from None
    return wordfreq.top_n_list(WORDFREQ_LANG.get(lang, lang), n, wordlist="best")


def word_rows(lang: str, cap: int, held_folded: set[str], removed: dict, words=top_words, *,
              kept: dict | None = None) -> list[str]:
    """Up to ``cap`` of the most frequent words of ``lang`` (with a letter, no digit; held-out texts removed,
    compared case-insensitively: ``held_folded`` holds them casefolded, counted in ``removed["held_out_words"]``;
    given ``kept``, they stay instead, counted in ``kept["held_out_words"]``)."""
    min_len = 1 if lang in _UNSPACED else 2
    out, seen = [], set()
    for w in words(lang, cap * 2 + 1000):                   # room for the words filtered out below
        w = " ".join(w.split())
        if len(w) < min_len or not any(c.isalpha() for c in w) or any(c.isdigit() for c in w) or w in seen:
            continue
        seen.add(w)
        if w.casefold() in held_folded:
            counts = removed if kept is None else kept
            counts["held_out_words"] = counts.get("held_out_words", 0) + 1
            if kept is None:
                continue
        out.append(w)
        if len(out) >= cap:
            break
    return out


def file_lang(lang: str) -> str:
    """The language code in file names, one training reads from the name (``zh-cn`` -> ``zh``)."""
    return {"zh-cn": "zh"}.get(lang, lang)


def _interleave(groups: list[list]) -> list:
    """Round-robin over ``groups`` (domains mixed in file order, so a capped read still sees all of them)."""
    out, i = [], 0
    while any(i < len(g) for g in groups):
        out += [g[i] for g in groups if i < len(g)]
        i += 1
    return out


def _wordfreq_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("wordfreq")
    except PackageNotFoundError:
        return "(not installed)"


def write_general(out_dir, langs: tuple[str, ...] = LANGS, caps: dict | None = None, *,
                  loader=_loader, pages=mono_pages, words=top_words, word_lists: str = "strict") -> dict:
    """Write ``train.en-XX.tsv``, ``mono.XX.txt``, ``words.XX.txt`` and ``stats.json`` to ``out_dir``; return
    the stats. ``caps``: ``{SOURCE: N}`` for every language, ``{"SOURCE:LANG": N}`` for one (it wins);
    ``caps["words"] == 0`` writes no word lists; ``word_lists``: ``"strict"`` (held-out texts left
    out of them) or ``"as-listed"`` (kept, counted as ``kept["held_out_words"]``)."""
    if word_lists not in WORD_LISTS:
        raise BisentError(f"general collection: word_lists {word_lists!r}; choose one of {', '.join(WORD_LISTS)}")
    bad = [k for k in (caps or {}) if k.partition(":")[0] not in CAPS]
    if bad:
        raise BisentError(f"general collection: unknown cap {bad[0]!r}; sources: {', '.join(CAPS)} (SOURCE or "
                          "SOURCE:LANG)")
    caps = {**CAPS, **(caps or {})}
    unknown = [x for x in langs if x not in LANGS]
    if unknown:
        raise BisentError(f"general collection: no sources for {', '.join(unknown)}; choose from {', '.join(LANGS)}")
    held = held_out_texts(langs, loader)
    held_folded = {t.casefold() for t in held}
    stats = {"dataset": "general", "languages": {}, "held_out_texts": len(held), "caps": caps,
             "split_rule": "train splits of gettext (by package), libreoffice (by page), dict (by headword) and, "
                           "if asked for, gnome (GNOME help blocks, by page); "
                           "rdict (dictionaries into English) and ui-apps (catalogs no benchmark reads), if "
                           "asked for, whole; "
                           "monolingual pages with docsets' split_of(page id) == train; every dev/test text "
                           "of the gettext, libreoffice, dict and gnome sets removed wherever it occurs (from "
                           + ("the word lists also in another case)" if word_lists == "strict" else
                              "the word lists not: they are as wordfreq lists them, those texts kept and counted)"),
             "word_lists": word_lists,
             "words": "wordfreq " + _wordfreq_version() + ", most frequent first"
                      if any(cap_of(caps, "words", x) for x in ("en", *langs)) else None,
             "removed": {}, "kept": {}}
    files: dict[str, list[str]] = {}
    mono_sources = ("gnome", "man")
    for lang in progress_bar(None, ("en", *langs), desc="general collection", unit="lang"):
        entry = {"bitext": {}, "mono": {}, "words": 0}
        if lang != "en":
            groups = []
            for domain, dl in DOMAIN_LANGS.items():
                cap = cap_of(caps, domain, lang) if lang in dl else 0
                if cap:
                    other_source = domain not in BENCHMARK_DOMAINS     # the same words from elsewhere: any case
                    rows = bitext_rows(domain, lang, cap, held, stats["removed"], loader,
                                       held_folded if other_source else frozenset())
                    entry["bitext"][domain] = len(rows)
                    groups.append(rows)
            files[f"train.en-{file_lang(lang)}.tsv"] = ["\t".join(r) for r in _interleave(groups)]
        mono = []
        for source in mono_sources:
            rows = mono_rows(source, lang, cap_of(caps, source, lang), held, stats["removed"], pages)
            entry["mono"][source] = len(rows)
            mono.append(rows)
        texts = list(dict.fromkeys(_interleave(mono)))
        if texts:
            files[f"mono.{file_lang(lang)}.txt"] = texts
        n_words = cap_of(caps, "words", lang)
        if n_words:
            wl = word_rows(lang, n_words, held_folded, stats["removed"], words,
                           kept=stats["kept"] if word_lists == "as-listed" else None)
            entry["words"] = len(wl)
            if wl:
                files[f"words.{file_lang(lang)}.txt"] = wl
        stats["languages"][lang] = entry
    if not any(name.startswith("train.") and rows for name, rows in files.items()):
        raise BisentError("general collection: no training pairs in any language")
    out_dir = Path(out_dir)
    previous = {p.name for p in out_dir.iterdir() if _OUTPUT_NAME.fullmatch(p.name)} if out_dir.is_dir() else set()
    with atomic_dir(out_dir, replace_names=frozenset(previous | set(files) | {"stats.json"})) as tmp:
        for name, rows in files.items():
            (tmp / name).write_text("".join(r + "\n" for r in rows), encoding="utf-8", newline="\n")
        (tmp / "stats.json").write_text(json.dumps(stats, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stats

"""The word types of a corpus, one file per language, to adapt a distilled student to that corpus's words.

A hashed-n-gram student (:mod:`bisent.models.dan`) embeds a word well only if
it was distilled on it: on dictionary headwords held out of its training it
trails use-m3 by 7-13 points, adapted by 0.3-3 (docs/models/student.md).
A corpus of sentences has far fewer word types than words (LibreOffice help
en-de: 9,181 English types in about 450,000 words), so running the teacher on
its words and continuing the student on them (``bisent train -c
student-general --init STUDENT ... --mono vocab.XX.txt``: a
``vocab XX`` stream beside the collection's) costs a fraction of embedding the
corpus with the teacher. Only single texts go in, never which text translates
which: the teacher's own vectors of the words are the only targets.

A word is a run of letters/digits, joined through an apostrophe or hyphen
(``s'abonner``, ``sous-marin``); words made of digits only are left out. One
surface form is kept per casefolded type (its most frequent one, the first met
on a tie), most frequent first. In Chinese and Japanese, written without
spaces, a run of Han and kana is cut into the words of wordfreq's list for
the language (:func:`segment`: the most probable split under the list's
frequencies), not kept whole.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from ..errors import BisentError

WORD = re.compile(r"\w+(?:['’-]\w+)*")
#: Han and kana (with half-width katakana): the scripts segmented in the languages of UNSPACED
HAN_KANA = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]+")
UNSPACED = frozenset({"zh", "ja"})       # languages (before any "-") segmented, each by its own wordfreq list
MAX_MATCH = 8                            # longest word tried, in characters
LEXICON_SIZE = 200_000                   # wordfreq words read per language
UNKNOWN_LOGP = math.log(1e-9)            # a character that is no listed word


@lru_cache(maxsize=4)
def _lexicon(wordfreq_lang: str) -> dict[str, float]:
    """Han/kana words of wordfreq's list of the language -> log frequency."""
    from wordfreq import get_frequency_dict

    freq = get_frequency_dict(wordfreq_lang)
    top = sorted(freq, key=freq.get, reverse=True)[:LEXICON_SIZE]
    return {w: math.log(freq[w]) for w in top if HAN_KANA.fullmatch(w)}


def segment(run: str, lexicon: dict[str, float]) -> list[str]:
    """Cut a run of Han/kana into the words of ``lexicon`` (up to :data:`MAX_MATCH` characters) whose
    frequencies give the most probable split (a unigram model, by dynamic programming); a character that
    starts no listed word is a word of its own at :data:`UNKNOWN_LOGP`."""
    best = [0.0] + [-math.inf] * len(run)          # best[i]: log probability of the best split of run[:i]
    back = [0] * (len(run) + 1)                    # back[i]: where the last word of that split starts
    for i in range(1, len(run) + 1):
        for j in range(max(0, i - MAX_MATCH), i):
            lp = lexicon.get(run[j:i], UNKNOWN_LOGP if i - j == 1 else None)
            if lp is not None and best[j] + lp > best[i]:
                best[i], back[i] = best[j] + lp, j
    out, i = [], len(run)
    while i:
        out.append(run[back[i]:i])
        i = back[i]
    return out[::-1]


def unspaced(lang: str | None) -> str | None:
    """The wordfreq language whose list segments ``lang``'s Han/kana runs (``zh-cn`` -> ``zh``), else None."""
    base = (lang or "").split("-")[0]
    return base if base in UNSPACED else None


def _plain_words(text: str) -> list[str]:
    return [w for w in WORD.findall(text) if not w.isdigit()]


def words_of(text: str, lang: str | None = None) -> list[str]:
    """The words of ``text`` (digits-only ones left out); in Chinese and Japanese Han/kana runs segmented."""
    words = _plain_words(text)
    wordfreq_lang = unspaced(lang)
    if wordfreq_lang is None or not any(HAN_KANA.search(w) for w in words):
        return words
    lexicon, out = _lexicon(wordfreq_lang), []
    for w in words:
        at = 0
        for m in HAN_KANA.finditer(w):                      # "Windows键盘" -> "Windows", "键盘"
            out += _plain_words(w[at:m.start()]) + segment(m.group(), lexicon)
            at = m.end()
        out += _plain_words(w[at:])
    return out


def word_counts(texts: Iterable[str], lang: str | None = None) -> Counter:
    """Occurrences of every surface word of ``texts`` in ``lang`` (:func:`words_of`)."""
    c: Counter = Counter()
    for t in texts:
        c.update(words_of(t, lang))
    return c


def vocabulary(counts: Counter, *, min_count: int = 1, max_words: int | None = None) -> list[str]:
    """Word types by falling count (of all their case variants), one surface form each: the most frequent.

    ``min_count`` and ``max_words`` apply to the casefolded type's total count.
    """
    total: Counter = Counter()
    form: dict[str, tuple[int, str]] = {}
    for w, n in counts.items():                                  # insertion order: first met first
        key = w.casefold()
        total[key] += n
        if key not in form or n > form[key][0]:
            form[key] = (n, w)
    ranked = sorted(total, key=lambda k: (-total[k], k))
    out = [form[k][1] for k in ranked if total[k] >= min_count]
    return out[:max_words] if max_words else out


def write_vocab(out_dir, texts_by_lang: dict[str, list[str]], *, min_count: int = 1,
                max_words: int | None = None, empty_lines: dict[str, int] | None = None) -> dict:
    """Write ``vocab.XX.txt`` per language and ``stats.json`` (texts, empty input lines left out, tokens,
    types, written) into ``out_dir``.

    Each file is written to a temporary name and renamed into place.
    """
    from ..io import atomic_write

    if min_count < 1 or (max_words is not None and max_words < 1):
        raise BisentError(f"min_count {min_count} and max_words {max_words}: both must be at least 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stats: dict = {"min_count": min_count, "max_words": max_words, "languages": {}}
    for lang in sorted(texts_by_lang):
        counts = word_counts(texts_by_lang[lang], lang)
        words = vocabulary(counts, min_count=min_count, max_words=max_words)
        if not words:
            raise BisentError(f"{lang}: no words in {len(texts_by_lang[lang])} text(s)")
        with atomic_write(out / f"vocab.{lang}.txt") as f:
            f.write("".join(w + "\n" for w in words))
        stats["languages"][lang] = {"texts": len(texts_by_lang[lang]),
                                    "empty_lines": (empty_lines or {}).get(lang, 0), "tokens": sum(counts.values()),
                                    "types": len({w.casefold() for w in counts}), "written": len(words),
                                    "segmented": unspaced(lang) is not None}
    with atomic_write(out / "stats.json") as f:
        f.write(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")
    return stats

"""The word types of a corpus, one file per language, to adapt a distilled student to that corpus's words.

A hashed-n-gram student (:mod:`bisent.models.dan`) embeds a word well only if
it was distilled on it: on dictionary headwords held out of its training it
trails use-m3 by 7-13 points, adapted by 0.3-3 (README, "Vocabulary adaptation").
A corpus of sentences has far fewer word types than words (LibreOffice help
en-de: 9,181 English types in about 450,000 words), so running the teacher on
its words and continuing the student on them (``bisent train --recipe
recipes/student-general.yaml --init STUDENT ... --mono vocab.XX.txt``: a
``vocab XX`` stream beside the collection's) costs a fraction of embedding the
corpus with the teacher. Only single texts go in, never which text translates
which: the teacher's own vectors of the words are the only targets.

A word is a run of letters/digits, joined through an apostrophe or hyphen
(``s'abonner``, ``sous-marin``); words made of digits only are left out. One
surface form is kept per casefolded type (its most frequent one, the first met
on a tie), most frequent first. Scripts written without spaces (ja, zh) give
whole runs between punctuation, not words.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from ..errors import BisentError

WORD = re.compile(r"\w+(?:['’-]\w+)*")


def word_counts(texts: Iterable[str]) -> Counter:
    """Occurrences of every surface word of ``texts`` (digits-only words left out)."""
    c: Counter = Counter()
    for t in texts:
        c.update(w for w in WORD.findall(t) if not w.isdigit())
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
        counts = word_counts(texts_by_lang[lang])
        words = vocabulary(counts, min_count=min_count, max_words=max_words)
        if not words:
            raise BisentError(f"{lang}: no words in {len(texts_by_lang[lang])} text(s)")
        with atomic_write(out / f"vocab.{lang}.txt") as f:
            f.write("".join(w + "\n" for w in words))
        stats["languages"][lang] = {"texts": len(texts_by_lang[lang]),
                                    "empty_lines": (empty_lines or {}).get(lang, 0), "tokens": sum(counts.values()),
                                    "types": len({w.casefold() for w in counts}), "written": len(words)}
    with atomic_write(out / "stats.json") as f:
        f.write(json.dumps(stats, indent=1, ensure_ascii=False) + "\n")
    return stats

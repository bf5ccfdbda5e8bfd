"""A teacher-mined word lexicon: English words paired with their translations by an encoder's own neighbours.

The general collection's word lists (``words.XX.txt``) teach a student each word's teacher vector, one
language at a time. Retrieval of short phrases across languages (dictionary headwords) also needs each
word near its translation; the student gets that only where the teacher's two vectors meet, and a small
error on either side sends a word to a neighbour of its translation. This builder mines, for each
language XX, the English word list against XX's with the teacher (ratio margin, k = 4, both directions'
best agreeing: ``retrieval="intersect"``, as LASER-style lexicon mining does) and writes the pairs as
bitext (``lexicon.en-XX.tsv``, domain ``lexicon``), so the distillation's translation term maps both
words onto the English word's teacher vector and the ranking loss sees them as a pair.

Left out, and counted: pairs whose two words are the same string (case-folded; a hashed-feature student
gives them the same vector anyway), pairs scoring under ``threshold``, and pairs with a word equal to a
benchmark dev/test text (case-folded), the same rule as the collection's other bitext.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..encoders.shards import encode_fp16
from ..errors import BisentError
from ..io import atomic_write, read_lines
from ..mining.retrieval import mine, unique_rows
from ..values import check_number

#: ratio-margin floor of a kept pair (of Italian's 12,706 mutual pairs 7,570 are two different strings,
#: 5,262 of them at 1.03 or more; under it near-misses such as tahiti -> quesiti grow common)
THRESHOLD = 1.03


def read_words(path: Path) -> list[str]:
    """The words of a word list, one a line (:func:`bisent.io.read_lines`: an empty, undecodable or otherwise bad
    line is a one-line error naming the file and line; the builder writes none)."""
    return [ln.text for ln in read_lines(path, allow_empty=False)]


def mine_lexicon(en: list[str], xx: list[str], encoder, lang: str, *, threshold: float = THRESHOLD,
                 held_folded: set[str] | frozenset[str] = frozenset(), counts: dict | None = None,
                 progress: bool | None = None, en_vectors: np.ndarray | None = None) -> list[tuple[float, str, str]]:
    """``(score, english, xx)`` pairs, best first: mutual best neighbours of the two word lists' distinct words
    by ``encoder`` (ratio margin), kept when they score at least ``threshold``, differ (case-folded) and have
    no word in ``held_folded``. ``counts`` gets how many were left out and why, so that every line of ``xx`` is
    accounted for: ``kept`` + ``same`` + ``below_threshold`` + ``held_out`` + ``unpaired`` (no mutual partner)
    + ``repeated`` (a word already on an earlier line) = ``words``. ``en_vectors``: ``encode_fp16`` of
    ``en``'s distinct words (``unique_rows(en)[0]``), when one English list is mined against many."""
    counts = {} if counts is None else counts
    en_d, xx_d = unique_rows(en)[0], unique_rows(xx)[0]
    for key, n in (("words", len(xx)), ("repeated", len(xx) - len(xx_d))):
        counts[key] = counts.get(key, 0) + n
    mutual = []
    if en_d and xx_d:
        ev = encode_fp16(encoder, en_d, "en", progress=progress) if en_vectors is None else en_vectors
        mutual = mine(ev, encode_fp16(encoder, xx_d, lang, progress=progress), retrieval="intersect",
                      progress=progress)
    counts["mutual"] = counts.get("mutual", 0) + len(mutual)
    counts["unpaired"] = counts.get("unpaired", 0) + len(xx_d) - len(mutual)
    out = []
    for p in mutual:
        e, x = en_d[p.src], xx_d[p.tgt]
        why = ("same" if e.casefold() == x.casefold() else "below_threshold" if p.score < threshold
               else "held_out" if e.casefold() in held_folded or x.casefold() in held_folded else None)
        if why:
            counts[why] = counts.get(why, 0) + 1
        else:
            out.append((p.score, e, x))
    counts["kept"] = counts.get("kept", 0) + len(out)
    return out


def write_lexicons(collection, encoder, *, threshold: float = THRESHOLD, held_folded=None,
                   progress: bool | None = None) -> dict:
    """Mine ``lexicon.en-XX.tsv`` for every ``words.XX.txt`` of ``collection`` (a ``bisent data general``
    folder with ``words.en.txt``) and write ``lexicon.json``; each file is written to a temp file and renamed.
    ``held_folded``: case-folded texts to leave out (default: every benchmark dev/test text of the languages)."""
    from ..datasets.general import LANGS, file_lang, held_out_texts

    folder = Path(collection)
    en_path = folder / "words.en.txt"
    if not en_path.is_file():
        raise BisentError(f"{en_path}: no English word list (build the collection with word lists: bisent data "
                          "general)")
    langs = sorted(p.name[len("words."):-len(".txt")] for p in folder.glob("words.*.txt") if p.name != "words.en.txt")
    if not langs:
        raise BisentError(f"{folder}: no words.XX.txt besides English")
    try:
        threshold = check_number("threshold", threshold)
    except ValueError as e:
        raise BisentError(str(e)) from None
    en = unique_rows(read_words(en_path))[0]
    words = {lang: read_words(folder / f"words.{lang}.txt") for lang in langs}   # every input checked ...
    if held_folded is None:                                                     # ... before anything is fetched
        held_folded = {t.casefold() for t in held_out_texts(tuple(x for x in LANGS if file_lang(x) in langs))}
    en_vectors = encode_fp16(encoder, en, "en", progress=progress)                  # once, for every language
    stats = {"encoder": encoder.name, "threshold": threshold, "retrieval": "intersect, ratio margin k=4",
             "languages": {}}
    for lang in langs:
        counts: dict = {}
        pairs = mine_lexicon(en, words.pop(lang), encoder, lang, threshold=threshold,
                             held_folded=held_folded, counts=counts, progress=progress, en_vectors=en_vectors)
        with atomic_write(folder / f"lexicon.en-{lang}.tsv") as f:
            for score, e, x in pairs:
                f.write(f"lexicon:{encoder.name}\t{score:.4f}\t{e}\t{x}\n")
        stats["languages"][lang] = counts
    with atomic_write(folder / "lexicon.json") as f:
        f.write(json.dumps(stats, indent=1) + "\n")
    return stats

"""Untranslated sentences: a prose sentence of the source that stands unchanged in the target.

A translation sometimes leaves a paragraph in the source language (a missing
translation the tool filled with the original). The encoder then finds the
best match of all: the text and its copy, cosine 1. A copy is not a
translation, so the aligner leaves it unaligned (1-0 / 0-1) instead:
:func:`copy_pairs` finds the candidates and :class:`~bisent.align.costs.EmbeddingCosts`
makes every block that holds a sentence and its copy too dear to take.

Only prose counts: text that is the same in every language (a command, a
formula, a line of code, a name) is a faithful "translation" of itself and
stays aligned. Prose here: at least :data:`MIN_WORDS` tokens, at least
:data:`WORD_SHARE` of them words of letters, ending as a sentence ends.
"""

from __future__ import annotations

import re

import numpy as np

#: the fewest tokens of a prose sentence, and the share of them that must be words of letters
MIN_WORDS, WORD_SHARE = 4, 0.8
_WORD = re.compile(r"[(\"'«“]?[^\W\d_]+(?:[-'’][^\W\d_]+)*[)\"'»”]?[,.;:!?]?[)\"'»”]?")


def is_prose(text: str) -> bool:
    """Whether ``text`` reads as a sentence of prose (not code, a formula, a command line or a name)."""
    tokens = text.split()
    words = sum(bool(_WORD.fullmatch(t)) for t in tokens)
    return len(tokens) >= MIN_WORDS and words >= WORD_SHARE * len(tokens) and text.rstrip()[-1:] in ".!?:"


def _key(text: str) -> str:
    return " ".join(text.split()).casefold()


def copy_pairs(src: list[str], tgt: list[str]) -> np.ndarray:
    """``(k, 2)`` int64: every (source index, target index) whose sentences are the same prose text
    (whitespace and case aside), in source order."""
    where: dict[str, list[int]] = {}
    for j, t in enumerate(tgt):
        where.setdefault(_key(t), []).append(j)
    pairs = [(i, j) for i, s in enumerate(src) for j in where.get(_key(s), ()) if is_prose(s)]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)

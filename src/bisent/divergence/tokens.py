"""The paper's minimal tokenisation (punctuation split off, character offsets kept so a cut keeps the
original text) and the length-ratio constraint of its negative examples (section 3.1)."""

from __future__ import annotations

import re
from typing import NamedTuple

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)

#: words per side above which a pair is not scored (the reason says so)
MAX_WORDS = 200


class Words(NamedTuple):
    """A tokenised side: the words and their ``(start, end)`` character offsets in the text."""

    words: list[str]
    spans: list[tuple[int, int]]


def tokenize(text: str) -> Words:
    """Minimal tokenisation (section 4.2): runs of word characters, each other non-space character alone."""
    ms = list(_TOKEN.finditer(text))
    return Words([m.group() for m in ms], [m.span() for m in ms])


def cut_text(text: str, words: Words, start: int, end: int) -> str:
    """The original text of words ``start .. end - 1`` (0-based, end exclusive)."""
    return text[words.spans[start][0]:words.spans[end - 1][1]]


def ratio_ok(n: int, m: int, max_ratio: float = 2.0, short: int = 4, short_ratio: float = 3.0) -> bool:
    """Section 3.1's length constraint: ratio <= 2.0, or <= 3.0 when the shorter side has up to 4 words."""
    lo, hi = min(n, m), max(n, m)
    if lo == 0:
        return False
    return hi / lo <= (short_ratio if lo <= short else max_ratio)

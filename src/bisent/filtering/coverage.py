"""Partial translations without a trained model: every sentence of each side must have a counterpart.

A glued pair (one side holds an extra sentence) and a truncated pair (one
side stops half-way) can score a fair cosine as wholes. This step splits
each side into *units* — its sentences by ``sentencex``, or, for a side of
one sentence of at least ``split_words`` words, its two halves by words —
embeds them with the pipeline's encoder (the embedding cache keeps a second
run cheap) and gives each unit its *coverage*: the best cosine between the
unit and the other side, whole or any of its units. A translated unit finds
its counterpart; an inserted sentence or the lost half of a truncated side
does not. The pair's value is the worst unit's coverage with where it is::

    - {type: coverage, encoder: use-m3, min_coverage: 0.15, mismatch_coverage: 0.3}

Value: ``[coverage, side, unit, mismatch]``: side 0 is the source, 1 the
target; ``unit`` is the 1-based index of the failing unit among that side's
units (the sentence, or 1 / 2 for the first / second half); ``mismatch`` is
how many sentences one side has more than the other. A side of one short
sentence is one unit, the whole side, and a pair of two such sides scores
their cosine. Rejected: coverage below ``min_coverage``, or, when the
sentence counts differ (the mark of a glued pair), below
``mismatch_coverage`` (None: no stricter bound).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..encoders import DEFAULT_ENCODER
from .embedding import EmbeddingStep
from .params import check_number
from .records import Pair
from .steps import register_step


def sentences(text: str, lang: str) -> list[str]:
    """A side's sentences by ``sentencex`` (whitespace normalised)."""
    from sentencex import segment

    text = " ".join(text.split())
    return [s.strip() for s in segment(lang, text) if s.strip()] if text else []


def split_units(text: str, lang: str, split_words: int = 8) -> list[str]:
    """A side's units: its sentences (``sentencex``), or the two word-halves of one long sentence."""
    return units_of(sentences(text, lang), split_words)


def units_of(sents: list[str], split_words: int = 8) -> list[str]:
    """Units from a side's sentences: the sentences, or a single long one's two halves by words."""
    if len(sents) != 1:
        return sents
    text = sents[0]
    words = text.split()
    if split_words and len(words) >= split_words:
        half = (len(words) + 1) // 2
        return [" ".join(words[:half]), " ".join(words[half:])]
    return [text]


@register_step("coverage")
class CoverageStep(EmbeddingStep):
    """The worst unit's best cosine with the other side (see the module doc); below ``min_coverage`` rejected."""

    def __init__(self, *, name: str | None = None, src_lang: str, tgt_lang: str, encoder: str = DEFAULT_ENCODER,
                 min_coverage: float = 0.3, mismatch_coverage: float | None = None, split_words: int = 8,
                 batch_size: int | None = None):
        super().__init__(name=name, src_lang=src_lang, tgt_lang=tgt_lang, encoder=encoder, batch_size=batch_size)
        self.min_coverage = check_number("min_coverage", min_coverage, low=-1, high=1)
        self.mismatch_coverage = None if mismatch_coverage is None else \
            check_number("mismatch_coverage", mismatch_coverage, low=-1, high=1)
        self.split_words = check_number("split_words", split_words, low=0, integer=True)
        if self.split_words == 1:
            raise ValueError("parameter 'split_words' must be 0 (never split a sentence) or at least 2, got 1")

    def units(self, pairs: Sequence[Pair]) -> tuple[list[list[str]], list[list[str]], list[int]]:
        """Each pair's source and target units, and how many sentences the sides differ by."""
        src_sents = [sentences(s, self.src_lang) for s, _ in pairs]
        tgt_sents = [sentences(t, self.tgt_lang) for _, t in pairs]
        return ([units_of(u, self.split_words) for u in src_sents], [units_of(u, self.split_words) for u in tgt_sents],
                [abs(len(a) - len(b)) for a, b in zip(src_sents, tgt_sents)])

    def _embed(self, texts: list[list[str]], lang: str) -> dict[str, np.ndarray]:
        flat = list(dict.fromkeys(u for units in texts for u in units))
        vecs = self.encoder.encode(flat, lang, progress=False) if flat else np.zeros((0, 1), np.float32)
        return dict(zip(flat, vecs))

    def score_batch(self, pairs: Sequence[Pair]) -> np.ndarray:
        out = np.zeros((len(pairs), 4), dtype=np.float64)
        if not pairs:
            return out
        src_units, tgt_units, mismatch = self.units(pairs)
        # the wholes are embedded too: a side's units against the other side whole
        src_vec = self._embed([[" ".join(s.split())] + u for (s, _), u in zip(pairs, src_units)], self.src_lang)
        tgt_vec = self._embed([[" ".join(t.split())] + u for (_, t), u in zip(pairs, tgt_units)], self.tgt_lang)
        for i, ((src, tgt), su, tu) in enumerate(zip(pairs, src_units, tgt_units)):
            if not su or not tu:
                out[i] = (-1.0, 0 if not su else 1, 1, mismatch[i])
                continue
            a = np.stack([src_vec[u] for u in [" ".join(src.split())] + su])
            b = np.stack([tgt_vec[u] for u in [" ".join(tgt.split())] + tu])
            sims = a @ b.T                      # row / column 0: the wholes
            src_cov = sims[1:].max(axis=1)      # each source unit: its best match among the target and its units
            tgt_cov = sims[:, 1:].max(axis=0)
            s_i, t_i = int(np.argmin(src_cov)), int(np.argmin(tgt_cov))
            if src_cov[s_i] <= tgt_cov[t_i]:
                out[i] = (src_cov[s_i], 0, s_i + 1, mismatch[i])
            else:
                out[i] = (tgt_cov[t_i], 1, t_i + 1, mismatch[i])
        return out

    def accept(self, value) -> bool:
        cov = value[0]
        if cov != cov or cov < self.min_coverage:
            return False
        return not (value[3] and self.mismatch_coverage is not None and cov < self.mismatch_coverage)
